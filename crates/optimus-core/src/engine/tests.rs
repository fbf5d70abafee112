//! Engine v2 tests: the table walkers against the reflective codec (`binary`), which the
//! conformance suite and the differential tests against Google protobuf hold to the byte.
//! Every input — the Optimus Prime messages, hand-made edge cases, and schema-guided random
//! messages with random mutations — must give the same result both ways: the same bytes out,
//! the same message, or the same error.

use optimus_schema::{Cardinality, Kind, MessageId, SchemaSet, WireType};

use super::*;
use crate::binary;
use crate::view::FieldRef;

const PEERS: &str = include_str!("../../../../testdata/peers.proto");
const PROTO3: &str = include_str!("../../../../testdata/conformance/test_messages_proto3.proto");
const PROTO2: &str = include_str!("../../../../testdata/conformance/test_messages_proto2.proto");

fn schema_of(files: &[(&str, &str)]) -> SchemaSet {
    SchemaSet::from_sources(files).expect("test protos compile")
}

/// Decodes `input` both ways and checks they agree: bytes out, message, or error. Returns
/// whether the input decoded.
fn check_same(schema: &SchemaSet, id: MessageId, input: &[u8]) -> bool {
    let opts = DecodeOptions::default();
    let v1 = binary::decode(schema, id, input, &opts);
    let arena = Arena::new();
    let v2 = decode(schema, id, input, &arena, &opts);
    match (v1, v2) {
        (Ok(m), Ok(r)) => {
            let want = binary::encode(schema, &m);
            let mut got = Vec::new();
            encode(r, &mut got);
            assert_eq!(got, want, "encode of {input:?}");
            assert_eq!(encoded_len(r), want.len());
            // A fresh encoder grows its buffer while it writes, sub-messages and all.
            assert_eq!(
                Encoder::new().encode(r),
                &want[..],
                "fresh encoder, {input:?}"
            );
            // Compared through its bytes: a NaN value is not equal to itself.
            assert_eq!(
                binary::encode(schema, &r.to_message()),
                want,
                "message of {input:?}"
            );
            let copied_arena = Arena::new();
            let copied = decode_copied(schema, id, input, &copied_arena, &opts).unwrap();
            let mut again = Vec::new();
            encode(copied, &mut again);
            assert_eq!(again, want);
            for opts in [
                JsonOptions::default(),
                JsonOptions {
                    emit_defaults: true,
                    proto_names: true,
                    ignore_unknown: true,
                    ..JsonOptions::default()
                },
            ] {
                let want = crate::json::encode(schema, &m, &opts);
                let mut got = String::new();
                let r = encode_json(r, &opts, &mut got);
                match (want, r) {
                    (Ok(want), Ok(())) => {
                        assert_eq!(got, want, "JSON of {input:?}");
                        check_json_same(schema, id, &want, &opts);
                    }
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                    (a, b) => panic!("JSON of {input:?}: reflective {a:?}, tables {b:?}"),
                }
            }
            let built_arena = Arena::new();
            let built = Record::from_message(schema, &m, &built_arena);
            let mut from_message = Vec::new();
            encode(built, &mut from_message);
            assert_eq!(from_message, want, "from_message of {input:?}");
            true
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string(), "error for {input:?}");
            false
        }
        (a, b) => panic!(
            "{input:?}: reflective {:?}, tables {:?}",
            a.map(|_| ()),
            b.map(|_| ())
        ),
    }
}

/// Reads JSON `text` both ways (and a mutant of it) and checks they agree: the same message
/// (compared through its bytes) or the same error.
fn check_json_same(schema: &SchemaSet, id: MessageId, text: &str, opts: &JsonOptions) {
    let mut rng = Rng(text.len() as u64 | 1);
    let mut mutant = text.as_bytes().to_vec();
    mutate(&mut mutant, &mut rng);
    let mutant = String::from_utf8_lossy(&mutant).into_owned();
    for text in [text, mutant.as_str()] {
        let want = crate::json::decode(schema, id, text, opts);
        let arena = Arena::new();
        let got = decode_json(schema, id, text, &arena, opts);
        match (want, got) {
            (Ok(m), Ok(r)) => {
                let mut bytes = Vec::new();
                encode(r, &mut bytes);
                assert_eq!(bytes, binary::encode(schema, &m), "JSON {text}");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "JSON {text}"),
            (a, b) => panic!("JSON {text}: reflective {a:?}, tables {:?}", b.map(|_| ())),
        }
    }
}

#[test]
fn peer_messages_re_encode_byte_identically() {
    let s = SchemaSet::from_source(PEERS).unwrap();
    for (name, bytes) in [
        (
            "bench.Flat",
            &include_bytes!("../../../../testdata/flat.bin")[..],
        ),
        (
            "bench.Mixed",
            &include_bytes!("../../../../testdata/mixed.bin")[..],
        ),
        (
            "bench.Nested",
            &include_bytes!("../../../../testdata/nested.bin")[..],
        ),
    ] {
        let id = s.message_by_name(name).unwrap();
        for (_, ty) in s.messages() {
            assert!(
                crate::record::layout_is_sound(&ty.table),
                "{}",
                ty.full_name
            );
        }
        let arena = Arena::new();
        let r = decode(&s, id, bytes, &arena, &DecodeOptions::default()).unwrap();
        let mut out = Vec::new();
        encode(r, &mut out);
        assert_eq!(out, bytes, "{name}");
        assert!(check_same(&s, id, bytes));
    }
}

#[test]
fn edge_cases_agree_with_the_reflective_codec() {
    let s = SchemaSet::from_source(
        r#"syntax = "proto2";
           message Z {
             optional int32 a = 1;
             optional Z sub = 2;
             repeated int32 packed = 3 [packed = true];
             repeated int32 loose = 4;
             optional group G = 5 { optional int32 x = 6; }
             map<string, int32> m = 7;
             optional E e = 8;
             repeated E es = 9 [packed = true];
             optional string s = 10;
             map<int32, E> me = 11;
             oneof o { int32 oa = 12; Z oz = 13; }
             required int32 req = 14;
             extensions 100 to 200;
           }
           enum E { A = 0; B = 1; }"#,
    )
    .unwrap();
    let id = s.message_by_name("Z").unwrap();
    let cases: &[&[u8]] = &[
        &[8, 1, 8, 2, 18, 2, 8, 3, 18, 4, 18, 2, 8, 4, 112, 0],
        &[24, 1, 24, 2, 34, 2, 5, 6, 112, 1],
        &[43, 48, 7, 44, 152, 6, 1, 163, 6, 8, 1, 164, 6, 112, 1],
        &[64, 5, 74, 2, 1, 7, 112, 1],
        &[
            58, 5, 10, 1, b'b', 16, 2, 58, 2, 16, 1, 58, 3, 10, 1, b'a', 112, 1,
        ],
        &[58, 5, 10, 1, b'a', 16, 2, 58, 5, 10, 1, b'a', 16, 3, 112, 1],
        &[90, 4, 8, 1, 16, 9, 90, 4, 8, 2, 16, 1, 112, 1],
        &[96, 1, 106, 2, 96, 5, 112, 1],
        &[106, 2, 96, 5, 96, 7, 112, 1],
        &[82, 2, 0xff, 0xfe, 112, 1],
        &[18, 3, 8, 1, 18, 5],
        &[18, 9, 8, 1],
        &[8],
        &[0, 1],
        &[15],
        &[44],
        &[43, 48, 7],
        &[8, 1],
        &[26, 3, 1, 2],
        &[
            0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
        ],
    ];
    for input in cases {
        let _ = check_same(&s, id, input);
    }
}

#[test]
fn depth_and_memory_limits_hold() {
    let s =
        SchemaSet::from_source("syntax = \"proto3\"; message R { R r = 1; repeated R many = 2; }")
            .unwrap();
    let id = s.message_by_name("R").unwrap();
    let mut deep = Vec::new();
    for _ in 0..if cfg!(miri) { 102 } else { 200 } {
        let mut outer = vec![10];
        binary::write_length_prefix(&mut outer, deep.len());
        outer.extend_from_slice(&deep);
        deep = outer;
    }
    assert!(!check_same(&s, id, &deep));
    let arena = Arena::new();
    let e = decode(&s, id, &deep, &arena, &DecodeOptions::default()).unwrap_err();
    assert!(e.to_string().contains("nesting deeper than 100"), "{e}");
    // A million empty sub-messages in 2 MB (fewer under Miri, which interprets every step):
    // the budget stops them, whatever they cost.
    let count = if cfg!(miri) { 1 << 11 } else { 1 << 20 };
    let many: Vec<u8> = [18u8, 0].repeat(count);
    let opts = DecodeOptions {
        memory_limit_bytes: Some(count),
        ..DecodeOptions::default()
    };
    let e = decode(&s, id, &many, &arena, &opts).unwrap_err();
    assert!(e.to_string().contains("memory"), "{e}");
}

#[test]
fn a_reset_arena_is_reused_without_growing() {
    let s = SchemaSet::from_source(PEERS).unwrap();
    let id = s.message_by_name("bench.Nested").unwrap();
    let bytes = include_bytes!("../../../../testdata/nested.bin");
    let mut arena = Arena::new();
    let mut out = Vec::new();
    let mut grown = 0;
    for round in 0..100 {
        arena.reset();
        let r = decode(&s, id, bytes, &arena, &DecodeOptions::default()).unwrap();
        out.clear();
        encode(r, &mut out);
        assert_eq!(out, bytes);
        if round == 1 {
            grown = arena.allocated_bytes();
        }
    }
    assert_eq!(arena.allocated_bytes(), grown);
}

/// A small deterministic generator (xorshift64*), so failures reproduce from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Random wire bytes for a message of type `id`: fields of the schema in random order, with
/// random values of their wire types (sometimes the wrong one), and unknown fields.
fn random_message(s: &SchemaSet, id: MessageId, rng: &mut Rng, depth: u32, out: &mut Vec<u8>) {
    let ty = s.message(id);
    let count = rng.below(12);
    for _ in 0..count {
        if ty.fields.is_empty() || rng.below(20) == 0 {
            let number = 1 + rng.below(3000) as u32;
            if ty.field_by_number(number).is_none() {
                binary::write_length_prefix(out, (number as usize) << 3);
                binary::write_length_prefix(out, rng.below(1 << 20) as usize);
            }
            continue;
        }
        let f = &ty.fields[rng.below(ty.fields.len() as u64) as usize];
        let tag = |out: &mut Vec<u8>, wire: WireType| {
            binary::write_length_prefix(out, ((f.number as usize) << 3) | wire as usize);
        };
        let packed_run =
            f.cardinality == Cardinality::Repeated && f.kind.is_packable() && rng.below(2) == 0;
        if packed_run {
            tag(out, WireType::LengthDelimited);
            let mut body = Vec::new();
            for _ in 0..rng.below(5) {
                random_scalar(f.kind, rng, &mut body);
            }
            binary::write_length_prefix(out, body.len());
            out.extend_from_slice(&body);
            continue;
        }
        match f.kind {
            Kind::Message if depth < 4 => {
                tag(out, WireType::LengthDelimited);
                let mut body = Vec::new();
                random_message(s, f.message.unwrap(), rng, depth + 1, &mut body);
                binary::write_length_prefix(out, body.len());
                out.extend_from_slice(&body);
            }
            Kind::Group if depth < 4 => {
                tag(out, WireType::StartGroup);
                random_message(s, f.message.unwrap(), rng, depth + 1, out);
                tag(out, WireType::EndGroup);
            }
            Kind::Message | Kind::Group => {}
            kind => {
                tag(out, kind.wire_type());
                random_scalar(kind, rng, out);
            }
        }
    }
}

fn random_scalar(kind: Kind, rng: &mut Rng, out: &mut Vec<u8>) {
    let v = match rng.below(4) {
        0 => 0,
        1 => rng.below(300),
        2 => u64::MAX - rng.below(3),
        _ => rng.next(),
    };
    match kind.wire_type() {
        WireType::Varint => binary::write_length_prefix(out, v as usize),
        WireType::Fixed32 => out.extend_from_slice(&(v as u32).to_le_bytes()),
        WireType::Fixed64 => out.extend_from_slice(&v.to_le_bytes()),
        _ => {
            let len = rng.below(6) as usize;
            binary::write_length_prefix(out, len);
            for _ in 0..len {
                // Mostly ASCII, sometimes a byte that is not UTF-8 on its own.
                out.push(if rng.below(8) == 0 {
                    0xc3
                } else {
                    b'a' + rng.below(26) as u8
                });
            }
        }
    }
}

/// Flips, drops, inserts or truncates a few bytes.
fn mutate(input: &mut Vec<u8>, rng: &mut Rng) {
    for _ in 0..1 + rng.below(3) {
        if input.is_empty() {
            input.push(rng.next() as u8);
            continue;
        }
        let at = rng.below(input.len() as u64) as usize;
        match rng.below(4) {
            0 => input[at] ^= 1 << rng.below(8),
            1 => {
                input.remove(at);
            }
            2 => input.insert(at, rng.next() as u8),
            _ => input.truncate(at),
        }
    }
}

#[test]
fn random_and_mutated_messages_agree_with_the_reflective_codec() {
    let s = schema_of(&[
        ("test_messages_proto3.proto", PROTO3),
        ("test_messages_proto2.proto", PROTO2),
    ]);
    let types = [
        "protobuf_test_messages.proto3.TestAllTypesProto3",
        "protobuf_test_messages.proto2.TestAllTypesProto2",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut decoded, mut rejected) = (0, 0);
    // Miri interprets every step: a few rounds there reach every unsafe path all the same.
    let rounds = if cfg!(miri) { 30 } else { 20_000 };
    for round in 0..rounds {
        let id = s.message_by_name(types[round % 2]).unwrap();
        let mut input = Vec::new();
        random_message(&s, id, &mut rng, 0, &mut input);
        decoded += usize::from(check_same(&s, id, &input));
        mutate(&mut input, &mut rng);
        rejected += usize::from(!check_same(&s, id, &input));
    }
    // Both paths were exercised: most generated messages decode, many mutants do not.
    assert!(
        decoded > rounds / 2 && rejected > rounds / 10,
        "{decoded} decoded, {rejected} rejected"
    );
}

#[test]
fn json_scalar_forms_agree_with_the_reflective_reader() {
    let s = SchemaSet::from_source(
        r#"syntax = "proto3";
           message S {
             int32 i32 = 1; uint32 u32 = 2; int64 i64 = 3; uint64 u64 = 4;
             sint32 s32 = 5; fixed64 f64 = 6; sfixed32 sf32 = 7; float f = 8; double d = 9;
             bool b = 10; string s = 11; bytes y = 12; S sub = 13; optional int32 oi = 14;
           }"#,
    )
    .unwrap();
    let id = s.message_by_name("S").unwrap();
    let integers = [
        "0",
        "-0",
        "01",
        "-01",
        "1.0",
        "1e2",
        "1E+2",
        "1.5",
        "\"1\"",
        "\"01\"",
        "\" 1\"",
        "\"1 \"",
        "\"-1\"",
        "\"\"",
        "-",
        "\"-\"",
        "2147483647",
        "2147483648",
        "-2147483648",
        "-2147483649",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "18446744073709551615",
        "18446744073709551616",
        "1234567890123456789",
        "12345678901234567890",
        "\"18446744073709551615\"",
        "\"18446744073709551616\"",
        "-18446744073709551615",
        "19999999999999999999",
        "29999999999999999999",
        "99999999999999999999",
        "\"10000000000000000000\"",
        "100000000000000000000",
        "00",
        "1x",
        "\"1\"x",
        "null",
        "true",
        "[1]",
        "{}",
    ];
    let mut texts = Vec::new();
    for field in ["i32", "u32", "i64", "u64", "s32", "f64", "sf32", "oi"] {
        for v in integers {
            texts.push(format!("{{\"{field}\": {v}}}"));
        }
    }
    for v in [
        "1.5",
        "-0.0",
        "0",
        "1e400",
        "-1e400",
        "3.5e38",
        "3.4028235e38",
        "1e-50",
        "\"NaN\"",
        "\"1.5\"",
        "1.",
        ".5",
        "null",
        "\"x\"",
    ] {
        texts.push(format!("{{\"f\": {v}, \"d\": {v}}}"));
    }
    for v in ["true", "false", "\"true\"", "1", "tru", "falsey", "null"] {
        texts.push(format!("{{\"b\": {v}}}"));
    }
    for v in [
        "\"abc\"",
        "\"\"",
        "\"a\\\"b\"",
        "\"\\u00e9\"",
        "\"é\"",
        "\"a\u{1}b\"",
        "\"abcdefghijklmnop\\n\"",
        "\"abcdefghijklmnopq",
        "1",
        "null",
    ] {
        texts.push(format!("{{\"s\": {v}}}"));
    }
    for v in [
        "\"AAEC\"", "\"AA-_\"", "\"AA+/\"", "\"A\"", "\"!!\"", "\"\"", "\"AAE=\"", "null",
    ] {
        texts.push(format!("{{\"y\": {v}}}"));
    }
    for v in ["{}", "{\"i32\": 5}", "null", "[]", "{\"i32\": 5", "1"] {
        texts.push(format!("{{\"sub\": {v}}}"));
    }
    texts.push("{ \"i32\" :\t7 , \"s\" : \"x\" , \"sub\" : { \"b\" : true } }".into());
    texts.push("{\"i32\": 1, \"i32\": 2}".into());
    for text in &texts {
        check_json_same(&s, id, text, &JsonOptions::default());
    }
}

/// Five-byte tags (field numbers from 2^25) after values of every width, and varints of every
/// length: the encoder's word stores stay inside the room it reserved.
#[test]
fn long_tags_and_varints_of_every_length_encode_alike() {
    let s = SchemaSet::from_source(
        r#"syntax = "proto3";
           message L {
             uint64 a = 536870911; string b = 536870910; fixed64 c = 536870909;
             int32 d = 33554432; bool e = 33554433; repeated uint64 f = 1;
             L sub = 536870908;
           }"#,
    )
    .unwrap();
    let id = s.message_by_name("L").unwrap();
    let mut inputs = Vec::new();
    for shift in 0..64 {
        let v = (1u64 << shift) | (((1u64 << shift) - 1) / 3);
        let arena = Arena::new();
        let rec = Record::new_in(&s, id, &arena);
        let at = |name| s.message(id).field_index_by_name(name).unwrap();
        rec.set(at("a"), FieldRef::U64(v)).unwrap();
        rec.set(at("b"), FieldRef::Str("x")).unwrap();
        rec.set(at("c"), FieldRef::U64(v)).unwrap();
        rec.set(at("d"), FieldRef::I32(v as i32)).unwrap();
        rec.set(at("e"), FieldRef::Bool(true)).unwrap();
        rec.push(&arena, at("f"), FieldRef::U64(v)).unwrap();
        let sub = rec.message_mut(&arena, at("sub")).unwrap();
        sub.set(at("a"), FieldRef::U64(v)).unwrap();
        let mut bytes = Vec::new();
        encode(rec, &mut bytes);
        assert_eq!(
            bytes,
            binary::encode(&s, &rec.to_message()),
            "shift {shift}"
        );
        inputs.push(bytes);
    }
    for input in inputs {
        assert!(check_same(&s, id, &input));
    }
}

/// A decode error inside a repeated message names the element (`[i]`), inside a map entry
/// the entry's key once it was read; both decoders agree.
#[test]
fn error_paths_name_elements_and_map_keys() {
    let s = SchemaSet::from_source(
        r#"syntax = "proto3";
           message Sub { int32 x = 1; }
           message R { repeated Sub items = 1; map<string, Sub> m = 2; map<int32, Sub> n = 3; }"#,
    )
    .unwrap();
    let id = s.message_by_name("R").unwrap();
    let cases: [(&[u8], &str); 4] = [
        (
            &[0x0a, 0x02, 0x08, 0x01, 0x0a, 0x01, 0x08],
            "R.items[1].x at byte 7",
        ),
        (
            &[0x12, 0x06, 0x0a, 0x01, b'k', 0x12, 0x01, 0x08],
            "R.m[\"k\"].value.x at byte 8",
        ),
        (
            &[0x1a, 0x05, 0x08, 0x07, 0x12, 0x01, 0x08],
            "R.n[7].value.x at byte 7",
        ),
        (&[0x12, 0x03, 0x12, 0x01, 0x08], "R.m.value.x at byte 5"),
    ];
    for (input, want) in cases {
        assert!(!check_same(&s, id, input));
        let arena = Arena::new();
        let err = decode(&s, id, input, &arena, &DecodeOptions::default()).unwrap_err();
        assert!(err.to_string().starts_with(want), "{err} for {input:?}");
    }
}
