//! The NIC's RPC pipeline (paper Fig. 3 and 4): TX FSM → RPC unit → transport on the way
//! out; transport → RPC unit → load balancer → RX FSM on the way in, clocked at the NIC
//! clock, each stage taking a line per cycle (fully pipelined) after its depth in cycles.
//! Then the loopback network between the two NICs, and the load balancer's choice of server
//! thread.

use serde::{Deserialize, Serialize};

use crate::error::{check_non_negative, check_positive, Result};

/// How the server NIC spreads requests over the server's threads (their RX rings).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Balance {
    /// Fair round-robin over all threads (Dagger's current scheme).
    RoundRobin,
    /// Each connection to one thread (the connection's queue pair's thread).
    ByConnection,
}

/// NIC pipeline parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NicConfig {
    /// RPC pipeline clock, MHz. Default 200 (assumed: the paper does not state the clock; 200
    /// MHz is what an Arria 10 design of this size closes at, half the CCI-P clock).
    pub clock_mhz: f64,
    /// TX FSM: request decode and dirty-bit check, cycles. Default 2.
    pub tx_fsm_cycles: f64,
    /// RPC unit: request metadata and (de)serialization of the 64-byte object, cycles.
    /// Default 4.
    pub rpc_unit_cycles: f64,
    /// Transport (UDP encapsulation or decapsulation), cycles. Default 4.
    pub transport_cycles: f64,
    /// Load balancer: picking the RX ring, cycles. Default 2.
    pub balancer_cycles: f64,
    /// RX FSM: slot bookkeeping and the write request, cycles. Default 2.
    pub rx_fsm_cycles: f64,
    /// Cycles between two lines entering a stage. Default 1.
    pub cycles_per_line: f64,
    /// The FPGA loopback between the two NICs (MAC to MAC), ns. Default 50.
    pub loopback_ns: f64,
    /// How the server NIC picks a server thread. Default round-robin.
    pub balance: Balance,
}

impl Default for NicConfig {
    fn default() -> Self {
        Self {
            clock_mhz: 200.0,
            tx_fsm_cycles: 2.0,
            rpc_unit_cycles: 4.0,
            transport_cycles: 4.0,
            balancer_cycles: 2.0,
            rx_fsm_cycles: 2.0,
            cycles_per_line: 1.0,
            loopback_ns: 50.0,
            balance: Balance::RoundRobin,
        }
    }
}

impl NicConfig {
    /// Checks every parameter.
    ///
    /// # Errors
    /// [`crate::SimError::Config`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        check_positive(
            "dagger.nic",
            &[
                (self.clock_mhz, "clock_mhz"),
                (self.cycles_per_line, "cycles_per_line"),
            ],
        )?;
        check_non_negative(
            "dagger.nic",
            &[
                (self.tx_fsm_cycles, "tx_fsm_cycles"),
                (self.rpc_unit_cycles, "rpc_unit_cycles"),
                (self.transport_cycles, "transport_cycles"),
                (self.balancer_cycles, "balancer_cycles"),
                (self.rx_fsm_cycles, "rx_fsm_cycles"),
                (self.loopback_ns, "loopback_ns"),
            ],
        )
    }

    fn ns(&self, cycles: f64) -> f64 {
        cycles * 1e3 / self.clock_mhz
    }

    /// Depth of the TX path (TX FSM, RPC unit, transport), ns.
    pub fn tx_depth_ns(&self) -> f64 {
        self.ns(self.tx_fsm_cycles + self.rpc_unit_cycles + self.transport_cycles)
    }

    /// Depth of the RX path (transport, RPC unit, balancer, RX FSM), ns.
    pub fn rx_depth_ns(&self) -> f64 {
        self.ns(self.transport_cycles
            + self.rpc_unit_cycles
            + self.balancer_cycles
            + self.rx_fsm_cycles)
    }
}

/// One direction of one NIC's pipeline: when its first stage takes the next line.
pub struct Path {
    depth_ns: f64,
    line_ns: f64,
    free_ns: f64,
    /// Lines that went through.
    pub lines: u64,
    /// Time lines waited for the stage, ns.
    pub wait_ns: f64,
}

impl Path {
    /// The TX path of a NIC.
    pub fn tx(cfg: &NicConfig) -> Self {
        Self::new(cfg.tx_depth_ns(), cfg.ns(cfg.cycles_per_line))
    }

    /// The RX path of a NIC.
    pub fn rx(cfg: &NicConfig) -> Self {
        Self::new(cfg.rx_depth_ns(), cfg.ns(cfg.cycles_per_line))
    }

    fn new(depth_ns: f64, line_ns: f64) -> Self {
        Self {
            depth_ns,
            line_ns,
            free_ns: 0.0,
            lines: 0,
            wait_ns: 0.0,
        }
    }

    /// A frame of `lines` lines entering at `at_ns`: when its last line leaves.
    pub fn pass(&mut self, at_ns: f64, lines: usize) -> f64 {
        let start = at_ns.max(self.free_ns);
        self.wait_ns += start - at_ns;
        self.free_ns = start + self.line_ns * lines as f64;
        self.lines += lines as u64;
        self.free_ns - self.line_ns + self.depth_ns
    }
}

/// The server NIC's load balancer.
pub struct Balancer {
    scheme: Balance,
    threads: usize,
    next: usize,
}

impl Balancer {
    /// A balancer over `threads` server threads.
    pub fn new(scheme: Balance, threads: usize) -> Self {
        Self {
            scheme,
            threads: threads.max(1),
            next: 0,
        }
    }

    /// The server thread for a request on `connection`.
    pub fn pick(&mut self, connection: usize) -> usize {
        match self.scheme {
            Balance::RoundRobin => {
                let t = self.next;
                self.next = (self.next + 1) % self.threads;
                t
            }
            Balance::ByConnection => connection % self.threads,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pipeline_takes_a_line_a_cycle() {
        let cfg = NicConfig::default();
        let mut p = Path::tx(&cfg);
        // 10 cycles of depth at 200 MHz.
        assert!((p.pass(0.0, 1) - 50.0).abs() < 1e-9);
        // The next frame enters one cycle later.
        assert!((p.pass(0.0, 1) - 55.0).abs() < 1e-9);
        assert!((p.wait_ns - 5.0).abs() < 1e-9);
    }

    #[test]
    fn round_robin_spreads_one_connection() {
        let mut rr = Balancer::new(Balance::RoundRobin, 3);
        let mut by = Balancer::new(Balance::ByConnection, 3);
        let rr: Vec<usize> = (0..6).map(|_| rr.pick(0)).collect();
        let by: Vec<usize> = (0..6).map(|_| by.pick(0)).collect();
        assert_eq!(rr, vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(by, vec![0; 6]);
    }
}
