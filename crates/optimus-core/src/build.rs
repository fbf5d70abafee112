//! Building arena records: setters that fill a field's slot and its presence bit (the
//! instance schema), checked against the field's op.
//!
//! Strings and bytes are stored as views of what the caller passes, which must live as long
//! as the arena (`Arena::alloc_str` copies a shorter-lived one into it). A sub-message is a
//! record of its type in the same arena. A sequence is only ever appended to or emptied, and
//! emptying gives it a fresh array, so values a reader took from it stay as they were.

use optimus_schema::{Cardinality, Entry, Field, MessageId, Scalar, Shape};

use crate::record::{bytes_of, Arena, View};
use crate::view::{FieldRef, Record};
use crate::Error;

impl<'a> Record<'a> {
    /// The entry and field at `index`, or [`Error::NoSuchField`].
    fn entry_at(&self, index: usize) -> Result<(&'a Entry, &'a Field), Error> {
        let ty = self.schema().message(self.type_id());
        match (ty.table.entries.get(index), ty.fields.get(index)) {
            (Some(e), Some(f)) => Ok((e, f)),
            _ => Err(Error::NoSuchField {
                message: ty.full_name.clone(),
                field: index.to_string(),
            }),
        }
    }

    /// The index of the field named `name` (declared or JSON name).
    ///
    /// # Errors
    /// [`Error::NoSuchField`].
    pub fn index_of(&self, name: &str) -> Result<usize, Error> {
        let ty = self.schema().message(self.type_id());
        ty.field_index_by_name(name)
            .ok_or_else(|| Error::NoSuchField {
                message: ty.full_name.clone(),
                field: name.to_string(),
            })
    }

    /// Sets the single field at `index` to `value`, unsetting the other members of its
    /// oneof. A field without presence set to its zero value becomes unset (proto3). A
    /// message value is stored by reference: it must be a record of the field's type.
    ///
    /// # Errors
    /// [`Error::NoSuchField`]; [`Error::TypeMismatch`] when `value` is not of the field's
    /// kind or the field is repeated or a map.
    pub fn set(&self, index: usize, value: FieldRef<'a>) -> Result<(), Error> {
        let (_, field) = self.entry_at(index)?;
        self.set_at(index, field, value)
    }

    /// [`Record::set`] for a reader that has the field at `index` in hand.
    #[inline]
    pub(crate) fn set_at(
        &self,
        index: usize,
        field: &Field,
        value: FieldRef<'a>,
    ) -> Result<(), Error> {
        let e = &self.schema().message(self.type_id()).table.entries[index];
        if e.op.shape() != Shape::Single {
            return Err(mismatch(self, field));
        }
        let (stored, nonzero) = checked(self, e, field, &value)?;
        if e.in_oneof() {
            self.clear_oneof(index);
        }
        // SAFETY: `e` is entry `index` of this record's table, a single slot of the stored
        // value's width (`checked` matched the value against the entry's scalar).
        unsafe {
            match stored {
                Stored::Byte(x) => self.ptr.write(e.offset, x),
                Stored::Word(x) => self.ptr.write(e.offset, x),
                Stored::Double(x) => self.ptr.write(e.offset, x),
                Stored::View(x) => self.ptr.write(e.offset, x),
                Stored::Record(x) => self.ptr.write(e.offset, x),
            }
            self.ptr.set_bit(index, nonzero || e.has_presence());
        }
        Ok(())
    }

    /// Appends `value` to the repeated field at `index`.
    ///
    /// # Errors
    /// [`Error::NoSuchField`]; [`Error::TypeMismatch`] when `value` is not of the field's
    /// kind or the field is not repeated.
    pub fn push(&self, arena: &'a Arena, index: usize, value: FieldRef<'a>) -> Result<(), Error> {
        let (e, field) = self.entry_at(index)?;
        if !matches!(e.op.shape(), Shape::Repeated | Shape::Packed) {
            return Err(mismatch(self, field));
        }
        let (stored, _) = checked(self, e, field, &value)?;
        // SAFETY: entry `index` is a sequence of values of the stored value's width in this
        // record, which lives in `arena` (the caller's: the lifetime ties them).
        unsafe {
            match stored {
                Stored::Byte(x) => self.ptr.push(arena, e.offset, 1, bytes_of(&x)),
                Stored::Word(x) => self.ptr.push(arena, e.offset, 4, bytes_of(&x)),
                Stored::Double(x) => self.ptr.push(arena, e.offset, 8, bytes_of(&x)),
                Stored::View(x) => self.ptr.push(arena, e.offset, 16, bytes_of(&x)),
                Stored::Record(x) => self.ptr.push(arena, e.offset, 8, bytes_of(&x)),
            }
            self.ptr.set_bit(index, true);
        }
        Ok(())
    }

    /// The sub-message of the singular message field at `index`: the one it holds, or a new
    /// empty one set in it (its oneof siblings unset).
    ///
    /// # Errors
    /// [`Error::NoSuchField`]; [`Error::TypeMismatch`] when the field is not a singular
    /// message.
    pub fn message_mut(&self, arena: &'a Arena, index: usize) -> Result<Record<'a>, Error> {
        let (e, field) = self.entry_at(index)?;
        if e.op.shape() != Shape::Single || !e.op.scalar().is_message() {
            return Err(mismatch(self, field));
        }
        let id = MessageId(self.schema().message(self.type_id()).table.sub_message(e));
        if let Some(FieldRef::Message(sub)) = self.get(index) {
            return Ok(sub);
        }
        let sub = Record::new_in(self.schema(), id, arena);
        self.set(index, FieldRef::Message(sub))?;
        Ok(sub)
    }

    /// Appends a new empty message to the repeated message field at `index`.
    ///
    /// # Errors
    /// [`Error::NoSuchField`]; [`Error::TypeMismatch`] when the field is not a repeated
    /// message.
    pub fn push_message(&self, arena: &'a Arena, index: usize) -> Result<Record<'a>, Error> {
        let (e, field) = self.entry_at(index)?;
        if e.op.shape() != Shape::Repeated || !e.op.scalar().is_message() {
            return Err(mismatch(self, field));
        }
        let id = MessageId(self.schema().message(self.type_id()).table.sub_message(e));
        let sub = Record::new_in(self.schema(), id, arena);
        self.push(arena, index, FieldRef::Message(sub))?;
        Ok(sub)
    }

    /// Adds an entry `key` → `value` to the map field at `index` (a later entry with the same
    /// key wins when the map is read or written). A message value is given by reference.
    ///
    /// # Errors
    /// [`Error::NoSuchField`]; [`Error::TypeMismatch`] when the field is not a map or the
    /// key or value is not of its kind.
    pub fn insert(
        &self,
        arena: &'a Arena,
        index: usize,
        key: FieldRef<'a>,
        value: FieldRef<'a>,
    ) -> Result<(), Error> {
        let (e, field) = self.entry_at(index)?;
        if e.op.shape() != Shape::Map {
            return Err(mismatch(self, field));
        }
        let id = MessageId(self.schema().message(self.type_id()).table.sub_message(e));
        let entry = Record::new_in(self.schema(), id, arena);
        entry.set(0, key)?;
        entry.set(1, value)?;
        // Both parts are written, as the wire form of an entry always has them.
        // SAFETY: entries 0 and 1 of a map entry type are its key and value; `index` is a
        // map: a sequence of 8-byte entry pointers in this record, which lives in `arena`.
        unsafe {
            entry.ptr.set_bit(0, true);
            entry.ptr.set_bit(1, true);
            self.ptr
                .push(arena, e.offset, 8, bytes_of(&entry.ptr.as_slot()));
            self.ptr.set_bit(index, true);
        }
        Ok(())
    }

    /// Unsets the field at `index`. A repeated field or map is emptied onto a fresh array,
    /// so values a reader took from the old one stay as they were.
    ///
    /// # Errors
    /// [`Error::NoSuchField`].
    pub fn clear(&self, index: usize) -> Result<(), Error> {
        let (e, _) = self.entry_at(index)?;
        // SAFETY: `e` is entry `index` of this record's table; a sequence slot holds a
        // sequence header, which an all-zero one replaces (empty, no array).
        unsafe {
            if e.op.shape().is_sequence() {
                self.ptr.write(e.offset, [0u64; 2]);
            }
            self.ptr.set_bit(index, false);
        }
        Ok(())
    }

    /// Unsets the members of entry `index`'s oneof.
    fn clear_oneof(&self, index: usize) {
        let table = &self.schema().message(self.type_id()).table;
        let oneof = table.oneof_of[index] as usize;
        for &(word, mask) in &table.oneof_masks[oneof] {
            // SAFETY: the masks' words are presence words of this record's table.
            unsafe { self.ptr.clear_bits(word as usize, mask) };
        }
    }
}

/// Stores for generated types (`optimus-build`): a single field's slot at an offset the
/// caller knows, with no table lookup or kind check. As with the reads in `view.rs`, a
/// generated type checks once that its offsets and ops are the runtime table's and wraps
/// only records of its own type, which discharges the `# Safety` duties.
impl<'a> Record<'a> {
    /// Stores `value` in the single slot at `offset` and sets presence bit `index` to
    /// `present` (the caller's rule: always under explicit presence, else nonzero).
    ///
    /// # Safety
    /// `index` and `offset` are those of one single-shape entry of this record's table that
    /// is in no oneof, whose value is a `T` as [`Record::read_slot`] names them (`u8` 0 or 1
    /// for `bool`).
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn write_slot<T: Copy>(&self, index: usize, offset: u32, value: T, present: bool) {
        // SAFETY: the caller's duty: a `T` slot of entry `index` inside the record.
        unsafe {
            self.ptr.write(offset, value);
            self.ptr.set_bit(index, present);
        }
    }

    /// Stores a view of `value` (which lives as long as the record's arena) in the single
    /// `string` or `bytes` slot at `offset` and sets presence bit `index` to `present`.
    ///
    /// # Safety
    /// As [`Record::write_slot`], for an entry of a `string` or `bytes` field (a `string`'s
    /// `value` being UTF-8: the typed setters take `&str` for one).
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn write_view(&self, index: usize, offset: u32, value: &'a [u8], present: bool) {
        // SAFETY: the caller's duty: a view slot of entry `index` inside the record; `value`
        // lives for 'a, as long as the record.
        unsafe {
            self.ptr.write(offset, View::of(value));
            self.ptr.set_bit(index, present);
        }
    }
}

/// A value as a record holds it, by width: what a slot or a sequence element stores.
enum Stored {
    Byte(u8),
    Word(u32),
    Double(u64),
    View(View),
    Record(*mut u8),
}

/// `value` as entry `e` stores it, and whether it is nonzero; [`Error::TypeMismatch`] when
/// it is not of `e`'s kind.
#[inline]
fn checked(
    rec: &Record<'_>,
    e: &Entry,
    field: &Field,
    value: &FieldRef<'_>,
) -> Result<(Stored, bool), Error> {
    Ok(match (e.op.scalar(), value) {
        (Scalar::Bool, FieldRef::Bool(b)) => (Stored::Byte(u8::from(*b)), *b),
        (Scalar::Int32 | Scalar::Sint32 | Scalar::Sfixed32, FieldRef::I32(x))
        | (Scalar::OpenEnum | Scalar::ClosedEnum, FieldRef::Enum(x)) => {
            (Stored::Word(*x as u32), *x != 0)
        }
        (Scalar::Uint32 | Scalar::Fixed32, FieldRef::U32(x)) => (Stored::Word(*x), *x != 0),
        (Scalar::Float, FieldRef::F32(x)) => (Stored::Word(x.to_bits()), x.to_bits() != 0),
        (Scalar::Int64 | Scalar::Sint64 | Scalar::Sfixed64, FieldRef::I64(x)) => {
            (Stored::Double(*x as u64), *x != 0)
        }
        (Scalar::Uint64 | Scalar::Fixed64, FieldRef::U64(x)) => (Stored::Double(*x), *x != 0),
        (Scalar::Double, FieldRef::F64(x)) => (Stored::Double(x.to_bits()), x.to_bits() != 0),
        (Scalar::String, FieldRef::Str(s)) => (Stored::View(View::of(s.as_bytes())), !s.is_empty()),
        (Scalar::Bytes, FieldRef::Bytes(b)) => (Stored::View(View::of(b)), !b.is_empty()),
        (Scalar::Message | Scalar::Group, FieldRef::Message(m))
            if std::ptr::eq(m.schema(), rec.schema())
                && m.type_id().0 == rec.schema().message(rec.type_id()).table.sub_message(e) =>
        {
            (Stored::Record(m.ptr.as_slot()), true)
        }
        _ => return Err(mismatch(rec, field)),
    })
}

fn mismatch(rec: &Record<'_>, field: &Field) -> Error {
    let ty = rec.schema().message(rec.type_id());
    Error::TypeMismatch {
        field: format!("{}.{}", ty.full_name, field.name),
        expected: match field.cardinality {
            Cardinality::Repeated => format!("repeated {}", field.kind.proto_name()),
            Cardinality::Map => "map".to_string(),
            _ => field.kind.proto_name().to_string(),
        },
    }
}

/// Copies into the arena, for values that must outlive a shorter borrow.
impl Arena {
    /// A copy of `text` in the arena, living as long as it: for setting a string field from
    /// a shorter-lived one.
    pub fn alloc_str(&self, text: &str) -> &str {
        // SAFETY: `alloc_copy` copied `text`'s bytes, which are UTF-8, into the arena.
        unsafe { std::str::from_utf8_unchecked(self.alloc_copy(text.as_bytes()).bytes()) }
    }

    /// `len` zeroed bytes in the arena for a value to be written into.
    pub(crate) fn alloc_scratch(&self, len: usize) -> &mut [u8] {
        self.alloc_zeroed_slice(len)
    }

    /// A copy of `bytes` in the arena, living as long as it.
    pub fn alloc_bytes(&self, bytes: &[u8]) -> &[u8] {
        // SAFETY: `alloc_copy` made a view of arena memory, which lives as long as `self`.
        unsafe { self.alloc_copy(bytes).bytes() }
    }
}

#[cfg(test)]
mod tests {
    use optimus_schema::SchemaSet;

    use super::*;
    use crate::{binary, engine, Value};

    fn schema() -> SchemaSet {
        SchemaSet::from_source(
            r#"syntax = "proto3";
               message M {
                 int32 a = 1; string s = 2; repeated int64 r = 3; M sub = 4;
                 map<string, int32> m = 5; oneof o { int32 x = 6; string y = 7; }
                 bytes b = 8; repeated M subs = 9;
               }"#,
        )
        .unwrap()
    }

    #[test]
    fn setters_build_what_the_reflective_codec_reads() {
        let s = schema();
        let id = s.message_by_name("M").unwrap();
        let arena = Arena::new();
        let rec = Record::new_in(&s, id, &arena);
        let i = |name: &str| rec.index_of(name).unwrap();
        let owned = String::from("borrowed for the arena's life");
        rec.set(i("a"), FieldRef::I32(7)).unwrap();
        rec.set(i("s"), FieldRef::Str(arena.alloc_str(&owned)))
            .unwrap();
        for v in [1, -2] {
            rec.push(&arena, i("r"), FieldRef::I64(v)).unwrap();
        }
        rec.message_mut(&arena, i("sub"))
            .unwrap()
            .set(0, FieldRef::I32(3))
            .unwrap();
        rec.insert(&arena, i("m"), FieldRef::Str("k"), FieldRef::I32(5))
            .unwrap();
        rec.insert(&arena, i("m"), FieldRef::Str("k"), FieldRef::I32(6))
            .unwrap();
        rec.set(i("x"), FieldRef::I32(1)).unwrap();
        rec.set(i("y"), FieldRef::Str("z")).unwrap();
        rec.set(i("b"), FieldRef::Bytes(b"\x00\x01")).unwrap();
        rec.push_message(&arena, i("subs"))
            .unwrap()
            .set(0, FieldRef::I32(9))
            .unwrap();
        assert!(!rec.has(i("x")), "a oneof member unsets the others");

        let mut bytes = Vec::new();
        engine::encode(rec, &mut bytes);
        let m = binary::decode(&s, id, &bytes, &Default::default()).unwrap();
        let get = |name: &str| m.get_by_name(&s, name).unwrap();
        assert_eq!(get("a"), Value::I32(7));
        assert_eq!(get("s"), Value::String(owned.clone()));
        assert_eq!(get("y"), Value::String("z".into()));
        assert_eq!(get("x"), Value::I32(0));
        assert_eq!(get("b"), Value::Bytes(vec![0, 1]));
        assert_eq!(get("r").as_list().unwrap().len(), 2);
        let map = get("m");
        let map = map.as_map().unwrap();
        assert_eq!(map.len(), 1, "the later entry of a key wins");
        assert_eq!(map.values().next(), Some(&Value::I32(6)));
        // The record's own bytes are the reflective message's.
        assert_eq!(binary::encode(&s, &m), bytes);

        // Zero unsets a field without presence; clear empties a sequence.
        rec.set(i("a"), FieldRef::I32(0)).unwrap();
        assert!(!rec.has(i("a")));
        let before: Vec<_> = rec.elements(i("r")).map(|v| format!("{v:?}")).collect();
        rec.clear(i("r")).unwrap();
        rec.push(&arena, i("r"), FieldRef::I64(42)).unwrap();
        assert_eq!(before, ["I64(1)", "I64(-2)"]);
        assert_eq!(rec.elements(i("r")).count(), 1);
    }

    #[test]
    fn slot_writes_store_what_the_checked_setters_store() {
        let s = schema();
        let id = s.message_by_name("M").unwrap();
        let arena = Arena::new();
        let fast = Record::new_in(&s, id, &arena);
        let checked = Record::new_in(&s, id, &arena);
        let e = &s.message(id).table.entries;
        let (a, str_, b) = (0, 1, 7);
        // SAFETY: entries 0 (int32 a), 1 (string s) and 7 (bytes b) are single fields in no
        // oneof, written with their values' types.
        unsafe {
            fast.write_slot::<i32>(a, e[a].offset, -9, true);
            fast.write_view(str_, e[str_].offset, b"text", true);
            fast.write_view(b, e[b].offset, b"\x00\x01", true);
        }
        checked.set(a, FieldRef::I32(-9)).unwrap();
        checked.set(str_, FieldRef::Str("text")).unwrap();
        checked.set(b, FieldRef::Bytes(b"\x00\x01")).unwrap();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        engine::encode(fast, &mut x);
        engine::encode(checked, &mut y);
        assert_eq!(x, y);
        // SAFETY: as above; a zero without presence unsets.
        unsafe { fast.write_slot::<i32>(a, e[a].offset, 0, false) };
        assert!(!fast.has(a));
    }

    #[test]
    fn setters_check_the_field_kind() {
        let s = schema();
        let id = s.message_by_name("M").unwrap();
        let arena = Arena::new();
        let rec = Record::new_in(&s, id, &arena);
        assert!(matches!(
            rec.set(0, FieldRef::I64(1)),
            Err(Error::TypeMismatch { .. })
        ));
        assert!(matches!(
            rec.set(2, FieldRef::I64(1)),
            Err(Error::TypeMismatch { .. })
        ));
        assert!(matches!(
            rec.push(&arena, 0, FieldRef::I32(1)),
            Err(Error::TypeMismatch { .. })
        ));
        assert!(matches!(
            rec.set(99, FieldRef::I32(1)),
            Err(Error::NoSuchField { .. })
        ));
        // A message of another type is refused.
        let other =
            SchemaSet::from_source("syntax = \"proto3\"; message N { int32 a = 1; }").unwrap();
        let n = Record::new_in(&other, other.message_by_name("N").unwrap(), &arena);
        assert!(rec.set(3, FieldRef::Message(n)).is_err());
        assert!(rec.index_of("nope").is_err());
    }
}
