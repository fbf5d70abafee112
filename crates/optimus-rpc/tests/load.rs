//! Load tests: N clients × M calls over shared memory (NIC's own service, inline and on
//! workers, polling and doorbell) and over the loopback, UDP and TCP transports. Every call must
//! be answered exactly once with its own payload. Bounded: each test stops by itself.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use optimus_rpc::transport::NoTransport;
use optimus_rpc::{
    AsyncClient, Balance, IdlePolicy, LoopbackNet, NicConfig, NicHandle, PollMode, RpcError,
    Status, Tcp, Transport, Udp, LOCAL_CONN,
};

const CLIENTS: usize = 3;
const CALLS: usize = 3000;

fn run_clients(h: &NicHandle, conn: u32, batch: usize, depth: usize) {
    let threads: Vec<_> = (0..CLIENTS)
        .map(|t| {
            let h = h.clone();
            std::thread::spawn(move || {
                let mut c = h.client(client_opts(batch)).expect("client");
                closed_loop(&mut c, t, conn, CALLS, depth)
            })
        })
        .collect();
    let total: usize = threads
        .into_iter()
        .map(|j| j.join().expect("client thread"))
        .sum();
    assert_eq!(total, CLIENTS * CALLS);
}

fn shm_with_workers(mode: PollMode, balance: Balance) {
    let cfg = NicConfig {
        mode,
        balance,
        ..config(CLIENTS + 2)
    };
    let (nic, h) = start(NoTransport, cfg, false);
    let stop = Arc::new(AtomicBool::new(false));
    let served = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let mut w = h.worker().expect("worker");
            let (stop, served) = (stop.clone(), served.clone());
            std::thread::spawn(move || {
                let mut n = 0usize;
                let mut handler = |m: u16, req: &[u8], resp: &mut Vec<u8>| {
                    n += 1;
                    echo(m, req, resp)
                };
                w.run(&mut handler, &stop, IdlePolicy::default())
                    .expect("the NIC outlives the workers");
                served.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    run_clients(&h, LOCAL_CONN, 8, 16);
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    let stats = nic.stop().stats();
    assert_eq!(
        served.load(Ordering::Relaxed),
        CLIENTS * CALLS,
        "each request ran exactly once"
    );
    assert_eq!(stats.requests_served as usize, CLIENTS * CALLS);
    assert_eq!(stats.dropped_malformed + stats.corrupt_rings, 0);
}

#[test]
fn shm_inline_polling_batched() {
    let (nic, h) = start(NoTransport, config(CLIENTS), true);
    run_clients(&h, LOCAL_CONN, 16, 32);
    let s = nic.stop().stats();
    assert_eq!(s.requests_served as usize, CLIENTS * CALLS);
}

#[test]
fn shm_inline_doorbell_unbatched() {
    let cfg = NicConfig {
        mode: PollMode::Doorbell,
        ..config(CLIENTS)
    };
    let (nic, h) = start(NoTransport, cfg, true);
    run_clients(&h, LOCAL_CONN, 1, 1);
    assert_eq!(nic.stop().stats().requests_served as usize, CLIENTS * CALLS);
}

#[test]
fn shm_workers_round_robin() {
    shm_with_workers(PollMode::Polling, Balance::RoundRobin);
}

#[test]
fn shm_workers_queue_depth_doorbell() {
    shm_with_workers(PollMode::Doorbell, Balance::QueueDepth);
}

#[test]
fn shm_workers_static_by_connection() {
    shm_with_workers(PollMode::Polling, Balance::StaticByConnection);
}

fn over_network<T: Transport>(server_t: T, client_t: impl Transport, batch: usize) {
    let addr = server_t.local_addr();
    let (server, _sh) = start(server_t, config(1), true);
    let (client, ch) = start(client_t, config(CLIENTS), false);
    let conn = ch.connect(&addr, Duration::from_secs(10)).expect("connect");
    run_clients(&ch, conn, batch, 16);
    let c = client.stop().stats();
    let s = server.stop().stats();
    assert_eq!(
        s.requests_served as usize,
        CLIENTS * CALLS,
        "no request ran twice: {s:?}"
    );
    assert_eq!(c.timeouts, 0);
    assert_eq!(
        s.dropped_malformed + s.dropped_checksum + s.dropped_oversized,
        0
    );
}

#[test]
fn loopback_transport() {
    let net = LoopbackNet::new();
    over_network(net.endpoint(), net.endpoint(), 4);
}

#[test]
fn udp_transport() {
    over_network(
        Udp::bind("127.0.0.1:0").unwrap(),
        Udp::bind("127.0.0.1:0").unwrap(),
        8,
    );
}

#[test]
fn tcp_transport() {
    over_network(Tcp::listen("127.0.0.1:0").unwrap(), Tcp::client(), 8);
}

#[test]
fn sync_calls_and_callbacks_mix() {
    let (nic, h) = start(NoTransport, config(1), true);
    let mut c = h.client(client_opts(1)).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    for i in 0..100usize {
        let seen = seen.clone();
        let p = payload(0, i);
        c.call_async(LOCAL_CONN, 3, &p, move |r| {
            seen.lock().unwrap().push((i, r.unwrap().to_vec()))
        })
        .unwrap();
    }
    let mut out = Vec::new();
    c.call(LOCAL_CONN, 1, b"sync", &mut out).unwrap();
    assert_eq!(out, b"sync");
    while seen.lock().unwrap().len() < 100 {
        c.poll(|_, _| panic!("no polled calls were submitted"));
    }
    let mut s = seen.lock().unwrap().clone();
    s.sort();
    for (i, (k, p)) in s.into_iter().enumerate() {
        assert_eq!((k, p), (i, payload(0, i)));
    }
    drop(c);
    nic.stop();
}

#[test]
fn error_statuses_reach_the_caller() {
    let (mut nic, h) = optimus_rpc::Nic::new(NoTransport, config(1)).unwrap();
    nic.set_handler(|m: u16, _req: &[u8], resp: &mut Vec<u8>| {
        if m == 0 {
            Status::Ok
        } else {
            resp.extend_from_slice(b"no such method");
            Status::UnknownMethod
        }
    });
    let nic = nic.spawn(None, IdlePolicy::default());
    let mut c = h.client(client_opts(1)).unwrap();
    let mut out = Vec::new();
    c.call(LOCAL_CONN, 0, b"", &mut out).unwrap();
    match c.call(LOCAL_CONN, 9, b"", &mut out) {
        Err(RpcError::Status {
            status: Status::UnknownMethod,
            detail,
        }) => assert_eq!(detail, "no such method"),
        other => panic!("{other:?}"),
    }
    let too_big = vec![0u8; h.max_payload() + 1];
    assert!(matches!(
        c.call(LOCAL_CONN, 0, &too_big, &mut out),
        Err(RpcError::TooLarge { .. })
    ));
    drop(c);
    nic.stop();
}

#[test]
fn futures_on_tokio() {
    let (server, client, ch, addr) = loopback_pair();
    let conn = ch.connect(&addr, Duration::from_secs(10)).unwrap();
    let ac = AsyncClient::new(ch.client(client_opts(1)).unwrap()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..200usize {
            let ac = ac.clone();
            tasks.push(tokio::spawn(async move {
                (i, ac.call(conn, 0, &payload(1, i)).await)
            }));
        }
        for t in tasks {
            let (i, r) = t.await.unwrap();
            assert_eq!(r.unwrap(), payload(1, i));
        }
        // A local call too, awaited with a tokio timeout around it.
        let r = tokio::time::timeout(Duration::from_secs(10), ac.call(LOCAL_CONN, 0, b"x"))
            .await
            .unwrap();
        assert!(
            matches!(
                r,
                Err(RpcError::Status {
                    status: Status::Unavailable,
                    ..
                })
            ),
            "{r:?}"
        );
    });
    drop(ac);
    client.stop();
    server.stop();
}

#[test]
fn closed_connection_fails_calls_once() {
    let (server, client, ch, addr) = loopback_pair();
    let conn = ch.connect(&addr, Duration::from_secs(10)).unwrap();
    let mut c = ch.client(client_opts(1)).unwrap();
    let mut out = Vec::new();
    c.call(conn, 0, b"before", &mut out).unwrap();
    ch.close(conn);
    // The close takes effect at the NIC's next control pass; afterwards calls fail at once.
    let mut failed = false;
    for _ in 0..10_000 {
        match c.call(conn, 0, b"after", &mut out) {
            Ok(()) => std::thread::sleep(Duration::from_micros(100)),
            Err(RpcError::Disconnected) => {
                failed = true;
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(failed);
    assert!(
        ch.connect("lo:99", Duration::from_secs(1)).is_err(),
        "unknown endpoint"
    );
    drop(c);
    client.stop();
    server.stop();
}
