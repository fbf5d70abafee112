//! Converter tests: identity plans, protobuf ↔ Thrift against Apache Thrift's own bytes, each
//! transform alone and composed, and every compile and value error.

use optimus_schema::SchemaSet;

use super::{ConvertError, HashKind, Literal, Plan, Program, Rule};
use crate::binary::DecodeOptions;
use crate::record::Arena;
use crate::thrift::{self, Protocol};
use crate::{engine, FieldRef, Record};

const PEERS: &str = include_str!("../../../../testdata/peers.proto");
const PEERS_THRIFT: &str = include_str!("../../../../testdata/thrift/peers.thrift");
const WORKLOADS: [(&str, &[u8], &[u8]); 3] = [
    (
        "Flat",
        include_bytes!("../../../../testdata/flat.bin"),
        include_bytes!("../../../../testdata/thrift/flat.tbin"),
    ),
    (
        "Mixed",
        include_bytes!("../../../../testdata/mixed.bin"),
        include_bytes!("../../../../testdata/thrift/mixed.tbin"),
    ),
    (
        "Nested",
        include_bytes!("../../../../testdata/nested.bin"),
        include_bytes!("../../../../testdata/thrift/nested.tbin"),
    ),
];

/// The maps from each workload's `peers.proto` names to `peers.thrift`'s (Thrift keywords
/// renamed), as files the bench and docs use too.
fn thrift_map(workload: &str) -> &'static str {
    match workload {
        "Flat" => include_str!("../../../../testdata/thrift/flat.map.toml"),
        "Mixed" => include_str!("../../../../testdata/thrift/mixed.map.toml"),
        _ => include_str!("../../../../testdata/thrift/nested.map.toml"),
    }
}

/// The reverse of a one-table map file: target = source for every entry.
fn reversed(map: &Program) -> Program {
    let mut back = Program::new();
    for (from, rule) in &map.rules {
        let to = rule.to.clone().expect("a map entry");
        back = back.rule(
            to,
            Rule {
                to: Some(from.clone()),
                ..Rule::default()
            },
        );
    }
    back
}

fn proto(source: &str) -> SchemaSet {
    SchemaSet::from_source(source).unwrap()
}

fn encode(rec: Record<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    engine::encode(rec, &mut out);
    out
}

/// Decodes `input` as `from` in `src`, converts it with `program` to `to` in `dst`.
fn convert_bytes(
    src: &SchemaSet,
    from: &str,
    dst: &SchemaSet,
    to: &str,
    program: &Program,
    input: &[u8],
) -> Result<Vec<u8>, ConvertError> {
    let plan = Plan::compile(
        src,
        src.message_by_name(from).unwrap(),
        dst,
        dst.message_by_name(to).unwrap(),
        program,
    )?;
    let arena = Arena::new();
    let rec = engine::decode(
        src,
        plan.source_type(),
        input,
        &arena,
        &DecodeOptions::default(),
    )
    .unwrap();
    let out = plan.apply(rec, &arena)?;
    Ok(encode(out))
}

#[test]
fn an_empty_program_copies_every_workload_byte_for_byte() {
    let s = proto(PEERS);
    for (name, bin, _) in WORKLOADS {
        let ty = format!("bench.{name}");
        let out = convert_bytes(&s, &ty, &s, &ty, &Program::new(), bin).unwrap();
        assert_eq!(out, bin, "{name}");
    }
}

#[test]
fn protobuf_to_thrift_matches_apache_thrift_and_comes_back_to_the_same_bytes() {
    let p = proto(PEERS);
    let t = SchemaSet::from_thrift_sources(&[("peers.thrift", PEERS_THRIFT)]).unwrap();
    for (name, bin, tbin) in WORKLOADS {
        let there = Program::from_map_toml("map.toml", thrift_map(name)).unwrap();
        let back = reversed(&there);
        let pid = p.message_by_name(&format!("bench.{name}")).unwrap();
        let tid = t.thrift_struct_by_name(name).unwrap();
        let to_thrift = Plan::compile(&p, pid, &t, tid, &there).unwrap();
        let to_proto = Plan::compile(&t, tid, &p, pid, &back).unwrap();
        let arena = Arena::new();
        let rec = engine::decode(&p, pid, bin, &arena, &DecodeOptions::default()).unwrap();
        let mut thrift_bytes = Vec::new();
        thrift::encode(
            to_thrift.apply(rec, &arena).unwrap(),
            Protocol::Binary,
            &mut thrift_bytes,
        )
        .unwrap();
        assert_eq!(thrift_bytes, tbin, "{name}: Apache Thrift's bytes");
        let trec = thrift::decode(
            &t,
            tid,
            tbin,
            &arena,
            Protocol::Binary,
            &DecodeOptions::default(),
        )
        .unwrap();
        assert_eq!(
            encode(to_proto.apply(trec, &arena).unwrap()),
            bin,
            "{name}: round trip"
        );
    }
}

#[test]
fn unmatched_fields_across_schemas_must_be_mapped_or_dropped() {
    let p = proto(PEERS);
    let t = SchemaSet::from_thrift_sources(&[("peers.thrift", PEERS_THRIFT)]).unwrap();
    let err = Plan::compile(
        &p,
        p.message_by_name("bench.Flat").unwrap(),
        &t,
        t.thrift_struct_by_name("Flat").unwrap(),
        &Program::new(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Flat: no field of that name in target type peers.Flat for `service`: map each (--map) or drop it (--transform)"
    );
    let dropped = Program::new().rule(
        "service",
        Rule {
            drop: true,
            ..Rule::default()
        },
    );
    assert!(Plan::compile(
        &p,
        p.message_by_name("bench.Flat").unwrap(),
        &t,
        t.thrift_struct_by_name("Flat").unwrap(),
        &dropped,
    )
    .is_ok());
}

const ZOO: &str = r#"
syntax = "proto3";
package z;
enum Color { COLOR_UNSPECIFIED = 0; RED = 1; GREEN = 2; }
enum Hue { HUE_UNSPECIFIED = 0; ROUGE = 1; VERT = 2; }
message Item { string name = 1; double price = 2; int64 qty = 3; }
message User {
  string email = 1;
  string password = 2;
  int64 latency_ns = 3;
  Color color = 4;
  repeated Item items = 5;
  bytes blob = 6;
  string region = 7;
  map<string, int32> counts = 8;
  oneof contact { string phone = 9; string fax = 10; }
  uint64 big = 11;
  int32 small = 12;
}
message Out {
  string email = 1;
  double latency_us = 3;
  Hue color = 4;
  repeated Item items = 5;
  string blob = 6;
  string region = 7;
  map<string, int64> counts = 8;
  oneof contact { string phone = 9; string fax = 10; }
  int64 big = 11;
  int32 small = 12;
  string color_name = 13;
}
"#;

/// A `z.User` with every field set, as protobuf bytes.
fn user(s: &SchemaSet) -> Vec<u8> {
    let json = r#"{"email":"ada@example.com","password":"hunter2","latencyNs":"2500",
        "color":"GREEN","items":[{"name":"pen","price":1.5,"qty":"3"},{"name":"ink","price":2.25,"qty":"1"}],
        "blob":"aGk=","counts":{"a":1,"b":2},"fax":"555","big":"18446744073709551615","small":7}"#;
    let arena = Arena::new();
    let id = s.message_by_name("z.User").unwrap();
    let rec = engine::decode_json(s, id, json, &arena, &Default::default()).unwrap();
    encode(rec)
}

/// `z.User` bytes converted by `program` (TOML transform text) to `z.User`, as JSON.
fn transform_json(program: &str, to: &str) -> Result<serde_free::Json, ConvertError> {
    let s = proto(ZOO);
    let p = Program::from_transform_toml("t.toml", program)?;
    let plan = Plan::compile(
        &s,
        s.message_by_name("z.User").unwrap(),
        &s,
        s.message_by_name(to).unwrap(),
        &p,
    )?;
    let arena = Arena::new();
    let bytes = user(&s);
    let rec = engine::decode(
        &s,
        plan.source_type(),
        &bytes,
        &arena,
        &DecodeOptions::default(),
    )
    .unwrap();
    let out = plan.apply(rec, &arena)?;
    let mut text = String::new();
    engine::encode_json(out, &Default::default(), &mut text).unwrap();
    Ok(serde_free::Json(text))
}

/// Lowercase hex SHA-256 of `bytes`, checked against FIPS 180-2's "abc" vector.
fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    assert_eq!(
        hex(&Sha256::digest(b"abc")),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    hex(&Sha256::digest(bytes))
}

#[test]
fn a_hashed_bytes_field_gets_the_raw_digest() {
    let s = proto(ZOO);
    let id = s.message_by_name("z.User").unwrap();
    let p = Program::from_transform_toml("t", "[fields.blob]\nhash = \"sha256\"").unwrap();
    let plan = Plan::compile(&s, id, &s, id, &p).unwrap();
    let arena = Arena::new();
    let rec = engine::decode(&s, id, b"\x32\x03abc", &arena, &DecodeOptions::default()).unwrap();
    let out = plan.apply(rec, &arena).unwrap();
    let blob = s
        .message(id)
        .fields
        .iter()
        .position(|f| f.name == "blob")
        .unwrap();
    let Some(FieldRef::Bytes(digest)) = out.get(blob) else {
        panic!("a digest")
    };
    assert_eq!(digest.len(), 32);
    assert_eq!(
        digest
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<String>(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

/// JSON text compared as text (the engine writes fields in number order, deterministically).
mod serde_free {
    #[derive(Debug, PartialEq)]
    pub struct Json(pub String);
}

#[test]
fn each_transform_alone() {
    let j = |t: &str| transform_json(t, "z.User").unwrap().0;
    let base = j("");
    assert!(base.contains(r#""password":"hunter2""#), "{base}");
    assert!(!j("[fields.password]\ndrop = true").contains("password"));
    assert!(j("[fields.password]\nredact = \"***\"").contains(r#""password":"***""#));
    assert!(
        !j("[fields.password]\nredact = true").contains("password"),
        "zero is unset in proto3"
    );
    assert!(j("[fields.email]\nhash = \"sha256\"")
        .contains(&format!(r#""email":"{}""#, sha256_hex(b"ada@example.com"))));
    assert!(
        j("[fields.latency_ns]\nscale = 0.001").contains(r#""latencyNs":"3""#),
        "2.5 rounds to 3"
    );
    assert!(j("[fields.color]\nenum = { GREEN = \"RED\" }").contains(r#""color":"RED""#));
    assert!(j("[fields.region]\ndefault = \"eu-west-1\"").contains(r#""region":"eu-west-1""#));
    assert!(j("[fields.\"items.price\"]\nscale = 2").contains(r#""price":4.5"#));
    assert!(
        j("[fields.\"items.name\"]\nredact = \"x\"")
            .matches(r#""name":"x""#)
            .count()
            == 2
    );
    assert!(
        j("[fields.fax]\nrename = \"phone\"\n[fields.phone]\ndrop = true")
            .contains(r#""phone":"555""#)
    );
}

#[test]
fn transforms_compose_across_types() {
    let t = r#"
        [fields.password]
        drop = true
        [fields.latency_ns]
        rename = "latency_us"
        scale = 0.001
        [fields.email]
        hash = "sha256"
        [fields.color]
        enum = { GREEN = "VERT", RED = "ROUGE", COLOR_UNSPECIFIED = "HUE_UNSPECIFIED" }
        [fields.blob]
        rename = "blob"
    "#;
    let out = transform_json(t, "z.Out").unwrap().0;
    let digest = sha256_hex(b"ada@example.com");
    assert!(out.contains(&format!(r#""email":"{digest}""#)), "{out}");
    assert!(out.contains(r#""latencyUs":2.5"#), "{out}");
    assert!(out.contains(r#""color":"VERT""#), "{out}");
    assert!(out.contains(r#""blob":"hi""#), "bytes to string: {out}");
    assert!(
        out.contains(r#""counts":{"a":"1","b":"2"}"#),
        "int32 to int64 map values: {out}"
    );
    assert!(out.contains(r#""fax":"555""#), "{out}");
    assert!(
        out.contains(r#""big":"-1""#),
        "uint64 max keeps its bits in int64: {out}"
    );
}

#[test]
fn compile_errors_name_the_field_and_say_why() {
    let e = |t: &str, to: &str| transform_json(t, to).unwrap_err().to_string();
    assert_eq!(
        e("[fields.nope]\ndrop = true", "z.User"),
        "User.nope: no field `nope` in z.User (rule `nope`)"
    );
    assert_eq!(
        e("[fields.email]\nscale = 2", "z.User"),
        "User.email: `scale` takes a number to a number, not a string to a string"
    );
    assert_eq!(
        e("[fields.\"email.x\"]\ndrop = true", "z.User"),
        "User.email: rule `email.x`: `email` is not a message, it has no field `x`"
    );
    assert!(e("", "z.Out").contains("map each (--map) or drop it (--transform)"));
    assert_eq!(
        e(
            "[fields.items]\nrename = \"email\"\n[fields.email]\ndrop = true",
            "z.User"
        ),
        "User.items: a repeated z.Item cannot convert to z.User.email, a string"
    );
    assert!(e("[fields.x]\nfrobnicate = 1", "z.User").contains("unknown op `frobnicate`"));
    assert!(e("[fields.x]\ndrop = true\nhash = \"sha256\"", "z.User")
        .contains("`drop` cannot be combined"));
    assert!(e("[fields.x", "z.User").starts_with("t.toml: "));
}

#[test]
fn value_errors_name_the_path() {
    let s = proto(ZOO);
    let id = s.message_by_name("z.User").unwrap();
    let p = Program::from_transform_toml("t", "[fields.\"items.qty\"]\nscale = 1e30").unwrap();
    let plan = Plan::compile(&s, id, &s, id, &p).unwrap();
    let arena = Arena::new();
    let bytes = user(&s);
    let rec = engine::decode(&s, id, &bytes, &arena, &DecodeOptions::default()).unwrap();
    let err = plan.apply(rec, &arena).unwrap_err().to_string();
    assert!(
        err.starts_with("User.items[0].qty: 3000000000000000"),
        "{err}"
    );
    assert!(err.ends_with(" is out of range for an integer"), "{err}");
    let p = Program::from_transform_toml("t", "[fields.small]\nscale = 1e9").unwrap();
    let plan = Plan::compile(&s, id, &s, id, &p).unwrap();
    assert_eq!(
        plan.apply(rec, &arena).unwrap_err().to_string(),
        "User.small: 7000000000 is out of range for the target field"
    );
}

/// `z.User` bytes `input` converted to `z.Out` with the ops `Out` needs (`password` dropped,
/// `latency_ns` renamed) and `extra`.
fn user_to_out(extra: &str, input: &[u8]) -> Result<String, ConvertError> {
    let s = proto(ZOO);
    let (from, to) = (
        s.message_by_name("z.User").unwrap(),
        s.message_by_name("z.Out").unwrap(),
    );
    let ops = format!(
        "[fields.password]\ndrop = true\n[fields.latency_ns]\nrename = \"latency_us\"\n{extra}"
    );
    let plan = Plan::compile(&s, from, &s, to, &Program::from_transform_toml("t", &ops)?)?;
    let arena = Arena::new();
    let rec = engine::decode(&s, from, input, &arena, &DecodeOptions::default()).unwrap();
    let out = plan.apply(rec, &arena)?;
    let mut text = String::new();
    engine::encode_json(out, &Default::default(), &mut text).unwrap();
    Ok(text)
}

#[test]
fn enum_values_without_a_counterpart_fail_only_when_they_occur() {
    let green = "[fields.color]\nenum = { GREEN = \"VERT\" }";
    let out = user_to_out(green, &user(&proto(ZOO))).expect("GREEN maps to VERT");
    assert!(out.contains(r#""color":"VERT""#), "{out}");
    assert_eq!(
        user_to_out(green, &[0x20, 0x01]).unwrap_err().to_string(),
        "User.color: enum value 1 has no counterpart in the target enum (map it with `enum`)"
    );
}

#[test]
fn bytes_that_are_not_utf8_do_not_become_strings() {
    assert_eq!(
        user_to_out("", &[0x32, 0x01, 0xff])
            .unwrap_err()
            .to_string(),
        "User.blob: bytes that are not UTF-8 cannot go to a string"
    );
}

#[test]
fn setting_a_oneof_member_clears_its_siblings() {
    let s = proto(ZOO);
    let id = s.message_by_name("z.User").unwrap();
    // fax renamed onto phone takes it over: phone must go elsewhere or be dropped ...
    let p = Program::from_transform_toml("t", "[fields.fax]\nrename = \"phone\"").unwrap();
    assert_eq!(
        Plan::compile(&s, id, &s, id, &p).unwrap_err().to_string(),
        "User.phone: target field z.User.phone is taken by `fax` (renamed onto it): drop `phone` or give it another target"
    );
    // ... and a default on one member gives way to a set sibling only through presence.
    let p = Program::from_transform_toml("t", "[fields.phone]\ndefault = \"none\"").unwrap();
    let plan = Plan::compile(&s, id, &s, id, &p).unwrap();
    let arena = Arena::new();
    let bytes = user(&s);
    let rec = engine::decode(&s, id, &bytes, &arena, &DecodeOptions::default()).unwrap();
    let out = plan.apply(rec, &arena).unwrap();
    let fax = s
        .message(id)
        .fields
        .iter()
        .position(|f| f.name == "fax")
        .unwrap();
    let phone = fax - 1;
    assert!(
        out.has(phone) && !out.has(fax),
        "the default took the oneof"
    );
    assert!(matches!(out.get(phone), Some(FieldRef::Str("none"))));
}

#[test]
fn programs_merge_and_refuse_conflicts() {
    let map = Program::from_map_toml("m", "[fields]\na = \"b\"").unwrap();
    let t = Program::from_transform_toml("t", "[fields.a]\nscale = 2").unwrap();
    let both = map.clone().merge(t).unwrap();
    assert_eq!(both.rules["a"].to.as_deref(), Some("b"));
    assert_eq!(both.rules["a"].scale, Some(2.0));
    let other = Program::from_transform_toml("t", "[fields.a]\nrename = \"c\"").unwrap();
    assert_eq!(
        map.merge(other).unwrap_err().to_string(),
        "program: `a`: the target field given twice"
    );
    assert!(Program::from_map_toml("m", "[fields]\na = 1").is_err());
    assert!(Program::from_map_toml("m", "[other]\na = \"b\"").is_err());
    let built = Program::new().rule(
        "email",
        Rule {
            hash: Some(HashKind::Sha256),
            default: Some(Literal::Text("x".into())),
            ..Rule::default()
        },
    );
    assert_eq!(built.rules.len(), 1);
}
