//! The Cereal accelerator model (Jang et al., ISCA 2020): serialization units, deserialization
//! units, the memory access interface and DRAM, replaying traces of the object graphs the Java
//! library (`jvm/`) really serializes and deserializes.
//!
//! - [`trace`] reads the library's trace files (`CerealTrace`, format in docs/simulator.md).
//! - [`mem`] is the MAI (TLB over 1 GB pages, outstanding-request table with coalescing,
//!   reorder buffers, read-modify-write buffer) and DRAM (40 ns, 76.8 GB/s).
//! - [`ser`] is a serialization unit: header manager (an RMW per reference), metadata manager,
//!   object handler, reference-array writer.
//! - [`deser`] is a deserialization unit: layout manager, block manager, R reconstructors.
//! - [`reproduce`] compares modelled S/D time with the measured Java and Kryo times of the same
//!   graphs and with the paper's targets.
//!
//! Time is in ns, event-driven: each stage keeps when it is next free, each memory request
//! gets its completion from the MAI, and a graph's objects go through the stages in layout
//! order. No randomness: the same configuration and trace give the same report.

pub mod deser;
pub mod mem;
pub mod reproduce;
pub mod ser;
pub mod trace;

use serde::{Deserialize, Serialize};

use crate::error::{check_non_negative, check_positive, Result, SimError};
use crate::stats::{Counters, Stats};
use deser::{DeserConfig, DeserStats};
use mem::{DramConfig, Mai, MaiConfig};
use ser::{SerConfig, SerStats};
use trace::Trace;

/// Every parameter of the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CerealConfig {
    /// Accelerator clock in GHz. Default 1.0 (assumed: the paper's synthesis clock is stripped
    /// from our copy; 1 GHz is a conservative clock for a 28 nm-class ASIC block).
    pub clock_ghz: f64,
    /// Time from the host's request to a unit starting it, in ns (the command queue and the
    /// request scheduler reading the command), and again to signal completion. Default 40: one
    /// memory round trip each way (the MAI's latency, RPCAcc Table I).
    pub command_ns: f64,
    /// DRAM.
    pub dram: DramConfig,
    /// Memory access interface.
    pub mai: MaiConfig,
    /// Serialization units.
    pub ser: SerConfig,
    /// Deserialization units.
    pub deser: DeserConfig,
}

impl Default for CerealConfig {
    fn default() -> Self {
        Self {
            clock_ghz: 1.0,
            command_ns: 40.0,
            dram: DramConfig::default(),
            mai: MaiConfig::default(),
            ser: SerConfig::default(),
            deser: DeserConfig::default(),
        }
    }
}

impl CerealConfig {
    /// Checks every parameter.
    ///
    /// # Errors
    /// [`SimError::Config`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        check_positive("cereal", &[(self.clock_ghz, "clock_ghz")])?;
        check_non_negative("cereal", &[(self.command_ns, "command_ns")])?;
        self.dram.validate()?;
        self.mai.validate()?;
        self.ser.validate()?;
        self.deser.validate()
    }
}

/// Where the model places things in physical memory. The source heap is laid out in the
/// trace's breadth-first order (a copying collector's order after a GC: HotSpot's Parallel
/// GC copies survivors breadth first), one word per layout word.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    pub heap_base: u64,
    pub klass_base: u64,
    pub out_base: u64,
    pub in_base: u64,
    pub dest_base: u64,
}

const GIB: u64 = 1 << 30;

/// Where the graphs of a trace go so far: each graph is its own objects in the source heap,
/// its own frame and its own copy in the destination heap, one after the other, as the
/// records of a stream are (so records in flight together share no line or header word).
#[derive(Clone, Copy, Debug, Default)]
struct Placed {
    heap_words: u64,
    out_bytes: u64,
    in_bytes: u64,
    dest_bytes: u64,
}

impl Placed {
    /// The layout of graph `g` after the graphs placed so far, which it then joins.
    fn next(&mut self, base: &Layout, g: &trace::SerGraph) -> Layout {
        let line = |b: u64| b.div_ceil(64) * 64;
        let at = Layout {
            heap_base: base.heap_base + 8 * self.heap_words,
            klass_base: base.klass_base,
            out_base: base.out_base + self.out_bytes,
            in_base: base.in_base + self.in_bytes,
            dest_base: base.dest_base + self.dest_bytes,
        };
        self.heap_words += g.layout_words;
        self.out_bytes += line(g.frame_bytes);
        self.in_bytes += line(g.frame_bytes);
        // The copy: every layout word and a 16-byte heap header an object.
        self.dest_bytes += line(8 * g.layout_words + 16 * g.objects.len() as u64);
        at
    }
}

impl Layout {
    fn new() -> Self {
        // 8 GB of physical memory (§V): heap in the first 4, metadata, buffers and the
        // destination heap in the others, each on its own 1 GB page.
        Self {
            heap_base: GIB,
            klass_base: 4 * GIB,
            out_base: 5 * GIB,
            in_base: 6 * GIB,
            dest_base: 7 * GIB,
        }
    }
}

/// One graph's modelled times.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GraphTimes {
    /// Objects.
    pub objects: u64,
    /// References (null ones included).
    pub refs: u64,
    /// Frame bytes.
    pub frame_bytes: u64,
    /// Modelled serialization time in ns, command to completion.
    pub ser_ns: f64,
    /// Modelled deserialization time in ns.
    pub deser_ns: f64,
}

/// The model's report on one trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CerealReport {
    /// The trace's label.
    pub workload: String,
    /// Per serialized graph, in trace order.
    pub graphs: Vec<GraphTimes>,
    /// Serialization of every graph, ns (units work in parallel).
    pub ser_ns: f64,
    /// Deserialization of every graph, ns.
    pub deser_ns: f64,
    /// Frame bytes over serialization time, GB/s.
    pub ser_gbytes_s: f64,
    /// Frame bytes over deserialization time, GB/s.
    pub deser_gbytes_s: f64,
    /// Named counters: `ser.*`, `deser.*`, `ser_mai.*`, `ser_dram.*`, `deser_mai.*`,
    /// `deser_dram.*`.
    pub stats: Stats,
}

/// The traces committed under testdata/cereal: MediaContent and the paper's shapes at 1k
/// objects, as `TraceMain` recorded them from the library.
pub const WORKLOADS: &[(&str, &[u8])] = &[
    (
        "media-content",
        include_bytes!("../../../../testdata/cereal/media-content.crlt"),
    ),
    (
        "tree-narrow-1k",
        include_bytes!("../../../../testdata/cereal/tree-narrow-1k.crlt"),
    ),
    (
        "tree-wide-1k",
        include_bytes!("../../../../testdata/cereal/tree-wide-1k.crlt"),
    ),
    (
        "list-small-1k",
        include_bytes!("../../../../testdata/cereal/list-small-1k.crlt"),
    ),
    (
        "graph-sparse-1k",
        include_bytes!("../../../../testdata/cereal/graph-sparse-1k.crlt"),
    ),
    (
        "graph-dense-1k",
        include_bytes!("../../../../testdata/cereal/graph-dense-1k.crlt"),
    ),
];

/// The traces of the Spark jobs' records (testdata/cereal/spark-*.crlt), as `SparkBench
/// --trace` recorded them from the library: per job of `jvm/spark`'s `SparkJobs`, a stream of
/// a few hundred records (shuffled keys and values, cached elements) built by the jobs'
/// generators, each serialized and deserialized once as its own frame.
pub const SPARK_WORKLOADS: &[(&str, &[u8])] = &[
    (
        "spark-wordcount",
        include_bytes!("../../../../testdata/cereal/spark-wordcount.crlt"),
    ),
    (
        "spark-terasort",
        include_bytes!("../../../../testdata/cereal/spark-terasort.crlt"),
    ),
    (
        "spark-pagerank",
        include_bytes!("../../../../testdata/cereal/spark-pagerank.crlt"),
    ),
    (
        "spark-kmeans",
        include_bytes!("../../../../testdata/cereal/spark-kmeans.crlt"),
    ),
    (
        "spark-als",
        include_bytes!("../../../../testdata/cereal/spark-als.crlt"),
    ),
    (
        "spark-bayes",
        include_bytes!("../../../../testdata/cereal/spark-bayes.crlt"),
    ),
];

/// Every embedded trace: the benchmark graphs, then the Spark jobs' record streams.
pub fn all_workloads() -> impl Iterator<Item = &'static (&'static str, &'static [u8])> {
    WORKLOADS.iter().chain(SPARK_WORKLOADS)
}

/// The embedded trace called `name`.
///
/// # Errors
/// [`SimError::Workload`] for an unknown name (listing the known ones) or a bad trace.
pub fn workload(name: &str) -> Result<Trace> {
    match all_workloads().find(|w| w.0 == name) {
        Some((n, bytes)) => trace::parse(n, bytes),
        None => Err(SimError::Workload {
            name: name.to_string(),
            why: format!(
                "no such Cereal workload; the embedded ones are {}",
                all_workloads().map(|w| w.0).collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}

/// Runs the model on `t`: every serialized graph through the serialization units (round
/// robin, sharing one MAI), then every one of them through the deserialization units (on a
/// fresh MAI): each `D` record is checked against its graph's counts.
///
/// # Errors
/// An invalid configuration, a trace without a serialized graph, or a `D` record that does not
/// match its `S` record.
pub fn run(cfg: &CerealConfig, t: &Trace) -> Result<CerealReport> {
    cfg.validate()?;
    if t.ser.is_empty() {
        return Err(SimError::Workload {
            name: t.label.clone(),
            why: "the trace holds no serialized graph".into(),
        });
    }
    for (i, d) in t.deser.iter().enumerate() {
        let ok = t.ser.get(i).is_some_and(|g| {
            g.objects.len() as u64 == d.objects
                && g.value_bytes == 8 * d.value_words
                && g.ref_count() == d.refs
                && g.ref_bytes == d.ref_bytes
                && g.bitmap_bytes == d.bitmap_bytes
        });
        if !ok {
            return Err(SimError::Workload {
                name: t.label.clone(),
                why: format!("deserialized graph {i} does not match serialized graph {i}"),
            });
        }
    }
    let layout = Layout::new();
    let mut stats = Stats::default();
    let mut graphs: Vec<GraphTimes> = t
        .ser
        .iter()
        .map(|g| GraphTimes {
            objects: g.objects.len() as u64,
            refs: g.ref_count(),
            frame_bytes: g.frame_bytes,
            ser_ns: 0.0,
            deser_ns: 0.0,
        })
        .collect();
    // Serialization.
    let mut mai = Mai::new(&cfg.mai, &cfg.dram, cfg.clock_ghz);
    let mut ss = SerStats::default();
    let mut free = vec![0.0f64; cfg.ser.units as usize];
    let mut ser_end = 0.0f64;
    let mut placed = Placed::default();
    for (i, g) in t.ser.iter().enumerate() {
        let u = i % free.len();
        let start = free[u];
        let end = ser::serialize(
            &cfg.ser,
            cfg.clock_ghz,
            &placed.next(&layout, g),
            g,
            &mut mai,
            start + cfg.command_ns,
            &mut ss,
        ) + cfg.command_ns;
        free[u] = end;
        graphs[i].ser_ns = end - start;
        ser_end = ser_end.max(end);
    }
    ss.dump("ser", &mut stats);
    mai.stats.dump("ser_mai", &mut stats);
    mai.dram_stats().dump("ser_dram", &mut stats);
    // Deserialization of the same frames.
    let mut mai = Mai::new(&cfg.mai, &cfg.dram, cfg.clock_ghz);
    let mut ds = DeserStats::default();
    // As many deserialization units as serialization units.
    let mut free = vec![0.0f64; cfg.ser.units as usize];
    let mut deser_end = 0.0f64;
    let mut placed = Placed::default();
    for (i, g) in t.ser.iter().enumerate() {
        let u = i % free.len();
        let start = free[u];
        let end = deser::deserialize(
            &cfg.deser,
            cfg.clock_ghz,
            &placed.next(&layout, g),
            g,
            &mut mai,
            start + cfg.command_ns,
            &mut ds,
        ) + cfg.command_ns;
        free[u] = end;
        graphs[i].deser_ns = end - start;
        deser_end = deser_end.max(end);
    }
    ds.dump("deser", &mut stats);
    mai.stats.dump("deser_mai", &mut stats);
    mai.dram_stats().dump("deser_dram", &mut stats);
    let bytes: u64 = t.ser.iter().map(|g| g.frame_bytes).sum();
    Ok(CerealReport {
        workload: t.label.clone(),
        graphs,
        ser_ns: ser_end,
        deser_ns: deser_end,
        ser_gbytes_s: bytes as f64 / ser_end,
        deser_gbytes_s: bytes as f64 / deser_end,
        stats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_trace_runs_and_its_counts_reach_the_stats() {
        for (name, _) in all_workloads() {
            let t = workload(name).unwrap();
            let r = run(&CerealConfig::default(), &t).unwrap();
            // Summed over the trace's graphs (the Spark traces hold hundreds of records).
            let objects: usize = t.ser.iter().map(|g| g.objects.len()).sum();
            let refs: u64 = t.ser.iter().map(trace::SerGraph::ref_count).sum();
            assert_eq!(r.stats.get("ser.objects"), Some(objects as f64), "{name}");
            assert_eq!(r.stats.get("deser.refs_fixed"), Some(refs as f64), "{name}");
            // An RMW per non-null reference and one for each root.
            let non_null: usize = t
                .ser
                .iter()
                .map(|g| g.objects.iter().flat_map(|o| &o.refs).flatten().count())
                .sum();
            assert_eq!(
                r.stats.get("ser_mai.rmws"),
                Some((non_null + t.ser.len()) as f64),
                "{name}"
            );
            assert_eq!(r.graphs.len(), t.ser.len(), "{name}");
            assert!(r.ser_ns > 2.0 * 40.0 && r.deser_ns > 2.0 * 40.0, "{name}");
        }
    }

    #[test]
    fn shared_targets_are_counted_on_graphs_and_not_on_trees() {
        let cfg = CerealConfig::default();
        let tree = run(&cfg, &workload("tree-narrow-1k").unwrap()).unwrap();
        let graph = run(&cfg, &workload("graph-dense-1k").unwrap()).unwrap();
        assert_eq!(tree.stats.get("ser.shared_refs"), Some(0.0));
        assert!(graph.stats.get("ser.shared_refs").unwrap() > 10_000.0);
    }

    #[test]
    fn serialization_chases_pointers_so_latency_matters_more_than_bandwidth() {
        let t = workload("list-small-1k").unwrap();
        let base = run(&CerealConfig::default(), &t).unwrap();
        let mut slow = CerealConfig::default();
        slow.dram.latency_ns *= 2.0;
        let slow = run(&slow, &t).unwrap();
        let mut narrow = CerealConfig::default();
        narrow.dram.bw_gbytes_s /= 2.0;
        let narrow = run(&narrow, &t).unwrap();
        // A list is one chain: each node's address comes from the one before.
        assert!(
            slow.ser_ns > 1.8 * base.ser_ns,
            "{} {}",
            slow.ser_ns,
            base.ser_ns
        );
        assert!(narrow.ser_ns < 1.1 * base.ser_ns);
        // Deserialization streams the frame and needs no pointer: latency costs it less.
        assert!(
            slow.deser_ns / base.deser_ns < 0.8 * slow.ser_ns / base.ser_ns,
            "{} {}",
            slow.deser_ns,
            base.deser_ns
        );
    }

    #[test]
    fn more_reconstructors_deserialize_faster_until_memory_binds() {
        let t = workload("graph-dense-1k").unwrap();
        let time = |r: u32| {
            let mut c = CerealConfig::default();
            c.deser.reconstructors = r;
            run(&c, &t).unwrap().deser_ns
        };
        assert!(time(1) > 2.0 * time(8), "{} {}", time(1), time(8));
        assert!(time(64) <= time(8));
    }

    #[test]
    fn a_bad_parameter_is_named() {
        let mut c = CerealConfig::default();
        c.deser.reconstructors = 0;
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("cereal.deser.reconstructors"), "{e}");
        c = CerealConfig::default();
        c.dram.bw_gbytes_s = f64::NAN;
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("bw_gbytes_s"));
        assert!(workload("nope")
            .unwrap_err()
            .to_string()
            .contains("media-content"));
    }
}
