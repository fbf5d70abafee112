//! The Thrift decode walker: one walker over the op table and each type's [`ThriftStruct`],
//! generic over the protocol's framing ([`Reader`]), that fills arena records as the protobuf
//! walker does.
//!
//! Per field: the id is looked up through the op table (`Table::find`, O(1) for small ids);
//! a field the type does not know, or one whose wire type is not the declared one, is skipped
//! as Apache Thrift's generated code skips it. Scalars are stored at their natural width,
//! strings and binaries as views (or arena copies), structs as sub-records, lists and sets as
//! sequences, maps as sequences of entry records, and a container inside a container as a
//! wrapper record. Sizes are checked against the bytes left before anything is reserved, and
//! every record is charged to the memory budget, so memory stays proportional to the input.

use optimus_schema::thrift::{TType, ThriftStruct};
use optimus_schema::{Entry, MessageId, MessageType, SchemaSet, Table};

use super::protocol::{code, Reader};
use crate::binary::{fail, within, Fail};
use crate::error::DecodeErrorKind;
use crate::record::{bytes_of, Arena, RecPtr, View};

type R<T> = Result<T, Fail>;

/// One value as a record slot or sequence element holds it.
#[derive(Clone, Copy)]
pub(super) enum Val {
    Byte(u8),
    Word(u32),
    Double(u64),
    View(View),
    Record(*mut u8),
}

impl Val {
    /// Writes the value into the single slot at `offset`.
    ///
    /// # Safety
    /// `offset` is the slot of a single field of `rec`'s table whose width is the value's.
    #[inline]
    pub(super) unsafe fn store(self, rec: RecPtr, offset: u32) {
        // SAFETY: the caller's duty.
        unsafe {
            match self {
                Val::Byte(x) => rec.write(offset, x),
                Val::Word(x) => rec.write(offset, x),
                Val::Double(x) => rec.write(offset, x),
                Val::View(x) => rec.write(offset, x),
                Val::Record(x) => rec.write(offset, x),
            }
        }
    }

    /// Appends the value to the sequence at `offset`.
    ///
    /// # Safety
    /// `offset` holds a sequence of values of this width in `rec`, which lives in `arena`.
    #[inline]
    pub(super) unsafe fn push(self, rec: RecPtr, arena: &Arena, offset: u32) {
        // SAFETY: the caller's duty.
        unsafe {
            match self {
                Val::Byte(x) => rec.push(arena, offset, 1, bytes_of(&x)),
                Val::Word(x) => rec.push(arena, offset, 4, bytes_of(&x)),
                Val::Double(x) => rec.push(arena, offset, 8, bytes_of(&x)),
                Val::View(x) => rec.push(arena, offset, 16, bytes_of(&x)),
                Val::Record(x) => rec.push(arena, offset, 8, bytes_of(&x)),
            }
        }
    }
}

pub(crate) struct Decoder<'s, 'a, P, const COPY: bool> {
    pub schema: &'s SchemaSet,
    pub p: P,
    pub arena: &'a Arena,
    pub depth_limit: u32,
    pub budget: usize,
    pub memory_limit: usize,
    pub check_required: bool,
}

/// The Thrift facts of a type, or an error saying it has none (a `.proto` schema).
pub(crate) fn facts(ty: &MessageType) -> Option<&ThriftStruct> {
    ty.thrift.as_deref()
}

impl<'a, P: Reader<'a>, const COPY: bool> Decoder<'_, 'a, P, COPY> {
    /// Takes `bytes` from the budget, or fails at the reader's position.
    #[inline]
    fn charge(&mut self, bytes: usize) -> R<()> {
        self.charge_at(bytes, self.p.pos())
    }

    /// Takes `bytes` from the budget, or fails at offset `at`.
    #[inline]
    fn charge_at(&mut self, bytes: usize, at: usize) -> R<()> {
        match self.budget.checked_sub(bytes) {
            Some(rest) => {
                self.budget = rest;
                Ok(())
            }
            None => Err(fail(at, DecodeErrorKind::MemoryLimit(self.memory_limit))),
        }
    }

    #[inline]
    pub(crate) fn new_record(&mut self, id: u32) -> R<RecPtr> {
        let table = &self.schema.message(MessageId(id)).table;
        self.charge(table.size as usize)?;
        Ok(RecPtr::new(self.arena, table))
    }

    #[inline]
    fn deeper(&self, depth: u32) -> R<u32> {
        if depth >= self.depth_limit {
            return Err(fail(
                self.p.pos(),
                DecodeErrorKind::TooDeep(self.depth_limit),
            ));
        }
        Ok(depth + 1)
    }

    /// Reads a struct's fields up to its stop byte into `rec`, a record of type `id`.
    pub(crate) fn read_struct(&mut self, rec: RecPtr, id: u32, depth: u32) -> R<()> {
        // The reader is a local while the fields are read: in `self`, every store into the
        // record or call in the loop would send its position through memory. A call that
        // reads through `self` gets it back around the call ([`Decoder::settled`]).
        let mut p = self.p;
        let result = self.read_fields(&mut p, rec, id, depth);
        self.p = p;
        result
    }

    /// Runs `f` with the local reader `p` given back to `self`, and takes it again after.
    #[inline(always)]
    fn settled<T>(&mut self, p: &mut P, f: impl FnOnce(&mut Self) -> T) -> T {
        self.p = *p;
        let result = f(self);
        *p = self.p;
        result
    }

    /// [`Decoder::read_struct`]'s loop, reading through the local reader `p`.
    #[inline(always)]
    fn read_fields(&mut self, p: &mut P, rec: RecPtr, id: u32, depth: u32) -> R<()> {
        let schema = self.schema;
        let ty = schema.message(MessageId(id));
        let t = facts(ty).expect("a Thrift schema's types all have Thrift facts");
        let mut last = 0i16;
        // The entry after the last one read: fields usually arrive in id order.
        let mut next = 0usize;
        loop {
            // The expected field's whole header, where the framing has one to compare.
            let guessed = t
                .binary_headers
                .get(next)
                .is_some_and(|&h| p.take_header(h));
            let i = if guessed {
                next
            } else {
                let Some((wire, fid)) = p.field_begin(&mut last)? else {
                    break;
                };
                let expected = ty.table.entries.get(next);
                let i = if fid > 0 && expected.is_some_and(|e| e.number == fid as u32) {
                    next
                } else {
                    match t.find(&ty.table, fid) {
                        Some(i) => i,
                        None => {
                            self.settled(p, |d| d.skip(wire, depth))?;
                            continue;
                        }
                    }
                };
                debug_assert!(i < t.fields.len());
                // SAFETY: `i` is an entry index (the one after the last, found there, or the
                // table's look-up), and a Thrift struct has its facts per entry.
                if wire != unsafe { t.fields.get_unchecked(i) }.ty.wire() {
                    self.settled(p, |d| d.skip(wire, depth))?;
                    continue;
                }
                i
            };
            next = i + 1;
            debug_assert!(i < t.fields.len() && i < ty.table.entries.len());
            // SAFETY: as above, and a header taken whole is entry `next`'s, its type the
            // field's.
            let (tf, e) = unsafe { (t.fields.get_unchecked(i), ty.table.entries.get_unchecked(i)) };
            let read = match tf.ty {
                TType::I32 | TType::Enum => p.i32().map(|v| {
                    // SAFETY: `e` is a single entry of `rec`'s table; an i32 or enum is
                    // stored as an `i32`.
                    unsafe { rec.write::<i32>(e.offset, v) }
                }),
                TType::I64 => p.i64().map(|v| {
                    // SAFETY: as above; an i64 is stored as an `i64`.
                    unsafe { rec.write::<i64>(e.offset, v) }
                }),
                TType::Double => p.double().map(|v| {
                    // SAFETY: as above; a double is stored as an `f64`.
                    unsafe { rec.write::<f64>(e.offset, v) }
                }),
                TType::Bool => p.bool().map(|v| {
                    // SAFETY: as above; a bool is stored as a `u8`.
                    unsafe { rec.write::<u8>(e.offset, u8::from(v)) }
                }),
                TType::String | TType::Binary => self.view(p, tf.ty).map(|v| {
                    // SAFETY: as above; strings and binaries are stored as views.
                    unsafe { rec.write::<View>(e.offset, v) }
                }),
                TType::Struct => {
                    self.settled(p, |d| d.sub_struct(&ty.table, e, depth))
                        .map(|sub| {
                            // SAFETY: as above; a struct is stored as its record's pointer.
                            unsafe { rec.write(e.offset, sub.as_slot()) }
                        })
                }
                _ if tf.ty.is_container() => {
                    self.settled(p, |d| d.read_container(rec, ty, i, depth))
                }
                _ => {
                    self.settled(p, |d| d.read_value(tf.ty, &ty.table, e, depth))
                        .map(|v| {
                            // SAFETY: `e` is a single entry of `rec`'s table and `read_value` made a
                            // value of its scalar's width.
                            unsafe { v.store(rec, e.offset) };
                        })
                }
            };
            read.map_err(|err| within(err, &ty.fields[i].name))?;
            // SAFETY: `i` is an entry index of `rec`'s table.
            unsafe { rec.set_bit(i, true) };
        }
        if self.check_required && !ty.required_fields.is_empty() {
            for &r in &ty.required_fields {
                // SAFETY: required field indices are entries of `rec`'s table.
                if !unsafe { rec.has(r as usize) } {
                    return Err(fail(
                        p.pos(),
                        DecodeErrorKind::MissingRequired(format!(
                            "{}.{}",
                            ty.full_name, ty.fields[r as usize].name
                        )),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Reads the container of field `i` of `rec` (a struct field or a wrapper's value).
    fn read_container(&mut self, rec: RecPtr, ty: &MessageType, i: usize, depth: u32) -> R<()> {
        let depth = self.deeper(depth)?;
        let t = facts(ty).expect("Thrift facts");
        let tf = &t.fields[i];
        let e = &ty.table.entries[i];
        // A field that arrives twice holds its last value, as in Apache Thrift.
        // SAFETY: `e` is a sequence entry of `rec`'s table: an all-zero header is empty.
        unsafe { rec.write(e.offset, [0u64; 2]) };
        if tf.ty == TType::Map {
            let at = self.p.pos();
            let (kw, vw, n) = self.p.map_begin()?;
            if n > 0 {
                check_part(at, "map key", tf.key, kw)?;
                check_part(at, "map value", tf.value, vw)?;
            }
            let entry_id = ty.table.sub_message(e);
            let et = self.schema.message(MessageId(entry_id));
            let ett = facts(et).expect("Thrift facts");
            self.charge(n * 8)?;
            // SAFETY: `e` is a map: a sequence of 8-byte entry pointers in `rec`, in the arena.
            unsafe { rec.reserve(self.arena, e.offset, 8, n) };
            for k in 0..n {
                let entry = self.new_record(entry_id)?;
                for part in 0..2 {
                    let pe = &et.table.entries[part];
                    let v = self
                        .read_value(ett.fields[part].ty, &et.table, pe, depth)
                        .map_err(|err| within(err, &format!("[{k}]")))?;
                    // SAFETY: entries 0 and 1 of an entry type are single key and value slots
                    // of the value's width.
                    unsafe {
                        v.store(entry, pe.offset);
                        entry.set_bit(part, true);
                    }
                }
                // SAFETY: as for `reserve` above.
                unsafe { Val::Record(entry.as_slot()).push(rec, self.arena, e.offset) };
            }
            return Ok(());
        }
        let at = self.p.pos();
        let (ew, n) = self.p.list_begin()?;
        if n > 0 {
            check_part(at, "element", tf.elem, ew)?;
        }
        let width = e.op.scalar().width() as usize;
        self.charge(n.saturating_mul(width))?;
        // SAFETY: `e` is a sequence of `width`-byte values in `rec`, in the arena.
        unsafe { rec.reserve(self.arena, e.offset, width, n) };
        for k in 0..n {
            let v = self
                .read_value(tf.elem, &ty.table, e, depth)
                .map_err(|err| within(err, &format!("[{k}]")))?;
            // SAFETY: as for `reserve` above; `read_value` made a value of the element width.
            unsafe { v.push(rec, self.arena, e.offset) };
        }
        if tf.ty == TType::Set {
            // SAFETY: `e` is a sequence of `tf.elem` values in `rec`, in the arena.
            unsafe { super::dedupe_set(rec, self.arena, e.offset, tf.elem) };
        }
        Ok(())
    }

    /// Reads one value of type `tt`; `e` (an entry of `table`) names its struct or wrapper.
    #[inline]
    fn read_value(&mut self, tt: TType, table: &Table, e: &Entry, depth: u32) -> R<Val> {
        Ok(match tt {
            TType::Bool => Val::Byte(u8::from(self.p.bool()?)),
            TType::Byte => Val::Word(i32::from(self.p.byte()?) as u32),
            TType::I16 => Val::Word(i32::from(self.p.i16()?) as u32),
            TType::I32 | TType::Enum => Val::Word(self.p.i32()? as u32),
            TType::I64 => Val::Double(self.p.i64()? as u64),
            TType::Double => Val::Double(self.p.double()?.to_bits()),
            TType::String | TType::Binary => {
                let mut p = self.p;
                let view = self.view(&mut p, tt);
                self.p = p;
                Val::View(view?)
            }
            TType::Struct => Val::Record(self.sub_struct(table, e, depth)?.as_slot()),
            TType::List | TType::Set | TType::Map => {
                let id = table.sub_message(e);
                let wrapper = self.new_record(id)?;
                let wty = self.schema.message(MessageId(id));
                self.read_container(wrapper, wty, 0, depth)?;
                // SAFETY: a wrapper's one field is entry 0.
                unsafe { wrapper.set_bit(0, true) };
                Val::Record(wrapper.as_slot())
            }
        })
    }

    /// Reads the struct value of entry `e` of `table` into a new record, one level deeper.
    fn sub_struct(&mut self, table: &Table, e: &Entry, depth: u32) -> R<RecPtr> {
        let depth = self.deeper(depth)?;
        let id = table.sub_message(e);
        let sub = self.new_record(id)?;
        self.read_struct(sub, id, depth)?;
        Ok(sub)
    }

    /// Reads a string (checked to be UTF-8) or binary value through reader `p`: a view of the
    /// input, or with `COPY` of its copy in the arena.
    #[inline(always)]
    fn view(&mut self, p: &mut P, tt: TType) -> R<View> {
        let at = p.pos();
        let bytes = p.binary()?;
        if tt == TType::String && !crate::engine::is_utf8(bytes) {
            return Err(fail(at, DecodeErrorKind::InvalidUtf8));
        }
        Ok(if COPY {
            // At the reader's position, not `self`'s: the caller may hold the reader apart.
            self.charge_at(bytes.len(), p.pos())?;
            self.arena.alloc_copy(bytes)
        } else {
            View::of(bytes)
        })
    }

    /// Skips one value of wire type `wire` (an unknown field or one of another type).
    fn skip(&mut self, wire: u8, depth: u32) -> R<()> {
        match wire {
            code::BOOL => {
                self.p.bool()?;
            }
            code::BYTE => {
                self.p.byte()?;
            }
            code::DOUBLE => {
                self.p.double()?;
            }
            code::I16 => {
                self.p.i16()?;
            }
            code::I32 => {
                self.p.i32()?;
            }
            code::I64 => {
                self.p.i64()?;
            }
            code::STRING => {
                self.p.binary()?;
            }
            code::STRUCT => {
                let depth = self.deeper(depth)?;
                let mut last = 0i16;
                while let Some((w, _)) = self.p.field_begin(&mut last)? {
                    self.skip(w, depth)?;
                }
            }
            code::MAP => {
                let depth = self.deeper(depth)?;
                let (k, v, n) = self.p.map_begin()?;
                for _ in 0..n {
                    self.skip(k, depth)?;
                    self.skip(v, depth)?;
                }
            }
            code::SET | code::LIST => {
                let depth = self.deeper(depth)?;
                let (t, n) = self.p.list_begin()?;
                for _ in 0..n {
                    self.skip(t, depth)?;
                }
            }
            other => {
                return Err(fail(
                    self.p.pos().saturating_sub(1),
                    DecodeErrorKind::InvalidThriftType(other),
                ))
            }
        }
        Ok(())
    }
}

#[cold]
fn check_part(at: usize, part: &'static str, declared: TType, found: u8) -> R<()> {
    if declared.wire() == found {
        return Ok(());
    }
    Err(fail(
        at,
        DecodeErrorKind::ThriftContainerType {
            part,
            expected: declared.wire(),
            found,
        },
    ))
}
