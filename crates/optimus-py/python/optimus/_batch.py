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
    ``first_row`` + its index in ``column`` (the row in the partition or block).
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
    if len(arrays) == 0:
        # A message type without fields: a struct needs its length from somewhere.
        struct = pa.array([{}] * len(column), pa.struct([]))
        struct = pc.if_else(null, pa.scalar(None, struct.type), struct)
    else:
        struct = pa.StructArray.from_arrays(arrays, fields=fields, mask=null)
    return struct, errors
