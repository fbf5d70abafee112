//! Text format tests: round trips over the embedded test schemas, every form the parser
//! takes, what the writer writes, and errors with their path and position.

use optimus_schema::{MessageId, SchemaSet};

use super::*;
use crate::binary::DecodeOptions;
use crate::engine;
use crate::view::FieldRef;

const PEERS: &str = include_str!("../../../../testdata/peers.proto");
const PROTO3: &str = include_str!("../../../../testdata/conformance/test_messages_proto3.proto");
const PROTO2: &str = include_str!("../../../../testdata/conformance/test_messages_proto2.proto");

fn conformance() -> SchemaSet {
    SchemaSet::from_sources(&[
        ("test_messages_proto3.proto", PROTO3),
        ("test_messages_proto2.proto", PROTO2),
    ])
    .expect("test protos compile")
}

const P3: &str = "protobuf_test_messages.proto3.TestAllTypesProto3";
const P2: &str = "protobuf_test_messages.proto2.TestAllTypesProto2";

/// `text` read as `ty`, written back as wire bytes.
fn wire(s: &SchemaSet, ty: &str, text: &str) -> Result<Vec<u8>, Error> {
    let id = s.message_by_name(ty).unwrap();
    let arena = Arena::new();
    let rec = decode(s, id, text, &arena, &TextOptions::default())?;
    let mut out = Vec::new();
    engine::encode(rec, &mut out);
    Ok(out)
}

/// `text` read as `ty` and written as text with `opts`.
fn rewrite(s: &SchemaSet, ty: &str, text: &str, opts: &TextOptions) -> String {
    let id = s.message_by_name(ty).unwrap();
    let arena = Arena::new();
    let rec = decode(s, id, text, &arena, opts).unwrap_or_else(|e| panic!("{text}: {e}"));
    let mut out = String::new();
    encode(rec, opts, &mut out).unwrap();
    out
}

/// The error reading `text` as `ty`, as displayed.
fn error(s: &SchemaSet, ty: &str, text: &str) -> String {
    match wire(s, ty, text) {
        Ok(b) => panic!("{text:?} read as {b:?}"),
        Err(e) => e.to_string(),
    }
}

/// Checks that wire bytes written as text read back to the same bytes, in both layouts.
fn round_trip(s: &SchemaSet, id: MessageId, bytes: &[u8]) {
    let arena = Arena::new();
    let rec = engine::decode(s, id, bytes, &arena, &DecodeOptions::default()).unwrap();
    let mut want = Vec::new();
    engine::encode(rec, &mut want);
    for single_line in [false, true] {
        let opts = TextOptions {
            single_line,
            ..TextOptions::default()
        };
        let mut text = String::new();
        encode(rec, &opts, &mut text).unwrap();
        assert_eq!(single_line, !text.contains('\n'), "{text}");
        let back_arena = Arena::new();
        let back =
            decode(s, id, &text, &back_arena, &opts).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let mut got = Vec::new();
        engine::encode(back, &mut got);
        assert_eq!(got, want, "{text}");
    }
}

#[test]
fn peer_messages_round_trip() {
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
        round_trip(&s, s.message_by_name(name).unwrap(), bytes);
    }
}

const FULL3: &str = r#"
    optional_int32: -7 optional_int64: -9223372036854775808 optional_uint32: 4294967295
    optional_uint64: 18446744073709551615 optional_sint32: -2147483648 optional_sint64: 5
    optional_fixed32: 7 optional_fixed64: 8 optional_sfixed32: -9 optional_sfixed64: -10
    optional_float: 1.5 optional_double: -0.1 optional_bool: true
    optional_string: "caf\u00e9 \"q\" \n\t\\ \001 日本" optional_bytes: "\000\377\x7f'"
    optional_nested_message { a: 1 corecursive { optional_int32: 2 } }
    optional_foreign_message < c: 3 >
    optional_nested_enum: BAZ optional_foreign_enum: FOREIGN_BAR optional_aliased_enum: ALIAS_BAZ
    repeated_int32: [1, -2, 3] repeated_int32: 4
    repeated_string: ["a", 'b'] repeated_bytes: "\x00"
    repeated_double: [inf, -inf, 1e300, 5e-324] repeated_float: [0.1, 3.4028235e38, -0]
    repeated_nested_message { a: 5 } repeated_nested_message: { a: 6 }
    repeated_nested_enum: [FOO, BAR, 7]
    map_int32_int32 { key: 2 value: 3 } map_int32_int32 { key: -1 value: 0 }
    map_string_string { key: "b" value: "x" } map_string_string [{ key: "a" }, { value: "v" }]
    map_bool_bool { key: true value: true }
    map_string_nested_message { key: "k" value { a: 9 } }
    map_string_foreign_enum { key: "e" value: FOREIGN_BAZ }
    oneof_string: "one"
    optional_any { [type.googleapis.com/protobuf_test_messages.proto3.TestAllTypesProto3] { optional_int32: 1 } }
    optional_duration { seconds: 3 nanos: 4 }
    optional_value { struct_value { fields { key: "k" value { number_value: 1 } } } }
    optional_bool_wrapper { value: true }
    recursive_message { recursive_message { optional_int32: 8 } }
"#;

#[test]
fn every_conformance_field_round_trips() {
    let s = conformance();
    let id = s.message_by_name(P3).unwrap();
    let bytes = wire(&s, P3, FULL3).unwrap();
    round_trip(&s, id, &bytes);
    let p2 = r#"
        optional_int32: 1 Data { group_int32: 2 group_uint32: 3 }
        [protobuf_test_messages.proto2.extension_int32]: 5
        optional_nested_enum: NEG repeated_nested_enum: [FOO, BAR]
        default_string: "d" oneof_nested_message { a: 1 }
    "#;
    let bytes = wire(&s, P2, p2).unwrap();
    round_trip(&s, s.message_by_name(P2).unwrap(), &bytes);
}

#[test]
fn writes_as_cpp_text_format() {
    let s = conformance();
    let opts = TextOptions::default();
    let text = r#"optional_int32: 1 optional_nested_message { a: 2 corecursive { optional_bool: true } }
        optional_double: 1 optional_float: 0.1 optional_nested_enum: BAR repeated_int32: [1, 2]
        optional_bytes: "\001\377a\"" optional_string: "é\n"
        map_int32_int32 { key: 3 value: 4 } map_int32_int32 { key: 1 value: 2 } map_int32_int32 { key: 3 value: 5 }"#;
    let want = "optional_int32: 1\n\
                optional_float: 0.1\n\
                optional_double: 1\n\
                optional_string: \"é\\n\"\n\
                optional_bytes: \"\\001\\377a\\\"\"\n\
                optional_nested_message {\n  a: 2\n  corecursive {\n    optional_bool: true\n  }\n}\n\
                optional_nested_enum: BAR\n\
                repeated_int32: 1\n\
                repeated_int32: 2\n\
                map_int32_int32 {\n  key: 1\n  value: 2\n}\n\
                map_int32_int32 {\n  key: 3\n  value: 5\n}\n";
    assert_eq!(rewrite(&s, P3, text, &opts), want);
    let one = TextOptions {
        single_line: true,
        ..TextOptions::default()
    };
    assert_eq!(
        rewrite(
            &s,
            P3,
            "optional_int32: 1 optional_nested_message { a: 2 }",
            &one
        ),
        "optional_int32: 1 optional_nested_message { a: 2 }"
    );
    // Fields by number: extensions in brackets, groups by their type name; unknown enum numbers as numbers,
    // floats' specials, exponents signed (`1e+100`, as C++ and Python protobuf write them).
    assert_eq!(
        rewrite(
            &s,
            P2,
            "data { group_int32: 1 } [protobuf_test_messages.proto2.extension_int32]: 2",
            &opts
        ),
        "[protobuf_test_messages.proto2.extension_int32]: 2\nData {\n  group_int32: 1\n}\n"
    );
    assert_eq!(
        rewrite(&s, P3, "optional_nested_enum: 42 repeated_double: [nan, -inf, 1e100]", &opts),
        "optional_nested_enum: 42\nrepeated_double: nan\nrepeated_double: -inf\nrepeated_double: 1e+100\n"
    );
    // Any in its expanded form.
    assert_eq!(
        rewrite(
            &s,
            P3,
            "optional_any { [type.googleapis.com/protobuf_test_messages.proto3.TestAllTypesProto3] { optional_int32: 5 } }",
            &one
        ),
        "optional_any { [type.googleapis.com/protobuf_test_messages.proto3.TestAllTypesProto3] { optional_int32: 5 } }"
    );
    // An Any of a type the schema lacks stays raw.
    assert_eq!(
        rewrite(
            &s,
            P3,
            r#"optional_any { type_url: "x/y.Z" value: "\010\001" }"#,
            &one
        ),
        r#"optional_any { type_url: "x/y.Z" value: "\010\001" }"#
    );
}

#[test]
fn unknown_fields_are_printed_by_number_when_asked() {
    let s = conformance();
    let id = s.message_by_name(P3).unwrap();
    // 1001: 123 (varint), 1002: "hello", 1003 { 1: 111 } (a message), 1004 group { 1: 321 },
    // 1005: fixed32, 1006: fixed64.
    let mut bytes = vec![0xc8, 0x3e, 123, 0xd2, 0x3e, 5];
    bytes.extend_from_slice(b"hello");
    bytes.extend_from_slice(&[0xda, 0x3e, 2, 0x08, 111]);
    bytes.extend_from_slice(&[0xe3, 0x3e, 0x08, 0xc1, 0x02, 0xe4, 0x3e]);
    bytes.extend_from_slice(&[0xed, 0x3e, 1, 0, 0, 0]);
    bytes.extend_from_slice(&[0xf1, 0x3e, 2, 0, 0, 0, 0, 0, 0, 0]);
    let arena = Arena::new();
    let rec = engine::decode(&s, id, &bytes, &arena, &DecodeOptions::default()).unwrap();
    let mut out = String::new();
    encode(rec, &TextOptions::default(), &mut out).unwrap();
    assert_eq!(out, "");
    let opts = TextOptions {
        print_unknown: true,
        ..TextOptions::default()
    };
    encode(rec, &opts, &mut out).unwrap();
    assert_eq!(
        out,
        "1001: 123\n1002: \"hello\"\n1003 {\n  1: 111\n}\n1004 {\n  1: 321\n}\n\
         1005: 0x00000001\n1006: 0x0000000000000002\n"
    );
}

#[test]
fn parser_takes_every_textformat_form() {
    let s = conformance();
    let same = |a: &str, b: &str| {
        assert_eq!(
            wire(&s, P3, a).unwrap_or_else(|e| panic!("{a}: {e}")),
            wire(&s, P3, b).unwrap_or_else(|e| panic!("{b}: {e}")),
            "{a} vs {b}"
        );
    };
    // Separators, comments, delimiters, optional colon before a message.
    same(
        "optional_int32: 1, optional_int64: 2; # a comment\n optional_nested_message: < a: 3 >",
        "optional_int32: 1 optional_int64: 2 optional_nested_message { a: 3 }",
    );
    // Integer forms.
    same("optional_int32: 0x1F", "optional_int32: 31");
    same("optional_int32: 017", "optional_int32: 15");
    same("optional_int32: -0x10", "optional_int32: -16");
    same(
        "optional_uint64: 0xFFFFFFFFFFFFFFFF",
        "optional_uint64: 18446744073709551615",
    );
    same("optional_int32: - 5", "optional_int32: -5");
    // Floats.
    same("optional_float: 1.5f", "optional_float: 1.5");
    same("optional_float: 2F", "optional_float: 2");
    same("optional_double: .5", "optional_double: 0.5");
    same("optional_double: 1.", "optional_double: 1");
    same("optional_double: 1E3", "optional_double: 1000");
    same("optional_double: 0x10", "optional_double: 16");
    same("optional_double: INF", "optional_double: inf");
    same("optional_double: -Infinity", "optional_double: -inf");
    same("optional_float: NaN", "optional_float: nan");
    same(
        "optional_double: 18446744073709551616",
        "optional_double: 1.8446744073709552e19",
    );
    same("optional_float: 3.4028235e39", "optional_float: inf");
    // Booleans.
    same("optional_bool: t", "optional_bool: true");
    same("optional_bool: True", "optional_bool: 1");
    same(
        "optional_bool: f optional_int32: 1",
        "optional_bool: False optional_int32: 1",
    );
    // Strings: concatenation and every escape.
    same(
        r#"optional_string: 'a' "b"  'c'"#,
        r#"optional_string: "abc""#,
    );
    same(
        r#"optional_bytes: "\a\b\f\n\r\t\v\?\\\'\"\101\x41\X4a\0""#,
        r#"optional_bytes: "\007\010\014\012\015\011\013?\\'\042AAJ\000""#,
    );
    same(
        r#"optional_string: "\u00e9\U0001F600""#,
        r#"optional_string: "é😀""#,
    );
    same(r#"optional_string: "\303\251""#, r#"optional_string: "é""#);
    // Enums by name or number; open enums take unknown numbers.
    same("optional_nested_enum: BAR", "optional_nested_enum: 1");
    same("optional_nested_enum: -1", "optional_nested_enum: NEG");
    assert!(wire(&s, P3, "optional_nested_enum: 99").is_ok());
    // Lists, empty lists, lists of messages.
    same("repeated_int32: []", "");
    same(
        "repeated_nested_message: [{a: 1}, <a: 2>]",
        "repeated_nested_message { a: 1 } repeated_nested_message { a: 2 }",
    );
    same(
        "repeated_int32: [1] repeated_int32: 2",
        "repeated_int32: [1, 2]",
    );
    // A zero in a field without presence is not "set": giving it again is not a duplicate.
    same("optional_int32: 0 optional_int32: 4", "optional_int32: 4");
    // Maps: the last value of a key wins.
    same(
        "map_string_string { key: 'k' value: 'a' } map_string_string { key: 'k' value: 'b' }",
        "map_string_string { key: 'k' value: 'b' }",
    );
    // Groups by type name or field name; extensions.
    let p2 = |a: &str, b: &str| {
        assert_eq!(
            wire(&s, P2, a).unwrap(),
            wire(&s, P2, b).unwrap(),
            "{a} vs {b}"
        );
    };
    p2("Data: { group_int32: 1 }", "data { group_int32: 1 }");
    p2("Data <>", "Data {}");
    p2(
        "[ protobuf_test_messages . proto2 . extension_int32 ]: 3",
        "[protobuf_test_messages.proto2.extension_int32]: 3",
    );
    // Any, expanded or raw.
    same(
        "optional_any { [type.googleapis.com/protobuf_test_messages.proto3.TestAllTypesProto3]: < optional_int32: 12345 > }",
        r#"optional_any { type_url: "type.googleapis.com/protobuf_test_messages.proto3.TestAllTypesProto3" value: "\b\271`" }"#,
    );
}

#[test]
fn parser_refuses_what_textformat_refuses() {
    let s = conformance();
    let bad3 = [
        "optional_int32: 2147483648",
        "optional_int32: -2147483649",
        "optional_uint32: 4294967296",
        "optional_uint32: -1",
        "optional_int64: 9223372036854775808",
        "optional_uint64: 18446744073709551616",
        "optional_int32: 1.0",
        "optional_int32: 08",
        "optional_int32: 1a",
        "optional_bool: 2",
        "optional_bool: yes",
        "optional_string: 'a\nb'",
        "optional_string: 'abc",
        "optional_string: '\\300'",
        "optional_string: '\\xc0'",
        "optional_bytes: '\\U00110000'",
        "optional_bytes: '\\ud801\\udc37'",
        "optional_bytes: '\\ud800'",
        "optional_bytes: '\\u12'",
        "optional_bytes: '\\q'",
        "optional_bytes: '\\x'",
        "optional_nested_enum: NOPE",
        "optional_int32 1",
        "optional_int32: 1 optional_int32: 2",
        "optional_nested_message {} optional_nested_message {}",
        "oneof_uint32: 1 oneof_string: 'x'",
        "no_such_field: 1",
        "optionalInt32: 1",
        "optional_nested_message { a: 1",
        "optional_nested_message { a: 1 >",
        "optional_nested_message: 1",
        "repeated_int32: [1 2]",
        "repeated_int32: [1,]",
        "optional_int32: [1]",
        "[protobuf_test_messages.proto3.nope]: 1",
        "optional_any { [type.googleapis.com/unknown] { optional_int32: 1 } }",
        "optional_any { [type.googleapis.com/protobuf_test_messages.proto3.TestAllTypesProto3] {} type_url: 'x' }",
        "optional_nested_message { [type.googleapis.com/protobuf_test_messages.proto3.TestAllTypesProto3] {} }",
        "1: 2",
        "optional_int32: 1 }",
        "\u{80}",
    ];
    for text in bad3 {
        assert!(wire(&s, P3, text).is_err(), "{text:?} was read");
    }
    let bad2 = [
        // A closed enum refuses numbers it does not name.
        "optional_nested_enum: 99",
        // A group by a name that is neither its field's nor its type's.
        "DATA { }",
        "optional_int32: 1 optional_int32: 1",
    ];
    for text in bad2 {
        assert!(wire(&s, P2, text).is_err(), "{text:?} was read");
    }
}

#[test]
fn errors_name_the_field_path_and_position() {
    let s = conformance();
    let e = error(
        &s,
        P3,
        "optional_int32: 1\noptional_nested_message {\n  a: x\n}",
    );
    assert_eq!(
        e,
        "protobuf_test_messages.proto3.TestAllTypesProto3.optional_nested_message.a at byte 49: \
         3:6: expected an integer, got \"x\""
    );
    let e = error(
        &s,
        P3,
        "repeated_nested_message {}\nrepeated_nested_message { b: 1 }",
    );
    assert!(
        e.starts_with("protobuf_test_messages.proto3.TestAllTypesProto3.repeated_nested_message[1] at byte 53: 2:27: message type \"protobuf_test_messages.proto3.TestAllTypesProto3.NestedMessage\" has no field named \"b\""),
        "{e}"
    );
    let e = error(&s, P3, "optional_int32: 1 optional_int32: 2");
    assert!(
        e.contains("optional_int32 at byte 18: 1:19: non-repeated field"),
        "{e}"
    );
    let e = error(&s, P3, "oneof_uint32: 1 oneof_string: 'x'");
    assert!(e.contains("another member of oneof \"oneof_field\""), "{e}");
    let e = error(&s, P3, "map_int32_int32 { key: 1 value: 'x' }");
    assert!(
        e.contains("map_int32_int32[0].value at byte 32: 1:33"),
        "{e}"
    );
}

#[test]
fn depth_is_bounded() {
    let s = conformance();
    let id = s.message_by_name(P3).unwrap();
    let nest = |n: usize| "recursive_message { ".repeat(n) + &"}".repeat(n);
    let arena = Arena::new();
    let opts = TextOptions {
        depth_limit: 10,
        ..TextOptions::default()
    };
    let ten = nest(10);
    let rec = decode(&s, id, &ten, &arena, &opts).unwrap();
    let mut out = String::new();
    encode(rec, &opts, &mut out).unwrap();
    let e = decode(&s, id, &nest(11), &arena, &opts).unwrap_err();
    assert!(e.to_string().contains("nesting deeper than 10"), "{e}");
    // The default limit, and far past it: an error, not a stack overflow.
    let deep = nest(100_000);
    assert!(decode(&s, id, &deep, &arena, &TextOptions::default()).is_err());
    assert!(decode(&s, id, &nest(100), &arena, &TextOptions::default()).is_ok());
    // Writing past the limit is an error too.
    let twelve = nest(12);
    let rec = decode(&s, id, &twelve, &arena, &TextOptions::default()).unwrap();
    let mut out = String::new();
    let e = encode(rec, &opts, &mut out).unwrap_err();
    assert!(e.to_string().contains("deeper than 10"), "{e}");
}

#[test]
fn strings_without_escapes_view_the_input() {
    let s = conformance();
    let id = s.message_by_name(P3).unwrap();
    let text = String::from("optional_string: \"plain\" optional_bytes: 'a\\x00'");
    let arena = Arena::new();
    let rec = decode(&s, id, &text, &arena, &TextOptions::default()).unwrap();
    let i = rec.index_of("optional_string").unwrap();
    let Some(FieldRef::Str(v)) = rec.get(i) else {
        panic!("no string")
    };
    assert_eq!(v, "plain");
    assert!(text.as_bytes().as_ptr_range().contains(&v.as_ptr()));
    let Some(FieldRef::Bytes(b)) = rec.get(rec.index_of("optional_bytes").unwrap()) else {
        panic!("no bytes")
    };
    assert_eq!(b, b"a\0");
}

#[test]
fn garbage_never_panics() {
    let s = conformance();
    let id = s.message_by_name(P3).unwrap();
    // Every prefix of a text with every form in it, and a few mutations of each byte.
    let bytes = FULL3.as_bytes();
    for end in 0..bytes.len() {
        if let Ok(t) = std::str::from_utf8(&bytes[..end]) {
            let arena = Arena::new();
            let _ = decode(&s, id, t, &arena, &TextOptions::default());
        }
    }
    for i in (0..bytes.len()).step_by(3) {
        for b in [b'{', b'}', b'"', b'\\', b'[', b':', b'-', b'0', b'x'] {
            let mut m = bytes.to_vec();
            m[i] = b;
            if let Ok(t) = std::str::from_utf8(&m) {
                let arena = Arena::new();
                let _ = decode(&s, id, t, &arena, &TextOptions::default());
            }
        }
    }
}

#[test]
fn random_token_soup_never_panics() {
    let s = conformance();
    let id = s.message_by_name(P3).unwrap();
    let tokens = [
        "optional_int32",
        "optional_string",
        "repeated_int32",
        "optional_nested_message",
        "map_string_string",
        "optional_any",
        "recursive_message",
        "oneof_string",
        "key",
        "value",
        "a",
        "[",
        "]",
        "{",
        "}",
        "<",
        ">",
        ":",
        ",",
        ";",
        "-",
        "0x",
        "07",
        "1",
        "1.5f",
        "inf",
        "'x'",
        "\"\\u12\"",
        "\"\\x\"",
        "'\\",
        "#c\n",
        "\n",
        " ",
        ".",
        "/",
        "type.googleapis.com",
        "protobuf_test_messages.proto3.TestAllTypesProto3",
        "1e",
        "é",
        "\"\\U00110000\"",
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for _ in 0..20_000 {
        let len = next(24);
        let text: String = (0..len)
            .map(|_| tokens[next(tokens.len())])
            .collect::<Vec<_>>()
            .join(" ");
        let arena = Arena::new();
        if let Ok(rec) = decode(&s, id, &text, &arena, &TextOptions::default()) {
            // What reads also writes, and reads back to the same bytes.
            let mut out = String::new();
            encode(rec, &TextOptions::default(), &mut out).unwrap();
            let back_arena = Arena::new();
            let back = decode(&s, id, &out, &back_arena, &TextOptions::default())
                .unwrap_or_else(|e| panic!("{text:?} -> {out:?}: {e}"));
            let (mut x, mut y) = (Vec::new(), Vec::new());
            engine::encode(rec, &mut x);
            engine::encode(back, &mut y);
            assert_eq!(x, y, "{text:?} -> {out:?}");
        }
    }
}

#[test]
fn options_default_as_documented() {
    let o = TextOptions::default();
    assert!(!o.single_line && !o.print_unknown);
    assert_eq!(o.depth_limit, crate::DEFAULT_DEPTH_LIMIT);
}
