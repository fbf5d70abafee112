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
 * RecordCodec#keepsStateOutsideFields}: Spark's {@code Externalizable} classes, Scala's
 * {@code Manifest}s) is skipped; that depends only on the jars, which are the same
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
      // Scala immutable collections (Nil, the empty maps and sets are singletons: at the end).
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
      "java.math.BigInteger", "java.math.BigDecimal", "java.util.BitSet",
      // Singletons (read back as their one instance) and ClassTags (their Class by name). Last,
      // so that the IDs above stay as they were.
      "scala.None$", "scala.collection.immutable.Nil$", "scala.runtime.BoxedUnit",
      "scala.collection.immutable.Map$EmptyMap$", "scala.collection.immutable.Set$EmptySet$",
      "scala.collection.immutable.ListSet$EmptyListSet$", "scala.collection.immutable.ListMap$EmptyListMap$",
      "scala.reflect.ClassTag$GenericClassTag");

  /**
   * Scala's {@code Manifest}s of the primitive and top types ({@code ClassTag.Any},
   * {@code ClassTag.AnyRef}, {@code ClassTag.Int}...; {@code CompactBuffer}s of Spark's Java API hold
   * one). They have fields but their {@code readResolve} returns a constant, whatever the fields:
   * {@link Cereal#registerSingleton registered as singletons}, written as a header alone. After
   * {@link #CLASSES}.
   */
  static final List<String> SINGLETONS = List.of(
      "scala.reflect.ManifestFactory$AnyManifest", "scala.reflect.ManifestFactory$ObjectManifest",
      "scala.reflect.ManifestFactory$AnyValPhantomManifest",
      "scala.reflect.ManifestFactory$NothingManifest", "scala.reflect.ManifestFactory$NullManifest",
      "scala.reflect.ManifestFactory$BooleanManifest", "scala.reflect.ManifestFactory$ByteManifest",
      "scala.reflect.ManifestFactory$CharManifest", "scala.reflect.ManifestFactory$ShortManifest",
      "scala.reflect.ManifestFactory$IntManifest", "scala.reflect.ManifestFactory$LongManifest",
      "scala.reflect.ManifestFactory$FloatManifest", "scala.reflect.ManifestFactory$DoubleManifest",
      "scala.reflect.ManifestFactory$UnitManifest");

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
    for (String name : SINGLETONS) {
      try {
        cereal.registerSingleton(Class.forName(name, false, loader));
      } catch (ClassNotFoundException | LinkageError | IllegalArgumentException e) {
        // another Scala: written by Java serialization
      }
    }
  }
}
