package dev.optimus.cereal.trace;

import java.io.ByteArrayOutputStream;

/**
 * One serialized graph as it is written: {@link #object} per object in layout order, then
 * {@link #finish} with the graph's references (the writer's own zigzagged relative offsets,
 * turned back into the layout words they point to) and the sizes of the frame's arrays.
 * Not thread-safe: one per graph, on the writer's thread.
 */
public final class GraphTrace {
  private final CerealTrace owner;
  private int[] objects = new int[3 * 64];
  private int count;
  private long words;

  GraphTrace(CerealTrace owner) {
    this.owner = owner;
  }

  /**
   * Records the next object: its class ID, its value words (header included) and how many
   * references it holds (its last layout words).
   */
  public void object(int classId, int valueWords, int refCount) {
    if (3 * count + 3 > objects.length) objects = java.util.Arrays.copyOf(objects, objects.length * 2);
    objects[3 * count] = classId;
    objects[3 * count + 1] = valueWords;
    objects[3 * count + 2] = refCount;
    count++;
    words += (long) valueWords + refCount;
  }

  /**
   * Ends the graph. {@code refs[0..refCount)} are the writer's references in layout order:
   * 0 for null, else {@code zigzag(target - slot)}.
   *
   * @throws IllegalStateException if the references do not match the objects recorded
   */
  public void finish(int[] refs, int refCount, int valueBytes, int refBytes, int bitmapBytes,
      int frameBytes) {
    ByteArrayOutputStream r = new ByteArrayOutputStream(16 + 4 * count + 3 * refCount);
    r.write(CerealTrace.SERIALIZE);
    CerealTrace.putVarint(r, count);
    CerealTrace.putVarint(r, (int) words);
    CerealTrace.putVarint(r, valueBytes);
    CerealTrace.putVarint(r, refBytes);
    CerealTrace.putVarint(r, bitmapBytes);
    CerealTrace.putVarint(r, frameBytes);
    int word = 0;
    int k = 0;
    for (int i = 0; i < count; i++) {
      int vw = objects[3 * i + 1];
      int rc = objects[3 * i + 2];
      CerealTrace.putVarint(r, objects[3 * i]);
      CerealTrace.putVarint(r, vw);
      CerealTrace.putVarint(r, rc);
      int slot = word + vw;
      for (int j = 0; j < rc; j++, k++, slot++) {
        if (k >= refCount) throw new IllegalStateException("trace: fewer references than objects hold");
        int z = refs[k];
        if (z == 0) {
          CerealTrace.putVarint(r, 0);
        } else {
          long target = slot + ((z >>> 1) ^ -(z & 1));
          CerealTrace.putVarint(r, (int) target + 1);
        }
      }
      word += vw + rc;
    }
    if (k != refCount) throw new IllegalStateException("trace: more references than objects hold");
    owner.append(r, true);
  }
}
