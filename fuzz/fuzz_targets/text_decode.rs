//! Protobuf text format fuzz target: any text decodes to an error or to a record that
//! survives a text round trip (encode, decode, encode gives the same text).
#![no_main]

mod common;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use optimus_core::text::{decode, encode, TextOptions};
use optimus_core::Arena;

fuzz_target!(|data: &[u8]| {
    static SCHEMA: OnceLock<(optimus_schema::SchemaSet, [optimus_schema::MessageId; 2])> =
        OnceLock::new();
    let (schema, ids) = SCHEMA.get_or_init(common::schema);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let opts = TextOptions::default();
    for &id in ids {
        let arena = Arena::new();
        if let Ok(rec) = decode(schema, id, text, &arena, &opts) {
            let mut once = String::new();
            if encode(rec, &opts, &mut once).is_err() {
                continue;
            }
            let again = decode(schema, id, &once, &arena, &opts).expect("encoded text decodes");
            let mut twice = String::new();
            encode(again, &opts, &mut twice).expect("re-encodes");
            assert_eq!(twice, once);
        }
    }
});
