package dev.optimus.cereal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Corrupt input: 100,000 mutated frames (bit flips, byte overwrites, truncations, insertions,
 * deletions, random bytes, huge counts) must each decode or raise {@link CerealException};
 * anything else (another exception, an error, an out-of-memory under surefire's -Xmx512m) fails,
 * and each batch must finish in time (no hang).
 */
class MutationTest {
  private static final int MUTANTS = 100_000;
  private static final int BATCH = 10_000;

  private final Cereal cereal = Model.register(new Cereal());

  private List<byte[]> corpus() {
    List<byte[]> frames = new ArrayList<>();
    for (long seed = 0; seed < 24; seed++) frames.add(cereal.serialize(RandomGraphs.graph(seed * 7919, 60)));
    // The same graphs as full frames (most of the above are compact), which readers take too.
    Cereal full = Model.register(new Cereal());
    full.setCompactFrames(false);
    for (long seed = 0; seed < 24; seed++) frames.add(full.serialize(RandomGraphs.graph(seed * 7919, 60)));
    frames.add(cereal.serialize(null));
    frames.add(cereal.serialize("just a string"));
    frames.add(cereal.serialize(new long[] {1, 2, 3}));
    frames.add(cereal.serialize(List.of(Map.of("k", new int[] {1}), "x")));
    return frames;
  }

  @Test
  void hundredThousandMutantsDecodeOrFailCleanly() {
    List<byte[]> corpus = corpus();
    Map<String, Integer> outcomes = new TreeMap<>();
    Random r = new Random(20200530);
    for (int batch = 0; batch < MUTANTS / BATCH; batch++) {
      long batchSeed = r.nextLong();
      assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
        Random br = new Random(batchSeed);
        for (int i = 0; i < BATCH; i++) {
          byte[] base = corpus.get(br.nextInt(corpus.size()));
          int how = br.nextInt(8);
          byte[] m = mutate(base, how, br);
          String outcome;
          try {
            if (br.nextInt(4) == 0) {
              try (CerealInput in = cereal.newInput(new ByteArrayInputStream(m))) {
                in.readObject();
              }
            } else {
              cereal.deserialize(m);
            }
            outcome = "decoded";
          } catch (CerealException e) {
            if (e.getMessage() == null || e.getMessage().isEmpty()) fail("CerealException without a message");
            if (e.getCause() == null) {
              outcome = "CerealException";
            } else if (e.getMessage().contains("cannot fill")) {
              // A collection refused its decoded content (a null in an ArrayDeque, keys a
              // TreeMap cannot compare): the collection's own exception, wrapped.
              outcome = "CerealException(fill: " + e.getCause().getClass().getSimpleName() + ")";
            } else {
              throw new AssertionError("mutation " + how + ": an error no check caught: " + e, e);
            }
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
    int total = outcomes.values().stream().mapToInt(Integer::intValue).sum();
    assertEquals(MUTANTS, total);
    System.out.println("mutation outcomes: " + outcomes);
    assertTrue(outcomes.getOrDefault("CerealException", 0) > MUTANTS / 2, outcomes.toString());
  }

  /**
   * Parallel deserialization (pass 1's scan and allocation, pass 2's fix-up, on 2 threads) and
   * the sequential reader agree on 10,000 corrupted full frames of graphs of up to 1,500 objects:
   * both decode, to the same graph, or both raise {@code CerealException}.
   */
  @Test
  void parallelAndSequentialReadersAgreeOnMutants() {
    Cereal full = Model.register(new Cereal());
    full.setCompactFrames(false);
    full.setDeserializationThreads(1);
    Cereal parallel = Model.register(new Cereal());
    parallel.setDeserializationThreads(2);
    parallel.setParallelThreshold(1);
    List<byte[]> frames = new ArrayList<>();
    for (long seed = 0; seed < 12; seed++) frames.add(full.serialize(RandomGraphs.graph(seed * 104729, 1500)));
    Random r = new Random(502);
    Map<String, Integer> outcomes = new TreeMap<>();
    try (parallel) {
      assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
        for (int i = 0; i < 10_000; i++) {
          int how = r.nextInt(8);
          byte[] m = mutate(frames.get(r.nextInt(frames.size())), how, r);
          Object seq = decode(full, m);
          Object par = decode(parallel, m);
          if (seq instanceof CerealException || par instanceof CerealException) {
            if (!(seq instanceof CerealException && par instanceof CerealException)) {
              fail("mutation " + how + " #" + i + ": sequential " + seq + ", parallel " + par);
            }
            outcomes.merge("CerealException", 1, Integer::sum);
          } else {
            try {
              GraphAssert.assertSameGraph(seq, par);
            } catch (AssertionError e) {
              // A mutant can make a hashed set of objects that hash by identity, which the two
              // decodes order differently: then the objects reached, by class, must agree.
              assertEquals(classCounts(seq), classCounts(par), "mutation " + how + " #" + i);
            }
            outcomes.merge("decoded", 1, Integer::sum);
          }
        }
      });
    }
    System.out.println("parallel mutation outcomes: " + outcomes);
    assertTrue(outcomes.getOrDefault("decoded", 0) > 100, outcomes.toString());
  }

  /** How many objects of each class a graph reaches (fields, array elements, collections). */
  static Map<String, Integer> classCounts(Object root) {
    Map<String, Integer> counts = new TreeMap<>();
    java.util.Set<Object> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    java.util.ArrayDeque<Object> work = new java.util.ArrayDeque<>();
    if (root != null) work.push(root);
    while (!work.isEmpty()) {
      Object o = work.pop();
      if (!seen.add(o)) continue;
      Class<?> c = o.getClass();
      counts.merge(c.getName(), 1, Integer::sum);
      List<Object> next = new ArrayList<>();
      if (o instanceof Object[] a) {
        next.addAll(Arrays.asList(a));
      } else if (o instanceof Map<?, ?> m) {
        next.addAll(m.keySet());
        next.addAll(m.values());
      } else if (o instanceof java.util.Collection<?> coll) {
        next.addAll(coll);
      } else if (!c.isArray() && c.getName().startsWith("dev.optimus.")) {
        for (Class<?> k = c; k != null && k.getName().startsWith("dev.optimus."); k = k.getSuperclass()) {
          for (java.lang.reflect.Field f : k.getDeclaredFields()) {
            if (f.getType().isPrimitive() || java.lang.reflect.Modifier.isStatic(f.getModifiers())) continue;
            f.setAccessible(true);
            try {
              next.add(f.get(o));
            } catch (IllegalAccessException e) {
              throw new AssertionError(e);
            }
          }
        }
      }
      for (Object x : next) if (x != null) work.push(x);
    }
    return counts;
  }

  /** The graph a frame decodes to, or the {@code CerealException} it raises. */
  private static Object decode(Cereal c, byte[] frame) {
    try {
      return c.deserialize(frame);
    } catch (CerealException e) {
      return e;
    }
  }

  static byte[] mutate(byte[] base, int how, Random r) {
    byte[] m = base.clone();
    switch (how) {
      case 0 -> { // flip 1 to 4 bits
        for (int k = 1 + r.nextInt(4); k > 0; k--) m[r.nextInt(m.length)] ^= (byte) (1 << r.nextInt(8));
      }
      case 1 -> { // overwrite bytes with random values
        for (int k = 1 + r.nextInt(3); k > 0; k--) m[r.nextInt(m.length)] = (byte) r.nextInt(256);
      }
      case 2 -> m = Arrays.copyOf(m, r.nextInt(m.length)); // truncate
      case 3 -> { // insert random bytes
        int at = r.nextInt(m.length + 1), n = 1 + r.nextInt(9);
        byte[] x = new byte[m.length + n];
        System.arraycopy(m, 0, x, 0, at);
        for (int k = 0; k < n; k++) x[at + k] = (byte) r.nextInt(256);
        System.arraycopy(m, at, x, at + n, m.length - at);
        m = x;
      }
      case 4 -> { // delete a range
        int at = r.nextInt(m.length), n = 1 + r.nextInt(Math.min(16, m.length - at));
        byte[] x = new byte[m.length - n];
        System.arraycopy(m, 0, x, 0, at);
        System.arraycopy(m, at + n, x, at, m.length - at - n);
        m = x;
      }
      case 5 -> { // random bytes behind a valid frame prefix
        m = new byte[r.nextInt(64)];
        r.nextBytes(m);
        if (m.length > 3) {
          m[0] = (byte) Format.MAGIC;
          m[1] = (byte) Format.VERSION;
          m[2] = 0;
        }
      }
      case 6 -> { // a huge count in one of the header's varints
        int at = 4 + r.nextInt(Math.max(1, Math.min(8, m.length - 8)));
        if (at + 5 <= m.length) Format.putVarint(m, at, r.nextBoolean() ? Integer.MAX_VALUE : r.nextInt(1 << 24));
      }
      default -> { // a word of the value array set to a random header (class ID, length)
        int at = 12 + 8 * r.nextInt(Math.max(1, (m.length - 20) / 8));
        if (at + 8 <= m.length) {
          long v = (r.nextInt(40) & 0xFFFFFFFFL) | ((long) (r.nextBoolean() ? r.nextInt() : r.nextInt(64)) << 32);
          UnsafeAccess.putLong(m, at, v);
        }
      }
    }
    return m;
  }

  @Test
  void hugeDeclaredSizesFailFastWithoutAllocating() throws IOException {
    // A primitive array claiming 2^31 - 1 longs in a frame of a few bytes.
    byte[] frame = cereal.serialize(new long[] {7});
    int header = frame.length - 16 - 2; // value array: header word + one long; then 1 ref byte... find it
    byte[] hacked = frame.clone();
    int valueStart = indexOfWord(hacked, (long) Format.ID_A_LONG | (1L << 32));
    assertTrue(valueStart > 0 && header > 0);
    UnsafeAccess.putLong(hacked, valueStart, (long) Format.ID_A_LONG | ((long) Integer.MAX_VALUE << 32));
    CerealException e = assertThrows(CerealException.class, () -> cereal.deserialize(hacked));
    assertTrue(e.getMessage().contains("past the value array") && e.byteOffset() == valueStart, e.getMessage());
    // A frame length of 1 GiB on a stream of 10 bytes: the buffer grows only with real bytes.
    byte[] stream = {(byte) Format.MAGIC, (byte) Format.VERSION, 0, (byte) 0x80, (byte) 0x80,
        (byte) 0x80, (byte) 0x80, 0x04, 1, 2};
    try (CerealInput in = cereal.newInput(new ByteArrayInputStream(stream))) {
      e = assertThrows(CerealException.class, in::readObject);
      assertTrue(e.getMessage().contains("stream ends inside a frame"), e.getMessage());
    }
    // The same through an endless stream of zeros: the frame is read up to its length and no
    // further, and then it is simply corrupt.
    InputStream zeros = new InputStream() {
      long left = 64L << 20;

      @Override
      public int read() {
        return left-- > 0 ? 0 : -1;
      }

      @Override
      public int read(byte[] b, int off, int len) {
        if (left <= 0) return -1;
        int n = (int) Math.min(len, left);
        Arrays.fill(b, off, off + n, (byte) 0);
        left -= n;
        return n;
      }
    };
    ByteArrayOutputStream prefix = new ByteArrayOutputStream();
    prefix.write(stream, 0, 8);
    InputStream s = new java.io.SequenceInputStream(new ByteArrayInputStream(prefix.toByteArray()), zeros);
    try (CerealInput in = cereal.newInput(s)) {
      assertThrows(CerealException.class, in::readObject);
    }
  }

  private static int indexOfWord(byte[] b, long word) {
    for (int i = 0; i + 8 <= b.length; i++) if (UnsafeAccess.getLong(b, i) == word) return i;
    return -1;
  }
}
