//! The BlueField-3 baselines of RPCAcc §IV-D (Fig. 8): the RPC layer on the SmartNIC's Arm
//! cores, which reach host memory only through the DPU's DMA engine, with and without
//! RPCAcc's optimizations. "The software stack is the same as the CPU baseline" (§IV-A), so
//! an Arm core runs the CPU model's instructions at its own clock and IPC.
//!
//! - **BF3** serializes a message the host built: the Arm core copies its object graph into
//!   its own memory with DMA reads (a child's read waits for its parent's pointer; reads
//!   overlap within the serializer engine's window), then runs protobuf's serializer on it.
//!   It deserializes on the Arm core and writes every field to host memory with a DMA write
//!   of its own.
//! - **BF3-MemoryAffinity** pre-serializes on the host (§III-C, every copy on the core); the
//!   Arm core fetches the buffer in one DMA read and encodes it. **BF3-DSA** gives the
//!   large copies to the memcpy engine.
//! - **BF3-Oneshot** deserializes into a staging buffer and writes it to host memory in one
//!   DMA ("coalesces small DMA requests into a large request").
//!
//! Every DMA is a job the Arm core posts and reaps ([`Bf3Config::dma_job_ns`]); the engine
//! takes [`Bf3Config::dma_txn_ns`] per transaction plus the bytes at PCIe bandwidth.

use serde::{Deserialize, Serialize};

use super::deserializer::{item_spans, DmaQueue, COMPLETION_BYTES};
use super::host::{preser_bytes, preser_ns};
use super::serializer::{walk_ns, Reach};
use super::{LinkConfig, RpcAccConfig, RpcMessage};
use crate::cpu::CpuConfig;

/// BlueField-3 parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Bf3Config {
    /// One Arm Cortex-A78 core running the CPU baseline's software: the host's instruction
    /// counts at 2.0 GHz (published characterizations give BF3's Arm cores 2.0-2.25 GHz) and
    /// IPC 1.9 (fitted to Fig. 8b's 5.9x of RPCAcc over BF3-Oneshot; the host's is 1.2).
    pub arm: CpuConfig,
    /// Arm cores deserializing in parallel. Default 1, as the CPU baseline's core.
    pub cores: u32,
    /// PCIe between the DPU and host memory. Default [`super::CARD_PCIE`], the card's
    /// (Table I: 1250 ns, 12.8 GB/s); the paper gives none for BF3.
    pub pcie: LinkConfig,
    /// Arm core time to post one DMA job and reap its completion, in ns. Default 100 (fitted
    /// to Fig. 8b's 1.78x of BF3-Oneshot over BF3).
    pub dma_job_ns: f64,
    /// DMA engine time per transaction, in ns. Default [`super::CARD_DMA_TXN_NS`], as the
    /// card's DMA engine; it binds only with several cores.
    pub dma_txn_ns: f64,
}

impl Default for Bf3Config {
    fn default() -> Self {
        Self {
            arm: CpuConfig {
                clock_ghz: 2.0,
                ipc: 1.9,
                ..CpuConfig::default()
            },
            cores: 1,
            pcie: super::CARD_PCIE,
            dma_job_ns: 100.0,
            dma_txn_ns: super::CARD_DMA_TXN_NS,
        }
    }
}

/// Serialization times (ns) of one message on Fig. 8a's BF3 designs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Bf3Ser {
    /// BF3: DMA copy of the object graph, then software serialization on the Arm core.
    pub naive: f64,
    /// BF3-MemoryAffinity: host pre-serialization, one DMA read, Arm encoding.
    pub memory_affinity: f64,
    /// BF3-DSA: the same with large copies on the memcpy engine.
    pub dsa: f64,
}

/// The stages of `m`'s serialization on the BF3 designs (ns).
struct Bf3Stages {
    /// Software serialization on the Arm core.
    arm: f64,
    /// The object graph's DMA reads, their jobs included.
    reads: f64,
    /// The pre-serialized buffer's DMA read, its job included.
    fetch: f64,
    /// Host pre-serialization, every copy on the core.
    pre: f64,
    /// Host pre-serialization with the memcpy engine, and the engine's copies.
    pre_dsa: f64,
    dsa: f64,
}

fn bf3_stages(cfg: &RpcAccConfig, m: &RpcMessage) -> Bf3Stages {
    let bf3 = &cfg.bf3;
    let (pre, _) = preser_ns(cfg, m, false);
    let (pre_dsa, dsa) = preser_ns(cfg, m, true);
    Bf3Stages {
        arm: bf3.arm.message_ns(&m.ser_trace),
        // Without per-field work: the copy precedes the serializer. The core posts each
        // read's DMA job as the walk reaches it, while earlier reads are in flight.
        reads: walk_ns(cfg, &m.ser, Reach::One(bf3.pcie), 0.0, [bf3.dma_job_ns; 2]),
        fetch: bf3.dma_job_ns + bf3.pcie.latency_ns + preser_bytes(m) / bf3.pcie.bw_gbytes_s,
        pre,
        pre_dsa,
        dsa,
    }
}

/// [`Bf3Ser`] of `m`: from the host's notification to the last encoded byte.
pub fn bf3_ser(cfg: &RpcAccConfig, m: &RpcMessage) -> Bf3Ser {
    let s = bf3_stages(cfg, m);
    // The host's doorbell crosses the DPU's PCIe one way.
    let doorbell = cfg.bf3.pcie.latency_ns / 2.0;
    Bf3Ser {
        naive: doorbell + s.reads + s.arm,
        memory_affinity: s.pre + doorbell + s.fetch + s.arm,
        dsa: s.pre_dsa.max(s.dsa) + doorbell + s.fetch + s.arm,
    }
}

/// Per BF3 design, the time its busiest resource spends on `m` when messages follow each
/// other (ns): the Arm core, which runs one message to completion and waits for its DMA
/// reads, or on the memory-affinity designs the host core or memcpy engine ahead of it.
pub fn bf3_ser_occupancy(cfg: &RpcAccConfig, m: &RpcMessage) -> Bf3Ser {
    let s = bf3_stages(cfg, m);
    let arm_core = s.fetch + s.arm;
    Bf3Ser {
        naive: s.reads + s.arm,
        memory_affinity: s.pre.max(arm_core),
        dsa: s.pre_dsa.max(s.dsa).max(arm_core),
    }
}

/// Deserialization of one message on Fig. 8b's BF3 designs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Bf3Deser {
    /// BF3 throughput (messages/µs), a DMA write per field: the Arm cores' time or the DMA
    /// engine's, whichever binds.
    pub field_by_field: f64,
    /// BF3-Oneshot throughput (messages/µs), one DMA write per message.
    pub oneshot: f64,
    /// BF3 latency (ns): decoding and posting, then the last write across PCIe.
    pub field_by_field_latency_ns: f64,
    /// BF3-Oneshot latency (ns): decoding, then the staging buffer across PCIe.
    pub oneshot_latency_ns: f64,
}

/// The CPU baseline's RPC stack on the Arm core (ns per request): §IV-A's "software stack
/// is the same as the CPU baseline", so the host's protocol processing
/// ([`RpcAccConfig::cpu_rpc_stack_ns`]) as instructions at the Arm core's clock and IPC.
fn rpc_stack_ns(cfg: &RpcAccConfig) -> f64 {
    let instructions = cfg.cpu_rpc_stack_ns * cfg.cpu.ipc * cfg.cpu.clock_ghz;
    instructions / (cfg.bf3.arm.ipc * cfg.bf3.arm.clock_ghz)
}

/// [`Bf3Deser`] of `m`. Latency: the Arm core runs the RPC stack, then decodes the fields in order (its time shared
/// out over them as a deserializer lane's parsing is) and posts each write as a DMA job
/// (field by field) or the staging buffer once decoded (one-shot), then the completion that
/// notifies the host; the engine sends them in order, and the host learns of the message one
/// way after the completion.
pub fn bf3_deser(cfg: &RpcAccConfig, m: &RpcMessage) -> Bf3Deser {
    let bf3 = &cfg.bf3;
    let stack = rpc_stack_ns(cfg);
    let decode = bf3.arm.message_ns(&m.deser_trace);
    let arm = stack + decode;
    let writes: Vec<u32> = m.deser.write_sizes().collect();
    let bytes: f64 = writes.iter().map(|&b| f64::from(b)).sum();
    // Messages a second with `writes` DMA jobs of data, and the completion's.
    let rate = |writes: f64| {
        let jobs = writes + 1.0;
        let cores = (arm + jobs * bf3.dma_job_ns) / f64::from(bf3.cores);
        let engine = jobs * bf3.dma_txn_ns + (bytes + COMPLETION_BYTES) / bf3.pcie.bw_gbytes_s;
        1000.0 / cores.max(engine)
    };
    let one_way = bf3.pcie.latency_ns / 2.0;
    let spans = item_spans(cfg, &m.deser, cfg.clock_mhz);
    let lane = spans.last().map_or(0.0, |s| s.1);
    let mut fbf = DmaQueue::new(bf3.dma_txn_ns, bf3.pcie.bw_gbytes_s);
    let mut jobs = 0.0;
    for (it, (_, end)) in m.deser.items.iter().zip(&spans) {
        let decoded = stack
            + if lane > 0.0 {
                decode * end / lane
            } else {
                decode
            };
        for w in &it.writes {
            jobs += 1.0;
            fbf.send(decoded + jobs * bf3.dma_job_ns, f64::from(w.2));
        }
    }
    let mut oneshot = DmaQueue::new(bf3.dma_txn_ns, bf3.pcie.bw_gbytes_s);
    oneshot.send(arm + bf3.dma_job_ns, bytes);
    // Then the completion that notifies the host, one more job.
    fbf.send(arm + (jobs + 1.0) * bf3.dma_job_ns, COMPLETION_BYTES);
    oneshot.send(arm + 2.0 * bf3.dma_job_ns, COMPLETION_BYTES);
    Bf3Deser {
        field_by_field: rate(writes.len() as f64),
        oneshot: rate(1.0),
        field_by_field_latency_ns: fbf.free_at + one_way,
        oneshot_latency_ns: oneshot.free_at + one_way,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpcacc::{prepare, suite};
    use optimus_core::binary::EngineTraces as Engine;

    #[test]
    fn one_field_takes_the_time_its_stages_add_up_to() {
        let trace = crate::program::one_field_trace(0x1000, 0x8000);
        let cfg = crate::rpcacc::worked_example_config();
        let m = prepare("t", 0, trace.clone(), trace, 0.0);
        // The Arm core: 117 instructions for the field, 5 per output varint byte (2), at
        // 2 instructions per ns.
        let arm = (117.0 + 5.0 * 2.0) / 2.0;
        let s = bf3_ser(&cfg, &m);
        // BF3: the doorbell (625 ns), one DMA read of the field's 4 B (1250 ns + 4 / 12.8 ns),
        // its 100 ns job, then the serializer.
        assert!((s.naive - (625.0 + 1250.0 + 4.0 / 12.8 + 100.0 + arm)).abs() < 1e-9);
        // Memory affinity: pre-serialization (19 + 0.5 x 4 instructions at 2.4 per ns), the
        // doorbell, one DMA job reading 12 B (the value and an 8 B header), the encoder. The
        // field is too small for the memcpy engine, so DSA changes nothing.
        let pre = (19.0 + 0.5 * 4.0) / 2.4;
        let ma = pre + 625.0 + 100.0 + 1250.0 + 12.0 / 12.8 + arm;
        assert!((s.memory_affinity - ma).abs() < 1e-9);
        assert_eq!(s.dsa, s.memory_affinity);
        // Deserialization: one write, so one job either way, and the completion's; the core
        // binds.
        // Messages in a row: the Arm core waits for its reads; on the memory-affinity
        // designs it runs beside the host's pre-serialization of the next message.
        let o = bf3_ser_occupancy(&cfg, &m);
        assert!((o.naive - (s.naive - 625.0)).abs() < 1e-9);
        assert!((o.memory_affinity - (100.0 + 1250.0 + 12.0 / 12.8 + arm)).abs() < 1e-9);
        // Deserialization first runs the RPC stack: the host's 850 ns at 2.4 instructions
        // per ns, on the Arm core at 2 per ns.
        let stack = 850.0 * 2.4 / 2.0;
        let d = bf3_deser(&cfg, &m);
        assert!((d.field_by_field - 1000.0 / (stack + arm + 200.0)).abs() < 1e-9);
        assert_eq!(d.oneshot, d.field_by_field);
        // The host learns of the write of 2 B one way across PCIe after the stack, the
        // decode, the two jobs and the completion's transaction (the write's went before).
        let land = stack + arm + 200.0 + 12.0 + 16.0 / 12.8 + 625.0;
        assert!((d.field_by_field_latency_ns - land).abs() < 1e-9);
        assert_eq!(d.oneshot_latency_ns, d.field_by_field_latency_ns);
    }

    #[test]
    fn pre_serialization_pays_where_reads_dominate() {
        let cfg = RpcAccConfig::default();
        for m in suite(&cfg, &mut Engine).unwrap() {
            let s = bf3_ser(&cfg, &m);
            assert!(s.dsa <= s.memory_affinity, "{} {}: {s:?}", m.bench, m.index);
            // A message of small fields pays a DMA job per field and a round trip per
            // dependent read; one whose bytes dominate may not gain, as it copies them on
            // the host at ~4.8 GB/s before they cross PCIe, where the naive copy overlaps
            // its reads.
            if m.avg_field_bytes < 64.0 {
                assert!(
                    s.naive > s.memory_affinity,
                    "{} {}: {s:?}",
                    m.bench,
                    m.index
                );
            }
            let d = bf3_deser(&cfg, &m);
            assert!(
                d.oneshot >= d.field_by_field,
                "{} {}: {d:?}",
                m.bench,
                m.index
            );
        }
    }

    #[test]
    fn more_cores_help_until_the_dma_engine_binds() {
        let cfg = crate::rpcacc::worked_example_config();
        let many = RpcAccConfig {
            bf3: Bf3Config {
                cores: 1000,
                ..cfg.bf3.clone()
            },
            ..cfg.clone()
        };
        let m = &suite(&cfg, &mut Engine).unwrap()[0];
        let (one, all) = (bf3_deser(&cfg, m), bf3_deser(&many, m));
        assert!(all.field_by_field > one.field_by_field);
        // Bound by the engine: a transaction per field and the completion's.
        let writes = m.deser.write_sizes().count();
        let bytes: f64 = m.deser.write_sizes().map(f64::from).sum();
        let engine = (writes + 1) as f64 * 12.0 + (bytes + 16.0) / 12.8;
        assert!((all.field_by_field - 1000.0 / engine).abs() < 1e-9);
    }
}
