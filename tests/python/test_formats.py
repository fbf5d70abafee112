"""Thrift schemas, the Thrift and text formats, and converters across schemas (optimus.Converter).

The Thrift bytes are testdata/thrift/*.tbin / *.tcompact: Apache Thrift's Python library's
encoding of the same messages as testdata/*.bin, as structs of testdata/thrift/peers.thrift;
testdata/thrift/*.map.toml turn peers.proto's field names into peers.thrift's.
"""

from __future__ import annotations

import hashlib
import pickle
import subprocess
import tomllib
from pathlib import Path

import pytest

import optimus
from conftest import REPO, TESTDATA, workload

THRIFT = TESTDATA / "thrift"
CLI = REPO / "target" / "release" / "optimus"
# (proto type, thrift type, stem of testdata/*.bin and testdata/thrift/*.{tbin,tcompact,map.toml})
PAIRS = [("bench.Flat", "Flat", "flat"), ("bench.Mixed", "Mixed", "mixed"), ("bench.Nested", "Nested", "nested")]
SUFFIX = {"thrift-binary": "tbin", "thrift-compact": "tcompact"}


def thrift_bytes(stem: str, fmt: str) -> bytes:
    return (THRIFT / f"{stem}.{SUFFIX[fmt]}").read_bytes()


def reversed_map(stem: str) -> str:
    """The map file of `stem`, target and source swapped (peers.thrift -> peers.proto)."""
    fields = tomllib.loads((THRIFT / f"{stem}.map.toml").read_text())["fields"]
    lines = ["[fields]"] + [f'"{v}" = "{k}"' for k, v in fields.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def thrift() -> optimus.Schema:
    return optimus.Schema.from_thrift([THRIFT / "peers.thrift"])


# ------------------------------------------------------------------ Thrift schemas


def test_from_thrift_names(thrift):
    assert thrift.thrift
    assert "peers.Mixed" in thrift.message_types()
    assert "peers.MixedHeader" in thrift.message_types()
    data = thrift_bytes("mixed", "thrift-binary")
    # the bare struct name and program.Name both name it, as `optimus convert --type`
    assert thrift.decode("Mixed", data, format="thrift-binary") == thrift.decode(
        "peers.Mixed", data, format="thrift-binary"
    )
    with pytest.raises(KeyError, match="NoSuch"):
        thrift.decode("NoSuch", data, format="thrift-binary")
    assert "10 message types" in repr(thrift)


def test_from_thrift_include_dirs():
    # zoo.thrift includes zoo_base.thrift: found beside it, or through include_dirs
    s = optimus.Schema.from_thrift([THRIFT / "zoo.thrift"], include_dirs=[THRIFT])
    assert any(t.startswith("zoo_base.") for t in s.message_types())
    assert optimus.Schema.from_thrift([str(THRIFT / "zoo.thrift")]).message_types() == s.message_types()


def test_from_thrift_source():
    s = optimus.Schema.from_thrift_source("struct A {\n 1: i32 x\n 2: string name\n}\n")
    assert s.message_types() == ["schema.A"]
    data = s.encode("A", {"x": 7, "name": "seven"}, format="thrift-compact")
    assert s.decode("schema.A", data, format="thrift-compact") == {"x": 7, "name": "seven"}
    named = optimus.Schema.from_thrift_source("struct B { 1: i64 y }", name="api.thrift")
    assert named.message_types() == ["api.B"]


def test_thrift_schema_pickles(thrift):
    data = thrift_bytes("nested", "thrift-compact")
    for s in (thrift, optimus.Schema.from_thrift_source((THRIFT / "peers.thrift").read_text(), "peers.thrift")):
        back = pickle.loads(pickle.dumps(s))
        assert back.thrift and back.message_types() == s.message_types()
        assert back.decode("Nested", data, format="thrift-compact") == s.decode(
            "Nested", data, format="thrift-compact"
        )
    with pytest.raises(optimus.SchemaError, match="no descriptor set"):
        thrift.descriptor_set()


def test_proto_schema_is_not_thrift(peers):
    assert not peers.thrift


# ------------------------------------------------------------------ Thrift formats


@pytest.mark.parametrize("fmt", ["thrift-binary", "thrift-compact"])
@pytest.mark.parametrize("proto_type,thrift_type,stem", PAIRS)
def test_thrift_dict_round_trip(thrift, fmt, proto_type, thrift_type, stem):
    data = thrift_bytes(stem, fmt)
    d = thrift.decode(thrift_type, data, format=fmt)
    assert d and isinstance(d, dict)
    assert thrift.encode(thrift_type, d, format=fmt) == data
    # protobuf bytes of the Thrift struct and back: the same dict and the same Thrift bytes
    pb = thrift.convert(thrift_type, data, from_=fmt, to="protobuf")
    assert thrift.decode(thrift_type, pb) == d
    assert thrift.convert(thrift_type, pb, from_="protobuf", to=fmt) == data
    assert thrift.convert(thrift_type, data, from_=fmt, to="dict") == d
    assert thrift.convert(thrift_type, d, from_="dict", to=fmt) == data


@pytest.mark.parametrize("proto_type,thrift_type,stem", PAIRS)
def test_thrift_arrow_batches(thrift, proto_type, thrift_type, stem):
    """Thrift rows decode into the same RecordBatch in either protocol, and encode back."""
    tbin, tcompact = thrift_bytes(stem, "thrift-binary"), thrift_bytes(stem, "thrift-compact")
    a = thrift.decode_batch(thrift_type, [tbin, tbin], format="thrift-binary")
    b = thrift.decode_batch(thrift_type, [tcompact, tcompact], format="thrift-compact")
    assert a.num_rows == 2 and a.to_pylist() == b.to_pylist()
    fields = thrift.decode(thrift_type, tbin, format="thrift-binary")
    assert set(fields) <= set(a.schema.names) and all(a.column(f)[0].is_valid for f in fields)
    assert thrift.encode_batch(thrift_type, a, format="thrift-binary") == [tbin, tbin]
    assert thrift.encode_batch(thrift_type, a, format="thrift-compact") == [tcompact, tcompact]


def test_thrift_arrow_batch_errors(thrift, peers):
    with pytest.raises(ValueError, match="needs a Thrift schema"):
        peers.decode_batch("bench.Mixed", [b""], format="thrift-binary")
    with pytest.raises(ValueError, match="batches are protobuf, thrift-binary or thrift-compact"):
        thrift.decode_batch("Mixed", [b""], format="json")
    with pytest.raises(optimus.DecodeError) as e:
        thrift.decode_batch("Mixed", [thrift_bytes("mixed", "thrift-binary")[:-5]], format="thrift-binary")
    assert e.value.row == 0
    bad = thrift.decode_batch("Mixed", [b"\x0b"], format="thrift-binary", mode="permissive")
    assert bad.num_rows == 1 and bad.column("_error")[0].as_py()


@pytest.mark.parametrize("proto_type,thrift_type,stem", PAIRS)
def test_thrift_binary_compact(thrift, proto_type, thrift_type, stem):
    tbin, tcompact = thrift_bytes(stem, "thrift-binary"), thrift_bytes(stem, "thrift-compact")
    assert thrift.convert(thrift_type, tbin, from_="thrift-binary", to="thrift-compact") == tcompact
    assert thrift.convert(thrift_type, tcompact, from_="thrift-compact", to="thrift-binary") == tbin
    # to itself: canonical input stays as it is
    assert thrift.convert(thrift_type, tbin, from_="thrift-binary", to="thrift-binary") == tbin


@pytest.mark.parametrize("proto_type,thrift_type,stem", PAIRS)
def test_thrift_json(thrift, proto_type, thrift_type, stem):
    tbin = thrift_bytes(stem, "thrift-binary")
    text = thrift.convert(thrift_type, tbin, from_="thrift-binary", to="json")
    assert isinstance(text, str) and text.startswith("{")
    assert thrift.convert(thrift_type, text, from_="json", to="thrift-binary") == tbin
    assert thrift.convert(thrift_type, text.encode(), from_="json", to="thrift-binary") == tbin
    # to_json / from_json on a Thrift schema speak JSON for Thrift messages too
    pb = thrift.convert(thrift_type, tbin, from_="thrift-binary", to="protobuf")
    assert thrift.to_json(thrift_type, pb) == text
    assert thrift.from_json(thrift_type, text) == pb
    assert thrift.encode(thrift_type, thrift.decode(thrift_type, text, format="json"), format="json") == text


def test_thrift_matches_cli(thrift):
    if not CLI.exists():
        pytest.skip("target/release/optimus is not built")
    for _, thrift_type, stem in PAIRS:
        tbin = thrift_bytes(stem, "thrift-binary")
        out = subprocess.run(
            [CLI, "convert", "--thrift", THRIFT / "peers.thrift", "--type", thrift_type,
             "--from", "thrift-binary", "--to", "json"],
            input=tbin, capture_output=True, check=True,
        ).stdout.decode()
        assert out == thrift.convert(thrift_type, tbin, from_="thrift-binary", to="json") + "\n"


def test_thrift_required_and_containers():
    s = optimus.Schema.from_thrift_source(
        "struct S {\n 1: required i32 id\n 2: list<string> tags\n 3: map<string, i64> counts\n"
        " 4: set<i32> nums\n 5: optional binary blob\n}\n"
    )
    d = {"id": 1, "tags": ["a", "b"], "counts": {"x": 1, "y": -2}, "nums": [3, 1], "blob": b"\x00\xff"}
    for fmt in ("thrift-binary", "thrift-compact", "json", "protobuf"):
        data = s.encode("S", d, format=fmt)
        assert s.decode("S", data, format=fmt) == d
    with pytest.raises(optimus.EncodeError, match="id"):
        s.encode("S", {"tags": []}, format="thrift-binary")
    with pytest.raises(optimus.DecodeError) as e:
        s.decode("S", b"\x00", format="thrift-binary")  # a struct with nothing: `id` is required
    assert e.value.path.startswith("schema.S")


# ------------------------------------------------------------------ protobuf text format


@pytest.mark.parametrize("proto_type,thrift_type,stem", PAIRS)
def test_text_round_trip(peers, proto_type, thrift_type, stem):
    data = workload(f"{stem}.bin")
    text = peers.convert(proto_type, data, from_="protobuf", to="text")
    assert isinstance(text, str)
    assert peers.convert(proto_type, text, from_="text", to="protobuf") == data
    assert peers.convert(proto_type, text.encode(), from_="text", to="protobuf") == data
    d = peers.decode(proto_type, data)
    assert peers.decode(proto_type, text, format="text") == d
    assert peers.encode(proto_type, d, format="text") == text
    assert peers.convert(proto_type, text, from_="text", to="dict") == d
    assert peers.convert(proto_type, d, from_="dict", to="text") == text


def test_text_matches_cli(peers):
    if not CLI.exists():
        pytest.skip("target/release/optimus is not built")
    for proto_type, _, stem in PAIRS:
        data = workload(f"{stem}.bin")
        out = subprocess.run(
            [CLI, "convert", "--proto", TESTDATA / "peers.proto", "-I", TESTDATA, "--type", proto_type,
             "--from", "protobuf", "--to", "text"],
            input=data, capture_output=True, check=True,
        ).stdout.decode()
        assert out == peers.convert(proto_type, data, from_="protobuf", to="text")


def test_text_of_a_thrift_struct(thrift):
    tbin = thrift_bytes("mixed", "thrift-binary")
    text = thrift.convert("Mixed", tbin, from_="thrift-binary", to="text")
    assert "retry_: true" in text
    assert thrift.convert("Mixed", text, from_="text", to="thrift-binary") == tbin


def test_json_formats_unchanged(peers):
    data = workload("mixed.bin")
    assert peers.convert("bench.Mixed", data) == peers.to_json("bench.Mixed", data)
    assert peers.convert("bench.Mixed", data, to="json", proto_names=True) == peers.to_json(
        "bench.Mixed", data, proto_names=True
    )
    assert peers.decode("bench.Mixed", peers.to_json("bench.Mixed", data), format="json") == peers.decode(
        "bench.Mixed", data
    )


# ------------------------------------------------------------------ converters


@pytest.mark.parametrize("proto_type,thrift_type,stem", PAIRS)
def test_converter_proto_to_thrift(peers, thrift, proto_type, thrift_type, stem):
    data = workload(f"{stem}.bin")
    conv = optimus.Converter(peers, proto_type, thrift, thrift_type, map=THRIFT / f"{stem}.map.toml")
    assert conv.src_type == proto_type and conv.dst_type == f"peers.{thrift_type}"
    assert conv.convert(data, "protobuf", "thrift-binary") == thrift_bytes(stem, "thrift-binary")
    assert conv.convert(data, "protobuf", "thrift-compact") == thrift_bytes(stem, "thrift-compact")
    assert conv.convert(data) == thrift_bytes(stem, "thrift-binary")  # each side's own format
    assert conv.convert(data, "protobuf", "dict") == thrift.decode(
        thrift_type, thrift_bytes(stem, "thrift-binary"), format="thrift-binary"
    )
    text = peers.to_json(proto_type, data)
    assert conv.convert(text, "json", "thrift-compact") == thrift_bytes(stem, "thrift-compact")
    assert conv.convert(peers.decode(proto_type, data), "dict", "thrift-binary") == thrift_bytes(
        stem, "thrift-binary"
    )
    # and back, through the reversed map: the original protobuf bytes
    back = optimus.Converter(thrift, thrift_type, peers, proto_type, map=reversed_map(stem))
    assert back.convert(thrift_bytes(stem, "thrift-compact"), "thrift-compact", "protobuf") == data
    assert back.convert(thrift_bytes(stem, "thrift-binary")) == data


def test_converter_mixed_exact(peers, thrift):
    # the brief's case: bench.Mixed protobuf -> Apache Thrift's own binary bytes, the target
    # type found by the source's bare name, the map given as a str path
    conv = optimus.Converter(peers, "bench.Mixed", thrift, map=str(THRIFT / "mixed.map.toml"))
    assert conv.convert(workload("mixed.bin"), "protobuf", "thrift-binary") == (THRIFT / "mixed.tbin").read_bytes()
    assert "bench.Mixed -> peers.Mixed" in repr(conv)


def test_converter_batch(peers, thrift):
    conv = optimus.Converter(peers, "bench.Mixed", thrift, "Mixed", map=THRIFT / "mixed.map.toml")
    data = workload("mixed.bin")
    tbin = thrift_bytes("mixed", "thrift-binary")
    assert conv.convert_batch([data] * 5, "protobuf", "thrift-binary") == [tbin] * 5
    assert conv.convert_batch([], "protobuf", "thrift-binary") == []
    assert conv.convert_batch((d for d in [data, data])) == [tbin, tbin]
    jsons = conv.convert_batch([data, data], "protobuf", "json")
    assert all(isinstance(j, str) for j in jsons)
    assert thrift.convert("Mixed", jsons[0], from_="json", to="thrift-binary") == tbin


def test_converter_pickles(peers, thrift):
    conv = optimus.Converter(
        peers, "bench.Mixed", thrift, "Mixed", map=THRIFT / "mixed.map.toml",
        transform='[fields.note]\ndrop = true\n',
    )
    back = pickle.loads(pickle.dumps(conv))
    data = workload("mixed.bin")
    assert back.convert(data, "protobuf", "thrift-compact") == conv.convert(data, "protobuf", "thrift-compact")
    assert back.dst_schema.thrift and not back.src_schema.thrift


def test_identity_converter(thrift, peers):
    same = optimus.Converter(thrift, "Mixed")
    tbin = thrift_bytes("mixed", "thrift-binary")
    assert same.convert(tbin, "thrift-binary", "thrift-compact") == thrift_bytes("mixed", "thrift-compact")
    assert "identity" in repr(same)
    p = optimus.Converter(peers, "bench.Flat")
    assert p.convert(workload("flat.bin"), "protobuf", "protobuf") == workload("flat.bin")


def test_transforms(peers):
    data = workload("mixed.bin")
    src = peers.decode("bench.Mixed", data)
    conv = optimus.Converter(
        peers, "bench.Mixed",
        transform=(
            "[fields.note]\ndrop = true\n"
            '[fields."header.origin"]\nhash = "sha256"\n'
            "[fields.token]\nhash = \"sha256\"\n"
            "[fields.delta]\nscale = 3\n"
            "[fields.weight]\nscale = 0.5\n"
        ),
    )
    out = conv.convert(data, "protobuf", "dict")
    assert "note" not in out
    assert out["header"]["origin"] == hashlib.sha256(src["header"]["origin"].encode()).hexdigest()
    assert out["token"] == hashlib.sha256(src["token"]).digest()
    assert out["delta"] == src["delta"] * 3
    assert out["weight"] == src["weight"] * 0.5
    assert out["title"] == src["title"] and out["item"] == src["item"]
    # the same in bytes, and applied to many
    pb = conv.convert(data, "protobuf", "protobuf")
    assert peers.decode("bench.Mixed", pb) == out
    assert conv.convert_batch([data, data], "protobuf", "protobuf") == [pb, pb]


def test_transform_with_map_across_schemas(peers, thrift, tmp_path):
    t = tmp_path / "t.toml"
    t.write_text('[fields.title]\nhash = "sha256"\n[fields."item.price"]\nscale = 100\n')
    conv = optimus.Converter(peers, "bench.Mixed", thrift, "Mixed", map=THRIFT / "mixed.map.toml", transform=t)
    src = peers.decode("bench.Mixed", workload("mixed.bin"))
    out = conv.convert(workload("mixed.bin"), "protobuf", "dict")
    assert out["title"] == hashlib.sha256(src["title"].encode()).hexdigest()
    assert out["item"]["price"] == pytest.approx(src["item"]["price"] * 100)
    assert out["header"]["retry_"] == src["header"]["retry"]


def test_scale_to_integer_rounds():
    s = optimus.Schema.from_source(
        'syntax = "proto3"; message A { int64 latency_ns = 1; } message B { int64 latency_us = 1; }'
    )
    conv = optimus.Converter(
        s, "A", s, "B", transform='[fields.latency_ns]\nrename = "latency_us"\nscale = 0.001\n'
    )
    assert conv.convert({"latency_ns": 2500}, "dict", "dict") == {"latency_us": 3}


# ------------------------------------------------------------------ errors


def test_format_errors(peers, thrift):
    data = workload("mixed.bin")
    with pytest.raises(ValueError, match="unknown format"):
        peers.convert("bench.Mixed", data, from_="xml")
    with pytest.raises(ValueError, match="unknown format"):
        peers.decode("bench.Mixed", data, format="avro")
    with pytest.raises(ValueError, match="needs a Thrift schema"):
        peers.decode("bench.Mixed", data, format="thrift-binary")
    with pytest.raises(ValueError, match="needs a Thrift schema"):
        peers.convert("bench.Mixed", data, to="thrift-compact")
    with pytest.raises(ValueError, match="dict"):
        peers.decode("bench.Mixed", data, format="dict")
    with pytest.raises(ValueError, match="dict"):
        peers.encode("bench.Mixed", {}, format="dict")
    with pytest.raises(TypeError, match="bytes"):
        peers.decode("bench.Mixed", "not bytes")
    with pytest.raises(TypeError, match="dict"):
        peers.convert("bench.Mixed", data, from_="dict")


def test_thrift_decode_errors(thrift):
    tbin = thrift_bytes("mixed", "thrift-binary")
    with pytest.raises(optimus.DecodeError) as e:
        thrift.decode("Mixed", tbin[:-5], format="thrift-binary")
    assert e.value.path.startswith("peers.Mixed")
    assert 0 < e.value.offset <= len(tbin)
    assert str(e.value).startswith(e.value.path + " at byte ")
    assert isinstance(e.value, optimus.OptimusError)
    with pytest.raises(optimus.DecodeError) as e:
        thrift.convert("Mixed", tbin + b"\x00", from_="thrift-binary", to="thrift-compact")
    assert "trailing" in str(e.value)
    with pytest.raises(optimus.DecodeError):
        thrift.convert("Mixed", thrift_bytes("mixed", "thrift-compact")[:-4], from_="thrift-compact", to="json")
    with pytest.raises(optimus.DecodeError) as e:
        thrift.decode("Mixed", '{"id": "x"}', format="json")
    assert e.value.path.startswith("peers.Mixed")


def test_text_and_json_input_errors(peers):
    with pytest.raises(optimus.DecodeError) as e:
        peers.decode("bench.Mixed", "id: 1\nnope: 2\n", format="text")
    assert e.value.path.startswith("bench.Mixed") and e.value.offset == 6
    with pytest.raises(optimus.DecodeError) as e:
        peers.decode("bench.Mixed", b'{"title": "\xff"}', format="json")
    assert e.value.offset == 11 and "UTF-8" in str(e.value)
    with pytest.raises(optimus.DecodeError):
        peers.convert("bench.Mixed", "{", from_="json", to="text")


def test_thrift_schema_errors(tmp_path):
    with pytest.raises(optimus.SchemaError, match=r"^api\.thrift:2: "):
        optimus.Schema.from_thrift_source("struct A {\n 1: i32 = x\n}\n", name="api.thrift")
    with pytest.raises(optimus.SchemaError, match="nope.thrift"):
        optimus.Schema.from_thrift([tmp_path / "nope.thrift"])
    with pytest.raises(optimus.SchemaError):
        optimus.Schema.from_thrift_source("struct A { 1: Missing m }")


def test_converter_compile_errors(peers, thrift, tmp_path):
    # no map: `retry` has no field of its name in peers.thrift's MixedHeader
    with pytest.raises(optimus.SchemaError) as e:
        optimus.Converter(peers, "bench.Mixed", thrift, "Mixed")
    assert e.value.path == "Mixed.header"
    assert "retry" in str(e.value)
    with pytest.raises(optimus.SchemaError, match="no_such"):
        optimus.Converter(peers, "bench.Mixed", transform="[fields.no_such]\ndrop = true\n")
    with pytest.raises(optimus.SchemaError, match="transform"):
        optimus.Converter(peers, "bench.Mixed", transform="[fields.note]\ndrop = = true\n")
    with pytest.raises(optimus.SchemaError):
        optimus.Converter(peers, "bench.Mixed", transform='[fields.id]\nhash = "sha256"\n')
    with pytest.raises(FileNotFoundError):
        optimus.Converter(peers, "bench.Mixed", thrift, map=tmp_path / "missing.toml")
    with pytest.raises(FileNotFoundError):
        optimus.Converter(peers, "bench.Mixed", thrift, map="missing.toml")
    with pytest.raises(ValueError, match="dst_schema"):
        optimus.Converter(peers, "bench.Mixed", map='[fields]\nnote = "title"\n')
    with pytest.raises(KeyError):
        optimus.Converter(peers, "bench.Nope")
    with pytest.raises(KeyError):
        optimus.Converter(peers, "bench.Mixed", thrift, "Nope", map=THRIFT / "mixed.map.toml")
    with pytest.raises(TypeError):
        optimus.Converter(peers, "bench.Mixed", transform=42)


def test_converter_value_errors(peers):
    s = optimus.Schema.from_source(
        'syntax = "proto3"; message Item { int64 qty = 1; } '
        "message A { repeated Item items = 1; bytes raw = 2; } "
        "message B { repeated Item2 items = 1; string raw = 2; } message Item2 { int32 qty = 1; }"
    )
    conv = optimus.Converter(s, "A", s, "B")
    ok = s.encode("A", {"items": [{"qty": 1}, {"qty": 2}]})
    assert conv.convert(ok, "protobuf", "dict") == {"items": [{"qty": 1}, {"qty": 2}]}
    bad = s.encode("A", {"items": [{"qty": 1}, {"qty": 2}, {"qty": 30000000000}]})
    with pytest.raises(optimus.EncodeError) as e:
        conv.convert(bad, "protobuf", "json")
    assert e.value.path == "A.items[2].qty"
    assert str(e.value).startswith("A.items[2].qty: 30000000000")
    with pytest.raises(optimus.EncodeError) as e:
        conv.convert({"raw": b"\xff"}, "dict", "protobuf")
    assert e.value.path == "A.raw"
    # in a batch: the row of the first bad message
    with pytest.raises(optimus.EncodeError) as e:
        conv.convert_batch([ok, ok, bad], "protobuf", "protobuf")
    assert e.value.row == 2 and e.value.path == "A.items[2].qty"
    assert str(e.value).startswith("row 2: A.items[2].qty")


def test_converter_format_errors(peers, thrift):
    conv = optimus.Converter(peers, "bench.Mixed", thrift, map=THRIFT / "mixed.map.toml")
    data = workload("mixed.bin")
    with pytest.raises(ValueError, match="needs a Thrift schema"):
        conv.convert(data, "thrift-binary", "protobuf")
    with pytest.raises(ValueError, match="unknown format"):
        conv.convert(data, "protobuf", "yaml")
    with pytest.raises(ValueError, match="serialized"):
        conv.convert_batch([data], "protobuf", "dict")
    with pytest.raises(TypeError):
        conv.convert_batch([data, 3], "protobuf", "thrift-binary")
    with pytest.raises(optimus.DecodeError) as e:
        conv.convert_batch([data, data[:-3]], "protobuf", "thrift-binary")
    assert e.value.row == 1 and e.value.path == "bench.Mixed.note" and e.value.offset == 273
    assert str(e.value).startswith("row 1: bench.Mixed.note at byte 273")
    with pytest.raises(optimus.DecodeError) as e:
        conv.convert(data[:-3], "protobuf", "thrift-binary")
    assert e.value.row is None and e.value.path == "bench.Mixed.note"


def test_thrift_nested_containers_as_dicts():
    # a container in a container is a wrapper message (`value`); a map whose keys protobuf
    # does not allow is a list of key/value entries (docs/thrift.md's lowering)
    s = optimus.Schema.from_thrift_source(
        "struct S {\n 1: list<list<i32>> ll\n 2: map<double, string> dm\n 3: set<string> ss\n}\n"
    )
    d = {"ll": [{"value": [1, 2]}, {"value": [3]}], "dm": [{"key": 1.5, "value": "a"}], "ss": ["x", "y"]}
    for fmt in ("thrift-binary", "thrift-compact"):
        data = s.encode("S", d, format=fmt)
        assert s.decode("S", data, format=fmt) == d
    assert s.encode("S", d, format="json") == '{"ll":[[1,2],[3]],"dm":[[1.5,"a"]],"ss":["x","y"]}'
