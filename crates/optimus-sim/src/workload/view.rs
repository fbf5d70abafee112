//! How an accelerator sees an engine trace: instance schemata, arena layout, whole output runs.
//!
//! The engine reports what the software does: which fields are set, in which order, their
//! kinds, sizes, converter ops and nesting. Three things differ on the accelerator's host,
//! and this module rewrites them, message by message, before a model replays the trace:
//!
//! - **Schema entries.** The engine reads its compiled field descriptor (a static table
//!   shared by all instances). Optimus Prime's setters instead fill a per-instance schema,
//!   one `{type, address}` entry per set field (§3.2, Fig. 4), which the Reader walks. With
//!   [`SchemaView::Instance`] each field's `SchemaRead` becomes entry *k* of its
//!   (sub-)message's instance schema (a decoder looks a repeated field up again at each
//!   element's tag: those reads read the field's one entry again); instance schemata are laid out contiguously in a schema pool of the
//!   core's arena, in creation (pre-)order. [`SchemaView::Engine`] keeps the engine's reads.
//! - **Message memory.** The engine's addresses are its process's heap, which depends on
//!   ASLR and on what was allocated and freed before (two traces of one message in one
//!   process differ). With [`MemoryView::Arena`] each (sub-)message instance gets a record
//!   (an 8-byte presence word, then one naturally aligned slot per set field: the value for
//!   scalars, a pointer for strings, bytes, sub-messages and repeated fields), bump-allocated
//!   in creation order in the core's arena at [`ARENA_BASE`] together with short out-of-line
//!   payloads, as a protobuf arena lays out a message its setters build (§3.2, §5); string
//!   payloads of [`HEAP_STRING_MIN_BYTES`] or more are bump-allocated in a heap region apart
//!   from the arena, as Protobuf v3.7's arenas leave string characters on the global heap.
//!   [`MemoryView::Engine`] keeps the engine's layout, mapping each 4 KB page in first-touch
//!   order onto the arena (deterministic for a trace file, not across processes).
//! - **Tags and length prefixes.** The engine reports the bytes of each value it writes
//!   (encode) or reads (decode); the tag and length bytes before it are written or read in the
//!   same run. Each serialized-buffer access is widened back to the end of the previous one,
//!   so the accesses tile the whole message and sum to its wire size; a message that has
//!   none (every field empty) gets one access of its whole wire size.

use std::collections::HashMap;

use optimus_trace::{class_of, ConvClass, Direction, Event, Region};

use super::{MessageTrace, ACCEL_BASE, ARENA_BASE, ARENA_STRIDE};
use crate::error::{Result, SimError};

/// Bytes of one Optimus Prime schema entry: 8-byte type word + 8-byte address (Fig. 4).
pub const SCHEMA_ENTRY_BYTES: u32 = 16;
/// Offset of the schema pool inside a core's arena, far above the message objects, and two
/// thirds of a 4 KB page past a page boundary (see [`REGION_SKEW`]).
pub const SCHEMA_POOL_OFFSET: u64 = 0x8000_0000 + 2 * REGION_SKEW;
/// How far apart, modulo a 4 KB page, the arena, the heap and the schema pool start (a third
/// of a page, 21 lines). A process's allocations start at unrelated offsets within a page; with
/// all three page-aligned, a message's first record, string and schema lines would always
/// share one set of a 4 KB-way cache such as Optimus Prime's Block Buffer (8 KB, 2-way).
pub const REGION_SKEW: u64 = 21 * 64;
/// Granule of address canonicalization.
const PAGE_BYTES: u64 = 4096;

/// Which schema reads the accelerator performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaView {
    /// One entry of `entry_bytes` per set field, in a per-instance schema (OP Fig. 4).
    Instance {
        /// Bytes per entry.
        entry_bytes: u32,
    },
    /// The engine's own descriptor reads (address canonicalized like message memory).
    Engine,
}

/// Where message fields live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryView {
    /// Records and payloads bump-allocated in creation order (protobuf arena).
    Arena,
    /// The engine's own addresses, page by page in first-touch order.
    Engine,
}

/// Options of [`accelerator_view`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewConfig {
    /// Schema reads. Default: instance schemata of [`SCHEMA_ENTRY_BYTES`].
    pub schema: SchemaView,
    /// Message memory. Default: [`MemoryView::Arena`].
    pub memory: MemoryView,
    /// In the arena layout, string and bytes payloads of at least this many bytes live on the
    /// heap, apart from the arena; shorter ones stay inline. Default
    /// [`HEAP_STRING_MIN_BYTES`]; `u32::MAX` keeps every payload in the arena.
    pub heap_string_min_bytes: u32,
    /// Largest sum of bytes one message's events may read and write (schema entries, fields,
    /// serialized buffer), as the trace claims them and as the accelerator sees them (its
    /// serialized-buffer accesses widened to whole runs), each event counting at least
    /// [`EVENT_BYTES`] and the message at least [`MESSAGE_BYTES`]; also the largest sum of
    /// bytes its converter ops may take in, and the largest wire size. A message over it is
    /// an error. Default [`MAX_TRACED_BYTES`].
    pub max_traced_bytes: u64,
    /// Largest sum of the same over a whole trace; a trace over it is an error. Default
    /// [`MAX_WORKLOAD_BYTES`].
    pub max_workload_bytes: u64,
}

impl ViewConfig {
    /// The default view with limits for a trace that may read and write `workload_bytes`
    /// in all ([`Self::max_workload_bytes`]), one message a quarter of it
    /// ([`Self::max_traced_bytes`]), as [`MAX_TRACED_BYTES`] is of [`MAX_WORKLOAD_BYTES`].
    /// The models keep about half of what the limits allow.
    pub fn with_workload_limit(workload_bytes: u64) -> Self {
        Self {
            max_workload_bytes: workload_bytes,
            max_traced_bytes: workload_bytes / (MAX_WORKLOAD_BYTES / MAX_TRACED_BYTES),
            ..Self::default()
        }
    }

    /// The most events a trace the view accepts can hold, each counting at least
    /// [`EVENT_BYTES`] against [`Self::max_workload_bytes`]: a bound for the decoder of a
    /// trace file (`optimus_trace::decode_limited`), so that it stops before keeping events
    /// the view would refuse.
    pub fn max_events(&self) -> usize {
        usize::try_from(self.max_workload_bytes / EVENT_BYTES).unwrap_or(usize::MAX)
    }
}

/// Default [`ViewConfig::max_traced_bytes`]: 256 MiB. A model keeps a 32-byte access per
/// 64-byte line it replays, so the bound keeps what a trace file of a few bytes can ask for
/// (one event may claim 4 GiB) to ~128 MB a message, and one message below the 1 GiB between
/// the arena and the heap.
pub const MAX_TRACED_BYTES: u64 = 256 << 20;

/// Default [`ViewConfig::max_workload_bytes`]: 1 GiB, so that a trace file's messages, each
/// under [`MAX_TRACED_BYTES`], keep a model's accesses to ~512 MB all told.
pub const MAX_WORKLOAD_BYTES: u64 = 1 << 30;

/// Least bytes an event counts for against the limits, however few it reads or writes (a
/// converter op, `Enter` and `Leave` read and write none). The decoded event, its view and a
/// model's state for it take up to ~120 bytes, about half of this, as a model keeps about
/// half the bytes an access claims; so a trace of many small events, at the limits, takes
/// about the memory of one of a few large accesses (~500 MB). Without it, a trace file of
/// two to four bytes an event could ask for 30 to 60 times its size in memory.
pub const EVENT_BYTES: u64 = 256;

/// Least bytes a message counts for against the limits, however few its events claim: the
/// view and the models keep 500 bytes to 1.5 KB for a message of no or a few fields, about
/// a third of this, so a trace of many small messages at the limits also stays near ~500 MB.
pub const MESSAGE_BYTES: u64 = 4096;

/// Largest end of a serialized-buffer access the view accepts: 2^48 bytes (256 TiB) into the
/// buffer, far past any message or stream of messages, so that the models' line arithmetic
/// on buffer offsets stays clear of the end of the 64-bit address space.
pub const MAX_BUFFER_OFFSET: u64 = 1 << 48;

/// Smallest string payload kept outside the arena. Optimus Prime's microbenchmark uses
/// Google Protobuf v3.7 (§5), whose arenas hold the `std::string` object of a string field
/// but not its characters: those come from the global heap (arenas gained string storage in
/// v3.16), unless they fit libstdc++'s 15-byte small-string buffer inside the object.
pub const HEAP_STRING_MIN_BYTES: u32 = 16;

/// Offset of the heap (string payloads) from a core's arena base: a third of a page past a
/// page boundary (see [`REGION_SKEW`]).
pub const HEAP_OFFSET: u64 = 0x4000_0000 + REGION_SKEW;

impl Default for ViewConfig {
    fn default() -> Self {
        Self {
            schema: SchemaView::Instance {
                entry_bytes: SCHEMA_ENTRY_BYTES,
            },
            memory: MemoryView::Arena,
            heap_string_min_bytes: HEAP_STRING_MIN_BYTES,
            max_traced_bytes: MAX_TRACED_BYTES,
            max_workload_bytes: MAX_WORKLOAD_BYTES,
        }
    }
}

/// Allocation alignment of the arena.
const ARENA_ALIGN: u64 = 8;

/// A bump allocator.
struct Bump(u64);

impl Bump {
    fn take(&mut self, bytes: u64) -> u64 {
        let at = self.0;
        self.0 = (at + bytes.max(1)).next_multiple_of(ARENA_ALIGN);
        at
    }

    /// Starts again at `base` once past half of the `span` bytes its region has, as a server
    /// reuses a request's arena: one message, at most [`MAX_TRACED_BYTES`] and its records,
    /// then stays inside the region.
    fn reuse_past_half(&mut self, base: u64, span: u64) {
        if self.0 - base > span / 2 {
            self.0 = base;
        }
    }
}

/// Maps pages of one address space, in first-touch order, onto consecutive canonical pages.
struct PageMap {
    base: u64,
    pages: HashMap<u64, u64>,
}

impl PageMap {
    fn new(base: u64) -> Self {
        Self {
            base,
            pages: HashMap::new(),
        }
    }

    /// Maps pages from the base again once they cover half of `span` bytes (see
    /// [`Bump::reuse_past_half`]).
    fn reuse_past_half(&mut self, span: u64) {
        if self.pages.len() as u64 * PAGE_BYTES > span / 2 {
            self.pages.clear();
        }
    }

    fn page(&mut self, page: u64) -> u64 {
        let next = self.pages.len() as u64;
        *self.pages.entry(page).or_insert(next)
    }

    /// Canonical address of the extent `[addr, addr + bytes)`; its pages are mapped in order,
    /// so an extent whose pages are all new stays contiguous.
    fn map(&mut self, addr: u64, bytes: u32) -> u64 {
        let first = addr / PAGE_BYTES;
        let last = addr.saturating_add(u64::from(bytes.max(1)) - 1) / PAGE_BYTES;
        let p = self.page(first);
        for page in first + 1..=last {
            self.page(page);
        }
        self.base + p * PAGE_BYTES + addr % PAGE_BYTES
    }
}

/// Splits an engine event stream into messages and rewrites each as the accelerator sees it
/// (see the module doc). Arena, heap, schema pool and page maps continue from one message of
/// the stream to the next, and start again once half of their region is spent.
///
/// # Errors
/// [`SimError::Trace`] for an ill-formed stream, [`SimError::Workload`] when it holds no
/// message or a serialized-buffer access ends past [`MAX_BUFFER_OFFSET`], and
/// [`SimError::OverLimit`] when a message reads and writes more than
/// [`ViewConfig::max_traced_bytes`] (as its events claim, or once its serialized-buffer
/// accesses are widened: an offset far past the previous one claims every byte between them;
/// each event counts at least [`EVENT_BYTES`], the message at least [`MESSAGE_BYTES`]),
/// converts more or has a larger wire size, or when the messages together read and write
/// more than [`ViewConfig::max_workload_bytes`].
pub fn accelerator_view(
    name: &str,
    events: &[Event],
    cfg: &ViewConfig,
) -> Result<Vec<MessageTrace>> {
    optimus_trace::check_structure(events)?;
    let mut st = State {
        cfg: *cfg,
        pages: PageMap::new(ARENA_BASE),
        accel_pages: PageMap::new(ACCEL_BASE),
        schema_pages: PageMap::new(ARENA_BASE + SCHEMA_POOL_OFFSET),
        schema_pool: Bump(ARENA_BASE + SCHEMA_POOL_OFFSET),
        arena: Bump(ARENA_BASE),
        accel: Bump(ACCEL_BASE),
        heap: Bump(ARENA_BASE + HEAP_OFFSET),
    };
    let mut out = Vec::new();
    let mut start = 0;
    let mut workload_bytes = 0u64;
    // How a count of reads and writes is made, where the floors may be most of it.
    let counted =
        format!("; each event counts at least {EVENT_BYTES} bytes, each message {MESSAGE_BYTES}");
    for (i, e) in events.iter().enumerate() {
        match e {
            Event::MessageBegin { .. } => start = i,
            Event::MessageEnd { .. } => {
                let message = &events[start..=i];
                let check = |what: &str, bytes: u64, limit: u64, knob: &str, note: &str| {
                    if bytes <= limit {
                        return Ok(());
                    }
                    Err(SimError::OverLimit {
                        name: name.to_string(),
                        why: format!(
                            "message {} (events {start}..={i}) {what} {bytes} bytes, over the \
                             limit of {limit} (ViewConfig::{knob}{note})",
                            out.len()
                        ),
                    })
                };
                let per_message = |what: &str, bytes: u64, note: &str| {
                    check(what, bytes, cfg.max_traced_bytes, "max_traced_bytes", note)
                };
                if let Some((k, addr, bytes)) = buffer_access_past_bound(message) {
                    return Err(SimError::Workload {
                        name: name.to_string(),
                        why: format!(
                            "message {} (event {}): a serialized-buffer access at offset \
                             {addr} of {bytes} bytes ends past {MAX_BUFFER_OFFSET} (2^48)",
                            out.len(),
                            start + k
                        ),
                    });
                }
                // Checked before the view too: mapping an extent walks its pages.
                per_message("reads and writes", traced_bytes(message), &counted)?;
                per_message("converts", converted_bytes(message), "")?;
                st.reuse_regions();
                let viewed = st.view_one(message);
                per_message("has a wire size of", viewed.wire_bytes, "")?;
                let traced = traced_bytes(&viewed.events);
                per_message("reads and writes", traced, &counted)?;
                workload_bytes = workload_bytes.saturating_add(traced);
                check(
                    "brings the trace's reads and writes to",
                    workload_bytes,
                    cfg.max_workload_bytes,
                    "max_workload_bytes",
                    &counted,
                )?;
                out.push(viewed);
            }
            _ => {}
        }
    }
    if out.is_empty() {
        return Err(SimError::Workload {
            name: name.to_string(),
            why: "the trace holds no message".into(),
        });
    }
    Ok(out)
}

/// Bytes a message's events read and write, each event counting at least [`EVENT_BYTES`] and
/// the message at least [`MESSAGE_BYTES`].
fn traced_bytes(events: &[Event]) -> u64 {
    events
        .iter()
        .map(|e| match *e {
            Event::SchemaRead { size, .. } => u64::from(size),
            Event::FieldRead { bytes, .. } | Event::FieldWrite { bytes, .. } => u64::from(bytes),
            _ => 0,
        })
        .fold(0u64, |sum, bytes| {
            sum.saturating_add(bytes.max(EVENT_BYTES))
        })
        .max(MESSAGE_BYTES)
}

/// The first serialized-buffer access of `events` that ends past [`MAX_BUFFER_OFFSET`]: its
/// index, offset and length.
fn buffer_access_past_bound(events: &[Event]) -> Option<(usize, u64, u32)> {
    events.iter().enumerate().find_map(|(k, e)| match *e {
        Event::FieldRead {
            region: Region::Buffer,
            addr,
            bytes,
        }
        | Event::FieldWrite {
            region: Region::Buffer,
            addr,
            bytes,
        } if addr.saturating_add(u64::from(bytes)) > MAX_BUFFER_OFFSET => Some((k, addr, bytes)),
        _ => None,
    })
}

/// Bytes a message's converter ops take in.
fn converted_bytes(events: &[Event]) -> u64 {
    events
        .iter()
        .map(|e| match *e {
            Event::Convert { bytes, .. } => u64::from(bytes),
            _ => 0,
        })
        .sum()
}

struct State {
    cfg: ViewConfig,
    pages: PageMap,
    accel_pages: PageMap,
    schema_pages: PageMap,
    schema_pool: Bump,
    arena: Bump,
    accel: Bump,
    heap: Bump,
}

/// Pass-1 facts of one set field.
#[derive(Clone, Copy)]
struct FieldFacts {
    class: ConvClass,
    /// Message/accelerator-memory accesses of its data.
    accesses: u32,
    /// Bytes of those accesses.
    bytes: u64,
    /// Bytes of the first access.
    first: u32,
}

impl FieldFacts {
    /// Whether the data lives outside the record (the slot holds a pointer).
    fn is_out_of_line(&self) -> bool {
        matches!(
            self.class,
            ConvClass::Bytes | ConvClass::Message | ConvClass::Other
        ) || self.accesses > 1
    }

    fn slot_bytes(&self) -> u64 {
        if self.is_out_of_line() || self.accesses == 0 {
            8
        } else {
            u64::from(self.first.clamp(1, 8)).next_power_of_two()
        }
    }
}

/// Pass-2 state of one instance.
struct Laid {
    schema: u64,
    slots: Vec<u64>,
}

impl State {
    /// Keeps each region of the core's address space apart: arena `[0, HEAP_OFFSET)`, heap
    /// `[HEAP_OFFSET, SCHEMA_POOL_OFFSET)` and schema pool `[SCHEMA_POOL_OFFSET, ARENA_STRIDE)`
    /// from the arena base, the next core's arena beyond; accelerator memory has its own space.
    fn reuse_regions(&mut self) {
        let heap_base = ARENA_BASE + HEAP_OFFSET;
        let pool_base = ARENA_BASE + SCHEMA_POOL_OFFSET;
        self.arena.reuse_past_half(ARENA_BASE, HEAP_OFFSET);
        self.heap
            .reuse_past_half(heap_base, SCHEMA_POOL_OFFSET - HEAP_OFFSET);
        self.schema_pool
            .reuse_past_half(pool_base, ARENA_STRIDE - SCHEMA_POOL_OFFSET);
        self.pages.reuse_past_half(HEAP_OFFSET);
        self.schema_pages
            .reuse_past_half(ARENA_STRIDE - SCHEMA_POOL_OFFSET);
    }

    fn view_one(&mut self, events: &[Event]) -> MessageTrace {
        let mut direction = Direction::Encode;
        let mut wire_bytes = 0;
        // Pass 1: per (sub-)message instance in pre-order, its set fields.
        let mut insts: Vec<Vec<FieldFacts>> = Vec::new();
        // Per instance, the engine's address of its last schema read; per schema read, the
        // (instance, entry) it reads. A decoder looks a field up at each of its tags, so the
        // elements of a repeated field read its entry again: one entry and one record slot.
        let mut last_read: Vec<Option<u64>> = Vec::new();
        let mut entries: Vec<(usize, usize)> = Vec::new();
        let mut stack: Vec<usize> = Vec::new();
        // The field whose data the accesses belong to.
        let mut current: Option<(usize, usize)> = None;
        for e in events {
            match *e {
                Event::MessageBegin { .. } | Event::Enter { .. } => {
                    direction = d_of(e).unwrap_or(direction);
                    insts.push(Vec::new());
                    last_read.push(None);
                    stack.push(insts.len() - 1);
                    current = None;
                }
                Event::MessageEnd { wire_bytes: w } => wire_bytes = w,
                Event::Leave => {
                    stack.pop();
                    current = None;
                }
                Event::SchemaRead { kind, addr, .. } => {
                    if let Some(&k) = stack.last() {
                        if last_read[k] != Some(addr) {
                            insts[k].push(FieldFacts {
                                class: class_of(kind),
                                accesses: 0,
                                bytes: 0,
                                first: 0,
                            });
                            last_read[k] = Some(addr);
                        }
                        current = Some((k, insts[k].len() - 1));
                    }
                    entries.push(current.unwrap_or((0, 0)));
                }
                Event::FieldRead { region, bytes, .. }
                | Event::FieldWrite { region, bytes, .. }
                    if region != Region::Buffer =>
                {
                    if let Some(f) = current.map(|(k, i)| &mut insts[k][i]) {
                        if f.accesses == 0 {
                            f.first = bytes;
                        }
                        f.accesses += 1;
                        f.bytes += u64::from(bytes);
                    }
                }
                _ => {}
            }
        }
        // Instance schemata, contiguous per instance, in pre-order.
        let entry_bytes = match self.cfg.schema {
            SchemaView::Instance { entry_bytes } => u64::from(entry_bytes),
            SchemaView::Engine => 0,
        };
        let mut laid: Vec<Laid> = insts
            .iter()
            .map(|f| Laid {
                schema: self.schema_pool.take(f.len() as u64 * entry_bytes),
                slots: Vec::new(),
            })
            .collect();
        // Pass 2: rewrite.
        let mut opened = 0usize;
        let mut schema_reads = 0usize;
        // The field whose data is being accessed: (instance, index), and its payload cursor.
        let mut field: Option<(usize, usize)> = None;
        let mut payload: Option<(Region, u64)> = None;
        let mut buffer_end = 0u64;
        let mut last_buffer: Option<usize> = None;
        let mut ev = Vec::with_capacity(events.len());
        let mut after: Option<Event> = None;
        for e in events {
            // Decoding into the arena also links each out-of-line field into its record: the
            // slot receives the pointer once the payload or sub-message is in place.
            let link = |field: Option<(usize, usize)>, laid: &[Laid]| {
                field
                    .filter(|&(k, i)| insts[k][i].is_out_of_line())
                    .map(|(k, i)| Event::FieldWrite {
                        region: Region::Message,
                        addr: laid[k].slots[i],
                        bytes: 8,
                    })
            };
            let arena_decode =
                self.cfg.memory == MemoryView::Arena && direction == Direction::Decode;
            if arena_decode && matches!(e, Event::Enter { .. }) {
                ev.extend(link(field, &laid));
            }
            let e = match *e {
                Event::MessageBegin { .. } | Event::Enter { .. } => {
                    let k = opened;
                    opened += 1;
                    // The record: presence word, then naturally aligned slots.
                    let mut off = 8u64;
                    let mut slots = Vec::with_capacity(insts[k].len());
                    for f in &insts[k] {
                        let size = f.slot_bytes();
                        off = off.next_multiple_of(size);
                        slots.push(off);
                        off += size;
                    }
                    let record = if self.cfg.memory == MemoryView::Arena {
                        self.arena.take(off.next_multiple_of(8))
                    } else {
                        0
                    };
                    laid[k].slots = slots.iter().map(|s| record + s).collect();
                    field = None;
                    *e
                }
                Event::Leave => {
                    field = None;
                    *e
                }
                Event::SchemaRead {
                    kind,
                    repetition,
                    addr,
                    size,
                } => {
                    let (k, idx) = entries[schema_reads];
                    schema_reads += 1;
                    // Another element of the same field goes on with the field's payload.
                    if field != Some((k, idx)) {
                        payload = None;
                    }
                    field = Some((k, idx));
                    match self.cfg.schema {
                        SchemaView::Instance { entry_bytes } => Event::SchemaRead {
                            kind,
                            repetition,
                            addr: laid[k].schema + idx as u64 * u64::from(entry_bytes),
                            size: entry_bytes,
                        },
                        SchemaView::Engine => Event::SchemaRead {
                            kind,
                            repetition,
                            addr: self.schema_pages.map(addr, size),
                            size,
                        },
                    }
                }
                Event::FieldRead {
                    region: Region::Buffer,
                    addr,
                    bytes,
                }
                | Event::FieldWrite {
                    region: Region::Buffer,
                    addr,
                    bytes,
                } => {
                    let (a, b) = widen(addr, bytes, &mut buffer_end);
                    last_buffer = Some(ev.len());
                    with_extent(*e, Region::Buffer, a, b)
                }
                Event::FieldRead {
                    region,
                    addr,
                    bytes,
                }
                | Event::FieldWrite {
                    region,
                    addr,
                    bytes,
                } => {
                    let at = match self.cfg.memory {
                        MemoryView::Engine if region == Region::Accel => {
                            self.accel_pages.map(addr, bytes)
                        }
                        MemoryView::Engine => self.pages.map(addr, bytes),
                        MemoryView::Arena => {
                            self.arena_addr(&insts, &laid, field, &mut payload, region, bytes)
                        }
                    };
                    let first_payload = payload.is_some_and(|(_, c)| c == at + u64::from(bytes))
                        && matches!(e, Event::FieldWrite { .. });
                    if arena_decode
                        && first_payload
                        && field.is_some_and(|(k, i)| insts[k][i].class == ConvClass::Bytes)
                    {
                        after = link(field, &laid);
                    }
                    with_extent(*e, region, at, bytes)
                }
                Event::MessageEnd { wire_bytes } => {
                    let extra =
                        u32::try_from(wire_bytes.saturating_sub(buffer_end)).unwrap_or(u32::MAX);
                    match (last_buffer, extra) {
                        (_, 0) => {}
                        // Trailing bytes (e.g. the tag and length of a final empty
                        // sub-message) join the last access.
                        (Some(k), _) => {
                            if let Event::FieldRead { bytes, .. }
                            | Event::FieldWrite { bytes, .. } = &mut ev[k]
                            {
                                *bytes = bytes.saturating_add(extra);
                            }
                        }
                        // No access at all (only empty sub-messages, say): the whole wire
                        // form, read before the fields are written, or written after they
                        // are read.
                        (None, bytes) => {
                            let region = Region::Buffer;
                            match direction {
                                Direction::Decode => ev.insert(
                                    1,
                                    Event::FieldRead {
                                        region,
                                        addr: 0,
                                        bytes,
                                    },
                                ),
                                Direction::Encode => ev.push(Event::FieldWrite {
                                    region,
                                    addr: 0,
                                    bytes,
                                }),
                            }
                        }
                    }
                    *e
                }
                Event::Convert { .. } => *e,
            };
            ev.push(e);
            ev.extend(after.take());
        }
        MessageTrace {
            events: ev,
            wire_bytes,
            direction,
        }
    }

    /// Arena address of a data access of `field`: its record slot, or the next bytes of its
    /// out-of-line payload (allocated whole at the first access).
    fn arena_addr(
        &mut self,
        insts: &[Vec<FieldFacts>],
        laid: &[Laid],
        field: Option<(usize, usize)>,
        payload: &mut Option<(Region, u64)>,
        region: Region,
        bytes: u32,
    ) -> u64 {
        let Some((k, idx)) = field else {
            // Data with no schema entry before it (unknown fields): a payload of its own.
            return self.bump(region).take(u64::from(bytes));
        };
        let facts = insts[k][idx];
        if !facts.is_out_of_line() && region == Region::Message {
            return laid[k].slots[idx];
        }
        let cursor = match payload {
            Some((r, c)) if *r == region => c,
            _ => {
                let total = if region == Region::Message {
                    facts.bytes
                } else {
                    u64::from(bytes)
                };
                let on_heap = region == Region::Message
                    && facts.class == ConvClass::Bytes
                    && total >= u64::from(self.cfg.heap_string_min_bytes);
                let at = if on_heap {
                    self.heap.take(total)
                } else {
                    self.bump(region).take(total)
                };
                &mut payload.insert((region, at)).1
            }
        };
        let at = *cursor;
        *cursor += u64::from(bytes);
        at
    }

    fn bump(&mut self, region: Region) -> &mut Bump {
        if region == Region::Accel {
            &mut self.accel
        } else {
            &mut self.arena
        }
    }
}

fn d_of(e: &Event) -> Option<Direction> {
    match e {
        Event::MessageBegin { direction, .. } => Some(*direction),
        _ => None,
    }
}

/// `e` (a field read or write) with region, address and size replaced.
fn with_extent(e: Event, region: Region, addr: u64, bytes: u32) -> Event {
    match e {
        Event::FieldWrite { .. } => Event::FieldWrite {
            region,
            addr,
            bytes,
        },
        _ => Event::FieldRead {
            region,
            addr,
            bytes,
        },
    }
}

/// Widens a serialized-buffer access `[addr, addr + bytes)` back to `*end` (the end of the
/// previous one), however far before it that is, so the tag and length bytes before a value
/// are part of its access; an access before `*end` keeps its start. A run too long for a
/// `u32` saturates at `u32::MAX`, over any [`ViewConfig::max_traced_bytes`] below 4 GiB, so
/// [`accelerator_view`] refuses it.
fn widen(addr: u64, bytes: u32, end: &mut u64) -> (u64, u32) {
    let start = if addr >= *end { *end } else { addr };
    let run = (addr - start).saturating_add(u64::from(bytes));
    *end = (*end).max(addr.saturating_add(u64::from(bytes)));
    (start, u32::try_from(run).unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use optimus_trace::{Format, Repetition};

    fn begin(d: Direction) -> Event {
        Event::MessageBegin {
            direction: d,
            format: Format::Protobuf,
            type_id: 0,
        }
    }

    #[test]
    fn a_message_over_the_traced_limit_is_an_error() {
        // One read and one write of 4 GiB each: a few bytes of trace file.
        let evs = vec![
            begin(Direction::Encode),
            Event::SchemaRead {
                kind: 9,
                repetition: Repetition::Single,
                addr: u64::MAX - 8,
                size: 16,
            },
            Event::FieldRead {
                region: Region::Message,
                addr: u64::MAX - 100,
                bytes: u32::MAX,
            },
            Event::FieldWrite {
                region: Region::Buffer,
                addr: 0,
                bytes: u32::MAX,
            },
            Event::MessageEnd {
                wire_bytes: u64::from(u32::MAX),
            },
        ];
        let err = accelerator_view("big", &evs, &ViewConfig::default()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("message 0 (events 0..=4)") && msg.contains("max_traced_bytes"));
        // Under a limit that admits it, addresses at the top of the space still map.
        let cfg = ViewConfig {
            max_traced_bytes: u64::MAX,
            max_workload_bytes: u64::MAX,
            memory: MemoryView::Engine,
            ..ViewConfig::default()
        };
        let view = accelerator_view("big", &evs, &cfg).unwrap();
        assert_eq!(view[0].wire_bytes, u64::from(u32::MAX));
    }

    /// An encoded message of one 8-byte field written at serialized-buffer offset `offset`,
    /// with wire size `wire_bytes`: begin, schema entry, read, convert, write, end.
    fn one_write_at(offset: u64, wire_bytes: u64) -> Vec<Event> {
        let mut evs = crate::program::one_large_field(8).events;
        for e in &mut evs {
            match e {
                Event::FieldWrite { addr, .. } => *addr = offset,
                Event::MessageEnd { wire_bytes: w } => *w = wire_bytes,
                _ => {}
            }
        }
        evs
    }

    #[test]
    fn a_message_the_view_widens_over_the_limit_is_an_error() {
        let cfg = ViewConfig::default();
        // A write 1 GiB into the buffer claims 8 bytes, but the accelerator writes the run
        // from the buffer's start to it: 1 GiB + 8, with the five other events (schema entry,
        // read, converter op, begin and end) counting 256 each.
        let err = accelerator_view("far", &one_write_at(1 << 30, 8), &cfg).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains(&format!(
                "message 0 (events 0..=5) reads and writes {} bytes",
                (1 << 30) + 8 + 5 * EVENT_BYTES
            )) && msg.contains("max_traced_bytes; each event counts at least 256 bytes"),
            "{msg}"
        );
        // So is a wire size over the limit, with or without a buffer access to extend.
        for wire_bytes in [1 << 30, u64::MAX] {
            let err = accelerator_view("far", &one_write_at(0, wire_bytes), &cfg).unwrap_err();
            assert!(err.to_string().contains("max_traced_bytes"), "{err}");
        }
        let mut no_write = one_write_at(0, u64::MAX);
        no_write.remove(4);
        let err = accelerator_view("far", &no_write, &cfg).unwrap_err();
        assert!(
            err.to_string()
                .contains("has a wire size of 18446744073709551615 bytes"),
            "{err}"
        );
        // Converter ops that together take in more than the limit; at the limit, they pass.
        let mut converts = one_write_at(0, 8);
        converts.splice(
            3..4,
            (0..65).map(|_| Event::Convert {
                op: 1,
                bytes: 4 << 20,
            }),
        );
        let err = accelerator_view("far", &converts, &cfg).unwrap_err();
        assert!(
            err.to_string().contains("converts 272629760 bytes"),
            "{err}"
        );
        converts.truncate(3 + 64);
        converts.extend_from_slice(&one_write_at(0, 8)[4..]);
        assert!(accelerator_view("near", &converts, &cfg).is_ok());
        // A run just under the limit is laid out whole.
        let view =
            accelerator_view("near", &one_write_at((128 << 20) - 8, 128 << 20), &cfg).unwrap();
        assert_eq!(
            view[0].events[4],
            Event::FieldWrite {
                region: Region::Buffer,
                addr: 0,
                bytes: 128 << 20
            }
        );
    }

    #[test]
    fn a_far_buffer_gap_is_refused_however_far() {
        // The run from the buffer's start to a write 1 GiB, 3 GiB or 1 TiB in claims every
        // byte of the gap (past 4 GiB, the most one access holds), over the limit.
        let cfg = ViewConfig::default();
        for offset in [1 << 30, 3 << 30, 1 << 40, MAX_BUFFER_OFFSET - 8] {
            let err = accelerator_view("far", &one_write_at(offset, 8), &cfg).unwrap_err();
            assert!(
                err.to_string().contains("over the limit of 268435456"),
                "{offset}: {err}"
            );
        }
        // A gap just under the limit is one whole run.
        let near = accelerator_view("near", &one_write_at(200 << 20, 8), &cfg).unwrap();
        assert!(near[0].events.contains(&Event::FieldWrite {
            region: Region::Buffer,
            addr: 0,
            bytes: (200 << 20) + 8
        }));
        // An access before the end of the previous one keeps its start.
        let mut end = 100;
        assert_eq!(widen(40, 8, &mut end), (40, 8));
        assert_eq!(end, 100);
        assert_eq!(widen(u64::MAX - 8, 8, &mut end), (100, u32::MAX));
    }

    #[test]
    fn a_message_without_a_buffer_access_reads_or_writes_its_wire_size() {
        // Only empty sub-messages: 20 tags and lengths on the wire, no value of their own.
        for direction in [Direction::Encode, Direction::Decode] {
            let mut evs = vec![begin(direction)];
            for _ in 0..20 {
                evs.push(Event::SchemaRead {
                    kind: 11,
                    repetition: Repetition::Single,
                    addr: 0x1000,
                    size: 16,
                });
                evs.extend([Event::Enter { type_id: 1 }, Event::Leave]);
            }
            evs.push(Event::MessageEnd { wire_bytes: 40 });
            let t = accelerator_view("esub", &evs, &ViewConfig::default())
                .unwrap()
                .remove(0);
            let buffer: Vec<(usize, Event)> = t
                .events
                .iter()
                .copied()
                .enumerate()
                .filter(|(_, e)| {
                    matches!(
                        e,
                        Event::FieldRead {
                            region: Region::Buffer,
                            ..
                        } | Event::FieldWrite {
                            region: Region::Buffer,
                            ..
                        }
                    )
                })
                .collect();
            // Decoding reads the bytes first; encoding writes them last.
            let (at, whole) = match direction {
                Direction::Decode => (
                    1,
                    Event::FieldRead {
                        region: Region::Buffer,
                        addr: 0,
                        bytes: 40,
                    },
                ),
                Direction::Encode => (
                    t.events.len() - 2,
                    Event::FieldWrite {
                        region: Region::Buffer,
                        addr: 0,
                        bytes: 40,
                    },
                ),
            };
            assert_eq!(buffer, vec![(at, whole)], "{direction:?}");
        }
        // A message with no wire bytes gets no access.
        let empty = [
            begin(Direction::Encode),
            Event::MessageEnd { wire_bytes: 0 },
        ];
        let t = accelerator_view("empty", &empty, &ViewConfig::default()).unwrap();
        assert_eq!(t[0].events, empty);
    }

    #[test]
    fn every_event_and_message_counts_at_least_its_floor() {
        let cfg = ViewConfig {
            max_traced_bytes: 1 << 20,
            max_workload_bytes: 1 << 22,
            ..ViewConfig::default()
        };
        assert_eq!(cfg.max_events(), (1 << 22) / 256);
        // 2,047 Enter/Leave pairs read and write nothing, but count 256 bytes an event: with
        // begin and end, 4,096 events are 1 MiB, the limit; one pair more is over it.
        let nested = |pairs: usize| {
            let mut evs = vec![begin(Direction::Encode)];
            evs.extend((0..pairs).map(|_| Event::Enter { type_id: 1 }));
            evs.extend((0..pairs).map(|_| Event::Leave));
            evs.push(Event::MessageEnd { wire_bytes: 0 });
            evs
        };
        assert!(accelerator_view("deep", &nested(2047), &cfg).is_ok());
        let err = accelerator_view("deep", &nested(2048), &cfg).unwrap_err();
        assert!(
            err.to_string().contains(
                "message 0 (events 0..=4097) reads and writes 1049088 bytes, over the limit of \
                 1048576 (ViewConfig::max_traced_bytes; each event counts at least 256 bytes, \
                 each message 4096)"
            ),
            "{err}"
        );
        // Empty messages count 4 KiB each: 1,024 make the trace's 4 MiB, one more is over.
        let empty = [
            begin(Direction::Decode),
            Event::MessageEnd { wire_bytes: 0 },
        ];
        let many = |n: usize| -> Vec<Event> { empty.iter().copied().cycle().take(2 * n).collect() };
        assert_eq!(
            accelerator_view("many", &many(1024), &cfg).unwrap().len(),
            1024
        );
        let err = accelerator_view("many", &many(1025), &cfg).unwrap_err();
        assert!(
            err.to_string().contains(
                "message 1024 (events 2048..=2049) brings the trace's reads and writes to \
                 4198400 bytes"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_buffer_access_past_the_offset_bound_is_an_error() {
        // Under the default limits, the run back to the buffer's start is refused first.
        let cfg = ViewConfig {
            max_traced_bytes: u64::MAX,
            max_workload_bytes: u64::MAX,
            ..ViewConfig::default()
        };
        let at_bound = accelerator_view("edge", &one_write_at(MAX_BUFFER_OFFSET - 8, 8), &cfg);
        assert!(at_bound.is_ok());
        for offset in [MAX_BUFFER_OFFSET - 4, u64::MAX - 3] {
            let err = accelerator_view("past", &one_write_at(offset, 8), &cfg).unwrap_err();
            assert!(
                err.to_string().contains(&format!(
                    "message 0 (event 4): a serialized-buffer access at offset {offset} of 8 \
                     bytes ends past"
                )),
                "{err}"
            );
        }
    }

    #[test]
    fn a_trace_over_the_workload_limit_is_an_error() {
        // Messages of 128 MiB each: the limit of 1 GiB admits seven (with their other bytes),
        // and the eighth is refused by index.
        let one = one_write_at((128 << 20) - 8, 128 << 20);
        let evs: Vec<Event> = (0..8).flat_map(|_| one.iter().copied()).collect();
        let err = accelerator_view("many", &evs, &ViewConfig::default()).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("message 7 (events 42..=47) brings the trace's reads and writes to")
                && msg.contains("max_workload_bytes"),
            "{msg}"
        );
        assert_eq!(
            accelerator_view("many", &evs[..42], &ViewConfig::default())
                .unwrap()
                .len(),
            7
        );
    }

    #[test]
    fn regions_start_again_before_they_reach_the_next() {
        // Ten messages of one 120 MiB string: 1.2 GiB of payloads, more than the 1 GiB of
        // heap (or, with every payload in the arena, of arena). Every read stays inside one
        // region of the core's address space.
        let one = crate::program::one_large_field(120 << 20).events;
        let evs: Vec<Event> = (0..10).flat_map(|_| one.iter().copied()).collect();
        let regions = [0, HEAP_OFFSET, SCHEMA_POOL_OFFSET, ARENA_STRIDE];
        for heap_string_min_bytes in [HEAP_STRING_MIN_BYTES, u32::MAX] {
            let cfg = ViewConfig {
                heap_string_min_bytes,
                max_workload_bytes: u64::MAX,
                ..ViewConfig::default()
            };
            for t in accelerator_view("big", &evs, &cfg).unwrap() {
                for e in &t.events {
                    if let Event::FieldRead { addr, bytes, .. } = *e {
                        let (lo, hi) = (addr - ARENA_BASE, addr - ARENA_BASE + u64::from(bytes));
                        assert!(
                            regions.windows(2).any(|r| r[0] <= lo && hi <= r[1]),
                            "{lo:#x}..{hi:#x} crosses a region boundary"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn instance_schemata_are_contiguous_per_instance() {
        let evs = vec![
            begin(Direction::Encode),
            Event::SchemaRead {
                kind: 5,
                repetition: Repetition::Single,
                addr: 0xdead_0000,
                size: 128,
            },
            Event::FieldRead {
                region: Region::Message,
                addr: 0x7000_1010,
                bytes: 4,
            },
            Event::FieldWrite {
                region: Region::Buffer,
                addr: 1,
                bytes: 1,
            },
            Event::SchemaRead {
                kind: 11,
                repetition: Repetition::Single,
                addr: 0xdead_0080,
                size: 128,
            },
            Event::Enter { type_id: 1 },
            Event::SchemaRead {
                kind: 9,
                repetition: Repetition::Single,
                addr: 0xbeef_0000,
                size: 128,
            },
            Event::FieldRead {
                region: Region::Message,
                addr: 0x9000_0ff0,
                bytes: 32,
            },
            Event::FieldWrite {
                region: Region::Buffer,
                addr: 6,
                bytes: 33,
            },
            Event::Leave,
            Event::MessageEnd { wire_bytes: 40 },
        ];
        let t = accelerator_view("t", &evs, &ViewConfig::default())
            .unwrap()
            .remove(0);
        let schema: Vec<(u64, u32)> = t
            .events
            .iter()
            .filter_map(|e| match e {
                Event::SchemaRead { addr, size, .. } => Some((*addr, *size)),
                _ => None,
            })
            .collect();
        let pool = ARENA_BASE + SCHEMA_POOL_OFFSET;
        assert_eq!(schema, vec![(pool, 16), (pool + 16, 16), (pool + 32, 16)]);
        let reads = |t: &MessageTrace| -> Vec<u64> {
            t.events
                .iter()
                .filter_map(|e| match e {
                    Event::FieldRead { addr, .. } => Some(*addr),
                    _ => None,
                })
                .collect()
        };
        // Arena: parent record (presence word, int32 slot at 8, pointer at 16), then the
        // sub-message's record (16 B); the 32-byte string's characters are on the heap.
        assert_eq!(reads(&t), vec![ARENA_BASE + 8, ARENA_BASE + HEAP_OFFSET]);
        let all_arena = ViewConfig {
            heap_string_min_bytes: u32::MAX,
            ..ViewConfig::default()
        };
        let a = accelerator_view("t", &evs, &all_arena).unwrap().remove(0);
        assert_eq!(reads(&a), vec![ARENA_BASE + 8, ARENA_BASE + 40]);
        // Engine layout: first page touched maps to the arena's first page, the next to the
        // second; the string crossing a page boundary stays contiguous.
        let e = accelerator_view(
            "t",
            &evs,
            &ViewConfig {
                memory: MemoryView::Engine,
                ..ViewConfig::default()
            },
        )
        .unwrap()
        .remove(0);
        assert_eq!(
            reads(&e),
            vec![ARENA_BASE + 0x10, ARENA_BASE + 4096 + 0xff0]
        );
        let written: Vec<(u64, u32)> = t
            .events
            .iter()
            .filter_map(|e| match e {
                Event::FieldWrite { addr, bytes, .. } => Some((*addr, *bytes)),
                _ => None,
            })
            .collect();
        // Tags widened back; the trailing byte joins the last write.
        assert_eq!(written, vec![(0, 2), (2, 38)]);
        assert_eq!(
            written.iter().map(|w| u64::from(w.1)).sum::<u64>(),
            t.wire_bytes
        );
    }

    #[test]
    fn a_decoded_repeated_field_keeps_one_entry_and_one_array() {
        // Three elements of one unpacked repeated int32: the decoder reads the field's entry
        // at each tag, then the element from the buffer, then writes it to the message.
        let mut evs = vec![begin(Direction::Decode)];
        for k in 0..3u64 {
            evs.push(Event::SchemaRead {
                kind: 5,
                repetition: Repetition::Single,
                addr: 0xdead_0000,
                size: 128,
            });
            evs.push(Event::FieldRead {
                region: Region::Buffer,
                addr: 2 * k + 1,
                bytes: 1,
            });
            evs.push(Event::FieldWrite {
                region: Region::Message,
                addr: 0x7000_0000 + 0x100 * k,
                bytes: 4,
            });
        }
        evs.push(Event::MessageEnd { wire_bytes: 6 });
        let t = accelerator_view("t", &evs, &ViewConfig::default())
            .unwrap()
            .remove(0);
        let pool = ARENA_BASE + SCHEMA_POOL_OFFSET;
        let schema: Vec<u64> = t
            .events
            .iter()
            .filter_map(|e| match e {
                Event::SchemaRead { addr, .. } => Some(*addr),
                _ => None,
            })
            .collect();
        assert_eq!(schema, vec![pool; 3]);
        let written: Vec<u64> = t
            .events
            .iter()
            .filter_map(|e| match e {
                Event::FieldWrite {
                    region: Region::Message,
                    addr,
                    ..
                } => Some(*addr),
                _ => None,
            })
            .collect();
        // Record: presence word and one pointer slot (16 B); the elements follow it as one
        // array of three.
        assert_eq!(
            written,
            vec![ARENA_BASE + 16, ARENA_BASE + 20, ARENA_BASE + 24]
        );
    }

    #[test]
    fn addresses_do_not_depend_on_the_heap_base() {
        let at = |base: u64| {
            vec![
                begin(Direction::Decode),
                Event::SchemaRead {
                    kind: 5,
                    repetition: Repetition::Single,
                    addr: base,
                    size: 128,
                },
                Event::FieldRead {
                    region: Region::Buffer,
                    addr: 1,
                    bytes: 1,
                },
                Event::FieldWrite {
                    region: Region::Message,
                    addr: base + 0x2_0040,
                    bytes: 4,
                },
                Event::MessageEnd { wire_bytes: 2 },
            ]
        };
        for view in [
            ViewConfig::default(),
            ViewConfig {
                schema: SchemaView::Engine,
                memory: MemoryView::Engine,
                ..ViewConfig::default()
            },
        ] {
            let a = accelerator_view("a", &at(0x5555_0000_0000), &view).unwrap();
            let b = accelerator_view("b", &at(0x7fff_1234_5000), &view).unwrap();
            assert_eq!(a, b);
        }
        assert!(accelerator_view("x", &[], &ViewConfig::default()).is_err());
    }
}
