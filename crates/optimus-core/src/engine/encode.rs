//! The encode walker: arena records to protobuf wire bytes, deterministic, in two passes.
//!
//! The size pass walks the set fields (the presence bits, in number order) and records every
//! sub-message's and map entry's length in pre-order; the write pass walks the same fields in
//! the same order, takes each length from that cache, and fills an output grown once to the
//! total. Map entries come out sorted by key, unknown fields last: byte-identical to Google
//! protobuf's deterministic serialization.

use optimus_schema::{Entry, MessageId, Scalar, SchemaSet, Shape, Table, WireType};

use crate::binary::varint::{varint_len, zigzag32, zigzag64};
use crate::record::{read_le, RecPtr, Seq, View};

/// The state of one encode: the schema and the sub-message length cache (reused).
pub(crate) struct Encoder<'a> {
    pub(crate) schema: &'a SchemaSet,
    pub(crate) sizes: &'a mut Vec<u32>,
    pub(crate) next: usize,
}

/// The output of the write pass: a slice grown to the size pass's total and a position.
pub(crate) struct Sink<'o> {
    pub(crate) buf: &'o mut [u8],
    pub(crate) pos: usize,
}

impl Sink<'_> {
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) {
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }

    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.buf[self.pos] = b;
        self.pos += 1;
    }

    #[inline(always)]
    fn varint(&mut self, mut v: u64) {
        if v < 0x80 {
            return self.byte(v as u8);
        }
        while v >= 0x80 {
            self.byte(v as u8 | 0x80);
            v >>= 7;
        }
        self.byte(v as u8);
    }

    /// The entry's precomputed tag bytes (a five-byte tag from its number).
    #[inline(always)]
    fn tag(&mut self, e: &Entry) {
        let len = e.tag_len();
        if len <= 4 {
            self.put(&e.tag.to_le_bytes()[..len]);
        } else {
            self.varint(u64::from(e.tag_value()));
        }
    }
}

/// The value of a scalar slot as the bits the wire form converts.
#[inline(always)]
fn load(rec_bytes: &[u8], scalar: Scalar) -> u64 {
    match scalar.width() {
        1 => u64::from(rec_bytes[0]),
        4 => u64::from(read_le::<u32>(rec_bytes)),
        _ => read_le::<u64>(rec_bytes),
    }
}

/// Bytes a scalar's value takes on the wire (without its tag). `bits` is [`load`]'s value.
#[inline(always)]
fn scalar_size(scalar: Scalar, bits: u64, view: Option<View>) -> usize {
    match scalar {
        Scalar::Int32 | Scalar::OpenEnum | Scalar::ClosedEnum => {
            varint_len(bits as u32 as i32 as i64 as u64)
        }
        Scalar::Uint32 | Scalar::Int64 | Scalar::Uint64 => varint_len(bits),
        Scalar::Sint32 => varint_len(u64::from(zigzag32(bits as u32 as i32))),
        Scalar::Sint64 => varint_len(zigzag64(bits as i64)),
        Scalar::Bool => 1,
        Scalar::Fixed32 | Scalar::Sfixed32 | Scalar::Float => 4,
        Scalar::Fixed64 | Scalar::Sfixed64 | Scalar::Double => 8,
        Scalar::String | Scalar::Bytes => {
            // SAFETY: a string or bytes slot holds a view made by the decoder or a setter.
            let len = unsafe { view.expect("a view for a bytes-like value").bytes() }.len();
            varint_len(len as u64) + len
        }
        Scalar::Message | Scalar::Group => unreachable!("messages are sized by the walker"),
    }
}

#[inline(always)]
fn write_scalar(out: &mut Sink<'_>, scalar: Scalar, bits: u64, view: Option<View>) {
    match scalar {
        Scalar::Int32 | Scalar::OpenEnum | Scalar::ClosedEnum => {
            out.varint(bits as u32 as i32 as i64 as u64)
        }
        Scalar::Uint32 | Scalar::Int64 | Scalar::Uint64 => out.varint(bits),
        Scalar::Sint32 => out.varint(u64::from(zigzag32(bits as u32 as i32))),
        Scalar::Sint64 => out.varint(zigzag64(bits as i64)),
        Scalar::Bool => out.byte(bits as u8),
        Scalar::Fixed32 | Scalar::Sfixed32 | Scalar::Float => out.put(&(bits as u32).to_le_bytes()),
        Scalar::Fixed64 | Scalar::Sfixed64 | Scalar::Double => out.put(&bits.to_le_bytes()),
        Scalar::String | Scalar::Bytes => {
            // SAFETY: as in `scalar_size`.
            let bytes = unsafe { view.expect("a view for a bytes-like value").bytes() };
            out.varint(bytes.len() as u64);
            out.put(bytes);
        }
        Scalar::Message | Scalar::Group => unreachable!("messages are written by the walker"),
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

/// Indices of the set fields of a record, in number order.
#[inline(always)]
fn for_each_set(rec: RecPtr, table: &Table, mut f: impl FnMut(usize)) {
    for w in 0..table.presence_words as usize {
        // SAFETY: `w` is below the table's presence word count.
        let mut bits = unsafe { rec.presence_word(w) };
        while bits != 0 {
            let i = w * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            f(i);
        }
    }
}

impl Encoder<'_> {
    /// Size of record `rec` of type `id` on the wire (its fields and unknown bytes), pushing
    /// its sub-messages' lengths in pre-order.
    pub(crate) fn size(&mut self, rec: RecPtr, id: u32) -> usize {
        let table = &self.schema.message(MessageId(id)).table;
        let mut size = 0;
        for_each_set(rec, table, |i| {
            let e = &table.entries[i];
            size += self.field_size(rec, table, e);
        });
        // SAFETY: `unknown_offset` holds the record's unknown bytes.
        size + unsafe { rec.read::<Seq>(table.unknown_offset) }.len()
    }

    fn field_size(&mut self, rec: RecPtr, table: &Table, e: &Entry) -> usize {
        let scalar = e.op.scalar();
        let tag = e.tag_len();
        match e.op.shape() {
            Shape::Single if scalar.is_message() => {
                // SAFETY: a set single message slot holds a record pointer of its type.
                let sub = RecPtr::from_slot(unsafe { rec.read::<*mut u8>(e.offset) });
                self.message_size(sub, table.sub_message(e), scalar, tag)
            }
            Shape::Single => {
                // SAFETY: `e` is a single scalar entry of `rec`'s table.
                let (bits, view) = unsafe { single(rec, e) };
                tag + scalar_size(scalar, bits, view)
            }
            Shape::Repeated | Shape::Packed => {
                // SAFETY: a sequence entry's slot holds its sequence of `width`-byte values.
                let seq: Seq = unsafe { rec.read(e.offset) };
                let width = scalar.width() as usize;
                // SAFETY: as above.
                let raw = unsafe { seq.raw(width) };
                if scalar.is_message() {
                    let sub_id = table.sub_message(e);
                    raw.chunks_exact(8)
                        .map(|p| {
                            self.message_size(RecPtr::from_slot(read_le(p)), sub_id, scalar, tag)
                        })
                        .sum()
                } else if e.op.shape() == Shape::Packed {
                    if seq.len() == 0 {
                        return 0;
                    }
                    let body = packed_body_size(scalar, raw);
                    tag + varint_len(body as u64) + body
                } else {
                    raw.chunks_exact(width)
                        .map(|v| tag + element_size(scalar, v))
                        .sum()
                }
            }
            Shape::Map => {
                let entry_id = table.sub_message(e);
                let entry_table = &self.schema.message(MessageId(entry_id)).table;
                canonicalize_map(rec, e, entry_table);
                // SAFETY: a map slot holds a sequence of entry record pointers.
                let raw = unsafe { rec.read::<Seq>(e.offset).raw(8) };
                let mut size = 0;
                for p in raw.chunks_exact(8) {
                    let entry = RecPtr::from_slot(read_le(p)).expect("map entries are records");
                    let slot = self.sizes.len();
                    self.sizes.push(0);
                    let body = self.entry_body_size(entry, entry_table);
                    self.sizes[slot] = body as u32;
                    size += tag + varint_len(body as u64) + body;
                }
                size
            }
        }
    }

    /// A map entry's key and value, both written even when zero (as Google protobuf does).
    fn entry_body_size(&mut self, entry: RecPtr, entry_table: &Table) -> usize {
        let mut size = 0;
        for (i, e) in entry_table.entries.iter().take(2).enumerate() {
            let scalar = e.op.scalar();
            if scalar.is_message() {
                // SAFETY: entry `i` of a map entry record is its key or value.
                let sub = unsafe { entry.has(i) }
                    .then(|| RecPtr::from_slot(unsafe { entry.read::<*mut u8>(e.offset) }))
                    .flatten();
                size += self.message_size(sub, entry_table.sub_message(e), scalar, e.tag_len());
            } else {
                // SAFETY: as above.
                let (bits, view) = unsafe { map_part(entry, i, e, self.schema, entry_table) };
                size += e.tag_len() + scalar_size(scalar, bits, view);
            }
        }
        size
    }

    /// Size of a message value with its tag: length-prefixed, or a group between its tags.
    fn message_size(
        &mut self,
        sub: Option<RecPtr>,
        sub_id: u32,
        scalar: Scalar,
        tag: usize,
    ) -> usize {
        if scalar == Scalar::Group {
            let body = sub.map_or(0, |s| self.size(s, sub_id));
            return 2 * tag + body;
        }
        let slot = self.sizes.len();
        self.sizes.push(0);
        let body = sub.map_or(0, |s| self.size(s, sub_id));
        self.sizes[slot] = body as u32;
        tag + varint_len(body as u64) + body
    }

    #[inline(always)]
    fn take(&mut self) -> usize {
        let len = self.sizes[self.next];
        self.next += 1;
        len as usize
    }

    /// Writes record `rec` of type `id`: its set fields in number order, then unknown bytes.
    pub(crate) fn write(&mut self, rec: RecPtr, id: u32, out: &mut Sink<'_>) {
        let table = &self.schema.message(MessageId(id)).table;
        for_each_set(rec, table, |i| {
            let e = &table.entries[i];
            self.write_field(rec, table, e, out);
        });
        // SAFETY: `unknown_offset` holds the record's unknown bytes.
        out.put(unsafe { rec.read::<Seq>(table.unknown_offset).raw(1) });
    }

    fn write_field(&mut self, rec: RecPtr, table: &Table, e: &Entry, out: &mut Sink<'_>) {
        let scalar = e.op.scalar();
        match e.op.shape() {
            Shape::Single if scalar.is_message() => {
                // SAFETY: as in `field_size`.
                let sub = RecPtr::from_slot(unsafe { rec.read::<*mut u8>(e.offset) });
                self.write_message(sub, table.sub_message(e), e, out);
            }
            Shape::Single => {
                // SAFETY: `e` is a single scalar entry of `rec`'s table.
                let (bits, view) = unsafe { single(rec, e) };
                out.tag(e);
                write_scalar(out, scalar, bits, view);
            }
            Shape::Repeated | Shape::Packed => {
                let width = scalar.width() as usize;
                // SAFETY: as in `field_size`.
                let seq: Seq = unsafe { rec.read(e.offset) };
                // SAFETY: as above.
                let raw = unsafe { seq.raw(width) };
                if scalar.is_message() {
                    let sub_id = table.sub_message(e);
                    for p in raw.chunks_exact(8) {
                        self.write_message(RecPtr::from_slot(read_le(p)), sub_id, e, out);
                    }
                } else if e.op.shape() == Shape::Packed {
                    if seq.len() == 0 {
                        return;
                    }
                    out.tag(e);
                    out.varint(packed_body_size(scalar, raw) as u64);
                    for v in raw.chunks_exact(width) {
                        write_element(out, scalar, v);
                    }
                } else {
                    for v in raw.chunks_exact(width) {
                        out.tag(e);
                        write_element(out, scalar, v);
                    }
                }
            }
            Shape::Map => {
                let entry_table = &self.schema.message(MessageId(table.sub_message(e))).table;
                // SAFETY: a map slot holds a sequence of entry record pointers.
                let raw = unsafe { rec.read::<Seq>(e.offset).raw(8) };
                for p in raw.chunks_exact(8) {
                    let entry = RecPtr::from_slot(read_le(p)).expect("map entries are records");
                    out.tag(e);
                    out.varint(self.take() as u64);
                    for (i, part) in entry_table.entries.iter().take(2).enumerate() {
                        let scalar = part.op.scalar();
                        if scalar.is_message() {
                            // SAFETY: as in `entry_body_size`.
                            let sub = unsafe { entry.has(i) }
                                .then(|| {
                                    RecPtr::from_slot(unsafe { entry.read::<*mut u8>(part.offset) })
                                })
                                .flatten();
                            self.write_message(sub, entry_table.sub_message(part), part, out);
                        } else {
                            // SAFETY: as above.
                            let (bits, view) =
                                unsafe { map_part(entry, i, part, self.schema, entry_table) };
                            out.tag(part);
                            write_scalar(out, scalar, bits, view);
                        }
                    }
                }
            }
        }
    }

    fn write_message(&mut self, sub: Option<RecPtr>, sub_id: u32, e: &Entry, out: &mut Sink<'_>) {
        if e.op.scalar() == Scalar::Group {
            out.tag(e);
            if let Some(s) = sub {
                self.write(s, sub_id, out);
            }
            out.varint(u64::from(e.number << 3 | WireType::EndGroup as u32));
            return;
        }
        out.tag(e);
        let len = self.take();
        out.varint(len as u64);
        if let Some(s) = sub {
            self.write(s, sub_id, out);
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

/// One element's wire size (a value of `scalar` in its `width` record bytes).
#[inline(always)]
fn element_size(scalar: Scalar, v: &[u8]) -> usize {
    if scalar.is_bytes_like() {
        scalar_size(scalar, 0, Some(read_le::<View>(v)))
    } else {
        scalar_size(scalar, load(v, scalar), None)
    }
}

#[inline(always)]
fn write_element(out: &mut Sink<'_>, scalar: Scalar, v: &[u8]) {
    if scalar.is_bytes_like() {
        write_scalar(out, scalar, 0, Some(read_le::<View>(v)));
    } else {
        write_scalar(out, scalar, load(v, scalar), None);
    }
}

/// Size of a packed run's body.
fn packed_body_size(scalar: Scalar, raw: &[u8]) -> usize {
    match scalar.wire_type() {
        WireType::Fixed32 => raw.len() / scalar.width() as usize * 4,
        WireType::Fixed64 => raw.len(),
        _ => raw
            .chunks_exact(scalar.width() as usize)
            .map(|v| element_size(scalar, v))
            .sum(),
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
fn canonicalize_map(rec: RecPtr, e: &Entry, entry_table: &Table) {
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
