//! `optimus sim --accel cereal` and `optimus sim reproduce cereal`: the Cereal accelerator
//! model on a trace the Java library wrote (an embedded workload or a file), and its
//! comparison with the measured Java and Kryo times.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use optimus_sim::calibrate::Row;
use optimus_sim::cereal::reproduce::{self, CerealFigures};
use optimus_sim::cereal::{self, trace, CerealConfig};
use optimus_sim::config_file;

use super::{config_from, SimArgs};

/// The embedded workload `--workload` names by default.
const DEFAULT_WORKLOAD: &str = "media-content";

/// Runs the model on `--workload` (an embedded trace's name or a trace file) or `--trace`.
pub(super) fn run(args: &SimArgs, out: &mut impl Write) -> Result<()> {
    if args.pipelines.is_some() || args.interleave.is_some() || args.mesh.is_some() {
        bail!("sim: --pipelines, --interleave and --mesh apply to --accel op");
    }
    if args.pcie_ns.is_some()
        || !args.acc_field.is_empty()
        || args.cores.is_some()
        || args.rate.is_some()
    {
        bail!("sim: --pcie-ns, --acc-field, --cores and --rate apply to --accel rpcacc");
    }
    if !args.vary.is_empty() {
        bail!("sim: --vary is not available with --accel cereal; use --config");
    }
    let mut cfg: CerealConfig = config_from(args.config.as_deref(), config_file::from_json)?;
    if let Some(mhz) = args.clock_mhz {
        cfg.clock_ghz = mhz / 1e3;
    }
    cfg.validate().context("sim")?;
    if args.print_config {
        writeln!(out, "{}", serde_json::to_string_pretty(&cfg)?)?;
        return Ok(());
    }
    let t = match (&args.trace, args.workload.as_deref()) {
        (Some(path), _) => from_file(path)?,
        (None, Some(name)) if cereal::all_workloads().any(|w| w.0 == name) => {
            cereal::workload(name)?
        }
        (None, Some(name)) if Path::new(name).is_file() => from_file(Path::new(name))?,
        (None, Some(name)) => cereal::workload(name).context("sim")?,
        (None, None) => cereal::workload(DEFAULT_WORKLOAD)?,
    };
    let r = cereal::run(&cfg, &t).context("sim")?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&r)?)?;
        return Ok(());
    }
    let objects: u64 = r.graphs.iter().map(|g| g.objects).sum();
    let refs: u64 = r.graphs.iter().map(|g| g.refs).sum();
    let bytes: u64 = r.graphs.iter().map(|g| g.frame_bytes).sum();
    writeln!(
        out,
        "Cereal at {} GHz on {} ({} graphs, {objects} objects, {refs} references, {bytes} frame bytes)",
        cfg.clock_ghz,
        r.workload,
        r.graphs.len()
    )?;
    writeln!(out, "ser_ns                    {:.1}", r.ser_ns)?;
    writeln!(out, "deser_ns                  {:.1}", r.deser_ns)?;
    writeln!(out, "ser_gbytes_s              {:.3}", r.ser_gbytes_s)?;
    writeln!(out, "deser_gbytes_s            {:.3}", r.deser_gbytes_s)?;
    if let Some(m) = reproduce::measured()?
        .into_iter()
        .chain(reproduce::spark_measured()?)
        .find(|m| m.name == r.workload)
    {
        for (name, t) in [
            ("java", m.java),
            ("kryo", m.kryo),
            ("cereal_sw", m.cereal_sw),
        ] {
            writeln!(
                out,
                "measured {name:<10} S {:>9.2} us  D {:>9.2} us  (model S {:.1}x, D {:.1}x faster)",
                t.ser_us,
                t.deser_us,
                t.ser_us * 1e3 / r.ser_ns,
                t.deser_us * 1e3 / r.deser_ns
            )?;
        }
    }
    for (k, v) in &r.stats.0 {
        writeln!(out, "{k:<32} {v}")?;
    }
    Ok(())
}

fn from_file(path: &Path) -> Result<trace::Trace> {
    let name = path.display().to_string();
    let len = std::fs::metadata(path)
        .with_context(|| format!("sim: {name}"))?
        .len();
    if len > trace::MAX_TRACE_BYTES as u64 {
        bail!(
            "sim: {name}: {len} bytes is over the trace limit of {}",
            trace::MAX_TRACE_BYTES
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("sim: {name}"))?;
    trace::parse(&name, &bytes).context("sim")
}

/// `reproduce cereal`: the target rows and the per-graph figures.
pub(super) fn reproduce_rows(
    config: Option<&Path>,
    plot: Option<&Path>,
) -> Result<(Vec<Row>, CerealFigures)> {
    let cfg: CerealConfig = config_from(config, config_file::from_json)?;
    let (rows, figs) = reproduce::reproduce_cereal(&cfg).context("sim reproduce")?;
    if let Some(dir) = plot {
        super::plot::spec_figures(dir, &reproduce::figures(&rows, &figs)).context("sim: plot")?;
    }
    Ok((rows, figs))
}

/// The tables of `reproduce cereal` (Markdown with `markdown`): per Spark job's record stream
/// (the targets' workloads), then per benchmark graph, each with its geomeans; then the Amdahl
/// step.
pub(super) fn print_graphs(
    out: &mut impl Write,
    figs: &CerealFigures,
    markdown: bool,
) -> Result<()> {
    let sep = if markdown { "\n" } else { "" };
    table(out, "Spark job (stream)", &figs.spark, markdown)?;
    writeln!(
        out,
        "{sep}geomean S+D speedup on the Spark jobs' record streams: {:.2}x over Java, {:.2}x over Kryo{sep}",
        figs.spark_vs_java, figs.spark_vs_kryo
    )?;
    table(out, "graph", &figs.graphs, markdown)?;
    writeln!(
        out,
        "{sep}geomean S+D speedup on the benchmark graphs: {:.2}x over Java, {:.2}x over Kryo{sep}",
        figs.vs_java, figs.vs_kryo
    )?;
    for (share, job) in &figs.job_vs_kryo {
        writeln!(
            out,
            "Amdahl: with S/D {:.1} % of job time under Kryo, the job is {job:.2}x faster{sep}",
            share * 100.0
        )?;
    }
    Ok(())
}

fn table(
    out: &mut impl Write,
    what: &str,
    comps: &[reproduce::Comparison],
    markdown: bool,
) -> Result<()> {
    writeln!(out)?;
    if markdown {
        writeln!(out, "| {what} | model S / D µs | Java S / D µs | Kryo S / D µs | software Cereal S / D µs | model vs Java (S+D) | model vs Kryo (S+D) |")?;
        writeln!(out, "|---|---|---|---|---|---|---|")?;
    } else {
        writeln!(
            out,
            "{:<18} {:>17} {:>17} {:>17} {:>17} {:>8} {:>8}",
            what.split(' ').next().unwrap_or(what),
            "model S/D us",
            "java S/D us",
            "kryo S/D us",
            "sw cereal S/D us",
            "vs java",
            "vs kryo"
        )?;
    }
    let pair = |t: reproduce::Times| format!("{:.2} / {:.2}", t.ser_us, t.deser_us);
    for g in comps {
        if markdown {
            writeln!(
                out,
                "| {} | {} | {} | {} | {} | {:.2}x | {:.2}x |",
                g.workload,
                pair(g.model),
                pair(g.java),
                pair(g.kryo),
                pair(g.cereal_sw),
                g.vs_java(),
                g.vs_kryo()
            )?;
        } else {
            writeln!(
                out,
                "{:<18} {:>17} {:>17} {:>17} {:>17} {:>7.2}x {:>7.2}x",
                g.workload,
                pair(g.model),
                pair(g.java),
                pair(g.kryo),
                pair(g.cereal_sw),
                g.vs_java(),
                g.vs_kryo()
            )?;
        }
    }
    Ok(())
}
