//! Property tests: for random messages of every conformance type, binary and JSON round
//! trips give back the same message, binary output is a fixed point of decode + encode, and
//! decoding into a cleared message that held another gives what a fresh decode gives.

mod common;

use common::{conformance_schema, random_message, Rng};
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::json::{self, JsonOptions};
use proptest::prelude::*;

const TYPES: [&str; 2] = [
    "protobuf_test_messages.proto3.TestAllTypesProto3",
    "protobuf_test_messages.proto2.TestAllTypesProto2",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn binary_round_trip(seed in any::<u64>(), which in 0usize..2, depth in 0u32..4) {
        let schema = conformance_schema();
        let id = schema.message_by_name(TYPES[which]).unwrap();
        let msg = random_message(&schema, id, &mut Rng(seed), depth);
        let bytes = binary::encode(&schema, &msg);
        prop_assert_eq!(bytes.len(), binary::encoded_len(&schema, &msg));
        let back = binary::decode(&schema, id, &bytes, &DecodeOptions::default()).unwrap();
        // The message itself comes back, not only its encoding (any_schema.rs does the same
        // over random schemas, floats by their bits).
        prop_assert!(back == msg, "decode(encode(m)) != m:\n{:?}\n{:?}", back, msg);
        prop_assert_eq!(binary::encode(&schema, &back), bytes);
    }

    #[test]
    fn a_cleared_message_decodes_like_a_new_one(first in any::<u64>(), second in any::<u64>(), which in 0usize..2, depth in 0u32..4) {
        let schema = conformance_schema();
        let id = schema.message_by_name(TYPES[which]).unwrap();
        let bytes = |seed| binary::encode(&schema, &random_message(&schema, id, &mut Rng(seed), depth));
        let (old, new) = (bytes(first), bytes(second));
        let opts = DecodeOptions::default();
        let mut reused = binary::decode(&schema, id, &old, &opts).unwrap();
        reused.clear_all();
        prop_assert_eq!(reused.set_count(), 0);
        binary::merge(&schema, &mut reused, &new, &opts).unwrap();
        let fresh = binary::decode(&schema, id, &new, &opts).unwrap();
        prop_assert_eq!(binary::encode(&schema, &reused), binary::encode(&schema, &fresh));
        prop_assert_eq!(json::encode(&schema, &reused, &JsonOptions::default()).unwrap(),
                        json::encode(&schema, &fresh, &JsonOptions::default()).unwrap());
        prop_assert!(reused == fresh);
    }

    #[test]
    fn json_round_trip(seed in any::<u64>(), which in 0usize..2, depth in 0u32..4, proto_names in any::<bool>()) {
        let schema = conformance_schema();
        let id = schema.message_by_name(TYPES[which]).unwrap();
        let msg = random_message(&schema, id, &mut Rng(seed), depth);
        let opts = JsonOptions { proto_names, ..JsonOptions::default() };
        let text = json::encode(&schema, &msg, &opts).unwrap();
        let back = json::decode(&schema, id, &text, &opts).unwrap();
        // Unknown closed-enum values and unknown fields have no JSON form; compare the
        // known content through the binary form of both sides.
        let strip = |m: &optimus_core::Message| {
            let b = binary::encode(&schema, m);
            let again = binary::decode(&schema, id, &b, &DecodeOptions::default()).unwrap();
            json::encode(&schema, &again, &opts).unwrap()
        };
        prop_assert_eq!(strip(&back), text);
    }
}
