//! The RPCAcc model (PCIe-attached RPC accelerator) and the baselines it is compared with:
//! ProtoACC over PCIe, ProtoACC on-chip, CPU-only, the Dagger (UPI) variants and the
//! BlueField-3 SmartNIC (`bf3`).
//!
//! Every design replays the same message programs (see [`crate::program`]):
//! - **Serializer engine** (ProtoACC-style, used by ProtoACC-PCIe/-OnChip and Dagger-ProtoACC):
//!   walks the objects field by field, depth first, issuing the fields' memory reads in that
//!   order once each address is known (a sub-message's fields once its pointer has been
//!   loaded from the parent's record; a string's bytes at the address its record gives) for
//!   the `read_window_fields` fields from the one being encoded on, with at most
//!   `max_outstanding_reads` in flight: a read waiting for its address holds back the reads
//!   after it. Each read costs the interconnect latency plus bytes over bandwidth; each field
//!   costs `cycles_per_field` at the accelerator clock, and its bytes move at
//!   `engine_bits_per_cycle`.
//! - **Memory-affinity serialization** (RPCAcc §III-C): the host CPU pre-serializes its fields
//!   without encoding into a contiguous DMA-safe buffer (large copies offloaded to the memcpy
//!   engine), one MMIO notifies the card, one DMA read fetches the buffer, the serializer
//!   encodes `encode_bits_per_cycle` per cycle and reads accelerator-resident fields locally.
//! - **Deserializer** (§III-B): `deser_lanes` lanes parse at `cycles_per_field` per field plus
//!   the input at `encode_bits_per_cycle`; results cross PCIe either field by field (one DMA
//!   write transaction per field) or one-shot (one per `temp_buffer_bytes`, and one at each
//!   host chunk the results move on to), through a DMA engine that costs `dma_txn_ns` per
//!   transaction plus bytes over bandwidth; one-shot, the lane also pops its chunks
//!   (`chunk_pop_cycles` each).
//!
//! `serializer` (with `timeline`, when its links and read slots are busy), `deserializer`,
//! `host` and `bf3` hold these parts; this module holds the
//! configuration, the messages and the RPC layer they add up to; `service` is §IV-H's image
//! service and `report` one run of every design on a workload.

mod bf3;
mod deserializer;
pub mod gateway;
mod host;
pub mod image_service;
pub mod load;
pub mod report;
mod serializer;
pub mod service;
mod timeline;

pub use bf3::{bf3_deser, bf3_ser, bf3_ser_occupancy, Bf3Config, Bf3Deser, Bf3Ser};
pub use deserializer::{chunk_alloc_share_pct, deser_times, ChunkUse, DeserLink, DeserTimes};
pub use host::{cpu_ser_ns, host_cycles, preser_ns, HostCycles};
pub use serializer::{
    memaff_card_occupancy, ser_occupancy, ser_times, serializer_ns, Reach, SerTimes,
};

use serde::{Deserialize, Serialize};

use optimus_trace::Direction;

use crate::cpu::CpuConfig;
use crate::error::{check_non_negative, check_positive, Result};
use crate::program::Program;
use crate::workload::{hpb, socialnet, MessageSet, MessageTrace, TraceSource, SUITE_SEED};
use gateway::GatewayConfig;
use service::ServiceConfig;

/// An interconnect or memory: latency and bandwidth.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// One access round trip in ns.
    pub latency_ns: f64,
    /// Bandwidth in GB/s (= bytes per ns).
    pub bw_gbytes_s: f64,
}

/// RPCAcc and baseline parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RpcAccConfig {
    /// Seed of the HyperProtoBench and DeathStarBench populations. Default
    /// [`SUITE_SEED`].
    pub seed: u64,
    /// Accelerator clock in MHz. Default 250 (§IV-A: "RPC/transport logic runs at 250 MHz").
    pub clock_mhz: f64,
    /// PCIe. Default 1250 ns, 12.8 GB/s (Table I, RPCAcc row).
    pub pcie: LinkConfig,
    /// Host memory as seen on-chip. Default 70 ns (§II-C: DDR5), 64 GB/s.
    pub host_mem: LinkConfig,
    /// Accelerator off-chip memory (U280 HBM). Default 150 ns, 100 GB/s (not stated; typical).
    pub accel_mem: LinkConfig,
    /// UPI for the Dagger variants. Default 800 ns round trip (§IV-E: 400 ns one-way),
    /// 19.2 GB/s (Table I).
    pub upi: LinkConfig,
    /// Outstanding reads of the serializer's memory interface. Default 16.
    pub max_outstanding_reads: u32,
    /// Fields whose reads may be in flight, the one being encoded included. Default 32 (assumed;
    /// on the calibrated messages the pointers a sub-message's reads wait for and the
    /// outstanding reads bind first: from 16 fields on it moves no target by 2 %).
    pub read_window_fields: u32,
    /// Whether ProtoACC's serializer engine (and BF3's object copy) loads a leaf dereference
    /// field's pointer from its record before reading its data: a string's or bytes'
    /// characters, a repeated field's elements (RPCAcc §I: "dereference field
    /// (strings/bytes/repeated/sub-messages)"). Default false: a sub-message's pointer is
    /// always loaded, and with these too ProtoACC over PCIe overshoots the paper's latency
    /// sensitivity (Fig. 2's 3.4× at 4.17×; 21 targets met instead of 26, see
    /// docs/simulator.md), so the engine reads a leaf's data at the address its walk gives.
    pub leaf_pointer_loads: bool,
    /// Cycles per field in the (de)serializer pipelines. Default 2.
    pub cycles_per_field: f64,
    /// Bits encoded/parsed per cycle. Default 512 (§III-C: "per-512-bit ... one cycle").
    pub encode_bits_per_cycle: f64,
    /// Bits ProtoACC's serializer engine (ProtoACC-PCIe, -OnChip, Dagger-ProtoACC) moves per
    /// cycle. Default 512, RPCAcc's width: the paper's ProtoACC-OnChip at 250 MHz outruns
    /// ProtoACC's RTL, whose memory writer takes 16 bytes a cycle (128), on the suite's
    /// multi-KB strings (see docs/simulator.md).
    pub engine_bits_per_cycle: f64,
    /// Deserializer lanes. Default 4 (§III-B).
    pub deser_lanes: u32,
    /// Temp Buffer bytes (one-shot DMA granule). Default 4096 (§III-B).
    pub temp_buffer_bytes: u32,
    /// Whether a lane stops parsing while its Temp Buffer is flushed mid-message, full or at
    /// a host chunk's end (a single buffer per lane, read out by the DMA engine before it
    /// takes new fields). Default true: §III-B gives each lane one 4 KB buffer, and its
    /// chunk-allocation share, 0.68 %, is one pop per parse *plus* flush of 4 KB (see
    /// docs/simulator.md); false lets the buffer leave while parsing goes on.
    pub flush_stalls_parsing: bool,
    /// DMA engine cost of one PCIe write transaction in ns (descriptor, TLPs, completion
    /// credit): the "limited number of concurrent PCIe transactions" of §II-C C1. Default 10
    /// (calibrated to Fig. 5's 2.2× average, see docs/simulator.md).
    pub dma_txn_ns: f64,
    /// Same, for writes into the card's own memory (HBM channels in parallel). Default 1.
    pub local_txn_ns: f64,
    /// MMIO doorbell from host to card in ns. Default 625 (half a PCIe round trip). A
    /// configuration that sets `pcie.latency_ns` and not this sets it to half that round trip
    /// ([`crate::config_file::FOLLOWERS`]), as `optimus sim --pcie-ns` does.
    pub mmio_ns: f64,
    /// Host CPU (2.0 GHz Xeon Silver 4514Y, §IV-A) running protobuf software.
    pub cpu: CpuConfig,
    /// The BlueField-3 SmartNIC of the Fig. 8 baselines.
    pub bf3: Bf3Config,
    /// Host instructions per field of pre-serialization (no encoding). Default 16 (calibrated
    /// to Fig. 6's 74 % saving on DeathStarBench, see docs/simulator.md).
    pub preser_per_field: f64,
    /// Fields at least this large are copied by the memcpy engine (DSA). Default 1024.
    pub dsa_threshold_bytes: u32,
    /// Host cost of one memcpy-engine submission in ns. Default 100.
    pub dsa_submit_ns: f64,
    /// Memcpy-engine bandwidth in GB/s. Default 30.
    pub dsa_bw_gbytes_s: f64,
    /// Bytes of one chunk of the deserializer's host and accelerator memory regions, popped
    /// from a free-list FIFO. Default 4096 (§III-B: "divided into 4KB chunks").
    pub chunk_bytes: u32,
    /// Accelerator cycles to pop a chunk from a free-list FIFO, spent by the deserializer lane
    /// that pops it (one-shot: its pre-allocated host and accelerator chunks per message, and
    /// each chunk its objects move on to). Default 1 (§III-B: the FIFOs are SRAM; an SRAM FIFO
    /// read takes one cycle; not stated).
    pub chunk_pop_cycles: f64,
    /// Host time of a DeathStarBench handler's own work per call (Fig. 13), in ns. Default 0:
    /// not published, and any positive value lowers both of Fig. 13's ratios, which the RPC
    /// layer alone already leaves below the paper's 1.57× (see docs/simulator.md).
    pub dsb_handler_ns: f64,
    /// Host time in ns of the software RPC stack's protocol processing per call, which
    /// CPU-only pays: its RPC layer is eRPC on the host (§IV-A: "It uses the DPDK-based eRPC
    /// \[33\] library"), while ProtoACC-PCIe and RPCAcc run the RPC protocol and transport in the
    /// NIC (§IV-A: "It offloads the entire RPC stack"; "The RPC/transport logic runs at 250
    /// MHz"). The BF3 designs run the same stack on an Arm core (§IV-A: "The software stack
    /// is the same as the CPU baseline"), its instructions at the Arm's clock and IPC.
    /// Default 850 (Optimus Prime §6.3, Table 3: "protocol processing latencies of
    /// ~850ns as claimed by eRPC").
    pub cpu_rpc_stack_ns: f64,
    /// The image-compression service of §IV-H (Fig. 11, Fig. 12): its requests, its host
    /// kernels and the cores Fig. 12a sweeps.
    pub service: ServiceConfig,
    /// The cloud gateway of §II-C (C3): its packets, host cores and flow lookup.
    pub gateway: GatewayConfig,
}

/// The card's DMA engine cost per PCIe transaction in ns, the default of both
/// [`RpcAccConfig::dma_txn_ns`] and [`Bf3Config::dma_txn_ns`] (calibrated to Fig. 5's 2.2×).
pub const CARD_DMA_TXN_NS: f64 = 10.0;

/// The card's PCIe link (Table I: 1250 ns round trip, 12.8 GB/s), the default of both
/// [`RpcAccConfig::pcie`] and [`Bf3Config::pcie`].
pub const CARD_PCIE: LinkConfig = LinkConfig {
    latency_ns: 1250.0,
    bw_gbytes_s: 12.8,
};

impl Default for RpcAccConfig {
    fn default() -> Self {
        Self {
            seed: SUITE_SEED,
            clock_mhz: 250.0,
            pcie: CARD_PCIE,
            host_mem: LinkConfig {
                latency_ns: 70.0,
                bw_gbytes_s: 64.0,
            },
            accel_mem: LinkConfig {
                latency_ns: 150.0,
                bw_gbytes_s: 100.0,
            },
            upi: LinkConfig {
                latency_ns: 800.0,
                bw_gbytes_s: 19.2,
            },
            max_outstanding_reads: 16,
            read_window_fields: 32,
            leaf_pointer_loads: false,
            cycles_per_field: 2.0,
            encode_bits_per_cycle: 512.0,
            engine_bits_per_cycle: 512.0,
            deser_lanes: 4,
            temp_buffer_bytes: 4096,
            flush_stalls_parsing: true,
            dma_txn_ns: CARD_DMA_TXN_NS,
            local_txn_ns: 1.0,
            mmio_ns: 625.0,
            cpu: CpuConfig::default(),
            bf3: Bf3Config::default(),
            preser_per_field: 16.0,
            dsa_threshold_bytes: 1024,
            dsa_submit_ns: 100.0,
            dsa_bw_gbytes_s: 30.0,
            chunk_bytes: 4096,
            chunk_pop_cycles: 1.0,
            dsb_handler_ns: 0.0,
            cpu_rpc_stack_ns: 850.0,
            service: ServiceConfig::default(),
            gateway: GatewayConfig::default(),
        }
    }
}

impl RpcAccConfig {
    /// Checks parameters.
    ///
    /// # Errors
    /// [`crate::SimError::Config`] naming the field.
    pub fn validate(&self) -> Result<()> {
        let bf3 = &self.bf3;
        check_positive(
            "rpcacc",
            &[
                (self.clock_mhz, "clock_mhz"),
                (self.pcie.bw_gbytes_s, "pcie.bw_gbytes_s"),
                (self.host_mem.bw_gbytes_s, "host_mem.bw_gbytes_s"),
                (self.accel_mem.bw_gbytes_s, "accel_mem.bw_gbytes_s"),
                (self.upi.bw_gbytes_s, "upi.bw_gbytes_s"),
                (self.encode_bits_per_cycle, "encode_bits_per_cycle"),
                (self.engine_bits_per_cycle, "engine_bits_per_cycle"),
                (self.dsa_bw_gbytes_s, "dsa_bw_gbytes_s"),
                (bf3.pcie.bw_gbytes_s, "bf3.pcie.bw_gbytes_s"),
                (f64::from(bf3.cores), "bf3.cores"),
                (
                    f64::from(self.max_outstanding_reads),
                    "max_outstanding_reads",
                ),
                (f64::from(self.read_window_fields), "read_window_fields"),
                (f64::from(self.deser_lanes), "deser_lanes"),
                (f64::from(self.temp_buffer_bytes), "temp_buffer_bytes"),
                (f64::from(self.chunk_bytes), "chunk_bytes"),
            ],
        )?;
        check_non_negative(
            "rpcacc",
            &[
                (self.pcie.latency_ns, "pcie.latency_ns"),
                (self.host_mem.latency_ns, "host_mem.latency_ns"),
                (self.accel_mem.latency_ns, "accel_mem.latency_ns"),
                (self.upi.latency_ns, "upi.latency_ns"),
                (bf3.pcie.latency_ns, "bf3.pcie.latency_ns"),
                (self.cycles_per_field, "cycles_per_field"),
                (self.dma_txn_ns, "dma_txn_ns"),
                (self.local_txn_ns, "local_txn_ns"),
                (self.mmio_ns, "mmio_ns"),
                (self.preser_per_field, "preser_per_field"),
                (self.dsa_submit_ns, "dsa_submit_ns"),
                (self.chunk_pop_cycles, "chunk_pop_cycles"),
                (self.dsb_handler_ns, "dsb_handler_ns"),
                (self.cpu_rpc_stack_ns, "cpu_rpc_stack_ns"),
                (bf3.dma_job_ns, "bf3.dma_job_ns"),
                (bf3.dma_txn_ns, "bf3.dma_txn_ns"),
            ],
        )?;
        self.cpu.validate("rpcacc.cpu")?;
        self.service.validate("rpcacc.service")?;
        self.gateway.validate("rpcacc.gateway")?;
        bf3.arm.validate("rpcacc.bf3.arm")
    }
}

/// One message prepared for every design: its serialize and deserialize programs.
#[derive(Clone, Debug)]
pub struct RpcMessage {
    /// Bench name.
    pub bench: String,
    /// Index in the bench.
    pub index: usize,
    /// Serialization program (fields placed as built).
    pub ser: Program,
    /// Deserialization program.
    pub deser: Program,
    /// Serialization trace (for the CPU model).
    pub ser_trace: MessageTrace,
    /// Deserialization trace.
    pub deser_trace: MessageTrace,
    /// Mean payload bytes per field (Fig. 5's x axis).
    pub avg_field_bytes: f64,
}

impl RpcMessage {
    /// Whether the message is serialized: a message known from a decode trace alone has no
    /// serialization program (not an empty one: a message without fields is still sent).
    pub fn serializes(&self) -> bool {
        self.ser.direction.is_some()
    }

    /// Whether the message is deserialized (see [`Self::serializes`]).
    pub fn deserializes(&self) -> bool {
        self.deser.direction.is_some()
    }
}

/// Builds the programs of one message from its engine traces (every field in host memory:
/// the generated messages carry no placement bits).
pub fn prepare(
    bench: &str,
    index: usize,
    ser_trace: MessageTrace,
    deser_trace: MessageTrace,
    avg_field_bytes: f64,
) -> RpcMessage {
    RpcMessage {
        bench: bench.to_string(),
        index,
        ser: Program::from_trace(&ser_trace),
        deser: Program::from_trace(&deser_trace),
        ser_trace,
        deser_trace,
        avg_field_bytes,
    }
}

/// The HyperProtoBench suite, serialized and deserialized by the engine behind `source`.
///
/// # Errors
/// As [`crate::workload::trace_messages`].
pub fn suite(cfg: &RpcAccConfig, source: &mut dyn TraceSource) -> Result<Vec<RpcMessage>> {
    prepare_sets(&hpb::suite(cfg.seed), source, &[])
}

/// The DeathStarBench services' messages (`workload::socialnet`): per service, every request
/// and response of its draws, serialized and deserialized by the engine behind `source`.
///
/// # Errors
/// As [`crate::workload::trace_messages`].
pub fn socialnet(cfg: &RpcAccConfig, source: &mut dyn TraceSource) -> Result<Vec<RpcMessage>> {
    prepare_sets(&socialnet::sets(cfg.seed), source, &[])
}

/// Every message of `sets`, serialized and deserialized by the engine behind `source`, the
/// fields `accel_fields` labelled "Acc".
pub(super) fn prepare_sets(
    sets: &[MessageSet],
    source: &mut dyn TraceSource,
    accel_fields: &[&str],
) -> Result<Vec<RpcMessage>> {
    let mut out = Vec::new();
    for set in sets {
        let ser = set.trace_labelled(source, Direction::Encode, accel_fields)?;
        let deser = set.trace_labelled(source, Direction::Decode, accel_fields)?;
        for (i, (s, d)) in ser.into_iter().zip(deser).enumerate() {
            out.push(prepare(&set.name, i, s, d, set.avg_field_bytes[i]));
        }
    }
    Ok(out)
}

/// A server's RPC layer time (ns) for one call on each design: the request's
/// deserialization (arrived at the NIC) to the host, and the response's serialization to the
/// NIC where the call has one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RpcLayer {
    /// The NIC's DMA, eRPC's protocol processing and software deserialization; software
    /// serialization, then the DMA out.
    pub cpu_only: f64,
    /// Field-by-field deserialization into host memory; ProtoACC-PCIe serialization.
    pub protoacc_pcie: f64,
    /// One-shot deserialization; memory-affinity serialization.
    pub rpcacc: f64,
}

/// [`RpcLayer`] of a call with request `req` and response `resp`, at the accelerator clock,
/// with the same per-design definitions as the HyperProtoBench experiments.
pub fn rpc_layer(cfg: &RpcAccConfig, req: &RpcMessage, resp: Option<&RpcMessage>) -> RpcLayer {
    let mut l = deser_layer(cfg, req);
    if let Some(r) = resp {
        let s = ser_times(cfg, r, cfg.clock_mhz);
        l.cpu_only += s.cpu_only;
        l.protoacc_pcie += s.protoacc_pcie;
        l.rpcacc += s.rpcacc;
    }
    l
}

/// The deserialization part of [`RpcLayer`]: request `m` from the NIC to the host on each
/// design (CPU-only: DMA, eRPC's protocol processing, software; ProtoACC-PCIe: field by
/// field, a DMA transaction each; RPCAcc: one-shot).
pub fn deser_layer(cfg: &RpcAccConfig, m: &RpcMessage) -> RpcLayer {
    deser_layer_of(
        cfg,
        m,
        &deser_times(cfg, m, DeserLink::pcie(cfg), cfg.clock_mhz),
    )
}

/// [`deser_layer`] of `m` whose [`deser_times`] over PCIe at the accelerator clock are `d`.
pub fn deser_layer_of(cfg: &RpcAccConfig, m: &RpcMessage, d: &DeserTimes) -> RpcLayer {
    let pcie = cfg.pcie;
    RpcLayer {
        cpu_only: pcie.latency_ns / 2.0
            + m.deser.wire_bytes as f64 / pcie.bw_gbytes_s
            + cfg.cpu_rpc_stack_ns
            + cfg.cpu.message_ns(&m.deser_trace),
        protoacc_pcie: d.fbf_latency_ns,
        rpcacc: d.oneshot_latency_ns,
    }
}

/// Geometric mean.
pub fn geomean(xs: impl IntoIterator<Item = f64>) -> f64 {
    let (mut s, mut n) = (0.0, 0u32);
    for x in xs {
        s += x.max(1e-300).ln();
        n += 1;
    }
    if n == 0 {
        return f64::NAN;
    }
    (s / f64::from(n)).exp()
}

/// Arithmetic mean.
pub fn mean(xs: impl IntoIterator<Item = f64>) -> f64 {
    let (mut s, mut n) = (0.0, 0u32);
    for x in xs {
        s += x;
        n += 1;
    }
    s / f64::from(n.max(1))
}

/// Round parameters for the components' worked examples (12 ns a DMA transaction, 19
/// instructions of pre-serialization a field, Arm IPC 1), kept apart from the calibrated
/// defaults so that the examples check the mechanics, not the calibration.
#[cfg(test)]
pub(crate) fn worked_example_config() -> RpcAccConfig {
    let mut cfg = RpcAccConfig {
        dma_txn_ns: 12.0,
        preser_per_field: 19.0,
        ..RpcAccConfig::default()
    };
    cfg.bf3.arm.ipc = 1.0;
    cfg.bf3.dma_txn_ns = 12.0;
    cfg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rate_and_cost_is_checked() {
        let refused = |set: fn(&mut RpcAccConfig), field: &str| {
            let mut cfg = RpcAccConfig::default();
            set(&mut cfg);
            let err = cfg.validate().unwrap_err().to_string();
            assert!(err.contains(field), "{err}");
        };
        refused(|c| c.host_mem.bw_gbytes_s = 0.0, "host_mem.bw_gbytes_s");
        refused(|c| c.upi.latency_ns = -1.0, "upi.latency_ns");
        refused(|c| c.deser_lanes = 0, "deser_lanes");
        refused(|c| c.dma_txn_ns = f64::INFINITY, "dma_txn_ns");
        refused(|c| c.cpu.ipc = 0.0, "rpcacc.cpu.ipc");
        refused(
            |c| c.bf3.arm.per_field = f64::NAN,
            "rpcacc.bf3.arm.per_field",
        );
        // Finite but absurd: the run would overflow to infinite times.
        refused(|c| c.pcie.latency_ns = 1e308, "pcie.latency_ns");
        refused(|c| c.clock_mhz = 1e-300, "clock_mhz");
        refused(|c| c.dsa_bw_gbytes_s = 1e-320, "dsa_bw_gbytes_s");
        RpcAccConfig::default().validate().unwrap();
    }

    #[test]
    fn the_largest_accepted_parameters_still_give_finite_times() {
        let cfg = RpcAccConfig {
            pcie: LinkConfig {
                latency_ns: crate::error::PARAM_MAX,
                bw_gbytes_s: crate::error::PARAM_MIN_POSITIVE,
            },
            clock_mhz: crate::error::PARAM_MIN_POSITIVE,
            cycles_per_field: crate::error::PARAM_MAX,
            mmio_ns: crate::error::PARAM_MAX,
            ..RpcAccConfig::default()
        };
        let ms = suite(&cfg, &mut optimus_core::binary::EngineTraces).unwrap();
        let r = report::run(&cfg, &ms).unwrap();
        let json = serde_json::to_string(&r).unwrap();
        assert!(!json.contains("null") && !json.contains("inf"), "{json}");
    }
}
