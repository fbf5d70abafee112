//! RPCAcc's "Acc" label on the engine's traces: the data of labelled fields is reported in
//! accelerator memory ([`Region::Accel`]) instead of host memory.
//!
//! RPCAcc (§III-E1) lets a `.proto` mark a *dereference* field (string, bytes, repeated, map
//! or message) with "Acc": its deserializer writes the field's data to the card's memory and
//! its host pre-serialization leaves it for the card to encode. [`AccelLabels`] resolves field
//! names against a [`SchemaSet`] once; [`Labelled`] wraps any [`Tracer`] and, while the
//! engine transforms a labelled field (its data, and everything inside a labelled
//! sub-message), turns the field's host-memory reads and writes into accelerator-memory ones.
//! Everything else the engine reports passes through unchanged.

use std::collections::HashSet;

use optimus_schema::{Field, Kind, SchemaSet};
use optimus_trace::{Direction, Format, Region, Repetition, Tracer};

/// Why a name cannot carry the "Acc" label.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// The name is not `MESSAGE.FIELD`.
    #[error("accelerator field `{0}`: expected the message's full name, a dot and the field's name (e.g. `pkg.User.avatar`)")]
    Malformed(String),
    /// The schema has no such message type.
    #[error("accelerator field `{name}`: no message type `{message}`")]
    NoMessage {
        /// The name as given.
        name: String,
        /// Its message part.
        message: String,
    },
    /// The message type has no such field.
    #[error("accelerator field `{name}`: message `{message}` has no field `{field}`")]
    NoField {
        /// The name as given.
        name: String,
        /// Its message part.
        message: String,
        /// Its field part.
        field: String,
    },
    /// The field is a singular scalar, which lives in its message's record.
    #[error("accelerator field `{name}`: a singular {kind} lives in its message's record; only string, bytes, repeated, map and message fields can be placed in accelerator memory")]
    Scalar {
        /// The name as given.
        name: String,
        /// The field's `.proto` type.
        kind: &'static str,
    },
}

/// The fields of one schema that carry the "Acc" label, by their schema entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccelLabels {
    /// Addresses of the labelled fields' entries in the schema, as the engine reports them in
    /// [`Tracer::schema_read`].
    entries: HashSet<u64>,
}

impl AccelLabels {
    /// Labels the fields `names` (each `full.message.Name.field`, a leading dot allowed) of
    /// `schema`. The labels hold for traces of this `schema` value only.
    ///
    /// # Errors
    /// The first name that is malformed, names no field, or names a singular scalar field.
    pub fn resolve<S: AsRef<str>>(schema: &SchemaSet, names: &[S]) -> Result<Self, LabelError> {
        let mut entries = HashSet::with_capacity(names.len());
        for name in names {
            let name = name.as_ref();
            let full = name.strip_prefix('.').unwrap_or(name);
            let (message, field) = full
                .rsplit_once('.')
                .filter(|(m, f)| !m.is_empty() && !f.is_empty())
                .ok_or_else(|| LabelError::Malformed(name.to_string()))?;
            let id = schema
                .message_by_name(message)
                .ok_or_else(|| LabelError::NoMessage {
                    name: name.to_string(),
                    message: message.to_string(),
                })?;
            let f = schema
                .message(id)
                .fields
                .iter()
                .find(|f| f.name == field)
                .ok_or_else(|| LabelError::NoField {
                    name: name.to_string(),
                    message: message.to_string(),
                    field: field.to_string(),
                })?;
            if !is_dereference(f) {
                return Err(LabelError::Scalar {
                    name: name.to_string(),
                    kind: f.kind.proto_name(),
                });
            }
            entries.insert(f as *const Field as u64);
        }
        Ok(Self { entries })
    }

    /// No field is labelled.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of labelled fields.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Whether `f` can carry the label: a field whose value the message record reaches through
/// a pointer (string, bytes, repeated, map or message).
pub fn is_dereference(f: &Field) -> bool {
    f.is_list()
        || matches!(
            f.kind,
            Kind::String | Kind::Bytes | Kind::Message | Kind::Group
        )
}

/// A tracer that reports the labelled fields' data in accelerator memory, then hands every
/// event to `inner`.
///
/// A field's data is what the engine reads or writes between the field's schema entry and
/// the next entry of the same message (or the message's end). The encoder reports a
/// message's unknown fields after its last known field, so they go wherever that field went.
#[derive(Debug)]
pub struct Labelled<'a, T> {
    labels: &'a AccelLabels,
    inner: T,
    /// Nesting depth of the engine's walk (0: the top-level message).
    depth: u32,
    /// Depth of the labelled field being transformed, if any.
    open: Option<u32>,
}

impl<'a, T: Tracer> Labelled<'a, T> {
    /// `inner`, seeing `labels`' fields in accelerator memory.
    pub fn new(labels: &'a AccelLabels, inner: T) -> Self {
        Self {
            labels,
            inner,
            depth: 0,
            open: None,
        }
    }

    /// The wrapped tracer.
    pub fn into_inner(self) -> T {
        self.inner
    }

    fn region(&self, region: Region) -> Region {
        match (region, self.open) {
            (Region::Message, Some(_)) => Region::Accel,
            _ => region,
        }
    }
}

impl<T: Tracer> Tracer for Labelled<'_, T> {
    const ENABLED: bool = T::ENABLED;

    fn message_begin(&mut self, direction: Direction, format: Format, type_id: u32) {
        self.depth = 0;
        self.open = None;
        self.inner.message_begin(direction, format, type_id);
    }

    fn message_end(&mut self, wire_bytes: u64) {
        self.open = None;
        self.inner.message_end(wire_bytes);
    }

    fn schema_read(&mut self, kind: u16, repetition: Repetition, addr: u64, size: u32) {
        if self.open == Some(self.depth) {
            self.open = None;
        }
        if self.open.is_none() && self.labels.entries.contains(&addr) {
            self.open = Some(self.depth);
        }
        self.inner.schema_read(kind, repetition, addr, size);
    }

    fn field_read(&mut self, region: Region, addr: u64, bytes: u32) {
        let region = self.region(region);
        self.inner.field_read(region, addr, bytes);
    }

    fn field_write(&mut self, region: Region, addr: u64, bytes: u32) {
        let region = self.region(region);
        self.inner.field_write(region, addr, bytes);
    }

    fn convert(&mut self, op: u16, bytes: u32) {
        self.inner.convert(op, bytes);
    }

    fn enter(&mut self, type_id: u32) {
        self.depth += 1;
        self.inner.enter(type_id);
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        if self.open.is_some_and(|d| d > self.depth) {
            self.open = None;
        }
        self.inner.leave();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::{self, DecodeOptions};
    use crate::json::{self, JsonOptions};
    use optimus_trace::{Event, Recorder};

    const PROTO: &str = r#"
        syntax = "proto3";
        package t;
        message Inner { int64 n = 1; string s = 2; }
        message Outer {
          int64 id = 1;
          string name = 2;
          bytes blob = 3;
          Inner inner = 4;
          repeated int32 nums = 5;
          string tail = 6;
        }
    "#;

    const JSON: &str = r#"{"id": "7", "name": "alice", "blob": "AAECAwQFBgc=",
        "inner": {"n": "3", "s": "nested text"}, "nums": [1, 2, 3], "tail": "end"}"#;

    fn schema() -> SchemaSet {
        SchemaSet::from_source(PROTO).unwrap()
    }

    /// For `Outer`'s trace with `names` labelled: the name of each field whose data the
    /// trace reads or writes, with the regions of those accesses (serialized-buffer accesses
    /// left out), in trace order.
    fn regions(names: &[&str], direction: Direction) -> Vec<(String, Vec<Region>)> {
        let s = schema();
        let id = s.message_by_name("t.Outer").unwrap();
        let msg = json::decode(&s, id, JSON, &JsonOptions::default()).unwrap();
        let bytes = binary::encode(&s, &msg);
        let labels = AccelLabels::resolve(&s, names).unwrap();
        let mut t = Labelled::new(&labels, Recorder::new());
        let opts = DecodeOptions::default();
        binary::trace_message(&s, id, &bytes, direction, &opts, &mut t).unwrap();
        let name_at = |addr: u64| {
            s.messages()
                .flat_map(|(_, m)| m.fields.iter())
                .find(|f| *f as *const Field as u64 == addr)
                .map(|f| f.name.clone())
                .unwrap()
        };
        let mut out: Vec<(String, Vec<Region>)> = Vec::new();
        for e in t.into_inner().events {
            match e {
                Event::SchemaRead { addr, .. } => out.push((name_at(addr), Vec::new())),
                Event::FieldRead { region, .. } | Event::FieldWrite { region, .. }
                    if region != Region::Buffer =>
                {
                    out.last_mut().unwrap().1.push(region);
                }
                _ => {}
            }
        }
        out
    }

    /// The fields whose data `regions` found in accelerator memory; panics where a field's
    /// accesses are split between the two memories. (A sub-message's own entry has no data:
    /// its fields' entries follow.)
    fn in_accel(names: &[&str], direction: Direction) -> Vec<String> {
        let r = regions(names, direction);
        for (field, regions) in &r {
            assert!(
                regions.windows(2).all(|w| w[0] == w[1]),
                "{field}: {regions:?}"
            );
        }
        r.into_iter()
            .filter(|(_, regions)| regions.first() == Some(&Region::Accel))
            .map(|(f, _)| f)
            .collect()
    }

    #[test]
    fn no_label_changes_nothing() {
        for d in [Direction::Decode, Direction::Encode] {
            assert!(in_accel(&[], d).is_empty());
            assert!(regions(&[], d).iter().any(|(f, _)| f == "tail"));
        }
    }

    #[test]
    fn a_labelled_field_and_only_it_moves_to_accelerator_memory() {
        for d in [Direction::Decode, Direction::Encode] {
            assert_eq!(in_accel(&["t.Outer.blob"], d), ["blob"], "{d:?}");
            // Everything inside a labelled sub-message (the sub-message's entry has no data
            // of its own); its siblings stay in host memory.
            assert_eq!(in_accel(&[".t.Outer.inner"], d), ["n", "s"], "{d:?}");
            // A label on a field of a sub-message, and on a repeated field.
            assert_eq!(in_accel(&["t.Inner.s", "t.Outer.nums"], d), ["s", "nums"]);
        }
    }

    #[test]
    fn names_that_cannot_be_labelled_are_refused_with_the_reason() {
        let s = schema();
        let err = |n: &str| AccelLabels::resolve(&s, &[n]).unwrap_err().to_string();
        assert!(err("blob").contains("expected the message's full name"));
        assert!(err("t.Outer.").contains("expected the message's full name"));
        assert!(err("t.Nope.blob").contains("no message type `t.Nope`"));
        assert!(err("t.Outer.nope").contains("message `t.Outer` has no field `nope`"));
        let scalar = err("t.Outer.id");
        assert!(scalar.contains("a singular int64"), "{scalar}");
        let ok = AccelLabels::resolve(&s, &["t.Outer.name", "t.Outer.name"]).unwrap();
        assert_eq!(ok.len(), 1);
    }
}
