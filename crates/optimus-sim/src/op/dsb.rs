//! The DeathStarBench social-network RPCs of Optimus Prime §6.4, as protobuf messages.
//!
//! §6.4 runs three services of DeathStarBench's social network (URL-Shorten, Login,
//! Read-Post) over Apache Thrift. Their messages are Thrift structs
//! (`socialNetwork/social_network.thrift`, delimitrou/DeathStarBench); the engine has no
//! Thrift codec, so each call's argument and result structs become proto3 messages with the
//! same fields, in the same order and with the same types (Thrift `map<string, string>` as
//! repeated key/value entries, `list<T>` as `repeated T`), in the one social-network `.proto`
//! RPCAcc's services use too (`data/socialnet.proto`). As a protobuf service returns a
//! message, Read-Post's response is the `Post` its handler fills, not Thrift's result struct
//! around it (whose field header and stop bytes are fixed); URL-Shorten's list and Login's
//! string are held by a result message, the Thrift result's field 0 as field 1. Both
//! formats write one tag and one value per field, so the per-field work the models see is
//! the same; only the tag and length encodings differ by a byte or two.
//!
//! Field values follow the benchmark's generators: the `compose-post.lua` workload script
//! (a 256-character text, 1–6 user mentions `@username_N`, 1–6 URLs `http://` + 64
//! characters, 1–5 media of 18-digit ids and type `png`), the URL-shorten handler
//! (`http://short-url/` + 10 characters) and the Jaeger tracing context every call carries
//! (`uber-trace-id` → `trace:span:parent:flags`, 16 hex digits each). The Login token is an
//! HS256 JWT with the handler's claims (user id, username, timestamp, ttl): 209 characters.
//! A service's messages are the six draws k = 1..6 of the script's loop counts (mentions and
//! URLs k, media min(k, 5)); one Login shape serves for all.

use optimus_trace::Direction;
use rand_core::RngCore;

use super::{run, OpConfig};
use crate::cpu::CpuConfig;
use crate::error::Result;
use crate::workload::social_gen::{Gen, Wire};
use crate::workload::socialnet::SOCIALNET_PROTO;
use crate::workload::{trace_messages, MessageTrace, TraceSource};

/// A §6.4 service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Service {
    /// `UrlShortenService::ComposeUrls`.
    UrlShorten,
    /// `UserService::Login`.
    Login,
    /// `PostStorageService::ReadPost`.
    ReadPost,
}

impl Service {
    /// The three services, in §6.4's order.
    pub const ALL: [Service; 3] = [Service::UrlShorten, Service::Login, Service::ReadPost];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Service::UrlShorten => "url-shorten",
            Service::Login => "login",
            Service::ReadPost => "read-post",
        }
    }
}

/// One call as the server sees it: the request it deserializes, the response it serializes.
#[derive(Clone, Debug)]
pub struct Call {
    /// Deserialization trace of the argument struct.
    pub request: MessageTrace,
    /// Serialization trace of the response.
    pub response: MessageTrace,
}

/// Wire bytes of `(request type, request, response type, response)` for draw `k` (1..=6).
fn call_bytes(s: Service, k: usize, g: &mut Gen) -> [(&'static str, Vec<u8>); 2] {
    let mut req = Wire::default();
    let mut resp = Wire::default();
    match s {
        Service::UrlShorten => {
            req.int(1, g.id());
            g.compose_urls(k, &mut req, &mut resp);
            [
                ("sn.ComposeUrlsArgs", req.0),
                ("sn.ComposeUrlsResult", resp.0),
            ]
        }
        Service::Login => {
            let n = g.user();
            req.int(1, g.id());
            req.bytes(2, format!("username_{n}").as_bytes());
            req.bytes(3, format!("password_{n}").as_bytes());
            g.carrier(&mut req, 4);
            let token = format!("{}.{}.{}", g.chars(36), g.chars(128), g.chars(43));
            resp.bytes(1, token.as_bytes());
            [("sn.LoginArgs", req.0), ("sn.LoginResult", resp.0)]
        }
        Service::ReadPost => {
            let (post_id, req_id) = (g.id(), g.id());
            req.int(1, req_id);
            req.int(2, post_id);
            g.carrier(&mut req, 3);
            resp.int(1, post_id);
            g.named(&mut resp, 2);
            resp.int(3, g.id());
            resp.bytes(4, g.post_text(k, true).as_bytes());
            for _ in 0..k {
                g.named(&mut resp, 5);
            }
            for _ in 0..k.min(5) {
                let mut m = Wire::default();
                // 18 decimal digits.
                m.int(
                    1,
                    100_000_000_000_000_000 + g.id() % 900_000_000_000_000_000,
                );
                m.bytes(2, b"png");
                resp.message(6, m);
            }
            for _ in 0..k {
                g.url(&mut resp, 7);
            }
            // Milliseconds since the epoch, around the paper's time (2019-2020).
            resp.int(8, 1_570_000_000_000 + u64::from(g.0.next_u32()));
            [("sn.ReadPostArgs", req.0), ("sn.Post", resp.0)]
        }
    }
}

/// The calls of `service` (six draws; Login has one shape), traced by the engine behind
/// `source`.
///
/// # Errors
/// As [`trace_messages`].
pub fn calls(source: &mut dyn TraceSource, service: Service, seed: u64) -> Result<Vec<Call>> {
    let mut g = Gen::new(seed);
    let draws = if service == Service::Login { 1 } else { 6 };
    let mut out = Vec::new();
    for k in 1..=draws {
        let [(qt, q), (rt, r)] = call_bytes(service, k, &mut g);
        let name = format!("sn.{}", service.name());
        let mut request = trace_messages(
            source,
            &name,
            SOCIALNET_PROTO,
            &[(qt, &q)],
            Direction::Decode,
            &[],
        )?;
        let mut response = trace_messages(
            source,
            &name,
            SOCIALNET_PROTO,
            &[(rt, &r)],
            Direction::Encode,
            &[],
        )?;
        out.push(Call {
            request: request.remove(0),
            response: response.remove(0),
        });
    }
    Ok(out)
}

/// DT time of `calls` on the CPU model over their DT latency on OP, as a core of an idle
/// server sees it (§6.4: "each microservice runs in isolation"): OP `cfg` with one requesting
/// core, from its MMIO request to the completion, request deserialization plus response
/// serialization, summed over the calls. The paper does not say which of the 15 application
/// cores (§5) a service is pinned on, and the core's distance to OP's corner tile sets the
/// MMIO round trip and every forwarded read's detour, so OP's latency is the mean over the
/// service running on each tile but OP's.
///
/// # Errors
/// As [`crate::op::run`].
pub fn dt_reduction(cpu: &CpuConfig, cfg: &OpConfig, calls: &[Call]) -> Result<f64> {
    let mut cfg = cfg.clone();
    cfg.dispatcher.cores = 1;
    let tiles = cfg.noc.mesh * cfg.noc.mesh;
    let (mut cpu_ns, mut op_ns) = (0.0, 0.0);
    for c in calls {
        for t in [&c.request, &c.response] {
            cpu_ns += cpu.message_ns(t);
            for tile in 1..tiles {
                cfg.dispatcher.first_core_tile = tile;
                op_ns +=
                    run(&cfg, std::slice::from_ref(t))?.request_latency_ns / f64::from(tiles - 1);
            }
        }
    }
    Ok(cpu_ns / op_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use optimus_core::binary::EngineTraces as Engine;
    use optimus_trace::Event;

    #[test]
    fn each_call_decodes_its_request_and_encodes_its_response() {
        for s in Service::ALL {
            let calls = calls(&mut Engine, s, 1).unwrap();
            assert_eq!(calls.len(), if s == Service::Login { 1 } else { 6 });
            for c in &calls {
                assert_eq!(c.request.direction, Direction::Decode);
                assert_eq!(c.response.direction, Direction::Encode);
            }
        }
        // Draw k carries k mentions and URLs (and min(k, 5) media): each post is larger.
        let posts: Vec<u64> = calls(&mut Engine, Service::ReadPost, 1)
            .unwrap()
            .iter()
            .map(|c| c.response.wire_bytes)
            .collect();
        assert!(posts.windows(2).all(|w| w[0] < w[1]), "{posts:?}");
        // The Login token is a 209-character JWT.
        let login = &calls(&mut Engine, Service::Login, 1).unwrap()[0];
        assert_eq!(login.response.wire_bytes, 1 + 2 + 209);
    }

    /// Schema entries a trace reads at its top level.
    fn top_level_fields(t: &MessageTrace) -> usize {
        let mut depth = 0u32;
        let mut top = 0;
        for e in &t.events {
            match e {
                Event::Enter { .. } => depth += 1,
                Event::Leave => depth -= 1,
                Event::SchemaRead { .. } if depth == 0 => top += 1,
                _ => {}
            }
        }
        top
    }

    #[test]
    fn a_struct_return_is_the_response_and_other_returns_are_held_by_a_result() {
        // Read-Post returns a Post: its fields (id, creator, request id, text, a mention,
        // a medium, a URL, timestamp) are the response's top level.
        let post = &calls(&mut Engine, Service::ReadPost, 1).unwrap()[0];
        assert_eq!(top_level_fields(&post.response), 8);
        // URL-Shorten returns a list and Login a string: one result field holds each.
        for s in [Service::UrlShorten, Service::Login] {
            let c = &calls(&mut Engine, s, 1).unwrap()[0];
            assert_eq!(top_level_fields(&c.response), 1, "{s:?}");
        }
    }

    #[test]
    fn the_reduction_is_the_cpu_time_over_ops_so_a_free_cpu_gains_nothing() {
        let calls = calls(&mut Engine, Service::Login, 1).unwrap();
        let cfg = OpConfig::paper_4x4(1, 1);
        let x = dt_reduction(&CpuConfig::default(), &cfg, &calls).unwrap();
        assert!(x > 1.0, "{x}");
        let free = CpuConfig {
            per_field: 0.0,
            per_varint_byte: 0.0,
            per_copy_byte: 0.0,
            per_submessage: 0.0,
            ..CpuConfig::default()
        };
        assert_eq!(dt_reduction(&free, &cfg, &calls).unwrap(), 0.0);
    }
}
