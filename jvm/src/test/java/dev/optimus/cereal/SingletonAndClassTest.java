package dev.optimus.cereal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Serialization singletons (no instance fields and a {@code readResolve}: read back as the one
 * instance) and {@code Class} objects (written by name).
 */
class SingletonAndClassTest {
  /** A singleton resolved through readResolve, which counts its calls. */
  static final class Unit implements Serializable {
    static final Unit INSTANCE = new Unit();
    static final AtomicInteger RESOLVES = new AtomicInteger();

    private Unit() {}

    private Object readResolve() {
      RESOLVES.incrementAndGet();
      return INSTANCE;
    }
  }

  /** A Scala-style object: its MODULE$ is the instance; its readResolve must not be needed. */
  static final class Module implements Serializable {
    public static final Module MODULE$ = new Module();
    static final AtomicInteger RESOLVES = new AtomicInteger();

    private Module() {}

    private Object readResolve() {
      RESOLVES.incrementAndGet();
      return MODULE$;
    }
  }

  /** A subclass without fields of a class that has readResolve: a singleton too. */
  static class EmptyBase implements Serializable {
    static final EmptyBase INSTANCE = new EmptyBase();

    Object readResolve() {
      return INSTANCE;
    }
  }

  /** Has readResolve but also state: not a singleton, written by its fields. */
  static final class WithState implements Serializable {
    int x;

    Object readResolve() {
      return this;
    }
  }

  /** No fields but not Serializable: readResolve means nothing, so a plain (empty) object. */
  static final class NotSerializable {
    static final NotSerializable INSTANCE = new NotSerializable();

    Object readResolve() {
      return INSTANCE;
    }
  }

  /** State, but a readResolve that ignores it (as Scala's Manifest.Int does). */
  static final class Constant implements Serializable {
    static final Constant INSTANCE = new Constant("the one");
    final String name;

    Constant(String name) {
      this.name = name;
    }

    private Object readResolve() {
      return INSTANCE;
    }
  }

  static final class Holder {
    Object any;
    Unit unit;
    Module module;
    Class<?> type;
    Object[] more;
  }

  private static Cereal cereal() {
    Cereal c = new Cereal();
    c.register(Unit.class);
    c.register(Module.class);
    c.register(EmptyBase.class);
    c.register(WithState.class);
    c.register(NotSerializable.class);
    c.register(Holder.class);
    c.register(Holder[].class);
    return c;
  }

  @Test
  void singletonsAreDetectedByTheirFieldsAndReadResolve() {
    assertTrue(Cereal.isSingletonClass(Unit.class));
    assertTrue(Cereal.isSingletonClass(Module.class));
    assertTrue(Cereal.isSingletonClass(EmptyBase.class));
    assertFalse(Cereal.isSingletonClass(WithState.class));
    assertFalse(Cereal.isSingletonClass(NotSerializable.class));
    assertFalse(Cereal.isSingletonClass(String.class));
  }

  @Test
  void singletonsReadBackAsTheirInstanceWherever() {
    Cereal c = cereal();
    // An instance made without the constructor is not the singleton; it reads back as it.
    Unit stray = (Unit) allocate(Unit.class);
    Holder h = new Holder();
    h.any = Module.MODULE$;
    h.unit = stray;
    h.module = Module.MODULE$;
    h.more = new Object[] {stray, Unit.INSTANCE, EmptyBase.INSTANCE, allocate(EmptyBase.class),
        List.of(Module.MODULE$), Map.of("k", Unit.INSTANCE)};
    int before = Unit.RESOLVES.get();
    for (int i = 0; i < 5; i++) {
      Holder back = (Holder) c.deserialize(c.serialize(h));
      assertSame(Module.MODULE$, back.any);
      assertSame(Unit.INSTANCE, back.unit);
      assertSame(Module.MODULE$, back.module);
      assertSame(Unit.INSTANCE, back.more[0]);
      assertSame(Unit.INSTANCE, back.more[1]);
      assertSame(EmptyBase.INSTANCE, back.more[2]);
      assertSame(EmptyBase.INSTANCE, back.more[3]);
      assertSame(Module.MODULE$, ((List<?>) back.more[4]).get(0));
      assertSame(Unit.INSTANCE, ((Map<?, ?>) back.more[5]).get("k"));
    }
    assertSame(Unit.INSTANCE, c.deserialize(c.serialize(Unit.INSTANCE)));
    assertEquals(1, Unit.RESOLVES.get() - before, "readResolve is called once per class");
    assertEquals(0, Module.RESOLVES.get(), "a MODULE$ field is used as it is");
  }

  @Test
  void readResolveWithStateIsNotASingleton() {
    Cereal c = cereal();
    WithState w = new WithState();
    w.x = 42;
    WithState back = (WithState) c.deserialize(c.serialize(w));
    assertNotSame(w, back);
    assertEquals(42, back.x);
    Object n = c.deserialize(c.serialize(NotSerializable.INSTANCE));
    assertNotSame(NotSerializable.INSTANCE, n);
  }

  @Test
  void registeredSingletonWithFields() {
    Cereal plain = cereal();
    plain.register(Constant.class);
    assertFalse(plain.writesAsSingleton(Constant.class));
    Constant other = new Constant("other");
    Constant copy = (Constant) plain.deserialize(plain.serialize(other));
    assertEquals("other", copy.name, "by default a class with fields is written by them");

    Cereal c = cereal();
    int id = c.registerSingleton(Constant.class);
    assertEquals(id, c.registerSingleton(Constant.class));
    assertTrue(c.writesAsSingleton(Constant.class));
    assertTrue(c.writesAsSingleton(Unit.class));
    assertFalse(c.writesAsSingleton(WithState.class));
    Object[] back = (Object[]) c.deserialize(c.serialize(new Object[] {other, Constant.INSTANCE}));
    assertSame(Constant.INSTANCE, back[0]);
    assertSame(Constant.INSTANCE, back[1]);
    // Compact frame: magic, version, flags, length; no names, 2 value words, 2 references; the
    // array's header, the singleton's; one bucket of width 1.
    assertEquals(4 + 3 + 8 + 8 + 3, c.serialize(new Object[] {other, other}).length,
        "the header alone, not its fields");
    assertThrows(IllegalArgumentException.class, () -> c.registerSingleton(Holder.class));
    assertThrows(IllegalArgumentException.class, () -> c.registerSingleton(String.class));
  }

  @Test
  void singletonNamedInAStream() throws IOException {
    Cereal w = new Cereal();
    w.setRegistrationRequired(false);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (CerealOutput out = w.newOutput(bytes)) {
      out.writeObject(new Object[] {Unit.INSTANCE, Module.MODULE$});
      out.writeObject(Module.MODULE$);
    }
    Cereal r = new Cereal();
    r.setRegistrationRequired(false);
    try (CerealInput in = r.newInput(new ByteArrayInputStream(bytes.toByteArray()))) {
      Object[] a = (Object[]) in.readObject();
      assertSame(Unit.INSTANCE, a[0]);
      assertSame(Module.MODULE$, a[1]);
      assertSame(Module.MODULE$, in.readObject());
    }
  }

  @Test
  void singletonFrameBytes() {
    Cereal c = new Cereal();
    c.setCompactFrames(false); // the full frame (the compact one: CompactFrameTest)
    c.register(Unit.class); // ID 32
    String expected = String.join("",
        "ce0100", "22", // body of 34 bytes
        "00", "02", "02", "02", "03", "09", // no names, 2 objects, 2 value words, 2 refs, 3 + 9 bytes
        "1200000002000000", // word 0: Object[] (ID 18) of 2
        // words 1, 2: the array's references
        "2000000000000000", // word 3: Unit, ID 32, the header alone
        "01" + "04" + "02", // width 1: zigzag(3 - 1), zigzag(3 - 2)
        "01" + "0600000000000000"); // bitmap: bits 1, 2
    byte[] frame = c.serialize(new Object[] {Unit.INSTANCE, Unit.INSTANCE});
    assertEquals(expected, HexFormat.of().formatHex(frame));
    Object[] back = (Object[]) c.deserialize(frame);
    assertSame(Unit.INSTANCE, back[0]);
    assertSame(back[0], back[1]);
    // A singleton's header must have a zero high word.
    frame[22] = 1;
    assertThrows(CerealException.class, () -> c.deserialize(frame));
  }

  @Test
  void classObjectsByName() {
    Cereal c = cereal();
    Holder h = new Holder();
    h.type = String.class;
    h.more = new Object[] {int.class, void.class, int[][].class, Holder.class, Holder[].class,
        Object.class, Object[].class, Class.class, String.class, Unit.class};
    Holder back = (Holder) c.deserialize(c.serialize(h));
    assertSame(String.class, back.type);
    for (int i = 0; i < h.more.length; i++) assertSame(h.more[i], back.more[i]);
    assertSame(back.type, back.more[8], "one String.class object, shared");
    assertSame(Holder.class, c.deserialize(c.serialize(Holder.class)));
  }

  @Test
  void classFrameBytes() {
    String expected = String.join("",
        "ce0100", "17", // body of 23 bytes
        "00", "01", "02", "00", "00", "01", // no names, 1 object, 2 value words, no references
        "ffffff0006000000", // Class (ID 2^24 - 1), 3 chars << 1, Latin-1
        "696e740000000000", // "int"
        "00"); // bitmap: one empty block
    Cereal full = new Cereal();
    full.setCompactFrames(false); // the full frame (the compact one: CompactFrameTest)
    byte[] frame = full.serialize(int.class);
    assertEquals(expected, HexFormat.of().formatHex(frame));
    assertSame(int.class, new Cereal().deserialize(frame));
    frame[19] = (byte) 'x'; // "ixt"
    CerealException e = assertThrows(CerealException.class, () -> new Cereal().deserialize(frame));
    assertTrue(e.getMessage().contains("ixt"), e.getMessage());
  }

  @Test
  void classObjectsOfUnregisteredClassesNeedRegistrationOptional() {
    Cereal required = cereal();
    CerealException e = assertThrows(CerealException.class, () -> required.serialize(UUID.class));
    assertTrue(e.getMessage().contains("java.util.UUID"), e.getMessage());
    assertThrows(CerealException.class, () -> required.serialize(new Object[] {UUID[].class}));

    Cereal open = cereal();
    open.setRegistrationRequired(false);
    byte[] frame = open.serialize(new Object[] {UUID.class, UUID[].class});
    Object[] back = (Object[]) open.deserialize(frame);
    assertSame(UUID.class, back[0]);
    assertSame(UUID[].class, back[1]);
    // A reader that requires registration refuses the name (before loading anything).
    e = assertThrows(CerealException.class, () -> required.deserialize(frame));
    assertTrue(e.getMessage().contains("not registered"), e.getMessage());
    // Hidden classes (lambdas) cannot be found by name.
    Runnable lambda = () -> {};
    assertThrows(CerealException.class, () -> open.serialize(lambda.getClass()));
  }

  @Test
  void unknownClassNameIsCorrupt() {
    Cereal open = new Cereal();
    open.setRegistrationRequired(false);
    byte[] frame = open.serialize(Holder.class);
    String hex = HexFormat.of().formatHex(frame);
    // Rename the class in place: same length, a class that does not exist.
    String name = HexFormat.of().formatHex(Holder.class.getName().getBytes());
    byte[] bad = HexFormat.of().parseHex(hex.replace(name, name.replace("48", "58")));
    CerealException e = assertThrows(CerealException.class, () -> open.deserialize(bad));
    assertTrue(e.getMessage().contains("unknown class"), e.getMessage());
  }

  private static Object allocate(Class<?> type) {
    try {
      return UnsafeAccess.U.allocateInstance(type);
    } catch (InstantiationException e) {
      throw new AssertionError(e);
    }
  }
}
