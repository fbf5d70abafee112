"""One large batch on one thread and on two: decode_batch (parts joined into one batch) and
decode_table (parts kept as the Table's chunks), on the workloads.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/python/bench_scaling.py [--count N] [--repeat R]
        [--input list|arrow]

For each Optimus Prime workload (testdata/flat.bin, mixed.bin, nested.bin: one message each,
copied --count times into a list of distinct bytes objects, or with --input arrow into a
pyarrow binary array), each repetition times, one after
the other, decode_batch(threads=1), decode_batch(threads=2) and decode_table(threads=2)
(enums as strings). It prints the milliseconds per call (median, min-max of the repetitions)
and each two-thread call's speed-up over the one-thread call of the same repetition (median,
min-max). Run it with nothing else on the machine: the second core is what is measured.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import pyarrow as pa

import optimus

REPO = Path(__file__).resolve().parents[2]
TESTDATA = REPO / "testdata"
WORKLOADS = [("Flat", "flat.bin"), ("Mixed", "mixed.bin"), ("Nested", "nested.bin")]


def spread(values: list[float], scale: float = 1.0, digits: int = 1) -> str:
    m, lo, hi = statistics.median(values), min(values), max(values)
    return f"{m * scale:.{digits}f} ({lo * scale:.{digits}f}-{hi * scale:.{digits}f})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--input", choices=("list", "arrow"), default="list")
    args = ap.parse_args()
    schema = optimus.Schema.from_proto([str(TESTDATA / "peers.proto")], include=[str(TESTDATA)])
    print(
        "| workload | decode_batch, 1 thread (ms) | decode_batch, 2 threads (ms) | 2 / 1 "
        "| decode_table, 2 threads (ms) | 2 / 1 |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name, file in WORKLOADS:
        one = (TESTDATA / file).read_bytes()
        msgs = [bytes(bytearray(one)) for _ in range(args.count)]
        if args.input == "arrow":
            msgs = pa.array(msgs, pa.binary())
        type_name = f"bench.{name}"
        calls = {
            "batch1": lambda: schema.decode_batch(type_name, msgs, enums="string", threads=1),
            "batch2": lambda: schema.decode_batch(type_name, msgs, enums="string", threads=2),
            "table2": lambda: schema.decode_table(type_name, msgs, enums="string", threads=2),
        }
        # The same rows every way, and a warm-up of each.
        rows = calls["batch1"]().to_pylist()
        assert calls["batch2"]().to_pylist() == rows
        table = calls["table2"]()
        assert table.column(0).num_chunks > 1 and table.to_pylist() == rows
        times: dict[str, list[float]] = {k: [] for k in calls}
        for _ in range(args.repeat):
            for key, call in calls.items():
                t = time.perf_counter()
                call()
                times[key].append(time.perf_counter() - t)
        gain = {k: [a / b for a, b in zip(times["batch1"], times[k])] for k in ("batch2", "table2")}
        print(
            f"| {name} | {spread(times['batch1'], 1e3)} | {spread(times['batch2'], 1e3)} "
            f"| {spread(gain['batch2'], digits=2)}x | {spread(times['table2'], 1e3)} "
            f"| {spread(gain['table2'], digits=2)}x |"
        )


if __name__ == "__main__":
    main()
