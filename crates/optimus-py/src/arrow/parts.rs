//! A batch's rows read from what Python hands over, and decoded in parts on the batch pool.
//!
//! A batch of at least [`MIN_ROWS_PER_THREAD`] rows a thread is split into contiguous parts,
//! [`PARTS_PER_THREAD`] for each thread, each decoded into a struct array of its own (in row
//! order). The rows of a list or tuple of bytes are read part by part with the GIL held,
//! each part handed to the pool as soon as it is read, and each part's references dropped as
//! soon as it is decoded: what only the GIL's holder can do (take and drop a reference to
//! every object, each seldom in cache in a large batch) runs beside the decoding of the
//! other parts instead of before and after all of it.

use std::ops::Range;
use std::sync::mpsc;

use arrow_array::cast::AsArray;
use arrow_array::ffi::{from_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::DataType;
use optimus_core::binary::delimited;
use optimus_core::Error;
use optimus_schema::{MessageId, SchemaSet};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyTuple};
use rayon::prelude::*;

use super::columns::Ctx;
use super::{decode_rows, BatchOptions};
use crate::{to_py_err, SchemaError};

/// One message of a batch: its bytes, a null, or a framing error of a delimited buffer.
pub(super) enum Row<'p> {
    Msg(&'p [u8]),
    Null,
    Bad(Error),
}

/// A decode failure in a batch: the row and the engine's error.
pub(super) struct RowError {
    pub(super) row: usize,
    pub(super) err: Error,
}

/// Batches smaller than this per thread are decoded on one thread.
const MIN_ROWS_PER_THREAD: usize = 2048;

/// Parts a thread takes: the first part's rows are read, and the last part's references
/// dropped, while no other part decodes, so more, smaller parts leave less of that alone.
const PARTS_PER_THREAD: usize = 2;

/// How many objects ahead of the one read its cache line is asked for.
const PREFETCH_AHEAD: usize = 32;

/// The row ranges of the parts a batch of `len` rows is split into for `threads` threads.
fn parts(len: usize, threads: usize) -> Vec<Range<usize>> {
    let threads = threads.min(len / MIN_ROWS_PER_THREAD).max(1);
    let n = if threads == 1 {
        1
    } else {
        threads * PARTS_PER_THREAD
    };
    let per = len.div_ceil(n).max(1);
    (0..len.max(1))
        .step_by(per)
        .map(|s| s..(s + per).min(len))
        .collect()
}

/// Decodes the rows of `messages` (a list or tuple of bytes, a pyarrow binary array, or a
/// varint-delimited buffer) into a struct array per part, in row order. The GIL is released
/// while they decode.
pub(super) fn decode_messages(
    py: Python<'_>,
    schema: &SchemaSet,
    id: MessageId,
    messages: &Bound<'_, PyAny>,
    opts: &BatchOptions,
) -> PyResult<Vec<StructArray>> {
    // The Arrow schema is checked (recursion) before any row is decoded.
    Ctx::new(schema, opts, id, 0)
        .struct_col(id)
        .map_err(SchemaError::new_err)?;
    if let Ok(list) = messages.downcast::<PyList>() {
        // SAFETY: an index below the list's length names an item.
        return decode_objects(py, schema, id, list.len(), opts, |i| unsafe {
            ffi::PyList_GetItem(list.as_ptr(), i as ffi::Py_ssize_t)
        });
    }
    if let Ok(tuple) = messages.downcast::<PyTuple>() {
        // SAFETY: as above, for a tuple.
        return decode_objects(py, schema, id, tuple.len(), opts, |i| unsafe {
            ffi::PyTuple_GetItem(tuple.as_ptr(), i as ffi::Py_ssize_t)
        });
    }
    let imported: ArrayRef;
    let buffer;
    let rows: Vec<Row<'_>> = if let Ok(b) = messages.downcast::<PyBytes>() {
        stream_rows(b.as_bytes())
    } else if let Ok(b) = messages.downcast::<PyByteArray>() {
        buffer = b.to_vec();
        stream_rows(&buffer)
    } else if messages.hasattr("_export_to_c")? || messages.hasattr("combine_chunks")? {
        imported = arrow_array::make_array(import_arrow(messages)?);
        match imported.data_type() {
            DataType::Binary => array_rows(imported.as_binary::<i32>()),
            DataType::LargeBinary => array_rows(imported.as_binary::<i64>()),
            t => {
                return Err(PyTypeError::new_err(format!(
                    "messages must be a binary or large_binary array, not {t}"
                )))
            }
        }
    } else {
        return Err(PyTypeError::new_err(
            "messages must be a list of bytes, a pyarrow binary array, or a varint-delimited \
             bytes buffer",
        ));
    };
    py.allow_threads(|| decode_rows_in_parts(schema, id, &rows, opts))
        .map_err(|RowError { row, err }| to_py_err(py, &err, Some(row)))
}

/// The rows of a varint-delimited buffer.
fn stream_rows(s: &[u8]) -> Vec<Row<'_>> {
    delimited(s)
        .map(|m| match m {
            Ok((_, b)) => Row::Msg(b),
            Err(e) => Row::Bad(e),
        })
        .collect()
}

/// The rows of a binary array (a null is a null row).
fn array_rows<O: arrow_array::OffsetSizeTrait>(
    a: &arrow_array::GenericBinaryArray<O>,
) -> Vec<Row<'_>> {
    (0..a.len())
        .map(|i| {
            if a.is_valid(i) {
                Row::Msg(a.value(i))
            } else {
                Row::Null
            }
        })
        .collect()
}

/// An Arrow array exported by pyarrow through the C data interface.
pub(super) fn import_arrow(obj: &Bound<'_, PyAny>) -> PyResult<arrow_data::ArrayData> {
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

/// Decodes `rows`, already read, in parts on the batch pool (one part: on this thread).
fn decode_rows_in_parts(
    schema: &SchemaSet,
    id: MessageId,
    rows: &[Row<'_>],
    opts: &BatchOptions,
) -> Result<Vec<StructArray>, RowError> {
    let ranges = parts(rows.len(), opts.threads);
    if let [all] = &ranges[..] {
        return Ok(vec![decode_rows(schema, id, &rows[all.clone()], 0, opts)?]);
    }
    let decoded: Vec<Result<StructArray, RowError>> = crate::pool::pool().install(|| {
        ranges
            .par_iter()
            .map(|r| decode_rows(schema, id, &rows[r.clone()], r.start, opts))
            .collect()
    });
    // Parts are in row order: the first error is the earliest row's.
    decoded.into_iter().collect()
}

/// Decodes a list or tuple of `len` bytes objects (`item(i)`: item `i`, borrowed) part by
/// part: each part's rows are read with the GIL held and handed to the pool, and each
/// part's references are dropped once it is decoded, while the others decode.
fn decode_objects<'py>(
    py: Python<'py>,
    schema: &SchemaSet,
    id: MessageId,
    len: usize,
    opts: &BatchOptions,
    item: impl Fn(usize) -> *mut ffi::PyObject,
) -> PyResult<Vec<StructArray>> {
    let ranges = parts(len, opts.threads);
    // The references that keep each part's objects alive until it is decoded.
    let mut held: Vec<Vec<Bound<'py, PyBytes>>> = ranges.iter().map(|_| Vec::new()).collect();
    if let [all] = &ranges[..] {
        let rows = object_rows(py, all.clone(), &item, &mut held[0])?;
        let decoded = py.allow_threads(|| decode_rows(schema, id, &rows, 0, opts));
        drop(rows);
        release(std::mem::take(&mut held[0]));
        return Ok(vec![
            decoded.map_err(|e| to_py_err(py, &e.err, Some(e.row)))?
        ]);
    }
    let mut decoded: Vec<Option<Result<StructArray, RowError>>> =
        ranges.iter().map(|_| None).collect();
    crate::pool::pool().in_place_scope(|scope| -> PyResult<()> {
        let (done, mut done_rx) = mpsc::channel();
        for (k, range) in ranges.iter().enumerate() {
            let rows = object_rows(py, range.clone(), &item, &mut held[k])?;
            let done = done.clone();
            let start = range.start;
            scope.spawn(move |_| {
                let part = decode_rows(schema, id, &rows, start, opts);
                // The receiver is gone only after an early return, whose error wins.
                let _ = done.send((k, part));
            });
        }
        for _ in 0..ranges.len() {
            let (rx, got) = py.allow_threads(move || {
                let got = done_rx.recv();
                (done_rx, got)
            });
            done_rx = rx;
            let (k, part) = got.expect("every spawned part sends its result");
            decoded[k] = Some(part);
            release(std::mem::take(&mut held[k]));
        }
        Ok(())
    })?;
    decoded
        .into_iter()
        .map(|p| {
            p.expect("every part was decoded")
                .map_err(|e| to_py_err(py, &e.err, Some(e.row)))
        })
        .collect()
}

/// The rows `range` of a list or tuple (`item(i)`: item `i`, borrowed), read in one pass with
/// the GIL held: each object is kept by a reference in `held` and its bytes are read where
/// they lie, the object some items ahead prefetched (a large batch's objects are seldom in
/// cache, and this pass touches each first). The rows' lifetime is not tied to `held`: the
/// caller keeps `held` until the rows are decoded and dropped.
fn object_rows<'r, 'py>(
    py: Python<'py>,
    range: Range<usize>,
    item: &impl Fn(usize) -> *mut ffi::PyObject,
    held: &mut Vec<Bound<'py, PyBytes>>,
) -> PyResult<Vec<Row<'r>>> {
    held.reserve(range.len());
    let end = range.end;
    let mut rows = Vec::with_capacity(range.len());
    for i in range {
        if i + PREFETCH_AHEAD < end {
            prefetch(item(i + PREFETCH_AHEAD));
        }
        // SAFETY: `item(i)` is a live object borrowed from the sequence; the new reference
        // keeps it alive.
        let object = unsafe { Bound::from_borrowed_ptr(py, item(i)) };
        let bytes = object
            .downcast_into::<PyBytes>()
            .map_err(|e| PyTypeError::new_err(format!("messages must be bytes: {e}")))?;
        let b = bytes.as_bytes();
        // SAFETY: the contents of a bytes object never change, and `held` keeps the object
        // alive as long as the caller keeps the row (see above).
        rows.push(Row::Msg(unsafe {
            std::slice::from_raw_parts(b.as_ptr(), b.len())
        }));
        held.push(bytes);
    }
    Ok(rows)
}

/// Drops the references [`object_rows`] took, prefetching the objects ahead of each.
fn release(held: Vec<Bound<'_, PyBytes>>) {
    let ahead: Vec<*mut ffi::PyObject> = held
        .iter()
        .skip(PREFETCH_AHEAD)
        .map(|b| b.as_ptr())
        .collect();
    for (i, object) in held.into_iter().enumerate() {
        if let Some(&p) = ahead.get(i) {
            prefetch(p);
        }
        drop(object);
    }
}

/// Asks for the cache line at `p` (an object's header and first bytes) ahead of its use.
#[inline(always)]
fn prefetch(p: *const ffi::PyObject) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
