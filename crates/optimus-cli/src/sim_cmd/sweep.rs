//! `optimus sim --vary`: prints what [`optimus_sim::sweep`] computes (a table, or a JSON line
//! per point) and draws its curve figure.

use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use serde_json::Value;

use optimus_sim::sweep::{Axis, Column, Outcome, Sweep, SweepError};

use super::plot;

/// The options of a sweep that do not depend on the model.
pub struct SweepOptions<'a> {
    pub axes: &'a [Axis],
    pub json: bool,
    /// Where to draw `sweep.png` and `sweep.svg`, and which metric (default: the first).
    pub plot: Option<(&'a Path, Option<&'a str>)>,
    /// Points run at once, each on a thread of its own (at least 1).
    pub jobs: usize,
}

/// Runs a sweep ([`Sweep::run`]) and prints its results: a table of `columns`, or with
/// `--json` a line per point; with `--plot`, draws the figure.
///
/// # Errors
/// As [`Sweep::run`] (a point's error under `sim --vary POINT`), a plot that cannot be
/// drawn, or a closed output.
pub fn sweep<P: Send>(
    out: &mut impl Write,
    options: &SweepOptions,
    columns: &[Column],
    prepare: impl FnMut(&[(&str, Value)]) -> Result<P>,
    run: impl Fn(P) -> Result<Outcome> + Sync,
) -> Result<()> {
    let sweep = Sweep {
        axes: options.axes,
        columns,
        plot_metric: options.plot.map(|(_, metric)| metric),
        jobs: options.jobs,
    };
    let results = sweep.run(prepare, run).map_err(|e| match e {
        SweepError::Point { point, error } => error.context(format!("sim --vary {point}")),
        e @ SweepError::Values { .. } => anyhow!("sim {e}"),
        SweepError::Options(e) => e.into(),
    })?;
    if options.json {
        for line in results.json_lines() {
            writeln!(out, "{line}")?;
        }
    } else {
        write!(out, "{}", results.table())?;
    }
    if let (Some((dir, _)), Some(figure)) = (options.plot, results.plot()) {
        plot::sweep_figure(dir, &figure).context("sim: plot")?;
    }
    Ok(())
}
