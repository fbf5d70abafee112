//! A HyperProtoBench-like message population for the RPCAcc experiments.
//!
//! RPCAcc evaluates on Google's HyperProtoBench: six benches of ten messages each, messages
//! "with different average field sizes", nesting "up to a dozen levels", and in Bench2 two
//! large flat messages (M4 1.6 MB, M10 0.6 MB). The benchmark's .proto files are not
//! available here, so this module generates a population with those stated properties from a
//! seeded `ChaCha8Rng`: same seed, same messages. Field mixes per bench are documented in
//! `BENCH_SHAPES` and in docs/simulator.md.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use super::proto::{FieldDef, FieldValue, Instance, MessageDef, ProtoFile, Ty, Value};

/// Messages per bench (RPCAcc §IV-B: "six workloads, each containing 10 messages").
pub const MESSAGES_PER_BENCH: usize = 10;

/// Shape of one bench's messages.
#[derive(Clone, Copy, Debug)]
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

/// Bench shapes: small-field, nesting-heavy benches and two with larger fields; Bench2
/// (index 1) additionally holds the two large flat messages M4 and M10.
const BENCH_SHAPES: [Shape; 6] = [
    Shape { max_depth: 4, fields: (4, 12), pct_bytes: 30, pct_sub: 25, log_len: (2, 7) },
    Shape { max_depth: 5, fields: (3, 10), pct_bytes: 25, pct_sub: 30, log_len: (2, 8) },
    Shape { max_depth: 3, fields: (6, 16), pct_bytes: 40, pct_sub: 15, log_len: (3, 10) },
    Shape { max_depth: 6, fields: (3, 8), pct_bytes: 20, pct_sub: 35, log_len: (2, 6) },
    Shape { max_depth: 3, fields: (4, 12), pct_bytes: 45, pct_sub: 20, log_len: (6, 12) },
    Shape { max_depth: 4, fields: (5, 14), pct_bytes: 35, pct_sub: 25, log_len: (3, 9) },
];

/// Sizes of Bench2's large flat messages M4 and M10 (RPCAcc §II-C).
pub const BENCH2_LARGE: [(usize, u32); 2] = [(3, 1_600_000), (9, 600_000)];

/// One bench: its types and its ten messages.
#[derive(Clone, Debug)]
pub struct Bench {
    /// `bench0` … `bench5`.
    pub name: String,
    /// Generated message types.
    pub proto: ProtoFile,
    /// The ten message instances.
    pub messages: Vec<Instance>,
}

struct Gen {
    rng: ChaCha8Rng,
    proto: ProtoFile,
}

impl Gen {
    fn below(&mut self, n: u32) -> u32 {
        (self.rng.next_u64() % u64::from(n.max(1))) as u32
    }

    fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + self.below(hi - lo + 1)
    }

    fn varint_len(v: u64) -> u32 {
        (64 - v.max(1).leading_zeros()).div_ceil(7).max(1)
    }

    fn message(&mut self, s: &Shape, depth: u32) -> Instance {
        let n = self.range(s.fields.0, s.fields.1);
        let ty = self.proto.messages.len();
        self.proto.messages.push(MessageDef { name: format!("M{ty}"), fields: Vec::new() });
        let mut fields = Vec::new();
        for k in 0..n {
            let roll = self.below(100);
            let number = k + 1;
            let tag_bytes = Self::varint_len(u64::from(number) << 3);
            let (t, value) = if roll < s.pct_sub && depth + 1 < s.max_depth {
                let sub = self.message(s, depth + 1);
                let len = sub.wire_bytes();
                (Ty::Message(sub.ty), Value::Message { inst: Box::new(sub), len_bytes: Self::varint_len(len) })
            } else if roll < s.pct_sub + s.pct_bytes {
                let len = 1u32 << self.range(s.log_len.0, s.log_len.1);
                let len = len + self.below(len);
                (Ty::Bytes, Value::Bytes { len, len_bytes: Self::varint_len(len.into()) })
            } else {
                let (t, wire) = match self.below(4) {
                    0 => (Ty::Fixed64, 8),
                    1 => (Ty::Fixed32, 4),
                    _ => {
                        let v = self.rng.next_u64() >> self.below(64);
                        (Ty::Varint64, Self::varint_len(v))
                    }
                };
                (t, Value::Scalar { raw: 0, wire_bytes: wire })
            };
            self.proto.messages[ty].fields.push(FieldDef { name: format!("f{number}"), number, ty: t, repeated: false });
            fields.push(FieldValue { field: k as usize, tag_bytes, value });
        }
        Instance { ty, fields }
    }

    fn large_flat(&mut self, total: u32) -> Instance {
        // A few large bytes fields plus a handful of scalars.
        let ty = self.proto.messages.len();
        let mut def = MessageDef { name: format!("M{ty}"), fields: Vec::new() };
        let mut fields = Vec::new();
        let parts = 4u32;
        for k in 0..parts + 4 {
            let number = k + 1;
            let (t, value) = if k < parts {
                let len = total / parts;
                (Ty::Bytes, Value::Bytes { len, len_bytes: Self::varint_len(len.into()) })
            } else {
                (Ty::Varint64, Value::Scalar { raw: 0, wire_bytes: 2 })
            };
            def.fields.push(FieldDef { name: format!("f{number}"), number, ty: t, repeated: false });
            fields.push(FieldValue { field: k as usize, tag_bytes: 1, value });
        }
        self.proto.messages.push(def);
        Instance { ty, fields }
    }
}

/// Generates the six benches from `seed`.
pub fn suite(seed: u64) -> Vec<Bench> {
    BENCH_SHAPES
        .iter()
        .enumerate()
        .map(|(b, s)| {
            let mut g = Gen { rng: ChaCha8Rng::seed_from_u64(seed ^ (b as u64).wrapping_mul(0x9e37_79b9)), proto: ProtoFile { messages: Vec::new() } };
            let messages = (0..MESSAGES_PER_BENCH)
                .map(|m| match BENCH2_LARGE.iter().find(|(i, _)| b == 1 && *i == m) {
                    Some((_, size)) => g.large_flat(*size),
                    None => g.message(s, 0),
                })
                .collect();
            Bench { name: format!("bench{b}"), proto: g.proto, messages }
        })
        .collect()
}

/// Mean payload bytes per field of a message (Fig. 5's x axis), over all levels.
pub fn avg_field_bytes(inst: &Instance) -> f64 {
    fn walk(i: &Instance, n: &mut u64, bytes: &mut u64) {
        for f in &i.fields {
            match &f.value {
                Value::Scalar { wire_bytes, .. } => {
                    *n += 1;
                    *bytes += u64::from(*wire_bytes);
                }
                Value::Bytes { len, .. } => {
                    *n += 1;
                    *bytes += u64::from(*len);
                }
                Value::Message { inst, .. } => walk(inst, n, bytes),
            }
        }
    }
    let (mut n, mut bytes) = (0, 0);
    walk(inst, &mut n, &mut bytes);
    bytes as f64 / n.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suite_is_deterministic_and_shaped() {
        let a = suite(7);
        let b = suite(7);
        assert_eq!(a.len(), 6);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.messages, y.messages);
            assert_eq!(x.messages.len(), MESSAGES_PER_BENCH);
        }
        let m4 = &a[1].messages[3];
        assert!(m4.wire_bytes() > 1_500_000 && m4.depth() == 1);
        assert!(a.iter().flat_map(|b| &b.messages).any(|m| m.depth() >= 4));
    }
}
