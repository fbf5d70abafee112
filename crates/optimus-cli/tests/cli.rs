//! The `optimus` binary end to end: conversions, streams, schema listing, traces and the
//! error contract (one line on stderr, exit status 1, never a panic).

use std::io::Write;
use std::process::{Command, Output, Stdio};

const PEERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/peers.proto");
const MIXED: &[u8] = include_bytes!("../../../testdata/mixed.bin");
const FLAT: &[u8] = include_bytes!("../../../testdata/flat.bin");

fn optimus(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_optimus"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("optimus runs");
    // A process that fails before reading its input closes the pipe: that is not an error here.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

fn convert(ty: &str, from: &str, to: &str, extra: &[&str], stdin: &[u8]) -> Output {
    let mut args = vec![
        "convert", "--proto", PEERS, "--type", ty, "--from", from, "--to", to,
    ];
    args.extend_from_slice(extra);
    optimus(&args, stdin)
}

#[test]
fn binary_json_binary_is_byte_identical() {
    let json = convert("bench.Mixed", "protobuf", "json", &[], MIXED);
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let text = String::from_utf8(json.stdout).unwrap();
    assert!(text.starts_with('{') && text.ends_with("}\n"), "{text}");
    let back = convert("bench.Mixed", "json", "protobuf", &[], text.as_bytes());
    assert!(
        back.status.success(),
        "{}",
        String::from_utf8_lossy(&back.stderr)
    );
    assert_eq!(back.stdout, MIXED);
    let same = convert("bench.Mixed", "protobuf", "protobuf", &[], MIXED);
    assert_eq!(same.stdout, MIXED);
}

#[test]
fn delimited_streams() {
    let mut stream = Vec::new();
    for m in [FLAT, FLAT, FLAT] {
        stream.push(m.len() as u8 | 0x80);
        stream.push((m.len() >> 7) as u8);
        stream.extend_from_slice(m);
    }
    let lines = convert("bench.Flat", "protobuf", "json", &["--delimited"], &stream);
    assert!(
        lines.status.success(),
        "{}",
        String::from_utf8_lossy(&lines.stderr)
    );
    let text = String::from_utf8(lines.stdout).unwrap();
    assert_eq!(text.lines().count(), 3);
    let back = convert(
        "bench.Flat",
        "json",
        "protobuf",
        &["--delimited"],
        text.as_bytes(),
    );
    assert_eq!(back.stdout, stream);
}

#[test]
fn errors_are_one_line_with_path_and_offset() {
    let out = convert(
        "bench.Mixed",
        "protobuf",
        "json",
        &[],
        &MIXED[..MIXED.len() - 3],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: bench.Mixed"), "{err}");
    assert!(err.contains("at byte"), "{err}");

    let out = convert("bench.Mixed", "json", "protobuf", &[], b"{\"id\": \"x\"}");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));

    let out = convert("bench.Nope", "json", "protobuf", &[], b"{}");
    assert_eq!(out.status.code(), Some(1));
    let out = optimus(
        &[
            "convert",
            "--proto",
            "/no/such.proto",
            "--type",
            "a.B",
            "--from",
            "json",
            "--to",
            "json",
        ],
        b"{}",
    );
    assert_eq!(out.status.code(), Some(1));
    let out = optimus(
        &["convert", "--type", "a.B", "--from", "json", "--to", "json"],
        b"{}",
    );
    assert_eq!(out.status.code(), Some(2), "usage errors exit 2");
}

#[test]
fn help_and_schema_listing() {
    for cmd in ["convert", "schema", "bench", "trace"] {
        let out = optimus(&[cmd, "--help"], b"");
        assert!(out.status.success(), "{cmd} --help");
    }
    let out = optimus(&["schema", "--proto", PEERS, "--type", "bench.Mixed"], b"");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("message bench.Mixed"), "{text}");
    assert!(text.contains("bench.MixedGeo"), "{text}");
}

/// The JSON rows of a short `optimus bench` of one workload and operation with the default
/// peers, checked to succeed without a note (each peer re-encodes the workload to the bytes
/// optimus does, and its JSON is the same message, else it writes one).
fn bench_rows(workload: &str, operation: &str) -> Vec<serde_json::Value> {
    bench_rows_with(workload, operation, &[])
}

/// [`bench_rows`] with extra arguments.
fn bench_rows_with(workload: &str, operation: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec![
        "bench",
        "--workload",
        workload,
        "--operation",
        operation,
        "--seconds",
        "0.05",
        "--reps",
        "3",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = optimus(&args, b"");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("note:"), "{stderr}");
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for r in &rows {
        assert_eq!(r["operation"], operation, "{text}");
        assert!(r["ns_median"].as_f64().unwrap() > 0.0, "{text}");
        let speedup = &r["optimus_speedup_median"];
        assert_eq!(
            speedup.is_number(),
            r["implementation"] != "optimus",
            "{text}"
        );
    }
    rows
}

/// The implementations of `rows`, in order.
/// Whether this build measures `peer` (its build script found what the peer needs).
fn built(peer: &str) -> bool {
    optimus_bench::PEERS.contains(&peer)
}

fn implementations(rows: &[serde_json::Value]) -> Vec<&str> {
    rows.iter()
        .map(|r| r["implementation"].as_str().unwrap())
        .collect()
}

#[test]
fn bench_decodes_into_a_reused_message_beside_the_peers() {
    // scripts/test installs protoc and libprotobuf, so there the C++ peer must be built in,
    // and buffa's types generated (from protoc's descriptors).
    let required = std::env::var_os("OPTIMUS_REQUIRE_CPP_PEER").is_some_and(|v| v != "0");
    for peer in ["protobuf-cpp", "buffa"] {
        assert!(
            !required || built(peer),
            "OPTIMUS_REQUIRE_CPP_PEER is set, but this build has no {peer} peer (see the \
             warning of optimus-bench's build script)"
        );
    }
    // optimus decodes into arena records; its reflective Message codec is measured beside.
    // ... and its generated types (optimus-build) beside them.
    let mut expected = vec![
        "optimus",
        "optimus-message",
        "optimus-generated",
        "prost",
        "prost-reflect",
    ];
    if built("buffa") {
        // buffa's owned types, then its zero-copy views.
        expected.extend(["buffa", "buffa-view"]);
    }
    if built("protobuf-cpp") {
        expected.push("protobuf-cpp");
    }
    for workload in ["flat", "mixed", "nested"] {
        let rows = bench_rows(workload, "decode-reuse");
        assert_eq!(implementations(&rows), expected, "{workload}");
        // Decoding into a reset arena allocates nothing once the arena has grown.
        assert_eq!(rows[0]["allocs_per_message"], 0.0, "{workload}");
        assert!(
            rows[1]["allocs_per_message"].as_f64().unwrap() > 0.0,
            "{workload}"
        );
        // Generated types decode into the same reset arena.
        assert_eq!(rows[2]["allocs_per_message"], 0.0, "{workload}");
    }
}

#[test]
fn bench_threads_run_every_implementation_at_once() {
    let rows = bench_rows_with("mixed", "encode", &["--threads", "2", "--peers", "prost"]);
    assert_eq!(
        implementations(&rows),
        ["optimus", "optimus-message", "optimus-generated", "prost"]
    );
    for r in &rows {
        assert_eq!(r["threads"], 2);
        // The counter sees every thread at once, so no per-implementation count is given.
        assert!(r["allocs_per_message"].is_null());
    }
}

#[test]
fn bench_json_rows_leave_out_prost() {
    // prost has no JSON mapping, and buffa's views cannot be read from JSON; the peers that
    // have one are measured.
    let mut expected = vec![
        "optimus",
        "optimus-message",
        "optimus-generated",
        "prost-reflect",
    ];
    if built("buffa") {
        expected.push("buffa");
    }
    if built("protobuf-cpp") {
        expected.push("protobuf-cpp");
    }
    let rows = bench_rows("mixed", "json-decode");
    assert_eq!(implementations(&rows), expected);
    // Reading JSON into a reset arena allocates nothing for the embedded workloads (their
    // strings have no escapes, so they are viewed in the text).
    assert_eq!(rows[0]["allocs_per_message"], 0.0);
    let out = optimus(&["bench", "--peers", "protobuf-c"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no peer named"));
}

#[test]
fn trace_files_are_written() {
    let out = optimus(&["trace", "--workload", "nested", "--op", "encode"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = optimus_trace::decode(&out.stdout).unwrap();
    optimus_trace::check_structure(&events).unwrap();
    assert!(events.len() > 20);
}

/// Runs `optimus args` and parses its standard output as one JSON document.
fn json_of(args: &[&str]) -> serde_json::Value {
    let out = optimus(args, b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn rpcacc_model_runs_on_workloads_and_trace_files() {
    let r = json_of(&["sim", "--accel", "rpcacc", "--workload", "mixed", "--json"]);
    let designs = |k: &str| -> Vec<String> {
        r[k].as_array()
            .unwrap()
            .iter()
            .map(|d| d["design"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        designs("serialization"),
        [
            "cpu_only",
            "protoacc_pcie",
            "protoacc_onchip",
            "rpcacc",
            "bf3",
            "bf3_memory_affinity",
            "bf3_dsa"
        ]
    );
    assert_eq!(
        designs("deserialization"),
        ["cpu_only", "protoacc_pcie", "rpcacc", "bf3", "bf3_oneshot"]
    );
    assert!(r["stats"]["serializer.fields"].as_f64().unwrap() > 0.0);

    // A decode trace file gives the deserialization designs only.
    let trace = optimus(&["trace", "--workload", "nested", "--op", "decode"], b"");
    assert!(trace.status.success());
    let path = std::env::temp_dir().join(format!("optimus-rpcacc-{}.trace", std::process::id()));
    std::fs::write(&path, &trace.stdout).unwrap();
    let file = path.to_str().unwrap();
    let r = json_of(&["sim", "--accel", "rpcacc", "--trace", file, "--json"]);
    std::fs::remove_file(&path).ok();
    assert_eq!(r["serialized"], 0);
    assert_eq!(r["deserialized"], 1);
    assert_eq!(r["deserialization"].as_array().unwrap().len(), 5);
}

#[test]
fn the_gateway_runs_every_placement() {
    let r = json_of(&[
        "sim",
        "--accel",
        "rpcacc",
        "--workload",
        "gateway",
        "--json",
    ]);
    let placements = r["placements"].as_array().unwrap();
    assert_eq!(placements.len(), 16);
    let gbps = |i: usize| placements[i]["gbps"].as_f64().unwrap();
    // Every field in host memory is the slowest; the payload in card memory reaches the line.
    assert!(placements[0]["accel_fields"].as_array().unwrap().is_empty());
    assert_eq!(placements[0]["bound"], "PCIe card to host");
    assert!((0..16).all(|i| gbps(i) >= gbps(0)));
    assert!(gbps(15) > 90.0 && gbps(15) <= 100.0, "{}", gbps(15));
    let ratio = r["worst_vs_best"].as_f64().unwrap();
    assert!((gbps(15) / gbps(0) - ratio).abs() < 1e-9);
    // A sweep of the packet size prints a row per placement and point.
    let sweep = optimus(
        &[
            "sim",
            "--accel",
            "rpcacc",
            "--workload",
            "gateway",
            "--vary",
            "gateway.packet_bytes=64,9000",
        ],
        b"",
    );
    assert!(sweep.status.success());
    let table = String::from_utf8_lossy(&sweep.stdout);
    assert_eq!(table.matches("eth+ip+ports+payload").count(), 2, "{table}");
    // The gateway places its own fields.
    let labelled = optimus(
        &[
            "sim",
            "--accel",
            "rpcacc",
            "--workload",
            "gateway",
            "--acc-field",
            "gw.Packet.eth",
        ],
        b"",
    );
    assert!(!labelled.status.success());
    assert!(String::from_utf8_lossy(&labelled.stderr).contains("--acc-field"));
}

#[test]
fn the_image_service_runs_under_a_load() {
    let run = |extra: &[&str]| {
        let mut args = vec!["sim", "--accel", "rpcacc", "--workload", "image-service"];
        args.extend(extra);
        args.push("--json");
        json_of(&args)
    };
    let design = |r: &serde_json::Value, name: &str| -> serde_json::Value {
        r["designs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["design"] == name)
            .unwrap()
            .clone()
    };
    // One core, no load: costs and capacities, RPCAcc ahead of ProtoACC-PCIe.
    let idle = run(&[]);
    assert_eq!(idle["cores"], 1);
    let (pcie, rpcacc) = (design(&idle, "protoacc_pcie"), design(&idle, "rpcacc"));
    assert!(rpcacc["latency_ns"].as_f64() < pcie["latency_ns"].as_f64());
    assert!(rpcacc["requests_per_s"].as_f64() > pcie["requests_per_s"].as_f64());
    assert!(rpcacc["under_load"].is_null());
    // Sixteen cores at 150k requests/s: past CPU-only's capacity, queueing on the others.
    let busy = run(&["--cores", "16", "--rate", "150000"]);
    assert!(design(&busy, "cpu_only")["under_load"].is_null());
    for name in ["protoacc_pcie", "rpcacc"] {
        let d = design(&busy, name);
        let (mean, p99) = (
            d["under_load"]["mean_ns"].as_f64().unwrap(),
            d["under_load"]["p99_ns"].as_f64().unwrap(),
        );
        assert!(
            mean > d["latency_ns"].as_f64().unwrap() && p99 > mean,
            "{d}"
        );
    }
    // The service's own parameters come from the config file's `service`: a smaller avatar
    // costs every design less; one past the bound is refused by name.
    let path = std::env::temp_dir().join(format!("optimus-svc-{}.json", std::process::id()));
    let file = path.to_str().unwrap();
    let with_config = |file: &str| {
        optimus(
            &[
                "sim",
                "--accel",
                "rpcacc",
                "--workload",
                "image-service",
                "--config",
                file,
            ],
            b"",
        )
    };
    std::fs::write(&path, br#"{"service": {"avatar_bytes": 8192}}"#).unwrap();
    let small = run(&["--config", file]);
    for name in ["cpu_only", "protoacc_pcie", "rpcacc"] {
        let (a, b) = (design(&small, name), design(&idle, name));
        assert!(
            a["latency_ns"].as_f64() < b["latency_ns"].as_f64(),
            "{a} {b}"
        );
        assert!(a["host_ns"].as_f64() < b["host_ns"].as_f64(), "{a} {b}");
    }
    // A mix of 8 KiB and 32 KiB avatars, three to one: every design's mean cost lies
    // between the two sizes', and the text names the shares.
    std::fs::write(
        &path,
        br#"{"service": {"avatar_mix": [{"bytes": 8192, "share": 3}, {"bytes": 32768, "share": 1}]}}"#,
    )
    .unwrap();
    let mixed = run(&["--config", file]);
    for name in ["cpu_only", "protoacc_pcie", "rpcacc"] {
        let host = |r: &serde_json::Value| design(r, name)["host_ns"].as_f64().unwrap();
        let (lo, mid, hi) = (host(&small), host(&mixed), host(&idle));
        assert!(
            (mid - (0.75 * lo + 0.25 * hi)).abs() < 1e-6 * hi,
            "{lo} {mid} {hi}"
        );
    }
    let text = with_config(file);
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("8192 B (75.0 %), 32768 B (25.0 %)"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
    std::fs::write(&path, br#"{"service": {"avatar_bytes": 1000000000}}"#).unwrap();
    let huge = with_config(file);
    std::fs::remove_file(&path).unwrap();
    assert!(!huge.status.success());
    let err = String::from_utf8_lossy(&huge.stderr);
    assert!(
        err.contains("rpcacc.service") && err.contains("avatar_bytes"),
        "{err}"
    );
    // The flags belong to this workload only.
    let wrong = optimus(&["sim", "--accel", "rpcacc", "--cores", "2"], b"");
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("--workload image-service"));
}

#[test]
fn acc_field_labels_reach_the_model_from_a_trace_file_or_a_workload() {
    let label = [
        "--acc-field",
        "bench.Mixed.note",
        "--acc-field",
        "bench.Mixed.geo",
    ];
    let trace = optimus(
        &[
            &["trace", "--workload", "mixed", "--op", "decode"][..],
            &label,
        ]
        .concat(),
        b"",
    );
    assert!(
        trace.status.success(),
        "{}",
        String::from_utf8_lossy(&trace.stderr)
    );
    let path = std::env::temp_dir().join(format!("optimus-acc-{}.trace", std::process::id()));
    std::fs::write(&path, &trace.stdout).unwrap();
    let from_file = json_of(&[
        "sim",
        "--accel",
        "rpcacc",
        "--trace",
        path.to_str().unwrap(),
        "--json",
    ]);
    std::fs::remove_file(&path).ok();
    let sim = [
        "sim",
        "--accel",
        "rpcacc",
        "--workload",
        "mixed-deser",
        "--json",
    ];
    let from_workload = json_of(&[&sim[..], &label].concat());
    let unlabelled = json_of(&sim);
    let card = |r: &serde_json::Value| r["stats"]["deserializer.card_memory_bytes"].as_f64();
    assert!(card(&from_file).unwrap() > 0.0);
    assert_eq!(card(&from_file), card(&from_workload));
    assert_eq!(card(&unlabelled), Some(0.0));

    let refused = |args: &[&str], why: &str| {
        let out = optimus(args, b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(why),
            "{args:?}: {err}"
        );
    };
    let scalar = ["--acc-field", "bench.Mixed.id"];
    refused(
        &[&["trace", "--workload", "mixed"][..], &scalar].concat(),
        "a singular int64",
    );
    refused(
        &[&["sim", "--accel", "rpcacc"][..], &scalar].concat(),
        "a singular int64",
    );
    refused(
        &["sim", "--accel", "op", "--acc-field", "bench.Mixed.note"],
        "apply to --accel rpcacc",
    );
    for workload in ["gateway", "image-service"] {
        refused(
            &["sim", "--workload", workload],
            "is RPCAcc's; run it with --accel rpcacc",
        );
    }
    refused(
        &[
            "sim",
            "--accel",
            "rpcacc",
            "--trace",
            "t",
            "--acc-field",
            "bench.Mixed.note",
        ],
        "cannot be used with",
    );
}

#[test]
fn every_workload_runs_on_both_models_in_either_direction() {
    // The DeathStarBench suite: 54 requests and responses of five services.
    // Each of OP's 15 cores cycles through all of them.
    for workload in ["socialnet", "socialnet-deser"] {
        let r = json_of(&["sim", "--accel", "op", "--workload", workload, "--json"]);
        assert!(r["throughput_gbps"].as_f64().unwrap() > 0.0, "{workload}");
        assert!(r["stats"]["dispatcher.completed"].as_f64().unwrap() > 54.0);
    }
    // The HyperProtoBench suite's 60 messages, serialized only.
    let r = json_of(&[
        "sim",
        "--accel",
        "rpcacc",
        "--workload",
        "hpb-ser",
        "--json",
    ]);
    assert_eq!(
        (r["serialized"].as_u64(), r["deserialized"].as_u64()),
        (Some(60), Some(0))
    );
    let out = optimus(&["sim", "--accel", "op", "--workload", "hpb-both"], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("hpb, socialnet"),
        "{err}"
    );
}

#[test]
fn sim_runs_messages_without_fields_and_refuses_oversized_traces() {
    let dir = std::env::temp_dir();
    let path = |name: &str| dir.join(format!("optimus-sim-{}-{name}.trace", std::process::id()));
    // An empty input decodes to a bench.Mixed with no field set.
    let trace = optimus(
        &[
            "trace",
            "--proto",
            PEERS,
            "--type",
            "bench.Mixed",
            "--op",
            "decode",
        ],
        b"",
    );
    assert!(trace.status.success());
    let empty = path("empty");
    std::fs::write(&empty, &trace.stdout).unwrap();
    let file = empty.to_str().unwrap();
    let op = json_of(&["sim", "--accel", "op", "--trace", file, "--json"]);
    assert!(op["messages_per_s"].as_f64().unwrap() > 0.0, "{op}");
    // Software does nothing for it: its rate, and OP's speedup over it, are undefined.
    assert!(op["software_gbps"].is_null() && op["speedup_vs_software"].is_null());
    assert_eq!(op["software_latency_ns"], 0.0);
    let table = optimus(&["sim", "--accel", "op", "--trace", file], b"");
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.contains("\nspeedup_vs_software       -\n"), "{table}");
    let rpc = json_of(&["sim", "--accel", "rpcacc", "--trace", file, "--json"]);
    assert_eq!(rpc["deserialized"], 1, "{rpc}");
    std::fs::remove_file(&empty).ok();

    // A few bytes of trace claiming 4 GiB of reads and writes.
    use optimus_trace::{Direction, Event, Format, Region};
    let huge = optimus_trace::encode(&[
        Event::MessageBegin {
            direction: Direction::Encode,
            format: Format::Protobuf,
            type_id: 0,
        },
        Event::FieldRead {
            region: Region::Message,
            addr: 0,
            bytes: u32::MAX,
        },
        Event::FieldWrite {
            region: Region::Buffer,
            addr: 0,
            bytes: u32::MAX,
        },
        Event::MessageEnd { wire_bytes: 1 },
    ]);
    let big = path("big");
    std::fs::write(&big, huge).unwrap();
    for accel in ["op", "rpcacc"] {
        let out = optimus(
            &["sim", "--accel", accel, "--trace", big.to_str().unwrap()],
            b"",
        );
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("max_traced_bytes"), "{err}");
    }
    std::fs::remove_file(&big).ok();
}

#[test]
fn sim_configs_round_trip_and_flags_override_them() {
    let cfg = json_of(&["sim", "--print-config", "--pipelines", "3", "--mesh", "8x8"]);
    assert_eq!(
        (cfg["pipelines"].as_u64(), cfg["noc"]["mesh"].as_u64()),
        (Some(3), Some(8))
    );
    let dir = std::env::temp_dir();
    let path = dir.join(format!("optimus-op-{}.json", std::process::id()));
    std::fs::write(&path, cfg.to_string()).unwrap();
    let file = path.to_str().unwrap();
    let from_file = optimus(&["sim", "--config", file, "--json"], b"");
    let from_flags = optimus(&["sim", "--pipelines", "3", "--mesh", "8x8", "--json"], b"");
    assert!(from_file.status.success());
    assert_eq!(from_file.stdout, from_flags.stdout);
    // A flag overrides the file.
    let over = json_of(&[
        "sim",
        "--config",
        file,
        "--pipelines",
        "1",
        "--print-config",
    ]);
    assert_eq!(
        (over["pipelines"].as_u64(), over["noc"]["mesh"].as_u64()),
        (Some(1), Some(8))
    );
    // --pcie-ns moves the MMIO doorbell, which crosses PCIe one way, with the round trip.
    let pcie = json_of(&[
        "sim",
        "--accel",
        "rpcacc",
        "--pcie-ns",
        "70",
        "--print-config",
    ]);
    assert_eq!(
        (
            pcie["pcie"]["latency_ns"].as_f64(),
            pcie["mmio_ns"].as_f64()
        ),
        (Some(70.0), Some(35.0))
    );
    // Unknown parameters are refused, naming the field.
    std::fs::write(&path, br#"{"noc": {"hops": 6}}"#).unwrap();
    let bad = optimus(&["sim", "--config", file], b"");
    std::fs::remove_file(&path).ok();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("noc.hops: unknown field `hops`"), "{err}");
}

/// The JSON lines a successful run of `args` prints.
fn json_lines(args: &[&str]) -> Vec<serde_json::Value> {
    let out = optimus(args, b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The row of target `id` in the `--json` output of the `sim reproduce` run `args`.
fn reproduce_row(args: &[&str], id: &str) -> serde_json::Value {
    json_lines(args)
        .into_iter()
        .find(|row| row["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}"))
}

#[test]
fn reproduce_runs_under_a_config_file() {
    let fig7 = |args: &[&str]| -> f64 {
        reproduce_row(args, "rpcacc.fig7.memaff_vs_protoacc_pcie.x")["model"]
            .as_f64()
            .unwrap()
    };
    let path = std::env::temp_dir().join(format!("optimus-repro-{}.json", std::process::id()));
    let file = path.to_str().unwrap();
    std::fs::write(&path, br#"{"pcie": {"latency_ns": 70}}"#).unwrap();
    let paper = fig7(&["sim", "reproduce", "rpcacc", "--json"]);
    let near = fig7(&["sim", "reproduce", "rpcacc", "--json", "--config", file]);
    assert!(near < paper / 1.5, "{near} vs {paper}");
    std::fs::write(&path, br#"{"block_buffer": {"ways": 0}}"#).unwrap();
    let bad = optimus(&["sim", "reproduce", "op", "--config", file], b"");
    std::fs::remove_file(&path).ok();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("block_buffer.ways"), "{err}");
}

#[test]
fn op_takes_the_software_baseline_from_its_config() {
    let path = std::env::temp_dir().join(format!("optimus-cpu-{}.json", std::process::id()));
    let file = path.to_str().unwrap();
    // Twice the calibrated per-field cost: Fig. 7's best software serializer slows down...
    std::fs::write(&path, br#"{"cpu": {"per_field": 234}}"#).unwrap();
    let row = reproduce_row(
        &["sim", "reproduce", "op", "--json", "--config", file],
        "op.fig7.cpu_ser_best.gbps",
    );
    let (model, paper) = (
        row["model"].as_f64().unwrap(),
        row["paper"].as_f64().unwrap(),
    );
    assert!(model < 0.75 * paper, "{model} vs the paper's {paper}");
    // ... and so does a run's baseline, by the same factor, while OP's throughput stays.
    let run = |config: Option<&str>| {
        let mut args = vec!["sim", "--workload", "flat", "--json"];
        args.extend(config.map(|f| ["--config", f]).into_iter().flatten());
        json_of(&args)
    };
    let (slow, calibrated) = (run(Some(file)), run(None));
    let of = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap();
    assert_eq!(
        of(&slow, "throughput_gbps"),
        of(&calibrated, "throughput_gbps")
    );
    let slowdown = of(&calibrated, "software_gbps") / of(&slow, "software_gbps");
    assert!((1.5..2.0).contains(&slowdown), "{slowdown}");
    for r in [&slow, &calibrated] {
        let ratio = of(r, "throughput_gbps") / of(r, "software_gbps");
        assert!((of(r, "speedup_vs_software") - ratio).abs() < 1e-9 * ratio);
    }
    std::fs::write(&path, br#"{"cpu": {"ipc": 0}}"#).unwrap();
    let bad = optimus(&["sim", "reproduce", "op", "--config", file], b"");
    std::fs::remove_file(&path).ok();
    assert!(String::from_utf8_lossy(&bad.stderr).contains("op.cpu.ipc"));
    assert!(!bad.status.success());
}

#[test]
fn reproduce_draws_every_figure_with_its_title() {
    let dir = std::env::temp_dir().join(format!("optimus-plots-{}", std::process::id()));
    let out = optimus(
        &[
            "sim",
            "reproduce",
            "rpcacc",
            "--plot",
            dir.to_str().unwrap(),
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let figures = "fig2 fig5 fig6 fig7 fig8a fig8b fig9 fig10 fig11a fig11b fig12a fig12b \
                   fig12b_load fig13";
    for fig in figures.split_whitespace() {
        let png = std::fs::read(dir.join(format!("rpcacc_{fig}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{fig}");
        let svg = std::fs::read_to_string(dir.join(format!("rpcacc_{fig}.svg"))).unwrap();
        // `fig12b_load` is Fig. 12b under load.
        let title = match fig.trim_start_matches("fig").split_once('_') {
            Some((number, _)) => format!("Fig. {number} under load:"),
            None => format!("Fig. {}:", fig.trim_start_matches("fig")),
        };
        assert!(svg.contains(&title), "{fig}");
        // The figure's data beside it: the same title, and every series with points.
        let json = std::fs::read_to_string(dir.join(format!("rpcacc_{fig}.json"))).unwrap();
        let data: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert!(data["title"].as_str().unwrap().starts_with(&title), "{fig}");
        let series = data["series"].as_array().unwrap();
        assert!(!series.is_empty(), "{fig}");
        for s in series {
            assert!(!s["points"].as_array().unwrap().is_empty(), "{fig}: {s}");
        }
    }
    // Fig. 7's published geometric means are levels across the messages, each legend
    // giving the model's value beside the paper's.
    let fig7: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("rpcacc_fig7.json")).unwrap())
            .unwrap();
    let levels: Vec<&serde_json::Value> = fig7["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "paper_level")
        .collect();
    assert_eq!(levels.len(), 2);
    for l in levels {
        assert!(l["name"].as_str().unwrap().contains("(model "), "{l}");
        let p = l["points"].as_array().unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0][1], p[1][1]);
    }
    // Categories are named on the axis, not numbered.
    let fig6 = std::fs::read_to_string(dir.join("rpcacc_fig6.svg")).unwrap();
    assert!(fig6.contains("\nbench0\n") && fig6.contains("\ncompose-post\n"));
    // Fig. 12a's paper points are read per host core, for both baselines.
    let fig12a = std::fs::read_to_string(dir.join("rpcacc_fig12a.svg")).unwrap();
    assert!(fig12a.contains("paper, per core: ProtoACC-PCIe"));
    assert!(fig12a.contains("paper, per core: CPU-only"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn op_runs_name_what_bounds_them() {
    // One pipeline waits on memory; six saturate OP's port (Fig. 9). The sweep's last column
    // and the JSON report say so.
    let r = json_of(&["sim", "--workload", "mixed", "--json"]);
    assert_eq!(r["bound"], "memory");
    let out = optimus(
        &["sim", "--workload", "mixed", "--vary", "pipelines=1,6"],
        b"",
    );
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    let bounds: Vec<&str> = table
        .lines()
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    assert_eq!(bounds, ["bound", "memory", "port"], "{table}");
}

#[test]
fn a_sweep_runs_each_point_as_a_single_run_would() {
    // Optimus Prime over a 2 × 2 grid, the first axis slowest: each report is the one its
    // flags give.
    let grid = [
        "sim",
        "--workload",
        "nested",
        "--vary",
        "pipelines=1..2",
        "--vary",
        "noc.mesh=4,8",
        "--json",
    ];
    let op = json_lines(&grid);
    assert_eq!(op.len(), 4);
    for (line, (n, mesh)) in op.iter().zip([("1", 4), ("1", 8), ("2", 4), ("2", 8)]) {
        assert_eq!(line["point"]["pipelines"], n.parse::<u32>().unwrap());
        assert_eq!(line["point"]["noc.mesh"], mesh);
        let single = json_of(&[
            "sim",
            "--workload",
            "nested",
            "--pipelines",
            n,
            "--mesh",
            &format!("{mesh}x{mesh}"),
            "--json",
        ]);
        assert_eq!(line["report"], single, "pipelines={n} mesh={mesh}");
    }
    // Points run on several threads; how many changes nothing.
    for jobs in ["1", "3"] {
        let again = json_lines(&[&grid[..], &["--jobs", jobs]].concat());
        assert_eq!(again, op, "--jobs {jobs}");
    }
    // RPCAcc: `pcie-ns` moves the round trip and the MMIO as the flag does.
    let rpc = json_lines(&[
        "sim",
        "--accel",
        "rpcacc",
        "--vary",
        "pcie-ns=70,1250",
        "--json",
    ]);
    for (line, ns) in rpc.iter().zip(["70", "1250"]) {
        let single = json_of(&["sim", "--accel", "rpcacc", "--pcie-ns", ns, "--json"]);
        assert_eq!(line["report"], single, "pcie-ns={ns}");
    }
    // The image service's `rate` and `cores` are its flags' values.
    let service = json_lines(&[
        "sim",
        "--accel",
        "rpcacc",
        "--workload",
        "image-service",
        "--vary",
        "cores=2",
        "--vary",
        "rate=50000,150000",
        "--json",
    ]);
    for (line, rate) in service.iter().zip(["50000", "150000"]) {
        let single = json_of(&[
            "sim",
            "--accel",
            "rpcacc",
            "--workload",
            "image-service",
            "--cores",
            "2",
            "--rate",
            rate,
            "--json",
        ]);
        assert_eq!(line["report"], single, "rate={rate}");
    }
    // The table: a header, then a row per point and design.
    let out = optimus(
        &[
            "sim",
            "--accel",
            "rpcacc",
            "--workload",
            "image-service",
            "--vary",
            "service.avatar_bytes=1024,8192",
        ],
        b"",
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert!(
        rows[0].starts_with("service.avatar_bytes  design") && rows[0].contains("requests_per_s"),
        "{text}"
    );
    assert_eq!(rows.len(), 1 + 2 * 3, "{text}");
    assert!(
        rows[6].starts_with("8192") && rows[6].contains("rpcacc"),
        "{text}"
    );
    // The figure: the chosen number against the first varied parameter.
    let dir = std::env::temp_dir().join(format!("optimus-sweep-{}", std::process::id()));
    let out = optimus(
        &[
            "sim",
            "--vary",
            "pipelines=1,2,4",
            "--plot",
            dir.to_str().unwrap(),
            "--metric",
            "latency_ns",
        ],
        b"",
    );
    assert!(out.status.success());
    assert!(std::fs::read(dir.join("sweep.png"))
        .unwrap()
        .starts_with(b"\x89PNG"));
    let svg = std::fs::read_to_string(dir.join("sweep.svg")).unwrap();
    assert!(svg.contains("latency_ns against pipelines"));
    std::fs::remove_dir_all(&dir).ok();
    // Errors name the point and the parameter, and nothing runs past a bad grid.
    for (args, says) in [
        (
            &["sim", "--vary", "pipelinez=1"][..],
            "unknown field `pipelinez`",
        ),
        (&["sim", "--vary", "pipelines=0,1"][..], "pipelines=0"),
        (
            &["sim", "--vary", "pcie-ns=70"][..],
            "applies to --accel rpcacc",
        ),
        (&["sim", "--vary", "pipelines=1..5000"][..], "at most"),
        (
            &["sim", "--vary", "pipelines=1", "--vary", "pipelines=2"][..],
            "more than one --vary",
        ),
        (
            &[
                "sim",
                "--vary",
                "pipelines=1..64",
                "--vary",
                "interleave=1..64",
                "--vary",
                "seed=1,2",
            ][..],
            "more than 4096 points",
        ),
        (
            &[
                "sim",
                "--vary",
                "pipelines=1",
                "--plot",
                "/tmp",
                "--metric",
                "speed",
            ][..],
            "--metric speed",
        ),
        // Every point, the metric and the plotted axis are checked before anything runs:
        // these fail at once rather than after 64 runs of the HyperProtoBench suite.
        (
            &["sim", "--workload", "hpb", "--vary", "pipelines=1..64,100"][..],
            "sim --vary pipelines=100: config op.pipelines: 100",
        ),
        (
            &[
                "sim",
                "--workload",
                "hpb",
                "--vary",
                "pipelines=1..64",
                "--plot",
                "/tmp",
                "--metric",
                "throughput",
            ][..],
            "--metric throughput: the runs report throughput_gbps",
        ),
        (
            &[
                "sim",
                "--workload",
                "hpb",
                "--vary",
                "prefetch=true,false",
                "--vary",
                "pipelines=1..64",
                "--plot",
                "/tmp",
            ][..],
            "the first --vary (prefetch) must be numeric",
        ),
        (
            &[
                "sim",
                "--vary",
                "pipelines=-5000000000000000000..5000000000000000000",
            ][..],
            "at most 1024 values",
        ),
    ] {
        let out = optimus(args, b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(
            err.contains(says) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
}

/// `path` in the temporary directory, named for this process and `name`.
fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("optimus-{}-{name}", std::process::id()))
}

/// Runs `optimus sim` on a trace file holding `bytes`, and gives its stderr once it fails.
fn sim_trace_error(name: &str, bytes: &[u8], extra: &[&str]) -> String {
    let path = temp_path(name);
    std::fs::write(&path, bytes).unwrap();
    let out = optimus(
        &[&["sim", "--trace", path.to_str().unwrap()][..], extra].concat(),
        b"",
    );
    std::fs::remove_file(&path).ok();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{name}: {err}");
    assert!(
        out.stdout.is_empty() && err.lines().count() == 1,
        "{name}: {err}"
    );
    err
}

#[test]
fn sim_bounds_what_a_trace_file_may_cost() {
    use optimus_trace::{Direction, Event, Format};
    // A file with no end is refused at the size limit rather than read whole.
    let out = optimus(&["sim", "--trace", "/dev/zero"], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("/dev/zero is larger than the limit of 67108864 bytes; `--max-trace-mib`"),
        "{err}"
    );
    // Events that read and write nothing still count: many empty messages, a few bytes
    // each, are refused by the trace's limit...
    let begin = Event::MessageBegin {
        direction: Direction::Decode,
        format: Format::Protobuf,
        type_id: 0,
    };
    let empty = [begin, Event::MessageEnd { wire_bytes: 0 }];
    let many: Vec<Event> = empty.iter().copied().cycle().take(2 * 262_145).collect();
    let err = sim_trace_error("many", &optimus_trace::encode(&many), &[]);
    assert!(
        err.contains("message 262144 (events 524288..=524289)")
            && err.contains("max_workload_bytes; each event counts at least 256 bytes"),
        "{err}"
    );
    // ... deep nesting by a message's...
    let mut deep = vec![begin];
    deep.extend((0..600_000).map(|_| Event::Enter { type_id: 1 }));
    deep.extend((0..600_000).map(|_| Event::Leave));
    deep.push(Event::MessageEnd { wire_bytes: 0 });
    let deep = optimus_trace::encode(&deep);
    let err = sim_trace_error("deep", &deep, &[]);
    assert!(
        err.contains("message 0 (events 0..=1200001) reads and writes")
            && err.contains("max_traced_bytes")
            && err.ends_with("`--max-trace-mib` raises the limits (now 1024)\n"),
        "{err}"
    );
    // ... which a user with the memory for it may raise: both models then replay it.
    let path = temp_path("deep-raised");
    std::fs::write(&path, &deep).unwrap();
    for accel in ["op", "rpcacc"] {
        let out = optimus(
            &["sim", "--accel", accel, "--json", "--max-trace-mib", "2048"]
                .into_iter()
                .chain(["--trace", path.to_str().unwrap()])
                .collect::<Vec<_>>(),
            b"",
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{accel}: {err}");
    }
    std::fs::remove_file(&path).ok();
    // ... and more events than the view could take by the decoder, before it keeps them:
    // the 4,194,305th is the last three-byte converter op, before the two-byte end.
    let mut flat = vec![begin];
    flat.extend((0..(1 << 22)).map(|_| Event::Convert { op: 1, bytes: 0 }));
    flat.push(Event::MessageEnd { wire_bytes: 0 });
    let file = optimus_trace::encode(&flat);
    let err = sim_trace_error("flat", &file, &[]);
    assert!(
        err.contains(&format!(
            "at byte {}: more than 4194304 events, the most this reader takes; \
             `--max-trace-mib` raises the limits (now 1024)",
            file.len() - 5
        )),
        "{err}"
    );
}

#[test]
fn sim_errors_name_the_trace_file_and_the_byte() {
    let flat = optimus(&["trace", "--workload", "flat"], b"").stdout;
    // The reserved header bytes, the version, a region and the nesting each have their own
    // words; a file of the first version also says how to get one that reads.
    let header_byte = |k: usize, value: u8| {
        let mut bytes = flat.clone();
        bytes[k] = value;
        bytes
    };
    let events = |tail: &[u8]| [&flat[..12], tail].concat();
    for (name, bytes, expected) in [
        (
            "reserved",
            header_byte(11, 1),
            "-reserved: at byte 11: reserved header byte is 0x01, expected 0",
        ),
        (
            "old",
            header_byte(8, 1),
            "-old: trace version 1 is not supported (expected 2); record it again",
        ),
        (
            "region",
            events(&[0x00, 0, 0, 0, 0x33, 0, 0]),
            "at byte 16: unknown region 0x03",
        ),
        (
            "leave",
            events(&[0x00, 0, 0, 0, 0x07]),
            "at byte 16 (event 1): Leave without Enter",
        ),
    ] {
        let err = sim_trace_error(name, &bytes, &[]);
        assert!(err.contains(expected), "{err}");
    }
    // A model's error names the file, not the model.
    let config = temp_path("short.json");
    std::fs::write(
        &config,
        br#"{"max_cycles": 100, "warmup_cycles": 10, "measure_cycles": 10}"#,
    )
    .unwrap();
    let err = sim_trace_error("model", &flat, &["--config", config.to_str().unwrap()]);
    std::fs::remove_file(&config).ok();
    assert!(
        err.contains("-model: no message completed") && !err.contains("workload op"),
        "{err}"
    );
}

#[test]
fn a_message_of_empty_sub_messages_is_written_whole() {
    // 2,000 empty `subs`: 4,000 wire bytes, and no value the engine writes.
    let proto = temp_path("esub.proto");
    std::fs::write(
        &proto,
        "syntax = \"proto3\"; package t; message Sub { int32 a = 1; } \
         message M { repeated Sub subs = 2; }",
    )
    .unwrap();
    let trace = optimus(
        &[
            "trace",
            "--proto",
            proto.to_str().unwrap(),
            "--type",
            "t.M",
            "--op",
            "encode",
        ],
        &b"\x12\x00".repeat(2000),
    );
    std::fs::remove_file(&proto).ok();
    assert!(trace.status.success());
    let path = temp_path("esub.trace");
    std::fs::write(&path, &trace.stdout).unwrap();
    let r = json_of(&["sim", "--trace", path.to_str().unwrap(), "--json"]);
    std::fs::remove_file(&path).ok();
    let written = r["stats"]["pipeline0.writer.bytes"].as_f64().unwrap();
    assert!(written > 0.0 && written % 4000.0 == 0.0, "{written}");
}

#[test]
fn the_image_service_takes_a_rate_from_1e_9_to_1e12() {
    // At one request every three years, each is served as at low load.
    let r = json_of(&[
        "sim",
        "--accel",
        "rpcacc",
        "--workload",
        "image-service",
        "--rate",
        "1e-8",
        "--json",
    ]);
    for d in r["designs"].as_array().unwrap() {
        let low_load = d["latency_ns"].as_f64().unwrap();
        let mean = d["under_load"]["mean_ns"].as_f64().unwrap();
        assert_eq!(d["under_load"]["p99_ns"], d["latency_ns"], "{d}");
        assert!((mean - low_load).abs() < 1e-6 * low_load, "{d}");
    }
    for rate in ["1e-300", "0", "2e12"] {
        let out = optimus(
            &[
                "sim",
                "--accel",
                "rpcacc",
                "--workload",
                "image-service",
                "--rate",
                rate,
            ],
            b"",
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("from 1e-9 to 1e12"), "{rate}: {err}");
    }
}

#[test]
fn trace_streams_its_output_and_bounds_its_input() {
    use std::io::Read;
    // Four billion repeats: the file streams out as it is made, and a closed pipe ends it
    // quietly.
    let mut child = Command::new(env!("CARGO_BIN_EXE_optimus"))
        .args(["trace", "--workload", "flat", "--repeat", "4294967295"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = vec![0; 1 << 20];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(head.starts_with(&optimus_trace::MAGIC));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Endless stdin is refused at the limit.
    let out = Command::new(env!("CARGO_BIN_EXE_optimus"))
        .args(["trace", "--proto", PEERS, "--type", "bench.Flat"])
        .stdin(std::fs::File::open("/dev/zero").unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("stdin is larger than the limit of 268435456 bytes"),
        "{err}"
    );
    // A stream of no message is a trace of none: the header alone.
    let none = optimus(
        &[
            "trace",
            "--proto",
            PEERS,
            "--type",
            "bench.Flat",
            "--delimited",
        ],
        b"",
    );
    assert_eq!(none.stdout, optimus_trace::encode(&[]));
    // No repeat is a usage error.
    let out = optimus(&["trace", "--workload", "flat", "--repeat", "0"], b"");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_image_service_gives_its_load_and_warns_near_capacity() {
    let service = |extra: &[&str]| {
        let mut args = vec![
            "sim",
            "--accel",
            "rpcacc",
            "--workload",
            "image-service",
            "--cores",
            "16",
        ];
        args.extend(extra);
        optimus(&args, b"")
    };
    // A table names what bounds each design and, under load, the offered utilisation.
    let idle = service(&[]);
    let text = String::from_utf8(idle.stdout).unwrap();
    assert!(
        text.lines().nth(1).unwrap().ends_with("bound") && text.contains("host cores"),
        "{text}"
    );
    let pcie = |r: &serde_json::Value| r["designs"][1]["requests_per_s"].as_f64().unwrap();
    let json = |out: Output| -> serde_json::Value { serde_json::from_slice(&out.stdout).unwrap() };
    let capacity = pcie(&json(service(&["--json"])));
    // Just under ProtoACC-PCIe's capacity: a warning on stderr, the numbers on stdout.
    let near = format!("{}", (0.99 * capacity).round());
    let out = service(&["--rate", &near, "--json"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        err.contains("protoacc_pcie") && err.contains("rho = 0.990") && err.contains("steady"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let r = json(out);
    let rho = r["designs"][1]["rho"].as_f64().unwrap();
    assert!((rho - 0.99).abs() < 1e-3, "{r}");
    assert_eq!(r["designs"][1]["under_load"]["rho"].as_f64(), Some(rho));
    // Far from every design's capacity, no warning.
    let calm = service(&["--rate", "20000"]);
    assert!(
        calm.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&calm.stderr)
    );
    assert!(String::from_utf8(calm.stdout).unwrap().contains("rho"));
    // A varied rate that is not a number is echoed as written.
    let bad = service(&["--vary", "rate=true"]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(1), "{err}");
    assert!(err.contains("not true") && !err.contains("NaN"), "{err}");
    let flag = service(&["--rate", "2.5e12"]);
    assert!(String::from_utf8_lossy(&flag.stderr).contains("not 2.5e12"));
}

const PEERS_THRIFT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/thrift/peers.thrift"
);
const MIXED_TBIN: &[u8] = include_bytes!("../../../testdata/thrift/mixed.tbin");

/// A file under a fresh temporary directory, written with `text`.
fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("optimus-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn protobuf_to_thrift_through_a_map_gives_apache_thrifts_bytes_and_back() {
    let map = temp_file(
        "to_thrift.toml",
        "[fields]\n\"header.retry\" = \"header.retry_\"\n",
    );
    let back = temp_file(
        "to_proto.toml",
        "[fields]\n\"header.retry_\" = \"header.retry\"\n",
    );
    let thrift = convert(
        "bench.Mixed",
        "protobuf",
        "thrift-binary",
        &[
            "--to-thrift",
            PEERS_THRIFT,
            "--to-type",
            "Mixed",
            "--map",
            map.to_str().unwrap(),
        ],
        MIXED,
    );
    assert!(
        thrift.status.success(),
        "{}",
        String::from_utf8_lossy(&thrift.stderr)
    );
    assert_eq!(thrift.stdout, MIXED_TBIN, "Apache Thrift's bytes");
    let proto = optimus(
        &[
            "convert",
            "--thrift",
            PEERS_THRIFT,
            "--type",
            "Mixed",
            "--from",
            "thrift-binary",
            "--to",
            "protobuf",
            "--to-proto",
            PEERS,
            "--to-type",
            "bench.Mixed",
            "--map",
            back.to_str().unwrap(),
        ],
        MIXED_TBIN,
    );
    assert!(
        proto.status.success(),
        "{}",
        String::from_utf8_lossy(&proto.stderr)
    );
    assert_eq!(proto.stdout, MIXED, "round trip");
}

/// Mixed's top-level title as JSON.
const TITLE: &str = "\"title\":\"tLmCbnCei6OmKEUSPgCS1gKC5AyLlL\"";

#[test]
fn transforms_apply_on_the_way_and_errors_name_the_field() {
    let t = temp_file(
        "t.toml",
        "[fields.\"header.origin\"]\nhash = \"sha256\"\n[fields.title]\ndrop = true\n\
         [fields.\"geo.lat\"]\nscale = 2\n[fields.note]\nredact = \"-\"\n",
    );
    let out = convert(
        "bench.Mixed",
        "protobuf",
        "json",
        &["--transform", t.to_str().unwrap()],
        MIXED,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plain = convert("bench.Mixed", "protobuf", "json", &[], MIXED);
    let (json, plain) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(plain.stdout).unwrap(),
    );
    assert!(plain.contains(TITLE) && !json.contains(TITLE), "{json}");
    assert!(json.contains("\"note\":\"-\""), "{json}");
    let origin = json.split("\"origin\":\"").nth(1).unwrap();
    assert!(origin[..64].bytes().all(|b| b.is_ascii_hexdigit()) && origin.as_bytes()[64] == b'"');
    let bad = temp_file("bad.toml", "[fields.\"header.nope\"]\ndrop = true\n");
    let err = convert(
        "bench.Mixed",
        "protobuf",
        "json",
        &["--transform", bad.to_str().unwrap()],
        MIXED,
    );
    assert!(!err.status.success());
    assert_eq!(
        String::from_utf8_lossy(&err.stderr).trim(),
        "error: Mixed.header.nope: no field `nope` in bench.MixedHeader (rule `header.nope`)"
    );
}

#[test]
fn schema_files_are_found_under_include_dirs_and_a_missing_one_names_every_place() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata");
    let ok = optimus(
        &[
            "convert",
            "--proto",
            "peers.proto",
            "-I",
            dir,
            "--type",
            "bench.Mixed",
            "--from",
            "protobuf",
            "--to",
            "text",
        ],
        MIXED,
    );
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8(ok.stdout).unwrap().contains("header {"));
    let missing = optimus(
        &[
            "convert",
            "--proto",
            "api.proto",
            "-I",
            "/nonexistent",
            "--type",
            "X",
            "--from",
            "protobuf",
            "--to",
            "json",
        ],
        b"",
    );
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr).trim(),
        "error: api.proto: not found (tried api.proto, /nonexistent/api.proto)"
    );
}
