package dev.optimus.cereal;

import static dev.optimus.cereal.GraphAssert.assertSameGraph;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.optimus.cereal.Model.Base;
import dev.optimus.cereal.Model.Derived;
import dev.optimus.cereal.Model.Node;
import dev.optimus.cereal.Model.Op;
import dev.optimus.cereal.trace.CerealTrace;
import java.io.OutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * The fast paths for small records: the reader's one-method path for compact frames of records
 * ({@code GraphReader.readSmall}) against the general path, which a trace recorder forces (both
 * decode a frame to the same graph, or both reject it with the same message, also for 30,000
 * mutants), and the writer's use of a reference field's declared class (targets of that class,
 * of a subclass and of an enum constant's own class).
 */
class SmallFrameTest {
  private final Cereal cereal = Model.register(new Cereal());

  {
    for (Class<?> c : SparkRecords.CLASSES) cereal.register(c);
  }

  /** Records of the shapes the Spark jobs write, and small graphs of every kind. */
  private List<Object> records() {
    List<Object> out = new ArrayList<>();
    for (Map.Entry<String, Supplier<List<Object>>> e : SparkRecords.workloads().entrySet()) {
      List<Object> l = e.getValue().get();
      out.addAll(l.subList(0, Math.min(l.size(), 60)));
    }
    SparkRecords.TeraRecord t = new SparkRecords.TeraRecord("key", new byte[90], 7);
    out.add(t);
    out.add(new SparkRecords.Tuple2(t, t)); // shared
    out.add(new SparkRecords.Tuple2(t.key, t)); // a leaf reached twice
    out.add(new SparkRecords.Tuple2(null, null));
    out.add(new SparkRecords.Tuple2("é ü ß", "\u4e2d\u6587")); // Latin-1 and UTF-16 strings
    Node self = new Node(3);
    self.left = self; // a cycle through the root
    self.any = Op.PLUS; // an enum constant with a body
    self.label = "self";
    out.add(self);
    Node a = new Node(1);
    Node b = new Node(2);
    a.left = b;
    b.right = a;
    a.any = new Object[] {b, "x", 5L, null, new int[] {1, 2}};
    b.any = new ArrayList<>(List.of(1, 2, 3, "three"));
    out.add(a);
    Derived d = new Derived();
    d.name = "derived";
    Derived parent = new Derived(); // a Base field holding a subclass
    parent.parent = new Base();
    d.parent = parent;
    out.add(d);
    Node[] nodes = {a, b, null};
    out.add(new SparkRecords.Tuple2(nodes, List.of("immutable"))); // general path: List.of
    out.add(new ArrayList<>(List.of(new ArrayList<>(List.of(1)), new ArrayList<>()))); // nested
    for (long seed = 0; seed < 60; seed++) out.add(RandomGraphs.graph(seed * 17 + 3, 8));
    return out;
  }

  /** Reads {@code frame} on the general path: a trace recorder turns the fast paths off. */
  private Object readGeneral(byte[] frame) throws Exception {
    try (CerealTrace t = CerealTrace.start(OutputStream.nullOutputStream(), "general")) {
      return cereal.deserialize(frame);
    }
  }

  @Test
  void smallFramesReadAsTheGeneralPathReadsThem() throws Exception {
    int compact = 0;
    for (Object r : records()) {
      byte[] frame = cereal.serialize(r);
      if ((frame[2] & Format.FLAG_COMPACT) != 0) compact++;
      Object fast = cereal.deserialize(frame);
      assertSameGraph(r, fast);
      assertSameGraph(readGeneral(frame), fast);
    }
    assertTrue(compact > 300, "compact frames: " + compact);
  }

  /** Serializes {@code root} by the walk: a trace recorder turns the direct paths off. */
  private byte[] writeWalk(Object root) throws Exception {
    try (CerealTrace t = CerealTrace.start(OutputStream.nullOutputStream(), "walk")) {
      return cereal.serialize(root);
    }
  }

  @Test
  void smallGraphsWriteWhatTheWalkWrites() throws Exception {
    List<Object> records = records();
    // Past the small path's bounds: 127 value words and references, 32 strings and boxes, 32
    // other objects, strings past 1,016 bytes.
    for (int n : new int[] {30, 31, 32, 33, 62, 63, 64, 120, 126, 127, 128, 300}) {
      List<Object> boxes = new ArrayList<>();
      List<Object> nodes = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        boxes.add(i % 3 == 0 ? Integer.valueOf(1000 + i) : (Object) ("s" + i));
        nodes.add(new Node(i));
      }
      records.add(new SparkRecords.Tuple2(boxes, null));
      records.add(new SparkRecords.Tuple2(nodes, boxes));
      records.add(new SparkRecords.Tuple2("x".repeat(8 * n), new long[n]));
      records.add(new Object[] {new int[n], new String[] {"a", null}, Op.PLUS});
    }
    int small = 0;
    for (Object r : records) {
      byte[] walk = writeWalk(r);
      byte[] direct = cereal.serialize(r);
      assertArrayEquals(walk, direct, () -> "record " + r);
      if ((walk[2] & Format.FLAG_COMPACT) != 0 && walk.length <= GraphWriter.SMALL_MAX_BYTES) small++;
      // Through a stream: the frame written into its buffer is the same.
      java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
      try (CerealOutput out = cereal.newOutput(bytes)) {
        out.writeObject(r);
      }
      assertArrayEquals(walk, bytes.toByteArray());
    }
    assertTrue(small > 300, "small frames: " + small);
  }

  @Test
  void aStreamOfRecordsReadsBackThroughOneInput() throws Exception {
    List<Object> records = records();
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    try (CerealOutput out = cereal.newOutput(bytes)) {
      for (Object r : records) out.writeObject(r);
    }
    byte[] stream = bytes.toByteArray();
    try (CerealInput in = cereal.newInput(stream, 0, stream.length)) {
      for (Object r : records) assertSameGraph(r, in.readObject());
    }
  }

  @Test
  void declaredFieldClassesWriteWhatTheirLookUpWrites() {
    // A field declared Base holding a Base and a Derived, one declared Object holding an enum
    // constant's own class (Op.PLUS is an Op$1): the writer's shortcut for the declared class
    // must not give a subclass's object its parent's ID.
    Derived d = new Derived();
    d.parent = new Derived();
    ((Derived) d.parent).parent = new Base();
    Object copy = cereal.deserialize(cereal.serialize(d));
    assertSameGraph(d, copy);
    assertSame(Derived.class, ((Derived) copy).parent.getClass());
    assertSame(Base.class, ((Derived) ((Derived) copy).parent).parent.getClass());
    Node n = new Node(1);
    n.any = Op.TIMES;
    assertSame(Op.TIMES, ((Node) cereal.deserialize(cereal.serialize(n))).any);
    // A declared class registered after the class whose field it types.
    Cereal late = new Cereal();
    late.register(Derived.class);
    late.register(Base.class);
    Derived e = new Derived();
    e.parent = new Base();
    Derived f = new Derived();
    f.parent = e;
    for (Derived x : List.of(e, f)) {
      Object c = late.deserialize(late.serialize(x));
      assertSameGraph(x, c);
      assertSame(x.parent.getClass(), ((Derived) c).parent.getClass());
    }
  }

  /**
   * 30,000 mutants of the records' frames: the fast path decodes what the general path decodes,
   * to the same graph, and rejects the rest with the general path's message.
   */
  @Test
  void mutantsReadAlikeOnBothPaths() {
    List<byte[]> corpus = new ArrayList<>();
    for (Object r : records()) {
      byte[] f = cereal.serialize(r);
      if ((f[2] & Format.FLAG_COMPACT) != 0) corpus.add(f);
    }
    Map<String, Integer> outcomes = new TreeMap<>();
    Random r = new Random(20261207L);
    for (int batch = 0; batch < 3; batch++) {
      long batchSeed = r.nextLong();
      assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
        Random br = new Random(batchSeed);
        for (int i = 0; i < 10_000; i++) {
          int how = br.nextInt(8);
          byte[] m = MutationTest.mutate(corpus.get(br.nextInt(corpus.size())), how, br);
          Object fast = null;
          Object general = null;
          String fastError = null;
          String generalError = null;
          try {
            fast = cereal.deserialize(m);
          } catch (CerealException e) {
            fastError = e.getMessage();
          }
          try {
            general = readGeneral(m);
          } catch (CerealException e) {
            generalError = e.getMessage();
          } catch (Exception e) {
            fail("mutation " + how + ": " + e);
          }
          assertEquals(generalError, fastError, "mutation " + how + " of batch seed " + batchSeed + " item " + i);
          if (fastError == null) {
            try {
              assertSameGraph(general, fast);
            } catch (AssertionError e) {
              // A mutant can make a hashed set of objects that hash by identity (the general
              // path reads those frames both times), ordered apart: compare the objects by class.
              assertEquals(MutationTest.classCounts(general), MutationTest.classCounts(fast),
                  "mutation " + how + " of batch seed " + batchSeed + " item " + i);
            }
            outcomes.merge("decoded", 1, Integer::sum);
          } else {
            outcomes.merge("rejected", 1, Integer::sum);
          }
        }
      });
    }
    assertTrue(outcomes.getOrDefault("decoded", 0) > 1_000, outcomes.toString());
    assertTrue(outcomes.getOrDefault("rejected", 0) > 10_000, outcomes.toString());
  }
}
