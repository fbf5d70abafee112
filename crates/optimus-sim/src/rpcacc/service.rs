//! The image-compression service of RPCAcc §IV-H (Listing 1, Fig. 12) on CPU-only,
//! ProtoACC-PCIe and RPCAcc.
//!
//! Each request is a `User` message carrying a raw avatar; the server authorizes the user on
//! the host, decrypts, compresses and encrypts the image, and answers with a `Photo` message
//! carrying the result (`workload::image`, traced by the engine like every other message).
//! Per request the model follows the stages each design runs (§IV-H, Listing 1, Table II):
//!
//! - **CPU-only**: the NIC DMAs the request into host memory; one core runs eRPC's protocol
//!   processing ([`RpcAccConfig::cpu_rpc_stack_ns`]), deserializes the request in software,
//!   authorizes, decrypts, compresses and encrypts in software, serializes the response in
//!   software and rings the NIC, which DMAs the response out.
//! - **ProtoACC-PCIe**: the card deserializes field by field into host memory (every field:
//!   it has no placement); the core authorizes, moves the avatar to the card (`moveToAcc`,
//!   Listing 1 L6: an MMIO, then a DMA read across PCIe the core waits for), submits the task
//!   and busy-polls (`poll()`, Table II) until the compute unit has run the three kernels at
//!   line rate and written its result and then its completion to host memory (§III-D; the
//!   result goes to host memory in accelerator-only serialization, §III-C Fig. 4-b), then
//!   rings the serializer, which fetches the whole response across PCIe (the core moves on;
//!   with [`ServiceConfig::wait_for_accel_serializer`] it waits for the serializer's
//!   completion, as ProtoACC's library does).
//! - **RPCAcc**: the target-aware deserializer writes the avatar to card memory and the other
//!   fields to host memory in one DMA; the core authorizes, submits and polls, pre-serializes
//!   the response skipping the accelerator-resident image (§III-C), and rings the serializer.
//!
//! The core is busy from the handler's start to its last doorbell; that time bounds a core's
//! request rate (Fig. 12a), and each design's rate is also capped by the NIC line rate, the
//! compute unit and PCIe bandwidth per direction. Latency (Fig. 12b) is the sum of the stages
//! at low load.

use serde::{Deserialize, Serialize};

use optimus_trace::{Direction, Region};

use super::{
    parse_ns, prepare, preser_ns, ser_times, serializer_ns, LinkConfig, RpcAccConfig, RpcMessage,
};
use crate::error::Result;
use crate::program::Program;
use crate::workload::{image, trace_messages, TraceSource};

/// Parameters of the service (the accelerator's come from [`RpcAccConfig`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServiceConfig {
    /// Raw avatar bytes per request. Default 32768: "KB-level" (§IV-H), and Fig. 11's explicit
    /// move of the field across PCIe costs "several microseconds" (§IV-G): 1.25 µs + 32 KiB /
    /// 12.8 GB/s = 3.8 µs.
    pub avatar_bytes: u32,
    /// Raw / compressed bytes. Default 2.084 (LZ4 on the Silesia corpus, lz4/lz4 README).
    pub compression_ratio: f64,
    /// One host core's compression throughput in MB/s. Default 275 (fitted to Fig. 12a's
    /// 31.8× and Fig. 12b's 9.6× over CPU-only, which pull it in opposite directions; the
    /// paper does not name the algorithm).
    pub cpu_compress_mbytes_s: f64,
    /// Host core cycles per byte of AES-GCM. Default 0.64 (Drucker, Gueron, Krasnov, "Making
    /// AES great again", 2018: AES-NI + PCLMULQDQ on recent Intel cores).
    pub cpu_aes_cycles_per_byte: f64,
    /// Dependent host-memory loads of the authorization (a user-table lookup and its checks:
    /// "lightweight processing" with "many data dependencies", §III-E2). Default 8.
    pub auth_dependent_loads: u32,
    /// Core time of one posted MMIO write (doorbell, task submission). Default 100 ns (as a
    /// memcpy-engine submission, [`RpcAccConfig::dsa_submit_ns`]).
    pub mmio_core_ns: f64,
    /// NIC line rate in Gbps; the compute unit's kernels also run at it. Default 100 (§IV-H:
    /// both accelerators "process the offloaded tasks at line-rate (100 Gbps)").
    pub line_rate_gbps: f64,
    /// Host cores swept in Fig. 12a. Default 16 (one Xeon Silver 4514Y, §IV-A).
    pub max_cores: u32,
    /// Whether ProtoACC-PCIe's core waits for its serializer's completion before it takes
    /// the next request. Accelerator-only serialization reads the response object in place
    /// across PCIe, so the object must stay untouched until the serializer is done, and
    /// ProtoACC's own library blocks on the serialized output (`BlockOnSerializedValue`,
    /// ucb-bar/protoacc `microbenchmarks/accellib.cpp`); a server can instead defer
    /// releasing the object and move on. The paper does not say which its baseline does.
    /// Default false (the core moves on after the doorbell); true gives Fig. 12a's ratio from
    /// above (see docs/simulator.md). RPCAcc's core never waits: pre-serialization has
    /// already copied its fields into the DMA-safe buffer (§III-C).
    pub wait_for_accel_serializer: bool,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            avatar_bytes: 32768,
            compression_ratio: 2.084,
            cpu_compress_mbytes_s: 275.0,
            cpu_aes_cycles_per_byte: 0.64,
            auth_dependent_loads: 8,
            mmio_core_ns: 100.0,
            line_rate_gbps: 100.0,
            max_cores: 16,
            wait_for_accel_serializer: false,
        }
    }
}

impl ServiceConfig {
    /// Compressed image bytes.
    pub fn image_bytes(&self) -> u32 {
        (f64::from(self.avatar_bytes) / self.compression_ratio).round() as u32
    }
}

/// One design's cost of one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Design {
    /// Host core time per request (ns): the handler from start to its last doorbell.
    pub host_ns: f64,
    /// Request latency at low load (ns): request on the wire to response on the wire.
    pub latency_ns: f64,
    /// Smallest time between requests any shared resource allows (ns): line rate, compute
    /// unit, PCIe per direction.
    pub cap_ns: f64,
}

impl Design {
    /// Requests per second with `cores` host cores.
    pub fn rate(&self, cores: u32) -> f64 {
        (f64::from(cores) / self.host_ns).min(1.0 / self.cap_ns) * 1e9
    }
}

/// The service on the three designs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Service {
    /// CPU-only.
    pub cpu_only: Design,
    /// ProtoACC-PCIe.
    pub protoacc_pcie: Design,
    /// RPCAcc.
    pub rpcacc: Design,
    /// RPCAcc's host time of pre-serialization, from the serialize call to the doorbell (ns).
    pub preser_skip_ns: f64,
    /// Same without skipping accelerator fields: the image is first moved to host memory
    /// (`moveToCPU`, waited for) and copied like any host field.
    pub preser_noskip_ns: f64,
}

/// The request and response of the service, traced by `source`.
pub struct Messages {
    /// Request (`User`): deserialization program and trace.
    pub request: RpcMessage,
    /// Response (`Photo`): serialization program and trace.
    pub response: RpcMessage,
}

/// Traces the service's request (deserialized) and response (serialized).
///
/// # Errors
/// As [`trace_messages`].
pub fn messages(svc: &ServiceConfig, source: &mut dyn TraceSource) -> Result<Messages> {
    let (req, resp) = image::call(svc.avatar_bytes as usize, svc.image_bytes() as usize);
    let r = [(image::REQUEST_TYPE, req.as_slice())];
    let p = [(image::RESPONSE_TYPE, resp.as_slice())];
    let mut rd = trace_messages(source, "image", image::IMAGE_PROTO, &r, Direction::Decode)?;
    let mut re = trace_messages(source, "image", image::IMAGE_PROTO, &r, Direction::Encode)?;
    let mut pd = trace_messages(source, "image", image::IMAGE_PROTO, &p, Direction::Decode)?;
    let mut pe = trace_messages(source, "image", image::IMAGE_PROTO, &p, Direction::Encode)?;
    let (rd, re, pd, pe) = (rd.remove(0), re.remove(0), pd.remove(0), pe.remove(0));
    Ok(Messages {
        request: prepare("image", 0, re, rd, 0.0),
        response: prepare("image", 1, pe, pd, 0.0),
    })
}

/// The item carrying the most payload: the avatar or image field.
fn large_item(p: &Program) -> usize {
    let bytes = |i: &crate::program::Item| -> u64 {
        let r: u64 = (i.first_access..i.end_access)
            .map(|a| &p.accesses[a as usize])
            .filter(|a| !a.is_schema)
            .map(|a| u64::from(a.bytes))
            .sum();
        r + i.writes.iter().map(|w| u64::from(w.2)).sum::<u64>()
    };
    (0..p.items.len())
        .max_by_key(|&k| bytes(&p.items[k]))
        .unwrap_or(0)
}

/// `p` with its large field placed in accelerator memory (RPCAcc's "Acc" label).
fn place_large_in_accel(p: &Program) -> Program {
    let mut q = p.clone();
    let k = large_item(p);
    let it = q.items[k].clone();
    for a in it.first_access..it.end_access {
        let acc = &mut q.accesses[a as usize];
        if !acc.is_schema && acc.region == Region::Message {
            acc.region = Region::Accel;
        }
    }
    for w in &mut q.items[k].writes {
        if w.0 == Region::Message {
            w.0 = Region::Accel;
        }
    }
    q
}

/// Host-memory writes of a deserialization program: `(count, bytes, last write's bytes)`.
fn host_writes(p: &Program) -> (usize, f64, f64) {
    let w: Vec<u32> = p
        .items
        .iter()
        .flat_map(|i| i.writes.iter())
        .filter(|w| w.0 == Region::Message)
        .map(|w| w.2)
        .collect();
    let bytes = w.iter().map(|&b| f64::from(b)).sum();
    (w.len(), bytes, w.last().map_or(0.0, |&b| f64::from(b)))
}

/// The service on the three designs.
pub fn run(cfg: &RpcAccConfig, svc: &ServiceConfig, m: &Messages) -> Service {
    let pcie = cfg.pcie;
    let one_way = pcie.latency_ns / 2.0;
    let line = svc.line_rate_gbps / 8.0; // bytes per ns
    let s = f64::from(svc.avatar_bytes);
    let c = f64::from(svc.image_bytes());
    let wq = m.request.deser.wire_bytes as f64;
    let wr = m.response.ser.wire_bytes as f64;
    let ghz = cfg.cpu.clock_ghz;
    let auth = f64::from(svc.auth_dependent_loads) * cfg.host_mem.latency_ns;
    let mmio = svc.mmio_core_ns;
    // Compute unit (§III-D): the task's MMIO write reaches the card's descriptor ring; the CU
    // decrypts, compresses and encrypts streaming at line rate from card memory; "when
    // computation finishes, the CU first writes the results into the output address", then
    // its completion to the host's notification ring with one DMA write.
    let cu_run = one_way + cfg.accel_mem.latency_ns + s / line;
    // RPCAcc: the output address is in card memory (§III-C, Fig. 4-c).
    let cu = cu_run + cfg.accel_mem.latency_ns + c / cfg.accel_mem.bw_gbytes_s + one_way;
    let wire_in = wq / line;
    let wire_out = wr / line;
    let line_cap = wq.max(wr) / line;
    let cu_cap = s / line;

    // CPU-only.
    let aes = |b: f64| b * svc.cpu_aes_cycles_per_byte / ghz;
    let sw = cfg.cpu.message_ns(&m.request.deser_trace)
        + auth
        + aes(s)
        + s / (svc.cpu_compress_mbytes_s * 1e-3)
        + aes(c)
        + cfg.cpu.message_ns(&m.response.ser_trace)
        + cfg.cpu_rpc_stack_ns
        + mmio;
    let cpu_only = Design {
        host_ns: sw,
        latency_ns: wire_in
            + one_way
            + wq / pcie.bw_gbytes_s
            + sw
            + one_way
            + pcie.latency_ns
            + wr / pcie.bw_gbytes_s
            + wire_out,
        cap_ns: line_cap
            .max(wq / pcie.bw_gbytes_s)
            .max(wr / pcie.bw_gbytes_s),
    };

    // ProtoACC-PCIe: field-by-field deserialization of every field into host memory.
    let parse = parse_ns(cfg, &m.request.deser, cfg.clock_mhz);
    let (n_w, out_w, last_w) = host_writes(&m.request.deser);
    let deser_fbf = parse + n_w as f64 * cfg.dma_txn_ns + one_way + last_w / pcie.bw_gbytes_s;
    // `moveToAcc`: the MMIO reaches the card, which reads the avatar across PCIe and writes
    // its completion back to host memory (as `moveToCPU` below).
    let move_to_acc = mmio + one_way + pcie.latency_ns + s / pcie.bw_gbytes_s + one_way;
    // Accelerator-only serialization (§IV-A: ProtoACC-PCIe's "serialization procedure is
    // similar to the Accelerator-only approach"): the compute unit writes its results back to
    // host memory (§III-C, Fig. 4-a/b), and the serializer fetches them across PCIe.
    let cu_pp = cu_run + c / pcie.bw_gbytes_s + one_way;
    let pp_handler = auth + move_to_acc + mmio + cu_pp + mmio;
    let resp_acc = place_large_in_accel(&m.response.ser);
    let acc = cfg.accel_mem;
    let over_pcie = |r: Region| -> LinkConfig {
        if r == Region::Accel {
            acc
        } else {
            pcie
        }
    };
    let pp_ser = serializer_ns(cfg, &m.response.ser, &over_pcie, 1000.0 / cfg.clock_mhz);
    // If the core waits for the serializer ([`ServiceConfig::wait_for_accel_serializer`]):
    // the doorbell reaches the card, the serializer reads the response across PCIe, its
    // completion comes back by DMA.
    let pp_ser_wait = if svc.wait_for_accel_serializer {
        one_way + pp_ser + one_way
    } else {
        0.0
    };
    let protoacc_pcie = Design {
        host_ns: pp_handler + pp_ser_wait,
        latency_ns: wire_in + deser_fbf + pp_handler + one_way + pp_ser + wire_out,
        // Card to host: the deserialized request, the compute unit's result; host to card:
        // the avatar moved back, the response.
        cap_ns: line_cap
            .max(cu_cap)
            .max((out_w + c) / pcie.bw_gbytes_s)
            .max((s + wr) / pcie.bw_gbytes_s),
    };

    // RPCAcc: the avatar to card memory, the rest in one DMA from the Temp Buffer.
    let req_acc = place_large_in_accel(&m.request.deser);
    let (_, out_h, _) = host_writes(&req_acc);
    let deser_one = parse + cfg.dma_txn_ns + one_way + out_h / pcie.bw_gbytes_s;
    let resp = RpcMessage {
        ser: resp_acc.clone(),
        ..m.response.clone()
    };
    let (pre, dsa) = preser_ns(cfg, &resp, true);
    let preser_skip = pre.max(dsa) + mmio;
    let st = ser_times(cfg, &resp, cfg.clock_mhz);
    // The card's part of memory-affinity serialization, after the doorbell.
    let card_ser = st.rpcacc - pre.max(dsa);
    let rpc_host = auth + mmio + cu + preser_skip;
    let rpcacc = Design {
        host_ns: rpc_host,
        latency_ns: wire_in + deser_one + rpc_host + card_ser + wire_out,
        cap_ns: line_cap.max(cu_cap).max(out_h / pcie.bw_gbytes_s),
    };

    // Without skipping: moveToCPU of the image (an MMIO, then the card's DMA write, waited
    // for), then pre-serialization copies it like any host field.
    let (pre_h, dsa_h) = preser_ns(cfg, &m.response, true);
    let move_to_cpu = mmio + one_way + c / pcie.bw_gbytes_s + one_way;
    let preser_noskip = move_to_cpu + pre_h.max(dsa_h) + mmio;

    Service {
        cpu_only,
        protoacc_pcie,
        rpcacc,
        preser_skip_ns: preser_skip,
        preser_noskip_ns: preser_noskip,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_engine::Engine;

    #[test]
    fn rpcacc_serves_more_per_core_and_faster() {
        let cfg = RpcAccConfig::default();
        let svc = ServiceConfig::default();
        let m = messages(&svc, &mut Engine).unwrap();
        let r = run(&cfg, &svc, &m);
        assert!(r.rpcacc.host_ns < r.protoacc_pcie.host_ns, "{r:?}");
        assert!(r.protoacc_pcie.host_ns < r.cpu_only.host_ns, "{r:?}");
        assert!(r.rpcacc.latency_ns < r.protoacc_pcie.latency_ns, "{r:?}");
        assert!(r.preser_skip_ns < r.preser_noskip_ns, "{r:?}");
        // More cores help until a shared resource caps the rate.
        let d = r.rpcacc;
        assert!(d.rate(2) > d.rate(1));
        assert!((d.rate(1000) - 1e9 / d.cap_ns).abs() < 1e-6);
    }

    #[test]
    fn waiting_for_the_serializer_costs_host_time_not_latency() {
        let cfg = RpcAccConfig::default();
        let svc = ServiceConfig::default();
        let m = messages(&svc, &mut Engine).unwrap();
        let free = run(&cfg, &svc, &m);
        let waiting = ServiceConfig {
            wait_for_accel_serializer: true,
            ..svc
        };
        let blocked = run(&cfg, &waiting, &m);
        let pp = (free.protoacc_pcie, blocked.protoacc_pcie);
        // The core waits for two PCIe crossings and the serializer's reads of the response.
        assert!(pp.1.host_ns > pp.0.host_ns + cfg.pcie.latency_ns, "{pp:?}");
        assert!((pp.1.latency_ns - pp.0.latency_ns).abs() < 1e-9, "{pp:?}");
        assert_eq!(free.rpcacc, blocked.rpcacc);
    }

    #[test]
    fn a_bigger_avatar_costs_more_everywhere() {
        let cfg = RpcAccConfig::default();
        let small = ServiceConfig::default();
        let big = ServiceConfig {
            avatar_bytes: 4 * small.avatar_bytes,
            ..small.clone()
        };
        let a = run(&cfg, &small, &messages(&small, &mut Engine).unwrap());
        let b = run(&cfg, &big, &messages(&big, &mut Engine).unwrap());
        for (x, y) in [
            (a.cpu_only, b.cpu_only),
            (a.protoacc_pcie, b.protoacc_pcie),
            (a.rpcacc, b.rpcacc),
        ] {
            assert!(y.host_ns > x.host_ns && y.latency_ns > x.latency_ns);
        }
    }
}
