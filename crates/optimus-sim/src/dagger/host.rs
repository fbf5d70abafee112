//! The host side: Dagger's software (RPC API, TX/RX controllers, completion queue) on CPU
//! threads, the synchronous and asynchronous threading models, and threads sharing a core
//! (SMT).
//!
//! An RPC costs a thread `busy` ns of instructions and `stall` ns of coherence misses (the TX
//! slot the NIC read, the RX slot the NIC wrote). A core running k threads issues their
//! instructions one at a time but overlaps one thread's misses with another's work, so each
//! thread takes `max(k × busy, busy + stall)` per RPC.

use serde::{Deserialize, Serialize};

use super::interface::{Interface, PcieConfig};
use crate::error::{check_non_negative, check_positive, Result};

/// Synchronous (blocking) or asynchronous RPCs (paper §3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Threading {
    /// The caller keeps sending; responses go through TX completion rings, RX bookkeeping
    /// and the completion queue (an AVX copy per line).
    Async,
    /// The caller blocks until its response: one call in flight per thread, no completion
    /// rings, no bookkeeping, no completion-queue copy.
    Sync,
}

/// Host CPU parameters (Broadwell Xeon E5-2600 at 2.3 GHz).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostConfig {
    /// Sending: building the RPC in the TX slot and setting its dirty bit, ns. Default 18.
    pub send_ns: f64,
    /// Receiving: taking a response or request from the RX slot and freeing it, ns.
    /// Default 18.
    pub recv_ns: f64,
    /// The echo handler on the server, ns. Default 4.
    pub handler_ns: f64,
    /// AVX copy of one line into the completion queue (asynchronous model), ns. Default 8.
    pub cq_copy_ns_per_line: f64,
    /// One coherence miss on a line the NIC touched last, ns. Default 16 (an LLC hit after
    /// the line's owner changed: about 37 cycles at 2.3 GHz).
    pub coherence_miss_ns: f64,
    /// One turn of the RX polling loop, ns: a line the NIC wrote is seen at the next turn.
    /// Default 20.
    pub poll_loop_ns: f64,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            send_ns: 18.0,
            recv_ns: 18.0,
            handler_ns: 4.0,
            cq_copy_ns_per_line: 8.0,
            coherence_miss_ns: 16.0,
            poll_loop_ns: 20.0,
        }
    }
}

impl HostConfig {
    /// Checks every parameter.
    ///
    /// # Errors
    /// [`crate::SimError::Config`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        check_positive("dagger.host", &[(self.poll_loop_ns, "poll_loop_ns")])?;
        check_non_negative(
            "dagger.host",
            &[
                (self.send_ns, "send_ns"),
                (self.recv_ns, "recv_ns"),
                (self.handler_ns, "handler_ns"),
                (self.cq_copy_ns_per_line, "cq_copy_ns_per_line"),
                (self.coherence_miss_ns, "coherence_miss_ns"),
            ],
        )
    }

    /// Instructions of one RPC on a client thread (send and receive), ns.
    pub fn client_busy_ns(&self, threading: Threading, lines: usize) -> f64 {
        self.send_ns + self.recv_ns + self.cq_copy(threading, lines)
    }

    /// Instructions of one RPC on a server thread (receive, handle, send), ns.
    pub fn server_busy_ns(&self, threading: Threading, lines: usize) -> f64 {
        self.recv_ns + self.handler_ns + self.send_ns + self.cq_copy(threading, lines)
    }

    /// Coherence misses of one RPC on either side: its TX lines and its RX lines, ns.
    pub fn stall_ns(&self, lines: usize) -> f64 {
        2.0 * lines as f64 * self.coherence_miss_ns
    }

    fn cq_copy(&self, threading: Threading, lines: usize) -> f64 {
        match threading {
            Threading::Async => self.cq_copy_ns_per_line * lines as f64,
            Threading::Sync => 0.0,
        }
    }
}

/// A thread's core time per RPC with `k` busy threads on its core.
pub fn per_rpc_ns(busy_ns: f64, stall_ns: f64, k: usize) -> f64 {
    (k as f64 * busy_ns).max(busy_ns + stall_ns)
}

/// Core time the interface adds to each RPC on the sending thread (MMIO stores), ns.
pub fn interface_per_rpc_ns(interface: Interface, pcie: &PcieConfig, lines: usize) -> f64 {
    match interface {
        // Two 256-bit stores per 64-byte line.
        Interface::Mmio => 2.0 * lines as f64 * pcie.mmio_store_ns,
        Interface::Doorbell | Interface::Upi => 0.0,
    }
}

/// Core time the interface adds to each batch (fence and doorbell store), ns.
pub fn interface_per_batch_ns(interface: Interface, pcie: &PcieConfig) -> f64 {
    match interface {
        Interface::Doorbell => pcie.fence_ns + pcie.mmio_store_ns,
        Interface::Mmio | Interface::Upi => 0.0,
    }
}

/// Threads per core when `threads` threads are spread over `cores` cores: thread t runs on
/// core t mod cores.
pub fn threads_on_core_of(thread: usize, threads: usize, cores: usize) -> usize {
    let core = thread % cores;
    (0..threads).filter(|t| t % cores == core).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_thread_hides_misses_until_the_core_is_full() {
        assert_eq!(per_rpc_ns(48.0, 32.0, 1), 80.0);
        assert_eq!(per_rpc_ns(48.0, 32.0, 2), 96.0);
        // Two threads on a core do more than one, less than two.
        let one = 1.0 / per_rpc_ns(48.0, 32.0, 1);
        let two = 2.0 / per_rpc_ns(48.0, 32.0, 2);
        assert!(two > one && two < 2.0 * one);
        assert_eq!(threads_on_core_of(0, 4, 2), 2);
        assert_eq!(threads_on_core_of(1, 3, 2), 1);
    }

    #[test]
    fn sync_skips_the_completion_queue() {
        let h = HostConfig::default();
        assert!(h.client_busy_ns(Threading::Sync, 1) < h.client_busy_ns(Threading::Async, 1));
    }
}
