//! The Thrift cells of `optimus bench`: TBinaryProtocol and TCompactProtocol encode and
//! decode of the embedded workloads' Thrift versions (`testdata/thrift/peers.thrift`, the same
//! messages as `testdata/peers.proto`'s), binary → compact transcoding (optimus's direct
//! `thrift::transcode` beside decode + encode through a record) and the gateway path, a
//! `peers.proto` message to the `peers.thrift` struct through a compiled converter
//! (`testdata/thrift/*.map.toml`), with Apache Thrift C++ (`thrift-cpp`, where the build found
//! libthrift) beside.
//!
//! Before anything is timed, each implementation's output must be the bytes optimus's decode
//! then encode of the workload gives (the Apache Thrift files themselves); where not, a note
//! goes to stderr and the row still prints.

use std::hint::black_box;

use anyhow::{Context, Result};
use optimus_core::binary::DecodeOptions;
use optimus_core::convert::{Plan, Program};
use optimus_core::thrift::{self, Protocol};
use optimus_core::{engine, Arena};
use optimus_schema::{MessageId, SchemaSet};

use super::peers::Notes;
use super::Runner;

/// The workloads' Thrift IDL: the Optimus Prime classes as Thrift structs.
pub(crate) const PEERS_THRIFT: &str = include_str!("../../../testdata/thrift/peers.thrift");

/// One embedded workload's Thrift version.
pub(crate) struct Embedded {
    /// The workload's name (`flat`, ...).
    pub name: &'static str,
    /// Its struct's bare name.
    pub type_name: &'static str,
    /// Its bytes as Apache Thrift writes them in TBinaryProtocol.
    pub binary: &'static [u8],
    /// ... and in TCompactProtocol.
    pub compact: &'static [u8],
    /// The map from its `peers.proto` message's field names to the struct's.
    pub map: &'static str,
}

/// The embedded workloads' Thrift versions.
pub(crate) const WORKLOADS: &[Embedded] = &[
    Embedded {
        name: "flat",
        type_name: "Flat",
        binary: include_bytes!("../../../testdata/thrift/flat.tbin"),
        compact: include_bytes!("../../../testdata/thrift/flat.tcompact"),
        map: include_str!("../../../testdata/thrift/flat.map.toml"),
    },
    Embedded {
        name: "mixed",
        type_name: "Mixed",
        binary: include_bytes!("../../../testdata/thrift/mixed.tbin"),
        compact: include_bytes!("../../../testdata/thrift/mixed.tcompact"),
        map: include_str!("../../../testdata/thrift/mixed.map.toml"),
    },
    Embedded {
        name: "nested",
        type_name: "Nested",
        binary: include_bytes!("../../../testdata/thrift/nested.tbin"),
        compact: include_bytes!("../../../testdata/thrift/nested.tcompact"),
        map: include_str!("../../../testdata/thrift/nested.map.toml"),
    },
];

/// The Thrift schema of the embedded workloads.
pub(crate) fn schema() -> Result<SchemaSet> {
    SchemaSet::from_thrift_sources(&[("peers.thrift", PEERS_THRIFT)])
        .context("testdata/thrift/peers.thrift")
}

/// One embedded workload's Thrift version.
pub(crate) struct ThriftWorkload {
    /// Its struct in the Thrift schema.
    pub id: MessageId,
    /// TBinaryProtocol bytes.
    pub binary: Vec<u8>,
    /// TCompactProtocol bytes.
    pub compact: Vec<u8>,
    /// The workload as `peers.proto` protobuf: the input of `protobuf-to-thrift-compact`.
    pub protobuf: Vec<u8>,
    /// The field map from the protobuf message to the struct.
    pub map: Program,
}

impl ThriftWorkload {
    /// The Thrift version of embedded workload `name` (whose protobuf bytes are
    /// `protobuf`), or `None` where it has none.
    pub(crate) fn embedded(
        schema: &SchemaSet,
        name: &str,
        protobuf: &[u8],
    ) -> Result<Option<ThriftWorkload>> {
        let Some(&Embedded {
            type_name,
            binary,
            compact,
            map,
            ..
        }) = WORKLOADS.iter().find(|w| w.name == name)
        else {
            return Ok(None);
        };
        let id = schema
            .message_by_name(&format!("peers.{type_name}"))
            .with_context(|| format!("peers.thrift has no struct {type_name}"))?;
        let map = Program::from_map_toml(&format!("testdata/thrift/{name}.map.toml"), map)?;
        Ok(Some(ThriftWorkload {
            id,
            binary: binary.to_vec(),
            compact: compact.to_vec(),
            protobuf: protobuf.to_vec(),
            map,
        }))
    }

    fn input(&self, p: Protocol) -> &[u8] {
        match p {
            Protocol::Binary => &self.binary,
            Protocol::Compact => &self.compact,
        }
    }
}

/// A Thrift cell's operation.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ThriftOp {
    /// A record (decoded once) written into a reused buffer.
    Encode(Protocol),
    /// Into an arena reset before each message (C++: a reused struct).
    Decode(Protocol),
    /// TBinaryProtocol in, TCompactProtocol out.
    BinaryToCompact,
    /// A `peers.proto` message in, the `peers.thrift` struct out in TCompactProtocol,
    /// through a record and a compiled converter.
    ProtobufToCompact,
}

impl ThriftOp {
    /// The size of the cell's input (for encode: of its output), for the rows' Gbps.
    pub(crate) fn bytes(self, w: &ThriftWorkload) -> usize {
        match self {
            ThriftOp::Encode(p) | ThriftOp::Decode(p) => w.input(p).len(),
            ThriftOp::BinaryToCompact => w.binary.len(),
            ThriftOp::ProtobufToCompact => w.protobuf.len(),
        }
    }
}

fn protocol_name(p: Protocol) -> &'static str {
    match p {
        Protocol::Binary => "binary",
        Protocol::Compact => "compact",
    }
}

/// What optimus's decode of the workload then encode in `to` gives: the bytes every
/// implementation's output must equal.
fn expected(schema: &SchemaSet, w: &ThriftWorkload, to: Protocol) -> Result<Vec<u8>> {
    let arena = Arena::new();
    let record = thrift::decode(
        schema,
        w.id,
        &w.binary,
        &arena,
        Protocol::Binary,
        &DecodeOptions::default(),
    )?;
    let mut out = Vec::new();
    thrift::encode(record, to, &mut out)?;
    Ok(out)
}

/// Notes where `implementation`'s output for the cell differs from optimus's decode + encode.
fn check(
    notes: &mut Notes,
    implementation: &str,
    workload: &str,
    what: &str,
    expected: &[u8],
    got: &[u8],
) {
    if expected != got {
        notes.note(format!(
            "{implementation}'s {what} of {workload} is {} bytes that differ from optimus's \
             ({}); its rows measure its own output",
            got.len(),
            expected.len()
        ));
    }
}

/// The runners of Thrift cell `op` on workload `name`: optimus's (first), then Apache Thrift
/// C++'s where `peer_names` has `thrift-cpp`; each checked to give optimus's bytes first.
/// `proto` is the workloads' protobuf schema and the workload's message type there.
#[allow(clippy::too_many_arguments)]
pub(crate) fn runners<'r>(
    op: ThriftOp,
    schema: &'r SchemaSet,
    proto: (&'r SchemaSet, MessageId),
    w: &'r ThriftWorkload,
    name: &str,
    held: &'r Arena,
    peer_names: &[String],
    notes: &mut Notes,
) -> Result<Vec<Runner<'r>>> {
    let opts = DecodeOptions::default();
    let mut runners = Vec::new();
    match op {
        ThriftOp::Encode(p) => {
            let record = thrift::decode(schema, w.id, &w.binary, held, Protocol::Binary, &opts)?;
            let mut out = Vec::with_capacity(w.input(p).len());
            thrift::encode(record, p, &mut out)?;
            let what = format!("{} encoding", protocol_name(p));
            check(notes, "optimus", name, &what, w.input(p), &out);
            runners.push(Runner {
                implementation: "optimus",
                call: Box::new(move || {
                    out.clear();
                    thrift::encode(black_box(record), p, &mut out)?;
                    black_box(&out);
                    Ok(())
                }),
            });
        }
        ThriftOp::Decode(p) => {
            let mut arena = Arena::new();
            let input = w.input(p);
            let record = thrift::decode(schema, w.id, input, &arena, p, &opts)?;
            let mut back = Vec::new();
            thrift::encode(record, p, &mut back)?;
            let what = format!("{} decode and re-encode", protocol_name(p));
            check(notes, "optimus", name, &what, input, &back);
            runners.push(Runner {
                implementation: "optimus",
                call: Box::new(move || {
                    arena.reset();
                    black_box(thrift::decode(
                        schema,
                        w.id,
                        black_box(input),
                        &arena,
                        p,
                        &opts,
                    )?);
                    Ok(())
                }),
            });
        }
        ThriftOp::BinaryToCompact => {
            let want = expected(schema, w, Protocol::Compact)?;
            let mut out = Vec::with_capacity(w.compact.len());
            thrift::transcode(
                schema,
                w.id,
                &w.binary,
                Protocol::Binary,
                Protocol::Compact,
                &opts,
                &mut out,
            )?;
            check(notes, "optimus", name, "binary-to-compact", &want, &out);
            runners.push(Runner {
                implementation: "optimus",
                call: Box::new(move || {
                    out.clear();
                    thrift::transcode(
                        schema,
                        w.id,
                        black_box(&w.binary),
                        Protocol::Binary,
                        Protocol::Compact,
                        &opts,
                        &mut out,
                    )?;
                    black_box(&out);
                    Ok(())
                }),
            });
            // The same through a record: decode, then encode.
            let opts = DecodeOptions::default();
            let mut arena = Arena::new();
            let mut out = Vec::with_capacity(w.compact.len());
            runners.push(Runner {
                implementation: "optimus-records",
                call: Box::new(move || {
                    arena.reset();
                    out.clear();
                    let record = thrift::decode(
                        schema,
                        w.id,
                        black_box(&w.binary),
                        &arena,
                        Protocol::Binary,
                        &opts,
                    )?;
                    thrift::encode(record, Protocol::Compact, &mut out)?;
                    black_box(&out);
                    Ok(())
                }),
            });
        }
        ThriftOp::ProtobufToCompact => {
            let (proto_schema, proto_id) = proto;
            let plan = Plan::compile(proto_schema, proto_id, schema, w.id, &w.map)?;
            let mut arena = Arena::new();
            let mut out = Vec::with_capacity(w.compact.len());
            {
                let record = engine::decode(proto_schema, proto_id, &w.protobuf, &arena, &opts)?;
                thrift::encode(plan.apply(record, &arena)?, Protocol::Compact, &mut out)?;
            }
            check(
                notes,
                "optimus",
                name,
                "protobuf-to-compact",
                &w.compact,
                &out,
            );
            arena.reset();
            runners.push(Runner {
                implementation: "optimus",
                call: Box::new(move || {
                    arena.reset();
                    out.clear();
                    let record = engine::decode(
                        proto_schema,
                        proto_id,
                        black_box(&w.protobuf),
                        &arena,
                        &opts,
                    )?;
                    thrift::encode(plan.apply(record, &arena)?, Protocol::Compact, &mut out)?;
                    black_box(&out);
                    Ok(())
                }),
            });
        }
    }
    if peer_names.iter().any(|p| p == "thrift-cpp") {
        runners.extend(cpp_runner(op, schema, w, name, notes)?);
    }
    Ok(runners)
}

/// Apache Thrift C++'s generated templates for the workload: encode a struct read once,
/// decode into a reused struct, binary → compact by reading with one protocol and writing with
/// the other. It has no protobuf, so no row for `protobuf-to-thrift-compact`.
#[cfg(thrift_peer)]
fn cpp_runner<'r>(
    op: ThriftOp,
    schema: &SchemaSet,
    w: &'r ThriftWorkload,
    name: &str,
    notes: &mut Notes,
) -> Result<Option<Runner<'r>>> {
    use super::thrift_peer::{self, ThriftPeer};
    let Some(which) = thrift_peer::which(name) else {
        return Ok(None);
    };
    let mut peer = ThriftPeer::new(which)?;
    let call: Box<dyn FnMut() -> Result<()>> = match op {
        ThriftOp::Encode(p) => {
            peer.read(p, w.input(p))?;
            let want = expected(schema, w, p)?;
            let what = format!("{} encoding", protocol_name(p));
            check(notes, "thrift-cpp", name, &what, &want, peer.write(p)?);
            Box::new(move || {
                black_box(peer.write(p)?.len());
                Ok(())
            })
        }
        ThriftOp::Decode(p) => {
            let input = w.input(p);
            peer.read(p, input)?;
            let want = expected(schema, w, p)?;
            let what = format!("{} decode and re-encode", protocol_name(p));
            check(notes, "thrift-cpp", name, &what, &want, peer.write(p)?);
            Box::new(move || peer.read(p, black_box(input)))
        }
        ThriftOp::BinaryToCompact => {
            let want = expected(schema, w, Protocol::Compact)?;
            let got = peer.transcode(Protocol::Binary, Protocol::Compact, &w.binary)?;
            check(notes, "thrift-cpp", name, "binary-to-compact", &want, got);
            Box::new(move || {
                let out =
                    peer.transcode(Protocol::Binary, Protocol::Compact, black_box(&w.binary))?;
                black_box(out.len());
                Ok(())
            })
        }
        ThriftOp::ProtobufToCompact => return Ok(None),
    };
    Ok(Some(Runner {
        implementation: "thrift-cpp",
        call,
    }))
}

#[cfg(not(thrift_peer))]
fn cpp_runner<'r>(
    _: ThriftOp,
    _: &SchemaSet,
    _: &'r ThriftWorkload,
    _: &str,
    _: &mut Notes,
) -> Result<Option<Runner<'r>>> {
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::{check, Notes};

    #[test]
    fn output_other_than_optimus_bytes_is_noted_once() {
        let mut notes = Notes::default();
        check(
            &mut notes,
            "thrift-cpp",
            "flat",
            "binary encoding",
            b"ab",
            b"ab",
        );
        assert!(notes.take_new().is_empty());
        for _ in 0..2 {
            check(
                &mut notes,
                "thrift-cpp",
                "flat",
                "binary encoding",
                b"ab",
                b"ac",
            );
        }
        let new = notes.take_new();
        assert_eq!(new.len(), 1, "{new:?}");
        assert!(
            new[0].contains("thrift-cpp's binary encoding of flat"),
            "{new:?}"
        );
    }
}
