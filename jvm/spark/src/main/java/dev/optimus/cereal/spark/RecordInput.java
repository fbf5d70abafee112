package dev.optimus.cereal.spark;

import java.io.IOException;
import java.io.InputStream;

/**
 * The input of a {@link CerealDeserializationStream}: Spark's stream read in blocks into a buffer
 * of its own, so that the few single bytes of each record's header (its tag, a frame's magic,
 * flags and length varints) are array loads rather than calls into Spark's (often synchronized or
 * decompressing) stream, and a record's first byte can be looked at without consuming it. Reads
 * ahead of the record being decoded, as Kryo's input buffer does: the deserialization stream owns
 * the stream to its end. Not thread-safe.
 */
final class RecordInput extends InputStream {
  private final InputStream in;
  private final byte[] buf = new byte[8192];
  private int pos;
  private int limit;

  RecordInput(InputStream in) {
    this.in = in;
  }

  private boolean fill() throws IOException {
    pos = 0;
    limit = 0;
    int n;
    do {
      n = in.read(buf, 0, buf.length);
    } while (n == 0);
    if (n < 0) return false;
    limit = n;
    return true;
  }

  /** The next byte without consuming it, or -1 at the end of the stream. */
  int peek() throws IOException {
    if (pos == limit && !fill()) return -1;
    return buf[pos] & 0xff;
  }

  @Override
  public int read() throws IOException {
    if (pos == limit && !fill()) return -1;
    return buf[pos++] & 0xff;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    if (len == 0) return 0;
    if (pos == limit) {
      if (len >= buf.length) return in.read(b, off, len); // a large record: no detour
      if (!fill()) return -1;
    }
    int n = Math.min(len, limit - pos);
    System.arraycopy(buf, pos, b, off, n);
    pos += n;
    return n;
  }

  @Override
  public int available() throws IOException {
    return limit - pos + in.available();
  }

  @Override
  public void close() throws IOException {
    in.close();
  }
}
