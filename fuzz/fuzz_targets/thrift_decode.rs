//! Thrift decoder fuzz target (TBinaryProtocol and TCompactProtocol, the zoo schema): any
//! input decodes to an error or to a message whose re-encoding is a fixed point in its own
//! protocol, converts to the other protocol and back to the same bytes, and survives JSON
//! (but for NaN payloads); the direct transcoder gives the same bytes or error as decode then
//! encode.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use optimus_core::binary::DecodeOptions;
use optimus_core::thrift::{decode, decode_json, encode, encode_json, transcode, Protocol};
use optimus_core::Arena;
use optimus_schema::{MessageId, SchemaSet};

fn schema() -> (SchemaSet, MessageId) {
    let schema = SchemaSet::from_thrift_sources(&[
        ("zoo.thrift", include_str!("../../testdata/thrift/zoo.thrift")),
        ("zoo_base.thrift", include_str!("../../testdata/thrift/zoo_base.thrift")),
    ])
    .expect("the zoo loads");
    let id = schema.thrift_struct_by_name("Everything").expect("zoo.Everything");
    (schema, id)
}

fuzz_target!(|data: &[u8]| {
    static SCHEMA: OnceLock<(SchemaSet, MessageId)> = OnceLock::new();
    let (schema, id) = SCHEMA.get_or_init(schema);
    let opts = DecodeOptions::default();
    for (p, other) in [
        (Protocol::Binary, Protocol::Compact),
        (Protocol::Compact, Protocol::Binary),
    ] {
        // The direct transcoder gives what decode + encode give, bytes or error.
        for to in [p, other] {
            let mut direct = Vec::new();
            let direct = transcode(schema, *id, data, p, to, &opts, &mut direct)
                .map(|()| direct)
                .map_err(|e| e.to_string());
            let arena = Arena::new();
            let via_record = decode(schema, *id, data, &arena, p, &opts)
                .map_err(|e| e.to_string())
                .and_then(|rec| {
                    let mut out = Vec::new();
                    encode(rec, to, &mut out).map(|()| out).map_err(|e| e.to_string())
                });
            assert_eq!(direct, via_record);
        }
        let arena = Arena::new();
        let Ok(rec) = decode(schema, *id, data, &arena, p, &opts) else {
            continue;
        };
        let mut once = Vec::new();
        encode(rec, p, &mut once).expect("a decoded message encodes");
        let again = decode(schema, *id, &once, &arena, p, &opts).expect("re-encoded bytes decode");
        let mut twice = Vec::new();
        encode(again, p, &mut twice).unwrap();
        assert_eq!(once, twice);
        let mut converted = Vec::new();
        encode(rec, other, &mut converted).unwrap();
        let back = decode(schema, *id, &converted, &arena, other, &opts).expect("converted decodes");
        let mut round = Vec::new();
        encode(back, p, &mut round).unwrap();
        assert_eq!(round, once);
        let mut text = String::new();
        encode_json(rec, &mut text).expect("a decoded message writes JSON");
        if text.contains("NaN") {
            continue; // JSON has one NaN; the wire has many payloads
        }
        let json_opts = optimus_core::json::JsonOptions::default();
        let from_json = decode_json(schema, *id, &text, &arena, &json_opts).expect("JSON reads back");
        let mut via_json = Vec::new();
        encode(from_json, p, &mut via_json).unwrap();
        assert_eq!(via_json, once, "{text}");
    }
});
