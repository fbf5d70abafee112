//! RPCAcc's target-aware deserializer (§III-B) and ProtoACC's field-by-field one: lanes
//! parsing, results crossing PCIe per field or per Temp Buffer flush through the DMA engine,
//! and the chunk allocator.

use serde::Serialize;

use optimus_trace::Region;

use super::{RpcAccConfig, RpcMessage};
use crate::program::Program;

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
    /// Bytes the deserialized message occupies (field by field: all in host memory).
    pub output_bytes: f64,
    /// Of those, the bytes of fields labelled "Acc", which the target-aware (one-shot)
    /// deserializer writes to card memory instead of the Temp Buffer.
    pub accel_bytes: f64,
    /// DMA write transactions field by field: one per field written.
    pub fbf_dma_writes: f64,
    /// DMA write transactions one-shot: one per Temp Buffer flush of host-memory fields.
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

/// Deserialization throughput and latency of `m`; latencies use `link` one-way. Field by
/// field (ProtoACC), every field lands in host memory; one-shot (RPCAcc's target-aware
/// deserializer), fields labelled "Acc" go to card memory, in parallel with the Temp Buffer's
/// flushes of the rest across the link.
pub fn deser_times(
    cfg: &RpcAccConfig,
    m: &RpcMessage,
    link_one_way_ns: f64,
    link_bw: f64,
    clock_mhz: f64,
) -> DeserTimes {
    let p = &m.deser;
    let parse = parse_ns(cfg, p, clock_mhz);
    let writes: Vec<u32> = p.write_sizes().collect();
    let out: f64 = writes.iter().map(|&b| f64::from(b)).sum();
    let (accel_writes, accel_bytes) = p
        .items
        .iter()
        .flat_map(|i| &i.writes)
        .filter(|w| w.0 == Region::Accel)
        .fold((0.0, 0.0), |(n, b), w| (n + 1.0, b + f64::from(w.2)));
    let host_out = out - accel_bytes;
    let bw = cfg.pcie.bw_gbytes_s;
    let dma_fbf = writes.len() as f64 * cfg.dma_txn_ns + out / bw;
    let chunks = (host_out / f64::from(cfg.temp_buffer_bytes))
        .ceil()
        .max(1.0);
    let last_flush = host_out - f64::from(cfg.temp_buffer_bytes) * (chunks - 1.0);
    let dma_one = chunks * cfg.dma_txn_ns + host_out / bw;
    let to_card_memory = accel_writes * cfg.local_txn_ns + accel_bytes / cfg.accel_mem.bw_gbytes_s;
    let dma_local = writes.len() as f64 * cfg.local_txn_ns + out / cfg.accel_mem.bw_gbytes_s;
    let lanes = f64::from(cfg.deser_lanes);
    // Lanes parse in parallel; the DMA engine is shared.
    let rate = |dma: f64| (lanes / parse).min(1.0 / dma) * 1000.0;
    let last = writes.last().copied().unwrap_or(0) as f64;
    DeserTimes {
        fbf_host_rate: rate(dma_fbf),
        oneshot_host_rate: rate(dma_one.max(to_card_memory)),
        fbf_local_rate: rate(dma_local),
        fbf_latency_ns: parse + link_one_way_ns + last / link_bw,
        // A full Temp Buffer is flushed while parsing goes on (§III-B: "When the buffer is
        // full or the current RPC request's deserialization is finished"); only the last,
        // partial flush follows the end of parsing. Card-memory writes stream while parsing.
        oneshot_latency_ns: parse + link_one_way_ns + last_flush / link_bw,
        output_bytes: out,
        accel_bytes,
        fbf_dma_writes: writes.len() as f64,
        oneshot_dma_writes: chunks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use optimus_trace::Direction;

    use crate::rpcacc::{prepare, suite};
    use crate::workload::MessageTrace;
    use optimus_core::binary::EngineTraces as Engine;
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
        let placed: Vec<(Region, u32)> = objects.iter().map(|&b| (Region::Message, b)).collect();
        deser_writes_in(&placed)
    }

    /// A message whose deserialization writes `objects` (memory, bytes), apart.
    fn deser_writes_in(objects: &[(Region, u32)]) -> RpcMessage {
        let trace = MessageTrace {
            events: Vec::new(),
            wire_bytes: 0,
            direction: Direction::Decode,
        };
        let mut m = prepare("t", 0, trace.clone(), trace, 0.0);
        let mut at = 0u64;
        for &(region, b) in objects {
            m.deser.items.push(crate::program::Item {
                writes: vec![(region, at, b)],
                ..Default::default()
            });
            at += u64::from(b) + 4096;
        }
        m
    }

    #[test]
    fn labelled_fields_bypass_the_temp_buffer() {
        let cfg = RpcAccConfig::default();
        let m = deser_writes_in(&[(Region::Message, 1000), (Region::Accel, 64_000)]);
        let d = deser_times(&cfg, &m, 625.0, 12.8, 250.0);
        let parse = 16.0;
        // One-shot: the 1000 host bytes leave in one flush; the 64 KB go to card memory
        // while parsing, and bound the rate at the card memory's bandwidth.
        assert_eq!((d.oneshot_dma_writes, d.accel_bytes), (1.0, 64_000.0));
        assert!((d.oneshot_latency_ns - (parse + 625.0 + 1000.0 / 12.8)).abs() < 1e-9);
        let card = cfg.local_txn_ns + 64_000.0 / cfg.accel_mem.bw_gbytes_s;
        assert!((d.oneshot_host_rate - 1000.0 / card).abs() < 1e-9, "{d:?}");
        // Field by field, ProtoACC writes both across PCIe.
        assert_eq!((d.fbf_dma_writes, d.output_bytes), (2.0, 65_000.0));
        assert!((d.fbf_host_rate - 1000.0 / (2.0 * 12.0 + 65_000.0 / 12.8)).abs() < 1e-9);
        // Host chunks hold only host objects.
        assert_eq!(chunk_use(&cfg, &m, 250.0).used_bytes, 1000);
    }

    #[test]
    fn chunks_hold_whole_objects() {
        let cfg = RpcAccConfig::default();
        // 3000 B fit the pre-allocated chunk; 2000 B do not fit its last 1096 B.
        let c = chunk_use(&cfg, &deser_writes(&[3000, 2000]), 250.0);
        assert_eq!((c.chunks, c.used_bytes, c.allocated_bytes), (2, 5000, 8192));
        // Two pops at 4 ns.
        assert!((c.alloc_ns - 8.0).abs() < 1e-9);
        // An object larger than a chunk takes fresh chunks of its own.
        let c = chunk_use(&cfg, &deser_writes(&[8, 9000]), 250.0);
        assert_eq!((c.chunks, c.used_bytes), (4, 9008));
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

    #[test]
    fn one_message_deserializes_in_the_time_its_stages_add_up_to() {
        let cfg = RpcAccConfig::default();
        // Two fields writing 1000 B and 24 B: a lane parses them in 2 x 2 cycles of 4 ns.
        let d = deser_times(&cfg, &deser_writes(&[1000, 24]), 625.0, 12.8, 250.0);
        let parse = 16.0;
        // Latency: parsing, the PCIe crossing, then the last write's bytes (field by field)
        // or the one Temp Buffer flush of all 1024 B (one-shot).
        assert!((d.fbf_latency_ns - (parse + 625.0 + 24.0 / 12.8)).abs() < 1e-9);
        assert!((d.oneshot_latency_ns - (parse + 625.0 + 1024.0 / 12.8)).abs() < 1e-9);
        // Rate: four lanes parse a message every 4 ns, so the DMA engine bounds it: 12 ns a
        // transaction (two field by field, one one-shot) plus 80 ns of bytes.
        assert!((d.fbf_host_rate - 1000.0 / (2.0 * 12.0 + 80.0)).abs() < 1e-9);
        assert!((d.oneshot_host_rate - 1000.0 / (12.0 + 80.0)).abs() < 1e-9);
        assert_eq!((d.fbf_dma_writes, d.oneshot_dma_writes), (2.0, 1.0));
    }
}
