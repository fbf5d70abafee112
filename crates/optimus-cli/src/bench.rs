//! `optimus bench`: encode, decode and JSON speed on embedded workloads or the user's own
//! messages, as ns/message with min/median/max over repetitions and Gbps.

use std::hint::black_box;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::json::{self, JsonOptions};
use optimus_core::Message;
use optimus_schema::{MessageId, SchemaSet};

use crate::source::find_type;

/// The Optimus Prime message classes (ASPLOS'20, Table 2) as protobuf messages.
const PEERS_PROTO: &str = include_str!("../../../testdata/peers.proto");
const WORKLOADS: &[(&str, &str, &[u8])] = &[
    (
        "flat",
        "bench.Flat",
        include_bytes!("../../../testdata/flat.bin"),
    ),
    (
        "mixed",
        "bench.Mixed",
        include_bytes!("../../../testdata/mixed.bin"),
    ),
    (
        "nested",
        "bench.Nested",
        include_bytes!("../../../testdata/nested.bin"),
    ),
];

/// Arguments of `optimus bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Run only this workload (flat, mixed, nested); default: all.
    #[arg(long, value_name = "NAME")]
    workload: Option<String>,
    /// Run only this operation (encode, decode, decode-reuse, json-encode, json-decode,
    /// protobuf-to-json); default: all.
    #[arg(long, value_name = "OP")]
    operation: Option<String>,
    /// Seconds of measurement per cell (workload × operation) [default: 0.5].
    #[arg(long, value_name = "S", default_value_t = 0.5)]
    seconds: f64,
    /// Repetitions per cell; min/median/max are over these [default: 11].
    #[arg(long, value_name = "N", default_value_t = 11, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Print one JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
    /// Your own schema: a .proto file (with --type and --input).
    #[arg(long, value_name = "FILE", requires_all = ["type_name", "input"])]
    proto: Option<PathBuf>,
    /// Include directories for --proto.
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    include: Vec<PathBuf>,
    /// Message type of --input.
    #[arg(long = "type", value_name = "FULL.NAME")]
    type_name: Option<String>,
    /// Varint-length-delimited messages to measure (the first one is used).
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,
}

struct Workload {
    name: String,
    id: MessageId,
    bytes: Vec<u8>,
}

/// One measured cell.
struct Cell {
    workload: String,
    operation: &'static str,
    bytes: usize,
    ns: Vec<f64>,
}

impl Cell {
    fn stat(&self, q: f64) -> f64 {
        let mut v = self.ns.clone();
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * q).round() as usize]
    }
}

/// Runs `optimus bench`.
pub fn run(args: BenchArgs) -> Result<()> {
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        bail!("--seconds must be a positive number");
    }
    let (schema, workloads) = load_workloads(&args)?;
    let ops: [(&str, Op); 6] = [
        ("encode", Op::Encode),
        ("decode", Op::Decode),
        ("decode-reuse", Op::DecodeReuse),
        ("json-encode", Op::JsonEncode),
        ("json-decode", Op::JsonDecode),
        ("protobuf-to-json", Op::Transcode),
    ];
    let progress = !args.json && io::stderr().is_terminal();
    let total = workloads.len() * ops.len();
    let mut cells = Vec::new();
    let mut out = io::stdout().lock();
    if !args.json {
        writeln!(
            out,
            "{:<8} {:<17} {:>6} {:>11} {:>11} {:>11} {:>8}",
            "workload", "operation", "bytes", "ns_median", "ns_min", "ns_max", "Gbps"
        )?;
    }
    for w in &workloads {
        let msg = binary::decode(&schema, w.id, &w.bytes, &DecodeOptions::default())
            .with_context(|| format!("workload {}", w.name))?;
        let json_text = json::encode(&schema, &msg, &JsonOptions::default())?;
        for (name, op) in ops {
            if args.operation.as_deref().is_some_and(|o| o != name) {
                continue;
            }
            if progress {
                eprint!(
                    "\roptimus: bench {}/{} {} {}            ",
                    cells.len() + 1,
                    total,
                    w.name,
                    name
                );
            }
            let mut reused = Message::new(&schema, w.id);
            let ns = measure(&args, || op.run(&schema, w, &msg, &json_text, &mut reused))?;
            let cell = Cell {
                workload: w.name.clone(),
                operation: name,
                bytes: w.bytes.len(),
                ns,
            };
            print_cell(&mut out, &cell, args.json)?;
            cells.push(cell);
        }
    }
    if progress {
        eprint!("\r{:60}\r", "");
    }
    Ok(())
}

fn print_cell(out: &mut impl Write, c: &Cell, json: bool) -> Result<()> {
    let median = c.stat(0.5);
    let gbps = c.bytes as f64 * 8.0 / median;
    if json {
        writeln!(
            out,
            "{{\"workload\":\"{}\",\"operation\":\"{}\",\"implementation\":\"optimus\",\"bytes\":{},\"ns_min\":{:.1},\"ns_median\":{:.1},\"ns_max\":{:.1},\"gbps\":{:.3},\"threads\":1,\"interleave\":1}}",
            c.workload, c.operation, c.bytes, c.stat(0.0), median, c.stat(1.0), gbps
        )?;
    } else {
        writeln!(
            out,
            "{:<8} {:<17} {:>6} {:>11.1} {:>11.1} {:>11.1} {:>8.2}",
            c.workload,
            c.operation,
            c.bytes,
            median,
            c.stat(0.0),
            c.stat(1.0),
            gbps
        )?;
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Op {
    Encode,
    Decode,
    /// Decode into one message cleared before each call, as the peers' parse benchmarks do.
    DecodeReuse,
    JsonEncode,
    JsonDecode,
    Transcode,
}

impl Op {
    fn run(
        self,
        schema: &SchemaSet,
        w: &Workload,
        msg: &Message,
        json_text: &str,
        reused: &mut Message,
    ) -> Result<()> {
        match self {
            Op::Encode => {
                black_box(binary::encode(schema, black_box(msg)));
            }
            Op::Decode => {
                black_box(binary::decode(
                    schema,
                    w.id,
                    black_box(&w.bytes),
                    &DecodeOptions::default(),
                )?);
            }
            Op::DecodeReuse => {
                reused.clear_all();
                binary::merge(
                    schema,
                    reused,
                    black_box(&w.bytes),
                    &DecodeOptions::default(),
                )?;
                black_box(&*reused);
            }
            Op::JsonEncode => {
                black_box(json::encode(
                    schema,
                    black_box(msg),
                    &JsonOptions::default(),
                )?);
            }
            Op::JsonDecode => {
                black_box(json::decode(
                    schema,
                    w.id,
                    black_box(json_text),
                    &JsonOptions::default(),
                )?);
            }
            Op::Transcode => {
                let m =
                    binary::decode(schema, w.id, black_box(&w.bytes), &DecodeOptions::default())?;
                black_box(json::encode(schema, &m, &JsonOptions::default())?);
            }
        }
        Ok(())
    }
}

/// Times `f`: calibrates a batch size to about 1/reps of the cell's time, then returns the
/// ns per call of each repetition.
fn measure(args: &BenchArgs, mut f: impl FnMut() -> Result<()>) -> Result<Vec<f64>> {
    let per_rep = Duration::from_secs_f64(args.seconds / f64::from(args.reps));
    let mut iters = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..iters {
            f()?;
        }
        let el = t.elapsed();
        if el >= per_rep / 4 || iters >= 1 << 30 {
            let scale = per_rep.as_secs_f64() / el.as_secs_f64().max(1e-9);
            iters = ((iters as f64 * scale) as u64).max(1);
            break;
        }
        iters *= 4;
    }
    let mut ns = Vec::with_capacity(args.reps as usize);
    for _ in 0..args.reps {
        let t = Instant::now();
        for _ in 0..iters {
            f()?;
        }
        ns.push(t.elapsed().as_nanos() as f64 / iters as f64);
    }
    Ok(ns)
}

/// The schema, type and bytes of an embedded workload (flat, mixed, nested).
pub fn embedded_workload(name: &str) -> Result<(SchemaSet, MessageId, Vec<u8>)> {
    let (_, type_name, bytes) = WORKLOADS
        .iter()
        .find(|(n, _, _)| *n == name)
        .with_context(|| format!("no workload named {name:?} (try flat, mixed, nested)"))?;
    let schema = SchemaSet::from_source(PEERS_PROTO)?;
    let id = schema
        .message_by_name(type_name)
        .context("embedded workload type")?;
    Ok((schema, id, bytes.to_vec()))
}

fn load_workloads(args: &BenchArgs) -> Result<(SchemaSet, Vec<Workload>)> {
    if let (Some(proto), Some(type_name), Some(input)) = (&args.proto, &args.type_name, &args.input)
    {
        let schema = SchemaSet::from_proto_files(&[proto], &args.include)?;
        let id = find_type(&schema, type_name)?;
        let data = std::fs::read(input).with_context(|| format!("reading {}", input.display()))?;
        let body = binary::delimited(&data)
            .next()
            .with_context(|| format!("{} is empty", input.display()))?
            .with_context(|| format!("{}: first message", input.display()))?
            .1;
        let name = schema.message(id).name().to_string();
        return Ok((
            schema,
            vec![Workload {
                name,
                id,
                bytes: body.to_vec(),
            }],
        ));
    }
    let schema = SchemaSet::from_source(PEERS_PROTO)?;
    let mut workloads = Vec::new();
    for (name, type_name, bytes) in WORKLOADS {
        if args.workload.as_deref().is_some_and(|w| w != *name) {
            continue;
        }
        let id = schema
            .message_by_name(type_name)
            .context("embedded workload type")?;
        workloads.push(Workload {
            name: name.to_string(),
            id,
            bytes: bytes.to_vec(),
        });
    }
    if workloads.is_empty() {
        bail!(
            "no workload named {:?} (try flat, mixed, nested)",
            args.workload.as_deref().unwrap_or("")
        );
    }
    Ok((schema, workloads))
}
