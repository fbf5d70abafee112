//! Optimus Prime configuration: one struct per component, presets citing the paper.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::mem::{BlockBufferConfig, MemoryConfig, NocConfig};
use crate::cpu::CpuConfig;
use crate::error::{check_positive, config_err, Result};

/// Most cycles a run may simulate (`max_cycles`, which bounds warm-up plus measurement): 10^9,
/// half a second at the default 2 GHz and fifty times the default `max_cycles`. The model steps
/// through every cycle, about ten million a second for OP{1,1} (fewer with more pipelines and
/// contexts), so the bound keeps a run to minutes or hours, where `u64::MAX` cycles would take
/// millennia.
pub const MAX_CYCLES: u64 = 1_000_000_000;

/// Slowest clock a configuration may ask for, in GHz: 10 MHz, below any FPGA prototype's.
pub const MIN_CLOCK_GHZ: f64 = 0.01;

/// Fastest clock a configuration may ask for, in GHz: 100 GHz, far past any CMOS logic's.
/// Times and rates are cycles scaled by the clock, so beyond these bounds they would report
/// no plausible machine (with a zero memory latency, an unbounded clock made them infinite).
pub const MAX_CLOCK_GHZ: f64 = 100.0;

/// Dispatcher and requesting cores (§4.1, §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DispatcherConfig {
    /// Cycles from a request's MMIO write reaching OP to its schema pointer reaching a Reader.
    /// Default 2 (register write + hardware queue).
    pub dispatch_cycles: u32,
    /// Cores issuing requests; 0 = one on every tile but OP's corner tile, whose core is left
    /// to the OS (§5: 15 of 16). More cores than that share tiles (see `first_core_tile`).
    pub cores: u32,
    /// Cycles a core spends between seeing a completion and issuing its next request (polling
    /// loop and request set-up). Default 20.
    pub core_gap_cycles: u32,
    /// Tile of the first requesting core; core `c` sits on tile `first_core_tile + c` (modulo
    /// the mesh), skipping OP's tile 0. Default 1: the cores fill the tiles after OP's.
    pub first_core_tile: u32,
}

impl Default for DispatcherConfig {
    fn default() -> Self {
        Self {
            dispatch_cycles: 2,
            cores: 0,
            core_gap_cycles: 20,
            first_core_tile: 1,
        }
    }
}

/// Reader (§4.3, §4.6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReaderConfig {
    /// Bytes of field data in one Chunk; a field of `b` bytes leaves as `ceil(b / chunk_bytes)`
    /// Chunks, one per cycle (§4.6: "one Chunk per cycle"). Default 8 (a 64-bit datapath).
    pub chunk_bytes: u32,
    /// Schema entries the Field Buffer holds: how far ahead of the field being emitted the
    /// prefetcher may issue (§4.6 Prefetching). Default 12 (calibrated, see docs/simulator.md).
    pub field_buffer_entries: u32,
    /// Memory requests a Reader issues per cycle. Default 2: the Block Buffer's two read/write
    /// ports (Table 1), which the Writer's line writes and the other pipelines share.
    pub issue_per_cycle: u32,
    /// Cycles to rotate to another time-sharing context; 0 lets the new context emit in the
    /// cycle the Reader rotates to it. Default 1 (§4.6: "rotated in one cycle").
    pub context_switch_cycles: u32,
    /// Chunk queue between Reader and Converter. Default 16.
    pub chunk_queue: u32,
    /// Lines of one field's data a context may hold in the Block Buffer beyond those its
    /// Chunks have used: a field streams, each Chunk leaving once the lines it comes from
    /// are in, and its further lines are requested as Chunks use lines up; a decode's
    /// serialized buffer streams in the same window. Default 0: a quarter of the Block
    /// Buffer's lines, at most their share over the `n × j` contexts (32 for OP{1,1} to
    /// OP{4,1}, 10 for OP{3,4}); see [`OpConfig::field_window_lines`].
    pub field_window_lines: u32,
}

impl Default for ReaderConfig {
    fn default() -> Self {
        Self {
            chunk_bytes: 8,
            field_buffer_entries: 12,
            issue_per_cycle: 2,
            context_switch_cycles: 1,
            chunk_queue: 16,
            field_window_lines: 0,
        }
    }
}

/// Converter (§4.4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConverterConfig {
    /// Instruction memory entries. Default 128 (§4.4).
    pub imem_entries: u32,
    /// Pipeline stages (fetch, decode+RF, execute, writeback), at least 1: a Chunk spends a
    /// cycle in each, and the Writer may take it in the cycle after the last. Default 4 (§4.4).
    pub stages: u32,
    /// Instructions per Chunk for each converter op id; ops not listed take
    /// `default_instructions` (specialized: one instruction, §4.4 "for common data types (e.g.
    /// varint), a single instruction performs the conversion"). Programs for other ops are the
    /// programmable converter: they must fit the instruction memory together.
    pub programs: BTreeMap<u16, u32>,
    /// Instructions of an op without a program. Default 1.
    pub default_instructions: u32,
}

impl Default for ConverterConfig {
    fn default() -> Self {
        Self {
            imem_entries: 128,
            stages: 4,
            programs: BTreeMap::new(),
            default_instructions: 1,
        }
    }
}

impl ConverterConfig {
    /// Instructions per Chunk of `op`.
    pub fn instructions(&self, op: u16) -> u32 {
        self.programs
            .get(&op)
            .copied()
            .unwrap_or(self.default_instructions)
    }

    /// I-Mem entries the configuration occupies: each of protobuf's field kinds without a
    /// program holds its `default_instructions` (§4.4: the memory "stores a sequence of
    /// instructions for each ... type" and "is indexed by the type field"), and every program
    /// its own length.
    pub fn imem_used(&self) -> u64 {
        let built_in = PROTOBUF_KINDS
            .filter(|k| !self.programs.contains_key(k))
            .count() as u64;
        built_in * u64::from(self.default_instructions)
            + self.programs.values().map(|&n| u64::from(n)).sum::<u64>()
    }

    /// Checks that every op runs at least one instruction and that they all fit the I-Mem.
    ///
    /// # Errors
    /// [`crate::SimError::Config`] naming the field.
    fn validate(&self) -> Result<()> {
        if self.default_instructions == 0 {
            return Err(config_err(
                "op.converter",
                "default_instructions",
                "at least one instruction",
            ));
        }
        if let Some(op) = self.programs.iter().find(|&(_, &n)| n == 0).map(|p| p.0) {
            return Err(config_err(
                "op.converter",
                "programs",
                format!("op {op}'s program has no instruction"),
            ));
        }
        let used = self.imem_used();
        if used > u64::from(self.imem_entries) {
            return Err(config_err(
                "op.converter",
                "programs",
                format!(
                    "{used} instructions (programs, and {} for each field kind without one) \
                     do not fit {} I-Mem entries",
                    self.default_instructions, self.imem_entries
                ),
            ));
        }
        if self.stages == 0 {
            return Err(config_err("op.converter", "stages", "at least one stage"));
        }
        Ok(())
    }
}

/// Protobuf's field kinds (`optimus_trace::kind`: double = 1 ... sint64 = 18), each with an
/// I-Mem sequence of its own.
const PROTOBUF_KINDS: std::ops::RangeInclusive<u16> = 1..=18;

/// Writer (§4.5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WriterConfig {
    /// Cycles to hand a transformed Chunk to the write buffers. Default 1.
    pub cycles_per_chunk: u32,
    /// Write buffers, each assembling the output line of one message (§4.5: "internal write
    /// buffers that assemble a cache line of transformed data"); a message whose output
    /// finds them all taken by other messages' lines writes out the oldest, partly filled.
    /// Default 4 (assumed): one per context of OP{n,4}, the most time-sharing the paper
    /// evaluates, which "provides almost the same performance as physically replicating the
    /// entire pipeline" (§4.6).
    pub write_buffers: u32,
}

impl Default for WriterConfig {
    fn default() -> Self {
        Self {
            cycles_per_chunk: 1,
            write_buffers: 4,
        }
    }
}

/// The whole Optimus Prime model: OP{pipelines, interleave} on a mesh.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OpConfig {
    /// Seed of the model's `ChaCha8Rng` (LLC/forwarding draws).
    pub seed: u64,
    /// Clock in GHz, from [`MIN_CLOCK_GHZ`] to [`MAX_CLOCK_GHZ`]. Default 2 (Table 1: cores and
    /// OP at 2GHz).
    pub clock_ghz: f64,
    /// Transformation pipelines `n` of OP{n,j}. Default 1.
    pub pipelines: u32,
    /// Time-sharing degree `j`: message contexts per Reader. Default 1.
    pub interleave: u32,
    /// Reader prefetching from schema addresses (§4.6). Default on; off in OP_Base.
    pub prefetch: bool,
    /// Decoupled Reader/Converter/Writer overlap (§4.6). Default on; off in OP_Base.
    pub pipelining: bool,
    /// Cycles simulated before measuring. Default 4000.
    pub warmup_cycles: u64,
    /// Cycles measured. Default 40000.
    pub measure_cycles: u64,
    /// The measured window lasts at least this many mean message latencies (a context taking
    /// a request to the Writer's last write), and until a message has completed in it. A
    /// message is counted whole when it completes, so those in flight at the window's edges
    /// skew its throughput by up to about one latency's worth of work: at least 16 latencies
    /// keep that under ~6 %. Messages longer than `measure_cycles / 16` extend the window;
    /// a non-zero warm-up likewise lasts until a message has completed. Default 16.
    pub min_window_latencies: u64,
    /// Cycles simulated at most, warm-up included, at most [`MAX_CYCLES`]; a run that reaches it
    /// is reported over the window it has, or fails if no message completed. Default
    /// 20 000 000 (10 ms at 2 GHz).
    pub max_cycles: u64,
    /// Dispatcher and cores.
    pub dispatcher: DispatcherConfig,
    /// Reader.
    pub reader: ReaderConfig,
    /// Converter.
    pub converter: ConverterConfig,
    /// Writer.
    pub writer: WriterConfig,
    /// Block Buffer.
    pub block_buffer: BlockBufferConfig,
    /// Mesh NoC.
    pub noc: NocConfig,
    /// LLC and memory.
    pub memory: MemoryConfig,
    /// The software baseline OP is compared with: one core of the simulated server running
    /// protobuf (§2, Fig. 7, Table 4).
    pub cpu: CpuConfig,
}

impl Default for OpConfig {
    fn default() -> Self {
        Self::paper_4x4(1, 1)
    }
}

impl OpConfig {
    /// OP{n,j} in the paper's 16-core 4×4 server (Optimus Prime Table 1, §5).
    pub fn paper_4x4(pipelines: u32, interleave: u32) -> Self {
        Self {
            seed: 1,
            clock_ghz: 2.0,
            pipelines,
            interleave,
            prefetch: true,
            pipelining: true,
            warmup_cycles: 4000,
            measure_cycles: 40000,
            min_window_latencies: 16,
            max_cycles: 20_000_000,
            dispatcher: DispatcherConfig::default(),
            reader: ReaderConfig::default(),
            converter: ConverterConfig::default(),
            writer: WriterConfig::default(),
            block_buffer: BlockBufferConfig::default(),
            noc: NocConfig::default(),
            memory: MemoryConfig::default(),
            cpu: CpuConfig::default(),
        }
    }

    /// OP{n,j} in the 64-core 8×8 server of Fig. 9 and Table 4.
    pub fn paper_8x8(pipelines: u32, interleave: u32) -> Self {
        Self::default().experiment(pipelines, interleave, 8)
    }

    /// OP_Base of Fig. 7: one pipeline, no pipelining, no prefetching.
    pub fn op_base() -> Self {
        Self::default().without_overlap()
    }

    /// These parameters as OP_Base has them: no prefetching, and no overlap of a field's read
    /// with the previous field's conversion and write.
    pub fn without_overlap(&self) -> Self {
        let mut c = self.clone();
        c.prefetch = false;
        c.pipelining = false;
        c
    }

    /// These parameters with an experiment's own: OP{`pipelines`,`interleave`} on a
    /// `mesh`×`mesh` server.
    pub fn experiment(&self, pipelines: u32, interleave: u32, mesh: u32) -> Self {
        let mut c = self.clone();
        c.pipelines = pipelines;
        c.interleave = interleave;
        c.noc.mesh = mesh;
        c
    }

    /// Lines of a field's data a Reader context may hold ahead of its Chunks
    /// (`reader.field_window_lines`, or a quarter of the Block Buffer's lines, at most their
    /// share over the contexts), at least 1. In a 2-way Block Buffer a stream fetched as far
    /// ahead as the buffer holds fills both ways of every set, so that any other line evicts
    /// one of its lines before its Chunks use it; a quarter leaves the sets room.
    pub fn field_window_lines(&self) -> u32 {
        match self.reader.field_window_lines {
            0 => {
                let lines = self.block_buffer.size_bytes / self.block_buffer.line_bytes.max(1);
                (lines / 4).min(lines / (self.pipelines * self.interleave).max(1))
            }
            w => w,
        }
        .max(1)
    }

    /// Checks every component and the derived values.
    ///
    /// # Errors
    /// [`crate::SimError::Config`] naming the component and field.
    pub fn validate(&self) -> Result<()> {
        if !(1..=64).contains(&self.pipelines) {
            return Err(config_err(
                "op",
                "pipelines",
                format!("{} (1..=64)", self.pipelines),
            ));
        }
        if !(1..=16).contains(&self.interleave) {
            return Err(config_err(
                "op",
                "interleave",
                format!("{} (1..=16 contexts)", self.interleave),
            ));
        }
        let clock = self.clock_ghz;
        if !(MIN_CLOCK_GHZ..=MAX_CLOCK_GHZ).contains(&clock) {
            let shown = if (1e-4..1e6).contains(&clock.abs()) {
                format!("{clock}")
            } else {
                format!("{clock:e}")
            };
            return Err(config_err(
                "op",
                "clock_ghz",
                format!("{shown} GHz is outside {MIN_CLOCK_GHZ} to {MAX_CLOCK_GHZ} GHz"),
            ));
        }
        if self.measure_cycles == 0 {
            return Err(config_err("op", "measure_cycles", "must be positive"));
        }
        for (cycles, field) in [
            (self.warmup_cycles, "warmup_cycles"),
            (self.measure_cycles, "measure_cycles"),
            (self.max_cycles, "max_cycles"),
        ] {
            if cycles > MAX_CYCLES {
                return Err(config_err(
                    "op",
                    field,
                    format!(
                        "{cycles} cycles is more than {MAX_CYCLES} (the model steps through \
                         every cycle)"
                    ),
                ));
            }
        }
        if self.max_cycles < self.warmup_cycles.saturating_add(self.measure_cycles) {
            return Err(config_err(
                "op",
                "max_cycles",
                format!(
                    "{} is below warmup_cycles + measure_cycles ({})",
                    self.max_cycles,
                    self.warmup_cycles.saturating_add(self.measure_cycles)
                ),
            ));
        }
        let r = &self.reader;
        check_positive(
            "op.reader",
            &[
                (f64::from(r.chunk_bytes), "chunk_bytes"),
                (f64::from(r.field_buffer_entries), "field_buffer_entries"),
                (f64::from(r.issue_per_cycle), "issue_per_cycle"),
                (f64::from(r.chunk_queue), "chunk_queue"),
            ],
        )?;
        self.converter.validate()?;
        if self.writer.write_buffers == 0 {
            return Err(config_err(
                "op.writer",
                "write_buffers",
                "at least one buffer",
            ));
        }
        self.block_buffer.validate()?;
        self.noc.validate()?;
        self.memory.validate()?;
        self.cpu.validate("op.cpu")?;
        // Cycle arithmetic is in u64: a latency longer than the run would wrap it.
        if self.memory.mem_latency_ns * self.clock_ghz > self.max_cycles as f64 {
            return Err(config_err(
                "op.memory",
                "mem_latency_ns",
                format!(
                    "{:e} ns is longer than the whole run (max_cycles {})",
                    self.memory.mem_latency_ns, self.max_cycles
                ),
            ));
        }
        let cores = self.cores();
        if cores == 0 || cores >= self.noc.mesh * self.noc.mesh + 64 {
            return Err(config_err(
                "op.dispatcher",
                "cores",
                format!("{cores} cores on a {0}x{0} mesh", self.noc.mesh),
            ));
        }
        Ok(())
    }

    /// Requesting cores after defaults are resolved.
    pub fn cores(&self) -> u32 {
        if self.dispatcher.cores == 0 {
            (self.noc.mesh * self.noc.mesh).saturating_sub(1).max(1)
        } else {
            self.dispatcher.cores
        }
    }

    /// Bandwidth of OP's NoC port in Gbps, both directions together (§5: 32 B/cycle =
    /// 512 Gbps at 2 GHz).
    pub fn port_gbps(&self) -> f64 {
        f64::from(self.noc.attach_links) * f64::from(self.noc.link_bytes) * 8.0 * self.clock_ghz
    }

    /// Memory latency in cycles.
    pub fn mem_cycles(&self) -> u64 {
        (self.memory.mem_latency_ns * self.clock_ghz).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_window_is_a_quarter_of_the_block_buffer_at_most_a_contexts_share() {
        // Table 1's 8 KB of 64-byte lines: 128, a quarter 32.
        for ((n, j), lines) in [((1, 1), 32), ((4, 1), 32), ((3, 4), 10), ((16, 1), 8)] {
            assert_eq!(
                OpConfig::paper_4x4(n, j).field_window_lines(),
                lines,
                "OP{{{n},{j}}}"
            );
        }
        let mut set = OpConfig::default();
        set.reader.field_window_lines = 100;
        assert_eq!(set.field_window_lines(), 100);
        set.reader.field_window_lines = 0;
        set.block_buffer.size_bytes = 64;
        assert_eq!(set.field_window_lines(), 1);
    }

    #[test]
    fn configs_that_cannot_run_are_refused() {
        let refused = |set: fn(&mut OpConfig), field: &str| {
            let mut cfg = OpConfig::default();
            set(&mut cfg);
            let err = cfg.validate().unwrap_err().to_string();
            assert!(err.contains(field), "{err}");
        };
        refused(|c| c.block_buffer.size_bytes = 0, "op.block_buffer.ways");
        refused(|c| c.block_buffer.ways = 1 << 27, "op.block_buffer.ways");
        refused(|c| c.max_cycles = c.measure_cycles, "op.max_cycles");
        refused(
            |c| c.noc.write_backlog_cycles = 1 << 20,
            "op.noc.write_backlog_cycles",
        );
        refused(
            |c| c.memory.mem_latency_ns = 1e300,
            "op.memory.mem_latency_ns",
        );
        // No run is endless, nor reports times and rates of no plausible machine.
        refused(
            |c| (c.max_cycles, c.measure_cycles) = (u64::MAX, u64::MAX - 615),
            "op.measure_cycles: 18446744073709551000 cycles is more than 1000000000",
        );
        refused(|c| c.max_cycles = u64::MAX, "op.max_cycles");
        refused(|c| c.warmup_cycles = MAX_CYCLES + 1, "op.warmup_cycles");
        refused(
            |c| {
                c.max_cycles = MAX_CYCLES + 1;
                c.measure_cycles = MAX_CYCLES;
            },
            "op.max_cycles: 1000000001 cycles",
        );
        for clock_ghz in [1e300, 1e12, 100.5, 0.005, 0.0, -2.0, f64::NAN] {
            let mut cfg = OpConfig {
                clock_ghz,
                ..OpConfig::default()
            };
            cfg.memory.mem_latency_ns = 0.0;
            let err = cfg.validate().unwrap_err().to_string();
            assert!(err.contains("op.clock_ghz"), "{clock_ghz}: {err}");
        }
        let mut longest = OpConfig::default();
        (longest.max_cycles, longest.measure_cycles) = (MAX_CYCLES, MAX_CYCLES);
        longest.warmup_cycles = 0;
        longest.validate().unwrap();
        for clock_ghz in [MIN_CLOCK_GHZ, 0.25, MAX_CLOCK_GHZ] {
            let clocked = OpConfig {
                clock_ghz,
                ..OpConfig::default()
            };
            clocked.validate().unwrap();
        }
        let mut wide = OpConfig::default();
        wide.noc.attach_links = 255;
        wide.noc.link_bytes = 64;
        wide.validate().unwrap();
        assert_eq!(wide.port_gbps(), 255.0 * 64.0 * 8.0 * 2.0);
        OpConfig::paper_8x8(12, 1).validate().unwrap();
    }
}
