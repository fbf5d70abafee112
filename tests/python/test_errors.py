"""Bad input: exceptions that name the field path and byte offset, and permissive batches."""

from __future__ import annotations

import pytest

import optimus
from conftest import workload


def test_truncated_names_path_and_offset(peers):
    data = workload("mixed.bin")[:-3]
    with pytest.raises(optimus.DecodeError) as e:
        peers.decode("bench.Mixed", data)
    assert e.value.path == "bench.Mixed.note"
    assert e.value.offset == 273
    assert str(e.value) == "bench.Mixed.note at byte 273: length 23 runs past the end (20 left)"
    assert e.value.row is None
    assert isinstance(e.value, optimus.OptimusError) and isinstance(e.value, ValueError)


def test_nested_truncation(peers):
    data = workload("nested.bin")
    # Cut inside the first sub-message p0 (field 2): its length prefix overruns.
    with pytest.raises(optimus.DecodeError) as e:
        peers.decode("bench.Nested", data[:5])
    assert e.value.path.startswith("bench.Nested")
    assert e.value.offset <= 5


def test_failfast_names_the_row(peers):
    good = workload("flat.bin")
    with pytest.raises(optimus.DecodeError) as e:
        peers.decode_batch("bench.Flat", [good, good, good[:-1]])
    assert e.value.row == 2
    assert str(e.value).startswith("row 2: bench.Flat")
    assert e.value.offset > 0


def test_permissive_error_column(peers):
    good = workload("mixed.bin")
    b = peers.decode_batch("bench.Mixed", [good, good[:-3], b"\xff", good], mode="permissive")
    assert b.schema.names[-1] == "_error"
    assert b.column("_error").to_pylist() == [
        None,
        "bench.Mixed.note at byte 273: length 23 runs past the end (20 left)",
        "bench.Mixed at byte 0: truncated: needed 1 more bytes, 0 left",
        None,
    ]
    assert b.column("id").to_pylist() == [31063163332, None, None, 31063163332]
    assert b.column("header").null_count == 2
    named = peers.decode_batch("bench.Mixed", [b"\xff"], mode="permissive", error_column="err")
    assert named.schema.names[-1] == "err"


def test_bad_delimited_stream(peers):
    with pytest.raises(optimus.DecodeError):
        peers.decode_batch("bench.Flat", b"\x05\x08")
    b = peers.decode_batch("bench.Flat", b"\x02\x08\x01\x05\x08", mode="permissive")
    assert b.column("i32_tiny").to_pylist() == [1, None]
    assert b.column("_error").null_count == 1


def test_json_errors(peers):
    with pytest.raises(optimus.DecodeError) as e:
        peers.from_json("bench.Flat", '{"i32Tiny": "x"}')
    assert "i32" in str(e.value).lower() or "Flat" in str(e.value)
    assert peers.from_json("bench.Flat", '{"nope": 1}', ignore_unknown=True) == b""
    with pytest.raises(optimus.DecodeError):
        peers.from_json("bench.Flat", '{"nope": 1}')


def test_encode_errors(kitchen):
    with pytest.raises(optimus.EncodeError, match="no field"):
        kitchen.encode("kitchen.Sink", {"nope": 1})
    with pytest.raises(optimus.EncodeError, match="kitchen.Sink.i32"):
        kitchen.encode("kitchen.Sink", {"i32": "1"})
    with pytest.raises(optimus.EncodeError):
        kitchen.encode("kitchen.Sink", {"i32": 2**40})
    with pytest.raises(optimus.EncodeError, match="no enum value"):
        kitchen.encode("kitchen.Sink", {"color": "BLUE"})
    with pytest.raises(optimus.EncodeError):
        kitchen.encode("kitchen.Sink", {"ints": 5})
    with pytest.raises(optimus.EncodeError):
        kitchen.encode("kitchen.Sink", {"point": 5})
    with pytest.raises(ValueError):
        kitchen.convert("kitchen.Sink", b"", from_="xml")


def test_options_are_checked(peers):
    with pytest.raises(ValueError):
        peers.decode_batch("bench.Flat", [], enums="nope")
    with pytest.raises(ValueError):
        peers.decode_batch("bench.Flat", [], mode="nope")
