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
 * <p>The underlying stream is read in blocks into a buffer of this input, as Kryo's
 * {@code Input} reads it: a frame's header is a few array loads, and a frame is decoded where it
 * lies in the buffer. So this input reads ahead of the frame it returns and owns the stream to its
 * end; {@link #peek()} and {@link #asInputStream()} give the bytes between frames to a caller that
 * interleaves records of its own (Spark's Java fallback records). Over an array
 * ({@link Cereal#newInput(byte[], int, int)}) frames are decoded in place.
 *
 * <p>A frame's length is read first, but the buffer for it grows only as its bytes actually
 * arrive, so a corrupt length cannot make this allocate more than twice what the stream holds.
 * Errors name the byte offset from the start of this stream. Not thread-safe.
 */
public final class CerealInput implements Closeable {
  /** Bytes asked of the underlying stream at a time. */
  private static final int BLOCK = 1 << 13;
  /** A frame up to this long gets its buffer at once; past it the buffer grows as bytes arrive. */
  private static final int TRUSTED = 1 << 20;
  /** Magic, version, flags and a varint of at most 5 bytes. */
  private static final int MAX_HEADER = 8;

  /** The underlying stream; null when reading an array. */
  private final InputStream in;
  private final GraphReader reader;
  private byte[] buf;
  private int pos;
  private int limit;
  /** Stream offset of {@code buf[0]}. */
  private long bufBase;

  CerealInput(Cereal cereal, InputStream in) {
    this.in = in;
    this.reader = cereal.newReader();
    this.buf = new byte[BLOCK];
  }

  CerealInput(Cereal cereal, byte[] b, int offset, int length) {
    if (offset < 0 || length < 0 || offset > b.length - length) {
      throw new IndexOutOfBoundsException("offset " + offset + ", length " + length + " of " + b.length);
    }
    this.in = null;
    this.reader = cereal.newReader();
    this.buf = b;
    this.pos = offset;
    this.limit = offset + length;
    this.bufBase = -offset;
  }

  /**
   * Reads the frames of {@code b[offset..offset+length)} next, in place, forgetting what was left
   * of the previous array (as Kryo's {@code Input.setBuffer}): one input, and its reader's
   * tables, for many arrays. Only for an input made over an array; the classes named so far
   * stay known, as in one stream.
   */
  public void setBuffer(byte[] b, int offset, int length) {
    if (in != null) throw new IllegalStateException("an input over a stream reads only that stream");
    if (offset < 0 || length < 0 || offset > b.length - length) {
      throw new IndexOutOfBoundsException("offset " + offset + ", length " + length + " of " + b.length);
    }
    buf = b;
    pos = offset;
    limit = offset + length;
    bufBase = -offset;
  }

  /**
   * Makes {@code n} bytes available at {@link #pos}, reading the underlying stream as needed;
   * false if it ends first. Moves what is left to the front of the buffer, which it grows only
   * when full: at most to {@code n}, and past {@link #TRUSTED} by doubling.
   */
  private boolean require(int n) throws IOException {
    if (limit - pos >= n) return true;
    if (in == null) return false;
    if (pos > 0) {
      System.arraycopy(buf, pos, buf, 0, limit - pos);
      bufBase += pos;
      limit -= pos;
      pos = 0;
    }
    while (limit < n) {
      if (limit == buf.length) {
        long cap = Math.max(2L * buf.length, Math.min(n, TRUSTED));
        buf = Arrays.copyOf(buf, (int) Math.min(n, cap));
      }
      int r = in.read(buf, limit, buf.length - limit);
      if (r < 0) return false;
      limit += r;
    }
    return true;
  }

  /**
   * The next graph. Throws {@link EOFException} at the end of the stream (between frames) and
   * {@link CerealException} for a malformed or truncated frame.
   */
  public Object readObject() throws IOException {
    if (limit - pos < MAX_HEADER && !require(MAX_HEADER) && pos == limit) {
      throw new EOFException("end of Cereal stream");
    }
    byte[] b = buf;
    int p = pos;
    int flags;
    int header;
    int length;
    if (limit - p >= 4 && b[p] == (byte) Format.MAGIC && b[p + 1] == Format.VERSION
        && (b[p + 2] & ~(Format.FLAG_RESET_CLASSES | Format.FLAG_COMPACT)) == 0 && b[p + 3] >= 0) {
      flags = b[p + 2]; // the usual header: a body of under 128 bytes
      header = 4;
      length = b[p + 3];
    } else {
      GraphReader.FrameHeader h = GraphReader.frameHeader(b, p, Math.min(limit, p + MAX_HEADER), bufBase);
      flags = h.flags();
      header = h.bodyStart() - p;
      length = h.bodyLength();
      if (length > Integer.MAX_VALUE - 16 - header) {
        throw new CerealException("frame of " + length + " bytes is over the limit of a frame",
            bufBase + p + 3, null);
      }
    }
    int total = header + length;
    if (!require(total)) {
      throw new CerealException("stream ends inside a frame of " + length + " bytes",
          bufBase + limit, null);
    }
    int start = pos + header;
    pos += total;
    return reader.read(buf, start, length, flags, bufBase);
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

  /** The next byte without consuming it (a frame starts with 0xCE), or -1 at the end. */
  public int peek() throws IOException {
    return require(1) ? buf[pos] & 0xFF : -1;
  }

  /**
   * The rest of the stream as an {@link InputStream}, from the first byte not consumed by
   * {@link #readObject()}: for a caller whose stream holds records of other formats between the
   * frames. Reading it consumes those bytes of this input.
   */
  public InputStream asInputStream() {
    return new InputStream() {
      @Override
      public int read() throws IOException {
        if (!require(1)) return -1;
        return buf[pos++] & 0xFF;
      }

      @Override
      public int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) return 0;
        if (pos == limit) {
          if (in == null) return -1;
          if (len >= BLOCK) {
            int n = in.read(b, off, len); // a large record: no detour through the buffer
            if (n > 0) bufBase += n;
            return n;
          }
          if (!require(1)) return -1;
        }
        int n = Math.min(len, limit - pos);
        System.arraycopy(buf, pos, b, off, n);
        pos += n;
        return n;
      }

      @Override
      public int available() throws IOException {
        return limit - pos + (in == null ? 0 : in.available());
      }
    };
  }

  /** Bytes consumed from the stream so far. */
  public long position() {
    return bufBase + pos;
  }

  @Override
  public void close() throws IOException {
    if (in != null) in.close();
  }
}
