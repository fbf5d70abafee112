//! A transport wrapper that misbehaves on purpose: it drops, duplicates, delays and (through
//! delays) reorders outgoing frames, and can corrupt bytes, with probabilities from
//! [`LossConfig`] and a seeded generator, so a failing run can be replayed. Wrap both ends to
//! impair both directions.

use std::io;

use super::{PeerId, Transport, TxQueue};

/// Fault probabilities (each in 0.0..=1.0) and the seed.
#[derive(Debug, Clone, Copy)]
pub struct LossConfig {
    /// Chance a frame is dropped.
    pub drop: f64,
    /// Chance a frame is sent twice.
    pub duplicate: f64,
    /// Chance a frame is held back for 1..=`max_delay_polls` polls (which reorders it).
    pub delay: f64,
    /// Longest hold, in polls of the NIC.
    pub max_delay_polls: u32,
    /// Chance one byte of the frame is flipped.
    pub corrupt: f64,
    /// Seed of the generator.
    pub seed: u64,
}

impl Default for LossConfig {
    fn default() -> Self {
        Self {
            drop: 0.0,
            duplicate: 0.0,
            delay: 0.0,
            max_delay_polls: 16,
            corrupt: 0.0,
            seed: 1,
        }
    }
}

/// Counts of what the wrapper did.
#[derive(Debug, Default, Clone, Copy)]
pub struct LossStats {
    /// Frames dropped.
    pub dropped: u64,
    /// Extra copies sent.
    pub duplicated: u64,
    /// Frames held back.
    pub delayed: u64,
    /// Frames with a flipped byte.
    pub corrupted: u64,
}

/// See the module docs.
pub struct Lossy<T> {
    inner: T,
    cfg: LossConfig,
    rng: u64,
    tick: u64,
    held: Vec<(u64, PeerId, Vec<u8>)>,
    staging: TxQueue,
    stats: LossStats,
}

impl<T: Transport> Lossy<T> {
    /// Wraps `inner`.
    pub fn new(inner: T, cfg: LossConfig) -> Self {
        Self {
            inner,
            cfg,
            rng: cfg.seed | 1,
            tick: 0,
            held: Vec::new(),
            staging: TxQueue::new(4 * T::TX_BURST.max(64)),
            stats: LossStats::default(),
        }
    }

    /// What the wrapper did so far.
    pub fn stats(&self) -> LossStats {
        self.stats
    }

    /// The wrapped transport.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    fn next(&mut self) -> u64 {
        // xorshift64*: small, fast, reproducible.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

impl<T: Transport> Transport for Lossy<T> {
    const NAME: &'static str = T::NAME;
    const MTU: usize = T::MTU;
    const TX_BURST: usize = T::TX_BURST;
    const RX_BURST: usize = T::RX_BURST;
    const FRAMES_PER_UNIT: usize = T::FRAMES_PER_UNIT;
    // Faults break any guarantee of the wrapped transport: resend, and check every frame.
    const RELIABLE: bool = false;
    const CHECKSUM: bool = true;

    fn send_burst(&mut self, q: &mut TxQueue) -> io::Result<usize> {
        self.tick += 1;
        // Release held frames whose time has come (in arbitrary order: that is the reordering).
        let mut i = 0;
        while i < self.held.len() {
            if self.held[i].0 <= self.tick && self.staging.room() > 0 {
                let (_, peer, buf) = self.held.swap_remove(i);
                self.staging.push(peer, &buf);
            } else {
                i += 1;
            }
        }
        let mut taken = 0;
        while self.staging.room() >= 2 {
            let Some((peer, mut buf)) = q.pop_front() else {
                break;
            };
            taken += 1;
            if self.chance(self.cfg.drop) {
                self.stats.dropped += 1;
                q.recycle(buf);
                continue;
            }
            if !buf.is_empty() && self.chance(self.cfg.corrupt) {
                let at = (self.next() % buf.len() as u64) as usize;
                buf[at] ^= 1 << (self.next() % 8);
                self.stats.corrupted += 1;
            }
            if self.chance(self.cfg.duplicate) {
                self.stats.duplicated += 1;
                self.staging.push(peer, &buf);
            }
            if self.chance(self.cfg.delay) {
                self.stats.delayed += 1;
                let wait = 1 + self.next() % u64::from(self.cfg.max_delay_polls.max(1));
                self.held.push((self.tick + wait, peer, buf));
                continue;
            }
            self.staging.push(peer, &buf);
            q.recycle(buf);
        }
        while !self.staging.is_empty() {
            if self.inner.send_burst(&mut self.staging)? == 0 {
                break;
            }
        }
        Ok(taken)
    }

    fn recv_burst<F: FnMut(PeerId, &[u8])>(&mut self, max: usize, f: F) -> io::Result<usize> {
        self.inner.recv_burst(max, f)
    }

    fn connect(&mut self, addr: &str) -> io::Result<PeerId> {
        self.inner.connect(addr)
    }

    fn poll_events(&mut self, closed: &mut Vec<PeerId>) {
        self.inner.poll_events(closed)
    }

    fn local_addr(&self) -> String {
        self.inner.local_addr()
    }
}
