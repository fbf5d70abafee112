//! The five DeathStarBench social-network services of RPCAcc §IV-C and §IV-H (UniqueId, User,
//! UrlShorten, SocialGraph, ComposePost) as protobuf messages, for the engine to trace.
//!
//! The services' RPCs are Thrift structs in `socialNetwork/social_network.thrift`
//! (delimitrou/DeathStarBench); RPCAcc runs them over protobuf without printing its `.proto`,
//! so each call's argument and result structs are written as proto3 messages with the same
//! fields, order and types (`map<string, string>` as repeated key/value entries, `list<T>` as
//! `repeated T`, enums as `int32`), as Optimus Prime's §6.4 model does (`op::dsb`). As a
//! protobuf service returns a message, a call returning a struct (`ComposeCreatorWithUserId`'s
//! `Creator`) has that struct as its response; one returning a base type or a container has a
//! result message holding it (the Thrift result's field 0 as field 1). The call of each
//! service is the one the compose-post path makes of it: `ComposeUniqueId`,
//! `ComposeCreatorWithUserId`, `ComposeUrls`, `GetFollowers` and `ComposePost` (whose result
//! is `void`, so it has only a request). Values follow the benchmark's generators:
//! `compose-post.lua` (a 256-character text, 1–6 mentions and URLs of `http://` + 64
//! characters, 1–5 media of 18-digit ids and type `png`, users 1..962), the
//! URL-shorten handler (`http://short-url/` + 10 characters), the Jaeger `uber-trace-id`
//! carrier, and for `GetFollowers` the socfb-Reed98 graph the benchmark loads (962 users,
//! 18,812 edges: 39 followers on average). Six draws per service, k = 1..6 as in `op::dsb`.

use super::social_gen::{Gen, Wire};
use super::MessageSet;

/// The social network's structs and the calls' argument and result structs of RPCAcc and of
/// Optimus Prime §6.4, as proto3.
pub const SOCIALNET_PROTO: &str = include_str!("../../data/socialnet.proto");

/// The five services, in §IV-H's order.
pub const SERVICES: [&str; 5] = [
    "unique-id",
    "user",
    "url-shorten",
    "social-graph",
    "compose-post",
];

/// Draws per service.
pub const DRAWS: usize = 6;

/// One call: request type and bytes, and the response's where the call has one.
pub type CallBytes = ((&'static str, Vec<u8>), Option<(&'static str, Vec<u8>)>);

/// The calls of `service` (one of [`SERVICES`]), [`DRAWS`] draws, from `seed`.
pub fn calls(service: &str, seed: u64) -> Vec<CallBytes> {
    let mut g = Gen::new(seed);
    (1..=DRAWS)
        .map(|k| {
            let mut req = Wire::default();
            let mut resp = Wire::default();
            req.int(1, g.id());
            match service {
                "unique-id" => {
                    // post_type POST (0): proto3 leaves a zero off the wire.
                    g.carrier(&mut req, 3);
                    resp.int(1, g.id());
                    (
                        ("sn.ComposeUniqueIdArgs", req.0),
                        Some(("sn.ComposeUniqueIdResult", resp.0)),
                    )
                }
                "user" => {
                    let n = g.user();
                    req.int(2, n);
                    req.bytes(3, format!("username_{n}").as_bytes());
                    g.carrier(&mut req, 4);
                    resp.int(1, n);
                    resp.bytes(2, format!("username_{n}").as_bytes());
                    (
                        ("sn.ComposeCreatorWithUserIdArgs", req.0),
                        Some(("sn.Creator", resp.0)),
                    )
                }
                "url-shorten" => {
                    g.compose_urls(k, &mut req, &mut resp);
                    (
                        ("sn.ComposeUrlsArgs", req.0),
                        Some(("sn.ComposeUrlsResult", resp.0)),
                    )
                }
                "social-graph" => {
                    req.int(2, g.user());
                    g.carrier(&mut req, 3);
                    // Packed repeated int64: 39 followers on average; k spreads the draws.
                    let mut packed = Wire::default();
                    for _ in 0..(29 + 3 * k) {
                        packed.varint(g.user());
                    }
                    resp.bytes(1, &packed.0);
                    (
                        ("sn.GetFollowersArgs", req.0),
                        Some(("sn.GetFollowersResult", resp.0)),
                    )
                }
                _ => {
                    let n = g.user();
                    req.bytes(2, format!("username_{n}").as_bytes());
                    req.int(3, n);
                    req.bytes(4, g.post_text(k, false).as_bytes());
                    let media = k.min(5);
                    let mut ids = Wire::default();
                    for _ in 0..media {
                        ids.varint(100_000_000_000_000_000 + g.id() % 900_000_000_000_000_000);
                    }
                    req.bytes(5, &ids.0);
                    for _ in 0..media {
                        req.bytes(6, b"png");
                    }
                    // post_type POST (0) stays off the wire.
                    g.carrier(&mut req, 8);
                    (("sn.ComposePostArgs", req.0), None)
                }
            }
        })
        .collect()
}

/// Per service, its calls' requests and responses in call order, from `seed`.
pub fn sets(seed: u64) -> Vec<MessageSet> {
    SERVICES
        .iter()
        .map(|&s| {
            let messages: Vec<(String, Vec<u8>)> = calls(s, seed)
                .into_iter()
                .flat_map(|(q, r)| std::iter::once(q).chain(r))
                .map(|(t, b)| (t.to_string(), b))
                .collect();
            MessageSet {
                name: s.to_string(),
                proto: SOCIALNET_PROTO.to_string(),
                avg_field_bytes: vec![0.0; messages.len()],
                messages,
            }
        })
        .collect()
}
