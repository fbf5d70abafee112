"""optimus.spark in a real local Spark (PySpark from PyPI, local[2]): DataFrames of serialized
messages decoded on the executors' Python workers through mapInArrow.

Expected rows come from Google protobuf's parsing (reference.to_row), typed as Spark's own
from_protobuf types them (unsigned integers as the signed type of their width, enums as
strings, timestamps in microseconds); rows come back from Spark as Arrow (the driver's
_collect_as_arrow), so every value is compared exactly. Where Spark's spark-protobuf jar is
available (OPTIMUS_SPARK_PROTOBUF_JAR, or the local Maven repository), Spark's from_protobuf
runs on the same DataFrame and must give the same rows.
"""

from __future__ import annotations

import glob
import math
import os
import random
import sys

import pyarrow as pa
import pytest

pyspark = pytest.importorskip("pyspark")

import optimus  # noqa: E402
from conftest import WORKLOADS, workload  # noqa: E402
from optimus import spark as ospark  # noqa: E402
from reference import normalize, to_row  # noqa: E402

SPARK_PROTOBUF_VERSION = pyspark.__version__
# PySpark 3.5 compares versions with distutils' LooseVersion on every Arrow call.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def spark_protobuf_jar():
    """Spark's spark-protobuf jar of PySpark's version, where one is at hand."""
    jar = os.environ.get("OPTIMUS_SPARK_PROTOBUF_JAR")
    if jar:
        return jar
    m2 = os.path.expanduser(
        f"~/.m2/repository/org/apache/spark/spark-protobuf_2.12/{SPARK_PROTOBUF_VERSION}/"
        f"spark-protobuf_2.12-{SPARK_PROTOBUF_VERSION}.jar"
    )
    found = glob.glob(m2)
    return found[0] if found else None


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    # The executors' Python workers must import optimus: the interpreter running the tests.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("optimus-python")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "768m")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        # Small Arrow batches, so a partition is decoded in several calls.
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "64")
    )
    jar = spark_protobuf_jar()
    if jar:
        builder = builder.config("spark.jars", jar)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def frame(spark, messages):
    """A DataFrame (id long, value binary) over two partitions, in order."""
    rows = [(i, None if m is None else bytearray(m)) for i, m in enumerate(messages)]
    return spark.createDataFrame(rows, "id long, value binary")


def collect(df):
    """The rows of `df` as one pyarrow Table, in id order."""
    table = pa.Table.from_batches(df._collect_as_arrow())
    return table.sort_by("id") if "id" in table.column_names else table


def expected_struct(schema, type_name, msgs, upcast=False, emit_defaults=False):
    """The struct column Spark should hold: Google protobuf's rows, in Spark's Arrow types."""
    fields = schema.arrow_schema(type_name, enums="string", time_unit="us")
    rows = [None if m is None else to_row(m, emit_defaults, time_unit="us") for m in msgs]
    struct = pa.array(rows, pa.struct(list(fields)))
    return struct.cast(ospark.arrow_type_for_spark(struct.type, upcast), safe=False)


def assert_same(actual, expected):
    actual = actual.combine_chunks() if isinstance(actual, pa.ChunkedArray) else actual
    got, want = normalize(actual.cast(expected.type).to_pylist()), normalize(expected.to_pylist())
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w and isinstance(g, dict) and isinstance(w, dict):
            print(f"first differing row {i}:", {k: (g.get(k), w[k]) for k in w if g.get(k) != w[k]})
            break
    assert got == want


def random_messages(pools, pool, type_name, n, seed=11):
    import msggen

    return msggen.MessageGenerator(pools[pool], random.Random(seed)).messages(type_name, n)


@pytest.mark.parametrize("type_name,file", WORKLOADS)
def test_workloads_and_random_messages(spark, peers, peers_pb2, pools, type_name, file):
    cls = getattr(peers_pb2, type_name.split(".")[1])
    msgs = [cls.FromString(workload(file))] + random_messages(pools, "peers", type_name, 300)
    msgs[7] = None  # a null binary is a null struct
    df = frame(spark, [None if m is None else m.SerializeToString() for m in msgs])
    out = collect(ospark.from_protobuf(df, "value", type_name, peers))
    assert out.column_names == ["id", "value"]
    assert out.column("id").to_pylist() == list(range(len(msgs)))
    assert_same(out.column("value"), expected_struct(peers, type_name, msgs))


def test_spark_types(spark, kitchen):
    df = frame(spark, [b""])
    t = ospark.from_protobuf(df, "value", "kitchen.Sink", kitchen).schema["value"].dataType
    types = {f.name: f.dataType.simpleString() for f in t.fields}
    assert types["u32"] == "int" and types["u64"] == "bigint" and types["f32"] == "int"
    assert types["color"] == "string" and types["colors"] == "array<string>"
    assert types["counts"] == "map<string,int>"
    assert types["by_id"] == "map<bigint,struct<x:int,y:int>>"
    assert types["at"] == "timestamp" and types["took"] == "interval day to second"
    assert types["wrapped"] == "bigint" and types["label"] == "string"
    opts = {"enums.as.ints": "true", "upcast.unsigned.ints": "true"}
    t = ospark.from_protobuf(df, "value", "kitchen.Sink", kitchen, opts).schema["value"].dataType
    types = {f.name: f.dataType.simpleString() for f in t.fields}
    assert types["u32"] == "bigint" and types["u64"] == "decimal(20,0)"
    assert types["color"] == "int"


@pytest.mark.parametrize("upcast", [False, True])
def test_kitchen_random_messages(spark, kitchen, pools, upcast):
    msgs = random_messages(pools, "kitchen", "kitchen.Sink", 300, seed=5)
    df = frame(spark, [m.SerializeToString() for m in msgs])
    opts = {"upcast.unsigned.ints": str(upcast).lower()}
    out = collect(ospark.from_protobuf(df, "value", "kitchen.Sink", kitchen, opts))
    assert_same(out.column("value"), expected_struct(kitchen, "kitchen.Sink", msgs, upcast))


def test_options(spark, kitchen, kitchen_pb2):
    msg = kitchen_pb2.Sink(color=kitchen_pb2.GREEN, s="", i32=0, u32=7)
    df = frame(spark, [msg.SerializeToString()])
    row = collect(ospark.from_protobuf(df, "value", "kitchen.Sink", kitchen)).column("value")[0]
    assert row["color"].as_py() == "GREEN" and row["i32"].as_py() is None
    opts = {"enums.as.ints": "true", "emit.default.values": "true"}
    row = collect(ospark.from_protobuf(df, "value", "kitchen.Sink", kitchen, opts)).column("value")[0]
    assert row["color"].as_py() == 2 and row["i32"].as_py() == 0 and row["s"].as_py() == ""
    assert row["u32"].as_py() == 7 and row["maybe"].as_py() is None  # presence: stays null
    with pytest.raises(ValueError, match="convert.any.fields.to.json"):
        ospark.from_protobuf(df, "value", "kitchen.Sink", kitchen, {"convert.any.fields.to.json": "true"})
    with pytest.raises(TypeError, match="not binary"):
        ospark.from_protobuf(df, "id", "kitchen.Sink", kitchen)


def test_timestamps_years_1_to_9999(spark, kitchen, kitchen_pb2):
    """Spark's TimestampType range, which int64 nanoseconds do not hold: decoded in micros."""
    msgs = [kitchen_pb2.Sink(at={"seconds": 253402300799, "nanos": 999999999}),
            kitchen_pb2.Sink(at={"seconds": -62135596800}, took={"seconds": -1, "nanos": -1500})]
    df = frame(spark, [m.SerializeToString() for m in msgs])
    # Through Arrow: PySpark's Row conversion cannot hold year 1 in local time.
    value = collect(ospark.from_protobuf(df, "value", "kitchen.Sink", kitchen)).column("value")
    at = value.combine_chunks().field("at").cast(pa.int64()).to_pylist()
    took = value.combine_chunks().field("took").cast(pa.int64()).to_pylist()
    assert at == [253402300799_999999, -62135596800_000000]
    assert took == [None, -1_000001]


def test_recursion_depth(spark, kitchen, kitchen_pb2):
    tree = kitchen_pb2.Tree(name="a", children=[kitchen_pb2.Tree(name="b", children=[kitchen_pb2.Tree(name="c")])])
    df = frame(spark, [tree.SerializeToString()])
    with pytest.raises(optimus.SchemaError):
        ospark.from_protobuf(df, "value", "kitchen.Tree", kitchen)
    out = ospark.from_protobuf(df, "value", "kitchen.Tree", kitchen, {"recursive.fields.max.depth": "2"})
    assert out.schema["value"].dataType.simpleString() == "struct<name:string,children:array<struct<name:string>>>"
    assert collect(out).column("value").to_pylist() == [{"name": "a", "children": [{"name": "b"}]}]


def test_failfast_names_partition_and_row(spark, peers):
    good = workload("mixed.bin")
    msgs = [good] * 300
    msgs[250] = good[:-3]
    df = frame(spark, msgs)
    with pytest.raises(Exception) as e:
        ospark.from_protobuf(df, "value", "bench.Mixed", peers).collect()
    text = str(e.value)
    assert "DecodeError" in text
    # Two partitions of 150 rows: row 250 is the second partition's row 100.
    assert "partition 1, row 100: bench.Mixed.note at byte 273: length 23 runs past the end" in text


def test_permissive(spark, peers):
    good = workload("mixed.bin")
    df = frame(spark, [good, good[:-3], None, b"\xff", good])
    out = collect(ospark.from_protobuf(df, "value", "bench.Mixed", peers, {"mode": "PERMISSIVE"}))
    assert out.column_names == ["id", "value", "_error"]
    assert out.column("_error").to_pylist() == [
        None,
        "bench.Mixed.note at byte 273: length 23 runs past the end (20 left)",
        None,
        "bench.Mixed at byte 0: truncated: needed 1 more bytes, 0 left",
        None,
    ]
    value = out.column("value")
    assert [v is None for v in value.to_pylist()] == [False, True, True, True, False]
    assert value[0]["id"].as_py() == 31063163332
    named = ospark.from_protobuf(df, "value", "bench.Mixed", peers, {"MODE": "permissive"},
                                 alias="m", error_column="why")
    assert named.columns == ["id", "m", "why"]


@pytest.mark.parametrize("pool,type_name", [
    ("peers", "bench.Flat"), ("peers", "bench.Mixed"), ("peers", "bench.Nested"),
    ("kitchen", "kitchen.Sink"),
])
def test_round_trip(spark, peers, kitchen, pools, pool, type_name):
    """bytes -> from_protobuf -> to_protobuf -> the same bytes (canonical input), through
    Spark's own struct values (signed integers for unsigned fields, microseconds)."""
    schema = {"peers": peers, "kitchen": kitchen}[pool]
    msgs = random_messages(pools, pool, type_name, 200, seed=3)
    # Timestamps and durations survive only to the microsecond in Spark (all of them: years 1
    # to 9999 fit in int64 microseconds).
    data = [schema.encode(type_name, _micros(schema.decode(type_name, m.SerializeToString())))
            for m in msgs]
    data[4] = None
    decoded = ospark.from_protobuf(frame(spark, data), "value", type_name, schema)
    back = collect(ospark.to_protobuf(decoded, "value", type_name, schema, alias="bytes"))
    assert back.column_names == ["id", "bytes"]
    assert back.column("bytes").to_pylist() == data


def _micros(d):
    """A decoded message with the nanoseconds of its Timestamp and Duration cut to micros."""
    for k in ("at", "took"):
        if k in d:
            n = d[k].get("nanos", 0)
            d[k]["nanos"] = n - int(math.fmod(n, 1000))  # toward zero, as Spark and optimus
    return d


def test_to_protobuf_hand_built_struct(spark, peers, peers_pb2):
    df = spark.createDataFrame(
        [(1, (5, "abc", 2.5)), (2, None)],
        "id int, item struct<sku: bigint, title: string, price: double>",
    )
    out = collect(ospark.to_protobuf(df, "item", "bench.MixedItem", peers))
    want = peers_pb2.MixedItem(sku=5, title="abc", price=2.5).SerializeToString()
    assert out.column("item").to_pylist() == [want, None]


def test_schema_as_descriptor_bytes_and_file(spark, peers, tmp_path):
    data = workload("nested.bin")
    df = frame(spark, [data])
    want = collect(ospark.from_protobuf(df, "value", "bench.Nested", peers)).column("value")
    path = tmp_path / "peers.desc"
    path.write_bytes(peers.descriptor_set())
    for schema in (peers.descriptor_set(), str(path)):
        got = collect(ospark.from_protobuf(df, "value", "bench.Nested", schema)).column("value")
        assert got.equals(want)


@pytest.mark.parametrize("type_name,file", WORKLOADS)
def test_same_rows_as_sparks_from_protobuf(spark, peers, pools, type_name, file):
    """Spark's own from_protobuf (protobuf-java in the JVM) on the same DataFrame."""
    if spark_protobuf_jar() is None:
        pytest.skip(
            f"no spark-protobuf_2.12-{SPARK_PROTOBUF_VERSION}.jar: the Maven repository reachable "
            "here has none (set OPTIMUS_SPARK_PROTOBUF_JAR to one)"
        )
    from pyspark.sql.protobuf.functions import from_protobuf

    msgs = random_messages(pools, "peers", type_name, 200, seed=17)
    df = frame(spark, [m.SerializeToString() for m in msgs])
    theirs = df.select("id", from_protobuf("value", type_name,
                                           binaryDescriptorSet=peers.descriptor_set()).alias("value"))
    ours = ospark.from_protobuf(df, "value", type_name, peers)
    # peers.proto has no wrapper, Any or empty message fields (docs/python.md: the known
    # differences), so schemas and rows must be equal.
    assert theirs.schema == ours.schema
    assert collect(theirs).equals(collect(ours))

