//! Engine v2: protobuf binary and proto3 JSON over op tables and arena records.
//!
//! [`decode`] walks wire bytes into a [`Record`] in an [`Arena`] (strings and bytes viewed in
//! the input), [`decode_copied`] copies them into the arena instead, and [`encode`] walks a
//! record back to deterministic wire bytes (an [`Encoder`] does so in a buffer it keeps and
//! returns the bytes in place); [`decode_json`] and [`encode_json`] do the same
//! for proto3 JSON. Each is one walker over the type's op table (`optimus_schema::table`): per
//! field, a lookup that first tries the entry after the last one, then one `match` on the
//! entry's op. Decoding into a reset arena and encoding into a reused buffer allocate nothing
//! once both have grown to the largest message.

mod decode;
pub(crate) use decode::{clear_oneof_siblings, is_utf8};
mod encode;
mod json_read;
mod json_write;

/// The op codes of single fields, by scalar (a single field's op code is its scalar's), for
/// walkers that dispatch on the op code in one jump.
pub(crate) mod single {
    use optimus_schema::{Op, Scalar, Shape};

    const _: () = assert!(Op::new(Scalar::Sint64, Shape::Single).code() == SINT64);

    pub(crate) const DOUBLE: u8 = Scalar::Double as u8;
    pub(crate) const FLOAT: u8 = Scalar::Float as u8;
    pub(crate) const INT64: u8 = Scalar::Int64 as u8;
    pub(crate) const UINT64: u8 = Scalar::Uint64 as u8;
    pub(crate) const INT32: u8 = Scalar::Int32 as u8;
    pub(crate) const FIXED64: u8 = Scalar::Fixed64 as u8;
    pub(crate) const FIXED32: u8 = Scalar::Fixed32 as u8;
    pub(crate) const BOOL: u8 = Scalar::Bool as u8;
    pub(crate) const STRING: u8 = Scalar::String as u8;
    pub(crate) const GROUP: u8 = Scalar::Group as u8;
    pub(crate) const MESSAGE: u8 = Scalar::Message as u8;
    pub(crate) const BYTES: u8 = Scalar::Bytes as u8;
    pub(crate) const UINT32: u8 = Scalar::Uint32 as u8;
    pub(crate) const SFIXED32: u8 = Scalar::Sfixed32 as u8;
    pub(crate) const SFIXED64: u8 = Scalar::Sfixed64 as u8;
    pub(crate) const SINT32: u8 = Scalar::Sint32 as u8;
    pub(crate) const SINT64: u8 = Scalar::Sint64 as u8;
    pub(crate) const OPEN_ENUM: u8 = Scalar::OpenEnum as u8;
    pub(crate) const CLOSED_ENUM: u8 = Scalar::ClosedEnum as u8;
}

use std::cell::RefCell;

use optimus_schema::{MessageId, SchemaSet};

use crate::binary::DecodeOptions;
use crate::json::JsonOptions;
use crate::record::{Arena, RecPtr};
use crate::view::Record;
use crate::{DecodeErrorKind, Error};

/// Decodes one message of type `id` from `input` into `arena`; its strings and bytes are
/// views of `input`, which the borrow keeps alive as long as the record.
///
/// # Errors
/// [`Error::Decode`] with the field path and byte offset when the bytes are malformed, nest
/// deeper than `opts.depth_limit`, hold invalid UTF-8 in a string, would take more memory than
/// the budget, or (with `check_required`) lack a required field.
pub fn decode<'a>(
    schema: &'a SchemaSet,
    id: MessageId,
    input: &'a [u8],
    arena: &'a Arena,
    opts: &DecodeOptions,
) -> Result<Record<'a>, Error> {
    // The records view `input`: both borrows last for 'a, as long as the record.
    let rec = decode_into::<false>(schema, id, input, arena, opts)?;
    finish(schema, id, rec, input.len(), opts)
}

/// Decodes like [`decode`], copying strings and bytes into the arena so the record does not
/// borrow `input`.
///
/// # Errors
/// As [`decode`].
pub fn decode_copied<'a>(
    schema: &'a SchemaSet,
    id: MessageId,
    input: &[u8],
    arena: &'a Arena,
    opts: &DecodeOptions,
) -> Result<Record<'a>, Error> {
    // With COPY the decoder keeps no pointer into `input`.
    let rec = decode_into::<true>(schema, id, input, arena, opts)?;
    finish(schema, id, rec, input.len(), opts)
}

/// Decodes `input` into a new record in `arena`. Without `COPY` the record views `input`:
/// the public callers make the input outlive the record.
fn decode_into<const COPY: bool>(
    schema: &SchemaSet,
    id: MessageId,
    input: &[u8],
    arena: &Arena,
    opts: &DecodeOptions,
) -> Result<RecPtr, Error> {
    let budget = opts.memory_budget(input.len());
    let mut d = decode::Decoder::<'_, COPY> {
        schema,
        buf: input,
        arena,
        depth_limit: opts.depth_limit,
        budget,
        memory_limit: budget,
    };
    let root = || schema.message(id).full_name.clone();
    let ty = schema.message(id);
    let rec = d
        .new_record(ty, 0)
        .map_err(|e| Error::Decode(e).within(root()))?;
    let mut pos = 0;
    d.merge(rec, ty, &mut pos, input.len(), 0, None)
        .map_err(|e| Error::Decode(e).within(root()))?;
    Ok(rec)
}

fn finish<'a>(
    schema: &'a SchemaSet,
    id: MessageId,
    rec: RecPtr,
    len: usize,
    opts: &DecodeOptions,
) -> Result<Record<'a>, Error> {
    let record = Record::new(schema, id, rec);
    if opts.check_required && schema.message(id).may_lack_required {
        if let Some(missing) = missing_required(record) {
            return Err(
                Error::decode(len, DecodeErrorKind::MissingRequired(missing))
                    .within(schema.message(id).full_name.clone()),
            );
        }
    }
    Ok(record)
}

/// The path of the first required field that is not set, if any (recursively).
#[cold]
fn missing_required(record: Record<'_>) -> Option<String> {
    let schema = record.schema();
    let ty = schema.message(record.type_id());
    if !ty.may_lack_required {
        return None;
    }
    for &r in &ty.required_fields {
        if !record.has(r as usize) {
            return Some(format!("{}.{}", ty.full_name, ty.fields[r as usize].name));
        }
    }
    for index in record.set_fields() {
        if !ty.fields[index].kind.is_message() {
            continue;
        }
        let subs = record.get(index).into_iter().chain(record.elements(index));
        for v in subs {
            if let crate::FieldRef::Message(sub) = v {
                let found = if ty.fields[index].is_map() {
                    sub.get(1).and_then(|v| match v {
                        crate::FieldRef::Message(m) => missing_required(m),
                        _ => None,
                    })
                } else {
                    missing_required(sub)
                };
                if found.is_some() {
                    return found;
                }
            }
        }
    }
    None
}

/// A protobuf encoder that keeps its buffer from one message to the next: [`Encoder::encode`]
/// returns the bytes where they were written, so a steady stream of messages is encoded with
/// no copy and no allocation once the buffer has grown to the largest of them.
#[derive(Default)]
pub struct Encoder {
    back: encode::Back,
}

impl Encoder {
    /// An encoder with an empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Encodes `record` deterministically (fields by number, map entries by key, unknown
    /// fields last) and returns its bytes, valid until the next call.
    pub fn encode(&mut self, record: Record<'_>) -> &[u8] {
        self.back.clear();
        encode::message(
            record.schema(),
            record.ptr,
            record.type_id().0,
            &mut self.back,
        );
        self.back.bytes()
    }
}

thread_local! {
    /// Each thread's encoder, reused by every [`encode`] on it.
    static ENCODER: RefCell<Encoder> = RefCell::new(Encoder::new());
}

/// Encodes `record` deterministically (fields by number, map entries by key, unknown fields
/// last), appending to `out`.
pub fn encode(record: Record<'_>, out: &mut Vec<u8>) {
    ENCODER.with(|cell| {
        let mut encoder = cell.take();
        out.extend_from_slice(encoder.encode(record));
        cell.replace(encoder);
    });
}

/// The number of bytes [`encode`] writes for `record`.
pub fn encoded_len(record: Record<'_>) -> usize {
    ENCODER.with(|cell| {
        let mut encoder = cell.take();
        let len = encoder.encode(record).len();
        cell.replace(encoder);
        len
    })
}

/// Reads a message of type `id` from proto3 JSON `text` into `arena`; strings without
/// escapes are viewed in `text`. The same message as [`crate::json::decode`] reads.
///
/// # Errors
/// As [`crate::json::decode`]: the byte offset and field path of the first problem.
pub fn decode_json<'a>(
    schema: &'a SchemaSet,
    id: MessageId,
    text: &'a str,
    arena: &'a Arena,
    opts: &JsonOptions,
) -> Result<Record<'a>, Error> {
    let rec = Record::new_in(schema, id, arena);
    let mut d = crate::json::decode::Decoder::new(schema, text, opts);
    let mut target = json_read::RecordTarget::new(rec, arena);
    let read = if crate::json::wkt::special_form(schema, id).is_some() {
        // A well-known type at the root: its own form, through the reflective reader.
        let mut m = crate::Message::new(schema, id);
        d.read_message(&mut m).map(|()| {
            target.rec = Record::from_message(schema, &m, arena);
        })
    } else {
        target.read_message(&mut d)
    };
    read.and_then(|()| d.r.finish())
        .map_err(|e| e.within(schema.message(id).full_name.clone()))?;
    Ok(target.rec)
}

/// Writes `record` as compact proto3 JSON, appending to `out` (on error `out` holds a
/// partial document). The same text as [`crate::json::encode`] writes for the same message.
///
/// # Errors
/// As [`crate::json::encode`]: values JSON cannot represent, naming the field.
pub fn encode_json(record: Record<'_>, opts: &JsonOptions, out: &mut String) -> Result<(), Error> {
    let schema = record.schema();
    json_write::JsonWriter {
        schema,
        opts,
        out,
        depth: 0,
    }
    .message(record)
    .map_err(|e| {
        crate::json::encode::within(e, schema.message(record.type_id()).full_name.as_str())
    })
}

#[cfg(test)]
mod tests;
