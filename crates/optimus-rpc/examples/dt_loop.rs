//! One thread plays client, soft NIC and worker in turn over a record service (RPCAcc C3's
//! gateway packet, `testdata/rpc/gateway.proto`), with DT on the app core or on the NIC core:
//! a deterministic loop for `valgrind --tool=callgrind`, whose per-function costs show where
//! each core's time per call goes (`cargo run --release --example dt_loop -- nic 20000`).

use optimus_core::json::{self, JsonOptions};
use optimus_core::{binary, FieldRef};
use optimus_rpc::offload::{Placement, RecordService, PLACEMENT_PROTO};
use optimus_rpc::transport::NoTransport;
use optimus_rpc::{ClientOptions, Failure, Handler, Nic, NicConfig, RegionLayout, LOCAL_CONN};
use optimus_schema::SchemaSet;

const GATEWAY_PROTO: &str = include_str!("../../../testdata/rpc/gateway.proto");
const PACKET_JSON: &str = include_str!("../../../testdata/rpc/gateway_packet.json");
/// Calls per client batch, as `optimus rpc-bench --batch 32`.
const BATCH: usize = 32;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let site = args.next().unwrap_or_else(|| "nic".into());
    let calls: usize = args.next().map_or(Ok(20_000), |a| a.parse())?;
    let schema = SchemaSet::from_sources(&[
        ("optimus/placement.proto", PLACEMENT_PROTO),
        ("svc.proto", GATEWAY_PROTO),
    ])?;
    let placement = Placement::from_proto_options(&schema, GATEWAY_PROTO)?;
    let id = schema.message_by_name("gw.Packet").ok_or("no gw.Packet")?;
    let body = binary::encode(
        &schema,
        &json::decode(&schema, id, PACKET_JSON, &JsonOptions::default())?,
    );
    let svc = RecordService::new(schema, "gw.Gateway")?
        .on("Forward", |req, reply| {
            let (Some(flow @ FieldRef::U64(_)), Some(tenant)) = (req.get(0), req.get(1)) else {
                return Err(Failure::bad_request("no flow or tenant"));
            };
            reply.set(0, flow)?;
            reply.set(1, tenant)?;
            Ok(())
        })?
        .forward("Forward", "eth", "eth")?
        .forward("Forward", "ip", "ip")?
        .forward("Forward", "ports", "ports")?
        .forward("Forward", "payload", "payload")?
        .with_placement(placement);
    let cfg = NicConfig {
        layout: RegionLayout {
            n_qps: 2,
            ring_lines: 8192,
        },
        max_payload: 64 * 1024,
        ..NicConfig::default()
    };
    let (mut nic, h) = Nic::new(NoTransport, cfg)?;
    let mut handler: Box<dyn Handler> = if site == "app" {
        Box::new(svc.app_core())
    } else {
        let (nic_dt, app_dt) = svc.offload();
        nic.set_offload(nic_dt);
        Box::new(app_dt)
    };
    let mut worker = h.worker()?;
    let mut client = h.client(ClientOptions {
        batch: BATCH,
        ..ClientOptions::default()
    })?;
    let (mut done, mut bytes) = (0, 0);
    while done < calls {
        for _ in 0..BATCH {
            client.submit(LOCAL_CONN, 0, &body)?;
        }
        client.flush();
        let mut got = 0;
        while got < BATCH {
            nic.poll_once();
            worker.serve_once(&mut *handler)?;
            nic.poll_once();
            got += client.poll(|_, r| bytes += r.map_or(0, <[u8]>::len));
        }
        done += BATCH;
    }
    println!("{done} calls, {bytes} reply bytes");
    Ok(())
}
