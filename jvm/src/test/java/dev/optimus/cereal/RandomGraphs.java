package dev.optimus.cereal;

import dev.optimus.cereal.Model.AllPrimitives;
import dev.optimus.cereal.Model.Color;
import dev.optimus.cereal.Model.Derived;
import dev.optimus.cereal.Model.Holder;
import dev.optimus.cereal.Model.Key;
import dev.optimus.cereal.Model.Node;
import dev.optimus.cereal.Model.Op;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Random object graphs from a seed: every kind Cereal supports, wired at random so that sharing,
 * cycles (also through immutable collections) and nulls all occur. Hashed and sorted containers
 * hold value-equal elements only (strings, numbers, {@link Key}), so a copy can be compared.
 */
final class RandomGraphs {
  private RandomGraphs() {}

  static Object[] graph(long seed, int maxObjects) {
    Random r = new Random(seed);
    int n = 1 + r.nextInt(maxObjects);
    List<Object> objs = new ArrayList<>();
    List<Node> nodes = new ArrayList<>();
    List<Object> values = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Object o;
      switch (r.nextInt(12)) {
        case 0, 1, 2 -> {
          Node x = new Node(r.nextInt());
          x.label = r.nextBoolean() ? null : "n" + r.nextInt(50);
          nodes.add(x);
          o = x;
        }
        case 3 -> {
          AllPrimitives p = new AllPrimitives();
          p.z = r.nextBoolean();
          p.b = (byte) r.nextInt();
          p.s = (short) r.nextInt();
          p.c = (char) r.nextInt(0x10000);
          p.i = r.nextInt();
          p.j = r.nextLong();
          p.f = r.nextFloat();
          p.d = r.nextGaussian();
          p.boxed = r.nextBoolean() ? null : r.nextInt();
          p.text = randomString(r);
          o = p;
        }
        case 4 -> {
          Derived d = new Derived();
          d.id = r.nextInt();
          d.name = randomString(r);
          d.weight = r.nextDouble();
          d.secret(r.nextLong());
          o = d;
        }
        case 5 -> {
          Object v = switch (r.nextInt(5)) {
            case 0 -> randomString(r);
            case 1 -> r.nextInt(1000);
            case 2 -> new Key("k" + r.nextInt(20), r.nextInt(5));
            case 3 -> (long) r.nextInt(100);
            default -> r.nextInt(5) == 0 ? "" : "s" + r.nextInt(30);
          };
          values.add(v);
          o = v;
        }
        case 6 -> o = switch (r.nextInt(5)) {
          case 0 -> randomInts(r);
          case 1 -> new double[] {r.nextDouble(), r.nextDouble()};
          case 2 -> new byte[r.nextInt(20)];
          case 3 -> new char[] {'a', (char) r.nextInt(0x10000)};
          default -> new boolean[] {r.nextBoolean(), true, false};
        };
        case 7 -> o = r.nextBoolean() ? Color.values()[r.nextInt(3)] : Op.values()[r.nextInt(2)];
        case 8 -> o = new Object[r.nextInt(6)];
        case 9 -> o = switch (r.nextInt(4)) {
          case 0 -> new ArrayList<>();
          case 1 -> new LinkedList<>();
          case 2 -> new ArrayDeque<>();
          default -> new Holder();
        };
        case 10 -> o = switch (r.nextInt(3)) {
          case 0 -> new HashMap<>();
          case 1 -> new LinkedHashMap<>();
          default -> new TreeMap<>();
        };
        default -> o = switch (r.nextInt(3)) {
          case 0 -> new HashSet<>();
          case 1 -> new LinkedHashSet<>();
          default -> new TreeSet<>();
        };
      }
      objs.add(o);
    }
    if (values.isEmpty()) values.add("v");
    // Wire: every reference goes to a random object (possibly earlier, later, itself) or null.
    for (Object o : new ArrayList<>(objs)) {
      if (o instanceof Node x) {
        x.left = r.nextInt(4) == 0 ? null : pickNode(r, nodes);
        x.right = r.nextInt(3) == 0 ? null : pickNode(r, nodes);
        x.any = r.nextInt(3) == 0 ? null : pick(r, objs);
      } else if (o instanceof Derived d) {
        d.parent = r.nextBoolean() ? d : null;
      } else if (o instanceof Object[] a) {
        for (int i = 0; i < a.length; i++) a[i] = r.nextInt(5) == 0 ? null : pick(r, objs);
      } else if (o instanceof Holder h) {
        h.list = r.nextBoolean() ? List.of(pick(r, objs), pick(r, objs)) : null;
        h.map = r.nextBoolean() ? Map.of("a", pick(r, objs)) : null;
        h.objects = new Object[] {pick(r, objs)};
        h.nodes = nodes.isEmpty() ? null : new Node[] {pickNode(r, nodes), null};
        h.matrix = new int[][] {randomInts(r), null};
        h.color = Color.GREEN;
        h.op = r.nextBoolean() ? Op.PLUS : null;
      } else if (o instanceof TreeMap<?, ?> m) {
        @SuppressWarnings("unchecked") Map<Object, Object> mm = (Map<Object, Object>) m;
        for (int i = r.nextInt(6); i > 0; i--) mm.put("t" + r.nextInt(20), pick(r, objs));
      } else if (o instanceof Map<?, ?> m) {
        @SuppressWarnings("unchecked") Map<Object, Object> mm = (Map<Object, Object>) m;
        for (int i = r.nextInt(6); i > 0; i--) mm.put(values.get(r.nextInt(values.size())), pick(r, objs));
      } else if (o instanceof TreeSet<?> s) {
        @SuppressWarnings("unchecked") Set<Object> ss = (Set<Object>) s;
        for (int i = r.nextInt(6); i > 0; i--) ss.add(r.nextInt(50));
      } else if (o instanceof Set<?> s) {
        @SuppressWarnings("unchecked") Set<Object> ss = (Set<Object>) s;
        for (int i = r.nextInt(6); i > 0; i--) ss.add(values.get(r.nextInt(values.size())));
      } else if (o instanceof ArrayDeque<?> q) {
        @SuppressWarnings("unchecked") ArrayDeque<Object> qq = (ArrayDeque<Object>) q;
        for (int i = r.nextInt(6); i > 0; i--) qq.add(pick(r, objs));
      } else if (o instanceof List<?> l) {
        @SuppressWarnings("unchecked") List<Object> ll = (List<Object>) l;
        for (int i = r.nextInt(6); i > 0; i--) ll.add(r.nextInt(6) == 0 ? null : pick(r, objs));
      }
    }
    // Immutable collections over existing objects, reachable from nodes (cycles through them).
    for (int i = r.nextInt(4); i > 0 && !nodes.isEmpty(); i--) {
      Node x = pickNode(r, nodes);
      x.any = switch (r.nextInt(3)) {
        case 0 -> List.of(pick(r, objs), x);
        case 1 -> Set.of(values.get(0));
        default -> Map.of(values.get(0), x);
      };
    }
    return objs.toArray();
  }

  private static Object pick(Random r, List<Object> objs) {
    return objs.get(r.nextInt(objs.size()));
  }

  private static Node pickNode(Random r, List<Node> nodes) {
    return nodes.isEmpty() ? null : nodes.get(r.nextInt(nodes.size()));
  }

  private static int[] randomInts(Random r) {
    int[] a = new int[r.nextInt(10)];
    for (int i = 0; i < a.length; i++) a[i] = r.nextInt();
    return a;
  }

  static String randomString(Random r) {
    int n = r.nextInt(12);
    StringBuilder sb = new StringBuilder(n);
    boolean wide = r.nextInt(4) == 0;
    for (int i = 0; i < n; i++) sb.append((char) (wide ? 0x100 + r.nextInt(0x2000) : 'a' + r.nextInt(26)));
    return sb.toString();
  }
}
