package dev.optimus.cereal;

import static dev.optimus.cereal.GraphAssert.assertSameGraph;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.optimus.cereal.Model.Node;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The round-trip checker itself fails where it must: the other tests rest on it. */
class GraphAssertTest {
  @Test
  void detectsUnsharingMergingAndValues() {
    Node shared = new Node(1);
    Node a = new Node(0);
    a.left = shared;
    a.right = shared;
    Node unshared = new Node(0);
    unshared.left = new Node(1);
    unshared.right = new Node(1);
    assertThrows(AssertionError.class, () -> assertSameGraph(a, unshared));
    assertThrows(AssertionError.class, () -> assertSameGraph(unshared, a));
    Node cycle = new Node(0);
    cycle.left = cycle;
    Node open = new Node(0);
    open.left = new Node(0);
    assertThrows(AssertionError.class, () -> assertSameGraph(cycle, open));
    Node other = new Node(0);
    other.left = new Node(2);
    other.right = other.left;
    assertThrows(AssertionError.class, () -> assertSameGraph(a, other));
    assertThrows(AssertionError.class, () -> assertSameGraph(List.of(1, 2), List.of(2, 1)));
    assertThrows(AssertionError.class, () -> assertSameGraph(new int[] {1}, new long[] {1}));
    assertSameGraph(a, a);
  }
}
