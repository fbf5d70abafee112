//! `optimus._optimus`: the Python binding of optimus's engine v2.
//!
//! [`Schema`] holds a compiled `SchemaSet` (from `.proto` files, a descriptor set or Thrift
//! IDL); its methods convert one message between protobuf bytes, JSON, the text format, Thrift's
//! binary and compact protocols (`formats.rs`) and Python dicts (`dict.rs`), and decode a batch
//! of messages straight into an Arrow record batch (`arrow.rs`), handed to pyarrow through the
//! Arrow C data interface. [`formats::Converter`] applies a compiled converter plan between
//! two message types, of one schema or of two (`.proto` to `.thrift`). Every decode goes through `optimus_core::engine` into an arena that
//! is reset per message (per block of rows in a batch); errors become `optimus.DecodeError` (with `.path` and `.offset`),
//! `optimus.EncodeError` or `optimus.SchemaError`, carrying the engine's text.

mod alloc;
mod arrow;
mod dict;
mod formats;
mod join;
mod pool;

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
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use formats::{Format, Options};

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
     or a value the target format cannot represent; from a Converter, a value that does not \
     convert, `.path` naming it (`Mixed.items[2].qty`), `.row` its message in a batch."
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

/// A serialized format (not "dict"), for `decode`'s input and `encode`'s output.
fn serialized(name: &str) -> PyResult<Format> {
    match Format::parse(name)? {
        Format::Dict => Err(PyValueError::new_err(
            "format \"dict\" is what decode gives and encode takes: name a serialized format \
             (protobuf, json, text, thrift-binary, thrift-compact)",
        )),
        f => Ok(f),
    }
}

/// The decode options every call uses: the engine's defaults (depth 100, memory budget).
pub(crate) fn decode_options() -> DecodeOptions {
    DecodeOptions::default()
}

/// A compiled set of protobuf message types (or Thrift structs), loaded at run time.
///
/// Build one with `Schema.from_proto(files, include=[...])`, `Schema.from_descriptor_set(data)`
/// or `Schema.from_source(text)` — or from Thrift IDL with `Schema.from_thrift(files)` or
/// `Schema.from_thrift_source(text)`; then name message types by their full name
/// (`"bench.Flat"`; a Thrift struct also by its bare name, `"Mixed"`). A Schema is immutable
/// and may be shared between threads.
#[pyclass(frozen, module = "optimus")]
pub struct Schema {
    pub(crate) set: Arc<SchemaSet>,
    /// Where the schema came from: what a pickled Schema carries to another process (a Spark
    /// executor, a Ray worker), where it is compiled again.
    origin: Origin,
}

/// What a Schema was compiled from.
enum Origin {
    /// The serialized `FileDescriptorSet`: what `descriptor_set()` returns.
    Descriptors(Arc<[u8]>),
    /// `.thrift` sources as (file name, text), which include each other by those names.
    ThriftSources(Vec<(String, String)>),
    /// `.thrift` files (absolute where they could be resolved) and include directories,
    /// read again when a pickled Schema is loaded.
    ThriftFiles(Vec<PathBuf>, Vec<PathBuf>),
}

fn schema_err(e: impl std::fmt::Display) -> PyErr {
    SchemaError::new_err(e.to_string())
}

impl Schema {
    /// Compiles `set` and keeps its serialized form.
    fn compile(set: &FileDescriptorSet) -> PyResult<Schema> {
        Ok(Schema {
            set: Arc::new(SchemaSet::from_descriptor_set(set).map_err(schema_err)?),
            origin: Origin::Descriptors(set.encode_to_vec().into()),
        })
    }

    /// The message type named `type_name`: its full name, or for a Thrift schema also the
    /// bare struct name (as `optimus convert --type`). KeyError otherwise.
    pub(crate) fn id(&self, type_name: &str) -> PyResult<MessageId> {
        formats::find_type(&self.set, type_name)
    }

    /// `decode_batch`'s and `decode_table`'s keyword options, checked.
    #[allow(clippy::too_many_arguments)]
    fn batch_options(
        &self,
        enums: &str,
        emit_defaults: bool,
        recursion_depth: i32,
        mode: &str,
        error_column: &str,
        threads: Option<usize>,
        time_unit: &str,
        format: &str,
    ) -> PyResult<arrow::BatchOptions> {
        Ok(arrow::BatchOptions::parse(
            enums,
            emit_defaults,
            recursion_depth,
            mode,
            error_column,
            threads,
            time_unit,
        )?
        .with_rows(arrow::row_format(format, &self.set)?))
    }

    fn is_thrift(&self) -> bool {
        self.set.thrift().is_some()
    }
}

/// Reads one message of `format` (bytes, or str/bytes for "json" and "text") into `arena`,
/// raising the engine's error as a Python exception.
fn read_message<'a>(
    py: Python<'_>,
    set: &'a SchemaSet,
    id: MessageId,
    format: Format,
    input: &'a [u8],
    arena: &'a Arena,
    opts: &Options,
) -> PyResult<optimus_core::Record<'a>> {
    formats::decode(set, id, format, input, arena, opts).map_err(|f| f.into_py(py, None))
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
            origin: Origin::Descriptors(data.into()),
        })
    }

    /// Loads `.thrift` files (Apache Thrift IDL, as its 0.17 compiler accepts it); an
    /// `include` is found beside the including file, then under each of `include_dirs`.
    /// Structs, unions and exceptions become message types named `program.Name` (the file
    /// `peers.thrift`'s `struct Mixed` is `peers.Mixed`, also reachable as `Mixed`). Raises
    /// SchemaError with the file and line.
    #[staticmethod]
    #[pyo3(signature = (files, include_dirs = Vec::new()))]
    fn from_thrift(files: Vec<PathBuf>, include_dirs: Vec<PathBuf>) -> PyResult<Schema> {
        let set = SchemaSet::from_thrift_files(&files, &include_dirs).map_err(schema_err)?;
        let abs = |p: &PathBuf| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        let files = files
            .iter()
            .map(|f| if f.is_file() { abs(f) } else { f.clone() })
            .collect();
        let include_dirs = include_dirs.iter().map(abs).collect();
        Ok(Schema {
            set: Arc::new(set),
            origin: Origin::ThriftFiles(files, include_dirs),
        })
    }

    /// Loads one `.thrift` source given as text, named `name` (its program name is the file
    /// name's stem: `schema.thrift` gives `schema.Name`). Raises SchemaError with the line.
    #[staticmethod]
    #[pyo3(signature = (text, name = "schema.thrift".to_string()))]
    fn from_thrift_source(text: String, name: String) -> PyResult<Schema> {
        let set = SchemaSet::from_thrift_sources(&[(name.as_str(), text.as_str())])
            .map_err(schema_err)?;
        Ok(Schema {
            set: Arc::new(set),
            origin: Origin::ThriftSources(vec![(name, text)]),
        })
    }

    /// Whether the schema was loaded from Thrift IDL (the "thrift-binary" and
    /// "thrift-compact" formats need one; "json" is then JSON for Thrift messages).
    #[getter]
    fn thrift(&self) -> bool {
        self.is_thrift()
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
    /// A Thrift schema has none: raises SchemaError.
    fn descriptor_set<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        match &self.origin {
            Origin::Descriptors(d) => Ok(PyBytes::new(py, d)),
            _ => Err(SchemaError::new_err(
                "a Thrift schema has no descriptor set (it pickles as its IDL)",
            )),
        }
    }

    /// Pickling: a Schema travels as its descriptor set (a Thrift schema as its source text,
    /// or its files' paths, read again) and is compiled again on load, so it can be captured
    /// by a function that Spark or Ray runs in another process.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let ty = py.get_type::<Schema>();
        Ok(match &slf.get().origin {
            Origin::Descriptors(d) => (
                ty.getattr("from_descriptor_set")?,
                PyTuple::new(py, [PyBytes::new(py, d)])?,
            ),
            Origin::ThriftSources(s) => (
                ty.getattr("from_thrift_source")?,
                (s[0].1.clone(), s[0].0.clone()).into_pyobject(py)?,
            ),
            Origin::ThriftFiles(f, i) => (
                ty.getattr("from_thrift")?,
                (f.clone(), i.clone()).into_pyobject(py)?,
            ),
        })
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
    /// `format`: what `data` is — "protobuf" (default), "json", "text" (str or bytes),
    /// "thrift-binary" or "thrift-compact" (a Thrift schema's).
    #[pyo3(signature = (type_name, data, *, enums_as_ints = false, emit_defaults = false, json_names = false, format = "protobuf"))]
    #[allow(clippy::too_many_arguments)]
    fn decode<'py>(
        &self,
        py: Python<'py>,
        type_name: String,
        data: &Bound<'py, PyAny>,
        enums_as_ints: bool,
        emit_defaults: bool,
        json_names: bool,
        format: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let id = self.id(&type_name)?;
        let format = serialized(format)?;
        formats::check_schema_format(&self.set, format)?;
        let input = formats::input_bytes(data, format)?;
        let arena = Arena::new();
        let rec = read_message(
            py,
            &self.set,
            id,
            format,
            &input,
            &arena,
            &Options::default(),
        )?;
        let opts = dict::DictOptions {
            enums_as_ints,
            emit_defaults,
            json_names,
        };
        dict::record_to_dict(py, rec, &opts)
    }

    /// Encodes a dict as protobuf bytes (deterministic: fields by number, maps by key), or in
    /// `format`: "json" or "text" (str), "thrift-binary" or "thrift-compact" (bytes; a Thrift
    /// schema's: fields by id, a missing `required` field raises EncodeError).
    #[pyo3(signature = (type_name, value, *, format = "protobuf"))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        type_name: String,
        value: &Bound<'py, PyDict>,
        format: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = self.id(&type_name)?;
        let format = serialized(format)?;
        formats::check_schema_format(&self.set, format)?;
        let arena = Arena::new();
        let rec = dict::dict_to_record(&self.set, id, value, &arena)?;
        formats::encode(rec, format, &Options::default())
            .map(|o| o.into_py(py))
            .map_err(|f| f.into_py(py, None))
    }

    /// Protobuf bytes to compact proto3 JSON text (for a Thrift schema: JSON for Thrift
    /// messages, which has no options).
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
        if self.is_thrift() {
            optimus_core::thrift::encode_json(rec, &mut out)
        } else {
            engine::encode_json(rec, &opts, &mut out)
        }
        .map_err(|e| to_py_err(py, &e, None))?;
        Ok(out)
    }

    /// Proto3 JSON text (for a Thrift schema: JSON for Thrift messages) to protobuf bytes.
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
        let rec = if self.is_thrift() {
            optimus_core::thrift::decode_json(&self.set, id, &text, &arena, &opts)
        } else {
            engine::decode_json(&self.set, id, &text, &arena, &opts)
        }
        .map_err(|e| to_py_err(py, &e, None))?;
        let mut out = Vec::new();
        engine::encode(rec, &mut out);
        Ok(PyBytes::new(py, &out))
    }

    /// Converts one message between formats: "protobuf" (bytes), "json" and "text" (str),
    /// "thrift-binary" and "thrift-compact" (bytes; a Thrift schema's) and "dict" — the
    /// names of `optimus convert --from/--to`. "json" is proto3 JSON, or JSON for Thrift
    /// messages for a Thrift schema; Thrift to Thrift transcodes without a record.
    /// `emit_defaults` and `proto_names` shape proto3 JSON output, `ignore_unknown` JSON
    /// input. Another schema, or field ops: `optimus.Converter`.
    #[pyo3(signature = (type_name, data, *, from_ = "protobuf", to = "json", emit_defaults = false,
                        proto_names = false, ignore_unknown = false))]
    #[allow(clippy::too_many_arguments)]
    fn convert<'py>(
        &self,
        py: Python<'py>,
        type_name: String,
        data: &Bound<'py, PyAny>,
        from_: &str,
        to: &str,
        emit_defaults: bool,
        proto_names: bool,
        ignore_unknown: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = self.id(&type_name)?;
        let (src, dst) = (Format::parse(from_)?, Format::parse(to)?);
        formats::check_schema_format(&self.set, src)?;
        formats::check_schema_format(&self.set, dst)?;
        let opts = Options {
            json: JsonOptions {
                emit_defaults,
                proto_names,
                ignore_unknown,
                ..JsonOptions::default()
            },
            ..Options::default()
        };
        let arena = Arena::new();
        if src != Format::Dict && dst != Format::Dict {
            let input = formats::input_bytes(data, src)?;
            return formats::convert_serialized(
                &self.set, id, None, &input, src, dst, &opts, &arena,
            )
            .map(|o| o.into_py(py))
            .map_err(|f| f.into_py(py, None));
        }
        let input;
        let rec = if src == Format::Dict {
            let d = data.downcast::<PyDict>().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "format \"dict\" reads a dict, not {}",
                    data.get_type()
                ))
            })?;
            dict::dict_to_record(&self.set, id, d, &arena)?
        } else {
            input = formats::input_bytes(data, src)?;
            read_message(py, &self.set, id, src, &input, &arena, &opts)?
        };
        if dst == Format::Dict {
            return Ok(dict::record_to_dict(py, rec, &dict::DictOptions::default())?.into_any());
        }
        formats::encode(rec, dst, &opts)
            .map(|o| o.into_py(py))
            .map_err(|f| f.into_py(py, None))
    }

    /// Decodes many messages (a list of bytes, a pyarrow binary array, or a varint-delimited
    /// buffer) into a pyarrow.RecordBatch, a column per field: structs, lists, maps,
    /// timestamp[ns, UTC], duration[ns] (`time_unit="us"`: microseconds); `enums`
    /// "dictionary", "string" or "int"; `emit_defaults`; `recursion_depth` (-1: recursive
    /// types raise); `mode` "failfast" (DecodeError with `.row`) or "permissive" (null row +
    /// `error_column`); `threads` (default: every core, for batches of at least 2048 rows a
    /// thread); `format` "protobuf", or for a Thrift schema "thrift-binary" / "thrift-compact".
    #[pyo3(signature = (type_name, messages, *, enums = "dictionary", emit_defaults = false,
                        recursion_depth = -1, mode = "failfast", error_column = "_error",
                        threads = None, time_unit = "ns", format = "protobuf"))]
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
        format: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let opts = self.batch_options(
            enums,
            emit_defaults,
            recursion_depth,
            mode,
            error_column,
            threads,
            time_unit,
            format,
        )?;
        arrow::decode_batch(py, &self.set, self.id(&type_name)?, messages, &opts)
    }

    /// Decodes many messages as `decode_batch` does, with the same options, into a
    /// pyarrow.Table whose chunks are the parts decoded on the threads, in row order: the
    /// parts are not copied into one batch, so a large batch gains more from a second core.
    #[pyo3(signature = (type_name, messages, *, enums = "dictionary", emit_defaults = false,
                        recursion_depth = -1, mode = "failfast", error_column = "_error",
                        threads = None, time_unit = "ns", format = "protobuf"))]
    #[allow(clippy::too_many_arguments)]
    fn decode_table<'py>(
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
        format: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let opts = self.batch_options(
            enums,
            emit_defaults,
            recursion_depth,
            mode,
            error_column,
            threads,
            time_unit,
            format,
        )?;
        arrow::decode_table(py, &self.set, self.id(&type_name)?, messages, &opts)
    }

    /// Encodes each row of a pyarrow.RecordBatch (columns named as fields, typed as
    /// `decode_batch` makes them) as protobuf bytes (or, with `format`, Thrift binary or
    /// compact); null is unset. The column named `error_column` is skipped.
    #[pyo3(signature = (type_name, batch, *, error_column = "_error", format = "protobuf"))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        type_name: String,
        batch: &Bound<'py, PyAny>,
        error_column: &str,
        format: &str,
    ) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        let id = self.id(&type_name)?;
        let rows = arrow::row_format(format, &self.set)?;
        arrow::encode_batch(py, &self.set, id, batch, error_column, rows)
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
    alloc::configure();
    let py = m.py();
    m.add_class::<Schema>()?;
    m.add_class::<formats::Converter>()?;
    m.add("OptimusError", py.get_type::<OptimusError>())?;
    m.add("DecodeError", py.get_type::<DecodeError>())?;
    m.add("EncodeError", py.get_type::<EncodeError>())?;
    m.add("SchemaError", py.get_type::<SchemaError>())?;
    Ok(())
}
