//! Cross-process attach: a server process owns the NIC and a region in `/dev/shm` (or a memfd);
//! a client process maps the region by path, claims a QP and calls the NIC's service.
//!
//! The test binary is both: the parent runs `cross_process_calls`, which starts this same binary
//! again with `OPTIMUS_RPC_CHILD_REGION` set, so `child_client` acts as the other process.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use optimus_rpc::transport::NoTransport;
use optimus_rpc::{IdlePolicy, Nic, RegionLayout, RpcClient, ShmRegion, LOCAL_CONN};

const CHILD_ENV: &str = "OPTIMUS_RPC_CHILD_REGION";
const CHILD_CALLS: usize = 5000;

fn run_child(region: &Path) {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args(["--exact", "child_client", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, region)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "the child ran its test"
    );
}

fn serve_and_spawn(region: std::sync::Arc<ShmRegion>) {
    let path = region.path().expect("region has a path").to_path_buf();
    let (mut nic, _h) = Nic::with_region(NoTransport, config(2), region).unwrap();
    nic.set_handler(echo);
    let nic = nic.spawn(None, IdlePolicy::default());
    run_child(&path);
    run_child(&path); // a second process reuses the QP the first one gave back
    let s = nic.stop().stats();
    assert_eq!(s.requests_served as usize, 2 * (CHILD_CALLS + 1));
}

#[test]
fn cross_process_calls_through_dev_shm() {
    let dir = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("optimus-rpc-test-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let region = ShmRegion::create(
        &path,
        RegionLayout {
            n_qps: 2,
            ring_lines: 1024,
        },
    )
    .unwrap();
    serve_and_spawn(region);
    assert!(!path.exists(), "the region file is removed with the region");
}

#[test]
fn cross_process_calls_through_memfd() {
    let region = ShmRegion::memfd(
        "optimus-rpc-test",
        RegionLayout {
            n_qps: 2,
            ring_lines: 1024,
        },
    )
    .unwrap();
    serve_and_spawn(region);
}

/// The other process's side; does nothing unless started by the tests above.
#[test]
fn child_client() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let mut c = RpcClient::attach_path(Path::new(&path), client_opts(4)).expect("attach");
    assert_eq!(
        closed_loop(&mut c, 7, LOCAL_CONN, CHILD_CALLS, 8),
        CHILD_CALLS
    );
    let mut out = Vec::new();
    c.call(LOCAL_CONN, 0, b"sync from another process", &mut out)
        .unwrap();
    assert_eq!(out, b"sync from another process");
    // Dropping the client hands the QP back; give the NIC a moment to see it before exiting.
    drop(c);
    std::thread::sleep(Duration::from_millis(5));
}
