package dev.optimus.cereal.spark;

import java.io.IOException;
import java.io.OutputStream;
import org.apache.spark.serializer.SerializationStream;
import scala.reflect.ClassTag;

/**
 * Spark's {@code SerializationStream} over Cereal: each {@code writeObject} (and so each
 * {@code writeKey} and {@code writeValue}) appends one self-contained record of
 * {@link RecordCodec}, buffered and handed to the underlying stream in blocks of {@link #BLOCK}
 * bytes (one write call per block, not per record, as Kryo's output buffer does); {@code flush}
 * and {@code close} write what is buffered first.
 * One thread at a time, as Spark uses it.
 */
final class CerealSerializationStream extends SerializationStream {
  /** Records are handed to the underlying stream in blocks of about this many bytes. */
  static final int BLOCK = 8192;

  private final RecordCodec.Encoder encoder;
  private final OutputStream out;

  CerealSerializationStream(RecordCodec codec, OutputStream out) {
    this.encoder = new RecordCodec.Encoder(codec);
    this.out = out;
  }

  @Override
  public <T> SerializationStream writeObject(T t, ClassTag<T> tag) {
    encoder.encode(t);
    if (encoder.length() >= BLOCK) {
      try {
        encoder.drainTo(out);
      } catch (IOException e) {
        throw Sneaky.rethrow(e);
      }
    }
    return this;
  }

  @Override
  public void flush() {
    try {
      encoder.drainTo(out);
      out.flush();
    } catch (IOException e) {
      throw Sneaky.rethrow(e);
    }
  }

  @Override
  public void close() {
    try {
      encoder.drainTo(out);
      out.close();
    } catch (IOException e) {
      throw Sneaky.rethrow(e);
    }
  }
}
