//! `optimus sim --accel dagger` and `optimus sim reproduce dagger`: the Dagger NIC model's
//! Fig. 5 settings and thread layouts, printed; the experiments, their interpretation and
//! the figures' data all come from `optimus_sim::dagger::reproduce`.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use optimus_sim::calibrate::Row;
use optimus_sim::config_file;
use optimus_sim::dagger::reproduce::{self, DaggerFigures};
use optimus_sim::dagger::DaggerConfig;

use super::{config_from, SimArgs};

/// Runs the model's Fig. 5 settings and thread layouts on `--config` and prints them.
pub(super) fn run(args: &SimArgs, out: &mut impl Write) -> Result<()> {
    if args.pipelines.is_some() || args.interleave.is_some() || args.mesh.is_some() {
        bail!("sim: --pipelines, --interleave and --mesh apply to --accel op");
    }
    if args.pcie_ns.is_some()
        || args.clock_mhz.is_some()
        || !args.acc_field.is_empty()
        || args.cores.is_some()
        || args.rate.is_some()
    {
        bail!(
            "sim: --pcie-ns, --clock-mhz, --acc-field, --cores and --rate apply to --accel rpcacc"
        );
    }
    if args.workload.is_some() || args.trace.is_some() {
        bail!("sim: --accel dagger runs optimus-rpc's 64-byte echo frames; it takes no --workload or --trace");
    }
    if !args.vary.is_empty() {
        bail!("sim: --vary is not available with --accel dagger; use --config");
    }
    let cfg: DaggerConfig = config_from(args.config.as_deref(), config_file::from_json)?;
    cfg.validate().context("sim")?;
    if args.print_config {
        writeln!(out, "{}", serde_json::to_string_pretty(&cfg)?)?;
        return Ok(());
    }
    let (_, figs) = reproduce::reproduce_dagger(&cfg).context("sim")?;
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::json!({"settings": figs.settings, "layouts": figs.layouts, "latency_load": figs.latency_load})
        )?;
        return Ok(());
    }
    print_settings(out, &figs, false)
}

/// `reproduce dagger`: the target rows and the figures (drawn into `plot` if given).
pub(super) fn reproduce_rows(
    config: Option<&Path>,
    plot: Option<&Path>,
) -> Result<(Vec<Row>, DaggerFigures)> {
    let cfg: DaggerConfig = config_from(config, config_file::from_json)?;
    let (rows, figs) = reproduce::reproduce_dagger(&cfg).context("sim reproduce")?;
    if let Some(dir) = plot {
        super::plot::spec_figures(dir, &figs.figures).context("sim: plot")?;
    }
    Ok((rows, figs))
}

/// The Fig. 5 settings (throughput, p50 and p99 at 4 Mrps) and the thread layouts, as a
/// table or (with `markdown`) Markdown.
pub(super) fn print_settings(
    out: &mut impl Write,
    figs: &DaggerFigures,
    markdown: bool,
) -> Result<()> {
    let us = |v: f64| {
        if v.is_finite() {
            format!("{v:.2}")
        } else {
            "saturated".to_string()
        }
    };
    writeln!(out)?;
    if markdown {
        writeln!(
            out,
            "| interface | throughput, Mrps | p50 at {} Mrps, µs | p99, µs |",
            reproduce::FIG5_LOAD_MRPS
        )?;
        writeln!(out, "|---|---|---|---|")?;
    } else {
        writeln!(
            out,
            "{:<14} {:>10} {:>14} {:>10}",
            "interface",
            "Mrps",
            format!("p50@{}M us", reproduce::FIG5_LOAD_MRPS),
            "p99 us"
        )?;
    }
    for s in &figs.settings {
        if markdown {
            writeln!(
                out,
                "| {} | {:.2} | {} | {} |",
                s.name,
                s.throughput_mrps,
                us(s.p50_us),
                us(s.p99_us)
            )?;
        } else {
            writeln!(
                out,
                "{:<14} {:>10.2} {:>14} {:>10}",
                s.name,
                s.throughput_mrps,
                us(s.p50_us),
                us(s.p99_us)
            )?;
        }
    }
    writeln!(out)?;
    if markdown {
        writeln!(out, "| client threads / cores (UPI B=4) | Mrps |")?;
        writeln!(out, "|---|---|")?;
    }
    for l in &figs.layouts {
        if markdown {
            writeln!(
                out,
                "| {} / {} | {:.2} |",
                l.threads, l.cores, l.throughput_mrps
            )?;
        } else {
            writeln!(
                out,
                "{} client threads on {} cores (UPI B=4): {:.2} Mrps",
                l.threads, l.cores, l.throughput_mrps
            )?;
        }
    }
    Ok(())
}
