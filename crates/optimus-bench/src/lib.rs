//! The benchmark behind `optimus bench`: encode, decode and JSON speed on the embedded
//! workloads or the user's own messages, as ns/message with min/median/max over repetitions
//! and Gbps, beside the peers (`peers`) measured in the same run, with optimus's speedup over
//! each; and Thrift binary and compact encode, decode and transcoding of the embedded
//! workloads' Thrift versions beside Apache Thrift C++ (`thrift_cells`). It prints nothing:
//! rows, notes and progress go to the caller's [`Event`] callback.

pub mod rpc;

#[cfg(buffa_peer)]
mod buffa_peer;
#[cfg(buffa_peer)]
mod buffa_types;
#[cfg(cpp_peer)]
#[allow(unsafe_code)]
mod cpp_peer;
mod generated;
mod peers;
mod prost_types;
mod thrift_cells;
#[cfg(thrift_peer)]
#[allow(unsafe_code)]
mod thrift_peer;

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::json::{self, JsonOptions};
use optimus_core::thrift::Protocol;
use optimus_core::{engine, Arena, Message};
use optimus_schema::{descriptor_set_from_proto_files, descriptor_set_from_sources};
use optimus_schema::{MessageId, SchemaSet, DEFAULT_PROTO_NAME};

use peers::{Notes, PeerSchema};
use thrift_cells::{ThriftOp, ThriftWorkload};

pub use peers::{ALL as PEERS, DEFAULT as DEFAULT_PEERS};

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

/// What to measure and how long.
#[derive(Debug, Clone)]
pub struct Config {
    /// Only this workload (flat, mixed, nested); `None`: all.
    pub workload: Option<String>,
    /// Only this operation (encode, decode, decode-reuse, json-encode, json-decode,
    /// protobuf-to-json, and for the embedded workloads thrift-binary-encode,
    /// thrift-binary-decode, thrift-compact-encode, thrift-compact-decode,
    /// thrift-binary-to-compact, protobuf-to-thrift-compact); `None`: all.
    pub operation: Option<String>,
    /// Seconds of measurement per cell (workload × operation).
    pub seconds: f64,
    /// Repetitions per cell; min/median/max are over these.
    pub reps: u32,
    /// Peers measured beside optimus (names of [`PEERS`]; `none` is skipped).
    pub peers: Vec<String>,
    /// Threads, each running every implementation at the same time as the others: rows give
    /// ns per message of their batch throughput.
    pub threads: u32,
    /// The user's own schema (a .proto file), with `include`, `type_name` and `input`.
    pub proto: Option<PathBuf>,
    /// Include directories for `proto`.
    pub include: Vec<PathBuf>,
    /// Message type of `input`.
    pub type_name: Option<String>,
    /// Varint-length-delimited messages to measure (the first one is used).
    pub input: Option<PathBuf>,
    /// The process's allocation count so far, where the caller's global allocator counts
    /// them: rows then give allocations per message.
    pub allocations: Option<fn() -> u64>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            workload: None,
            operation: None,
            seconds: 0.5,
            reps: 11,
            peers: DEFAULT_PEERS.split(',').map(str::to_owned).collect(),
            threads: 1,
            proto: None,
            include: Vec::new(),
            type_name: None,
            input: None,
            allocations: None,
        }
    }
}

/// What [`run`] reports as it goes.
#[derive(Debug)]
pub enum Event<'a> {
    /// A cell starts: its number (from 1) of `total`.
    Cell {
        done: usize,
        total: usize,
        workload: &'a str,
        operation: &'a str,
    },
    /// A measured row.
    Row(&'a Row),
    /// Something the user should know, once (a peer that does not agree with optimus on a
    /// workload, and is timed anyway).
    Note(&'a str),
}

/// One message to measure: its name in the output, type and serialized bytes.
struct Workload {
    name: String,
    id: MessageId,
    type_name: String,
    bytes: Vec<u8>,
}

/// One implementation's call of one operation on one workload.
struct Runner<'a> {
    implementation: &'static str,
    call: Box<dyn FnMut() -> Result<()> + 'a>,
}

impl Runner<'_> {
    /// Whether the process's allocation counter sees this implementation's allocations
    /// (Rust's allocator); the C++ peers allocate through their own.
    fn allocations_counted(&self) -> bool {
        !matches!(self.implementation, "protobuf-cpp" | "thrift-cpp")
    }
}

/// One measured row: an implementation on a cell (workload × operation).
#[derive(Debug, Clone)]
pub struct Row {
    pub workload: String,
    pub operation: &'static str,
    pub implementation: &'static str,
    /// Serialized bytes of the workload: the cell's input (protobuf, or the Thrift protocol
    /// read), or for encode its output.
    pub bytes: usize,
    /// ns per message, per repetition.
    pub ns: Vec<f64>,
    /// Heap allocations per message (per call), over all repetitions; `None` for a peer
    /// whose allocations the counter cannot see (C++ allocates through `operator new`), with
    /// threads, or without a counter.
    pub allocs_per_message: Option<f64>,
    /// Threads the row's batches ran on at once.
    pub threads: u32,
    /// For a peer: its time over optimus's in each repetition (optimus's speedup).
    pub speedup: Option<Vec<f64>>,
}

/// The header line of [`Row::table_line`]'s table.
pub const TABLE_HEADER: &str = "workload operation                  implementation     bytes   ns_median      ns_min      ns_max     Gbps  allocs   optimus speedup: median (min-max)";

/// The value at quantile `q` (0 min, 0.5 median, 1 max) of `values`.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// Measures every cell `args` selects, reporting each row (and any note) to `on` as soon as
/// it is measured.
pub fn run(args: &Config, on: &mut dyn FnMut(Event<'_>)) -> Result<()> {
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        bail!("seconds must be a positive number");
    }
    if !(1..=64).contains(&args.threads) || args.reps == 0 {
        bail!("threads must be 1 to 64 and reps at least 1");
    }
    let peer_names: Vec<String> = args
        .peers
        .iter()
        .filter(|p| p.as_str() != "none")
        .cloned()
        .collect();
    if let Some(p) = peer_names
        .iter()
        .find(|p| !peers::ALL.contains(&p.as_str()))
    {
        if p == "protobuf-cpp" {
            bail!(
                "this optimus was built without the protobuf-cpp peer: build it where protoc \
                 and libprotobuf are installed"
            );
        }
        if p == "buffa" {
            bail!(
                "this optimus was built without the buffa peer: build it where protoc is installed"
            );
        }
        if p == "thrift-cpp" {
            bail!(
                "this optimus was built without the thrift-cpp peer: build it where \
                 thrift-compiler and libthrift-dev are installed"
            );
        }
        bail!(
            "no peer named {p:?} (try {}, or none)",
            peers::ALL.join(", ")
        );
    }
    let (schema, peer_schema, workloads) = load_workloads(args)?;
    let ops: [(&str, Operation); 12] = [
        ("encode", Operation::Protobuf(Op::Encode)),
        ("decode", Operation::Protobuf(Op::Decode)),
        ("decode-reuse", Operation::Protobuf(Op::DecodeReuse)),
        ("json-encode", Operation::Protobuf(Op::JsonEncode)),
        ("json-decode", Operation::Protobuf(Op::JsonDecode)),
        ("protobuf-to-json", Operation::Protobuf(Op::Transcode)),
        (
            "thrift-binary-encode",
            Operation::Thrift(ThriftOp::Encode(Protocol::Binary)),
        ),
        (
            "thrift-binary-decode",
            Operation::Thrift(ThriftOp::Decode(Protocol::Binary)),
        ),
        (
            "thrift-compact-encode",
            Operation::Thrift(ThriftOp::Encode(Protocol::Compact)),
        ),
        (
            "thrift-compact-decode",
            Operation::Thrift(ThriftOp::Decode(Protocol::Compact)),
        ),
        (
            "thrift-binary-to-compact",
            Operation::Thrift(ThriftOp::BinaryToCompact),
        ),
        (
            "protobuf-to-thrift-compact",
            Operation::Thrift(ThriftOp::ProtobufToCompact),
        ),
    ];
    if !ops
        .iter()
        .any(|(name, _)| args.operation.as_deref().is_none_or(|o| o == *name))
    {
        bail!(
            "no operation named {:?} (try {})",
            args.operation.as_deref().unwrap_or(""),
            ops.map(|(name, _)| name).join(", ")
        );
    }
    // The Thrift cells measure the embedded workloads' Thrift versions; a --proto run has
    // none.
    let thrift_schema = if args.proto.is_none() {
        Some(thrift_cells::schema()?)
    } else {
        None
    };
    let applies = |name: &str, op: &Operation| {
        args.operation.as_deref().is_none_or(|o| o == name)
            && (thrift_schema.is_some() || matches!(op, Operation::Protobuf(_)))
    };
    let selected = ops.iter().filter(|(name, op)| applies(name, op)).count();
    if selected == 0 {
        bail!("the Thrift operations measure the embedded workloads only (not --proto's message)");
    }
    let total = workloads.len() * selected;
    let mut done = 0;
    let mut notes = Notes::default();
    for w in &workloads {
        let msg = binary::decode(&schema, w.id, &w.bytes, &DecodeOptions::default())
            .with_context(|| format!("workload {}", w.name))?;
        let json_text = json::encode(&schema, &msg, &JsonOptions::default())?;
        let thrift = match &thrift_schema {
            Some(ts) => ThriftWorkload::embedded(ts, &w.name, &w.bytes)?,
            None => None,
        };
        for (name, op) in ops {
            if !applies(name, &op) {
                continue;
            }
            done += 1;
            on(Event::Cell {
                done,
                total,
                workload: &w.name,
                operation: name,
            });
            let cell = Cell {
                op,
                schema: &schema,
                peer_schema: &peer_schema,
                peer_names: &peer_names,
                w,
                msg: &msg,
                json_text: &json_text,
                thrift_schema: thrift_schema.as_ref(),
                thrift: thrift.as_ref(),
            };
            let bytes = match (op, &thrift) {
                (Operation::Thrift(t), Some(tw)) => t.bytes(tw),
                _ => w.bytes.len(),
            };
            let mut reused = Message::new(&schema, w.id);
            let record_arena = Arena::new();
            let mut runners = cell.runners(&mut reused, &record_arena, &mut notes)?;
            for note in notes.take_new() {
                on(Event::Note(&note));
            }
            let (times, allocations) = if args.threads > 1 {
                let batches = calibrate(args, &mut runners)?;
                drop(runners);
                let implementations = cell.implementation_names(&mut notes)?;
                runners = implementations
                    .iter()
                    .map(|&implementation| Runner {
                        implementation,
                        call: Box::new(|| Ok(())),
                    })
                    .collect();
                (
                    measure_threads(args, &cell, &batches)?,
                    vec![None; runners.len()],
                )
            } else {
                measure(args, &mut runners)?
            };
            let ours = &times[0];
            for ((r, ns), &allocs_per_message) in runners.iter().zip(&times).zip(&allocations) {
                let speedup = (r.implementation != "optimus")
                    .then(|| ns.iter().zip(ours).map(|(p, o)| p / o).collect());
                let row = Row {
                    workload: w.name.clone(),
                    operation: name,
                    implementation: r.implementation,
                    bytes,
                    ns: ns.clone(),
                    allocs_per_message: allocs_per_message
                        .filter(|_| r.allocations_counted() && args.threads == 1),
                    threads: args.threads,
                    speedup,
                };
                on(Event::Row(&row));
            }
        }
    }
    Ok(())
}

impl Row {
    /// The median ns per message.
    pub fn median(&self) -> f64 {
        quantile(&self.ns, 0.5)
    }

    /// Serialized protobuf bits per median ns.
    pub fn gbps(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.median()
    }

    /// The row as one JSON object (one line).
    pub fn json_line(&self) -> String {
        let speedup = self.speedup.as_ref().map_or(String::new(), |s| {
            format!(
                ",\"optimus_speedup_min\":{:.3},\"optimus_speedup_median\":{:.3},\"optimus_speedup_max\":{:.3}",
                quantile(s, 0.0),
                quantile(s, 0.5),
                quantile(s, 1.0)
            )
        });
        format!(
            "{{\"workload\":\"{}\",\"operation\":\"{}\",\"implementation\":\"{}\",\"bytes\":{},\"ns_min\":{:.1},\"ns_median\":{:.1},\"ns_max\":{:.1},\"gbps\":{:.3},\"allocs_per_message\":{},\"threads\":{},\"interleave\":1{}}}",
            self.workload,
            self.operation,
            self.implementation,
            self.bytes,
            quantile(&self.ns, 0.0),
            self.median(),
            quantile(&self.ns, 1.0),
            self.gbps(),
            self.allocs_per_message
                .map_or("null".to_string(), |a| format!("{a:.2}")),
            self.threads,
            speedup
        )
    }

    /// The row as a line of the table under [`TABLE_HEADER`].
    pub fn table_line(&self) -> String {
        let speedup = self.speedup.as_ref().map_or(String::new(), |s| {
            format!(
                "{:.2}x ({:.2}-{:.2})",
                quantile(s, 0.5),
                quantile(s, 0.0),
                quantile(s, 1.0)
            )
        });
        format!(
            "{:<8} {:<26} {:<17} {:>6} {:>11.1} {:>11.1} {:>11.1} {:>8.2} {:>7}   {}",
            self.workload,
            self.operation,
            self.implementation,
            self.bytes,
            self.median(),
            quantile(&self.ns, 0.0),
            quantile(&self.ns, 1.0),
            self.gbps(),
            self.allocs_per_message
                .map_or("-".to_string(), |a| format!("{a:.2}")),
            speedup
        )
    }
}

/// A cell's operation: on protobuf (and JSON) or on Thrift.
#[derive(Clone, Copy)]
enum Operation {
    Protobuf(Op),
    Thrift(ThriftOp),
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

/// optimus's operations on arena records, each in its fastest form: encode a record (binary
/// or JSON) into a reused buffer; decode (binary or JSON) into an arena reset before each
/// message (a new message each time, so `decode` and `decode-reuse` are the same call);
/// transcode by both.
fn records_runner<'a>(
    op: Op,
    schema: &'a SchemaSet,
    w: &'a Workload,
    json_text: &'a str,
    record_arena: &'a Arena,
) -> Result<Runner<'a>> {
    let opts = DecodeOptions::default();
    let call: Box<dyn FnMut() -> Result<()> + 'a> = match op {
        Op::Encode => {
            let record = engine::decode(schema, w.id, &w.bytes, record_arena, &opts)?;
            let mut encoder = engine::Encoder::new();
            Box::new(move || {
                black_box(encoder.encode(black_box(record)));
                Ok(())
            })
        }
        Op::JsonEncode => {
            let record = engine::decode(schema, w.id, &w.bytes, record_arena, &opts)?;
            let mut out = String::with_capacity(w.bytes.len() * 3);
            let json_opts = JsonOptions::default();
            Box::new(move || {
                out.clear();
                engine::encode_json(black_box(record), &json_opts, &mut out)?;
                black_box(&out);
                Ok(())
            })
        }
        Op::Transcode => {
            let mut arena = Arena::new();
            let mut out = String::with_capacity(w.bytes.len() * 3);
            let json_opts = JsonOptions::default();
            Box::new(move || {
                arena.reset();
                out.clear();
                let record = engine::decode(schema, w.id, black_box(&w.bytes), &arena, &opts)?;
                engine::encode_json(record, &json_opts, &mut out)?;
                black_box(&out);
                Ok(())
            })
        }
        Op::JsonDecode => {
            let mut arena = Arena::new();
            let json_opts = JsonOptions::default();
            Box::new(move || {
                arena.reset();
                black_box(engine::decode_json(
                    schema,
                    w.id,
                    black_box(json_text),
                    &arena,
                    &json_opts,
                )?);
                Ok(())
            })
        }
        Op::Decode | Op::DecodeReuse => {
            let mut arena = Arena::new();
            Box::new(move || {
                arena.reset();
                black_box(engine::decode(
                    schema,
                    w.id,
                    black_box(&w.bytes),
                    &arena,
                    &opts,
                )?);
                Ok(())
            })
        }
    };
    Ok(Runner {
        implementation: "optimus",
        call,
    })
}

/// One cell (an operation on a workload) and everything its runners are built from; each
/// thread of `--threads` builds its own runners from it.
struct Cell<'a> {
    op: Operation,
    schema: &'a SchemaSet,
    peer_schema: &'a PeerSchema,
    peer_names: &'a [String],
    w: &'a Workload,
    msg: &'a Message,
    json_text: &'a str,
    /// The Thrift schema and the workload's Thrift version (embedded workloads only).
    thrift_schema: Option<&'a SchemaSet>,
    thrift: Option<&'a ThriftWorkload>,
}

impl<'a> Cell<'a> {
    /// optimus's runners (on records, with the reflective Message codec beside them), then
    /// the peers'; for a Thrift cell, optimus's then Apache Thrift C++'s.
    fn runners<'r>(
        &self,
        reused: &'r mut Message,
        record_arena: &'r Arena,
        notes: &mut Notes,
    ) -> Result<Vec<Runner<'r>>>
    where
        'a: 'r,
    {
        let op = match self.op {
            Operation::Protobuf(op) => op,
            Operation::Thrift(t) => {
                let (Some(schema), Some(tw)) = (self.thrift_schema, self.thrift) else {
                    bail!("workload {} has no Thrift version", self.w.name);
                };
                return thrift_cells::runners(
                    t,
                    schema,
                    (self.schema, self.w.id),
                    tw,
                    &self.w.name,
                    record_arena,
                    self.peer_names,
                    notes,
                );
            }
        };
        let (schema, w, msg, json_text) = (self.schema, self.w, self.msg, self.json_text);
        let message_runner = Runner {
            implementation: "optimus",
            call: Box::new(move || op.run(schema, w, msg, json_text, reused)),
        };
        let mut runners = vec![
            records_runner(op, schema, w, json_text, record_arena)?,
            Runner {
                implementation: "optimus-message",
                ..message_runner
            },
        ];
        runners.extend(generated::runner(op, w, json_text, record_arena)?);
        runners.extend(peers::runners(
            self.peer_names,
            op,
            w,
            schema,
            self.peer_schema,
            notes,
        )?);
        Ok(runners)
    }

    /// The names of the cell's runners, in order.
    fn implementation_names(&self, notes: &mut Notes) -> Result<Vec<&'static str>> {
        let mut reused = Message::new(self.schema, self.w.id);
        let arena = Arena::new();
        let names = self
            .runners(&mut reused, &arena, notes)?
            .iter()
            .map(|r| r.implementation)
            .collect();
        Ok(names)
    }
}

/// Each runner's batch: calls that take about 1/reps of the cell's time on one thread.
fn calibrate(args: &Config, runners: &mut [Runner]) -> Result<Vec<u64>> {
    let per_rep = Duration::from_secs_f64(args.seconds / f64::from(args.reps));
    let mut batches = Vec::with_capacity(runners.len());
    for r in runners.iter_mut() {
        let mut iters = 1u64;
        loop {
            let el = time(&mut r.call, iters)?;
            if el >= per_rep / 4 || iters >= 1 << 30 {
                let scale = per_rep.as_secs_f64() / el.as_secs_f64().max(1e-9);
                batches.push(((iters as f64 * scale) as u64).max(1));
                break;
            }
            iters *= 4;
        }
    }
    Ok(batches)
}

/// `--threads N`: every thread builds its own runners and runs each implementation's batch
/// at the same time as the others (a barrier before and after), so a repetition's time is
/// the wall time of N batches; returns ns per message of that batch throughput.
fn measure_threads(args: &Config, cell: &Cell, batches: &[u64]) -> Result<Vec<Vec<f64>>> {
    let threads = args.threads as usize;
    let barrier = std::sync::Barrier::new(threads);
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                scope.spawn(move || -> Result<Vec<Vec<f64>>> {
                    let mut reused = Message::new(cell.schema, cell.w.id);
                    let arena = Arena::new();
                    let mut notes = Notes::default();
                    let runners = cell.runners(&mut reused, &arena, &mut notes);
                    // Every thread meets every barrier, even one whose runners failed to
                    // build, so none waits forever.
                    let mut runners = runners.ok();
                    let mut ns = vec![Vec::new(); batches.len()];
                    let mut failure = None;
                    for _ in 0..args.reps {
                        for (i, &iters) in batches.iter().enumerate() {
                            barrier.wait();
                            let start = Instant::now();
                            if let Some(rs) = runners.as_mut() {
                                if let Err(e) = time(&mut rs[i].call, iters) {
                                    failure.get_or_insert(e);
                                }
                            }
                            barrier.wait();
                            if t == 0 {
                                let total = iters * threads as u64;
                                ns[i].push(start.elapsed().as_nanos() as f64 / total as f64);
                            }
                        }
                    }
                    let built = runners.is_some();
                    drop(runners);
                    match (built, failure) {
                        (_, Some(e)) => Err(e),
                        (false, None) => bail!("a thread could not build its runners"),
                        (true, None) => Ok(ns),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| bail!("a bench thread panicked"))
            })
            .collect::<Vec<_>>()
    });
    let mut first = None;
    for r in results {
        let ns = r?;
        first.get_or_insert(ns);
    }
    first.context("no bench thread ran")
}

/// Times every runner of a cell: calibrates each one's batch to about 1/reps of the cell's
/// time, then runs the repetitions in turn (optimus, each peer, optimus, ...), so drift in the
/// machine's speed falls on all alike. Returns each runner's ns per call, per repetition.
/// Also returns each runner's allocations per call over its repetitions, where `args` has
/// an allocation counter.
#[allow(clippy::type_complexity)]
fn measure(args: &Config, runners: &mut [Runner]) -> Result<(Vec<Vec<f64>>, Vec<Option<f64>>)> {
    let batches = calibrate(args, runners)?;
    let mut ns = vec![Vec::with_capacity(args.reps as usize); runners.len()];
    let mut allocations = vec![0u64; runners.len()];
    let count = args.allocations.unwrap_or(|| 0);
    for _ in 0..args.reps {
        for (((r, &iters), ns), allocs) in runners
            .iter_mut()
            .zip(&batches)
            .zip(&mut ns)
            .zip(&mut allocations)
        {
            let before = count();
            ns.push(time(&mut r.call, iters)?.as_nanos() as f64 / iters as f64);
            *allocs += count() - before;
        }
    }
    let per_call = allocations
        .iter()
        .zip(&batches)
        .map(|(&a, &iters)| {
            args.allocations
                .map(|_| a as f64 / (iters * u64::from(args.reps)) as f64)
        })
        .collect();
    Ok((ns, per_call))
}

/// The time of `iters` calls of `f`.
fn time(f: &mut dyn FnMut() -> Result<()>, iters: u64) -> Result<Duration> {
    let t = Instant::now();
    for _ in 0..iters {
        f()?;
    }
    Ok(t.elapsed())
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

/// The workloads to measure, their schema, and the peers' view of the same descriptors.
fn load_workloads(args: &Config) -> Result<(SchemaSet, PeerSchema, Vec<Workload>)> {
    if let (Some(proto), Some(type_name), Some(input)) = (&args.proto, &args.type_name, &args.input)
    {
        let set = descriptor_set_from_proto_files(&[proto], &args.include)?;
        let schema = SchemaSet::from_descriptor_set(&set)?;
        let id = schema
            .message_by_name(type_name)
            .with_context(|| format!("no message type {type_name} in the schema"))?;
        let data = std::fs::read(input).with_context(|| format!("reading {}", input.display()))?;
        let body = binary::delimited(&data)
            .next()
            .with_context(|| format!("{} is empty", input.display()))?
            .with_context(|| format!("{}: first message", input.display()))?
            .1;
        let workload = Workload {
            name: schema.message(id).name().to_string(),
            id,
            type_name: schema.message(id).full_name.clone(),
            bytes: body.to_vec(),
        };
        return Ok((schema, PeerSchema::new(set)?, vec![workload]));
    }
    let set = descriptor_set_from_sources(&[(DEFAULT_PROTO_NAME, PEERS_PROTO)])?;
    let schema = SchemaSet::from_descriptor_set(&set)?;
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
            type_name: type_name.to_string(),
            bytes: bytes.to_vec(),
        });
    }
    if workloads.is_empty() {
        bail!(
            "no workload named {:?} (try flat, mixed, nested)",
            args.workload.as_deref().unwrap_or("")
        );
    }
    Ok((schema, PeerSchema::new(set)?, workloads))
}

#[cfg(test)]
mod tests {
    use super::{run, Config, Event, PEERS};

    /// The rows of a very short run of `operation` on every embedded workload, checked to
    /// make no note (every implementation's output is the bytes optimus's is), as
    /// (workload, implementation).
    fn smoke(operation: &str, peers: &[&str]) -> Vec<(String, &'static str)> {
        let config = Config {
            operation: Some(operation.into()),
            seconds: 0.003,
            reps: 1,
            peers: peers.iter().map(|p| p.to_string()).collect(),
            ..Config::default()
        };
        let mut rows = Vec::new();
        let mut notes = Vec::new();
        run(&config, &mut |e| match e {
            Event::Row(r) => {
                assert_eq!(r.operation, operation);
                assert!(r.median() > 0.0 && r.bytes > 0, "{r:?}");
                assert_eq!(r.speedup.is_some(), r.implementation != "optimus", "{r:?}");
                rows.push((r.workload.clone(), r.implementation));
            }
            Event::Note(n) => notes.push(n.to_string()),
            Event::Cell { .. } => {}
        })
        .unwrap_or_else(|e| panic!("{operation}: {e:#}"));
        assert!(notes.is_empty(), "{operation}: {notes:?}");
        rows
    }

    #[test]
    fn thrift_cells_run_every_implementation_with_optimus_bytes() {
        // scripts/test installs thrift-compiler and libthrift-dev, so there the Apache Thrift
        // C++ peer must have been built (build.rs only warns where it cannot).
        let required = std::env::var_os("OPTIMUS_REQUIRE_THRIFT_PEER").is_some_and(|v| v != "0");
        let cpp = PEERS.contains(&"thrift-cpp");
        assert!(
            !required || cpp,
            "OPTIMUS_REQUIRE_THRIFT_PEER is set, but this build has no thrift-cpp peer (see \
             the warning of optimus-bench's build script)"
        );
        let cases: [(&str, &[&str]); 6] = [
            ("thrift-binary-encode", &["optimus", "thrift-cpp"]),
            ("thrift-binary-decode", &["optimus", "thrift-cpp"]),
            ("thrift-compact-encode", &["optimus", "thrift-cpp"]),
            ("thrift-compact-decode", &["optimus", "thrift-cpp"]),
            (
                "thrift-binary-to-compact",
                &["optimus", "optimus-records", "thrift-cpp"],
            ),
            // Apache Thrift C++ has no protobuf.
            ("protobuf-to-thrift-compact", &["optimus"]),
        ];
        for (operation, implementations) in cases {
            // Every peer named: the protobuf ones have no Thrift rows.
            let rows = smoke(operation, PEERS);
            for workload in ["flat", "mixed", "nested"] {
                let got: Vec<&str> = rows
                    .iter()
                    .filter(|(w, _)| w == workload)
                    .map(|(_, i)| *i)
                    .collect();
                let want: Vec<&str> = implementations
                    .iter()
                    .copied()
                    .filter(|&i| i != "thrift-cpp" || cpp)
                    .collect();
                assert_eq!(got, want, "{operation} {workload}");
            }
        }
    }

    #[test]
    fn the_thrift_peer_has_no_protobuf_rows() {
        let rows = smoke(
            "encode",
            &["thrift-cpp"].map(|p| if PEERS.contains(&p) { p } else { "none" }),
        );
        assert!(
            rows.iter().all(|(_, i)| i.starts_with("optimus")),
            "{rows:?}"
        );
    }

    #[test]
    fn thrift_operations_need_the_embedded_workloads() {
        let testdata = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata");
        // mixed.bin, preceded by its length as a varint.
        let body = std::fs::read(format!("{testdata}/mixed.bin")).unwrap();
        let mut input = Vec::new();
        let mut n = body.len();
        while n >= 0x80 {
            input.push((n as u8) | 0x80);
            n >>= 7;
        }
        input.push(n as u8);
        input.extend_from_slice(&body);
        let path = std::env::temp_dir().join(format!("optimus-bench-{}.bin", std::process::id()));
        std::fs::write(&path, &input).unwrap();
        let config = Config {
            operation: Some("thrift-binary-decode".into()),
            proto: Some(format!("{testdata}/peers.proto").into()),
            include: vec![testdata.into()],
            type_name: Some("bench.Mixed".into()),
            input: Some(path.clone()),
            ..Config::default()
        };
        let e = run(&config, &mut |_| {}).unwrap_err();
        std::fs::remove_file(&path).ok();
        assert!(e.to_string().contains("embedded workloads only"), "{e}");
    }
}
