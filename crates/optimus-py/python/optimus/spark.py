"""optimus on PySpark: ``from_protobuf`` / ``to_protobuf`` over a DataFrame's column.

Spark's own ``pyspark.sql.protobuf.functions.from_protobuf`` decodes with protobuf-java in the
executor's JVM. These functions decode with optimus in the executor's Python worker instead,
through ``DataFrame.mapInArrow``: Spark hands each task's rows over as Arrow record batches,
optimus decodes the binary column of a whole batch into Arrow columns (no Python object per
row) and Spark reads them back as a struct column. What travels to the executors is the
function and its :class:`optimus.Schema`, which pickles as its descriptor set and is compiled
again there, so every executor needs the ``optimus`` package, nothing else::

    from optimus import Schema, spark as ospark
    schema = Schema.from_proto(["events.proto"], include=["protos"])
    events = ospark.from_protobuf(df, "value", "shop.Event", schema,
                                  {"mode": "PERMISSIVE"})   # Spark's option names
    events.select("key", "value.*", "_error")

The struct's Spark types are those of Spark's ``from_protobuf`` (docs/python.md, "PySpark
and Ray"): unsigned integers as the signed type of their width (``upcast.unsigned.ints``:
wider), enums as strings (``enums.as.ints``: int), Timestamp as TimestampType, Duration as
DayTimeIntervalType; nested messages as structs, repeated fields as arrays, maps as maps.
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
    upcast_unsigned,
)

__all__ = ["from_protobuf", "to_protobuf", "spark_type", "arrow_type_for_spark"]


def arrow_type_for_spark(t: pa.DataType, upcast: bool = False) -> pa.DataType:
    """The Arrow type that :func:`from_protobuf` hands Spark for a column that
    ``decode_batch`` makes as ``t``: Spark has no unsigned integers (``upcast``: Spark's
    ``upcast.unsigned.ints``), reads timestamps and durations in microseconds and has no
    dictionary type."""
    if pa.types.is_dictionary(t):
        return arrow_type_for_spark(t.value_type, upcast)
    if t == pa.uint32():
        return pa.int64() if upcast else pa.int32()
    if t == pa.uint64():
        return pa.decimal128(20, 0) if upcast else pa.int64()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC")
    if pa.types.is_duration(t):
        return pa.duration("us")
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(arrow_type_for_spark(f.type, upcast)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(arrow_type_for_spark(t.value_type, upcast)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(arrow_type_for_spark(t.key_type, upcast)),
            t.item_field.with_type(arrow_type_for_spark(t.item_type, upcast)),
        )
    return t


def spark_type(t: pa.DataType) -> Any:
    """The Spark SQL type of an Arrow type as optimus's Spark functions produce them.

    Raises TypeError for an Arrow type Spark has no type for (unsigned integers: convert with
    the functions here, which map them as Spark's ``from_protobuf`` does).
    """
    from pyspark.sql import types as T

    simple = {
        pa.bool_(): T.BooleanType(),
        pa.int8(): T.ByteType(),
        pa.int16(): T.ShortType(),
        pa.int32(): T.IntegerType(),
        pa.int64(): T.LongType(),
        pa.float32(): T.FloatType(),
        pa.float64(): T.DoubleType(),
        pa.string(): T.StringType(),
        pa.large_string(): T.StringType(),
        pa.binary(): T.BinaryType(),
        pa.large_binary(): T.BinaryType(),
    }
    if t in simple:
        return simple[t]
    if pa.types.is_timestamp(t):
        return T.TimestampType() if t.tz is not None else T.TimestampNTZType()
    if pa.types.is_duration(t):
        return T.DayTimeIntervalType()
    if pa.types.is_decimal(t):
        return T.DecimalType(t.precision, t.scale)
    if pa.types.is_struct(t):
        return T.StructType([T.StructField(f.name, spark_type(f.type), True) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return T.ArrayType(spark_type(t.value_type), True)
    if pa.types.is_map(t):
        return T.MapType(spark_type(t.key_type), spark_type(t.item_type), True)
    raise TypeError(f"no Spark type for Arrow type {t}")


def _partition() -> str:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return f"partition {ctx.partitionId()}" if ctx is not None else "partition ?"


def from_protobuf(
    df: Any,
    column: str,
    message_name: str,
    schema: SchemaLike,
    options: Optional[Mapping[str, Any]] = None,
    *,
    alias: Optional[str] = None,
    error_column: str = "_error",
    threads: int = 1,
) -> Any:
    """Decodes the binary column ``column`` of ``df`` into a struct column with optimus.

    Returns a DataFrame with ``df``'s columns in order, ``column`` replaced by the struct
    (named ``alias``, default ``column``); in permissive mode a string column
    ``error_column`` follows it, holding each bad record's error (null for good rows).

    ``schema``: an :class:`optimus.Schema`, descriptor-set bytes (Spark's
    ``binaryDescriptorSet``) or a descriptor-set file path (Spark's ``descFilePath``; read
    here, on the driver). ``options``: Spark's ``from_protobuf`` options ``mode``
    (``FAILFAST``, the default: a bad record fails the task with a DecodeError naming the
    partition, the row in it, the field path and byte offset; ``PERMISSIVE``: the struct is
    null and ``error_column`` says why), ``recursive.fields.max.depth``,
    ``emit.default.values``, ``enums.as.ints`` and ``upcast.unsigned.ints``; any other option
    raises ValueError. A null input is a null struct. ``threads``: threads per task (Spark
    already runs a task per core).
    """
    from pyspark.sql import types as T

    sch = load_schema(schema)
    kwargs = decode_kwargs(options, error_column)
    # Spark's unit and range: year 1 to 9999 fit in int64 microseconds, not nanoseconds.
    kwargs["time_unit"] = "us"
    upcast = upcast_unsigned(options)
    permissive = kwargs["mode"] == "permissive"
    if column not in df.columns:
        raise KeyError(f"no column {column!r} in the DataFrame (columns: {df.columns})")
    index = df.columns.index(column)
    if not isinstance(df.schema[index].dataType, T.BinaryType):
        raise TypeError(f"column {column!r} is {df.schema[index].dataType.simpleString()}, not binary")
    fields = sch.arrow_schema(
        message_name,
        enums=kwargs["enums"],
        recursion_depth=kwargs["recursion_depth"],
        time_unit="us",
    )
    struct_type = arrow_type_for_spark(pa.struct(list(fields)), upcast)
    out_fields = list(df.schema.fields)
    out_fields[index] = T.StructField(alias or column, spark_type(struct_type), True)
    if permissive:
        out_fields.insert(index + 1, T.StructField(error_column, T.StringType(), True))
    out_names = [f.name for f in out_fields]

    def decode(batches):
        where = f"from_protobuf({column!r}, {message_name!r}): {_partition()}"
        first_row = 0
        for batch in batches:
            struct, errors = decode_column(
                sch, message_name, batch.column(index), kwargs, threads, where, first_row
            )
            first_row += batch.num_rows
            if struct.type != struct_type:
                struct = struct.cast(struct_type, safe=False)
            arrays = list(batch.columns)
            arrays[index] = struct
            if permissive:
                arrays.insert(index + 1, errors)
            yield pa.RecordBatch.from_arrays(arrays, names=out_names)

    return df.mapInArrow(decode, T.StructType(out_fields))


def to_protobuf(
    df: Any,
    column: str,
    message_name: str,
    schema: SchemaLike,
    *,
    alias: Optional[str] = None,
) -> Any:
    """Encodes the struct column ``column`` of ``df`` as protobuf bytes with optimus.

    Returns a DataFrame with ``df``'s columns in order, ``column`` replaced by a binary
    column (named ``alias``, default ``column``). The struct's fields are matched to the
    message's fields by name (any subset): as :func:`from_protobuf` makes them, or built by
    hand (integers of any width, enums as names or numbers). Deterministic bytes; a null struct
    gives a null. A value that cannot be encoded fails the task with an EncodeError naming the
    row and field.
    """
    from pyspark.sql import types as T

    sch = load_schema(schema)
    if column not in df.columns:
        raise KeyError(f"no column {column!r} in the DataFrame (columns: {df.columns})")
    index = df.columns.index(column)
    if not isinstance(df.schema[index].dataType, T.StructType):
        raise TypeError(f"column {column!r} is {df.schema[index].dataType.simpleString()}, not a struct")
    target = encode_target(sch, message_name)
    out_fields = list(df.schema.fields)
    out_fields[index] = T.StructField(alias or column, T.BinaryType(), True)
    out_names = [f.name for f in out_fields]

    def encode(batches):
        for batch in batches:
            arrays = list(batch.columns)
            arrays[index] = encode_column(sch, message_name, batch.column(index), target)
            yield pa.RecordBatch.from_arrays(arrays, names=out_names)

    return df.mapInArrow(encode, T.StructType(out_fields))
