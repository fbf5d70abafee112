//! `optimus convert`: one message, or a delimited stream, from stdin to stdout, through arena
//! records (engine v2); to another schema (`--to-proto`, `--to-thrift`) and through converter
//! ops (`--map`, `--transform`) with a compiled [`Plan`].

use std::io::{self, BufWriter, Read, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::convert::{Plan, Program};
use optimus_core::json::JsonOptions;
use optimus_core::text::TextOptions;
use optimus_core::{engine, text, thrift, Arena, Record};
use optimus_schema::{MessageId, SchemaSet};

use crate::source::{find_type, SchemaSource};

/// Wire formats `convert` reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Protobuf binary wire format.
    Protobuf,
    /// Proto3 JSON mapping; for a Thrift schema, JSON for Thrift messages (docs/thrift.md).
    Json,
    /// Protobuf text format (as `protoc --decode` prints it).
    Text,
    /// Thrift's TBinaryProtocol (a struct, as Apache Thrift's TSerialization writes it).
    ThriftBinary,
    /// Thrift's TCompactProtocol.
    ThriftCompact,
}

impl Format {
    /// The Thrift protocol, for the Thrift formats.
    fn thrift(self) -> Option<thrift::Protocol> {
        match self {
            Format::ThriftBinary => Some(thrift::Protocol::Binary),
            Format::ThriftCompact => Some(thrift::Protocol::Compact),
            _ => None,
        }
    }
}

/// Arguments of `optimus convert`.
#[derive(Args, Debug)]
pub struct ConvertArgs {
    #[command(flatten)]
    source: SchemaSource,
    /// Fully qualified message type, e.g. `bench.Mixed`; for `--thrift`, the bare struct name
    /// (`Mixed`) or `program.Name`.
    #[arg(long = "type", value_name = "FULL.NAME")]
    type_name: String,
    /// Input format.
    #[arg(long, value_enum)]
    from: Format,
    /// Output format.
    #[arg(long, value_enum)]
    to: Format,
    /// A stream: varint-length-delimited binary messages (protobuf or Thrift), or one JSON
    /// document per line.
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
    /// Write messages of another schema: a .proto file (repeatable; imports through -I).
    #[arg(long = "to-proto", value_name = "FILE", conflicts_with = "to_thrift")]
    to_proto: Vec<PathBuf>,
    /// Write messages of another schema: a .thrift file (repeatable; includes through -I).
    #[arg(long = "to-thrift", value_name = "FILE")]
    to_thrift: Vec<PathBuf>,
    /// The target schema's message type [default: the --type's name].
    #[arg(long = "to-type", value_name = "NAME")]
    to_type: Option<String>,
    /// TOML file of source field path = target field path, for fields whose names differ
    /// (docs/convert.md); the others go to the field of the same name.
    #[arg(long, value_name = "FILE")]
    map: Option<PathBuf>,
    /// TOML file of converter ops per source field path: rename, drop, redact, hash, scale,
    /// enum, default (docs/convert.md).
    #[arg(long, value_name = "FILE")]
    transform: Option<PathBuf>,
}

struct Converter<'a> {
    schema: &'a SchemaSet,
    id: MessageId,
    args: &'a ConvertArgs,
    binary_opts: DecodeOptions,
    json_opts: JsonOptions,
    text_opts: TextOptions,
    /// The converter from the input's type to the output's, when the two differ or a program
    /// changes values.
    plan: Option<&'a Plan<'a>>,
}

impl<'s> Converter<'s> {
    /// Decodes one message into a record in `arena`, its strings viewed in `input` where the
    /// format allows.
    fn decode<'a>(&self, input: &'a [u8], arena: &'a Arena) -> Result<Record<'a>>
    where
        's: 'a,
    {
        Ok(match self.args.from {
            Format::Protobuf => {
                engine::decode(self.schema, self.id, input, arena, &self.binary_opts)?
            }
            Format::Json if self.schema.thrift().is_some() => {
                let text = std::str::from_utf8(input).context("input is not UTF-8")?;
                thrift::decode_json(self.schema, self.id, text, arena, &self.json_opts)?
            }
            Format::Json => {
                let text = std::str::from_utf8(input).context("input is not UTF-8")?;
                engine::decode_json(self.schema, self.id, text, arena, &self.json_opts)?
            }
            Format::Text => {
                let input = std::str::from_utf8(input).context("input is not UTF-8")?;
                text::decode(self.schema, self.id, input, arena, &self.text_opts)?
            }
            Format::ThriftBinary | Format::ThriftCompact => {
                let protocol = self.args.from.thrift().expect("a Thrift format");
                thrift::decode(
                    self.schema,
                    self.id,
                    input,
                    arena,
                    protocol,
                    &self.binary_opts,
                )?
            }
        })
    }

    /// Whether messages go from one Thrift protocol to another without records.
    fn is_direct(&self) -> bool {
        self.plan.is_none() && self.args.from.thrift().is_some() && self.args.to.thrift().is_some()
    }

    /// Decodes one message and converts it to the output's type.
    fn read<'a>(&self, input: &'a [u8], arena: &'a Arena) -> Result<Record<'a>>
    where
        's: 'a,
    {
        let record = self.decode(input, arena)?;
        Ok(match self.plan {
            Some(plan) => plan.apply(record, arena)?,
            None => record,
        })
    }

    /// Converts one message from `input`, appending it to `out`: Thrift to Thrift directly,
    /// anything else through a record in `arena`.
    fn convert<'a>(
        &self,
        input: &'a [u8],
        arena: &'a Arena,
        out: &mut Vec<u8>,
        body: &mut Vec<u8>,
    ) -> Result<()>
    where
        's: 'a,
    {
        if let (true, Some(from), Some(to)) = (
            self.is_direct(),
            self.args.from.thrift(),
            self.args.to.thrift(),
        ) {
            let direct = |out: &mut Vec<u8>| {
                thrift::transcode(
                    self.schema,
                    self.id,
                    input,
                    from,
                    to,
                    &self.binary_opts,
                    out,
                )
            };
            if self.args.delimited {
                body.clear();
                direct(body)?;
                binary::write_length_prefix(out, body.len());
                out.extend_from_slice(body);
            } else {
                direct(out)?;
            }
            return Ok(());
        }
        let record = self.read(input, arena)?;
        self.encode(record, out, body)
    }

    /// Appends `record` in the output format (`body` is scratch for a delimited message).
    fn encode(&self, record: Record<'_>, out: &mut Vec<u8>, body: &mut Vec<u8>) -> Result<()> {
        match self.args.to {
            Format::Protobuf if self.args.delimited => {
                body.clear();
                engine::encode(record, body);
                binary::write_length_prefix(out, body.len());
                out.extend_from_slice(body);
            }
            Format::Protobuf => engine::encode(record, out),
            Format::ThriftBinary | Format::ThriftCompact => {
                let protocol = self.args.to.thrift().expect("a Thrift format");
                if self.args.delimited {
                    body.clear();
                    thrift::encode(record, protocol, body)?;
                    binary::write_length_prefix(out, body.len());
                    out.extend_from_slice(body);
                } else {
                    thrift::encode(record, protocol, out)?;
                }
            }
            Format::Json if record.schema().thrift().is_some() => {
                let mut text = String::new();
                thrift::encode_json(record, &mut text)?;
                out.extend_from_slice(text.as_bytes());
                out.push(b'\n');
            }
            Format::Json => {
                let mut text = String::new();
                engine::encode_json(record, &self.json_opts, &mut text)?;
                out.extend_from_slice(text.as_bytes());
                out.push(b'\n');
            }
            Format::Text => {
                let mut text = String::new();
                text::encode(record, &self.text_opts, &mut text)?;
                out.extend_from_slice(text.as_bytes());
                if self.args.delimited && !text.ends_with('\n') {
                    out.push(b'\n');
                }
            }
        }
        Ok(())
    }
}

/// The target schema named by `--to-proto` / `--to-thrift`, if any.
fn target_schema(args: &ConvertArgs) -> Result<Option<SchemaSet>> {
    let includes = &args.source.include;
    if !args.to_thrift.is_empty() {
        return Ok(Some(SchemaSet::from_thrift_files(
            &args.to_thrift,
            includes,
        )?));
    }
    if !args.to_proto.is_empty() {
        return Ok(Some(SchemaSet::from_proto_files(&args.to_proto, includes)?));
    }
    Ok(None)
}

/// The program of `--map` and `--transform`, merged.
fn program(args: &ConvertArgs) -> Result<Option<Program>> {
    let read = |path: &PathBuf| {
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
    };
    let map = match &args.map {
        Some(p) => Some(Program::from_map_toml(&p.display().to_string(), &read(p)?)?),
        None => None,
    };
    let transform = match &args.transform {
        Some(p) => Some(Program::from_transform_toml(
            &p.display().to_string(),
            &read(p)?,
        )?),
        None => None,
    };
    Ok(match (map, transform) {
        (Some(m), Some(t)) => Some(m.merge(t)?),
        (m, t) => m.or(t),
    })
}

/// Runs `optimus convert`.
pub fn run(args: ConvertArgs) -> Result<()> {
    let schema = args.source.load()?;
    let id = find_type(&schema, &args.type_name)?;
    let target = target_schema(&args)?;
    let program = program(&args)?;
    if target.is_none() && args.to_type.is_some() {
        anyhow::bail!("--to-type names a type of --to-proto or --to-thrift's schema: give one")
    }
    if target.is_none() && args.map.is_some() {
        anyhow::bail!("--map maps fields to another schema's: give --to-proto or --to-thrift")
    }
    let plan = match (&target, program) {
        (Some(dst), program) => {
            let name = args.to_type.as_deref().unwrap_or(schema.message(id).name());
            let to = find_type(dst, name).context("--to-type")?;
            Some(Plan::compile(
                &schema,
                id,
                dst,
                to,
                &program.unwrap_or_default(),
            )?)
        }
        (None, Some(program)) => Some(Plan::compile(&schema, id, &schema, id, &program)?),
        (None, None) => None,
    };
    let out_schema = target.as_ref().unwrap_or(&schema);
    if args.to.thrift().is_some() && out_schema.thrift().is_none() {
        anyhow::bail!(
            "--to {} writes Thrift: the output's schema must be a .thrift file (--thrift or --to-thrift)",
            format_name(args.to)
        )
    }
    if args.from.thrift().is_some() && schema.thrift().is_none() {
        anyhow::bail!(
            "--from {} reads Thrift: give the input's schema as a .thrift file (--thrift)",
            format_name(args.from)
        )
    }
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
        text_opts: TextOptions {
            depth_limit: args.depth_limit,
            ..TextOptions::default()
        },
        plan: plan.as_ref(),
    };
    let mut input = Vec::new();
    io::stdin()
        .lock()
        .read_to_end(&mut input)
        .context("reading stdin")?;
    let mut out = BufWriter::new(io::stdout().lock());
    let (mut buf, mut scratch) = (Vec::new(), Vec::new());
    // One arena, reset per message: a stream of messages allocates no records after the first.
    let mut arena = Arena::new();
    if !args.delimited {
        conv.convert(&input, &arena, &mut buf, &mut scratch)?;
        out.write_all(&buf)?;
        return Ok(out.flush()?);
    }
    for (index, item) in split_stream(&input, args.from).enumerate() {
        let (offset, body) = item.with_context(|| format!("message {index}"))?;
        arena.reset();
        buf.clear();
        let at = || format!("message {index} (stream byte {offset})");
        if conv.is_direct() {
            conv.convert(body, &arena, &mut buf, &mut scratch)
                .with_context(at)?;
        } else {
            let record = conv.read(body, &arena).with_context(at)?;
            conv.encode(record, &mut buf, &mut scratch)?;
        }
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
        Format::Text => Box::new(std::iter::once(Err(anyhow::anyhow!(
            "--delimited reads binary messages or JSON lines; text format has no framing"
        )))),
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
        Format::Protobuf | Format::ThriftBinary | Format::ThriftCompact => {
            Box::new(binary::delimited(input).map(|r| r.map_err(anyhow::Error::from)))
        }
    }
}

/// A format's name as `--from` / `--to` take it.
fn format_name(format: Format) -> String {
    format
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}
