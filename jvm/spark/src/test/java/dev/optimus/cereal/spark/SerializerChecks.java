package dev.optimus.cereal.spark;

import dev.optimus.cereal.CerealException;
import dev.optimus.cereal.spark.jobs.Model;
import dev.optimus.cereal.spark.jobs.Model.Page;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Date;
import java.util.List;
import java.util.Random;
import org.apache.spark.SparkConf;
import org.apache.spark.serializer.DeserializationStream;
import org.apache.spark.serializer.SerializationStream;
import org.apache.spark.serializer.Serializer;
import org.apache.spark.serializer.SerializerInstance;
import org.apache.spark.util.collection.CompactBuffer;
import scala.Option;
import scala.Tuple2;
import scala.Tuple3;
import scala.collection.JavaConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Checks of {@link CerealSerializer} against Spark's serializer contract, run inside the Spark
 * JVM by tests/spark (each check a method that throws {@link AssertionError} on failure):
 * round trips of Scala and Spark classes, streams and their end, relocation of records,
 * registration, the Java fallback, corrupt input, and the serializer's own serializability.
 */
public final class SerializerChecks {
  private SerializerChecks() {}

  public static final List<String> CHECKS = List.of("scalaAndSparkClasses", "streamsAndEnd",
      "relocation", "registrationRequired", "javaFallback", "corruptInput", "serializerIsSerializable",
      "directBuffers");

  /** The checks' names, comma-separated (for Python). */
  public static String names() {
    return String.join(",", CHECKS);
  }

  /** Runs the check {@code name}; returns a short description of what it checked. */
  public static String run(String name) throws Exception {
    switch (name) {
      case "scalaAndSparkClasses": return scalaAndSparkClasses();
      case "streamsAndEnd": return streamsAndEnd();
      case "relocation": return relocation();
      case "registrationRequired": return registrationRequired();
      case "javaFallback": return javaFallback();
      case "corruptInput": return corruptInput();
      case "serializerIsSerializable": return serializerIsSerializable();
      case "directBuffers": return directBuffers();
      default: throw new IllegalArgumentException("unknown check " + name);
    }
  }

  private static final ClassTag<Object> ANY = ClassTag$.MODULE$.Any();

  /** A Java record: Cereal has no field offsets for it, so it goes to Java serialization. */
  record Pair(String name, int value) implements java.io.Serializable {}

  static CerealSerializer serializer(String... settings) {
    SparkConf conf = new SparkConf(false);
    for (int i = 0; i < settings.length; i += 2) conf.set(settings[i], settings[i + 1]);
    return new CerealSerializer(conf);
  }

  static void check(boolean ok, String what) {
    if (!ok) throw new AssertionError(what);
  }

  static Object roundTrip(SerializerInstance s, Object o) {
    return s.deserialize(s.serialize(o, ANY), ANY);
  }

  static Page page(int id, int links) {
    Page p = new Page(id, "u" + id);
    for (int i = 0; i < links; i++) p.links.add(i * id);
    return p;
  }

  @SuppressWarnings("unchecked")
  static List<Object> samples() {
    CompactBuffer<Object> buffer = new CompactBuffer<>(ANY);
    for (int i = 0; i < 5; i++) buffer.$plus$eq("v" + i);
    scala.collection.mutable.ArrayBuffer<Object> ab = new scala.collection.mutable.ArrayBuffer<>();
    ab.$plus$eq(1);
    ab.$plus$eq("two");
    scala.collection.immutable.List<Object> list =
        JavaConverters.asScalaBuffer(new ArrayList<Object>(List.of(1, 2, 3))).toList();
    List<Object> out = new ArrayList<>();
    out.add(new Tuple2<>("key", 42));
    out.add(new Tuple3<>(1L, 2.5, "three"));
    out.add(new Tuple2<>(7, page(7, 3)));
    out.add(Option.apply("some"));
    out.add(Option.empty());
    out.add(list);
    out.add(scala.collection.immutable.Nil$.MODULE$);
    out.add(new Tuple2<>(list, Option.empty()));
    out.add(list.toVector());
    out.add(ab);
    out.add(buffer);
    out.add(new Tuple2<>("grouped", buffer));
    out.add(scala.Predef.wrapIntArray(new int[] {1, 2, 3}));
    out.add(new org.apache.spark.util.MutablePair<>("a", 1));
    out.add(new int[] {4, 5});
    out.add(null);
    return out;
  }

  static boolean same(Object a, Object b) {
    if (a instanceof int[] x && b instanceof int[] y) return Arrays.equals(x, y);
    if (a instanceof org.apache.spark.util.MutablePair<?, ?> x
        && b instanceof org.apache.spark.util.MutablePair<?, ?> y) {
      return x._1().equals(y._1()) && x._2().equals(y._2());
    }
    return java.util.Objects.equals(a, b);
  }

  static String scalaAndSparkClasses() {
    SerializerInstance s = serializer().newInstance();
    int n = 0;
    long[] before = CerealSerializer.recordCounts();
    for (Object o : samples()) {
      Object back = roundTrip(s, o);
      check(same(o, back), "round trip of " + o + " gave " + back);
      n++;
    }
    long[] after = CerealSerializer.recordCounts();
    // None, Nil, lists, ClassTags inside CompactBuffers: all Cereal's own now.
    check(after[1] == before[1], (after[1] - before[1]) + " samples went to Java serialization: "
        + CerealSerializer.javaRecordClasses());
    check(after[0] - before[0] == n, "Cereal records: " + (after[0] - before[0]) + " of " + n);
    // ClassTags come back as the canonical ones (Manifest's readResolve).
    check(roundTrip(s, ANY) == ANY, "ClassTag.Any is not ClassTag.Any");
    check(roundTrip(s, ClassTag$.MODULE$.Int()) == ClassTag$.MODULE$.Int(), "ClassTag.Int");
    CompactBuffer<?> cb = (CompactBuffer<?>) roundTrip(s, new CompactBuffer<>(ClassTag$.MODULE$.AnyRef()));
    check(cb.size() == 0, "empty CompactBuffer");
    Object tag = roundTrip(s, ClassTag$.MODULE$.apply(Page.class));
    check(tag.equals(ClassTag$.MODULE$.apply(Page.class)), "ClassTag of a user class: " + tag);
    check(CerealSerializer.recordCounts()[1] == before[1], "ClassTags went to Java serialization");
    // Singletons stay singletons (Java's readResolve), wherever they are.
    check(roundTrip(s, Option.empty()) == scala.None$.MODULE$, "None is not None");
    Object t = roundTrip(s, new Tuple2<>(Option.empty(), scala.collection.immutable.Nil$.MODULE$));
    check(((Tuple2<?, ?>) t)._1() == scala.None$.MODULE$, "nested None is not None");
    check(((Tuple2<?, ?>) t)._2() == scala.collection.immutable.Nil$.MODULE$, "nested Nil is not Nil");
    // Scala's list operations compare with Nil by identity.
    Object l = roundTrip(s, JavaConverters.asScalaBuffer(new ArrayList<Object>(List.of(1, 2))).toList());
    check(((scala.collection.immutable.List<?>) l).length() == 2, "list length");
    return n + " Scala/Spark objects";
  }

  static byte[] writeAll(SerializerInstance s, List<?> records) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    SerializationStream out = s.serializeStream(bytes);
    for (Object r : records) out.writeObject(r, ANY);
    out.flush();
    out.close();
    return bytes.toByteArray();
  }

  static List<Object> readAll(SerializerInstance s, byte[] b) {
    List<Object> back = new ArrayList<>();
    scala.collection.Iterator<Object> it = s.deserializeStream(new ByteArrayInputStream(b)).asIterator();
    while (it.hasNext()) back.add(it.next());
    return back;
  }

  static String streamsAndEnd() throws Exception {
    SerializerInstance s = serializer().newInstance();
    List<Object> records = new ArrayList<>();
    Random r = new Random(1);
    for (int i = 0; i < 2000; i++) {
      records.add(i % 3 == 0 ? new Tuple2<>("k" + r.nextInt(100), page(i, r.nextInt(5)))
          : i % 3 == 1 ? page(i, 2) : "s" + i);
    }
    records.addAll(samples());
    List<Object> back = readAll(s, writeAll(s, records));
    check(back.size() == records.size(), "read " + back.size() + " of " + records.size());
    for (int i = 0; i < records.size(); i++) {
      check(same(records.get(i), back.get(i)), "record " + i + ": " + records.get(i) + " vs " + back.get(i));
    }
    // Keys and values as Spark's shuffle writes them.
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    SerializationStream out = s.serializeStream(bytes);
    for (int i = 0; i < 100; i++) out.writeKey(i, ANY).writeValue(page(i, 1), ANY);
    out.close();
    scala.collection.Iterator<Tuple2<Object, Object>> kv =
        s.deserializeStream(new ByteArrayInputStream(bytes.toByteArray())).asKeyValueIterator();
    int n = 0;
    while (kv.hasNext()) {
      Tuple2<Object, Object> e = kv.next();
      check(e._1().equals(n) && e._2().equals(page(n, 1)), "pair " + n);
      n++;
    }
    check(n == 100, "pairs " + n);
    // An empty stream is an empty iterator; readObject past the end is an EOFException.
    check(!readAll(s, new byte[0]).iterator().hasNext(), "empty stream");
    DeserializationStream in = s.deserializeStream(new ByteArrayInputStream(writeAll(s, List.of("x"))));
    check("x".equals(in.readObject(ANY)), "one record");
    try {
      in.readObject(ANY);
      throw new AssertionError("no EOFException at the end");
    } catch (Exception e) {
      check(e instanceof EOFException, "end of stream gave " + e);
    }
    // Records are buffered: flush hands every one of them to the underlying stream, byte for
    // byte what serialize gives each, and a record that fails leaves nothing behind.
    SerializerInstance strict = serializer("spark.cereal.registrationRequired", "true").newInstance();
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    SerializationStream so = strict.serializeStream(sink);
    ByteArrayOutputStream expected = new ByteArrayOutputStream();
    for (int i = 0; i < 3000; i++) {
      Object rec = i % 2 == 0 ? "r" + i : new Tuple2<>(i, (long) i);
      so.writeObject(rec, ANY);
      ByteBuffer one = strict.serialize(rec, ANY);
      expected.write(one.array(), one.arrayOffset() + one.position(), one.remaining());
      if (i == 1500) {
        try {
          so.writeObject(page(1, 2), ANY); // Page is not registered
          throw new AssertionError("an unregistered class was written");
        } catch (CerealException e) {
          // refused, and the stream goes on
        }
      }
    }
    so.flush();
    check(Arrays.equals(sink.toByteArray(), expected.toByteArray()),
        "flushed " + sink.size() + " bytes, the records take " + expected.size());
    List<Object> again = readAll(strict, sink.toByteArray());
    check(again.size() == 3000 && again.get(2999).equals(new Tuple2<>(2999, 2999L)),
        "records after a refused one: " + again.size());
    return records.size() + " records, 100 pairs, 3000 buffered";
  }

  static String relocation() {
    CerealSerializer ser = serializer("spark.cereal.classesToRegister", "");
    check(ser.supportsRelocationOfSerializedObjects(), "relocation");
    SerializerInstance s = ser.newInstance();
    // Unregistered user classes are named in every record, so records can move.
    List<Object> records = new ArrayList<>();
    for (int i = 0; i < 300; i++) records.add(i % 2 == 0 ? page(i, 3) : new Tuple2<>(i, Option.empty()));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    SerializationStream out = s.serializeStream(bytes);
    List<Integer> ends = new ArrayList<>();
    for (Object r : records) {
      out.writeObject(r, ANY);
      out.flush();
      ends.add(bytes.size());
    }
    byte[] all = bytes.toByteArray();
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < records.size(); i++) order.add(i);
    Collections.shuffle(order, new Random(3));
    ByteArrayOutputStream moved = new ByteArrayOutputStream();
    for (int i : order) {
      int start = i == 0 ? 0 : ends.get(i - 1);
      moved.write(all, start, ends.get(i) - start);
    }
    List<Object> back = readAll(s, moved.toByteArray());
    check(back.size() == records.size(), "relocated count");
    for (int k = 0; k < order.size(); k++) {
      check(same(records.get(order.get(k)), back.get(k)), "relocated record " + k);
    }
    return records.size() + " records reordered";
  }

  static String registrationRequired() {
    SerializerInstance strict = serializer("spark.cereal.registrationRequired", "true").newInstance();
    try {
      strict.serialize(page(1, 1), ANY);
      throw new AssertionError("an unregistered class was written");
    } catch (CerealException e) {
      check(e.getMessage().contains("not registered"), e.getMessage());
    }
    SerializerInstance registered = serializer("spark.cereal.registrationRequired", "true",
        "spark.cereal.classesToRegister", Model.classNames()).newInstance();
    check(roundTrip(registered, new Tuple2<>(1, page(1, 2))).equals(new Tuple2<>(1, page(1, 2))),
        "registered round trip");
    // Registered classes cost an ID, not a name: the record is smaller.
    int named = serializer().newInstance().serialize(page(1, 2), ANY).remaining();
    int byId = registered.serialize(page(1, 2), ANY).remaining();
    check(byId < named, "registered " + byId + " bytes, named " + named);
    try {
      serializer("spark.cereal.classesToRegister", "no.such.Class").newInstance();
      throw new AssertionError("a missing class was accepted");
    } catch (IllegalArgumentException e) {
      check(e.getMessage().contains("no.such.Class"), e.getMessage());
    }
    return "unregistered refused, registered " + byId + " vs named " + named + " bytes";
  }

  static String javaFallback() {
    SerializerInstance s = serializer().newInstance();
    long[] before = CerealSerializer.recordCounts();
    // Date keeps its time in a transient field written by writeObject; a Java record has no
    // field offsets for Cereal.
    Date d = new Date(1234567890123L);
    check(d.equals(roundTrip(s, d)), "Date");
    Object nested = roundTrip(s, new Tuple2<>("when", d));
    check(((Tuple2<?, ?>) nested)._2().equals(d), "nested Date");
    check(roundTrip(s, new Pair("x", 3)).equals(new Pair("x", 3)), "a Java record");
    long[] after = CerealSerializer.recordCounts();
    check(after[1] - before[1] == 3, "Java records: " + (after[1] - before[1]));
    // What used to go to Java and no longer does: Class objects, singletons, ClassTags.
    check(roundTrip(s, String.class) == String.class, "a Class");
    check(((Tuple2<?, ?>) roundTrip(s, new Tuple2<>(Page.class, int[].class)))._1() == Page.class, "nested Class");
    check(roundTrip(s, scala.None$.MODULE$) == scala.None$.MODULE$, "None");
    check(roundTrip(s, scala.collection.immutable.Nil$.MODULE$) == scala.collection.immutable.Nil$.MODULE$, "Nil");
    check(roundTrip(s, scala.runtime.BoxedUnit.UNIT) == scala.runtime.BoxedUnit.UNIT, "()");
    long[] last = CerealSerializer.recordCounts();
    check(last[1] == after[1] && last[0] - after[0] == 5, "Cereal records: " + (last[0] - after[0])
        + ", Java records: " + (last[1] - after[1]));
    // Registration of such a class is refused with a clear message.
    try {
      serializer("spark.cereal.classesToRegister", "java.util.Date").newInstance();
      throw new AssertionError("Date was registered");
    } catch (IllegalArgumentException e) {
      check(e.getMessage().contains("Java serialization"), e.getMessage());
    }
    return "3 Java records";
  }

  static String corruptInput() {
    SerializerInstance s = serializer().newInstance();
    byte[] good = writeAll(s, List.of(page(1, 3), new Tuple2<>("a", new Date(5)), "tail"));
    int errors = 0;
    for (int cut = 1; cut < good.length; cut++) {
      try {
        readAll(s, Arrays.copyOf(good, cut));
      } catch (CerealException e) {
        errors++;
      }
    }
    // Every cut inside a record is an error, never a silent short read (cuts between records
    // are clean ends).
    check(errors >= good.length - 3, "cuts reported " + errors + " of " + (good.length - 1));
    try {
      readAll(s, new byte[] {0x12, 0x34});
      throw new AssertionError("garbage read");
    } catch (CerealException e) {
      check(e.getMessage().contains("not a Cereal or Java record"), e.getMessage());
    }
    return errors + " truncations reported";
  }

  static String serializerIsSerializable() throws Exception {
    CerealSerializer ser = serializer("spark.cereal.classesToRegister", Model.classNames());
    ser.newInstance().serialize("warm", ANY);
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (ObjectOutputStream o = new ObjectOutputStream(b)) {
      o.writeObject(ser);
    }
    Serializer copy;
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(b.toByteArray()))) {
      copy = (Serializer) in.readObject();
    }
    SerializerInstance a = ser.newInstance();
    SerializerInstance c = copy.newInstance();
    ByteBuffer bytes = a.serialize(new Tuple2<>(3, page(3, 3)), ANY);
    check(c.deserialize(bytes, ANY).equals(new Tuple2<>(3, page(3, 3))), "copy reads the original's records");
    return "copied serializer agrees on IDs";
  }

  static String directBuffers() {
    SerializerInstance s = serializer().newInstance();
    ByteBuffer heap = s.serialize(new Tuple2<>("k", page(9, 4)), ANY);
    ByteBuffer direct = ByteBuffer.allocateDirect(heap.remaining() + 3);
    direct.put(new byte[] {9, 9, 9});
    direct.put(heap.duplicate());
    direct.flip();
    direct.position(3);
    check(s.deserialize(direct, ANY).equals(new Tuple2<>("k", page(9, 4))), "direct buffer");
    ByteBuffer sliced = ByteBuffer.wrap(new byte[heap.remaining() + 2], 2, heap.remaining()).slice();
    sliced.put(heap.duplicate()).flip();
    check(s.deserialize(sliced, ANY).equals(new Tuple2<>("k", page(9, 4))), "offset heap buffer");
    return "direct and offset buffers";
  }
}
