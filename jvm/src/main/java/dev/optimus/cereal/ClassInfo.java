package dev.optimus.cereal;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * What Cereal knows about one class, computed once per class and {@link Cereal} instance: how its
 * objects are laid out as words of the value array and where their references are.
 *
 * <p>Every object starts with one header word (class ID in the low 32 bits, a length or other
 * small value in the high 32; see {@link Format}). After it, by kind:
 *
 * <ul>
 *   <li>{@link #PLAIN} (a user class, fields of superclasses included; static and transient
 *       fields are not written): the primitive fields packed into {@link #primWords} words,
 *       sorted by size (8, 4, 2, 1 bytes) then by declaring class (superclass first) and name,
 *       then one reference word per reference field in the same order. This is HotSpot's own
 *       field order (sizes descending, references together), made deterministic so that writer
 *       and reader compute the same layout from the class alone.
 *   <li>boxed values: one word holding the value. Enums: the header only (the ordinal in its high
 *       half).
 *   <li>strings: the characters, Latin-1 (1 byte each) or UTF-16LE (2), padded to a word.
 *   <li>primitive arrays: the elements little-endian, padded to a word.
 *   <li>object arrays: one reference word per element.
 *   <li>collections and maps: one reference word per element (key, value per entry): their
 *       logical content, never their internal tables. Immutable ones ({@code List.of},
 *       {@code Set.of}, {@code Map.of}) are rebuilt from that content.
 * </ul>
 */
final class ClassInfo {
  // Kinds. Order matters only in the groupings tested by the predicates below.
  static final int PLAIN = 0;
  static final int ENUM = 1;
  static final int BOOLEAN = 2, BYTE = 3, SHORT = 4, CHAR = 5, INT = 6, LONG = 7, FLOAT = 8,
      DOUBLE = 9;
  static final int STRING = 10;
  static final int A_BOOLEAN = 11, A_BYTE = 12, A_SHORT = 13, A_CHAR = 14, A_INT = 15,
      A_LONG = 16, A_FLOAT = 17, A_DOUBLE = 18;
  static final int OBJ_ARRAY = 19;
  // Collections (one reference per element).
  static final int ARRAY_LIST = 20, LINKED_LIST = 21, ARRAY_DEQUE = 22, HASH_SET = 23,
      LINKED_HASH_SET = 24, TREE_SET = 25, GENERIC_COLLECTION = 26;
  // Maps (two references per entry).
  static final int HASH_MAP = 27, LINKED_HASH_MAP = 28, TREE_MAP = 29, GENERIC_MAP = 30;
  // Rebuilt after their content exists (immutable).
  static final int IMM_LIST = 31, IMM_SET = 32, IMM_MAP = 33;
  /** A serialization singleton: the header alone, read back as the class's one instance. */
  static final int SINGLETON = 34;
  /** A {@code java.lang.Class} object, written by name. */
  static final int CLASS = 35;

  /** Primitive field kinds, as in {@link #primKinds}. */
  static final byte F_LONG = 0, F_DOUBLE = 1, F_INT = 2, F_FLOAT = 3, F_SHORT = 4, F_CHAR = 5,
      F_BYTE = 6, F_BOOLEAN = 7;

  /** Word kinds, as in {@link #wordKinds}. */
  static final byte W_LONG = 0, W_INT2 = 1, W_INT = 2, W_MIXED = 3;

  final Class<?> type;
  final int kind;
  /** Registered class ID, or -1 for a class named in the stream (registration optional). */
  final int id;

  // PLAIN only.
  int primWords;
  long[] primOffsets = new long[0];
  byte[] primKinds = new byte[0];
  int[] primPos = new int[0];
  /**
   * How the writer builds each of the {@link #primWords} words: {@link #W_LONG} (one 8-byte field
   * at {@code wordOffsets[2w]}), {@link #W_INT2} (4-byte fields at {@code wordOffsets[2w]} and
   * {@code [2w + 1]}), {@link #W_INT} (one 4-byte field, the high half zero) or {@link #W_MIXED}
   * (fields {@code wordFields[w]} to {@code wordFields[w + 1]} of the prim arrays, narrower ones
   * among them). One load per field and one store per word, without a pass of zeroes first.
   */
  byte[] wordKinds = new byte[0];
  long[] wordOffsets = new long[0];
  int[] wordFields = new int[1];
  int refCount;
  long[] refOffsets = new long[0];
  /** Declared type of each reference field; null where any object fits (Object). */
  Class<?>[] refTypes = new Class<?>[0];
  /**
   * The registered layout of each reference field's declared type, or null (not registered, or
   * Object): the writer takes it for a target of exactly that class without looking the class
   * up, as Kryo's field serializer does for final field types. Set by {@link #linkRefInfos}
   * whenever the registry changes, so it never changes while graphs are written.
   */
  ClassInfo[] refInfos = new ClassInfo[0];
  String[] refNames = new String[0];

  /** OBJ_ARRAY: the component type, or null for Object[] (no store check needed). */
  Class<?> component;
  /** ENUM: the constants by ordinal. */
  Object[] enumConstants;
  /** GENERIC_COLLECTION / GENERIC_MAP: the public no-argument constructor, as ()Object. */
  MethodHandle ctor;
  /** SINGLETON: the one instance, resolved on first use (by the reader). */
  private volatile Object singleton;

  private ClassInfo(Class<?> type, int kind, int id) {
    this.type = type;
    this.kind = kind;
    this.id = id;
  }

  /** Sets {@link #refInfos} from the registry ({@code registered}: class to layout). */
  void linkRefInfos(Map<Class<?>, ClassInfo> registered) {
    if (kind != PLAIN || refCount == 0) return;
    ClassInfo[] infos = new ClassInfo[refCount];
    for (int i = 0; i < refCount; i++) {
      Class<?> t = refTypes[i];
      ClassInfo ci = t == null ? null : registered.get(t);
      infos[i] = ci != null && ci.type == t ? ci : null;
    }
    refInfos = infos;
  }

  boolean isCollection() {
    return kind >= ARRAY_LIST && kind <= GENERIC_COLLECTION;
  }

  boolean isMap() {
    return kind >= HASH_MAP && kind <= GENERIC_MAP;
  }

  /** Collections, maps and the rebuilt immutables: content staged by pass 2, added in pass 3. */
  boolean isContainer() {
    return kind >= ARRAY_LIST && kind <= IMM_MAP;
  }

  boolean isRebuilt() {
    return kind >= IMM_LIST && kind <= IMM_MAP;
  }

  /** Whether the container orders or hashes its elements (so they must be complete first). */
  boolean hashesContent() {
    return kind == HASH_SET || kind == LINKED_HASH_SET || kind == TREE_SET || kind == HASH_MAP
        || kind == LINKED_HASH_MAP || kind == TREE_MAP || kind == GENERIC_COLLECTION
        || kind == GENERIC_MAP || kind == IMM_SET || kind == IMM_MAP;
  }

  /** Bytes per element of a primitive array kind. */
  static int elementSize(int kind) {
    switch (kind) {
      case A_BOOLEAN: case A_BYTE: return 1;
      case A_SHORT: case A_CHAR: return 2;
      case A_INT: case A_FLOAT: return 4;
      default: return 8;
    }
  }

  /**
   * The base offset of a primitive array of {@code kind} ({@code Unsafe.arrayBaseOffset}, which
   * is a call into the VM, not folded when the class is not a constant), looked up once.
   */
  static long arrayBase(int kind) {
    return ARRAY_BASES[kind - A_BOOLEAN];
  }

  private static final long[] ARRAY_BASES = {
      UnsafeAccess.U.arrayBaseOffset(boolean[].class), UnsafeAccess.U.arrayBaseOffset(byte[].class),
      UnsafeAccess.U.arrayBaseOffset(short[].class), UnsafeAccess.U.arrayBaseOffset(char[].class),
      UnsafeAccess.U.arrayBaseOffset(int[].class), UnsafeAccess.U.arrayBaseOffset(long[].class),
      UnsafeAccess.U.arrayBaseOffset(float[].class), UnsafeAccess.U.arrayBaseOffset(double[].class)};

  static boolean isPrimitiveArray(int kind) {
    return kind >= A_BOOLEAN && kind <= A_DOUBLE;
  }

  /** The info of a built-in class (the kind is fixed by the class). */
  static ClassInfo builtin(Class<?> type, int kind, int id) {
    ClassInfo ci = new ClassInfo(type, kind, id);
    if (kind == OBJ_ARRAY) ci.component = type == Object[].class ? null : type.getComponentType();
    return ci;
  }

  /** The kind a class gets when it is registered or named: a rule of {@link Format}. */
  static ClassInfo of(Class<?> type, int id) {
    if (type.isEnum() || (type.getSuperclass() != null && type.getSuperclass().isEnum())) {
      Class<?> e = type.isEnum() ? type : type.getSuperclass();
      ClassInfo ci = new ClassInfo(e, ENUM, id);
      ci.enumConstants = e.getEnumConstants();
      return ci;
    }
    if (type.isPrimitive() || type.isInterface()
        || (Modifier.isAbstract(type.getModifiers()) && !type.isArray())) {
      throw new CerealException("cannot serialize " + type.getName()
          + ": interfaces, abstract and primitive classes have no instances");
    }
    if (type.isArray()) {
      if (type.getComponentType().isPrimitive()) {
        throw new CerealException("primitive arrays are built in: " + type.getName());
      }
      ClassInfo ci = new ClassInfo(type, OBJ_ARRAY, id);
      ci.component = type.getComponentType() == Object.class ? null : type.getComponentType();
      return ci;
    }
    if (type.isRecord() || type.isHidden()) {
      throw new CerealException("cannot serialize " + type.getName()
          + ": records and hidden classes (lambdas) have no field offsets to write by");
    }
    if (type == Class.class || ClassLoader.class.isAssignableFrom(type)
        || Thread.class.isAssignableFrom(type)) {
      throw new CerealException("cannot serialize " + type.getName() + ": not a data class");
    }
    if (Collection.class.isAssignableFrom(type) || Map.class.isAssignableFrom(type)) {
      MethodHandle ctor = publicNoArgConstructor(type);
      if (ctor != null) {
        ClassInfo ci = new ClassInfo(type,
            Map.class.isAssignableFrom(type) ? GENERIC_MAP : GENERIC_COLLECTION, id);
        ci.ctor = ctor;
        return ci;
      }
      // No public constructor (Collections.unmodifiableList, Arrays.asList...): their fields.
    }
    if (isSingleton(type)) return new ClassInfo(type, SINGLETON, id);
    ClassInfo ci = new ClassInfo(type, PLAIN, id);
    ci.computeFields();
    return ci;
  }

  /**
   * Whether {@code type} is a serialization singleton: {@code Serializable}, no instance fields
   * (its own or inherited) and a {@code readResolve()}, as Scala's {@code None}, {@code Nil} and
   * empty collections are. Java serialization reads such an object back as what
   * {@code readResolve} returns, which cannot depend on fields it does not have: Cereal writes the
   * header alone and reads back the one instance ({@link #singleton}).
   */
  static boolean isSingleton(Class<?> type) {
    if (!java.io.Serializable.class.isAssignableFrom(type) || type.isArray()
        || type.isPrimitive() || type.isInterface() || type.isEnum()) {
      return false;
    }
    boolean resolves = false;
    for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
      for (Field f : c.getDeclaredFields()) {
        if (!Modifier.isStatic(f.getModifiers())) return false;
      }
      if (!resolves) resolves = readResolve(c) != null;
    }
    return resolves;
  }

  /**
   * The info of a class registered as a singleton although it has fields ({@link
   * Cereal#registerSingleton}): it must be {@code Serializable} with a {@code readResolve()}.
   */
  static ClassInfo singletonOf(Class<?> type, int id) {
    boolean resolves = false;
    for (Class<?> c = type; c != null && c != Object.class && !resolves; c = c.getSuperclass()) {
      resolves = readResolve(c) != null;
    }
    if (!java.io.Serializable.class.isAssignableFrom(type) || !resolves || type.isInterface()
        || type.isArray() || type.isEnum()) {
      throw new IllegalArgumentException(type.getName()
          + " is not a singleton: it needs Serializable and a readResolve()");
    }
    return new ClassInfo(type, SINGLETON, id);
  }

  private static java.lang.reflect.Method readResolve(Class<?> c) {
    try {
      java.lang.reflect.Method m = c.getDeclaredMethod("readResolve");
      return Modifier.isStatic(m.getModifiers()) ? null : m;
    } catch (NoSuchMethodException e) {
      return null;
    }
  }

  /**
   * The instance a SINGLETON class's objects read back as: the class's own {@code MODULE$} (a
   * Scala object), else what {@code readResolve} returns on an instance allocated without a
   * constructor, called once per class. Initializes the class.
   */
  Object singleton() {
    Object s = singleton;
    if (s != null) return s;
    s = resolveSingleton();
    if (s == null) {
      throw new CerealException("cannot read " + type.getName() + ": its singleton is null");
    }
    singleton = s;
    return s;
  }

  private Object resolveSingleton() {
    try {
      Field f = type.getDeclaredField("MODULE$");
      if (Modifier.isStatic(f.getModifiers()) && f.trySetAccessible()) {
        Object o = f.get(null);
        if (type.isInstance(o)) return o;
      }
    } catch (NoSuchFieldException | IllegalAccessException | LinkageError e) {
      // not a Scala object: readResolve below
    }
    for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
      java.lang.reflect.Method m = readResolve(c);
      if (m == null) continue;
      try {
        if (!m.trySetAccessible()) break;
        return m.invoke(UnsafeAccess.U.allocateInstance(type));
      } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
        throw new CerealException("cannot read " + type.getName() + ": readResolve failed ("
            + (e.getCause() != null ? e.getCause() : e) + ")", e);
      }
    }
    throw new CerealException("cannot read " + type.getName()
        + ": its readResolve is not accessible and it has no MODULE$ field");
  }

  private static MethodHandle publicNoArgConstructor(Class<?> type) {
    if (!Modifier.isPublic(type.getModifiers())) return null;
    try {
      return MethodHandles.publicLookup()
          .findConstructor(type, MethodType.methodType(void.class))
          .asType(MethodType.methodType(Object.class));
    } catch (NoSuchMethodException | IllegalAccessException e) {
      return null;
    }
  }

  private record FieldRef(Field field, int depth, int size) {}

  private void computeFields() {
    List<FieldRef> prims = new ArrayList<>();
    List<FieldRef> refs = new ArrayList<>();
    List<Class<?>> chain = new ArrayList<>();
    for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) chain.add(0, c);
    for (int depth = 0; depth < chain.size(); depth++) {
      for (Field f : chain.get(depth).getDeclaredFields()) {
        int m = f.getModifiers();
        if (Modifier.isStatic(m) || Modifier.isTransient(m)) continue;
        Class<?> t = f.getType();
        if (t.isPrimitive()) prims.add(new FieldRef(f, depth, sizeOf(t)));
        else refs.add(new FieldRef(f, depth, 0));
      }
    }
    Comparator<FieldRef> order = Comparator.comparingInt((FieldRef r) -> -r.size())
        .thenComparingInt(FieldRef::depth)
        .thenComparing(r -> r.field().getName());
    prims.sort(order);
    refs.sort(order);
    int n = prims.size();
    primOffsets = new long[n];
    primKinds = new byte[n];
    primPos = new int[n];
    int pos = 0;
    for (int i = 0; i < n; i++) {
      Field f = prims.get(i).field();
      primOffsets[i] = offset(f);
      primKinds[i] = primKind(f.getType());
      primPos[i] = pos;
      pos += prims.get(i).size();
    }
    primWords = (pos + 7) >>> 3;
    wordKinds = new byte[primWords];
    wordOffsets = new long[2 * primWords];
    wordFields = new int[primWords + 1];
    for (int w = 0, k = 0; w < primWords; w++) {
      wordFields[w] = k;
      int from = k;
      while (k < n && primPos[k] < 8 * (w + 1)) k++;
      int count = k - from;
      int size = prims.get(from).size(); // the first is the widest: sizes descend
      if (count == 1 && size == 8) {
        wordKinds[w] = W_LONG;
      } else if (count == 2 && size == 4 && prims.get(from + 1).size() == 4) {
        wordKinds[w] = W_INT2;
        wordOffsets[2 * w + 1] = primOffsets[from + 1];
      } else if (count == 1 && size == 4) {
        wordKinds[w] = W_INT;
      } else {
        wordKinds[w] = W_MIXED;
      }
      wordOffsets[2 * w] = primOffsets[from];
      wordFields[w + 1] = k;
    }
    refCount = refs.size();
    refInfos = new ClassInfo[refCount]; // linked to the registry's layouts by linkRefInfos
    refOffsets = new long[refCount];
    refTypes = new Class<?>[refCount];
    refNames = new String[refCount];
    for (int i = 0; i < refCount; i++) {
      Field f = refs.get(i).field();
      refOffsets[i] = offset(f);
      Class<?> t = f.getType();
      refTypes[i] = t == Object.class ? null : t;
      refNames[i] = f.getDeclaringClass().getSimpleName() + "." + f.getName();
    }
  }

  private long offset(Field f) {
    try {
      return UnsafeAccess.fieldOffset(f);
    } catch (RuntimeException e) {
      throw new CerealException("cannot serialize " + type.getName() + ": no offset for field "
          + f.getName() + " (" + e + ")");
    }
  }

  /** Words an object of this class takes in the layout (header, values and references). */
  int plainWords() {
    return 1 + primWords + refCount;
  }

  static int sizeOf(Class<?> t) {
    if (t == long.class || t == double.class) return 8;
    if (t == int.class || t == float.class) return 4;
    if (t == short.class || t == char.class) return 2;
    return 1;
  }

  static byte primKind(Class<?> t) {
    if (t == long.class) return F_LONG;
    if (t == double.class) return F_DOUBLE;
    if (t == int.class) return F_INT;
    if (t == float.class) return F_FLOAT;
    if (t == short.class) return F_SHORT;
    if (t == char.class) return F_CHAR;
    if (t == byte.class) return F_BYTE;
    return F_BOOLEAN;
  }

  @Override
  public String toString() {
    return type.getName() + "#" + id;
  }
}
