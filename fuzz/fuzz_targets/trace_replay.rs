//! Trace-file fuzz target: any input is rejected by `optimus_trace::decode` or decodes to
//! events that encode to a file decoding to the same events; any such trace the
//! accelerator view accepts runs on both timing models, every message completing with
//! finite results, and a trace the view or a model refuses is refused with an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use optimus_sim::op::{self, OpConfig};
use optimus_sim::rpcacc::{report, RpcAccConfig};
use optimus_sim::workload::{accelerator_view, ViewConfig};

fuzz_target!(|data: &[u8]| {
    let Ok(events) = optimus_trace::decode(data) else {
        return;
    };
    let again = optimus_trace::decode(&optimus_trace::encode(&events)).expect("re-encoded");
    assert_eq!(again, events);
    // Small bounds keep each run short; the view refuses what lies past them.
    let view = ViewConfig {
        max_traced_bytes: 1 << 16,
        max_workload_bytes: 1 << 18,
        ..ViewConfig::default()
    };
    let Ok(messages) = accelerator_view("fuzz", &events, &view) else {
        return;
    };
    let mut cfg = OpConfig::paper_4x4(2, 2);
    cfg.warmup_cycles = 100;
    cfg.measure_cycles = 1_000;
    if let Ok(r) = op::run(&cfg, &messages) {
        let software = [r.software_gbps, r.speedup_vs_software].into_iter().flatten();
        for v in [
            r.throughput_gbps,
            r.messages_per_s,
            r.latency_ns,
            r.port_gbps,
            r.software_latency_ns,
        ]
        .into_iter()
        .chain(software)
        {
            assert!(v.is_finite() && v >= 0.0, "{r:?}");
        }
    }
    let rpc: Vec<_> = messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| report::one_direction("fuzz", i, m))
        .collect();
    if let Ok(r) = report::run(&RpcAccConfig::default(), &rpc) {
        assert_eq!(r.serialized + r.deserialized, rpc.len());
        for d in r.serialization.iter().chain(&r.deserialization) {
            assert!(d.latency_ns.is_finite() && d.latency_ns >= 0.0, "{d:?}");
        }
    }
});
