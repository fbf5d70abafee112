//! The Writer (§4.5): takes converted Chunks into its write buffer, which assembles a cache
//! line of output at a time, and writes each line through the Block Buffer once it is full or
//! the output moves on to another line; a message completes once its last write has issued.

use std::collections::VecDeque;

use optimus_trace::Region;

use super::config::WriterConfig;
use super::memsys::{MemorySystem, WriteWait};
use super::pipeline::Chunk;
use crate::program::{Program, LINE_BYTES};
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
        /// Cycles a waiting line write found every Block Buffer port taken.
        port_stall_cycles,
        /// Cycles a waiting line write found OP's NoC port booked more than
        /// `noc.write_backlog_cycles` ahead.
        write_backlog_stall_cycles,
    }
);

/// Per item of `p`, the line writes its output causes: the write buffer assembles one line
/// at a time and writes it when it is full or when the output moves to another line (a
/// serialized message fills its lines in order; deserialized records and payloads are
/// scattered). The line still open after the last item is written with it.
pub(super) fn line_writes(p: &Program) -> Vec<u32> {
    let line = LINE_BYTES;
    let mut open: Option<((Region, u64), u64)> = None;
    let mut per_item: Vec<u32> = p
        .items
        .iter()
        .map(|it| {
            let mut n = 0;
            for &(region, addr, bytes) in &it.writes {
                let end = addr + u64::from(bytes);
                let mut at = addr;
                while at < end {
                    let l = at / line;
                    let upto = end.min((l + 1) * line);
                    let filled = match open {
                        Some((k, f)) if k == (region, l) => f,
                        Some(_) => {
                            n += 1;
                            0
                        }
                        None => 0,
                    } + (upto - at);
                    open = if filled >= line {
                        n += 1;
                        None
                    } else {
                        Some(((region, l), filled))
                    };
                    at = upto;
                }
            }
            n
        })
        .collect();
    if let (Some(_), Some(last)) = (open, per_item.last_mut()) {
        *last += 1;
    }
    per_item
}

/// One pipeline's Writer.
#[derive(Clone, Debug, Default)]
pub(super) struct Writer {
    /// Line writes waiting to issue, in the order they were taken.
    backlog: u32,
    /// Line writes issued since cycle 0.
    issued: u64,
    /// Messages whose last Chunk the Writer has taken, oldest first, each with the count of
    /// `issued` by which its last line write has issued: it completes then (§4.5).
    finishing: VecDeque<(u64, u64)>,
    /// First cycle the Writer can take another Chunk.
    free_at: u64,
    pub(super) stats: WriterStats,
}

impl Writer {
    /// One cycle: issues waiting line writes while a port is free, then takes the next
    /// converted Chunk that has left the Converter, unless too many writes wait. Returns the
    /// Chunk taken; a message whose last Chunk it is completes once its writes have issued
    /// ([`Writer::completed`]).
    pub(super) fn tick(
        &mut self,
        now: u64,
        cfg: &WriterConfig,
        mem: &mut MemorySystem,
        input: &mut VecDeque<(u64, Chunk)>,
        measuring: bool,
    ) -> Option<Chunk> {
        while self.backlog > 0 {
            if let Err(wait) = mem.write_line(now) {
                if measuring {
                    match wait {
                        WriteWait::BlockBufferPort => self.stats.port_stall_cycles += 1,
                        WriteWait::WriteBacklog => self.stats.write_backlog_stall_cycles += 1,
                    }
                }
                break;
            }
            self.backlog -= 1;
            self.issued += 1;
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
        self.backlog += c.out_lines;
        if c.last {
            // Its writes are the last of those waiting.
            self.finishing
                .push_back((c.txn, self.issued + u64::from(self.backlog)));
        }
        Some(c)
    }

    /// The next message whose writes have all issued, oldest first: "once the Writer issues
    /// all the writes for a request, it notifies the Dispatcher of completion" (§4.5).
    pub(super) fn completed(&mut self) -> Option<u64> {
        let &(txn, done_at) = self.finishing.front()?;
        (self.issued >= done_at).then(|| {
            self.finishing.pop_front();
            txn
        })
    }
}

#[cfg(test)]
mod tests {
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    use super::*;
    use crate::op::OpConfig;
    use crate::program::Item;

    /// A program whose items write `writes` (one list per item).
    fn writing(writes: &[&[(Region, u64, u32)]]) -> Program {
        Program {
            items: writes
                .iter()
                .map(|w| Item {
                    writes: w.to_vec(),
                    ..Item::default()
                })
                .collect(),
            ..Program::default()
        }
    }

    #[test]
    fn serialized_output_is_written_a_full_line_at_a_time() {
        // 40-byte fields one after the other: the second fills line 0, the fourth line 1 and
        // half of line 2, the last line goes out with the message.
        let b = Region::Buffer;
        let p = writing(&[
            &[(b, 0, 40)],
            &[(b, 40, 40)],
            &[(b, 80, 40)],
            &[(b, 120, 60)],
            &[(b, 180, 10)],
        ]);
        assert_eq!(line_writes(&p), vec![0, 1, 0, 1, 1]);
    }

    #[test]
    fn scattered_output_is_written_when_it_moves_to_another_line() {
        // Deserialization: two fields into one record line, a string payload two lines away,
        // then back into the record: each move writes the line left behind.
        let m = Region::Message;
        let p = writing(&[
            &[(m, 0x100, 8)],
            &[(m, 0x108, 8), (m, 0x180, 100)],
            &[(m, 0x110, 4)],
        ]);
        // Item 1: leaving line 4 (1), filling line 6 (1); line 7 stays open. Item 2: leaving
        // line 7 (1); line 4 again, open, written with the message (1).
        assert_eq!(line_writes(&p), vec![0, 2, 2]);
        // Equal addresses in different regions are different lines.
        let same = writing(&[&[(m, 0, 8)], &[(Region::Buffer, 0, 8)]]);
        assert_eq!(line_writes(&same), vec![0, 2]);
    }

    /// What a Writer did from cycle 0 on some Chunks.
    struct Run {
        /// Cycles it took each Chunk in.
        taken: Vec<u64>,
        /// Cycles messages completed in, with their transformation.
        completed: Vec<(u64, u64)>,
        stats: WriterStats,
        /// The Block Buffer's line writes.
        writes: u64,
    }

    /// Runs a Writer from cycle 0 on `chunks` (each there at its cycle).
    fn run(cfg: &WriterConfig, chunks: &[(u64, Chunk)]) -> Run {
        let mut op = OpConfig::paper_4x4(1, 1);
        op.noc.mesh = 2;
        let mut mem = MemorySystem::new(&op, ChaCha8Rng::seed_from_u64(1));
        let mut w = Writer::default();
        let mut input: VecDeque<(u64, Chunk)> = chunks.iter().copied().collect();
        let (mut taken, mut completed) = (Vec::new(), Vec::new());
        for now in 0..50 {
            if w.tick(now, cfg, &mut mem, &mut input, true).is_some() {
                taken.push(now);
            }
            while let Some(txn) = w.completed() {
                completed.push((now, txn));
            }
        }
        Run {
            taken,
            completed,
            stats: w.stats,
            writes: mem.bb.stats.writes,
        }
    }

    #[test]
    fn one_chunk_per_cycle_and_its_lines_on_the_next() {
        let chunk = |out_lines| Chunk {
            out_bytes: 8,
            out_lines,
            ..Chunk::default()
        };
        let chunks = [(0, chunk(0)), (0, chunk(1)), (5, chunk(0)), (5, chunk(2))];
        let r = run(&WriterConfig::default(), &chunks);
        assert_eq!(r.taken, vec![0, 1, 5, 6]);
        assert_eq!(
            (r.stats.chunks, r.stats.bytes, r.stats.lines, r.writes),
            (4, 32, 3, 3)
        );
        // A Writer that needs three cycles per Chunk.
        let slow = WriterConfig {
            cycles_per_chunk: 3,
        };
        assert_eq!(run(&slow, &chunks).taken, vec![0, 3, 6, 9]);
    }

    #[test]
    fn waiting_line_writes_hold_back_chunks() {
        // A Chunk causing five line writes: the two Block Buffer ports write two lines a
        // cycle from the next one on; while more than two writes wait the Writer takes no
        // Chunk, so the next one goes in at cycle 2, not 1.
        let five = Chunk {
            out_lines: 5,
            ..Chunk::default()
        };
        let r = run(
            &WriterConfig::default(),
            &[(0, five), (0, Chunk::default())],
        );
        assert_eq!(r.taken, vec![0, 2]);
        assert_eq!(
            (r.stats.lines, r.stats.port_stall_cycles, r.writes),
            (5, 2, 5)
        );
        assert_eq!(r.stats.write_backlog_stall_cycles, 0);
    }

    #[test]
    fn a_message_completes_when_its_last_write_has_issued() {
        // Message 1 ends with a Chunk of three line writes taken at cycle 0: two issue at
        // cycle 1, the third at 2, and the message completes then. Message 2's last Chunk
        // writes nothing but is taken behind them (cycle 1): it completes with them, at 2.
        // Message 3's, taken at 10 with no write waiting, completes at once.
        let last = |txn, out_lines| Chunk {
            txn,
            out_lines,
            last: true,
            ..Chunk::default()
        };
        let chunks = [(0, last(1, 3)), (0, last(2, 0)), (10, last(3, 0))];
        let r = run(&WriterConfig::default(), &chunks);
        assert_eq!(r.taken, vec![0, 1, 10]);
        assert_eq!(r.completed, vec![(2, 1), (2, 2), (10, 3)]);
    }
}
