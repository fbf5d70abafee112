//! `optimus rpc-bench --dt`: what DT on the NIC core gives the application. The same record
//! service runs with DT on the app core (the worker decodes, runs its handler, encodes) and
//! on the soft NIC's core (the worker only runs its handler on records), with and without
//! kernels, on a gateway and a HyperProtoBench-like workload (`testdata/rpc/`). Each row
//! reports the app core's CPU time per RPC (`CLOCK_THREAD_CPUTIME_ID` of the worker thread),
//! throughput and round trips.
//!
//! Topology (2 cores), two choices: by default (`client_on_nic_core`) the client thread drives
//! the soft NIC between its own polls on the NIC core, standing in for the network peer whose
//! frames a server's NIC core handles anyway, and the worker — the app core — busy-polls a
//! core of its own; otherwise the NIC thread has `nic_core` and the closed-loop client shares
//! the app's core, both yielding when they find no work. The app's time counts only the
//! worker's turns that served requests (ring read, handler, and in the app-core rows decode,
//! kernels and encode), not its empty polls, less the cost of the benchmark's own clock read
//! closing each turn; `app_all_ns` counts everything the worker thread used while measuring
//! (with a busy-polling app core, all of its time).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use hdrhistogram::Histogram;
use optimus_core::binary;
use optimus_core::json::{self, JsonOptions};
use optimus_core::{FieldRef, Message, Value};
use optimus_rpc::kernels::{seal_chain, Kernel, Side};
use optimus_rpc::offload::{HandBack, HandBackEstimates};
use optimus_rpc::offload::{Placement, RecordService, PLACEMENT_PROTO};
use optimus_rpc::transport::NoTransport;
use optimus_rpc::{
    ClientOptions, Failure, Handler, IdlePolicy, Nic, NicConfig, RegionLayout, LOCAL_CONN,
};
use optimus_schema::SchemaSet;

use super::Spread;

const GATEWAY_PROTO: &str = include_str!("../../../../testdata/rpc/gateway.proto");
const PACKET_JSON: &str = include_str!("../../../../testdata/rpc/gateway_packet.json");
const HPB_PROTO: &str = include_str!("../../../../testdata/rpc/hpb.proto");
const HPB_JSON: &str = include_str!("../../../../testdata/rpc/hpb_record.json");
/// The gateway's IPsec-like key (a benchmark constant, not a secret).
const KEY: [u8; 32] = [0x51; 32];

/// Which service and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DtWorkload {
    /// RPCAcc's cloud gateway packet: the flow's NAT entry found on the host by flow id and
    /// tenant, the headers and the 1 KiB payload forwarded from NIC memory (AES-GCM on the
    /// payload with kernels).
    Gateway,
    /// A HyperProtoBench-like store call (10 KB): header fields read on the host, spans, tags
    /// and a 2 KiB blob echoed from NIC memory (LZ4 on the blob with kernels).
    Hpb,
}

impl DtWorkload {
    /// Its name in the rows.
    pub fn name(self) -> &'static str {
        match self {
            Self::Gateway => "gateway",
            Self::Hpb => "hpb",
        }
    }
}

/// Where the data transformation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DtSite {
    /// The worker thread decodes and encodes.
    AppCore,
    /// The soft NIC's thread decodes and encodes; the worker gets records.
    NicCore,
}

impl DtSite {
    /// Its name in the rows.
    pub fn name(self) -> &'static str {
        match self {
            Self::AppCore => "app-core",
            Self::NicCore => "nic-core",
        }
    }
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct DtConfig {
    pub workload: DtWorkload,
    /// Rows with kernels on the workload's field (as well as, not instead of, without).
    pub kernels: bool,
    /// The client's publish batch B (1..=32).
    pub batch: u32,
    /// Calls in flight.
    pub depth: u32,
    /// Measured seconds per row, after a 0.2 s warm-up.
    pub seconds: f64,
    /// Rows measured this many times, interleaved.
    pub rounds: u32,
    /// CPU of the NIC; the worker (the app core) has another.
    pub nic_core: usize,
    /// The application's own work per call, in nanoseconds (rounds of [`app_work`] timed on
    /// the calling thread before the run).
    pub app_work_ns: u64,
    /// The client thread drives the NIC inline on the NIC core, and the worker busy-polls a
    /// core of its own; otherwise the NIC has its thread and the client shares the worker's
    /// core, both yielding when idle.
    pub client_on_nic_core: bool,
    /// With DT on the NIC core, when the NIC core hands calls' DT back to the app core
    /// ([`optimus_rpc::offload::HandBack`]; `None`: never).
    pub hand_back: Option<HandBack>,
}

/// One row over all rounds.
pub struct DtSummary {
    pub workload: &'static str,
    /// The application's own work per call, ns.
    pub app_work_ns: u64,
    pub site: &'static str,
    pub kernels: bool,
    pub mrps: Spread,
    /// App-core CPU ns per RPC in the worker's turns that served requests.
    pub app_ns: Spread,
    /// All of the worker thread's CPU ns per RPC while measuring (empty polls included).
    pub app_all_ns: Spread,
    /// Requests per worker turn that served any (the app's batch).
    pub per_turn: Spread,
    /// The share of the calls whose DT the NIC core handed back to the app core
    /// ([`HandBack`]; counted where the client thread drives the NIC, else 0).
    pub handed_back: Spread,
    /// What the automatic hand-back rule worked from at the end of the last round.
    pub hand_back_estimates: Option<HandBackEstimates>,
    pub hist: Histogram<u64>,
}

impl DtSummary {
    /// The round-trip time at quantile `q`, in microseconds.
    pub fn pct_us(&self, q: f64) -> f64 {
        self.hist.value_at_quantile(q) as f64 / 1000.0
    }
}

/// The workload's service and request body (sealed for its kernels when `kernels`); its
/// handler also runs `work_iters` rounds of [`app_work`], the application's own work.
pub fn workload(w: DtWorkload, kernels: bool, work_iters: u64) -> Result<(RecordService, Vec<u8>)> {
    match w {
        DtWorkload::Gateway => gateway(kernels, work_iters),
        DtWorkload::Hpb => hpb(kernels, work_iters),
    }
}

/// `iters` rounds of a multiply–xorshift chain: a stand-in for what a handler computes beside
/// reading its request (each round depends on the last, about a nanosecond).
#[inline(never)]
pub fn app_work(seed: u64, iters: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..iters {
        x = std::hint::black_box(x.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (x >> 29));
    }
    x
}

/// Rounds of [`app_work`] per nanosecond on this thread (the best of three timings).
fn app_work_per_ns() -> f64 {
    const ROUNDS: u64 = 2_000_000;
    (0..3)
        .map(|_| {
            let t0 = Instant::now();
            std::hint::black_box(app_work(7, ROUNDS));
            ROUNDS as f64 / (t0.elapsed().as_nanos().max(1) as f64)
        })
        .fold(0.0, f64::max)
}

fn schema(source: &'static str) -> Result<Arc<SchemaSet>> {
    Ok(Arc::new(SchemaSet::from_sources(&[
        ("optimus/placement.proto", PLACEMENT_PROTO),
        ("svc.proto", source),
    ])?))
}

fn request(s: &SchemaSet, ty: &str, text: &str) -> Result<Message> {
    let id = s
        .message_by_name(ty)
        .ok_or_else(|| anyhow!("no message {ty}"))?;
    Ok(json::decode(s, id, text, &JsonOptions::default())?)
}

/// Seals bytes field `field` of `m` with `chain` and encodes `m`.
fn sealed_body(s: &SchemaSet, mut m: Message, field: &str, chain: &[Kernel]) -> Result<Vec<u8>> {
    if let Ok(Value::Bytes(b)) = m.get_by_name(s, field) {
        let sealed = seal_chain(chain, &b).map_err(|e| anyhow!("{e}"))?;
        m.set_by_name(s, field, Value::Bytes(sealed))?;
    }
    Ok(binary::encode(s, &m))
}

/// A gateway's flow table entry.
#[derive(Clone, Copy)]
struct NatEntry {
    flow: u64,
    tenant: u32,
}

/// The NAT entry of `(flow, tenant)` in a fixed table of 4,096 (every flow maps to one; the
/// lookup is the work, not the contents).
fn nat_entry(flow: u64, tenant: u32) -> NatEntry {
    static TABLE: std::sync::OnceLock<Vec<NatEntry>> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        (0..4096u64)
            .map(|i| NatEntry {
                flow: i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                tenant: 42,
            })
            .collect()
    });
    let h = (flow ^ (u64::from(tenant) << 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52;
    table[h as usize]
}

fn gateway(kernels: bool, work_iters: u64) -> Result<(RecordService, Vec<u8>)> {
    let s = schema(GATEWAY_PROTO)?;
    let placement = Placement::from_proto_options(&s, GATEWAY_PROTO)?;
    let mut svc = RecordService::new(s.clone(), "gw.Gateway")?
        .on("Forward", move |req, reply| {
            // The host's part (RPCAcc C3): find the flow's NAT entry and security
            // association by flow id and tenant; the headers and payload pass through.
            let (Some(FieldRef::U64(flow)), Some(FieldRef::U32(tenant))) = (req.get(0), req.get(1))
            else {
                return Err(Failure::bad_request("no flow or tenant"));
            };
            std::hint::black_box(app_work(flow, work_iters));
            let entry = nat_entry(flow, tenant);
            if entry.tenant != tenant {
                return Err(Failure::bad_request("unknown flow"));
            }
            reply.set(0, FieldRef::U64(entry.flow))?;
            reply.set(1, FieldRef::U32(tenant))?;
            Ok(())
        })?
        .forward("Forward", "eth", "eth")?
        .forward("Forward", "ip", "ip")?
        .forward("Forward", "ports", "ports")?
        .forward("Forward", "payload", "payload")?
        .with_placement(placement);
    let m = request(&s, "gw.Packet", PACKET_JSON)?;
    let chain = [Kernel::AesGcm { key: KEY }];
    let body = if kernels {
        svc = svc
            .with_kernels("Forward", Side::Request, "payload", chain.to_vec())?
            .with_kernels("Forward", Side::Reply, "payload", chain.to_vec())?;
        sealed_body(&s, m, "payload", &chain)?
    } else {
        binary::encode(&s, &m)
    };
    Ok((svc, body))
}

fn hpb(kernels: bool, work_iters: u64) -> Result<(RecordService, Vec<u8>)> {
    let s = schema(HPB_PROTO)?;
    let placement = Placement::from_proto_options(&s, HPB_PROTO)?;
    let mut svc = RecordService::new(s.clone(), "hpb.Store")?
        .on("Put", move |req, reply| {
            // Record: id 0, kind 1, timestamp 2, user 3, score 4, sampled 5, root 6.
            // Ack: id 0, timestamp 1, status 2, user 3.
            for (from, to) in [(0, 0), (2, 1), (3, 3)] {
                if let Some(v) = req.get(from) {
                    reply.set(to, v)?;
                }
            }
            let ok = matches!(req.get(1), Some(FieldRef::I32(k)) if k >= 0)
                && matches!(req.get(6), Some(FieldRef::Message(root)) if root.has(2));
            std::hint::black_box(app_work(u64::from(ok), work_iters));
            reply.set(2, FieldRef::I32(if ok { 1 } else { 2 }))?;
            Ok(())
        })?
        .forward("Put", "spans", "spans")?
        .forward("Put", "tags", "tags")?
        .forward("Put", "blob", "blob")?
        .with_placement(placement);
    let m = request(&s, "hpb.Record", HPB_JSON)?;
    let chain = [Kernel::Lz4];
    let body = if kernels {
        svc = svc
            .with_kernels("Put", Side::Request, "blob", chain.to_vec())?
            .with_kernels("Put", Side::Reply, "blob", chain.to_vec())?;
        sealed_body(&s, m, "blob", &chain)?
    } else {
        binary::encode(&s, &m)
    };
    Ok((svc, body))
}

/// One measured row of one round.
struct DtRow {
    calls: u64,
    seconds: f64,
    app_busy_ns: u64,
    app_all_ns: u64,
    /// Requests per worker turn that served any.
    per_turn: f64,
    /// Calls whose DT was handed back to the app core while measuring.
    handed_back: u64,
    /// What the automatic hand-back rule worked from at the end.
    estimates: Option<HandBackEstimates>,
    hist: Histogram<u64>,
}

/// What the client thread counted while measuring.
struct ClientTally {
    calls: u64,
    /// Calls handed back to the app core by the NIC this thread drove.
    handed_back: u64,
    hist: Histogram<u64>,
    errors: u64,
    first_error: Option<String>,
    /// The automatic hand-back rule's at the end.
    estimates: Option<HandBackEstimates>,
}

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 10_000_000_000, 3).expect("histogram bounds")
}

/// Waits a little when a loop found no work: yield, so the other thread on the core runs.
const YIELD_ONLY: IdlePolicy = IdlePolicy {
    spins: 0,
    yields: u32::MAX,
    sleep: Duration::ZERO,
};
/// Latency is sampled on one call in `SAMPLE_EVERY`.
const SAMPLE_EVERY: u64 = 8;
const WARMUP: Duration = Duration::from_millis(200);
/// Longest a measuring window waits for its first completed call.
const MEASURE_LIMIT: Duration = Duration::from_secs(30);

/// Runs one row: a NIC, one worker serving `svc` with DT at `site`, one client.
fn measure(svc: &RecordService, body: &[u8], site: DtSite, a: &DtConfig) -> Result<DtRow> {
    let cfg = NicConfig {
        layout: RegionLayout {
            n_qps: 2,
            ring_lines: 8192,
        },
        max_payload: 64 * 1024,
        ..NicConfig::default()
    };
    let (mut nic, h) = Nic::new(NoTransport, cfg)?;
    let mut handler: Box<dyn Handler> = match site {
        DtSite::AppCore => Box::new(svc.app_core()),
        DtSite::NicCore => {
            let (nic_dt, app_dt) = svc.offload();
            nic.set_offload(nic_dt);
            Box::new(app_dt)
        }
    };
    let other = other_core(a.nic_core);
    // Either the NIC has its own thread and the client shares the app's core, or the client
    // thread drives the NIC between its own polls on the NIC core (see the module docs).
    let (nic_thread, mut inline_nic) = if a.client_on_nic_core {
        (None, Some(nic))
    } else {
        (Some(nic.spawn(Some(a.nic_core), IdlePolicy::BUSY)), None)
    };
    let app_idle = if a.client_on_nic_core {
        IdlePolicy::BUSY
    } else {
        YIELD_ONLY
    };
    let client_core = if a.client_on_nic_core {
        Some(a.nic_core)
    } else {
        other
    };
    let measuring = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let served = Arc::new(AtomicU64::new(0));
    // Calls the client saw complete while measuring.
    let completed = Arc::new(AtomicU64::new(0));
    let turns = Arc::new(AtomicU64::new(0));

    let mut w = h.worker()?;
    let worker = {
        let (measuring, done, served) = (measuring.clone(), done.clone(), served.clone());
        let turns = turns.clone();
        std::thread::spawn(move || -> Result<(u64, u64)> {
            if let Some(c) = other {
                let _ = optimus_rpc::pin_current_thread(c);
            }
            let clock_ns = clock_read_ns();
            let (mut busy, mut all_start, mut all) = (0u64, None, 0u64);
            let mut empty = 0u32;
            while !done.load(Ordering::Relaxed) {
                let on = measuring.load(Ordering::Relaxed);
                let t0 = optimus_rpc::thread_cpu_ns();
                if on && all_start.is_none() {
                    all_start = Some(t0);
                }
                let n = w.serve_once(&mut *handler)?;
                if n > 0 {
                    if on {
                        // The second clock read is the benchmark's, not the app's.
                        let t = optimus_rpc::thread_cpu_ns() - t0;
                        busy += t.saturating_sub(clock_ns);
                        served.fetch_add(n as u64, Ordering::Relaxed);
                        turns.fetch_add(1, Ordering::Relaxed);
                    }
                    empty = 0;
                } else {
                    empty = empty.saturating_add(1);
                    app_idle.wait(empty);
                }
            }
            if let Some(s) = all_start {
                all = optimus_rpc::thread_cpu_ns() - s;
            }
            Ok((busy, all))
        })
    };

    let mut c = h.client(ClientOptions {
        batch: a.batch as usize,
        idle: YIELD_ONLY,
        ..ClientOptions::default()
    })?;
    let client = {
        let (measuring, done, body) = (measuring.clone(), done.clone(), body.to_vec());
        let completed = completed.clone();
        let depth = a.depth as usize;
        let mut nic = inline_nic.take();
        std::thread::spawn(move || -> ClientTally {
            if let Some(core) = client_core {
                let _ = optimus_rpc::pin_current_thread(core);
            }
            let mut hist = new_hist();
            let mut started: VecDeque<(u64, Option<Instant>)> = VecDeque::new();
            let (mut calls, mut errors, mut seq, mut empty) = (0u64, 0u64, 0u64, 0u32);
            let mut first_error: Option<String> = None;
            // Calls handed back (by the NIC this thread drives) when measuring began, and now.
            let handed = |nic: &Option<Nic<NoTransport>>| {
                nic.as_ref()
                    .and_then(|n| n.offload())
                    .map_or(0, |o| o.handed_back())
            };
            let (mut handed_from, mut handed_to) = (None, 0);
            while !done.load(Ordering::Relaxed) {
                while started.len() < depth {
                    match c.submit(LOCAL_CONN, 0, &body) {
                        Ok(id) => {
                            seq += 1;
                            let t = (seq % SAMPLE_EVERY == 0).then(Instant::now);
                            started.push_back((id, t));
                        }
                        Err(_) => break,
                    }
                }
                c.flush();
                if let Some(nic) = nic.as_mut() {
                    nic.poll_once();
                }
                let on = measuring.load(Ordering::Relaxed);
                if on {
                    handed_to = handed(&nic);
                    handed_from.get_or_insert(handed_to);
                }
                let n = c.poll(|id, r| {
                    // Only while measuring: at the end the worker may leave first, and the
                    // NIC then answers what it held `Unavailable`.
                    if let (true, Err(e)) = (on, r) {
                        errors += 1;
                        first_error.get_or_insert_with(|| e.to_string());
                    }
                    // Completions of one connection come back in call order.
                    if let Some(k) = started.iter().position(|(i, _)| *i == id) {
                        let (_, t) = started.remove(k).expect("found");
                        if let (true, Some(t)) = (on, t) {
                            let _ = hist.record(t.elapsed().as_nanos() as u64);
                        }
                    }
                });
                if on && n > 0 {
                    calls += n as u64;
                    completed.fetch_add(n as u64, Ordering::Relaxed);
                }
                if n == 0 && nic.is_none() {
                    empty = empty.saturating_add(1);
                    YIELD_ONLY.wait(empty);
                } else {
                    empty = 0;
                }
            }
            let handed_back = handed_to - handed_from.unwrap_or(handed_to);
            let estimates = nic
                .as_ref()
                .and_then(|n| n.offload())
                .and_then(|o| o.hand_back_estimates());
            ClientTally {
                calls,
                handed_back,
                hist,
                errors,
                first_error,
                estimates,
            }
        })
    };

    std::thread::sleep(WARMUP);
    measuring.store(true, Ordering::Release);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(a.seconds));
    // On a loaded machine the threads may not have run in a short window: it stays open (the
    // rates count its real length) until a call has been served and seen complete.
    while (served.load(Ordering::Relaxed) == 0 || completed.load(Ordering::Relaxed) == 0)
        && t0.elapsed() < MEASURE_LIMIT
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    measuring.store(false, Ordering::Release);
    let seconds = t0.elapsed().as_secs_f64();
    done.store(true, Ordering::Release);
    let ClientTally {
        calls,
        handed_back,
        hist,
        errors,
        first_error,
        estimates,
    } = client
        .join()
        .map_err(|_| anyhow!("the client thread panicked"))?;
    let (busy, all) = worker
        .join()
        .map_err(|_| anyhow!("the worker thread panicked"))??;
    drop(nic_thread);
    if errors > 0 {
        bail!(
            "{errors} calls failed ({}, DT on the {}), the first: {}",
            svc.method_name(0).unwrap_or("?"),
            site.name(),
            first_error.unwrap_or_default()
        );
    }
    let served = served.load(Ordering::Relaxed);
    if served == 0 || calls == 0 {
        bail!("no call completed while measuring");
    }
    Ok(DtRow {
        calls,
        seconds,
        app_busy_ns: busy * calls / served.max(1),
        app_all_ns: all,
        per_turn: served as f64 / turns.load(Ordering::Relaxed).max(1) as f64,
        handed_back,
        estimates,
        hist,
    })
}

/// What one `CLOCK_THREAD_CPUTIME_ID` read costs this thread: the least of 200 differences
/// of back-to-back reads (a system call in a VM, about the cost of a small RPC handler).
fn clock_read_ns() -> u64 {
    (0..200)
        .map(|_| {
            let t0 = optimus_rpc::thread_cpu_ns();
            optimus_rpc::thread_cpu_ns() - t0
        })
        .min()
        .unwrap_or(0)
}

/// The first CPU that is not `nic_core`, if the machine has two.
fn other_core(nic_core: usize) -> Option<usize> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (n >= 2).then(|| (0..n).find(|&c| c != nic_core).unwrap_or(0))
}

/// Measures every row (app core and NIC core, without and with kernels) `a.rounds` times,
/// interleaved.
pub fn run(a: &DtConfig) -> Result<Vec<DtSummary>> {
    if !(a.seconds > 0.0 && a.seconds.is_finite()) {
        bail!("seconds must be positive");
    }
    if !(1..=32).contains(&a.batch) || a.depth == 0 || a.rounds == 0 {
        bail!("batch must be 1 to 32, depth and rounds at least 1");
    }
    let work_iters = (a.app_work_ns as f64 * app_work_per_ns()) as u64;
    let mut setups = Vec::new();
    for kernels in [false, true] {
        if kernels && !a.kernels {
            continue;
        }
        let (svc, body) = workload(a.workload, kernels, work_iters)?;
        setups.push((svc.clone(), body.clone(), DtSite::AppCore, kernels));
        let offloaded = match a.hand_back {
            Some(rule) => svc.with_hand_back(rule),
            None => svc,
        };
        setups.push((offloaded, body, DtSite::NicCore, kernels));
    }
    let mut rows: Vec<Vec<DtRow>> = setups.iter().map(|_| Vec::new()).collect();
    for _ in 0..a.rounds {
        for (i, (svc, body, site, _)) in setups.iter().enumerate() {
            rows[i].push(measure(svc, body, *site, a)?);
        }
    }
    Ok(setups
        .iter()
        .zip(rows)
        .map(|((_, _, site, kernels), rounds)| {
            let mut s = summarize(a.workload, *site, *kernels, &rounds);
            s.app_work_ns = a.app_work_ns;
            s
        })
        .collect())
}

fn summarize(w: DtWorkload, site: DtSite, kernels: bool, rounds: &[DtRow]) -> DtSummary {
    let mut hist = new_hist();
    for r in rounds {
        let _ = hist.add(&r.hist);
    }
    let spread = |f: &dyn Fn(&DtRow) -> f64| {
        Spread::of(rounds.iter().map(f).collect()).expect("at least one round")
    };
    DtSummary {
        workload: w.name(),
        app_work_ns: 0,
        site: site.name(),
        kernels,
        mrps: spread(&|r| r.calls as f64 / r.seconds / 1e6),
        app_ns: spread(&|r| r.app_busy_ns as f64 / r.calls as f64),
        app_all_ns: spread(&|r| r.app_all_ns as f64 / r.calls as f64),
        per_turn: spread(&|r| r.per_turn),
        handed_back: spread(&|r| r.handed_back as f64 / r.calls as f64),
        hand_back_estimates: rounds.last().and_then(|r| r.estimates),
        hist,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sites_answer_alike_on_both_workloads_with_and_without_kernels() {
        for w in [DtWorkload::Gateway, DtWorkload::Hpb] {
            for kernels in [false, true] {
                let (svc, body) = workload(w, kernels, 10).unwrap();
                let mut replies = Vec::new();
                for site in [DtSite::AppCore, DtSite::NicCore] {
                    let (mut nic, h) = Nic::new(NoTransport, NicConfig::default()).unwrap();
                    let mut handler: Box<dyn Handler> = match site {
                        DtSite::AppCore => Box::new(svc.app_core()),
                        DtSite::NicCore => {
                            let (n, a) = svc.offload();
                            nic.set_offload(n);
                            Box::new(a)
                        }
                    };
                    let mut worker = h.worker().unwrap();
                    let mut c = h.client(ClientOptions::default()).unwrap();
                    let id = c.submit(LOCAL_CONN, 0, &body).unwrap();
                    c.flush();
                    let mut out = None;
                    for _ in 0..1000 {
                        nic.poll_once();
                        worker.serve_once(&mut *handler).unwrap();
                        nic.poll_once();
                        c.poll(|i, r| {
                            assert_eq!(i, id);
                            out = Some(r.map(<[u8]>::to_vec));
                        });
                        if out.is_some() {
                            break;
                        }
                    }
                    replies.push(out.expect("answered").expect("ok"));
                }
                // AES-GCM seals with a fresh nonce: compare lengths there, bytes elsewhere.
                if w == DtWorkload::Gateway && kernels {
                    assert_eq!(replies[0].len(), replies[1].len());
                } else {
                    assert_eq!(replies[0], replies[1], "{w:?} kernels {kernels}");
                }
                assert!(
                    replies[0].len() > 1000,
                    "{w:?}: the NIC-resident fields came back"
                );
            }
        }
    }

    #[test]
    fn a_short_run_measures_every_row() {
        let a = DtConfig {
            workload: DtWorkload::Gateway,
            kernels: true,
            batch: 8,
            depth: 16,
            seconds: 0.05,
            rounds: 1,
            nic_core: 0,
            app_work_ns: 0,
            client_on_nic_core: false,
            hand_back: None,
        };
        let rows = run(&a).unwrap();
        assert_eq!(rows.len(), 4);
        for r in &rows {
            assert!(r.mrps.median > 0.0, "{} made progress", r.site);
            assert!(r.app_ns.median > 0.0 && r.app_all_ns.median >= r.app_ns.median * 0.5);
            assert!(r.pct_us(0.99) >= r.pct_us(0.5));
        }
        assert_eq!(
            rows.iter().map(|r| (r.site, r.kernels)).collect::<Vec<_>>(),
            [
                ("app-core", false),
                ("nic-core", false),
                ("app-core", true),
                ("nic-core", true)
            ]
        );
        let inline = run(&DtConfig {
            client_on_nic_core: true,
            hand_back: None,
            kernels: false,
            app_work_ns: 500,
            ..a.clone()
        })
        .unwrap();
        assert!(inline
            .iter()
            .all(|r| r.mrps.median > 0.0 && r.app_ns.median > 0.0));
        // The app's own work shows in the app core's time, wherever DT runs.
        assert!(
            inline.iter().all(|r| r.app_ns.median > 250.0),
            "500 ns of app work"
        );
        // Under the automatic hand-back rule every call is answered (`run` fails otherwise)
        // and the NIC core has both cores' costs to work from.
        let auto = run(&DtConfig {
            client_on_nic_core: true,
            hand_back: Some(HandBack::Auto(Default::default())),
            kernels: false,
            ..a.clone()
        })
        .unwrap();
        let e = auto[1]
            .hand_back_estimates
            .expect("the automatic rule's estimates");
        assert!(e.nic_dt_ns > 0.0 && e.app_record_ns > 0.0, "{e:?}");
        assert!((0.0..=1.0).contains(&e.cap) && (0.0..=1.0).contains(&e.nic_busy));
        assert!(auto[0].hand_back_estimates.is_none(), "DT on the app core");
    }

    #[test]
    fn app_work_takes_longer_the_more_rounds_it_runs() {
        let time = |iters| {
            let t0 = Instant::now();
            std::hint::black_box(app_work(3, iters));
            t0.elapsed()
        };
        let (short, long) = (time(10_000), time(10_000_000));
        assert!(long > short * 10, "{short:?} {long:?}");
        assert!(app_work_per_ns() > 0.0);
    }
}
