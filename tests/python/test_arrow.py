"""Batches of messages decoded into pyarrow RecordBatches, against Google protobuf's parsing."""

from __future__ import annotations

import os
import random
import signal
import threading
import time

import pyarrow as pa
import pytest

import optimus
from conftest import WORKLOADS, workload
from reference import normalize, plain_rows, to_row


def expected_batch(msgs, schema, emit_defaults=False):
    rows = [to_row(m, emit_defaults) for m in msgs]
    return pa.RecordBatch.from_pylist(rows, schema=schema)


def assert_rows(batch, msgs, emit_defaults=False):
    want = expected_batch(msgs, batch.schema, emit_defaults)
    assert normalize(plain_rows(batch)) == normalize(plain_rows(want))


@pytest.mark.parametrize("type_name,file", WORKLOADS)
def test_workload_columns(peers, peers_pb2, type_name, file):
    data = workload(file)
    msg = getattr(peers_pb2, type_name.split(".")[1]).FromString(data)
    batch = peers.decode_batch(type_name, [data] * 3, enums="string")
    assert batch.num_rows == 3
    assert batch.equals(expected_batch([msg] * 3, batch.schema))
    assert batch.schema == peers.arrow_schema(type_name, enums="string")


def test_flat_types(peers):
    s = peers.arrow_schema("bench.Flat")
    assert s.field("i64_large").type == pa.int64()
    assert s.field("u64_a").type == pa.uint64()
    assert s.field("s32_a").type == pa.int32()
    assert s.field("ratio").type == pa.float32()
    assert s.field("payload").type == pa.binary()
    assert s.field("name").type == pa.string()
    assert s.field("flag_a").type == pa.bool_()


@pytest.mark.parametrize("pool,type_name", [
    ("peers", "bench.Flat"), ("peers", "bench.Mixed"), ("peers", "bench.Nested"),
    ("kitchen", "kitchen.Sink"),
])
@pytest.mark.parametrize("emit_defaults", [False, True])
def test_random_columns(pools, peers, kitchen, pool, type_name, emit_defaults):
    import msggen

    schema = {"peers": peers, "kitchen": kitchen}[pool]
    gen = msggen.MessageGenerator(pools[pool], random.Random(7))
    msgs = gen.messages(type_name, 200)
    data = [m.SerializeToString() for m in msgs]
    batch = schema.decode_batch(type_name, data, enums="string", emit_defaults=emit_defaults)
    assert_rows(batch, msgs, emit_defaults)
    # Dictionary-encoded enums hold the same strings; int enums the numbers.
    dict_batch = schema.decode_batch(type_name, data, emit_defaults=emit_defaults)
    for f, col in zip(dict_batch.schema, dict_batch.columns):
        if pa.types.is_dictionary(f.type):
            assert col.cast(pa.string()).equals(batch.column(f.name))


def test_kitchen_types(kitchen):
    s = kitchen.arrow_schema("kitchen.Sink")
    assert s.field("color").type == pa.dictionary(pa.int32(), pa.string())
    assert kitchen.arrow_schema("kitchen.Sink", enums="int").field("color").type == pa.int32()
    assert kitchen.arrow_schema("kitchen.Sink", enums="string").field("colors").type == pa.list_(pa.string())
    assert s.field("point").type == pa.struct([("x", pa.int32()), ("y", pa.int32())])
    assert s.field("ints").type == pa.list_(pa.int64())
    assert s.field("counts").type == pa.map_(pa.string(), pa.int32())
    assert s.field("by_id").type == pa.map_(pa.int64(), s.field("point").type)
    assert s.field("at").type == pa.timestamp("ns", tz="UTC")
    assert s.field("took").type == pa.duration("ns")
    assert s.field("wrapped").type == pa.int64()
    assert s.field("label").type == pa.string()


def test_kitchen_values(kitchen, kitchen_pb2):
    m = kitchen_pb2.Sink(color=kitchen_pb2.RED, colors=[1, 2, 9], maybe=0, number=3)
    m.at.seconds, m.at.nanos = 1_700_000_000, 5
    m.took.seconds = -2
    m.wrapped.value = 0
    data = [m.SerializeToString(), b""]
    b = kitchen.decode_batch("kitchen.Sink", data, enums="int")
    assert b.column("color").to_pylist() == [1, None]
    assert b.column("colors").to_pylist() == [[1, 2, 9], []]
    assert b.column("maybe").to_pylist() == [0, None]
    assert b.column("number").to_pylist() == [3, None]
    assert b.column("name").to_pylist() == [None, None]
    assert b.column("at").cast(pa.int64()).to_pylist() == [1_700_000_000_000_000_005, None]
    assert b.column("took").cast(pa.int64()).to_pylist() == [-2_000_000_000, None]
    assert b.column("wrapped").to_pylist() == [0, None]
    assert b.column("point").to_pylist() == [None, None]
    s = kitchen.decode_batch("kitchen.Sink", data, enums="string", emit_defaults=True)
    assert s.column("colors").to_pylist() == [["RED", "GREEN", "9"], []]
    assert s.column("color").to_pylist() == ["RED", "COLOR_UNSPECIFIED"]
    assert s.column("i32").to_pylist() == [0, 0]
    assert s.column("maybe").to_pylist() == [0, None]  # explicit presence stays null
    assert s.column("point").to_pylist() == [None, None]


def test_map_last_entry_wins(kitchen):
    # Two entries of key "a": the later value wins, as protobuf parsers keep it.
    entry = lambda k, v: b"\xb2\x01" + bytes([4 + len(k)]) + b"\x0a" + bytes([len(k)]) + k + b"\x10" + bytes([v])  # noqa: E731
    data = entry(b"a", 1) + entry(b"b", 2) + entry(b"a", 3)
    b = kitchen.decode_batch("kitchen.Sink", [data])
    assert b.column("counts").to_pylist() == [[("a", 3), ("b", 2)]]
    assert kitchen.decode("kitchen.Sink", data)["counts"] == {"a": 3, "b": 2}
    # Maps of a few entries and of many (keys compared, or hashed), the empty key as unset.
    for n in (5, 16, 17, 40):
        keys = [b"k%d" % (i % (n // 2 + 1)) if i % 7 else b"" for i in range(n)]
        data = b"".join(entry(k, i) for i, k in enumerate(keys))
        want = {}
        for i, k in enumerate(keys):
            want[k.decode()] = i
        got = kitchen.decode_batch("kitchen.Sink", [data]).column("counts").to_pylist()[0]
        assert got == list(want.items()), n
        assert kitchen.decode("kitchen.Sink", data)["counts"] == want


def test_inputs(peers):
    data = [workload("flat.bin"), workload("mixed.bin")[:0], workload("flat.bin")]
    from_list = peers.decode_batch("bench.Flat", data)
    assert from_list.num_rows == 3
    for arr in (pa.array(data, pa.binary()), pa.array(data, pa.large_binary()),
                pa.chunked_array([data[:1], data[1:]], pa.binary())):
        assert peers.decode_batch("bench.Flat", arr).equals(from_list)
    stream = bytearray()
    for d in data:
        n = len(d)
        while n >= 0x80:
            stream.append(n & 0x7F | 0x80)
            n >>= 7
        stream.append(n)
        stream += d
    assert peers.decode_batch("bench.Flat", bytes(stream)).equals(from_list)
    assert peers.decode_batch("bench.Flat", stream).equals(from_list)
    # A null in a binary array is a row of nulls.
    nulls = peers.decode_batch("bench.Flat", pa.array([data[0], None], pa.binary()))
    assert nulls.column("i32_tiny").to_pylist() == [60, None]
    assert peers.decode_batch("bench.Flat", []).num_rows == 0
    with pytest.raises(TypeError):
        peers.decode_batch("bench.Flat", pa.array([1, 2]))
    with pytest.raises(TypeError, match="messages must be bytes"):
        peers.decode_batch("bench.Flat", ["not bytes"])
    with pytest.raises(TypeError, match="messages must be bytes"):
        peers.decode_batch("bench.Flat", tuple(data) + (bytearray(data[0]),))
    # A bytes subclass is bytes; a tuple is a list.
    class Wire(bytes):
        pass

    assert peers.decode_batch("bench.Flat", (Wire(data[0]),) * 2).equals(peers.decode_batch("bench.Flat", [data[0]] * 2))


def test_recursion_depth(kitchen, kitchen_pb2):
    with pytest.raises(optimus.SchemaError, match="recursive"):
        kitchen.decode_batch("kitchen.Tree", [])
    t = kitchen_pb2.Tree(name="root", children=[kitchen_pb2.Tree(name="a", children=[kitchen_pb2.Tree(name="deep")])])
    one = kitchen.decode_batch("kitchen.Tree", [t.SerializeToString()], recursion_depth=1)
    assert one.schema.names == ["name"]
    two = kitchen.decode_batch("kitchen.Tree", [t.SerializeToString()], recursion_depth=2)
    assert two.schema.field("children").type == pa.list_(pa.struct([("name", pa.string())]))
    assert two.to_pylist() == [{"name": "root", "children": [{"name": "a"}]}]


def test_threads_share_a_schema(peers):
    """decode_batch releases the GIL: batches decoded on two threads at once agree."""
    data = [workload("nested.bin")] * 2000
    want = peers.decode_batch("bench.Nested", data)
    got = [None, None]

    def work(i):
        got[i] = peers.decode_batch("bench.Nested", data)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(g.equals(want) for g in got)


@pytest.mark.parametrize("pool,type_name", [
    ("peers", "bench.Flat"), ("peers", "bench.Mixed"), ("peers", "bench.Nested"),
    ("kitchen", "kitchen.Sink"),
])
@pytest.mark.parametrize("enums", ["dictionary", "string", "int"])
@pytest.mark.parametrize("emit_defaults", [False, True])
def test_round_trip_through_arrow(pools, peers, kitchen, pool, type_name, enums, emit_defaults):
    """bytes -> Arrow -> bytes is byte-identical for canonical input."""
    import msggen

    schema = {"peers": peers, "kitchen": kitchen}[pool]
    gen = msggen.MessageGenerator(pools[pool], random.Random(11))
    msgs = gen.messages(type_name, 200)
    if type_name == "kitchen.Sink":
        # Arrow holds Timestamps and Durations in int64 nanoseconds (years 1677-2262).
        lim = 2**63 // 1_000_000_000 - 1
        msgs = [m for m in msgs if all(abs(x.seconds) < lim for x in (m.at, m.took))]
    data = [m.SerializeToString(deterministic=True) for m in msgs]
    batch = schema.decode_batch(type_name, data, enums=enums, emit_defaults=emit_defaults)
    assert schema.encode_batch(type_name, batch) == data


def test_encode_batch_inputs(kitchen, kitchen_pb2):
    m = kitchen_pb2.Sink(i32=5, colors=[1, 2], counts={"a": 1}, label={"value": ""})
    m.by_id[3].x = 1
    m.at.seconds, m.at.nanos = -5, 7
    m.took.seconds, m.took.nanos = -3, -9
    data = [m.SerializeToString(deterministic=True), b""]
    batch = kitchen.decode_batch("kitchen.Sink", data, mode="permissive")
    assert kitchen.encode_batch("kitchen.Sink", batch) == data
    # Columns may come in any order and any subset; a built table works too.
    t = pa.RecordBatch.from_pydict({"colors": [["GREEN"], None], "i32": [None, 7]})
    got = kitchen.encode_batch("kitchen.Sink", t)
    assert [kitchen_pb2.Sink.FromString(b) for b in got] == [kitchen_pb2.Sink(colors=[2]), kitchen_pb2.Sink(i32=7)]
    with pytest.raises(optimus.EncodeError, match="no field"):
        kitchen.encode_batch("kitchen.Sink", pa.RecordBatch.from_pydict({"nope": [1]}))
    with pytest.raises(optimus.EncodeError, match="row 0: kitchen.Sink.i32"):
        kitchen.encode_batch("kitchen.Sink", pa.RecordBatch.from_pydict({"i32": ["x"]}))
    with pytest.raises(optimus.EncodeError, match="row 1: kitchen.Sink.i32: 4294967296 is out of range"):
        kitchen.encode_batch("kitchen.Sink", pa.RecordBatch.from_pydict({"i32": [1, 2**32]}))
    with pytest.raises(optimus.EncodeError, match="no enum value"):
        kitchen.encode_batch("kitchen.Sink", pa.RecordBatch.from_pydict({"color": ["BLUE"]}))


def test_threads_split_one_batch(kitchen, pools):
    """A large batch decoded on several threads equals the one-thread batch."""
    import msggen

    gen = msggen.MessageGenerator(pools["kitchen"], random.Random(5))
    data = [m.SerializeToString() for m in gen.messages("kitchen.Sink", 300)] * 14
    data[100] = data[100][:-1] + b"\xff"
    data[-7] = b"\xff"
    for enums in ("dictionary", "string"):
        one = kitchen.decode_batch("kitchen.Sink", data, enums=enums, mode="permissive", threads=1)
        for n in (2, None):
            many = kitchen.decode_batch("kitchen.Sink", data, enums=enums, mode="permissive", threads=n)
            # Compared as values: NaN is not equal to itself in RecordBatch.equals, and each
            # part has its own enum dictionary.
            assert many.schema == one.schema
            assert normalize(plain_rows(many)) == normalize(plain_rows(one))
    assert one.column("_error").null_count == len(data) - 2
    with pytest.raises(optimus.DecodeError) as e:
        kitchen.decode_batch("kitchen.Sink", data, threads=2)
    assert e.value.row == 100


def test_decode_table_keeps_each_threads_part_as_a_chunk(kitchen, pools):
    """decode_table: the rows decode_batch gives, as a Table of one chunk per thread's part
    (in row order, none copied into one batch); errors name the row across the parts."""
    import msggen

    gen = msggen.MessageGenerator(pools["kitchen"], random.Random(6))
    data = [m.SerializeToString() for m in gen.messages("kitchen.Sink", 300)] * 14
    data[3000] = b"\xff"
    for enums in ("dictionary", "string", "int"):
        one = kitchen.decode_batch("kitchen.Sink", data, enums=enums, mode="permissive", threads=1)
        # Two parts a thread, of at least 2048 rows a thread: 4200 rows make two threads' worth.
        for n, chunks in ((1, 1), (2, 4), (64, 4)):
            table = kitchen.decode_table("kitchen.Sink", data, enums=enums, mode="permissive", threads=n)
            assert isinstance(table, pa.Table)
            assert table.schema == one.schema
            assert table.num_rows == len(data)
            assert [b.num_rows for b in table.to_batches()] == [len(data) // chunks] * chunks
            assert normalize(plain_rows(table)) == normalize(plain_rows(one))
    with pytest.raises(optimus.DecodeError) as e:
        kitchen.decode_table("kitchen.Sink", data, threads=2)
    assert e.value.row == 3000
    # An item that is not bytes in a later part: the parts read before it are decoded and
    # dropped, then the error.
    for call in (kitchen.decode_table, kitchen.decode_batch):
        with pytest.raises(TypeError, match="messages must be bytes"):
            call("kitchen.Sink", data[:4000] + [7] + data[4000:], threads=2)
    empty = kitchen.decode_table("kitchen.Sink", [])
    assert empty.num_rows == 0 and empty.schema == kitchen.arrow_schema("kitchen.Sink")


def test_time_unit_microseconds(kitchen, kitchen_pb2):
    """time_unit="us": Timestamp and Duration in microseconds, years 1 to 9999 (nanoseconds
    hold 1677 to 2262 only); encode_batch reads timestamps and durations of any unit."""
    msgs = [
        kitchen_pb2.Sink(),
        kitchen_pb2.Sink(at={"seconds": 253402300799, "nanos": 999999999},
                         took={"seconds": -5, "nanos": -1500}),
        kitchen_pb2.Sink(at={"seconds": -62135596800}, took={"seconds": 315576000000}),
        kitchen_pb2.Sink(at={"seconds": 1700000000, "nanos": 123456789}),
    ]
    data = [m.SerializeToString() for m in msgs]
    us = kitchen.decode_batch("kitchen.Sink", data, enums="string", time_unit="us")
    assert us.schema == kitchen.arrow_schema("kitchen.Sink", enums="string", time_unit="us")
    assert us.schema.field("at").type == pa.timestamp("us", tz="UTC")
    assert us.schema.field("took").type == pa.duration("us")
    assert us.column("at").cast(pa.int64()).to_pylist() == [
        None, 253402300799_999999, -62135596800_000000, 1700000000_123456]
    assert us.column("took").cast(pa.int64()).to_pylist() == [None, -5_000001, 315576000000_000000, None]
    ns = kitchen.decode_batch("kitchen.Sink", data, enums="string")
    assert ns.column("at").cast(pa.int64()).to_pylist() == [None, None, None, 1700000000_123456789]
    assert us.drop_columns(["at", "took"]).equals(ns.drop_columns(["at", "took"]))
    back = [kitchen_pb2.Sink.FromString(b) for b in kitchen.encode_batch("kitchen.Sink", us)]
    assert back[1].at.nanos == 999999000 and back[1].took.nanos == -1000
    assert back[2].at.seconds == -62135596800 and back[2].took.seconds == 315576000000
    for unit in ("s", "ms", "us", "ns"):
        t = ns.set_column(ns.schema.get_field_index("at"), "at",
                          ns.column("at").cast(pa.timestamp(unit, tz="UTC"), safe=False))
        assert kitchen_pb2.Sink.FromString(kitchen.encode_batch("kitchen.Sink", t)[3]).at.seconds == 1700000000
    with pytest.raises(ValueError, match="time_unit"):
        kitchen.decode_batch("kitchen.Sink", data, time_unit="ms")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_decodes_on_threads_of_its_own(peers):
    """The parent's batch pool has no workers in a child made by fork: the child builds its
    own instead of handing its parts to threads that do not exist there (which hung)."""
    data = [workload("mixed.bin")] * 9000
    want = peers.decode_table("bench.Mixed", data, threads=2).to_pylist()
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only with the same rows
        ok = peers.decode_table("bench.Mixed", data, threads=2).to_pylist() == want
        os._exit(0 if ok else 1)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's decode did not finish")
        time.sleep(0.05)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
