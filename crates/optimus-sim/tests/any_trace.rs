//! Any well-formed trace file runs on both models, or the view refuses it by name for its
//! size: no panic, every message completes, and every reported number is finite.

use optimus_sim::op::{self, OpConfig};
use optimus_sim::rpcacc::{report, RpcAccConfig};
use optimus_sim::workload::{accelerator_view, MemoryView, ViewConfig};
use optimus_trace::{Direction, Event, Format, Region, Repetition};
use proptest::prelude::*;

fn repetition() -> impl Strategy<Value = Repetition> {
    prop_oneof![
        Just(Repetition::Single),
        Just(Repetition::Repeated),
        Just(Repetition::Packed),
    ]
}

fn region() -> impl Strategy<Value = Region> {
    prop_oneof![
        Just(Region::Message),
        Just(Region::Buffer),
        Just(Region::Accel)
    ]
}

/// Any address, or one in the first MiB, where accesses of one trace meet and overlap and a
/// serialized-buffer offset lies near the previous one (the view widens it back to it).
fn addr() -> impl Strategy<Value = u64> {
    prop_oneof![any::<u64>(), 0u64..1 << 20]
}

/// A data access of any size at any address; a serialized-buffer offset lies in the first
/// MiB (the view widens each buffer access back to the previous one, and refuses a message
/// whose run reaches far, as its own tests check).
fn access() -> impl Strategy<Value = (Region, u64, u32)> {
    (region(), addr(), 0u32..3000).prop_map(|(region, addr, bytes)| match region {
        Region::Buffer => (region, addr % (1 << 20), bytes),
        _ => (region, addr, bytes),
    })
}

/// One field's events: its schema entry, then reads, converter ops and writes.
fn field() -> impl Strategy<Value = Vec<Event>> {
    (
        (any::<u16>(), repetition()),
        addr(),
        0u32..64,
        prop::collection::vec(access(), 0..3),
        prop::collection::vec((any::<u16>(), 0u32..3000), 0..2),
        prop::collection::vec(access(), 0..3),
    )
        .prop_map(
            |((kind, repetition), addr, size, reads, converts, writes)| {
                let mut evs = vec![Event::SchemaRead {
                    kind,
                    repetition,
                    addr,
                    size,
                }];
                evs.extend(
                    reads
                        .into_iter()
                        .map(|(region, addr, bytes)| Event::FieldRead {
                            region,
                            addr,
                            bytes,
                        }),
                );
                evs.extend(
                    converts
                        .into_iter()
                        .map(|(op, bytes)| Event::Convert { op, bytes }),
                );
                evs.extend(
                    writes
                        .into_iter()
                        .map(|(region, addr, bytes)| Event::FieldWrite {
                            region,
                            addr,
                            bytes,
                        }),
                );
                evs
            },
        )
}

/// A (sub-)message body: fields and sub-messages, nested up to three levels.
fn body() -> impl Strategy<Value = Vec<Event>> {
    let leaf = prop::collection::vec(field(), 0..5).prop_map(|fs| fs.concat());
    leaf.prop_recursive(3, 40, 4, |inner| {
        prop::collection::vec(
            prop_oneof![
                field(),
                (any::<u32>(), inner).prop_map(|(type_id, body)| {
                    let mut evs = vec![Event::Enter { type_id }];
                    evs.extend(body);
                    evs.push(Event::Leave);
                    evs
                }),
            ],
            0..4,
        )
        .prop_map(|parts| parts.concat())
    })
}

/// A trace of one to three messages, each encoded or decoded.
fn trace() -> impl Strategy<Value = Vec<Event>> {
    prop::collection::vec((any::<bool>(), body(), 0u64..100_000), 1..4).prop_map(|msgs| {
        let mut evs = Vec::new();
        for (encode, body, wire_bytes) in msgs {
            evs.push(Event::MessageBegin {
                direction: if encode {
                    Direction::Encode
                } else {
                    Direction::Decode
                },
                format: Format::Protobuf,
                type_id: 0,
            });
            evs.extend(body);
            evs.push(Event::MessageEnd { wire_bytes });
        }
        evs
    })
}

/// Largest message the property replays: 16 MiB read and written.
const TRACED_BYTES: u64 = 16 << 20;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_trace_runs_on_both_models(
        events in trace(),
        engine_layout in any::<bool>(),
        pipelines in 1u32..3,
        interleave in 1u32..3,
    ) {
        let file = optimus_trace::encode(&events);
        let events = optimus_trace::decode(&file).unwrap();
        let view = ViewConfig {
            memory: if engine_layout { MemoryView::Engine } else { MemoryView::Arena },
            // Far below the default: a message this size already takes the models a while.
            max_traced_bytes: TRACED_BYTES,
            ..ViewConfig::default()
        };
        let messages = accelerator_view("any", &events, &view).unwrap();

        let mut cfg = OpConfig::paper_4x4(pipelines, interleave);
        cfg.warmup_cycles = 200;
        cfg.measure_cycles = 2_000;
        let r = op::run(&cfg, &messages).unwrap();
        prop_assert!(r.stats.get("dispatcher.completed").unwrap() > 0.0);
        let software = [r.software_gbps, r.speedup_vs_software].into_iter().flatten();
        for v in [r.throughput_gbps, r.messages_per_s, r.latency_ns, r.port_gbps, r.amat_cycles]
            .into_iter()
            .chain([r.software_latency_ns])
            .chain(software)
        {
            prop_assert!(v.is_finite() && v >= 0.0, "{:?}", r);
        }

        let rpc: Vec<_> = messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| report::one_direction("any", i, m))
            .collect();
        let r = report::run(&RpcAccConfig::default(), &rpc).unwrap();
        prop_assert_eq!(r.serialized + r.deserialized, rpc.len());
        for d in r.serialization.iter().chain(&r.deserialization) {
            prop_assert!(d.latency_ns.is_finite() && d.latency_ns >= 0.0, "{:?}", d);
            for v in [d.messages_per_s, d.gbps].into_iter().flatten() {
                prop_assert!(v.is_finite() && v >= 0.0, "{:?}", d);
            }
        }
        for (k, v) in &r.stats.0 {
            prop_assert!(v.is_finite(), "{} = {}", k, v);
        }
        // Pre-serialization walks at most the values the serializer does (a list of scalars
        // is one field), and its buffer is the data it copies, on the core or the memcpy
        // engine, and a header per field.
        if r.serialized > 0 {
            let stat = |k: &str| r.stats.get(k).unwrap_or(0.0);
            let fields = stat("host.pre_serialized_fields");
            prop_assert!(fields <= stat("serializer.fields"), "{:?}", r.stats);
            let copied = stat("host.pre_serialization_copied_bytes") + stat("memcpy_engine.bytes");
            prop_assert_eq!(stat("host.pre_serialized_bytes"), copied + 8.0 * fields);
        }
    }
}
