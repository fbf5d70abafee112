//! Proto3 JSON written from arena records: the op table's fields in number order, each value
//! in its scalar's JSON form. Well-known types keep their special forms (Timestamp, Any,
//! Struct, wrappers, ...) through the reflective writer, which sees them as `Message`s.

use optimus_schema::{Entry, Field, Kind, MessageId, SchemaSet, Shape, WellKnown};

use crate::json::encode::{
    emits_default, encode_err, push_short, quoted, within, write_bytes, write_enum, write_int,
    write_member_name, write_str, Encoder, ENCODE_DEPTH_LIMIT,
};
use crate::json::number::{write_f32, write_f64};
use crate::json::{wkt, JsonOptions};
use crate::record::{RecPtr, View};
use crate::view::{FieldRef, Record};
use crate::{Error, Value};

/// Writes records as JSON into one `String`.
pub(crate) struct JsonWriter<'s, 'o> {
    pub(crate) schema: &'s SchemaSet,
    pub(crate) opts: &'s JsonOptions,
    pub(crate) out: &'o mut String,
    pub(crate) depth: u32,
}

impl JsonWriter<'_, '_> {
    /// Writes one message: an object, or a well-known type's own form.
    pub(crate) fn message(&mut self, rec: Record<'_>) -> Result<(), Error> {
        if self.depth >= ENCODE_DEPTH_LIMIT {
            return Err(encode_err(format!(
                "messages nest deeper than {ENCODE_DEPTH_LIMIT} levels"
            )));
        }
        if let Some(wk) = wkt::special_form(self.schema, rec.type_id()) {
            return self.well_known(rec, wk);
        }
        self.depth += 1;
        self.out.push('{');
        let r = self.fields(rec);
        self.out.push('}');
        self.depth -= 1;
        r
    }

    /// A well-known type's special form, through the reflective writer.
    #[cold]
    fn well_known(&mut self, rec: Record<'_>, wk: WellKnown) -> Result<(), Error> {
        let msg = rec.to_message();
        let mut enc = Encoder::new(self.schema, self.opts, self.out);
        enc.depth = self.depth + 1;
        wkt::write(&mut enc, &msg, wk)
    }

    fn fields(&mut self, rec: Record<'_>) -> Result<(), Error> {
        let ty = self.schema.message(rec.type_id());
        let mut first = true;
        if self.opts.emit_defaults {
            for (index, field) in ty.fields.iter().enumerate() {
                if rec.has(index) {
                    self.member(rec, index, field, &ty.table.entries[index], &mut first)?;
                } else if emits_default(field) {
                    let v = Value::default_for(self.schema, field);
                    let mut enc = Encoder::new(self.schema, self.opts, self.out);
                    enc.depth = self.depth;
                    enc.write_member(field, &v, &mut first)?;
                }
            }
        } else {
            let (fields, entries) = (&ty.fields, &ty.table.entries);
            for w in 0..ty.table.presence_words as usize {
                // SAFETY: `w` is below the table's presence word count.
                let mut bits = unsafe { rec.ptr.presence_word(w) };
                while bits != 0 {
                    let index = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    debug_assert!(index < fields.len() && index < entries.len());
                    // SAFETY: a record's presence bit `index` is set for entry `index` of its
                    // table alone, and the type has a field per entry.
                    let (field, e) =
                        unsafe { (fields.get_unchecked(index), entries.get_unchecked(index)) };
                    if is_scalar(e) {
                        // Written whole here, with no call: a scalar's form cannot fail.
                        write_member_name(self.out, self.opts, field, &mut first);
                        scalar_value(self.out, rec.ptr, e);
                    } else if e.op.code() == super::single::MESSAGE {
                        // Straight into the sub-message (its own form, if a well-known type).
                        write_member_name(self.out, self.opts, field, &mut first);
                        // SAFETY: a single message entry's slot holds a record pointer.
                        let slot = unsafe { rec.ptr.read::<*mut u8>(e.offset) };
                        let sub =
                            RecPtr::from_slot(slot).expect("a set message slot holds a record");
                        let id = MessageId(ty.table.sub_message(e));
                        self.message(Record::new(self.schema, id, sub))
                            .map_err(|err| within(err, segment(field)))?;
                    } else {
                        self.member(rec, index, field, e, &mut first)?;
                    }
                }
            }
        }
        Ok(())
    }

    #[inline]
    fn member(
        &mut self,
        rec: Record<'_>,
        index: usize,
        field: &Field,
        e: &Entry,
        first: &mut bool,
    ) -> Result<(), Error> {
        write_member_name(self.out, self.opts, field, first);
        self.field_value(rec, index, e, field)
            .map_err(|err| within(err, segment(field)))
    }

    #[inline]
    fn field_value(
        &mut self,
        rec: Record<'_>,
        index: usize,
        e: &Entry,
        field: &Field,
    ) -> Result<(), Error> {
        match e.op.shape() {
            Shape::Single => self.single(rec, e, field),
            Shape::Repeated | Shape::Packed => {
                self.out.push('[');
                for (i, v) in rec.elements(index).enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.value(field, v)
                        .map_err(|err| within(err, &format!("[{i}]")))?;
                }
                self.out.push(']');
                Ok(())
            }
            Shape::Map => self.map(rec, e),
        }
    }

    /// A single field's value: a scalar's by [`scalar_value`]; enums and messages through
    /// [`FieldRef`].
    #[inline(always)]
    fn single(&mut self, rec: Record<'_>, e: &Entry, field: &Field) -> Result<(), Error> {
        if is_scalar(e) {
            scalar_value(self.out, rec.ptr, e);
            return Ok(());
        }
        // SAFETY: `e` is a single entry of the record's table.
        let v = unsafe { rec.single_unchecked(e) };
        self.value(field, v)
    }

    /// A map as an object, its keys in order (as the binary writer sorts them).
    fn map(&mut self, rec: Record<'_>, e: &Entry) -> Result<(), Error> {
        let entry_id = MessageId(self.schema.message(rec.type_id()).table.sub_message(e));
        let entry_ty = self.schema.message(entry_id);
        let mut sorted = Vec::new();
        super::encode::sorted_entries(rec.ptr, e, &entry_ty.table, &mut sorted);
        let (key_field, value_field) = (&entry_ty.fields[0], &entry_ty.fields[1]);
        self.out.push('{');
        for (i, &entry) in sorted.iter().enumerate() {
            let entry = Record::new(self.schema, entry_id, entry);
            if i > 0 {
                self.out.push(',');
            }
            let key = entry.get(0);
            let segment = self.map_key(key, key_field);
            self.out.push(':');
            let r = match entry.get(1) {
                Some(v) => self.value(value_field, v),
                None => {
                    let v = Value::default_for(self.schema, value_field);
                    let mut enc = Encoder::new(self.schema, self.opts, self.out);
                    enc.depth = self.depth;
                    enc.write_value(value_field, &v)
                }
            };
            r.map_err(|err| within(err, &segment))?;
        }
        self.out.push('}');
        Ok(())
    }

    /// Writes a map key as a JSON string and returns its error path segment.
    fn map_key(&mut self, key: Option<FieldRef<'_>>, key_field: &Field) -> String {
        let out = &mut *self.out;
        match key {
            Some(FieldRef::Str(s)) => {
                write_str(out, s);
                format!("[{s:?}]")
            }
            Some(FieldRef::Bool(b)) => {
                out.push_str(if b { "\"true\"" } else { "\"false\"" });
                format!("[{b}]")
            }
            Some(FieldRef::I32(n)) => {
                quoted(out, n);
                format!("[{n}]")
            }
            Some(FieldRef::I64(n)) => {
                quoted(out, n);
                format!("[{n}]")
            }
            Some(FieldRef::U32(n)) => {
                quoted(out, n);
                format!("[{n}]")
            }
            Some(FieldRef::U64(n)) => {
                quoted(out, n);
                format!("[{n}]")
            }
            None if key_field.kind == Kind::String => {
                out.push_str("\"\"");
                "[\"\"]".to_owned()
            }
            None if key_field.kind == Kind::Bool => {
                out.push_str("\"false\"");
                "[false]".to_owned()
            }
            None => {
                out.push_str("\"0\"");
                "[0]".to_owned()
            }
            Some(other) => unreachable!("map keys are integers, bool or string: {other:?}"),
        }
    }

    /// One value in its scalar's JSON form.
    #[inline(always)]
    fn value(&mut self, field: &Field, v: FieldRef<'_>) -> Result<(), Error> {
        let out = &mut *self.out;
        match v {
            FieldRef::Bool(b) => out.push_str(if b { "true" } else { "false" }),
            FieldRef::I32(n) => write_int(out, n),
            FieldRef::U32(n) => write_int(out, n),
            FieldRef::I64(n) => quoted(out, n),
            FieldRef::U64(n) => quoted(out, n),
            FieldRef::F32(x) => write_f32(out, x),
            FieldRef::F64(x) => write_f64(out, x),
            FieldRef::Enum(n) => write_enum(self.schema, out, field, n),
            FieldRef::Str(s) => write_str(out, s),
            FieldRef::Bytes(b) => write_bytes(out, b),
            FieldRef::Message(m) => return self.message(m),
        }
        Ok(())
    }
}

/// Whether `e`, a single field, is a number, bool, string or bytes: what [`scalar_value`]
/// writes (not an enum, whose form needs its type, or a message).
#[inline(always)]
fn is_scalar(e: &Entry) -> bool {
    use super::single::*;
    matches!(
        e.op.code(),
        INT32
            | SINT32
            | SFIXED32
            | UINT32
            | FIXED32
            | INT64
            | SINT64
            | SFIXED64
            | UINT64
            | FIXED64
            | BOOL
            | FLOAT
            | DOUBLE
            | STRING
            | BYTES
    )
}

/// Writes the JSON form of single scalar `e` (one [`is_scalar`] takes) of record `p`: one jump
/// on its op code to an arm that reads the slot by type.
#[inline(always)]
fn scalar_value(out: &mut String, p: RecPtr, e: &Entry) {
    use super::single::*;
    let off = e.offset;
    // SAFETY: `e` is a single entry of the record's table: each arm reads its slot as the type
    // its op stores (strings as views of UTF-8 checked when decoded or set).
    unsafe {
        match e.op.code() {
            INT32 | SINT32 | SFIXED32 => write_int(out, p.read::<i32>(off)),
            UINT32 | FIXED32 => write_int(out, p.read::<u32>(off)),
            INT64 | SINT64 | SFIXED64 => quoted(out, p.read::<i64>(off)),
            UINT64 | FIXED64 => quoted(out, p.read::<u64>(off)),
            BOOL => push_short(
                out,
                if p.read::<u8>(off) != 0 {
                    "true"
                } else {
                    "false"
                },
            ),
            FLOAT => write_f32(out, f32::from_bits(p.read::<u32>(off))),
            DOUBLE => write_f64(out, f64::from_bits(p.read::<u64>(off))),
            STRING => write_str(
                out,
                std::str::from_utf8_unchecked(p.read::<View>(off).bytes()),
            ),
            BYTES => write_bytes(out, p.read::<View>(off).bytes()),
            code => unreachable!("op {code} is not a scalar `is_scalar` takes"),
        }
    }
}

/// A field's segment in an error path: an extension by its bracketed JSON name.
fn segment(field: &Field) -> &str {
    if field.is_extension {
        &field.json_name
    } else {
        &field.name
    }
}
