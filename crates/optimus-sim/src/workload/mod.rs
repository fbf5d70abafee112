//! Workloads: the papers' messages, traced by the engine, and seen as an accelerator sees them.
//!
//! The model never walks messages itself. A [`TraceSource`] (the `optimus` CLI, or a test,
//! wrapping the engine's `encode_traced`/`decode_traced`) turns a `.proto` source and
//! serialized messages into engine trace events; [`view::accelerator_view`] turns those into
//! [`MessageTrace`]s the models replay. The Optimus Prime classes (Table 2: Flat, Mixed,
//! Nested) are `testdata/peers.proto` with the exact bytes of `testdata/*.bin`; [`hpb`]
//! generates the HyperProtoBench-like `.proto` and messages of the RPCAcc experiments.

pub mod hpb;
pub mod image;
pub(crate) mod social_gen;
pub mod socialnet;
pub mod view;

use optimus_trace::{Direction, Event, Region};

use crate::error::{Result, SimError};
pub use view::{accelerator_view, MemoryView, SchemaView, ViewConfig, MAX_TRACED_BYTES};

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

/// The engine, seen from the model: something that transforms serialized messages and
/// reports the events. The CLI and the tests implement it over `optimus-core`; the model
/// depends only on the trace vocabulary.
pub trait TraceSource {
    /// Compiles `proto` (proto3 source text), then for each `(full type name, wire bytes)` in
    /// order either decodes the bytes (`Direction::Decode`) or decodes them untraced and
    /// re-encodes the message (`Direction::Encode`), reporting one traced transformation per
    /// message.
    ///
    /// # Errors
    /// A description of what the engine rejected (schema or message).
    fn trace(
        &mut self,
        proto: &str,
        messages: &[(&str, &[u8])],
        direction: Direction,
    ) -> std::result::Result<Vec<Event>, String>;
}

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
                Event::FieldRead { bytes, region, .. } if *region != Region::Buffer => {
                    u64::from(*bytes)
                }
                _ => 0,
            })
            .sum();
        read as f64 / self.wire_bytes.max(1) as f64
    }

    /// Deepest nesting (0 = no sub-message).
    pub fn max_depth(&self) -> u32 {
        let (mut d, mut max) = (0u32, 0u32);
        for e in &self.events {
            match e {
                Event::Enter { .. } => {
                    d += 1;
                    max = max.max(d);
                }
                Event::Leave => d = d.saturating_sub(1),
                _ => {}
            }
        }
        max
    }
}

/// Asks `source` for the traces of `messages` and returns them as the accelerator sees them
/// (default [`ViewConfig`]).
///
/// # Errors
/// [`SimError::Engine`] when the engine rejects the input; [`SimError::Workload`] when its
/// trace is ill-formed or holds a different number of messages.
pub fn trace_messages(
    source: &mut dyn TraceSource,
    name: &str,
    proto: &str,
    messages: &[(&str, &[u8])],
    direction: Direction,
) -> Result<Vec<MessageTrace>> {
    let events = source
        .trace(proto, messages, direction)
        .map_err(|why| SimError::Engine {
            name: name.to_string(),
            why,
        })?;
    let out = accelerator_view(name, &events, &ViewConfig::default())?;
    if out.len() != messages.len() {
        return Err(SimError::Workload {
            name: name.to_string(),
            why: format!("{} messages traced, {} expected", out.len(), messages.len()),
        });
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
    pub const ALL: [MessageClass; 3] = [
        MessageClass::Flat,
        MessageClass::Mixed,
        MessageClass::Nested,
    ];

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

    /// Fully qualified type name in [`PEERS_PROTO`].
    pub fn type_name(self) -> &'static str {
        match self {
            MessageClass::Flat => "bench.Flat",
            MessageClass::Mixed => "bench.Mixed",
            MessageClass::Nested => "bench.Nested",
        }
    }

    /// The serialized message.
    pub fn bytes(self) -> &'static [u8] {
        match self {
            MessageClass::Flat => FLAT_BIN,
            MessageClass::Mixed => MIXED_BIN,
            MessageClass::Nested => NESTED_BIN,
        }
    }

    /// The class's trace for `direction`, recorded by the engine behind `source`.
    ///
    /// # Errors
    /// As [`trace_messages`].
    pub fn trace(self, source: &mut dyn TraceSource, direction: Direction) -> Result<MessageTrace> {
        let mut v = trace_messages(
            source,
            self.name(),
            PEERS_PROTO,
            &[(self.type_name(), self.bytes())],
            direction,
        )?;
        Ok(v.remove(0))
    }
}

/// Named workloads accepted by `--workload`: `flat`, `mixed`, `nested` (serialization, also
/// with `-ser`) and `flat-deser`, `mixed-deser`, `nested-deser`.
///
/// # Errors
/// [`SimError::Workload`] for an unknown name; as [`trace_messages`].
pub fn named(source: &mut dyn TraceSource, name: &str) -> Result<MessageTrace> {
    let (class, dir) = match name.strip_suffix("-deser") {
        Some(c) => (c, Direction::Decode),
        None => (name.strip_suffix("-ser").unwrap_or(name), Direction::Encode),
    };
    let class = MessageClass::from_name(class).ok_or_else(|| SimError::Workload {
        name: name.to_string(),
        why: "unknown workload (flat, mixed, nested, with optional -ser/-deser)".into(),
    })?;
    class.trace(source, dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_engine::Engine;

    #[test]
    fn classes_match_table2_sizes_and_depths() {
        for (c, size, depth) in [
            (MessageClass::Flat, 485, 0),
            (MessageClass::Mixed, 297, 1),
            (MessageClass::Nested, 232, 1),
        ] {
            for dir in [Direction::Encode, Direction::Decode] {
                let t = c.trace(&mut Engine, dir).unwrap();
                optimus_trace::check_structure(&t.events).unwrap();
                assert_eq!(
                    (t.wire_bytes, t.max_depth(), t.direction),
                    (size, depth, dir),
                    "{c:?}"
                );
                let buffer: u64 = t
                    .events
                    .iter()
                    .map(|e| match e {
                        Event::FieldWrite {
                            region: Region::Buffer,
                            bytes,
                            ..
                        }
                        | Event::FieldRead {
                            region: Region::Buffer,
                            bytes,
                            ..
                        } => u64::from(*bytes),
                        _ => 0,
                    })
                    .sum();
                assert_eq!(buffer, size, "{c:?} {dir:?}: serialized bytes covered");
            }
        }
    }

    #[test]
    fn rw_ratio_orders_like_table2() {
        let r: Vec<f64> = MessageClass::ALL
            .iter()
            .map(|c| c.trace(&mut Engine, Direction::Encode).unwrap().rw_ratio())
            .collect();
        // Table 2: Flat 2.6 < Mixed 2.75 < Nested 4.25.
        assert!(r[0] < r[2] && r[1] < r[2], "{r:?}");
    }

    #[test]
    fn traces_are_the_same_every_time() {
        let a = named(&mut Engine, "mixed").unwrap();
        let b = named(&mut Engine, "mixed-ser").unwrap();
        assert_eq!(a, b);
        assert_eq!(
            named(&mut Engine, "nested-deser").unwrap().direction,
            Direction::Decode
        );
        assert!(named(&mut Engine, "bogus").is_err());
        let file = optimus_trace::encode(&a.events);
        let back = accelerator_view(
            "x",
            &optimus_trace::decode(&file).unwrap(),
            &ViewConfig::default(),
        )
        .unwrap();
        assert_eq!(back, vec![a]);
    }
}
