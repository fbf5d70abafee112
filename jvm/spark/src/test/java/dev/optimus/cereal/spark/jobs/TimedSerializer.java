package dev.optimus.cereal.spark.jobs;

import java.io.InputStream;
import java.io.OutputStream;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.LongAdder;
import org.apache.spark.SparkConf;
import org.apache.spark.serializer.DeserializationStream;
import org.apache.spark.serializer.SerializationStream;
import org.apache.spark.serializer.Serializer;
import org.apache.spark.serializer.SerializerInstance;
import scala.reflect.ClassTag;

/**
 * A Spark serializer that delegates to another ({@code spark.optimus.timed.serializer}: Java's,
 * Kryo's or Cereal's) and adds up the time spent inside it: serialization (S) is every
 * {@code serialize} and stream {@code writeObject}, deserialization (D) every {@code deserialize}
 * and stream {@code readObject}, over all threads of the JVM. That is the S/D time of shuffled,
 * cached, broadcast and collected records, which Spark's task metrics do not separate (its
 * shuffle write time includes the disk). Stream calls include the delegate's own buffering into
 * the stream under it (compression, disk) when its buffer fills; for the benchmark only.
 */
public final class TimedSerializer extends Serializer implements Serializable {
  private static final long serialVersionUID = 1L;
  static final LongAdder S_NANOS = new LongAdder();
  static final LongAdder D_NANOS = new LongAdder();
  static final LongAdder S_CALLS = new LongAdder();
  static final LongAdder D_CALLS = new LongAdder();

  private final Serializer delegate;

  public TimedSerializer(SparkConf conf) {
    String name = conf.get("spark.optimus.timed.serializer");
    try {
      Class<?> c = Class.forName(name, true, Thread.currentThread().getContextClassLoader());
      delegate = (Serializer) c.getConstructor(SparkConf.class).newInstance(conf);
    } catch (ReflectiveOperationException e) {
      throw new IllegalArgumentException("spark.optimus.timed.serializer=" + name, e);
    }
  }

  /** {@code [S ns, D ns, S calls, D calls]} since the last {@link #reset()}. */
  public static long[] totals() {
    return new long[] {S_NANOS.sum(), D_NANOS.sum(), S_CALLS.sum(), D_CALLS.sum()};
  }

  public static void reset() {
    S_NANOS.reset();
    D_NANOS.reset();
    S_CALLS.reset();
    D_CALLS.reset();
  }

  @Override
  public Serializer setDefaultClassLoader(ClassLoader loader) {
    delegate.setDefaultClassLoader(loader);
    return super.setDefaultClassLoader(loader);
  }

  @Override
  public boolean supportsRelocationOfSerializedObjects() {
    return delegate.supportsRelocationOfSerializedObjects();
  }

  @Override
  public SerializerInstance newInstance() {
    return new Instance(delegate.newInstance());
  }

  private static final class Instance extends SerializerInstance {
    private final SerializerInstance d;

    Instance(SerializerInstance d) {
      this.d = d;
    }

    @Override
    public <T> ByteBuffer serialize(T t, ClassTag<T> tag) {
      long t0 = System.nanoTime();
      try {
        return d.serialize(t, tag);
      } finally {
        S_NANOS.add(System.nanoTime() - t0);
        S_CALLS.increment();
      }
    }

    @Override
    public <T> T deserialize(ByteBuffer bytes, ClassTag<T> tag) {
      long t0 = System.nanoTime();
      try {
        return d.deserialize(bytes, tag);
      } finally {
        D_NANOS.add(System.nanoTime() - t0);
        D_CALLS.increment();
      }
    }

    @Override
    public <T> T deserialize(ByteBuffer bytes, ClassLoader loader, ClassTag<T> tag) {
      long t0 = System.nanoTime();
      try {
        return d.deserialize(bytes, loader, tag);
      } finally {
        D_NANOS.add(System.nanoTime() - t0);
        D_CALLS.increment();
      }
    }

    @Override
    public SerializationStream serializeStream(OutputStream s) {
      SerializationStream inner = d.serializeStream(s);
      return new SerializationStream() {
        @Override
        public <T> SerializationStream writeObject(T t, ClassTag<T> tag) {
          long t0 = System.nanoTime();
          inner.writeObject(t, tag);
          S_NANOS.add(System.nanoTime() - t0);
          S_CALLS.increment();
          return this;
        }

        @Override
        public void flush() {
          inner.flush();
        }

        @Override
        public void close() {
          inner.close();
        }
      };
    }

    @Override
    public DeserializationStream deserializeStream(InputStream s) {
      DeserializationStream inner = d.deserializeStream(s);
      return new DeserializationStream() {
        @Override
        public <T> T readObject(ClassTag<T> tag) {
          long t0 = System.nanoTime();
          try {
            return inner.readObject(tag);
          } finally {
            D_NANOS.add(System.nanoTime() - t0);
            D_CALLS.increment();
          }
        }

        @Override
        public void close() {
          inner.close();
        }
      };
    }
  }
}
