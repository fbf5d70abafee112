"""optimus on Ray Data: ``from_protobuf`` / ``to_protobuf`` over a Dataset's column.

Both are ``Dataset.map_batches`` with ``batch_format="pyarrow"``: each Ray task gets a batch of
rows as a pyarrow Table, optimus decodes the binary column of the whole batch into Arrow
columns (no Python object per row) and the batch goes on as Arrow. The function captures an
:class:`optimus.Schema`, which pickles as its descriptor set and is compiled again in each
worker::

    import ray
    from optimus import Schema, ray as oray
    schema = Schema.from_proto(["events.proto"], include=["protos"])
    ds = ray.data.read_parquet("s3://bucket/events/")            # a binary column "value"
    events = oray.from_protobuf(ds, "value", "shop.Event", schema, {"mode": "PERMISSIVE"})

The options are Spark's ``from_protobuf`` options (:mod:`optimus.spark`); the Arrow types
are ``decode_batch``'s (unsigned integers stay unsigned, timestamps are nanoseconds), with
enums as strings unless ``enums`` says otherwise.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import pyarrow as pa

from ._batch import (
    SchemaLike,
    decode_column,
    decode_kwargs,
    encode_column,
    encode_target,
    load_schema,
)

__all__ = ["from_protobuf", "to_protobuf"]


def from_protobuf(
    ds: Any,
    column: str,
    message_name: str,
    schema: SchemaLike,
    options: Optional[Mapping[str, Any]] = None,
    *,
    alias: Optional[str] = None,
    error_column: str = "_error",
    enums: str = "string",
    time_unit: str = "ns",
    threads: int = 1,
    **map_batches_args: Any,
) -> Any:
    """Decodes the binary column ``column`` of the Ray Dataset ``ds`` into a struct column.

    Returns the Dataset with ``column`` replaced by the struct (named ``alias``, default
    ``column``), null where the input is null; in permissive mode a string column
    ``error_column`` follows it. ``schema``, ``options`` (``mode``,
    ``recursive.fields.max.depth``, ``emit.default.values``, ``enums.as.ints``) and the
    fail-fast error (a DecodeError naming the row in the batch ``map_batches`` passed, the
    field path and byte offset) are as in :func:`optimus.spark.from_protobuf`. ``enums``: ``"string"``,
    ``"int"`` or ``"dictionary"``. ``time_unit``: ``"ns"`` or ``"us"`` for Timestamp and
    Duration columns (``"us"`` holds years 1 to 9999; ``"ns"`` only 1677 to 2262). ``threads``: threads per task (Ray already runs a task
    per CPU). Other keywords go to ``map_batches`` (``batch_size``, ``concurrency``, ...).
    """
    sch = load_schema(schema)
    kwargs = decode_kwargs(options, error_column, enums=enums)
    kwargs["time_unit"] = time_unit
    permissive = kwargs["mode"] == "permissive"
    sch.arrow_schema(message_name, recursion_depth=kwargs["recursion_depth"])  # fail here, not in a task
    name = alias or column
    where = f"from_protobuf({column!r}, {message_name!r}): batch"

    def decode(table: pa.Table) -> pa.Table:
        index = table.schema.get_field_index(column)
        if index < 0:
            raise KeyError(f"no column {column!r} in the dataset (columns: {table.column_names})")
        struct, errors = decode_column(
            sch, message_name, table.column(index), kwargs, threads, where, 0
        )
        table = table.set_column(index, name, struct)
        if permissive:
            table = table.add_column(index + 1, error_column, errors)
        return table

    map_batches_args.setdefault("zero_copy_batch", True)
    return ds.map_batches(decode, batch_format="pyarrow", **map_batches_args)


def to_protobuf(
    ds: Any,
    column: str,
    message_name: str,
    schema: SchemaLike,
    *,
    alias: Optional[str] = None,
    **map_batches_args: Any,
) -> Any:
    """Encodes the struct column ``column`` of ``ds`` as protobuf bytes (deterministic).

    Returns the Dataset with ``column`` replaced by a binary column (named ``alias``, default
    ``column``), null where the struct is null. Fields are matched by name, as in
    :func:`optimus.spark.to_protobuf`.
    """
    sch = load_schema(schema)
    target = encode_target(sch, message_name)
    name = alias or column

    def encode(table: pa.Table) -> pa.Table:
        index = table.schema.get_field_index(column)
        if index < 0:
            raise KeyError(f"no column {column!r} in the dataset (columns: {table.column_names})")
        data = encode_column(sch, message_name, table.column(index), target)
        return table.set_column(index, name, data)

    map_batches_args.setdefault("zero_copy_batch", True)
    return ds.map_batches(encode, batch_format="pyarrow", **map_batches_args)
