package dev.optimus.cereal;

import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;

/**
 * Reads back the graphs a {@link CerealOutput} wrote, one frame per {@link #readObject()}; the
 * shape of a Spark {@code DeserializationStream} ({@code readObject}, which ends with an
 * {@link EOFException}, and {@code close}).
 *
 * <p>A frame's length is read first, but the buffer for it grows only as its bytes actually
 * arrive, so a corrupt length cannot make this allocate more than twice what the stream holds.
 * Errors name the byte offset from the start of this stream. Not thread-safe.
 */
public final class CerealInput implements Closeable {
  private static final int INITIAL = 1 << 12;
  /** Growth past this many bytes happens only as bytes are read. */
  private static final int TRUSTED = 1 << 20;

  private final InputStream in;
  private final GraphReader reader;
  private byte[] buf = new byte[INITIAL];
  private long position;

  CerealInput(Cereal cereal, InputStream in) {
    this.in = in;
    this.reader = cereal.newReader();
  }

  /**
   * The next graph. Throws {@link EOFException} at the end of the stream (between frames) and
   * {@link CerealException} for a malformed or truncated frame.
   */
  public Object readObject() throws IOException {
    long frameStart = position;
    int first = in.read();
    if (first < 0) throw new EOFException("end of Cereal stream");
    position++;
    buf[0] = (byte) first;
    // Magic, version, flags and up to 5 varint bytes.
    int have = 1;
    while (have < 8) {
      if (have >= 4 && (buf[have - 1] & 0x80) == 0) break;
      int c = in.read();
      if (c < 0) break;
      buf[have++] = (byte) c;
      position++;
    }
    GraphReader.FrameHeader h = GraphReader.frameHeader(buf, 0, have, frameStart);
    int bodyStart = h.bodyStart();
    int length = h.bodyLength();
    if (have != bodyStart) throw new CerealException("corrupt frame header", frameStart + have, null);
    if (length > Integer.MAX_VALUE - 16 - bodyStart) {
      throw new CerealException("frame of " + length + " bytes is over the limit of a frame",
          frameStart + 3, null);
    }
    int total = bodyStart + length;
    if (buf.length < Math.min(total, TRUSTED)) buf = Arrays.copyOf(buf, Math.min(total, TRUSTED));
    int got = bodyStart;
    while (got < total) {
      if (got == buf.length) buf = Arrays.copyOf(buf, (int) Math.min(total, 2L * buf.length));
      int n = in.read(buf, got, Math.min(total, buf.length) - got);
      if (n < 0) {
        throw new CerealException("stream ends inside a frame of " + length + " bytes",
            position, null);
      }
      got += n;
      position += n;
    }
    return reader.read(buf, bodyStart, length, h.flags(), frameStart);
  }

  /** {@link #readObject()}, checked to be a {@code type}. */
  public <T> T readObject(Class<T> type) throws IOException {
    Object o = readObject();
    if (o != null && !type.isInstance(o)) {
      throw new CerealException("the graph's root is a " + o.getClass().getName() + ", not a "
          + type.getName());
    }
    return type.cast(o);
  }

  /** Bytes consumed from the stream so far. */
  public long position() {
    return position;
  }

  @Override
  public void close() throws IOException {
    in.close();
  }
}
