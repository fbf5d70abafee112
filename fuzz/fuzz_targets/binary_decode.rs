//! Binary decoder fuzz target: any input decodes to an error or to a message whose
//! re-encoding decodes again to the same bytes (deterministic output is a fixed point).
#![no_main]

mod common;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use optimus_core::binary::{decode, encode, DecodeOptions};

fuzz_target!(|data: &[u8]| {
    static SCHEMA: OnceLock<(optimus_schema::SchemaSet, [optimus_schema::MessageId; 2])> =
        OnceLock::new();
    let (schema, ids) = SCHEMA.get_or_init(common::schema);
    let opts = DecodeOptions::default();
    for &id in ids {
        if let Ok(msg) = decode(schema, id, data, &opts) {
            let once = encode(schema, &msg);
            let again = decode(schema, id, &once, &opts).expect("re-encoded message decodes");
            assert_eq!(encode(schema, &again), once);
        }
    }
});
