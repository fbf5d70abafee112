//! A deserialization unit (§V, Fig. "deserialization unit"): the layout manager streams the
//! frame in (value array, packed reference array, packed bitmap) and cuts the value array into
//! objects from the bitmap and the headers' class IDs; the block manager allocates each
//! object's block in the destination heap (a bump pointer); R reconstructors each take the next
//! object, write its header (klass pointer from the class table), copy its value words and
//! turn each packed relative offset into an absolute address, with no memory read: every
//! reference is decoded on its own, which is what lets R of them work at once.

use serde::{Deserialize, Serialize};

use super::mem::{Mai, Port};
use super::trace::SerGraph;
use super::Layout;
use crate::error::{check_positive, config_err, Result};
use crate::stats::counters;

/// Deserialization-unit parameters (assumed; see docs/simulator.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeserConfig {
    /// Reconstructors R. Default 8.
    pub reconstructors: u32,
    /// Bitmap groups (64 layout words) the layout manager scans per cycle. Default 1.
    pub layout_groups_per_cycle: f64,
    /// Layout-manager cycles per object (header decode, class-table look-up). Default 1.
    pub layout_cycles_per_object: f64,
    /// Block-manager cycles per object allocated. Default 1.
    pub block_cycles_per_object: f64,
    /// Bytes a reconstructor copies per cycle. Default 32.
    pub copy_bytes_per_cycle: f64,
    /// References a reconstructor decodes and fixes per cycle. Default 1.
    pub refs_per_cycle: f64,
    /// Bytes of a reconstructed object's header in the heap (HotSpot's mark word and
    /// compressed klass pointer, aligned). Default 16.
    pub heap_header_bytes: u32,
}

impl Default for DeserConfig {
    fn default() -> Self {
        Self {
            reconstructors: 8,
            layout_groups_per_cycle: 1.0,
            layout_cycles_per_object: 1.0,
            block_cycles_per_object: 1.0,
            copy_bytes_per_cycle: 32.0,
            refs_per_cycle: 1.0,
            heap_header_bytes: 16,
        }
    }
}

impl DeserConfig {
    pub(crate) fn validate(&self) -> Result<()> {
        let c = "cereal.deser";
        if !(1..=1024).contains(&self.reconstructors) {
            return Err(config_err(
                c,
                "reconstructors",
                format!("{} must be from 1 to 1024", self.reconstructors),
            ));
        }
        if !(8..=64).contains(&self.heap_header_bytes) {
            return Err(config_err(
                c,
                "heap_header_bytes",
                format!("{} must be from 8 to 64", self.heap_header_bytes),
            ));
        }
        check_positive(
            c,
            &[
                (self.layout_groups_per_cycle, "layout_groups_per_cycle"),
                (self.layout_cycles_per_object, "layout_cycles_per_object"),
                (self.block_cycles_per_object, "block_cycles_per_object"),
                (self.copy_bytes_per_cycle, "copy_bytes_per_cycle"),
                (self.refs_per_cycle, "refs_per_cycle"),
            ],
        )
    }
}

counters!(
    /// Deserialization-unit counters.
    DeserStats {
        /// Graphs deserialized.
        graphs,
        /// Objects allocated.
        objects,
        /// Value words copied (headers not counted).
        words_copied,
        /// References fixed (null ones included).
        refs_fixed,
        /// Lines of the frame streamed in.
        input_lines,
        /// Bytes written to the destination heap.
        bytes_out,
        /// ns the reconstructors were busy, summed over them.
        reconstructor_busy_ns,
        /// ns objects waited for their input lines past the block manager.
        input_wait_ns,
    }
);

/// Deserializes the frame of `g` on one unit from `t0`; returns when every object is in the
/// destination heap.
pub(crate) fn deserialize(
    cfg: &DeserConfig,
    clock_ghz: f64,
    layout: &Layout,
    g: &SerGraph,
    mai: &mut Mai,
    t0: f64,
    stats: &mut DeserStats,
) -> f64 {
    let cyc = 1.0 / clock_ghz;
    stats.graphs += 1;
    let line = mai.line_bytes();
    // The frame's three arrays, back to back from the input buffer, streamed a line a cycle.
    let value_base = layout.in_base;
    let ref_base = value_base + g.value_bytes;
    let bitmap_base = ref_base + g.ref_bytes;
    let input = g.value_bytes + g.ref_bytes + g.bitmap_bytes;
    let n_lines = input.div_ceil(line) as usize;
    stats.input_lines += n_lines as u64;
    let mut ready = Vec::with_capacity(n_lines);
    let mut issue = t0;
    for k in 0..n_lines as u64 {
        ready.push(mai.read(Port::Layout, value_base + k * line, line, issue));
        issue += cyc;
    }
    let ready_at = |addr: u64| -> f64 {
        let k = ((addr - value_base) / line) as usize;
        ready
            .get(k.min(n_lines.saturating_sub(1)))
            .copied()
            .unwrap_or(t0)
    };
    let refs_total = g.ref_count().max(1) as f64;
    let mut recon = vec![t0; cfg.reconstructors as usize];
    let (mut lm_free, mut bm_free) = (t0, t0);
    let mut done = t0;
    let mut value_off = 0u64;
    let mut refs_before = 0u64;
    let mut dest = layout.dest_base;
    for o in &g.objects {
        stats.objects += 1;
        let vbytes = 8 * u64::from(o.value_words);
        let rc = o.refs.len() as u64;
        // Layout manager: the object's header and its bitmap bits.
        let groups = o.words().div_ceil(64) as f64;
        let bit_pos = (u128::from(o.start_word) * u128::from(g.bitmap_bytes)
            / u128::from(g.layout_words.max(1))) as u64;
        let bit_addr = bitmap_base + bit_pos.min(g.bitmap_bytes.saturating_sub(1));
        let t = lm_free
            .max(ready_at(value_base + value_off))
            .max(ready_at(bit_addr));
        lm_free =
            t + cyc * (cfg.layout_cycles_per_object).max(groups / cfg.layout_groups_per_cycle);
        // Block manager: the destination block.
        let t = bm_free.max(lm_free);
        bm_free = t + cyc * cfg.block_cycles_per_object;
        let heap_bytes = u64::from(cfg.heap_header_bytes) + 8 * (o.words() - 1);
        let block = dest;
        dest += heap_bytes.div_ceil(8) * 8;
        // The first reconstructor free takes it once its words and packed references are in.
        let (r, free) = recon
            .iter()
            .copied()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, t0));
        let last_value = value_base + value_off + vbytes - 1;
        let ref_pos = ((refs_before + rc) as f64 / refs_total * g.ref_bytes as f64) as u64;
        let mut inputs = ready_at(last_value);
        if rc > 0 {
            inputs = inputs.max(ready_at(
                ref_base + ref_pos.min(g.ref_bytes.saturating_sub(1)),
            ));
        }
        let start = free.max(bm_free);
        if inputs > start {
            stats.input_wait_ns += (inputs - start).round() as u64;
        }
        let start = start.max(inputs);
        let busy = cyc
            * (1.0
                + (8 * (u64::from(o.value_words) - 1)) as f64 / cfg.copy_bytes_per_cycle
                + rc as f64 / cfg.refs_per_cycle);
        let end = start + busy;
        stats.reconstructor_busy_ns += busy.round() as u64;
        if let Some(x) = recon.get_mut(r) {
            *x = end;
        }
        done = done.max(mai.write(block, heap_bytes, end));
        stats.bytes_out += heap_bytes;
        stats.words_copied += u64::from(o.value_words) - 1;
        stats.refs_fixed += rc;
        value_off += vbytes;
        refs_before += rc;
    }
    recon
        .iter()
        .copied()
        .fold(done.max(lm_free).max(bm_free), f64::max)
}
