package dev.optimus.cereal;

import static dev.optimus.cereal.GraphAssert.assertSameGraph;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.optimus.cereal.Model.Node;
import dev.optimus.cereal.trace.CerealTrace;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.InputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The compact frame of small graphs ({@link Format}): its bytes, the boundary with the full frame,
 * the direct paths for string and boxed roots (the same bytes and objects as the graph walk),
 * corrupt compact frames, and the buffered streams that carry them.
 */
class CompactFrameTest {
  private final Cereal cereal = Model.register(new Cereal());

  {
    cereal.register(Scalars.class);
  }

  /** A record of primitive fields only, which the direct paths take too. */
  static final class Scalars {
    int user;
    int item;
    double score;
    boolean seen;
    char grade;
    byte b;
    short s;
    float f;
    long when;

    Scalars(int k) {
      user = k;
      item = -k;
      score = k / 3.0;
      seen = k % 2 == 0;
      grade = (char) ('A' + k);
      b = (byte) k;
      s = (short) (k * 1000);
      f = k * 1.5f;
      when = Long.MAX_VALUE - k;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Scalars x && x.user == user && x.item == item && x.score == score
          && x.seen == seen && x.grade == grade && x.b == b && x.s == s && x.f == f && x.when == when;
    }

    @Override
    public int hashCode() {
      return user;
    }
  }

  /** The worked example of docs/cereal.md as a compact frame. */
  @Test
  void workedExample() {
    Cereal c = new Cereal();
    c.register(Node.class); // ID 32
    Node n = new Node(5);
    n.label = "hi";
    n.left = n;
    String expected = String.join("",
        "ce0102", "28", // magic, version, flags (compact), body length 40
        "00", "04", "04", // no names, 4 value words, 4 references
        "2000000000000000", // word 0: Node's header, class ID 32
        "0500000000000000", // word 1: value = 5
        // words 2..5 are Node's references any, label, left, right: in the reference array
        "0100000004000000", // word 6: String's header, ID 1, 2 chars << 1 | Latin-1
        "6869000000000000", // word 7: "hi"
        "01" + "00" + "06" + "07" + "00"); // one bucket of width 1: null, +3, -4, null
    byte[] bytes = c.serialize(n);
    assertEquals(expected, HexFormat.of().formatHex(bytes));
    Node back = (Node) c.deserialize(bytes);
    assertSame(back, back.left);
    assertEquals("hi", back.label);
    // The full frame of the same graph reads back the same, whatever the reader writes.
    Cereal full = new Cereal();
    full.register(Node.class);
    full.setCompactFrames(false);
    byte[] fullBytes = full.serialize(n);
    assertEquals(0, fullBytes[2]);
    assertSameGraph(n, full.deserialize(bytes));
    assertSameGraph(n, c.deserialize(fullBytes));
  }

  @Test
  void compactUpToTheLimitThenFull() {
    // A list of k ListNodes takes 4 words each (header, long, int, next).
    int last = Format.COMPACT_MAX_WORDS / 4;
    for (int k : new int[] {1, 2, 3, 16, 17, 33, last - 1, last, last + 1, 2 * last}) {
      Object list = BenchData.list(k);
      Cereal c = new Cereal();
      for (Class<?> t : BenchData.CLASSES) c.register(t);
      byte[] f = c.serialize(list);
      int flags = f[2];
      assertEquals(4 * k <= Format.COMPACT_MAX_WORDS ? Format.FLAG_COMPACT : 0, flags, "list of " + k);
      assertSameGraph(list, c.deserialize(f));
    }
    Object[] empty = {};
    assertArrayEquals(empty, (Object[]) cereal.deserialize(cereal.serialize(empty)));
    assertNull(cereal.deserialize(cereal.serialize(null)));
    assertEquals("ce010203000000", HexFormat.of().formatHex(cereal.serialize(null)));
  }

  /** Roots that take the direct paths, with their neighbours that do not. */
  private static List<Object> leaves() {
    List<Object> l = new ArrayList<>();
    StringBuilder sb = new StringBuilder();
    for (int n = 0; n <= 8 * 63 + 2; n++) { // direct up to 63 words of chars
      l.add(sb.toString());
      sb.append((char) ('a' + n % 26));
    }
    l.add("x".repeat(2000)); // a compact frame by the walk
    l.add("y".repeat(9000)); // a full frame
    l.add("\u00e9t\u00e9"); // Latin-1 past ASCII
    l.add("\u0394\u03b5\u03bb\u03c4\u03b1"); // UTF-16: the walk
    l.addAll(List.of(true, false, (byte) -1, (short) -32768, 'x', '\uffff', 0, -1, 127, 128,
        Integer.MIN_VALUE, Integer.MAX_VALUE, 0L, Long.MIN_VALUE, Long.MAX_VALUE, 1.5f, Float.NaN,
        -0.0, Double.MAX_VALUE, Double.longBitsToDouble(0x7ff8000000000123L)));
    l.add(new Scalars(0));
    l.add(new Scalars(7));
    l.add(new Model.AllPrimitives()); // with reference fields: the walk
    l.add(new int[] {1, 2});
    l.add(new Node(3));
    return l;
  }

  @Test
  void directPathsWriteAndReadWhatTheWalkDoes() throws Exception {
    List<Object> leaves = leaves();
    List<byte[]> direct = new ArrayList<>();
    for (Object o : leaves) direct.add(cereal.serialize(o));
    // With a trace recorder installed, every graph takes the walk (so the trace sees it).
    List<byte[]> walked = new ArrayList<>();
    List<Object> walkedBack = new ArrayList<>();
    try (CerealTrace t = CerealTrace.start(new ByteArrayOutputStream(), "leaves")) {
      for (Object o : leaves) walked.add(cereal.serialize(o));
      for (byte[] f : direct) walkedBack.add(cereal.deserialize(f));
    }
    for (int i = 0; i < leaves.size(); i++) {
      Object o = leaves.get(i);
      assertArrayEquals(walked.get(i), direct.get(i), "bytes of " + o);
      Object back = cereal.deserialize(direct.get(i));
      assertSameGraph(o, back);
      assertSameGraph(walkedBack.get(i), back);
      if (o instanceof Double d) assertEquals(Double.doubleToRawLongBits(d), Double.doubleToRawLongBits((Double) back));
      if (o instanceof Scalars) assertEquals(o, back);
    }
  }

  @Test
  void corruptCompactFramesAreClearErrors() {
    Cereal c = new Cereal();
    c.register(Node.class);
    Node n = new Node(5);
    n.label = "hi";
    byte[] good = c.serialize(n);
    // More words than a compact frame may have: 1000 value words and 100 references, and
    // counts whose sum overflows an int.
    assertMessage(c, HexFormat.of().parseHex("ce01020400e80764"), "over its 1024 layout words");
    assertMessage(c, HexFormat.of().parseHex("ce01020b00ffffffff07ffffffff07"), "over its 1024 layout words");
    // A reference count that the objects' layouts disagree with.
    byte[] refs = good.clone();
    refs[6] = 3;
    assertMessage(c, refs, "more references than are left");
    refs[6] = 5;
    assertMessage(c, refs, "the frame says 5");
    // A value array past the frame.
    byte[] past = good.clone();
    past[5] = 40;
    assertMessage(c, past, "runs past");
    // Reference bytes left over, or missing.
    byte[] more = Arrays.copyOf(good, good.length + 1);
    more[3]++;
    assertMessage(c, more, "past the last reference");
    byte[] less = Arrays.copyOf(good, good.length - 1);
    less[3]--;
    assertMessage(c, less, "reference");
    // No objects, yet references.
    assertMessage(c, HexFormat.of().parseHex("ce010203000001"), "no objects");
    // A leaf frame with a string header whose length disagrees takes the walk, which refuses it.
    byte[] s = c.serialize("hello");
    s[11] = 20; // the header's high word: 10 chars, in a frame of 1 word of chars
    assertMessage(c, s, "runs past the value array");
    // Unknown flags.
    byte[] flags = good.clone();
    flags[2] = 4;
    assertMessage(c, flags, "unknown frame flags");
    // Registration that disagrees with the writer's: another layout under ID 32.
    Cereal other = new Cereal();
    other.register(Model.Key.class, 32);
    assertThrows(CerealException.class, () -> other.deserialize(good));
  }

  private static void assertMessage(Cereal c, byte[] frame, String part) {
    CerealException e = assertThrows(CerealException.class, () -> c.deserialize(frame));
    assertTrue(e.getMessage().contains(part), e.getMessage());
  }

  /** Small records of every kind a Spark stream holds, as compact frames. */
  private List<byte[]> recordCorpus() {
    List<byte[]> frames = new ArrayList<>();
    Node pair = new Node(1);
    pair.label = "word";
    pair.any = 42L;
    frames.add(cereal.serialize(pair));
    frames.add(cereal.serialize("serialization"));
    frames.add(cereal.serialize(7));
    frames.add(cereal.serialize(2.5));
    frames.add(cereal.serialize(new double[] {1, 2, 3}));
    frames.add(cereal.serialize(new ArrayList<>(List.of(1, 2, 3, "x"))));
    frames.add(cereal.serialize(Map.of("k", List.of(1))));
    frames.add(cereal.serialize(new Object[] {"a", "a", null, 3}));
    for (long seed = 0; seed < 16; seed++) frames.add(cereal.serialize(RandomGraphs.graph(seed * 31, 6)));
    for (byte[] f : frames) assertEquals(Format.FLAG_COMPACT, f[2] & Format.FLAG_COMPACT, "compact corpus");
    return frames;
  }

  @Test
  void fiftyThousandCompactMutantsDecodeOrFailCleanly() {
    List<byte[]> corpus = recordCorpus();
    Map<String, Integer> outcomes = new TreeMap<>();
    Random r = new Random(20261207);
    for (int batch = 0; batch < 5; batch++) {
      long batchSeed = r.nextLong();
      assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
        Random br = new Random(batchSeed);
        for (int i = 0; i < 10_000; i++) {
          int how = br.nextInt(8);
          byte[] m = MutationTest.mutate(corpus.get(br.nextInt(corpus.size())), how, br);
          if (how == 5 && m.length > 3) m[2] = Format.FLAG_COMPACT; // random bytes: compact
          String outcome;
          try {
            if (br.nextBoolean()) {
              try (CerealInput in = cereal.newInput(m, 0, m.length)) {
                in.readObject();
              }
            } else {
              cereal.deserialize(m);
            }
            outcome = "decoded";
          } catch (CerealException e) {
            if (e.getMessage() == null || e.getMessage().isEmpty()) fail("CerealException without a message");
            if (e.getCause() != null && !e.getMessage().contains("cannot fill")) {
              throw new AssertionError("mutation " + how + ": an error no check caught: " + e, e);
            }
            outcome = e.getCause() == null ? "CerealException" : "CerealException(fill)";
          } catch (EOFException e) {
            if (m.length != 0) fail("EOFException on a non-empty stream of mutation " + how);
            outcome = "EOF on empty input";
          } catch (Throwable t) {
            throw new AssertionError("mutation " + how + " of batch seed " + batchSeed + " item " + i
                + " raised " + t, t);
          }
          outcomes.merge(outcome, 1, Integer::sum);
        }
      });
    }
    System.out.println("compact mutation outcomes: " + outcomes);
    assertTrue(outcomes.getOrDefault("CerealException", 0) > 25_000, outcomes.toString());
  }

  /**
   * The writer's visited set hashes strings and boxes by value: distinct objects of one value
   * stay distinct, shared ones shared, and 50,000 equal boxes are not quadratic.
   */
  @Test
  void equalValuesStayDistinctAndSharedOnesShared() {
    List<Object> l = new ArrayList<>();
    Long shared = Long.valueOf(1000);
    for (int i = 0; i < 50_000; i++) {
      l.add(Long.valueOf(1000)); // a new object each time (past the cache of -128..127)
      l.add(shared);
      l.add(new String("same"));
    }
    assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
      @SuppressWarnings("unchecked")
      List<Object> back = (List<Object>) cereal.deserialize(cereal.serialize(l));
      assertSameGraph(l, back);
      assertSame(back.get(1), back.get(4));
      assertTrue(back.get(0) != back.get(3));
    });
    // The same in a record of a few dozen objects (a compact frame, past the writer's scan).
    List<Object> small = new ArrayList<>(l.subList(0, 90));
    assertSameGraph(small, cereal.deserialize(cereal.serialize(small)));
  }

  /**
   * Boxes and strings of small graphs are found through the writer's value-hashed table (boxes
   * written on their own path, without the queue): the same bytes as the walk with a trace
   * recorder on, which takes the general path, below and past the table's 32 values, with
   * shared, equal and distinct boxes of every type.
   */
  @Test
  void boxesOfSmallGraphsWriteWhatTheWalkDoes() throws Exception {
    Random r = new Random(50);
    Object[] kinds = {1, 1L, 1.5, 1.5f, (short) 3, (byte) 4, 'c', true};
    for (int n = 0; n <= 80; n++) {
      List<Object> l = new ArrayList<>();
      List<Object> made = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        Object o;
        switch (r.nextInt(5)) {
          case 0: o = made.isEmpty() ? "s" : made.get(r.nextInt(made.size())); break; // shared
          case 1: o = new String("w" + r.nextInt(4)); break; // equal strings, distinct objects
          case 2: o = Integer.valueOf(1000 + r.nextInt(3)); break; // equal boxes, distinct
          default: o = box(kinds[r.nextInt(kinds.length)], r.nextInt(300) - 150);
        }
        made.add(o);
        l.add(o);
      }
      Object graph = l;
      if (n % 2 == 1) {
        Node node = new Node(n);
        node.label = "n";
        node.any = l;
        graph = node;
      }
      byte[] direct = cereal.serialize(graph);
      byte[] walked;
      try (CerealTrace t = CerealTrace.start(new ByteArrayOutputStream(), "boxes")) {
        walked = cereal.serialize(graph);
      }
      assertArrayEquals(walked, direct, "graph of " + n + " values");
      assertSameGraph(graph, cereal.deserialize(direct));
    }
  }

  private static Object box(Object kind, int v) {
    if (kind instanceof Integer) return Integer.valueOf(v * 1000);
    if (kind instanceof Long) return Long.valueOf(v * 1000L);
    if (kind instanceof Double) return Double.valueOf(v / 7.0);
    if (kind instanceof Float) return Float.valueOf(v / 7f);
    if (kind instanceof Short) return Short.valueOf((short) v);
    if (kind instanceof Byte) return Byte.valueOf((byte) v);
    if (kind instanceof Character) return Character.valueOf((char) (v + 200));
    return Boolean.valueOf(v % 2 == 0);
  }

  /**
   * A stream writes leaf records (strings up to the direct path's 504 chars, boxes, records of
   * primitive fields) straight into its buffer: the bytes are the frames {@code serialize}
   * gives, across block boundaries, between graphs and after {@code reset()}.
   */
  @Test
  void streamLeavesAreTheFramesSerializeGives() throws Exception {
    Random r = new Random(51);
    ByteArrayOutputStream expected = new ByteArrayOutputStream();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    List<Object> records = new ArrayList<>();
    try (CerealOutput out = cereal.newOutput(bytes)) {
      for (int i = 0; i < 3000; i++) {
        Object o;
        switch (r.nextInt(5)) {
          case 0: o = "x".repeat(r.nextInt(520)); break;
          case 1: o = (long) r.nextInt(); break;
          case 2: o = new Scalars(i); break;
          case 3: {
            Node node = new Node(i);
            node.label = "v" + i;
            o = node;
            break;
          }
          default: o = r.nextDouble();
        }
        if (i % 700 == 0) out.reset(); // the next frame carries the reset flag, leaf or not
        records.add(o);
        out.writeObject(o);
        byte[] f = cereal.serialize(o);
        if (i % 700 == 0) f[2] |= Format.FLAG_RESET_CLASSES;
        expected.write(f);
      }
    }
    assertArrayEquals(expected.toByteArray(), bytes.toByteArray());
    try (CerealInput in = cereal.newInput(new ByteArrayInputStream(bytes.toByteArray()))) {
      for (Object o : records) assertSameGraph(o, in.readObject());
    }
  }

  /**
   * A stream that names classes and resets its names before every record, as the Spark
   * serializer's does with registration optional: leaves (which carry the reset flag) and named
   * graphs in turn.
   */
  @Test
  void leavesAmongNamedRecordsOfAResettingStream() throws Exception {
    Cereal open = new Cereal();
    open.setRegistrationRequired(false);
    List<Object> records = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      Node n = new Node(i);
      n.label = "n" + i;
      records.add(n);
      records.add("word" + i);
      records.add((long) i << 40);
      records.add(new Scalars(i));
      records.add(new Model.Key("k", i));
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (CerealOutput out = open.newOutput(bytes)) {
      for (Object r : records) {
        out.reset();
        out.writeObject(r);
      }
    }
    byte[] all = bytes.toByteArray();
    try (CerealInput in = open.newInput(all, 0, all.length)) {
      for (Object r : records) {
        Object back = in.readObject();
        if (r instanceof Scalars) assertEquals(r, back);
        else assertSameGraph(r, back);
      }
      assertThrows(EOFException.class, in::readObject);
    }
  }

  @Test
  void streamsBufferFramesAndInterleaveForeignBytes() throws Exception {
    List<byte[]> corpus = recordCorpus();
    List<Object> graphs = new ArrayList<>();
    for (byte[] f : corpus) graphs.add(cereal.deserialize(f));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (CerealOutput out = cereal.newOutput(bytes)) {
      for (int k = 0; k < 400; k++) out.writeObject(graphs.get(k % graphs.size()));
      assertEquals(bytes.size(), out.bytesWritten()); // handed over in blocks...
      assertTrue(bytes.size() < out.bytesWritten() + CerealOutput.BLOCK);
      out.flush(); // ...and the rest on flush
      assertEquals(bytes.size(), out.bytesWritten());
    }
    byte[] all = bytes.toByteArray();
    // Read from a stream that hands out a few bytes at a time, and from the array in place.
    InputStream trickle = new ByteArrayInputStream(all) {
      @Override
      public synchronized int read(byte[] b, int off, int len) {
        return super.read(b, off, Math.min(len, 3));
      }
    };
    for (CerealInput in : List.of(cereal.newInput(trickle), cereal.newInput(all, 0, all.length))) {
      for (int k = 0; k < 400; k++) assertSameGraph(graphs.get(k % graphs.size()), in.readObject());
      assertEquals(all.length, in.position());
      assertEquals(-1, in.peek());
      assertThrows(EOFException.class, in::readObject);
    }
    // Foreign records between frames, read through the stream view (Spark's Java records).
    ByteArrayOutputStream mixed = new ByteArrayOutputStream();
    mixed.write(cereal.serialize("one"));
    mixed.write(new byte[] {'J', 1, 2, 3});
    mixed.write(cereal.serialize(2));
    try (CerealInput in = cereal.newInput(new ByteArrayInputStream(mixed.toByteArray()))) {
      assertEquals(Format.MAGIC, in.peek());
      assertEquals("one", in.readObject());
      assertEquals('J', in.peek());
      InputStream rest = in.asInputStream();
      assertEquals('J', rest.read());
      assertArrayEquals(new byte[] {1, 2, 3}, rest.readNBytes(3));
      assertEquals(2, in.readObject());
      assertEquals(-1, rest.read());
    }
    // A stream cut inside a frame: an error at the stream's end, not an end of stream.
    byte[] cut = Arrays.copyOf(all, all.length - 2);
    try (CerealInput in = cereal.newInput(cut, 0, cut.length)) {
      CerealException e = assertThrows(CerealException.class, () -> {
        while (true) in.readObject();
      });
      assertEquals(cut.length, e.byteOffset(), e.getMessage());
    }
  }
}
