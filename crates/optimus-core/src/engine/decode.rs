//! The decode walker: protobuf wire bytes into arena records, one `match` on each field's
//! op per value. Unknown fields and wire-type mismatches are kept as unknown bytes.

use optimus_schema::{Entry, MessageId, MessageType, Scalar, SchemaSet, Shape, Table, WireType};

use crate::binary::decode::{skip_field, split_tag};
use crate::binary::varint::{read_fixed, read_length, read_varint, unzigzag32, unzigzag64};
use crate::binary::{element_segment, fail, key_segment, within, Fail};
use crate::record::{bytes_of, sub_type, Arena, RecPtr, Seq, View};
use crate::view::Record;
use crate::DecodeErrorKind;

/// Decodes wire bytes into records of one schema. `COPY` copies strings and bytes into the
/// arena; otherwise records view them in `buf`, which outlives the arena's records.
pub(crate) struct Decoder<'a, const COPY: bool> {
    pub(crate) schema: &'a SchemaSet,
    pub(crate) buf: &'a [u8],
    pub(crate) arena: &'a Arena,
    pub(crate) depth_limit: u32,
    /// Bytes of records and sequences this decode may still take from the arena.
    pub(crate) budget: usize,
    /// The budget it started with (for the error).
    pub(crate) memory_limit: usize,
}

impl<const COPY: bool> Decoder<'_, COPY> {
    /// Takes `bytes` from the budget, or fails at `at`.
    #[inline]
    fn charge(&mut self, bytes: usize, at: usize) -> Result<(), Fail> {
        match self.budget.checked_sub(bytes) {
            Some(rest) => {
                self.budget = rest;
                Ok(())
            }
            None => Err(fail(at, DecodeErrorKind::MemoryLimit(self.memory_limit))),
        }
    }

    /// A new zeroed record of type `ty`, charged to the budget.
    #[inline]
    pub(crate) fn new_record(&mut self, ty: &MessageType, at: usize) -> Result<RecPtr, Fail> {
        let table = &ty.table;
        self.charge(table.size as usize, at)?;
        Ok(RecPtr::new(self.arena, table))
    }

    /// Merges the fields in `buf[*pos..end]` into `rec`, a record of type `ty`. With
    /// `group = Some(n)` the input is group `n`'s body and ends at its end-group tag.
    pub(crate) fn merge(
        &mut self,
        rec: RecPtr,
        ty: &MessageType,
        pos: &mut usize,
        end: usize,
        depth: u32,
        group: Option<u32>,
    ) -> Result<(), Fail> {
        // The position is a local while the fields are read: behind `&mut`, every store into
        // the record could alias it, so it would be stored and loaded again for each field.
        // Calls that are not inlined get a copy ([`through`]), so its address never escapes.
        let mut at = *pos;
        let result = self.merge_fields(rec, ty, &mut at, end, depth, group);
        *pos = at;
        result
    }

    /// [`Decoder::merge`]'s loop, with the position in a local.
    #[inline(always)]
    fn merge_fields(
        &mut self,
        rec: RecPtr,
        ty: &MessageType,
        pos: &mut usize,
        end: usize,
        depth: u32,
        group: Option<u32>,
    ) -> Result<(), Fail> {
        let table = &ty.table;
        let mut guess = 0;
        while *pos < end {
            let tag_start = *pos;
            // The fast path (upb's fasttable): the input's next bytes are the tag of the entry
            // after the last one read, so neither the tag's varint nor its field is looked up.
            if let Some(e) = table.entries.get(guess) {
                if let Some(len) = tag_matches(self.buf, tag_start, end, e) {
                    *pos += len;
                    let index = guess;
                    guess += 1;
                    if e.is_plain_message() {
                        through(pos, |q| {
                            self.single_message(rec, table, index, e, q, end, depth)
                        })
                        .map_err(|err| within(err, &ty.fields[index].name))?;
                        continue;
                    }
                    if e.is_plain_scalar() {
                        self.single_scalar(rec, index, e, pos, end)
                            .map_err(|err| within(err, &ty.fields[index].name))?;
                        continue;
                    } else if through(pos, |q| {
                        self.field(
                            rec,
                            table,
                            index,
                            e,
                            e.op.tag_wire_type(),
                            tag_start,
                            q,
                            end,
                            depth,
                            ty.is_map_entry,
                        )
                    })
                    .map_err(|err| within(err, &ty.fields[index].name))?
                    {
                        continue;
                    }
                    let wire = e.op.tag_wire_type();
                    through(pos, |q| {
                        self.unknown(
                            rec,
                            table,
                            ty.is_map_entry,
                            e.number,
                            wire,
                            tag_start,
                            q,
                            end,
                            depth,
                        )
                    })?;
                    continue;
                }
            }
            let tag = read_varint(self.buf, pos, end)?;
            let (number, wire) = split_tag(tag, tag_start)?;
            let stored = match table.find_from(number, guess) {
                Some(index) => {
                    guess = index + 1;
                    let e = &table.entries[index];
                    accepts(e, wire)
                        && through(pos, |q| {
                            self.field(
                                rec,
                                table,
                                index,
                                e,
                                wire,
                                tag_start,
                                q,
                                end,
                                depth,
                                ty.is_map_entry,
                            )
                        })
                        .map_err(|err| within(err, &ty.fields[index].name))?
                }
                None => false,
            };
            if !stored {
                // An end-group tag is never a field's value: it closes this group, or is an
                // error `unknown` reports.
                if wire == WireType::EndGroup && group == Some(number) {
                    return Ok(());
                }
                through(pos, |q| {
                    self.unknown(
                        rec,
                        table,
                        ty.is_map_entry,
                        number,
                        wire,
                        tag_start,
                        q,
                        end,
                        depth,
                    )
                })?;
            }
        }
        match group {
            Some(n) => Err(fail(end, DecodeErrorKind::UnterminatedGroup(n))),
            None => Ok(()),
        }
    }

    /// Skips the field whose tag started at `tag_start` and keeps its bytes as unknown (a
    /// map entry drops them: a map keeps only key and value).
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn unknown(
        &mut self,
        rec: RecPtr,
        table: &Table,
        is_map_entry: bool,
        number: u32,
        wire: WireType,
        tag_start: usize,
        pos: &mut usize,
        end: usize,
        depth: u32,
    ) -> Result<(), Fail> {
        if wire == WireType::EndGroup {
            return Err(fail(tag_start, DecodeErrorKind::UnexpectedEndGroup(number)));
        }
        skip_field(
            self.buf,
            number,
            wire,
            tag_start,
            pos,
            end,
            depth,
            self.depth_limit,
        )?;
        if !is_map_entry {
            self.keep_unknown(rec, table, tag_start, *pos)?;
        }
        Ok(())
    }

    /// Appends `buf[from..to]` to the record's unknown bytes.
    #[cold]
    fn keep_unknown(
        &mut self,
        rec: RecPtr,
        table: &Table,
        from: usize,
        to: usize,
    ) -> Result<(), Fail> {
        self.charge(to - from, from)?;
        let bytes = &self.buf[from..to];
        // SAFETY: `unknown_offset` holds the record's sequence of unknown bytes (width 1).
        unsafe { rec.extend_bytes(self.arena, table.unknown_offset, bytes) };
        Ok(())
    }

    /// Decodes one occurrence of the field at `index`. `false` (nothing consumed) when the
    /// value is to be kept as unknown bytes: a closed enum's undeclared number, or a wire
    /// type the field cannot take.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn field(
        &mut self,
        rec: RecPtr,
        table: &Table,
        index: usize,
        e: &Entry,
        wire: WireType,
        tag_start: usize,
        pos: &mut usize,
        end: usize,
        depth: u32,
        in_map_entry: bool,
    ) -> Result<bool, Fail> {
        let scalar = e.op.scalar();
        match e.op.shape() {
            Shape::Single => {
                if scalar.is_message() {
                    if e.in_oneof() {
                        clear_oneof_siblings(rec, table, index);
                    }
                    self.single_message(rec, table, index, e, pos, end, depth)?;
                    return Ok(true);
                }
                let at = *pos;
                let mut value = [0u8; 16];
                let nonzero = self.scalar(scalar, &mut value, pos, end)?;
                // A map entry keeps the value: the map then keeps the whole entry as unknown.
                if scalar == Scalar::ClosedEnum
                    && !in_map_entry
                    && !self.is_declared(table, e, &value)
                {
                    *pos = at;
                    return Ok(false);
                }
                if e.in_oneof() {
                    clear_oneof_siblings(rec, table, index);
                }
                // SAFETY: `e` is entry `index` of `rec`'s table; its slot is `width` bytes.
                unsafe {
                    write_slot(rec, e.offset, scalar.width(), &value);
                    rec.set_bit(index, nonzero || e.has_presence());
                }
            }
            Shape::Map => {
                if wire != WireType::LengthDelimited {
                    return Ok(false);
                }
                self.map_entry(rec, table, index, e, tag_start, pos, end, depth)?;
            }
            Shape::Repeated | Shape::Packed => {
                if wire == WireType::LengthDelimited
                    && !scalar.is_bytes_like()
                    && !scalar.is_message()
                {
                    self.packed(rec, table, index, e, pos, end)?;
                } else if scalar.is_message() {
                    let sub_ty = sub_type(table, e);
                    let sub = self.new_record(sub_ty, *pos)?;
                    self.message_body(sub, sub_ty, scalar, e.number, pos, end, depth)
                        .map_err(|err| {
                            // SAFETY: entry `index` is a sequence of record pointers.
                            let i = unsafe { rec.read::<Seq>(e.offset).len() };
                            within(err, &element_segment(i))
                        })?;
                    // SAFETY: entry `index` is a sequence of 8-byte record pointers.
                    unsafe {
                        rec.push(self.arena, e.offset, 8, bytes_of(&sub.as_slot()));
                        rec.set_bit(index, true);
                    }
                } else {
                    let at = *pos;
                    let mut value = [0u8; 16];
                    self.scalar(scalar, &mut value, pos, end)?;
                    if scalar == Scalar::ClosedEnum && !self.is_declared(table, e, &value) {
                        *pos = at;
                        return Ok(false);
                    }
                    let width = scalar.width() as usize;
                    self.charge(width, at)?;
                    // SAFETY: entry `index` is a sequence of `width`-byte values.
                    unsafe {
                        rec.push(self.arena, e.offset, width, &value);
                        rec.set_bit(index, true);
                    }
                }
            }
        }
        Ok(true)
    }

    /// Reads a single scalar (not a closed enum, not in a oneof) straight into its slot: the
    /// hot path.
    #[inline(always)]
    fn single_scalar(
        &mut self,
        rec: RecPtr,
        index: usize,
        e: &Entry,
        pos: &mut usize,
        end: usize,
    ) -> Result<(), Fail> {
        use super::single::*;
        let buf = self.buf;
        let off = e.offset;
        // Every arm's SAFETY: `e` is entry `index` of `rec`'s table, whose slot has the
        // scalar's width at `off`.
        let nonzero = match e.op.code() {
            INT32 | UINT32 | OPEN_ENUM => {
                let v = read_varint(buf, pos, end)? as u32;
                // SAFETY: as above: the entry belongs to the record's table, its slot of this width.
                unsafe { rec.write(off, v) };
                v != 0
            }
            INT64 | UINT64 => {
                let v = read_varint(buf, pos, end)?;
                // SAFETY: as above: the entry belongs to the record's table, its slot of this width.
                unsafe { rec.write(off, v) };
                v != 0
            }
            SINT32 => {
                let v = unzigzag32(read_varint(buf, pos, end)? as u32);
                // SAFETY: as above: the entry belongs to the record's table, its slot of this width.
                unsafe { rec.write(off, v) };
                v != 0
            }
            SINT64 => {
                let v = unzigzag64(read_varint(buf, pos, end)?);
                // SAFETY: as above: the entry belongs to the record's table, its slot of this width.
                unsafe { rec.write(off, v) };
                v != 0
            }
            BOOL => {
                let v = read_varint(buf, pos, end)? != 0;
                // SAFETY: as above: the entry belongs to the record's table, its slot of this width.
                unsafe { rec.write(off, u8::from(v)) };
                v
            }
            FIXED32 | SFIXED32 | FLOAT => {
                let v = u32::from_le_bytes(read_fixed::<4>(buf, pos, end)?);
                // SAFETY: as above: the entry belongs to the record's table, its slot of this width.
                unsafe { rec.write(off, v) };
                v != 0
            }
            FIXED64 | SFIXED64 | DOUBLE => {
                let v = u64::from_le_bytes(read_fixed::<8>(buf, pos, end)?);
                // SAFETY: as above: the entry belongs to the record's table, its slot of this width.
                unsafe { rec.write(off, v) };
                v != 0
            }
            code => {
                debug_assert!(
                    code == STRING || code == BYTES,
                    "closed enums and messages go through `field`"
                );
                let scalar = if code == STRING {
                    Scalar::String
                } else {
                    Scalar::Bytes
                };
                let view = self.view(scalar, pos, end)?;
                // SAFETY: as above: the entry belongs to the record's table, its slot of this width.
                unsafe { rec.write(off, view) };
                view.len() != 0
            }
        };
        // SAFETY: `index` is an entry of `rec`'s table.
        unsafe { rec.set_bit(index, nonzero || e.has_presence()) };
        Ok(())
    }

    /// Reads one value of `scalar` into `out` (its record bytes); returns whether it is
    /// nonzero (non-empty for strings and bytes).
    #[inline(always)]
    fn scalar(
        &mut self,
        scalar: Scalar,
        out: &mut [u8; 16],
        pos: &mut usize,
        end: usize,
    ) -> Result<bool, Fail> {
        let buf = self.buf;
        Ok(match scalar {
            Scalar::Int32 | Scalar::Uint32 | Scalar::OpenEnum | Scalar::ClosedEnum => {
                let v = read_varint(buf, pos, end)? as u32;
                out[..4].copy_from_slice(&v.to_le_bytes());
                v != 0
            }
            Scalar::Int64 | Scalar::Uint64 => {
                let v = read_varint(buf, pos, end)?;
                out[..8].copy_from_slice(&v.to_le_bytes());
                v != 0
            }
            Scalar::Sint32 => {
                let v = unzigzag32(read_varint(buf, pos, end)? as u32);
                out[..4].copy_from_slice(&v.to_le_bytes());
                v != 0
            }
            Scalar::Sint64 => {
                let v = unzigzag64(read_varint(buf, pos, end)?);
                out[..8].copy_from_slice(&v.to_le_bytes());
                v != 0
            }
            Scalar::Bool => {
                let v = read_varint(buf, pos, end)? != 0;
                out[0] = u8::from(v);
                v
            }
            Scalar::Fixed32 | Scalar::Sfixed32 => {
                let v = read_fixed::<4>(buf, pos, end)?;
                out[..4].copy_from_slice(&v);
                v != [0; 4]
            }
            Scalar::Float => {
                let v = read_fixed::<4>(buf, pos, end)?;
                out[..4].copy_from_slice(&v);
                // -0.0 is not the default: proto3 writes it.
                u32::from_le_bytes(v) != 0
            }
            Scalar::Fixed64 | Scalar::Sfixed64 | Scalar::Double => {
                let v = read_fixed::<8>(buf, pos, end)?;
                out[..8].copy_from_slice(&v);
                v != [0; 8]
            }
            Scalar::String | Scalar::Bytes => {
                let view = self.view(scalar, pos, end)?;
                out.copy_from_slice(bytes_of(&view));
                view.len() != 0
            }
            Scalar::Message | Scalar::Group => unreachable!("messages are not scalars"),
        })
    }

    /// Reads a string or bytes value: a view of the input, or (with `COPY`) of an arena
    /// copy. A string is checked to be UTF-8 here, once.
    #[inline(always)]
    fn view(&mut self, scalar: Scalar, pos: &mut usize, end: usize) -> Result<View, Fail> {
        let at = *pos;
        let value_end = read_length(self.buf, pos, end)?;
        let bytes = &self.buf[*pos..value_end];
        *pos = value_end;
        if scalar == Scalar::String && !is_utf8(bytes) {
            return Err(fail(at, DecodeErrorKind::InvalidUtf8));
        }
        Ok(if COPY && !bytes.is_empty() {
            self.charge(bytes.len(), at)?;
            self.arena.alloc_copy(bytes)
        } else {
            View::of(bytes)
        })
    }

    /// Whether a closed enum value read into `value` is one its enum declares.
    #[cold]
    fn is_declared(&self, table: &Table, e: &Entry, value: &[u8; 16]) -> bool {
        let n = i32::from_le_bytes([value[0], value[1], value[2], value[3]]);
        self.schema
            .enum_type(optimus_schema::EnumId(table.enum_type(e)))
            .contains(n)
    }

    /// Merges a singular sub-message (or group) into the record it already has, or a new one.
    /// Inlined into the field loop: one call per sub-message (its fields' loop), not two.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn single_message(
        &mut self,
        rec: RecPtr,
        table: &Table,
        index: usize,
        e: &Entry,
        pos: &mut usize,
        end: usize,
        depth: u32,
    ) -> Result<(), Fail> {
        let sub_ty = sub_type(table, e);
        // SAFETY: entry `index` is a single message: an 8-byte record pointer slot.
        let existing = unsafe { rec.has(index) }
            .then(|| RecPtr::from_slot(unsafe { rec.read::<*mut u8>(e.offset) }))
            .flatten();
        let sub = match existing {
            Some(sub) => sub,
            None => {
                let sub = self.new_record(sub_ty, *pos)?;
                // SAFETY: as above.
                unsafe {
                    rec.write(e.offset, sub.as_slot());
                    rec.set_bit(index, true);
                }
                sub
            }
        };
        self.message_body(sub, sub_ty, e.op.scalar(), e.number, pos, end, depth)
    }

    /// Decodes a message value: a length-delimited body, or a group's fields up to its
    /// end-group tag.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn message_body(
        &mut self,
        sub: RecPtr,
        sub_ty: &MessageType,
        scalar: Scalar,
        number: u32,
        pos: &mut usize,
        end: usize,
        depth: u32,
    ) -> Result<(), Fail> {
        if depth + 1 > self.depth_limit {
            return Err(fail(*pos, DecodeErrorKind::TooDeep(self.depth_limit)));
        }
        if scalar == Scalar::Group {
            return self.merge(sub, sub_ty, pos, end, depth + 1, Some(number));
        }
        let body_end = read_length(self.buf, pos, end)?;
        self.merge(sub, sub_ty, pos, body_end, depth + 1, None)?;
        *pos = body_end;
        Ok(())
    }

    /// Decodes a packed run of the repeated scalar field at `index`.
    #[allow(clippy::too_many_arguments)]
    fn packed(
        &mut self,
        rec: RecPtr,
        table: &Table,
        index: usize,
        e: &Entry,
        pos: &mut usize,
        end: usize,
    ) -> Result<(), Fail> {
        let scalar = e.op.scalar();
        let width = scalar.width() as usize;
        let run_end = read_length(self.buf, pos, end)?;
        let start = *pos;
        let run = &self.buf[*pos..run_end];
        let count = match scalar.wire_type() {
            WireType::Fixed32 | WireType::Fixed64 => {
                let size = if scalar.wire_type() == WireType::Fixed32 {
                    4
                } else {
                    8
                };
                if !run.len().is_multiple_of(size) {
                    return Err(fail(
                        start,
                        DecodeErrorKind::PackedLength {
                            len: run.len(),
                            size,
                        },
                    ));
                }
                run.len() / size
            }
            // Each varint ends in one byte below 0x80.
            _ => run.iter().filter(|&&b| b < 0x80).count(),
        };
        self.charge(count * width, start)?;
        // SAFETY: entry `index` is a sequence of `width`-byte values.
        unsafe { rec.reserve(self.arena, e.offset, width, count) };
        while *pos < run_end {
            let at = *pos;
            let mut value = [0u8; 16];
            self.scalar(scalar, &mut value, pos, run_end)?;
            if scalar == Scalar::ClosedEnum && !self.is_declared(table, e, &value) {
                self.keep_packed_unknown(rec, table, e, at, *pos)?;
                continue;
            }
            // SAFETY: as above.
            unsafe { rec.push(self.arena, e.offset, width, &value) };
        }
        // SAFETY: `index` is an entry of the record's table.
        unsafe {
            let seq: crate::record::Seq = rec.read(e.offset);
            rec.set_bit(index, seq.len() > 0 || rec.has(index));
        }
        Ok(())
    }

    /// Keeps a closed enum's undeclared value from a packed run as an unknown varint field.
    #[cold]
    fn keep_packed_unknown(
        &mut self,
        rec: RecPtr,
        table: &Table,
        e: &Entry,
        from: usize,
        to: usize,
    ) -> Result<(), Fail> {
        let mut bytes = Vec::with_capacity(16);
        crate::binary::varint::write_varint(&mut bytes, u64::from(e.number) << 3);
        bytes.extend_from_slice(&self.buf[from..to]);
        self.charge(bytes.len(), from)?;
        // SAFETY: `unknown_offset` holds the record's unknown bytes (width 1).
        unsafe { rec.extend_bytes(self.arena, table.unknown_offset, &bytes) };
        Ok(())
    }

    /// Decodes one map entry into a new entry record and appends it. An entry whose value is
    /// a closed enum's undeclared number is kept whole as unknown bytes.
    #[allow(clippy::too_many_arguments)]
    fn map_entry(
        &mut self,
        rec: RecPtr,
        table: &Table,
        index: usize,
        e: &Entry,
        tag_start: usize,
        pos: &mut usize,
        end: usize,
        depth: u32,
    ) -> Result<(), Fail> {
        let entry_ty = sub_type(table, e);
        let entry = self.new_record(entry_ty, *pos)?;
        self.message_body(entry, entry_ty, Scalar::Message, e.number, pos, end, depth)
            .map_err(|err| {
                let read = Record::new(self.schema, MessageId(table.sub_message(e)), entry);
                match key_segment(read.get(0).map(crate::view::to_value)) {
                    Some(segment) => within(err, &segment),
                    None => err,
                }
            })?;
        let entry_table = &entry_ty.table;
        if let Some(v) = entry_table.entries.get(1) {
            // SAFETY: entry 1 of the entry record is its value; a closed enum's slot is 4 bytes.
            let undeclared = v.op.scalar() == Scalar::ClosedEnum && unsafe { entry.has(1) } && {
                let mut value = [0u8; 16];
                // SAFETY: as above.
                value[..4].copy_from_slice(&unsafe { entry.read::<i32>(v.offset) }.to_le_bytes());
                !self.is_declared(entry_table, v, &value)
            };
            if undeclared {
                return self.keep_unknown(rec, table, tag_start, *pos);
            }
        }
        // SAFETY: entry `index` is a sequence of 8-byte entry record pointers.
        unsafe {
            rec.push(self.arena, e.offset, 8, bytes_of(&entry.as_slot()));
            rec.set_bit(index, true);
        }
        Ok(())
    }
}

/// Whether `bytes` is UTF-8: ASCII eight bytes at a time, the rest through the standard check.
#[inline(always)]
pub(crate) fn is_utf8(bytes: &[u8]) -> bool {
    let mut chunks = bytes.chunks_exact(8);
    let ascii = chunks.by_ref().all(|c| {
        u64::from_le_bytes(c.try_into().expect("eight bytes")) & 0x8080_8080_8080_8080 == 0
    }) && chunks.remainder().iter().all(|&b| b < 0x80);
    ascii || std::str::from_utf8(bytes).is_ok()
}

/// The length of `e`'s tag when the input at `pos` starts with it (one- and two-byte tags).
#[inline(always)]
fn tag_matches(buf: &[u8], pos: usize, end: usize, e: &Entry) -> Option<usize> {
    let len = e.tag_len();
    let raw = match buf.get(pos..pos + 2) {
        Some(b) if pos + 2 <= end => u32::from(u16::from_le_bytes([b[0], b[1]])),
        _ if pos < end && len == 1 => u32::from(buf[pos]),
        _ => return None,
    };
    let mask = match len {
        1 => 0xff,
        2 => 0xffff,
        _ => return None,
    };
    (raw & mask == e.tag).then_some(len)
}

/// Runs `f` on a copy of the position and takes back where it ended, so that a call that is
/// not inlined never sees the address of the caller's position (kept in a register).
#[inline(always)]
fn through<R>(pos: &mut usize, f: impl FnOnce(&mut usize) -> R) -> R {
    let mut copy = *pos;
    let result = f(&mut copy);
    *pos = copy;
    result
}

/// Whether a field can take a value of wire type `wire`: its own, or for a repeated scalar
/// either form (a packed run or one element).
#[inline(always)]
fn accepts(e: &Entry, wire: WireType) -> bool {
    let scalar = e.op.scalar();
    wire == scalar.wire_type()
        || wire == e.op.tag_wire_type()
        || (wire == WireType::LengthDelimited
            && matches!(e.op.shape(), Shape::Repeated | Shape::Packed)
            && !scalar.is_bytes_like()
            && !scalar.is_message())
}

/// Writes the first `width` bytes of `value` to the slot at `offset`.
///
/// # Safety
/// `offset` is the offset of a `width`-byte slot of `rec`'s table.
#[inline(always)]
unsafe fn write_slot(rec: RecPtr, offset: u32, width: u32, value: &[u8; 16]) {
    // SAFETY: the caller's duty; each arm writes exactly the slot's width.
    unsafe {
        match width {
            1 => rec.write(offset, value[0]),
            4 => rec.write(offset, crate::record::read_le::<u32>(value)),
            8 => rec.write(offset, crate::record::read_le::<u64>(value)),
            // A view holds a pointer: copied as bytes, which keep its provenance (a load
            // as integers would drop it).
            _ => std::ptr::copy_nonoverlapping(
                value.as_ptr(),
                rec.as_slot().add(offset as usize),
                16,
            ),
        }
    }
}

/// Unsets the other members of entry `index`'s oneof.
#[cold]
pub(crate) fn clear_oneof_siblings(rec: RecPtr, table: &Table, index: usize) {
    let oneof = table.oneof_of[index] as usize;
    for &(word, mask) in &table.oneof_masks[oneof] {
        let keep = if word as usize == index / 64 {
            1u64 << (index % 64)
        } else {
            0
        };
        // SAFETY: the masks' words are presence words of `rec`'s table.
        unsafe { rec.clear_bits(word as usize, mask & !keep) };
    }
}
