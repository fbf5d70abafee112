//! `optimus sim`: run the Optimus Prime, RPCAcc, Cereal or Dagger timing model on a workload
//! or trace file, or reproduce the papers' results (`optimus sim reproduce
//! op|rpcacc|cereal|dagger`).
//!
//! The model crate never calls the engine: this command is the glue that records the engine's
//! traces (`optimus-core`'s [`EngineTraces`]) and hands them to it.

use std::io::{self, Write};
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use optimus_core::binary::EngineTraces;
use optimus_sim::calibrate::{self, Row, Status};
use optimus_sim::config_file;
use optimus_sim::op::{self, OpConfig};
use optimus_sim::parallel;
use optimus_sim::rpcacc::image_service::{self, checked_cores, checked_rate, ServiceDesign};
use optimus_sim::rpcacc::{gateway, report, RpcAccConfig, RpcMessage};
use optimus_sim::settings::{Model, RunKind, RunSettings};
use optimus_sim::sweep as outcomes;
use optimus_sim::workload::{self, MessageTrace, ViewConfig};
use optimus_sim::SimError;

use crate::trace_cmd::read_at_most;

mod cereal;
mod dagger;
mod plot;
mod sweep;

/// Which accelerator to model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Accel {
    /// Optimus Prime, on-chip (ASPLOS'20).
    Op,
    /// RPCAcc, PCIe-attached.
    Rpcacc,
    /// Cereal (ISCA'20), object-graph S/D, on traces of the Java library (`--workload` names
    /// an embedded trace, media-content by default, or a trace file).
    Cereal,
    /// Dagger (IEEE CAL 2020), the FPGA RPC NIC over UPI, on optimus-rpc's 64-byte echo
    /// frames: every CPU–NIC interface and batch of Fig. 5 (`--config` sets its parameters).
    Dagger,
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
    /// Transformation pipelines n of OP{n,j} [default: 1, or the config file's].
    #[arg(long)]
    pipelines: Option<u32>,
    /// Time-sharing degree j of OP{n,j}: messages per Reader [default: 1, or the config
    /// file's].
    #[arg(long)]
    interleave: Option<u32>,
    /// Mesh of the simulated server [default: 4x4, or the config file's].
    #[arg(long, value_enum)]
    mesh: Option<MeshSize>,
    /// PCIe round-trip latency in ns for RPCAcc; the MMIO doorbell, which crosses it one way,
    /// becomes half of it (`mmio_ns`) [default: 1250, or the config file's].
    #[arg(long = "pcie-ns")]
    pcie_ns: Option<f64>,
    /// RPCAcc's accelerator clock in MHz [default: 250, or the config file's].
    #[arg(long = "clock-mhz")]
    clock_mhz: Option<f64>,
    /// Every model parameter as JSON (the accelerator's config struct, `OpConfig` or
    /// `RpcAccConfig`; fields left out keep the paper's values, unknown fields are errors).
    /// The flags above override it. `--print-config` writes a complete one to start from.
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// Print the configuration the run would use, as JSON, and exit.
    #[arg(long)]
    print_config: bool,
    /// Embedded workload: flat, mixed, nested, hpb (the HyperProtoBench suite) or
    /// socialnet (DeathStarBench messages); OP serializes, RPCAcc runs both directions;
    /// NAME-ser or NAME-deser for one direction [default: mixed]. With `--accel rpcacc`,
    /// `image-service` runs RPCAcc §IV-H's image-compression service on its three designs
    /// instead (see `--cores` and `--rate`), and `gateway` §II-C's cloud gateway under
    /// every placement of its packet's fields.
    #[arg(long, value_name = "NAME", conflicts_with = "trace")]
    workload: Option<String>,
    /// A trace file written by `optimus trace`.
    #[arg(long, value_name = "FILE")]
    trace: Option<std::path::PathBuf>,
    /// With `--trace`: how much, in MiB, the file's messages may read and write as the model
    /// counts them (each event at least 256 bytes, each message at least 4 KiB), one message
    /// at most a quarter of it; the file itself may be a sixteenth of it. The models keep
    /// about half of it at the limits [default: 1024].
    #[arg(long = "max-trace-mib", value_name = "MIB", requires = "trace",
          value_parser = clap::value_parser!(u64).range(1..=MAX_TRACE_MIB))]
    max_trace_mib: Option<u64>,
    /// RPCAcc's "Acc" label: place this field's data in the card's memory (repeatable;
    /// `full.message.Name.field`, a string, bytes, repeated, map or message field of a
    /// workload of one schema). A trace file carries the labels it was recorded with
    /// (`optimus trace --acc-field`).
    #[arg(long = "acc-field", value_name = "FIELD", conflicts_with = "trace")]
    acc_field: Vec<String>,
    /// `--workload image-service`: host cores serving requests [default: 1].
    #[arg(long)]
    cores: Option<u32>,
    /// `--workload image-service`: also run a Poisson stream of this many requests per
    /// second (1e-9 to 1e12), and give each design's offered utilisation (rho) and average
    /// and 99th-percentile latency under it.
    #[arg(long, value_name = "PER_S", value_parser = given_number)]
    rate: Option<GivenNumber>,
    /// Print one JSON document instead of a table (with `--vary`, one line per point:
    /// `{"point": {PATH: value, ...}, "report": ...}`).
    #[arg(long)]
    json: bool,
    /// Run the model once per value of a parameter and print a row per run and design:
    /// PATH is the parameter's place in the configuration as `--print-config` writes it
    /// (`pipelines`, `noc.hop_cycles`, `pcie.latency_ns`, `service.avatar_bytes`; `pcie-ns`
    /// moves the round trip and the MMIO together, as the flag does), VALUES a
    /// comma-separated list of numbers, `true`/`false` and integer ranges `LO..HI`
    /// (`pipelines=1..8,12,16`); the image service also takes `rate` and `cores`. Repeat it
    /// to run every combination; a varied parameter overrides the flags and the config file.
    #[arg(long, value_name = "PATH=VALUES")]
    vary: Vec<String>,
    /// With `--vary`: also draw one number of the results against the first varied parameter,
    /// a curve per design and per value of the other varied parameters, into DIR as
    /// `sweep.png` and `sweep.svg`.
    #[arg(long, value_name = "DIR", requires = "vary")]
    plot: Option<std::path::PathBuf>,
    /// With `--vary`: points run at once, each on a thread of its own; the output is the same
    /// for any number [default: the machine's cores].
    #[arg(long, value_name = "N", requires = "vary",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    jobs: Option<u32>,
    /// With `--plot`: the number drawn, a column of the table (`throughput_gbps`,
    /// `latency_ns`, `gbps`, `requests_per_s`, ...) [default: the first].
    #[arg(long, requires = "plot")]
    metric: Option<String>,
}

/// A number as given on the command line: its value and its text.
#[derive(Clone, Debug)]
struct GivenNumber {
    value: f64,
    text: String,
}

/// Reads a [`GivenNumber`].
fn given_number(text: &str) -> Result<GivenNumber, std::num::ParseFloatError> {
    Ok(GivenNumber {
        value: text.parse()?,
        text: text.to_owned(),
    })
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
    /// The calibration table of docs/simulator.md: a Markdown heading and one row per target.
    #[arg(long, conflicts_with = "json")]
    markdown: bool,
    /// Also draw the paper's figures into DIR, as PNG and SVG, with the paper's points
    /// overlaid [default: no figures].
    #[arg(long, value_name = "DIR")]
    plot: Option<std::path::PathBuf>,
    /// Run the experiments with these parameters (JSON over the defaults, as `optimus sim
    /// --config`; the software baseline's costs are its `cpu`, e.g. `{"cpu":
    /// {"per_submessage": 120}}`); each experiment still sets its own pipelines, time-sharing
    /// degree, mesh, PCIe latency or clock.
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
}

/// Runs `optimus sim`.
///
/// # Errors
/// Bad arguments, unreadable trace file, invalid configuration, or a closed stdout.
pub fn run_sim(args: SimArgs) -> Result<()> {
    if let Some(SimCommand::Reproduce(r)) = args.reproduce {
        return reproduce(r);
    }
    if args.accel == Accel::Cereal {
        return cereal::run(&args, &mut io::stdout().lock());
    }
    if args.accel == Accel::Dagger {
        return dagger::run(&args, &mut io::stdout().lock());
    }
    let settings = RunSettings {
        model: if args.accel == Accel::Op {
            Model::Op
        } else {
            Model::RpcAcc
        },
        workload: workload_name(&args),
        op_params: args.pipelines.is_some() || args.interleave.is_some() || args.mesh.is_some(),
        rpcacc_params: args.pcie_ns.is_some() || args.clock_mhz.is_some(),
        acc_fields: !args.acc_field.is_empty(),
        service_params: args.cores.is_some() || args.rate.is_some(),
        print_config: args.print_config,
    };
    let (kind, axes) = settings.check(&args.vary).context("sim")?;
    let (image_service, gateway) = (kind == RunKind::ImageService, kind == RunKind::Gateway);
    let options = sweep::SweepOptions {
        axes: &axes,
        json: args.json,
        plot: args
            .plot
            .as_deref()
            .map(|dir| (dir, args.metric.as_deref())),
        jobs: args.jobs.map_or_else(parallel::cores, |n| n as usize),
    };
    let out = io::stdout();
    let mut out = out.lock();
    match args.accel {
        Accel::Op => {
            let mut cfg: OpConfig = config_from(args.config.as_deref(), config_file::from_json)?;
            cfg.pipelines = args.pipelines.unwrap_or(cfg.pipelines);
            cfg.interleave = args.interleave.unwrap_or(cfg.interleave);
            if let Some(m) = args.mesh {
                cfg.noc.mesh = match m {
                    MeshSize::M4x4 => 4,
                    MeshSize::M8x8 => 8,
                };
            }
            cfg.validate().context("sim")?;
            if args.print_config {
                writeln!(out, "{}", serde_json::to_string_pretty(&cfg)?)?;
                return Ok(());
            }
            let traces = load(&args)?;
            let run = |cfg: &OpConfig| {
                op::run(cfg, &traces).map_err(|e| model_error(args.trace.as_deref(), e))
            };
            if !axes.is_empty() {
                return sweep::sweep(
                    &mut out,
                    &options,
                    outcomes::OP_COLUMNS,
                    |values| validated(config_file::with_values(&cfg, values), OpConfig::validate),
                    |cfg| Ok(outcomes::op_outcome(&run(&cfg)?)?),
                );
            }
            let r = run(&cfg).context("sim")?;
            if args.json {
                writeln!(out, "{}", serde_json::to_string(&r)?)?;
            } else {
                print_op(&mut out, &cfg, &r)?;
            }
        }
        Accel::Rpcacc => {
            let mut cfg: RpcAccConfig =
                config_from(args.config.as_deref(), config_file::from_json)?;
            if let Some(ns) = args.pcie_ns {
                // The doorbell follows the round trip (`config_file::FOLLOWERS`).
                cfg = config_file::with_values(
                    &cfg,
                    &[("pcie.latency_ns", serde_json::Value::from(ns))],
                )
                .context("sim --pcie-ns")?;
            }
            cfg.clock_mhz = args.clock_mhz.unwrap_or(cfg.clock_mhz);
            cfg.validate().context("sim")?;
            if args.print_config {
                writeln!(out, "{}", serde_json::to_string_pretty(&cfg)?)?;
                return Ok(());
            }
            if image_service {
                return image_service_run(&mut out, &cfg, &args, &options);
            }
            if gateway {
                return gateway_run(&mut out, &cfg, &args, &options);
            }
            // A trace file's messages are the same at every point; a workload's are built
            // under each point's configuration.
            let from_trace: Option<Vec<RpcMessage>> = match &args.trace {
                Some(path) => {
                    let name = path.display().to_string();
                    Some(
                        load_trace(path, args.max_trace_mib)?
                            .into_iter()
                            .enumerate()
                            .map(|(i, t)| report::one_direction(&name, i, t))
                            .collect(),
                    )
                }
                None => None,
            };
            let labels: Vec<&str> = args.acc_field.iter().map(String::as_str).collect();
            let report_for = |cfg: &RpcAccConfig| -> Result<report::RpcAccReport> {
                cfg.validate()?;
                Ok(match &from_trace {
                    Some(messages) => report::run(cfg, messages)
                        .map_err(|e| model_error(args.trace.as_deref(), e))?,
                    None => {
                        let messages = report::workload(
                            cfg,
                            &mut EngineTraces,
                            workload_name(&args),
                            &labels,
                        )?;
                        report::run(cfg, &messages)?
                    }
                })
            };
            if !axes.is_empty() {
                return sweep::sweep(
                    &mut out,
                    &options,
                    outcomes::RPCACC_COLUMNS,
                    |values| {
                        validated(
                            config_file::with_values(&cfg, values),
                            RpcAccConfig::validate,
                        )
                    },
                    |cfg| Ok(outcomes::rpcacc_outcome(&report_for(&cfg)?)?),
                );
            }
            let r = report_for(&cfg).context("sim")?;
            if args.json {
                writeln!(out, "{}", serde_json::to_string(&r)?)?;
            } else {
                print_rpcacc(&mut out, &r)?;
            }
        }
        Accel::Cereal => return cereal::run(&args, &mut out),
        Accel::Dagger => return dagger::run(&args, &mut out),
    }
    Ok(())
}

/// The Optimus Prime report as a table: the headline figures, then the counters.
fn print_op(out: &mut impl Write, cfg: &OpConfig, r: &op::OpReport) -> Result<()> {
    writeln!(
        out,
        "OP{{{},{}}} on {} mesh",
        cfg.pipelines,
        cfg.interleave,
        format_args!("{0}x{0}", cfg.noc.mesh)
    )?;
    writeln!(out, "throughput_gbps           {:.2}", r.throughput_gbps)?;
    writeln!(out, "messages_per_s            {:.0}", r.messages_per_s)?;
    writeln!(out, "latency_ns                {:.1}", r.latency_ns)?;
    writeln!(
        out,
        "latency_with_queue_ns     {:.1}",
        r.latency_with_queue_ns
    )?;
    writeln!(
        out,
        "field_read_latency_cycles {:.1}",
        r.field_read_latency_cycles
    )?;
    writeln!(out, "amat_cycles               {:.1}", r.amat_cycles)?;
    writeln!(out, "port_gbps                 {:.1}", r.port_gbps)?;
    writeln!(
        out,
        "mesh_link_utilization     {:.3}",
        r.mesh_link_utilization
    )?;
    writeln!(out, "bound                     {}", r.bound.name())?;
    writeln!(out, "measured_cycles           {}", r.measured_cycles)?;
    // Undefined where the software has nothing to do: `-`, as an unbounded rate is.
    let or_dash = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    writeln!(
        out,
        "software_gbps             {}",
        or_dash(r.software_gbps)
    )?;
    writeln!(
        out,
        "software_latency_ns       {:.1}",
        r.software_latency_ns
    )?;
    writeln!(
        out,
        "speedup_vs_software       {}",
        or_dash(r.speedup_vs_software)
    )?;
    for (k, v) in &r.stats.0 {
        writeln!(out, "{k:<40} {v}")?;
    }
    Ok(())
}

/// `--workload image-service`: each design's costs and capacity with `--cores`, and with
/// `--rate` its latency under load, once or per point of `--vary`.
fn image_service_run(
    out: &mut impl Write,
    cfg: &RpcAccConfig,
    args: &SimArgs,
    options: &sweep::SweepOptions,
) -> Result<()> {
    let cores = checked_cores(u64::from(args.cores.unwrap_or(1))).context("sim")?;
    let rate = args
        .rate
        .as_ref()
        .map(|r| checked_rate(Some(r.value), &r.text))
        .transpose()
        .context("sim")?;
    if !options.axes.is_empty() {
        let under_load = rate.is_some() || options.axes.iter().any(|a| a.path == outcomes::RATE);
        return sweep::sweep(
            out,
            options,
            outcomes::service_columns(under_load),
            |values| {
                // `rate` and `cores` are the service's own flags; the rest are config paths.
                let (mut rate, mut cores, mut params) = (rate, cores, Vec::new());
                for (path, v) in values {
                    match *path {
                        outcomes::RATE => rate = Some(checked_rate(v.as_f64(), v)?),
                        outcomes::CORES => cores = checked_cores(v.as_u64().unwrap_or(0))?,
                        _ => params.push((*path, v.clone())),
                    }
                }
                Ok((
                    validated(
                        config_file::with_values(cfg, &params),
                        RpcAccConfig::validate,
                    )?,
                    cores,
                    rate,
                ))
            },
            |(cfg, cores, rate)| {
                let designs = service_designs(&cfg, cores, rate)?;
                Ok(outcomes::service_outcome(cores, rate, &designs)?)
            },
        );
    }
    let designs = service_designs(cfg, cores, rate).context("sim")?;
    if args.json {
        writeln!(
            out,
            "{}",
            outcomes::service_outcome(cores, rate, &designs)?.report
        )?;
    } else {
        print_image_service(out, cfg, cores, rate, &designs)?;
    }
    Ok(())
}

/// The image service's designs ([`image_service::designs`] on the engine's traces); warns on
/// stderr of a stream that loads a design near its capacity
/// ([`image_service::near_capacity`]).
fn service_designs(
    cfg: &RpcAccConfig,
    cores: u32,
    rate: Option<f64>,
) -> Result<Vec<ServiceDesign>> {
    let designs = image_service::designs(cfg, cores, rate, &mut EngineTraces)?;
    if let Some(r) = rate {
        for warning in image_service::near_capacity(cores, r, &designs) {
            eprintln!("{warning}");
        }
    }
    Ok(designs)
}

/// The image service as a table, a row per design.
fn print_image_service(
    out: &mut impl Write,
    cfg: &RpcAccConfig,
    cores: u32,
    rate: Option<f64>,
    designs: &[ServiceDesign],
) -> Result<()> {
    writeln!(
        out,
        "image-compression service (RPCAcc §IV-H), {cores} host core(s), PCIe round trip {} ns",
        cfg.pcie.latency_ns
    )?;
    if !cfg.service.avatar_mix.is_empty() {
        let sizes: Vec<String> = cfg
            .service
            .avatar_shares()
            .iter()
            .map(|(bytes, share)| format!("{bytes} B ({:.1} %)", 100.0 * share))
            .collect();
        writeln!(
            out,
            "requests' avatars: {}; per-request columns are means",
            sizes.join(", ")
        )?;
    }
    if let Some(r) = rate {
        writeln!(out, "under load: a Poisson stream of {r} requests/s")?;
    }
    let load = rate.map(|_| {
        format!(
            " {:>7}   {:>12} {:>12}",
            "rho", "load_mean_ns", "load_p99_ns"
        )
    });
    writeln!(
        out,
        "  {:<14} {:>10} {:>12} {:>16}{}  bound",
        "design",
        "host_ns",
        "latency_ns",
        "requests_per_s",
        load.unwrap_or_default()
    )?;
    for d in designs {
        let under = match (d.rho, d.under_load) {
            (None, _) => String::new(),
            (Some(rho), Some(l)) => format!(" {rho:>7.3}   {:>12.1} {:>12.1}", l.mean_ns, l.p99_ns),
            (Some(rho), None) => format!(" {rho:>7.3}   {:>25}", "past capacity"),
        };
        writeln!(
            out,
            "  {:<14} {:>10.1} {:>12.1} {:>16.0}{under}  {}",
            d.design, d.costs.host_ns, d.costs.latency_ns, d.requests_per_s, d.bound
        )?;
    }
    Ok(())
}

/// `--workload gateway`: every placement's throughput, once or per point of `--vary`.
fn gateway_run(
    out: &mut impl Write,
    cfg: &RpcAccConfig,
    args: &SimArgs,
    options: &sweep::SweepOptions,
) -> Result<()> {
    if !options.axes.is_empty() {
        return sweep::sweep(
            out,
            options,
            outcomes::GATEWAY_COLUMNS,
            |values| {
                validated(
                    config_file::with_values(cfg, values),
                    RpcAccConfig::validate,
                )
            },
            |cfg| {
                Ok(outcomes::gateway_outcome(&gateway::run(
                    &cfg,
                    &mut EngineTraces,
                )?)?)
            },
        );
    }
    let g = gateway::run(cfg, &mut EngineTraces).context("sim")?;
    if args.json {
        writeln!(out, "{}", outcomes::gateway_outcome(&g)?.report)?;
        return Ok(());
    }
    writeln!(
        out,
        "cloud gateway (RPCAcc §II-C, C3), {} B packets, {} host core(s), PCIe round trip {} ns",
        g.packet_bytes, cfg.gateway.cores, cfg.pcie.latency_ns
    )?;
    writeln!(
        out,
        "  {:<24} {:>8} {:>16} {:>12} {:>10}  bound",
        "in card memory", "gbps", "requests_per_s", "latency_ns", "host_ns"
    )?;
    for p in &g.placements {
        writeln!(
            out,
            "  {:<24} {:>8.2} {:>16.0} {:>12.1} {:>10.1}  {}",
            p.label(),
            g.gbps(p),
            p.rate(),
            p.latency_ns,
            p.host_ns,
            p.occupancy.bound().0
        )?;
    }
    writeln!(
        out,
        "best ({}) over worst ({}): {:.3}x",
        g.best().label(),
        g.worst().label(),
        g.worst_vs_best()
    )?;
    Ok(())
}

/// The RPCAcc report as a table: each design's latency and rate, then the counters.
fn print_rpcacc(out: &mut impl Write, r: &report::RpcAccReport) -> Result<()> {
    writeln!(
        out,
        "RPCAcc model, PCIe round trip {} ns, accelerator at {} MHz",
        r.pcie_ns, r.clock_mhz
    )?;
    for (what, n, runs) in [
        ("serialization", r.serialized, &r.serialization),
        ("deserialization", r.deserialized, &r.deserialization),
    ] {
        if runs.is_empty() {
            continue;
        }
        writeln!(
            out,
            "{what}, {n} message(s)\n  {:<20} {:>12} {:>16} {:>10}",
            "design", "latency_ns", "messages_per_s", "gbps"
        )?;
        // A rate the model leaves unbounded (no resource busy) shows as "-".
        let rate =
            |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
        for d in runs {
            writeln!(
                out,
                "  {:<20} {:>12.1} {:>16} {:>10}",
                d.design,
                d.latency_ns,
                rate(d.messages_per_s, 0),
                rate(d.gbps, 2)
            )?;
        }
    }
    for (k, v) in &r.stats.0 {
        writeln!(out, "{k:<40} {v:.0}")?;
    }
    Ok(())
}

/// Reads a `--config` file with `parse` (over the model's defaults: [`config_file::from_json`]),
/// or gives the defaults without one.
fn config_from<T: Default>(
    path: Option<&std::path::Path>,
    parse: fn(&str) -> optimus_sim::Result<T>,
) -> Result<T> {
    let Some(path) = path else {
        return Ok(T::default());
    };
    let text = std::fs::read_to_string(path).with_context(|| format!("sim: {}", path.display()))?;
    parse(&text).with_context(|| format!("sim: {}", path.display()))
}

/// A sweep point's configuration, `cfg` (the base with the point's values, from
/// [`config_file::with_values`]), checked by `validate` before anything runs.
fn validated<T>(
    cfg: optimus_sim::Result<T>,
    validate: fn(&T) -> optimus_sim::Result<()>,
) -> Result<T> {
    let cfg = cfg?;
    validate(&cfg)?;
    Ok(cfg)
}

/// A model's error on a run, naming the `--trace` file where there is one rather than the
/// model's own name for its messages (`workload op: ...`).
fn model_error(trace: Option<&Path>, e: SimError) -> anyhow::Error {
    match (trace, e) {
        (Some(path), SimError::Workload { why, .. }) => anyhow!("{}: {why}", path.display()),
        (_, e) => e.into(),
    }
}

fn workload_name(args: &SimArgs) -> &str {
    args.workload.as_deref().unwrap_or("mixed")
}

/// Default of `--max-trace-mib`: the view's own limits ([`ViewConfig::default`]).
const DEFAULT_TRACE_MIB: u64 = 1024;

/// Largest `--max-trace-mib`: 1 TiB.
const MAX_TRACE_MIB: u64 = 1 << 20;

/// Bytes of a `--trace` file `optimus sim` reads for each event the view takes
/// ([`ViewConfig::max_events`]), where the engine's traces take about 4: at the default
/// limits, 64 MiB of file.
const TRACE_FILE_BYTES_PER_EVENT: u64 = 16;

/// Reads, decodes and views a `--trace` file under the limits of `--max-trace-mib`,
/// refusing a file larger than [`TRACE_FILE_BYTES_PER_EVENT`] per event the view takes, or
/// of more events than it takes, before keeping them. A refusal says how to raise the limits.
fn load_trace(path: &Path, max_trace_mib: Option<u64>) -> Result<Vec<MessageTrace>> {
    let name = path.display().to_string();
    let mib = max_trace_mib.unwrap_or(DEFAULT_TRACE_MIB);
    let view = ViewConfig::with_workload_limit(mib << 20);
    let raise = format!("; `--max-trace-mib` raises the limits (now {mib})");
    let file = std::fs::File::open(path).with_context(|| format!("sim: {name}"))?;
    let file_limit = (view.max_events() as u64).saturating_mul(TRACE_FILE_BYTES_PER_EVENT);
    let bytes = read_at_most(file, file_limit, &name).map_err(|e| anyhow!("sim: {e}{raise}"))?;
    let events = optimus_trace::decode_limited(&bytes, view.max_events()).map_err(|e| {
        // A file of another version holds the same messages: recording them again reads.
        let hint = match e {
            optimus_trace::TraceError::Version { .. } => {
                "; record it again with this version's `optimus trace`"
            }
            optimus_trace::TraceError::TooManyEvents { .. } => &raise,
            _ => "",
        };
        anyhow!("sim: {name}: {e}{hint}")
    })?;
    workload::accelerator_view(&name, &events, &view).map_err(|e| match e {
        SimError::OverLimit { .. } => anyhow!("sim: {e}{raise}"),
        e => anyhow::Error::from(e).context("sim"),
    })
}

fn load(args: &SimArgs) -> Result<Vec<MessageTrace>> {
    if let Some(path) = &args.trace {
        return load_trace(path, args.max_trace_mib);
    }
    workload::named(&mut EngineTraces, workload_name(args), workload::SUITE_SEED).context("sim")
}

fn reproduce(r: ReproduceArgs) -> Result<()> {
    // The reproduction takes a while: a --plot folder that cannot be written is refused first.
    if let Some(dir) = &r.plot {
        plot::check_dir(dir).context("sim: plot")?;
    }
    let mut cereal_figs = None;
    let mut dagger_figs = None;
    let rows: Vec<Row> = match r.paper {
        Accel::Op => {
            let params: OpConfig = config_from(r.config.as_deref(), config_file::from_json)?;
            let (rows, figs) = calibrate::reproduce_op_with(&params, &mut EngineTraces)
                .context("sim reproduce")?;
            if let Some(dir) = &r.plot {
                plot::spec_figures(dir, &calibrate::op_figures(&rows, &figs))
                    .context("sim: plot")?;
            }
            rows
        }
        Accel::Rpcacc => {
            let params: RpcAccConfig = config_from(r.config.as_deref(), config_file::from_json)?;
            let (rows, figs) = calibrate::reproduce_rpcacc_with(&params, &mut EngineTraces)
                .context("sim reproduce")?;
            if let Some(dir) = &r.plot {
                plot::spec_figures(dir, &calibrate::rpcacc_figures(&rows, &figs))
                    .context("sim: plot")?;
            }
            rows
        }
        Accel::Cereal => {
            let (rows, figs) = cereal::reproduce_rows(r.config.as_deref(), r.plot.as_deref())?;
            cereal_figs = Some(figs);
            rows
        }
        Accel::Dagger => {
            let (rows, figs) = dagger::reproduce_rows(r.config.as_deref(), r.plot.as_deref())?;
            dagger_figs = Some(figs);
            rows
        }
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
    if r.markdown {
        markdown(&mut out, r.paper, &rows)?;
        if let Some(figs) = &cereal_figs {
            cereal::print_graphs(&mut out, figs, true)?;
        }
        if let Some(figs) = &dagger_figs {
            dagger::print_settings(&mut out, figs, true)?;
        }
        return Ok(());
    }
    writeln!(
        out,
        "{:<58} {:>10} {:>10} {:>8}  {:<8} status",
        "id", "paper", "model", "dev", "unit"
    )?;
    for row in &rows {
        let model = row.model.map_or("-".to_string(), |m| format!("{m:.3}"));
        let dev = row
            .deviation
            .map_or(String::new(), |d| format!("{:+.0}%", d * 100.0));
        let status = match row.status {
            Status::Met => "met",
            Status::Missed => "MISSED",
            Status::Input => "input",
            Status::NotTiming => "not timing",
            Status::NotModeled => "not modelled",
        };
        writeln!(
            out,
            "{:<58} {:>10} {:>10} {:>8}  {:<8} {status}",
            row.id, row.paper, model, dev, row.unit
        )?;
    }
    let met = rows.iter().filter(|x| x.status == Status::Met).count();
    let computed = rows
        .iter()
        .filter(|x| matches!(x.status, Status::Met | Status::Missed))
        .count();
    if computed == 0 {
        bail!("sim: no target computed");
    }
    writeln!(out, "{met} of {computed} computed targets met")?;
    if let Some(figs) = &cereal_figs {
        cereal::print_graphs(&mut out, figs, false)?;
    }
    if let Some(figs) = &dagger_figs {
        dagger::print_settings(&mut out, figs, false)?;
    }
    Ok(())
}

/// Writes `rows` as the calibration table of docs/simulator.md.
fn markdown(out: &mut impl Write, paper: Accel, rows: &[Row]) -> Result<()> {
    let count = |f: &dyn Fn(Status) -> bool| rows.iter().filter(|x| f(x.status)).count();
    let met = count(&|s| s == Status::Met);
    let computed = count(&|s| matches!(s, Status::Met | Status::Missed));
    let not_modelled = count(&|s| s == Status::NotModeled);
    // Inputs and synthesis results are not timing targets the model answers for.
    let timing = computed + not_modelled;
    let name = match paper {
        Accel::Op => "Optimus Prime",
        Accel::Rpcacc => "RPCAcc",
        Accel::Cereal => "Cereal",
        Accel::Dagger => "Dagger",
    };
    writeln!(
        out,
        "### {name}: {met} of {computed} computed targets met \
         ({timing} timing targets; {not_modelled} not modelled)\n"
    )?;
    writeln!(out, "| id | paper | model | deviation | status |")?;
    writeln!(out, "|---|---|---|---|---|")?;
    for row in rows {
        let model = row.model.map_or("—".to_string(), |m| format!("{m:.3}"));
        let dev = row
            .deviation
            .map_or(String::new(), |d| format!("{:+.0} %", d * 100.0));
        let status = match row.status {
            Status::Met => "Met",
            Status::Missed => "Missed",
            Status::Input => "Input",
            Status::NotTiming => "NotTiming",
            Status::NotModeled => "NotModeled",
        };
        writeln!(
            out,
            "| `{}` | {} {} | {model} | {dev} | {status} — {} |",
            row.id, row.paper, row.unit, row.note
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_rate_is_echoed_as_written() {
        let given = given_number("2.0e12").unwrap();
        let err = checked_rate(Some(given.value), &given.text).unwrap_err();
        assert!(err.to_string().ends_with(", not 2.0e12"), "{err}");
        assert!(given_number("fast").is_err());
    }

    #[test]
    fn a_model_error_on_a_trace_names_the_file() {
        let workload = || SimError::Workload {
            name: "op".into(),
            why: "no message completed".into(),
        };
        let path = Path::new("big.trace");
        assert_eq!(
            model_error(Some(path), workload()).to_string(),
            "big.trace: no message completed"
        );
        assert_eq!(
            model_error(None, workload()).to_string(),
            "workload op: no message completed"
        );
    }
}
