//! UDP under a pre-shared key between two NICs: the fault tests' lossy network (drops,
//! duplicates, delays, reorders, corrupts) with every datagram sealed, and a network that
//! replays and reorders datagrams themselves. Every call gets exactly one outcome, a handler
//! runs at most once per call, and a peer with another key gets nothing through.

mod common;

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use optimus_rpc::transport::lossy::Lossy;
use optimus_rpc::{IdlePolicy, LossConfig, Nic, NicConfig, Psk, RpcError, Status, Transport, Udp};

type Runs = Arc<Mutex<HashMap<Vec<u8>, u32>>>;

fn counting_echo(runs: Runs) -> impl FnMut(u16, &[u8], &mut Vec<u8>) -> Status + Send {
    move |_m, req, resp| {
        *runs.lock().unwrap().entry(req.to_vec()).or_default() += 1;
        resp.extend_from_slice(req);
        Status::Ok
    }
}

/// `calls` calls, up to 8 in flight, over `conn`: (ok, timed out).
fn drive(ch: &optimus_rpc::NicHandle, conn: u32, calls: usize) -> (usize, usize) {
    let mut c = ch.client(client_opts(4)).unwrap();
    let mut outstanding: HashMap<u64, usize> = HashMap::new();
    let (mut next, mut ok, mut timed_out) = (0, 0, 0);
    let mut spins = 0u32;
    while ok + timed_out < calls {
        while next < calls && outstanding.len() < 8 {
            let id = c.submit(conn, 0, &payload(0, next)).expect("submit");
            outstanding.insert(id, next);
            next += 1;
        }
        c.flush();
        let n = c.poll(|id, r| {
            let i = outstanding.remove(&id).expect("a call completed twice");
            match r {
                Ok(p) => {
                    assert_eq!(p, payload(0, i).as_slice());
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
}

#[test]
fn lossy_sealed_udp_gives_each_call_exactly_one_outcome() {
    const CALLS: usize = 400;
    let key = Psk::from_bytes([0x42; 32]);
    let loss = LossConfig {
        drop: 0.15,
        duplicate: 0.15,
        delay: 0.2,
        max_delay_polls: 40,
        corrupt: 0.03,
        seed: 17,
    };
    let st = Udp::bind("127.0.0.1:0").unwrap().with_psk(&key);
    let addr = st.local_addr();
    let server_t = Lossy::new(st, LossConfig { seed: 19, ..loss });
    let client_t = Lossy::new(Udp::client("127.0.0.1:0").unwrap().with_psk(&key), loss);
    let cfg = NicConfig {
        timeout: Duration::from_millis(3),
        max_retries: 8,
        ..config(1)
    };
    let runs: Runs = Arc::default();
    let (mut server, _) = Nic::new(server_t, cfg).unwrap();
    server.set_handler(counting_echo(runs.clone()));
    let server = server.spawn(None, IdlePolicy::default());
    let (client, ch) = Nic::new(client_t, cfg).unwrap();
    let client = client.spawn(None, IdlePolicy::default());
    let conn = ch.connect(&addr, Duration::from_secs(20)).expect("connect");
    let (ok, to) = drive(&ch, conn, CALLS);
    assert_eq!(ok + to, CALLS);
    let cs = client.stop();
    let server = server.stop();
    let runs = runs.lock().unwrap();
    assert!(runs.values().all(|&n| n == 1), "a handler ran twice");
    assert!(ok > CALLS / 2, "lossy, not dead: {ok} ok");
    let (su, cu) = (
        server.transport().inner().stats(),
        cs.transport().inner().stats(),
    );
    assert!(su.opened > 0 && cu.opened > 0 && su.sealed > 0 && cu.sealed > 0);
    assert_eq!(
        su.bad_tag + su.replays + cu.bad_tag + cu.replays,
        0,
        "{su:?} {cu:?}"
    );
    assert!(server.transport().stats().dropped > 0 && server.transport().stats().duplicated > 0);
}

/// A network in the middle that sends every client datagram twice, swapping each pair of
/// consecutive ones (replay and reorder of the sealed datagrams themselves); a datagram with
/// no successor within 5 ms goes twice on its own.
fn replaying_proxy(
    server: SocketAddr,
    stop: Arc<AtomicBool>,
) -> (String, std::thread::JoinHandle<()>) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
    let addr = s.local_addr().unwrap().to_string();
    let t = std::thread::spawn(move || {
        let mut client: Option<SocketAddr> = None;
        let mut held: Option<Vec<u8>> = None;
        let mut buf = vec![0u8; 65536];
        while !stop.load(Ordering::Relaxed) {
            let Ok((n, from)) = s.recv_from(&mut buf) else {
                // Idle: let a held datagram go (twice), so a lone one is not kept forever.
                if let Some(h) = held.take() {
                    let _ = s.send_to(&h, server);
                    let _ = s.send_to(&h, server);
                }
                continue;
            };
            let d = buf[..n].to_vec();
            if from == server {
                if let Some(c) = client {
                    let _ = s.send_to(&d, c);
                }
                continue;
            }
            client = Some(from);
            match held.take() {
                None => held = Some(d),
                Some(h) => {
                    for x in [&d, &h, &d, &h] {
                        let _ = s.send_to(x, server);
                    }
                }
            }
        }
    });
    (addr, t)
}

#[test]
fn replayed_and_reordered_datagrams_do_not_run_a_call_twice() {
    const CALLS: usize = 300;
    let key = Psk::from_bytes([0x17; 32]);
    let st = Udp::bind("127.0.0.1:0").unwrap().with_psk(&key);
    let server_addr: SocketAddr = st.local_addr().parse().unwrap();
    let cfg = NicConfig {
        timeout: Duration::from_millis(20),
        max_retries: 8,
        ..config(1)
    };
    let runs: Runs = Arc::default();
    let (mut server, _) = Nic::new(st, cfg).unwrap();
    server.set_handler(counting_echo(runs.clone()));
    let server = server.spawn(None, IdlePolicy::default());
    let stop = Arc::new(AtomicBool::new(false));
    let (proxy, pt) = replaying_proxy(server_addr, stop.clone());
    let (client, ch) = Nic::new(Udp::client("127.0.0.1:0").unwrap().with_psk(&key), cfg).unwrap();
    let client = client.spawn(None, IdlePolicy::default());
    let conn = ch
        .connect(&proxy, Duration::from_secs(20))
        .expect("connect via proxy");
    let (ok, to) = drive(&ch, conn, CALLS);
    stop.store(true, Ordering::Relaxed);
    pt.join().unwrap();
    drop(client);
    let server = server.stop();
    let su = server.transport().stats();
    assert_eq!(ok + to, CALLS);
    assert!(
        ok > CALLS * 9 / 10,
        "nothing is lost on this network: {ok} ok"
    );
    assert!(
        runs.lock().unwrap().values().all(|&n| n == 1),
        "a handler ran twice"
    );
    assert!(
        su.replays > 0,
        "replays reached the server and were refused: {su:?}"
    );
    assert_eq!(su.bad_tag, 0);
}

#[test]
fn a_peer_with_another_key_gets_no_answer() {
    let st = Udp::bind("127.0.0.1:0")
        .unwrap()
        .with_psk(&Psk::from_bytes([1; 32]));
    let addr = st.local_addr();
    let (mut server, _) = Nic::new(st, config(1)).unwrap();
    server.set_handler(echo);
    let server = server.spawn(None, IdlePolicy::default());
    let other = Udp::client("127.0.0.1:0")
        .unwrap()
        .with_psk(&Psk::from_bytes([2; 32]));
    let (client, ch) = Nic::new(other, config(1)).unwrap();
    let client = client.spawn(None, IdlePolicy::default());
    assert!(
        matches!(
            ch.connect(&addr, Duration::from_millis(300)),
            Err(RpcError::Timeout)
        ),
        "connected under the wrong key"
    );
    drop(client);
    let server = server.stop();
    let (su, ss) = (server.transport().stats(), server.stats());
    assert!(su.bad_tag > 0, "{su:?}");
    assert_eq!(su.opened, 0);
    assert_eq!(ss.rx_frames, 0, "nothing reached the NIC");
}
