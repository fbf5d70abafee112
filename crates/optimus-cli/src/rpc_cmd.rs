//! `optimus serve`, `optimus call` and `optimus rpc-bench`: the RPC stack from the terminal.
//!
//! `serve` runs a soft NIC for one `.proto` service (its methods numbered in declaration order)
//! with the library's typed echo service, which checks each request against the method's input
//! type; `call` turns a JSON request into protobuf with the engine, sends it, and prints the
//! response as JSON, like grpcurl. `rpc-bench` runs optimus-bench's RPC benchmark (closed-loop
//! echo on this stack and, in the same run, on tonic gRPC and on a bare busy-polled socket
//! echo) and prints its summaries.
//!
//! Security flags are thin glue over the library: `--tls-*` files build a `TlsServer` or
//! `TlsClient` for tcp, `--psk-file` seals udp datagrams, `--shm-group` shares a region with a
//! group (regions are otherwise the creating user's alone). docs/rpc.md, "Security", says what
//! each protects.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use optimus_bench::rpc::{RpcConfig, RpcTransport};
use optimus_core::binary::{self, DecodeOptions};
use optimus_core::json::{self, JsonOptions};
use optimus_rpc::offload::{AutoHandBack, HandBack};
use optimus_rpc::transport::NoTransport;
use optimus_rpc::{
    ClientOptions, Handler, IdlePolicy, MethodTable, Nic, NicConfig, NicStats, Psk, RegionAccess,
    RegionLayout, RpcClient, ShmRegion, Tcp, TlsClient, TlsServer, Transport, TypedService, Udp,
    LOCAL_CONN,
};

use crate::source::SchemaSource;

/// Default address per transport.
const DEFAULT_SHM: &str = "/dev/shm/optimus-rpc";
const DEFAULT_NET: &str = "127.0.0.1:7878";

/// The workloads of `rpc-bench --dt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DtWorkloadKind {
    /// RPCAcc's cloud gateway packet (testdata/rpc/gateway.proto).
    Gateway,
    /// A HyperProtoBench-like store call (testdata/rpc/hpb.proto).
    Hpb,
}

/// How calls travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportKind {
    /// Shared memory on this host: the client writes into the server NIC's rings.
    Shm,
    /// UDP datagrams, batched with sendmmsg/recvmmsg.
    Udp,
    /// A TCP stream per connection.
    Tcp,
}

impl TransportKind {
    fn name(self) -> &'static str {
        match self {
            Self::Shm => "shm",
            Self::Udp => "udp",
            Self::Tcp => "tcp",
        }
    }

    fn default_addr(self) -> &'static str {
        match self {
            Self::Shm => DEFAULT_SHM,
            _ => DEFAULT_NET,
        }
    }
}

/// Security settings of `optimus serve`.
#[derive(Args, Debug, Default, Clone)]
pub struct ServeSecurity {
    /// tcp: serve TLS with this PEM certificate chain (server certificate first) [default:
    /// plain TCP]; needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// tcp: the PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// tcp: require client certificates signed by this PEM CA [default: no client
    /// certificates].
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// udp: seal datagrams under the 32-byte key in this file (64 hex digits or raw bytes)
    /// [default: plain datagrams].
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<PathBuf>,
    /// shm: let this group (numeric gid) attach too, region mode 0660 [default: this user
    /// only, mode 0600].
    #[arg(long, value_name = "GID")]
    pub shm_group: Option<u32>,
}

/// Security settings of `optimus call`.
#[derive(Args, Debug, Default, Clone)]
pub struct CallSecurity {
    /// tcp: connect with TLS, trusting servers whose certificate this PEM CA signed
    /// [default: plain TCP].
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// tcp: present this PEM client certificate chain (needs --tls-key) [default: none].
    #[arg(long, value_name = "FILE", requires_all = ["tls_key", "tls_ca"])]
    pub tls_cert: Option<PathBuf>,
    /// tcp: the PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// tcp: check the server's certificate for this name [default: the host of --addr].
    #[arg(long, value_name = "NAME", requires = "tls_ca")]
    pub tls_server_name: Option<String>,
    /// udp: seal datagrams under the key in this file, as the server's --psk-file.
    #[arg(long, value_name = "FILE")]
    pub psk_file: Option<PathBuf>,
    /// shm: attach to a region shared with this group (mode 0660, that gid) [default: a
    /// region of this user, mode 0600].
    #[arg(long, value_name = "GID")]
    pub shm_group: Option<u32>,
}

fn region_access(group: Option<u32>) -> RegionAccess {
    group.map_or(RegionAccess::Owner, |gid| RegionAccess::Group { gid })
}

fn psk(file: &Option<PathBuf>) -> Result<Option<Psk>> {
    Ok(file.as_deref().map(Psk::from_file).transpose()?)
}

impl ServeSecurity {
    fn tls(&self) -> Result<Option<TlsServer>> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(c), Some(k)) => Ok(Some(TlsServer::from_pem_files(
                c,
                k,
                self.tls_client_ca.as_deref(),
            )?)),
            _ => Ok(None),
        }
    }

    /// Refuses flags that do not apply to `t`, rather than ignoring them.
    fn check(&self, t: TransportKind) -> Result<()> {
        let tls = self.tls_cert.is_some();
        match t {
            TransportKind::Tcp if self.psk_file.is_some() || self.shm_group.is_some() => {}
            TransportKind::Udp if tls || self.shm_group.is_some() => {}
            TransportKind::Shm if tls || self.psk_file.is_some() => {}
            _ => return Ok(()),
        }
        bail!(
            "--tls-* flags are for tcp, --psk-file for udp, --shm-group for shm (transport is {})",
            t.name()
        )
    }
}

impl CallSecurity {
    fn tls(&self) -> Result<Option<TlsClient>> {
        let Some(ca) = &self.tls_ca else {
            return Ok(None);
        };
        let id = match (&self.tls_cert, &self.tls_key) {
            (Some(c), Some(k)) => Some((c.as_path(), k.as_path())),
            _ => None,
        };
        let mut t = TlsClient::from_pem_files(ca, id)?;
        if let Some(n) = &self.tls_server_name {
            t = t.server_name(n)?;
        }
        Ok(Some(t))
    }

    fn check(&self, t: TransportKind) -> Result<()> {
        let tls = self.tls_ca.is_some();
        match t {
            TransportKind::Tcp if self.psk_file.is_some() || self.shm_group.is_some() => {}
            TransportKind::Udp if tls || self.shm_group.is_some() => {}
            TransportKind::Shm if tls || self.psk_file.is_some() => {}
            _ => return Ok(()),
        }
        bail!(
            "--tls-* flags are for tcp, --psk-file for udp, --shm-group for shm (transport is {})",
            t.name()
        )
    }
}

/// Arguments of `optimus serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    source: SchemaSource,
    /// Fully qualified service to serve, e.g. `pkg.Greeter` (a unique short name works too).
    #[arg(long, value_name = "NAME")]
    service: String,
    /// Answer each call with its request (checked against the input type); when a method's
    /// output type differs from its input type, answer with an empty output message.
    #[arg(long)]
    echo: bool,
    /// How clients reach the server [default: shm].
    #[arg(long, value_enum, default_value_t = TransportKind::Shm)]
    transport: TransportKind,
    /// Region file for shm [default: /dev/shm/optimus-rpc]; listen address for udp/tcp
    /// [default: 127.0.0.1:7878].
    #[arg(long, value_name = "ADDR")]
    addr: Option<String>,
    /// Pin the NIC thread to this CPU [default: not pinned].
    #[arg(long, value_name = "CPU")]
    core: Option<usize>,
    /// Stop after this many seconds [default: run until killed].
    #[arg(long, value_name = "S")]
    seconds: Option<f64>,
    #[command(flatten)]
    security: ServeSecurity,
}

/// Arguments of `optimus call`.
#[derive(Args, Debug)]
pub struct CallArgs {
    #[command(flatten)]
    source: SchemaSource,
    /// The method, `pkg.Service/Method`.
    #[arg(long, value_name = "SERVICE/METHOD")]
    method: String,
    /// The request as proto3 JSON.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    data: String,
    /// How to reach the server [default: shm].
    #[arg(long, value_enum, default_value_t = TransportKind::Shm)]
    transport: TransportKind,
    /// Region file for shm [default: /dev/shm/optimus-rpc]; server address for udp/tcp
    /// [default: 127.0.0.1:7878].
    #[arg(long, value_name = "ADDR")]
    addr: Option<String>,
    /// Give up after this many seconds [default: 5].
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    timeout: f64,
    #[command(flatten)]
    security: CallSecurity,
}

/// Arguments of `optimus rpc-bench`.
#[derive(Args, Debug, Clone)]
pub struct RpcBenchArgs {
    /// Transport of the optimus-rpc runs [default: shm].
    #[arg(long, value_enum, default_value_t = TransportKind::Shm)]
    transport: TransportKind,
    /// Calls in flight per client thread, also the publish batch B (1..=32) [default: 1].
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=32))]
    batch: u32,
    /// Calls in flight per client thread [default: the batch size]; more than the batch lets
    /// the client fill the next batch while the NIC answers the previous one.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    depth: Option<u32>,
    /// Client threads [default: 1].
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    threads: u32,
    /// Payload bytes per request and response [default: 64].
    #[arg(long, default_value_t = 64)]
    payload: usize,
    /// Measured seconds per implementation, after a 0.2 s warm-up [default: 2].
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Measure every implementation this many times, interleaved (optimus-rpc, bare echo, tonic,
    /// then again), and report min/median/max of Mrps and of each round's ratio to the bare
    /// echo [default: 1].
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,
    /// CPU for the soft NIC (and every server thread); clients use the other CPUs [default: 0].
    #[arg(long, default_value_t = 0)]
    nic_core: usize,
    /// udp/tcp: give the server's NIC the NIC core and let each client thread own a NIC that it
    /// polls between its own polls (one core per side, as two hosts would have) instead of one
    /// NIC thread polling both sides.
    #[arg(long)]
    nic_per_side: bool,
    /// Measure only optimus-rpc, not tonic and the bare socket echo.
    #[arg(long)]
    no_peers: bool,
    /// Measure DT on the app core against DT on the NIC core on this workload's record
    /// service over shm (app-core CPU ns per RPC, Mrps, round trips) instead of the echo.
    #[arg(long, value_enum)]
    dt: Option<DtWorkloadKind>,
    /// With --dt: also the rows with kernels on the workload's field.
    #[arg(long)]
    kernels: bool,
    /// With --dt: the application's own work per call, in nanoseconds, beside reading its
    /// request [default: 0].
    #[arg(long, default_value_t = 0)]
    app_work_ns: u64,
    /// With --dt: run the NIC on its own thread and the client on the app's core (by
    /// default the client drives the NIC on the NIC core and the app has a core to itself).
    #[arg(long)]
    client_on_app_core: bool,
    /// With --dt: DT on the NIC core hands calls' DT back to the app core while the app core
    /// waits on the NIC core: `auto` (a share worked out from the NIC core's load and both
    /// cores' DT cost), `auto:K` (the same, the app core keeping K times less time per call
    /// than with all DT on it) or N (one call in N of those that find their worker idle)
    /// [default: never].
    #[arg(long, value_name = "auto|auto:K|N", value_parser = parse_hand_back)]
    hand_back: Option<HandBack>,
    /// Print one JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
}

impl RpcBenchArgs {
    /// The benchmark's configuration.
    fn config(&self) -> RpcConfig {
        RpcConfig {
            transport: match self.transport {
                TransportKind::Shm => RpcTransport::Shm,
                TransportKind::Udp => RpcTransport::Udp,
                TransportKind::Tcp => RpcTransport::Tcp,
            },
            batch: self.batch,
            depth: self.depth,
            threads: self.threads,
            payload: self.payload,
            seconds: self.seconds,
            rounds: self.rounds,
            nic_core: self.nic_core,
            nic_per_side: self.nic_per_side,
            no_peers: self.no_peers,
        }
    }
}

/// Installs `handler`, says where the server listens, runs the NIC until `stop` is set or
/// `stop_after` has passed (or forever) and returns its counters.
/// `--hand-back`: `auto`, `auto:K` (keeping K times the saving) or one call in N (at
/// least 1).
fn parse_hand_back(s: &str) -> Result<HandBack, String> {
    let auto = AutoHandBack::default();
    if s == "auto" {
        return Ok(HandBack::Auto(auto));
    }
    if let Some(k) = s.strip_prefix("auto:") {
        return match k.parse::<f64>() {
            Ok(k) if k >= 1.0 => Ok(HandBack::Auto(AutoHandBack {
                min_saving: k,
                ..auto
            })),
            _ => Err(format!("`{s}`: expected `auto:K` with K at least 1")),
        };
    }
    match s.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(HandBack::Every(n)),
        _ => Err(format!(
            "`{s}`: expected `auto`, `auto:K` or a whole number of at least 1"
        )),
    }
}

fn serve_nic<T: Transport>(
    mut nic: Nic<T>,
    handler: impl Handler + 'static,
    announce: impl FnOnce(),
    stop: &AtomicBool,
    stop_after: Option<Duration>,
) -> NicStats {
    nic.set_handler(handler);
    announce();
    run_nic(&mut nic, stop, stop_after);
    nic.stats()
}

fn run_nic<T: Transport>(nic: &mut Nic<T>, stop: &AtomicBool, stop_after: Option<Duration>) {
    let start = Instant::now();
    std::thread::scope(|s| {
        if let Some(d) = stop_after {
            let start = &start;
            s.spawn(move || {
                while start.elapsed() < d && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                stop.store(true, Ordering::Relaxed);
            });
        }
        nic.run(stop, IdlePolicy::default());
    });
}

/// Removes a region file left by a server that is gone (its heartbeat does not move).
fn clear_stale_region(path: &Path, access: RegionAccess) -> Result<()> {
    if !path.exists() {
        return Ok(());
    }
    if let Ok(r) = ShmRegion::open_with(path, access) {
        let before = r.heartbeat().load(Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(100));
        if r.heartbeat().load(Ordering::Relaxed) != before {
            bail!("a server is already running on {}", path.display());
        }
    }
    std::fs::remove_file(path).with_context(|| format!("removing stale region {}", path.display()))
}

/// `optimus serve`.
pub fn serve(a: ServeArgs) -> Result<()> {
    serve_until(a, &AtomicBool::new(false))
}

/// [`serve`], which also stops once `stop` is set.
fn serve_until(a: ServeArgs, stop: &AtomicBool) -> Result<()> {
    if !a.echo {
        bail!("the command-line server only has the --echo handler; give your own handlers to optimus_rpc::TypedService");
    }
    a.security.check(a.transport)?;
    let schema = a.source.load()?;
    // The echo handler checks each request against its method's input type.
    let handler = TypedService::new(schema, &a.service)?.echo();
    let table = handler.table().clone();
    let addr = a
        .addr
        .clone()
        .unwrap_or_else(|| a.transport.default_addr().to_string());
    let stop_after = a.seconds.map(Duration::from_secs_f64);
    if let Some(c) = a.core {
        optimus_rpc::pin_current_thread(c)?;
    }
    let cfg = NicConfig::default();
    let announce = |where_: &str| {
        eprintln!(
            "optimus: serving {} ({} methods: {}) over {} at {where_}",
            table.service,
            table.methods.len(),
            table
                .methods
                .iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            a.transport.name()
        );
    };
    let stats = match a.transport {
        TransportKind::Shm => {
            let path = PathBuf::from(&addr);
            let access = region_access(a.security.shm_group);
            clear_stale_region(&path, access)?;
            let region = ShmRegion::create_with(&path, cfg.layout, access)
                .with_context(|| format!("creating region {}", path.display()))?;
            let (nic, _h) = Nic::with_region(NoTransport, cfg, region)?;
            serve_nic(nic, handler, || announce(&addr), stop, stop_after)
        }
        TransportKind::Udp => {
            let mut t = Udp::bind(&addr).with_context(|| format!("binding udp {addr}"))?;
            if let Some(k) = psk(&a.security.psk_file)? {
                t = t.with_psk(&k);
            }
            let local = t.local_addr();
            let (nic, _h) = Nic::new(t, cfg)?;
            serve_nic(nic, handler, || announce(&local), stop, stop_after)
        }
        TransportKind::Tcp => {
            let t = match a.security.tls()? {
                None => Tcp::listen(&addr),
                Some(tls) => Tcp::listen_tls(&addr, tls),
            }
            .with_context(|| format!("listening on tcp {addr}"))?;
            let local = t.local_addr();
            let (nic, _h) = Nic::new(t, cfg)?;
            serve_nic(nic, handler, || announce(&local), stop, stop_after)
        }
    };
    eprintln!(
        "optimus: served {} calls; dropped {} malformed, {} bad checksums, {} oversized; {} duplicates",
        stats.requests_served,
        stats.dropped_malformed,
        stats.dropped_checksum,
        stats.dropped_oversized,
        stats.duplicate_requests
    );
    Ok(())
}

// ------------------------------------------------------------------------------------ call

/// Sends one call and returns the response as JSON text.
fn call_json(a: &CallArgs) -> Result<String> {
    a.security.check(a.transport)?;
    let schema = a.source.load()?;
    let (svc_name, method_name) = MethodTable::split_path(&a.method).with_context(|| {
        format!(
            "--method must look like pkg.Service/Method, got {}",
            a.method
        )
    })?;
    let svc = TypedService::new(schema, svc_name)?;
    let schema = svc.schema().clone();
    let id = svc.method_id(method_name)?;
    let (input, output) = svc.method_types(id).context("method id from the table")?;
    let request = json::decode(&schema, input, &a.data, &JsonOptions::default())
        .with_context(|| format!("--data is not a {}", schema.message(input).full_name))?;
    let body = binary::encode(&schema, &request);
    let addr = a
        .addr
        .clone()
        .unwrap_or_else(|| a.transport.default_addr().to_string());
    let wait = Duration::from_secs_f64(a.timeout.max(0.001));
    let opts = ClientOptions {
        call_timeout: wait,
        ..ClientOptions::default()
    };
    let mut out = Vec::new();
    match a.transport {
        TransportKind::Shm => {
            let access = region_access(a.security.shm_group);
            let region = ShmRegion::open_with(Path::new(&addr), access).with_context(|| {
                format!("attaching to {addr} (is `optimus serve --transport shm` running?)")
            })?;
            let mut c = RpcClient::attach(region, opts)?;
            c.call(LOCAL_CONN, id, &body, &mut out)?;
        }
        TransportKind::Udp => remote_call(
            match psk(&a.security.psk_file)? {
                None => Udp::client("127.0.0.1:0")?,
                Some(k) => Udp::client("127.0.0.1:0")?.with_psk(&k),
            },
            &addr,
            id,
            &body,
            wait,
            opts,
            &mut out,
        )?,
        TransportKind::Tcp => {
            let t = match a.security.tls()? {
                None => Tcp::client(),
                Some(tls) => Tcp::client_tls(tls),
            };
            remote_call(t, &addr, id, &body, wait, opts, &mut out)?
        }
    }
    let reply = binary::decode(&schema, output, &out, &DecodeOptions::default())
        .with_context(|| format!("response is not a {}", schema.message(output).full_name))?;
    Ok(json::encode(&schema, &reply, &JsonOptions::default())?)
}

fn remote_call<T: Transport>(
    t: T,
    addr: &str,
    method: u16,
    body: &[u8],
    wait: Duration,
    opts: ClientOptions,
    out: &mut Vec<u8>,
) -> Result<()> {
    let cfg = NicConfig {
        layout: RegionLayout {
            n_qps: 1,
            ring_lines: 1024,
        },
        ..NicConfig::default()
    };
    let (nic, h) = Nic::new(t, cfg)?;
    let nic = nic.spawn(None, IdlePolicy::default());
    let conn = h
        .connect(addr, wait)
        .with_context(|| format!("connecting to {addr}"))?;
    let mut c = h.client(opts)?;
    let r = c.call(conn, method, body, out);
    drop(c);
    h.close(conn);
    drop(nic);
    Ok(r?)
}

/// `optimus call`.
pub fn call(a: CallArgs) -> Result<()> {
    let text = call_json(&a)?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}")?;
    Ok(())
}

// ------------------------------------------------------------------------------------ bench

/// `optimus rpc-bench`.
pub fn rpc_bench(args: RpcBenchArgs) -> Result<()> {
    if args.seconds <= 0.0 {
        bail!("--seconds must be positive");
    }
    if let Some(w) = args.dt {
        return rpc_bench_dt(&args, w);
    }
    let a = args.config();
    let rows = optimus_bench::rpc::run(&a)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        for r in &rows {
            let vs = match &r.vs_echo {
                Some(v) => format!(
                    ",\"vs_echo\":{:.4},\"vs_echo_min\":{:.4},\"vs_echo_max\":{:.4}",
                    v.median, v.min, v.max
                ),
                None => String::new(),
            };
            writeln!(
                out,
                "{{\"implementation\":\"{}\",\"transport\":\"{}\",\"batch\":{},\"depth\":{},\"threads\":{},\"payload\":{},\"rounds\":{},\"mrps\":{:.4},\"mrps_min\":{:.4},\"mrps_max\":{:.4},\"p50_us\":{:.2},\"p99_us\":{:.2},\"p999_us\":{:.2}{vs}}}",
                r.implementation,
                r.transport,
                a.batch,
                a.depth(),
                a.threads,
                a.payload,
                a.rounds,
                r.mrps.median,
                r.mrps.min,
                r.mrps.max,
                r.pct_us(0.5),
                r.pct_us(0.99),
                r.pct_us(0.999)
            )?;
        }
    } else {
        writeln!(
            out,
            "{:<12} {:<9} {:>5} {:>5} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "impl",
            "transport",
            "batch",
            "depth",
            "threads",
            "payload",
            "Mrps",
            "p50_us",
            "p99_us",
            "p999_us",
            "vs_echo"
        )?;
        for r in &rows {
            let ranges = a.rounds > 1;
            let mrps = r.mrps.text(ranges);
            let vs = r.vs_echo.map_or("-".into(), |v| v.text(ranges));
            writeln!(
                out,
                "{:<12} {:<9} {:>5} {:>5} {:>7} {:>7} {:>9} {:>9.2} {:>9.2} {:>9.2} {:>9}",
                r.implementation,
                r.transport,
                a.batch,
                a.depth(),
                a.threads,
                a.payload,
                mrps,
                r.pct_us(0.5),
                r.pct_us(0.99),
                r.pct_us(0.999),
                vs
            )?;
        }
        if a.rounds > 1 {
            writeln!(
                out,
                "({} rounds: Mrps and vs_echo are median [min, max]; latency over all rounds)",
                a.rounds
            )?;
        }
    }
    Ok(())
}

/// `optimus rpc-bench --dt`: DT on the app core vs on the NIC core.
fn rpc_bench_dt(args: &RpcBenchArgs, w: DtWorkloadKind) -> Result<()> {
    use optimus_bench::rpc::dt::{DtConfig, DtWorkload};
    let a = DtConfig {
        workload: match w {
            DtWorkloadKind::Gateway => DtWorkload::Gateway,
            DtWorkloadKind::Hpb => DtWorkload::Hpb,
        },
        kernels: args.kernels,
        batch: args.batch,
        depth: args.depth.unwrap_or(args.batch),
        seconds: args.seconds,
        rounds: args.rounds,
        nic_core: args.nic_core,
        client_on_nic_core: !args.client_on_app_core,
        hand_back: args.hand_back,
        app_work_ns: args.app_work_ns,
    };
    let rows = optimus_bench::rpc::dt::run(&a)?;
    write_dt_rows(&mut std::io::stdout().lock(), &a, &rows, args.json)
}

/// The rows of `rpc-bench --dt`: a table, or one JSON object per line.
fn write_dt_rows(
    out: &mut impl Write,
    a: &optimus_bench::rpc::dt::DtConfig,
    rows: &[optimus_bench::rpc::dt::DtSummary],
    json: bool,
) -> Result<()> {
    let ranges = a.rounds > 1;
    if !json {
        writeln!(
            out,
            "{:<8} {:<9} {:<7} {:>5} {:>5} {:>22} {:>22} {:>6} {:>22} {:>9} {:>9}",
            "workload",
            "dt",
            "kernels",
            "batch",
            "depth",
            "app_ns_per_rpc",
            "app_all_ns_per_rpc",
            "batch",
            "Mrps",
            "p50_us",
            "p99_us"
        )?;
    }
    for r in rows {
        if json {
            writeln!(
                out,
                "{{\"workload\":\"{}\",\"dt\":\"{}\",\"kernels\":{},\"app_work_ns\":{},\"hand_back\":{},\"batch\":{},\"depth\":{},\"rounds\":{},\"app_ns_per_rpc\":{:.1},\"app_ns_per_rpc_min\":{:.1},\"app_ns_per_rpc_max\":{:.1},\"app_all_ns_per_rpc\":{:.1},\"requests_per_turn\":{:.2},\"handed_back_share\":{:.3},\"hand_back_estimates\":{},\"mrps\":{:.4},\"mrps_min\":{:.4},\"mrps_max\":{:.4},\"p50_us\":{:.2},\"p99_us\":{:.2}}}",
                r.workload,
                r.site,
                r.kernels,
                r.app_work_ns,
                match (r.site, a.hand_back) {
                    ("nic-core", Some(HandBack::Every(n))) => n.to_string(),
                    ("nic-core", Some(HandBack::Auto(h))) => format!("\"auto:{}\"", h.min_saving),
                    _ => "null".to_string(),
                },
                a.batch,
                a.depth,
                a.rounds,
                r.app_ns.median,
                r.app_ns.min,
                r.app_ns.max,
                r.app_all_ns.median,
                r.per_turn.median,
                r.handed_back.median,
                r.hand_back_estimates.map_or("null".to_string(), |e| format!(
                    "{{\"cap\":{:.3},\"nic_dt_ns\":{:.0},\"app_record_ns\":{:.0},\"app_wire_ns\":{:.0},\"app_all_ns\":{:.0},\"nic_busy\":{:.3}}}",
                    e.cap, e.nic_dt_ns, e.app_record_ns, e.app_wire_ns, e.app_all_ns, e.nic_busy
                )),
                r.mrps.median,
                r.mrps.min,
                r.mrps.max,
                r.pct_us(0.5),
                r.pct_us(0.99)
            )?;
        } else {
            writeln!(
                out,
                "{:<8} {:<9} {:<7} {:>5} {:>5} {:>22} {:>22} {:>6.1} {:>22} {:>9.2} {:>9.2}",
                r.workload,
                r.site,
                r.kernels,
                a.batch,
                a.depth,
                r.app_ns.text(ranges),
                r.app_all_ns.text(ranges),
                r.per_turn.median,
                r.mrps.text(ranges),
                r.pct_us(0.5),
                r.pct_us(0.99)
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, UdpSocket};

    use super::*;

    const PROTO: &str = r#"
syntax = "proto3";
package interop;

enum Color { COLOR_UNSPECIFIED = 0; RED = 1; BLUE = 2; }

message Point { sint32 x = 1; sint32 y = 2; }

message Shape {
  string name = 1;
  repeated Point points = 2;
  Color color = 3;
  map<string, int64> tags = 4;
  oneof extra { double area = 5; bytes blob = 6; }
}

message Summary { uint32 count = 1; }

service Geometry {
  rpc Echo(Shape) returns (Shape);
  rpc Count(Shape) returns (Summary);
}
"#;

    fn source(dir: &Path) -> SchemaSource {
        let p = dir.join("interop.proto");
        std::fs::write(&p, PROTO).unwrap();
        SchemaSource {
            proto: vec![p],
            include: vec![dir.to_path_buf()],
            descriptor_set: None,
            thrift: Vec::new(),
        }
    }

    fn free_port() -> String {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.local_addr().unwrap().to_string()
    }

    fn interop(transport: TransportKind, addr: String) {
        interop_with(
            transport,
            addr,
            ServeSecurity::default(),
            CallSecurity::default(),
        );
    }

    fn interop_with(
        transport: TransportKind,
        addr: String,
        serve_sec: ServeSecurity,
        call_sec: CallSecurity,
    ) {
        // A directory of its own per call: tests of one transport run at the same time, and
        // each removes its directory when done.
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "optimus-rpc-interop-{}-{}-{}",
            std::process::id(),
            transport.name(),
            CALLS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let serve_args = ServeArgs {
            source: source(&dir),
            service: "Geometry".into(),
            echo: true,
            transport,
            addr: Some(addr.clone()),
            core: None,
            // Stopped once the calls below are done; the cap only ends a server whose test
            // failed. It is long enough for a server starved by the other tests (soft NICs
            // spinning on a 2-core machine) to start and answer every call.
            seconds: Some(15.0),
            security: serve_sec,
        };
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let server = {
            let stop = stop.clone();
            std::thread::spawn(move || serve_until(serve_args, &stop))
        };
        let data = r#"{"name":"tri","points":[{"x":1,"y":-2},{"x":-3}],"color":"BLUE","tags":{"a":"7"},"area":1.5}"#;
        let call_args = |method: &str| CallArgs {
            source: source(&dir),
            method: method.into(),
            data: data.into(),
            transport,
            addr: Some(addr.clone()),
            timeout: 2.0,
            security: call_sec.clone(),
        };
        let mut got = None;
        let deadline = Instant::now() + Duration::from_secs(8);
        while got.is_none() && Instant::now() < deadline {
            match call_json(&call_args("interop.Geometry/Echo")) {
                Ok(t) => got = Some(t),
                Err(_) => std::thread::sleep(Duration::from_millis(20)), // server still starting
            }
        }
        let got = got.expect("echo call");
        let v: Vec<&str> = [
            "\"name\":\"tri\"",
            "\"x\":-3",
            "\"color\":\"BLUE\"",
            "\"a\":\"7\"",
            "\"area\":1.5",
        ]
        .into();
        for want in v {
            assert!(got.contains(want), "{want} missing in {got}");
        }
        assert_eq!(
            call_json(&call_args("interop.Geometry/Count")).unwrap(),
            "{}"
        );
        let bad = call_json(&CallArgs {
            data: r#"{"nope":1}"#.into(),
            ..call_args("interop.Geometry/Echo")
        });
        assert!(bad.is_err());
        assert!(call_json(&call_args("interop.Geometry/Missing")).is_err());
        stop.store(true, Ordering::Relaxed);
        server.join().unwrap().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn rpc_bench_dt_measures_both_sites_and_prints_them() {
        use optimus_bench::rpc::dt::{DtConfig, DtWorkload};
        let a = DtConfig {
            workload: DtWorkload::Hpb,
            kernels: false,
            batch: 4,
            depth: 8,
            seconds: 0.05,
            rounds: 1,
            nic_core: 0,
            client_on_nic_core: true,
            hand_back: None,
            app_work_ns: 0,
        };
        let rows = optimus_bench::rpc::dt::run(&a).unwrap();
        let mut out = Vec::new();
        write_dt_rows(&mut out, &a, &rows, true).unwrap();
        let lines: Vec<serde_json::Value> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["dt"], "app-core");
        assert_eq!(lines[1]["dt"], "nic-core");
        for l in &lines {
            assert_eq!(l["workload"], "hpb");
            assert!(l["app_ns_per_rpc"].as_f64().unwrap() > 0.0, "{l}");
            assert!(l["mrps"].as_f64().unwrap() > 0.0, "{l}");
        }
        let mut table = Vec::new();
        write_dt_rows(&mut table, &a, &rows, false).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(
            table.starts_with("workload") && table.contains("nic-core"),
            "{table}"
        );
    }

    #[test]
    fn call_against_serve_over_udp() {
        interop(TransportKind::Udp, free_port());
    }

    #[test]
    fn call_against_serve_over_tcp() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        drop(l);
        interop(TransportKind::Tcp, addr);
    }

    fn key_file(name: &str, key: &[u8]) -> PathBuf {
        let p = std::env::temp_dir().join(format!("optimus-psk-{name}-{}", std::process::id()));
        std::fs::write(&p, key).unwrap();
        p
    }

    #[test]
    fn call_against_serve_over_sealed_udp() {
        let k = key_file("good", &[0x5a; 32]);
        let serve = ServeSecurity {
            psk_file: Some(k.clone()),
            ..Default::default()
        };
        let call = CallSecurity {
            psk_file: Some(k),
            ..Default::default()
        };
        interop_with(TransportKind::Udp, free_port(), serve, call);
    }

    #[test]
    fn security_flags_for_another_transport_or_bad_files_are_errors() {
        let dir = std::env::temp_dir().join(format!("optimus-sec-flags-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let call = |transport, security| CallArgs {
            source: source(&dir),
            method: "interop.Geometry/Echo".into(),
            data: "{}".into(),
            transport,
            addr: Some("127.0.0.1:9".into()),
            timeout: 0.2,
            security,
        };
        let psk_on_tcp = CallSecurity {
            psk_file: Some(dir.join("k")),
            ..Default::default()
        };
        let e = call_json(&call(TransportKind::Tcp, psk_on_tcp)).unwrap_err();
        assert!(e.to_string().contains("--psk-file for udp"), "{e}");
        let short = key_file("short", b"too short");
        let bad_key = CallSecurity {
            psk_file: Some(short),
            ..Default::default()
        };
        let e = format!(
            "{:#}",
            call_json(&call(TransportKind::Udp, bad_key)).unwrap_err()
        );
        assert!(e.contains("64 hex digits or 32 raw bytes"), "{e}");
        let no_ca = CallSecurity {
            tls_ca: Some(dir.join("missing-ca.pem")),
            ..Default::default()
        };
        let e = format!(
            "{:#}",
            call_json(&call(TransportKind::Tcp, no_ca)).unwrap_err()
        );
        assert!(e.contains("missing-ca.pem"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn call_against_serve_over_a_group_region() {
        use std::os::unix::fs::MetadataExt;
        // Our effective group: the group a new file gets.
        let probe = key_file("gid-probe", b"");
        let gid = std::fs::metadata(&probe).unwrap().gid();
        let _ = std::fs::remove_file(&probe);
        let path =
            std::env::temp_dir().join(format!("optimus-rpc-group-region-{}", std::process::id()));
        let serve = ServeSecurity {
            shm_group: Some(gid),
            ..Default::default()
        };
        let call = CallSecurity {
            shm_group: Some(gid),
            ..Default::default()
        };
        interop_with(
            TransportKind::Shm,
            path.to_string_lossy().into_owned(),
            serve,
            call,
        );
    }

    #[test]
    fn call_against_serve_over_shm() {
        let path =
            std::env::temp_dir().join(format!("optimus-rpc-interop-region-{}", std::process::id()));
        interop(TransportKind::Shm, path.to_string_lossy().into_owned());
    }
}
