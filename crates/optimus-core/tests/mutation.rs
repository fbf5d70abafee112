//! Mutation test: at least 100,000 truncated, bit-flipped and length-corrupted inputs for each
//! decoder. Every one must give an `Err` or a valid message (one that re-encodes and decodes
//! again); a panic or a hang fails the test.

mod common;

use common::{conformance_schema, mutate, random_message, Rng};
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::json::{self, JsonOptions};
use optimus_core::{Error, Message};
use optimus_schema::{MessageId, SchemaSet};

/// Cases per decoder; `OPTIMUS_MUTATION_CASES` raises it for longer runs, and
/// `OPTIMUS_MUTATION_SEED` varies the corpus.
const CASES_PER_DECODER: usize = 100_000;

fn cases() -> usize {
    std::env::var("OPTIMUS_MUTATION_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CASES_PER_DECODER)
        .max(CASES_PER_DECODER)
}

fn seed_offset() -> u64 {
    std::env::var("OPTIMUS_MUTATION_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// One decoder under test: how to write a seed message, how to read bytes back, and how to
/// check that a message it accepted is valid (it re-encodes and decodes again).
struct Codec {
    encode: fn(&SchemaSet, &Message) -> Vec<u8>,
    decode: fn(&SchemaSet, MessageId, &[u8]) -> Result<Message, Error>,
    check: fn(&SchemaSet, MessageId, &Message, usize),
}

fn survive_mutations(codec: Codec, seed: u64) {
    let schema = conformance_schema();
    let ids: Vec<MessageId> = [
        "protobuf_test_messages.proto3.TestAllTypesProto3",
        "protobuf_test_messages.proto2.TestAllTypesProto2",
    ]
    .iter()
    .map(|n| schema.message_by_name(n).unwrap())
    .collect();
    let mut rng = Rng(seed ^ seed_offset());
    let total = cases();
    let seeds: Vec<(MessageId, Vec<u8>)> = (0..64)
        .map(|i| {
            let id = ids[i % ids.len()];
            (
                id,
                (codec.encode)(&schema, &random_message(&schema, id, &mut rng, 3)),
            )
        })
        .collect();
    let (mut ok, mut err) = (0usize, 0usize);
    for case in 0..total {
        let (id, seed) = &seeds[case % seeds.len()];
        let input = mutate(seed, &mut rng);
        match (codec.decode)(&schema, *id, &input) {
            Ok(msg) => {
                (codec.check)(&schema, *id, &msg, case);
                ok += 1;
            }
            Err(e) => {
                assert!(e.as_decode().is_some(), "case {case}: {e}");
                err += 1;
            }
        }
    }
    assert_eq!(ok + err, total);
    assert!(
        err > 0 && ok > 0,
        "mutations exercised both outcomes: ok={ok} err={err}"
    );
}

#[test]
fn binary_decoder_survives_mutations() {
    survive_mutations(
        Codec {
            encode: binary::encode,
            decode: |s, id, b| binary::decode(s, id, b, &DecodeOptions::default()),
            check: |s, id, msg, case| {
                let bytes = binary::encode(s, msg);
                let again = binary::decode(s, id, &bytes, &DecodeOptions::default())
                    .unwrap_or_else(|e| panic!("case {case}: re-encoded message fails: {e}"));
                assert_eq!(binary::encode(s, &again), bytes, "case {case}");
            },
        },
        0x0b71,
    );
}

#[test]
fn json_decoder_survives_mutations() {
    survive_mutations(
        Codec {
            encode: |s, m| {
                json::encode(s, m, &JsonOptions::default())
                    .unwrap()
                    .into_bytes()
            },
            decode: |s, id, b| match std::str::from_utf8(b) {
                Ok(text) => json::decode(s, id, text, &JsonOptions::default()),
                // Not text at all: the CLI rejects it before the decoder; count it as an error.
                Err(_) => Err(Error::decode(0, optimus_core::DecodeErrorKind::InvalidUtf8)),
            },
            check: |s, id, msg, case| {
                // Values JSON cannot represent may refuse to encode; what encodes reads back.
                if let Ok(out) = json::encode(s, msg, &JsonOptions::default()) {
                    json::decode(s, id, &out, &JsonOptions::default()).unwrap_or_else(|e| {
                        panic!("case {case}: re-encoded JSON fails: {e}\n{out}")
                    });
                }
            },
        },
        0x150e,
    );
}
