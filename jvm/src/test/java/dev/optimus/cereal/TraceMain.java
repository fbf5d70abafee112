package dev.optimus.cereal;

import dev.optimus.cereal.trace.CerealTrace;
import java.io.BufferedOutputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Writes the traces the accelerator model replays (testdata/cereal/*.crlt): one file per
 * benchmark workload of {@link Bench} that fits the repository (MediaContent and the 1k shapes),
 * each holding the graph serialized once and deserialized once, exactly as the library does it.
 *
 * <pre>java -cp target/classes:target/test-classes dev.optimus.cereal.TraceMain ../testdata/cereal</pre>
 */
public final class TraceMain {
  private TraceMain() {}

  /** Workload file stem to graph, the names of docs/cereal.md's benchmark table. */
  static Map<String, Supplier<Object>> workloads() {
    Map<String, Supplier<Object>> w = new LinkedHashMap<>();
    w.put("media-content", BenchData::mediaContent);
    w.put("tree-narrow-1k", () -> BenchData.tree(1_000, 2));
    w.put("tree-wide-1k", () -> BenchData.tree(1_000, 16));
    w.put("list-small-1k", () -> BenchData.list(1_000));
    w.put("graph-sparse-1k", () -> BenchData.graph(1_000, 2));
    w.put("graph-dense-1k", () -> BenchData.graph(1_000, 16));
    return w;
  }

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args.length > 0 ? args[0] : "../testdata/cereal");
    Files.createDirectories(dir);
    Cereal cereal = new Cereal();
    for (Class<?> c : BenchData.CLASSES) cereal.register(c);
    for (Map.Entry<String, Supplier<Object>> e : workloads().entrySet()) {
      Object graph = e.getValue().get();
      Path file = dir.resolve(e.getKey() + ".crlt");
      try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(file));
           CerealTrace t = CerealTrace.start(out, e.getKey())) {
        byte[] frame = cereal.serialize(graph);
        cereal.deserialize(frame);
      }
      System.out.println(file + ": " + Files.size(file) + " bytes");
    }
  }
}
