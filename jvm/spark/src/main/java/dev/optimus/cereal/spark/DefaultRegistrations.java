package dev.optimus.cereal.spark;

import dev.optimus.cereal.Cereal;
import dev.optimus.cereal.CerealException;
import java.util.List;

/**
 * The Scala and Spark classes {@link CerealSerializer} registers before the user's, as Spark's
 * {@code KryoSerializer} registers its own and Twitter chill's Scala classes: classes that Spark
 * jobs put into shuffled, cached and collected records. Registered, a class is written as a small
 * ID instead of its name in every record.
 *
 * <p>IDs follow this list's order. A class that is missing from the class path, or that Cereal
 * cannot lay out, or whose state is outside its fields ({@link
 * RecordCodec#keepsStateOutsideFields}: singletons such as {@code None} and {@code Nil}, Spark's
 * {@code Externalizable} classes) is skipped; that depends only on the jars, which are the same
 * on every JVM of an application, so every JVM gives every class the same ID.
 */
final class DefaultRegistrations {
  private DefaultRegistrations() {}

  static final List<String> CLASSES = List.of(
      // Scala: tuples, options, eithers.
      "scala.Tuple1", "scala.Tuple2", "scala.Tuple3", "scala.Tuple4", "scala.Tuple5",
      "scala.Some", "scala.util.Left", "scala.util.Right",
      // Arrays of them and of boxes: collect() returns arrays of the records.
      "[Lscala.Tuple2;", "[Lscala.Tuple3;", "[Ljava.lang.Integer;", "[Ljava.lang.Long;",
      "[Ljava.lang.Double;", "[Ljava.lang.Float;", "[Ljava.lang.Boolean;", "[[B", "[[I", "[[J",
      "[[D",
      // Scala immutable collections (Nil, the empty maps and sets are singletons: not here).
      "scala.collection.immutable.$colon$colon",
      "scala.collection.immutable.Map$Map1", "scala.collection.immutable.Map$Map2",
      "scala.collection.immutable.Map$Map3", "scala.collection.immutable.Map$Map4",
      "scala.collection.immutable.Set$Set1", "scala.collection.immutable.Set$Set2",
      "scala.collection.immutable.Set$Set3", "scala.collection.immutable.Set$Set4",
      "scala.collection.immutable.Vector", "scala.collection.immutable.Range",
      "scala.collection.immutable.Range$Inclusive",
      // Scala mutable collections and array wrappers.
      "scala.collection.mutable.ArrayBuffer",
      "scala.collection.mutable.WrappedArray$ofRef", "scala.collection.mutable.WrappedArray$ofInt",
      "scala.collection.mutable.WrappedArray$ofLong", "scala.collection.mutable.WrappedArray$ofDouble",
      "scala.collection.mutable.WrappedArray$ofFloat", "scala.collection.mutable.WrappedArray$ofShort",
      "scala.collection.mutable.WrappedArray$ofChar", "scala.collection.mutable.WrappedArray$ofByte",
      "scala.collection.mutable.WrappedArray$ofBoolean",
      // Spark's own record types.
      "org.apache.spark.util.collection.CompactBuffer",
      "org.apache.spark.util.collection.BitSet",
      "org.apache.spark.util.MutablePair",
      "org.apache.spark.util.StatCounter",
      "org.apache.spark.util.random.XORShiftRandom",
      // JDK classes beyond Cereal's built-ins.
      "java.util.UUID", "java.util.Optional", "java.util.concurrent.ConcurrentHashMap",
      "java.util.Collections$UnmodifiableRandomAccessList", "java.util.Arrays$ArrayList",
      "java.util.AbstractMap$SimpleEntry", "java.util.AbstractMap$SimpleImmutableEntry",
      "java.time.LocalDate", "java.time.Instant", "java.sql.Date", "java.sql.Timestamp",
      "java.math.BigInteger", "java.math.BigDecimal", "java.util.BitSet");

  /** Registers every class of {@link #CLASSES} that {@code loader} has and Cereal can write. */
  static void register(Cereal cereal, ClassLoader loader) {
    for (String name : CLASSES) {
      Class<?> type;
      try {
        type = Class.forName(name, false, loader);
      } catch (ClassNotFoundException | LinkageError e) {
        continue;
      }
      if (RecordCodec.keepsStateOutsideFields(type)) continue;
      try {
        cereal.register(type);
      } catch (CerealException | IllegalArgumentException e) {
        // Cereal cannot lay it out (abstract, no field offsets): written by name or by Java.
      }
    }
  }
}
