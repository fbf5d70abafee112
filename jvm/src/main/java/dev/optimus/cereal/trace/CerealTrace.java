package dev.optimus.cereal.trace;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * An opt-in recorder of what the serializer really does, for the accelerator model
 * ({@code optimus sim --accel cereal}, docs/simulator.md "Cereal model"): per serialized graph,
 * every object in layout (breadth-first) order with its class ID, its value words and the
 * layout word each of its references points to; per deserialized graph, the objects allocated,
 * the words copied and the references fixed.
 *
 * <p>Off by default: the writer and reader ask {@link #active()} once per graph and do nothing
 * more when it is null. {@link #start} installs a recorder for every {@code Cereal} of the JVM
 * (one at a time); {@link #close} writes the end record and removes it. Graphs serialized on
 * several threads at once are each recorded whole ({@link GraphTrace} is per graph; records are
 * appended under a lock).
 *
 * <p>File format, version 1 (varints are unsigned LEB128 of at most 5 bytes, as in the frame):
 *
 * <pre>
 * file   := "CRLT" version=1 labelLength:varint utf8Label record* end
 * record := 'S' objectCount layoutWords valueBytes refBytes bitmapBytes frameBytes object*
 *         | 'D' objectCount valueWords refCount refBytes bitmapBytes chunks parallel(0|1)
 * object := classId valueWords refCount target*   (valueWords counts the header word;
 *                                                 target is 0 for null, else layout word + 1)
 * end    := 'E' serializeRecords deserializeRecords
 * </pre>
 *
 * An object's layout words are {@code valueWords + refCount}, objects are consecutive from word
 * 0, and its references are its last {@code refCount} words (docs/cereal.md).
 */
public final class CerealTrace implements AutoCloseable {
  /** The file's first bytes. */
  public static final byte[] MAGIC = {'C', 'R', 'L', 'T'};
  /** The format version this writes. */
  public static final int VERSION = 1;
  /** Record tags. */
  public static final int SERIALIZE = 'S', DESERIALIZE = 'D', END = 'E';

  private static volatile CerealTrace active;

  private final OutputStream out;
  private long serialized;
  private long deserialized;
  private boolean closed;

  private CerealTrace(OutputStream out) {
    this.out = out;
  }

  /**
   * Starts recording every graph serialized or deserialized in this JVM into {@code out},
   * labelled {@code label} (a workload name).
   *
   * @throws IllegalStateException if a recorder is already installed
   */
  public static synchronized CerealTrace start(OutputStream out, String label) throws IOException {
    if (active != null) throw new IllegalStateException("a Cereal trace is already recording");
    CerealTrace t = new CerealTrace(out);
    ByteArrayOutputStream h = new ByteArrayOutputStream();
    h.write(MAGIC);
    h.write(VERSION);
    byte[] name = label.getBytes(StandardCharsets.UTF_8);
    putVarint(h, name.length);
    h.write(name);
    out.write(h.toByteArray());
    active = t;
    return t;
  }

  /** The installed recorder, or null: the writer's and reader's one check per graph. */
  public static CerealTrace active() {
    return active;
  }

  /** A builder for one graph being serialized; handed back by {@link GraphTrace#finish}. */
  public GraphTrace begin() {
    return new GraphTrace(this);
  }

  /** Graphs recorded so far: serialized, deserialized. */
  public synchronized long[] counts() {
    return new long[] {serialized, deserialized};
  }

  /** Records one deserialized graph. */
  public void deserialized(int objects, int valueWords, int refCount, int refBytes, int bitmapBytes,
      int chunks, boolean parallel) {
    ByteArrayOutputStream r = new ByteArrayOutputStream(16);
    r.write(DESERIALIZE);
    putVarint(r, objects);
    putVarint(r, valueWords);
    putVarint(r, refCount);
    putVarint(r, refBytes);
    putVarint(r, bitmapBytes);
    putVarint(r, chunks);
    putVarint(r, parallel ? 1 : 0);
    append(r, false);
  }

  synchronized void append(ByteArrayOutputStream record, boolean serialize) {
    if (closed) return;
    try {
      record.writeTo(out);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the Cereal trace", e);
    }
    if (serialize) serialized++;
    else deserialized++;
  }

  /** Writes the end record, flushes, and stops recording (the stream stays open). */
  @Override
  public void close() throws IOException {
    synchronized (CerealTrace.class) {
      if (active == this) active = null;
    }
    synchronized (this) {
      if (closed) return;
      closed = true;
      ByteArrayOutputStream e = new ByteArrayOutputStream(12);
      e.write(END);
      putVarint(e, (int) Math.min(Integer.MAX_VALUE, serialized));
      putVarint(e, (int) Math.min(Integer.MAX_VALUE, deserialized));
      e.writeTo(out);
      out.flush();
    }
  }

  static void putVarint(ByteArrayOutputStream o, int v) {
    if (v < 0) throw new IllegalArgumentException("negative count " + v);
    while ((v & ~0x7F) != 0) {
      o.write((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    o.write(v);
  }
}
