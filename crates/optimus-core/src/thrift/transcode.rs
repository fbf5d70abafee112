//! Thrift-to-Thrift transcoding without records: a struct read in one protocol is written in
//! the other as it is read, guided by the op table and the [`ThriftStruct`] as the decode
//! walker is, with no arena and no message tree.
//!
//! The output is exactly what decoding into a record and encoding it would give: unknown and
//! mistyped fields are dropped, required fields checked, strings checked to be UTF-8. Where
//! the record path would change more than the framing — fields out of id order or repeated
//! (it writes each once, by id), a set holding a value twice (it keeps one), a struct with
//! more than 64 fields and a required one — and on any error, [`transcode`] takes the record
//! path instead, so its bytes and errors are the record path's. (It charges no memory
//! budget: it allocates nothing but the output and, for a set, its values seen.)

use std::collections::HashSet;

use optimus_schema::thrift::{TType, ThriftStruct};
use optimus_schema::{Entry, MessageId, MessageType, SchemaSet, Table};

use super::decode::facts;
use super::protocol::{
    code, BinaryReader, BinaryWriter, CompactReader, CompactWriter, Cursor, Reader, Room, Writer,
    FIELD_ROOM,
};
use super::Protocol;
use crate::binary::DecodeOptions;
use crate::record::Arena;
use crate::Error;

/// Why the direct path stops: the record path decides (an error, or a change beyond framing).
struct Stop;

type R<T> = Result<T, Stop>;

struct Transcoder<'s, 'o, P, W> {
    schema: &'s SchemaSet,
    p: P,
    out: &'o mut Vec<u8>,
    depth_limit: u32,
    _w: std::marker::PhantomData<W>,
}

impl<'a, P: Reader<'a>, W: Writer> Transcoder<'_, '_, P, W> {
    fn deeper(&self, depth: u32) -> R<u32> {
        if depth >= self.depth_limit {
            return Err(Stop);
        }
        Ok(depth + 1)
    }

    /// Transcodes a struct of type `id` up to its stop byte.
    fn t_struct(&mut self, id: u32, depth: u32) -> R<()> {
        // The reader is a local while the fields are read, as in the decoder: in `self`, every
        // write to the output would send its position through memory. A call that reads
        // through `self` gets it back around the call ([`Transcoder::settled`]).
        let mut p = self.p;
        let result = self.t_fields(&mut p, id, depth);
        self.p = p;
        result
    }

    /// Runs `f` with the local reader `p` given back to `self`, and takes it again after.
    #[inline(always)]
    fn settled<T>(&mut self, p: &mut P, f: impl FnOnce(&mut Self) -> T) -> T {
        self.p = *p;
        let result = f(self);
        *p = self.p;
        result
    }

    /// [`Transcoder::t_struct`]'s loop, reading through the local reader `p`.
    #[inline(always)]
    fn t_fields(&mut self, p: &mut P, id: u32, depth: u32) -> R<()> {
        let schema = self.schema;
        let ty = schema.message(MessageId(id));
        let t: &ThriftStruct = facts(ty).ok_or(Stop)?;
        // Checked whatever `check_required` says: the record path's encoder refuses a struct
        // without its required fields.
        let need_required = !ty.required_fields.is_empty();
        if need_required && ty.fields.len() > 64 {
            return Err(Stop);
        }
        let (mut last_in, mut last_out) = (0i16, 0i16);
        // The id of the field written last (below every id at first).
        let mut written = i32::MIN;
        let mut seen = 0u64;
        // The entry after the last one read: fields usually arrive in id order.
        let mut next = 0usize;
        // The output's end in locals while the struct's fields are written (see `Room`);
        // `self.out` takes it back around a struct or container and at the end.
        let mut room = Room::of(self.out);
        loop {
            // The expected field's whole header, where the framing has one to compare.
            let guessed = t
                .binary_headers
                .get(next)
                .is_some_and(|&h| p.take_header(h));
            let i = if guessed {
                next
            } else {
                let Some((wire, fid)) = p.field_begin(&mut last_in).map_err(|_| Stop)? else {
                    break;
                };
                let expected = ty.table.entries.get(next);
                let i = if fid > 0 && expected.is_some_and(|e| e.number == fid as u32) {
                    next
                } else {
                    let Some(i) = t.find(&ty.table, fid) else {
                        self.settled(p, |t| t.skip(wire, depth))?;
                        continue;
                    };
                    i
                };
                debug_assert!(i < t.fields.len());
                // SAFETY: `i` is an entry index (the one after the last, found there, or the
                // table's look-up), and a Thrift struct has its facts per entry.
                if wire != unsafe { t.fields.get_unchecked(i) }.ty.wire() {
                    self.settled(p, |t| t.skip(wire, depth))?;
                    continue;
                }
                i
            };
            next = i + 1;
            debug_assert!(i < t.fields.len() && i < ty.table.entries.len());
            // SAFETY: as above, and a header taken whole is entry `next`'s, its type and id
            // the field's.
            let (tf, e) = unsafe { (t.fields.get_unchecked(i), ty.table.entries.get_unchecked(i)) };
            let fid = tf.id;
            if i32::from(fid) <= written {
                return Err(Stop); // out of id order, or a repeat: the record path reorders
            }
            written = i32::from(fid);
            if i < 64 {
                seen |= 1 << i;
            }
            if tf.ty.is_container() || tf.ty == TType::Struct {
                room.settle(self.out);
                W::field_begin(self.out, tf.ty.wire(), fid, &mut last_out);
                if tf.ty.is_container() {
                    self.settled(p, |t| t.t_container(ty, i, depth))?;
                } else {
                    let (sub, depth) = (ty.table.sub_message(e), self.deeper(depth)?);
                    self.settled(p, |t| t.t_struct(sub, depth))?;
                }
                room = Room::of(self.out);
                continue;
            }
            // SAFETY: `i` is an entry index, and a Thrift struct has a header per entry.
            let header = unsafe { *t.binary_headers.get_unchecked(i) };
            self.t_scalar_field(p, &mut room, tf.ty, fid, header, &mut last_out)?;
        }
        room.settle(self.out);
        if need_required && ty.required_fields.iter().any(|&r| seen & 1 << r == 0) {
            return Err(Stop);
        }
        W::field_stop(self.out);
        Ok(())
    }

    /// Reads one bool, scalar, string or binary value of type `tt` and writes it whole as
    /// field `fid` (its TBinaryProtocol header `header`) through `room` (the room after
    /// `self.out`'s bytes), into room reserved once.
    #[inline(always)]
    fn t_scalar_field(
        &mut self,
        p: &mut P,
        room: &mut Room,
        tt: TType,
        fid: i16,
        header: u32,
        last_out: &mut i16,
    ) -> R<()> {
        room.reserve(self.out, FIELD_ROOM);
        let out = room;
        // SAFETY: FIELD_ROOM bytes are reserved for the header and a scalar value; a string's
        // bytes are reserved with them before its header is written. Each arm names its type
        // code, a constant the writer's code for it folds into.
        unsafe {
            match tt {
                TType::Bool => {
                    let v = p.bool().map_err(|_| Stop)?;
                    W::field_bool_unchecked(out, header, fid, v, last_out);
                }
                TType::Byte => {
                    let v = i32::from(p.byte().map_err(|_| Stop)?);
                    W::field_header_unchecked(out, header, code::BYTE, fid, last_out);
                    W::int_unchecked(out, code::BYTE, v);
                }
                TType::I16 => {
                    let v = i32::from(p.i16().map_err(|_| Stop)?);
                    W::field_header_unchecked(out, header, code::I16, fid, last_out);
                    W::int_unchecked(out, code::I16, v);
                }
                TType::I32 | TType::Enum => {
                    let v = p.i32().map_err(|_| Stop)?;
                    W::field_header_unchecked(out, header, code::I32, fid, last_out);
                    W::int_unchecked(out, code::I32, v);
                }
                TType::I64 => {
                    let v = p.i64().map_err(|_| Stop)?;
                    W::field_header_unchecked(out, header, code::I64, fid, last_out);
                    W::i64_unchecked(out, v);
                }
                TType::Double => {
                    let v = p.double().map_err(|_| Stop)?;
                    W::field_header_unchecked(out, header, code::DOUBLE, fid, last_out);
                    W::double_unchecked(out, v);
                }
                _ => {
                    let bytes = p.binary().map_err(|_| Stop)?;
                    if tt == TType::String && !crate::engine::is_utf8(bytes) {
                        return Err(Stop);
                    }
                    out.reserve(self.out, bytes.len() + FIELD_ROOM);
                    W::field_header_unchecked(out, header, code::STRING, fid, last_out);
                    W::binary_unchecked(out, bytes);
                }
            }
        }
        Ok(())
    }

    fn t_container(&mut self, ty: &MessageType, i: usize, depth: u32) -> R<()> {
        let depth = self.deeper(depth)?;
        let tf = &facts(ty).ok_or(Stop)?.fields[i];
        let e = &ty.table.entries[i];
        if tf.ty == TType::Map {
            let (kw, vw, n) = self.p.map_begin().map_err(|_| Stop)?;
            if n > 0 && (kw != tf.key.wire() || vw != tf.value.wire()) {
                return Err(Stop);
            }
            let et = self.schema.message(MessageId(ty.table.sub_message(e)));
            let ett = facts(et).ok_or(Stop)?;
            W::map_begin(self.out, tf.key.wire(), tf.value.wire(), n);
            for _ in 0..n {
                for part in 0..2 {
                    self.t_value(
                        ett.fields[part].ty,
                        &et.table,
                        &et.table.entries[part],
                        depth,
                    )?;
                }
            }
            return Ok(());
        }
        let (ew, n) = self.p.list_begin().map_err(|_| Stop)?;
        if n > 0 && ew != tf.elem.wire() {
            return Err(Stop);
        }
        W::list_begin(self.out, tf.elem.wire(), n);
        let is_set = tf.ty == TType::Set
            && n > 1
            && !matches!(
                tf.elem,
                TType::Struct | TType::List | TType::Set | TType::Map
            );
        let mut values: HashSet<Vec<u8>> = HashSet::new();
        for _ in 0..n {
            let start = self.out.len();
            self.t_value(tf.elem, &ty.table, e, depth)?;
            // The written form is canonical, so equal values have equal bytes.
            if is_set && !values.insert(self.out[start..].to_vec()) {
                return Err(Stop); // a value twice: the record path keeps one
            }
        }
        Ok(())
    }

    fn t_value(&mut self, tt: TType, table: &Table, e: &Entry, depth: u32) -> R<()> {
        let p = &mut self.p;
        match tt {
            TType::Bool => W::bool(self.out, p.bool().map_err(|_| Stop)?),
            TType::Byte => W::byte(self.out, p.byte().map_err(|_| Stop)?),
            TType::I16 => W::i16(self.out, p.i16().map_err(|_| Stop)?),
            TType::I32 | TType::Enum => W::i32(self.out, p.i32().map_err(|_| Stop)?),
            TType::I64 => W::i64(self.out, p.i64().map_err(|_| Stop)?),
            TType::Double => W::double(self.out, p.double().map_err(|_| Stop)?),
            TType::String | TType::Binary => {
                let bytes = p.binary().map_err(|_| Stop)?;
                if tt == TType::String && !crate::engine::is_utf8(bytes) {
                    return Err(Stop);
                }
                W::binary(self.out, bytes);
            }
            TType::Struct => {
                let depth = self.deeper(depth)?;
                self.t_struct(table.sub_message(e), depth)?;
            }
            TType::List | TType::Set | TType::Map => {
                let wty = self.schema.message(MessageId(table.sub_message(e)));
                self.t_container(wty, 0, depth)?;
            }
        }
        Ok(())
    }

    fn skip(&mut self, wire: u8, depth: u32) -> R<()> {
        let p = &mut self.p;
        let read = match wire {
            code::BOOL => p.bool().map(drop),
            code::BYTE => p.byte().map(drop),
            code::DOUBLE => p.double().map(drop),
            code::I16 => p.i16().map(drop),
            code::I32 => p.i32().map(drop),
            code::I64 => p.i64().map(drop),
            code::STRING => p.binary().map(drop),
            _ => return self.skip_nested(wire, depth),
        };
        read.map_err(|_| Stop)
    }

    fn skip_nested(&mut self, wire: u8, depth: u32) -> R<()> {
        match wire {
            code::STRUCT => {
                let depth = self.deeper(depth)?;
                let mut last = 0i16;
                while let Some((w, _)) = self.p.field_begin(&mut last).map_err(|_| Stop)? {
                    self.skip(w, depth)?;
                }
                Ok(())
            }
            code::MAP => {
                let depth = self.deeper(depth)?;
                let (k, v, n) = self.p.map_begin().map_err(|_| Stop)?;
                for _ in 0..n {
                    self.skip(k, depth)?;
                    self.skip(v, depth)?;
                }
                Ok(())
            }
            code::SET | code::LIST => {
                let depth = self.deeper(depth)?;
                let (t, n) = self.p.list_begin().map_err(|_| Stop)?;
                for _ in 0..n {
                    self.skip(t, depth)?;
                }
                Ok(())
            }
            _ => Err(Stop),
        }
    }
}

/// Converts one struct of type `id` from `from` to `to`, appending to `out`: the same bytes
/// (or error) as [`super::decode`] then [`super::encode`], mostly without either.
///
/// # Errors
/// As [`super::decode`] and [`super::encode`].
pub fn transcode(
    schema: &SchemaSet,
    id: MessageId,
    input: &[u8],
    from: Protocol,
    to: Protocol,
    opts: &DecodeOptions,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    super::check_thrift(schema, id)?;
    let start = out.len();
    let c = Cursor { buf: input, pos: 0 };
    macro_rules! go {
        ($p:expr, $w:ty) => {{
            let mut t = Transcoder::<_, $w> {
                schema,
                p: $p,
                out: &mut *out,
                depth_limit: opts.depth_limit,
                _w: std::marker::PhantomData,
            };
            t.t_struct(id.0, 0).and_then(|()| {
                if t.p.pos() == input.len() {
                    Ok(())
                } else {
                    Err(Stop)
                }
            })
        }};
    }
    let direct = match (from, to) {
        (Protocol::Binary, Protocol::Binary) => go!(BinaryReader { c }, BinaryWriter),
        (Protocol::Binary, Protocol::Compact) => go!(BinaryReader { c }, CompactWriter),
        (Protocol::Compact, Protocol::Binary) => go!(
            CompactReader {
                c,
                pending_bool: None
            },
            BinaryWriter
        ),
        (Protocol::Compact, Protocol::Compact) => go!(
            CompactReader {
                c,
                pending_bool: None
            },
            CompactWriter
        ),
    };
    if direct.is_ok() {
        return Ok(());
    }
    out.truncate(start);
    let arena = Arena::new();
    let rec = super::decode(schema, id, input, &arena, from, opts)?;
    super::encode(rec, to, out)
}
