"""Type stubs of optimus's extension module (Rust, pyo3)."""

from __future__ import annotations

import os
from typing import Any, Literal, Sequence, Union

import pyarrow

Format = Literal["protobuf", "binary", "json", "dict"]
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
    """A dict value of the wrong type, a name that is no field, or a value a format cannot hold."""

class SchemaError(OptimusError):
    """A schema that does not compile or load, or a recursive type without ``recursion_depth``."""

class Schema:
    """A compiled set of protobuf message types, loaded at run time.

    Message types are named by their full name (``"bench.Flat"``); an unknown name raises
    ``KeyError``. A Schema is immutable, may be shared between threads and pickles as its
    descriptor set.
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
    def message_types(self) -> list[str]:
        """Full names of the message types (map entries left out), sorted."""
    def descriptor_set(self) -> bytes:
        """The serialized FileDescriptorSet (imports included) the schema was compiled from.

        ``Schema.from_descriptor_set(s.descriptor_set())`` is the same schema; a Schema pickles
        as it (so Spark and Ray can ship one to their workers), and Spark's
        ``from_protobuf(binaryDescriptorSet=...)`` and Google's ``descriptor_pool`` take it.
        """
    def __reduce__(self) -> tuple[Any, tuple[bytes]]: ...
    def decode(
        self,
        type_name: str,
        data: bytes,
        *,
        enums_as_ints: bool = False,
        emit_defaults: bool = False,
        json_names: bool = False,
    ) -> dict[str, Any]:
        """Decode protobuf bytes into a dict.

        The value model is proto3 JSON's with Python types: set fields only (with
        ``emit_defaults``, also unset fields without presence, as their defaults, and empty
        lists and maps); keys are declared field names (``json_names``: lowerCamel JSON
        names); every integer is an ``int``, floats ``float``, strings ``str``, bytes
        ``bytes``; enums by name (a number without a name stays an ``int``) or, with
        ``enums_as_ints``, by number; messages (well-known types included) are dicts of their
        fields, repeated fields lists, maps dicts (the last entry of a key wins). Unknown
        fields are dropped. Raises DecodeError naming the field path and byte offset.
        """
    def encode(self, type_name: str, value: dict[str, Any]) -> bytes:
        """Encode a dict (as ``decode`` gives; names may be declared or JSON names, enums
        names or numbers, ``None`` means unset) as deterministic protobuf bytes."""
    def to_json(
        self, type_name: str, data: bytes, *, emit_defaults: bool = False, proto_names: bool = False
    ) -> str:
        """Protobuf bytes to compact proto3 JSON (well-known types in their JSON forms)."""
    def from_json(self, type_name: str, text: str, *, ignore_unknown: bool = False) -> bytes:
        """Proto3 JSON to protobuf bytes; ``ignore_unknown`` skips unknown names."""
    def convert(
        self, type_name: str, data: bytes | str | dict[str, Any], *, from_: Format = "protobuf", to: Format = "json"
    ) -> bytes | str | dict[str, Any]:
        """Convert one message between ``"protobuf"`` bytes, ``"json"`` text and a ``"dict"``."""
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

        ``emit_defaults``: an unset field without presence (proto3 implicit) is its default
        instead of null. ``recursion_depth``: -1 raises SchemaError on a recursive type;
        n >= 1 lets a type occur n times on a path and leaves deeper fields out.
        ``mode="failfast"`` raises DecodeError naming the row; ``"permissive"`` makes a bad
        message a row of nulls and adds a string column ``error_column`` with the error
        (null for good rows). The GIL is released while the batch decodes.

        ``threads``: most threads for this batch (default: every core); a batch is split
        into contiguous parts of at least 2048 rows, decoded at once and joined, so small
        batches stay on one thread. With dictionary enums each part brings its own
        dictionary, so the joined column's dictionary may repeat names.
        """
    def encode_batch(
        self, type_name: str, batch: pyarrow.RecordBatch, *, error_column: str = "_error"
    ) -> list[bytes]:
        """Encode each row of a RecordBatch as protobuf bytes (deterministic).

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
