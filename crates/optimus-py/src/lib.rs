//! `optimus._optimus`: the Python binding of optimus's engine v2.
//!
//! One class, [`Schema`], holds a compiled `SchemaSet`; its methods decode and encode one
//! message between protobuf bytes, proto3 JSON and Python dicts (`dict.rs`), and decode a batch
//! of messages straight into an Arrow record batch (`arrow.rs`), handed to pyarrow through the
//! Arrow C data interface. Every decode goes through `optimus_core::engine` into an arena that
//! is reset per message; errors become `optimus.DecodeError` (with `.path` and `.offset`),
//! `optimus.EncodeError` or `optimus.SchemaError`, carrying the engine's text.

mod arrow;
mod dict;

use std::path::PathBuf;
use std::sync::Arc;

use optimus_core::binary::DecodeOptions;
use optimus_core::engine;
use optimus_core::json::JsonOptions;
use optimus_core::{Arena, Error};
use optimus_schema::{
    descriptor_set_from_proto_files, descriptor_set_from_sources, FileDescriptorSet, MessageId,
    SchemaSet, DEFAULT_PROTO_NAME,
};
use prost::Message as _;
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

create_exception!(
    _optimus,
    OptimusError,
    PyValueError,
    "Base class of every error optimus raises."
);
create_exception!(
    _optimus,
    DecodeError,
    OptimusError,
    "Malformed input: `.path` names the field (`pkg.Type.field.sub`), `.offset` the byte \
     (or, for JSON, character) offset; in a batch, `.row` the row."
);
create_exception!(
    _optimus,
    EncodeError,
    OptimusError,
    "A value that cannot be written: a dict field of the wrong type, a name that is no field, \
     or a value the target format cannot represent."
);
create_exception!(
    _optimus,
    SchemaError,
    OptimusError,
    "A schema that does not compile or load, or a message type it does not have."
);

/// The Python exception for an engine error: decode errors carry `path` and `offset`.
pub(crate) fn to_py_err(py: Python<'_>, e: &Error, row: Option<usize>) -> PyErr {
    match e.as_decode() {
        Some(d) => {
            let text = match row {
                Some(r) => format!("row {r}: {e}"),
                None => e.to_string(),
            };
            let err = DecodeError::new_err(text);
            let value = err.value(py);
            let _ = value.setattr("path", d.path_string());
            let _ = value.setattr("offset", d.offset);
            let _ = value.setattr("row", row);
            err
        }
        None => EncodeError::new_err(e.to_string()),
    }
}

/// The decode options every call uses: the engine's defaults (depth 100, memory budget).
pub(crate) fn decode_options() -> DecodeOptions {
    DecodeOptions::default()
}

/// A compiled set of protobuf message types, loaded at run time.
///
/// Build one with `Schema.from_proto(files, include=[...])`, `Schema.from_descriptor_set(data)`
/// or `Schema.from_source(text)`; then name message types by their full name
/// (`"bench.Flat"`). A Schema is immutable and may be shared between threads.
#[pyclass(frozen, module = "optimus")]
pub struct Schema {
    pub(crate) set: Arc<SchemaSet>,
    /// The serialized `FileDescriptorSet` the schema was compiled from: what `descriptor_set()`
    /// returns and what a pickled Schema carries to another process (a Spark executor, a Ray
    /// worker), where it is compiled again.
    descriptor_set: Arc<[u8]>,
}

fn schema_err(e: impl std::fmt::Display) -> PyErr {
    SchemaError::new_err(e.to_string())
}

impl Schema {
    /// Compiles `set` and keeps its serialized form.
    fn compile(set: &FileDescriptorSet) -> PyResult<Schema> {
        Ok(Schema {
            set: Arc::new(SchemaSet::from_descriptor_set(set).map_err(schema_err)?),
            descriptor_set: set.encode_to_vec().into(),
        })
    }

    pub(crate) fn id(&self, type_name: &str) -> PyResult<MessageId> {
        self.set.message_by_name(type_name).ok_or_else(|| {
            PyKeyError::new_err(format!("no message type {type_name:?} in the schema"))
        })
    }
}

#[pymethods]
impl Schema {
    /// Compiles `.proto` files. `include` lists import directories (as `protoc -I`); without
    /// it each file's own directory is searched. Google's well-known types are always
    /// importable. Raises SchemaError with the compiler's message (file, line, column).
    #[staticmethod]
    #[pyo3(signature = (files, include = None))]
    fn from_proto(files: Vec<PathBuf>, include: Option<Vec<PathBuf>>) -> PyResult<Schema> {
        let include = include.unwrap_or_default();
        Schema::compile(&descriptor_set_from_proto_files(&files, &include).map_err(schema_err)?)
    }

    /// Loads a serialized FileDescriptorSet (`protoc -o FILE --include_imports`).
    #[staticmethod]
    fn from_descriptor_set(data: &[u8]) -> PyResult<Schema> {
        let set = SchemaSet::from_descriptor_set_bytes(data).map_err(schema_err)?;
        Ok(Schema {
            set: Arc::new(set),
            descriptor_set: data.into(),
        })
    }

    /// Compiles one `.proto` source given as text (it may import Google's well-known types).
    #[staticmethod]
    fn from_source(text: String) -> PyResult<Schema> {
        let sources = [(DEFAULT_PROTO_NAME, text.as_str())];
        Schema::compile(&descriptor_set_from_sources(&sources).map_err(schema_err)?)
    }

    /// The serialized `FileDescriptorSet` (imports included) the schema was compiled from: what
    /// `from_descriptor_set` loads, and what Spark's `from_protobuf(binaryDescriptorSet=...)`
    /// and Google's `descriptor_pool` take.
    fn descriptor_set<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.descriptor_set)
    }

    /// Pickling: a Schema travels as its descriptor set and is compiled again on load, so it
    /// can be captured by a function that Spark or Ray runs in another process.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let load = py.get_type::<Schema>().getattr("from_descriptor_set")?;
        Ok((load, (slf.get().descriptor_set(py),)))
    }

    /// The full names of the message types (map entry types left out), sorted.
    fn message_types(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .set
            .messages()
            .filter(|(_, m)| !m.is_map_entry)
            .map(|(_, m)| m.full_name.clone())
            .collect();
        names.sort();
        names
    }

    /// Decodes protobuf bytes into a dict: set fields by declared name (`json_names`: JSON
    /// names), every integer an int, bytes as bytes, enums by name (`enums_as_ints`: number),
    /// messages as dicts, repeated as lists, maps as dicts; `emit_defaults` adds unset fields
    /// without presence as their defaults. Raises DecodeError with `.path` and `.offset`.
    #[pyo3(signature = (type_name, data, *, enums_as_ints = false, emit_defaults = false, json_names = false))]
    fn decode<'py>(
        &self,
        py: Python<'py>,
        type_name: String,
        data: &[u8],
        enums_as_ints: bool,
        emit_defaults: bool,
        json_names: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let id = self.id(&type_name)?;
        let arena = Arena::new();
        let rec = engine::decode(&self.set, id, data, &arena, &decode_options())
            .map_err(|e| to_py_err(py, &e, None))?;
        let opts = dict::DictOptions {
            enums_as_ints,
            emit_defaults,
            json_names,
        };
        dict::record_to_dict(py, rec, &opts)
    }

    /// Encodes a dict as protobuf bytes (deterministic: fields by number, maps by key).
    fn encode<'py>(
        &self,
        py: Python<'py>,
        type_name: String,
        value: &Bound<'py, PyDict>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let id = self.id(&type_name)?;
        let arena = Arena::new();
        let rec = dict::dict_to_record(&self.set, id, value, &arena)?;
        let mut out = Vec::new();
        engine::encode(rec, &mut out);
        Ok(PyBytes::new(py, &out))
    }

    /// Protobuf bytes to compact proto3 JSON text.
    #[pyo3(signature = (type_name, data, *, emit_defaults = false, proto_names = false))]
    fn to_json(
        &self,
        py: Python<'_>,
        type_name: String,
        data: &[u8],
        emit_defaults: bool,
        proto_names: bool,
    ) -> PyResult<String> {
        let id = self.id(&type_name)?;
        let opts = JsonOptions {
            emit_defaults,
            proto_names,
            ..JsonOptions::default()
        };
        let arena = Arena::new();
        let rec = engine::decode(&self.set, id, data, &arena, &decode_options())
            .map_err(|e| to_py_err(py, &e, None))?;
        let mut out = String::new();
        engine::encode_json(rec, &opts, &mut out).map_err(|e| to_py_err(py, &e, None))?;
        Ok(out)
    }

    /// Proto3 JSON text to protobuf bytes.
    #[allow(clippy::wrong_self_convention)] // named as the Python API: Schema.from_json
    #[pyo3(signature = (type_name, text, *, ignore_unknown = false))]
    fn from_json<'py>(
        &self,
        py: Python<'py>,
        type_name: String,
        text: String,
        ignore_unknown: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let id = self.id(&type_name)?;
        let opts = JsonOptions {
            ignore_unknown,
            ..JsonOptions::default()
        };
        let arena = Arena::new();
        let rec = engine::decode_json(&self.set, id, &text, &arena, &opts)
            .map_err(|e| to_py_err(py, &e, None))?;
        let mut out = Vec::new();
        engine::encode(rec, &mut out);
        Ok(PyBytes::new(py, &out))
    }

    /// Converts one message between formats: "protobuf" (bytes), "json" (str) and "dict".
    #[pyo3(signature = (type_name, data, *, from_ = "protobuf", to = "json"))]
    fn convert<'py>(
        &self,
        py: Python<'py>,
        type_name: String,
        data: &Bound<'py, PyAny>,
        from_: &str,
        to: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = self.id(&type_name)?;
        let arena = Arena::new();
        let norm = |f: &str| match f {
            "protobuf" | "binary" | "proto" => Ok("protobuf"),
            "json" => Ok("json"),
            "dict" => Ok("dict"),
            other => Err(PyValueError::new_err(format!(
                "unknown format {other:?} (formats: protobuf, json, dict)"
            ))),
        };
        let (src, dst) = (norm(from_)?, norm(to)?);
        let text;
        let bytes;
        let rec = match src {
            "protobuf" => {
                bytes = data.downcast::<PyBytes>()?.as_bytes().to_vec();
                engine::decode(&self.set, id, &bytes, &arena, &decode_options())
                    .map_err(|e| to_py_err(py, &e, None))?
            }
            "json" => {
                text = data.downcast::<PyString>()?.to_cow()?.into_owned();
                engine::decode_json(&self.set, id, &text, &arena, &JsonOptions::default())
                    .map_err(|e| to_py_err(py, &e, None))?
            }
            _ => dict::dict_to_record(&self.set, id, data.downcast::<PyDict>()?, &arena)?,
        };
        Ok(match dst {
            "protobuf" => {
                let mut out = Vec::new();
                engine::encode(rec, &mut out);
                PyBytes::new(py, &out).into_any()
            }
            "json" => {
                let mut out = String::new();
                engine::encode_json(rec, &JsonOptions::default(), &mut out)
                    .map_err(|e| to_py_err(py, &e, None))?;
                PyString::new(py, &out).into_any()
            }
            _ => dict::record_to_dict(py, rec, &dict::DictOptions::default())?.into_any(),
        })
    }

    /// Decodes many messages (a list of bytes, a pyarrow binary array, or a varint-delimited
    /// buffer) into a pyarrow.RecordBatch, a column per field: structs, lists, maps,
    /// timestamp[ns, UTC], duration[ns] (`time_unit="us"`: microseconds); `enums`
    /// "dictionary", "string" or "int"; `emit_defaults`; `recursion_depth` (-1: recursive
    /// types raise); `mode` "failfast" (DecodeError with `.row`) or "permissive" (null row +
    /// `error_column`); `threads` (default: every core, for batches of at least 2048 rows a
    /// thread).
    #[pyo3(signature = (type_name, messages, *, enums = "dictionary", emit_defaults = false,
                        recursion_depth = -1, mode = "failfast", error_column = "_error",
                        threads = None, time_unit = "ns"))]
    #[allow(clippy::too_many_arguments)]
    fn decode_batch<'py>(
        &self,
        py: Python<'py>,
        type_name: String,
        messages: &Bound<'py, PyAny>,
        enums: &str,
        emit_defaults: bool,
        recursion_depth: i32,
        mode: &str,
        error_column: &str,
        threads: Option<usize>,
        time_unit: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = self.id(&type_name)?;
        let opts = arrow::BatchOptions::parse(
            enums,
            emit_defaults,
            recursion_depth,
            mode,
            error_column,
            threads,
            time_unit,
        )?;
        arrow::decode_batch(py, &self.set, id, messages, &opts)
    }

    /// Encodes each row of a pyarrow.RecordBatch (columns named as fields, typed as
    /// `decode_batch` makes them) as protobuf bytes; null is unset. The column named
    /// `error_column` is skipped.
    #[pyo3(signature = (type_name, batch, *, error_column = "_error"))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        type_name: String,
        batch: &Bound<'py, PyAny>,
        error_column: &str,
    ) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        let id = self.id(&type_name)?;
        arrow::encode_batch(py, &self.set, id, batch, error_column)
    }

    /// The pyarrow.Schema that `decode_batch` gives for this type and these options.
    #[pyo3(signature = (type_name, *, enums = "dictionary", recursion_depth = -1,
                        mode = "failfast", error_column = "_error", time_unit = "ns"))]
    #[allow(clippy::too_many_arguments)]
    fn arrow_schema<'py>(
        &self,
        py: Python<'py>,
        type_name: String,
        enums: &str,
        recursion_depth: i32,
        mode: &str,
        error_column: &str,
        time_unit: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = self.id(&type_name)?;
        let opts = arrow::BatchOptions::parse(
            enums,
            false,
            recursion_depth,
            mode,
            error_column,
            Some(1),
            time_unit,
        )?;
        let empty = pyo3::types::PyList::empty(py);
        arrow::decode_batch(py, &self.set, id, empty.as_any(), &opts)?.getattr("schema")
    }

    fn __repr__(&self) -> String {
        format!(
            "<optimus.Schema with {} message types>",
            self.message_types().len()
        )
    }
}

/// optimus's engine for Python.
#[pymodule]
fn _optimus(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Schema>()?;
    m.add("OptimusError", py.get_type::<OptimusError>())?;
    m.add("DecodeError", py.get_type::<DecodeError>())?;
    m.add("EncodeError", py.get_type::<EncodeError>())?;
    m.add("SchemaError", py.get_type::<SchemaError>())?;
    Ok(())
}
