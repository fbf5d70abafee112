//! The peers `optimus bench` measures beside optimus in the same run: prost (generated types,
//! the embedded workloads only), prost-reflect (the runtime-schema peer, any schema), buffa
//! (generated owned types and zero-copy views, the embedded workloads only; where the build
//! found protoc) and, where the build found libprotobuf, Google protobuf C++ (generated code,
//! the embedded workloads only). Apache Thrift C++ (`thrift-cpp`, where the build found
//! libthrift) is named here too but measures the Thrift cells only (`thrift_cells`).
//!
//! Before a peer is timed it must do the same work: its decode of the workload must encode
//! to the bytes optimus encodes it as (the input's own, where the input is canonical), and
//! its JSON must carry the same message. Where it does not, a note goes to stderr (once per
//! peer and workload) and its row still prints, so the user sees what was compared.

use std::collections::HashSet;
use std::hint::black_box;

use anyhow::{bail, Context, Result};
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::json::{self, JsonOptions};
use optimus_schema::{FileDescriptorSet, SchemaSet};
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor};

use super::prost_types;
use super::{Op, Runner, Workload};

/// The peers this build can measure, by the names `--peers` takes.
pub const ALL: &[&str] = &[
    "prost",
    "prost-reflect",
    #[cfg(buffa_peer)]
    "buffa",
    #[cfg(cpp_peer)]
    "protobuf-cpp",
    #[cfg(thrift_peer)]
    "thrift-cpp",
];

/// `--peers`' default: every peer this build has (`ALL`, comma-separated).
pub const DEFAULT: &str = match (cfg!(buffa_peer), cfg!(cpp_peer), cfg!(thrift_peer)) {
    (true, true, true) => "prost,prost-reflect,buffa,protobuf-cpp,thrift-cpp",
    (true, true, false) => "prost,prost-reflect,buffa,protobuf-cpp",
    (true, false, true) => "prost,prost-reflect,buffa,thrift-cpp",
    (true, false, false) => "prost,prost-reflect,buffa",
    (false, true, true) => "prost,prost-reflect,protobuf-cpp,thrift-cpp",
    (false, true, false) => "prost,prost-reflect,protobuf-cpp",
    (false, false, true) => "prost,prost-reflect,thrift-cpp",
    (false, false, false) => "prost,prost-reflect",
};

/// The notes made so far, so each is reported once however many operations check it, and
/// those not yet reported.
#[derive(Default)]
pub struct Notes {
    seen: HashSet<String>,
    new: Vec<String>,
}

impl Notes {
    pub(super) fn note(&mut self, text: String) {
        if self.seen.insert(text.clone()) {
            self.new.push(text);
        }
    }

    /// The notes made since the last call.
    pub(super) fn take_new(&mut self) -> Vec<String> {
        std::mem::take(&mut self.new)
    }
}

/// What the peers need of a workload: prost-reflect's descriptor of its type.
pub struct PeerSchema {
    pool: DescriptorPool,
}

impl PeerSchema {
    /// The peers' view of the descriptors optimus compiled its schema from.
    pub fn new(set: FileDescriptorSet) -> Result<Self> {
        Ok(Self {
            pool: DescriptorPool::from_file_descriptor_set(set)
                .context("prost-reflect refused the schema")?,
        })
    }

    fn descriptor(&self, full_name: &str) -> Result<MessageDescriptor> {
        self.pool
            .get_message_by_name(full_name)
            .with_context(|| format!("prost-reflect has no message {full_name}"))
    }
}

/// The runners of the peers named in `peers` that can perform `op` on `w`, each checked to do
/// the same work as optimus first.
pub fn runners<'a>(
    peers: &[String],
    op: Op,
    w: &'a Workload,
    schema: &SchemaSet,
    peer_schema: &PeerSchema,
    notes: &mut Notes,
) -> Result<Vec<Runner<'a>>> {
    let mut out = Vec::new();
    for peer in peers {
        let runner = match peer.as_str() {
            "prost" => prost_runner(op, w, schema, notes)?,
            "prost-reflect" => Some(reflect_runner(op, w, schema, peer_schema, notes)?),
            #[cfg(buffa_peer)]
            "buffa" => {
                // Two implementations: the owned types and the views.
                out.extend(super::buffa_peer::runners(op, w, schema, notes)?);
                continue;
            }
            #[cfg(cpp_peer)]
            "protobuf-cpp" => cpp_runner(op, w, schema, notes)?,
            // Measured in the Thrift cells only.
            #[cfg(thrift_peer)]
            "thrift-cpp" => None,
            other => bail!("no peer named {other:?} (try {})", ALL.join(", ")),
        };
        out.extend(runner);
    }
    Ok(out)
}

/// prost's generated code for an embedded workload, binary operations only (prost has no
/// JSON mapping of its own).
fn prost_runner<'a>(
    op: Op,
    w: &'a Workload,
    schema: &SchemaSet,
    notes: &mut Notes,
) -> Result<Option<Runner<'a>>> {
    match w.type_name.as_str() {
        "bench.Flat" => typed::<prost_types::Flat>(op, w, schema, notes),
        "bench.Mixed" => typed::<prost_types::Mixed>(op, w, schema, notes),
        "bench.Nested" => typed::<prost_types::Nested>(op, w, schema, notes),
        _ => Ok(None),
    }
}

fn typed<'a, T: prost::Message + Default + 'static>(
    op: Op,
    w: &'a Workload,
    schema: &SchemaSet,
    notes: &mut Notes,
) -> Result<Option<Runner<'a>>> {
    let bytes = &w.bytes[..];
    let msg = T::decode(bytes).context("prost decode")?;
    same_bytes(notes, "prost", w, schema, &msg.encode_to_vec());
    let call: Box<dyn FnMut() -> Result<()>> = match op {
        Op::Encode => {
            let mut out = Vec::with_capacity(bytes.len());
            Box::new(move || {
                out.clear();
                black_box(&msg).encode(&mut out)?;
                black_box(&out);
                Ok(())
            })
        }
        Op::Decode => Box::new(move || {
            black_box(T::decode(black_box(bytes))?);
            Ok(())
        }),
        Op::DecodeReuse => {
            let mut reused = T::default();
            Box::new(move || {
                reused.clear();
                reused.merge(black_box(bytes))?;
                black_box(&reused);
                Ok(())
            })
        }
        Op::JsonEncode | Op::JsonDecode | Op::Transcode => return Ok(None),
    };
    Ok(Some(Runner {
        implementation: "prost",
        call,
    }))
}

/// prost-reflect's dynamic messages, every operation (its proto3 JSON mapping through serde).
fn reflect_runner<'a>(
    op: Op,
    w: &'a Workload,
    schema: &SchemaSet,
    peer_schema: &PeerSchema,
    notes: &mut Notes,
) -> Result<Runner<'a>> {
    let desc = peer_schema.descriptor(&w.type_name)?;
    let bytes = &w.bytes[..];
    let msg = DynamicMessage::decode(desc.clone(), bytes).context("prost-reflect decode")?;
    same_bytes(notes, "prost-reflect", w, schema, &msg.encode_to_vec());
    let json_text = serde_json::to_string(&msg).context("prost-reflect JSON")?;
    same_json(notes, "prost-reflect", w, schema, &json_text);
    let call: Box<dyn FnMut() -> Result<()>> = match op {
        Op::Encode => {
            let mut out = Vec::with_capacity(bytes.len());
            Box::new(move || {
                out.clear();
                black_box(&msg).encode(&mut out)?;
                black_box(&out);
                Ok(())
            })
        }
        Op::Decode => Box::new(move || {
            black_box(DynamicMessage::decode(desc.clone(), black_box(bytes))?);
            Ok(())
        }),
        Op::DecodeReuse => {
            let mut reused = DynamicMessage::new(desc);
            Box::new(move || {
                reused.clear();
                reused.merge(black_box(bytes))?;
                black_box(&reused);
                Ok(())
            })
        }
        Op::JsonEncode => Box::new(move || {
            black_box(serde_json::to_string(black_box(&msg))?);
            Ok(())
        }),
        Op::JsonDecode => Box::new(move || {
            let mut de = serde_json::Deserializer::from_str(black_box(&json_text));
            black_box(DynamicMessage::deserialize(desc.clone(), &mut de)?);
            de.end()?;
            Ok(())
        }),
        Op::Transcode => Box::new(move || {
            let m = DynamicMessage::decode(desc.clone(), black_box(bytes))?;
            black_box(serde_json::to_string(&m)?);
            Ok(())
        }),
    };
    Ok(Runner {
        implementation: "prost-reflect",
        call,
    })
}

/// What optimus encodes the workload's message as: the bytes every peer's re-encoding of it
/// must equal (the input itself, where the input is canonical).
fn optimus_bytes(schema: &SchemaSet, w: &Workload) -> Option<Vec<u8>> {
    let msg = binary::decode(schema, w.id, &w.bytes, &DecodeOptions::default()).ok()?;
    Some(binary::encode(schema, &msg))
}

/// Notes where a peer's re-encoding of the workload differs from optimus's.
pub(super) fn same_bytes(
    notes: &mut Notes,
    peer: &str,
    w: &Workload,
    schema: &SchemaSet,
    encoded: &[u8],
) {
    if optimus_bytes(schema, w).as_deref() != Some(encoded) {
        notes.note(format!(
            "{peer} re-encodes {} as {} bytes that differ from optimus's; its rows measure \
             its own output",
            w.name,
            encoded.len(),
        ));
    }
}

/// Notes where a peer's JSON, read by optimus, is not the workload's message.
pub(super) fn same_json(
    notes: &mut Notes,
    peer: &str,
    w: &Workload,
    schema: &SchemaSet,
    json_text: &str,
) {
    let back = json::decode(schema, w.id, json_text, &JsonOptions::default())
        .map(|m| binary::encode(schema, &m));
    if back.ok() != optimus_bytes(schema, w) {
        notes.note(format!(
            "{peer}'s JSON of {} is not the same message to optimus; its JSON rows measure \
             its own output",
            w.name
        ));
    }
}

/// Google protobuf C++'s generated code for an embedded workload, every operation (JSON
/// through its json_util). Encode writes a new string per message, as optimus and prost
/// write a new buffer.
#[cfg(cpp_peer)]
fn cpp_runner<'a>(
    op: Op,
    w: &'a Workload,
    schema: &SchemaSet,
    notes: &mut Notes,
) -> Result<Option<Runner<'a>>> {
    use super::cpp_peer::{self, CppMessage};
    let Some(which) = cpp_peer::which(&w.type_name) else {
        return Ok(None);
    };
    let bytes = &w.bytes[..];
    let mut msg = CppMessage::new(which)?;
    msg.parse(bytes)?;
    same_bytes(notes, "protobuf-cpp", w, schema, &msg.serialize());
    let json_text = msg.to_json()?;
    same_json(notes, "protobuf-cpp", w, schema, &json_text);
    let call: Box<dyn FnMut() -> Result<()>> = match op {
        Op::Encode => {
            let mut out = vec![0u8; bytes.len() * 2 + 64];
            Box::new(move || {
                black_box(black_box(&msg).serialize_into(&mut out)?);
                Ok(())
            })
        }
        // A new message each time, on an arena reset before each parse: C++'s fastest way
        // to a new message.
        Op::Decode => {
            let mut arena = cpp_peer::CppArena::new()?;
            Box::new(move || arena.parse(which, black_box(bytes)))
        }
        Op::DecodeReuse => {
            let mut reused = CppMessage::new(which)?;
            Box::new(move || {
                reused.parse(black_box(bytes))?;
                black_box(&reused);
                Ok(())
            })
        }
        Op::JsonEncode => Box::new(move || {
            black_box(black_box(&msg).to_json_len()?);
            Ok(())
        }),
        Op::JsonDecode => Box::new(move || cpp_peer::from_json_new(which, black_box(&json_text))),
        Op::Transcode => Box::new(move || cpp_peer::protobuf_to_json(which, black_box(bytes))),
    };
    Ok(Some(Runner {
        implementation: "protobuf-cpp",
        call,
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_peers_are_all_the_built_ones() {
        assert_eq!(super::DEFAULT, super::ALL.join(","));
    }
}
