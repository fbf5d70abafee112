package dev.optimus.cereal;

import java.util.Arrays;

/**
 * The writer's visited set: object identity to its word offset in the value array (the paper's
 * software fallback for the header bits its accelerator sets on each visited object).
 *
 * <p>Open addressing with linear probing, one probe sequence for the combined look-up and insert
 * ({@link #putIfAbsent}). Cleared between graphs; a table grown by one large graph is dropped
 * again when the next ones are small, so clearing stays proportional to the graphs written.
 *
 * <p>The hash of a string or a boxed value is its value's ({@link #valueHash}): the same object
 * always has the same value, so look-ups stay by identity, and such objects, most of a record's,
 * never need {@link System#identityHashCode}, which the VM computes and installs in the object's
 * header on first use (a slow path for every new record). Distinct objects of one value share a
 * hash; a probe past {@link #MAX_PROBE} slots (many equal boxes) rehashes the graph by identity
 * hash codes, so no graph is quadratic.
 */
final class IdentityIntMap {
  private static final int MIN_CAPACITY = 64;
  /** Probe length past which value hashes give way to identity hashes for the rest of a graph. */
  private static final int MAX_PROBE = 32;

  private Object[] keys;
  private int[] values;
  private int size;
  private int shift;
  private int threshold;
  private int smallClears;
  /** Strings and boxes hash by value (until a long probe turns this off for the graph). */
  private boolean byValue = true;

  IdentityIntMap() {
    allocate(MIN_CAPACITY);
  }

  private void allocate(int capacity) {
    keys = new Object[capacity];
    values = new int[capacity];
    shift = Integer.numberOfLeadingZeros(capacity) + 1;
    threshold = capacity / 2;
    size = 0;
  }

  private int slot(Object k) {
    return ((byValue ? valueHash(k) : System.identityHashCode(k)) * 0x9E3779B9) >>> shift;
  }

  /** The hash of an immutable value's content (strings, boxes), else the identity hash. */
  static int valueHash(Object k) {
    Class<?> c = k.getClass();
    if (c == String.class) return k.hashCode(); // cached in the string
    if (c == Integer.class) return ((Integer) k).intValue();
    if (c == Long.class) return Long.hashCode(((Long) k).longValue());
    if (c == Double.class) return Double.hashCode(((Double) k).doubleValue());
    if (c == Float.class) return Float.floatToRawIntBits(((Float) k).floatValue());
    if (c == Short.class || c == Byte.class || c == Character.class || c == Boolean.class) {
      return k.hashCode();
    }
    return System.identityHashCode(k);
  }

  /** The value of {@code k}, or -1 if absent. */
  int get(Object k) {
    Object[] ks = keys;
    int mask = ks.length - 1;
    for (int i = slot(k); ; i = (i + 1) & mask) {
      Object c = ks[i];
      if (c == k) return values[i];
      if (c == null) return -1;
    }
  }

  /** The value of {@code k} if present; otherwise maps it to {@code v} and returns -1. */
  int putIfAbsent(Object k, int v) {
    return putIfAbsent(k, v, slot(k));
  }

  /**
   * {@link #putIfAbsent} for a key that is neither a string nor a boxed value (its hash is its
   * identity hash in either mode), without {@link #valueHash}'s class tests.
   */
  int putIfAbsentObject(Object k, int v) {
    return putIfAbsent(k, v, (System.identityHashCode(k) * 0x9E3779B9) >>> shift);
  }

  private int putIfAbsent(Object k, int v, int slot) {
    Object[] ks = keys;
    int mask = ks.length - 1;
    int i = slot;
    for (int probes = 0; ; i = (i + 1) & mask) {
      Object c = ks[i];
      if (c == k) return values[i];
      if (c == null) break;
      if (++probes == MAX_PROBE && byValue) {
        byValue = false; // many equal values: identity hashes from here on
        rehash(ks.length);
        return putIfAbsent(k, v);
      }
    }
    ks[i] = k;
    values[i] = v;
    if (++size >= threshold) grow();
    return -1;
  }

  private void grow() {
    rehash(keys.length * 2);
  }

  private void rehash(int capacity) {
    Object[] oldK = keys;
    int[] oldV = values;
    int n = size;
    allocate(capacity);
    Object[] ks = keys;
    int mask = ks.length - 1;
    for (int j = 0; j < oldK.length; j++) {
      Object k = oldK[j];
      if (k == null) continue;
      int i = slot(k);
      while (ks[i] != null) i = (i + 1) & mask;
      ks[i] = k;
      values[i] = oldV[j];
    }
    size = n;
  }

  int size() {
    return size;
  }

  /** Empties the map, shrinking a table that the last graphs no longer needed. */
  void clear() {
    byValue = true;
    if (keys.length > 4096 && size * 8 < keys.length) {
      if (++smallClears >= 16) {
        allocate(Math.max(MIN_CAPACITY, Integer.highestOneBit(Math.max(1, size)) * 4));
        smallClears = 0;
        return;
      }
    } else {
      smallClears = 0;
    }
    if (size > 0) {
      Arrays.fill(keys, null);
      size = 0;
    }
  }
}
