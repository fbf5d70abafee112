"""protobuf -> Arrow: optimus against its Python peers and Spark, on the same data, in one run.

    python -m optimus.bench [--testdata DIR] [--count N] [--repeat R] [--spark-count N]
                            [--no-spark] [--workloads Flat,Mixed,Nested,Wide] [--json]

Workloads: the three Optimus Prime message classes (``DIR/peers.proto`` with ``flat.bin``,
``mixed.bin``, ``nested.bin``; one message each, repeated ``--count`` times) and ``Wide``, a
wide nested message defined here (40 fields: scalars, enums, a Timestamp, nested and repeated
messages, repeated scalars and strings, a map), as ``--count`` messages cycling through 512
seeded random ones. Every contender turns a Python list of serialized messages into a
``pyarrow.RecordBatch`` (enums as strings where it can):

  optimus      Schema.decode_batch(type, messages, threads=1)
  optimus x2   the same on two threads (threads=2): the two-core scaling of one call
  ptars        ptars (Rust, prost-reflect) HandlerPool(...).get_for_message(...)
               .list_to_record_batch(messages), enums as strings
  protarrow    Google protobuf parsing each message (its default runtime, upb), then
               protarrow.messages_to_record_batch
  protobuf     Google protobuf parsing each message, the rows built in Python and
               pyarrow.RecordBatch.from_pylist with optimus's schema

and, unless ``--no-spark``, in a local Spark (PySpark) over a cached DataFrame of
``--spark-count`` messages, written to Spark's ``noop`` sink, on ``local[1]`` and ``local[2]``:

  spark        Spark's own from_protobuf (protobuf-java), where the spark-protobuf jar of
               PySpark's version is at hand (OPTIMUS_SPARK_PROTOBUF_JAR or ~/.m2)
  optimus.spark  optimus.spark.from_protobuf (mapInArrow) on the same DataFrame

Each repeat times every contender once, in turn, so the ratios ``optimus / peer`` (and the
two-thread scaling ``optimus x2 / optimus``) are taken between measurements made close
together; the table gives messages/s (median of the repeats) and each ratio's min / median /
max over the repeats. A contender that is not installed is
reported as unavailable, with why. Needs ``protoc`` on PATH for the peers' Python classes.
The numbers depend on the machine: run it on a quiet one and say which.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pyarrow as pa

import optimus

WORKLOADS = [("Flat", "flat.bin"), ("Mixed", "mixed.bin"), ("Nested", "nested.bin")]
WIDE_DISTINCT = 512

WIDE_PROTO = """\
// A wide nested message for the Arrow benchmark (optimus.bench): 40 fields of every shape
// a data engineer's event record has.
syntax = "proto3";
package widebench;

import "google/protobuf/timestamp.proto";

enum Status { STATUS_UNSPECIFIED = 0; ACTIVE = 1; SUSPENDED = 2; DELETED = 3; }
enum Channel { CHANNEL_UNSPECIFIED = 0; WEB = 1; IOS = 2; ANDROID = 3; PARTNER = 4; }

message Address {
  string street = 1; string city = 2; string region = 3; string country = 4;
  string postcode = 5; double lat = 6; double lon = 7;
}
message Device {
  string id = 1; string model = 2; string os = 3; string os_version = 4;
  uint32 screen_w = 5; uint32 screen_h = 6; bool mobile = 7; string locale = 8;
}
message LineItem {
  int64 sku = 1; string title = 2; uint32 quantity = 3; double unit_price = 4;
  double discount = 5; repeated string tags = 6; Status status = 7;
}
message Wide {
  int64 id = 1; google.protobuf.Timestamp at = 2; Status status = 3; Channel channel = 4;
  string user_id = 5; string session_id = 6; string request_id = 7; string ip = 8;
  string user_agent = 9; string referrer = 10; string page = 11; string campaign = 12;
  int32 age = 13; int64 visits = 14; uint64 account = 15; sint64 balance_delta = 16;
  fixed64 trace_id = 17; fixed32 crc = 18; double score = 19; float ratio = 20;
  bool logged_in = 21; bool consent = 22; bool test = 23; bytes fingerprint = 24;
  Address billing = 25; Address shipping = 26; Device device = 27;
  repeated LineItem items = 28; repeated int64 experiments = 29; repeated string segments = 30;
  repeated double latencies_ms = 31; map<string, string> labels = 32;
  string currency = 33; double total = 34; double tax = 35; int32 coupon_count = 36;
  string country = 37; string language = 38; int64 previous_id = 39; uint32 flags = 40;
}
"""


def _text(rng: random.Random, lo: int, hi: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def wide_messages(pb2, n: int, seed: int = 52) -> List[bytes]:
    """``n`` seeded random Wide messages, serialized (Google protobuf)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        m = pb2.Wide(
            id=rng.getrandbits(40), status=rng.randint(0, 3), channel=rng.randint(0, 4),
            user_id=_text(rng, 8, 16), session_id=_text(rng, 16, 32), request_id=_text(rng, 32, 32),
            ip=f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}",
            user_agent=_text(rng, 40, 90), referrer=_text(rng, 0, 40), page=_text(rng, 5, 30),
            campaign=_text(rng, 0, 12), age=rng.randint(0, 99), visits=rng.getrandbits(20),
            account=rng.getrandbits(63), balance_delta=rng.randint(-10**9, 10**9),
            trace_id=rng.getrandbits(64), crc=rng.getrandbits(32), score=rng.random(),
            ratio=rng.random(), logged_in=rng.random() < 0.5, consent=rng.random() < 0.8,
            test=rng.random() < 0.05, fingerprint=rng.randbytes(16), currency="EUR",
            total=rng.uniform(1, 500), tax=rng.uniform(0, 50), coupon_count=rng.randint(0, 3),
            country=rng.choice(["DE", "FR", "US", "JP", "BR"]), language=_text(rng, 2, 5),
            previous_id=rng.getrandbits(40) if rng.random() < 0.5 else 0,
            flags=rng.getrandbits(12),
        )
        m.at.seconds = 1_700_000_000 + rng.randint(0, 10**8)
        m.at.nanos = rng.randint(0, 999_999) * 1000
        for addr in (m.billing, m.shipping) if rng.random() < 0.8 else (m.billing,):
            addr.street, addr.city = _text(rng, 8, 24), _text(rng, 4, 14)
            addr.region, addr.country = _text(rng, 2, 10), rng.choice(["DE", "FR", "US"])
            addr.postcode, addr.lat, addr.lon = _text(rng, 5, 5), rng.uniform(-90, 90), rng.uniform(-180, 180)
        d = m.device
        d.id, d.model, d.os = _text(rng, 16, 16), _text(rng, 4, 12), rng.choice(["ios", "android", "linux"])
        d.os_version, d.screen_w, d.screen_h = _text(rng, 3, 6), rng.randint(320, 3840), rng.randint(480, 2160)
        d.mobile, d.locale = rng.random() < 0.6, rng.choice(["en_US", "de_DE", "fr_FR"])
        for _ in range(rng.randint(0, 6)):
            it = m.items.add(sku=rng.getrandbits(30), title=_text(rng, 8, 40), quantity=rng.randint(1, 9),
                             unit_price=rng.uniform(1, 200), discount=rng.random() * 0.3,
                             status=rng.randint(0, 3))
            it.tags.extend(_text(rng, 3, 8) for _ in range(rng.randint(0, 3)))
        m.experiments.extend(rng.getrandbits(24) for _ in range(rng.randint(0, 8)))
        m.segments.extend(_text(rng, 4, 10) for _ in range(rng.randint(0, 5)))
        m.latencies_ms.extend(rng.uniform(0, 300) for _ in range(rng.randint(0, 10)))
        for _ in range(rng.randint(0, 4)):
            m.labels[_text(rng, 3, 8)] = _text(rng, 3, 16)
        out.append(m.SerializeToString())
    return out


# ------------------------------------------------------------------ the protobuf peer


def _python_row(msg) -> dict:
    """The row decode_batch gives (enums="string"), built in Python from a parsed message."""
    from google.protobuf.descriptor import FieldDescriptor as FD

    row = {}
    for f in msg.DESCRIPTOR.fields:
        v = getattr(msg, f.name)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            row[f.name] = [(k, _python_value(v[k], vf)) for k in v]
        elif f.label == FD.LABEL_REPEATED:
            row[f.name] = [_python_value(x, f) for x in v]
        elif f.message_type is not None:
            row[f.name] = _python_value(v, f) if msg.HasField(f.name) else None
        else:  # proto3 implicit presence: the workloads have no `optional` scalars
            row[f.name] = _python_value(v, f) if v != f.default_value else None
    return row


def _python_value(v, f):
    from google.protobuf.descriptor import FieldDescriptor as FD

    if f.type == FD.TYPE_ENUM:
        ev = f.enum_type.values_by_number.get(v)
        return ev.name if ev is not None else str(v)
    if f.message_type is not None:
        if f.message_type.full_name == "google.protobuf.Timestamp":
            return v.seconds * 1_000_000_000 + v.nanos
        return _python_row(v)
    return v


# ------------------------------------------------------------------ running


class Workload:
    """One message type, its serialized messages and what each contender needs."""

    def __init__(self, name: str, type_name: str, schema: optimus.Schema, cls, messages: List[bytes]):
        self.name, self.type_name, self.schema, self.cls = name, type_name, schema, cls
        self.messages = messages
        self.arrow_schema = schema.arrow_schema(type_name, enums="string")
        self.bytes_per_msg = sum(map(len, messages)) / len(messages)


def _contenders(w: Workload, notes: Dict[str, str]) -> Dict[str, Callable[[], object]]:
    """name -> a function converting all of ``w.messages`` into a RecordBatch."""
    out: Dict[str, Callable[[], object]] = {
        "optimus": lambda: w.schema.decode_batch(w.type_name, w.messages, enums="string", threads=1),
        "optimus x2": lambda: w.schema.decode_batch(w.type_name, w.messages, enums="string", threads=2),
    }
    try:
        import ptars

        pool = ptars.HandlerPool([w.cls.DESCRIPTOR.file], config=ptars.PtarsConfig(enum_repr="string"))
        handler = pool.get_for_message(w.cls.DESCRIPTOR)
        out["ptars"] = lambda: handler.list_to_record_batch(w.messages)
    except ImportError as e:
        notes["ptars"] = f"not installed ({e})"
    try:
        import protarrow

        config = protarrow.ProtarrowConfig(enum_type=pa.string())
        out["protarrow"] = lambda: protarrow.messages_to_record_batch(
            [w.cls.FromString(b) for b in w.messages], w.cls, config
        )
    except ImportError as e:
        notes["protarrow"] = f"not installed ({e})"
    out["protobuf"] = lambda: pa.RecordBatch.from_pylist(
        [_python_row(w.cls.FromString(b)) for b in w.messages], schema=w.arrow_schema
    )
    return out


def _check(w: Workload, contenders: Dict[str, Callable[[], object]]) -> None:
    """Every contender converts the same messages into the same number of rows, and the
    Python-built columns equal optimus's."""
    ours = contenders["optimus"]()
    for name, fn in contenders.items():
        batch = fn()
        if batch.num_rows != len(w.messages):
            raise AssertionError(f"{w.name}: {name} made {batch.num_rows} rows of {len(w.messages)}")
    if _sorted_maps(contenders["protobuf"]().to_pylist()) != _sorted_maps(ours.to_pylist()):
        raise AssertionError(f"{w.name}: optimus and Python protobuf columns differ")


def _sorted_maps(x):
    """Rows with map entries in key order (Google protobuf iterates maps in its own order)."""
    if isinstance(x, dict):
        return {k: _sorted_maps(v) for k, v in x.items()}
    if isinstance(x, list):
        items = [_sorted_maps(v) for v in x]
        if items and all(isinstance(i, tuple) for i in items):
            items.sort(key=repr)
        return items
    return x


def _summary(values: List[float]) -> dict:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def run_local(w: Workload, repeat: int, notes: Dict[str, str]) -> dict:
    contenders = _contenders(w, notes)
    _check(w, contenders)
    times: Dict[str, List[float]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, fn in contenders.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    n = len(w.messages)
    rates = {name: [n / t for t in ts] for name, ts in times.items()}
    ratios = {
        name: _summary([o / p for o, p in zip(rates["optimus"], rates[name])])
        for name in rates if name not in ("optimus", "optimus x2")
    }
    scaling = _summary([two / one for one, two in zip(rates["optimus"], rates["optimus x2"])])
    return {
        "rates": {k: _summary(v) for k, v in rates.items()},
        "ratios": ratios,
        "scaling_2_threads": scaling,
    }


# ------------------------------------------------------------------ Spark


def _spark_protobuf_jar() -> Optional[str]:
    import pyspark

    jar = os.environ.get("OPTIMUS_SPARK_PROTOBUF_JAR")
    if jar:
        return jar
    v = pyspark.__version__
    path = Path.home() / f".m2/repository/org/apache/spark/spark-protobuf_2.12/{v}/spark-protobuf_2.12-{v}.jar"
    return str(path) if path.exists() else None


def run_spark(workloads: List[Workload], count: int, repeat: int, notes: Dict[str, str]) -> dict:
    """Spark's from_protobuf and optimus.spark.from_protobuf on local[1] and local[2]."""
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import SparkSession
    except ImportError as e:
        notes["spark"] = notes["optimus.spark"] = f"pyspark not installed ({e})"
        return {}
    from optimus import spark as ospark

    jar = _spark_protobuf_jar()
    if jar is None:
        notes["spark"] = ("no spark-protobuf jar of PySpark's version (set OPTIMUS_SPARK_PROTOBUF_JAR; "
                          "the Maven repository reachable from the development machine has none)")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    results: dict = {}
    for cores in (1, 2):
        builder = (SparkSession.builder.master(f"local[{cores}]").appName("optimus-bench")
                   .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                   .config("spark.driver.memory", "2g").config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1")
                   .config("spark.sql.shuffle.partitions", str(cores)))
        if jar:
            builder = builder.config("spark.jars", jar)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        try:
            for w in workloads:
                msgs = [bytearray(w.messages[i % len(w.messages)]) for i in range(count)]
                df = spark.createDataFrame([(m,) for m in msgs], "value binary").repartition(2 * cores).cache()
                df.count()
                jobs = {"optimus.spark": lambda: ospark.from_protobuf(df, "value", w.type_name, w.schema)}
                if jar:
                    from pyspark.sql.protobuf.functions import from_protobuf

                    desc = w.schema.descriptor_set()
                    jobs["spark"] = lambda: df.select(
                        from_protobuf("value", w.type_name, binaryDescriptorSet=desc).alias("value"))
                times: Dict[str, List[float]] = {k: [] for k in jobs}
                for name, job in jobs.items():  # warm-up: JIT, Python workers
                    job().write.format("noop").mode("overwrite").save()
                for _ in range(repeat):
                    for name, job in jobs.items():
                        t = time.perf_counter()
                        job().write.format("noop").mode("overwrite").save()
                        times[name].append(time.perf_counter() - t)
                df.unpersist()
                for name, ts in times.items():
                    results.setdefault(w.name, {})[f"{name} local[{cores}]"] = _summary([count / t for t in ts])
        finally:
            spark.stop()
    return results


# ------------------------------------------------------------------ main


def _find_testdata(given: Optional[str]) -> Path:
    if given:
        return Path(given)
    for d in [Path.cwd(), *Path.cwd().parents]:
        if (d / "testdata" / "peers.proto").exists():
            return d / "testdata"
    raise SystemExit("error: no testdata/peers.proto here or above: pass --testdata DIR")


def load_workloads(testdata: Path, count: int, tmp: str) -> List[Workload]:
    wide = Path(tmp) / "widebench.proto"
    wide.write_text(WIDE_PROTO)
    subprocess.run(["protoc", f"-I{testdata}", f"--python_out={tmp}", "peers.proto"], check=True)
    subprocess.run(["protoc", f"-I{tmp}", f"--python_out={tmp}", "widebench.proto"], check=True)
    sys.path.insert(0, tmp)
    peers_pb2 = importlib.import_module("peers_pb2")
    wide_pb2 = importlib.import_module("widebench_pb2")
    peers = optimus.Schema.from_proto([testdata / "peers.proto"], include=[testdata])
    out = []
    for name, file in WORKLOADS:
        data = (testdata / file).read_bytes()
        out.append(Workload(name, f"bench.{name}", peers, getattr(peers_pb2, name), [data] * count))
    distinct = wide_messages(wide_pb2, min(WIDE_DISTINCT, count))
    msgs = [distinct[i % len(distinct)] for i in range(count)]
    schema = optimus.Schema.from_source(WIDE_PROTO)
    out.append(Workload("Wide", "widebench.Wide", schema, wide_pb2.Wide, msgs))
    return out


def _fmt_rate(s: dict) -> str:
    return f"{s['median']:,.0f}"


def _fmt_ratio(s: dict) -> str:
    return f"{s['median']:.2f}x ({s['min']:.2f}-{s['max']:.2f})"


def main(argv: Optional[List[str]] = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m optimus.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--testdata", help="folder with peers.proto and flat/mixed/nested.bin "
                    "(default: testdata/ in the current folder or one above it)")
    ap.add_argument("--count", type=int, default=20000, help="messages per batch (default 20000)")
    ap.add_argument("--repeat", type=int, default=7, help="timed repeats per contender (default 7)")
    ap.add_argument("--spark-count", type=int, default=200000,
                    help="messages in the Spark DataFrame (default 200000)")
    ap.add_argument("--no-spark", action="store_true", help="leave out the Spark measurements")
    ap.add_argument("--workloads", default="Flat,Mixed,Nested,Wide",
                    help="comma-separated workloads to run (default: all four)")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    args = ap.parse_args(argv)

    from google.protobuf.internal import api_implementation

    notes: Dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workloads = load_workloads(_find_testdata(args.testdata), args.count, tmp)
        wanted = args.workloads.split(",")
        unknown = set(wanted) - {w.name for w in workloads}
        if unknown:
            raise SystemExit(f"error: no workload {', '.join(sorted(unknown))} (Flat, Mixed, Nested, Wide)")
        workloads = [w for w in workloads if w.name in wanted]
        local = {w.name: run_local(w, args.repeat, notes) for w in workloads}
        spark = {} if args.no_spark else run_spark(workloads, args.spark_count, max(1, args.repeat // 2), notes)
    doc = {
        "count": args.count,
        "repeat": args.repeat,
        "protobuf_runtime": api_implementation.Type(),
        "cpu_count": os.cpu_count(),
        "workloads": {w.name: {"type": w.type_name, "bytes_per_msg": round(w.bytes_per_msg, 1),
                               **local[w.name], "spark": spark.get(w.name, {})} for w in workloads},
        "unavailable": notes,
    }
    if args.json:
        print(json.dumps(doc, indent=2))
        return doc
    peers = ["optimus x2", "ptars", "protarrow", "protobuf"]
    print(f"{args.count} messages per batch, {args.repeat} repeats, protobuf runtime "
          f"{doc['protobuf_runtime']}; messages/s are medians, ratios optimus / peer as median "
          "(min-max)\n")
    print("| workload | bytes/msg | optimus msg/s | " + " | ".join(f"{p} msg/s" for p in peers)
          + " | " + " | ".join(f"vs {p}" for p in peers[1:]) + " | 2 threads / 1 |")
    print("|---|---:|---:|" + "---:|" * (2 * len(peers)))
    for w in workloads:
        r = local[w.name]
        rates = [_fmt_rate(r["rates"][p]) if p in r["rates"] else "n/a" for p in peers]
        ratios = [_fmt_ratio(r["ratios"][p]) if p in r["ratios"] else "n/a" for p in peers[1:]]
        scale = _fmt_ratio(r["scaling_2_threads"])
        print(f"| {w.name} | {w.bytes_per_msg:.0f} | {_fmt_rate(r['rates']['optimus'])} | "
              + " | ".join(rates) + " | " + " | ".join(ratios) + f" | {scale} |")
    if spark:
        cols = sorted({k for v in spark.values() for k in v})
        print(f"\nSpark, {args.spark_count} messages, noop sink, messages/s median (min-max)\n")
        print("| workload | " + " | ".join(cols) + " |")
        print("|---|" + "---:|" * len(cols))
        for name, v in spark.items():
            print(f"| {name} | " + " | ".join(
                f"{v[c]['median']:,.0f} ({v[c]['min']:,.0f}-{v[c]['max']:,.0f})" if c in v else "n/a"
                for c in cols) + " |")
    for k, why in notes.items():
        print(f"\n{k}: unavailable: {why}")
    return doc


if __name__ == "__main__":
    main()
