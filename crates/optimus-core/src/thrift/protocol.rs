//! The framing rules of TBinaryProtocol and TCompactProtocol: how a field header, a scalar, a
//! string and a container header look on the wire. The Thrift walkers (`decode`, `encode`)
//! are generic over these two traits, so each protocol is only its framing.
//!
//! Readers speak in TBinaryProtocol's type codes (compact codes are mapped on read); the
//! compact reader's boolean field value travels from the field header to the next `bool`
//! read. A struct's last field id (compact's delta base) is the struct walker's local, passed
//! in, so no stack is kept here.

use crate::binary::varint::{short_varint, spread_groups};
use crate::binary::{fail, Fail};
use crate::error::DecodeErrorKind;

type R<T> = Result<T, Fail>;

/// TBinaryProtocol type codes.
pub(crate) mod code {
    pub const STOP: u8 = 0;
    pub const BOOL: u8 = 2;
    pub const BYTE: u8 = 3;
    pub const DOUBLE: u8 = 4;
    pub const I16: u8 = 6;
    pub const I32: u8 = 8;
    pub const I64: u8 = 10;
    pub const STRING: u8 = 11;
    pub const STRUCT: u8 = 12;
    pub const MAP: u8 = 13;
    pub const SET: u8 = 14;
    pub const LIST: u8 = 15;
}

/// Reading one protocol's framing from a byte cursor. A reader is a small value (the input,
/// a position, a pending bool) that walkers copy into a local while they read.
pub(crate) trait Reader<'a>: Copy {
    /// Bytes read so far (the offset errors report).
    fn pos(&self) -> usize;
    /// The next field's type code and id, or `None` at the struct's stop byte.
    fn field_begin(&mut self, last_id: &mut i16) -> R<Option<(u8, i16)>>;
    /// Whether the next field's header is `binary`, a field's TBinaryProtocol header (as
    /// [`ThriftStruct::binary_headers`] holds it), taken if so: the decoder's guess that
    /// fields arrive in id order, checked with one comparison. Readers of other framings
    /// answer false and take nothing (compact's one-byte headers gained nothing from it).
    ///
    /// [`ThriftStruct::binary_headers`]: optimus_schema::thrift::ThriftStruct::binary_headers
    #[inline(always)]
    fn take_header(&mut self, _binary: u32) -> bool {
        false
    }
    /// A bool (a compact bool field's value comes from its header).
    fn bool(&mut self) -> R<bool>;
    /// An i8.
    fn byte(&mut self) -> R<i8>;
    /// An i16.
    fn i16(&mut self) -> R<i16>;
    /// An i32.
    fn i32(&mut self) -> R<i32>;
    /// An i64.
    fn i64(&mut self) -> R<i64>;
    /// A double.
    fn double(&mut self) -> R<f64>;
    /// A string or binary value: the bytes, viewed in the input.
    fn binary(&mut self) -> R<&'a [u8]>;
    /// A list or set header: element type code and size.
    fn list_begin(&mut self) -> R<(u8, usize)>;
    /// A map header: key and value type codes (0 for an empty compact map) and size.
    fn map_begin(&mut self) -> R<(u8, u8, usize)>;
}

/// Writing one protocol's framing.
pub(crate) trait Writer {
    /// A field header.
    fn field_begin(out: &mut Vec<u8>, code: u8, id: i16, last_id: &mut i16);
    /// A bool field: header and value (one byte in compact).
    fn field_bool(out: &mut Vec<u8>, id: i16, value: bool, last_id: &mut i16);
    /// The stop byte that ends a struct.
    #[inline]
    fn field_stop(out: &mut Vec<u8>) {
        out.push(code::STOP);
    }
    /// A bool outside a field header (a container element or map part).
    fn bool(out: &mut Vec<u8>, v: bool);
    /// An i8.
    #[inline]
    fn byte(out: &mut Vec<u8>, v: i8) {
        out.push(v as u8);
    }
    /// An i16.
    fn i16(out: &mut Vec<u8>, v: i16);
    /// An i32.
    fn i32(out: &mut Vec<u8>, v: i32);
    /// An i64.
    fn i64(out: &mut Vec<u8>, v: i64);
    /// A double.
    fn double(out: &mut Vec<u8>, v: f64);
    /// A string or binary value.
    fn binary(out: &mut Vec<u8>, v: &[u8]);
    /// A list or set header.
    fn list_begin(out: &mut Vec<u8>, code: u8, size: usize);
    /// A map header.
    fn map_begin(out: &mut Vec<u8>, key: u8, value: u8, size: usize);

    // The encoder's fast path: a whole scalar field into [`Room`] reserved once per field
    // ([`FIELD_ROOM`] bytes, a string's length more), with no capacity check per write.

    /// A field header.
    ///
    /// # Safety
    /// [`FIELD_ROOM`] bytes of room reserved in `out`.
    unsafe fn field_begin_unchecked(out: &mut Room, code: u8, id: i16, last_id: &mut i16);
    /// A field header, given also as its precomputed TBinaryProtocol form
    /// ([`ThriftStruct::binary_headers`](optimus_schema::thrift::ThriftStruct)).
    ///
    /// # Safety
    /// As [`Writer::field_begin_unchecked`].
    #[inline(always)]
    unsafe fn field_header_unchecked(
        out: &mut Room,
        _binary: u32,
        code: u8,
        id: i16,
        last_id: &mut i16,
    ) {
        // SAFETY: the caller's duty.
        unsafe { Self::field_begin_unchecked(out, code, id, last_id) }
    }
    /// A bool field, header (given also as its TBinaryProtocol form, as to
    /// [`Writer::field_header_unchecked`]) and value.
    ///
    /// # Safety
    /// As [`Writer::field_begin_unchecked`].
    unsafe fn field_bool_unchecked(
        out: &mut Room,
        binary: u32,
        id: i16,
        value: bool,
        last_id: &mut i16,
    );
    /// An i8, i16 or i32 value as the field's type `code` writes it.
    ///
    /// # Safety
    /// Twelve bytes of spare capacity.
    unsafe fn int_unchecked(out: &mut Room, code: u8, v: i32);
    /// An i64.
    ///
    /// # Safety
    /// Eighteen bytes of spare capacity.
    unsafe fn i64_unchecked(out: &mut Room, v: i64);
    /// A double.
    ///
    /// # Safety
    /// Eight bytes of spare capacity.
    unsafe fn double_unchecked(out: &mut Room, v: f64);
    /// A string's or binary's length and bytes.
    ///
    /// # Safety
    /// Twelve bytes of spare capacity beyond `v.len()`.
    unsafe fn binary_unchecked(out: &mut Room, v: &[u8]);
}

/// Room one scalar field takes at most on the fast path, in either protocol: a header of at
/// most four bytes, a value of at most ten, and the slack of an eight-byte store.
pub(crate) const FIELD_ROOM: usize = 24;

/// The end of an output buffer held apart from its `Vec` while fields are written: a local
/// the compiler keeps in registers, where a `Vec` reached through a struct field is reloaded
/// from memory after every store into its bytes.
pub(crate) struct Room {
    /// The buffer's start.
    ptr: *mut u8,
    /// Bytes written.
    len: usize,
    /// The buffer's capacity.
    cap: usize,
}

impl Room {
    /// The room after what `out` holds.
    #[inline(always)]
    pub(crate) fn of(out: &mut Vec<u8>) -> Room {
        Room {
            ptr: out.as_mut_ptr(),
            len: out.len(),
            cap: out.capacity(),
        }
    }

    /// Makes sure of `n` bytes of room, growing `out` (which takes this room's bytes first)
    /// when they are not there.
    #[inline(always)]
    pub(crate) fn reserve(&mut self, out: &mut Vec<u8>, n: usize) {
        if self.cap - self.len < n {
            self.settle(out);
            out.reserve(n);
            *self = Room::of(out);
        }
    }

    /// Hands the bytes written back to `out`, the `Vec` this room was made of.
    #[inline(always)]
    pub(crate) fn settle(&self, out: &mut Vec<u8>) {
        debug_assert!(self.len <= out.capacity() && std::ptr::eq(self.ptr, out.as_mut_ptr()));
        // SAFETY: the bytes up to `len` were written through this room, inside `out`'s
        // capacity (every write reserved its room first).
        unsafe { out.set_len(self.len) };
    }

    /// Appends `bytes`.
    ///
    /// # Safety
    /// `bytes.len()` bytes of room reserved.
    #[inline(always)]
    unsafe fn put(&mut self, bytes: &[u8]) {
        debug_assert!(self.cap - self.len >= bytes.len());
        // SAFETY: the caller's duty: the room after `len` takes the bytes.
        unsafe { crate::record::copy_short(bytes, self.ptr.add(self.len)) };
        self.len += bytes.len();
    }
}

/// Appends the low `len` (at most 8) bytes of `word`, least significant first, with one
/// eight-byte store.
///
/// # Safety
/// Eight bytes of room reserved in `out`.
#[inline(always)]
unsafe fn put_word(out: &mut Room, word: u64, len: usize) {
    debug_assert!(out.cap - out.len >= 8 && len <= 8);
    // SAFETY: the caller's duty: eight bytes of room after `len`; the `len` bytes kept are
    // written by the store.
    unsafe { std::ptr::write_unaligned(out.ptr.add(out.len).cast::<u64>(), word.to_le()) };
    out.len += len;
}

/// Appends `v` as a varint.
///
/// # Safety
/// Eighteen bytes of spare capacity (a ten-byte varint, and an eight-byte store's slack).
#[inline(always)]
unsafe fn put_varint_unchecked(out: &mut Room, v: u64) {
    // SAFETY: the caller's duty: at most eight bytes, with the store's slack, in the
    // reserved room.
    if short_varint(v, |word, n| unsafe { put_word(out, word, n) }) {
        return;
    }
    // Nine or ten bytes: the first eight groups, all continued, then the rest.
    let high = v >> 56;
    // SAFETY: as above: eight bytes, then one or two with their store's slack.
    unsafe {
        put_word(out, spread_groups(v) | 0x8080_8080_8080_8080, 8);
        if high < 0x80 {
            put_word(out, high, 1);
        } else {
            put_word(out, (high & 0x7f | 0x80) | (high >> 7) << 8, 2);
        }
    }
}

/// A cursor over the input shared by both readers. Its position never passes the input's
/// end: it starts at 0 and moves only over bytes that are there.
#[derive(Clone, Copy)]
pub(crate) struct Cursor<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

impl<'a> Cursor<'a> {
    /// The next `n` bytes: one comparison with what remains (the position never passes the
    /// input's end).
    #[inline(always)]
    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        debug_assert!(self.pos <= self.buf.len());
        if n > self.buf.len() - self.pos {
            return Err(self.truncated(n));
        }
        // SAFETY: `pos + n <= buf.len()`, checked just above.
        let s = unsafe { self.buf.get_unchecked(self.pos..self.pos + n) };
        self.pos += n;
        Ok(s)
    }

    #[inline(always)]
    fn array<const N: usize>(&mut self) -> R<[u8; N]> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    #[inline(always)]
    fn u8(&mut self) -> R<u8> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.truncated(1)),
        }
    }

    #[cold]
    fn truncated(&self, needed: usize) -> Fail {
        fail(
            self.pos,
            DecodeErrorKind::Truncated {
                needed,
                remaining: self.buf.len() - self.pos,
            },
        )
    }

    /// A length or size prefix checked against what remains (`min_each` bytes per unit).
    #[inline(always)]
    fn size(&self, at: usize, n: i64, min_each: usize) -> R<usize> {
        if n < 0 {
            return Err(fail(at, DecodeErrorKind::NegativeLength(n)));
        }
        let remaining = self.buf.len() - self.pos;
        match usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(min_each))
        {
            Some(bytes) if bytes <= remaining => Ok(n as usize),
            _ => Err(fail(
                at,
                DecodeErrorKind::LengthOverrun {
                    len: n as u64,
                    remaining,
                },
            )),
        }
    }

    /// A base-128 varint of at most ten bytes (bits past 64 dropped).
    #[inline(always)]
    pub(crate) fn varint(&mut self) -> R<u64> {
        let start = self.pos;
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(fail(start, DecodeErrorKind::VarintTooLong(10)))
    }
}

/// TBinaryProtocol: big-endian fixed-width integers, `i32` length and size prefixes.
#[derive(Clone, Copy)]
pub(crate) struct BinaryReader<'a> {
    pub c: Cursor<'a>,
}

impl<'a> Reader<'a> for BinaryReader<'a> {
    #[inline(always)]
    fn pos(&self) -> usize {
        self.c.pos
    }

    #[inline(always)]
    fn take_header(&mut self, binary: u32) -> bool {
        let c = &mut self.c;
        match c.buf.get(c.pos..c.pos + 3) {
            Some(&[code, hi, lo]) if u32::from_le_bytes([code, hi, lo, 0]) == binary => {
                c.pos += 3;
                true
            }
            _ => false,
        }
    }

    #[inline(always)]
    fn field_begin(&mut self, _: &mut i16) -> R<Option<(u8, i16)>> {
        let t = self.c.u8()?;
        if t == code::STOP {
            return Ok(None);
        }
        Ok(Some((t, i16::from_be_bytes(self.c.array()?))))
    }

    #[inline(always)]
    fn bool(&mut self) -> R<bool> {
        Ok(self.c.u8()? != 0)
    }

    #[inline(always)]
    fn byte(&mut self) -> R<i8> {
        Ok(self.c.u8()? as i8)
    }

    #[inline(always)]
    fn i16(&mut self) -> R<i16> {
        Ok(i16::from_be_bytes(self.c.array()?))
    }

    #[inline(always)]
    fn i32(&mut self) -> R<i32> {
        Ok(i32::from_be_bytes(self.c.array()?))
    }

    #[inline(always)]
    fn i64(&mut self) -> R<i64> {
        Ok(i64::from_be_bytes(self.c.array()?))
    }

    #[inline(always)]
    fn double(&mut self) -> R<f64> {
        Ok(f64::from_bits(u64::from_be_bytes(self.c.array()?)))
    }

    #[inline(always)]
    fn binary(&mut self) -> R<&'a [u8]> {
        let at = self.c.pos;
        let n = i32::from_be_bytes(self.c.array()?);
        let n = self.c.size(at, i64::from(n), 1)?;
        self.c.take(n)
    }

    #[inline(always)]
    fn list_begin(&mut self) -> R<(u8, usize)> {
        let at = self.c.pos;
        let t = self.c.u8()?;
        let n = i32::from_be_bytes(self.c.array()?);
        Ok((t, self.c.size(at, i64::from(n), 1)?))
    }

    #[inline(always)]
    fn map_begin(&mut self) -> R<(u8, u8, usize)> {
        let at = self.c.pos;
        let k = self.c.u8()?;
        let v = self.c.u8()?;
        let n = i32::from_be_bytes(self.c.array()?);
        Ok((k, v, self.c.size(at, i64::from(n), 2)?))
    }
}

/// TBinaryProtocol's writer.
pub(crate) struct BinaryWriter;

impl Writer for BinaryWriter {
    #[inline(always)]
    unsafe fn field_begin_unchecked(out: &mut Room, code: u8, id: i16, _: &mut i16) {
        // SAFETY: the caller's duty.
        unsafe {
            put_word(
                out,
                u64::from(code) | u64::from((id as u16).swap_bytes()) << 8,
                3,
            )
        }
    }

    #[inline(always)]
    unsafe fn field_header_unchecked(out: &mut Room, binary: u32, _: u8, _: i16, _: &mut i16) {
        // SAFETY: the caller's duty.
        unsafe { put_word(out, u64::from(binary), 3) }
    }

    #[inline(always)]
    unsafe fn field_bool_unchecked(out: &mut Room, binary: u32, _: i16, value: bool, _: &mut i16) {
        // SAFETY: the caller's duty.
        unsafe { put_word(out, u64::from(binary) | u64::from(value) << 24, 4) }
    }

    #[inline(always)]
    unsafe fn int_unchecked(out: &mut Room, code: u8, v: i32) {
        // SAFETY: the caller's duty.
        unsafe {
            match code {
                code::BYTE => put_word(out, u64::from(v as u8), 1),
                code::I16 => put_word(out, u64::from((v as u16).swap_bytes()), 2),
                _ => put_word(out, u64::from((v as u32).swap_bytes()), 4),
            }
        }
    }

    #[inline(always)]
    unsafe fn i64_unchecked(out: &mut Room, v: i64) {
        // SAFETY: the caller's duty.
        unsafe { put_word(out, (v as u64).swap_bytes(), 8) }
    }

    #[inline(always)]
    unsafe fn double_unchecked(out: &mut Room, v: f64) {
        // SAFETY: the caller's duty.
        unsafe { put_word(out, v.to_bits().swap_bytes(), 8) }
    }

    #[inline(always)]
    unsafe fn binary_unchecked(out: &mut Room, v: &[u8]) {
        // SAFETY: the caller's duty: twelve bytes for the length, then `v.len()`.
        unsafe {
            put_word(out, u64::from((v.len() as u32).swap_bytes()), 4);
            out.put(v);
        }
    }

    #[inline]
    fn field_begin(out: &mut Vec<u8>, code: u8, id: i16, _: &mut i16) {
        out.push(code);
        out.extend_from_slice(&id.to_be_bytes());
    }

    #[inline]
    fn field_bool(out: &mut Vec<u8>, id: i16, value: bool, last: &mut i16) {
        Self::field_begin(out, code::BOOL, id, last);
        out.push(u8::from(value));
    }

    #[inline]
    fn bool(out: &mut Vec<u8>, v: bool) {
        out.push(u8::from(v));
    }

    #[inline]
    fn i16(out: &mut Vec<u8>, v: i16) {
        out.extend_from_slice(&v.to_be_bytes());
    }

    #[inline]
    fn i32(out: &mut Vec<u8>, v: i32) {
        out.extend_from_slice(&v.to_be_bytes());
    }

    #[inline]
    fn i64(out: &mut Vec<u8>, v: i64) {
        out.extend_from_slice(&v.to_be_bytes());
    }

    #[inline]
    fn double(out: &mut Vec<u8>, v: f64) {
        out.extend_from_slice(&v.to_bits().to_be_bytes());
    }

    #[inline]
    fn binary(out: &mut Vec<u8>, v: &[u8]) {
        out.extend_from_slice(&(v.len() as i32).to_be_bytes());
        out.extend_from_slice(v);
    }

    #[inline]
    fn list_begin(out: &mut Vec<u8>, code: u8, size: usize) {
        out.push(code);
        out.extend_from_slice(&(size as i32).to_be_bytes());
    }

    #[inline]
    fn map_begin(out: &mut Vec<u8>, key: u8, value: u8, size: usize) {
        out.push(key);
        out.push(value);
        out.extend_from_slice(&(size as i32).to_be_bytes());
    }
}

/// TCompactProtocol type codes.
mod ct {
    pub const TRUE: u8 = 1;
    pub const FALSE: u8 = 2;
    pub const BYTE: u8 = 3;
    pub const I16: u8 = 4;
    pub const I32: u8 = 5;
    pub const I64: u8 = 6;
    pub const DOUBLE: u8 = 7;
    pub const BINARY: u8 = 8;
    pub const LIST: u8 = 9;
    pub const SET: u8 = 10;
    pub const MAP: u8 = 11;
    pub const STRUCT: u8 = 12;
}

/// The compact code of a binary type code (bool as `TRUE`, as Apache Thrift writes element
/// types).
#[inline]
const fn to_compact(code: u8) -> u8 {
    match code {
        code::BOOL => ct::TRUE,
        code::BYTE => ct::BYTE,
        code::I16 => ct::I16,
        code::I32 => ct::I32,
        code::I64 => ct::I64,
        code::DOUBLE => ct::DOUBLE,
        code::STRING => ct::BINARY,
        code::LIST => ct::LIST,
        code::SET => ct::SET,
        code::MAP => ct::MAP,
        _ => ct::STRUCT,
    }
}

/// The binary code of a compact type code, if it names one.
#[inline]
fn from_compact(c: u8, at: usize) -> R<u8> {
    Ok(match c {
        ct::TRUE | ct::FALSE => code::BOOL,
        ct::BYTE => code::BYTE,
        ct::I16 => code::I16,
        ct::I32 => code::I32,
        ct::I64 => code::I64,
        ct::DOUBLE => code::DOUBLE,
        ct::BINARY => code::STRING,
        ct::LIST => code::LIST,
        ct::SET => code::SET,
        ct::MAP => code::MAP,
        ct::STRUCT => code::STRUCT,
        _ => return Err(fail(at, DecodeErrorKind::InvalidThriftType(c))),
    })
}

#[inline]
fn zigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// TCompactProtocol: zigzag varints, field id deltas in the type byte, little-endian doubles.
#[derive(Clone, Copy)]
pub(crate) struct CompactReader<'a> {
    pub c: Cursor<'a>,
    /// The value of the bool field whose header was just read.
    pub pending_bool: Option<bool>,
}

impl<'a> Reader<'a> for CompactReader<'a> {
    #[inline(always)]
    fn pos(&self) -> usize {
        self.c.pos
    }

    #[inline(always)]
    fn field_begin(&mut self, last_id: &mut i16) -> R<Option<(u8, i16)>> {
        let at = self.c.pos;
        let b = self.c.u8()?;
        if b == 0 {
            return Ok(None);
        }
        let c = b & 0x0f;
        let delta = b >> 4;
        let id = if delta != 0 {
            last_id.wrapping_add(i16::from(delta))
        } else {
            zigzag(self.c.varint()?) as i16
        };
        *last_id = id;
        let t = from_compact(c, at)?;
        if t == code::BOOL {
            self.pending_bool = Some(c == ct::TRUE);
        }
        Ok(Some((t, id)))
    }

    #[inline(always)]
    fn bool(&mut self) -> R<bool> {
        match self.pending_bool.take() {
            Some(v) => Ok(v),
            None => Ok(self.c.u8()? == ct::TRUE),
        }
    }

    #[inline(always)]
    fn byte(&mut self) -> R<i8> {
        Ok(self.c.u8()? as i8)
    }

    #[inline(always)]
    fn i16(&mut self) -> R<i16> {
        Ok(zigzag(self.c.varint()?) as i16)
    }

    #[inline(always)]
    fn i32(&mut self) -> R<i32> {
        Ok(zigzag(self.c.varint()?) as i32)
    }

    #[inline(always)]
    fn i64(&mut self) -> R<i64> {
        Ok(zigzag(self.c.varint()?))
    }

    #[inline(always)]
    fn double(&mut self) -> R<f64> {
        Ok(f64::from_bits(u64::from_le_bytes(self.c.array()?)))
    }

    #[inline(always)]
    fn binary(&mut self) -> R<&'a [u8]> {
        let at = self.c.pos;
        let n = self.c.varint()?;
        let n = self.c.size(at, i64::try_from(n).unwrap_or(i64::MAX), 1)?;
        self.c.take(n)
    }

    #[inline(always)]
    fn list_begin(&mut self) -> R<(u8, usize)> {
        let at = self.c.pos;
        let b = self.c.u8()?;
        let mut n = u64::from(b >> 4);
        if n == 15 {
            n = self.c.varint()?;
        }
        let t = from_compact(b & 0x0f, at)?;
        Ok((t, self.c.size(at, i64::try_from(n).unwrap_or(i64::MAX), 1)?))
    }

    #[inline(always)]
    fn map_begin(&mut self) -> R<(u8, u8, usize)> {
        let at = self.c.pos;
        let n = self.c.varint()?;
        if n == 0 {
            return Ok((0, 0, 0));
        }
        let kv = self.c.u8()?;
        let k = from_compact(kv >> 4, at)?;
        let v = from_compact(kv & 0x0f, at)?;
        Ok((
            k,
            v,
            self.c.size(at, i64::try_from(n).unwrap_or(i64::MAX), 2)?,
        ))
    }
}

/// TCompactProtocol's writer.
pub(crate) struct CompactWriter;

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl CompactWriter {
    #[inline]
    fn header(out: &mut Vec<u8>, c: u8, id: i16, last: &mut i16) {
        let delta = i32::from(id) - i32::from(*last);
        if id > *last && delta <= 15 {
            out.push((delta as u8) << 4 | c);
        } else {
            out.push(c);
            put_varint(
                out,
                u64::from(((i32::from(id) << 1) ^ (i32::from(id) >> 31)) as u32),
            );
        }
        *last = id;
    }
}

impl CompactWriter {
    /// A field header into reserved room.
    ///
    /// # Safety
    /// [`FIELD_ROOM`] bytes of spare capacity.
    #[inline(always)]
    unsafe fn header_unchecked(out: &mut Room, c: u8, id: i16, last: &mut i16) {
        let prev = *last;
        let delta = i32::from(id) - i32::from(prev);
        *last = id;
        // SAFETY: the caller's duty: one byte, or one and a varint of at most three.
        unsafe {
            if id > prev && delta <= 15 {
                return put_word(out, u64::from((delta as u8) << 4 | c), 1);
            }
            put_word(out, u64::from(c), 1);
            put_varint_unchecked(
                out,
                u64::from(((i32::from(id) << 1) ^ (i32::from(id) >> 31)) as u32),
            );
        }
    }
}

impl Writer for CompactWriter {
    #[inline(always)]
    unsafe fn field_begin_unchecked(out: &mut Room, code: u8, id: i16, last: &mut i16) {
        // SAFETY: the caller's duty.
        unsafe { Self::header_unchecked(out, to_compact(code), id, last) }
    }

    #[inline(always)]
    unsafe fn field_bool_unchecked(out: &mut Room, _: u32, id: i16, value: bool, last: &mut i16) {
        let c = if value { ct::TRUE } else { ct::FALSE };
        // SAFETY: the caller's duty.
        unsafe { Self::header_unchecked(out, c, id, last) }
    }

    #[inline(always)]
    unsafe fn int_unchecked(out: &mut Room, code: u8, v: i32) {
        // SAFETY: the caller's duty (a zigzag i32 takes at most five bytes).
        unsafe {
            match code {
                code::BYTE => put_word(out, u64::from(v as u8), 1),
                _ => put_varint_unchecked(out, u64::from(((v << 1) ^ (v >> 31)) as u32)),
            }
        }
    }

    #[inline(always)]
    unsafe fn i64_unchecked(out: &mut Room, v: i64) {
        // SAFETY: the caller's duty.
        unsafe { put_varint_unchecked(out, ((v << 1) ^ (v >> 63)) as u64) }
    }

    #[inline(always)]
    unsafe fn double_unchecked(out: &mut Room, v: f64) {
        // SAFETY: the caller's duty.
        unsafe { put_word(out, v.to_bits(), 8) }
    }

    #[inline(always)]
    unsafe fn binary_unchecked(out: &mut Room, v: &[u8]) {
        // SAFETY: the caller's duty: a length varint of at most five bytes, then `v.len()`.
        unsafe {
            put_varint_unchecked(out, v.len() as u64);
            out.put(v);
        }
    }

    #[inline]
    fn field_begin(out: &mut Vec<u8>, code: u8, id: i16, last: &mut i16) {
        Self::header(out, to_compact(code), id, last);
    }

    #[inline]
    fn field_bool(out: &mut Vec<u8>, id: i16, value: bool, last: &mut i16) {
        Self::header(out, if value { ct::TRUE } else { ct::FALSE }, id, last);
    }

    #[inline]
    fn bool(out: &mut Vec<u8>, v: bool) {
        out.push(if v { ct::TRUE } else { ct::FALSE });
    }

    #[inline]
    fn i16(out: &mut Vec<u8>, v: i16) {
        Self::i32(out, i32::from(v));
    }

    #[inline]
    fn i32(out: &mut Vec<u8>, v: i32) {
        put_varint(out, u64::from(((v << 1) ^ (v >> 31)) as u32));
    }

    #[inline]
    fn i64(out: &mut Vec<u8>, v: i64) {
        put_varint(out, ((v << 1) ^ (v >> 63)) as u64);
    }

    #[inline]
    fn double(out: &mut Vec<u8>, v: f64) {
        out.extend_from_slice(&v.to_bits().to_le_bytes());
    }

    #[inline]
    fn binary(out: &mut Vec<u8>, v: &[u8]) {
        put_varint(out, v.len() as u64);
        out.extend_from_slice(v);
    }

    #[inline]
    fn list_begin(out: &mut Vec<u8>, code: u8, size: usize) {
        let c = to_compact(code);
        if size < 15 {
            out.push((size as u8) << 4 | c);
        } else {
            out.push(0xf0 | c);
            put_varint(out, size as u64);
        }
    }

    #[inline]
    fn map_begin(out: &mut Vec<u8>, key: u8, value: u8, size: usize) {
        if size == 0 {
            out.push(0);
        } else {
            put_varint(out, size as u64);
            out.push(to_compact(key) << 4 | to_compact(value));
        }
    }
}
