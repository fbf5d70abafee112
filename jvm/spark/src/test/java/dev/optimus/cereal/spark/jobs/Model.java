package dev.optimus.cereal.spark.jobs;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The user classes of the Spark jobs ({@link SparkJobs}): small record-like objects with nested
 * lists and arrays, as a Spark application's values are. Plain mutable classes (Java
 * serialization needs {@code Serializable}; Kryo and Cereal need nothing).
 */
public final class Model {
  private Model() {}

  /** The classes, as {@code spark.kryo.classesToRegister} / {@code spark.cereal.classesToRegister} list them. */
  public static String classNames() {
    return String.join(",", Page.class.getName(), Point.class.getName(),
        Centroid.class.getName(), Rating.class.getName(), UserProfile.class.getName(),
        Doc.class.getName(), TeraRecord.class.getName());
  }

  /** A web page of the PageRank job: its out-links. */
  public static final class Page implements Serializable {
    public int id;
    public String url;
    public ArrayList<Integer> links = new ArrayList<>();

    public Page(int id, String url) {
      this.id = id;
      this.url = url;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Page p && p.id == id && p.url.equals(url) && p.links.equals(links);
    }

    @Override
    public int hashCode() {
      return Objects.hash(id, url, links);
    }
  }

  /** A labelled vector of the KMeans job. */
  public static final class Point implements Serializable {
    public double label;
    public double[] features;

    public Point(double label, double[] features) {
      this.label = label;
      this.features = features;
    }
  }

  /** A running sum of points (KMeans' shuffled combiner). */
  public static final class Centroid implements Serializable {
    public double[] sum;
    public long count;
    public List<Double> labels = new ArrayList<>();

    public Centroid(int dims) {
      sum = new double[dims];
    }

    public Centroid add(Point p) {
      for (int i = 0; i < sum.length; i++) sum[i] += p.features[i];
      count++;
      if (labels.size() < 4) labels.add(p.label);
      return this;
    }

    public Centroid merge(Centroid o) {
      for (int i = 0; i < sum.length; i++) sum[i] += o.sum[i];
      count += o.count;
      for (Double l : o.labels) if (labels.size() < 4) labels.add(l);
      return this;
    }
  }

  /** A rating of the ALS-like job, with free-form tags. */
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

  /** A user's aggregated ratings (the ALS-like job's shuffled combiner). */
  public static final class UserProfile implements Serializable {
    public long count;
    public double sum;
    public ArrayList<Integer> items = new ArrayList<>();
    public ArrayList<String> tags = new ArrayList<>();

    public UserProfile add(Rating r) {
      count++;
      sum += r.score;
      items.add(r.item);
      for (String t : r.tags) if (!tags.contains(t)) tags.add(t);
      return this;
    }

    public UserProfile merge(UserProfile o) {
      count += o.count;
      sum += o.sum;
      items.addAll(o.items);
      for (String t : o.tags) if (!tags.contains(t)) tags.add(t);
      return this;
    }
  }

  /** A labelled document of the Bayes job. */
  public static final class Doc implements Serializable {
    public int label;
    public List<String> words;

    public Doc(int label, List<String> words) {
      this.label = label;
      this.words = words;
    }
  }

  /** A TeraSort record: a 10-character key and a 90-byte payload. */
  public static final class TeraRecord implements Serializable {
    public String key;
    public byte[] payload;
    public long seq;

    public TeraRecord(String key, byte[] payload, long seq) {
      this.key = key;
      this.payload = payload;
      this.seq = seq;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof TeraRecord r && r.seq == seq && r.key.equals(key)
          && Arrays.equals(r.payload, payload);
    }

    @Override
    public int hashCode() {
      return Long.hashCode(seq);
    }
  }
}
