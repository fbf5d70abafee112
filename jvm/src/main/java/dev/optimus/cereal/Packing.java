package dev.optimus.cereal;

import java.util.Arrays;

/**
 * Cereal's packing of metadata (§IV of the paper): the reference array kept to the significant
 * bytes of each reference, in buckets sharing one width byte, and the layout bitmap kept to its
 * non-zero 64-bit groups. Byte layouts in {@link Format}; the choice of {@link Format#BUCKET} in
 * docs/cereal.md, measured with {@link #packedRefBytes}.
 */
public final class Packing {
  private Packing() {}

  /** Bytes needed for an unsigned 32-bit value (0 for 0). */
  static int width(int v) {
    return (32 - Integer.numberOfLeadingZeros(v) + 7) >>> 3;
  }

  /** Upper bound of {@link #packRefs}'s output for {@code count} references. */
  static int maxRefBytes(int count) {
    return (count + Format.BUCKET - 1) / Format.BUCKET + 4 * count;
  }

  /** Packs {@code refs[0..count)} into {@code out} from 0; returns the length. */
  static int packRefs(int[] refs, int count, byte[] out) {
    return packRefs(refs, count, out, 0);
  }

  /**
   * Packs {@code refs[0..count)} (unsigned 32-bit values) into {@code out} from {@code start};
   * returns the length.
   */
  static int packRefs(int[] refs, int count, byte[] out, int start) {
    int pos = start;
    for (int b = 0; b < count; b += Format.BUCKET) {
      int end = Math.min(count, b + Format.BUCKET);
      int or = 0;
      for (int i = b; i < end; i++) or |= refs[i];
      int w = width(or);
      out[pos++] = (byte) w;
      switch (w) {
        case 0:
          break;
        case 1:
          for (int i = b; i < end; i++) out[pos++] = (byte) refs[i];
          break;
        case 2:
          for (int i = b; i < end; i++, pos += 2) UnsafeAccess.putShort(out, pos, (short) refs[i]);
          break;
        case 3:
          for (int i = b; i < end; i++, pos += 3) {
            int v = refs[i];
            UnsafeAccess.putShort(out, pos, (short) v);
            out[pos + 2] = (byte) (v >>> 16);
          }
          break;
        default:
          for (int i = b; i < end; i++, pos += 4) UnsafeAccess.putInt(out, pos, refs[i]);
      }
    }
    return pos - start;
  }

  /**
   * What {@code count} references would take packed in buckets of {@code bucket}: the
   * measurement behind {@link Format#BUCKET}. {@code bucket} 1 is one width byte per reference.
   */
  public static long packedRefBytes(int[] refs, int count, int bucket) {
    long total = 0;
    for (int b = 0; b < count; b += bucket) {
      int end = Math.min(count, b + bucket);
      int or = 0;
      for (int i = b; i < end; i++) or |= refs[i];
      total += 1 + (long) width(or) * (end - b);
    }
    return total;
  }

  /** Upper bound of {@link #packBitmap}'s output for {@code words} layout words. */
  static int maxBitmapBytes(int words) {
    int groups = (words + 63) >>> 6;
    return (groups + 7) / 8 + 8 * groups;
  }

  /**
   * Packs the bitmap of {@code words} layout words into {@code out}; returns the length. Per
   * block of 8 groups (64-bit words of the bitmap; the last block may be shorter): one mask byte,
   * bit {@code j} set when group {@code j} of the block is non-zero, then those groups, 8 bytes
   * little-endian each.
   */
  static int packBitmap(long[] bits, int words, byte[] out) {
    return packBitmap(bits, words, out, 0);
  }

  /** {@link #packBitmap(long[], int, byte[])} into {@code out} from {@code start}. */
  static int packBitmap(long[] bits, int words, byte[] out, int start) {
    int groups = (words + 63) >>> 6;
    int pos = start;
    for (int g0 = 0; g0 < groups; g0 += 8) {
      int maskPos = pos++;
      int mask = 0;
      for (int j = 0, n = Math.min(8, groups - g0); j < n; j++) {
        long v = bits[g0 + j];
        if (v != 0) {
          mask |= 1 << j;
          UnsafeAccess.putLong(out, pos, v);
          pos += 8;
        }
      }
      out[maskPos] = (byte) mask;
    }
    return pos - start;
  }

  /**
   * Unpacks a bitmap of {@code groups} 64-bit groups from {@code b[pos..end)}, which it must fill
   * exactly. {@code base} turns array positions into stream offsets for errors.
   */
  static long[] unpackBitmap(byte[] b, int pos, int end, int groups, long base) {
    return unpackBitmap(b, pos, end, groups, base, new long[groups]);
  }

  /** {@link #unpackBitmap(byte[], int, int, int, long)} into {@code bits[0..groups)} (cleared first). */
  static long[] unpackBitmap(byte[] b, int pos, int end, int groups, long base, long[] bits) {
    if (groups == 1 && end - pos == 9 && b[pos] == 1) {
      // A graph of at most 64 words with references: one mask byte, one group (small records).
      long v = UnsafeAccess.getLong(b, pos + 1);
      if (v != 0) {
        bits[0] = v;
        return bits;
      }
    }
    Arrays.fill(bits, 0, groups, 0L);
    for (int g0 = 0; g0 < groups; g0 += 8) {
      if (pos >= end) {
        throw new CerealException("layout bitmap ends after " + g0 + " of " + groups + " groups",
            base + pos, null);
      }
      int n = Math.min(8, groups - g0);
      int mask = b[pos++] & 0xFF;
      if ((mask >>> n) != 0) {
        throw new CerealException("layout bitmap mask marks groups past the last", base + pos - 1, null);
      }
      if (end - pos < 8 * Integer.bitCount(mask)) {
        throw new CerealException("layout bitmap block at group " + g0 + " runs past the bitmap's "
            + "bytes", base + pos, null);
      }
      while (mask != 0) {
        int j = Integer.numberOfTrailingZeros(mask);
        mask &= mask - 1;
        long v = UnsafeAccess.getLong(b, pos);
        if (v == 0) {
          throw new CerealException("layout bitmap marks a zero group as non-zero", base + pos, null);
        }
        bits[g0 + j] = v;
        pos += 8;
      }
    }
    if (pos != end) {
      throw new CerealException("layout bitmap has " + (end - pos) + " bytes past its "
          + groups + " groups", base + pos, null);
    }
    return bits;
  }

  /** Sets bits {@code [from, to)}. */
  static void setRange(long[] bits, int from, int to) {
    if (from >= to) return;
    int g0 = from >>> 6, g1 = (to - 1) >>> 6;
    long first = -1L << from, last = -1L >>> -to;
    if (g0 == g1) {
      bits[g0] |= first & last;
      return;
    }
    bits[g0] |= first;
    for (int g = g0 + 1; g < g1; g++) bits[g] = -1L;
    bits[g1] |= last;
  }

  /** Whether bits {@code [from, to)} are all {@code ones} (true: all set; false: all clear). */
  static boolean isRange(long[] bits, int from, int to, boolean ones) {
    if (from >= to) return true;
    long want = ones ? -1L : 0L;
    int g0 = from >>> 6, g1 = (to - 1) >>> 6;
    long first = -1L << from, last = -1L >>> -to;
    if (g0 == g1) {
      long m = first & last;
      return (bits[g0] & m) == (want & m);
    }
    if ((bits[g0] & first) != (want & first)) return false;
    for (int g = g0 + 1; g < g1; g++) if (bits[g] != want) return false;
    return (bits[g1] & last) == (want & last);
  }
}
