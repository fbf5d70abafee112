//! JSON decoder fuzz target: any text decodes to an error or to a message that survives a
//! JSON round trip (encode, decode, encode gives the same text).
#![no_main]

mod common;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use optimus_core::json::{decode, encode, JsonOptions};

fuzz_target!(|data: &[u8]| {
    static SCHEMA: OnceLock<(optimus_schema::SchemaSet, [optimus_schema::MessageId; 2])> =
        OnceLock::new();
    let (schema, ids) = SCHEMA.get_or_init(common::schema);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let opts = JsonOptions::default();
    for &id in ids {
        if let Ok(msg) = decode(schema, id, text, &opts) {
            // Values that JSON cannot represent (e.g. an out-of-range Timestamp) may refuse to
            // encode; anything that encodes must read back to the same text.
            if let Ok(once) = encode(schema, &msg, &opts) {
                let again = decode(schema, id, &once, &opts).expect("encoded JSON decodes");
                assert_eq!(encode(schema, &again, &opts).expect("re-encodes"), once);
            }
        }
    }
});
