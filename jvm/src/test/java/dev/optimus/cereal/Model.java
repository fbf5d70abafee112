package dev.optimus.cereal;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/** Classes the tests serialize: user classes of every shape Cereal must handle. */
final class Model {
  private Model() {}

  /** Every primitive type, a boxed and a String field. */
  static class AllPrimitives {
    boolean z;
    byte b;
    short s;
    char c;
    int i;
    long j;
    float f;
    double d;
    Integer boxed;
    String text;
  }

  /** A base class whose fields a subclass inherits (with a field of the same name). */
  static class Base {
    int id;
    String name;
    private long secret;

    long secret() {
      return secret;
    }

    void secret(long v) {
      secret = v;
    }
  }

  static class Derived extends Base {
    String name; // hides Base.name
    double weight;
    Base parent;
    transient String cache = "not written";
  }

  /** A node of any graph: value fields and references. */
  static class Node {
    int value;
    String label;
    Node left;
    Node right;
    Object any;

    Node() {}

    Node(int value) {
      this.value = value;
    }
  }

  /** Constructor with arguments only: Cereal instantiates without calling it. */
  static final class NoDefaultConstructor {
    final int x;
    final List<String> items;

    NoDefaultConstructor(int x, List<String> items) {
      this.x = Objects.requireNonNull(x);
      this.items = new ArrayList<>(items);
    }
  }

  enum Color { RED, GREEN, BLUE }

  /** Enum constants with bodies are instances of anonymous subclasses. */
  enum Op {
    PLUS { @Override int apply(int a, int b) { return a + b; } },
    TIMES { @Override int apply(int a, int b) { return a * b; } };

    abstract int apply(int a, int b);
  }

  /** A value class used as a hash key (equality by content). */
  static final class Key implements Comparable<Key> {
    String name;
    int n;

    Key() {}

    Key(String name, int n) {
      this.name = name;
      this.n = n;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Key k && k.n == n && Objects.equals(k.name, name);
    }

    @Override
    public int hashCode() {
      return Objects.hash(name, n);
    }

    @Override
    public int compareTo(Key o) {
      int c = name.compareTo(o.name);
      return c != 0 ? c : Integer.compare(n, o.n);
    }

    @Override
    public String toString() {
      return name + "/" + n;
    }
  }

  /** Fields of interface and array types. */
  static class Holder {
    List<Object> list;
    Map<Object, Object> map;
    Object[] objects;
    Node[] nodes;
    int[][] matrix;
    Color color;
    Op op;
  }

  record Point(int x, int y) {}

  /** Registers all of the above on {@code c}. */
  static Cereal register(Cereal c) {
    c.register(AllPrimitives.class);
    c.register(Base.class);
    c.register(Derived.class);
    c.register(Node.class);
    c.register(Node[].class);
    c.register(NoDefaultConstructor.class);
    c.register(Color.class);
    c.register(Op.class);
    c.register(Key.class);
    c.register(Holder.class);
    c.register(int[][].class);
    return c;
  }
}
