package dev.optimus.cereal.spark;

import dev.optimus.cereal.CerealException;
import dev.optimus.cereal.CerealInput;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import org.apache.spark.serializer.DeserializationStream;
import scala.reflect.ClassTag;

/**
 * Spark's {@code DeserializationStream} over Cereal: {@code readObject} returns the records a
 * {@link CerealSerializationStream} wrote, in order, and throws {@link EOFException} at the end of
 * the stream, which ends Spark's {@code asIterator} and {@code asKeyValueIterator} (and closes the
 * stream). A stream that ends inside a record, or a byte that starts no record, raises
 * {@link CerealException}. One thread at a time.
 */
final class CerealDeserializationStream extends DeserializationStream {
  private final RecordCodec codec;
  private final RecordInput in;
  private final CerealInput frames;

  CerealDeserializationStream(RecordCodec codec, InputStream in) {
    this.codec = codec;
    this.in = new RecordInput(in);
    this.frames = codec.cereal.newInput(this.in);
  }

  @Override
  @SuppressWarnings("unchecked")
  public <T> T readObject(ClassTag<T> tag) {
    try {
      int first = in.peek();
      if (first < 0) throw new EOFException("end of Cereal record stream");
      if (first == RecordCodec.CEREAL_MAGIC) return (T) frames.readObject();
      in.read();
      if (first == RecordCodec.JAVA_TAG) return (T) codec.readJavaRecord(in);
      throw new CerealException("not a Cereal or Java record: first byte 0x"
          + Integer.toHexString(first));
    } catch (IOException e) {
      throw Sneaky.rethrow(e);
    }
  }

  @Override
  public void close() {
    try {
      in.close();
    } catch (IOException e) {
      throw Sneaky.rethrow(e);
    }
  }
}
