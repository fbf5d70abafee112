//! The encode walker: arena records to protobuf wire bytes, deterministic, in one pass
//! written backwards (upb's encoder does the same).
//!
//! Fields are written from the last to the first into the end of a buffer that grows toward
//! its front, so a sub-message's length is known when its body is done and goes in front of
//! it: no size pass and no length cache. Fields come out in number order (the presence bits
//! walked from the top), map entries sorted by key, unknown fields last — byte-identical to
//! Google protobuf's deterministic serialization.

use optimus_schema::{Entry, MessageId, Scalar, SchemaSet, Shape, Table, WireType};

use crate::binary::varint::{short_varint, spread_groups, varint_len, zigzag32, zigzag64};
use crate::record::{copy_short, read_le, sub_type, RecPtr, Seq, View};

/// A buffer written from its end toward its front: the bytes written are `buf[pos..]`.
#[derive(Default)]
pub(crate) struct Back {
    buf: Vec<u8>,
    pos: usize,
    /// The entries of the maps being written, in key order (a stack: a nested map's after
    /// its parent's).
    map_entries: Vec<RecPtr>,
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

    /// A cursor at the write position, to write through until [`Back::settle`].
    #[inline(always)]
    fn cursor(&mut self) -> Cursor {
        Cursor {
            base: self.buf.as_mut_ptr(),
            pos: self.pos,
        }
    }

    /// Takes back the position a cursor wrote to.
    #[inline(always)]
    fn settle(&mut self, cursor: &Cursor) {
        self.pos = cursor.pos;
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
        let mut c = self.cursor();
        // SAFETY: reserved just above.
        unsafe { c.put(bytes) };
        self.settle(&c);
    }

    #[inline(always)]
    fn varint(&mut self, v: u64) {
        self.reserve(MAX_VARINT);
        let mut c = self.cursor();
        // SAFETY: reserved just above.
        unsafe { c.varint(v) };
        self.settle(&c);
    }

    /// Writes a tag from its [`Table::tag_words`] word.
    #[inline(always)]
    fn tag_word(&mut self, word: u64) {
        self.reserve(MAX_TAG_ROOM);
        let mut c = self.cursor();
        // SAFETY: reserved just above.
        unsafe { c.tag_word(word) };
        self.settle(&c);
    }
}

/// The write position of a [`Back`] held apart from it while fields are written: a local
/// the compiler keeps in registers, where a `Back` behind `&mut` would be reloaded from
/// memory after every byte stored (a byte store may alias anything).
struct Cursor {
    /// The start of the buffer.
    base: *mut u8,
    /// Where the bytes written start: the room left in front of them.
    pos: usize,
}

impl Cursor {
    /// Makes sure of `n` bytes of room, growing `back` (which takes this cursor's position
    /// first) if they are not there.
    #[inline(always)]
    fn reserve(&mut self, back: &mut Back, n: usize) {
        if self.pos < n {
            back.settle(self);
            back.grow(n);
            *self = back.cursor();
        }
    }

    /// Writes `bytes` in front.
    ///
    /// # Safety
    /// `bytes.len()` bytes of room were reserved and not used since.
    #[inline(always)]
    unsafe fn put(&mut self, bytes: &[u8]) {
        debug_assert!(self.pos >= bytes.len());
        self.pos -= bytes.len();
        // SAFETY: `pos..pos + len` lies inside the buffer: the room the caller reserved.
        unsafe { copy_short(bytes, self.base.add(self.pos)) };
    }

    /// Writes one byte in front.
    ///
    /// # Safety
    /// One byte of room was reserved.
    #[inline(always)]
    unsafe fn byte(&mut self, b: u8) {
        debug_assert!(self.pos >= 1);
        self.pos -= 1;
        // SAFETY: as in `put`.
        unsafe { *self.base.add(self.pos) = b };
    }

    /// Writes `v` as a varint in front: up to eight bytes with one store of a word, each
    /// length on its own branch ([`short_varint`]); nine and ten bytes as the word, then one
    /// or two more.
    ///
    /// # Safety
    /// [`MAX_VARINT`] bytes of room were reserved (eight for a varint of at most five bytes).
    #[inline(always)]
    unsafe fn varint(&mut self, v: u64) {
        debug_assert!(self.pos >= 8);
        // SAFETY: `pos` lies inside the buffer.
        let end = unsafe { self.base.add(self.pos) };
        // SAFETY: the varint's `n` bytes, and for the word store the eight bytes before
        // `pos`, lie in the room the caller reserved; bytes of the word in front of the
        // varint are room, rewritten later.
        let written = short_varint(v, |word, n| unsafe {
            let word = word << (8 * (8 - n));
            std::ptr::copy_nonoverlapping(word.to_le_bytes().as_ptr(), end.sub(8), 8);
            self.pos -= n;
        });
        if written {
            return;
        }
        // Nine or ten bytes: the first eight groups, all continued, then the rest.
        let n = varint_len(v);
        // SAFETY: as above, the `n` bytes before `pos`.
        unsafe {
            let p = end.sub(n);
            let word = spread_groups(v) | 0x8080_8080_8080_8080;
            std::ptr::copy_nonoverlapping(word.to_le_bytes().as_ptr(), p, 8);
            let high = v >> 56;
            if n == 9 {
                *p.add(8) = high as u8;
            } else {
                *p.add(8) = high as u8 | 0x80;
                *p.add(9) = (high >> 7) as u8;
            }
        }
        self.pos -= n;
    }

    /// Writes a tag in front from its [`Table::tag_words`] word: one eight-byte store ending
    /// at the position, which then moves back by the tag's length (the word's lowest byte).
    ///
    /// # Safety
    /// [`MAX_TAG_ROOM`] bytes of room were reserved.
    #[inline(always)]
    unsafe fn tag_word(&mut self, word: u64) {
        debug_assert!(self.pos >= 8);
        // SAFETY: the eight bytes before `pos` are reserved room; the tag is their last
        // `len` bytes, those before it are room still.
        unsafe {
            std::ptr::copy_nonoverlapping(
                word.to_le_bytes().as_ptr(),
                self.base.add(self.pos - 8),
                8,
            )
        };
        self.pos -= usize::from(word as u8);
    }
}

/// Longest varint.
const MAX_VARINT: usize = 10;
/// Room a tag's store takes: its word's eight bytes.
const MAX_TAG_ROOM: usize = 8;
/// Room for a scalar field whole: its tag and its longest value (strings add their length).
const FIELD_ROOM: usize = MAX_TAG_ROOM + MAX_VARINT;

/// Writes one scalar field's value (not a message) held in `raw`, its record bytes, and its
/// tag (`tag_word`) in front of it.
#[inline(always)]
fn scalar_field(out: &mut Back, e: &Entry, tag_word: u64, raw: &[u8]) {
    let scalar = e.op.scalar();
    if scalar.is_bytes_like() {
        // SAFETY: a string or bytes slot holds a view made by the decoder or a setter, of
        // memory that outlives the record.
        let bytes = unsafe { read_le::<View>(raw).bytes() };
        out.reserve(bytes.len() + FIELD_ROOM);
        let mut c = out.cursor();
        // SAFETY: reserved just above: the bytes, their length's varint and the tag.
        unsafe {
            c.put(bytes);
            c.varint(bytes.len() as u64);
            c.tag_word(tag_word);
        }
        out.settle(&c);
        return;
    }
    element(out, scalar, raw);
    out.tag_word(tag_word);
}

/// Writes one packed element (no tag).
#[inline(always)]
fn element(out: &mut Back, scalar: Scalar, raw: &[u8]) {
    out.reserve(MAX_VARINT);
    let mut c = out.cursor();
    // SAFETY: reserved just above, for every arm: a value of at most ten bytes.
    unsafe {
        match scalar {
            Scalar::Int32 | Scalar::OpenEnum | Scalar::ClosedEnum => {
                c.varint(read_le::<i32>(raw) as i64 as u64)
            }
            Scalar::Uint32 => c.varint(u64::from(read_le::<u32>(raw))),
            Scalar::Int64 | Scalar::Uint64 => c.varint(read_le::<u64>(raw)),
            Scalar::Sint32 => c.varint(u64::from(zigzag32(read_le::<i32>(raw)))),
            Scalar::Sint64 => c.varint(zigzag64(read_le::<i64>(raw))),
            Scalar::Bool => c.byte(raw[0]),
            Scalar::Fixed32 | Scalar::Sfixed32 | Scalar::Float => c.put(&raw[..4]),
            Scalar::Fixed64 | Scalar::Sfixed64 | Scalar::Double => c.put(&raw[..8]),
            _ => unreachable!("only packable scalars are packed"),
        }
    }
    out.settle(&c);
}

/// Writes record `rec` of type `id`: unknown bytes last, set fields before them in number
/// order (so, backwards: unknown bytes first, then fields from the highest set bit down).
pub(crate) fn message(schema: &SchemaSet, rec: RecPtr, id: u32, out: &mut Back) {
    message_in(schema, rec, &schema.message(MessageId(id)).table, out);
}

/// Writes record `rec` laid out by `table` (its type's), as [`message`] does.
fn message_in(schema: &SchemaSet, rec: RecPtr, table: &Table, out: &mut Back) {
    // SAFETY: `unknown_offset` holds the record's unknown bytes.
    let unknown = unsafe { rec.read::<Seq>(table.unknown_offset) };
    if unknown.len() > 0 {
        // SAFETY: as above.
        out.put(unsafe { unknown.raw(1) });
    }
    let (entries, tag_words) = (&table.entries[..], table.tag_words());
    let mut cursor = out.cursor();
    for w in (0..table.presence_words as usize).rev() {
        // SAFETY: `w` is below the table's presence word count.
        let mut bits = unsafe { rec.presence_word(w) };
        while bits != 0 {
            let top = 63 - bits.leading_zeros() as usize;
            bits &= !(1u64 << top);
            let i = w * 64 + top;
            debug_assert!(i < entries.len() && i < tag_words.len());
            // SAFETY: a record's presence bit `i` is set for entry `i` of its table alone
            // (its setters and the decoder set no other), and the table has a tag word per
            // entry.
            let (e, tag_word) = unsafe { (entries.get_unchecked(i), *tag_words.get_unchecked(i)) };
            field(schema, rec, table, e, tag_word, out, &mut cursor);
        }
    }
    out.settle(&cursor);
}

/// Writes one set field (backwards: values, then the tag in front, from its `tag_word`)
/// through the cursor `c`, which `out` takes back around a sub-message or sequence. A single
/// field is one jump on its op code to an arm that reads its slot by type; sequences, maps and
/// groups leave for [`sequence_field`].
#[inline(always)]
fn field(
    schema: &SchemaSet,
    rec: RecPtr,
    table: &Table,
    e: &Entry,
    tag_word: u64,
    out: &mut Back,
    c: &mut Cursor,
) {
    use super::single::*;
    let off = e.offset;
    c.reserve(out, FIELD_ROOM);
    // SAFETY: for every arm, `e` is a single entry of `rec`'s table whose slot at `off` holds
    // a value of the arm's type, and the room reserved above takes the value and the tag
    // (strings reserve their bytes too).
    unsafe {
        match e.op.code() {
            INT32 | OPEN_ENUM | CLOSED_ENUM => c.varint(rec.read::<i32>(off) as i64 as u64),
            UINT32 => c.varint(u64::from(rec.read::<u32>(off))),
            INT64 | UINT64 => c.varint(rec.read::<u64>(off)),
            SINT32 => c.varint(u64::from(zigzag32(rec.read::<i32>(off)))),
            SINT64 => c.varint(zigzag64(rec.read::<i64>(off))),
            BOOL => c.byte(rec.read::<u8>(off)),
            FIXED32 | SFIXED32 | FLOAT => c.put(&rec.read::<u32>(off).to_le_bytes()),
            FIXED64 | SFIXED64 | DOUBLE => c.put(&rec.read::<u64>(off).to_le_bytes()),
            STRING | BYTES => {
                let bytes = rec.read::<View>(off).bytes();
                c.reserve(out, bytes.len() + FIELD_ROOM);
                c.put(bytes);
                c.varint(bytes.len() as u64);
            }
            MESSAGE => {
                if let Some(sub) = RecPtr::from_slot(rec.read::<*mut u8>(off)) {
                    out.settle(c);
                    let before = out.written();
                    message_in(schema, sub, &sub_type(table, e).table, out);
                    let len = out.written() - before;
                    *c = out.cursor();
                    c.reserve(out, FIELD_ROOM);
                    c.varint(len as u64);
                } else {
                    c.byte(0);
                }
            }
            GROUP => {
                out.settle(c);
                let sub = RecPtr::from_slot(rec.read::<*mut u8>(off));
                message_value(schema, sub, &sub_type(table, e).table, e, tag_word, out);
                *c = out.cursor();
                return;
            }
            _ => {
                out.settle(c);
                sequence_field(schema, rec, table, e, tag_word, out);
                *c = out.cursor();
                return;
            }
        }
        c.tag_word(tag_word);
    }
}

/// Writes a repeated, packed or map field.
#[inline(never)]
fn sequence_field(
    schema: &SchemaSet,
    rec: RecPtr,
    table: &Table,
    e: &Entry,
    tag_word: u64,
    out: &mut Back,
) {
    let scalar = e.op.scalar();
    match e.op.shape() {
        Shape::Single => unreachable!("single fields are written by `field`"),
        Shape::Repeated | Shape::Packed => {
            let width = scalar.width() as usize;
            // SAFETY: a sequence entry's slot holds its sequence of `width`-byte values.
            let raw = unsafe { rec.read::<Seq>(e.offset).raw(width) };
            if scalar.is_message() {
                let elem_table = &sub_type(table, e).table;
                for p in raw.rchunks_exact(8) {
                    let sub = RecPtr::from_slot(read_le(p));
                    message_value(schema, sub, elem_table, e, tag_word, out);
                }
            } else if e.op.shape() == Shape::Packed {
                if raw.is_empty() {
                    return;
                }
                let end = out.written();
                for v in raw.rchunks_exact(width) {
                    element(out, scalar, v);
                }
                out.varint((out.written() - end) as u64);
                out.tag_word(tag_word);
            } else {
                for v in raw.rchunks_exact(width) {
                    scalar_field(out, e, tag_word, v);
                }
            }
        }
        Shape::Map => map(schema, rec, table, e, tag_word, out),
    }
}

/// Writes a message value: a length-prefixed body, or a group between its tags (the start
/// tag from `tag_word`).
fn message_value(
    schema: &SchemaSet,
    sub: Option<RecPtr>,
    sub_table: &Table,
    e: &Entry,
    tag_word: u64,
    out: &mut Back,
) {
    if e.op.scalar() == Scalar::Group {
        out.varint(u64::from(e.number << 3 | WireType::EndGroup as u32));
        if let Some(s) = sub {
            message_in(schema, s, sub_table, out);
        }
        out.tag_word(tag_word);
        return;
    }
    let end = out.written();
    if let Some(s) = sub {
        message_in(schema, s, sub_table, out);
    }
    out.varint((out.written() - end) as u64);
    out.tag_word(tag_word);
}

/// Writes a map's entries sorted by key, each with key and value even when zero (as
/// Google protobuf does).
#[inline(never)]
fn map(schema: &SchemaSet, rec: RecPtr, table: &Table, e: &Entry, tag_word: u64, out: &mut Back) {
    let entry_table = &sub_type(table, e).table;
    let start = sorted_entries(rec, e, entry_table, &mut out.map_entries);
    // Last to first; a map in an entry's value appends its own after these and takes them
    // off again before the next is read.
    for k in (start..out.map_entries.len()).rev() {
        let entry = out.map_entries[k];
        let end = out.written();
        for (i, part) in entry_table.entries.iter().take(2).enumerate().rev() {
            let (scalar, part_tag) = (part.op.scalar(), entry_table.tag_words()[i]);
            if scalar.is_message() {
                // SAFETY: entry `i` of a map entry record is its key or value.
                let sub = unsafe { entry.has(i) }
                    // SAFETY: as above: a set message slot holds a record pointer.
                    .then(|| RecPtr::from_slot(unsafe { entry.read::<*mut u8>(part.offset) }))
                    .flatten();
                message_value(
                    schema,
                    sub,
                    &sub_type(entry_table, part).table,
                    part,
                    part_tag,
                    out,
                );
            } else {
                // SAFETY: as above.
                let (bits, view) = unsafe { map_part(entry, i, part, schema, entry_table) };
                let mut raw = [0u8; 16];
                match view {
                    Some(v) => raw.copy_from_slice(crate::record::bytes_of(&v)),
                    None => raw[..8].copy_from_slice(&bits.to_le_bytes()),
                }
                scalar_field(out, part, part_tag, &raw);
            }
        }
        out.varint((out.written() - end) as u64);
        out.tag_word(tag_word);
    }
    out.map_entries.truncate(start);
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

/// Appends a map's entries to `sorted` in key order, the last of equal keys only (a decoded
/// map may hold a key twice; the last one wins), and returns where they start. The record is
/// not changed: readers may hold its entries while it is written.
pub(crate) fn sorted_entries(
    rec: RecPtr,
    e: &Entry,
    entry_table: &Table,
    sorted: &mut Vec<RecPtr>,
) -> usize {
    let key = &entry_table.entries[0];
    // SAFETY: a map slot holds a sequence of 8-byte entry record pointers.
    let raw = unsafe { rec.read::<Seq>(e.offset).raw(8) };
    let start = sorted.len();
    sorted.extend(
        raw.chunks_exact(8)
            .map(|p| RecPtr::from_slot(read_le(p)).expect("map entries are records")),
    );
    let entries = &mut sorted[start..];
    let in_order = entries
        .windows(2)
        .all(|w| key_of(w[0], key) < key_of(w[1], key));
    if in_order {
        return start;
    }
    // Stable, so equal keys keep their arrival order and the last can win.
    entries.sort_by(|&a, &b| key_of(a, key).cmp(&key_of(b, key)));
    let mut kept = 0;
    for i in 0..entries.len() {
        let last_of_its_key =
            i + 1 == entries.len() || key_of(entries[i], key) != key_of(entries[i + 1], key);
        if last_of_its_key {
            entries[kept] = entries[i];
            kept += 1;
        }
    }
    sorted.truncate(start + kept);
    start
}
