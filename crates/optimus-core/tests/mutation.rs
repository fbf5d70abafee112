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

/// Thrift's decoders (binary and compact, into arena records): seeds are random messages of
/// every struct of the Thrift zoo and the workloads that encode (random values may break a
/// Thrift rule, e.g. an `i16` out of range, and are skipped as seeds); every mutated input must
/// decode to an error or to a record that re-encodes and decodes to the same bytes.
fn thrift_survives_mutations(protocol: optimus_core::thrift::Protocol, seed: u64) {
    use optimus_core::{thrift, Arena, Record};
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/thrift");
    let schema = SchemaSet::from_thrift_files(&["zoo.thrift", "peers.thrift"], &[dir]).unwrap();
    let ids: Vec<MessageId> = [
        "Everything",
        "Containers",
        "Scalars",
        "Flat",
        "Mixed",
        "Nested",
    ]
    .iter()
    .map(|n| schema.thrift_struct_by_name(n).unwrap())
    .collect();
    let opts = DecodeOptions::default();
    let mut rng = Rng(seed ^ seed_offset());
    let mut seeds: Vec<(MessageId, Vec<u8>)> = Vec::new();
    for i in 0..4096 {
        if seeds.len() == 64 {
            break;
        }
        let id = ids[i % ids.len()];
        let msg = random_message(&schema, id, &mut rng, 3);
        let arena = Arena::new();
        let mut out = Vec::new();
        if thrift::encode(
            Record::from_message(&schema, &msg, &arena),
            protocol,
            &mut out,
        )
        .is_ok()
            && thrift::decode(&schema, id, &out, &arena, protocol, &opts).is_ok()
        {
            seeds.push((id, out));
        }
    }
    assert!(seeds.len() >= 16, "only {} seeds encode", seeds.len());
    let total = cases();
    let (mut ok, mut err) = (0usize, 0usize);
    let mut arena = Arena::new();
    for case in 0..total {
        arena.reset();
        let (id, seed) = &seeds[case % seeds.len()];
        let input = mutate(seed, &mut rng);
        match thrift::decode(&schema, *id, &input, &arena, protocol, &opts) {
            Ok(rec) => {
                let mut bytes = Vec::new();
                thrift::encode(rec, protocol, &mut bytes).unwrap_or_else(|e| {
                    panic!("case {case}: a decoded record fails to encode: {e}")
                });
                let again = thrift::decode(&schema, *id, &bytes, &arena, protocol, &opts)
                    .unwrap_or_else(|e| panic!("case {case}: re-encoded bytes fail: {e}"));
                let mut twice = Vec::new();
                thrift::encode(again, protocol, &mut twice).unwrap();
                assert_eq!(twice, bytes, "case {case}");
                ok += 1;
            }
            Err(e) => {
                assert!(e.as_decode().is_some(), "case {case}: {e}");
                err += 1;
            }
        }
    }
    assert!(
        err > 0 && ok > 0,
        "mutations exercised both outcomes: ok={ok} err={err}"
    );
}

#[test]
fn thrift_binary_decoder_survives_mutations() {
    thrift_survives_mutations(optimus_core::thrift::Protocol::Binary, 0x7b1a);
}

#[test]
fn thrift_compact_decoder_survives_mutations() {
    thrift_survives_mutations(optimus_core::thrift::Protocol::Compact, 0x7c0c);
}
