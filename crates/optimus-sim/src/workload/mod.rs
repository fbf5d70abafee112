//! Workloads: traces of the papers' message classes and trace files from the engine.
//!
//! The Optimus Prime classes (Table 2: Flat, Mixed, Nested) are the repository's
//! `testdata/peers.proto` messages with the exact bytes of `testdata/{flat,mixed,nested}.bin`;
//! [`builder`] turns them into encode or decode traces. [`hpb`] generates the
//! HyperProtoBench-like message population the RPCAcc experiments use.

pub mod builder;
pub mod hpb;
pub mod proto;

use optimus_trace::{Direction, Event, Region};

use crate::error::{Result, SimError};
pub use builder::TraceBuilder;
pub use proto::{Instance, ProtoFile};

/// The three Optimus Prime message classes' schema (Table 2).
pub const PEERS_PROTO: &str = include_str!("../../../../testdata/peers.proto");
/// The Flat message, serialized (485 B).
pub const FLAT_BIN: &[u8] = include_bytes!("../../../../testdata/flat.bin");
/// The Mixed message, serialized (297 B).
pub const MIXED_BIN: &[u8] = include_bytes!("../../../../testdata/mixed.bin");
/// The Nested message, serialized (232 B).
pub const NESTED_BIN: &[u8] = include_bytes!("../../../../testdata/nested.bin");

/// Base of the first core's message arena; cores' arenas are [`ARENA_STRIDE`] apart.
pub const ARENA_BASE: u64 = 0x10_0000_0000;
/// Distance between two cores' arenas (Optimus Prime §3.2: per-core arenas).
pub const ARENA_STRIDE: u64 = 0x1_0000_0000;
/// Base of accelerator-resident memory (RPCAcc placement).
pub const ACCEL_BASE: u64 = 0x8000_0000_0000;

/// One message's trace, with the numbers the models and reports need.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageTrace {
    /// The events, `MessageBegin` … `MessageEnd`.
    pub events: Vec<Event>,
    /// Serialized size.
    pub wire_bytes: u64,
    /// Encode or decode.
    pub direction: Direction,
}

impl MessageTrace {
    /// Bytes of schema and field data read per byte of serialized output (Table 2's R/W ratio).
    pub fn rw_ratio(&self) -> f64 {
        let read: u64 = self
            .events
            .iter()
            .map(|e| match e {
                Event::SchemaRead { size, .. } => u64::from(*size),
                Event::FieldRead { bytes, region, .. } if *region != Region::Buffer => u64::from(*bytes),
                _ => 0,
            })
            .sum();
        read as f64 / self.wire_bytes.max(1) as f64
    }
}

/// Splits a decoded event stream into messages.
///
/// # Errors
/// [`SimError::Workload`] if the stream holds no message.
pub fn split_messages(name: &str, events: &[Event]) -> Result<Vec<MessageTrace>> {
    optimus_trace::check_structure(events)?;
    let mut out = Vec::new();
    let mut start = 0;
    let mut direction = Direction::Encode;
    for (i, e) in events.iter().enumerate() {
        match e {
            Event::MessageBegin { direction: d, .. } => {
                start = i;
                direction = *d;
            }
            Event::MessageEnd { wire_bytes } => {
                out.push(MessageTrace { events: events[start..=i].to_vec(), wire_bytes: *wire_bytes, direction })
            }
            _ => {}
        }
    }
    if out.is_empty() {
        return Err(SimError::Workload { name: name.to_string(), why: "the trace holds no message".into() });
    }
    Ok(out)
}

/// The Optimus Prime message classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MessageClass {
    /// Max depth 1, 485 B.
    Flat,
    /// Max depth 2, 297 B.
    Mixed,
    /// Max depth 2, 232 B, every field but one a sub-message.
    Nested,
}

impl MessageClass {
    /// All three, in Table 2's order.
    pub const ALL: [MessageClass; 3] = [MessageClass::Flat, MessageClass::Mixed, MessageClass::Nested];

    /// Lower-case name (`flat`).
    pub fn name(self) -> &'static str {
        match self {
            MessageClass::Flat => "flat",
            MessageClass::Mixed => "mixed",
            MessageClass::Nested => "nested",
        }
    }

    /// Parses a lower-case name.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == s)
    }

    fn type_name(self) -> &'static str {
        match self {
            MessageClass::Flat => "Flat",
            MessageClass::Mixed => "Mixed",
            MessageClass::Nested => "Nested",
        }
    }

    fn bytes(self) -> &'static [u8] {
        match self {
            MessageClass::Flat => FLAT_BIN,
            MessageClass::Mixed => MIXED_BIN,
            MessageClass::Nested => NESTED_BIN,
        }
    }

    /// The decoded instance and its .proto.
    ///
    /// # Errors
    /// Only if the repository's test data is corrupt.
    pub fn instance(self) -> Result<(ProtoFile, Instance)> {
        let proto = ProtoFile::parse(PEERS_PROTO)?;
        let ty = proto.find(self.type_name()).ok_or_else(|| SimError::Workload {
            name: self.name().into(),
            why: format!("peers.proto has no message {}", self.type_name()),
        })?;
        let inst = proto.decode(ty, self.bytes())?;
        Ok((proto, inst))
    }

    /// The class's trace for `direction`, built at the first core's arena.
    ///
    /// # Errors
    /// Only if the repository's test data is corrupt.
    pub fn trace(self, direction: Direction) -> Result<MessageTrace> {
        let (proto, inst) = self.instance()?;
        let b = TraceBuilder::new(&proto);
        let events = match direction {
            Direction::Encode => b.encode(&inst, ARENA_BASE, ACCEL_BASE),
            Direction::Decode => b.decode(&inst, ARENA_BASE, ACCEL_BASE),
        };
        Ok(MessageTrace { events, wire_bytes: inst.wire_bytes(), direction })
    }
}

/// Named workloads accepted by `--workload`: `flat`, `mixed`, `nested` (serialization) and
/// `flat-deser`, `mixed-deser`, `nested-deser`.
///
/// # Errors
/// [`SimError::Workload`] for an unknown name.
pub fn named(name: &str) -> Result<MessageTrace> {
    let (class, dir) = match name.strip_suffix("-deser") {
        Some(c) => (c, Direction::Decode),
        None => (name.strip_suffix("-ser").unwrap_or(name), Direction::Encode),
    };
    let class = MessageClass::from_name(class).ok_or_else(|| SimError::Workload {
        name: name.to_string(),
        why: "unknown workload (flat, mixed, nested, with optional -ser/-deser)".into(),
    })?;
    class.trace(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_match_table2_sizes_and_depths() {
        for (c, size, depth) in [(MessageClass::Flat, 485, 1), (MessageClass::Mixed, 297, 2), (MessageClass::Nested, 232, 2)] {
            let (_, inst) = c.instance().unwrap();
            assert_eq!(inst.wire_bytes(), size, "{c:?}");
            assert_eq!(inst.depth(), depth, "{c:?}");
            let t = c.trace(Direction::Encode).unwrap();
            optimus_trace::check_structure(&t.events).unwrap();
            let written: u64 = t
                .events
                .iter()
                .map(|e| match e {
                    Event::FieldWrite { region: Region::Buffer, bytes, .. } => u64::from(*bytes),
                    _ => 0,
                })
                .sum();
            assert_eq!(written, size, "{c:?}: output bytes");
        }
    }

    #[test]
    fn rw_ratio_orders_like_table2() {
        let r: Vec<f64> = MessageClass::ALL.iter().map(|c| c.trace(Direction::Encode).unwrap().rw_ratio()).collect();
        // Table 2: Flat 2.6 < Mixed 2.75 < Nested 4.25.
        assert!(r[0] < r[2] && r[1] < r[2], "{r:?}");
    }

    #[test]
    fn trace_file_roundtrip_through_split() {
        let t = named("mixed").unwrap();
        let bytes = optimus_trace::encode(&t.events);
        let back = split_messages("x", &optimus_trace::decode(&bytes).unwrap()).unwrap();
        assert_eq!(back, vec![t]);
        assert!(named("bogus").is_err());
        assert!(split_messages("x", &[]).is_err());
    }
}
