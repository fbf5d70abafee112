//! Field placement: which fields of a service's requests and replies the NIC keeps in its own
//! memory (RPCAcc's "Acc" bit), declared in a placement file or by a custom option in the
//! `.proto`, and held as the placement bit ([`EntryFlags::ACCEL_PLACED`]) of the NIC's copies
//! of the op tables.
//!
//! A placement file has one field a line, `full.message.Name.field nic` (or `host`), with `#`
//! comments. In a `.proto`, a field carries `[(optimus.placement) = NIC]`, the option that
//! [`PLACEMENT_PROTO`] declares (import it as `optimus/placement.proto`). Only a method's
//! request and reply types are split by placement (their top-level fields), and only fields
//! the record reaches through a pointer (string, bytes, message, repeated; not maps) can live
//! in NIC memory: a singular scalar lives in its record, as in RPCAcc.

use std::collections::BTreeSet;

use optimus_schema::{Cardinality, EntryFlags, Kind, MessageId, SchemaSet, Table};

use crate::RpcError;

/// The `.proto` that declares the `optimus.placement` field option; compile it beside a
/// service's `.proto` under the import name `optimus/placement.proto`.
pub const PLACEMENT_PROTO: &str = r#"syntax = "proto3";
package optimus;
import "google/protobuf/descriptor.proto";
// Where a field's data lives when the NIC core transforms a service's messages.
enum Placement {
  HOST = 0;
  NIC = 1;
}
extend google.protobuf.FieldOptions {
  Placement placement = 50151;
}
"#;

/// The fields declared NIC-resident: `(message type, field index)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    pub(crate) nic: BTreeSet<(MessageId, usize)>,
}

impl Placement {
    /// No field in NIC memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether field `index` of `id` is declared NIC-resident.
    pub fn is_nic(&self, id: MessageId, index: usize) -> bool {
        self.nic.contains(&(id, index))
    }

    /// Number of NIC-resident fields.
    pub fn len(&self) -> usize {
        self.nic.len()
    }

    /// No field is NIC-resident.
    pub fn is_empty(&self) -> bool {
        self.nic.is_empty()
    }

    /// Places `name` (`full.message.Name.field`, a leading dot allowed) in NIC memory.
    ///
    /// # Errors
    /// [`RpcError::Config`] naming the field when there is no such field or it cannot live
    /// in NIC memory.
    pub fn place_nic(&mut self, schema: &SchemaSet, name: &str) -> Result<(), RpcError> {
        let key = resolve(schema, name)?;
        self.nic.insert(key);
        Ok(())
    }

    /// Reads a placement file's text (see the module docs).
    ///
    /// # Errors
    /// [`RpcError::Config`] with the line number of the first bad line.
    pub fn parse_file(schema: &SchemaSet, text: &str) -> Result<Self, RpcError> {
        let mut p = Self::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |why: String| RpcError::Config(format!("placement line {}: {why}", n + 1));
            let mut words = line.split_whitespace();
            let (Some(name), Some(place), None) = (words.next(), words.next(), words.next()) else {
                return Err(bad(format!(
                    "expected `message.field nic` or `message.field host`, got `{line}`"
                )));
            };
            let key = resolve(schema, name).map_err(|e| bad(e.to_string()))?;
            match place.to_ascii_lowercase().as_str() {
                "nic" => {
                    p.nic.insert(key);
                }
                "host" => {
                    p.nic.remove(&key);
                }
                other => return Err(bad(format!("placement `{other}` is not nic or host"))),
            }
        }
        Ok(p)
    }

    /// The fields of `source` (one `.proto` file's text, compiled into `schema`) that carry
    /// `[(optimus.placement) = NIC]`.
    ///
    /// # Errors
    /// [`RpcError::Config`] when a marked field does not resolve in `schema` or cannot live
    /// in NIC memory, or the option has another value than `NIC` or `HOST`.
    pub fn from_proto_options(schema: &SchemaSet, source: &str) -> Result<Self, RpcError> {
        let mut p = Self::new();
        for (name, value) in marked_fields(source) {
            match value.as_str() {
                "NIC" => p.place_nic(schema, &name)?,
                "HOST" => {}
                v => {
                    return Err(RpcError::Config(format!(
                        "{name}: (optimus.placement) = {v}: expected NIC or HOST"
                    )))
                }
            }
        }
        Ok(p)
    }
}

/// `(message id, field index)` of `name`, if it may live in NIC memory.
fn resolve(schema: &SchemaSet, name: &str) -> Result<(MessageId, usize), RpcError> {
    let full = name.strip_prefix('.').unwrap_or(name);
    let bad = |why: &str| RpcError::Config(format!("placement of `{name}`: {why}"));
    let (message, field) = full
        .rsplit_once('.')
        .filter(|(m, f)| !m.is_empty() && !f.is_empty())
        .ok_or_else(|| bad("expected the message's full name, a dot and the field's name"))?;
    let id = schema
        .message_by_name(message)
        .ok_or_else(|| bad("no such message type"))?;
    let ty = schema.message(id);
    let index = ty
        .fields
        .iter()
        .position(|f| f.name == field)
        .ok_or_else(|| bad("no such field"))?;
    let f = &ty.fields[index];
    if f.cardinality == Cardinality::Map {
        return Err(bad("a map stays in host memory"));
    }
    let pointer = f.is_list() || matches!(f.kind, Kind::String | Kind::Bytes | Kind::Message);
    if !pointer {
        return Err(bad(
            "a singular scalar lives in its message's record; only string, bytes, message and repeated fields can live in NIC memory",
        ));
    }
    Ok((id, index))
}

/// `(full field name, option value)` of each field of `source` that has an
/// `(optimus.placement)` option: a scan of the declarations, tracking the package and the
/// nesting of `message` blocks.
fn marked_fields(source: &str) -> Vec<(String, String)> {
    let text = strip_comments(source);
    let mut out = Vec::new();
    let mut package = String::new();
    // Open blocks: the message name, or `None` for any other block (enum, oneof, service).
    let mut scopes: Vec<Option<String>> = Vec::new();
    let mut statement = String::new();
    for c in text.chars() {
        match c {
            '{' => {
                let words: Vec<&str> = statement.split_whitespace().collect();
                scopes.push(match words.as_slice() {
                    ["message", name] => Some((*name).to_string()),
                    _ => None,
                });
                statement.clear();
            }
            '}' => {
                scopes.pop();
                statement.clear();
            }
            ';' => {
                let s = statement.trim();
                if let Some(p) = s.strip_prefix("package ") {
                    package = p.trim().to_string();
                } else if scopes.last().is_some_and(Option::is_some) {
                    if let Some((field, value)) = field_option(s) {
                        let path: Vec<&str> = scopes.iter().flatten().map(String::as_str).collect();
                        let prefix = if package.is_empty() {
                            String::new()
                        } else {
                            format!("{package}.")
                        };
                        out.push((format!("{prefix}{}.{field}", path.join(".")), value));
                    }
                }
                statement.clear();
            }
            _ => statement.push(c),
        }
    }
    out
}

/// A field declaration's name and its `(optimus.placement)` value, if it has one.
fn field_option(decl: &str) -> Option<(String, String)> {
    let (head, options) = decl.split_once('[')?;
    let at = options.find("(optimus.placement)")?;
    let value = options[at + "(optimus.placement)".len()..]
        .trim_start()
        .strip_prefix('=')?
        .trim_start();
    let value: String = value
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let (before_eq, _) = head.rsplit_once('=')?;
    let name = before_eq.split_whitespace().last()?.to_string();
    Some((name, value))
}

/// `source` without `//` and `/* */` comments (string literals are left as they are, which
/// is enough for declarations).
fn strip_comments(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |i| &r[i..]);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map_or("", |i| &r[i + 2..]);
        } else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// One version of the placement the NIC applies: for each message type the service splits,
/// a copy of its op table whose entries carry [`EntryFlags::ACCEL_PLACED`] where the field
/// lives in NIC memory now. Calls keep the version they were decoded with, so a change never
/// reaches a call in flight.
#[derive(Debug, Clone)]
pub struct PlacementTables {
    /// Increases with every change.
    pub version: u64,
    /// Indexed by message id number; `None` for types no method takes or returns.
    tables: Vec<Option<Table>>,
}

impl PlacementTables {
    /// Version 0: the `types`' tables with `placement`'s bits set.
    pub(crate) fn new(schema: &SchemaSet, types: &[MessageId], placement: &Placement) -> Self {
        let mut tables: Vec<Option<Table>> = vec![None; schema.messages().count()];
        for &id in types {
            let mut t = schema.message(id).table.clone();
            for (i, e) in t.entries.iter_mut().enumerate() {
                if placement.is_nic(id, i) {
                    e.flags |= EntryFlags::ACCEL_PLACED;
                }
            }
            tables[id.0 as usize] = Some(t);
        }
        Self { version: 0, tables }
    }

    /// Whether field `index` of `id` lives in NIC memory in this version.
    #[inline]
    pub fn is_nic(&self, id: MessageId, index: usize) -> bool {
        self.tables
            .get(id.0 as usize)
            .and_then(Option::as_ref)
            .and_then(|t| t.entries.get(index))
            .is_some_and(|e| e.is_accel_placed())
    }

    /// The NIC-resident fields of `id`, by index.
    pub fn nic_fields(&self, id: MessageId) -> impl Iterator<Item = usize> + '_ {
        self.tables
            .get(id.0 as usize)
            .and_then(Option::as_ref)
            .into_iter()
            .flat_map(|t| t.entries.iter().enumerate())
            .filter(|(_, e)| e.is_accel_placed())
            .map(|(i, _)| i)
    }

    /// The next version, with field `index` of `id` in NIC memory (`nic`) or host memory.
    pub(crate) fn with(&self, id: MessageId, index: usize, nic: bool) -> Self {
        let mut next = self.clone();
        next.version += 1;
        if let Some(e) = next
            .tables
            .get_mut(id.0 as usize)
            .and_then(Option::as_mut)
            .and_then(|t| t.entries.get_mut(index))
        {
            if nic {
                e.flags |= EntryFlags::ACCEL_PLACED;
            } else {
                e.flags &= !EntryFlags::ACCEL_PLACED;
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SVC: &str = r#"syntax = "proto3";
package t;
import "optimus/placement.proto";
message Req {
  uint64 id = 1;
  bytes blob = 2 [(optimus.placement) = NIC];   // in NIC memory
  string name = 3;
  // string note = 9 [(optimus.placement) = NIC];
  message Inner { string s = 1 [(optimus.placement) = NIC]; }
  Inner inner = 4 [(optimus.placement) = HOST];
  repeated string tags = 5 [ json_name = "labels", (optimus.placement) = NIC ];
  map<string, string> attrs = 6;
}
service S { rpc Call(Req) returns (Req); }
"#;

    fn schema() -> SchemaSet {
        SchemaSet::from_sources(&[
            ("optimus/placement.proto", PLACEMENT_PROTO),
            ("svc.proto", SVC),
        ])
        .unwrap()
    }

    fn names(s: &SchemaSet, p: &Placement) -> Vec<String> {
        p.nic
            .iter()
            .map(|(id, i)| {
                let ty = s.message(*id);
                format!("{}.{}", ty.full_name, ty.fields[*i].name)
            })
            .collect()
    }

    #[test]
    fn the_proto_option_marks_fields_nested_ones_included() {
        let s = schema();
        let p = Placement::from_proto_options(&s, SVC).unwrap();
        let mut got = names(&s, &p);
        got.sort();
        assert_eq!(got, ["t.Req.Inner.s", "t.Req.blob", "t.Req.tags"]);
    }

    #[test]
    fn a_placement_file_places_and_unplaces_with_line_numbers_on_errors() {
        let s = schema();
        let p = Placement::parse_file(
            &s,
            "# gateway\nt.Req.blob nic\n.t.Req.name NIC\nt.Req.tags nic\nt.Req.tags host\n",
        )
        .unwrap();
        assert_eq!(names(&s, &p), ["t.Req.blob", "t.Req.name"]);
        let err = |text: &str| Placement::parse_file(&s, text).unwrap_err().to_string();
        assert!(
            err("\nt.Req.id nic").contains("line 2"),
            "{}",
            err("\nt.Req.id nic")
        );
        assert!(err("t.Req.id nic").contains("singular scalar"));
        assert!(err("t.Req.attrs nic").contains("map"));
        assert!(err("t.Req.nope nic").contains("no such field"));
        assert!(err("t.Nope.x nic").contains("no such message"));
        assert!(err("t.Req.blob card").contains("not nic or host"));
        assert!(err("t.Req.blob").contains("expected"));
    }

    #[test]
    fn tables_carry_the_bit_and_a_change_makes_a_new_version() {
        let s = schema();
        let id = s.message_by_name("t.Req").unwrap();
        let p = Placement::parse_file(&s, "t.Req.blob nic").unwrap();
        let v0 = PlacementTables::new(&s, &[id], &p);
        let blob = s.message(id).field_index_by_name("blob").unwrap();
        assert!(v0.is_nic(id, blob));
        assert_eq!(v0.nic_fields(id).collect::<Vec<_>>(), [blob]);
        // The schema's own table is left as it was.
        assert!(!s.message(id).table.entries[blob].is_accel_placed());
        let v1 = v0.with(id, blob, false);
        assert_eq!(v1.version, 1);
        assert!(!v1.is_nic(id, blob) && v0.is_nic(id, blob));
        assert_eq!(v1.with(id, blob, true).nic_fields(id).count(), 1);
    }
}
