package dev.optimus.cereal;

import static dev.optimus.cereal.GraphAssert.assertSameGraph;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.optimus.cereal.Model.Node;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Registration, named classes and the stream API. */
class RegistrationTest {
  @Test
  void unregisteredClassIsAClearError() {
    Cereal c = new Cereal();
    CerealException e = assertThrows(CerealException.class, () -> c.serialize(new Node(1)));
    assertTrue(e.getMessage().contains(Node.class.getName()) && e.getMessage().contains("register"),
        e.getMessage());
  }

  @Test
  void idsMustAgree() {
    Cereal w = new Cereal();
    w.register(Node.class, 40);
    Cereal r = new Cereal();
    r.register(Model.Key.class, 40);
    CerealException e = assertThrows(CerealException.class, () -> r.deserialize(w.serialize(new Node(1))));
    assertTrue(e.byteOffset() >= 0);
    Cereal none = new Cereal();
    e = assertThrows(CerealException.class, () -> none.deserialize(w.serialize(new Node(1))));
    assertTrue(e.getMessage().contains("unknown class ID 40"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> w.register(Model.Key.class, 40));
    assertThrows(IllegalArgumentException.class, () -> w.register(Model.Key.class, 3));
    assertEquals(40, w.register(Node.class));
  }

  @Test
  void namedClassesAreWrittenOncePerStream() throws IOException {
    Cereal c = new Cereal();
    c.setRegistrationRequired(false);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (CerealOutput out = c.newOutput(bytes)) {
      for (int i = 0; i < 5; i++) {
        Node n = new Node(i);
        n.left = new Node(-i);
        out.writeObject(n);
      }
      out.writeObject(null);
      out.reset();
      out.writeObject(new Node(99));
    }
    byte[] all = bytes.toByteArray();
    assertEquals(2, count(all, Node.class.getName().getBytes(StandardCharsets.UTF_8)),
        "the name once, and once again after reset()");
    // Registration required on the reader: named classes are refused.
    assertThrows(CerealException.class, () -> new Cereal().newInput(new ByteArrayInputStream(all)).readObject());
    try (CerealInput in = c.newInput(new ByteArrayInputStream(all))) {
      for (int i = 0; i < 5; i++) {
        Node n = in.readObject(Node.class);
        assertEquals(i, n.value);
        assertEquals(-i, n.left.value);
      }
      assertEquals(null, in.readObject());
      assertEquals(99, in.readObject(Node.class).value);
      assertThrows(EOFException.class, in::readObject);
    }
  }

  @Test
  void streamOfManyGraphsAsSparkWritesThem() throws IOException {
    Cereal c = Model.register(new Cereal());
    List<Object> graphs = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      Node n = new Node(i);
      n.label = "record " + i;
      n.any = i % 3 == 0 ? List.of(i, "x") : new int[] {i};
      graphs.add(n);
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (CerealOutput out = c.newOutput(bytes)) {
      for (Object g : graphs) out.writeObject(g);
      assertEquals(bytes.size(), out.bytesWritten());
    }
    // Relocation: the stream is a concatenation of self-contained frames.
    byte[] all = bytes.toByteArray();
    byte[] twice = new byte[all.length * 2];
    System.arraycopy(all, 0, twice, 0, all.length);
    System.arraycopy(all, 0, twice, all.length, all.length);
    try (CerealInput in = c.newInput(new ByteArrayInputStream(twice))) {
      for (int k = 0; k < 2; k++) for (Object g : graphs) assertSameGraph(g, in.readObject());
      assertThrows(EOFException.class, in::readObject);
    }
    // A truncated stream is an error with the position, not an end of stream.
    byte[] cut = java.util.Arrays.copyOf(all, all.length - 3);
    try (CerealInput in = c.newInput(new ByteArrayInputStream(cut))) {
      CerealException e = assertThrows(CerealException.class, () -> {
        while (true) in.readObject();
      });
      assertEquals(cut.length, e.byteOffset(), e.getMessage());
    }
  }

  private static int count(byte[] hay, byte[] needle) {
    int n = 0;
    outer:
    for (int i = 0; i + needle.length <= hay.length; i++) {
      for (int j = 0; j < needle.length; j++) if (hay[i + j] != needle[j]) continue outer;
      n++;
    }
    return n;
  }
}
