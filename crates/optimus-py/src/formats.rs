//! The serialized formats of one message — protobuf, JSON, the protobuf text format, Thrift's
//! binary and compact protocols — and [`Converter`], a compiled converter between two message
//! types (of one schema or of two, `.proto` and `.thrift`) with a program of field ops.
//!
//! Every format reads into an arena record and writes from one, so any format converts to
//! any other for a schema that can hold it (the Thrift formats need a Thrift schema); between
//! the two Thrift protocols `thrift::transcode` goes without a record, as `optimus convert`
//! does. "json" is proto3 JSON for a `.proto` schema and JSON for Thrift messages
//! (docs/thrift.md) for a Thrift schema, again as the CLI names it.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use optimus_core::binary::DecodeOptions;
use optimus_core::convert::{ConvertError, Plan, Program};
use optimus_core::json::JsonOptions;
use optimus_core::text::TextOptions;
use optimus_core::thrift::Protocol;
use optimus_core::{engine, text, thrift, Arena, Error, Record};
use optimus_schema::{MessageId, SchemaSet};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::{dict, DecodeError, EncodeError, Schema, SchemaError};

/// A format of one message, named as `optimus convert --from/--to` names them (plus "dict").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Protobuf,
    Json,
    Text,
    ThriftBinary,
    ThriftCompact,
    Dict,
}

pub(crate) const FORMAT_NAMES: &str = "protobuf, json, text, thrift-binary, thrift-compact, dict";

impl Format {
    pub(crate) fn parse(name: &str) -> PyResult<Format> {
        Ok(match name {
            "protobuf" | "binary" | "proto" => Format::Protobuf,
            "json" => Format::Json,
            "text" => Format::Text,
            "thrift-binary" | "thrift_binary" => Format::ThriftBinary,
            "thrift-compact" | "thrift_compact" => Format::ThriftCompact,
            "dict" => Format::Dict,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown format {other:?} (formats: {FORMAT_NAMES})"
                )))
            }
        })
    }

    /// Parses a format that a batch (serialized messages only) takes.
    fn parse_serialized(name: &str) -> PyResult<Format> {
        let f = Format::parse(name)?;
        if f == Format::Dict {
            return Err(PyValueError::new_err(
                "convert_batch converts serialized messages: formats protobuf, json, text, \
                 thrift-binary, thrift-compact (convert() takes and gives dicts)",
            ));
        }
        Ok(f)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Protobuf => "protobuf",
            Format::Json => "json",
            Format::Text => "text",
            Format::ThriftBinary => "thrift-binary",
            Format::ThriftCompact => "thrift-compact",
            Format::Dict => "dict",
        }
    }

    pub(crate) fn thrift(self) -> Option<Protocol> {
        match self {
            Format::ThriftBinary => Some(Protocol::Binary),
            Format::ThriftCompact => Some(Protocol::Compact),
            _ => None,
        }
    }

    /// Whether the format is text (a Python `str`) rather than bytes.
    pub(crate) fn is_text(self) -> bool {
        matches!(self, Format::Json | Format::Text)
    }

    /// Refuses a Thrift format for a schema that is not Thrift's.
    pub(crate) fn check(self, schema: &SchemaSet, side: &str) -> PyResult<()> {
        if self.thrift().is_some() && schema.thrift().is_none() {
            return Err(PyValueError::new_err(format!(
                "{side} format {:?} is Thrift's: it needs a Thrift schema (Schema.from_thrift)",
                self.name()
            )));
        }
        Ok(())
    }
}

/// The options of reading and writing the serialized formats.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    pub decode: DecodeOptions,
    pub json: JsonOptions,
    pub text: TextOptions,
}

/// Why one message did not convert (turned into a Python exception with the GIL held).
pub(crate) enum Fail {
    Engine(Error),
    Convert(ConvertError),
    /// JSON or text input that is not UTF-8: the root type and the offset of the bad byte.
    Utf8(String, usize),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Engine(e)
    }
}

impl From<ConvertError> for Fail {
    fn from(e: ConvertError) -> Self {
        Fail::Convert(e)
    }
}

impl Fail {
    pub(crate) fn into_py(self, py: Python<'_>, row: Option<usize>) -> PyErr {
        let prefix = |text: String| match row {
            Some(r) => format!("row {r}: {text}"),
            None => text,
        };
        match self {
            Fail::Engine(e) => {
                let err = crate::to_py_err(py, &e, row);
                if e.as_decode().is_none() {
                    if let Some(r) = row {
                        return with_attrs(
                            py,
                            EncodeError::new_err(prefix(e.to_string())),
                            None,
                            None,
                            Some(r),
                        );
                    }
                }
                err
            }
            Fail::Convert(ConvertError::Value { path, why }) => {
                let text = prefix(format!("{path}: {why}"));
                with_attrs(py, EncodeError::new_err(text), Some(path), None, row)
            }
            Fail::Convert(e) => convert_schema_err(py, e),
            Fail::Utf8(root, offset) => {
                let text = prefix(format!("{root} at byte {offset}: input is not UTF-8"));
                with_attrs(
                    py,
                    DecodeError::new_err(text),
                    Some(root),
                    Some(offset),
                    row,
                )
            }
        }
    }
}

fn with_attrs(
    py: Python<'_>,
    err: PyErr,
    path: Option<String>,
    offset: Option<usize>,
    row: Option<usize>,
) -> PyErr {
    let value = err.value(py);
    if let Some(p) = path {
        let _ = value.setattr("path", p);
    }
    if let Some(o) = offset {
        let _ = value.setattr("offset", o);
    }
    let _ = value.setattr("row", row);
    err
}

/// A converter program or plan that does not compile: SchemaError (with `.path` for a field).
fn convert_schema_err(py: Python<'_>, e: ConvertError) -> PyErr {
    let path = match &e {
        ConvertError::Compile { path, .. } => Some(path.clone()),
        _ => None,
    };
    with_attrs(py, SchemaError::new_err(e.to_string()), path, None, None)
}

/// The input of one message: bytes for the binary formats, UTF-8 text for JSON and text (a
/// `str`, or bytes checked to be UTF-8).
pub(crate) fn input_bytes<'a>(
    data: &'a Bound<'_, PyAny>,
    format: Format,
) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = data.downcast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(s) = data.downcast::<PyString>() {
        if format.is_text() {
            return Ok(Cow::Owned(s.to_cow()?.into_owned().into_bytes()));
        }
        return Err(PyTypeError::new_err(format!(
            "format {:?} reads bytes, not str",
            format.name()
        )));
    }
    if let Ok(v) = data.extract::<Vec<u8>>() {
        if !data.is_instance_of::<PyList>() {
            return Ok(Cow::Owned(v));
        }
    }
    Err(PyTypeError::new_err(format!(
        "format {:?} reads {}, not {}",
        format.name(),
        if format.is_text() {
            "str or bytes"
        } else {
            "bytes"
        },
        data.get_type().name()?
    )))
}

/// Decodes one message of `format` (not "dict") into `arena`.
pub(crate) fn decode<'a>(
    schema: &'a SchemaSet,
    id: MessageId,
    format: Format,
    input: &'a [u8],
    arena: &'a Arena,
    opts: &Options,
) -> Result<Record<'a>, Fail> {
    let as_text = || {
        std::str::from_utf8(input)
            .map_err(|e| Fail::Utf8(schema.message(id).full_name.clone(), e.valid_up_to()))
    };
    Ok(match format {
        Format::Protobuf => engine::decode(schema, id, input, arena, &opts.decode)?,
        Format::Json if schema.thrift().is_some() => {
            thrift::decode_json(schema, id, as_text()?, arena, &opts.json)?
        }
        Format::Json => engine::decode_json(schema, id, as_text()?, arena, &opts.json)?,
        Format::Text => text::decode(schema, id, as_text()?, arena, &opts.text)?,
        Format::ThriftBinary | Format::ThriftCompact => {
            let p = format.thrift().expect("a Thrift format");
            thrift::decode(schema, id, input, arena, p, &opts.decode)?
        }
        Format::Dict => unreachable!("dicts are read with the GIL"),
    })
}

/// One message written: bytes, or text for JSON and the text format.
pub(crate) enum Output {
    Bytes(Vec<u8>),
    Text(String),
}

impl Output {
    pub(crate) fn into_py(self, py: Python<'_>) -> Bound<'_, PyAny> {
        match self {
            Output::Bytes(b) => PyBytes::new(py, &b).into_any(),
            Output::Text(t) => PyString::new(py, &t).into_any(),
        }
    }
}

/// Writes `rec` in `format` (not "dict").
pub(crate) fn encode(rec: Record<'_>, format: Format, opts: &Options) -> Result<Output, Fail> {
    Ok(match format {
        Format::Protobuf => {
            let mut out = Vec::new();
            engine::encode(rec, &mut out);
            Output::Bytes(out)
        }
        Format::ThriftBinary | Format::ThriftCompact => {
            let mut out = Vec::new();
            thrift::encode(rec, format.thrift().expect("a Thrift format"), &mut out)?;
            Output::Bytes(out)
        }
        Format::Json if rec.schema().thrift().is_some() => {
            let mut out = String::new();
            thrift::encode_json(rec, &mut out)?;
            Output::Text(out)
        }
        Format::Json => {
            let mut out = String::new();
            engine::encode_json(rec, &opts.json, &mut out)?;
            Output::Text(out)
        }
        Format::Text => {
            let mut out = String::new();
            text::encode(rec, &opts.text, &mut out)?;
            Output::Text(out)
        }
        Format::Dict => unreachable!("dicts are written with the GIL"),
    })
}

/// Converts one serialized message of `schema`'s type `id` from one format to another,
/// through `plan` when given (which then decides the output's schema and type); Thrift to
/// Thrift without a plan goes straight through `thrift::transcode`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn convert_serialized(
    schema: &SchemaSet,
    id: MessageId,
    plan: Option<&Plan<'_>>,
    input: &[u8],
    from: Format,
    to: Format,
    opts: &Options,
    arena: &Arena,
) -> Result<Output, Fail> {
    if let (None, Some(f), Some(t)) = (plan, from.thrift(), to.thrift()) {
        let mut out = Vec::new();
        thrift::transcode(schema, id, input, f, t, &opts.decode, &mut out)?;
        return Ok(Output::Bytes(out));
    }
    let rec = decode(schema, id, from, input, arena, opts)?;
    let rec = match plan {
        Some(p) => p.apply(rec, arena)?,
        None => rec,
    };
    encode(rec, to, opts)
}

/// The message type `name` of `schema`: for a Thrift schema the bare struct name or
/// `program.Name` (as the CLI's `--type`), else the full name.
pub(crate) fn find_type(schema: &SchemaSet, name: &str) -> PyResult<MessageId> {
    let found = if schema.thrift().is_some() {
        schema.thrift_struct_by_name(name)
    } else {
        schema.message_by_name(name)
    };
    found.ok_or_else(|| {
        let near: Vec<&str> = schema
            .messages()
            .filter(|(_, m)| m.name() == name || m.full_name.ends_with(&format!(".{name}")))
            .map(|(_, m)| m.full_name.as_str())
            .collect();
        if near.is_empty() {
            PyKeyError::new_err(format!("no message type {name:?} in the schema"))
        } else {
            PyKeyError::new_err(format!(
                "no message type {name:?} in the schema (did you mean {}?)",
                near.join(" or ")
            ))
        }
    })
}

/// A map or transform argument: TOML text, or the path of a TOML file (an `os.PathLike`, or
/// a `str` with no `=` and no line break). Returns (file name for errors, text).
fn program_text(arg: &Bound<'_, PyAny>, what: &str) -> PyResult<(String, String)> {
    let py = arg.py();
    let fspath = py.import("os")?.getattr("fspath")?;
    if !arg.is_instance_of::<PyString>() {
        let path: PathBuf = fspath.call1((arg,))?.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "{what}: TOML text or a path, not {}",
                arg.get_type()
            ))
        })?;
        let text = std::fs::read_to_string(&path).map_err(PyErr::from)?;
        return Ok((path.display().to_string(), text));
    }
    let s: String = arg.extract()?;
    if s.contains('=') || s.contains('\n') || s.trim().is_empty() {
        return Ok((what.to_string(), s));
    }
    let text = std::fs::read_to_string(&s).map_err(PyErr::from)?;
    Ok((s, text))
}

/// A compiled converter from one message type to another (of the same schema or another:
/// `.proto` to `.thrift` and back), through a program of field ops (`map`: field names across
/// schemas; `transform`: rename, drop, redact, hash, scale, enum, default; docs/convert.md).
///
/// The plan is compiled once, in the constructor (every compile error is raised there), and
/// applied per message.
#[pyclass(frozen, module = "optimus")]
pub struct Converter {
    /// Borrows `src_set` and `dst_set` (declared first, so dropped before them): the Arcs
    /// below keep the schemas alive, and never move, as long as the plan exists. None: the
    /// identity (same type, no program), where Thrift to Thrift transcodes directly.
    plan: Option<Plan<'static>>,
    src_set: Arc<SchemaSet>,
    dst_set: Arc<SchemaSet>,
    src_id: MessageId,
    src_schema: Py<Schema>,
    dst_schema: Py<Schema>,
    src_type: String,
    dst_type: String,
    /// The program's texts (name, TOML), for pickling and repr.
    map: Option<(String, String)>,
    transform: Option<(String, String)>,
    same: bool,
}

impl Converter {
    fn default_format(set: &SchemaSet) -> Format {
        if set.thrift().is_some() {
            Format::ThriftBinary
        } else {
            Format::Protobuf
        }
    }

    fn formats(&self, from: Option<&str>, to: Option<&str>) -> PyResult<(Format, Format)> {
        let from = match from {
            Some(f) => Format::parse(f)?,
            None => Converter::default_format(&self.src_set),
        };
        let to = match to {
            Some(f) => Format::parse(f)?,
            None => Converter::default_format(&self.dst_set),
        };
        from.check(&self.src_set, "the input's")?;
        to.check(&self.dst_set, "the output's")?;
        Ok((from, to))
    }

    fn opts(emit_defaults: bool, proto_names: bool, ignore_unknown: bool) -> Options {
        Options {
            json: JsonOptions {
                emit_defaults,
                proto_names,
                ignore_unknown,
                ..JsonOptions::default()
            },
            ..Options::default()
        }
    }
}

#[pymethods]
impl Converter {
    /// Compiles a converter from `src_schema`'s `src_type` to `dst_schema`'s `dst_type`
    /// (default: the same schema; the type of the same bare name), with `map` (TOML
    /// `[fields]` table of source path = target path) and `transform` (TOML converter ops),
    /// each as TOML text or a path. Raises SchemaError when the program does not compile
    /// (`.path` names the source field), KeyError for an unknown type.
    #[new]
    #[pyo3(signature = (src_schema, src_type, dst_schema = None, dst_type = None, map = None, transform = None))]
    fn new(
        py: Python<'_>,
        src_schema: Py<Schema>,
        src_type: String,
        dst_schema: Option<Py<Schema>>,
        dst_type: Option<String>,
        map: Option<&Bound<'_, PyAny>>,
        transform: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Converter> {
        let src_set = src_schema.get().set.clone();
        let src_id = find_type(&src_set, &src_type)?;
        let other = dst_schema.is_some();
        let dst_schema = dst_schema.unwrap_or_else(|| src_schema.clone_ref(py));
        let dst_set = dst_schema.get().set.clone();
        let dst_id = match &dst_type {
            Some(t) => find_type(&dst_set, t)?,
            None => {
                let name = src_set.message(src_id).name().to_string();
                match find_type(&dst_set, &name) {
                    Ok(id) => id,
                    Err(e) => {
                        // A `.proto` target named by its bare name: the one type of that name.
                        let mut it = dst_set
                            .messages()
                            .filter(|(_, m)| m.name() == name && !m.is_map_entry);
                        match (it.next(), it.next()) {
                            (Some((id, _)), None) => id,
                            _ => return Err(e),
                        }
                    }
                }
            }
        };
        if !other && map.is_some() {
            return Err(PyValueError::new_err(
                "map renames fields to another schema's: give dst_schema (use transform's \
                 rename within one schema)",
            ));
        }
        let map = map.map(|m| program_text(m, "map")).transpose()?;
        let transform = transform
            .map(|t| program_text(t, "transform"))
            .transpose()?;
        let program = |(file, text): &(String, String), is_map: bool| {
            if is_map {
                Program::from_map_toml(file, text)
            } else {
                Program::from_transform_toml(file, text)
            }
        };
        let m = map.as_ref().map(|m| program(m, true)).transpose();
        let t = transform.as_ref().map(|t| program(t, false)).transpose();
        let (m, t) = match (m, t) {
            (Ok(m), Ok(t)) => (m, t),
            (Err(e), _) | (_, Err(e)) => return Err(convert_schema_err(py, e)),
        };
        let program = match (m, t) {
            (Some(m), Some(t)) => Some(m.merge(t).map_err(|e| convert_schema_err(py, e))?),
            (m, t) => m.or(t),
        };
        let same = Arc::ptr_eq(&src_set, &dst_set) && src_id == dst_id;
        let plan = if same && program.is_none() {
            None
        } else {
            // SAFETY: the references point into the Arcs stored beside the plan in the same
            // struct, which are never replaced and outlive it (the plan is dropped first, as
            // the first field); a SchemaSet is immutable behind its Arc.
            let src_ref: &'static SchemaSet = unsafe { &*Arc::as_ptr(&src_set) };
            let dst_ref: &'static SchemaSet = unsafe { &*Arc::as_ptr(&dst_set) };
            let program = program.unwrap_or_default();
            Some(
                Plan::compile(src_ref, src_id, dst_ref, dst_id, &program)
                    .map_err(|e| convert_schema_err(py, e))?,
            )
        };
        let src_name = src_set.message(src_id).full_name.clone();
        let dst_name = dst_set.message(dst_id).full_name.clone();
        Ok(Converter {
            plan,
            src_set,
            dst_set,
            src_id,
            src_schema,
            dst_schema,
            src_type: src_name,
            dst_type: dst_name,
            map,
            transform,
            same,
        })
    }

    /// The source message type's full name.
    #[getter]
    fn src_type(&self) -> &str {
        &self.src_type
    }

    /// The target message type's full name.
    #[getter]
    fn dst_type(&self) -> &str {
        &self.dst_type
    }

    /// The source schema.
    #[getter]
    fn src_schema(&self, py: Python<'_>) -> Py<Schema> {
        self.src_schema.clone_ref(py)
    }

    /// The target schema.
    #[getter]
    fn dst_schema(&self, py: Python<'_>) -> Py<Schema> {
        self.dst_schema.clone_ref(py)
    }

    /// Converts one message: `data` in `from_format` (bytes; str or bytes for "json" and
    /// "text"; a dict for "dict") of the source type, returned in `to_format` as the target
    /// type. Formats: "protobuf", "json", "text", "thrift-binary", "thrift-compact", "dict";
    /// the default is each side's schema's own ("thrift-binary" for a Thrift schema, else
    /// "protobuf"). Raises DecodeError (`.path`, `.offset`) for bad input, EncodeError with
    /// `.path` naming the value (`Mixed.items[2].qty`) for a value that does not convert.
    #[pyo3(signature = (data, from_format = None, to_format = None, *, emit_defaults = false,
                        proto_names = false, ignore_unknown = false))]
    #[allow(clippy::too_many_arguments)]
    fn convert<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        from_format: Option<&str>,
        to_format: Option<&str>,
        emit_defaults: bool,
        proto_names: bool,
        ignore_unknown: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (from, to) = self.formats(from_format, to_format)?;
        let opts = Converter::opts(emit_defaults, proto_names, ignore_unknown);
        let arena = Arena::new();
        if from != Format::Dict && to != Format::Dict {
            let input = input_bytes(data, from)?;
            let plan = self.plan.as_ref();
            return convert_serialized(
                &self.src_set,
                self.src_id,
                plan,
                &input,
                from,
                to,
                &opts,
                &arena,
            )
            .map(|o| o.into_py(py))
            .map_err(|f| f.into_py(py, None));
        }
        let input;
        let rec = if from == Format::Dict {
            let d = data.downcast::<PyDict>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "format \"dict\" reads a dict, not {}",
                    data.get_type()
                ))
            })?;
            dict::dict_to_record(&self.src_set, self.src_id, d, &arena)?
        } else {
            input = input_bytes(data, from)?;
            decode(&self.src_set, self.src_id, from, &input, &arena, &opts)
                .map_err(|f| f.into_py(py, None))?
        };
        let rec = match &self.plan {
            Some(p) => p
                .apply(rec, &arena)
                .map_err(|e| Fail::from(e).into_py(py, None))?,
            None => rec,
        };
        if to == Format::Dict {
            return Ok(dict::record_to_dict(py, rec, &dict::DictOptions::default())?.into_any());
        }
        encode(rec, to, &opts)
            .map(|o| o.into_py(py))
            .map_err(|f| f.into_py(py, None))
    }

    /// Converts many serialized messages (a list of bytes, or str for "json"/"text") as
    /// `convert` does one, returning a list; the GIL is released while they convert. The
    /// first bad message raises, its index as the error's `.row`.
    #[pyo3(signature = (messages, from_format = None, to_format = None, *, emit_defaults = false,
                        proto_names = false, ignore_unknown = false))]
    #[allow(clippy::too_many_arguments)]
    fn convert_batch<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
        from_format: Option<&str>,
        to_format: Option<&str>,
        emit_defaults: bool,
        proto_names: bool,
        ignore_unknown: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let from = Format::parse_serialized(
            from_format.unwrap_or(Converter::default_format(&self.src_set).name()),
        )?;
        let to = Format::parse_serialized(
            to_format.unwrap_or(Converter::default_format(&self.dst_set).name()),
        )?;
        from.check(&self.src_set, "the input's")?;
        to.check(&self.dst_set, "the output's")?;
        let opts = Converter::opts(emit_defaults, proto_names, ignore_unknown);
        let items: Vec<Bound<'py, PyAny>> = messages.try_iter()?.collect::<PyResult<_>>()?;
        let inputs: Vec<Cow<'_, [u8]>> = items
            .iter()
            .map(|m| input_bytes(m, from))
            .collect::<PyResult<_>>()?;
        let result = py.allow_threads(|| {
            let mut arena = Arena::new();
            let mut outs = Vec::with_capacity(inputs.len());
            for (row, input) in inputs.iter().enumerate() {
                arena.reset();
                let plan = self.plan.as_ref();
                match convert_serialized(
                    &self.src_set,
                    self.src_id,
                    plan,
                    input,
                    from,
                    to,
                    &opts,
                    &arena,
                ) {
                    Ok(o) => outs.push(o),
                    Err(f) => return Err((row, f)),
                }
            }
            Ok(outs)
        });
        match result {
            Ok(outs) => PyList::new(py, outs.into_iter().map(|o| o.into_py(py))),
            Err((row, f)) => Err(f.into_py(py, Some(row))),
        }
    }

    /// Pickling: the schemas (themselves pickled) and the program's TOML texts.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let c = slf.get();
        let text = |p: &Option<(String, String)>| p.as_ref().map(|(_, t)| t.clone());
        let args = PyTuple::new(
            py,
            [
                c.src_schema.clone_ref(py).into_any().into_bound(py),
                PyString::new(py, &c.src_type).into_any(),
                c.dst_schema.clone_ref(py).into_any().into_bound(py),
                PyString::new(py, &c.dst_type).into_any(),
                text(&c.map).into_pyobject(py)?.into_any(),
                text(&c.transform).into_pyobject(py)?.into_any(),
            ],
        )?;
        Ok((py.get_type::<Converter>().into_any(), args))
    }

    fn __repr__(&self) -> String {
        let mut s = format!("<optimus.Converter {} -> {}", self.src_type, self.dst_type);
        if let Some((f, _)) = &self.map {
            s.push_str(&format!(" map={f}"));
        }
        if let Some((f, _)) = &self.transform {
            s.push_str(&format!(" transform={f}"));
        }
        if self.same && self.plan.is_none() {
            s.push_str(" (identity)");
        }
        s.push('>');
        s
    }
}

/// Whether `format` may be used with the schema, for Schema's methods.
pub(crate) fn check_schema_format(set: &SchemaSet, f: Format) -> PyResult<()> {
    f.check(set, "the")
}
