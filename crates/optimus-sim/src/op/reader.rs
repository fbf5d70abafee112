//! The Reader (§4.3, §4.6): `j` time-sharing contexts, each walking one message's schema.
//! Each cycle it issues the demand accesses of each context's current field and, with
//! prefetching, the accesses of the next `field_buffer_entries` fields at the top message
//! level plus first-level sub-message schemata (§6.1); then it emits one Chunk of the active
//! context's field once all its data is in, or rotates to a context whose field is ready.

use std::collections::VecDeque;
use std::rc::Rc;

use optimus_trace::Region;

use super::config::OpConfig;
use super::memsys::MemorySystem;
use super::pipeline::Chunk;
use super::writer::line_writes;
use crate::program::{Item, Program};
use crate::stats::counters;

/// `ready_at` of an access not issued yet.
const NOT_ISSUED: u64 = u64::MAX;

/// What the Reader reads of a message with no fields: nothing to fetch, convert or write. Its
/// one Chunk carries the message's completion through the Converter and Writer.
static NO_FIELDS: Item = Item {
    first_access: 0,
    end_access: 0,
    converts: Vec::new(),
    writes: Vec::new(),
    depth: 0,
};

/// The item at `cursor`; [`NO_FIELDS`] for a message without items.
fn item_at(prog: &Program, cursor: usize) -> &Item {
    prog.items.get(cursor).unwrap_or(&NO_FIELDS)
}

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

/// For each schema access, the first earlier schema access of the same line: the Block Buffer
/// returns a whole line of schema entries to the Field Buffer (§4.3), so the entries after the
/// first need no request of their own. Relocation moves every line alike, so this holds for
/// every copy of the program.
pub(super) fn line_mates(p: &Program) -> Vec<Option<u32>> {
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

/// What the Reader derives once per workload message (relocation moves whole lines, so it
/// holds for every copy of the program).
#[derive(Clone, Debug)]
pub(super) struct ProgramTables {
    /// Per access: [`line_mates`].
    mates: Vec<Option<u32>>,
    /// The accesses that have a line mate, in order: all a cycle's issue scan still has to
    /// visit once its request budget is spent.
    mated: Vec<u32>,
    /// Per item: the line writes its output causes ([`line_writes`]).
    line_writes: Vec<u32>,
}

impl ProgramTables {
    pub(super) fn new(p: &Program) -> Self {
        let mates = line_mates(p);
        let mated = (0..mates.len() as u32)
            .filter(|&a| mates[a as usize].is_some())
            .collect();
        Self {
            mates,
            mated,
            line_writes: line_writes(p),
        }
    }
}

/// One message being read.
#[derive(Clone, Debug)]
pub(super) struct Context {
    txn: u64,
    /// Tile of the core that built the message (the owner of its lines).
    owner_tile: u32,
    prog: Rc<Program>,
    /// Per access: the cycle its data is in the Block Buffer.
    ready_at: Vec<u64>,
    /// Per item: its accesses issued so far, and the latest cycle their data is in.
    item_issued: Vec<(u32, u64)>,
    prefetched: Vec<bool>,
    tables: Rc<ProgramTables>,
    /// Field (item) being read.
    cursor: usize,
    /// Chunks of the current field still to emit (0: the field has not started).
    chunks_left: u32,
    /// When the current field was first needed.
    needed_at: u64,
    /// First access index not yet issued (scan start).
    scan: usize,
    /// Without pipelining: waiting for the previous field's Chunks to drain.
    drain_wait: bool,
}

impl Context {
    /// Transformation `txn` of `prog` (built by the core on `owner_tile`), started at `now`;
    /// `drain_first` makes it wait for the context's earlier Chunks (no pipelining).
    pub(super) fn new(
        txn: u64,
        owner_tile: u32,
        prog: Rc<Program>,
        tables: Rc<ProgramTables>,
        now: u64,
        drain_first: bool,
    ) -> Self {
        let n = prog.accesses.len();
        Self {
            txn,
            owner_tile,
            ready_at: vec![NOT_ISSUED; n],
            item_issued: vec![(0, 0); prog.items.len()],
            prefetched: vec![false; n],
            tables,
            cursor: 0,
            chunks_left: 0,
            needed_at: now,
            scan: 0,
            drain_wait: drain_first,
            prog,
        }
    }

    /// Items still to emit: a message without fields is read as one empty item.
    fn reading(&self) -> bool {
        self.cursor < self.prog.items.len().max(1) && !self.drain_wait
    }

    /// Access `a` has been issued; its data is in at `ready`.
    fn issued(&mut self, a: usize, ready: u64) {
        self.ready_at[a] = ready;
        let (count, latest) = &mut self.item_issued[self.prog.accesses[a].item as usize];
        *count += 1;
        *latest = (*latest).max(ready);
    }

    /// Whether the current field's data is all in at `now`.
    fn field_ready(&self, now: u64) -> bool {
        if !self.reading() {
            return false;
        }
        let it = item_at(&self.prog, self.cursor);
        let (count, latest) = self.item_issued.get(self.cursor).copied().unwrap_or((0, 0));
        count == it.end_access - it.first_access && latest <= now
    }
}

/// One pipeline's Reader.
#[derive(Clone, Debug)]
pub(super) struct Reader {
    contexts: Vec<Option<Context>>,
    /// Context emitting Chunks.
    active: usize,
    /// A rotation in progress ends at this cycle.
    switch_until: u64,
    /// Per context: Chunks emitted and not yet taken by the Writer.
    in_flight: Vec<u32>,
    pub(super) stats: ReaderStats,
}

impl Reader {
    /// A Reader with `contexts` time-sharing contexts (OP{n,j}'s `j`).
    pub(super) fn new(contexts: usize) -> Self {
        Self {
            contexts: vec![None; contexts],
            active: 0,
            switch_until: 0,
            in_flight: vec![0; contexts],
            stats: ReaderStats::default(),
        }
    }

    /// Contexts holding a message.
    pub(super) fn busy_contexts(&self) -> usize {
        self.contexts.iter().filter(|c| c.is_some()).count()
    }

    /// The first free context.
    pub(super) fn free_context(&self) -> Option<usize> {
        self.contexts.iter().position(Option::is_none)
    }

    /// Starts `ctx` in free context `slot`.
    pub(super) fn start(&mut self, slot: usize, ctx: Context) {
        debug_assert!(self.contexts[slot].is_none());
        self.contexts[slot] = Some(ctx);
    }

    /// The Writer took a Chunk of context `slot`.
    pub(super) fn chunk_left_pipeline(&mut self, slot: usize) {
        self.in_flight[slot] -= 1;
    }

    fn is_prefetchable(prog: &Program, a: usize) -> bool {
        let acc = &prog.accesses[a];
        acc.depth == 0 || (acc.depth == 1 && acc.is_schema) || acc.region == Region::Buffer
    }

    /// One cycle; emitted Chunks go to `out`.
    pub(super) fn tick(
        &mut self,
        now: u64,
        cfg: &OpConfig,
        mem: &mut MemorySystem,
        out: &mut VecDeque<Chunk>,
        measuring: bool,
    ) {
        // Without pipelining (OP_Base) a field's read starts only once the previous field has
        // left the Converter and Writer: memory accesses never overlap transformations.
        for (ctx, &n) in self.contexts.iter_mut().zip(&self.in_flight) {
            if let Some(ctx) = ctx.as_mut().filter(|c| c.drain_wait && n == 0) {
                ctx.drain_wait = false;
                ctx.needed_at = now;
            }
        }
        self.issue(now, cfg, mem, measuring);
        self.emit(now, cfg, out, measuring);
    }

    /// Demand accesses of each context's current field, then prefetches, up to
    /// `issue_per_cycle` requests.
    fn issue(&mut self, now: u64, cfg: &OpConfig, mem: &mut MemorySystem, measuring: bool) {
        let j = self.contexts.len();
        let w = cfg.reader.field_buffer_entries as usize;
        let mut budget = cfg.reader.issue_per_cycle;
        for pass in 0..2 {
            for k in 0..j {
                let slot = (self.active + k) % j;
                let Some(ctx) = self.contexts[slot].as_mut() else {
                    continue;
                };
                if !ctx.reading() || ctx.prog.items.is_empty() {
                    continue;
                }
                let prog = Rc::clone(&ctx.prog);
                let tables = Rc::clone(&ctx.tables);
                let item_end = if pass == 0 {
                    ctx.cursor + 1
                } else if cfg.prefetch {
                    (ctx.cursor + w).min(prog.items.len())
                } else {
                    continue;
                };
                let hi = prog.items[item_end - 1].end_access as usize;
                let cur_first = prog.items[ctx.cursor].first_access as usize;
                let mut next = ctx.scan;
                // Once the requests are spent, only a schema entry whose line is already
                // requested can still be served this cycle: the scan visits those alone.
                let mut mated_from: Option<usize> = None;
                while next < hi {
                    if budget == 0 {
                        let i = *mated_from.get_or_insert_with(|| {
                            tables.mated.partition_point(|&m| (m as usize) < next)
                        });
                        match tables.mated.get(i) {
                            Some(&m) if (m as usize) < hi => {
                                next = m as usize;
                                mated_from = Some(i + 1);
                            }
                            _ => break,
                        }
                    }
                    let a = next;
                    next += 1;
                    let acc = prog.accesses[a];
                    let demand = acc.item as usize == ctx.cursor;
                    let eligible = ctx.ready_at[a] == NOT_ISSUED
                        && acc.dep.is_none_or(|d| ctx.ready_at[d as usize] <= now)
                        && (if pass == 0 {
                            demand && a >= cur_first
                        } else {
                            Self::is_prefetchable(&prog, a)
                        });
                    if !eligible {
                        continue;
                    }
                    // A schema entry whose line an earlier entry already requested arrives in
                    // the Field Buffer with that line (§4.3): no request of its own.
                    if let Some(s) =
                        tables.mates[a].filter(|&s| ctx.ready_at[s as usize] != NOT_ISSUED)
                    {
                        ctx.issued(a, ctx.ready_at[s as usize]);
                        ctx.prefetched[a] = false;
                    } else if budget > 0 {
                        match mem.read(
                            now,
                            ctx.txn,
                            ctx.owner_tile,
                            acc.line,
                            acc.region,
                            measuring,
                        ) {
                            Some(ready) => {
                                ctx.issued(a, ready);
                                if pass == 1 && !demand {
                                    ctx.prefetched[a] = true;
                                    if measuring {
                                        self.stats.prefetches += 1;
                                    }
                                } else if measuring {
                                    self.stats.demand_accesses += 1;
                                }
                                budget -= 1;
                            }
                            // No Block Buffer port this cycle.
                            None => budget = 0,
                        }
                    }
                }
                while ctx.scan < ctx.ready_at.len() && ctx.ready_at[ctx.scan] != NOT_ISSUED {
                    ctx.scan += 1;
                }
            }
        }
    }

    /// Emits one Chunk from the active context, or rotates to a ready one.
    fn emit(&mut self, now: u64, cfg: &OpConfig, out: &mut VecDeque<Chunk>, measuring: bool) {
        if self.switch_until > now {
            return;
        }
        let j = self.contexts.len();
        let ready = |r: &Self, s: usize| r.contexts[s].as_ref().is_some_and(|c| c.field_ready(now));
        let act = self.active;
        if !ready(self, act) {
            if let Some(k) = (1..j).map(|k| (act + k) % j).find(|&s| ready(self, s)) {
                self.active = k;
                self.switch_until = now + u64::from(cfg.reader.context_switch_cycles);
                if measuring {
                    self.stats.context_switches += 1;
                }
            } else if measuring && self.busy_contexts() > 0 {
                self.stats.stall_cycles += 1;
            }
            return;
        }
        if out.len() >= cfg.reader.chunk_queue as usize {
            return;
        }
        let ctx = self.contexts[act].as_mut().expect("ready context is live");
        let it = item_at(&ctx.prog, ctx.cursor);
        if ctx.chunks_left == 0 {
            // Starting this field: its data is in the Data Buffer.
            let chunk_bytes = cfg.reader.chunk_bytes;
            ctx.chunks_left = it
                .converts
                .iter()
                .map(|(_, b)| b.div_ceil(chunk_bytes).max(1))
                .sum::<u32>()
                .max(1);
            if measuring {
                let avail = (it.first_access..it.end_access)
                    .map(|a| ctx.ready_at[a as usize])
                    .max()
                    .unwrap_or(now);
                // A field read brings a value to convert; a sub-message's entry only leads
                // to its schema and is not one.
                if !it.converts.is_empty() {
                    self.stats.field_read_latency_sum += u64::from(cfg.block_buffer.hit_cycles)
                        + avail.saturating_sub(ctx.needed_at);
                    self.stats.field_reads += 1;
                }
                self.stats.fields += u64::from(!ctx.prog.items.is_empty());
                self.stats.prefetches_used += (it.first_access..it.end_access)
                    .filter(|&a| ctx.prefetched[a as usize])
                    .count() as u64;
            }
        }
        ctx.chunks_left -= 1;
        let mut chunk = Chunk {
            txn: ctx.txn,
            // The op the Chunk belongs to selects the Converter's program.
            op: it.converts.first().map_or(0, |c| c.0),
            slot: act as u32,
            ..Chunk::default()
        };
        if measuring {
            self.stats.chunks += 1;
            self.stats.busy_cycles += 1;
        }
        if ctx.chunks_left == 0 {
            chunk.out_bytes = it.writes.iter().map(|w| w.2).sum();
            chunk.out_lines = ctx.tables.line_writes.get(ctx.cursor).copied().unwrap_or(0);
            ctx.cursor += 1;
            ctx.needed_at = now + 1;
            if !cfg.pipelining {
                ctx.drain_wait = true;
            }
            if ctx.cursor >= ctx.prog.items.len() {
                chunk.last = true;
                if measuring {
                    self.stats.messages += 1;
                }
            }
        }
        self.in_flight[act] += 1;
        out.push_back(chunk);
        if chunk.last {
            // Reading done: the context is free for the next request (§4.6).
            self.contexts[act] = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    use super::*;
    use crate::program::flat_trace;

    /// Six fields: schema entries 0..4 share the first schema line, 4 and 5 the second; each
    /// field's data has a line of its own.
    fn six_fields() -> Program {
        let fields: Vec<(u64, u64)> = (0..6).map(|k| (0x1000 + 16 * k, 0x8000 + 64 * k)).collect();
        Program::from_trace(&flat_trace(&fields))
    }

    /// OP{1,j} on a 2x2 mesh whose hops are free: every isolated miss takes 13 cycles
    /// (lookup 1, request flit 1, LLC 6, owner's L1 2, five response flits over two links 3).
    fn config(interleave: u32, prefetch: bool) -> OpConfig {
        let mut cfg = OpConfig::paper_4x4(1, interleave);
        cfg.noc.mesh = 2;
        cfg.noc.hop_cycles = 0;
        cfg.prefetch = prefetch;
        cfg
    }

    /// Runs a Reader whose contexts start with `progs` at cycle 0, its Chunks taken at once;
    /// returns the cycles it emitted each Chunk in, and its counters.
    fn emit_cycles(cfg: &OpConfig, progs: &[Program]) -> (Vec<u64>, ReaderStats) {
        let mut reader = Reader::new(cfg.interleave as usize);
        let mut mem = MemorySystem::new(cfg, ChaCha8Rng::seed_from_u64(1));
        for (k, p) in progs.iter().enumerate() {
            let tables = Rc::new(ProgramTables::new(p));
            let ctx = Context::new(k as u64 + 1, 1, Rc::new(p.clone()), tables, 0, false);
            reader.start(k, ctx);
        }
        let mut out = VecDeque::new();
        let mut emitted = Vec::new();
        for now in 0..400 {
            reader.tick(now, cfg, &mut mem, &mut out, true);
            for c in out.drain(..) {
                reader.chunk_left_pipeline(c.slot as usize);
                emitted.push(now);
            }
        }
        (emitted, reader.stats)
    }

    #[test]
    fn schema_entries_of_one_line_share_its_request() {
        let m = line_mates(&six_fields());
        let schema: Vec<Option<u32>> = six_fields()
            .accesses
            .iter()
            .zip(&m)
            .filter(|(a, _)| a.is_schema)
            .map(|(_, m)| *m)
            .collect();
        // Entries 1..3 ride on entry 0's line (access 0), entry 5 on entry 4's (access 8).
        assert_eq!(schema, vec![None, Some(0), Some(0), Some(0), None, Some(8)]);
        // Field data never does.
        assert!(six_fields()
            .accesses
            .iter()
            .zip(&m)
            .all(|(a, m)| a.is_schema || m.is_none()));
    }

    #[test]
    fn without_prefetch_each_field_waits_for_its_own_misses() {
        // Field 0 chases its schema line, then its data line: 13 + 13 cycles. Fields 1..3
        // find their entries in that schema line and miss once on data, starting the cycle
        // after the previous Chunk: 14 each. Field 4 needs the second schema line: 27.
        let (emitted, stats) = emit_cycles(&config(1, false), &[six_fields()]);
        assert_eq!(emitted, vec![26, 40, 54, 68, 95, 109]);
        assert_eq!((stats.demand_accesses, stats.prefetches), (8, 0));
        assert_eq!((stats.chunks, stats.fields, stats.messages), (6, 6, 1));
        assert_eq!(stats.stall_cycles, 110 - 6);
        // Read latency per field from when it was needed, plus the Block Buffer access:
        // 26 + 13 * 3 + 26 + 13 = 104, plus 6.
        assert_eq!(stats.field_read_latency_sum, 110);
    }

    #[test]
    fn prefetching_overlaps_the_misses_up_to_the_port() {
        // Cycle 0: both schema lines are requested (the second by the prefetcher); their
        // 5-flit responses share the port's 2 flits per cycle and arrive at 13 and 15. From
        // cycle 13 the data lines follow, two per cycle (the Reader's issue width); requests
        // and responses share the port too, so the responses queue: 2.5 cycles apart. Each
        // field's Chunk leaves in the cycle its data arrives.
        let (emitted, stats) = emit_cycles(&config(1, true), &[six_fields()]);
        assert_eq!(emitted, vec![27, 29, 32, 34, 37, 39]);
        assert_eq!((stats.demand_accesses, stats.prefetches), (2, 6));
        assert_eq!(stats.prefetches_used, 6);
    }

    #[test]
    fn time_sharing_rotates_to_a_ready_context_in_one_cycle() {
        // Two one-field messages in two contexts: both schema lines go out in cycle 0, the
        // data lines at 13 and 15; context 0's data is in at 27, context 1's at 29, when the
        // Reader rotates to it (one cycle, §4.6) and emits at 30.
        let one = |s: u64, d: u64| Program::from_trace(&crate::program::one_field_trace(s, d));
        let progs = [one(0x1000, 0x8000), one(0x2040, 0x9040)];
        let (emitted, stats) = emit_cycles(&config(2, true), &progs);
        assert_eq!(emitted, vec![27, 30]);
        assert_eq!((stats.context_switches, stats.messages), (1, 2));
        // Alone, the second message's data is in at 26: sharing cost it 3 cycles of port
        // queueing behind the first message's responses, and the rotation 1.
        let (alone, _) = emit_cycles(&config(1, true), &progs[1..]);
        assert_eq!(alone, vec![26]);
    }
}
