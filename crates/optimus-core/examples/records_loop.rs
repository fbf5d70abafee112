//! Decodes and encodes one of the Optimus Prime messages through engine v2's records in a
//! loop: a fixed workload for instruction counts (`valgrind --tool=callgrind`) and profiles.
//!
//! ```sh
//! cargo build --release -p optimus-core --example records_loop
//! valgrind --tool=callgrind target/release/examples/records_loop flat encode 10000
//! ```

use std::hint::black_box;

use optimus_core::binary::DecodeOptions;
use optimus_core::{engine, Arena};
use optimus_schema::SchemaSet;

const PROTO: &str = include_str!("../../../testdata/peers.proto");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (workload, op, n) =
        match &args[1..] {
            [w, o, n] => (w.as_str(), o.as_str(), n.parse::<u64>()?),
            _ => return Err(
                "usage: records_loop flat|mixed|nested encode|decode|json-encode|json-decode COUNT"
                    .into(),
            ),
        };
    let (type_name, bytes): (&str, &[u8]) = match workload {
        "flat" => ("bench.Flat", include_bytes!("../../../testdata/flat.bin")),
        "mixed" => ("bench.Mixed", include_bytes!("../../../testdata/mixed.bin")),
        "nested" => (
            "bench.Nested",
            include_bytes!("../../../testdata/nested.bin"),
        ),
        other => return Err(format!("no workload {other}").into()),
    };
    let schema = SchemaSet::from_source(PROTO)?;
    let id = schema.message_by_name(type_name).ok_or("no such type")?;
    let opts = DecodeOptions::default();
    let held = Arena::new();
    let record = engine::decode(&schema, id, bytes, &held, &opts)?;
    let mut arena = Arena::new();
    let mut out = Vec::with_capacity(bytes.len());
    let json_opts = optimus_core::json::JsonOptions::default();
    let mut text = String::new();
    engine::encode_json(record, &json_opts, &mut text)?;
    let json = text.clone();
    let start = std::time::Instant::now();
    for _ in 0..n {
        match op {
            "encode" => {
                out.clear();
                engine::encode(black_box(record), &mut out);
                black_box(&out);
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
