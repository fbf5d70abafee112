//! Protobuf editions (2023) through the engine: a message whose features make it delimited
//! (group-encoded) message fields, closed and open enums, implicit and explicit presence,
//! a required field and packed and expanded repeated fields, checked against the bytes
//! Google's C++ runtime (protoc 27.2's `--encode`) writes for it. Python protobuf 4.21.12 (the
//! venv's) predates editions and cannot load the descriptors, so protoc is the reference
//! here; the conformance suite (`scripts/conformance --suite 27 --editions`) covers the rest.
//! The schema and bytes live in `crates/optimus-schema/src/testdata` (see its README).

use optimus_core::binary::{self, DecodeOptions};
use optimus_core::json::{self, JsonOptions};
use optimus_core::{engine, Arena, Message, Value};
use optimus_schema::{MessageId, SchemaSet};

const SET: &[u8] = include_bytes!("../../optimus-schema/src/testdata/editions_zoo.pb");
/// protoc 27.2's encoding of `editions_zoo.txtpb` as `zoo.ed.Zoo`.
const GOOGLE: &[u8] = include_bytes!("../../optimus-schema/src/testdata/editions_zoo.bin");

fn zoo() -> (SchemaSet, MessageId) {
    let s = SchemaSet::from_descriptor_set_bytes(SET).unwrap();
    let id = s.message_by_name("zoo.ed.Zoo").unwrap();
    (s, id)
}

fn get<'m>(s: &SchemaSet, m: &'m Message, number: u32) -> Option<&'m Value> {
    m.get(s.message(m.type_id()).field_index_by_number(number)?)
}

#[test]
fn google_bytes_round_trip_through_both_engines() {
    let (s, id) = zoo();
    let opts = DecodeOptions::default();
    let m = binary::decode(&s, id, GOOGLE, &opts).unwrap();
    assert_eq!(binary::encode(&s, &m), GOOGLE);
    // Explicit presence keeps a zero; the closed enum holds its value.
    assert_eq!(get(&s, &m, 2), Some(&Value::I32(0)));
    assert_eq!(get(&s, &m, 4), Some(&Value::Enum(2)));
    let Some(Value::Message(delimited)) = get(&s, &m, 9) else {
        panic!("no delimited field")
    };
    assert_eq!(get(&s, delimited, 1), Some(&Value::I32(5)));

    let arena = Arena::new();
    let record = engine::decode(&s, id, GOOGLE, &arena, &opts).unwrap();
    let mut out = Vec::new();
    engine::encode(record, &mut out);
    assert_eq!(out, GOOGLE);
}

#[test]
fn delimited_fields_are_groups_on_the_wire_and_named_as_fields_in_json() {
    let (s, id) = zoo();
    // Field 9 as a group: start tag 9<<3|3, v = 5, end tag 9<<3|4.
    assert!(GOOGLE.windows(4).any(|w| w == [0x4b, 0x08, 0x05, 0x4c]));
    let m = binary::decode(&s, id, GOOGLE, &DecodeOptions::default()).unwrap();
    let text = json::encode(&s, &m, &JsonOptions::default()).unwrap();
    assert!(text.contains(r#""delimited":{"v":5}"#), "{text}");
    assert!(text.contains(r#""delimitedList":[{"v":6},{}]"#), "{text}");
    let back = json::decode(&s, id, &text, &JsonOptions::default()).unwrap();
    assert_eq!(binary::encode(&s, &back), GOOGLE);
}

#[test]
fn implicit_presence_and_closed_enums_behave_as_protoc() {
    let (s, id) = zoo();
    // These inputs lack the required field: not checked here (see below).
    let opts = DecodeOptions {
        check_required: false,
        ..DecodeOptions::default()
    };
    for records in [false, true] {
        let run = |bytes: &[u8]| -> Vec<u8> {
            if records {
                let arena = Arena::new();
                let mut out = Vec::new();
                engine::encode(
                    engine::decode(&s, id, bytes, &arena, &opts).unwrap(),
                    &mut out,
                );
                out
            } else {
                binary::encode(&s, &binary::decode(&s, id, bytes, &opts).unwrap())
            }
        };
        // An implicit-presence zero on the wire is not written back; an explicit one is.
        assert_eq!(
            run(&[0x08, 0x00, 0x10, 0x00]),
            [0x10, 0x00],
            "records: {records}"
        );
        // A closed enum's undeclared number is kept as an unknown field (after the known
        // ones); an open enum keeps any number.
        assert_eq!(
            run(&[0x20, 0x05, 0x30, 0x05]),
            [0x30, 0x05, 0x20, 0x05],
            "records: {records}"
        );
        // Expanded and packed repeated fields are written as their features say, whatever
        // form they were read in.
        assert_eq!(
            run(&[0x42, 0x02, 0x03, 0x04]),
            [0x40, 0x03, 0x40, 0x04],
            "records: {records}"
        );
        assert_eq!(
            run(&[0x38, 0x01, 0x38, 0x02]),
            [0x3a, 0x02, 0x01, 0x02],
            "records: {records}"
        );
    }
    // The LEGACY_REQUIRED field is required, as proto2's `required`.
    let strict = DecodeOptions::default();
    assert!(strict.check_required);
    assert!(binary::decode(&s, id, &[0x10, 0x00], &strict).is_err());
    assert!(binary::decode(&s, id, &[0x18, 0x07], &strict).is_ok());
}
