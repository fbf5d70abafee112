//! Calibration of the Dagger model against its paper's targets (`dagger.*`): a met target must
//! stay met, an unmodelled one must be explained in docs/simulator.md's "Dagger model" section;
//! the model is deterministic; and the project's copy of the targets is the papers'.

mod common;

use optimus_sim::dagger::interface::Interface;
use optimus_sim::dagger::reproduce::{reproduce_dagger, TARGETS_JSON};
use optimus_sim::dagger::{run, DaggerConfig, Experiment};

/// Dagger targets the model meets (exact within 15 %).
const MET: &[&str] = &[
    "dagger.fig5.doorbell_b1.mrps",
    "dagger.fig5.mmio.mrps",
    "dagger.fig5.doorbell_b3.mrps",
    "dagger.fig5.doorbell_b7.mrps",
    "dagger.fig5.doorbell_b11.mrps",
    "dagger.fig5.upi_b1.mrps",
    "dagger.fig5.upi_b4.mrps",
    "dagger.fig5.upi_b1_vs_doorbell.pct",
    "dagger.fig5.upi_b4_vs_doorbell.pct",
    "dagger.fig5.doorbell_b32_saturation.mrps",
    "dagger.fig5.mmio_median_latency.us",
    "dagger.fig5.upi_b1_median_latency.min.us",
    "dagger.fig5.upi_b1_median_latency.max.us",
    "dagger.fig5.upi_b4_median_latency.min.us",
    "dagger.fig5.upi_b4_median_latency.max.us",
    "dagger.fig5.doorbell_b1_latency.us",
    "dagger.table1.dagger.rtt.us",
    "dagger.table1.dagger.thr.mrps",
    "dagger.sec1.single_thread.mrps",
    "dagger.sec1.four_threads_two_cores.mrps",
    "dagger.sec1.per_core_gain.min.x",
    "dagger.sec1.per_core_gain.max.x",
];

#[test]
fn dagger_targets() {
    let (rows, figs) = reproduce_dagger(&DaggerConfig::default()).unwrap();
    let reasons =
        common::doc_section("### Why the Dagger targets are met, and the one not modelled");
    common::check_targets(&rows, MET, reasons);
    // Every figure has a model series with a point per setting or load.
    assert_eq!(figs.figures.len(), 4);
    for f in &figs.figures {
        assert!(f.series.iter().any(|s| !s.points.is_empty()), "{}", f.name);
    }
    // A slower UPI read lowers UPI B = 1 (poll-bound) and leaves B = 4 (core-bound).
    let mut slow = DaggerConfig::default();
    slow.upi.read_ns *= 1.5;
    let (_, slow_figs) = reproduce_dagger(&slow).unwrap();
    let thr = |f: &optimus_sim::dagger::reproduce::DaggerFigures, b| {
        f.settings
            .iter()
            .find(|s| s.interface == Interface::Upi && s.batch == b)
            .unwrap()
            .throughput_mrps
    };
    assert!(thr(&slow_figs, 1) < 0.75 * thr(&figs, 1));
    assert!((thr(&slow_figs, 4) - thr(&figs, 4)).abs() < 0.05 * thr(&figs, 4));
}

#[test]
fn same_config_and_experiment_give_the_same_report() {
    for interface in [Interface::Mmio, Interface::Doorbell, Interface::Upi] {
        let exp = Experiment::fig5(interface, 1, Some(3.0));
        let a = run(&DaggerConfig::default(), &exp).unwrap();
        let b = run(&DaggerConfig::default(), &exp).unwrap();
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
    }
}

/// The project's copy of the Dagger targets against the papers' list beside the project, where
/// there is one: the same ids in the same order, with the same values, units and kinds.
#[test]
fn the_targets_copy_is_the_papers_list() {
    common::check_targets_copy(TARGETS_JSON, &["dagger"]);
}
