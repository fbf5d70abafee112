package dev.optimus.cereal;

import static dev.optimus.cereal.UnsafeAccess.U;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.reflect.Array;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.SortedSet;

import dev.optimus.cereal.trace.CerealTrace;
import dev.optimus.cereal.trace.GraphTrace;

/**
 * Serialization: turns one object graph into a frame (value array, packed reference array,
 * packed layout bitmap; {@link Format}).
 *
 * <p>One breadth-first pass. An object gets its offset (first layout word) when it is first
 * reached, as the running total of the sizes of the objects reached before it, which are known
 * on reaching them (a class's word count, or an array's or collection's length); its header and
 * value words are appended to the value array then and there, since the value array is in
 * layout order too. Only objects with reference words are queued, to have their references
 * written when dequeued: strings, boxes, primitive arrays and objects of primitive fields (most
 * of a record's objects) are done when reached, and so, once a graph is past a compact frame's
 * words, are objects whose references are all null (a tree's leaves: their null references are
 * written in their place in layout order, {@link #queueNulls}). Each reference is the target's
 * offset minus the reference word's own, available at once whether the target was written
 * already (a shared object, a cycle) or just reached. The visited set, for a graph's first
 * objects, is a scan of up to {@link #SMALL_SEEN} objects and a small table of strings and boxes
 * hashed by value ({@link #SMALL_VALUES}), then an {@link IdentityIntMap}. The layout bitmap is
 * made from the queue (and the leaves left out of it), for full frames only. A graph of at most
 * {@link Format#COMPACT_MAX_WORDS} words becomes a compact frame, assembled in place after its
 * value array, as is a full frame without names; a root that is a string, a box or an object of
 * primitive fields is written directly ({@code writeLeaf}).
 *
 * <p>Not thread-safe: one per thread ({@link Cereal#serialize}) or per {@link CerealOutput}.
 * Buffers are kept between graphs. Named classes (registration optional) are numbered per
 * writer, i.e. per stream, each name written once, in the first frame that uses it.
 */
final class GraphWriter {
  private static final long STRING_CODER_OFFSET = stringCoderOffset();
  private static final byte[][] NO_NAMES = {};
  /** Classes kept in the writer's class cache. */
  private static final int CLASS_CACHE = 8;
  /** Objects of a graph looked up by a scan before the identity hash map takes over. */
  static final int SMALL_SEEN = 32;

  private final Cereal cereal;
  private final IdentityIntMap seen = new IdentityIntMap();
  private final IdentityHashMap<Class<?>, Integer> named = new IdentityHashMap<>();
  private final List<String> newNames = new ArrayList<>();
  private boolean resetPending;

  /**
   * Bytes kept free at the start of {@link #val}: a frame without names has its prefix written
   * there, before its value array (magic to the reference count, at most 13 bytes, in a compact
   * frame; magic to the bitmap's length, at most 34, in a full one).
   */
  private static final int VAL0 = 40;

  // The graph being written.
  private byte[] val = new byte[4096];
  private int valPos;
  private int[] refs = new int[1024];
  private int refCount;
  private long[] bitmap = new long[64];
  /** The objects with reference words, in layout order, their first reference word and count. */
  private Object[] queue = new Object[256];
  private ClassInfo[] queueInfo = new ClassInfo[256];
  private int[] queueSlot = new int[256];
  private int[] queueRefs = new int[256];
  /**
   * The null references to write before each queued object's: those of the objects placed
   * between it and the queued object before it whose references were all null ({@link
   * #discover}), which are not queued.
   */
  private int[] queueNulls = new int[256];
  private int queueSize;
  /** Null references placed since the last object queued, not yet written. */
  private int pendingNulls;
  /** Whether the graph may still become a compact frame ({@link Cereal#compactFrames}). */
  private boolean compactGraph;
  /** The first queued object whose bitmap bits the walk set (see {@link #write}). */
  private int bitsFrom;
  private GraphTrace trace;
  private int objectCount;
  private int top;
  private Class<?> lastType;
  private ClassInfo lastInfo;
  private Class<?> prevType;
  private ClassInfo prevInfo;
  /**
   * The classes met lately and their layouts, so that a stream of records of a few classes in
   * turn (a key, then its value) skips the {@code ClassValue} look-up; dropped when the registry
   * changes ({@link Cereal#registryVersion}).
   */
  private final Class<?>[] cachedTypes = new Class<?>[CLASS_CACHE];
  private final ClassInfo[] cachedInfos = new ClassInfo[CLASS_CACHE];
  private int cacheNext;
  private int cacheVersion = -1;

  /**
   * The first {@link #SMALL_SEEN} objects of a graph are looked up by a scan of these arrays
   * (identity compares) rather than {@link #seen}: a record of a few objects then never asks
   * for an identity hash code, which is a slow path of the VM for an object that has none yet
   * (a freshly made record), nor clears a table. Past them the graph moves to {@link #seen}.
   */
  private final Object[] smallObjs = new Object[SMALL_SEEN];
  private final int[] smallOffs = new int[SMALL_SEEN];
  private int smallCount;
  private boolean hashed;
  /**
   * The strings and boxes among a graph's first objects, hashed by value and compared by
   * identity (open addressing, {@code 2 * SMALL_VALUES} slots): a record of a few dozen boxed
   * values (a list of {@code Integer}s) finds each in a probe or two instead of a scan. The
   * slots used are listed in {@link #valueUsed}, to clear them after the graph.
   */
  private final Object[] valueKeys = new Object[2 * SMALL_VALUES];
  private final int[] valueOffs = new int[2 * SMALL_VALUES];
  private final int[] valueUsed = new int[SMALL_VALUES];
  private int valueCount;
  /** Strings and boxes of a graph kept in {@link #valueKeys} before {@link #seen} takes over. */
  static final int SMALL_VALUES = 32;
  /** A 32-bit hash's top bits index {@link #valueKeys}: this shift leaves them. */
  private static final int VALUE_SHIFT = Integer.numberOfLeadingZeros(2 * SMALL_VALUES - 1);

  // The frame, assembled.
  private byte[] frame = new byte[4096];
  private int frameLength;

  GraphWriter(Cereal cereal) {
    this.cereal = cereal;
  }

  /** Forgets the named classes: the next frame carries the reset flag and names them anew. */
  void resetClasses() {
    if (!named.isEmpty()) named.clear(); // a stream resetting every frame mostly has nothing named
    resetPending = true;
  }

  /** Serializes {@code root} into the frame buffer; see {@link #frameBuffer()} and {@link #writeTo}. */
  void write(Object root) {
    valPos = VAL0;
    pendingNulls = 0;
    compactGraph = cereal.compactFrames();
    refCount = 0;
    queueSize = 0;
    objectCount = 0;
    top = 0;
    if (!newNames.isEmpty()) newNames.clear();
    if (cacheVersion != cereal.registryVersion()) dropClassCache();
    int namedBefore = named.size();
    CerealTrace tracer = CerealTrace.active();
    GraphTrace trace = tracer == null ? null : tracer.begin();
    this.trace = trace;
    try {
      if (root != null) {
        // Callers try the direct path for leaves first (writeLeafTo, leafFrame); the walk
        // writes the same bytes for them.
        ClassInfo ci = info(root.getClass());
        claim(root, ci.kind);
        discover(root, ci);
        // The bitmap is set as each object's references are written once the graph is past a
        // compact frame's words (from bitsFrom on); assemble() sets the bits of the objects
        // before, for a full frame only.
        int from = cereal.compactFrames() ? Integer.MAX_VALUE : 0;
        for (int head = 0; head < queueSize; head++) {
          Object o = queue[head];
          queue[head] = null;
          int slot = queueSlot[head];
          int rc = queueRefs[head];
          if (head >= from || (top > Format.COMPACT_MAX_WORDS && (from = head) >= 0)) {
            ensureBitmap(slot + rc);
            Packing.setRange(bitmap, slot, slot + rc);
          }
          int nulls = queueNulls[head];
          if (nulls != 0) nullRefs(nulls);
          writeRefs(o, queueInfo[head], slot, rc);
        }
        if (pendingNulls != 0) nullRefs(pendingNulls);
        bitsFrom = from;
      }
      assemble();
      if (trace != null) trace.finish(refs, refCount, valPos - VAL0, lastRefBytes, lastBitmapBytes, frameLength);
    } catch (RuntimeException | StackOverflowError e) {
      // Names given out for this frame were never written: take them back.
      if (named.size() != namedBefore) named.values().removeIf(id -> id - Format.DYNAMIC_BASE >= namedBefore);
      Arrays.fill(queue, 0, queueSize, null);
      Arrays.fill(bitmap, 0L);
      throw e instanceof CerealException ce ? ce
          : new CerealException("cannot serialize the graph: " + e, e);
    } finally {
      this.trace = null;
      if (smallCount > 0) {
        Arrays.fill(smallObjs, 0, smallCount, null);
        smallCount = 0;
      }
      if (valueCount > 0) {
        for (int i = 0; i < valueCount; i++) valueKeys[valueUsed[i]] = null;
        valueCount = 0;
      }
      if (hashed) {
        seen.clear();
        hashed = false;
      }
    }
  }

  /** The last frame is {@code frameBuffer()[frameStart() .. frameStart() + frameLength())}. */
  byte[] frameBuffer() {
    return frameBuf;
  }

  int frameStart() {
    return frameStart;
  }

  int frameLength() {
    return frameLength;
  }

  void writeTo(OutputStream out) throws IOException {
    out.write(frameBuf, frameStart, frameLength);
  }

  /** Layout words of the last graph. */
  int lastWords() {
    return top;
  }

  /** Packed bitmap bytes of the last graph. */
  int lastBitmapBytes() {
    return lastBitmapBytes;
  }

  /** The unpacked references of the last graph (to measure bucket sizes). */
  int[] lastRefs() {
    return Arrays.copyOf(refs, refCount);
  }

  // ---------------------------------------------------------------- traversal

  private int classId(ClassInfo ci) {
    if (ci.id >= 0) return ci.id;
    Integer id = named.get(ci.type);
    if (id == null) {
      id = Format.DYNAMIC_BASE + named.size();
      named.put(ci.type, id);
      newNames.add(ci.type.getName());
    }
    return id;
  }

  /**
   * Gives {@code o} (of layout {@code ci}) the next offset, appends its header and value words,
   * queues it if it has reference words, and returns the offset. The caller has claimed {@code
   * o} at that offset ({@link #top}).
   */
  private int discover(Object o, ClassInfo ci) {
    if (ci.kind != ClassInfo.PLAIN) return discoverOther(o, ci);
    // The commonest kind, kept small so that it is compiled into the walk.
    int off = top;
    int pw = ci.primWords;
    int rw = ci.refCount;
    ensureVal(8L * (1 + pw));
    header(ci, 0);
    writePrims(o, ci, val, valPos);
    valPos += 8 * pw;
    long words = 1L + pw + rw;
    if (rw > 0 && (off + words > Format.COMPACT_MAX_WORDS || !compactGraph) && refsNull(o, ci)) {
      return placedNulls(o, ci, off, words, rw);
    }
    return placed(o, ci, off, words, rw);
  }

  /** Whether every reference field of {@code o} (of {@code PLAIN} layout {@code ci}) is null. */
  private static boolean refsNull(Object o, ClassInfo ci) {
    long[] roffs = ci.refOffsets;
    for (long r : roffs) if (U.getObject(o, r) != null) return false;
    return true;
  }

  /**
   * {@link #placed} for an object whose {@code rw} references are all null (a tree's leaf) in a
   * graph that is a full frame (past a compact frame's words, or full frames only): it is not
   * queued. Its reference words' bitmap bits are set now, and its null references are written
   * before the next queued object's ({@link #queueNulls}) or after the last.
   */
  private int placedNulls(Object o, ClassInfo ci, int off, long words, int rw) {
    if (words > Format.MAX_WORDS - (long) off) {
      throw new CerealException("graph too large: more than " + Format.MAX_WORDS + " words");
    }
    int end = off + (int) words;
    top = end;
    objectCount++;
    ensureBitmap(end);
    Packing.setRange(bitmap, end - rw, end);
    pendingNulls += rw;
    if (trace != null) trace.object(classId(ci), (int) words - rw, rw);
    return off;
  }

  /** Appends {@code n} null references. */
  private void nullRefs(int n) {
    int c = refCount;
    if (c + n > refs.length) refs = Arrays.copyOf(refs, Math.max(c + n, refs.length * 2));
    Arrays.fill(refs, c, c + n, 0);
    refCount = c + n;
  }

  /** {@link #discover} for every kind but {@code PLAIN}. */
  private int discoverOther(Object o, ClassInfo ci) {
    int off = top;
    int kind = ci.kind;
    int rw = 0; // reference words
    long words; // layout words
    switch (kind) {
      case ClassInfo.ENUM:
      case ClassInfo.SINGLETON:
        words = 1;
        ensureVal(8);
        header(ci, kind == ClassInfo.ENUM ? ((Enum<?>) o).ordinal() : 0);
        break;
      case ClassInfo.STRING: {
        words = writeString((String) o, ci);
        break;
      }
      case ClassInfo.CLASS: {
        Class<?> c = (Class<?>) o;
        if (!cereal.classObjectAllowed(c)) {
          throw new CerealException("a Class object for " + c.getName() + ", which is not "
              + "registered: register it on writer and reader alike, or "
              + "setRegistrationRequired(false)");
        }
        if (c.isHidden()) {
          throw new CerealException("cannot serialize the hidden class " + c.getName()
              + ": it cannot be found by name");
        }
        words = writeString(c.getName(), ci);
        break;
      }
      case ClassInfo.OBJ_ARRAY:
        rw = ((Object[]) o).length;
        words = 1L + rw;
        ensureVal(8);
        header(ci, rw);
        break;
      default:
        if (kind <= ClassInfo.DOUBLE) {
          words = 2;
          ensureVal(16);
          header(ci, 0);
          UnsafeAccess.putLong(val, valPos, boxedBits(o, kind));
          valPos += 8;
        } else if (ClassInfo.isPrimitiveArray(kind)) {
          int n = Array.getLength(o);
          int w = (int) (((long) n * ClassInfo.elementSize(kind) + 7) >>> 3);
          words = 1L + w;
          ensureVal(8L * words);
          header(ci, n);
          if (w > 0) UnsafeAccess.putLong(val, valPos + 8 * (w - 1), 0L);
          copyPrimitiveArray(o, kind, n, val, valPos);
          valPos += 8 * w;
        } else {
          int n;
          boolean map = ci.isMap() || kind == ClassInfo.IMM_MAP;
          if (map) {
            if (kind == ClassInfo.TREE_MAP && ((SortedMap<?, ?>) o).comparator() != null) {
              throw new CerealException("a TreeMap with a comparator cannot be serialized "
                  + "(only natural ordering is rebuilt)");
            }
            n = ((Map<?, ?>) o).size();
          } else {
            if (kind == ClassInfo.TREE_SET && ((SortedSet<?>) o).comparator() != null) {
              throw new CerealException("a TreeSet with a comparator cannot be serialized "
                  + "(only natural ordering is rebuilt)");
            }
            n = ((Collection<?>) o).size();
          }
          long r = map ? 2L * n : n;
          if (r > Format.MAX_WORDS) {
            throw new CerealException("graph too large: more than " + Format.MAX_WORDS + " words");
          }
          rw = (int) r;
          words = 1L + rw;
          ensureVal(8);
          header(ci, n);
        }
    }
    return placed(o, ci, off, words, rw);
  }

  /**
   * Ends {@link #discover}: the object at {@code off} takes {@code words} layout words, the last
   * {@code rw} of them references (then it is queued).
   */
  private int placed(Object o, ClassInfo ci, int off, long words, int rw) {
    if (words > Format.MAX_WORDS - (long) off) {
      throw new CerealException("graph too large: more than " + Format.MAX_WORDS + " words");
    }
    top = off + (int) words;
    objectCount++;
    if (rw > 0) {
      int q = queueSize;
      if (q == queue.length) growQueue();
      queue[q] = o;
      queueInfo[q] = ci;
      queueSlot[q] = off + (int) words - rw;
      queueRefs[q] = rw;
      queueNulls[q] = pendingNulls;
      pendingNulls = 0;
      queueSize = q + 1;
    }
    if (trace != null) trace.object(classId(ci), (int) words - rw, rw);
    return off;
  }

  /** A string of chars past Latin-1 (or a Class's name): its header and UTF-16LE words. */
  /**
   * Writes string {@code s} (a String's chars, or a Class object's name) as an object of class
   * {@code ci}: one byte a char when all are Latin-1, else two; returns the words written.
   */
  private long writeString(String s, ClassInfo ci) {
    if (!isLatin1(s)) return writeUtf16(s, ci);
    int n = s.length();
    int w = (n + 7) >>> 3;
    ensureVal(8L + 8L * w);
    header(ci, n << 1);
    if (w > 0) UnsafeAccess.putLong(val, valPos + 8 * (w - 1), 0L);
    latin1(s, n, val, valPos);
    valPos += 8 * w;
    return 1L + w;
  }

  private long writeUtf16(String s, ClassInfo ci) {
    int n = s.length();
    int w = (int) ((2L * n + 7) >>> 3);
    ensureVal(8L + 8L * w);
    header(ci, (n << 1) | 1);
    if (w > 0) UnsafeAccess.putLong(val, valPos + 8 * (w - 1), 0L);
    for (int i = 0; i < n; i++) UnsafeAccess.putShort(val, valPos + 2 * i, (short) s.charAt(i));
    valPos += 8 * w;
    return 1L + w;
  }

  /**
   * The most common root of a stream of records, a string of Latin-1 chars, a boxed value or an
   * object of a registered class without reference fields: its
   * compact frame written straight into the frame buffer, without the graph walk, the visited
   * set or the reference array (it has none). The bytes are those the walk writes. False, having
   * written nothing, for any other root.
   */
  private boolean writeLeaf(Object root, ClassInfo ci) {
    int p = writeLeaf(root, ci, frame, 0); // frame: at least 4096 bytes, room for LEAF_MAX_BYTES
    if (p < 0) return false;
    frameBuf = frame;
    frameStart = 0;
    frameLength = p;
    return true;
  }

  /**
   * {@link #writeLeaf(Object, ClassInfo)} into {@code f} at {@code start}, which has room for
   * {@link #LEAF_MAX_BYTES}: the end of the frame written, or -1 (nothing written) for a root
   * that is not such a leaf.
   */
  private int writeLeaf(Object root, ClassInfo ci, byte[] f, int start) {
    int kind = ci.kind;
    int p;
    int valueWords;
    if (kind == ClassInfo.STRING) {
      String s = (String) root;
      int n = s.length();
      if (n > LEAF_MAX_CHARS || !isLatin1(s)) return -1;
      int words = (n + 7) >>> 3;
      valueWords = 1 + words;
      p = leafHeader(f, start, valueWords);
      UnsafeAccess.putLong(f, p, Format.ID_STRING | ((long) (n << 1) << 32));
      p += 8;
      if (words > 0) UnsafeAccess.putLong(f, p + 8 * (words - 1), 0L);
      latin1(s, n, f, p);
      p += 8 * words;
    } else if (kind >= ClassInfo.BOOLEAN && kind <= ClassInfo.DOUBLE) {
      valueWords = 2;
      p = leafHeader(f, start, valueWords);
      UnsafeAccess.putLong(f, p, ci.id);
      UnsafeAccess.putLong(f, p + 8, boxedBits(root, kind));
      p += 16;
    } else if (kind == ClassInfo.PLAIN && ci.refCount == 0 && ci.id >= 0 && ci.primWords < 63) {
      // A registered class with primitive fields only (a rating, a point of scalars).
      valueWords = 1 + ci.primWords;
      p = leafHeader(f, start, valueWords);
      UnsafeAccess.putLong(f, p, ci.id);
      writePrims(root, ci, f, p + 8);
      p += 8 * valueWords;
    } else {
      return -1;
    }
    top = valueWords;
    objectCount = 1;
    lastRefBytes = 0;
    lastBitmapBytes = 0;
    resetPending = false;
    return p;
  }

  /**
   * A stream's record written straight into the stream's buffer {@code f} at {@code start}, which
   * has room for {@link #LEAF_MAX_BYTES}, when it is a leaf ({@link #writeLeaf}) and nothing
   * asks for the walk (a trace, full frames only): the end of the frame written there, or -1
   * (nothing written; {@link #write} then writes it).
   */
  int writeLeafTo(Object root, byte[] f, int start) {
    if (root == null || !cereal.compactFrames() || CerealTrace.active() != null) return -1;
    if (cacheVersion != cereal.registryVersion()) dropClassCache();
    return writeLeaf(root, info(root.getClass()), f, start);
  }

  /**
   * {@link #writeLeafTo}, and for a root with references a small graph's frame by {@link
   * #writeSmall}, into {@code f} at {@code start}, which has room for {@link #SMALL_MAX_BYTES}:
   * the end of the frame written there, or -1 (then {@link #write} writes it).
   */
  int writeSmallTo(Object root, byte[] f, int start) {
    if (root == null || !cereal.compactFrames() || CerealTrace.active() != null) return -1;
    if (cacheVersion != cereal.registryVersion()) dropClassCache();
    ClassInfo ci = info(root.getClass());
    int end = writeLeaf(root, ci, f, start);
    if (end >= 0) return end;
    if (ci == smallSkipped && smallSkips > 0) {
      smallSkips--; // its last graph was past writeSmall's bounds: the walk, without the try
      return -1;
    }
    end = writeSmall(root, ci, f, start);
    if (end < 0) {
      smallSkipped = ci;
      smallSkips = SMALL_SKIPS;
    }
    return end;
  }

  /**
   * Graphs of a root class whose last graph writeSmall gave up on go straight to the walk, this
   * many in a row (a tree or list of a thousand objects would otherwise be walked up to
   * writeSmall's bounds first, every time); then writeSmall tries again.
   */
  private static final int SMALL_SKIPS = 16;

  private ClassInfo smallSkipped;
  private int smallSkips;

  /** {@link #writeSmallTo} as a frame of its own, or null (then {@link #write} writes it). */
  byte[] leafFrame(Object root) {
    int end = writeSmallTo(root, frame, 0); // frame: at least 4096 bytes
    return end < 0 ? null : Arrays.copyOf(frame, end);
  }

  /** Value words and references {@link #writeSmall} writes at most: one varint byte each. */
  private static final int SMALL_MAX = 127;

  /** The longest frame {@link #writeSmall} writes: prefix, value array, packed references. */
  static final int SMALL_MAX_BYTES = 8 + 8 * SMALL_MAX + Packing.maxRefBytes(SMALL_MAX);

  /**
   * The compact frame of a small graph, a record of a few objects, written into {@code f} at
   * {@code start}: the walk of {@link #write} in a few small methods (so that the JIT compiles
   * them early and again quickly after a deoptimization), for graphs of at most {@link
   * #SMALL_MAX} value words and references whose objects are registered classes, strings,
   * boxes, enums, primitive and object arrays and {@code ArrayList}s, with at most {@link
   * #SMALL_SEEN} objects of the identity scan and {@link #SMALL_VALUES} strings and boxes; the
   * frame is assembled in place (no bitmap, no copy out of the value array). The same bytes as
   * the walk ({@code SmallFrameTest}); -1, nothing written, for any other graph.
   */
  private int writeSmall(Object root, ClassInfo rci, byte[] f, int start) {
    int kind0 = rci.kind;
    if (rci.id < 0 || (kind0 != ClassInfo.PLAIN && kind0 != ClassInfo.OBJ_ARRAY
        && kind0 != ClassInfo.ARRAY_LIST)) {
      return -1;
    }
    int base = start + 8; // after the longest prefix
    sVp = base;
    sEnd = base + 8 * SMALL_MAX;
    sTop = 0;
    sQueued = 0;
    sObjects = 0;
    int nref = 0;
    int end = -1;
    try {
      if (smallObject(root, rci, f) < 0) return -1;
      smallObjs[0] = root; // at offset 0, for references back to it
      smallOffs[0] = 0;
      smallCount = 1;
      int[] refs = this.refs; // at least 1024 long
      Object[] queue = this.queue; // at least 256 long; a small graph has at most 127 objects
      for (int head = 0; head < sQueued; head++) {
        Object o = queue[head];
        queue[head] = null;
        ClassInfo oc = queueInfo[head];
        int slot = queueSlot[head];
        int rc = queueRefs[head];
        if (nref + rc > SMALL_MAX) return -1;
        if (oc.kind == ClassInfo.PLAIN) {
          long[] offs = oc.refOffsets;
          ClassInfo[] declared = oc.refInfos;
          for (int r = 0; r < rc; r++) {
            Object t = U.getObject(o, offs[r]);
            int off = 0;
            if (t != null) {
              ClassInfo d = declared[r];
              off = smallOffset(t, d != null && t.getClass() == d.type ? d : info(t.getClass()), f);
              if (off < 0) return -1;
              off = (int) Format.zigzag((long) off - (slot + r));
            }
            refs[nref++] = off;
          }
        } else {
          Object[] arr;
          if (oc.kind == ClassInfo.OBJ_ARRAY) {
            arr = (Object[]) o;
          } else {
            if (((List<?>) o).size() != rc) return -1; // the walk says it changed size
            // An ArrayList's own element array (its first size elements), where the JDK has one.
            arr = GraphReader.ARRAY_LIST_DATA >= 0 ? (Object[]) U.getObject(o, GraphReader.ARRAY_LIST_DATA)
                : ((List<?>) o).toArray();
          }
          for (int r = 0; r < rc; r++) {
            Object t = arr[r];
            int off = 0;
            if (t != null) {
              off = smallOffset(t, info(t.getClass()), f);
              if (off < 0) return -1;
              off = (int) Format.zigzag((long) off - (slot + r));
            }
            refs[nref++] = off;
          }
        }
      }
      end = smallFrame(f, start, base, nref);
      return end;
    } catch (RuntimeException e) {
      return -1; // the walk meets it again and says what is wrong
    } finally {
      smallDone(end < 0);
    }
  }

  // writeSmall's walk: the next value byte, the value array's limit, the layout words so far,
  // the objects queued and written.
  private int sVp;
  private int sEnd;
  private int sTop;
  private int sQueued;
  private int sObjects;

  /**
   * The offset of {@code t} (of layout {@code ci}) in the small graph, found as {@link #claim}
   * and {@link #box} find it or written now (queued if it has references); -1 when the graph is
   * past writeSmall's bounds or holds a kind it leaves to the walk.
   */
  private int smallOffset(Object t, ClassInfo ci, byte[] f) {
    int kind = ci.kind;
    if (kind >= ClassInfo.BOOLEAN && kind <= ClassInfo.DOUBLE) return smallBox(t, ci, kind, f);
    if (kind == ClassInfo.STRING) return smallString((String) t, ci, f);
    Object[] so = smallObjs;
    int n = smallCount;
    for (int k = 0; k < n; k++) if (so[k] == t) return smallOffs[k];
    if (n == SMALL_SEEN) return -1;
    int off = smallObject(t, ci, f);
    if (off >= 0) {
      so[n] = t;
      smallOffs[n] = off;
      smallCount = n + 1;
    }
    return off;
  }

  /** {@link #smallOffset} of a box: hashed by value, compared by identity, as box() finds it. */
  private int smallBox(Object t, ClassInfo ci, int kind, byte[] f) {
    long bits = boxedBits(t, kind);
    int i = probeValue(t, boxSlot(bits));
    if (i >= 0) return i;
    i = ~i;
    int n = valueCount;
    int vp = sVp;
    if (n == SMALL_VALUES || vp + 16 > sEnd) return -1;
    UnsafeAccess.putLong(f, vp, ci.id);
    UnsafeAccess.putLong(f, vp + 8, bits);
    sVp = vp + 16;
    int off = sTop;
    sTop = off + 2;
    sObjects++;
    rememberValue(i, t, off);
    return off;
  }

  /**
   * Records value {@code key} (a box or string) in slot {@code i} of the value table, found
   * empty by its probe, at offset {@code off}; the caller checked the table has room.
   */
  private void rememberValue(int i, Object key, int off) {
    valueKeys[i] = key;
    valueOffs[i] = off;
    valueUsed[valueCount++] = i;
  }

  /**
   * {@link #smallOffset} of a string: hashed by value, compared by identity, as claim() finds
   * it, else written as writeString writes it.
   */
  private int smallString(String str, ClassInfo ci, byte[] f) {
    int i = probeValue(str, stringSlot(str));
    if (i >= 0) return i;
    i = ~i;
    int count = valueCount;
    if (count == SMALL_VALUES) return -1;
    int vp = sVp;
    int n = str.length();
    if (n > 8 * SMALL_MAX) return -1;
    boolean utf16 = !isLatin1(str);
    int w = utf16 ? (2 * n + 7) >>> 3 : (n + 7) >>> 3;
    if (vp + 8 + 8 * w > sEnd) return -1;
    UnsafeAccess.putLong(f, vp, ci.id | ((long) ((n << 1) | (utf16 ? 1 : 0)) << 32));
    if (w > 0) UnsafeAccess.putLong(f, vp + 8 * w, 0L);
    if (utf16) {
      utf16(str, n, f, vp + 8);
    } else {
      latin1(str, n, f, vp + 8);
    }
    sVp = vp + 8 + 8 * w;
    int off = sTop;
    sTop = off + 1 + w;
    sObjects++;
    rememberValue(i, str, off);
    return off;
  }

  /**
   * Writes object {@code t} (of layout {@code ci}, neither string nor box) at the next offset,
   * as discover() does, and queues it if it has references: its offset, or -1.
   */
  private int smallObject(Object t, ClassInfo ci, byte[] f) {
    if (ci.kind != ClassInfo.PLAIN) return smallOther(t, ci, f);
    if (ci.id < 0) return -1; // a named class: the walk names it
    int vp = sVp;
    int vw = 1 + ci.primWords;
    int rw = ci.refCount;
    if (vp + 8 * vw > sEnd) return -1;
    UnsafeAccess.putLong(f, vp, ci.id);
    writePrims(t, ci, f, vp + 8);
    return smallPlaced(t, ci, vp, vw, rw);
  }

  /** {@link #smallObject} of a kind other than a registered class. */
  private int smallOther(Object t, ClassInfo ci, byte[] f) {
    if (ci.id < 0) return -1; // a named class: the walk names it
    int kind = ci.kind;
    int vp = sVp;
    int vw;
    int rw = 0;
    if (kind == ClassInfo.ARRAY_LIST || kind == ClassInfo.OBJ_ARRAY) {
      vw = 1;
      rw = kind == ClassInfo.OBJ_ARRAY ? ((Object[]) t).length : ((List<?>) t).size();
      if (vp + 8 > sEnd || rw > SMALL_MAX) return -1;
      UnsafeAccess.putLong(f, vp, ci.id | ((long) rw << 32));
    } else if (kind == ClassInfo.ENUM) {
      vw = 1;
      if (vp + 8 > sEnd) return -1;
      UnsafeAccess.putLong(f, vp, ci.id | ((long) ((Enum<?>) t).ordinal() << 32));
    } else if (ClassInfo.isPrimitiveArray(kind)) {
      int n = Array.getLength(t);
      long w = ((long) n * ClassInfo.elementSize(kind) + 7) >>> 3;
      if (w >= SMALL_MAX || vp + 8 + 8 * (int) w > sEnd) return -1;
      vw = 1 + (int) w;
      UnsafeAccess.putLong(f, vp, ci.id | ((long) n << 32));
      if (w > 0) UnsafeAccess.putLong(f, vp + 8 * (int) w, 0L);
      copyPrimitiveArray(t, kind, n, f, vp + 8);
    } else {
      return -1; // collections, maps, singletons, Class objects: the walk
    }
    return smallPlaced(t, ci, vp, vw, rw);
  }

  /**
   * Ends {@link #smallObject}: the object written at {@code vp} takes {@code vw} value words and
   * {@code rw} reference words (then it is queued); returns its offset.
   */
  private int smallPlaced(Object t, ClassInfo ci, int vp, int vw, int rw) {
    int off = sTop;
    sVp = vp + 8 * vw;
    sTop = off + vw + rw;
    sObjects++;
    if (rw > 0) {
      int q = sQueued;
      queue[q] = t;
      queueInfo[q] = ci;
      queueSlot[q] = off + vw;
      queueRefs[q] = rw;
      sQueued = q + 1;
    }
    return off;
  }

  /**
   * The small graph's frame: its {@code nref} references packed after the value array at
   * {@code base}, the prefix before it (7 bytes when the body's length is one varint byte: then
   * the arrays move down by one so that the frame starts at {@code start}). Returns its end.
   */
  private int smallFrame(byte[] f, int start, int base, int nref) {
    int vp = sVp;
    int valueBytes = vp - base;
    int p = nref == 0 ? vp : vp + Packing.packRefs(refs, nref, f, vp);
    int refBytes = p - vp;
    int body = 3 + (p - base);
    int v0 = base;
    if (body < 128) {
      System.arraycopy(f, base, f, base - 1, p - base);
      p--;
      v0--;
    }
    f[start] = (byte) Format.MAGIC;
    f[start + 1] = (byte) Format.VERSION;
    f[start + 2] = (byte) (Format.FLAG_COMPACT | (resetPending ? Format.FLAG_RESET_CLASSES : 0));
    Format.putVarint(f, start + 3, body);
    f[v0 - 3] = 0; // no names
    f[v0 - 2] = (byte) (valueBytes >>> 3);
    f[v0 - 1] = (byte) nref;
    top = sTop;
    objectCount = sObjects;
    lastRefBytes = refBytes;
    lastBitmapBytes = 0;
    resetPending = false;
    return p;
  }

  /** Forgets writeSmall's graph: the visited tables, and the queue if it stopped early. */
  private void smallDone(boolean stopped) {
    if (smallCount > 0) {
      Arrays.fill(smallObjs, 0, smallCount, null);
      smallCount = 0;
    }
    if (valueCount > 0) {
      for (int i = 0; i < valueCount; i++) valueKeys[valueUsed[i]] = null;
      valueCount = 0;
    }
    if (stopped) Arrays.fill(queue, 0, sQueued, null);
  }

  /**
   * The most chars of a string written by {@link #writeLeaf}: 63 words of chars and a header,
   * so that the value word count is one varint byte.
   */
  private static final int LEAF_MAX_CHARS = 8 * 63;

  /** The longest frame {@link #writeLeaf} writes: an 8-byte prefix and 64 words. */
  static final int LEAF_MAX_BYTES = 8 + 8 * 64;

  /**
   * A compact frame's prefix at {@code f[start..]} for one object of {@code valueWords} words and
   * no references, up to its value array; returns where the value array starts.
   */
  private int leafHeader(byte[] f, int start, int valueWords) {
    int body = 3 + 8 * valueWords;
    f[start] = (byte) Format.MAGIC;
    f[start + 1] = (byte) Format.VERSION;
    f[start + 2] = (byte) (Format.FLAG_COMPACT | (resetPending ? Format.FLAG_RESET_CLASSES : 0));
    int p = Format.putVarint(f, start + 3, body);
    f[p] = 0; // no names
    f[p + 1] = (byte) valueWords;
    f[p + 2] = 0; // no references
    return p + 3;
  }

  /** The layout of {@code type}: the last two classes met, else the class cache. */
  private ClassInfo info(Class<?> type) {
    if (type == lastType) return lastInfo; // graphs repeat classes: skip the ClassValue look-up
    ClassInfo ci;
    if (type == prevType) {
      ci = prevInfo; // a key, then its value, in turn
    } else {
      ci = cachedInfo(type);
    }
    prevType = lastType;
    prevInfo = lastInfo;
    lastType = type;
    lastInfo = ci;
    return ci;
  }

  private void dropClassCache() {
    Arrays.fill(cachedTypes, null);
    Arrays.fill(cachedInfos, null);
    lastType = null;
    lastInfo = null;
    prevType = null;
    prevInfo = null;
    cacheVersion = cereal.registryVersion();
  }

  /** {@code type}'s layout from the class cache, else from the registry (then cached). */
  private ClassInfo cachedInfo(Class<?> type) {
    Class<?>[] ts = cachedTypes;
    for (int i = 0; i < CLASS_CACHE; i++) if (ts[i] == type) return cachedInfos[i];
    ClassInfo ci = cereal.infoFor(type);
    int k = cacheNext;
    ts[k] = type;
    cachedInfos[k] = ci;
    cacheNext = (k + 1) & (CLASS_CACHE - 1);
    return ci;
  }

  /**
   * The offset of {@code target} (of class kind {@code kind}) if the graph has reached it
   * already; otherwise records it at the next offset ({@link #top}) and returns -1.
   */
  private int claim(Object target, int kind) {
    if (!hashed) {
      if (kind >= ClassInfo.BOOLEAN && kind <= ClassInfo.STRING) {
        int i = probeValue(target, kind == ClassInfo.STRING
            ? stringSlot(target)
            : boxSlot(boxedBits(target, kind))); // as box() finds them
        if (i >= 0) return i;
        i = ~i;
        int n = valueCount;
        if (n < SMALL_VALUES) {
          rememberValue(i, target, top);
          return -1;
        }
      } else {
        Object[] so = smallObjs;
        int n = smallCount;
        for (int i = 0; i < n; i++) if (so[i] == target) return smallOffs[i];
        if (n < SMALL_SEEN) {
          so[n] = target;
          smallOffs[n] = top;
          smallCount = n + 1;
          return -1;
        }
      }
      toSeen();
    }
    return kind >= ClassInfo.BOOLEAN && kind <= ClassInfo.STRING
        ? seen.putIfAbsent(target, top) : seen.putIfAbsentObject(target, top);
  }

  /**
   * The offset of the boxed value {@code target} (of layout {@code ci}), a graph's first objects
   * not yet in {@link #seen}: found in {@link #valueKeys}, or claimed there and written (its
   * header and value word) as {@link #discover} would.
   */
  private int box(Object target, ClassInfo ci) {
    long bits = boxedBits(target, ci.kind);
    int i = probeValue(target, boxSlot(bits));
    if (i >= 0) return i;
    i = ~i;
    int n = valueCount;
    if (n == SMALL_VALUES) {
      toSeen();
      int off = seen.putIfAbsent(target, top);
      return off >= 0 ? off : discover(target, ci);
    }
    int off = top;
    rememberValue(i, target, off);
    if (valPos + 16 > val.length) growVal(valPos + 16L);
    UnsafeAccess.putLong(val, valPos, ci.id & 0xFFFFFFFFL); // built-in: registered
    UnsafeAccess.putLong(val, valPos + 8, bits);
    valPos += 16;
    top = off + 2; // graphs near Format.MAX_WORDS are hashed long before
    objectCount++;
    return off;
  }

  /** A boxed value's slot in {@link #valueKeys}, from its bits (for boxes the value's hash). */
  private static int boxSlot(long bits) {
    return ((int) (bits ^ (bits >>> 32)) * 0x9E3779B9) >>> VALUE_SHIFT;
  }

  /** A string's slot in {@link #valueKeys}, from its hash. */
  private static int stringSlot(Object str) {
    return (str.hashCode() * 0x9E3779B9) >>> VALUE_SHIFT;
  }

  /**
   * Probes {@link #valueKeys} from slot {@code i} (the value's own slot) for {@code key}, by
   * identity: its offset if it is there, else {@code ~slot} of the empty slot it would take.
   */
  private int probeValue(Object key, int i) {
    Object[] vk = valueKeys;
    int mask = vk.length - 1;
    for (Object c; (c = vk[i]) != null; i = (i + 1) & mask) {
      if (c == key) return valueOffs[i];
    }
    return ~i;
  }

  /** Moves the graph's objects met so far into {@link #seen}, which takes over from here. */
  private void toSeen() {
    for (int i = 0; i < smallCount; i++) seen.putIfAbsent(smallObjs[i], smallOffs[i]);
    for (int i = 0; i < valueCount; i++) {
      int k = valueUsed[i];
      seen.putIfAbsent(valueKeys[k], valueOffs[k]);
    }
    hashed = true;
  }

  /** The reference word for {@code target} in layout word {@code slot}. */
  private void ref(Object target, int slot) {
    int v;
    if (target == null) {
      v = 0;
    } else {
      ClassInfo ci = info(target.getClass());
      int kind = ci.kind;
      int off;
      if (kind >= ClassInfo.BOOLEAN && kind <= ClassInfo.DOUBLE && !hashed && trace == null) {
        off = box(target, ci); // the commonest leaf, kept small enough to inline here
      } else {
        // One probe: claims the next offset for the target if it is new.
        off = claim(target, kind);
        if (off < 0) off = discover(target, ci);
      }
      v = (int) Format.zigzag((long) off - slot);
    }
    if (refCount == refs.length) refs = Arrays.copyOf(refs, refs.length * 2);
    refs[refCount++] = v;
  }

  private void ensureVal(long bytes) {
    long need = valPos + bytes;
    if (need > val.length) growVal(need);
  }

  private void growVal(long need) {
    if (need > Integer.MAX_VALUE - 16) throw new CerealException("value array too large");
    val = Arrays.copyOf(val, (int) Math.min(Integer.MAX_VALUE - 16, Math.max(need, val.length * 2L)));
  }

  private void header(ClassInfo ci, int aux) {
    UnsafeAccess.putLong(val, valPos, (classId(ci) & 0xFFFFFFFFL) | ((long) aux << 32));
    valPos += 8;
  }

  /**
   * The {@code rc} references of a queued object, whose reference words start at layout word
   * {@code slot}.
   */
  private void writeRefs(Object o, ClassInfo ci, int slot, int rc) {
    int kind = ci.kind;
    if (kind != ClassInfo.PLAIN && kind != ClassInfo.OBJ_ARRAY) {
      writeContainer(o, ci, slot, rc);
      return;
    }
    long[] roffs = ci.refOffsets;
    Object[] arr = kind == ClassInfo.OBJ_ARRAY ? (Object[]) o : null;
    for (int r = 0; r < rc; r++) {
      Object t = arr != null ? arr[r] : U.getObject(o, roffs[r]);
      if (t == null || !hashed) {
        ref(t, slot + r);
        continue;
      }
      // ref() once the graph is in seen, where most of a large graph's references are written:
      // one probe of the map, which claims the next offset if the target is new, and a new
      // object of a class's fields placed as discover() places it. Written out here rather than
      // called: the JIT compiles a method called this often on its own first, at times, and
      // then does not compile it into this one (a call per reference; Tree narrow 1k's S up to
      // 10% slower in such runs).
      ClassInfo tc = info(t.getClass());
      int tk = tc.kind;
      int off;
      if (tk == ClassInfo.PLAIN) {
        off = seen.putIfAbsentObject(t, top);
        if (off < 0) {
          off = top;
          int pw = tc.primWords;
          int rw = tc.refCount;
          ensureVal(8L * (1 + pw));
          header(tc, 0);
          writePrims(t, tc, val, valPos);
          valPos += 8 * pw;
          long words = 1L + pw + rw;
          if (rw > 0 && (off + words > Format.COMPACT_MAX_WORDS || !compactGraph)
              && refsNull(t, tc)) {
            placedNulls(t, tc, off, words, rw);
          } else {
            placed(t, tc, off, words, rw);
          }
        }
      } else {
        off = tk >= ClassInfo.BOOLEAN && tk <= ClassInfo.STRING
            ? seen.putIfAbsent(t, top) : seen.putIfAbsentObject(t, top);
        if (off < 0) off = discoverOther(t, tc);
      }
      int v = (int) Format.zigzag((long) off - (slot + r));
      if (refCount == refs.length) refs = Arrays.copyOf(refs, refs.length * 2);
      refs[refCount++] = v;
    }
  }

  /** The primitive fields of {@code o} into its {@code ci.primWords} words at {@code base}. */
  private static void writePrims(Object o, ClassInfo ci, byte[] dst, int base) {
    byte[] kinds = ci.wordKinds;
    long[] offs = ci.wordOffsets;
    for (int w = 0; w < kinds.length; w++) {
      long a = offs[2 * w];
      long v;
      switch (kinds[w]) {
        case ClassInfo.W_LONG:
          v = U.getLong(o, a);
          break;
        case ClassInfo.W_INT2:
          v = (U.getInt(o, a) & 0xFFFFFFFFL) | ((long) U.getInt(o, offs[2 * w + 1]) << 32);
          break;
        case ClassInfo.W_INT:
          v = U.getInt(o, a) & 0xFFFFFFFFL;
          break;
        default:
          v = mixedWord(o, ci, w);
      }
      UnsafeAccess.putLong(dst, base + 8 * w, v);
    }
  }

  /** Word {@code w} of {@code o}'s primitive fields, of fields of 4 bytes or fewer. */
  private static long mixedWord(Object o, ClassInfo ci, int w) {
    long v = 0;
    long[] offs = ci.primOffsets;
    byte[] kinds = ci.primKinds;
    int[] pos = ci.primPos;
    for (int k = ci.wordFields[w], end = ci.wordFields[w + 1]; k < end; k++) {
      long off = offs[k];
      long x;
      switch (kinds[k]) {
        case ClassInfo.F_INT: case ClassInfo.F_FLOAT:
          x = U.getInt(o, off) & 0xFFFFFFFFL;
          break;
        case ClassInfo.F_SHORT: case ClassInfo.F_CHAR:
          x = U.getShort(o, off) & 0xFFFFL;
          break;
        default:
          x = U.getByte(o, off) & 0xFFL;
      }
      v |= x << (8 * (pos[k] - 8 * w));
    }
    return v;
  }

  private void writeContainer(Object o, ClassInfo ci, int slot, int words) {
    boolean map = ci.isMap() || ci.kind == ClassInfo.IMM_MAP;
    int i = 0;
    if (map) {
      for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
        if (i == words) break;
        ref(e.getKey(), slot + i);
        ref(e.getValue(), slot + i + 1);
        i += 2;
      }
    } else if (ci.kind == ClassInfo.ARRAY_LIST) {
      List<?> l = (List<?>) o;
      if (l.size() == words) {
        for (; i < words; i++) ref(l.get(i), slot + i);
      }
    } else {
      for (Object e : (Collection<?>) o) {
        if (i == words) break;
        ref(e, slot + i);
        i++;
      }
    }
    if (i != words) {
      throw new CerealException(ci.type.getName() + " changed size while being serialized");
    }
  }

  private static long boxedBits(Object o, int kind) {
    switch (kind) {
      case ClassInfo.BOOLEAN: return ((Boolean) o) ? 1 : 0;
      case ClassInfo.BYTE: return (Byte) o;
      case ClassInfo.SHORT: return (Short) o;
      case ClassInfo.CHAR: return (Character) o;
      case ClassInfo.INT: return (Integer) o;
      case ClassInfo.LONG: return (Long) o;
      case ClassInfo.FLOAT: return Float.floatToRawIntBits((Float) o);
      default: return Double.doubleToRawLongBits((Double) o);
    }
  }

  static void copyPrimitiveArray(Object a, int kind, int n, byte[] dst, int pos) {
    if (n == 0) return;
    if (kind == ClassInfo.A_BYTE) {
      System.arraycopy(a, 0, dst, pos, n);
      return;
    }
    if (UnsafeAccess.LITTLE_ENDIAN) {
      long bytes = (long) n * ClassInfo.elementSize(kind);
      U.copyMemory(a, ClassInfo.arrayBase(kind), dst, UnsafeAccess.BYTE_BASE + pos, bytes);
      return;
    }
    switch (kind) {
      case ClassInfo.A_BOOLEAN: for (boolean v : (boolean[]) a) dst[pos++] = (byte) (v ? 1 : 0); break;
      case ClassInfo.A_BYTE: System.arraycopy(a, 0, dst, pos, n); break;
      case ClassInfo.A_SHORT: for (short v : (short[]) a) { UnsafeAccess.putShort(dst, pos, v); pos += 2; } break;
      case ClassInfo.A_CHAR: for (char v : (char[]) a) { UnsafeAccess.putShort(dst, pos, (short) v); pos += 2; } break;
      case ClassInfo.A_INT: for (int v : (int[]) a) { UnsafeAccess.putInt(dst, pos, v); pos += 4; } break;
      case ClassInfo.A_FLOAT: for (float v : (float[]) a) { UnsafeAccess.putInt(dst, pos, Float.floatToRawIntBits(v)); pos += 4; } break;
      case ClassInfo.A_LONG: for (long v : (long[]) a) { UnsafeAccess.putLong(dst, pos, v); pos += 8; } break;
      default: for (double v : (double[]) a) { UnsafeAccess.putLong(dst, pos, Double.doubleToRawLongBits(v)); pos += 8; }
    }
  }

  // ---------------------------------------------------------------- strings

  private static long stringCoderOffset() {
    try {
      return UnsafeAccess.fieldOffset(String.class.getDeclaredField("coder"));
    } catch (ReflectiveOperationException | RuntimeException e) {
      return -1;
    }
  }

  /** Whether every char of {@code s} is below 256 (read from String's coder where we can). */
  private static boolean isLatin1(String s) {
    if (STRING_CODER_OFFSET >= 0) {
      if (U.getByte(s, STRING_CODER_OFFSET) == 0) return true;
      // coder UTF16 can still hold only Latin-1 chars with -XX:-CompactStrings: scan.
    }
    for (int i = 0, n = s.length(); i < n; i++) if (s.charAt(i) > 0xFF) return false;
    return true;
  }

  /** The {@code n} chars of {@code s} as UTF-16LE at {@code dst[pos..]}. */
  private static void utf16(String s, int n, byte[] dst, int pos) {
    for (int i = 0; i < n; i++) UnsafeAccess.putShort(dst, pos + 2 * i, (short) s.charAt(i));
  }

  @SuppressWarnings("deprecation")
  private static void latin1(String s, int n, byte[] dst, int pos) {
    s.getBytes(0, n, dst, pos); // copies the low byte of each char: exact for Latin-1
  }

  // ---------------------------------------------------------------- frame

  private void ensureBitmap(int words) {
    int groups = (words + 63) >>> 6;
    if (groups > bitmap.length) bitmap = Arrays.copyOf(bitmap, Math.max(groups, bitmap.length * 2));
  }

  private void growQueue() {
    int n = queue.length * 2;
    queue = Arrays.copyOf(queue, n);
    queueInfo = Arrays.copyOf(queueInfo, n);
    queueSlot = Arrays.copyOf(queueSlot, n);
    queueRefs = Arrays.copyOf(queueRefs, n);
    queueNulls = Arrays.copyOf(queueNulls, n);
  }

  private void assemble() {
    if (top <= Format.COMPACT_MAX_WORDS && cereal.compactFrames()) {
      assembleCompact();
      return;
    }
    int words = top;
    ensureBitmap(words);
    // The bits of the objects queued before the walk set them (their slots and counts stay
    // after the walk): compact frames, most records, have no bitmap to make.
    for (int q = 0, n = Math.min(bitsFrom, queueSize); q < n; q++) {
      Packing.setRange(bitmap, queueSlot[q], queueSlot[q] + queueRefs[q]);
    }
    byte[][] names = newNames.isEmpty() ? NO_NAMES : new byte[newNames.size()][];
    long namesBytes = Format.varintSize(names.length);
    for (int i = 0; i < names.length; i++) {
      names[i] = newNames.get(i).getBytes(StandardCharsets.UTF_8);
      namesBytes += Format.varintSize(names[i].length) + names[i].length;
    }
    int valueBytes = valPos - VAL0;
    int valueWords = valueBytes >>> 3;
    // The references and the bitmap are packed after the value array, and the prefix is written
    // before it when it fits the room VAL0 keeps (it does without names): the frame is then
    // where the values were written, not copied.
    ensureVal((long) Packing.maxRefBytes(refCount) + Packing.maxBitmapBytes(words));
    byte[] v = val;
    int refBytes = Packing.packRefs(refs, refCount, v, valPos);
    int bitmapBytes = Packing.packBitmap(bitmap, words, v, valPos + refBytes);
    lastBitmapBytes = bitmapBytes;
    lastRefBytes = refBytes;
    Arrays.fill(bitmap, 0, (words + 63) >>> 6, 0L);
    long body = namesBytes + Format.varintSize(objectCount) + Format.varintSize(valueWords)
        + Format.varintSize(refCount) + Format.varintSize(refBytes)
        + Format.varintSize(bitmapBytes) + valueBytes + refBytes + bitmapBytes;
    if (body > Integer.MAX_VALUE - 32) throw new CerealException("graph too large for one frame");
    int total = 3 + Format.varintSize((int) body) + (int) body;
    int prefix = total - valueBytes - refBytes - bitmapBytes;
    byte[] f;
    int p;
    if (prefix <= VAL0) {
      f = v;
      p = VAL0 - prefix;
    } else {
      if (frame.length < total) frame = new byte[Math.max(total, (int) Math.min(Integer.MAX_VALUE - 32, frame.length * 2L))];
      f = frame;
      p = 0;
    }
    int start = p;
    f[p++] = (byte) Format.MAGIC;
    f[p++] = (byte) Format.VERSION;
    f[p++] = (byte) (resetPending ? Format.FLAG_RESET_CLASSES : 0);
    p = Format.putVarint(f, p, (int) body);
    p = Format.putVarint(f, p, names.length);
    for (byte[] nm : names) {
      p = Format.putVarint(f, p, nm.length);
      System.arraycopy(nm, 0, f, p, nm.length);
      p += nm.length;
    }
    p = Format.putVarint(f, p, objectCount);
    p = Format.putVarint(f, p, valueWords);
    p = Format.putVarint(f, p, refCount);
    p = Format.putVarint(f, p, refBytes);
    p = Format.putVarint(f, p, bitmapBytes);
    if (f != v) System.arraycopy(v, VAL0, f, p, valueBytes + refBytes + bitmapBytes);
    frameBuf = f;
    frameStart = start;
    frameLength = total;
    resetPending = false;
  }

  /**
   * The compact frame of a small graph ({@link Format}): the class names, the value word and
   * reference counts, the value array and the packed references; no bitmap.
   */
  private void assembleCompact() {
    int valueBytes = valPos - VAL0;
    int valueWords = valueBytes >>> 3;
    int flags = Format.FLAG_COMPACT | (resetPending ? Format.FLAG_RESET_CLASSES : 0);
    int refBytes;
    if (newNames.isEmpty()) {
      // The usual record: the references go after the value array and the prefix before it,
      // into the room VAL0 keeps, so the frame is assembled where the values were written.
      ensureVal(Packing.maxRefBytes(refCount));
      byte[] v = val;
      refBytes = refCount == 0 ? 0 : Packing.packRefs(refs, refCount, v, valPos);
      int counts = 1 + Format.varintSize(valueWords) + Format.varintSize(refCount);
      int body = counts + valueBytes + refBytes;
      int start = VAL0 - counts - Format.varintSize(body) - 3;
      v[start] = (byte) Format.MAGIC;
      v[start + 1] = (byte) Format.VERSION;
      v[start + 2] = (byte) flags;
      int p = Format.putVarint(v, start + 3, body);
      v[p++] = 0; // no names
      p = Format.putVarint(v, p, valueWords);
      Format.putVarint(v, p, refCount);
      frameBuf = v;
      frameStart = start;
      frameLength = VAL0 - start + valueBytes + refBytes;
    } else {
      byte[][] names = new byte[newNames.size()][];
      int namesBytes = Format.varintSize(names.length);
      for (int i = 0; i < names.length; i++) {
        names[i] = newNames.get(i).getBytes(StandardCharsets.UTF_8);
        namesBytes += Format.varintSize(names[i].length) + names[i].length;
      }
      int maxBody = namesBytes + Format.varintSize(valueWords) + Format.varintSize(refCount)
          + valueBytes + Packing.maxRefBytes(refCount);
      int need = 3 + Format.varintSize(maxBody) + maxBody;
      if (frame.length < need) frame = new byte[Math.max(need, 2 * frame.length)];
      byte[] f = frame;
      // The body starts after the longest body length this frame can need; the prefix is
      // moved up against it at the end if the length takes fewer bytes.
      int lenBytes = Format.varintSize(maxBody);
      int p = Format.putVarint(f, 3 + lenBytes, names.length);
      for (byte[] nm : names) {
        p = Format.putVarint(f, p, nm.length);
        System.arraycopy(nm, 0, f, p, nm.length);
        p += nm.length;
      }
      p = Format.putVarint(f, p, valueWords);
      p = Format.putVarint(f, p, refCount);
      System.arraycopy(val, VAL0, f, p, valueBytes);
      p += valueBytes;
      refBytes = refCount == 0 ? 0 : Packing.packRefs(refs, refCount, f, p);
      p += refBytes;
      int body = p - 3 - lenBytes;
      int start = lenBytes - Format.varintSize(body);
      f[start] = (byte) Format.MAGIC;
      f[start + 1] = (byte) Format.VERSION;
      f[start + 2] = (byte) flags;
      Format.putVarint(f, start + 3, body);
      frameBuf = f;
      frameStart = start;
      frameLength = p - start;
    }
    lastRefBytes = refBytes;
    lastBitmapBytes = 0;
    resetPending = false;
  }

  /**
   * The array holding the last frame: {@link #val}, or {@link #frame} for a leaf's, a compact
   * frame with names and a full frame whose prefix did not fit before its values.
   */
  private byte[] frameBuf = frame;
  private int frameStart;
  private int lastBitmapBytes;
  private int lastRefBytes;
}
