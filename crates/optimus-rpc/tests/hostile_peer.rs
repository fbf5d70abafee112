//! A hostile peer in the shared-memory region: it claims a queue pair and writes garbage into
//! its rings (indices, headers, payloads, the completion ring's consumer index) while
//! well-behaved queue pairs keep calling. Every good call gets its own reply, the NIC thread
//! never panics, and a peer that publishes an impossible index is quarantined and counted.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use optimus_rpc::frame::{FrameHeader, FrameKind, CACHE_LINE};
use optimus_rpc::shm::{QP_CLIENT, QP_FREE, QP_QUARANTINED, QP_WORKER};
use optimus_rpc::{
    IdlePolicy, Nic, NicConfig, NoTransport, RegionLayout, RpcError, ShmRegion, Status, LOCAL_CONN,
};

/// Deterministic xorshift so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const RING_LINES: usize = 64;

fn cfg() -> NicConfig {
    NicConfig {
        layout: RegionLayout {
            n_qps: 4,
            ring_lines: RING_LINES,
        },
        max_payload: 1024,
        ..NicConfig::default()
    }
}

/// One attack on QP `qp`'s rings, chosen by `rng`.
fn attack(region: &ShmRegion, qp: usize, rng: &mut Rng) {
    let ring = region.layout().ring_bytes();
    let tx_lines = 2 * CACHE_LINE;
    match rng.below(6) {
        // Random bytes anywhere in the QP's rings.
        0 => {
            let len = 1 + rng.below(200) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            region.scribble(
                qp,
                rng.below(region.qp_rings_bytes() as u64) as usize,
                &bytes,
            );
        }
        // A random tx tail: anything from "one line more" to far past the ring.
        1 => {
            let tail = if rng.below(2) == 0 {
                rng.next()
            } else {
                rng.below(4 * RING_LINES as u64)
            };
            region.scribble(qp, 0, &tail.to_le_bytes());
        }
        // A well-formed header with a random length and kind, published.
        2 => {
            let mut h = FrameHeader::new(FrameKind::Request);
            h.conn_id = if rng.below(2) == 0 {
                LOCAL_CONN
            } else {
                rng.next() as u32
            };
            h.payload_len = match rng.below(3) {
                0 => rng.below(64) as u32,
                1 => rng.below(RING_LINES as u64 * 64) as u32,
                _ => rng.next() as u32,
            };
            let mut b = h.encode().to_vec();
            if rng.below(4) == 0 {
                let at = rng.below(b.len() as u64) as usize;
                b[at] ^= 1 << rng.below(8);
            }
            let line = rng.below(RING_LINES as u64) as usize;
            region.scribble(qp, tx_lines + line * CACHE_LINE, &b);
            let tail = (line + 1 + rng.below(8) as usize) as u64;
            region.scribble(qp, 0, &tail.to_le_bytes());
        }
        // The completion ring's consumer index (the NIC's producer reads it).
        3 => {
            let head = if rng.below(2) == 0 {
                rng.next()
            } else {
                rng.below(4 * RING_LINES as u64)
            };
            region.scribble(qp, ring + CACHE_LINE, &head.to_le_bytes());
        }
        // The tx consumer index and the rx producer index (the NIC's own ends: it must not
        // read them back as truth).
        4 => {
            region.scribble(qp, CACHE_LINE, &rng.next().to_le_bytes());
            region.scribble(qp, ring, &rng.next().to_le_bytes());
        }
        // Nothing: a peer that stalls.
        _ => {}
    }
}

/// Detaches QP `qp` (its hostile owner giving up), waits until the NIC freed it, and claims
/// it again as `role`; false if the NIC did not free it in time.
fn reclaim(region: &ShmRegion, qp: usize, role: u32) -> bool {
    region.detach(qp);
    let deadline = Instant::now() + Duration::from_secs(10);
    while region.qp_state(qp) != QP_FREE {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::yield_now();
    }
    region.claim_at(qp, role)
}

/// A hostile peer on its own thread: claims a QP as `role` and attacks it until `stop`,
/// starting over on the same QP each time the NIC quarantines it, counting its attacks in
/// `rounds`. Returns the quarantines.
fn hostile(
    region: Arc<ShmRegion>,
    role: u32,
    seed: u64,
    stop: Arc<AtomicBool>,
    rounds: Arc<AtomicU64>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let qp = region.claim(role).expect("a free QP for the hostile peer");
        let mut rng = Rng(seed);
        // A tail far past the ring is impossible: the first thing it does.
        region.scribble(qp, 0, &(1u64 << 40).to_le_bytes());
        let mut quarantines = 0;
        while !stop.load(Ordering::Relaxed) {
            rounds.fetch_add(1, Ordering::Relaxed);
            if region.qp_state(qp) == QP_QUARANTINED {
                quarantines += 1;
                assert!(
                    reclaim(&region, qp, role),
                    "NIC did not free the detached QP"
                );
            }
            attack(&region, qp, &mut rng);
            std::thread::yield_now();
        }
        quarantines
    })
}

/// Good calls at least, and hostile attacks at least, per test.
const CALLS: usize = 3000;
const ROUNDS: u64 = 20_000;

#[test]
fn a_client_qp_writing_garbage_cannot_stop_the_others() {
    let (mut nic, h) = Nic::new(NoTransport, cfg()).unwrap();
    nic.set_handler(echo);
    let nic = nic.spawn(None, IdlePolicy::default());
    let mut good = h.client(client_opts(1)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let seed = 0x9E37_79B9_7F4A_7C15;
    let evil = hostile(
        h.region().clone(),
        QP_CLIENT,
        seed,
        stop.clone(),
        rounds.clone(),
    );
    let mut resp = Vec::new();
    let mut i = 0;
    while i < CALLS || rounds.load(Ordering::Relaxed) < ROUNDS {
        i += 1;
        let req = payload(0, i);
        good.call(LOCAL_CONN, 0, &req, &mut resp)
            .unwrap_or_else(|e| panic!("good call {i} failed: {e}"));
        assert_eq!(resp, req, "call {i} got another call's reply");
    }
    stop.store(true, Ordering::Relaxed);
    let quarantines = evil.join().expect("hostile thread");
    let stats = nic.stop().stats();
    assert!(quarantines >= 1, "the impossible tail was not caught");
    assert!(stats.qps_quarantined >= quarantines);
    assert!(stats.corrupt_rings >= 1);
    eprintln!(
        "hostile client: {i} good calls, {} attacks, {quarantines} quarantines, {} corrupt rings, {} malformed frames",
        rounds.load(Ordering::Relaxed),
        stats.corrupt_rings,
        stats.dropped_malformed
    );
}

#[test]
fn a_worker_qp_writing_garbage_cannot_stop_the_others() {
    let (nic, h) = Nic::new(NoTransport, cfg()).unwrap();
    let nic = nic.spawn(None, IdlePolicy::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut worker = h.worker().unwrap();
    let s = stop.clone();
    let serve = std::thread::spawn(move || {
        let mut echo_h = echo;
        while !s.load(Ordering::Relaxed) {
            if worker.serve_once(&mut echo_h).expect("good worker") == 0 {
                std::thread::yield_now();
            }
        }
    });
    let rounds = Arc::new(AtomicU64::new(0));
    let seed = 0xD1B5_4A32_D192_ED03;
    let evil = hostile(
        h.region().clone(),
        QP_WORKER,
        seed,
        stop.clone(),
        rounds.clone(),
    );
    let mut good = h.client(client_opts(1)).unwrap();
    let mut unavailable = 0u64;
    let mut resp = Vec::new();
    let mut i = 0;
    while i < CALLS || rounds.load(Ordering::Relaxed) < ROUNDS {
        let req = payload(1, i);
        match good.call(LOCAL_CONN, 0, &req, &mut resp) {
            Ok(()) => {
                assert_eq!(resp, req, "call {i} got another call's reply");
                i += 1;
            }
            // A request the hostile worker held when it was quarantined: answered
            // `Unavailable` (one outcome), and the caller tries again.
            Err(RpcError::Status {
                status: Status::Unavailable,
                ..
            }) => unavailable += 1,
            Err(e) => panic!("good call {i} failed: {e}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let quarantines = evil.join().expect("hostile thread");
    serve.join().unwrap();
    let stats = nic.stop().stats();
    assert!(quarantines >= 1, "the hostile worker was never caught");
    assert!(stats.qps_quarantined >= quarantines);
    eprintln!(
        "hostile worker: {i} good calls, {} attacks, {quarantines} quarantines, \
         {unavailable} calls retried",
        rounds.load(Ordering::Relaxed)
    );
}

#[test]
fn a_client_whose_own_ring_is_corrupted_gets_disconnected_not_a_hang() {
    let (mut nic, h) = Nic::new(NoTransport, cfg()).unwrap();
    nic.set_handler(echo);
    let nic = nic.spawn(None, IdlePolicy::default());
    let mut other = h.client(client_opts(1)).unwrap();
    // A call timeout far longer than the test may take: the outcome must come from the
    // quarantine, not the clock.
    let mut victim = h
        .client(optimus_rpc::ClientOptions {
            call_timeout: Duration::from_secs(60),
            ..client_opts(1)
        })
        .unwrap();
    let mut resp = Vec::new();
    victim.call(LOCAL_CONN, 0, b"before", &mut resp).unwrap();
    // Something (a stray write, a broken peer) publishes an impossible tail on its tx ring.
    // (Before the victim's next publish overwrites it: wait for the NIC to see it.)
    h.region()
        .scribble(victim.qp(), 0, &(1u64 << 40).to_le_bytes());
    let deadline = Instant::now() + Duration::from_secs(10);
    while h.region().qp_state(victim.qp()) != QP_QUARANTINED {
        assert!(
            Instant::now() < deadline,
            "the impossible tail was not caught"
        );
        std::thread::yield_now();
    }
    let t0 = Instant::now();
    let r = victim.call(LOCAL_CONN, 0, b"after", &mut resp);
    assert!(
        matches!(r, Err(RpcError::Disconnected)),
        "expected Disconnected, got {r:?}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t0.elapsed()
    );
    assert_eq!(h.region().qp_state(victim.qp()), QP_QUARANTINED);
    // The other client never noticed.
    other.call(LOCAL_CONN, 0, b"still here", &mut resp).unwrap();
    assert_eq!(resp, b"still here");
    drop(victim);
    let stats = nic.stop().stats();
    assert_eq!(stats.qps_quarantined, 1);
}
