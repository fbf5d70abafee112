//! Binary codec tests: the Optimus Prime messages re-encode byte-identically, merge rules,
//! unknown fields, groups, and malformed input.

use optimus_schema::SchemaSet;

use super::*;
use crate::value::List;
use crate::Value;
use optimus_trace::Region;

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

/// The events of decoding `bytes` as a message of type `name`, and the message.
fn decode_events(s: &SchemaSet, name: &str, bytes: &[u8]) -> (Message, Vec<Event>) {
    let id = s.message_by_name(name).unwrap();
    let mut rec = Recorder::new();
    let m = decode_traced(s, id, bytes, &DecodeOptions::default(), &mut rec).unwrap();
    (m, rec.events)
}

/// The events of encoding `m`.
fn encode_events(s: &SchemaSet, m: &Message) -> Vec<Event> {
    let mut rec = Recorder::new();
    encode_traced(s, m, &mut Vec::new(), &mut rec);
    rec.events
}

/// The schema read of field `index` of type `name`, as the codecs report it.
fn schema_read_of(s: &SchemaSet, name: &str, index: usize) -> Event {
    let f = &s.message(s.message_by_name(name).unwrap()).fields[index];
    Event::SchemaRead {
        kind: f.kind as u16,
        repetition: super::repetition(f),
        addr: f as *const optimus_schema::Field as u64,
        size: std::mem::size_of::<optimus_schema::Field>() as u32,
    }
}

/// `(address, bytes)` of every access of `events` in message memory that `pick` selects.
fn message_accesses(events: &[Event], pick: fn(&Event) -> Option<(u64, u32)>) -> Vec<(u64, u32)> {
    events.iter().filter_map(pick).collect()
}

/// A write into message memory.
fn message_write(e: &Event) -> Option<(u64, u32)> {
    match *e {
        Event::FieldWrite {
            region: Region::Message,
            addr,
            bytes,
        } => Some((addr, bytes)),
        _ => None,
    }
}

/// A read of message memory.
fn message_read(e: &Event) -> Option<(u64, u32)> {
    match *e {
        Event::FieldRead {
            region: Region::Message,
            addr,
            bytes,
        } => Some((addr, bytes)),
        _ => None,
    }
}

const STORED: &str = r#"syntax = "proto3";
    message Sub { int32 x = 1; string y = 2; }
    message S {
      int32 i = 1;
      double d = 2;
      oneof pick { int32 o1 = 3; string o2 = 4; }
      repeated int32 packed = 5;
      repeated sint64 loose = 6 [packed = false];
      map<int32, int32> ints = 7;
      map<string, Sub> subs = 8;
      string s = 9;
      Sub sub = 10;
    }"#;

#[test]
fn decode_writes_each_value_where_the_message_keeps_it() {
    let s = SchemaSet::from_source(STORED).unwrap();
    let id = s.message_by_name("S").unwrap();
    let json = r#"{"i": 7, "d": 2.5, "o1": 9, "packed": [1, 300, 3], "loose": ["-4"],
        "ints": {"1": 10, "2": 20}, "subs": {"a": {"x": 1, "y": "p"}, "b": {"x": 2}},
        "s": "text", "sub": {"x": 5, "y": "q"}}"#;
    let built = crate::json::decode(&s, id, json, &crate::json::JsonOptions::default()).unwrap();
    let mut bytes = encode(&s, &built);
    // An unknown field: field 99, varint 1.
    bytes.extend_from_slice(&[152, 6, 1]);
    let (m, events) = decode_events(&s, "S", &bytes);
    // The int32 is written at its slot, not at a temporary's address.
    let slot = m.get(0).unwrap().scalar().unwrap().1;
    assert_eq!(message_accesses(&events, message_write)[0], (slot, 4));
    // Encoding reads each value where the message keeps it: every write of the decode lies
    // within one of those reads. (The lists and maps here are small enough that their
    // storage does not move while they fill.)
    let reads = message_accesses(&encode_events(&s, &m), message_read);
    let writes = message_accesses(&events, message_write);
    assert_eq!(writes.len(), 20, "{writes:x?}");
    for (addr, bytes) in writes {
        let end = addr + u64::from(bytes);
        assert!(
            reads
                .iter()
                .any(|&(a, n)| a <= addr && end <= a + u64::from(n)),
            "write at {addr:#x} ({bytes} bytes) is outside the message: {reads:x?}"
        );
    }
}

/// The events of each map entry of `events` (its `Enter` of `entry` to its `Leave`), with
/// addresses, sizes and regions left out.
fn entry_shapes(events: &[Event], entry: u32) -> Vec<Vec<std::mem::Discriminant<Event>>> {
    let mut entries = Vec::new();
    let mut open: Option<(usize, Vec<_>)> = None;
    let mut depth = 0usize;
    for e in events {
        match e {
            Event::Enter { type_id } => {
                depth += 1;
                if *type_id == entry && open.is_none() {
                    open = Some((depth, Vec::new()));
                }
            }
            Event::Leave => depth -= 1,
            _ => {}
        }
        if let Some((at, shape)) = &mut open {
            shape.push(std::mem::discriminant(e));
            if depth < *at {
                entries.push(open.take().unwrap().1);
            }
        }
    }
    entries
}

#[test]
fn schema_reads_say_whether_a_field_is_a_list_and_how_it_is_written() {
    use optimus_trace::Repetition::{Packed, Repeated, Single};
    let s = SchemaSet::from_source(STORED).unwrap();
    let id = s.message_by_name("S").unwrap();
    let json = r#"{"i": 7, "packed": [1, 2], "loose": ["3", "4"], "ints": {"1": 10},
        "sub": {"x": 5}}"#;
    let built = crate::json::decode(&s, id, json, &crate::json::JsonOptions::default()).unwrap();
    let (m, decoded) = decode_events(&s, "S", &encode(&s, &built));
    let encoded = encode_events(&s, &m);
    let top = s.message(id);
    let of = |events: &[Event]| -> Vec<(String, optimus_trace::Repetition)> {
        events
            .iter()
            .filter_map(|e| match *e {
                Event::SchemaRead {
                    addr, repetition, ..
                } => top
                    .fields
                    .iter()
                    .find(|f| *f as *const optimus_schema::Field as u64 == addr)
                    .map(|f| (f.name.clone(), repetition)),
                _ => None,
            })
            .collect()
    };
    let named = |list: &[(&str, optimus_trace::Repetition)]| -> Vec<(String, _)> {
        list.iter().map(|&(n, r)| (n.to_string(), r)).collect()
    };
    // The encoder reads each field's entry once; the decoder at each tag (a packed list has
    // one; the unpacked list and the map one per value).
    assert_eq!(
        of(&encoded),
        named(&[
            ("i", Single),
            ("packed", Packed),
            ("loose", Repeated),
            ("ints", Repeated),
            ("sub", Single),
        ])
    );
    assert_eq!(
        of(&decoded),
        named(&[
            ("i", Single),
            ("packed", Packed),
            ("loose", Repeated),
            ("loose", Repeated),
            ("ints", Repeated),
            ("sub", Single),
        ])
    );
}

#[test]
fn map_entries_are_traced_alike_in_both_directions() {
    let s = SchemaSet::from_source(STORED).unwrap();
    let id = s.message_by_name("S").unwrap();
    let json = r#"{"subs": {"a": {"x": 1, "y": "p"}, "bb": {"x": 2, "y": "qq"}}}"#;
    let built = crate::json::decode(&s, id, json, &crate::json::JsonOptions::default()).unwrap();
    let (m, decoded) = decode_events(&s, "S", &encode(&s, &built));
    let encoded = encode_events(&s, &m);
    let entry = s.message(id).fields[7].message.unwrap().0;
    let d = entry_shapes(&decoded, entry);
    let e = entry_shapes(&encoded, entry);
    assert_eq!(d.len(), 2);
    assert_eq!(d, e);
    // Enter, key entry, its read, convert, write, value entry, the sub-message (Enter, two
    // fields of four events each, Leave), Leave.
    assert_eq!(d[0].len(), 1 + 4 + 1 + (1 + 8 + 1) + 1);
    let key = schema_read_of(&s, "S.SubsEntry", 0);
    let value = schema_read_of(&s, "S.SubsEntry", 1);
    for events in [&decoded, &encoded] {
        assert_eq!(events.iter().filter(|e| **e == key).count(), 2);
        assert_eq!(events.iter().filter(|e| **e == value).count(), 2);
    }
}

#[test]
fn unknown_bytes_are_traced_as_read_and_kept() {
    let s = zoo();
    let begin = Event::MessageBegin {
        direction: Direction::Decode,
        format: Format::Protobuf,
        type_id: s.message_by_name("Z").unwrap().0,
    };
    let buf = |addr: u64, bytes: u32| Event::FieldRead {
        region: Region::Buffer,
        addr,
        bytes,
    };
    let kept = |addr: u64, bytes: u32| Event::FieldWrite {
        region: Region::Message,
        addr,
        bytes,
    };
    let int32 = optimus_schema::Kind::Int32 as u16;
    let end = |wire_bytes| Event::MessageEnd { wire_bytes };

    // a = 1, then field 99 = 1: the unknown field is read and stored, unconverted.
    let (m, events) = decode_events(&s, "Z", &[8, 1, 152, 6, 1]);
    let slot = m.get(0).unwrap().scalar().unwrap().1;
    let unknown = m.unknown_fields().as_ptr() as u64;
    let expected = [
        begin,
        schema_read_of(&s, "Z", 0),
        buf(1, 1),
        Event::Convert {
            op: int32,
            bytes: 1,
        },
        kept(slot, 4),
        buf(2, 3),
        kept(unknown, 3),
        end(5),
    ];
    assert_eq!(events, expected);

    // a as a fixed32: the decoder reads a's entry to learn that the wire type does not fit,
    // so that read stays; the field's bytes are then kept, and traced, as unknown.
    let (m, events) = decode_events(&s, "Z", &[13, 1, 0, 0, 0]);
    assert!(!m.has(0));
    let unknown = m.unknown_fields().as_ptr() as u64;
    let expected = [
        begin,
        schema_read_of(&s, "Z", 0),
        buf(0, 5),
        kept(unknown, 5),
        end(5),
    ];
    assert_eq!(events, expected);

    // (Z's fields by index: a, sub, packed, loose, G, m, e, es, s.)
    // e = 5, a value the closed enum lacks: unknown bytes, not a write of the field.
    let (m, events) = decode_events(&s, "Z", &[64, 5]);
    assert_eq!(m.unknown_fields(), [64, 5]);
    let unknown = m.unknown_fields().as_ptr() as u64;
    let expected = [
        begin,
        schema_read_of(&s, "Z", 6),
        buf(0, 2),
        kept(unknown, 2),
        end(2),
    ];
    assert_eq!(events, expected);

    // es packed [1, 7]: 1 is an element; 7 is kept unknown behind a tag of its own.
    let (m, events) = decode_events(&s, "Z", &[74, 2, 1, 7]);
    assert_eq!(m.unknown_fields(), [72, 7]);
    let element = m.get(7).unwrap().as_list().unwrap();
    let List::Enum(element) = element else {
        panic!("{element:?}")
    };
    let expected = [
        begin,
        schema_read_of(&s, "Z", 7),
        buf(2, 1),
        Event::Convert {
            op: optimus_schema::Kind::Enum as u16,
            bytes: 1,
        },
        kept(element.as_ptr() as u64, 4),
        buf(3, 1),
        kept(m.unknown_fields().as_ptr() as u64, 2),
        end(4),
    ];
    assert_eq!(events, expected);
}

#[test]
fn a_map_entry_with_an_unknown_closed_enum_value_is_kept_unknown() {
    let s = SchemaSet::from_source(
        r#"syntax = "proto2"; enum E { A = 0; B = 1; } message M { map<int32, E> m = 1; }"#,
    )
    .unwrap();
    // {1: 5}, then {2: B}.
    let input = [10, 4, 8, 1, 16, 5, 10, 4, 8, 2, 16, 1];
    let (m, events) = decode_events(&s, "M", &input);
    assert_eq!(m.unknown_fields(), &input[..6]);
    let map = m.get(0).unwrap().as_map().unwrap();
    assert_eq!(map.len(), 1);
    assert_eq!(map.values().next(), Some(&Value::Enum(1)));
    // The first entry: the map field's entry, then its bytes read and kept as unknown.
    assert_eq!(
        &events[1..4],
        [
            schema_read_of(&s, "M", 0),
            Event::FieldRead {
                region: Region::Buffer,
                addr: 0,
                bytes: 6
            },
            Event::FieldWrite {
                region: Region::Message,
                addr: m.unknown_fields().as_ptr() as u64,
                bytes: 6
            },
        ]
    );
    assert!(matches!(events[5], Event::Enter { .. }));
    assert_eq!(encode(&s, &m), [10, 4, 8, 2, 16, 1, 10, 4, 8, 1, 16, 5]);
}
