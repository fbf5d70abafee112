//! Generates optimus's typed views of the workloads with optimus-build (`$OUT_DIR/bench.rs`),
//! for the `optimus-generated` rows.
//!
//! Builds the Google protobuf C++ peer of `optimus bench` (`cpp/peer.cc` over the code protoc
//! generates from `testdata/peers.proto`) where protoc and libprotobuf are installed, and then
//! sets `cfg(cpp_peer)`; elsewhere the bench runs without it and the build says why in a
//! warning (scripts/test, which installs both, has the CLI tests fail then instead). Setting
//! `OPTIMUS_NO_CPP_PEER=1` leaves it out on purpose.
//!
//! Builds the Apache Thrift C++ peer (`cpp/thrift_peer.cc` over the code `thrift --gen
//! cpp:templates` generates from `testdata/thrift/peers.thrift`) where the Thrift compiler and
//! libthrift are installed, and then sets `cfg(thrift_peer)`; elsewhere it warns likewise and
//! the bench's Thrift cells run without it. `OPTIMUS_NO_THRIFT_PEER=1` leaves it out on
//! purpose; `OPTIMUS_REQUIRE_THRIFT_PEER=1` (scripts/test sets it, as it installs both) makes
//! optimus-bench's tests fail where it was not built.
//!
//! Where protoc is installed it also generates the buffa peer's types (owned messages, views
//! and their serde JSON) from the same `testdata/peers.proto` with buffa-build, and sets
//! `cfg(buffa_peer)`; elsewhere it warns likewise and the bench runs without buffa.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(cpp_peer)");
    println!("cargo::rustc-check-cfg=cfg(buffa_peer)");
    println!("cargo::rustc-check-cfg=cfg(thrift_peer)");
    println!("cargo:rerun-if-changed=cpp/thrift_peer.cc");
    println!("cargo:rerun-if-changed=../../testdata/thrift/peers.thrift");
    println!("cargo:rerun-if-env-changed=THRIFT");
    println!("cargo:rerun-if-env-changed=OPTIMUS_NO_THRIFT_PEER");
    println!("cargo:rerun-if-changed=cpp/peer.cc");
    println!("cargo:rerun-if-changed=../../testdata/peers.proto");
    println!("cargo:rerun-if-env-changed=PROTOC");
    println!("cargo:rerun-if-env-changed=OPTIMUS_NO_CPP_PEER");
    // optimus's own generated types for the workloads (`$OUT_DIR/bench.rs`): protox, no protoc.
    let testdata = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata");
    optimus_build::compile_protos(&[format!("{testdata}/peers.proto")], &[testdata])
        .expect("optimus-build compiles testdata/peers.proto");
    match generate_buffa_peer() {
        Ok(()) => println!("cargo:rustc-cfg=buffa_peer"),
        Err(why) => println!(
            "cargo:warning=optimus bench is built without its buffa peer: {why} \
             (install protobuf-compiler to measure it)"
        ),
    }
    if env::var_os("OPTIMUS_NO_THRIFT_PEER").is_none_or(|v| v == "0") {
        match build_thrift_peer() {
            Ok(()) => println!("cargo:rustc-cfg=thrift_peer"),
            Err(why) => println!(
                "cargo:warning=optimus bench is built without its Apache Thrift C++ peer: {why} \
                 (install thrift-compiler, libthrift-dev and libboost-dev to measure it)"
            ),
        }
    }
    if env::var_os("OPTIMUS_NO_CPP_PEER").is_some_and(|v| v != "0") {
        return;
    }
    match build_cpp_peer() {
        Ok(()) => println!("cargo:rustc-cfg=cpp_peer"),
        Err(why) => println!(
            "cargo:warning=optimus bench is built without its Google protobuf C++ peer: {why} \
             (install protobuf-compiler and libprotobuf-dev to measure it)"
        ),
    }
}

fn build_cpp_peer() -> Result<(), String> {
    let out = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let testdata = manifest.join("../../testdata");
    let lib_flags = protobuf_link_flags()?;
    let protoc = env::var("PROTOC").unwrap_or_else(|_| "protoc".into());
    let status = Command::new(&protoc)
        .arg(format!("--cpp_out={}", out.display()))
        .arg(format!("-I{}", testdata.display()))
        .arg("peers.proto")
        .status()
        .map_err(|e| format!("cannot run {protoc}: {e}"))?;
    if !status.success() {
        return Err(format!("{protoc} failed on peers.proto ({status})"));
    }
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .opt_level(2)
        .include(&out)
        .file(out.join("peers.pb.cc"))
        .file(manifest.join("cpp/peer.cc"))
        .warnings(false)
        .cargo_warnings(false)
        .try_compile("optimus_cpp_peer")
        .map_err(|e| {
            format!(
                "the C++ peer does not compile (protoc and libprotobuf of other versions?): {e}"
            )
        })?;
    for flag in lib_flags {
        println!("cargo:{flag}");
    }
    Ok(())
}

/// Generates the workloads' Thrift structs with `thrift --gen cpp:templates` (`$THRIFT` or the
/// one on the PATH) into `$OUT_DIR/thrift/` and compiles them with `cpp/thrift_peer.cc`.
fn build_thrift_peer() -> Result<(), String> {
    let out = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?).join("thrift");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let idl = manifest.join("../../testdata/thrift/peers.thrift");
    let lib_flags = link_flags("thrift", "libthrift.so", "thrift")?;
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let thrift = env::var("THRIFT").unwrap_or_else(|_| "thrift".into());
    let status = Command::new(&thrift)
        .args(["--gen", "cpp:templates", "-out"])
        .arg(&out)
        .arg(&idl)
        .status()
        .map_err(|e| format!("cannot run {thrift}: {e}"))?;
    if !status.success() {
        return Err(format!("{thrift} failed on peers.thrift ({status})"));
    }
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++17")
        .opt_level(2)
        .define("NDEBUG", None)
        .include(&out)
        .file(out.join("peers_types.cpp"))
        .file(manifest.join("cpp/thrift_peer.cc"))
        .warnings(false)
        .cargo_warnings(false);
    // Older compilers write the constants apart, even for a program without any.
    if out.join("peers_constants.cpp").exists() {
        build.file(out.join("peers_constants.cpp"));
    }
    build.try_compile("optimus_thrift_peer").map_err(|e| {
        format!(
            "the Thrift C++ peer does not compile (thrift and libthrift of other versions?): {e}"
        )
    })?;
    for flag in lib_flags {
        println!("cargo:{flag}");
    }
    Ok(())
}

/// Generates buffa's types for `testdata/peers.proto` into `$OUT_DIR/buffa/` (`mod.rs` includes
/// them); buffa-build runs protoc (`$PROTOC` or the one on the PATH) for the descriptors.
fn generate_buffa_peer() -> Result<(), String> {
    let out = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?).join("buffa");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let testdata = manifest.join("../../testdata");
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    buffa_build::Config::new()
        .files(&[testdata.join("peers.proto")])
        .includes(&[&testdata])
        .out_dir(&out)
        .generate_views(true)
        .generate_json(true)
        .include_file("mod.rs")
        .compile()
        .map_err(|e| format!("buffa-build failed on peers.proto: {e}"))
}

/// How to link libprotobuf: pkg-config's answer, else the library in a system directory.
fn protobuf_link_flags() -> Result<Vec<String>, String> {
    link_flags("protobuf", "libprotobuf.so", "protobuf")
}

/// How to link the library pkg-config knows as `package`: pkg-config's answer, else `file` in a
/// system directory (linked as `-l{lib}`).
fn link_flags(package: &str, file: &str, lib: &str) -> Result<Vec<String>, String> {
    if let Ok(o) = Command::new("pkg-config")
        .args(["--libs", package])
        .output()
    {
        if o.status.success() {
            let libs = String::from_utf8_lossy(&o.stdout);
            return Ok(libs
                .split_whitespace()
                .filter_map(|f| {
                    f.strip_prefix("-L")
                        .map(|d| format!("rustc-link-search=native={d}"))
                        .or_else(|| f.strip_prefix("-l").map(|l| format!("rustc-link-lib={l}")))
                })
                .collect());
        }
    }
    let dirs = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib",
        "/usr/local/lib",
    ];
    dirs.iter()
        .map(Path::new)
        .find(|d| d.join(file).exists())
        .map(|d| {
            vec![
                format!("rustc-link-search=native={}", d.display()),
                format!("rustc-link-lib={lib}"),
            ]
        })
        .ok_or_else(|| format!("no lib{lib} found (pkg-config or a system library directory)"))
}
