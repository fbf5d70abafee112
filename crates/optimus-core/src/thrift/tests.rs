use optimus_schema::SchemaSet;

use super::*;
use crate::FieldRef;

fn testdata(name: &str) -> String {
    format!(
        "{}/../../testdata/thrift/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn load(file: &str) -> SchemaSet {
    SchemaSet::from_thrift_files(&[testdata(file)], &[] as &[&str]).unwrap()
}

fn round_trip(s: &SchemaSet, id: MessageId, bytes: &[u8], protocol: Protocol) -> Vec<u8> {
    let arena = Arena::new();
    let rec = decode(s, id, bytes, &arena, protocol, &DecodeOptions::default()).unwrap();
    let mut out = Vec::new();
    encode(rec, protocol, &mut out).unwrap();
    out
}

/// Apache Thrift's bytes for the three Optimus Prime classes: decoded and re-encoded
/// byte-identical in each protocol, and each protocol's bytes converted to the other's.
#[test]
fn peers_files_byte_identical() {
    let s = load("peers.thrift");
    for name in ["flat", "mixed", "nested"] {
        let id = s
            .thrift_struct_by_name(&format!("{}{}", name[..1].to_uppercase(), &name[1..]))
            .unwrap();
        let tbin = std::fs::read(testdata(&format!("{name}.tbin"))).unwrap();
        let tcompact = std::fs::read(testdata(&format!("{name}.tcompact"))).unwrap();
        assert_eq!(
            round_trip(&s, id, &tbin, Protocol::Binary),
            tbin,
            "{name} binary"
        );
        assert_eq!(
            round_trip(&s, id, &tcompact, Protocol::Compact),
            tcompact,
            "{name} compact"
        );
        let arena = Arena::new();
        let opts = DecodeOptions::default();
        let rec = decode(&s, id, &tbin, &arena, Protocol::Binary, &opts).unwrap();
        let mut out = Vec::new();
        encode(rec, Protocol::Compact, &mut out).unwrap();
        assert_eq!(out, tcompact, "{name} binary -> compact");
        let rec = decode_copied(&s, id, &tcompact, &arena, Protocol::Compact, &opts).unwrap();
        out.clear();
        encode(rec, Protocol::Binary, &mut out).unwrap();
        assert_eq!(out, tbin, "{name} compact -> binary");
        // Through the reflective view, the same message.
        let a = decode(&s, id, &tbin, &arena, Protocol::Binary, &opts).unwrap();
        assert_eq!(
            format!("{:?}", a.to_message()),
            format!("{:?}", rec.to_message())
        );
        // Every strict prefix fails with an error, never a panic.
        for cut in 0..tbin.len() {
            assert!(decode(&s, id, &tbin[..cut], &arena, Protocol::Binary, &opts).is_err());
        }
        for cut in 0..tcompact.len() {
            assert!(decode(&s, id, &tcompact[..cut], &arena, Protocol::Compact, &opts).is_err());
        }
    }
}

/// A zoo message built with the setters: every type, nested containers, wrappers.
fn build_zoo<'a>(s: &'a SchemaSet, arena: &'a Arena) -> Record<'a> {
    let id = s.thrift_struct_by_name("Everything").unwrap();
    let rec = Record::new_in(s, id, arena);
    let i = |r: &Record<'_>, n: &str| r.index_of(n).unwrap();
    let sc = rec.message_mut(arena, i(&rec, "scalars")).unwrap();
    sc.set(i(&sc, "b"), FieldRef::Bool(false)).unwrap();
    sc.set(i(&sc, "tiny"), FieldRef::I32(-128)).unwrap();
    sc.set(i(&sc, "i16v"), FieldRef::I32(-32768)).unwrap();
    sc.set(i(&sc, "i32v"), FieldRef::I32(i32::MIN)).unwrap();
    sc.set(i(&sc, "i64v"), FieldRef::I64(i64::MAX)).unwrap();
    sc.set(i(&sc, "d"), FieldRef::F64(-0.5)).unwrap();
    sc.set(i(&sc, "s"), FieldRef::Str("héllo")).unwrap();
    sc.set(i(&sc, "bin"), FieldRef::Bytes(b"\x00\xff")).unwrap();
    sc.set(i(&sc, "kind"), FieldRef::Enum(10)).unwrap();
    sc.set(i(&sc, "color"), FieldRef::Enum(-5)).unwrap();
    let c = rec.message_mut(arena, i(&rec, "containers")).unwrap();
    for v in [1, -1, 300] {
        c.push(arena, i(&c, "ints"), FieldRef::I32(v)).unwrap();
    }
    for row in [&[1, 2][..], &[], &[3]] {
        let w = c.push_message(arena, i(&c, "grid")).unwrap();
        for &v in row {
            w.push(arena, 0, FieldRef::I32(v)).unwrap();
        }
    }
    c.insert(arena, i(&c, "counts"), FieldRef::Str("a"), FieldRef::I64(1))
        .unwrap();
    c.insert(arena, i(&c, "counts"), FieldRef::Str(""), FieldRef::I64(-1))
        .unwrap();
    for b in [true, false] {
        let deep = i(&c, "deep");
        let _ = b;
        let _ = deep;
    }
    let sp = rec.message_mut(arena, i(&rec, "sparse")).unwrap();
    sp.set(i(&sp, "implicit_id"), FieldRef::I32(5)).unwrap();
    sp.set(i(&sp, "last"), FieldRef::I64(7)).unwrap();
    sp.set(i(&sp, "middle"), FieldRef::Str("m")).unwrap();
    let d = rec.message_mut(arena, i(&rec, "defaults")).unwrap();
    d.set(i(&d, "must"), FieldRef::I64(0)).unwrap();
    rec
}

#[test]
fn zoo_round_trips_in_both_protocols() {
    let s = load("zoo.thrift");
    let arena = Arena::new();
    let rec = build_zoo(&s, &arena);
    let id = rec.type_id();
    for p in [Protocol::Binary, Protocol::Compact] {
        let mut bytes = Vec::new();
        encode(rec, p, &mut bytes).unwrap();
        assert_eq!(round_trip(&s, id, &bytes, p), bytes, "{p:?}");
        let a2 = Arena::new();
        let back = decode(&s, id, &bytes, &a2, p, &DecodeOptions::default()).unwrap();
        assert_eq!(
            format!("{:?}", back.to_message()),
            format!("{:?}", rec.to_message())
        );
    }
}

#[test]
fn known_bytes() {
    let s = SchemaSet::from_thrift_sources(&[(
        "t.thrift",
        "struct S { 1: i32 a 2: bool t 3: bool f 20: i16 h -1: string x 4: list<bool> l }",
    )])
    .unwrap();
    let id = s.thrift_struct_by_name("S").unwrap();
    let arena = Arena::new();
    let r = Record::new_in(&s, id, &arena);
    r.set(0, FieldRef::I32(150)).unwrap();
    let idx = |n: &str| r.index_of(n).unwrap();
    r.set(idx("t"), FieldRef::Bool(true)).unwrap();
    r.set(idx("f"), FieldRef::Bool(false)).unwrap();
    r.set(idx("h"), FieldRef::I32(-2)).unwrap();
    r.set(idx("x"), FieldRef::Str("hi")).unwrap();
    r.push(&arena, idx("l"), FieldRef::Bool(true)).unwrap();
    r.push(&arena, idx("l"), FieldRef::Bool(false)).unwrap();
    let mut b = Vec::new();
    encode(r, Protocol::Binary, &mut b).unwrap();
    let want_b: Vec<u8> = [
        &[11, 0xff, 0xff, 0, 0, 0, 2, b'h', b'i'][..], // -1: x (ids in order, -1 first)
        &[8, 0, 1, 0, 0, 0, 150],
        &[2, 0, 2, 1],
        &[2, 0, 3, 0],
        &[15, 0, 4, 2, 0, 0, 0, 2, 1, 0],
        &[6, 0, 20, 0xff, 0xfe],
        &[0],
    ]
    .concat();
    assert_eq!(b, want_b);
    let mut c = Vec::new();
    encode(r, Protocol::Compact, &mut c).unwrap();
    let want_c: Vec<u8> = [
        &[0x08, 0x01, 2, b'h', b'i'][..], // long form: type 8, zigzag(-1) = 1
        &[0x25, 0xac, 0x02],              // delta 2 (from -1), i32 zigzag(150) = 300
        &[0x11],                          // delta 1, bool true
        &[0x12],                          // delta 1, bool false
        &[0x19, 0x21, 1, 2],              // delta 1, list of 2 bools: elements 1 and 2
        &[0xf4, 0x03],                    // delta 16 > 15: long form, zigzag(-2) = 3
        &[0x00],
    ]
    .concat();
    // Field 20 after field 4: delta 16 is too large for the short form.
    let mut want_c = want_c;
    let pos = want_c.len() - 3;
    want_c.splice(pos..pos + 2, [0x04, 0x28, 0x03]);
    assert_eq!(c, want_c, "{c:02x?}");
}

#[test]
fn compact_integers_of_every_length() {
    let s =
        SchemaSet::from_thrift_sources(&[("t.thrift", "struct S { 1: i64 v 2: i32 w }")]).unwrap();
    let id = s.thrift_struct_by_name("S").unwrap();
    let mut values = vec![0i64, -1, i64::MAX, i64::MIN, i64::MIN + 1];
    for k in 1..=9 {
        let b = 1i64 << (7 * k - 1);
        values.extend([b - 1, b, -b, -b - 1]);
    }
    for v in values {
        let arena = Arena::new();
        let r = Record::new_in(&s, id, &arena);
        r.set(0, FieldRef::I64(v)).unwrap();
        r.set(1, FieldRef::I32(v as i32)).unwrap();
        let mut c = Vec::new();
        encode(r, Protocol::Compact, &mut c).unwrap();
        let mut want = vec![0x16];
        crate::binary::varint::write_varint(&mut want, ((v << 1) ^ (v >> 63)) as u64);
        want.push(0x15);
        let w = v as i32;
        crate::binary::varint::write_varint(&mut want, u64::from(((w << 1) ^ (w >> 31)) as u32));
        want.push(0);
        assert_eq!(c, want, "{v}");
        let back = decode(
            &s,
            id,
            &c,
            &arena,
            Protocol::Compact,
            &DecodeOptions::default(),
        );
        let back = back.unwrap();
        assert!(
            matches!(back.get(0), Some(FieldRef::I64(x)) if x == v),
            "{v}"
        );
        assert!(
            matches!(back.get(1), Some(FieldRef::I32(x)) if x == w),
            "{v}"
        );
    }
}

#[test]
fn errors_name_path_and_offset() {
    let s = load("zoo.thrift");
    let id = s.thrift_struct_by_name("Everything").unwrap();
    let arena = Arena::new();
    let opts = DecodeOptions::default();
    let err = |bytes: &[u8], p: Protocol| {
        decode(&s, id, bytes, &arena, p, &opts)
            .unwrap_err()
            .to_string()
    };
    // scalars.i32v (field 4) is truncated inside its value.
    let bytes = [12, 0, 1, 8, 0, 4, 0, 0];
    assert_eq!(
        err(&bytes, Protocol::Binary),
        "zoo.Everything.scalars.i32v at byte 6: truncated: needed 4 more bytes, 2 left"
    );
    // containers.ints: a list of strings where i32 is declared.
    let bytes = [12, 0, 2, 15, 0, 1, 11, 0, 0, 0, 1, 0, 0, 0, 0];
    assert_eq!(
        err(&bytes, Protocol::Binary),
        "zoo.Everything.containers.ints at byte 6: element type 11, expected 8"
    );
    // A negative string length.
    let bytes = [12, 0, 1, 11, 0, 7, 0xff, 0xff, 0xff, 0xfe];
    assert_eq!(
        err(&bytes, Protocol::Binary),
        "zoo.Everything.scalars.s at byte 6: negative length -2"
    );
    // A list size larger than the input.
    let bytes = [12, 0, 2, 15, 0, 1, 8, 0x7f, 0xff, 0xff, 0xff];
    assert!(err(&bytes, Protocol::Binary).contains("length 2147483647 runs past the end"));
    // The required `scalars` is missing.
    assert_eq!(
        err(&[0], Protocol::Binary),
        "zoo.Everything at byte 1: missing required field zoo.Everything.scalars"
    );
    // Invalid UTF-8 in a string, compact: field 1 struct, field 7 string.
    let bytes = [0x1c, 0x78, 0x01, 0xff, 0x00, 0x00];
    assert_eq!(
        err(&bytes, Protocol::Compact),
        "zoo.Everything.scalars.s at byte 2: string is not valid UTF-8"
    );
    // An invalid compact type code in an unknown field.
    assert!(err(&[0x1c, 0x0d, 0x00], Protocol::Compact).contains("invalid Thrift type code 13"));
    // Trailing bytes.
    let mut ok = Vec::new();
    encode(build_zoo(&s, &arena), Protocol::Binary, &mut ok).unwrap();
    ok.push(0);
    assert!(err(&ok, Protocol::Binary).ends_with("trailing data"));
    // Nesting past the depth limit: Sparse.next chains.
    let sp = s.thrift_struct_by_name("Sparse").unwrap();
    let deep: Vec<u8> = std::iter::repeat_n([12u8, 0, 20], 200)
        .flatten()
        .chain(std::iter::repeat_n(0, 201))
        .collect();
    let e = decode(&s, sp, &deep, &arena, Protocol::Binary, &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("nesting deeper than 100 levels"), "{e}");
}

#[test]
fn unknown_and_mistyped_fields_are_skipped() {
    let s = load("zoo.thrift");
    let id = s.thrift_struct_by_name("Sparse").unwrap();
    // Field 2 (unknown): a map<i32, list<string>>; field 1 as a string (declared i32); then
    // field 1 as an i32.
    let bytes: Vec<u8> = [
        &[
            13, 0, 2, 8, 15, 0, 0, 0, 1, 0, 0, 0, 9, 11, 0, 0, 0, 1, 0, 0, 0, 1, b'z',
        ][..],
        &[11, 0, 1, 0, 0, 0, 0],
        &[8, 0, 1, 0, 0, 0, 3],
        &[0],
    ]
    .concat();
    let out = round_trip(&s, id, &bytes, Protocol::Binary);
    assert_eq!(out, [8, 0, 1, 0, 0, 0, 3, 0]);
}

#[test]
fn required_fields_are_checked_on_encode() {
    let s = load("zoo.thrift");
    let arena = Arena::new();
    let rec = Record::new_in(&s, s.thrift_struct_by_name("Everything").unwrap(), &arena);
    let mut out = Vec::new();
    let e = encode(rec, Protocol::Compact, &mut out).unwrap_err();
    assert_eq!(
        e.to_string(),
        "zoo.Everything.scalars: required field is not set"
    );
    let proto = SchemaSet::from_source("syntax = \"proto3\"; message M {}").unwrap();
    let m = Record::new_in(&proto, proto.message_by_name("M").unwrap(), &arena);
    assert!(encode(m, Protocol::Binary, &mut out).is_err());
}

/// Random bytes and mutants of valid messages: errors or messages, never a panic, and what
/// decodes re-encodes to bytes that decode to the same message.
#[test]
fn mutants_never_panic() {
    let s = load("zoo.thrift");
    let arena = Arena::new();
    let zoo = build_zoo(&s, &arena);
    let id = zoo.type_id();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for p in [Protocol::Binary, Protocol::Compact] {
        let mut good = Vec::new();
        encode(zoo, p, &mut good).unwrap();
        for _ in 0..3000 {
            let mut m = good.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() % m.len() as u64) as usize;
                m[at] = next() as u8;
            }
            let a = Arena::new();
            if let Ok(rec) = decode(&s, id, &m, &a, p, &DecodeOptions::default()) {
                let mut again = Vec::new();
                encode(rec, p, &mut again).unwrap();
                let a2 = Arena::new();
                let back = decode(&s, id, &again, &a2, p, &DecodeOptions::default()).unwrap();
                assert_eq!(
                    format!("{:?}", back.to_message()),
                    format!("{:?}", rec.to_message())
                );
            }
        }
    }
}

#[test]
fn json_round_trips_and_reads_what_it_writes() {
    let s = load("zoo.thrift");
    let arena = Arena::new();
    let rec = build_zoo(&s, &arena);
    let id = rec.type_id();
    let mut text = String::new();
    encode_json(rec, &mut text).unwrap();
    let opts = crate::json::JsonOptions::default();
    let back = decode_json(&s, id, &text, &arena, &opts).unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    encode(rec, Protocol::Compact, &mut a).unwrap();
    encode(back, Protocol::Compact, &mut b).unwrap();
    assert_eq!(a, b, "{text}");
    let mut again = String::new();
    encode_json(back, &mut again).unwrap();
    assert_eq!(again, text);

    let s = SchemaSet::from_thrift_sources(&[(
        "t.thrift",
        r#"enum E { A = 1, B = 2 }
           struct P { 1: i32 x }
           struct S {
             1: i64 big 2: double d 3: binary raw 4: E e 5: E unknown
             6: map<string, i16> m 7: map<E, bool> em 8: map<P, list<byte>> pm
             9: set<string> tags 10: optional string absent 11: string q
             12: double nan
           }"#,
    )])
    .unwrap();
    let id = s.thrift_struct_by_name("S").unwrap();
    let json = r#"{"big":9007199254740993,"d":0.1,"raw":"AP8=","e":"B","unknown":7,"m":{"k":-3},"em":{"A":true},"pm":[[{"x":1},[1,-1]]],"tags":["a","b"],"q":"\"\\\n\u0001é","nan":"NaN"}"#;
    let rec = decode_json(&s, id, json, &arena, &opts).unwrap();
    let mut out = String::new();
    encode_json(rec, &mut out).unwrap();
    assert_eq!(out, json);
    // Unset optional fields are omitted; null means unset; pairs are accepted for any map.
    let rec = decode_json(&s, id, r#"{"absent":null,"m":[["k",1]]}"#, &arena, &opts).unwrap();
    out.clear();
    encode_json(rec, &mut out).unwrap();
    assert_eq!(out, r#"{"m":{"k":1}}"#);
    let err = |text: &str| {
        decode_json(&s, id, text, &arena, &opts)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(r#"{"m":{"k":40000}}"#),
        "t.S.m[0] at byte 10: \"40000\" is not an integer in [-32768, 32767]"
    );
    assert!(err(r#"{"nope":1}"#).contains("no field \"nope\" in t.S"));
    assert!(err(r#"{"e":"C"}"#).contains("\"C\" is not a value of t.E"));
    assert!(err(r#"{"pm":{"a":[]}}"#).contains("array of [key, value] pairs"));
    assert!(err(r#"{"raw":"!!"}"#).contains("invalid base64"));
    assert!(err(r#"{} x"#).ends_with("trailing data"));
    assert!(err(r#"{"big":1"#).contains("at byte 8: expected ','"));
    let lenient = crate::json::JsonOptions {
        ignore_unknown: true,
        ..Default::default()
    };
    assert!(decode_json(&s, id, r#"{"nope":{"a":[1,null,"x"]}}"#, &arena, &lenient).is_ok());
}

#[test]
fn sets_keep_one_of_each_value() {
    let s = SchemaSet::from_thrift_sources(&[(
        "t.thrift",
        "struct S { 1: set<string> names 2: set<i64> ids 3: list<i32> list 4: set<bool> flags }",
    )])
    .unwrap();
    let id = s.thrift_struct_by_name("S").unwrap();
    let arena = Arena::new();
    let opts = crate::json::JsonOptions::default();
    let rec = decode_json(
        &s,
        id,
        r#"{"names":["a","b","a","c","b"],"ids":[5,5],"list":[1,1],"flags":[true,false,true]}"#,
        &arena,
        &opts,
    )
    .unwrap();
    let mut text = String::new();
    encode_json(rec, &mut text).unwrap();
    assert_eq!(
        text,
        r#"{"names":["a","b","c"],"ids":[5],"list":[1,1],"flags":[true,false]}"#
    );
    // The same through the binary protocol: a set<i64> of [7, 7, 8].
    let bytes: Vec<u8> = [
        &[14, 0, 2, 10, 0, 0, 0, 3][..],
        &7i64.to_be_bytes(),
        &7i64.to_be_bytes(),
        &8i64.to_be_bytes(),
        &[0],
    ]
    .concat();
    let out = round_trip(&s, id, &bytes, Protocol::Binary);
    let want: Vec<u8> = [
        &[14, 0, 2, 10, 0, 0, 0, 2][..],
        &7i64.to_be_bytes(),
        &8i64.to_be_bytes(),
        &[0],
    ]
    .concat();
    assert_eq!(out, want);
}

/// Calls and replies as Apache Thrift's Python library writes them (`writeMessageBegin`, the
/// `_args` / `_result` struct, for `service S { i32 add(1: i32 a, 2: P p) }`).
#[test]
fn message_envelopes_as_apache_writes_them() {
    let s = SchemaSet::from_thrift_sources(&[(
        "s.thrift",
        "struct P { 1: i32 x } service S { i32 add(1: i32 a, 2: P p) } service T extends S {}",
    )])
    .unwrap();
    let hex = |h: &str| -> Vec<u8> {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    };
    let cases = [
        (
            Protocol::Binary,
            "80010001000000036164640000012c080001000000050c0002080001ffffffff0000",
            MessageKind::Call,
            300,
        ),
        (
            Protocol::Binary,
            "8001000200000003616464fffffffe0800000000000900",
            MessageKind::Reply,
            -2,
        ),
        (
            Protocol::Compact,
            "8221ac0203616464150a1c15010000",
            MessageKind::Call,
            300,
        ),
        (
            Protocol::Compact,
            "8241feffffff0f0361646405001200",
            MessageKind::Reply,
            -2,
        ),
    ];
    for (p, bytes, kind, seqid) in cases {
        let bytes = hex(bytes);
        let (header, at) = read_message_header(&bytes, p).unwrap();
        assert_eq!(
            header,
            MessageHeader {
                name: "add".into(),
                kind,
                seqid
            }
        );
        let id = message_struct(&s, "T", &header).unwrap();
        let arena = Arena::new();
        let rec = decode(&s, id, &bytes[at..], &arena, p, &DecodeOptions::default()).unwrap();
        let mut out = Vec::new();
        write_message_header(&header, p, &mut out);
        encode(rec, p, &mut out).unwrap();
        assert_eq!(out, bytes, "{p:?} {kind:?}");
    }
    // The non-strict binary form: name length, name, type byte, sequence id.
    let old = hex("0000000361646401000000070800010000000500");
    let (header, at) = read_message_header(&old, Protocol::Binary).unwrap();
    assert_eq!((header.kind, header.seqid, at), (MessageKind::Call, 7, 12));
    let e = read_message_header(&hex("80020001"), Protocol::Binary).unwrap_err();
    assert!(
        e.to_string()
            .contains("bad TBinaryProtocol version 0x80020000"),
        "{e}"
    );
    assert!(read_message_header(&hex("8221ac"), Protocol::Compact).is_err());
    assert!(read_message_header(&hex("8325"), Protocol::Compact).is_err());
}

fn via_record(
    s: &SchemaSet,
    id: MessageId,
    input: &[u8],
    from: Protocol,
    to: Protocol,
) -> Result<Vec<u8>, String> {
    let arena = Arena::new();
    let rec =
        decode(s, id, input, &arena, from, &DecodeOptions::default()).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    encode(rec, to, &mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

fn direct(
    s: &SchemaSet,
    id: MessageId,
    input: &[u8],
    from: Protocol,
    to: Protocol,
) -> Result<Vec<u8>, String> {
    let mut out = vec![0xee]; // appends
    transcode(s, id, input, from, to, &DecodeOptions::default(), &mut out)
        .map_err(|e| e.to_string())?;
    assert_eq!(out.remove(0), 0xee);
    Ok(out)
}

const PAIRS: [(Protocol, Protocol); 4] = [
    (Protocol::Binary, Protocol::Binary),
    (Protocol::Binary, Protocol::Compact),
    (Protocol::Compact, Protocol::Binary),
    (Protocol::Compact, Protocol::Compact),
];

/// The direct transcoder gives the record path's bytes and errors: on the peers' files, the
/// zoo, inputs it hands to the record path (fields out of order, a repeated set value) and
/// random mutants.
#[test]
fn transcode_is_decode_then_encode() {
    let s = load("peers.thrift");
    for name in ["Flat", "Mixed", "Nested"] {
        let id = s.thrift_struct_by_name(name).unwrap();
        let lower = name.to_lowercase();
        for (from, to) in PAIRS {
            let ext = if from == Protocol::Binary {
                "tbin"
            } else {
                "tcompact"
            };
            let input = std::fs::read(testdata(&format!("{lower}.{ext}"))).unwrap();
            assert_eq!(
                direct(&s, id, &input, from, to),
                via_record(&s, id, &input, from, to)
            );
        }
    }
    let s = load("zoo.thrift");
    let sparse = s.thrift_struct_by_name("Sparse").unwrap();
    // Field 300 before field 1, and field 1 twice: the record path writes 1 then 300.
    let unordered: Vec<u8> = [
        &[11, 1, 44, 0, 0, 0, 1, b'm'][..],
        &[8, 0, 1, 0, 0, 0, 5],
        &[8, 0, 1, 0, 0, 0, 6],
        &[0],
    ]
    .concat();
    let want = via_record(&s, sparse, &unordered, Protocol::Binary, Protocol::Compact).unwrap();
    assert_eq!(
        direct(&s, sparse, &unordered, Protocol::Binary, Protocol::Compact).unwrap(),
        want
    );
    let c = s.thrift_struct_by_name("Containers").unwrap();
    // names (2): set<string> ["a", "a"].
    let dup = [
        14, 0, 2, 11, 0, 0, 0, 2, 0, 0, 0, 1, b'a', 0, 0, 0, 1, b'a', 0,
    ];
    let want = via_record(&s, c, &dup, Protocol::Binary, Protocol::Binary).unwrap();
    assert_eq!(want, [14, 0, 2, 11, 0, 0, 0, 1, 0, 0, 0, 1, b'a', 0]);
    assert_eq!(
        direct(&s, c, &dup, Protocol::Binary, Protocol::Binary).unwrap(),
        want
    );

    let arena = Arena::new();
    let zoo = build_zoo(&s, &arena);
    let id = zoo.type_id();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (from, to) in PAIRS {
        let mut good = Vec::new();
        encode(zoo, from, &mut good).unwrap();
        assert_eq!(
            direct(&s, id, &good, from, to),
            via_record(&s, id, &good, from, to)
        );
        for _ in 0..1500 {
            let mut m = good.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() % m.len() as u64) as usize;
                m[at] = next() as u8;
            }
            assert_eq!(
                direct(&s, id, &m, from, to),
                via_record(&s, id, &m, from, to),
                "{m:02x?}"
            );
        }
    }
}

/// A struct of 150 fields (three presence words), every third one set, strings of growing
/// length among them, written into a buffer too small to start with: the binary bytes are
/// the fields in id order, each header, value and the stop byte as TBinaryProtocol writes
/// them, and both protocols read back to the same bytes.
#[test]
fn wide_structs_write_every_presence_word() {
    let fields: String = (1..=150)
        .map(|k| match k % 2 {
            0 => format!("{k}: string s{k} "),
            _ => format!("{k}: i64 v{k} "),
        })
        .collect();
    let s = SchemaSet::from_thrift_sources(&[("t.thrift", &format!("struct W {{ {fields} }}"))])
        .unwrap();
    let id = s.thrift_struct_by_name("W").unwrap();
    let arena = Arena::new();
    let r = Record::new_in(&s, id, &arena);
    let text: String = "x".repeat(200);
    let mut want = Vec::new();
    for k in (1..=150usize).step_by(3) {
        let i = k - 1;
        if k % 2 == 0 {
            let v = &text[..k];
            r.set(i, FieldRef::Str(v)).unwrap();
            want.push(11);
            want.extend((k as i16).to_be_bytes());
            want.extend((v.len() as i32).to_be_bytes());
            want.extend(v.as_bytes());
        } else {
            let v = -(k as i64) << 40;
            r.set(i, FieldRef::I64(v)).unwrap();
            want.push(10);
            want.extend((k as i16).to_be_bytes());
            want.extend(v.to_be_bytes());
        }
    }
    want.push(0);
    let mut b = Vec::with_capacity(4);
    encode(r, Protocol::Binary, &mut b).unwrap();
    assert_eq!(b, want);
    assert_eq!(round_trip(&s, id, &b, Protocol::Binary), b);
    let mut c = Vec::new();
    encode(r, Protocol::Compact, &mut c).unwrap();
    assert_eq!(round_trip(&s, id, &c, Protocol::Compact), c);
    let mut converted = Vec::new();
    transcode(
        &s,
        id,
        &b,
        Protocol::Binary,
        Protocol::Compact,
        &DecodeOptions::default(),
        &mut converted,
    )
    .unwrap();
    assert_eq!(converted, c);
}
