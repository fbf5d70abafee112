//! Cereal's memory side: DRAM (latency plus a bandwidth calendar) and the memory access
//! interface (MAI) in front of it: a TLB over 1 GB pages, the outstanding-request table
//! (MSHR-like, coalescing requests to a line already in flight), a reorder buffer per
//! requester (responses delivered in request order, at most `rob_entries` outstanding) and the
//! read-modify-write buffer the header manager's RMWs go through (§V, "memory access
//! interface"). The accelerator has no cache: every read goes to DRAM.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::error::{check_positive, config_err, Result};
use crate::stats::counters;

/// DRAM behind the MAI.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DramConfig {
    /// Access latency in ns. Default 40 (RPCAcc Table I, Cereal's MAI row: "40 ns").
    pub latency_ns: f64,
    /// Bandwidth in GB/s (bytes per ns). Default 76.8 (RPCAcc Table I: "76.8 GB/s"; four
    /// DDR4-2400 channels).
    pub bw_gbytes_s: f64,
    /// Width of a slot of the bandwidth calendar in ns. Default 4 (307 bytes a slot at
    /// 76.8 GB/s: a few lines, so queueing shows at line granularity).
    pub slot_ns: f64,
}

impl Default for DramConfig {
    fn default() -> Self {
        Self {
            latency_ns: 40.0,
            bw_gbytes_s: 76.8,
            slot_ns: 4.0,
        }
    }
}

/// The memory access interface.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MaiConfig {
    /// Entries of the outstanding-request table: distinct lines in flight. Default 128
    /// (assumed; the paper's count is stripped; 40 ns at 76.8 GB/s is 48 lines in flight, and
    /// the table serves every requester of the unit).
    pub otr_entries: u32,
    /// Bytes of a memory request (a line). Default 64.
    pub line_bytes: u32,
    /// Reorder-buffer entries per requester: its requests outstanding at once. Default 64
    /// (assumed: enough for one requester's stream to reach DRAM's bandwidth, 48 lines).
    pub rob_entries: u32,
    /// Read-modify-write buffer entries: RMWs in flight. Default 16 (assumed).
    pub rmw_entries: u32,
    /// Cycles between an RMW's read returning and its write leaving (the modify). Default 1.
    pub rmw_modify_cycles: f64,
    /// TLB entries. Default 8 (assumed: 8 GB of physical memory in 1 GB pages, §V).
    pub tlb_entries: u32,
    /// Page size in bytes. Default 2^30 (§V: Cereal assumes 1 GB pages).
    pub page_bytes: u64,
    /// Dependent DRAM reads of a page walk on a TLB miss. Default 3 (x86-64 with 1 GB pages:
    /// PML4, PDPT, and the PDPT entry's page).
    pub walk_reads: u32,
}

impl Default for MaiConfig {
    fn default() -> Self {
        Self {
            otr_entries: 128,
            line_bytes: 64,
            rob_entries: 64,
            rmw_entries: 16,
            rmw_modify_cycles: 1.0,
            tlb_entries: 8,
            page_bytes: 1 << 30,
            walk_reads: 3,
        }
    }
}

impl DramConfig {
    pub(crate) fn validate(&self) -> Result<()> {
        check_positive(
            "cereal.dram",
            &[
                (self.latency_ns, "latency_ns"),
                (self.bw_gbytes_s, "bw_gbytes_s"),
                (self.slot_ns, "slot_ns"),
            ],
        )
    }
}

impl MaiConfig {
    pub(crate) fn validate(&self) -> Result<()> {
        let c = "cereal.mai";
        for (v, f) in [
            (self.otr_entries, "otr_entries"),
            (self.rob_entries, "rob_entries"),
            (self.rmw_entries, "rmw_entries"),
            (self.tlb_entries, "tlb_entries"),
        ] {
            if !(1..=1 << 16).contains(&v) {
                return Err(config_err(c, f, format!("{v} must be from 1 to 65536")));
            }
        }
        if !(8..=4096).contains(&self.line_bytes) || !self.line_bytes.is_power_of_two() {
            return Err(config_err(
                c,
                "line_bytes",
                format!("{} must be a power of two from 8 to 4096", self.line_bytes),
            ));
        }
        if self.page_bytes < 4096 || !self.page_bytes.is_power_of_two() {
            return Err(config_err(
                c,
                "page_bytes",
                format!(
                    "{} must be a power of two of at least 4096",
                    self.page_bytes
                ),
            ));
        }
        if self.walk_reads > 8 {
            return Err(config_err(
                c,
                "walk_reads",
                format!("{} must be at most 8", self.walk_reads),
            ));
        }
        crate::error::check_non_negative(c, &[(self.rmw_modify_cycles, "rmw_modify_cycles")])
    }
}

counters!(
    /// DRAM counters.
    DramStats {
        /// Line reads.
        reads,
        /// Write requests.
        writes,
        /// Bytes read.
        bytes_read,
        /// Bytes written.
        bytes_written,
    }
);

counters!(
    /// MAI counters.
    MaiStats {
        /// Line requests from the units.
        requests,
        /// Requests merged into a line already in flight.
        coalesced,
        /// Requests that waited for a free outstanding-request entry.
        otr_full,
        /// ns requests waited for an outstanding-request entry.
        otr_wait_ns,
        /// Requests that waited for a free reorder-buffer entry of their requester.
        rob_full,
        /// Responses held back behind an earlier response of the same requester.
        rob_reordered,
        /// Read-modify-writes.
        rmws,
        /// RMWs that waited for an earlier RMW of the same address.
        rmw_conflicts,
        /// RMWs that waited for a free RMW-buffer entry.
        rmw_full,
        /// TLB hits.
        tlb_hits,
        /// TLB misses (each a page walk).
        tlb_misses,
    }
);

/// DRAM: a request's data crosses the channels in the first calendar slots with free
/// bandwidth at or after it arrives, and returns `latency_ns` after its last byte is sent.
struct Dram {
    latency: f64,
    bw: f64,
    slot: f64,
    cap: f64,
    base: u64,
    used: VecDeque<f64>,
    stats: DramStats,
}

/// Calendar slots kept behind the latest request: requests reach DRAM at most this far out of
/// time order (each unit issues in order; units interleave within a few µs).
const WINDOW_SLOTS: u64 = 1 << 16;

impl Dram {
    fn new(c: &DramConfig) -> Self {
        Self {
            latency: c.latency_ns,
            bw: c.bw_gbytes_s,
            slot: c.slot_ns,
            cap: c.bw_gbytes_s * c.slot_ns,
            base: 0,
            used: VecDeque::new(),
            stats: DramStats::default(),
        }
    }

    /// When the last of `bytes` sent at or after `t` has crossed.
    fn transfer(&mut self, t: f64, bytes: f64) -> f64 {
        let mut idx = ((t / self.slot).floor() as u64).max(self.base);
        let mut left = bytes;
        let end = loop {
            while self.base + self.used.len() as u64 <= idx {
                self.used.push_back(0.0);
            }
            let u = &mut self.used[(idx - self.base) as usize];
            let take = (self.cap - *u).min(left);
            if take > 0.0 {
                *u += take;
                left -= take;
            }
            if left <= 1e-9 {
                break idx as f64 * self.slot + *u / self.cap * self.slot;
            }
            idx += 1;
        };
        if idx > self.base + 2 * WINDOW_SLOTS {
            let drop = idx - WINDOW_SLOTS - self.base;
            self.used.drain(..drop as usize);
            self.base += drop;
        }
        end.max(t + bytes / self.bw)
    }

    fn read(&mut self, t: f64, bytes: u64) -> f64 {
        self.stats.reads += 1;
        self.stats.bytes_read += bytes;
        self.transfer(t, bytes as f64) + self.latency
    }

    fn write(&mut self, t: f64, bytes: u64) -> f64 {
        self.stats.writes += 1;
        self.stats.bytes_written += bytes;
        self.transfer(t, bytes as f64)
    }
}

/// The requesters the MAI keeps a reorder buffer for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Port {
    /// Serialization: the header manager's RMWs.
    Header = 0,
    /// Serialization: the metadata manager's klass reads.
    Metadata = 1,
    /// Serialization: the object handler's object reads.
    Object = 2,
    /// Deserialization: the layout manager's stream of the frame.
    Layout = 3,
    /// Page walks.
    Walk = 4,
}
const PORTS: usize = 5;

/// The memory access interface and the DRAM behind it.
pub struct Mai {
    line: u64,
    page: u64,
    walk_reads: u32,
    rmw_modify_ns: f64,
    dram: Dram,
    otr: Vec<f64>,
    in_flight: HashMap<u64, (f64, f64)>,
    rob: Vec<VecDeque<f64>>,
    rob_entries: usize,
    delivered: [f64; PORTS],
    rmw: Vec<f64>,
    rmw_pending: HashMap<u64, f64>,
    tlb: VecDeque<u64>,
    tlb_entries: usize,
    /// Counters.
    pub stats: MaiStats,
}

impl Mai {
    /// An idle MAI; `clock_ghz` converts the RMW's modify cycles.
    pub fn new(mai: &MaiConfig, dram: &DramConfig, clock_ghz: f64) -> Self {
        Self {
            line: u64::from(mai.line_bytes),
            page: mai.page_bytes,
            walk_reads: mai.walk_reads,
            rmw_modify_ns: mai.rmw_modify_cycles / clock_ghz,
            dram: Dram::new(dram),
            otr: vec![0.0; mai.otr_entries as usize],
            in_flight: HashMap::new(),
            rob: vec![VecDeque::new(); PORTS],
            rob_entries: mai.rob_entries as usize,
            delivered: [0.0; PORTS],
            rmw: vec![0.0; mai.rmw_entries as usize],
            rmw_pending: HashMap::new(),
            tlb: VecDeque::new(),
            tlb_entries: mai.tlb_entries as usize,
            stats: MaiStats::default(),
        }
    }

    /// DRAM's counters.
    pub fn dram_stats(&self) -> &DramStats {
        &self.dram.stats
    }

    /// Bytes of a request.
    pub fn line_bytes(&self) -> u64 {
        self.line
    }

    /// When `addr`'s translation is known, from `t`: at once on a hit, after a page walk's
    /// dependent reads on a miss (LRU replacement).
    fn translate(&mut self, addr: u64, t: f64) -> f64 {
        let page = addr / self.page;
        if let Some(i) = self.tlb.iter().position(|p| *p == page) {
            self.stats.tlb_hits += 1;
            let p = self.tlb.remove(i).unwrap_or(page);
            self.tlb.push_back(p);
            return t;
        }
        self.stats.tlb_misses += 1;
        let mut at = t;
        for level in 0..self.walk_reads {
            // Page-table entries live in one table page per level, away from the data.
            let pte = (u64::MAX >> 1) - u64::from(level) * self.page - (page % 512) * 8;
            at = self.line_read(Port::Walk, pte, at);
        }
        if self.tlb.len() == self.tlb_entries {
            self.tlb.pop_front();
        }
        self.tlb.push_back(page);
        at
    }

    /// One line read issued by `port` at `t`; returns when its data is delivered to the port.
    fn line_read(&mut self, port: Port, line_addr: u64, t: f64) -> f64 {
        self.stats.requests += 1;
        let p = port as usize;
        let mut t = t;
        if self.rob[p].len() == self.rob_entries {
            let oldest = self.rob[p].pop_front().unwrap_or(t);
            if oldest > t {
                self.stats.rob_full += 1;
                t = oldest;
            }
        }
        let line = line_addr / self.line;
        let done = match self.in_flight.get(&line) {
            Some(&(start, done)) if start <= t && t < done => {
                self.stats.coalesced += 1;
                done
            }
            _ => {
                let (slot, free) = self
                    .otr
                    .iter()
                    .copied()
                    .enumerate()
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .unwrap_or((0, t));
                let start = t.max(free);
                if start > t {
                    self.stats.otr_full += 1;
                    self.stats.otr_wait_ns += (start - t).round() as u64;
                }
                let done = self.dram.read(start, self.line);
                if let Some(s) = self.otr.get_mut(slot) {
                    *s = done;
                }
                if self.in_flight.len() > 4 * self.otr.len() {
                    self.in_flight.retain(|_, v| v.1 > start);
                }
                self.in_flight.insert(line, (start, done));
                done
            }
        };
        let delivered = if done < self.delivered[p] {
            self.stats.rob_reordered += 1;
            self.delivered[p]
        } else {
            done
        };
        self.delivered[p] = delivered;
        self.rob[p].push_back(delivered);
        delivered
    }

    /// Reads `bytes` at `addr` for `port`, issued at `t`, one line request a line; returns
    /// when the last is delivered. Zero bytes are there at once.
    pub fn read(&mut self, port: Port, addr: u64, bytes: u64, t: f64) -> f64 {
        if bytes == 0 {
            return t;
        }
        let t = self.translate(addr, t);
        let first = addr / self.line;
        let last = (addr + bytes - 1) / self.line;
        let mut done = t;
        for l in first..=last {
            done = done.max(self.line_read(port, l * self.line, t));
        }
        done
    }

    /// A posted write of `bytes` at `addr` leaving at `t`; returns when DRAM has taken it.
    pub fn write(&mut self, addr: u64, bytes: u64, t: f64) -> f64 {
        if bytes == 0 {
            return t;
        }
        let t = self.translate(addr, t);
        self.dram.write(t, bytes)
    }

    /// A read-modify-write of the word at `addr` from `t` (the header manager's visit of an
    /// object's header): it waits for an earlier RMW of the same word and for a free RMW-buffer
    /// entry; returns when the read value is delivered. The write leaves the modify cycles
    /// later, posted.
    pub fn rmw(&mut self, addr: u64, t: f64) -> f64 {
        self.stats.rmws += 1;
        let mut t = t;
        if let Some(&done) = self.rmw_pending.get(&addr) {
            if done > t {
                self.stats.rmw_conflicts += 1;
                t = done;
            }
        }
        let (slot, free) = self
            .rmw
            .iter()
            .copied()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, t));
        if free > t {
            self.stats.rmw_full += 1;
            t = free;
        }
        let read = self.read(Port::Header, addr, 8, t);
        let written = read + self.rmw_modify_ns;
        self.write(addr, 8, written);
        if let Some(s) = self.rmw.get_mut(slot) {
            *s = written;
        }
        if self.rmw_pending.len() > 4 * self.rmw.len() {
            self.rmw_pending.retain(|_, d| *d > t);
        }
        self.rmw_pending.insert(addr, written);
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mai() -> Mai {
        Mai::new(&MaiConfig::default(), &DramConfig::default(), 1.0)
    }

    #[test]
    fn an_idle_read_costs_the_latency_and_one_line() {
        let mut m = mai();
        m.read(Port::Object, 0x1000, 8, 0.0); // warm the TLB
        let t = m.read(Port::Object, 0x2000, 8, 1000.0);
        assert!((t - 1000.0 - 40.0 - 64.0 / 76.8).abs() < 1e-6, "{t}");
    }

    #[test]
    fn bandwidth_bounds_a_stream() {
        let mut m = mai();
        let bytes = 1u64 << 20;
        let t = m.read(Port::Layout, 0, bytes, 0.0);
        let floor = bytes as f64 / 76.8;
        assert!(t >= floor && t < floor * 1.1 + 200.0, "{t} vs {floor}");
        // Half the reorder buffer halves what one requester keeps in flight.
        let half = MaiConfig {
            rob_entries: 24,
            ..MaiConfig::default()
        };
        let t2 = Mai::new(&half, &DramConfig::default(), 1.0).read(Port::Layout, 0, bytes, 0.0);
        assert!(t2 > 1.5 * floor, "{t2} vs {floor}");
    }

    #[test]
    fn the_request_table_limits_what_is_in_flight() {
        let small = MaiConfig {
            otr_entries: 1,
            ..MaiConfig::default()
        };
        let mut one = Mai::new(&small, &DramConfig::default(), 1.0);
        let mut many = mai();
        let a0 = one.read(Port::Object, 1 << 20, 8, 0.0); // warm the TLBs
        let b0 = many.read(Port::Object, 1 << 20, 8, 0.0);
        let a = one.read(Port::Object, 0, 16 * 64, a0) - a0;
        let b = many.read(Port::Object, 0, 16 * 64, b0) - b0;
        assert!(a > 10.0 * b, "{a} {b}");
        assert!(one.stats.otr_full > 0);
    }

    #[test]
    fn requests_to_a_line_in_flight_coalesce() {
        let mut m = mai();
        let t = m.read(Port::Object, 1 << 20, 8, 0.0); // the page walk
        let a = m.read(Port::Object, 64, 8, t);
        let b = m.read(Port::Metadata, 72, 8, t + 1.0);
        assert_eq!(a, b);
        assert_eq!(m.stats.coalesced, 1);
        assert_eq!(m.dram_stats().reads, 3 + 2); // the walk and two lines
    }

    #[test]
    fn rmws_of_one_word_serialize_and_others_overlap() {
        let mut m = mai();
        m.read(Port::Object, 0, 8, 0.0);
        let a = m.rmw(4096, 200.0);
        let c = m.rmw(8192, 200.0);
        let b = m.rmw(4096, 200.0);
        assert!(b >= a + 40.0, "{a} {b}");
        assert!(c < a + 5.0, "{a} {c}");
        assert_eq!(m.stats.rmw_conflicts, 1);
    }

    #[test]
    fn the_tlb_misses_once_per_1gb_page() {
        let mut m = mai();
        for i in 0..100u64 {
            m.read(Port::Object, i * 4096, 8, i as f64);
        }
        assert_eq!(m.stats.tlb_misses, 1);
        m.read(Port::Object, 3 << 30, 8, 500.0);
        assert_eq!(m.stats.tlb_misses, 2);
        let mut tiny = MaiConfig {
            tlb_entries: 1,
            ..MaiConfig::default()
        };
        tiny.page_bytes = 4096;
        let mut small = Mai::new(&tiny, &DramConfig::default(), 1.0);
        for i in 0..10u64 {
            small.read(Port::Object, i * 4096, 8, 0.0);
        }
        assert_eq!(small.stats.tlb_misses, 10);
    }
}
