package dev.optimus.cereal.spark.jobs;

import java.util.concurrent.atomic.LongAdder;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/**
 * Sums Spark's own task metrics over the tasks of a run: run time, task deserialization time
 * (the closure, always Java), result serialization time, shuffle write time (serialization,
 * compression and the disk), shuffle fetch wait and bytes written. Registered on the
 * SparkContext by the benchmark ({@code sc.addSparkListener}).
 */
public final class TaskMetricsListener extends SparkListener {
  private final LongAdder tasks = new LongAdder();
  private final LongAdder runMs = new LongAdder();
  private final LongAdder taskDeserMs = new LongAdder();
  private final LongAdder resultSerMs = new LongAdder();
  private final LongAdder shuffleWriteNs = new LongAdder();
  private final LongAdder fetchWaitMs = new LongAdder();
  private final LongAdder shuffleBytes = new LongAdder();

  @Override
  public void onTaskEnd(SparkListenerTaskEnd end) {
    TaskMetrics m = end.taskMetrics();
    if (m == null) return;
    tasks.increment();
    runMs.add(m.executorRunTime());
    taskDeserMs.add(m.executorDeserializeTime());
    resultSerMs.add(m.resultSerializationTime());
    shuffleWriteNs.add(m.shuffleWriteMetrics().writeTime());
    fetchWaitMs.add(m.shuffleReadMetrics().fetchWaitTime());
    shuffleBytes.add(m.shuffleWriteMetrics().bytesWritten());
  }

  /**
   * {@code [tasks, run ms, task deserialization ms, result serialization ms, shuffle write ns,
   * fetch wait ms, shuffle bytes written]}.
   */
  public long[] totals() {
    return new long[] {tasks.sum(), runMs.sum(), taskDeserMs.sum(), resultSerMs.sum(),
        shuffleWriteNs.sum(), fetchWaitMs.sum(), shuffleBytes.sum()};
  }

  public void reset() {
    for (LongAdder a : new LongAdder[] {tasks, runMs, taskDeserMs, resultSerMs, shuffleWriteNs,
        fetchWaitMs, shuffleBytes}) {
      a.reset();
    }
  }
}
