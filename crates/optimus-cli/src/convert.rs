//! `optimus convert`: one message, or a delimited stream, from stdin to stdout.

use std::io::{self, BufWriter, Read, Write};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::json::{self, JsonOptions};
use optimus_core::Message;
use optimus_schema::{MessageId, SchemaSet};

use crate::source::{find_type, SchemaSource};

/// Wire formats `convert` reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Protobuf binary wire format.
    Protobuf,
    /// Proto3 JSON mapping.
    Json,
}

/// Arguments of `optimus convert`.
#[derive(Args, Debug)]
pub struct ConvertArgs {
    #[command(flatten)]
    source: SchemaSource,
    /// Fully qualified message type, e.g. `bench.Mixed`.
    #[arg(long = "type", value_name = "FULL.NAME")]
    type_name: String,
    /// Input format.
    #[arg(long, value_enum)]
    from: Format,
    /// Output format.
    #[arg(long, value_enum)]
    to: Format,
    /// A stream: varint-length-delimited protobuf messages, or one JSON document per line.
    #[arg(long)]
    delimited: bool,
    /// JSON output: also write fields that are unset (with their default values).
    #[arg(long)]
    emit_defaults: bool,
    /// JSON output: use the .proto field names instead of lowerCamelCase.
    #[arg(long)]
    proto_names: bool,
    /// JSON input: skip unknown fields and enum names instead of failing.
    #[arg(long)]
    ignore_unknown: bool,
    /// Deepest message nesting accepted on input [default: 100].
    #[arg(long, value_name = "N", default_value_t = optimus_core::DEFAULT_DEPTH_LIMIT,
          value_parser = clap::value_parser!(u32).range(1..))]
    depth_limit: u32,
}

struct Converter<'a> {
    schema: &'a SchemaSet,
    id: MessageId,
    args: &'a ConvertArgs,
    binary_opts: DecodeOptions,
    json_opts: JsonOptions,
}

impl Converter<'_> {
    fn decode(&self, input: &[u8]) -> Result<Message> {
        Ok(match self.args.from {
            Format::Protobuf => binary::decode(self.schema, self.id, input, &self.binary_opts)?,
            Format::Json => {
                let text = std::str::from_utf8(input).context("input is not UTF-8")?;
                json::decode(self.schema, self.id, text, &self.json_opts)?
            }
        })
    }

    fn encode(&self, msg: &Message, out: &mut Vec<u8>) -> Result<()> {
        match self.args.to {
            Format::Protobuf => {
                let body = binary::encode(self.schema, msg);
                if self.args.delimited {
                    binary::write_length_prefix(out, body.len());
                }
                out.extend_from_slice(&body);
            }
            Format::Json => {
                out.extend_from_slice(json::encode(self.schema, msg, &self.json_opts)?.as_bytes());
                out.push(b'\n');
            }
        }
        Ok(())
    }
}

/// Runs `optimus convert`.
pub fn run(args: ConvertArgs) -> Result<()> {
    let schema = args.source.load()?;
    let id = find_type(&schema, &args.type_name)?;
    let conv = Converter {
        schema: &schema,
        id,
        args: &args,
        binary_opts: DecodeOptions {
            depth_limit: args.depth_limit,
            ..DecodeOptions::default()
        },
        json_opts: JsonOptions {
            emit_defaults: args.emit_defaults,
            proto_names: args.proto_names,
            ignore_unknown: args.ignore_unknown,
            depth_limit: args.depth_limit,
        },
    };
    let mut input = Vec::new();
    io::stdin()
        .lock()
        .read_to_end(&mut input)
        .context("reading stdin")?;
    let mut out = BufWriter::new(io::stdout().lock());
    let mut buf = Vec::new();
    if !args.delimited {
        let msg = conv.decode(&input)?;
        conv.encode(&msg, &mut buf)?;
        out.write_all(&buf)?;
        return Ok(out.flush()?);
    }
    for (index, item) in split_stream(&input, args.from).enumerate() {
        let (offset, body) = item.with_context(|| format!("message {index}"))?;
        let msg = conv
            .decode(body)
            .with_context(|| format!("message {index} (stream byte {offset})"))?;
        buf.clear();
        conv.encode(&msg, &mut buf)?;
        out.write_all(&buf)?;
    }
    Ok(out.flush()?)
}

/// Splits a delimited stream into `(offset, message bytes)`.
fn split_stream(
    input: &[u8],
    format: Format,
) -> Box<dyn Iterator<Item = Result<(usize, &[u8])>> + '_> {
    match format {
        Format::Json => Box::new(
            input
                .split(|&b| b == b'\n')
                .scan(0usize, |offset, line| {
                    let at = *offset;
                    *offset += line.len() + 1;
                    Some((at, line))
                })
                .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
                .map(Ok),
        ),
        Format::Protobuf => {
            Box::new(binary::delimited(input).map(|r| r.map_err(anyhow::Error::from)))
        }
    }
}
