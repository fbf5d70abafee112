//! Protobuf wire-format decoder: a per-field lookup in the type's table, then one `match`
//! on the field's kind. Unknown fields and wire-type mismatches are kept as unknown bytes.

use optimus_schema::{Cardinality, Field, Kind, SchemaSet, WireType};

use super::varint::{read_fixed, read_length, read_varint, unzigzag32, unzigzag64};
use optimus_trace::{Region, Tracer};

use super::DecodeOptions;
use super::{fail, within, Fail};
use crate::value::{List, Value};
use crate::{DecodeErrorKind, Message};

/// Decodes wire-format bytes into messages of one schema, reporting each step to a tracer.
pub(crate) struct Decoder<'a, T: Tracer> {
    pub(crate) schema: &'a SchemaSet,
    pub(crate) buf: &'a [u8],
    pub(crate) opts: &'a DecodeOptions,
    pub(crate) t: &'a mut T,
    /// Bytes of message records this decode may still allocate.
    pub(crate) budget: usize,
}

impl<T: Tracer> Decoder<'_, T> {
    /// Merges the fields in `buf[*pos..end]` into `msg`. With `group = Some(n)`, the input is
    /// the body of group `n` and ends at its end-group tag.
    pub(crate) fn merge_message(
        &mut self,
        msg: &mut Message,
        pos: &mut usize,
        end: usize,
        depth: u32,
        group: Option<u32>,
    ) -> Result<(), Fail> {
        let schema = self.schema;
        let ty = schema.message(msg.type_id());
        while *pos < end {
            let tag_start = *pos;
            let tag = read_varint(self.buf, pos, end)?;
            let (number, wire) = split_tag(tag, tag_start)?;
            if wire == WireType::EndGroup {
                if group == Some(number) {
                    return Ok(());
                }
                return Err(fail(tag_start, DecodeErrorKind::UnexpectedEndGroup(number)));
            }
            let known = ty.field_index_by_number(number);
            let handled = match known {
                Some(index) => {
                    let field = &ty.fields[index];
                    if T::ENABLED {
                        self.t.schema_read(
                            field.kind as u16,
                            field as *const Field as u64,
                            std::mem::size_of::<Field>() as u32,
                        );
                    }
                    self.merge_field(msg, field, index, wire, tag_start, pos, end, depth)
                        .map_err(|e| within(e, &field.name))?
                }
                None => false,
            };
            if !handled {
                self.skip_field(number, wire, tag_start, pos, end, depth)?;
                msg.push_unknown(&self.buf[tag_start..*pos]);
            }
        }
        match group {
            Some(n) => Err(fail(end, DecodeErrorKind::UnterminatedGroup(n))),
            None => Ok(()),
        }
    }

    /// Decodes one occurrence of a known field. Returns `false` (nothing consumed) when the
    /// wire type does not fit the field, so the caller keeps it as an unknown field.
    #[allow(clippy::too_many_arguments)]
    fn merge_field(
        &mut self,
        msg: &mut Message,
        field: &Field,
        index: usize,
        wire: WireType,
        tag_start: usize,
        pos: &mut usize,
        end: usize,
        depth: u32,
    ) -> Result<bool, Fail> {
        let expected = field.kind.wire_type();
        match field.cardinality {
            Cardinality::Map => {
                if wire != WireType::LengthDelimited {
                    return Ok(false);
                }
                self.merge_map_entry(msg, field, index, tag_start, pos, end, depth)?;
            }
            Cardinality::Repeated => {
                if wire == WireType::LengthDelimited && field.kind.is_packable() {
                    self.merge_packed(msg, field, index, pos, end)?;
                } else if wire == expected {
                    if field.kind.is_message() {
                        let sub = self.decode_sub_message(field, wire, pos, end, depth)?;
                        if let List::Message(l) = msg.list_mut(self.schema, index) {
                            l.push(sub);
                        }
                    } else {
                        let value = self.read_scalar(field.kind, pos, end)?;
                        if self.is_unknown_closed_enum(field, &value) {
                            msg.push_unknown(&self.buf[tag_start..*pos]);
                        } else {
                            // The list was made for this kind, so the push cannot fail.
                            let _ = msg.list_mut(self.schema, index).push(value);
                        }
                    }
                } else {
                    return Ok(false);
                }
            }
            Cardinality::Singular | Cardinality::Optional => {
                if wire != expected {
                    return Ok(false);
                }
                if field.kind.is_message() {
                    if !msg.has(index) {
                        let sub_id = field.message.expect("message field has a type");
                        self.charge(sub_id, *pos)?;
                    }
                    let sub = msg.message_mut(self.schema, index);
                    self.merge_sub_message(sub, field, wire, pos, end, depth)?;
                } else if matches!(field.kind, Kind::String | Kind::Bytes) {
                    // Into the slot's own buffer: a cleared message's string is reused.
                    let at = *pos;
                    if field.kind == Kind::String {
                        let text = read_str(self.buf, pos, end)?;
                        msg.put_str(self.schema, field, index, text);
                    } else {
                        let bytes = read_bytes(self.buf, pos, end)?;
                        msg.put_bytes(self.schema, field, index, bytes);
                    }
                    if T::ENABLED {
                        let value = msg.get(index).expect("just stored");
                        trace_read(self.t, field.kind, at, *pos, value);
                    }
                    if field.cardinality == Cardinality::Singular {
                        msg.drop_if_zero(index);
                    }
                } else {
                    let value = self.read_scalar(field.kind, pos, end)?;
                    if self.is_unknown_closed_enum(field, &value) {
                        msg.push_unknown(&self.buf[tag_start..*pos]);
                    } else {
                        msg.put(self.schema, field, index, value);
                        if field.cardinality == Cardinality::Singular {
                            msg.drop_if_zero(index);
                        }
                    }
                }
            }
        }
        Ok(true)
    }

    /// Charges the record of a new sub-message of type `id` against the memory budget.
    fn charge(&mut self, id: optimus_schema::MessageId, at: usize) -> Result<(), Fail> {
        let cost = Message::record_bytes(self.schema, id) + std::mem::size_of::<Message>();
        match self.budget.checked_sub(cost) {
            Some(left) => {
                self.budget = left;
                Ok(())
            }
            None => Err(fail(
                at,
                DecodeErrorKind::MemoryLimit(self.opts.memory_budget(self.buf.len())),
            )),
        }
    }

    fn is_unknown_closed_enum(&mut self, field: &Field, value: &Value) -> bool {
        match (field.enum_type, value) {
            (Some(e), Value::Enum(n)) => {
                let e = self.schema.enum_type(e);
                e.is_closed && !e.contains(*n)
            }
            _ => false,
        }
    }

    /// Decodes a fresh sub-message (list element) of a message or group field.
    fn decode_sub_message(
        &mut self,
        field: &Field,
        wire: WireType,
        pos: &mut usize,
        end: usize,
        depth: u32,
    ) -> Result<Message, Fail> {
        let id = field.message.expect("message field has a type");
        self.charge(id, *pos)?;
        let mut sub = Message::new(self.schema, id);
        self.merge_sub_message(&mut sub, field, wire, pos, end, depth)?;
        Ok(sub)
    }

    /// Merges a length-delimited sub-message or a group body into `sub`.
    fn merge_sub_message(
        &mut self,
        sub: &mut Message,
        field: &Field,
        wire: WireType,
        pos: &mut usize,
        end: usize,
        depth: u32,
    ) -> Result<(), Fail> {
        if depth + 1 > self.opts.depth_limit {
            return Err(fail(*pos, DecodeErrorKind::TooDeep(self.opts.depth_limit)));
        }
        self.t.enter(sub.type_id().0);
        if wire == WireType::StartGroup {
            self.merge_message(sub, pos, end, depth + 1, Some(field.number))?;
        } else {
            let sub_end = read_length(self.buf, pos, end)?;
            self.merge_message(sub, pos, sub_end, depth + 1, None)?;
        }
        self.t.leave();
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn merge_map_entry(
        &mut self,
        msg: &mut Message,
        field: &Field,
        index: usize,
        tag_start: usize,
        pos: &mut usize,
        end: usize,
        depth: u32,
    ) -> Result<(), Fail> {
        let entry = self.decode_sub_message(field, WireType::LengthDelimited, pos, end, depth)?;
        let (key_field, value_field) = self.schema.map_entry_fields(field);
        let key = entry
            .get(0)
            .cloned()
            .unwrap_or_else(|| Value::default_scalar(self.schema, key_field));
        let value = entry
            .get(1)
            .cloned()
            .unwrap_or_else(|| Value::default_scalar(self.schema, value_field));
        if self.is_unknown_closed_enum(value_field, &value) {
            // As Google protobuf: an entry whose closed-enum value is unknown stays unknown.
            msg.push_unknown(&self.buf[tag_start..*pos]);
            return Ok(());
        }
        let key = key
            .into_map_key()
            .ok_or_else(|| fail(tag_start, DecodeErrorKind::Json("bad map key".into())))?;
        msg.map_mut(self.schema, index).insert(key, value);
        Ok(())
    }

    fn merge_packed(
        &mut self,
        msg: &mut Message,
        field: &Field,
        index: usize,
        pos: &mut usize,
        end: usize,
    ) -> Result<(), Fail> {
        let packed_end = read_length(self.buf, pos, end)?;
        let size = match field.kind.wire_type() {
            WireType::Fixed32 => 4,
            WireType::Fixed64 => 8,
            _ => 0,
        };
        if size != 0 && !(packed_end - *pos).is_multiple_of(size) {
            return Err(fail(
                *pos,
                DecodeErrorKind::PackedLength {
                    len: packed_end - *pos,
                    size,
                },
            ));
        }
        // Touch the list first so an empty packed run still makes the field present (as an
        // empty list, which then reads as unset).
        msg.list_mut(self.schema, index);
        while *pos < packed_end {
            let at = *pos;
            let value = self.read_scalar(field.kind, pos, packed_end)?;
            if self.is_unknown_closed_enum(field, &value) {
                // Unknown closed-enum values of a packed run are kept one by one, unpacked.
                let mut raw = Vec::new();
                super::varint::write_varint(&mut raw, u64::from(field.number << 3));
                raw.extend_from_slice(&self.buf[at..*pos]);
                msg.push_unknown(&raw);
            } else {
                let _ = msg.list_mut(self.schema, index).push(value);
            }
        }
        if msg.get(index).is_some_and(Value::is_zero) {
            msg.clear(index);
        }
        Ok(())
    }

    /// Reads one non-message value of `kind`.
    #[inline]
    fn read_scalar(&mut self, kind: Kind, pos: &mut usize, end: usize) -> Result<Value, Fail> {
        let at = *pos;
        let value = self.read_scalar_untraced(kind, pos, end)?;
        if T::ENABLED {
            trace_read(self.t, kind, at, *pos, &value);
        }
        Ok(value)
    }

    #[inline]
    fn read_scalar_untraced(
        &mut self,
        kind: Kind,
        pos: &mut usize,
        end: usize,
    ) -> Result<Value, Fail> {
        let buf = self.buf;
        Ok(match kind {
            Kind::Int32 => Value::I32(read_varint(buf, pos, end)? as i32),
            Kind::Int64 => Value::I64(read_varint(buf, pos, end)? as i64),
            Kind::Uint32 => Value::U32(read_varint(buf, pos, end)? as u32),
            Kind::Uint64 => Value::U64(read_varint(buf, pos, end)?),
            Kind::Sint32 => Value::I32(unzigzag32(read_varint(buf, pos, end)? as u32)),
            Kind::Sint64 => Value::I64(unzigzag64(read_varint(buf, pos, end)?)),
            Kind::Bool => Value::Bool(read_varint(buf, pos, end)? != 0),
            Kind::Enum => Value::Enum(read_varint(buf, pos, end)? as i32),
            Kind::Fixed32 => Value::U32(u32::from_le_bytes(read_fixed(buf, pos, end)?)),
            Kind::Sfixed32 => Value::I32(i32::from_le_bytes(read_fixed(buf, pos, end)?)),
            Kind::Float => Value::F32(f32::from_le_bytes(read_fixed(buf, pos, end)?)),
            Kind::Fixed64 => Value::U64(u64::from_le_bytes(read_fixed(buf, pos, end)?)),
            Kind::Sfixed64 => Value::I64(i64::from_le_bytes(read_fixed(buf, pos, end)?)),
            Kind::Double => Value::F64(f64::from_le_bytes(read_fixed(buf, pos, end)?)),
            Kind::String => Value::String(read_str(buf, pos, end)?.to_owned()),
            Kind::Bytes => Value::Bytes(read_bytes(buf, pos, end)?.to_vec()),
            Kind::Message | Kind::Group => unreachable!("messages are decoded by merge_field"),
        })
    }

    /// Skips one field's value (after its tag), groups included.
    pub(crate) fn skip_field(
        &mut self,
        number: u32,
        wire: WireType,
        tag_start: usize,
        pos: &mut usize,
        end: usize,
        depth: u32,
    ) -> Result<(), Fail> {
        match wire {
            WireType::Varint => {
                read_varint(self.buf, pos, end)?;
            }
            WireType::Fixed64 => {
                read_fixed::<8>(self.buf, pos, end)?;
            }
            WireType::Fixed32 => {
                read_fixed::<4>(self.buf, pos, end)?;
            }
            WireType::LengthDelimited => {
                *pos = read_length(self.buf, pos, end)?;
            }
            WireType::StartGroup => {
                if depth + 1 > self.opts.depth_limit {
                    return Err(fail(
                        tag_start,
                        DecodeErrorKind::TooDeep(self.opts.depth_limit),
                    ));
                }
                loop {
                    if *pos >= end {
                        return Err(fail(end, DecodeErrorKind::UnterminatedGroup(number)));
                    }
                    let inner_start = *pos;
                    let tag = read_varint(self.buf, pos, end)?;
                    let (n, w) = split_tag(tag, inner_start)?;
                    if w == WireType::EndGroup {
                        if n == number {
                            break;
                        }
                        return Err(fail(inner_start, DecodeErrorKind::UnexpectedEndGroup(n)));
                    }
                    self.skip_field(n, w, inner_start, pos, end, depth + 1)?;
                }
            }
            WireType::EndGroup => {
                return Err(fail(tag_start, DecodeErrorKind::UnexpectedEndGroup(number)));
            }
        }
        Ok(())
    }
}

/// Reads a length-delimited value at `*pos` and moves past it.
#[inline]
fn read_bytes<'b>(buf: &'b [u8], pos: &mut usize, end: usize) -> Result<&'b [u8], Fail> {
    let value_end = read_length(buf, pos, end)?;
    let bytes = &buf[*pos..value_end];
    *pos = value_end;
    Ok(bytes)
}

/// Reads a length-delimited UTF-8 string at `*pos` and moves past it; invalid UTF-8 fails at
/// the value's length prefix.
#[inline]
fn read_str<'b>(buf: &'b [u8], pos: &mut usize, end: usize) -> Result<&'b str, Fail> {
    let at = *pos;
    std::str::from_utf8(read_bytes(buf, pos, end)?)
        .map_err(|_| fail(at, DecodeErrorKind::InvalidUtf8))
}

/// Reports the read of one value of `kind` from the input's bytes `at..end`: the bytes read,
/// the conversion and the value written into the message.
fn trace_read<T: Tracer>(t: &mut T, kind: Kind, at: usize, end: usize, value: &Value) {
    let n = (end - at) as u32;
    t.field_read(Region::Buffer, at as u64, n);
    t.convert(kind as u16, n);
    if let Some((x, addr)) = value.scalar() {
        t.field_write(Region::Message, addr, x.width());
    }
}

/// Splits a tag into field number and wire type, rejecting number 0, numbers past 2^29-1
/// and wire types 6 and 7.
#[inline]
pub(crate) fn split_tag(tag: u64, at: usize) -> Result<(u32, WireType), Fail> {
    let number = tag >> 3;
    if number == 0 || number > 536_870_911 {
        return Err(fail(at, DecodeErrorKind::InvalidFieldNumber(number)));
    }
    let wire = WireType::from_bits((tag & 7) as u32)
        .ok_or_else(|| fail(at, DecodeErrorKind::InvalidWireType((tag & 7) as u32)))?;
    Ok((number as u32, wire))
}
