//! The Thrift encode walker: one walker over the op table and each type's [`ThriftStruct`],
//! generic over the protocol's framing ([`Writer`]).
//!
//! A struct's set fields are written in the order Apache Thrift's generated code writes them
//! (by field id, [`ThriftStruct::order`]); unset fields are not written, and an unset
//! `required` field is an error. Lists and sets are written in their stored order, maps in
//! their entries' order (Thrift peers compare maps as maps, so no sort is needed).

use optimus_schema::thrift::{Requiredness, TType, ThriftStruct};
use optimus_schema::{Entry, MessageId, MessageType, SchemaSet, Table};

use super::decode::facts;
use super::protocol::{code, Room, Writer, FIELD_ROOM};
use crate::record::{read_le, RecPtr, View};
use crate::Error;

pub(crate) struct Encoder<'s, W> {
    pub schema: &'s SchemaSet,
    pub out: &'s mut Vec<u8>,
    pub _w: std::marker::PhantomData<W>,
}

/// The record bytes of a single field's slot.
///
/// # Safety
/// `e` is an entry of `rec`'s table.
#[inline]
unsafe fn slot<'a>(rec: RecPtr, e: &Entry) -> &'a [u8] {
    // SAFETY: the caller's duty: the slot lies inside the record (`Table` builds it so).
    unsafe {
        std::slice::from_raw_parts(
            rec.as_slot().add(e.offset as usize),
            e.op.slot_width() as usize,
        )
    }
}

/// Room for the fields of presence word `w` of a struct of `fields` fields, whichever are
/// set: [`FIELD_ROOM`] each (a string's bytes apart).
#[inline(always)]
fn word_room(fields: usize, w: usize) -> usize {
    fields.saturating_sub(w * 64).min(64) * FIELD_ROOM
}

impl<W: Writer> Encoder<'_, W> {
    /// Writes the struct `rec` of type `id` (or a bare stop byte for a null record).
    pub(crate) fn write_struct(&mut self, rec: Option<RecPtr>, id: u32) -> Result<(), Error> {
        let schema = self.schema;
        let ty = schema.message(MessageId(id));
        let t: &ThriftStruct = facts(ty).expect("a Thrift schema's types all have Thrift facts");
        if let (Some(rec), true) = (rec, t.in_id_order) {
            return self.write_fields(rec, id, ty, t);
        }
        let mut last = 0i16;
        for &i in &t.order {
            let i = i as usize;
            let tf = &t.fields[i];
            let e = &ty.table.entries[i];
            // SAFETY: `i` is an entry index of the record's table.
            let set = rec.is_some_and(|r| unsafe { r.has(i) });
            if !set {
                if tf.requiredness == Requiredness::Required {
                    return Err(Error::Encode {
                        path: format!("{}.{}", ty.full_name, ty.fields[i].name),
                        why: "required field is not set".into(),
                    });
                }
                continue;
            }
            let rec = rec.expect("a set field has a record");
            if tf.ty == TType::Bool {
                // SAFETY: entry `i` is a single bool slot of `rec`'s table.
                let v = unsafe { rec.read::<u8>(e.offset) } != 0;
                W::field_bool(self.out, tf.id, v, &mut last);
                continue;
            }
            W::field_begin(self.out, tf.ty.wire(), tf.id, &mut last);
            let written = if tf.ty.is_container() {
                self.write_container(Some(rec), id, i)
            } else {
                // SAFETY: `e` is entry `i` of `rec`'s table.
                self.write_value(tf.ty, &ty.table, e, unsafe { slot(rec, e) })
            };
            written?;
        }
        W::field_stop(self.out);
        Ok(())
    }

    /// Writes the set fields of `rec`, a struct whose fields are in id order: the presence
    /// bits walked from the lowest, each scalar field written whole into room reserved once.
    fn write_fields(
        &mut self,
        rec: RecPtr,
        id: u32,
        ty: &MessageType,
        t: &ThriftStruct,
    ) -> Result<(), Error> {
        let table = &ty.table;
        for (w, &required) in t.required.iter().enumerate() {
            // SAFETY: `w` is below the record's presence word count (one bit per field).
            let present = unsafe { rec.presence_word(w) };
            if present & required != required {
                let i = w * 64 + (required & !present).trailing_zeros() as usize;
                return Err(Error::Encode {
                    path: format!("{}.{}", ty.full_name, ty.fields[i].name),
                    why: "required field is not set".into(),
                });
            }
        }
        let mut last = 0i16;
        let mut room = Room::of(self.out);
        for w in 0..table.presence_words as usize {
            // SAFETY: `w` is below the table's presence word count.
            let mut bits = unsafe { rec.presence_word(w) };
            // Room for every field of the word at once: the fields keep it so (a string
            // reserves its bytes with the room of the fields after it, and a struct or
            // container, written by `self.out`, the room of those after it).
            let word_room = word_room(t.fields.len(), w);
            room.reserve(self.out, word_room);
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                debug_assert!(
                    i < t.fields.len() && i < table.entries.len() && i < t.binary_headers.len()
                );
                // SAFETY: a record's presence bit `i` is set for entry `i` of its table alone,
                // and a Thrift struct has its facts per entry.
                let (tf, e, header) = unsafe {
                    (
                        t.fields.get_unchecked(i),
                        table.entries.get_unchecked(i),
                        *t.binary_headers.get_unchecked(i),
                    )
                };
                let out = &mut room;
                // SAFETY: each arm reads entry `i`'s slot as the type its Thrift type is stored
                // as (`i32` for byte, i16, i32 and enum; `i64`; `f64`; `u8` bool; a view; a
                // record pointer), and writes at most FIELD_ROOM bytes (a string's reserved
                // with its length) of the room reserved for this field and those after it; a
                // struct or container is written by `self.out` itself, the room settled
                // before and taken again (with the room of the fields after it) after.
                unsafe {
                    let off = e.offset;
                    match tf.ty {
                        TType::Bool => {
                            let v = rec.read::<u8>(off) != 0;
                            W::field_bool_unchecked(out, header, tf.id, v, &mut last)
                        }
                        TType::Byte | TType::I16 | TType::I32 | TType::Enum => {
                            let c = tf.ty.wire();
                            W::field_header_unchecked(out, header, c, tf.id, &mut last);
                            W::int_unchecked(out, c, rec.read::<i32>(off));
                        }
                        TType::I64 => {
                            W::field_header_unchecked(out, header, code::I64, tf.id, &mut last);
                            W::i64_unchecked(out, rec.read::<i64>(off));
                        }
                        TType::Double => {
                            W::field_header_unchecked(out, header, code::DOUBLE, tf.id, &mut last);
                            W::double_unchecked(out, rec.read::<f64>(off));
                        }
                        TType::String | TType::Binary => {
                            let bytes = rec.read::<View>(off).bytes();
                            out.reserve(self.out, bytes.len() + word_room);
                            W::field_header_unchecked(out, header, code::STRING, tf.id, &mut last);
                            W::binary_unchecked(out, bytes);
                        }
                        TType::Struct => {
                            W::field_header_unchecked(out, header, code::STRUCT, tf.id, &mut last);
                            out.settle(self.out);
                            let sub = RecPtr::from_slot(rec.read::<*mut u8>(off));
                            self.write_struct(sub, table.sub_message(e))?;
                            room = Room::of(self.out);
                            room.reserve(self.out, word_room);
                        }
                        TType::List | TType::Set | TType::Map => {
                            W::field_header_unchecked(out, header, tf.ty.wire(), tf.id, &mut last);
                            out.settle(self.out);
                            self.write_container(Some(rec), id, i)?;
                            room = Room::of(self.out);
                            room.reserve(self.out, word_room);
                        }
                    }
                }
            }
        }
        room.settle(self.out);
        W::field_stop(self.out);
        Ok(())
    }

    /// Writes the container of field `i` of `rec` (null: an empty one).
    fn write_container(&mut self, rec: Option<RecPtr>, id: u32, i: usize) -> Result<(), Error> {
        let schema = self.schema;
        let ty = schema.message(MessageId(id));
        let t = facts(ty).expect("Thrift facts");
        let tf = &t.fields[i];
        let e = &ty.table.entries[i];
        let width = e.op.scalar().width() as usize;
        // SAFETY: `e` is sequence entry `i` of the record's table, of `width`-byte values.
        let raw = unsafe { super::seq_values(rec, i, e) };
        let n = raw.len() / width;
        if tf.ty == TType::Map {
            W::map_begin(self.out, tf.key.wire(), tf.value.wire(), n);
            let entry_id = ty.table.sub_message(e);
            let et = schema.message(MessageId(entry_id));
            let ett = facts(et).expect("Thrift facts");
            for chunk in raw.chunks_exact(8) {
                let entry = RecPtr::from_slot(read_le(chunk));
                for part in 0..2 {
                    let pe = &et.table.entries[part];
                    let zero = [0u8; 16];
                    let bytes = match entry {
                        // SAFETY: entries 0 and 1 of the entry type are single slots; an
                        // unset one is zero, which reads as the type's zero value.
                        Some(r) => unsafe { slot(r, pe) },
                        None => &zero[..pe.op.slot_width() as usize],
                    };
                    self.write_value(ett.fields[part].ty, &et.table, pe, bytes)?;
                }
            }
            return Ok(());
        }
        W::list_begin(self.out, tf.elem.wire(), n);
        for chunk in raw.chunks_exact(width) {
            self.write_value(tf.elem, &ty.table, e, chunk)?;
        }
        Ok(())
    }

    /// Writes one value of type `tt` from its record bytes; `e` (an entry of `table`) names
    /// its struct or wrapper type.
    #[inline]
    fn write_value(
        &mut self,
        tt: TType,
        table: &Table,
        e: &Entry,
        raw: &[u8],
    ) -> Result<(), Error> {
        match tt {
            TType::Bool => W::bool(self.out, raw[0] != 0),
            TType::Byte => W::byte(self.out, read_le::<i32>(raw) as i8),
            TType::I16 => W::i16(self.out, read_le::<i32>(raw) as i16),
            TType::I32 | TType::Enum => W::i32(self.out, read_le::<i32>(raw)),
            TType::I64 => W::i64(self.out, read_le::<i64>(raw)),
            TType::Double => W::double(self.out, read_le::<f64>(raw)),
            TType::String | TType::Binary => {
                // SAFETY: string and bytes views point at memory living as long as the record.
                let bytes = unsafe { read_le::<View>(raw).bytes() };
                W::binary(self.out, bytes);
            }
            TType::Struct => {
                let sub = RecPtr::from_slot(read_le(raw));
                self.write_struct(sub, table.sub_message(e))?;
            }
            TType::List | TType::Set | TType::Map => {
                let sub = RecPtr::from_slot(read_le(raw));
                self.write_container(sub, table.sub_message(e), 0)?;
            }
        }
        Ok(())
    }
}
