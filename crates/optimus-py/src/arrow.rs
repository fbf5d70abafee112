//! A batch of serialized messages decoded into Arrow columns.
//!
//! The column tree mirrors the message type: one column per field, built with arrow-rs
//! builders as each message is decoded into an arena (reset per message) and walked once. The
//! finished struct array goes to pyarrow as a RecordBatch through the Arrow C data interface;
//! no Python object is made per row. The GIL is released while the batch is decoded.
//!
//! Types: bool, int32/int64/uint32/uint64 (every integer kind by width and sign), float32,
//! float64, utf8, binary; enums as dictionary<int32, utf8>, utf8 or int32; messages as structs
//! (null when unset); repeated fields as lists, maps as maps (the last entry of a key wins);
//! `google.protobuf.Timestamp` as timestamp[ns, UTC], `Duration` as duration[ns] (or both in
//! microseconds, `time_unit="us"`, Spark's unit and range), wrappers as their nullable scalar.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Float32Builder, Float64Builder, Int32Builder, Int64Builder,
    StringBuilder, StringDictionaryBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::cast::AsArray;
use arrow_array::ffi::{from_ffi, to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, DurationMicrosecondArray, DurationNanosecondArray, ListArray, MapArray,
    StructArray, TimestampMicrosecondArray, TimestampNanosecondArray,
};
use arrow_buffer::{NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field as AField, Fields, TimeUnit};
use optimus_core::binary::delimited;
use optimus_core::thrift::{self, Protocol};
use optimus_core::{engine, Arena, Error, FieldRef, Record};
use optimus_schema::{Cardinality, EnumId, Field, Kind, MessageId, SchemaSet, WellKnown};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyTuple};

use crate::{to_py_err, SchemaError};

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Enums {
    Dictionary,
    String,
    Int,
}

pub(crate) struct BatchOptions {
    enums: Enums,
    /// The unit of Timestamp and Duration columns: nanoseconds or microseconds.
    time_unit: TimeUnit,
    emit_defaults: bool,
    recursion_depth: i32,
    permissive: bool,
    error_column: String,
    /// Most threads one batch is decoded on.
    threads: usize,
    /// The rows' wire format: protobuf (`None`) or a Thrift protocol.
    thrift: Option<Protocol>,
}

/// The wire format `format` names for a batch's rows of `schema`: protobuf (`None`), or
/// `thrift-binary` / `thrift-compact` for a Thrift schema.
pub(crate) fn row_format(format: &str, schema: &SchemaSet) -> PyResult<Option<Protocol>> {
    let f = crate::formats::Format::parse(format)?;
    match f.thrift() {
        Some(_) if schema.thrift().is_none() => Err(PyValueError::new_err(format!(
            "format={format:?} needs a Thrift schema (Schema.from_thrift)"
        ))),
        Some(p) => Ok(Some(p)),
        None if f.name() == "protobuf" => Ok(None),
        None => Err(PyValueError::new_err(format!(
            "format={format:?}: batches are protobuf, thrift-binary or thrift-compact bytes"
        ))),
    }
}

impl BatchOptions {
    pub(crate) fn parse(
        enums: &str,
        emit_defaults: bool,
        recursion_depth: i32,
        mode: &str,
        error_column: &str,
        threads: Option<usize>,
        time_unit: &str,
    ) -> PyResult<BatchOptions> {
        let enums = match enums {
            "dictionary" => Enums::Dictionary,
            "string" => Enums::String,
            "int" => Enums::Int,
            o => {
                return Err(PyValueError::new_err(format!(
                    "enums={o:?}: expected \"dictionary\", \"string\" or \"int\""
                )))
            }
        };
        let permissive = match mode.to_ascii_lowercase().as_str() {
            "failfast" | "fail_fast" => false,
            "permissive" => true,
            o => {
                return Err(PyValueError::new_err(format!(
                    "mode={o:?}: expected \"failfast\" or \"permissive\""
                )))
            }
        };
        let time_unit = match time_unit {
            "ns" => TimeUnit::Nanosecond,
            "us" => TimeUnit::Microsecond,
            o => {
                return Err(PyValueError::new_err(format!(
                    "time_unit={o:?}: expected \"ns\" or \"us\""
                )))
            }
        };
        Ok(BatchOptions {
            enums,
            time_unit,
            emit_defaults,
            recursion_depth,
            permissive,
            error_column: error_column.to_string(),
            threads: threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
            thrift: None,
        })
    }

    /// The same options for rows in `protocol` (`None`: protobuf).
    pub(crate) fn with_rows(mut self, protocol: Option<Protocol>) -> BatchOptions {
        self.thrift = protocol;
        self
    }
}

// ------------------------------------------------------------------ columns

/// A column of single values of one kind.
enum VCol {
    Bool(BooleanBuilder),
    I32(Int32Builder),
    I64(Int64Builder),
    U32(UInt32Builder),
    U64(UInt64Builder),
    F32(Float32Builder),
    F64(Float64Builder),
    Str(StringBuilder),
    Bin(BinaryBuilder),
    EnumDict(StringDictionaryBuilder<Int32Type>, Option<EnumId>),
    EnumStr(StringBuilder, Option<EnumId>),
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
struct StructCol {
    /// The message type of its rows.
    id: MessageId,
    children: Vec<(usize, String, FCol)>,
    nulls: NullBufferBuilder,
    len: usize,
}

/// A field's column: a single value, or a list or map of them.
enum FCol {
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
    },
    Map {
        offsets: Vec<i32>,
        nulls: NullBufferBuilder,
        key: Box<VCol>,
        value: Box<VCol>,
        key_kind: Kind,
    },
}

struct Ctx<'s> {
    schema: &'s SchemaSet,
    opts: &'s BatchOptions,
    seen: HashMap<MessageId, i32>,
    /// Rows the columns are sized for up front.
    rows: usize,
}

impl Ctx<'_> {
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
            Kind::String => VCol::Str(StringBuilder::with_capacity(rows, rows * 16)),
            Kind::Bytes => VCol::Bin(BinaryBuilder::with_capacity(rows, rows * 16)),
            Kind::Enum => match self.opts.enums {
                Enums::Dictionary => {
                    VCol::EnumDict(StringDictionaryBuilder::new(), field.enum_type)
                }
                Enums::String => VCol::EnumStr(StringBuilder::new(), field.enum_type),
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

    fn struct_col(&mut self, id: MessageId) -> Result<StructCol, String> {
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
    #[derive(PartialEq, Eq, Hash)]
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
    if entries.len() <= 1 {
        return (0..entries.len()).map(Some).collect();
    }
    let mut first: HashMap<K<'a>, usize> = HashMap::with_capacity(entries.len());
    let mut out = vec![None; entries.len()];
    for (i, e) in entries.iter().enumerate() {
        // Keys equal to the default and absent keys are the same key.
        let k = match key(e) {
            K::None => K::None,
            K::I(0) | K::U(0) | K::B(false) | K::S("") => K::None,
            k => k,
        };
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

    /// The children of a null row, the struct itself valid (a top-level row).
    fn append_null_children(&mut self) {
        for (_, _, col) in &mut self.children {
            col.append_null();
        }
        self.nulls.append_non_null();
        self.len += 1;
    }

    fn finish_parts(&mut self) -> (Fields, Vec<ArrayRef>) {
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

    fn finish(&mut self) -> StructArray {
        let (fields, arrays) = self.finish_parts();
        let nulls = self.nulls.finish();
        let len = std::mem::take(&mut self.len);
        if arrays.is_empty() {
            return StructArray::new_empty_fields(len, nulls);
        }
        StructArray::try_new(fields, arrays, nulls).expect("children have the struct's length")
    }
}

// ------------------------------------------------------------------ batch

/// One message of a batch: its bytes, a null, or a framing error of a delimited buffer.
enum Row<'p> {
    Msg(&'p [u8]),
    Null,
    Bad(Error),
}

/// A decode failure in a batch: the row and the engine's error.
struct RowError {
    row: usize,
    err: Error,
}

/// Batches smaller than this per thread are decoded on one thread.
const MIN_ROWS_PER_THREAD: usize = 2048;

/// Decodes `rows` (the batch's rows from `first`) into a struct array of the batch's columns
/// (and the error column in permissive mode). Runs without the GIL.
fn decode_rows(
    schema: &SchemaSet,
    id: MessageId,
    rows: &[Row<'_>],
    first: usize,
    opts: &BatchOptions,
) -> Result<StructArray, RowError> {
    let mut ctx = Ctx {
        schema,
        opts,
        seen: HashMap::from([(id, 1)]),
        rows: rows.len(),
    };
    let mut root = ctx
        .struct_col(id)
        .expect("the schema was checked before the decode");
    let mut errors = StringBuilder::new();
    let dopts = crate::decode_options();
    let mut arena = Arena::new();
    for (i, r) in rows.iter().enumerate() {
        let res = match r {
            Row::Null => {
                root.append_null_children();
                errors.append_null();
                continue;
            }
            Row::Msg(bytes) => match opts.thrift {
                None => engine::decode(schema, id, bytes, &arena, &dopts),
                Some(p) => thrift::decode(schema, id, bytes, &arena, p, &dopts),
            }
            .map(|rec| root.append(schema, rec)),
            Row::Bad(e) => Err(Error::from(
                e.as_decode().cloned().expect("a framing error"),
            )),
        };
        arena.reset();
        match res {
            Ok(()) => errors.append_null(),
            Err(err) if opts.permissive => {
                root.append_null_children();
                errors.append_value(err.to_string());
            }
            Err(err) => {
                return Err(RowError {
                    row: first + i,
                    err,
                })
            }
        }
    }
    let (mut fields, mut arrays) = root.finish_parts();
    let len = root.len;
    if opts.permissive {
        let errs: ArrayRef = Arc::new(errors.finish());
        let mut fs: Vec<_> = fields.iter().cloned().collect();
        fs.push(Arc::new(AField::new(
            opts.error_column.as_str(),
            DataType::Utf8,
            true,
        )));
        fields = Fields::from(fs);
        arrays.push(errs);
    }
    Ok(if arrays.is_empty() {
        StructArray::new_empty_fields(len, None)
    } else {
        StructArray::try_new(fields, arrays, None).expect("columns have the batch's length")
    })
}

/// Decodes `rows` on up to `threads` threads, each a contiguous part, and joins the parts.
fn decode_parallel(
    schema: &SchemaSet,
    id: MessageId,
    rows: &[Row<'_>],
    opts: &BatchOptions,
    threads: usize,
) -> Result<StructArray, RowError> {
    let threads = threads.min(rows.len() / MIN_ROWS_PER_THREAD).max(1);
    if threads == 1 {
        return decode_rows(schema, id, rows, 0, opts);
    }
    let per = rows.len().div_ceil(threads);
    let parts: Vec<Result<StructArray, RowError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = rows
            .chunks(per)
            .enumerate()
            .map(|(k, part)| scope.spawn(move || decode_rows(schema, id, part, k * per, opts)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a decode thread panicked"))
            .collect()
    });
    let mut arrays = Vec::with_capacity(parts.len());
    for p in parts {
        // Parts are in row order: the first error is the earliest row's.
        arrays.push(p?);
    }
    Ok(crate::join::join_parts(&arrays, threads))
}

/// An Arrow array exported by pyarrow through the C data interface.
fn import_arrow(obj: &Bound<'_, PyAny>) -> PyResult<arrow_data::ArrayData> {
    let obj = if obj.hasattr("combine_chunks")? {
        obj.call_method0("combine_chunks")?
    } else {
        obj.clone()
    };
    let mut array = Box::new(FFI_ArrowArray::empty());
    let mut schema = Box::new(FFI_ArrowSchema::empty());
    let pa = &mut *array as *mut FFI_ArrowArray as usize;
    let ps = &mut *schema as *mut FFI_ArrowSchema as usize;
    obj.call_method1("_export_to_c", (pa, ps))?;
    // SAFETY: pyarrow filled both structs as the C data interface specifies; `from_ffi` takes
    // the array (and releases it when the data is dropped), `schema` is released on drop.
    unsafe { from_ffi(*array, &schema) }.map_err(|e| PyValueError::new_err(e.to_string()))
}

pub(crate) fn decode_batch<'py>(
    py: Python<'py>,
    schema: &SchemaSet,
    id: MessageId,
    messages: &Bound<'py, PyAny>,
    opts: &BatchOptions,
) -> PyResult<Bound<'py, PyAny>> {
    let pyarrow = py.import("pyarrow")?;
    // The Arrow schema is checked (recursion) before any row is decoded.
    Ctx {
        schema,
        opts,
        seen: HashMap::from([(id, 1)]),
        rows: 0,
    }
    .struct_col(id)
    .map_err(SchemaError::new_err)?;

    // Keep what the rows borrow alive for the decode.
    let mut held: Vec<Bound<'py, PyBytes>> = Vec::new();
    let imported: ArrayRef;
    let buffer;
    fn stream_rows(s: &[u8]) -> Vec<Row<'_>> {
        delimited(s)
            .map(|m| match m {
                Ok((_, b)) => Row::Msg(b),
                Err(e) => Row::Bad(e),
            })
            .collect()
    }
    fn at(valid: bool, v: &[u8]) -> Row<'_> {
        if valid {
            Row::Msg(v)
        } else {
            Row::Null
        }
    }
    let rows: Vec<Row<'_>> = if let Ok(b) = messages.downcast::<PyBytes>() {
        stream_rows(b.as_bytes())
    } else if let Ok(b) = messages.downcast::<PyByteArray>() {
        buffer = b.to_vec();
        stream_rows(&buffer)
    } else if messages.is_instance_of::<PyList>() || messages.is_instance_of::<PyTuple>() {
        for item in messages.try_iter()? {
            let item = item?;
            held.push(item.downcast_into::<PyBytes>().map_err(|e| {
                pyo3::exceptions::PyTypeError::new_err(format!("messages must be bytes: {e}"))
            })?);
        }
        held.iter().map(|b| Row::Msg(b.as_bytes())).collect()
    } else if messages.hasattr("_export_to_c")? || messages.hasattr("combine_chunks")? {
        imported = arrow_array::make_array(import_arrow(messages)?);
        match imported.data_type() {
            DataType::Binary => {
                let a = imported.as_binary::<i32>();
                (0..a.len())
                    .map(|i| at(a.is_valid(i), a.value(i)))
                    .collect()
            }
            DataType::LargeBinary => {
                let a = imported.as_binary::<i64>();
                (0..a.len())
                    .map(|i| at(a.is_valid(i), a.value(i)))
                    .collect()
            }
            t => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "messages must be a binary or large_binary array, not {t}"
                )))
            }
        }
    } else {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "messages must be a list of bytes, a pyarrow binary array, or a varint-delimited \
             bytes buffer",
        ));
    };

    let threads = opts.threads;
    let batch = py
        .allow_threads(|| decode_parallel(schema, id, &rows, opts, threads))
        .map_err(|RowError { row, err }| to_py_err(py, &err, Some(row)))?;
    let (array, schema_c) =
        to_ffi(&batch.to_data()).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let array = Box::new(array);
    let schema_c = Box::new(schema_c);
    let pa = &*array as *const FFI_ArrowArray as usize;
    let ps = &*schema_c as *const FFI_ArrowSchema as usize;
    // pyarrow moves both structs out (their release callbacks become null), so dropping the
    // boxes afterwards frees only the boxes.
    let rb = pyarrow
        .getattr("RecordBatch")?
        .call_method1("_import_from_c", (pa, ps))?;
    drop(array);
    drop(schema_c);
    Ok(rb)
}

// ------------------------------------------------------------------ encode

use arrow_array::types::{
    DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType, DurationSecondType,
    Float32Type, Float64Type, Int64Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt32Type, UInt64Type,
};

/// Row `i` of a timestamp or duration array (any unit) as (ticks, ticks per second).
fn ticks_at(arr: &dyn Array, i: usize) -> Option<(i64, i64)> {
    use DataType::{Duration as D, Timestamp as T};
    use TimeUnit::{Microsecond as Us, Millisecond as Ms, Nanosecond as Ns, Second as S};
    Some(match arr.data_type() {
        T(S, _) => (arr.as_primitive::<TimestampSecondType>().value(i), 1),
        T(Ms, _) => (
            arr.as_primitive::<TimestampMillisecondType>().value(i),
            1_000,
        ),
        T(Us, _) => (
            arr.as_primitive::<TimestampMicrosecondType>().value(i),
            1_000_000,
        ),
        T(Ns, _) => (
            arr.as_primitive::<TimestampNanosecondType>().value(i),
            1_000_000_000,
        ),
        D(S) => (arr.as_primitive::<DurationSecondType>().value(i), 1),
        D(Ms) => (
            arr.as_primitive::<DurationMillisecondType>().value(i),
            1_000,
        ),
        D(Us) => (
            arr.as_primitive::<DurationMicrosecondType>().value(i),
            1_000_000,
        ),
        D(Ns) => (
            arr.as_primitive::<DurationNanosecondType>().value(i),
            1_000_000_000,
        ),
        _ => return None,
    })
}

/// Why a column cannot be written into a field.
fn col_err(ty: &str, field: &Field, why: impl std::fmt::Display) -> String {
    format!("{ty}.{}: {why}", field.name)
}

/// The enum number of an Arrow enum value (a name, its decimal text, or a number).
fn enum_number(schema: &SchemaSet, field: &Field, name: &str) -> Option<i32> {
    field
        .enum_type
        .and_then(|e| schema.enum_type(e).value_by_name(name))
        .map(|v| v.number)
        .or_else(|| name.parse().ok())
}

/// The string at `i` of a utf8 or dictionary<_, utf8> array.
fn str_at(arr: &dyn Array, i: usize) -> Option<&str> {
    match arr.data_type() {
        DataType::Utf8 => Some(arr.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => Some(arr.as_string::<i64>().value(i)),
        DataType::Dictionary(_, _) => {
            let d = arr.as_any_dictionary();
            let key = d.normalized_keys()[i];
            str_at(d.values().as_ref(), key)
        }
        _ => None,
    }
}

/// Builds records from Arrow columns: one row of a struct array at a time.
struct Writer<'s> {
    schema: &'s SchemaSet,
}

impl<'s> Writer<'s> {
    /// Sets the fields of `rec` from row `row` of the struct columns `cols` (name, array).
    fn fill(
        &self,
        rec: Record<'s>,
        cols: &[(usize, &'s dyn Array)],
        row: usize,
        arena: &'s Arena,
    ) -> Result<(), String> {
        let ty = self.schema.message(rec.type_id());
        for &(index, arr) in cols {
            if arr.is_null(row) {
                continue;
            }
            let field = &ty.fields[index];
            let eng = |e: Error| e.to_string();
            match field.cardinality {
                Cardinality::Repeated => {
                    let (items, range) = list_range(arr, row)
                        .ok_or_else(|| col_err(&ty.full_name, field, "expected a list column"))?;
                    for j in range {
                        if field.kind.is_message() && !self.is_special(field) {
                            let sub = rec.push_message(arena, index).map_err(eng)?;
                            self.fill_struct(sub, items, j, arena)?;
                        } else {
                            let v = self.value(&ty.full_name, field, items, j, arena)?;
                            rec.push(arena, index, v).map_err(eng)?;
                        }
                    }
                }
                Cardinality::Map => {
                    let DataType::Map(_, _) = arr.data_type() else {
                        return Err(col_err(&ty.full_name, field, "expected a map column"));
                    };
                    let m = arr.as_map();
                    let (kf, vf) = self.schema.map_entry_fields(field);
                    let offsets = m.value_offsets();
                    let (keys, values) = (m.keys().as_ref(), m.values().as_ref());
                    for j in offsets[row] as usize..offsets[row + 1] as usize {
                        let k = self.value(&ty.full_name, kf, keys, j, arena)?;
                        let v = if values.is_null(j) {
                            match vf.kind {
                                Kind::Message | Kind::Group => FieldRef::Message(Record::new_in(
                                    self.schema,
                                    vf.message.expect("message type"),
                                    arena,
                                )),
                                _ => continue,
                            }
                        } else {
                            self.value(&ty.full_name, vf, values, j, arena)?
                        };
                        rec.insert(arena, index, k, v).map_err(eng)?;
                    }
                }
                _ => {
                    let v = self.value(&ty.full_name, field, arr, row, arena)?;
                    rec.set(index, v).map_err(eng)?;
                }
            }
        }
        Ok(())
    }

    fn is_special(&self, field: &Field) -> bool {
        field
            .message
            .and_then(|m| self.schema.message(m).well_known)
            .is_some_and(|w| {
                matches!(
                    w,
                    WellKnown::Timestamp | WellKnown::Duration | WellKnown::Wrapper
                )
            })
    }

    /// Fills `rec` from row `row` of a struct array whose children are named as its fields.
    fn fill_struct(
        &self,
        rec: Record<'s>,
        arr: &'s dyn Array,
        row: usize,
        arena: &'s Arena,
    ) -> Result<(), String> {
        let ty = self.schema.message(rec.type_id());
        let DataType::Struct(fields) = arr.data_type() else {
            return Err(format!("{}: expected a struct column", ty.full_name));
        };
        let s = arr.as_struct();
        let mut cols = Vec::with_capacity(fields.len());
        for (f, c) in fields.iter().zip(s.columns()) {
            let index = ty
                .field_index_by_name(f.name())
                .ok_or_else(|| format!("{} has no field {}", ty.full_name, f.name()))?;
            cols.push((index, c.as_ref()));
        }
        self.fill(rec, &cols, row, arena)
    }

    /// The value at `i` of `arr` as one value of `field`.
    fn value(
        &self,
        ty: &str,
        field: &Field,
        arr: &'s dyn Array,
        i: usize,
        arena: &'s Arena,
    ) -> Result<FieldRef<'s>, String> {
        let bad = || {
            col_err(
                ty,
                field,
                format!("cannot hold a {} column", arr.data_type()),
            )
        };
        Ok(match (field.kind, arr.data_type()) {
            (Kind::Bool, DataType::Boolean) => FieldRef::Bool(arr.as_boolean().value(i)),
            (Kind::Int32 | Kind::Sint32 | Kind::Sfixed32, DataType::Int32) => {
                FieldRef::I32(arr.as_primitive::<Int32Type>().value(i))
            }
            (Kind::Int64 | Kind::Sint64 | Kind::Sfixed64, DataType::Int64) => {
                FieldRef::I64(arr.as_primitive::<Int64Type>().value(i))
            }
            (Kind::Uint32 | Kind::Fixed32, DataType::UInt32) => {
                FieldRef::U32(arr.as_primitive::<UInt32Type>().value(i))
            }
            (Kind::Uint64 | Kind::Fixed64, DataType::UInt64) => {
                FieldRef::U64(arr.as_primitive::<UInt64Type>().value(i))
            }
            (Kind::Float, DataType::Float32) => {
                FieldRef::F32(arr.as_primitive::<Float32Type>().value(i))
            }
            (Kind::Double, DataType::Float64) => {
                FieldRef::F64(arr.as_primitive::<Float64Type>().value(i))
            }
            (Kind::String, DataType::Utf8 | DataType::LargeUtf8) => {
                FieldRef::Str(str_at(arr, i).expect("a string column"))
            }
            (Kind::Bytes, DataType::Binary) => FieldRef::Bytes(arr.as_binary::<i32>().value(i)),
            (Kind::Bytes, DataType::LargeBinary) => {
                FieldRef::Bytes(arr.as_binary::<i64>().value(i))
            }
            (Kind::Enum, DataType::Int32) => {
                FieldRef::Enum(arr.as_primitive::<Int32Type>().value(i))
            }
            (Kind::Enum, DataType::Utf8 | DataType::LargeUtf8 | DataType::Dictionary(_, _)) => {
                let name = str_at(arr, i).ok_or_else(bad)?;
                FieldRef::Enum(
                    enum_number(self.schema, field, name).ok_or_else(|| {
                        col_err(ty, field, format!("no enum value named {name:?}"))
                    })?,
                )
            }
            (Kind::Message | Kind::Group, dt) => {
                let id = field.message.expect("a message field has a type");
                let sub = Record::new_in(self.schema, id, arena);
                let mt = self.schema.message(id);
                // `per` ticks make a second; 1e9 / per nanoseconds make a tick.
                match (mt.well_known, dt) {
                    (Some(WellKnown::Timestamp), DataType::Timestamp(_, _)) => {
                        let (t, per) = ticks_at(arr, i).ok_or_else(bad)?;
                        let n = t.rem_euclid(per) * (1_000_000_000 / per);
                        sub.set(0, FieldRef::I64(t.div_euclid(per)))
                            .map_err(|e| e.to_string())?;
                        sub.set(1, FieldRef::I32(n as i32))
                            .map_err(|e| e.to_string())?;
                    }
                    (Some(WellKnown::Duration), DataType::Duration(_)) => {
                        let (t, per) = ticks_at(arr, i).ok_or_else(bad)?;
                        // Seconds and nanos carry the same sign.
                        let n = (t % per) * (1_000_000_000 / per);
                        sub.set(0, FieldRef::I64(t / per))
                            .map_err(|e| e.to_string())?;
                        sub.set(1, FieldRef::I32(n as i32))
                            .map_err(|e| e.to_string())?;
                    }
                    (Some(WellKnown::Wrapper), _) => {
                        let v = self.value(&mt.full_name, &mt.fields[0], arr, i, arena)?;
                        sub.set(0, v).map_err(|e| e.to_string())?;
                    }
                    (_, DataType::Struct(_)) => self.fill_struct(sub, arr, i, arena)?,
                    _ => return Err(bad()),
                }
                FieldRef::Message(sub)
            }
            // Columns built by hand: integers of any width (range-checked), floats of either.
            (Kind::Float, DataType::Float64) => {
                FieldRef::F32(arr.as_primitive::<Float64Type>().value(i) as f32)
            }
            (Kind::Double, DataType::Float32) => {
                FieldRef::F64(arr.as_primitive::<Float32Type>().value(i).into())
            }
            (kind, _) => {
                let x = int_at(arr, i).ok_or_else(bad)?;
                let range = || col_err(ty, field, format!("{x} is out of range"));
                match kind {
                    Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
                        FieldRef::I32(x.try_into().map_err(|_| range())?)
                    }
                    Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
                        FieldRef::I64(x.try_into().map_err(|_| range())?)
                    }
                    Kind::Uint32 | Kind::Fixed32 => {
                        FieldRef::U32(x.try_into().map_err(|_| range())?)
                    }
                    Kind::Uint64 | Kind::Fixed64 => {
                        FieldRef::U64(x.try_into().map_err(|_| range())?)
                    }
                    Kind::Enum => FieldRef::Enum(x.try_into().map_err(|_| range())?),
                    _ => return Err(bad()),
                }
            }
        })
    }
}

/// The integer at `i` of an integer array of any width.
fn int_at(arr: &dyn Array, i: usize) -> Option<i128> {
    use arrow_array::types::{Int16Type, Int8Type, UInt16Type, UInt8Type};
    Some(match arr.data_type() {
        DataType::Int8 => arr.as_primitive::<Int8Type>().value(i).into(),
        DataType::Int16 => arr.as_primitive::<Int16Type>().value(i).into(),
        DataType::Int32 => arr.as_primitive::<Int32Type>().value(i).into(),
        DataType::Int64 => arr.as_primitive::<Int64Type>().value(i).into(),
        DataType::UInt8 => arr.as_primitive::<UInt8Type>().value(i).into(),
        DataType::UInt16 => arr.as_primitive::<UInt16Type>().value(i).into(),
        DataType::UInt32 => arr.as_primitive::<UInt32Type>().value(i).into(),
        DataType::UInt64 => arr.as_primitive::<UInt64Type>().value(i).into(),
        _ => return None,
    })
}

/// The values array and the index range of row `row` of a list column.
fn list_range(arr: &dyn Array, row: usize) -> Option<(&dyn Array, std::ops::Range<usize>)> {
    match arr.data_type() {
        DataType::List(_) => {
            let l = arr.as_list::<i32>();
            let o = l.value_offsets();
            Some((l.values().as_ref(), o[row] as usize..o[row + 1] as usize))
        }
        DataType::LargeList(_) => {
            let l = arr.as_list::<i64>();
            let o = l.value_offsets();
            Some((l.values().as_ref(), o[row] as usize..o[row + 1] as usize))
        }
        _ => None,
    }
}

pub(crate) fn encode_batch<'py>(
    py: Python<'py>,
    schema: &SchemaSet,
    id: MessageId,
    batch: &Bound<'py, PyAny>,
    skip: &str,
    rows_in: Option<Protocol>,
) -> PyResult<Bound<'py, PyList>> {
    let data = import_arrow(batch)?;
    let arr = arrow_array::make_array(data);
    let DataType::Struct(fields) = arr.data_type() else {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "encode_batch takes a pyarrow RecordBatch (or a struct array)",
        ));
    };
    let ty = schema.message(id);
    let s = arr.as_struct();
    let mut cols: Vec<(usize, &dyn Array)> = Vec::new();
    for (f, c) in fields.iter().zip(s.columns()) {
        if f.name() == skip {
            continue;
        }
        let index = ty.field_index_by_name(f.name()).ok_or_else(|| {
            crate::EncodeError::new_err(format!("{} has no field {}", ty.full_name, f.name()))
        })?;
        cols.push((index, c.as_ref()));
    }
    let rows = s.len();
    let out: Result<Vec<Vec<u8>>, (usize, String)> = py.allow_threads(|| {
        let mut arena = Arena::new();
        let mut out = Vec::with_capacity(rows);
        for row in 0..rows {
            let mut bytes = Vec::new();
            {
                let rec = Record::new_in(schema, id, &arena);
                Writer { schema }
                    .fill(rec, &cols, row, &arena)
                    .map_err(|e| (row, e))?;
                match rows_in {
                    None => engine::encode(rec, &mut bytes),
                    Some(p) => {
                        thrift::encode(rec, p, &mut bytes).map_err(|e| (row, e.to_string()))?
                    }
                }
            }
            arena.reset();
            out.push(bytes);
        }
        Ok(out)
    });
    let out = out.map_err(|(row, e)| crate::EncodeError::new_err(format!("row {row}: {e}")))?;
    let list = PyList::empty(py);
    for b in out {
        list.append(PyBytes::new(py, &b))?;
    }
    Ok(list)
}
