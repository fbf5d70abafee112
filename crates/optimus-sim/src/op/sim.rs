//! The cycle-stepped Optimus Prime model: cores → Dispatcher → n pipelines of
//! Reader (j contexts) → Converter → Writer, all memory traffic through the Block Buffer and
//! OP's NoC port.
//!
//! Each cycle, in order: cores whose request reached OP enter the Dispatcher queue; the
//! Dispatcher fills free Reader contexts; each Reader issues demand accesses (the field it is
//! emitting) and, with prefetching, accesses of the next `field_buffer_entries` fields at the
//! top message level plus first-level sub-message schemata (§6.1); emits one Chunk of a ready
//! field or rotates to a ready context; each Converter executes one instruction; each Writer
//! accepts one Chunk and issues a line write whenever a line of output is complete. A message
//! completes when its Writer has issued its last write (§4.5).

use std::collections::VecDeque;
use std::rc::Rc;

use optimus_trace::Region;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use super::config::OpConfig;
use super::mem::{BlockBuffer, BlockBufferStats, Lookup, Mesh, Port};
use crate::error::{Result, SimError};
use crate::program::{Program, LINE_BYTES};
use crate::stats::{counters, Counters, Stats};
use crate::workload::{MessageTrace, ARENA_STRIDE};

const NOT_ISSUED: u64 = u64::MAX;
/// Distance between successive messages in a core's arena (65 lines: one cache set apart).
const ARENA_STEP: u64 = 65 * LINE_BYTES;
/// Arena positions a core cycles through.
const ARENA_POSITIONS: u64 = 64;
/// Extra per-core offset so cores' messages do not share cache sets (11 lines).
const ARENA_CORE_SKEW: u64 = 11 * LINE_BYTES;

counters!(
    /// Reader counters.
    ReaderStats {
        /// Chunks sent to the Converter.
        chunks,
        /// Fields (items) completed.
        fields,
        /// Cycles with no ready field in any context.
        stall_cycles,
        /// Cycles spent emitting Chunks.
        busy_cycles,
        /// Context rotations.
        context_switches,
        /// Accesses issued on demand.
        demand_accesses,
        /// Accesses issued by the prefetcher.
        prefetches,
        /// Prefetched accesses later consumed by a field.
        prefetches_used,
        /// Fields read for conversion (items with a value; sub-message entries excluded).
        field_reads,
        /// Sum of per-field read latency over `field_reads` (cycles from needing a field to
        /// having its data, plus the Block Buffer access).
        field_read_latency_sum,
        /// Messages fully read.
        messages,
    }
);

counters!(
    /// Converter counters.
    ConverterStats {
        /// Chunks converted.
        chunks,
        /// Cycles executing instructions.
        busy_cycles,
    }
);

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

/// A Chunk travelling from Reader to Converter to Writer.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    ctx_txn: u64,
    instructions: u32,
    /// Output bytes this chunk carries to the Writer (attached to an item's last chunk).
    out_bytes: u32,
    /// Line writes the item needs once this chunk is written (last chunk only).
    out_lines: u32,
    /// Last chunk of the message.
    last: bool,
    slot: u32,
}

#[derive(Clone, Debug)]
struct Ctx {
    txn: u64,
    core: u32,
    prog: Rc<Program>,
    ready_at: Vec<u64>,
    prefetched: Vec<bool>,
    /// Per access: the earlier schema access of the same line, if any (see [`line_mates`]).
    mates: Rc<Vec<Option<u32>>>,
    cursor: usize,
    chunks_left: u32,
    arrival: u64,
    /// First access index not yet issued (scan start).
    scan: usize,
    /// No-pipelining mode: waiting for the item's chunks to drain.
    drain_wait: bool,
}

#[derive(Clone, Debug)]
struct Pipeline {
    ctxs: Vec<Option<Ctx>>,
    active: usize,
    switch_until: u64,
    queue: VecDeque<Chunk>,
    conv: Option<(Chunk, u32)>,
    conv_out: VecDeque<(u64, Chunk)>,
    /// Pending line writes of the Writer.
    write_backlog: u32,
    /// Per context slot: output bytes accumulated toward the next line.
    partial: Vec<u32>,
    /// In-flight chunks per slot (for no-pipelining drain).
    in_flight: Vec<u32>,
    reader: ReaderStats,
    converter: ConverterStats,
    writer: WriterStats,
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
    /// Mean cycles for a Reader to obtain a field's data (Fig. 7 text: 27 → 9).
    pub field_read_latency_cycles: f64,
    /// Mean cycles of a Block Buffer miss (request to data).
    pub amat_cycles: f64,
    /// Bandwidth through OP's NoC port in Gbps (all flits, both directions).
    pub port_gbps: f64,
    /// Average utilization of every directed mesh link.
    pub mesh_link_utilization: f64,
    /// Fraction of Reader cycles stalled on memory.
    pub reader_stall_fraction: f64,
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
    Ok(m.report())
}

/// For each schema access, the first earlier schema access of the same line: the Block Buffer
/// returns a whole line of schema entries to the Field Buffer (§4.3), so the entries after the
/// first need no request of their own. Relocation moves every line alike, so this holds for
/// every copy of the program.
fn line_mates(p: &Program) -> Vec<Option<u32>> {
    let mut first: std::collections::HashMap<u64, u32> = Default::default();
    p.accesses
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if !a.is_schema {
                return None;
            }
            let f = *first.entry(a.line).or_insert(i as u32);
            (f != i as u32).then_some(f)
        })
        .collect()
}

struct Model<'c> {
    cfg: &'c OpConfig,
    now: u64,
    rng: ChaCha8Rng,
    mesh: Mesh,
    port: Port,
    bb: BlockBuffer,
    pipes: Vec<Pipeline>,
    /// Workload messages as programs, at the first core's arena.
    progs: Vec<Program>,
    /// Per workload message: [`line_mates`] of its program.
    mates: Vec<Rc<Vec<Option<u32>>>>,
    /// Requests issued per core (each builds its message at a new arena position).
    core_requests: Vec<u64>,
    core_next: Vec<(u64, usize)>,
    queue: VecDeque<(u32, u64)>,
    txn: u64,
    disp: DispatcherStats,
    done_msgs: u64,
    done_bytes: u64,
    lat_sum: u64,
    lat_q_sum: u64,
    req_lat_sum: u64,
    /// Per core: cycle of its outstanding request's MMIO write.
    core_issued: Vec<u64>,
    miss_lat_sum: u64,
    miss_count: u64,
    /// Per txn: (core, arrival, started, wire bytes).
    live: std::collections::HashMap<u64, (u32, u64, u64, u64)>,
    mem_cycles: u64,
}

impl<'c> Model<'c> {
    fn new(cfg: &'c OpConfig, workload: &[MessageTrace]) -> Self {
        let cores = cfg.cores();
        let base: Vec<Program> = workload.iter().map(Program::from_trace).collect();
        let j = cfg.interleave as usize;
        let pipes = (0..cfg.pipelines)
            .map(|_| Pipeline {
                ctxs: vec![None; j],
                active: 0,
                switch_until: 0,
                queue: VecDeque::new(),
                conv: None,
                conv_out: VecDeque::new(),
                write_backlog: 0,
                partial: vec![0; j],
                in_flight: vec![0; j],
                reader: ReaderStats::default(),
                converter: ConverterStats::default(),
                writer: WriterStats::default(),
            })
            .collect();
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        // Stagger the cores' first requests deterministically.
        let core_next = (0..cores)
            .map(|c| {
                (
                    u64::from(c) * 7 + rng.next_u64() % 16,
                    (c as usize) % base.len(),
                )
            })
            .collect();
        Self {
            cfg,
            now: 0,
            rng,
            mesh: Mesh::new(cfg.noc.mesh),
            port: Port::new(cfg.noc.attach_links),
            bb: BlockBuffer::new(&cfg.block_buffer),
            pipes,
            mates: base.iter().map(|p| Rc::new(line_mates(p))).collect(),
            progs: base,
            core_requests: vec![0; cores as usize],
            core_next,
            queue: VecDeque::new(),
            txn: 0,
            disp: DispatcherStats::default(),
            done_msgs: 0,
            done_bytes: 0,
            lat_sum: 0,
            lat_q_sum: 0,
            req_lat_sum: 0,
            core_issued: vec![0; cores as usize],
            miss_lat_sum: 0,
            miss_count: 0,
            live: Default::default(),
            mem_cycles: cfg.mem_cycles(),
        }
    }

    fn core_tile(&self, core: u32) -> u32 {
        // Tiles 1.. in order from the first core's, wrapping past OP's tile 0.
        let others = self.mesh.tiles() - 1;
        1 + (core + self.cfg.dispatcher.first_core_tile.max(1) - 1) % others
    }

    fn measuring(&self) -> bool {
        self.now >= self.cfg.warmup_cycles
    }

    fn simulate(&mut self) {
        let end = self.cfg.warmup_cycles + self.cfg.measure_cycles;
        while self.now < end {
            self.port.advance(self.now);
            self.cores_tick();
            self.dispatch();
            // The Block Buffer's ports go round-robin over the pipelines: the first to ask
            // in a cycle rotates, so no pipeline has fixed priority.
            let n = self.pipes.len();
            let first = (self.now % n as u64) as usize;
            for k in 0..n {
                let p = (first + k) % n;
                self.writer_tick(p);
                self.converter_tick(p);
                self.reader_tick(p);
            }
            self.now += 1;
        }
    }

    fn cores_tick(&mut self) {
        let hop = u64::from(self.cfg.noc.hop_cycles);
        for c in 0..self.core_next.len() {
            let (at, msg) = self.core_next[c];
            if at != self.now {
                continue;
            }
            // The MMIO write travels to OP's tile and crosses its port.
            let tile = self.core_tile(c as u32);
            let reach = self.now + hop * u64::from(self.mesh.hops(tile, 0));
            let flits = self.cfg.noc.flits(16);
            self.mesh.route(tile, 0, flits);
            let arrive =
                self.port.send(reach, flits, true) + u64::from(self.cfg.dispatcher.dispatch_cycles);
            self.queue.push_back((c as u32, arrive));
            self.core_next[c] = (u64::MAX, msg);
            self.core_issued[c] = self.now;
            self.disp.requests += 1;
        }
    }

    fn dispatch(&mut self) {
        while let Some(&(core, arrive)) = self.queue.front() {
            if arrive > self.now {
                // Requests are queued in issue order; a later one may have arrived earlier.
                let Some(pos) = self.queue.iter().position(|r| r.1 <= self.now) else {
                    return;
                };
                let r = self.queue.remove(pos).unwrap_or((core, arrive));
                if !self.assign(r.0, r.1) {
                    self.queue.push_front(r);
                    return;
                }
                continue;
            }
            if !self.assign(core, arrive) {
                return;
            }
            self.queue.pop_front();
        }
    }

    /// Places a request in the least loaded pipeline with a free context.
    fn assign(&mut self, core: u32, arrive: u64) -> bool {
        let best = self
            .pipes
            .iter()
            .enumerate()
            .filter(|(_, p)| p.ctxs.iter().any(Option::is_none))
            .min_by_key(|(i, p)| (p.ctxs.iter().filter(|c| c.is_some()).count(), *i))
            .map(|(i, _)| i);
        let Some(p) = best else { return false };
        let slot = self.pipes[p]
            .ctxs
            .iter()
            .position(Option::is_none)
            .unwrap_or(0);
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
        let n = prog.accesses.len();
        let ctx = Ctx {
            txn: self.txn,
            core,
            chunks_left: 0,
            ready_at: vec![NOT_ISSUED; n],
            prefetched: vec![false; n],
            mates: Rc::clone(&self.mates[msg]),
            cursor: 0,
            arrival: self.now,
            scan: 0,
            // Without pipelining a message waits for the previous one to drain, too.
            drain_wait: !self.cfg.pipelining,
            prog,
        };
        if self.measuring() {
            self.disp.queue_cycles += self.now - arrive;
        }
        self.live
            .insert(self.txn, (core, arrive, self.now, ctx.prog.wire_bytes));
        self.pipes[p].ctxs[slot] = Some(ctx);
        true
    }

    /// Issues one access through the Block Buffer; returns false if it must retry.
    fn issue(&mut self, txn: u64, core: u32, line: u64, region: Region) -> Option<u64> {
        match self.bb.lookup(self.now, txn, line) {
            Lookup::Ready(t) => Some(t),
            Lookup::Busy => None,
            Lookup::Miss => {
                let ready = self.miss(core, line, region);
                self.bb.fill(txn, line, ready);
                Some(ready)
            }
        }
    }

    /// Latency of a Block Buffer miss: request across the port and mesh to the home LLC bank,
    /// forwarded to the owner core's L1 when dirty there, data back across the port.
    fn miss(&mut self, core: u32, line: u64, region: Region) -> u64 {
        let cfg = &self.cfg;
        let hop = u64::from(cfg.noc.hop_cycles);
        let tiles = u64::from(self.mesh.tiles());
        let home = (line % tiles) as u32;
        let owner = self.core_tile(core);
        let t0 = self.now + u64::from(cfg.block_buffer.hit_cycles);
        let req_flits = cfg.noc.header_flits;
        let sent = self.port.send(t0, req_flits, false);
        self.mesh.route(0, home, req_flits);
        let mut t =
            sent + hop * u64::from(self.mesh.hops(0, home)) + u64::from(cfg.memory.llc_cycles);
        let draw = |rng: &mut ChaCha8Rng| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let mut src = home;
        if region != Region::Buffer {
            if draw(&mut self.rng) >= cfg.memory.llc_hit_ratio {
                t += self.mem_cycles;
            } else if draw(&mut self.rng) < cfg.memory.owner_forward_ratio {
                // Directory forwards to the core that wrote the message (owner in M state).
                self.mesh.route(home, owner, req_flits);
                t += hop * u64::from(self.mesh.hops(home, owner)) + u64::from(cfg.memory.l1_cycles);
                src = owner;
            }
        }
        let data_flits = cfg.noc.flits(LINE_BYTES as u32);
        self.mesh.route(src, 0, data_flits);
        let reach = t + hop * u64::from(self.mesh.hops(src, 0));
        let ready = self.port.send(reach, data_flits, true);
        if self.measuring() {
            self.miss_lat_sum += ready - self.now;
            self.miss_count += 1;
        }
        ready
    }

    fn is_prefetchable(&self, prog: &Program, a: usize) -> bool {
        let acc = &prog.accesses[a];
        acc.depth == 0 || (acc.depth == 1 && acc.is_schema) || acc.region == Region::Buffer
    }

    fn reader_tick(&mut self, p: usize) {
        let j = self.pipes[p].ctxs.len();
        // Without pipelining (OP_Base) a field's read starts only once the previous field has
        // left the Converter and Writer: memory accesses never overlap transformations.
        {
            let now = self.now;
            let pipe = &mut self.pipes[p];
            for s in 0..j {
                if pipe.in_flight[s] > 0 {
                    continue;
                }
                if let Some(ctx) = pipe.ctxs[s].as_mut().filter(|c| c.drain_wait) {
                    ctx.drain_wait = false;
                    ctx.arrival = now;
                }
            }
        }
        let w = self.cfg.reader.field_buffer_entries as usize;
        let mut budget = self.cfg.reader.issue_per_cycle;
        // 1. Demand accesses of each context's current field, then prefetches.
        for pass in 0..2 {
            for k in 0..j {
                let slot = (self.pipes[p].active + k) % j;
                let Some(ctx) = self.pipes[p].ctxs[slot].as_ref() else {
                    continue;
                };
                if ctx.cursor >= ctx.prog.items.len() || ctx.drain_wait {
                    continue;
                }
                let (txn, core) = (ctx.txn, ctx.core);
                let prog = Rc::clone(&ctx.prog);
                let lo = ctx.scan;
                let item_end = if pass == 0 {
                    ctx.cursor + 1
                } else if self.cfg.prefetch {
                    (ctx.cursor + w).min(prog.items.len())
                } else {
                    0
                };
                if item_end == 0 {
                    continue;
                }
                let hi = prog.items[item_end - 1].end_access as usize;
                let cur_first = prog.items[ctx.cursor].first_access as usize;
                let mut a = lo;
                while a < hi {
                    let ctx = self.pipes[p].ctxs[slot].as_ref().expect("context is live");
                    let acc = prog.accesses[a];
                    let demand = (acc.item as usize) == ctx.cursor;
                    let eligible = ctx.ready_at[a] == NOT_ISSUED
                        && acc.dep.is_none_or(|d| ctx.ready_at[d as usize] <= self.now)
                        && (if pass == 0 {
                            demand && a >= cur_first
                        } else {
                            self.is_prefetchable(&prog, a)
                        });
                    // A schema entry whose line an earlier entry already requested arrives in
                    // the Field Buffer with that line (§4.3): no request of its own.
                    let mate = ctx.mates[a].filter(|&s| ctx.ready_at[s as usize] != NOT_ISSUED);
                    if eligible {
                        if let Some(s) = mate {
                            let pipe = &mut self.pipes[p];
                            let ctx = pipe.ctxs[slot].as_mut().expect("context is live");
                            ctx.ready_at[a] = ctx.ready_at[s as usize];
                            ctx.prefetched[a] = false;
                        } else if budget > 0 {
                            match self.issue(txn, core, acc.line, acc.region) {
                                Some(ready) => {
                                    let measuring = self.measuring();
                                    let pipe = &mut self.pipes[p];
                                    let ctx = pipe.ctxs[slot].as_mut().expect("context is live");
                                    ctx.ready_at[a] = ready;
                                    if pass == 1 && !demand {
                                        ctx.prefetched[a] = true;
                                        if measuring {
                                            pipe.reader.prefetches += 1;
                                        }
                                    } else if measuring {
                                        pipe.reader.demand_accesses += 1;
                                    }
                                    budget -= 1;
                                }
                                None => {
                                    budget = 0;
                                }
                            }
                        }
                    }
                    a += 1;
                }
                let pipe = &mut self.pipes[p];
                let ctx = pipe.ctxs[slot].as_mut().expect("context is live");
                while ctx.scan < ctx.ready_at.len() && ctx.ready_at[ctx.scan] != NOT_ISSUED {
                    ctx.scan += 1;
                }
            }
        }
        // 2. Emit a Chunk from the active context, or rotate to a ready one.
        let now = self.now;
        let measuring = self.measuring();
        let qcap = self.cfg.reader.chunk_queue as usize;
        let chunk_bytes = self.cfg.reader.chunk_bytes;
        let pipelining = self.cfg.pipelining;
        let switch_cycles = u64::from(self.cfg.reader.context_switch_cycles);
        let hit = u64::from(self.cfg.block_buffer.hit_cycles);
        let pipe = &mut self.pipes[p];
        if pipe.switch_until > now {
            return;
        }
        let ready_slot = |pipe: &Pipeline, s: usize| -> bool {
            let Some(ctx) = pipe.ctxs[s].as_ref() else {
                return false;
            };
            if ctx.cursor >= ctx.prog.items.len() || ctx.drain_wait {
                return false;
            }
            let it = &ctx.prog.items[ctx.cursor];
            (it.first_access..it.end_access).all(|a| ctx.ready_at[a as usize] <= now)
        };
        let act = pipe.active;
        if !ready_slot(pipe, act) {
            if let Some(k) = (1..j).map(|k| (act + k) % j).find(|&s| ready_slot(pipe, s)) {
                pipe.active = k;
                pipe.switch_until = now + switch_cycles;
                if measuring {
                    pipe.reader.context_switches += 1;
                }
                return;
            }
            if measuring && pipe.ctxs.iter().any(Option::is_some) {
                pipe.reader.stall_cycles += 1;
            }
            return;
        }
        if pipe.queue.len() >= qcap {
            return;
        }
        let ctx = pipe.ctxs[act].as_mut().expect("ready context is live");
        let it = &ctx.prog.items[ctx.cursor];
        if ctx.chunks_left == 0 {
            // Starting this field: its data is in the Data Buffer.
            let n: u32 = it
                .converts
                .iter()
                .map(|(_, b)| b.div_ceil(chunk_bytes).max(1))
                .sum::<u32>()
                .max(1);
            ctx.chunks_left = n;
            if measuring {
                let avail = (it.first_access..it.end_access)
                    .map(|a| ctx.ready_at[a as usize])
                    .max()
                    .unwrap_or(now);
                // A field read brings a value to convert; a sub-message's entry only leads
                // to its schema and is not one.
                if !it.converts.is_empty() {
                    pipe.reader.field_read_latency_sum += hit + avail.saturating_sub(ctx.arrival);
                    pipe.reader.field_reads += 1;
                }
                pipe.reader.fields += 1;
                pipe.reader.prefetches_used += (it.first_access..it.end_access)
                    .filter(|&a| ctx.prefetched[a as usize])
                    .count() as u64;
            }
        }
        // Instructions of this chunk: the op the chunk belongs to.
        let op = it.converts.first().map(|c| c.0).unwrap_or(0);
        let instructions = self.cfg.converter.instructions(op);
        ctx.chunks_left -= 1;
        let mut chunk = Chunk {
            ctx_txn: ctx.txn,
            instructions,
            out_bytes: 0,
            out_lines: 0,
            last: false,
            slot: act as u32,
        };
        if measuring {
            pipe.reader.chunks += 1;
            pipe.reader.busy_cycles += 1;
        }
        if ctx.chunks_left == 0 {
            chunk.out_bytes = it.writes.iter().map(|w| w.2).sum();
            // Scattered writes (deserialization into records) need one line write per line.
            let mut lines: Vec<u64> = it
                .writes
                .iter()
                .filter(|w| w.0 != Region::Buffer)
                .map(|w| w.1 / LINE_BYTES)
                .collect();
            lines.dedup();
            chunk.out_lines = lines.len() as u32;
            ctx.cursor += 1;
            ctx.arrival = now + 1;
            if !pipelining {
                ctx.drain_wait = true;
            }
            if ctx.cursor >= ctx.prog.items.len() {
                chunk.last = true;
                if measuring {
                    pipe.reader.messages += 1;
                }
            }
        }
        pipe.in_flight[act] += 1;
        pipe.queue.push_back(chunk);
        if chunk.last {
            // Reading done: the context is free for the next request (§4.6).
            pipe.ctxs[act] = None;
        }
    }

    fn converter_tick(&mut self, p: usize) {
        let stages = self.cfg.converter.stages;
        let measuring = self.measuring();
        let now = self.now;
        let pipe = &mut self.pipes[p];
        if pipe.conv.is_none() {
            if let Some(c) = pipe.queue.pop_front() {
                pipe.conv = Some((c, c.instructions));
            }
        }
        if let Some((c, left)) = pipe.conv.as_mut() {
            *left -= 1;
            if measuring {
                pipe.converter.busy_cycles += 1;
            }
            if *left == 0 {
                let c = *c;
                pipe.conv = None;
                // Leaves the last stage `stages - 1` cycles later.
                pipe.conv_out
                    .push_back((now + u64::from(stages.saturating_sub(1)), c));
                if measuring {
                    pipe.converter.chunks += 1;
                }
            }
        }
    }

    fn writer_tick(&mut self, p: usize) {
        let now = self.now;
        let measuring = self.measuring();
        // Line writes waiting for a Block Buffer port.
        while self.pipes[p].write_backlog > 0 {
            if !self.bb.write(now) {
                if measuring {
                    self.pipes[p].writer.port_stall_cycles += 1;
                }
                break;
            }
            self.pipes[p].write_backlog -= 1;
            let flits = self.cfg.noc.flits(LINE_BYTES as u32);
            let home = ((now.wrapping_mul(0x9e37_79b9) >> 7) % u64::from(self.mesh.tiles())) as u32;
            self.port.send(now + 1, flits, false);
            self.mesh.route(0, home, flits);
            // The home bank acknowledges the write.
            let ack = self.cfg.noc.header_flits;
            let hop = u64::from(self.cfg.noc.hop_cycles);
            self.port.send(
                now + 1 + 2 * hop * u64::from(self.mesh.hops(0, home)),
                ack,
                true,
            );
            self.mesh.route(home, 0, ack);
            if measuring {
                self.pipes[p].writer.lines += 1;
            }
        }
        let pipe = &mut self.pipes[p];
        let Some(&(at, c)) = pipe.conv_out.front() else {
            return;
        };
        if at > now || pipe.write_backlog > 2 {
            return;
        }
        pipe.conv_out.pop_front();
        let s = c.slot as usize;
        pipe.in_flight[s] -= 1;
        if measuring {
            pipe.writer.chunks += 1;
            pipe.writer.bytes += u64::from(c.out_bytes);
        }
        // Contiguous output: a write per completed line; scattered output: per line touched.
        let total = pipe.partial[s] + c.out_bytes;
        let mut lines = total / LINE_BYTES as u32 + c.out_lines;
        pipe.partial[s] = total % LINE_BYTES as u32;
        if c.last {
            if pipe.partial[s] > 0 {
                lines += 1;
            }
            pipe.partial[s] = 0;
        }
        pipe.write_backlog += lines;
        if c.last {
            self.complete(c.ctx_txn);
        }
    }

    fn complete(&mut self, txn: u64) {
        let Some((core, arrive, started, bytes)) = self.live.remove(&txn) else {
            return;
        };
        let hop = u64::from(self.cfg.noc.hop_cycles);
        let tile = self.core_tile(core);
        // Completion flit to the core; the core sees it on its next poll and sets up the next.
        let flits = self.cfg.noc.header_flits;
        let out = self.port.send(self.now, flits, false);
        self.mesh.route(0, tile, flits);
        let seen = out + hop * u64::from(self.mesh.hops(0, tile));
        let nmsg = self.progs.len();
        let next_msg = (self.core_next[core as usize].1 + 1) % nmsg;
        self.core_next[core as usize] = (
            seen + u64::from(self.cfg.dispatcher.core_gap_cycles),
            next_msg,
        );
        if self.measuring() {
            self.done_msgs += 1;
            self.done_bytes += bytes;
            self.lat_sum += self.now - started;
            self.lat_q_sum += self.now - arrive;
            self.req_lat_sum += seen - self.core_issued[core as usize];
            self.disp.completed += 1;
        }
    }

    fn report(&self) -> OpReport {
        let cycles = self.cfg.measure_cycles as f64;
        let secs = cycles / (self.cfg.clock_ghz * 1e9);
        let n = self.done_msgs.max(1) as f64;
        let mut stats = Stats::default();
        let mut fields = 0u64;
        let mut lat = 0u64;
        let mut stall = 0u64;
        let mut reader_cycles = 0u64;
        for (i, p) in self.pipes.iter().enumerate() {
            let pre = format!("pipeline{i}");
            p.reader.dump(&format!("{pre}.reader"), &mut stats);
            p.converter.dump(&format!("{pre}.converter"), &mut stats);
            p.writer.dump(&format!("{pre}.writer"), &mut stats);
            fields += p.reader.field_reads;
            lat += p.reader.field_read_latency_sum;
            stall += p.reader.stall_cycles;
            reader_cycles +=
                p.reader.stall_cycles + p.reader.busy_cycles + p.reader.context_switches;
        }
        let bb: &BlockBufferStats = &self.bb.stats;
        bb.dump("block_buffer", &mut stats);
        self.port.stats.dump("noc.port", &mut stats);
        self.disp.dump("dispatcher", &mut stats);
        let port_flits = (self.port.stats.flits_in + self.port.stats.flits_out) as f64;
        // Port counters include warm-up; scale by the simulated span.
        let total_cycles = (self.cfg.warmup_cycles + self.cfg.measure_cycles) as f64;
        let port_gbps = port_flits * f64::from(self.cfg.noc.link_bytes) * 8.0
            / (total_cycles / (self.cfg.clock_ghz * 1e9))
            / 1e9;
        let mesh_util =
            self.mesh.flit_hops() as f64 / (self.mesh.directed_links() as f64 * total_cycles);
        stats.set("noc", "mesh_flit_hops", self.mesh.flit_hops() as f64);
        OpReport {
            throughput_gbps: self.done_bytes as f64 * 8.0 / secs / 1e9,
            messages_per_s: self.done_msgs as f64 / secs,
            latency_ns: self.lat_sum as f64 / n / self.cfg.clock_ghz,
            latency_with_queue_ns: self.lat_q_sum as f64 / n / self.cfg.clock_ghz,
            request_latency_ns: self.req_lat_sum as f64 / n / self.cfg.clock_ghz,
            field_read_latency_cycles: lat as f64 / fields.max(1) as f64,
            amat_cycles: self.miss_lat_sum as f64 / self.miss_count.max(1) as f64,
            port_gbps,
            mesh_link_utilization: mesh_util,
            reader_stall_fraction: stall as f64 / reader_cycles.max(1) as f64,
            stats,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::one_field_trace;
    use optimus_trace::{Direction, Event, Format};

    /// Six set fields: schema entries 0..4 share the first schema line, 4 and 5 the second.
    fn six_fields() -> MessageTrace {
        let mut events = vec![Event::MessageBegin {
            direction: Direction::Encode,
            format: Format::Protobuf,
            type_id: 0,
        }];
        for k in 0..6u64 {
            events.push(Event::SchemaRead {
                kind: 5,
                addr: 0x1000 + 16 * k,
                size: 16,
            });
            events.push(Event::FieldRead {
                region: Region::Message,
                addr: 0x8000 + 64 * k,
                bytes: 4,
            });
            events.push(Event::Convert { op: 5, bytes: 4 });
            events.push(Event::FieldWrite {
                region: Region::Buffer,
                addr: 2 * k,
                bytes: 2,
            });
        }
        events.push(Event::MessageEnd { wire_bytes: 12 });
        MessageTrace {
            events,
            wire_bytes: 12,
            direction: Direction::Encode,
        }
    }

    #[test]
    fn a_one_field_message_takes_the_cycles_its_path_adds_up_to() {
        // 2x2 mesh, OP on tile 0, the one core on tile 1. The schema line 67 lives on home
        // tile 3, the data line 514 on tile 2; the directory forwards both reads to the core
        // that wrote them. Each miss: Block Buffer lookup (1), request flit through the port
        // (1), 3 cycles per hop over OP -> home -> owner -> OP (4 hops either way), LLC (6) and
        // L1 (2), five response flits through two links (3) = 25 cycles. The data read waits
        // for the schema entry: 50 cycles. Then one Chunk: Reader (1), Converter (1) and its
        // three further stages, the Writer (1) completes it: 4 more.
        let mut cfg = OpConfig::paper_4x4(1, 1);
        cfg.noc.mesh = 2;
        cfg.warmup_cycles = 0;
        cfg.measure_cycles = 1000;
        cfg.dispatcher.cores = 1;
        cfg.dispatcher.core_gap_cycles = 10_000;
        let r = run(&cfg, &[one_field_trace(67 * 64, 514 * 64)]).unwrap();
        assert_eq!(r.stats.get("dispatcher.completed"), Some(1.0));
        assert_eq!(r.amat_cycles, 25.0);
        assert_eq!(r.latency_ns * cfg.clock_ghz, 54.0);
        // The field's read latency counts from the context's start, plus the buffer access.
        assert_eq!(r.field_read_latency_cycles, 51.0);
        // Homes next to OP and the core shorten each miss by 3 cycles per hop saved.
        let near = run(&cfg, &[one_field_trace(65 * 64, 513 * 64)]).unwrap();
        // Line 65 and 513 live on tile 1, the owner: OP -> 1 -> 1 -> OP is 2 hops, not 4.
        assert_eq!(near.amat_cycles, 25.0 - 6.0);
        assert_eq!(near.latency_ns * cfg.clock_ghz, 54.0 - 12.0);
    }

    #[test]
    fn schema_entries_of_one_line_share_its_request() {
        let p = Program::from_trace(&six_fields());
        let m = line_mates(&p);
        let schema: Vec<Option<u32>> = p
            .accesses
            .iter()
            .zip(&m)
            .filter(|(a, _)| a.is_schema)
            .map(|(_, m)| *m)
            .collect();
        // Entries 1..3 ride on entry 0's line (access 0), entry 5 on entry 4's (access 8).
        assert_eq!(schema, vec![None, Some(0), Some(0), Some(0), None, Some(8)]);
        // Field data never does.
        assert!(p
            .accesses
            .iter()
            .zip(&m)
            .all(|(a, m)| a.is_schema || m.is_none()));
        // One message on OP{1,1}: two schema lines and six data lines reach the Block Buffer.
        let mut cfg = OpConfig::paper_4x4(1, 1);
        cfg.warmup_cycles = 0;
        cfg.measure_cycles = 2000;
        cfg.dispatcher.cores = 1;
        cfg.dispatcher.core_gap_cycles = 10_000;
        let r = run(&cfg, &[six_fields()]).unwrap();
        let get = |k: &str| r.stats.get(k).unwrap_or(0.0);
        assert_eq!(get("block_buffer.misses"), 8.0);
        assert_eq!(get("block_buffer.hits") + get("block_buffer.merges"), 0.0);
    }
}
