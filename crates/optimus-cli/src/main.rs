//! `optimus`: the command-line front end. Thin glue over the library crates: it parses
//! arguments, owns stdin/stdout/stderr, and turns errors into one line and exit code 1.
#![deny(unsafe_code)]

#[allow(unsafe_code)]
mod alloc_count;
mod bench;
mod convert;
mod rpc_cmd;
mod schema_cmd;
mod sim_cmd;
mod source;
mod trace_cmd;

use std::io;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Counts allocations for `optimus bench`'s allocations-per-message column.
#[global_allocator]
static ALLOCATOR: alloc_count::Counting = alloc_count::Counting;

/// Schema-driven data transformation for RPCs: protobuf binary and JSON, table-driven.
#[derive(Parser)]
#[command(name = "optimus", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands; each lives in its own module.
#[derive(Subcommand)]
enum Command {
    /// Convert one message (or a delimited stream) between formats (protobuf, JSON, text,
    /// Thrift binary and compact), schemas and IDLs, through converter ops.
    Convert(convert::ConvertArgs),
    /// List the types of a schema: fields, kinds, cardinality and record layout.
    Schema(schema_cmd::SchemaArgs),
    /// Measure encode and decode speed on the embedded workloads (or your own messages).
    Bench(bench::BenchArgs),
    /// Record the events an accelerator would perform on messages, as a trace file.
    Trace(trace_cmd::TraceArgs),
    /// Run the Optimus Prime or RPCAcc timing model, or reproduce the papers' results.
    Sim(sim_cmd::SimArgs),
    /// Serve a .proto service on the soft-NIC RPC stack (shared memory, UDP or TCP).
    Serve(rpc_cmd::ServeArgs),
    /// Call a method of a running `optimus serve` with a JSON request; prints the JSON reply.
    Call(rpc_cmd::CallArgs),
    /// Closed-loop echo benchmark: optimus-rpc beside tonic gRPC and a bare socket echo.
    RpcBench(rpc_cmd::RpcBenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Convert(a) => convert::run(a),
        Command::Schema(a) => schema_cmd::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Trace(a) => trace_cmd::run(a),
        Command::Sim(a) => sim_cmd::run_sim(a),
        Command::Serve(a) => rpc_cmd::serve(a),
        Command::Call(a) => rpc_cmd::call(a),
        Command::RpcBench(a) => rpc_cmd::rpc_bench(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            eprintln!("error: {}", chain.join(": ").replace('\n', " "));
            ExitCode::from(1)
        }
    }
}

/// A closed stdout (`optimus ... | head`) ends the program quietly.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}
