//! A client NIC facing a server that answers anything: right answers, answers under another
//! sequence number or connection, repeated or spoiled answers, statuses of any value, forged
//! ConnectAcks, Closes, Connects, requests and random bytes, while the application calls,
//! closes connections and opens new ones. The client never panics, sends only well-formed
//! sealed frames, completes each call exactly once, and completes a call with `Ok` only with a
//! payload the server sent for that call's own connection and sequence number.
//!
//! The NIC runs on its own thread (a connect waits for it); the test's thread is both the
//! application and the server.

mod common;

use std::collections::{HashMap, HashSet};
use std::thread;
use std::time::{Duration, Instant};

use common::{sealed, spoil, spoiled, RawPeer, Spoil};
use optimus_rpc::frame::{self, FrameHeader, FrameKind, FLAG_CHECKSUM};
use optimus_rpc::transport::PeerId;
use optimus_rpc::{
    ClientOptions, IdlePolicy, LoopbackNet, Nic, NicConfig, NicHandle, RegionLayout, RpcClient,
    Status,
};
use proptest::prelude::*;

const MAX_PAYLOAD: usize = 512;
/// The client NIC as the raw server knows it: the only peer that reaches it.
const CLIENT: PeerId = 0;

/// How the server answers a request it received.
#[derive(Clone, Debug)]
enum Answer {
    /// With the request's connection and sequence number, and this status.
    Right(u16),
    /// Under a sequence number this far from the request's.
    OtherSeq(i64),
    /// Under another client connection handle (the request's, bits flipped).
    OtherConn(u32),
    /// Twice.
    Twice,
    Spoiled(Spoil),
}

#[derive(Clone, Debug)]
enum Step {
    /// The application calls on the k-th newest connection it opened (closed ones included).
    Call {
        conn: usize,
        len: usize,
    },
    /// The server answers the k-th request it has received (retransmissions included).
    Answer {
        request: usize,
        how: Answer,
    },
    /// The application closes the k-th newest connection it opened and opens a new one.
    Reconnect {
        conn: usize,
    },
    /// The server sends a ConnectAck nobody asked for.
    ForgeAck {
        nonce: u64,
        handle: u32,
    },
    /// The server sends a frame of another kind (a Close, a Connect, a request).
    ForgeFrame {
        kind: FrameKind,
        conn_id: u32,
        seq: u64,
    },
    Junk(Vec<u8>),
    /// Lets this many milliseconds pass (retransmissions, timeouts).
    Wait(u8),
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        8 => Just(Answer::Right(Status::Ok as u16)),
        2 => any::<u16>().prop_map(Answer::Right),
        1 => prop_oneof![
            (-4i64..4).prop_map(Answer::OtherSeq),
            (-2i64..=2).prop_map(|k| Answer::OtherSeq(k * optimus_rpc::nic::WINDOW as i64)),
        ],
        1 => (1u32..).prop_map(Answer::OtherConn),
        1 => Just(Answer::Twice),
        2 => spoil().prop_map(Answer::Spoiled),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (0usize..4, 8usize..=MAX_PAYLOAD).prop_map(|(conn, len)| Step::Call { conn, len }),
        8 => (any::<usize>(), answer()).prop_map(|(request, how)| Step::Answer { request, how }),
        2 => (0usize..3).prop_map(|conn| Step::Reconnect { conn }),
        1 => (0u64..8, 0u32..8).prop_map(|(nonce, handle)| Step::ForgeAck { nonce, handle }),
        1 => (
            prop_oneof![Just(FrameKind::Close), Just(FrameKind::Connect), Just(FrameKind::Request)],
            0u32..8,
            0u64..8,
        )
            .prop_map(|(kind, conn_id, seq)| Step::ForgeFrame { kind, conn_id, seq }),
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(Step::Junk),
        1 => (1u8..4).prop_map(Step::Wait),
    ]
}

/// A request as the server received it: from whom, the client's handle (`aux`), the server's
/// connection id, its sequence number and the call number its payload starts with.
struct Received {
    from: PeerId,
    handle: u32,
    seq: u64,
    call: u64,
}

/// The server's side of the test: what it received, and the `Ok` answers it sent.
#[derive(Default)]
struct Server {
    requests: Vec<Received>,
    /// The sequence number and handle of each call, as its requests carried them.
    wire: HashMap<u64, (u32, u64)>,
    /// Each `Ok` answer's payload (unique) → the handle and sequence number it was sent under.
    sent_ok: HashMap<Vec<u8>, (u32, u64)>,
    answers: u64,
    /// Connection ids given out by ConnectAcks.
    next_conn_id: u32,
}

impl Server {
    /// Reads what the client sent: checks each frame, records requests, accepts Connects.
    fn pump(&mut self, raw: &mut RawPeer) -> Result<(), TestCaseError> {
        for (from, f) in raw.received_from() {
            let (h, kind, payload) = frame::check_frame(&f, MAX_PAYLOAD)
                .map_err(|e| TestCaseError::fail(format!("the client sent a bad frame: {e}")))?;
            prop_assert!(h.flags & FLAG_CHECKSUM != 0, "unsealed frame");
            match kind {
                FrameKind::Connect => {
                    self.next_conn_id += 1;
                    let ack = FrameHeader {
                        conn_id: self.next_conn_id,
                        request_id: h.request_id,
                        aux: h.aux,
                        ..FrameHeader::new(FrameKind::ConnectAck)
                    };
                    raw.send_to(from, &sealed(ack, &[]));
                }
                FrameKind::Request => {
                    let call = u64::from_le_bytes(payload[..8].try_into().unwrap());
                    let first = *self.wire.entry(call).or_insert((h.aux, h.request_id));
                    prop_assert_eq!(first, (h.aux, h.request_id), "a call's repeat differs");
                    self.requests.push(Received {
                        from,
                        handle: h.aux,
                        seq: h.request_id,
                        call,
                    });
                }
                // The client's NIC answers what the server forged (it serves nothing).
                FrameKind::Close | FrameKind::ConnectAck | FrameKind::Response => {}
                other => prop_assert!(false, "the client sent a {:?}", other),
            }
        }
        Ok(())
    }

    fn answer(&mut self, raw: &mut RawPeer, request: usize, how: &Answer) {
        let Some(r) = self.requests.get(request % self.requests.len().max(1)) else {
            return;
        };
        let (from, mut handle, mut seq, mut status) = (r.from, r.handle, r.seq, Status::Ok as u16);
        match how {
            Answer::Right(s) => status = *s,
            Answer::OtherSeq(d) => seq = seq.wrapping_add_signed(*d),
            Answer::OtherConn(x) => handle ^= x,
            Answer::Twice | Answer::Spoiled(_) => {}
        }
        self.answers += 1;
        let mut payload = r.call.to_le_bytes().to_vec();
        payload.extend_from_slice(&self.answers.to_le_bytes());
        let h = FrameHeader {
            conn_id: handle,
            request_id: seq,
            aux: u32::from(status),
            ..FrameHeader::new(FrameKind::Response)
        };
        let f = sealed(h, &payload);
        if Status::from_aux(u32::from(status)) == Status::Ok {
            self.sent_ok.insert(payload, (handle, seq));
        }
        match how {
            Answer::Spoiled(s) => raw.send_to(from, &spoiled(f, s)),
            Answer::Twice => {
                raw.send_to(from, &f);
                raw.send_to(from, &f);
            }
            _ => raw.send_to(from, &f),
        }
    }
}

/// The application's side: its connections and calls.
struct App {
    client: RpcClient,
    handle: NicHandle,
    conns: Vec<u32>,
    /// Call id → (call number, connection handle).
    calls: HashMap<u64, (u64, u32)>,
    completed: HashSet<u64>,
    next_call: u64,
}

impl App {
    /// Opens a connection to `raw`, serving its Connect (and recording what else arrives).
    fn connect(&mut self, raw: &mut RawPeer, server: &mut Server) -> Result<(), TestCaseError> {
        let (h, addr) = (self.handle.clone(), raw.addr());
        let pending = thread::spawn(move || h.connect(&addr, Duration::from_secs(10)));
        while !pending.is_finished() {
            server.pump(raw)?;
            thread::sleep(Duration::from_micros(50));
        }
        let conn = pending.join().unwrap();
        let conn = conn.map_err(|e| TestCaseError::fail(format!("connect: {e}")))?;
        // Answers name a connection by its handle: no two connections may share one.
        prop_assert!(
            !self.conns.contains(&conn),
            "handle {:#x} named an earlier connection",
            conn
        );
        self.conns.push(conn);
        Ok(())
    }

    /// The handle of the k-th newest connection.
    fn newest(&self, k: usize) -> u32 {
        self.conns[self.conns.len() - 1 - k % self.conns.len()]
    }

    fn call(&mut self, conn: usize, len: usize) {
        let handle = self.newest(conn);
        let mut payload = self.next_call.to_le_bytes().to_vec();
        payload.resize(len, 0xA5);
        if let Ok(id) = self.client.submit(handle, 0, &payload) {
            self.calls.insert(id, (self.next_call, handle));
            self.client.flush();
        }
        self.next_call += 1;
    }

    /// Reads completions; each must be of a call in flight, and an `Ok` one must carry an
    /// answer the server sent under that call's handle and sequence number. The server reads
    /// what arrived after the completions are taken, so it has seen each completed call's
    /// request.
    fn poll(&mut self, server: &mut Server, raw: &mut RawPeer) -> Result<(), TestCaseError> {
        let mut outcomes = Vec::new();
        self.client
            .poll(|id, r| outcomes.push((id, r.map(<[u8]>::to_vec))));
        server.pump(raw)?;
        for (id, r) in outcomes {
            let Some(&(call, handle)) = self.calls.get(&id) else {
                return Err(TestCaseError::fail(format!(
                    "a completion for call id {id} never made"
                )));
            };
            prop_assert!(self.completed.insert(id), "call {} completed twice", call);
            if let Ok(payload) = r {
                let sent = server.sent_ok.get(&payload).copied();
                let wire = server.wire.get(&call).copied();
                prop_assert!(
                    sent.is_some(),
                    "call {} got an answer the server never sent",
                    call
                );
                prop_assert_eq!(wire.map(|w| w.0), Some(handle));
                prop_assert_eq!(sent, wire, "call {} got another call's answer", call);
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_answers_complete_each_call_once_with_its_own_result(
        steps in prop::collection::vec(step(), 1..60),
    ) {
        let net = LoopbackNet::new();
        let mut raw = RawPeer::serving(&net);
        let cfg = NicConfig {
            timeout: Duration::from_millis(2),
            max_retries: 2,
            max_payload: MAX_PAYLOAD,
            layout: RegionLayout { n_qps: 1, ring_lines: 256 },
            ..NicConfig::default()
        };
        let (nic, handle) = Nic::new(net.endpoint(), cfg).unwrap();
        // Yielding, never sleeping, when idle: timers run every CONTROL_INTERVAL polls.
        let idle = IdlePolicy { spins: 64, yields: u32::MAX, sleep: Duration::ZERO };
        let nic = nic.spawn(None, idle);
        let opts = ClientOptions { call_timeout: Duration::from_secs(2), ..ClientOptions::default() };
        let mut app = App {
            client: handle.client(opts).unwrap(),
            handle,
            conns: Vec::new(),
            calls: HashMap::new(),
            completed: HashSet::new(),
            next_call: 0,
        };
        let mut server = Server::default();
        app.connect(&mut raw, &mut server)?;
        for step in &steps {
            match step {
                Step::Call { conn, len } => app.call(*conn, *len),
                Step::Answer { request, how } => server.answer(&mut raw, *request, how),
                Step::Reconnect { conn } => {
                    app.handle.close(app.newest(*conn));
                    app.connect(&mut raw, &mut server)?;
                }
                Step::ForgeAck { nonce, handle } => {
                    let h = FrameHeader {
                        conn_id: 100 + handle,
                        request_id: *nonce,
                        aux: *handle,
                        ..FrameHeader::new(FrameKind::ConnectAck)
                    };
                    raw.send_to(CLIENT, &sealed(h, &[]));
                }
                Step::ForgeFrame { kind, conn_id, seq } => {
                    let h = FrameHeader {
                        conn_id: *conn_id,
                        request_id: *seq,
                        ..FrameHeader::new(*kind)
                    };
                    raw.send_to(CLIENT, &sealed(h, &[0; 8]));
                }
                Step::Junk(bytes) => raw.send_to(CLIENT, bytes),
                Step::Wait(ms) => thread::sleep(Duration::from_millis(u64::from(*ms))),
            }
            app.poll(&mut server, &mut raw)?;
        }
        // Every call ends: answered, failed, or timed out by the NIC (three 2 ms attempts).
        let deadline = Instant::now() + Duration::from_secs(20);
        while app.completed.len() < app.calls.len() {
            prop_assert!(Instant::now() < deadline, "calls never completed");
            app.poll(&mut server, &mut raw)?;
            thread::sleep(Duration::from_micros(200));
        }
        drop(app);
        nic.stop();
    }
}
