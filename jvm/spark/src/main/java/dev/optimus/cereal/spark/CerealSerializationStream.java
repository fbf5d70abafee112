package dev.optimus.cereal.spark;

import java.io.IOException;
import java.io.OutputStream;
import org.apache.spark.serializer.SerializationStream;
import scala.reflect.ClassTag;

/**
 * Spark's {@code SerializationStream} over Cereal: each {@code writeObject} (and so each
 * {@code writeKey} and {@code writeValue}) appends one self-contained record of
 * {@link RecordCodec} to the underlying stream. {@code flush} and {@code close} pass through.
 * One thread at a time, as Spark uses it.
 */
final class CerealSerializationStream extends SerializationStream {
  private final RecordCodec.Encoder encoder;
  private final OutputStream out;

  CerealSerializationStream(RecordCodec codec, OutputStream out) {
    this.encoder = new RecordCodec.Encoder(codec);
    this.out = out;
  }

  @Override
  public <T> SerializationStream writeObject(T t, ClassTag<T> tag) {
    encoder.encode(t);
    try {
      encoder.writeTo(out);
    } catch (IOException e) {
      throw Sneaky.rethrow(e);
    }
    return this;
  }

  @Override
  public void flush() {
    try {
      out.flush();
    } catch (IOException e) {
      throw Sneaky.rethrow(e);
    }
  }

  @Override
  public void close() {
    try {
      out.close();
    } catch (IOException e) {
      throw Sneaky.rethrow(e);
    }
  }
}
