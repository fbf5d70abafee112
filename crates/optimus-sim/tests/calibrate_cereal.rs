//! Calibration of the Cereal model against its paper's targets (`cereal.*`): a met target must
//! stay met, a missed or unmodelled one must be explained in docs/simulator.md's "Cereal model"
//! section; the model is deterministic; and the project's copy of the targets is the papers'.

mod common;

use optimus_sim::cereal::reproduce::{reproduce_cereal, TARGETS_JSON};
use optimus_sim::cereal::{self, CerealConfig};

/// Cereal targets the model meets (approx within 25 %). The two S/D ratios are computed on the
/// Spark jobs' record streams: the one over Java is met with eight units; the one over Kryo,
/// where the model is latency-bound per record, is not (docs/simulator.md says why).
const MET: &[&str] = &["cereal.abstract.spark_sd_vs_java.x"];

#[test]
fn cereal_targets() {
    let (rows, figs) = reproduce_cereal(&CerealConfig::default()).unwrap();
    let reasons = common::doc_section("### Why the Cereal targets miss");
    common::check_targets(&rows, MET, reasons);
    assert_eq!(figs.graphs.len(), cereal::WORKLOADS.len());
    assert_eq!(figs.spark.len(), cereal::SPARK_WORKLOADS.len());
    // The Amdahl step: the paper's maximum share moves the job further than its average, in
    // the direction of the model's S/D speedup over Kryo on the Spark streams (below 1: slower).
    let (avg, max) = (figs.job_vs_kryo[0].1, figs.job_vs_kryo[1].1);
    assert!((max - 1.0).abs() > (avg - 1.0).abs(), "{avg} {max}");
    assert_eq!(max > 1.0, figs.spark_vs_kryo > 1.0);
    // Slower DRAM slows the model, so every ratio to the measured software falls.
    let mut slow = CerealConfig::default();
    slow.dram.latency_ns = 80.0;
    let (_, slow_figs) = reproduce_cereal(&slow).unwrap();
    assert!(slow_figs.vs_kryo < figs.vs_kryo / 1.3);
    assert!(slow_figs.spark_vs_kryo < figs.spark_vs_kryo / 1.3);
    slow.mai.otr_entries = 0;
    assert!(reproduce_cereal(&slow).is_err());
}

/// The Spark jobs' record streams load (each a stream of hundreds of small graphs, every one
/// deserialized as well), and `reproduce` takes both `spark_sd_vs_*` targets from them: each
/// row's model value is the geomean over the Spark streams, not over the benchmark graphs.
#[test]
fn spark_record_traces_drive_the_spark_targets() {
    for (name, _) in cereal::SPARK_WORKLOADS {
        let t = cereal::workload(name).unwrap();
        assert!(t.ser.len() >= 200, "{name}: {} records", t.ser.len());
        assert_eq!(t.ser.len(), t.deser.len(), "{name}");
        // Spark's records are small: a few objects each.
        let objects: usize = t.ser.iter().map(|g| g.objects.len()).sum();
        assert!(objects <= 8 * t.ser.len(), "{name}");
    }
    let (rows, figs) = reproduce_cereal(&CerealConfig::default()).unwrap();
    let names: Vec<&str> = figs.spark.iter().map(|c| c.workload.as_str()).collect();
    let embedded: Vec<&str> = cereal::SPARK_WORKLOADS.iter().map(|w| w.0).collect();
    assert_eq!(names, embedded);
    for (id, model) in [
        ("cereal.abstract.spark_sd_vs_java.x", figs.spark_vs_java),
        ("cereal.abstract.spark_sd_vs_kryo.x", figs.spark_vs_kryo),
    ] {
        let row = rows.iter().find(|r| r.id == id).unwrap();
        assert_eq!(row.model, Some(model), "{id}");
        assert!(model.is_finite() && model > 0.0, "{id}");
        assert!(
            row.note.contains("Spark jobs' traced record streams"),
            "{id}"
        );
    }
    // The benchmark graphs' figures are still reported beside them, and differ.
    assert!(figs.vs_kryo.is_finite() && figs.vs_kryo != figs.spark_vs_kryo);
    for c in &figs.spark {
        assert!(c.java.sd_us() > c.kryo.sd_us(), "{}", c.workload);
    }
}

#[test]
fn same_config_and_trace_give_the_same_report() {
    for (name, _) in cereal::all_workloads() {
        let t = cereal::workload(name).unwrap();
        let a = cereal::run(&CerealConfig::default(), &t).unwrap();
        let b = cereal::run(&CerealConfig::default(), &cereal::workload(name).unwrap()).unwrap();
        assert_eq!(a, b, "{name}");
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
    }
}

/// The project's copy of the Cereal targets against the papers' list beside the project, where
/// there is one: the same ids in the same order, with the same values, units and kinds.
#[test]
fn the_targets_copy_is_the_papers_list() {
    common::check_targets_copy(TARGETS_JSON, &["cereal"]);
}

/// A stream's records are distinct objects, frames and copies: each graph of a trace gets its
/// own place in the source heap, the output, the input and the destination heap, so records in
/// flight on different units share no header word (no RMW waits on another record's; they
/// share only their classes' metadata), and more units get through a stream sooner.
#[test]
fn records_in_flight_together_share_no_memory() {
    let t = cereal::workload("spark-terasort").unwrap();
    let run = |units| {
        let mut cfg = CerealConfig::default();
        cfg.ser.units = units;
        cereal::run(&cfg, &t).unwrap()
    };
    let (one, eight) = (run(1), run(8));
    for r in [&one, &eight] {
        assert_eq!(r.stats.get("ser_mai.rmw_conflicts"), Some(0.0));
    }
    assert!(
        eight.ser_ns < one.ser_ns / 3.0,
        "{} {}",
        eight.ser_ns,
        one.ser_ns
    );
    assert!(
        eight.deser_ns < one.deser_ns / 3.0,
        "{} {}",
        eight.deser_ns,
        one.deser_ns
    );
}
