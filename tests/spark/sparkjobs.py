"""Runs the JVM-side Spark jobs (jvm/spark: dev.optimus.cereal.spark.jobs.SparkJobs) in a real
local PySpark under Java serialization, Kryo and Cereal, and, with --bench, prints their S/D and
job times side by side.

    .venv/bin/python tests/spark/sparkjobs.py --bench [--scale 4] [--reps 3]

The jars come from `mvn -f jvm/spark/pom.xml package` (scripts/test's spark step builds them).
"""
import argparse
import glob
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERIALIZERS = {
    "java": "org.apache.spark.serializer.JavaSerializer",
    "kryo": "org.apache.spark.serializer.KryoSerializer",
    "cereal": "dev.optimus.cereal.spark.CerealSerializer",
}
TIMED = "dev.optimus.cereal.spark.jobs.TimedSerializer"


def jars():
    """The Cereal library, the Spark module and the jobs' jar, which must have been built."""
    paths = [
        os.path.join(ROOT, "jvm/target/optimus-cereal-0.1.0-SNAPSHOT.jar"),
        os.path.join(ROOT, "jvm/spark/target/optimus-cereal-spark-0.1.0-SNAPSHOT.jar"),
        os.path.join(ROOT, "jvm/spark/target/optimus-cereal-spark-0.1.0-SNAPSHOT-tests.jar"),
    ]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise FileNotFoundError("build the jars first (scripts/test spark): missing " + ", ".join(missing))
    return paths


def conf_for(serializer, timed=False, extra=None):
    """The SparkConf of a local[2] context with `serializer` (java, kryo, cereal)."""
    from pyspark import SparkConf
    conf = SparkConf().setMaster("local[2]").setAppName("cereal-" + serializer)
    conf.set("spark.jars", ",".join(jars()))
    conf.set("spark.driver.memory", "768m")
    conf.set("spark.ui.enabled", "false")
    conf.set("spark.ui.showConsoleProgress", "false")
    conf.set("spark.sql.shuffle.partitions", "4")
    conf.set("spark.default.parallelism", "4")
    conf.set("spark.driver.host", "127.0.0.1")
    conf.set("spark.driver.bindAddress", "127.0.0.1")
    conf.set("spark.driver.extraJavaOptions", "-XX:+UseParallelGC")
    model = "dev.optimus.cereal.spark.jobs.Model$"
    classes = ",".join(model + n for n in
                       ("Page", "Point", "Centroid", "Rating", "UserProfile", "Doc", "TeraRecord"))
    conf.set("spark.kryo.classesToRegister", classes)
    conf.set("spark.cereal.classesToRegister", classes)
    if timed:
        conf.set("spark.serializer", TIMED)
        conf.set("spark.optimus.timed.serializer", SERIALIZERS[serializer])
    else:
        conf.set("spark.serializer", SERIALIZERS[serializer])
    for k, v in (extra or {}).items():
        conf.set(k, v)
    return conf


def start(serializer, timed=False, extra=None):
    from pyspark import SparkContext
    sc = SparkContext(conf=conf_for(serializer, timed, extra))
    sc.setLogLevel("ERROR")
    return sc


def jvm_jobs(sc):
    return sc._jvm.dev.optimus.cereal.spark.jobs.SparkJobs


def run_job(sc, job, scale):
    return jvm_jobs(sc).run(sc._jsc, job, scale)


def bench(scale, reps, jobs):
    """Each serializer in a JVM of its own (a child process), so that none inherits another's
    warmed-up Spark."""
    import json
    import subprocess
    rows = []
    for ser in ("java", "kryo", "cereal"):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--bench-one", ser,
                              "--scale", str(scale), "--reps", str(reps), "--jobs", ",".join(jobs)],
                             check=True, stdout=subprocess.PIPE, text=True).stdout
        rows.extend(json.loads(out.strip().splitlines()[-1]))
    return rows


def bench_one(ser, scale, reps, jobs):
    """Runs the jobs under one serializer in this process's JVM; returns the table's rows."""
    rows = []
    sc = start(ser, timed=True)
    try:
        listener = sc._jvm.dev.optimus.cereal.spark.jobs.TaskMetricsListener()
        sc._jsc.sc().addSparkListener(listener)
        timed = sc._jvm.dev.optimus.cereal.spark.jobs.TimedSerializer
        counts = sc._jvm.dev.optimus.cereal.spark.CerealSerializer
        for job in jobs:
            run_job(sc, job, scale)  # warm-up: JIT, class loading, registrations
            samples = []
            for _ in range(reps):
                timed.reset()
                listener.reset()
                counts.resetRecordCounts()
                t0 = time.perf_counter()
                digest = run_job(sc, job, scale)
                wall = time.perf_counter() - t0
                t = list(timed.totals())
                m = list(listener.totals())
                c = list(counts.recordCounts())
                samples.append((wall, t, m, c, digest))
            samples.sort(key=lambda s: s[0])
            wall, t, m, c, digest = samples[len(samples) // 2]  # the median run by job time
            rows.append(dict(job=job, ser=ser, wall=wall, s_ms=t[0] / 1e6, d_ms=t[1] / 1e6,
                             s_calls=t[2], d_calls=t[3], run_ms=m[1], result_ser_ms=m[3],
                             shuffle_write_ms=m[4] / 1e6, shuffle_mb=m[6] / 1e6,
                             java_fallbacks=c[1], digest=digest))
            print(f"{job:9s} {ser:6s} {wall * 1000:8.0f} ms  {digest}", file=sys.stderr, flush=True)
    finally:
        sc.stop()
    return rows


def table(rows, scale, reps):
    out = [f"scale {scale}, median of {reps} runs by job time, local[2]",
           "",
           "| job | serializer | job ms | S ms | D ms | S+D share of task time | records S / D | "
           "shuffle write ms | result ser ms | shuffle MB | same result |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    ref = {r["job"]: r["digest"] for r in rows if r["ser"] == "java"}
    for r in rows:
        share = (r["s_ms"] + r["d_ms"]) / r["run_ms"] if r["run_ms"] else 0.0
        out.append(f"| {r['job']} | {r['ser']} | {r['wall'] * 1000:.0f} | {r['s_ms']:.0f} | "
                   f"{r['d_ms']:.0f} | {share:.0%} | {r['s_calls']} / {r['d_calls']} | "
                   f"{r['shuffle_write_ms']:.0f} | {r['result_ser_ms']} | {r['shuffle_mb']:.2f} | "
                   f"{'yes' if r['digest'] == ref.get(r['job']) else 'NO'} |")
    out.append("")
    out.append("| job | S+D Java / Cereal | S+D Kryo / Cereal | job Java / Cereal | job Kryo / Cereal |")
    out.append("|---|---|---|---|---|")
    by = {(r["job"], r["ser"]): r for r in rows}
    for job in dict.fromkeys(r["job"] for r in rows):
        c, j, k = by[(job, "cereal")], by[(job, "java")], by[(job, "kryo")]
        sd = lambda r: r["s_ms"] + r["d_ms"]
        out.append(f"| {job} | {sd(j) / sd(c):.2f}x | {sd(k) / sd(c):.2f}x | "
                   f"{j['wall'] / c['wall']:.2f}x | {k['wall'] / c['wall']:.2f}x |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", action="store_true", help="time the jobs under the three serializers")
    ap.add_argument("--scale", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--jobs", default="wordcount,terasort,pagerank,kmeans,als,bayes")
    ap.add_argument("--bench-one", metavar="SERIALIZER", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.bench_one:
        import json
        print(json.dumps(bench_one(args.bench_one, args.scale, args.reps, args.jobs.split(","))))
        return 0
    if not args.bench:
        ap.print_help()
        return 2
    rows = bench(args.scale, args.reps, args.jobs.split(","))
    print(table(rows, args.scale, args.reps))
    return 0 if all(r["digest"] == next(x["digest"] for x in rows if x["job"] == r["job"]) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
