package dev.optimus.cereal;

import static dev.optimus.cereal.GraphAssert.assertSameGraph;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.optimus.cereal.Model.AllPrimitives;
import dev.optimus.cereal.Model.Color;
import dev.optimus.cereal.Model.Derived;
import dev.optimus.cereal.Model.Holder;
import dev.optimus.cereal.Model.Key;
import dev.optimus.cereal.Model.NoDefaultConstructor;
import dev.optimus.cereal.Model.Node;
import dev.optimus.cereal.Model.Op;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** Round trips of every supported kind, checked for deep equality and identity structure. */
class RoundTripTest {
  private final Cereal cereal = Model.register(new Cereal());

  private Object roundTrip(Object o) {
    Object back = cereal.deserialize(cereal.serialize(o));
    assertSameGraph(o, back);
    return back;
  }

  @Test
  void nullRoot() {
    assertNull(roundTrip(null));
  }

  @Test
  void primitivesAndBoxes() {
    AllPrimitives p = new AllPrimitives();
    p.z = true;
    p.b = -7;
    p.s = Short.MIN_VALUE;
    p.c = '\u20AC';
    p.i = 0x12345678;
    p.j = Long.MIN_VALUE + 3;
    p.f = -0.0f;
    p.d = Double.NaN;
    p.boxed = 1_000_000;
    p.text = "h\u00e9llo";
    AllPrimitives q = (AllPrimitives) roundTrip(p);
    assertEquals(Double.doubleToRawLongBits(p.d), Double.doubleToRawLongBits(q.d));
    assertEquals(Float.floatToRawIntBits(p.f), Float.floatToRawIntBits(q.f));
    for (Object box : new Object[] {true, (byte) 1, (short) -2, 'x', 42, -5L, 1.5f, 2.25, Integer.MIN_VALUE}) {
      assertEquals(box, roundTrip(box));
    }
  }

  @Test
  void strings() {
    for (String s : new String[] {"", "a", "exactly8", "ascii text longer than a word", "\u00ff\u00e9",
        "utf16 \u4e2d\u6587 \ud83d\ude00", "x".repeat(10_000)}) {
      assertEquals(s, roundTrip(s));
    }
    String shared = "shared";
    Object[] a = {shared, shared, new String("shared")};
    Object[] b = (Object[]) roundTrip(a);
    assertSame(b[0], b[1]);
    assertNotSame(b[0], b[2]);
  }

  @Test
  void primitiveArrays() {
    Object[] arrays = {new boolean[] {true, false, true}, new byte[] {1, -2, 3}, new short[] {-1, 2},
        new char[] {'a', '\u4e2d'}, new int[] {1, -1, Integer.MAX_VALUE}, new long[] {Long.MAX_VALUE, 0},
        new float[] {1.5f, Float.NaN}, new double[] {Math.PI, -0.0}, new int[0], new byte[13]};
    Object[] back = (Object[]) roundTrip(arrays);
    assertArrayEquals((int[]) arrays[4], (int[]) back[4]);
    int[][] matrix = {{1, 2}, {3}, null, {}};
    assertArrayEquals(matrix, (int[][]) roundTrip(matrix));
  }

  @Test
  void objectArrays() {
    Node n = new Node(1);
    Object[] a = {n, n, null, "s", 3, new Object[] {n}};
    Object[] b = (Object[]) roundTrip(a);
    assertSame(b[0], b[1]);
    assertSame(b[0], ((Object[]) b[5])[0]);
    Node[] typed = {n, new Node(2), null};
    assertEquals(Node[].class, roundTrip(typed).getClass());
    String[] strings = {"a", null, "b"};
    assertArrayEquals(strings, (String[]) roundTrip(strings));
  }

  @Test
  void sharedReferencesAndCycles() {
    Node a = new Node(1), b = new Node(2), c = new Node(3);
    a.left = b;
    a.right = b; // shared
    b.left = c;
    c.left = a; // cycle back to the root
    c.right = c; // self loop
    Node x = (Node) roundTrip(a);
    assertSame(x.left, x.right);
    assertSame(x, x.left.left.left);
    assertSame(x.left.left, x.left.left.right);
    assertEquals(3, x.left.left.value);
  }

  @Test
  void inheritedFields() {
    Derived d = new Derived();
    d.id = 7;
    ((Model.Base) d).name = "base name";
    d.name = "derived name";
    d.secret(99);
    d.weight = 2.5;
    d.parent = d;
    Derived e = (Derived) roundTrip(d);
    assertEquals("base name", ((Model.Base) e).name);
    assertEquals("derived name", e.name);
    assertEquals(99, e.secret());
    assertSame(e, e.parent);
    assertNull(e.cache, "transient fields are not written");
  }

  @Test
  void noConstructorIsCalled() {
    NoDefaultConstructor n = new NoDefaultConstructor(5, List.of("a", "b"));
    NoDefaultConstructor m = (NoDefaultConstructor) roundTrip(n);
    assertEquals(5, m.x);
    assertEquals(List.of("a", "b"), m.items);
  }

  @Test
  void enums() {
    Holder h = new Holder();
    h.color = Color.BLUE;
    h.op = Op.TIMES; // a constant with a body: an anonymous subclass
    Holder g = (Holder) roundTrip(h);
    assertSame(Color.BLUE, g.color);
    assertSame(Op.TIMES, g.op);
    assertEquals(12, g.op.apply(3, 4));
    assertSame(Op.PLUS, roundTrip(Op.PLUS));
  }

  @Test
  void collections() {
    Node shared = new Node(9);
    List<Object> lists = new ArrayList<>();
    lists.add(new ArrayList<>(Arrays.asList(1, "two", null, shared)));
    lists.add(new LinkedList<>(Arrays.asList(shared, 2.0)));
    lists.add(new ArrayDeque<>(Arrays.asList("x", shared)));
    lists.add(new HashSet<>(Arrays.asList("a", "b", 3)));
    lists.add(new LinkedHashSet<>(Arrays.asList("z", "y", "x")));
    lists.add(new TreeSet<>(Arrays.asList(5, 1, 3)));
    lists.add(new ArrayList<>());
    @SuppressWarnings("unchecked")
    List<Object> back = (List<Object>) roundTrip(lists);
    assertSame(((List<?>) back.get(0)).get(3), ((List<?>) back.get(1)).get(0));
    assertEquals(List.of("z", "y", "x"), new ArrayList<>((Set<?>) back.get(4)));
  }

  @Test
  void maps() {
    Map<Object, Object> hash = new HashMap<>();
    Map<Object, Object> linked = new LinkedHashMap<>();
    TreeMap<Object, Object> tree = new TreeMap<>();
    for (int i = 0; i < 50; i++) {
      hash.put("k" + i, i);
      linked.put(new Key("k", 50 - i), "v" + i);
      tree.put(new Key("t" + (i % 7), i), List.of(i));
    }
    hash.put(null, "null key");
    hash.put("self", hash); // a map holding itself
    Object[] all = {hash, linked, tree};
    Object[] back = (Object[]) roundTrip(all);
    @SuppressWarnings("unchecked")
    Map<Object, Object> h = (Map<Object, Object>) back[0];
    assertSame(h, h.get("self"));
    assertEquals("null key", h.get(null));
    assertEquals(tree.firstKey(), ((TreeMap<?, ?>) back[2]).firstKey());
  }

  @Test
  void hashedElementsAreCompleteBeforeHashing() {
    // A set of lists: each list's hashCode depends on its content, so the lists are filled first,
    // also when a list was reached (and so laid out) before the set.
    List<Integer> early = new ArrayList<>(List.of(1, 2));
    Set<List<Integer>> set = new HashSet<>();
    set.add(early);
    set.add(new ArrayList<>(List.of(3)));
    Object[] root = {early, set};
    Object[] back = (Object[]) roundTrip(root);
    @SuppressWarnings("unchecked")
    Set<List<Integer>> s = (Set<List<Integer>>) back[1];
    assertTrue(s.contains(List.of(1, 2)));
    assertTrue(s.contains(back[0]));
  }

  @Test
  void immutableCollectionsAreRebuilt() {
    Node n = new Node(4);
    List<Object> l0 = List.of(), l1 = List.of(n), l2 = List.of(n, "b"), l3 = List.of(1, 2, 3);
    Set<Object> s1 = Set.of("a"), s3 = Set.of(1, 2, 3);
    Map<Object, Object> m1 = Map.of("k", l1), m3 = Map.of("a", 1, "b", 2, "c", s3);
    Holder h = new Holder();
    h.list = l2;
    h.map = m3;
    n.any = l1; // a cycle through an immutable list: n -> l1 -> n
    Object[] root = {l0, l1, l2, l3, s1, s3, m1, m3, h, l1, List.of(List.of(List.of("deep")))};
    Object[] back = (Object[]) roundTrip(root);
    assertSame(back[1], back[9]);
    assertSame(back[1], ((Map<?, ?>) back[6]).get("k"));
    assertSame(back[2], ((Holder) back[8]).list);
    Node m = (Node) ((List<?>) back[1]).get(0);
    assertSame(back[1], m.any);
    assertEquals(List.of(1, 2, 3).getClass(), back[3].getClass());
    assertThrows(UnsupportedOperationException.class, () -> ((List<?>) back[3]).clear());
    List<Integer> withNull = Arrays.asList(1, null).stream().toList();
    assertEquals(withNull, roundTrip(withNull));
  }

  @Test
  void otherCollectionsByContentOrFields() {
    cereal.register(ConcurrentHashMap.class);
    cereal.register(CopyOnWriteArrayList.class);
    cereal.register(Collections.unmodifiableList(new ArrayList<>()).getClass());
    ConcurrentHashMap<String, Integer> chm = new ConcurrentHashMap<>(Map.of("a", 1, "b", 2));
    CopyOnWriteArrayList<String> cow = new CopyOnWriteArrayList<>(List.of("x", "y"));
    List<String> unmodifiable = Collections.unmodifiableList(new ArrayList<>(List.of("u")));
    Object[] back = (Object[]) roundTrip(new Object[] {chm, cow, unmodifiable});
    assertEquals(chm, back[0]);
    assertEquals(cow, back[1]);
    assertEquals(unmodifiable, back[2]);
  }

  @Test
  void treeWithComparatorIsRefused() {
    TreeMap<String, String> m = new TreeMap<>(Collections.reverseOrder());
    m.put("a", "b");
    CerealException e = assertThrows(CerealException.class, () -> cereal.serialize(m));
    assertTrue(e.getMessage().contains("comparator"), e.getMessage());
  }

  @Test
  void recordsAndLambdasAreRefusedClearly() {
    Cereal open = new Cereal();
    open.setRegistrationRequired(false);
    CerealException e = assertThrows(CerealException.class, () -> open.serialize(new Model.Point(1, 2)));
    assertTrue(e.getMessage().contains("record"), e.getMessage());
    Runnable r = () -> {};
    assertThrows(CerealException.class, () -> open.serialize(r));
  }

  @Test
  void longChainsNeedNoRecursion() {
    Node head = new Node(0), cur = head;
    for (int i = 1; i < 300_000; i++) {
      cur.left = new Node(i);
      cur = cur.left;
    }
    cur.right = head;
    Node back = (Node) cereal.deserialize(cereal.serialize(head));
    int n = 0;
    Node last = null;
    for (Node x = back; x != null; x = x.left, n++) {
      assertEquals(n, x.value);
      last = x;
    }
    assertEquals(300_000, n);
    assertSame(back, last.right);
  }

  @Test
  void parallelFixUpGivesTheSameGraph() {
    Cereal parallel = Model.register(new Cereal());
    parallel.setDeserializationThreads(4);
    parallel.setParallelThreshold(1);
    try (parallel) {
      Node[] nodes = new Node[40_000];
      for (int i = 0; i < nodes.length; i++) nodes[i] = new Node(i);
      java.util.Random rnd = new java.util.Random(5);
      for (Node n : nodes) {
        n.left = nodes[rnd.nextInt(nodes.length)];
        n.right = rnd.nextBoolean() ? null : nodes[rnd.nextInt(nodes.length)];
        n.any = rnd.nextInt(4) == 0 ? List.of(nodes[rnd.nextInt(nodes.length)]) : "s" + (n.value % 100);
      }
      byte[] bytes = parallel.serialize(nodes);
      assertArrayEquals(bytes, cereal.serialize(nodes), "the format does not depend on the reader");
      assertSameGraph(nodes, parallel.deserialize(bytes));
    }
  }
}
