package dev.optimus.cereal;

import static dev.optimus.cereal.GraphAssert.assertSameGraph;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/** Random graphs ({@link RandomGraphs}) from many seeds round-trip exactly. */
class PropertyTest {
  @Test
  void randomGraphsRoundTrip() {
    Cereal c = Model.register(new Cereal());
    for (long seed = 0; seed < 600; seed++) {
      Object[] g = RandomGraphs.graph(seed, 300);
      byte[] bytes = c.serialize(g);
      assertArrayEquals(bytes, c.serialize(g), "serialization is deterministic, seed " + seed);
      try {
        assertSameGraph(g, c.deserialize(bytes));
      } catch (AssertionError e) {
        throw new AssertionError("seed " + seed + ": " + e.getMessage(), e);
      }
    }
  }

  @Test
  void randomGraphsRoundTripWithParallelFixUp() {
    Cereal c = Model.register(new Cereal());
    c.setDeserializationThreads(3);
    c.setParallelThreshold(1);
    try (c) {
      for (long seed = 1000; seed < 1100; seed++) {
        Object[] g = RandomGraphs.graph(seed, 3000);
        try {
          assertSameGraph(g, c.deserialize(c.serialize(g)));
        } catch (AssertionError e) {
          throw new AssertionError("seed " + seed + ": " + e.getMessage(), e);
        }
      }
    }
  }

  @Test
  void randomGraphsThroughOneStreamWithNamedClasses() throws IOException {
    Cereal c = new Cereal();
    c.setRegistrationRequired(false);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    Object[][] graphs = new Object[100][];
    try (CerealOutput out = c.newOutput(bytes)) {
      for (int i = 0; i < graphs.length; i++) {
        graphs[i] = RandomGraphs.graph(5000 + i, 100);
        out.writeObject(graphs[i]);
      }
    }
    try (CerealInput in = c.newInput(new ByteArrayInputStream(bytes.toByteArray()))) {
      for (Object[] g : graphs) assertSameGraph(g, in.readObject());
    }
  }
}
