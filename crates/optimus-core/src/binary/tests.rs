//! Binary codec tests: the Optimus Prime messages re-encode byte-identically, merge rules,
//! unknown fields, groups, and malformed input.

use optimus_schema::SchemaSet;

use super::*;
use crate::Value;

const PEERS: &str = include_str!("../../../../testdata/peers.proto");

fn peers() -> SchemaSet {
    SchemaSet::from_source(PEERS).unwrap()
}

#[test]
fn peer_messages_re_encode_byte_identically() {
    let s = peers();
    for (name, bytes) in [
        (
            "bench.Flat",
            &include_bytes!("../../../../testdata/flat.bin")[..],
        ),
        (
            "bench.Mixed",
            &include_bytes!("../../../../testdata/mixed.bin")[..],
        ),
        (
            "bench.Nested",
            &include_bytes!("../../../../testdata/nested.bin")[..],
        ),
    ] {
        let id = s.message_by_name(name).unwrap();
        let m = decode(&s, id, bytes, &DecodeOptions::default()).unwrap();
        assert!(m.unknown_fields().is_empty(), "{name}");
        assert_eq!(encode(&s, &m), bytes, "{name}");
        assert_eq!(encoded_len(&s, &m), bytes.len());
    }
}

fn zoo() -> SchemaSet {
    SchemaSet::from_source(
        r#"syntax = "proto2";
           message Z {
             optional int32 a = 1;
             optional Z sub = 2;
             repeated int32 packed = 3 [packed = true];
             repeated int32 loose = 4;
             optional group G = 5 { optional int32 x = 6; }
             map<string, int32> m = 7;
             optional E e = 8;
             repeated E es = 9 [packed = true];
             optional string s = 10;
           }
           enum E { A = 0; B = 1; }"#,
    )
    .unwrap()
}

fn dec(s: &SchemaSet, bytes: &[u8]) -> Result<Message, Error> {
    decode(
        s,
        s.message_by_name("Z").unwrap(),
        bytes,
        &DecodeOptions::default(),
    )
}

#[test]
fn last_scalar_wins_and_sub_messages_merge() {
    let s = zoo();
    // a=1, a=2, sub{a=3}, sub{sub{a=4}}
    let m = dec(&s, &[8, 1, 8, 2, 18, 2, 8, 3, 18, 4, 18, 2, 8, 4]).unwrap();
    assert_eq!(m.get_by_name(&s, "a").unwrap(), Value::I32(2));
    assert_eq!(encode(&s, &m), [8, 2, 18, 6, 8, 3, 18, 2, 8, 4]);
}

#[test]
fn packed_and_unpacked_are_both_accepted() {
    let s = zoo();
    // packed field sent unpacked, loose field sent packed.
    let m = dec(&s, &[24, 1, 24, 2, 34, 2, 5, 6]).unwrap();
    assert_eq!(encode(&s, &m), [26, 2, 1, 2, 32, 5, 32, 6]);
}

#[test]
fn groups_and_unknown_fields_round_trip() {
    let s = zoo();
    // group 5 {x=7}, unknown varint field 99, unknown group 100 { 1: 1 }
    let input = [43, 48, 7, 44, 152, 6, 1, 163, 6, 8, 1, 164, 6];
    let m = dec(&s, &input).unwrap();
    assert_eq!(encode(&s, &m), input);
}

#[test]
fn closed_enum_unknown_values_stay_unknown() {
    let s = zoo();
    // e = 5 (unknown), es packed [1, 7]
    let m = dec(&s, &[64, 5, 74, 2, 1, 7]).unwrap();
    assert!(!m.has(s.message(m.type_id()).field_index_by_number(8).unwrap()));
    assert_eq!(encode(&s, &m), [74, 1, 1, 64, 5, 72, 7]);
}

#[test]
fn map_entries_sorted_with_missing_parts_defaulted() {
    let s = zoo();
    // entries: {"b": 2}, {value only: 1}, {"a"} ; missing key is "", missing value 0
    let m = dec(
        &s,
        &[58, 5, 10, 1, b'b', 16, 2, 58, 2, 16, 1, 58, 3, 10, 1, b'a'],
    )
    .unwrap();
    assert_eq!(
        encode(&s, &m),
        [58, 4, 10, 0, 16, 1, 58, 5, 10, 1, b'a', 16, 0, 58, 5, 10, 1, b'b', 16, 2]
    );
}

#[test]
fn malformed_input_names_path_and_offset() {
    let s = zoo();
    let e = dec(&s, &[18, 3, 8, 1, 18, 5]).unwrap_err();
    let d = e.as_decode().unwrap();
    assert_eq!(d.path_string(), "Z.sub.sub");
    assert_eq!(d.offset, 5);
    assert!(matches!(d.kind, DecodeErrorKind::Truncated { .. }), "{e}");
    let e = dec(&s, &[18, 9, 8, 1]).unwrap_err();
    assert!(
        matches!(
            e.as_decode().unwrap().kind,
            DecodeErrorKind::LengthOverrun {
                len: 9,
                remaining: 2
            }
        ),
        "{e}"
    );
    for bad in [
        &[0u8, 1][..],
        &[15, 1],
        &[8],
        &[44],
        &[43, 48, 1],
        &[82, 1, 0xff],
    ] {
        assert!(dec(&s, bad).is_err(), "{bad:?}");
    }
}

#[test]
fn depth_limit_is_enforced() {
    let s = zoo();
    let mut bytes: Vec<u8> = vec![8, 1];
    for _ in 0..150 {
        let mut outer = vec![18];
        write_length_prefix(&mut outer, bytes.len());
        outer.extend_from_slice(&bytes);
        bytes = outer;
    }
    let e = dec(&s, &bytes).unwrap_err();
    assert!(
        matches!(e.as_decode().unwrap().kind, DecodeErrorKind::TooDeep(100)),
        "{e}"
    );
    let opts = DecodeOptions {
        depth_limit: 200,
        ..Default::default()
    };
    let m = decode(&s, s.message_by_name("Z").unwrap(), &bytes, &opts).unwrap();
    assert_eq!(encode(&s, &m), bytes);
}

#[test]
fn traces_are_well_formed_and_do_not_change_output() {
    use optimus_trace::{check_structure, Event, Recorder};
    let s = peers();
    let id = s.message_by_name("bench.Mixed").unwrap();
    let bytes = include_bytes!("../../../../testdata/mixed.bin");
    let mut rec = Recorder::new();
    let m = decode_traced(&s, id, bytes, &DecodeOptions::default(), &mut rec).unwrap();
    check_structure(&rec.events).unwrap();
    let enters = rec
        .events
        .iter()
        .filter(|e| matches!(e, Event::Enter { .. }))
        .count();
    assert_eq!(enters, 3, "header, item and geo");
    let decode_reads: u32 = rec
        .events
        .iter()
        .filter_map(|e| match e {
            Event::FieldRead { bytes, .. } => Some(*bytes),
            _ => None,
        })
        .sum();
    assert!(decode_reads as usize <= bytes.len());

    let mut rec = Recorder::new();
    let mut out = Vec::new();
    encode_traced(&s, &m, &mut out, &mut rec);
    assert_eq!(out, bytes);
    check_structure(&rec.events).unwrap();
    assert_eq!(
        rec.events.last(),
        Some(&Event::MessageEnd {
            wire_bytes: bytes.len() as u64
        })
    );
    let converts = rec
        .events
        .iter()
        .filter(|e| matches!(e, Event::Convert { .. }))
        .count();
    // Mixed has 12 scalar fields at the top and 5 + 4 + 4 in its sub-messages.
    assert_eq!(converts, 12 + 5 + 4 + 4);
}

#[test]
fn engine_traces_one_transformation_per_message_and_names_what_it_rejects() {
    use optimus_trace::{Event, TraceSource};
    let flat = include_bytes!("../../../../testdata/flat.bin");
    let mixed = include_bytes!("../../../../testdata/mixed.bin");
    let msgs = [("bench.Flat", &flat[..]), ("bench.Mixed", &mixed[..])];
    for direction in [Direction::Decode, Direction::Encode] {
        let events = EngineTraces.trace(PEERS, &msgs, direction, &[]).unwrap();
        let ends: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                Event::MessageEnd { wire_bytes } => Some(*wire_bytes),
                _ => None,
            })
            .collect();
        assert_eq!(
            ends,
            [flat.len() as u64, mixed.len() as u64],
            "{direction:?}"
        );
    }
    let unknown = EngineTraces.trace(PEERS, &[("bench.Nope", &flat[..])], Direction::Decode, &[]);
    assert_eq!(unknown.unwrap_err(), "no message type bench.Nope");
    let truncated = &flat[..flat.len() - 1];
    let bad = EngineTraces.trace(PEERS, &[("bench.Flat", truncated)], Direction::Encode, &[]);
    assert!(bad.is_err());
    assert!(EngineTraces
        .trace(
            "syntax = \"proto3\"; message {",
            &msgs,
            Direction::Decode,
            &[]
        )
        .is_err());
}

#[test]
fn memory_is_bounded_by_the_input() {
    let s = zoo();
    // 50,000 empty sub-messages in a repeated... here: the same singular field merged, which
    // allocates once, and then a tight explicit limit that a few sub-messages exceed.
    let mut bytes = Vec::new();
    for _ in 0..50_000 {
        bytes.extend_from_slice(&[18, 0]);
    }
    assert!(dec(&s, &bytes).is_ok());
    let nested = [18, 4, 18, 2, 18, 0];
    let opts = DecodeOptions {
        memory_limit_bytes: Some(100),
        ..Default::default()
    };
    let e = decode(&s, s.message_by_name("Z").unwrap(), &nested, &opts).unwrap_err();
    assert!(
        matches!(
            e.as_decode().unwrap().kind,
            DecodeErrorKind::MemoryLimit(100)
        ),
        "{e}"
    );
}

#[test]
fn delimited_streams_split_with_offsets() {
    let stream = [2, 8, 1, 0, 3, 8, 2];
    let items: Vec<_> = delimited(&stream).collect();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0].as_ref().unwrap(), &(1, &[8u8, 1][..]));
    assert_eq!(items[1].as_ref().unwrap(), &(4, &[][..]));
    let e = items[2].as_ref().unwrap_err();
    assert_eq!(e.as_decode().unwrap().offset, 4);
    assert!(matches!(
        e.as_decode().unwrap().kind,
        DecodeErrorKind::LengthOverrun {
            len: 3,
            remaining: 2
        }
    ));
    assert!(delimited(&[]).next().is_none());
    assert!(delimited(&[0x80]).next().unwrap().is_err());
}
