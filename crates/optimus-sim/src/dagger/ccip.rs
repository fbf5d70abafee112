//! CCI-P, the FPGA shell's port to the host, shared by the two Dagger NICs of the loopback
//! setup with fair round-robin access (paper §4).
//!
//! A transaction holds the port for a header cycle plus a cycle per cache line at the CCI-P
//! clock; a read request carries at most `max_lines_per_request` lines (CCI-P's multi-line
//! requests are 1, 2 or 4 lines). The port keeps a map of its busy cycles and grants each
//! transaction the first free run of cycles at or after it is presented: the model presents
//! work out of time order (a request's reply is timed before the next request), so a single
//! "next free" time would serialise whole round trips. Under load the grants interleave the
//! two NICs' transactions cycle by cycle, as the fair round-robin arbiter does.

use serde::{Deserialize, Serialize};

use crate::error::{check_positive, config_err, Result};
use crate::stats::Stats;

/// Most cycles one transaction may hold the port (the busy map is walked a cycle at a time).
pub const MAX_HOLD_CYCLES: f64 = 1e6;

/// CCI-P port parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CcipConfig {
    /// Port clock, MHz. Default 400: the Broadwell+Arria 10 shell's `pClk` (Intel
    /// Acceleration Stack CCI-P reference; the paper does not state it).
    pub clock_mhz: f64,
    /// Cycles of a transaction besides its data. Default 1.
    pub header_cycles: f64,
    /// Cycles per 64-byte line. Default 1 (512-bit data path).
    pub cycles_per_line: f64,
    /// Most lines one read request carries. Default 4 (CCI-P `cl_len` 1, 2 or 4): why UPI
    /// batching stops at B = 4 in Fig. 5.
    pub max_lines_per_request: usize,
}

impl Default for CcipConfig {
    fn default() -> Self {
        Self {
            clock_mhz: 400.0,
            header_cycles: 1.0,
            cycles_per_line: 1.0,
            max_lines_per_request: 4,
        }
    }
}

impl CcipConfig {
    /// Checks every parameter.
    ///
    /// # Errors
    /// [`crate::SimError::Config`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        check_positive(
            "dagger.ccip",
            &[
                (self.clock_mhz, "clock_mhz"),
                (self.header_cycles, "header_cycles"),
                (self.cycles_per_line, "cycles_per_line"),
            ],
        )?;
        let hold = self.header_cycles + self.cycles_per_line * self.max_lines_per_request as f64;
        if hold > MAX_HOLD_CYCLES {
            return Err(config_err(
                "dagger.ccip",
                "cycles_per_line",
                format!("a transaction of {hold} cycles is over the model's {MAX_HOLD_CYCLES}"),
            ));
        }
        if !matches!(self.max_lines_per_request, 1 | 2 | 4) {
            return Err(config_err(
                "dagger.ccip",
                "max_lines_per_request",
                format!("{} is not 1, 2 or 4", self.max_lines_per_request),
            ));
        }
        Ok(())
    }

    /// Read requests that carry `lines` lines.
    pub fn requests_for(&self, lines: usize) -> usize {
        lines.div_ceil(self.max_lines_per_request).max(1)
    }
}

/// Which NIC of the pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The client's NIC.
    Client = 0,
    /// The server's NIC.
    Server = 1,
}

/// The shared port: when it is next free, and what each NIC moved over it.
pub struct Ccip {
    cfg: CcipConfig,
    /// One bit per port cycle, held or not, 64 cycles a word, keyed by word: sparse, so a
    /// transaction far in the future (a configured latency of seconds) costs one word, and
    /// words wholly below `full_below` are dropped.
    busy: std::collections::BTreeMap<u64, u64>,
    /// Cycles below this are all held (where the search starts).
    full_below: u64,
    busy_ns: f64,
    /// Transactions and lines per NIC: `[client, server]`.
    transactions: [u64; 2],
    lines: [u64; 2],
}

impl Ccip {
    /// An idle port.
    pub fn new(cfg: &CcipConfig) -> Self {
        Self {
            cfg: cfg.clone(),
            busy: std::collections::BTreeMap::new(),
            full_below: 0,
            busy_ns: 0.0,
            transactions: [0; 2],
            lines: [0; 2],
        }
    }

    /// A transaction of `lines` lines (0: a message without data, such as an invalidation)
    /// that `side` presents at `at_ns`: returns when the port starts it.
    pub fn transfer(&mut self, side: Side, at_ns: f64, lines: usize) -> f64 {
        let cycle_ns = 1e3 / self.cfg.clock_mhz;
        let hold = (self.cfg.header_cycles + self.cfg.cycles_per_line * lines as f64)
            .ceil()
            .max(1.0) as u64;
        let mut c = ((at_ns.max(0.0) / cycle_ns).ceil() as u64).max(self.full_below);
        // The first run of `hold` free cycles from `c`.
        while let Some(k) = (c..c + hold).find(|&k| self.is_held(k)) {
            c = k + 1;
        }
        for k in c..c + hold {
            self.hold(k);
        }
        while self
            .busy
            .get(&(self.full_below / 64))
            .is_some_and(|w| w & (1 << (self.full_below % 64)) != 0)
        {
            self.full_below += 1;
        }
        // Words wholly below `full_below` are all held: `is_held` answers them without a word.
        while let Some((&w, _)) = self.busy.first_key_value() {
            if (w + 1) * 64 > self.full_below {
                break;
            }
            self.busy.pop_first();
        }
        let start = c as f64 * cycle_ns;
        self.busy_ns += hold as f64 * cycle_ns;
        let i = side as usize;
        self.transactions[i] += 1;
        self.lines[i] += lines as u64;
        start
    }

    /// Writes `client.transactions`, `client.lines`, the same for `server`, and `busy_ns`
    /// under `prefix`.
    pub fn dump(&self, prefix: &str, out: &mut Stats) {
        for (i, nic) in ["client", "server"].iter().enumerate() {
            out.set(
                prefix,
                &format!("{nic}.transactions"),
                self.transactions[i] as f64,
            );
            out.set(prefix, &format!("{nic}.lines"), self.lines[i] as f64);
        }
        out.set(prefix, "busy_ns", self.busy_ns);
    }

    fn is_held(&self, cycle: u64) -> bool {
        cycle < self.full_below
            || self
                .busy
                .get(&(cycle / 64))
                .is_some_and(|w| w & (1 << (cycle % 64)) != 0)
    }

    fn hold(&mut self, cycle: u64) {
        *self.busy.entry(cycle / 64).or_insert(0) |= 1 << (cycle % 64);
    }

    /// Time the port was held, ns.
    pub fn busy_ns(&self) -> f64 {
        self.busy_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_nics_share_one_port() {
        let mut p = Ccip::new(&CcipConfig::default());
        assert_eq!(p.transfer(Side::Client, 0.0, 4), 0.0);
        // Held for 5 cycles at 400 MHz: the server's request waits 12.5 ns.
        assert!((p.transfer(Side::Server, 0.0, 1) - 12.5).abs() < 1e-9);
        // A later transaction presented first leaves the earlier cycles free.
        assert!((p.transfer(Side::Client, 100.0, 1) - 100.0).abs() < 1e-9);
        assert!((p.transfer(Side::Client, 20.0, 1) - 20.0).abs() < 1e-9);
        // A transaction an hour away costs one word of the map.
        assert!(p.transfer(Side::Server, 3.6e12, 1) >= 3.6e12);
        assert!(p.busy.len() <= 4);
        let mut s = Stats::default();
        p.dump("ccip", &mut s);
        assert_eq!(s.get("ccip.client.lines"), Some(6.0));
        assert_eq!(CcipConfig::default().requests_for(11), 3);
        let bad = CcipConfig {
            max_lines_per_request: 3,
            ..CcipConfig::default()
        };
        assert!(bad.validate().is_err());
        let slow = CcipConfig {
            cycles_per_line: 1e9,
            ..CcipConfig::default()
        };
        assert!(slow.validate().is_err());
    }
}
