//! `optimus trace`: record the accelerator events of encoding or decoding messages, as the
//! compact trace file that `optimus sim --trace` replays.

use std::io::{self, BufWriter, Read, Write};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::placement::{AccelLabels, Labelled};
use optimus_schema::{MessageId, SchemaSet};
use optimus_trace::{Direction, Format, Region, Repetition, TraceWriter, Tracer};

use crate::source::{find_type, SchemaSource};
use optimus_bench::embedded_workload;

/// Which transformation to trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Operation {
    /// Message → protobuf bytes (serialization).
    Encode,
    /// Protobuf bytes → message (deserialization).
    Decode,
}

/// Arguments of `optimus trace`.
#[derive(Args, Debug)]
pub struct TraceArgs {
    /// An embedded workload (flat, mixed, nested) instead of --proto/--type and stdin.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["proto", "descriptor_set", "type_name"])]
    workload: Option<String>,
    /// A .proto file to compile (repeatable).
    #[arg(long = "proto", value_name = "FILE")]
    proto: Vec<std::path::PathBuf>,
    /// An include directory for imports (repeatable).
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    include: Vec<std::path::PathBuf>,
    /// A FileDescriptorSet written by `protoc -o FILE --include_imports`.
    #[arg(long = "descriptor-set", value_name = "FILE", conflicts_with = "proto")]
    descriptor_set: Option<std::path::PathBuf>,
    /// Fully qualified message type of the input.
    #[arg(
        long = "type",
        value_name = "FULL.NAME",
        required_unless_present = "workload"
    )]
    type_name: Option<String>,
    /// The transformation to trace.
    #[arg(long, value_enum, default_value_t = Operation::Decode)]
    op: Operation,
    /// stdin holds varint-length-delimited protobuf messages rather than one message.
    #[arg(long)]
    delimited: bool,
    /// Trace each message this many times (a longer steady-state trace), at least once
    /// [default: 1].
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// RPCAcc's "Acc" label: record this field's data in accelerator memory (repeatable;
    /// `full.message.Name.field`, a string, bytes, repeated, map or message field).
    #[arg(long = "acc-field", value_name = "FIELD")]
    acc_field: Vec<String>,
}

/// Most bytes `optimus trace` reads from stdin: four times protobuf's default limit on one
/// message (64 MiB). The engine's memory while tracing grows with its input.
pub(crate) const MAX_INPUT_BYTES: u64 = 256 << 20;

/// Reads all of `input`, or fails naming `what` once it holds more than `limit` bytes, having
/// read no more than one byte past them.
///
/// # Errors
/// A read error, or input over `limit`.
pub(crate) fn read_at_most(input: impl Read, limit: u64, what: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    input
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {what}"))?;
    if bytes.len() as u64 > limit {
        anyhow::bail!("{what} is larger than the limit of {limit} bytes");
    }
    Ok(bytes)
}

/// Runs `optimus trace`: protobuf messages in (stdin or an embedded workload), trace file out,
/// written message by message.
pub fn run(args: TraceArgs) -> Result<()> {
    let (schema, id, messages): (SchemaSet, _, Vec<Vec<u8>>) = match &args.workload {
        Some(name) => {
            let (schema, id, bytes) = embedded_workload(name)?;
            (schema, id, vec![bytes])
        }
        None => {
            if args.proto.is_empty() && args.descriptor_set.is_none() {
                anyhow::bail!("--proto or --descriptor-set (or --workload) is required");
            }
            let source = SchemaSource {
                proto: args.proto.clone(),
                include: args.include.clone(),
                descriptor_set: args.descriptor_set.clone(),
                thrift: Vec::new(),
            };
            let schema = source.load()?;
            let id = find_type(&schema, args.type_name.as_deref().unwrap_or_default())?;
            let input = read_at_most(io::stdin().lock(), MAX_INPUT_BYTES, "stdin")?;
            let messages = if args.delimited {
                split_delimited(&input)?
            } else {
                vec![input]
            };
            (schema, id, messages)
        }
    };
    let labels = AccelLabels::resolve(&schema, &args.acc_field).context("trace")?;
    let opts = DecodeOptions::default();
    let direction = match args.op {
        Operation::Decode => Direction::Decode,
        Operation::Encode => Direction::Encode,
    };
    let mut writer = TraceWriter::new();
    let mut out = BufWriter::new(io::stdout().lock());
    let job = Job {
        schema: &schema,
        id,
        direction,
        opts: &opts,
        labels: &labels,
    };
    for _ in 0..args.repeat {
        for (i, bytes) in messages.iter().enumerate() {
            job.trace(bytes, &mut writer, &mut out)
                .with_context(|| format!("message {i}"))?;
        }
    }
    // The header, where no message was traced.
    writer.write_pending(&mut out)?;
    Ok(out.flush()?)
}

/// Pending trace bytes past which a message's trace is written out before the message ends,
/// so that one large message (say 32 MiB of packed bools) streams out in pieces.
const FLUSH_BYTES: usize = 1 << 20;

/// What every message of one `optimus trace` run is traced with.
struct Job<'a> {
    schema: &'a SchemaSet,
    id: MessageId,
    direction: Direction,
    opts: &'a DecodeOptions,
    labels: &'a AccelLabels,
}

impl Job<'_> {
    /// Traces one message into `writer`, writing the trace to `out` as it grows past
    /// [`FLUSH_BYTES`] and whole at the message's end. A message that does not decode is
    /// refused before any of its events are written, so the file never ends mid-message.
    fn trace(&self, bytes: &[u8], writer: &mut TraceWriter, out: &mut impl Write) -> Result<()> {
        if self.direction == Direction::Decode {
            // Encoding decodes the message before its first event; decoding checks it first
            // (the engine is deterministic, so the traced decode then succeeds too).
            binary::decode(self.schema, self.id, bytes, self.opts)?;
        }
        let mut streaming = Streaming {
            writer,
            out,
            error: None,
        };
        // The labels' state starts again at each message.
        let mut labelled = Labelled::new(self.labels, &mut streaming);
        binary::trace_message(
            self.schema,
            self.id,
            bytes,
            self.direction,
            self.opts,
            &mut labelled,
        )?;
        Ok(streaming.finish()?)
    }
}

/// A [`TraceWriter`] that writes its pending bytes to `out` whenever they pass
/// [`FLUSH_BYTES`]; the first write error is kept for [`Streaming::finish`].
struct Streaming<'a, W: Write> {
    writer: &'a mut TraceWriter,
    out: &'a mut W,
    error: Option<io::Error>,
}

impl<W: Write> Streaming<'_, W> {
    /// Writes the pending bytes out once they pass [`FLUSH_BYTES`] (none after an error).
    fn spill(&mut self) {
        if self.error.is_none() && self.writer.pending_len() >= FLUSH_BYTES {
            self.error = self.writer.write_pending(self.out).err();
        }
    }

    /// Writes out what is pending, or reports the first write error.
    fn finish(self) -> io::Result<()> {
        match self.error {
            Some(e) => Err(e),
            None => self.writer.write_pending(self.out),
        }
    }
}

impl<W: Write> Tracer for Streaming<'_, W> {
    const ENABLED: bool = true;
    fn message_begin(&mut self, direction: Direction, format: Format, type_id: u32) {
        self.writer.message_begin(direction, format, type_id);
    }
    fn message_end(&mut self, wire_bytes: u64) {
        self.writer.message_end(wire_bytes);
    }
    fn schema_read(&mut self, kind: u16, repetition: Repetition, addr: u64, size: u32) {
        self.writer.schema_read(kind, repetition, addr, size);
        self.spill();
    }
    fn field_read(&mut self, region: Region, addr: u64, bytes: u32) {
        self.writer.field_read(region, addr, bytes);
        self.spill();
    }
    fn field_write(&mut self, region: Region, addr: u64, bytes: u32) {
        self.writer.field_write(region, addr, bytes);
        self.spill();
    }
    fn convert(&mut self, op: u16, bytes: u32) {
        self.writer.convert(op, bytes);
        self.spill();
    }
    fn enter(&mut self, type_id: u32) {
        self.writer.enter(type_id);
        self.spill();
    }
    fn leave(&mut self) {
        self.writer.leave();
        self.spill();
    }
}

fn split_delimited(input: &[u8]) -> Result<Vec<Vec<u8>>> {
    binary::delimited(input)
        .map(|r| Ok(r?.1.to_vec()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink that keeps the size of each piece written to it, and the bytes.
    #[derive(Default)]
    struct Pieces {
        sizes: Vec<usize>,
        bytes: Vec<u8>,
    }

    impl Write for Pieces {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.sizes.push(buf.len());
            self.bytes.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A message of 400,000 packed bools (a trace of several MiB) followed by `tail`.
    fn packed_bools(tail: &[u8]) -> (SchemaSet, MessageId, Vec<u8>) {
        let schema =
            SchemaSet::from_source("syntax = \"proto3\"; message B { repeated bool b = 1; }")
                .unwrap();
        let id = schema.message_by_name("B").unwrap();
        let n = 400_000;
        let mut bytes = vec![10];
        binary::write_length_prefix(&mut bytes, n);
        bytes.resize(bytes.len() + n, 1);
        bytes.extend_from_slice(tail);
        (schema, id, bytes)
    }

    /// Traces decoding `bytes` into `out`: the result, and the writer's pending bytes before
    /// and after.
    fn trace_decoding(
        schema: &SchemaSet,
        id: MessageId,
        bytes: &[u8],
        out: &mut Pieces,
    ) -> (Result<()>, usize, usize) {
        let (labels, opts) = (AccelLabels::default(), DecodeOptions::default());
        let job = Job {
            schema,
            id,
            direction: Direction::Decode,
            opts: &opts,
            labels: &labels,
        };
        let mut writer = TraceWriter::new();
        let header = writer.pending_len();
        let result = job.trace(bytes, &mut writer, out);
        (result, header, writer.pending_len())
    }

    #[test]
    fn one_large_message_streams_out_in_bounded_pieces() {
        let (schema, id, bytes) = packed_bools(&[]);
        let mut out = Pieces::default();
        let (result, _, pending) = trace_decoding(&schema, id, &bytes, &mut out);
        result.unwrap();
        assert_eq!(pending, 0);
        assert!(out.bytes.len() > 3 * FLUSH_BYTES, "{}", out.bytes.len());
        let largest = out.sizes.iter().max().copied().unwrap();
        assert!(largest < FLUSH_BYTES + 64, "a piece of {largest} bytes");
        // The pieces make the same file as one trace held whole.
        let mut whole = optimus_trace::Recorder::new();
        let opts = DecodeOptions::default();
        binary::trace_message(&schema, id, &bytes, Direction::Decode, &opts, &mut whole).unwrap();
        let events = optimus_trace::decode(&out.bytes).unwrap();
        assert_eq!(events.len(), whole.events.len());
    }

    #[test]
    fn a_message_failing_past_the_flush_size_writes_none_of_its_trace() {
        // A truncated tag-2 varint after the bools: the decode fails after several MiB of
        // trace.
        let (schema, id, bytes) = packed_bools(&[0x10, 0x80]);
        let mut out = Pieces::default();
        let (result, header, pending) = trace_decoding(&schema, id, &bytes, &mut out);
        let err = result.unwrap_err();
        assert!(err.to_string().contains("at byte 400005"), "{err:#}");
        assert!(out.bytes.is_empty(), "{} bytes written", out.bytes.len());
        assert_eq!(pending, header);
    }
}
