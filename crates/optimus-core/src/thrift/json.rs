//! JSON for Thrift messages, read and written over arena records.
//!
//! A struct is an object keyed by field names (fields by id, unset ones omitted); integers
//! and doubles are numbers (`NaN` and `±Infinity` as the strings `"NaN"`, `"Infinity"`,
//! `"-Infinity"`), binary is standard base64, lists and sets are arrays, enums are value
//! names (a number the enum does not declare stays a number). A map is an object when its
//! keys are strings, integers or enums (keys as their text: the string, the decimal number
//! or the enum name), else an array of `[key, value]` pairs. The reader takes what the writer
//! writes, and also a pair array for any map, numbers for enums, and `null` for an unset field.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use optimus_schema::thrift::{Requiredness, TType};
use optimus_schema::{Entry, EnumId, MessageId, MessageType, SchemaSet, Table};

use super::decode::{facts, Val};
use crate::error::{DecodeError, DecodeErrorKind, JsonError};
use crate::json::JsonOptions;
use crate::record::{read_le, Arena, RecPtr, View};
use crate::view::Record;
use crate::Error;

const BASE64_OUT: GeneralPurpose = base64::engine::general_purpose::STANDARD;
const BASE64_IN: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Writes `record` (of a Thrift schema) as JSON, appending to `out`.
///
/// # Errors
/// [`Error::Encode`] when a `required` field is not set or the type is not a Thrift type.
pub fn encode_json(record: Record<'_>, out: &mut String) -> Result<(), Error> {
    super::check_thrift(record.schema(), record.type_id())?;
    Writer {
        schema: record.schema(),
        out,
    }
    .write_struct(Some(record.ptr), record.type_id().0)
}

struct Writer<'s> {
    schema: &'s SchemaSet,
    out: &'s mut String,
}

/// The record bytes of a single field's slot.
///
/// # Safety
/// `e` is an entry of `rec`'s table.
unsafe fn slot<'a>(rec: RecPtr, e: &Entry) -> &'a [u8] {
    // SAFETY: the caller's duty: the slot lies inside the record.
    unsafe {
        std::slice::from_raw_parts(
            rec.as_slot().add(e.offset as usize),
            e.op.slot_width() as usize,
        )
    }
}

fn is_object_key(t: TType) -> bool {
    matches!(
        t,
        TType::String | TType::Byte | TType::I16 | TType::I32 | TType::I64 | TType::Enum
    )
}

impl Writer<'_> {
    fn write_struct(&mut self, rec: Option<RecPtr>, id: u32) -> Result<(), Error> {
        let schema = self.schema;
        let ty = schema.message(MessageId(id));
        let t = facts(ty).expect("Thrift facts");
        self.out.push('{');
        let mut first = true;
        for &i in &t.order {
            let i = i as usize;
            let tf = &t.fields[i];
            // SAFETY: `i` is an entry index of the record's table.
            let Some(rec) = rec.filter(|r| unsafe { r.has(i) }) else {
                if tf.requiredness == Requiredness::Required {
                    return Err(Error::Encode {
                        path: format!("{}.{}", ty.full_name, ty.fields[i].name),
                        why: "required field is not set".into(),
                    });
                }
                continue;
            };
            if !first {
                self.out.push(',');
            }
            first = false;
            string(self.out, &ty.fields[i].name);
            self.out.push(':');
            let e = &ty.table.entries[i];
            if tf.ty.is_container() {
                self.write_container(Some(rec), id, i)?;
            } else {
                // SAFETY: `e` is entry `i` of `rec`'s table.
                self.write_value(tf.ty, &ty.table, e, unsafe { slot(rec, e) }, false)?;
            }
        }
        self.out.push('}');
        Ok(())
    }

    fn write_container(&mut self, rec: Option<RecPtr>, id: u32, i: usize) -> Result<(), Error> {
        let schema = self.schema;
        let ty = schema.message(MessageId(id));
        let tf = &facts(ty).expect("Thrift facts").fields[i];
        let e = &ty.table.entries[i];
        let width = e.op.scalar().width() as usize;
        // SAFETY: `e` is sequence entry `i` of the record's table, of `width`-byte values.
        let raw = unsafe { super::seq_values(rec, i, e) };
        if tf.ty != TType::Map {
            self.out.push('[');
            for (k, chunk) in raw.chunks_exact(width).enumerate() {
                if k > 0 {
                    self.out.push(',');
                }
                self.write_value(tf.elem, &ty.table, e, chunk, false)?;
            }
            self.out.push(']');
            return Ok(());
        }
        let et = schema.message(MessageId(ty.table.sub_message(e)));
        let ett = facts(et).expect("Thrift facts");
        let object = is_object_key(tf.key);
        self.out.push(if object { '{' } else { '[' });
        for (k, chunk) in raw.chunks_exact(8).enumerate() {
            if k > 0 {
                self.out.push(',');
            }
            let entry = RecPtr::from_slot(read_le(chunk));
            let zero = [0u8; 16];
            let part = |p: usize| match entry {
                // SAFETY: entries 0 and 1 of an entry type are single slots.
                Some(r) => unsafe { slot(r, &et.table.entries[p]) },
                None => &zero[..et.table.entries[p].op.slot_width() as usize],
            };
            if !object {
                self.out.push('[');
            }
            self.write_value(
                ett.fields[0].ty,
                &et.table,
                &et.table.entries[0],
                part(0),
                object,
            )?;
            self.out.push(if object { ':' } else { ',' });
            self.write_value(
                ett.fields[1].ty,
                &et.table,
                &et.table.entries[1],
                part(1),
                false,
            )?;
            if !object {
                self.out.push(']');
            }
        }
        self.out.push(if object { '}' } else { ']' });
        Ok(())
    }

    fn write_value(
        &mut self,
        tt: TType,
        table: &Table,
        e: &Entry,
        raw: &[u8],
        as_key: bool,
    ) -> Result<(), Error> {
        let quote = |out: &mut String, s: &str| {
            if as_key {
                out.push('"');
                out.push_str(s);
                out.push('"');
            } else {
                out.push_str(s);
            }
        };
        match tt {
            TType::Bool => self
                .out
                .push_str(if raw[0] != 0 { "true" } else { "false" }),
            TType::Byte | TType::I16 | TType::I32 => {
                quote(self.out, itoa::Buffer::new().format(read_le::<i32>(raw)))
            }
            TType::I64 => quote(self.out, itoa::Buffer::new().format(read_le::<i64>(raw))),
            TType::Enum => {
                let n = read_le::<i32>(raw);
                let en = self.schema.enum_type(EnumId(table.enum_type(e)));
                match en.value_by_number(n) {
                    Some(v) => string(self.out, &v.name),
                    None => quote(self.out, itoa::Buffer::new().format(n)),
                }
            }
            TType::Double => {
                let d = read_le::<f64>(raw);
                if d.is_nan() {
                    self.out.push_str("\"NaN\"");
                } else if d.is_infinite() {
                    self.out.push_str(if d > 0.0 {
                        "\"Infinity\""
                    } else {
                        "\"-Infinity\""
                    });
                } else {
                    self.out.push_str(&format!("{d:?}"));
                }
            }
            TType::String => {
                // SAFETY: string views point at checked UTF-8 living as long as the record.
                let bytes = unsafe { read_le::<View>(raw).bytes() };
                string(self.out, std::str::from_utf8(bytes).unwrap_or_default());
            }
            TType::Binary => {
                // SAFETY: bytes views point at memory living as long as the record.
                let bytes = unsafe { read_le::<View>(raw).bytes() };
                self.out.push('"');
                BASE64_OUT.encode_string(bytes, self.out);
                self.out.push('"');
            }
            TType::Struct => {
                self.write_struct(RecPtr::from_slot(read_le(raw)), table.sub_message(e))?;
            }
            TType::List | TType::Set | TType::Map => {
                self.write_container(RecPtr::from_slot(read_le(raw)), table.sub_message(e), 0)?;
            }
        }
        Ok(())
    }
}

/// Appends `s` as a JSON string.
fn string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let esc = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            c if (c as u32) < 0x20 => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push_str(esc);
        }
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Reads a struct of type `id` from JSON `text` into `arena`; strings without escapes are
/// viewed in `text`.
///
/// # Errors
/// [`Error::Decode`] with the byte offset and field path: bad JSON, a value of the wrong
/// type or out of range, an unknown field or enum name (unless `opts.ignore_unknown`), a
/// missing `required` field, nesting deeper than `opts.depth_limit`, trailing text;
/// [`Error::Encode`] when `id` is not a Thrift type.
pub fn decode_json<'a>(
    schema: &'a SchemaSet,
    id: MessageId,
    text: &'a str,
    arena: &'a Arena,
    opts: &JsonOptions,
) -> Result<Record<'a>, Error> {
    super::check_thrift(schema, id)?;
    let mut r = Reader {
        schema,
        b: text.as_bytes(),
        pos: 0,
        arena,
        opts,
    };
    let root = || schema.message(id).full_name.clone();
    let rec = RecPtr::new(arena, &schema.message(id).table);
    r.read_struct(rec, id.0, 0)
        .and_then(|()| {
            r.ws();
            if r.pos != r.b.len() {
                return Err(DecodeError::new(r.pos, DecodeErrorKind::TrailingData));
            }
            Ok(())
        })
        .map_err(|e| Error::from(e).within(root()))?;
    Ok(Record::new(schema, id, rec))
}

type R<T> = Result<T, DecodeError>;

struct Reader<'a, 'o> {
    schema: &'a SchemaSet,
    b: &'a [u8],
    pos: usize,
    arena: &'a Arena,
    opts: &'o JsonOptions,
}

/// A JSON string: viewed in the text, or unescaped into the arena.
type Text<'a> = &'a [u8];

impl<'a> Reader<'a, '_> {
    /// Malformed JSON text at `at`.
    #[cold]
    fn fail<T>(&self, at: usize, why: impl Into<String>) -> R<T> {
        Err(DecodeError::new(
            at,
            DecodeErrorKind::Json(JsonError::Syntax(why.into())),
        ))
    }

    /// A value that is not one of its field's at `at`.
    #[cold]
    fn fail_value<T>(&self, at: usize, why: impl Into<String>) -> R<T> {
        Err(DecodeError::new(
            at,
            DecodeErrorKind::Json(JsonError::Value(why.into())),
        ))
    }

    fn ws(&mut self) {
        while self
            .b
            .get(self.pos)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.pos).copied()
    }

    fn expect(&mut self, c: u8) -> R<()> {
        if self.peek() == Some(c) {
            self.pos += 1;
            return Ok(());
        }
        self.fail(self.pos, format!("expected '{}'", c as char))
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn eat_word(&mut self, w: &str) -> bool {
        self.ws();
        let hit = self.b[self.pos..].starts_with(w.as_bytes());
        if hit {
            self.pos += w.len();
        }
        hit
    }

    fn deeper(&self, depth: u32) -> R<u32> {
        if depth >= self.opts.depth_limit {
            return Err(DecodeError::new(
                self.pos,
                DecodeErrorKind::TooDeep(self.opts.depth_limit),
            ));
        }
        Ok(depth + 1)
    }

    /// A string's bytes (checked UTF-8).
    fn string(&mut self) -> R<Text<'a>> {
        self.expect(b'"')?;
        let start = self.pos;
        while let Some(&c) = self.b.get(self.pos) {
            match c {
                b'"' => {
                    self.pos += 1;
                    return Ok(&self.b[start..self.pos - 1]);
                }
                b'\\' => return self.escaped(start),
                c if c < 0x20 => return self.fail(self.pos, "control character in a string"),
                _ => self.pos += 1,
            }
        }
        self.fail(self.pos, "unterminated string")
    }

    #[cold]
    fn escaped(&mut self, start: usize) -> R<Text<'a>> {
        let mut out = self.b[start..self.pos].to_vec();
        loop {
            let Some(&c) = self.b.get(self.pos) else {
                return self.fail(self.pos, "unterminated string");
            };
            self.pos += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.b.get(self.pos) else {
                        return self.fail(self.pos, "unterminated string");
                    };
                    self.pos += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = if (0xd800..0xdc00).contains(&hi) {
                                if !self.b[self.pos..].starts_with(b"\\u") {
                                    return self.fail(self.pos, "unpaired surrogate");
                                }
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return self.fail(self.pos, "unpaired surrogate");
                                }
                                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                            } else {
                                hi
                            };
                            match char::from_u32(cp) {
                                Some(ch) => ch,
                                None => return self.fail(self.pos, "unpaired surrogate"),
                            }
                        }
                        _ => return self.fail(self.pos - 1, "bad escape"),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                c if c < 0x20 => return self.fail(self.pos - 1, "control character in a string"),
                c => out.push(c),
            }
        }
        // SAFETY: `alloc_copy` made a view of arena memory, which lives for 'a.
        Ok(unsafe { self.arena.alloc_copy(&out).bytes() })
    }

    fn hex4(&mut self) -> R<u32> {
        let Some(h) = self.b.get(self.pos..self.pos + 4) else {
            return self.fail(self.pos, "truncated \\u escape");
        };
        let s = std::str::from_utf8(h).unwrap_or("x");
        let v = u32::from_str_radix(s, 16);
        match v {
            Ok(v) => {
                self.pos += 4;
                Ok(v)
            }
            Err(_) => self.fail(self.pos, "bad \\u escape"),
        }
    }

    /// A number's text (or a quoted one).
    fn number_text(&mut self) -> R<&'a str> {
        self.ws();
        if self.peek() == Some(b'"') {
            let s = self.string()?;
            return Ok(std::str::from_utf8(s).unwrap_or(""));
        }
        let start = self.pos;
        while self
            .b
            .get(self.pos)
            .is_some_and(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
        {
            self.pos += 1;
        }
        if start == self.pos {
            return self.fail_value(start, "expected a number");
        }
        Ok(std::str::from_utf8(&self.b[start..self.pos]).expect("ASCII"))
    }

    fn integer(&mut self, min: i64, max: i64) -> R<i64> {
        let at = self.pos;
        let s = self.number_text()?;
        let v = s.parse::<i64>().ok().or_else(|| {
            let f: f64 = s.parse().ok()?;
            (f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64)
        });
        match v {
            Some(v) if (min..=max).contains(&v) => Ok(v),
            _ => self.fail_value(at, format!("{s:?} is not an integer in [{min}, {max}]")),
        }
    }

    fn read_struct(&mut self, rec: RecPtr, id: u32, depth: u32) -> R<()> {
        let depth = self.deeper(depth)?;
        let schema = self.schema;
        let ty = schema.message(MessageId(id));
        let t = facts(ty).expect("Thrift facts");
        self.expect(b'{')?;
        if !self.eat(b'}') {
            loop {
                let at = self.pos;
                let name = self.string()?;
                self.expect(b':')?;
                let name = std::str::from_utf8(name).unwrap_or("");
                match ty.field_index_by_name(name) {
                    None if self.opts.ignore_unknown => self.skip_value(depth)?,
                    None => {
                        return Err(DecodeError::new(
                            at,
                            DecodeErrorKind::Json(JsonError::UnknownField {
                                field: name.into(),
                                message: ty.full_name.clone(),
                            }),
                        ))
                    }
                    Some(_) if self.eat_word("null") => {}
                    Some(i) => {
                        let tf = &t.fields[i];
                        let e = &ty.table.entries[i];
                        let read = if tf.ty.is_container() {
                            self.read_container(rec, ty, i, depth)
                        } else {
                            self.read_value(tf.ty, &ty.table, e, depth).map(|v| {
                                // SAFETY: `e` is a single entry of `rec`'s table; the value
                                // has its width.
                                unsafe { v.store(rec, e.offset) }
                            })
                        };
                        read.map_err(|err| within(err, &ty.fields[i].name))?;
                        // SAFETY: `i` is an entry index of `rec`'s table.
                        unsafe { rec.set_bit(i, true) };
                    }
                }
                if self.eat(b'}') {
                    break;
                }
                self.expect(b',')?;
            }
        }
        for &r in &ty.required_fields {
            // SAFETY: required field indices are entries of `rec`'s table.
            if !unsafe { rec.has(r as usize) } {
                return Err(DecodeError::new(
                    self.pos,
                    DecodeErrorKind::MissingRequired(format!(
                        "{}.{}",
                        ty.full_name, ty.fields[r as usize].name
                    )),
                ));
            }
        }
        Ok(())
    }

    fn read_container(&mut self, rec: RecPtr, ty: &MessageType, i: usize, depth: u32) -> R<()> {
        let depth = self.deeper(depth)?;
        let tf = &facts(ty).expect("Thrift facts").fields[i];
        let e = &ty.table.entries[i];
        // SAFETY: `e` is a sequence entry of `rec`'s table: an all-zero header is empty.
        unsafe { rec.write(e.offset, [0u64; 2]) };
        if tf.ty != TType::Map {
            self.expect(b'[')?;
            let mut k = 0usize;
            if !self.eat(b']') {
                loop {
                    let v = self
                        .read_value(tf.elem, &ty.table, e, depth)
                        .map_err(|err| within(err, &format!("[{k}]")))?;
                    // SAFETY: `e` is a sequence of values of `v`'s width in `rec`, in the arena.
                    unsafe { v.push(rec, self.arena, e.offset) };
                    k += 1;
                    if self.eat(b']') {
                        break;
                    }
                    self.expect(b',')?;
                }
            }
            if tf.ty == TType::Set {
                // SAFETY: `e` is a sequence of `tf.elem` values in `rec`, in the arena.
                unsafe { super::dedupe_set(rec, self.arena, e.offset, tf.elem) };
            }
            return Ok(());
        }
        let entry_id = ty.table.sub_message(e);
        let et = self.schema.message(MessageId(entry_id));
        let ett = facts(et).expect("Thrift facts");
        let object = match self.peek() {
            Some(b'{') => true,
            Some(b'[') => false,
            _ => {
                return self.fail_value(self.pos, "expected a map: an object or an array of pairs")
            }
        };
        self.pos += 1;
        let close = if object { b'}' } else { b']' };
        if object && !is_object_key(tf.key) {
            return self.fail_value(
                self.pos - 1,
                "this map's keys need an array of [key, value] pairs",
            );
        }
        if self.eat(close) {
            return Ok(());
        }
        let mut k = 0usize;
        loop {
            let entry = RecPtr::new(self.arena, &et.table);
            let read = |this: &mut Self| -> R<()> {
                if !object {
                    this.expect(b'[')?;
                }
                let (ke, ve) = (&et.table.entries[0], &et.table.entries[1]);
                let key = if object {
                    this.object_key(ett.fields[0].ty, &et.table, ke)?
                } else {
                    this.read_value(ett.fields[0].ty, &et.table, ke, depth)?
                };
                this.expect(if object { b':' } else { b',' })?;
                let value = this.read_value(ett.fields[1].ty, &et.table, ve, depth)?;
                if !object {
                    this.expect(b']')?;
                }
                // SAFETY: entries 0 and 1 of an entry type are single slots of these widths.
                unsafe {
                    key.store(entry, ke.offset);
                    value.store(entry, ve.offset);
                    entry.set_bit(0, true);
                    entry.set_bit(1, true);
                }
                Ok(())
            };
            read(self).map_err(|err| within(err, &format!("[{k}]")))?;
            // SAFETY: `e` is a map: a sequence of 8-byte entry pointers in `rec`.
            unsafe { Val::Record(entry.as_slot()).push(rec, self.arena, e.offset) };
            k += 1;
            if self.eat(close) {
                break;
            }
            self.expect(b',')?;
        }
        Ok(())
    }

    /// A map key written as an object member name.
    fn object_key(&mut self, tt: TType, table: &Table, e: &Entry) -> R<Val> {
        self.ws();
        let at = self.pos;
        match tt {
            TType::String => Ok(Val::View(View::of(self.string()?))),
            TType::Enum => self.enum_value(table, e),
            _ => {
                let s = self.string()?;
                let s = std::str::from_utf8(s).unwrap_or("");
                let (min, max) = int_range(tt);
                match s.parse::<i64>() {
                    Ok(v) if (min..=max).contains(&v) => Ok(int_val(tt, v)),
                    _ => self
                        .fail_value(at, format!("{s:?} is not an integer key in [{min}, {max}]")),
                }
            }
        }
    }

    fn enum_value(&mut self, table: &Table, e: &Entry) -> R<Val> {
        let at = self.pos;
        if self.peek() == Some(b'"') {
            let name = self.string()?;
            let name = std::str::from_utf8(name).unwrap_or("");
            let en = self.schema.enum_type(EnumId(table.enum_type(e)));
            if let Some(v) = en.value_by_name(name) {
                return Ok(Val::Word(v.number as u32));
            }
            if let Ok(n) = name.parse::<i32>() {
                return Ok(Val::Word(n as u32));
            }
            return self.fail_value(at, format!("{name:?} is not a value of {}", en.full_name));
        }
        Ok(Val::Word(
            self.integer(i32::MIN.into(), i32::MAX.into())? as i32 as u32,
        ))
    }

    fn read_value(&mut self, tt: TType, table: &Table, e: &Entry, depth: u32) -> R<Val> {
        self.ws();
        let at = self.pos;
        Ok(match tt {
            TType::Bool => {
                if self.eat_word("true") {
                    Val::Byte(1)
                } else if self.eat_word("false") {
                    Val::Byte(0)
                } else {
                    return self.fail_value(at, "expected true or false");
                }
            }
            TType::Byte | TType::I16 | TType::I32 | TType::I64 => {
                let (min, max) = int_range(tt);
                int_val(tt, self.integer(min, max)?)
            }
            TType::Enum => self.enum_value(table, e)?,
            TType::Double => {
                let s = self.number_text()?;
                let d = match s {
                    "NaN" => f64::NAN,
                    "Infinity" => f64::INFINITY,
                    "-Infinity" => f64::NEG_INFINITY,
                    _ => match s.parse::<f64>() {
                        Ok(d) if d.is_finite() => d,
                        _ => return self.fail_value(at, format!("{s:?} is not a double")),
                    },
                };
                Val::Double(d.to_bits())
            }
            TType::String => {
                let s = self.string()?;
                if std::str::from_utf8(s).is_err() {
                    return Err(DecodeError::new(at, DecodeErrorKind::InvalidUtf8));
                }
                Val::View(View::of(s))
            }
            TType::Binary => {
                let s = self.string()?;
                let Ok(bytes) = BASE64_IN.decode(s) else {
                    return self.fail_value(at, "invalid base64");
                };
                Val::View(self.arena.alloc_copy(&bytes))
            }
            TType::Struct => {
                let id = table.sub_message(e);
                let sub = RecPtr::new(self.arena, &self.schema.message(MessageId(id)).table);
                self.read_struct(sub, id, depth)?;
                Val::Record(sub.as_slot())
            }
            TType::List | TType::Set | TType::Map => {
                let id = table.sub_message(e);
                let wty = self.schema.message(MessageId(id));
                let w = RecPtr::new(self.arena, &wty.table);
                self.read_container(w, wty, 0, depth)?;
                // SAFETY: a wrapper's one field is entry 0.
                unsafe { w.set_bit(0, true) };
                Val::Record(w.as_slot())
            }
        })
    }

    /// Skips any JSON value (an unknown member's, with `ignore_unknown`).
    fn skip_value(&mut self, depth: u32) -> R<()> {
        let depth = self.deeper(depth)?;
        match self.peek() {
            Some(b'"') => {
                self.string()?;
            }
            Some(b'{') => {
                self.pos += 1;
                if !self.eat(b'}') {
                    loop {
                        self.string()?;
                        self.expect(b':')?;
                        self.skip_value(depth)?;
                        if self.eat(b'}') {
                            break;
                        }
                        self.expect(b',')?;
                    }
                }
            }
            Some(b'[') => {
                self.pos += 1;
                if !self.eat(b']') {
                    loop {
                        self.skip_value(depth)?;
                        if self.eat(b']') {
                            break;
                        }
                        self.expect(b',')?;
                    }
                }
            }
            _ => {
                if !(self.eat_word("true") || self.eat_word("false") || self.eat_word("null")) {
                    self.number_text()?;
                }
            }
        }
        Ok(())
    }
}

fn int_range(tt: TType) -> (i64, i64) {
    match tt {
        TType::Byte => (i8::MIN.into(), i8::MAX.into()),
        TType::I16 => (i16::MIN.into(), i16::MAX.into()),
        TType::I64 => (i64::MIN, i64::MAX),
        _ => (i32::MIN.into(), i32::MAX.into()),
    }
}

fn int_val(tt: TType, v: i64) -> Val {
    if tt == TType::I64 {
        Val::Double(v as u64)
    } else {
        Val::Word(v as i32 as u32)
    }
}

#[cold]
fn within(mut err: DecodeError, segment: &str) -> DecodeError {
    err.path.insert(0, segment.to_string());
    err
}
