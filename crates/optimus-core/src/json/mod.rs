//! The proto3 JSON mapping: options, and the entry points over the reader and writer.
//!
//! [`decode`] reads JSON text with a byte-level pull parser (`reader`) driven by the message
//! type's field table (`decode`); [`encode`] walks the instance schema and writes compact
//! JSON (`encode`). Well-known types have their own forms (`wkt`), numbers their exact
//! conversions (`number`). Behaviour follows Google's conformance suite (protobuf 3.21 with
//! the recommended tests): lowerCamel names out, both names in, 64-bit integers as strings,
//! `NaN`/`Infinity` as strings, base64 bytes, enum names, duplicate and unknown fields
//! rejected. Duplicate keys inside a map or `Struct` object keep the last value, as upb does.

pub(crate) mod base64;
pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod number;
pub(crate) mod reader;
pub(crate) mod wkt;

use optimus_schema::{MessageId, SchemaSet};

/// The bytes that end a plain run inside a JSON string: `"`, `\\` and the control characters
/// (which a writer escapes and a reader stops at).
const STRING_SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// The end of the run of plain string bytes in `bytes` from `from`: the index of the first
/// byte of [`STRING_SPECIAL`], or `bytes.len()`. Sixteen bytes at a time while sixteen remain
/// (SSE2, on x86-64), then eight, then one.
#[inline]
fn plain_run(bytes: &[u8], from: usize) -> usize {
    let mut i = from;
    #[cfg(target_arch = "x86_64")]
    while let Some(chunk) = bytes.get(i..i + 16) {
        let special = special_bytes16(chunk.try_into().expect("sixteen bytes"));
        if special != 0 {
            return i + special.trailing_zeros() as usize;
        }
        i += 16;
    }
    while let Some(chunk) = bytes.get(i..i + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let special = special_bytes(word);
        if special != 0 {
            return i + (special.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < bytes.len() && !STRING_SPECIAL[usize::from(bytes[i])] {
        i += 1;
    }
    i
}

/// Whether `bytes` holds no byte of [`STRING_SPECIAL`]: sixteen at a time (SSE2, on x86-64)
/// or eight, the last sixteen or eight read overlapping the ones before; shorter strings as
/// one word of their first and last four bytes, or of their bytes padded with plain ones.
#[inline]
fn is_plain(bytes: &[u8]) -> bool {
    let n = bytes.len();
    #[cfg(target_arch = "x86_64")]
    if n >= 16 {
        let chunk = |at: usize| -> &[u8; 16] { bytes[at..at + 16].try_into().expect("sixteen") };
        let mut i = 0;
        while i + 16 < n {
            if special_bytes16(chunk(i)) != 0 {
                return false;
            }
            i += 16;
        }
        return special_bytes16(chunk(n - 16)) == 0;
    }
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight"));
    if n >= 8 {
        let mut i = 0;
        while i + 8 < n {
            if special_bytes(word(i)) != 0 {
                return false;
            }
            i += 8;
        }
        return special_bytes(word(n - 8)) == 0;
    }
    let half = |at: usize| {
        u64::from(u32::from_le_bytes(
            bytes[at..at + 4].try_into().expect("four"),
        ))
    };
    let packed = match n {
        4.. => half(0) | half(n - 4) << 32,
        1.. => {
            // The first, middle and last bytes (all of them), the rest `a`s.
            0x6161_6161_6100_0000
                | u64::from(bytes[0])
                | u64::from(bytes[n / 2]) << 8
                | u64::from(bytes[n - 1]) << 16
        }
        0 => return true,
    };
    special_bytes(packed) == 0
}

/// The bytes of `chunk` that are in [`STRING_SPECIAL`], one bit each (the first lowest):
/// sixteen compared at once.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn special_bytes16(chunk: &[u8; 16]) -> u32 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of the x86-64 baseline, so these are always available; the load is
    // unaligned and reads exactly the sixteen bytes of `chunk`.
    unsafe {
        let x = _mm_loadu_si128(chunk.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
        // A control character (below 0x20) is one whose unsigned maximum with 0x1f is 0x1f.
        let low = _mm_set1_epi8(0x1f);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(x, low), low);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
    }
}

/// The bytes of `word` (eight string bytes, the first lowest) that are in
/// [`STRING_SPECIAL`], as their high bits. Bits above the first may be false (a borrow
/// carries into them); the first is exact.
#[inline(always)]
fn special_bytes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let quote = zero_byte(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    quote | backslash | control
}

use crate::error::Error;
use crate::message::Message;

/// How JSON is written and read.
#[derive(Debug, Clone)]
pub struct JsonOptions {
    /// Write unset fields without presence (outside oneofs) with their default values, and
    /// unset lists and maps as `[]` and `{}`.
    pub emit_defaults: bool,
    /// Write fields under their `.proto` names instead of their lowerCamel JSON names.
    pub proto_names: bool,
    /// On input, skip members that name no field and enum values that name no value.
    pub ignore_unknown: bool,
    /// On input, the deepest nesting of objects and arrays accepted.
    pub depth_limit: u32,
}

impl Default for JsonOptions {
    fn default() -> JsonOptions {
        JsonOptions {
            emit_defaults: false,
            proto_names: false,
            ignore_unknown: false,
            depth_limit: crate::DEFAULT_DEPTH_LIMIT,
        }
    }
}

/// Writes `msg` as compact proto3 JSON.
///
/// # Errors
/// [`Error::Encode`], naming the field, for values JSON cannot represent: a Timestamp or
/// Duration out of range, a FieldMask path that would not read back, a non-finite number in a
/// `google.protobuf.Value`, an `Any` whose type is not in `schema` or whose payload does not
/// decode.
pub fn encode(schema: &SchemaSet, msg: &Message, opts: &JsonOptions) -> Result<String, Error> {
    // Room for a small message's document, so the first few growths are not paid.
    let mut out = String::with_capacity(256);
    encode_to(schema, msg, opts, &mut out)?;
    Ok(out)
}

/// Appends `msg` as compact proto3 JSON to `out`; on error `out` holds a partial document.
///
/// # Errors
/// As [`encode`].
pub fn encode_to(
    schema: &SchemaSet,
    msg: &Message,
    opts: &JsonOptions,
    out: &mut String,
) -> Result<(), Error> {
    encode::Encoder::new(schema, opts, out)
        .write_message(msg)
        .map_err(|e| encode::within(e, schema.message(msg.type_id()).full_name.as_str()))
}

/// Reads a message of type `id` from proto3 JSON text.
///
/// # Errors
/// [`Error::Decode`] with the byte offset and field path of the first problem: malformed
/// JSON, an unknown field (unless `ignore_unknown`), a field given twice, a value of the wrong
/// type or out of range, nesting deeper than `depth_limit`, or text after the value.
pub fn decode(
    schema: &SchemaSet,
    id: MessageId,
    text: &str,
    opts: &JsonOptions,
) -> Result<Message, Error> {
    let mut msg = Message::new(schema, id);
    let mut d = decode::Decoder::new(schema, text, opts);
    d.read_message(&mut msg)
        .and_then(|()| d.r.finish())
        .map_err(|e| e.within(schema.message(id).full_name.clone()))?;
    Ok(msg)
}

/// The conformance suite's proto3 test messages, for this module's tests.
#[cfg(test)]
fn conformance_schema() -> SchemaSet {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/conformance");
    SchemaSet::from_proto_files(&[format!("{dir}/test_messages_proto3.proto")], &[dir])
        .expect("conformance protos compile")
}

#[cfg(test)]
mod tests {
    use super::{is_plain, plain_run, STRING_SPECIAL};

    /// Every length, every start, a special byte (or none) at every place: the run ends where
    /// the byte-by-byte table says, whichever width (sixteen, eight, one) finds it.
    #[test]
    fn plain_runs_end_at_the_first_special_byte() {
        let specials = [b'"', b'\\', 0x00, 0x1f, 0x0a];
        let plains = [b'a', b' ', 0x20, 0x7f, 0x80, 0xff, b'/', 0xe9];
        for len in 0..48 {
            for from in 0..=len {
                for at in from..=len {
                    for (k, &special) in specials.iter().enumerate() {
                        let mut bytes: Vec<u8> =
                            (0..len).map(|i| plains[(i + k) % plains.len()]).collect();
                        if at < len {
                            bytes[at] = special;
                        }
                        let want = (from..len)
                            .find(|&i| STRING_SPECIAL[usize::from(bytes[i])])
                            .unwrap_or(len);
                        assert_eq!(plain_run(&bytes, from), want, "{bytes:?} from {from}");
                    }
                }
            }
        }
    }

    /// Every length, a special byte (or two, or none) at every place: a string is plain
    /// exactly when the byte-by-byte table finds no special byte in it.
    #[test]
    fn plain_strings_have_no_special_byte() {
        let specials = [b'"', b'\\', 0x00, 0x1f, 0x0a];
        let plains = [b'a', b' ', 0x20, 0x7f, 0x80, 0xff, b'/', 0xe9, 0x21, 0x5d];
        for len in 0..72 {
            for at in 0..=len {
                for (k, &special) in specials.iter().enumerate() {
                    let mut bytes: Vec<u8> = (0..len)
                        .map(|i| plains[(i * 7 + k) % plains.len()])
                        .collect();
                    if at < len {
                        bytes[at] = special;
                    }
                    let want = !bytes.iter().any(|&b| STRING_SPECIAL[usize::from(b)]);
                    assert_eq!(is_plain(&bytes), want, "{bytes:?}");
                    if at < len {
                        bytes[(at * 5 + k) % len] = specials[(k + 1) % specials.len()];
                        assert!(!is_plain(&bytes), "{bytes:?}");
                    }
                }
            }
        }
    }
}
