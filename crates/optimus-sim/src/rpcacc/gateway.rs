//! The RPC-based cloud gateway of RPCAcc §II-C (C3): a network function whose kernels run on
//! the card's compute unit, and what the placement of its packet's fields in host or card
//! memory does to its throughput.
//!
//! Each request is a packet message (`workload::gateway`); the response is the same packet,
//! rewritten, on its way out. Per request, on RPCAcc:
//!
//! 1. the target-aware deserializer writes the fields labelled "Acc" to card memory and the
//!    rest, with the message's record, to host memory in one-shot DMA (§III-B);
//! 2. a host core looks up the flow (`lookup_dependent_loads` dependent loads of host memory)
//!    and submits the task to the compute unit with an MMIO write;
//! 3. the compute unit runs L2/L3 processing, NAT and de/encryption on the packet's four
//!    fields at line rate (§IV-H's compute units), reading each field in host memory with
//!    a DMA read across PCIe and writing it back with a DMA write, and the fields in card
//!    memory locally; then it writes its completion to host memory;
//! 4. a host core sees the completion, pre-serializes the response's host fields (§III-C;
//!    those of 1 KB or more through the memcpy engine) and rings the serializer, which
//!    fetches the pre-serialized buffer in one DMA read and reads the card's fields locally.
//!
//! The handler does not wait for the compute unit: the core that submits a task moves on,
//! and a core that finds its completion finishes it, so host time per request is the lookup,
//! the two MMIO writes, the completion's read and pre-serialization. The gateway's rate is
//! bounded by its busiest resource: the host cores, the memcpy engine, the line in each
//! direction, the deserializer, PCIe in each direction (the card's DMA engine has a read and
//! a write channel, each paying `dma_txn_ns` a transaction), the compute unit and the
//! serializer. [`run`] times every placement of the four fields (16) and
//! [`Gateway::worst_vs_best`] is C3's "the worst-case placement can decrease the achievable
//! throughput by 2.2 than the best-case placement".

use serde::{Deserialize, Serialize};

use optimus_trace::Direction;

use super::host::preser_bytes;
use super::load::{busiest, HOST_CORES, MAX_HOST_CORES};
use super::{
    deser_times, memaff_card_occupancy, prepare, preser_ns, ser_times, DeserLink, RpcAccConfig,
    RpcMessage,
};
use crate::error::{config_err, Result};
use crate::workload::gateway::{self, GATEWAY_PROTO, HEADER_BYTES, PACKET_TYPE, PLACEABLE_FIELDS};
use crate::workload::{trace_messages, TraceSource};

/// Parameters of the gateway ([`RpcAccConfig::gateway`]). The NIC's line rate and the core
/// time of an MMIO write are the image service's ([`super::service::ServiceConfig`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewayConfig {
    /// IPv4 packet bytes, headers included. Default 1500, Ethernet's MTU: the paper gives no
    /// size, and a gateway's achievable throughput is its rate on full-sized packets. From
    /// [`HEADER_BYTES`] + 1 (one payload byte) to 65,535 (IPv4's largest packet).
    pub packet_bytes: u32,
    /// Host cores running the handler. Default 16 (one Xeon Silver 4514Y, §IV-A, as
    /// Fig. 12a); at most [`MAX_HOST_CORES`].
    pub cores: u32,
    /// Dependent host-memory loads of the handler's flow lookup (the flow's NAT entry and
    /// security association). Default 4 (assumption: the paper does not describe the
    /// handler).
    pub lookup_dependent_loads: u32,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            packet_bytes: 1500,
            cores: 16,
            lookup_dependent_loads: 4,
        }
    }
}

/// IPv4's largest packet.
const MAX_PACKET_BYTES: u32 = 65_535;

impl GatewayConfig {
    /// Checks parameters.
    ///
    /// # Errors
    /// [`crate::SimError::Config`] naming the field.
    pub fn validate(&self, component: &'static str) -> Result<()> {
        if !(HEADER_BYTES + 1..=MAX_PACKET_BYTES).contains(&self.packet_bytes) {
            return Err(config_err(
                component,
                "packet_bytes",
                format!(
                    "must be {}..={MAX_PACKET_BYTES} bytes, got {}",
                    HEADER_BYTES + 1,
                    self.packet_bytes
                ),
            ));
        }
        if !(1..=MAX_HOST_CORES).contains(&self.cores) {
            return Err(config_err(
                component,
                "cores",
                format!("must be 1..={MAX_HOST_CORES}, got {}", self.cores),
            ));
        }
        Ok(())
    }
}

/// Bytes of the compute unit's completion record.
const COMPLETION_BYTES: f64 = 16.0;

/// Time (ns) each shared resource spends on one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Occupancy {
    /// Host core time over the cores.
    pub host_cores: f64,
    /// The memcpy engine's copies during pre-serialization.
    pub memcpy_engine: f64,
    /// The request on the line.
    pub line_in: f64,
    /// The response on the line.
    pub line_out: f64,
    /// The deserializer's lanes (one-shot).
    pub deserializer: f64,
    /// PCIe card to host: the deserialized host fields, the compute unit's write-backs of
    /// host fields and its completion.
    pub pcie_to_host: f64,
    /// PCIe host to card: the compute unit's reads of host fields and the serializer's fetch.
    pub pcie_to_card: f64,
    /// The compute unit's kernels at line rate.
    pub compute_unit: f64,
    /// The serializer's fetch and local reads, encoded as they arrive.
    pub serializer: f64,
}

impl Occupancy {
    /// Every resource with its name.
    pub fn named(&self) -> [(&'static str, f64); 9] {
        [
            (HOST_CORES, self.host_cores),
            ("memcpy engine", self.memcpy_engine),
            ("line in", self.line_in),
            ("line out", self.line_out),
            ("deserializer", self.deserializer),
            ("PCIe card to host", self.pcie_to_host),
            ("PCIe host to card", self.pcie_to_card),
            ("compute unit", self.compute_unit),
            ("serializer", self.serializer),
        ]
    }

    /// The busiest resource and its time per request (ns); the first named on a tie.
    pub fn bound(&self) -> (&'static str, f64) {
        busiest(self.named())
    }

    /// The time of the resource named `name` (as [`Occupancy::named`] names it; 0 for any
    /// other name).
    pub fn of(&self, name: &str) -> f64 {
        self.named()
            .into_iter()
            .find(|r| r.0 == name)
            .map_or(0.0, |r| r.1)
    }

    /// Resource by resource, the sum of `parts`' times each weighted by its share: the mean
    /// time per request of a mix of requests whose shares sum to 1.
    pub fn weighted(parts: impl IntoIterator<Item = (f64, Occupancy)>) -> Self {
        parts
            .into_iter()
            .fold(Self::default(), |sum, (w, o)| Occupancy {
                host_cores: sum.host_cores + w * o.host_cores,
                memcpy_engine: sum.memcpy_engine + w * o.memcpy_engine,
                line_in: sum.line_in + w * o.line_in,
                line_out: sum.line_out + w * o.line_out,
                deserializer: sum.deserializer + w * o.deserializer,
                pcie_to_host: sum.pcie_to_host + w * o.pcie_to_host,
                pcie_to_card: sum.pcie_to_card + w * o.pcie_to_card,
                compute_unit: sum.compute_unit + w * o.compute_unit,
                serializer: sum.serializer + w * o.serializer,
            })
    }
}

/// The gateway with one placement of the packet's fields.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Placement {
    /// The fields in card memory; the other placeable fields are in host memory.
    pub accel_fields: Vec<&'static str>,
    /// Host core time per request (ns).
    pub host_ns: f64,
    /// Latency of a request at low load (ns): request on the wire to response on the wire.
    pub latency_ns: f64,
    /// What each shared resource spends on a request.
    pub occupancy: Occupancy,
}

impl Placement {
    /// Requests per second.
    pub fn rate(&self) -> f64 {
        1e9 / self.occupancy.bound().1
    }

    /// The fields in card memory by their short names (`ip+payload`), or `none`.
    pub fn label(&self) -> String {
        if self.accel_fields.is_empty() {
            return "none".into();
        }
        self.accel_fields
            .iter()
            .map(|f| f.rsplit('.').next().unwrap_or(f))
            .collect::<Vec<_>>()
            .join("+")
    }
}

/// The gateway under every placement of its packet's fields.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Gateway {
    /// IPv4 packet bytes.
    pub packet_bytes: u32,
    /// One per subset of [`PLACEABLE_FIELDS`] in card memory, the subsets in binary order
    /// (bit `i` places field `i`): the first has every field in host memory, the last every
    /// field in card memory.
    pub placements: Vec<Placement>,
}

impl Gateway {
    /// Packet throughput (Gbps) of `p`.
    pub fn gbps(&self, p: &Placement) -> f64 {
        p.rate() * f64::from(self.packet_bytes) * 8.0 / 1e9
    }

    /// The placement with the highest rate; of those alike, the lowest latency.
    pub fn best(&self) -> &Placement {
        self.placements
            .iter()
            .min_by(|a, b| ranked(b, a))
            .expect("every gateway run has placements")
    }

    /// The placement with the lowest rate; of those alike, the highest latency.
    pub fn worst(&self) -> &Placement {
        self.placements
            .iter()
            .min_by(|a, b| ranked(a, b))
            .expect("every gateway run has placements")
    }

    /// The best placement's rate over the worst's.
    pub fn worst_vs_best(&self) -> f64 {
        self.best().rate() / self.worst().rate()
    }
}

/// Orders placements from worst to best: by rate, then by latency, the longer first.
fn ranked(a: &Placement, b: &Placement) -> std::cmp::Ordering {
    a.rate()
        .total_cmp(&b.rate())
        .then(b.latency_ns.total_cmp(&a.latency_ns))
}

/// Runs the gateway under every placement of its packet's fields, each message traced by
/// the engine behind `source` with those fields labelled "Acc".
///
/// # Errors
/// `cfg` that cannot run, or an engine error from `source`.
pub fn run(cfg: &RpcAccConfig, source: &mut dyn TraceSource) -> Result<Gateway> {
    cfg.validate()?;
    let g = &cfg.gateway;
    let wire = gateway::packet(g.packet_bytes);
    let msgs = [(PACKET_TYPE, wire.as_slice())];
    let mut traced = Vec::new();
    for mask in 0..1u32 << PLACEABLE_FIELDS.len() {
        let accel: Vec<&'static str> = (0..PLACEABLE_FIELDS.len())
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| PLACEABLE_FIELDS[i])
            .collect();
        let mut one = |d| trace_messages(source, "gateway", GATEWAY_PROTO, &msgs, d, &accel);
        let deser = one(Direction::Decode)?.remove(0);
        let ser = one(Direction::Encode)?.remove(0);
        traced.push((accel, prepare("gateway", 0, ser, deser, 0.0)));
    }
    // The message's record, which holds the scalars the host reads, stays in host memory
    // whatever the placement: it is all the last placement, every field in card memory,
    // has there.
    let (_, all_in_card) = traced.last().expect("sixteen placements");
    let d = deser_times(cfg, all_in_card, DeserLink::pcie(cfg), cfg.clock_mhz);
    let record_bytes = d.output_bytes - d.accel_bytes;
    let placements = traced
        .into_iter()
        .map(|(accel, m)| {
            let host_fields = PLACEABLE_FIELDS.len() - accel.len();
            place(cfg, &m, record_bytes, host_fields, accel)
        })
        .collect();
    Ok(Gateway {
        packet_bytes: g.packet_bytes,
        placements,
    })
}

/// One placement's times: `m` is the packet traced with `accel_fields` labelled "Acc",
/// `record_bytes` the host bytes it has with every field in card memory, `host_fields` how
/// many placeable fields are in host memory.
fn place(
    cfg: &RpcAccConfig,
    m: &RpcMessage,
    record_bytes: f64,
    host_fields: usize,
    accel_fields: Vec<&'static str>,
) -> Placement {
    let (pcie, acc, svc) = (cfg.pcie, cfg.accel_mem, &cfg.service);
    let (bw, txn, one_way) = (pcie.bw_gbytes_s, cfg.dma_txn_ns, pcie.latency_ns / 2.0);
    let line = svc.line_rate_gbps / 8.0; // bytes per ns
    let d = deser_times(cfg, m, DeserLink::pcie(cfg), cfg.clock_mhz);
    let host_out = d.output_bytes - d.accel_bytes;
    // The kernels' data on each side.
    let in_host = (host_out - record_bytes).max(0.0);
    let in_card = d.accel_bytes;
    let kernel_bytes = in_host + in_card;
    let host_txns = host_fields as f64 * txn;

    let (pre, dsa) = preser_ns(cfg, m, true);
    let lookup = f64::from(cfg.gateway.lookup_dependent_loads) * cfg.host_mem.latency_ns;
    // Lookup, task MMIO, the completion's read, pre-serialization (waiting for the memcpy
    // engine's copies), doorbell.
    let host_ns =
        lookup + svc.mmio_core_ns + cfg.host_mem.latency_ns + pre.max(dsa) + svc.mmio_core_ns;
    let occupancy = Occupancy {
        host_cores: host_ns / f64::from(cfg.gateway.cores),
        memcpy_engine: dsa,
        line_in: m.deser.wire_bytes as f64 / line,
        line_out: m.ser.wire_bytes as f64 / line,
        deserializer: 1000.0 / d.oneshot_host_rate,
        pcie_to_host: d.oneshot_dma_writes * txn
            + host_out / bw
            + host_txns
            + in_host / bw
            + txn
            + COMPLETION_BYTES / bw,
        pcie_to_card: host_txns + in_host / bw + txn + preser_bytes(m) / bw,
        compute_unit: kernel_bytes / line,
        serializer: memaff_card_occupancy(cfg, m, cfg.clock_mhz),
    };

    // Latency: the stages in turn. The compute unit's task crosses to the card (an MMIO),
    // it reads its fields (host and card reads in parallel), runs the kernels, writes the
    // fields back and its completion crosses to the host.
    let host_read = if in_host > 0.0 {
        pcie.latency_ns + host_txns + in_host / bw
    } else {
        0.0
    };
    let card_read = if in_card > 0.0 {
        acc.latency_ns + in_card / acc.bw_gbytes_s
    } else {
        0.0
    };
    let write_back = (in_host / bw).max(in_card / acc.bw_gbytes_s);
    let cu = cfg.mmio_ns + host_read.max(card_read) + kernel_bytes / line + write_back + one_way;
    let card_ser = ser_times(cfg, m, cfg.clock_mhz).rpcacc - pre.max(dsa);
    let latency_ns = occupancy.line_in
        + d.oneshot_latency_ns
        + lookup
        + svc.mmio_core_ns
        + cu
        + cfg.host_mem.latency_ns
        + pre.max(dsa)
        + svc.mmio_core_ns
        + card_ser
        + occupancy.line_out;
    Placement {
        accel_fields,
        host_ns,
        latency_ns,
        occupancy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use optimus_core::binary::EngineTraces as Engine;

    #[test]
    fn every_placement_is_timed_and_the_extremes_are_all_host_and_all_card() {
        let cfg = RpcAccConfig::default();
        let g = run(&cfg, &mut Engine).unwrap();
        assert_eq!(g.placements.len(), 16);
        assert!(g.placements[0].accel_fields.is_empty());
        assert_eq!(g.placements[15].accel_fields, PLACEABLE_FIELDS.to_vec());
        // Every field the compute unit works on in card memory: nothing but the record
        // crosses PCIe, and the line binds.
        assert_eq!(g.best(), &g.placements[15]);
        assert_eq!(g.best().occupancy.bound().0, "line in");
        // Every field in host memory: the packet crosses PCIe twice each way.
        assert_eq!(g.worst(), &g.placements[0]);
        assert_eq!(g.worst().occupancy.bound().0, "PCIe card to host");
        assert!(g.worst_vs_best() > 1.0);
    }

    #[test]
    fn moving_the_payload_to_card_memory_takes_its_four_crossings_off_pcie() {
        let cfg = RpcAccConfig::default();
        let g = run(&cfg, &mut Engine).unwrap();
        let (all_host, payload_in_card) = (&g.placements[0], &g.placements[8]);
        assert_eq!(payload_in_card.label(), "payload");
        let payload = f64::from(cfg.gateway.packet_bytes - HEADER_BYTES);
        let bw = cfg.pcie.bw_gbytes_s;
        // Card to host: the deserializer's write and the compute unit's write-back, less one
        // DMA transaction of the compute unit's; host to card: its read and the serializer's
        // fetch, likewise. (The payload's pointer slot stays in the host record.)
        let saved =
            |f: fn(&Occupancy) -> f64| f(&all_host.occupancy) - f(&payload_in_card.occupancy);
        let expect = 2.0 * payload / bw + cfg.dma_txn_ns;
        for (name, s) in [
            ("card to host", saved(|o| o.pcie_to_host)),
            ("host to card", saved(|o| o.pcie_to_card)),
        ] {
            assert!(
                (s - expect).abs() < 0.02 * expect,
                "{name}: {s} ns saved, {expect} expected"
            );
        }
        // The kernels see the same bytes wherever they lie.
        let cu = |p: &Placement| p.occupancy.compute_unit;
        assert!((cu(all_host) - cu(payload_in_card)).abs() < 1e-9);
    }

    #[test]
    fn the_task_and_the_doorbell_each_cross_as_an_mmio() {
        let base = RpcAccConfig::default();
        let mut far = base.clone();
        far.mmio_ns += 1000.0;
        let (a, b) = (
            run(&base, &mut Engine).unwrap(),
            run(&far, &mut Engine).unwrap(),
        );
        for (x, y) in a.placements.iter().zip(&b.placements) {
            // The compute unit's task and the serializer's doorbell: the core posts both and
            // does not wait.
            let later = y.latency_ns - x.latency_ns;
            assert!((later - 2000.0).abs() < 1e-6, "{}: {later}", x.label());
            assert_eq!(x.host_ns, y.host_ns);
        }
    }

    #[test]
    fn packet_size_and_cores_are_checked() {
        let mut cfg = RpcAccConfig::default();
        cfg.gateway.packet_bytes = HEADER_BYTES;
        assert!(cfg
            .validate()
            .unwrap_err()
            .to_string()
            .contains("packet_bytes"));
        cfg.gateway.packet_bytes = 70_000;
        assert!(cfg
            .validate()
            .unwrap_err()
            .to_string()
            .contains("packet_bytes"));
        cfg.gateway = GatewayConfig {
            cores: 0,
            ..GatewayConfig::default()
        };
        assert!(cfg.validate().unwrap_err().to_string().contains("cores"));
    }
}
