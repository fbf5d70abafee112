package dev.optimus.cereal.spark;

import dev.optimus.cereal.Cereal;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.apache.spark.SparkConf;
import org.apache.spark.serializer.Serializer;
import org.apache.spark.serializer.SerializerInstance;

/**
 * Cereal as a Spark serializer, a drop-in beside {@code JavaSerializer} and {@code KryoSerializer}:
 * {@code spark.serializer=dev.optimus.cereal.spark.CerealSerializer}.
 *
 * <p>Configuration, in the style of Kryo's {@code spark.kryo.*}:
 *
 * <ul>
 *   <li>{@code spark.cereal.classesToRegister} (comma-separated class names, default none):
 *       registered after the defaults of {@link DefaultRegistrations}, in the order given, so every
 *       JVM of the application gives them the same IDs. A registered class is written as a small
 *       ID; an unregistered one by its name in every record that uses it.
 *   <li>{@code spark.cereal.registrationRequired} (default false): with true, writing an instance
 *       of a class that is neither built in, a default, nor listed fails, as with Kryo.
 *   <li>{@code spark.cereal.registerDefaults} (default true): the Scala and Spark classes of
 *       {@link DefaultRegistrations}.
 *   <li>{@code spark.cereal.deserializationThreads} (default 1: Spark already runs one task per
 *       core) and {@code spark.cereal.parallelThreshold} (default 65536 references): the parallel
 *       reference fix-up of large graphs.
 * </ul>
 *
 * <p>Every record (each {@code writeObject}, each key and each value) is one self-contained
 * record of {@link RecordCodec}: a Cereal frame naming the unregistered classes it uses, or, for a
 * graph whose state Cereal would not capture (custom Java serialization, {@code Externalizable},
 * classes Cereal refuses), a length-prefixed Java serialization record. Singletons ({@code None},
 * {@code Nil}, the primitive {@code ClassTag}s) and {@code Class} objects are Cereal's own. No state is carried from one
 * record to the next, so serialized records can be reordered and concatenated:
 * {@link #supportsRelocationOfSerializedObjects()} is true, which lets Spark use its serialized
 * (unsafe) shuffle sorter.
 *
 * <p>The configured {@link Cereal} (its registry) is built once per class loader and shared by all
 * {@link SerializerInstance}s, which are cheap: Spark creates one per task, shuffle writer and
 * block. Instances may be used from any thread for {@code serialize}/{@code deserialize}; their
 * streams, as Spark's contract says, from one thread each.
 */
public class CerealSerializer extends Serializer implements Serializable {
  private static final long serialVersionUID = 1L;

  static final LongAdder CEREAL_RECORDS = new LongAdder();
  static final LongAdder JAVA_RECORDS = new LongAdder();
  static final ConcurrentHashMap<String, LongAdder> JAVA_ROOTS = new ConcurrentHashMap<>();

  private final List<String> classesToRegister;
  private final boolean registrationRequired;
  private final boolean registerDefaults;
  private final int deserializationThreads;
  private final int parallelThreshold;
  private transient volatile ConcurrentHashMap<ClassLoader, RecordCodec> codecs;

  /** The serializer Spark instantiates from {@code spark.serializer}, configured from {@code conf}. */
  public CerealSerializer(SparkConf conf) {
    this(parseList(conf.get("spark.cereal.classesToRegister", "")),
        conf.getBoolean("spark.cereal.registrationRequired", false),
        conf.getBoolean("spark.cereal.registerDefaults", true),
        conf.getInt("spark.cereal.deserializationThreads", 1),
        conf.getInt("spark.cereal.parallelThreshold", 1 << 16));
  }

  CerealSerializer(List<String> classesToRegister, boolean registrationRequired,
      boolean registerDefaults, int deserializationThreads, int parallelThreshold) {
    if (deserializationThreads < 1) {
      throw new IllegalArgumentException("spark.cereal.deserializationThreads must be at least 1");
    }
    if (parallelThreshold < 1) {
      throw new IllegalArgumentException("spark.cereal.parallelThreshold must be at least 1");
    }
    this.classesToRegister = List.copyOf(classesToRegister);
    this.registrationRequired = registrationRequired;
    this.registerDefaults = registerDefaults;
    this.deserializationThreads = deserializationThreads;
    this.parallelThreshold = parallelThreshold;
  }

  private static List<String> parseList(String names) {
    List<String> out = new ArrayList<>();
    for (String n : names.split(",")) {
      if (!n.isBlank()) out.add(n.trim());
    }
    return out;
  }

  @Override
  public SerializerInstance newInstance() {
    return new CerealSerializerInstance(this, codec(loader()));
  }

  /** True: every record is self-contained (see the class comment). */
  @Override
  public boolean supportsRelocationOfSerializedObjects() {
    return true;
  }

  /** Whether unregistered classes are refused. */
  public boolean registrationRequired() {
    return registrationRequired;
  }

  private ClassLoader loader() {
    scala.Option<ClassLoader> d = defaultClassLoader();
    if (d.isDefined()) return d.get();
    ClassLoader context = Thread.currentThread().getContextClassLoader();
    return context != null ? context : CerealSerializer.class.getClassLoader();
  }

  /** The codec (a configured {@link Cereal}) for classes of {@code loader}, built once per loader. */
  RecordCodec codec(ClassLoader loader) {
    ConcurrentHashMap<ClassLoader, RecordCodec> m = codecs;
    if (m == null) {
      synchronized (this) {
        m = codecs;
        if (m == null) codecs = m = new ConcurrentHashMap<>();
      }
    }
    return m.computeIfAbsent(loader, this::configure);
  }

  private RecordCodec configure(ClassLoader loader) {
    Cereal cereal = new Cereal();
    cereal.setClassLoader(loader);
    cereal.setRegistrationRequired(registrationRequired);
    cereal.setDeserializationThreads(deserializationThreads);
    cereal.setParallelThreshold(parallelThreshold);
    if (registerDefaults) DefaultRegistrations.register(cereal, loader);
    for (String name : classesToRegister) {
      Class<?> type;
      try {
        type = Class.forName(name, false, loader);
      } catch (ClassNotFoundException e) {
        throw new IllegalArgumentException("spark.cereal.classesToRegister: class " + name
            + " not found", e);
      }
      if (RecordCodec.keepsStateOutsideFields(type)) {
        throw new IllegalArgumentException("spark.cereal.classesToRegister: " + name
            + " keeps state Cereal does not write (custom Java serialization, readResolve with "
            + "fields, or writeReplace); leave it unregistered and it is written with Java "
            + "serialization");
      }
      cereal.register(type);
    }
    return new RecordCodec(cereal, loader, registrationRequired);
  }

  /**
   * Records written since the JVM started (or {@link #resetRecordCounts()}): {@code [cereal,
   * java]}, Cereal frames and Java-serialization fallbacks, over all instances of this JVM.
   */
  public static long[] recordCounts() {
    return new long[] {CEREAL_RECORDS.sum(), JAVA_RECORDS.sum()};
  }

  /** The root classes of the Java-serialization records since the last reset, with counts. */
  public static String javaRecordClasses() {
    return new java.util.TreeMap<>(JAVA_ROOTS).toString();
  }

  /** Sets {@link #recordCounts()} to 0 and forgets {@link #javaRecordClasses()}. */
  public static void resetRecordCounts() {
    CEREAL_RECORDS.reset();
    JAVA_RECORDS.reset();
    JAVA_ROOTS.clear();
  }
}
