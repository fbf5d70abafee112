//! Property test: any schema, any message: `decode(encode(m)) == m`.
//!
//! Each case writes a random pair of `.proto` files (one proto2, one proto3, one importing
//! the other) with every scalar kind, open and closed enums, nested and recursive messages,
//! repeated fields packed and unpacked, maps with every key kind, oneofs, proto3 `optional`,
//! proto2 `required` and groups, field numbers up to 2^29-1 and `json_name`s; compiles them;
//! and fills random messages of each type, with unknown fields and NaN, ±0.0 and ±∞ among
//! the floats. Every message then goes through both codecs and must come back equal:
//!
//! - binary: the reflective codec (`binary::decode(binary::encode(m))`), engine v2
//!   (`engine::decode` and `decode_copied` of those bytes, read back with
//!   `Record::to_message`), and a record built with `Record::from_message`; all encode to the
//!   same bytes;
//! - JSON: `json::decode(json::encode(m))` and `engine::decode_json(engine::encode_json(r))`
//!   give `m` without its unknown fields (JSON has no form for them), both writers write the
//!   same text, and bytes → record → JSON → record → bytes gives the same message again.
//!
//! Messages are compared field by field, floats by their bits (so -0.0 is not 0.0 and NaN
//! equals itself); only across JSON may a NaN come back with another payload. Because
//! `Message::set` leaves a field without presence unset at its zero value, a generated
//! message is already in the form a decoder produces.

mod common;

use std::fmt::Write as _;

use common::{random_scalar, Rng};
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::json::{self, JsonOptions};
use optimus_core::{engine, Arena, List, Map, Message, Record, Value};
use optimus_schema::{Cardinality, Field, Kind, MessageId, SchemaSet, Syntax};
use proptest::prelude::*;

// ------------------------------------------------------------------ random schemas

/// The scalar kinds as `.proto` spells them, and which of them may be map keys.
const SCALARS: [&str; 15] = [
    "double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32",
    "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes",
];
const MAP_KEYS: [&str; 12] = [
    "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32",
    "sfixed64", "bool", "string",
];
/// Field numbers worth having: tag sizes 1 to 5 bytes and the highest number.
const NUMBER_EDGES: [u32; 8] = [1, 15, 16, 2047, 2048, 262_143, 262_144, 536_870_911];

/// The declarations of one `.proto` file of a random schema.
struct FilePlan {
    proto3: bool,
    package: &'static str,
    /// Message names relative to the package (`M0`, `M0.N1`), in declaration order.
    messages: Vec<String>,
    /// Top-level enum names with their value numbers.
    enums: Vec<(String, Vec<i32>)>,
}

/// A random pair of files, `p2.proto` (proto2) and `p3.proto` (proto3), one importing the
/// other, as `(import name, source)` pairs in the order `SchemaSet::from_sources` takes.
fn random_schema_sources(rng: &mut Rng) -> Vec<(String, String)> {
    let p3_imports_p2 = rng.chance(50);
    let mut plan = |proto3: bool, package: &'static str, prefix: char| {
        let mut messages = Vec::new();
        for i in 0..1 + rng.below(3) {
            let top = format!("{prefix}{i}");
            messages.push(top.clone());
            if rng.chance(40) {
                messages.push(format!("{top}.N{i}"));
            }
        }
        let mut enums = Vec::new();
        for i in 0..rng.below(3) {
            let mut values = vec![if proto3 { 0 } else { rng.below(5) as i32 - 2 }];
            for _ in 0..rng.below(4) {
                let v = match rng.below(4) {
                    0 => i32::MIN,
                    1 => i32::MAX,
                    _ => rng.below(200) as i32 - 100,
                };
                if !values.contains(&v) {
                    values.push(v);
                }
            }
            enums.push((format!("{prefix}E{i}"), values));
        }
        FilePlan {
            proto3,
            package,
            messages,
            enums,
        }
    };
    let p2 = plan(false, "r2", 'A');
    let p3 = plan(true, "r3", 'B');
    let (first, second) = if p3_imports_p2 {
        (&p2, &p3)
    } else {
        (&p3, &p2)
    };
    // The importing file may name the types of both; a proto3 message may not use a closed
    // (proto2) enum.
    let file_name = |f: &FilePlan| if f.proto3 { "p3.proto" } else { "p2.proto" };
    let first_text = render_file(rng, first, &[first], None);
    let second_text = render_file(rng, second, &[second, first], Some(file_name(first)));
    vec![
        (file_name(first).to_string(), first_text),
        (file_name(second).to_string(), second_text),
    ]
}

/// The `.proto` text of `file`, whose fields may name the types of `visible`.
fn render_file(
    rng: &mut Rng,
    file: &FilePlan,
    visible: &[&FilePlan],
    import: Option<&str>,
) -> String {
    let mut messages = Vec::new();
    let mut enums = Vec::new();
    for f in visible {
        messages.extend(f.messages.iter().map(|m| format!(".{}.{m}", f.package)));
        if f.proto3 || !file.proto3 {
            enums.extend(f.enums.iter().map(|(e, _)| format!(".{}.{e}", f.package)));
        }
    }
    let mut out = String::new();
    let syntax = if file.proto3 { "proto3" } else { "proto2" };
    writeln!(out, "syntax = \"{syntax}\";\npackage {};", file.package).unwrap();
    if let Some(import) = import {
        writeln!(out, "import \"{import}\";").unwrap();
    }
    for (name, values) in &file.enums {
        writeln!(out, "enum {name} {{").unwrap();
        for (i, v) in values.iter().enumerate() {
            writeln!(out, "  {name}_V{i} = {v};").unwrap();
        }
        writeln!(out, "}}").unwrap();
    }
    let types = Types {
        messages: &messages,
        enums: &enums,
        proto3: file.proto3,
    };
    // Nested messages (`M0.N0`) are declared inside their parent, which comes just before.
    let mut i = 0;
    while i < file.messages.len() {
        let name = &file.messages[i];
        let nested = file
            .messages
            .get(i + 1)
            .filter(|n| n.starts_with(&format!("{name}.")));
        writeln!(out, "message {name} {{").unwrap();
        out.push_str(&render_fields(rng, &types, "  "));
        if let Some(n) = nested {
            let short = n.rsplit('.').next().unwrap();
            writeln!(out, "  message {short} {{").unwrap();
            out.push_str(&render_fields(rng, &types, "    "));
            writeln!(out, "  }}").unwrap();
            i += 1;
        }
        writeln!(out, "}}").unwrap();
        i += 1;
    }
    out
}

struct Types<'a> {
    messages: &'a [String],
    enums: &'a [String],
    proto3: bool,
}

impl Types<'_> {
    /// A random value type: a scalar, an enum or a message.
    fn value(&self, rng: &mut Rng) -> String {
        match rng.below(10) {
            0 | 1 if !self.enums.is_empty() => self.enums[rng.below(self.enums.len())].clone(),
            2 | 3 => self.messages[rng.below(self.messages.len())].clone(),
            _ => SCALARS[rng.below(SCALARS.len())].to_string(),
        }
    }
}

/// The fields of one message, with distinct numbers and names.
fn render_fields(rng: &mut Rng, types: &Types<'_>, indent: &str) -> String {
    let mut numbers = Vec::new();
    let mut number = |rng: &mut Rng| loop {
        let n = match rng.below(4) {
            0 => NUMBER_EDGES[rng.below(NUMBER_EDGES.len())],
            1 => 1 + rng.below(536_870_911) as u32,
            _ => 1 + rng.below(40) as u32,
        };
        if !(19_000..=19_999).contains(&n) && !numbers.contains(&n) {
            numbers.push(n);
            return n;
        }
    };
    let mut out = String::new();
    for i in 0..rng.below(12) {
        let n = number(rng);
        let name = format!("f{i}_x{n}");
        // A json_name now and then (unique: it carries the field's index).
        let json = if rng.chance(10) {
            format!(" json_name = \"j{i}X\"")
        } else {
            String::new()
        };
        let with_json = |opts: &str| match (opts.is_empty(), json.is_empty()) {
            (true, true) => String::new(),
            (true, false) => format!(" [{}]", json.trim()),
            (false, true) => format!(" [{opts}]"),
            (false, false) => format!(" [{opts},{json}]"),
        };
        let scalarish = |t: &str| SCALARS.contains(&t) && t != "string" && t != "bytes";
        match rng.below(12) {
            // map<K, V>
            0 | 1 => {
                let k = MAP_KEYS[rng.below(MAP_KEYS.len())];
                let v = types.value(rng);
                writeln!(out, "{indent}map<{k}, {v}> {name} = {n}{};", with_json("")).unwrap();
            }
            // repeated, packed or not where packable
            2 | 3 => {
                let t = types.value(rng);
                let packable = scalarish(&t) || types.enums.contains(&t);
                let opts = match (packable, rng.below(3)) {
                    (true, 0) => "packed = true",
                    (true, 1) => "packed = false",
                    _ => "",
                };
                writeln!(out, "{indent}repeated {t} {name} = {n}{};", with_json(opts)).unwrap();
            }
            // a oneof of two or three members
            4 => {
                writeln!(out, "{indent}oneof o{i} {{").unwrap();
                for j in 0..2 + rng.below(2) {
                    let t = types.value(rng);
                    let m = number(rng);
                    writeln!(out, "{indent}  {t} f{i}_o{j}x{m} = {m};").unwrap();
                }
                writeln!(out, "{indent}}}").unwrap();
            }
            // a group (proto2 only)
            5 if !types.proto3 => {
                let label = if rng.chance(50) {
                    "optional"
                } else {
                    "repeated"
                };
                writeln!(out, "{indent}{label} group G{i}x{n} = {n} {{").unwrap();
                for j in 0..rng.below(3) {
                    let t = SCALARS[rng.below(SCALARS.len())];
                    writeln!(out, "{indent}  optional {t} g{j} = {};", j + 1).unwrap();
                }
                writeln!(out, "{indent}}}").unwrap();
            }
            // required (proto2; scalars and enums only, so every message can be complete)
            6 if !types.proto3 => {
                let mut t = types.value(rng);
                if types.messages.contains(&t) {
                    t = "int32".into();
                }
                writeln!(out, "{indent}required {t} {name} = {n}{};", with_json("")).unwrap();
            }
            // singular: proto3 implicit or `optional`, proto2 `optional`
            _ => {
                let t = types.value(rng);
                let label = if !types.proto3 || rng.chance(40) {
                    "optional "
                } else {
                    ""
                };
                writeln!(out, "{indent}{label}{t} {name} = {n}{};", with_json("")).unwrap();
            }
        }
    }
    out
}

// ------------------------------------------------------------------ random messages

/// A random message of type `id` down to `depth` levels of sub-messages: required fields
/// always set, others with some probability, and now and then an unknown field.
fn random_message(schema: &SchemaSet, id: MessageId, rng: &mut Rng, depth: u32) -> Message {
    let mut msg = Message::new(schema, id);
    let ty = schema.message(id);
    for (index, field) in ty.fields.iter().enumerate() {
        if !field.is_required && !rng.chance(50) {
            continue;
        }
        if field.kind.is_message() && depth == 0 {
            continue;
        }
        let value = match field.cardinality {
            Cardinality::Map => {
                let (kf, vf) = schema.map_entry_fields(field);
                let mut map = Map::new();
                for _ in 0..rng.below(4) {
                    if let Some(k) = random_value(schema, kf, rng, depth).into_map_key() {
                        map.insert(k, random_value(schema, vf, rng, depth - 1));
                    }
                }
                Value::Map(map)
            }
            Cardinality::Repeated => {
                let mut list = List::new(field.kind);
                for _ in 0..rng.below(5) {
                    list.push(random_value(schema, field, rng, depth.saturating_sub(1)))
                        .expect("a value of the list's kind");
                }
                Value::List(list)
            }
            _ => random_value(schema, field, rng, depth.saturating_sub(1)),
        };
        msg.set(schema, index, value)
            .expect("a value of the field's kind");
    }
    if rng.chance(20) {
        msg.push_unknown(&random_unknown_field(ty, rng));
    }
    msg
}

/// One value of `field`'s kind: floats include NaN payloads and ±0.0, messages come from
/// [`random_message`] (so their required fields are set).
fn random_value(schema: &SchemaSet, field: &Field, rng: &mut Rng, depth: u32) -> Value {
    match field.kind {
        Kind::Message | Kind::Group => Value::Message(Box::new(random_message(
            schema,
            field.message.expect("message field"),
            rng,
            depth,
        ))),
        Kind::Float if rng.chance(15) => {
            let bits = [0x7fc0_0000, 0xffc0_0000, 0x7f80_0001, 0x8000_0000, 1][rng.below(5)];
            Value::F32(f32::from_bits(bits))
        }
        Kind::Double if rng.chance(15) => {
            let bits = [
                0x7ff8_0000_0000_0000,
                0xfff8_0000_0000_0001,
                0x8000_0000_0000_0000,
                1,
            ][rng.below(4)];
            Value::F64(f64::from_bits(bits))
        }
        _ => random_scalar(schema, field, rng, depth),
    }
}

/// The wire bytes of one field whose number `ty` does not declare: a varint, a fixed32, a
/// fixed64 or a length-delimited value.
fn random_unknown_field(ty: &optimus_schema::MessageType, rng: &mut Rng) -> Vec<u8> {
    let number = loop {
        let n = 1 + rng.below(3000) as u32;
        if ty.field_index_by_number(n).is_none() && !(19_000..=19_999).contains(&n) {
            break n;
        }
    };
    let wire = [0u64, 5, 1, 2][rng.below(4)];
    let mut out = Vec::new();
    put_varint(&mut out, u64::from(number) << 3 | wire);
    match wire {
        0 => put_varint(&mut out, rng.next() >> rng.below(64)),
        5 => out.extend_from_slice(&(rng.next() as u32).to_le_bytes()),
        1 => out.extend_from_slice(&rng.next().to_le_bytes()),
        _ => {
            let len = rng.below(6);
            put_varint(&mut out, len as u64);
            out.extend((0..len).map(|_| rng.next() as u8));
        }
    }
    out
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

// ------------------------------------------------------------------ comparison

/// How two messages must agree.
#[derive(Clone, Copy, PartialEq)]
enum Exactness {
    /// Every field, float bit and unknown byte.
    Exact,
    /// After a JSON trip: a NaN may come back with another payload.
    Json,
}

/// Where `a` and `b` differ, as a path and the two values, or `Ok`.
fn same(schema: &SchemaSet, a: &Message, b: &Message, how: Exactness) -> Result<(), String> {
    let ty = schema.message(a.type_id());
    if a.type_id() != b.type_id() {
        return Err(format!("{}: types differ", ty.full_name));
    }
    let (fa, fb): (Vec<usize>, Vec<usize>) = (a.set_fields().collect(), b.set_fields().collect());
    if fa != fb {
        let names = |f: &[usize]| {
            f.iter()
                .map(|&i| ty.fields[i].name.as_str())
                .collect::<Vec<_>>()
        };
        return Err(format!(
            "{}: set fields {:?} vs {:?}",
            ty.full_name,
            names(&fa),
            names(&fb)
        ));
    }
    for i in fa {
        let at = |e: String| format!("{}.{}{e}", ty.full_name, ty.fields[i].name);
        same_value(schema, a.get(i).unwrap(), b.get(i).unwrap(), how).map_err(at)?;
    }
    if a.unknown_fields() != b.unknown_fields() {
        return Err(format!(
            "{}: unknown fields {:02x?} vs {:02x?}",
            ty.full_name,
            a.unknown_fields(),
            b.unknown_fields()
        ));
    }
    Ok(())
}

fn same_value(schema: &SchemaSet, a: &Value, b: &Value, how: Exactness) -> Result<(), String> {
    let differ = || Err(format!(": {a:?} vs {b:?}"));
    match (a, b) {
        (Value::F32(x), Value::F32(y)) => {
            let nan_ok = how == Exactness::Json && x.is_nan() && y.is_nan();
            if x.to_bits() == y.to_bits() || nan_ok {
                Ok(())
            } else {
                Err(format!(
                    ": {x:?} ({:#010x}) vs {y:?} ({:#010x})",
                    x.to_bits(),
                    y.to_bits()
                ))
            }
        }
        (Value::F64(x), Value::F64(y)) => {
            let nan_ok = how == Exactness::Json && x.is_nan() && y.is_nan();
            if x.to_bits() == y.to_bits() || nan_ok {
                Ok(())
            } else {
                Err(format!(
                    ": {x:?} ({:#018x}) vs {y:?} ({:#018x})",
                    x.to_bits(),
                    y.to_bits()
                ))
            }
        }
        (Value::Message(x), Value::Message(y)) => {
            same(schema, x, y, how).map_err(|e| format!(" > {e}"))
        }
        (Value::List(x), Value::List(y)) => {
            if x.len() != y.len() {
                return Err(format!(": {} elements vs {}", x.len(), y.len()));
            }
            for i in 0..x.len() {
                same_value(schema, &x.get(i).unwrap(), &y.get(i).unwrap(), how)
                    .map_err(|e| format!("[{i}]{e}"))?;
            }
            Ok(())
        }
        (Value::Map(x), Value::Map(y)) => {
            if !x.keys().eq(y.keys()) {
                return Err(format!(
                    ": map keys {:?} vs {:?}",
                    x.keys().collect::<Vec<_>>(),
                    y.keys().collect::<Vec<_>>()
                ));
            }
            for ((k, va), vb) in x.iter().zip(y.values()) {
                same_value(schema, va, vb, how).map_err(|e| format!("[{k:?}]{e}"))?;
            }
            Ok(())
        }
        _ if a == b => Ok(()),
        _ => differ(),
    }
}

/// `m` without unknown fields, at every level: what a JSON round trip can give back.
fn without_unknown(schema: &SchemaSet, m: &Message) -> Message {
    let mut out = Message::new(schema, m.type_id());
    for (i, v) in m.set_values() {
        out.set(schema, i, strip_value(schema, v)).unwrap();
    }
    out
}

fn strip_value(schema: &SchemaSet, v: &Value) -> Value {
    match v {
        Value::Message(m) => Value::Message(Box::new(without_unknown(schema, m))),
        Value::List(List::Message(ms)) => Value::List(List::Message(
            ms.iter().map(|m| without_unknown(schema, m)).collect(),
        )),
        Value::Map(map) => Value::Map(
            map.iter()
                .map(|(k, v)| (k.clone(), strip_value(schema, v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

// ------------------------------------------------------------------ the property

/// Every round trip of one message of type `id`; `Err` says which one broke and where.
fn check_round_trips(
    schema: &SchemaSet,
    id: MessageId,
    m: &Message,
    json_opts: &JsonOptions,
) -> Result<(), String> {
    let opts = DecodeOptions::default();
    let fail = |what: &str, e: String| format!("{what}: {e}");

    // Binary, reflective codec.
    let bytes = binary::encode(schema, m);
    if bytes.len() != binary::encoded_len(schema, m) {
        return Err("binary::encoded_len disagrees with binary::encode".into());
    }
    let back = binary::decode(schema, id, &bytes, &opts)
        .map_err(|e| fail("binary::decode", e.to_string()))?;
    same(schema, m, &back, Exactness::Exact).map_err(|e| fail("binary round trip", e))?;

    // Binary, engine v2: viewed and copied decodes, and a record built from the message.
    let arena = Arena::new();
    for (what, rec) in [
        (
            "engine::decode",
            engine::decode(schema, id, &bytes, &arena, &opts),
        ),
        (
            "engine::decode_copied",
            engine::decode_copied(schema, id, &bytes, &arena, &opts),
        ),
        (
            "Record::from_message",
            Ok(Record::from_message(schema, m, &arena)),
        ),
    ] {
        let rec = rec.map_err(|e| fail(what, e.to_string()))?;
        same(schema, m, &rec.to_message(), Exactness::Exact).map_err(|e| fail(what, e))?;
        let mut out = Vec::new();
        engine::encode(rec, &mut out);
        if out != bytes {
            return Err(format!(
                "{what}: engine::encode wrote {out:02x?}, binary::encode {bytes:02x?}"
            ));
        }
        if engine::encoded_len(rec) != bytes.len() {
            return Err(format!("{what}: engine::encoded_len disagrees"));
        }
    }

    // JSON, reflective codec: back to the message less its unknown fields.
    let known = without_unknown(schema, m);
    let text =
        json::encode(schema, m, json_opts).map_err(|e| fail("json::encode", e.to_string()))?;
    let from_json = json::decode(schema, id, &text, json_opts)
        .map_err(|e| fail("json::decode", format!("{e} in {text}")))?;
    same(schema, &known, &from_json, Exactness::Json)
        .map_err(|e| fail("JSON round trip", format!("{e}\n  text: {text}")))?;

    // JSON, engine v2: the same text, read back to the same message; and bytes -> record ->
    // JSON -> record -> bytes.
    let rec = engine::decode(schema, id, &bytes, &arena, &opts).unwrap();
    let mut engine_text = String::new();
    engine::encode_json(rec, json_opts, &mut engine_text)
        .map_err(|e| fail("engine::encode_json", e.to_string()))?;
    if engine_text != text {
        return Err(format!(
            "engine::encode_json wrote\n  {engine_text}\njson::encode wrote\n  {text}"
        ));
    }
    let json_arena = Arena::new();
    let rec2 = engine::decode_json(schema, id, &engine_text, &json_arena, json_opts)
        .map_err(|e| fail("engine::decode_json", format!("{e} in {engine_text}")))?;
    same(schema, &from_json, &rec2.to_message(), Exactness::Exact)
        .map_err(|e| fail("engine::decode_json vs json::decode", e))?;
    let mut bytes2 = Vec::new();
    engine::encode(rec2, &mut bytes2);
    let again = binary::decode(schema, id, &bytes2, &opts)
        .map_err(|e| fail("binary -> JSON -> binary: decode", e.to_string()))?;
    same(schema, &known, &again, Exactness::Json)
        .map_err(|e| fail("binary -> JSON -> binary", e))?;
    Ok(())
}

/// Compiles the schema of `schema_seed` and checks random messages of each of its types.
fn check_schema(schema_seed: u64, message_seed: u64) -> Result<(), String> {
    let mut rng = Rng(schema_seed);
    let sources = random_schema_sources(&mut rng);
    let pairs: Vec<(&str, &str)> = sources
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let show = || {
        sources
            .iter()
            .map(|(n, t)| format!("// {n}\n{t}"))
            .collect::<String>()
    };
    let schema = SchemaSet::from_sources(&pairs)
        .map_err(|e| format!("the random schema does not compile: {e}\n{}", show()))?;
    let mut rng = Rng(message_seed);
    let ids: Vec<MessageId> = schema
        .messages()
        .filter(|(_, ty)| {
            ty.well_known.is_none() && !ty.is_map_entry && ty.full_name.starts_with('r')
        })
        .map(|(id, _)| id)
        .collect();
    assert!(!ids.is_empty(), "every random schema has messages");
    for &id in &ids {
        for _ in 0..4 {
            let depth = rng.below(4) as u32;
            let m = random_message(&schema, id, &mut rng, depth);
            let json_opts = JsonOptions {
                emit_defaults: rng.chance(30),
                proto_names: rng.chance(30),
                ..JsonOptions::default()
            };
            check_round_trips(&schema, id, &m, &json_opts).map_err(|e| {
                format!(
                    "{} (schema seed {schema_seed}, message seed {message_seed}): {e}\n{}",
                    schema.message(id).full_name,
                    show()
                )
            })?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn any_schema_any_message_round_trips(schema_seed in any::<u64>(), message_seed in any::<u64>()) {
        if let Err(e) = check_schema(schema_seed, message_seed) {
            prop_assert!(false, "{}", e);
        }
    }
}

/// The generator covers what it claims: over a few hundred schemas, every kind, both
/// syntaxes, every map key kind, oneofs, groups, required and packed/unpacked fields occur.
#[test]
fn the_random_schemas_cover_every_feature() {
    let mut seen_kinds = std::collections::BTreeSet::new();
    let mut seen_keys = std::collections::BTreeSet::new();
    let (mut oneofs, mut groups, mut required, mut packed, mut unpacked) = (0, 0, 0, 0, 0);
    let (mut open, mut closed, mut optional3, mut implicit, mut recursive) = (0, 0, 0, 0, 0);
    for seed in 0..300 {
        let sources = random_schema_sources(&mut Rng(seed));
        let pairs: Vec<(&str, &str)> = sources
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        let schema = SchemaSet::from_sources(&pairs).expect("random schemas compile");
        for (_, ty) in schema.messages() {
            if !ty.full_name.starts_with('r') {
                continue;
            }
            for f in &ty.fields {
                seen_kinds.insert(format!("{:?}", f.kind));
                if f.is_map() {
                    let (k, _) = schema.map_entry_fields(f);
                    seen_keys.insert(format!("{:?}", k.kind));
                }
                oneofs += usize::from(f.oneof.is_some());
                groups += usize::from(f.kind == Kind::Group);
                required += usize::from(f.is_required);
                if f.cardinality == Cardinality::Repeated && f.kind.is_packable() {
                    if f.is_packed {
                        packed += 1;
                    } else {
                        unpacked += 1;
                    }
                }
                if let Some(e) = f.enum_type {
                    if schema.enum_type(e).is_closed {
                        closed += 1;
                    } else {
                        open += 1;
                    }
                }
                if ty.syntax == Syntax::Proto3 && f.oneof.is_none() {
                    match f.cardinality {
                        Cardinality::Optional if !f.kind.is_message() => optional3 += 1,
                        Cardinality::Singular => implicit += 1,
                        _ => {}
                    }
                }
                if f.message
                    .is_some_and(|m| schema.message(m).full_name == ty.full_name)
                {
                    recursive += 1;
                }
            }
        }
    }
    assert_eq!(seen_kinds.len(), 18, "kinds seen: {seen_kinds:?}");
    assert_eq!(seen_keys.len(), 12, "map key kinds seen: {seen_keys:?}");
    for (what, n) in [
        ("oneof members", oneofs),
        ("groups", groups),
        ("required", required),
        ("packed", packed),
        ("unpacked", unpacked),
        ("open enums", open),
        ("closed enums", closed),
        ("proto3 optional", optional3),
        ("proto3 implicit", implicit),
        ("self-recursive", recursive),
    ] {
        assert!(n > 10, "only {n} {what} fields in 300 schemas");
    }
}
