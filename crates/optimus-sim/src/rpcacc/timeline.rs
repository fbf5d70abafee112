//! When a serializer engine's links and read slots are busy: timelines of intervals, so that
//! a read issued out of time order (a leaf's data, issued when its pointer returns) fills the
//! idle time left before reads placed earlier, and no more reads are in flight at any time
//! than the engine holds.

/// When one link is busy delivering read data, as sorted, disjoint intervals in ns.
#[derive(Debug, Default)]
pub(super) struct LinkTimeline {
    busy: Vec<(f64, f64)>,
}

impl LinkTimeline {
    /// Delivers data that is ready from `ready` and takes `duration` on the link in the first
    /// idle time from then on; returns when it has arrived. Reads issued in time order are
    /// delivered one after the other, in that order; a read issued out of the walk's order
    /// fills an idle time left before reads that were computed earlier.
    pub(super) fn deliver(&mut self, ready: f64, duration: f64) -> f64 {
        let (start, at) = self.slot(ready, duration);
        let end = start + duration;
        // Merge with the neighbours it touches, so the list stays short.
        if at > 0 && self.busy[at - 1].1 >= start {
            self.busy[at - 1].1 = end;
            if self.busy.get(at).is_some_and(|&(b, _)| b <= end) {
                self.busy[at - 1].1 = self.busy[at].1;
                self.busy.remove(at);
            }
        } else if self.busy.get(at).is_some_and(|&(b, _)| b <= end) {
            self.busy[at].0 = start;
        } else {
            self.busy.insert(at, (start, end));
        }
        end
    }

    /// When [`Self::deliver`] would have the data arrived, leaving the link as it is.
    pub(super) fn arrival(&self, ready: f64, duration: f64) -> f64 {
        self.slot(ready, duration).0 + duration
    }

    /// Where data ready from `ready` that takes `duration` fits: its start, and the index of
    /// the first busy interval after it.
    fn slot(&self, ready: f64, duration: f64) -> (f64, usize) {
        let mut start = ready;
        // The first busy interval that ends after `ready`.
        let mut at = self.busy.partition_point(|&(_, end)| end <= ready);
        while let Some(&(b, e)) = self.busy.get(at) {
            if start + duration <= b {
                break;
            }
            start = start.max(e);
            at += 1;
        }
        (start, at)
    }
}

/// The engine's reads in flight, each from when it issues to when its data has arrived, so
/// that at no time more than `max_outstanding_reads` are: reads issued out of the walk's
/// order (a leaf dereference's data, issued when its pointer returns) are counted at the
/// times they are in flight, not in the order they were computed.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    /// `(issue, arrival)` of every read that may still overlap a later one.
    reads: Vec<(f64, f64)>,
}

impl InFlight {
    /// The earliest time from `ready` on at which a read can issue and stay in flight until
    /// `arrival(issue)` with fewer than `max` other reads in flight throughout.
    pub(super) fn earliest(&self, ready: f64, max: usize, arrival: impl Fn(f64) -> f64) -> f64 {
        let mut issue = ready;
        // Each turn moves `issue` to a read's arrival past it, so the loop ends.
        while let Some(free) = self.full_within(issue, arrival(issue), max) {
            issue = free;
        }
        issue
    }

    /// If `max` reads are in flight at `from` or at some time before `until`, the first time
    /// after that at which fewer are.
    fn full_within(&self, from: f64, until: f64, max: usize) -> Option<f64> {
        let mut in_flight = 0usize;
        // Changes after `from`: arrivals (-1) before issues (+1) at the same time, a read
        // being in flight over [issue, arrival).
        let mut changes: Vec<(f64, i8)> = Vec::new();
        for &(issue, arrival) in &self.reads {
            // One that arrived by then, or that is never in flight, counts nowhere.
            if arrival <= from || arrival <= issue {
                continue;
            }
            if issue <= from {
                in_flight += 1;
            } else {
                changes.push((issue, 1));
            }
            changes.push((arrival, -1));
        }
        changes.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut full = in_flight >= max;
        for (t, change) in changes {
            if !full && t >= until {
                return None;
            }
            if change > 0 {
                in_flight += 1;
            } else {
                in_flight -= 1;
            }
            if full && in_flight < max {
                return Some(t);
            }
            full |= in_flight >= max;
        }
        // Every read has arrived by the end: the count ends at zero, below any `max`.
        None
    }

    /// Notes a read in flight from `issue` to `arrival`, and forgets the reads that arrived
    /// by `settled`, before any read still to come can issue.
    pub(super) fn add(&mut self, issue: f64, arrival: f64, settled: f64) {
        self.reads.retain(|&(_, a)| a > settled);
        self.reads.push((issue, arrival));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_delivers_in_order_and_fills_idle_time_with_later_reads() {
        let mut link = LinkTimeline::default();
        // In time order: one after the other, each once ready and the link is free.
        assert_eq!(link.deliver(10.0, 5.0), 15.0);
        assert_eq!(link.deliver(12.0, 5.0), 20.0);
        assert_eq!(link.deliver(40.0, 5.0), 45.0);
        // Ready earlier than data already scheduled: the idle time 20..40 takes it.
        assert_eq!(link.deliver(11.0, 10.0), 30.0);
        // Too long for what is left of it (30..40): after the last.
        assert_eq!(link.deliver(25.0, 15.0), 60.0);
        assert_eq!(link.busy, [(10.0, 30.0), (40.0, 60.0)]);
    }

    #[test]
    fn reads_count_toward_the_limit_only_while_they_are_in_flight() {
        let mut reads = InFlight::default();
        reads.add(10.0, 20.0, 0.0);
        let five = |t: f64| t + 5.0;
        // One slot: a read that returns before the other issues goes first, even though the
        // other was placed before it; one that would overlap it waits for it to arrive.
        assert_eq!(reads.earliest(0.0, 1, five), 0.0);
        assert_eq!(reads.earliest(8.0, 1, five), 20.0);
        // A read may not overlap a gap too short for it.
        reads.add(23.0, 30.0, 0.0);
        assert_eq!(reads.earliest(19.0, 1, five), 30.0);
        // Two slots: a read that overlaps one other goes.
        assert_eq!(reads.earliest(12.0, 2, five), 12.0);
        // Two slots, three reads: both others are in flight over 12..20 and 23..25.
        reads.add(12.0, 25.0, 0.0);
        assert_eq!(reads.earliest(0.0, 2, |t| t + 11.0), 0.0);
        assert_eq!(reads.earliest(0.0, 2, |t| t + 13.0), 25.0);
        assert_eq!(reads.earliest(13.0, 2, |t| t + 1.0), 20.0);
        assert_eq!(reads.earliest(20.0, 2, |t| t + 2.0), 20.0);
        // Reads that arrived by the settled time are forgotten.
        reads.add(40.0, 45.0, 24.0);
        assert_eq!(reads.reads, [(23.0, 30.0), (12.0, 25.0), (40.0, 45.0)]);
    }

    proptest::proptest! {
        /// Whatever order reads are placed in, none issues before it is ready, and at no
        /// time are more than `max` in flight.
        #[test]
        fn reads_in_flight_never_exceed_the_limit(
            max in 1usize..5,
            reads in proptest::collection::vec((0u32..200, 0u32..60), 1..40),
        ) {
            let mut in_flight = InFlight::default();
            let mut placed = Vec::new();
            for (ready, duration) in reads {
                let (ready, duration) = (f64::from(ready), f64::from(duration));
                let issue = in_flight.earliest(ready, max, |t| t + duration);
                proptest::prop_assert!(issue >= ready);
                in_flight.add(issue, issue + duration, 0.0);
                placed.push((issue, issue + duration));
            }
            for &(at, _) in &placed {
                let overlapping = placed
                    .iter()
                    .filter(|&&(issue, arrival)| issue <= at && at < arrival)
                    .count();
                proptest::prop_assert!(overlapping <= max, "{overlapping} in flight at {at}");
            }
        }
    }
}
