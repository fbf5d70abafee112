//! The CPU–NIC interfaces of paper §3.4: how a batch of request lines written by a CPU thread
//! reaches the NIC's TX FSM.
//!
//! - **MMIO**: the core writes each line into the NIC's I/O region with two 256-bit AVX
//!   stores, write combining off; each store holds the core (`mmio_store_ns`) and reaches the
//!   NIC `mmio_write_ns` later. No batching.
//! - **Doorbell**: the core writes the lines into its TX buffer in memory, fences, and rings
//!   one MMIO doorbell per batch of B; the NIC then DMA-reads the batch over PCIe.
//! - **UPI**: the core only writes the lines (each with its dirty bit) into the coherent TX
//!   buffer. The NIC polls. Below `llc_poll_threshold_mrps` it polls its own coherent cache
//!   and the CPU's write sends it an invalidation, after which it refetches the line; above
//!   the threshold it polls the CPU's LLC directly, keeping `poll_depth` reads of the next
//!   slots in flight, which saves the invalidations but spends port slots on idle polls.

use serde::{Deserialize, Serialize};

use super::ccip::{Ccip, CcipConfig, Side};
use crate::error::{check_non_negative, check_positive, config_err, Result};

/// Which CPU–NIC interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Interface {
    /// PCIe MMIO writes of the request itself.
    Mmio,
    /// PCIe doorbell + DMA read, batched.
    Doorbell,
    /// CCI-P over UPI: the NIC polls coherent memory.
    Upi,
}

impl Interface {
    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Interface::Mmio => "MMIO",
            Interface::Doorbell => "doorbell",
            Interface::Upi => "UPI",
        }
    }
}

/// How the NIC polls the TX buffers over UPI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Polling {
    /// Local-cache polling below the threshold rate, LLC polling above it (Dagger).
    Auto,
    /// Always poll the NIC's own coherent cache (invalidation-driven).
    LocalCache,
    /// Always poll the CPU's LLC.
    Llc,
}

/// PCIe parameters (MMIO and doorbell modes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PcieConfig {
    /// Core time of one uncached 256-bit MMIO store, ns. Default 79: MMIO's 4.2 Mrps (Fig. 5)
    /// is 238 ns per RPC, 80 of them the RPC's own CPU work, the rest two stores per line.
    pub mmio_store_ns: f64,
    /// Store fence before a doorbell (the TX buffer writes must be visible before the NIC
    /// reads them), ns. Default 60 (a drain of the store buffer on Broadwell).
    pub fence_ns: f64,
    /// From the core's MMIO store to the NIC seeing it, ns. Default 700.
    pub mmio_write_ns: f64,
    /// A NIC DMA read of host memory over PCIe, request to data, ns. Default 344.
    pub dma_read_ns: f64,
    /// A NIC DMA write over PCIe until the host core can read the line, ns. Default 790.
    pub dma_write_ns: f64,
}

impl Default for PcieConfig {
    fn default() -> Self {
        Self {
            mmio_store_ns: 79.0,
            fence_ns: 60.0,
            mmio_write_ns: 700.0,
            dma_read_ns: 344.0,
            dma_write_ns: 790.0,
        }
    }
}

/// UPI (CCI-P coherent) parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UpiConfig {
    /// A NIC read of a line in the CPU's LLC, request to data, ns. Default 355 (the QPI/UPI
    /// read latency measured on the Xeon+FPGA platform by Choi et al., DAC 2016).
    pub read_ns: f64,
    /// A NIC write until the host core can read the line from its LLC, ns. Default 250.
    pub write_ns: f64,
    /// From the CPU's store to the invalidation reaching the NIC's cache, ns. Default 100.
    pub snoop_ns: f64,
    /// Reads of the next TX slots the NIC keeps in flight per ring when polling the LLC.
    /// Default 3: with `read_ns` it sets UPI B = 1's 8.1 Mrps (Fig. 5).
    pub poll_depth: usize,
    /// Request rate above which the NIC polls the LLC instead of its cache, Mrps (Dagger's
    /// programmable threshold). Default 2: where local-cache polling's one refetch at a time
    /// per ring stops keeping up.
    pub llc_poll_threshold_mrps: f64,
    /// Batches over which the NIC measures the rate. Default 16.
    pub rate_window: usize,
    /// Which polling the NIC uses. Default `auto`.
    pub polling: Polling,
}

impl Default for UpiConfig {
    fn default() -> Self {
        Self {
            read_ns: 355.0,
            write_ns: 250.0,
            snoop_ns: 100.0,
            poll_depth: 3,
            llc_poll_threshold_mrps: 2.0,
            rate_window: 16,
            polling: Polling::Auto,
        }
    }
}

impl PcieConfig {
    /// Checks every parameter.
    ///
    /// # Errors
    /// [`crate::SimError::Config`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        check_non_negative(
            "dagger.pcie",
            &[
                (self.mmio_store_ns, "mmio_store_ns"),
                (self.fence_ns, "fence_ns"),
                (self.mmio_write_ns, "mmio_write_ns"),
                (self.dma_read_ns, "dma_read_ns"),
                (self.dma_write_ns, "dma_write_ns"),
            ],
        )
    }
}

impl UpiConfig {
    /// Checks every parameter.
    ///
    /// # Errors
    /// [`crate::SimError::Config`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        check_positive(
            "dagger.upi",
            &[
                (self.read_ns, "read_ns"),
                (self.llc_poll_threshold_mrps, "llc_poll_threshold_mrps"),
            ],
        )?;
        check_non_negative(
            "dagger.upi",
            &[(self.write_ns, "write_ns"), (self.snoop_ns, "snoop_ns")],
        )?;
        for (v, f) in [
            (self.poll_depth, "poll_depth"),
            (self.rate_window, "rate_window"),
        ] {
            if v == 0 {
                return Err(config_err("dagger.upi", f, "must be at least 1"));
            }
        }
        Ok(())
    }
}

/// One NIC's TX side of the interface: per ring, when its next poll may issue, and the
/// NIC's measured request rate.
pub struct TxPort {
    side: Side,
    /// Per ring: the next poll slot (LLC polling, in gaps of `read_ns / poll_depth`).
    next_slot: Vec<u64>,
    /// Per ring: when the next refetch may issue (local-cache polling), ns.
    next_fetch_ns: Vec<f64>,
    /// Batch times and sizes over the rate window.
    recent: std::collections::VecDeque<(f64, usize)>,
    /// Batches fetched with LLC polling, with local-cache polling.
    pub llc_batches: u64,
    /// Batches fetched with local-cache polling.
    pub cache_batches: u64,
    /// Lines read by polls that found nothing new (LLC polling).
    pub idle_poll_lines: u64,
    /// Invalidations the NIC's cache received (local-cache polling).
    pub invalidations: u64,
    /// MMIO writes received (MMIO stores and doorbells).
    pub mmio_writes: u64,
}

impl TxPort {
    /// A port with `rings` TX rings.
    pub fn new(side: Side, rings: usize) -> Self {
        Self {
            side,
            next_slot: vec![0; rings],
            next_fetch_ns: vec![0.0; rings],
            recent: std::collections::VecDeque::new(),
            llc_batches: 0,
            cache_batches: 0,
            idle_poll_lines: 0,
            invalidations: 0,
            mmio_writes: 0,
        }
    }

    /// The NIC's request rate over its last batches, Mrps (0 until it has seen two).
    fn rate_mrps(&self) -> f64 {
        match (self.recent.front(), self.recent.back()) {
            (Some(a), Some(b)) if b.0 > a.0 => {
                let n: usize = self.recent.iter().skip(1).map(|x| x.1).sum();
                n as f64 * 1e3 / (b.0 - a.0)
            }
            (Some(_), Some(_)) if self.recent.len() > 1 => f64::INFINITY,
            _ => 0.0,
        }
    }

    /// Whether a batch ready at `ready_ns` is fetched with LLC polling.
    fn uses_llc(&mut self, upi: &UpiConfig, ready_ns: f64, size: usize) -> bool {
        self.recent.push_back((ready_ns, size));
        if self.recent.len() > upi.rate_window {
            self.recent.pop_front();
        }
        match upi.polling {
            Polling::Llc => true,
            Polling::LocalCache => false,
            Polling::Auto => self.rate_mrps() >= upi.llc_poll_threshold_mrps,
        }
    }

    /// When a batch of `lines` lines on `ring`, the last written by the core at `ready_ns`,
    /// reaches the NIC's TX FSM through `interface`; the port carries the reads.
    /// `doorbell_ns` is when the doorbell store leaves the core (doorbell mode).
    #[allow(clippy::too_many_arguments)]
    pub fn fetch(
        &mut self,
        interface: Interface,
        pcie: &PcieConfig,
        upi: &UpiConfig,
        ccip_cfg: &CcipConfig,
        port: &mut Ccip,
        ring: usize,
        ready_ns: f64,
        lines: usize,
        requests: usize,
    ) -> f64 {
        match interface {
            // Lines written by MMIO are already at the NIC: the caller times each.
            Interface::Mmio => {
                self.mmio_writes += 2 * lines as u64;
                ready_ns + pcie.mmio_write_ns
            }
            Interface::Doorbell => {
                self.mmio_writes += 1;
                let at_nic = ready_ns + pcie.mmio_write_ns;
                let mut data = at_nic;
                for chunk in chunks(lines, ccip_cfg.max_lines_per_request) {
                    let start = port.transfer(self.side, at_nic, chunk);
                    data = start + pcie.dma_read_ns;
                }
                data
            }
            Interface::Upi => {
                let gap = upi.read_ns / upi.poll_depth as f64;
                if self.uses_llc(upi, ready_ns, requests) {
                    self.llc_batches += 1;
                    // Polls of this ring issue every `gap`; the first that can see the whole
                    // batch brings it.
                    // Poll slots are counted in whole gaps, so that rounding never skips one.
                    let prev = self.next_slot[ring];
                    let slot = ((ready_ns / gap - 1e-9).ceil().max(0.0) as u64).max(prev);
                    self.idle_poll_lines += slot - prev;
                    let issue = slot as f64 * gap;
                    let mut data = issue;
                    let mut n = 0;
                    for chunk in chunks(lines, ccip_cfg.max_lines_per_request) {
                        let start = port.transfer(self.side, issue, chunk);
                        data = start + upi.read_ns;
                        n += 1;
                    }
                    self.next_slot[ring] = slot + n;
                    data
                } else {
                    self.cache_batches += 1;
                    // The last store's invalidation reaches the NIC's cache; its next local
                    // poll misses, and it refetches the lines, one read at a time per ring.
                    self.invalidations += lines as u64;
                    let _ = port.transfer(self.side, ready_ns, 0);
                    let seen = ready_ns + upi.snoop_ns;
                    let mut data = seen.max(self.next_fetch_ns[ring]);
                    for chunk in chunks(lines, ccip_cfg.max_lines_per_request) {
                        let start = port.transfer(self.side, data, chunk);
                        data = start + upi.read_ns;
                    }
                    self.next_fetch_ns[ring] = data;
                    data
                }
            }
        }
    }
}

/// `lines` split into requests of at most `max` lines.
fn chunks(lines: usize, max: usize) -> impl Iterator<Item = usize> {
    let n = lines.div_ceil(max).max(1);
    (0..n).map(move |i| (lines - i * max).min(max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_lines() {
        assert_eq!(chunks(11, 4).collect::<Vec<_>>(), vec![4, 4, 3]);
        assert_eq!(chunks(4, 4).collect::<Vec<_>>(), vec![4]);
    }

    #[test]
    fn the_rate_switches_polling_to_the_llc() {
        let upi = UpiConfig::default();
        let mut p = TxPort::new(Side::Client, 1);
        // One request a microsecond: 1 Mrps, below the 2 Mrps threshold.
        let slow: Vec<bool> = (0..20)
            .map(|i| p.uses_llc(&upi, i as f64 * 1000.0, 1))
            .collect();
        assert!(slow.iter().all(|x| !x));
        // Then one every 100 ns: 10 Mrps.
        let fast: Vec<bool> = (0..20)
            .map(|i| p.uses_llc(&upi, 20e3 + i as f64 * 100.0, 1))
            .collect();
        assert!(fast[19]);
    }
}
