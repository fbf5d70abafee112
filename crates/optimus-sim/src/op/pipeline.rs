//! One transformation pipeline (§4): a Reader, a Converter and a Writer joined by the Chunk
//! queue and the Converter's output, and the Chunk that travels through them.

use std::collections::VecDeque;
use std::rc::Rc;

use super::config::OpConfig;
use super::converter::Converter;
use super::memsys::MemorySystem;
use super::reader::Reader;
use super::writer::{MessageOutput, Writer};

/// A Chunk travelling from Reader to Converter to Writer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Chunk {
    /// Transformation it belongs to.
    pub(super) txn: u64,
    /// Converter op of its field (selects the Converter's program).
    pub(super) op: u16,
    /// Output bytes this Chunk carries to the Writer: the field's on its last Chunk, or the
    /// Chunk's share of a streaming field's.
    pub(super) out_bytes: u32,
    /// Where those bytes start in the message's output.
    pub(super) out_from: u64,
    /// The message's output, whose bytes `out_from..out_from + out_bytes` this Chunk
    /// carries (the addresses the Writer writes them to).
    pub(super) output: Option<Rc<MessageOutput>>,
    /// Last Chunk of the message.
    pub(super) last: bool,
    /// Reader context it came from.
    pub(super) slot: u32,
}

/// Reader → Converter → Writer.
pub(super) struct Pipeline {
    pub(super) reader: Reader,
    /// Chunks the Reader emitted, waiting for the Converter.
    chunks: VecDeque<Chunk>,
    pub(super) converter: Converter,
    /// Chunks in the Converter's stages or waiting for the Writer, each with the first cycle
    /// the Writer may take it; at most `converter.stages` of them.
    converted: VecDeque<(u64, Chunk)>,
    pub(super) writer: Writer,
}

impl Pipeline {
    pub(super) fn new(cfg: &OpConfig) -> Self {
        Self {
            reader: Reader::new(cfg.interleave as usize),
            chunks: VecDeque::new(),
            converter: Converter::default(),
            converted: VecDeque::new(),
            writer: Writer::default(),
        }
    }

    /// The Writer's cycle; the transformations it completes are then in
    /// [`Writer::completed`].
    pub(super) fn tick_writer(
        &mut self,
        now: u64,
        cfg: &OpConfig,
        mem: &mut MemorySystem,
        measuring: bool,
    ) {
        if let Some(c) = self
            .writer
            .tick(now, &cfg.writer, mem, &mut self.converted, measuring)
        {
            self.reader.chunk_left_pipeline(c.slot as usize);
        }
    }

    /// The Converter's cycle.
    pub(super) fn tick_converter(&mut self, now: u64, cfg: &OpConfig, measuring: bool) {
        self.converter.tick(
            now,
            &cfg.converter,
            &mut self.chunks,
            &mut self.converted,
            measuring,
        );
    }

    /// The Reader's cycle.
    pub(super) fn tick_reader(
        &mut self,
        now: u64,
        cfg: &OpConfig,
        mem: &mut MemorySystem,
        measuring: bool,
    ) {
        self.reader.tick(now, cfg, mem, &mut self.chunks, measuring);
    }
}
