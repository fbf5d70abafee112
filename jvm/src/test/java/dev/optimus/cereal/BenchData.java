package dev.optimus.cereal;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The benchmark's data: the jvm-serializers suite's {@code MediaContent} (same classes and the
 * same standard instance as its data.media package) and the Cereal paper's microbenchmark shapes
 * (Tree narrow and wide, List, Graph sparse and dense), built from a fixed seed.
 */
final class BenchData {
  private BenchData() {}

  // ------------------------------------------------------------ jvm-serializers' data.media

  public enum Player { JAVA, FLASH }

  public enum Size { SMALL, LARGE }

  public static final class Media implements Serializable {
    private static final long serialVersionUID = 1L;
    public String uri;
    public String title;
    public int width;
    public int height;
    public String format;
    public long duration;
    public long size;
    public int bitrate;
    public boolean hasBitrate;
    public List<String> persons;
    public Player player;
    public String copyright;
  }

  public static final class Image implements Serializable {
    private static final long serialVersionUID = 1L;
    public String uri;
    public String title;
    public int width;
    public int height;
    public Size size;

    public Image() {}

    Image(String uri, String title, int width, int height, Size size) {
      this.uri = uri;
      this.title = title;
      this.width = width;
      this.height = height;
      this.size = size;
    }
  }

  public static final class MediaContent implements Serializable {
    private static final long serialVersionUID = 1L;
    public Media media;
    public List<Image> images;
  }

  /** The suite's standard MediaContent instance. */
  static MediaContent mediaContent() {
    Media m = new Media();
    m.uri = "http://javaone.com/keynote.mpg";
    m.title = "Javaone Keynote";
    m.width = 640;
    m.height = 480;
    m.format = "video/mpg4";
    m.duration = 18_000_000;
    m.size = 58_982_400;
    m.bitrate = 262_144;
    m.hasBitrate = true;
    m.persons = new ArrayList<>(List.of("Bill Gates", "Steve Jobs"));
    m.player = Player.JAVA;
    m.copyright = null;
    MediaContent c = new MediaContent();
    c.media = m;
    c.images = new ArrayList<>(List.of(
        new Image("http://javaone.com/keynote_large.jpg", "Javaone Keynote", 1024, 768, Size.LARGE),
        new Image("http://javaone.com/keynote_small.jpg", "Javaone Keynote", 320, 240, Size.SMALL)));
    return c;
  }

  // ------------------------------------------------------------ the paper's shapes

  /** A tree node: a value and its children (2 for a narrow tree, 16 for a wide one). */
  public static final class TreeNode implements Serializable {
    private static final long serialVersionUID = 1L;
    public int id;
    public double weight;
    public TreeNode[] children;
  }

  /** A linked-list node. */
  public static final class ListNode implements Serializable {
    private static final long serialVersionUID = 1L;
    public long value;
    public int tag;
    public ListNode next;
  }

  /** A graph vertex with its out-edges (shared targets and cycles throughout). */
  public static final class GraphNode implements Serializable {
    private static final long serialVersionUID = 1L;
    public int id;
    public long payload;
    public GraphNode[] edges;
  }

  /** A complete tree of at least {@code nodes} nodes with {@code fanout} children per inner node. */
  static TreeNode tree(int nodes, int fanout) {
    Random r = new Random(1);
    List<TreeNode> level = new ArrayList<>();
    TreeNode root = new TreeNode();
    level.add(root);
    int made = 1;
    while (made < nodes) {
      List<TreeNode> next = new ArrayList<>();
      for (TreeNode p : level) {
        p.children = new TreeNode[fanout];
        for (int i = 0; i < fanout; i++) {
          TreeNode c = new TreeNode();
          c.id = made++;
          c.weight = r.nextDouble();
          p.children[i] = c;
          next.add(c);
        }
        if (made >= nodes) break;
      }
      level = next;
    }
    return root;
  }

  static ListNode list(int nodes) {
    ListNode head = null;
    for (int i = nodes - 1; i >= 0; i--) {
      ListNode n = new ListNode();
      n.value = i * 31L;
      n.tag = i & 7;
      n.next = head;
      head = n;
    }
    return head;
  }

  /** {@code nodes} vertices, each with {@code degree} edges to random vertices (vertex 0 first). */
  static GraphNode graph(int nodes, int degree) {
    Random r = new Random(2);
    GraphNode[] v = new GraphNode[nodes];
    for (int i = 0; i < nodes; i++) {
      v[i] = new GraphNode();
      v[i].id = i;
      v[i].payload = r.nextLong();
    }
    for (int i = 0; i < nodes; i++) {
      v[i].edges = new GraphNode[degree];
      // A ring keeps every vertex reachable from vertex 0; the other edges are random.
      v[i].edges[0] = v[(i + 1) % nodes];
      for (int e = 1; e < degree; e++) v[i].edges[e] = v[r.nextInt(nodes)];
    }
    return v[0];
  }

  // ------------------------------------------------------------ Spark's small records

  /** A rating of the ALS job: three primitive fields, one object. */
  public static final class Rating implements Serializable {
    private static final long serialVersionUID = 1L;
    public int user;
    public int item;
    public double score;
  }

  /** A key and a value, as a shuffled Tuple2 of word count ({@code ("word", 42L)}): 3 objects. */
  public static final class Pair implements Serializable {
    private static final long serialVersionUID = 1L;
    public Object key;
    public Object value;
  }

  static Rating rating() {
    Rating r = new Rating();
    r.user = 4711;
    r.item = 815;
    r.score = 3.5;
    return r;
  }

  static Pair pair() {
    Pair p = new Pair();
    p.key = "serialization";
    p.value = 42L;
    return p;
  }

  /** Every class the benchmarks serialize, for the registrations of Cereal and Kryo. */
  static final Class<?>[] CLASSES = {MediaContent.class, Media.class, Image.class, Player.class,
      Size.class, TreeNode.class, TreeNode[].class, ListNode.class, GraphNode.class,
      GraphNode[].class, Rating.class, Pair.class};
}
