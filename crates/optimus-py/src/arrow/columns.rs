//! The column tree of a batch: one column per field kept in the Arrow schema, mirroring the
//! message type, filled from decoded records and finished into Arrow arrays.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::PrimitiveBuilder;
use arrow_array::builder::{
    BooleanBuilder, Float32Builder, Float64Builder, Int32Builder, Int64Builder,
    StringDictionaryBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::types::Int32Type;
use arrow_array::ArrowPrimitiveType;
use arrow_array::{
    ArrayRef, DurationMicrosecondArray, DurationNanosecondArray, ListArray, MapArray, StructArray,
    TimestampMicrosecondArray, TimestampNanosecondArray,
};
use arrow_buffer::{NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field as AField, Fields, TimeUnit};
use optimus_core::{FieldRef, Record};
use optimus_schema::{Cardinality, EnumId, Field, Kind, MessageId, SchemaSet, WellKnown};

use super::bytes_col::{BinCol, StrCol};
use super::{BatchOptions, Enums};

/// A column of single values of one kind.
pub(super) enum VCol {
    Bool(BooleanBuilder),
    I32(Int32Builder),
    I64(Int64Builder),
    U32(UInt32Builder),
    U64(UInt64Builder),
    F32(Float32Builder),
    F64(Float64Builder),
    Str(StrCol),
    Bin(BinCol),
    EnumDict(Box<StringDictionaryBuilder<Int32Type>>, Option<EnumId>),
    EnumStr(StrCol, Option<EnumId>),
    EnumInt(Int32Builder, i32),
    /// Ticks of `time_unit` since the epoch, typed as a UTC timestamp when finished.
    Timestamp(Int64Builder, TimeUnit),
    /// Ticks of `time_unit`, typed as a duration when finished.
    Duration(Int64Builder, TimeUnit),
    /// A wrapper message: its `value` field, null when the wrapper is unset.
    Wrapper(Box<VCol>, Kind),
    Struct(StructCol),
}

/// A struct column: one child per field kept in the Arrow schema.
pub(super) struct StructCol {
    /// The message type of its rows.
    id: MessageId,
    children: Vec<(usize, String, FCol)>,
    nulls: NullBufferBuilder,
    pub(super) len: usize,
}

/// A field's column: a single value, or a list or map of them.
pub(super) enum FCol {
    Single {
        col: VCol,
        /// Unset reads as the default (proto3 implicit presence, `emit_defaults`).
        default: bool,
        /// The field's slot in the record (its op table entry's offset).
        offset: u32,
    },
    List {
        offsets: Vec<i32>,
        nulls: NullBufferBuilder,
        item: VCol,
        /// The field's sequence slot in the record.
        offset: u32,
    },
    Map {
        offsets: Vec<i32>,
        nulls: NullBufferBuilder,
        key: Box<VCol>,
        value: Box<VCol>,
        key_kind: Kind,
    },
}

pub(super) struct Ctx<'s> {
    schema: &'s SchemaSet,
    opts: &'s BatchOptions,
    seen: HashMap<MessageId, i32>,
    /// Rows the columns are sized for up front.
    rows: usize,
}

impl<'s> Ctx<'s> {
    /// A context for the columns of type `id`, sized for `rows` rows.
    pub(super) fn new(
        schema: &'s SchemaSet,
        opts: &'s BatchOptions,
        id: MessageId,
        rows: usize,
    ) -> Self {
        Ctx {
            schema,
            opts,
            seen: HashMap::from([(id, 1)]),
            rows,
        }
    }

    fn value_col(&mut self, field: &Field) -> Result<Option<VCol>, String> {
        let rows = self.rows;
        Ok(Some(match field.kind {
            Kind::Bool => VCol::Bool(BooleanBuilder::with_capacity(rows)),
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
                VCol::I32(Int32Builder::with_capacity(rows))
            }
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
                VCol::I64(Int64Builder::with_capacity(rows))
            }
            Kind::Uint32 | Kind::Fixed32 => VCol::U32(UInt32Builder::with_capacity(rows)),
            Kind::Uint64 | Kind::Fixed64 => VCol::U64(UInt64Builder::with_capacity(rows)),
            Kind::Float => VCol::F32(Float32Builder::with_capacity(rows)),
            Kind::Double => VCol::F64(Float64Builder::with_capacity(rows)),
            Kind::String => VCol::Str(StrCol::with_capacity(rows, rows * 16)),
            Kind::Bytes => VCol::Bin(BinCol::with_capacity(rows, rows * 16)),
            Kind::Enum => match self.opts.enums {
                Enums::Dictionary => VCol::EnumDict(Box::default(), field.enum_type),
                Enums::String => VCol::EnumStr(StrCol::new(), field.enum_type),
                Enums::Int => VCol::EnumInt(
                    Int32Builder::new(),
                    field
                        .enum_type
                        .map_or(0, |e| self.schema.enum_type(e).default_number()),
                ),
            },
            Kind::Message | Kind::Group => {
                let id = field.message.expect("a message field has a type");
                let ty = self.schema.message(id);
                match ty.well_known {
                    Some(WellKnown::Timestamp) => {
                        VCol::Timestamp(Int64Builder::new(), self.opts.time_unit)
                    }
                    Some(WellKnown::Duration) => {
                        VCol::Duration(Int64Builder::new(), self.opts.time_unit)
                    }
                    Some(WellKnown::Wrapper) => {
                        let inner = &ty.fields[0];
                        let col = self.value_col(inner)?.expect("wrappers hold a scalar");
                        VCol::Wrapper(Box::new(col), inner.kind)
                    }
                    _ => {
                        let n = self.seen.get(&id).copied().unwrap_or(0);
                        let limit = self.opts.recursion_depth;
                        if n > 0 {
                            if limit < 0 {
                                return Err(format!(
                                    "{} is recursive (field {}): pass recursion_depth >= 1 to \
                                     cut it",
                                    ty.full_name, field.name
                                ));
                            }
                            if n >= limit {
                                return Ok(None);
                            }
                        }
                        *self.seen.entry(id).or_insert(0) += 1;
                        let s = self.struct_col(id);
                        *self.seen.get_mut(&id).expect("counted above") -= 1;
                        VCol::Struct(s?)
                    }
                }
            }
        }))
    }

    pub(super) fn struct_col(&mut self, id: MessageId) -> Result<StructCol, String> {
        let ty = self.schema.message(id);
        let mut children = Vec::new();
        for (index, field) in ty.fields.iter().enumerate() {
            let col = match field.cardinality {
                Cardinality::Map => {
                    let (kf, vf) = self.schema.map_entry_fields(field);
                    let key = self.value_col(kf)?.expect("map keys are scalars");
                    let Some(value) = self.value_col(vf)? else {
                        continue;
                    };
                    FCol::Map {
                        offsets: vec![0],
                        nulls: NullBufferBuilder::new(0),
                        key: Box::new(key),
                        value: Box::new(value),
                        key_kind: kf.kind,
                    }
                }
                Cardinality::Repeated => {
                    let Some(item) = self.value_col(field)? else {
                        continue;
                    };
                    FCol::List {
                        offsets: vec![0],
                        nulls: NullBufferBuilder::new(0),
                        item,
                        offset: ty.table.entries[index].offset,
                    }
                }
                c => {
                    let Some(col) = self.value_col(field)? else {
                        continue;
                    };
                    let default = self.opts.emit_defaults
                        && c == Cardinality::Singular
                        && field.oneof.is_none()
                        && !field.kind.is_message();
                    let offset = ty.table.entries[index].offset;
                    FCol::Single {
                        col,
                        default,
                        offset,
                    }
                }
            };
            children.push((index, field.name.clone(), col));
        }
        Ok(StructCol {
            id,
            children,
            nulls: NullBufferBuilder::new(0),
            len: 0,
        })
    }
}

fn enum_name(schema: &SchemaSet, e: Option<EnumId>, n: i32) -> Option<&str> {
    e.and_then(|e| schema.enum_type(e).value_by_number(n))
        .map(|v| v.name.as_str())
}

/// Seconds and nanos of a Timestamp or Duration record as ticks of `unit` (None past i64).
/// Microseconds drop the nanoseconds below one, rounding toward zero, as Spark's
/// `from_protobuf` does.
fn ticks(rec: Record<'_>, unit: TimeUnit) -> Option<i64> {
    let secs = match rec.get(0) {
        Some(FieldRef::I64(s)) => s,
        _ => 0,
    };
    let ns = match rec.get(1) {
        Some(FieldRef::I32(n)) => n,
        _ => 0,
    };
    match unit {
        TimeUnit::Microsecond => secs
            .checked_mul(1_000_000)?
            .checked_add(i64::from(ns / 1_000)),
        _ => secs.checked_mul(1_000_000_000)?.checked_add(i64::from(ns)),
    }
}

impl VCol {
    /// Appends a plain scalar, string or struct straight from its slot — set, or unset with
    /// `default` (its slot then holds zeros: the default) — or a null when unset without;
    /// `false` for the columns that read through [`FieldRef`] (enums by name, well-known
    /// types).
    #[inline]
    fn append_slot(&mut self, rec: Record<'_>, index: usize, offset: u32, default: bool) -> bool {
        // SAFETY: `index` is a field of `rec`'s type (the column was built from its fields).
        let set = unsafe { rec.has_unchecked(index) };
        if !set && matches!(self, VCol::EnumInt(..)) {
            // An unset enum reads as its type's default value, not as slot zeros.
            return false;
        }
        if !set && !default {
            if matches!(
                self,
                VCol::Bool(_)
                    | VCol::I32(_)
                    | VCol::I64(_)
                    | VCol::U32(_)
                    | VCol::U64(_)
                    | VCol::F32(_)
                    | VCol::F64(_)
                    | VCol::Str(_)
                    | VCol::Bin(_)
                    | VCol::EnumInt(..)
                    | VCol::Struct(_)
            ) {
                self.append_null();
                return true;
            }
            return false;
        }
        // SAFETY: (every arm) `offset` is the slot of field `index`, a single field whose
        // kind made this column: a `u8` bool, a 4- or 8-byte number (enums `i32`), a view
        // for strings and bytes, a sub-record of the struct's type for a message or group.
        unsafe {
            match self {
                VCol::Bool(b) => b.append_value(rec.read_slot::<u8>(offset) != 0),
                VCol::I32(b) | VCol::EnumInt(b, _) => b.append_value(rec.read_slot(offset)),
                VCol::I64(b) => b.append_value(rec.read_slot(offset)),
                VCol::U32(b) => b.append_value(rec.read_slot(offset)),
                VCol::U64(b) => b.append_value(rec.read_slot(offset)),
                VCol::F32(b) => b.append_value(rec.read_slot(offset)),
                VCol::F64(b) => b.append_value(rec.read_slot(offset)),
                VCol::Str(b) => b.append_value(rec.read_str(offset)),
                VCol::Bin(b) => b.append_value(rec.read_bytes(offset)),
                VCol::Struct(s) if set => match rec.read_message(offset, s.id) {
                    Some(sub) => s.append(rec.schema(), sub),
                    None => s.append_null(),
                },
                _ => return false,
            }
        }
        true
    }

    fn append(&mut self, schema: &SchemaSet, v: FieldRef<'_>) {
        match (self, v) {
            (VCol::Bool(b), FieldRef::Bool(x)) => b.append_value(x),
            (VCol::I32(b), FieldRef::I32(x)) => b.append_value(x),
            (VCol::I64(b), FieldRef::I64(x)) => b.append_value(x),
            (VCol::U32(b), FieldRef::U32(x)) => b.append_value(x),
            (VCol::U64(b), FieldRef::U64(x)) => b.append_value(x),
            (VCol::F32(b), FieldRef::F32(x)) => b.append_value(x),
            (VCol::F64(b), FieldRef::F64(x)) => b.append_value(x),
            (VCol::Str(b), FieldRef::Str(x)) => b.append_value(x),
            (VCol::Bin(b), FieldRef::Bytes(x)) => b.append_value(x),
            (VCol::EnumDict(b, e), FieldRef::Enum(n)) => match enum_name(schema, *e, n) {
                Some(name) => {
                    b.append(name).expect("int32 keys suffice");
                }
                None => {
                    b.append(n.to_string()).expect("int32 keys suffice");
                }
            },
            (VCol::EnumStr(b, e), FieldRef::Enum(n)) => match enum_name(schema, *e, n) {
                Some(name) => b.append_value(name),
                None => b.append_value(n.to_string()),
            },
            (VCol::EnumInt(b, _), FieldRef::Enum(n)) => b.append_value(n),
            (VCol::Timestamp(b, unit), FieldRef::Message(m)) => b.append_option(ticks(m, *unit)),
            (VCol::Duration(b, unit), FieldRef::Message(m)) => b.append_option(ticks(m, *unit)),
            (VCol::Wrapper(inner, kind), FieldRef::Message(m)) => match m.get(0) {
                Some(v) => inner.append(schema, v),
                None => inner.append_default(schema, *kind),
            },
            (VCol::Struct(s), FieldRef::Message(m)) => s.append(schema, m),
            (c, _) => c.append_null(),
        }
    }

    fn append_null(&mut self) {
        match self {
            VCol::Bool(b) => b.append_null(),
            VCol::I32(b) | VCol::EnumInt(b, _) => b.append_null(),
            VCol::I64(b) | VCol::Timestamp(b, _) | VCol::Duration(b, _) => b.append_null(),
            VCol::U32(b) => b.append_null(),
            VCol::U64(b) => b.append_null(),
            VCol::F32(b) => b.append_null(),
            VCol::F64(b) => b.append_null(),
            VCol::Str(b) | VCol::EnumStr(b, _) => b.append_null(),
            VCol::Bin(b) => b.append_null(),
            VCol::EnumDict(b, _) => b.append_null(),
            VCol::Wrapper(inner, _) => inner.append_null(),
            VCol::Struct(s) => s.append_null(),
        }
    }

    /// The value an unset field without presence (or a map entry's missing part) reads as.
    fn append_default(&mut self, schema: &SchemaSet, kind: Kind) {
        let _ = kind;
        match self {
            VCol::Bool(b) => b.append_value(false),
            VCol::I32(b) => b.append_value(0),
            VCol::I64(b) => b.append_value(0),
            VCol::U32(b) => b.append_value(0),
            VCol::U64(b) => b.append_value(0),
            VCol::F32(b) => b.append_value(0.0),
            VCol::F64(b) => b.append_value(0.0),
            VCol::Str(b) => b.append_value(""),
            VCol::Bin(b) => b.append_value(b""),
            VCol::EnumInt(b, d) => b.append_value(*d),
            VCol::EnumDict(_, e) | VCol::EnumStr(_, e) => {
                let e = *e;
                let d = e.map_or(0, |e| schema.enum_type(e).default_number());
                self.append(schema, FieldRef::Enum(d));
            }
            c => c.append_null(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            VCol::Bool(b) => Arc::new(b.finish()),
            VCol::I32(b) | VCol::EnumInt(b, _) => Arc::new(b.finish()),
            VCol::I64(b) => Arc::new(b.finish()),
            VCol::U32(b) => Arc::new(b.finish()),
            VCol::U64(b) => Arc::new(b.finish()),
            VCol::F32(b) => Arc::new(b.finish()),
            VCol::F64(b) => Arc::new(b.finish()),
            VCol::Str(b) | VCol::EnumStr(b, _) => Arc::new(b.finish()),
            VCol::Bin(b) => Arc::new(b.finish()),
            VCol::EnumDict(b, _) => Arc::new(b.finish()),
            VCol::Timestamp(b, unit) => {
                let (_, ticks, nulls) = b.finish().into_parts();
                match unit {
                    TimeUnit::Microsecond => {
                        Arc::new(TimestampMicrosecondArray::new(ticks, nulls).with_timezone("UTC"))
                    }
                    _ => Arc::new(TimestampNanosecondArray::new(ticks, nulls).with_timezone("UTC")),
                }
            }
            VCol::Duration(b, unit) => {
                let (_, ticks, nulls) = b.finish().into_parts();
                match unit {
                    TimeUnit::Microsecond => Arc::new(DurationMicrosecondArray::new(ticks, nulls)),
                    _ => Arc::new(DurationNanosecondArray::new(ticks, nulls)),
                }
            }
            VCol::Wrapper(inner, _) => inner.finish(),
            VCol::Struct(s) => Arc::new(s.finish()),
        }
    }
}

impl FCol {
    fn append(&mut self, schema: &SchemaSet, rec: Record<'_>, index: usize, field: &Field) {
        match self {
            FCol::Single {
                col,
                default,
                offset,
            } => {
                if col.append_slot(rec, index, *offset, *default) {
                    return;
                }
                match rec.get(index) {
                    Some(v) => col.append(schema, v),
                    None if *default => col.append_default(schema, field.kind),
                    None => col.append_null(),
                }
            }
            FCol::List {
                offsets,
                nulls,
                item,
                ..
            } => {
                let mut n = 0;
                for v in rec.elements(index) {
                    item.append(schema, v);
                    n += 1;
                }
                let last = *offsets.last().expect("offsets start at 0");
                offsets.push(last + n);
                nulls.append_non_null();
            }
            FCol::Map {
                offsets,
                nulls,
                key,
                value,
                key_kind,
            } => {
                let entries: Vec<Record<'_>> = rec
                    .elements(index)
                    .filter_map(|e| match e {
                        FieldRef::Message(m) => Some(m),
                        _ => None,
                    })
                    .collect();
                // The last entry of a key wins, at the place of the first (as a dict).
                let keep = dedupe(&entries);
                let (_, vf) = schema.map_entry_fields(field);
                let mut n = 0;
                for j in keep.iter().flatten() {
                    let src = entries[*j];
                    match src.get(0) {
                        Some(k) => key.append(schema, k),
                        None => key.append_default(schema, *key_kind),
                    }
                    match src.get(1) {
                        Some(v) => value.append(schema, v),
                        None => value.append_default(schema, vf.kind),
                    }
                    n += 1;
                }
                let last = *offsets.last().expect("offsets start at 0");
                offsets.push(last + n);
                nulls.append_non_null();
            }
        }
    }

    fn append_null(&mut self) {
        match self {
            FCol::Single { col, .. } => col.append_null(),
            FCol::List { offsets, nulls, .. } | FCol::Map { offsets, nulls, .. } => {
                let last = *offsets.last().expect("offsets start at 0");
                offsets.push(last);
                nulls.append_null();
            }
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            FCol::Single { col, .. } => col.finish(),
            FCol::List {
                offsets,
                nulls,
                item,
                ..
            } => {
                let values = item.finish();
                let field = Arc::new(AField::new("item", values.data_type().clone(), true));
                let offsets =
                    OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(offsets, vec![0])));
                Arc::new(
                    ListArray::try_new(field, offsets, values, nulls.finish())
                        .expect("offsets match the values"),
                )
            }
            FCol::Map {
                offsets,
                nulls,
                key,
                value,
                ..
            } => {
                let keys = key.finish();
                let values = value.finish();
                let fields = Fields::from(vec![
                    AField::new("key", keys.data_type().clone(), false),
                    AField::new("value", values.data_type().clone(), true),
                ]);
                let entries = StructArray::try_new(fields.clone(), vec![keys, values], None)
                    .expect("keys and values have the same length");
                let field = Arc::new(AField::new("entries", DataType::Struct(fields), false));
                let offsets =
                    OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(offsets, vec![0])));
                Arc::new(
                    MapArray::try_new(field, offsets, entries, nulls.finish(), false)
                        .expect("offsets match the entries"),
                )
            }
        }
    }
}

/// For each map entry, the entry whose value it shows (the last with its key), or None when
/// an earlier entry has the same key.
fn dedupe<'a>(entries: &[Record<'a>]) -> Vec<Option<usize>> {
    #[derive(Clone, Copy, PartialEq, Eq, Hash)]
    enum K<'a> {
        I(i64),
        U(u64),
        B(bool),
        S(&'a str),
        None,
    }
    let key = |r: &Record<'a>| -> K<'a> {
        match r.get(0) {
            Some(FieldRef::I32(x)) => K::I(x.into()),
            Some(FieldRef::I64(x)) => K::I(x),
            Some(FieldRef::U32(x)) => K::U(x.into()),
            Some(FieldRef::U64(x)) => K::U(x),
            Some(FieldRef::Bool(x)) => K::B(x),
            Some(FieldRef::Str(s)) => K::S(s),
            _ => K::None,
        }
    };
    // Keys equal to the default and absent keys are the same key.
    let key = |r: &Record<'a>| match key(r) {
        K::I(0) | K::U(0) | K::B(false) | K::S("") => K::None,
        k => k,
    };
    if entries.len() <= 1 {
        return (0..entries.len()).map(Some).collect();
    }
    let mut out = vec![None; entries.len()];
    if entries.len() <= SMALL_MAP {
        // A few keys: compared with each first one kept, no hashing and no table.
        let mut first = [(K::None, 0usize); SMALL_MAP];
        let mut kept = 0;
        for (i, e) in entries.iter().enumerate() {
            let k = key(e);
            match first[..kept].iter().find(|(fk, _)| *fk == k) {
                Some(&(_, f)) => out[f] = Some(i),
                None => {
                    first[kept] = (k, i);
                    kept += 1;
                    out[i] = Some(i);
                }
            }
        }
        return out;
    }
    let mut first: HashMap<K<'a>, usize> = HashMap::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let k = key(e);
        match first.get(&k) {
            Some(&f) => out[f] = Some(i),
            None => {
                first.insert(k, i);
                out[i] = Some(i);
            }
        }
    }
    out
}

/// Maps of at most this many entries are deduplicated by comparing keys, larger ones by hash.
const SMALL_MAP: usize = 16;

impl StructCol {
    fn append(&mut self, schema: &SchemaSet, rec: Record<'_>) {
        let fields = &schema.message(rec.type_id()).fields;
        for (index, _, col) in &mut self.children {
            col.append(schema, rec, *index, &fields[*index]);
        }
        self.nulls.append_non_null();
        self.len += 1;
    }

    fn append_null(&mut self) {
        for (_, _, col) in &mut self.children {
            col.append_null();
        }
        self.nulls.append_null();
        self.len += 1;
    }

    pub(super) fn finish_parts(&mut self) -> (Fields, Vec<ArrayRef>) {
        let arrays: Vec<ArrayRef> = self
            .children
            .iter_mut()
            .map(|(_, _, c)| c.finish())
            .collect();
        let fields: Fields = self
            .children
            .iter()
            .zip(&arrays)
            .map(|((_, name, _), a)| AField::new(name.as_str(), a.data_type().clone(), true))
            .collect();
        (fields, arrays)
    }

    pub(super) fn finish(&mut self) -> StructArray {
        let (fields, arrays) = self.finish_parts();
        let nulls = self.nulls.finish();
        let len = std::mem::take(&mut self.len);
        if arrays.is_empty() {
            return StructArray::new_empty_fields(len, nulls);
        }
        StructArray::try_new(fields, arrays, nulls).expect("children have the struct's length")
    }
}

// ------------------------------------------------------------------ blocks

/// Most rows filled at once: their records stay in one arena until their columns are filled.
pub(super) const BLOCK: usize = 256;

impl StructCol {
    /// Appends a block of at most [`BLOCK`] rows, each column filled for all of them before
    /// the next. A `None` row is a null struct, or with `top` (the batch's rows) a valid row
    /// whose columns are null: a null or failed input row.
    pub(super) fn append_block(
        &mut self,
        schema: &SchemaSet,
        rows: &[Option<Record<'_>>],
        top: bool,
    ) {
        debug_assert!(rows.len() <= BLOCK);
        let fields = &schema.message(self.id).fields;
        for (index, _, col) in &mut self.children {
            col.append_block(schema, rows, *index, &fields[*index]);
        }
        for row in rows {
            if row.is_some() || top {
                self.nulls.append_non_null();
            } else {
                self.nulls.append_null();
            }
        }
        self.len += rows.len();
    }
}

impl FCol {
    /// Appends field `index` of a block of rows (`None`: a null).
    fn append_block(
        &mut self,
        schema: &SchemaSet,
        rows: &[Option<Record<'_>>],
        index: usize,
        field: &Field,
    ) {
        let done = match self {
            FCol::Single {
                col,
                default,
                offset,
            } => col.append_block(schema, rows, index, *offset, *default),
            FCol::List {
                offsets,
                nulls,
                item,
                offset,
            } => item.append_lists(schema, rows, index, *offset, offsets, nulls),
            FCol::Map { .. } => false,
        };
        if done {
            return;
        }
        for row in rows {
            match row {
                Some(rec) => self.append(schema, *rec, index, field),
                None => self.append_null(),
            }
        }
    }
}

impl VCol {
    /// Appends the single field `index` (slot `offset`) of a block of rows with one loop per
    /// column: numbers and bools, strings and bytes, enums, structs. `false` (nothing
    /// appended) for the columns that take values one at a time (well-known types).
    fn append_block(
        &mut self,
        schema: &SchemaSet,
        rows: &[Option<Record<'_>>],
        index: usize,
        offset: u32,
        default: bool,
    ) -> bool {
        let present = Present { index, default };
        // SAFETY (every read below): `offset` is the slot of single field `index`, whose kind
        // made this column: a `u8` bool, a number of the column's width, a view for strings
        // and bytes, a sub-record of the struct's type.
        match self {
            VCol::Bool(b) => {
                let n = rows.len();
                let g = gather(
                    rows,
                    &present,
                    |rec| unsafe { rec.read_slot::<u8>(offset) } != 0,
                );
                match g.valid {
                    None => b.append_slice(&g.values[..n]),
                    Some(valid) => b
                        .append_values(&g.values[..n], &valid[..n])
                        .expect("values and validity of one length"),
                }
            }
            VCol::I32(b) => fill_numbers(b, rows, &present, offset),
            VCol::I64(b) => fill_numbers(b, rows, &present, offset),
            VCol::U32(b) => fill_numbers(b, rows, &present, offset),
            VCol::U64(b) => fill_numbers(b, rows, &present, offset),
            VCol::F32(b) => fill_numbers(b, rows, &present, offset),
            VCol::F64(b) => fill_numbers(b, rows, &present, offset),
            VCol::Str(b) => {
                for row in rows {
                    match present.record(row) {
                        Some(rec) => b.append_value(unsafe { rec.read_str(offset) }),
                        None => b.append_null(),
                    }
                }
            }
            VCol::Bin(b) => {
                for row in rows {
                    match present.record(row) {
                        Some(rec) => b.append_value(unsafe { rec.read_bytes(offset) }),
                        None => b.append_null(),
                    }
                }
            }
            VCol::EnumDict(..) | VCol::EnumStr(..) | VCol::EnumInt(..) => {
                for row in rows {
                    match row {
                        // SAFETY: `index` is a field of the rows' type; a single enum's slot
                        // holds its number as an `i32`.
                        Some(rec) if unsafe { rec.has_unchecked(index) } => {
                            let n = unsafe { rec.read_slot::<i32>(offset) };
                            self.append(schema, FieldRef::Enum(n));
                        }
                        Some(_) if default => self.append_default(schema, Kind::Enum),
                        _ => self.append_null(),
                    }
                }
            }
            VCol::Struct(s) => {
                let id = s.id;
                let subs: Vec<Option<Record<'_>>> = rows
                    .iter()
                    .map(|row| {
                        // SAFETY: a set message field's slot holds a sub-record (or none).
                        row.filter(|rec| unsafe { rec.has_unchecked(index) })
                            .and_then(|rec| unsafe { rec.read_message(offset, id) })
                    })
                    .collect();
                s.append_block(schema, &subs, false);
            }
            _ => return false,
        }
        true
    }
}

impl VCol {
    /// Appends the repeated field `index` (sequence slot `offset`) of a block of rows as one
    /// list each (`None`: a null list), the list's offsets and validity in `offsets` and
    /// `nulls`: numbers a slice per row, message elements a block of structs. `false`
    /// (nothing appended) for the items that take values one at a time.
    fn append_lists(
        &mut self,
        schema: &SchemaSet,
        rows: &[Option<Record<'_>>],
        index: usize,
        offset: u32,
        offsets: &mut Vec<i32>,
        nulls: &mut NullBufferBuilder,
    ) -> bool {
        // SAFETY (every `read_seq`): `offset` is the sequence slot of repeated field `index`,
        // whose kind made this column: elements of the column's number type.
        let lens: Vec<Option<usize>> = match self {
            VCol::I32(b) => rows
                .iter()
                .map(|r| r.map(|rec| append_seq(b, unsafe { rec.read_seq(offset) })))
                .collect(),
            VCol::I64(b) => rows
                .iter()
                .map(|r| r.map(|rec| append_seq(b, unsafe { rec.read_seq(offset) })))
                .collect(),
            VCol::U32(b) => rows
                .iter()
                .map(|r| r.map(|rec| append_seq(b, unsafe { rec.read_seq(offset) })))
                .collect(),
            VCol::U64(b) => rows
                .iter()
                .map(|r| r.map(|rec| append_seq(b, unsafe { rec.read_seq(offset) })))
                .collect(),
            VCol::F32(b) => rows
                .iter()
                .map(|r| r.map(|rec| append_seq(b, unsafe { rec.read_seq(offset) })))
                .collect(),
            VCol::F64(b) => rows
                .iter()
                .map(|r| r.map(|rec| append_seq(b, unsafe { rec.read_seq(offset) })))
                .collect(),
            VCol::Struct(s) => {
                let mut elements: Vec<Option<Record<'_>>> = Vec::new();
                let lens = rows
                    .iter()
                    .map(|row| {
                        row.map(|rec| {
                            let before = elements.len();
                            elements.extend(rec.elements(index).map(|v| match v {
                                FieldRef::Message(m) => Some(m),
                                _ => None,
                            }));
                            elements.len() - before
                        })
                    })
                    .collect();
                for chunk in elements.chunks(BLOCK) {
                    s.append_block(schema, chunk, false);
                }
                lens
            }
            _ => return false,
        };
        let mut last = *offsets.last().expect("offsets start at 0");
        for len in lens {
            match len {
                Some(n) => {
                    last += i32::try_from(n).expect("a list's length fits an Arrow list");
                    nulls.append_non_null();
                }
                None => nulls.append_null(),
            }
            offsets.push(last);
        }
        true
    }
}

/// Appends a row's sequence of numbers; returns how many.
#[inline(always)]
fn append_seq<T: ArrowPrimitiveType>(b: &mut PrimitiveBuilder<T>, values: &[T::Native]) -> usize {
    b.append_slice(values);
    values.len()
}

/// Which rows of a block read field `index` as a value: those that have it set, and with
/// `default` the unset ones too (their slots hold the default, zeros).
struct Present {
    index: usize,
    default: bool,
}

impl Present {
    #[inline(always)]
    fn record<'a>(&self, row: &Option<Record<'a>>) -> Option<Record<'a>> {
        // SAFETY: `index` is a field of the rows' type (the column was built from its fields).
        row.filter(|rec| self.default || unsafe { rec.has_unchecked(self.index) })
    }
}

/// Appends a number column's values for a block of rows: gathered into one array, then
/// appended at once (with validity only when a row is null).
#[inline(always)]
fn fill_numbers<T: ArrowPrimitiveType>(
    b: &mut PrimitiveBuilder<T>,
    rows: &[Option<Record<'_>>],
    present: &Present,
    offset: u32,
) {
    let n = rows.len();
    // SAFETY: the caller's: `offset` is a slot of this column's number type.
    let g = gather(rows, present, |rec| unsafe { rec.read_slot(offset) });
    match g.valid {
        None => b.append_slice(&g.values[..n]),
        Some(valid) => b.append_values(&g.values[..n], &valid[..n]),
    }
}

/// A block's values of one column, and which rows have one (`None`: every row).
struct Gathered<T> {
    values: [T; BLOCK],
    valid: Option<[bool; BLOCK]>,
}

/// Reads each present row's value with `read` into one array (a default where a row has
/// none), for the column to append at once.
#[inline(always)]
fn gather<T: Copy + Default>(
    rows: &[Option<Record<'_>>],
    present: &Present,
    read: impl Fn(Record<'_>) -> T,
) -> Gathered<T> {
    let mut values = [T::default(); BLOCK];
    let mut valid = [false; BLOCK];
    let mut all_valid = true;
    for (i, row) in rows.iter().enumerate() {
        match present.record(row) {
            Some(rec) => {
                values[i] = read(rec);
                valid[i] = true;
            }
            None => all_valid = false,
        }
    }
    Gathered {
        values,
        valid: (!all_valid).then_some(valid),
    }
}
