"""Type stubs of optimus's extension module (Rust, pyo3)."""

from __future__ import annotations

import os
from typing import Any, Iterable, Literal, Sequence, Union

import pyarrow

Serialized = Literal["protobuf", "binary", "json", "text", "thrift-binary", "thrift-compact"]
"""A serialized format, named as ``optimus convert --from/--to`` names it ("binary" is "protobuf")."""
Format = Literal["protobuf", "binary", "json", "text", "thrift-binary", "thrift-compact", "dict"]
"""A serialized format, or "dict" (a Python dict, as ``Schema.decode`` gives)."""
Data = Union[bytes, str, dict[str, Any]]
"""One message: bytes (protobuf, Thrift), str or UTF-8 bytes (JSON, text), a dict ("dict")."""
Messages = Union[Sequence[bytes], bytes, bytearray, "pyarrow.Array", "pyarrow.ChunkedArray"]

class OptimusError(ValueError):
    """Base class of every error optimus raises."""

class DecodeError(OptimusError):
    """Malformed input. The message is the engine's: ``bench.Mixed.note at byte 273: ...``."""

    path: str
    """The field path, root type first: ``"bench.Mixed.geo.lat"``."""
    offset: int
    """Byte offset in the message (a character offset for JSON)."""
    row: int | None
    """In ``decode_batch``'s fail-fast mode, the row of the bad message."""

class EncodeError(OptimusError):
    """A dict value of the wrong type, a name that is no field, or a value a format cannot hold.

    From a :class:`Converter`, a value that does not convert to its target field's type:
    ``Mixed.items[2].qty: 30000000000 is out of range for the target field``.
    """

    path: str
    """Set by a Converter: the source value's path with element indices (``"Mixed.items[2].qty"``)."""
    row: int | None
    """In ``Converter.convert_batch``, the index of the message that failed."""

class SchemaError(OptimusError):
    """A schema that does not compile or load, or a recursive type without ``recursion_depth``;
    a Converter's map or transform that does not parse or compile against the two types."""

    path: str
    """For a converter rule or field pair that does not compile: the source field path
    (``"Mixed.header"``)."""

class Schema:
    """A compiled set of protobuf message types (or Thrift structs), loaded at run time.

    Message types are named by their full name (``"bench.Flat"``; a Thrift struct also by its
    bare name, ``"Mixed"``, as ``optimus convert --type`` names it); an unknown name raises
    ``KeyError``. A Schema is immutable, may be shared between threads and pickles as its
    descriptor set (a Thrift schema: as its source text, or its files' paths, read again).
    """

    @staticmethod
    def from_proto(
        files: Sequence[str | os.PathLike[str]],
        include: Sequence[str | os.PathLike[str]] | None = None,
    ) -> Schema:
        """Compile ``.proto`` files; ``include`` lists import directories (``protoc -I``).

        Without ``include`` each file's own directory is searched. Google's well-known types
        are always importable. Raises SchemaError with the compiler's file:line:column text.
        """
    @staticmethod
    def from_descriptor_set(data: bytes) -> Schema:
        """Load a serialized FileDescriptorSet (``protoc -o FILE --include_imports``)."""
    @staticmethod
    def from_source(text: str) -> Schema:
        """Compile one ``.proto`` source given as text."""
    @staticmethod
    def from_thrift(
        files: Sequence[str | os.PathLike[str]],
        include_dirs: Sequence[str | os.PathLike[str]] = (),
    ) -> Schema:
        """Load ``.thrift`` files (Apache Thrift IDL as its 0.17 compiler accepts it).

        An ``include`` is found beside the including file, then under each of
        ``include_dirs`` (``thrift -I``). Each struct, union and exception becomes a message
        type ``program.Name`` (``peers.thrift``'s ``struct Mixed`` is ``peers.Mixed``, also
        named ``Mixed``); docs/thrift.md has the whole mapping (containers in containers as
        wrapper messages whose one field is ``value``, maps with non-protobuf keys as lists of
        ``{"key": ..., "value": ...}``). Raises SchemaError naming the file and line.
        """
    @staticmethod
    def from_thrift_source(text: str, name: str = "schema.thrift") -> Schema:
        """Load one ``.thrift`` source given as text; ``name``'s stem is its program name
        (types are ``schema.Name``). Raises SchemaError naming ``name`` and the line."""
    @property
    def thrift(self) -> bool:
        """Whether the schema is Thrift IDL's: the "thrift-binary" and "thrift-compact"
        formats need one, and "json" is then JSON for Thrift messages (docs/thrift.md)."""
    def message_types(self) -> list[str]:
        """Full names of the message types (map entries left out), sorted."""
    def descriptor_set(self) -> bytes:
        """The serialized FileDescriptorSet (imports included) the schema was compiled from.

        ``Schema.from_descriptor_set(s.descriptor_set())`` is the same schema; a Schema pickles
        as it (so Spark and Ray can ship one to their workers), and Spark's
        ``from_protobuf(binaryDescriptorSet=...)`` and Google's ``descriptor_pool`` take it.
        A Thrift schema has none: SchemaError.
        """
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]: ...
    def decode(
        self,
        type_name: str,
        data: bytes | str,
        *,
        enums_as_ints: bool = False,
        emit_defaults: bool = False,
        json_names: bool = False,
        format: Serialized = "protobuf",
    ) -> dict[str, Any]:
        """Decode one message into a dict: protobuf bytes, or ``format`` — "json" or "text"
        (str, or UTF-8 bytes), "thrift-binary" or "thrift-compact" (bytes; a Thrift
        schema's). Thrift structs give the same dicts (i8/i16/i32 and i64 as ``int``,
        ``binary`` as ``bytes``, sets as lists).

        The value model is proto3 JSON's with Python types: set fields only (with
        ``emit_defaults``, also unset fields without presence, as their defaults, and empty
        lists and maps); keys are declared field names (``json_names``: lowerCamel JSON
        names); every integer is an ``int``, floats ``float``, strings ``str``, bytes
        ``bytes``; enums by name (a number without a name stays an ``int``) or, with
        ``enums_as_ints``, by number; messages (well-known types included) are dicts of their
        fields, repeated fields lists, maps dicts (the last entry of a key wins). Unknown
        fields are dropped. Raises DecodeError naming the field path and byte offset (JSON
        and text input that is not UTF-8 too: the offset of the first bad byte).
        """
    def encode(self, type_name: str, value: dict[str, Any], *, format: Serialized = "protobuf") -> bytes | str:
        """Encode a dict (as ``decode`` gives; names may be declared or JSON names, enums
        names or numbers, ``None`` means unset) as deterministic protobuf bytes, or in
        ``format``: "json" / "text" give ``str``, "thrift-binary" / "thrift-compact" bytes
        (a Thrift schema's: fields by id; a missing ``required`` field raises EncodeError)."""
    def to_json(
        self, type_name: str, data: bytes, *, emit_defaults: bool = False, proto_names: bool = False
    ) -> str:
        """Protobuf bytes to compact proto3 JSON (well-known types in their JSON forms); for
        a Thrift schema, JSON for Thrift messages (the options do not apply)."""
    def from_json(self, type_name: str, text: str, *, ignore_unknown: bool = False) -> bytes:
        """Proto3 JSON (a Thrift schema: JSON for Thrift messages) to protobuf bytes;
        ``ignore_unknown`` skips unknown names."""
    def convert(
        self,
        type_name: str,
        data: Data,
        *,
        from_: Format = "protobuf",
        to: Format = "json",
        emit_defaults: bool = False,
        proto_names: bool = False,
        ignore_unknown: bool = False,
    ) -> bytes | str | dict[str, Any]:
        """Convert one message between formats, any to any: "protobuf" bytes, "json" and
        "text" (``str``; str or UTF-8 bytes on input), "thrift-binary" and
        "thrift-compact" bytes (a Thrift schema's), and "dict".

        The names are ``optimus convert --from/--to``'s and the output is the CLI's, byte
        for byte (without the newline it adds after JSON): "json" is proto3 JSON for a
        ``.proto`` schema and JSON for Thrift messages for a Thrift one, "text" the protobuf
        text format as ``protoc --decode`` prints it. Thrift to Thrift transcodes without a
        record. ``emit_defaults`` / ``proto_names`` shape proto3 JSON output,
        ``ignore_unknown`` JSON input. To another schema or type, or through field ops:
        :class:`Converter`.
        """
    def decode_batch(
        self,
        type_name: str,
        messages: Messages,
        *,
        enums: Literal["dictionary", "string", "int"] = "dictionary",
        emit_defaults: bool = False,
        recursion_depth: int = -1,
        mode: Literal["failfast", "permissive"] = "failfast",
        error_column: str = "_error",
        threads: int | None = None,
        time_unit: Literal["ns", "us"] = "ns",
        format: Literal["protobuf", "thrift-binary", "thrift-compact"] = "protobuf",
    ) -> pyarrow.RecordBatch:
        """Decode many messages into one RecordBatch, a row per message, a column per field.

        ``messages``: a list of bytes, a pyarrow binary / large_binary array (or chunked
        array; a null is a row of nulls), or one bytes buffer of varint-delimited messages.

        Types follow the message: integers by width and sign (int32, int64, uint32,
        uint64), float32/float64, bool, string, binary; messages as structs (null when
        unset); repeated fields as lists and maps as maps (empty when unset); enums as
        ``dictionary<int32, string>``, ``string`` or ``int32`` (``enums``; numbers without
        a name as their decimal text); Timestamp as ``timestamp[ns, UTC]``, Duration as
        ``duration[ns]`` (null past int64 nanoseconds, about 1677 to 2262), wrappers as their
        nullable scalar. ``time_unit="us"``: both in microseconds (Spark's unit; years 1 to
        9999 fit), the nanoseconds below one dropped toward zero.

        ``format``: the rows' wire format, "protobuf", or for a Thrift schema
        "thrift-binary" / "thrift-compact" (the struct's fields as columns, typed as its
        fields map: docs/thrift.md).

        ``emit_defaults``: an unset field without presence (proto3 implicit) is its default
        instead of null. ``recursion_depth``: -1 raises SchemaError on a recursive type;
        n >= 1 lets a type occur n times on a path and leaves deeper fields out.
        ``mode="failfast"`` raises DecodeError naming the row; ``"permissive"`` makes a bad
        message a row of nulls and adds a string column ``error_column`` with the error
        (null for good rows). The GIL is released while the batch decodes.

        ``threads``: most threads for this batch (default: every core); a batch of at least
        2048 rows a thread is split into two contiguous parts a thread, decoded at once and
        joined, so small batches stay on one thread. With dictionary enums each part brings its own
        dictionary, so the joined column's dictionary may repeat names.
        """
    def decode_table(
        self,
        type_name: str,
        messages: Messages,
        *,
        enums: Literal["dictionary", "string", "int"] = "dictionary",
        emit_defaults: bool = False,
        recursion_depth: int = -1,
        mode: Literal["failfast", "permissive"] = "failfast",
        error_column: str = "_error",
        threads: int | None = None,
        time_unit: Literal["ns", "us"] = "ns",
        format: Literal["protobuf", "thrift-binary", "thrift-compact"] = "protobuf",
    ) -> pyarrow.Table:
        """Decode many messages as :meth:`decode_batch` does, with the same options and
        columns, into a Table whose chunks are the parts decoded on the threads (two a
        thread), in row order.

        The parts are handed over as they are, where ``decode_batch`` copies them into one
        batch, so a large batch gains more from a second core (as pyarrow's own readers
        return a chunked Table). One thread, or a batch under 4096 rows, gives one chunk.
        ``table.to_batches()`` gives the parts, ``table.combine_chunks()`` one chunk.
        """
    def encode_batch(
        self,
        type_name: str,
        batch: pyarrow.RecordBatch,
        *,
        error_column: str = "_error",
        format: Literal["protobuf", "thrift-binary", "thrift-compact"] = "protobuf",
    ) -> list[bytes]:
        """Encode each row of a RecordBatch as protobuf bytes (deterministic), or with
        ``format`` as Thrift binary or compact bytes (a Thrift schema's).

        Columns are matched to fields by name (declared or JSON name; any subset, any
        order; ``error_column`` is skipped) and take the types ``decode_batch`` makes, plus
        integer columns of any width (range-checked), float32/float64 for either float
        kind and timestamps and durations of any unit; enums as names (utf8 or dictionary), decimal text or numbers. A null is an
        unset field. ``encode_batch(t, decode_batch(t, msgs)) == msgs`` for canonical
        input. Raises EncodeError naming the row and field. The GIL is released while the
        rows encode.
        """
    def arrow_schema(
        self,
        type_name: str,
        *,
        enums: Literal["dictionary", "string", "int"] = "dictionary",
        recursion_depth: int = -1,
        mode: Literal["failfast", "permissive"] = "failfast",
        error_column: str = "_error",
        time_unit: Literal["ns", "us"] = "ns",
    ) -> pyarrow.Schema:
        """The schema ``decode_batch`` gives for this type and these options."""

class Converter:
    """A compiled converter from one message type to another: the same type through field
    ops, another type of the same schema, or a type of another schema and IDL (a ``.proto``
    message to a ``.thrift`` struct and back), as ``optimus convert --map/--transform``
    (docs/convert.md).

    ``map`` is a TOML ``[fields]`` table of source path = target path for fields whose
    names differ across schemas (every other field goes to the target field of its name;
    needs ``dst_schema``); ``transform`` holds converter ops per source field path
    (``rename``, ``drop``, ``redact``, ``hash = "sha256"``, ``scale``, ``enum``, ``default``).
    Each is TOML text or the path of a TOML file (an ``os.PathLike``, or a ``str`` with no
    ``=`` and no line break). ``dst_schema`` defaults to ``src_schema``; ``dst_type`` to the
    type of the source type's bare name there (``bench.Mixed`` -> ``Mixed`` in a Thrift
    schema).

    The plan is compiled once, here: a field without a target, types that cannot convert,
    an op that does not apply or a rule naming no field raise SchemaError (``.path`` names
    the source field); TOML that does not parse raises SchemaError naming the file; a
    missing file raises FileNotFoundError; an unknown type, KeyError. A Converter is
    immutable, may be shared between threads and pickles (its schemas and TOML texts).
    """

    def __init__(
        self,
        src_schema: Schema,
        src_type: str,
        dst_schema: Schema | None = None,
        dst_type: str | None = None,
        map: str | os.PathLike[str] | None = None,
        transform: str | os.PathLike[str] | None = None,
    ) -> None: ...
    @property
    def src_type(self) -> str:
        """The source message type's full name."""
    @property
    def dst_type(self) -> str:
        """The target message type's full name."""
    @property
    def src_schema(self) -> Schema: ...
    @property
    def dst_schema(self) -> Schema: ...
    def convert(
        self,
        data: Data,
        from_format: Format | None = None,
        to_format: Format | None = None,
        *,
        emit_defaults: bool = False,
        proto_names: bool = False,
        ignore_unknown: bool = False,
    ) -> bytes | str | dict[str, Any]:
        """Convert one message of the source type, given in ``from_format``, to the target
        type in ``to_format`` (formats as ``Schema.convert``; each defaults to its side's
        schema's own: "thrift-binary" for a Thrift schema, else "protobuf").

        Raises DecodeError (``.path``, ``.offset``) for bad input and EncodeError whose
        ``.path`` names the value (``Mixed.items[2].qty``) for one that does not convert: a
        number out of the target's range, an enum value with no counterpart, bytes that are
        not UTF-8 going to a string; a Thrift format for a schema that is not Thrift's raises
        ValueError.
        """
    def convert_batch(
        self,
        messages: Iterable[bytes | str],
        from_format: Serialized | None = None,
        to_format: Serialized | None = None,
        *,
        emit_defaults: bool = False,
        proto_names: bool = False,
        ignore_unknown: bool = False,
    ) -> list[bytes | str]:
        """Convert many serialized messages as ``convert`` converts one (no "dict"), in
        order; the GIL is released while they convert. The first message that fails raises,
        its index as the error's ``.row`` and at the front of its text (``row 2: ...``)."""
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]: ...
