//! Decodes and encodes one of the Optimus Prime messages through engine v2's records in a
//! loop — protobuf, JSON, or the Thrift version of the message in either protocol: a fixed
//! workload for instruction counts (`valgrind --tool=callgrind`) and profiles.
//!
//! ```sh
//! cargo build --release -p optimus-core --example records_loop
//! valgrind --tool=callgrind target/release/examples/records_loop flat encode 10000
//! valgrind --tool=callgrind target/release/examples/records_loop mixed thrift-compact-decode 10000
//! ```

use std::hint::black_box;

use optimus_core::binary::DecodeOptions;
use optimus_core::thrift::{self, Protocol};
use optimus_core::{engine, Arena};
use optimus_schema::SchemaSet;

const PROTO: &str = include_str!("../../../testdata/peers.proto");
const THRIFT: &str = include_str!("../../../testdata/thrift/peers.thrift");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (workload, op, n) = match &args[1..] {
        [w, o, n] => (w.as_str(), o.as_str(), n.parse::<u64>()?),
        _ => {
            return Err(
                "usage: records_loop flat|mixed|nested encode|decode|json-encode|json-decode|\\
                 thrift-{binary,compact}-{encode,decode,to-compact}|convert-to-thrift COUNT"
                    .into(),
            )
        }
    };
    let (type_name, bytes, tbin): (&str, &[u8], &[u8]) = match workload {
        "flat" => (
            "bench.Flat",
            include_bytes!("../../../testdata/flat.bin"),
            include_bytes!("../../../testdata/thrift/flat.tbin"),
        ),
        "mixed" => (
            "bench.Mixed",
            include_bytes!("../../../testdata/mixed.bin"),
            include_bytes!("../../../testdata/thrift/mixed.tbin"),
        ),
        "nested" => (
            "bench.Nested",
            include_bytes!("../../../testdata/nested.bin"),
            include_bytes!("../../../testdata/thrift/nested.tbin"),
        ),
        other => return Err(format!("no workload {other}").into()),
    };
    if let Some(thrift_op) = op.strip_prefix("thrift-") {
        return thrift_loop(workload, thrift_op, tbin, n);
    }
    if op == "convert-to-thrift" {
        return convert_loop(workload, type_name, bytes, n);
    }
    let schema = SchemaSet::from_source(PROTO)?;
    let id = schema.message_by_name(type_name).ok_or("no such type")?;
    let opts = DecodeOptions::default();
    let held = Arena::new();
    let record = engine::decode(&schema, id, bytes, &held, &opts)?;
    let mut arena = Arena::new();
    let mut encoder = engine::Encoder::new();
    let json_opts = optimus_core::json::JsonOptions::default();
    let mut text = String::new();
    engine::encode_json(record, &json_opts, &mut text)?;
    let json = text.clone();
    let start = std::time::Instant::now();
    for _ in 0..n {
        match op {
            "encode" => {
                black_box(encoder.encode(black_box(record)));
            }
            "decode" => {
                arena.reset();
                black_box(engine::decode(
                    &schema,
                    id,
                    black_box(bytes),
                    &arena,
                    &opts,
                )?);
            }
            "json-encode" => {
                text.clear();
                engine::encode_json(black_box(record), &json_opts, &mut text)?;
                black_box(&text);
            }
            "json-decode" => {
                arena.reset();
                black_box(engine::decode_json(
                    &schema,
                    id,
                    black_box(&json),
                    &arena,
                    &json_opts,
                )?);
            }
            other => return Err(format!("no operation {other}").into()),
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!("{workload} {op}: {ns:.1} ns/message over {n}");
    Ok(())
}

/// The Thrift operations: `binary-encode`, `compact-decode`, `binary-to-compact` (the direct
/// transcoder), ...
fn thrift_loop(
    workload: &str,
    op: &str,
    tbin: &[u8],
    n: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let schema = SchemaSet::from_thrift_sources(&[("peers.thrift", THRIFT)])?;
    let name = match workload {
        "flat" => "Flat",
        "mixed" => "Mixed",
        _ => "Nested",
    };
    let id = schema.thrift_struct_by_name(name).ok_or("no such struct")?;
    let opts = DecodeOptions::default();
    let (protocol, action) = match op.split_once('-') {
        Some(("binary", a)) => (Protocol::Binary, a),
        Some(("compact", a)) => (Protocol::Compact, a),
        _ => return Err(format!("no operation thrift-{op}").into()),
    };
    let held = Arena::new();
    let record = thrift::decode(&schema, id, tbin, &held, Protocol::Binary, &opts)?;
    let mut input = Vec::new();
    thrift::encode(record, protocol, &mut input)?;
    let mut arena = Arena::new();
    let mut out = Vec::with_capacity(input.len());
    let start = std::time::Instant::now();
    for _ in 0..n {
        match action {
            "encode" => {
                out.clear();
                thrift::encode(black_box(record), protocol, &mut out)?;
                black_box(&out);
            }
            "decode" => {
                arena.reset();
                black_box(thrift::decode(
                    &schema,
                    id,
                    black_box(&input),
                    &arena,
                    protocol,
                    &opts,
                )?);
            }
            "to-compact" => {
                out.clear();
                thrift::transcode(
                    &schema,
                    id,
                    black_box(&input),
                    protocol,
                    Protocol::Compact,
                    &opts,
                    &mut out,
                )?;
                black_box(&out);
            }
            other => return Err(format!("no operation thrift-{other}").into()),
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!("{workload} thrift-{op}: {ns:.1} ns/message over {n}");
    Ok(())
}

/// `convert-to-thrift`: the protobuf record converted to the Thrift struct
/// (`testdata/thrift/*.map.toml`) in an arena reset per message; no decode, no encode.
fn convert_loop(
    workload: &str,
    type_name: &str,
    bytes: &[u8],
    n: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    use optimus_core::convert::{Plan, Program};
    let proto = SchemaSet::from_source(PROTO)?;
    let thrift_schema = SchemaSet::from_thrift_sources(&[("peers.thrift", THRIFT)])?;
    let map = match workload {
        "flat" => include_str!("../../../testdata/thrift/flat.map.toml"),
        "mixed" => include_str!("../../../testdata/thrift/mixed.map.toml"),
        _ => include_str!("../../../testdata/thrift/nested.map.toml"),
    };
    let from = proto.message_by_name(type_name).ok_or("no such type")?;
    let to = thrift_schema
        .thrift_struct_by_name(type_name.trim_start_matches("bench."))
        .ok_or("no such struct")?;
    let plan = Plan::compile(
        &proto,
        from,
        &thrift_schema,
        to,
        &Program::from_map_toml("map", map)?,
    )?;
    let held = Arena::new();
    let record = engine::decode(&proto, from, bytes, &held, &DecodeOptions::default())?;
    let mut arena = Arena::new();
    let start = std::time::Instant::now();
    for _ in 0..n {
        arena.reset();
        black_box(plan.apply(black_box(record), &arena)?);
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!("{workload} convert-to-thrift: {ns:.1} ns/message over {n}");
    Ok(())
}
