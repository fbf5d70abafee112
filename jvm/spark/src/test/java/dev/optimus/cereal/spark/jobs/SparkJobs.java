package dev.optimus.cereal.spark.jobs;

import dev.optimus.cereal.spark.jobs.Model.Centroid;
import dev.optimus.cereal.spark.jobs.Model.Doc;
import dev.optimus.cereal.spark.jobs.Model.Page;
import dev.optimus.cereal.spark.jobs.Model.Point;
import dev.optimus.cereal.spark.jobs.Model.Rating;
import dev.optimus.cereal.spark.jobs.Model.TeraRecord;
import dev.optimus.cereal.spark.jobs.Model.UserProfile;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.HashPartitioner;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.storage.StorageLevel;
import scala.Tuple2;

/**
 * Six Spark jobs in the spirit of the Cereal paper's HiBench workloads, at sizes for a small
 * machine, each returning a digest of its result (a SHA-256 of the result's canonical text and a
 * few readable figures) so that runs under Java serialization, Kryo and Cereal can be compared.
 * The data is generated inside the tasks from seeds, so every run sees the same records.
 *
 * <ul>
 *   <li>{@code wordcount}: strings through a map-side-combined shuffle ({@code reduceByKey}).
 *   <li>{@code terasort}: {@link TeraRecord}s (10-character key, 90-byte payload) through a
 *       range-partitioned {@code sortByKey}; the result is checked to be sorted.
 *   <li>{@code pagerank} (HiBench's NWeight/PageRank graph): {@link Page}s with out-link lists,
 *       partitioned and cached serialized ({@code MEMORY_ONLY_SER}), joined with the ranks in
 *       each of 5 iterations.
 *   <li>{@code kmeans} (LR/SVM/KMeans vectors): {@link Point}s with double arrays cached
 *       serialized; 5 iterations whose shuffled combiners are {@link Centroid}s.
 *   <li>{@code als} (ALS ratings): {@link Rating}s aggregated per user into {@link UserProfile}s
 *       with lists, a {@code groupByKey}, and a join with item popularity.
 *   <li>{@code bayes}: {@link Doc}s to per-label word counts keyed by tuples, and log-likelihoods.
 * </ul>
 *
 * <p>{@link #expected} computes the digest of {@code wordcount}, {@code terasort} and
 * {@code bayes} without Spark, from the same generators, as an independent reference.
 */
public final class SparkJobs {
  private SparkJobs() {}

  public static final List<String> JOBS =
      List.of("wordcount", "terasort", "pagerank", "kmeans", "als", "bayes");
  private static final int PARTS = 4;

  /** Runs {@code job} at {@code scale} (1 for the tests) and returns its digest. */
  public static String run(JavaSparkContext jsc, String job, int scale) {
    switch (job) {
      case "wordcount": return wordCount(jsc, scale);
      case "terasort": return teraSort(jsc, scale);
      case "pagerank": return pageRank(jsc, scale);
      case "kmeans": return kMeans(jsc, scale);
      case "als": return als(jsc, scale);
      case "bayes": return bayes(jsc, scale);
      default: throw new IllegalArgumentException("unknown job " + job + " (jobs: " + JOBS + ")");
    }
  }

  /** The jobs' names, comma-separated (for Python). */
  public static String jobs() {
    return String.join(",", JOBS);
  }

  private static JavaRDD<Integer> seeds(JavaSparkContext jsc) {
    return jsc.parallelize(IntStream.range(0, PARTS).boxed().collect(Collectors.toList()), PARTS);
  }

  // ------------------------------------------------------------------ data

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

  /** A word with a Zipf-like skew: low indices are frequent. */
  private static String word(SplittableRandom r) {
    double u = r.nextDouble();
    return VOCABULARY[(int) (VOCABULARY.length * u * u * u)];
  }

  static List<String> lines(int part, int scale) {
    SplittableRandom r = new SplittableRandom(1000 + part);
    List<String> out = new ArrayList<>();
    for (int i = 0; i < 2500 * scale; i++) {
      int n = 4 + r.nextInt(12);
      StringBuilder b = new StringBuilder();
      for (int j = 0; j < n; j++) b.append(j == 0 ? "" : " ").append(word(r));
      out.add(b.toString());
    }
    return out;
  }

  static List<TeraRecord> teraRecords(int part, int scale) {
    SplittableRandom r = new SplittableRandom(2000 + part);
    List<TeraRecord> out = new ArrayList<>();
    int n = 5000 * scale;
    for (int i = 0; i < n; i++) {
      char[] k = new char[10];
      for (int j = 0; j < 10; j++) k[j] = (char) (' ' + 1 + r.nextInt(94));
      byte[] payload = new byte[90];
      for (int j = 0; j < 90; j++) payload[j] = (byte) ('A' + r.nextInt(26));
      out.add(new TeraRecord(new String(k), payload, (long) part * n + i));
    }
    return out;
  }

  static List<Page> pages(int part, int scale) {
    int n = 2000 * scale;
    SplittableRandom r = new SplittableRandom(3000 + part);
    List<Page> out = new ArrayList<>();
    for (int id = part; id < n; id += PARTS) {
      Page p = new Page(id, "http://example.org/p/" + id);
      int degree = 1 + r.nextInt(12);
      for (int j = 0; j < degree; j++) {
        double u = r.nextDouble();
        p.links.add((int) (n * u * u)); // skewed: low ids are popular
      }
      out.add(p);
    }
    return out;
  }

  static List<Point> points(int part, int scale) {
    SplittableRandom r = new SplittableRandom(4000 + part);
    List<Point> out = new ArrayList<>();
    for (int i = 0; i < 5000 * scale; i++) {
      int cluster = r.nextInt(5);
      double[] f = new double[16];
      // Multiples of 1/64 near the cluster's centre: sums are exact in any order.
      for (int j = 0; j < f.length; j++) f[j] = cluster * 8 + (j % 3) + r.nextInt(129) / 64.0 - 1;
      out.add(new Point(cluster, f));
    }
    return out;
  }

  static List<Rating> ratings(int part, int scale) {
    SplittableRandom r = new SplittableRandom(5000 + part);
    List<Rating> out = new ArrayList<>();
    String[] tags = {"drama", "comedy", "sci-fi", "classic", "new", "family", "indie"};
    for (int i = 0; i < 6000 * scale; i++) {
      int user = r.nextInt(500 * scale);
      double u = r.nextDouble();
      int item = (int) (1000 * u * u);
      List<String> t = new ArrayList<>();
      for (int j = r.nextInt(3); j > 0; j--) t.add(tags[r.nextInt(tags.length)]);
      out.add(new Rating(user, item, 1 + r.nextInt(9) / 2.0, t));
    }
    return out;
  }

  static List<Doc> docs(int part, int scale) {
    SplittableRandom r = new SplittableRandom(6000 + part);
    List<Doc> out = new ArrayList<>();
    for (int i = 0; i < 1500 * scale; i++) {
      int label = r.nextInt(4);
      List<String> words = new ArrayList<>();
      int n = 5 + r.nextInt(20);
      for (int j = 0; j < n; j++) {
        words.add(r.nextInt(4) == 0 ? VOCABULARY[label * 50 + r.nextInt(50)] : word(r));
      }
      out.add(new Doc(label, words));
    }
    return out;
  }

  // ------------------------------------------------------------------ jobs

  private static String wordCount(JavaSparkContext jsc, int scale) {
    List<Tuple2<String, Integer>> counts = seeds(jsc)
        .flatMap(p -> lines(p, scale).iterator())
        .flatMap(line -> Arrays.asList(line.split(" ")).iterator())
        .mapToPair(w -> new Tuple2<>(w, 1))
        .reduceByKey(Integer::sum, PARTS)
        .collect();
    TreeMap<String, Integer> sorted = new TreeMap<>();
    for (Tuple2<String, Integer> t : counts) sorted.put(t._1(), t._2());
    return wordCountDigest(sorted);
  }

  private static String wordCountDigest(TreeMap<String, Integer> sorted) {
    long total = sorted.values().stream().mapToLong(Integer::longValue).sum();
    return "wordcount distinct=" + sorted.size() + " total=" + total + " sha=" + sha(sorted.toString());
  }

  private static String teraSort(JavaSparkContext jsc, int scale) {
    JavaPairRDD<String, TeraRecord> sorted = seeds(jsc)
        .flatMap(p -> teraRecords(p, scale).iterator())
        .mapToPair(rec -> new Tuple2<>(rec.key, rec))
        .sortByKey(true, PARTS);
    // The records themselves come back (task results), the payloads checked on the JVM side.
    List<String> keys = sorted.map(t -> t._1() + "/" + t._2().seq + "/" + payloadSum(t._2().payload))
        .collect();
    return teraDigest(keys);
  }

  private static int payloadSum(byte[] p) {
    int s = 0;
    for (byte b : p) s = 31 * s + b;
    return s;
  }

  private static String teraDigest(List<String> keys) {
    boolean ordered = true;
    for (int i = 1; i < keys.size(); i++) {
      String a = keys.get(i - 1), b = keys.get(i);
      if (a.substring(0, 10).compareTo(b.substring(0, 10)) > 0) ordered = false;
    }
    // Equal keys may come in either order: digest the multiset of records per key order.
    List<String> canonical = new ArrayList<>(keys);
    Collections.sort(canonical);
    return "terasort records=" + keys.size() + " sorted=" + ordered + " sha=" + sha(canonical.toString());
  }

  private static String pageRank(JavaSparkContext jsc, int scale) {
    JavaPairRDD<Integer, Page> links = seeds(jsc)
        .flatMap(p -> pages(p, scale).iterator())
        .mapToPair(p -> new Tuple2<>(p.id, p))
        .partitionBy(new HashPartitioner(PARTS))
        .persist(StorageLevel.MEMORY_ONLY_SER());
    JavaPairRDD<Integer, Double> ranks = links.mapValues(p -> 1.0);
    for (int it = 0; it < 5; it++) {
      JavaPairRDD<Integer, Double> contribs = links.join(ranks).values().flatMapToPair(pr -> {
        Page page = pr._1();
        double share = pr._2() / page.links.size();
        List<Tuple2<Integer, Double>> out = new ArrayList<>();
        for (int dst : page.links) out.add(new Tuple2<>(dst, share));
        return out.iterator();
      });
      ranks = contribs.reduceByKey(Double::sum, PARTS).mapValues(s -> 0.15 + 0.85 * s);
    }
    List<Tuple2<Integer, Double>> all = new ArrayList<>(ranks.collect());
    // Joined in any order, summed in any order: compare ranks to 9 significant digits.
    all.sort((a, b) -> Integer.compare(a._1(), b._1()));
    StringBuilder text = new StringBuilder();
    for (Tuple2<Integer, Double> t : all) text.append(t._1()).append('=').append(fmt(t._2())).append(';');
    List<Tuple2<Integer, Double>> top = new ArrayList<>(all);
    top.sort((a, b) -> Double.compare(b._2(), a._2()));
    long cachedPages = links.count();
    links.unpersist(true);
    return "pagerank pages=" + cachedPages + " ranked=" + all.size() + " top=" + top.get(0)._1()
        + ":" + fmt(top.get(0)._2()) + " sha=" + sha(text.toString());
  }

  private static String kMeans(JavaSparkContext jsc, int scale) {
    JavaRDD<Point> points = seeds(jsc)
        .flatMap(p -> points(p, scale).iterator())
        .persist(StorageLevel.MEMORY_ONLY_SER());
    List<Point> first = points.take(5);
    double[][] centers = new double[first.size()][];
    for (int i = 0; i < centers.length; i++) centers[i] = first.get(i).features.clone();
    long[] sizes = new long[centers.length];
    for (int it = 0; it < 5; it++) {
      double[][] c = centers;
      Map<Integer, Centroid> sums = points
          .mapToPair(p -> new Tuple2<>(closest(c, p.features), new Centroid(p.features.length).add(p)))
          .reduceByKey(Centroid::merge, PARTS)
          .collectAsMap();
      double[][] next = new double[c.length][];
      for (int k = 0; k < c.length; k++) {
        Centroid s = sums.get(k);
        if (s == null) {
          next[k] = c[k];
          sizes[k] = 0;
          continue;
        }
        next[k] = new double[s.sum.length];
        for (int j = 0; j < s.sum.length; j++) next[k][j] = s.sum[j] / s.count;
        sizes[k] = s.count;
      }
      centers = next;
    }
    points.unpersist(true);
    StringBuilder text = new StringBuilder();
    for (double[] c : centers) {
      for (double x : c) text.append(fmt(x)).append(',');
      text.append(';');
    }
    return "kmeans sizes=" + Arrays.toString(sizes) + " sha=" + sha(text.toString());
  }

  private static int closest(double[][] centers, double[] f) {
    int best = 0;
    double bestD = Double.MAX_VALUE;
    for (int k = 0; k < centers.length; k++) {
      double d = 0;
      for (int j = 0; j < f.length; j++) d += (f[j] - centers[k][j]) * (f[j] - centers[k][j]);
      if (d < bestD) {
        bestD = d;
        best = k;
      }
    }
    return best;
  }

  private static String als(JavaSparkContext jsc, int scale) {
    JavaRDD<Rating> ratings = seeds(jsc).flatMap(p -> ratings(p, scale).iterator()).cache();
    JavaPairRDD<Integer, UserProfile> profiles = ratings
        .mapToPair(r -> new Tuple2<>(r.user, r))
        .aggregateByKey(new UserProfile(), PARTS, UserProfile::add, UserProfile::merge);
    JavaPairRDD<Integer, Integer> popularity = ratings
        .mapToPair(r -> new Tuple2<>(r.item, 1))
        .reduceByKey(Integer::sum, PARTS);
    // Per user: the summed popularity of the items rated, through a join on the item.
    JavaPairRDD<Integer, Long> exposure = profiles
        .flatMapToPair(t -> {
          List<Tuple2<Integer, Integer>> out = new ArrayList<>();
          for (int item : t._2().items) out.add(new Tuple2<>(item, t._1()));
          return out.iterator();
        })
        .join(popularity, PARTS)
        .mapToPair(t -> new Tuple2<>(t._2()._1(), (long) t._2()._2()))
        .reduceByKey(Long::sum, PARTS);
    // And a groupByKey, whose values Spark collects into its CompactBuffer.
    JavaPairRDD<Integer, Integer> ratingsPerItem = ratings
        .mapToPair(r -> new Tuple2<>(r.item, r.user))
        .groupByKey(PARTS)
        .mapValues(users -> {
          int n = 0;
          for (Iterator<Integer> i = users.iterator(); i.hasNext(); i.next()) n++;
          return n;
        });
    TreeMap<Integer, String> perUser = new TreeMap<>();
    for (Tuple2<Integer, Tuple2<UserProfile, Long>> t : profiles.join(exposure, PARTS).collect()) {
      UserProfile p = t._2()._1();
      List<Integer> items = new ArrayList<>(p.items);
      Collections.sort(items);
      List<String> tags = new ArrayList<>(p.tags);
      Collections.sort(tags);
      perUser.put(t._1(), p.count + ":" + fmt(p.sum / p.count) + ":" + items + ":" + tags + ":" + t._2()._2());
    }
    TreeMap<Integer, Integer> perItem = new TreeMap<>(ratingsPerItem.collectAsMap());
    ratings.unpersist(true);
    return "als users=" + perUser.size() + " items=" + perItem.size() + " sha="
        + sha(perUser.toString() + perItem.toString());
  }

  private static String bayes(JavaSparkContext jsc, int scale) {
    List<Tuple2<Tuple2<Integer, String>, Long>> counts = seeds(jsc)
        .flatMap(p -> docs(p, scale).iterator())
        .flatMapToPair(d -> {
          List<Tuple2<Tuple2<Integer, String>, Long>> out = new ArrayList<>();
          for (String w : d.words) out.add(new Tuple2<>(new Tuple2<>(d.label, w), 1L));
          return out.iterator();
        })
        .reduceByKey(Long::sum, PARTS)
        .collect();
    TreeMap<String, Long> table = new TreeMap<>();
    for (Tuple2<Tuple2<Integer, String>, Long> t : counts) table.put(t._1()._1() + "|" + t._1()._2(), t._2());
    return bayesDigest(table);
  }

  private static String bayesDigest(TreeMap<String, Long> table) {
    long[] perLabel = new long[4];
    for (Map.Entry<String, Long> e : table.entrySet()) perLabel[e.getKey().charAt(0) - '0'] += e.getValue();
    StringBuilder text = new StringBuilder();
    for (Map.Entry<String, Long> e : table.entrySet()) {
      int label = e.getKey().charAt(0) - '0';
      double logLikelihood = Math.log((e.getValue() + 1.0) / (perLabel[label] + VOCABULARY.length));
      text.append(e.getKey()).append('=').append(e.getValue()).append(':').append(fmt(logLikelihood)).append(';');
    }
    return "bayes terms=" + table.size() + " words=" + Arrays.toString(perLabel) + " sha=" + sha(text.toString());
  }

  // ------------------------------------------------------------------ references without Spark

  /** The digest of {@code job} computed without Spark, or null where there is none. */
  public static String expected(String job, int scale) {
    switch (job) {
      case "wordcount": {
        TreeMap<String, Integer> m = new TreeMap<>();
        for (int p = 0; p < PARTS; p++) {
          for (String line : lines(p, scale)) for (String w : line.split(" ")) m.merge(w, 1, Integer::sum);
        }
        return wordCountDigest(m);
      }
      case "terasort": {
        List<TeraRecord> all = new ArrayList<>();
        for (int p = 0; p < PARTS; p++) all.addAll(teraRecords(p, scale));
        all.sort((a, b) -> a.key.compareTo(b.key));
        List<String> keys = new ArrayList<>();
        for (TeraRecord r : all) keys.add(r.key + "/" + r.seq + "/" + payloadSum(r.payload));
        return teraDigest(keys);
      }
      case "bayes": {
        TreeMap<String, Long> table = new TreeMap<>();
        for (int p = 0; p < PARTS; p++) {
          for (Doc d : docs(p, scale)) for (String w : d.words) table.merge(d.label + "|" + w, 1L, Long::sum);
        }
        return bayesDigest(table);
      }
      default:
        return null;
    }
  }

  // ------------------------------------------------------------------ helpers

  static String fmt(double x) {
    return String.format(Locale.ROOT, "%.9g", x);
  }

  static String sha(String text) {
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      return HexFormat.of().formatHex(md.digest(text.getBytes(StandardCharsets.UTF_8))).substring(0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
