//! Converter fuzz target: any protobuf bytes that decode as the proto3 conformance type are
//! carried through a converter plan with one op of every kind (scale, hash, redact, enum
//! renames, a default, a rename, a rule inside a sub-message) into a record that encodes and
//! decodes again; a value that cannot convert is an error naming its path, never a panic.
#![no_main]

mod common;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use optimus_core::binary::DecodeOptions;
use optimus_core::convert::{Plan, Program};
use optimus_core::{engine, Arena};

const TRANSFORM: &str = r#"
[fields.optional_int32]
scale = 3
[fields.optional_int64]
scale = 1e15
[fields.optional_string]
hash = "sha256"
[fields.optional_bytes]
redact = true
[fields.repeated_int64]
scale = 0.5
[fields."optional_nested_message.a"]
scale = -1
[fields.optional_nested_enum]
enum = { FOO = "BAR", BAR = "FOO" }
[fields.optional_double]
default = 2.5
[fields.optional_float]
rename = "optional_float"
"#;

fuzz_target!(|data: &[u8]| {
    static SCHEMA: OnceLock<(optimus_schema::SchemaSet, [optimus_schema::MessageId; 2])> =
        OnceLock::new();
    static PLAN: OnceLock<Plan<'static>> = OnceLock::new();
    let (schema, ids) = SCHEMA.get_or_init(common::schema);
    let p3 = ids[1];
    let plan = PLAN.get_or_init(|| {
        let program =
            Program::from_transform_toml("transform", TRANSFORM).expect("the program reads");
        Plan::compile(schema, p3, schema, p3, &program).expect("the program compiles")
    });
    let arena = Arena::new();
    let opts = DecodeOptions::default();
    let Ok(rec) = engine::decode(schema, p3, data, &arena, &opts) else {
        return;
    };
    match plan.apply(rec, &arena) {
        Ok(out) => {
            let mut bytes = Vec::new();
            engine::encode(out, &mut bytes);
            let again = engine::decode(schema, p3, &bytes, &arena, &opts)
                .expect("a converted record encodes to bytes that decode");
            let mut twice = Vec::new();
            engine::encode(again, &mut twice);
            assert_eq!(twice, bytes);
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
