package dev.optimus.cereal.spark;

/**
 * Rethrows a checked exception unchanged from a method that cannot declare it: Spark's stream
 * methods are Scala methods without {@code throws} clauses, and its {@code asIterator} must see
 * the {@code EOFException} itself, not a wrapper.
 */
final class Sneaky {
  private Sneaky() {}

  static RuntimeException rethrow(Throwable t) {
    throw Sneaky.<RuntimeException>cast(t);
  }

  @SuppressWarnings("unchecked")
  private static <T extends Throwable> T cast(Throwable t) throws T {
    throw (T) t;
  }
}
