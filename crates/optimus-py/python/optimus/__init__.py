"""optimus for Python: protobuf messages as dicts, JSON and Arrow record batches.

Load a schema at run time and name message types by their full name::

    import optimus
    schema = optimus.Schema.from_proto(["peers.proto"], include=["testdata"])
    d = schema.decode("bench.Flat", data)          # dict
    data2 = schema.encode("bench.Flat", d)          # bytes
    text = schema.to_json("bench.Flat", data)       # proto3 JSON
    batch = schema.decode_batch("bench.Flat", [data, data])  # pyarrow.RecordBatch

Thrift IDL loads too (``Schema.from_thrift``), and one message converts between the formats
of ``optimus convert`` ("protobuf", "json", "text", "thrift-binary", "thrift-compact") and
dicts; :class:`Converter` converts across schemas (``.proto`` to ``.thrift``) with field
maps and transforms (rename, drop, hash, scale, ...)::

    thrift = optimus.Schema.from_thrift(["peers.thrift"])
    conv = optimus.Converter(schema, "bench.Mixed", thrift, "Mixed", map="mixed.map.toml")
    tbin = conv.convert(data, "protobuf", "thrift-binary")

Beside the extension: :mod:`optimus.spark` and :mod:`optimus.ray` (``from_protobuf`` /
``to_protobuf`` over a PySpark DataFrame's or a Ray Dataset's column, with Spark's options)
and :mod:`optimus.bench` (``python -m optimus.bench``: protobuf -> Arrow against ptars,
protarrow, Python protobuf and Spark). They import PySpark or Ray only when used.

The engine is optimus's Rust engine (engine v2: op tables and arena records); errors are
raised as :class:`DecodeError` (with ``.path``, ``.offset`` and, in a batch, ``.row``),
:class:`EncodeError` and :class:`SchemaError`, all subclasses of :class:`OptimusError`
(itself a ``ValueError``).
"""

from ._optimus import (  # noqa: F401
    Converter,
    DecodeError,
    EncodeError,
    OptimusError,
    Schema,
    SchemaError,
)

__all__ = ["Schema", "Converter", "OptimusError", "DecodeError", "EncodeError", "SchemaError"]
__version__ = "0.1.0"
