//! Varint, zigzag and fixed-width converter ops over a bounds-checked input cursor.
//!
//! One- and two-byte varints are taken inline; longer forms up to eight bytes are read from
//! one word, the rest through a loop that stops at 10 bytes (bits past 64 are dropped, as
//! Google protobuf does).

use super::{fail, Fail};
use crate::DecodeErrorKind;

/// Longest varint (a 64-bit value).
pub(crate) const MAX_VARINT_BYTES: usize = 10;

/// Reads a varint at `*pos`, not reading at or past `end`.
#[inline(always)]
pub(crate) fn read_varint(buf: &[u8], pos: &mut usize, end: usize) -> Result<u64, Fail> {
    let p = *pos;
    if p + 1 < end {
        let (b0, b1) = (buf[p], buf[p + 1]);
        if b0 < 0x80 {
            *pos = p + 1;
            return Ok(u64::from(b0));
        }
        if b1 < 0x80 {
            *pos = p + 2;
            return Ok(u64::from(b0 & 0x7f) | u64::from(b1) << 7);
        }
    } else if p < end && buf[p] < 0x80 {
        *pos = p + 1;
        return Ok(u64::from(buf[p]));
    }
    // The position goes in and out by value: were its address passed to this call (never
    // inlined), the caller's position could not stay in a register.
    let (value, next) = read_varint_slow(buf, p, end);
    if next == 0 {
        return Err(varint_error(p, end));
    }
    *pos = next;
    Ok(value)
}

/// Reads a varint of three bytes or more at `start`: the value and the position after it, or
/// position 0 where no varint ends within ten bytes or before `end` ([`varint_error`] says
/// which). Two values come back in registers, where a `Result` would go through memory.
#[inline(never)]
fn read_varint_slow(buf: &[u8], start: usize, end: usize) -> (u64, usize) {
    // With eight bytes left in the input, a varint of up to eight is read from one word: its
    // last byte is the first without the continuation bit, and its seven-bit groups are packed
    // together. The word may reach past `end` (a sub-message's last field ends there): a
    // varint whose last byte lies past `end` is cut off by it.
    if let Some(bytes) = buf.get(start..start + 8) {
        let word = u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
        let stops = !word & 0x8080_8080_8080_8080;
        if stops != 0 {
            let last_bit = stops & stops.wrapping_neg();
            let kept = word & (last_bit << 1).wrapping_sub(1) & 0x7f7f_7f7f_7f7f_7f7f;
            let next = start + (last_bit.trailing_zeros() as usize + 1) / 8;
            return if next <= end {
                (pack_groups(kept), next)
            } else {
                (0, 0)
            };
        }
        // All eight continued: the word's groups, then a ninth byte and maybe a tenth (of
        // which only the lowest bit fits in 64).
        let low = pack_groups(word & 0x7f7f_7f7f_7f7f_7f7f);
        let within = &buf[..end];
        return match (within.get(start + 8), within.get(start + 9)) {
            (Some(&b8), _) if b8 < 0x80 => (low | u64::from(b8) << 56, start + 9),
            (Some(&b8), Some(&b9)) if b9 < 0x80 => (
                low | u64::from(b8 & 0x7f) << 56 | u64::from(b9) << 63,
                start + 10,
            ),
            _ => (0, 0),
        };
    }
    // With a whole varint's room left, the bytes are read without a bound check each.
    if let Some(bytes) = buf[..end].get(start..start + MAX_VARINT_BYTES) {
        let bytes: &[u8; MAX_VARINT_BYTES] = bytes.try_into().expect("the slice's length");
        let mut value = 0u64;
        for (i, &b) in bytes.iter().enumerate() {
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return (value, start + i + 1);
            }
        }
        return (0, 0);
    }
    let mut value = 0u64;
    for (i, &b) in buf[..end]
        .get(start..)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return (value, start + i + 1);
        }
    }
    (0, 0)
}

/// Why no varint was read at `start`: ten bytes all continued, or the input ended first.
#[cold]
#[inline(never)]
fn varint_error(start: usize, end: usize) -> Fail {
    if end.saturating_sub(start) >= MAX_VARINT_BYTES {
        fail(start, DecodeErrorKind::VarintTooLong(MAX_VARINT_BYTES))
    } else {
        fail(
            start,
            DecodeErrorKind::Truncated {
                needed: 1,
                remaining: 0,
            },
        )
    }
}

/// The seven-bit groups of a word, one in the low bits of each byte (the first lowest),
/// packed into one value of up to 56 bits.
#[inline(always)]
fn pack_groups(x: u64) -> u64 {
    let x = (x & 0x007f_007f_007f_007f) | (x & 0x7f00_7f00_7f00_7f00) >> 1;
    let x = (x & 0x0000_3fff_0000_3fff) | (x & 0x3fff_0000_3fff_0000) >> 2;
    (x & 0x0000_0000_0fff_ffff) | (x & 0x0fff_ffff_0000_0000) >> 4
}

/// The low 56 bits of `v` as eight seven-bit groups, one in each byte of a word (the first
/// group in the lowest byte).
#[inline(always)]
pub(crate) fn spread_groups(v: u64) -> u64 {
    (v & 0x7f)
        | (v << 1 & 0x7f00)
        | (v << 2 & 0x7f_0000)
        | (v << 3 & 0x7f00_0000)
        | (v << 4 & 0x7f_0000_0000)
        | (v << 5 & 0x7f00_0000_0000)
        | (v << 6 & 0x7f_0000_0000_0000)
        | (v << 7 & 0x7f00_0000_0000_0000)
}

/// Hands `put` the varint bytes of `v` in a word (the first byte lowest) and their count,
/// for a `v` below 2^56; returns false, calling nothing, for a longer one. Each length is
/// its own branch with its count a constant, so a writer's position after the varint is a
/// step the branch predictor knows rather than a value computed from `v` that the next
/// field's store waits for (measured: 8% on Thrift compact encode).
#[inline(always)]
pub(crate) fn short_varint(v: u64, put: impl FnOnce(u64, usize)) -> bool {
    let groups = || spread_groups(v);
    // One byte first (most values), then the rest as a search: at most five compares.
    if v < 1 << 7 {
        put(v, 1)
    } else if v < 1 << 28 {
        if v < 1 << 14 {
            put(v & 0x7f | 0x80 | (v << 1 & 0x7f00), 2)
        } else if v < 1 << 21 {
            put(groups() | 0x8080, 3)
        } else {
            put(groups() | 0x80_8080, 4)
        }
    } else if v < 1 << 42 {
        if v < 1 << 35 {
            put(groups() | 0x8080_8080, 5)
        } else {
            put(groups() | 0x80_8080_8080, 6)
        }
    } else if v < 1 << 49 {
        put(groups() | 0x8080_8080_8080, 7)
    } else if v < 1 << 56 {
        put(groups() | 0x80_8080_8080_8080, 8)
    } else {
        return false;
    }
    true
}

/// Reads `N` bytes at `*pos`.
#[inline(always)]
pub(crate) fn read_fixed<const N: usize>(
    buf: &[u8],
    pos: &mut usize,
    end: usize,
) -> Result<[u8; N], Fail> {
    let p = *pos;
    if end - p < N {
        return Err(fail(
            p,
            DecodeErrorKind::Truncated {
                needed: N,
                remaining: end - p,
            },
        ));
    }
    let mut out = [0u8; N];
    out.copy_from_slice(&buf[p..p + N]);
    *pos = p + N;
    Ok(out)
}

/// Reads a length prefix and checks it against what remains; returns the end of the value.
#[inline(always)]
pub(crate) fn read_length(buf: &[u8], pos: &mut usize, end: usize) -> Result<usize, Fail> {
    let at = *pos;
    let len = read_varint(buf, pos, end)?;
    let remaining = end - *pos;
    if len > remaining as u64 {
        return Err(fail(at, DecodeErrorKind::LengthOverrun { len, remaining }));
    }
    Ok(*pos + len as usize)
}

/// Appends `v` as a varint.
#[inline]
pub(crate) fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Bytes `v` takes as a varint.
#[inline]
pub(crate) fn varint_len(v: u64) -> usize {
    // 1 + floor(bits / 7), with 0 taking one byte.
    let bits = 64 - (v | 1).leading_zeros() as usize;
    (bits * 9 + 64) / 64
}

/// Zigzag-encodes a signed 32-bit value.
#[inline]
pub(crate) fn zigzag32(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

/// Zigzag-encodes a signed 64-bit value.
#[inline]
pub(crate) fn zigzag64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Undoes [`zigzag32`].
#[inline]
pub(crate) fn unzigzag32(v: u32) -> i32 {
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

/// Undoes [`zigzag64`].
#[inline]
pub(crate) fn unzigzag64(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seven_bit_boundary_round_trips() {
        let mut values = vec![0u64, 1, u64::MAX, u64::MAX - 1];
        for k in 1..=9 {
            let b = 1u64 << (7 * k);
            values.extend([b - 1, b, b + 1]);
        }
        for v in values {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
            let mut pos = 0;
            assert_eq!(read_varint(&out, &mut pos, out.len()).unwrap(), v);
            assert_eq!(pos, out.len());
            // One byte short is truncated, never a panic.
            let mut pos = 0;
            assert!(read_varint(&out, &mut pos, out.len() - 1).is_err());
            // With a whole varint's room after it (the path without per-byte bound checks).
            let len = out.len();
            out.extend([0x80; MAX_VARINT_BYTES]);
            let mut pos = 0;
            assert_eq!(read_varint(&out, &mut pos, out.len()).unwrap(), v);
            assert_eq!(pos, len);
        }
    }

    #[test]
    fn short_varint_words_hold_the_plain_loops_bytes() {
        let mut values = vec![0u64, 1, u64::MAX];
        for k in 1..=9 {
            let b = 1u64 << (7 * k);
            values.extend([b - 1, b, b + 1, b | 0x55, (b - 1) & 0x2a55_aa55_aa55_aa55]);
        }
        for v in values {
            let mut plain = Vec::new();
            write_varint(&mut plain, v);
            let mut got = None;
            let short = short_varint(v, |word, n| got = Some(word.to_le_bytes()[..n].to_vec()));
            assert_eq!(short, v < 1 << 56, "{v:#x}");
            assert_eq!(got, short.then_some(plain), "{v:#x}");
        }
    }

    #[test]
    fn every_form_of_every_length_reads_as_the_plain_loop_reads_it() {
        // Non-canonical forms too (zero groups after the first), with and without bytes after.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for len in 1..=MAX_VARINT_BYTES {
            for _ in 0..200 {
                let mut bytes: Vec<u8> = (0..len)
                    .map(|i| {
                        seed = seed
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let group = (seed >> 33) as u8 & if seed >> 40 & 3 == 0 { 0 } else { 0x7f };
                        if i + 1 < len {
                            group | 0x80
                        } else {
                            group
                        }
                    })
                    .collect();
                let want = bytes.iter().enumerate().fold(0u64, |v, (i, &b)| {
                    v | u64::from(b & 0x7f).checked_shl(7 * i as u32).unwrap_or(0)
                });
                for after in [0, 3, 8, 12] {
                    bytes.resize(len + after, 0x80);
                    let mut pos = 0;
                    let got = read_varint(&bytes, &mut pos, bytes.len()).unwrap();
                    assert_eq!((got, pos), (want, len), "{bytes:02x?}");
                }
            }
        }
    }

    #[test]
    fn overlong_varints() {
        // Ten bytes with high bits set in the last one: bits past 64 are dropped.
        let ten = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
        let mut pos = 0;
        assert_eq!(read_varint(&ten, &mut pos, 10).unwrap(), u64::MAX);
        let eleven = [0xff; 11];
        let mut pos = 0;
        let e = read_varint(&eleven, &mut pos, 11).unwrap_err();
        assert!(e.to_string().contains("longer than 10"), "{e}");
    }

    #[test]
    fn truncated_varints_fail_at_their_start() {
        // One to nine continued bytes that the input's end cuts off, after a prefix.
        for len in 1..MAX_VARINT_BYTES {
            let mut bytes = vec![0x01, 0x02];
            bytes.extend(std::iter::repeat_n(0x80, len));
            let mut pos = 2;
            let e = read_varint(&bytes, &mut pos, bytes.len()).unwrap_err();
            assert_eq!(e.offset, 2, "{len}");
            assert!(
                matches!(e.kind, DecodeErrorKind::Truncated { .. }),
                "{len}: {e}"
            );
            assert_eq!(pos, 2, "the position stays at the varint");
            // The same varint ending at a sub-message's end, the input going on past it: the
            // end cuts it off all the same, and one that ends before it reads whole.
            let end = bytes.len();
            bytes.extend([0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c]);
            let mut pos = 2;
            let e = read_varint(&bytes, &mut pos, end).unwrap_err();
            assert!(
                matches!(e.kind, DecodeErrorKind::Truncated { .. }),
                "{len}: {e}"
            );
            let mut pos = 2;
            assert_eq!(
                read_varint(&bytes, &mut pos, end + 1).unwrap(),
                5 << (7 * len)
            );
            assert_eq!(pos, end + 1);
        }
    }

    #[test]
    fn zigzag_edges() {
        for v in [0, -1, 1, i32::MIN, i32::MAX] {
            assert_eq!(unzigzag32(zigzag32(v)), v);
        }
        for v in [0, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag64(zigzag64(v)), v);
        }
        assert_eq!(zigzag32(-1), 1);
        assert_eq!(zigzag64(i64::MIN), u64::MAX);
    }

    #[test]
    fn lengths_are_checked_before_slicing() {
        let buf = [5u8, 1, 2];
        let mut pos = 0;
        assert!(read_length(&buf, &mut pos, 3).is_err());
        let mut pos = 0;
        assert!(read_fixed::<4>(&buf, &mut pos, 3).is_err());
    }
}
