package dev.optimus.cereal;

import static org.junit.jupiter.api.Assertions.fail;

import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;

/**
 * Checks that a deserialized graph is the original's copy: deep equality of every value and the
 * same identity structure. Both graphs are walked together (iteratively, so long chains are
 * fine) with a map from original to copy: an original object met again must meet the copy it
 * was paired with (a shared object stays shared, a cycle stays a cycle), and no copy may pair
 * with two originals (distinct objects stay distinct). Boxed values are compared by value only
 * (the reader uses the {@code valueOf} caches); enums by identity.
 */
final class GraphAssert {
  private GraphAssert() {}

  /** Two objects to compare, and how they were reached (a path built only to report a failure). */
  private record Pair(Object a, Object b, Pair parent, String step) {
    String path() {
      StringBuilder sb = new StringBuilder();
      int n = 0;
      for (Pair p = this; p != null; p = p.parent, n++) {
        if (n == 12) {
          sb.insert(0, "...");
          break;
        }
        sb.insert(0, p.step);
      }
      return sb.toString();
    }
  }

  static void assertSameGraph(Object expected, Object actual) {
    IdentityHashMap<Object, Object> forward = new IdentityHashMap<>();
    IdentityHashMap<Object, Object> backward = new IdentityHashMap<>();
    ArrayDeque<Pair> work = new ArrayDeque<>();
    work.push(new Pair(expected, actual, null, "root"));
    while (!work.isEmpty()) {
      Pair p = work.pop();
      Object a = p.a(), b = p.b();
      Path path = new Path(p);
      if (a == null || b == null) {
        if (a != b) fail(path + ": expected " + describe(a) + " but was " + describe(b));
        continue;
      }
      if (a.getClass() != b.getClass()) {
        fail(path + ": expected a " + a.getClass().getName() + " but was a " + b.getClass().getName());
      }
      if (isValue(a)) {
        if (!a.equals(b)) fail(path + ": expected " + a + " but was " + b);
        if (a instanceof String) pair(forward, backward, a, b, path);
        continue;
      }
      if (a instanceof Enum<?>) {
        if (a != b) fail(path + ": expected " + a + " but was " + b);
        continue;
      }
      Object prev = forward.get(a);
      if (prev != null) {
        if (prev != b) fail(path + ": a shared " + a.getClass().getSimpleName() + " was copied apart");
        continue;
      }
      pair(forward, backward, a, b, path);
      Class<?> c = a.getClass();
      if (c.isArray()) {
        int n = Array.getLength(a);
        if (n != Array.getLength(b)) fail(path + ": array length " + n + " vs " + Array.getLength(b));
        if (c.getComponentType().isPrimitive()) {
          for (int i = 0; i < n; i++) {
            if (!Objects.equals(Array.get(a, i), Array.get(b, i))) {
              fail(path + "[" + i + "]: " + Array.get(a, i) + " vs " + Array.get(b, i));
            }
          }
        } else {
          for (int i = n - 1; i >= 0; i--) work.push(new Pair(((Object[]) a)[i], ((Object[]) b)[i], p, "[" + i + "]"));
        }
      } else if (a instanceof Map<?, ?> ma) {
        Map<?, ?> mb = (Map<?, ?>) b;
        if (ma.size() != mb.size()) fail(path + ": map size " + ma.size() + " vs " + mb.size());
        if (ordered(a)) {
          Iterator<? extends Map.Entry<?, ?>> ia = ma.entrySet().iterator(), ib = mb.entrySet().iterator();
          for (int i = 0; ia.hasNext(); i++) {
            Map.Entry<?, ?> ea = ia.next(), eb = ib.next();
            work.push(new Pair(ea.getKey(), eb.getKey(), p, ".key#" + i));
            work.push(new Pair(ea.getValue(), eb.getValue(), p, ".value#" + i));
          }
        } else {
          Map<Object, Object> canon = new HashMap<>();
          for (Object k : mb.keySet()) canon.put(k, k);
          for (Map.Entry<?, ?> e : ma.entrySet()) {
            Object kb = canon.get(e.getKey());
            if (kb == null && e.getKey() != null) fail(path + ": key " + e.getKey() + " missing");
            work.push(new Pair(e.getKey(), kb, p, ".key"));
            work.push(new Pair(e.getValue(), mb.get(kb), p, "[" + label(e.getKey()) + "]"));
          }
        }
      } else if (a instanceof Collection<?> ca) {
        Collection<?> cb = (Collection<?>) b;
        if (ca.size() != cb.size()) fail(path + ": size " + ca.size() + " vs " + cb.size());
        if (ordered(a)) {
          List<Object> la = new ArrayList<>(ca), lb = new ArrayList<>(cb);
          for (int i = la.size() - 1; i >= 0; i--) work.push(new Pair(la.get(i), lb.get(i), p, "[" + i + "]"));
        } else {
          Map<Object, Object> canon = new HashMap<>();
          for (Object x : cb) canon.put(x, x);
          for (Object x : ca) {
            if (!canon.containsKey(x)) fail(path + ": element " + x + " missing");
            work.push(new Pair(x, canon.get(x), p, "{" + label(x) + "}"));
          }
        }
      } else {
        for (Class<?> k = c; k != null && k != Object.class; k = k.getSuperclass()) {
          for (Field f : k.getDeclaredFields()) {
            int m = f.getModifiers();
            if (Modifier.isStatic(m) || Modifier.isTransient(m)) continue;
            f.setAccessible(true);
            try {
              Object fa = f.get(a), fb = f.get(b);
              if (f.getType().isPrimitive()) {
                if (!fa.equals(fb)) fail(path + "." + f.getName() + ": " + fa + " vs " + fb);
              } else {
                work.push(new Pair(fa, fb, p, "." + f.getName()));
              }
            } catch (IllegalAccessException e) {
              throw new AssertionError(e);
            }
          }
        }
      }
    }
  }

  /** Formats lazily: a failure message concatenates it, and only then is the path walked. */
  private record Path(Pair p) {
    @Override
    public String toString() {
      return p.path();
    }
  }

  private static void pair(IdentityHashMap<Object, Object> forward, IdentityHashMap<Object, Object> backward,
      Object a, Object b, Path path) {
    Object prevA = backward.get(b);
    if (prevA != null && prevA != a) fail(path + ": two distinct objects were merged into one copy");
    Object prevB = forward.get(a);
    if (prevB != null && prevB != b) fail(path + ": a shared " + a.getClass().getSimpleName() + " was copied apart");
    forward.put(a, b);
    backward.put(b, a);
  }

  private static boolean ordered(Object o) {
    return o instanceof List<?> || o instanceof SortedMap<?, ?> || o instanceof SortedSet<?>
        || o instanceof java.util.LinkedHashMap<?, ?> || o instanceof java.util.LinkedHashSet<?>
        || o instanceof java.util.Deque<?>;
  }

  private static boolean isValue(Object o) {
    return o instanceof String || o instanceof Number || o instanceof Boolean || o instanceof Character;
  }

  private static String label(Object k) {
    return k instanceof String || k instanceof Number ? String.valueOf(k) : "element";
  }

  private static String describe(Object o) {
    return o == null ? "null" : "a " + o.getClass().getSimpleName();
  }

  /** Set, for use in tests that check identity by hand. */
  static <T> Set<T> identitySet() {
    return java.util.Collections.newSetFromMap(new IdentityHashMap<>());
  }
}
