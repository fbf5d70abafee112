package dev.optimus.cereal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.optimus.cereal.trace.CerealTrace;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The trace the accelerator model reads: its counts for small graphs, decoded here by hand. */
class TraceTest {
  /** A minimal reader of the trace format of {@link CerealTrace}. */
  private static final class Reader {
    final byte[] b;
    int pos;

    Reader(byte[] b) {
      this.b = b;
    }

    int varint() {
      int v = 0;
      for (int shift = 0; ; shift += 7) {
        int x = b[pos++] & 0xFF;
        v |= (x & 0x7F) << shift;
        if (x < 0x80) return v;
      }
    }

    int[] ints(int n) {
      int[] out = new int[n];
      for (int i = 0; i < n; i++) out[i] = varint();
      return out;
    }
  }

  private static Cereal cereal() {
    Cereal c = new Cereal();
    for (Class<?> k : BenchData.CLASSES) c.register(k);
    return c;
  }

  private static Reader header(byte[] trace, String label) {
    Reader r = new Reader(trace);
    assertArrayEquals(CerealTrace.MAGIC, java.util.Arrays.copyOf(trace, 4));
    r.pos = 4;
    assertEquals(CerealTrace.VERSION, r.b[r.pos++]);
    int n = r.varint();
    assertEquals(label, new String(trace, r.pos, n, StandardCharsets.UTF_8));
    r.pos += n;
    return r;
  }

  @Test
  void aListOfThreeIsThreeObjectsEachPointingToTheNext() throws Exception {
    Cereal c = cereal();
    c.setCompactFrames(false); // the full frame, with its bitmap
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] frame;
    try (CerealTrace t = CerealTrace.start(out, "list3")) {
      frame = c.serialize(BenchData.list(3));
      c.deserialize(frame);
      assertArrayEquals(new long[] {1, 1}, t.counts());
    }
    assertNull(CerealTrace.active());
    Reader r = header(out.toByteArray(), "list3");
    assertEquals('S', r.b[r.pos++]);
    // 3 objects, 12 layout words (header, long, int, next), 72 value bytes, one bucket
    // (width byte + 3 one-byte references), bitmap: one mask byte + one group.
    assertArrayEquals(new int[] {3, 12, 72, 4, 9, frame.length}, r.ints(6));
    int id = 32 + 7; // ListNode's registration, the 8th of BenchData.CLASSES
    assertArrayEquals(new int[] {id, 3, 1, 4 + 1}, r.ints(4));
    assertArrayEquals(new int[] {id, 3, 1, 8 + 1}, r.ints(4));
    assertArrayEquals(new int[] {id, 3, 1, 0}, r.ints(4));
    assertEquals('D', r.b[r.pos++]);
    // 3 objects allocated, 9 value words (6 copied besides the headers), 3 references fixed.
    assertArrayEquals(new int[] {3, 9, 3, 4, 9, 1, 0}, r.ints(7));
    assertEquals('E', r.b[r.pos++]);
    assertArrayEquals(new int[] {1, 1}, r.ints(2));
    assertEquals(r.b.length, r.pos);
  }

  @Test
  void sharedTargetsAndCyclesPointBackToTheirFirstWord() throws Exception {
    Cereal c = cereal();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (CerealTrace t = CerealTrace.start(out, "ring")) {
      c.serialize(BenchData.graph(3, 2));
    }
    Reader r = header(out.toByteArray(), "ring");
    assertEquals('S', r.b[r.pos++]);
    int[] h = r.ints(6);
    assertEquals(6, h[0]); // 3 vertices and their 3 edge arrays
    int word = 0;
    List<Integer> starts = new ArrayList<>();
    List<Integer> targets = new ArrayList<>();
    for (int i = 0; i < h[0]; i++) {
      starts.add(word);
      int[] o = r.ints(3);
      for (int k = 0; k < o[2]; k++) targets.add(r.varint() - 1);
      word += o[1] + o[2];
    }
    assertEquals(h[1], word);
    // 3 vertex references (edges arrays) + 6 edges; every target is an object's first word,
    // and a ring of 3 with a random edge each reaches some vertex twice.
    assertEquals(9, targets.size());
    for (int tg : targets) assertEquals(true, starts.contains(tg), "target " + tg);
    assertEquals(true, targets.stream().filter(tg -> tg == 0).count() >= 1, "the cycle back to the root");
    assertEquals('E', r.b[r.pos++]);
    assertArrayEquals(new int[] {1, 0}, r.ints(2));
  }

  @Test
  void offByDefaultAndOneRecorderAtATime() throws Exception {
    assertNull(CerealTrace.active());
    cereal().serialize(BenchData.list(2)); // nothing installed: nothing recorded, no error
    try (CerealTrace t = CerealTrace.start(new ByteArrayOutputStream(), "a")) {
      assertThrows(IllegalStateException.class, () -> CerealTrace.start(new ByteArrayOutputStream(), "b"));
    }
    assertNull(CerealTrace.active());
  }
}
