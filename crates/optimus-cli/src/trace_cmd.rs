//! `optimus trace`: record the accelerator events of encoding or decoding messages, as the
//! compact trace file that `optimus sim --trace` replays.

use std::io::{self, BufWriter, Read, Write};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::placement::{AccelLabels, Labelled};
use optimus_schema::SchemaSet;
use optimus_trace::{Direction, TraceWriter};

use crate::bench::embedded_workload;
use crate::source::{find_type, SchemaSource};

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
    for _ in 0..args.repeat {
        for (i, bytes) in messages.iter().enumerate() {
            // The labels' state starts again at each message.
            let mut labelled = Labelled::new(&labels, &mut writer);
            binary::trace_message(&schema, id, bytes, direction, &opts, &mut labelled)
                .with_context(|| format!("message {i}"))?;
            writer.write_pending(&mut out)?;
        }
    }
    // The header, where no message was traced.
    writer.write_pending(&mut out)?;
    Ok(out.flush()?)
}

fn split_delimited(input: &[u8]) -> Result<Vec<Vec<u8>>> {
    binary::delimited(input)
        .map(|r| Ok(r?.1.to_vec()))
        .collect()
}
