//! The host CPU's part of serialization: software serialization, RPCAcc's pre-serialization
//! (§III-C) and the host time of Fig. 6's offload schemes.

use serde::Serialize;

use optimus_trace::Region;

use super::{RpcAccConfig, RpcMessage};

/// Host CPU time in ns of a full software serialization.
pub fn cpu_ser_ns(cfg: &RpcAccConfig, m: &RpcMessage) -> f64 {
    cfg.cpu.message_ns(&m.ser_trace)
}

/// Bytes of host-resident field data per item of `m`'s serialization (schema reads and
/// accelerator-resident fields excluded): what pre-serialization copies.
pub(super) fn host_field_bytes(m: &RpcMessage) -> impl Iterator<Item = u32> + '_ {
    m.ser.items.iter().map(|it| {
        (it.first_access..it.end_access)
            .map(|a| m.ser.accesses[a as usize])
            .filter(|a| !a.is_schema && a.region != Region::Accel)
            .map(|a| a.bytes)
            .sum()
    })
}

/// Bytes of `m`'s pre-serialized buffer: its host fields' data and an 8-byte header per field.
pub(super) fn preser_bytes(m: &RpcMessage) -> f64 {
    host_field_bytes(m).map(f64::from).sum::<f64>() + 8.0 * m.ser.items.len() as f64
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

/// Host CPU time (ns) of one message's serialization under Fig. 6's three schemes. With the
/// memcpy engine, the core rings the card only once the engine's copies are done (§III-C:
/// "Upon finishing, the software uses an MMIO write"), so its time lasts until the later of
/// its own work and the engine's, as in the image service, the gateway and BF3-DSA.
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
/// field the memcpy engine takes (at least `dsa_threshold_bytes`), plus its submissions, or
/// the engine's copies where they take longer; pre-serialization likewise.
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
    // The engine takes the same copies in both schemes.
    let (pre, engine) = preser_ns(cfg, m, true);
    let core = (software - saved_instr / cfg.cpu.ipc / cfg.cpu.clock_ghz).max(0.0) + submit_ns;
    HostCycles {
        software,
        memcpy_offload: core.max(engine),
        memcpy_encoding_offload: pre.max(engine),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpcacc::suite;
    use optimus_core::binary::EngineTraces as Engine;
    #[test]
    fn offloads_cut_host_time_in_order() {
        let cfg = RpcAccConfig::default();
        let msgs = suite(&cfg, &mut Engine).unwrap();
        for m in msgs.iter().step_by(7) {
            let h = host_cycles(&cfg, m);
            assert!(h.memcpy_offload <= h.software, "{h:?}");
            // Encoding offload saves the core's encoding where the core's work binds it; where
            // the memcpy engine's copies outlast that work, it takes as long as they do.
            let engine = preser_ns(&cfg, m, true).1;
            if h.memcpy_encoding_offload > engine {
                assert!(h.memcpy_encoding_offload < h.memcpy_offload, "{h:?}");
            } else {
                assert!(h.memcpy_encoding_offload <= h.memcpy_offload, "{h:?}");
            }
        }
        // The core rings the card once the engine is done: a message of long strings keeps
        // the core as long as the engine takes to copy them.
        let m = msgs.iter().max_by_key(|m| m.ser.wire_bytes).unwrap();
        let (pre, engine) = preser_ns(&cfg, m, true);
        assert!(engine > pre, "{engine} {pre}");
        let h = host_cycles(&cfg, m);
        assert_eq!(h.memcpy_encoding_offload, engine);
        assert!(h.memcpy_offload >= engine, "{h:?}");
    }
}
