//! The Dagger model (Lazarev et al., IEEE CAL 2020): an FPGA NIC reached over a memory
//! interconnect that runs the whole RPC stack, in the paper's loopback setup — a client and a
//! server thread layout, two NICs on one FPGA sharing its CCI-P port, 64-byte echo RPCs.
//!
//! - [`frames`]: the request stream, optimus-rpc's frames sent by the client threads.
//! - [`host`]: the software side: per-RPC CPU work, coherence misses, threading models, SMT.
//! - [`interface`]: MMIO, doorbell + DMA with batching, and UPI polling (local cache or LLC,
//!   switched by the measured rate).
//! - [`ccip`]: the shared CCI-P port.
//! - [`pipeline`]: the NIC's RPC pipeline, the loopback network and the load balancer.
//! - [`reproduce`]: every Dagger target of the paper against the model, and the figures.
//!
//! Time is in ns, event-driven in the manner of the Cereal model: each resource (a thread's
//! core time, a NIC path, a TX ring's poller, the port) keeps when it is next free, and each
//! batch of requests goes through them in order, the server answering in batches of its own.
//! No randomness: the same configuration and experiment give the same report.

pub mod ccip;
pub mod frames;
pub mod host;
pub mod interface;
pub mod pipeline;
pub mod reproduce;

use serde::{Deserialize, Serialize};

use crate::error::{check_non_negative, config_err, Result};
use crate::stats::Stats;
use ccip::{Ccip, CcipConfig, Side};
use host::{HostConfig, Threading};
use interface::{Interface, PcieConfig, TxPort, UpiConfig};
use pipeline::{Balancer, NicConfig, Path};

/// Every parameter of the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaggerConfig {
    /// Host CPU.
    pub host: HostConfig,
    /// PCIe (MMIO and doorbell modes).
    pub pcie: PcieConfig,
    /// UPI (coherent polling).
    pub upi: UpiConfig,
    /// The NICs' RPC pipelines.
    pub nic: NicConfig,
    /// The CCI-P port both NICs share.
    pub ccip: CcipConfig,
    /// A batch not full this long after its first request goes anyway, ns (Dagger's soft
    /// configuration). Default 2000.
    pub batch_timeout_ns: f64,
    /// Asynchronous model: requests received between two bookkeeping reads of free RX
    /// entries. Default 8.
    pub rx_bookkeeping_every: usize,
}

impl Default for DaggerConfig {
    fn default() -> Self {
        Self {
            host: HostConfig::default(),
            pcie: PcieConfig::default(),
            upi: UpiConfig::default(),
            nic: NicConfig::default(),
            ccip: CcipConfig::default(),
            batch_timeout_ns: 2000.0,
            rx_bookkeeping_every: 8,
        }
    }
}

impl DaggerConfig {
    /// Checks every parameter.
    ///
    /// # Errors
    /// [`crate::SimError::Config`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        self.host.validate()?;
        self.pcie.validate()?;
        self.upi.validate()?;
        self.nic.validate()?;
        self.ccip.validate()?;
        check_non_negative("dagger", &[(self.batch_timeout_ns, "batch_timeout_ns")])?;
        if self.rx_bookkeeping_every == 0 {
            return Err(config_err(
                "dagger",
                "rx_bookkeeping_every",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

/// One experiment: interface, batching, load and thread layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    /// CPU–NIC interface of both NICs.
    pub interface: Interface,
    /// Requests per batch (B), on both sides. 1 for MMIO and the synchronous model.
    pub batch: usize,
    /// Offered load, Mrps; `None` for saturation (throughput).
    pub load_mrps: Option<f64>,
    /// Client threads, one connection each.
    pub threads: usize,
    /// Server threads; 0: as many as client threads.
    pub server_threads: usize,
    /// Cores the client threads share; the server's threads share as many of their own.
    pub cores: usize,
    /// Threading model.
    pub threading: Threading,
    /// Requests each client thread sends.
    pub requests_per_thread: usize,
    /// Payload bytes of each request and reply frame.
    pub payload_bytes: usize,
    /// Switch (ToR) delay added to each round trip, ns (Table 1's assumption; 0 in the
    /// loopback of Fig. 5).
    pub tor_delay_ns: f64,
}

impl Experiment {
    /// Fig. 5's setting: one client thread on one core, 64-byte echo RPCs, asynchronous.
    pub fn fig5(interface: Interface, batch: usize, load_mrps: Option<f64>) -> Self {
        Self {
            interface,
            batch,
            load_mrps,
            threads: 1,
            server_threads: 0,
            cores: 1,
            threading: Threading::Async,
            requests_per_thread: 20_000,
            payload_bytes: frames::ECHO_64B_PAYLOAD,
            tor_delay_ns: 0.0,
        }
    }

    /// Server threads.
    pub fn server_threads(&self) -> usize {
        if self.server_threads == 0 {
            self.threads
        } else {
            self.server_threads
        }
    }

    fn validate(&self) -> Result<()> {
        let bad = |field, why: String| Err(config_err("dagger.experiment", field, why));
        if self.batch == 0 {
            return bad("batch", "must be at least 1".into());
        }
        if self.batch > 1 && self.interface == Interface::Mmio {
            return bad(
                "batch",
                format!("{}: MMIO sends each request alone", self.batch),
            );
        }
        if self.batch > 1 && self.threading == Threading::Sync {
            return bad(
                "batch",
                format!("{}: a blocked caller cannot batch", self.batch),
            );
        }
        if self.threads == 0 || self.cores == 0 || self.requests_per_thread == 0 {
            return bad(
                "threads",
                "threads, cores and requests_per_thread must be at least 1".into(),
            );
        }
        if let Some(l) = self.load_mrps {
            if !(l > 0.0 && l.is_finite()) {
                return bad("load_mrps", format!("{l} is not a positive rate"));
            }
        }
        if self.payload_bytes > 1 << 20 {
            return bad(
                "payload_bytes",
                format!("{} is over optimus-rpc's 1 MiB", self.payload_bytes),
            );
        }
        if !(self.tor_delay_ns >= 0.0 && self.tor_delay_ns.is_finite()) {
            return bad("tor_delay_ns", format!("{} is negative", self.tor_delay_ns));
        }
        Ok(())
    }
}

/// What a run gives.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DaggerReport {
    /// Completed requests per µs over the middle 80 % of completions, Mrps.
    pub throughput_mrps: f64,
    /// Median round trip (arrival to completion) after the first 10 % of requests, µs.
    pub p50_us: f64,
    /// 99th percentile round trip, µs.
    pub p99_us: f64,
    /// Requests simulated.
    pub requests: usize,
    /// Counters: `ccip.*`, `nic.{client,server}.*`, `host.*`.
    pub stats: Stats,
}

/// Runs `exp` on the model.
///
/// # Errors
/// [`crate::SimError::Config`] for an invalid configuration or experiment.
pub fn run(cfg: &DaggerConfig, exp: &Experiment) -> Result<DaggerReport> {
    cfg.validate()?;
    exp.validate()?;
    let reqs = frames::stream(
        exp.threads,
        exp.requests_per_thread,
        exp.payload_bytes,
        exp.load_mrps,
    );
    let mut sim = Sim::new(cfg, exp, reqs.len());
    sim.run(&reqs);
    Ok(sim.report(&reqs))
}

/// A request on its way: its index and when its frame was written by a thread.
type Item = (usize, f64);

struct Sim<'a> {
    cfg: &'a DaggerConfig,
    exp: &'a Experiment,
    port: Ccip,
    tx: [TxPort; 2],
    tx_path: [Path; 2],
    rx_path: [Path; 2],
    balancer: Balancer,
    /// Per thread: when its core time is next free; `[client, server]`.
    free: [Vec<f64>; 2],
    /// Per thread: core time per RPC; `[client, server]`.
    cost: [Vec<f64>; 2],
    /// Per server thread: responses written and not yet sent.
    pending: Vec<Vec<Item>>,
    lines: Vec<usize>,
    ring_of: Vec<usize>,
    done: Vec<f64>,
    received: [u64; 2],
}

impl<'a> Sim<'a> {
    fn new(cfg: &'a DaggerConfig, exp: &'a Experiment, n: usize) -> Self {
        let lines = frames::lines_for(exp.payload_bytes);
        let servers = exp.server_threads();
        let cost = |busy: f64, threads: usize| -> Vec<f64> {
            (0..threads)
                .map(|t| {
                    let k = host::threads_on_core_of(t, threads, exp.cores);
                    host::per_rpc_ns(busy, cfg.host.stall_ns(lines), k)
                        + host::interface_per_rpc_ns(exp.interface, &cfg.pcie, lines)
                })
                .collect()
        };
        Self {
            cfg,
            exp,
            port: Ccip::new(&cfg.ccip),
            tx: [
                TxPort::new(Side::Client, exp.threads),
                TxPort::new(Side::Server, servers),
            ],
            tx_path: [Path::tx(&cfg.nic), Path::tx(&cfg.nic)],
            rx_path: [Path::rx(&cfg.nic), Path::rx(&cfg.nic)],
            balancer: Balancer::new(cfg.nic.balance, servers),
            free: [vec![0.0; exp.threads], vec![0.0; servers]],
            cost: [
                cost(cfg.host.client_busy_ns(exp.threading, lines), exp.threads),
                cost(cfg.host.server_busy_ns(exp.threading, lines), servers),
            ],
            pending: vec![Vec::new(); servers],
            lines: Vec::with_capacity(n),
            ring_of: Vec::with_capacity(n),
            done: vec![f64::NAN; n],
            received: [0; 2],
        }
    }

    fn run(&mut self, reqs: &[frames::Request]) {
        for r in reqs {
            self.lines.push(r.lines);
            self.ring_of.push(r.thread);
        }
        let mut queues: Vec<std::collections::VecDeque<usize>> =
            vec![Default::default(); self.exp.threads];
        for (i, r) in reqs.iter().enumerate() {
            queues[r.thread].push_back(i);
        }
        let mut last_done = vec![0.0f64; self.exp.threads];
        while queues.iter().any(|q| !q.is_empty()) {
            for t in 0..self.exp.threads {
                let mut batch: Vec<Item> = Vec::new();
                let mut deadline = f64::INFINITY;
                while batch.len() < self.exp.batch {
                    let Some(&i) = queues[t].front() else { break };
                    let mut ready = reqs[i].arrival_ns;
                    if self.exp.threading == Threading::Sync {
                        ready = ready.max(last_done[t]);
                    }
                    let start = ready.max(self.free[0][t]);
                    let written = start
                        + self.cfg.host.send_ns
                        + host::interface_per_rpc_ns(
                            self.exp.interface,
                            &self.cfg.pcie,
                            reqs[i].lines,
                        );
                    if written > deadline {
                        break;
                    }
                    queues[t].pop_front();
                    self.free[0][t] = start + self.cost[0][t];
                    if batch.is_empty() {
                        deadline = written + self.cfg.batch_timeout_ns;
                    }
                    batch.push((i, written));
                }
                if batch.is_empty() {
                    continue;
                }
                let ready = if batch.len() == self.exp.batch {
                    batch[batch.len() - 1].1
                } else {
                    deadline
                };
                let ready = self.ring_doorbell(0, t, ready);
                self.send(Side::Client, t, &batch, ready);
                if self.exp.threading == Threading::Sync {
                    last_done[t] = self.done[batch[0].0];
                }
            }
        }
        for s in 0..self.pending.len() {
            if let Some(&(_, first)) = self.pending[s].first() {
                self.flush(s, first + self.cfg.batch_timeout_ns);
            }
        }
    }

    /// Doorbell mode: the core fences and rings the doorbell after the batch's last write.
    fn ring_doorbell(&mut self, side: usize, thread: usize, ready: f64) -> f64 {
        let extra = host::interface_per_batch_ns(self.exp.interface, &self.cfg.pcie);
        if extra > 0.0 {
            self.free[side][thread] += extra;
        }
        ready + extra
    }

    /// A batch written by thread `ring` of `side` at `ready`: through the interface, the
    /// NIC, the loopback and the other NIC into the other side's memory.
    fn send(&mut self, side: Side, ring: usize, batch: &[Item], ready: f64) {
        let cfg = self.cfg;
        let me = side as usize;
        let other = 1 - me;
        let total_lines: usize = batch.iter().map(|&(i, _)| self.lines[i]).sum();
        let fetched = self.tx[me].fetch(
            self.exp.interface,
            &cfg.pcie,
            &cfg.upi,
            &cfg.ccip,
            &mut self.port,
            ring,
            ready,
            total_lines,
            batch.len(),
        );
        let write_ns = match self.exp.interface {
            Interface::Upi => cfg.upi.write_ns,
            Interface::Mmio | Interface::Doorbell => cfg.pcie.dma_write_ns,
        };
        let mut last_out = 0.0f64;
        for &(i, written) in batch {
            let at_nic = match self.exp.interface {
                Interface::Mmio => written + cfg.pcie.mmio_write_ns,
                _ => fetched,
            };
            let out = self.tx_path[me].pass(at_nic, self.lines[i]);
            last_out = last_out.max(out);
            let arrive = out + cfg.nic.loopback_ns + self.exp.tor_delay_ns / 2.0;
            let rx = self.rx_path[other].pass(arrive, self.lines[i]);
            let other_side = if other == 0 {
                Side::Client
            } else {
                Side::Server
            };
            let start = self.port.transfer(other_side, rx, self.lines[i]);
            let visible = start + write_ns;
            self.received[other] += 1;
            if self.exp.threading == Threading::Async
                && self.received[other].is_multiple_of(cfg.rx_bookkeeping_every as u64)
            {
                // Fetch the next free RX entries.
                self.port.transfer(other_side, rx, 1);
            }
            let seen = (visible / cfg.host.poll_loop_ns).ceil() * cfg.host.poll_loop_ns;
            match side {
                Side::Client => {
                    let s = self.balancer.pick(self.ring_of[i]);
                    self.serve(s, i, seen);
                }
                Side::Server => {
                    let lines = self.lines[i];
                    self.done[i] = seen
                        + cfg.host.recv_ns
                        + lines as f64 * cfg.host.coherence_miss_ns
                        + match self.exp.threading {
                            Threading::Async => cfg.host.cq_copy_ns_per_line * lines as f64,
                            Threading::Sync => 0.0,
                        };
                }
            }
        }
        if self.exp.threading == Threading::Async {
            // The TX completion entry for the batch.
            self.port.transfer(side, last_out, 1);
        }
    }

    /// Server thread `s` sees request `i` at `seen`, answers it, and batches the answer.
    fn serve(&mut self, s: usize, i: usize, seen: f64) {
        let cfg = self.cfg;
        let lines = self.lines[i];
        let start = seen.max(self.free[1][s]);
        self.free[1][s] = start + self.cost[1][s];
        let written = start
            + cfg.host.server_busy_ns(self.exp.threading, lines)
            + cfg.host.stall_ns(lines)
            + host::interface_per_rpc_ns(self.exp.interface, &cfg.pcie, lines);
        if let Some(&(_, first)) = self.pending[s].first() {
            if written > first + cfg.batch_timeout_ns {
                self.flush(s, first + cfg.batch_timeout_ns);
            }
        }
        self.pending[s].push((i, written));
        if self.pending[s].len() == self.exp.batch {
            self.flush(s, written);
        }
    }

    fn flush(&mut self, s: usize, ready: f64) {
        let batch = std::mem::take(&mut self.pending[s]);
        let ready = self.ring_doorbell(1, s, ready);
        self.send(Side::Server, s, &batch, ready);
    }

    fn report(&self, reqs: &[frames::Request]) -> DaggerReport {
        let mut done: Vec<f64> = self
            .done
            .iter()
            .copied()
            .filter(|d| d.is_finite())
            .collect();
        done.sort_by(f64::total_cmp);
        let n = done.len();
        let (a, b) = (n / 10, n * 9 / 10);
        let throughput_mrps = if b > a && done[b] > done[a] {
            (b - a) as f64 * 1e3 / (done[b] - done[a])
        } else {
            f64::NAN
        };
        let skip = reqs.len() / 10;
        let mut lat: Vec<f64> = reqs
            .iter()
            .enumerate()
            .skip(skip)
            .map(|(i, r)| self.done[i] - r.arrival_ns)
            .filter(|l| l.is_finite())
            .collect();
        lat.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            if lat.is_empty() {
                f64::NAN
            } else {
                lat[((lat.len() - 1) as f64 * p).round() as usize] / 1e3
            }
        };
        let mut stats = Stats::default();
        self.port.dump("ccip", &mut stats);
        for (k, nic) in ["client", "server"].iter().enumerate() {
            let prefix = format!("nic.{nic}");
            let t = &self.tx[k];
            stats.set(&prefix, "llc_poll_batches", t.llc_batches as f64);
            stats.set(&prefix, "cache_poll_batches", t.cache_batches as f64);
            stats.set(&prefix, "idle_poll_lines", t.idle_poll_lines as f64);
            stats.set(&prefix, "invalidations", t.invalidations as f64);
            stats.set(&prefix, "mmio_writes", t.mmio_writes as f64);
            stats.set(&prefix, "tx.lines", self.tx_path[k].lines as f64);
            stats.set(&prefix, "tx.wait_ns", self.tx_path[k].wait_ns);
            stats.set(&prefix, "rx.lines", self.rx_path[k].lines as f64);
            stats.set(&prefix, "rx.wait_ns", self.rx_path[k].wait_ns);
        }
        stats.set("host", "client.ns_per_rpc", self.cost[0][0]);
        stats.set("host", "server.ns_per_rpc", self.cost[1][0]);
        DaggerReport {
            throughput_mrps,
            p50_us: pct(0.5),
            p99_us: pct(0.99),
            requests: n,
            stats,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::interface::Polling;
    use super::*;

    fn sat(interface: Interface, batch: usize) -> DaggerReport {
        run(
            &DaggerConfig::default(),
            &Experiment::fig5(interface, batch, None),
        )
        .unwrap()
    }

    fn at_load(cfg: &DaggerConfig, interface: Interface, batch: usize, load: f64) -> DaggerReport {
        run(
            cfg,
            &Experiment {
                requests_per_thread: 4000,
                ..Experiment::fig5(interface, batch, Some(load))
            },
        )
        .unwrap()
    }

    #[test]
    fn batching_raises_throughput() {
        // UPI B = 2 already reaches the cores' own rate, so its list stops there.
        for (interface, batches) in [
            (Interface::Doorbell, &[1, 2, 4][..]),
            (Interface::Upi, &[1, 2][..]),
        ] {
            let mut last = 0.0;
            for &b in batches {
                let t = sat(interface, b).throughput_mrps;
                assert!(t > last * 1.05, "{interface:?} B={b}: {t} after {last}");
                last = t;
            }
        }
        // Doorbell batching amortises the doorbell, up to the cores' own rate.
        let b32 = sat(Interface::Doorbell, 32).throughput_mrps;
        let upi4 = sat(Interface::Upi, 4).throughput_mrps;
        assert!(b32 < upi4, "{b32} {upi4}");
    }

    #[test]
    fn mmio_is_bound_by_its_stores() {
        let cfg = DaggerConfig::default();
        let t = sat(Interface::Mmio, 1).throughput_mrps;
        let slower = DaggerConfig {
            pcie: PcieConfig {
                mmio_store_ns: 2.0 * cfg.pcie.mmio_store_ns,
                ..cfg.pcie.clone()
            },
            ..cfg.clone()
        };
        let t2 = run(&slower, &Experiment::fig5(Interface::Mmio, 1, None))
            .unwrap()
            .throughput_mrps;
        assert!(t2 < 0.75 * t, "{t} {t2}");
    }

    #[test]
    fn upi_polling_beats_doorbells_and_mmio_on_latency() {
        let cfg = DaggerConfig::default();
        let upi = at_load(&cfg, Interface::Upi, 1, 2.0).p50_us;
        let db = at_load(&cfg, Interface::Doorbell, 1, 2.0).p50_us;
        let mmio = at_load(&cfg, Interface::Mmio, 1, 2.0).p50_us;
        assert!(upi < mmio && mmio < db, "{upi} {mmio} {db}");
    }

    #[test]
    fn the_nic_switches_to_llc_polling_above_the_rate() {
        let cfg = DaggerConfig::default();
        let low = at_load(&cfg, Interface::Upi, 1, 0.5);
        let high = at_load(&cfg, Interface::Upi, 1, 4.0);
        let llc = |r: &DaggerReport| r.stats.get("nic.client.llc_poll_batches").unwrap();
        let cache = |r: &DaggerReport| r.stats.get("nic.client.cache_poll_batches").unwrap();
        assert!(cache(&low) > 0.9 * (cache(&low) + llc(&low)));
        assert!(llc(&high) > 0.9 * (cache(&high) + llc(&high)));
        // Local-cache polling refetches one slot at a time: LLC polling's depth is what
        // carries a high rate.
        let only_cache = DaggerConfig {
            upi: UpiConfig {
                polling: Polling::LocalCache,
                ..cfg.upi.clone()
            },
            ..cfg.clone()
        };
        let t_cache = run(&only_cache, &Experiment::fig5(Interface::Upi, 1, None))
            .unwrap()
            .throughput_mrps;
        assert!(
            t_cache < 0.5 * sat(Interface::Upi, 1).throughput_mrps,
            "{t_cache}"
        );
        // Idle LLC polls cost port bandwidth at low rate; the cache's invalidations do not.
        let only_llc = DaggerConfig {
            upi: UpiConfig {
                polling: Polling::Llc,
                ..cfg.upi.clone()
            },
            ..cfg.clone()
        };
        let idle = at_load(&only_llc, Interface::Upi, 1, 0.5);
        assert!(idle.stats.get("nic.client.idle_poll_lines").unwrap() > 1000.0);
        assert_eq!(low.stats.get("nic.client.idle_poll_lines").unwrap(), 0.0);
    }

    #[test]
    fn batching_costs_latency_at_low_load() {
        let cfg = DaggerConfig::default();
        let b1 = at_load(&cfg, Interface::Upi, 1, 4.0).p50_us;
        let b4 = at_load(&cfg, Interface::Upi, 4, 4.0).p50_us;
        assert!(b4 > b1 + 0.3, "{b1} {b4}");
    }

    #[test]
    fn sync_calls_are_faster_one_at_a_time() {
        let cfg = DaggerConfig::default();
        let exp = |threading| Experiment {
            threading,
            requests_per_thread: 2000,
            ..Experiment::fig5(Interface::Upi, 1, Some(0.2))
        };
        let sync = run(&cfg, &exp(Threading::Sync)).unwrap();
        let asyn = run(&cfg, &exp(Threading::Async)).unwrap();
        assert!(sync.p50_us < asyn.p50_us, "{} {}", sync.p50_us, asyn.p50_us);
        // A blocked caller has one call in flight: its rate is one over the round trip.
        let closed = run(
            &cfg,
            &Experiment {
                load_mrps: None,
                ..exp(Threading::Sync)
            },
        )
        .unwrap();
        assert!((closed.throughput_mrps * sync.p50_us - 1.0).abs() < 0.2);
        assert!(run(
            &cfg,
            &Experiment {
                batch: 4,
                ..exp(Threading::Sync)
            }
        )
        .is_err());
    }

    #[test]
    fn two_threads_share_a_core_and_round_robin_spreads_them() {
        let cfg = DaggerConfig::default();
        let layout = |threads, cores| {
            run(
                &cfg,
                &Experiment {
                    threads,
                    cores,
                    requests_per_thread: 5000,
                    ..Experiment::fig5(Interface::Upi, 4, None)
                },
            )
            .unwrap()
            .throughput_mrps
        };
        let (one, smt, two) = (layout(1, 1), layout(2, 1), layout(2, 2));
        assert!(smt > one && smt < two, "{one} {smt} {two}");
        assert!(two > 1.8 * one);
        // One connection, two server threads with a slow handler: by connection, one server
        // thread takes every request; round-robin shares them.
        let slow = DaggerConfig {
            host: host::HostConfig {
                handler_ns: 100.0,
                ..cfg.host.clone()
            },
            ..cfg.clone()
        };
        let by = DaggerConfig {
            nic: pipeline::NicConfig {
                balance: pipeline::Balance::ByConnection,
                ..cfg.nic.clone()
            },
            ..slow.clone()
        };
        let exp = Experiment {
            threads: 1,
            server_threads: 2,
            cores: 2,
            requests_per_thread: 10_000,
            ..Experiment::fig5(Interface::Upi, 4, None)
        };
        let rr = run(&slow, &exp).unwrap().throughput_mrps;
        let bc = run(&by, &exp).unwrap().throughput_mrps;
        assert!(rr > 1.5 * bc, "{rr} {bc}");
    }

    #[test]
    fn same_experiment_same_report() {
        let a = sat(Interface::Upi, 4);
        let b = sat(Interface::Upi, 4);
        assert_eq!(a, b);
    }

    #[test]
    fn bad_settings_are_refused() {
        let mut cfg = DaggerConfig::default();
        cfg.upi.poll_depth = 0;
        assert!(run(&cfg, &Experiment::fig5(Interface::Upi, 1, None)).is_err());
        let cfg = DaggerConfig::default();
        assert!(run(&cfg, &Experiment::fig5(Interface::Mmio, 2, None)).is_err());
        assert!(run(&cfg, &Experiment::fig5(Interface::Upi, 0, None)).is_err());
        assert!(run(&cfg, &Experiment::fig5(Interface::Upi, 1, Some(-1.0))).is_err());
    }
}
