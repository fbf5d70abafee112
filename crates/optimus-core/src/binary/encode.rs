//! Protobuf wire-format encoder: deterministic output in two passes over the instance schema.
//!
//! The size pass records the length of every sub-message in pre-order; the write pass walks
//! the same fields in the same order, takes each length from that record, and fills the
//! output grown once to the size pass's total (a [`Sink`]: no capacity check per byte).
//! Fields come out in number order (the presence bitmap's order), map entries sorted by key,
//! unknown fields last — byte-identical to Google protobuf's deterministic serialization.

use optimus_schema::{Cardinality, Field, Kind, SchemaSet, WireType};
use optimus_trace::{Direction, Format, Region, Tracer};

use super::varint::{varint_len, zigzag32, zigzag64};
use crate::value::{List, Scalar, Value};
use crate::Message;

/// Lengths of sub-messages in the order the write pass meets them.
pub(crate) struct Sizes {
    lens: Vec<u32>,
    next: usize,
}

impl Sizes {
    fn take(&mut self) -> usize {
        let len = self.lens[self.next];
        self.next += 1;
        len as usize
    }
}

/// Encodes `msg`, appending to `out`, reporting each step to `t`.
pub(crate) fn encode_into<T: Tracer>(
    schema: &SchemaSet,
    msg: &Message,
    out: &mut Vec<u8>,
    t: &mut T,
) {
    let mut sizes = Sizes {
        lens: Vec::new(),
        next: 0,
    };
    let total = message_size(schema, msg, &mut sizes.lens);
    let start = out.len();
    out.resize(start + total, 0);
    t.message_begin(Direction::Encode, Format::Protobuf, msg.type_id().0);
    let mut w = Writer {
        schema,
        sizes: &mut sizes,
        out: Sink {
            buf: out,
            pos: start,
        },
        t,
    };
    w.message(msg);
    let end = w.out.pos;
    debug_assert_eq!(
        end,
        start + total,
        "the write pass wrote what the size pass counted"
    );
    out.truncate(end);
    t.message_end(total as u64);
}

/// The write pass's output: a buffer already grown to the encoding's size, filled from `pos`
/// (an index into the whole buffer, so traces report the offsets `out.len()` would).
struct Sink<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Sink<'_> {
    /// Writes one byte.
    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.buf[self.pos] = b;
        self.pos += 1;
    }

    /// Writes `v` as a varint.
    #[inline(always)]
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.byte((v as u8) | 0x80);
            v >>= 7;
        }
        self.byte(v as u8);
    }

    /// Writes `b` as it is.
    #[inline(always)]
    fn bytes(&mut self, b: &[u8]) {
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
    }
}

/// The encoded size of `msg`.
pub(crate) fn encoded_len(schema: &SchemaSet, msg: &Message) -> usize {
    message_size(schema, msg, &mut Vec::new())
}

fn message_size(schema: &SchemaSet, msg: &Message, lens: &mut Vec<u32>) -> usize {
    let ty = schema.message(msg.type_id());
    let mut size = msg.unknown_fields().len();
    for (index, value) in msg.set_values() {
        size += field_size(schema, &ty.fields[index], value, lens);
    }
    size
}

fn tag_len(number: u32) -> usize {
    varint_len(u64::from(number) << 3)
}

fn field_size(schema: &SchemaSet, field: &Field, value: &Value, lens: &mut Vec<u32>) -> usize {
    let tag = tag_len(field.number);
    match (field.cardinality, value) {
        (Cardinality::Map, Value::Map(map)) => {
            let (kf, vf) = schema.map_entry_fields(field);
            let mut size = 0;
            for (key, v) in map {
                let slot = lens.len();
                lens.push(0);
                let entry = tag_len(1)
                    + scalar_size(kf.kind, key.scalar().0)
                    + tag_len(2)
                    + element_size(schema, vf, v, lens);
                lens[slot] = entry as u32;
                size += tag + varint_len(entry as u64) + entry;
            }
            size
        }
        (_, Value::List(list)) if field.is_packed => {
            let body = packed_size_for(field.kind, list);
            if body == 0 {
                0
            } else {
                tag + varint_len(body as u64) + body
            }
        }
        (_, Value::List(List::Message(items))) => items
            .iter()
            .map(|m| tag + message_element_size(schema, field, m, lens))
            .sum(),
        (_, Value::List(list)) => {
            let mut size = 0;
            list.for_each_scalar(|x, _| size += tag + scalar_size(field.kind, x));
            size
        }
        (_, v) => tag + element_size(schema, field, v, lens),
    }
}

/// Size of one value after its tag (sub-messages: length prefix included, or the end tag).
fn element_size(schema: &SchemaSet, field: &Field, value: &Value, lens: &mut Vec<u32>) -> usize {
    match value {
        Value::Message(m) => message_element_size(schema, field, m, lens),
        v => value_size(field.kind, v),
    }
}

fn message_element_size(
    schema: &SchemaSet,
    field: &Field,
    m: &Message,
    lens: &mut Vec<u32>,
) -> usize {
    if field.kind == Kind::Group {
        return message_size(schema, m, lens) + tag_len(field.number);
    }
    let slot = lens.len();
    lens.push(0);
    let len = message_size(schema, m, lens);
    lens[slot] = len as u32;
    varint_len(len as u64) + len
}

/// Size of one singular value. One dispatch, on the value; the kind only picks between a
/// type's varint, zigzag and fixed forms (going through [`Scalar`] here costs a second
/// dispatch per field).
#[inline]
fn value_size(kind: Kind, value: &Value) -> usize {
    match value {
        Value::I32(v) | Value::Enum(v) => match kind {
            Kind::Sint32 => varint_len(u64::from(zigzag32(*v))),
            Kind::Sfixed32 => 4,
            _ => varint_len(*v as i64 as u64),
        },
        Value::I64(v) => match kind {
            Kind::Sint64 => varint_len(zigzag64(*v)),
            Kind::Sfixed64 => 8,
            _ => varint_len(*v as u64),
        },
        Value::U32(v) => match kind {
            Kind::Fixed32 => 4,
            _ => varint_len(u64::from(*v)),
        },
        Value::U64(v) => match kind {
            Kind::Fixed64 => 8,
            _ => varint_len(*v),
        },
        Value::F32(_) => 4,
        Value::F64(_) => 8,
        Value::Bool(_) => 1,
        Value::String(s) => varint_len(s.len() as u64) + s.len(),
        Value::Bytes(b) => varint_len(b.len() as u64) + b.len(),
        Value::Message(_) | Value::List(_) | Value::Map(_) => 0,
    }
}

/// Size of one list element or map key.
fn scalar_size(kind: Kind, value: Scalar<'_>) -> usize {
    match (kind, value) {
        (Kind::Sint32, Scalar::I32(v)) => varint_len(u64::from(zigzag32(v))),
        (Kind::Sint64, Scalar::I64(v)) => varint_len(zigzag64(v)),
        (Kind::Sfixed32 | Kind::Fixed32 | Kind::Float, _) => 4,
        (Kind::Sfixed64 | Kind::Fixed64 | Kind::Double, _) => 8,
        (_, Scalar::I32(v)) => varint_len(v as i64 as u64),
        (_, Scalar::I64(v)) => varint_len(v as u64),
        (_, Scalar::U32(v)) => varint_len(u64::from(v)),
        (_, Scalar::U64(v)) => varint_len(v),
        (_, Scalar::Bool(_)) => 1,
        (_, Scalar::Bytes(b)) => varint_len(b.len() as u64) + b.len(),
        (_, Scalar::F32(_) | Scalar::F64(_)) => 0,
    }
}

fn packed_body_size(list: &List) -> usize {
    match list {
        List::Bool(v) => v.len(),
        List::F32(v) => v.len() * 4,
        List::F64(v) => v.len() * 8,
        List::I32(v) => v.iter().map(|x| varint_len(*x as i64 as u64)).sum(),
        List::Enum(v) => v.iter().map(|x| varint_len(*x as i64 as u64)).sum(),
        List::I64(v) => v.iter().map(|x| varint_len(*x as u64)).sum(),
        List::U32(v) => v.iter().map(|x| varint_len(u64::from(*x))).sum(),
        List::U64(v) => v.iter().map(|x| varint_len(*x)).sum(),
        List::String(_) | List::Bytes(_) | List::Message(_) => 0,
    }
}

/// Packed size for a kind whose list type is shared (sint/sfixed/fixed forms differ).
fn packed_size_for(kind: Kind, list: &List) -> usize {
    match kind {
        Kind::Fixed32 | Kind::Sfixed32 | Kind::Float => list.len() * 4,
        Kind::Fixed64 | Kind::Sfixed64 | Kind::Double => list.len() * 8,
        Kind::Sint32 | Kind::Sint64 => {
            let mut size = 0;
            list.for_each_scalar(|x, _| size += scalar_size(kind, x));
            size
        }
        _ => packed_body_size(list),
    }
}

/// The write pass: walks the instance schema again and appends, tracing as it goes.
struct Writer<'a, T: Tracer> {
    schema: &'a SchemaSet,
    sizes: &'a mut Sizes,
    out: Sink<'a>,
    t: &'a mut T,
}

impl<T: Tracer> Writer<'_, T> {
    fn message(&mut self, msg: &Message) {
        let schema = self.schema;
        let ty = schema.message(msg.type_id());
        for (index, value) in msg.set_values() {
            let field = &ty.fields[index];
            self.schema_read(field);
            self.field(field, value);
        }
        if T::ENABLED && !msg.unknown_fields().is_empty() {
            let n = msg.unknown_fields().len() as u32;
            self.t
                .field_read(Region::Message, msg.unknown_fields().as_ptr() as u64, n);
            self.t.field_write(Region::Buffer, self.out.pos as u64, n);
        }
        self.out.bytes(msg.unknown_fields());
    }

    /// Reports the read of `field`'s schema entry.
    fn schema_read(&mut self, field: &Field) {
        if T::ENABLED {
            self.t.schema_read(
                field.kind as u16,
                super::repetition(field),
                addr_of(field),
                std::mem::size_of::<Field>() as u32,
            );
        }
    }

    fn tag(&mut self, number: u32, wire: WireType) {
        self.out.varint((u64::from(number) << 3) | wire as u64);
    }

    fn field(&mut self, field: &Field, value: &Value) {
        match value {
            Value::Map(map) => self.map(field, map),
            Value::List(list) => self.list(field, list),
            v => self.element(field, v),
        }
    }

    /// Map entries, in key order (kept out of line: singular fields are the hot path). Each
    /// entry is the sub-message it is on the wire, traced as the decoder traces it: entered,
    /// its key's and value's schema entries read, left.
    #[inline(never)]
    fn map(&mut self, field: &Field, map: &crate::Map) {
        let (kf, vf) = self.schema.map_entry_fields(field);
        let entry = field.message.expect("map field has an entry type");
        for (key, v) in map {
            self.t.enter(entry.0);
            self.tag(field.number, WireType::LengthDelimited);
            let len = self.sizes.take();
            self.out.varint(len as u64);
            self.schema_read(kf);
            self.tag(1, kf.kind.wire_type());
            let (x, at) = key.scalar();
            self.scalar(kf.kind, x, at);
            self.schema_read(vf);
            self.element(vf, v);
            self.t.leave();
        }
    }

    /// A repeated field, packed or one tag per element.
    #[inline(never)]
    fn list(&mut self, field: &Field, list: &List) {
        if let List::Message(items) = list {
            for m in items {
                self.message_element(field, m);
            }
        } else if field.is_packed {
            let body = packed_size_for(field.kind, list);
            if body == 0 {
                return;
            }
            self.tag(field.number, WireType::LengthDelimited);
            self.out.varint(body as u64);
            list.for_each_scalar(|x, at| self.scalar(field.kind, x, at));
        } else {
            list.for_each_scalar(|x, at| {
                self.tag(field.number, field.kind.wire_type());
                self.scalar(field.kind, x, at);
            });
        }
    }

    /// Writes one value with its tag (`field`'s number and kind).
    fn element(&mut self, field: &Field, value: &Value) {
        match value {
            Value::Message(m) => self.message_element(field, m),
            v => {
                self.out.varint(u64::from(field.tag));
                let at = self.out.pos;
                write_value(field.kind, v, &mut self.out);
                if T::ENABLED {
                    if let Some((x, addr)) = v.scalar() {
                        self.trace_scalar(field.kind, x.width(), addr, at);
                    }
                }
            }
        }
    }

    fn message_element(&mut self, field: &Field, m: &Message) {
        self.t.enter(m.type_id().0);
        if field.kind == Kind::Group {
            self.tag(field.number, WireType::StartGroup);
            self.message(m);
            self.tag(field.number, WireType::EndGroup);
        } else {
            self.tag(field.number, WireType::LengthDelimited);
            let len = self.sizes.take();
            self.out.varint(len as u64);
            self.message(m);
        }
        self.t.leave();
    }

    fn scalar(&mut self, kind: Kind, value: Scalar<'_>, addr: u64) {
        let at = self.out.pos;
        write_scalar(kind, value, &mut self.out);
        if T::ENABLED {
            self.trace_scalar(kind, value.width(), addr, at);
        }
    }

    /// Reports one converted value: `read` bytes at `addr`, written from `at` to the end.
    fn trace_scalar(&mut self, kind: Kind, read: u32, addr: u64, at: usize) {
        let written = (self.out.pos - at) as u32;
        self.t.field_read(Region::Message, addr, read);
        self.t.convert(kind as u16, read);
        self.t.field_write(Region::Buffer, at as u64, written);
    }
}

/// The address of a schema entry (what an accelerator's schema read fetches).
fn addr_of<X>(x: &X) -> u64 {
    x as *const X as u64
}

/// Writes one singular value (one dispatch; see [`value_size`]).
#[inline]
fn write_value(kind: Kind, value: &Value, out: &mut Sink) {
    match value {
        Value::I32(v) | Value::Enum(v) => match kind {
            Kind::Sint32 => out.varint(u64::from(zigzag32(*v))),
            Kind::Sfixed32 => out.bytes(&v.to_le_bytes()),
            _ => out.varint(*v as i64 as u64),
        },
        Value::I64(v) => match kind {
            Kind::Sint64 => out.varint(zigzag64(*v)),
            Kind::Sfixed64 => out.bytes(&v.to_le_bytes()),
            _ => out.varint(*v as u64),
        },
        Value::U32(v) => match kind {
            Kind::Fixed32 => out.bytes(&v.to_le_bytes()),
            _ => out.varint(u64::from(*v)),
        },
        Value::U64(v) => match kind {
            Kind::Fixed64 => out.bytes(&v.to_le_bytes()),
            _ => out.varint(*v),
        },
        Value::F32(v) => out.bytes(&v.to_le_bytes()),
        Value::F64(v) => out.bytes(&v.to_le_bytes()),
        Value::Bool(v) => out.byte(u8::from(*v)),
        Value::String(s) => {
            out.varint(s.len() as u64);
            out.bytes(s.as_bytes());
        }
        Value::Bytes(b) => {
            out.varint(b.len() as u64);
            out.bytes(b);
        }
        Value::Message(_) | Value::List(_) | Value::Map(_) => {
            debug_assert!(
                false,
                "value {value:?} is not a singular scalar of {kind:?}"
            )
        }
    }
}

/// Writes one list element or map key.
fn write_scalar(kind: Kind, value: Scalar<'_>, out: &mut Sink) {
    match (kind, value) {
        (Kind::Sint32, Scalar::I32(v)) => out.varint(u64::from(zigzag32(v))),
        (Kind::Sint64, Scalar::I64(v)) => out.varint(zigzag64(v)),
        (Kind::Sfixed32, Scalar::I32(v)) => out.bytes(&v.to_le_bytes()),
        (Kind::Fixed32, Scalar::U32(v)) => out.bytes(&v.to_le_bytes()),
        (Kind::Float, Scalar::F32(v)) => out.bytes(&v.to_le_bytes()),
        (Kind::Sfixed64, Scalar::I64(v)) => out.bytes(&v.to_le_bytes()),
        (Kind::Fixed64, Scalar::U64(v)) => out.bytes(&v.to_le_bytes()),
        (Kind::Double, Scalar::F64(v)) => out.bytes(&v.to_le_bytes()),
        (_, Scalar::I32(v)) => out.varint(v as i64 as u64),
        (_, Scalar::I64(v)) => out.varint(v as u64),
        (_, Scalar::U32(v)) => out.varint(u64::from(v)),
        (_, Scalar::U64(v)) => out.varint(v),
        (_, Scalar::Bool(v)) => out.byte(u8::from(v)),
        (_, Scalar::Bytes(b)) => {
            out.varint(b.len() as u64);
            out.bytes(b);
        }
        _ => debug_assert!(false, "value {value:?} does not fit kind {kind:?}"),
    }
}
