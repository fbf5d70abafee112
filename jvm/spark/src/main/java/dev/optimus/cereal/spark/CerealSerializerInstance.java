package dev.optimus.cereal.spark;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import org.apache.spark.serializer.DeserializationStream;
import org.apache.spark.serializer.SerializationStream;
import org.apache.spark.serializer.SerializerInstance;
import scala.reflect.ClassTag;

/**
 * One {@link CerealSerializer} instance, what Spark asks for per task, shuffle writer or block:
 * {@code serialize}/{@code deserialize} of one graph as one record of {@link RecordCodec}, and
 * streams of records. Cheap to create (the configured registry is the serializer's); its one-object
 * methods are thread-safe.
 */
final class CerealSerializerInstance extends SerializerInstance {
  private final CerealSerializer serializer;
  private final RecordCodec codec;

  CerealSerializerInstance(CerealSerializer serializer, RecordCodec codec) {
    this.serializer = serializer;
    this.codec = codec;
  }

  @Override
  public <T> ByteBuffer serialize(T t, ClassTag<T> tag) {
    RecordCodec.Encoder e = codec.threadEncoder();
    e.clear();
    e.encode(t);
    return ByteBuffer.wrap(Arrays.copyOf(e.bytes(), e.length()));
  }

  @Override
  public <T> T deserialize(ByteBuffer bytes, ClassTag<T> tag) {
    return deserializeWith(codec, bytes);
  }

  @Override
  public <T> T deserialize(ByteBuffer bytes, ClassLoader loader, ClassTag<T> tag) {
    return deserializeWith(loader == codec.loader ? codec : serializer.codec(loader), bytes);
  }

  @SuppressWarnings("unchecked")
  private static <T> T deserializeWith(RecordCodec c, ByteBuffer bytes) {
    try {
      if (bytes.hasArray()) {
        return (T) c.decode(bytes.array(), bytes.arrayOffset() + bytes.position(), bytes.remaining());
      }
      byte[] copy = new byte[bytes.remaining()];
      bytes.duplicate().get(copy);
      return (T) c.decode(copy, 0, copy.length);
    } catch (IOException e) {
      throw Sneaky.rethrow(e);
    }
  }

  @Override
  public SerializationStream serializeStream(OutputStream s) {
    return new CerealSerializationStream(codec, s);
  }

  @Override
  public DeserializationStream deserializeStream(InputStream s) {
    return new CerealDeserializationStream(codec, s);
  }
}
