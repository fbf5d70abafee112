//! Message → JSON: walks the instance schema (set fields in number order) and writes compact
//! proto3 JSON.
//!
//! Values that JSON cannot represent (a Timestamp out of range, a NaN in a
//! `google.protobuf.Value`, a FieldMask path that would not read back) fail with
//! [`Error::Encode`], whose path names the field, built as the error propagates out.

use std::fmt::Write;

use optimus_schema::{Cardinality, Field, SchemaSet};

use super::number::{write_f32, write_f64, write_integer, Integer};
use super::{wkt, JsonOptions};
use crate::error::Error;
use crate::message::Message;
use crate::value::{List, MapKey, Value};

/// Sub-messages nest at most this deep on output; messages built by the decoders are far
/// shallower (their depth limits), so this only guards the stack against hand-built chains.
pub(crate) const ENCODE_DEPTH_LIMIT: u32 = 1000;

/// The state of one JSON encode.
pub(crate) struct Encoder<'s, 'o> {
    pub(crate) schema: &'s SchemaSet,
    pub(crate) opts: &'s JsonOptions,
    pub(crate) out: &'o mut String,
    pub(crate) depth: u32,
}

/// An encode error with an empty path.
#[cold]
pub(crate) fn encode_err(why: impl Into<String>) -> Error {
    Error::Encode {
        path: String::new(),
        why: why.into(),
    }
}

/// Prepends `segment` to an encode error's path (`[3]` segments attach without a dot).
#[cold]
pub(crate) fn within(e: Error, segment: &str) -> Error {
    match e {
        Error::Encode { path, why } => {
            let path = if path.is_empty() {
                segment.to_owned()
            } else if path.starts_with('[') {
                format!("{segment}{path}")
            } else {
                format!("{segment}.{path}")
            };
            Error::Encode { path, why }
        }
        other => other,
    }
}

impl<'s, 'o> Encoder<'s, 'o> {
    pub(crate) fn new(schema: &'s SchemaSet, opts: &'s JsonOptions, out: &'o mut String) -> Self {
        Encoder {
            schema,
            opts,
            out,
            depth: 0,
        }
    }

    /// Writes one message: an object, or a well-known type's own form.
    pub(crate) fn write_message(&mut self, msg: &Message) -> Result<(), Error> {
        if self.depth >= ENCODE_DEPTH_LIMIT {
            return Err(encode_err(format!(
                "messages nest deeper than {ENCODE_DEPTH_LIMIT} levels"
            )));
        }
        self.depth += 1;
        let r = match wkt::special_form(self.schema, msg.type_id()) {
            Some(wk) => wkt::write(self, msg, wk),
            None => {
                self.out.push('{');
                let mut first = true;
                let r = self.write_fields(msg, &mut first);
                self.out.push('}');
                r
            }
        };
        self.depth -= 1;
        r
    }

    /// Writes the members of `msg` (without braces), each preceded by a comma unless it is
    /// the `first` member of the object.
    pub(crate) fn write_fields(&mut self, msg: &Message, first: &mut bool) -> Result<(), Error> {
        let schema = self.schema;
        let ty = schema.message(msg.type_id());
        if self.opts.emit_defaults {
            for (index, field) in ty.fields.iter().enumerate() {
                if let Some(v) = msg.get(index) {
                    self.write_member(field, v, first)?;
                } else if emits_default(field) {
                    let v = Value::default_for(schema, field);
                    self.write_member(field, &v, first)?;
                }
            }
        } else {
            for index in msg.set_fields() {
                if let Some(v) = msg.get(index) {
                    self.write_member(&ty.fields[index], v, first)?;
                }
            }
        }
        Ok(())
    }

    pub(crate) fn write_member(
        &mut self,
        field: &Field,
        v: &Value,
        first: &mut bool,
    ) -> Result<(), Error> {
        write_member_name(self.out, self.opts, field, first);
        let seg = || {
            if field.is_extension {
                &field.json_name
            } else {
                &field.name
            }
        };
        self.write_field_value(field, v)
            .map_err(|e| within(e, seg()))
    }

    fn write_field_value(&mut self, field: &Field, v: &Value) -> Result<(), Error> {
        match v {
            Value::List(list) => self.write_list(field, list),
            Value::Map(map) => {
                let (_, value_field) = self.schema.map_entry_fields(field);
                self.out.push('{');
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    match k {
                        MapKey::String(s) => write_str(self.out, s),
                        MapKey::Bool(b) => {
                            self.out.push_str(if *b { "\"true\"" } else { "\"false\"" })
                        }
                        MapKey::I32(n) => quoted(self.out, *n),
                        MapKey::I64(n) => quoted(self.out, *n),
                        MapKey::U32(n) => quoted(self.out, *n),
                        MapKey::U64(n) => quoted(self.out, *n),
                    }
                    self.out.push(':');
                    self.write_value(value_field, v)
                        .map_err(|e| within(e, &key_segment(k)))?;
                }
                self.out.push('}');
                Ok(())
            }
            v => self.write_value(field, v),
        }
    }

    fn write_list(&mut self, field: &Field, list: &List) -> Result<(), Error> {
        self.out.push('[');
        macro_rules! each {
            ($v:expr, |$out:ident, $x:ident| $body:expr) => {
                for (i, $x) in $v.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    let $out = &mut *self.out;
                    $body;
                }
            };
        }
        match list {
            List::Bool(v) => each!(v, |out, x| out.push_str(if *x { "true" } else { "false" })),
            List::I32(v) => each!(v, |out, x| write_int(out, *x)),
            List::U32(v) => each!(v, |out, x| write_int(out, *x)),
            List::I64(v) => each!(v, |out, x| quoted(out, *x)),
            List::U64(v) => each!(v, |out, x| quoted(out, *x)),
            List::F32(v) => each!(v, |out, x| write_f32(out, *x)),
            List::F64(v) => each!(v, |out, x| write_f64(out, *x)),
            List::Enum(v) => each!(v, |out, x| write_enum(self.schema, out, field, *x)),
            List::String(v) => each!(v, |out, x| write_str(out, x)),
            List::Bytes(v) => each!(v, |out, x| write_bytes(out, x)),
            List::Message(v) => {
                for (i, m) in v.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.write_message(m)
                        .map_err(|e| within(e, &format!("[{i}]")))?;
                }
            }
        }
        self.out.push(']');
        Ok(())
    }

    /// Writes one singular value of `field`'s kind.
    pub(crate) fn write_value(&mut self, field: &Field, v: &Value) -> Result<(), Error> {
        let out = &mut *self.out;
        match v {
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::I32(n) => write_int(out, *n),
            Value::U32(n) => write_int(out, *n),
            Value::I64(n) => quoted(out, *n),
            Value::U64(n) => quoted(out, *n),
            Value::F32(x) => write_f32(out, *x),
            Value::F64(x) => write_f64(out, *x),
            Value::Enum(n) => write_enum(self.schema, out, field, *n),
            Value::String(s) => write_str(out, s),
            Value::Bytes(b) => write_bytes(out, b),
            Value::Message(m) => return self.write_message(m),
            Value::List(_) | Value::Map(_) => return self.write_field_value(field, v),
        }
        Ok(())
    }
}

/// Whether `emit_defaults` writes this field when it is unset: fields without presence
/// (outside oneofs), lists and maps.
pub(crate) fn emits_default(field: &Field) -> bool {
    field.oneof.is_none()
        && matches!(
            field.cardinality,
            Cardinality::Singular | Cardinality::Repeated | Cardinality::Map
        )
}

pub(crate) fn key_segment(k: &MapKey) -> String {
    match k {
        MapKey::String(s) => format!("[{s:?}]"),
        MapKey::Bool(b) => format!("[{b}]"),
        MapKey::I32(n) => format!("[{n}]"),
        MapKey::I64(n) => format!("[{n}]"),
        MapKey::U32(n) => format!("[{n}]"),
        MapKey::U64(n) => format!("[{n}]"),
    }
}

/// Writes a member's name and colon, after a comma unless it is the `first` member.
#[inline(always)]
pub(crate) fn write_member_name(
    out: &mut String,
    opts: &JsonOptions,
    field: &Field,
    first: &mut bool,
) {
    if opts.proto_names && !field.is_extension {
        if !std::mem::take(first) {
            out.push(',');
        }
        write_str(out, &field.name);
        out.push(':');
    } else {
        push_key(out, &field.json_key, first);
    }
}

/// Appends a member key already in its JSON form (`"name":`), after a comma unless it is the
/// `first` member: one reservation, the comma stored either way and kept only when needed,
/// and the key copied without a `memcpy` call.
#[inline(always)]
fn push_key(out: &mut String, key: &str, first: &mut bool) {
    let comma = usize::from(!std::mem::take(first));
    out.reserve(key.len() + 1);
    // SAFETY: the comma and `key` (UTF-8) are written after the bytes `out` holds, into the
    // room just reserved; the length then covers the comma if kept, and the key, both whole.
    unsafe {
        let v = out.as_mut_vec();
        let len = v.len();
        let at = v.as_mut_ptr().add(len);
        *at = b',';
        crate::record::copy_short(key.as_bytes(), at.add(comma));
        v.set_len(len + comma + key.len());
    }
}

/// Appends `s`; up to 32 bytes (numbers, short strings) without a `memcpy` call.
#[inline(always)]
pub(crate) fn push_short(out: &mut String, s: &str) {
    out.reserve(s.len());
    // SAFETY: `s` is UTF-8, appended whole after the bytes `out` holds, into the room just
    // reserved; the length then covers exactly what was written.
    unsafe {
        let v = out.as_mut_vec();
        let len = v.len();
        crate::record::copy_short(s.as_bytes(), v.as_mut_ptr().add(len));
        v.set_len(len + s.len());
    }
}

/// Appends an integer as JSON number text.
#[inline]
pub(crate) fn write_int(out: &mut String, n: impl Integer) {
    write_integer(out, n, false);
}

/// Appends an integer as a JSON string (how proto3 JSON writes 64-bit integers and map keys).
#[inline]
pub(crate) fn quoted(out: &mut String, n: impl Integer) {
    write_integer(out, n, true);
}

/// Enum values by name; numbers without a name as numbers; `NullValue` as `null`.
pub(crate) fn write_enum(schema: &SchemaSet, out: &mut String, field: &Field, n: i32) {
    let Some(e) = field.enum_type.map(|e| schema.enum_type(e)) else {
        write_int(out, n);
        return;
    };
    if e.full_name == "google.protobuf.NullValue" {
        out.push_str("null");
    } else if let Some(v) = e.value_by_number(n) {
        write_str(out, &v.name);
    } else {
        write_int(out, n);
    }
}

pub(crate) fn write_bytes(out: &mut String, b: &[u8]) {
    out.push('"');
    super::base64::write(out, b);
    out.push('"');
}

/// Appends `s` as a JSON string: `"` and `\\` escaped, control characters as `\n`-style or
/// `\u00XX` escapes, everything else as is, in runs between the bytes that need escaping.
pub(crate) fn write_str(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    if super::is_plain(bytes) {
        out.reserve(bytes.len() + 2);
        // SAFETY: `s` is UTF-8, appended whole between two quotes after the bytes `out`
        // holds, into the room just reserved; the length then covers exactly what was written.
        unsafe {
            let v = out.as_mut_vec();
            let len = v.len();
            let at = v.as_mut_ptr().add(len);
            *at = b'"';
            crate::record::copy_short(bytes, at.add(1));
            *at.add(1 + bytes.len()) = b'"';
            v.set_len(len + bytes.len() + 2);
        }
        return;
    }
    write_escaped(out, s);
}

/// Appends `s`, which has bytes to escape, as a JSON string.
#[inline(never)]
fn write_escaped(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push('"');
    let mut run = 0;
    loop {
        let i = super::plain_run(bytes, run);
        // `i` is at an ASCII byte or the end, so both slices end on char boundaries.
        push_short(out, &s[run..i]);
        let Some(&b) = bytes.get(i) else { break };
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                let _ = write!(out, "\\u{b:04x}");
            }
        }
        run = i + 1;
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::super::{decode, encode, JsonOptions};
    use super::*;

    #[test]
    fn strings_are_escaped() {
        let mut s = String::new();
        write_str(&mut s, "a\"b\\c\n\u{1}\u{7f}é/");
        assert_eq!(s, "\"a\\\"b\\\\c\\n\\u0001\u{7f}é/\"");
    }

    #[test]
    fn json_errors_have_kinds() {
        use crate::error::{DecodeErrorKind, JsonError};
        let s = SchemaSet::from_source(
            r#"syntax = "proto3"; message M { int32 a = 1; oneof o { string x = 2; string y = 3; } }"#,
        )
        .unwrap();
        let id = s.message_by_name("M").unwrap();
        let kind = |text: &str| {
            let e = decode(&s, id, text, &JsonOptions::default()).unwrap_err();
            match &e.as_decode().expect("a decode error").kind {
                DecodeErrorKind::Json(k) => k.clone(),
                other => panic!("{other:?}"),
            }
        };
        assert!(matches!(kind(r#"{"a":"#), JsonError::Syntax(_)));
        assert!(matches!(kind(r#"{"a":"x"}"#), JsonError::Value(_)));
        assert!(matches!(kind(r#"{"a":1e99}"#), JsonError::Value(_)));
        assert_eq!(
            kind(r#"{"b":1}"#),
            JsonError::UnknownField {
                field: "b".into(),
                message: "M".into()
            }
        );
        assert_eq!(
            kind(r#"{"a":1,"a":2}"#),
            JsonError::DuplicateField("a".into())
        );
        assert_eq!(
            kind(r#"{"x":"1","y":"2"}"#),
            JsonError::OneofConflict("o".into())
        );
        assert_eq!(
            kind(r#"{"a":1,"b":2}"#).to_string(),
            "no field \"b\" in M",
            "the text is the one the string errors had"
        );
    }

    #[test]
    fn member_keys_are_escaped_as_strings_are() {
        for name in [
            "userId",
            "a\"b",
            "back\\slash",
            "tab\there",
            "\u{1}\u{1f}\u{7f}",
            "é✓",
            "\u{8}\u{c}\r\n",
        ] {
            let mut s = String::new();
            write_str(&mut s, name);
            s.push(':');
            assert_eq!(optimus_schema::json_member_key(name), s, "{name:?}");
        }
    }

    fn schema() -> SchemaSet {
        SchemaSet::from_source(
            r#"syntax = "proto2";
               package p;
               message M {
                 optional int32 some_int = 1;
                 repeated string names = 2;
                 map<int64, M> kids = 3;
                 optional E e = 4 [default = TWO];
                 oneof o { string s = 5; bytes b = 6; }
                 optional M sub = 7;
                 extensions 100 to 199;
               }
               enum E { ONE = 1; TWO = 2; }
               extend M { optional int64 ext_num = 100; repeated E ext_es = 101; }
               message P3 { }"#,
        )
        .unwrap()
    }

    #[test]
    fn proto2_with_extensions_round_trips() {
        let s = schema();
        let id = s.message_by_name("p.M").unwrap();
        let text = r#"{"someInt":-1,"names":["x",""],"kids":{"-5":{"e":"ONE"},"7":{}},"b":"AAE=","[p.ext_num]":"12","[p.ext_es]":["TWO",1]}"#;
        let m = decode(&s, id, text, &JsonOptions::default()).unwrap();
        let text = text.replace(r#"["TWO",1]"#, r#"["TWO","ONE"]"#);
        assert_eq!(encode(&s, &m, &JsonOptions::default()).unwrap(), text);
        let names = JsonOptions {
            proto_names: true,
            ..JsonOptions::default()
        };
        let out = encode(&s, &m, &names).unwrap();
        assert!(out.starts_with(r#"{"some_int":-1,"#), "{out}");
        assert!(out.contains(r#""[p.ext_num]":"12""#), "{out}");
        assert_eq!(decode(&s, id, &out, &JsonOptions::default()).unwrap(), m);
    }

    #[test]
    fn deep_messages_are_bounded() {
        let s = SchemaSet::from_source("syntax = \"proto3\"; message R { R r = 1; int32 v = 2; }")
            .unwrap();
        let id = s.message_by_name("R").unwrap();
        let chain = |depth: u32| {
            let mut m = Message::new(&s, id);
            m.set_by_name(&s, "v", Value::I32(1)).unwrap();
            for _ in 1..depth {
                let mut outer = Message::new(&s, id);
                outer
                    .set_by_name(&s, "r", Value::Message(Box::new(m)))
                    .unwrap();
                m = outer;
            }
            m
        };
        let text = encode(&s, &chain(ENCODE_DEPTH_LIMIT), &JsonOptions::default()).unwrap();
        assert_eq!(text.len(), ENCODE_DEPTH_LIMIT as usize * 6 + 1);
        let e = encode(&s, &chain(ENCODE_DEPTH_LIMIT + 1), &JsonOptions::default()).unwrap_err();
        assert!(matches!(e, Error::Encode { .. }), "{e}");
        let opts = JsonOptions {
            depth_limit: ENCODE_DEPTH_LIMIT,
            ..JsonOptions::default()
        };
        assert_eq!(
            encode(&s, &decode(&s, id, &text, &opts).unwrap(), &opts).unwrap(),
            text
        );
    }

    #[test]
    fn emit_defaults_writes_fields_without_presence() {
        let s = SchemaSet::from_source(
            r#"syntax = "proto3";
               message Q { int32 a = 1; optional int32 b = 2; repeated int64 c = 3;
                           map<string, bool> d = 4; Q e = 5; oneof o { int32 f = 6; }
                           E g = 7; bytes h = 8; }
               enum E { ZERO = 0; }"#,
        )
        .unwrap();
        let id = s.message_by_name("Q").unwrap();
        let m = Message::new(&s, id);
        let opts = JsonOptions {
            emit_defaults: true,
            ..JsonOptions::default()
        };
        assert_eq!(
            encode(&s, &m, &opts).unwrap(),
            r#"{"a":0,"c":[],"d":{},"g":"ZERO","h":""}"#
        );
        assert_eq!(encode(&s, &m, &JsonOptions::default()).unwrap(), "{}");
    }
}
