//! A HyperProtoBench-like message population for the RPCAcc experiments, as `.proto` source
//! and serialized messages for the engine to trace.
//!
//! RPCAcc evaluates on Google's HyperProtoBench: six benches of ten messages each, messages
//! "with different average field sizes", nesting "up to a dozen levels", and in Bench2 two
//! large flat messages (M4 1.6 MB, M10 0.6 MB). The real messages are set field by field in
//! each bench's generated `benchmark.inc`, mostly string literals; `data/hyperprotobench.json`
//! records what is taken from them (the file sizes, hence the benches' bytes per message, and
//! the string lengths seen) and each bench's shape. This module generates, from a seeded
//! `ChaCha8Rng`, a `.proto` per bench and ten messages of that shape (same seed, same bytes),
//! string lengths drawn so each bench's messages total about its file's bytes. The messages
//! are plain protobuf wire bytes; the engine decodes and re-encodes them to produce the traces.

use std::fmt::Write as _;

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::Deserialize;

use super::MessageSet;

/// Messages per bench (RPCAcc §IV-B: "six workloads, each containing 10 messages").
pub const MESSAGES_PER_BENCH: usize = 10;

/// Shape of one bench's messages.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Shape {
    /// Maximum nesting depth.
    max_depth: u32,
    /// Fields per (sub-)message, inclusive range.
    fields: (u32, u32),
    /// Percent of fields that are strings/bytes.
    pct_bytes: u32,
    /// Percent of fields that are sub-messages (while depth allows).
    pct_sub: u32,
    /// log2 of the string length range, inclusive.
    log_len: (u32, u32),
}

/// What `data/hyperprotobench.json` records of one real bench.
#[derive(Clone, Debug, Deserialize)]
struct BenchData {
    name: String,
    /// Characters of the bench's `benchmark.inc` (mostly the ten messages' string literals),
    /// where the file is available (checked against the generated messages by a test).
    #[cfg_attr(not(test), allow(dead_code))]
    inc_chars: Option<u64>,
    shape: Shape,
}

#[derive(Deserialize)]
struct SuiteData {
    benches: Vec<BenchData>,
}

/// The per-bench facts and shapes, from google/HyperProtoBench (see the file's `source`).
const HPB_JSON: &str = include_str!("../../data/hyperprotobench.json");

fn bench_data() -> Vec<BenchData> {
    let d: SuiteData = serde_json::from_str(HPB_JSON).expect("data/hyperprotobench.json parses");
    d.benches
}

/// Sizes of Bench2's large flat messages M4 and M10 (RPCAcc §II-C).
pub const BENCH2_LARGE: [(usize, u32); 2] = [(3, 1_600_000), (9, 600_000)];

/// Package of every generated `.proto`.
pub const PACKAGE: &str = "hpb";

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

impl Gen {
    fn below(&mut self, n: u32) -> u32 {
        (self.rng.next_u64() % u64::from(n.max(1))) as u32
    }

    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + self.below(hi - lo + 1)
    }

    /// Declares a new message type with `decls` (`type name = number`).
    fn declare(&mut self, decls: &[(String, u32)]) -> String {
        let name = format!("M{}", self.types);
        self.types += 1;
        let _ = writeln!(self.proto, "message {name} {{");
        for (ty, number) in decls {
            let _ = writeln!(self.proto, "  {ty} f{number} = {number};");
        }
        let _ = writeln!(self.proto, "}}");
        name
    }

    /// A random message of shape `s` at `depth`: its type name and fields.
    fn message(&mut self, s: &Shape, depth: u32) -> (String, Vec<(u32, Val)>) {
        let n = self.range(s.fields.0, s.fields.1);
        let mut decls = Vec::new();
        let mut fields = Vec::new();
        for number in 1..=n {
            let roll = self.below(100);
            let (ty, v) = if roll < s.pct_sub && depth + 1 < s.max_depth {
                let (sub_ty, sub) = self.message(s, depth + 1);
                (sub_ty, Val::Message(sub))
            } else if roll < s.pct_sub + s.pct_bytes {
                let len = 1u32 << self.range(s.log_len.0, s.log_len.1);
                ("bytes".to_string(), Val::Bytes(len + self.below(len)))
            } else {
                match self.below(4) {
                    // Non-zero values: proto3 does not serialize zeros.
                    0 => ("fixed64".to_string(), Val::Fixed64(self.rng.next_u64() | 1)),
                    1 => ("fixed32".to_string(), Val::Fixed32(self.rng.next_u32() | 1)),
                    _ => {
                        let shift = self.below(64);
                        (
                            "uint64".to_string(),
                            Val::Varint((self.rng.next_u64() >> shift).max(1)),
                        )
                    }
                }
            };
            decls.push((ty, number));
            fields.push((number, v));
        }
        (self.declare(&decls), fields)
    }

    fn large_flat(&mut self, total: u32) -> (String, Vec<(u32, Val)>) {
        // A few large bytes fields plus a handful of scalars.
        let parts = 4u32;
        let mut decls = Vec::new();
        let mut fields = Vec::new();
        for number in 1..=parts + 4 {
            if number <= parts {
                decls.push(("bytes".to_string(), number));
                fields.push((number, Val::Bytes(total / parts)));
            } else {
                decls.push(("uint64".to_string(), number));
                fields.push((number, Val::Varint(300)));
            }
        }
        (self.declare(&decls), fields)
    }
}

/// Generates the six benches from `seed`.
pub fn suite(seed: u64) -> Vec<MessageSet> {
    bench_data()
        .iter()
        .enumerate()
        .map(|(b, d)| {
            let s = &d.shape;
            let mut g = Gen {
                rng: ChaCha8Rng::seed_from_u64(seed ^ (b as u64).wrapping_mul(0x9e37_79b9)),
                proto: format!("syntax = \"proto3\";\npackage {PACKAGE};\n"),
                types: 0,
            };
            let mut messages = Vec::new();
            let mut avg = Vec::new();
            for m in 0..MESSAGES_PER_BENCH {
                let (ty, fields) = match BENCH2_LARGE.iter().find(|(i, _)| b == 1 && *i == m) {
                    Some((_, size)) => g.large_flat(*size),
                    None => g.message(s, 0),
                };
                let mut bytes = Vec::new();
                wire(&fields, &mut bytes);
                let (n, pb) = payload(&fields);
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
            assert!(b.proto.starts_with("syntax = \"proto3\";"));
            for (ty, _) in &b.messages {
                let short = ty.strip_prefix("hpb.").unwrap();
                assert!(b.proto.contains(&format!("message {short} {{")), "{ty}");
            }
        }
        let m4 = &a[1].messages[3].1;
        assert!(m4.len() > 1_500_000 && m4.len() < 1_700_000);
        assert_ne!(suite(8)[0].messages, a[0].messages);
    }

    /// Where the real bench's `benchmark.inc` is known, the generated ten messages carry about
    /// as many bytes as its literals (Bench2's separately generated M4 and M10 aside).
    #[test]
    fn bench_sizes_follow_the_real_benches() {
        for (d, b) in bench_data().iter().zip(suite(2024)) {
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
