//! The Writer (§4.5): takes converted Chunks into its write buffer and writes output lines
//! through the Block Buffer as they fill — a line per 64 B of contiguous output (the
//! serialized message), a line per line touched for scattered output (deserialized records) —
//! and completes a message with its last write.

use std::collections::VecDeque;

use super::config::WriterConfig;
use super::memsys::MemorySystem;
use super::pipeline::Chunk;
use crate::program::LINE_BYTES;
use crate::stats::counters;

/// Line writes the Writer may have waiting for a port before it stops taking Chunks.
const MAX_BACKLOG: u32 = 2;

counters!(
    /// Writer counters.
    WriterStats {
        /// Chunks written into the write buffer.
        chunks,
        /// Line writes issued.
        lines,
        /// Bytes of output.
        bytes,
        /// Cycles stalled on a Block Buffer port.
        port_stall_cycles,
    }
);

/// One pipeline's Writer.
#[derive(Clone, Debug)]
pub(super) struct Writer {
    /// Line writes waiting for a Block Buffer port.
    backlog: u32,
    /// Per Reader context: output bytes accumulated toward the next line.
    partial: Vec<u32>,
    /// First cycle the Writer can take another Chunk.
    free_at: u64,
    pub(super) stats: WriterStats,
}

impl Writer {
    /// A Writer serving `contexts` Reader contexts.
    pub(super) fn new(contexts: usize) -> Self {
        Self {
            backlog: 0,
            partial: vec![0; contexts],
            free_at: 0,
            stats: WriterStats::default(),
        }
    }

    /// One cycle: issues waiting line writes while a port is free, then takes the next
    /// converted Chunk that has left the Converter, unless too many writes wait. Returns the
    /// Chunk taken.
    pub(super) fn tick(
        &mut self,
        now: u64,
        cfg: &WriterConfig,
        mem: &mut MemorySystem,
        input: &mut VecDeque<(u64, Chunk)>,
        measuring: bool,
    ) -> Option<Chunk> {
        while self.backlog > 0 {
            if !mem.write_line(now) {
                if measuring {
                    self.stats.port_stall_cycles += 1;
                }
                break;
            }
            self.backlog -= 1;
            if measuring {
                self.stats.lines += 1;
            }
        }
        let &(at, c) = input.front()?;
        if at > now || self.backlog > MAX_BACKLOG || self.free_at > now {
            return None;
        }
        input.pop_front();
        self.free_at = now + u64::from(cfg.cycles_per_chunk);
        if measuring {
            self.stats.chunks += 1;
            self.stats.bytes += u64::from(c.out_bytes);
        }
        let s = c.slot as usize;
        let line = LINE_BYTES as u32;
        let total = self.partial[s] + c.out_bytes;
        let mut lines = total / line + c.out_lines;
        self.partial[s] = total % line;
        if c.last {
            // The message's last, partial line goes out too.
            if self.partial[s] > 0 {
                lines += 1;
            }
            self.partial[s] = 0;
        }
        self.backlog += lines;
        Some(c)
    }
}
