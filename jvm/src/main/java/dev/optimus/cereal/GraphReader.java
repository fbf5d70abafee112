package dev.optimus.cereal;

import static dev.optimus.cereal.UnsafeAccess.U;

import java.lang.invoke.MethodHandle;
import java.lang.reflect.Array;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import dev.optimus.cereal.trace.CerealTrace;

/**
 * Deserialization of one frame in the paper's two passes, plus one for collections.
 *
 * <ol>
 *   <li><b>Allocate</b> (one scan of the value array): read each header, check its class ID
 *       and length against what is left of the input, allocate the object without a
 *       constructor, copy its value words into its primitive fields, check that the layout
 *       bitmap marks exactly its reference words, and record it at its first layout word. For a
 *       graph read in parallel the scan reads the headers alone and cuts the objects into
 *       chunks, which the other threads allocate while it goes on ({@link #allocateParallel}).
 *   <li><b>Fix references</b> (parallel for large graphs): each reference is decoded on its own
 *       (its target is its own word plus its offset), so the objects are cut into chunks, each
 *       chunk starting at a known reference index (the bitmap's population count up to the
 *       chunk, which pass 1 counted) and bucket of the packed reference array, and the chunks are
 *       fixed on {@link Cereal#setDeserializationThreads} threads. Every target is checked to be
 *       an object's first word and of the field's declared type before it is stored.
 *   <li><b>Fill collections</b> (sequential): collections and maps get their elements, hashed
 *       or sorted ones only once their elements' own contents are complete, in reverse breadth-
 *       first order (children before parents); immutable ones are built here and the references
 *       to them, deferred by pass 2, stored.
 * </ol>
 *
 * <p>Every count read from the frame is checked against the bytes left before anything is
 * allocated from it; every error is a {@link CerealException} with the byte offset. Not
 * thread-safe (a reader is per stream: it holds the stream's named classes).
 */
final class GraphReader {
  /**
   * Offsets of {@code ArrayList}'s {@code elementData} and {@code size}, so that pass 3 hands a
   * list the array of its elements (exactly its size) instead of copying it; -1 where the JDK's
   * ArrayList has no such fields (then the list is filled by {@code addAll}).
   */
  static final long ARRAY_LIST_DATA = arrayListField("elementData", Object[].class);
  private static final long ARRAY_LIST_SIZE = ARRAY_LIST_DATA < 0 ? -1 : arrayListField("size", int.class);

  private static long arrayListField(String name, Class<?> type) {
    try {
      java.lang.reflect.Field f = ArrayList.class.getDeclaredField(name);
      return f.getType() == type ? UnsafeAccess.fieldOffset(f) : -1;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return -1;
    }
  }

  private final Cereal cereal;
  private final List<ClassInfo> named;
  /**
   * Reading a graph: a nested read (a constructor, {@code readResolve} or {@code hashCode} the
   * read calls, reading again) gets a reader of its own.
   */
  private boolean busy;

  GraphReader(Cereal cereal) {
    this(cereal, new ArrayList<>());
  }

  private GraphReader(Cereal cereal, List<ClassInfo> named) {
    this.cereal = cereal;
    this.named = named;
  }

  /** Where a frame's body lies and its flags, from {@link #frameHeader}. */
  record FrameHeader(int flags, int bodyStart, int bodyLength) {}

  /**
   * Parses a frame's prefix (magic, version, flags, body length) at {@code b[pos..end)}. The body
   * length is checked against {@code end} by the caller (a stream reads it first).
   */
  static FrameHeader frameHeader(byte[] b, int pos, int end, long base) {
    if (end - pos < 4) throw new CerealException("truncated frame header", base + end, null);
    int magic = b[pos] & 0xFF;
    if (magic != Format.MAGIC) {
      throw new CerealException(String.format("not a Cereal frame: magic 0x%02X, expected 0x%02X",
          magic, Format.MAGIC), base + pos, null);
    }
    int version = b[pos + 1] & 0xFF;
    if (version != Format.VERSION) {
      throw new CerealException("unsupported Cereal format version " + version, base + pos + 1, null);
    }
    int flags = b[pos + 2] & 0xFF;
    if ((flags & ~(Format.FLAG_RESET_CLASSES | Format.FLAG_COMPACT)) != 0) {
      throw new CerealException(String.format("unknown frame flags 0x%02X", flags), base + pos + 2, null);
    }
    long v = varint(b, pos + 3, end, base, "frame length");
    return new FrameHeader(flags, (int) (v >>> 32), (int) v);
  }

  /** Reads a varint at {@code pos}; returns {@code (nextPos << 32) | value}. */
  static long varint(byte[] b, int pos, int end, long base, String what) {
    if (pos < end) {
      int x = b[pos];
      if (x >= 0) return ((long) (pos + 1) << 32) | x; // one byte: a record's counts, inline
    }
    return varintLong(b, pos, end, base, what);
  }

  /** {@link #varint} of two bytes or more, or truncated. */
  private static long varintLong(byte[] b, int pos, int end, long base, String what) {
    int start = pos;
    int v = 0;
    for (int shift = 0; ; shift += 7) {
      if (pos >= end) throw new CerealException("truncated " + what, base + start, null);
      int x = b[pos++];
      if (shift == 28 && (x & 0xF8) != 0) {
        throw new CerealException(what + " is not a non-negative 31-bit varint", base + start, null);
      }
      v |= (x & 0x7F) << shift;
      if (x >= 0) break;
    }
    return ((long) pos << 32) | (v & 0xFFFFFFFFL);
  }

  // ------------------------------------------------------------------ per graph

  private byte[] b;
  private long base;
  private int pos;
  private int end;
  private int words;
  private Object[] byWord;
  private Object[] objs;
  private ClassInfo[] infos;
  private int[] starts;
  private long[] bits;
  /** The bitmap pass 1 builds from the objects' layouts, compared with {@link #bits}. */
  private long[] expect;
  /** Groups of {@link #expect} that may hold bits (0 once {@link #checkBitmap} cleared them). */
  private int expectUsed;
  private int refStart;
  private int refEnd;
  private int refCount;
  private int groups;
  private int objectCount;
  private final ArrayList<Container> containers = new ArrayList<>();
  private final ArrayList<Deferred> deferred = new ArrayList<>();
  private int[] chunkObj;
  private int[] chunkRef;
  /** Where each chunk's first object starts in the value array (parallel pass 1). */
  private int[] chunkVpos;
  /** The object after each chunk's last. */
  private int[] chunkEnd;
  private int chunks;

  private long next(String what) {
    long v = varint(b, pos, end, base, what);
    pos = (int) (v >>> 32);
    return (int) v;
  }

  private CerealException error(String message, long at) {
    return new CerealException("corrupt Cereal frame: " + message, at < 0 ? -1 : base + at, null);
  }

  /**
   * Decodes the body {@code b[start..start+length)} of a frame with {@code flags}; {@code base}
   * is the stream offset of {@code b[0]}, for errors.
   */
  Object read(byte[] b, int start, int length, int flags, long base) {
    if ((flags & ~Format.FLAG_RESET_CLASSES) == Format.FLAG_COMPACT && length >= 11
        && b[start] == 0 && b[start + 2] == 0
        && length == 3 + 8 * b[start + 1]) { // one varint byte: fewer than COMPACT_MAX_WORDS
      Object leaf = readLeaf(b, start + 3, b[start + 1]);
      if (leaf != null) {
        // A stream that resets its class names before every record (Spark's, with registration
        // optional) flags its leaves too.
        if ((flags & Format.FLAG_RESET_CLASSES) != 0 && !named.isEmpty()) named.clear();
        return leaf;
      }
    }
    if (busy) return new GraphReader(cereal, named).read(b, start, length, flags, base);
    if ((flags & ~Format.FLAG_RESET_CLASSES) == Format.FLAG_COMPACT && length >= 3
        && b[start] == 0 && b[start + 1] > 0 && b[start + 2] >= 0) { // no names, one-byte counts
      Object root = readSmall(b, start + 3, b[start + 1], b[start + 2], start + length);
      if (root != null) {
        if ((flags & Format.FLAG_RESET_CLASSES) != 0 && !named.isEmpty()) named.clear();
        return root;
      }
    }
    busy = true;
    this.b = b;
    this.base = base;
    this.pos = start;
    this.end = start + length;
    containers.clear();
    deferred.clear();
    chunks = 0;
    words = 0;
    objectCount = 0;
    try {
      return readBody(flags);
    } catch (CerealException e) {
      throw e;
    } catch (RuntimeException | StackOverflowError e) {
      throw new CerealException("corrupt Cereal frame: " + e, base + start, e);
    } finally {
      this.b = null;
      busy = false;
      release();
      containers.clear();
      deferred.clear();
    }
  }

  /**
   * A compact frame of one object without references, no names and {@code valueWords} words at
   * {@code p}, when that object is a Latin-1 string, a boxed value or an object of a registered
   * class with primitive fields only (most records of a Spark stream): decoded straight from the
   * value array, without the reader's tables. Null, having read nothing, for any other frame,
   * which the general path reads (and checks) instead; for these three it yields what the general
   * path would.
   */
  private Object readLeaf(byte[] b, int p, int valueWords) {
    if (CerealTrace.active() != null) return null;
    long h = UnsafeAccess.getLong(b, p);
    int id = (int) h;
    if (id == Format.ID_STRING) {
      int aux = (int) (h >>> 32);
      if ((aux & 1) != 0 || aux < 0) return null;
      int n = aux >>> 1;
      if (valueWords != 1 + ((n + 7) >>> 3)) return null;
      return latin1(b, p + 8, n);
    }
    if (id >= Format.ID_BOOLEAN && id <= Format.ID_DOUBLE && valueWords == 2) {
      return boxed(cereal.infoById(id).kind, UnsafeAccess.getLong(b, p + 8));
    }
    ClassInfo ci = id >= Format.FIRST_USER_ID && id < Format.DYNAMIC_BASE ? cereal.infoById(id) : null;
    if (ci != null && ci.kind == ClassInfo.PLAIN && ci.refCount == 0 && valueWords == 1 + ci.primWords) {
      Object obj;
      try {
        obj = U.allocateInstance(ci.type);
      } catch (InstantiationException e) {
        return null; // the general path reports it
      }
      readPrims(b, p + 8, obj, ci);
      return obj;
    }
    return null;
  }

  /**
   * A compact frame of a small graph (no names, fewer than 128 value words and 128 references)
   * whose objects are all of the kinds a record is made of: objects of registered classes,
   * strings, boxed values, enums, primitive and object arrays and {@code ArrayList}s. Both
   * passes in one method, without the general path's container records, deferred stores and
   * reference cursor: that per-frame work was most of a small record's time (a record of one
   * object and two null references took 34 ns, 24 ns now). Null, having changed nothing but
   * the tables it clears again, for any other frame and for any frame the general path would
   * reject (it then reads the frame and reports the error); for the others it yields what the
   * general path would ({@code SmallFrameTest}).
   */
  private Object readSmall(byte[] b, int p, int valueWords, int refs, int end) {
    int valueEnd = p + 8 * valueWords;
    if (valueEnd > end || CerealTrace.active() != null) return null;
    int words = valueWords + refs;
    tables(words, valueWords);
    busy = true; // a class initializer that allocateInstance runs could read again
    this.b = b; // primitiveArray reads it
    this.words = words; // bounds for release()
    this.objectCount = 0;
    try {
      return readSmallGraph(b, p, valueEnd, refs, end);
    } catch (RuntimeException e) {
      return null; // the general path says what is wrong
    } finally {
      this.b = null;
      busy = false;
      release();
    }
  }

  private Object readSmallGraph(byte[] b, int vpos, int valueEnd, int refs, int end) {
    Object[] byWord = this.byWord;
    Object[] objs = this.objs;
    ClassInfo[] infos = this.infos;
    int[] starts = this.starts;
    int word = 0;
    int holders = 0;
    int refsSeen = 0;
    while (vpos < valueEnd) {
      long h = UnsafeAccess.getLong(b, vpos);
      int id = (int) h;
      int aux = (int) (h >>> 32);
      if (id <= 0 || id >= Format.ID_CLASS) return null; // names and Class objects: general path
      ClassInfo ci = cereal.infoById(id);
      if (ci == null) return null;
      int left = valueEnd - vpos - 8;
      int vw;
      int rw = 0;
      Object obj;
      Object holder = null; // what pass 2 stores the references into, if not obj
      int kind = ci.kind;
      if (kind == ClassInfo.PLAIN) {
        vw = 1 + ci.primWords;
        rw = ci.refCount;
        if (8 * ci.primWords > left) return null;
        try {
          obj = U.allocateInstance(ci.type);
        } catch (InstantiationException e) {
          return null;
        }
        readPrims(b, vpos + 8, obj, ci);
      } else if (kind >= ClassInfo.BOOLEAN && kind <= ClassInfo.DOUBLE) {
        if (left < 8) return null;
        vw = 2;
        obj = boxed(kind, UnsafeAccess.getLong(b, vpos + 8));
      } else if (kind == ClassInfo.STRING) {
        if (aux < 0) return null;
        int chars = aux >>> 1;
        boolean utf16 = (aux & 1) != 0;
        int bytes = utf16 ? 2 * chars : chars;
        if (bytes > left) return null;
        vw = 1 + ((bytes + 7) >>> 3);
        obj = utf16 ? new String(b, vpos + 8, bytes, StandardCharsets.UTF_16LE) : latin1(b, vpos + 8, bytes);
      } else if (kind == ClassInfo.ARRAY_LIST) {
        if (ARRAY_LIST_DATA < 0 || aux < 0 || aux > refs - refsSeen) return null;
        vw = 1;
        rw = aux;
        // As pass 3 fills a list: the array made for its elements becomes its storage.
        ArrayList<Object> l = new ArrayList<>();
        holder = new Object[aux];
        U.putObject(l, ARRAY_LIST_DATA, holder);
        U.putInt(l, ARRAY_LIST_SIZE, aux);
        obj = l;
      } else if (kind == ClassInfo.OBJ_ARRAY) {
        if (aux < 0 || aux > refs - refsSeen) return null;
        vw = 1;
        rw = aux;
        obj = ci.component == null ? new Object[aux] : Array.newInstance(ci.component, aux);
      } else if (kind == ClassInfo.ENUM) {
        if (aux < 0 || aux >= ci.enumConstants.length) return null;
        vw = 1;
        obj = ci.enumConstants[aux];
      } else if (ClassInfo.isPrimitiveArray(kind)) {
        if (aux < 0) return null;
        long bytes = (long) aux * ClassInfo.elementSize(kind);
        if (bytes > left) return null;
        vw = 1 + (int) ((bytes + 7) >>> 3);
        obj = primitiveArray(kind, aux, vpos + 8);
      } else {
        return null;
      }
      if (rw > refs - refsSeen) return null;
      byWord[word] = obj;
      if (rw > 0) {
        // Only objects with references take part in pass 2: recorded with their first slot.
        objs[holders] = holder != null ? holder : obj;
        infos[holders] = ci;
        starts[holders] = word + vw;
        this.objectCount = ++holders; // what release() clears
      }
      word += vw + rw;
      vpos += 8 * vw;
      refsSeen += rw;
    }
    if (refsSeen != refs) return null;
    this.words = word;
    // Pass 2: every reference decoded on its own, checked as fix() checks it.
    rq = vpos; // the reference array
    rLeft = 0;
    rIndex = 0;
    for (int h = 0; h < holders; h++) {
      ClassInfo ci = infos[h];
      Object o = objs[h];
      int slot = starts[h];
      if (ci.kind == ClassInfo.PLAIN) {
        long[] offs = ci.refOffsets;
        Class<?>[] types = ci.refTypes;
        for (int r = 0; r < offs.length; r++, slot++) {
          Object t = smallTarget(b, slot, word, refs, end);
          if (t == BAD) return null;
          Class<?> type = types[r];
          if (type != null && t != null && t.getClass() != type && !type.isInstance(t)) return null;
          U.putObject(o, offs[r], t);
        }
      } else {
        Object[] elems = (Object[]) o; // an array, or a list's elements
        Class<?> component = ci.component; // null for Object[] and lists: no store check
        for (int r = 0; r < elems.length; r++, slot++) {
          Object t = smallTarget(b, slot, word, refs, end);
          if (t == BAD) return null;
          if (component != null && t != null && !component.isInstance(t)) return null;
          elems[r] = t;
        }
      }
    }
    if (rq != end) return null;
    return byWord[0];
  }

  /** {@link #smallTarget}'s answer for a reference the general path would reject. */
  private static final Object BAD = new Object();

  // readSmall's reference cursor: the next byte, the bucket's width and references left in it,
  // the next reference's index.
  private int rq;
  private int rWidth;
  private int rLeft;
  private int rIndex;

  /**
   * The target of the next reference, in layout word {@code slot} of a graph of {@code words}
   * words and {@code refs} references whose reference array ends at {@code end}: null, an object,
   * or {@link #BAD}.
   */
  private Object smallTarget(byte[] b, int slot, int words, int refs, int end) {
    int q = rq;
    int width = rWidth;
    if (rLeft == 0) {
      if (q >= end) return BAD;
      width = b[q++];
      int n = Math.min(Format.BUCKET, refs - rIndex);
      if (width < 0 || width > 4 || n * width > end - q) return BAD;
      rWidth = width;
      rLeft = n;
    }
    rLeft--;
    rIndex++;
    long v;
    if (width == 1) {
      v = b[q] & 0xFFL; // most references of a record
    } else if (width == 0) {
      v = 0;
    } else if (width == 2) {
      v = UnsafeAccess.getShort(b, q) & 0xFFFFL;
    } else if (width == 3) {
      v = (UnsafeAccess.getShort(b, q) & 0xFFFFL) | (b[q + 2] & 0xFFL) << 16;
    } else {
      v = UnsafeAccess.getInt(b, q) & 0xFFFFFFFFL;
    }
    rq = q + width;
    if (v == 0) return null;
    long t = slot + Format.unzigzag(v);
    Object o;
    if (t < 0 || t >= words || (o = byWord[(int) t]) == null) return BAD;
    return o;
  }

  /** Tables up to this many entries are kept from graph to graph; larger ones are dropped. */
  private static final int KEEP = 1 << 14;

  /**
   * Readies the per-graph tables for a graph of {@code words} layout words, {@code objects}
   * objects and {@code groups} bitmap groups, reusing the last graph's where they are large
   * enough: a stream of small graphs allocates none of them. {@link #release} cleared them.
   */
  private void tables(int words, int objects) {
    if (byWord == null || byWord.length < words) byWord = new Object[Math.max(words, 64)];
    if (objs == null || objs.length < objects) {
      int n = Math.max(objects, 16);
      objs = new Object[n];
      infos = new ClassInfo[n];
      starts = new int[n];
    }
  }

  /** Drops the references of the graph just read (and tables too large to keep). */
  private void release() {
    if (byWord != null) {
      if (byWord.length > KEEP) byWord = null;
      else Arrays.fill(byWord, 0, Math.min(words, byWord.length), null);
    }
    if (objs != null) {
      if (objs.length > KEEP) {
        objs = null;
        infos = null;
        starts = null;
      } else {
        Arrays.fill(objs, 0, Math.min(objectCount, objs.length), null);
      }
    }
    if (bits != null && bits.length > KEEP) {
      bits = null;
      expect = null;
    }
  }

  /** Whether a graph is being read (this is called again from code the read runs). */
  boolean busy() {
    return busy;
  }

  /** Forgets the classes named so far (a reader reused for unrelated frames). */
  void forgetNames() {
    if (!named.isEmpty()) named.clear();
  }

  private Object readBody(int flags) {
    if ((flags & Format.FLAG_RESET_CLASSES) != 0) named.clear();
    int nameCount = (int) next("class count");
    if (nameCount > 0 && cereal.isRegistrationRequired()) {
      throw error("the frame names classes but registration is required", pos);
    }
    for (int i = 0; i < nameCount; i++) {
      int at = pos;
      int len = (int) next("class name length");
      if (len == 0 || len > Format.MAX_NAME || len > end - pos) {
        throw error("class name length " + len + " is past the frame or the limit", at);
      }
      String name = new String(b, pos, len, StandardCharsets.UTF_8);
      pos += len;
      named.add(cereal.infoForName(name, base + at));
    }
    if ((flags & Format.FLAG_COMPACT) != 0) return readCompact();
    int objectCount = (int) next("object count");
    this.objectCount = 0;
    int valueWords = (int) next("value word count");
    refCount = (int) next("reference count");
    int refBytes = (int) next("reference array length");
    int bitmapBytes = (int) next("bitmap length");
    int valueStart = pos;
    long left = end - pos;
    if ((long) valueWords * 8 + refBytes + bitmapBytes != left) {
      throw error("sections (" + valueWords + " value words, " + refBytes + " reference bytes, "
          + bitmapBytes + " bitmap bytes) do not fill the " + left + " bytes of the frame", pos);
    }
    if (objectCount == 0) {
      if (valueWords != 0 || refCount != 0) throw error("no objects but non-empty arrays", pos);
      return null;
    }
    if (objectCount > valueWords) {
      throw error(objectCount + " objects cannot fit " + valueWords + " value words", pos);
    }
    long minRefBytes = (refCount + (long) Format.BUCKET - 1) / Format.BUCKET;
    if (refBytes < minRefBytes || refBytes > minRefBytes + 4L * refCount) {
      throw error(refCount + " references cannot take " + refBytes + " bytes", pos);
    }
    long w = (long) valueWords + refCount;
    if (w > cereal.maxGraphWords()) {
      throw error("graph of " + w + " words is over the limit of " + cereal.maxGraphWords(), pos);
    }
    int groups = (int) ((w + 63) >>> 6);
    if (bitmapBytes < (groups + 7L) / 8 || bitmapBytes > Packing.maxBitmapBytes((int) w)) {
      throw error(w + " layout words cannot take " + bitmapBytes + " bitmap bytes", pos);
    }
    int valueEnd = valueStart + valueWords * 8;
    refStart = valueEnd;
    refEnd = refStart + refBytes;
    if (bits == null || bits.length < groups) {
      bits = new long[Math.max(groups, 8)];
      expect = new long[bits.length];
    } else if (expectUsed > 0) {
      Arrays.fill(expect, 0, expectUsed, 0L); // the last graph failed in pass 1
      expectUsed = 0;
    }
    this.groups = groups;
    Packing.unpackBitmap(b, refEnd, end, groups, base, bits);

    tables((int) w, objectCount);
    words = (int) w;
    this.objectCount = objectCount;
    boolean parallel = cereal.deserializationThreads() > 1
        && refCount >= cereal.parallelThreshold();
    if (parallel) {
      allocateParallel(valueStart, valueEnd);
      fixParallel(deferred);
    } else {
      expectUsed = groups;
      allocate(objectCount, valueStart, valueEnd);
      fixSequential(objectCount, deferred);
    }
    if (!containers.isEmpty()) fillContainers();
    for (Deferred d : deferred) d.apply(this);
    CerealTrace tracer = CerealTrace.active();
    if (tracer != null) tracer.deserialized(objectCount, valueWords, refCount, refBytes, bitmapBytes, parallel ? chunks : 1, parallel);
    Object root = byWord[0];
    return root instanceof Container c ? c.target : root;
  }

  /**
   * The rest of a compact frame's body, after its names: the value word and reference counts,
   * the value array, the reference array. The object count comes from the walk over the headers;
   * there is no bitmap to check, the classes' layouts being the bitmap ({@link Format}).
   */
  private Object readCompact() {
    int at = pos;
    int valueWords = (int) next("value word count");
    int refs = (int) next("reference count");
    if ((long) valueWords + refs > Format.COMPACT_MAX_WORDS) {
      throw error("compact frame of " + valueWords + " value words and " + refs
          + " references, over its " + Format.COMPACT_MAX_WORDS + " layout words", at);
    }
    if (valueWords * 8 > end - pos) {
      throw error("value array of " + valueWords + " words runs past the " + (end - pos)
          + " bytes of the frame", at);
    }
    int valueStart = pos;
    int valueEnd = valueStart + valueWords * 8;
    if (valueWords == 0) {
      if (valueEnd != end || refs != 0) throw error("no objects but references", valueEnd);
      return null;
    }
    refStart = valueEnd;
    refEnd = end;
    tables(valueWords + refs, valueWords);
    refCount = refs;
    // Bounds of what pass 1 may fill (each object has a header word), for release() on an error.
    words = valueWords + refs;
    objectCount = valueWords;
    int objects = allocate(-1, valueStart, valueEnd);
    fixSequential(objects, deferred);
    if (!containers.isEmpty()) fillContainers();
    for (Deferred d : deferred) d.apply(this);
    CerealTrace tracer = CerealTrace.active();
    if (tracer != null) tracer.deserialized(objects, valueWords, refCount, refEnd - refStart, 0, 1, false);
    Object root = byWord[0];
    return root instanceof Container c ? c.target : root;
  }

  // ------------------------------------------------------------------ pass 1

  private ClassInfo classOf(int id, int i, int at) {
    ClassInfo ci = null;
    if (id >= Format.DYNAMIC_BASE) {
      int k = id - Format.DYNAMIC_BASE;
      if (k < named.size()) ci = named.get(k);
    } else {
      ci = cereal.infoById(id);
    }
    if (ci == null) throw error("unknown class ID " + id + " in the header of object " + i, at);
    return ci;
  }

  /**
   * Pass 1 over {@code objectCount} objects, or, for a compact frame ({@code objectCount} -1),
   * over the whole value array, whose walk then sets the word count and checks the reference
   * count. A full frame's walk builds the bitmap of the layouts and compares it with the frame's
   * ({@link #checkBitmap}). Returns the number of objects.
   */
  private int allocate(int objectCount, int vpos, int valueEnd) {
    boolean compact = objectCount < 0;
    int word = 0;
    int refsSeen = 0;
    int i = 0;
    for (; compact ? vpos < valueEnd : i < objectCount; i++) {
      if (valueEnd - vpos < 8) throw error("value array ends before object " + i, vpos);
      long h = UnsafeAccess.getLong(b, vpos);
      int aux = (int) (h >>> 32);
      ClassInfo ci = classOf((int) h, i, vpos);
      long vw;
      long rw = 0;
      int leftBytes = valueEnd - vpos - 8;
      int leftRefs = refCount - refsSeen;
      Object obj;
      int kind = ci.kind;
      int p = vpos + 8;
      switch (kind) {
        case ClassInfo.PLAIN: {
          vw = 1 + ci.primWords;
          rw = ci.refCount;
          if ((vw - 1) * 8 > leftBytes) throw error(ci.type.getName() + " object " + i + " runs past the value array", vpos);
          if (rw > leftRefs) throw error(ci.type.getName() + " object " + i + " has more references than are left", vpos);
          obj = instantiate(ci, vpos);
          readPrims(b, p, obj, ci);
          break;
        }
        case ClassInfo.ENUM:
          vw = 1;
          if (aux < 0 || aux >= ci.enumConstants.length) {
            throw error("ordinal " + Integer.toUnsignedString(aux) + " is not a constant of "
                + ci.type.getName(), vpos);
          }
          obj = ci.enumConstants[aux];
          break;
        case ClassInfo.SINGLETON:
          vw = 1;
          if (aux != 0) throw error("singleton " + ci.type.getName() + " with a non-zero header", vpos);
          try {
            obj = ci.singleton();
          } catch (CerealException e) {
            throw error(e.getMessage(), vpos);
          }
          break;
        case ClassInfo.CLASS:
        case ClassInfo.STRING: {
          long n = (aux & 0xFFFFFFFFL) >>> 1;
          boolean utf16 = (aux & 1) != 0;
          long bytes = utf16 ? 2 * n : n;
          vw = 1 + ((bytes + 7) >>> 3);
          if (bytes > leftBytes) throw error("string of " + n + " chars runs past the value array", vpos);
          String str = utf16 ? new String(b, p, (int) bytes, StandardCharsets.UTF_16LE)
              : latin1(b, p, (int) bytes);
          if (kind == ClassInfo.CLASS) {
            if (n == 0 || n > Format.MAX_NAME) throw error("Class object with a name of " + n + " chars", vpos);
            obj = cereal.classForName(str, base + vpos);
          } else {
            obj = str;
          }
          break;
        }
        case ClassInfo.OBJ_ARRAY:
          vw = 1;
          rw = aux & 0xFFFFFFFFL;
          if (rw > leftRefs) throw error("array length " + rw + " is more than the " + leftRefs + " references left", vpos);
          obj = ci.component == null ? new Object[(int) rw] : Array.newInstance(ci.component, (int) rw);
          break;
        default:
          if (kind <= ClassInfo.DOUBLE) {
            vw = 2;
            if (leftBytes < 8) throw error("boxed value runs past the value array", vpos);
            obj = boxed(kind, UnsafeAccess.getLong(b, p));
          } else if (ClassInfo.isPrimitiveArray(kind)) {
            long n = aux & 0xFFFFFFFFL;
            long bytes = n * ClassInfo.elementSize(kind);
            if (bytes > leftBytes) throw error("array of " + n + " elements runs past the value array", vpos);
            vw = 1 + ((bytes + 7) >>> 3);
            obj = primitiveArray(kind, (int) n, p);
          } else {
            vw = 1;
            long n = aux & 0xFFFFFFFFL;
            rw = ci.isMap() || kind == ClassInfo.IMM_MAP ? 2 * n : n;
            if (rw > leftRefs) throw error(ci.type.getName() + " of " + n + " elements: more than the " + leftRefs + " references left", vpos);
            Container c = new Container(ci, (int) rw, i, vpos);
            c.target = newContainer(ci, (int) n, vpos);
            containers.add(c);
            obj = c;
          }
      }
      int v = (int) vw;
      int r = (int) rw;
      if (!compact) Packing.setRange(expect, word + v, word + v + r); // the bitmap of the layouts
      byWord[word] = obj;
      objs[i] = obj;
      infos[i] = ci;
      starts[i] = word;
      word += v + r;
      vpos += 8 * v;
      refsSeen += r;
    }
    if (compact) {
      if (refsSeen != refCount) throw error("objects hold " + refsSeen + " references, the frame says " + refCount, vpos);
      words = word;
      this.objectCount = i;
      return i;
    }
    if (vpos != valueEnd) throw error((valueEnd - vpos) + " bytes of the value array are past the last object", vpos);
    if (refsSeen != refCount) throw error("objects hold " + refsSeen + " references, the frame says " + refCount, vpos);
    checkBitmap();
    return objectCount;
  }

  // ------------------------------------------------------------------ pass 1 in parallel

  /**
   * Pass 1's sequential part for a graph read in parallel: a scan of the headers alone, with
   * every check of {@link #allocate} on the class IDs, lengths and counts, that records each
   * object's class and first layout word and cuts the objects into chunks of about {@code
   * objects / (4 * threads)} objects or {@code refs / (4 * threads)} references ({@link
   * #chunkObj}, {@link #chunkRef}, {@link #chunkVpos}, {@link #chunkEnd}), publishing each
   * chunk in {@link #ready} as soon as it is scanned. Enums, singletons and {@code Class}
   * objects, which read shared state, are resolved here; every other object is made by
   * {@link #allocateChunk}.
   */
  private void scan(int threads, int objectCount, int vpos, int valueEnd) {
    int chunkObjs = Math.max(256, objectCount / (4 * threads));
    int chunkRefs = Math.max(1024, refCount / (4 * threads));
    int word = 0;
    int refsSeen = 0;
    int nextObj = 0;
    long nextRef = 0;
    for (int i = 0; i < objectCount; i++) {
      if (i >= nextObj || refsSeen >= nextRef) {
        // Cut at most once per chunkObjs objects and once per chunkRefs references: the arrays
        // (sized by chunkCapacity) never grow while the other threads read them.
        chunkObj[chunks] = i;
        chunkRef[chunks] = refsSeen;
        chunkVpos[chunks] = vpos;
        chunkEnd[chunks] = objectCount;
        if (chunks > 0) {
          chunkEnd[chunks - 1] = i;
          ready = chunks; // the chunk before is scanned: its objects may be made
        }
        chunks++;
        nextObj = i + chunkObjs;
        nextRef = (long) refsSeen + chunkRefs;
      }
      if (valueEnd - vpos < 8) throw error("value array ends before object " + i, vpos);
      long h = UnsafeAccess.getLong(b, vpos);
      int aux = (int) (h >>> 32);
      ClassInfo ci = classOf((int) h, i, vpos);
      long vw;
      long rw = 0;
      int leftBytes = valueEnd - vpos - 8;
      int leftRefs = refCount - refsSeen;
      int kind = ci.kind;
      switch (kind) {
        case ClassInfo.PLAIN:
          vw = 1 + ci.primWords;
          rw = ci.refCount;
          if ((vw - 1) * 8 > leftBytes) throw error(ci.type.getName() + " object " + i + " runs past the value array", vpos);
          if (rw > leftRefs) throw error(ci.type.getName() + " object " + i + " has more references than are left", vpos);
          break;
        case ClassInfo.ENUM:
          vw = 1;
          if (aux < 0 || aux >= ci.enumConstants.length) {
            throw error("ordinal " + Integer.toUnsignedString(aux) + " is not a constant of "
                + ci.type.getName(), vpos);
          }
          objs[i] = ci.enumConstants[aux];
          break;
        case ClassInfo.SINGLETON:
          vw = 1;
          if (aux != 0) throw error("singleton " + ci.type.getName() + " with a non-zero header", vpos);
          try {
            objs[i] = ci.singleton();
          } catch (CerealException e) {
            throw error(e.getMessage(), vpos);
          }
          break;
        case ClassInfo.CLASS:
        case ClassInfo.STRING: {
          long n = (aux & 0xFFFFFFFFL) >>> 1;
          long bytes = (aux & 1) != 0 ? 2 * n : n;
          vw = 1 + ((bytes + 7) >>> 3);
          if (bytes > leftBytes) throw error("string of " + n + " chars runs past the value array", vpos);
          if (kind == ClassInfo.CLASS) {
            if (n == 0 || n > Format.MAX_NAME) throw error("Class object with a name of " + n + " chars", vpos);
            String name = (aux & 1) != 0 ? new String(b, vpos + 8, (int) bytes, StandardCharsets.UTF_16LE)
                : latin1(b, vpos + 8, (int) bytes);
            objs[i] = cereal.classForName(name, base + vpos);
          }
          break;
        }
        case ClassInfo.OBJ_ARRAY:
          vw = 1;
          rw = aux & 0xFFFFFFFFL;
          if (rw > leftRefs) throw error("array length " + rw + " is more than the " + leftRefs + " references left", vpos);
          break;
        default:
          if (kind <= ClassInfo.DOUBLE) {
            vw = 2;
            if (leftBytes < 8) throw error("boxed value runs past the value array", vpos);
          } else if (ClassInfo.isPrimitiveArray(kind)) {
            long n = aux & 0xFFFFFFFFL;
            long bytes = n * ClassInfo.elementSize(kind);
            if (bytes > leftBytes) throw error("array of " + n + " elements runs past the value array", vpos);
            vw = 1 + ((bytes + 7) >>> 3);
          } else {
            vw = 1;
            long n = aux & 0xFFFFFFFFL;
            rw = ci.isMap() || kind == ClassInfo.IMM_MAP ? 2 * n : n;
            if (rw > leftRefs) throw error(ci.type.getName() + " of " + n + " elements: more than the " + leftRefs + " references left", vpos);
          }
      }
      infos[i] = ci;
      starts[i] = word;
      word += (int) (vw + rw);
      vpos += 8 * (int) vw;
      refsSeen += (int) rw;
    }
    if (vpos != valueEnd) throw error((valueEnd - vpos) + " bytes of the value array are past the last object", vpos);
    if (refsSeen != refCount) throw error("objects hold " + refsSeen + " references, the frame says " + refCount, vpos);
    // Bits past the last word: the objects' own ranges are checked with the objects.
    for (int g = word >>> 6; g < groups; g++) {
      long past = g == word >>> 6 ? bits[g] & (-1L << word) : bits[g];
      if (past != 0) throw error("layout bitmap has bits past the last word", refEnd);
    }
  }

  /** Chunks {@link #scan} may cut for {@code threads} threads: see its cutting rule. */
  private static int chunkCapacity(int threads) {
    return 8 * threads + 4;
  }

  /**
   * Pass 1 in parallel: {@link #scan} on this thread, while the pool's threads allocate the
   * objects of each chunk it has finished ({@link #ready}), their value words copied in and
   * their bitmap bits checked against their layouts; once the scan is done this thread takes
   * chunks too. Collections found are recorded per chunk and joined in object order, as the
   * sequential pass records them. A failure of the scan is thrown once the other threads have
   * stopped (they read this graph's tables), else the failure of the lowest chunk.
   */
  private void allocateParallel(int valueStart, int valueEnd) {
    int threads = cereal.deserializationThreads();
    int cap = chunkCapacity(threads);
    if (chunkObj == null || chunkObj.length < cap) {
      chunkObj = new int[cap];
      chunkRef = new int[cap];
      chunkVpos = new int[cap];
      chunkEnd = new int[cap];
    }
    @SuppressWarnings("unchecked")
    List<Container>[] found = new List[cap];
    Throwable[] failures = new Throwable[cap];
    AtomicInteger next = new AtomicInteger();
    ready = 0;
    scanEnded = false;
    Runnable worker = () -> {
      for (int spins = 0; ; ) {
        int c = next.get();
        if (c < ready) {
          if (next.compareAndSet(c, c + 1)) {
            try {
              found[c] = allocateChunk(chunkObj[c], chunkEnd[c], chunkVpos[c]);
            } catch (RuntimeException | StackOverflowError | OutOfMemoryError e) {
              failures[c] = e;
            }
          }
          spins = 0;
        } else if (scanEnded) {
          if (c >= ready) return;
        } else if (++spins < 1000) {
          Thread.onSpinWait();
        } else {
          Thread.yield(); // the scan is slow (another process has this CPU): let it run
        }
      }
    };
    List<Future<?>> helpers = new ArrayList<>(threads - 1);
    ExecutorService pool = cereal.pool();
    for (int t = 1; t < threads; t++) helpers.add(pool.submit(worker));
    RuntimeException scanFailure = null;
    try {
      scan(threads, objectCount, valueStart, valueEnd);
      ready = chunks;
    } catch (RuntimeException e) {
      scanFailure = e;
    } finally {
      scanEnded = true;
    }
    if (scanFailure == null) worker.run();
    join(helpers);
    if (scanFailure != null) throw scanFailure;
    throwFirst(failures);
    for (int c = 0; c < chunks; c++) if (found[c] != null) containers.addAll(found[c]);
  }

  /** Chunks {@link #scan} has finished, whose objects may be made. */
  private volatile int ready;
  /** Whether {@link #scan} has ended (done or failed): no chunk past {@link #ready} will come. */
  private volatile boolean scanEnded;

  /** Waits for the pool's part of a pass: they read this graph's tables until they end. */
  private static void join(List<Future<?>> futures) {
    boolean interrupted = false;
    for (Future<?> f : futures) {
      while (true) {
        try {
          f.get();
          break;
        } catch (ExecutionException e) {
          throw new CerealException("fix-up thread failed: " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
          interrupted = true; // wait for them all the same
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
      throw new CerealException("interrupted while deserializing", null);
    }
  }

  /** Throws the failure of the lowest chunk that failed, the one a sequential pass meets first. */
  private void throwFirst(Throwable[] failures) {
    for (Throwable t : failures) {
      if (t == null) continue;
      if (t instanceof CerealException ce) throw ce;
      if (t instanceof Error e) throw e;
      throw new CerealException("corrupt Cereal frame: " + t, base + refStart, t);
    }
  }

  /** Objects {@code [from, to)}, the first at value array byte {@code vpos}, as {@link #scan} checked them. */
  private List<Container> allocateChunk(int from, int to, int vpos) {
    List<Container> found = null;
    for (int i = from; i < to; i++) {
      ClassInfo ci = infos[i];
      long h = UnsafeAccess.getLong(b, vpos);
      int aux = (int) (h >>> 32);
      int kind = ci.kind;
      int p = vpos + 8;
      int vw;
      int rw = 0;
      Object obj;
      switch (kind) {
        case ClassInfo.PLAIN:
          vw = 1 + ci.primWords;
          rw = ci.refCount;
          obj = instantiate(ci, vpos);
          readPrims(b, p, obj, ci);
          break;
        case ClassInfo.ENUM:
        case ClassInfo.SINGLETON:
          vw = 1;
          obj = objs[i]; // resolved by the scan
          break;
        case ClassInfo.CLASS:
        case ClassInfo.STRING: {
          int n = aux >>> 1;
          boolean utf16 = (aux & 1) != 0;
          int bytes = utf16 ? 2 * n : n;
          vw = 1 + ((bytes + 7) >>> 3);
          obj = kind == ClassInfo.CLASS ? objs[i]
              : utf16 ? new String(b, p, bytes, StandardCharsets.UTF_16LE) : latin1(b, p, bytes);
          break;
        }
        case ClassInfo.OBJ_ARRAY:
          vw = 1;
          rw = aux;
          obj = ci.component == null ? new Object[rw] : Array.newInstance(ci.component, rw);
          break;
        default:
          if (kind <= ClassInfo.DOUBLE) {
            vw = 2;
            obj = boxed(kind, UnsafeAccess.getLong(b, p));
          } else if (ClassInfo.isPrimitiveArray(kind)) {
            int bytes = aux * ClassInfo.elementSize(kind);
            vw = 1 + ((bytes + 7) >>> 3);
            obj = primitiveArray(kind, aux, p);
          } else {
            vw = 1;
            rw = ci.isMap() || kind == ClassInfo.IMM_MAP ? 2 * aux : aux;
            Container c = new Container(ci, rw, i, vpos);
            c.target = newContainer(ci, aux, vpos);
            if (found == null) found = new ArrayList<>();
            found.add(c);
            obj = c;
          }
      }
      int word = starts[i];
      if (!Packing.isRange(bits, word, word + vw, false) || !Packing.isRange(bits, word + vw, word + vw + rw, true)) {
        throw error("layout bitmap disagrees with the layout of " + ci.type.getName()
            + " (object " + i + " at word " + word + ")", refEnd);
      }
      byWord[word] = obj;
      objs[i] = obj;
      vpos += 8 * vw;
    }
    return found;
  }

  /** One chunk's work, by chunk index. */
  private interface ChunkTask {
    void run(int chunk);
  }

  /**
   * Runs {@code task} on every chunk, on {@link Cereal#deserializationThreads} threads: this one
   * and the pool's, each taking the next chunk not yet taken, so a thread slowed by other work
   * on the machine takes fewer. Returns when all are done; then throws the failure of the
   * lowest chunk that failed, if any, so the error is the one a sequential pass meets first.
   */
  private void runChunks(ChunkTask task) {
    AtomicInteger next = new AtomicInteger();
    Throwable[] failures = new Throwable[chunks];
    Runnable worker = () -> {
      for (int c; (c = next.getAndIncrement()) < chunks; ) {
        try {
          task.run(c);
        } catch (RuntimeException | StackOverflowError | OutOfMemoryError e) {
          failures[c] = e;
        }
      }
    };
    int helpers = Math.min(cereal.deserializationThreads(), chunks) - 1;
    List<Future<?>> futures = new ArrayList<>(helpers);
    ExecutorService pool = helpers > 0 ? cereal.pool() : null;
    for (int t = 0; t < helpers; t++) futures.add(pool.submit(worker));
    worker.run();
    join(futures);
    throwFirst(failures);
  }

  /**
   * Compares the frame's bitmap with the one pass 1 made from the objects' layouts (one run of
   * zeros, then one of ones, per object), group by group, and clears the latter for the next
   * graph. A difference names the object whose layout disagrees.
   */
  private void checkBitmap() {
    long[] e = expect;
    expectUsed = 0;
    for (int g = 0; g < groups; g++) {
      long diff = e[g] ^ bits[g];
      e[g] = 0;
      if (diff != 0) {
        Arrays.fill(e, g, groups, 0L);
        long w = 64L * g + Long.numberOfTrailingZeros(diff);
        if (w >= words) throw error("layout bitmap has bits past the last word", refEnd);
        int lo = 0, hi = objectCount - 1; // the object holding word w: the last start <= w
        while (lo < hi) {
          int mid = (lo + hi + 1) >>> 1;
          if (starts[mid] <= w) lo = mid;
          else hi = mid - 1;
        }
        throw error("layout bitmap disagrees with the layout of " + infos[lo].type.getName()
            + " (object " + lo + " at word " + starts[lo] + ")", refEnd);
      }
    }
  }

  /**
   * A Latin-1 string of {@code b[p..p+n)}: the deprecated constructor with a zero high byte is a
   * copy of the bytes into a compact string, without the charset look-up and decoder of
   * {@code new String(b, p, n, ISO_8859_1)}.
   */
  @SuppressWarnings("deprecation")
  private static String latin1(byte[] b, int p, int n) {
    return new String(b, 0, p, n);
  }

  /** The primitive fields of {@code obj} from its value words at {@code b[p..]}. */
  private static void readPrims(byte[] b, int p, Object obj, ClassInfo ci) {
    long[] offs = ci.primOffsets;
    byte[] kinds = ci.primKinds;
    int[] pp = ci.primPos;
    for (int k = 0; k < offs.length; k++) {
      int q = p + pp[k];
      long off = offs[k];
      switch (kinds[k]) {
        case ClassInfo.F_LONG: case ClassInfo.F_DOUBLE:
          U.putLong(obj, off, UnsafeAccess.getLong(b, q));
          break;
        case ClassInfo.F_INT: case ClassInfo.F_FLOAT:
          U.putInt(obj, off, UnsafeAccess.getInt(b, q));
          break;
        case ClassInfo.F_SHORT: case ClassInfo.F_CHAR:
          U.putShort(obj, off, UnsafeAccess.getShort(b, q));
          break;
        case ClassInfo.F_BYTE:
          U.putByte(obj, off, b[q]);
          break;
        default:
          U.putBoolean(obj, off, b[q] != 0);
      }
    }
  }

  private Object instantiate(ClassInfo ci, int at) {
    try {
      return U.allocateInstance(ci.type);
    } catch (InstantiationException e) {
      throw error("cannot instantiate " + ci.type.getName() + ": " + e.getMessage(), at);
    }
  }

  private static Object boxed(int kind, long v) {
    switch (kind) {
      case ClassInfo.BOOLEAN: return v != 0;
      case ClassInfo.BYTE: return (byte) v;
      case ClassInfo.SHORT: return (short) v;
      case ClassInfo.CHAR: return (char) v;
      case ClassInfo.INT: return (int) v;
      case ClassInfo.LONG: return v;
      case ClassInfo.FLOAT: return Float.intBitsToFloat((int) v);
      default: return Double.longBitsToDouble(v);
    }
  }

  private Object primitiveArray(int kind, int n, int p) {
    Object a;
    switch (kind) {
      case ClassInfo.A_BOOLEAN: {
        boolean[] z = new boolean[n];
        for (int i = 0; i < n; i++) z[i] = b[p + i] != 0;
        return z;
      }
      case ClassInfo.A_BYTE: return Arrays.copyOfRange(b, p, p + n);
      case ClassInfo.A_SHORT: a = new short[n]; break;
      case ClassInfo.A_CHAR: a = new char[n]; break;
      case ClassInfo.A_INT: a = new int[n]; break;
      case ClassInfo.A_FLOAT: a = new float[n]; break;
      case ClassInfo.A_LONG: a = new long[n]; break;
      default: a = new double[n];
    }
    if (n == 0) return a;
    if (UnsafeAccess.LITTLE_ENDIAN) {
      U.copyMemory(b, UnsafeAccess.BYTE_BASE + p, a, ClassInfo.arrayBase(kind),
          (long) n * ClassInfo.elementSize(kind));
      return a;
    }
    for (int i = 0; i < n; i++) {
      switch (kind) {
        case ClassInfo.A_SHORT: ((short[]) a)[i] = UnsafeAccess.getShort(b, p + 2 * i); break;
        case ClassInfo.A_CHAR: ((char[]) a)[i] = (char) UnsafeAccess.getShort(b, p + 2 * i); break;
        case ClassInfo.A_INT: ((int[]) a)[i] = UnsafeAccess.getInt(b, p + 4 * i); break;
        case ClassInfo.A_FLOAT: ((float[]) a)[i] = Float.intBitsToFloat(UnsafeAccess.getInt(b, p + 4 * i)); break;
        case ClassInfo.A_LONG: ((long[]) a)[i] = UnsafeAccess.getLong(b, p + 8 * i); break;
        default: ((double[]) a)[i] = Double.longBitsToDouble(UnsafeAccess.getLong(b, p + 8 * i));
      }
    }
    return a;
  }

  private Object newContainer(ClassInfo ci, int n, int at) {
    int cap = (int) Math.min(1 << 30, n / 0.75f + 1);
    switch (ci.kind) {
      case ClassInfo.ARRAY_LIST: return ARRAY_LIST_DATA >= 0 ? new ArrayList<>() : new ArrayList<>(n);
      case ClassInfo.LINKED_LIST: return new LinkedList<>();
      case ClassInfo.ARRAY_DEQUE: return new ArrayDeque<>(n);
      case ClassInfo.HASH_SET: return new HashSet<>(cap);
      case ClassInfo.LINKED_HASH_SET: return new LinkedHashSet<>(cap);
      case ClassInfo.TREE_SET: return new TreeSet<>();
      case ClassInfo.HASH_MAP: return new HashMap<>(cap);
      case ClassInfo.LINKED_HASH_MAP: return new LinkedHashMap<>(cap);
      case ClassInfo.TREE_MAP: return new TreeMap<>();
      case ClassInfo.GENERIC_COLLECTION:
      case ClassInfo.GENERIC_MAP:
        try {
          MethodHandle ctor = ci.ctor;
          return (Object) ctor.invokeExact();
        } catch (Throwable t) {
          throw error("constructor of " + ci.type.getName() + " failed: " + t, at);
        }
      default:
        return null; // immutable: built in pass 3
    }
  }

  // ------------------------------------------------------------------ pass 2

  /** A reader of the packed reference array from reference {@code index} on. */
  private final class RefCursor {
    int p;
    int index;
    int width;
    int left;

    /** Positions at reference {@code k}, whose bucket starts at byte {@code bucketPos}. */
    RefCursor(int k, int bucketPos) {
      index = k;
      p = bucketPos;
      int inBucket = k % Format.BUCKET;
      if (inBucket != 0) {
        width = b[p++];
        left = Math.min(Format.BUCKET, refCount - (k - inBucket)) - inBucket;
        p += inBucket * width;
      }
    }

    /** The next reference value (unsigned). */
    long next() {
      if (left == 0) {
        if (p >= refEnd) throw error("reference array ends before reference " + index, p);
        int w = b[p++];
        if (w < 0 || w > 4) throw error("reference bucket width " + w + " is not 0 to 4", p - 1);
        int n = Math.min(Format.BUCKET, refCount - index);
        if ((long) n * w > refEnd - p) throw error("reference bucket runs past the reference array", p - 1);
        width = w;
        left = n;
      }
      left--;
      index++;
      int q = p;
      switch (width) {
        case 0: return 0;
        case 1: p = q + 1; return b[q] & 0xFFL;
        case 2: p = q + 2; return UnsafeAccess.getShort(b, q) & 0xFFFFL;
        case 3: p = q + 3; return (UnsafeAccess.getShort(b, q) & 0xFFFFL) | (b[q + 2] & 0xFFL) << 16;
        default: p = q + 4; return UnsafeAccess.getInt(b, q) & 0xFFFFFFFFL;
      }
    }

    /** The object (or container record) a reference value in layout word {@code slot} names. */
    Object target(long v, int slot) {
      if (v == 0) return null;
      long t = slot + Format.unzigzag(v);
      Object o;
      if (t < 0 || t >= words || (o = byWord[(int) t]) == null) {
        throw error("reference in word " + slot + " points to word " + t
            + ", which does not start an object", p - width);
      }
      return o;
    }
  }

  private void fixSequential(int objectCount, List<Deferred> deferred) {
    RefCursor c = new RefCursor(0, refStart);
    fix(c, 0, objectCount, deferred);
    if (c.p != refEnd) throw error((refEnd - c.p) + " bytes of the reference array are past the last reference", c.p);
  }

  private void fixParallel(List<Deferred> deferred) throws CerealException {
    // Where each bucket starts: one scan over the width bytes, which also checks the total.
    int buckets = (refCount + Format.BUCKET - 1) / Format.BUCKET;
    int[] bucketPos = new int[buckets + 1];
    int q = refStart;
    for (int k = 0; k < buckets; k++) {
      if (q >= refEnd) throw error("reference array ends in bucket " + k, q);
      bucketPos[k] = q;
      int w = b[q];
      if (w < 0 || w > 4) throw error("reference bucket width " + w + " is not 0 to 4", q);
      q += 1 + w * Math.min(Format.BUCKET, refCount - k * Format.BUCKET);
    }
    if (q != refEnd) throw error("reference buckets take " + (q - refStart) + " bytes, the frame says " + (refEnd - refStart), refStart);
    bucketPos[buckets] = refEnd;
    @SuppressWarnings("unchecked")
    List<Deferred>[] found = new List[chunks];
    runChunks(c -> {
      int from = chunkObj[c];
      int to = chunkEnd[c];
      int k = chunkRef[c];
      List<Deferred> d = new ArrayList<>();
      fix(new RefCursor(k, bucketPos[k / Format.BUCKET]), from, to, d);
      found[c] = d;
    });
    for (List<Deferred> d : found) deferred.addAll(d);
  }

  /** Pass 2 over objects {@code [from, to)}. */
  private void fix(RefCursor c, int from, int to, List<Deferred> deferred) {
    for (int i = from; i < to; i++) {
      ClassInfo ci = infos[i];
      switch (ci.kind) {
        case ClassInfo.PLAIN: {
          Object o = objs[i];
          long[] offs = ci.refOffsets;
          Class<?>[] types = ci.refTypes;
          int slot = starts[i] + 1 + ci.primWords;
          for (int r = 0; r < offs.length; r++, slot++) {
            Object t = c.target(c.next(), slot);
            if (t instanceof Container k) {
              if (k.target == null) {
                deferred.add(new Deferred(o, ci, r, k, slot));
                continue;
              }
              t = k.target;
            }
            Class<?> type = types[r];
            // The exact class (a final field type: String, byte[]) first, a compare.
            if (type != null && t != null && t.getClass() != type && !type.isInstance(t)) {
              throw error("reference in word " + slot + " to a " + t.getClass().getName()
                  + " cannot go into field " + ci.refNames[r], c.p - c.width);
            }
            U.putObject(o, offs[r], t);
          }
          break;
        }
        case ClassInfo.OBJ_ARRAY: {
          Object[] a = (Object[]) objs[i];
          Class<?> type = ci.component;
          int slot = starts[i] + 1;
          for (int j = 0; j < a.length; j++, slot++) {
            Object t = c.target(c.next(), slot);
            if (t instanceof Container k) {
              if (k.target == null) {
                deferred.add(new Deferred(a, ci, j, k, slot));
                continue;
              }
              t = k.target;
            }
            if (type != null && t != null && !type.isInstance(t)) {
              throw error("reference in word " + slot + " to a " + t.getClass().getName()
                  + " cannot go into a " + ci.type.getSimpleName(), c.p - c.width);
            }
            a[j] = t;
          }
          break;
        }
        default:
          if (ci.isContainer()) {
            Container k = (Container) objs[i];
            Object[] e = k.elems;
            int slot = starts[i] + 1;
            for (int j = 0; j < e.length; j++, slot++) e[j] = c.target(c.next(), slot);
          }
      }
    }
  }

  /** A reference to an immutable collection, stored once pass 3 has built it. */
  private record Deferred(Object holder, ClassInfo ci, int index, Container target, int slot) {
    void apply(GraphReader r) {
      Object t = target.target;
      if (ci.kind == ClassInfo.PLAIN) {
        Class<?> type = ci.refTypes[index];
        if (type != null && !type.isInstance(t)) {
          throw r.error("reference in word " + slot + " to a " + t.getClass().getName()
              + " cannot go into field " + ci.refNames[index], -1);
        }
        U.putObject(holder, ci.refOffsets[index], t);
      } else {
        Object[] a = (Object[]) holder;
        if (ci.component != null && !ci.component.isInstance(t)) {
          throw r.error("reference in word " + slot + " to a " + t.getClass().getName()
              + " cannot go into a " + ci.type.getSimpleName(), -1);
        }
        a[index] = t;
      }
    }
  }

  // ------------------------------------------------------------------ pass 3

  /** A collection or map of the graph and its content, between pass 1 and pass 3. */
  static final class Container {
    final ClassInfo ci;
    final Object[] elems;
    final int index;
    final int at;
    Object target;
    byte state; // 0 new, 1 visiting, 2 done

    Container(ClassInfo ci, int refs, int index, int at) {
      this.ci = ci;
      this.elems = new Object[refs];
      this.index = index;
      this.at = at;
    }
  }

  private void fillContainers() {
    ArrayDeque<Container> stack = new ArrayDeque<>();
    for (int i = containers.size() - 1; i >= 0; i--) {
      Container root = containers.get(i);
      if (root.state == 2) continue;
      stack.push(root);
      while (!stack.isEmpty()) {
        Container c = stack.peek();
        if (c.state == 2) {
          stack.pop();
          continue;
        }
        if (c.state == 0) {
          c.state = 1;
          boolean hashes = c.ci.hashesContent();
          for (Object e : c.elems) {
            if (e instanceof Container k && k.state == 0 && (hashes || k.target == null)) stack.push(k);
          }
          continue;
        }
        stack.pop();
        fill(c);
        c.state = 2;
      }
    }
  }

  @SuppressWarnings("unchecked")
  private void fill(Container c) {
    Object[] e = c.elems;
    for (int j = 0; j < e.length; j++) {
      if (e[j] instanceof Container k) {
        if (k.target == null) {
          throw error("immutable " + k.ci.type.getSimpleName() + " (object " + k.index
              + ") contains itself", k.at);
        }
        e[j] = k.target;
      }
    }
    int kind = c.ci.kind;
    try {
      switch (kind) {
        case ClassInfo.IMM_LIST: {
          boolean nulls = false;
          for (Object x : e) nulls |= x == null;
          c.target = nulls ? Arrays.stream(e).toList() : List.of(e);
          break;
        }
        case ClassInfo.IMM_SET:
          c.target = Set.of(e);
          break;
        case ClassInfo.IMM_MAP: {
          @SuppressWarnings("rawtypes")
          Map.Entry[] entries = new Map.Entry[e.length / 2];
          for (int j = 0; j < entries.length; j++) entries[j] = Map.entry(e[2 * j], e[2 * j + 1]);
          c.target = Map.ofEntries(entries);
          break;
        }
        default:
          if (c.ci.isMap()) {
            Map<Object, Object> m = (Map<Object, Object>) c.target;
            for (int j = 0; j < e.length; j += 2) m.put(e[j], e[j + 1]);
          } else if (kind == ClassInfo.ARRAY_LIST) {
            ArrayList<Object> l = (ArrayList<Object>) c.target;
            if (ARRAY_LIST_DATA >= 0 && l.isEmpty()) {
              // The elements array, made for this list alone in pass 1, becomes its storage.
              U.putObject(l, ARRAY_LIST_DATA, e);
              U.putInt(l, ARRAY_LIST_SIZE, e.length);
            } else {
              l.addAll(Arrays.asList(e));
            }
          } else {
            Collection<Object> coll = (Collection<Object>) c.target;
            for (Object x : e) coll.add(x);
          }
      }
    } catch (RuntimeException | StackOverflowError x) {
      throw new CerealException("corrupt Cereal frame: cannot fill " + c.ci.type.getName()
          + " (object " + c.index + "): " + x, base + c.at, x);
    }
  }
}
