//! Thrift over arena records: TBinaryProtocol and TCompactProtocol decode and encode, and
//! JSON for Thrift messages, and the message envelopes of RPC calls and replies.
//!
//! A Thrift schema ([`SchemaSet::from_thrift_files`]) compiles to the same op tables and
//! record layouts as a `.proto` one, so a Thrift message is a [`Record`] like any other: the
//! protobuf walkers, the setters and the reflective view work on it, and one decode walker
//! and one encode walker serve both Thrift protocols, generic over their framing
//! (`protocol`). Output is byte-identical to Apache Thrift's generated code: fields by id,
//! only set ones, containers in their stored order.
//!
//! [`SchemaSet::from_thrift_files`]: optimus_schema::SchemaSet::from_thrift_files

mod decode;
mod encode;
mod json;
mod message;
mod protocol;
mod transcode;

use optimus_schema::{MessageId, SchemaSet};

pub use json::{decode_json, encode_json};
pub use message::{
    message_struct, read_message_header, write_message_header, MessageHeader, MessageKind,
};
pub use transcode::transcode;

use crate::binary::DecodeOptions;
use crate::binary::Fail;
use crate::error::DecodeErrorKind;
use crate::record::{read_le, Arena, RecPtr, Seq, View};
use crate::view::Record;
use crate::Error;
use optimus_schema::thrift::TType;
use protocol::{BinaryReader, BinaryWriter, CompactReader, CompactWriter, Cursor};

/// A Thrift wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// TBinaryProtocol: big-endian fixed-width integers (strict: a message envelope, which
    /// struct serialization does not write, would carry the version).
    Binary,
    /// TCompactProtocol: zigzag varints and field id deltas.
    Compact,
}

/// Decodes one struct of type `id` from `input` into `arena`; strings and binaries are views
/// of `input`.
///
/// # Errors
/// [`Error::Decode`] with field path and byte offset: truncated or malformed input, a
/// container whose element type is not the declared one, invalid UTF-8 in a string, nesting
/// deeper than `opts.depth_limit`, more memory than the budget, a missing `required` field
/// (with `opts.check_required`), or bytes after the struct; [`Error::Encode`] when `id` is not
/// a type of a Thrift schema.
pub fn decode<'a>(
    schema: &'a SchemaSet,
    id: MessageId,
    input: &'a [u8],
    arena: &'a Arena,
    protocol: Protocol,
    opts: &DecodeOptions,
) -> Result<Record<'a>, Error> {
    decode_into::<false>(schema, id, input, arena, protocol, opts)
        .map(|rec| Record::new(schema, id, rec))
}

/// Decodes like [`decode`], copying strings and binaries into the arena so the record does
/// not borrow `input`.
///
/// # Errors
/// As [`decode`].
pub fn decode_copied<'a>(
    schema: &'a SchemaSet,
    id: MessageId,
    input: &[u8],
    arena: &'a Arena,
    protocol: Protocol,
    opts: &DecodeOptions,
) -> Result<Record<'a>, Error> {
    decode_into::<true>(schema, id, input, arena, protocol, opts)
        .map(|rec| Record::new(schema, id, rec))
}

fn decode_into<const COPY: bool>(
    schema: &SchemaSet,
    id: MessageId,
    input: &[u8],
    arena: &Arena,
    protocol: Protocol,
    opts: &DecodeOptions,
) -> Result<RecPtr, Error> {
    check_thrift(schema, id)?;
    let budget = opts.memory_budget(input.len());
    let c = Cursor { buf: input, pos: 0 };
    let root = || schema.message(id).full_name.clone();
    let run = |r: Result<(RecPtr, usize), Fail>| -> Result<RecPtr, Error> {
        let (rec, pos) = r.map_err(|e| Error::Decode(e).within(root()))?;
        if pos != input.len() {
            return Err(Error::decode(pos, DecodeErrorKind::TrailingData).within(root()));
        }
        Ok(rec)
    };
    macro_rules! go {
        ($p:expr) => {{
            let mut d = decode::Decoder::<'_, '_, _, COPY> {
                schema,
                p: $p,
                arena,
                depth_limit: opts.depth_limit,
                budget,
                memory_limit: budget,
                check_required: opts.check_required,
            };
            run((|| {
                let rec = d.new_record(id.0)?;
                d.read_struct(rec, id.0, 0)?;
                Ok((rec, protocol::Reader::pos(&d.p)))
            })())
        }};
    }
    match protocol {
        Protocol::Binary => go!(BinaryReader { c }),
        Protocol::Compact => go!(CompactReader {
            c,
            pending_bool: None
        }),
    }
}

/// Appends `record` in `protocol` to `out`.
///
/// # Errors
/// [`Error::Encode`] naming the field when a `required` field is not set, or when the
/// record's type is not from a Thrift schema.
pub fn encode(record: Record<'_>, protocol: Protocol, out: &mut Vec<u8>) -> Result<(), Error> {
    let schema = record.schema();
    check_thrift(schema, record.type_id())?;
    let id = record.type_id().0;
    match protocol {
        Protocol::Binary => encode::Encoder::<BinaryWriter> {
            schema,
            out,
            _w: std::marker::PhantomData,
        }
        .write_struct(Some(record.ptr), id),
        Protocol::Compact => encode::Encoder::<CompactWriter> {
            schema,
            out,
            _w: std::marker::PhantomData,
        }
        .write_struct(Some(record.ptr), id),
    }
}

/// The values of sequence entry `i` (`e`) of `rec`, each `e`'s scalar width; none when the
/// record is null or the field unset.
///
/// # Safety
/// `e` is sequence entry `i` of `rec`'s table; the record lives for `'a`.
unsafe fn seq_values<'a>(rec: Option<RecPtr>, i: usize, e: &optimus_schema::Entry) -> &'a [u8] {
    match rec {
        // SAFETY: the caller's duty: `i` is an entry index and `e.offset` holds a sequence of
        // values of the scalar's width, written by the decoders or setters.
        Some(r) if unsafe { r.has(i) } => unsafe {
            r.read::<Seq>(e.offset).raw(e.op.scalar().width() as usize)
        },
        _ => &[],
    }
}

/// Drops the later copies of values that a set at `offset` of `rec` holds twice (sets of
/// scalars, strings and binaries; a set of structs or containers is kept as read), as Apache
/// Thrift's set types do. The set is written back onto a fresh array only when it had a
/// duplicate.
///
/// # Safety
/// `offset` holds a sequence of `elem` values in `rec`, which lives in `arena`; string and
/// binary views point at memory living as long as the record.
unsafe fn dedupe_set(rec: RecPtr, arena: &Arena, offset: u32, elem: TType) {
    if matches!(elem, TType::Struct | TType::List | TType::Set | TType::Map) {
        return;
    }
    let width = match elem {
        TType::Bool => 1,
        TType::I64 | TType::Double => 8,
        TType::String | TType::Binary => 16,
        _ => 4,
    };
    // SAFETY: the caller's duty.
    let raw = unsafe { rec.read::<Seq>(offset).raw(width) };
    if raw.len() <= width {
        return;
    }
    // SAFETY: the caller's duty: the views are of live memory.
    let key = |chunk| unsafe { set_key(chunk, width) };
    let mut seen = std::collections::HashSet::with_capacity(raw.len() / width);
    if raw.chunks_exact(width).all(|c| seen.insert(key(c))) {
        return;
    }
    seen.clear();
    // SAFETY: an all-zero header is an empty sequence; `raw` stays valid (the old array is
    // not freed or written), and each pushed chunk has the sequence's width.
    unsafe {
        rec.write(offset, [0u64; 2]);
        for c in raw.chunks_exact(width) {
            if seen.insert(key(c)) {
                rec.push(arena, offset, width, c);
            }
        }
    }
}

/// The bytes that identify a set element: a view's bytes, or the value's own.
///
/// # Safety
/// A 16-byte `chunk` is a view of memory living at least as long as `chunk`'s borrow.
#[inline]
unsafe fn set_key(chunk: &[u8], width: usize) -> &[u8] {
    if width == 16 {
        // SAFETY: the caller's duty.
        unsafe { read_le::<View>(chunk).bytes() }
    } else {
        chunk
    }
}

fn check_thrift(schema: &SchemaSet, id: MessageId) -> Result<(), Error> {
    let ty = schema.message(id);
    if ty.thrift.is_none() {
        return Err(Error::Encode {
            path: ty.full_name.clone(),
            why: "not a Thrift type: load the schema from .thrift files".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
