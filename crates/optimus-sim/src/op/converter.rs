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
    /// One cycle: takes the next Chunk from `input` when idle and issues one instruction;
    /// a Chunk whose last instruction issued leaves the last stage `stages - 1` cycles later,
    /// into `output` as `(cycle it is there, chunk)`.
    pub(super) fn tick(
        &mut self,
        now: u64,
        cfg: &ConverterConfig,
        input: &mut VecDeque<Chunk>,
        output: &mut VecDeque<(u64, Chunk)>,
        measuring: bool,
    ) {
        if self.current.is_none() {
            if let Some(c) = input.pop_front() {
                self.current = Some((c, cfg.instructions(c.op)));
            }
        }
        let Some((c, left)) = self.current.as_mut() else {
            return;
        };
        *left -= 1;
        if measuring {
            self.stats.busy_cycles += 1;
        }
        if *left == 0 {
            let c = *c;
            self.current = None;
            output.push_back((now + u64::from(cfg.stages.saturating_sub(1)), c));
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

    /// Runs the Converter from cycle 0 until `input` drains; returns when each Chunk leaves.
    fn leave_cycles(cfg: &ConverterConfig, ops: &[u16]) -> (Vec<u64>, ConverterStats) {
        let mut conv = Converter::default();
        let mut input: VecDeque<Chunk> = ops.iter().map(|&op| chunk(op)).collect();
        let mut output = VecDeque::new();
        for now in 0..100 {
            conv.tick(now, cfg, &mut input, &mut output, true);
        }
        (output.iter().map(|(t, _)| *t).collect(), conv.stats)
    }

    #[test]
    fn specialized_ops_take_one_cycle_and_the_pipeline_depth() {
        // Four stages: a Chunk issued in cycle t is out of writeback at t + 3; one Chunk
        // issues per cycle.
        let (out, stats) = leave_cycles(&ConverterConfig::default(), &[5, 5, 9]);
        assert_eq!(out, vec![3, 4, 5]);
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
        let (out, stats) = leave_cycles(&cfg, &[7, 5, 7]);
        assert_eq!(out, vec![2 + 3, 3 + 3, 6 + 3]);
        assert_eq!((stats.chunks, stats.busy_cycles), (3, 7));
        // A shallower pipeline only moves the exits.
        let two = ConverterConfig { stages: 2, ..cfg };
        assert_eq!(leave_cycles(&two, &[7, 5]).0, vec![3, 4]);
    }
}
