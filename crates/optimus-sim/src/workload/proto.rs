//! Field lists from a proto3 file and a protobuf wire walker that turns a serialized message
//! into the instance tree the trace builder lays out in memory.
//!
//! Only what workload descriptions need: top-level `message` blocks whose fields are scalars,
//! `string`/`bytes`, other messages, optionally `repeated`. This is not the project's schema
//! compiler (that is `optimus-schema`); it exists so the model can build traces of the papers'
//! message classes before, or without, the engine.

use crate::error::{Result, SimError};

/// Field type of a workload field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// int32 / uint32 / enum: varint, 4-byte slot.
    Varint32,
    /// int64 / uint64: varint, 8-byte slot.
    Varint64,
    /// sint32: zigzag varint, 4-byte slot.
    Zigzag32,
    /// sint64: zigzag varint, 8-byte slot.
    Zigzag64,
    /// bool: varint, 1-byte slot.
    Bool,
    /// fixed32 / sfixed32 / float.
    Fixed32,
    /// fixed64 / sfixed64 / double.
    Fixed64,
    /// string (UTF-8).
    String,
    /// bytes.
    Bytes,
    /// A sub-message: index into [`ProtoFile::messages`].
    Message(usize),
}

impl Ty {
    /// Size of the field's slot in the in-memory record, in bytes.
    pub fn slot_bytes(self) -> u32 {
        match self {
            Ty::Bool => 1,
            Ty::Varint32 | Ty::Zigzag32 | Ty::Fixed32 => 4,
            _ => 8,
        }
    }

    /// Protobuf wire type.
    pub fn wire_type(self) -> u8 {
        match self {
            Ty::Varint32 | Ty::Varint64 | Ty::Zigzag32 | Ty::Zigzag64 | Ty::Bool => 0,
            Ty::Fixed64 => 1,
            Ty::String | Ty::Bytes | Ty::Message(_) => 2,
            Ty::Fixed32 => 5,
        }
    }
}

/// One declared field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDef {
    /// Field name.
    pub name: String,
    /// Field number.
    pub number: u32,
    /// Type.
    pub ty: Ty,
    /// Declared `repeated`.
    pub repeated: bool,
}

/// One message type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageDef {
    /// Type name.
    pub name: String,
    /// Fields in declaration order.
    pub fields: Vec<FieldDef>,
}

impl MessageDef {
    /// Byte offset of each field's slot in the record (after an 8-byte presence word), and the
    /// record size; slots are naturally aligned in declaration order.
    pub fn layout(&self) -> (Vec<u32>, u32) {
        let mut off = 8u32;
        let mut slots = Vec::with_capacity(self.fields.len());
        for f in &self.fields {
            let size = if f.repeated { 8 } else { f.ty.slot_bytes() };
            off = off.next_multiple_of(size);
            slots.push(off);
            off += size;
        }
        (slots, off.next_multiple_of(8))
    }
}

/// The message types of one .proto file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtoFile {
    /// Types in declaration order.
    pub messages: Vec<MessageDef>,
}

impl ProtoFile {
    /// Parses the subset of proto3 described in the module doc.
    ///
    /// # Errors
    /// [`SimError::Proto`] naming the line of an unsupported construct or unknown type.
    pub fn parse(text: &str) -> Result<Self> {
        let mut raw: Vec<(String, Vec<(String, String, u32, bool, usize)>)> = Vec::new();
        let mut current: Option<usize> = None;
        for (i, line) in text.lines().enumerate() {
            let lineno = i + 1;
            let line = line.split("//").next().unwrap_or("").trim();
            if line.is_empty() || line.starts_with("syntax") || line.starts_with("package") {
                continue;
            }
            let err = |why: &str| SimError::Proto { line: lineno, why: why.to_string() };
            if let Some(rest) = line.strip_prefix("message ") {
                if current.is_some() {
                    return Err(err("nested message declarations are not supported"));
                }
                let name = rest.trim_end_matches('{').trim();
                if name.is_empty() || !line.ends_with('{') {
                    return Err(err("expected `message Name {`"));
                }
                raw.push((name.to_string(), Vec::new()));
                current = Some(raw.len() - 1);
                continue;
            }
            if line == "}" {
                if current.take().is_none() {
                    return Err(err("unmatched `}`"));
                }
                continue;
            }
            let Some(cur) = current else { return Err(err("field outside a message")) };
            let body = line.strip_suffix(';').ok_or_else(|| err("expected `;`"))?;
            let (decl, num) = body.split_once('=').ok_or_else(|| err("expected `= number`"))?;
            let number: u32 = num.trim().parse().map_err(|_| err("field number is not a number"))?;
            let words: Vec<&str> = decl.split_whitespace().collect();
            let (repeated, ty, name) = match words.as_slice() {
                ["repeated", ty, name] => (true, *ty, *name),
                [ty, name] => (false, *ty, *name),
                _ => return Err(err("expected `[repeated] type name = N;`")),
            };
            raw[cur].1.push((name.to_string(), ty.to_string(), number, repeated, lineno));
        }
        if current.is_some() {
            return Err(SimError::Proto { line: text.lines().count(), why: "unclosed message".into() });
        }
        let names: Vec<String> = raw.iter().map(|(n, _)| n.clone()).collect();
        let mut messages = Vec::with_capacity(raw.len());
        for (name, fields) in raw {
            let mut defs = Vec::with_capacity(fields.len());
            for (fname, ty, number, repeated, lineno) in fields {
                let ty = match ty.as_str() {
                    "int32" | "uint32" | "enum" => Ty::Varint32,
                    "int64" | "uint64" => Ty::Varint64,
                    "sint32" => Ty::Zigzag32,
                    "sint64" => Ty::Zigzag64,
                    "bool" => Ty::Bool,
                    "fixed32" | "sfixed32" | "float" => Ty::Fixed32,
                    "fixed64" | "sfixed64" | "double" => Ty::Fixed64,
                    "string" => Ty::String,
                    "bytes" => Ty::Bytes,
                    other => match names.iter().position(|n| n == other) {
                        Some(idx) => Ty::Message(idx),
                        None => return Err(SimError::Proto { line: lineno, why: format!("unknown type `{other}`") }),
                    },
                };
                defs.push(FieldDef { name: fname, number, ty, repeated });
            }
            messages.push(MessageDef { name, fields: defs });
        }
        Ok(Self { messages })
    }

    /// Index of the message type called `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.messages.iter().position(|m| m.name == name)
    }

    /// Decodes protobuf wire bytes of type `ty` into an instance tree.
    ///
    /// # Errors
    /// [`SimError::Wire`] with the field path and byte offset of malformed input.
    pub fn decode(&self, ty: usize, bytes: &[u8]) -> Result<Instance> {
        self.decode_at(ty, bytes, 0, 0)
    }

    fn decode_at(&self, ty: usize, bytes: &[u8], base: usize, depth: u32) -> Result<Instance> {
        const MAX_DEPTH: u32 = 64;
        let def = &self.messages[ty];
        let wire_err = |off: usize, why: String| SimError::Wire { path: def.name.clone(), offset: base + off, why };
        if depth > MAX_DEPTH {
            return Err(wire_err(0, format!("nesting deeper than {MAX_DEPTH}")));
        }
        let mut fields = Vec::new();
        let mut pos = 0usize;
        while pos < bytes.len() {
            let start = pos;
            let key = read_varint(bytes, &mut pos).ok_or_else(|| wire_err(start, "truncated or overlong tag".into()))?;
            let number = u32::try_from(key >> 3).map_err(|_| wire_err(start, "field number too large".into()))?;
            let wt = (key & 7) as u8;
            let idx = def
                .fields
                .iter()
                .position(|f| f.number == number)
                .ok_or_else(|| wire_err(start, format!("unknown field number {number}")))?;
            let f = &def.fields[idx];
            if wt != f.ty.wire_type() {
                return Err(wire_err(start, format!("{}: expected wire type {}, got {wt}", f.name, f.ty.wire_type())));
            }
            let tag_bytes = (pos - start) as u32;
            let vstart = pos;
            let value = match wt {
                0 => {
                    let v = read_varint(bytes, &mut pos).ok_or_else(|| wire_err(vstart, format!("{}: bad varint", f.name)))?;
                    Value::Scalar { raw: v, wire_bytes: (pos - vstart) as u32 }
                }
                1 | 5 => {
                    let n = if wt == 1 { 8 } else { 4 };
                    if bytes.len() - pos < n {
                        return Err(wire_err(vstart, format!("{}: {n}-byte value runs past the end", f.name)));
                    }
                    pos += n;
                    Value::Scalar { raw: 0, wire_bytes: n as u32 }
                }
                2 => {
                    let len = read_varint(bytes, &mut pos).ok_or_else(|| wire_err(vstart, format!("{}: bad length", f.name)))?;
                    let len_bytes = (pos - vstart) as u32;
                    let remaining = bytes.len() - pos;
                    let len = usize::try_from(len).ok().filter(|l| *l <= remaining).ok_or_else(|| {
                        wire_err(vstart, format!("{}: length {len} runs past the end ({remaining} left)", f.name))
                    })?;
                    let body = &bytes[pos..pos + len];
                    let v = match f.ty {
                        Ty::Message(sub) => Value::Message {
                            inst: Box::new(self.decode_at(sub, body, base + pos, depth + 1)?),
                            len_bytes,
                        },
                        _ => Value::Bytes { len: len as u32, len_bytes },
                    };
                    pos += len;
                    v
                }
                _ => return Err(wire_err(start, format!("unsupported wire type {wt}"))),
            };
            fields.push(FieldValue { field: idx, tag_bytes, value });
        }
        Ok(Instance { ty, fields })
    }
}

fn read_varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// A decoded message instance: its type and the fields present, in wire order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// Message type index.
    pub ty: usize,
    /// Present fields.
    pub fields: Vec<FieldValue>,
}

/// One present field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldValue {
    /// Index into the type's `fields`.
    pub field: usize,
    /// Bytes of the tag on the wire.
    pub tag_bytes: u32,
    /// The value.
    pub value: Value,
}

/// A field value, reduced to what timing needs (sizes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// Varint or fixed-width scalar.
    Scalar {
        /// Decoded varint (0 for fixed-width).
        raw: u64,
        /// Bytes on the wire after the tag.
        wire_bytes: u32,
    },
    /// string / bytes.
    Bytes {
        /// Payload length.
        len: u32,
        /// Bytes of the length prefix.
        len_bytes: u32,
    },
    /// Sub-message.
    Message {
        /// The sub-message.
        inst: Box<Instance>,
        /// Bytes of the length prefix.
        len_bytes: u32,
    },
}

impl Instance {
    /// Serialized size in bytes (tags, lengths and values).
    pub fn wire_bytes(&self) -> u64 {
        self.fields
            .iter()
            .map(|f| {
                u64::from(f.tag_bytes)
                    + match &f.value {
                        Value::Scalar { wire_bytes, .. } => u64::from(*wire_bytes),
                        Value::Bytes { len, len_bytes } => u64::from(*len) + u64::from(*len_bytes),
                        Value::Message { inst, len_bytes } => inst.wire_bytes() + u64::from(*len_bytes),
                    }
            })
            .sum()
    }

    /// Deepest nesting level (1 for a message with no sub-messages).
    pub fn depth(&self) -> u32 {
        1 + self
            .fields
            .iter()
            .filter_map(|f| match &f.value {
                Value::Message { inst, .. } => Some(inst.depth()),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_peers_proto() {
        let p = ProtoFile::parse(crate::workload::PEERS_PROTO).unwrap();
        let flat = &p.messages[p.find("Flat").unwrap()];
        assert_eq!(flat.fields.len(), 40);
        let mixed = &p.messages[p.find("Mixed").unwrap()];
        assert_eq!(mixed.fields[11].ty, Ty::Message(p.find("MixedHeader").unwrap()));
    }

    #[test]
    fn proto_errors_name_the_line() {
        assert!(matches!(ProtoFile::parse("message A {\n  foo x = 1;\n}"), Err(SimError::Proto { line: 2, .. })));
        assert!(matches!(ProtoFile::parse("message A {\n  int32 x 1;\n}"), Err(SimError::Proto { line: 2, .. })));
        assert!(ProtoFile::parse("message A {\n int32 x = 1;\n").is_err());
        assert!(ProtoFile::parse("}").is_err());
    }

    #[test]
    fn wire_errors_never_panic() {
        let p = ProtoFile::parse(crate::workload::PEERS_PROTO).unwrap();
        let mixed = p.find("Mixed").unwrap();
        let good = crate::workload::MIXED_BIN;
        for cut in 0..good.len() {
            let _ = p.decode(mixed, &good[..cut]);
        }
        assert!(p.decode(mixed, &[0x0a, 0x7f]).is_err());
        assert!(p.decode(mixed, &[0xff; 12]).is_err());
    }
}
