package dev.optimus.cereal;

import java.util.Arrays;

/**
 * The writer's visited set: object identity to its word offset in the value array (the paper's
 * software fallback for the header bits its accelerator sets on each visited object).
 *
 * <p>Open addressing with linear probing over {@link System#identityHashCode}, one probe sequence
 * for the combined look-up and insert ({@link #putIfAbsent}). Cleared between graphs; a table
 * grown by one large graph is dropped again when the next ones are small, so clearing stays
 * proportional to the graphs written.
 */
final class IdentityIntMap {
  private static final int MIN_CAPACITY = 64;

  private Object[] keys;
  private int[] values;
  private int size;
  private int shift;
  private int threshold;
  private int smallClears;

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
    return (System.identityHashCode(k) * 0x9E3779B9) >>> shift;
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
    Object[] ks = keys;
    int mask = ks.length - 1;
    int i = slot(k);
    for (; ; i = (i + 1) & mask) {
      Object c = ks[i];
      if (c == k) return values[i];
      if (c == null) break;
    }
    ks[i] = k;
    values[i] = v;
    if (++size >= threshold) grow();
    return -1;
  }

  private void grow() {
    Object[] oldK = keys;
    int[] oldV = values;
    int n = size;
    allocate(oldK.length * 2);
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
