//! Mutation test: at least 100,000 truncated, bit-flipped and length-corrupted inputs for each
//! decoder. Every one must give an `Err` or a valid message (one that re-encodes and decodes
//! again); a panic or a hang fails the test.

mod common;

use common::{conformance_schema, mutate, random_message, Rng};
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::json::{self, JsonOptions};

const CASES_PER_DECODER: usize = 100_000;

#[test]
fn binary_decoder_survives_mutations() {
    let schema = conformance_schema();
    let ids: Vec<_> = [
        "protobuf_test_messages.proto3.TestAllTypesProto3",
        "protobuf_test_messages.proto2.TestAllTypesProto2",
    ]
    .iter()
    .map(|n| schema.message_by_name(n).unwrap())
    .collect();
    let mut rng = Rng(0x0b71_u64);
    let seeds: Vec<(usize, Vec<u8>)> = (0..64)
        .map(|i| {
            let k = i % ids.len();
            (
                k,
                binary::encode(&schema, &random_message(&schema, ids[k], &mut rng, 3)),
            )
        })
        .collect();
    let opts = DecodeOptions::default();
    let (mut ok, mut err) = (0usize, 0usize);
    for case in 0..CASES_PER_DECODER {
        let (k, seed) = &seeds[case % seeds.len()];
        let input = mutate(seed, &mut rng);
        match binary::decode(&schema, ids[*k], &input, &opts) {
            Ok(msg) => {
                let bytes = binary::encode(&schema, &msg);
                let again = binary::decode(&schema, ids[*k], &bytes, &opts)
                    .unwrap_or_else(|e| panic!("case {case}: re-encoded message fails: {e}"));
                assert_eq!(binary::encode(&schema, &again), bytes, "case {case}");
                ok += 1;
            }
            Err(e) => {
                assert!(e.as_decode().is_some(), "case {case}: {e}");
                err += 1;
            }
        }
    }
    assert_eq!(ok + err, CASES_PER_DECODER);
    assert!(
        err > 0 && ok > 0,
        "mutations exercised both outcomes: ok={ok} err={err}"
    );
}

#[test]
fn json_decoder_survives_mutations() {
    let schema = conformance_schema();
    let ids: Vec<_> = [
        "protobuf_test_messages.proto3.TestAllTypesProto3",
        "protobuf_test_messages.proto2.TestAllTypesProto2",
    ]
    .iter()
    .map(|n| schema.message_by_name(n).unwrap())
    .collect();
    let mut rng = Rng(0x150e_u64);
    let opts = JsonOptions::default();
    let seeds: Vec<(usize, Vec<u8>)> = (0..64)
        .map(|i| {
            let k = i % ids.len();
            let msg = random_message(&schema, ids[k], &mut rng, 3);
            (k, json::encode(&schema, &msg, &opts).unwrap().into_bytes())
        })
        .collect();
    let (mut ok, mut err) = (0usize, 0usize);
    for case in 0..CASES_PER_DECODER {
        let (k, seed) = &seeds[case % seeds.len()];
        let input = mutate(seed, &mut rng);
        let Ok(text) = std::str::from_utf8(&input) else {
            err += 1;
            continue;
        };
        match json::decode(&schema, ids[*k], text, &opts) {
            Ok(msg) => {
                if let Ok(out) = json::encode(&schema, &msg, &opts) {
                    json::decode(&schema, ids[*k], &out, &opts).unwrap_or_else(|e| {
                        panic!("case {case}: re-encoded JSON fails: {e}\n{out}")
                    });
                }
                ok += 1;
            }
            Err(e) => {
                assert!(e.as_decode().is_some(), "case {case}: {e}");
                err += 1;
            }
        }
    }
    assert_eq!(ok + err, CASES_PER_DECODER);
    assert!(
        err > 0 && ok > 0,
        "mutations exercised both outcomes: ok={ok} err={err}"
    );
}
