//! The Reader (§4.3, §4.6): `j` time-sharing contexts, each walking one message's schema.
//! Each cycle it issues the demand accesses of each context's current field and, with
//! prefetching, the accesses of the next `field_buffer_entries` fields at the top message
//! level plus first-level sub-message schemata (§6.1); then it emits one Chunk of the active
//! context's field once its data is in, or rotates to a context whose field is ready. A field
//! whose data spans lines streams: a Chunk leaves once its lines are in, and the field's lines
//! are requested at most `field_window_lines` ahead of its Chunks. Every cycle is counted once,
//! under what it went to ([`ReaderCycle`]).

use std::collections::{BTreeSet, VecDeque};
use std::rc::Rc;

use optimus_trace::Region;

use super::config::OpConfig;
use super::mem::Eviction;
use super::memsys::MemorySystem;
use super::pipeline::Chunk;
use super::tables::{is_prefetchable, ProgramTables, Stream};
use super::writer::MessageOutput;
use crate::program::{Item, Program};
use crate::stats::counters;

/// `ready_at` of an access not issued yet.
const NOT_ISSUED: u64 = u64::MAX;

#[cfg(test)]
thread_local! {
    /// Tests turn the skips of known waits off to check that they change nothing.
    static SKIP_KNOWN_WAITS: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
    /// Accesses the issue scans have looked at, for tests that bound a cycle's cost.
    static SCAN_STEPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Whether work known to find nothing is skipped: an issue pass before its `quiet_until`, a
/// streaming field's readiness check before its `stream_wait`, the accesses a pass cannot
/// issue (waiting with one that waits, or not fetched by the prefetcher) and, once its
/// requests are spent, those it cannot serve (always, but for tests that compare against
/// checking every access on every cycle).
fn skip_known_waits() -> bool {
    #[cfg(test)]
    return SKIP_KNOWN_WAITS.get();
    #[cfg(not(test))]
    true
}

/// What the Reader reads of a message with no fields: nothing to fetch, convert or write. Its
/// one Chunk carries the message's completion through the Converter and Writer.
static NO_FIELDS: Item = Item {
    first_access: 0,
    end_access: 0,
    converts: Vec::new(),
    writes: Vec::new(),
    depth: 0,
    list_index: 0,
};

/// `i` modulo `n` for `i < 2n`: a context index counted on from another.
fn wrap(i: usize, n: usize) -> usize {
    if i >= n {
        i - n
    } else {
        i
    }
}

/// The item at `cursor`; [`NO_FIELDS`] for a message without items.
fn item_at(prog: &Program, cursor: usize) -> &Item {
    prog.items.get(cursor).unwrap_or(&NO_FIELDS)
}

/// What one Reader cycle went to; each has its counter in [`ReaderStats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReaderCycle {
    /// A Chunk left for the Converter (`busy_cycles`).
    Emit,
    /// Rotating to another context (`switch_cycles`).
    Switch,
    /// No context's next Chunk has its data in, and one of them waits on memory
    /// (`stall_cycles`).
    MemoryStall,
    /// Every context holding a message waits for its previous field's Chunks to leave the
    /// Converter and Writer, without pipelining (`drain_wait_cycles`).
    DrainWait,
    /// A Chunk is ready but the Chunk queue to the Converter is full (`queue_full_cycles`).
    QueueFull,
    /// No context holds a message (`idle_cycles`).
    Idle,
}

counters!(
    /// Reader counters. The `*_cycles` counters split every cycle between them: they add up
    /// to the cycles measured.
    ReaderStats {
        /// Chunks sent to the Converter.
        chunks,
        /// Fields (items) completed: their last Chunk sent to the Converter.
        fields,
        /// Cycles stalled on memory: a message in a context, but no context's next Chunk has
        /// its data in (counted here, not under `drain_wait_cycles`, when any context waits on
        /// memory).
        stall_cycles,
        /// Cycles spent emitting Chunks.
        busy_cycles,
        /// Cycles spent rotating to another context (`context_switch_cycles` per rotation).
        switch_cycles,
        /// Cycles every context holding a message waited for its previous field's Chunks to
        /// leave the Converter and Writer (without pipelining).
        drain_wait_cycles,
        /// Cycles a Chunk was ready but the Chunk queue to the Converter was full: the
        /// Converter and Writer hold the Reader back.
        queue_full_cycles,
        /// Cycles no context held a message.
        idle_cycles,
        /// Context rotations.
        context_switches,
        /// Accesses issued on demand.
        demand_accesses,
        /// Accesses issued by the prefetcher, counted when their message completes.
        prefetches,
        /// Fields read for conversion (items with a value; sub-message entries excluded).
        field_reads,
        /// Sum of per-field read latency over `field_reads` (cycles from needing a field to
        /// having its data, plus the Block Buffer access).
        field_read_latency_sum,
        /// Messages fully read.
        messages,
    }
);

/// One message being read.
#[derive(Clone, Debug)]
pub(super) struct Context {
    txn: u64,
    /// Tile of the core that built the message (the owner of its lines).
    owner_tile: u32,
    prog: Rc<Program>,
    /// The message's output at the addresses this request writes, which its Chunks carry to
    /// the Writer.
    output: Rc<MessageOutput>,
    /// Per access: the cycle its data is in the Block Buffer.
    ready_at: Vec<u64>,
    /// Per access: an access that depends on it has been issued, so the Reader has used its
    /// data (the address it holds).
    used: Vec<bool>,
    /// Per issue pass (demand, prefetch), per access (and one past the last): itself while the
    /// pass may still issue it (not issued; for the prefetch pass, one the prefetcher fetches),
    /// else a later access no further than the next such ([`Context::next_candidate`]).
    candidate_link: [Vec<u32>; 2],
    /// Per item: its accesses issued so far, and the latest cycle their data is in.
    item_issued: Vec<(u32, u64)>,
    /// Per issue pass (demand, prefetch): the schema entries not issued yet whose line mate
    /// has been (for the prefetch pass, those the prefetcher fetches). Once a pass's requests
    /// are spent they are all it can still serve, so it visits them alone: a cycle costs what
    /// it serves, however many other entries share the lines still to be requested.
    pending_mates: [BTreeSet<u32>; 2],
    prefetched: Vec<bool>,
    tables: Rc<ProgramTables>,
    /// Field (item) being read.
    cursor: usize,
    /// Chunks of the current field emitted so far.
    chunk: u32,
    /// For a streaming field: its accesses before this one are all in.
    in_through: usize,
    /// When the current field was first needed.
    needed_at: u64,
    /// First access index not yet issued (scan start).
    scan: usize,
    /// Without pipelining: waiting for the previous field's Chunks to drain.
    drain_wait: bool,
    /// Per issue pass (demand, prefetch): the scan can issue nothing before this cycle. Set
    /// by a pass that found every access issued, past its window or waiting on a dependence
    /// (the earliest of those dependences' arrivals); cleared when the context issues or
    /// emits.
    quiet_until: [u64; 2],
    /// Items of the message, at least one (a message without fields is read as one empty
    /// item); kept here so the per-cycle checks need not reach into the program.
    items: usize,
    /// How the current field streams, if it does (`tables.stream(cursor)`).
    cursor_stream: Option<Stream>,
    /// For a streaming field: one past the last access its next Chunk needs.
    chunk_needs: usize,
    /// For a streaming field: the arrival of the access `in_through` waits on (`NOT_ISSUED`
    /// before its request); cleared when the context issues or moves to another field.
    stream_wait: u64,
    /// Where the buffer stream's next request may be in `tables.buffer_reads`: every read
    /// before it from the current field on is issued.
    buffer_next: usize,
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
        let cursor_stream = tables.stream(0);
        Self {
            txn,
            owner_tile,
            ready_at: vec![NOT_ISSUED; n],
            used: vec![false; n],
            candidate_link: [
                (0..=n as u32).collect(),
                (0..=n)
                    .map(|a| match prog.accesses.get(a) {
                        Some(acc) if !is_prefetchable(acc) => a as u32 + 1,
                        _ => a as u32,
                    })
                    .collect(),
            ],
            item_issued: vec![(0, 0); prog.items.len()],
            output: Rc::new(MessageOutput::of(&prog)),
            pending_mates: Default::default(),
            prefetched: vec![false; n],
            tables,
            cursor: 0,
            chunk: 0,
            in_through: 0,
            needed_at: now,
            scan: 0,
            drain_wait: drain_first,
            quiet_until: [0; 2],
            items: prog.items.len().max(1),
            cursor_stream,
            chunk_needs: cursor_stream.map_or(0, |s| s.needs(0)),
            stream_wait: 0,
            buffer_next: 0,
            prog,
        }
    }

    /// Items still to emit: a message without fields is read as one empty item.
    fn reading(&self) -> bool {
        self.cursor < self.items && !self.drain_wait
    }

    /// Access `a` has been issued; its data is in at `ready`. The entries whose line mate it
    /// is wait for nothing else to be served.
    fn issued(&mut self, a: usize, ready: u64) {
        self.ready_at[a] = ready;
        if let Some(d) = self.prog.accesses[a].dep {
            self.used[d as usize] = true;
        }
        if self.tables.mates[a].is_some() {
            for pending in &mut self.pending_mates {
                pending.remove(&(a as u32));
            }
        }
        self.mates_pending(a);
        for link in &mut self.candidate_link {
            link[a] = a as u32 + 1;
        }
        self.quiet_until = [0; 2];
        self.stream_wait = 0;
        let (count, latest) = &mut self.item_issued[self.prog.accesses[a].item as usize];
        *count += 1;
        *latest = (*latest).max(ready);
    }

    /// The entries not issued yet whose line mate is `a`, issued: they may ride on its line.
    fn mates_pending(&mut self, a: usize) {
        for &m in self.tables.mates_of(a) {
            if self.ready_at[m as usize] == NOT_ISSUED {
                self.pending_mates[0].insert(m);
                if is_prefetchable(&self.prog.accesses[m as usize]) {
                    self.pending_mates[1].insert(m);
                }
            }
        }
    }

    /// The first access from `a` on that issue pass `pass` may still issue (the access count
    /// if none): not issued, and for the prefetch pass one the prefetcher fetches. The issue
    /// scan steps over the others in one go. The links are shortened as they are followed
    /// (path halving), so a long run of them costs little after its first crossing.
    fn next_candidate(&mut self, pass: usize, mut a: usize) -> usize {
        let link = &mut self.candidate_link[pass];
        while link[a] as usize != a {
            let skip = link[link[a] as usize];
            link[a] = skip;
            a = skip as usize;
        }
        a
    }

    /// Whether the current field's next Chunk has its data in at `now`: all the field's data,
    /// or for a streaming field the lines up to the Chunk's, which `in_through` moves past.
    fn chunk_ready(&mut self, now: u64) -> bool {
        if !self.reading() {
            return false;
        }
        if self.cursor_stream.is_some() {
            let needs = self.chunk_needs;
            if now < self.stream_wait && skip_known_waits() {
                return false;
            }
            while self.in_through < needs {
                let arrival = self.ready_at[self.in_through];
                if arrival > now {
                    self.stream_wait = arrival;
                    return false;
                }
                self.in_through += 1;
            }
            return true;
        }
        let it = item_at(&self.prog, self.cursor);
        let (count, latest) = self.item_issued.get(self.cursor).copied().unwrap_or((0, 0));
        count == it.end_access - it.first_access && latest <= now
    }

    /// One past the last access of `item` the Reader may request now: a streaming field's
    /// window.
    fn issue_limit(&self, item: usize) -> Option<usize> {
        let s = self.tables.stream(item)?;
        Some(s.issue_limit(if item == self.cursor { self.chunk } else { 0 }))
    }

    /// Accesses before this one are the Reader's: those of the fields already read and of the
    /// field being read, whose lines go into the Data Buffer as they arrive (§4.3); of a
    /// streaming field, the lines up to those its next Chunk needs. Only lines fetched ahead
    /// of it, for the fields the prefetcher reads ahead and for a streaming field's window,
    /// stay in the Block Buffer until their field comes, and may be lost there. However few
    /// lines the Block Buffer holds, the field being read makes progress.
    fn used_before(&self) -> usize {
        match (self.prog.items.get(self.cursor), self.cursor_stream) {
            (None, _) => self.prog.accesses.len(),
            (Some(_), Some(_)) => self.chunk_needs,
            (Some(it), None) => it.end_access as usize,
        }
    }

    /// Requests the serialized buffer's lines in order, up to `window` lines past the first
    /// one the current field (or the next field that reads the buffer) reads, whichever
    /// fields they belong to, with at most `budget` requests; returns the requests left.
    fn read_buffer_ahead(
        &mut self,
        now: u64,
        window: u64,
        mem: &mut MemorySystem,
        mut budget: u32,
        measuring: bool,
    ) -> u32 {
        let tables = Rc::clone(&self.tables);
        let reads = &tables.buffer_reads;
        let from = tables.buffer_from(self.cursor);
        let Some(&first) = reads.get(from) else {
            return budget;
        };
        let horizon = self.prog.accesses[first as usize]
            .line
            .saturating_add(window);
        self.buffer_next = self.buffer_next.max(from);
        while budget > 0 {
            let Some(&a) = reads.get(self.buffer_next) else {
                break;
            };
            let a = a as usize;
            if self.ready_at[a] != NOT_ISSUED {
                self.buffer_next += 1;
                continue;
            }
            let acc = self.prog.accesses[a];
            if acc.line > horizon {
                break;
            }
            match mem.read(now, self.txn, self.owner_tile, a as u32, &acc, measuring) {
                Some(ready) => {
                    self.issued(a, ready);
                    self.prefetched[a] = true;
                    self.buffer_next += 1;
                    budget -= 1;
                }
                // No Block Buffer port this cycle.
                None => return 0,
            }
        }
        budget
    }

    /// The Block Buffer evicted `line`, which access `fetched_by` fetched: every access of
    /// the line that was issued and whose data the Reader has not used yet goes back to not
    /// issued, to be requested again. Whether any did.
    fn line_evicted(&mut self, line: u64, fetched_by: u32) -> bool {
        let used_before = self.used_before();
        let mut any = false;
        let mut b = fetched_by as usize;
        loop {
            if self.prog.accesses[b].line == line
                && self.ready_at[b] != NOT_ISSUED
                && b >= used_before
                && !self.used[b]
            {
                self.unissue(b);
                any = true;
            }
            b = self.tables.next_on_line[b] as usize;
            if b == fetched_by as usize {
                return any;
            }
        }
    }

    /// Access `b` goes back to not issued: the issue passes find it again, and its field waits
    /// for it.
    fn unissue(&mut self, b: usize) {
        self.ready_at[b] = NOT_ISSUED;
        self.prefetched[b] = false;
        self.item_issued[self.prog.accesses[b].item as usize].0 -= 1;
        // The passes scan from `scan` on, following links past issued accesses. Between `b`
        // and `scan` every access is issued (an access sent back below `scan` takes it down),
        // so the first one a pass may issue after any of them is at or past the later of the
        // two: no link between them may lead further.
        let (lo, hi) = (b.min(self.scan), b.max(self.scan));
        let prefetchable = is_prefetchable(&self.prog.accesses[b]);
        for (pass, link) in self.candidate_link.iter_mut().enumerate() {
            for l in &mut link[lo..hi] {
                *l = (*l).min(hi as u32);
            }
            if pass == 0 || prefetchable {
                link[b] = b as u32;
            }
        }
        self.scan = lo;
        if self.prog.accesses[b].region == Region::Buffer {
            let at = self
                .tables
                .buffer_reads
                .partition_point(|&r| (r as usize) < b);
            self.buffer_next = self.buffer_next.min(at);
        }
        self.in_through = self.in_through.min(b);
        self.quiet_until = [0; 2];
        self.stream_wait = 0;
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

    /// The Block Buffer evicted `evicted`: the contexts reading their transformations send
    /// the accesses of those lines they have not used yet back to not issued
    /// ([`Context::line_evicted`]). Returns how many lines they will request again.
    pub(super) fn refetch(&mut self, evicted: &[Eviction]) -> u64 {
        let mut lines = 0;
        for e in evicted {
            let ctx = self.contexts.iter_mut().flatten().find(|c| c.txn == e.txn);
            if ctx.is_some_and(|c| c.line_evicted(e.line, e.access)) {
                lines += 1;
            }
        }
        lines
    }

    /// The Writer took a Chunk of context `slot`.
    pub(super) fn chunk_left_pipeline(&mut self, slot: usize) {
        self.in_flight[slot] -= 1;
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
        let spent = self.emit(now, cfg, out, measuring);
        if measuring {
            let s = &mut self.stats;
            *match spent {
                ReaderCycle::Emit => &mut s.busy_cycles,
                ReaderCycle::Switch => &mut s.switch_cycles,
                ReaderCycle::MemoryStall => &mut s.stall_cycles,
                ReaderCycle::DrainWait => &mut s.drain_wait_cycles,
                ReaderCycle::QueueFull => &mut s.queue_full_cycles,
                ReaderCycle::Idle => &mut s.idle_cycles,
            } += 1;
        }
    }

    /// What a cycle in which no context can emit goes to.
    fn waiting(&self) -> ReaderCycle {
        let mut holding = self.contexts.iter().flatten().peekable();
        if holding.peek().is_none() {
            ReaderCycle::Idle
        } else if holding.all(|c| c.drain_wait) {
            ReaderCycle::DrainWait
        } else {
            ReaderCycle::MemoryStall
        }
    }

    /// Demand accesses of each context's current field, then prefetches, up to
    /// `issue_per_cycle` requests.
    fn issue(&mut self, now: u64, cfg: &OpConfig, mem: &mut MemorySystem, measuring: bool) {
        let j = self.contexts.len();
        let w = cfg.reader.field_buffer_entries as usize;
        let mut budget = cfg.reader.issue_per_cycle;
        for pass in 0..2 {
            for k in 0..j {
                let slot = wrap(self.active + k, j);
                let Some(ctx) = self.contexts[slot].as_mut() else {
                    continue;
                };
                if (now < ctx.quiet_until[pass] && skip_known_waits())
                    || !ctx.reading()
                    || ctx.prog.items.is_empty()
                {
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
                // requested can still be served this cycle: the scan visits those alone, from
                // `mated_from` on.
                let mut mated_from: Option<u32> = None;
                // The item whose window was last looked up, and the window.
                let mut limit: (u32, Option<usize>) = (u32::MAX, None);
                // Whether this pass tried a request or started with none left (the budget only
                // falls after a try), and the earliest arrival it waited on: a pass that did
                // neither stays quiet until then.
                let mut tried = budget == 0;
                let mut first_arrival = NOT_ISSUED;
                while next < hi {
                    if budget == 0 && skip_known_waits() {
                        let from = *mated_from.get_or_insert(next as u32);
                        match ctx.pending_mates[pass].range(from..hi as u32).next() {
                            Some(&m) => {
                                next = m as usize;
                                mated_from = Some(m + 1);
                            }
                            None => break,
                        }
                    } else {
                        next = ctx.next_candidate(if skip_known_waits() { pass } else { 0 }, next);
                        if next >= hi {
                            break;
                        }
                    }
                    let a = next;
                    next += 1;
                    #[cfg(test)]
                    SCAN_STEPS.set(SCAN_STEPS.get() + 1);
                    let acc = prog.accesses[a];
                    // A streaming field's lines past its window wait for its Chunks.
                    if limit.0 != acc.item {
                        limit = (acc.item, ctx.issue_limit(acc.item as usize));
                    }
                    if limit.1.is_some_and(|l| a >= l) {
                        next = prog.items[acc.item as usize].end_access as usize;
                        continue;
                    }
                    debug_assert_eq!(ctx.ready_at[a], NOT_ISSUED);
                    // Accesses after it that wait whenever it waits are skipped with it.
                    if let Some(arrival) = acc
                        .dep
                        .map(|d| ctx.ready_at[d as usize])
                        .filter(|&r| r > now)
                    {
                        first_arrival = first_arrival.min(arrival);
                        if skip_known_waits() {
                            next = next.max(tables.blocked_run_end[a] as usize);
                        }
                        continue;
                    }
                    let demand = acc.item as usize == ctx.cursor;
                    if (pass == 0 && !(demand && a >= cur_first))
                        || (pass == 1 && !is_prefetchable(&acc))
                    {
                        continue;
                    }
                    // A schema entry whose line an earlier entry already requested arrives in
                    // the Field Buffer with that line (§4.3): no request of its own, while the
                    // line is still in the Block Buffer or on its way.
                    let mate = tables.mates[a].filter(|&s| ctx.ready_at[s as usize] != NOT_ISSUED);
                    let riding = mate.and_then(|s| {
                        let arrival = mem.bb.holds(ctx.txn, acc.line)?;
                        Some(ctx.ready_at[s as usize].max(arrival))
                    });
                    let lost = mate.filter(|_| riding.is_none());
                    if lost.is_some() {
                        // Its line left the Block Buffer: the entry waits for a request of its
                        // own, which the scan finds it for, not among those that ride.
                        for pending in &mut ctx.pending_mates {
                            pending.remove(&(a as u32));
                        }
                    }
                    if let Some(ready) = riding {
                        ctx.issued(a, ready);
                        ctx.prefetched[a] = false;
                        tried = true;
                    } else if budget > 0 {
                        tried = true;
                        match mem.read(now, ctx.txn, ctx.owner_tile, a as u32, &acc, measuring) {
                            Some(ready) => {
                                ctx.issued(a, ready);
                                // The line is back: the other entries may ride on it again.
                                if let Some(s) = lost {
                                    ctx.mates_pending(s as usize);
                                }
                                if pass == 1 && !demand {
                                    ctx.prefetched[a] = true;
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
                ctx.scan = ctx.next_candidate(0, ctx.scan);
                if !tried {
                    ctx.quiet_until[pass] = first_arrival;
                }
            }
        }
        // A decode's serialized buffer is one array, read in order (§4.3: the Reader picks
        // bytes from a contiguous array): with prefetching its lines are requested up to the
        // field window ahead of the current field's, past the fields the Field Buffer holds,
        // as a field's own lines stream.
        if cfg.prefetch {
            let window = u64::from(cfg.field_window_lines());
            for k in 0..j {
                let slot = wrap(self.active + k, j);
                match self.contexts[slot].as_mut() {
                    Some(ctx) if budget > 0 && ctx.reading() => {
                        budget = ctx.read_buffer_ahead(now, window, mem, budget, measuring);
                    }
                    _ => {}
                }
            }
        }
    }

    /// Emits one Chunk from the active context, or rotates to a ready one (and emits from it
    /// in the same cycle if a rotation takes no cycles); returns what the cycle went to.
    fn emit(
        &mut self,
        now: u64,
        cfg: &OpConfig,
        out: &mut VecDeque<Chunk>,
        measuring: bool,
    ) -> ReaderCycle {
        if self.switch_until > now {
            return ReaderCycle::Switch;
        }
        let j = self.contexts.len();
        let ready =
            |r: &mut Self, s: usize| r.contexts[s].as_mut().is_some_and(|c| c.chunk_ready(now));
        if !ready(self, self.active) {
            let from = self.active;
            let Some(k) = (1..j).map(|k| wrap(from + k, j)).find(|&s| ready(self, s)) else {
                return self.waiting();
            };
            self.active = k;
            self.switch_until = now + u64::from(cfg.reader.context_switch_cycles);
            if measuring {
                self.stats.context_switches += 1;
            }
            if self.switch_until > now {
                return ReaderCycle::Switch;
            }
        }
        if out.len() >= cfg.reader.chunk_queue as usize {
            return ReaderCycle::QueueFull;
        }
        let act = self.active;
        let ctx = self.contexts[act].as_mut().expect("ready context is live");
        let it = item_at(&ctx.prog, ctx.cursor);
        let chunks = ctx.tables.chunks(ctx.cursor);
        let stream = ctx.cursor_stream;
        let k = ctx.chunk;
        ctx.chunk += 1;
        ctx.quiet_until = [0; 2];
        let mut chunk = Chunk {
            txn: ctx.txn,
            // The op whose bytes the Chunk carries selects the Converter's program.
            op: ctx.tables.op_of_chunk(ctx.cursor, it, k),
            slot: act as u32,
            ..Chunk::default()
        };
        if measuring {
            self.stats.chunks += 1;
        }
        let last_of_field = ctx.chunk == chunks;
        if stream.is_some() || last_of_field {
            let (from, out_bytes) = ctx.output.item_span(ctx.cursor);
            (chunk.out_from, chunk.out_bytes) = match stream {
                // A streaming field's output lines fill, and leave, with its Chunks.
                Some(s) => (
                    from + u64::from(s.share(out_bytes, k)),
                    s.share(out_bytes, k + 1) - s.share(out_bytes, k),
                ),
                None => (from, out_bytes),
            };
            chunk.output = Some(Rc::clone(&ctx.output));
        }
        if last_of_field {
            if measuring {
                self.stats.fields += u64::from(!ctx.prog.items.is_empty());
                // A field read brings a value to convert; a sub-message's entry only leads
                // to its schema and is not one. Its latency runs from when the field is
                // needed to its last line's arrival, and is at least the Block Buffer's
                // access: a miss's arrival already counts the lookup that found it missing.
                if !it.converts.is_empty() {
                    let avail = match ctx.item_issued.get(ctx.cursor) {
                        Some(&(_, latest)) if it.end_access > it.first_access => latest,
                        _ => now,
                    };
                    self.stats.field_read_latency_sum += avail
                        .saturating_sub(ctx.needed_at)
                        .max(u64::from(cfg.block_buffer.hit_cycles));
                    self.stats.field_reads += 1;
                }
            }
            ctx.cursor += 1;
            ctx.cursor_stream = ctx.tables.stream(ctx.cursor);
            ctx.stream_wait = 0;
            ctx.chunk = 0;
            ctx.in_through = it.end_access as usize;
            ctx.needed_at = now + 1;
            if !cfg.pipelining {
                ctx.drain_wait = true;
            }
            if ctx.cursor >= ctx.prog.items.len() {
                chunk.last = true;
                if measuring {
                    self.stats.messages += 1;
                    // A message's prefetches are counted when it completes, so that they
                    // cover the messages `messages` counts wherever the measured window
                    // begins and ends.
                    self.stats.prefetches += ctx.prefetched.iter().filter(|&&p| p).count() as u64;
                }
            }
        }
        ctx.chunk_needs = ctx.cursor_stream.map_or(0, |s| s.needs(ctx.chunk));
        self.in_flight[act] += 1;
        let last = chunk.last;
        out.push_back(chunk);
        if last {
            // Reading done: the context is free for the next request (§4.6).
            self.contexts[act] = None;
        }
        ReaderCycle::Emit
    }
}

#[cfg(test)]
mod tests {
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    use super::*;
    use crate::op::sim::run;
    use crate::op::tables::{blocked_run_ends, line_mates};
    use crate::program::{flat_trace, line_access, one_large_field};
    use crate::workload::{named, MessageTrace, SUITE_SEED};
    use optimus_core::binary::EngineTraces as Engine;
    use optimus_trace::{Direction, Event, Format, Region, Repetition};

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
        emit_cycles_holding(cfg, progs, 0)
    }

    /// As [`emit_cycles`], each Chunk leaving the Converter and Writer `hold` cycles after
    /// the Reader emitted it.
    fn emit_cycles_holding(
        cfg: &OpConfig,
        progs: &[Program],
        hold: u64,
    ) -> (Vec<u64>, ReaderStats) {
        let (emitted, stats) = emit_chunks(cfg, progs, hold);
        (emitted.iter().map(|&(at, _)| at).collect(), stats)
    }

    /// As [`emit_cycles_holding`], with the Chunks emitted.
    fn emit_chunks(
        cfg: &OpConfig,
        progs: &[Program],
        hold: u64,
    ) -> (Vec<(u64, Chunk)>, ReaderStats) {
        let mut reader = Reader::new(cfg.interleave as usize);
        let mut mem = MemorySystem::new(cfg, ChaCha8Rng::seed_from_u64(1));
        for (k, p) in progs.iter().enumerate() {
            let tables = Rc::new(ProgramTables::new(p, cfg));
            let drain_first = !cfg.pipelining;
            let ctx = Context::new(k as u64 + 1, 1, Rc::new(p.clone()), tables, 0, drain_first);
            reader.start(k, ctx);
        }
        let mut out = VecDeque::new();
        let mut downstream: VecDeque<(u64, usize)> = VecDeque::new();
        let mut emitted = Vec::new();
        for now in 0..400 {
            reader.tick(now, cfg, &mut mem, &mut out, true);
            for c in out.drain(..) {
                downstream.push_back((now + hold, c.slot as usize));
                emitted.push((now, c));
            }
            while let Some(&(_, slot)) = downstream.front().filter(|(at, _)| *at <= now) {
                reader.chunk_left_pipeline(slot);
                downstream.pop_front();
            }
        }
        (emitted, reader.stats)
    }

    #[test]
    fn without_pipelining_a_field_is_read_after_the_last_one_has_left() {
        // OP_Base's Reader: no prefetching, no pipelining. With the Converter and Writer
        // taking 20 cycles, each field's read starts the cycle after its predecessor's Chunk
        // has left them (20 cycles after its emission): fields 1..3 then miss on data (13
        // cycles from the cycle after), field 4 on its second schema line and its data (26).
        let mut cfg = config(1, false);
        cfg.pipelining = false;
        let (emitted, _) = emit_cycles_holding(&cfg, &[six_fields()], 20);
        assert_eq!(emitted, vec![26, 60, 94, 128, 175, 209]);
        // Chunks that leave at once cost nothing: the times of a pipelined Reader.
        let (at_once, _) = emit_cycles_holding(&cfg, &[six_fields()], 0);
        assert_eq!(at_once, vec![26, 40, 54, 68, 95, 109]);
        // A pipelined Reader does not wait for them.
        cfg.pipelining = true;
        let (pipelined, _) = emit_cycles_holding(&cfg, &[six_fields()], 20);
        assert_eq!(pipelined, at_once);
    }

    /// A small field, a 1 KB field (16 lines, 128 Chunks) and a small field, their schema
    /// entries in one line; the last field's data is line 600, in set 24 of the 64.
    fn small_large_small() -> Program {
        let mut events = Vec::new();
        for (k, (data, bytes, out)) in [(0x8000, 4, 0), (0x10_0000, 1024, 2), (600 * 64, 4, 1026)]
            .into_iter()
            .enumerate()
        {
            events.extend([
                Event::SchemaRead {
                    kind: 5,
                    repetition: Repetition::Single,
                    addr: 0x1000 + 16 * k as u64,
                    size: 16,
                },
                Event::FieldRead {
                    region: Region::Message,
                    addr: data,
                    bytes,
                },
                Event::Convert {
                    op: if bytes > 4 { 1 } else { 5 },
                    bytes,
                },
                Event::FieldWrite {
                    region: Region::Buffer,
                    addr: out,
                    bytes: if bytes > 4 { bytes } else { 2 },
                },
            ]);
        }
        Program::from_trace(&MessageTrace {
            events,
            wire_bytes: 1028,
            direction: Direction::Encode,
        })
    }

    /// Runs a Reader prefetching `fields_ahead` fields over [`small_large_small`], its Chunks
    /// taken at once. With `evict: Some((at, set))`, another transformation requests two lines
    /// of `set` at cycle `at` and looks the first up again 16 cycles later, once both have
    /// arrived: they are put in, taking the set's two ways. The Reader hears of the lines
    /// evicted each cycle. Returns the cycles of its Chunks, the misses of its own requests
    /// and the lines it requested again.
    fn with_eviction(fields_ahead: u32, evict: Option<(u64, u64)>) -> (Vec<u64>, u64, u64) {
        let mut cfg = config(1, true);
        cfg.reader.field_buffer_entries = fields_ahead;
        let p = small_large_small();
        let tables = Rc::new(ProgramTables::new(&p, &cfg));
        let mut reader = Reader::new(1);
        let mut mem = MemorySystem::new(&cfg, ChaCha8Rng::seed_from_u64(1));
        reader.start(0, Context::new(1, 1, Rc::new(p), tables, 0, false));
        let other = |line| line_access(line, Region::Message);
        let (mut out, mut evicted) = (VecDeque::new(), Vec::new());
        let (mut emitted, mut refetches) = (Vec::new(), 0);
        for now in 0..400 {
            reader.tick(now, &cfg, &mut mem, &mut out, true);
            let lines = match evict {
                Some((at, set)) if now == at => vec![set + 64 * 10, set + 64 * 11],
                Some((at, set)) if now == at + 16 => vec![set + 64 * 10],
                _ => Vec::new(),
            };
            for line in lines {
                assert!(mem.read(now, 2, 1, 0, &other(line), true).is_some());
            }
            mem.bb.take_evictions(&mut evicted);
            refetches += reader.refetch(&evicted);
            for _ in out.drain(..) {
                emitted.push(now);
                reader.chunk_left_pipeline(0);
            }
        }
        let others = if evict.is_some() { 2 } else { 0 };
        (emitted, mem.bb.stats.misses - others, refetches)
    }

    #[test]
    fn a_prefetched_line_lost_before_its_field_is_read_is_requested_again() {
        // The last field's data line (600, set 24) is prefetched with the others and in long
        // before the 1 KB field's 128 Chunks end, at 155; its Chunk leaves at 156.
        let (emitted, misses, refetches) = with_eviction(12, None);
        assert_eq!((emitted[128], emitted[129]), (155, 156));
        assert_eq!((misses, refetches), (19, 0));
        // At 130 another transformation requests two lines of set 24 (their lookups put line
        // 600 in, the set's only line); their request flits cross at 131, their responses
        // share the port (in at 143 and 145), and the lookup at 146 puts them in, the second
        // evicting line 600. Told at the end of 146, the Reader requests it again at 147: a
        // 13-cycle miss, in at 160, when the field's Chunk leaves.
        let (emitted, misses, refetches) = with_eviction(12, Some((130, 24)));
        assert_eq!((emitted[128], emitted[129]), (155, 160));
        assert_eq!((misses, refetches), (20, 1));
    }

    #[test]
    fn a_schema_entry_rides_on_its_line_mates_request_only_while_the_line_is_there() {
        // Prefetching no field ahead, the last field's entry is read once the 1 KB field's
        // last Chunk has left (167). It shares the schema line fetched at cycle 0, still in the
        // Block Buffer: it rides on it, and the field's data, requested at 168, is in at 181.
        let (emitted, misses, _) = with_eviction(1, None);
        assert_eq!((emitted[128], emitted[129]), (167, 181));
        assert_eq!(misses, 19);
        // Lines are put in their sets at the first lookup after they arrive. Another
        // transformation's lookups at 100 put in the 1 KB field's first line (16384), which
        // evicts the schema line (64) from set 0, and then their own lines. The entry requests
        // the schema line again at 168 (in at 181), then its data (in at 194).
        let (emitted, misses, refetches) = with_eviction(1, Some((100, 0)));
        assert_eq!((emitted[128], emitted[129]), (167, 194));
        // One more miss; no refetch, as the entry had not been issued.
        assert_eq!((misses, refetches), (20, 0));
    }

    #[test]
    fn a_long_field_streams_its_chunks_as_its_lines_arrive() {
        // A 1 KB field: 16 data lines, 128 Chunks of 8 bytes. Its first Chunk leaves once the
        // schema line and the first data line are in (13 + 13 cycles); the other lines follow
        // 2.5 cycles apart (the port), faster than the Chunks use them (one per 8 Chunks), so
        // the Chunks leave one per cycle. Read whole, the first would wait for the sixteenth
        // line, until cycle 64.
        let p = Program::from_trace(&one_large_field(1024));
        let (emitted, stats) = emit_cycles(&config(1, true), &[p]);
        assert_eq!(emitted.len(), 128);
        assert_eq!(emitted[0], 26);
        assert!(emitted.windows(2).all(|w| w[1] == w[0] + 1), "{emitted:?}");
        assert_eq!((stats.fields, stats.messages), (1, 1));
    }

    /// Runs a Reader on `p`, one field, with a window of `window` lines, checking each cycle
    /// that it holds at most the window beyond the lines its Chunks have used, or the lines
    /// its next Chunk needs; returns the cycle of its last Chunk.
    fn stream_within(window: u32, p: Program) -> u64 {
        let mut cfg = config(1, true);
        cfg.reader.field_window_lines = window;
        let tables = Rc::new(ProgramTables::new(&p, &cfg));
        let s = tables.stream(0).expect("a multi-line field streams");
        let mut reader = Reader::new(1);
        let mut mem = MemorySystem::new(&cfg, ChaCha8Rng::seed_from_u64(1));
        reader.start(0, Context::new(1, 1, Rc::new(p), tables, 0, false));
        let mut out = VecDeque::new();
        for now in 0..100_000 {
            reader.tick(now, &cfg, &mut mem, &mut out, true);
            if let Some(c) = out.pop_back() {
                reader.chunk_left_pipeline(0);
                if c.last {
                    return now;
                }
            }
            let ctx = reader.contexts[0].as_ref().expect("still reading");
            let requested = ctx.ready_at[s.run_from as usize..]
                .iter()
                .filter(|&&r| r != NOT_ISSUED)
                .count() as u32;
            let next_needs = (s.needs(ctx.chunk) - s.run_from as usize) as u32;
            assert!(
                requested <= (window + s.share(s.run_lines, ctx.chunk)).max(next_needs),
                "cycle {now}: {requested} lines requested after {} Chunks",
                ctx.chunk
            );
        }
        panic!("the field never finished");
    }

    #[test]
    fn a_streaming_field_requests_no_more_than_its_window_ahead() {
        // 64 lines, 512 Chunks. Four lines of window cover the 13-cycle miss (32 Chunks), so
        // the Chunks leave one per cycle from cycle 26 on. A one-line window requests each
        // line the cycle after its predecessor's eighth Chunk: every line after the first
        // costs 8 Chunks and a 13-cycle miss.
        let field = || Program::from_trace(&one_large_field(64 * 64));
        assert_eq!(stream_within(4, field()), 26 + 511);
        assert_eq!(stream_within(1, field()), 26 + 63 * (8 + 13) + 7);
        // A field that reads 64 lines to convert 16 bytes: each of its two Chunks needs 32
        // lines, more than the window holds, and gets them, the second's requested once the
        // first has left: about 100 cycles each (32 lines through the port, and a miss).
        let mut sparse = field();
        sparse.items[0].converts = vec![(1, 16)];
        assert!((150..250).contains(&stream_within(4, sparse)));
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
        // Read latency per field from when it was needed to its data's arrival, which
        // includes the Block Buffer lookup that missed: 26 + 13 * 3 + 26 + 13 = 104.
        assert_eq!(stats.field_read_latency_sum, 104);
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
        // A rotation costs `context_switch_cycles`: none at all, or two.
        for (switch, second) in [(0, 29), (1, 30), (2, 31)] {
            let mut cfg = config(2, true);
            cfg.reader.context_switch_cycles = switch;
            let (emitted, stats) = emit_cycles(&cfg, &progs);
            assert_eq!(emitted, vec![27, second], "{switch} cycles a rotation");
            assert_eq!(
                (stats.context_switches, stats.switch_cycles),
                (1, u64::from(switch))
            );
        }
    }

    #[test]
    fn each_chunk_runs_the_program_of_the_op_whose_bytes_it_carries() {
        // A field converted by op 7 (16 bytes: two Chunks), then op 9 (8 bytes: one).
        let mut p = Program::from_trace(&crate::program::one_field_trace(0x1000, 0x8000));
        p.items[0].converts = vec![(7, 16), (9, 8)];
        let (emitted, _) = emit_chunks(&config(1, true), &[p], 0);
        let ops: Vec<u16> = emitted.iter().map(|(_, c)| c.op).collect();
        assert_eq!(ops, vec![7, 7, 9]);
    }

    #[test]
    fn prefetches_are_counted_with_their_messages() {
        // Windows that begin and end in the middle of messages: a message's prefetches count
        // when it is counted, so the prefetches per message are a whole message's.
        let workload = named(&mut Engine, "flat", SUITE_SEED).unwrap();
        let per_message = |warmup: u64, measure: u64| {
            let mut cfg = OpConfig::paper_4x4(1, 1);
            (cfg.warmup_cycles, cfg.measure_cycles) = (warmup, measure);
            let stats = run(&cfg, &workload).unwrap().stats;
            let count = |k: &str| stats.get(&format!("pipeline0.reader.{k}")).unwrap();
            assert!(count("messages") > 0.0);
            count("prefetches") / count("messages")
        };
        let whole = per_message(0, 200_000);
        for (warmup, measure) in [(1000, 5000), (1337, 4321)] {
            let p = per_message(warmup, measure);
            assert!((p - whole).abs() < 0.05 * whole, "{p} vs {whole}");
        }
    }

    #[test]
    fn skipping_known_waits_changes_nothing() {
        // The three classes (Mixed deserialized), some of the HyperProtoBench and
        // DeathStarBench messages, a streaming field and fields of many accesses, on OP_Base,
        // OP{1,1}, a time-shared 8x8 OP and a port-bound OP{8,4}: every statistic agrees with
        // the Reader that scans every context, checks every streaming field and looks at every
        // access not issued on every cycle.
        let mut workload = Vec::new();
        for name in ["flat", "mixed-deser", "nested", "hpb", "socialnet-deser"] {
            let traces = named(&mut Engine, name, SUITE_SEED).unwrap();
            workload.extend(traces.into_iter().step_by(12));
        }
        workload.push(one_large_field(6000));
        workload.extend(long_fields(300, 8000));
        let configs = [
            OpConfig::op_base(),
            OpConfig::paper_4x4(1, 1),
            OpConfig::paper_8x8(3, 4),
            OpConfig::paper_4x4(8, 4),
        ];
        for mut cfg in configs {
            cfg.warmup_cycles = 2000;
            cfg.measure_cycles = 20000;
            let skipping = run(&cfg, &workload).unwrap();
            SKIP_KNOWN_WAITS.set(false);
            let scanning = run(&cfg, &workload).unwrap();
            SKIP_KNOWN_WAITS.set(true);
            assert_eq!(skipping, scanning, "{cfg:?}");
        }
    }

    /// A message of `events` between its begin and end, with no output.
    fn message(events: impl IntoIterator<Item = Event>) -> MessageTrace {
        let mut all = vec![Event::MessageBegin {
            direction: Direction::Encode,
            format: Format::Protobuf,
            type_id: 0,
        }];
        all.extend(events);
        all.push(Event::MessageEnd { wire_bytes: 0 });
        MessageTrace {
            events: all,
            wire_bytes: 0,
            direction: Direction::Encode,
        }
    }

    /// Messages whose field holds about `m` accesses or ops, as a trace file may ask for: a
    /// new item starts only after a field's work (a conversion or a write), so whatever comes
    /// before is one field; and a field of `field_bytes` converted bytes.
    fn long_fields(m: u64, field_bytes: u32) -> Vec<MessageTrace> {
        let entry = |k: u64| Event::SchemaRead {
            kind: 5,
            repetition: Repetition::Single,
            addr: 0x1000 + 16 * k,
            size: 16,
        };
        let read = |k: u64, bytes: u32| Event::FieldRead {
            region: Region::Message,
            addr: 0x10_0000 + 128 * k,
            bytes,
        };
        let work = |bytes: u32| {
            [
                Event::Convert { op: 1, bytes },
                Event::FieldWrite {
                    region: Region::Buffer,
                    addr: 0,
                    bytes: 4,
                },
            ]
        };
        vec![
            // Schema entries alone, four to a line.
            message((0..m).map(entry)),
            // A pointer chase of two-line reads.
            message(std::iter::once(entry(0)).chain((0..m).map(|k| read(k, 128)))),
            // Entries, each with a read that hangs from it, and no conversion.
            message((0..m).flat_map(|k| [entry(k), read(k, 8)])),
            // A long field, then a sub-message of entries and reads that the prefetcher passes
            // over (it fetches no sub-message data) while the field's Chunks leave.
            message(
                [entry(0), read(0, 4)]
                    .into_iter()
                    .chain(work(field_bytes))
                    .chain([entry(1), Event::Enter { type_id: 1 }])
                    .chain((2..m).flat_map(|k| [entry(k), read(k, 8)]))
                    .chain([Event::Leave]),
            ),
            // A field converted by `m` ops, a Chunk each.
            message(
                [entry(0), read(0, 4)]
                    .into_iter()
                    .chain(
                        (0..m)
                            .flat_map(|_| work(8))
                            .filter(|e| matches!(e, Event::Convert { .. })),
                    )
                    .chain(work(8)),
            ),
        ]
    }

    /// Runs one Reader context on `p` until its last Chunk has left, each Chunk taken at
    /// once; returns the cycles that took and the accesses the issue scans looked at.
    fn read_whole(cfg: &OpConfig, p: Program) -> (u64, u64) {
        let tables = Rc::new(ProgramTables::new(&p, cfg));
        let mut reader = Reader::new(1);
        let mut mem = MemorySystem::new(cfg, ChaCha8Rng::seed_from_u64(1));
        reader.start(0, Context::new(1, 1, Rc::new(p), tables, 0, false));
        let mut out = VecDeque::new();
        SCAN_STEPS.set(0);
        for now in 0..10_000_000 {
            reader.tick(now, cfg, &mut mem, &mut out, true);
            while let Some(c) = out.pop_front() {
                reader.chunk_left_pipeline(0);
                if c.last {
                    return (now + 1, SCAN_STEPS.get());
                }
            }
        }
        panic!("the message never finished");
    }

    #[test]
    fn a_cycle_costs_what_it_does_not_the_length_of_its_field() {
        // Each message's field holds 50 000 accesses (or ops). The issue scans look at a few
        // accesses per access, and per cycle at most about one per miss in flight (the reads
        // of the third message each wait on their own entry), however long the field: 67 000
        // to 1.3 million steps. Before, once a cycle's requests were spent, the scan went on
        // over every schema entry to the end of the field whose line another entry shared
        // (37 500 a cycle for the first message: about 10^9 steps); it stepped over a chain of
        // waiting accesses 64 at a time, and on every cycle of the long field's Chunks over the
        // sub-message the prefetcher passes by one access at a time; and each Chunk walked its
        // field's ops to find its own. The messages took minutes to hours; now seconds.
        let cfg = OpConfig::paper_4x4(1, 1);
        let in_flight = u64::from(cfg.block_buffer.mshrs);
        for (k, t) in long_fields(50_000, 400_000).iter().enumerate() {
            let p = Program::from_trace(t);
            let accesses = p.accesses.len() as u64;
            let (cycles, steps) = read_whole(&cfg, p);
            assert!(
                steps <= 4 * accesses + in_flight * cycles,
                "message {k}: {steps} steps for {accesses} accesses in {cycles} cycles"
            );
        }
    }

    #[test]
    fn blocked_runs_hold_every_access_that_waits_with_their_first() {
        let mut progs: Vec<Program> = long_fields(300, 800)
            .iter()
            .map(Program::from_trace)
            .collect();
        for name in ["mixed", "nested", "hpb", "socialnet"] {
            let traces = named(&mut Engine, name, SUITE_SEED).unwrap();
            progs.extend(traces.iter().step_by(5).map(Program::from_trace));
        }
        for (k, p) in progs.iter().enumerate() {
            let ends = blocked_run_ends(p);
            let n = p.accesses.len();
            for (a, &run_end) in ends.iter().enumerate() {
                let waits_with_a = |c: usize| {
                    let dep = p.accesses[c].dep;
                    dep == p.accesses[a].dep || dep.is_some_and(|d| (a..c).contains(&(d as usize)))
                };
                let end = (a + 1..n).find(|&c| !waits_with_a(c)).unwrap_or(n);
                assert_eq!(run_end as usize, end, "program {k}, access {a}");
            }
        }
    }
}
