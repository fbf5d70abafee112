//! The Dispatcher (§4.1): queues the cores' requests as they cross OP's port and hands each
//! to the least loaded pipeline with a free Reader context.

use std::collections::VecDeque;

use super::pipeline::Pipeline;
use crate::stats::counters;

counters!(
    /// Dispatcher counters.
    DispatcherStats {
        /// Requests received.
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
