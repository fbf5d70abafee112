//! Text format written from arena records, as C++ `TextFormat::Printer` writes it.

use optimus_schema::{Field, Kind, MessageId, SchemaSet, Shape, WellKnown};

use super::TextOptions;
use crate::binary::DecodeOptions;
use crate::record::Arena;
use crate::view::{FieldRef, Record};
use crate::Error;

/// Writes `record` (see [`super::encode`]).
pub(super) fn encode(
    record: Record<'_>,
    opts: &TextOptions,
    out: &mut String,
) -> Result<(), Error> {
    let start = out.len();
    let mut w = Writer {
        schema: record.schema(),
        opts,
        out,
        indent: 0,
        depth: 0,
    };
    let r = w.body(record);
    if opts.single_line && out.len() > start && out.ends_with(' ') {
        out.pop();
    }
    r.map_err(|e| within(e, &record.schema().message(record.type_id()).full_name))
}

struct Writer<'s, 'o> {
    schema: &'s SchemaSet,
    opts: &'s TextOptions,
    out: &'o mut String,
    indent: usize,
    depth: u32,
}

impl Writer<'_, '_> {
    /// The fields of `rec` in number order, then its unknown fields if asked for.
    fn body(&mut self, rec: Record<'_>) -> Result<(), Error> {
        let is_any = self.schema.message(rec.type_id()).well_known == Some(WellKnown::Any);
        if is_any && self.any(rec)? {
            return Ok(());
        }
        let ty = self.schema.message(rec.type_id());
        for index in rec.set_fields() {
            let field = &ty.fields[index];
            let name = field_name(self.schema, rec.type_id(), field);
            self.field(rec, index, field, name)
                .map_err(|e| within(e, name))?;
        }
        if self.opts.print_unknown {
            let unknown = rec.unknown_fields();
            if !unknown.is_empty() {
                let budget = self.opts.depth_limit.saturating_sub(self.depth);
                if let Some(set) = parse_unknown(unknown, budget) {
                    self.unknown(&set, budget)?;
                }
            }
        }
        Ok(())
    }

    /// An `Any` in its expanded form `[type_url] { ... }`, when its type is in the schema
    /// and its value reads as one; `false` (nothing written) otherwise.
    fn any(&mut self, rec: Record<'_>) -> Result<bool, Error> {
        let ty = self.schema.message(rec.type_id());
        let (Some(url_i), Some(value_i)) =
            (ty.field_index_by_number(1), ty.field_index_by_number(2))
        else {
            return Ok(false);
        };
        let Some(FieldRef::Str(url)) = rec.get(url_i) else {
            return Ok(false);
        };
        let value = match rec.get(value_i) {
            Some(FieldRef::Bytes(b)) => b,
            _ => &[],
        };
        let Some((_, name)) = url.rsplit_once('/') else {
            return Ok(false);
        };
        let Some(id) = self.schema.message_by_name(name) else {
            return Ok(false);
        };
        let arena = Arena::new();
        let opts = DecodeOptions {
            depth_limit: self.opts.depth_limit.saturating_sub(self.depth + 1),
            ..DecodeOptions::default()
        };
        let Ok(inner) = crate::engine::decode(self.schema, id, value, &arena, &opts) else {
            return Ok(false);
        };
        self.line_start();
        self.out.push('[');
        self.out.push_str(url);
        self.out.push(']');
        self.nested(inner)
            .map_err(|e| within(e, &format!("[{url}]")))?;
        Ok(true)
    }

    fn field(
        &mut self,
        rec: Record<'_>,
        index: usize,
        field: &Field,
        name: &str,
    ) -> Result<(), Error> {
        let e = &self.schema.message(rec.type_id()).table.entries[index];
        match e.op.shape() {
            Shape::Single => match rec.get(index) {
                Some(v) => self.entry(name, field, v),
                None => Ok(()),
            },
            Shape::Repeated | Shape::Packed => {
                for (i, v) in rec.elements(index).enumerate() {
                    self.entry(name, field, v)
                        .map_err(|e| within(e, &format!("[{i}]")))?;
                }
                Ok(())
            }
            Shape::Map => self.map(rec, index, field, name),
        }
    }

    /// A map's entries sorted by key (the last of equal keys), each as a message with its
    /// key and value, as C++ writes them.
    fn map(
        &mut self,
        rec: Record<'_>,
        index: usize,
        field: &Field,
        name: &str,
    ) -> Result<(), Error> {
        let (key_field, value_field) = self.schema.map_entry_fields(field);
        let mut entries: Vec<(Key<'_>, Record<'_>)> = Vec::new();
        for entry in rec.elements(index) {
            if let FieldRef::Message(entry) = entry {
                let key = entry.get(0).unwrap_or_else(|| default_ref(key_field));
                entries.push((Key::of(key), entry));
            }
        }
        // Stable: equal keys stay in arrival order, and the last of them is kept.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut i = 0;
        while i < entries.len() {
            if i + 1 < entries.len() && entries[i + 1].0 == entries[i].0 {
                i += 1;
                continue;
            }
            let entry = entries[i].1;
            self.line_start();
            self.out.push_str(name);
            self.open()?;
            let key = entry.get(0).unwrap_or_else(|| default_ref(key_field));
            self.line_start();
            self.out.push_str("key: ");
            self.scalar(key_field, key);
            self.line_end();
            match entry.get(1) {
                Some(FieldRef::Message(m)) => {
                    self.line_start();
                    self.out.push_str("value");
                    self.nested(m)?;
                }
                Some(v) => {
                    self.line_start();
                    self.out.push_str("value: ");
                    self.scalar(value_field, v);
                    self.line_end();
                }
                None if value_field.kind.is_message() => {
                    self.line_start();
                    self.out.push_str("value");
                    self.open()?;
                    self.close();
                }
                None => {
                    self.line_start();
                    self.out.push_str("value: ");
                    self.scalar(value_field, default_ref(value_field));
                    self.line_end();
                }
            }
            self.close();
            i += 1;
        }
        Ok(())
    }

    /// One value of `field` on its own line: `name: value` or `name { ... }`.
    fn entry(&mut self, name: &str, field: &Field, v: FieldRef<'_>) -> Result<(), Error> {
        self.line_start();
        self.out.push_str(name);
        match v {
            FieldRef::Message(m) => self.nested(m),
            v => {
                self.out.push_str(": ");
                self.scalar(field, v);
                self.line_end();
                Ok(())
            }
        }
    }

    /// ` { fields }` after a field name.
    fn nested(&mut self, m: Record<'_>) -> Result<(), Error> {
        self.open()?;
        let r = self.body(m);
        self.close();
        r
    }

    fn open(&mut self) -> Result<(), Error> {
        if self.depth >= self.opts.depth_limit {
            return Err(Error::Encode {
                path: String::new(),
                why: format!("messages nest deeper than {} levels", self.opts.depth_limit),
            });
        }
        self.depth += 1;
        self.out.push_str(" {");
        self.line_end();
        self.indent += 1;
        Ok(())
    }

    fn close(&mut self) {
        self.depth -= 1;
        self.indent -= 1;
        self.line_start();
        self.out.push('}');
        self.line_end();
    }

    fn line_start(&mut self) {
        if !self.opts.single_line {
            for _ in 0..self.indent {
                self.out.push_str("  ");
            }
        }
    }

    fn line_end(&mut self) {
        self.out
            .push(if self.opts.single_line { ' ' } else { '\n' });
    }

    /// A scalar, string or enum value as C++ writes it.
    fn scalar(&mut self, field: &Field, v: FieldRef<'_>) {
        use std::fmt::Write as _;
        let out = &mut *self.out;
        // Writing to a String cannot fail.
        let _ = match v {
            FieldRef::Bool(b) => write!(out, "{b}"),
            FieldRef::I32(n) => write!(out, "{n}"),
            FieldRef::I64(n) => write!(out, "{n}"),
            FieldRef::U32(n) => write!(out, "{n}"),
            FieldRef::U64(n) => write!(out, "{n}"),
            FieldRef::F32(x) => {
                write_float(out, f64::from(x), || {
                    zmij::Buffer::new().format_finite(x).to_owned()
                });
                Ok(())
            }
            FieldRef::F64(x) => {
                write_float(out, x, || zmij::Buffer::new().format_finite(x).to_owned());
                Ok(())
            }
            FieldRef::Enum(n) => {
                let name = field
                    .enum_type
                    .and_then(|e| self.schema.enum_type(e).value_by_number(n));
                match name {
                    Some(v) => write!(out, "{}", v.name),
                    None => write!(out, "{n}"),
                }
            }
            FieldRef::Str(s) => {
                out.push('"');
                escape_str(out, s);
                out.push('"');
                Ok(())
            }
            FieldRef::Bytes(b) => {
                out.push('"');
                escape(out, b);
                out.push('"');
                Ok(())
            }
            FieldRef::Message(_) => unreachable!("messages are written by `entry`"),
        };
    }

    /// Unknown fields by number, as C++ `PrintUnknownFields`.
    fn unknown(&mut self, set: &[(u32, Unknown<'_>)], budget: u32) -> Result<(), Error> {
        use std::fmt::Write as _;
        for (number, v) in set {
            self.line_start();
            let _ = write!(self.out, "{number}");
            match v {
                Unknown::Varint(n) => {
                    let _ = write!(self.out, ": {n}");
                    self.line_end();
                }
                Unknown::Fixed32(n) => {
                    let _ = write!(self.out, ": 0x{n:08x}");
                    self.line_end();
                }
                Unknown::Fixed64(n) => {
                    let _ = write!(self.out, ": 0x{n:016x}");
                    self.line_end();
                }
                Unknown::Bytes(b) => {
                    match (budget > 0 && !b.is_empty())
                        .then(|| parse_unknown(b, budget - 1))
                        .flatten()
                    {
                        Some(inner) => {
                            self.open()?;
                            self.unknown(&inner, budget - 1)?;
                            self.close();
                        }
                        None => {
                            self.out.push_str(": \"");
                            escape(self.out, b);
                            self.out.push('"');
                            self.line_end();
                        }
                    }
                }
                Unknown::Group(inner) => {
                    self.open()?;
                    self.unknown(inner, budget.saturating_sub(1))?;
                    self.close();
                }
            }
        }
        Ok(())
    }
}

/// A map key, ordered as C++ sorts them (integers by value, `false` first, strings by
/// bytes); every key of one map is of one variant.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Key<'a> {
    Bool(bool),
    Signed(i64),
    Unsigned(u64),
    Str(&'a str),
}

impl<'a> Key<'a> {
    fn of(v: FieldRef<'a>) -> Key<'a> {
        match v {
            FieldRef::Bool(b) => Key::Bool(b),
            FieldRef::I32(n) => Key::Signed(n.into()),
            FieldRef::I64(n) => Key::Signed(n),
            FieldRef::U32(n) => Key::Unsigned(n.into()),
            FieldRef::U64(n) => Key::Unsigned(n),
            FieldRef::Str(s) => Key::Str(s),
            _ => Key::Bool(false),
        }
    }
}

/// The zero value of a scalar field, as a map entry's missing key or value reads.
pub(super) fn default_ref(field: &Field) -> FieldRef<'static> {
    match field.kind {
        Kind::Bool => FieldRef::Bool(false),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => FieldRef::I32(0),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => FieldRef::I64(0),
        Kind::Uint32 | Kind::Fixed32 => FieldRef::U32(0),
        Kind::Uint64 | Kind::Fixed64 => FieldRef::U64(0),
        Kind::Float => FieldRef::F32(0.0),
        Kind::Double => FieldRef::F64(0.0),
        Kind::Enum => FieldRef::Enum(0),
        Kind::String => FieldRef::Str(""),
        Kind::Bytes => FieldRef::Bytes(&[]),
        Kind::Message | Kind::Group => unreachable!("a message has no scalar default"),
    }
}

/// The name a field of `owner` is written with: `[pkg.ext]` for an extension, the type
/// name for a group-like field, else the declared name.
pub(super) fn field_name<'s>(schema: &'s SchemaSet, owner: MessageId, field: &'s Field) -> &'s str {
    if field.is_extension {
        return &field.json_name;
    }
    group_type(schema, owner, field).unwrap_or(&field.name)
}

/// The type name of a group-like field of `owner`, as C++ `IsGroupLike` sees one: a group
/// (or delimited) field named as its type in lower case, the type declared in `owner`.
pub(super) fn group_type<'s>(
    schema: &'s SchemaSet,
    owner: MessageId,
    field: &Field,
) -> Option<&'s str> {
    if field.kind != Kind::Group || field.is_extension {
        return None;
    }
    let ty = schema.message(field.message?);
    let name = ty.name();
    let scope = ty.full_name.strip_suffix(name)?.strip_suffix('.')?;
    (field.name == name.to_ascii_lowercase() && scope == schema.message(owner).full_name)
        .then_some(name)
}

/// `inf`, `-inf`, `nan`, or the shortest digits that read back to the same value (a whole
/// number without its `.0`, as C++ writes `1`).
fn write_float(out: &mut String, v: f64, digits: impl FnOnce() -> String) {
    if v.is_nan() {
        out.push_str("nan");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "inf" } else { "-inf" });
    } else {
        let text = digits();
        out.push_str(text.strip_suffix(".0").unwrap_or(&text));
    }
}

/// C-escapes a string as C++ `Utf8SafeCEscape`: ASCII controls, quotes and backslashes
/// escaped, UTF-8 kept as it is.
pub(super) fn escape_str(out: &mut String, s: &str) {
    use std::fmt::Write as _;
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '"' => out.push_str("\\\""),
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\{:03o}", c as u32);
            }
            c => out.push(c),
        }
    }
}

/// C-escapes bytes as C++ `CEscape`: octal escapes for every byte outside printable ASCII.
pub(super) fn escape(out: &mut String, bytes: &[u8]) {
    use std::fmt::Write as _;
    for &b in bytes {
        match b {
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b'"' => out.push_str("\\\""),
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
}

/// Prefixes an encode error's path with `segment`.
fn within(e: Error, segment: &str) -> Error {
    match e {
        Error::Encode { path, why } => Error::Encode {
            path: if path.is_empty() {
                segment.to_owned()
            } else if path.starts_with('[') {
                format!("{segment}{path}")
            } else {
                format!("{segment}.{path}")
            },
            why,
        },
        other => other,
    }
}

/// An unknown field's value, as read from its wire bytes.
pub(super) enum Unknown<'b> {
    Varint(u64),
    Fixed32(u32),
    Fixed64(u64),
    Bytes(&'b [u8]),
    Group(Vec<(u32, Unknown<'b>)>),
}

/// `bytes` read as a whole set of fields (groups nesting at most `budget` deep), or `None`
/// when they are not one.
pub(super) fn parse_unknown(bytes: &[u8], budget: u32) -> Option<Vec<(u32, Unknown<'_>)>> {
    let mut pos = 0;
    let set = parse_set(bytes, &mut pos, None, budget)?;
    (pos == bytes.len()).then_some(set)
}

fn parse_set<'b>(
    buf: &'b [u8],
    pos: &mut usize,
    group: Option<u32>,
    budget: u32,
) -> Option<Vec<(u32, Unknown<'b>)>> {
    let mut set = Vec::new();
    while *pos < buf.len() {
        let tag = varint(buf, pos)?;
        let number = u32::try_from(tag >> 3)
            .ok()
            .filter(|&n| n != 0 && n < 1 << 29)?;
        let v = match tag & 7 {
            0 => Unknown::Varint(varint(buf, pos)?),
            1 => {
                let b = buf.get(*pos..*pos + 8)?;
                *pos += 8;
                Unknown::Fixed64(u64::from_le_bytes(b.try_into().ok()?))
            }
            2 => {
                let len = usize::try_from(varint(buf, pos)?).ok()?;
                let end = pos.checked_add(len)?;
                let b = buf.get(*pos..end)?;
                *pos = end;
                Unknown::Bytes(b)
            }
            3 => {
                if budget == 0 {
                    return None;
                }
                Unknown::Group(parse_set(buf, pos, Some(number), budget - 1)?)
            }
            4 => {
                return (group == Some(number)).then_some(set);
            }
            5 => {
                let b = buf.get(*pos..*pos + 4)?;
                *pos += 4;
                Unknown::Fixed32(u32::from_le_bytes(b.try_into().ok()?))
            }
            _ => return None,
        };
        set.push((number, v));
    }
    group.is_none().then_some(set)
}

fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}
