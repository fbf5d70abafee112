//! The cycle-stepped Optimus Prime model: the requesting cores, the cycle loop over the
//! components (`dispatcher`, and per pipeline `writer`, `converter`, `reader`, sharing
//! `memsys`) and the report.
//!
//! Each cycle, in order: cores whose completion arrived and whose gap has passed write their
//! next request to OP; the Dispatcher hands arrived requests to free Reader contexts; then each
//! pipeline, taken round robin from a rotating first one so that none has fixed priority on
//! the Block Buffer's ports, ticks its Writer (which may complete a message and notify its
//! core), its Converter and its Reader. Ticking back to front lets a Chunk move one stage per
//! cycle. Last, the Readers hear of the lines the Block Buffer evicted in the cycle. A message
//! completes when its Writer has issued its last write (§4.5).

use std::rc::Rc;

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use super::config::OpConfig;
use super::dispatcher::{least_loaded, Dispatcher};
use super::fields;
use super::mem::{BlockBufferStats, Eviction};
use super::memsys::MemorySystem;
use super::pipeline::Pipeline;
use super::reader::{Context, ReaderStats};
use super::tables::ProgramTables;
use crate::error::{Result, SimError};
use crate::program::{Program, LINE_BYTES};
use crate::stats::{Counters, Stats};
use crate::workload::{MessageTrace, ARENA_STRIDE};

/// Distance between successive messages in a core's arena (65 lines: one cache set apart).
const ARENA_STEP: u64 = 65 * LINE_BYTES;
/// Arena positions a core cycles through.
const ARENA_POSITIONS: u64 = 64;
/// Extra per-core offset so cores' messages do not share cache sets (11 lines).
const ARENA_CORE_SKEW: u64 = 11 * LINE_BYTES;
/// Bytes of a core's request write to OP (the message's schema and object pointers).
const REQUEST_BYTES: u32 = 16;

/// Share of OP's port bandwidth at which its link counts as saturated: past it the port's
/// queueing delay, and so the latency the paper sees rise (Fig. 9), grows steeply.
pub const LINK_SATURATION: f64 = 0.85;

/// What holds a run's throughput back ([`OpReport::bound`]); serialized as its
/// [`OpBound::name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpBound {
    /// OP's NoC port carries at least [`LINK_SATURATION`] of its bandwidth (§6.2: the
    /// plateau); more pipelines or contexts add latency, not throughput.
    Port,
    /// The Readers spend most of their cycles emitting Chunks (or rotating contexts): the
    /// pipelines themselves are busy, and only more of them add throughput.
    Readers,
    /// The Readers spend most of their cycles waiting for memory: more prefetching,
    /// time-sharing or pipelines overlap more of it (§4.6).
    Memory,
    /// The Readers spend most of their cycles with a Chunk ready that the Converter and
    /// Writer cannot take.
    ConverterWriter,
    /// Without pipelining (OP_Base), the Readers spend most of their cycles waiting for the
    /// previous field to leave the Converter and Writer.
    NoPipelining,
    /// The Readers spend most of their cycles without a message: the cores' requests (their
    /// number and the gap after each completion) do not keep them fed.
    Requests,
}

impl OpBound {
    /// The name `--json` and the tables give it.
    pub fn name(self) -> &'static str {
        match self {
            OpBound::Port => "port",
            OpBound::Readers => "readers",
            OpBound::Memory => "memory",
            OpBound::ConverterWriter => "converter_writer",
            OpBound::NoPipelining => "no_pipelining",
            OpBound::Requests => "requests",
        }
    }

    /// The bound of a run whose port carried `port_share` of its bandwidth and whose
    /// Readers counted `readers`: the port once it saturates, else what the Readers' cycles,
    /// summed over them, went to most (ties to the earlier of busy, memory, converter and
    /// writer, no pipelining, no request).
    pub(super) fn of<'a>(port_share: f64, readers: impl Iterator<Item = &'a ReaderStats>) -> Self {
        if port_share >= LINK_SATURATION {
            return OpBound::Port;
        }
        let mut cycles = [
            (0, OpBound::Readers),
            (0, OpBound::Memory),
            (0, OpBound::ConverterWriter),
            (0, OpBound::NoPipelining),
            (0, OpBound::Requests),
        ];
        for r in readers {
            cycles[0].0 += r.busy_cycles + r.switch_cycles;
            cycles[1].0 += r.stall_cycles;
            cycles[2].0 += r.queue_full_cycles;
            cycles[3].0 += r.drain_wait_cycles;
            cycles[4].0 += r.idle_cycles;
        }
        cycles
            .into_iter()
            .rev()
            .max_by_key(|&(n, _)| n)
            .map_or(OpBound::Readers, |(_, b)| b)
    }
}

impl serde::Serialize for OpBound {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// Result of one Optimus Prime run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct OpReport {
    /// Serialized (or deserialized) output throughput in Gbps over the measured window.
    pub throughput_gbps: f64,
    /// Messages per second.
    pub messages_per_s: f64,
    /// Mean latency from a context accepting a request to the Writer's last write, in ns.
    pub latency_ns: f64,
    /// Mean latency including the wait in the Dispatcher queue, in ns.
    pub latency_with_queue_ns: f64,
    /// Mean latency a core sees, from its MMIO request write to the completion reaching it,
    /// in ns.
    pub request_latency_ns: f64,
    /// Mean cycles for a Reader to obtain a field's data (Fig. 7 text: 27 → 9): from when it
    /// needs the field to the arrival of its last line, so that a field streaming over many
    /// lines (a long string, a list of scalars) counts its whole stream.
    pub field_read_latency_cycles: f64,
    /// Mean cycles of a Block Buffer miss (request to data).
    pub amat_cycles: f64,
    /// Bandwidth through OP's NoC port in Gbps (all flits, both directions).
    pub port_gbps: f64,
    /// Average utilization of every directed mesh link.
    pub mesh_link_utilization: f64,
    /// Fraction of all Reader cycles (every pipeline's, over the measured window) stalled on
    /// memory: a message in a context, but no context's next Chunk has its data in
    /// (`reader.stall_cycles`).
    pub reader_stall_fraction: f64,
    /// What holds the throughput back: OP's port, or what the Readers' cycles go to most.
    pub bound: OpBound,
    /// One core of the software baseline (`cpu`) transforming the workload's messages, one
    /// of each, in Gbps; `None` where the messages cost it no time (no field in any).
    pub software_gbps: Option<f64>,
    /// Mean time the software baseline takes for one of the workload's messages, in ns.
    pub software_latency_ns: f64,
    /// `throughput_gbps` over `software_gbps`: OP's speedup over one core; `None` where the
    /// software serializes no bytes or takes no time.
    pub speedup_vs_software: Option<f64>,
    /// Cycles measured: `measure_cycles`, or more where messages take longer (see
    /// [`OpConfig::min_window_latencies`]).
    pub measured_cycles: u64,
    /// Named counters.
    pub stats: Stats,
}

/// Simulates `workload` (one trace per message kind; each core cycles through them) on OP.
///
/// # Errors
/// Invalid config, or a workload without messages.
pub fn run(cfg: &OpConfig, workload: &[MessageTrace]) -> Result<OpReport> {
    cfg.validate()?;
    if workload.is_empty() {
        return Err(SimError::Workload {
            name: "op".into(),
            why: "no messages".into(),
        });
    }
    let mut m = Model::new(cfg, workload);
    m.simulate();
    if m.done_msgs == 0 {
        return Err(SimError::Workload {
            name: "op".into(),
            why: format!(
                "no message completed in a measured window within {} cycles (op.max_cycles)",
                cfg.max_cycles
            ),
        });
    }
    // One core transforming one of each message.
    let software_ns = workload.iter().map(|t| cfg.cpu.message_ns(t)).sum::<f64>();
    let wire_bytes = workload.iter().map(|t| t.wire_bytes).sum::<u64>();
    let software_gbps = (software_ns > 0.0).then(|| wire_bytes as f64 * 8.0 / software_ns);
    Ok(m.report(software_gbps, software_ns / workload.len() as f64))
}

struct Model<'c> {
    cfg: &'c OpConfig,
    now: u64,
    mem: MemorySystem,
    dispatcher: Dispatcher,
    pipes: Vec<Pipeline>,
    /// Workload messages as programs, at the first core's arena.
    progs: Vec<Program>,
    /// Per workload message: what the Reader derives from its program.
    tables: Vec<Rc<ProgramTables>>,
    /// Requests issued per core (each builds its message at a new arena position).
    core_requests: Vec<u64>,
    /// Per core: `(cycle of its next request, workload message it will send)`.
    core_next: Vec<(u64, usize)>,
    /// No core's next request is due before this cycle.
    next_core_due: u64,
    txn: u64,
    /// Messages completed since cycle 0, and the sum of their latencies (cycles).
    completed: u64,
    completed_latency: u64,
    /// First measured cycle, once warm-up has ended.
    measure_start: Option<u64>,
    done_msgs: u64,
    done_bytes: u64,
    lat_sum: u64,
    lat_q_sum: u64,
    req_lat_sum: u64,
    /// Per core: cycle of its outstanding request's MMIO write.
    core_issued: Vec<u64>,
    /// Per txn: (core, arrival, started, wire bytes, workload message).
    live: std::collections::HashMap<u64, (u32, u64, u64, u64, usize)>,
    /// Per workload message: whether one has completed in the measured window.
    done_in_window: Vec<bool>,
    /// Workload messages not yet completed in the measured window.
    not_done_in_window: usize,
    /// The lines the Block Buffer evicted in the current cycle (kept to reuse its memory).
    evicted: Vec<Eviction>,
}

impl<'c> Model<'c> {
    fn new(cfg: &'c OpConfig, workload: &[MessageTrace]) -> Self {
        let cores = cfg.cores();
        let base: Vec<Program> = workload
            .iter()
            .map(|t| fields::one_item_per_list(&Program::from_trace(t)))
            .collect();
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        // Stagger the cores' first requests deterministically, each core starting at another
        // message: where the workload has more messages than cores, spread evenly over it, so
        // that together the cores soon cover it.
        let n = base.len();
        let first_message = |c: usize| {
            if n > cores as usize {
                c * n / cores as usize
            } else {
                c % n
            }
        };
        let core_next: Vec<(u64, usize)> = (0..cores)
            .map(|c| {
                (
                    u64::from(c) * 7 + rng.next_u64() % 16,
                    first_message(c as usize),
                )
            })
            .collect();
        let next_core_due = core_next.iter().map(|c| c.0).min().unwrap_or(u64::MAX);
        Self {
            cfg,
            now: 0,
            mem: MemorySystem::new(cfg, rng),
            dispatcher: Dispatcher::default(),
            pipes: (0..cfg.pipelines).map(|_| Pipeline::new(cfg)).collect(),
            tables: base
                .iter()
                .map(|p| Rc::new(ProgramTables::new(p, cfg)))
                .collect(),
            progs: base,
            core_requests: vec![0; cores as usize],
            core_next,
            next_core_due,
            txn: 0,
            completed: 0,
            completed_latency: 0,
            measure_start: None,
            done_msgs: 0,
            done_bytes: 0,
            lat_sum: 0,
            lat_q_sum: 0,
            req_lat_sum: 0,
            core_issued: vec![0; cores as usize],
            live: Default::default(),
            done_in_window: vec![false; n],
            not_done_in_window: n,
            evicted: Vec::new(),
        }
    }

    fn core_tile(&self, core: u32) -> u32 {
        // Tiles 1.. in order from the first core's, wrapping past OP's tile 0.
        let others = u64::from(self.mem.mesh.tiles() - 1);
        let from_first = u64::from(core) + u64::from(self.cfg.dispatcher.first_core_tile.max(1));
        1 + ((from_first - 1) % others) as u32
    }

    fn measuring(&self) -> bool {
        self.measure_start.is_some()
    }

    /// Cycles measured so far.
    fn measured_cycles(&self) -> u64 {
        self.measure_start.map_or(0, |s| self.now - s)
    }

    /// Warm-up lasts `warmup_cycles` and, unless that is zero, until a message has completed;
    /// measuring lasts `measure_cycles`, `min_window_latencies` mean latencies, and until each
    /// of the workload's messages has completed in it; `max_cycles` ends both.
    fn simulate(&mut self) {
        let cfg = self.cfg;
        while self.now < cfg.max_cycles {
            if self.measure_start.is_none() {
                if self.now >= cfg.warmup_cycles && (cfg.warmup_cycles == 0 || self.completed > 0) {
                    self.measure_start = Some(self.now);
                    self.mem.start_measuring(self.now);
                    // Requests count from the window's start, as completions do.
                    self.dispatcher.stats = Default::default();
                }
            } else if self.measured_cycles() >= cfg.measure_cycles
                && self.done_msgs > 0
                && self.not_done_in_window == 0
                && u128::from(self.measured_cycles()) * u128::from(self.completed)
                    >= u128::from(cfg.min_window_latencies) * u128::from(self.completed_latency)
            {
                break;
            }
            let (now, cfg, measuring) = (self.now, self.cfg, self.measuring());
            self.mem.port.advance(now);
            self.cores_tick();
            let mut dispatcher = std::mem::take(&mut self.dispatcher);
            dispatcher.dispatch(now, measuring, |core, arrive| self.assign(core, arrive));
            self.dispatcher = dispatcher;
            // The Block Buffer's ports go round-robin over the pipelines: the first to ask
            // in a cycle rotates, so no pipeline has fixed priority.
            let n = self.pipes.len();
            let first = (now % n as u64) as usize;
            for k in 0..n {
                let p = (first + k) % n;
                self.pipes[p].tick_writer(now, cfg, &mut self.mem, measuring);
                while let Some(txn) = self.pipes[p].writer.completed() {
                    self.complete(txn);
                }
                self.pipes[p].tick_converter(now, cfg, measuring);
                self.pipes[p].tick_reader(now, cfg, &mut self.mem, measuring);
            }
            self.refetch_evicted();
            self.now += 1;
        }
    }

    /// Tells the Readers of the lines the Block Buffer evicted this cycle: a context that had
    /// not used one yet requests it again (`block_buffer.refetches`).
    fn refetch_evicted(&mut self) {
        self.mem.bb.take_evictions(&mut self.evicted);
        if self.evicted.is_empty() {
            return;
        }
        let evicted = &self.evicted;
        let refetches: u64 = self
            .pipes
            .iter_mut()
            .map(|p| p.reader.refetch(evicted))
            .sum();
        self.mem.bb.stats.refetches += refetches;
    }

    /// Cores whose next request is due write it to OP.
    fn cores_tick(&mut self) {
        if self.now < self.next_core_due {
            return;
        }
        for c in 0..self.core_next.len() {
            let (at, msg) = self.core_next[c];
            if at != self.now {
                continue;
            }
            let tile = self.core_tile(c as u32);
            let arrive = self.mem.request_to_op(self.now, tile, REQUEST_BYTES)
                + u64::from(self.cfg.dispatcher.dispatch_cycles);
            self.dispatcher.request(c as u32, arrive);
            self.core_next[c] = (u64::MAX, msg);
            self.core_issued[c] = self.now;
        }
        let now = self.now;
        self.next_core_due = self
            .core_next
            .iter()
            .map(|c| c.0)
            .filter(|&at| at > now)
            .min()
            .unwrap_or(u64::MAX);
    }

    /// Starts `core`'s request (in the queue since `arrive`) in the least loaded pipeline with a free context; false if
    /// every context is busy.
    fn assign(&mut self, core: u32, arrive: u64) -> bool {
        let Some((p, slot)) = least_loaded(&self.pipes) else {
            return false;
        };
        let (_, msg) = self.core_next[core as usize];
        // Each request's message sits at a new position of the core's arena, as a core builds
        // a fresh message per request (§5); positions step by 65 lines to vary cache sets.
        let k = self.core_requests[core as usize];
        self.core_requests[core as usize] += 1;
        let offset = u64::from(core) * ARENA_STRIDE
            + u64::from(core) * ARENA_CORE_SKEW
            + (k % ARENA_POSITIONS) * ARENA_STEP;
        let prog = Rc::new(self.progs[msg].relocate(offset));
        self.txn += 1;
        self.live
            .insert(self.txn, (core, arrive, self.now, prog.wire_bytes, msg));
        let ctx = Context::new(
            self.txn,
            self.core_tile(core),
            prog,
            Rc::clone(&self.tables[msg]),
            self.now,
            // Without pipelining a message waits for the previous one to drain, too.
            !self.cfg.pipelining,
        );
        self.pipes[p].reader.start(slot, ctx);
        true
    }

    fn complete(&mut self, txn: u64) {
        let Some((core, arrive, started, bytes, msg)) = self.live.remove(&txn) else {
            return;
        };
        self.completed += 1;
        self.completed_latency += self.now - started;
        // Completion flit to the core; the core sees it on its next poll and sets up the next.
        let tile = self.core_tile(core);
        let seen = self.mem.completion_to_core(self.now, tile);
        let nmsg = self.progs.len();
        let next_msg = (self.core_next[core as usize].1 + 1) % nmsg;
        let due = seen + u64::from(self.cfg.dispatcher.core_gap_cycles);
        self.core_next[core as usize] = (due, next_msg);
        self.next_core_due = self.next_core_due.min(due);
        if self.measuring() {
            self.done_msgs += 1;
            self.done_bytes += bytes;
            self.lat_sum += self.now - started;
            self.lat_q_sum += self.now - arrive;
            self.req_lat_sum += seen - self.core_issued[core as usize];
            self.dispatcher.stats.completed += 1;
            if !std::mem::replace(&mut self.done_in_window[msg], true) {
                self.not_done_in_window -= 1;
            }
        }
    }

    /// The statistics of the measured window, beside the software baseline's throughput and
    /// mean latency on the same messages.
    fn report(&self, software_gbps: Option<f64>, software_latency_ns: f64) -> OpReport {
        let cycles = self.measured_cycles() as f64;
        let secs = cycles / (self.cfg.clock_ghz * 1e9);
        let n = self.done_msgs.max(1) as f64;
        let mut stats = Stats::default();
        let mut fields = 0u64;
        let mut lat = 0u64;
        let mut stall = 0u64;
        for (i, p) in self.pipes.iter().enumerate() {
            let pre = format!("pipeline{i}");
            let r = &p.reader.stats;
            r.dump(&format!("{pre}.reader"), &mut stats);
            p.converter
                .stats
                .dump(&format!("{pre}.converter"), &mut stats);
            p.writer.stats.dump(&format!("{pre}.writer"), &mut stats);
            fields += r.field_reads;
            lat += r.field_read_latency_sum;
            stall += r.stall_cycles;
        }
        let reader_cycles = self.measured_cycles() * self.pipes.len() as u64;
        let bb: &BlockBufferStats = &self.mem.bb.stats;
        bb.dump("block_buffer", &mut stats);
        self.mem.port.stats.dump("noc.port", &mut stats);
        self.dispatcher.stats.dump("dispatcher", &mut stats);
        // The port's bandwidth counts the flits that crossed it in the window, not those
        // booked then, which may cross after it ends.
        let port_flits = self.mem.port.carried_before(self.now) as f64;
        let port_gbps = port_flits * f64::from(self.cfg.noc.link_bytes) * 8.0 / secs / 1e9;
        let mesh = &self.mem.mesh;
        let mesh_util = mesh.flit_hops() as f64 / (mesh.directed_links() as f64 * cycles);
        stats.set("noc", "mesh_flit_hops", mesh.flit_hops() as f64);
        let throughput_gbps = self.done_bytes as f64 * 8.0 / secs / 1e9;
        OpReport {
            throughput_gbps,
            messages_per_s: self.done_msgs as f64 / secs,
            latency_ns: self.lat_sum as f64 / n / self.cfg.clock_ghz,
            latency_with_queue_ns: self.lat_q_sum as f64 / n / self.cfg.clock_ghz,
            request_latency_ns: self.req_lat_sum as f64 / n / self.cfg.clock_ghz,
            field_read_latency_cycles: lat as f64 / fields.max(1) as f64,
            amat_cycles: self.mem.miss_latency_sum as f64 / self.mem.misses.max(1) as f64,
            port_gbps,
            mesh_link_utilization: mesh_util,
            reader_stall_fraction: stall as f64 / reader_cycles.max(1) as f64,
            bound: OpBound::of(
                port_gbps / self.cfg.port_gbps(),
                self.pipes.iter().map(|p| &p.reader.stats),
            ),
            measured_cycles: self.measured_cycles(),
            software_gbps,
            software_latency_ns,
            speedup_vs_software: software_gbps
                .filter(|&g| g > 0.0)
                .map(|g| throughput_gbps / g),
            stats,
        }
    }
}

#[cfg(test)]
mod tests {
    use optimus_trace::{Direction, Event, Region};

    use super::*;
    use crate::program::{flat_trace, one_field_trace, one_large_field};

    /// The embedded workload `name`, traced by the engine.
    fn suite(name: &str) -> Vec<MessageTrace> {
        crate::workload::named(
            &mut optimus_core::binary::EngineTraces,
            name,
            crate::workload::SUITE_SEED,
        )
        .unwrap()
    }

    #[test]
    fn a_window_covers_every_message_of_a_suite() {
        // DeathStarBench's messages, more than the 15 cores: the cores start spread over
        // them, and the window lasts until each has completed in it. Its throughput then
        // matches a window 75 times as long (it read 11.98 Gbps, the first cores' messages
        // only, where the long window gives 19.18).
        let suite = suite("socialnet");
        let cfg = OpConfig::default();
        assert!(suite.len() > cfg.cores() as usize);
        let long = OpConfig {
            measure_cycles: 3_000_000,
            ..cfg.clone()
        };
        let (short, long) = (run(&cfg, &suite).unwrap(), run(&long, &suite).unwrap());
        let ratio = short.throughput_gbps / long.throughput_gbps;
        assert!((0.95..1.05).contains(&ratio), "{ratio}");
    }

    #[test]
    fn a_message_without_fields_completes() {
        // Its one empty Chunk leaves the Reader in the cycle the context starts (0), passes
        // the Converter's four stages (1..=4) and is taken by the Writer (5); it writes
        // nothing, so the message completes then.
        let empty = MessageTrace {
            events: Vec::new(),
            wire_bytes: 0,
            direction: Direction::Encode,
        };
        let cfg = OpConfig::paper_4x4(1, 1);
        let r = run(&cfg, std::slice::from_ref(&empty)).unwrap();
        assert!(r.messages_per_s > 0.0);
        assert_eq!(r.latency_ns * cfg.clock_ghz, 5.0);
        assert_eq!(r.stats.get("pipeline0.reader.fields"), Some(0.0));
        // Beside messages with fields, it holds no context: every core keeps going.
        let mixed = run(&cfg, &[empty, flat_trace(&[(0x1000, 0x8000)])]).unwrap();
        assert!(mixed.throughput_gbps > 0.0);
        assert!(mixed.stats.get("dispatcher.completed").unwrap() > 100.0);
    }

    #[test]
    fn the_window_stretches_over_enough_latencies() {
        // A 64 KiB field takes far longer than the 100 measured cycles; OP{1,1} reads one
        // message at a time, so 16 latencies hold about 16 messages.
        let mut cfg = OpConfig::paper_4x4(1, 1);
        cfg.warmup_cycles = 10;
        cfg.measure_cycles = 100;
        let r = run(&cfg, &[one_large_field(64 << 10)]).unwrap();
        let latency_cycles = r.latency_ns * cfg.clock_ghz;
        assert!(r.measured_cycles as f64 >= 15.0 * latency_cycles, "{r:?}");
        let done = r.stats.get("dispatcher.completed").unwrap();
        assert!((15.0..=17.0).contains(&done), "{done}");
        let window_s = r.measured_cycles as f64 / (cfg.clock_ghz * 1e9);
        assert!((r.messages_per_s - done / window_s).abs() < 1e-6 * r.messages_per_s);
        // With no room for one message the run is an error, not 0 Gbps.
        cfg.max_cycles = 1000;
        let err = run(&cfg, &[one_large_field(64 << 10)]).unwrap_err();
        assert!(err.to_string().contains("op.max_cycles"), "{err}");
    }

    #[test]
    fn a_large_message_never_outruns_the_port() {
        // 64 KiB in, 64 KiB out on OP{8,2}: each line crosses OP's port twice (request and
        // data in, data and acknowledgement out), so the port sets the pace, and writes wait
        // for it rather than booking it ever further ahead.
        let cfg = OpConfig::paper_4x4(8, 2);
        let r = run(&cfg, &[one_large_field(64 << 10)]).unwrap();
        // Per 64-byte line, 12 flits: a request and five data flits in, five data flits out
        // and an acknowledgement in; at two flits a cycle, 6 cycles.
        let bound = 64.0 * 8.0 * cfg.clock_ghz / 6.0;
        // Messages count whole when they complete: up to ~6 % over in a 16-latency window.
        assert!(
            r.throughput_gbps <= 1.06 * bound,
            "{} > {bound}",
            r.throughput_gbps
        );
        assert!(r.throughput_gbps > 0.9 * bound, "{}", r.throughput_gbps);
        assert!(r.stats.get("pipeline0.writer.port_stall_cycles").unwrap() > 0.0);
    }

    #[test]
    fn a_stalled_writer_holds_the_converter_and_reader_back() {
        // Line writes may not queue for OP's port at all: the Writer stalls on most of them.
        // Its stall reaches the Converter, whose stages hold at most four Chunks, and through
        // the full Chunk queue the Reader, instead of the Converter running ahead of it.
        let mut cfg = OpConfig::paper_4x4(8, 2);
        cfg.noc.write_backlog_cycles = 0;
        let r = run(&cfg, &[one_large_field(64 << 10)]).unwrap();
        let get = |k: &str| r.stats.get(k).unwrap();
        for p in 0..8 {
            let at = |k: &str| get(&format!("pipeline{p}.{k}"));
            assert!(at("writer.write_backlog_stall_cycles") > 0.0);
            assert!(at("reader.queue_full_cycles") > 0.0);
            let ahead = at("converter.chunks") - at("writer.chunks");
            assert!(
                ahead.abs() <= f64::from(cfg.converter.stages),
                "pipeline {p}: {ahead}"
            );
        }
    }

    #[test]
    fn the_bound_names_what_holds_the_throughput_back() {
        let mixed = suite("mixed");
        let large = [one_large_field(64 << 10)];
        let mut slow_writer = OpConfig::default();
        slow_writer.writer.cycles_per_chunk = 4;
        let mut idle_cores = OpConfig::default();
        idle_cores.dispatcher.core_gap_cycles = 100_000;
        for (cfg, work, bound) in [
            // One pipeline waits on dependent misses (§6.1).
            (OpConfig::default(), &mixed[..], OpBound::Memory),
            // Six saturate OP's port (Fig. 9: "saturates with six pipelines").
            (OpConfig::paper_4x4(6, 1), &mixed[..], OpBound::Port),
            // A 64 KB field streams a Chunk a cycle.
            (OpConfig::default(), &large[..], OpBound::Readers),
            // A Writer taking four cycles a Chunk holds the Reader back.
            (slow_writer, &large[..], OpBound::ConverterWriter),
            // Cores that wait 50 µs after each completion leave the Readers idle.
            (idle_cores, &mixed[..], OpBound::Requests),
        ] {
            let r = run(&cfg, work).unwrap();
            assert_eq!(r.bound, bound, "{cfg:?}");
        }
        // Below the port's saturation the Readers' largest share decides; at it, the port.
        let cycles = ReaderStats {
            busy_cycles: 10,
            stall_cycles: 30,
            idle_cycles: 30,
            ..ReaderStats::default()
        };
        // Memory's 30 cycles tie with idle's; the earlier in the list wins.
        let once = || std::iter::once(&cycles);
        assert_eq!(OpBound::of(0.5, once()), OpBound::Memory);
        assert_eq!(OpBound::of(LINK_SATURATION, once()), OpBound::Port);
        // Summed over the Readers: one draining in all its 70 cycles outweighs the other's
        // 30 stalled and 30 idle.
        let draining = ReaderStats {
            drain_wait_cycles: 70,
            ..ReaderStats::default()
        };
        assert_eq!(
            OpBound::of(0.5, [cycles.clone(), draining].iter()),
            OpBound::NoPipelining
        );
        assert_eq!(OpBound::of(0.0, std::iter::empty()), OpBound::Readers);
    }

    #[test]
    fn every_reader_cycle_is_counted_once() {
        // The Reader's cycle counters split the window between them, so the stall fraction is
        // of all Reader cycles. OP_Base waits for each field to drain before reading the next;
        // OP{2,2} rotates between contexts; OP{8,2} on a large field fills its Chunk queues.
        let flat = flat_trace(&[(0x1000, 0x8000), (0x1010, 0x9000)]);
        for (cfg, trace) in [
            (OpConfig::op_base(), &flat),
            (OpConfig::paper_4x4(2, 2), &flat),
            (OpConfig::paper_4x4(8, 2), &one_large_field(64 << 10)),
        ] {
            let r = run(&cfg, std::slice::from_ref(trace)).unwrap();
            let mut stall = 0.0;
            for p in 0..cfg.pipelines {
                let at = |k: &str| r.stats.get(&format!("pipeline{p}.reader.{k}")).unwrap();
                let cycles: f64 = [
                    "busy_cycles",
                    "stall_cycles",
                    "switch_cycles",
                    "drain_wait_cycles",
                    "queue_full_cycles",
                    "idle_cycles",
                ]
                .iter()
                .map(|k| at(k))
                .sum();
                assert_eq!(cycles, r.measured_cycles as f64, "{cfg:?}");
                stall += at("stall_cycles");
            }
            let all = r.measured_cycles as f64 * f64::from(cfg.pipelines);
            assert_eq!(r.reader_stall_fraction, stall / all);
        }
    }

    #[test]
    fn one_pipeline_converts_a_large_field_while_it_reads_it() {
        // OP{1,1} streams a 64 KiB field: its reads and writes overlap its 8192 Chunks, so the
        // Converter's 8 bytes a cycle set the pace (128 Gbps at 2 GHz). Read whole and then
        // converted, it ran at 70 Gbps.
        let cfg = OpConfig::paper_4x4(1, 1);
        let r = run(&cfg, &[one_large_field(64 << 10)]).unwrap();
        let pace = 8.0 * 8.0 * cfg.clock_ghz;
        assert!(
            (0.95 * pace..=1.06 * pace).contains(&r.throughput_gbps),
            "{} against {pace}",
            r.throughput_gbps
        );
    }

    /// OP{1,1} on a 2x2 mesh with one core on tile 1, which waits `core_gap_cycles` after
    /// each completion, measured from cycle 0 for `measure_cycles`.
    fn one_core_on_2x2(measure_cycles: u64, core_gap_cycles: u32) -> OpConfig {
        let mut cfg = OpConfig::paper_4x4(1, 1);
        cfg.noc.mesh = 2;
        cfg.warmup_cycles = 0;
        cfg.measure_cycles = measure_cycles;
        cfg.dispatcher.cores = 1;
        cfg.dispatcher.core_gap_cycles = core_gap_cycles;
        cfg
    }

    #[test]
    fn a_one_field_message_takes_the_cycles_its_path_adds_up_to() {
        // 2x2 mesh, OP on tile 0, the one core on tile 1. The schema line 67 lives on home
        // tile 3, the data line 514 on tile 2; the directory forwards both reads to the core
        // that wrote them. Each miss: Block Buffer lookup (1), request flit through the port
        // (1), 3 cycles per hop over OP -> home -> owner -> OP (4 hops either way), LLC (6) and
        // L1 (2), five response flits through two links (3) = 25 cycles. The data read waits
        // for the schema entry: its data is in at cycle 50, when the Reader emits the one
        // Chunk. The Converter's four stages take it through 51..=54, the Writer takes it at
        // 55 and issues its one line write at 56, when the message completes: 6 more.
        let cfg = one_core_on_2x2(1000, 10_000);
        let r = run(&cfg, &[one_field_trace(67 * 64, 514 * 64)]).unwrap();
        assert_eq!(r.stats.get("dispatcher.completed"), Some(1.0));
        assert_eq!(r.amat_cycles, 25.0);
        assert_eq!(r.latency_ns * cfg.clock_ghz, 56.0);
        // The field's read latency runs from the context's start to its data's arrival.
        assert_eq!(r.field_read_latency_cycles, 50.0);
        // Homes next to OP and the core shorten each miss by 3 cycles per hop saved.
        let near = run(&cfg, &[one_field_trace(65 * 64, 513 * 64)]).unwrap();
        // Line 65 and 513 live on tile 1, the owner: OP -> 1 -> 1 -> OP is 2 hops, not 4.
        assert_eq!(near.amat_cycles, 25.0 - 6.0);
        assert_eq!(near.latency_ns * cfg.clock_ghz, 56.0 - 12.0);
    }

    #[test]
    fn each_request_reads_its_own_serialized_buffer() {
        // A deserialization whose one read is of its serialized buffer's first line. The core
        // hands each request a buffer at the request's arena position, 65 lines on from the
        // last, so on a 2x2 mesh the line's home bank steps over tiles 0, 1, 2, 3 (0, 1, 1
        // and 2 hops from OP). The serialized buffer comes from its home LLC bank: lookup (1),
        // request flit (1), 3 cycles per hop there and back, LLC (6), five response flits (3):
        // 11, 17, 17 and 23 cycles, 17 on average. Read at the same line every time, each
        // request's buffer would come from OP's own tile in 11.
        let trace = MessageTrace {
            events: vec![
                Event::FieldRead {
                    region: Region::Buffer,
                    addr: 0,
                    bytes: 4,
                },
                Event::Convert { op: 5, bytes: 4 },
                Event::FieldWrite {
                    region: Region::Message,
                    addr: 0x10_0000,
                    bytes: 8,
                },
            ],
            wire_bytes: 4,
            direction: Direction::Decode,
        };
        let cfg = one_core_on_2x2(3500, 1000);
        let r = run(&cfg, &[trace]).unwrap();
        assert_eq!(r.stats.get("dispatcher.completed"), Some(4.0));
        assert_eq!(r.stats.get("block_buffer.misses"), Some(4.0));
        assert_eq!(r.amat_cycles, 17.0);
    }

    #[test]
    fn schema_entries_of_one_line_share_its_request() {
        // Six fields: schema entries 0..4 share the first schema line, 4 and 5 the second;
        // each field's data has a line of its own. On OP{1,1} two schema lines and six data
        // lines reach the Block Buffer, each once.
        let fields: Vec<(u64, u64)> = (0..6).map(|k| (0x1000 + 16 * k, 0x8000 + 64 * k)).collect();
        let mut cfg = OpConfig::paper_4x4(1, 1);
        cfg.warmup_cycles = 0;
        cfg.measure_cycles = 2000;
        cfg.dispatcher.cores = 1;
        cfg.dispatcher.core_gap_cycles = 10_000;
        let r = run(&cfg, &[flat_trace(&fields)]).unwrap();
        let get = |k: &str| r.stats.get(k).unwrap_or(0.0);
        assert_eq!(get("block_buffer.misses"), 8.0);
        assert_eq!(get("block_buffer.hits") + get("block_buffer.merges"), 0.0);
    }

    #[test]
    fn memory_counters_cover_the_measured_window() {
        // OP{8,2} saturates its port on Flat: over the window the port carries two flits a
        // cycle at most, whatever was booked in it to cross after it ends, and the Block
        // Buffer's and port's counters start with the window, as the pipelines' do.
        let mut cfg = OpConfig::paper_4x4(8, 2);
        cfg.warmup_cycles = 3000;
        cfg.measure_cycles = 10_000;
        let r = run(&cfg, &[flat_trace(&[(0x1000, 0x8000), (0x1010, 0x9000)])]).unwrap();
        assert!(r.port_gbps <= cfg.port_gbps(), "{} Gbps", r.port_gbps);
        assert!(r.port_gbps > 0.8 * cfg.port_gbps(), "{} Gbps", r.port_gbps);
        let get = |k: &str| r.stats.get(k).unwrap();
        let carried = get("noc.port.flits_carried");
        assert!(carried <= 2.0 * r.measured_cycles as f64, "{carried}");
        // Three misses a message (the two schema entries share a line; the data lie on two),
        // give or take those of the messages in flight when the window opens and closes.
        let reads = get("block_buffer.misses");
        let msgs = get("dispatcher.completed");
        assert!(
            (reads - 3.0 * msgs).abs() <= 3.0 * 16.0,
            "{reads} for {msgs}"
        );
    }
}
