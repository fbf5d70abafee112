//! `optimus bench`: arguments to [`optimus_bench::Config`], rows to stdout as a table or JSON
//! lines, notes to stderr, and a progress bar while stderr is a terminal.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use optimus_bench::{Config, Event, DEFAULT_PEERS, PEERS, TABLE_HEADER};

use crate::alloc_count;

/// Arguments of `optimus bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Run only this workload (flat, mixed, nested); default: all.
    #[arg(long, value_name = "NAME")]
    workload: Option<String>,
    /// Run only this operation (encode, decode, decode-reuse, json-encode, json-decode,
    /// protobuf-to-json, and on the embedded workloads' Thrift versions thrift-binary-encode,
    /// thrift-binary-decode, thrift-compact-encode, thrift-compact-decode,
    /// thrift-binary-to-compact, protobuf-to-thrift-compact); default: all.
    #[arg(long, value_name = "OP")]
    operation: Option<String>,
    /// Seconds of measurement per cell (workload × operation) [default: 0.5].
    #[arg(long, value_name = "S", default_value_t = 0.5)]
    seconds: f64,
    /// Repetitions per cell; min/median/max are over these [default: 11].
    #[arg(long, value_name = "N", default_value_t = 11, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Peers to measure beside optimus, comma-separated (prost, prost-reflect, buffa where the
    /// build found protoc, protobuf-cpp where it found libprotobuf, and thrift-cpp, Apache
    /// Thrift C++ in the Thrift cells, where it found libthrift), or none [default: every one
    /// built].
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = DEFAULT_PEERS,
        hide_default_value = true
    )]
    peers: Vec<String>,
    /// Threads, each running every implementation at the same time as the others: rows give
    /// ns per message of their batch throughput [default: 1].
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    threads: u32,
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

/// Runs `optimus bench`.
pub fn run(args: BenchArgs) -> Result<()> {
    let peers: Vec<String> = args.peers.into_iter().filter(|p| p != "none").collect();
    if let Some(p) = peers.iter().find(|p| !PEERS.contains(&p.as_str())) {
        match p.as_str() {
            "protobuf-cpp" => bail!(
                "this optimus was built without the protobuf-cpp peer: build it where protoc \
                 and libprotobuf are installed"
            ),
            "buffa" => bail!(
                "this optimus was built without the buffa peer: build it where protoc is installed"
            ),
            "thrift-cpp" => bail!(
                "this optimus was built without the thrift-cpp peer: build it where \
                 thrift-compiler and libthrift-dev are installed"
            ),
            _ => bail!("no peer named {p:?} (try {}, or none)", PEERS.join(", ")),
        }
    }
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        bail!("--seconds must be a positive number");
    }
    let config = Config {
        workload: args.workload,
        operation: args.operation,
        seconds: args.seconds,
        reps: args.reps,
        peers,
        threads: args.threads,
        proto: args.proto,
        include: args.include,
        type_name: args.type_name,
        input: args.input,
        allocations: Some(alloc_count::allocations),
    };
    let json = args.json;
    let bar = (!json && io::stderr().is_terminal()).then(|| {
        ProgressBar::new(0).with_style(
            ProgressStyle::with_template("optimus: bench {pos}/{len} {msg}")
                .expect("a valid template"),
        )
    });
    let mut out = io::stdout().lock();
    let mut header = !json;
    let mut written = Ok(());
    let result = optimus_bench::run(&config, &mut |event| match event {
        Event::Cell {
            done,
            total,
            workload,
            operation,
        } => {
            if let Some(bar) = &bar {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(format!("{workload} {operation}"));
            }
        }
        Event::Row(row) => {
            let mut line = if json {
                row.json_line()
            } else {
                row.table_line()
            };
            if header {
                line = format!("{TABLE_HEADER}\n{line}");
                header = false;
            }
            let w = match &bar {
                Some(bar) => bar.suspend(|| writeln!(out, "{line}")),
                None => writeln!(out, "{line}"),
            };
            if written.is_ok() {
                written = w;
            }
        }
        Event::Note(text) => match &bar {
            Some(bar) => bar.suspend(|| eprintln!("optimus: note: {text}")),
            None => eprintln!("optimus: note: {text}"),
        },
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    result?;
    Ok(written?)
}
