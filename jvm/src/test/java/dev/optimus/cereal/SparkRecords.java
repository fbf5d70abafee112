package dev.optimus.cereal;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Supplier;

/**
 * The records the Spark jobs of {@code jvm/spark} (its {@code SparkJobs} and {@code Model})
 * hand to the serializer, built without Spark: the same classes (copies with the same fields,
 * in this module, which does not depend on Spark or Scala), the same generators and seeds
 * (partition 0 of scale 1), written as Spark writes them: a shuffle record is a key and a value,
 * two {@code writeObject} calls; a {@code MEMORY_ONLY_SER} cached element is one. {@link Tuple2}
 * stands for Scala's: two reference fields {@code _1} and {@code _2}, as {@code scala.Tuple2}
 * has (its specialized subclasses aside).
 *
 * <p>Each workload is a stream of a few hundred records, so that its trace stays small
 * ({@link SparkBench}): what it holds, per job, is in {@link #workloads}.
 */
public final class SparkRecords {
  private SparkRecords() {}

  /** Scala's {@code Tuple2}: two references. */
  public static final class Tuple2 implements Serializable {
    public final Object _1;
    public final Object _2;

    public Tuple2(Object a, Object b) {
      _1 = a;
      _2 = b;
    }
  }

  /** {@code Model.Page}. */
  public static final class Page implements Serializable {
    public int id;
    public String url;
    public ArrayList<Integer> links = new ArrayList<>();

    public Page(int id, String url) {
      this.id = id;
      this.url = url;
    }
  }

  /** {@code Model.Point}. */
  public static final class Point implements Serializable {
    public double label;
    public double[] features;

    public Point(double label, double[] features) {
      this.label = label;
      this.features = features;
    }
  }

  /** {@code Model.Centroid}. */
  public static final class Centroid implements Serializable {
    public double[] sum;
    public long count;
    public List<Double> labels = new ArrayList<>();

    public Centroid(int dims) {
      sum = new double[dims];
    }

    Centroid add(Point p) {
      for (int i = 0; i < sum.length; i++) sum[i] += p.features[i];
      count++;
      if (labels.size() < 4) labels.add(p.label);
      return this;
    }
  }

  /** {@code Model.Rating}. */
  public static final class Rating implements Serializable {
    public int user;
    public int item;
    public double score;
    public List<String> tags;

    public Rating(int user, int item, double score, List<String> tags) {
      this.user = user;
      this.item = item;
      this.score = score;
      this.tags = tags;
    }
  }

  /** {@code Model.UserProfile}. */
  public static final class UserProfile implements Serializable {
    public long count;
    public double sum;
    public ArrayList<Integer> items = new ArrayList<>();
    public ArrayList<String> tags = new ArrayList<>();

    UserProfile add(Rating r) {
      count++;
      sum += r.score;
      items.add(r.item);
      for (String t : r.tags) if (!tags.contains(t)) tags.add(t);
      return this;
    }
  }

  /** {@code Model.Doc}. */
  public static final class Doc implements Serializable {
    public int label;
    public List<String> words;

    public Doc(int label, List<String> words) {
      this.label = label;
      this.words = words;
    }
  }

  /** {@code Model.TeraRecord}. */
  public static final class TeraRecord implements Serializable {
    public String key;
    public byte[] payload;
    public long seq;

    public TeraRecord(String key, byte[] payload, long seq) {
      this.key = key;
      this.payload = payload;
      this.seq = seq;
    }
  }

  /** The classes to register, for Kryo and Cereal alike (as the Spark tests register Model's). */
  static final Class<?>[] CLASSES = {Tuple2.class, Page.class, Point.class, Centroid.class,
      Rating.class, UserProfile.class, Doc.class, TeraRecord.class};

  /** Key/value pairs each handed over as two records (a shuffle's writeKey, writeValue). */
  private static final int PAIRS = 200;

  /** Workload name (the trace's file stem) to its record stream, in table order. */
  static Map<String, Supplier<List<Object>>> workloads() {
    Map<String, Supplier<List<Object>>> w = new LinkedHashMap<>();
    w.put("spark-wordcount", SparkRecords::wordCount);
    w.put("spark-terasort", SparkRecords::teraSort);
    w.put("spark-pagerank", SparkRecords::pageRank);
    w.put("spark-kmeans", SparkRecords::kMeans);
    w.put("spark-als", SparkRecords::als);
    w.put("spark-bayes", SparkRecords::bayes);
    return w;
  }

  /**
   * Streams of one user class alone, the records that cost Cereal most for their size (a frame
   * for a graph of 3 to 20 objects): the TeraRecords of {@code spark-terasort} without their keys
   * and the UserProfiles of {@code spark-als}. Timed by {@link SparkBench} after the jobs' streams;
   * no traces.
   */
  static Map<String, Supplier<List<Object>>> singleClassWorkloads() {
    Map<String, Supplier<List<Object>>> w = new LinkedHashMap<>();
    w.put("terasort-records", () -> only(teraSort(), TeraRecord.class));
    w.put("als-profiles", () -> only(als(), UserProfile.class));
    return w;
  }

  private static List<Object> only(List<Object> records, Class<?> type) {
    List<Object> out = new ArrayList<>();
    for (Object r : records) if (r.getClass() == type) out.add(r);
    return out;
  }

  // ------------------------------------------------------------------ the jobs' records

  /** {@code reduceByKey}'s map-side combined (word, count): a String key, an Integer value. */
  static List<Object> wordCount() {
    Map<String, Integer> counts = new LinkedHashMap<>();
    SplittableRandom r = new SplittableRandom(1000);
    while (counts.size() < PAIRS) {
      int n = 4 + r.nextInt(12);
      for (int j = 0; j < n; j++) counts.merge(word(r), 1, Integer::sum);
    }
    List<Object> out = new ArrayList<>();
    counts.entrySet().stream().limit(PAIRS).forEach(e -> {
      out.add(e.getKey());
      out.add(e.getValue());
    });
    return out;
  }

  /** {@code sortByKey}'s shuffle: the record's key String, then the record (which holds it). */
  static List<Object> teraSort() {
    SplittableRandom r = new SplittableRandom(2000);
    List<Object> out = new ArrayList<>();
    for (int i = 0; i < PAIRS; i++) {
      char[] k = new char[10];
      for (int j = 0; j < 10; j++) k[j] = (char) (' ' + 1 + r.nextInt(94));
      byte[] payload = new byte[90];
      for (int j = 0; j < 90; j++) payload[j] = (byte) ('A' + r.nextInt(26));
      TeraRecord rec = new TeraRecord(new String(k), payload, i);
      out.add(rec.key);
      out.add(rec);
    }
    return out;
  }

  /**
   * The cached links, {@code (Integer id, Page)} tuples, one record each (read back in every
   * iteration), then one iteration's shuffled contributions, {@code (Integer dst, Double sum)}
   * combined map-side, as key and value records.
   */
  static List<Object> pageRank() {
    int n = 2000;
    SplittableRandom r = new SplittableRandom(3000);
    List<Object> out = new ArrayList<>();
    Map<Integer, Double> contribs = new LinkedHashMap<>();
    for (int id = 0; id < 4 * PAIRS / 2; id += 4) {
      Page p = new Page(id, "http://example.org/p/" + id);
      int degree = 1 + r.nextInt(12);
      for (int j = 0; j < degree; j++) {
        double u = r.nextDouble();
        p.links.add((int) (n * u * u));
      }
      out.add(new Tuple2(p.id, p));
      for (int dst : p.links) contribs.merge(dst, 1.0 / p.links.size(), Double::sum);
    }
    contribs.entrySet().stream().limit(PAIRS / 2).forEach(e -> {
      out.add(e.getKey());
      out.add(e.getValue());
    });
    return out;
  }

  /**
   * The cached points, one record each (read back in every iteration), then one iteration's
   * shuffled combiners, {@code (Integer cluster, Centroid)}, as key and value records.
   */
  static List<Object> kMeans() {
    SplittableRandom r = new SplittableRandom(4000);
    List<Object> out = new ArrayList<>();
    Centroid[] sums = new Centroid[5];
    for (int i = 0; i < PAIRS; i++) {
      int cluster = r.nextInt(5);
      double[] f = new double[16];
      for (int j = 0; j < f.length; j++) f[j] = cluster * 8 + (j % 3) + r.nextInt(129) / 64.0 - 1;
      Point p = new Point(cluster, f);
      out.add(p);
      if (sums[cluster] == null) sums[cluster] = new Centroid(16);
      sums[cluster].add(p);
    }
    for (int k = 0; k < sums.length; k++) {
      if (sums[k] == null) continue;
      out.add(k);
      out.add(sums[k]);
    }
    return out;
  }

  /**
   * {@code aggregateByKey}'s combined {@code (Integer user, UserProfile)}, the popularity
   * {@code reduceByKey}'s {@code (Integer item, Integer count)} and the {@code groupByKey}'s
   * {@code (Integer item, Integer user)}, each as key and value records.
   */
  static List<Object> als() {
    SplittableRandom r = new SplittableRandom(5000);
    String[] tags = {"drama", "comedy", "sci-fi", "classic", "new", "family", "indie"};
    List<Rating> ratings = new ArrayList<>();
    for (int i = 0; i < 6000; i++) {
      int user = r.nextInt(500);
      double u = r.nextDouble();
      int item = (int) (1000 * u * u);
      List<String> t = new ArrayList<>();
      for (int j = r.nextInt(3); j > 0; j--) t.add(tags[r.nextInt(tags.length)]);
      ratings.add(new Rating(user, item, 1 + r.nextInt(9) / 2.0, t));
    }
    Map<Integer, UserProfile> profiles = new LinkedHashMap<>();
    Map<Integer, Integer> popularity = new LinkedHashMap<>();
    for (Rating x : ratings) {
      profiles.computeIfAbsent(x.user, k -> new UserProfile()).add(x);
      popularity.merge(x.item, 1, Integer::sum);
    }
    List<Object> out = new ArrayList<>();
    profiles.entrySet().stream().limit(PAIRS / 4).forEach(e -> {
      out.add(e.getKey());
      out.add(e.getValue());
    });
    popularity.entrySet().stream().limit(PAIRS / 4).forEach(e -> {
      out.add(e.getKey());
      out.add(e.getValue());
    });
    for (Rating x : ratings.subList(0, PAIRS / 2)) {
      out.add(x.item);
      out.add(x.user);
    }
    return out;
  }

  /** {@code reduceByKey}'s combined {@code ((Integer label, String word), Long count)}. */
  static List<Object> bayes() {
    SplittableRandom r = new SplittableRandom(6000);
    Map<List<Object>, Long> counts = new LinkedHashMap<>();
    while (counts.size() < PAIRS) {
      int label = r.nextInt(4);
      int n = 5 + r.nextInt(20);
      for (int j = 0; j < n; j++) {
        String w = r.nextInt(4) == 0 ? VOCABULARY[label * 50 + r.nextInt(50)] : word(r);
        counts.merge(List.of(label, w), 1L, Long::sum);
      }
    }
    List<Object> out = new ArrayList<>();
    counts.entrySet().stream().limit(PAIRS).forEach(e -> {
      out.add(new Tuple2(e.getKey().get(0), e.getKey().get(1)));
      out.add(e.getValue());
    });
    return out;
  }

  // ------------------------------------------------------------------ SparkJobs' generators

  private static final String[] VOCABULARY = vocabulary();

  private static String[] vocabulary() {
    SplittableRandom r = new SplittableRandom(7);
    String[] v = new String[2000];
    for (int i = 0; i < v.length; i++) {
      StringBuilder b = new StringBuilder();
      int len = 3 + r.nextInt(8);
      for (int j = 0; j < len; j++) b.append((char) ('a' + r.nextInt(26)));
      v[i] = b.toString() + i;
    }
    return v;
  }

  private static String word(SplittableRandom r) {
    double u = r.nextDouble();
    return VOCABULARY[(int) (VOCABULARY.length * u * u * u)];
  }
}
