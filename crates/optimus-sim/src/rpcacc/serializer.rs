//! The serializers: ProtoACC's engine reading fields across an interconnect (ProtoACC-PCIe,
//! ProtoACC-OnChip, Dagger-ProtoACC) and RPCAcc's memory-affinity serialization (§III-C), and
//! the stages each design's serialization time is made of.

use serde::Serialize;

use optimus_trace::Region;

use super::host::{cpu_ser_ns, preser_bytes, preser_ns};
use super::timeline::{InFlight, LinkTimeline};
use super::{LinkConfig, RpcAccConfig, RpcMessage};
use crate::program::Program;

/// A field-granular memory request of the serializer engine.
#[derive(Clone, Copy, Debug)]
struct Req {
    /// The item that needs it first.
    item: usize,
    /// The last item whose data it carries: a list of scalars is one array, read at once.
    last_item: usize,
    dep: Option<usize>,
    bytes: u64,
    region: Region,
    is_schema: bool,
    /// The first request of a sub-message: the memory of the parent's record, from which the
    /// engine loads the sub-message's pointer before it can issue this.
    pointer: Option<Region>,
}

/// Merges a program's line accesses into one request per (item, dependence, region), and a
/// list of scalars' values into one request (their array).
fn requests(p: &Program) -> Vec<Req> {
    let mut reqs: Vec<Req> = Vec::new();
    let mut map = vec![0usize; p.accesses.len()];
    for (i, a) in p.accesses.iter().enumerate() {
        let dep = a.dep.map(|d| map[d as usize]);
        let item = a.item as usize;
        match reqs.last_mut() {
            Some(r)
                if r.dep == dep
                    && r.region == a.region
                    && !a.is_schema
                    && a.pointer.is_none()
                    && (r.last_item == item
                        || (r.last_item + 1 == item && p.items[item].continues_scalar_list())) =>
            {
                r.bytes += u64::from(a.bytes);
                r.last_item = item;
            }
            _ => reqs.push(Req {
                item,
                last_item: item,
                dep,
                bytes: u64::from(a.bytes),
                region: a.region,
                is_schema: a.is_schema,
                pointer: a.pointer,
            }),
        }
        map[i] = reqs.len() - 1;
    }
    reqs
}

/// Memory reads of `p` at field granularity (a field's lines in one region, schema reads
/// excluded) and the sub-messages' pointer loads: the objects a serializer fetches one
/// request each.
pub(super) fn field_reads(p: &Program) -> usize {
    requests(p)
        .iter()
        .map(|r| usize::from(!r.is_schema) + usize::from(r.pointer.is_some()))
        .sum()
}

/// The links a serializer engine reads memory over.
#[derive(Clone, Copy, Debug)]
pub enum Reach {
    /// Every memory over one link (a DMA engine's, a coherent interconnect's, or memory
    /// itself): concurrent reads share its bandwidth whatever they read.
    One(LinkConfig),
    /// Host memory (the message's records and data) over one link, accelerator memory over
    /// another, each with its own bandwidth.
    Split {
        /// Host memory.
        host: LinkConfig,
        /// Accelerator memory.
        accel: LinkConfig,
    },
}

impl Reach {
    /// The link `region` is read over and its index among this reach's links.
    fn link(self, region: Region) -> (usize, LinkConfig) {
        match self {
            Reach::One(l) => (0, l),
            Reach::Split { accel, .. } if region == Region::Accel => (1, accel),
            Reach::Split { host, .. } => (0, host),
        }
    }
}

/// Bytes of a pointer in a message's record.
const POINTER_BYTES: u64 = 8;

/// Time in ns for a ProtoACC-style serializer to encode `p`, reading memory over `reach`.
/// Schema reads are served from the on-card schema table (RPCAcc §III-B) and cost nothing.
/// The engine walks the objects in field order, depth first, and issues its reads in that
/// order: a sub-message's fields wait for its pointer, loaded from the parent's record, and
/// every read for the reads before it to have issued (so a sub-message's pointer load holds
/// back the walk past it, and sibling sub-messages cost a round trip each). With
/// [`RpcAccConfig::leaf_pointer_loads`], a leaf dereference (a string's or bytes'
/// characters, a repeated field's elements) has its pointer loaded in walk order too, and
/// its data is read when the pointer returns, without holding back the walk: the walk's next
/// step needs nothing from it. Reads then overlap, up
/// to `max_outstanding_reads` in flight, and their data shares each link's bandwidth in the
/// order they were issued, a read issued out of walk order filling the link's idle time.
pub fn serializer_ns(cfg: &RpcAccConfig, p: &Program, reach: Reach, cycle_ns: f64) -> f64 {
    walk_ns(cfg, p, reach, cycle_ns, [0.0; 2])
}

/// [`serializer_ns`] for a walker that spends `issue_ns[i]` issuing each read over `reach`'s
/// link `i` (a DMA transaction of the card's engine, BF3's Arm core posting a DMA job): a
/// read leaves that long after the walker starts issuing it, and the walker starts the next
/// once it has left.
pub(super) fn walk_ns(
    cfg: &RpcAccConfig,
    p: &Program,
    reach: Reach,
    cycle_ns: f64,
    issue_ns: [f64; 2],
) -> f64 {
    let reqs = requests(p);
    let mut done = vec![0.0f64; reqs.len()];
    // Per request a sub-message hangs from: when the current sub-message's pointer arrived.
    let mut pointer_done = vec![0.0f64; reqs.len()];
    // Per request: whether that pointer is a leaf dereference's.
    let mut leaf_pointer = vec![false; reqs.len()];
    let mut inflight = InFlight::default();
    let mut item_done = vec![0.0f64; p.items.len()];
    // Per item, when the last of its requests returns (all are issued before it is encoded).
    let mut item_ready = vec![0.0f64; p.items.len()];
    // Per link, when it is busy delivering data.
    let mut links = [LinkTimeline::default(), LinkTimeline::default()];
    // When the walker can issue its next read: once it has issued the one before.
    let mut next_issue = 0.0f64;
    // Issues a read at `at` or later, no read to come issuing before `settled`; one `in_walk`
    // is the walk's next step, any other (a leaf dereference's data) leaves the walk's issue
    // order alone.
    let mut read = |at: f64, settled: f64, region: Region, bytes: u64, in_walk: bool| {
        let at = if in_walk { at.max(next_issue) } else { at };
        let (i, l) = reach.link(region);
        let duration = bytes as f64 / l.bw_gbytes_s;
        // Concurrent reads share the link's bandwidth: data returns after the latency, once
        // the link has time to deliver it.
        let arrival = |issue: f64| links[i].arrival(issue + issue_ns[i] + l.latency_ns, duration);
        let at = inflight.earliest(at, cfg.max_outstanding_reads as usize, arrival);
        let fin = links[i].deliver(at + issue_ns[i] + l.latency_ns, duration);
        inflight.add(at, fin, settled);
        if in_walk {
            next_issue = at + issue_ns[i];
        }
        fin
    };
    let w = cfg.read_window_fields as usize;
    let mut t_item = 0.0f64;
    let mut next_req = 0usize;
    for (i, it) in p.items.iter().enumerate() {
        // Issue every request of the fields up to i + w - 1 whose address is known.
        while next_req < reqs.len() && reqs[next_req].item < i + w {
            let r = reqs[next_req];
            let window_open = if r.item >= w {
                item_done[r.item - w]
            } else {
                0.0
            };
            let mut at = window_open.max(r.dep.map_or(0.0, |d| done[d]));
            let mut in_walk = true;
            if let Some(d) = r.dep {
                let loads = r.is_schema || cfg.leaf_pointer_loads;
                if let Some(record) = r.pointer.filter(|_| loads) {
                    pointer_done[d] = read(at, window_open, record, POINTER_BYTES, true);
                    leaf_pointer[d] = !r.is_schema;
                }
                at = at.max(pointer_done[d]);
                in_walk = !leaf_pointer[d];
            }
            done[next_req] = if r.is_schema {
                at
            } else {
                read(at, window_open, r.region, r.bytes, in_walk)
            };
            if let Some(ready) = item_ready.get_mut(r.item) {
                *ready = ready.max(done[next_req]);
            }
            next_req += 1;
        }
        let ready = item_ready[i];
        let bytes: u64 = it.converts.iter().map(|c| u64::from(c.1)).sum();
        let work =
            (cfg.cycles_per_field + bytes as f64 * 8.0 / cfg.engine_bits_per_cycle) * cycle_ns;
        t_item = t_item.max(ready) + work;
        item_done[i] = t_item;
    }
    // The output leaves at the engine's width too, tags and lengths included (a message of
    // empty sub-messages is all output).
    let output = p.wire_bytes as f64 * 8.0 / cfg.engine_bits_per_cycle * cycle_ns;
    t_item.max(output)
}

/// Serialization times (ns) of one message on each design.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SerTimes {
    /// CPU-only: software serialization, then a DMA of the output to the NIC.
    pub cpu_only: f64,
    /// ProtoACC-PCIe: the serializer on the card reads every field across PCIe.
    pub protoacc_pcie: f64,
    /// ProtoACC-OnChip: the serializer next to host memory; its output streams across PCIe
    /// to the NIC as it is written.
    pub protoacc_onchip: f64,
    /// RPCAcc memory-affinity serialization.
    pub rpcacc: f64,
}

/// The stages every design's serialization of one message is made of (ns).
struct SerStages {
    /// Software serialization on one host core.
    software: f64,
    /// The serialized message across PCIe to the NIC once it is all written: latency, then
    /// bytes.
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
    /// The same without the DMA transaction and the PCIe latency (a stream of messages overlaps
    /// them).
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
    let over_pcie = Reach::Split {
        host: pcie,
        accel: acc,
    };
    let on_chip = Reach::Split {
        host: cfg.host_mem,
        accel: pcie,
    };
    let (pre, dsa) = preser_ns(cfg, m, true);
    let pre_bytes = preser_bytes(m);
    let acc_bytes: f64 = m
        .ser
        .accesses
        .iter()
        .filter(|a| a.region == Region::Accel)
        .map(|a| f64::from(a.bytes))
        .sum();
    // The encoder takes 512 bits per cycle whatever the fields in them (§III-C: "For each
    // 512-bit, the encoding can be done within one cycle"), consuming the DMA read's
    // completions as they arrive: the fetch and the encoding of host fields overlap. Their
    // output, tags and lengths included, leaves at the same width.
    let encode_ns = |bytes: f64| bytes * 8.0 / cfg.encode_bits_per_cycle * cyc;
    let host_output = (wire - acc_bytes).max(0.0);
    let fetch_stream = (pre_bytes / pcie.bw_gbytes_s).max(encode_ns(pre_bytes.max(host_output)));
    let local_stream = if acc_bytes > 0.0 {
        acc_bytes / acc.bw_gbytes_s + encode_ns(acc_bytes)
    } else {
        0.0
    };
    SerStages {
        software: cpu_ser_ns(cfg, m),
        to_nic: pcie.latency_ns + wire / pcie.bw_gbytes_s,
        to_nic_stream: wire / pcie.bw_gbytes_s,
        // Each host read is a transaction of the card's DMA engine, as each write of the
        // deserializer is; card memory's reads cost a local transaction.
        engine_over_pcie: walk_ns(
            cfg,
            &m.ser,
            over_pcie,
            cyc,
            [cfg.dma_txn_ns, cfg.local_txn_ns],
        ),
        engine_on_chip: serializer_ns(cfg, &m.ser, on_chip, cyc),
        pre,
        dsa,
        // One transaction of the card's DMA engine (which a stream of messages overlaps with
        // the serializer's work on the one before).
        fetch: cfg.dma_txn_ns + pcie.latency_ns + fetch_stream,
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
        // The engine's output crosses to the NIC as it is written, as RPCAcc's encoder takes
        // its DMA read's completions as they arrive: the crossing adds its latency, and its
        // bytes overlap the engine's work (§IV-F adds "an extra traversal time between the
        // NIC and CPU memory" to the engine's simulated time).
        protoacc_onchip: s.engine_on_chip.max(s.to_nic_stream) + cfg.pcie.latency_ns,
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
        rpcacc: s.pre.max(s.dsa).max(card_stream(&s)),
    }
}

/// The card's part of memory-affinity serialization when messages follow each other (ns):
/// the pre-serialized buffer's fetch and the accelerator-resident fields' reads, encoded as
/// they arrive, without the latencies successive messages overlap.
pub fn memaff_card_occupancy(cfg: &RpcAccConfig, m: &RpcMessage, clock_mhz: f64) -> f64 {
    card_stream(&ser_stages(cfg, m, clock_mhz))
}

fn card_stream(s: &SerStages) -> f64 {
    s.fetch_stream + s.local_stream
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpcacc::{prepare, suite};
    use optimus_core::binary::EngineTraces as Engine;
    use optimus_trace::{Event, Repetition};
    #[test]
    fn each_level_of_nesting_waits_for_its_pointer() {
        use crate::program::{nested_trace, Walk::*};
        let cfg = RpcAccConfig::default();
        let link = LinkConfig {
            latency_ns: 1e6,
            bw_gbytes_s: 12.8,
        };
        let at_depth = |depth: usize| {
            let mut walk = vec![Sub; depth];
            walk.push(Field(Region::Message));
            walk.extend(vec![Leave; depth]);
            let p = Program::from_trace(&nested_trace(&walk));
            serializer_ns(&cfg, &p, Reach::One(link), 4.0) / link.latency_ns
        };
        // The field's read, after one pointer load per level above it, each a round trip.
        for depth in 0..4 {
            let round_trips = at_depth(depth);
            assert!(
                (round_trips - (depth + 1) as f64).abs() < 1e-3,
                "{depth}: {round_trips}"
            );
        }
    }

    #[test]
    fn reads_issue_in_field_order_so_each_sibling_sub_message_costs_a_round_trip() {
        use crate::program::{nested_trace, Walk::*};
        // Slots and window past any need: only the order of issue binds.
        let cfg = RpcAccConfig {
            max_outstanding_reads: 1 << 20,
            read_window_fields: 1 << 20,
            ..RpcAccConfig::default()
        };
        let link = LinkConfig {
            latency_ns: 1e6,
            bw_gbytes_s: 12.8,
        };
        let round_trips = |walk: &[crate::program::Walk]| {
            let p = Program::from_trace(&nested_trace(walk));
            serializer_ns(&cfg, &p, Reach::One(link), 4.0) / link.latency_ns
        };
        let sub = [Sub, Field(Region::Message), Leave];
        for siblings in 1..4 {
            let walk: Vec<_> = sub.iter().copied().cycle().take(3 * siblings).collect();
            // Each sibling's pointer load issues once the walk has issued the previous
            // sibling's field, which waited for that sibling's pointer: siblings + 1.
            let n = round_trips(&walk);
            assert!((n - (siblings + 1) as f64).abs() < 1e-3, "{siblings}: {n}");
        }
        // A top-level field after a sub-message issues after the sub-message's field (one
        // round trip later) and returns with it; before it, it overlaps the pointer load.
        let top = Field(Region::Message);
        let after = round_trips(&[sub[0], sub[1], sub[2], top]);
        let before = round_trips(&[top, sub[0], sub[1], sub[2]]);
        assert!((after - 2.0).abs() < 1e-3, "{after}");
        assert!((before - 2.0).abs() < 1e-3, "{before}");
    }

    #[test]
    fn a_leaf_counts_toward_the_limit_only_while_it_is_in_flight() {
        // In a walk: with two reads in flight, two strings' pointers issue together, and
        // their characters, issued when the pointers return, together too. Counting the
        // first string's characters from when the walk passed them would hold the second
        // pointer back a round trip.
        use crate::program::{nested_trace, Walk::Text};
        let cfg = RpcAccConfig {
            max_outstanding_reads: 2,
            leaf_pointer_loads: true,
            ..RpcAccConfig::default()
        };
        let link = LinkConfig {
            latency_ns: 1e6,
            bw_gbytes_s: 12.8,
        };
        let p = Program::from_trace(&nested_trace(&[Text(Region::Message); 2]));
        let n = serializer_ns(&cfg, &p, Reach::One(link), 4.0) / link.latency_ns;
        assert!((n - 2.0).abs() < 1e-3, "{n}");
    }

    #[test]
    fn leaf_pointer_loads_cost_a_round_trip_per_level_and_hold_back_nothing() {
        use crate::program::{nested_trace, Walk::*};
        let link = LinkConfig {
            latency_ns: 1e6,
            bw_gbytes_s: 12.8,
        };
        let round_trips = |loads: bool, walk: &[crate::program::Walk]| {
            let cfg = RpcAccConfig {
                max_outstanding_reads: 1 << 20,
                read_window_fields: 1 << 20,
                leaf_pointer_loads: loads,
                ..RpcAccConfig::default()
            };
            let p = Program::from_trace(&nested_trace(walk));
            serializer_ns(&cfg, &p, Reach::One(link), 4.0) / link.latency_ns
        };
        let text = Text(Region::Message);
        let field = Field(Region::Message);
        // Without the loads a string's characters are read at once; with them, after the
        // pointer: one more round trip, however many strings share the record.
        for strings in 1..4 {
            let walk = vec![text; strings];
            assert!((round_trips(false, &walk) - 1.0).abs() < 1e-3);
            let n = round_trips(true, &walk);
            assert!((n - 2.0).abs() < 1e-3, "{strings}: {n}");
        }
        // A sub-message after a string issues its pointer load with the string's: the
        // string's characters do not hold back the walk.
        let n = round_trips(true, &[text, Sub, field, Leave]);
        assert!((n - 2.0).abs() < 1e-3, "{n}");
        // A string in a sub-message: the sub-message's pointer, the string's, its characters.
        let n = round_trips(true, &[Sub, text, Leave]);
        assert!((n - 3.0).abs() < 1e-3, "{n}");
        assert!((round_trips(false, &[Sub, text, Leave]) - 2.0).abs() < 1e-3);
    }

    #[test]
    fn a_list_of_scalars_is_one_read_and_a_list_of_strings_one_per_string() {
        use optimus_trace::kind::{INT32, STRING};
        use Repetition::{Packed, Repeated};
        let reads = |fields: &[(u16, Repetition, &[u32])]| {
            let p = Program::from_trace(&crate::program::encode_of(fields));
            let data = requests(&p).into_iter().filter(|r| !r.is_schema);
            (field_reads(&p), data.map(|r| r.bytes).max())
        };
        // The array's pointer, then the array: 300 values in one read.
        assert_eq!(reads(&[(INT32, Packed, &[4; 300])]), (2, Some(1200)));
        assert_eq!(reads(&[(INT32, Repeated, &[4; 300])]), (2, Some(1200)));
        // Each string is an object of its own, its pointer and its characters; the next list
        // starts a read of its own.
        assert_eq!(
            reads(&[(STRING, Repeated, &[20; 3]), (INT32, Packed, &[4; 2])]),
            (8, Some(20))
        );
    }

    #[test]
    fn the_output_leaves_at_the_engines_width_even_without_fields() {
        // 20,000 empty sub-messages: no field to read or convert, 40,000 bytes of tags and
        // lengths to write at 512 bits a 4 ns cycle.
        let cfg = RpcAccConfig::default();
        let p = Program {
            wire_bytes: 40_000,
            ..Program::default()
        };
        let t = serializer_ns(&cfg, &p, Reach::One(cfg.pcie), 4.0);
        assert!((t - 40_000.0 * 8.0 / 512.0 * 4.0).abs() < 1e-9, "{t}");
    }

    #[test]
    fn reads_over_one_link_share_its_bandwidth_whatever_memory_they_read() {
        let cfg = RpcAccConfig::default();
        let mib = 1 << 20;
        let mut t = crate::program::one_large_field(mib);
        let end = t.events.pop();
        t.events.extend([
            Event::SchemaRead {
                kind: 9,
                repetition: Repetition::Single,
                addr: 0x1010,
                size: 16,
            },
            Event::FieldRead {
                region: Region::Accel,
                addr: 0x100_0000,
                bytes: mib,
            },
        ]);
        t.events.extend(end);
        let p = Program::from_trace(&t);
        let link = LinkConfig {
            latency_ns: 0.0,
            bw_gbytes_s: 1.0,
        };
        let one = serializer_ns(&cfg, &p, Reach::One(link), 0.0);
        let split = serializer_ns(
            &cfg,
            &p,
            Reach::Split {
                host: link,
                accel: link,
            },
            0.0,
        );
        // Two MiB through one link at 1 GB/s; a MiB through each of two.
        assert!((one - 2.0 * f64::from(mib)).abs() < 1.0, "{one}");
        assert!((split - f64::from(mib)).abs() < 1.0, "{split}");
    }

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
            Reach::One(LinkConfig {
                latency_ns: 70.0,
                bw_gbytes_s: 12.8,
            }),
            4.0,
        );
        let slow = serializer_ns(
            &cfg,
            &m.ser,
            Reach::One(LinkConfig {
                latency_ns: 1250.0,
                bw_gbytes_s: 12.8,
            }),
            4.0,
        );
        assert!(slow > 3.0 * fast, "{slow} vs {fast}");
    }

    #[test]
    fn one_field_serializes_in_the_time_its_stages_add_up_to() {
        let trace = crate::program::one_field_trace(0x1000, 0x8000);
        let cfg = crate::rpcacc::worked_example_config();
        let m = prepare("t", 0, trace.clone(), trace, 0.0);
        let t = ser_times(&cfg, &m, 250.0);
        // ProtoACC-PCIe: the doorbell (625 ns), the field's read across PCIe (a 12 ns DMA
        // transaction, 1250 ns + 4 B at 12.8 GB/s), then 2 cycles and 32 of 512 bits at 4 ns
        // a cycle.
        let field = 2.0 * 4.0 + 32.0 / 512.0 * 4.0;
        let read = 12.0 + 1250.0 + 4.0 / 12.8;
        assert!((t.protoacc_pcie - (625.0 + read + field)).abs() < 1e-9);
        // RPCAcc: pre-serialization (19 instructions + 0.5 per copied byte at 1.2 IPC, 2 GHz),
        // the doorbell, one DMA read of 12 B (4 B of value, an 8 B field header).
        let pre = (19.0 + 0.5 * 4.0) / 1.2 / 2.0;
        let fetch = 12.0 + 1250.0 + 12.0 / 12.8;
        assert!((t.rpcacc - (pre + 625.0 + fetch)).abs() < 1e-9);
        // Messages in a row overlap the DMA's latency: the host's part bounds the rate.
        assert!((ser_occupancy(&cfg, &m, 250.0).rpcacc - pre).abs() < 1e-9);
    }

    #[test]
    fn on_chip_output_streams_to_the_nic_as_it_is_written() {
        let cfg = crate::rpcacc::worked_example_config();
        let trace = crate::program::one_large_field(64 * 1024);
        let m = prepare("t", 0, trace.clone(), trace, 0.0);
        let engine = serializer_ns(&cfg, &m.ser, Reach::One(cfg.host_mem), 4.0);
        let crossing = m.ser.wire_bytes as f64 / cfg.pcie.bw_gbytes_s;
        // The engine's work and the output's bytes across PCIe take microseconds each; they
        // overlap, and the crossing adds its latency once.
        assert!(engine > 4000.0 && crossing > 4000.0, "{engine} {crossing}");
        let t = ser_times(&cfg, &m, 250.0);
        let streamed = engine.max(crossing) + cfg.pcie.latency_ns;
        assert!(
            (t.protoacc_onchip - streamed).abs() < 1e-9,
            "{t:?} vs {streamed}"
        );
    }

    #[test]
    fn a_narrower_engine_slows_protoacc_alone() {
        let cfg = RpcAccConfig::default();
        let msgs = suite(&cfg, &mut Engine).unwrap();
        let m = msgs
            .iter()
            .max_by_key(|m| m.ser.wire_bytes)
            .expect("a message");
        let narrow = RpcAccConfig {
            engine_bits_per_cycle: 128.0,
            ..cfg.clone()
        };
        let (wide, slim) = (ser_times(&cfg, m, 250.0), ser_times(&narrow, m, 250.0));
        // The engine's bytes now take four times the cycles; RPCAcc's encoder keeps its width.
        assert!(
            slim.protoacc_onchip > 2.0 * wide.protoacc_onchip,
            "{slim:?} vs {wide:?}"
        );
        assert!(slim.protoacc_pcie > wide.protoacc_pcie);
        assert_eq!(slim.rpcacc, wide.rpcacc);
        assert_eq!(slim.cpu_only, wide.cpu_only);
    }
}
