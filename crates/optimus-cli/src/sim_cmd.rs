//! `optimus sim`: run the Optimus Prime or RPCAcc timing model on a workload or trace file, or
//! reproduce the papers' results (`optimus sim reproduce op|rpcacc`).
//!
//! The model crate never calls the engine: this command is the glue that records the engine's
//! traces ([`EngineTraces`], over `optimus-core`'s traced codec) and hands them to it.

use std::io::{self, Write};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use optimus_sim::calibrate::{self, Row, Status};
use optimus_sim::op::{self, OpConfig};
use optimus_sim::rpcacc::{self, LinkConfig, RpcAccConfig};
use optimus_core::binary::{self, DecodeOptions};
use optimus_schema::SchemaSet;
use optimus_sim::workload::{self, MessageTrace, TraceSource, ViewConfig};
use optimus_trace::{Direction, Event, Recorder};

/// The engine as the model's trace source: compiles the workload's `.proto` and records the
/// traced codec, decoding (or decoding untraced, then encoding) each message.
pub struct EngineTraces;

impl TraceSource for EngineTraces {
    fn trace(
        &mut self,
        proto: &str,
        messages: &[(&str, &[u8])],
        direction: Direction,
    ) -> std::result::Result<Vec<Event>, String> {
        let schema = SchemaSet::from_source(proto).map_err(|e| e.to_string())?;
        let opts = DecodeOptions::default();
        let mut rec = Recorder::new();
        for (ty, bytes) in messages {
            let id = schema
                .message_by_name(ty)
                .ok_or_else(|| format!("no message type {ty}"))?;
            match direction {
                Direction::Decode => {
                    binary::decode_traced(&schema, id, bytes, &opts, &mut rec)
                        .map_err(|e| e.to_string())?;
                }
                Direction::Encode => {
                    let msg =
                        binary::decode(&schema, id, bytes, &opts).map_err(|e| e.to_string())?;
                    let mut out = Vec::with_capacity(bytes.len());
                    binary::encode_traced(&schema, &msg, &mut out, &mut rec);
                }
            }
        }
        Ok(rec.events)
    }
}

/// Which accelerator to model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Accel {
    /// Optimus Prime, on-chip (ASPLOS'20).
    Op,
    /// RPCAcc, PCIe-attached.
    Rpcacc,
}

/// Mesh size of the simulated server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MeshSize {
    /// 16 cores.
    #[value(name = "4x4")]
    M4x4,
    /// 64 cores.
    #[value(name = "8x8")]
    M8x8,
}

/// Arguments of `optimus sim`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SimArgs {
    #[command(subcommand)]
    reproduce: Option<SimCommand>,
    /// Accelerator model [default: op].
    #[arg(long, value_enum, default_value = "op")]
    accel: Accel,
    /// Transformation pipelines n of OP{n,j} [default: 1].
    #[arg(long, default_value_t = 1)]
    pipelines: u32,
    /// Time-sharing degree j of OP{n,j}: messages per Reader [default: 1].
    #[arg(long, default_value_t = 1)]
    interleave: u32,
    /// Mesh of the simulated server [default: 4x4].
    #[arg(long, value_enum, default_value = "4x4")]
    mesh: MeshSize,
    /// PCIe round-trip latency in ns for RPCAcc [default: 1250].
    #[arg(long = "pcie-ns", default_value_t = 1250.0)]
    pcie_ns: f64,
    /// Embedded workload: flat, mixed, nested (serialization) or NAME-deser [default: mixed].
    #[arg(long, value_name = "NAME", conflicts_with = "trace")]
    workload: Option<String>,
    /// A trace file written by `optimus trace`.
    #[arg(long, value_name = "FILE")]
    trace: Option<std::path::PathBuf>,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    json: bool,
}

/// `optimus sim reproduce`.
#[derive(Subcommand, Debug)]
pub enum SimCommand {
    /// Run every experiment of a paper; print paper value, model value and deviation per target.
    Reproduce(ReproduceArgs),
}

/// Arguments of `optimus sim reproduce`.
#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Which paper.
    #[arg(value_enum)]
    paper: Accel,
    /// One JSON object per line: id, paper, model, unit, deviation, status.
    #[arg(long)]
    json: bool,
}

/// Runs `optimus sim`.
///
/// # Errors
/// Bad arguments, unreadable trace file, invalid configuration, or a closed stdout.
pub fn run_sim(args: SimArgs) -> Result<()> {
    if let Some(SimCommand::Reproduce(r)) = args.reproduce {
        return reproduce(r);
    }
    let traces = load(&args)?;
    let out = io::stdout();
    let mut out = out.lock();
    match args.accel {
        Accel::Op => {
            let mut cfg = match args.mesh {
                MeshSize::M4x4 => OpConfig::paper_4x4(args.pipelines, args.interleave),
                MeshSize::M8x8 => OpConfig::paper_8x8(args.pipelines, args.interleave),
            };
            cfg.validate().context("sim")?;
            cfg.seed = 1;
            let r = op::run(&cfg, &traces).context("sim")?;
            if args.json {
                writeln!(out, "{}", serde_json::to_string(&r)?)?;
            } else {
                writeln!(out, "OP{{{},{}}} on {} mesh", cfg.pipelines, cfg.interleave, if cfg.noc.mesh == 8 { "8x8" } else { "4x4" })?;
                writeln!(out, "throughput_gbps           {:.2}", r.throughput_gbps)?;
                writeln!(out, "messages_per_s            {:.0}", r.messages_per_s)?;
                writeln!(out, "latency_ns                {:.1}", r.latency_ns)?;
                writeln!(out, "latency_with_queue_ns     {:.1}", r.latency_with_queue_ns)?;
                writeln!(out, "field_read_latency_cycles {:.1}", r.field_read_latency_cycles)?;
                writeln!(out, "amat_cycles               {:.1}", r.amat_cycles)?;
                writeln!(out, "port_gbps                 {:.1}", r.port_gbps)?;
                writeln!(out, "mesh_link_utilization     {:.3}", r.mesh_link_utilization)?;
                for (k, v) in &r.stats.0 {
                    writeln!(out, "{k:<40} {v}")?;
                }
            }
        }
        Accel::Rpcacc => {
            let cfg = RpcAccConfig { pcie: LinkConfig { latency_ns: args.pcie_ns, ..RpcAccConfig::default().pcie }, ..RpcAccConfig::default() };
            cfg.validate().context("sim")?;
            let mut rows = Vec::new();
            for (i, t) in traces.iter().enumerate() {
                let p = optimus_sim::program::Program::from_trace(t);
                let cyc = 1000.0 / cfg.clock_mhz;
                let ser = rpcacc::serializer_ns(&cfg, &p, &|_| cfg.pcie, cyc);
                rows.push(serde_json::json!({"message": i, "wire_bytes": t.wire_bytes, "protoacc_pcie_ser_ns": ser}));
            }
            if args.json {
                writeln!(out, "{}", serde_json::json!({ "pcie_ns": args.pcie_ns, "messages": rows }))?;
            } else {
                writeln!(out, "ProtoACC-style serializer over a {} ns interconnect", args.pcie_ns)?;
                for r in rows {
                    writeln!(out, "message {} ({} B): {:.0} ns", r["message"], r["wire_bytes"], r["protoacc_pcie_ser_ns"].as_f64().unwrap_or(0.0))?;
                }
            }
        }
    }
    Ok(())
}

fn load(args: &SimArgs) -> Result<Vec<MessageTrace>> {
    if let Some(path) = &args.trace {
        let bytes = std::fs::read(path).with_context(|| format!("sim: {}", path.display()))?;
        let events = optimus_trace::decode(&bytes).with_context(|| format!("sim: {}", path.display()))?;
        let name = path.display().to_string();
        return Ok(workload::accelerator_view(&name, &events, &ViewConfig::default())?);
    }
    let name = args.workload.as_deref().unwrap_or("mixed");
    Ok(vec![workload::named(&mut EngineTraces, name).context("sim")?])
}

fn reproduce(r: ReproduceArgs) -> Result<()> {
    let rows: Vec<Row> = match r.paper {
        Accel::Op => calibrate::reproduce_op(&mut EngineTraces)?.0,
        Accel::Rpcacc => calibrate::reproduce_rpcacc(&mut EngineTraces)?.0,
    };
    let out = io::stdout();
    let mut out = out.lock();
    if r.json {
        for row in &rows {
            writeln!(
                out,
                "{}",
                serde_json::json!({"id": row.id, "paper": row.paper, "model": row.model, "unit": row.unit, "deviation": row.deviation, "status": row.status, "note": row.note})
            )?;
        }
        return Ok(());
    }
    writeln!(out, "{:<58} {:>10} {:>10} {:>8}  {:<8} status", "id", "paper", "model", "dev", "unit")?;
    for row in &rows {
        let model = row.model.map_or("-".to_string(), |m| format!("{m:.3}"));
        let dev = row.deviation.map_or(String::new(), |d| format!("{:+.0}%", d * 100.0));
        let status = match row.status {
            Status::Met => "met",
            Status::Missed => "MISSED",
            Status::Input => "input",
            Status::NotTiming => "not timing",
            Status::NotModeled => "not modelled",
        };
        writeln!(out, "{:<58} {:>10} {:>10} {:>8}  {:<8} {status}", row.id, row.paper, model, dev, row.unit)?;
    }
    let met = rows.iter().filter(|x| x.status == Status::Met).count();
    let computed = rows.iter().filter(|x| matches!(x.status, Status::Met | Status::Missed)).count();
    if computed == 0 {
        bail!("sim: no target computed");
    }
    writeln!(out, "{met} of {computed} computed targets met")?;
    Ok(())
}
