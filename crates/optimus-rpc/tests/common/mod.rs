//! Helpers shared by the integration tests: echo handlers, NIC setup, closed-loop drivers.

#![allow(dead_code)]

use std::collections::HashMap;
use std::time::Duration;

use optimus_rpc::frame::{self, FrameHeader, FLAG_CHECKSUM};
use optimus_rpc::transport::loopback::Loopback;
use optimus_rpc::transport::{PeerId, TxQueue};
use optimus_rpc::{
    ClientOptions, IdlePolicy, LoopbackNet, Nic, NicConfig, NicHandle, NicThread, RegionLayout,
    RpcClient, RpcError, Status, Transport,
};
use proptest::prelude::*;

/// Echo: the response is the request.
pub fn echo(_m: u16, req: &[u8], resp: &mut Vec<u8>) -> Status {
    resp.extend_from_slice(req);
    Status::Ok
}

pub fn config(n_qps: usize) -> NicConfig {
    NicConfig {
        layout: RegionLayout {
            n_qps,
            ring_lines: 1024,
        },
        ..NicConfig::default()
    }
}

pub fn start<T: Transport>(t: T, cfg: NicConfig, inline_echo: bool) -> (NicThread<T>, NicHandle) {
    let (mut nic, h) = Nic::new(t, cfg).expect("nic");
    if inline_echo {
        nic.set_handler(echo);
    }
    (nic.spawn(None, IdlePolicy::default()), h)
}

/// An inline echo server and a client NIC on a new loopback network, each on its own thread
/// with one QP: the server's NIC, the client's NIC and handle, and the server's address.
pub fn loopback_pair() -> (NicThread<Loopback>, NicThread<Loopback>, NicHandle, String) {
    let net = LoopbackNet::new();
    let st = net.endpoint();
    let addr = st.local_addr();
    let (server, _) = start(st, config(1), true);
    let (client, ch) = start(net.endpoint(), config(1), false);
    (server, client, ch, addr)
}

/// The payload of call `i` of client `t`: unique and of varying length (1..=300 bytes).
pub fn payload(t: usize, i: usize) -> Vec<u8> {
    let mut p = format!("{t}:{i}:").into_bytes();
    let len = 1 + (i * 37 + t * 11) % 300;
    while p.len() < len {
        p.push(b'a' + (p.len() % 26) as u8);
    }
    p
}

/// Runs `m` calls on `conn` keeping up to `depth` in flight; checks every call is answered
/// exactly once with its own payload. Returns the number of completions.
pub fn closed_loop(c: &mut RpcClient, t: usize, conn: u32, m: usize, depth: usize) -> usize {
    let mut outstanding: HashMap<u64, usize> = HashMap::new();
    let mut next = 0usize;
    let mut done = 0usize;
    let mut spins = 0u64;
    while done < m {
        while next < m && outstanding.len() < depth {
            match c.submit(conn, 0, &payload(t, next)) {
                Ok(id) => {
                    assert!(
                        outstanding.insert(id, next).is_none(),
                        "call id reused while in flight"
                    );
                    next += 1;
                }
                Err(RpcError::Backpressure) => break,
                Err(e) => panic!("submit: {e}"),
            }
        }
        c.flush();
        let n = c.poll(|id, r| {
            let i = outstanding
                .remove(&id)
                .expect("completion for a call not in flight (duplicate?)");
            let got = r.unwrap_or_else(|e| panic!("call {t}:{i} failed: {e}"));
            assert_eq!(got, payload(t, i).as_slice(), "wrong payload for {t}:{i}");
        });
        done += n;
        if n == 0 {
            spins += 1;
            IdlePolicy::default().wait(spins.min(u32::MAX as u64) as u32);
            assert!(spins < 50_000_000, "no progress");
        } else {
            spins = 0;
        }
    }
    assert!(outstanding.is_empty());
    done
}

pub fn client_opts(batch: usize) -> ClientOptions {
    ClientOptions {
        batch,
        call_timeout: Duration::from_secs(30),
        ..ClientOptions::default()
    }
}

/// A frame of header `h` (its length set) and `payload`, sealed with its checksum.
pub fn sealed(h: FrameHeader, payload: &[u8]) -> Vec<u8> {
    let mut f = FrameHeader {
        payload_len: payload.len() as u32,
        ..h
    }
    .encode()
    .to_vec();
    f.extend_from_slice(payload);
    frame::seal(&mut f);
    f
}

/// A loopback endpoint that speaks frames by hand: to a server it names (what a test throws at
/// a NIC), or as a server to whoever sends it frames (what a client NIC is made to face).
pub struct RawPeer {
    t: Loopback,
    server: PeerId,
    q: TxQueue,
}

impl RawPeer {
    /// A new endpoint of `net` with a path to the server at `addr`.
    pub fn new(net: &LoopbackNet, addr: &str) -> Self {
        let mut t = net.endpoint();
        let server = t.connect(addr).expect("loopback server");
        Self {
            t,
            server,
            q: TxQueue::new(64),
        }
    }

    /// A new endpoint of `net` that others reach at [`addr`](Self::addr) and that answers
    /// them with [`send_to`](Self::send_to).
    pub fn serving(net: &LoopbackNet) -> Self {
        Self {
            t: net.endpoint(),
            server: PeerId::MAX,
            q: TxQueue::new(64),
        }
    }

    /// This endpoint's address.
    pub fn addr(&self) -> String {
        self.t.local_addr()
    }

    /// Sends the bytes `f` to the server as one frame.
    pub fn send(&mut self, f: &[u8]) {
        self.send_to(self.server, f);
    }

    /// Sends the bytes `f` to `peer` as one frame.
    pub fn send_to(&mut self, peer: PeerId, f: &[u8]) {
        self.q.push(peer, f);
        while !self.q.is_empty() {
            self.t.send_burst(&mut self.q).expect("loopback send");
        }
    }

    /// The frames that have arrived, oldest first.
    pub fn received(&mut self) -> Vec<Vec<u8>> {
        self.received_from().into_iter().map(|(_, f)| f).collect()
    }

    /// The frames that have arrived with their senders, oldest first.
    pub fn received_from(&mut self) -> Vec<(PeerId, Vec<u8>)> {
        let mut got = Vec::new();
        self.t
            .recv_burst(1024, |p, f| got.push((p, f.to_vec())))
            .expect("loopback receive");
        got
    }
}

/// How a frame is spoiled before it is sent (or not).
#[derive(Clone, Debug)]
pub enum Spoil {
    None,
    Unsealed,
    FlipByte(usize),
    Truncate(usize),
    TrailingByte,
    Kind(u8),
    Flags(u16),
}

/// How frames are spoiled: mostly not at all.
pub fn spoil() -> impl Strategy<Value = Spoil> {
    prop_oneof![
        12 => Just(Spoil::None),
        1 => Just(Spoil::Unsealed),
        1 => any::<usize>().prop_map(Spoil::FlipByte),
        1 => any::<usize>().prop_map(Spoil::Truncate),
        1 => Just(Spoil::TrailingByte),
        1 => any::<u8>().prop_map(Spoil::Kind),
        1 => any::<u16>().prop_map(Spoil::Flags),
    ]
}

/// `f` spoiled as `how` says.
pub fn spoiled(mut f: Vec<u8>, how: &Spoil) -> Vec<u8> {
    match how {
        Spoil::None => {}
        Spoil::Unsealed => {
            f[4] &= !(FLAG_CHECKSUM as u8);
            f[28..32].fill(0);
        }
        Spoil::FlipByte(i) => {
            let i = i % f.len();
            f[i] ^= 0x5A;
        }
        Spoil::Truncate(n) => f.truncate(n % f.len()),
        Spoil::TrailingByte => f.push(0),
        Spoil::Kind(k) => {
            f[3] = *k;
            frame::seal(&mut f);
        }
        Spoil::Flags(x) => {
            f[4..6].copy_from_slice(&(x | FLAG_CHECKSUM).to_le_bytes());
            frame::seal(&mut f);
        }
    }
    f
}
