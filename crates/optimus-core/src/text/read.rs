//! Text format read into arena records, as C++ `TextFormat::Parser` reads it: a tokenizer
//! after `io::Tokenizer` (`#` comments, C-style strings, integers in decimal, hex and
//! octal, floats with an optional `f` suffix) and a parser after `ParserImpl`.

use optimus_schema::{Cardinality, Field, Kind, MessageId, SchemaSet, WellKnown};

use super::write::{default_ref, group_type};
use super::TextOptions;
use crate::binary::{MEMORY_BASE_BYTES, MEMORY_BYTES_PER_INPUT_BYTE};
use crate::record::Arena;
use crate::view::{FieldRef, Record};
use crate::{DecodeErrorKind, Error};

/// Reads a message (see [`super::decode`]).
pub(super) fn decode<'a>(
    schema: &'a SchemaSet,
    id: MessageId,
    text: &'a str,
    arena: &'a Arena,
    opts: &TextOptions,
) -> Result<Record<'a>, Error> {
    let root = || schema.message(id).full_name.clone();
    let mut p = Parser {
        schema,
        text,
        arena,
        lex: Lexer { text, pos: 0 },
        cur: Token {
            tok: Tok::Eof,
            at: 0,
        },
        depth: 0,
        depth_limit: opts.depth_limit,
        budget: MEMORY_BASE_BYTES
            .saturating_add(text.len().saturating_mul(MEMORY_BYTES_PER_INPUT_BYTE)),
    };
    let run = |p: &mut Parser<'a>| -> Result<Record<'a>, Error> {
        p.advance()?;
        let rec = p.new_record(id, 0)?;
        p.body(rec, None)?;
        Ok(rec)
    };
    run(&mut p).map_err(|e| e.within(root()))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok<'a> {
    /// `[A-Za-z_][A-Za-z0-9_]*`.
    Ident(&'a str),
    /// An integer: decimal, `0x` hex or `0` octal.
    Int(&'a str),
    /// A number with a `.`, an exponent or an `f` suffix.
    Float(&'a str),
    /// A quoted string, quotes included, escapes not yet read.
    Str(&'a str),
    /// Any other single character.
    Sym(u8),
    Eof,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    tok: Tok<'a>,
    at: usize,
}

/// A text position's `line:column`, both from 1 (columns count bytes).
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..at.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = at.min(text.len())
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    (line, col)
}

/// A text error at byte `at` of `text`, with its line and column.
#[cold]
fn text_err(text: &str, at: usize, msg: impl std::fmt::Display) -> Error {
    let (line, col) = line_col(text, at);
    Error::decode(at, DecodeErrorKind::Text(format!("{line}:{col}: {msg}")))
}

struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn peek_byte(&self, i: usize) -> u8 {
        self.text.as_bytes().get(self.pos + i).copied().unwrap_or(0)
    }

    fn next(&mut self) -> Result<Token<'a>, Error> {
        let b = self.text.as_bytes();
        // Whitespace and `#` comments.
        loop {
            match b.get(self.pos) {
                Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c') => self.pos += 1,
                Some(b'#') => {
                    while self.pos < b.len() && b[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
        let at = self.pos;
        let Some(&c) = b.get(at) else {
            return Ok(Token { tok: Tok::Eof, at });
        };
        let tok = if c.is_ascii_alphabetic() || c == b'_' {
            while self.pos < b.len() && (b[self.pos].is_ascii_alphanumeric() || b[self.pos] == b'_')
            {
                self.pos += 1;
            }
            Tok::Ident(&self.text[at..self.pos])
        } else if c.is_ascii_digit() || (c == b'.' && self.peek_byte(1).is_ascii_digit()) {
            self.number()?
        } else if c == b'"' || c == b'\'' {
            self.string(c)?
        } else if c.is_ascii() {
            self.pos += 1;
            Tok::Sym(c)
        } else {
            let ch = self.text[at..].chars().next().unwrap_or('\u{fffd}');
            return Err(text_err(
                self.text,
                at,
                format!("unexpected character {ch:?}"),
            ));
        };
        Ok(Token { tok, at })
    }

    fn number(&mut self) -> Result<Tok<'a>, Error> {
        let b = self.text.as_bytes();
        let at = self.pos;
        let digits = |pos: &mut usize, ok: fn(u8) -> bool| {
            let start = *pos;
            while *pos < b.len() && ok(b[*pos]) {
                *pos += 1;
            }
            *pos - start
        };
        let mut float = false;
        if b[at] == b'0' && matches!(self.peek_byte(1), b'x' | b'X') {
            self.pos += 2;
            if digits(&mut self.pos, |c| c.is_ascii_hexdigit()) == 0 {
                return Err(text_err(
                    self.text,
                    self.pos,
                    "\"0x\" must be followed by hex digits",
                ));
            }
        } else if b[at] == b'0' && self.peek_byte(1).is_ascii_digit() {
            self.pos += 1;
            digits(&mut self.pos, |c| (b'0'..=b'7').contains(&c));
            if self.peek_byte(0).is_ascii_digit() {
                return Err(text_err(
                    self.text,
                    self.pos,
                    "numbers starting with a leading zero must be in octal",
                ));
            }
        } else {
            digits(&mut self.pos, |c| c.is_ascii_digit());
            if self.peek_byte(0) == b'.' {
                float = true;
                self.pos += 1;
                digits(&mut self.pos, |c| c.is_ascii_digit());
            }
            if matches!(self.peek_byte(0), b'e' | b'E') {
                float = true;
                self.pos += 1;
                if matches!(self.peek_byte(0), b'+' | b'-') {
                    self.pos += 1;
                }
                if digits(&mut self.pos, |c| c.is_ascii_digit()) == 0 {
                    return Err(text_err(
                        self.text,
                        self.pos,
                        "\"e\" must be followed by an exponent",
                    ));
                }
            }
            if matches!(self.peek_byte(0), b'f' | b'F') {
                float = true;
                self.pos += 1;
            }
        }
        let next = self.peek_byte(0);
        if next.is_ascii_alphanumeric() || next == b'_' || next == b'.' {
            return Err(text_err(
                self.text,
                self.pos,
                "need space between number and identifier",
            ));
        }
        let text = &self.text[at..self.pos];
        Ok(if float {
            Tok::Float(text)
        } else {
            Tok::Int(text)
        })
    }

    fn string(&mut self, quote: u8) -> Result<Tok<'a>, Error> {
        let b = self.text.as_bytes();
        let at = self.pos;
        self.pos += 1;
        loop {
            match b.get(self.pos) {
                None => return Err(text_err(self.text, at, "unterminated string")),
                Some(b'\n') => {
                    return Err(text_err(
                        self.text,
                        self.pos,
                        "string literals cannot cross line boundaries",
                    ))
                }
                Some(b'\\') => {
                    // The escape is read when the string is; here it only must not end
                    // the string.
                    self.pos += 2;
                    if self.pos > b.len() {
                        return Err(text_err(self.text, at, "unterminated string"));
                    }
                    if b[self.pos - 1] == b'\n' {
                        return Err(text_err(
                            self.text,
                            self.pos - 1,
                            "string literals cannot cross line boundaries",
                        ));
                    }
                }
                Some(&c) if c == quote => {
                    self.pos += 1;
                    return Ok(Tok::Str(&self.text[at..self.pos]));
                }
                Some(_) => self.pos += 1,
            }
        }
    }
}

struct Parser<'a> {
    schema: &'a SchemaSet,
    text: &'a str,
    arena: &'a Arena,
    lex: Lexer<'a>,
    cur: Token<'a>,
    depth: u32,
    depth_limit: u32,
    /// Bytes of records and copied strings still allowed.
    budget: usize,
}

impl<'a> Parser<'a> {
    fn advance(&mut self) -> Result<(), Error> {
        self.cur = self.lex.next()?;
        Ok(())
    }

    #[cold]
    fn err(&self, at: usize, msg: impl std::fmt::Display) -> Error {
        text_err(self.text, at, msg)
    }

    /// An error at the current token: `expected WHAT, got TOKEN`.
    #[cold]
    fn expected(&self, what: &str) -> Error {
        let got = match self.cur.tok {
            Tok::Eof => "end of input".to_owned(),
            Tok::Ident(s) | Tok::Int(s) | Tok::Float(s) | Tok::Str(s) => format!("\"{s}\""),
            Tok::Sym(c) => format!("\"{}\"", c as char),
        };
        self.err(self.cur.at, format!("expected {what}, got {got}"))
    }

    fn is_sym(&self, c: u8) -> bool {
        self.cur.tok == Tok::Sym(c)
    }

    fn try_sym(&mut self, c: u8) -> Result<bool, Error> {
        if self.is_sym(c) {
            self.advance()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn expect_sym(&mut self, c: u8) -> Result<(), Error> {
        if self.try_sym(c)? {
            Ok(())
        } else {
            Err(self.expected(&format!("\"{}\"", c as char)))
        }
    }

    fn ident(&mut self) -> Result<&'a str, Error> {
        match self.cur.tok {
            Tok::Ident(s) => {
                self.advance()?;
                Ok(s)
            }
            _ => Err(self.expected("an identifier")),
        }
    }

    /// Takes `n` bytes from the memory budget.
    fn charge(&mut self, at: usize, n: usize) -> Result<(), Error> {
        match self.budget.checked_sub(n) {
            Some(left) => {
                self.budget = left;
                Ok(())
            }
            None => {
                Err(Error::decode(
                    at,
                    DecodeErrorKind::MemoryLimit(MEMORY_BASE_BYTES.saturating_add(
                        self.text.len().saturating_mul(MEMORY_BYTES_PER_INPUT_BYTE),
                    )),
                ))
            }
        }
    }

    fn new_record(&mut self, id: MessageId, at: usize) -> Result<Record<'a>, Error> {
        self.charge(at, self.schema.message(id).table.size as usize)?;
        Ok(Record::new_in(self.schema, id, self.arena))
    }

    /// Fields into `rec` until `end` (a closing delimiter) or, at the root, the input's end.
    fn body(&mut self, rec: Record<'a>, end: Option<u8>) -> Result<(), Error> {
        loop {
            match (self.cur.tok, end) {
                (Tok::Eof, None) => return Ok(()),
                (Tok::Eof, Some(c)) => return Err(self.expected(&format!("\"{}\"", c as char))),
                (Tok::Sym(c), Some(e)) if c == e => {
                    self.advance()?;
                    return Ok(());
                }
                _ => self.field(rec)?,
            }
        }
    }

    /// One field (name, value or values, optional `,`/`;`) into `rec`.
    fn field(&mut self, rec: Record<'a>) -> Result<(), Error> {
        let ty = self.schema.message(rec.type_id());
        let at = self.cur.at;
        let (index, label) = if self.try_sym(b'[')? {
            let (name, is_url) = self.type_name()?;
            self.expect_sym(b']')?;
            if is_url {
                return self
                    .any(rec, name, at)
                    .map_err(|e| e.within(format!("[{name}]")));
            }
            let label = format!("[{name}]");
            let index = ty
                .field_index_by_name(&label)
                .filter(|&i| ty.fields[i].is_extension)
                .ok_or_else(|| {
                    self.err(
                        at,
                        format!(
                            "extension \"{name}\" is not defined or is not an extension of \"{}\"",
                            ty.full_name
                        ),
                    )
                })?;
            (index, label)
        } else {
            let name = self.ident()?;
            let index = find_field(self.schema, rec.type_id(), name).ok_or_else(|| {
                self.err(
                    at,
                    format!(
                        "message type \"{}\" has no field named \"{name}\"",
                        ty.full_name
                    ),
                )
            })?;
            (index, name.to_owned())
        };
        let field = &ty.fields[index];
        self.field_value(rec, index, field, at)
            .map_err(|e| e.within(label))?;
        // Fields may be separated by `;` or `,`.
        if !self.try_sym(b';')? {
            self.try_sym(b',')?;
        }
        Ok(())
    }

    /// A field's value(s) after its name.
    fn field_value(
        &mut self,
        rec: Record<'a>,
        index: usize,
        field: &'a Field,
        at: usize,
    ) -> Result<(), Error> {
        let ty = self.schema.message(rec.type_id());
        let repeated = matches!(field.cardinality, Cardinality::Repeated | Cardinality::Map);
        if !repeated && rec.has(index) {
            return Err(self.err(
                at,
                format!(
                    "non-repeated field \"{}\" is specified multiple times",
                    field.name
                ),
            ));
        }
        if let Some(o) = field.oneof {
            let oneof = &ty.oneofs[o as usize];
            if let Some(&other) = oneof.fields.iter().find(|&&i| rec.has(i as usize)) {
                return Err(self.err(
                    at,
                    format!(
                        "field \"{}\" is specified along with field \"{}\", another member of oneof \"{}\"",
                        field.name, ty.fields[other as usize].name, oneof.name
                    ),
                ));
            }
        }
        if field.kind.is_message() {
            self.try_sym(b':')?;
        } else {
            self.expect_sym(b':')?;
        }
        if repeated && self.try_sym(b'[')? {
            // The short form `f: [1, 2, 3]`; `f: []` is empty.
            if self.try_sym(b']')? {
                return Ok(());
            }
            loop {
                self.one_value(rec, index, field)?;
                if self.try_sym(b']')? {
                    return Ok(());
                }
                self.expect_sym(b',')?;
            }
        }
        self.one_value(rec, index, field)
    }

    /// One value of `field`, set (singular) or appended (repeated, map).
    fn one_value(&mut self, rec: Record<'a>, index: usize, field: &'a Field) -> Result<(), Error> {
        let at = self.cur.at;
        match field.cardinality {
            Cardinality::Map => {
                let i = rec.len_of(index);
                self.map_entry(rec, index, field)
                    .map_err(|e| e.within(format!("[{i}]")))
            }
            Cardinality::Repeated => {
                let i = rec.len_of(index);
                let r = if field.kind.is_message() {
                    let id = field.message.expect("a message field has a type");
                    let sub = self.new_record(id, at)?;
                    self.message(sub)
                        .and_then(|()| rec.push(self.arena, index, FieldRef::Message(sub)))
                } else {
                    let v = self.scalar(field)?;
                    rec.push(self.arena, index, v)
                };
                r.map_err(|e| e.within(format!("[{i}]")))
            }
            Cardinality::Singular | Cardinality::Optional => {
                if field.kind.is_message() {
                    let id = field.message.expect("a message field has a type");
                    let sub = self.new_record(id, at)?;
                    rec.set(index, FieldRef::Message(sub))?;
                    self.message(sub)
                } else {
                    let v = self.scalar(field)?;
                    rec.set(index, v)
                }
            }
        }
    }

    /// A message's `{ ... }` or `< ... >` into `rec`.
    fn message(&mut self, rec: Record<'a>) -> Result<(), Error> {
        let end = if self.try_sym(b'{')? {
            b'}'
        } else if self.try_sym(b'<')? {
            b'>'
        } else {
            return Err(self.expected("\"{\" or \"<\""));
        };
        if self.depth >= self.depth_limit {
            return Err(Error::decode(
                self.cur.at,
                DecodeErrorKind::TooDeep(self.depth_limit),
            ));
        }
        self.depth += 1;
        let r = self.body(rec, Some(end));
        self.depth -= 1;
        r
    }

    /// A map entry `{ key: K value: V }` (either part may be missing) added to the map.
    fn map_entry(&mut self, rec: Record<'a>, index: usize, field: &'a Field) -> Result<(), Error> {
        let entry_id = field.message.expect("a map field has an entry type");
        let entry = self.new_record(entry_id, self.cur.at)?;
        self.message(entry)?;
        let (key_field, value_field) = self.schema.map_entry_fields(field);
        let key = entry.get(0).unwrap_or_else(|| default_ref(key_field));
        let value = match entry.get(1) {
            Some(v) => v,
            None if value_field.kind.is_message() => {
                let id = value_field.message.expect("a message field has a type");
                FieldRef::Message(self.new_record(id, self.cur.at)?)
            }
            None => default_ref(value_field),
        };
        rec.insert(self.arena, index, key, value)
    }

    /// A dotted name after `[`, or a type URL (`host/path/pkg.Type`): the text and whether
    /// it has a `/`.
    fn type_name(&mut self) -> Result<(&'a str, bool), Error> {
        let start = self.cur.at;
        let mut is_url = false;
        let mut name = String::from(self.ident()?);
        loop {
            let sep = if self.is_sym(b'.') {
                '.'
            } else if self.is_sym(b'/') {
                is_url = true;
                '/'
            } else {
                break;
            };
            self.advance()?;
            name.push(sep);
            name.push_str(self.ident()?);
        }
        // A view of the input unless whitespace or comments split the name.
        let end = start + name.len();
        let name: &'a str = match self.text.get(start..end) {
            Some(s) if s == name => s,
            _ => {
                self.charge(start, name.len())?;
                self.arena.alloc_str(&name)
            }
        };
        Ok((name, is_url))
    }

    /// `[prefix/pkg.Type] { ... }` in a `google.protobuf.Any`: the message, read as its type
    /// and stored as `type_url` and serialized `value`.
    fn any(&mut self, rec: Record<'a>, url: &'a str, at: usize) -> Result<(), Error> {
        let ty = self.schema.message(rec.type_id());
        if ty.well_known != Some(WellKnown::Any) {
            return Err(self.err(
                at,
                format!(
                    "a type URL [{url}] in \"{}\", which is not google.protobuf.Any",
                    ty.full_name
                ),
            ));
        }
        let (Some(url_i), Some(value_i)) =
            (ty.field_index_by_number(1), ty.field_index_by_number(2))
        else {
            return Err(self.err(at, "google.protobuf.Any without type_url and value"));
        };
        if rec.has(url_i) || rec.has(value_i) {
            return Err(self.err(at, "expect only one Any type"));
        }
        let name = url.rsplit_once('/').map_or(url, |(_, n)| n);
        let Some(id) = self.schema.message_by_name(name) else {
            return Err(self.err(at, format!("unknown type \"{name}\" in the Any type URL")));
        };
        self.try_sym(b':')?;
        let sub = self.new_record(id, at)?;
        self.message(sub)?;
        let mut bytes = Vec::new();
        crate::engine::encode(sub, &mut bytes);
        self.charge(at, bytes.len() + url.len())?;
        rec.set(url_i, FieldRef::Str(url))?;
        rec.set(value_i, FieldRef::Bytes(self.arena.alloc_bytes(&bytes)))?;
        if !self.try_sym(b';')? {
            self.try_sym(b',')?;
        }
        Ok(())
    }

    /// A scalar, string or enum value of `field`'s kind.
    fn scalar(&mut self, field: &Field) -> Result<FieldRef<'a>, Error> {
        Ok(match field.kind {
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
                FieldRef::I32(self.signed(i32::MIN.into(), i32::MAX.into())? as i32)
            }
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
                FieldRef::I64(self.signed(i64::MIN, i64::MAX)?)
            }
            Kind::Uint32 | Kind::Fixed32 => FieldRef::U32(self.unsigned(u32::MAX.into())? as u32),
            Kind::Uint64 | Kind::Fixed64 => FieldRef::U64(self.unsigned(u64::MAX)?),
            Kind::Bool => FieldRef::Bool(self.bool()?),
            Kind::Float => {
                let v = self.float()?;
                // As C++ `SafeDoubleToFloat`: out of range is infinite.
                FieldRef::F32(v as f32)
            }
            Kind::Double => FieldRef::F64(self.float()?),
            Kind::String => {
                let at = self.cur.at;
                let bytes = self.string()?;
                match std::str::from_utf8(bytes) {
                    Ok(s) => FieldRef::Str(s),
                    Err(_) => return Err(self.err(at, "string is not valid UTF-8")),
                }
            }
            Kind::Bytes => FieldRef::Bytes(self.string()?),
            Kind::Enum => FieldRef::Enum(self.enum_value(field)?),
            Kind::Message | Kind::Group => unreachable!("messages are read by `message`"),
        })
    }

    /// An integer token's value (decimal, hex or octal), or `None` past `u64`.
    fn int_value(text: &str) -> Option<u64> {
        if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            u64::from_str_radix(hex, 16).ok()
        } else if text.len() > 1 && text.starts_with('0') {
            u64::from_str_radix(&text[1..], 8).ok()
        } else {
            text.parse().ok()
        }
    }

    fn unsigned(&mut self, max: u64) -> Result<u64, Error> {
        let at = self.cur.at;
        let Tok::Int(text) = self.cur.tok else {
            return Err(self.expected("an integer"));
        };
        match Self::int_value(text).filter(|&v| v <= max) {
            Some(v) => {
                self.advance()?;
                Ok(v)
            }
            None => Err(self.err(at, format!("integer out of range ({text})"))),
        }
    }

    fn signed(&mut self, min: i64, max: i64) -> Result<i64, Error> {
        let negative = self.try_sym(b'-')?;
        let at = self.cur.at;
        let Tok::Int(text) = self.cur.tok else {
            return Err(self.expected("an integer"));
        };
        let v = Self::int_value(text).and_then(|m| {
            let v = if negative {
                0i64.checked_sub_unsigned(m)?
            } else {
                i64::try_from(m).ok()?
            };
            (min..=max).contains(&v).then_some(v)
        });
        match v {
            Some(v) => {
                self.advance()?;
                Ok(v)
            }
            None => Err(self.err(
                at,
                format!(
                    "integer out of range ({}{text})",
                    if negative { "-" } else { "" }
                ),
            )),
        }
    }

    fn float(&mut self) -> Result<f64, Error> {
        let negative = self.try_sym(b'-')?;
        let at = self.cur.at;
        let v = match self.cur.tok {
            Tok::Int(text) => {
                if text.starts_with("0x")
                    || text.starts_with("0X")
                    || (text.len() > 1 && text.starts_with('0'))
                {
                    match Self::int_value(text) {
                        Some(v) => v as f64,
                        None => return Err(self.err(at, format!("integer out of range ({text})"))),
                    }
                } else {
                    // A decimal integer past u64 still reads as a double.
                    text.parse::<f64>()
                        .map_err(|_| self.err(at, "invalid number"))?
                }
            }
            Tok::Float(text) => {
                let digits = text.trim_end_matches(['f', 'F']);
                parse_decimal(digits)
                    .ok_or_else(|| self.err(at, format!("invalid number {text}")))?
            }
            Tok::Ident(word) => {
                let lower = word.to_ascii_lowercase();
                match lower.as_str() {
                    "inf" | "infinity" => f64::INFINITY,
                    "nan" => f64::NAN,
                    _ => return Err(self.err(at, format!("expected a number, got \"{word}\""))),
                }
            }
            _ => return Err(self.expected("a number")),
        };
        self.advance()?;
        Ok(if negative { -v } else { v })
    }

    fn bool(&mut self) -> Result<bool, Error> {
        let at = self.cur.at;
        let v = match self.cur.tok {
            Tok::Int(text) => match Self::int_value(text) {
                Some(0) => false,
                Some(1) => true,
                _ => return Err(self.err(at, format!("integer out of range ({text})"))),
            },
            Tok::Ident("true" | "True" | "t") => true,
            Tok::Ident("false" | "False" | "f") => false,
            Tok::Ident(word) => {
                return Err(self.err(at, format!("invalid value for boolean field \"{word}\"")))
            }
            _ => return Err(self.expected("true or false")),
        };
        self.advance()?;
        Ok(v)
    }

    fn enum_value(&mut self, field: &Field) -> Result<i32, Error> {
        let at = self.cur.at;
        let e = self
            .schema
            .enum_type(field.enum_type.expect("an enum field has a type"));
        if let Tok::Ident(name) = self.cur.tok {
            return match e.value_by_name(name) {
                Some(v) => {
                    self.advance()?;
                    Ok(v.number)
                }
                None => Err(self.err(
                    at,
                    format!(
                        "unknown enumeration value of \"{name}\" for field \"{}\"",
                        field.name
                    ),
                )),
            };
        }
        let n = self.signed(i32::MIN.into(), i32::MAX.into())? as i32;
        if e.is_closed && !e.contains(n) {
            return Err(self.err(
                at,
                format!(
                    "unknown enumeration value of \"{n}\" for field \"{}\"",
                    field.name
                ),
            ));
        }
        Ok(n)
    }

    /// One or more adjacent string literals, concatenated and unescaped: a view of the
    /// input when there is one literal without escapes, else a copy in the arena.
    fn string(&mut self) -> Result<&'a [u8], Error> {
        let Tok::Str(first) = self.cur.tok else {
            return Err(self.expected("a string"));
        };
        let first_at = self.cur.at;
        self.advance()?;
        let inner = &first[1..first.len() - 1];
        if !inner.contains('\\') && !matches!(self.cur.tok, Tok::Str(_)) {
            return Ok(inner.as_bytes());
        }
        let mut out = Vec::with_capacity(inner.len());
        self.unescape(inner, first_at + 1, &mut out)?;
        while let Tok::Str(lit) = self.cur.tok {
            let at = self.cur.at;
            self.advance()?;
            self.unescape(&lit[1..lit.len() - 1], at + 1, &mut out)?;
        }
        self.charge(first_at, out.len())?;
        Ok(self.arena.alloc_bytes(&out))
    }

    /// Appends the bytes of a literal's text `s` (at byte `at`) with its escapes read.
    fn unescape(&self, s: &str, at: usize, out: &mut Vec<u8>) -> Result<(), Error> {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c != b'\\' {
                out.push(c);
                i += 1;
                continue;
            }
            let esc_at = at + i;
            i += 1;
            let Some(&e) = b.get(i) else {
                return Err(self.err(esc_at, "invalid escape sequence"));
            };
            i += 1;
            match e {
                b'a' => out.push(7),
                b'b' => out.push(8),
                b'f' => out.push(12),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'v' => out.push(11),
                b'\\' | b'?' | b'\'' | b'"' => out.push(e),
                b'0'..=b'7' => {
                    let mut v = u32::from(e - b'0');
                    for _ in 0..2 {
                        match b.get(i) {
                            Some(&d @ b'0'..=b'7') => {
                                v = v * 8 + u32::from(d - b'0');
                                i += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push(v as u8);
                }
                b'x' | b'X' => {
                    let mut v = 0u32;
                    let mut n = 0;
                    while n < 2 {
                        match b.get(i).and_then(|&d| (d as char).to_digit(16)) {
                            Some(d) => {
                                v = v * 16 + d;
                                i += 1;
                                n += 1;
                            }
                            None => break,
                        }
                    }
                    if n == 0 {
                        return Err(self.err(esc_at, "expected hex digits for escape sequence"));
                    }
                    out.push(v as u8);
                }
                b'u' | b'U' => {
                    let len = if e == b'u' { 4 } else { 8 };
                    let digits = b.get(i..i + len).and_then(|d| std::str::from_utf8(d).ok());
                    let code = digits
                        .filter(|d| d.bytes().all(|c| c.is_ascii_hexdigit()))
                        .and_then(|d| u32::from_str_radix(d, 16).ok());
                    let Some(code) = code else {
                        return Err(self.err(
                            esc_at,
                            format!(
                                "expected {len} hex digits for \\{} escape sequence",
                                e as char
                            ),
                        ));
                    };
                    i += len;
                    // Surrogates (even in pairs) and code points past U+10FFFF are refused.
                    let Some(ch) = char::from_u32(code) else {
                        return Err(self.err(
                            esc_at,
                            format!("\\{}{code:0len$x} is not a Unicode scalar value", e as char),
                        ));
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                _ => {
                    return Err(self.err(esc_at, format!("invalid escape sequence \\{}", e as char)))
                }
            }
        }
        Ok(())
    }
}

/// A decimal float's value (`1.5`, `.5`, `1.`, `1e5`, `1.5E-3`).
fn parse_decimal(text: &str) -> Option<f64> {
    if text.ends_with('.') {
        return format!("{text}0").parse().ok();
    }
    text.parse().ok()
}

/// The index of the field `name` names in `id`: a field's declared name, or a group-like
/// field's type name, as C++ looks them up.
fn find_field(schema: &SchemaSet, id: MessageId, name: &str) -> Option<usize> {
    let ty = schema.message(id);
    let plain = |i: usize| !ty.fields[i].is_extension && ty.fields[i].name == name;
    if let Some(i) = ty.field_index_by_name(name).filter(|&i| plain(i)) {
        return Some(i);
    }
    (0..ty.fields.len()).find(|&i| plain(i)).or_else(|| {
        (0..ty.fields.len()).find(|&i| group_type(schema, id, &ty.fields[i]) == Some(name))
    })
}
