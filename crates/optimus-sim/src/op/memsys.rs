//! The path every Optimus Prime memory transaction takes: a Block Buffer lookup; on a miss a
//! request across OP's port and the mesh to the line's home LLC bank, on to the owner core's
//! L1 or to DRAM, and the line back; line writes to their home bank and its acknowledgement;
//! the cores' request and completion flits.

use optimus_trace::Region;
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;

use super::config::OpConfig;
use super::mem::{BlockBuffer, Lookup, MemoryConfig, Mesh, NocConfig, Port};
use crate::program::LINE_BYTES;

/// OP's tile.
pub(super) const OP_TILE: u32 = 0;

/// The Block Buffer, OP's port, the mesh and the LLC/memory behind them.
pub(super) struct MemorySystem {
    pub(super) mesh: Mesh,
    pub(super) port: Port,
    pub(super) bb: BlockBuffer,
    /// LLC/DRAM and owner-forwarding draws.
    rng: ChaCha8Rng,
    noc: NocConfig,
    memory: MemoryConfig,
    hit_cycles: u64,
    mem_cycles: u64,
    /// Sum of measured misses' latencies (request to data), cycles.
    pub(super) miss_latency_sum: u64,
    /// Measured misses.
    pub(super) misses: u64,
}

impl MemorySystem {
    /// The memory side of `cfg`, drawing from `rng`.
    pub(super) fn new(cfg: &OpConfig, rng: ChaCha8Rng) -> Self {
        Self {
            mesh: Mesh::new(cfg.noc.mesh),
            port: Port::new(cfg.noc.attach_links),
            bb: BlockBuffer::new(&cfg.block_buffer),
            rng,
            noc: cfg.noc.clone(),
            memory: cfg.memory.clone(),
            hit_cycles: u64::from(cfg.block_buffer.hit_cycles),
            mem_cycles: cfg.mem_cycles(),
            miss_latency_sum: 0,
            misses: 0,
        }
    }

    fn hop_cycles(&self, a: u32, b: u32) -> u64 {
        u64::from(self.noc.hop_cycles) * u64::from(self.mesh.hops(a, b))
    }

    /// Reads `line` for transformation `txn`, whose message the core on `owner_tile` built:
    /// the cycle its data is in the Block Buffer, or `None` if no Block Buffer port is free
    /// this cycle.
    pub(super) fn read(
        &mut self,
        now: u64,
        txn: u64,
        owner_tile: u32,
        line: u64,
        region: Region,
        measuring: bool,
    ) -> Option<u64> {
        match self.bb.lookup(now, txn, line) {
            Lookup::Ready(t) => Some(t),
            Lookup::Busy => None,
            Lookup::Miss => {
                let ready = self.miss(now, owner_tile, line, region);
                self.bb.fill(txn, line, ready);
                if measuring {
                    self.miss_latency_sum += ready - now;
                    self.misses += 1;
                }
                Some(ready)
            }
        }
    }

    /// A Block Buffer miss: request across the port and mesh to the home LLC bank (lines are
    /// interleaved over the tiles), forwarded to the owner core's L1 when dirty there, or
    /// DRAM; the data back across the mesh and port.
    fn miss(&mut self, now: u64, owner_tile: u32, line: u64, region: Region) -> u64 {
        let home = (line % u64::from(self.mesh.tiles())) as u32;
        let t0 = now + self.hit_cycles;
        let req_flits = self.noc.header_flits;
        let sent = self.port.send(t0, req_flits, false);
        self.mesh.route(OP_TILE, home, req_flits);
        let mut t = sent + self.hop_cycles(OP_TILE, home) + u64::from(self.memory.llc_cycles);
        let mut src = home;
        if region != Region::Buffer {
            if self.draw() >= self.memory.llc_hit_ratio {
                t += self.mem_cycles;
            } else if self.draw() < self.memory.owner_forward_ratio {
                // The directory forwards to the core that wrote the message (owner, M state).
                self.mesh.route(home, owner_tile, req_flits);
                t += self.hop_cycles(home, owner_tile) + u64::from(self.memory.l1_cycles);
                src = owner_tile;
            }
        }
        let data_flits = self.noc.flits(LINE_BYTES as u32);
        self.mesh.route(src, OP_TILE, data_flits);
        let reach = t + self.hop_cycles(src, OP_TILE);
        self.port.send(reach, data_flits, true)
    }

    /// A uniform draw in [0, 1).
    fn draw(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Writes one output line through a Block Buffer port, out of OP's port to its home bank,
    /// which acknowledges it; false if no Block Buffer port is free this cycle or OP's port
    /// is booked more than `write_backlog_cycles` ahead.
    pub(super) fn write_line(&mut self, now: u64) -> bool {
        // The write path's queue to the port is bounded: a line waits in the Block Buffer
        // while the port is booked too far ahead.
        if self.port.backlog(now + 1) > u64::from(self.noc.write_backlog_cycles) {
            return false;
        }
        if !self.bb.write(now) {
            return false;
        }
        let flits = self.noc.flits(LINE_BYTES as u32);
        // Output buffers are spread over the banks like any data.
        let home = ((now.wrapping_mul(0x9e37_79b9) >> 7) % u64::from(self.mesh.tiles())) as u32;
        self.port.send(now + 1, flits, false);
        self.mesh.route(OP_TILE, home, flits);
        let ack = self.noc.header_flits;
        self.port
            .send(now + 1 + 2 * self.hop_cycles(OP_TILE, home), ack, true);
        self.mesh.route(home, OP_TILE, ack);
        true
    }

    /// A core on `tile` writes `bytes` to OP's request register at `now`: the cycle the write
    /// has crossed OP's port.
    pub(super) fn request_to_op(&mut self, now: u64, tile: u32, bytes: u32) -> u64 {
        let flits = self.noc.flits(bytes);
        self.mesh.route(tile, OP_TILE, flits);
        self.port
            .send(now + self.hop_cycles(tile, OP_TILE), flits, true)
    }

    /// OP signals a completion to the core on `tile` at `now`: the cycle it reaches the core.
    pub(super) fn completion_to_core(&mut self, now: u64, tile: u32) -> u64 {
        let flits = self.noc.header_flits;
        let out = self.port.send(now, flits, false);
        self.mesh.route(OP_TILE, tile, flits);
        out + self.hop_cycles(OP_TILE, tile)
    }
}
