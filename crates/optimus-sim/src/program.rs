//! Turns one message's trace into the work a transformation unit performs: cache-line accesses
//! with their dependences, and per-field items (chunks to convert, bytes to write).
//!
//! Dependences follow from the trace vocabulary alone. A schema entry at depth 0 is reached
//! from the request's schema pointer; a schema entry inside `Enter` is reached through the
//! parent's entry (its address field points at the sub-schema). A field read of message or
//! accelerator memory depends on the entry just read (or on the previous read of the same
//! field: pointer chasing). Reads of the serialized buffer depend on nothing: its base is in
//! the request and it is read in order. Each element of a repeated sub-message hangs from the
//! field's entry.
//!
//! An engine that walks the objects themselves (ProtoACC's, RPCAcc's baselines) instead of
//! Optimus Prime's instance schema must also load a pointer from the message's record before
//! it can reach a dereference field (RPCAcc §I): a sub-message, a string's or bytes'
//! characters, a repeated field's elements. [`Access::pointer`] marks where.

use optimus_trace::{class_of, ConvClass, Direction, Event, Region, Repetition};

use crate::workload::MessageTrace;

/// Cache-line size of every model here (Optimus Prime Table 1: 64-byte blocks).
pub const LINE_BYTES: u64 = 64;

/// One cache-line access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Line address (byte address / [`LINE_BYTES`]).
    pub line: u64,
    /// Memory the line lives in.
    pub region: Region,
    /// Index of the access whose data gives this one's address.
    pub dep: Option<u32>,
    /// A schema entry read (as opposed to field data).
    pub is_schema: bool,
    /// Nesting depth (0 = top-level message).
    pub depth: u8,
    /// Index of the item that needs it.
    pub item: u32,
    /// Bytes of this access that the trace asked for (within the line).
    pub bytes: u32,
    /// On a sub-message's first access, a string's or bytes' characters and a repeated
    /// field's first element: the memory of the record that holds their pointer (an
    /// object-walking engine loads it first; Optimus Prime's schema entry carries the address
    /// instead).
    pub pointer: Option<Region>,
}

/// One field's worth of work.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Item {
    /// Accesses `first_access..end_access` belong to this item.
    pub first_access: u32,
    /// One past the last access.
    pub end_access: u32,
    /// Converter ops applied: `(op, input bytes)`.
    pub converts: Vec<(u16, u32)>,
    /// Writes: `(region, address, bytes)`.
    pub writes: Vec<(Region, u64, u32)>,
    /// Nesting depth.
    pub depth: u8,
    /// Which value of a list field the item converts from the message object, counted from
    /// the field's schema read: 0 for a singular field's value and a list's first, `n` for
    /// the value `n` places after it. Only an encoder reads values from the message object
    /// (once per list, its entry read once); on decode it is 0.
    pub list_index: u32,
}

impl Item {
    /// Whether the item holds a later value of a list of scalars, which lies in one array
    /// with the values before it (a `RepeatedField`): an engine that walks the message's
    /// objects reads and copies such a list as one field.
    pub fn continues_scalar_list(&self) -> bool {
        self.list_index > 0 && self.converts_scalars()
    }

    /// Whether the item converts scalars alone (varints, zigzags, fixed-width values), at
    /// least one.
    pub fn converts_scalars(&self) -> bool {
        !self.converts.is_empty()
            && self.converts.iter().all(|&(op, _)| {
                matches!(
                    class_of(op),
                    ConvClass::Varint | ConvClass::Zigzag | ConvClass::Fixed
                )
            })
    }
}

/// A message as work.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    /// Encode or decode.
    pub direction: Option<Direction>,
    /// All line accesses, in trace order.
    pub accesses: Vec<Access>,
    /// Items in trace order.
    pub items: Vec<Item>,
    /// Serialized size.
    pub wire_bytes: u64,
    /// Maximum nesting depth reached (0 = flat).
    pub max_depth: u8,
}

impl Program {
    /// Builds the program of one message trace.
    pub fn from_trace(t: &MessageTrace) -> Self {
        let mut p = Program {
            direction: Some(t.direction),
            wire_bytes: t.wire_bytes,
            ..Default::default()
        };
        // Nesting depth; accesses and items keep it clamped to a `u8`.
        let mut depth: u32 = 0;
        // Per depth: the schema access the next level hangs from.
        let mut parent: Vec<Option<u32>> = vec![None];
        let mut cur = Item::default();
        let mut last_access_in_item: Option<u32> = None;
        let mut last_entry: Option<u32> = None;
        // Per open message: where its record lives, learnt as it is walked.
        let mut records = vec![Record::default()];
        // Set between a sub-message's `Enter` and its first access.
        let mut awaiting_first = false;
        let mut has_work = false;
        // A read of message or accelerator memory whose conversion has not been seen yet:
        // a payload's (bytes class) says nothing of where its record lies.
        let mut unplaced_read: Option<Region> = None;
        // The first access of that read, and of the current field's first value.
        let mut last_read: Option<u32> = None;
        let mut field_values = Values::default();
        let flush = |p: &mut Program, cur: &mut Item, has_work: &mut bool, depth: u32| {
            cur.end_access = p.accesses.len() as u32;
            if *has_work || cur.end_access > cur.first_access {
                cur.depth = clamp_depth(depth);
                p.items.push(std::mem::take(cur));
            }
            cur.first_access = p.accesses.len() as u32;
            *has_work = false;
        };
        cur.first_access = 0;
        for ev in &t.events {
            if !matches!(ev, Event::Convert { .. }) {
                place_record(&mut records, unplaced_read.take());
            }
            match *ev {
                Event::SchemaRead {
                    addr,
                    size,
                    repetition,
                    ..
                } => {
                    if has_work {
                        flush(&mut p, &mut cur, &mut has_work, depth);
                    }
                    let dep = parent.last().copied().flatten();
                    let idx = push_lines(
                        &mut p,
                        addr,
                        size,
                        Region::Message,
                        dep,
                        true,
                        clamp_depth(depth),
                    );
                    note_first(&mut records, idx, &mut awaiting_first);
                    last_entry = idx;
                    last_access_in_item = idx;
                    field_values = Values::of(repetition);
                }
                Event::FieldRead {
                    region,
                    addr,
                    bytes,
                } => {
                    if has_work {
                        flush(&mut p, &mut cur, &mut has_work, depth);
                        last_access_in_item = None;
                    }
                    // Another element of a repeated field hangs from the field's entry.
                    let dep = if region == Region::Buffer {
                        None
                    } else {
                        last_access_in_item
                            .or(last_entry)
                            .or_else(|| parent.last().copied().flatten())
                    };
                    let idx =
                        push_lines(&mut p, addr, bytes, region, dep, false, clamp_depth(depth));
                    note_first(&mut records, idx, &mut awaiting_first);
                    if region != Region::Buffer {
                        last_access_in_item = idx.or(last_access_in_item);
                        unplaced_read = Some(region);
                        last_read = idx;
                    }
                }
                Event::Convert { op, bytes } => {
                    let read = unplaced_read.take();
                    let class = class_of(op);
                    if class != ConvClass::Bytes {
                        place_record(&mut records, read);
                    }
                    if read.is_some() {
                        if let (Some(i), Some(r)) = (last_read.take(), records.last_mut()) {
                            cur.list_index =
                                field_values.converted(i, class == ConvClass::Bytes, r);
                        }
                    }
                    cur.converts.push((op, bytes));
                    has_work = true;
                }
                Event::FieldWrite {
                    region,
                    addr,
                    bytes,
                } => {
                    cur.writes.push((region, addr, bytes));
                    has_work = true;
                }
                Event::Enter { .. } => {
                    flush(&mut p, &mut cur, &mut has_work, depth);
                    parent.push(last_entry);
                    records.push(Record::default());
                    awaiting_first = true;
                    depth = depth.saturating_add(1);
                    p.max_depth = p.max_depth.max(clamp_depth(depth));
                    last_access_in_item = None;
                }
                Event::Leave => {
                    flush(&mut p, &mut cur, &mut has_work, depth);
                    // The next sibling (another element of a repeated field) hangs from the
                    // same entry.
                    last_entry = parent.pop().flatten();
                    if records.len() > 1 {
                        let done = records.pop().unwrap_or_default();
                        if let Some(r) = records.last_mut() {
                            r.absorb(&done);
                        }
                        done.close(&mut p);
                    }
                    awaiting_first = false;
                    depth = depth.saturating_sub(1);
                    last_access_in_item = None;
                    field_values = Values::default();
                }
                Event::MessageBegin { .. } | Event::MessageEnd { .. } => {}
            }
        }
        place_record(&mut records, unplaced_read);
        flush(&mut p, &mut cur, &mut has_work, depth);
        // Messages left open by a cut-off trace close here; the top-level record is in host
        // memory whatever its fields' data.
        while let Some(r) = records.pop() {
            if records.is_empty() {
                r.close_as(Region::Message, &mut p);
            } else {
                r.close(&mut p);
            }
        }
        for (i, it) in p.items.iter().enumerate() {
            for a in &mut p.accesses[it.first_access as usize..it.end_access as usize] {
                a.item = i as u32;
            }
        }
        p
    }

    /// Shifts every address of host memory, the message objects and the serialized buffer,
    /// by `offset` bytes (another core's arena, another request's message and buffer);
    /// accelerator memory stays where it is. `offset` is a whole number of lines, so every
    /// access keeps its place within its line.
    pub fn relocate(&self, offset: u64) -> Program {
        debug_assert_eq!(
            offset % LINE_BYTES,
            0,
            "relocation by a whole number of lines"
        );
        let mut p = self.clone();
        let lines = offset / LINE_BYTES;
        for a in &mut p.accesses {
            if relocates(a.region) {
                a.line += lines;
            }
        }
        for it in &mut p.items {
            for w in &mut it.writes {
                if relocates(w.0) {
                    w.1 += offset;
                }
            }
        }
        p
    }

    /// The size of every write, in order, whatever its region.
    pub fn write_sizes(&self) -> impl Iterator<Item = u32> + '_ {
        self.items.iter().flat_map(|i| i.writes.iter().map(|w| w.2))
    }

    /// Bytes written to `region`.
    pub fn bytes_written(&self, region: Region) -> u64 {
        self.items
            .iter()
            .flat_map(|i| &i.writes)
            .filter(|w| w.0 == region)
            .map(|w| u64::from(w.2))
            .sum()
    }

    /// Number of field items (chunks' sources).
    pub fn fields(&self) -> usize {
        self.items.len()
    }
}

/// Whether [`Program::relocate`] moves `region`: a core builds each request's message, and
/// hands it the serialized buffer to read or fill, in its own host memory; accelerator memory
/// is the card's, the same for every request.
fn relocates(region: Region) -> bool {
    match region {
        Region::Message | Region::Buffer => true,
        Region::Accel => false,
    }
}

fn push_lines(
    p: &mut Program,
    addr: u64,
    bytes: u32,
    region: Region,
    dep: Option<u32>,
    is_schema: bool,
    depth: u8,
) -> Option<u32> {
    if bytes == 0 {
        return None;
    }
    let first = addr / LINE_BYTES;
    let last = (addr + u64::from(bytes) - 1) / LINE_BYTES;
    let mut idx = None;
    for line in first..=last {
        let lo = (line * LINE_BYTES).max(addr);
        let hi = ((line + 1) * LINE_BYTES).min(addr + u64::from(bytes));
        p.accesses.push(Access {
            line,
            region,
            dep,
            is_schema,
            depth,
            item: 0,
            bytes: (hi - lo) as u32,
            pointer: None,
        });
        idx.get_or_insert(p.accesses.len() as u32 - 1);
    }
    idx
}

/// The depth an access or item records: nesting deeper than 255 counts as 255.
fn clamp_depth(depth: u32) -> u8 {
    depth.min(u32::from(u8::MAX)) as u8
}

/// Notes a read of the current message's own data (not a payload's) in `region`, if any.
fn place_record(records: &mut [Record], region: Option<Region>) {
    if let (Some(region), Some(r)) = (region, records.last_mut()) {
        r.read(region);
    }
}

/// The values of one field read so far, for marking which of them an object walker reaches
/// through a pointer in the message's record (RPCAcc §I: strings, bytes, repeated fields and
/// sub-messages are "dereference" fields).
#[derive(Debug, Default)]
struct Values {
    /// Whether the field's schema entry says it holds a list.
    is_list: bool,
    /// How many values of the field have been converted.
    count: u32,
}

impl Values {
    /// A field whose schema entry gives `repetition`, no value read yet.
    fn of(repetition: Repetition) -> Self {
        Values {
            is_list: repetition.is_list(),
            count: 0,
        }
    }

    /// Notes a converted value whose read starts at access `first`, in the message whose
    /// record is `record`: a string's or bytes' characters wait for their pointer, and so
    /// does a list's first value, the pointer being to its elements (later ones hang from the
    /// same entry, and wait with it). Returns the value's place in its list (0 for a
    /// singular field's).
    fn converted(&mut self, first: u32, is_bytes: bool, record: &mut Record) -> u32 {
        self.count += 1;
        if is_bytes || (self.is_list && self.count == 1) {
            record.children.push(first);
        }
        if self.is_list {
            self.count - 1
        } else {
            0
        }
    }
}

/// What the walk has learnt of one message's record: which accesses wait for a pointer in it
/// (its sub-messages' first accesses, its dereference fields' values), and where its data
/// lies. A sub-message whose data all
/// lies in accelerator memory (RPCAcc's "Acc" label, which covers everything inside a labelled
/// message) has its record there too; any other record is in host memory. A string's or
/// bytes' characters say nothing of it: a labelled string field moves them alone, its
/// pointer staying in a host record.
#[derive(Debug)]
struct Record {
    /// Accesses that wait for a pointer in it.
    children: Vec<u32>,
    /// Some data of it (sub-messages included) was read.
    read_any: bool,
    /// All of that data lies in accelerator memory.
    all_accel: bool,
}

impl Default for Record {
    fn default() -> Self {
        Record {
            children: Vec::new(),
            read_any: false,
            all_accel: true,
        }
    }
}

impl Record {
    fn read(&mut self, region: Region) {
        self.read_any = true;
        self.all_accel &= region == Region::Accel;
    }

    /// Where the record lies, as far as its data says.
    fn region(&self) -> Region {
        if self.read_any && self.all_accel {
            Region::Accel
        } else {
            Region::Message
        }
    }

    fn absorb(&mut self, child: &Record) {
        if child.read_any {
            self.read(child.region());
        }
    }

    fn close(self, p: &mut Program) {
        let region = self.region();
        self.close_as(region, p);
    }

    fn close_as(self, region: Region, p: &mut Program) {
        for c in self.children {
            p.accesses[c as usize].pointer = Some(region);
        }
    }
}

/// Notes the access `idx` as the first of the sub-message just entered, if one is awaited:
/// its pointer is in the parent's record, the one below the top of `records`.
fn note_first(records: &mut [Record], idx: Option<u32>, awaiting_first: &mut bool) {
    let (Some(i), true) = (idx, *awaiting_first) else {
        return;
    };
    *awaiting_first = false;
    if let [.., parent, _] = records {
        parent.children.push(i);
    }
}

/// A one-field message for the models' unit tests: a varint whose schema entry is at
/// `schema_addr` and whose value (4 bytes, 2 on the wire) is at `data_addr`.
/// A flat message for tests: per field `(schema entry address, data address)`, a 16-byte
/// schema entry read, 4 bytes of data converted by op 5 into 2 output bytes, written one
/// after the other.
#[cfg(test)]
pub(crate) fn flat_trace(fields: &[(u64, u64)]) -> MessageTrace {
    use optimus_trace::Format;
    let mut events = vec![Event::MessageBegin {
        direction: Direction::Encode,
        format: Format::Protobuf,
        type_id: 0,
    }];
    for (k, &(schema_addr, data_addr)) in fields.iter().enumerate() {
        events.extend([
            Event::SchemaRead {
                kind: 5,
                repetition: Repetition::Single,
                addr: schema_addr,
                size: 16,
            },
            Event::FieldRead {
                region: Region::Message,
                addr: data_addr,
                bytes: 4,
            },
            Event::Convert { op: 5, bytes: 4 },
            Event::FieldWrite {
                region: Region::Buffer,
                addr: 2 * k as u64,
                bytes: 2,
            },
        ]);
    }
    let wire_bytes = 2 * fields.len() as u64;
    events.push(Event::MessageEnd { wire_bytes });
    MessageTrace {
        events,
        wire_bytes,
        direction: Direction::Encode,
    }
}

/// [`flat_trace`] of one field.
#[cfg(test)]
pub(crate) fn one_field_trace(schema_addr: u64, data_addr: u64) -> MessageTrace {
    flat_trace(&[(schema_addr, data_addr)])
}

/// An encode trace of `fields`, each a kind, a repetition and its values' sizes: the
/// values laid out one after another in the message object, written as they are.
#[cfg(test)]
pub(crate) fn encode_of(fields: &[(u16, Repetition, &[u32])]) -> MessageTrace {
    let mut events = Vec::new();
    let (mut object, mut out) = (0x10_000, 0);
    for (i, &(kind, repetition, values)) in fields.iter().enumerate() {
        events.push(Event::SchemaRead {
            kind,
            repetition,
            addr: 0x1000 + 32 * i as u64,
            size: 32,
        });
        for &bytes in values {
            events.push(Event::FieldRead {
                region: Region::Message,
                addr: object,
                bytes,
            });
            events.push(Event::Convert { op: kind, bytes });
            events.push(Event::FieldWrite {
                region: Region::Buffer,
                addr: out,
                bytes,
            });
            object += u64::from(bytes);
            out += u64::from(bytes);
        }
    }
    MessageTrace {
        events,
        wire_bytes: out,
        direction: Direction::Encode,
    }
}

/// One field of `bytes` bytes at a line boundary, copied (op 1) from message memory into the
/// serialized buffer.
#[cfg(test)]
pub(crate) fn one_large_field(bytes: u32) -> MessageTrace {
    use optimus_trace::Format;
    MessageTrace {
        events: vec![
            Event::MessageBegin {
                direction: Direction::Encode,
                format: Format::Protobuf,
                type_id: 0,
            },
            Event::SchemaRead {
                kind: 9,
                repetition: Repetition::Single,
                addr: 0x1000,
                size: 16,
            },
            Event::FieldRead {
                region: Region::Message,
                addr: 0x10_0000,
                bytes,
            },
            Event::Convert { op: 1, bytes },
            Event::FieldWrite {
                region: Region::Buffer,
                addr: 0,
                bytes,
            },
            Event::MessageEnd {
                wire_bytes: u64::from(bytes),
            },
        ],
        wire_bytes: u64::from(bytes),
        direction: Direction::Encode,
    }
}

/// An 8-byte read of `line` in `region` that depends on nothing, for the models' tests.
#[cfg(test)]
pub(crate) fn line_access(line: u64, region: Region) -> Access {
    Access {
        line,
        region,
        dep: None,
        is_schema: false,
        depth: 0,
        item: 0,
        bytes: 8,
        pointer: None,
    }
}

/// One step of [`nested_trace`]'s walk.
#[cfg(test)]
#[derive(Clone, Copy)]
pub(crate) enum Walk {
    /// A 4-byte field in this memory: a 16-byte schema entry, the read, op 5 into 2 bytes.
    Field(Region),
    /// A string of 4 characters in this memory: as [`Walk::Field`], converted by op 9.
    Text(Region),
    /// A repeated field's first value: as [`Walk::Field`], its entry saying it holds a list.
    List(Region),
    /// Another value of the field just walked (a repeated field's next element): its read,
    /// op 5 into 2 bytes, and no entry.
    Value(Region),
    /// A sub-message field: its entry, then the sub-message is entered.
    Sub,
    /// A repeated sub-message field: as [`Walk::Sub`], its entry saying it holds a list.
    Subs,
    /// The next element of the repeated sub-message field just left: entered again.
    Element,
    /// The sub-message ends.
    Leave,
}

/// A message of nested records for tests, walked as `walk` says.
#[cfg(test)]
pub(crate) fn nested_trace(walk: &[Walk]) -> MessageTrace {
    use optimus_trace::Format;
    let mut events = vec![Event::MessageBegin {
        direction: Direction::Encode,
        format: Format::Protobuf,
        type_id: 0,
    }];
    let mut out = 0;
    for (k, step) in walk.iter().enumerate() {
        let repetition = if matches!(step, Walk::List(_) | Walk::Subs) {
            Repetition::Repeated
        } else {
            Repetition::Single
        };
        let entry = Event::SchemaRead {
            kind: 5,
            repetition,
            addr: 0x1000 + 16 * k as u64,
            size: 16,
        };
        let enter = Event::Enter { type_id: 1 };
        match *step {
            Walk::Sub | Walk::Subs => events.extend([entry, enter]),
            Walk::Element => events.push(enter),
            Walk::Leave => events.push(Event::Leave),
            Walk::Field(region) | Walk::Text(region) | Walk::List(region) | Walk::Value(region) => {
                let op = if matches!(step, Walk::Text(_)) { 9 } else { 5 };
                if !matches!(step, Walk::Value(_)) {
                    events.push(entry);
                }
                events.extend([
                    Event::FieldRead {
                        region,
                        addr: 0x10_0000 + 64 * k as u64,
                        bytes: 4,
                    },
                    Event::Convert { op, bytes: 4 },
                    Event::FieldWrite {
                        region: Region::Buffer,
                        addr: out,
                        bytes: 2,
                    },
                ]);
                out += 2;
            }
        }
    }
    events.push(Event::MessageEnd { wire_bytes: out });
    MessageTrace {
        events,
        wire_bytes: out,
        direction: Direction::Encode,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::MessageClass;
    use optimus_core::binary::EngineTraces as Engine;

    #[test]
    fn nested_sub_schema_depends_on_parent_entry() {
        let p = Program::from_trace(
            &MessageClass::Nested
                .trace(&mut Engine, Direction::Encode)
                .unwrap(),
        );
        assert_eq!(p.max_depth, 1);
        // Every depth-1 schema access hangs from a depth-0 schema access.
        for a in p.accesses.iter().filter(|a| a.depth == 1 && a.is_schema) {
            let d = p.accesses[a.dep.unwrap() as usize];
            assert!(d.is_schema && d.depth == 0);
        }
        // Top-level schema accesses have no dependence.
        assert!(p
            .accesses
            .iter()
            .filter(|a| a.depth == 0 && a.is_schema)
            .all(|a| a.dep.is_none()));
        assert_eq!(p.bytes_written(Region::Buffer), 232);
    }

    #[test]
    fn sub_messages_wait_for_pointers_in_their_parents_records() {
        use Region::{Accel, Message};
        use Walk::{Element, Field, Leave, Sub, Subs};
        // A repeated sub-message of two elements, then a sub-message whose data is all in
        // card memory, with a sub-message of its own.
        let t = nested_trace(&[
            Subs,
            Field(Message),
            Leave,
            Element,
            Field(Message),
            Leave,
            Sub,
            Field(Accel),
            Sub,
            Field(Accel),
            Leave,
            Leave,
        ]);
        let p = Program::from_trace(&t);
        let entries: Vec<usize> = (0..p.accesses.len())
            .filter(|&i| p.accesses[i].is_schema)
            .collect();
        assert_eq!(entries, [0, 1, 3, 5, 6, 8, 9]);
        // Both elements hang from the repeated field's entry.
        assert_eq!(p.accesses[1].dep, Some(0));
        assert_eq!(p.accesses[3].dep, Some(0));
        // Each sub-message's first access waits for a pointer: the elements' and the labelled
        // sub-message's in the top-level record, the inner one's in the labelled record.
        let pointers: Vec<(usize, Region)> = p
            .accesses
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.pointer.map(|r| (i, r)))
            .collect();
        assert_eq!(
            pointers,
            [(1, Message), (3, Message), (6, Message), (9, Accel)]
        );
    }

    #[test]
    fn a_labelled_string_leaves_its_record_in_host_memory() {
        use Region::{Accel, Message};
        use Walk::{Field, Leave, Sub, Text};
        // Top { Mid { Leaf { string s } } } with s's characters in card memory: Leaf's
        // pointer stays in Mid's host record, whether or not Mid has data of its own.
        for mid_scalar in [false, true] {
            let mut walk = vec![Sub];
            if mid_scalar {
                walk.push(Field(Message));
            }
            walk.extend([Sub, Text(Accel), Leave, Leave]);
            let p = Program::from_trace(&nested_trace(&walk));
            let pointers: Vec<Region> = p.accesses.iter().filter_map(|a| a.pointer).collect();
            // Mid's and Leaf's, then the string's own, in Leaf's host record.
            assert_eq!(
                pointers,
                [Message, Message, Message],
                "Mid with a scalar: {mid_scalar}"
            );
        }
        // Inside a labelled sub-message its own scalars are in card memory too: so is its
        // record, and the pointer in it.
        let p = Program::from_trace(&nested_trace(&[
            Sub,
            Field(Accel),
            Sub,
            Text(Accel),
            Leave,
            Leave,
        ]));
        let pointers: Vec<Region> = p.accesses.iter().filter_map(|a| a.pointer).collect();
        assert_eq!(pointers, [Message, Accel, Message]);
    }

    #[test]
    fn strings_and_repeated_fields_wait_for_pointers_in_their_records() {
        use Region::{Accel, Message};
        use Walk::{Field, Leave, List, Sub, Text, Value};
        // Top { a scalar; a string; a repeated scalar of three; Sub { a scalar; a string } }
        // with the sub-message all in card memory.
        let p = Program::from_trace(&nested_trace(&[
            Field(Message),
            Text(Message),
            List(Message),
            Value(Message),
            Value(Message),
            Sub,
            Field(Accel),
            Text(Accel),
            Leave,
        ]));
        let data: Vec<(usize, Option<Region>)> = p
            .accesses
            .iter()
            .enumerate()
            .filter(|(_, a)| !a.is_schema || a.pointer.is_some())
            .map(|(i, a)| (i, a.pointer))
            .collect();
        assert_eq!(
            data,
            [
                // The scalar is in the record itself.
                (1, None),
                // The string's characters, through the pointer in the top record.
                (3, Some(Message)),
                // The repeated field's first element waits for the pointer to the elements;
                // the others hang from the field's entry (4) with it.
                (5, Some(Message)),
                (6, None),
                (7, None),
                // The sub-message (entry 8) from its first access, through its pointer in
                // the top record.
                (9, Some(Message)),
                (10, None),
                // Its string, through the pointer in its own record, in card memory.
                (12, Some(Accel)),
            ]
        );
        assert_eq!(p.accesses[6].dep, Some(4));
        assert_eq!(p.accesses[7].dep, Some(4));
    }

    #[test]
    fn a_list_of_one_value_waits_for_its_pointer_and_a_field_of_two_values_does_not() {
        use Region::Message;
        use Walk::{Field, List, Value};
        // The schema entry says which field is a list, however many values it has: a
        // repeated field of one element is still reached through the pointer to its
        // elements, and a singular field's values (a trace that repeats one) are not.
        let pointers = |walk: &[Walk]| -> Vec<Option<Region>> {
            let p = Program::from_trace(&nested_trace(walk));
            p.accesses
                .iter()
                .filter(|a| !a.is_schema)
                .map(|a| a.pointer)
                .collect()
        };
        assert_eq!(pointers(&[List(Message)]), [Some(Message)]);
        assert_eq!(pointers(&[Field(Message)]), [None]);
        assert_eq!(pointers(&[Field(Message), Value(Message)]), [None, None]);
    }

    #[test]
    fn items_know_their_place_in_a_list_and_which_continue_a_list_of_scalars() {
        use optimus_trace::kind::{INT64, STRING};
        use Repetition::{Packed, Repeated, Single};
        let p = Program::from_trace(&encode_of(&[
            (INT64, Packed, &[8; 3]),
            (STRING, Repeated, &[5; 2]),
            (INT64, Single, &[8]),
        ]));
        let places: Vec<(u32, bool)> = p
            .items
            .iter()
            .map(|it| (it.list_index, it.continues_scalar_list()))
            .collect();
        assert_eq!(
            places,
            [
                (0, false),
                (1, true),
                (2, true),
                (0, false),
                (1, false),
                (0, false)
            ]
        );
    }

    #[test]
    fn repeated_elements_hang_from_their_fields_entry() {
        // One entry, then three elements each read after the previous one's conversion.
        let mut events = vec![
            Event::MessageBegin {
                direction: Direction::Encode,
                format: optimus_trace::Format::Protobuf,
                type_id: 0,
            },
            Event::SchemaRead {
                kind: 5,
                repetition: Repetition::Repeated,
                addr: 0x1000,
                size: 16,
            },
        ];
        for k in 0..3u64 {
            events.extend([
                Event::FieldRead {
                    region: Region::Message,
                    addr: 0x10_0000 + 4 * k,
                    bytes: 4,
                },
                Event::Convert { op: 5, bytes: 4 },
                Event::FieldWrite {
                    region: Region::Buffer,
                    addr: k,
                    bytes: 1,
                },
            ]);
        }
        events.push(Event::MessageEnd { wire_bytes: 3 });
        let p = Program::from_trace(&MessageTrace {
            events,
            wire_bytes: 3,
            direction: Direction::Encode,
        });
        let deps: Vec<Option<u32>> = p.accesses.iter().map(|a| a.dep).collect();
        assert_eq!(deps, [None, Some(0), Some(0), Some(0)]);
    }

    #[test]
    fn relocation_moves_the_message_and_the_serialized_buffer_but_not_card_memory() {
        // A field whose schema entry (line 64) and record (line 128) are message memory, read
        // from the serialized buffer at byte 0x48 (line 1) and from card memory (line 192),
        // written to each of the three regions.
        let events = vec![
            Event::SchemaRead {
                kind: 5,
                repetition: Repetition::Single,
                addr: 0x1000,
                size: 16,
            },
            Event::FieldRead {
                region: Region::Buffer,
                addr: 0x48,
                bytes: 4,
            },
            Event::FieldRead {
                region: Region::Accel,
                addr: 0x3000,
                bytes: 4,
            },
            Event::FieldRead {
                region: Region::Message,
                addr: 0x2000,
                bytes: 4,
            },
            Event::Convert { op: 5, bytes: 4 },
            Event::FieldWrite {
                region: Region::Message,
                addr: 0x2008,
                bytes: 8,
            },
            Event::FieldWrite {
                region: Region::Buffer,
                addr: 0x50,
                bytes: 2,
            },
            Event::FieldWrite {
                region: Region::Accel,
                addr: 0x3010,
                bytes: 4,
            },
        ];
        let p = Program::from_trace(&MessageTrace {
            events,
            wire_bytes: 2,
            direction: Direction::Decode,
        });
        let lines = |p: &Program| -> Vec<(Region, u64)> {
            p.accesses.iter().map(|a| (a.region, a.line)).collect()
        };
        use Region::{Accel, Buffer, Message};
        assert_eq!(
            lines(&p),
            [(Message, 64), (Buffer, 1), (Accel, 192), (Message, 128)]
        );
        // 65 lines on: every host-memory line moves by 65, card memory stays.
        let moved = p.relocate(65 * LINE_BYTES);
        assert_eq!(
            lines(&moved),
            [(Message, 129), (Buffer, 66), (Accel, 192), (Message, 193)]
        );
        assert_eq!(
            moved.items[0].writes,
            [
                (Message, 0x2008 + 65 * 64, 8),
                (Buffer, 0x50 + 65 * 64, 2),
                (Accel, 0x3010, 4)
            ]
        );
        // Nothing else changes: dependences, items, sizes.
        let back: Vec<(Option<u32>, u32, u32)> = moved
            .accesses
            .iter()
            .map(|a| (a.dep, a.item, a.bytes))
            .collect();
        let orig: Vec<(Option<u32>, u32, u32)> = p
            .accesses
            .iter()
            .map(|a| (a.dep, a.item, a.bytes))
            .collect();
        assert_eq!(back, orig);
    }

    #[test]
    fn flat_has_one_item_per_field() {
        let t = MessageClass::Flat
            .trace(&mut Engine, Direction::Encode)
            .unwrap();
        let fields = t
            .events
            .iter()
            .filter(|e| matches!(e, Event::SchemaRead { .. }))
            .count();
        let p = Program::from_trace(&t);
        assert_eq!(p.items.len(), fields);
        assert_eq!(p.bytes_written(Region::Buffer), 485);
        assert!(p
            .accesses
            .iter()
            .filter(|a| !a.is_schema)
            .all(|a| a.dep.is_some()));
    }
}
