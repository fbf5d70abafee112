//! JSON pull parser: a cursor over the text's bytes that hands out one token at a time.
//!
//! Every error carries the byte offset where the problem starts. Strings come back borrowed
//! when they hold no escapes; numbers come back as their validated RFC 8259 text, so the
//! caller decides how to read them exactly (integers) or approximately (floats). Nothing here
//! recurses without a depth budget, and every loop consumes input or returns.

use std::borrow::Cow;

use crate::error::{DecodeErrorKind, Error, JsonError};

/// Whether two keys of equal length are the same: keys of 4 to 16 bytes (most member keys
/// with their quotes and colon) by two overlapping word compares, inline; others by `==`.
#[inline(always)]
fn same_key(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len();
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8"));
    let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("4"));
    match n {
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        _ => a == b,
    }
}

/// The value of eight ASCII decimal digits, or `None` when a byte is not a digit: checked and
/// combined a word at a time (pairs, then fours, then the eight, by multiply and shift).
#[inline(always)]
fn eight_digits(chunk: &[u8]) -> Option<u64> {
    let word = u64::from_le_bytes(chunk.try_into().ok()?);
    let high_nibbles = 0xf0f0_f0f0_f0f0_f0f0;
    let zeros = 0x3030_3030_3030_3030;
    // Every byte is 0x30..=0x39: its high nibble is 3, and adding 6 keeps it 3.
    if word & high_nibbles != zeros
        || word.wrapping_add(0x0606_0606_0606_0606) & high_nibbles != zeros
    {
        return None;
    }
    let v = word - zeros;
    let v = (v.wrapping_mul(10) + (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    let v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_ffff_0000_ffff;
    Some((v.wrapping_mul(10_000) + (v >> 32)) & 0xffff_ffff)
}

/// 10^19, the smallest number of twenty digits.
const TEN_POW_19: u64 = 10_000_000_000_000_000_000;

/// The kind of the next JSON value, as seen from its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token {
    /// `{`
    Object,
    /// `[`
    Array,
    /// `"`
    String,
    /// `-` or a digit.
    Number,
    /// `t`
    True,
    /// `f`
    False,
    /// `n`
    Null,
}

/// Malformed JSON text ([`JsonError::Syntax`]) at byte `offset`.
#[cold]
pub(crate) fn json_err(offset: usize, why: impl Into<String>) -> Error {
    json_error(offset, JsonError::Syntax(why.into()))
}

/// A JSON value that is not one of its field's ([`JsonError::Value`]) at byte `offset`.
#[cold]
pub(crate) fn json_value_err(offset: usize, why: impl Into<String>) -> Error {
    json_error(offset, JsonError::Value(why.into()))
}

/// A JSON error of kind `kind` at byte `offset`.
#[cold]
pub(crate) fn json_error(offset: usize, kind: JsonError) -> Error {
    Error::decode(offset, DecodeErrorKind::Json(kind))
}

/// A member key as [`Reader::next_key_hinted`] found it.
pub(crate) enum Key<'a> {
    /// The hinted key's bytes, consumed.
    Hinted,
    /// Another key, read: its text and where it starts.
    Read(Cow<'a, str>, usize),
}

/// A cursor over JSON text.
pub(crate) struct Reader<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `src`.
    pub(crate) fn new(src: &'a str) -> Reader<'a> {
        Reader {
            src,
            bytes: src.as_bytes(),
            pos: 0,
        }
    }

    /// The byte offset of the cursor.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Moves the cursor back to `pos`, an offset this reader handed out before (to read an
    /// object a second time, as `Any` does once it knows its `@type`).
    pub(crate) fn rewind(&mut self, pos: usize) {
        debug_assert!(pos <= self.pos);
        self.pos = pos;
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    /// Skips whitespace and classifies the next value without consuming it.
    pub(crate) fn peek(&mut self) -> Result<Token, Error> {
        self.skip_ws();
        Ok(match self.bytes.get(self.pos) {
            None => {
                return Err(json_err(
                    self.pos,
                    "unexpected end of input, expected a value",
                ))
            }
            Some(b'{') => Token::Object,
            Some(b'[') => Token::Array,
            Some(b'"') => Token::String,
            Some(b'-' | b'0'..=b'9') => Token::Number,
            Some(b't') => Token::True,
            Some(b'f') => Token::False,
            Some(b'n') => Token::Null,
            Some(&b) => return Err(self.unexpected(b, "a value")),
        })
    }

    #[cold]
    fn unexpected(&self, b: u8, expected: &str) -> Error {
        let found = if b.is_ascii_graphic() {
            format!("'{}'", b as char)
        } else {
            format!("byte 0x{b:02x}")
        };
        json_err(self.pos, format!("expected {expected}, found {found}"))
    }

    fn expect_byte(&mut self, want: u8, expected: &str) -> Result<(), Error> {
        self.skip_ws();
        match self.bytes.get(self.pos) {
            Some(&b) if b == want => {
                self.pos += 1;
                Ok(())
            }
            Some(&b) => Err(self.unexpected(b, expected)),
            None => Err(json_err(
                self.pos,
                format!("unexpected end of input, expected {expected}"),
            )),
        }
    }

    /// Consumes the `{` that opens an object.
    pub(crate) fn begin_object(&mut self) -> Result<(), Error> {
        self.expect_byte(b'{', "an object")
    }

    /// The next member name of the object being read and its offset, with the `:` after it
    /// consumed; `None` once the closing `}` has been consumed. `first` starts `true` for
    /// each object and is kept by this function. Inlined into the object loops, so the key
    /// comes back in registers.
    #[inline(always)]
    pub(crate) fn next_key(
        &mut self,
        first: &mut bool,
    ) -> Result<Option<(Cow<'a, str>, usize)>, Error> {
        self.skip_ws();
        match self.bytes.get(self.pos) {
            Some(b'}') => {
                self.pos += 1;
                return Ok(None);
            }
            Some(b',') if !*first => {
                self.pos += 1;
                self.skip_ws();
            }
            None => {
                return Err(json_err(
                    self.pos,
                    "unexpected end of input inside an object",
                ))
            }
            Some(_) if *first => {}
            Some(&b) => return Err(self.unexpected(b, "',' or '}'")),
        }
        *first = false;
        let key_at = self.pos;
        match self.bytes.get(self.pos) {
            Some(b'"') => {}
            Some(&b) => return Err(self.unexpected(b, "a quoted member name")),
            None => {
                return Err(json_err(
                    self.pos,
                    "unexpected end of input inside an object",
                ))
            }
        }
        let key = self.read_string()?;
        self.expect_byte(b':', "':'")?;
        Ok(Some((key, key_at)))
    }

    /// As [`Reader::next_key`], but first tries `hint`, the member key the next field is
    /// likely written with (`"userId":`, [`optimus_schema::Field::json_key`]): when the input
    /// holds exactly those bytes there, they are consumed ([`Key::Hinted`]), with no string
    /// read; otherwise the key is read as `next_key` reads it.
    #[inline(always)]
    pub(crate) fn next_key_hinted(
        &mut self,
        first: &mut bool,
        hint: Option<&[u8]>,
    ) -> Result<Option<Key<'a>>, Error> {
        if let Some(hint) = hint {
            let mut at = self.pos;
            while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(at) {
                at += 1;
            }
            let comma = !*first && self.bytes.get(at) == Some(&b',');
            if comma || *first {
                let mut key = at + usize::from(comma);
                while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(key) {
                    key += 1;
                }
                if self
                    .bytes
                    .get(key..key + hint.len())
                    .is_some_and(|at| same_key(at, hint))
                {
                    *first = false;
                    self.pos = key + hint.len();
                    return Ok(Some(Key::Hinted));
                }
            }
        }
        Ok(self.next_key(first)?.map(|(key, at)| Key::Read(key, at)))
    }

    /// Consumes the `[` that opens an array.
    pub(crate) fn begin_array(&mut self) -> Result<(), Error> {
        self.expect_byte(b'[', "an array")
    }

    /// Whether another element follows in the array being read (the `,` before it consumed);
    /// `false` once the closing `]` has been consumed.
    pub(crate) fn next_element(&mut self, first: &mut bool) -> Result<bool, Error> {
        self.skip_ws();
        match self.bytes.get(self.pos) {
            Some(b']') => {
                self.pos += 1;
                Ok(false)
            }
            Some(b',') if !*first => {
                self.pos += 1;
                Ok(true)
            }
            None => Err(json_err(
                self.pos,
                "unexpected end of input inside an array",
            )),
            Some(_) if *first => {
                *first = false;
                Ok(true)
            }
            Some(&b) => Err(self.unexpected(b, "',' or ']'")),
        }
    }

    /// Reads a string value and unescapes it.
    pub(crate) fn read_string(&mut self) -> Result<Cow<'a, str>, Error> {
        self.skip_ws();
        let open = self.pos;
        match self.bytes.get(open) {
            Some(b'"') => {}
            Some(&b) => return Err(self.unexpected(b, "a string")),
            None => return Err(json_err(open, "unexpected end of input, expected a string")),
        }
        self.pos += 1;
        let start = self.pos;
        // Fast path: no escapes, the string is a slice of the input. Every stop is at an ASCII
        // byte, so the slice bounds are char boundaries.
        self.pos = self.plain_run(start);
        match self.bytes.get(self.pos) {
            None => return Err(json_err(open, "unterminated string")),
            Some(b'"') => {
                let s = &self.src[start..self.pos];
                self.pos += 1;
                return Ok(Cow::Borrowed(s));
            }
            Some(b'\\') => {}
            Some(&b) => return Err(control_char(self.pos, b)),
        }
        let mut out = String::with_capacity(self.pos - start + 16);
        out.push_str(&self.src[start..self.pos]);
        loop {
            match self.bytes.get(self.pos) {
                None => return Err(json_err(open, "unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(Cow::Owned(out));
                }
                Some(b'\\') => self.read_escape(&mut out)?,
                Some(&b) if b < 0x20 => return Err(control_char(self.pos, b)),
                Some(_) => {
                    let run = self.pos;
                    self.pos = self.plain_run(run);
                    out.push_str(&self.src[run..self.pos]);
                }
            }
        }
    }

    /// The end of the run of plain string bytes from `from` ([`super::plain_run`]).
    #[inline]
    fn plain_run(&self, from: usize) -> usize {
        super::plain_run(self.bytes, from)
    }

    /// A string at the cursor without escapes, as a slice of the input, the cursor past its
    /// closing quote; `None`, the cursor unmoved (past whitespace), for any other value.
    #[inline]
    pub(crate) fn plain_string(&mut self) -> Option<&'a str> {
        self.skip_ws();
        if self.bytes.get(self.pos) != Some(&b'"') {
            return None;
        }
        let start = self.pos + 1;
        let end = self.plain_run(start);
        if self.bytes.get(end) != Some(&b'"') {
            return None;
        }
        self.pos = end + 1;
        // Both bounds sit at ASCII bytes, so they are char boundaries.
        Some(&self.src[start..end])
    }

    /// An integer at the cursor in its plainest form — `0` or `-?[1-9][0-9]{0,19}` up to
    /// `u64::MAX` in magnitude, bare or
    /// quoted, not followed by a fraction or exponent — as its sign, its magnitude and the
    /// offset just past it. Moves only past whitespace: the caller checks the range, then
    /// [`Reader::advance_to`]s the offset; every other form is the general reader's.
    #[inline]
    pub(crate) fn plain_integer(&mut self) -> Option<(bool, u64, usize)> {
        self.skip_ws();
        let b = self.bytes;
        let mut i = self.pos;
        let quoted = b.get(i) == Some(&b'"');
        i += usize::from(quoted);
        let negative = b.get(i) == Some(&b'-');
        i += usize::from(negative);
        let start = i;
        let mut magnitude: u64 = 0;
        // Wraps only past `u64::MAX`, which is refused below.
        while let Some(eight) = b.get(i..i + 8).and_then(eight_digits) {
            magnitude = magnitude.wrapping_mul(100_000_000).wrapping_add(eight);
            i += 8;
        }
        while let Some(&c) = b.get(i) {
            let digit = c.wrapping_sub(b'0');
            if digit > 9 {
                break;
            }
            magnitude = magnitude.wrapping_mul(10).wrapping_add(u64::from(digit));
            i += 1;
        }
        let digits = i - start;
        // Twenty digits fit a `u64` when they start with 1 and did not wrap (a wrapped value
        // of twenty digits is below 10^19).
        let fits = digits <= 19 || (digits == 20 && b[start] == b'1' && magnitude >= TEN_POW_19);
        if digits == 0 || !fits || (digits > 1 && b[start] == b'0') {
            return None;
        }
        match b.get(i) {
            Some(b'.' | b'e' | b'E') => return None,
            Some(b'"') if quoted => i += 1,
            _ if quoted => return None,
            _ => {}
        }
        Some((negative, magnitude, i))
    }

    /// Moves the cursor forward to `pos`, an offset a `plain_*` reader handed out.
    #[inline]
    pub(crate) fn advance_to(&mut self, pos: usize) {
        debug_assert!(pos >= self.pos && pos <= self.bytes.len());
        self.pos = pos;
    }

    /// `true` or `false` at the cursor, consumed; `None`, the cursor unmoved (past
    /// whitespace), for any other value.
    #[inline]
    pub(crate) fn plain_bool(&mut self) -> Option<bool> {
        self.skip_ws();
        let rest = &self.bytes[self.pos..];
        if rest.starts_with(b"true") {
            self.pos += 4;
            Some(true)
        } else if rest.starts_with(b"false") {
            self.pos += 5;
            Some(false)
        } else {
            None
        }
    }

    /// Reads one escape sequence (the cursor is at its backslash) and appends its character.
    fn read_escape(&mut self, out: &mut String) -> Result<(), Error> {
        let at = self.pos;
        let c = match self.bytes.get(at + 1) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                self.pos = at + 2;
                let hi = self.hex4(at)?;
                let c = match hi {
                    0xD800..=0xDBFF => {
                        if self.bytes.get(self.pos..self.pos + 2) != Some(b"\\u") {
                            return Err(json_err(at, "unpaired high surrogate in \\u escape"));
                        }
                        self.pos += 2;
                        let lo = self.hex4(at)?;
                        if !(0xDC00..=0xDFFF).contains(&lo) {
                            return Err(json_err(at, "unpaired high surrogate in \\u escape"));
                        }
                        0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                    }
                    0xDC00..=0xDFFF => {
                        return Err(json_err(at, "unpaired low surrogate in \\u escape"))
                    }
                    _ => hi,
                };
                // Surrogates are excluded above, so every remaining value is a char.
                out.push(char::from_u32(c).ok_or_else(|| json_err(at, "invalid \\u escape"))?);
                return Ok(());
            }
            Some(_) => return Err(json_err(at, "invalid escape sequence")),
            None => return Err(json_err(at, "unterminated string")),
        };
        out.push(c);
        self.pos = at + 2;
        Ok(())
    }

    fn hex4(&mut self, escape_at: usize) -> Result<u32, Error> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| json_err(escape_at, "truncated \\u escape"))?;
        let mut v = 0u32;
        for &d in digits {
            let x = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return Err(json_err(escape_at, "invalid hex digit in \\u escape")),
            };
            v = v << 4 | u32::from(x);
        }
        self.pos += 4;
        Ok(v)
    }

    /// Reads a number and returns its text, checked against the JSON grammar
    /// (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`).
    pub(crate) fn read_number(&mut self) -> Result<&'a str, Error> {
        self.skip_ws();
        let start = self.pos;
        let len =
            number_len(&self.bytes[start..]).ok_or_else(|| json_err(start, "invalid number"))?;
        self.pos += len;
        Ok(&self.src[start..self.pos])
    }

    /// Consumes the literal `true`, `false` or `null` given as `word`.
    pub(crate) fn read_literal(&mut self, word: &str) -> Result<(), Error> {
        self.skip_ws();
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(json_err(self.pos, format!("expected {word}")))
        }
    }

    /// Reads and discards one value of any kind; objects and arrays may nest `depth_left`
    /// levels deep (this one included).
    pub(crate) fn skip_value(&mut self, depth_left: u32) -> Result<(), Error> {
        match self.peek()? {
            Token::Object => {
                if depth_left == 0 {
                    return Err(too_deep(self.pos));
                }
                self.begin_object()?;
                let mut first = true;
                while self.next_key(&mut first)?.is_some() {
                    self.skip_value(depth_left - 1)?;
                }
            }
            Token::Array => {
                if depth_left == 0 {
                    return Err(too_deep(self.pos));
                }
                self.begin_array()?;
                let mut first = true;
                while self.next_element(&mut first)? {
                    self.skip_value(depth_left - 1)?;
                }
            }
            Token::String => {
                self.read_string()?;
            }
            Token::Number => {
                self.read_number()?;
            }
            Token::True => self.read_literal("true")?,
            Token::False => self.read_literal("false")?,
            Token::Null => self.read_literal("null")?,
        }
        Ok(())
    }

    /// Checks that only whitespace is left.
    pub(crate) fn finish(&mut self) -> Result<(), Error> {
        self.skip_ws();
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(Error::decode(self.pos, DecodeErrorKind::TrailingData))
        }
    }
}

#[cold]
fn control_char(at: usize, b: u8) -> Error {
    json_err(
        at,
        format!("unescaped control character 0x{b:02x} in string"),
    )
}

#[cold]
fn too_deep(at: usize) -> Error {
    json_err(at, "nesting too deep")
}

/// The length of the JSON number at the start of `b`, if one starts there.
pub(crate) fn number_len(b: &[u8]) -> Option<usize> {
    let digits = |i: usize| b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = usize::from(b.first() == Some(&b'-'));
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i += digits(i),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let n = digits(i + 1);
        if n == 0 {
            return None;
        }
        i += 1 + n;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        let n = digits(i);
        if n == 0 {
            return None;
        }
        i += n;
    }
    Some(i)
}

/// Whether all of `s` is one JSON number.
pub(crate) fn is_number(s: &str) -> bool {
    number_len(s.as_bytes()) == Some(s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offset(e: Error) -> usize {
        e.as_decode().expect("decode error").offset
    }

    #[test]
    fn eight_digits_at_once_read_as_one_at_a_time() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // Mostly digits, sometimes a byte next to the digit range or anywhere.
            let chunk: Vec<u8> = seed
                .to_le_bytes()
                .iter()
                .map(|&r| match r % 16 {
                    0 => b'/',
                    1 => b':',
                    2 => r,
                    _ => b'0' + r % 10,
                })
                .collect();
            let want = chunk.iter().try_fold(0u64, |v, &c| {
                c.is_ascii_digit().then(|| v * 10 + u64::from(c - b'0'))
            });
            assert_eq!(eight_digits(&chunk), want, "{chunk:?}");
        }
        assert_eq!(eight_digits(b"99999999"), Some(99_999_999));
        assert_eq!(eight_digits(b"00000000"), Some(0));
        assert_eq!(eight_digits(b"1234567"), None);
    }

    #[test]
    fn strings_unescape_and_borrow_when_plain() {
        let mut r = Reader::new(r#" "plain" "a\"\\\/\b\f\n\r\t\u0041\u00e9\uD83D\uDE01z""#);
        assert!(matches!(r.read_string().unwrap(), Cow::Borrowed("plain")));
        assert_eq!(r.read_string().unwrap(), "a\"\\/\u{8}\u{c}\n\r\tAé😁z");
        r.finish().unwrap();
    }

    #[test]
    fn bad_strings_report_their_offset() {
        for (text, at) in [
            (r#""abc\"#, 4),
            (r#""abc"#, 0),
            (r#""ab\uD800""#, 3),
            (r#""ab\uDC00""#, 3),
            (r#""\uDE01\uD83D""#, 1),
            (r#""\uD83D\u0041""#, 1),
            (r#""\U8C37""#, 1),
            (r#""\u8C3""#, 1),
            (r#""\uXXXX""#, 1),
            ("\"a\nb\"", 2),
            ("'x'", 0),
        ] {
            let mut r = Reader::new(text);
            assert_eq!(offset(r.read_string().unwrap_err()), at, "{text}");
        }
    }

    #[test]
    fn number_grammar() {
        for ok in [
            "0", "-0", "1", "-12", "1.5", "1e5", "1E+5", "1.0e-2", "100.000",
        ] {
            assert!(is_number(ok), "{ok}");
        }
        for bad in [
            "", "-", "+1", "01", "-01", "1.", ".5", "1e", "1e+", "0x10", " 1", "1 ", "NaN",
        ] {
            assert!(!is_number(bad), "{bad}");
        }
        let mut r = Reader::new("[1,-2.5e3 ]");
        r.begin_array().unwrap();
        let mut first = true;
        assert!(r.next_element(&mut first).unwrap());
        assert_eq!(r.read_number().unwrap(), "1");
        assert!(r.next_element(&mut first).unwrap());
        assert_eq!(r.read_number().unwrap(), "-2.5e3");
        assert!(!r.next_element(&mut first).unwrap());
    }

    #[test]
    fn objects_reject_trailing_commas_and_missing_commas() {
        let keys = |text: &str| -> Result<Vec<String>, Error> {
            let mut r = Reader::new(text);
            r.begin_object()?;
            let mut first = true;
            let mut out = Vec::new();
            while let Some((k, _)) = r.next_key(&mut first)? {
                r.skip_value(10)?;
                out.push(k.into_owned());
            }
            r.finish()?;
            Ok(out)
        };
        assert_eq!(
            keys(r#"{ "a" : 1 , "b":[true,null,{}] }"#).unwrap(),
            ["a", "b"]
        );
        assert!(keys("{}").unwrap().is_empty());
        assert_eq!(offset(keys(r#"{"a":1,}"#).unwrap_err()), 7);
        assert_eq!(offset(keys(r#"{"a":1 "b":2}"#).unwrap_err()), 7);
        assert_eq!(offset(keys("{a:1}").unwrap_err()), 1);
        assert_eq!(offset(keys("{,}").unwrap_err()), 1);
        assert_eq!(offset(keys(r#"{"a":[1,]}"#).unwrap_err()), 8);
        assert_eq!(offset(keys(r#"{"a":1} x"#).unwrap_err()), 8);
        assert!(keys("{\"a\":1\n// c\n}").is_err());
        assert!(keys(r#"{"a":True}"#).is_err());
        assert!(keys(r#"{"a":1"#).is_err());
    }

    #[test]
    fn skipping_is_depth_bounded() {
        let deep = "[".repeat(50) + &"]".repeat(50);
        assert!(Reader::new(&deep).skip_value(50).is_ok());
        assert!(Reader::new(&deep).skip_value(49).is_err());
        let huge = "[".repeat(100_000);
        assert!(Reader::new(&huge).skip_value(100).is_err());
    }
}
