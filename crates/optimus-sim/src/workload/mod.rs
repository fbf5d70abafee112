//! Workloads: the papers' messages, traced by the engine, and seen as an accelerator sees them.
//!
//! The model never walks messages itself. A [`TraceSource`] (the `optimus` CLI, or a test,
//! wrapping the engine's `encode_traced`/`decode_traced`) turns a `.proto` source and
//! serialized messages into engine trace events; [`view::accelerator_view`] turns those into
//! [`MessageTrace`]s the models replay. The Optimus Prime classes (Table 2: Flat, Mixed,
//! Nested) are `testdata/peers.proto` with the exact bytes of `testdata/*.bin`; [`hpb`]
//! builds the HyperProtoBench `.proto` and messages of the RPCAcc experiments, with the real
//! benches' structures.

pub mod gateway;
pub mod hpb;
pub mod image;
pub(crate) mod social_gen;
pub mod socialnet;
pub mod view;

pub use optimus_trace::TraceSource;
use optimus_trace::{Direction, Event, Region};

use crate::error::{Result, SimError};
pub use view::{
    accelerator_view, MemoryView, SchemaView, ViewConfig, MAX_BUFFER_OFFSET, MAX_TRACED_BYTES,
};

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

/// Asks `source` for the traces of `messages`, the fields `accel_fields` labelled "Acc"
/// (their data in accelerator memory), and returns them as the accelerator sees them
/// (default [`ViewConfig`]).
///
/// # Errors
/// [`SimError::Engine`] when the engine rejects the input or a field name; [`SimError::Workload`]
/// when its trace is ill-formed or holds a different number of messages.
pub fn trace_messages(
    source: &mut dyn TraceSource,
    name: &str,
    proto: &str,
    messages: &[(&str, &[u8])],
    direction: Direction,
    accel_fields: &[&str],
) -> Result<Vec<MessageTrace>> {
    let events = source
        .trace(proto, messages, direction, accel_fields)
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
        Ok(self.set().trace(source, direction)?.remove(0))
    }

    /// The class as a set of one message, named like the class.
    pub fn set(self) -> MessageSet {
        MessageSet {
            name: self.name().to_string(),
            proto: PEERS_PROTO.to_string(),
            messages: vec![(self.type_name().to_string(), self.bytes().to_vec())],
            avg_field_bytes: vec![0.0],
        }
    }
}

/// One schema's messages in a suite: a HyperProtoBench bench or a DeathStarBench service.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageSet {
    /// `bench0` … `bench5`, or the service's name.
    pub name: String,
    /// proto3 source declaring every type of the set.
    pub proto: String,
    /// The messages: fully qualified type name and wire bytes.
    pub messages: Vec<(String, Vec<u8>)>,
    /// Mean payload bytes per (non-message) field of each message, at all levels (RPCAcc
    /// Fig. 5's x axis; 0 where the suite does not use it).
    pub avg_field_bytes: Vec<f64>,
}

impl MessageSet {
    /// Its messages transformed in `direction` by the engine behind `source`.
    ///
    /// # Errors
    /// As [`trace_messages`].
    pub fn trace(
        &self,
        source: &mut dyn TraceSource,
        direction: Direction,
    ) -> Result<Vec<MessageTrace>> {
        self.trace_labelled(source, direction, &[])
    }

    /// As [`MessageSet::trace`], with the fields `accel_fields` labelled "Acc" (their data
    /// in accelerator memory).
    ///
    /// # Errors
    /// As [`trace_messages`].
    pub fn trace_labelled(
        &self,
        source: &mut dyn TraceSource,
        direction: Direction,
        accel_fields: &[&str],
    ) -> Result<Vec<MessageTrace>> {
        let msgs: Vec<(&str, &[u8])> = self
            .messages
            .iter()
            .map(|(t, m)| (t.as_str(), m.as_slice()))
            .collect();
        trace_messages(
            source,
            &self.name,
            &self.proto,
            &msgs,
            direction,
            accel_fields,
        )
    }
}

/// Seed of the suites' populations unless a config names another (RPCAcc's `seed`).
pub const SUITE_SEED: u64 = 2024;

/// The message sets of suite `name`: `hpb` (the HyperProtoBench suite) or `socialnet`
/// (the DeathStarBench services' requests and responses), drawn from `seed`; `None` for any
/// other name.
pub fn suite(name: &str, seed: u64) -> Option<Vec<MessageSet>> {
    match name {
        "hpb" => Some(hpb::suite(seed)),
        "socialnet" => Some(socialnet::sets(seed)),
        _ => None,
    }
}

/// The message sets of workload `base` (a name of [`named`]'s without `-ser`/`-deser`): a
/// suite's sets ([`suite`], drawn from `seed`), or an Optimus Prime class as a set of one;
/// `None` for any other name.
pub fn named_sets(base: &str, seed: u64) -> Option<Vec<MessageSet>> {
    suite(base, seed).or_else(|| MessageClass::from_name(base).map(|c| vec![c.set()]))
}

/// Named workloads accepted by `--workload`, each serialized (also with `-ser`) or
/// deserialized (`-deser`): `flat`, `mixed`, `nested` (one message each), and the suites `hpb`
/// and `socialnet` ([`suite`], drawn from `seed`) as one trace of all their messages.
///
/// # Errors
/// [`SimError::Workload`] for an unknown name; as [`trace_messages`].
pub fn named(source: &mut dyn TraceSource, name: &str, seed: u64) -> Result<Vec<MessageTrace>> {
    let (base, direction) = split_direction(name);
    let dir = direction.unwrap_or(Direction::Encode);
    let mut out = Vec::new();
    for set in named_sets(base, seed).ok_or_else(|| unknown(name))? {
        out.extend(set.trace(source, dir)?);
    }
    Ok(out)
}

/// A workload name without its `-ser` or `-deser`, and the direction that named.
pub fn split_direction(name: &str) -> (&str, Option<Direction>) {
    if let Some(base) = name.strip_suffix("-deser") {
        (base, Some(Direction::Decode))
    } else if let Some(base) = name.strip_suffix("-ser") {
        (base, Some(Direction::Encode))
    } else {
        (name, None)
    }
}

/// The error for a workload name that is none of [`named`]'s.
pub fn unknown(name: &str) -> SimError {
    SimError::Workload {
        name: name.to_string(),
        why: "unknown workload (flat, mixed, nested, hpb, socialnet, with optional -ser/-deser)"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use optimus_core::binary::EngineTraces as Engine;

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
    fn suites_trace_every_message_in_the_direction_named() {
        for (name, count) in [("hpb", 60), ("socialnet", 54)] {
            let sets = suite(name, SUITE_SEED).unwrap();
            let messages: usize = sets.iter().map(|s| s.messages.len()).sum();
            assert_eq!(messages, count, "{name}");
            for (workload, dir) in [
                (name.to_string(), Direction::Encode),
                (format!("{name}-deser"), Direction::Decode),
            ] {
                let traces = named(&mut Engine, &workload, SUITE_SEED).unwrap();
                assert_eq!(traces.len(), count);
                assert!(traces.iter().all(|t| t.direction == dir));
            }
        }
        assert!(suite("mixed", SUITE_SEED).is_none());
    }

    #[test]
    fn traces_are_the_same_every_time() {
        let a = named(&mut Engine, "mixed", SUITE_SEED).unwrap().remove(0);
        let b = named(&mut Engine, "mixed-ser", SUITE_SEED)
            .unwrap()
            .remove(0);
        assert_eq!(a, b);
        assert_eq!(
            named(&mut Engine, "nested-deser", SUITE_SEED).unwrap()[0].direction,
            Direction::Decode
        );
        assert!(named(&mut Engine, "bogus", SUITE_SEED).is_err());
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
