//! Hostile shared-memory peer fuzz target: one queue pair of a NIC's region belongs to a peer
//! that writes whatever the input says into its rings (indices, headers, payloads, the
//! completion ring's consumer index), interleaved with calls from a well-behaved client on
//! another queue pair. Whatever the peer writes, the NIC does not panic or hang, and every
//! good call gets its own reply within a bounded number of polls. A peer that is quarantined
//! detaches and claims its queue pair again, so the input can attack a fresh one.
#![no_main]

mod script;

use libfuzzer_sys::fuzz_target;
use optimus_rpc::nic::CONTROL_INTERVAL;
use optimus_rpc::shm::{QP_CLIENT, QP_FREE, QP_QUARANTINED};
use optimus_rpc::{
    ClientOptions, Nic, NicConfig, NoTransport, RegionLayout, RpcClient, Status, LOCAL_CONN,
};
use script::Script;

/// Polls a good call may take: a request out, the inline handler, the completion back; a
/// control pass may fall in between.
const CALL_POLLS: usize = 64;

/// One call from the good client, driven to completion by polling `nic`.
fn good_call(nic: &mut Nic<NoTransport>, c: &mut RpcClient, n: u32) {
    let req = format!("good call {n}").into_bytes();
    let id = c.submit(LOCAL_CONN, 0, &req).expect("good submit");
    c.flush();
    let mut got = None;
    for _ in 0..CALL_POLLS {
        nic.poll_once();
        c.poll(|cid, r| {
            assert_eq!(cid, id, "a reply to a call never made");
            got = Some(r.map(<[u8]>::to_vec).map_err(|e| e.to_string()));
        });
        if got.is_some() {
            break;
        }
    }
    match got {
        Some(Ok(resp)) => assert_eq!(resp, req, "good call {n} got another reply"),
        Some(Err(e)) => panic!("good call {n} failed: {e}"),
        None => panic!("good call {n} got no reply in {CALL_POLLS} polls"),
    }
}

fuzz_target!(|data: &[u8]| {
    let cfg = NicConfig {
        max_payload: 256,
        layout: RegionLayout {
            n_qps: 2,
            ring_lines: 16,
        },
        ..NicConfig::default()
    };
    let (mut nic, h) = Nic::new(NoTransport, cfg).expect("nic");
    nic.set_handler(|_m: u16, req: &[u8], resp: &mut Vec<u8>| {
        resp.extend_from_slice(req);
        Status::Ok
    });
    let region = h.region().clone();
    let mut good = h.client(ClientOptions::default()).expect("good client");
    let evil = region.claim(QP_CLIENT).expect("a QP for the hostile peer");
    let span = region.qp_rings_bytes();
    let mut s = Script(data);
    let mut calls = 0u32;
    while let Some(op) = s.byte() {
        if op & 3 == 3 {
            good_call(&mut nic, &mut good, calls);
            calls += 1;
        } else {
            // Write: offset (2 bytes, modulo the QP's rings) and up to 64 bytes.
            let off = s.bytes(2);
            let off = usize::from(off.first().copied().unwrap_or(0))
                | usize::from(off.get(1).copied().unwrap_or(0)) << 8;
            let len = usize::from(op >> 2);
            let bytes = s.bytes(len).to_vec();
            region.scribble(evil, off % span, &bytes);
            // Let the NIC look at it: a burst, and now and then a control pass.
            nic.poll_once();
        }
        if region.qp_state(evil) == QP_QUARANTINED {
            region.detach(evil);
            for _ in 0..2 * CONTROL_INTERVAL {
                if region.qp_state(evil) == QP_FREE {
                    break;
                }
                nic.poll_once();
            }
            assert_eq!(region.qp_state(evil), QP_FREE, "detached QP not freed");
            assert!(region.claim_at(evil, QP_CLIENT), "QP reclaimed");
        }
    }
    // However the script ended, the good client is still served.
    good_call(&mut nic, &mut good, calls);
});
