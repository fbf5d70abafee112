package dev.optimus.cereal;

import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Cereal serializer: configuration, the class registry, and one-graph entry points.
 *
 * <p>Serializes arbitrary object graphs in the format of Cereal (Jang et al., ISCA 2020): a value
 * array of the objects' words, a packed array of relative references and a packed layout bitmap
 * ({@link Format}). Shared objects and cycles keep their identity. Supported: primitives and
 * their arrays, object arrays, strings, boxed values, enums, {@code ArrayList},
 * {@code LinkedList}, {@code ArrayDeque}, {@code HashSet}, {@code LinkedHashSet},
 * {@code TreeSet} and {@code TreeMap} (natural ordering), {@code HashMap}, {@code LinkedHashMap},
 * the immutable {@code List.of}/{@code Set.of}/{@code Map.of} (rebuilt), other collections and
 * maps with a public no-argument constructor (by content), and any other class by its non-static,
 * non-transient fields, inherited ones included.
 *
 * <p>Like Kryo, classes are registered ({@link #register(Class)}) and written as small IDs, and
 * writer and reader must register the same classes with the same IDs. With
 * {@link #setRegistrationRequired(boolean) setRegistrationRequired(false)} an unregistered class
 * is named in the stream instead, once per stream; a reader then loads classes by name (without
 * initializing them), so only turn it off for trusted input.
 *
 * <p>Use: register and configure first, then serialize from any number of threads (the registry
 * must not change while graphs are written or read). {@link #serialize}/{@link #deserialize} are
 * thread-safe; {@link CerealOutput}/{@link CerealInput} are streams of many graphs, one per
 * thread, as a Spark {@code SerializationStream}/{@code DeserializationStream} would hold them.
 */
public final class Cereal implements AutoCloseable {
  private final Map<Class<?>, ClassInfo> registered = new IdentityHashMap<>();
  private ClassInfo[] byId = new ClassInfo[64];
  private final ClassInfo classInfo = ClassInfo.builtin(Class.class, ClassInfo.CLASS, Format.ID_CLASS);
  /** Class objects read by name: name to class, filled as names are resolved. */
  private final java.util.concurrent.ConcurrentHashMap<String, Class<?>> classesByName =
      new java.util.concurrent.ConcurrentHashMap<>();
  private int nextId = Format.FIRST_USER_ID;
  private boolean registrationRequired = true;
  private ClassLoader classLoader = Cereal.class.getClassLoader();
  private int threads = Math.max(1, Runtime.getRuntime().availableProcessors());
  private int parallelThreshold = 1 << 16;
  private int maxGraphWords = Format.MAX_WORDS;
  private volatile ExecutorService pool;
  /** Bumped by every change of the registry, so that writers drop the layouts they cached. */
  private volatile int registryVersion;
  private boolean compactFrames = true;
  private final ThreadLocal<GraphWriter> writers = ThreadLocal.withInitial(() -> new GraphWriter(this));
  /** One reader per thread for {@link #deserialize}: its tables are reused from graph to graph. */
  private final ThreadLocal<GraphReader> readers = ThreadLocal.withInitial(() -> new GraphReader(this));
  /**
   * The writer and reader of the thread that called last, found without a {@code ThreadLocal}
   * look-up when the same thread calls again (most calls: one thread per task). Immutable pairs,
   * so another thread reads either a whole pair or none.
   */
  private record Owned<T>(Thread thread, T value) {}

  private Owned<GraphWriter> lastWriter;
  private Owned<GraphReader> lastReader;

  private GraphWriter writer() {
    Owned<GraphWriter> o = lastWriter;
    Thread t = Thread.currentThread();
    if (o != null && o.thread() == t) return o.value();
    GraphWriter w = writers.get();
    lastWriter = new Owned<>(t, w);
    return w;
  }

  private GraphReader reader() {
    Owned<GraphReader> o = lastReader;
    Thread t = Thread.currentThread();
    if (o != null && o.thread() == t) return o.value();
    GraphReader r = readers.get();
    lastReader = new Owned<>(t, r);
    return r;
  }

  private final ClassValue<ClassInfo> infos = new ClassValue<>() {
    @Override
    protected ClassInfo computeValue(Class<?> type) {
      Class<?> key = type;
      if (type.getSuperclass() != null && type.getSuperclass().isEnum()) key = type.getSuperclass();
      ClassInfo ci = registered.get(key);
      if (ci != null) return ci;
      if (registrationRequired) {
        throw new CerealException("class " + type.getName() + " is not registered: call "
            + "register(" + type.getSimpleName() + ".class) on writer and reader alike, or "
            + "setRegistrationRequired(false)");
      }
      return ClassInfo.of(key, -1);
    }
  };

  /** A serializer with the built-in classes registered and registration required. */
  public Cereal() {
    builtin(String.class, ClassInfo.STRING, Format.ID_STRING);
    builtin(Boolean.class, ClassInfo.BOOLEAN, Format.ID_BOOLEAN);
    builtin(Byte.class, ClassInfo.BYTE, Format.ID_BYTE);
    builtin(Short.class, ClassInfo.SHORT, Format.ID_SHORT);
    builtin(Character.class, ClassInfo.CHAR, Format.ID_CHAR);
    builtin(Integer.class, ClassInfo.INT, Format.ID_INT);
    builtin(Long.class, ClassInfo.LONG, Format.ID_LONG);
    builtin(Float.class, ClassInfo.FLOAT, Format.ID_FLOAT);
    builtin(Double.class, ClassInfo.DOUBLE, Format.ID_DOUBLE);
    builtin(boolean[].class, ClassInfo.A_BOOLEAN, Format.ID_A_BOOLEAN);
    builtin(byte[].class, ClassInfo.A_BYTE, Format.ID_A_BYTE);
    builtin(short[].class, ClassInfo.A_SHORT, Format.ID_A_SHORT);
    builtin(char[].class, ClassInfo.A_CHAR, Format.ID_A_CHAR);
    builtin(int[].class, ClassInfo.A_INT, Format.ID_A_INT);
    builtin(long[].class, ClassInfo.A_LONG, Format.ID_A_LONG);
    builtin(float[].class, ClassInfo.A_FLOAT, Format.ID_A_FLOAT);
    builtin(double[].class, ClassInfo.A_DOUBLE, Format.ID_A_DOUBLE);
    builtin(Object[].class, ClassInfo.OBJ_ARRAY, Format.ID_OBJECT_ARRAY);
    builtin(String[].class, ClassInfo.OBJ_ARRAY, Format.ID_STRING_ARRAY);
    builtin(ArrayList.class, ClassInfo.ARRAY_LIST, Format.ID_ARRAY_LIST);
    builtin(LinkedList.class, ClassInfo.LINKED_LIST, Format.ID_LINKED_LIST);
    builtin(ArrayDeque.class, ClassInfo.ARRAY_DEQUE, Format.ID_ARRAY_DEQUE);
    builtin(HashSet.class, ClassInfo.HASH_SET, Format.ID_HASH_SET);
    builtin(LinkedHashSet.class, ClassInfo.LINKED_HASH_SET, Format.ID_LINKED_HASH_SET);
    builtin(TreeSet.class, ClassInfo.TREE_SET, Format.ID_TREE_SET);
    builtin(HashMap.class, ClassInfo.HASH_MAP, Format.ID_HASH_MAP);
    builtin(LinkedHashMap.class, ClassInfo.LINKED_HASH_MAP, Format.ID_LINKED_HASH_MAP);
    builtin(TreeMap.class, ClassInfo.TREE_MAP, Format.ID_TREE_MAP);
    registered.put(Class.class, classInfo);
    // The immutable collections' classes are private to java.util: find them by example. Each
    // ID stands for all the classes of one interface; the reader rebuilds with List.of & co.,
    // which pick the same class for the same size.
    ClassInfo list = builtin(List.of().getClass(), ClassInfo.IMM_LIST, Format.ID_IMM_LIST);
    ClassInfo set = builtin(Set.of().getClass(), ClassInfo.IMM_SET, Format.ID_IMM_SET);
    ClassInfo map = builtin(Map.of().getClass(), ClassInfo.IMM_MAP, Format.ID_IMM_MAP);
    for (Object o : new Object[] {List.of(1), List.of(1, 2), List.of(1, 2, 3),
        Arrays.asList(1, 2).stream().toList()}) {
      registered.putIfAbsent(o.getClass(), list);
    }
    for (Object o : new Object[] {Set.of(1), Set.of(1, 2), Set.of(1, 2, 3)}) {
      registered.putIfAbsent(o.getClass(), set);
    }
    for (Object o : new Object[] {Map.of(1, 1), Map.of(1, 1, 2, 2)}) {
      registered.putIfAbsent(o.getClass(), map);
    }
  }

  private ClassInfo builtin(Class<?> type, int kind, int id) {
    ClassInfo ci = ClassInfo.builtin(type, kind, id);
    registered.put(type, ci);
    byId[id] = ci;
    return ci;
  }

  // ------------------------------------------------------------------ registry

  /** Registers {@code type} under the next free ID and returns the ID (a built-in's own ID). */
  public synchronized int register(Class<?> type) {
    ClassInfo ci = registered.get(type);
    if (ci != null) return ci.id;
    while (nextId < byId.length && byId[nextId] != null) nextId++;
    register(type, nextId);
    return nextId;
  }

  /**
   * Registers {@code type} under {@code id} (from 32 to 2^24 - 2): writer and reader must agree.
   * Computes the class's layout now.
   */
  public synchronized void register(Class<?> type, int id) {
    register(type, id, false);
  }

  /**
   * Registers {@code type} under the next free ID as a serialization singleton although it has
   * instance fields: its objects are written as a header alone and read back as what its
   * {@code readResolve()} returns on an instance allocated without a constructor, called once.
   * Only for classes whose {@code readResolve} ignores their fields, as Scala's
   * {@code Manifest.Int}, {@code Manifest.Object} and {@code ClassTag.Any} do (they resolve to
   * constants); classes without instance fields are singletons without this. Returns the ID.
   */
  public synchronized int registerSingleton(Class<?> type) {
    ClassInfo ci = registered.get(type);
    if (ci != null) {
      if (ci.kind != ClassInfo.SINGLETON) {
        throw new IllegalArgumentException(type.getName() + " is already registered, not as a singleton");
      }
      return ci.id;
    }
    while (nextId < byId.length && byId[nextId] != null) nextId++;
    register(type, nextId, true);
    return nextId;
  }

  /** Whether Cereal writes {@code type}'s objects as a singleton (see {@link #registerSingleton}). */
  public boolean writesAsSingleton(Class<?> type) {
    ClassInfo ci = registered.get(type);
    return ci != null ? ci.kind == ClassInfo.SINGLETON : ClassInfo.isSingleton(type);
  }

  private void register(Class<?> type, int id, boolean singleton) {
    if (id < Format.FIRST_USER_ID || id >= Format.ID_CLASS) {
      throw new IllegalArgumentException("class IDs go from " + Format.FIRST_USER_ID + " to "
          + (Format.ID_CLASS - 1) + ": " + id);
    }
    if (id < byId.length && byId[id] != null && byId[id].type != type) {
      throw new IllegalArgumentException("ID " + id + " is already " + byId[id].type.getName());
    }
    ClassInfo old = registered.get(type);
    if (old != null) {
      if (old.id == id) return;
      throw new IllegalArgumentException(type.getName() + " is already registered as " + old.id);
    }
    ClassInfo ci = singleton ? ClassInfo.singletonOf(type, id) : ClassInfo.of(type, id);
    if (ci.type != type) throw new IllegalArgumentException("register the enum " + ci.type.getName() + " itself");
    if (id >= byId.length) byId = Arrays.copyOf(byId, Math.max(id + 1, byId.length * 2));
    byId[id] = ci;
    registered.put(type, ci);
    infos.remove(type);
    for (ClassInfo c : registered.values()) c.linkRefInfos(registered);
    registryVersion++;
  }

  /** Changes with every registration (writers cache class layouts until it changes). */
  int registryVersion() {
    return registryVersion;
  }

  /**
   * Whether graphs of at most {@link Format#COMPACT_MAX_WORDS} layout words are written as
   * compact frames (default true): no counts but the value words and no bitmap, which the reader
   * derives from the classes' layouts ({@link Format}). Readers accept both forms either way.
   */
  public void setCompactFrames(boolean compact) {
    this.compactFrames = compact;
  }

  public boolean compactFrames() {
    return compactFrames;
  }

  /** Whether every class written must be registered (the default: true). */
  public boolean isRegistrationRequired() {
    return registrationRequired;
  }

  /** With false, unregistered classes are written by name, once per stream (trusted input only). */
  public synchronized void setRegistrationRequired(boolean required) {
    this.registrationRequired = required;
    registryVersion++;
  }

  /** The loader of classes named in a stream (default: Cereal's own). */
  public void setClassLoader(ClassLoader loader) {
    this.classLoader = loader;
  }

  /**
   * Threads reading a large graph, the calling one included: they allocate its objects while the
   * calling thread scans the headers, then fix its references (default: the available
   * processors).
   */
  public void setDeserializationThreads(int threads) {
    if (threads < 1) throw new IllegalArgumentException("threads < 1");
    this.threads = threads;
  }

  public int deserializationThreads() {
    return threads;
  }

  /** References from which a graph is read on several threads (default 65536). */
  public void setParallelThreshold(int references) {
    if (references < 1) throw new IllegalArgumentException("threshold < 1");
    this.parallelThreshold = references;
  }

  public int parallelThreshold() {
    return parallelThreshold;
  }

  /** The most layout words a graph read may have (default: the format's limit, 2^31 - 17). */
  public void setMaxGraphWords(int words) {
    if (words < 1) throw new IllegalArgumentException("words < 1");
    this.maxGraphWords = Math.min(words, Format.MAX_WORDS);
  }

  public int maxGraphWords() {
    return maxGraphWords;
  }

  ClassInfo infoFor(Class<?> type) {
    return infos.get(type);
  }

  ClassInfo infoById(int id) {
    ClassInfo[] t = byId;
    if (id > 0 && id < t.length) return t[id];
    return id == Format.ID_CLASS ? classInfo : null;
  }

  /**
   * Whether {@code type}'s objects are serialization singletons, which Cereal writes as a header
   * and reads back as the one instance ({@code Serializable}, no instance fields, a
   * {@code readResolve()}: Scala's {@code None}, {@code Nil}, empty collections).
   */
  public static boolean isSingletonClass(Class<?> type) {
    return ClassInfo.isSingleton(type);
  }

  /**
   * Whether a {@code Class} object naming {@code type} may be written and read: always with
   * registration optional; with registration required, for primitive types, {@code Object} and
   * registered (or built-in) classes, and arrays of those.
   */
  boolean classObjectAllowed(Class<?> type) {
    if (!registrationRequired) return true;
    while (type.isArray()) type = type.getComponentType();
    return type.isPrimitive() || type == Object.class || registered.containsKey(type);
  }

  /** The class a {@code Class} object of a frame names ({@link Class#getName()}). */
  Class<?> classForName(String name, long at) {
    Class<?> type = classesByName.get(name);
    if (type == null) {
      type = primitiveClass(name);
      if (type == null) {
        if (registrationRequired && !registeredName(name)) {
          throw new CerealException("corrupt Cereal frame: a Class object names " + name
              + ", which is not registered (registration is required)", at, null);
        }
        try {
          type = Class.forName(name, false, classLoader);
        } catch (ClassNotFoundException | LinkageError | IllegalArgumentException e) {
          throw new CerealException("corrupt Cereal frame: unknown class " + name
              + " in a Class object", at, null);
        }
      }
      if (!type.getName().equals(name)) {
        throw new CerealException("corrupt Cereal frame: " + name + " is not a class name", at, null);
      }
      if (classesByName.size() < 4096) classesByName.put(name, type);
    }
    if (!classObjectAllowed(type)) {
      throw new CerealException("corrupt Cereal frame: a Class object names " + name
          + ", which is not registered (registration is required)", at, null);
    }
    return type;
  }

  /** Whether {@code name} (a {@link Class#getName()}) is of a class {@link #classObjectAllowed}. */
  private synchronized boolean registeredName(String name) {
    int dims = 0;
    while (dims < name.length() && name.charAt(dims) == '[') dims++;
    String element = name;
    if (dims > 0) {
      String rest = name.substring(dims);
      if (rest.length() == 1) return "ZBSCIJFD".indexOf(rest.charAt(0)) >= 0;
      if (!rest.startsWith("L") || !rest.endsWith(";")) return false;
      element = rest.substring(1, rest.length() - 1);
    }
    if (element.equals("java.lang.Object")) return true;
    for (Class<?> c : registered.keySet()) if (c.getName().equals(element)) return true;
    return false;
  }

  private static Class<?> primitiveClass(String name) {
    switch (name) {
      case "boolean": return boolean.class;
      case "byte": return byte.class;
      case "short": return short.class;
      case "char": return char.class;
      case "int": return int.class;
      case "long": return long.class;
      case "float": return float.class;
      case "double": return double.class;
      case "void": return void.class;
      default: return null;
    }
  }

  ClassInfo infoForName(String name, long at) {
    Class<?> type;
    try {
      type = Class.forName(name, false, classLoader);
    } catch (ClassNotFoundException | LinkageError e) {
      throw new CerealException("corrupt Cereal frame: unknown class " + name, at, null);
    }
    try {
      return infos.get(type);
    } catch (CerealException e) {
      throw new CerealException("corrupt Cereal frame: " + e.getMessage(), at, null);
    }
  }

  ExecutorService pool() {
    ExecutorService p = pool;
    if (p == null) {
      synchronized (this) {
        p = pool;
        if (p == null) {
          AtomicInteger n = new AtomicInteger();
          ThreadFactory f = r -> {
            Thread t = new Thread(r, "cereal-fixup-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
          };
          pool = p = Executors.newFixedThreadPool(threads, f);
        }
      }
    }
    return p;
  }

  /** Stops the threads that read large graphs, if any were started. */
  @Override
  public synchronized void close() {
    if (pool != null) {
      pool.shutdown();
      pool = null;
    }
  }

  // ------------------------------------------------------------------ one graph

  /** One frame holding the graph of {@code root} (which may be null). */
  public byte[] serialize(Object root) {
    GraphWriter w = writer();
    byte[] leaf = w.leafFrame(root);
    if (leaf != null) return leaf;
    w.write(root);
    return Arrays.copyOfRange(w.frameBuffer(), w.frameStart(), w.frameStart() + w.frameLength());
  }

  /** The graph of the one frame that is all of {@code frame}. */
  public Object deserialize(byte[] frame) {
    return deserialize(frame, 0, frame.length);
  }

  /** The graph of the one frame that is all of {@code b[offset..offset+length)}. */
  public Object deserialize(byte[] b, int offset, int length) {
    int end = offset + length;
    GraphReader.FrameHeader h = GraphReader.frameHeader(b, offset, end, -offset);
    if (h.bodyLength() > end - h.bodyStart()) {
      throw new CerealException("frame of " + h.bodyLength() + " bytes is past the "
          + (end - h.bodyStart()) + " bytes of input", h.bodyStart() - offset, null);
    }
    if (h.bodyLength() < end - h.bodyStart()) {
      throw new CerealException((end - h.bodyStart() - h.bodyLength())
          + " bytes after the frame", h.bodyStart() + h.bodyLength() - offset, null);
    }
    GraphReader r = reader();
    if (r.busy()) r = new GraphReader(this); // deserialize called from inside a read
    else r.forgetNames();
    return r.read(b, h.bodyStart(), h.bodyLength(), h.flags(), -offset);
  }

  /** {@link #deserialize(byte[])}, checked to be a {@code type}. */
  public <T> T deserialize(byte[] frame, Class<T> type) {
    Object o = deserialize(frame);
    if (o != null && !type.isInstance(o)) {
      throw new CerealException("the graph's root is a " + o.getClass().getName() + ", not a "
          + type.getName());
    }
    return type.cast(o);
  }

  /** A stream of graphs written to {@code out}. */
  public CerealOutput newOutput(OutputStream out) {
    return new CerealOutput(this, out);
  }

  /** A stream of graphs read from {@code in} (read ahead in blocks: the input owns it). */
  public CerealInput newInput(InputStream in) {
    return new CerealInput(this, in);
  }

  /** A stream of graphs read from {@code b[offset..offset+length)}, decoded in place. */
  public CerealInput newInput(byte[] b, int offset, int length) {
    return new CerealInput(this, b, offset, length);
  }

  GraphWriter newWriter() {
    return new GraphWriter(this);
  }

  GraphReader newReader() {
    return new GraphReader(this);
  }
}
