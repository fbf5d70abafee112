//! The host CPU's part of serialization: software serialization, RPCAcc's pre-serialization
//! (§III-C) and the host time of Fig. 6's offload schemes.

use serde::Serialize;

use optimus_trace::{class_of, Region};

use super::{RpcAccConfig, RpcMessage};

/// Host CPU time in ns of a full software serialization.
pub fn cpu_ser_ns(cfg: &RpcAccConfig, m: &RpcMessage) -> f64 {
    cfg.cpu.message_ns(&m.ser_trace)
}

/// One field as pre-serialization walks it: a value, or all the values of a list of
/// scalars, which lie in one array in the message object (a `RepeatedField`) and go into the
/// buffer as one copy under one header. A list of strings, bytes or sub-messages is a list of
/// objects of their own, each walked as a field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct HostField {
    /// Bytes of its host-resident data (schema reads and accelerator-resident data
    /// excluded): what pre-serialization copies.
    pub bytes: u64,
    /// Software serialization copies it as it is (strings, bytes, fixed-width values, unknown
    /// fields), so the memcpy engine can take the copy from it; varints it encodes value by
    /// value.
    pub copied: bool,
}

/// The fields of `m`'s serialization as pre-serialization walks them, in order.
pub(super) fn host_fields(m: &RpcMessage) -> Vec<HostField> {
    let mut fields: Vec<HostField> = Vec::with_capacity(m.ser.items.len());
    for it in &m.ser.items {
        let bytes: u64 = (it.first_access..it.end_access)
            .map(|a| m.ser.accesses[a as usize])
            .filter(|a| !a.is_schema && a.region != Region::Accel)
            .map(|a| u64::from(a.bytes))
            .sum();
        let copied = it.converts.iter().all(|&(op, _)| class_of(op).is_copy());
        match fields.last_mut() {
            Some(f) if it.continues_scalar_list() => {
                f.bytes += bytes;
                f.copied &= copied;
            }
            _ => fields.push(HostField { bytes, copied }),
        }
    }
    fields
}

/// Bytes of `m`'s pre-serialized buffer: its host fields' data and an 8-byte header per field.
pub(super) fn preser_bytes(m: &RpcMessage) -> f64 {
    buffer_bytes(&host_fields(m))
}

/// Bytes of the pre-serialized buffer of `fields`: their data and an 8-byte header each.
pub(super) fn buffer_bytes(fields: &[HostField]) -> f64 {
    fields.iter().map(|f| f.bytes as f64).sum::<f64>() + 8.0 * fields.len() as f64
}

/// Host CPU time in ns of pre-serialization (no encoding; large host fields to the memcpy
/// engine; accelerator-resident fields skipped), and the memcpy engine's time.
pub fn preser_ns(cfg: &RpcAccConfig, m: &RpcMessage, use_dsa: bool) -> (f64, f64) {
    let mut instr = 0.0;
    let mut dsa = 0.0;
    let mut host_ns = 0.0;
    for HostField {
        bytes: host_bytes, ..
    } in host_fields(m)
    {
        instr += cfg.preser_per_field;
        if use_dsa && host_bytes >= u64::from(cfg.dsa_threshold_bytes) {
            host_ns += cfg.dsa_submit_ns;
            dsa += host_bytes as f64 / cfg.dsa_bw_gbytes_s;
        } else {
            instr += cfg.cpu.per_copy_byte * host_bytes as f64;
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
    for HostField {
        bytes: host_bytes,
        copied,
    } in host_fields(m)
    {
        if copied && host_bytes >= u64::from(cfg.dsa_threshold_bytes) {
            saved_instr += cfg.cpu.per_copy_byte * host_bytes as f64;
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
    use crate::rpcacc::prepare;
    use crate::rpcacc::suite;
    use optimus_core::binary::EngineTraces as Engine;
    use optimus_trace::{kind, Repetition};

    fn encoded(fields: &[(u16, Repetition, &[u32])]) -> RpcMessage {
        let trace = crate::program::encode_of(fields);
        prepare("t", 0, trace.clone(), trace, 0.0)
    }

    #[test]
    fn a_list_of_scalars_is_pre_serialized_as_one_field() {
        use Repetition::{Packed, Repeated, Single};
        let m = encoded(&[
            (kind::INT32, Packed, &[4; 300]),
            (kind::DOUBLE, Repeated, &[8; 3]),
            (kind::STRING, Repeated, &[1500, 20]),
            (kind::INT32, Single, &[4]),
            (kind::FIXED32, Single, &[4]),
        ]);
        let f = |bytes, copied| HostField { bytes, copied };
        // The packed list's 300 values are one array, the unpacked doubles another; each
        // string is an object of its own.
        assert_eq!(
            host_fields(&m),
            [
                f(1200, false),
                f(24, true),
                f(1500, true),
                f(20, true),
                f(4, false),
                f(4, true)
            ]
        );
        assert_eq!(preser_bytes(&m), 2752.0 + 6.0 * 8.0);
        let cfg = RpcAccConfig::default();
        // Pre-serialization copies the packed array raw, so the memcpy engine takes it and
        // the long string; the core walks six fields and copies the rest.
        let (pre, engine) = preser_ns(&cfg, &m, true);
        let core = 6.0 * cfg.preser_per_field + (24.0 + 20.0 + 8.0) * cfg.cpu.per_copy_byte;
        assert!(
            (pre - 2.0 * cfg.dsa_submit_ns - core / cfg.cpu.ipc / cfg.cpu.clock_ghz).abs() < 1e-9
        );
        assert!((engine - 2700.0 / cfg.dsa_bw_gbytes_s).abs() < 1e-9);
        // Software serialization encodes the int32s value by value: memcpy offload takes the
        // string alone.
        let saved = 1500.0 * cfg.cpu.per_copy_byte / cfg.cpu.ipc / cfg.cpu.clock_ghz;
        let core = cpu_ser_ns(&cfg, &m) - saved + cfg.dsa_submit_ns;
        assert!((host_cycles(&cfg, &m).memcpy_offload - core).abs() < 1e-9);
    }

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
