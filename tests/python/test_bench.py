"""python -m optimus.bench runs end to end (tiny counts; no timing is checked): every
contender converts the same messages, and the columns Python protobuf builds equal optimus's."""

from __future__ import annotations

import pytest

from conftest import TESTDATA

bench = pytest.importorskip("optimus.bench")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_bench_runs_every_contender(capsys):
    doc = bench.main(["--testdata", str(TESTDATA), "--count", "300", "--repeat", "1",
                      "--no-spark", "--json"])
    assert set(doc["workloads"]) == {"Flat", "Mixed", "Nested", "Wide"}
    for name, w in doc["workloads"].items():
        assert set(w["rates"]) == {"optimus", "optimus x2", "ptars", "protarrow", "protobuf"}, name
        assert set(w["ratios"]) == {"ptars", "protarrow", "protobuf"}, name
        assert w["scaling_2_threads"]["min"] > 0
        assert all(r["min"] > 0 for r in w["rates"].values())
        assert w["spark"] == {}
    assert doc["unavailable"] == {}
    assert '"Wide"' in capsys.readouterr().out


def test_bench_spark_part(capsys):
    doc = bench.main(["--testdata", str(TESTDATA), "--count", "100", "--repeat", "1",
                      "--spark-count", "500", "--workloads", "Nested", "--json"])
    assert set(doc["workloads"]) == {"Nested"}
    spark = {"optimus.spark local[1]", "optimus.spark local[2]"}
    if "spark" not in doc["unavailable"]:
        spark |= {"spark local[1]", "spark local[2]"}
    assert set(doc["workloads"]["Nested"]["spark"]) == spark
    assert set(doc["unavailable"]) <= {"spark"}


def test_wide_messages_are_seeded(tmp_path):
    w = bench.load_workloads(TESTDATA, 40, str(tmp_path))[-1]
    assert w.name == "Wide" and len(w.messages) == 40 and len(set(w.messages)) == 40
    again = bench.wide_messages(__import__(w.cls.__module__), 40)
    assert again == w.messages
