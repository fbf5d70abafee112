"""One message at a time: protobuf bytes <-> dicts and JSON, against Google protobuf."""

from __future__ import annotations

import json
import random

import pytest
from google.protobuf import json_format

import optimus
from conftest import WORKLOADS, workload
from reference import normalize, to_dict


@pytest.mark.parametrize("type_name,file", WORKLOADS)
def test_workload_round_trip(peers, peers_pb2, type_name, file):
    data = workload(file)
    msg = getattr(peers_pb2, type_name.split(".")[1]).FromString(data)
    d = peers.decode(type_name, data)
    assert d == to_dict(msg)
    assert peers.encode(type_name, d) == data == msg.SerializeToString(deterministic=True)


@pytest.mark.parametrize("type_name,file", WORKLOADS)
def test_workload_json(peers, peers_pb2, type_name, file):
    data = workload(file)
    msg = getattr(peers_pb2, type_name.split(".")[1]).FromString(data)
    text = peers.to_json(type_name, data)
    assert json.loads(text) == json.loads(json_format.MessageToJson(msg))
    assert peers.from_json(type_name, text) == data
    assert peers.convert(type_name, data, from_="protobuf", to="json") == text
    assert peers.convert(type_name, text, from_="json", to="protobuf") == data
    assert peers.convert(type_name, data, from_="protobuf", to="dict") == peers.decode(type_name, data)
    assert peers.convert(type_name, peers.decode(type_name, data), from_="dict", to="protobuf") == data
    with_names = json.loads(peers.to_json(type_name, data, proto_names=True))
    assert with_names == json.loads(
        json_format.MessageToJson(msg, preserving_proto_field_name=True)
    )


@pytest.mark.parametrize("pool,type_name", [
    ("peers", "bench.Flat"), ("peers", "bench.Mixed"), ("peers", "bench.Nested"),
    ("kitchen", "kitchen.Sink"), ("kitchen", "kitchen.Tree"),
])
def test_random_messages(pools, peers, kitchen, pool, type_name):
    import msggen

    schema = {"peers": peers, "kitchen": kitchen}[pool]
    gen = msggen.MessageGenerator(pools[pool], random.Random(52))
    for msg in gen.messages(type_name, 150):
        data = msg.SerializeToString(deterministic=True)
        d = schema.decode(type_name, data)
        assert normalize(d) == normalize(to_dict(msg))
        assert schema.encode(type_name, d) == data
        ints = schema.decode(type_name, data, enums_as_ints=True)
        assert normalize(ints) == normalize(to_dict(msg, enums_as_ints=True))
        assert schema.encode(type_name, ints) == data
        assert schema.from_json(type_name, schema.to_json(type_name, data)) == data


def test_dict_value_model(kitchen, kitchen_pb2):
    m = kitchen_pb2.Sink(
        i64=-(2**63), u64=2**64 - 1, by=b"\x00\xff", color=kitchen_pb2.GREEN,
        point=kitchen_pb2.Point(x=1), ints=[1, -2], strs=["a", "é"],
        counts={"a": 1, "b": 2}, number=7, maybe=0,
    )
    m.by_id[5].y = 3
    m.at.seconds = 10
    m.wrapped.value = 0
    d = kitchen.decode("kitchen.Sink", m.SerializeToString())
    assert d == {
        "i64": -(2**63), "u64": 2**64 - 1, "by": b"\x00\xff", "color": "GREEN",
        "point": {"x": 1}, "ints": [1, -2], "strs": ["a", "é"], "counts": {"a": 1, "b": 2},
        "by_id": {5: {"y": 3}}, "number": 7, "maybe": 0, "at": {"seconds": 10}, "wrapped": {},
    }
    assert kitchen.decode("kitchen.Sink", m.SerializeToString(), enums_as_ints=True)["color"] == 2
    camel = kitchen.decode("kitchen.Sink", kitchen_pb2.Sink(by_id={1: kitchen_pb2.Point()}).SerializeToString(), json_names=True)
    assert camel == {"byId": {1: {}}}
    defaults = kitchen.decode("kitchen.Sink", b"", emit_defaults=True)
    assert defaults["i32"] == 0 and defaults["s"] == "" and defaults["by"] == b""
    assert defaults["color"] == "COLOR_UNSPECIFIED" and defaults["ints"] == [] and defaults["counts"] == {}
    assert "point" not in defaults and "maybe" not in defaults and "name" not in defaults
    # Encoding takes names or numbers for enums, JSON names too, and skips None.
    enc = kitchen.encode("kitchen.Sink", {"color": 1, "byId": {2: {"x": 1}}, "point": None})
    assert kitchen_pb2.Sink.FromString(enc) == kitchen_pb2.Sink(color=1, by_id={2: kitchen_pb2.Point(x=1)})


def test_unknown_enum_numbers_stay_ints(kitchen, kitchen_pb2):
    data = kitchen_pb2.Sink(color=7).SerializeToString()
    assert kitchen.decode("kitchen.Sink", data) == {"color": 7}
    assert kitchen.encode("kitchen.Sink", {"color": 7}) == data


def test_schema_loading(tmp_path):
    import subprocess

    from conftest import TESTDATA

    ds = tmp_path / "peers.pb"
    subprocess.run(["protoc", f"-I{TESTDATA}", "--include_imports", f"--descriptor_set_out={ds}", "peers.proto"], check=True)
    s = optimus.Schema.from_descriptor_set(ds.read_bytes())
    assert "bench.Flat" in s.message_types()
    src = optimus.Schema.from_source('syntax = "proto3"; message M { int32 a = 1; }')
    assert src.encode("M", {"a": 5}) == b"\x08\x05"
    with pytest.raises(optimus.SchemaError, match="nope.proto"):
        optimus.Schema.from_proto(["nope.proto"], include=[str(tmp_path)])
    with pytest.raises(optimus.SchemaError):
        optimus.Schema.from_descriptor_set(b"\xff\xff")
    with pytest.raises(KeyError):
        src.decode("N", b"")
