//! The well-known types' own JSON forms: Any, Timestamp, Duration, FieldMask, Struct, Value,
//! ListValue and the wrappers (Empty is an ordinary object).
//!
//! Fields of these types are found by number (`seconds` = 1, ...), as the `.proto` files in
//! `google/protobuf/` declare them.

use std::fmt::Write;

use optimus_schema::{Field, Kind, MessageId, MessageType, SchemaSet, WellKnown};

use super::decode::{message_type, Decoder, TypeKey};
use super::encode::{encode_err, within, write_str, Encoder};
use super::number::write_f64;
use super::reader::{json_error, json_value_err, Token};
use crate::binary;
use crate::error::{Error, JsonError};
use crate::message::Message;
use crate::value::{List, Map, MapKey, Value};

/// Largest Duration magnitude in seconds (10,000 years), as Google's `duration.proto` says.
const DURATION_MAX_SECONDS: i64 = 315_576_000_000;
/// `0001-01-01T00:00:00Z` in Unix seconds.
const TIMESTAMP_MIN_SECONDS: i64 = -62_135_596_800;
/// `9999-12-31T23:59:59Z` in Unix seconds.
const TIMESTAMP_MAX_SECONDS: i64 = 253_402_300_799;
const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// Whether `ty` has the fields that the JSON form of `wk` reads and writes. A type that merely
/// borrows a well-known name (declared by hand with other fields) is read and written as an
/// ordinary message instead.
pub(crate) fn has_shape(schema: &SchemaSet, ty: &MessageType, wk: WellKnown) -> bool {
    use optimus_schema::Cardinality::{Map, Repeated};
    let f = |number: u32, kind: Kind| {
        ty.field_by_number(number).filter(|f| {
            f.kind == kind && !f.is_list() && (!kind.is_message() || f.message.is_some())
        })
    };
    let list_of = |number: u32, kind: Kind| {
        ty.field_by_number(number).is_some_and(|f| {
            f.kind == kind
                && f.cardinality == Repeated
                && (!kind.is_message() || f.message.is_some())
        })
    };
    match wk {
        WellKnown::Any => f(1, Kind::String).is_some() && f(2, Kind::Bytes).is_some(),
        WellKnown::Timestamp | WellKnown::Duration => {
            f(1, Kind::Int64).is_some() && f(2, Kind::Int32).is_some()
        }
        WellKnown::FieldMask => list_of(1, Kind::String),
        WellKnown::Struct => ty.field_by_number(1).is_some_and(|f| {
            f.cardinality == Map && f.message.is_some() && {
                let (k, v) = schema.map_entry_fields(f);
                k.kind == Kind::String && v.kind == Kind::Message && v.message.is_some()
            }
        }),
        WellKnown::ListValue => list_of(1, Kind::Message),
        WellKnown::Value => {
            f(1, Kind::Enum).is_some()
                && f(2, Kind::Double).is_some()
                && f(3, Kind::String).is_some()
                && f(4, Kind::Bool).is_some()
                && f(5, Kind::Message).is_some()
                && f(6, Kind::Message).is_some()
        }
        WellKnown::Wrapper => ty
            .field_by_number(1)
            .is_some_and(|f| !f.is_list() && !f.kind.is_message()),
        WellKnown::Empty => false,
    }
}

/// The index and descriptor of field `number` of `msg`'s type, which [`has_shape`] checked.
fn field<'s>(schema: &'s SchemaSet, msg: &Message, number: u32) -> (usize, &'s Field) {
    let ty = schema.message(msg.type_id());
    let index = ty
        .field_index_by_number(number)
        .unwrap_or_else(|| unreachable!("has_shape checked {} field {number}", ty.full_name));
    (index, &ty.fields[index])
}

fn get_i64(schema: &SchemaSet, msg: &Message, number: u32) -> i64 {
    match msg.get(field(schema, msg, number).0) {
        Some(Value::I64(v)) => *v,
        Some(Value::I32(v)) => i64::from(*v),
        _ => 0,
    }
}

fn set(schema: &SchemaSet, msg: &mut Message, number: u32, v: Value) -> Result<(), Error> {
    let index = field(schema, msg, number).0;
    msg.set(schema, index, v)
}

/// Reads the JSON form of well-known type `wk` into `msg`.
pub(crate) fn read(d: &mut Decoder<'_, '_>, msg: &mut Message, wk: WellKnown) -> Result<(), Error> {
    let schema = d.schema;
    match wk {
        WellKnown::Any => read_any(d, msg),
        WellKnown::Timestamp => {
            let (s, at) = read_string(d, "a timestamp string")?;
            let (secs, nanos) =
                parse_timestamp(&s).ok_or_else(|| json_value_err(at, "invalid timestamp"))?;
            set(schema, msg, 1, Value::I64(secs))?;
            set(schema, msg, 2, Value::I32(nanos))
        }
        WellKnown::Duration => {
            let (s, at) = read_string(d, "a duration string")?;
            let (secs, nanos) =
                parse_duration(&s).ok_or_else(|| json_value_err(at, "invalid duration"))?;
            set(schema, msg, 1, Value::I64(secs))?;
            set(schema, msg, 2, Value::I32(nanos))
        }
        WellKnown::FieldMask => {
            let (s, at) = read_string(d, "a field mask string")?;
            let mut paths = Vec::new();
            if !s.is_empty() {
                for p in s.split(',') {
                    paths.push(
                        camel_to_snake(p)
                            .ok_or_else(|| json_value_err(at, "invalid field mask path"))?,
                    );
                }
            }
            set(schema, msg, 1, Value::List(List::String(paths)))
        }
        WellKnown::Struct => read_struct(d, msg),
        WellKnown::ListValue => read_list_value(d, msg),
        WellKnown::Value => read_value(d, msg),
        WellKnown::Wrapper => {
            let (index, f) = field(schema, msg, 1);
            if let Some(v) = d.read_value(f)? {
                msg.set(schema, index, v)?;
            }
            Ok(())
        }
        // Empty is read as an ordinary message; the caller never sends it here.
        WellKnown::Empty => {
            d.expect(Token::Object, "an object")?;
            d.enter()?;
            d.r.begin_object()?;
            d.read_fields(msg, TypeKey::Field, true)?;
            d.leave();
            Ok(())
        }
    }
}

/// A string value and its offset.
fn read_string<'a>(
    d: &mut Decoder<'a, '_>,
    what: &str,
) -> Result<(std::borrow::Cow<'a, str>, usize), Error> {
    d.expect(Token::String, what)?;
    let at = d.r.pos();
    Ok((d.r.read_string()?, at))
}

fn read_struct(d: &mut Decoder<'_, '_>, msg: &mut Message) -> Result<(), Error> {
    let schema = d.schema;
    let (index, f) = field(schema, msg, 1);
    let (_, value_field) = schema.map_entry_fields(f);
    let value_id = message_type(value_field);
    d.expect(Token::Object, "an object")?;
    d.enter()?;
    d.r.begin_object()?;
    let mut map = Map::new();
    let mut first = true;
    while let Some((key, _)) = d.r.next_key(&mut first)? {
        let mut v = Message::new(schema, value_id);
        d.read_message(&mut v)
            .map_err(|e| e.within(format!("[{key:?}]")))?;
        map.insert(
            MapKey::String(key.into_owned()),
            Value::Message(Box::new(v)),
        );
    }
    d.leave();
    msg.set(schema, index, Value::Map(map))
}

fn read_list_value(d: &mut Decoder<'_, '_>, msg: &mut Message) -> Result<(), Error> {
    let schema = d.schema;
    let (index, f) = field(schema, msg, 1);
    let value_id = message_type(f);
    d.expect(Token::Array, "an array")?;
    d.enter()?;
    d.r.begin_array()?;
    let mut values = Vec::new();
    let mut first = true;
    while d.r.next_element(&mut first)? {
        let mut v = Message::new(schema, value_id);
        d.read_message(&mut v)
            .map_err(|e| e.within(format!("[{}]", values.len())))?;
        values.push(v);
    }
    d.leave();
    msg.set(schema, index, Value::List(List::Message(values)))
}

/// `google.protobuf.Value`: any JSON value, `null` included.
fn read_value(d: &mut Decoder<'_, '_>, msg: &mut Message) -> Result<(), Error> {
    let schema = d.schema;
    let tok = d.r.peek()?;
    let (number, v) = match tok {
        Token::Null => {
            d.r.read_literal("null")?;
            (1, Value::Enum(0))
        }
        Token::Number => (2, Value::F64(d.read_float(tok, false)?)),
        Token::String => (3, Value::String(d.r.read_string()?.into_owned())),
        Token::True | Token::False => {
            let b = tok == Token::True;
            d.r.read_literal(if b { "true" } else { "false" })?;
            (4, Value::Bool(b))
        }
        Token::Object | Token::Array => {
            let number = if tok == Token::Object { 5 } else { 6 };
            let (_, f) = field(schema, msg, number);
            let mut sub = Message::new(schema, message_type(f));
            d.read_message(&mut sub)?;
            (number, Value::Message(Box::new(sub)))
        }
    };
    set(schema, msg, number, v)
}

/// `Any`: `{"@type": url, ...fields}` or, for a well-known payload, `{"@type": url, "value": v}`.
/// `@type` usually comes first and the members are read in one pass; when it does not, the
/// object is scanned for it first and then read again.
fn read_any(d: &mut Decoder<'_, '_>, msg: &mut Message) -> Result<(), Error> {
    d.expect(Token::Object, "an object")?;
    let start = d.r.pos();
    d.enter()?;
    d.r.begin_object()?;
    let mut first = true;
    let Some((key, _)) = d.r.next_key(&mut first)? else {
        d.leave();
        return Ok(());
    };
    if key == "@type" {
        let (url, url_at) = read_string(d, "a type URL string")?;
        let url = url.into_owned();
        read_any_members(d, msg, url, url_at, TypeKey::Duplicate, false)
    } else {
        // Scan for the type URL, then read the members from the start.
        d.r.rewind(start);
        d.r.begin_object()?;
        let mut url = None;
        let mut first = true;
        while let Some((key, key_at)) = d.r.next_key(&mut first)? {
            if key == "@type" {
                if url.is_some() {
                    return Err(json_error(
                        key_at,
                        JsonError::DuplicateField("@type".into()),
                    ));
                }
                let (s, at) = read_string(d, "a type URL string")?;
                url = Some((s.into_owned(), at));
            } else {
                d.skip()?;
            }
        }
        let (url, url_at) = url.ok_or_else(|| json_value_err(start, "Any has no \"@type\""))?;
        d.r.rewind(start);
        d.r.begin_object()?;
        read_any_members(d, msg, url, url_at, TypeKey::Skip, true)
    }
}

/// Reads the members of an Any (other than its `@type`, given as `url`) up to its `}`, and
/// leaves the level [`read_any`] entered.
fn read_any_members(
    d: &mut Decoder<'_, '_>,
    msg: &mut Message,
    url: String,
    url_at: usize,
    type_key: TypeKey,
    mut first: bool,
) -> Result<(), Error> {
    let schema = d.schema;
    let id = resolve_type_url(schema, &url)
        .ok_or_else(|| json_error(url_at, JsonError::UnknownAnyType(url.to_string())))?;
    let mut inner = Message::new(schema, id);
    if has_special_form(schema, id) {
        let mut seen_value = false;
        while let Some((key, key_at)) = d.r.next_key(&mut first)? {
            if key == "@type" && type_key == TypeKey::Skip {
                d.skip()?;
            } else if key == "value" {
                if seen_value {
                    return Err(json_error(
                        key_at,
                        JsonError::DuplicateField("value".into()),
                    ));
                }
                seen_value = true;
                d.read_message(&mut inner).map_err(|e| e.within("value"))?;
            } else if key == "@type" {
                return Err(json_error(
                    key_at,
                    JsonError::DuplicateField("@type".into()),
                ));
            } else if d.opts.ignore_unknown {
                d.skip()?;
            } else {
                return Err(json_error(
                    key_at,
                    JsonError::UnknownField {
                        field: key.into(),
                        message: "Any of a well-known type".into(),
                    },
                ));
            }
        }
    } else {
        d.read_fields(&mut inner, type_key, first)?;
    }
    d.leave();
    set(schema, msg, 1, Value::String(url))?;
    set(schema, msg, 2, Value::Bytes(binary::encode(schema, &inner)))
}

/// The message type a type URL names: the part after the last `/`.
fn resolve_type_url(schema: &SchemaSet, url: &str) -> Option<MessageId> {
    let (_, name) = url.rsplit_once('/')?;
    schema.message_by_name(name)
}

/// The well-known type whose own JSON form messages of `id` take, if any.
#[inline]
pub(crate) fn special_form(schema: &SchemaSet, id: MessageId) -> Option<WellKnown> {
    let ty = schema.message(id);
    ty.well_known.filter(|&w| has_shape(schema, ty, w))
}

/// Whether a type is written as `"value"` inside an Any (a well-known type with its own
/// JSON form).
fn has_special_form(schema: &SchemaSet, id: MessageId) -> bool {
    special_form(schema, id).is_some()
}

/// Writes the JSON form of well-known type `wk`.
pub(crate) fn write(e: &mut Encoder<'_, '_>, msg: &Message, wk: WellKnown) -> Result<(), Error> {
    let schema = e.schema;
    match wk {
        WellKnown::Any => write_any(e, msg),
        WellKnown::Timestamp => {
            let (secs, nanos) = (get_i64(schema, msg, 1), get_i64(schema, msg, 2));
            if !(TIMESTAMP_MIN_SECONDS..=TIMESTAMP_MAX_SECONDS).contains(&secs)
                || !(0..NANOS_PER_SECOND).contains(&nanos)
            {
                return Err(encode_err(format!(
                    "Timestamp {secs}s {nanos}ns is outside 0001-01-01..9999-12-31"
                )));
            }
            let (date, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
            let (y, m, day) = civil_from_days(date);
            let _ = write!(
                e.out,
                "\"{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}",
                rem / 3600,
                rem / 60 % 60,
                rem % 60
            );
            write_nanos(e.out, nanos);
            e.out.push_str("Z\"");
            Ok(())
        }
        WellKnown::Duration => {
            let (secs, nanos) = (get_i64(schema, msg, 1), get_i64(schema, msg, 2));
            if secs.unsigned_abs() > DURATION_MAX_SECONDS as u64
                || nanos.abs() >= NANOS_PER_SECOND
                || (secs < 0 && nanos > 0)
                || (secs > 0 && nanos < 0)
            {
                return Err(encode_err(format!(
                    "Duration {secs}s {nanos}ns is out of range"
                )));
            }
            e.out.push('"');
            if secs < 0 || nanos < 0 {
                e.out.push('-');
            }
            let _ = write!(e.out, "{}", secs.unsigned_abs());
            write_nanos(e.out, nanos.abs());
            e.out.push_str("s\"");
            Ok(())
        }
        WellKnown::FieldMask => {
            let paths = match msg.get(field(schema, msg, 1).0) {
                Some(Value::List(List::String(p))) => p.as_slice(),
                _ => &[],
            };
            let mut joined = String::new();
            for (i, p) in paths.iter().enumerate() {
                if i > 0 {
                    joined.push(',');
                }
                let camel = snake_to_camel(p).ok_or_else(|| {
                    encode_err(format!(
                        "FieldMask path \"{p}\" has no JSON form that reads back"
                    ))
                })?;
                joined.push_str(&camel);
            }
            write_str(e.out, &joined);
            Ok(())
        }
        WellKnown::Struct => {
            e.out.push('{');
            if let Some(Value::Map(map)) = msg.get(field(schema, msg, 1).0) {
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        e.out.push(',');
                    }
                    let MapKey::String(k) = k else { continue };
                    write_str(e.out, k);
                    e.out.push(':');
                    match v {
                        Value::Message(m) => e.write_message(m),
                        _ => Err(encode_err("Struct value is not a message")),
                    }
                    .map_err(|err| within(err, &format!("[{k:?}]")))?;
                }
            }
            e.out.push('}');
            Ok(())
        }
        WellKnown::ListValue => {
            e.out.push('[');
            if let Some(Value::List(List::Message(values))) = msg.get(field(schema, msg, 1).0) {
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        e.out.push(',');
                    }
                    e.write_message(v)
                        .map_err(|err| within(err, &format!("[{i}]")))?;
                }
            }
            e.out.push(']');
            Ok(())
        }
        WellKnown::Value => {
            let ty = schema.message(msg.type_id());
            // A Value with no kind set is written as `null`, as Python protobuf does.
            let Some(index) = msg.set_fields().next() else {
                e.out.push_str("null");
                return Ok(());
            };
            let (f, v) = (&ty.fields[index], msg.get(index));
            match (f.number, v) {
                (1, _) => e.out.push_str("null"),
                (2, Some(Value::F64(x))) => {
                    if !x.is_finite() {
                        return Err(encode_err("Value holds a NaN or infinite number"));
                    }
                    write_f64(e.out, *x);
                }
                (_, Some(v)) => return e.write_value(f, v),
                (_, None) => return Err(encode_err("Value has no kind set")),
            }
            Ok(())
        }
        WellKnown::Wrapper => {
            let (index, f) = field(schema, msg, 1);
            let v = msg.get_or_default(schema, index);
            e.write_value(f, &v)
        }
        WellKnown::Empty => {
            e.out.push('{');
            let r = e.write_fields(msg, &mut true);
            e.out.push('}');
            r
        }
    }
}

fn write_any(e: &mut Encoder<'_, '_>, msg: &Message) -> Result<(), Error> {
    let schema = e.schema;
    let url = match msg.get(field(schema, msg, 1).0) {
        Some(Value::String(s)) => s.as_str(),
        _ => "",
    };
    let bytes = match msg.get(field(schema, msg, 2).0) {
        Some(Value::Bytes(b)) => b.as_slice(),
        _ => &[],
    };
    if url.is_empty() && bytes.is_empty() {
        e.out.push_str("{}");
        return Ok(());
    }
    let id = resolve_type_url(schema, url)
        .ok_or_else(|| encode_err(format!("unknown type in Any: \"{url}\"")))?;
    let opts = binary::DecodeOptions {
        check_required: false,
        ..binary::DecodeOptions::default()
    };
    let inner = binary::decode(schema, id, bytes, &opts)
        .map_err(|err| encode_err(format!("Any payload of type {url} does not decode: {err}")))?;
    e.out.push_str("{\"@type\":");
    write_str(e.out, url);
    if has_special_form(schema, id) {
        e.out.push_str(",\"value\":");
        e.write_message(&inner)
            .map_err(|err| within(err, "value"))?;
    } else {
        e.write_fields(&inner, &mut false)?;
    }
    e.out.push('}');
    Ok(())
}

/// Appends `.fff`, `.ffffff` or `.fffffffff` (the shortest of the three that is exact), or
/// nothing for whole seconds.
fn write_nanos(out: &mut String, nanos: i64) {
    let _ = if nanos == 0 {
        Ok(())
    } else if nanos % 1_000_000 == 0 {
        write!(out, ".{:03}", nanos / 1_000_000)
    } else if nanos % 1000 == 0 {
        write!(out, ".{:06}", nanos / 1000)
    } else {
        write!(out, ".{nanos:09}")
    };
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A fixed-width run of ASCII digits.
fn digits(b: &[u8], from: usize, n: usize) -> Option<i64> {
    let s = b.get(from..from + n)?;
    s.iter().try_fold(0i64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
    })
}

/// `.` and 1 to 9 digits at `b[i..]` as nanoseconds, and the index after them; no fraction
/// gives `(0, i)`.
fn fraction(b: &[u8], i: usize) -> Option<(i64, usize)> {
    if b.get(i) != Some(&b'.') {
        return Some((0, i));
    }
    let n = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 || n > 9 {
        return None;
    }
    let v = digits(b, i + 1, n)?;
    Some((v * 10i64.pow(9 - n as u32), i + 1 + n))
}

/// RFC 3339 `YYYY-MM-DDTHH:MM:SS[.f]` with `Z` or `±HH:MM`, within 0001..9999.
fn parse_timestamp(s: &str) -> Option<(i64, i32)> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d) = (
        digits(b, 0, 4)?,
        digits(b, 5, 2)? as u32,
        digits(b, 8, 2)? as u32,
    );
    let (h, mi, sec) = (digits(b, 11, 2)?, digits(b, 14, 2)?, digits(b, 17, 2)?);
    if y < 1
        || !(1..=12).contains(&mo)
        || d < 1
        || d > days_in_month(y, mo)
        || h > 23
        || mi > 59
        || sec > 59
    {
        return None;
    }
    let (nanos, i) = fraction(b, 19)?;
    let offset = match b.get(i)? {
        b'Z' if i + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
            let (oh, om) = (digits(b, i + 1, 2)?, digits(b, i + 4, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let off = oh * 3600 + om * 60;
            if *sign == b'-' {
                -off
            } else {
                off
            }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - offset;
    if !(TIMESTAMP_MIN_SECONDS..=TIMESTAMP_MAX_SECONDS).contains(&secs) {
        return None;
    }
    Some((secs, nanos as i32))
}

/// `-?S[.f]s` with |S| within the Duration range.
fn parse_duration(s: &str) -> Option<(i64, i32)> {
    let b = s.strip_suffix('s')?.as_bytes();
    let negative = b.first() == Some(&b'-');
    let start = usize::from(negative);
    let n = b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 || n > 12 {
        return None;
    }
    let secs = digits(b, start, n)?;
    let (nanos, end) = fraction(b, start + n)?;
    if end != b.len() || secs > DURATION_MAX_SECONDS {
        return None;
    }
    if negative {
        Some((-secs, -(nanos as i32)))
    } else {
        Some((secs, nanos as i32))
    }
}

/// A FieldMask path from its JSON form: `fooBar` → `foo_bar`; `_` is not allowed.
fn camel_to_snake(p: &str) -> Option<String> {
    let mut out = String::with_capacity(p.len() + 4);
    for c in p.chars() {
        match c {
            '_' => return None,
            'A'..='Z' => {
                out.push('_');
                out.push(c.to_ascii_lowercase());
            }
            _ => out.push(c),
        }
    }
    Some(out)
}

/// A FieldMask path in its JSON form: `foo_bar` → `fooBar`; `None` for paths that would not
/// read back (an upper-case letter, or `_` not followed by a lower-case letter).
fn snake_to_camel(p: &str) -> Option<String> {
    let mut out = String::with_capacity(p.len());
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        match c {
            'A'..='Z' => return None,
            '_' => match chars.next() {
                Some(n @ 'a'..='z') => out.push(n.to_ascii_uppercase()),
                _ => return None,
            },
            _ => out.push(c),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::{conformance_schema, decode, encode, JsonOptions};
    use super::*;

    #[test]
    fn civil_dates_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(1, 1, 1) * 86_400, TIMESTAMP_MIN_SECONDS);
        assert_eq!(
            days_from_civil(9999, 12, 31) * 86_400 + 86_399,
            TIMESTAMP_MAX_SECONDS
        );
        for z in [-719_162, -1, 0, 1, 10_957, 11_016, 2_932_896] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn timestamps_parse() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(parse_timestamp("1970-01-01T08:00:01+08:00"), Some((1, 0)));
        assert_eq!(parse_timestamp("1969-12-31T16:00:01-08:00"), Some((1, 0)));
        assert_eq!(
            parse_timestamp("1993-02-10T00:00:00.000Z"),
            Some((729_302_400, 0))
        );
        assert_eq!(
            parse_timestamp("0001-01-01T00:00:00Z"),
            Some((TIMESTAMP_MIN_SECONDS, 0))
        );
        assert_eq!(
            parse_timestamp("9999-12-31T23:59:59.999999999Z"),
            Some((TIMESTAMP_MAX_SECONDS, 999_999_999))
        );
        assert_eq!(
            parse_timestamp("2000-01-01T00:00:00.5Z"),
            Some((946_684_800, 500_000_000))
        );
        for bad in [
            "0000-01-01T00:00:00Z",
            "10000-01-01T00:00:00Z",
            "0001-01-01T00:00:00",
            "0001-01-01 00:00:00Z",
            "0001-01-01T00:00:00z",
            "0001-01-01t00:00:00Z",
            "2001-02-29T00:00:00Z",
            "2000-01-01T00:00:00.Z",
            "2000-01-01T00:00:00.0000000001Z",
            "2000-01-01T24:00:00Z",
            "2000-01-01T00:00:00+0800",
            "0001-01-01T00:00:00+00:01",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("1.5s"), Some((1, 500_000_000)));
        assert_eq!(parse_duration("-1.5s"), Some((-1, -500_000_000)));
        assert_eq!(parse_duration("-0.5s"), Some((0, -500_000_000)));
        assert_eq!(
            parse_duration("315576000000.999999999s"),
            Some((315_576_000_000, 999_999_999))
        );
        for bad in [
            "1",
            "s",
            "-s",
            "1.s",
            "+1s",
            "315576000001s",
            "1.0000000001s",
            " 1s",
            "1e3s",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn field_mask_paths() {
        assert_eq!(camel_to_snake("barBaz").as_deref(), Some("bar_baz"));
        assert_eq!(camel_to_snake("bar_baz"), None);
        assert_eq!(snake_to_camel("bar_baz.qux").as_deref(), Some("barBaz.qux"));
        for bad in ["fooBar", "foo_3_bar", "foo__bar", "foo_"] {
            assert_eq!(snake_to_camel(bad), None, "{bad}");
        }
    }

    fn round(s: &SchemaSet, text: &str) -> Result<String, Error> {
        let id = s
            .message_by_name("protobuf_test_messages.proto3.TestAllTypesProto3")
            .unwrap();
        let m = decode(s, id, text, &JsonOptions::default())?;
        encode(s, &m, &JsonOptions::default())
    }

    #[test]
    fn well_known_types_round_trip() {
        let s = conformance_schema();
        for (input, output) in [
            (
                r#"{"optionalTimestamp": "1969-12-31T16:00:00-08:00"}"#,
                r#"{"optionalTimestamp":"1970-01-01T00:00:00Z"}"#,
            ),
            (
                r#"{"optionalTimestamp": "1970-01-01T00:00:00.010000000Z"}"#,
                r#"{"optionalTimestamp":"1970-01-01T00:00:00.010Z"}"#,
            ),
            (
                r#"{"optionalDuration": "-315576000000.000010000s"}"#,
                r#"{"optionalDuration":"-315576000000.000010s"}"#,
            ),
            (
                r#"{"optionalDuration": "-0.000000010s"}"#,
                r#"{"optionalDuration":"-0.000000010s"}"#,
            ),
            (
                r#"{"optionalFieldMask": "foo,barBaz"}"#,
                r#"{"optionalFieldMask":"foo,barBaz"}"#,
            ),
            (
                r#"{"optionalFieldMask": ""}"#,
                r#"{"optionalFieldMask":""}"#,
            ),
            (
                r#"{"optionalInt32Wrapper": 0, "optionalStringWrapper": null, "repeatedInt64Wrapper": [1, "2"]}"#,
                r#"{"optionalInt32Wrapper":0,"repeatedInt64Wrapper":["1","2"]}"#,
            ),
            (
                r#"{"optionalStruct": {"a": [1, "x", null, {"b": false}], "c": {}}}"#,
                r#"{"optionalStruct":{"a":[1,"x",null,{"b":false}],"c":{}}}"#,
            ),
            (
                r#"{"optionalValue": null, "repeatedValue": [[], {}, 1.5], "repeatedListValue": [[]]}"#,
                r#"{"optionalValue":null,"repeatedValue":[[],{},1.5],"repeatedListValue":[[]]}"#,
            ),
            (r#"{"optionalAny": {}}"#, r#"{"optionalAny":{}}"#),
            (
                r#"{"optionalAny": {"optionalInt32": 5, "@type": "type.googleapis.com/protobuf_test_messages.proto3.TestAllTypesProto3"}}"#,
                r#"{"optionalAny":{"@type":"type.googleapis.com/protobuf_test_messages.proto3.TestAllTypesProto3","optionalInt32":5}}"#,
            ),
            (
                r#"{"optionalAny": {"@type": "type.googleapis.com/google.protobuf.Any", "value": {"@type": "x/google.protobuf.Duration", "value": "1.5s"}}}"#,
                r#"{"optionalAny":{"@type":"type.googleapis.com/google.protobuf.Any","value":{"@type":"x/google.protobuf.Duration","value":"1.500s"}}}"#,
            ),
            (
                r#"{"optionalAny": {"value": {"foo": 1}, "@type": "type.googleapis.com/google.protobuf.Value"}}"#,
                r#"{"optionalAny":{"@type":"type.googleapis.com/google.protobuf.Value","value":{"foo":1}}}"#,
            ),
        ] {
            assert_eq!(round(&s, input).unwrap(), output, "{input}");
        }
    }

    #[test]
    fn well_known_type_errors() {
        let s = conformance_schema();
        for bad in [
            r#"{"optionalTimestamp": "0000-01-01T00:00:00Z"}"#,
            r#"{"optionalDuration": "1"}"#,
            r#"{"optionalDuration": 1}"#,
            r#"{"optionalFieldMask": "foo,bar_bar"}"#,
            r#"{"optionalAny": {"optionalInt32": 5}}"#,
            r#"{"optionalAny": {"@type": "type.googleapis.com/nope.Nope"}}"#,
            r#"{"optionalAny": {"@type": "type.googleapis.com/google.protobuf.Duration", "value": "1s", "x": 1}}"#,
            r#"{"optionalValue": NaN}"#,
            r#"{"optionalStruct": []}"#,
        ] {
            assert!(round(&s, bad).is_err(), "{bad}");
        }
        // Values that cannot be written name the field.
        let id = s
            .message_by_name("protobuf_test_messages.proto3.TestAllTypesProto3")
            .unwrap();
        let mut m = Message::new(&s, id);
        let ts = m.message_mut(
            &s,
            s.message(id)
                .field_index_by_name("optional_timestamp")
                .unwrap(),
        );
        ts.set_by_name(&s, "seconds", Value::I64(TIMESTAMP_MAX_SECONDS + 1))
            .unwrap();
        match encode(&s, &m, &JsonOptions::default()).unwrap_err() {
            Error::Encode { path, .. } => assert_eq!(
                path,
                "protobuf_test_messages.proto3.TestAllTypesProto3.optional_timestamp"
            ),
            other => panic!("{other}"),
        }
        let mut m = Message::new(&s, id);
        let fm = m.message_mut(
            &s,
            s.message(id)
                .field_index_by_name("optional_field_mask")
                .unwrap(),
        );
        fm.set_by_name(
            &s,
            "paths",
            Value::List(List::String(vec!["foo_3_bar".into()])),
        )
        .unwrap();
        assert!(encode(&s, &m, &JsonOptions::default()).is_err());
        let mut m = Message::new(&s, id);
        let v = m.message_mut(
            &s,
            s.message(id).field_index_by_name("optional_value").unwrap(),
        );
        v.set_by_name(&s, "number_value", Value::F64(f64::NAN))
            .unwrap();
        assert!(encode(&s, &m, &JsonOptions::default()).is_err());
    }

    #[test]
    fn any_edges() {
        let s = conformance_schema();
        let id = s
            .message_by_name("protobuf_test_messages.proto3.TestAllTypesProto3")
            .unwrap();
        let lenient = JsonOptions {
            ignore_unknown: true,
            ..JsonOptions::default()
        };
        let text =
            r#"{"optionalAny": {"x": [1], "@type": "t/google.protobuf.Int32Value", "value": "7"}}"#;
        let m = decode(&s, id, text, &lenient).unwrap();
        assert_eq!(
            encode(&s, &m, &JsonOptions::default()).unwrap(),
            r#"{"optionalAny":{"@type":"t/google.protobuf.Int32Value","value":7}}"#
        );
        let dup = r#"{"optionalAny": {"@type": "t/google.protobuf.Int32Value", "@type": "t/google.protobuf.Int32Value"}}"#;
        let e = decode(&s, id, dup, &JsonOptions::default()).unwrap_err();
        assert_eq!(e.as_decode().unwrap().offset, 58);
        let dup = r#"{"optionalAny": {"@type": "t/protobuf_test_messages.proto3.TestAllTypesProto3", "@type": "x"}}"#;
        let e = decode(&s, id, dup, &lenient).unwrap_err();
        assert_eq!(e.as_decode().unwrap().offset, 80);
        let dup = r#"{"optionalAny": {"optionalInt32": 1, "@type": "t/google.protobuf.Int32Value", "@type": "x"}}"#;
        assert!(decode(&s, id, dup, &lenient).is_err());
        let missing = r#"{"optionalAny": {"optionalInt32": 1}}"#;
        assert_eq!(
            decode(&s, id, missing, &lenient)
                .unwrap_err()
                .as_decode()
                .unwrap()
                .offset,
            16
        );
        let e = decode(
            &s,
            id,
            r#"{"optionalAny": {"@type": "no-slash"}}"#,
            &JsonOptions::default(),
        )
        .unwrap_err();
        assert_eq!(e.as_decode().unwrap().offset, 26);
        assert_eq!(
            e.as_decode().unwrap().path_string(),
            "protobuf_test_messages.proto3.TestAllTypesProto3.optional_any"
        );
        // An Any whose type the schema does not know cannot be written.
        let mut m = Message::new(&s, id);
        let any = m.message_mut(
            &s,
            s.message(id).field_index_by_name("optional_any").unwrap(),
        );
        any.set_by_name(&s, "type_url", Value::String("t/nope.Nope".into()))
            .unwrap();
        match encode(&s, &m, &JsonOptions::default()).unwrap_err() {
            Error::Encode { path, .. } => assert_eq!(
                path,
                "protobuf_test_messages.proto3.TestAllTypesProto3.optional_any"
            ),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn well_known_errors_point_at_the_value() {
        let s = conformance_schema();
        let id = s
            .message_by_name("protobuf_test_messages.proto3.TestAllTypesProto3")
            .unwrap();
        for (text, offset, path) in [
            (
                r#"{"optionalTimestamp": "bad"}"#,
                22,
                "protobuf_test_messages.proto3.TestAllTypesProto3.optional_timestamp",
            ),
            (
                r#"{"repeatedDuration": ["1s", "2"]}"#,
                28,
                "protobuf_test_messages.proto3.TestAllTypesProto3.repeated_duration[1]",
            ),
            (
                r#"{"optionalStruct": {"a": {"b": [1, NaN]}}}"#,
                35,
                r#"protobuf_test_messages.proto3.TestAllTypesProto3.optional_struct["a"]["b"][1]"#,
            ),
        ] {
            let e = decode(&s, id, text, &JsonOptions::default()).unwrap_err();
            let d = e.as_decode().unwrap();
            assert_eq!(
                (d.offset, d.path_string().as_str()),
                (offset, path),
                "{text}"
            );
        }
    }

    #[test]
    fn top_level_well_known_types() {
        let s = conformance_schema();
        let dur = s.message_by_name("google.protobuf.Duration").unwrap();
        let m = decode(&s, dur, " \"-1.5s\" ", &JsonOptions::default()).unwrap();
        assert_eq!(
            encode(&s, &m, &JsonOptions::default()).unwrap(),
            "\"-1.500s\""
        );
        let v = s.message_by_name("google.protobuf.Value").unwrap();
        let m = decode(&s, v, "null", &JsonOptions::default()).unwrap();
        assert_eq!(encode(&s, &m, &JsonOptions::default()).unwrap(), "null");
        let w = s.message_by_name("google.protobuf.BoolValue").unwrap();
        let m = decode(&s, w, "false", &JsonOptions::default()).unwrap();
        assert_eq!(encode(&s, &m, &JsonOptions::default()).unwrap(), "false");
    }
}
