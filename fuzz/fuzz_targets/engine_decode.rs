//! Engine v2 fuzz target: any input gives the table walkers (arena records, the engine's
//! unsafe code) exactly what the reflective codec gives: the same error, or the same bytes
//! when re-encoded, borrowed or copied.
#![no_main]

mod common;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::{engine, Arena};

fuzz_target!(|data: &[u8]| {
    static SCHEMA: OnceLock<(optimus_schema::SchemaSet, [optimus_schema::MessageId; 2])> =
        OnceLock::new();
    let (schema, ids) = SCHEMA.get_or_init(common::schema);
    let opts = DecodeOptions::default();
    for &id in ids {
        let arena = Arena::new();
        let reflective = binary::decode(schema, id, data, &opts);
        let tables = engine::decode(schema, id, data, &arena, &opts);
        match (reflective, tables) {
            (Ok(msg), Ok(record)) => {
                let want = binary::encode(schema, &msg);
                let mut got = Vec::new();
                engine::encode(record, &mut got);
                assert_eq!(got, want);
                let copied = engine::decode_copied(schema, id, data, &arena, &opts).unwrap();
                let mut again = Vec::new();
                engine::encode(copied, &mut again);
                assert_eq!(again, want);
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (a, b) => panic!("reflective {:?}, tables {:?}", a.is_ok(), b.is_ok()),
        }
    }
});
