//! The reflective view over arena records: [`Record`] reads a field by index as a
//! [`FieldRef`], and converts to and from the reflective [`Message`] tree.

use optimus_schema::{Entry, MessageId, Scalar, SchemaSet, Shape, Table};

use crate::record::{bytes_of, read_le, Arena, Life, RecPtr, Seq, View};
use crate::value::{List, Map, MapKey, Value};
use crate::Message;

/// A message in an arena: a record laid out by its type's op table. Cheap to copy; valid as
/// long as the arena (and, for a borrowing decode, the input) it was made from.
#[derive(Clone, Copy)]
pub struct Record<'a> {
    schema: &'a SchemaSet,
    id: MessageId,
    pub(crate) ptr: RecPtr,
    _life: Life<'a>,
}

impl std::fmt::Debug for Record<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record")
            .field("type", &self.schema.message(self.id).full_name)
            .field("set_fields", &self.set_fields().collect::<Vec<_>>())
            .finish()
    }
}

/// One value read from a record: a scalar, a string or bytes view, or a sub-message.
#[derive(Debug, Clone, Copy)]
pub enum FieldRef<'a> {
    /// `bool`.
    Bool(bool),
    /// `int32`, `sint32`, `sfixed32`.
    I32(i32),
    /// `int64`, `sint64`, `sfixed64`.
    I64(i64),
    /// `uint32`, `fixed32`.
    U32(u32),
    /// `uint64`, `fixed64`.
    U64(u64),
    /// `float`.
    F32(f32),
    /// `double`.
    F64(f64),
    /// An enum value number.
    Enum(i32),
    /// `string`, checked UTF-8.
    Str(&'a str),
    /// `bytes`.
    Bytes(&'a [u8]),
    /// A sub-message or group (for a map: an entry, key at index 0 and value at 1).
    Message(Record<'a>),
}

impl<'a> Record<'a> {
    /// A view of `ptr`, a record of type `id` made for `schema` in an arena living for `'a`.
    pub(crate) fn new(schema: &'a SchemaSet, id: MessageId, ptr: RecPtr) -> Record<'a> {
        Record {
            schema,
            id,
            ptr,
            _life: Life::default(),
        }
    }

    /// An empty message of type `id` in `arena`.
    ///
    /// # Panics
    /// If `id` does not come from `schema`.
    pub fn new_in(schema: &'a SchemaSet, id: MessageId, arena: &'a Arena) -> Record<'a> {
        Record::new(schema, id, RecPtr::new(arena, &schema.message(id).table))
    }

    /// The message's type.
    pub fn type_id(&self) -> MessageId {
        self.id
    }

    /// The schema the record is laid out by.
    pub fn schema(&self) -> &'a SchemaSet {
        self.schema
    }

    fn table(&self) -> &'a Table {
        &self.schema.message(self.id).table
    }

    /// Whether the field at `index` (in the type's `fields`) is set; `false` past the end.
    pub fn has(&self, index: usize) -> bool {
        // SAFETY: `index` is checked to be an entry of this record's table.
        index < self.table().entries.len() && unsafe { self.ptr.has(index) }
    }

    /// The instance schema: indices of the set fields, in field-number order.
    pub fn set_fields(&self) -> impl Iterator<Item = usize> + 'a {
        let ptr = self.ptr;
        let words = self.table().presence_words as usize;
        (0..words).flat_map(move |w| {
            // SAFETY: `w` is below the table's presence word count.
            let mut bits = unsafe { ptr.presence_word(w) };
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let i = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    i
                })
            })
        })
    }

    /// The value of the single field at `index`, if it is set and not a sequence.
    pub fn get(&self, index: usize) -> Option<FieldRef<'a>> {
        let e = self.table().entries.get(index)?;
        if !self.has(index) || e.op.shape() != Shape::Single {
            return None;
        }
        // SAFETY: `e` is entry `index` of this record's table, a single value.
        let raw = unsafe { slot_bytes(self.ptr, e) };
        Some(self.decode_value(e, raw))
    }

    /// The values of the repeated field (or map entries) at `index`, in order.
    pub fn elements(&self, index: usize) -> impl Iterator<Item = FieldRef<'a>> + 'a {
        let this = *self;
        let entry = self
            .table()
            .entries
            .get(index)
            .filter(|e| e.op.shape().is_sequence() && self.has(index));
        let (raw, width) = match entry {
            Some(e) => {
                let width = e.op.scalar().width() as usize;
                // SAFETY: `e` is a sequence entry of this record's table.
                (unsafe { self.ptr.read::<Seq>(e.offset).raw(width) }, width)
            }
            None => (&[][..], 1),
        };
        let e = entry.copied();
        raw.chunks_exact(width).map(move |v| {
            this.decode_value(e.as_ref().expect("elements exist only for an entry"), v)
        })
    }

    /// The bytes of fields the type does not know, in wire format, in arrival order.
    pub fn unknown_fields(&self) -> &'a [u8] {
        // SAFETY: `unknown_offset` holds the record's unknown bytes.
        unsafe { self.ptr.read::<Seq>(self.table().unknown_offset).raw(1) }
    }

    /// The value of the single field of entry `e`, which the caller knows is set (the
    /// walkers' path: no index or presence check).
    ///
    /// # Safety
    /// `e` is a single-shape entry of this record's table.
    #[inline(always)]
    pub(crate) unsafe fn single_unchecked(&self, e: &Entry) -> FieldRef<'a> {
        // SAFETY: the caller's duty.
        let raw = unsafe { slot_bytes(self.ptr, e) };
        self.decode_value(e, raw)
    }

    /// A value of entry `e` from its record bytes (a slot or a sequence element).
    #[inline(always)]
    fn decode_value(&self, e: &Entry, raw: &[u8]) -> FieldRef<'a> {
        let scalar = e.op.scalar();
        match scalar {
            Scalar::Bool => FieldRef::Bool(raw[0] != 0),
            Scalar::Int32 | Scalar::Sint32 | Scalar::Sfixed32 => FieldRef::I32(read_le(raw)),
            Scalar::Int64 | Scalar::Sint64 | Scalar::Sfixed64 => FieldRef::I64(read_le(raw)),
            Scalar::Uint32 | Scalar::Fixed32 => FieldRef::U32(read_le(raw)),
            Scalar::Uint64 | Scalar::Fixed64 => FieldRef::U64(read_le(raw)),
            Scalar::Float => FieldRef::F32(read_le(raw)),
            Scalar::Double => FieldRef::F64(read_le(raw)),
            Scalar::OpenEnum | Scalar::ClosedEnum => FieldRef::Enum(read_le(raw)),
            Scalar::String => {
                // SAFETY: string views are made from checked UTF-8 in memory living for 'a.
                let bytes = unsafe { read_le::<View>(raw).bytes() };
                // SAFETY: checked once, when decoded or set.
                FieldRef::Str(unsafe { std::str::from_utf8_unchecked(bytes) })
            }
            // SAFETY: bytes views point into memory living for 'a.
            Scalar::Bytes => FieldRef::Bytes(unsafe { read_le::<View>(raw).bytes() }),
            Scalar::Message | Scalar::Group => {
                let table = self.table();
                let sub =
                    RecPtr::from_slot(read_le(raw)).expect("a set message slot holds a record");
                FieldRef::Message(Record::new(
                    self.schema,
                    MessageId(table.sub_message(e)),
                    sub,
                ))
            }
        }
    }

    /// The reflective [`Message`] tree with the same content.
    pub fn to_message(&self) -> Message {
        let schema = self.schema;
        let ty = schema.message(self.id);
        let mut msg = Message::new(schema, self.id);
        for index in self.set_fields() {
            let e = &ty.table.entries[index];
            let field = &ty.fields[index];
            let value = match e.op.shape() {
                Shape::Single => to_value(self.get(index).expect("a set single field")),
                Shape::Repeated | Shape::Packed => {
                    let mut list = List::new(field.kind);
                    for v in self.elements(index) {
                        list.push(to_value(v))
                            .expect("elements of the field's kind");
                    }
                    Value::List(list)
                }
                Shape::Map => {
                    let mut map = Map::new();
                    for entry in self.elements(index) {
                        let FieldRef::Message(entry) = entry else {
                            unreachable!("map entries")
                        };
                        let (key, value) = entry.map_entry_parts();
                        map.insert(key, value);
                    }
                    Value::Map(map)
                }
            };
            msg.set(schema, index, value)
                .expect("a record holds its fields' kinds");
        }
        msg.push_unknown(self.unknown_fields());
        msg
    }

    /// A map entry's key and value, defaults where unset (as the wire's missing parts mean).
    fn map_entry_parts(&self) -> (MapKey, Value) {
        let ty = self.schema.message(self.id);
        let part = |i: usize| match self.get(i) {
            Some(v) => to_value(v),
            None => Value::default_for(self.schema, &ty.fields[i]),
        };
        let key = part(0)
            .into_map_key()
            .expect("map keys are integers, bool or string");
        (key, part(1))
    }

    /// A record in `arena` with the content of `msg` (strings and bytes copied).
    pub fn from_message(schema: &'a SchemaSet, msg: &Message, arena: &'a Arena) -> Record<'a> {
        let rec = Record::new_in(schema, msg.type_id(), arena);
        let ty = schema.message(msg.type_id());
        for (index, value) in msg.set_values() {
            let e = &ty.table.entries[index];
            match value {
                Value::List(list) => {
                    for v in (0..list.len()).filter_map(|i| list.get(i)) {
                        // SAFETY: `e` is entry `index`, a sequence of the list's kind.
                        unsafe { store(rec.ptr, e, &v, schema, &ty.table, arena, true) };
                    }
                }
                Value::Map(map) => {
                    let entry_id = MessageId(ty.table.sub_message(e));
                    for (key, v) in map {
                        let entry = Record::new_in(schema, entry_id, arena);
                        let entry_ty = schema.message(entry_id);
                        // SAFETY: entries 0 and 1 of a map entry type are its key and value.
                        unsafe {
                            store(
                                entry.ptr,
                                &entry_ty.table.entries[0],
                                &key.to_value(),
                                schema,
                                &entry_ty.table,
                                arena,
                                false,
                            );
                            entry.ptr.set_bit(0, true);
                            store(
                                entry.ptr,
                                &entry_ty.table.entries[1],
                                v,
                                schema,
                                &entry_ty.table,
                                arena,
                                false,
                            );
                            entry.ptr.set_bit(1, true);
                            rec.ptr
                                .push(arena, e.offset, 8, bytes_of(&entry.ptr.as_slot()));
                        }
                    }
                }
                // SAFETY: `e` is entry `index`, a single value of the value's kind.
                v => unsafe { store(rec.ptr, e, v, schema, &ty.table, arena, false) },
            }
            // SAFETY: `index` is an entry of the record's table.
            unsafe { rec.ptr.set_bit(index, true) };
        }
        if !msg.unknown_fields().is_empty() {
            // SAFETY: `unknown_offset` holds the record's unknown bytes.
            unsafe {
                rec.ptr
                    .extend_bytes(arena, ty.table.unknown_offset, msg.unknown_fields())
            };
        }
        rec
    }
}

/// Reads for generated types (`optimus-build`): a field's slot at an offset the caller knows,
/// with no table lookup. A generated type checks once, when its schema is loaded, that every
/// offset and op it names is the runtime table's (and refuses to run otherwise), and wraps only
/// records of its own type; those two checks discharge the `# Safety` duties below.
impl<'a> Record<'a> {
    /// Whether presence bit `index` is set, with no bounds check.
    ///
    /// # Safety
    /// `index` is an entry index of this record's table.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn has_unchecked(&self, index: usize) -> bool {
        // SAFETY: the caller's duty.
        unsafe { self.ptr.has(index) }
    }

    /// The scalar in the single slot at `offset`.
    ///
    /// # Safety
    /// `offset` is the offset of a single-shape entry of this record's table whose value is
    /// a `T`: `u8` for `bool` (0 or 1), `i32`/`u32`/`f32` or `i64`/`u64`/`f64` for the 4- and
    /// 8-byte scalars (enums are `i32`), never a view or a pointer.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn read_slot<T: Copy>(&self, offset: u32) -> T {
        // SAFETY: the caller's duty: a `T` slot inside the record, aligned to its width.
        unsafe { self.ptr.read::<T>(offset) }
    }

    /// The string in the single slot at `offset` (empty if never set).
    ///
    /// # Safety
    /// `offset` is the offset of a single `string` entry of this record's table.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn read_str(&self, offset: u32) -> &'a str {
        // SAFETY: the caller's duty: the slot holds a view (or zeros) of memory living for
        // 'a, made from checked UTF-8 (decode and the setters check it).
        unsafe { std::str::from_utf8_unchecked(self.ptr.read::<View>(offset).bytes()) }
    }

    /// The bytes in the single slot at `offset` (empty if never set).
    ///
    /// # Safety
    /// `offset` is the offset of a single `bytes` entry of this record's table.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn read_bytes(&self, offset: u32) -> &'a [u8] {
        // SAFETY: the caller's duty: the slot holds a view (or zeros) of memory living for 'a.
        unsafe { self.ptr.read::<View>(offset).bytes() }
    }

    /// The sub-message in the single slot at `offset`, `None` if none was ever stored.
    ///
    /// # Safety
    /// `offset` is the offset of a single message or group entry of this record's table whose
    /// type is `id`.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn read_message(&self, offset: u32, id: MessageId) -> Option<Record<'a>> {
        // SAFETY: the caller's duty: the slot holds null or a record of type `id` in the arena.
        let p: *mut u8 = unsafe { self.ptr.read(offset) };
        RecPtr::from_slot(p).map(|sub| Record::new(self.schema, id, sub))
    }

    /// The values of the sequence at `offset` as a slice.
    ///
    /// # Safety
    /// `offset` is the offset of a repeated or packed entry of this record's table whose
    /// values are `T`s, as [`Record::read_slot`] names them (`u8` for `bool`).
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn read_seq<T: Copy>(&self, offset: u32) -> &'a [T] {
        // SAFETY: the caller's duty: a sequence of `T`s, each `size_of::<T>()` wide, in an
        // 8-aligned arena array living for 'a.
        unsafe {
            let seq = self.ptr.read::<Seq>(offset);
            if seq.len() == 0 {
                return &[];
            }
            let raw = seq.raw(std::mem::size_of::<T>());
            std::slice::from_raw_parts(raw.as_ptr().cast::<T>(), seq.len())
        }
    }

    /// The number of values of the repeated field (or map entries) at `index`; 0 when unset,
    /// past the end or not a sequence.
    pub fn len_of(&self, index: usize) -> usize {
        match self.table().entries.get(index) {
            // SAFETY: `e` is a sequence entry of this record's table.
            Some(e) if e.op.shape().is_sequence() => unsafe {
                self.ptr.read::<Seq>(e.offset).len()
            },
            _ => 0,
        }
    }

    /// Value `i` of the repeated field (or map entry `i`) at `index`.
    pub fn element(&self, index: usize, i: usize) -> Option<FieldRef<'a>> {
        let e = self.table().entries.get(index)?;
        if !e.op.shape().is_sequence() {
            return None;
        }
        let width = e.op.scalar().width() as usize;
        // SAFETY: `e` is a sequence entry of this record's table.
        let raw = unsafe { self.ptr.read::<Seq>(e.offset).raw(width) };
        let v = raw.get(i * width..(i + 1) * width)?;
        Some(self.decode_value(e, v))
    }
}

/// The record bytes of a single field's slot.
///
/// # Safety
/// `e` is an entry of `rec`'s table.
unsafe fn slot_bytes<'a>(rec: RecPtr, e: &Entry) -> &'a [u8] {
    let width = e.op.slot_width() as usize;
    // SAFETY: the caller's duty: the slot lies inside the record (`layout_is_sound`).
    unsafe { std::slice::from_raw_parts(rec.as_slot().add(e.offset as usize), width) }
}

/// A field value as the reflective `Value` it reads as.
pub(crate) fn to_value(v: FieldRef<'_>) -> Value {
    match v {
        FieldRef::Bool(b) => Value::Bool(b),
        FieldRef::I32(x) => Value::I32(x),
        FieldRef::I64(x) => Value::I64(x),
        FieldRef::U32(x) => Value::U32(x),
        FieldRef::U64(x) => Value::U64(x),
        FieldRef::F32(x) => Value::F32(x),
        FieldRef::F64(x) => Value::F64(x),
        FieldRef::Enum(x) => Value::Enum(x),
        FieldRef::Str(s) => Value::String(s.to_owned()),
        FieldRef::Bytes(b) => Value::Bytes(b.to_vec()),
        FieldRef::Message(m) => Value::Message(Box::new(m.to_message())),
    }
}

/// Stores one value of `e`'s kind: into its single slot, or (`append`) at the end of its
/// sequence. Each value goes from a typed local as bytes copied, so a pointer (a view or a
/// sub-record) keeps its provenance.
///
/// # Safety
/// `e` is an entry of `rec`'s table whose kind is `v`'s, single unless `append`; `rec` lives
/// in `arena`.
unsafe fn store(
    rec: RecPtr,
    e: &Entry,
    v: &Value,
    schema: &SchemaSet,
    table: &Table,
    arena: &Arena,
    append: bool,
) {
    let write = |bytes: &[u8]| {
        // SAFETY: the caller's duty: the slot (or a sequence element) is `bytes.len()` wide.
        unsafe {
            if append {
                rec.push(arena, e.offset, bytes.len(), bytes);
            } else {
                debug_assert_eq!(bytes.len(), e.op.slot_width() as usize);
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    rec.as_slot().add(e.offset as usize),
                    bytes.len(),
                );
            }
        }
    };
    match v {
        Value::Bool(b) => write(&[u8::from(*b)]),
        Value::I32(x) | Value::Enum(x) => write(&x.to_le_bytes()),
        Value::I64(x) => write(&x.to_le_bytes()),
        Value::U32(x) => write(&x.to_le_bytes()),
        Value::U64(x) => write(&x.to_le_bytes()),
        Value::F32(x) => write(&x.to_le_bytes()),
        Value::F64(x) => write(&x.to_le_bytes()),
        Value::String(s) => write(bytes_of(&arena.alloc_copy(s.as_bytes()))),
        Value::Bytes(b) => write(bytes_of(&arena.alloc_copy(b))),
        Value::Message(m) => {
            debug_assert_eq!(m.type_id().0, table.sub_message(e));
            let sub = Record::from_message(schema, m, arena).ptr.as_slot();
            write(bytes_of(&sub));
        }
        Value::List(_) | Value::Map(_) => unreachable!("sequences are set element by element"),
    }
}

#[cfg(test)]
mod tests {
    use optimus_schema::SchemaSet;

    use super::*;

    #[test]
    fn typed_reads_see_what_the_setters_stored() {
        let s = SchemaSet::from_source(
            r#"syntax = "proto3";
               message M { int32 a = 1; string s = 2; repeated int64 r = 3; M sub = 4;
                           bytes b = 5; bool f = 6; repeated string rs = 7; }"#,
        )
        .unwrap();
        let id = s.message_by_name("M").unwrap();
        let arena = Arena::new();
        let rec = Record::new_in(&s, id, &arena);
        let entries = &s.message(id).table.entries;
        let off = |i: usize| entries[i].offset;
        // SAFETY: (every block below) each offset is the named field's entry's, read as its
        // scalar's type.
        unsafe {
            assert_eq!(rec.read_slot::<i32>(off(0)), 0);
            assert_eq!(rec.read_str(off(1)), "");
            assert!(rec.read_seq::<i64>(off(2)).is_empty());
            assert!(rec.read_message(off(3), id).is_none());
        }
        rec.set(0, FieldRef::I32(-7)).unwrap();
        rec.set(1, FieldRef::Str("hi")).unwrap();
        for v in [1, i64::MIN, 3] {
            rec.push(&arena, 2, FieldRef::I64(v)).unwrap();
        }
        rec.message_mut(&arena, 3)
            .unwrap()
            .set(0, FieldRef::I32(9))
            .unwrap();
        rec.set(4, FieldRef::Bytes(b"\x00\xff")).unwrap();
        rec.set(5, FieldRef::Bool(true)).unwrap();
        rec.push(&arena, 6, FieldRef::Str("x")).unwrap();
        rec.push(&arena, 6, FieldRef::Str("yz")).unwrap();
        // SAFETY: as above.
        unsafe {
            assert!(rec.has_unchecked(0));
            assert_eq!(rec.read_slot::<i32>(off(0)), -7);
            assert_eq!(rec.read_str(off(1)), "hi");
            assert_eq!(rec.read_seq::<i64>(off(2)), &[1, i64::MIN, 3]);
            let sub = rec.read_message(off(3), id).unwrap();
            assert_eq!(sub.read_slot::<i32>(off(0)), 9);
            assert_eq!(rec.read_bytes(off(4)), b"\x00\xff");
            assert_eq!(rec.read_slot::<u8>(off(5)), 1);
        }
        assert_eq!(rec.len_of(6), 2);
        assert!(matches!(rec.element(6, 1), Some(FieldRef::Str("yz"))));
        assert!(rec.element(6, 2).is_none());
        assert_eq!(rec.len_of(0), 0, "a single field has no elements");
        assert!(rec.element(0, 0).is_none());
    }
}
