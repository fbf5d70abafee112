//! Proto3 JSON read into arena records: the reflective reader's member walk
//! ([`Decoder::read_members`]) with a record as its target. Strings without escapes are
//! viewed in the input text; well-known types are read by the reflective reader and copied
//! into the arena.

use std::borrow::Cow;

use optimus_schema::{Cardinality, Field, Kind, MessageId};

use crate::json::decode::{
    accepts_null, base64_room, decode_base64_into, map_key, message_type, Decoder, JsonTarget,
    TypeKey,
};
use crate::json::reader::{json_err, Token};
use crate::json::wkt;
use crate::record::Arena;
use crate::value::{MapKey, Value};
use crate::view::{FieldRef, Record};
use crate::{Error, Message};

/// A record being read from JSON, and the arena its sub-messages and copies go into.
pub(crate) struct RecordTarget<'a> {
    pub(crate) rec: Record<'a>,
    pub(crate) arena: &'a Arena,
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
                    return Err(json_err(at, "expected a string"));
                }
                let s = d.r.read_string()?;
                FieldRef::Str(self.text(s))
            }
            Kind::Bytes => {
                if d.r.peek()? != Token::String {
                    return Err(json_err(at, "expected a base64 string"));
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
                    RecordTarget {
                        rec: sub,
                        arena: self.arena,
                    }
                    .read_message(d)?;
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
