//! Any sequence of frames from the network, well-formed or spoiled, from several peers at
//! once: the server never panics, sends only well-formed sealed frames, runs a handler at most
//! once per call (connection and sequence number), answers a call only with that call's own
//! result, on its caller's connection, and keeps its copies of sent responses within its byte
//! budget. The NIC is polled on the test's thread, inline or through a worker it serves.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use common::{sealed, spoil, spoiled, RawPeer, Spoil};
use optimus_rpc::frame::{self, FrameHeader, FrameKind, FLAG_CHECKSUM, FLAG_RETRY, HEADER_BYTES};
use optimus_rpc::{LoopbackNet, Nic, NicConfig, RegionLayout, Status, Transport};
use proptest::prelude::*;

const PEERS: usize = 3;
const MAX_PAYLOAD: usize = 1024;

/// The methods of the test's service.
const ECHO: u16 = 0;
const FAIL: u16 = 1;
const TOO_LARGE: u16 = 2;

/// Which connection a frame names.
#[derive(Clone, Debug)]
enum ConnPick {
    /// The k-th connection the server has accepted for the sending peer (modulo their
    /// number; any peer's if it has none).
    Own(usize),
    /// The k-th connection the server has accepted for any peer.
    Known(usize),
    /// Any id.
    Any(u32),
}

#[derive(Clone, Debug)]
enum Step {
    Connect {
        peer: usize,
        nonce: u64,
        handle: u32,
    },
    Request {
        peer: usize,
        conn: ConnPick,
        seq: Option<u64>,
        method: u16,
        len: usize,
        spoil: Spoil,
    },
    /// Sends the i-th request sent so far again, unchanged.
    Again(usize),
    Close {
        peer: usize,
        conn: ConnPick,
    },
    Junk {
        peer: usize,
        bytes: Vec<u8>,
    },
    Poll(u8),
}

fn conn_pick() -> impl Strategy<Value = ConnPick> {
    prop_oneof![
        6 => (0usize..8).prop_map(ConnPick::Own),
        1 => (0usize..8).prop_map(ConnPick::Known),
        1 => any::<u32>().prop_map(ConnPick::Any),
    ]
}

/// Sequence numbers: the next on the connection (`None`), or near the window's edges, or any.
fn seq() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![
        6 => Just(None),
        2 => (0u64..8).prop_map(Some),
        2 => (0u64..4, 0u64..4).prop_map(|(k, s)| Some(k * optimus_rpc::nic::WINDOW as u64 + s)),
        1 => any::<u64>().prop_map(Some),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => (0..PEERS, 0u64..4, 1u32..4).prop_map(|(peer, nonce, handle)| Step::Connect {
            peer,
            nonce,
            handle
        }),
        8 => (
            0..PEERS,
            conn_pick(),
            seq(),
            prop_oneof![6 => Just(ECHO), 1 => Just(FAIL), 1 => Just(TOO_LARGE), 1 => any::<u16>()],
            prop_oneof![3 => 8usize..64, 1 => 8usize..=MAX_PAYLOAD + 1],
            spoil(),
        )
            .prop_map(|(peer, conn, seq, method, len, spoil)| Step::Request {
                peer,
                conn,
                seq,
                method,
                len,
                spoil
            }),
        2 => any::<usize>().prop_map(Step::Again),
        1 => (0..PEERS, conn_pick()).prop_map(|(peer, conn)| Step::Close { peer, conn }),
        1 => (0..PEERS, prop::collection::vec(any::<u8>(), 0..80))
            .prop_map(|(peer, bytes)| Step::Junk { peer, bytes }),
        4 => (1u8..4).prop_map(Step::Poll),
    ]
}

/// A request as sent: who sent it, on which server connection id and sequence number.
struct SentCall {
    peer: usize,
    conn_id: u32,
    seq: u64,
    frame: Vec<u8>,
}

/// Whether `f` (a spoiled request) has become a Connect after a connection closed, which
/// could open a connection under a closed one's id (see `closed` below).
fn opens_after_close(f: &[u8], closed: bool) -> bool {
    closed && f.get(3) == Some(&(FrameKind::Connect as u8))
}

/// Whether `f` (a spoiled request) has become a Close.
fn closes(f: &[u8]) -> bool {
    f.get(3) == Some(&(FrameKind::Close as u8))
}

/// The echo service: a request's payload starts with its call number, which the handler
/// records before answering.
fn service(runs: Arc<Mutex<Vec<u64>>>) -> impl FnMut(u16, &[u8], &mut Vec<u8>) -> Status {
    move |method, request, response| {
        let id = u64::from_le_bytes(request[..8].try_into().expect("call number"));
        runs.lock().unwrap().push(id);
        match method {
            ECHO => {
                response.extend_from_slice(request);
                Status::Ok
            }
            FAIL => {
                response.extend_from_slice(b"refused");
                Status::HandlerError
            }
            TOO_LARGE => {
                response.resize(MAX_PAYLOAD + 1, 7);
                Status::Ok
            }
            _ => Status::UnknownMethod,
        }
    }
}

/// The connection id `how` names for a frame from `peer`, given the server's connections
/// as (id, owning peer, client handle).
fn pick(conns: &[(u32, usize, u32)], peer: usize, how: &ConnPick) -> u32 {
    let own: Vec<u32> = conns.iter().filter(|c| c.1 == peer).map(|c| c.0).collect();
    let any: Vec<u32> = conns.iter().map(|c| c.0).collect();
    let from = |ids: &[u32], k: usize| ids.get(k % ids.len().max(1)).copied().unwrap_or(0);
    match how {
        ConnPick::Own(k) if !own.is_empty() => from(&own, *k),
        ConnPick::Own(k) | ConnPick::Known(k) => from(&any, *k),
        ConnPick::Any(id) => *id,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn any_frames_get_well_formed_answers_and_each_call_runs_at_most_once(
        steps in prop::collection::vec(step(), 1..120),
        on_worker in any::<bool>(),
        budget in prop_oneof![Just(0usize), 64usize..4096, Just(1usize << 20)],
        max_server_conns in 1usize..8,
    ) {
        let net = LoopbackNet::new();
        let server_t = net.endpoint();
        let addr = server_t.local_addr();
        let cfg = NicConfig {
            max_payload: MAX_PAYLOAD,
            layout: RegionLayout { n_qps: 1, ring_lines: 64 },
            response_cache_bytes: budget,
            max_server_conns,
            ..NicConfig::default()
        };
        let (mut nic, handle) = Nic::new(server_t, cfg).unwrap();
        let runs: Arc<Mutex<Vec<u64>>> = Arc::default();
        let mut handler = service(runs.clone());
        let mut worker = if on_worker {
            let mut w = handle.worker().unwrap();
            w.set_nic_timeout(std::time::Duration::ZERO);
            Some(w)
        } else {
            nic.set_handler(service(runs.clone()));
            None
        };
        let mut peers: Vec<RawPeer> = (0..PEERS).map(|_| RawPeer::new(&net, &addr)).collect();

        // The server's connections: (id, owning peer, the client handle its responses carry).
        let mut conns: Vec<(u32, usize, u32)> = Vec::new();
        let mut calls: Vec<SentCall> = Vec::new();
        let mut answered: HashMap<u64, Vec<u8>> = HashMap::new();
        let mut closed = false;
        let mut next_seq: HashMap<u32, u64> = HashMap::new();
        // Each peer opens a connection first, so that most requests name one.
        let opening: Vec<Step> = (0..PEERS)
            .map(|peer| Step::Connect { peer, nonce: 0, handle: peer as u32 + 1 })
            .chain([Step::Poll(1)])
            .collect();
        for step in opening.iter().chain(&steps) {
            match step {
                // A closed connection's index goes to the next new one, under the same id:
                // opening none after a close keeps one id to one connection.
                Step::Connect { .. } if closed => {}
                Step::Connect { peer, nonce, handle } => {
                    let h = FrameHeader {
                        request_id: *nonce,
                        aux: *handle,
                        ..FrameHeader::new(FrameKind::Connect)
                    };
                    peers[*peer].send(&sealed(h, &[]));
                }
                Step::Request { peer, conn, seq, method, len, spoil } => {
                    let conn_id = pick(&conns, *peer, conn);
                    let seq = seq.unwrap_or_else(|| {
                        let next = next_seq.entry(conn_id).or_insert(0);
                        *next += 1;
                        *next
                    });
                    let id = calls.len() as u64;
                    let mut payload = id.to_le_bytes().to_vec();
                    payload.resize(*len, id as u8);
                    let h = FrameHeader {
                        conn_id,
                        request_id: seq,
                        method_id: *method,
                        ..FrameHeader::new(FrameKind::Request)
                    };
                    let f = spoiled(sealed(h, &payload), spoil);
                    if opens_after_close(&f, closed) {
                        continue;
                    }
                    closed |= closes(&f);
                    peers[*peer].send(&f);
                    calls.push(SentCall { peer: *peer, conn_id, seq, frame: f });
                }
                Step::Again(i) if !calls.is_empty() => {
                    let c = &calls[i % calls.len()];
                    let mut f = c.frame.clone();
                    if f.len() >= HEADER_BYTES {
                        let flags = u16::from_le_bytes([f[4], f[5]]) | FLAG_RETRY;
                        f[4..6].copy_from_slice(&flags.to_le_bytes());
                        if frame::check_frame(&c.frame, usize::MAX >> 1).is_ok() {
                            frame::seal(&mut f);
                        }
                    }
                    if opens_after_close(&f, closed) {
                        continue;
                    }
                    closed |= closes(&f);
                    peers[c.peer].send(&f);
                }
                Step::Again(_) => {}
                Step::Close { peer, conn } => {
                    let conn_id = pick(&conns, *peer, conn);
                    let h = FrameHeader { conn_id, ..FrameHeader::new(FrameKind::Close) };
                    peers[*peer].send(&sealed(h, &[]));
                    closed = true;
                }
                Step::Junk { peer, bytes } => peers[*peer].send(bytes),
                Step::Poll(n) => {
                    for _ in 0..*n {
                        nic.poll_once();
                        // A worker whose answers cannot leave stops: its unanswered request
                        // stays in the ring for the NIC to answer `Unavailable`.
                        if worker.as_mut().is_some_and(|w| w.serve_once(&mut handler).is_err()) {
                            worker = None;
                        }
                        nic.poll_once();
                    }
                }
            }
            // What the server sent each peer.
            for (p, peer) in peers.iter_mut().enumerate() {
                for f in peer.received() {
                    let (h, kind, payload) = frame::check_frame(&f, MAX_PAYLOAD)
                        .unwrap_or_else(|e| panic!("the server sent a bad frame: {e}"));
                    prop_assert!(h.flags & FLAG_CHECKSUM != 0, "unsealed frame");
                    match kind {
                        FrameKind::ConnectAck => {
                            if !conns.iter().any(|c| c.0 == h.conn_id) {
                                conns.push((h.conn_id, p, h.aux));
                            }
                        }
                        FrameKind::Response => {
                            let status = Status::from_aux(h.aux);
                            if status == Status::Disconnected {
                                continue; // answered for an unknown connection: ran nothing
                            }
                            prop_assert!(payload.len() >= 8 || status != Status::Ok);
                            if status != Status::Ok {
                                continue;
                            }
                            let id = u64::from_le_bytes(payload[..8].try_into().unwrap());
                            let call = &calls[id as usize];
                            let conn = conns.iter().find(|c| c.0 == call.conn_id);
                            prop_assert!(call.peer == p, "an answer went to another peer");
                            prop_assert_eq!(h.request_id, call.seq);
                            prop_assert_eq!(Some(h.conn_id), conn.map(|c| c.2));
                            if let Some(first) = answered.insert(id, payload.to_vec()) {
                                prop_assert_eq!(first, payload.to_vec(), "a retransmission's answer differs");
                            }
                        }
                        other => prop_assert!(false, "the server sent a {:?}", other),
                    }
                }
            }
            let s = nic.stats();
            prop_assert!(s.cached_response_bytes as usize <= budget, "{:?}", s);
        }
        prop_assert!(conns.len() <= max_server_conns);
        // At most one run per call, and per connection and sequence number.
        let runs = runs.lock().unwrap().clone();
        let mut per_call: HashMap<(u32, u64), u64> = HashMap::new();
        for id in runs {
            let c = &calls[id as usize];
            if let Some(other) = per_call.insert((c.conn_id, c.seq), id) {
                prop_assert!(false, "calls {} and {} on conn {} seq {} both ran", other, id, c.conn_id, c.seq);
            }
        }
    }
}
