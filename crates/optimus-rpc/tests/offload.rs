//! DT on the NIC core: requests decoded into records by the NIC before the worker polls,
//! NIC-resident fields kept out of the app's records, replies merged and encoded by the NIC
//! (co-serialization), kernels on the NIC core, automatic field updating, and one outcome per
//! call when workers leave or the network is lossy.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::config;
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::json::{self, JsonOptions};
use optimus_core::{FieldRef, Message, Value};
use optimus_rpc::kernels::{Kernel, Side};
use optimus_rpc::offload::{FieldUpdating, HandBack, Placement, RecordService, PLACEMENT_PROTO};
use optimus_rpc::transport::lossy::Lossy;
use optimus_rpc::transport::NoTransport;
use optimus_rpc::{
    ClientOptions, Failure, IdlePolicy, LoopbackNet, LossConfig, Nic, NicConfig, RpcError, Status,
    Transport, LOCAL_CONN,
};
use optimus_schema::SchemaSet;

const GATEWAY_PROTO: &str = include_str!("../../../testdata/rpc/gateway.proto");
const PACKET_JSON: &str = include_str!("../../../testdata/rpc/gateway_packet.json");
const HPB_PROTO: &str = include_str!("../../../testdata/rpc/hpb.proto");
const HPB_JSON: &str = include_str!("../../../testdata/rpc/hpb_record.json");
const KEY: [u8; 32] = [7; 32];

fn schema(source: &'static str) -> Arc<SchemaSet> {
    Arc::new(
        SchemaSet::from_sources(&[
            ("optimus/placement.proto", PLACEMENT_PROTO),
            ("svc.proto", source),
        ])
        .expect("test schema compiles"),
    )
}

fn message(s: &SchemaSet, ty: &str, text: &str) -> Message {
    let id = s.message_by_name(ty).unwrap();
    json::decode(s, id, text, &JsonOptions::default()).unwrap()
}

/// What the gateway handler saw of each request: the fields set in its host record.
type Seen = Arc<Mutex<Vec<Vec<usize>>>>;

/// The gateway: NAT (flow → source address), TTL − 1, ports rewritten; Ethernet header and
/// payload forwarded. `read_payload`: the handler also reads the payload (a NIC-resident
/// field) through its view.
fn gateway(seen: Seen, read_payload: bool) -> RecordService {
    let s = schema(GATEWAY_PROTO);
    let placement = Placement::from_proto_options(&s, GATEWAY_PROTO).unwrap();
    RecordService::new(s, "gw.Gateway")
        .unwrap()
        .on("Forward", move |req, reply| {
            seen.lock()
                .unwrap()
                .push(req.record().set_fields().collect());
            if read_payload {
                let p = req.index_of("payload")?;
                if !matches!(req.get(p), Some(FieldRef::Bytes(b)) if !b.is_empty()) {
                    return Err(Failure::bad_request("no payload"));
                }
            }
            let r = reply.record();
            let flow = req.get(req.index_of("flow")?);
            let Some(FieldRef::U64(flow)) = flow else {
                return Err(Failure::bad_request("no flow"));
            };
            reply.set(reply.index_of("flow")?, FieldRef::U64(flow))?;
            reply.set(
                reply.index_of("tenant")?,
                req.get(1).unwrap_or(FieldRef::U32(0)),
            )?;
            if let Some(FieldRef::Message(ip)) = req.get(req.index_of("ip")?) {
                let out = r.message_mut(reply.arena(), reply.index_of("ip")?)?;
                for i in 0..6 {
                    if let Some(v) = ip.get(i) {
                        out.set(i, v)?;
                    }
                }
                out.set(0, FieldRef::U32(0x0a00_0000 | (flow as u32 & 0xffff)))?;
                if let Some(FieldRef::U32(ttl)) = ip.get(2) {
                    out.set(2, FieldRef::U32(ttl - 1))?;
                }
            }
            let ports = r.message_mut(reply.arena(), reply.index_of("ports")?)?;
            ports.set(0, FieldRef::U32(50_000))?;
            ports.set(1, FieldRef::U32(4_500))?;
            Ok(())
        })
        .unwrap()
        .forward("Forward", "eth", "eth")
        .unwrap()
        .forward("Forward", "payload", "payload")
        .unwrap()
        .with_placement(placement)
}

fn with_payload_kernels(svc: RecordService) -> RecordService {
    svc.with_kernels(
        "Forward",
        Side::Request,
        "payload",
        vec![Kernel::Lz4, Kernel::AesGcm { key: KEY }],
    )
    .unwrap()
    .with_kernels("Forward", Side::Reply, "payload", vec![Kernel::Crc32c])
    .unwrap()
}

/// A NIC with one worker serving `svc`: DT on the NIC core (`offload`) or on the worker.
struct Server {
    nic: Option<optimus_rpc::NicThread<NoTransport>>,
    client: optimus_rpc::RpcClient,
    stop: Arc<AtomicBool>,
    worker: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start(svc: &RecordService, offload: bool, cfg: NicConfig) -> Self {
        let (mut nic, handle) = Nic::new(NoTransport, cfg).unwrap();
        let mut handler: Box<dyn optimus_rpc::Handler> = if offload {
            let (nic_dt, app_dt) = svc.offload();
            nic.set_offload(nic_dt);
            Box::new(app_dt)
        } else {
            Box::new(svc.app_core())
        };
        let nic = nic.spawn(None, IdlePolicy::default());
        let mut w = handle.worker().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let worker = std::thread::spawn(move || {
            w.run(&mut *handler, &s, IdlePolicy::default()).unwrap();
        });
        let client = handle.client(ClientOptions::default()).unwrap();
        Self {
            nic: Some(nic),
            client,
            stop,
            worker: Some(worker),
        }
    }

    fn call(&mut self, body: &[u8]) -> Result<Vec<u8>, RpcError> {
        self.call_method(0, body)
    }

    fn call_method(&mut self, method: u16, body: &[u8]) -> Result<Vec<u8>, RpcError> {
        let mut out = Vec::new();
        self.client.call(LOCAL_CONN, method, body, &mut out)?;
        Ok(out)
    }

    fn stop(mut self) -> Nic<NoTransport> {
        self.stop.store(true, Ordering::Relaxed);
        self.worker.take().unwrap().join().unwrap();
        self.nic.take().unwrap().stop()
    }
}

fn seal(s: &SchemaSet, mut packet: Message) -> Vec<u8> {
    let Some(Value::Bytes(p)) = packet.get_by_name(s, "payload").ok() else {
        panic!("packet has a payload")
    };
    let sealed =
        optimus_rpc::kernels::seal_chain(&[Kernel::Lz4, Kernel::AesGcm { key: KEY }], &p).unwrap();
    packet
        .set_by_name(s, "payload", Value::Bytes(sealed))
        .unwrap();
    binary::encode(s, &packet)
}

#[test]
fn dt_on_the_nic_core_gives_the_bytes_dt_on_the_app_core_gives() {
    let seen_nic: Seen = Arc::default();
    let seen_app: Seen = Arc::default();
    let s = schema(GATEWAY_PROTO);
    let packet = message(&s, "gw.Packet", PACKET_JSON);
    let body = binary::encode(&s, &packet);
    let mut nic = Server::start(&gateway(seen_nic.clone(), false), true, config(2));
    let mut app = Server::start(&gateway(seen_app.clone(), false), false, config(2));
    let (a, b) = (nic.call(&body).unwrap(), app.call(&body).unwrap());
    assert_eq!(a, b, "the same reply bytes wherever DT runs");
    let id = s.message_by_name("gw.Packet").unwrap();
    let reply = binary::decode(&s, id, &a, &DecodeOptions::default()).unwrap();
    // Forwarded from NIC memory, merged into the reply by the NIC.
    assert_eq!(
        reply.get_by_name(&s, "payload").unwrap(),
        packet.get_by_name(&s, "payload").unwrap()
    );
    assert_eq!(
        reply.get_by_name(&s, "eth").unwrap(),
        packet.get_by_name(&s, "eth").unwrap()
    );
    // Written by the host handler.
    let ip = reply.get_by_name(&s, "ip").unwrap();
    let Value::Message(ip) = ip else { panic!() };
    assert_eq!(ip.get_by_name(&s, "ttl").unwrap(), Value::U32(63));
    assert_eq!(ip.get_by_name(&s, "src").unwrap(), Value::U32(0x0a00_0001));
    // The app's record never held the NIC-resident fields (eth 2, ip 3, ports 4, payload
    // 5) offloaded (it read ip through a view); decoded on the app core it held them all.
    assert_eq!(seen_nic.lock().unwrap()[0], [0, 1]);
    assert_eq!(seen_app.lock().unwrap()[0], [0, 1, 2, 3, 4, 5]);
    nic.stop();
    app.stop();
}

#[test]
fn calls_handed_back_to_the_app_core_give_the_same_bytes() {
    let s = schema(GATEWAY_PROTO);
    let packet = message(&s, "gw.Packet", PACKET_JSON);
    let body = seal(&s, packet);
    let seen_nic: Seen = Arc::default();
    let handing =
        with_payload_kernels(gateway(seen_nic.clone(), true)).with_hand_back(HandBack::Every(2));
    let mut nic = Server::start(&handing, true, config(2));
    let mut app = Server::start(
        &with_payload_kernels(gateway(Arc::default(), true)),
        false,
        config(2),
    );
    // One call at a time: the worker has always taken every earlier request, so every
    // second call's DT goes back to it.
    for i in 0..10 {
        let (a, b) = (nic.call(&body).unwrap(), app.call(&body).unwrap());
        assert_eq!(a, b, "call {i}: the same reply bytes wherever DT runs");
    }
    // Errors of a handed-back call come from the app core's DT, with one outcome each.
    for _ in 0..2 {
        match nic.call(&[0xff, 0xff, 0xff]) {
            Err(RpcError::Status {
                status: Status::HandlerError,
                detail,
            }) => assert!(detail.contains("bad request"), "{detail}"),
            other => panic!("{other:?}"),
        }
    }
    // Decoded on the NIC core, the app's record held the host fields alone; handed back,
    // it held them all.
    let seen = seen_nic.lock().unwrap().clone();
    assert_eq!(seen.len(), 10);
    assert_eq!(seen.iter().filter(|f| f.len() == 6).count(), 5, "{seen:?}");
    let nic = nic.stop();
    assert_eq!(nic.offload().unwrap().handed_back(), 6);
    app.stop();
}

#[test]
fn the_hyperprotobench_like_store_echoes_nic_resident_fields_through_the_nic() {
    let s = schema(HPB_PROTO);
    let placement = Placement::from_proto_options(&s, HPB_PROTO).unwrap();
    assert_eq!(placement.len(), 6);
    let svc = RecordService::new(s.clone(), "hpb.Store")
        .unwrap()
        .on("Put", |req, reply| {
            for name in ["id", "timestamp", "user"] {
                if let Some(v) = req.get(req.index_of(name)?) {
                    reply.set(reply.index_of(name)?, v)?;
                }
            }
            reply.set(reply.index_of("status")?, FieldRef::I32(1))?;
            Ok(())
        })
        .unwrap()
        .forward("Put", "spans", "spans")
        .unwrap()
        .forward("Put", "tags", "tags")
        .unwrap()
        .forward("Put", "blob", "blob")
        .unwrap()
        .with_kernels(
            "Put",
            Side::Request,
            "blob",
            vec![Kernel::Zstd { level: 1 }],
        )
        .unwrap()
        .with_kernels("Put", Side::Reply, "blob", vec![Kernel::Lz4])
        .unwrap()
        .with_placement(placement);
    let mut record = message(&s, "hpb.Record", HPB_JSON);
    let Ok(Value::Bytes(blob)) = record.get_by_name(&s, "blob") else {
        panic!()
    };
    let z = optimus_rpc::kernels::seal_chain(&[Kernel::Zstd { level: 1 }], &blob).unwrap();
    record.set_by_name(&s, "blob", Value::Bytes(z)).unwrap();
    let body = binary::encode(&s, &record);
    let mut on_nic = Server::start(&svc, true, config(2));
    let mut on_app = Server::start(&svc, false, config(2));
    let a = on_nic.call(&body).unwrap();
    assert_eq!(a, on_app.call(&body).unwrap());
    let ack = binary::decode(
        &s,
        s.message_by_name("hpb.Ack").unwrap(),
        &a,
        &DecodeOptions::default(),
    )
    .unwrap();
    let Ok(Value::Bytes(sealed)) = ack.get_by_name(&s, "blob") else {
        panic!()
    };
    assert_eq!(
        optimus_rpc::kernels::open_chain(&[Kernel::Lz4], &sealed, 1 << 20).unwrap(),
        blob
    );
    for f in ["spans", "tags", "user", "id"] {
        assert_eq!(
            ack.get_by_name(&s, f).unwrap(),
            record.get_by_name(&s, f).unwrap(),
            "{f}"
        );
    }
    on_nic.stop();
    on_app.stop();
}

#[test]
fn kernels_run_on_the_nic_core_and_a_tampered_field_is_refused_with_one_outcome() {
    let s = schema(GATEWAY_PROTO);
    let packet = message(&s, "gw.Packet", PACKET_JSON);
    let svc = with_payload_kernels(gateway(Arc::default(), true));
    let mut server = Server::start(&svc, true, config(2));
    let body = seal(&s, packet.clone());
    let reply = server.call(&body).unwrap();
    let id = s.message_by_name("gw.Packet").unwrap();
    let reply = binary::decode(&s, id, &reply, &DecodeOptions::default()).unwrap();
    let Ok(Value::Bytes(p)) = reply.get_by_name(&s, "payload") else {
        panic!()
    };
    let opened = optimus_rpc::kernels::open_chain(&[Kernel::Crc32c], &p, 1 << 20).unwrap();
    assert_eq!(
        Value::Bytes(opened),
        packet.get_by_name(&s, "payload").unwrap()
    );

    // Flip one byte of the encrypted payload (the last of the body: payload is field 6).
    let mut bad = body.clone();
    *bad.last_mut().unwrap() ^= 1;
    match server.call(&bad) {
        Err(RpcError::Status {
            status: Status::HandlerError,
            detail,
        }) => assert!(
            detail.contains("gw.Packet.payload") && detail.contains("aes-gcm"),
            "{detail}"
        ),
        other => panic!("{other:?}"),
    }
    // Not a packet at all, and an unknown method: errors, and the NIC goes on serving.
    match server.call(&[0xff, 0xff, 0xff]) {
        Err(RpcError::Status {
            status: Status::HandlerError,
            detail,
        }) => assert!(detail.contains("bad request"), "{detail}"),
        other => panic!("{other:?}"),
    }
    let r = server.call_method(9, &body);
    assert!(
        matches!(
            r,
            Err(RpcError::Status {
                status: Status::UnknownMethod,
                ..
            })
        ),
        "{r:?}"
    );
    assert!(server.call(&body).is_ok());
    server.stop();
}

#[test]
fn a_handler_failure_reaches_the_caller_and_the_slot_serves_the_next_call() {
    let s = schema(GATEWAY_PROTO);
    let svc = RecordService::new(s.clone(), "gw.Gateway")
        .unwrap()
        .on("Forward", |req, _| match req.get(0) {
            Some(FieldRef::U64(7)) => Err(Failure::bad_request("flow 7 is blocked")),
            _ => Ok(()),
        })
        .unwrap();
    let mut server = Server::start(&svc, true, config(2));
    let packet = |flow: u64| {
        let mut m = Message::new(&s, s.message_by_name("gw.Packet").unwrap());
        m.set_by_name(&s, "flow", Value::U64(flow)).unwrap();
        binary::encode(&s, &m)
    };
    for _ in 0..3 {
        match server.call(&packet(7)) {
            Err(RpcError::Status {
                status: Status::HandlerError,
                detail,
            }) => {
                assert_eq!(detail, "flow 7 is blocked")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(server.call(&packet(8)).unwrap(), Vec::<u8>::new());
    }
    server.stop();
}

#[test]
fn fields_the_app_uses_move_to_the_host_and_back_with_calls_in_flight() {
    let s = schema(GATEWAY_PROTO);
    let reading = Arc::new(AtomicBool::new(true));
    let r = reading.clone();
    let seen: Seen = Arc::default();
    let seen2 = seen.clone();
    let placement = Placement::from_proto_options(&s, GATEWAY_PROTO).unwrap();
    let svc = RecordService::new(s.clone(), "gw.Gateway")
        .unwrap()
        .on("Forward", move |req, reply| {
            seen2
                .lock()
                .unwrap()
                .push(req.record().set_fields().collect());
            if r.load(Ordering::Relaxed) {
                // Reads the payload: NIC-resident at first, so through a view.
                let p = req.get(5);
                reply.set(5, p.unwrap_or(FieldRef::Bytes(b"")))?;
            }
            reply.set(0, req.get(0).unwrap_or(FieldRef::U64(0)))?;
            Ok(())
        })
        .unwrap()
        .forward("Forward", "payload", "payload")
        .unwrap()
        .with_placement(placement)
        .with_field_updating(FieldUpdating {
            window: 16,
            promote_at: 4,
        });
    let (mut nic, h) = Nic::new(NoTransport, config(2)).unwrap();
    let (nic_dt, app_dt) = svc.offload();
    nic.set_offload(nic_dt);
    let mut w = h.worker().unwrap();
    let mut c = h.client(ClientOptions::default()).unwrap();
    let id = s.message_by_name("gw.Packet").unwrap();
    let body = |i: u64| {
        let mut m = Message::new(&s, id);
        m.set_by_name(&s, "flow", Value::U64(i)).unwrap();
        m.set_by_name(&s, "payload", Value::Bytes(i.to_le_bytes().repeat(3)))
            .unwrap();
        binary::encode(&s, &m)
    };
    // Driven by hand, so that many calls are in flight across each placement change: 40
    // requests decoded by the NIC before the worker serves any.
    let mut outcomes: HashMap<u64, u64> = HashMap::new();
    let mut next = 0u64;
    let mut app = app_dt;
    let mut round = |nic: &mut Nic<NoTransport>,
                     reading_now: bool,
                     next: &mut u64,
                     outcomes: &mut HashMap<u64, u64>| {
        reading.store(reading_now, Ordering::Relaxed);
        for _ in 0..40 {
            let id = c.submit(LOCAL_CONN, 0, &body(*next)).unwrap();
            outcomes.insert(id, *next);
            *next += 1;
        }
        c.flush();
        let mut done = 0;
        for _ in 0..10_000 {
            nic.poll_once();
            w.serve_once(&mut app).unwrap();
            nic.poll_once();
            done += c.poll(|cid, r| {
                let i = outcomes.remove(&cid).expect("one outcome per call");
                let m = binary::decode(&s, id, r.unwrap(), &DecodeOptions::default()).unwrap();
                assert_eq!(m.get_by_name(&s, "flow").unwrap(), Value::U64(i));
                assert_eq!(
                    m.get_by_name(&s, "payload").unwrap(),
                    Value::Bytes(i.to_le_bytes().repeat(3))
                );
            });
            if done == 40 {
                break;
            }
        }
        assert_eq!(done, 40);
    };
    round(&mut nic, true, &mut next, &mut outcomes);
    round(&mut nic, true, &mut next, &mut outcomes);
    let p = nic.offload().unwrap().placement();
    assert!(
        !p.is_nic(id, 5),
        "a payload the app reads moved to the host"
    );
    assert!(
        p.is_nic(id, 2),
        "the eth header the app never touches stays"
    );
    assert!(nic.offload().unwrap().updating_stats().moves_to_host >= 1);
    // Now on the host: the app's record holds the payload.
    assert!(seen.lock().unwrap().last().unwrap().contains(&5));
    round(&mut nic, false, &mut next, &mut outcomes);
    round(&mut nic, false, &mut next, &mut outcomes);
    let p = nic.offload().unwrap().placement();
    assert!(p.is_nic(id, 5), "unused again: back in NIC memory");
    assert!(!seen.lock().unwrap().last().unwrap().contains(&5));
    assert!(nic.offload().unwrap().updating_stats().moves_to_nic >= 1);
    assert!(outcomes.is_empty());
}

#[test]
fn a_worker_leaving_answers_its_offloaded_calls_unavailable_once() {
    let s = schema(GATEWAY_PROTO);
    let svc = gateway(Arc::default(), false);
    let (mut nic, h) = Nic::new(NoTransport, config(2)).unwrap();
    let (nic_dt, _app_dt) = svc.offload();
    nic.set_offload(nic_dt);
    let nic = nic.spawn(None, IdlePolicy::default());
    let w = h.worker().unwrap();
    let mut c = h.client(ClientOptions::default()).unwrap();
    let body = binary::encode(&s, &message(&s, "gw.Packet", PACKET_JSON));
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    for _ in 0..8 {
        let o = outcomes.clone();
        c.call_async(LOCAL_CONN, 0, &body, move |r| {
            o.lock().unwrap().push(r.err())
        })
        .unwrap();
    }
    c.flush();
    while h.stats().requests_served < 8 {
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(w);
    for _ in 0..10_000 {
        if outcomes.lock().unwrap().len() == 8 {
            break;
        }
        c.poll(|_, _| {});
        std::thread::sleep(Duration::from_micros(200));
    }
    let o = outcomes.lock().unwrap();
    assert_eq!(o.len(), 8);
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

#[test]
fn a_lossy_network_gives_each_offloaded_call_one_outcome_and_one_run_with_kernels() {
    const CALLS: u64 = 300;
    let s = schema(GATEWAY_PROTO);
    let id = s.message_by_name("gw.Packet").unwrap();
    let runs: Arc<Mutex<HashMap<u64, u32>>> = Arc::default();
    let r = runs.clone();
    let placement = Placement::from_proto_options(&s, GATEWAY_PROTO).unwrap();
    let svc = RecordService::new(s.clone(), "gw.Gateway")
        .unwrap()
        .on("Forward", move |req, reply| {
            let Some(FieldRef::U64(flow)) = req.get(0) else {
                return Err(Failure::bad_request("no flow"));
            };
            *r.lock().unwrap().entry(flow).or_default() += 1;
            reply.set(0, FieldRef::U64(flow))?;
            Ok(())
        })
        .unwrap()
        .forward("Forward", "payload", "payload")
        .unwrap()
        .with_kernels("Forward", Side::Request, "payload", vec![Kernel::Crc32c])
        .unwrap()
        .with_kernels("Forward", Side::Reply, "payload", vec![Kernel::Lz4])
        .unwrap()
        .with_placement(placement);
    let net = LoopbackNet::new();
    let loss = LossConfig {
        drop: 0.15,
        duplicate: 0.15,
        delay: 0.2,
        max_delay_polls: 40,
        corrupt: 0.03,
        seed: 5,
    };
    let server_t = Lossy::new(net.endpoint(), LossConfig { seed: 9, ..loss });
    let client_t = Lossy::new(net.endpoint(), loss);
    let addr = server_t.local_addr();
    let cfg = NicConfig {
        timeout: Duration::from_millis(3),
        max_retries: 8,
        ..config(2)
    };
    let (mut server, sh) = Nic::new(server_t, cfg).unwrap();
    let (nic_dt, app_dt) = svc.offload();
    server.set_offload(nic_dt);
    let server = server.spawn(None, IdlePolicy::default());
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (stop, mut app_dt) = (stop.clone(), app_dt);
        let mut w = sh.worker().unwrap();
        std::thread::spawn(move || w.run(&mut app_dt, &stop, IdlePolicy::default()).unwrap())
    };
    let (client, ch) = Nic::new(client_t, cfg).unwrap();
    let client = client.spawn(None, IdlePolicy::default());
    let conn = ch.connect(&addr, Duration::from_secs(20)).unwrap();
    let mut c = ch.client(ClientOptions::default()).unwrap();
    let ok = AtomicU64::new(0);
    let mut outstanding: HashMap<u64, u64> = HashMap::new();
    let (mut next, mut done) = (0u64, 0u64);
    let mut spins = 0u32;
    while done < CALLS {
        while next < CALLS && outstanding.len() < 8 {
            let mut m = Message::new(&s, id);
            m.set_by_name(&s, "flow", Value::U64(next + 1)).unwrap();
            let sealed = optimus_rpc::kernels::seal_chain(&[Kernel::Crc32c], &[next as u8; 40]);
            m.set_by_name(&s, "payload", Value::Bytes(sealed.unwrap()))
                .unwrap();
            let cid = c.submit(conn, 0, &binary::encode(&s, &m)).unwrap();
            outstanding.insert(cid, next);
            next += 1;
        }
        c.flush();
        let n = c.poll(|cid, r| {
            let i = outstanding.remove(&cid).expect("a call completed twice");
            done += 1;
            match r {
                Ok(p) => {
                    let m = binary::decode(&s, id, p, &DecodeOptions::default()).unwrap();
                    assert_eq!(m.get_by_name(&s, "flow").unwrap(), Value::U64(i + 1));
                    let Ok(Value::Bytes(p)) = m.get_by_name(&s, "payload") else {
                        panic!("no payload")
                    };
                    let p = optimus_rpc::kernels::open_chain(&[Kernel::Lz4], &p, 1 << 20);
                    assert_eq!(p.unwrap(), vec![i as u8; 40]);
                    ok.fetch_add(1, Ordering::Relaxed);
                }
                Err(RpcError::Timeout) => {}
                Err(e) => panic!("unexpected outcome {e}"),
            }
        });
        spins = if n == 0 { spins + 1 } else { 0 };
        IdlePolicy::default().wait(spins);
    }
    stop.store(true, Ordering::Relaxed);
    worker.join().unwrap();
    drop(client);
    let ss = server.stop().stats();
    let ok = ok.load(Ordering::Relaxed);
    assert!(
        runs.lock().unwrap().values().all(|&n| n == 1),
        "a handler ran twice"
    );
    assert!(ok > CALLS / 2, "lossy, not dead: {ok} ok");
    assert!(ss.duplicate_requests > 0, "{ss:?}");
}

/// Forwards at the wire into reply fields of other numbers, declared out of the reply's
/// field order, one of them sealed by a reply kernel, beside a host field: re-tagged, sealed
/// and merged by field number, the bytes DT on the app core writes.
#[test]
fn forwards_into_other_field_numbers_are_re_tagged_and_merged_in_reply_order() {
    const SRC: &str = r#"
        syntax = "proto3";
        package rt;
        import "optimus/placement.proto";
        message In {
          uint64 id = 1;
          bytes a = 2 [(optimus.placement) = NIC];
          repeated string b = 3 [(optimus.placement) = NIC];
          bytes c = 6 [(optimus.placement) = NIC];
        }
        message Out {
          uint64 id = 1;
          repeated string y = 4 [(optimus.placement) = NIC];
          bytes x = 5 [(optimus.placement) = NIC];
          bytes z = 7 [(optimus.placement) = NIC];
          string note = 9;
        }
        service Svc { rpc Go(In) returns (Out); }
    "#;
    let s = schema(SRC);
    let svc = RecordService::new(s.clone(), "rt.Svc")
        .unwrap()
        .on("Go", |req, reply| {
            reply.set(0, req.get(0).expect("id"))?;
            reply.set(4, FieldRef::Str("host"))?;
            Ok(())
        })
        .unwrap()
        .forward("Go", "c", "z")
        .unwrap()
        .forward("Go", "a", "x")
        .unwrap()
        .forward("Go", "b", "y")
        .unwrap()
        .with_kernels("Go", Side::Reply, "z", vec![Kernel::Crc32c])
        .unwrap()
        .with_placement(Placement::from_proto_options(&s, SRC).unwrap());
    let body = binary::encode(
        &s,
        &message(
            &s,
            "rt.In",
            r#"{"id": "9", "a": "AAEC", "b": ["p", "q"], "c": "BAUG"}"#,
        ),
    );
    let mut nic = Server::start(&svc, true, config(2));
    let mut app = Server::start(&svc, false, config(2));
    let (a, b) = (nic.call(&body).unwrap(), app.call(&body).unwrap());
    assert_eq!(a, b, "the same reply bytes wherever DT runs");
    let out = s.message_by_name("rt.Out").unwrap();
    let reply = binary::decode(&s, out, &a, &DecodeOptions::default()).unwrap();
    assert_eq!(
        reply.get_by_name(&s, "x").unwrap(),
        Value::Bytes(vec![0, 1, 2])
    );
    let crc = optimus_rpc::kernels::seal_chain(&[Kernel::Crc32c], &[4, 5, 6]).unwrap();
    assert_eq!(reply.get_by_name(&s, "z").unwrap(), Value::Bytes(crc));
    assert_eq!(
        reply.get_by_name(&s, "note").unwrap(),
        Value::String("host".into())
    );
    // Field numbers ascend through the reply: 1, 4, 4, 5, 7, 9.
    let mut numbers = Vec::new();
    let mut pos = 0;
    while pos < a.len() {
        let tag = a[pos];
        numbers.push(tag >> 3);
        pos += 1;
        if tag & 7 == 0 {
            while a[pos] & 0x80 != 0 {
                pos += 1;
            }
            pos += 1;
        } else {
            let len = a[pos] as usize;
            pos += 1 + len;
        }
    }
    assert_eq!(numbers, [1, 4, 4, 5, 7, 9]);
    nic.stop();
    app.stop();
}
