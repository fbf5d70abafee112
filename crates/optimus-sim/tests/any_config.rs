//! Any configuration is refused with an error or runs: no panic, no allocation past what the
//! parameters' bounds allow, and every reported number finite and not negative. The
//! parameters varied are every number and flag of each model's configuration as it
//! serializes, so a parameter added later is covered as soon as it exists.

use optimus_core::binary::EngineTraces as Engine;
use optimus_sim::config_file::with_values;
use optimus_sim::op::{self, OpConfig};
use optimus_sim::rpcacc::{gateway, report, service, RpcAccConfig};
use optimus_sim::workload::MessageClass;
use optimus_sim::Stats;
use optimus_trace::Direction;
use proptest::prelude::*;
use serde_json::Value;

/// What a parameter's default says its type is.
#[derive(Clone, Copy)]
enum Kind {
    Whole,
    Real,
    Flag,
}

/// Whole numbers drawn for a whole-number parameter: zero, small counts (the meshes' 4 and
/// 8 among them), powers of two, the edges of `u32` and `u64`.
const WHOLES: [u64; 15] = [
    0,
    1,
    2,
    3,
    4,
    5,
    8,
    16,
    64,
    255,
    4096,
    65_535,
    1 << 20,
    u32::MAX as u64,
    u64::MAX,
];

/// Reals drawn for a real parameter: negative, zero, tiny, ordinary, huge.
const REALS: [f64; 11] = [
    -1.0, 0.0, 1e-300, 1e-9, 0.5, 1.0, 3.0, 100.0, 1e6, 1e12, 1e300,
];

/// Parameters that set how long a run measures: kept at the test's short window, since a
/// long one is a request to run long, not bad input.
const RUN_LENGTH: [&str; 4] = [
    "warmup_cycles",
    "measure_cycles",
    "min_window_latencies",
    "max_cycles",
];

/// Every number and flag of `v`, by dot-separated path.
fn parameters(v: &Value, prefix: &str, out: &mut Vec<(String, Kind)>) {
    let Value::Object(members) = v else {
        return;
    };
    for (key, value) in members {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        let kind = match value {
            Value::Object(_) => {
                parameters(value, &path, out);
                continue;
            }
            Value::Bool(_) => Kind::Flag,
            Value::Number(n) if n.is_u64() => Kind::Whole,
            Value::Number(_) => Kind::Real,
            _ => continue,
        };
        if !RUN_LENGTH.contains(&path.as_str()) {
            out.push((path, kind));
        }
    }
}

/// The value `pick` selects for a parameter of `kind`.
fn value(kind: Kind, pick: usize) -> Value {
    match kind {
        Kind::Whole => Value::from(WHOLES[pick % WHOLES.len()]),
        Kind::Real => Value::from(REALS[pick % REALS.len()]),
        Kind::Flag => Value::from(pick % 2 == 1),
    }
}

/// `base` with the parameters `picks` choose (index into `parameters`, value pick); `None`
/// when a value does not fit its parameter's type.
fn vary<T: serde::Serialize + serde::de::DeserializeOwned>(
    base: &T,
    picks: &[(usize, usize)],
) -> Option<T> {
    let mut params = Vec::new();
    parameters(&serde_json::to_value(base).unwrap(), "", &mut params);
    let values: Vec<(String, Value)> = picks
        .iter()
        .map(|&(i, pick)| {
            let (path, kind) = &params[i % params.len()];
            (path.clone(), value(*kind, pick))
        })
        .collect();
    let pairs: Vec<(&str, Value)> = values
        .iter()
        .map(|(p, v)| (p.as_str(), v.clone()))
        .collect();
    with_values(base, &pairs).ok()
}

fn finite(what: &str, xs: &[f64]) -> Result<(), TestCaseError> {
    for &x in xs {
        prop_assert!(x.is_finite() && x >= 0.0, "{what}: {x}");
    }
    Ok(())
}

fn finite_stats(stats: &Stats) -> Result<(), TestCaseError> {
    for (k, v) in &stats.0 {
        prop_assert!(v.is_finite(), "{} = {}", k, v);
    }
    Ok(())
}

fn picks() -> impl Strategy<Value = Vec<(usize, usize)>> {
    prop::collection::vec((any::<usize>(), any::<usize>()), 1..6)
}

/// The short-window OP{1,1} the properties vary.
fn short_op() -> OpConfig {
    let mut base = OpConfig::paper_4x4(1, 1);
    base.warmup_cycles = 200;
    base.measure_cycles = 2_000;
    base.max_cycles = 200_000;
    base
}

/// Runs OP with `picks` on message class `class`: refused, or every number finite.
fn op_runs_or_is_refused(
    picks: &[(usize, usize)],
    class: usize,
    encode: bool,
) -> Result<(), TestCaseError> {
    let Some(cfg) = vary(&short_op(), picks) else {
        return Ok(());
    };
    let direction = if encode {
        Direction::Encode
    } else {
        Direction::Decode
    };
    let trace = MessageClass::ALL[class]
        .trace(&mut Engine, direction)
        .unwrap();
    let Ok(r) = op::run(&cfg, &[trace]) else {
        return Ok(());
    };
    finite(
        "op",
        &[
            r.throughput_gbps,
            r.messages_per_s,
            r.latency_ns,
            r.latency_with_queue_ns,
            r.request_latency_ns,
            r.field_read_latency_cycles,
            r.amat_cycles,
            r.port_gbps,
            r.mesh_link_utilization,
            r.reader_stall_fraction,
        ],
    )?;
    finite_stats(&r.stats)
}

#[test]
fn every_optimus_prime_parameter_alone_at_every_drawn_value_runs_or_is_refused() {
    // The property draws several parameters at once; here each whole-number parameter takes
    // each edge value alone, so every one meets u32::MAX and u64::MAX in every run.
    let mut params = Vec::new();
    parameters(&serde_json::to_value(short_op()).unwrap(), "", &mut params);
    for (i, (_, kind)) in params.iter().enumerate() {
        if matches!(kind, Kind::Whole) {
            for pick in 0..WHOLES.len() {
                op_runs_or_is_refused(&[(i, pick)], 1, true).unwrap();
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_optimus_prime_config_runs_or_is_refused(
        picks in picks(),
        class in 0usize..3,
        encode in any::<bool>(),
    ) {
        op_runs_or_is_refused(&picks, class, encode)?;
    }

    #[test]
    fn any_rpcacc_config_runs_or_is_refused(
        picks in picks(),
        cores in 1u32..64,
        rate in 1.0f64..1e6,
        note_in_card_memory in any::<bool>(),
        small_share in proptest::option::of(1e-9f64..1e12),
    ) {
        let Some(mut cfg) = vary(&RpcAccConfig::default(), &picks) else { return Ok(()) };
        if let Some(share) = small_share {
            // The service's requests: the config's avatar and a 1 KiB one in any proportion.
            cfg.service.avatar_mix = vec![
                service::AvatarShare { bytes: cfg.service.avatar_bytes, share: 1.0 },
                service::AvatarShare { bytes: 1024, share },
            ];
        }
        if cfg.validate().is_err() {
            return Ok(());
        }
        let labels: &[&str] = if note_in_card_memory { &["bench.Mixed.note"] } else { &[] };
        let messages = report::workload(&cfg, &mut Engine, "mixed", labels).unwrap();
        let r = report::run(&cfg, &messages).unwrap();
        for d in r.serialization.iter().chain(&r.deserialization) {
            finite(d.design, &[d.latency_ns])?;
            finite(d.design, &d.messages_per_s.into_iter().chain(d.gbps).collect::<Vec<_>>())?;
        }
        finite_stats(&r.stats)?;

        let traced = service::messages(&cfg, &mut Engine).unwrap();
        let mix = service::mix(&cfg, &traced, &mut Engine).unwrap();
        let svc = mix.mean;
        finite("service", &[svc.preser_skip_ns, svc.preser_noskip_ns])?;
        for (d, variants) in svc.designs().into_iter().zip(mix.variants()) {
            finite("service design", &[d.host_ns, d.latency_ns, d.cap_ns, d.rate(cores)])?;
            if let Some(l) = service::under_load(&variants, cores, rate, 2_000, cfg.seed) {
                finite("service under load", &[l.mean_ns, l.p99_ns])?;
            }
        }

        let g = gateway::run(&cfg, &mut Engine).unwrap();
        for p in &g.placements {
            finite("gateway", &[p.host_ns, p.latency_ns, p.rate(), g.gbps(p)])?;
        }
    }
}
