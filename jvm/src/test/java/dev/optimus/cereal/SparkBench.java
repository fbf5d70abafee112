package dev.optimus.cereal;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import com.esotericsoftware.kryo.util.DefaultInstantiatorStrategy;
import dev.optimus.cereal.trace.CerealTrace;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.InputStreamReader;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The Spark jobs' record streams ({@link SparkRecords}): their traces for the accelerator model,
 * and the S and D time of each whole stream under Java serialization, Kryo and Cereal, measured
 * as Spark's serialization streams drive them.
 *
 * <ul>
 *   <li>{@code java}: one {@code ObjectOutputStream} per stream, {@code writeObject} per record,
 *       {@code reset()} every 100 records (Spark's {@code JavaSerializationStream} with its
 *       default {@code spark.serializer.objectStreamReset=100}); D reads the records back from
 *       one {@code ObjectInputStream}.
 *   <li>{@code kryo}: Kryo 5.6.2, registration required, reference tracking on (Spark's default
 *       {@code spark.kryo.referenceTracking=true}); {@code writeClassAndObject} per record into
 *       one {@code Output}, {@code readClassAndObject} per record (Spark's
 *       {@code KryoSerializationStream}, which runs Kryo 4), objects made as Spark's {@code
 *       KryoSerializer} makes them (a no-argument constructor, else Objenesis).
 *   <li>{@code cereal}: a frame per record, as the Spark serializer writes them: {@code
 *       CerealOutput.writeObject} per record into one output (kept from stream to stream, as
 *       Kryo's {@code Output} is), {@code CerealInput.readObject} per record from one input
 *       over the stream's bytes ({@code setBuffer}, as Kryo's {@code Input}).
 * </ul>
 *
 * <p>Timing is {@link Bench}'s: each (workload, serializer) in {@code --forks} forked JVMs,
 * time-boxed warm-up, {@code --reps} repetitions of at least 100 ms of S and of D, min / median /
 * max of µs per stream over all repetitions.
 *
 * <pre>
 * java -cp ... dev.optimus.cereal.SparkBench --trace ../testdata/cereal   # write the traces
 * taskset -c 0 java -cp ... dev.optimus.cereal.SparkBench [--forks 2] [--reps 5] [--warmup-ms 1500]
 *     [--only SUBSTRING] [--serializers java,kryo,cereal] [--clock wall|cpu]
 * </pre>
 *
 * <p>After the six jobs' streams come two of one record class alone ({@link
 * SparkRecords#singleClassWorkloads}: terasort's TeraRecords, ALS's UserProfiles), left out of
 * the JSON lines the accelerator model reads.
 *
 * <pre>
 * </pre>
 */
public final class SparkBench {
  private SparkBench() {}

  static final String[] SERIALIZERS = {"java", "kryo", "cereal"};

  /** One serializer over a whole stream of records. */
  interface StreamCodec {
    byte[] write(List<Object> records) throws Exception;

    List<Object> read(byte[] stream, int count) throws Exception;
  }

  static StreamCodec codec(String name) {
    switch (name) {
      case "java":
        return new StreamCodec() {
          public byte[] write(List<Object> records) throws Exception {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream(1 << 16);
            try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
              int n = 0;
              for (Object r : records) {
                out.writeObject(r);
                if (++n % 100 == 0) out.reset();
              }
            }
            return bytes.toByteArray();
          }

          public List<Object> read(byte[] stream, int count) throws Exception {
            List<Object> out = new ArrayList<>(count);
            try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(stream))) {
              for (int i = 0; i < count; i++) out.add(in.readObject());
            }
            return out;
          }
        };
      case "kryo": {
        Kryo kryo = new Kryo();
        kryo.setRegistrationRequired(true);
        kryo.setReferences(true);
        // As Spark's KryoSerializer: a no-argument constructor if there is one, else none.
        kryo.setInstantiatorStrategy(
            new DefaultInstantiatorStrategy(new org.objenesis.strategy.StdInstantiatorStrategy()));
        for (Class<?> c : new Class<?>[] {ArrayList.class, byte[].class, double[].class}) {
          kryo.register(c);
        }
        for (Class<?> c : SparkRecords.CLASSES) kryo.register(c);
        Output out = new Output(1 << 16, -1);
        Input in = new Input();
        return new StreamCodec() {
          public byte[] write(List<Object> records) {
            out.reset();
            for (Object r : records) kryo.writeClassAndObject(out, r);
            return out.toBytes();
          }

          public List<Object> read(byte[] stream, int count) {
            in.setBuffer(stream);
            List<Object> res = new ArrayList<>(count);
            for (int i = 0; i < count; i++) res.add(kryo.readClassAndObject(in));
            return res;
          }
        };
      }
      case "cereal": {
        // One output and one input for all streams, as Kryo's one Output and Input above: the
        // writer's and reader's buffers and tables are reused, the bytes copied out per stream.
        Cereal cereal = cereal();
        Sink bytes = new Sink();
        CerealOutput out = cereal.newOutput(bytes);
        CerealInput in = cereal.newInput(new byte[0], 0, 0);
        return new StreamCodec() {
          public byte[] write(List<Object> records) throws Exception {
            bytes.count = 0;
            for (Object r : records) out.writeObject(r);
            out.flush();
            return java.util.Arrays.copyOf(bytes.buf, bytes.count);
          }

          public List<Object> read(byte[] stream, int count) throws Exception {
            in.setBuffer(stream, 0, stream.length);
            List<Object> res = new ArrayList<>(count);
            for (int i = 0; i < count; i++) res.add(in.readObject());
            return res;
          }
        };
      }
      default:
        throw new IllegalArgumentException(name);
    }
  }

  /** A growable byte array as an output stream, emptied by the caller (Kryo's Output, unlocked). */
  static final class Sink extends OutputStream {
    byte[] buf = new byte[1 << 16];
    int count;

    @Override
    public void write(int b) {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) {
      if (count + len > buf.length) buf = java.util.Arrays.copyOf(buf, Math.max(count + len, 2 * buf.length));
      System.arraycopy(b, off, buf, count, len);
      count += len;
    }
  }

  private static Cereal cereal() {
    Cereal cereal = new Cereal();
    for (Class<?> c : SparkRecords.CLASSES) cereal.register(c);
    cereal.setDeserializationThreads(1);
    return cereal;
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> opt = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) opt.put(args[i], args[i + 1]);
    if (opt.containsKey("--trace")) {
      trace(Path.of(opt.get("--trace")));
      return;
    }
    Bench.cpuClock = opt.getOrDefault("--clock", "wall").equals("cpu");
    if (opt.containsKey("--child")) {
      child(opt.get("--child"), opt.get("--serializer"), Integer.parseInt(opt.get("--reps")),
          Long.parseLong(opt.get("--warmup-ms")));
      return;
    }
    int forks = Integer.parseInt(opt.getOrDefault("--forks", "2"));
    String reps = opt.getOrDefault("--reps", "5");
    String warmup = opt.getOrDefault("--warmup-ms", "1500");
    String only = opt.getOrDefault("--only", "");
    List<String> serializers = List.of(opt.getOrDefault("--serializers",
        String.join(",", SERIALIZERS)).split(","));
    String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    String cp = System.getProperty("java.class.path");
    System.out.println("| workload | records | serializer | S µs min / median / max | D µs min / median / max | bytes |");
    System.out.println("|---|---|---|---|---|---|");
    StringBuilder json = new StringBuilder();
    StringBuilder ratios = new StringBuilder();
    Map<String, java.util.function.Supplier<List<Object>>> all = allWorkloads();
    for (String w : all.keySet()) {
      if (!w.contains(only)) continue;
      int records = all.get(w).get().size();
      Map<String, List<Double>> ser = new LinkedHashMap<>(), de = new LinkedHashMap<>();
      Map<String, String> bytes = new LinkedHashMap<>();
      for (String s : serializers) {
        ser.put(s, new ArrayList<>());
        de.put(s, new ArrayList<>());
      }
      // Forks interleaved (java, kryo, cereal, java, kryo, cereal...), so that what else runs on
      // the machine falls on every serializer alike.
      for (int f = 0; f < forks; f++) {
        for (String s : serializers) {
          Process p = new ProcessBuilder(java, "-Xms1g", "-Xmx1g", "-XX:+UseParallelGC", "-cp", cp,
              SparkBench.class.getName(), "--child", w, "--serializer", s, "--reps", reps,
              "--warmup-ms", warmup, "--clock", Bench.cpuClock ? "cpu" : "wall")
              .redirectErrorStream(true).start();
          try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
            for (String line; (line = r.readLine()) != null; ) {
              String[] f2 = line.split(" ");
              switch (f2[0]) {
                case "S": for (int i = 1; i < f2.length; i++) ser.get(s).add(Double.parseDouble(f2[i])); break;
                case "D": for (int i = 1; i < f2.length; i++) de.get(s).add(Double.parseDouble(f2[i])); break;
                case "BYTES": bytes.put(s, f2[1]); break;
                default: throw new IllegalStateException(w + " " + s + ": " + line);
              }
            }
          }
          if (p.waitFor() != 0) throw new IllegalStateException(w + " " + s + " failed");
        }
      }
      boolean traced = SparkRecords.workloads().containsKey(w); // the model's streams
      if (traced) {
        json.append(String.format("    {\"name\": \"%s\", \"bench_name\": \"%s\", \"trace\": \"%s.crlt\",%n     ", w, w, w));
      }
      for (String s : serializers) {
        System.out.printf("| %s | %d | %s | %s | %s | %s |%n", w, records, s, stats(ser.get(s)),
            stats(de.get(s)), bytes.getOrDefault(s, "?"));
        if (traced) {
          json.append(String.format(" \"%s\": {\"ser_us\": %.4g, \"deser_us\": %.4g},", s.equals("cereal") ? "cereal_sw" : s,
              median(ser.get(s)), median(de.get(s))));
        }
      }
      System.out.flush();
      if (traced) {
        json.setLength(json.length() - 1);
        json.append("},\n");
      }
      if (serializers.contains("kryo") && serializers.contains("cereal")) {
        double sk = median(ser.get("kryo")), sc = median(ser.get("cereal"));
        double dk = median(de.get("kryo")), dc = median(de.get("cereal"));
        ratios.append(String.format("| %s | %d | %.0f / %.0f | %.2fx | %.2fx | %.2fx |%n",
            w, records, 1e3 * (sk + dk) / records, 1e3 * (sc + dc) / records, sk / sc, dk / dc,
            (sk + dk) / (sc + dc)));
      }
    }
    if (ratios.length() > 0) {
      System.out.println();
      System.out.println("| workload | records | ns per record S+D, Kryo / Cereal | S Kryo / Cereal | D Kryo / Cereal | S+D Kryo / Cereal |");
      System.out.println("|---|---|---|---|---|---|");
      System.out.print(ratios);
    }
    System.out.println();
    System.out.print(json);
  }

  /** The jobs' streams, then the streams of one class alone. */
  static Map<String, java.util.function.Supplier<List<Object>>> allWorkloads() {
    Map<String, java.util.function.Supplier<List<Object>>> all = new LinkedHashMap<>(SparkRecords.workloads());
    all.putAll(SparkRecords.singleClassWorkloads());
    return all;
  }

  private static double median(List<Double> v) {
    double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
  }

  private static String stats(List<Double> v) {
    if (v.isEmpty()) return "?";
    double[] a = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return String.format("%.1f / **%.1f** / %.1f", a[0], median(v), a[a.length - 1]);
  }

  /** One fork: round trip checked, warm-up, then S and D lines of µs per stream. */
  static void child(String workload, String serializer, int reps, long warmupMs) throws Exception {
    List<Object> records = allWorkloads().get(workload).get();
    StreamCodec c = codec(serializer);
    byte[] bytes = c.write(records);
    List<Object> copy = c.read(bytes, records.size());
    for (int i = 0; i < records.size(); i++) {
      GraphAssert.assertSameGraph(records.get(i), copy.get(i));
    }
    System.out.println("BYTES " + bytes.length);
    long end = System.nanoTime() + warmupMs * 1_000_000;
    while (System.nanoTime() < end) c.read(c.write(records), records.size());
    int batch = Bench.calibrate(() -> c.write(records));
    StringBuilder s = new StringBuilder("S");
    for (int r = 0; r < reps; r++) {
      long t0 = Bench.now();
      for (int i = 0; i < batch; i++) Bench.sink(c.write(records));
      s.append(' ').append((Bench.now() - t0) / 1e3 / batch);
    }
    System.out.println(s);
    batch = Bench.calibrate(() -> c.read(bytes, records.size()));
    StringBuilder d = new StringBuilder("D");
    for (int r = 0; r < reps; r++) {
      long t0 = Bench.now();
      for (int i = 0; i < batch; i++) Bench.sink(c.read(bytes, records.size()));
      d.append(' ').append((Bench.now() - t0) / 1e3 / batch);
    }
    System.out.println(d);
  }

  /**
   * Writes {@code DIR/<workload>.crlt} for every workload: each record serialized once and its
   * frame deserialized once, by the library, with the trace recorder on.
   */
  static void trace(Path dir) throws Exception {
    Files.createDirectories(dir);
    Cereal cereal = cereal();
    for (Map.Entry<String, java.util.function.Supplier<List<Object>>> e :
        SparkRecords.workloads().entrySet()) {
      List<Object> records = e.getValue().get();
      Path file = dir.resolve(e.getKey() + ".crlt");
      try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(file));
           CerealTrace t = CerealTrace.start(out, e.getKey())) {
        for (Object r : records) cereal.deserialize(cereal.serialize(r));
      }
      System.out.println(file + ": " + records.size() + " records, " + Files.size(file) + " bytes");
    }
  }
}
