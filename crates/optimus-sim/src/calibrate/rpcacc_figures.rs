//! The RPCAcc paper's figures as data (Figs. 2, 5 to 13 and C3): which model curves, which
//! published points overlay them and where each published number sits on the model's axes.
//! The CLI draws them (`optimus sim reproduce rpcacc --plot DIR`).

use std::cell::RefCell;
use std::ops::Range;

use super::{Row, RpcFigures};
use crate::error::Result;
use crate::figure::{short, FigureSpec, SeriesKind, SeriesSpec};
use crate::rpcacc::service::Load;

struct Figure<'a> {
    name: &'a str,
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    x_names: Vec<String>,
    series: Vec<SeriesSpec>,
    log_y: bool,
}

impl Figure<'_> {
    fn spec(&self) -> FigureSpec {
        FigureSpec {
            name: self.name.into(),
            title: self.title.into(),
            x_label: self.x_label.into(),
            y_label: self.y_label.into(),
            x_names: self.x_names.clone(),
            series: self.series.clone(),
            log_y: self.log_y,
        }
    }
}

/// Where the figures go as they are made.
type Out = RefCell<Vec<FigureSpec>>;

fn write(out: &Out, f: &Figure) -> Result<()> {
    out.borrow_mut().push(f.spec());
    Ok(())
}

/// The figures of `reproduce rpcacc`.
pub fn rpcacc_figures(rows: &[Row], figs: &RpcFigures) -> Vec<FigureSpec> {
    let out = Out::default();
    // Making a figure cannot fail: `write` only collects it.
    let _ = draw_all(&out, rows, figs);
    out.into_inner()
}

/// RPCAcc's Fig. 2 (PCIe latency sweep), Fig. 5 (one-shot deserialization), Fig. 6 (host
/// time saved by the offloads), Fig. 7 (serialization per message), Fig. 8 (BlueField-3),
/// Fig. 9 (Dagger), Fig. 10 (TX against an on-chip accelerator), Fig. 11 (automatic field
/// update), Fig. 12 (image service throughput and latency) and Fig. 13 (DeathStarBench time
/// per call).
fn draw_all(dir: &Out, rows: &[Row], figs: &RpcFigures) -> Result<()> {
    let mut fig2 = Figure {
        name: "rpcacc_fig2",
        title: "Fig. 2: ProtoACC serializer time vs interconnect latency (Bench2)",
        x_label: "round-trip latency (ns)",
        y_label: "time / time at 70 ns",
        x_names: vec![],
        series: vec![model("model, geomean", figs.latency_sweep.clone())],
        log_y: false,
    };
    if let Some(v) = paper_value(rows, "rpcacc.fig2.ser_time_increase_70ns_to_1250ns.x") {
        fig2.series
            .push(paper("paper, 1250 ns", vec![(70.0, 1.0), (1250.0, v)]));
    }
    write(dir, &fig2)?;
    let mut fig5 = Figure {
        name: "rpcacc_fig5",
        title: "Fig. 5: one-shot over field-by-field deserialization throughput",
        x_label: "log2 mean field bytes",
        y_label: "speedup (x)",
        x_names: vec![],
        series: vec![],
        log_y: false,
    };
    let mut pts: Vec<(f64, f64)> = figs
        .fig5
        .iter()
        .map(|&(b, s)| (b.max(1.0).log2(), s))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    fig5.series.push(model("model, per message", pts.clone()));
    let lo = pts.first().map_or(0.0, |p| p.0);
    let hi = pts.last().map_or(1.0, |p| p.0);
    for (id, what, xs) in [
        ("rpcacc.fig5.oneshot_deser_speedup.avg.x", "average", lo..hi),
        (
            "rpcacc.fig5.oneshot_deser_speedup.small_fields.x",
            "average, fields < 1 KB",
            lo..10.0_f64.min(hi),
        ),
    ] {
        if let Some(v) = paper_value(rows, id) {
            let label = format!("paper {what}: {v}x (model {})", model_value(rows, id));
            fig5.series.push(paper_level(label, v, xs));
        }
    }
    write(dir, &fig5)?;
    let mut fig7 = Figure {
        name: "rpcacc_fig7",
        title: "Fig. 7: memory-affinity serialization speedup per message",
        x_label: "message (bench x 10 + index)",
        y_label: "speedup (x)",
        x_names: vec![],
        series: vec![
            model(
                "over ProtoACC-PCIe",
                categories(figs.fig7.iter().map(|t| t.1 / t.2)),
            ),
            model(
                "over CPU-only",
                categories(figs.fig7.iter().map(|t| t.0 / t.2)),
            ),
        ],
        log_y: false,
    };
    let n = figs.fig7.len().saturating_sub(1) as f64;
    for (id, label) in [
        (
            "rpcacc.fig7.memaff_vs_protoacc_pcie.x",
            "paper geomean vs ProtoACC-PCIe",
        ),
        (
            "rpcacc.fig7.memaff_vs_cpu_only.x",
            "paper geomean vs CPU-only",
        ),
    ] {
        if let Some(v) = paper_value(rows, id) {
            let label = format!("{label}: {v}x (model {})", model_value(rows, id));
            fig7.series.push(paper_level(label, v, 0.0..n));
        }
    }
    write(dir, &fig7)?;
    // Fig. 12a publishes ratios only, read per host core: where a baseline is still bound
    // by its cores, the paper's ratio puts it at that many cores' worth of RPCAcc's one-core
    // rate over the ratio. Where the model's baseline has reached its cap, a per-core ratio
    // says nothing, so no paper point is drawn.
    let curve = |f: fn(&(u32, f64, f64, f64)) -> f64| -> Vec<(f64, f64)> {
        figs.fig12a
            .iter()
            .map(|p| (f64::from(p.0), f(p) / 1e3))
            .collect()
    };
    let rpcacc_per_core = figs
        .fig12a
        .first()
        .map_or(f64::NAN, |p| p.3 / f64::from(p.0) / 1e3);
    let mut fig12a = Figure {
        name: "rpcacc_fig12a",
        title: "Fig. 12a: image-compression service throughput",
        x_label: "host cores",
        y_label: "thousand requests/s",
        x_names: vec![],
        series: vec![
            model("CPU-only", curve(|p| p.1)),
            model("ProtoACC-PCIe", curve(|p| p.2)),
            model("RPCAcc", curve(|p| p.3)),
        ],
        log_y: false,
    };
    for (id, design, baseline) in [
        (
            "rpcacc.fig12a.throughput_vs_protoacc_pcie.x",
            "ProtoACC-PCIe",
            1,
        ),
        ("rpcacc.fig12a.throughput_vs_cpu_only.x", "CPU-only", 0),
    ] {
        let Some(v) = paper_value(rows, id) else {
            continue;
        };
        let implied = per_core_ratio(&fig12a.series[baseline].points, rpcacc_per_core / v);
        fig12a.series.push(paper(
            format!("paper, per core: {design} = RPCAcc / {v}"),
            implied,
        ));
    }
    write(dir, &fig12a)?;
    // Fig. 12b publishes ratios only: each baseline's paper point is RPCAcc's latency times
    // the ratio, average and (§I, ProtoACC-PCIe only) tail.
    let (per_s, loads) = figs.fig12b;
    let mean_us = loads.map(|l| l.mean_ns / 1e3);
    let p99_us = loads.map(|l| l.p99_ns / 1e3);
    let title = format!(
        "Fig. 12b: image-compression service latency at {:.0} thousand requests/s",
        per_s / 1e3
    );
    let mut fig12b = Figure {
        name: "rpcacc_fig12b",
        title: &title,
        x_label: "design",
        y_label: "latency (us)",
        x_names: ["CPU-only", "ProtoACC-PCIe", "RPCAcc"]
            .map(String::from)
            .to_vec(),
        series: vec![
            model("model, average", categories(mean_us)),
            model("model, 99th percentile", categories(p99_us)),
        ],
        log_y: false,
    };
    for (id, x, what, rpcacc_us) in [
        (
            "rpcacc.fig12b.avg_latency_vs_cpu_only.x",
            0.0,
            "average",
            mean_us[2],
        ),
        (
            "rpcacc.fig12b.avg_latency_vs_protoacc_pcie.x",
            1.0,
            "average",
            mean_us[2],
        ),
        (
            "rpcacc.sec1.img.p99_latency_reduction.x",
            1.0,
            "99th percentile",
            p99_us[2],
        ),
    ] {
        if let Some(v) = paper_value(rows, id) {
            fig12b.series.push(paper(
                format!("paper {what} ratio: RPCAcc x {v}"),
                vec![(x, rpcacc_us * v)],
            ));
        }
    }
    write(dir, &fig12b)?;
    // The same ratio under load: requests arrive as a Poisson stream to Fig. 12a's largest
    // core count (the model's `fig12b_load`), and the paper's average and tail ratios are
    // drawn level across the loads, since it does not say at which one it measured them;
    // the load the model reads Fig. 12b at is marked.
    let load = figs.fig12b_load.points();
    let ratio = |f: fn(&Load) -> f64| -> Vec<(f64, f64)> {
        load.iter()
            .map(|(per_s, [pcie, rpcacc])| (per_s / 1e3, f(pcie) / f(rpcacc)))
            .collect()
    };
    let cores = figs.fig12b_load.cores;
    let x_label = format!("offered thousand requests/s (Poisson, {cores} host cores)");
    let mut fig12b_load = Figure {
        name: "rpcacc_fig12b_load",
        title: "Fig. 12b under load: ProtoACC-PCIe / RPCAcc latency",
        x_label: &x_label,
        y_label: "latency ratio (x)",
        x_names: vec![],
        series: vec![
            model("model, average", ratio(|l| l.mean_ns)),
            model("model, 99th percentile", ratio(|l| l.p99_ns)),
            model_points(
                "model at Fig. 12b's load, average",
                vec![(per_s / 1e3, loads[1].mean_ns / loads[2].mean_ns)],
            ),
            model_points(
                "model at Fig. 12b's load, 99th percentile",
                vec![(per_s / 1e3, loads[1].p99_ns / loads[2].p99_ns)],
            ),
        ],
        log_y: false,
    };
    let ends = [
        load.first().map_or(0.0, |p| p.0 / 1e3),
        load.last().map_or(1.0, |p| p.0 / 1e3),
    ];
    for (id, what) in [
        ("rpcacc.fig12b.avg_latency_vs_protoacc_pcie.x", "average"),
        ("rpcacc.sec1.img.p99_latency_reduction.x", "99th percentile"),
    ] {
        if let Some(v) = paper_value(rows, id) {
            fig12b_load.series.push(paper_level(
                format!("paper, {what}: {v}x"),
                v,
                ends[0]..ends[1],
            ));
        }
    }
    write(dir, &fig12b_load)?;
    let bar = |f: fn(&(String, f64, f64)) -> f64| -> Vec<(f64, f64)> {
        categories(figs.fig6.iter().map(f))
    };
    let mut fig6 = Figure {
        name: "rpcacc_fig6",
        title: "Fig. 6: host time saved (HyperProtoBench benches, DeathStarBench services)",
        x_label: "bench / service",
        y_label: "host time saved (%)",
        x_names: figs.fig6.iter().map(|b| b.0.clone()).collect(),
        series: vec![
            model("memcpy offload", bar(|b| b.1)),
            model("memcpy + encoding offload", bar(|b| b.2)),
        ],
        log_y: false,
    };
    let hpb = figs
        .fig6
        .iter()
        .filter(|b| b.0.starts_with("bench"))
        .count() as f64;
    let last = figs.fig6.len().saturating_sub(1) as f64;
    let hpb_benches = 0.0..hpb - 1.0;
    let dsb_services = hpb..last;
    for (id, label, xs) in [
        (
            "rpcacc.fig6.memcpy_offload_cycles.hpb.pct",
            "memcpy offload, HyperProtoBench",
            hpb_benches.clone(),
        ),
        (
            "rpcacc.fig6.memcpy_encoding_offload_cycles.hpb.pct",
            "memcpy + encoding offload, HyperProtoBench",
            hpb_benches,
        ),
        (
            "rpcacc.fig6.memcpy_offload_cycles.dsb.pct",
            "memcpy offload, DeathStarBench",
            dsb_services.clone(),
        ),
        (
            "rpcacc.fig6.memcpy_encoding_offload_cycles.dsb.pct",
            "memcpy + encoding offload, DeathStarBench",
            dsb_services,
        ),
    ] {
        if let Some(v) = paper_value(rows, id) {
            let label = format!(
                "paper average, {label}: {v} % (model {} %)",
                model_value(rows, id)
            );
            fig6.series.push(paper_level(label, v, xs));
        }
    }
    write(dir, &fig6)?;
    // Fig. 8 publishes averages over its six benches of each design's gain over BF3 (and of
    // one design over the other); each row holds (bench, one design, another), normalized to
    // BF3. Both panels are drawn as gains, the statistic the averages are taken of; `log_y`
    // where one design's gains are tens of times the other's.
    let fig8 = |name,
                title,
                y_label,
                gains: [Vec<f64>; 2],
                benches: &[(String, f64, f64)],
                designs: [&str; 2],
                levels: Vec<(String, f64)>,
                log_y: bool|
     -> Result<()> {
        let last = benches.len().saturating_sub(1) as f64;
        let [first, second] = gains;
        let mut series = vec![
            model(designs[0], categories(first)),
            model(designs[1], categories(second)),
        ];
        series.extend(
            levels
                .into_iter()
                .map(|(label, v)| paper_level(label, v, 0.0..last)),
        );
        write(
            dir,
            &Figure {
                name,
                title,
                x_label: "HyperProtoBench bench",
                y_label,
                x_names: benches.iter().map(|b| b.0.clone()).collect(),
                series,
                log_y,
            },
        )
    };
    // A level for each design: the first's published average, and the second's as the
    // product of the first's and the published average of the second over the first (an
    // average of products is not the product of averages: the label says so).
    let levels = |first: (&str, &str), second: (&str, &str)| {
        let (Some(a), Some(b)) = (paper_value(rows, first.1), paper_value(rows, second.1)) else {
            return Vec::new();
        };
        vec![
            (
                format!(
                    "paper average, {}: {a}x (model {})",
                    first.0,
                    model_value(rows, first.1)
                ),
                a,
            ),
            (
                format!(
                    "paper, {}: {a} x {b} = {:.2}x, the product of two averages (model over {}: {})",
                    second.0,
                    a * b,
                    first.0,
                    model_value(rows, second.1)
                ),
                a * b,
            ),
        ]
    };
    fig8(
        "rpcacc_fig8a",
        "Fig. 8a: BlueField-3 serialization speed-up over BF3 (BF3 time / design time)",
        "speed-up over BF3",
        [
            figs.fig8a.iter().map(|b| 1.0 / b.1).collect(),
            figs.fig8a.iter().map(|b| 1.0 / b.2).collect(),
        ],
        &figs.fig8a,
        ["BF3-MemoryAffinity", "BF3-DSA"],
        levels(
            ("BF3-MemoryAffinity", "rpcacc.fig8a.bf3_preser_reduction.x"),
            ("BF3-DSA", "rpcacc.fig8a.bf3_memcpy_additional.x"),
        ),
        false,
    )?;
    fig8(
        "rpcacc_fig8b",
        "Fig. 8b: deserialization throughput (normalized to BF3)",
        "normalized throughput",
        [
            figs.fig8b.iter().map(|b| b.1).collect(),
            figs.fig8b.iter().map(|b| b.2).collect(),
        ],
        &figs.fig8b,
        ["BF3-Oneshot", "RPCAcc"],
        levels(
            ("BF3-Oneshot", "rpcacc.fig8b.bf3_oneshot_deser_gain.x"),
            ("RPCAcc", "rpcacc.fig8b.rpcacc_vs_bf3_oneshot_deser.x"),
        ),
        // RPCAcc's tens of times would squeeze BF3-Oneshot's gains flat on a linear axis.
        true,
    )?;
    // Figs. 9 and 10 publish mean ratios over the suite's messages; each bench's paper
    // point is the model's design the ratio is taken against, scaled by it.
    let per_bench = |ns: Vec<f64>| categories(ns.into_iter().map(|ns| ns / 1e3));
    let dagger_rpcacc = per_bench(figs.fig9.iter().map(|b| b.2).collect());
    let mut fig9 = Figure {
        name: "rpcacc_fig9",
        title: "Fig. 9: Dagger serialization time per message (2 GHz, UPI)",
        x_label: "HyperProtoBench bench",
        y_label: "time per message (us)",
        x_names: figs.fig9.iter().map(|b| b.0.clone()).collect(),
        series: vec![
            model(
                "Dagger-ProtoACC",
                per_bench(figs.fig9.iter().map(|b| b.1).collect()),
            ),
            model("Dagger-RPCAcc", dagger_rpcacc.clone()),
        ],
        log_y: false,
    };
    if let Some(v) = paper_value(rows, "rpcacc.fig9.dagger_rpcacc_ser_reduction.x") {
        fig9.series.push(paper(
            format!("paper mean ratio: Dagger-ProtoACC = Dagger-RPCAcc x {v}"),
            scaled(&dagger_rpcacc, v),
        ));
    }
    write(dir, &fig9)?;
    let tx = |k: usize| per_bench(figs.fig10.iter().map(|b| b.1[k]).collect());
    let mut fig10 = Figure {
        name: "rpcacc_fig10",
        title: "Fig. 10: TX time per message, RPCAcc and ProtoACC-OnChip",
        x_label: "HyperProtoBench bench",
        y_label: "TX time per message (us)",
        x_names: figs.fig10.iter().map(|b| b.0.clone()).collect(),
        series: vec![
            model("RPCAcc, 250 MHz", tx(0)),
            model("ProtoACC-OnChip, 250 MHz", tx(1)),
            model("RPCAcc, 2 GHz", tx(2)),
            model("ProtoACC-OnChip, 2 GHz", tx(3)),
        ],
        log_y: false,
    };
    for (id, clock, k) in [
        ("rpcacc.fig10.onchip_tx_advantage.250mhz.x", "250 MHz", 0),
        ("rpcacc.fig10.onchip_tx_advantage.2ghz.x", "2 GHz", 2),
    ] {
        if let Some(v) = paper_value(rows, id) {
            fig10.series.push(paper(
                format!("paper mean ratio, {clock}: ProtoACC-OnChip = RPCAcc / {v}"),
                scaled(&tx(k), 1.0 / v),
            ));
        }
    }
    write(dir, &fig10)?;
    // Fig. 11 publishes no values; its scenarios are drawn from the model alone. Each
    // row holds (request, a with update, a without, b with, b without).
    let fig11 = |k: usize| -> Vec<(f64, f64)> {
        figs.fig11
            .iter()
            .map(|r| (f64::from(r.0), [r.1, r.2, r.3, r.4][k] / 1e3))
            .collect()
    };
    for (name, title, k) in [
        (
            "rpcacc_fig11a",
            "Fig. 11a: compute unit unavailable after request 3",
            0,
        ),
        (
            "rpcacc_fig11b",
            "Fig. 11b: compute unit available from request 4",
            2,
        ),
    ] {
        write(
            dir,
            &Figure {
                name,
                title,
                x_label: "request",
                y_label: "host execution time (us)",
                x_names: vec![],
                series: vec![
                    model("with automatic field update", fig11(k)),
                    model("without", fig11(k + 1)),
                ],
                log_y: false,
            },
        )?;
    }
    // Fig. 13 publishes geometric-mean ratios only.
    let call = |f: fn(&(String, f64, f64, f64)) -> f64| -> Vec<(f64, f64)> {
        categories(figs.fig13.iter().map(|c| f(c) / 1e3))
    };
    write(
        dir,
        &Figure {
            name: "rpcacc_fig13",
            title: "Fig. 13: DeathStarBench RPC layer per call (services in Fig. 13's order)",
            x_label: "service",
            y_label: "time per call (us)",
            x_names: figs.fig13.iter().map(|c| c.0.clone()).collect(),
            series: designs_and_ratios(
                rows,
                [call(|c| c.1), call(|c| c.2), call(|c| c.3)],
                &[
                    ("rpcacc.fig13.dsb_exec_time_vs_cpu_only.x", "CPU-only"),
                    (
                        "rpcacc.fig13.dsb_exec_time_vs_protoacc_pcie.x",
                        "ProtoACC-PCIe",
                    ),
                ],
            ),
            log_y: false,
        },
    )?;
    // C3 publishes the worst placement's loss against the best only: the paper's worst is
    // the model's best over its ratio.
    let best = figs.c3.iter().map(|p| p.1).fold(f64::NAN, f64::max);
    let last = figs.c3.len().saturating_sub(1) as f64;
    let mut series = vec![model("RPCAcc", categories(figs.c3.iter().map(|p| p.1)))];
    let id = "rpcacc.c3.placement_worst_vs_best.x";
    series.extend(paper_value(rows, id).map(|v| {
        let m = model_value(rows, id);
        paper_level(
            format!("paper: worst = best / {v} (model: best / {m})"),
            best / v,
            0.0..last,
        )
    }));
    write(
        dir,
        &Figure {
            name: "rpcacc_c3",
            title: "C3: cloud gateway throughput per placement (fields in card memory)",
            x_label: "fields in card memory",
            y_label: "throughput (Gbps)",
            x_names: figs.c3.iter().map(|p| p.0.clone()).collect(),
            series,
            log_y: false,
        },
    )
}

/// A figure that publishes only `(target id, baseline)` ratios of times to RPCAcc's: the
/// model's CPU-only, ProtoACC-PCIe and RPCAcc curves, then where the paper's ratios put each
/// baseline (RPCAcc's time times the ratio), from the model's RPCAcc points.
fn designs_and_ratios(
    rows: &[Row],
    [cpu_only, protoacc_pcie, rpcacc]: [Vec<(f64, f64)>; 3],
    ratios: &[(&str, &str)],
) -> Vec<SeriesSpec> {
    let implied: Vec<SeriesSpec> = ratios
        .iter()
        .filter_map(|(id, design)| {
            let v = paper_value(rows, id)?;
            Some(paper(
                format!("paper ratio: {design} = RPCAcc x {v}"),
                scaled(&rpcacc, v),
            ))
        })
        .collect();
    let mut series = vec![
        model("CPU-only", cpu_only),
        model("ProtoACC-PCIe", protoacc_pcie),
        model("RPCAcc", rpcacc),
    ];
    series.extend(implied);
    series
}

/// Where a per-core ratio puts a design whose model throughput against host cores is
/// `baseline`: `per_core` times the cores, at each core count where the baseline still grows
/// with its cores (at or above its one-core rate per core), and nowhere past its cap.
fn per_core_ratio(baseline: &[(f64, f64)], per_core: f64) -> Vec<(f64, f64)> {
    let one_core = baseline.first().map_or(f64::NAN, |p| p.1 / p.0);
    baseline
        .iter()
        .filter(|p| p.1 >= p.0 * one_core * (1.0 - 1e-9))
        .map(|p| (p.0, p.0 * per_core))
        .collect()
}

/// `points` with each y multiplied by `by`: where a published ratio puts a design, from
/// the design the ratio is taken against.
fn scaled(points: &[(f64, f64)], by: f64) -> Vec<(f64, f64)> {
    points.iter().map(|&(x, y)| (x, y * by)).collect()
}

/// Points at x = 0, 1, ... (a figure's named categories) with the values `ys`.
fn categories(ys: impl IntoIterator<Item = f64>) -> Vec<(f64, f64)> {
    ys.into_iter()
        .enumerate()
        .map(|(i, y)| (i as f64, y))
        .collect()
}

fn paper_value(rows: &[Row], id: &str) -> Option<f64> {
    rows.iter().find(|r| r.id == id).map(|r| r.paper)
}

/// The model's value of target `id` for a legend beside the paper's (`2.26`), or `-` where
/// it computed none.
fn model_value(rows: &[Row], id: &str) -> String {
    match rows.iter().find(|r| r.id == id).and_then(|r| r.model) {
        Some(m) if m.is_finite() => short(m),
        _ => "-".to_string(),
    }
}

fn model(name: impl Into<String>, points: Vec<(f64, f64)>) -> SeriesSpec {
    SeriesSpec::new(name, SeriesKind::Model, points)
}

/// Model values drawn as markers alone, without a line between them.
fn model_points(name: impl Into<String>, points: Vec<(f64, f64)>) -> SeriesSpec {
    SeriesSpec::new(name, SeriesKind::ModelPoints, points)
}

fn paper(name: impl Into<String>, points: Vec<(f64, f64)>) -> SeriesSpec {
    SeriesSpec::new(name, SeriesKind::Paper, points)
}

/// The paper's value `y` over x from `xs.start` to `xs.end`.
fn paper_level(name: impl Into<String>, y: f64, xs: Range<f64>) -> SeriesSpec {
    SeriesSpec::new(
        name,
        SeriesKind::PaperLevel,
        vec![(xs.start, y), (xs.end, y)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_core_ratio_stops_at_the_baselines_cap() {
        // Two cores' worth of rate, then a cap at 2.5.
        let capped = [(1.0, 1.0), (2.0, 2.0), (3.0, 2.5), (4.0, 2.5)];
        assert_eq!(per_core_ratio(&capped, 0.5), vec![(1.0, 0.5), (2.0, 1.0)]);
        let linear = [(1.0, 3.0), (2.0, 6.0), (3.0, 9.0)];
        assert_eq!(per_core_ratio(&linear, 1.0).len(), 3);
    }
}
