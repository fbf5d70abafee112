//! The HyperProtoBench suite of the RPCAcc experiments, as `.proto` source and serialized
//! messages for the engine to trace.
//!
//! RPCAcc evaluates on Google's HyperProtoBench: six benches of ten messages each, with
//! "different average field sizes", and in Bench2 two large flat messages (M4 1.6 MB, M10
//! 0.6 MB). Each bench's `benchmark.proto` declares its ten top-level messages and
//! `benchmark.inc` sets every field of them with literal values, mostly long random strings.
//! `data/hyperprotobench.json` records each top-level message's structure as a string of
//! field codes (the wire class of each field in number order, sub-messages in parentheses,
//! `*` before a repeated field) and what is known of its values: the `.inc` file's size,
//! which bounds the ten messages' string bytes, and the string lengths seen in it. This module
//! builds, from a seeded `ChaCha8Rng`, a `.proto` per bench with a message type per node of
//! those structures, and one message per structure with every field set: numbers drawn,
//! string lengths drawn log-uniformly and, where the `.inc` size is known, scaled so the ten
//! messages carry that many bytes (same seed, same bytes). The messages are plain protobuf
//! wire bytes; the engine decodes and re-encodes them to produce the traces.

use std::fmt::Write as _;

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::Deserialize;

use super::MessageSet;

/// Messages per bench (RPCAcc §IV-B: "six workloads, each containing 10 messages").
pub const MESSAGES_PER_BENCH: usize = 10;

/// What `data/hyperprotobench.json` records of one real bench.
#[derive(Clone, Debug, Deserialize)]
struct BenchData {
    name: String,
    /// Characters of the bench's `benchmark.inc` (mostly the ten messages' string literals),
    /// where the file is known: the generated messages' string bytes are scaled to it.
    inc_chars: Option<u64>,
    /// Each top-level message's structure, in field codes (see the file's `field_codes`).
    messages: Vec<String>,
    /// log2 of the string lengths' range, inclusive, before scaling.
    string_log_len: (u32, u32),
}

#[derive(Deserialize)]
struct SuiteData {
    benches: Vec<BenchData>,
    /// Elements a repeated field is given.
    repeated_elements: u32,
}

/// The per-bench structures and facts, from google/HyperProtoBench (see the file's `source`).
const HPB_JSON: &str = include_str!("../../data/hyperprotobench.json");

fn suite_data() -> SuiteData {
    serde_json::from_str(HPB_JSON).expect("data/hyperprotobench.json parses")
}

/// Sizes of Bench2's large flat messages M4 and M10 (RPCAcc §II-C): the second bench's
/// fourth and tenth messages, whose strings are scaled to these sizes.
pub const BENCH2_LARGE: [(usize, u32); 2] = [(3, 1_600_000), (9, 600_000)];

/// Package of every generated `.proto`.
pub const PACKAGE: &str = "hpb";

/// One field of a structure: its `.proto` type (a scalar's, or a sub-message's fields) and
/// whether it repeats.
#[derive(Clone, Debug, PartialEq)]
struct FieldShape {
    kind: Kind,
    repeated: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Scalar(&'static str),
    Message(Vec<FieldShape>),
}

/// The `.proto` scalar type of a field code.
fn scalar(code: char) -> Option<&'static str> {
    Some(match code {
        'i' => "int32",
        'I' => "int64",
        'u' => "uint32",
        'U' => "uint64",
        'b' => "bool",
        'e' => "enum",
        'f' => "float",
        'd' => "double",
        'x' => "fixed32",
        'X' => "fixed64",
        'z' => "sint32",
        's' => "string",
        'y' => "bytes",
        _ => return None,
    })
}

/// Parses a structure string into its fields; `None` if it is malformed.
fn parse(code: &str) -> Option<Vec<FieldShape>> {
    fn fields(
        chars: &mut std::iter::Peekable<std::str::Chars>,
        nested: bool,
    ) -> Option<Vec<FieldShape>> {
        let mut out = Vec::new();
        loop {
            let repeated = chars.next_if_eq(&'*').is_some();
            let kind = match chars.next() {
                None if !nested && !repeated => return Some(out),
                Some(')') if nested && !repeated => return Some(out),
                Some('(') => Kind::Message(fields(chars, true)?),
                Some(c) => Kind::Scalar(scalar(c)?),
                None => return None,
            };
            out.push(FieldShape { kind, repeated });
        }
    }
    fields(&mut code.chars().peekable(), false)
}

/// A generated field value.
enum Val {
    Fixed64(u64),
    Fixed32(u32),
    Varint(u64),
    Bytes(u32),
    Message(Vec<(u32, Val)>),
}

struct Gen {
    rng: ChaCha8Rng,
    proto: String,
    types: usize,
    repeated_elements: u32,
    string_log_len: (u32, u32),
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Serializes fields (already in number order) as protobuf wire bytes.
fn wire(fields: &[(u32, Val)], out: &mut Vec<u8>) {
    for (number, v) in fields {
        let key = u64::from(*number) << 3;
        match v {
            Val::Varint(x) => {
                put_varint(out, key);
                put_varint(out, *x);
            }
            Val::Fixed64(x) => {
                put_varint(out, key | 1);
                out.extend_from_slice(&x.to_le_bytes());
            }
            Val::Fixed32(x) => {
                put_varint(out, key | 5);
                out.extend_from_slice(&x.to_le_bytes());
            }
            Val::Bytes(len) => {
                put_varint(out, key | 2);
                put_varint(out, u64::from(*len));
                out.extend((0..*len).map(|i| b'a' + (i % 26) as u8));
            }
            Val::Message(sub) => {
                let mut body = Vec::new();
                wire(sub, &mut body);
                put_varint(out, key | 2);
                put_varint(out, body.len() as u64);
                out.extend_from_slice(&body);
            }
        }
    }
}

/// `(fields, payload bytes)` over every non-message field at all levels.
fn payload(fields: &[(u32, Val)]) -> (u64, u64) {
    fields.iter().fold((0, 0), |(n, b), (_, v)| match v {
        Val::Fixed64(_) => (n + 1, b + 8),
        Val::Fixed32(_) => (n + 1, b + 4),
        Val::Varint(x) => (
            n + 1,
            b + u64::from((64 - x.max(&1).leading_zeros()).div_ceil(7)),
        ),
        Val::Bytes(len) => (n + 1, b + u64::from(*len)),
        Val::Message(sub) => {
            let (sn, sb) = payload(sub);
            (n + sn, b + sb)
        }
    })
}

/// Multiplies every string length in `fields` by `scale` (at least one byte each).
fn scale_strings(fields: &mut [(u32, Val)], scale: f64) {
    for (_, v) in fields {
        match v {
            Val::Bytes(len) => *len = ((f64::from(*len) * scale).round() as u32).max(1),
            Val::Message(sub) => scale_strings(sub, scale),
            _ => {}
        }
    }
}

/// String bytes in `fields`, at all levels.
fn string_bytes(fields: &[(u32, Val)]) -> u64 {
    fields
        .iter()
        .map(|(_, v)| match v {
            Val::Bytes(len) => u64::from(*len),
            Val::Message(sub) => string_bytes(sub),
            _ => 0,
        })
        .sum()
}

impl Gen {
    fn below(&mut self, n: u32) -> u32 {
        (self.rng.next_u64() % u64::from(n.max(1))) as u32
    }

    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + self.below(hi - lo + 1)
    }

    /// Declares a message type with `decls` (`label type`, numbered from 1).
    fn declare(&mut self, decls: &[String]) -> String {
        let name = format!("M{}", self.types);
        self.types += 1;
        let _ = writeln!(self.proto, "message {name} {{");
        for (i, d) in decls.iter().enumerate() {
            let _ = writeln!(self.proto, "  {d} f{n} = {n};", n = i + 1);
        }
        let _ = writeln!(self.proto, "}}");
        name
    }

    /// One value of scalar type `ty`: numbers as the `.inc` files write them (small
    /// hexadecimal constants, `true`), strings of a drawn length.
    fn scalar_value(&mut self, ty: &str) -> Val {
        match ty {
            "bool" => Val::Varint(1),
            "enum" => Val::Varint(u64::from(self.range(1, 127))),
            "float" | "fixed32" => Val::Fixed32(self.rng.next_u32() | 1),
            "double" | "fixed64" => Val::Fixed64(self.rng.next_u64() | 1),
            "string" | "bytes" => {
                let len = 1u32 << self.range(self.string_log_len.0, self.string_log_len.1);
                Val::Bytes(len + self.below(len))
            }
            wide => {
                let bits = if wide.ends_with("64") { 64 } else { 32 };
                let shift = 64 - bits + self.below(bits);
                Val::Varint((self.rng.next_u64() >> shift).max(1))
            }
        }
    }

    /// Declares the message type of structure `shape`, its sub-messages' types first, once
    /// each however many elements a repeated sub-message gets; returns its name.
    fn declare_shape(&mut self, shape: &[FieldShape]) -> String {
        let decls: Vec<String> = shape
            .iter()
            .map(|f| {
                let label = if f.repeated { "repeated" } else { "optional" };
                match &f.kind {
                    // Enums are declared as int32, whose wire form they share.
                    Kind::Scalar("enum") => format!("{label} int32"),
                    Kind::Scalar(ty) => format!("{label} {ty}"),
                    Kind::Message(sub) => format!("{label} {}", self.declare_shape(sub)),
                }
            })
            .collect();
        self.declare(&decls)
    }

    /// Values for a message of structure `shape`, every field set (a repeated field with
    /// `repeated_elements` elements).
    fn values(&mut self, shape: &[FieldShape]) -> Vec<(u32, Val)> {
        let mut fields = Vec::new();
        for (i, f) in shape.iter().enumerate() {
            let number = i as u32 + 1;
            let count = if f.repeated {
                self.repeated_elements
            } else {
                1
            };
            for _ in 0..count {
                let v = match &f.kind {
                    Kind::Scalar(ty) => self.scalar_value(ty),
                    Kind::Message(sub) => Val::Message(self.values(sub)),
                };
                fields.push((number, v));
            }
        }
        fields
    }

    /// A message of structure `shape`: its type name and fields.
    fn message(&mut self, shape: &[FieldShape]) -> (String, Vec<(u32, Val)>) {
        (self.declare_shape(shape), self.values(shape))
    }
}

/// Builds the six benches from `seed`.
pub fn suite(seed: u64) -> Vec<MessageSet> {
    let data = suite_data();
    data.benches
        .iter()
        .enumerate()
        .map(|(b, d)| {
            let mut g = Gen {
                rng: ChaCha8Rng::seed_from_u64(seed ^ (b as u64).wrapping_mul(0x9e37_79b9)),
                proto: format!("syntax = \"proto2\";\npackage {PACKAGE};\n"),
                types: 0,
                repeated_elements: data.repeated_elements,
                string_log_len: d.string_log_len,
            };
            let mut built: Vec<(String, Vec<(u32, Val)>)> = d
                .messages
                .iter()
                .map(|code| {
                    let shape = parse(code).expect("hyperprotobench.json structures parse");
                    g.message(&shape)
                })
                .collect();
            let large = |m: usize| b == 1 && BENCH2_LARGE.iter().any(|(i, _)| *i == m);
            if let Some(inc) = d.inc_chars {
                let drawn: u64 = (0..built.len())
                    .filter(|&m| !large(m))
                    .map(|m| string_bytes(&built[m].1))
                    .sum();
                let scale = inc as f64 / drawn.max(1) as f64;
                for (m, msg) in built.iter_mut().enumerate() {
                    if !large(m) {
                        scale_strings(&mut msg.1, scale);
                    }
                }
            }
            for &(m, size) in BENCH2_LARGE.iter().filter(|_| b == 1) {
                let drawn = string_bytes(&built[m].1);
                scale_strings(&mut built[m].1, f64::from(size) / drawn.max(1) as f64);
            }
            let mut messages = Vec::new();
            let mut avg = Vec::new();
            for (ty, fields) in &built {
                let mut bytes = Vec::new();
                wire(fields, &mut bytes);
                let (n, pb) = payload(fields);
                avg.push(pb as f64 / n.max(1) as f64);
                messages.push((format!("{PACKAGE}.{ty}"), bytes));
            }
            MessageSet {
                name: d.name.clone(),
                proto: g.proto,
                messages,
                avg_field_bytes: avg,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suite_is_deterministic_and_shaped() {
        let a = suite(7);
        assert_eq!(a, suite(7));
        assert_eq!(a.len(), 6);
        for b in &a {
            assert_eq!(b.messages.len(), MESSAGES_PER_BENCH);
            assert!(b.proto.starts_with("syntax = \"proto2\";"));
            for (ty, _) in &b.messages {
                let short = ty.strip_prefix("hpb.").unwrap();
                assert!(b.proto.contains(&format!("message {short} {{")), "{ty}");
            }
        }
        let m4 = &a[1].messages[3].1;
        assert!(m4.len() > 1_500_000 && m4.len() < 1_700_000);
        assert_ne!(suite(8)[0].messages, a[0].messages);
    }

    #[test]
    fn structures_parse_and_malformed_ones_are_refused() {
        let m = parse("i(s*y)*(b)").unwrap();
        assert_eq!(m.len(), 3);
        assert!(m[2].repeated);
        let Kind::Message(sub) = &m[1].kind else {
            panic!("a sub-message")
        };
        assert_eq!(
            sub[1],
            FieldShape {
                kind: Kind::Scalar("bytes"),
                repeated: true
            }
        );
        for bad in ["(i", "i)", "q", "i*", "(*)"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        for b in suite_data().benches {
            assert_eq!(b.messages.len(), MESSAGES_PER_BENCH, "{}", b.name);
            for code in &b.messages {
                assert!(parse(code).is_some(), "{}: {code}", b.name);
            }
        }
    }

    /// Where the real bench's `benchmark.inc` is known, the generated ten messages carry about
    /// as many bytes as its literals (Bench2's separately generated M4 and M10 aside).
    #[test]
    fn bench_sizes_follow_the_real_benches() {
        for (d, b) in suite_data().benches.iter().zip(suite(2024)) {
            let Some(inc) = d.inc_chars else { continue };
            let bytes: usize = b
                .messages
                .iter()
                .enumerate()
                .filter(|(m, _)| b.name != "bench1" || !BENCH2_LARGE.iter().any(|(i, _)| i == m))
                .map(|(_, (_, w))| w.len())
                .sum();
            let ratio = bytes as f64 / inc as f64;
            assert!(
                (0.5..1.5).contains(&ratio),
                "{}: {bytes} B vs {inc}",
                b.name
            );
        }
    }
}
