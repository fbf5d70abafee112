package dev.optimus.cereal;

import static dev.optimus.cereal.GraphAssert.assertSameGraph;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The reader keeps its per-graph tables from one graph to the next (one reader per thread for
 * {@link Cereal#deserialize}, one per {@link CerealInput}): nothing of an earlier graph may show
 * through in a later one.
 */
class ReaderReuseTest {
  private final Cereal cereal = Model.register(new Cereal());

  @Test
  void aReferenceToWhereTheLastGraphHadAnObjectIsCorrupt() {
    Cereal full = Model.register(new Cereal());
    full.setCompactFrames(false);
    aReferenceToWhereTheLastGraphHadAnObjectIsCorrupt(full, 9); // the bitmap follows the references
    aReferenceToWhereTheLastGraphHadAnObjectIsCorrupt(cereal, 0); // compact: they end the frame
  }

  private static void aReferenceToWhereTheLastGraphHadAnObjectIsCorrupt(Cereal cereal, int after) {
    // Graph A: an array of two strings; "y" starts at layout word 5.
    Object[] a = {"x", "y"};
    assertArrayEquals(a, (Object[]) cereal.deserialize(cereal.serialize(a)));
    // Graph B: an array of a 16-char string (words 3 to 5) and null. Its second reference, in
    // word 2, is made to point at word 5: the middle of B's string, where A had "y".
    byte[] b = cereal.serialize(new Object[] {"abcdefghijklmnop", null});
    int refs = b.length - after - 3; // the reference array: width 1, zigzag(3 - 1) = 4, null
    assertArrayEquals(new byte[] {1, 4, 0}, java.util.Arrays.copyOfRange(b, refs, refs + 3));
    b[refs + 2] = 6; // zigzag(5 - 2)
    CerealException e = assertThrows(CerealException.class, () -> cereal.deserialize(b));
    assertTrue(e.getMessage().contains("does not start an object"), e.getMessage());
  }

  @Test
  void largeSmallAndBrokenGraphsInTurn() {
    List<Object> graphs = new ArrayList<>();
    for (int seed = 0; seed < 40; seed++) graphs.add(RandomGraphs.graph(seed, seed % 3 == 0 ? 3000 : 20));
    Model.Node head = new Model.Node(0); // a chain past the size of the tables kept
    for (int i = 1; i < 20_000; i++) {
      Model.Node n = new Model.Node(i);
      n.left = head;
      head = n;
    }
    graphs.add(head);
    graphs.add("small after large");
    byte[] broken = cereal.serialize(graphs.get(0));
    broken[broken.length / 2] ^= 0x5A;
    for (int round = 0; round < 2; round++) {
      for (Object g : graphs) {
        byte[] f = cereal.serialize(g);
        assertSameGraph(g, cereal.deserialize(f));
        try {
          cereal.deserialize(broken);
        } catch (CerealException expected) {
          // a broken frame between good ones must not disturb the next
        }
      }
    }
    assertEquals("after", cereal.deserialize(cereal.serialize("after")));
  }
}
