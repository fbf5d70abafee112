//! buffa's generated types for `testdata/peers.proto` (owned messages, their views and serde
//! JSON), written by build.rs with buffa-build.

#![allow(
    clippy::all,
    clippy::pedantic,
    missing_docs,
    dead_code,
    unreachable_pub
)]

include!(concat!(env!("OUT_DIR"), "/buffa/mod.rs"));
