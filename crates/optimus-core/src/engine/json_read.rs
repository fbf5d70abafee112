//! Proto3 JSON read into arena records: the reflective reader's member walk
//! ([`Decoder::read_members`]) with a record as its target. A plain field in its commonest
//! form goes straight into its slot (or a new sub-record); every other form, and the
//! well-known types, take the general path: values read by the reflective reader (strings
//! without escapes viewed in the input text), well-known types as `Message`s copied into the
//! arena.

use std::borrow::Cow;

use optimus_schema::{Cardinality, Entry, Field, Kind, MessageId, Scalar, Table};

use crate::json::decode::{
    accepts_null, base64_room, decode_base64_into, map_key, message_type, Decoder, JsonTarget,
    TypeKey,
};
use crate::json::number::parse_float;
use crate::json::reader::{json_value_err, Token};
use crate::json::wkt;
use crate::record::{Arena, View};
use crate::value::{MapKey, Value};
use crate::view::{FieldRef, Record};
use crate::{Error, Message};

/// A record being read from JSON, and the arena its sub-messages and copies go into.
pub(crate) struct RecordTarget<'a> {
    pub(crate) rec: Record<'a>,
    table: &'a Table,
    arena: &'a Arena,
}

impl<'a> JsonTarget<'a> for RecordTarget<'a> {
    fn type_id(&self) -> MessageId {
        self.rec.type_id()
    }

    fn read_field(
        &mut self,
        d: &mut Decoder<'a, '_>,
        index: usize,
        field: &Field,
    ) -> Result<bool, Error> {
        let e = &self.table.entries[index];
        if e.is_plain_scalar() && self.plain_scalar(d, index, e).is_some() {
            return Ok(true);
        }
        if e.is_plain_message() && self.plain_message(d, index, e)? {
            return Ok(true);
        }
        if d.r.peek()? == Token::Null && !accepts_null(d.schema, field) {
            d.r.read_literal("null")?;
            self.rec.clear(index)?;
            return Ok(false);
        }
        match field.cardinality {
            Cardinality::Map => self.read_map(d, index, field)?,
            Cardinality::Repeated => {
                d.expect(Token::Array, "an array")?;
                d.enter()?;
                d.r.begin_array()?;
                let mut first = true;
                let mut i = 0usize;
                while d.r.next_element(&mut first)? {
                    let v = self
                        .value(d, field)
                        .map_err(|e| e.within(format!("[{i}]")))?;
                    if let Some(v) = v {
                        self.rec.push(self.arena, index, v)?;
                    }
                    i += 1;
                }
                d.leave();
            }
            Cardinality::Singular | Cardinality::Optional => match self.value(d, field)? {
                Some(v) => self.rec.set_at(index, field, v)?,
                None => return Ok(false),
            },
        }
        Ok(true)
    }
}

impl<'a> RecordTarget<'a> {
    /// A target for reading into `rec`, a record in `arena`.
    pub(crate) fn new(rec: Record<'a>, arena: &'a Arena) -> RecordTarget<'a> {
        let table = &rec.schema().message(rec.type_id()).table;
        RecordTarget { rec, table, arena }
    }

    /// Reads a plain scalar field (entry `index`, `e`) in its commonest JSON forms — a plain
    /// integer, bare or quoted, a bare number for a float, `true`/`false`, a string without
    /// escapes — straight into its slot. `None`, with nothing consumed, for every other form
    /// (`null`, enum names, exponents, escapes, out-of-range values), which the general
    /// reader then reads and judges.
    #[inline]
    fn plain_scalar(&self, d: &mut Decoder<'a, '_>, index: usize, e: &Entry) -> Option<()> {
        let r = &mut d.r;
        let rec = self.rec.ptr;
        let off = e.offset;
        // SAFETY: (every write) `e` is entry `index` of the record's table, a single scalar
        // slot of the written type's width.
        let nonzero = unsafe {
            match e.op.scalar() {
                Scalar::Int32 | Scalar::Sint32 | Scalar::Sfixed32 => {
                    let (negative, magnitude, end) = r.plain_integer()?;
                    let v = i32::try_from(signed(negative, magnitude)?).ok()?;
                    r.advance_to(end);
                    rec.write(off, v);
                    v != 0
                }
                Scalar::Uint32 | Scalar::Fixed32 => {
                    let (negative, magnitude, end) = r.plain_integer()?;
                    let v = u32::try_from(unsigned(negative, magnitude)?).ok()?;
                    r.advance_to(end);
                    rec.write(off, v);
                    v != 0
                }
                Scalar::Int64 | Scalar::Sint64 | Scalar::Sfixed64 => {
                    let (negative, magnitude, end) = r.plain_integer()?;
                    let v = signed(negative, magnitude)?;
                    r.advance_to(end);
                    rec.write(off, v);
                    v != 0
                }
                Scalar::Uint64 | Scalar::Fixed64 => {
                    let (negative, magnitude, end) = r.plain_integer()?;
                    let v = unsigned(negative, magnitude)?;
                    r.advance_to(end);
                    rec.write(off, v);
                    v != 0
                }
                Scalar::Bool => {
                    let v = r.plain_bool()?;
                    rec.write(off, u8::from(v));
                    v
                }
                Scalar::String => {
                    let s = r.plain_string()?;
                    rec.write(off, View::of(s.as_bytes()));
                    !s.is_empty()
                }
                Scalar::Bytes => {
                    let at = r.pos();
                    let text = r.plain_string()?;
                    let room = self.arena.alloc_scratch(base64_room(text));
                    let Ok(len) = decode_base64_into(text, at, room) else {
                        r.rewind(at);
                        return None;
                    };
                    rec.write(off, View::of(&room[..len]));
                    len != 0
                }
                scalar @ (Scalar::Float | Scalar::Double) => {
                    if r.peek().ok()? != Token::Number {
                        return None;
                    }
                    let at = r.pos();
                    let text = r.read_number().ok()?;
                    let Some(v) = parse_float(text, scalar == Scalar::Float) else {
                        r.rewind(at);
                        return None;
                    };
                    if scalar == Scalar::Float {
                        let bits = (v as f32).to_bits();
                        rec.write(off, bits);
                        bits != 0
                    } else {
                        rec.write(off, v.to_bits());
                        v.to_bits() != 0
                    }
                }
                _ => return None,
            }
        };
        // SAFETY: `index` is an entry of the record's table.
        unsafe { rec.set_bit(index, nonzero || e.has_presence()) };
        Some(())
    }

    /// Reads a plain message field (entry `index`, `e`) given as an object straight into a
    /// new sub-record; `false`, with nothing consumed, for `null` and for well-known types,
    /// which the general reader reads.
    #[inline]
    fn plain_message(
        &self,
        d: &mut Decoder<'a, '_>,
        index: usize,
        e: &Entry,
    ) -> Result<bool, Error> {
        let schema = self.rec.schema();
        let id = MessageId(self.table.sub_message(e));
        if d.r.peek()? != Token::Object || wkt::special_form(schema, id).is_some() {
            return Ok(false);
        }
        let sub = Record::new_in(schema, id, self.arena);
        RecordTarget::new(sub, self.arena).read_message(d)?;
        // SAFETY: `e` is entry `index` of the record's table, a single message slot of the
        // sub-record's type; the sub-record lives in the record's arena.
        unsafe {
            self.rec.ptr.write(e.offset, sub.ptr.as_slot());
            self.rec.ptr.set_bit(index, true);
        }
        Ok(true)
    }

    /// Reads a message's JSON form into `self.rec`: an object, or a well-known type's own.
    pub(crate) fn read_message(&mut self, d: &mut Decoder<'a, '_>) -> Result<(), Error> {
        d.expect(Token::Object, "an object")?;
        d.enter()?;
        d.r.begin_object()?;
        d.read_members(self, TypeKey::Field, true)?;
        d.leave();
        Ok(())
    }

    fn read_map(
        &mut self,
        d: &mut Decoder<'a, '_>,
        index: usize,
        field: &Field,
    ) -> Result<(), Error> {
        let (key_field, value_field) = d.schema.map_entry_fields(field);
        d.expect(Token::Object, "an object")?;
        d.enter()?;
        d.r.begin_object()?;
        let mut first = true;
        while let Some((key, key_at)) = d.r.next_key(&mut first)? {
            let segment = format!("[{key}]");
            let k = match map_key(key_field.kind, &key, key_at)? {
                MapKey::String(_) => FieldRef::Str(self.text(key)),
                other => scalar_ref(other.to_value()),
            };
            let v = self.value(d, value_field).map_err(|e| e.within(segment))?;
            if let Some(v) = v {
                self.rec.insert(self.arena, index, k, v)?;
            }
        }
        d.leave();
        Ok(())
    }

    /// Reads one value of `field`'s kind; `None` for an unknown enum value skipped under
    /// `ignore_unknown`.
    fn value(
        &mut self,
        d: &mut Decoder<'a, '_>,
        field: &Field,
    ) -> Result<Option<FieldRef<'a>>, Error> {
        let at = d.r.pos();
        Ok(Some(match field.kind {
            Kind::String => {
                if d.r.peek()? != Token::String {
                    return Err(json_value_err(at, "expected a string"));
                }
                let s = d.r.read_string()?;
                FieldRef::Str(self.text(s))
            }
            Kind::Bytes => {
                if d.r.peek()? != Token::String {
                    return Err(json_value_err(at, "expected a base64 string"));
                }
                let text = d.r.read_string()?;
                let room = self.arena.alloc_scratch(base64_room(&text));
                let len = decode_base64_into(&text, at, room)?;
                FieldRef::Bytes(&room[..len])
            }
            Kind::Message | Kind::Group => {
                let id = message_type(field);
                let schema = d.schema;
                let sub = if wkt::special_form(schema, id).is_some() {
                    let mut m = Message::new(schema, id);
                    d.read_message(&mut m)?;
                    Record::from_message(self.rec.schema(), &m, self.arena)
                } else {
                    let sub = Record::new_in(self.rec.schema(), id, self.arena);
                    RecordTarget::new(sub, self.arena).read_message(d)?;
                    sub
                };
                FieldRef::Message(sub)
            }
            _ => match d.read_value(field)? {
                Some(v) => scalar_ref(v),
                None => return Ok(None),
            },
        }))
    }

    /// A string read from the input: viewed there when it had no escapes, else copied.
    fn text(&self, s: Cow<'a, str>) -> &'a str {
        match s {
            Cow::Borrowed(b) => b,
            Cow::Owned(o) => self.arena.alloc_str(&o),
        }
    }
}

/// A signed 64-bit integer from its sign and magnitude, if in range.
#[inline]
fn signed(negative: bool, magnitude: u64) -> Option<i64> {
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// An unsigned integer from its sign and magnitude, if in range (`-0` is 0).
#[inline]
fn unsigned(negative: bool, magnitude: u64) -> Option<u64> {
    (!negative || magnitude == 0).then_some(magnitude)
}

/// A scalar the reflective reader read, as a record value.
fn scalar_ref<'a>(v: Value) -> FieldRef<'a> {
    match v {
        Value::Bool(b) => FieldRef::Bool(b),
        Value::I32(x) => FieldRef::I32(x),
        Value::I64(x) => FieldRef::I64(x),
        Value::U32(x) => FieldRef::U32(x),
        Value::U64(x) => FieldRef::U64(x),
        Value::F32(x) => FieldRef::F32(x),
        Value::F64(x) => FieldRef::F64(x),
        Value::Enum(x) => FieldRef::Enum(x),
        other => unreachable!("strings, bytes and messages are read above: {other:?}"),
    }
}
