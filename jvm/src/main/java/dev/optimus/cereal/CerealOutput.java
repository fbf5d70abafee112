package dev.optimus.cereal;

import java.io.Closeable;
import java.io.Flushable;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;

/**
 * A stream of graphs: each {@link #writeObject} appends one frame, which a {@link CerealInput}
 * reads back in order. This is the shape of a Spark {@code SerializationStream}
 * ({@code writeObject}, {@code flush}, {@code close}), which can wrap it one to one.
 *
 * <p>Frames are gathered in a buffer of this stream and handed to the underlying stream in blocks
 * of about {@link #BLOCK} bytes (and on {@link #flush()} and {@link #close()}), as Kryo's
 * {@code Output} does: one call into the underlying stream, often synchronized or compressing,
 * per block rather than per record.
 *
 * <p>Frames are self-contained, so a stream cut at frame boundaries and concatenated with others
 * reads back (Spark's "relocation" of serialized objects), except for classes named in the stream
 * when registration is optional: a name is written once per stream, in the first frame that
 * needs it, until {@link #reset()}. Not thread-safe.
 */
public final class CerealOutput implements Closeable, Flushable {
  /** Buffered frames are handed to the underlying stream once they reach this many bytes. */
  static final int BLOCK = 8192;

  private final OutputStream out;
  private final GraphWriter writer;
  private byte[] buf = new byte[BLOCK + GraphWriter.SMALL_MAX_BYTES];
  private int count;
  private long bytesWritten;

  CerealOutput(Cereal cereal, OutputStream out) {
    this.out = out;
    this.writer = cereal.newWriter();
  }

  /** Writes the graph of {@code root} (which may be null) as one frame. */
  public CerealOutput writeObject(Object root) throws IOException {
    GraphWriter w = writer;
    if (count <= buf.length - GraphWriter.SMALL_MAX_BYTES) {
      // A string, a box, an object of primitive fields or a small graph, most records, straight
      // into the buffer.
      int end = w.writeSmallTo(root, buf, count);
      if (end >= 0) {
        count = end;
        if (count >= BLOCK) drain();
        return this;
      }
    }
    w.write(root);
    int n = w.frameLength();
    if (count + n > buf.length) {
      drain();
      if (n > buf.length) {
        if (n <= 4 * BLOCK) {
          buf = Arrays.copyOf(buf, n);
        } else {
          w.writeTo(out); // a large frame: no detour through the buffer
          bytesWritten += n;
          return this;
        }
      }
    }
    System.arraycopy(w.frameBuffer(), w.frameStart(), buf, count, n);
    count += n;
    if (count >= BLOCK) drain();
    return this;
  }

  private void drain() throws IOException {
    if (count > 0) {
      out.write(buf, 0, count);
      bytesWritten += count;
      count = 0;
    }
  }

  /** Forgets the classes named so far; the next frame names what it uses again. */
  public void reset() {
    writer.resetClasses();
  }

  /**
   * Bytes handed to the underlying stream so far; frames still in this stream's buffer count
   * once {@link #flush()} has handed them on.
   */
  public long bytesWritten() {
    return bytesWritten;
  }

  /** Hands the buffered frames to the underlying stream and flushes it. */
  @Override
  public void flush() throws IOException {
    drain();
    out.flush();
  }

  /** Hands the buffered frames to the underlying stream and closes it. */
  @Override
  public void close() throws IOException {
    try {
      drain();
    } finally {
      out.close();
    }
  }
}
