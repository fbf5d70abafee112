//! Fault and bad-input tests.
//!
//! - A lossy network (drops, duplicates, delays, reorders, corrupts) between two NICs: every
//!   call completes exactly once, with its own payload or a timeout, and the handler runs at
//!   most once per call.
//! - Mutated frames (truncated, corrupted, oversized, wrong magic/kind/flags, trailing bytes,
//!   no checksum, random bytes) thrown at a server by a raw endpoint: the server drops and
//!   counts every one, answers the valid ones, and keeps serving a well-behaved client.
//! - A server that restarts: calls on the old connection fail with `Disconnected`, never run.
//! - A server's copies of its responses stay within their byte budget; a repeat of a call whose
//!   copy went is not answered and does not run again.
//! - A server answers Connect frames up to its connection limit, and again once one closes.

mod common;

use std::collections::HashMap;
use std::net::UdpSocket;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use optimus_rpc::frame::{self, FrameHeader, FrameKind, HEADER_BYTES};
use optimus_rpc::transport::lossy::Lossy;
use optimus_rpc::{
    nic::MAX_CLIENT_CONNS, IdlePolicy, LoopbackNet, LossConfig, Nic, NicConfig, RpcError, Status,
    Transport, Udp,
};

#[test]
fn lossy_network_gives_each_call_exactly_one_outcome() {
    const CLIENTS: usize = 3;
    const CALLS: usize = 400;
    let net = LoopbackNet::new();
    let loss = LossConfig {
        drop: 0.15,
        duplicate: 0.15,
        delay: 0.2,
        max_delay_polls: 40,
        corrupt: 0.03,
        seed: 7,
    };
    let server_t = Lossy::new(net.endpoint(), LossConfig { seed: 11, ..loss });
    let client_t = Lossy::new(net.endpoint(), loss);
    let addr = server_t.local_addr();
    let cfg = NicConfig {
        timeout: Duration::from_millis(3),
        max_retries: 8,
        ..config(CLIENTS)
    };

    let runs: Arc<Mutex<HashMap<Vec<u8>, u32>>> = Arc::default();
    let (mut server, _) = Nic::new(server_t, cfg).unwrap();
    let r = runs.clone();
    server.set_handler(move |_m: u16, req: &[u8], resp: &mut Vec<u8>| {
        *r.lock().unwrap().entry(req.to_vec()).or_default() += 1;
        resp.extend_from_slice(req);
        Status::Ok
    });
    let server = server.spawn(None, IdlePolicy::default());
    let (client, ch) = Nic::new(client_t, cfg).unwrap();
    let client = client.spawn(None, IdlePolicy::default());
    let conn = ch
        .connect(&addr, Duration::from_secs(20))
        .expect("connect over a lossy network");

    let threads: Vec<_> = (0..CLIENTS)
        .map(|t| {
            let ch = ch.clone();
            std::thread::spawn(move || {
                let mut c = ch.client(client_opts(4)).unwrap();
                let mut outstanding: HashMap<u64, usize> = HashMap::new();
                let (mut next, mut ok, mut timed_out) = (0, 0, 0);
                let mut spins = 0u32;
                while ok + timed_out < CALLS {
                    while next < CALLS && outstanding.len() < 8 {
                        let id = c.submit(conn, 0, &payload(t, next)).expect("submit");
                        outstanding.insert(id, next);
                        next += 1;
                    }
                    c.flush();
                    let n = c.poll(|id, r| {
                        let i = outstanding.remove(&id).expect("a call completed twice");
                        match r {
                            Ok(p) => {
                                assert_eq!(p, payload(t, i).as_slice());
                                ok += 1;
                            }
                            Err(RpcError::Timeout) => timed_out += 1,
                            Err(e) => panic!("unexpected outcome {e}"),
                        }
                    });
                    spins = if n == 0 { spins + 1 } else { 0 };
                    IdlePolicy::default().wait(spins);
                }
                (ok, timed_out)
            })
        })
        .collect();
    let mut oks = 0;
    for t in threads {
        let (ok, to) = t.join().expect("client thread");
        assert_eq!(ok + to, CALLS);
        oks += ok;
    }
    let cs = client.stop().stats();
    let server = server.stop();
    let ss = server.stats();
    let loss_done = server.transport().stats();
    let runs = runs.lock().unwrap();
    assert!(
        runs.values().all(|&n| n == 1),
        "a handler ran twice for one call"
    );
    assert!(runs.len() >= oks, "every successful call ran its handler");
    assert!(
        oks > CLIENTS * CALLS / 2,
        "the network is lossy, not dead: {oks} ok"
    );
    assert!(
        cs.retransmits > 0 && ss.duplicate_requests > 0,
        "faults were exercised: {cs:?} {ss:?}"
    );
    assert!(loss_done.dropped > 0 && loss_done.duplicated > 0 && loss_done.delayed > 0);
    assert!(
        ss.dropped_checksum + cs.dropped_checksum > 0,
        "corruption was caught"
    );
}

/// Every way we know to spoil a valid request frame, each a frame the server must drop.
fn mutations(valid: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for len in [0, 1, 10, HEADER_BYTES - 1, HEADER_BYTES, valid.len() - 1] {
        out.push(valid[..len].to_vec()); // truncated
    }
    for byte in 0..valid.len() {
        let mut f = valid.to_vec();
        f[byte] ^= 1 << (byte % 8); // corrupted, one flip per byte
        out.push(f);
    }
    let mut f = valid.to_vec();
    f.push(0);
    out.push(f); // trailing byte
    let h = FrameHeader::decode(valid).unwrap();
    out.push(sealed(FrameHeader { magic: 0xBEEF, ..h }, b"x"));
    out.push(sealed(FrameHeader { version: 9, ..h }, b"x"));
    out.push(sealed(FrameHeader { kind: 0x42, ..h }, b"x"));
    out.push(sealed(
        FrameHeader {
            kind: FrameKind::Pad as u8,
            ..h
        },
        b"x",
    ));
    out.push(sealed(FrameHeader { flags: 0x80, ..h }, b"x"));
    out.push(sealed(h, &vec![7u8; 2000])); // oversized for this server (max 1024)
    let mut unsealed = FrameHeader {
        payload_len: 1,
        flags: 0,
        checksum: 0,
        ..h
    }
    .encode()
    .to_vec();
    unsealed.push(1);
    out.push(unsealed); // no checksum on a network frame
    let mut x = 0x1234_5678_9ABC_DEF0u64;
    for n in 0..50 {
        let f: Vec<u8> = (0..(n * 7 % 120))
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        out.push(f); // random bytes
    }
    out
}

#[test]
fn mutated_frames_are_dropped_and_counted_while_serving_others() {
    let net = LoopbackNet::new();
    let st = net.endpoint();
    let addr = st.local_addr();
    let cfg = NicConfig {
        max_payload: 1024,
        ..config(1)
    };
    let (server, sh) = start(st, cfg, true);
    let (client, ch) = start(net.endpoint(), config(1), false);
    let conn = ch.connect(&addr, Duration::from_secs(10)).unwrap();

    // The attacker: a raw endpoint that speaks frames by hand.
    let mut raw = RawPeer::new(&net, &addr);
    let hello = sealed(
        FrameHeader {
            request_id: 99,
            aux: 1,
            ..FrameHeader::new(FrameKind::Connect)
        },
        b"",
    );
    raw.send(&hello);
    let mut server_conn = None;
    for _ in 0..100_000 {
        for f in raw.received() {
            let (h, k, _) = frame::check_frame(&f, 1 << 20).unwrap();
            if k == FrameKind::ConnectAck {
                server_conn = Some(h.conn_id);
            }
        }
        if server_conn.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    let server_conn = server_conn.expect("handshake");
    let valid = sealed(
        FrameHeader {
            conn_id: server_conn,
            request_id: 1,
            aux: 1,
            ..FrameHeader::new(FrameKind::Request)
        },
        b"valid request payload",
    );
    let bad = mutations(&valid);

    // A well-behaved client keeps calling while the bad frames arrive.
    let good = std::thread::spawn(move || {
        let mut c = ch.client(client_opts(1)).unwrap();
        closed_loop(&mut c, 0, conn, 2000, 4)
    });
    for chunk in bad.chunks(64) {
        chunk.iter().for_each(|f| raw.send(f));
        std::thread::sleep(Duration::from_micros(200));
    }
    raw.send(&valid);
    let mut answered = false;
    for _ in 0..100_000 {
        for f in raw.received() {
            let (h, k, p) = frame::check_frame(&f, 1 << 20).unwrap();
            if k == FrameKind::Response && h.request_id == 1 {
                assert_eq!(p, b"valid request payload");
                answered = true;
            }
        }
        if answered {
            break;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    assert!(
        answered,
        "the valid request after the mutations was answered"
    );
    assert_eq!(good.join().expect("good client"), 2000);
    let s = server.stop().stats();
    drop(sh);
    client.stop();
    let dropped = s.dropped_malformed + s.dropped_checksum + s.dropped_oversized;
    assert_eq!(
        dropped as usize,
        bad.len(),
        "every bad frame dropped and counted: {s:?}"
    );
    assert!(s.dropped_checksum > 0 && s.dropped_malformed > 0 && s.dropped_oversized > 0);
    assert_eq!(net.dropped(), 0);
}

#[test]
fn garbage_datagrams_do_not_stop_a_udp_server() {
    let st = Udp::bind("127.0.0.1:0").unwrap();
    let addr = st.local_addr();
    let (server, _) = start(st, config(1), true);
    let (client, ch) = start(Udp::bind("127.0.0.1:0").unwrap(), config(1), false);
    let conn = ch.connect(&addr, Duration::from_secs(10)).unwrap();
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let valid = sealed(FrameHeader::new(FrameKind::Request), b"hello");
    let bad = mutations(&valid);
    for f in &bad {
        sock.send_to(f, &addr).unwrap();
    }
    let mut c = ch.client(client_opts(1)).unwrap();
    assert_eq!(closed_loop(&mut c, 0, conn, 500, 2), 500);
    drop(c);
    client.stop();
    let s = server.stop().stats();
    // The kernel may drop datagrams under load, so only require that drops were counted and
    // nothing bad was served.
    assert!(s.dropped_malformed + s.dropped_checksum > 0, "{s:?}");
    assert_eq!(s.requests_served, 500, "only the good client's calls ran");
}

#[test]
fn restarted_server_answers_old_connections_with_disconnected() {
    let sock_addr = {
        let s = Udp::bind("127.0.0.1:0").unwrap();
        s.local_addr()
    };
    let (server, _) = start(Udp::bind(&sock_addr).unwrap(), config(1), true);
    let (client, ch) = start(Udp::bind("127.0.0.1:0").unwrap(), config(1), false);
    let conn = ch.connect(&sock_addr, Duration::from_secs(10)).unwrap();
    let mut c = ch.client(client_opts(1)).unwrap();
    let mut out = Vec::new();
    c.call(conn, 0, b"first life", &mut out).unwrap();
    let first = server.stop().stats();
    assert_eq!(first.requests_served, 1);

    let (server2, _) = start(Udp::bind(&sock_addr).unwrap(), config(1), true);
    assert!(matches!(
        c.call(conn, 0, b"second life", &mut out),
        Err(RpcError::Disconnected)
    ));
    // The connection is now closed on the client side too; a new one works.
    assert!(matches!(
        c.call(conn, 0, b"again", &mut out),
        Err(RpcError::Disconnected)
    ));
    let conn2 = ch.connect(&sock_addr, Duration::from_secs(10)).unwrap();
    c.call(conn2, 0, b"new connection", &mut out).unwrap();
    assert_eq!(out, b"new connection");
    drop(c);
    client.stop();
    let s2 = server2.stop().stats();
    assert_eq!(s2.requests_served, 1, "the old connection's call never ran");
    assert_eq!(s2.unknown_conn, 1);
}

#[test]
fn unreachable_server_times_out_each_call_once() {
    // Nobody listens at this address: connect fails, and calls on a connection whose server
    // vanished end in Timeout exactly once.
    let dead = {
        let s = Udp::bind("127.0.0.1:0").unwrap();
        s.local_addr()
    };
    let cfg = NicConfig {
        timeout: Duration::from_millis(2),
        max_retries: 2,
        ..config(1)
    };
    let (client, ch) = start(Udp::bind("127.0.0.1:0").unwrap(), cfg, false);
    assert!(matches!(
        ch.connect(&dead, Duration::from_secs(5)),
        Err(RpcError::Timeout)
    ));

    let (server, _) = start(Udp::bind(&dead).unwrap(), config(1), true);
    let conn = ch.connect(&dead, Duration::from_secs(10)).unwrap();
    server.stop();
    let mut c = ch.client(client_opts(1)).unwrap();
    let results = Arc::new(Mutex::new(Vec::new()));
    for i in 0..20u32 {
        let r = results.clone();
        c.call_async(conn, 0, &i.to_le_bytes(), move |x| {
            r.lock().unwrap().push((i, x.err()))
        })
        .unwrap();
    }
    c.flush();
    while results.lock().unwrap().len() < 20 {
        c.poll(|_, _| {});
        std::thread::sleep(Duration::from_micros(100));
    }
    std::thread::sleep(Duration::from_millis(20));
    c.poll(|_, _| {});
    let r = results.lock().unwrap();
    assert_eq!(r.len(), 20, "exactly one outcome each");
    assert!(r.iter().all(|(_, e)| matches!(e, Some(RpcError::Timeout))));
    drop(c);
    assert_eq!(client.stop().stats().timeouts, 20);
}

#[test]
fn tcp_server_going_away_fails_calls_in_flight_once() {
    // The server hands requests to a worker that never answers; then the whole server goes away.
    let st = optimus_rpc::Tcp::listen("127.0.0.1:0").unwrap();
    let addr = st.local_addr();
    let (server, sh) = start(st, config(1), false);
    let silent_worker = sh.worker().unwrap();
    let (client, ch) = start(optimus_rpc::Tcp::client(), config(1), false);
    let conn = ch.connect(&addr, Duration::from_secs(10)).unwrap();
    let mut c = ch.client(client_opts(8)).unwrap();
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    for i in 0..16u32 {
        let o = outcomes.clone();
        c.call_async(conn, 0, &i.to_le_bytes(), move |r| {
            o.lock().unwrap().push((i, r.err()))
        })
        .unwrap();
    }
    c.flush();
    // Let the requests reach the worker's ring, then take the server down.
    while server_pending(&sh) < 16 {
        c.poll(|_, _| {});
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(silent_worker);
    drop(server);
    drop(sh);
    for _ in 0..20_000 {
        c.poll(|_, _| {});
        if outcomes.lock().unwrap().len() == 16 {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    std::thread::sleep(Duration::from_millis(20));
    c.poll(|_, _| {});
    let o = outcomes.lock().unwrap();
    assert_eq!(o.len(), 16, "every call in flight ended exactly once");
    assert!(
        o.iter().all(|(_, e)| matches!(
            e,
            Some(RpcError::Disconnected) | Some(RpcError::Status { .. })
        )),
        "{o:?}"
    );
    drop(c);
    client.stop();
}

fn server_pending(h: &optimus_rpc::NicHandle) -> u64 {
    // Requests served counts hand-offs to workers too; stats are published at control passes.
    h.stats().requests_served
}

#[test]
fn worker_leaving_answers_its_requests_unavailable() {
    let (nic, h) = start(optimus_rpc::transport::NoTransport, config(2), false);
    let w = h.worker().unwrap();
    let mut c = h.client(client_opts(1)).unwrap();
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    for i in 0..8u32 {
        let o = outcomes.clone();
        c.call_async(optimus_rpc::LOCAL_CONN, 0, &i.to_le_bytes(), move |r| {
            o.lock().unwrap().push(r.err())
        })
        .unwrap();
    }
    c.flush();
    while h.stats().requests_served < 8 {
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(w); // leaves without answering
    while outcomes.lock().unwrap().len() < 8 {
        c.poll(|_, _| {});
        std::thread::sleep(Duration::from_micros(200));
    }
    let o = outcomes.lock().unwrap();
    assert!(
        o.iter().all(|e| matches!(
            e,
            Some(RpcError::Status {
                status: Status::Unavailable,
                ..
            })
        )),
        "{o:?}"
    );
    drop(c);
    nic.stop();
}

/// Outcomes of calls: the response length or the error.
type Outcomes = Arc<Mutex<Vec<Result<usize, RpcError>>>>;

/// A NIC driven by hand with a worker whose answers (4 lines) outgrow its requests (1 line), so
/// the worker's response ring fills while the NIC stands still.
fn stalled_worker_setup() -> (
    Nic<optimus_rpc::transport::NoTransport>,
    optimus_rpc::Worker,
    optimus_rpc::RpcClient,
    Outcomes,
) {
    let cfg = NicConfig {
        layout: optimus_rpc::RegionLayout {
            n_qps: 2,
            ring_lines: 64,
        },
        ..NicConfig::default()
    };
    let (mut nic, h) = Nic::new(optimus_rpc::transport::NoTransport, cfg).unwrap();
    let w = h.worker().unwrap();
    let mut c = h.client(client_opts(1)).unwrap();
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    for _ in 0..CALLS_TO_STALLED_WORKER {
        let o = outcomes.clone();
        c.call_async(optimus_rpc::LOCAL_CONN, 0, &[], move |r| {
            o.lock().unwrap().push(r.map(<[u8]>::len))
        })
        .unwrap();
    }
    c.flush();
    for _ in 0..4 {
        nic.poll_once();
    }
    assert_eq!(nic.stats().requests_served, CALLS_TO_STALLED_WORKER as u64);
    (nic, w, c, outcomes)
}

const CALLS_TO_STALLED_WORKER: usize = 24;

fn big_answer(_m: u16, _req: &[u8], resp: &mut Vec<u8>) -> Status {
    resp.resize(200, 7);
    Status::Ok
}

#[test]
fn worker_facing_a_dead_nic_with_a_full_ring_gives_up() {
    let (nic, mut w, c, _) = stalled_worker_setup();
    w.set_nic_timeout(Duration::from_millis(50));
    let t0 = std::time::Instant::now();
    let r = w.serve_once(&mut big_answer);
    assert!(matches!(r, Err(RpcError::Disconnected)), "{r:?}");
    assert!(t0.elapsed() < Duration::from_secs(20), "bounded wait");
    drop((nic, w, c));
}

#[test]
fn worker_stopped_while_its_ring_is_full_leaves_every_call_one_outcome() {
    let (mut nic, mut w, mut c, outcomes) = stalled_worker_setup();
    w.set_nic_timeout(Duration::from_secs(3600)); // only the stop flag may end the wait
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        s2.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    w.run(&mut big_answer, &stop, IdlePolicy::default())
        .expect("stopped, not lost");
    stopper.join().unwrap();
    // The NIC hands on what fitted (the caller reading as it goes), then the worker leaves
    // holding the rest.
    for _ in 0..64 {
        nic.poll_once();
        c.poll(|_, _| {});
    }
    drop(w);
    for _ in 0..10_000 {
        nic.poll_once();
        c.poll(|_, _| {});
        if outcomes.lock().unwrap().len() >= CALLS_TO_STALLED_WORKER {
            break;
        }
    }
    let o = outcomes.lock().unwrap();
    assert_eq!(
        o.len(),
        CALLS_TO_STALLED_WORKER,
        "each call ended exactly once"
    );
    let answered = o.iter().filter(|r| matches!(r, Ok(200))).count();
    let unavailable = o
        .iter()
        .filter(|r| {
            matches!(
                r,
                Err(RpcError::Status {
                    status: Status::Unavailable,
                    ..
                })
            )
        })
        .count();
    assert!(answered > 0 && unavailable > 0, "{o:?}");
    assert_eq!(answered + unavailable, CALLS_TO_STALLED_WORKER, "{o:?}");
}

/// A client whose completion ring holds 8 frames makes `n` calls on `conn`, runs `then`, and
/// reads nothing until every call has ended at the NIC; then it reads them all. Returns each
/// call's outcome.
fn calls_with_a_full_completion_ring(
    ch: &optimus_rpc::NicHandle,
    conn: u32,
    n: u32,
    then: impl FnOnce(),
    ended: impl Fn() -> bool,
) -> Vec<(u32, Result<Vec<u8>, RpcError>)> {
    let mut c = ch.client(client_opts(4)).unwrap();
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    for i in 0..n {
        let payload = i.to_le_bytes();
        loop {
            let o = outcomes.clone();
            match c.call_async(conn, 0, &payload, move |r| {
                o.lock().unwrap().push((i, r.map(|b| b.to_vec())))
            }) {
                Ok(_) => break,
                // The request ring is full: the NIC takes more once it has room. Reading no
                // completions here is the point of the test.
                Err(RpcError::Backpressure) => {
                    c.flush();
                    std::thread::sleep(Duration::from_micros(100));
                }
                Err(e) => panic!("call {i}: {e}"),
            }
        }
    }
    c.flush();
    then();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !ended() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(c.in_flight() > 0 && outcomes.lock().unwrap().is_empty());
    // Reading gets its own time: on a loaded machine the wait above can take most of its own.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while outcomes.lock().unwrap().len() < n as usize && std::time::Instant::now() < deadline {
        c.poll(|_, _| {});
        std::thread::sleep(Duration::from_micros(100));
    }
    std::thread::sleep(Duration::from_millis(20));
    c.poll(|_, _| {});
    let o = std::mem::take(&mut *outcomes.lock().unwrap());
    o
}

fn small_rings() -> NicConfig {
    let mut cfg = config(1);
    cfg.layout.ring_lines = 8;
    cfg
}

#[test]
fn answers_wait_for_a_client_that_stops_reading() {
    // A server worker holds 100 requests, then answers them all at once over TCP while the
    // caller's completion ring has room for 8: the caller's NIC queues the rest, takes no new
    // requests from that caller meanwhile, and loses none.
    let st = optimus_rpc::Tcp::listen("127.0.0.1:0").unwrap();
    let addr = st.local_addr();
    let (server, sh) = start(st, config(1), false);
    let mut worker = sh.worker().unwrap();
    let (client, ch) = start(optimus_rpc::Tcp::client(), small_rings(), false);
    let conn = ch.connect(&addr, Duration::from_secs(10)).unwrap();
    let answer_all = || {
        while server_pending(&sh) < 100 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut answered = 0;
        while answered < 100 {
            answered += worker.serve_once(&mut echo).unwrap();
        }
    };
    let delivered = || ch.stats().responses_delivered >= 100;
    let o = calls_with_a_full_completion_ring(&ch, conn, 100, answer_all, delivered);
    assert_eq!(o.len(), 100, "each call ends exactly once");
    for (i, r) in &o {
        assert_eq!(
            r.as_deref().ok(),
            Some(&i.to_le_bytes()[..]),
            "call {i}: {r:?}"
        );
    }
    assert!(ch.stats().backpressure > 0, "the completion ring was full");
    drop(worker);
    client.stop();
    server.stop();
}

#[test]
fn timeouts_wait_for_a_client_that_stops_reading() {
    // 100 calls to a server that vanished all time out at once; 8 fit the completion ring.
    let (server, sh) = start(Udp::bind("127.0.0.1:0").unwrap(), config(1), true);
    let addr = sh.local_addr().to_string();
    let cfg = NicConfig {
        timeout: Duration::from_millis(2),
        max_retries: 1,
        ..small_rings()
    };
    let (client, ch) = start(Udp::bind("127.0.0.1:0").unwrap(), cfg, false);
    let conn = ch.connect(&addr, Duration::from_secs(10)).unwrap();
    server.stop();
    let o = calls_with_a_full_completion_ring(&ch, conn, 100, || {}, || ch.stats().timeouts >= 100);
    assert_eq!(o.len(), 100, "each call ends exactly once");
    assert!(o.iter().all(|(_, r)| matches!(r, Err(RpcError::Timeout))));
    client.stop();
}

#[test]
fn a_closed_connection_fails_every_call_of_a_client_that_stops_reading() {
    // 100 calls in flight on a connection the client closes: each fails `Disconnected` once,
    // though only 8 completions fit the caller's ring when the NIC fails them all at once.
    let (server, sh) = start(Udp::bind("127.0.0.1:0").unwrap(), config(1), true);
    let addr = sh.local_addr().to_string();
    let (client, ch) = start(Udp::bind("127.0.0.1:0").unwrap(), small_rings(), false);
    let conn = ch.connect(&addr, Duration::from_secs(10)).unwrap();
    server.stop();
    let o = calls_with_a_full_completion_ring(
        &ch,
        conn,
        100,
        || ch.close(conn),
        || ch.stats().conns_closed >= 1,
    );
    assert_eq!(o.len(), 100, "each call ends exactly once");
    assert!(
        o.iter()
            .all(|(_, r)| matches!(r, Err(RpcError::Disconnected))),
        "{o:?}"
    );
    client.stop();
}

#[test]
fn a_server_keeps_copies_of_its_responses_within_its_budget() {
    // Five calls of 100-byte echoes (132-byte frames) on one connection, with room for three
    // copies: the two oldest go; a retransmission of one of them is not answered and does not
    // run again, a retransmission of a kept one gets its copy.
    let net = LoopbackNet::new();
    let st = net.endpoint();
    let addr = st.local_addr();
    let cfg = NicConfig {
        response_cache_bytes: 3 * (HEADER_BYTES + 100),
        ..config(1)
    };
    let (mut nic, _h) = Nic::new(st, cfg).unwrap();
    let runs = Arc::new(Mutex::new(0u32));
    let r = runs.clone();
    nic.set_handler(move |_m: u16, req: &[u8], resp: &mut Vec<u8>| {
        *r.lock().unwrap() += 1;
        resp.extend_from_slice(req);
        Status::Ok
    });
    let mut raw = RawPeer::new(&net, &addr);
    let mut exchange = |f: Vec<u8>| {
        raw.send(&f);
        nic.poll_once();
        (raw.received(), nic.stats())
    };
    let hello = FrameHeader {
        request_id: 7,
        aux: 1,
        ..FrameHeader::new(FrameKind::Connect)
    };
    let (got, _) = exchange(sealed(hello, b""));
    let conn_id = frame::check_frame(&got[0], 1 << 20).unwrap().0.conn_id;
    let request = |seq: u64| {
        let h = FrameHeader {
            conn_id,
            request_id: seq,
            ..FrameHeader::new(FrameKind::Request)
        };
        sealed(h, &[seq as u8; 100])
    };
    for seq in 1..=5 {
        let (got, _) = exchange(request(seq));
        assert_eq!(got.len(), 1);
    }
    let (got, s) = exchange(request(1));
    assert!(got.is_empty(), "the dropped copy is not answered");
    assert_eq!((s.responses_evicted, s.cached_response_bytes), (2, 3 * 132));
    assert_eq!(s.duplicate_requests, 1);
    let (got, s) = exchange(request(5));
    let (h, _, payload) = frame::check_frame(&got[0], 1 << 20).unwrap();
    assert_eq!((h.request_id, payload), (5, &[5u8; 100][..]));
    assert_eq!(s.duplicate_requests, 2);
    assert_eq!(*runs.lock().unwrap(), 5, "each call ran once");
}

#[test]
fn a_server_answers_connects_up_to_its_limit() {
    let net = LoopbackNet::new();
    let st = net.endpoint();
    let addr = st.local_addr();
    let cfg = NicConfig {
        max_server_conns: 3,
        ..config(1)
    };
    let (mut nic, _h) = Nic::new(st, cfg).unwrap();
    nic.set_handler(echo);
    let mut raw = RawPeer::new(&net, &addr);
    let mut send = |kind, conn_id, nonce| {
        let h = FrameHeader {
            conn_id,
            request_id: nonce,
            aux: 1,
            ..FrameHeader::new(kind)
        };
        raw.send(&sealed(h, b""));
        nic.poll_once();
        let acks: Vec<u32> = raw
            .received()
            .iter()
            .map(|f| frame::check_frame(f, 1 << 20).unwrap().0.conn_id)
            .collect();
        (acks, nic.stats())
    };
    let mut ids = Vec::new();
    for nonce in 0..5 {
        ids.extend(send(FrameKind::Connect, 0, nonce).0);
    }
    assert_eq!(ids.len(), 3, "the fourth and fifth are not answered");
    let (again, s) = send(FrameKind::Connect, 0, 1);
    assert_eq!(
        again,
        vec![ids[1]],
        "a repeated Connect of an open connection is answered"
    );
    assert_eq!((s.conns_opened, s.conns_refused), (3, 2));
    send(FrameKind::Close, ids[0], 0);
    let (next, s) = send(FrameKind::Connect, 0, 9);
    assert_eq!(next.len(), 1, "a closed connection makes room");
    assert_eq!((s.conns_opened, s.conns_closed, s.conns_refused), (4, 1, 2));
}

#[test]
fn a_client_reconnecting_reuses_its_closed_connections() {
    let (server, client, ch, addr) = loopback_pair();
    let mut c = ch.client(client_opts(1)).unwrap();
    let mut out = Vec::new();
    let mut handles = std::collections::HashSet::new();
    let first = ch.connect(&addr, Duration::from_secs(10)).unwrap();
    let mut last = first;
    for i in 0..2000u32 {
        let conn = ch.connect(&addr, Duration::from_secs(10)).unwrap();
        assert!(handles.insert(conn), "handle {conn:#x} given twice");
        // Beside the first connection, still open, the newest takes the second index again.
        assert_eq!(
            conn & MAX_CLIENT_CONNS as u32,
            2,
            "connection {i} took a new index"
        );
        c.call(conn, 0, &i.to_le_bytes(), &mut out).unwrap();
        assert_eq!(out, i.to_le_bytes());
        ch.close(conn);
        last = conn;
    }
    // A closed connection's handle stays closed though its index is open again.
    let now = ch.connect(&addr, Duration::from_secs(10)).unwrap();
    assert!(matches!(
        c.call(last, 0, b"late", &mut out),
        Err(RpcError::Disconnected)
    ));
    for conn in [first, now] {
        c.call(conn, 0, b"open", &mut out).unwrap();
    }
    drop(c);
    client.stop();
    let s = server.stop().stats();
    assert_eq!((s.conns_opened, s.conns_closed), (2002, 2000));
}
