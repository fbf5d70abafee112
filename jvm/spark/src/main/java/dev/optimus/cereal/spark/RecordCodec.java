package dev.optimus.cereal.spark;

import dev.optimus.cereal.Cereal;
import dev.optimus.cereal.CerealException;
import dev.optimus.cereal.CerealOutput;
import java.io.ByteArrayInputStream;
import java.io.Externalizable;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.ObjectStreamClass;
import java.io.OutputStream;
import java.io.Serializable;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The records of {@link CerealSerializer}: how one object graph becomes bytes and back, shared by
 * {@code serialize}/{@code deserialize} and the streams. Thread-safe; one per class loader.
 *
 * <p>A record is either
 *
 * <ul>
 *   <li>a Cereal frame (first byte {@code 0xCE}), written with the stream's class table reset, so
 *       it names every unregistered class it uses and depends on no other record; or
 *   <li>a Java serialization record: {@code 'J'} ({@code 0x4A}), a 4-byte big-endian length, then
 *       that many bytes of one {@code ObjectOutputStream}.
 * </ul>
 *
 * <p>The Java form is the fallback for graphs whose state Cereal's field-by-field layout would not
 * capture, as Spark's Kryo setup sends {@code SerializableConfiguration} and the like to Java
 * serialization. A graph goes to Java when its root's class {@linkplain #keepsStateOutsideFields
 * keeps state outside its fields}; when the frame names such a class (found from the frame's
 * class names, which with registration optional list every unregistered class of the graph, so
 * the check costs nothing for graphs of registered classes); or when Cereal refuses the graph
 * (a lambda, a record) and registration is optional. Singletons and {@code Class} objects are
 * Cereal's own. With registration required, a nested class of that kind is not registered and
 * fails, as with Kryo.
 */
final class RecordCodec {
  static final int CEREAL_MAGIC = 0xCE;
  static final int JAVA_TAG = 0x4A;
  /** Java records grow their buffer only as bytes arrive past this. */
  private static final int TRUSTED = 1 << 20;

  /**
   * Scala's {@code List}, whose {@code writeReplace} only makes Java's stream of a list compact (a
   * proxy of the elements): its cons cells' fields are the list, so Cereal writes them.
   */
  private static final String SCALA_LIST = "scala.collection.immutable.List";

  private static final ClassValue<Boolean> OUTSIDE_FIELDS = new ClassValue<>() {
    @Override
    protected Boolean computeValue(Class<?> type) {
      return compute(type);
    }
  };

  final Cereal cereal;
  final ClassLoader loader;
  final boolean registrationRequired;
  private final ConcurrentHashMap<String, Boolean> namedNeedsJava = new ConcurrentHashMap<>();
  private final ThreadLocal<Encoder> encoders = ThreadLocal.withInitial(() -> new Encoder(this));

  RecordCodec(Cereal cereal, ClassLoader loader, boolean registrationRequired) {
    this.cereal = cereal;
    this.loader = loader;
    this.registrationRequired = registrationRequired;
  }

  /**
   * Whether {@code type}'s instances keep state that a copy of their non-transient fields loses
   * or that Java serialization would replace: {@code Externalizable}; a {@code writeReplace}
   * method (Scala's immutable {@code HashMap} proxies; not Scala's {@code List}'s), or a
   * {@code readResolve} on a class with instance fields (Scala's {@code Manifest}s, which resolve
   * to canonical instances); or a private {@code writeObject} together with transient fields
   * (Hadoop's configurations, {@code java.util.Date}). Exempt: collections and maps that Cereal writes by content, and
   * serialization singletons (no instance fields and a {@code readResolve}: Scala's {@code None},
   * {@code Nil}, empty collections), which Cereal itself reads back as their one instance.
   */
  static boolean keepsStateOutsideFields(Class<?> type) {
    return OUTSIDE_FIELDS.get(type);
  }

  private static boolean compute(Class<?> type) {
    if (type.isArray() || type.isPrimitive() || type.isEnum() || type.isInterface()) return false;
    // Singletons (no instance fields, a readResolve): Cereal reads them back as their instance.
    if (Cereal.isSingletonClass(type)) return false;
    if (type.getSuperclass() != null && type.getSuperclass().isEnum()) return false;
    if ((Collection.class.isAssignableFrom(type) || Map.class.isAssignableFrom(type))
        && Modifier.isPublic(type.getModifiers()) && hasPublicNoArgConstructor(type)) {
      return false;
    }
    if (!Serializable.class.isAssignableFrom(type)) return false;
    if (Externalizable.class.isAssignableFrom(type)) return true;
    boolean customWrite = false;
    boolean transientField = false;
    for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
      for (Method m : c.getDeclaredMethods()) {
        if (Modifier.isStatic(m.getModifiers())) continue;
        String n = m.getName();
        if (m.getParameterCount() == 0 && (n.equals("readResolve") || n.equals("writeReplace"))
            && !c.getName().equals(SCALA_LIST)) {
          return true;
        }
        if (n.equals("writeObject") && m.getParameterCount() == 1
            && m.getParameterTypes()[0] == ObjectOutputStream.class) {
          customWrite = true;
        }
      }
      for (Field f : c.getDeclaredFields()) {
        int mod = f.getModifiers();
        if (!Modifier.isStatic(mod) && Modifier.isTransient(mod)) transientField = true;
      }
    }
    return customWrite && transientField;
  }

  private static boolean hasPublicNoArgConstructor(Class<?> type) {
    try {
      return Modifier.isPublic(type.getConstructor().getModifiers());
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  /** Whether the Cereal frame in {@code f[start..length)} names a class that must go to Java. */
  boolean namesNeedJava(byte[] f, int start, int length) {
    // Frame: magic, version, flags, body length (varint); body: class count (varint), names.
    int p = start + 3;
    while (p < length && f[p] < 0) p++; // the body length
    if (p + 1 < length && f[p + 1] == 0) return false; // no names: the usual case
    int[] pos = {start + 3};
    varint(f, pos, length);
    int classes = varint(f, pos, length);
    for (int i = 0; i < classes; i++) {
      int n = varint(f, pos, length);
      String name = new String(f, pos[0], n, StandardCharsets.UTF_8);
      pos[0] += n;
      if (namedNeedsJava.computeIfAbsent(name, this::nameNeedsJava)) return true;
    }
    return false;
  }

  private boolean nameNeedsJava(String name) {
    try {
      return keepsStateOutsideFields(Class.forName(name, false, loader));
    } catch (ClassNotFoundException | LinkageError e) {
      return false; // the writer wrote it, so the class exists; a reader reports any mismatch
    }
  }

  private static int varint(byte[] b, int[] pos, int limit) {
    int v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      if (pos[0] >= limit) throw new IllegalStateException("truncated frame from the writer");
      int c = b[pos[0]++];
      v |= (c & 0x7f) << shift;
      if (c >= 0) return v;
    }
    throw new IllegalStateException("bad varint in a frame from the writer");
  }

  /** The encoder of the calling thread (for one-object {@code serialize}). */
  Encoder threadEncoder() {
    return encoders.get();
  }

  /** The graph of the one record that is all of {@code b[offset..offset+length)}. */
  Object decode(byte[] b, int offset, int length) throws IOException {
    if (length < 1) throw new CerealException("empty record");
    int tag = b[offset] & 0xff;
    if (tag == CEREAL_MAGIC) return cereal.deserialize(b, offset, length);
    if (tag == JAVA_TAG) {
      if (length < 5) throw new CerealException("truncated Java record header", length, null);
      int n = ((b[offset + 1] & 0xff) << 24) | ((b[offset + 2] & 0xff) << 16)
          | ((b[offset + 3] & 0xff) << 8) | (b[offset + 4] & 0xff);
      if (n != length - 5) {
        throw new CerealException("Java record of " + n + " bytes in " + (length - 5), 1, null);
      }
      return javaDecode(b, offset + 5, n);
    }
    throw new CerealException("not a record: first byte 0x" + Integer.toHexString(tag), 0, null);
  }

  /** Reads the body of a Java record from {@code in}, whose tag byte has been read. */
  Object readJavaRecord(InputStream in) throws IOException {
    byte[] len = in.readNBytes(4);
    if (len.length < 4) throw new CerealException("stream ends inside a Java record header");
    int n = ((len[0] & 0xff) << 24) | ((len[1] & 0xff) << 16) | ((len[2] & 0xff) << 8) | (len[3] & 0xff);
    if (n < 0) throw new CerealException("negative Java record length " + n);
    byte[] body = new byte[Math.min(n, TRUSTED)];
    int got = 0;
    while (got < n) {
      if (got == body.length) body = Arrays.copyOf(body, (int) Math.min(n, 2L * body.length));
      int r = in.read(body, got, body.length - got);
      if (r < 0) throw new CerealException("stream ends inside a Java record of " + n + " bytes, after " + got);
      got += r;
    }
    return javaDecode(body, 0, n);
  }

  private Object javaDecode(byte[] b, int offset, int length) throws IOException {
    try (ObjectInputStream in = new LoaderObjectInputStream(new ByteArrayInputStream(b, offset, length), loader)) {
      return in.readObject();
    } catch (ClassNotFoundException e) {
      throw new CerealException("Java record: " + e.getMessage(), e);
    }
  }

  /** Java serialization resolving classes with the serializer's loader, as Spark's own does. */
  private static final class LoaderObjectInputStream extends ObjectInputStream {
    private final ClassLoader loader;

    LoaderObjectInputStream(InputStream in, ClassLoader loader) throws IOException {
      super(in);
      this.loader = loader;
    }

    @Override
    protected Class<?> resolveClass(ObjectStreamClass desc) throws IOException, ClassNotFoundException {
      try {
        return Class.forName(desc.getName(), false, loader);
      } catch (ClassNotFoundException e) {
        return super.resolveClass(desc);
      }
    }
  }

  /**
   * Turns graphs into records appended to a reusable buffer. One per thread or per stream; not
   * thread-safe. A one-object {@code serialize} {@link #clear}s it before each record; a stream
   * lets records pile up and {@link #drainTo drains} them in blocks, as Kryo's output buffer does.
   */
  static final class Encoder {
    private final RecordCodec codec;
    private final Buffer buf = new Buffer();
    private final CerealOutput out;
    private int start;

    Encoder(RecordCodec codec) {
      this.codec = codec;
      this.out = codec.cereal.newOutput(buf);
    }

    /** Forgets every record in the buffer. */
    void clear() {
      buf.count = 0;
    }

    /**
     * Appends {@code root} as one record; then {@link #bytes()}[{@link #start()}..{@link
     * #length()}) hold it.
     */
    void encode(Object root) {
      start = buf.count;
      try {
        encodeRecord(root);
      } catch (RuntimeException | Error e) {
        buf.count = start; // no partial record stays behind
        throw e;
      }
    }

    private void encodeRecord(Object root) {
      if (root != null && keepsStateOutsideFields(root.getClass())
          && !codec.cereal.writesAsSingleton(root.getClass())) {
        javaEncode(root);
        return;
      }
      if (!codec.registrationRequired) out.reset();
      try {
        out.writeObject(root);
        out.flush(); // the frame into buf, where the caller reads it
      } catch (CerealException e) {
        if (codec.registrationRequired) throw e;
        javaEncode(root);
        return;
      } catch (IOException e) {
        throw new IllegalStateException("in-memory buffer", e);
      }
      if (!codec.registrationRequired && codec.namesNeedJava(buf.bytes, start, buf.count)) {
        javaEncode(root);
        return;
      }
      CerealSerializer.CEREAL_RECORDS.increment();
    }

    private void javaEncode(Object root) {
      buf.count = start;
      buf.write(JAVA_TAG);
      buf.write(new byte[4], 0, 4); // the length, filled in below
      try (ObjectOutputStream o = new ObjectOutputStream(buf)) {
        o.writeObject(root);
      } catch (IOException e) {
        throw Sneaky.rethrow(e);
      }
      int n = buf.count - start - 5;
      buf.bytes[start + 1] = (byte) (n >>> 24);
      buf.bytes[start + 2] = (byte) (n >>> 16);
      buf.bytes[start + 3] = (byte) (n >>> 8);
      buf.bytes[start + 4] = (byte) n;
      CerealSerializer.JAVA_RECORDS.increment();
      CerealSerializer.JAVA_ROOTS.computeIfAbsent(root == null ? "null" : root.getClass().getName(),
          k -> new java.util.concurrent.atomic.LongAdder()).increment();
    }

    byte[] bytes() {
      return buf.bytes;
    }

    /** Where the last record starts. */
    int start() {
      return start;
    }

    /** Where the buffer's records end. */
    int length() {
      return buf.count;
    }

    /** Writes every record of the buffer to {@code target} and empties the buffer. */
    void drainTo(OutputStream target) throws IOException {
      if (buf.count > 0) target.write(buf.bytes, 0, buf.count);
      buf.count = 0;
      if (buf.bytes.length > TRUSTED) buf.bytes = new byte[4096]; // one huge record: let it go
    }
  }

  /** A growable byte buffer whose array the encoder reads directly (no copy, no locks). */
  private static final class Buffer extends OutputStream {
    byte[] bytes = new byte[4096];
    int count;

    private void ensure(int extra) {
      if (count + extra > bytes.length) {
        bytes = Arrays.copyOf(bytes, Math.max(count + extra, 2 * bytes.length));
      }
    }

    @Override
    public void write(int b) {
      ensure(1);
      bytes[count++] = (byte) b;
    }

    @Override
    public void write(byte[] b, int off, int len) {
      ensure(len);
      System.arraycopy(b, off, bytes, count, len);
      count += len;
    }
  }
}
