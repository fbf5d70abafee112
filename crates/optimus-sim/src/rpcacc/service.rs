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
//! [`field_update_sequence`] runs RPCAcc's requests while the compute unit comes and goes
//! (§III-F, Fig. 11): a request whose avatar was placed on the wrong side moves it first,
//! and automatic field updating moves the field's placement bit with it.
//!
//! The core is busy from the handler's start to its last doorbell; that time bounds a core's
//! request rate (Fig. 12a). Each design's rate is also capped by the busiest of the shared
//! resources it uses, each taking one request at a time as the gateway's
//! ([`super::gateway::Occupancy`]): the NIC's line in each direction, PCIe in each direction,
//! and on the accelerators the deserializer (field by field on ProtoACC-PCIe, one-shot on
//! RPCAcc), the compute unit, the serializer (ProtoACC-PCIe's engine reading the response
//! across PCIe, RPCAcc's fetch of the pre-serialized buffer and reads of card memory) and
//! RPCAcc's memcpy engine; [`Design::cap_by`] names it. A request's latency at low load is
//! the sum of its stages; [`Design::under_load`] adds the queueing of a Poisson stream of
//! requests and gives the stream's offered utilisation, and [`Mix::under_same_load`]
//! offers one stream to all three designs (Fig. 12b).

use serde::{Deserialize, Serialize};

use optimus_trace::Direction;

use super::gateway::Occupancy;
pub use super::load::{under_load, Design, Load, HOST_CORES, MAX_HOST_CORES, NEAR_CAPACITY_RHO};
use super::{
    deser_times, host::preser_bytes, memaff_card_occupancy, prepare, preser_ns, rpc_layer,
    ser_occupancy, ser_times, DeserLink, RpcAccConfig, RpcMessage,
};
use crate::error::{
    check_non_negative, check_positive, config_err, Result, PARAM_MAX, PARAM_MIN_POSITIVE,
};
use crate::program::Program;
use crate::workload::{image, trace_messages, TraceSource};

/// Parameters of the service ([`RpcAccConfig::service`]; the accelerator's are the rest of
/// [`RpcAccConfig`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServiceConfig {
    /// Raw avatar bytes per request. Default 32768: "KB-level" (§IV-H), and Fig. 11's explicit
    /// move of the field across PCIe costs "several microseconds" (§IV-G): 1.25 µs + 32 KiB /
    /// 12.8 GB/s = 3.8 µs.
    pub avatar_bytes: u32,
    /// Raw / compressed bytes. Default 1.0785: LZ4 on the raw RGB pixels of six sample
    /// photographs scaled to the avatar's 32 KiB (`scripts/avatar-compression`); the
    /// request carries "raw avatar data" (§III-E2), which photographs leave nearly
    /// incompressible, where LZ4 halves the mostly textual Silesia corpus (2.084).
    pub compression_ratio: f64,
    /// One host core's compression throughput in MB/s. Default 262 (fitted to Fig. 12a's
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
    /// Host cores swept in Fig. 12a. Default 16 (one Xeon Silver 4514Y, §IV-A); at most
    /// [`MAX_HOST_CORES`].
    pub max_cores: u32,
    /// Fig. 12b compares the designs "under the same throughput" (§IV-H): one Poisson
    /// stream at this share of the slowest design's rate with `max_cores` host cores, offered
    /// to all three ([`Mix::under_same_load`]). Default 0.5: every design carries it and
    /// none runs near its capacity; the paper does not give the rate. Between 0 and 1.
    pub same_load_share: f64,
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
    /// Requests of several avatar sizes: each request carries one of these sizes, drawn with
    /// the probability of its share (the shares are relative: they are divided by their sum).
    /// Empty (the default): every request carries `avatar_bytes`, as the paper gives no
    /// distribution. The load runs, capacities and per-request means of `sim --workload
    /// image-service` and of Fig. 12 and §IV-H's targets take the mix ([`Mix`]); Fig. 11's
    /// sequences keep `avatar_bytes`. At most [`ServiceConfig::MAX_MIX_SIZES`] sizes.
    pub avatar_mix: Vec<AvatarShare>,
}

/// One avatar size of [`ServiceConfig::avatar_mix`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AvatarShare {
    /// Raw avatar bytes, as [`ServiceConfig::avatar_bytes`].
    pub bytes: u32,
    /// The share of requests that carry it, relative to the other sizes' (positive).
    pub share: f64,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            avatar_bytes: 32768,
            compression_ratio: 1.0785,
            cpu_compress_mbytes_s: 262.0,
            cpu_aes_cycles_per_byte: 0.64,
            auth_dependent_loads: 8,
            mmio_core_ns: 100.0,
            line_rate_gbps: 100.0,
            max_cores: 16,
            same_load_share: 0.5,
            wait_for_accel_serializer: false,
            avatar_mix: Vec::new(),
        }
    }
}

impl ServiceConfig {
    /// The largest avatar a request may carry: 64 MiB, protobuf's default message limit. The
    /// model builds each request as a real message, so this bounds what it allocates.
    pub const MAX_AVATAR_BYTES: u32 = 64 << 20;

    /// The most sizes [`ServiceConfig::avatar_mix`] may list: the model traces the messages
    /// of each size, one size at a time.
    pub const MAX_MIX_SIZES: usize = 64;

    /// Checks parameters.
    ///
    /// # Errors
    /// [`crate::SimError::Config`] naming the field.
    pub fn validate(&self, component: &'static str) -> Result<()> {
        check_positive(
            component,
            &[
                (self.compression_ratio, "compression_ratio"),
                (self.cpu_compress_mbytes_s, "cpu_compress_mbytes_s"),
                (self.line_rate_gbps, "line_rate_gbps"),
                (f64::from(self.max_cores), "max_cores"),
            ],
        )?;
        if !(self.same_load_share > 0.0 && self.same_load_share < 1.0) {
            return Err(config_err(
                component,
                "same_load_share",
                format!("must be between 0 and 1, got {}", self.same_load_share),
            ));
        }
        if self.max_cores > MAX_HOST_CORES {
            return Err(config_err(
                component,
                "max_cores",
                format!("must be 1..={MAX_HOST_CORES}, got {}", self.max_cores),
            ));
        }
        check_non_negative(
            component,
            &[
                (self.cpu_aes_cycles_per_byte, "cpu_aes_cycles_per_byte"),
                (self.mmio_core_ns, "mmio_core_ns"),
            ],
        )?;
        self.check_avatar(component, "avatar_bytes", "", self.avatar_bytes)?;
        if self.avatar_mix.len() > Self::MAX_MIX_SIZES {
            return Err(config_err(
                component,
                "avatar_mix",
                format!(
                    "lists {} sizes, more than {}",
                    self.avatar_mix.len(),
                    Self::MAX_MIX_SIZES
                ),
            ));
        }
        for (i, size) in self.avatar_mix.iter().enumerate() {
            let which = format!("size {i}: ");
            self.check_avatar(component, "avatar_mix", &which, size.bytes)?;
            if !(PARAM_MIN_POSITIVE..=PARAM_MAX).contains(&size.share) {
                return Err(config_err(
                    component,
                    "avatar_mix",
                    format!(
                        "{which}share must be {PARAM_MIN_POSITIVE:e} to {PARAM_MAX:e}, got {}",
                        size.share
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The requests' avatar sizes, each with the share of requests that carry it (summing
    /// to 1): [`ServiceConfig::avatar_mix`] with its shares divided by their sum, or
    /// `avatar_bytes` alone when it is empty.
    pub fn avatar_shares(&self) -> Vec<(u32, f64)> {
        if self.avatar_mix.is_empty() {
            return vec![(self.avatar_bytes, 1.0)];
        }
        let total: f64 = self.avatar_mix.iter().map(|a| a.share).sum();
        self.avatar_mix
            .iter()
            .map(|a| (a.bytes, a.share / total))
            .collect()
    }

    /// Checks an avatar of `bytes` (the config's `field`, `which` naming a size of a mix):
    /// 1 byte to [`ServiceConfig::MAX_AVATAR_BYTES`], and an image of at most as many after
    /// `compression_ratio`.
    fn check_avatar(
        &self,
        component: &'static str,
        field: &'static str,
        which: &str,
        bytes: u32,
    ) -> Result<()> {
        if !(1..=Self::MAX_AVATAR_BYTES).contains(&bytes) {
            return Err(config_err(
                component,
                field,
                format!(
                    "{which}must be 1..={} bytes, got {bytes}",
                    Self::MAX_AVATAR_BYTES
                ),
            ));
        }
        let image = f64::from(bytes) / self.compression_ratio;
        if image > f64::from(Self::MAX_AVATAR_BYTES) {
            return Err(config_err(
                component,
                "compression_ratio",
                format!(
                    "{} makes the {bytes}-byte avatar a {image:.0}-byte image, over {} bytes",
                    self.compression_ratio,
                    Self::MAX_AVATAR_BYTES
                ),
            ));
        }
        Ok(())
    }

    /// Compressed image bytes.
    pub fn image_bytes(&self) -> u32 {
        (f64::from(self.avatar_bytes) / self.compression_ratio).round() as u32
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

impl Service {
    /// The three designs, `[CPU-only, ProtoACC-PCIe, RPCAcc]`.
    pub fn designs(&self) -> [Design; 3] {
        [self.cpu_only, self.protoacc_pcie, self.rpcacc]
    }
}

/// The service over requests of several avatar sizes ([`ServiceConfig::avatar_mix`], or
/// `avatar_bytes` alone).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Mix {
    /// Per size: the avatar's bytes, the share of requests that carry it (the shares sum to
    /// 1) and the service on it.
    pub sizes: Vec<(u32, f64, Service)>,
    /// The mean request: per design [`Design::mean`] over the sizes, and the share-weighted
    /// means of the pre-serialization times.
    pub mean: Service,
}

impl Mix {
    /// Each design's requests, `[CPU-only, ProtoACC-PCIe, RPCAcc]`: (share, cost) per size,
    /// as [`under_load`] takes them.
    pub fn variants(&self) -> [Vec<(f64, Design)>; 3] {
        [0, 1, 2].map(|i| {
            self.sizes
                .iter()
                .map(|(_, w, s)| (*w, s.designs()[i]))
                .collect()
        })
    }

    /// Fig. 12b's comparison "under the same throughput": the offered rate (requests per
    /// second), `share` of the slowest design's rate with `cores` host cores, and every
    /// design's latency under that Poisson stream ([`under_load`], the same arrivals and
    /// sizes for each). `None` when `share` is not in (0, 1) or as [`under_load`].
    pub fn under_same_load(
        &self,
        cores: u32,
        share: f64,
        requests: usize,
        seed: u64,
    ) -> Option<(f64, [Load; 3])> {
        if !(share > 0.0 && share < 1.0) {
            return None;
        }
        let slowest = self
            .mean
            .designs()
            .iter()
            .map(|d| d.rate(cores))
            .fold(f64::INFINITY, f64::min);
        let per_s = share * slowest;
        let [a, b, c] = self
            .variants()
            .map(|v| under_load(&v, cores, per_s, requests, seed));
        Some((per_s, [a?, b?, c?]))
    }
}

/// The service on each avatar size of `cfg`'s mix ([`ServiceConfig::avatar_shares`]):
/// `traced` holds the messages of `avatar_bytes` ([`messages`]), which serve that size; the
/// other sizes' request and response are traced by `source`.
///
/// # Errors
/// As [`messages`].
pub fn mix(cfg: &RpcAccConfig, traced: &Messages, source: &mut dyn TraceSource) -> Result<Mix> {
    let mut sized = cfg.clone();
    let sizes = cfg
        .service
        .avatar_shares()
        .into_iter()
        .map(|(bytes, share)| {
            let service = if bytes == cfg.service.avatar_bytes {
                run(cfg, traced)
            } else {
                sized.service.avatar_bytes = bytes;
                run(&sized, &messages(&sized, source)?)
            };
            Ok((bytes, share, service))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut mix = Mix {
        sizes,
        mean: Service::default(),
    };
    let [cpu_only, protoacc_pcie, rpcacc] = mix.variants().map(|v| match v.as_slice() {
        [(_, one)] => *one,
        _ => Design::mean(&v),
    });
    let weighted = |f: fn(&Service) -> f64| mix.sizes.iter().map(|(_, w, s)| w * f(s)).sum();
    mix.mean = Service {
        cpu_only,
        protoacc_pcie,
        rpcacc,
        preser_skip_ns: weighted(|s| s.preser_skip_ns),
        preser_noskip_ns: weighted(|s| s.preser_noskip_ns),
    };
    Ok(mix)
}

/// The request and response of the service, traced by `source`.
pub struct Messages {
    /// Request (`User`): deserialization program and trace.
    pub request: RpcMessage,
    /// Response (`Photo`): serialization program and trace.
    pub response: RpcMessage,
    /// The request, its deserialization with the avatar labelled "Acc" (written to card
    /// memory).
    pub request_accel: RpcMessage,
    /// The response, its serialization with the image labelled "Acc" (read from card memory).
    pub response_accel: RpcMessage,
}

/// Traces the service's request (deserialized) and response (serialized), each with its
/// large field in host memory and, as RPCAcc's "Acc" label places it, in card memory.
///
/// # Errors
/// As [`trace_messages`].
pub fn messages(cfg: &RpcAccConfig, source: &mut dyn TraceSource) -> Result<Messages> {
    let svc = &cfg.service;
    let (req, resp) = image::call(svc.avatar_bytes as usize, svc.image_bytes() as usize);
    let r = [(image::REQUEST_TYPE, req.as_slice())];
    let p = [(image::RESPONSE_TYPE, resp.as_slice())];
    let [avatar, img] = image::ACCEL_FIELDS;
    let mut one = |msgs: &[(&str, &[u8])], d: Direction, accel: &[&str]| {
        trace_messages(source, "image", image::IMAGE_PROTO, msgs, d, accel).map(|mut t| t.remove(0))
    };
    let (rd, re) = (
        one(&r, Direction::Decode, &[])?,
        one(&r, Direction::Encode, &[])?,
    );
    let (pd, pe) = (
        one(&p, Direction::Decode, &[])?,
        one(&p, Direction::Encode, &[])?,
    );
    let rd_accel = Program::from_trace(&one(&r, Direction::Decode, &[avatar])?);
    let pe_accel = Program::from_trace(&one(&p, Direction::Encode, &[img])?);
    let request = prepare("image", 0, re, rd, 0.0);
    let response = prepare("image", 1, pe, pd, 0.0);
    Ok(Messages {
        request_accel: RpcMessage {
            deser: rd_accel,
            ..request.clone()
        },
        response_accel: RpcMessage {
            ser: pe_accel,
            ..response.clone()
        },
        request,
        response,
    })
}

/// Per-request terms every design shares (ns, bytes).
struct Terms {
    /// PCIe one way.
    one_way: f64,
    /// Raw avatar and compressed image bytes.
    avatar: f64,
    image: f64,
    /// Request and response wire bytes.
    wq: f64,
    wr: f64,
    auth: f64,
    mmio: f64,
    /// The request and the response on the line, each what the line spends on it.
    wire_in: f64,
    wire_out: f64,
    /// The compute unit's kernels on one avatar.
    cu_cap: f64,
    /// The compute unit from its task's MMIO to the end of its kernels.
    cu_run: f64,
    /// Decryption, compression and encryption on one host core.
    cpu_kernels: f64,
}

fn terms(cfg: &RpcAccConfig, m: &Messages) -> Terms {
    let svc = &cfg.service;
    let line = svc.line_rate_gbps / 8.0; // bytes per ns
    let s = f64::from(svc.avatar_bytes);
    let c = f64::from(svc.image_bytes());
    let wq = m.request.deser.wire_bytes as f64;
    let wr = m.response.ser.wire_bytes as f64;
    let one_way = cfg.pcie.latency_ns / 2.0;
    let aes = |b: f64| b * svc.cpu_aes_cycles_per_byte / cfg.cpu.clock_ghz;
    Terms {
        one_way,
        avatar: s,
        image: c,
        wq,
        wr,
        auth: f64::from(svc.auth_dependent_loads) * cfg.host_mem.latency_ns,
        mmio: svc.mmio_core_ns,
        wire_in: wq / line,
        wire_out: wr / line,
        cu_cap: s / line,
        // Compute unit (§III-D): the task's MMIO write reaches the card's descriptor ring;
        // the CU decrypts, compresses and encrypts streaming at line rate from card memory.
        cu_run: cfg.mmio_ns + cfg.accel_mem.latency_ns + s / line,
        cpu_kernels: aes(s) + s / (svc.cpu_compress_mbytes_s * 1e-3) + aes(c),
    }
}

/// The service on the three designs.
pub fn run(cfg: &RpcAccConfig, m: &Messages) -> Service {
    let pcie = cfg.pcie;
    let t = terms(cfg, m);
    let (one_way, s, c, wq, wr, auth, mmio) =
        (t.one_way, t.avatar, t.image, t.wq, t.wr, t.auth, t.mmio);

    // CPU-only: the RPC layer's request and response (eRPC's stack, software
    // deserialization and serialization, the NIC's DMA and doorbell), with the handler's
    // authorization, kernels and doorbell between them.
    let layer = rpc_layer(cfg, &m.request, Some(&m.response));
    let handler = auth + t.cpu_kernels + mmio;
    let sw = cfg.cpu.message_ns(&m.request.deser_trace)
        + cfg.cpu_rpc_stack_ns
        + handler
        + cfg.cpu.message_ns(&m.response.ser_trace);
    let cpu_only = Design::new(
        sw,
        t.wire_in + layer.cpu_only + handler + t.wire_out,
        Occupancy {
            line_in: t.wire_in,
            line_out: t.wire_out,
            pcie_to_host: wq / pcie.bw_gbytes_s,
            pcie_to_card: wr / pcie.bw_gbytes_s,
            ..Occupancy::default()
        },
    );

    // ProtoACC-PCIe: the RPC layer's field-by-field deserialization of every field into host
    // memory and accelerator-only serialization (§IV-A: ProtoACC-PCIe's "serialization
    // procedure is similar to the Accelerator-only approach"), with the handler between
    // them: the compute unit writes its results back to host memory (§III-C, Fig. 4-a/b),
    // and the serializer fetches them across PCIe.
    let cu_pp = t.cu_run + c / pcie.bw_gbytes_s + one_way;
    let pp_handler = auth + move_to_acc(cfg, &t) + mmio + cu_pp + mmio;
    // If the core waits for the serializer ([`ServiceConfig::wait_for_accel_serializer`]):
    // the doorbell reaches the card, the serializer reads the response across PCIe, its
    // completion comes back by DMA.
    let pp_ser_wait = if cfg.service.wait_for_accel_serializer {
        ser_times(cfg, &m.response, cfg.clock_mhz).protoacc_pcie + one_way
    } else {
        0.0
    };
    let deser = deser_times(cfg, &m.request, DeserLink::pcie(cfg), cfg.clock_mhz);
    let protoacc_pcie = Design::new(
        pp_handler + pp_ser_wait,
        t.wire_in + layer.protoacc_pcie + pp_handler + t.wire_out,
        // Card to host: the deserialized request, the compute unit's result; host to card:
        // the avatar moved back, the response. The serializer engine reads the response
        // across PCIe one message at a time.
        Occupancy {
            line_in: t.wire_in,
            line_out: t.wire_out,
            deserializer: 1000.0 / deser.fbf_host_rate,
            pcie_to_host: (deser.output_bytes + c) / pcie.bw_gbytes_s,
            pcie_to_card: (s + wr) / pcie.bw_gbytes_s,
            compute_unit: t.cu_cap,
            serializer: ser_occupancy(cfg, &m.response, cfg.clock_mhz).protoacc_pcie,
            ..Occupancy::default()
        },
    );

    let rpcacc = rpcacc_request(cfg, m, &t, true, true);
    // Without skipping: moveToCPU of the image (an MMIO, then the card's DMA write, waited
    // for), then pre-serialization copies it like any host field.
    let (pre_h, dsa_h) = preser_ns(cfg, &m.response, true);
    let preser_noskip = move_to_cpu(cfg, &t, c) + pre_h.max(dsa_h) + mmio;

    Service {
        cpu_only,
        protoacc_pcie,
        rpcacc: rpcacc.design,
        preser_skip_ns: rpcacc.preser_ns,
        preser_noskip_ns: preser_noskip,
    }
}

/// `moveToAcc` of the avatar (Listing 1 L6): the MMIO reaches the card, which reads the
/// avatar across PCIe and writes its completion back to host memory; the core waits.
fn move_to_acc(cfg: &RpcAccConfig, t: &Terms) -> f64 {
    t.mmio + cfg.mmio_ns + cfg.pcie.latency_ns + t.avatar / cfg.pcie.bw_gbytes_s + t.one_way
}

/// `moveToCPU` of `bytes` (Listing 1 L14): the MMIO reaches the card, which writes the field
/// to host memory and then its completion; the core waits.
fn move_to_cpu(cfg: &RpcAccConfig, t: &Terms, bytes: f64) -> f64 {
    t.mmio + cfg.mmio_ns + bytes / cfg.pcie.bw_gbytes_s + t.one_way
}

/// One RPCAcc request of the service.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RpcAccRequest {
    /// Its cost.
    pub design: Design,
    /// Host time of pre-serialization, from the serialize call to the doorbell (ns).
    pub preser_ns: f64,
    /// Whether the handler had to move the avatar across PCIe (`moveToAcc` or `moveToCPU`)
    /// because the deserializer placed it where the compression does not run.
    pub moved: bool,
}

/// One request on RPCAcc with the compute unit available or not (Listing 1: the CU
/// compresses when available, the host core otherwise) and the schema table placing the
/// avatar in card memory (`avatar_in_accel`, its "Acc" label) or host memory. The
/// target-aware deserializer writes the fields as placed: those in host memory in one-shot
/// DMA from the Temp Buffer (a transaction per full buffer), the avatar in card memory
/// beside it. If the avatar is not where the compression runs, the handler first moves it
/// (`moveToAcc`, `moveToCPU`). A CU writes its result to card memory and pre-serialization
/// skips it (§III-C); a host compression leaves the image in host memory, where
/// pre-serialization copies it.
fn rpcacc_request(
    cfg: &RpcAccConfig,
    m: &Messages,
    t: &Terms,
    cu_available: bool,
    avatar_in_accel: bool,
) -> RpcAccRequest {
    let pcie = cfg.pcie;
    let req = if avatar_in_accel {
        &m.request_accel
    } else {
        &m.request
    };
    let deser = deser_times(cfg, req, DeserLink::pcie(cfg), cfg.clock_mhz);
    let out_h = deser.output_bytes - deser.accel_bytes;
    let moved = cu_available != avatar_in_accel;
    let move_ns = match (moved, cu_available) {
        (false, _) => 0.0,
        (true, true) => move_to_acc(cfg, t),
        (true, false) => move_to_cpu(cfg, t, t.avatar),
    };
    let (compress, resp) = if cu_available {
        // "When computation finishes, the CU first writes the results into the output
        // address" (card memory, §III-C Fig. 4-c), then its completion to the host's
        // notification ring with one DMA write; the core polls for it.
        let acc = cfg.accel_mem;
        let cu = t.cu_run + acc.latency_ns + t.image / acc.bw_gbytes_s + t.one_way;
        (t.mmio + cu, &m.response_accel)
    } else {
        (t.cpu_kernels, &m.response)
    };
    let (pre, dsa) = preser_ns(cfg, resp, true);
    let preser = pre.max(dsa) + t.mmio;
    // The card's part of memory-affinity serialization, after the doorbell.
    let card_ser = ser_times(cfg, resp, cfg.clock_mhz).rpcacc - pre.max(dsa);
    let host = t.auth + move_ns + compress + preser;
    // Host to card: the avatar moved for the compute unit, and the pre-serialized response.
    let to_card = preser_bytes(resp) + if moved && cu_available { t.avatar } else { 0.0 };
    let to_host = out_h
        + if moved && !cu_available {
            t.avatar
        } else {
            0.0
        };
    RpcAccRequest {
        design: Design::new(
            host,
            t.wire_in + deser.oneshot_latency_ns + host + card_ser + t.wire_out,
            Occupancy {
                host_cores: 0.0,
                memcpy_engine: dsa,
                line_in: t.wire_in,
                line_out: t.wire_out,
                deserializer: 1000.0 / deser.oneshot_host_rate,
                pcie_to_host: to_host / pcie.bw_gbytes_s,
                pcie_to_card: to_card / pcie.bw_gbytes_s,
                compute_unit: if cu_available { t.cu_cap } else { 0.0 },
                serializer: memaff_card_occupancy(cfg, resp, cfg.clock_mhz),
            },
        ),
        preser_ns: preser,
        moved,
    }
}

/// One request of a Fig. 11 sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct FieldUpdateStep {
    /// Whether the compute unit was available.
    pub cu_available: bool,
    /// Whether the schema table placed the avatar in card memory.
    pub avatar_in_accel: bool,
    /// The request's cost.
    pub request: RpcAccRequest,
}

/// RPCAcc §III-F / §IV-G (Fig. 11): a sequence of image requests while the compute unit's
/// availability changes (`cu_available[i]` for request `i`), the schema table starting with
/// the avatar in card memory or not. With `auto_update`, a `moveToAcc` or `moveToCPU` also
/// flips the field's "Acc" label in the schema table, so the next request is deserialized
/// where the compression now runs ("after one incorrect placement"); without it the label
/// stays as the `.proto` set it and every such request pays the move.
pub fn field_update_sequence(
    cfg: &RpcAccConfig,
    m: &Messages,
    cu_available: &[bool],
    avatar_in_accel: bool,
    auto_update: bool,
) -> Vec<FieldUpdateStep> {
    let t = terms(cfg, m);
    let mut in_accel = avatar_in_accel;
    cu_available
        .iter()
        .map(|&cu| {
            let request = rpcacc_request(cfg, m, &t, cu, in_accel);
            let step = FieldUpdateStep {
                cu_available: cu,
                avatar_in_accel: in_accel,
                request,
            };
            if auto_update && request.moved {
                in_accel = cu;
            }
            step
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use optimus_core::binary::EngineTraces as Engine;

    /// The service on one avatar size, as a mix.
    fn one_size(bytes: u32, service: Service) -> Mix {
        Mix {
            sizes: vec![(bytes, 1.0, service)],
            mean: service,
        }
    }

    #[test]
    fn rpcacc_serves_more_per_core_and_faster() {
        let cfg = RpcAccConfig::default();
        let m = messages(&cfg, &mut Engine).unwrap();
        let r = run(&cfg, &m);
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
    fn one_core_queues_as_md1() {
        // One core, 1 µs a request, no shared cap to speak of: at half load the mean wait of
        // an M/D/1 queue is rho D / (2 (1 - rho)) = 0.5 µs.
        let d = Design {
            host_ns: 1000.0,
            latency_ns: 10_000.0,
            cap_ns: 1e-3,
            ..Design::default()
        };
        let l = d.under_load(1, 0.5e6, 200_000, 7).unwrap();
        assert!((l.mean_ns - 10_500.0).abs() < 25.0, "{l:?}");
        assert!(l.p99_ns > l.mean_ns + 1000.0, "{l:?}");
        assert_eq!(d.under_load(1, 0.5e6, 200_000, 7), Some(l));
        // Light load barely waits; at or past capacity the queue has no steady state.
        let light = d.under_load(1, 1e3, 10_000, 7).unwrap();
        assert!(light.mean_ns < 10_001.0, "{light:?}");
        assert_eq!(d.under_load(1, 1.5e6, 10_000, 7), None);
        assert_eq!(d.under_load(1, 0.5e6, 0, 7), None);
        // Core counts past the bound are not run (a clock per core, searched per request).
        assert_eq!(d.under_load(0, 1e3, 10_000, 7), None);
        assert_eq!(d.under_load(MAX_HOST_CORES + 1, 1e3, 10_000, 7), None);
    }

    #[test]
    fn the_same_load_is_a_share_of_the_slowest_design() {
        let design = |host_ns: f64| Design {
            host_ns,
            latency_ns: host_ns,
            cap_ns: 1e-3,
            ..Design::default()
        };
        let svc = one_size(
            1,
            Service {
                cpu_only: design(8000.0),
                protoacc_pcie: design(2000.0),
                rpcacc: design(1000.0),
                ..Service::default()
            },
        );
        // Two cores: CPU-only carries 250 k/s, the slowest; half of it is offered to all.
        let (per_s, loads) = svc.under_same_load(2, 0.5, 50_000, 5).unwrap();
        assert!((per_s - 125e3).abs() < 1e-6, "{per_s}");
        for (l, d) in loads.iter().zip(svc.mean.designs()) {
            assert_eq!(Some(*l), d.under_load(2, per_s, 50_000, 5));
            assert!(
                l.p99_ns >= d.latency_ns && l.mean_ns >= d.latency_ns,
                "{l:?}"
            );
        }
        // CPU-only, at half its rate, queues; RPCAcc, at a sixteenth of its, barely does.
        assert!(loads[0].p99_ns > loads[0].mean_ns + 1000.0, "{loads:?}");
        assert!(loads[2].mean_ns < 1010.0, "{loads:?}");
        for share in [0.0, 1.0, f64::NAN] {
            assert_eq!(svc.under_same_load(2, share, 50_000, 5), None);
        }
    }

    #[test]
    fn the_serializer_and_deserializer_cap_the_rate() {
        // ProtoACC-PCIe's serializer engine reads each response across PCIe, one at a time.
        let mut cfg = RpcAccConfig::default();
        cfg.service.wait_for_accel_serializer = true;
        let m = messages(&cfg, &mut Engine).unwrap();
        let pp = run(&cfg, &m).protoacc_pcie;
        let engine = ser_occupancy(&cfg, &m.response, cfg.clock_mhz).protoacc_pcie;
        assert!(pp.cap_ns >= engine, "{pp:?} {engine}");
        assert!(pp.rate(MAX_HOST_CORES) <= 1e9 / engine, "{pp:?}");
        // Its field-by-field deserializer takes one request at a time too.
        let d = deser_times(&cfg, &m.request, DeserLink::pcie(&cfg), cfg.clock_mhz);
        assert!(pp.cap_ns >= 1000.0 / d.fbf_host_rate, "{pp:?}");
        // At 10 MHz RPCAcc's serializer takes tens of microseconds to encode the image: it
        // binds, where at 250 MHz it does not.
        let fast = run(&cfg, &m).rpcacc;
        cfg.clock_mhz = 10.0;
        let m = messages(&cfg, &mut Engine).unwrap();
        let slow = run(&cfg, &m).rpcacc;
        let card = memaff_card_occupancy(&cfg, &m.response_accel, cfg.clock_mhz);
        assert!(card > 40_000.0, "{card}");
        assert_eq!((slow.cap_ns, slow.cap_by), (card, "serializer"));
        assert_eq!(slow.bound(16), "serializer");
        assert!(slow.rate(16) < 0.5 * fast.rate(16), "{slow:?} {fast:?}");
        // Every design names what caps it.
        let svc = run(&RpcAccConfig::default(), &m);
        assert!(
            svc.designs().iter().all(|d| !d.cap_by.is_empty()),
            "{svc:?}"
        );
    }

    #[test]
    fn every_mmio_to_the_card_takes_mmio_ns() {
        let base = RpcAccConfig::default();
        let mut far = base.clone();
        far.mmio_ns += 1000.0;
        let m = messages(&base, &mut Engine).unwrap();
        let (a, b) = (run(&base, &m), run(&far, &m));
        let host = |f: fn(&Service) -> Design| f(&b).host_ns - f(&a).host_ns;
        // ProtoACC-PCIe's core waits on `moveToAcc`'s MMIO and the compute unit's task;
        // RPCAcc's on the task; CPU-only crosses to no card.
        assert!((host(|s| s.protoacc_pcie) - 2000.0).abs() < 1e-6);
        assert!((host(|s| s.rpcacc) - 1000.0).abs() < 1e-6);
        assert_eq!(host(|s| s.cpu_only), 0.0);
        // `moveToCPU` and `moveToAcc` of a misplaced avatar each add one more.
        let moved = |cfg: &RpcAccConfig, cu: bool| {
            field_update_sequence(cfg, &m, &[cu], !cu, false)[0]
                .request
                .design
                .host_ns
        };
        assert!((moved(&far, true) - moved(&base, true) - 2000.0).abs() < 1e-6);
        assert!((moved(&far, false) - moved(&base, false) - 1000.0).abs() < 1e-6);
        assert!((b.preser_noskip_ns - a.preser_noskip_ns - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn waiting_for_the_serializer_costs_host_time_not_latency() {
        let cfg = RpcAccConfig::default();
        let m = messages(&cfg, &mut Engine).unwrap();
        let free = run(&cfg, &m);
        let mut waiting = cfg.clone();
        waiting.service.wait_for_accel_serializer = true;
        let blocked = run(&waiting, &m);
        let pp = (free.protoacc_pcie, blocked.protoacc_pcie);
        // The core waits for two PCIe crossings and the serializer's reads of the response.
        assert!(pp.1.host_ns > pp.0.host_ns + cfg.pcie.latency_ns, "{pp:?}");
        assert!((pp.1.latency_ns - pp.0.latency_ns).abs() < 1e-9, "{pp:?}");
        assert_eq!(free.rpcacc, blocked.rpcacc);
    }

    /// Fig. 11's two scenarios: the CU goes away after the third request (the avatar
    /// labelled "Acc"), or arrives at the fourth (the avatar in host memory).
    fn fig11(auto_update: bool) -> [Vec<FieldUpdateStep>; 2] {
        let cfg = RpcAccConfig::default();
        let m = messages(&cfg, &mut Engine).unwrap();
        let leaves: Vec<bool> = (0..8).map(|i| i < 3).collect();
        let arrives: Vec<bool> = (0..8).map(|i| i >= 3).collect();
        [
            field_update_sequence(&cfg, &m, &leaves, true, auto_update),
            field_update_sequence(&cfg, &m, &arrives, false, auto_update),
        ]
    }

    fn host(s: &FieldUpdateStep) -> f64 {
        s.request.design.host_ns
    }

    #[test]
    fn automatic_field_update_moves_the_field_once() {
        let cfg = RpcAccConfig::default();
        for (auto, fixed) in fig11(true).iter().zip(fig11(false).iter()) {
            // Before the switch the field is where the compression runs: nothing moves.
            assert!(auto[..3].iter().all(|s| !s.request.moved), "{auto:?}");
            assert_eq!(auto[..4], fixed[..4]);
            // The fourth request finds the avatar on the wrong side and moves it; with the
            // update, every later one is deserialized to the right side.
            assert!(auto[3].request.moved && fixed[3].request.moved);
            assert!(auto[4..].iter().all(|s| !s.request.moved), "{auto:?}");
            assert!(fixed[4..].iter().all(|s| s.request.moved), "{fixed:?}");
            // The handler's move costs at least a PCIe crossing of the avatar and a round
            // trip: "several microseconds" (§IV-G).
            let saved = host(&fixed[5]) - host(&auto[5]);
            let crossing = f64::from(cfg.service.avatar_bytes) / cfg.pcie.bw_gbytes_s;
            assert!(saved > crossing + cfg.pcie.latency_ns, "{saved}");
            assert!((host(&fixed[5]) - host(&auto[3])).abs() < 1e-6);
        }
        // After the update each scenario settles where the other one started.
        let [leaves, arrives] = fig11(true);
        assert_eq!(leaves[7].request, arrives[0].request);
        assert_eq!(arrives[7].request, leaves[0].request);
        // The first three requests of the first scenario are the service's RPCAcc requests.
        let m = messages(&cfg, &mut Engine).unwrap();
        assert_eq!(leaves[0].request.design, run(&cfg, &m).rpcacc);
    }

    #[test]
    fn bad_service_parameters_are_refused_by_name() {
        let refused = |edit: fn(&mut ServiceConfig)| {
            let mut cfg = RpcAccConfig::default();
            edit(&mut cfg.service);
            cfg.validate().unwrap_err().to_string()
        };
        assert!(refused(|s| s.avatar_bytes = 0).contains("avatar_bytes"));
        let huge = refused(|s| s.avatar_bytes = ServiceConfig::MAX_AVATAR_BYTES + 1);
        assert!(
            huge.contains("rpcacc.service") && huge.contains("avatar_bytes"),
            "{huge}"
        );
        // A ratio below one grows the image; past the bound it would be a huge allocation.
        assert!(refused(|s| s.compression_ratio = 1e-6).contains("compression_ratio"));
        assert!(refused(|s| s.compression_ratio = 0.0).contains("compression_ratio"));
        assert!(refused(|s| s.max_cores = 0).contains("max_cores"));
        assert!(refused(|s| s.same_load_share = 0.0).contains("same_load_share"));
        assert!(refused(|s| s.same_load_share = 1.0).contains("same_load_share"));
        assert!(refused(|s| s.same_load_share = f64::NAN).contains("same_load_share"));
        assert!(refused(|s| s.max_cores = MAX_HOST_CORES + 1).contains("1..=1024"));
        assert!(refused(|s| s.mmio_core_ns = -1.0).contains("mmio_core_ns"));
        assert!(refused(|s| s.cpu_compress_mbytes_s = f64::NAN).contains("cpu_compress"));
        let mut edge = RpcAccConfig::default();
        edge.service.avatar_bytes = ServiceConfig::MAX_AVATAR_BYTES;
        edge.validate().unwrap();
    }

    #[test]
    fn the_service_over_a_mix_of_avatars() {
        let mut cfg = RpcAccConfig::default();
        let traced = messages(&cfg, &mut Engine).unwrap();
        let single = mix(&cfg, &traced, &mut Engine).unwrap();
        assert_eq!(single, one_size(32768, run(&cfg, &traced)));
        cfg.service.avatar_mix = vec![
            AvatarShare {
                bytes: 8192,
                share: 3.0,
            },
            AvatarShare {
                bytes: 65536,
                share: 1.0,
            },
        ];
        let m = mix(&cfg, &traced, &mut Engine).unwrap();
        let shares: Vec<(u32, f64)> = m.sizes.iter().map(|s| (s.0, s.1)).collect();
        assert_eq!(shares, [(8192, 0.75), (65536, 0.25)]);
        // Each size is the service on that avatar; the mean lies between them, weighted.
        let mut small = cfg.clone();
        small.service.avatar_bytes = 8192;
        let small = run(&small, &messages(&small, &mut Engine).unwrap());
        assert_eq!(m.sizes[0].2, small);
        let (lo, hi) = (m.sizes[0].2.rpcacc, m.sizes[1].2.rpcacc);
        let mean = m.mean.rpcacc;
        assert!((mean.host_ns - (0.75 * lo.host_ns + 0.25 * hi.host_ns)).abs() < 1e-9);
        assert!(lo.latency_ns < mean.latency_ns && mean.latency_ns < hi.latency_ns);
        // The stream draws both sizes: its tail is the large avatar's.
        let [_, _, rpcacc] = m.variants();
        let l = under_load(&rpcacc, 16, 1e3, 20_000, 1).unwrap();
        assert!(
            l.p99_ns >= hi.latency_ns && l.mean_ns < hi.latency_ns,
            "{l:?}"
        );
    }

    #[test]
    fn bad_avatar_mixes_are_refused_by_name() {
        let refused = |mix: Vec<(u32, f64)>| {
            let mut cfg = RpcAccConfig::default();
            cfg.service.avatar_mix = mix
                .into_iter()
                .map(|(bytes, share)| AvatarShare { bytes, share })
                .collect();
            cfg.validate().map_err(|e| e.to_string())
        };
        assert!(refused(vec![(1, 1.0), (4096, 1e-3)]).is_ok());
        for (mix, why) in [
            (vec![(4096, 1.0), (0, 1.0)], "size 1: must be 1..="),
            (vec![(ServiceConfig::MAX_AVATAR_BYTES + 1, 1.0)], "size 0"),
            (vec![(4096, 0.0)], "share"),
            (vec![(4096, f64::NAN)], "share"),
            (vec![(4096, f64::INFINITY)], "share"),
            (
                vec![(4096, 1.0); ServiceConfig::MAX_MIX_SIZES + 1],
                "more than 64",
            ),
        ] {
            let e = refused(mix).unwrap_err();
            assert!(e.contains("avatar_mix") && e.contains(why), "{e}");
        }
        // The compression ratio must leave every size's image within bounds.
        let mut cfg = RpcAccConfig::default();
        cfg.service.compression_ratio = 0.5;
        cfg.service.avatar_mix = vec![AvatarShare {
            bytes: ServiceConfig::MAX_AVATAR_BYTES,
            share: 1.0,
        }];
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.contains("compression_ratio"), "{e}");
    }

    #[test]
    fn a_bigger_avatar_costs_more_everywhere() {
        let small = RpcAccConfig::default();
        let mut big = small.clone();
        big.service.avatar_bytes *= 4;
        let a = run(&small, &messages(&small, &mut Engine).unwrap());
        let b = run(&big, &messages(&big, &mut Engine).unwrap());
        for (x, y) in [
            (a.cpu_only, b.cpu_only),
            (a.protoacc_pcie, b.protoacc_pcie),
            (a.rpcacc, b.rpcacc),
        ] {
            assert!(y.host_ns > x.host_ns && y.latency_ns > x.latency_ns);
        }
    }
}
