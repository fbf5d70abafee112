//! RPC server fuzz target: the input is a script of frames from three loopback peers and
//! polls of a server NIC that echoes inline. Frames can be left as the input has them or have
//! their header made well-formed and sealed, so that the fuzzer reaches connections, windows,
//! de-duplication and the response cache. Whatever the script, the NIC does not panic or
//! hang, every frame it sends is well-formed and sealed, and it keeps within its response
//! budget and connection limit.
#![no_main]

mod script;

use libfuzzer_sys::fuzz_target;
use optimus_rpc::frame::{
    check_frame, seal, FrameHeader, FrameKind, FLAG_CHECKSUM, HEADER_BYTES, MAGIC,
    MAX_PAYLOAD_BYTES, VERSION,
};
use optimus_rpc::transport::{loopback::Loopback, PeerId, TxQueue};
use optimus_rpc::{LoopbackNet, Nic, NicConfig, RegionLayout, Status, Transport};
use script::Script;

const PEERS: usize = 3;
const BUDGET: usize = 512;
const MAX_CONNS: usize = 2;

/// `raw` as a frame: as given, or (`fix`) with magic, version, length and checksum made right,
/// keeping the kind, flags, ids and payload the input chose, except that the connection id is
/// read as an index into `acked`, the ids the server gave (they carry its random epoch).
fn frame(raw: &[u8], fix: bool, acked: &[u32]) -> Vec<u8> {
    let mut f = raw.to_vec();
    if fix {
        f.resize(f.len().max(HEADER_BYTES), 0);
        let given = FrameHeader::decode(&f).expect("32 bytes");
        let h = FrameHeader {
            magic: MAGIC,
            version: VERSION,
            payload_len: (f.len() - HEADER_BYTES) as u32,
            conn_id: match acked.len() {
                0 => given.conn_id,
                n => acked[given.conn_id as usize % n],
            },
            ..given
        };
        f[..HEADER_BYTES].copy_from_slice(&h.encode());
        seal(&mut f);
    }
    f
}

fuzz_target!(|data: &[u8]| {
    let net = LoopbackNet::new();
    let server = net.endpoint();
    let addr = server.local_addr();
    let cfg = NicConfig {
        max_payload: 256,
        layout: RegionLayout {
            n_qps: 1,
            ring_lines: 64,
        },
        response_cache_bytes: BUDGET,
        max_server_conns: MAX_CONNS,
        ..NicConfig::default()
    };
    let (mut nic, _handle) = Nic::new(server, cfg).expect("nic");
    nic.set_handler(|method: u16, req: &[u8], resp: &mut Vec<u8>| {
        resp.extend_from_slice(req);
        if method == 1 {
            resp.resize(300, 0); // over max_payload: answered TooLarge
        }
        Status::from_aux(u32::from(method % 8))
    });
    let mut peers: Vec<(Loopback, PeerId)> = (0..PEERS)
        .map(|_| {
            let mut t = net.endpoint();
            let p = t.connect(&addr).expect("loopback server");
            (t, p)
        })
        .collect();
    let mut q = TxQueue::new(8);
    let mut acked: Vec<u32> = Vec::new();
    let mut script = Script(data);
    while let Some(op) = script.byte() {
        let (t, server) = &mut peers[usize::from(op >> 6) % PEERS];
        if op & 1 == 0 {
            let len = usize::from(script.byte().unwrap_or(0));
            let f = frame(script.bytes(len), op & 2 != 0, &acked);
            q.push(*server, &f);
            while !q.is_empty() {
                t.send_burst(&mut q).expect("loopback send");
            }
        } else {
            for _ in 0..(op >> 1) % 4 + 1 {
                nic.poll_once();
            }
        }
        for (t, _) in peers.iter_mut() {
            t.recv_burst(1024, |_, f| {
                let (h, kind, _) = check_frame(f, MAX_PAYLOAD_BYTES).expect("a well-formed frame");
                assert!(h.flags & FLAG_CHECKSUM != 0, "a sealed frame");
                if kind == FrameKind::ConnectAck && !acked.contains(&h.conn_id) {
                    acked.push(h.conn_id);
                }
            })
            .expect("loopback receive");
        }
        let s = nic.stats();
        assert!(s.cached_response_bytes as usize <= BUDGET, "{s:?}");
        assert!(s.conns_opened - s.conns_closed <= MAX_CONNS as u64, "{s:?}");
    }
});
