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
  /**
   * Reads Spark's stream in blocks (a record's tag and frame header are array loads, not calls
   * into Spark's compressed streams) and decodes frames where they lie; Java records are read
   * through its {@link CerealInput#asInputStream() stream view}.
   */
  private final CerealInput frames;
  private final InputStream rest;

  CerealDeserializationStream(RecordCodec codec, InputStream in) {
    this.codec = codec;
    this.frames = codec.cereal.newInput(in);
    this.rest = frames.asInputStream();
  }

  @Override
  @SuppressWarnings("unchecked")
  public <T> T readObject(ClassTag<T> tag) {
    try {
      int first = frames.peek();
      if (first < 0) throw new EOFException("end of Cereal record stream");
      if (first == RecordCodec.CEREAL_MAGIC) return (T) frames.readObject();
      rest.read();
      if (first == RecordCodec.JAVA_TAG) return (T) codec.readJavaRecord(rest);
      throw new CerealException("not a Cereal or Java record: first byte 0x"
          + Integer.toHexString(first));
    } catch (IOException e) {
      throw Sneaky.rethrow(e);
    }
  }

  @Override
  public void close() {
    try {
      frames.close();
    } catch (IOException e) {
      throw Sneaky.rethrow(e);
    }
  }
}
