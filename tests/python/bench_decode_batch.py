"""decode_batch against Google's Python protobuf building the same columns, on the workloads.

    .venv/bin/python tests/python/bench_decode_batch.py [--count N] [--repeat R]

For each Optimus Prime workload (testdata/flat.bin, mixed.bin, nested.bin: one message each,
repeated --count times) it times, best of --repeat, on one thread:
  optimus       Schema.decode_batch(type, list_of_bytes, threads=1) -> pyarrow.RecordBatch
  optimus-arrow the same from a pyarrow binary array
  optimus x2    the list on two threads (threads=2), and its speed-up over one
  protobuf      Google protobuf (its default runtime, upb) parsing each message, then the
                rows built in Python and pyarrow.RecordBatch.from_pylist with the same schema
and prints messages/s. Needs protoc (classes are generated into a temporary directory).
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

import optimus

REPO = Path(__file__).resolve().parents[2]
TESTDATA = REPO / "testdata"
WORKLOADS = [("Flat", "flat.bin"), ("Mixed", "mixed.bin"), ("Nested", "nested.bin")]


def row(msg) -> dict:
    """The row decode_batch gives (proto3 unset scalars as null), built in Python."""
    out = {}
    for f in msg.DESCRIPTOR.fields:
        if f.message_type is not None:
            out[f.name] = row(getattr(msg, f.name)) if msg.HasField(f.name) else None
        else:
            v = getattr(msg, f.name)
            out[f.name] = v if v != f.default_value else None
    return out


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    tmp = tempfile.mkdtemp()
    subprocess.run(["protoc", f"-I{TESTDATA}", f"--python_out={tmp}", "peers.proto"], check=True)
    sys.path.insert(0, tmp)
    pb2 = importlib.import_module("peers_pb2")
    from google.protobuf.internal import api_implementation

    schema = optimus.Schema.from_proto([TESTDATA / "peers.proto"], include=[TESTDATA])
    print(f"{args.count} messages per batch, best of {args.repeat}, protobuf runtime "
          f"{api_implementation.Type()}")
    print("| workload | bytes/msg | optimus decode_batch (list) | optimus (binary array) "
          "| protobuf + Python columns | speed-up | optimus, 2 threads | 2 threads / 1 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, file in WORKLOADS:
        data = (TESTDATA / file).read_bytes()
        msgs = [data] * args.count
        arr = pa.array(msgs, pa.binary())
        type_name = f"bench.{name}"
        cls = getattr(pb2, name)
        arrow_schema = schema.arrow_schema(type_name, enums="string")
        ours = schema.decode_batch(type_name, msgs, enums="string")

        def theirs():
            return pa.RecordBatch.from_pylist([row(cls.FromString(b)) for b in msgs], schema=arrow_schema)

        assert theirs().equals(ours), name
        t_list = best(lambda: schema.decode_batch(type_name, msgs, enums="string", threads=1), args.repeat)
        t_arr = best(lambda: schema.decode_batch(type_name, arr, enums="string", threads=1), args.repeat)
        t_two = best(lambda: schema.decode_batch(type_name, msgs, enums="string", threads=2), args.repeat)
        t_pb = best(theirs, max(1, args.repeat // 2))
        rate = lambda t: f"{args.count / t:,.0f}"  # noqa: E731
        print(f"| {name} | {len(data)} | {rate(t_list)} | {rate(t_arr)} | {rate(t_pb)} "
              f"| {t_pb / t_list:.1f}x | {rate(t_two)} | {t_list / t_two:.2f}x |")


if __name__ == "__main__":
    main()
