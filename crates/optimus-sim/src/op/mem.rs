//! Optimus Prime's memory side: the Block Buffer, the NoC attachment port, the mesh and the
//! LLC/memory behind it.
//!
//! The port is a per-cycle flit calendar: OP's tile has `attach_links` links of
//! `link_bytes` each, and the paper counts their sum (32 B/cycle = 512 Gbps at 2 GHz) as OP's
//! total read/write bandwidth (§5), so requests, responses, writes and their headers all share
//! it. A packet reserves its flits in the first cycles with free capacity at or after it
//! reaches the port; its last flit's cycle is when it has crossed. The mesh adds `hop_cycles`
//! per hop on XY routes; link utilization of the whole mesh is counted flit-hop by flit-hop.

use serde::{Deserialize, Serialize};

use crate::error::{check_non_negative, config_err, Result};
use crate::stats::counters;

/// Block Buffer configuration (Optimus Prime Table 1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BlockBufferConfig {
    /// Capacity in bytes. Default 8192 (Table 1: 8KB).
    pub size_bytes: u32,
    /// Associativity. Default 2 (Table 1: 2-way, LRU).
    pub ways: u32,
    /// Block size in bytes. Default 64 (Table 1).
    pub line_bytes: u32,
    /// Outstanding misses. Default 64 (Table 1: 64 MSHRs).
    pub mshrs: u32,
    /// Hit latency in cycles. Default 1 (Table 1).
    pub hit_cycles: u32,
    /// Read/write ports: accesses accepted per cycle. Default 2 (Table 1).
    pub ports: u32,
}

impl Default for BlockBufferConfig {
    fn default() -> Self {
        // Optimus Prime (ASPLOS'20), Table 1: "8KB, 2-way, 64-byte blocks, LRU 64MSHRs,
        // 1 cycle hit, 2 read/write ports".
        Self {
            size_bytes: 8192,
            ways: 2,
            line_bytes: 64,
            mshrs: 64,
            hit_cycles: 1,
            ports: 2,
        }
    }
}

/// Largest Block Buffer a configuration may ask for: 64 MiB, eight times Table 1's whole LLC
/// (8 MB). The model keeps an entry per line, so the bound keeps that table within memory.
pub const MAX_BLOCK_BUFFER_BYTES: u32 = 64 << 20;

impl BlockBufferConfig {
    /// Lines the buffer holds.
    fn lines(&self) -> u32 {
        self.size_bytes / self.line_bytes
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.line_bytes != 64 {
            return Err(config_err(
                "op.block_buffer",
                "line_bytes",
                format!("{} (traces are split into 64-byte lines)", self.line_bytes),
            ));
        }
        let set_bytes = self.ways.checked_mul(self.line_bytes).unwrap_or(0);
        if set_bytes == 0 || self.size_bytes == 0 || !self.size_bytes.is_multiple_of(set_bytes) {
            return Err(config_err(
                "op.block_buffer",
                "ways",
                format!(
                    "{} ways of 64 B lines need a capacity that is a positive multiple of \
                     their set, not {} B",
                    self.ways, self.size_bytes
                ),
            ));
        }
        if self.size_bytes > MAX_BLOCK_BUFFER_BYTES {
            return Err(config_err(
                "op.block_buffer",
                "size_bytes",
                format!(
                    "{} B is more than {} B (64 MiB)",
                    self.size_bytes, MAX_BLOCK_BUFFER_BYTES
                ),
            ));
        }
        if self.mshrs == 0 || self.ports == 0 {
            return Err(config_err(
                "op.block_buffer",
                "mshrs",
                "mshrs and ports must be at least 1",
            ));
        }
        if self.mshrs > self.lines() {
            // A miss's line is installed when it returns: more misses in flight than lines
            // would evict lines before they were read.
            return Err(config_err(
                "op.block_buffer",
                "mshrs",
                format!(
                    "{} outstanding misses in a buffer of {} lines",
                    self.mshrs,
                    self.lines()
                ),
            ));
        }
        Ok(())
    }
}

/// Mesh NoC configuration (Optimus Prime Table 1, §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NocConfig {
    /// Mesh width and height in tiles (4 = 4×4, 16 cores; 8 = 8×8, 64 cores). Default 4.
    pub mesh: u32,
    /// Link width in bytes per cycle. Default 16 (Table 1: 16B links).
    pub link_bytes: u32,
    /// Router+link latency per hop in cycles. Default 3 (Table 1: 3 cycles/hop).
    pub hop_cycles: u32,
    /// Links of OP's corner tile: flits its port carries per cycle, 1 to 255 (the port's
    /// calendar counts a cycle's flits in a byte). Default 2 (§5: "access to two NoC links").
    pub attach_links: u32,
    /// Header flits per packet, at most [`MAX_HEADER_FLITS`]. Default 1.
    pub header_flits: u32,
    /// A line write waits in the Block Buffer while OP's port is booked more than this many
    /// cycles ahead: the write path's queue is bounded. Default 1024 (an assumption: the paper
    /// gives no depth; the calibrated experiments book at most ~280 cycles ahead).
    pub write_backlog_cycles: u32,
}

impl Default for NocConfig {
    fn default() -> Self {
        Self {
            mesh: 4,
            link_bytes: 16,
            hop_cycles: 3,
            attach_links: 2,
            header_flits: 1,
            write_backlog_cycles: 1024,
        }
    }
}

/// Most header flits a packet may have: as many as a 64-byte line's payload at one byte a
/// flit. The bound keeps a packet's flit count far from `u32`'s range.
pub const MAX_HEADER_FLITS: u32 = 64;

impl NocConfig {
    pub(crate) fn validate(&self) -> Result<()> {
        if !(2..=16).contains(&self.mesh) {
            return Err(config_err(
                "op.noc",
                "mesh",
                format!("{} (2..=16 tiles per side)", self.mesh),
            ));
        }
        if self.link_bytes == 0 || 64 % self.link_bytes != 0 {
            return Err(config_err(
                "op.noc",
                "link_bytes",
                format!("{} does not divide a 64 B line", self.link_bytes),
            ));
        }
        if !(1..=u32::from(u8::MAX)).contains(&self.attach_links) {
            return Err(config_err(
                "op.noc",
                "attach_links",
                format!(
                    "{} (1..=255: the port's calendar counts a cycle's flits in a byte)",
                    self.attach_links
                ),
            ));
        }
        if !(1..=MAX_HEADER_FLITS).contains(&self.header_flits) {
            return Err(config_err(
                "op.noc",
                "header_flits",
                format!(
                    "{} (1..={MAX_HEADER_FLITS}: a request or acknowledgement is a packet)",
                    self.header_flits
                ),
            ));
        }
        if u64::from(self.write_backlog_cycles) >= HORIZON / 2 {
            return Err(config_err(
                "op.noc",
                "write_backlog_cycles",
                format!(
                    "{} (below {}: the port's calendar looks {} cycles ahead)",
                    self.write_backlog_cycles,
                    HORIZON / 2,
                    HORIZON
                ),
            ));
        }
        Ok(())
    }

    /// Flits of a packet carrying `bytes` of payload.
    pub fn flits(&self, bytes: u32) -> u32 {
        self.header_flits
            .saturating_add(bytes.div_ceil(self.link_bytes))
    }
}

/// LLC and memory configuration (Optimus Prime Table 1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// LLC bank access in cycles. Default 6 (Table 1: "1 bank/tile 6-cycle access").
    pub llc_cycles: u32,
    /// Core L1 access in cycles, for lines forwarded from their owner. Default 2 (Table 1).
    pub l1_cycles: u32,
    /// DRAM access latency in ns. Default 45 (Table 1: "45ns access latency").
    pub mem_latency_ns: f64,
    /// Probability that a message line is in the LLC/owner L1 rather than DRAM. Default 1.0:
    /// the microbenchmark's cores build each message just before requesting it (§5).
    pub llc_hit_ratio: f64,
    /// Probability that a message line is dirty in its builder core's L1, so the directory
    /// (non-inclusive MESI, Table 1) forwards the read to that core. Default 1.0 (same reason).
    pub owner_forward_ratio: f64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            llc_cycles: 6,
            l1_cycles: 2,
            mem_latency_ns: 45.0,
            llc_hit_ratio: 1.0,
            owner_forward_ratio: 1.0,
        }
    }
}

impl MemoryConfig {
    pub(crate) fn validate(&self) -> Result<()> {
        for (v, f) in [
            (self.llc_hit_ratio, "llc_hit_ratio"),
            (self.owner_forward_ratio, "owner_forward_ratio"),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(config_err(
                    "op.memory",
                    f,
                    format!("{v} is not a probability"),
                ));
            }
        }
        check_non_negative("op.memory", &[(self.mem_latency_ns, "mem_latency_ns")])
    }
}

/// A 2D mesh with OP on the corner tile (0, 0).
#[derive(Clone, Debug)]
pub struct Mesh {
    /// Tiles per side.
    pub side: u32,
    /// Flit-hops carried per directed link: index `(tile * 4 + dir)`.
    link_flits: Vec<u64>,
}

impl Mesh {
    /// A `side`×`side` mesh.
    pub fn new(side: u32) -> Self {
        Self {
            side,
            link_flits: vec![0; (side * side * 4) as usize],
        }
    }

    /// Number of tiles.
    pub fn tiles(&self) -> u32 {
        self.side * self.side
    }

    /// Manhattan distance between tiles.
    pub fn hops(&self, a: u32, b: u32) -> u32 {
        let (ax, ay, bx, by) = (a % self.side, a / self.side, b % self.side, b / self.side);
        ax.abs_diff(bx) + ay.abs_diff(by)
    }

    /// Records `flits` crossing every link of the XY route from `a` to `b`.
    pub fn route(&mut self, a: u32, b: u32, flits: u32) {
        let s = self.side;
        let (mut x, mut y, bx, by) = (a % s, a / s, b % s, b / s);
        while x != bx {
            let dir = if bx > x { 0 } else { 1 };
            self.link_flits[((y * s + x) * 4 + dir) as usize] += u64::from(flits);
            x = if bx > x { x + 1 } else { x - 1 };
        }
        while y != by {
            let dir = if by > y { 2 } else { 3 };
            self.link_flits[((y * s + x) * 4 + dir) as usize] += u64::from(flits);
            y = if by > y { y + 1 } else { y - 1 };
        }
    }

    /// Directed links in the mesh.
    pub fn directed_links(&self) -> u64 {
        u64::from(4 * self.side * (self.side - 1))
    }

    /// Total flit-hops carried.
    pub fn flit_hops(&self) -> u64 {
        self.link_flits.iter().sum()
    }

    /// Starts counting flit-hops again from zero.
    pub fn reset_counts(&mut self) {
        self.link_flits.fill(0);
    }
}

counters!(
    /// Port counters.
    PortStats {
        /// Flits into OP's tile (responses, MMIO requests, acks).
        flits_in,
        /// Flits out of OP's tile (requests, writes, completions).
        flits_out,
        /// Cycles packets waited for port capacity, summed.
        queue_cycles,
        /// Flits that crossed the port, counted in the cycle they crossed (the two counters
        /// above count a packet when it is booked, which may be cycles ahead).
        flits_carried,
    }
);

/// OP's attachment port: a calendar of flits per cycle.
#[derive(Clone, Debug)]
pub struct Port {
    capacity: u8,
    slots: Vec<u8>,
    /// Cycles before this one have been retired from the ring.
    base: u64,
    /// Every cycle in `base..free_from` is full: a packet due then starts at `free_from`.
    free_from: u64,
    /// Counters.
    pub stats: PortStats,
}

/// Cycles of look-ahead the calendar keeps.
const HORIZON: u64 = 1 << 14;

impl Port {
    /// A port moving `flits_per_cycle` flits per cycle.
    ///
    /// # Panics
    /// If `flits_per_cycle` is not in 1..=255 ([`NocConfig::attach_links`]' bounds).
    pub fn new(flits_per_cycle: u32) -> Self {
        let capacity = u8::try_from(flits_per_cycle)
            .ok()
            .filter(|&c| c > 0)
            .expect("a port carries 1..=255 flits a cycle (NocConfig::validate)");
        Self {
            capacity,
            slots: vec![0; HORIZON as usize],
            base: 0,
            free_from: 0,
            stats: PortStats::default(),
        }
    }

    /// Retires calendar cycles before `now`.
    pub fn advance(&mut self, now: u64) {
        while self.base < now {
            let slot = &mut self.slots[(self.base % HORIZON) as usize];
            self.stats.flits_carried += u64::from(*slot);
            *slot = 0;
            self.base += 1;
        }
        self.free_from = self.free_from.max(self.base);
    }

    /// Flits that crossed the port before cycle `now`, retired or not.
    pub fn carried_before(&self, now: u64) -> u64 {
        self.stats.flits_carried
            + (self.base..now.min(self.base + HORIZON))
                .map(|c| u64::from(self.slots[(c % HORIZON) as usize]))
                .sum::<u64>()
    }

    /// Cycles from `now` until the port has a free flit slot: how far its queue reaches.
    pub fn backlog(&self, now: u64) -> u64 {
        self.free_from.saturating_sub(now)
    }

    /// Reserves `flits` flits at or after cycle `at`; returns the cycle after the last one.
    pub fn send(&mut self, at: u64, flits: u32, inbound: bool) -> u64 {
        let mut c = at.max(self.free_from);
        let mut left = flits;
        while left > 0 {
            if c >= self.base + HORIZON - 1 {
                // Beyond the calendar: the port is hopelessly oversubscribed; serialize.
                c += u64::from(left.div_ceil(u32::from(self.capacity)));
                break;
            }
            let slot = &mut self.slots[(c % HORIZON) as usize];
            let take = (self.capacity - *slot).min(left.min(255) as u8);
            *slot += take;
            left -= u32::from(take);
            if left > 0 {
                c += 1;
            }
        }
        while self.free_from < self.base + HORIZON - 1
            && self.slots[(self.free_from % HORIZON) as usize] == self.capacity
        {
            self.free_from += 1;
        }
        let done = c + 1;
        let ideal = at + u64::from(flits.div_ceil(u32::from(self.capacity)));
        self.stats.queue_cycles += done.saturating_sub(ideal);
        if inbound {
            self.stats.flits_in += u64::from(flits);
        } else {
            self.stats.flits_out += u64::from(flits);
        }
        done
    }
}

counters!(
    /// Block Buffer counters.
    BlockBufferStats {
        /// Accesses that found their line (same transformation).
        hits,
        /// Accesses that found their line still in flight (merged into the MSHR).
        merges,
        /// Accesses that went to the NoC.
        misses,
        /// Valid lines evicted.
        evictions,
        /// Accesses refused for lack of a port this cycle.
        port_conflicts,
        /// Accesses refused because every MSHR was busy.
        mshr_full,
        /// Line writes issued.
        writes,
        /// Evicted lines that the Reader had requested and not used yet: it requests them
        /// again.
        refetches,
    }
);

/// One Block Buffer entry: which transformation fetched which line.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    line: u64,
    txn: u64,
    /// The access of the transformation's program whose miss fetched the line.
    access: u32,
    lru: u64,
    valid: bool,
}

/// A miss in flight: it holds an MSHR until its line arrives.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    txn: u64,
    line: u64,
    /// The access whose miss it is.
    access: u32,
    /// The cycle its line arrives.
    ready: u64,
}

/// A valid line that an arriving one replaced: the transformation that had fetched it, and
/// the access whose miss did, so that a Reader still waiting to use it can request it again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eviction {
    /// Transformation whose line it was.
    pub txn: u64,
    /// The line.
    pub line: u64,
    /// The access of the transformation's program whose miss fetched it.
    pub access: u32,
}

/// The non-coherent, virtually tagged Block Buffer (§4.2). Entries are tagged with the
/// transformation that fetched them: every line must be re-requested the first time each
/// transformation touches it (§4.3), so only accesses of the same transformation hit.
/// A miss holds an MSHR until its line arrives, and accesses to the line meanwhile merge into
/// it; the line takes a way of its set, evicting the least recently used, when it arrives (it
/// is put in at the first lookup from then on). The lines evicted are reported
/// ([`BlockBuffer::take_evictions`]), so that a Reader that had not used one yet requests it
/// again.
#[derive(Clone, Debug)]
pub struct BlockBuffer {
    cfg: BlockBufferConfig,
    sets: u32,
    entries: Vec<Entry>,
    /// One per MSHR.
    in_flight: Vec<InFlight>,
    /// Lines evicted since [`BlockBuffer::take_evictions`] last took them.
    evicted: Vec<Eviction>,
    /// The earliest arrival in `in_flight`; `u64::MAX` when none is.
    next_arrival: u64,
    port_cycle: u64,
    ports_used: u32,
    tick: u64,
    /// Counters.
    pub stats: BlockBufferStats,
}

/// Result of a Block Buffer lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Data ready at this cycle (hit or merged).
    Ready(u64),
    /// Miss: an MSHR was allocated; the caller sends the request and calls `fill`.
    Miss,
    /// No port or MSHR this cycle; retry.
    Busy,
}

impl BlockBuffer {
    /// An empty Block Buffer.
    pub fn new(cfg: &BlockBufferConfig) -> Self {
        let sets = cfg.size_bytes / (cfg.ways * cfg.line_bytes);
        Self {
            cfg: cfg.clone(),
            sets,
            entries: vec![Entry::default(); (sets * cfg.ways) as usize],
            in_flight: Vec::with_capacity(cfg.mshrs as usize),
            evicted: Vec::new(),
            next_arrival: u64::MAX,
            port_cycle: 0,
            ports_used: 0,
            tick: 0,
            stats: BlockBufferStats::default(),
        }
    }

    fn take_port(&mut self, now: u64) -> bool {
        if self.port_cycle != now {
            self.port_cycle = now;
            self.ports_used = 0;
        }
        if self.ports_used >= self.cfg.ports {
            self.stats.port_conflicts += 1;
            return false;
        }
        self.ports_used += 1;
        true
    }

    /// Looks up `line` for transformation `txn` at cycle `now`.
    pub fn lookup(&mut self, now: u64, txn: u64, line: u64) -> Lookup {
        self.install_arrived(now);
        let set = (line % u64::from(self.sets)) as usize;
        let ways = self.cfg.ways as usize;
        let hit = (0..ways).map(|w| set * ways + w).find(|&i| {
            let e = &self.entries[i];
            e.valid && e.line == line && e.txn == txn
        });
        let pending = match hit {
            Some(_) => None,
            None => self.in_flight_arrival(txn, line),
        };
        if hit.is_none() && pending.is_none() && self.in_flight.len() >= self.cfg.mshrs as usize {
            self.stats.mshr_full += 1;
            return Lookup::Busy;
        }
        if !self.take_port(now) {
            return Lookup::Busy;
        }
        self.tick += 1;
        if let Some(i) = hit {
            self.entries[i].lru = self.tick;
            self.stats.hits += 1;
            return Lookup::Ready(now + u64::from(self.cfg.hit_cycles));
        }
        if let Some(ready) = pending {
            self.stats.merges += 1;
            return Lookup::Ready(ready.max(now + u64::from(self.cfg.hit_cycles)));
        }
        self.stats.misses += 1;
        Lookup::Miss
    }

    /// The arrival of `txn`'s miss of `line`, if one is in flight.
    fn in_flight_arrival(&self, txn: u64, line: u64) -> Option<u64> {
        self.in_flight
            .iter()
            .find(|m| m.txn == txn && m.line == line)
            .map(|m| m.ready)
    }

    /// Whether `txn`'s `line` is in the buffer or on its way, without taking a port: `None` if
    /// neither, else the cycle it arrives (0 once it is in).
    pub fn holds(&self, txn: u64, line: u64) -> Option<u64> {
        let set = (line % u64::from(self.sets)) as usize;
        let ways = self.cfg.ways as usize;
        let resident = self.entries[set * ways..(set + 1) * ways]
            .iter()
            .any(|e| e.valid && e.line == line && e.txn == txn);
        if resident {
            Some(0)
        } else {
            self.in_flight_arrival(txn, line)
        }
    }

    /// Records the miss of `line` for `txn` by its program's access `access`, whose data
    /// arrives at `ready`: it holds an MSHR until then.
    pub fn fill(&mut self, txn: u64, line: u64, access: u32, ready: u64) {
        self.in_flight.push(InFlight {
            txn,
            line,
            access,
            ready,
        });
        self.next_arrival = self.next_arrival.min(ready);
    }

    /// The lines evicted since the last call, oldest first, in `into` (emptied first, so
    /// that a caller may reuse one vector).
    pub fn take_evictions(&mut self, into: &mut Vec<Eviction>) {
        into.clear();
        std::mem::swap(&mut self.evicted, into);
    }

    /// Puts every line that has arrived by `now` in its set, in order of arrival.
    fn install_arrived(&mut self, now: u64) {
        while self.next_arrival <= now {
            let Some((i, _)) = self
                .in_flight
                .iter()
                .enumerate()
                .min_by_key(|(_, m)| m.ready)
            else {
                break;
            };
            let m = self.in_flight.swap_remove(i);
            self.install(m);
            self.next_arrival = self
                .in_flight
                .iter()
                .map(|m| m.ready)
                .min()
                .unwrap_or(u64::MAX);
        }
    }

    /// Installs the line of miss `m` over the least recently used way of its set.
    fn install(&mut self, m: InFlight) {
        let InFlight {
            txn, line, access, ..
        } = m;
        let set = (line % u64::from(self.sets)) as usize;
        let ways = self.cfg.ways as usize;
        let victim = (0..ways)
            .map(|w| set * ways + w)
            .min_by_key(|&i| {
                if self.entries[i].valid {
                    self.entries[i].lru
                } else {
                    0
                }
            })
            .unwrap_or(set * ways);
        let old = self.entries[victim];
        if old.valid {
            self.stats.evictions += 1;
            self.evicted.push(Eviction {
                txn: old.txn,
                line: old.line,
                access: old.access,
            });
        }
        self.tick += 1;
        self.entries[victim] = Entry {
            line,
            txn,
            access,
            lru: self.tick,
            valid: true,
        };
    }

    /// Takes a port for a line write at `now`; `false` if none is free.
    pub fn write(&mut self, now: u64) -> bool {
        let ok = self.take_port(now);
        if ok {
            self.stats.writes += 1;
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_buffer_sizes_are_bounded() {
        let ok = BlockBufferConfig::default();
        ok.validate().unwrap();
        let all_lines = BlockBufferConfig {
            mshrs: 128,
            ..ok.clone()
        };
        all_lines.validate().unwrap();
        let e = BlockBufferConfig {
            mshrs: 129,
            ..ok.clone()
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("mshrs") && e.contains("129") && e.contains("128 lines"),
            "{e}"
        );
        let huge = BlockBufferConfig {
            size_bytes: 128 << 20,
            ..ok.clone()
        };
        let e = huge.validate().unwrap_err().to_string();
        assert!(e.contains("size_bytes") && e.contains("64 MiB"), "{e}");
        BlockBufferConfig {
            size_bytes: MAX_BLOCK_BUFFER_BYTES,
            ..ok
        }
        .validate()
        .unwrap();
    }

    #[test]
    fn port_serializes_beyond_capacity() {
        let mut p = Port::new(2);
        assert_eq!(p.send(10, 5, true), 13); // cycles 10,11,12
        assert_eq!(p.send(10, 1, false), 13); // fills the free half of cycle 12
        assert_eq!(p.stats.flits_in, 5);
        p.advance(20);
        assert_eq!(p.send(20, 2, true), 21);
    }

    #[test]
    fn port_carries_flits_in_the_cycles_they_cross() {
        let mut p = Port::new(2);
        // Booked at cycle 0, the ten flits cross in cycles 0..=4, two a cycle.
        p.send(0, 10, false);
        assert_eq!(p.stats.flits_out, 10);
        assert_eq!(p.carried_before(0), 0);
        assert_eq!(p.carried_before(3), 6);
        p.advance(3);
        assert_eq!(p.stats.flits_carried, 6);
        assert_eq!(p.carried_before(4), 8);
        assert_eq!(p.carried_before(100), 10);
    }

    #[test]
    fn port_backlog_is_its_first_free_slot() {
        let mut p = Port::new(2);
        assert_eq!(p.send(0, 10, false), 5); // cycles 0..=4 full
        assert_eq!(p.backlog(0), 5);
        assert_eq!(p.backlog(3), 2);
        // A packet due in a full cycle starts at the first free one.
        assert_eq!(p.send(2, 1, true), 6);
        assert_eq!(p.send(20, 2, true), 21);
        // Cycle 5 still has a slot; filling it moves the backlog on, not past the gap.
        assert_eq!(p.backlog(0), 5);
        assert_eq!(p.send(0, 1, true), 6);
        assert_eq!(p.backlog(0), 6);
        p.advance(8);
        assert_eq!(p.backlog(8), 0);
    }

    #[test]
    fn block_buffer_hits_only_within_a_transformation() {
        let cfg = BlockBufferConfig::default();
        let mut bb = BlockBuffer::new(&cfg);
        assert_eq!(bb.lookup(0, 1, 100), Lookup::Miss);
        bb.fill(1, 100, 0, 30);
        assert_eq!(bb.lookup(1, 1, 100), Lookup::Ready(30)); // merged into the MSHR
        assert_eq!(bb.lookup(40, 1, 100), Lookup::Ready(41)); // hit
        assert_eq!(bb.lookup(41, 2, 100), Lookup::Miss); // another transformation re-requests
        assert_eq!(bb.stats.hits, 1);
        assert_eq!(bb.stats.merges, 1);
    }

    #[test]
    fn block_buffer_ports_and_lru() {
        let cfg = BlockBufferConfig::default();
        let mut bb = BlockBuffer::new(&cfg);
        assert_eq!(bb.lookup(5, 1, 0), Lookup::Miss);
        assert_eq!(bb.lookup(5, 1, 1), Lookup::Miss);
        assert_eq!(bb.lookup(5, 1, 2), Lookup::Busy); // two ports per cycle
                                                      // Three lines mapping to one 2-way set: the first is evicted.
        let sets = 8192 / 128;
        for (i, l) in [0u64, sets, 2 * sets].iter().enumerate() {
            bb.fill(1, *l, i as u32, 10 + i as u64);
        }
        // In flight, none has taken a way yet: an access merges.
        assert_eq!(bb.lookup(9, 1, 2 * sets), Lookup::Ready(12));
        assert_eq!(bb.stats.evictions, 0);
        // Once all three have arrived, the first is the one evicted.
        assert_eq!(bb.lookup(100, 1, 0), Lookup::Miss);
        assert_eq!(bb.stats.evictions, 1);
        assert_eq!(bb.lookup(101, 1, 2 * sets), Lookup::Ready(102));
    }

    #[test]
    fn mesh_hops_and_routes() {
        let mut m = Mesh::new(4);
        assert_eq!(m.hops(0, 15), 6);
        assert_eq!(m.directed_links(), 48);
        m.route(0, 15, 5);
        assert_eq!(m.flit_hops(), 30);
        assert!(NocConfig {
            mesh: 1,
            ..Default::default()
        }
        .validate()
        .is_err());
        assert_eq!(NocConfig::default().flits(64), 5);
    }
}
