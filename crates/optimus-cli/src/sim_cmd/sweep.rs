//! `optimus sim --vary`: runs a model once per point of a grid of parameter values and
//! tabulates each run's headline numbers, a row per point and design (or writes each run's
//! whole report as a JSON line, or draws one number against the first varied parameter).

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use optimus_sim::op::OpReport;
use optimus_sim::parallel;
use optimus_sim::rpcacc::report::RpcAccReport;

use super::plot;

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
pub const CORES: &str = "cores";

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
/// A missing `=`, an empty path or list, a value that is not a scalar, or a range that is
/// empty, not of integers, or longer than 1024 values.
pub fn parse_axis(arg: &str) -> Result<Axis> {
    let (path, list) = arg
        .split_once('=')
        .with_context(|| format!("--vary {arg}: expected PATH=VALUES, e.g. pipelines=1..8"))?;
    let path = path.trim();
    if path.is_empty() || path.split('.').any(str::is_empty) {
        bail!("--vary {arg}: the parameter path is empty or has an empty part");
    }
    let mut values = Vec::new();
    for item in list.split(',').map(str::trim) {
        if let Some((lo, hi)) = item.split_once("..") {
            let (lo, hi): (i64, i64) = match (lo.trim().parse(), hi.trim().parse()) {
                (Ok(lo), Ok(hi)) => (lo, hi),
                _ => bail!("--vary {arg}: a range `{item}` takes integers, LO..HI"),
            };
            if hi < lo || hi.abs_diff(lo) >= MAX_RANGE_VALUES {
                bail!(
                    "--vary {arg}: the range `{item}` must run upwards over at most \
                     {MAX_RANGE_VALUES} values"
                );
            }
            values.extend((lo..=hi).map(Value::from));
            continue;
        }
        let v: Value = serde_json::from_str(item).with_context(|| {
            format!("--vary {arg}: `{item}` is not a number, true, false or a quoted string")
        })?;
        if v.is_array() || v.is_object() || v.is_null() {
            bail!("--vary {arg}: `{item}` is not a single value");
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
/// More than [`MAX_POINTS`] combinations.
pub fn grid(axes: &[Axis]) -> Result<Vec<Vec<&Value>>> {
    let count = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
        .filter(|&n| n <= MAX_POINTS)
        .with_context(|| format!("--vary: the grid has more than {MAX_POINTS} points"))?;
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
    pub name: &'static str,
    pub digits: usize,
}

impl Column {
    pub const fn new(name: &'static str, digits: usize) -> Self {
        Self { name, digits }
    }
}

/// A run's headline numbers for one design, one per column of its model (an empty label for
/// Optimus Prime's one design); `None` where the model sets no value (an unbounded rate, a
/// load past capacity). `bound`: what holds the design's rate back, where the model says.
#[derive(Debug, Clone)]
pub struct Headline {
    pub label: String,
    pub values: Vec<Option<f64>>,
    pub bound: Option<&'static str>,
}

/// One run: its whole report as JSON and its headline rows.
pub struct Outcome {
    pub report: Value,
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
pub fn op_outcome(r: &OpReport) -> Result<Outcome> {
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
pub fn rpcacc_outcome(r: &RpcAccReport) -> Result<Outcome> {
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

/// The options of a sweep that do not depend on the model.
pub struct SweepOptions<'a> {
    pub axes: &'a [Axis],
    pub json: bool,
    /// Where to draw `sweep.png` and `sweep.svg`, and which metric (default: the first).
    pub plot: Option<(&'a Path, Option<&'a str>)>,
    /// Points run at once, each on a thread of its own (at least 1).
    pub jobs: usize,
}

/// Runs a sweep: for each point of the axes' grid, `prepare` reads the parameter values it
/// sets (for [`optimus_sim::config_file::with_values`]) into what `run` needs, then `run`
/// gives the point's outcome, whose rows hold a value per column of `columns`; prints the
/// results. Every point is prepared, and the plot's metric and first axis checked, before
/// any point runs, so that a bad point or option fails at once. Points run `jobs` at a time;
/// each run is deterministic, so the output does not depend on how many.
///
/// # Errors
/// A bad grid, a point whose configuration cannot be read or run (named by its values), a
/// metric the runs do not report, a first axis that is not numeric under `--plot`, a plot
/// that cannot be drawn, or a closed output.
pub fn sweep<P: Send>(
    out: &mut impl Write,
    options: &SweepOptions,
    columns: &[Column],
    mut prepare: impl FnMut(&[(&str, Value)]) -> Result<P>,
    run: impl Fn(P) -> Result<Outcome> + Sync,
) -> Result<()> {
    let axes = options.axes;
    if let Some((_, a)) = axes
        .iter()
        .enumerate()
        .find(|(i, a)| axes[..*i].iter().any(|b| b.path == a.path))
    {
        bail!("--vary: {} is given by more than one --vary", a.path);
    }
    let points = grid(axes)?;
    let plotted = match options.plot {
        Some((dir, metric)) => Some((dir, plotted_column(axes, columns, metric)?)),
        None => None,
    };
    let mut prepared: Vec<(Vec<&Value>, String, P)> = Vec::with_capacity(points.len());
    for point in points {
        let name = point_name(axes, &point);
        let mut values: Vec<(&str, Value)> = Vec::new();
        for (axis, v) in axes.iter().zip(&point) {
            if axis.path == PCIE_NS {
                let ns = v
                    .as_f64()
                    .with_context(|| format!("sim --vary {name}: {PCIE_NS} takes numbers"))?;
                // The doorbell follows the round trip (`config_file::FOLLOWERS`).
                values.push(("pcie.latency_ns", Value::from(ns)));
            } else {
                values.push((axis.path.as_str(), (*v).clone()));
            }
        }
        let p = prepare(&values).with_context(|| format!("sim --vary {name}"))?;
        prepared.push((point, name, p));
    }
    let (named, runs): (Vec<_>, Vec<_>) = prepared
        .into_iter()
        .map(|(point, name, p)| ((point, name), p))
        .unzip();
    let outcomes = parallel::map_ordered(runs, options.jobs, run);
    let mut results: Vec<(Vec<&Value>, Outcome)> = Vec::with_capacity(named.len());
    // The first point to fail, in the grid's order, is the one reported.
    for ((point, name), outcome) in named.into_iter().zip(outcomes) {
        results.push((
            point,
            outcome.with_context(|| format!("sim --vary {name}"))?,
        ));
    }
    if options.json {
        for (point, outcome) in &results {
            let point: serde_json::Map<String, Value> = axes
                .iter()
                .zip(point)
                .map(|(a, v)| (a.path.clone(), (*v).clone()))
                .collect();
            writeln!(
                out,
                "{}",
                serde_json::json!({ "point": point, "report": outcome.report })
            )?;
        }
    } else {
        table(out, axes, columns, &results)?;
    }
    if let Some((dir, column)) = plotted {
        plot::sweep_figure(dir, &curves(axes, &results, columns, column)).context("sim: plot")?;
    }
    Ok(())
}

/// The index in `columns` of `metric` (default: the first), checked with the first axis
/// before anything runs.
///
/// # Errors
/// Nothing varied, a first axis with a value that is not a number, or a metric not among
/// `columns`.
fn plotted_column(axes: &[Axis], columns: &[Column], metric: Option<&str>) -> Result<usize> {
    let Some(x_axis) = axes.first() else {
        bail!("--plot: nothing varied");
    };
    if let Some(v) = x_axis.values.iter().find(|v| v.as_f64().is_none()) {
        bail!(
            "--plot: the first --vary ({}) must be numeric, not {v}",
            x_axis.path
        );
    }
    let names: Vec<&str> = columns.iter().map(|c| c.name).collect();
    let metric = metric.or(names.first().copied()).unwrap_or_default();
    names
        .iter()
        .position(|&n| n == metric)
        .with_context(|| format!("--metric {metric}: the runs report {}", names.join(", ")))
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
fn table(
    out: &mut impl Write,
    axes: &[Axis],
    columns: &[Column],
    results: &[(Vec<&Value>, Outcome)],
) -> Result<()> {
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
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    Ok(())
}

/// One curve of a sweep figure: the metric against the first axis's values, for one design
/// and one combination of the other axes' values.
pub struct Curve {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// What a sweep figure draws: its axes' names and its curves.
pub struct SweepPlot {
    pub x_label: String,
    pub y_label: String,
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

    /// Sweeps `axes` with `plot`, preparing each point with `prepare` and counting the runs.
    fn sweep_counting(
        axes: &[Axis],
        plot: Option<(&Path, Option<&str>)>,
        prepare: impl FnMut(&[(&str, Value)]) -> Result<()>,
    ) -> (Result<()>, usize, Vec<u8>) {
        let runs = std::sync::atomic::AtomicUsize::new(0);
        let mut out = Vec::new();
        let options = SweepOptions {
            axes,
            json: false,
            plot,
            jobs: 2,
        };
        let r = sweep(&mut out, &options, COLUMNS, prepare, |()| {
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
        (r, runs.into_inner(), out)
    }

    #[test]
    fn a_sweep_checks_every_point_and_option_before_it_runs_any() {
        let axes = [parse_axis("pipelines=1..64,100").unwrap()];
        // The last point's configuration is bad: nothing runs, nothing is printed.
        let (r, runs, out) = sweep_counting(&axes, None, |values| match &values[0].1 {
            v if v.as_u64() == Some(100) => bail!("pipelines must be at most 64"),
            _ => Ok(()),
        });
        let err = format!("{:#}", r.unwrap_err());
        assert!(
            err.starts_with("sim --vary pipelines=100: pipelines"),
            "{err}"
        );
        assert_eq!((runs, out.len()), (0, 0));
        // An unknown metric and a first axis that is not numeric are refused before any
        // point is even prepared.
        let dir = Path::new("/nonexistent");
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
            let (r, runs, out) = sweep_counting(axes, Some((dir, metric)), |_| {
                prepared += 1;
                Ok(())
            });
            let err = r.unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
            assert_eq!((prepared, runs, out.len()), (0, 0, 0));
        }
        // A good sweep runs every point once, in a table of the columns.
        let (r, runs, out) = sweep_counting(&[parse_axis("a=1,2").unwrap()], None, |_| Ok(()));
        r.unwrap();
        assert_eq!(runs, 2);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a  gbps  latency_ns\n1  1.00           -\n2  1.00           -\n"
        );
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
