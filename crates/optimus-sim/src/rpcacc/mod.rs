//! The RPCAcc model (PCIe-attached RPC accelerator) and the baselines it is compared with:
//! ProtoACC over PCIe, ProtoACC on-chip, CPU-only, and the Dagger (UPI) variants.
//!
//! Every design replays the same message programs (see [`crate::program`]):
//! - **Serializer engine** (ProtoACC-style, used by ProtoACC-PCIe/-OnChip and Dagger-ProtoACC):
//!   walks fields in order, issuing each field's memory read once its address is known (the
//!   dependence chain of sub-messages and strings) and up to `read_window_fields` ahead, with at
//!   most `max_outstanding_reads` in flight; each read costs the interconnect latency plus
//!   bytes over bandwidth; each field costs `cycles_per_field` at the accelerator clock.
//! - **Memory-affinity serialization** (RPCAcc §III-C): the host CPU pre-serializes its fields
//!   without encoding into a contiguous DMA-safe buffer (large copies offloaded to the memcpy
//!   engine), one MMIO notifies the card, one DMA read fetches the buffer, the serializer
//!   encodes `encode_bits_per_cycle` per cycle and reads accelerator-resident fields locally.
//! - **Deserializer** (§III-B): `deser_lanes` lanes parse at `cycles_per_field` per field plus
//!   the input at `encode_bits_per_cycle`; results cross PCIe either field by field (one DMA
//!   write transaction per field) or one-shot (one per `temp_buffer_bytes`), through a DMA
//!   engine that costs `dma_txn_ns` per transaction plus bytes over bandwidth.

pub mod report;
pub mod service;

use serde::{Deserialize, Serialize};

use optimus_trace::{Direction, Region};

use crate::cpu::CpuConfig;
use crate::error::{config_err, Result};
use crate::program::Program;
use crate::workload::{hpb, socialnet, trace_messages, MessageTrace, TraceSource};

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
    /// Seed of the HyperProtoBench-like population.
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
    /// Fields ahead of the one being encoded whose reads may be in flight. Default 8.
    pub read_window_fields: u32,
    /// Cycles per field in the (de)serializer pipelines. Default 2.
    pub cycles_per_field: f64,
    /// Bits encoded/parsed per cycle. Default 512 (§III-C: "per-512-bit ... one cycle").
    pub encode_bits_per_cycle: f64,
    /// Deserializer lanes. Default 4 (§III-B).
    pub deser_lanes: u32,
    /// Temp Buffer bytes (one-shot DMA granule). Default 4096 (§III-B).
    pub temp_buffer_bytes: u32,
    /// DMA engine cost of one PCIe write transaction in ns (descriptor, TLPs, completion
    /// credit): the "limited number of concurrent PCIe transactions" of §II-C C1. Default 12
    /// (calibrated to Fig. 5's 2.2× average, see docs/simulator.md).
    pub dma_txn_ns: f64,
    /// Same, for writes into the card's own memory (HBM channels in parallel). Default 1.
    pub local_txn_ns: f64,
    /// MMIO doorbell from host to card in ns. Default 625 (half a PCIe round trip).
    pub mmio_ns: f64,
    /// Host CPU (2.0 GHz Xeon Silver 4514Y, §IV-A) running protobuf software.
    pub cpu: CpuConfig,
    /// Host instructions per field of pre-serialization (no encoding). Default 19 (calibrated:
    /// the value that meets both Fig. 6's 74 % saving on DeathStarBench and §IV-C's 22 %
    /// pre-serialization share on HyperProtoBench, see docs/simulator.md).
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
    /// Accelerator cycles to pop a chunk from a free-list FIFO. Default 1 (§III-B: the FIFOs
    /// are SRAM; an SRAM FIFO read takes one cycle; not stated).
    pub chunk_pop_cycles: f64,
    /// Host time of a DeathStarBench handler's own work per call (Fig. 13), in ns. Default 0:
    /// not published, and any positive value lowers both of Fig. 13's ratios, which the RPC
    /// layer alone already leaves below the paper's 1.57× (see docs/simulator.md).
    pub dsb_handler_ns: f64,
    /// Host time in ns of the software RPC stack's protocol processing per call, which only
    /// CPU-only pays: its RPC layer is eRPC on the host (§IV-A: "It uses the DPDK-based eRPC
    /// [33] library"), while ProtoACC-PCIe and RPCAcc run the RPC protocol and transport in the
    /// NIC (§IV-A: "It offloads the entire RPC stack"; "The RPC/transport logic runs at 250
    /// MHz"). Default 850 (Optimus Prime §6.3, Table 3: "protocol processing latencies of
    /// ~850ns as claimed by eRPC").
    pub cpu_rpc_stack_ns: f64,
}

impl Default for RpcAccConfig {
    fn default() -> Self {
        Self {
            seed: 2024,
            clock_mhz: 250.0,
            pcie: LinkConfig {
                latency_ns: 1250.0,
                bw_gbytes_s: 12.8,
            },
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
            read_window_fields: 8,
            cycles_per_field: 2.0,
            encode_bits_per_cycle: 512.0,
            deser_lanes: 4,
            temp_buffer_bytes: 4096,
            dma_txn_ns: 12.0,
            local_txn_ns: 1.0,
            mmio_ns: 625.0,
            cpu: CpuConfig::default(),
            preser_per_field: 19.0,
            dsa_threshold_bytes: 1024,
            dsa_submit_ns: 100.0,
            dsa_bw_gbytes_s: 30.0,
            chunk_bytes: 4096,
            chunk_pop_cycles: 1.0,
            dsb_handler_ns: 0.0,
            cpu_rpc_stack_ns: 850.0,
        }
    }
}

impl RpcAccConfig {
    /// Checks parameters.
    ///
    /// # Errors
    /// [`crate::SimError::Config`] naming the field.
    pub fn validate(&self) -> Result<()> {
        for (v, f) in [
            (self.clock_mhz, "clock_mhz"),
            (self.pcie.bw_gbytes_s, "pcie"),
            (self.encode_bits_per_cycle, "encode_bits_per_cycle"),
            (self.dsa_bw_gbytes_s, "dsa_bw_gbytes_s"),
        ] {
            if !(v > 0.0) {
                return Err(config_err("rpcacc", f, format!("{v} must be positive")));
            }
        }
        if self.pcie.latency_ns < 0.0
            || self.max_outstanding_reads == 0
            || self.read_window_fields == 0
            || self.deser_lanes == 0
            || self.temp_buffer_bytes == 0
            || self.chunk_bytes == 0
        {
            return Err(config_err(
                "rpcacc",
                "max_outstanding_reads",
                "latencies non-negative; counts and buffer sizes positive",
            ));
        }
        Ok(())
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

/// The HyperProtoBench-like suite, serialized and deserialized by the engine behind `source`.
///
/// # Errors
/// As [`trace_messages`].
pub fn suite(cfg: &RpcAccConfig, source: &mut dyn TraceSource) -> Result<Vec<RpcMessage>> {
    let mut out = Vec::new();
    for b in hpb::suite(cfg.seed) {
        let msgs: Vec<(&str, &[u8])> = b
            .messages
            .iter()
            .map(|(t, m)| (t.as_str(), m.as_slice()))
            .collect();
        let ser = trace_messages(source, &b.name, &b.proto, &msgs, Direction::Encode)?;
        let deser = trace_messages(source, &b.name, &b.proto, &msgs, Direction::Decode)?;
        for (i, (s, d)) in ser.into_iter().zip(deser).enumerate() {
            out.push(prepare(&b.name, i, s, d, b.avg_field_bytes[i]));
        }
    }
    Ok(out)
}

/// The DeathStarBench services' messages (`workload::socialnet`): per service, every request
/// and response of its draws, serialized and deserialized by the engine behind `source`.
///
/// # Errors
/// As [`trace_messages`].
pub fn socialnet(cfg: &RpcAccConfig, source: &mut dyn TraceSource) -> Result<Vec<RpcMessage>> {
    let mut out = Vec::new();
    for s in socialnet::SERVICES {
        let calls = socialnet::calls(s, cfg.seed);
        let msgs: Vec<(&str, &[u8])> = calls
            .iter()
            .flat_map(|(q, r)| std::iter::once(q).chain(r.as_ref()))
            .map(|(t, b)| (*t, b.as_slice()))
            .collect();
        let proto = socialnet::SOCIALNET_PROTO;
        let ser = trace_messages(source, s, proto, &msgs, Direction::Encode)?;
        let deser = trace_messages(source, s, proto, &msgs, Direction::Decode)?;
        for (i, (a, b)) in ser.into_iter().zip(deser).enumerate() {
            out.push(prepare(s, i, a, b, 0.0));
        }
    }
    Ok(out)
}

/// A field-granular memory request of the serializer engine.
#[derive(Clone, Copy, Debug)]
struct Req {
    item: usize,
    dep: Option<usize>,
    bytes: u32,
    region: Region,
    is_schema: bool,
}

/// Merges a program's line accesses into one request per (item, dependence, region).
fn requests(p: &Program) -> (Vec<Req>, Vec<usize>) {
    let mut reqs: Vec<Req> = Vec::new();
    let mut map = vec![0usize; p.accesses.len()];
    for (i, a) in p.accesses.iter().enumerate() {
        let dep = a.dep.map(|d| map[d as usize]);
        match reqs.last_mut() {
            Some(r)
                if r.item == a.item as usize
                    && r.dep == dep
                    && r.region == a.region
                    && !a.is_schema =>
            {
                r.bytes += a.bytes;
                map[i] = reqs.len() - 1;
            }
            _ => {
                reqs.push(Req {
                    item: a.item as usize,
                    dep,
                    bytes: a.bytes,
                    region: a.region,
                    is_schema: a.is_schema,
                });
                map[i] = reqs.len() - 1;
            }
        }
    }
    (reqs, map)
}

/// Time in ns for a ProtoACC-style serializer to encode `p`, with `link(region)` giving the
/// latency and bandwidth of each memory. Schema reads are served from the on-card schema
/// table (RPCAcc §III-B) and cost nothing; the data they point to still waits for the parent
/// field's pointer.
pub fn serializer_ns(
    cfg: &RpcAccConfig,
    p: &Program,
    link: &dyn Fn(Region) -> LinkConfig,
    cycle_ns: f64,
) -> f64 {
    let (reqs, _) = requests(p);
    let mut done = vec![0.0f64; reqs.len()];
    let mut inflight: std::collections::BinaryHeap<std::cmp::Reverse<u64>> = Default::default();
    let mut item_done = vec![0.0f64; p.items.len()];
    let mut link_busy: Vec<(Region, f64)> = Vec::new();
    let w = cfg.read_window_fields as usize;
    let mut t_item = 0.0f64;
    let mut next_req = 0usize;
    for (i, it) in p.items.iter().enumerate() {
        // Issue every request of items up to i + w whose address is known.
        while next_req < reqs.len() && reqs[next_req].item < i + w {
            let r = reqs[next_req];
            let window_open = if r.item >= w {
                item_done[r.item - w]
            } else {
                0.0
            };
            let mut at = window_open.max(r.dep.map_or(0.0, |d| done[d]));
            if r.is_schema {
                done[next_req] = at;
            } else {
                while inflight.len() >= cfg.max_outstanding_reads as usize {
                    let std::cmp::Reverse(t) = inflight.pop().unwrap_or(std::cmp::Reverse(0));
                    at = at.max(t as f64 / 1000.0);
                }
                let l = link(r.region);
                // Concurrent reads share the link's bandwidth: data returns after the
                // latency, once the link has finished delivering earlier reads.
                let busy = link_busy.iter_mut().find(|(g, _)| *g == r.region);
                let free = busy.as_ref().map_or(0.0, |(_, t)| *t);
                let fin = (at + l.latency_ns).max(free) + f64::from(r.bytes) / l.bw_gbytes_s;
                match busy {
                    Some((_, t)) => *t = fin,
                    None => link_busy.push((r.region, fin)),
                }
                done[next_req] = fin;
                inflight.push(std::cmp::Reverse((fin * 1000.0) as u64));
            }
            next_req += 1;
        }
        let ready = reqs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.item == i)
            .map(|(k, _)| done[k])
            .fold(0.0, f64::max);
        let bytes: u32 = it.converts.iter().map(|c| c.1).sum();
        let work =
            (cfg.cycles_per_field + f64::from(bytes) * 8.0 / cfg.encode_bits_per_cycle) * cycle_ns;
        t_item = t_item.max(ready) + work;
        item_done[i] = t_item;
    }
    t_item
}

/// Host CPU time in ns of a full software serialization.
pub fn cpu_ser_ns(cfg: &RpcAccConfig, m: &RpcMessage) -> f64 {
    cfg.cpu.message_ns(&m.ser_trace)
}

/// Bytes of host-resident field data per item of `m`'s serialization (schema reads and
/// accelerator-resident fields excluded): what pre-serialization copies.
fn host_field_bytes(m: &RpcMessage) -> impl Iterator<Item = u32> + '_ {
    m.ser.items.iter().map(|it| {
        (it.first_access..it.end_access)
            .map(|a| m.ser.accesses[a as usize])
            .filter(|a| !a.is_schema && a.region != Region::Accel)
            .map(|a| a.bytes)
            .sum()
    })
}

/// Host CPU time in ns of pre-serialization (no encoding; large host fields to the memcpy
/// engine; accelerator-resident fields skipped), and the memcpy engine's time.
pub fn preser_ns(cfg: &RpcAccConfig, m: &RpcMessage, use_dsa: bool) -> (f64, f64) {
    let mut instr = 0.0;
    let mut dsa = 0.0;
    let mut host_ns = 0.0;
    for host_bytes in host_field_bytes(m) {
        instr += cfg.preser_per_field;
        if use_dsa && host_bytes >= cfg.dsa_threshold_bytes {
            host_ns += cfg.dsa_submit_ns;
            dsa += f64::from(host_bytes) / cfg.dsa_bw_gbytes_s;
        } else {
            instr += cfg.cpu.per_copy_byte * f64::from(host_bytes);
        }
    }
    (host_ns + instr / cfg.cpu.ipc / cfg.cpu.clock_ghz, dsa)
}

/// Host CPU time (ns) of one message's serialization under Fig. 6's three schemes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct HostCycles {
    /// Software serialization: encoding and every copy on the core.
    pub software: f64,
    /// Memcpy offload only: the core still encodes; copies of large host fields go to the
    /// memcpy engine (one submission each).
    pub memcpy_offload: f64,
    /// Memcpy and encoding offload: RPCAcc's pre-serialization ([`preser_ns`]).
    pub memcpy_encoding_offload: f64,
}

/// Host CPU time of `m` under Fig. 6's schemes (RPCAcc §III-C "Memcpy Offload", "Encoding
/// Offload"): the CPU model's instruction count, less the copy instructions of every host
/// field the memcpy engine takes (at least `dsa_threshold_bytes`), plus its submissions.
pub fn host_cycles(cfg: &RpcAccConfig, m: &RpcMessage) -> HostCycles {
    let software = cpu_ser_ns(cfg, m);
    let mut saved_instr = 0.0;
    let mut submit_ns = 0.0;
    for host_bytes in host_field_bytes(m) {
        if host_bytes >= cfg.dsa_threshold_bytes {
            saved_instr += cfg.cpu.per_copy_byte * f64::from(host_bytes);
            submit_ns += cfg.dsa_submit_ns;
        }
    }
    let memcpy_offload =
        (software - saved_instr / cfg.cpu.ipc / cfg.cpu.clock_ghz).max(0.0) + submit_ns;
    HostCycles {
        software,
        memcpy_offload,
        memcpy_encoding_offload: preser_ns(cfg, m, true).0,
    }
}

/// What the deserializer's chunk allocator does for one message (§III-B).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ChunkUse {
    /// Chunks popped from the free lists: the pre-allocated one plus one per exhaustion.
    pub chunks: u64,
    /// Bytes the message's deserialized objects occupy in host memory.
    pub used_bytes: u64,
    /// Bytes of the chunks it holds (`chunks * chunk_bytes`).
    pub allocated_bytes: u64,
    /// Accelerator time (ns) spent popping chunks.
    pub alloc_ns: f64,
}

/// Chunk allocation of `m`'s deserialization at accelerator clock `clock_mhz`. The
/// deserializer pre-allocates a host chunk per message and appends the message's objects
/// (records and out-of-line payloads, as the deserialization program writes them) to it; an
/// object that does not fit the rest of the chunk starts a new one (chunks come from a FIFO,
/// so consecutive chunks need not be contiguous), and one larger than a chunk takes as many
/// fresh chunks as it needs. The chunks go back to the FIFO when the message is freed, so
/// the rest of the last chunk is the message's fragmentation.
pub fn chunk_use(cfg: &RpcAccConfig, m: &RpcMessage, clock_mhz: f64) -> ChunkUse {
    let chunk = u64::from(cfg.chunk_bytes);
    // Objects: maximal runs of contiguous host writes.
    let mut writes: Vec<(u64, u64)> = m
        .deser
        .items
        .iter()
        .flat_map(|i| i.writes.iter())
        .filter(|w| w.0 == Region::Message)
        .map(|w| (w.1, w.1 + u64::from(w.2)))
        .collect();
    writes.sort_unstable();
    let mut objects: Vec<u64> = Vec::new();
    let mut run: Option<(u64, u64)> = None;
    for (lo, hi) in writes {
        run = match run {
            Some((a, b)) if lo <= b.next_multiple_of(8) => Some((a, b.max(hi))),
            Some((a, b)) => {
                objects.push(b - a);
                Some((lo, hi))
            }
            None => Some((lo, hi)),
        };
    }
    if let Some((a, b)) = run {
        objects.push(b - a);
    }
    let mut chunks = 1u64;
    let mut left = chunk;
    let mut used = 0u64;
    for o in objects {
        let o = o.next_multiple_of(8);
        used += o;
        if o <= left {
            left -= o;
        } else if o <= chunk {
            chunks += 1;
            left = chunk - o;
        } else {
            let n = o.div_ceil(chunk);
            chunks += n;
            left = n * chunk - o;
        }
    }
    ChunkUse {
        chunks,
        used_bytes: used,
        allocated_bytes: chunks * chunk,
        alloc_ns: chunks as f64 * cfg.chunk_pop_cycles * 1000.0 / clock_mhz,
    }
}

/// Serialization times (ns) of one message on each design.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SerTimes {
    /// CPU-only: software serialization, then a DMA of the output to the NIC.
    pub cpu_only: f64,
    /// ProtoACC-PCIe: the serializer on the card reads every field across PCIe.
    pub protoacc_pcie: f64,
    /// ProtoACC-OnChip: the serializer next to host memory; output crosses PCIe to the NIC.
    pub protoacc_onchip: f64,
    /// RPCAcc memory-affinity serialization.
    pub rpcacc: f64,
}

/// The stages every design's serialization of one message is made of (ns).
struct SerStages {
    /// Software serialization on one host core.
    software: f64,
    /// The serialized message across PCIe to the NIC: latency, then bytes.
    to_nic: f64,
    /// The same bytes at PCIe bandwidth alone (what a stream of messages pays each).
    to_nic_stream: f64,
    /// ProtoACC's serializer on the card, reading every field across PCIe.
    engine_over_pcie: f64,
    /// ProtoACC's serializer next to host memory.
    engine_on_chip: f64,
    /// RPCAcc's host pre-serialization (memcpy-engine submissions included).
    pre: f64,
    /// The memcpy engine's copies during pre-serialization.
    dsa: f64,
    /// The card's DMA read of the pre-serialized buffer, encoded as it arrives.
    fetch: f64,
    /// The same without the PCIe latency (a stream of messages overlaps it).
    fetch_stream: f64,
    /// Accelerator-resident fields read and encoded from card memory.
    local: f64,
    /// The same without the card memory's latency.
    local_stream: f64,
}

fn ser_stages(cfg: &RpcAccConfig, m: &RpcMessage, clock_mhz: f64) -> SerStages {
    let cyc = 1000.0 / clock_mhz;
    let wire = m.ser.wire_bytes as f64;
    let pcie = cfg.pcie;
    let acc = cfg.accel_mem;
    let over_pcie = |r: Region| if r == Region::Accel { acc } else { pcie };
    let host = cfg.host_mem;
    let on_chip = |r: Region| if r == Region::Accel { pcie } else { host };
    let (pre, dsa) = preser_ns(cfg, m, true);
    let pre_bytes: f64 =
        host_field_bytes(m).map(f64::from).sum::<f64>() + 8.0 * m.ser.items.len() as f64;
    let acc_bytes: f64 = m
        .ser
        .accesses
        .iter()
        .filter(|a| a.region == Region::Accel)
        .map(|a| f64::from(a.bytes))
        .sum();
    // The encoder takes 512 bits per cycle whatever the fields in them (§III-C: "For each
    // 512-bit, the encoding can be done within one cycle"), consuming the DMA read's
    // completions as they arrive: the fetch and the encoding of host fields overlap.
    let encode_ns = |bytes: f64| bytes * 8.0 / cfg.encode_bits_per_cycle * cyc;
    let fetch_stream = (pre_bytes / pcie.bw_gbytes_s).max(encode_ns(pre_bytes));
    let local_stream = if acc_bytes > 0.0 {
        acc_bytes / acc.bw_gbytes_s + encode_ns(acc_bytes)
    } else {
        0.0
    };
    SerStages {
        software: cpu_ser_ns(cfg, m),
        to_nic: pcie.latency_ns + wire / pcie.bw_gbytes_s,
        to_nic_stream: wire / pcie.bw_gbytes_s,
        engine_over_pcie: serializer_ns(cfg, &m.ser, &over_pcie, cyc),
        engine_on_chip: serializer_ns(cfg, &m.ser, &on_chip, cyc),
        pre,
        dsa,
        fetch: pcie.latency_ns + fetch_stream,
        fetch_stream,
        local: if acc_bytes > 0.0 {
            acc.latency_ns + local_stream
        } else {
            0.0
        },
        local_stream,
    }
}

/// Serialization times of `m` at accelerator clock `clock_mhz`.
pub fn ser_times(cfg: &RpcAccConfig, m: &RpcMessage, clock_mhz: f64) -> SerTimes {
    let s = ser_stages(cfg, m, clock_mhz);
    SerTimes {
        cpu_only: s.software + cfg.mmio_ns + s.to_nic,
        protoacc_pcie: cfg.mmio_ns + s.engine_over_pcie,
        protoacc_onchip: s.engine_on_chip + s.to_nic,
        rpcacc: s.pre.max(s.dsa) + cfg.mmio_ns + s.fetch + s.local,
    }
}

/// Per design, the time the busiest resource spends on `m` when messages follow each other
/// (ns): what bounds the design's message rate. CPU-only: the host core or PCIe's bandwidth
/// to the NIC; ProtoACC: its serializer engine (modelled as taking one message at a time)
/// or, on chip, PCIe's bandwidth; RPCAcc: the host core's pre-serialization, the
/// memcpy engine, or the card, whose DMA reads of successive messages overlap their PCIe
/// latency.
pub fn ser_occupancy(cfg: &RpcAccConfig, m: &RpcMessage, clock_mhz: f64) -> SerTimes {
    let s = ser_stages(cfg, m, clock_mhz);
    SerTimes {
        cpu_only: s.software.max(s.to_nic_stream),
        protoacc_pcie: s.engine_over_pcie,
        protoacc_onchip: s.engine_on_chip.max(s.to_nic_stream),
        rpcacc: s.pre.max(s.dsa).max(s.fetch_stream + s.local_stream),
    }
}

/// Deserialization results of one message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct DeserTimes {
    /// Throughput (messages/µs, all lanes) writing field by field across PCIe.
    pub fbf_host_rate: f64,
    /// Same, one-shot DMA from the Temp Buffer.
    pub oneshot_host_rate: f64,
    /// Field by field into the card's own memory.
    pub fbf_local_rate: f64,
    /// Latency (ns) field by field over `link`, last field landed.
    pub fbf_latency_ns: f64,
    /// Latency (ns) with one-shot DMA over `link`.
    pub oneshot_latency_ns: f64,
    /// Bytes the deserialized message occupies in host memory.
    pub output_bytes: f64,
    /// DMA write transactions field by field: one per field written.
    pub fbf_dma_writes: f64,
    /// DMA write transactions one-shot: one per Temp Buffer flush.
    pub oneshot_dma_writes: f64,
}

/// Time (ns) for one deserializer lane to parse program `p` at `clock_mhz`: its fields at
/// `cycles_per_field` and its input at `encode_bits_per_cycle`.
pub(crate) fn parse_ns(cfg: &RpcAccConfig, p: &Program, clock_mhz: f64) -> f64 {
    let cyc = 1000.0 / clock_mhz;
    (p.items.len() as f64 * cfg.cycles_per_field
        + p.wire_bytes as f64 * 8.0 / cfg.encode_bits_per_cycle)
        * cyc
}

/// Deserialization throughput and latency of `m`; latencies use `link` one-way.
pub fn deser_times(
    cfg: &RpcAccConfig,
    m: &RpcMessage,
    link_one_way_ns: f64,
    link_bw: f64,
    clock_mhz: f64,
) -> DeserTimes {
    let p = &m.deser;
    let parse = parse_ns(cfg, p, clock_mhz);
    let writes: Vec<u32> = p
        .items
        .iter()
        .flat_map(|i| i.writes.iter().map(|w| w.2))
        .collect();
    let out: f64 = writes.iter().map(|&b| f64::from(b)).sum();
    let bw = cfg.pcie.bw_gbytes_s;
    let dma_fbf = writes.len() as f64 * cfg.dma_txn_ns + out / bw;
    let chunks = (out / f64::from(cfg.temp_buffer_bytes)).ceil().max(1.0);
    let last_flush = out - f64::from(cfg.temp_buffer_bytes) * (chunks - 1.0);
    let dma_one = chunks * cfg.dma_txn_ns + out / bw;
    let dma_local = writes.len() as f64 * cfg.local_txn_ns + out / cfg.accel_mem.bw_gbytes_s;
    let lanes = f64::from(cfg.deser_lanes);
    // Lanes parse in parallel; the DMA engine is shared.
    let rate = |dma: f64| (lanes / parse).min(1.0 / dma) * 1000.0;
    let last = writes.last().copied().unwrap_or(0) as f64;
    DeserTimes {
        fbf_host_rate: rate(dma_fbf),
        oneshot_host_rate: rate(dma_one),
        fbf_local_rate: rate(dma_local),
        fbf_latency_ns: parse + link_one_way_ns + last / link_bw,
        // A full Temp Buffer is flushed while parsing goes on (§III-B: "When the buffer is
        // full or the current RPC request's deserialization is finished"); only the last,
        // partial flush follows the end of parsing.
        oneshot_latency_ns: parse + link_one_way_ns + last_flush / link_bw,
        output_bytes: out,
        fbf_dma_writes: writes.len() as f64,
        oneshot_dma_writes: chunks,
    }
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
    let pcie = cfg.pcie;
    let d = deser_times(
        cfg,
        m,
        pcie.latency_ns / 2.0,
        pcie.bw_gbytes_s,
        cfg.clock_mhz,
    );
    RpcLayer {
        cpu_only: pcie.latency_ns / 2.0
            + m.deser.wire_bytes as f64 / pcie.bw_gbytes_s
            + cfg.cpu_rpc_stack_ns
            + cfg.cpu.message_ns(&m.deser_trace),
        protoacc_pcie: d.fbf_latency_ns + m.deser.items.len() as f64 * cfg.dma_txn_ns,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_engine::Engine;

    #[test]
    fn pcie_latency_slows_nested_serialization() {
        let cfg = RpcAccConfig::default();
        let msgs = suite(&cfg, &mut Engine).unwrap();
        let m = msgs
            .iter()
            .find(|m| m.ser.max_depth >= 3 && m.ser.wire_bytes < 4096)
            .expect("a small nested message");
        let fast = serializer_ns(
            &cfg,
            &m.ser,
            &|_| LinkConfig {
                latency_ns: 70.0,
                bw_gbytes_s: 12.8,
            },
            4.0,
        );
        let slow = serializer_ns(
            &cfg,
            &m.ser,
            &|_| LinkConfig {
                latency_ns: 1250.0,
                bw_gbytes_s: 12.8,
            },
            4.0,
        );
        assert!(slow > 3.0 * fast, "{slow} vs {fast}");
    }

    #[test]
    fn one_field_serializes_in_the_time_its_stages_add_up_to() {
        let trace = crate::program::one_field_trace(0x1000, 0x8000);
        let cfg = RpcAccConfig::default();
        let m = prepare("t", 0, trace.clone(), trace, 0.0);
        let t = ser_times(&cfg, &m, 250.0);
        // ProtoACC-PCIe: the doorbell (625 ns), the field's read across PCIe (1250 ns + 4 B at
        // 12.8 GB/s), then 2 cycles and 32 of 512 bits at 4 ns a cycle.
        let field = 2.0 * 4.0 + 32.0 / 512.0 * 4.0;
        assert!((t.protoacc_pcie - (625.0 + 1250.0 + 4.0 / 12.8 + field)).abs() < 1e-9);
        // RPCAcc: pre-serialization (19 instructions + 0.5 per copied byte at 1.2 IPC, 2 GHz),
        // the doorbell, one DMA read of 12 B (4 B of value, an 8 B field header).
        let pre = (19.0 + 0.5 * 4.0) / 1.2 / 2.0;
        assert!((t.rpcacc - (pre + 625.0 + 1250.0 + 12.0 / 12.8)).abs() < 1e-9);
        // Messages in a row overlap the DMA's latency: the host's part bounds the rate.
        assert!((ser_occupancy(&cfg, &m, 250.0).rpcacc - pre).abs() < 1e-9);
    }

    #[test]
    fn oneshot_beats_field_by_field() {
        let cfg = RpcAccConfig::default();
        for m in suite(&cfg, &mut Engine).unwrap().iter().take(10) {
            let d = deser_times(&cfg, m, 625.0, 12.8, 250.0);
            assert!(d.oneshot_host_rate >= d.fbf_host_rate);
            assert!(d.fbf_local_rate >= d.fbf_host_rate);
        }
        assert!(RpcAccConfig {
            deser_lanes: 0,
            ..Default::default()
        }
        .validate()
        .is_err());
    }

    /// A message whose deserialization writes `objects` (bytes each) to host memory, apart.
    fn deser_writes(objects: &[u32]) -> RpcMessage {
        let trace = MessageTrace {
            events: Vec::new(),
            wire_bytes: 0,
            direction: Direction::Decode,
        };
        let mut m = prepare("t", 0, trace.clone(), trace, 0.0);
        let mut at = 0u64;
        for &b in objects {
            m.deser.items.push(crate::program::Item {
                writes: vec![(Region::Message, at, b)],
                ..Default::default()
            });
            at += u64::from(b) + 4096;
        }
        m
    }

    #[test]
    fn chunks_hold_whole_objects() {
        let cfg = RpcAccConfig::default();
        // 3000 B fit the pre-allocated chunk; 2000 B do not fit its last 1096 B.
        let c = chunk_use(&cfg, &deser_writes(&[3000, 2000]), 250.0);
        assert_eq!((c.chunks, c.used_bytes, c.allocated_bytes), (2, 5000, 8192));
        assert!((c.alloc_ns - 8.0).abs() < 1e-9); // two pops at 4 ns
                                                  // An object larger than a chunk takes fresh chunks of its own.
        let c = chunk_use(&cfg, &deser_writes(&[8, 9000]), 250.0);
        assert_eq!((c.chunks, c.used_bytes), (4, 9008));
    }

    #[test]
    fn offloads_cut_host_time_in_order() {
        let cfg = RpcAccConfig::default();
        for m in suite(&cfg, &mut Engine).unwrap().iter().step_by(7) {
            let h = host_cycles(&cfg, m);
            assert!(h.memcpy_offload <= h.software, "{h:?}");
            assert!(h.memcpy_encoding_offload < h.memcpy_offload, "{h:?}");
        }
    }

    #[test]
    fn oneshot_latency_waits_only_for_the_last_flush() {
        let cfg = RpcAccConfig::default();
        let small = deser_times(&cfg, &deser_writes(&[1000]), 400.0, 19.2, 2000.0);
        let large = deser_times(
            &cfg,
            &deser_writes(&[4096, 4096, 1000]),
            400.0,
            19.2,
            2000.0,
        );
        // Both end with a 1000 B flush after parsing: the full buffers left while parsing.
        let tail = |d: &DeserTimes| d.oneshot_latency_ns - d.fbf_latency_ns;
        assert!((tail(&small) - tail(&large)).abs() < 1e-9);
    }
}
