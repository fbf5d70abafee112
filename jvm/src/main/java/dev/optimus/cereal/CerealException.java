package dev.optimus.cereal;

/**
 * The one exception Cereal raises for a graph it cannot write or a stream it cannot read.
 *
 * <p>For a malformed stream (truncated, a corrupt offset, an unknown class ID, a size past the
 * input, a negative length) the message names what is wrong and {@link #byteOffset()} where: the
 * offset of the offending byte from the start of the frame's stream (the array passed to
 * {@link Cereal#deserialize(byte[])}, or everything a {@link CerealInput} has read). A stream is
 * checked before anything is allocated from it, so a corrupt one raises this and never an
 * {@link OutOfMemoryError} or a hang.
 */
public class CerealException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final long byteOffset;

  /** An error with no position in a stream (for example an unregistered class while writing). */
  public CerealException(String message) {
    this(message, -1, null);
  }

  /** An error with a cause and no position in a stream. */
  public CerealException(String message, Throwable cause) {
    this(message, -1, cause);
  }

  /** An error in a stream at {@code byteOffset} (-1 where not known). */
  public CerealException(String message, long byteOffset, Throwable cause) {
    super(byteOffset >= 0 ? message + " (at byte " + byteOffset + ")" : message, cause);
    this.byteOffset = byteOffset;
  }

  /** Where in the stream the error was found, or -1 where it has no position. */
  public long byteOffset() {
    return byteOffset;
  }
}
