//! One run of the RPCAcc model on a workload (`optimus sim --accel rpcacc`): every design's
//! serialization and deserialization of its messages, and the counters of each component.

use serde::Serialize;

use optimus_trace::{Direction, Region};

use super::host::{buffer_bytes, host_fields};
use super::serializer::field_reads;
use super::{
    bf3_deser, bf3_ser, bf3_ser_occupancy, cpu_ser_ns, deser_layer_of, deser_times, prepare,
    prepare_sets, preser_ns, ser_occupancy, ser_times, DeserLink, RpcAccConfig, RpcMessage,
};
use crate::error::{Result, SimError};
use crate::program::Program;
use crate::stats::Stats;
use crate::workload::{MessageTrace, TraceSource};

/// One design's result on the workload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DesignRun {
    /// Design name (`cpu_only`, `protoacc_pcie`, `protoacc_onchip`, `rpcacc`, `bf3`,
    /// `bf3_memory_affinity`, `bf3_dsa`, `bf3_oneshot`).
    pub design: &'static str,
    /// Mean latency per message, in ns: the call handed to the design to the output in place
    /// (serialized at the NIC, or deserialized in host memory).
    pub latency_ns: f64,
    /// Messages per second when messages follow each other, bounded by the design's busiest
    /// resource (see [`super::ser_occupancy`] and [`super::deser_times`]); `None` when no
    /// modelled resource is busy with these messages (messages without fields, on a design
    /// with no per-message cost), so the model sets no bound.
    pub messages_per_s: Option<f64>,
    /// Serialized bits per second at that rate, in Gbps (`None` with the rate).
    pub gbps: Option<f64>,
}

/// The RPCAcc model's report on a workload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RpcAccReport {
    /// Messages serialized (those with a serialization trace).
    pub serialized: usize,
    /// Messages deserialized (those with a deserialization trace).
    pub deserialized: usize,
    /// PCIe round trip in ns.
    pub pcie_ns: f64,
    /// Accelerator clock in MHz.
    pub clock_mhz: f64,
    /// Serialization on CPU-only, ProtoACC-PCIe, ProtoACC-OnChip, RPCAcc (memory-affinity),
    /// BF3, BF3-MemoryAffinity and BF3-DSA; empty without serialization traces.
    pub serialization: Vec<DesignRun>,
    /// Deserialization on CPU-only, ProtoACC-PCIe (field by field), RPCAcc (one-shot), BF3
    /// and BF3-Oneshot; empty without deserialization traces.
    pub deserialization: Vec<DesignRun>,
    /// Named counters, summed over the workload's messages.
    pub stats: Stats,
}

/// Sums of one design's per-message latency and busy time.
#[derive(Default)]
struct Sums {
    latency: f64,
    busy: f64,
}

fn design_runs(names: &[&'static str], sums: &[Sums], n: usize, wire_bits: f64) -> Vec<DesignRun> {
    if n == 0 {
        return Vec::new();
    }
    names
        .iter()
        .zip(sums)
        .map(|(&design, s)| DesignRun {
            design,
            latency_ns: s.latency / n as f64,
            messages_per_s: (s.busy > 0.0).then(|| n as f64 / s.busy * 1e9),
            gbps: (s.busy > 0.0).then(|| wire_bits / s.busy),
        })
        .collect()
}

/// Runs every design on `messages`. A message known from one direction's trace (a trace
/// file) takes part in that direction only.
///
/// # Errors
/// An invalid configuration, or no message with a program.
pub fn run(cfg: &RpcAccConfig, messages: &[RpcMessage]) -> Result<RpcAccReport> {
    cfg.validate()?;
    let mut stats = Stats::default();
    let mut add = |prefix: &str, name: &str, v: f64| {
        let key = format!("{prefix}.{name}");
        let old = stats.get(&key).unwrap_or(0.0);
        stats.set(prefix, name, old + v);
    };
    let pcie = cfg.pcie;
    let mut ser = [(); 7].map(|()| Sums::default());
    let mut deser = [(); 5].map(|()| Sums::default());
    let (mut n_ser, mut n_deser) = (0usize, 0usize);
    let (mut ser_bits, mut deser_bits) = (0.0, 0.0);
    for m in messages {
        if m.serializes() {
            n_ser += 1;
            ser_bits += m.ser.wire_bytes as f64 * 8.0;
            let t = ser_times(cfg, m, cfg.clock_mhz);
            let b = ser_occupancy(cfg, m, cfg.clock_mhz);
            let (bt, bb) = (bf3_ser(cfg, m), bf3_ser_occupancy(cfg, m));
            for (s, (l, o)) in ser.iter_mut().zip([
                (t.cpu_only, b.cpu_only),
                (t.protoacc_pcie, b.protoacc_pcie),
                (t.protoacc_onchip, b.protoacc_onchip),
                (t.rpcacc, b.rpcacc),
                (bt.naive, bb.naive),
                (bt.memory_affinity, bb.memory_affinity),
                (bt.dsa, bb.dsa),
            ]) {
                s.latency += l;
                s.busy += o;
            }
            let (pre, dsa) = preser_ns(cfg, m, true);
            add("host", "software_serialization_ns", cpu_ser_ns(cfg, m));
            add("host", "pre_serialization_ns", pre);
            add("memcpy_engine", "busy_ns", dsa);
            let fields = host_fields(m);
            add("host", "pre_serialized_fields", fields.len() as f64);
            add("host", "pre_serialized_bytes", buffer_bytes(&fields));
            for bytes in fields.iter().map(|f| f.bytes) {
                if bytes >= u64::from(cfg.dsa_threshold_bytes) {
                    add("memcpy_engine", "copies", 1.0);
                    add("memcpy_engine", "bytes", bytes as f64);
                } else {
                    add("host", "pre_serialization_copied_bytes", bytes as f64);
                }
            }
            let reads = m.ser.accesses.iter().filter(|a| !a.is_schema);
            add("serializer", "fields", m.ser.items.len() as f64);
            add("serializer", "field_reads", field_reads(&m.ser) as f64);
            add(
                "serializer",
                "field_read_bytes",
                reads.clone().map(|a| f64::from(a.bytes)).sum(),
            );
            add(
                "serializer",
                "card_memory_read_bytes",
                reads
                    .filter(|a| a.region == Region::Accel)
                    .map(|a| f64::from(a.bytes))
                    .sum(),
            );
            add("serializer", "wire_bytes", m.ser.wire_bytes as f64);
        }
        if m.deserializes() {
            n_deser += 1;
            deser_bits += m.deser.wire_bytes as f64 * 8.0;
            let d = deser_times(cfg, m, DeserLink::pcie(cfg), cfg.clock_mhz);
            let l = deser_layer_of(cfg, m, &d);
            let software = cfg.cpu.message_ns(&m.deser_trace);
            let cpu_busy =
                (cfg.cpu_rpc_stack_ns + software).max(m.deser.wire_bytes as f64 / pcie.bw_gbytes_s);
            let bd = bf3_deser(cfg, m);
            for (s, (lat, busy)) in deser.iter_mut().zip([
                (l.cpu_only, cpu_busy),
                (l.protoacc_pcie, 1000.0 / d.fbf_host_rate),
                (l.rpcacc, 1000.0 / d.oneshot_host_rate),
                (bd.field_by_field_latency_ns, 1000.0 / bd.field_by_field),
                (bd.oneshot_latency_ns, 1000.0 / bd.oneshot),
            ]) {
                s.latency += lat;
                s.busy += busy;
            }
            add("host", "software_deserialization_ns", software);
            add("deserializer", "fields", m.deser.items.len() as f64);
            add("deserializer", "wire_bytes", m.deser.wire_bytes as f64);
            add("deserializer", "output_bytes", d.output_bytes);
            add("deserializer", "card_memory_bytes", d.accel_bytes);
            add(
                "deserializer",
                "dma_writes_field_by_field",
                d.fbf_dma_writes,
            );
            add("deserializer", "dma_writes_one_shot", d.oneshot_dma_writes);
            let c = d.chunks;
            add("chunk_allocator", "chunks", c.chunks as f64);
            add("chunk_allocator", "accel_chunks", c.accel_chunks as f64);
            add("chunk_allocator", "used_bytes", c.used_bytes as f64);
            add(
                "chunk_allocator",
                "allocated_bytes",
                c.allocated_bytes as f64,
            );
            add("chunk_allocator", "alloc_ns", c.alloc_ns);
        }
    }
    if n_ser + n_deser == 0 {
        return Err(SimError::Workload {
            name: "rpcacc".into(),
            why: "no messages".into(),
        });
    }
    Ok(RpcAccReport {
        serialized: n_ser,
        deserialized: n_deser,
        pcie_ns: pcie.latency_ns,
        clock_mhz: cfg.clock_mhz,
        serialization: design_runs(
            &[
                "cpu_only",
                "protoacc_pcie",
                "protoacc_onchip",
                "rpcacc",
                "bf3",
                "bf3_memory_affinity",
                "bf3_dsa",
            ],
            &ser,
            n_ser,
            ser_bits,
        ),
        deserialization: design_runs(
            &["cpu_only", "protoacc_pcie", "rpcacc", "bf3", "bf3_oneshot"],
            &deser,
            n_deser,
            deser_bits,
        ),
        stats,
    })
}

/// A message known from one direction's trace only (a trace file): the other direction has
/// no program (see [`RpcMessage::serializes`]).
pub fn one_direction(name: &str, index: usize, trace: MessageTrace) -> RpcMessage {
    let absent = MessageTrace {
        events: Vec::new(),
        wire_bytes: 0,
        direction: trace.direction,
    };
    let direction = trace.direction;
    let mut m = match direction {
        Direction::Encode => prepare(name, index, trace, absent, 0.0),
        Direction::Decode => prepare(name, index, absent, trace, 0.0),
    };
    match direction {
        Direction::Encode => m.deser = Program::default(),
        Direction::Decode => m.ser = Program::default(),
    }
    m
}

/// The messages of a named workload: `hpb` (the HyperProtoBench suite), `socialnet`
/// (the DeathStarBench services' requests and responses) or an Optimus Prime class (`flat`,
/// `mixed`, `nested`), in both directions, or with `-ser` or `-deser` in that one only; the
/// fields `accel_fields` labelled "Acc" (their data in card memory).
///
/// # Errors
/// An unknown name, labels on a suite (its sets have a schema each), or an engine error from
/// `source` (a field name included).
pub fn workload(
    cfg: &RpcAccConfig,
    source: &mut dyn TraceSource,
    name: &str,
    accel_fields: &[&str],
) -> Result<Vec<RpcMessage>> {
    let (base, direction) = crate::workload::split_direction(name);
    let sets = crate::workload::named_sets(base, cfg.seed)
        .ok_or_else(|| crate::workload::unknown(name))?;
    if !accel_fields.is_empty() && sets.len() > 1 {
        return Err(SimError::Workload {
            name: name.to_string(),
            why: format!(
                "fields can be labelled on a workload of one schema; its {} sets have a schema each",
                sets.len()
            ),
        });
    }
    let Some(d) = direction else {
        return prepare_sets(&sets, source, accel_fields);
    };
    let mut out = Vec::new();
    for set in &sets {
        let traces = set.trace_labelled(source, d, accel_fields)?;
        out.extend(
            traces
                .into_iter()
                .enumerate()
                .map(|(i, t)| one_direction(&set.name, i, t)),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpcacc::LinkConfig;
    use optimus_core::binary::EngineTraces as Engine;

    fn design<'a>(runs: &'a [DesignRun], name: &str) -> &'a DesignRun {
        runs.iter().find(|r| r.design == name).expect("design")
    }

    #[test]
    fn mixed_on_every_design() {
        let cfg = RpcAccConfig::default();
        let ms = workload(&cfg, &mut Engine, "mixed", &[]).unwrap();
        let r = run(&cfg, &ms).unwrap();
        assert_eq!((r.serialized, r.deserialized), (1, 1));
        assert_eq!(r.serialization.len(), 7);
        assert_eq!(r.deserialization.len(), 5);
        // A message with fields keeps some resource of every design busy.
        let rate = |d: &DesignRun| d.messages_per_s.expect("a bounded rate");
        for d in r.serialization.iter().chain(&r.deserialization) {
            assert!(d.latency_ns > 0.0 && rate(d) > 0.0, "{d:?}");
            // Gbps is the message's serialized bits at the message rate.
            assert!(
                (d.gbps.unwrap() - rate(d) * 297.0 * 8.0 / 1e9).abs() < 1e-6,
                "{d:?}"
            );
        }
        let ser = &r.serialization;
        // Across 1250 ns PCIe, memory-affinity serialization beats reading fields over it.
        assert!(design(ser, "rpcacc").latency_ns < design(ser, "protoacc_pcie").latency_ns);
        assert!(design(ser, "bf3_dsa").latency_ns <= design(ser, "bf3_memory_affinity").latency_ns);
        let de = &r.deserialization;
        assert!(rate(design(de, "rpcacc")) >= rate(design(de, "protoacc_pcie")));
        assert!(rate(design(de, "bf3_oneshot")) > rate(design(de, "bf3")));
        assert_eq!(
            r.stats.get("serializer.fields"),
            Some(ms[0].ser.items.len() as f64)
        );
        assert_eq!(r.stats.get("chunk_allocator.chunks"), Some(1.0));
        assert!(r.stats.get("host.pre_serialization_ns").unwrap() > 0.0);
    }

    #[test]
    fn the_pre_serialized_buffer_holds_a_list_of_scalars_as_one_field() {
        use optimus_trace::{kind, Repetition};
        let cfg = RpcAccConfig::default();
        let trace = crate::program::encode_of(&[
            (kind::INT32, Repetition::Packed, &[4; 100]),
            (kind::STRING, Repetition::Single, &[10]),
        ]);
        let m = crate::rpcacc::prepare("t", 0, trace.clone(), trace, 0.0);
        let r = run(&cfg, &[m]).unwrap();
        assert_eq!(r.stats.get("serializer.fields"), Some(101.0));
        assert_eq!(r.stats.get("host.pre_serialized_fields"), Some(2.0));
        assert_eq!(r.stats.get("host.pre_serialized_bytes"), Some(410.0 + 16.0));
        assert_eq!(
            r.stats.get("host.pre_serialization_copied_bytes"),
            Some(410.0)
        );
    }

    #[test]
    fn pcie_latency_hurts_protoacc_not_the_on_chip_design() {
        let near = RpcAccConfig {
            pcie: LinkConfig {
                latency_ns: 70.0,
                ..RpcAccConfig::default().pcie
            },
            ..RpcAccConfig::default()
        };
        let far = RpcAccConfig::default();
        let ms = workload(&far, &mut Engine, "nested-ser", &[]).unwrap();
        let (a, b) = (run(&near, &ms).unwrap(), run(&far, &ms).unwrap());
        let lat = |r: &RpcAccReport, d| design(&r.serialization, d).latency_ns;
        assert!(lat(&b, "protoacc_pcie") > 3.0 * lat(&a, "protoacc_pcie"));
        // On chip, only the output's trip to the NIC crosses PCIe.
        let onchip = lat(&b, "protoacc_onchip") - lat(&a, "protoacc_onchip");
        assert!((onchip - 1180.0).abs() < 1e-6, "{onchip}");
        assert!(b.deserialization.is_empty());
    }

    #[test]
    fn a_message_without_fields_is_still_sent() {
        use optimus_trace::{Event, Format};
        let cfg = RpcAccConfig::default();
        let empty = |direction| MessageTrace {
            events: vec![
                Event::MessageBegin {
                    direction,
                    format: Format::Protobuf,
                    type_id: 0,
                },
                Event::MessageEnd { wire_bytes: 0 },
            ],
            wire_bytes: 0,
            direction,
        };
        let ms = [
            one_direction("empty", 0, empty(Direction::Encode)),
            one_direction("empty", 1, empty(Direction::Decode)),
        ];
        let r = run(&cfg, &ms).unwrap();
        assert_eq!((r.serialized, r.deserialized), (1, 1));
        for d in r.serialization.iter().chain(&r.deserialization) {
            // Every design still crosses PCIe or rings a doorbell.
            assert!(d.latency_ns.is_finite() && d.latency_ns > 0.0, "{d:?}");
            // A rate is either bounded by a busy resource or left open; never inf or NaN.
            assert!(
                d.messages_per_s.is_none_or(|v| v.is_finite() && v > 0.0),
                "{d:?}"
            );
            assert_eq!(d.gbps.is_some(), d.messages_per_s.is_some(), "{d:?}");
        }
    }

    #[test]
    fn names_and_empty_workloads() {
        let cfg = RpcAccConfig::default();
        assert!(workload(&cfg, &mut Engine, "bogus", &[]).is_err());
        assert!(run(&cfg, &[]).is_err());
        let d = workload(&cfg, &mut Engine, "flat-deser", &[]).unwrap();
        let r = run(&cfg, &d).unwrap();
        assert_eq!((r.serialized, r.deserialized), (0, 1));
        assert!(r.serialization.is_empty());
    }

    #[test]
    fn labelled_fields_live_in_card_memory() {
        let cfg = RpcAccConfig::default();
        let labelled = ["bench.Flat.payload", "bench.Flat.name"];
        let run_with = |cfg: &RpcAccConfig, labels: &[&str]| {
            let ms = workload(cfg, &mut Engine, "flat", labels).unwrap();
            run(cfg, &ms).unwrap()
        };
        let (host, card) = (run_with(&cfg, &[]), run_with(&cfg, &labelled));
        let stat = |r: &RpcAccReport, k: &str| r.stats.get(k).unwrap();
        // The labelled fields' bytes: written to card memory by the target-aware
        // deserializer, read from it by the serializer, skipped by pre-serialization.
        let moved = stat(&card, "deserializer.card_memory_bytes");
        assert!(moved > 0.0 && stat(&host, "deserializer.card_memory_bytes") == 0.0);
        assert_eq!(stat(&card, "serializer.card_memory_read_bytes"), moved);
        assert_eq!(
            stat(&host, "host.pre_serialization_copied_bytes")
                - stat(&card, "host.pre_serialization_copied_bytes"),
            moved
        );
        // Host chunks hold what stays in host memory.
        assert!(
            stat(&card, "chunk_allocator.used_bytes") < stat(&host, "chunk_allocator.used_bytes")
        );
        // ProtoACC-PCIe knows no labels when deserializing: field by field into host memory.
        let fbf = |r: &RpcAccReport| design(&r.deserialization, "protoacc_pcie").latency_ns;
        assert_eq!(fbf(&host), fbf(&card));
        // Its serializer reads the labelled fields from card memory instead of across PCIe:
        // never slower, and faster where each read waits for the one before it.
        let pp = |r: &RpcAccReport| design(&r.serialization, "protoacc_pcie").latency_ns;
        assert!(pp(&card) <= pp(&host));
        let serial = RpcAccConfig {
            read_window_fields: 1,
            ..cfg.clone()
        };
        assert!(pp(&run_with(&serial, &labelled)) < pp(&run_with(&serial, &[])));
        // A suite has a schema per set, so a name cannot label them all.
        let err = workload(&cfg, &mut Engine, "hpb", &["hpb.M1.f1"]).unwrap_err();
        assert!(err.to_string().contains("a schema each"), "{err}");
        let err = workload(&cfg, &mut Engine, "flat", &["bench.Flat.lat"]).unwrap_err();
        assert!(err.to_string().contains("singular double"), "{err}");
    }
}
