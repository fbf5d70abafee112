package dev.optimus.cereal;

import java.io.Closeable;
import java.io.Flushable;
import java.io.IOException;
import java.io.OutputStream;

/**
 * A stream of graphs: each {@link #writeObject} writes one frame to the underlying stream, which
 * a {@link CerealInput} reads back in order. This is the shape of a Spark
 * {@code SerializationStream} ({@code writeObject}, {@code flush}, {@code close}), which can wrap
 * it one to one.
 *
 * <p>Frames are self-contained, so a stream cut at frame boundaries and concatenated with others
 * reads back (Spark's "relocation" of serialized objects), except for classes named in the stream
 * when registration is optional: a name is written once per stream, in the first frame that
 * needs it, until {@link #reset()}. Not thread-safe.
 */
public final class CerealOutput implements Closeable, Flushable {
  private final OutputStream out;
  private final GraphWriter writer;
  private long bytesWritten;

  CerealOutput(Cereal cereal, OutputStream out) {
    this.out = out;
    this.writer = cereal.newWriter();
  }

  /** Writes the graph of {@code root} (which may be null) as one frame. */
  public CerealOutput writeObject(Object root) throws IOException {
    writer.write(root);
    writer.writeTo(out);
    bytesWritten += writer.frameLength();
    return this;
  }

  /** Forgets the classes named so far; the next frame names what it uses again. */
  public void reset() {
    writer.resetClasses();
  }

  /** Bytes written by this stream so far. */
  public long bytesWritten() {
    return bytesWritten;
  }

  @Override
  public void flush() throws IOException {
    out.flush();
  }

  @Override
  public void close() throws IOException {
    out.close();
  }
}
