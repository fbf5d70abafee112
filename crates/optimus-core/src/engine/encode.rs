//! The encode walker: arena records to protobuf wire bytes, deterministic, in one pass
//! written backwards (upb's encoder does the same).
//!
//! Fields are written from the last to the first into the end of a buffer that grows toward
//! its front, so a sub-message's length is known when its body is done and goes in front of
//! it: no size pass and no length cache. Fields come out in number order (the presence bits
//! walked from the top), map entries sorted by key, unknown fields last — byte-identical to
//! Google protobuf's deterministic serialization.

use optimus_schema::{Entry, MessageId, Scalar, SchemaSet, Shape, Table, WireType};

use crate::binary::varint::{varint_len, zigzag32, zigzag64};
use crate::record::{read_le, RecPtr, Seq, View};

/// A buffer written from its end toward its front: the bytes written are `buf[pos..]`.
#[derive(Default)]
pub(crate) struct Back {
    pub(crate) buf: Vec<u8>,
    pub(crate) pos: usize,
}

impl Back {
    /// Bytes written so far.
    #[inline(always)]
    pub(crate) fn written(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The bytes written.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Empties the buffer, keeping its memory.
    pub(crate) fn clear(&mut self) {
        self.pos = self.buf.len();
    }

    #[inline(always)]
    fn reserve(&mut self, n: usize) {
        if self.pos < n {
            self.grow(n);
        }
    }

    /// Moves what is written to the end of a buffer at least twice as large.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, n: usize) {
        let used = self.written();
        let len = (self.buf.len() * 2).max(used + n).max(256);
        let mut fresh = vec![0u8; len];
        fresh[len - used..].copy_from_slice(&self.buf[self.pos..]);
        self.buf = fresh;
        self.pos = len - used;
    }

    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        self.pos -= bytes.len();
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
    }

    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.reserve(1);
        self.pos -= 1;
        self.buf[self.pos] = b;
    }

    #[inline(always)]
    fn varint(&mut self, v: u64) {
        if v < 0x80 {
            return self.byte(v as u8);
        }
        self.varint_long(v);
    }

    /// A varint of two bytes or more, its bytes stored in place (a copy of a run of unknown
    /// length would cost a call of `memmove`).
    #[inline]
    fn varint_long(&mut self, mut v: u64) {
        let n = varint_len(v);
        self.reserve(n);
        self.pos -= n;
        let bytes = &mut self.buf[self.pos..self.pos + n];
        let (last, head) = bytes.split_last_mut().expect("a varint has bytes");
        for b in head {
            *b = v as u8 | 0x80;
            v >>= 7;
        }
        *last = v as u8;
    }

    /// The entry's precomputed tag bytes (a five-byte tag from its number).
    #[inline(always)]
    fn tag(&mut self, e: &Entry) {
        match e.tag_len() {
            1 => self.byte(e.tag as u8),
            2 => self.put(&(e.tag as u16).to_le_bytes()),
            3 | 4 => self.put(&e.tag.to_le_bytes()[..e.tag_len()]),
            _ => self.varint(u64::from(e.tag_value())),
        }
    }
}

/// Writes one scalar value (not a message) held in `raw`, its record bytes.
#[inline(always)]
fn value(out: &mut Back, scalar: Scalar, raw: &[u8]) {
    match scalar {
        Scalar::Int32 | Scalar::OpenEnum | Scalar::ClosedEnum => {
            out.varint(read_le::<i32>(raw) as i64 as u64)
        }
        Scalar::Uint32 => out.varint(u64::from(read_le::<u32>(raw))),
        Scalar::Int64 | Scalar::Uint64 => out.varint(read_le::<u64>(raw)),
        Scalar::Sint32 => out.varint(u64::from(zigzag32(read_le::<i32>(raw)))),
        Scalar::Sint64 => out.varint(zigzag64(read_le::<i64>(raw))),
        Scalar::Bool => out.byte(raw[0]),
        Scalar::Fixed32 | Scalar::Sfixed32 | Scalar::Float => out.put(&raw[..4]),
        Scalar::Fixed64 | Scalar::Sfixed64 | Scalar::Double => out.put(&raw[..8]),
        Scalar::String | Scalar::Bytes => {
            // SAFETY: a string or bytes slot holds a view made by the decoder or a setter,
            // of memory that outlives the record.
            let bytes = unsafe { read_le::<View>(raw).bytes() };
            out.put(bytes);
            out.varint(bytes.len() as u64);
        }
        Scalar::Message | Scalar::Group => unreachable!("messages are written by the walker"),
    }
}

/// The record bytes of a single field's slot.
///
/// # Safety
/// `e` is an entry of `rec`'s table.
#[inline(always)]
unsafe fn slot<'r>(rec: RecPtr, e: &Entry) -> &'r [u8] {
    // SAFETY: the caller's duty: the slot lies inside the record.
    unsafe {
        std::slice::from_raw_parts(
            rec.as_slot().add(e.offset as usize),
            e.op.slot_width() as usize,
        )
    }
}

/// Writes record `rec` of type `id`: unknown bytes last, set fields before them in number
/// order (so, backwards: unknown bytes first, then fields from the highest set bit down).
pub(crate) fn message(schema: &SchemaSet, rec: RecPtr, id: u32, out: &mut Back) {
    let table = &schema.message(MessageId(id)).table;
    // SAFETY: `unknown_offset` holds the record's unknown bytes.
    let unknown = unsafe { rec.read::<Seq>(table.unknown_offset) };
    if unknown.len() > 0 {
        // SAFETY: as above.
        out.put(unsafe { unknown.raw(1) });
    }
    for w in (0..table.presence_words as usize).rev() {
        // SAFETY: `w` is below the table's presence word count.
        let mut bits = unsafe { rec.presence_word(w) };
        while bits != 0 {
            let top = 63 - bits.leading_zeros() as usize;
            bits &= !(1u64 << top);
            field(schema, rec, table, &table.entries[w * 64 + top], out);
        }
    }
}

/// Writes one set field (backwards: values, then the tag in front).
#[inline(always)]
fn field(schema: &SchemaSet, rec: RecPtr, table: &Table, e: &Entry, out: &mut Back) {
    let scalar = e.op.scalar();
    match e.op.shape() {
        Shape::Single if scalar.is_message() => {
            // SAFETY: a set single message slot holds a record pointer of its type.
            let sub = RecPtr::from_slot(unsafe { rec.read::<*mut u8>(e.offset) });
            message_value(schema, sub, table.sub_message(e), e, out);
        }
        Shape::Single => {
            // SAFETY: `e` is a single scalar entry of `rec`'s table.
            value(out, scalar, unsafe { slot(rec, e) });
            out.tag(e);
        }
        Shape::Repeated | Shape::Packed => {
            let width = scalar.width() as usize;
            // SAFETY: a sequence entry's slot holds its sequence of `width`-byte values.
            let raw = unsafe { rec.read::<Seq>(e.offset).raw(width) };
            if scalar.is_message() {
                let sub_id = table.sub_message(e);
                for p in raw.rchunks_exact(8) {
                    message_value(schema, RecPtr::from_slot(read_le(p)), sub_id, e, out);
                }
            } else if e.op.shape() == Shape::Packed {
                if raw.is_empty() {
                    return;
                }
                let end = out.written();
                for v in raw.rchunks_exact(width) {
                    value(out, scalar, v);
                }
                out.varint((out.written() - end) as u64);
                out.tag(e);
            } else {
                for v in raw.rchunks_exact(width) {
                    value(out, scalar, v);
                    out.tag(e);
                }
            }
        }
        Shape::Map => map(schema, rec, table, e, out),
    }
}

/// Writes a message value: a length-prefixed body, or a group between its tags.
fn message_value(schema: &SchemaSet, sub: Option<RecPtr>, sub_id: u32, e: &Entry, out: &mut Back) {
    if e.op.scalar() == Scalar::Group {
        out.varint(u64::from(e.number << 3 | WireType::EndGroup as u32));
        if let Some(s) = sub {
            message(schema, s, sub_id, out);
        }
        out.tag(e);
        return;
    }
    let end = out.written();
    if let Some(s) = sub {
        message(schema, s, sub_id, out);
    }
    out.varint((out.written() - end) as u64);
    out.tag(e);
}

/// Writes a map's entries sorted by key, each with key and value even when zero (as
/// Google protobuf does).
#[inline(never)]
fn map(schema: &SchemaSet, rec: RecPtr, table: &Table, e: &Entry, out: &mut Back) {
    let entry_table = &schema.message(MessageId(table.sub_message(e))).table;
    canonicalize_map(rec, e, entry_table);
    // SAFETY: a map slot holds a sequence of entry record pointers.
    let raw = unsafe { rec.read::<Seq>(e.offset).raw(8) };
    for p in raw.rchunks_exact(8) {
        let entry = RecPtr::from_slot(read_le(p)).expect("map entries are records");
        let end = out.written();
        for (i, part) in entry_table.entries.iter().take(2).enumerate().rev() {
            let scalar = part.op.scalar();
            if scalar.is_message() {
                // SAFETY: entry `i` of a map entry record is its key or value.
                let sub = unsafe { entry.has(i) }
                    // SAFETY: as above: a set message slot holds a record pointer.
                    .then(|| RecPtr::from_slot(unsafe { entry.read::<*mut u8>(part.offset) }))
                    .flatten();
                message_value(schema, sub, entry_table.sub_message(part), part, out);
            } else {
                // SAFETY: as above.
                let (bits, view) = unsafe { map_part(entry, i, part, schema, entry_table) };
                let mut raw = [0u8; 16];
                match view {
                    Some(v) => raw.copy_from_slice(crate::record::bytes_of(&v)),
                    None => raw[..8].copy_from_slice(&bits.to_le_bytes()),
                }
                value(out, scalar, &raw);
                out.tag(part);
            }
        }
        out.varint((out.written() - end) as u64);
        out.tag(e);
    }
}

/// A single slot's bits and view.
///
/// # Safety
/// `e` is an entry of `rec`'s table with a single scalar (non-message) op.
#[inline(always)]
unsafe fn single(rec: RecPtr, e: &Entry) -> (u64, Option<View>) {
    let scalar = e.op.scalar();
    // SAFETY: the caller's duty: the slot holds a value of the scalar's width.
    unsafe {
        if scalar.is_bytes_like() {
            (0, Some(rec.read::<View>(e.offset)))
        } else {
            let bits = match scalar.width() {
                1 => u64::from(rec.read::<u8>(e.offset)),
                4 => u64::from(rec.read::<u32>(e.offset)),
                _ => rec.read::<u64>(e.offset),
            };
            (bits, None)
        }
    }
}

/// The value of a map entry's key or value (`index` 0 or 1): its slot when set, else the
/// field's default (zero, or a closed enum's first value).
///
/// # Safety
/// `e` is entry `index` of `entry`'s table, a scalar.
unsafe fn map_part(
    entry: RecPtr,
    index: usize,
    e: &Entry,
    schema: &SchemaSet,
    table: &Table,
) -> (u64, Option<View>) {
    // SAFETY: the caller's duty.
    if unsafe { entry.has(index) } {
        // SAFETY: as above.
        return unsafe { single(entry, e) };
    }
    match e.op.scalar() {
        Scalar::ClosedEnum | Scalar::OpenEnum => {
            let en = schema.enum_type(optimus_schema::EnumId(table.enum_type(e)));
            (u64::from(en.default_number() as u32), None)
        }
        s if s.is_bytes_like() => (0, Some(View::of(&[]))),
        _ => (0, None),
    }
}

/// A map key as a sortable value.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Key<'a> {
    Signed(i64),
    Unsigned(u64),
    Text(&'a [u8]),
}

/// The key of a map entry record.
fn key_of<'a>(entry: RecPtr, key: &Entry) -> Key<'a> {
    // SAFETY: entry 0 of a map entry record is its key, a scalar (never a message).
    let (bits, view) = unsafe {
        if entry.has(0) {
            single(entry, key)
        } else {
            (0, key.op.scalar().is_bytes_like().then(|| View::of(&[])))
        }
    };
    match key.op.scalar() {
        Scalar::Int32 | Scalar::Sint32 | Scalar::Sfixed32 => {
            Key::Signed(i64::from(bits as u32 as i32))
        }
        Scalar::Int64 | Scalar::Sint64 | Scalar::Sfixed64 => Key::Signed(bits as i64),
        // SAFETY: a string key's view was made by the decoder or a setter.
        Scalar::String => Key::Text(unsafe { view.expect("a string key has a view").bytes() }),
        _ => Key::Unsigned(bits),
    }
}

/// Sorts a map's entries by key and keeps the last of equal keys (a decoded map may hold a
/// key twice; the last one wins). The map's content is unchanged; only its order and
/// duplicates go, so a map already canonical costs one pass.
pub(crate) fn canonicalize_map(rec: RecPtr, e: &Entry, entry_table: &Table) {
    let key = &entry_table.entries[0];
    // SAFETY: a map slot holds a sequence of 8-byte entry record pointers.
    let seq: Seq = unsafe { rec.read(e.offset) };
    // SAFETY: as above.
    let raw = unsafe { seq.raw(8) };
    let entry_at =
        |i: usize| RecPtr::from_slot(read_le(&raw[i * 8..])).expect("map entries are records");
    let sorted = (1..seq.len()).all(|i| key_of(entry_at(i - 1), key) < key_of(entry_at(i), key));
    if sorted {
        return;
    }
    // SAFETY: the sequence's array is arena memory of `len` pointers that only this record
    // refers to; reordering it keeps every pointer valid.
    let slots: &mut [*mut u8] =
        unsafe { std::slice::from_raw_parts_mut(raw.as_ptr() as *mut *mut u8, seq.len()) };
    // Stable, so equal keys keep their arrival order and the last can win.
    slots.sort_by(|a, b| {
        let (a, b) = (
            RecPtr::from_slot(*a).expect("entry"),
            RecPtr::from_slot(*b).expect("entry"),
        );
        key_of(a, key).cmp(&key_of(b, key))
    });
    let mut kept = 0;
    for i in 0..slots.len() {
        let last_of_its_key = i + 1 == slots.len() || {
            let (a, b) = (
                RecPtr::from_slot(slots[i]).expect("entry"),
                RecPtr::from_slot(slots[i + 1]).expect("entry"),
            );
            key_of(a, key) != key_of(b, key)
        };
        if last_of_its_key {
            slots[kept] = slots[i];
            kept += 1;
        }
    }
    // SAFETY: `kept <= len`.
    unsafe { rec.truncate(e.offset, kept) };
}
