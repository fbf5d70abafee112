//! The protobuf binary wire format: decode (merge semantics, unknown fields kept) and
//! deterministic encode.

pub(crate) mod decode;
mod encode;
pub(crate) mod varint;

use optimus_schema::{Cardinality, Field, MessageId, SchemaSet};
use optimus_trace::{Direction, Event, Format, NoTrace, Recorder, Repetition, TraceSource, Tracer};

use crate::placement::{AccelLabels, Labelled};
use crate::{DecodeError, DecodeErrorKind, Error, Message, DEFAULT_DEPTH_LIMIT};

/// How the decoder's internals fail: a boxed error (one word, so results stay small on the
/// hot path), turned into [`Error::Decode`] at the public boundary.
pub(crate) type Fail = Box<DecodeError>;

/// A decode failure at byte `offset`.
#[cold]
#[inline(never)]
pub(crate) fn fail(offset: usize, kind: DecodeErrorKind) -> Fail {
    Box::new(DecodeError::new(offset, kind))
}

/// Prepends a field to the failure's path as it propagates out of that field.
#[cold]
#[inline(never)]
pub(crate) fn within(mut e: Fail, segment: &str) -> Fail {
    e.path.insert(0, segment.to_string());
    e
}

/// The path segment of a repeated field's element `i` (`[i]`).
#[cold]
pub(crate) fn element_segment(i: usize) -> String {
    format!("[{i}]")
}

/// The path segment of a map entry whose key `key` was read (`["key"]`, `[7]`, `[true]`);
/// `None` when the entry failed before its key.
#[cold]
pub(crate) fn key_segment(key: Option<crate::Value>) -> Option<String> {
    key?.into_map_key()
        .map(|k| crate::json::encode::key_segment(&k))
}

/// How `field`'s schema entry tells a trace its values are held and written.
pub(crate) fn repetition(field: &Field) -> Repetition {
    match field.cardinality {
        Cardinality::Singular | Cardinality::Optional => Repetition::Single,
        Cardinality::Repeated if field.is_packed => Repetition::Packed,
        Cardinality::Repeated | Cardinality::Map => Repetition::Repeated,
    }
}

/// Limits and checks applied while decoding.
#[derive(Debug, Clone)]
pub struct DecodeOptions {
    /// Deepest nesting of messages and groups accepted.
    pub depth_limit: u32,
    /// Fail when a proto2 `required` field is missing after decoding.
    pub check_required: bool,
    /// Most bytes of message records one decode may allocate; `None` allows
    /// [`MEMORY_BASE_BYTES`] plus [`MEMORY_BYTES_PER_INPUT_BYTE`] per input byte, so memory
    /// stays proportional to the input however many empty sub-messages it holds.
    pub memory_limit_bytes: Option<usize>,
}

/// Message memory every decode may use, whatever the input size.
pub const MEMORY_BASE_BYTES: usize = 16 << 20;
/// Message memory allowed per input byte beyond [`MEMORY_BASE_BYTES`].
pub const MEMORY_BYTES_PER_INPUT_BYTE: usize = 1024;

impl DecodeOptions {
    pub(crate) fn memory_budget(&self, input_len: usize) -> usize {
        self.memory_limit_bytes.unwrap_or_else(|| {
            MEMORY_BASE_BYTES.saturating_add(input_len.saturating_mul(MEMORY_BYTES_PER_INPUT_BYTE))
        })
    }
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            depth_limit: DEFAULT_DEPTH_LIMIT,
            check_required: true,
            memory_limit_bytes: None,
        }
    }
}

/// Decodes one message of type `id` from wire-format `bytes`.
///
/// # Errors
/// [`Error::Decode`] with the field path and byte offset when the bytes are malformed, nest
/// too deep, hold invalid UTF-8 in a string, or (with `check_required`) lack a required field.
pub fn decode(
    schema: &SchemaSet,
    id: MessageId,
    bytes: &[u8],
    opts: &DecodeOptions,
) -> Result<Message, Error> {
    let mut msg = Message::new(schema, id);
    merge(schema, &mut msg, bytes, opts)?;
    Ok(msg)
}

/// Merges wire-format `bytes` into `msg`: scalars are replaced (last one wins), sub-messages
/// merged, repeated fields appended.
///
/// # Errors
/// As [`decode`]; `msg` may hold part of the input when an error is returned.
pub fn merge(
    schema: &SchemaSet,
    msg: &mut Message,
    bytes: &[u8],
    opts: &DecodeOptions,
) -> Result<(), Error> {
    merge_traced(schema, msg, bytes, opts, &mut NoTrace)
}

/// Decodes one message like [`decode`], reporting to `tracer` every step an accelerator would
/// perform: schema entries read, wire bytes read, converter ops, fields written, nesting.
///
/// # Errors
/// As [`decode`].
pub fn decode_traced<T: Tracer>(
    schema: &SchemaSet,
    id: MessageId,
    bytes: &[u8],
    opts: &DecodeOptions,
    tracer: &mut T,
) -> Result<Message, Error> {
    let mut msg = Message::new(schema, id);
    tracer.message_begin(Direction::Decode, Format::Protobuf, id.0);
    merge_traced(schema, &mut msg, bytes, opts, tracer)?;
    tracer.message_end(bytes.len() as u64);
    Ok(msg)
}

/// Reports to `tracer` the events of one transformation of a protobuf message: decoding
/// `bytes` (`Direction::Decode`), or encoding the message they hold (`Direction::Encode`, the
/// decode itself untraced). The one entry point trace files and the simulator's workloads use.
///
/// # Errors
/// As [`decode`].
pub fn trace_message<T: Tracer>(
    schema: &SchemaSet,
    id: MessageId,
    bytes: &[u8],
    direction: Direction,
    opts: &DecodeOptions,
    tracer: &mut T,
) -> Result<(), Error> {
    match direction {
        Direction::Decode => {
            decode_traced(schema, id, bytes, opts, tracer)?;
        }
        Direction::Encode => {
            let msg = decode(schema, id, bytes, opts)?;
            let mut out = Vec::with_capacity(bytes.len());
            encode_traced(schema, &msg, &mut out, tracer);
        }
    }
    Ok(())
}

/// The engine as the timing models' trace source: compiles the workload's `.proto` and
/// records [`trace_message`] for each message, in order, with the requested fields'
/// data in accelerator memory ([`crate::placement`]).
pub struct EngineTraces;

impl TraceSource for EngineTraces {
    fn trace(
        &mut self,
        proto: &str,
        messages: &[(&str, &[u8])],
        direction: Direction,
        accel_fields: &[&str],
    ) -> Result<Vec<Event>, String> {
        let schema = SchemaSet::from_source(proto).map_err(|e| e.to_string())?;
        let labels = AccelLabels::resolve(&schema, accel_fields).map_err(|e| e.to_string())?;
        let opts = DecodeOptions::default();
        let mut rec = Labelled::new(&labels, Recorder::new());
        for (ty, bytes) in messages {
            let id = schema
                .message_by_name(ty)
                .ok_or_else(|| format!("no message type {ty}"))?;
            trace_message(&schema, id, bytes, direction, &opts, &mut rec)
                .map_err(|e| e.to_string())?;
        }
        Ok(rec.into_inner().events)
    }
}

fn merge_traced<T: Tracer>(
    schema: &SchemaSet,
    msg: &mut Message,
    bytes: &[u8],
    opts: &DecodeOptions,
    tracer: &mut T,
) -> Result<(), Error> {
    let mut decoder = decode::Decoder {
        schema,
        buf: bytes,
        opts,
        t: tracer,
        budget: opts.memory_budget(bytes.len()),
    };
    let root = schema.message(msg.type_id()).full_name.clone();
    let mut pos = 0;
    decoder
        .merge_message(msg, &mut pos, bytes.len(), 0, None)
        .map_err(|e| Error::Decode(e).within(root.clone()))?;
    if opts.check_required {
        if let Some(missing) = msg.missing_required(schema) {
            return Err(
                Error::decode(bytes.len(), DecodeErrorKind::MissingRequired(missing)).within(root),
            );
        }
    }
    Ok(())
}

/// Encodes `msg` deterministically (fields by number, map entries by key, unknown fields last).
pub fn encode(schema: &SchemaSet, msg: &Message) -> Vec<u8> {
    let mut out = Vec::new();
    encode::encode_into(schema, msg, &mut out, &mut NoTrace);
    out
}

/// Encodes `msg`, appending to `out`.
pub fn encode_to(schema: &SchemaSet, msg: &Message, out: &mut Vec<u8>) {
    encode::encode_into(schema, msg, out, &mut NoTrace);
}

/// Encodes `msg` like [`encode_to`], reporting to `tracer` every step an accelerator would
/// perform: schema entries read, field data read, converter ops, bytes written, nesting.
pub fn encode_traced<T: Tracer>(
    schema: &SchemaSet,
    msg: &Message,
    out: &mut Vec<u8>,
    tracer: &mut T,
) {
    encode::encode_into(schema, msg, out, tracer);
}

/// The number of bytes [`encode`] writes for `msg`.
pub fn encoded_len(schema: &SchemaSet, msg: &Message) -> usize {
    encode::encoded_len(schema, msg)
}

/// Reads a varint length prefix at the start of `bytes` (for delimited streams): returns the
/// length and the prefix size, or `None` when `bytes` is empty.
///
/// # Errors
/// A truncated or overlong prefix.
pub fn read_length_prefix(bytes: &[u8]) -> Result<Option<(u64, usize)>, Error> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let mut pos = 0;
    let len = varint::read_varint(bytes, &mut pos, bytes.len()).map_err(Error::Decode)?;
    Ok(Some((len, pos)))
}

/// Iterator over a stream of varint-length-delimited messages (`writeDelimitedTo` framing):
/// yields each message's bytes with their offset in the stream.
pub struct Delimited<'a> {
    stream: &'a [u8],
    pos: usize,
}

/// Splits `stream` into its varint-length-delimited messages.
pub fn delimited(stream: &[u8]) -> Delimited<'_> {
    Delimited { stream, pos: 0 }
}

impl<'a> Iterator for Delimited<'a> {
    /// `(offset of the message body, body)`, or the error that ends the stream.
    type Item = Result<(usize, &'a [u8]), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.stream.len() {
            return None;
        }
        let item = varint::read_length(self.stream, &mut self.pos, self.stream.len())
            .map_err(Error::Decode)
            .map(|end| {
                let start = self.pos;
                self.pos = end;
                (start, &self.stream[start..end])
            });
        if item.is_err() {
            // The framing is lost: nothing after a bad prefix can be trusted.
            self.pos = self.stream.len();
        }
        Some(item)
    }
}

/// Appends `len` as a varint length prefix.
pub fn write_length_prefix(out: &mut Vec<u8>, len: usize) {
    varint::write_varint(out, len as u64);
}

#[cfg(test)]
mod tests;
