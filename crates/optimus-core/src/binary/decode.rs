//! Protobuf wire-format decoder: a per-field lookup in the type's table, then one `match`
//! on the field's kind. Unknown fields and wire-type mismatches are kept as unknown bytes.
//!
//! Tracing reports each value after it is stored, at the address it is stored at: its slot in
//! the record, its list element, its map entry, or the message's unknown bytes.

use optimus_schema::{Cardinality, Field, Kind, SchemaSet, WireType};

use super::varint::{read_fixed, read_length, read_varint, unzigzag32, unzigzag64};
use optimus_trace::{Event, Recorder, Region, Tracer};

use super::DecodeOptions;
use super::{element_segment, fail, key_segment, within, Fail};
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
                    // The entry is read before the wire type can be checked against it, so a
                    // known field that arrives with another wire type keeps its schema read
                    // and is then reported as the unknown bytes it is kept as.
                    let field = &ty.fields[index];
                    if T::ENABLED {
                        self.t.schema_read(
                            field.kind as u16,
                            super::repetition(field),
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
                if ty.is_map_entry {
                    // A map keeps only an entry's key and value: the rest is read and dropped.
                    if T::ENABLED {
                        trace_input(self.t, tag_start, *pos);
                    }
                } else {
                    let buf = self.buf;
                    self.keep_unknown(msg, tag_start, *pos, &buf[tag_start..*pos]);
                }
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
                        let i = msg.list_mut(self.schema, index).len();
                        let sub = self
                            .decode_sub_message(field, wire, pos, end, depth)
                            .map_err(|e| within(e, &element_segment(i)))?;
                        if let List::Message(l) = msg.list_mut(self.schema, index) {
                            l.push(sub);
                        }
                    } else {
                        self.merge_element(msg, field, index, Some(tag_start), pos, end)?;
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
                    let sub = msg.sub_message(self.schema, field, index);
                    self.merge_sub_message(sub, field, wire, pos, end, depth)?;
                } else if !self.store_singular(msg, field, index, pos, end)? {
                    let buf = self.buf;
                    self.keep_unknown(msg, tag_start, *pos, &buf[tag_start..*pos]);
                }
            }
        }
        Ok(true)
    }

    /// Reads one value of the singular non-message `field` into its slot and reports it; a
    /// zero leaves a field without presence unset. `false` (nothing stored) for a closed
    /// enum's unknown value, which the caller keeps as unknown bytes. In a map entry such a
    /// value is stored, and the map keeps the whole entry as unknown.
    fn store_singular(
        &mut self,
        msg: &mut Message,
        field: &Field,
        index: usize,
        pos: &mut usize,
        end: usize,
    ) -> Result<bool, Fail> {
        let at = *pos;
        // Strings and bytes go into the slot's own buffer: a cleared message's is reused. A
        // scalar's zero test is made on the value read, before it goes to the slot.
        let zero = match field.kind {
            Kind::String => {
                let text = read_str(self.buf, pos, end)?;
                msg.put_str(self.schema, field, index, text);
                text.is_empty()
            }
            Kind::Bytes => {
                let bytes = read_bytes(self.buf, pos, end)?;
                msg.put_bytes(self.schema, field, index, bytes);
                bytes.is_empty()
            }
            kind => {
                let value = self.read_scalar(kind, pos, end)?;
                if self.is_unknown_closed_enum(field, &value)
                    && !self.schema.message(msg.type_id()).is_map_entry
                {
                    return Ok(false);
                }
                let zero = value.is_zero();
                msg.put(self.schema, field, index, value);
                zero
            }
        };
        if T::ENABLED {
            trace_value(self.t, field.kind, at, *pos, msg.get(index));
        }
        if zero && field.cardinality == Cardinality::Singular {
            msg.clear(index);
        }
        Ok(true)
    }

    /// Reads one element of the repeated non-message `field` and appends it to its list. A
    /// closed enum's unknown value is kept as unknown bytes instead: with its own tag
    /// (`tag_start`), or, from a packed run (`None`), behind a tag made for it.
    fn merge_element(
        &mut self,
        msg: &mut Message,
        field: &Field,
        index: usize,
        tag_start: Option<usize>,
        pos: &mut usize,
        end: usize,
    ) -> Result<(), Fail> {
        let at = *pos;
        let value = self.read_scalar(field.kind, pos, end)?;
        if self.is_unknown_closed_enum(field, &value) {
            let buf = self.buf;
            match tag_start {
                Some(start) => self.keep_unknown(msg, start, *pos, &buf[start..*pos]),
                None => {
                    let mut raw = Vec::new();
                    super::varint::write_varint(&mut raw, u64::from(field.number << 3));
                    raw.extend_from_slice(&buf[at..*pos]);
                    self.keep_unknown(msg, at, *pos, &raw);
                }
            }
            return Ok(());
        }
        let list = msg.list_mut(self.schema, index);
        // The list was made for this kind, so the push cannot fail.
        let _ = list.push(value);
        if T::ENABLED {
            trace_write(self.t, field.kind, at, *pos, last_element(list));
        }
        Ok(())
    }

    /// Appends `bytes`, read from the input at `from..to`, to `msg`'s unknown fields, and
    /// reports the read and the write into the unknown bytes.
    fn keep_unknown(&mut self, msg: &mut Message, from: usize, to: usize, bytes: &[u8]) {
        let stored = msg.unknown_fields().len();
        msg.push_unknown(bytes);
        if T::ENABLED {
            trace_input(self.t, from, to);
            let addr = msg.unknown_fields()[stored..].as_ptr() as u64;
            self.t
                .field_write(Region::Message, addr, bytes.len() as u32);
        }
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

    /// Decodes one map entry (a sub-message of key and value) into the map at `index`. When
    /// tracing, the entry's events are held back until the map holds the key and value, then
    /// reported with their writes at the map's addresses.
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
        let mut rec = Recorder::new();
        let wire = WireType::LengthDelimited;
        let id = field.message.expect("a map field has an entry type");
        self.charge(id, *pos)?;
        let mut entry = Message::new(self.schema, id);
        let read = if T::ENABLED {
            self.reporting_to(&mut rec, |d| {
                d.merge_sub_message(&mut entry, field, wire, pos, end, depth)
            })
        } else {
            self.merge_sub_message(&mut entry, field, wire, pos, end, depth)
        };
        read.map_err(|e| match key_segment(entry.get(0).cloned()) {
            Some(segment) => within(e, &segment),
            None => e,
        })?;
        let (key_field, value_field) = self.schema.map_entry_fields(field);
        let key = take_part(self.schema, &mut entry, 0, key_field);
        let value = take_part(self.schema, &mut entry, 1, value_field);
        if self.is_unknown_closed_enum(value_field, &value) {
            // As Google protobuf: an entry whose closed-enum value is unknown stays unknown.
            let buf = self.buf;
            self.keep_unknown(msg, tag_start, *pos, &buf[tag_start..*pos]);
            return Ok(());
        }
        let key = key
            .into_map_key()
            .ok_or_else(|| fail(tag_start, DecodeErrorKind::InvalidMapKey))?;
        let probe = T::ENABLED.then(|| key.clone());
        let map = msg.map_mut(self.schema, index);
        map.insert(key, value);
        if let Some(probe) = probe {
            let (k, v) = map.get_key_value(&probe).expect("just inserted");
            let to = [Some(k.scalar().1), v.scalar().map(|(_, addr)| addr)];
            move_entry_writes(&mut rec.events, [key_field, value_field], to);
            rec.replay(self.t);
        }
        Ok(())
    }

    /// Runs `f` on a decoder of the same input that reports to `t`, sharing this one's
    /// memory budget.
    fn reporting_to<U: Tracer, R>(
        &mut self,
        t: &mut U,
        f: impl FnOnce(&mut Decoder<'_, U>) -> R,
    ) -> R {
        let mut d = Decoder {
            schema: self.schema,
            buf: self.buf,
            opts: self.opts,
            t,
            budget: self.budget,
        };
        let r = f(&mut d);
        self.budget = d.budget;
        r
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
            self.merge_element(msg, field, index, None, pos, packed_end)?;
        }
        if msg.get(index).is_some_and(Value::is_zero) {
            msg.clear(index);
        }
        Ok(())
    }

    /// Reads one non-message value of `kind` (untraced: the caller reports it once stored).
    /// Inlined into its callers so the value goes to its slot in registers, not through a
    /// returned `Value` in memory.
    #[inline(always)]
    fn read_scalar(&mut self, kind: Kind, pos: &mut usize, end: usize) -> Result<Value, Fail> {
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
        skip_field(
            self.buf,
            number,
            wire,
            tag_start,
            pos,
            end,
            depth,
            self.opts.depth_limit,
        )
    }
}

/// Moves `*pos` past the value of a field (`number`, `wire`) whose tag started at
/// `tag_start`: a group's fields up to its end-group tag, nested groups included.
#[allow(clippy::too_many_arguments)]
pub(crate) fn skip_field(
    buf: &[u8],
    number: u32,
    wire: WireType,
    tag_start: usize,
    pos: &mut usize,
    end: usize,
    depth: u32,
    depth_limit: u32,
) -> Result<(), Fail> {
    match wire {
        WireType::Varint => {
            read_varint(buf, pos, end)?;
        }
        WireType::Fixed64 => {
            read_fixed::<8>(buf, pos, end)?;
        }
        WireType::Fixed32 => {
            read_fixed::<4>(buf, pos, end)?;
        }
        WireType::LengthDelimited => {
            *pos = read_length(buf, pos, end)?;
        }
        WireType::StartGroup => {
            if depth + 1 > depth_limit {
                return Err(fail(tag_start, DecodeErrorKind::TooDeep(depth_limit)));
            }
            loop {
                if *pos >= end {
                    return Err(fail(end, DecodeErrorKind::UnterminatedGroup(number)));
                }
                let inner_start = *pos;
                let tag = read_varint(buf, pos, end)?;
                let (n, w) = split_tag(tag, inner_start)?;
                if w == WireType::EndGroup {
                    if n == number {
                        break;
                    }
                    return Err(fail(inner_start, DecodeErrorKind::UnexpectedEndGroup(n)));
                }
                skip_field(buf, n, w, inner_start, pos, end, depth + 1, depth_limit)?;
            }
        }
        WireType::EndGroup => {
            return Err(fail(tag_start, DecodeErrorKind::UnexpectedEndGroup(number)));
        }
    }
    Ok(())
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

/// Reports the read of the input's bytes `at..end`.
fn trace_input<T: Tracer>(t: &mut T, at: usize, end: usize) {
    t.field_read(Region::Buffer, at as u64, (end - at) as u32);
}

/// Reports one value of `kind` read from the input's bytes `at..end`, converted, and stored
/// in `stored` (its address and width in the message).
fn trace_write<T: Tracer>(
    t: &mut T,
    kind: Kind,
    at: usize,
    end: usize,
    stored: Option<(u64, u32)>,
) {
    trace_input(t, at, end);
    t.convert(kind as u16, (end - at) as u32);
    if let Some((addr, width)) = stored {
        t.field_write(Region::Message, addr, width);
    }
}

/// [`trace_write`] of a value stored in a field's slot.
fn trace_value<T: Tracer>(t: &mut T, kind: Kind, at: usize, end: usize, stored: Option<&Value>) {
    let slot = stored
        .and_then(Value::scalar)
        .map(|(x, addr)| (addr, x.width()));
    trace_write(t, kind, at, end, slot);
}

/// The address and width of the last element of a non-message list.
fn last_element(list: &List) -> Option<(u64, u32)> {
    /// The last element of `v`, `width` bytes wide.
    fn last<X>(v: &[X], width: u32) -> Option<(u64, u32)> {
        v.last().map(|x| (x as *const X as u64, width))
    }
    match list {
        List::Bool(v) => last(v, 1),
        List::I32(v) | List::Enum(v) => last(v, 4),
        List::U32(v) => last(v, 4),
        List::F32(v) => last(v, 4),
        List::I64(v) => last(v, 8),
        List::U64(v) => last(v, 8),
        List::F64(v) => last(v, 8),
        List::String(v) => v.last().map(|s| (s.as_ptr() as u64, s.len() as u32)),
        List::Bytes(v) => v.last().map(|b| (b.as_ptr() as u64, b.len() as u32)),
        List::Message(_) => None,
    }
}

/// Moves the value of the map entry's part `index` (0: key, 1: value) out of `entry`, its
/// heap data staying where it was decoded; the default of `field` where the part is unset.
fn take_part(schema: &SchemaSet, entry: &mut Message, index: usize, field: &Field) -> Value {
    if !entry.has(index) {
        return Value::default_scalar(schema, field);
    }
    let part = std::mem::replace(entry.get_or_insert(schema, index), Value::Bool(false));
    entry.clear(index);
    part
}

/// Points the writes of a map entry's key and value (`parts`), recorded while the entry was
/// decoded as a message of its own, at where the map holds them (`to`; `None` keeps them).
/// The entry's own fields are those at depth 1 of `events`, which open with its `Enter`.
fn move_entry_writes(events: &mut [Event], parts: [&Field; 2], to: [Option<u64>; 2]) {
    let mut depth = 0u32;
    let mut part = None;
    for ev in events {
        match ev {
            Event::Enter { .. } => depth += 1,
            Event::Leave => depth = depth.saturating_sub(1),
            Event::SchemaRead { addr, .. } if depth == 1 => {
                part = parts
                    .iter()
                    .position(|f| *f as *const Field as u64 == *addr);
            }
            Event::FieldWrite {
                region: Region::Message,
                addr,
                ..
            } if depth == 1 => {
                if let Some(moved) = part.and_then(|p| to[p]) {
                    *addr = moved;
                }
            }
            _ => {}
        }
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
