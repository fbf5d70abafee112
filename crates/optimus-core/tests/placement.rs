//! Property tests of RPCAcc's "Acc" label on the engine's traces: for random messages of the
//! conformance types and any set of labelled fields, a label moves data accesses from host
//! to accelerator memory and changes nothing else, and more labels never move one back.

mod common;

use common::{conformance_schema, random_message, Rng};
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::placement::{is_dereference, AccelLabels, Labelled};
use optimus_core::schema::SchemaSet;
use optimus_trace::{Direction, Event, Recorder, Region};
use proptest::prelude::*;

const TYPES: [&str; 2] = [
    "protobuf_test_messages.proto3.TestAllTypesProto3",
    "protobuf_test_messages.proto2.TestAllTypesProto2",
];

/// Every field of the schema that can carry the label, as `message.field`.
fn labellable(schema: &SchemaSet) -> Vec<String> {
    schema
        .messages()
        .flat_map(|(_, m)| {
            m.fields
                .iter()
                .filter(|f| is_dereference(f) && !f.is_extension)
                .map(move |f| format!("{}.{}", m.full_name, f.name))
        })
        .collect()
}

/// The trace of transforming `bytes` with `names` labelled.
fn trace(
    schema: &SchemaSet,
    type_name: &str,
    bytes: &[u8],
    direction: Direction,
    names: &[&String],
) -> Vec<Event> {
    let id = schema.message_by_name(type_name).unwrap();
    let labels = AccelLabels::resolve(schema, names).unwrap();
    let mut t = Labelled::new(&labels, Recorder::new());
    binary::trace_message(
        schema,
        id,
        bytes,
        direction,
        &DecodeOptions::default(),
        &mut t,
    )
    .unwrap();
    t.into_inner().events
}

/// The region of a data access, or `None` for any other event.
fn region(e: &Event) -> Option<Region> {
    match *e {
        Event::FieldRead { region, .. } | Event::FieldWrite { region, .. } => Some(region),
        _ => None,
    }
}

/// `e` as compared across runs: accelerator memory read as host memory, and message-memory
/// addresses (a decode's heap allocations differ from run to run) left out.
fn in_host(e: &Event) -> Event {
    let host = |region| match region {
        Region::Accel | Region::Message => (Region::Message, 0),
        Region::Buffer => (Region::Buffer, 1),
    };
    match *e {
        Event::FieldRead {
            region,
            addr,
            bytes,
        } => {
            let (region, keep) = host(region);
            Event::FieldRead {
                region,
                addr: addr * keep,
                bytes,
            }
        }
        Event::FieldWrite {
            region,
            addr,
            bytes,
        } => {
            let (region, keep) = host(region);
            Event::FieldWrite {
                region,
                addr: addr * keep,
                bytes,
            }
        }
        other => other,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_label_moves_accesses_to_accelerator_memory_and_changes_nothing_else(
        seed in any::<u64>(),
        which in 0usize..2,
        depth in 0u32..4,
        encode in any::<bool>(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        more in prop::collection::vec(any::<prop::sample::Index>(), 1..8),
    ) {
        let schema = conformance_schema();
        let id = schema.message_by_name(TYPES[which]).unwrap();
        let bytes = binary::encode(&schema, &random_message(&schema, id, &mut Rng(seed), depth));
        let direction = if encode { Direction::Encode } else { Direction::Decode };
        let names = labellable(&schema);
        let some: Vec<&String> = picks.iter().map(|i| i.get(&names)).collect();
        let mut most = some.clone();
        most.extend(more.iter().map(|i| i.get(&names)));

        let plain = trace(&schema, TYPES[which], &bytes, direction, &[]);
        prop_assert!(plain.iter().all(|e| region(e) != Some(Region::Accel)));
        let labelled = trace(&schema, TYPES[which], &bytes, direction, &some);
        let wider = trace(&schema, TYPES[which], &bytes, direction, &most);
        // Only regions differ, and only from host to accelerator memory.
        for t in [&labelled, &wider] {
            prop_assert_eq!(t.len(), plain.len());
            prop_assert!(t.iter().map(in_host).eq(plain.iter().map(in_host)));
        }
        // More labels never bring an access back to host memory.
        for (a, b) in labelled.iter().zip(&wider) {
            prop_assert!(region(a) != Some(Region::Accel) || region(b) == Some(Region::Accel));
        }
    }
}

#[test]
fn labelling_every_dereference_field_leaves_only_top_level_scalars_in_host_memory() {
    let schema = conformance_schema();
    let names = labellable(&schema);
    let all: Vec<&String> = names.iter().collect();
    let id = schema.message_by_name(TYPES[0]).unwrap();
    let bytes = binary::encode(&schema, &random_message(&schema, id, &mut Rng(7), 2));
    for direction in [Direction::Decode, Direction::Encode] {
        let t = trace(&schema, TYPES[0], &bytes, direction, &all);
        // Inside a sub-message everything is in accelerator memory.
        let mut depth = 0u32;
        let (mut accel, mut host) = (0, 0);
        for e in &t {
            match e {
                Event::Enter { .. } => depth += 1,
                Event::Leave => depth -= 1,
                _ => match region(e) {
                    Some(Region::Accel) => accel += 1,
                    Some(Region::Message) => {
                        assert_eq!(depth, 0, "{direction:?}: {e:?}");
                        host += 1;
                    }
                    _ => {}
                },
            }
        }
        assert!(accel > 0 && host > 0, "{direction:?}: {accel} {host}");
    }
}
