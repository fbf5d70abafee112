package dev.optimus.cereal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.optimus.cereal.Model.Node;
import java.util.HexFormat;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The wire format byte by byte (the worked example of docs/cereal.md) and the packing rules. */
class FormatTest {
  @Test
  void workedExample() {
    Cereal c = new Cereal();
    c.setCompactFrames(false); // the full frame (the compact one: CompactFrameTest)
    c.register(Node.class); // ID 32
    Node n = new Node(5);
    n.label = "hi";
    n.left = n;
    String expected = String.join("",
        "ce0100", "34", // magic, version, flags, body length 52
        "00", "02", "04", "04", "05", "09", // classes, objects, value words, refs, ref bytes, bitmap bytes
        "2000000000000000", // word 0: Node's header, class ID 32
        "0500000000000000", // word 1: value = 5 (the int field, padded to a word)
        // words 2..5 are Node's references any, label, left, right: in the reference array
        "0100000004000000", // word 6: String's header, ID 1, 2 chars << 1 | Latin-1
        "6869000000000000", // word 7: "hi"
        "01" + "00" + "06" + "07" + "00", // one bucket of width 1: null, +3, -4, null (zigzag)
        "01" + "3c00000000000000"); // bitmap block 0: group 0 only, bits 2..5
    byte[] bytes = c.serialize(n);
    assertEquals(expected, HexFormat.of().formatHex(bytes));
    Node back = (Node) c.deserialize(bytes);
    assertEquals(back, back.left);
  }

  @Test
  void referenceBucketsKeepOnlySignificantBytes() {
    int[] refs = new int[40];
    refs[3] = 0x1FF; // bucket 0 needs 2 bytes
    refs[20] = 0x10000; // bucket 1 needs 3
    // bucket 2 (8 refs) is all null: one byte
    byte[] out = new byte[Packing.maxRefBytes(refs.length)];
    int n = Packing.packRefs(refs, refs.length, out);
    assertEquals(1 + 16 * 2 + 1 + 16 * 3 + 1, n);
    assertEquals(n, Packing.packedRefBytes(refs, refs.length, Format.BUCKET));
    assertEquals(40 + 2 + 3, Packing.packedRefBytes(refs, refs.length, 1), "a width byte per reference");
  }

  @Test
  void bitmapPacksToNonZeroGroups() {
    Random r = new Random(3);
    for (int t = 0; t < 200; t++) {
      int words = 1 + r.nextInt(1000);
      long[] bits = new long[(words + 63) >>> 6];
      for (int k = r.nextInt(6); k > 0; k--) {
        int from = r.nextInt(words), to = from + r.nextInt(words - from + 1);
        Packing.setRange(bits, from, to);
        for (int i = from; i < to; i++) assertEquals(1, bits[i >>> 6] >>> i & 1);
      }
      byte[] out = new byte[Packing.maxBitmapBytes(words)];
      int n = Packing.packBitmap(bits, words, out);
      long nonZero = 0;
      for (long g : bits) if (g != 0) nonZero++;
      assertEquals((bits.length + 7) / 8 + 8 * nonZero, n);
      assertArrayEquals(bits, Packing.unpackBitmap(out, 0, n, bits.length, 0));
    }
  }
}
