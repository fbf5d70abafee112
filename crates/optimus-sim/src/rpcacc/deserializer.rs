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
    /// Host-memory chunks popped from their free list: the pre-allocated one plus one per
    /// exhaustion.
    pub chunks: u64,
    /// Bytes the message's deserialized objects occupy in host memory (each object rounded
    /// up to 8).
    pub used_bytes: u64,
    /// Bytes of the host chunks it holds (`chunks * chunk_bytes`).
    pub allocated_bytes: u64,
    /// Accelerator-memory chunks popped from their free list: the pre-allocated one plus one
    /// per exhaustion by the fields labelled "Acc".
    pub accel_chunks: u64,
    /// Accelerator time (ns) spent popping chunks, host and accelerator ones.
    pub alloc_ns: f64,
}

/// Where the chunk allocator puts a message's objects of one memory (host or accelerator)
/// in the chunks it pops for them (§III-B). The deserializer pre-allocates a chunk per
/// message and appends the objects (maximal runs of contiguous writes, as the
/// deserialization program writes them) to it; an object that does not fit the rest of the
/// chunk starts a new one (chunks come from a FIFO, so consecutive chunks need not be
/// contiguous), and one larger than a chunk takes as many fresh chunks as it needs. A
/// byte's *position* is its chunk's index times the chunk size plus its offset in the chunk.
struct ChunkPlacement {
    /// Per object, in address order: its first address, and its first byte's position.
    objects: Vec<(u64, u64)>,
    /// Chunks popped, the pre-allocated one included.
    chunks: u64,
    /// Bytes the objects occupy, each rounded up to 8.
    used_bytes: u64,
}

/// Whether a deserialization write to `region` lands in card memory (a field labelled
/// "Acc") rather than in host memory through the Temp Buffer.
fn to_card_memory(region: Region) -> bool {
    region == Region::Accel
}

impl ChunkPlacement {
    /// The placement in chunks of `chunk_bytes` of program `p`'s writes to card memory
    /// (`card`) or to host memory (every other write).
    fn of(p: &Program, card: bool, chunk_bytes: u64) -> Self {
        let mut writes: Vec<(u64, u64)> = p
            .items
            .iter()
            .flat_map(|i| i.writes.iter())
            .filter(|w| to_card_memory(w.0) == card)
            .map(|w| (w.1, w.1.saturating_add(u64::from(w.2))))
            .collect();
        writes.sort_unstable();
        // Objects: maximal runs of contiguous writes, as `(first address, end)`.
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for (lo, hi) in writes {
            match runs.last_mut() {
                Some((_, b)) if lo <= b.next_multiple_of(8) => *b = (*b).max(hi),
                _ => runs.push((lo, hi)),
            }
        }
        let mut chunks = 1u64;
        let mut left = chunk_bytes;
        let mut used_bytes = 0u64;
        let mut objects = Vec::with_capacity(runs.len());
        for (lo, hi) in runs {
            let o = (hi - lo).next_multiple_of(8);
            used_bytes += o;
            let position = if o <= left {
                let at = chunks * chunk_bytes - left;
                left -= o;
                at
            } else if o <= chunk_bytes {
                chunks += 1;
                left = chunk_bytes - o;
                (chunks - 1) * chunk_bytes
            } else {
                let n = o.div_ceil(chunk_bytes);
                let at = chunks * chunk_bytes;
                chunks += n;
                left = n * chunk_bytes - o;
                at
            };
            objects.push((lo, position));
        }
        ChunkPlacement {
            objects,
            chunks,
            used_bytes,
        }
    }

    /// The position of the written byte at `address`.
    fn position(&self, address: u64) -> u64 {
        let object = self.objects.partition_point(|o| o.0 <= address) - 1;
        let (first, position) = self.objects[object];
        position + (address - first)
    }
}

/// Whether `chunk` is touched for the first time, marking it in `touched` (grown as needed:
/// a write that runs past the end of the address space runs past its placed object).
fn first_touch(touched: &mut Vec<bool>, chunk: u64) -> bool {
    let i = chunk as usize;
    if i >= touched.len() {
        touched.resize(i + 1, false);
    }
    !std::mem::replace(&mut touched[i], true)
}

/// Accelerator time (ns) of one pop from a free-list FIFO at `clock_mhz`.
fn pop_ns(cfg: &RpcAccConfig, clock_mhz: f64) -> f64 {
    cfg.chunk_pop_cycles * 1000.0 / clock_mhz
}

impl ChunkUse {
    /// The chunk allocator's work for a message whose host and accelerator objects are
    /// placed as `host` and `accel`, in chunks of `chunk_bytes`, each pop taking `pop_ns`.
    /// The chunks go back to the FIFO when the message is freed, so the rest of the last
    /// host chunk is the message's fragmentation.
    fn of(host: &ChunkPlacement, accel: &ChunkPlacement, chunk_bytes: u64, pop_ns: f64) -> Self {
        ChunkUse {
            chunks: host.chunks,
            used_bytes: host.used_bytes,
            allocated_bytes: host.chunks * chunk_bytes,
            accel_chunks: accel.chunks,
            alloc_ns: (host.chunks + accel.chunks) as f64 * pop_ns,
        }
    }
}

/// §III-B's chunk allocation time share ("0.68% of the total deserialization time"), in %:
/// the one-shot lanes' time popping chunks ([`ChunkUse::alloc_ns`]) over their time
/// deserializing the same messages ([`DeserTimes::oneshot_lane_ns`]: parsing, popping and
/// waiting for flushes; not the PCIe crossing after it), each summed over the messages.
pub fn chunk_alloc_share_pct(times: &[DeserTimes]) -> f64 {
    let popping: f64 = times.iter().map(|d| d.chunks.alloc_ns).sum();
    let deserializing: f64 = times.iter().map(|d| d.oneshot_lane_ns).sum();
    100.0 * popping / deserializing
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
    /// Time (ns) one one-shot lane is busy with the message: parsing, popping chunks, and
    /// (with [`RpcAccConfig::flush_stalls_parsing`]) waiting for its Temp Buffer to empty.
    pub oneshot_lane_ns: f64,
    /// The one-shot lane's chunk allocation: objects labelled "Acc" placed in accelerator
    /// chunks and every other in host chunks, a chunk of each memory pre-allocated per
    /// message (§III-B: "The deserializer first pre-allocates a host CPU memory chunk and an
    /// accelerator off-chip memory chunk"; `ChunkPlacement`).
    pub chunks: ChunkUse,
}

/// Time (ns) for one deserializer lane to parse program `p` at `clock_mhz`: its fields at
/// `cycles_per_field` and its input at `encode_bits_per_cycle`.
fn parse_ns(cfg: &RpcAccConfig, p: &Program, clock_mhz: f64) -> f64 {
    let cyc = 1000.0 / clock_mhz;
    (p.items.len() as f64 * cfg.cycles_per_field
        + p.wire_bytes as f64 * 8.0 / cfg.encode_bits_per_cycle)
        * cyc
}

/// The interconnect a deserialized message crosses to host memory, as its latency is timed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeserLink {
    /// One way (ns).
    pub one_way_ns: f64,
    /// Bandwidth (GB/s = bytes per ns).
    pub bw_gbytes_s: f64,
    /// The DMA engine's time per write transaction (ns).
    pub txn_ns: f64,
}

impl DeserLink {
    /// PCIe, through the card's DMA engine (`dma_txn_ns` a write).
    pub fn pcie(cfg: &RpcAccConfig) -> Self {
        DeserLink {
            one_way_ns: cfg.pcie.latency_ns / 2.0,
            bw_gbytes_s: cfg.pcie.bw_gbytes_s,
            txn_ns: cfg.dma_txn_ns,
        }
    }

    /// UPI as §IV-E times Dagger's deserialization: one-way latency and bandwidth, and no
    /// cost per transaction ("how the PCIe/UPI transaction rate varies according to the data
    /// size is not known"; "the deserialization latency can be accurately simulated with
    /// one-way UPI latency").
    pub fn upi(cfg: &RpcAccConfig) -> Self {
        DeserLink {
            one_way_ns: cfg.upi.latency_ns / 2.0,
            bw_gbytes_s: cfg.upi.bw_gbytes_s,
            txn_ns: 0.0,
        }
    }
}

/// When one lane, parsing `p` from time 0, has each item's input in hand: `(start, end)` ns.
/// The input is the item's reads of the serialized buffer, scaled so that the whole message
/// takes [`parse_ns`].
pub(super) fn item_spans(cfg: &RpcAccConfig, p: &Program, clock_mhz: f64) -> Vec<(f64, f64)> {
    let cyc = 1000.0 / clock_mhz;
    let input: Vec<f64> = p
        .items
        .iter()
        .map(|it| {
            p.accesses[it.first_access as usize..it.end_access as usize]
                .iter()
                .filter(|a| a.region == Region::Buffer)
                .map(|a| f64::from(a.bytes))
                .sum()
        })
        .collect();
    let total: f64 = input.iter().sum();
    let wire = p.wire_bytes as f64;
    let items = p.items.len() as f64;
    let mut t = 0.0;
    input
        .iter()
        .map(|&b| {
            let bytes = if total > 0.0 {
                b * wire / total
            } else {
                wire / items
            };
            let start = t;
            t += (cfg.cycles_per_field + bytes * 8.0 / cfg.encode_bits_per_cycle) * cyc;
            (start, t)
        })
        .collect()
}

/// Bytes of the completion a deserializer writes to the host's receive ring once a message
/// has landed (§III-B: "the accelerator then notifies the host CPU"): a descriptor.
pub(super) const COMPLETION_BYTES: f64 = 16.0;

/// One serial DMA engine (or link): each transfer starts when it is ready and the engine is
/// free, and holds it for the transaction cost plus its bytes over the bandwidth.
pub(super) struct DmaQueue {
    /// When the last transfer so far has been sent (ns).
    pub free_at: f64,
    txn_ns: f64,
    bw: f64,
}

impl DmaQueue {
    /// An idle engine at time 0.
    pub fn new(txn_ns: f64, bw_gbytes_s: f64) -> Self {
        DmaQueue {
            free_at: 0.0,
            txn_ns,
            bw: bw_gbytes_s,
        }
    }

    /// Sends `bytes` once they are ready at `ready` ns.
    pub fn send(&mut self, ready: f64, bytes: f64) {
        self.free_at = self.free_at.max(ready) + self.txn_ns + bytes / self.bw;
    }
}

/// A one-shot lane's Temp Buffer (§III-B): the bytes it holds, the host chunk they belong
/// to, and the DMA writes that have emptied it so far.
#[derive(Default)]
struct TempBuffer {
    held: u64,
    chunk: u64,
    flushes: u64,
}

impl TempBuffer {
    /// Writes what the buffer holds out over `engine`, ready `delay` after the parsing time
    /// `now`. A lane whose parsing stops for the flush (`stalls`) then runs as far behind
    /// its parsing as the engine is behind `now`.
    fn flush(&mut self, engine: &mut DmaQueue, now: f64, delay: &mut f64, stalls: bool) {
        engine.send(now + *delay, self.held as f64);
        self.flushes += 1;
        self.held = 0;
        if stalls {
            *delay = engine.free_at - now;
        }
    }
}

/// Deserialization throughput and latency of `m`. Throughput: the lanes parse in parallel
/// and share the card's DMA engine over PCIe. Latency: one lane parses the message while
/// the DMA engine sends what it has written over `link`, in order, each transfer once its
/// bytes are parsed; the message has landed when the last transfer has crossed. Field by
/// field (ProtoACC), every field lands in host memory, a transfer each. One-shot (RPCAcc's
/// target-aware deserializer, §III-B), the lane pops its pre-allocated host and accelerator
/// chunks before parsing and a fresh chunk whenever its objects (`ChunkPlacement`) reach one,
/// each pop taking `chunk_pop_cycles` of its time; the Temp Buffer is sent when full, when
/// the bytes appended next belong to another host chunk than those it holds ("When
/// exhausting pre-allocated host CPU memory chunks, the deserializer additionally uses a DMA
/// write to flash the Temp Buffer"), and at the end; fields labelled "Acc" go to card
/// memory beside it.
pub fn deser_times(
    cfg: &RpcAccConfig,
    m: &RpcMessage,
    link: DeserLink,
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
        .filter(|w| to_card_memory(w.0))
        .fold((0.0, 0.0), |(n, b), w| (n + 1.0, b + f64::from(w.2)));
    let host_out = out - accel_bytes;
    let bw = cfg.pcie.bw_gbytes_s;
    let dma_fbf = writes.len() as f64 * cfg.dma_txn_ns + out / bw;
    let buffer = u64::from(cfg.temp_buffer_bytes);
    let card_memory_ns = accel_writes * cfg.local_txn_ns + accel_bytes / cfg.accel_mem.bw_gbytes_s;
    let dma_local = writes.len() as f64 * cfg.local_txn_ns + out / cfg.accel_mem.bw_gbytes_s;
    let lanes = f64::from(cfg.deser_lanes);
    // Lanes parse in parallel, each busy `lane` ns a message; the DMA engine is shared.
    let rate = |lane: f64, dma: f64| (lanes / lane).min(1.0 / dma) * 1000.0;

    let chunk = u64::from(cfg.chunk_bytes);
    let host_chunks = ChunkPlacement::of(p, false, chunk);
    let accel_chunks = ChunkPlacement::of(p, true, chunk);
    let pop = pop_ns(cfg, clock_mhz);
    // Which chunks the lane holds: the pre-allocated first of each memory, then each one
    // popped when its first byte is placed.
    let mut host_popped = vec![false; host_chunks.chunks as usize];
    let mut accel_popped = vec![false; accel_chunks.chunks as usize];
    host_popped[0] = true;
    accel_popped[0] = true;

    let mut fbf = DmaQueue::new(link.txn_ns, link.bw_gbytes_s);
    let mut oneshot = DmaQueue::new(link.txn_ns, link.bw_gbytes_s);
    let mut card = DmaQueue::new(cfg.local_txn_ns, cfg.accel_mem.bw_gbytes_s);
    let mut temp = TempBuffer::default();
    // How far the one-shot lane runs behind its parsing alone: its chunk pops, and the
    // waits for its Temp Buffer to empty ([`RpcAccConfig::flush_stalls_parsing`]). The
    // pre-allocation pops come first.
    let mut delay = 2.0 * pop;
    for (it, (start, end)) in p.items.iter().zip(item_spans(cfg, p, clock_mhz)) {
        let item_bytes: f64 = it.writes.iter().map(|w| f64::from(w.2)).sum();
        // The bytes parsed so far: the buffer fills part-way through a long field, at the
        // share of the field's parsing that its bytes so far take.
        let mut done = 0.0;
        let at = |bytes: f64| start + (end - start) * bytes / item_bytes.max(1.0);
        for &(region, address, b) in &it.writes {
            fbf.send(end, f64::from(b));
            if to_card_memory(region) {
                let placed = accel_chunks.position(address);
                let first = placed / chunk;
                let last = (placed + u64::from(b).max(1) - 1) / chunk;
                for c in first..=last {
                    if first_touch(&mut accel_popped, c) {
                        delay += pop;
                    }
                }
                card.send(end + delay, f64::from(b));
                done += f64::from(b);
                continue;
            }
            let mut position = host_chunks.position(address);
            let mut left = u64::from(b);
            while left > 0 {
                let c = position / chunk;
                // The Temp Buffer holds one host chunk's bytes: a DMA write lands them in
                // their chunk before the next chunk's are appended.
                if temp.held > 0 && c != temp.chunk {
                    temp.flush(&mut oneshot, at(done), &mut delay, cfg.flush_stalls_parsing);
                }
                if first_touch(&mut host_popped, c) {
                    delay += pop;
                }
                temp.chunk = c;
                let take = left.min(buffer - temp.held).min((c + 1) * chunk - position);
                temp.held += take;
                left -= take;
                position += take;
                done += take as f64;
                if temp.held == buffer {
                    temp.flush(&mut oneshot, at(done), &mut delay, cfg.flush_stalls_parsing);
                }
            }
        }
    }
    if temp.held > 0 || temp.flushes == 0 {
        // The last, partial buffer: nothing is parsed after it to stall.
        temp.flush(&mut oneshot, parse, &mut delay, false);
    }
    // A lane that waits for its flushes is busy until its last one has left.
    let oneshot_lane = if cfg.flush_stalls_parsing {
        oneshot.free_at.max(parse + delay)
    } else {
        parse + delay
    };
    let dma_one = temp.flushes as f64 * cfg.dma_txn_ns + host_out / bw;
    // The completion that notifies the host, written after the message's last byte.
    let completion = cfg.dma_txn_ns + COMPLETION_BYTES / bw;
    fbf.send(parse, COMPLETION_BYTES);
    oneshot.send(card.free_at, COMPLETION_BYTES);
    DeserTimes {
        fbf_host_rate: rate(parse, dma_fbf + completion),
        oneshot_host_rate: rate(oneshot_lane, (dma_one + completion).max(card_memory_ns)),
        fbf_local_rate: rate(parse, dma_local),
        fbf_latency_ns: fbf.free_at + link.one_way_ns,
        oneshot_latency_ns: oneshot.free_at + link.one_way_ns,
        oneshot_lane_ns: oneshot_lane,
        chunks: ChunkUse::of(&host_chunks, &accel_chunks, chunk, pop),
        output_bytes: out,
        accel_bytes,
        fbf_dma_writes: writes.len() as f64,
        oneshot_dma_writes: temp.flushes as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use optimus_trace::Direction;

    use crate::rpcacc::{prepare, suite, LinkConfig};
    use crate::workload::MessageTrace;
    use optimus_core::binary::EngineTraces as Engine;

    /// The completion's write in the worked examples: a 12 ns transaction and 16 B at
    /// 12.8 GB/s across PCIe; over UPI the 16 B alone at 19.2 GB/s.
    const PCIE_COMPLETION: f64 = 12.0 + COMPLETION_BYTES / 12.8;
    const UPI_COMPLETION: f64 = COMPLETION_BYTES / 19.2;
    #[test]
    fn oneshot_beats_field_by_field() {
        let cfg = RpcAccConfig::default();
        let mut fewer = 0;
        for m in &suite(&cfg, &mut Engine).unwrap() {
            let d = deser_times(&cfg, m, DeserLink::pcie(&cfg), 250.0);
            // One-shot's 4 KB flushes outnumber the writes of a message of a few long
            // strings; where they do not, it is at least as fast.
            if d.oneshot_dma_writes <= d.fbf_dma_writes {
                fewer += 1;
                assert!(
                    d.oneshot_host_rate >= d.fbf_host_rate,
                    "{} {}",
                    m.bench,
                    m.index
                );
            }
            assert!(d.fbf_local_rate >= d.fbf_host_rate);
        }
        assert!(fewer > 30, "{fewer}");
        assert!(RpcAccConfig {
            deser_lanes: 0,
            ..Default::default()
        }
        .validate()
        .is_err());
    }

    /// The chunk allocation of deserializing `m` one-shot over PCIe at `clock_mhz`.
    fn chunk_use(cfg: &RpcAccConfig, m: &RpcMessage, clock_mhz: f64) -> ChunkUse {
        deser_times(cfg, m, DeserLink::pcie(cfg), clock_mhz).chunks
    }

    /// A message whose deserialization writes `objects` (bytes each) to host memory, apart.
    fn deser_writes(objects: &[u32]) -> RpcMessage {
        let placed: Vec<(Region, u32)> = objects.iter().map(|&b| (Region::Message, b)).collect();
        deser_writes_in(&placed)
    }

    /// A message whose deserialization writes `objects` (memory, bytes), apart.
    fn deser_writes_in(objects: &[(Region, u32)]) -> RpcMessage {
        let mut at = 0u64;
        let placed: Vec<(Region, u64, u32)> = objects
            .iter()
            .map(|&(region, b)| {
                let write = (region, at, b);
                at += u64::from(b) + 4096;
                write
            })
            .collect();
        deser_writes_at(&placed)
    }

    /// A message whose deserialization writes, a field each, `writes` (memory, address,
    /// bytes), in this order.
    fn deser_writes_at(writes: &[(Region, u64, u32)]) -> RpcMessage {
        let trace = MessageTrace {
            events: Vec::new(),
            wire_bytes: 0,
            direction: Direction::Decode,
        };
        let mut m = prepare("t", 0, trace.clone(), trace, 0.0);
        for &write in writes {
            m.deser.items.push(crate::program::Item {
                writes: vec![write],
                ..Default::default()
            });
        }
        m
    }

    #[test]
    fn a_flush_never_spans_two_host_chunks() {
        // A 16 KB Temp Buffer, which none of these messages fills.
        let cfg = RpcAccConfig {
            temp_buffer_bytes: 16_384,
            ..crate::rpcacc::worked_example_config()
        };
        let pcie = DeserLink::pcie(&cfg);
        // 3000 B fill the pre-allocated host chunk but for 1096 B, so the next 2000 B take a
        // fresh chunk.
        let m = deser_writes(&[3000, 2000]);
        assert_eq!(chunk_use(&cfg, &m, 250.0).chunks, 2);
        let d = deser_times(&cfg, &m, pcie, 250.0);
        // The first chunk's 3000 B leave when the second field reaches the next chunk, the
        // other 2000 B at the end: a DMA write per chunk, not one of 5000 B.
        assert_eq!(d.oneshot_dma_writes, 2.0);
        // The lane: two fields of 2 cycles of 4 ns, three pops of 4 ns (the two
        // pre-allocated chunks, the fresh one), and the wait for each flush (one buffer).
        let lane = 16.0 + 12.0 + (12.0 + 3000.0 / 12.8) + (12.0 + 2000.0 / 12.8);
        assert!((d.oneshot_lane_ns - lane).abs() < 1e-9, "{d:?}");
        // Then the completion (12 ns + 16 B) and the crossing.
        assert!(
            (d.oneshot_latency_ns - (lane + PCIE_COMPLETION + 625.0)).abs() < 1e-9,
            "{d:?}"
        );
        // The DMA engine binds the rate: two transactions and 5000 B, and the completion.
        let dma = 2.0 * 12.0 + 5000.0 / 12.8 + PCIE_COMPLETION;
        assert!((d.oneshot_host_rate - 1000.0 / dma).abs() < 1e-9, "{d:?}");
        // An object larger than a chunk takes a write per chunk it spans: 8 B in the
        // pre-allocated chunk, then 9000 B over three fresh ones (4096 + 4096 + 808 B).
        let m = deser_writes(&[8, 9000]);
        assert_eq!(chunk_use(&cfg, &m, 250.0).chunks, 4);
        assert_eq!(deser_times(&cfg, &m, pcie, 250.0).oneshot_dma_writes, 4.0);
        // Bytes that go back to a chunk the buffer has left take a write again: a 3008 B
        // record whose last 8 B are written after a 2000 B string placed in the next chunk.
        let m = deser_writes_at(&[
            (Region::Message, 0, 3000),
            (Region::Message, 10_000, 2000),
            (Region::Message, 3000, 8),
        ]);
        assert_eq!(chunk_use(&cfg, &m, 250.0).chunks, 2);
        assert_eq!(deser_times(&cfg, &m, pcie, 250.0).oneshot_dma_writes, 3.0);
    }

    #[test]
    fn every_host_chunk_of_the_suite_takes_a_write_of_its_own() {
        let defaults = RpcAccConfig::default();
        let messages = suite(&defaults, &mut Engine).unwrap();
        for temp_buffer_bytes in [4096, 16_384] {
            let cfg = RpcAccConfig {
                temp_buffer_bytes,
                ..defaults.clone()
            };
            for m in &messages {
                let d = deser_times(&cfg, m, DeserLink::pcie(&cfg), cfg.clock_mhz);
                let chunks = chunk_use(&cfg, m, cfg.clock_mhz).chunks;
                assert!(
                    d.oneshot_dma_writes >= chunks as f64,
                    "{} {}: {} writes, {chunks} chunks",
                    m.bench,
                    m.index,
                    d.oneshot_dma_writes
                );
            }
        }
    }

    #[test]
    fn writes_anywhere_outside_card_memory_go_through_the_temp_buffer() {
        let cfg = RpcAccConfig::default();
        // A write to the serialized buffer (no deserializer makes one, but a trace file may),
        // one to message memory, and one that runs past the end of the address space: host
        // objects of 104, 104 and 16 B (the last cut at the end), all in the pre-allocated
        // chunk, and every byte written in one flush.
        let m = deser_writes_at(&[
            (Region::Buffer, 0, 100),
            (Region::Message, 5000, 100),
            (Region::Message, u64::MAX - 10, 100),
        ]);
        let c = chunk_use(&cfg, &m, 250.0);
        assert_eq!((c.chunks, c.used_bytes), (1, 224));
        let d = deser_times(&cfg, &m, DeserLink::pcie(&cfg), 250.0);
        assert_eq!((d.oneshot_dma_writes, d.output_bytes), (1.0, 300.0));
    }

    #[test]
    fn chunk_pops_take_the_lanes_time() {
        // Full buffers leave while parsing goes on, so a lane's time is its parsing and pops.
        let cfg = RpcAccConfig {
            flush_stalls_parsing: false,
            ..crate::rpcacc::worked_example_config()
        };
        // 1000 B in host memory and a 64 KB field labelled "Acc": a host chunk, and 17
        // accelerator chunks (the pre-allocated one, left empty, and 16 fresh ones for the
        // field, 64000 / 4096 rounded up), a 4 ns pop each.
        let m = deser_writes_in(&[(Region::Message, 1000), (Region::Accel, 64_000)]);
        let c = chunk_use(&cfg, &m, 250.0);
        assert_eq!((c.chunks, c.accel_chunks), (1, 17));
        assert!((c.alloc_ns - 18.0 * 4.0).abs() < 1e-9, "{c:?}");
        // The lane: two fields of 2 cycles of 4 ns, then the pops.
        let d = deser_times(&cfg, &m, DeserLink::pcie(&cfg), 250.0);
        assert!((d.oneshot_lane_ns - (16.0 + 72.0)).abs() < 1e-9, "{d:?}");
        // §III-B's share: pops over the lane's time, not over the latency (PCIe included).
        assert_eq!(d.chunks, c);
        let share = chunk_alloc_share_pct(&[d]);
        assert!((share - 100.0 * 72.0 / 88.0).abs() < 1e-9, "{share}");
        // Without labelled fields the pre-allocated accelerator chunk is still popped. A
        // hundred 8 B fields: 800 ns of parsing, 8 ns of pops; the lanes bind the rate (the
        // DMA engine's one flush takes 12 + 800 / 12.8 ns).
        let m = deser_writes(&[8; 100]);
        let c = chunk_use(&cfg, &m, 250.0);
        assert_eq!((c.chunks, c.accel_chunks), (1, 1));
        let d = deser_times(&cfg, &m, DeserLink::pcie(&cfg), 250.0);
        assert!((d.oneshot_host_rate - 4000.0 / 808.0).abs() < 1e-9, "{d:?}");
        // A slower pop slows the lanes.
        let slow = RpcAccConfig {
            chunk_pop_cycles: 2.0,
            ..cfg
        };
        let d = deser_times(&slow, &m, DeserLink::pcie(&slow), 250.0);
        assert!((d.oneshot_host_rate - 4000.0 / 816.0).abs() < 1e-9, "{d:?}");
    }

    #[test]
    fn labelled_fields_bypass_the_temp_buffer() {
        let cfg = crate::rpcacc::worked_example_config();
        let m = deser_writes_in(&[(Region::Message, 1000), (Region::Accel, 64_000)]);
        let d = deser_times(&cfg, &m, DeserLink::pcie(&cfg), 250.0);
        // Two fields parsed in 2 cycles of 4 ns each.
        let parse = 16.0;
        // Chunk pops of 4 ns: the pre-allocated host and accelerator chunks, and the 16 fresh
        // accelerator chunks the 64 KB field takes.
        let pops = 18.0 * 4.0;
        // One-shot: the 1000 host bytes leave in one flush once parsing ends; the 64 KB went
        // to card memory as their field was parsed, and bound the rate at the card memory's
        // bandwidth.
        assert_eq!((d.oneshot_dma_writes, d.accel_bytes), (1.0, 64_000.0));
        // The completion follows the last of the writes: card memory's 64 KB, which take
        // longer than the host's flush.
        let card = cfg.local_txn_ns + 64_000.0 / cfg.accel_mem.bw_gbytes_s;
        let host = parse + pops + 12.0 + 1000.0 / 12.8;
        assert!(parse + pops + card > host);
        let landed = parse + pops + card;
        assert!(
            (d.oneshot_latency_ns - (landed + PCIE_COMPLETION + 625.0)).abs() < 1e-9,
            "{d:?}"
        );
        assert!((d.oneshot_host_rate - 1000.0 / card).abs() < 1e-9, "{d:?}");
        // Field by field, ProtoACC writes both across PCIe.
        assert_eq!((d.fbf_dma_writes, d.output_bytes), (2.0, 65_000.0));
        let fbf_dma = 2.0 * 12.0 + 65_000.0 / 12.8 + PCIE_COMPLETION;
        assert!((d.fbf_host_rate - 1000.0 / fbf_dma).abs() < 1e-9);
        // Host chunks hold only host objects.
        assert_eq!(chunk_use(&cfg, &m, 250.0).used_bytes, 1000);
        // A slower card memory makes the labelled field land later still.
        let slow = RpcAccConfig {
            accel_mem: LinkConfig {
                latency_ns: 150.0,
                bw_gbytes_s: 0.1,
            },
            ..cfg
        };
        let d = deser_times(&slow, &m, DeserLink::pcie(&slow), 250.0);
        assert!(
            (d.oneshot_latency_ns - (16.0 + pops + 1.0 + 640_000.0 + PCIE_COMPLETION + 625.0))
                .abs()
                < 1e-6,
            "{d:?}"
        );
    }

    #[test]
    fn chunks_hold_whole_objects() {
        let cfg = RpcAccConfig::default();
        // 3000 B fit the pre-allocated chunk; 2000 B do not fit its last 1096 B.
        let c = chunk_use(&cfg, &deser_writes(&[3000, 2000]), 250.0);
        assert_eq!((c.chunks, c.used_bytes, c.allocated_bytes), (2, 5000, 8192));
        // Three pops at 4 ns: two host chunks and the pre-allocated accelerator one.
        assert_eq!(c.accel_chunks, 1);
        assert!((c.alloc_ns - 12.0).abs() < 1e-9);
        // An object larger than a chunk takes fresh chunks of its own.
        let c = chunk_use(&cfg, &deser_writes(&[8, 9000]), 250.0);
        assert_eq!((c.chunks, c.used_bytes), (4, 9008));
    }

    #[test]
    fn oneshot_latency_waits_for_the_last_flush() {
        let cfg = crate::rpcacc::worked_example_config();
        // Three 1000 B fields, each parsed in 2 + 2000 * 8 / 512 cycles of 4 ns (133 ns):
        // longer than a field's write (12 ns + 1000 B / 12.8 GB/s), so field by field the
        // link is idle when each field is parsed and only the last write follows parsing.
        let mut m = deser_writes(&[1000, 1000, 1000]);
        m.deser.wire_bytes = 6000;
        let d = deser_times(&cfg, &m, DeserLink::pcie(&cfg), 250.0);
        let parse = 3.0 * (2.0 + 2000.0 * 8.0 / 512.0) * 4.0;
        let landed = parse + 12.0 + 1000.0 / 12.8;
        assert!((d.fbf_latency_ns - (landed + PCIE_COMPLETION + 625.0)).abs() < 1e-9);
        // One-shot pops its two pre-allocated chunks (4 ns each) and holds all 3000 B, one
        // host chunk's, in the Temp Buffer until parsing ends (§IV-E: "slightly increased
        // deserialization latency").
        let pops = 8.0;
        let landed = parse + pops + 12.0 + 3000.0 / 12.8;
        assert!((d.oneshot_latency_ns - (landed + PCIE_COMPLETION + 625.0)).abs() < 1e-9);
    }

    #[test]
    fn a_full_temp_buffer_stalls_its_lane_unless_it_may_leave_early() {
        let cfg = crate::rpcacc::worked_example_config();
        // One 12 KB field parsed in 2 + 12288 * 8 / 512 cycles: the buffer fills at each
        // third of it and is flushed then; nothing is left for the end.
        let mut m = deser_writes(&[12_288]);
        m.deser.wire_bytes = 12_288;
        let parse = (2.0 + 12_288.0 * 8.0 / 512.0) * 0.5;
        let flush = 4096.0 / 19.2;
        // A chunk pop is a cycle, 0.5 ns: the two pre-allocated chunks, then the three fresh
        // host chunks the field fills, each as the field reaches it.
        let pop = 0.5;
        // The lane waits for each flush before parsing on (§III-B's single buffer): it
        // finishes its field after two flushes, and the third follows.
        let d = deser_times(&cfg, &m, DeserLink::upi(&cfg), 2000.0);
        assert_eq!(d.oneshot_dma_writes, 3.0);
        let landed = parse + 5.0 * pop + 3.0 * flush;
        assert!((d.oneshot_latency_ns - (landed + UPI_COMPLETION + 400.0)).abs() < 1e-9);
        // Field by field, the one write leaves when the field is parsed.
        let landed = parse + 12_288.0 / 19.2;
        assert!((d.fbf_latency_ns - (landed + UPI_COMPLETION + 400.0)).abs() < 1e-9);
        // A full buffer that leaves while parsing goes on: parsing (98 ns) outruns UPI
        // (213 ns a flush), so the flushes queue behind each other.
        let early = RpcAccConfig {
            flush_stalls_parsing: false,
            ..cfg
        };
        // The first flush leaves once the first third is parsed and three chunks are popped.
        let d = deser_times(&early, &m, DeserLink::upi(&early), 2000.0);
        let landed = parse / 3.0 + 3.0 * pop + 3.0 * flush;
        assert!((d.oneshot_latency_ns - (landed + UPI_COMPLETION + 400.0)).abs() < 1e-9);
    }

    #[test]
    fn field_by_field_pays_a_transaction_per_field() {
        let cfg = crate::rpcacc::worked_example_config();
        // 100 fields of 40 B: each write takes the DMA engine 12 ns + 3.125 ns, more than a
        // field's 8 ns of parsing, so field by field the engine binds; one-shot pops its two
        // pre-allocated chunks (4 ns each) and sends one flush after parsing.
        let d = deser_times(
            &cfg,
            &deser_writes(&[40; 100]),
            DeserLink::pcie(&cfg),
            250.0,
        );
        let landed = 8.0 + 100.0 * (12.0 + 40.0 / 12.8);
        assert!((d.fbf_latency_ns - (landed + PCIE_COMPLETION + 625.0)).abs() < 1e-9);
        let landed = 800.0 + 8.0 + 12.0 + 4000.0 / 12.8;
        assert!((d.oneshot_latency_ns - (landed + PCIE_COMPLETION + 625.0)).abs() < 1e-9);
        // Over UPI, as §IV-E times it, a transaction costs nothing: bytes alone.
        let d = deser_times(&cfg, &deser_writes(&[40; 100]), DeserLink::upi(&cfg), 250.0);
        let landed = 800.0 + 40.0 / 19.2;
        assert!((d.fbf_latency_ns - (landed + UPI_COMPLETION + 400.0)).abs() < 1e-9);
    }

    #[test]
    fn one_message_deserializes_in_the_time_its_stages_add_up_to() {
        let cfg = crate::rpcacc::worked_example_config();
        // Two fields writing 1000 B and 24 B: a lane parses them in 2 x 2 cycles of 4 ns.
        let d = deser_times(
            &cfg,
            &deser_writes(&[1000, 24]),
            DeserLink::pcie(&cfg),
            250.0,
        );
        // Latency, field by field: the first write leaves at 8 ns (12 ns + 1000 B / 12.8
        // GB/s), the second after it (12 ns + 24 B), the completion that notifies the host
        // (12 ns + 16 B), then the PCIe crossing.
        let fbf = 8.0 + (12.0 + 1000.0 / 12.8) + (12.0 + 24.0 / 12.8) + PCIE_COMPLETION + 625.0;
        assert!((d.fbf_latency_ns - fbf).abs() < 1e-9, "{d:?}");
        // One-shot: two chunk pops of 4 ns (the pre-allocated host and accelerator chunks),
        // and one Temp Buffer flush of all 1024 B after parsing, then the completion.
        let landed = 16.0 + 8.0 + 12.0 + 1024.0 / 12.8;
        assert!((d.oneshot_latency_ns - (landed + PCIE_COMPLETION + 625.0)).abs() < 1e-9);
        // Rate: four lanes parse a message every 4 ns, so the DMA engine bounds it: 12 ns a
        // transaction (two field by field, one one-shot) plus 80 ns of bytes, and the
        // completion.
        let fbf_dma = 2.0 * 12.0 + 80.0 + PCIE_COMPLETION;
        assert!((d.fbf_host_rate - 1000.0 / fbf_dma).abs() < 1e-9);
        assert!((d.oneshot_host_rate - 1000.0 / (12.0 + 80.0 + PCIE_COMPLETION)).abs() < 1e-9);
        assert_eq!((d.fbf_dma_writes, d.oneshot_dma_writes), (2.0, 1.0));
    }
}
