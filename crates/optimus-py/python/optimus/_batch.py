"""What the Spark and Ray integrations share: Spark's ``from_protobuf`` options and the
decoded struct column.

Both integrations take the option map a Spark user already writes for
``pyspark.sql.protobuf.functions.from_protobuf`` (string keys, string or plain values) and turn
it into :meth:`optimus.Schema.decode_batch` keywords. Options the engine does not have are
refused by name rather than ignored, so a job never silently decodes differently from what its
options say. :func:`decode_column` then turns one binary column into one struct column (null
where the input is null or, in permissive mode, bad) plus the error column.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Tuple, Union

import pyarrow as pa
import pyarrow.compute as pc

from ._optimus import DecodeError, Schema

SchemaLike = Union[Schema, bytes, bytearray, str, "os.PathLike[str]"]

#: The options understood, with Spark's meaning (docs/python.md, "PySpark and Ray").
KNOWN_OPTIONS = (
    "mode",
    "recursive.fields.max.depth",
    "emit.default.values",
    "enums.as.ints",
    "upcast.unsigned.ints",
)


def load_schema(schema: SchemaLike) -> Schema:
    """A Schema from a Schema, descriptor-set bytes (Spark's ``binaryDescriptorSet``) or the
    path of a descriptor-set file (Spark's ``descFilePath``, ``protoc -o FILE
    --include_imports``)."""
    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, (bytes, bytearray)):
        return Schema.from_descriptor_set(bytes(schema))
    if isinstance(schema, (str, os.PathLike)):
        with open(schema, "rb") as f:
            return Schema.from_descriptor_set(f.read())
    raise TypeError(
        "schema must be an optimus.Schema, descriptor-set bytes or a descriptor-set file path, "
        f"not {type(schema).__name__}"
    )


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise ValueError(f"option {name!r} must be true or false, not {value!r}")


def decode_kwargs(
    options: Optional[Mapping[str, Any]], error_column: str, enums: str = "string"
) -> dict:
    """``decode_batch`` keywords for Spark-style ``options``.

    - ``mode``: ``FAILFAST`` (default; a bad record raises, naming its row) or ``PERMISSIVE``
      (a bad record becomes a null struct and its error text goes to ``error_column``).
    - ``recursive.fields.max.depth``: -1 (default) refuses recursive types; ``n`` >= 1 lets a
      recursive type occur ``n`` times on a path (Spark's ``Person {name, friend}`` with 2:
      ``struct<name, friend: struct<name>>``), the deeper fields left out; 0 is 1.
    - ``emit.default.values``: unset proto3 scalars as their defaults instead of null.
    - ``enums.as.ints``: enums as their numbers (int32) instead of their names (string).
    - ``upcast.unsigned.ints`` (read by the integrations, not here): uint32 as int64 and
      uint64 as decimal(20, 0) instead of the signed type of their width.

    Keys are case-insensitive, as Spark's. Raises ValueError naming an option that is not one
    of these.
    """
    options = {str(k).lower(): v for k, v in (options or {}).items()}
    unknown = sorted(k for k in options if k not in KNOWN_OPTIONS)
    if unknown:
        raise ValueError(
            f"unsupported option(s) {', '.join(map(repr, unknown))}; optimus understands "
            + ", ".join(map(repr, KNOWN_OPTIONS))
        )
    mode = str(options.get("mode", "FAILFAST")).upper()
    if mode not in ("FAILFAST", "PERMISSIVE"):
        raise ValueError(f"option 'mode' must be FAILFAST or PERMISSIVE, not {mode!r}")
    depth = int(options.get("recursive.fields.max.depth", -1))
    if depth < -1:
        raise ValueError(f"option 'recursive.fields.max.depth' must be >= -1, not {depth}")
    if _flag("enums.as.ints", options.get("enums.as.ints", False)):
        enums = "int"
    return {
        "enums": enums,
        "emit_defaults": _flag("emit.default.values", options.get("emit.default.values", False)),
        "recursion_depth": -1 if depth == -1 else max(depth, 1),
        "mode": mode.lower(),
        "error_column": error_column,
    }


def upcast_unsigned(options: Optional[Mapping[str, Any]]) -> bool:
    """Spark's ``upcast.unsigned.ints`` option (false by default)."""
    for k, v in (options or {}).items():
        if str(k).lower() == "upcast.unsigned.ints":
            return _flag("upcast.unsigned.ints", v)
    return False


def decode_column(
    schema: Schema, message_name: str, column: Any, kwargs: dict, threads: int, where: str, first_row: int
) -> Tuple[pa.StructArray, Optional[pa.Array]]:
    """Decodes a binary array (or chunked array) into a struct array with a field per message
    field, and the error array in permissive mode (else None).

    A row is null where the input is null or, in permissive mode, where the message is bad. In
    fail-fast mode a bad message raises DecodeError saying ``where`` and its row,
    ``first_row`` + its index in ``column`` (the row in the partition or batch).
    """
    try:
        batch = schema.decode_batch(message_name, column, threads=threads, **kwargs)
    except DecodeError as e:
        row = e.row if e.row is not None else 0
        text = str(e)
        prefix = f"row {row}: "
        if text.startswith(prefix):
            text = text[len(prefix):]
        err = DecodeError(f"{where}, row {first_row + row}: {text}")
        err.path, err.offset, err.row = e.path, e.offset, first_row + row
        raise err from None
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    null = column.is_null()
    errors = None
    fields = list(batch.schema)
    arrays = batch.columns
    if kwargs["mode"] == "permissive":
        at = batch.schema.get_field_index(kwargs["error_column"])
        errors = arrays[at]
        null = pc.or_(null, errors.is_valid())
        fields = fields[:at] + fields[at + 1:]
        arrays = arrays[:at] + arrays[at + 1:]
    if not arrays:
        # A message type without fields: a struct needs its length from somewhere.
        struct = pa.array([{}] * len(column), pa.struct([]))
        struct = pc.if_else(null, pa.scalar(None, struct.type), struct)
    else:
        struct = pa.StructArray.from_arrays(arrays, fields=fields, mask=null)
    return struct, errors


def _conform(source: pa.DataType, target: pa.DataType) -> pa.DataType:
    """``source`` with the leaves that ``encode_batch`` reads in another Arrow type (Spark's
    signed integers for unsigned fields, decimals) replaced by ``target``'s; fields ``target``
    lacks, enums given as numbers and timestamps and durations (of any unit) stay."""
    if source == target:
        return source
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        by_name = {f.name: f for f in target}
        return pa.struct(
            [f.with_type(_conform(f.type, by_name[f.name].type)) if f.name in by_name else f
             for f in source]
        )
    if pa.types.is_list(source) and pa.types.is_list(target):
        return pa.list_(source.value_field.with_type(_conform(source.value_type, target.value_type)))
    if pa.types.is_map(source) and pa.types.is_map(target):
        return pa.map_(
            source.key_field.with_type(_conform(source.key_type, target.key_type)),
            source.item_field.with_type(_conform(source.item_type, target.item_type)),
        )
    numeric = pa.types.is_integer(source) or pa.types.is_decimal(source)
    if numeric and pa.types.is_integer(target):
        return target
    return source


def encode_target(schema: Schema, message_name: str) -> pa.DataType:
    """The struct type ``decode_batch`` makes for the message (enums as names): what
    :func:`encode_column` conforms a struct column to."""
    return pa.struct(list(schema.arrow_schema(message_name, enums="string")))


def encode_column(schema: Schema, message_name: str, struct: Any, target: pa.DataType) -> pa.Array:
    """Encodes each row of a struct array (or chunked array) as protobuf bytes: a binary
    array, null where the struct is null. Integer and decimal leaves (Spark's signed integers for
    unsigned fields) are first cast to the types ``encode_batch`` reads (``target``'s)."""
    if isinstance(struct, pa.ChunkedArray):
        struct = struct.combine_chunks() if struct.num_chunks != 1 else struct.chunk(0)
    conformed = _conform(struct.type, target)
    if conformed != struct.type:
        struct = struct.cast(conformed, safe=False)
    rows = schema.encode_batch(message_name, pa.RecordBatch.from_struct_array(struct))
    data = pa.array(rows, pa.binary())
    if struct.null_count:
        data = pc.if_else(struct.is_null(), pa.scalar(None, pa.binary()), data)
    return data
