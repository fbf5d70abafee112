//! Design-space sweeps: a model run once per point of a grid of parameter values, each run's
//! headline numbers tabulated (a row per point and design), written as one JSON line per
//! point, or drawn as curves of one number against the first varied parameter.
//!
//! `optimus sim --vary` is this module with a terminal: it parses the flags, hands
//! [`Sweep::run`] a `prepare` (a point's values into a model's configuration, through
//! [`crate::config_file::with_values`]) and a `run` (the model, then its `*_outcome`), and
//! prints [`SweepResults::table`] or [`SweepResults::json_lines`] and draws
//! [`SweepResults::plot`].

use serde_json::Value;

use crate::op::OpReport;
use crate::parallel;
use crate::rpcacc::gateway::Gateway;
use crate::rpcacc::image_service::ServiceDesign;
use crate::rpcacc::report::RpcAccReport;
use crate::SimError;

/// Runs a sweep may take: a grid larger than this is refused before anything runs.
pub const MAX_POINTS: usize = 4096;

/// Values a range `LO..HI` may expand to.
const MAX_RANGE_VALUES: u64 = 1024;

/// The name `--vary` takes for the PCIe round trip, moved with the MMIO (half of it) as the
/// `--pcie-ns` flag moves it.
pub const PCIE_NS: &str = "pcie-ns";

/// The names `--vary` takes for the image service's `--rate` and `--cores`, which are not
/// model parameters; the service's run reads them from the point's values.
pub const RATE: &str = "rate";
/// See [`RATE`].
pub const CORES: &str = "cores";

/// A sweep's failure. `E` is the error of the caller's `prepare` and `run`.
#[derive(Debug, thiserror::Error)]
pub enum SweepError<E: std::fmt::Debug + std::fmt::Display> {
    /// The grid or an option is bad; no point was prepared.
    #[error("{0}")]
    Options(SimError),
    /// A point's value is not what its parameter takes; no point ran.
    #[error("--vary {point}: {error}")]
    Values {
        /// The point, `path=value ...` as the axes were written.
        point: String,
        /// What is wrong.
        error: SimError,
    },
    /// A point could not be prepared or run: the first in the grid's order.
    #[error("--vary {point}: {error}")]
    Point {
        /// The point, `path=value ...` as the axes were written.
        point: String,
        /// The caller's error.
        error: E,
    },
}

fn options_error<E: std::fmt::Debug + std::fmt::Display>(why: String) -> SweepError<E> {
    SweepError::Options(SimError::Param(why))
}

/// One `--vary PATH=VALUES`: a parameter and the values it takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Dot-separated path into the model's configuration, as `--print-config` writes it, or
    /// one of the flags [`PCIE_NS`], [`RATE`] and [`CORES`].
    pub path: String,
    /// Values in the order given.
    pub values: Vec<Value>,
}

/// Reads `PATH=VALUES`: VALUES is a comma-separated list of JSON scalars (numbers, `true`,
/// `false`, quoted strings) and inclusive integer ranges `LO..HI`.
///
/// # Errors
/// [`SimError::Param`] for a missing `=`, an empty path or list, a value that is not a
/// scalar, or a range that is empty, not of integers, or longer than 1024 values.
pub fn parse_axis(arg: &str) -> Result<Axis, SimError> {
    let bad = |why: String| SimError::Param(format!("--vary {arg}: {why}"));
    let (path, list) = arg
        .split_once('=')
        .ok_or_else(|| bad("expected PATH=VALUES, e.g. pipelines=1..8".into()))?;
    let path = path.trim();
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(bad(
            "the parameter path is empty or has an empty part".into()
        ));
    }
    let mut values = Vec::new();
    for item in list.split(',').map(str::trim) {
        if let Some((lo, hi)) = item.split_once("..") {
            let (lo, hi): (i64, i64) = match (lo.trim().parse(), hi.trim().parse()) {
                (Ok(lo), Ok(hi)) => (lo, hi),
                _ => return Err(bad(format!("a range `{item}` takes integers, LO..HI"))),
            };
            if hi < lo || hi.abs_diff(lo) >= MAX_RANGE_VALUES {
                return Err(bad(format!(
                    "the range `{item}` must run upwards over at most {MAX_RANGE_VALUES} values"
                )));
            }
            values.extend((lo..=hi).map(Value::from));
            continue;
        }
        let v: Value = serde_json::from_str(item).map_err(|e| {
            bad(format!(
                "`{item}` is not a number, true, false or a quoted string: {e}"
            ))
        })?;
        if v.is_array() || v.is_object() || v.is_null() {
            return Err(bad(format!("`{item}` is not a single value")));
        }
        values.push(v);
    }
    Ok(Axis {
        path: path.to_string(),
        values,
    })
}

/// Every combination of the axes' values, the first axis varying slowest.
///
/// # Errors
/// [`SimError::Param`] for more than [`MAX_POINTS`] combinations.
pub fn grid(axes: &[Axis]) -> Result<Vec<Vec<&Value>>, SimError> {
    let count = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
        .filter(|&n| n <= MAX_POINTS)
        .ok_or_else(|| {
            SimError::Param(format!(
                "--vary: the grid has more than {MAX_POINTS} points"
            ))
        })?;
    let mut points: Vec<Vec<&Value>> = Vec::with_capacity(count);
    points.push(Vec::new());
    for axis in axes {
        points = points
            .iter()
            .flat_map(|p| {
                axis.values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push(v);
                    q
                })
            })
            .collect();
    }
    Ok(points)
}

/// One headline number of a model's runs: its name and the decimals it is printed with.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// Its name, a key of the run's report.
    pub name: &'static str,
    /// Decimals in the table.
    pub digits: usize,
}

impl Column {
    /// A column `name` printed with `digits` decimals.
    pub const fn new(name: &'static str, digits: usize) -> Self {
        Self { name, digits }
    }
}

/// A run's headline numbers for one design, one per column of its model (an empty label for
/// Optimus Prime's one design); `None` where the model sets no value (an unbounded rate, a
/// load past capacity). `bound`: what holds the design's rate back, where the model says.
#[derive(Debug, Clone)]
pub struct Headline {
    /// The design.
    pub label: String,
    /// A value per column.
    pub values: Vec<Option<f64>>,
    /// What bounds the design's rate.
    pub bound: Option<&'static str>,
}

/// One run: its whole report as JSON and its headline rows.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The run's report, as `--json` prints it.
    pub report: Value,
    /// A row per design.
    pub rows: Vec<Headline>,
}

/// Optimus Prime's headline columns, as [`op_outcome`] fills them.
pub const OP_COLUMNS: &[Column] = &[
    Column::new("throughput_gbps", 2),
    Column::new("messages_per_s", 0),
    Column::new("latency_ns", 1),
    Column::new("field_read_cycles", 1),
    Column::new("amat_cycles", 1),
    Column::new("port_gbps", 1),
    Column::new("link_utilization", 3),
    Column::new("speedup_vs_software", 2),
];

/// Optimus Prime's headline: throughput, latency, the memory system's figures and the speedup
/// over one core of software.
///
/// # Errors
/// [`SimError::Json`] if the report does not serialize.
pub fn op_outcome(r: &OpReport) -> Result<Outcome, SimError> {
    Ok(Outcome {
        report: serde_json::to_value(r)?,
        rows: vec![Headline {
            label: String::new(),
            bound: Some(r.bound.name()),
            values: vec![
                Some(r.throughput_gbps),
                Some(r.messages_per_s),
                Some(r.latency_ns),
                Some(r.field_read_latency_cycles),
                Some(r.amat_cycles),
                Some(r.port_gbps),
                Some(r.mesh_link_utilization),
                r.speedup_vs_software,
            ],
        }],
    })
}

/// RPCAcc's headline columns, as [`rpcacc_outcome`] fills them.
pub const RPCACC_COLUMNS: &[Column] = &[
    Column::new("latency_ns", 1),
    Column::new("messages_per_s", 0),
    Column::new("gbps", 2),
];

/// RPCAcc's headline: per direction and design (`ser/rpcacc`), latency and rate.
///
/// # Errors
/// [`SimError::Json`] if the report does not serialize.
pub fn rpcacc_outcome(r: &RpcAccReport) -> Result<Outcome, SimError> {
    let rows = [("ser", &r.serialization), ("deser", &r.deserialization)]
        .into_iter()
        .flat_map(|(direction, runs)| {
            runs.iter().map(move |d| Headline {
                label: format!("{direction}/{}", d.design),
                values: vec![Some(d.latency_ns), d.messages_per_s, d.gbps],
                bound: None,
            })
        })
        .collect();
    Ok(Outcome {
        report: serde_json::to_value(r)?,
        rows,
    })
}

/// The image service's headline columns, as [`service_outcome`] fills them; the last three,
/// the offered utilisation and the latency under load, only with a rate.
pub const SERVICE_COLUMNS: &[Column] = &[
    Column::new("host_ns", 1),
    Column::new("latency_ns", 1),
    Column::new("requests_per_s", 0),
    Column::new("rho", 3),
    Column::new("load_mean_ns", 1),
    Column::new("load_p99_ns", 1),
];

/// [`SERVICE_COLUMNS`], with the load's or without.
pub fn service_columns(under_load: bool) -> &'static [Column] {
    if under_load {
        SERVICE_COLUMNS
    } else {
        &SERVICE_COLUMNS[..3]
    }
}

/// The image service's JSON document (each design's own fields, `service::Design`, with its
/// name, rate, bound, offered utilisation and load) and its headline rows.
///
/// # Errors
/// [`SimError::Json`] if a design does not serialize.
pub fn service_outcome(
    cores: u32,
    rate: Option<f64>,
    designs: &[ServiceDesign],
) -> Result<Outcome, SimError> {
    let docs = designs
        .iter()
        .map(|d| {
            let mut v = serde_json::to_value(d.costs)?;
            v["design"] = d.design.into();
            v["requests_per_s"] = d.requests_per_s.into();
            v["bound"] = d.bound.into();
            v["rho"] = d.rho.into();
            v["under_load"] = serde_json::to_value(d.under_load)?;
            Ok(v)
        })
        .collect::<serde_json::Result<Vec<_>>>()?;
    let rows = designs
        .iter()
        .map(|d| {
            let mut values = vec![
                Some(d.costs.host_ns),
                Some(d.costs.latency_ns),
                Some(d.requests_per_s),
            ];
            if rate.is_some() {
                values.push(d.rho);
                values.push(d.under_load.map(|l| l.mean_ns));
                values.push(d.under_load.map(|l| l.p99_ns));
            }
            Headline {
                label: d.design.to_string(),
                values,
                bound: Some(d.bound),
            }
        })
        .collect();
    Ok(Outcome {
        report: serde_json::json!({ "cores": cores, "rate": rate, "designs": docs }),
        rows,
    })
}

/// The gateway's headline columns, as [`gateway_outcome`] fills them.
pub const GATEWAY_COLUMNS: &[Column] = &[
    Column::new("gbps", 2),
    Column::new("requests_per_s", 0),
    Column::new("latency_ns", 1),
];

/// The gateway's JSON document ([`Gateway`] with each placement's rate, throughput and
/// bound) and a headline row per placement.
///
/// # Errors
/// [`SimError::Json`] if the gateway's report does not serialize.
pub fn gateway_outcome(g: &Gateway) -> Result<Outcome, SimError> {
    let mut report = serde_json::to_value(g)?;
    for (doc, p) in report["placements"]
        .as_array_mut()
        .into_iter()
        .flatten()
        .zip(&g.placements)
    {
        doc["requests_per_s"] = p.rate().into();
        doc["gbps"] = g.gbps(p).into();
        doc["bound"] = p.occupancy.bound().0.into();
    }
    report["worst_vs_best"] = g.worst_vs_best().into();
    let rows = g
        .placements
        .iter()
        .map(|p| Headline {
            label: p.label(),
            values: vec![Some(g.gbps(p)), Some(p.rate()), Some(p.latency_ns)],
            bound: Some(p.occupancy.bound().0),
        })
        .collect();
    Ok(Outcome { report, rows })
}

/// A sweep of one model: the axes, the model's headline columns, the number to draw and how
/// many points run at once.
pub struct Sweep<'a> {
    /// The varied parameters.
    pub axes: &'a [Axis],
    /// The model's headline columns; each outcome's rows hold a value per column.
    pub columns: &'a [Column],
    /// `Some` to draw one column against the first axis: the named one, or the first.
    pub plot_metric: Option<Option<&'a str>>,
    /// Points run at once, each on a thread of its own (at least 1).
    pub jobs: usize,
}

impl<'a> Sweep<'a> {
    /// Runs the sweep: for each point of the axes' grid, `prepare` reads the parameter values
    /// it sets (for [`crate::config_file::with_values`]; a varied [`PCIE_NS`] as
    /// `pcie.latency_ns`) into what `run` needs, then `run` gives the point's outcome. Every
    /// point is prepared, and the plotted metric and first axis checked, before any point
    /// runs, so that a bad point or option fails at once. Points run `jobs` at a time; each
    /// run is deterministic, so the results do not depend on how many.
    ///
    /// # Errors
    /// [`SweepError::Options`] for an axis given twice, a grid too large, a metric not among
    /// the columns or a first axis that is not numeric when plotting;
    /// [`SweepError::Values`] for a [`PCIE_NS`] value that is not a number;
    /// [`SweepError::Point`] for the first point, in the grid's order, that `prepare` or
    /// `run` fails on.
    pub fn run<P: Send, E: Send + std::fmt::Debug + std::fmt::Display>(
        &self,
        mut prepare: impl FnMut(&[(&str, Value)]) -> Result<P, E>,
        run: impl Fn(P) -> Result<Outcome, E> + Sync,
    ) -> Result<SweepResults<'a>, SweepError<E>> {
        let axes = self.axes;
        if let Some((_, a)) = axes
            .iter()
            .enumerate()
            .find(|(i, a)| axes[..*i].iter().any(|b| b.path == a.path))
        {
            return Err(options_error(format!(
                "--vary: {} is given by more than one --vary",
                a.path
            )));
        }
        let points = grid(axes).map_err(SweepError::Options)?;
        let plotted = match self.plot_metric {
            Some(metric) => {
                Some(plotted_column(axes, self.columns, metric).map_err(SweepError::Options)?)
            }
            None => None,
        };
        let mut prepared: Vec<(Vec<&Value>, String, P)> = Vec::with_capacity(points.len());
        for point in points {
            let name = point_name(axes, &point);
            let mut values: Vec<(&str, Value)> = Vec::new();
            for (axis, v) in axes.iter().zip(&point) {
                if axis.path == PCIE_NS {
                    let Some(ns) = v.as_f64() else {
                        return Err(SweepError::Values {
                            point: name,
                            error: SimError::Param(format!("{PCIE_NS} takes numbers")),
                        });
                    };
                    // The doorbell follows the round trip (`config_file::FOLLOWERS`).
                    values.push(("pcie.latency_ns", Value::from(ns)));
                } else {
                    values.push((axis.path.as_str(), (*v).clone()));
                }
            }
            match prepare(&values) {
                Ok(p) => prepared.push((point, name, p)),
                Err(error) => return Err(SweepError::Point { point: name, error }),
            }
        }
        let (named, runs): (Vec<_>, Vec<_>) = prepared
            .into_iter()
            .map(|(point, name, p)| ((point, name), p))
            .unzip();
        let outcomes = parallel::map_ordered(runs, self.jobs, run);
        let mut results: Vec<(Vec<&Value>, Outcome)> = Vec::with_capacity(named.len());
        // The first point to fail, in the grid's order, is the one reported.
        for ((point, name), outcome) in named.into_iter().zip(outcomes) {
            match outcome {
                Ok(o) => results.push((point, o)),
                Err(error) => return Err(SweepError::Point { point: name, error }),
            }
        }
        Ok(SweepResults {
            axes,
            columns: self.columns,
            points: results,
            plotted,
        })
    }
}

/// A sweep's outcomes, a point each in the grid's order.
pub struct SweepResults<'a> {
    axes: &'a [Axis],
    columns: &'a [Column],
    points: Vec<(Vec<&'a Value>, Outcome)>,
    plotted: Option<usize>,
}

impl SweepResults<'_> {
    /// Each point's values and outcome, in the grid's order.
    pub fn points(&self) -> &[(Vec<&Value>, Outcome)] {
        &self.points
    }

    /// A JSON document per point: `{"point": {PATH: value, ...}, "report": ...}`.
    pub fn json_lines(&self) -> impl Iterator<Item = String> + '_ {
        self.points.iter().map(|(point, outcome)| {
            let point: serde_json::Map<String, Value> = self
                .axes
                .iter()
                .zip(point)
                .map(|(a, v)| (a.path.clone(), (*v).clone()))
                .collect();
            serde_json::json!({ "point": point, "report": outcome.report }).to_string()
        })
    }

    /// The results as a text table, each line ending in a newline: a column per axis, the
    /// design, then each metric, and what bounds each design where the model says.
    pub fn table(&self) -> String {
        table(self.axes, self.columns, &self.points)
    }

    /// The curves of the plotted column against the first axis, if the sweep was asked to
    /// draw one.
    pub fn plot(&self) -> Option<SweepPlot> {
        self.plotted
            .map(|column| curves(self.axes, &self.points, self.columns, column))
    }
}

/// The index in `columns` of `metric` (default: the first), checked with the first axis
/// before anything runs.
///
/// # Errors
/// Nothing varied, a first axis with a value that is not a number, or a metric not among
/// `columns`.
fn plotted_column(
    axes: &[Axis],
    columns: &[Column],
    metric: Option<&str>,
) -> Result<usize, SimError> {
    let Some(x_axis) = axes.first() else {
        return Err(SimError::Param("--plot: nothing varied".into()));
    };
    if let Some(v) = x_axis.values.iter().find(|v| v.as_f64().is_none()) {
        return Err(SimError::Param(format!(
            "--plot: the first --vary ({}) must be numeric, not {v}",
            x_axis.path
        )));
    }
    let names: Vec<&str> = columns.iter().map(|c| c.name).collect();
    let metric = metric.or(names.first().copied()).unwrap_or_default();
    names.iter().position(|&n| n == metric).ok_or_else(|| {
        SimError::Param(format!(
            "--metric {metric}: the runs report {}",
            names.join(", ")
        ))
    })
}

/// `path=value path=value ...` of a point, as the user wrote the axes.
fn point_name(axes: &[Axis], point: &[&Value]) -> String {
    axes.iter()
        .zip(point)
        .map(|(a, v)| format!("{}={v}", a.path))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The results as a table: a column per axis, the design, then each metric.
fn table(axes: &[Axis], columns: &[Column], results: &[(Vec<&Value>, Outcome)]) -> String {
    let labelled = results
        .iter()
        .any(|(_, o)| o.rows.iter().any(|r| !r.label.is_empty()));
    let bounded = results
        .iter()
        .any(|(_, o)| o.rows.iter().any(|r| r.bound.is_some()));
    let mut lines: Vec<Vec<String>> = Vec::new();
    let mut header: Vec<String> = axes.iter().map(|a| a.path.clone()).collect();
    if labelled {
        header.push("design".into());
    }
    header.extend(columns.iter().map(|c| c.name.to_string()));
    if bounded {
        header.push("bound".into());
    }
    lines.push(header);
    for (point, outcome) in results {
        for row in &outcome.rows {
            let mut line: Vec<String> = point.iter().map(|v| v.to_string()).collect();
            if labelled {
                line.push(row.label.clone());
            }
            line.extend(
                row.values.iter().zip(columns).map(|(value, c)| {
                    value.map_or("-".to_string(), |v| format!("{v:.*}", c.digits))
                }),
            );
            if bounded {
                line.push(row.bound.unwrap_or("-").to_string());
            }
            lines.push(line);
        }
    }
    let columns = lines.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            lines
                .iter()
                .filter_map(|l| l.get(c))
                .map(String::len)
                .max()
                .unwrap_or(0)
        })
        .collect();
    // Axes, the design and the bound align left, numbers right.
    let left = axes.len() + usize::from(labelled);
    let text = |c: usize| c < left || (bounded && c + 1 == columns);
    let mut out = String::new();
    for line in &lines {
        let cells: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(c, s)| {
                if text(c) {
                    format!("{s:<w$}", w = widths[c])
                } else {
                    format!("{s:>w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// One curve of a sweep figure: the metric against the first axis's values, for one design
/// and one combination of the other axes' values.
#[derive(Debug, Clone)]
pub struct Curve {
    /// The design and the other axes' values.
    pub name: String,
    /// `(x, y)` from left to right.
    pub points: Vec<(f64, f64)>,
}

/// What a sweep figure draws: its axes' names and its curves.
#[derive(Debug, Clone)]
pub struct SweepPlot {
    /// The first axis's path.
    pub x_label: String,
    /// The metric's name.
    pub y_label: String,
    /// A curve per design and combination of the other axes' values.
    pub curves: Vec<Curve>,
}

/// A curve's name: the design's label and the other axes' values, or the metric's name
/// where both are empty (one design, one axis).
fn curve_name(label: &str, others: &str, metric: &str) -> String {
    let name = [label, others]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ");
    if name.is_empty() {
        metric.to_string()
    } else {
        name
    }
}

/// The curves of `columns[column]` against the first axis, whose values
/// [`plotted_column`] has found numeric.
fn curves(
    axes: &[Axis],
    results: &[(Vec<&Value>, Outcome)],
    columns: &[Column],
    column: usize,
) -> SweepPlot {
    let metric = columns[column].name;
    let mut curves: Vec<Curve> = Vec::new();
    for (point, outcome) in results {
        let x = point[0].as_f64().unwrap_or(f64::NAN);
        let others = point_name(&axes[1..], &point[1..]);
        for row in &outcome.rows {
            let name = curve_name(&row.label, &others, metric);
            let y = row
                .values
                .get(column)
                .copied()
                .flatten()
                .unwrap_or(f64::NAN);
            match curves.iter_mut().find(|c| c.name == name) {
                Some(c) => c.points.push((x, y)),
                None => curves.push(Curve {
                    name,
                    points: vec![(x, y)],
                }),
            }
        }
    }
    // Values may be given in any order; a curve runs from left to right.
    for c in &mut curves {
        c.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    SweepPlot {
        x_label: axes[0].path.clone(),
        y_label: metric.to_string(),
        curves,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn axes_read_lists_ranges_and_scalars() {
        let a = parse_axis("pipelines=1..3,8, 16").unwrap();
        assert_eq!(a.path, "pipelines");
        assert_eq!(
            a.values,
            vec![json!(1), json!(2), json!(3), json!(8), json!(16)]
        );
        let b = parse_axis("pcie.latency_ns=70,1250.5").unwrap();
        assert_eq!(b.values, vec![json!(70), json!(1250.5)]);
        assert_eq!(
            parse_axis("flush_stalls_parsing=true,false")
                .unwrap()
                .values,
            vec![json!(true), json!(false)]
        );
        for bad in [
            "pipelines",
            "=1,2",
            "noc..mesh=4",
            "pipelines=3..1",
            "pipelines=1..2000",
            "pipelines=1.5..3",
            "pipelines=fast",
            "pipelines=[1]",
            "pipelines=",
        ] {
            assert!(parse_axis(bad).is_err(), "{bad}");
        }
        // A range whose length overflows an i64 is refused, not expanded.
        for huge in [
            "pipelines=-5000000000000000000..5000000000000000000",
            "pipelines=-9223372036854775808..9223372036854775807",
        ] {
            let err = parse_axis(huge).unwrap_err().to_string();
            assert!(err.contains("at most 1024 values"), "{err}");
        }
        let edge = parse_axis("pipelines=9223372036854775807..9223372036854775807").unwrap();
        assert_eq!(edge.values, vec![json!(i64::MAX)]);
        assert_eq!(parse_axis("a=1..1024").unwrap().values.len(), 1024);
        assert!(parse_axis("a=1..1025").is_err());
    }

    const COLUMNS: &[Column] = &[Column::new("gbps", 2), Column::new("latency_ns", 1)];

    /// Sweeps `axes`, drawing `plot` (a metric, or the first), preparing each point with
    /// `prepare` and counting the runs; the table if it ran.
    fn sweep_counting(
        axes: &[Axis],
        plot: Option<Option<&str>>,
        prepare: impl FnMut(&[(&str, Value)]) -> Result<(), String>,
    ) -> (Result<String, SweepError<String>>, usize) {
        let runs = std::sync::atomic::AtomicUsize::new(0);
        let sweep = Sweep {
            axes,
            columns: COLUMNS,
            plot_metric: plot,
            jobs: 2,
        };
        let r = sweep.run(prepare, |()| {
            runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(Outcome {
                report: Value::Null,
                rows: vec![Headline {
                    label: String::new(),
                    values: vec![Some(1.0), None],
                    bound: None,
                }],
            })
        });
        (r.map(|r| r.table()), runs.into_inner())
    }

    #[test]
    fn a_sweep_checks_every_point_and_option_before_it_runs_any() {
        let axes = [parse_axis("pipelines=1..64,100").unwrap()];
        // The last point's configuration is bad: nothing runs.
        let (r, runs) = sweep_counting(&axes, None, |values| match &values[0].1 {
            v if v.as_u64() == Some(100) => Err("pipelines must be at most 64".into()),
            _ => Ok(()),
        });
        let err = r.unwrap_err().to_string();
        assert_eq!(err, "--vary pipelines=100: pipelines must be at most 64");
        assert_eq!(runs, 0);
        // An unknown metric and a first axis that is not numeric are refused before any
        // point is even prepared.
        for (axes, metric, says) in [
            (
                &axes[..],
                Some("throughput"),
                "--metric throughput: the runs report gbps, latency_ns",
            ),
            (
                &[parse_axis("flag=1,true").unwrap()][..],
                None,
                "the first --vary (flag) must be numeric, not true",
            ),
        ] {
            let mut prepared = 0;
            let (r, runs) = sweep_counting(axes, Some(metric), |_| {
                prepared += 1;
                Ok(())
            });
            let err = r.unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
            assert_eq!((prepared, runs), (0, 0));
        }
        // An axis given twice, and a PCIe round trip that is not a number.
        let twice = [parse_axis("a=1").unwrap(), parse_axis("a=2").unwrap()];
        let (r, _) = sweep_counting(&twice, None, |_| Ok(()));
        assert_eq!(
            r.unwrap_err().to_string(),
            "--vary: a is given by more than one --vary"
        );
        let (r, runs) = sweep_counting(&[parse_axis("pcie-ns=70,true").unwrap()], None, |v| {
            assert_eq!(v[0].0, "pcie.latency_ns");
            Ok(())
        });
        assert_eq!(
            r.unwrap_err().to_string(),
            "--vary pcie-ns=true: pcie-ns takes numbers"
        );
        assert_eq!(runs, 0);
        // A good sweep runs every point once, in a table of the columns.
        let (r, runs) = sweep_counting(&[parse_axis("a=1,2").unwrap()], None, |_| Ok(()));
        assert_eq!(runs, 2);
        assert_eq!(
            r.unwrap(),
            "a  gbps  latency_ns\n1  1.00           -\n2  1.00           -\n"
        );
    }

    #[test]
    fn json_lines_name_each_point_and_a_plot_follows_the_metric() {
        let axes = [parse_axis("a=2,1").unwrap(), parse_axis("b=true").unwrap()];
        let sweep = Sweep {
            axes: &axes,
            columns: COLUMNS,
            plot_metric: Some(Some("latency_ns")),
            jobs: 1,
        };
        let r = sweep
            .run(
                |v| Ok::<_, String>(v[0].1.as_f64().unwrap()),
                |x| {
                    Ok(Outcome {
                        report: serde_json::json!({ "x": x }),
                        rows: vec![Headline {
                            label: "d".into(),
                            values: vec![None, Some(x * 10.0)],
                            bound: Some("pcie"),
                        }],
                    })
                },
            )
            .unwrap();
        let lines: Vec<String> = r.json_lines().collect();
        assert_eq!(
            lines,
            [
                r#"{"point":{"a":2,"b":true},"report":{"x":2.0}}"#,
                r#"{"point":{"a":1,"b":true},"report":{"x":1.0}}"#
            ]
        );
        assert_eq!(
            r.table(),
            "a  b     design  gbps  latency_ns  bound\n\
             2  true  d          -        20.0  pcie\n\
             1  true  d          -        10.0  pcie\n"
        );
        let plot = r.plot().unwrap();
        assert_eq!(
            (plot.x_label.as_str(), plot.y_label.as_str()),
            ("a", "latency_ns")
        );
        assert_eq!(plot.curves.len(), 1);
        assert_eq!(plot.curves[0].name, "d, b=true");
        assert_eq!(plot.curves[0].points, [(1.0, 10.0), (2.0, 20.0)]);
        assert_eq!(r.points().len(), 2);
    }

    /// The results of a sweep of `axis` whose runs give `y(x)` for each design of `labels`.
    fn results<'a>(
        axis: &'a Axis,
        labels: &[&str],
        y: impl Fn(f64) -> f64,
    ) -> Vec<(Vec<&'a Value>, Outcome)> {
        axis.values
            .iter()
            .map(|v| {
                let x = v.as_f64().unwrap();
                let rows = labels
                    .iter()
                    .map(|l| Headline {
                        label: l.to_string(),
                        values: vec![Some(y(x)), None],
                        bound: None,
                    })
                    .collect();
                let outcome = Outcome {
                    report: Value::Null,
                    rows,
                };
                (vec![v], outcome)
            })
            .collect()
    }

    #[test]
    fn one_design_on_one_axis_is_one_curve_from_left_to_right() {
        // As `--accel op --vary pipelines=...`: one unlabelled row per point, values given
        // out of order.
        let axis = parse_axis("pipelines=3,1,4,2").unwrap();
        let plot = curves(
            std::slice::from_ref(&axis),
            &results(&axis, &[""], |x| 10.0 * x),
            COLUMNS,
            0,
        );
        assert_eq!(plot.curves.len(), 1);
        assert_eq!(plot.curves[0].name, "gbps");
        assert_eq!(
            plot.curves[0].points,
            vec![(1.0, 10.0), (2.0, 20.0), (3.0, 30.0), (4.0, 40.0)]
        );
        // Labelled designs keep a curve each, also sorted.
        let axis = parse_axis("rate=170000,20000,100000").unwrap();
        let plot = curves(
            std::slice::from_ref(&axis),
            &results(&axis, &["ser/a", "ser/b"], |x| x),
            COLUMNS,
            0,
        );
        let names: Vec<&str> = plot.curves.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["ser/a", "ser/b"]);
        for c in &plot.curves {
            let xs: Vec<f64> = c.points.iter().map(|p| p.0).collect();
            assert_eq!(xs, [20000.0, 100000.0, 170000.0]);
        }
    }

    #[test]
    fn the_grid_is_every_combination_first_axis_slowest() {
        let axes = [
            parse_axis("a=1,2").unwrap(),
            parse_axis("b=10,20,30").unwrap(),
        ];
        let g = grid(&axes).unwrap();
        assert_eq!(g.len(), 6);
        assert_eq!(g[0], vec![&json!(1), &json!(10)]);
        assert_eq!(g[2], vec![&json!(1), &json!(30)]);
        assert_eq!(g[3], vec![&json!(2), &json!(10)]);
        let big = [
            parse_axis("a=1..1000").unwrap(),
            parse_axis("b=1..1000").unwrap(),
        ];
        assert!(grid(&big).is_err());
    }
}
