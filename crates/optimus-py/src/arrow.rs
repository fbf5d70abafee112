//! A batch of serialized messages decoded into Arrow columns.
//!
//! The column tree mirrors the message type: one column per field, built with arrow-rs
//! builders (`columns.rs`). Rows are decoded a block at a time into one arena, each column is
//! then filled for the whole block by one loop, and the arena is reset. The
//! finished struct array goes to pyarrow as a RecordBatch through the Arrow C data interface;
//! no Python object is made per row. The GIL is released while the batch is decoded.
//!
//! Types: bool, int32/int64/uint32/uint64 (every integer kind by width and sign), float32,
//! float64, utf8, binary; enums as dictionary<int32, utf8>, utf8 or int32; messages as structs
//! (null when unset); repeated fields as lists, maps as maps (the last entry of a key wins);
//! `google.protobuf.Timestamp` as timestamp[ns, UTC], `Duration` as duration[ns] (or both in
//! microseconds, `time_unit="us"`, Spark's unit and range), wrappers as their nullable scalar.

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::ffi::{to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::{DataType, Field as AField, Fields, TimeUnit};
use optimus_core::thrift::{self, Protocol};
use optimus_core::{engine, Arena, Error, FieldRef, Record};
use optimus_schema::{Cardinality, Field, Kind, MessageId, SchemaSet, WellKnown};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

mod bytes_col;
mod columns;
mod parts;

use columns::{Ctx, BLOCK};
use parts::{decode_messages, import_arrow, Row, RowError};

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

// ------------------------------------------------------------------ batch

/// Decodes `rows` (the batch's rows from `first`) into a struct array of the batch's columns
/// (and the error column in permissive mode). Runs without the GIL.
fn decode_rows(
    schema: &SchemaSet,
    id: MessageId,
    rows: &[Row<'_>],
    first: usize,
    opts: &BatchOptions,
) -> Result<StructArray, RowError> {
    let mut root = Ctx::new(schema, opts, id, rows.len())
        .struct_col(id)
        .expect("the schema was checked before the decode");
    let mut errors = StringBuilder::new();
    let dopts = crate::decode_options();
    let mut arena = Arena::new();
    // A block of rows is decoded into one arena, then its columns are filled a column at a
    // time (a loop per column, not a dispatch per value), then the arena is reset.
    for (b, block) in rows.chunks(BLOCK).enumerate() {
        let mut records = Vec::with_capacity(block.len());
        for (i, r) in block.iter().enumerate() {
            let res = match r {
                Row::Null => Ok(None),
                Row::Msg(bytes) => match opts.thrift {
                    None => engine::decode(schema, id, bytes, &arena, &dopts),
                    Some(p) => thrift::decode(schema, id, bytes, &arena, p, &dopts),
                }
                .map(Some),
                Row::Bad(e) => Err(Error::from(
                    e.as_decode().cloned().expect("a framing error"),
                )),
            };
            match res {
                Ok(rec) => {
                    records.push(rec);
                    errors.append_null();
                }
                Err(err) if opts.permissive => {
                    records.push(None);
                    errors.append_value(err.to_string());
                }
                Err(err) => {
                    return Err(RowError {
                        row: first + b * BLOCK + i,
                        err,
                    })
                }
            }
        }
        root.append_block(schema, &records, true);
        drop(records);
        arena.reset();
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

/// Decodes `messages` into one pyarrow.RecordBatch: the parts decoded on several threads are
/// joined, column by column on the same threads.
pub(crate) fn decode_batch<'py>(
    py: Python<'py>,
    schema: &SchemaSet,
    id: MessageId,
    messages: &Bound<'py, PyAny>,
    opts: &BatchOptions,
) -> PyResult<Bound<'py, PyAny>> {
    let parts = decode_messages(py, schema, id, messages, opts)?;
    let batch = match <[StructArray; 1]>::try_from(parts) {
        Ok([one]) => one,
        Err(parts) => py.allow_threads(|| {
            crate::pool::pool().install(|| crate::join::join_parts(&parts, parts.len()))
        }),
    };
    export_batch(py, &batch)
}

/// Decodes `messages` into a pyarrow.Table whose chunks are the parts decoded on the threads,
/// in row order: nothing is copied to join them.
pub(crate) fn decode_table<'py>(
    py: Python<'py>,
    schema: &SchemaSet,
    id: MessageId,
    messages: &Bound<'py, PyAny>,
    opts: &BatchOptions,
) -> PyResult<Bound<'py, PyAny>> {
    let parts = decode_messages(py, schema, id, messages, opts)?;
    let batches = parts
        .iter()
        .map(|p| export_batch(py, p))
        .collect::<PyResult<Vec<_>>>()?;
    py.import("pyarrow")?
        .getattr("Table")?
        .call_method1("from_batches", (batches,))
}

/// Hands `batch` to pyarrow as a RecordBatch through the C data interface (no copy).
fn export_batch<'py>(py: Python<'py>, batch: &StructArray) -> PyResult<Bound<'py, PyAny>> {
    let (array, schema_c) =
        to_ffi(&batch.to_data()).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let array = Box::new(array);
    let schema_c = Box::new(schema_c);
    let pa = &*array as *const FFI_ArrowArray as usize;
    let ps = &*schema_c as *const FFI_ArrowSchema as usize;
    // pyarrow moves both structs out (their release callbacks become null), so dropping the
    // boxes afterwards frees only the boxes.
    let rb = py
        .import("pyarrow")?
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
