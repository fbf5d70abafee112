"""Cereal as Spark's serializer, in a real local Spark (PySpark's jars, local[2]).

The JVM side is jvm/spark (built by scripts/test's spark step): the serializer, the six jobs of
dev.optimus.cereal.spark.jobs.SparkJobs and the contract checks of SerializerChecks. Each job runs
under Java serialization, Kryo and Cereal: the digests must be identical, and equal to the one
computed without Spark where the job has one. Under Cereal the jobs' own records must be Cereal
frames (only Spark's Externalizable map statuses may go to Java serialization).
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sparkjobs  # noqa: E402

pyspark = pytest.importorskip("pyspark")

JOBS = ["wordcount", "terasort", "pagerank", "kmeans", "als", "bayes"]
SCALE = 1
# Spark's own objects that Cereal leaves to Java serialization (Externalizable map statuses).
# Singletons (None, Nil), Class objects and ClassTags are Cereal frames.
SPARK_JAVA_RECORDS = ("org.apache.spark.scheduler.",)


SERIALIZERS = ["java", "kryo", "cereal"]
_current = {}


def context(ser, extra=None):
    """The running SparkContext with serializer `ser` and settings `extra`, started if need be
    (one JVM serves them all; only one context runs at a time)."""
    key = (ser, tuple(sorted((extra or {}).items())))
    if _current.get("key") != key:
        if "sc" in _current:
            _current.pop("sc").stop()
        _current["sc"] = sparkjobs.start(ser, extra=extra)
        _current["key"] = key
    return _current["sc"]


@pytest.fixture(scope="module", autouse=True)
def stop_spark():
    yield
    if "sc" in _current:
        _current.pop("sc").stop()


_digests = {}


@pytest.mark.parametrize("ser,job", [(s, j) for s in SERIALIZERS for j in JOBS])
def test_job_same_result_under_each_serializer(ser, job):
    sc = context(ser)
    counts = sc._jvm.dev.optimus.cereal.spark.CerealSerializer
    counts.resetRecordCounts()
    digest = sparkjobs.run_job(sc, job, SCALE)
    assert "sha=" in digest
    expected = sparkjobs.jvm_jobs(sc).expected(job, SCALE)
    if expected is not None:
        assert digest == expected, f"{ser}: {job} differs from the result computed without Spark"
    if job == "terasort":
        assert "sorted=true" in digest
    cereal, java = counts.recordCounts()
    if ser == "cereal":
        assert cereal > 1000, f"only {cereal} Cereal records: is Cereal really the serializer?"
        classes = counts.javaRecordClasses()
        others = [c for c in classes.strip("{}").split(", ")
                  if c and not c.startswith(SPARK_JAVA_RECORDS)]
        assert not others, f"job records fell back to Java serialization: {classes}"
    else:
        assert cereal == 0 and java == 0, f"{ser}: Cereal was used"
    previous = _digests.setdefault(job, (ser, digest))
    assert digest == previous[1], f"{job}: {ser} gave {digest}, {previous[0]} gave {previous[1]}"


CHECKS = ["scalaAndSparkClasses", "streamsAndEnd", "relocation", "registrationRequired",
          "javaFallback", "corruptInput", "serializerIsSerializable", "directBuffers"]


def test_check_list_is_complete():
    sc = context("cereal")
    assert sc._jvm.dev.optimus.cereal.spark.SerializerChecks.names().split(",") == CHECKS


@pytest.mark.parametrize("check", CHECKS)
def test_serializer_contract(check):
    context("cereal")._jvm.dev.optimus.cereal.spark.SerializerChecks.run(check)


@pytest.mark.parametrize("job", ["pagerank", "als"])
def test_unregistered_user_classes(job):
    """Without classesToRegister, user classes travel by name in each record: same results."""
    sc = context("cereal", {"spark.cereal.classesToRegister": ""})
    assert sparkjobs.run_job(sc, job, SCALE) == _digests[job][1]


def test_registration_required_with_registered_classes():
    sc = context("cereal", {"spark.cereal.registrationRequired": "true"})
    digest = sparkjobs.run_job(sc, "bayes", SCALE)
    assert digest == sparkjobs.jvm_jobs(sc).expected("bayes", SCALE)
