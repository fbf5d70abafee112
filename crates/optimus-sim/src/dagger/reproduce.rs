//! `optimus sim reproduce dagger`: Fig. 5's throughput and latency per CPU–NIC interface and
//! batch size, Table 1's Dagger column and §1's scaling, computed by the model and set beside
//! the paper's values (targets `dagger.*`), and the figures that show them. The other systems
//! of Table 1 are inputs: the per-core gains are the model's throughput over theirs.

use serde::{Deserialize, Serialize};

use super::interface::Interface;
use super::{run, DaggerConfig, DaggerReport, Experiment};
use crate::calibrate::{Row, Status, Target};
use crate::error::{Result, SimError};
use crate::figure::{FigureSpec, SeriesKind, SeriesSpec};

/// The paper's Dagger targets (a copy of ../shared/papers/targets.json's section).
pub const TARGETS_JSON: &str = include_str!("targets.json");

/// Fig. 5's fixed load for the latency comparison, Mrps.
pub const FIG5_LOAD_MRPS: f64 = 4.0;

/// Doorbell batch sizes of Fig. 5 (FaSST's and eRPC's, B = 4 to compare with UPI's B = 4,
/// and 32).
pub const DOORBELL_BATCHES: [usize; 6] = [1, 3, 4, 7, 11, 32];

/// UPI batch sizes of Fig. 5.
pub const UPI_BATCHES: [usize; 2] = [1, 4];

/// Loads of the latency–load curves (Fig. 6), Mrps.
pub const FIG6_LOADS: [f64; 12] = [0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0];

/// The paper's Dagger targets.
///
/// # Errors
/// [`SimError::Targets`] if the embedded copy is malformed.
pub fn targets() -> Result<Vec<Target>> {
    #[derive(Deserialize)]
    struct F {
        dagger: Vec<Target>,
    }
    let f: F = serde_json::from_str(TARGETS_JSON).map_err(|e| SimError::Targets(e.to_string()))?;
    Ok(f.dagger)
}

/// One interface setting's results.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Setting {
    /// `MMIO`, `doorbell B=3`, `UPI B=4`, ...
    pub name: String,
    /// Interface.
    pub interface: Interface,
    /// Batch size.
    pub batch: usize,
    /// Saturation throughput, Mrps.
    pub throughput_mrps: f64,
    /// Median round trip at Fig. 5's 4 Mrps, µs (NaN where 4 Mrps is past saturation).
    pub p50_us: f64,
    /// 99th percentile round trip at 4 Mrps, µs.
    pub p99_us: f64,
}

/// A thread layout's saturation throughput (UPI, B = 4).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Layout {
    /// Client threads.
    pub threads: usize,
    /// Cores they share.
    pub cores: usize,
    /// Throughput, Mrps.
    pub throughput_mrps: f64,
}

/// What `reproduce dagger` computed besides the target rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DaggerFigures {
    /// Every interface setting of Fig. 5.
    pub settings: Vec<Setting>,
    /// Thread layouts (§1's four threads on two cores among them).
    pub layouts: Vec<Layout>,
    /// Median round trip against load for UPI B = 1 and B = 4: `(batch, [(load, p50 µs)])`.
    pub latency_load: Vec<(usize, Vec<(f64, f64)>)>,
    /// The figures to draw.
    pub figures: Vec<FigureSpec>,
}

impl DaggerFigures {
    fn setting(&self, interface: Interface, batch: usize) -> Option<&Setting> {
        self.settings
            .iter()
            .find(|s| s.interface == interface && s.batch == batch)
    }

    fn layout(&self, threads: usize, cores: usize) -> Option<&Layout> {
        self.layouts
            .iter()
            .find(|l| l.threads == threads && l.cores == cores)
    }
}

fn setting_name(interface: Interface, batch: usize) -> String {
    match interface {
        Interface::Mmio => "MMIO".into(),
        _ => format!("{} B={batch}", interface.name()),
    }
}

/// Runs every experiment of the paper on `cfg` and fills the target rows.
///
/// # Errors
/// An invalid configuration, or a malformed embedded targets file.
pub fn reproduce_dagger(cfg: &DaggerConfig) -> Result<(Vec<Row>, DaggerFigures)> {
    let mut settings = Vec::new();
    let runs = std::iter::once((Interface::Mmio, 1))
        .chain(DOORBELL_BATCHES.iter().map(|&b| (Interface::Doorbell, b)))
        .chain(UPI_BATCHES.iter().map(|&b| (Interface::Upi, b)));
    for (interface, batch) in runs {
        let sat = run(cfg, &Experiment::fig5(interface, batch, None))?;
        let at_load = run(
            cfg,
            &Experiment::fig5(interface, batch, Some(FIG5_LOAD_MRPS)),
        )?;
        let (p50, p99) = if sat.throughput_mrps > FIG5_LOAD_MRPS {
            (at_load.p50_us, at_load.p99_us)
        } else {
            (f64::NAN, f64::NAN)
        };
        settings.push(Setting {
            name: setting_name(interface, batch),
            interface,
            batch,
            throughput_mrps: sat.throughput_mrps,
            p50_us: p50,
            p99_us: p99,
        });
    }
    let mut layouts = Vec::new();
    for (threads, cores) in [(1, 1), (2, 1), (2, 2), (4, 2)] {
        let exp = Experiment {
            threads,
            cores,
            requests_per_thread: 10_000,
            ..Experiment::fig5(Interface::Upi, 4, None)
        };
        layouts.push(Layout {
            threads,
            cores,
            throughput_mrps: run(cfg, &exp)?.throughput_mrps,
        });
    }
    let mut latency_load = Vec::new();
    for &batch in &UPI_BATCHES {
        let cap = settings
            .iter()
            .find(|s| s.interface == Interface::Upi && s.batch == batch)
            .map_or(0.0, |s| s.throughput_mrps);
        let mut pts = Vec::new();
        for &load in FIG6_LOADS.iter().filter(|&&l| l < cap) {
            let exp = Experiment {
                requests_per_thread: 5_000,
                ..Experiment::fig5(Interface::Upi, batch, Some(load))
            };
            pts.push((load, run(cfg, &exp)?.p50_us));
        }
        latency_load.push((batch, pts));
    }
    let tor_ns = table1_tor_delay_us()? * 1e3;
    let table1_rtt: DaggerReport = run(
        cfg,
        &Experiment {
            tor_delay_ns: tor_ns,
            ..Experiment::fig5(Interface::Upi, 1, Some(FIG5_LOAD_MRPS))
        },
    )?;
    let mut figs = DaggerFigures {
        settings,
        layouts,
        latency_load,
        figures: Vec::new(),
    };
    let targets = targets()?;
    let input = |id: &str| targets.iter().find(|t| t.id == id).map(|t| t.value);
    // The best single-core throughput of the other systems of Table 1.
    let best_other = ["ix", "fasst", "erpc"]
        .iter()
        .filter_map(|s| input(&format!("dagger.table1.{s}.thr.mrps")))
        .fold(f64::NAN, f64::max);
    let thr = |i, b| figs.setting(i, b).map_or(f64::NAN, |s| s.throughput_mrps);
    let lat = |i, b, hi: bool| {
        figs.setting(i, b)
            .map_or(f64::NAN, |s| if hi { s.p99_us } else { s.p50_us })
    };
    let per_core = |t, c| {
        figs.layout(t, c)
            .map_or(f64::NAN, |l| l.throughput_mrps / c as f64)
    };
    let mut rows = Vec::new();
    for t in &targets {
        use Interface::{Doorbell, Mmio, Upi};
        let m = |v: f64, note: String| (Some(v), Status::Met, note);
        let (model, status, note): (Option<f64>, Status, String) = match t.id.as_str() {
            "dagger.fig5.mmio.mrps" => m(thr(Mmio, 1), "saturation, one client thread".into()),
            "dagger.fig5.doorbell_b1.mrps" => m(thr(Doorbell, 1), "saturation".into()),
            "dagger.fig5.doorbell_b3.mrps" => m(thr(Doorbell, 3), "saturation".into()),
            "dagger.fig5.doorbell_b7.mrps" => m(thr(Doorbell, 7), "saturation".into()),
            "dagger.fig5.doorbell_b11.mrps" => m(thr(Doorbell, 11), "saturation".into()),
            "dagger.fig5.doorbell_b32_saturation.mrps" => {
                m(thr(Doorbell, 32), "saturation".into())
            }
            "dagger.fig5.upi_b1.mrps" => m(thr(Upi, 1), "saturation, LLC polling".into()),
            "dagger.fig5.upi_b4.mrps" | "dagger.table1.dagger.thr.mrps" | "dagger.sec1.single_thread.mrps" => {
                m(thr(Upi, 4), "UPI B=4 at saturation, one thread on one core".into())
            }
            "dagger.fig5.upi_b1_vs_doorbell.pct" => m(
                (thr(Upi, 1) / thr(Doorbell, 1) - 1.0) * 100.0,
                "model UPI B=1 over model doorbell B=1".into(),
            ),
            "dagger.fig5.upi_b4_vs_doorbell.pct" => m(
                (thr(Upi, 4) / thr(Doorbell, 4) - 1.0) * 100.0,
                "model UPI B=4 over model doorbell B=4".into(),
            ),
            "dagger.fig5.mmio_median_latency.us" => {
                m(lat(Mmio, 1, false), "p50 at 4 Mrps".into())
            }
            "dagger.fig5.doorbell_b1_latency.us" => {
                m(lat(Doorbell, 1, false), "p50 at 4 Mrps".into())
            }
            "dagger.fig5.upi_b1_median_latency.min.us" => {
                m(lat(Upi, 1, false), "p50 at 4 Mrps (the range's low end)".into())
            }
            "dagger.fig5.upi_b1_median_latency.max.us" => {
                m(lat(Upi, 1, true), "p99 at 4 Mrps (the range's high end: Fig. 5's tail)".into())
            }
            "dagger.fig5.upi_b4_median_latency.min.us" => {
                m(lat(Upi, 4, false), "p50 at 4 Mrps (the range's low end)".into())
            }
            "dagger.fig5.upi_b4_median_latency.max.us" => {
                m(lat(Upi, 4, true), "p99 at 4 Mrps (the range's high end: Fig. 5's tail)".into())
            }
            "dagger.table1.dagger.rtt.us" => m(
                table1_rtt.p50_us,
                format!("UPI B=1 p50 at 4 Mrps with Table 1's {tor_ns:.0} ns ToR delay per round trip"),
            ),
            "dagger.sec1.four_threads_two_cores.mrps" => m(
                figs.layout(4, 2).map_or(f64::NAN, |l| l.throughput_mrps),
                "UPI B=4, four client threads on two cores (two per core, SMT), four server threads likewise".into(),
            ),
            "dagger.sec1.per_core_gain.min.x" => m(
                per_core(1, 1) / best_other,
                format!("one thread per core over the best other system of Table 1 ({best_other} Mrps)"),
            ),
            "dagger.sec1.per_core_gain.max.x" => m(
                per_core(2, 1) / best_other,
                format!("two SMT threads per core over the best other system of Table 1 ({best_other} Mrps)"),
            ),
            "dagger.fig5.doorbell_b1_vs_fasst.pct" => (
                None,
                Status::NotModeled,
                format!(
                    "FaSST's own single-core doorbell rate is not in the paper (the model's {:.2} Mrps at 65 % above it would put it at {:.2} Mrps)",
                    thr(Doorbell, 1),
                    thr(Doorbell, 1) / 1.65
                ),
            ),
            id if id.starts_with("dagger.table1.") => (
                None,
                Status::Input,
                "another system's published figure: an input (the per-core gains divide by it)"
                    .into(),
            ),
            _ => (None, Status::NotModeled, "not a result this model computes".into()),
        };
        let deviation = model.map(|v| (v - t.value) / t.value);
        let status = match (status, deviation) {
            (Status::Met, Some(d)) if !(d.abs() <= t.kind.tolerance()) => Status::Missed,
            (s, _) => s,
        };
        rows.push(Row {
            id: t.id.clone(),
            paper: t.value,
            model,
            unit: t.unit.clone(),
            deviation,
            kind: t.kind.name().to_string(),
            status,
            note,
        });
    }
    figs.figures = figures(&figs, &rows);
    Ok((rows, figs))
}

/// Table 1's ToR delay for Dagger, µs (its config), 0.3 if absent.
fn table1_tor_delay_us() -> Result<f64> {
    #[derive(Deserialize)]
    struct Cfg {
        tor_delay_us: Option<f64>,
    }
    #[derive(Deserialize)]
    struct T {
        id: String,
        config: Option<Cfg>,
    }
    #[derive(Deserialize)]
    struct F {
        dagger: Vec<T>,
    }
    let f: F = serde_json::from_str(TARGETS_JSON).map_err(|e| SimError::Targets(e.to_string()))?;
    Ok(f.dagger
        .into_iter()
        .find(|t| t.id == "dagger.table1.dagger.rtt.us")
        .and_then(|t| t.config)
        .and_then(|c| c.tor_delay_us)
        .unwrap_or(0.3))
}

fn paper_value(rows: &[Row], id: &str) -> f64 {
    rows.iter()
        .find(|r| r.id == id)
        .map_or(f64::NAN, |r| r.paper)
}

/// The figures: Fig. 5's throughput and latency per setting, Fig. 6's latency against load,
/// and throughput per thread layout.
fn figures(figs: &DaggerFigures, rows: &[Row]) -> Vec<FigureSpec> {
    let names: Vec<String> = figs.settings.iter().map(|s| s.name.clone()).collect();
    let at = |f: &dyn Fn(&Setting) -> f64| -> Vec<(f64, f64)> {
        figs.settings
            .iter()
            .enumerate()
            .map(|(i, s)| (i as f64, f(s)))
            .collect()
    };
    let index = |i: Interface, b: usize| {
        figs.settings
            .iter()
            .position(|s| s.interface == i && s.batch == b)
            .map_or(f64::NAN, |x| x as f64)
    };
    use Interface::{Doorbell, Mmio, Upi};
    let thr_ids = [
        (Mmio, 1, "dagger.fig5.mmio.mrps"),
        (Doorbell, 1, "dagger.fig5.doorbell_b1.mrps"),
        (Doorbell, 3, "dagger.fig5.doorbell_b3.mrps"),
        (Doorbell, 7, "dagger.fig5.doorbell_b7.mrps"),
        (Doorbell, 11, "dagger.fig5.doorbell_b11.mrps"),
        (Doorbell, 32, "dagger.fig5.doorbell_b32_saturation.mrps"),
        (Upi, 1, "dagger.fig5.upi_b1.mrps"),
        (Upi, 4, "dagger.fig5.upi_b4.mrps"),
    ];
    let throughput = FigureSpec {
        name: "dagger_fig5_throughput".into(),
        title: "Dagger Fig. 5: single-core throughput per CPU-NIC interface".into(),
        x_label: "interface and batch".into(),
        y_label: "throughput (Mrps)".into(),
        x_names: names.clone(),
        series: vec![
            SeriesSpec::new("model", SeriesKind::ModelPoints, at(&|s| s.throughput_mrps)),
            SeriesSpec::new(
                "paper",
                SeriesKind::Paper,
                thr_ids
                    .iter()
                    .map(|&(i, b, id)| (index(i, b), paper_value(rows, id)))
                    .collect(),
            ),
        ],
        log_y: false,
    };
    let lat_ids = [
        (Mmio, 1, "dagger.fig5.mmio_median_latency.us"),
        (Doorbell, 1, "dagger.fig5.doorbell_b1_latency.us"),
        (Upi, 1, "dagger.fig5.upi_b1_median_latency.min.us"),
        (Upi, 4, "dagger.fig5.upi_b4_median_latency.min.us"),
    ];
    let hi_ids = [
        (Upi, 1, "dagger.fig5.upi_b1_median_latency.max.us"),
        (Upi, 4, "dagger.fig5.upi_b4_median_latency.max.us"),
    ];
    let latency = FigureSpec {
        name: "dagger_fig5_latency".into(),
        title: "Dagger Fig. 5: round trip at 4 Mrps per CPU-NIC interface".into(),
        x_label: "interface and batch".into(),
        y_label: "round trip (us)".into(),
        x_names: names,
        series: vec![
            SeriesSpec::new("model p50", SeriesKind::ModelPoints, at(&|s| s.p50_us)),
            SeriesSpec::new("model p99", SeriesKind::ModelPoints, at(&|s| s.p99_us)),
            SeriesSpec::new(
                "paper median (range low end)",
                SeriesKind::Paper,
                lat_ids
                    .iter()
                    .map(|&(i, b, id)| (index(i, b), paper_value(rows, id)))
                    .collect(),
            ),
            SeriesSpec::new(
                "paper range high end",
                SeriesKind::Paper,
                hi_ids
                    .iter()
                    .map(|&(i, b, id)| (index(i, b), paper_value(rows, id)))
                    .collect(),
            ),
        ],
        log_y: false,
    };
    let mut load_series: Vec<SeriesSpec> = figs
        .latency_load
        .iter()
        .map(|(b, pts)| SeriesSpec::new(format!("model UPI B={b}"), SeriesKind::Model, pts.clone()))
        .collect();
    // Dagger's soft reconfiguration picks the batch per load: the lower curve.
    if let [(_, one), (_, four)] = figs.latency_load.as_slice() {
        let dynamic: Vec<(f64, f64)> = FIG6_LOADS
            .iter()
            .filter_map(|&l| {
                let a = one.iter().find(|p| p.0 == l).map(|p| p.1);
                let b = four.iter().find(|p| p.0 == l).map(|p| p.1);
                match (a, b) {
                    (Some(a), Some(b)) => Some((l, a.min(b))),
                    (a, b) => a.or(b).map(|v| (l, v)),
                }
            })
            .collect();
        load_series.push(SeriesSpec::new(
            "model dynamic batching",
            SeriesKind::Model,
            dynamic,
        ));
    }
    let b1 = paper_value(rows, "dagger.fig5.upi_b1_median_latency.min.us");
    let b4 = paper_value(rows, "dagger.fig5.upi_b4_median_latency.min.us");
    load_series.push(SeriesSpec::new(
        "paper p50 at 4 Mrps (B=1, B=4)",
        SeriesKind::Paper,
        vec![(FIG5_LOAD_MRPS, b1), (FIG5_LOAD_MRPS, b4)],
    ));
    let load = FigureSpec {
        name: "dagger_fig6_latency_load".into(),
        title: "Dagger Fig. 6: median round trip against load, UPI".into(),
        x_label: "offered load (Mrps)".into(),
        y_label: "median round trip (us)".into(),
        x_names: Vec::new(),
        series: load_series,
        log_y: false,
    };
    let layout_names: Vec<String> = figs
        .layouts
        .iter()
        .map(|l| format!("{} thr / {} core", l.threads, l.cores))
        .collect();
    let layout_index = |t: usize, c: usize| {
        figs.layouts
            .iter()
            .position(|l| l.threads == t && l.cores == c)
            .map_or(f64::NAN, |x| x as f64)
    };
    let scaling = FigureSpec {
        name: "dagger_threads".into(),
        title: "Dagger §1: throughput per thread layout, UPI B=4".into(),
        x_label: "client threads / cores".into(),
        y_label: "throughput (Mrps)".into(),
        x_names: layout_names,
        series: vec![
            SeriesSpec::new(
                "model",
                SeriesKind::ModelPoints,
                figs.layouts
                    .iter()
                    .enumerate()
                    .map(|(i, l)| (i as f64, l.throughput_mrps))
                    .collect(),
            ),
            SeriesSpec::new(
                "paper",
                SeriesKind::Paper,
                vec![
                    (
                        layout_index(1, 1),
                        paper_value(rows, "dagger.sec1.single_thread.mrps"),
                    ),
                    (
                        layout_index(4, 2),
                        paper_value(rows, "dagger.sec1.four_threads_two_cores.mrps"),
                    ),
                ],
            ),
        ],
        log_y: false,
    };
    vec![throughput, latency, load, scaling]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_computed_target_is_met() {
        let (rows, figs) = reproduce_dagger(&DaggerConfig::default()).unwrap();
        assert_eq!(rows.len(), targets().unwrap().len());
        let missed: Vec<&str> = rows
            .iter()
            .filter(|r| r.status == Status::Missed)
            .map(|r| r.id.as_str())
            .collect();
        assert!(missed.is_empty(), "missed: {missed:?}");
        assert_eq!(figs.figures.len(), 4);
    }
}
