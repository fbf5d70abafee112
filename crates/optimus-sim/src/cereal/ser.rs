//! A serialization unit (§V, Fig. "serialization unit"): the header manager visits each
//! reference's target header with a read-modify-write (is it serialized yet; if not, mark it
//! and give it the next offset; either way, learn its offset for the reference), the metadata
//! manager fetches the klass layout of each newly found object (behind a small metadata cache)
//! and emits its bitmap bits, the object handler reads the object's words and passes its
//! reference words to the header manager, and the reference-array writer packs the relative
//! offsets in order. Objects are processed in the trace's layout (breadth-first) order; a
//! found object's address is known once its parent's words have arrived (pointer chasing).

use serde::{Deserialize, Serialize};

use super::mem::{Mai, Port};
use super::trace::SerGraph;
use super::Layout;
use crate::error::{check_positive, config_err, Result};
use crate::stats::counters;

/// Serialization-unit parameters (the paper gives none; each is an assumption, documented in
/// docs/simulator.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SerConfig {
    /// Serialization units: graphs of one trace run on them round-robin (and as many
    /// deserialization units). Default 8.
    pub units: u32,
    /// Header-manager cycles per reference (issue of its RMW). Default 1.
    pub header_cycles_per_ref: f64,
    /// Metadata-cache entries (klass layouts, LRU). Default 32.
    pub metadata_cache_entries: u32,
    /// Metadata-manager cycles per object (cache look-up, bitmap bits). Default 1.
    pub metadata_cycles: f64,
    /// Bytes of a klass's layout metadata read on a miss. Default 64.
    pub metadata_bytes: u32,
    /// Object-handler cycles per line of an object it requests. Default 1.
    pub handler_cycles_per_line: f64,
    /// Objects between their header read and their words' arrival at once (the object
    /// handler's queue). Default 32.
    pub object_window: u32,
    /// References the reference-array writer packs per cycle. Default 1.
    pub writer_refs_per_cycle: f64,
}

impl Default for SerConfig {
    fn default() -> Self {
        Self {
            units: 8,
            header_cycles_per_ref: 1.0,
            metadata_cache_entries: 32,
            metadata_cycles: 1.0,
            metadata_bytes: 64,
            handler_cycles_per_line: 1.0,
            object_window: 32,
            writer_refs_per_cycle: 1.0,
        }
    }
}

impl SerConfig {
    pub(crate) fn validate(&self) -> Result<()> {
        let c = "cereal.ser";
        for (v, f) in [
            (self.units, "units"),
            (self.metadata_cache_entries, "metadata_cache_entries"),
            (self.object_window, "object_window"),
            (self.metadata_bytes, "metadata_bytes"),
        ] {
            if !(1..=1 << 16).contains(&v) {
                return Err(config_err(c, f, format!("{v} must be from 1 to 65536")));
            }
        }
        check_positive(
            c,
            &[
                (self.header_cycles_per_ref, "header_cycles_per_ref"),
                (self.metadata_cycles, "metadata_cycles"),
                (self.handler_cycles_per_line, "handler_cycles_per_line"),
                (self.writer_refs_per_cycle, "writer_refs_per_cycle"),
            ],
        )
    }
}

counters!(
    /// Serialization-unit counters.
    SerStats {
        /// Graphs serialized.
        graphs,
        /// Objects serialized.
        objects,
        /// Reference words visited (null ones included).
        refs,
        /// References to an object already found (shared objects, cycles, back edges).
        shared_refs,
        /// Null references (no RMW).
        null_refs,
        /// Metadata-cache hits.
        metadata_hits,
        /// Metadata-cache misses (klass reads).
        metadata_misses,
        /// Lines the object handler requested.
        object_lines,
        /// Bytes written: value array, packed reference array, packed bitmap.
        bytes_out,
        /// ns the object handler waited for the object window.
        window_wait_ns,
        /// ns the reference-array writer waited for RMW results.
        writer_wait_ns,
    }
);

/// Writes what a unit produces in line-sized posted writes, at the time each line fills.
struct OutStream {
    addr: u64,
    line: u64,
    pending: f64,
    done: f64,
}

impl OutStream {
    fn new(addr: u64, line: u64) -> Self {
        Self {
            addr,
            line,
            pending: 0.0,
            done: 0.0,
        }
    }

    /// `bytes` more produced at `t`.
    fn push(&mut self, mai: &mut Mai, bytes: f64, t: f64) -> u64 {
        self.pending += bytes;
        let mut written = 0;
        while self.pending >= self.line as f64 {
            self.done = self.done.max(mai.write(self.addr, self.line, t));
            self.addr += self.line;
            self.pending -= self.line as f64;
            written += self.line;
        }
        written
    }

    /// Writes what is left at `t`; returns when all of it is in DRAM.
    fn flush(&mut self, mai: &mut Mai, t: f64) -> (f64, u64) {
        let rest = self.pending.ceil() as u64;
        if rest > 0 {
            self.done = self.done.max(mai.write(self.addr, rest, t));
            self.pending = 0.0;
        }
        (self.done, rest)
    }
}

/// Serializes `g` on one unit from `t0` (the command read); returns when the frame is in
/// memory.
pub(crate) fn serialize(
    cfg: &SerConfig,
    clock_ghz: f64,
    layout: &Layout,
    g: &SerGraph,
    mai: &mut Mai,
    t0: f64,
    stats: &mut SerStats,
) -> f64 {
    let cyc = 1.0 / clock_ghz;
    let n = g.objects.len();
    stats.graphs += 1;
    if n == 0 {
        return t0;
    }
    let line = mai.line_bytes();
    let addr = |i: usize| layout.heap_base + 8 * u64::from(g.objects[i].start_word);
    let total_refs = g.ref_count().max(1) as f64;
    let mut header_done = vec![0.0f64; n];
    let mut body_done = vec![0.0f64; n];
    let mut cache: Vec<u32> = Vec::new();
    let (mut hm_free, mut mm_free, mut oh_free, mut rw_free) = (t0, t0, t0, t0);
    let mut values = OutStream::new(layout.out_base, line);
    let mut packed_refs = OutStream::new(layout.out_base + (1 << 28), line);
    let mut bitmap = OutStream::new(layout.out_base + (2 << 28), line);
    let ref_bytes_each = g.ref_bytes as f64 / total_refs;
    let bitmap_bytes_each = g.bitmap_bytes as f64 / g.layout_words.max(1) as f64;
    // The root's header: the command hands its address to the header manager.
    header_done[0] = mai.rmw(addr(0), hm_free);
    hm_free += cfg.header_cycles_per_ref * cyc;
    let mut next_new = 1usize;
    let window = cfg.object_window as usize;
    for i in 0..n {
        let o = &g.objects[i];
        stats.objects += 1;
        // Metadata manager: the klass layout, from the cache or memory.
        let t = mm_free.max(header_done[i]);
        mm_free = t + cfg.metadata_cycles * cyc;
        let meta = match cache.iter().position(|c| *c == o.class_id) {
            Some(k) => {
                stats.metadata_hits += 1;
                let c = cache.remove(k);
                cache.push(c);
                mm_free
            }
            None => {
                stats.metadata_misses += 1;
                if cache.len() == cfg.metadata_cache_entries as usize {
                    cache.remove(0);
                }
                cache.push(o.class_id);
                let klass =
                    layout.klass_base + u64::from(o.class_id) * u64::from(cfg.metadata_bytes);
                mai.read(Port::Metadata, klass, u64::from(cfg.metadata_bytes), t)
                    .max(mm_free)
            }
        };
        stats.bytes_out += bitmap.push(mai, bitmap_bytes_each * o.words() as f64, meta);
        // Object handler: the object's words after its header.
        let mut t = oh_free.max(meta);
        if i >= window && body_done[i - window] > t {
            stats.window_wait_ns += (body_done[i - window] - t).round() as u64;
            t = body_done[i - window];
        }
        let bytes = (o.words() - 1) * 8;
        let lines = if bytes == 0 {
            0
        } else {
            (addr(i) + bytes + 7) / line - (addr(i) + 8) / line + 1
        };
        stats.object_lines += lines;
        body_done[i] = mai.read(Port::Object, addr(i) + 8, bytes, t);
        oh_free = t + cfg.handler_cycles_per_line * cyc * lines.max(1) as f64;
        stats.bytes_out += values.push(mai, 8.0 * f64::from(o.value_words), body_done[i]);
        // Header manager: an RMW on each reference's target header, in order.
        for r in &o.refs {
            stats.refs += 1;
            let t = hm_free.max(body_done[i]);
            hm_free = t + cfg.header_cycles_per_ref * cyc;
            let known = match *r {
                None => {
                    stats.null_refs += 1;
                    hm_free
                }
                Some(w) => {
                    let j = g
                        .objects
                        .binary_search_by_key(&w, |x| x.start_word)
                        .unwrap_or(0);
                    let read = mai.rmw(layout.heap_base + 8 * u64::from(w), t);
                    if j == next_new {
                        header_done[j] = read;
                        next_new += 1;
                    } else {
                        stats.shared_refs += 1;
                    }
                    read
                }
            };
            // Reference-array writer: packs the relative offsets in order.
            if known > rw_free {
                stats.writer_wait_ns += (known - rw_free).round() as u64;
            }
            rw_free = rw_free.max(known) + cyc / cfg.writer_refs_per_cycle;
            stats.bytes_out += packed_refs.push(mai, ref_bytes_each, rw_free);
        }
    }
    let end = hm_free.max(rw_free).max(oh_free).max(mm_free);
    let mut done = end;
    for s in [&mut values, &mut packed_refs, &mut bitmap] {
        let (d, b) = s.flush(mai, end);
        stats.bytes_out += b;
        done = done.max(d);
    }
    done.max(body_done.iter().copied().fold(t0, f64::max))
}
