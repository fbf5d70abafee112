package dev.optimus.cereal;

/**
 * The Cereal wire format: constants and the byte-level layout of one frame (one graph).
 *
 * <pre>
 * frame   := MAGIC(0xCE) VERSION(1) flags:u8 length:varint body        (length = bytes of body)
 * body    := classCount:varint (nameLength:varint utf8Name)*classCount
 *            objectCount:varint valueWords:varint refCount:varint
 *            refBytes:varint bitmapBytes:varint
 *            valueArray[valueWords * 8] refArray[refBytes] bitmap[bitmapBytes]
 * </pre>
 *
 * <p>Varints are unsigned LEB128 of at most 5 bytes holding a non-negative int. Flag bit 0 clears
 * the stream's table of named classes before this frame ({@link CerealOutput#reset()}); flag bit 1
 * marks a compact frame (below); other bits must be 0.
 *
 * <p><b>Compact frame</b> (flag bit 1), for a graph of at most {@link #COMPACT_MAX_WORDS} layout
 * words (a single record: a string, a boxed value, a tuple of a few objects):
 *
 * <pre>
 * body    := classCount:varint (nameLength:varint utf8Name)*classCount
 *            valueWords:varint refCount:varint valueArray[valueWords * 8] refArray[rest of the body]
 * </pre>
 *
 * The value array and the reference array are those of the full frame. What it leaves out follows
 * from the value array: each header's class gives its object's value and reference words, so a
 * walk over the headers counts the objects, and the layout bitmap (a run of zeros then a run of
 * ones per object) is the one those layouts make. The reference count stays, one byte, so that a
 * reader whose registrations disagree with the writer's mostly fails (the walk's count differs)
 * rather than reading another class's layout; the reference array's length is the rest of the
 * body, checked when the references are decoded. The reader rejects a
 * compact frame whose layout would pass {@link #COMPACT_MAX_WORDS} words, so a compact frame
 * never allocates more than a full one of the same graph.
 *
 * <p><b>Layout.</b> The graph is a sequence of objects in breadth-first order from the root; an
 * object occupies consecutive <i>layout words</i>, its header word first, and the root starts at
 * word 0. The layout has {@code valueWords + refCount} words. Every word is either a value word
 * or a reference word; {@link ClassInfo} gives each kind's words, always the header, then value
 * words, then reference words.
 *
 * <p><b>Value array</b>: the value words of all objects in layout order, each 8 bytes
 * little-endian. A header word holds the class ID in its low 32 bits and, for arrays, strings,
 * collections and maps, the element count (for strings and {@code Class} objects, which are
 * written by name, {@code chars << 1 | utf16}, for enums the ordinal) in its high 32 bits;
 * singletons (a class without instance fields that has {@code readResolve}) are the header alone,
 * high word 0. Registered IDs are below {@link #DYNAMIC_BASE}; a class named in
 * a frame's class list gets {@code DYNAMIC_BASE + k}, k counting the names of the stream so far.
 *
 * <p><b>Reference array</b>: the reference words in layout order. A reference is 0 for null,
 * otherwise {@code zigzag(target - slot)}: the target object's first layout word minus the
 * reference word's own, so a reference never depends on where the frame sits and a tree's
 * child pointers, which point just ahead, stay small. References are packed in buckets of
 * {@link #BUCKET}: one byte {@code w} (0 to 4), then each reference of the bucket in its low
 * {@code w} bytes, little-endian; {@code w} is the fewest bytes that hold the bucket's largest
 * reference (an all-null bucket is the one byte 0). The last bucket holds the remainder.
 *
 * <p><b>Layout bitmap</b>: one bit per layout word, set for reference words; bit {@code i} of
 * little-endian 64-bit group {@code g} describes layout word {@code 64 g + i}. Packed by
 * leaving out what is zero: per block of 8 groups (the last block may be shorter), one mask byte
 * whose bit {@code j} says that group {@code j} of the block is non-zero, then those groups,
 * 8 bytes each. Bits past the last layout word are 0.
 */
final class Format {
  private Format() {}

  static final int MAGIC = 0xCE;
  static final int VERSION = 1;
  static final int FLAG_RESET_CLASSES = 1;
  static final int FLAG_COMPACT = 2;

  /**
   * The most layout words of a compact frame (8 KiB of value array at most): records of a few
   * objects to a few hundred. Larger graphs are full frames, whose packed bitmap and counts
   * bound what a reader allocates before it has walked the value array, and whose reference
   * fix-up runs in parallel chunks (from {@link Cereal#parallelThreshold()} references, far
   * past this).
   */
  static final int COMPACT_MAX_WORDS = 1024;

  /** References per bucket of the packed reference array (see docs/cereal.md for the choice). */
  static final int BUCKET = 16;

  /** Class IDs of the built-in classes; user registrations start at {@link #FIRST_USER_ID}. */
  static final int ID_STRING = 1;
  static final int ID_BOOLEAN = 2, ID_BYTE = 3, ID_SHORT = 4, ID_CHAR = 5, ID_INT = 6,
      ID_LONG = 7, ID_FLOAT = 8, ID_DOUBLE = 9;
  static final int ID_A_BOOLEAN = 10, ID_A_BYTE = 11, ID_A_SHORT = 12, ID_A_CHAR = 13,
      ID_A_INT = 14, ID_A_LONG = 15, ID_A_FLOAT = 16, ID_A_DOUBLE = 17;
  static final int ID_OBJECT_ARRAY = 18, ID_STRING_ARRAY = 19;
  static final int ID_ARRAY_LIST = 20, ID_LINKED_LIST = 21, ID_ARRAY_DEQUE = 22,
      ID_HASH_SET = 23, ID_LINKED_HASH_SET = 24, ID_TREE_SET = 25, ID_HASH_MAP = 26,
      ID_LINKED_HASH_MAP = 27, ID_TREE_MAP = 28, ID_IMM_LIST = 29, ID_IMM_SET = 30,
      ID_IMM_MAP = 31;
  static final int FIRST_USER_ID = 32;
  /**
   * A {@code java.lang.Class} object: written by name (the header's high word {@code chars << 1 |
   * utf16}, then the name's chars as a string's). The last ID below the named ones, so that user
   * IDs keep starting at 32; registrations go up to {@code ID_CLASS - 1}.
   */
  static final int ID_CLASS = (1 << 24) - 1;
  /** First ID of the classes a stream names (registration optional). */
  static final int DYNAMIC_BASE = 1 << 24;

  /** The most layout words one graph may have (int-indexed arrays on both sides). */
  static final int MAX_WORDS = Integer.MAX_VALUE - 16;

  /** Longest class name a frame may carry. */
  static final int MAX_NAME = 4096;

  static long zigzag(long d) {
    return (d << 1) ^ (d >> 63);
  }

  static long unzigzag(long v) {
    return (v >>> 1) ^ -(v & 1);
  }

  /** Bytes of a varint holding {@code v >= 0}. */
  static int varintSize(int v) {
    int n = 1;
    while ((v & ~0x7F) != 0) {
      v >>>= 7;
      n++;
    }
    return n;
  }

  static int putVarint(byte[] b, int pos, int v) {
    while ((v & ~0x7F) != 0) {
      b[pos++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    b[pos++] = (byte) v;
    return pos;
  }
}
