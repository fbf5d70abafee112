//! Calibration against the papers: every target listed as met must stay met, every target not
//! met must be explained in docs/simulator.md ("Why the missed targets miss", or "What the
//! model leaves out" for one not modelled), and the project's copy of the targets must be the
//! papers' list.

mod common;

use optimus_sim::calibrate::{
    reproduce_op, reproduce_op_with, reproduce_rpcacc, reproduce_rpcacc_with, Row,
};
use optimus_sim::op::OpConfig;
use optimus_sim::rpcacc::RpcAccConfig;

use optimus_core::binary::EngineTraces as Engine;

/// Optimus Prime targets the model meets (exact within 15 %, approx within 25 %).
const MET_OP: &[&str] = &[
    "op.abstract.speedup_vs_software.x",
    "op.abstract.perf_per_watt_vs_cpu.x",
    "op.abstract.service_latency_reduction_max.pct",
    "op.sec1.cpu_300B_latency_lower_bound.ns",
    "op.sec2_1.xeon_x5670_dt_throughput.min.MBps",
    "op.sec2_1.xeon_x5670_dt_throughput.max.MBps",
    "op.sec2_3.cpu_throughput_cap.gbps",
    "op.fig7.cpu_ser_best.gbps",
    "op.fig7.op_base_ser_vs_cpu.x",
    "op.fig7.prefetch_pipelining_gain.min.x",
    "op.fig7.prefetch_pipelining_gain.max.x",
    "op.sec6_1.field_read_latency.prefetch.cycles",
    "op.fig7.op_1_1.ser.nested.gbps",
    "op.fig7.op_1_1.ser.flat.gbps",
    "op.fig7.op_1_1.ser.mixed.gbps",
    "op.sec6_2.op_1_1_vs_core_ser.max.x",
    "op.fig8.pipelines_for_40gbps.flat",
    "op.fig8.pipelines_for_40gbps.mixed",
    "op.fig8.nested_plateau.gbps",
    "op.fig8.plateau_link_bw.gbps",
    "op.fig8.noc_avg_link_util_at_saturation.pct",
    "op.fig9.amat_ratio_8x8_vs_4x4.x",
    "op.fig9.sat_pipelines.op_n_1.4x4",
    "op.fig9.sat_pipelines.op_n_2.4x4",
    "op.fig9.sat_pipelines.op_n_4.8x8",
    "op.fig9.sat_pipelines.op_n_1.8x8",
    "op.table3.dt.cpu.us",
    "op.table3.dt.op_3_2_4x4.us",
    "op.table3.dt.op_3_4_8x8.us",
    "op.table4.cpu.throughput.gbps",
    "op.table4.op_1_1.perf_per_watt.x",
    "op.table4.op_12_1.throughput.gbps",
    "op.table4.op_3_4.throughput.gbps",
    "op.table4.op_3_4.perf_per_watt.x",
    "op.sec6_5.perf_per_watt_op_3_4_vs_op_12_1.x",
    "op.sec6_4.service_latency_reduction_max.pct",
    "op.sec6_4.dt_latency_reduction_max.x",
];

/// RPCAcc targets the model meets.
const MET_RPCACC: &[&str] = &[
    "rpcacc.abstract.rpc_layer_time_vs_accel_baseline.x",
    "rpcacc.fig5.oneshot_deser_speedup.avg.x",
    "rpcacc.fig7.memaff_vs_protoacc_pcie.x",
    "rpcacc.c1.cross_pcie_deser_loss.x",
    "rpcacc.fig5.oneshot_deser_speedup.small_fields.x",
    "rpcacc.fig6.memcpy_offload_cycles.hpb.pct",
    "rpcacc.sec4c.overall_ser_time_decrease.pct",
    "rpcacc.sec4e.oneshot_deser_latency_increase.x",
    "rpcacc.fig10.onchip_tx_advantage.250mhz.x",
    "rpcacc.fig10.onchip_tx_advantage.2ghz.x",
    "rpcacc.fig2.ser_time_increase_70ns_to_1250ns.x",
    "rpcacc.fig9.dagger_rpcacc_ser_reduction.x",
    "rpcacc.sec3b.chunk_alloc_time.pct",
    "rpcacc.fig12a.throughput_vs_cpu_only.x",
    "rpcacc.fig12a.throughput_vs_protoacc_pcie.x",
    "rpcacc.abstract.e2e_throughput_gain.x",
    "rpcacc.fig12b.avg_latency_vs_cpu_only.x",
    "rpcacc.sec1.img.p99_latency_reduction.x",
    "rpcacc.fig13.dsb_exec_time_vs_protoacc_pcie.x",
    "rpcacc.fig13.dsb_exec_time_vs_cpu_only.x",
    "rpcacc.sec1.pcie_ser_slowdown_vs_onchip.x",
    "rpcacc.fig6.memcpy_encoding_offload_cycles.dsb.pct",
    "rpcacc.fig6.memcpy_encoding_offload_cycles.hpb.pct",
    "rpcacc.fig8b.bf3_oneshot_deser_gain.x",
    "rpcacc.fig8b.rpcacc_vs_bf3_oneshot_deser.x",
    "rpcacc.c3.placement_worst_vs_best.x",
];

/// Where docs/simulator.md gives the reasons targets are missed or not modelled: the
/// calibration table names every id, so the table does not count.
fn reasons() -> String {
    [
        "## Why the missed targets miss",
        "## What the model leaves out, and why",
    ]
    .map(common::doc_section)
    .concat()
}

fn check(rows: &[Row], met: &[&str]) {
    common::check_targets(rows, met, &reasons());
}

fn model(rows: &[Row], id: &str) -> f64 {
    rows.iter()
        .find(|r| r.id == id)
        .and_then(|r| r.model)
        .unwrap()
}

#[test]
fn optimus_prime_targets() {
    let (rows, figs) = reproduce_op(&mut Engine).unwrap();
    check(&rows, MET_OP);
    assert_eq!(figs.fig8.len(), 3);
    // Other parameters reach every experiment: 4-cycle hops slow the 8×8 OP{1,1} of Table 4
    // and the idle 4×4 server of §6.4, and saturate the 8×8 port with more pipelines.
    let mut slow = OpConfig::default();
    slow.noc.hop_cycles = 4;
    let (hop4, _) = reproduce_op_with(&slow, &mut Engine).unwrap();
    for id in [
        "op.table4.op_1_1.throughput.gbps",
        "op.sec6_4.urlshorten.dt_latency_reduction.x",
    ] {
        assert!(model(&hop4, id) < model(&rows, id), "{id}");
    }
    let sat = "op.fig9.sat_pipelines.op_n_1.8x8";
    assert!(model(&hop4, sat) > model(&rows, sat));
    slow.block_buffer.ways = 0;
    assert!(reproduce_op_with(&slow, &mut Engine).is_err());
}

#[test]
fn rpcacc_targets() {
    let (rows, figs) = reproduce_rpcacc(&mut Engine).unwrap();
    check(&rows, MET_RPCACC);
    assert_eq!(figs.fig8a.len(), 6);
    assert_eq!(figs.fig8b.len(), 6);
    assert_eq!(figs.c3.len(), 16);
    // With PCIe as fast as host memory, ProtoACC-PCIe loses its handicap.
    let mut near = RpcAccConfig::default();
    near.pcie.latency_ns = 70.0;
    let (fast, _) = reproduce_rpcacc_with(&near, &mut Engine).unwrap();
    let id = "rpcacc.fig7.memaff_vs_protoacc_pcie.x";
    assert!(model(&fast, id) < model(&rows, id) / 1.5, "{id}");
    near.deser_lanes = 0;
    assert!(reproduce_rpcacc_with(&near, &mut Engine).is_err());
}

/// The project's copy of the targets (`data/targets.json`) against the papers' list beside
/// the project, where there is one (a clone alone has only the copy): the same ids in the
/// same order, with the same values, units and kinds.
#[test]
fn the_targets_copy_is_the_papers_list() {
    common::check_targets_copy(optimus_sim::calibrate::TARGETS_JSON, &["op", "rpcacc"]);
}
