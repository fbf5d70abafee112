package dev.optimus.cereal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.reflect.Field;
import java.nio.ByteOrder;

/**
 * Raw field and memory access for the hot paths: {@code sun.misc.Unsafe} (module jdk.unsupported,
 * reachable without {@code --add-opens}), as Kryo's unsafe I/O and Skyway use it.
 *
 * <p>Why not VarHandles for the fields: a serializer holds one handle per field in a table, so
 * every access is through a non-constant handle, which the JIT cannot fold; each then costs a
 * receiver cast and an indirect call. {@code Unsafe.getInt(obj, offset)} with an offset from the
 * table is one load. Field offsets are taken once per class ({@link ClassInfo}); nothing on the
 * hot path reflects. Instances are made by {@code allocateInstance}, without running a
 * constructor, as Objenesis does on HotSpot; that is what lets the reader allocate every object
 * of a graph before any reference in it is known (pass 1). Safety rests on two rules kept by
 * every caller: an offset comes only from {@code objectFieldOffset} of a field of the object's
 * own class or a superclass, and a reference is stored into a field only after a type check
 * against the field's declared type ({@link ClassInfo#refTypes}).
 *
 * <p>Words of the value array are little-endian; they are read and written through
 * {@link MethodHandles#byteArrayViewVarHandle} views held in static finals (constant, so these
 * do compile to plain loads and stores). Primitive arrays are copied in bulk with
 * {@code copyMemory} on a little-endian machine and element by element elsewhere.
 */
final class UnsafeAccess {
  private UnsafeAccess() {}

  static final sun.misc.Unsafe U;

  static {
    try {
      Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      U = (sun.misc.Unsafe) f.get(null);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;
  static final long BYTE_BASE = U.arrayBaseOffset(byte[].class);

  static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  static final VarHandle INT_LE =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  static final VarHandle SHORT_LE =
      MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);

  static long getLong(byte[] b, int pos) {
    return (long) LONG_LE.get(b, pos);
  }

  static void putLong(byte[] b, int pos, long v) {
    LONG_LE.set(b, pos, v);
  }

  static int getInt(byte[] b, int pos) {
    return (int) INT_LE.get(b, pos);
  }

  static void putInt(byte[] b, int pos, int v) {
    INT_LE.set(b, pos, v);
  }

  static short getShort(byte[] b, int pos) {
    return (short) SHORT_LE.get(b, pos);
  }

  static void putShort(byte[] b, int pos, short v) {
    SHORT_LE.set(b, pos, v);
  }

  /** The Unsafe offset of a declared instance field; fails for records and hidden classes. */
  static long fieldOffset(Field f) {
    return U.objectFieldOffset(f);
  }
}
