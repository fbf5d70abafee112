//! Shared test support: the conformance schema, a seeded generator of random messages for
//! any message type, and input mutators.
#![allow(dead_code)]

use optimus_core::{List, Message, Value};
use optimus_schema::{Cardinality, Field, Kind, MessageId, SchemaSet};

/// Google's conformance test messages (proto2 and proto3), every field kind and cardinality.
pub fn conformance_schema() -> SchemaSet {
    SchemaSet::from_proto_files(
        &[
            "../../testdata/conformance/test_messages_proto2.proto",
            "../../testdata/conformance/test_messages_proto3.proto",
        ],
        &["../../testdata/conformance"],
    )
    .expect("conformance protos compile")
}

/// SplitMix64: a small seeded generator so failures reproduce from the seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A random message of type `id`: each field set with some probability, values drawn from
/// edge cases and random bits, sub-messages down to `depth` levels.
pub fn random_message(schema: &SchemaSet, id: MessageId, rng: &mut Rng, depth: u32) -> Message {
    let mut msg = Message::new(schema, id);
    let ty = schema.message(id);
    for (index, field) in ty.fields.iter().enumerate() {
        if !rng.chance(40) {
            continue;
        }
        if field.kind.is_message() && depth == 0 {
            continue;
        }
        let value = match field.cardinality {
            Cardinality::Map => {
                let (kf, vf) = schema.map_entry_fields(field);
                let mut map = optimus_core::Map::new();
                for _ in 0..rng.below(4) {
                    if let Some(k) = random_scalar(schema, kf, rng, depth).into_map_key() {
                        map.insert(k, random_scalar(schema, vf, rng, depth.saturating_sub(1)));
                    }
                }
                Value::Map(map)
            }
            Cardinality::Repeated => {
                let mut list = List::new(field.kind);
                for _ in 0..rng.below(5) {
                    let _ = list.push(random_scalar(schema, field, rng, depth.saturating_sub(1)));
                }
                Value::List(list)
            }
            _ => random_scalar(schema, field, rng, depth.saturating_sub(1)),
        };
        let _ = msg.set(schema, index, value);
    }
    msg
}

fn pick<T: Copy>(rng: &mut Rng, edges: &[T], random: T) -> T {
    if rng.chance(50) {
        edges[rng.below(edges.len())]
    } else {
        random
    }
}

/// One random value of `field`'s kind (cardinality ignored).
pub fn random_scalar(schema: &SchemaSet, field: &Field, rng: &mut Rng, depth: u32) -> Value {
    let bits = rng.next();
    match field.kind {
        Kind::Bool => Value::Bool(bits & 1 == 1),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(pick(
            rng,
            &[0, 1, -1, i32::MIN, i32::MAX, 127, 128],
            bits as i32,
        )),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Value::I64(pick(
            rng,
            &[0, 1, -1, i64::MIN, i64::MAX, 1 << 53],
            bits as i64,
        )),
        Kind::Uint32 | Kind::Fixed32 => Value::U32(pick(rng, &[0, 1, u32::MAX], bits as u32)),
        Kind::Uint64 | Kind::Fixed64 => Value::U64(pick(rng, &[0, 1, u64::MAX], bits)),
        Kind::Float => Value::F32(pick(
            rng,
            &[
                0.0,
                -0.0,
                1.5,
                f32::MAX,
                f32::MIN_POSITIVE,
                f32::INFINITY,
                f32::NEG_INFINITY,
            ],
            f32::from_bits(bits as u32 & 0x7f7f_ffff),
        )),
        Kind::Double => Value::F64(pick(
            rng,
            &[
                0.0,
                -0.0,
                0.1,
                f64::MAX,
                f64::MIN_POSITIVE,
                f64::INFINITY,
                f64::NEG_INFINITY,
            ],
            f64::from_bits(bits & 0x7fef_ffff_ffff_ffff),
        )),
        Kind::Enum => {
            let e = schema.enum_type(field.enum_type.expect("enum field"));
            let declared = e.values[rng.below(e.values.len())].number;
            // NullValue is written as `null` whatever its number: only its one value round-trips.
            let only_declared = e.is_closed || e.full_name == "google.protobuf.NullValue";
            Value::Enum(if only_declared || rng.chance(80) {
                declared
            } else {
                bits as i32
            })
        }
        Kind::String => {
            let words = [
                "",
                "a",
                "héllo",
                "日本語",
                "quote\"back\\slash",
                "\u{1F600}",
                "\n\t\u{1}",
            ];
            let mut s = String::new();
            for _ in 0..rng.below(3) {
                s.push_str(words[rng.below(words.len())]);
            }
            Value::String(s)
        }
        Kind::Bytes => Value::Bytes((0..rng.below(9)).map(|_| rng.next() as u8).collect()),
        Kind::Message | Kind::Group => {
            let id = field.message.expect("message field");
            if schema.message(id).well_known.is_some() {
                // Well-known types have JSON rules on their contents; keep them empty here.
                return Value::Message(Box::new(Message::new(schema, id)));
            }
            Value::Message(Box::new(random_message(schema, id, rng, depth)))
        }
    }
}

/// A corrupted copy of `input`: truncated, bit-flipped, with a length-like byte replaced,
/// bytes inserted or deleted, or a slice duplicated.
pub fn mutate(input: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut v = input.to_vec();
    let rounds = 1 + rng.below(3);
    for _ in 0..rounds {
        let len = v.len();
        match rng.below(6) {
            0 => v.truncate(rng.below(len + 1)),
            1 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            2 if len > 0 => {
                let i = rng.below(len);
                v[i] = [0x00, 0x01, 0x7f, 0x80, 0xff, b'"', b'{', b'}', b'[', b':'][rng.below(10)];
            }
            3 => {
                let i = rng.below(len + 1);
                v.insert(i, rng.next() as u8);
            }
            4 if len > 0 => {
                v.remove(rng.below(len));
            }
            5 if len > 0 => {
                let a = rng.below(len);
                let b = a + rng.below(len - a).min(16);
                let slice = v[a..b].to_vec();
                let at = rng.below(v.len() + 1);
                v.splice(at..at, slice);
            }
            _ => {}
        }
    }
    v
}
