//! The path every Optimus Prime memory transaction takes: a Block Buffer lookup; on a miss a
//! request across OP's port and the mesh to the line's home LLC bank, on to the owner core's
//! L1 or to DRAM, and the line back; line writes to their home bank and its acknowledgement;
//! the cores' request and completion flits.

use optimus_trace::Region;
use rand_chacha::ChaCha8Rng;

use super::config::OpConfig;
use super::mem::{BlockBuffer, Lookup, MemoryConfig, Mesh, NocConfig, Port};
use crate::program::{Access, LINE_BYTES};

/// OP's tile.
pub(super) const OP_TILE: u32 = 0;

/// What a line write that cannot issue this cycle waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WriteWait {
    /// A Block Buffer port: every one is taken this cycle.
    BlockBufferPort,
    /// OP's NoC port: it is booked more than `noc.write_backlog_cycles` ahead.
    WriteBacklog,
}

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

    /// The measured window starts at `now`: every counter of the port, the Block Buffer and
    /// the mesh starts again from zero, so that they cover the window as the pipelines' do.
    pub(super) fn start_measuring(&mut self, now: u64) {
        self.port.advance(now);
        self.port.stats = Default::default();
        self.bb.stats = Default::default();
        self.mesh.reset_counts();
    }

    fn hop_cycles(&self, a: u32, b: u32) -> u64 {
        u64::from(self.noc.hop_cycles) * u64::from(self.mesh.hops(a, b))
    }

    /// Reads the line of `acc`, access `a` of transformation `txn`'s program, whose message
    /// the core on `owner_tile` built: the cycle its data is in the Block Buffer, or `None` if
    /// no Block Buffer port is free this cycle.
    pub(super) fn read(
        &mut self,
        now: u64,
        txn: u64,
        owner_tile: u32,
        a: u32,
        acc: &Access,
        measuring: bool,
    ) -> Option<u64> {
        let Access { line, region, .. } = *acc;
        match self.bb.lookup(now, txn, line) {
            Lookup::Ready(t) => Some(t),
            Lookup::Busy => None,
            Lookup::Miss => {
                let ready = self.miss(now, owner_tile, line, region);
                self.bb.fill(txn, line, a, ready);
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
            if crate::uniform(&mut self.rng) >= self.memory.llc_hit_ratio {
                t += self.mem_cycles;
            } else if crate::uniform(&mut self.rng) < self.memory.owner_forward_ratio {
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

    /// Writes output line `line` through a Block Buffer port, out of OP's port to its home
    /// LLC bank (lines are interleaved over the tiles, as for a miss), which acknowledges it
    /// once the line has crossed the port, reached it and been written into the bank.
    ///
    /// # Errors
    /// What the line waits for: a Block Buffer port (none free this cycle), or OP's port
    /// (booked more than `write_backlog_cycles` ahead).
    pub(super) fn write_line(&mut self, now: u64, line: u64) -> Result<(), WriteWait> {
        // The write path's queue to the port is bounded: a line waits in the Block Buffer
        // while the port is booked too far ahead.
        if self.port.backlog(now + 1) > u64::from(self.noc.write_backlog_cycles) {
            return Err(WriteWait::WriteBacklog);
        }
        if !self.bb.write(now) {
            return Err(WriteWait::BlockBufferPort);
        }
        let flits = self.noc.flits(LINE_BYTES as u32);
        let home = (line % u64::from(self.mesh.tiles())) as u32;
        let sent = self.port.send(now + 1, flits, false);
        self.mesh.route(OP_TILE, home, flits);
        let ack = self.noc.header_flits;
        let acked = sent + 2 * self.hop_cycles(OP_TILE, home) + u64::from(self.memory.llc_cycles);
        self.port.send(acked, ack, true);
        self.mesh.route(home, OP_TILE, ack);
        Ok(())
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

#[cfg(test)]
mod tests {
    use rand_core::SeedableRng;

    use super::*;
    use crate::program::line_access;

    /// An idle 4×4 system whose message lines are in the LLC with probability `llc_hit` and,
    /// when they are, dirty in their builder's L1 with probability `owner_forward`.
    fn system(llc_hit: f64, owner_forward: f64) -> MemorySystem {
        let mut cfg = OpConfig::paper_4x4(1, 1);
        cfg.memory.llc_hit_ratio = llc_hit;
        cfg.memory.owner_forward_ratio = owner_forward;
        MemorySystem::new(&cfg, ChaCha8Rng::seed_from_u64(1))
    }

    // Line 5's home is tile 5, (1, 1): 2 hops from OP's corner. The builder core is on tile
    // 15, (3, 3): 4 hops from the home, 6 back to OP. Every miss below starts at cycle 100:
    // 1 Block Buffer cycle, 1 cycle for the request's header flit to cross the port and 6 (two
    // hops) to the home bank, whose LLC takes 6: cycle 114. The reply's 5 flits (header and
    // 64 bytes) cross OP's two links in 3 cycles.

    #[test]
    fn a_miss_to_a_line_dirty_in_its_builder_l1_is_forwarded_to_that_core() {
        let mut m = system(1.0, 1.0);
        // Home 114, 4 hops (12) to the owner and its L1 (2): 128; 6 hops (18) back: 146.
        assert_eq!(
            m.read(100, 1, 15, 0, &line_access(5, Region::Message), true),
            Some(149)
        );
        assert_eq!((m.misses, m.miss_latency_sum), (1, 49));
        assert_eq!(m.mesh.flit_hops(), 2 + 4 + 5 * 6);
        assert_eq!((m.port.stats.flits_out, m.port.stats.flits_in), (1, 5));
    }

    #[test]
    fn an_llc_hit_and_the_serialized_buffer_come_from_the_home_bank() {
        // Home 114, 2 hops (6) back: 120.
        let mut m = system(1.0, 0.0);
        assert_eq!(
            m.read(100, 1, 15, 0, &line_access(5, Region::Message), true),
            Some(123)
        );
        // The serialized buffer is never dirty in a core's L1 nor missing from the LLC.
        let mut m = system(0.0, 1.0);
        assert_eq!(
            m.read(100, 1, 15, 0, &line_access(5, Region::Buffer), true),
            Some(123)
        );
    }

    #[test]
    fn an_llc_miss_adds_the_memory_latency() {
        // Home 114, 45 ns at 2 GHz (90): 204; 2 hops back: 210.
        let mut m = system(0.0, 1.0);
        assert_eq!(
            m.read(100, 1, 15, 0, &line_access(5, Region::Message), true),
            Some(213)
        );
    }

    #[test]
    fn a_transformation_rereads_its_line_from_the_block_buffer_and_another_misses() {
        let mut m = system(1.0, 1.0);
        assert_eq!(
            m.read(100, 1, 15, 0, &line_access(5, Region::Message), true),
            Some(149)
        );
        // Still in flight: the second access waits for the same fill.
        assert_eq!(
            m.read(101, 1, 15, 0, &line_access(5, Region::Message), true),
            Some(149)
        );
        // In: one hit cycle.
        assert_eq!(
            m.read(200, 1, 15, 0, &line_access(5, Region::Message), true),
            Some(201)
        );
        // Transformation 2 does not see transformation 1's line (§4.3).
        assert_eq!(
            m.read(200, 2, 15, 0, &line_access(5, Region::Message), true),
            Some(249)
        );
        // Both Block Buffer ports are taken at cycle 200.
        assert_eq!(
            m.read(200, 2, 15, 0, &line_access(6, Region::Message), true),
            None
        );
        assert_eq!(m.misses, 2);
    }

    #[test]
    fn line_writes_wait_while_the_port_is_booked_past_the_write_backlog() {
        let mut m = system(1.0, 1.0);
        assert_eq!(m.write_line(10, 5), Ok(()));
        // A line and its header leave through OP's port; an acknowledgement comes back.
        assert_eq!((m.port.stats.flits_out, m.port.stats.flits_in), (5, 1));
        // From cycle 20 the port's two links are booked for 1026 cycles, past the 1024-cycle
        // bound on the write path's queue.
        m.port.advance(20);
        m.port.send(20, 2 * 1026, false);
        assert_eq!(m.write_line(20, 5), Err(WriteWait::WriteBacklog));
        assert_eq!(m.bb.stats.writes, 1);
        assert_eq!(m.write_line(1100, 5), Ok(()));
        // The Block Buffer's two ports take two writes a cycle.
        assert_eq!(m.write_line(1100, 6), Ok(()));
        assert_eq!(m.write_line(1100, 7), Err(WriteWait::BlockBufferPort));
    }

    #[test]
    fn a_write_is_acknowledged_after_it_has_crossed_the_port() {
        // OP's port is booked full for cycles 101..=120, so a line written at cycle 100 crosses
        // in 121..=123 (five flits over two links) instead of 101..=103. Line 8's home is tile
        // 8, (0, 2), two hops away: the acknowledgement leaves the bank after its 6-cycle
        // access and is back 2 x 6 + 6 cycles after the line has crossed, at 142, not 18
        // cycles after the cycle the write was due to leave.
        let mut m = system(1.0, 1.0);
        m.port.send(101, 40, false);
        assert_eq!(m.write_line(100, 8), Ok(()));
        assert_eq!(m.port.carried_before(124), 45);
        assert_eq!(m.port.carried_before(142), 45);
        assert_eq!(m.port.carried_before(143), 46);
        // Five flits two hops out, the acknowledgement two hops back.
        assert_eq!(m.mesh.flit_hops(), 5 * 2 + 2);
    }

    #[test]
    fn a_line_is_written_to_its_home_bank() {
        // Line 16 lives on OP's own tile: the acknowledgement is back the bank's 6 cycles
        // after the line has crossed the port (11..=13), at 20, and crosses no link. Line 15
        // lives on the far corner, 6 hops away: back at 14 + 2 x 18 + 6 = 56.
        let mut m = system(1.0, 1.0);
        assert_eq!(m.write_line(10, 16), Ok(()));
        assert_eq!(m.mesh.flit_hops(), 0);
        assert_eq!(m.port.carried_before(20), 5);
        assert_eq!(m.port.carried_before(21), 6);
        let mut m = system(1.0, 1.0);
        assert_eq!(m.write_line(10, 15), Ok(()));
        assert_eq!(m.mesh.flit_hops(), 6 * 6);
        assert_eq!(m.port.carried_before(56), 5);
        assert_eq!(m.port.carried_before(57), 6);
    }
}
