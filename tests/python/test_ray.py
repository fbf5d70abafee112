"""optimus.ray end to end on a local Ray (ray.init with two CPUs): Datasets of serialized
messages decoded by map_batches tasks in Ray's worker processes, against Google protobuf's
parsing (reference.to_row)."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

ray = pytest.importorskip("ray")
# Ray Data's context warns of its own deprecated settings when it is created.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

import optimus  # noqa: E402
from conftest import WORKLOADS, workload  # noqa: E402
from optimus import ray as oray  # noqa: E402
from reference import normalize, to_row  # noqa: E402


@pytest.fixture(scope="module")
def ray_local():
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=150 * 1024 * 1024,
        configure_logging=False,
    )
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    yield
    ray.shutdown()


def dataset(messages, blocks=4):
    ids = pa.array(range(len(messages)), pa.int64())
    values = pa.array(messages, pa.binary())
    return ray.data.from_arrow(pa.table({"id": ids, "value": values})).repartition(blocks)


def collect(ds):
    tables = [t for t in ray.get(ds.to_arrow_refs()) if t.num_rows]
    return pa.concat_tables(tables).combine_chunks().sort_by("id")


def random_messages(pools, pool, type_name, n, seed):
    import msggen

    return msggen.MessageGenerator(pools[pool], random.Random(seed)).messages(type_name, n)


def expected(schema, type_name, msgs, enums="string"):
    fields = schema.arrow_schema(type_name, enums="string")
    rows = [None if m is None else to_row(m) for m in msgs]
    return pa.array(rows, pa.struct(list(fields)))


def assert_same(actual, want):
    actual = actual.combine_chunks() if isinstance(actual, pa.ChunkedArray) else actual
    assert actual.type == want.type
    assert normalize(actual.to_pylist()) == normalize(want.to_pylist())


@pytest.mark.parametrize("type_name,file", WORKLOADS)
def test_workloads_and_random_messages(ray_local, peers, peers_pb2, pools, type_name, file):
    cls = getattr(peers_pb2, type_name.split(".")[1])
    msgs = [cls.FromString(workload(file))] + random_messages(pools, "peers", type_name, 300, 11)
    msgs[9] = None
    ds = dataset([None if m is None else m.SerializeToString() for m in msgs])
    out = collect(oray.from_protobuf(ds, "value", type_name, peers))
    assert out.column_names == ["id", "value"]
    assert out.column("id").to_pylist() == list(range(len(msgs)))
    assert_same(out.column("value"), expected(peers, type_name, msgs))


def test_kitchen_and_round_trip(ray_local, kitchen, pools):
    msgs = random_messages(pools, "kitchen", "kitchen.Sink", 300, 5)
    data = [m.SerializeToString() for m in msgs]
    decoded = oray.from_protobuf(dataset(data), "value", "kitchen.Sink", kitchen)
    out = collect(decoded)
    assert_same(out.column("value"), expected(kitchen, "kitchen.Sink", msgs))
    # Canonical bytes survive decode and encode (the timestamps past int64 nanoseconds aside).
    canonical = [kitchen.encode_batch("kitchen.Sink", kitchen.decode_batch("kitchen.Sink", [d]))[0]
                 for d in data]
    back = collect(oray.to_protobuf(decoded, "value", "kitchen.Sink", kitchen, alias="bytes"))
    assert back.column_names == ["id", "bytes"]
    assert back.column("bytes").to_pylist() == canonical


def test_options_and_permissive(ray_local, peers):
    good = workload("mixed.bin")
    ds = dataset([good, good[:-3], None, b"\xff", good], blocks=2)
    out = collect(oray.from_protobuf(ds, "value", "bench.Mixed", peers, {"mode": "PERMISSIVE"},
                                     alias="m", error_column="why"))
    assert out.column_names == ["id", "m", "why"]
    assert out.column("why").to_pylist() == [
        None,
        "bench.Mixed.note at byte 273: length 23 runs past the end (20 left)",
        None,
        "bench.Mixed at byte 0: truncated: needed 1 more bytes, 0 left",
        None,
    ]
    assert [v is None for v in out.column("m").to_pylist()] == [False, True, True, True, False]
    with pytest.raises(ValueError, match="unsupported option"):
        oray.from_protobuf(ds, "value", "bench.Mixed", peers, {"avroSchema": "x"})


def test_failfast_names_the_row(ray_local, peers):
    good = workload("flat.bin")
    msgs = [good] * 40
    msgs[30] = good[:-1]
    ds = ray.data.from_arrow(pa.table({"id": pa.array(range(40), pa.int64()),
                                       "value": pa.array(msgs, pa.binary())}))
    with pytest.raises(Exception) as e:
        oray.from_protobuf(ds, "value", "bench.Flat", peers).materialize()
    text = str(e.value)
    assert "DecodeError" in text and "row 30: bench.Flat" in text


def test_dictionary_enums_and_int_enums(ray_local, kitchen, kitchen_pb2):
    data = [kitchen_pb2.Sink(color=c).SerializeToString() for c in (1, 2, 0, 1)]
    ds = dataset(data, blocks=2)
    out = collect(oray.from_protobuf(ds, "value", "kitchen.Sink", kitchen, enums="dictionary"))
    colors = out.column("value").combine_chunks().field("color")
    assert pa.types.is_dictionary(colors.type)
    assert colors.to_pylist() == ["RED", "GREEN", None, "RED"]
    out = collect(oray.from_protobuf(ds, "value", "kitchen.Sink", kitchen, {"enums.as.ints": True}))
    assert out.column("value").combine_chunks().field("color").to_pylist() == [1, 2, None, 1]


def test_schema_travels_as_descriptor_set(ray_local, peers):
    """A Schema given as descriptor-set bytes: compiled on the driver, pickled to the tasks."""
    data = workload("nested.bin")
    out = collect(oray.from_protobuf(dataset([data] * 10), "value", "bench.Nested",
                                     peers.descriptor_set()))
    want = peers.decode_batch("bench.Nested", [data] * 10, enums="string")
    assert out.column("value").combine_chunks().equals(want.to_struct_array())
    with pytest.raises(optimus.SchemaError):
        oray.from_protobuf(dataset([data]), "value", "bench.Nested", b"\xff\xff")
