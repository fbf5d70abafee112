package dev.optimus.cereal;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The benchmark harness: serialize (S) and deserialize (D) time and serialized bytes of Cereal,
 * Java serialization and Kryo (with and without reference tracking) on MediaContent and the
 * paper's shapes ({@link BenchData}).
 *
 * <p>Every (workload, serializer) pair runs in its own forked JVMs ({@code --forks}, default 2),
 * as JMH does, so one serializer's JIT profile cannot slow another's. In a fork: the result of
 * one round trip is checked against the original ({@link GraphAssert}), then time-boxed warm-up,
 * then {@code --reps} measured repetitions of S and of D, each repeating the operation for at
 * least 100 ms; the parent prints min / median / max of the per-operation times over all
 * repetitions of all forks. Cereal deserializes on one thread (per-core comparison). Forks run
 * with a 1 GiB thread stack: Java serialization and Kryo recurse once per object of a list.
 *
 * <pre>
 * mvn -q -f jvm/pom.xml test-compile dependency:build-classpath -Dmdep.outputFile=target/cp.txt
 * taskset -c 1 java -cp jvm/target/classes:jvm/target/test-classes:$(cat jvm/target/cp.txt) \
 *     dev.optimus.cereal.Bench [--forks 2] [--reps 5] [--warmup-ms 1500] [--only SUBSTRING] [--clock wall|cpu]
 *     [--serializers java,kryo,kryo-norefs,cereal]
 * java -cp ... dev.optimus.cereal.Bench --packing 1      # reference bytes per bucket size
 * java -cp ... dev.optimus.cereal.Bench --scaling 2      # deserialization on 1 and 2 threads
 * </pre>
 */
public final class Bench {
  static final String[] SERIALIZERS = {"java", "kryo", "kryo-norefs", "cereal"};

  /** The workloads, by name, in table order. */
  static Map<String, Supplier<Object>> workloads() {
    Map<String, Supplier<Object>> w = new LinkedHashMap<>();
    w.put("Record: String", () -> "serialization");
    w.put("Record: Long", () -> 42L);
    w.put("Record: Rating (3 fields)", BenchData::rating);
    w.put("Record: pair (String, Long)", BenchData::pair);
    // One record of a Spark job's class alone: a frame for a graph of 3 and of 19 objects.
    w.put("Record: TeraRecord", () -> SparkRecords.singleClassWorkloads().get("terasort-records").get().get(0));
    w.put("Record: UserProfile", () -> SparkRecords.singleClassWorkloads().get("als-profiles").get().get(0));
    w.put("MediaContent", BenchData::mediaContent);
    w.put("Tree narrow 1k", () -> BenchData.tree(1_000, 2));
    w.put("Tree narrow 100k", () -> BenchData.tree(100_000, 2));
    w.put("Tree wide 1k", () -> BenchData.tree(1_000, 16));
    w.put("Tree wide 100k", () -> BenchData.tree(100_000, 16));
    w.put("List small (1k)", () -> BenchData.list(1_000));
    w.put("List large (100k)", () -> BenchData.list(100_000));
    w.put("Graph sparse 1k", () -> BenchData.graph(1_000, 2));
    w.put("Graph sparse 50k", () -> BenchData.graph(50_000, 2));
    w.put("Graph dense 1k", () -> BenchData.graph(1_000, 16));
    w.put("Graph dense 50k", () -> BenchData.graph(50_000, 16));
    return w;
  }

  /** One serializer as the benchmark drives it; instances are reused between operations. */
  interface Codec {
    byte[] serialize(Object o) throws Exception;

    Object deserialize(byte[] b) throws Exception;

    /** Whether the copy keeps shared objects shared (false: only trees are comparable). */
    default boolean keepsIdentity() {
      return true;
    }
  }

  static Codec codec(String name) {
    switch (name) {
      case "java":
        return new Codec() {
          public byte[] serialize(Object o) throws IOException {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
            try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
              out.writeObject(o);
            }
            return bytes.toByteArray();
          }

          public Object deserialize(byte[] b) throws Exception {
            try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(b))) {
              return in.readObject();
            }
          }
        };
      case "kryo":
      case "kryo-norefs": {
        boolean refs = name.equals("kryo");
        Kryo kryo = new Kryo();
        kryo.setRegistrationRequired(true);
        kryo.setReferences(refs);
        // As Spark's KryoSerializer: a no-argument constructor if there is one, else none
        // (the Spark records have none).
        kryo.setInstantiatorStrategy(new com.esotericsoftware.kryo.util.DefaultInstantiatorStrategy(
            new org.objenesis.strategy.StdInstantiatorStrategy()));
        kryo.register(ArrayList.class);
        for (Class<?> c : BenchData.CLASSES) kryo.register(c);
        kryo.register(byte[].class);
        for (Class<?> c : SparkRecords.CLASSES) kryo.register(c);
        Output out = new Output(1 << 16, -1);
        Input in = new Input();
        return new Codec() {
          public byte[] serialize(Object o) {
            out.reset();
            kryo.writeClassAndObject(out, o);
            return out.toBytes();
          }

          public Object deserialize(byte[] b) {
            in.setBuffer(b);
            return kryo.readClassAndObject(in);
          }

          public boolean keepsIdentity() {
            return refs;
          }
        };
      }
      case "cereal": {
        Cereal cereal = new Cereal();
        for (Class<?> c : BenchData.CLASSES) cereal.register(c);
        for (Class<?> c : SparkRecords.CLASSES) cereal.register(c);
        cereal.setDeserializationThreads(1);
        return new Codec() {
          public byte[] serialize(Object o) {
            return cereal.serialize(o);
          }

          public Object deserialize(byte[] b) {
            return cereal.deserialize(b);
          }
        };
      }
      default:
        throw new IllegalArgumentException(name);
    }
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> opt = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) opt.put(args[i], args[i + 1]);
    cpuClock = opt.getOrDefault("--clock", "wall").equals("cpu");
    if (opt.containsKey("--child")) {
      Thread t = new Thread(null, () -> {
        try {
          child(opt.get("--child"), opt.get("--serializer"), Integer.parseInt(opt.get("--reps")),
              Long.parseLong(opt.get("--warmup-ms")));
        } catch (Exception e) {
          System.out.println("ERROR " + e);
        }
      }, "bench", 1L << 30);
      t.start();
      t.join();
      return;
    }
    int forks = Integer.parseInt(opt.getOrDefault("--forks", "2"));
    int reps = Integer.parseInt(opt.getOrDefault("--reps", "5"));
    String warmup = opt.getOrDefault("--warmup-ms", "1500");
    String only = opt.getOrDefault("--only", "");
    List<String> serializers = Arrays.asList(opt.getOrDefault("--serializers",
        String.join(",", SERIALIZERS)).split(","));
    if (opt.containsKey("--packing")) {
      packing();
      return;
    }
    if (opt.containsKey("--scaling")) {
      scaling(Integer.parseInt(opt.get("--scaling")), reps);
      return;
    }
    String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    String cp = System.getProperty("java.class.path");
    System.out.println("| workload | serializer | S µs min / median / max | D µs min / median / max | bytes |");
    System.out.println("|---|---|---|---|---|");
    StringBuilder ratios = new StringBuilder();
    for (String w : workloads().keySet()) {
      if (!w.contains(only)) continue;
      Map<String, List<Double>> ser = new LinkedHashMap<>(), de = new LinkedHashMap<>();
      Map<String, String> bytes = new LinkedHashMap<>(), notes = new LinkedHashMap<>();
      List<String> run = new ArrayList<>();
      for (String s : SERIALIZERS) {
        if (!serializers.contains(s)) continue;
        run.add(s);
        ser.put(s, new ArrayList<>());
        de.put(s, new ArrayList<>());
      }
      // Forks interleaved across serializers (java, kryo, ..., java, kryo, ...), so that what
      // else runs on the machine falls on every serializer alike.
      for (int f = 0; f < forks; f++) {
        for (String s : run) {
          if (notes.containsKey(s)) continue;
          Process p = new ProcessBuilder(java, "-Xms2g", "-Xmx2g", "-XX:+UseParallelGC", "-cp", cp,
              Bench.class.getName(), "--child", w, "--serializer", s, "--reps", "" + reps,
              "--warmup-ms", warmup, "--clock", cpuClock ? "cpu" : "wall")
              .redirectErrorStream(true).start();
          try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
            for (String line; (line = r.readLine()) != null; ) {
              String[] f2 = line.split(" ");
              switch (f2[0]) {
                case "S": for (int i = 1; i < f2.length; i++) ser.get(s).add(Double.parseDouble(f2[i])); break;
                case "D": for (int i = 1; i < f2.length; i++) de.get(s).add(Double.parseDouble(f2[i])); break;
                case "BYTES": bytes.put(s, f2[1]); break;
                case "NA": notes.put(s, line.substring(3)); break;
                default: notes.putIfAbsent(s, line);
              }
            }
          }
          p.waitFor();
        }
      }
      for (String s : run) {
        if (notes.containsKey(s)) {
          System.out.printf("| %s | %s | n/a: %s | | |%n", w, s, notes.get(s));
        } else {
          System.out.printf("| %s | %s | %s | %s | %s |%n", w, s, stats(ser.get(s)), stats(de.get(s)),
              bytes.getOrDefault(s, "?"));
        }
      }
      System.out.flush();
      if (run.contains("kryo") && run.contains("cereal") && !notes.containsKey("kryo")
          && !notes.containsKey("cereal")) {
        ratios.append(String.format("| %s | %.2fx | %.2fx |%n", w, median(ser.get("kryo")) / median(ser.get("cereal")),
            median(de.get("kryo")) / median(de.get("cereal"))));
      }
    }
    if (ratios.length() > 0) {
      System.out.println();
      System.out.println("| workload | S Kryo / Cereal | D Kryo / Cereal |");
      System.out.println("|---|---|---|");
      System.out.print(ratios);
    }
  }

  static double median(List<Double> v) {
    double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
  }

  private static String stats(List<Double> v) {
    if (v.isEmpty()) return "?";
    double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    double med = a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    return String.format("%s / **%s** / %s", fmt(a[0]), fmt(med), fmt(a[a.length - 1]));
  }

  private static String fmt(double us) {
    return us >= 100 ? String.format("%.0f", us) : us >= 10 ? String.format("%.1f", us)
        : us >= 1 ? String.format("%.2f", us) : String.format("%.3f", us); // small records: ns
  }

  /** One fork: check, warm up, measure; prints S and D lines of µs per operation. */
  static void child(String workload, String serializer, int reps, long warmupMs) throws Exception {
    Object data = workloads().get(workload).get();
    Codec c = codec(serializer);
    if (!c.keepsIdentity() && workload.startsWith("Graph")) {
      System.out.println("NA cycles need reference tracking");
      return;
    }
    byte[] bytes = c.serialize(data);
    Object copy = c.deserialize(bytes);
    if (c.keepsIdentity()) {
      GraphAssert.assertSameGraph(data, copy);
    } else if (!Arrays.equals(bytes, c.serialize(copy))) {
      // Without reference tracking shared strings come back apart: compare values only.
      throw new AssertionError("the copy serializes differently");
    }
    System.out.println("BYTES " + bytes.length);
    long end = System.nanoTime() + warmupMs * 1_000_000;
    while (System.nanoTime() < end) {
      c.deserialize(c.serialize(data));
    }
    int batch = calibrate(() -> c.serialize(data));
    StringBuilder s = new StringBuilder("S");
    for (int r = 0; r < reps; r++) {
      long t0 = now();
      for (int i = 0; i < batch; i++) sink(c.serialize(data));
      s.append(' ').append((now() - t0) / 1e3 / batch);
    }
    System.out.println(s);
    batch = calibrate(() -> c.deserialize(bytes));
    StringBuilder d = new StringBuilder("D");
    for (int r = 0; r < reps; r++) {
      long t0 = now();
      for (int i = 0; i < batch; i++) sink(c.deserialize(bytes));
      d.append(' ').append((now() - t0) / 1e3 / batch);
    }
    System.out.println(d);
  }

  interface Op {
    Object run() throws Exception;
  }

  /**
   * {@code --clock cpu}: repetitions timed in the CPU time of the measuring thread plus the time
   * of the collections that ran meanwhile (stop-the-world, on the same pinned CPU), instead of
   * wall-clock time, so that time the CPU spends on other processes of a shared machine is left
   * out: time per core, as the goals are stated. (The process's CPU time would include the
   * collector's threads directly, but the JVM reads it in 10 ms ticks.)
   */
  static boolean cpuClock;

  private static final java.lang.management.ThreadMXBean THREADS =
      java.lang.management.ManagementFactory.getThreadMXBean();
  private static final List<java.lang.management.GarbageCollectorMXBean> GCS =
      java.lang.management.ManagementFactory.getGarbageCollectorMXBeans();

  /** Nanoseconds on the clock {@link #cpuClock} selects. */
  static long now() {
    if (!cpuClock) return System.nanoTime();
    long gcMs = 0;
    for (java.lang.management.GarbageCollectorMXBean gc : GCS) gcMs += Math.max(0, gc.getCollectionTime());
    return THREADS.getCurrentThreadCpuTime() + gcMs * 1_000_000L;
  }

  /** Operations per repetition so that one repetition takes at least 100 ms. */
  static int calibrate(Op op) throws Exception {
    long t0 = System.nanoTime();
    int n = 0;
    while (System.nanoTime() - t0 < 20_000_000L) {
      sink(op.run());
      n++;
    }
    return Math.max(1, n * 5);
  }

  static volatile Object blackhole;

  /** Keeps a result alive, so the work that made it is not optimised away. */
  static void sink(Object o) {
    blackhole = o;
  }

  /**
   * Cereal's deserialization of the large workloads on 1 to {@code maxThreads} threads (pass 1's
   * allocation and pass 2's fix-up in parallel; pass 1's header scan and pass 3 stay
   * sequential). In this JVM, after a warm-up; prints min / median / max µs. The first rows are a
   * control: a loop of arithmetic split over the same threads, which shows what the machine
   * gives a second thread at the time (1.0x when another process holds the other CPU).
   */
  static void scaling(int maxThreads, int reps) throws Exception {
    System.out.println("| workload | threads | D µs min / median / max |");
    System.out.println("|---|---|---|");
    for (int t = 1; t <= maxThreads; t++) {
      List<Double> times = new ArrayList<>();
      for (int r = 0; r < reps * 4; r++) times.add(control(t, 40_000_000L / t));
      System.out.printf("| control (arithmetic) | %d | %s |%n", t, stats(times));
    }
    for (Map.Entry<String, Supplier<Object>> e : workloads().entrySet()) {
      if (!e.getKey().contains("50k") && !e.getKey().contains("100k")) continue;
      Object data = e.getValue().get();
      for (int t = 1; t <= maxThreads; t++) {
        try (Cereal cereal = new Cereal()) {
          for (Class<?> c : BenchData.CLASSES) cereal.register(c);
          cereal.setDeserializationThreads(t);
          cereal.setParallelThreshold(1);
          byte[] bytes = cereal.serialize(data);
          GraphAssert.assertSameGraph(data, cereal.deserialize(bytes));
          long end = System.nanoTime() + 1_500_000_000L;
          while (System.nanoTime() < end) sink(cereal.deserialize(bytes));
          List<Double> times = new ArrayList<>();
          for (int r = 0; r < reps * 4; r++) {
            long t0 = System.nanoTime();
            sink(cereal.deserialize(bytes));
            times.add((System.nanoTime() - t0) / 1e3);
          }
          System.out.printf("| %s | %d | %s |%n", e.getKey(), t, stats(times));
        }
      }
    }
  }

  /** µs to run {@code n} steps of arithmetic on each of {@code threads} threads at once. */
  private static double control(int threads, long n) throws InterruptedException {
    Thread[] ts = new Thread[threads];
    long[] out = new long[threads];
    long t0 = System.nanoTime();
    for (int i = 0; i < threads; i++) {
      int k = i;
      ts[i] = new Thread(() -> {
        long x = k;
        for (long j = 0; j < n; j++) x += j * j ^ (x >>> 3);
        out[k] = x;
      });
      ts[i].start();
    }
    for (Thread t : ts) t.join();
    sink(out);
    return (System.nanoTime() - t0) / 1e3;
  }

  /** Packed sizes of each workload's references and bitmap under other bucket sizes. */
  static void packing() {
    Cereal cereal = new Cereal();
    for (Class<?> c : BenchData.CLASSES) cereal.register(c);
    System.out.println("| workload | refs | bytes/ref at bucket 1 / 4 / 8 / 16 / 32 / 64 | bitmap raw → packed bytes | frame bytes |");
    System.out.println("|---|---|---|---|---|");
    for (Map.Entry<String, Supplier<Object>> e : workloads().entrySet()) {
      GraphWriter w = cereal.newWriter();
      w.write(e.getValue().get());
      int[] refs = w.lastRefs();
      StringBuilder sb = new StringBuilder();
      for (int b : new int[] {1, 4, 8, 16, 32, 64}) {
        if (sb.length() > 0) sb.append(" / ");
        sb.append(String.format("%.2f", Packing.packedRefBytes(refs, refs.length, b) / (double) Math.max(1, refs.length)));
      }
      byte[] frame = Arrays.copyOfRange(w.frameBuffer(), w.frameStart(), w.frameStart() + w.frameLength());
      int words = w.lastWords();
      System.out.printf("| %s | %d | %s | %d → %d | %d |%n", e.getKey(), refs.length, sb,
          (words + 7) / 8, w.lastBitmapBytes(), frame.length);
    }
  }
}
