//! What the Reader derives once per message program, before any copy of it is read: which
//! accesses the prefetcher fetches, which schema entries ride on another's line, how a long
//! field streams, which accesses wait together, and each item's Chunks and converter ops.
//! Relocation moves whole lines, so the tables hold for every copy of the program.

use optimus_trace::Region;

use super::config::OpConfig;
use crate::program::{Access, Item, Program};

/// Chunks of one converter op's `bytes` of input: one per `chunk_bytes`, at least one.
fn op_chunks(bytes: u32, chunk_bytes: u32) -> u32 {
    bytes.div_ceil(chunk_bytes).max(1)
}

/// Whether the prefetcher fetches `acc`: top-level data and schema entries, the first level
/// of sub-message schemata (§6.1), and the serialized buffer, read in order.
pub(super) fn is_prefetchable(acc: &Access) -> bool {
    acc.depth == 0 || (acc.depth == 1 && acc.is_schema) || acc.region == Region::Buffer
}

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

/// How a field whose data runs over several lines streams: its Chunks are spread evenly over
/// the run's lines, and its output's bytes over its Chunks; the Reader requests the run a
/// window at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stream {
    /// First access of the data run; the field's accesses before it (schema entry, pointers)
    /// precede its first Chunk.
    pub(super) run_from: u32,
    /// Lines in the run.
    pub(super) run_lines: u32,
    /// Chunks of the field.
    pub(super) chunks: u32,
    /// Lines the Reader may hold ahead of the Chunks.
    window: u32,
}

impl Stream {
    /// The stream of item `it` (of `chunks` Chunks), if its accesses end in a run of more than
    /// one consecutive data line; the Reader may request `window` lines beyond those used.
    fn of(p: &Program, it: &Item, chunks: u32, window: u32) -> Option<Self> {
        let acc = &p.accesses[it.first_access as usize..it.end_access as usize];
        let last = acc.last().filter(|a| !a.is_schema)?;
        let run_lines = 1 + acc
            .windows(2)
            .rev()
            .take_while(|w| {
                !w[0].is_schema && w[0].region == last.region && w[0].line + 1 == w[1].line
            })
            .count() as u32;
        (run_lines > 1).then_some(Self {
            run_from: it.end_access - run_lines,
            run_lines,
            chunks,
            window,
        })
    }

    /// Share of `total` that goes with Chunks `0..k`.
    pub(super) fn share(&self, total: u32, k: u32) -> u32 {
        (u64::from(total) * u64::from(k) / u64::from(self.chunks)) as u32
    }

    /// One past the last access Chunk `k` needs.
    pub(super) fn needs(&self, k: u32) -> usize {
        let lines = (u64::from(self.run_lines) * u64::from(k + 1)).div_ceil(u64::from(self.chunks));
        self.run_from as usize + lines as usize
    }

    /// One past the last access the Reader may request once Chunks `0..k` have left: the
    /// lines they used up free the window, and Chunk `k`'s own lines are always allowed (a
    /// field may read more lines per Chunk than the window holds).
    pub(super) fn issue_limit(&self, k: u32) -> usize {
        let window =
            self.run_from as usize + self.window as usize + self.share(self.run_lines, k) as usize;
        window.max(self.needs(k))
    }
}

/// Per access `a`: one past the run of accesses after it that wait whenever it waits on its
/// dependence, however long: those that depend on the same access (the lines of one read) or
/// on an access of the run (a chain of pointers). While `a` waits, each of them waits on `a`'s
/// dependence or on an access of the run, none of which can have been issued.
///
/// The run of an access `c` in `a`'s run lies in `a`'s run too, so the walk from `a` steps
/// over it at once. The runs are found from the last access back, in fewer than two steps per
/// access: the accesses a walk may still visit form a stack, onto which each access is pushed
/// once and from which a walk takes those it steps over.
pub(super) fn blocked_run_ends(p: &Program) -> Vec<u32> {
    let n = p.accesses.len();
    let mut run_end = vec![n as u32; n];
    for a in (0..n).rev() {
        let own = p.accesses[a].dep;
        let waits_with_a = |c: usize| {
            let dep = p.accesses[c].dep;
            dep == own || dep.is_some_and(|d| (a..c).contains(&(d as usize)))
        };
        let mut c = a + 1;
        while c < n && waits_with_a(c) {
            c = run_end[c] as usize;
        }
        run_end[a] = c as u32;
    }
    run_end
}

/// Per access: the next access of the same line in program order, the first one for the last:
/// a ring per line, so that the accesses of a line the Block Buffer evicts are found from the
/// one whose miss fetched it. Relocation moves every line of a region alike, so the rings hold
/// for every copy of the program.
fn same_line_rings(p: &Program) -> Vec<u32> {
    let mut next: Vec<u32> = (0..p.accesses.len() as u32).collect();
    // Per line: its first and its latest access so far.
    let mut ends: std::collections::HashMap<u64, (u32, u32)> = Default::default();
    for (i, a) in p.accesses.iter().enumerate() {
        let i = i as u32;
        ends.entry(a.line)
            .and_modify(|(_, last)| {
                next[*last as usize] = i;
                *last = i;
            })
            .or_insert((i, i));
    }
    for (first, last) in ends.into_values() {
        next[last as usize] = first;
    }
    next
}

/// What the Reader derives once per workload message (relocation moves whole lines, so it
/// holds for every copy of the program).
#[derive(Clone, Debug)]
pub(super) struct ProgramTables {
    /// Per access: [`line_mates`].
    pub(super) mates: Vec<Option<u32>>,
    /// Per access (and one past the last): where the entries whose line mate it is start in
    /// `mates_of`.
    mates_from: Vec<u32>,
    /// Grouped by their line mate, in order: the schema entries that its request brings in.
    mates_of: Vec<u32>,
    /// Per item (and one past the last): where its ops start in `op_chunk_ends`.
    ops_from: Vec<u32>,
    /// Per converter op of each item: the item's Chunks up to the end of the op's input.
    op_chunk_ends: Vec<u32>,
    /// Per item: its Chunks, one per `chunk_bytes` of each op's input, at least one.
    chunks: Vec<u32>,
    /// Per item: how it streams, if its data spans several lines.
    streams: Vec<Option<Stream>>,
    /// Per access: one past the run of accesses after it that wait whenever it waits on its
    /// dependence ([`blocked_run_ends`]). The issue scan skips them in one step.
    pub(super) blocked_run_end: Vec<u32>,
    /// Per access: the next access of the same line, the first one after the last
    /// ([`same_line_rings`]).
    pub(super) next_on_line: Vec<u32>,
    /// The serialized buffer's reads (a decode's input), in order: the Reader streams them.
    pub(super) buffer_reads: Vec<u32>,
    /// Per item (and one past the last): where its reads of the serialized buffer, or the
    /// next item's, start in `buffer_reads`.
    buffer_from: Vec<u32>,
}

impl ProgramTables {
    /// The tables of `p` under `cfg` (its Chunk size and the Reader's window).
    pub(super) fn new(p: &Program, cfg: &OpConfig) -> Self {
        let mates = line_mates(p);
        // Counting sort of the accesses by their line mate.
        let mut mates_from = vec![0u32; mates.len() + 1];
        for &m in mates.iter().flatten() {
            mates_from[m as usize + 1] += 1;
        }
        for a in 0..mates.len() {
            mates_from[a + 1] += mates_from[a];
        }
        let mut filled = mates_from.clone();
        let mut mates_of = vec![0u32; mates_from[mates.len()] as usize];
        for (a, m) in mates.iter().enumerate() {
            if let Some(&m) = m.as_ref() {
                mates_of[filled[m as usize] as usize] = a as u32;
                filled[m as usize] += 1;
            }
        }
        let mut ops_from = vec![0u32];
        let mut op_chunk_ends = Vec::new();
        for it in &p.items {
            let mut end = 0u32;
            op_chunk_ends.extend(it.converts.iter().map(|&(_, bytes)| {
                end = end.saturating_add(op_chunks(bytes, cfg.reader.chunk_bytes));
                end
            }));
            ops_from.push(op_chunk_ends.len() as u32);
        }
        let chunks: Vec<u32> = p
            .items
            .iter()
            .map(|it| {
                it.converts
                    .iter()
                    .map(|&(_, b)| op_chunks(b, cfg.reader.chunk_bytes))
                    .sum::<u32>()
                    .max(1)
            })
            .collect();
        let window = cfg.field_window_lines();
        let streams = p
            .items
            .iter()
            .zip(&chunks)
            .map(|(it, &c)| Stream::of(p, it, c, window))
            .collect();
        let blocked_run_end = blocked_run_ends(p);
        let buffer_reads: Vec<u32> = (0..p.accesses.len() as u32)
            .filter(|&a| p.accesses[a as usize].region == Region::Buffer)
            .collect();
        let buffer_from = p
            .items
            .iter()
            .map(|it| it.first_access)
            .chain([p.accesses.len() as u32])
            .map(|first| buffer_reads.partition_point(|&a| a < first) as u32)
            .collect();
        Self {
            next_on_line: same_line_rings(p),
            buffer_reads,
            buffer_from,
            mates,
            mates_from,
            mates_of,
            ops_from,
            op_chunk_ends,
            chunks,
            streams,
            blocked_run_end,
        }
    }

    /// Chunks of item `i` (one for a message without fields).
    pub(super) fn chunks(&self, i: usize) -> u32 {
        self.chunks.get(i).copied().unwrap_or(1)
    }

    /// How item `i` streams, if it does.
    pub(super) fn stream(&self, i: usize) -> Option<Stream> {
        self.streams.get(i).copied().flatten()
    }

    /// Where the reads of the serialized buffer from item `i` on start in `buffer_reads`.
    pub(super) fn buffer_from(&self, i: usize) -> usize {
        self.buffer_from
            .get(i)
            .or(self.buffer_from.last())
            .map_or(0, |&k| k as usize)
    }

    /// The schema entries whose line mate `a` is: those its request brings in.
    pub(super) fn mates_of(&self, a: usize) -> &[u32] {
        &self.mates_of[self.mates_from[a] as usize..self.mates_from[a + 1] as usize]
    }

    /// The converter op whose input Chunk `k` of item `i` (`it`) carries: each op's input
    /// leaves as its own [`op_chunks`], in the item's order (0 for an item without ops, such
    /// as a sub-message's schema entry). A search, not a walk over the ops, so that an item of
    /// many ops costs no more per Chunk than one of a few.
    pub(super) fn op_of_chunk(&self, i: usize, it: &Item, k: u32) -> u16 {
        let ends = match (self.ops_from.get(i), self.ops_from.get(i + 1)) {
            (Some(&from), Some(&to)) => &self.op_chunk_ends[from as usize..to as usize],
            _ => &[],
        };
        let op = ends.partition_point(|&end| end <= k);
        it.converts
            .get(op)
            .or(it.converts.last())
            .map_or(0, |&(op, _)| op)
    }
}
