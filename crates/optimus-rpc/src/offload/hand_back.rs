//! When the NIC core hands a call's DT back to the app core: a fixed share of the calls that
//! find their worker idle, or a share worked out from the NIC core's load and both cores'
//! cost of a call's DT, which each side times on a sample of its own calls.
//!
//! With DT on the NIC core, the NIC core also carries the network's frames and can become
//! the bottleneck while the app core waits on it. Handing a call back to a waiting app core
//! spends that core's idle time on the call's DT and takes the DT off the NIC core; but each
//! call handed back costs the app core its DT again, which is what offloading saved it. The
//! automatic rule ([`AutoHandBack`]) hands calls back only while all of these hold:
//!
//! - the call's worker has taken every request given to it (the app core is waiting);
//! - the NIC core is saturated: it spent at least 90% of its recent time in polls that found
//!   work;
//! - the app core does a call's DT at most [`AutoHandBack::max_cost_ratio`] times as slowly as
//!   the NIC core (a call whose DT the NIC core does cheaply, as one whose fields stay in NIC
//!   memory, is worth little to it and costs the app core much);
//! - the share of the calls handed back stays below the one at which the app core's time per
//!   call, the handler on records plus that share of the calls' whole DT, would exceed
//!   `1 / min_saving` of what a call with its DT costs it; that share is scaled down while
//!   the app core's measured time per call, over calls of both kinds as they come, is above
//!   the bound (mixed, they cost more than each timed apart).
//!
//! A call whose worker is idle goes back as a probe, whatever the rest, when none went back
//! in the last [`PROBE_EVERY`] calls, so the app core's cost of a whole call stays measured.
//! Each side times a sample of its own calls (the app core also whole turns, and every call
//! handed back); the NIC core reads the app core's through atomics.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// When calls' DT goes back to the app core ([`super::RecordService::with_hand_back`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HandBack {
    /// One call in this many (at least 1: every such call) of those that find their worker
    /// with nothing left to take, its core waiting on the NIC's.
    Every(u32),
    /// A share worked out as the calls go (see the module docs).
    Auto(AutoHandBack),
}

/// The bounds of the automatic rule (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoHandBack {
    /// The app core keeps at least this factor of its saving: its time per call at most
    /// `1 / min_saving` of what a call with its DT costs it (above 1).
    pub min_saving: f64,
    /// Calls go back only while the app core's DT of a call takes at most this many times
    /// the NIC core's.
    pub max_cost_ratio: f64,
}

impl Default for AutoHandBack {
    fn default() -> Self {
        Self {
            min_saving: 2.0,
            max_cost_ratio: 2.0,
        }
    }
}

/// Calls between probes while none goes back.
pub const PROBE_EVERY: u32 = 1024;
/// One call in this many of the NIC core's is timed.
const SAMPLE_EVERY: u32 = 64;
/// The windows over which the NIC core's time and its calls are counted: halved when full.
const POLL_WINDOW_NS: f64 = 1e6;
const CALL_WINDOW: u32 = 4096;
/// Calls between two checks of the app core's time per call against the bound.
const ADJUST_EVERY: u32 = 256;
/// Calls between two looks at the clock for the NIC core's busy share.
const LOOK_EVERY: u32 = 32;
/// The least share of its time the NIC core spends busy to count as saturated.
const SATURATED: f64 = 0.9;

/// A moving average of nanoseconds (weight 1/8 for each new sample; 0 until the first). A
/// sample above twice the average counts as twice the average: a thread preempted while timed
/// moves it by little, a lasting change still within a few samples.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Ewma(f64);

impl Ewma {
    pub(crate) fn add(&mut self, ns: f64) {
        self.0 = if self.0 == 0.0 {
            ns
        } else {
            self.0 + (ns.min(2.0 * self.0) - self.0) / 8.0
        };
    }

    pub(crate) fn ns(self) -> f64 {
        self.0
    }
}

/// Where the timers read the time: the monotonic clock, or a test's own.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock(fn() -> Instant);

impl Default for Clock {
    fn default() -> Self {
        Self(Instant::now)
    }
}

impl Clock {
    #[inline]
    fn now(self) -> Instant {
        (self.0)()
    }

    /// Nanoseconds from `since` to now.
    #[inline]
    fn ns_since(self, since: Instant) -> f64 {
        self.now().duration_since(since).as_nanos() as f64
    }
}

/// Times one call in [`SAMPLE_EVERY`] into a moving average (the NIC core's DT).
#[derive(Clone, Debug, Default)]
pub(crate) struct Sampler {
    count: u32,
    pub(crate) avg: Ewma,
}

impl Sampler {
    /// The start of a call to time, if this one is timed.
    #[inline]
    pub(crate) fn start(&mut self) -> Option<Instant> {
        self.count += 1;
        if self.count < SAMPLE_EVERY {
            return None;
        }
        self.count = 0;
        Some(Instant::now())
    }

    /// Ends the timing begun by [`Sampler::start`].
    #[inline]
    pub(crate) fn stop(&mut self, started: Option<Instant>) {
        if let Some(t) = started {
            self.avg.add(t.elapsed().as_nanos() as f64);
        }
    }
}

/// What the app core measured, shared with the NIC core: its time per call on records the
/// NIC decoded, and per handed-back call (DT included), each with its share of the turn's
/// own work (taking the requests, pushing the replies), in ns (0: not measured yet).
#[derive(Default, Debug)]
pub(crate) struct AppCosts {
    record_ns: AtomicU32,
    wire_ns: AtomicU32,
    /// Per call of any kind, as the calls come (handed back or not).
    all_ns: AtomicU32,
}

impl AppCosts {
    fn get(&self) -> (f64, f64) {
        (
            f64::from(self.record_ns.load(Ordering::Relaxed)),
            f64::from(self.wire_ns.load(Ordering::Relaxed)),
        )
    }

    fn all(&self) -> f64 {
        f64::from(self.all_ns.load(Ordering::Relaxed))
    }
}

/// The app core's timings under the automatic rule. One turn in [`WHOLE_TIMED_TURNS`] is timed
/// whole, from its start to its replies' release: its time per call is what a call costs the
/// app core as the calls come and, if its calls are all ones the NIC decoded, what such a
/// call costs. A handed-back call is timed alone, and one turn in [`CALL_TIMED_TURNS`] (never
/// one timed whole) times each of its calls alone, which gives the handler's part of a call on
/// records: a handed-back call costs the app core its own time plus what a call on records
/// costs outside its handler. (Taking the handed-back calls' cost from the time of the turns
/// they share with the others would multiply any error in the others' cost by their number.)
#[derive(Clone, Debug, Default)]
pub(crate) struct AppTimer {
    /// Turns that served calls, towards the next whose calls are timed alone.
    turns: u32,
    /// This turn times its calls alone.
    timing_calls: bool,
    /// The turn's start, and its calls of each kind so far.
    turn_start: Option<Instant>,
    records: u32,
    wires: u32,
    /// A call on records in the turn's time; alone, in the handler; a handed-back call alone.
    record_turn: Ewma,
    record_call: Ewma,
    wire_call: Ewma,
    /// A call of either kind in the turn's time.
    all: Ewma,
    clock: Clock,
}

/// One turn in this many is timed whole, and one (another) times its calls alone.
const WHOLE_TIMED_TURNS: u32 = 8;
const CALL_TIMED_TURNS: u32 = 64;

impl AppTimer {
    pub(crate) fn turn_begins(&mut self) {
        if self.turns % WHOLE_TIMED_TURNS == 0 {
            self.turn_start = Some(self.clock.now());
        }
    }

    /// The start of a call (`wire`: handed back), if it is timed alone.
    #[inline]
    pub(crate) fn call_begins(&mut self, wire: bool) -> Option<Instant> {
        if wire {
            self.wires += 1;
        } else {
            self.records += 1;
        }
        (wire || self.timing_calls).then(|| self.clock.now())
    }

    #[inline]
    pub(crate) fn call_ends(&mut self, started: Option<Instant>, wire: bool) {
        if let Some(t) = started {
            let ns = self.clock.ns_since(t);
            if wire {
                self.wire_call.add(ns);
            } else {
                self.record_call.add(ns);
            }
        }
    }

    /// Ends the turn and shares what is measured with the NIC core.
    pub(crate) fn turn_ends(&mut self, costs: &AppCosts) {
        let (records, wires) = (self.records, self.wires);
        (self.records, self.wires) = (0, 0);
        if records + wires == 0 {
            return;
        }
        if let Some(t) = self.turn_start.take() {
            if !self.timing_calls {
                let ns = self.clock.ns_since(t);
                self.all.add(ns / f64::from(records + wires));
                if wires == 0 {
                    self.record_turn.add(ns / f64::from(records));
                }
            }
        }
        self.turns = self.turns.wrapping_add(1);
        self.timing_calls = self.turns % CALL_TIMED_TURNS == 1;
        let (turn, call, wire) = (
            self.record_turn.ns(),
            self.record_call.ns(),
            self.wire_call.ns(),
        );
        let wire = if turn == 0.0 || call == 0.0 || wire == 0.0 {
            0.0
        } else {
            wire + (turn - call).max(0.0)
        };
        costs.record_ns.store(turn as u32, Ordering::Relaxed);
        costs.wire_ns.store(wire as u32, Ordering::Relaxed);
        costs.all_ns.store(self.all.ns() as u32, Ordering::Relaxed);
    }
}

/// What the automatic rule last worked from (all ns per call; 0 where not measured yet).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HandBackEstimates {
    /// The NIC core's DT of a call (decode, merge and encode).
    pub nic_dt_ns: f64,
    /// The app core's time on a call the NIC decoded (handler on records, merge).
    pub app_record_ns: f64,
    /// The app core's time on a handed-back call (decode, handler, merge, encode).
    pub app_wire_ns: f64,
    /// The largest share of the calls that may go back (0 while the cost ratio rules
    /// hand-back out): the share the costs allow, times the correction of the app core's
    /// measured time per call.
    pub cap: f64,
    /// The app core's time per call as the calls come, handed back or not.
    pub app_all_ns: f64,
    /// The share of the NIC core's recent time spent in polls that found work.
    pub nic_busy: f64,
}

/// The NIC core's side of the rule: its counts, its own DT timings and the decision.
#[derive(Debug)]
pub(crate) struct HandBackState {
    rule: HandBack,
    /// The fixed rule's count towards the next call handed back.
    since: u32,
    handed_back: u64,
    /// The NIC core's recent time, and its time in polls that found work (ns); when the
    /// polls last changed between finding work and not, and which they are now.
    poll_ns: f64,
    busy_ns: f64,
    changed: Option<Instant>,
    last_busy: bool,
    /// Recent calls, and those handed back.
    calls: u32,
    back: u32,
    /// Calls since the last one handed back.
    since_back: u32,
    /// The NIC core's busy time is measured: the costs allow a share to go back (reading
    /// the clock at every change between busy and idle polls costs the NIC core time, which
    /// it spares when no call may go back anyway).
    watching: bool,
    /// The share the costs allow is scaled by this (at most 1), lowered while the app core's
    /// measured time per call exceeds the bound (the costs of the two kinds of calls, each
    /// timed alone, miss what mixing them costs), raised while it is below.
    scale: f64,
    /// Calls until the next check of the app core's time per call; whether the NIC core was
    /// saturated at the last look at the clock, and calls until the next look.
    adjust_in: u32,
    was_saturated: bool,
    look_in: u32,
    pub(crate) decode: Sampler,
    pub(crate) encode: Sampler,
    clock: Clock,
}

impl HandBackState {
    pub(crate) fn new(rule: HandBack) -> Self {
        Self {
            rule,
            since: 0,
            handed_back: 0,
            poll_ns: 0.0,
            busy_ns: 0.0,
            changed: None,
            last_busy: false,
            calls: 0,
            back: 0,
            since_back: PROBE_EVERY,
            watching: false,
            scale: 1.0,
            adjust_in: ADJUST_EVERY,
            was_saturated: false,
            look_in: 0,
            decode: Sampler::default(),
            encode: Sampler::default(),
            clock: Clock::default(),
        }
    }

    /// Whether the NIC core times its DT (the automatic rule).
    pub(crate) fn timing(&self) -> bool {
        matches!(self.rule, HandBack::Auto(_))
    }

    pub(crate) fn handed_back(&self) -> u64 {
        self.handed_back
    }

    /// Counts one poll of the NIC core, which found work or not. The clock is read only when
    /// that changes: a NIC core busy or idle poll after poll pays nothing.
    #[inline]
    pub(crate) fn on_poll(&mut self, busy: bool) {
        if busy == self.last_busy || !self.watching {
            return;
        }
        let now = self.clock.now();
        self.close_period(now);
        self.last_busy = busy;
    }

    /// Counts the time since the last change as busy or idle, up to `now`.
    fn close_period(&mut self, now: Instant) {
        if let Some(changed) = self.changed {
            let ns = now.duration_since(changed).as_nanos() as f64;
            self.poll_ns += ns;
            if self.last_busy {
                self.busy_ns += ns;
            }
            if self.poll_ns > POLL_WINDOW_NS {
                self.poll_ns /= 2.0;
                self.busy_ns /= 2.0;
            }
        }
        self.changed = Some(now);
    }

    /// The share of the NIC core's recent time spent in polls that found work.
    fn busy_share(&self) -> f64 {
        if self.poll_ns == 0.0 {
            0.0
        } else {
            self.busy_ns / self.poll_ns
        }
    }

    /// The NIC core was busy for nearly all of its recent time (up to now; the clock is read
    /// once in [`LOOK_EVERY`] asks).
    fn saturated(&mut self) -> bool {
        if self.look_in == 0 {
            self.look_in = LOOK_EVERY;
            self.close_period(self.clock.now());
            self.was_saturated = self.busy_share() >= SATURATED;
        }
        self.look_in -= 1;
        self.was_saturated
    }

    /// Moves the scale of the share towards the app core's bound, from its time per call.
    fn adjust(&mut self, app: &AppCosts, auto: AutoHandBack) {
        let (_, wire) = app.get();
        let (all, bound) = (app.all(), wire / auto.min_saving);
        if all == 0.0 || bound == 0.0 {
            return;
        }
        if all > bound {
            self.scale *= 0.9;
        } else if all < 0.95 * bound {
            self.scale = (self.scale * 1.1 + 0.01).min(1.0);
        }
    }

    /// What the automatic rule works from now, given the app core's costs.
    pub(crate) fn estimates(&self, app: &AppCosts, auto: AutoHandBack) -> HandBackEstimates {
        let (record, wire) = app.get();
        let nic = self.decode.avg.ns() + self.encode.avg.ns();
        let dt = wire - record;
        let cap = if record == 0.0 || wire == 0.0 || dt <= 0.0 || dt > auto.max_cost_ratio * nic {
            0.0
        } else {
            ((wire / auto.min_saving - record) / dt).clamp(0.0, 1.0) * self.scale
        };
        HandBackEstimates {
            nic_dt_ns: nic,
            app_record_ns: record,
            app_wire_ns: wire,
            cap,
            app_all_ns: app.all(),
            nic_busy: self.busy_share(),
        }
    }

    /// The rule in force.
    pub(crate) fn rule(&self) -> HandBack {
        self.rule
    }

    /// Whether this call's DT goes back to the app core, given whether its worker has taken
    /// every request handed to it.
    pub(crate) fn decide(&mut self, worker_idle: bool, app: &AppCosts) -> bool {
        let back = match self.rule {
            HandBack::Every(every) => {
                if !worker_idle {
                    return false;
                }
                self.since += 1;
                if self.since < every {
                    return false;
                }
                self.since = 0;
                true
            }
            HandBack::Auto(auto) => self.decide_auto(worker_idle, app, auto),
        };
        self.handed_back += u64::from(back);
        back
    }

    fn decide_auto(&mut self, worker_idle: bool, app: &AppCosts, auto: AutoHandBack) -> bool {
        self.calls += 1;
        self.since_back = self.since_back.saturating_add(1);
        if self.calls == CALL_WINDOW {
            self.calls /= 2;
            self.back /= 2;
        }
        if !worker_idle {
            return false;
        }
        self.adjust_in -= 1;
        if self.adjust_in == 0 {
            self.adjust_in = ADJUST_EVERY;
            self.adjust(app, auto);
        }
        let cap = self.estimates(app, auto).cap;
        if (cap > 0.0) != self.watching {
            self.watching = cap > 0.0;
            (self.poll_ns, self.busy_ns, self.changed) = (0.0, 0.0, None);
        }
        // A probe goes back whatever the NIC core's load: one call in PROBE_EVERY.
        let back = self.since_back >= PROBE_EVERY
            || (f64::from(self.back) < cap * f64::from(self.calls) && self.saturated());
        if back {
            self.back += 1;
            self.since_back = 0;
        }
        back
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::time::Duration;

    thread_local! {
        /// This test thread's clock: a start, and the time it has been moved on by.
        static TEST_START: Instant = Instant::now();
        static TEST_ELAPSED: Cell<Duration> = const { Cell::new(Duration::ZERO) };
    }

    fn test_now() -> Instant {
        TEST_START.with(|start| *start) + TEST_ELAPSED.with(Cell::get)
    }

    /// Moves this thread's test clock on by `ms` milliseconds.
    fn pass(ms: u64) {
        TEST_ELAPSED.with(|e| e.set(e.get() + Duration::from_millis(ms)));
    }

    fn costs(record: u32, wire: u32) -> AppCosts {
        let c = AppCosts::default();
        c.record_ns.store(record, Ordering::Relaxed);
        c.wire_ns.store(wire, Ordering::Relaxed);
        c
    }

    fn saturated(rule: HandBack, nic_ns: f64) -> HandBackState {
        let mut s = HandBackState::new(rule);
        (s.poll_ns, s.busy_ns, s.last_busy, s.watching) = (1e6, 0.95e6, true, true);
        s.decode.avg.add(nic_ns / 2.0);
        s.encode.avg.add(nic_ns / 2.0);
        s
    }

    /// The share of `n` calls handed back, every worker idle.
    fn share(s: &mut HandBackState, app: &AppCosts, n: u32) -> f64 {
        let back = (0..n).filter(|_| s.decide(true, app)).count();
        back as f64 / f64::from(n)
    }

    #[test]
    fn the_fixed_rule_hands_back_one_idle_call_in_n() {
        let mut s = HandBackState::new(HandBack::Every(3));
        let app = AppCosts::default();
        let got: Vec<bool> = [true, true, false, true, true, true]
            .into_iter()
            .map(|idle| s.decide(idle, &app))
            .collect();
        assert_eq!(got, [false, false, false, true, false, false]);
        assert_eq!(s.handed_back(), 1);
    }

    #[test]
    fn the_share_keeps_the_app_cores_saving() {
        // DT 200 ns on either core, 100 ns on records: a call with its DT costs the app core
        // 300 ns; keeping 2x, at most (150 - 100) / 200 of the calls go back.
        let mut s = saturated(HandBack::Auto(AutoHandBack::default()), 200.0);
        let app = costs(100, 300);
        let e = s.estimates(&app, AutoHandBack::default());
        assert!((e.cap - 0.25).abs() < 1e-9, "{e:?}");
        let got = share(&mut s, &app, 40_000);
        assert!((got - 0.25).abs() < 0.01, "share {got}");
        // The app core's time per call stays within half of 300 ns.
        assert!(100.0 + got * 200.0 <= 150.0 + 2.0);
    }

    #[test]
    fn no_call_goes_back_whose_dt_the_nic_does_far_cheaper() {
        // The app core's DT 4.7 us a call against the NIC core's 150 ns: only probes go back.
        let mut s = saturated(HandBack::Auto(AutoHandBack::default()), 150.0);
        let app = costs(140, 4840);
        assert_eq!(s.estimates(&app, AutoHandBack::default()).cap, 0.0);
        let got = share(&mut s, &app, 40_000);
        // The first eligible call, then one in PROBE_EVERY.
        assert!(
            got <= (1.0 + 40_000.0 / f64::from(PROBE_EVERY)) / 40_000.0,
            "share {got}"
        );
        assert!(got > 0.0, "probes keep the costs current");
    }

    #[test]
    fn nothing_goes_back_to_a_busy_worker_or_from_an_idle_nic() {
        let app = costs(100, 300);
        let mut s = saturated(HandBack::Auto(AutoHandBack::default()), 200.0);
        assert!((0..1000).all(|_| !s.decide(false, &app)), "busy worker");
        let mut idle_nic = saturated(HandBack::Auto(AutoHandBack::default()), 200.0);
        idle_nic.busy_ns = 0.5e6;
        let back = (0..1000).filter(|_| idle_nic.decide(true, &app)).count();
        assert_eq!(
            back, 1,
            "a NIC core with idle polls is no bottleneck: one probe"
        );
    }

    #[test]
    fn a_saving_the_app_core_cannot_keep_gives_no_share() {
        // Records cost the app core 310 ns, a call with its DT 600: half of 600 leaves no room.
        let s = saturated(HandBack::Auto(AutoHandBack::default()), 300.0);
        assert_eq!(
            s.estimates(&costs(310, 600), AutoHandBack::default()).cap,
            0.0
        );
    }

    #[test]
    fn the_nic_cores_busy_time_is_that_of_polls_that_found_work() {
        let mut s = HandBackState::new(HandBack::Auto(AutoHandBack::default()));
        (s.watching, s.clock) = (true, Clock(test_now));
        s.on_poll(true);
        pass(2);
        s.on_poll(false);
        pass(2);
        s.on_poll(true);
        // 2 ms busy, over the window and halved to 1; then 2 ms idle, and halved again: the
        // recent idle time weighs twice the busy time before it.
        assert_eq!(s.busy_share(), 1.0 / 3.0);
        assert!(!s.saturated());
    }

    #[test]
    fn the_app_cores_turns_give_each_kind_of_calls_cost() {
        let (mut t, costs) = (AppTimer::default(), AppCosts::default());
        t.clock = Clock(test_now);
        let sleep = pass;
        // Turns of four calls on records, 1 ms each in the handler and 1 ms outside; every
        // CALL_TIMED_TURNS-th times its calls alone.
        for _ in 0..CALL_TIMED_TURNS + WHOLE_TIMED_TURNS {
            t.turn_begins();
            for _ in 0..4 {
                let c = t.call_begins(false);
                sleep(1);
                t.call_ends(c, false);
                sleep(1);
            }
            t.turn_ends(&costs);
        }
        // An empty turn counts for nothing.
        t.turn_begins();
        t.turn_ends(&costs);
        // A handed-back call of 3 ms in a turn with a call on records.
        t.turn_begins();
        let c = t.call_begins(true);
        sleep(3);
        t.call_ends(c, true);
        let _ = t.call_begins(false);
        sleep(2);
        t.turn_ends(&costs);
        let (record, wire) = costs.get();
        assert_eq!(record, 2.0e6);
        // 3 ms, and 1 ms outside the handler.
        assert_eq!(wire, 4.0e6);
    }

    #[test]
    fn a_preempted_sample_moves_the_average_by_little() {
        let mut e = Ewma::default();
        (0..20).for_each(|_| e.add(100.0));
        e.add(1e6);
        assert!(e.ns() < 115.0, "{}", e.ns());
    }

    #[test]
    fn the_first_eligible_call_is_a_probe() {
        let mut s = saturated(HandBack::Auto(AutoHandBack::default()), 200.0);
        let app = AppCosts::default();
        assert!(s.decide(true, &app), "no app-core cost yet: probe");
        assert!(!s.decide(true, &app), "one probe, then wait");
    }
}
