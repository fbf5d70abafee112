//! JSON decoder fuzz target: any text decodes to an error or to a message that survives a
//! JSON round trip (encode, decode, encode gives the same text; text with a `null` member may
//! take one more round trip to settle, see below).
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
                let twice = encode(schema, &again, &opts).expect("re-encodes");
                if twice != once && once.contains(":null") {
                    // A `google.protobuf.NullValue` field holding a number other than 0 is
                    // written `null`, as Google's printers write every NullValue, and `null`
                    // reads back as 0, which a field without presence does not write: such
                    // text settles after one more round trip, and must then stay.
                    let third = decode(schema, id, &twice, &opts).expect("encoded JSON decodes");
                    assert_eq!(encode(schema, &third, &opts).expect("re-encodes"), twice);
                } else {
                    assert_eq!(twice, once);
                }
            }
        }
    }
});
