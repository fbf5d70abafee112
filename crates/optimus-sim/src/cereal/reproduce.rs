//! `optimus sim reproduce cereal`: the model's S/D time on each traced Spark record stream and
//! each traced benchmark graph against the Java serializer's and Kryo's measured times on the
//! same records and graphs (testdata/cereal/spark-measured.json and measured.json, from
//! docs/cereal.md's benchmark tables). The geometric means over the Spark jobs' streams are set
//! beside the paper's ratios (targets `cereal.abstract.spark_sd_vs_*`, which the paper measured on
//! Spark applications); those over the benchmark graphs are reported beside them. Then the
//! Amdahl step from an S/D share of job time to job time.

use serde::{Deserialize, Serialize};

use super::{run, workload, CerealConfig};
use crate::calibrate::{Row, Status, Target};
use crate::error::{Result, SimError};
use crate::figure::{short, FigureSpec, SeriesKind, SeriesSpec};

/// The measured times and their provenance (machine, command, commit).
pub const MEASURED_JSON: &str = include_str!("../../../../testdata/cereal/measured.json");
/// The measured times of the Spark jobs' record streams and their provenance.
pub const SPARK_MEASURED_JSON: &str =
    include_str!("../../../../testdata/cereal/spark-measured.json");
/// The paper's `cereal` targets (a copy of ../shared/papers/targets.json's section).
pub const TARGETS_JSON: &str = include_str!("targets.json");

/// One serializer's median times on one graph, µs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Times {
    /// Serialization, µs.
    pub ser_us: f64,
    /// Deserialization, µs.
    pub deser_us: f64,
}

impl Times {
    /// S + D, µs.
    pub fn sd_us(&self) -> f64 {
        self.ser_us + self.deser_us
    }
}

/// One benchmark graph's (or one Spark record stream's) measurements.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Embedded trace name.
    pub name: String,
    /// Its row in docs/cereal.md.
    pub bench_name: String,
    /// Trace file under testdata/cereal.
    pub trace: String,
    /// `ObjectOutputStream`/`ObjectInputStream`.
    pub java: Times,
    /// Kryo 5.6.2 with reference tracking.
    pub kryo: Times,
    /// The project's software Cereal, one thread.
    pub cereal_sw: Times,
}

#[derive(Deserialize)]
struct MeasuredFile {
    workloads: Vec<Measured>,
}

/// The measurements.
///
/// # Errors
/// [`SimError::Targets`] if the embedded file is malformed.
pub fn measured() -> Result<Vec<Measured>> {
    parse_measured("measured.json", MEASURED_JSON)
}

/// The measurements of the Spark jobs' record streams (µs per stream of the trace's records).
///
/// # Errors
/// [`SimError::Targets`] if the embedded file is malformed.
pub fn spark_measured() -> Result<Vec<Measured>> {
    parse_measured("spark-measured.json", SPARK_MEASURED_JSON)
}

fn parse_measured(file: &str, text: &str) -> Result<Vec<Measured>> {
    let f: MeasuredFile =
        serde_json::from_str(text).map_err(|e| SimError::Targets(format!("{file}: {e}")))?;
    Ok(f.workloads)
}

/// The paper's Cereal targets.
///
/// # Errors
/// [`SimError::Targets`] if the embedded copy is malformed.
pub fn targets() -> Result<Vec<Target>> {
    #[derive(Deserialize)]
    struct F {
        cereal: Vec<Target>,
    }
    let f: F = serde_json::from_str(TARGETS_JSON).map_err(|e| SimError::Targets(e.to_string()))?;
    Ok(f.cereal)
}

/// One graph: model against measurements.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Workload.
    pub workload: String,
    /// Modelled Cereal times, µs.
    pub model: Times,
    /// Measured Java times.
    pub java: Times,
    /// Measured Kryo times.
    pub kryo: Times,
    /// Measured software Cereal times.
    pub cereal_sw: Times,
}

impl Comparison {
    /// Java's S+D over the model's.
    pub fn vs_java(&self) -> f64 {
        self.java.sd_us() / self.model.sd_us()
    }
    /// Kryo's S+D over the model's.
    pub fn vs_kryo(&self) -> f64 {
        self.kryo.sd_us() / self.model.sd_us()
    }
}

/// Job time before over job time after, when S/D takes `share` of the job and becomes
/// `speedup` times faster (Amdahl).
pub fn job_speedup(share: f64, speedup: f64) -> f64 {
    1.0 / ((1.0 - share) + share / speedup)
}

/// Geometric mean.
pub fn geomean(xs: impl IntoIterator<Item = f64>) -> f64 {
    let (s, n) = xs
        .into_iter()
        .fold((0.0, 0u32), |(s, n), x| (s + x.ln(), n + 1));
    if n == 0 {
        f64::NAN
    } else {
        (s / f64::from(n)).exp()
    }
}

/// What `reproduce cereal` computed besides the target rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CerealFigures {
    /// Per Spark job's record stream: the workloads of the `spark_sd_vs_*` targets.
    pub spark: Vec<Comparison>,
    /// Geomean over the Spark streams of Java's S+D over the model's.
    pub spark_vs_java: f64,
    /// Geomean over the Spark streams of Kryo's S+D over the model's.
    pub spark_vs_kryo: f64,
    /// Per benchmark graph.
    pub graphs: Vec<Comparison>,
    /// Geomean over the benchmark graphs of Java's S+D over the model's.
    pub vs_java: f64,
    /// Geomean over the benchmark graphs of Kryo's S+D over the model's.
    pub vs_kryo: f64,
    /// (S/D share of job time with Kryo, job speedup with the model's S/D speedup over Kryo on
    /// the Spark streams): at the paper's average and maximum shares.
    pub job_vs_kryo: Vec<(f64, f64)>,
}

/// Runs the model on every measured graph and fills the target rows.
///
/// # Errors
/// An invalid configuration or a malformed embedded file.
pub fn reproduce_cereal(cfg: &CerealConfig) -> Result<(Vec<Row>, CerealFigures)> {
    let compare = |ms: Vec<Measured>| -> Result<Vec<Comparison>> {
        ms.into_iter()
            .map(|m| {
                let r = run(cfg, &workload(&m.name)?)?;
                Ok(Comparison {
                    workload: m.name,
                    model: Times {
                        ser_us: r.ser_ns / 1e3,
                        deser_us: r.deser_ns / 1e3,
                    },
                    java: m.java,
                    kryo: m.kryo,
                    cereal_sw: m.cereal_sw,
                })
            })
            .collect()
    };
    let spark = compare(spark_measured()?)?;
    let graphs = compare(measured()?)?;
    let spark_vs_java = geomean(spark.iter().map(Comparison::vs_java));
    let spark_vs_kryo = geomean(spark.iter().map(Comparison::vs_kryo));
    let vs_java = geomean(graphs.iter().map(Comparison::vs_java));
    let vs_kryo = geomean(graphs.iter().map(Comparison::vs_kryo));
    let targets = targets()?;
    let share = |id: &str| targets.iter().find(|t| t.id == id).map(|t| t.value / 100.0);
    let job_vs_kryo: Vec<(f64, f64)> = [
        "cereal.sec1.sd_share_kryo.avg.pct",
        "cereal.sec1.sd_share_kryo.max.pct",
    ]
    .iter()
    .filter_map(|id| share(id))
    .map(|s| (s, job_speedup(s, spark_vs_kryo)))
    .collect();
    let media = graphs.iter().find(|g| g.workload == "media-content");
    let mut rows = Vec::new();
    for t in targets {
        let (model, status, note): (Option<f64>, Status, String) = match t.id.as_str() {
            "cereal.abstract.spark_sd_vs_java.x" => (
                Some(spark_vs_java),
                Status::Met,
                format!("geomean over the {} Spark jobs' traced record streams of Java's measured S+D over the model's (over the {} benchmark graphs: {vs_java:.2}x)", spark.len(), graphs.len()),
            ),
            "cereal.abstract.spark_sd_vs_kryo.x" => (
                Some(spark_vs_kryo),
                Status::Met,
                format!("geomean over the {} Spark jobs' traced record streams of Kryo's measured S+D over the model's (over the {} benchmark graphs: {vs_kryo:.2}x)", spark.len(), graphs.len()),
            ),
            "cereal.abstract.jsbs_vs_88_libraries.avg_throughput" => (
                None,
                Status::NotModeled,
                media.map_or("the 88 libraries are not measured here".into(), |g| {
                    format!(
                        "the 88 libraries are not measured here; on MediaContent the model is {:.1}x Java and {:.1}x Kryo",
                        g.vs_java(),
                        g.vs_kryo()
                    )
                }),
            ),
            "cereal.abstract.energy_vs_java.x" | "cereal.abstract.energy_vs_kryo.x" => (
                None,
                Status::NotModeled,
                "no power model".into(),
            ),
            id if id.starts_with("cereal.sec1.sd_share_kryo") => (
                None,
                Status::Input,
                job_vs_kryo
                    .iter()
                    .find(|(s, _)| (s * 100.0 - t.value).abs() < 1e-9)
                    .map_or(String::new(), |(_, j)| {
                        format!("Amdahl: S/D {spark_vs_kryo:.2}x faster than Kryo (Spark streams) makes the job {j:.2}x faster")
                    }),
            ),
            _ => (None, Status::NotModeled, "not a result this model computes".into()),
        };
        let deviation = model.map(|m| (m - t.value) / t.value);
        let status = match (status, deviation) {
            (Status::Met, Some(d)) if !(d.abs() <= t.kind.tolerance()) => Status::Missed,
            (s, _) => s,
        };
        rows.push(Row {
            id: t.id,
            paper: t.value,
            model,
            unit: t.unit,
            deviation,
            kind: t.kind.name().to_string(),
            status,
            note,
        });
    }
    Ok((
        rows,
        CerealFigures {
            spark,
            spark_vs_java,
            spark_vs_kryo,
            graphs,
            vs_java,
            vs_kryo,
            job_vs_kryo,
        },
    ))
}

/// The figures of `reproduce cereal`: S+D time per Spark job's record stream
/// (`cereal_spark_sd_time`) and per benchmark graph (`cereal_sd_time`), for the model and the
/// measured serializers, and where the paper's ratios over Java and Kryo would put Cereal on each.
pub fn figures(rows: &[Row], figs: &CerealFigures) -> Vec<FigureSpec> {
    vec![
        figure(
            rows,
            &figs.spark,
            (figs.spark_vs_java, figs.spark_vs_kryo),
            "cereal_spark_sd_time",
            "Cereal: S+D time per Spark job's record stream, model against measured software",
            "Spark job (record stream)",
        ),
        figure(
            rows,
            &figs.graphs,
            (figs.vs_java, figs.vs_kryo),
            "cereal_sd_time",
            "Cereal: S+D time per graph, model against measured software",
            "graph",
        ),
    ]
}

fn figure(
    rows: &[Row],
    comps: &[Comparison],
    (vs_java, vs_kryo): (f64, f64),
    name: &str,
    title: &str,
    x_label: &str,
) -> FigureSpec {
    let sd = |f: &dyn Fn(&Comparison) -> f64| -> Vec<(f64, f64)> {
        comps
            .iter()
            .enumerate()
            .map(|(i, g)| (i as f64, f(g)))
            .collect()
    };
    let mut series = vec![
        SeriesSpec::new(
            "model Cereal S+D",
            SeriesKind::ModelPoints,
            sd(&|g| g.model.sd_us()),
        ),
        SeriesSpec::new(
            "measured Java S+D",
            SeriesKind::ModelPoints,
            sd(&|g| g.java.sd_us()),
        ),
        SeriesSpec::new(
            "measured Kryo S+D",
            SeriesKind::ModelPoints,
            sd(&|g| g.kryo.sd_us()),
        ),
        SeriesSpec::new(
            "measured software Cereal S+D",
            SeriesKind::ModelPoints,
            sd(&|g| g.cereal_sw.sd_us()),
        ),
    ];
    type Baseline<'a> = (&'a str, &'a str, f64, &'a dyn Fn(&Comparison) -> f64);
    let baselines: [Baseline; 2] = [
        (
            "cereal.abstract.spark_sd_vs_java.x",
            "Java",
            vs_java,
            &|g| g.java.sd_us(),
        ),
        (
            "cereal.abstract.spark_sd_vs_kryo.x",
            "Kryo",
            vs_kryo,
            &|g| g.kryo.sd_us(),
        ),
    ];
    for (id, base, model, of) in baselines {
        if let Some(row) = rows.iter().find(|r| r.id == id) {
            let v = row.paper;
            series.push(SeriesSpec::new(
                format!(
                    "paper ratio: Cereal = {base} / {v} (model geomean {})",
                    short(model)
                ),
                SeriesKind::Paper,
                sd(&|g| of(g) / v),
            ));
        }
    }
    FigureSpec {
        name: name.into(),
        title: title.into(),
        x_label: x_label.into(),
        y_label: "S+D time (us)".into(),
        x_names: comps.iter().map(|g| g.workload.clone()).collect(),
        series,
        log_y: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amdahl_and_geomean() {
        assert!((job_speedup(0.5, 2.0) - 4.0 / 3.0).abs() < 1e-12);
        assert!((job_speedup(0.0, 10.0) - 1.0).abs() < 1e-12);
        assert!((geomean([2.0, 8.0]) - 4.0).abs() < 1e-12);
        assert!(geomean([]).is_nan());
    }

    #[test]
    fn every_measured_graph_has_its_trace_and_every_target_a_row() {
        let m = measured().unwrap();
        assert_eq!(m.len(), super::super::WORKLOADS.len());
        let sm = spark_measured().unwrap();
        assert_eq!(sm.len(), super::super::SPARK_WORKLOADS.len());
        for w in m.iter().chain(&sm) {
            assert!(workload(&w.name).is_ok(), "{}", w.name);
            assert_eq!(w.trace, format!("{}.crlt", w.name));
        }
        let (rows, figs) = reproduce_cereal(&CerealConfig::default()).unwrap();
        assert_eq!(rows.len(), targets().unwrap().len());
        assert_eq!(figs.job_vs_kryo.len(), 2);
        let all = figures(&rows, &figs);
        assert_eq!(all.len(), 2);
        for (fig, comps) in all.iter().zip([&figs.spark, &figs.graphs]) {
            assert_eq!(fig.series.len(), 6);
            assert!(fig.series.iter().all(|s| s.points.len() == comps.len()));
        }
        // Java is the slower baseline on every graph and stream; the model beats Kryo on the
        // trees and graphs, where it overlaps many objects' memory accesses.
        for g in figs.graphs.iter().chain(&figs.spark) {
            assert!(g.vs_java() > g.vs_kryo(), "{}", g.workload);
            if g.workload.starts_with("tree") || g.workload.starts_with("graph") {
                assert!(g.vs_kryo() > 1.0, "{}", g.workload);
            }
        }
    }
}
