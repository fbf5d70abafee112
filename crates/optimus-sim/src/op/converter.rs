//! The Converter (§4.4): a 4-stage in-order core that runs, for each Chunk, the I-Mem
//! program of the Chunk's converter op — one instruction for the specialized ops, more for
//! programs loaded into the programmable converter's 128-entry instruction memory.

use std::collections::VecDeque;

use super::config::ConverterConfig;
use super::pipeline::Chunk;
use crate::stats::counters;

counters!(
    /// Converter counters.
    ConverterStats {
        /// Chunks converted.
        chunks,
        /// Cycles executing instructions.
        busy_cycles,
    }
);

/// One pipeline's Converter.
#[derive(Clone, Debug, Default)]
pub(super) struct Converter {
    /// The Chunk being executed and its instructions still to issue.
    current: Option<(Chunk, u32)>,
    pub(super) stats: ConverterStats,
}

impl Converter {
    /// One cycle: takes the next Chunk from `input` when idle and issues one instruction.
    /// A Chunk whose last instruction issued in cycle `t` passes the `stages` stages in
    /// cycles `t..t + stages` and is the Writer's to take from cycle `t + stages`: it goes
    /// into `output` as `(t + stages, chunk)`. `output` holds the Chunks in the stages and
    /// those the Writer has not taken yet; while it holds `stages` of them, the Converter
    /// starts no other Chunk (a stalled Writer stalls the Converter, and so the Reader).
    pub(super) fn tick(
        &mut self,
        now: u64,
        cfg: &ConverterConfig,
        input: &mut VecDeque<Chunk>,
        output: &mut VecDeque<(u64, Chunk)>,
        measuring: bool,
    ) {
        if self.current.is_none() && (output.len() as u64) < u64::from(cfg.stages) {
            if let Some(c) = input.pop_front() {
                let instructions = cfg.instructions(c.op);
                self.current = Some((c, instructions));
            }
        }
        let Some((_, left)) = self.current.as_mut() else {
            return;
        };
        *left -= 1;
        let done = *left == 0;
        if measuring {
            self.stats.busy_cycles += 1;
        }
        if let Some((c, _)) = self.current.take_if(|_| done) {
            output.push_back((now + u64::from(cfg.stages), c));
            if measuring {
                self.stats.chunks += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(op: u16) -> Chunk {
        Chunk {
            op,
            ..Chunk::default()
        }
    }

    /// Runs the Converter from cycle 0 until `input` drains, a Writer that ticks before it
    /// taking each Chunk as soon as it may; returns the cycles it took each in.
    fn take_cycles(cfg: &ConverterConfig, ops: &[u16]) -> (Vec<u64>, ConverterStats) {
        let mut conv = Converter::default();
        let mut input: VecDeque<Chunk> = ops.iter().map(|&op| chunk(op)).collect();
        let mut output = VecDeque::new();
        let mut taken = Vec::new();
        for now in 0..100 {
            while let Some(&(at, _)) = output.front().filter(|(at, _)| *at <= now) {
                taken.push(at);
                output.pop_front();
            }
            conv.tick(now, cfg, &mut input, &mut output, true);
        }
        (taken, conv.stats)
    }

    #[test]
    fn specialized_ops_take_one_cycle_and_the_pipeline_depth() {
        // Four stages: a Chunk issued in cycle t is in them in t..=t + 3 and the Writer's
        // from t + 4; one Chunk issues per cycle.
        let (out, stats) = take_cycles(&ConverterConfig::default(), &[5, 5, 9]);
        assert_eq!(out, vec![4, 5, 6]);
        assert_eq!((stats.chunks, stats.busy_cycles), (3, 3));
    }

    #[test]
    fn programs_issue_one_instruction_per_cycle() {
        // Op 7 runs a 3-instruction program from the instruction memory: its Chunk occupies
        // the Converter for three cycles and holds the next one back.
        let cfg = ConverterConfig {
            programs: [(7, 3)].into_iter().collect(),
            ..ConverterConfig::default()
        };
        let (out, stats) = take_cycles(&cfg, &[7, 5, 7]);
        assert_eq!(out, vec![2 + 4, 3 + 4, 6 + 4]);
        assert_eq!((stats.chunks, stats.busy_cycles), (3, 7));
        // A shallower pipeline only moves the exits, one cycle a stage, down to one stage.
        let two = ConverterConfig {
            stages: 2,
            ..cfg.clone()
        };
        assert_eq!(take_cycles(&two, &[7, 5]).0, vec![4, 5]);
        let one = ConverterConfig { stages: 1, ..cfg };
        assert_eq!(take_cycles(&one, &[7, 5]).0, vec![3, 4]);
    }

    #[test]
    fn a_writer_that_takes_nothing_stalls_the_converter_once_its_stages_are_full() {
        // Four stages hold four Chunks; the rest stay in the Chunk queue.
        let cfg = ConverterConfig::default();
        let mut conv = Converter::default();
        let mut input: VecDeque<Chunk> = (0..10).map(|_| chunk(5)).collect();
        let mut output = VecDeque::new();
        for now in 0..20 {
            conv.tick(now, &cfg, &mut input, &mut output, true);
        }
        assert_eq!((output.len(), input.len()), (4, 6));
        assert_eq!(conv.stats.busy_cycles, 4);
        // Once the Writer takes one, the next Chunk goes in.
        output.pop_front();
        conv.tick(20, &cfg, &mut input, &mut output, true);
        assert_eq!((output.len(), input.len()), (4, 5));
    }
}
