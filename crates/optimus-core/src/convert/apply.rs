//! Running a [`Plan`]: one walk over a source record that builds the target record in an
//! arena, converting each value as its action says.

use optimus_schema::{Entry, Shape, Table};
use sha2::{Digest, Sha256};

use super::plan::{Action, Node, Number, Plan, SlotCopy, Value, ValueOp};
use super::program::HashKind;
use super::ConvertError;
use crate::engine::clear_oneof_siblings;
use crate::record::{bytes_of, Arena, RecPtr, View};
use crate::view::{FieldRef, Record};

/// A failure on the way out: the path segments (innermost first) and why.
struct Fail {
    segments: Vec<String>,
    why: String,
}

impl Fail {
    fn new(why: String) -> Fail {
        Fail {
            segments: Vec::new(),
            why,
        }
    }

    fn within(mut self, segment: String) -> Fail {
        self.segments.push(segment);
        self
    }
}

impl<'s> Plan<'s> {
    /// Converts `source`, a record of the plan's source type, into a new record of its
    /// target type in `arena`. Strings and bytes that pass unchanged are viewed, not copied:
    /// the result lives as long as the source's memory and the arena.
    ///
    /// # Errors
    /// [`ConvertError::Value`] naming the value's path (`Mixed.items[2].price`): a number
    /// out of the target's range, an enum value with no counterpart, bytes that are not UTF-8
    /// going to a string, or a record of another type or schema than the plan's.
    pub fn apply<'a>(
        &'a self,
        source: Record<'a>,
        arena: &'a Arena,
    ) -> Result<Record<'a>, ConvertError>
    where
        's: 'a,
    {
        let root = &self.nodes[self.root];
        let root_name = self.src.message(root.src).name();
        if !std::ptr::eq(source.schema(), self.src) || source.type_id() != root.src {
            return Err(ConvertError::Value {
                path: source.schema().message(source.type_id()).name().to_string(),
                why: format!(
                    "the plan converts {} records of its own schema",
                    self.src.message(root.src).full_name
                ),
            });
        }
        let out = RecPtr::new(arena, &self.dst.message(root.dst).table);
        self.fill(root, source, out, arena).map_err(|fail| {
            let mut path = root_name.to_string();
            for s in fail.segments.iter().rev() {
                if !s.starts_with('[') {
                    path.push('.');
                }
                path.push_str(s);
            }
            ConvertError::Value {
                path,
                why: fail.why,
            }
        })?;
        Ok(Record::new(self.dst, root.dst, out))
    }

    /// Writes `src`'s fields into `out`, a record of the node's target type.
    fn fill<'a>(
        &'a self,
        node: &'a Node,
        src: Record<'a>,
        out: RecPtr,
        arena: &'a Arena,
    ) -> Result<(), Fail> {
        let sty = self.src.message(node.src);
        let dty = self.dst.message(node.dst);
        for w in 0..sty.table.presence_words as usize {
            // SAFETY: `w` is below the source table's presence word count.
            let mut bits = unsafe { src.ptr.presence_word(w) };
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let (j, op) = match &node.actions[i] {
                    Action::Drop => continue,
                    &Action::Slot {
                        dst,
                        from,
                        to,
                        width,
                        how,
                    } => {
                        // SAFETY: `from` and `to` are the offsets of single slots of the source
                        // and target records, of the types `how` reads and writes (the plan
                        // compiled them so): `width` bytes of one type for `Bits` (a view or
                        // pointer copied as bytes keeps its provenance, and stays valid as
                        // long as the source does), a 32-bit integer to a 64-bit one, a
                        // `float` to a `double`.
                        unsafe {
                            match how {
                                SlotCopy::Bits => match width {
                                    1 => out.write(to, src.ptr.read::<u8>(from)),
                                    4 => out.write(to, src.ptr.read::<u32>(from)),
                                    8 => out.write(to, src.ptr.read::<u64>(from)),
                                    _ => std::ptr::copy_nonoverlapping(
                                        src.ptr.as_slot().add(from as usize),
                                        out.as_slot().add(to as usize),
                                        16,
                                    ),
                                },
                                SlotCopy::Widen { signed: true } => {
                                    out.write(to, i64::from(src.ptr.read::<i32>(from)))
                                }
                                SlotCopy::Widen { signed: false } => {
                                    out.write(to, u64::from(src.ptr.read::<u32>(from)))
                                }
                                SlotCopy::FloatToDouble => {
                                    out.write(to, f64::from(src.ptr.read::<f32>(from)))
                                }
                            }
                            out.set_bit(dst, true);
                        }
                        continue;
                    }
                    &Action::Message {
                        dst,
                        from,
                        to,
                        child,
                    } => {
                        let child = &self.nodes[child];
                        // SAFETY: `from` is a set single message slot of the source record
                        // (a record of the child's source type), `to` a single message slot
                        // of the target record (of its target type).
                        unsafe {
                            let Some(sub) = RecPtr::from_slot(src.ptr.read::<*mut u8>(from)) else {
                                continue;
                            };
                            let rec = RecPtr::new(arena, &self.dst.message(child.dst).table);
                            let sub = Record::new(self.src, child.src, sub);
                            self.fill(child, sub, rec, arena)
                                .map_err(|f| f.within(sty.fields[i].name.clone()))?;
                            out.write(to, rec.as_slot());
                            out.set_bit(dst, true);
                        }
                        continue;
                    }
                    Action::Copy { dst, op } => (*dst, op),
                };
                self.copy_field(node, src, i, j, op, out, arena)?;
            }
        }
        for (j, value) in &node.defaults {
            // SAFETY: `j` is an entry of the target table.
            if unsafe { out.has(*j) } {
                continue;
            }
            let target = Target {
                rec: out,
                table: &dty.table,
                entry: &dty.table.entries[*j],
                index: *j,
            };
            let (slot, nonzero) = self.constant(value, target, arena);
            target.store(slot, nonzero, arena, false);
        }
        if node.keep_unknown && !src.unknown_fields().is_empty() {
            // SAFETY: `unknown_offset` holds the target record's unknown bytes sequence.
            unsafe { out.extend_bytes(arena, dty.table.unknown_offset, src.unknown_fields()) };
        }
        Ok(())
    }

    /// Converts source field `i`'s values into target field `j` of `out`.
    #[allow(clippy::too_many_arguments)]
    fn copy_field<'a>(
        &'a self,
        node: &'a Node,
        src: Record<'a>,
        i: usize,
        j: usize,
        op: &'a ValueOp,
        out: RecPtr,
        arena: &'a Arena,
    ) -> Result<(), Fail> {
        let sty = self.src.message(node.src);
        let dty = self.dst.message(node.dst);
        let se = &sty.table.entries[i];
        let target = Target {
            rec: out,
            table: &dty.table,
            entry: &dty.table.entries[j],
            index: j,
        };
        let name = &sty.fields[i].name;
        if se.op.shape() == Shape::Single {
            // SAFETY: `se` is a single entry of `src`'s table, set.
            let v = unsafe { src.single_unchecked(se) };
            return self
                .put(op, v, target, arena, false)
                .map_err(|f| f.within(name.clone()));
        }
        for (k, v) in src.elements(i).enumerate() {
            self.put(op, v, target, arena, true)
                .map_err(|f| f.within(format!("[{k}]")).within(name.clone()))?;
        }
        Ok(())
    }

    /// Converts one value and stores it in the target field (appended for a sequence).
    fn put<'a>(
        &'a self,
        op: &'a ValueOp,
        v: FieldRef<'a>,
        target: Target<'_>,
        arena: &'a Arena,
        append: bool,
    ) -> Result<(), Fail> {
        let scalar = target.entry.op.scalar();
        let (slot, nonzero) = match op {
            ValueOp::Same => slot_of(v),
            ValueOp::Number { scale, wrap, range } => {
                let mut n = number_of(v);
                if let Some(s) = scale {
                    n = Number::Float(match n {
                        Number::Int(i) => i as f64 * s,
                        Number::Float(f) => f * s,
                    });
                }
                let bits = n.to_bits(scalar, *wrap, *range).map_err(Fail::new)?;
                (Slot::Bits(bits), bits != 0)
            }
            ValueOp::Enum(table) => {
                let FieldRef::Enum(n) = v else {
                    unreachable!("enum ops read enums")
                };
                let t = *table.get(&n).ok_or_else(|| {
                    Fail::new(format!(
                        "enum value {n} has no counterpart in the target enum (map it with `enum`)"
                    ))
                })?;
                (Slot::Bits(u64::from(t as u32)), t != 0)
            }
            ValueOp::EnumName(id) => {
                let FieldRef::Enum(n) = v else {
                    unreachable!("enum ops read enums")
                };
                let en = self.src.enum_type(*id);
                let name = en.value_by_number(n).ok_or_else(|| {
                    Fail::new(format!("enum value {n} of {} has no name", en.full_name))
                })?;
                view_slot(name.name.as_bytes())
            }
            ValueOp::NameEnum(id, renames) => {
                let FieldRef::Str(s) = v else {
                    unreachable!("name ops read strings")
                };
                let en = self.dst.enum_type(*id);
                let name = renames.get(s).map_or(s, String::as_str);
                let value = en.value_by_name(name).ok_or_else(|| {
                    Fail::new(format!("`{name}` is not a value of {}", en.full_name))
                })?;
                (
                    Slot::Bits(u64::from(value.number as u32)),
                    value.number != 0,
                )
            }
            ValueOp::Text { check_utf8 } => {
                let bytes = text_of(v);
                if *check_utf8 && std::str::from_utf8(bytes).is_err() {
                    return Err(Fail::new(
                        "bytes that are not UTF-8 cannot go to a string".into(),
                    ));
                }
                view_slot(bytes)
            }
            ValueOp::Hash { kind, hex } => {
                let HashKind::Sha256 = kind;
                let digest = Sha256::digest(text_of(v));
                let view = if *hex {
                    arena.alloc_copy(hex_digits(&digest).as_bytes())
                } else {
                    arena.alloc_copy(&digest)
                };
                (Slot::View(view), true)
            }
            ValueOp::Const(value) => self.constant(value, target, arena),
            ValueOp::Message(child) => {
                let FieldRef::Message(sub) = v else {
                    unreachable!("message ops read messages")
                };
                let node = &self.nodes[*child];
                let rec = RecPtr::new(arena, &self.dst.message(node.dst).table);
                self.fill(node, sub, rec, arena)?;
                (Slot::Pointer(rec), true)
            }
        };
        target.store(slot, nonzero, arena, append);
        Ok(())
    }

    /// A constant's slot bytes (a new empty record for a message).
    fn constant<'a>(
        &'a self,
        value: &'a Value,
        target: Target<'_>,
        arena: &'a Arena,
    ) -> (Slot, bool) {
        match value {
            Value::Bits(bits) => (Slot::Bits(*bits), *bits != 0),
            Value::Bytes(bytes) => view_slot(bytes),
            Value::EmptyMessage => {
                let sub = target.table.sub_message(target.entry);
                let ty = self.dst.message(optimus_schema::MessageId(sub));
                (Slot::Pointer(RecPtr::new(arena, &ty.table)), true)
            }
        }
    }
}

/// Where a converted value goes: entry `index` of `rec`, laid out by `table`.
#[derive(Clone, Copy)]
struct Target<'t> {
    rec: RecPtr,
    table: &'t Table,
    entry: &'t Entry,
    index: usize,
}

impl Target<'_> {
    /// Stores `slot`: appended to a sequence, or into the single slot (presence set when
    /// `nonzero` or the field has explicit presence, oneof siblings cleared).
    fn store(self, slot: Slot, nonzero: bool, arena: &Arena, append: bool) {
        let e = self.entry;
        let width = if append {
            e.op.scalar().width()
        } else {
            e.op.slot_width()
        };
        // SAFETY: `e` is an entry of the target record's table, which lives in `arena`: a
        // sequence of `width`-byte values (`append`) or a `width`-byte single slot. Bits are
        // stored at the slot's width; views and pointers are stored as themselves (16 and 8
        // bytes: a string/bytes slot or element, a message slot or element), copied from
        // memory so they keep their provenance.
        unsafe {
            match (slot, append) {
                (Slot::Bits(bits), true) => {
                    self.rec
                        .push(arena, e.offset, width as usize, &bits.to_le_bytes())
                }
                (Slot::View(v), true) => self.rec.push(arena, e.offset, 16, bytes_of(&v)),
                (Slot::Pointer(p), true) => {
                    self.rec.push(arena, e.offset, 8, bytes_of(&p.as_slot()))
                }
                (Slot::Bits(bits), false) => match width {
                    1 => self.rec.write(e.offset, bits as u8),
                    4 => self.rec.write(e.offset, bits as u32),
                    _ => self.rec.write(e.offset, bits),
                },
                (Slot::View(v), false) => self.rec.write(e.offset, v),
                (Slot::Pointer(p), false) => self.rec.write(e.offset, p.as_slot()),
            }
            self.rec
                .set_bit(self.index, append || nonzero || e.has_presence());
        }
        if !append && e.in_oneof() {
            clear_oneof_siblings(self.rec, self.table, self.index);
        }
    }
}

/// A converted value as its slot holds it.
#[derive(Clone, Copy)]
enum Slot {
    /// A scalar's little-endian bits (the slot takes its width's low bytes).
    Bits(u64),
    /// A string's or bytes' view.
    View(View),
    /// A sub-record.
    Pointer(RecPtr),
}

/// A value's slot as its own type stores it, and whether it is non-zero.
fn slot_of(v: FieldRef<'_>) -> (Slot, bool) {
    match v {
        FieldRef::Bool(b) => (Slot::Bits(u64::from(b)), b),
        FieldRef::I32(x) | FieldRef::Enum(x) => (Slot::Bits(u64::from(x as u32)), x != 0),
        FieldRef::U32(x) => (Slot::Bits(u64::from(x)), x != 0),
        FieldRef::I64(x) => (Slot::Bits(x as u64), x != 0),
        FieldRef::U64(x) => (Slot::Bits(x), x != 0),
        FieldRef::F32(x) => (Slot::Bits(u64::from(x.to_bits())), x.to_bits() != 0),
        FieldRef::F64(x) => (Slot::Bits(x.to_bits()), x.to_bits() != 0),
        FieldRef::Str(s) => view_slot(s.as_bytes()),
        FieldRef::Bytes(b) => view_slot(b),
        FieldRef::Message(r) => (Slot::Pointer(r.ptr), true),
    }
}

fn number_of(v: FieldRef<'_>) -> Number {
    match v {
        FieldRef::I32(x) | FieldRef::Enum(x) => Number::Int(x.into()),
        FieldRef::U32(x) => Number::Int(x.into()),
        FieldRef::I64(x) => Number::Int(x.into()),
        FieldRef::U64(x) => Number::Int(x.into()),
        FieldRef::F32(x) => Number::Float(x.into()),
        FieldRef::F64(x) => Number::Float(x),
        FieldRef::Bool(_) | FieldRef::Str(_) | FieldRef::Bytes(_) | FieldRef::Message(_) => {
            unreachable!("number ops read numbers")
        }
    }
}

fn text_of(v: FieldRef<'_>) -> &[u8] {
    match v {
        FieldRef::Str(s) => s.as_bytes(),
        FieldRef::Bytes(b) => b,
        _ => unreachable!("text ops read strings and bytes"),
    }
}

/// A view of `bytes`, which live as long as the target record.
fn view_slot(bytes: &[u8]) -> (Slot, bool) {
    (Slot::View(View::of(bytes)), !bytes.is_empty())
}

/// Lowercase hex digits of `bytes`.
fn hex_digits(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}
