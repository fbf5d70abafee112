//! Turns one message's trace into the work a transformation unit performs: cache-line accesses
//! with their dependences, and per-field items (chunks to convert, bytes to write).
//!
//! Dependences follow from the trace vocabulary alone. A schema entry at depth 0 is reached
//! from the request's schema pointer; a schema entry inside `Enter` is reached through the
//! parent's entry (its address field points at the sub-schema). A field read of message or
//! accelerator memory depends on the entry just read (or on the previous read of the same
//! field: pointer chasing). Reads of the serialized buffer depend on nothing: its base is in
//! the request and it is read in order.

use optimus_trace::{Direction, Event, Region};

use crate::workload::MessageTrace;

/// Cache-line size of every model here (Optimus Prime Table 1: 64-byte blocks).
pub const LINE_BYTES: u64 = 64;

/// One cache-line access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Line address (byte address / [`LINE_BYTES`]).
    pub line: u64,
    /// Memory the line lives in.
    pub region: Region,
    /// Index of the access whose data gives this one's address.
    pub dep: Option<u32>,
    /// A schema entry read (as opposed to field data).
    pub is_schema: bool,
    /// Nesting depth (0 = top-level message).
    pub depth: u8,
    /// Index of the item that needs it.
    pub item: u32,
    /// Bytes of this access that the trace asked for (within the line).
    pub bytes: u32,
}

/// One field's worth of work.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Item {
    /// Accesses `first_access..end_access` belong to this item.
    pub first_access: u32,
    /// One past the last access.
    pub end_access: u32,
    /// Converter ops applied: `(op, input bytes)`.
    pub converts: Vec<(u16, u32)>,
    /// Writes: `(region, address, bytes)`.
    pub writes: Vec<(Region, u64, u32)>,
    /// Nesting depth.
    pub depth: u8,
}

/// A message as work.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    /// Encode or decode.
    pub direction: Option<Direction>,
    /// All line accesses, in trace order.
    pub accesses: Vec<Access>,
    /// Items in trace order.
    pub items: Vec<Item>,
    /// Serialized size.
    pub wire_bytes: u64,
    /// Maximum nesting depth reached (0 = flat).
    pub max_depth: u8,
}

impl Program {
    /// Builds the program of one message trace.
    pub fn from_trace(t: &MessageTrace) -> Self {
        let mut p = Program {
            direction: Some(t.direction),
            wire_bytes: t.wire_bytes,
            ..Default::default()
        };
        let mut depth: u8 = 0;
        // Per depth: the schema access the next level hangs from.
        let mut parent: Vec<Option<u32>> = vec![None];
        let mut cur = Item::default();
        let mut last_access_in_item: Option<u32> = None;
        let mut last_entry: Option<u32> = None;
        let mut has_work = false;
        let flush = |p: &mut Program, cur: &mut Item, has_work: &mut bool, depth: u8| {
            cur.end_access = p.accesses.len() as u32;
            if *has_work || cur.end_access > cur.first_access {
                cur.depth = depth;
                p.items.push(std::mem::take(cur));
            }
            cur.first_access = p.accesses.len() as u32;
            *has_work = false;
        };
        cur.first_access = 0;
        for ev in &t.events {
            match *ev {
                Event::SchemaRead { addr, size, .. } => {
                    if has_work {
                        flush(&mut p, &mut cur, &mut has_work, depth);
                    }
                    let dep = parent.last().copied().flatten();
                    let idx = push_lines(&mut p, addr, size, Region::Message, dep, true, depth);
                    last_entry = idx;
                    last_access_in_item = idx;
                }
                Event::FieldRead {
                    region,
                    addr,
                    bytes,
                } => {
                    if has_work {
                        flush(&mut p, &mut cur, &mut has_work, depth);
                        last_access_in_item = None;
                    }
                    let dep = if region == Region::Buffer {
                        None
                    } else {
                        last_access_in_item.or_else(|| parent.last().copied().flatten())
                    };
                    let idx = push_lines(&mut p, addr, bytes, region, dep, false, depth);
                    if region != Region::Buffer {
                        last_access_in_item = idx.or(last_access_in_item);
                    }
                }
                Event::Convert { op, bytes } => {
                    cur.converts.push((op, bytes));
                    has_work = true;
                }
                Event::FieldWrite {
                    region,
                    addr,
                    bytes,
                } => {
                    cur.writes.push((region, addr, bytes));
                    has_work = true;
                }
                Event::Enter { .. } => {
                    flush(&mut p, &mut cur, &mut has_work, depth);
                    parent.push(last_entry);
                    depth = depth.saturating_add(1);
                    p.max_depth = p.max_depth.max(depth);
                    last_access_in_item = None;
                }
                Event::Leave => {
                    flush(&mut p, &mut cur, &mut has_work, depth);
                    parent.pop();
                    depth = depth.saturating_sub(1);
                    last_access_in_item = None;
                }
                Event::MessageBegin { .. } | Event::MessageEnd { .. } => {}
            }
        }
        flush(&mut p, &mut cur, &mut has_work, depth);
        for (i, it) in p.items.iter().enumerate() {
            for a in &mut p.accesses[it.first_access as usize..it.end_access as usize] {
                a.item = i as u32;
            }
        }
        p
    }

    /// Shifts every message-memory address by `offset` bytes (another core's arena).
    pub fn relocate(&self, offset: u64) -> Program {
        let mut p = self.clone();
        let lines = offset / LINE_BYTES;
        for a in &mut p.accesses {
            if a.region == Region::Message {
                a.line += lines;
            }
        }
        for it in &mut p.items {
            for w in &mut it.writes {
                if w.0 == Region::Message {
                    w.1 += offset;
                }
            }
        }
        p
    }

    /// The size of every write, in order, whatever its region.
    pub fn write_sizes(&self) -> impl Iterator<Item = u32> + '_ {
        self.items.iter().flat_map(|i| i.writes.iter().map(|w| w.2))
    }

    /// Bytes written to `region`.
    pub fn bytes_written(&self, region: Region) -> u64 {
        self.items
            .iter()
            .flat_map(|i| &i.writes)
            .filter(|w| w.0 == region)
            .map(|w| u64::from(w.2))
            .sum()
    }

    /// Number of field items (chunks' sources).
    pub fn fields(&self) -> usize {
        self.items.len()
    }
}

fn push_lines(
    p: &mut Program,
    addr: u64,
    bytes: u32,
    region: Region,
    dep: Option<u32>,
    is_schema: bool,
    depth: u8,
) -> Option<u32> {
    if bytes == 0 {
        return None;
    }
    let first = addr / LINE_BYTES;
    let last = (addr + u64::from(bytes) - 1) / LINE_BYTES;
    let mut idx = None;
    for line in first..=last {
        let lo = (line * LINE_BYTES).max(addr);
        let hi = ((line + 1) * LINE_BYTES).min(addr + u64::from(bytes));
        p.accesses.push(Access {
            line,
            region,
            dep,
            is_schema,
            depth,
            item: 0,
            bytes: (hi - lo) as u32,
        });
        idx.get_or_insert(p.accesses.len() as u32 - 1);
    }
    idx
}

/// A one-field message for the models' unit tests: a varint whose schema entry is at
/// `schema_addr` and whose value (4 bytes, 2 on the wire) is at `data_addr`.
/// A flat message for tests: per field `(schema entry address, data address)`, a 16-byte
/// schema entry read, 4 bytes of data converted by op 5 into 2 output bytes, written one
/// after the other.
#[cfg(test)]
pub(crate) fn flat_trace(fields: &[(u64, u64)]) -> MessageTrace {
    use optimus_trace::Format;
    let mut events = vec![Event::MessageBegin {
        direction: Direction::Encode,
        format: Format::Protobuf,
        type_id: 0,
    }];
    for (k, &(schema_addr, data_addr)) in fields.iter().enumerate() {
        events.extend([
            Event::SchemaRead {
                kind: 5,
                addr: schema_addr,
                size: 16,
            },
            Event::FieldRead {
                region: Region::Message,
                addr: data_addr,
                bytes: 4,
            },
            Event::Convert { op: 5, bytes: 4 },
            Event::FieldWrite {
                region: Region::Buffer,
                addr: 2 * k as u64,
                bytes: 2,
            },
        ]);
    }
    let wire_bytes = 2 * fields.len() as u64;
    events.push(Event::MessageEnd { wire_bytes });
    MessageTrace {
        events,
        wire_bytes,
        direction: Direction::Encode,
    }
}

/// [`flat_trace`] of one field.
#[cfg(test)]
pub(crate) fn one_field_trace(schema_addr: u64, data_addr: u64) -> MessageTrace {
    flat_trace(&[(schema_addr, data_addr)])
}

/// One field of `bytes` bytes at a line boundary, copied (op 1) from message memory into the
/// serialized buffer.
#[cfg(test)]
pub(crate) fn one_large_field(bytes: u32) -> MessageTrace {
    use optimus_trace::Format;
    MessageTrace {
        events: vec![
            Event::MessageBegin {
                direction: Direction::Encode,
                format: Format::Protobuf,
                type_id: 0,
            },
            Event::SchemaRead {
                kind: 9,
                addr: 0x1000,
                size: 16,
            },
            Event::FieldRead {
                region: Region::Message,
                addr: 0x10_0000,
                bytes,
            },
            Event::Convert { op: 1, bytes },
            Event::FieldWrite {
                region: Region::Buffer,
                addr: 0,
                bytes,
            },
            Event::MessageEnd {
                wire_bytes: u64::from(bytes),
            },
        ],
        wire_bytes: u64::from(bytes),
        direction: Direction::Encode,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::MessageClass;
    use optimus_core::binary::EngineTraces as Engine;

    #[test]
    fn nested_sub_schema_depends_on_parent_entry() {
        let p = Program::from_trace(
            &MessageClass::Nested
                .trace(&mut Engine, Direction::Encode)
                .unwrap(),
        );
        assert_eq!(p.max_depth, 1);
        // Every depth-1 schema access hangs from a depth-0 schema access.
        for a in p.accesses.iter().filter(|a| a.depth == 1 && a.is_schema) {
            let d = p.accesses[a.dep.unwrap() as usize];
            assert!(d.is_schema && d.depth == 0);
        }
        // Top-level schema accesses have no dependence.
        assert!(p
            .accesses
            .iter()
            .filter(|a| a.depth == 0 && a.is_schema)
            .all(|a| a.dep.is_none()));
        assert_eq!(p.bytes_written(Region::Buffer), 232);
    }

    #[test]
    fn flat_has_one_item_per_field() {
        let t = MessageClass::Flat
            .trace(&mut Engine, Direction::Encode)
            .unwrap();
        let fields = t
            .events
            .iter()
            .filter(|e| matches!(e, Event::SchemaRead { .. }))
            .count();
        let p = Program::from_trace(&t);
        assert_eq!(p.items.len(), fields);
        assert_eq!(p.bytes_written(Region::Buffer), 485);
        assert!(p
            .accesses
            .iter()
            .filter(|a| !a.is_schema)
            .all(|a| a.dep.is_some()));
    }
}
