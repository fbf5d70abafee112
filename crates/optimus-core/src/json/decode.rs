//! JSON → message: walks the reader's tokens against the message type's field table.
//!
//! Field names resolve through the schema's name table (declared name, JSON name or
//! `[extension.name]`). Each level of objects and arrays is counted against the depth limit.
//! Errors are built where the input is wrong (byte offset) and gain a path segment per field,
//! list index or map key as they propagate out.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use optimus_schema::{Cardinality, Field, Kind, MessageId, MessageType, SchemaSet, WellKnown};

use super::number::{parse_float, parse_float_string, parse_integer};
use super::reader::{json_error, json_value_err, Key, Reader, Token};
use super::{wkt, JsonOptions};
use crate::error::{DecodeErrorKind, Error, JsonError};
use crate::message::Message;
use crate::value::{List, Map, MapKey, Value};

/// Decoding accepts padded or unpadded base64 and stray low bits in the last symbol.
const BASE64_CONFIG: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_padding_mode(DecodePaddingMode::Indifferent)
    .with_decode_allow_trailing_bits(true);
const BASE64_STANDARD: GeneralPurpose =
    GeneralPurpose::new(&base64::alphabet::STANDARD, BASE64_CONFIG);
const BASE64_URL_SAFE: GeneralPurpose =
    GeneralPurpose::new(&base64::alphabet::URL_SAFE, BASE64_CONFIG);

/// The state of one JSON decode.
pub(crate) struct Decoder<'a, 's> {
    pub(crate) r: Reader<'a>,
    pub(crate) schema: &'s SchemaSet,
    pub(crate) opts: &'s JsonOptions,
    depth: u32,
}

impl<'a, 's> Decoder<'a, 's> {
    pub(crate) fn new(schema: &'s SchemaSet, text: &'a str, opts: &'s JsonOptions) -> Self {
        Decoder {
            r: Reader::new(text),
            schema,
            opts,
            depth: 0,
        }
    }

    /// Enters one object or array level.
    pub(crate) fn enter(&mut self) -> Result<(), Error> {
        if self.depth >= self.opts.depth_limit {
            return Err(Error::decode(
                self.r.pos(),
                DecodeErrorKind::TooDeep(self.opts.depth_limit),
            ));
        }
        self.depth += 1;
        Ok(())
    }

    /// Leaves the level [`Decoder::enter`] entered.
    pub(crate) fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Skips one value, within what is left of the depth budget.
    pub(crate) fn skip(&mut self) -> Result<(), Error> {
        let left = self.opts.depth_limit.saturating_sub(self.depth);
        self.r.skip_value(left)
    }

    /// Reads one message's JSON form (an object, or a well-known type's own form) into `msg`.
    pub(crate) fn read_message(&mut self, msg: &mut Message) -> Result<(), Error> {
        if let Some(wk) = wkt::special_form(self.schema, msg.type_id()) {
            return wkt::read(self, msg, wk);
        }
        self.expect(Token::Object, "an object")?;
        self.enter()?;
        self.r.begin_object()?;
        self.read_fields(msg, TypeKey::Field, true)?;
        self.leave();
        Ok(())
    }

    /// Fails unless the next value is a `want`.
    pub(crate) fn expect(&mut self, want: Token, what: &str) -> Result<(), Error> {
        if self.r.peek()? == want {
            Ok(())
        } else {
            Err(json_value_err(self.r.pos(), format!("expected {what}")))
        }
    }

    /// Reads the members of an object whose `{` is consumed (and, unless `first`, some of its
    /// members), up to and including its `}`, into `msg`. `type_key` says what a member
    /// `@type` is.
    pub(crate) fn read_fields(
        &mut self,
        msg: &mut Message,
        type_key: TypeKey,
        first: bool,
    ) -> Result<(), Error> {
        self.read_members(&mut MessageTarget(msg), type_key, first)
    }

    /// [`Decoder::read_fields`] into any [`JsonTarget`]: names resolved, duplicates and oneof
    /// conflicts refused, unknown members skipped or refused; the target reads each value.
    pub(crate) fn read_members<T: JsonTarget<'a>>(
        &mut self,
        target: &mut T,
        type_key: TypeKey,
        mut first: bool,
    ) -> Result<(), Error> {
        let schema = self.schema;
        let ty = schema.message(target.type_id());
        let mut seen = BitSet::new(ty.fields.len());
        let mut oneof_set = BitSet::new(ty.oneofs.len());
        // The field after the last one read: where a writer in number order puts the next.
        let mut next = 0;
        loop {
            // Keys in number order (as writers put them) match the next field's key bytes.
            let hint = (type_key == TypeKey::Field)
                .then(|| ty.hinted_field(next))
                .flatten()
                .map(|f| f.json_key.as_bytes());
            let (key, key_at) = match self.r.next_key_hinted(&mut first, hint)? {
                None => break,
                Some(Key::Read(key, at)) => (key, at),
                Some(Key::Hinted) => {
                    let index = next;
                    next = index + 1;
                    let (key, at) = (&ty.fields[index].json_name, self.r.pos());
                    self.member(target, ty, index, &mut seen, &mut oneof_set, key, at)?;
                    continue;
                }
            };
            if type_key != TypeKey::Field && key == "@type" {
                if type_key == TypeKey::Duplicate {
                    return Err(json_error(
                        key_at,
                        JsonError::DuplicateField("@type".into()),
                    ));
                }
                self.skip()?;
                continue;
            }
            let Some(index) = ty.field_index_by_name_from(&key, next) else {
                if self.opts.ignore_unknown {
                    self.skip()?;
                    continue;
                }
                return Err(unknown_field(key_at, &key, ty));
            };
            next = index + 1;
            self.member(target, ty, index, &mut seen, &mut oneof_set, &key, key_at)?;
        }
        Ok(())
    }

    /// Reads the value of member `index` of `ty` (its key `key`, at `key_at`, consumed): a
    /// field given twice, or a second member of a oneof, is an error.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn member<T: JsonTarget<'a>>(
        &mut self,
        target: &mut T,
        ty: &MessageType,
        index: usize,
        seen: &mut BitSet,
        oneof_set: &mut BitSet,
        key: &str,
        key_at: usize,
    ) -> Result<(), Error> {
        let field = &ty.fields[index];
        if !seen.insert(index) {
            return Err(json_error(key_at, JsonError::DuplicateField(key.into())));
        }
        if let Some(o) = field.oneof {
            if oneof_set.contains(o as usize)
                && (self.r.peek()? != Token::Null || accepts_null(self.schema, field))
            {
                let name = &ty.oneofs[o as usize].name;
                return Err(json_error(key_at, JsonError::OneofConflict(name.clone())));
            }
        }
        let set = target
            .read_field(self, index, field)
            .map_err(|e| e.within(segment(field)))?;
        if let (true, Some(o)) = (set, field.oneof) {
            oneof_set.insert(o as usize);
        }
        Ok(())
    }

    /// Reads the value of `field`; whether it set the field (not `null`, not a skipped unknown
    /// enum value).
    fn read_field(
        &mut self,
        msg: &mut Message,
        index: usize,
        field: &Field,
    ) -> Result<bool, Error> {
        let schema = self.schema;
        if self.r.peek()? == Token::Null && !accepts_null(schema, field) {
            self.r.read_literal("null")?;
            msg.clear(index);
            return Ok(false);
        }
        let value = match field.cardinality {
            Cardinality::Map => Value::Map(self.read_map(field)?),
            Cardinality::Repeated => Value::List(self.read_list(field)?),
            Cardinality::Singular | Cardinality::Optional => match self.read_value(field)? {
                Some(v) => v,
                None => return Ok(false),
            },
        };
        // `Message::set` without its type check: the value was read as the field's.
        debug_assert!(value.matches(field), "read as {}'s type", field.name);
        msg.store(schema, field, index, value);
        Ok(true)
    }

    fn read_list(&mut self, field: &Field) -> Result<List, Error> {
        self.expect(Token::Array, "an array")?;
        self.enter()?;
        self.r.begin_array()?;
        let mut list = List::new(field.kind);
        let mut first = true;
        let mut i = 0usize;
        while self.r.next_element(&mut first)? {
            let v = self
                .read_value(field)
                .map_err(|e| e.within(format!("[{i}]")))?;
            if let Some(v) = v {
                let pushed = list.push(v);
                debug_assert!(pushed.is_ok(), "read_value gives the field's type");
            }
            i += 1;
        }
        self.leave();
        Ok(list)
    }

    fn read_map(&mut self, field: &Field) -> Result<Map, Error> {
        let schema = self.schema;
        let (key_field, value_field) = schema.map_entry_fields(field);
        self.expect(Token::Object, "an object")?;
        self.enter()?;
        self.r.begin_object()?;
        let mut map = Map::new();
        let mut first = true;
        while let Some((key, key_at)) = self.r.next_key(&mut first)? {
            let k = map_key(key_field.kind, &key, key_at)?;
            let v = self
                .read_value(value_field)
                .map_err(|e| e.within(format!("[{key}]")))?;
            if let Some(v) = v {
                map.insert(k, v);
            }
        }
        self.leave();
        Ok(map)
    }

    /// Reads one value of `field`'s kind (a singular value, list element or map value);
    /// `None` for an unknown enum value skipped under `ignore_unknown`.
    pub(crate) fn read_value(&mut self, field: &Field) -> Result<Option<Value>, Error> {
        let tok = self.r.peek()?;
        let at = self.r.pos();
        Ok(Some(match field.kind {
            Kind::Bool => match tok {
                Token::True => {
                    self.r.read_literal("true")?;
                    Value::Bool(true)
                }
                Token::False => {
                    self.r.read_literal("false")?;
                    Value::Bool(false)
                }
                _ => return Err(json_value_err(at, "expected true or false")),
            },
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
                Value::I32(self.read_int(tok, i32::MIN.into(), i32::MAX.into())? as i32)
            }
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
                Value::I64(self.read_int(tok, i64::MIN.into(), i64::MAX.into())? as i64)
            }
            Kind::Uint32 | Kind::Fixed32 => {
                Value::U32(self.read_int(tok, 0, u32::MAX.into())? as u32)
            }
            Kind::Uint64 | Kind::Fixed64 => {
                Value::U64(self.read_int(tok, 0, u64::MAX.into())? as u64)
            }
            Kind::Float => Value::F32(self.read_float(tok, true)? as f32),
            Kind::Double => Value::F64(self.read_float(tok, false)?),
            Kind::String => {
                if tok != Token::String {
                    return Err(json_value_err(at, "expected a string"));
                }
                Value::String(self.r.read_string()?.into_owned())
            }
            Kind::Bytes => {
                if tok != Token::String {
                    return Err(json_value_err(at, "expected a base64 string"));
                }
                Value::Bytes(decode_base64(&self.r.read_string()?, at)?)
            }
            Kind::Enum => return self.read_enum(field, tok),
            Kind::Message | Kind::Group => {
                let id = message_type(field);
                let mut m = Message::new(self.schema, id);
                self.read_message(&mut m)?;
                Value::Message(Box::new(m))
            }
        }))
    }

    /// Reads an integer given as a number or a quoted number, within `[min, max]`.
    pub(crate) fn read_int(&mut self, tok: Token, min: i128, max: i128) -> Result<i128, Error> {
        let at = self.r.pos();
        let v = match tok {
            Token::Number => parse_integer(self.r.read_number()?, min, max),
            Token::String => parse_integer(&self.r.read_string()?, min, max),
            _ => return Err(json_value_err(at, "expected an integer")),
        };
        v.map_err(|e| json_value_err(at, e.why()))
    }

    /// Reads a float given as a number, a quoted number or `"NaN"`/`"Infinity"`/`"-Infinity"`.
    pub(crate) fn read_float(&mut self, tok: Token, is_f32: bool) -> Result<f64, Error> {
        let at = self.r.pos();
        let v = match tok {
            Token::Number => parse_float(self.r.read_number()?, is_f32),
            Token::String => parse_float_string(&self.r.read_string()?, is_f32),
            _ => return Err(json_value_err(at, "expected a number")),
        };
        v.ok_or_else(|| json_value_err(at, "not a number in range"))
    }

    fn read_enum(&mut self, field: &Field, tok: Token) -> Result<Option<Value>, Error> {
        let at = self.r.pos();
        let e = self
            .schema
            .enum_type(field.enum_type.expect("enum field has an enum type"));
        match tok {
            Token::String => {
                let name = self.r.read_string()?;
                match e.value_by_name(&name) {
                    Some(v) => Ok(Some(Value::Enum(v.number))),
                    None if self.opts.ignore_unknown => Ok(None),
                    None => Err(json_value_err(
                        at,
                        format!("unknown value \"{name}\" of enum {}", e.full_name),
                    )),
                }
            }
            Token::Number => {
                let n = self.read_int(tok, i32::MIN.into(), i32::MAX.into())? as i32;
                if !e.is_closed || e.contains(n) {
                    Ok(Some(Value::Enum(n)))
                } else if self.opts.ignore_unknown {
                    Ok(None)
                } else {
                    Err(json_value_err(
                        at,
                        format!("unknown value {n} of enum {}", e.full_name),
                    ))
                }
            }
            Token::Null if is_null_value(self.schema, field) => {
                self.r.read_literal("null")?;
                Ok(Some(Value::Enum(0)))
            }
            _ => Err(json_value_err(
                at,
                format!("expected a value of enum {}", e.full_name),
            )),
        }
    }
}

/// What JSON members are read into: a reflective [`Message`] or an arena record.
pub(crate) trait JsonTarget<'a> {
    /// The message type being read.
    fn type_id(&self) -> MessageId;

    /// Reads the value of the field at `index`; whether it set the field (not `null`, not a
    /// skipped unknown enum value).
    fn read_field(
        &mut self,
        d: &mut Decoder<'a, '_>,
        index: usize,
        field: &Field,
    ) -> Result<bool, Error>;
}

/// The reflective target.
struct MessageTarget<'m>(&'m mut Message);

impl<'a> JsonTarget<'a> for MessageTarget<'_> {
    fn type_id(&self) -> MessageId {
        self.0.type_id()
    }

    fn read_field(
        &mut self,
        d: &mut Decoder<'a, '_>,
        index: usize,
        field: &Field,
    ) -> Result<bool, Error> {
        d.read_field(self.0, index, field)
    }
}

/// What a member named `@type` is in an object being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TypeKey {
    /// A field name like any other (ordinary messages).
    Field,
    /// The `Any`'s type URL, already read in a first pass: skip it.
    Skip,
    /// A second type URL after the one the `Any` began with: an error.
    Duplicate,
}

/// A set of small indices (fields or oneofs of one message): the first 64 in one word, with
/// no allocation for types of up to 64 fields.
struct BitSet {
    low: u64,
    high: Vec<u64>,
}

impl BitSet {
    #[inline]
    fn new(len: usize) -> BitSet {
        BitSet {
            low: 0,
            high: if len > 64 {
                vec![0; (len - 64).div_ceil(64)]
            } else {
                Vec::new()
            },
        }
    }

    /// The word holding `i`, and `i`'s bit in it.
    #[inline(always)]
    fn word(&mut self, i: usize) -> (&mut u64, u64) {
        let bit = 1u64 << (i % 64);
        if i < 64 {
            (&mut self.low, bit)
        } else {
            (&mut self.high[i / 64 - 1], bit)
        }
    }

    /// Adds `i`; whether it was absent.
    #[inline(always)]
    fn insert(&mut self, i: usize) -> bool {
        let (w, bit) = self.word(i);
        let absent = *w & bit == 0;
        *w |= bit;
        absent
    }

    #[inline(always)]
    fn contains(&mut self, i: usize) -> bool {
        let (w, bit) = self.word(i);
        *w & bit != 0
    }
}

/// Whether `null` is a value of this field rather than "unset": singular
/// `google.protobuf.Value` and `google.protobuf.NullValue` fields.
pub(crate) fn accepts_null(schema: &SchemaSet, field: &Field) -> bool {
    !field.is_list()
        && (is_null_value(schema, field)
            || field
                .message
                .is_some_and(|m| schema.message(m).well_known == Some(WellKnown::Value)))
}

fn is_null_value(schema: &SchemaSet, field: &Field) -> bool {
    field
        .enum_type
        .is_some_and(|e| schema.enum_type(e).full_name == "google.protobuf.NullValue")
}

/// The message type of a message, group or map field.
pub(crate) fn message_type(field: &Field) -> MessageId {
    field.message.expect("message field has a message type")
}

/// The path segment for errors inside `field`.
pub(crate) fn segment(field: &Field) -> String {
    if field.is_extension {
        field.json_name.clone()
    } else {
        field.name.clone()
    }
}

#[cold]
fn unknown_field(at: usize, key: &str, ty: &MessageType) -> Error {
    json_error(
        at,
        JsonError::UnknownField {
            field: key.into(),
            message: ty.full_name.clone(),
        },
    )
}

/// A map key from its JSON member name.
pub(crate) fn map_key(kind: Kind, key: &str, at: usize) -> Result<MapKey, Error> {
    let int = |min: i128, max: i128| {
        parse_integer(key, min, max)
            .map_err(|e| json_value_err(at, format!("map key: {}", e.why())))
    };
    Ok(match kind {
        Kind::String => MapKey::String(key.to_owned()),
        Kind::Bool => match key {
            "true" => MapKey::Bool(true),
            "false" => MapKey::Bool(false),
            _ => {
                return Err(json_value_err(
                    at,
                    "map key: expected \"true\" or \"false\"",
                ))
            }
        },
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            MapKey::I32(int(i32::MIN.into(), i32::MAX.into())? as i32)
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            MapKey::I64(int(i64::MIN.into(), i64::MAX.into())? as i64)
        }
        Kind::Uint32 | Kind::Fixed32 => MapKey::U32(int(0, u32::MAX.into())? as u32),
        Kind::Uint64 | Kind::Fixed64 => MapKey::U64(int(0, u64::MAX.into())? as u64),
        _ => return Err(json_value_err(at, "map key of a kind that cannot be a key")),
    })
}

/// Bytes from standard or URL-safe base64, padded or not.
pub(crate) fn decode_base64(s: &str, at: usize) -> Result<Vec<u8>, Error> {
    base64_engine(s)
        .decode(s)
        .map_err(|e| json_value_err(at, format!("invalid base64: {e}")))
}

/// [`decode_base64`] into `out`, which has room for `base64_room(s)` bytes; the length.
/// Standard base64 is tried first: text that fails it is read again as URL-safe only when it
/// holds `-` or `_` (which standard base64 never accepts), so the error is the same as
/// [`decode_base64`]'s.
pub(crate) fn decode_base64_into(s: &str, at: usize, out: &mut [u8]) -> Result<usize, Error> {
    let standard = BASE64_STANDARD.decode_slice(s, out);
    let result = match standard {
        Err(_) if is_url_safe(s) => BASE64_URL_SAFE.decode_slice(s, out),
        other => other,
    };
    result.map_err(|e| match e {
        base64::DecodeSliceError::DecodeError(e) => {
            json_value_err(at, format!("invalid base64: {e}"))
        }
        base64::DecodeSliceError::OutputSliceTooSmall => {
            unreachable!("base64_room bounds the decoded length")
        }
    })
}

/// The most bytes `s` decodes to.
pub(crate) fn base64_room(s: &str) -> usize {
    s.len().div_ceil(4) * 3
}

/// Whether `s` uses the URL-safe alphabet's own characters.
fn is_url_safe(s: &str) -> bool {
    s.bytes().any(|b| b == b'-' || b == b'_')
}

fn base64_engine(s: &str) -> &'static GeneralPurpose {
    if is_url_safe(s) {
        &BASE64_URL_SAFE
    } else {
        &BASE64_STANDARD
    }
}

#[cfg(test)]
mod tests {
    use super::super::{conformance_schema, decode, encode, JsonOptions};
    use super::*;
    use crate::DecodeError;

    fn proto3(s: &SchemaSet) -> MessageId {
        s.message_by_name("protobuf_test_messages.proto3.TestAllTypesProto3")
            .unwrap()
    }

    fn err(s: &SchemaSet, text: &str) -> DecodeError {
        let e = decode(s, proto3(s), text, &JsonOptions::default()).unwrap_err();
        e.as_decode().expect("a decode error").clone()
    }

    fn round(s: &SchemaSet, text: &str) -> String {
        let m = decode(s, proto3(s), text, &JsonOptions::default()).unwrap();
        encode(s, &m, &JsonOptions::default()).unwrap()
    }

    #[test]
    fn scalars_round_trip() {
        let s = conformance_schema();
        assert_eq!(
            round(
                &s,
                r#"{"optionalInt32": 1e5, "optional_int64": 9223372036854775807,
                         "optionalUint32": "4294967295", "optionalUint64": "18446744073709551615",
                         "optionalSint32": -0, "optionalFloat": "1", "optionalDouble": -1.5e-7,
                         "optionalBool": true, "optionalString": "\u8C37\n",
                         "optionalBytes": "-_", "optionalNestedEnum": "BAR"}"#
            ),
            r#"{"optionalInt32":100000,"optionalInt64":"9223372036854775807","optionalUint32":4294967295,"optionalUint64":"18446744073709551615","optionalFloat":1,"optionalDouble":-1.5e-7,"optionalBool":true,"optionalString":"谷\n","optionalBytes":"+w==","optionalNestedEnum":"BAR"}"#
        );
        assert_eq!(
            round(
                &s,
                r#"{"optionalFloat": "NaN", "optionalDouble": "-Infinity", "optionalNestedEnum": 123}"#
            ),
            r#"{"optionalFloat":"NaN","optionalDouble":"-Infinity","optionalNestedEnum":123}"#
        );
        assert_eq!(
            round(&s, r#"{"optionalAliasedEnum": "moo"}"#),
            r#"{"optionalAliasedEnum":"ALIAS_BAZ"}"#
        );
    }

    #[test]
    fn containers_round_trip() {
        let s = conformance_schema();
        assert_eq!(
            round(
                &s,
                r#"{"repeatedInt32": [1, 2], "repeatedNestedEnum": ["FOO", 1],
                         "mapBoolBool": {"true": true, "false": false},
                         "mapInt32Int32": {"\u0031": 2, "-3": 4},
                         "mapStringNestedMessage": {"k": {"a": 1}},
                         "repeatedNestedMessage": [{}, {"a": 2}]}"#
            ),
            r#"{"repeatedInt32":[1,2],"repeatedNestedMessage":[{},{"a":2}],"repeatedNestedEnum":["FOO","BAR"],"mapInt32Int32":{"-3":4,"1":2},"mapBoolBool":{"false":false,"true":true},"mapStringNestedMessage":{"k":{"a":1}}}"#
        );
        assert_eq!(
            round(
                &s,
                r#"{"repeatedInt32": null, "mapInt32Int32": null, "optionalNestedMessage": null}"#
            ),
            "{}"
        );
        assert_eq!(
            round(&s, r#"{"oneofUint32": null, "oneofString": ""}"#),
            r#"{"oneofString":""}"#
        );
        assert_eq!(
            round(&s, r#"{"oneofNullValue": null}"#),
            r#"{"oneofNullValue":null}"#
        );
        assert_eq!(round(&s, r#"{"optionalNullValue": null}"#), "{}");
    }

    #[test]
    fn errors_name_the_field_and_offset() {
        let s = conformance_schema();
        let e = err(&s, r#"{"optionalInt32": 2147483648}"#);
        assert_eq!(
            (e.offset, e.path_string().as_str()),
            (
                18,
                "protobuf_test_messages.proto3.TestAllTypesProto3.optional_int32"
            )
        );
        let e = err(&s, r#"{"repeatedInt32": [1, null]}"#);
        assert_eq!(
            (e.offset, e.path_string().as_str()),
            (
                22,
                "protobuf_test_messages.proto3.TestAllTypesProto3.repeated_int32[1]"
            )
        );
        let e = err(&s, r#"{"optionalNestedMessage": {"a": "x"}}"#);
        assert_eq!(
            e.path_string(),
            "protobuf_test_messages.proto3.TestAllTypesProto3.optional_nested_message.a"
        );
        let e = err(&s, r#"{"mapInt32Int32": {"0": null}}"#);
        assert_eq!(
            e.path_string(),
            "protobuf_test_messages.proto3.TestAllTypesProto3.map_int32_int32[0]"
        );
        let e = err(&s, r#"{"nope": 1}"#);
        assert_eq!(e.offset, 1);
        let e = err(&s, r#"{"optionalInt32": 1, "optional_int32": 2}"#);
        assert_eq!(e.offset, 21);
        let e = err(&s, r#"{"oneofUint32": 1, "oneofString": "x"}"#);
        assert_eq!(e.offset, 19);
        assert!(matches!(
            err(&s, "{} x").kind,
            DecodeErrorKind::TrailingData
        ));
    }

    #[test]
    fn invalid_values_are_rejected() {
        let s = conformance_schema();
        for text in [
            "null",
            "[]",
            r#"{"optionalInt32": 0.5}"#,
            r#"{"optionalInt32": "3x3"}"#,
            r#"{"optionalInt32": +1}"#,
            r#"{"optionalInt32": 01}"#,
            r#"{"optionalInt32": " 1"}"#,
            r#"{"optionalUint32": 4294967296}"#,
            r#"{"optionalUint64": "-1"}"#,
            r#"{"optionalInt64": "0x10"}"#,
            r#"{"optionalBool": 1}"#,
            r#"{"optionalBool": "true"}"#,
            r#"{"optionalFloat": 3.502823e+38}"#,
            r#"{"optionalFloat": NaN}"#,
            r#"{"optionalDouble": -1.89769e+308}"#,
            r#"{"optionalString": 1}"#,
            r#"{"optionalBytes": "!!"}"#,
            r#"{"optionalNestedEnum": "NOPE"}"#,
            r#"{"optionalNestedEnum": FOO}"#,
            r#"{"repeatedString": ["1", 2]}"#,
            r#"{"repeatedNestedMessage": [{}, null]}"#,
            r#"{"mapBoolBool": {"TRUE": true}}"#,
            r#"{"mapInt32Int32": {"1.5": 1}}"#,
            r#"{"fieldName1": 1}"#,
            r#"{"optionalNestedMessage": {"a": 1}, "optionalNestedMessage": {}}"#,
        ] {
            assert!(
                decode(&s, proto3(&s), text, &JsonOptions::default()).is_err(),
                "{text}"
            );
        }
    }

    #[test]
    fn ignore_unknown_skips_names_and_enum_values() {
        let s = conformance_schema();
        let opts = JsonOptions {
            ignore_unknown: true,
            ..JsonOptions::default()
        };
        let m = decode(
            &s,
            proto3(&s),
            r#"{"unknown": {"a": [1, {"b": null}]}, "optionalNestedEnum": "NOPE",
                "repeatedNestedEnum": ["FOO", "NOPE", "BAR"], "mapStringNestedEnum": {"a": "NOPE", "b": "BAZ"},
                "optionalInt32": 3}"#,
            &opts,
        )
        .unwrap();
        assert_eq!(
            encode(&s, &m, &JsonOptions::default()).unwrap(),
            r#"{"optionalInt32":3,"repeatedNestedEnum":["FOO","BAR"],"mapStringNestedEnum":{"b":"BAZ"}}"#
        );
    }

    #[test]
    fn closed_enums_reject_unknown_numbers() {
        let s = SchemaSet::from_source(
            "syntax = \"proto2\"; enum E { A = 1; } message M { optional E e = 1; repeated E r = 2; }",
        )
        .unwrap();
        let id = s.message_by_name("M").unwrap();
        assert!(decode(&s, id, r#"{"e": 2}"#, &JsonOptions::default()).is_err());
        let lenient = JsonOptions {
            ignore_unknown: true,
            ..JsonOptions::default()
        };
        let m = decode(&s, id, r#"{"e": 2, "r": [1, 2, "B", "A"]}"#, &lenient).unwrap();
        assert_eq!(
            encode(&s, &m, &JsonOptions::default()).unwrap(),
            r#"{"r":["A","A"]}"#
        );
    }

    #[test]
    fn depth_is_limited() {
        let s = conformance_schema();
        let opts = JsonOptions {
            depth_limit: 5,
            ..JsonOptions::default()
        };
        let nest = |n: usize| "{\"recursiveMessage\":".repeat(n) + "{}" + &"}".repeat(n);
        assert!(decode(&s, proto3(&s), &nest(4), &opts).is_ok());
        let e = decode(&s, proto3(&s), &nest(5), &opts).unwrap_err();
        assert!(matches!(
            e.as_decode().unwrap().kind,
            DecodeErrorKind::TooDeep(5)
        ));
        let deep = "{\"optionalValue\":".to_string() + &"[".repeat(200_000);
        assert!(decode(&s, proto3(&s), &deep, &JsonOptions::default()).is_err());
    }
}
