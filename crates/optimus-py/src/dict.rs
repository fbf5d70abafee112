//! Records to Python dicts and back: proto3 JSON's value model with Python types.
//!
//! Set fields only (unless `emit_defaults`), under their declared names (or JSON names);
//! integers of every width as `int`, floats as `float`, strings as `str`, bytes as `bytes`,
//! enums by name (a number without a name stays an `int`) or by number, messages as dicts,
//! repeated fields as lists, maps as dicts (the last entry of a key wins).

use optimus_core::{Arena, FieldRef, Record};
use optimus_schema::{Cardinality, Field, Kind, MessageId, SchemaSet};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use pyo3::IntoPyObjectExt;

use crate::EncodeError;

/// How records are shown as dicts.
#[derive(Default, Clone, Copy)]
pub(crate) struct DictOptions {
    pub enums_as_ints: bool,
    pub emit_defaults: bool,
    pub json_names: bool,
}

pub(crate) fn record_to_dict<'py>(
    py: Python<'py>,
    rec: Record<'_>,
    opts: &DictOptions,
) -> PyResult<Bound<'py, PyDict>> {
    let schema = rec.schema();
    let ty = schema.message(rec.type_id());
    let dict = PyDict::new(py);
    for (index, field) in ty.fields.iter().enumerate() {
        let key = if opts.json_names {
            &field.json_name
        } else {
            &field.name
        };
        if !rec.has(index) {
            if opts.emit_defaults {
                match field.cardinality {
                    Cardinality::Repeated => dict.set_item(key, PyList::empty(py))?,
                    Cardinality::Map => dict.set_item(key, PyDict::new(py))?,
                    Cardinality::Singular if field.oneof.is_none() => {
                        dict.set_item(key, default_value(py, schema, field, opts)?)?
                    }
                    _ => {}
                }
            }
            continue;
        }
        match field.cardinality {
            Cardinality::Repeated => {
                let list = PyList::empty(py);
                for v in rec.elements(index) {
                    list.append(value_to_py(py, schema, field, v, opts)?)?;
                }
                dict.set_item(key, list)?;
            }
            Cardinality::Map => {
                let (kf, vf) = schema.map_entry_fields(field);
                let map = PyDict::new(py);
                for entry in rec.elements(index) {
                    let FieldRef::Message(entry) = entry else {
                        continue;
                    };
                    let k = match entry.get(0) {
                        Some(k) => value_to_py(py, schema, kf, k, opts)?,
                        None => default_value(py, schema, kf, opts)?,
                    };
                    let v = match entry.get(1) {
                        Some(v) => value_to_py(py, schema, vf, v, opts)?,
                        None if vf.kind.is_message() => PyDict::new(py).into_any().unbind(),
                        None => default_value(py, schema, vf, opts)?,
                    };
                    map.set_item(k, v)?;
                }
                dict.set_item(key, map)?;
            }
            _ => {
                if let Some(v) = rec.get(index) {
                    dict.set_item(key, value_to_py(py, schema, field, v, opts)?)?;
                }
            }
        }
    }
    Ok(dict)
}

fn enum_to_py(
    py: Python<'_>,
    schema: &SchemaSet,
    field: &Field,
    n: i32,
    opts: &DictOptions,
) -> PyResult<PyObject> {
    if !opts.enums_as_ints {
        if let Some(v) = field
            .enum_type
            .and_then(|e| schema.enum_type(e).value_by_number(n))
        {
            return v.name.as_str().into_py_any(py);
        }
    }
    n.into_py_any(py)
}

fn value_to_py(
    py: Python<'_>,
    schema: &SchemaSet,
    field: &Field,
    v: FieldRef<'_>,
    opts: &DictOptions,
) -> PyResult<PyObject> {
    match v {
        FieldRef::Bool(b) => b.into_py_any(py),
        FieldRef::I32(x) => x.into_py_any(py),
        FieldRef::I64(x) => x.into_py_any(py),
        FieldRef::U32(x) => x.into_py_any(py),
        FieldRef::U64(x) => x.into_py_any(py),
        FieldRef::F32(x) => f64::from(x).into_py_any(py),
        FieldRef::F64(x) => x.into_py_any(py),
        FieldRef::Enum(n) => enum_to_py(py, schema, field, n, opts),
        FieldRef::Str(s) => s.into_py_any(py),
        FieldRef::Bytes(b) => PyBytes::new(py, b).into_py_any(py),
        FieldRef::Message(m) => record_to_dict(py, m, opts)?.into_py_any(py),
    }
}

/// The value an unset field without presence reads as.
fn default_value(
    py: Python<'_>,
    schema: &SchemaSet,
    field: &Field,
    opts: &DictOptions,
) -> PyResult<PyObject> {
    match field.kind {
        Kind::Bool => false.into_py_any(py),
        Kind::Float | Kind::Double => 0.0f64.into_py_any(py),
        Kind::String => "".into_py_any(py),
        Kind::Bytes => PyBytes::new(py, b"").into_py_any(py),
        Kind::Enum => {
            let n = field
                .enum_type
                .map_or(0, |e| schema.enum_type(e).default_number());
            enum_to_py(py, schema, field, n, opts)
        }
        Kind::Message | Kind::Group => py.None().into_py_any(py),
        _ => 0i64.into_py_any(py),
    }
}

fn encode_err(ty: &str, field: &Field, why: impl std::fmt::Display) -> PyErr {
    EncodeError::new_err(format!("{ty}.{}: {why}", field.name))
}

/// Builds a record of type `id` in `arena` from a dict keyed by field names (declared or JSON).
pub(crate) fn dict_to_record<'a>(
    schema: &'a SchemaSet,
    id: MessageId,
    value: &Bound<'_, PyDict>,
    arena: &'a Arena,
) -> PyResult<Record<'a>> {
    let rec = Record::new_in(schema, id, arena);
    fill(rec, value, arena)?;
    Ok(rec)
}

fn fill<'a>(rec: Record<'a>, value: &Bound<'_, PyDict>, arena: &'a Arena) -> PyResult<()> {
    let schema = rec.schema();
    let ty = schema.message(rec.type_id());
    let eng = |e: optimus_core::Error| EncodeError::new_err(e.to_string());
    for (k, v) in value.iter() {
        let name: String = k
            .extract()
            .map_err(|_| PyTypeError::new_err("dict keys must be field names (str)"))?;
        let index = rec.index_of(&name).map_err(eng)?;
        let field = &ty.fields[index];
        if v.is_none() {
            continue;
        }
        match field.cardinality {
            Cardinality::Map => {
                let (kf, vf) = schema.map_entry_fields(field);
                let map = v
                    .downcast::<PyDict>()
                    .map_err(|_| encode_err(&ty.full_name, field, "a map takes a dict"))?;
                for (mk, mv) in map.iter() {
                    let key = scalar(schema, &ty.full_name, kf, &mk, arena)?;
                    let val = if vf.kind.is_message() {
                        let sub_id = vf.message.expect("message field has a type");
                        let sub = mv.downcast::<PyDict>().map_err(|_| {
                            encode_err(&ty.full_name, field, "a message value takes a dict")
                        })?;
                        FieldRef::Message(dict_to_record(schema, sub_id, sub, arena)?)
                    } else {
                        scalar(schema, &ty.full_name, vf, &mv, arena)?
                    };
                    rec.insert(arena, index, key, val).map_err(eng)?;
                }
            }
            Cardinality::Repeated => {
                if v.is_instance_of::<PyString>()
                    || v.is_instance_of::<PyBytes>()
                    || v.is_instance_of::<PyDict>()
                {
                    return Err(encode_err(
                        &ty.full_name,
                        field,
                        "a repeated field takes a list",
                    ));
                }
                for item in v.try_iter().map_err(|_| {
                    encode_err(&ty.full_name, field, "a repeated field takes a list")
                })? {
                    let item = item?;
                    if field.kind.is_message() {
                        let sub = item.downcast::<PyDict>().map_err(|_| {
                            encode_err(&ty.full_name, field, "a message takes a dict")
                        })?;
                        let r = rec.push_message(arena, index).map_err(eng)?;
                        fill(r, sub, arena)?;
                    } else {
                        let x = scalar(schema, &ty.full_name, field, &item, arena)?;
                        rec.push(arena, index, x).map_err(eng)?;
                    }
                }
            }
            _ => {
                if field.kind.is_message() {
                    let sub = v
                        .downcast::<PyDict>()
                        .map_err(|_| encode_err(&ty.full_name, field, "a message takes a dict"))?;
                    let r = rec.message_mut(arena, index).map_err(eng)?;
                    fill(r, sub, arena)?;
                } else {
                    let x = scalar(schema, &ty.full_name, field, &v, arena)?;
                    rec.set(index, x).map_err(eng)?;
                }
            }
        }
    }
    Ok(())
}

/// One scalar value of `field`'s kind from a Python object.
fn scalar<'a>(
    schema: &SchemaSet,
    ty: &str,
    field: &Field,
    v: &Bound<'_, PyAny>,
    arena: &'a Arena,
) -> PyResult<FieldRef<'a>> {
    let bad = |what: &str| encode_err(ty, field, format!("expected {what}, got {}", type_name(v)));
    let int = |what: &str| -> PyResult<()> {
        if v.is_instance_of::<pyo3::types::PyBool>() || v.is_instance_of::<pyo3::types::PyFloat>() {
            Err(bad(what))
        } else {
            Ok(())
        }
    };
    Ok(match field.kind {
        Kind::Bool => FieldRef::Bool(
            v.downcast::<pyo3::types::PyBool>()
                .map_err(|_| bad("bool"))?
                .is_true(),
        ),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            int("int")?;
            FieldRef::I32(v.extract().map_err(|_| bad("int in int32 range"))?)
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            int("int")?;
            FieldRef::I64(v.extract().map_err(|_| bad("int in int64 range"))?)
        }
        Kind::Uint32 | Kind::Fixed32 => {
            int("int")?;
            FieldRef::U32(v.extract().map_err(|_| bad("int in uint32 range"))?)
        }
        Kind::Uint64 | Kind::Fixed64 => {
            int("int")?;
            FieldRef::U64(v.extract().map_err(|_| bad("int in uint64 range"))?)
        }
        Kind::Float => FieldRef::F32(v.extract::<f64>().map_err(|_| bad("float"))? as f32),
        Kind::Double => FieldRef::F64(v.extract().map_err(|_| bad("float"))?),
        Kind::String => {
            let s = v.downcast::<PyString>().map_err(|_| bad("str"))?;
            FieldRef::Str(arena.alloc_str(&s.to_cow()?))
        }
        Kind::Bytes => {
            let b = v.downcast::<PyBytes>().map_err(|_| bad("bytes"))?;
            FieldRef::Bytes(arena.alloc_bytes(b.as_bytes()))
        }
        Kind::Enum => {
            if let Ok(s) = v.downcast::<PyString>() {
                let name = s.to_cow()?;
                let e = field.enum_type.map(|e| schema.enum_type(e));
                match e.and_then(|e| e.value_by_name(&name)) {
                    Some(ev) => FieldRef::Enum(ev.number),
                    None => {
                        return Err(encode_err(
                            ty,
                            field,
                            format!("no enum value named {name:?}"),
                        ))
                    }
                }
            } else {
                int("enum name or number")?;
                FieldRef::Enum(v.extract().map_err(|_| bad("enum name or number"))?)
            }
        }
        Kind::Message | Kind::Group => return Err(bad("dict")),
    })
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}
