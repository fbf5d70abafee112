//! The Dispatcher (§4.1): queues the cores' requests as they cross OP's port and hands each
//! to the least loaded pipeline with a free Reader context.

use std::collections::VecDeque;

use super::pipeline::Pipeline;
use crate::stats::counters;

counters!(
    /// Dispatcher counters.
    DispatcherStats {
        /// Requests the cores wrote to OP (in the measured window, when run by the model),
        /// counted when written: each joins the queue once it has crossed OP's port.
        requests,
        /// Requests completed in the measured window.
        completed,
        /// Cycles requests waited for a free context, summed.
        queue_cycles,
    }
);

/// The request queue.
#[derive(Clone, Debug, Default)]
pub(super) struct Dispatcher {
    /// `(core, cycle the request is in the queue)`, in issue order.
    queue: VecDeque<(u32, u64)>,
    pub(super) stats: DispatcherStats,
}

impl Dispatcher {
    /// A request from `core` that will be in the queue at cycle `arrive`.
    pub(super) fn request(&mut self, core: u32, arrive: u64) {
        self.queue.push_back((core, arrive));
        self.stats.requests += 1;
    }

    /// Hands arrived requests to `place(core, arrival cycle)`, in issue order except that an arrived request
    /// passes an earlier one still in flight, until `place` refuses one (no free context).
    pub(super) fn dispatch(
        &mut self,
        now: u64,
        measuring: bool,
        mut place: impl FnMut(u32, u64) -> bool,
    ) {
        while let Some(&(core, arrive)) = self.queue.front() {
            if arrive > now {
                let Some(pos) = self.queue.iter().position(|r| r.1 <= now) else {
                    return;
                };
                let r = self.queue.remove(pos).unwrap_or((core, arrive));
                if !place(r.0, r.1) {
                    self.queue.push_front(r);
                    return;
                }
                self.placed(now, r.1, measuring);
                continue;
            }
            if !place(core, arrive) {
                return;
            }
            self.queue.pop_front();
            self.placed(now, arrive, measuring);
        }
    }

    fn placed(&mut self, now: u64, arrive: u64, measuring: bool) {
        if measuring {
            self.stats.queue_cycles += now - arrive;
        }
    }
}

/// The pipeline and context a new request goes to: the pipeline with the fewest busy
/// contexts among those with a free one (the lowest index on a tie), its first free context.
pub(super) fn least_loaded(pipes: &[Pipeline]) -> Option<(usize, usize)> {
    pipes
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((p.reader.busy_contexts(), i, p.reader.free_context()?)))
        .min()
        .map(|(_, i, slot)| (i, slot))
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::*;
    use crate::op::reader::Context;
    use crate::op::tables::ProgramTables;
    use crate::op::OpConfig;
    use crate::program::{one_field_trace, Program};

    /// Places requests as the model does: the least loaded pipeline's first free context.
    fn place(pipes: &mut [Pipeline], placed: &mut Vec<(u32, usize, usize)>, core: u32) -> bool {
        let Some((p, slot)) = least_loaded(pipes) else {
            return false;
        };
        let prog = Program::from_trace(&one_field_trace(0x1000, 0x8000));
        let tables = Rc::new(ProgramTables::new(&prog, &OpConfig::default()));
        let ctx = Context::new(u64::from(core), 1, Rc::new(prog), tables, 0, false);
        pipes[p].reader.start(slot, ctx);
        placed.push((core, p, slot));
        true
    }

    #[test]
    fn requests_go_to_the_least_loaded_pipeline_until_none_has_a_free_context() {
        let cfg = OpConfig::paper_4x4(2, 2);
        let mut pipes: Vec<Pipeline> = (0..2).map(|_| Pipeline::new(&cfg)).collect();
        let mut d = Dispatcher::default();
        for core in 0..5 {
            d.request(core, 0);
        }
        let mut placed = Vec::new();
        d.dispatch(3, true, |core, _| place(&mut pipes, &mut placed, core));
        // Alternating pipelines, each context filled in turn; the fifth request waits.
        assert_eq!(placed, vec![(0, 0, 0), (1, 1, 0), (2, 0, 1), (3, 1, 1)]);
        assert_eq!((d.stats.requests, d.stats.queue_cycles), (5, 4 * 3));
    }

    #[test]
    fn an_arrived_request_passes_one_still_in_flight() {
        let cfg = OpConfig::paper_4x4(1, 2);
        let mut pipes = vec![Pipeline::new(&cfg)];
        let mut d = Dispatcher::default();
        // Core 0 wrote first but from farther away: its request arrives after core 1's.
        d.request(0, 10);
        d.request(1, 5);
        let mut placed = Vec::new();
        for now in 0..=10 {
            d.dispatch(now, true, |core, _| place(&mut pipes, &mut placed, core));
        }
        assert_eq!(placed, vec![(1, 0, 0), (0, 0, 1)]);
        assert_eq!(d.stats.queue_cycles, 0);
    }
}
