"""What the optimus package should produce, computed from Google protobuf's own parsing."""

from __future__ import annotations

import math

from google.protobuf.descriptor import FieldDescriptor as FD

WKT = "google.protobuf."
WRAPPERS = {
    WKT + n
    for n in (
        "DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value",
        "UInt32Value", "BoolValue", "StringValue", "BytesValue",
    )
}
MESSAGES = (FD.TYPE_MESSAGE, FD.TYPE_GROUP)


def is_map(f) -> bool:
    return (
        f.label == FD.LABEL_REPEATED
        and f.type == FD.TYPE_MESSAGE
        and f.message_type.GetOptions().map_entry
    )


def _present(msg, f) -> tuple[bool, bool]:
    """(set, implicit presence)."""
    try:
        return msg.HasField(f.name), False
    except ValueError:
        v = getattr(msg, f.name)
        default = f.default_value
        if isinstance(v, float):
            return (v != 0.0 or math.copysign(1, v) < 0 or math.isnan(v)), True
        return v != default, True


def _key(f) -> str:
    return f.full_name if f.is_extension else f.name


# ------------------------------------------------------------------ dicts


def to_dict(msg, enums_as_ints: bool = False) -> dict:
    """The dict optimus's Schema.decode gives: set fields by name, Python types."""
    out = {}
    for f, v in msg.ListFields():
        if is_map(f):
            vf = f.message_type.fields_by_name["value"]
            out[_key(f)] = {k: _dict_value(v[k], vf, enums_as_ints) for k in v}
        elif f.label == FD.LABEL_REPEATED:
            out[_key(f)] = [_dict_value(x, f, enums_as_ints) for x in v]
        else:
            out[_key(f)] = _dict_value(v, f, enums_as_ints)
    return out


def _dict_value(v, f, enums_as_ints):
    if f.type in MESSAGES:
        return to_dict(v, enums_as_ints)
    if f.type == FD.TYPE_ENUM and not enums_as_ints:
        ev = f.enum_type.values_by_number.get(v)
        return ev.name if ev is not None else v
    return v


# ------------------------------------------------------------------ Arrow rows


def to_row(msg, emit_defaults: bool = False, time_unit: str = "ns") -> dict:
    """The row optimus's decode_batch gives (enums="string", time_unit), as pyarrow's
    from_pylist takes it."""
    row = {}
    for f in msg.DESCRIPTOR.fields:
        if is_map(f):
            vf = f.message_type.fields_by_name["value"]
            m = getattr(msg, f.name)
            row[f.name] = [(k, _arrow_value(m[k], vf, emit_defaults, time_unit)) for k in m]
        elif f.label == FD.LABEL_REPEATED:
            row[f.name] = [_arrow_value(x, f, emit_defaults, time_unit) for x in getattr(msg, f.name)]
        else:
            present, implicit = _present(msg, f)
            if present or (implicit and emit_defaults):
                row[f.name] = _arrow_value(getattr(msg, f.name), f, emit_defaults, time_unit)
            else:
                row[f.name] = None
    return row


def _arrow_value(v, f, emit_defaults, time_unit="ns"):
    if f.type == FD.TYPE_ENUM:
        ev = f.enum_type.values_by_number.get(v)
        return ev.name if ev is not None else str(v)
    if f.type in MESSAGES:
        name = f.message_type.full_name
        if name in (WKT + "Timestamp", WKT + "Duration"):
            if time_unit == "us":
                # Nanoseconds below a microsecond dropped toward zero (Spark's rule).
                return v.seconds * 1_000_000 + int(v.nanos / 1000)
            ns = v.seconds * 1_000_000_000 + v.nanos
            return ns if -(2**63) <= ns < 2**63 else None  # past int64 nanoseconds: null
        if name in WRAPPERS:
            return v.value
        return to_row(v, emit_defaults, time_unit)
    return v


def normalize(x):
    """Rows compared as plain data: map entries sorted by key, NaN made comparable."""
    if isinstance(x, dict):
        return {k: normalize(v) for k, v in x.items()}
    if isinstance(x, list):
        items = [normalize(v) for v in x]
        if items and all(isinstance(i, tuple) and len(i) == 2 for i in items):
            items.sort(key=lambda kv: repr(kv[0]))
        return items
    if isinstance(x, tuple):
        return tuple(normalize(v) for v in x)
    if isinstance(x, float) and math.isnan(x):
        return "NaN"
    return x


def plain_rows(batch) -> list:
    """batch.to_pylist() with timestamp and duration columns as int64 nanoseconds."""
    import pyarrow as pa

    cols = []
    for field, col in zip(batch.schema, batch.columns):
        if pa.types.is_timestamp(field.type) or pa.types.is_duration(field.type):
            col = col.cast(pa.int64())
        cols.append(col)
    names = batch.schema.names
    return [dict(zip(names, vals)) for vals in zip(*(c.to_pylist() for c in cols))]
