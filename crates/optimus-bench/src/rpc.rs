//! The RPC benchmark behind `optimus rpc-bench`: closed-loop echo on optimus-rpc's soft NIC
//! and, in the same run, on tonic gRPC and on a bare busy-polled socket echo, so the numbers
//! are ratios on one machine. It prints nothing: [`run`] returns one summary per
//! implementation. [`dt`] measures DT on the app core against DT on the NIC core.

pub mod dt;

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use optimus_rpc::transport::NoTransport;
use optimus_rpc::{
    ClientOptions, IdlePolicy, Nic, NicConfig, NicHandle, RegionLayout, RpcClient, Status, Tcp,
    Transport, Udp, LOCAL_CONN,
};

/// How the optimus-rpc run's calls travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RpcTransport {
    /// Shared memory on this host: the client writes into the server NIC's rings.
    Shm,
    /// UDP datagrams, batched with sendmmsg/recvmmsg.
    Udp,
    /// A TCP stream per connection.
    Tcp,
}

impl RpcTransport {
    /// Its name in the rows.
    pub fn name(self) -> &'static str {
        match self {
            Self::Shm => "shm",
            Self::Udp => "udp",
            Self::Tcp => "tcp",
        }
    }
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct RpcConfig {
    /// Transport of the optimus-rpc runs.
    pub transport: RpcTransport,
    /// The publish batch B (1..=32).
    pub batch: u32,
    /// Calls in flight per client thread; `None`: the batch size. More than the batch lets
    /// the client fill the next batch while the NIC answers the previous one.
    pub depth: Option<u32>,
    /// Client threads.
    pub threads: u32,
    /// Payload bytes per request and response.
    pub payload: usize,
    /// Measured seconds per implementation, after a 0.2 s warm-up.
    pub seconds: f64,
    /// Every implementation is measured this many times, interleaved (optimus-rpc, bare echo,
    /// tonic, then again).
    pub rounds: u32,
    /// CPU for the soft NIC (and every server thread); clients use the other CPUs.
    pub nic_core: usize,
    /// udp/tcp: the server's NIC gets the NIC core and each client thread owns a NIC that it
    /// polls between its own polls (one core per side, as two hosts would have) instead of
    /// one NIC thread polling both sides.
    pub nic_per_side: bool,
    /// Measure only optimus-rpc, not tonic and the bare socket echo.
    pub no_peers: bool,
}

impl RpcConfig {
    /// Calls in flight per client thread.
    pub fn depth(&self) -> u32 {
        self.depth.unwrap_or(self.batch)
    }
}

/// Measures every implementation `a.rounds` times, interleaved, and folds the rounds into one
/// summary per implementation (optimus-rpc first).
pub fn run(a: &RpcConfig) -> Result<Vec<Summary>> {
    if !(a.seconds > 0.0 && a.seconds.is_finite()) {
        bail!("seconds must be positive");
    }
    if !(1..=32).contains(&a.batch) || a.threads == 0 || a.rounds == 0 {
        bail!("batch must be 1 to 32, threads and rounds at least 1");
    }
    let mut rounds = Vec::new();
    for _ in 0..a.rounds {
        rounds.push(bench_round(a)?);
    }
    Ok(summarize(&rounds))
}

/// One measured implementation.
#[derive(Debug, Clone)]
struct BenchRow {
    implementation: &'static str,
    transport: &'static str,
    calls: u64,
    seconds: f64,
    hist: Histogram<u64>,
}

impl BenchRow {
    fn mrps(&self) -> f64 {
        self.calls as f64 / self.seconds / 1e6
    }
}

const WARMUP: Duration = Duration::from_millis(200);
/// Latency is sampled on one call in `SAMPLE_EVERY` (timestamps cost as much as a call here).
const SAMPLE_EVERY: u64 = 8;
const _: () = assert!(SAMPLE_EVERY.is_power_of_two());

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 10_000_000_000, 3).expect("histogram bounds")
}

/// Phases of a run shared by all its threads: warm-up, measuring, done.
struct Clock {
    measuring: AtomicBool,
    done: AtomicBool,
}

impl Clock {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            measuring: AtomicBool::new(false),
            done: AtomicBool::new(false),
        })
    }

    /// Drives the phases from the calling thread; returns the measured seconds.
    fn drive(&self, seconds: f64) -> f64 {
        std::thread::sleep(WARMUP);
        self.measuring.store(true, Ordering::Release);
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_secs_f64(seconds));
        self.done.store(true, Ordering::Release);
        t0.elapsed().as_secs_f64()
    }
}

fn client_core(a: &RpcConfig, t: usize) -> Option<usize> {
    let n = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if n < 2 {
        return None;
    }
    let others: Vec<usize> = (0..n).filter(|&c| c != a.nic_core).collect();
    Some(others[t % others.len()])
}

/// Closed-loop client on an `RpcClient`: keeps `batch` calls in flight.
fn rpc_client_loop(
    mut c: RpcClient,
    conn: u32,
    a: &RpcConfig,
    clock: &Clock,
    core: Option<usize>,
    mut poll_nic: impl FnMut(),
) -> (u64, Histogram<u64>) {
    if let Some(core) = core {
        let _ = optimus_rpc::pin_current_thread(core);
    }
    let payload = vec![0xA5u8; a.payload];
    let mut started: Vec<Option<Instant>> = vec![None; 1 << 16];
    let mut hist = new_hist();
    let mut calls = 0u64;
    let depth = a.depth() as usize;
    let mut in_flight = 0usize;
    let mut seq = 0u64;
    while !clock.done.load(Ordering::Relaxed) {
        while in_flight < depth {
            match c.submit(conn, 0, &payload) {
                Ok(id) => {
                    seq += 1;
                    if seq & (SAMPLE_EVERY - 1) == 0 {
                        started[(id & 0xFFFF) as usize] = Some(Instant::now());
                    }
                    in_flight += 1;
                }
                Err(_) => break,
            }
        }
        c.flush();
        poll_nic();
        let measuring = clock.measuring.load(Ordering::Relaxed);
        let n = c.poll(|id, r| {
            if r.is_err() {
                return;
            }
            if let Some(t) = started[(id & 0xFFFF) as usize].take() {
                if measuring {
                    let _ = hist.record(t.elapsed().as_nanos() as u64);
                }
            }
        });
        in_flight -= n;
        if measuring {
            calls += n as u64;
        }
    }
    (calls, hist)
}

fn run_clients<F>(a: &RpcConfig, clock: &Arc<Clock>, make: F) -> Result<(u64, Histogram<u64>, f64)>
where
    F: Fn(usize) -> Result<Box<dyn FnOnce(&Clock) -> (u64, Histogram<u64>) + Send>>,
{
    let mut joins = Vec::new();
    for t in 0..a.threads as usize {
        let f = make(t)?;
        let clock = clock.clone();
        joins.push(std::thread::spawn(move || f(&clock)));
    }
    let secs = clock.drive(a.seconds);
    let mut hist = new_hist();
    let mut calls = 0;
    for j in joins {
        let (c, h) = j
            .join()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))?;
        calls += c;
        hist.add(h)
            .map_err(|e| anyhow::anyhow!("merging histograms: {e:?}"))?;
    }
    Ok((calls, hist, secs))
}

fn bench_echo(_m: u16, req: &[u8], resp: &mut Vec<u8>) -> Status {
    resp.extend_from_slice(req);
    Status::Ok
}

fn bench_config(a: &RpcConfig) -> NicConfig {
    NicConfig {
        layout: RegionLayout {
            n_qps: (a.threads as usize).max(1),
            ring_lines: 4096,
        },
        max_payload: a.payload.max(64),
        ..NicConfig::default()
    }
}

fn bench_optimus(a: &RpcConfig) -> Result<BenchRow> {
    let clock = Clock::new();
    let a2 = a.clone();
    let opts = ClientOptions {
        batch: a.batch as usize,
        idle: IdlePolicy::BUSY,
        ..ClientOptions::default()
    };
    let (calls, hist, secs) = match a.transport {
        RpcTransport::Shm => {
            let (mut nic, h) = Nic::new(NoTransport, bench_config(a))?;
            nic.set_handler(bench_echo);
            let nic = nic.spawn(Some(a.nic_core), IdlePolicy::BUSY);
            let r = run_clients(a, &clock, |t| {
                let c = h.client(opts)?;
                let (a, core) = (a2.clone(), client_core(&a2, t));
                Ok(Box::new(move |clock: &Clock| {
                    rpc_client_loop(c, LOCAL_CONN, &a, clock, core, || {})
                }))
            });
            drop(nic);
            r?
        }
        RpcTransport::Udp if a.nic_per_side => {
            nic_per_side(a, &clock, opts, Udp::bind("127.0.0.1:0")?, || {
                Udp::client("127.0.0.1:0")
            })?
        }
        RpcTransport::Tcp if a.nic_per_side => {
            nic_per_side(a, &clock, opts, Tcp::listen("127.0.0.1:0")?, || {
                Ok(Tcp::client())
            })?
        }
        RpcTransport::Udp => two_nics(
            a,
            &clock,
            opts,
            Udp::bind("127.0.0.1:0")?,
            Udp::client("127.0.0.1:0")?,
        )?,
        RpcTransport::Tcp => two_nics(a, &clock, opts, Tcp::listen("127.0.0.1:0")?, Tcp::client())?,
    };
    Ok(BenchRow {
        implementation: "optimus-rpc",
        transport: a.transport.name(),
        calls,
        seconds: secs,
        hist,
    })
}

/// Server NIC and client NIC, both polled by one thread on the NIC core (one core for the
/// soft NIC, the others for the application, as with a NIC shared by both sides of a host).
fn two_nics<S: Transport, C: Transport>(
    a: &RpcConfig,
    clock: &Arc<Clock>,
    opts: ClientOptions,
    st: S,
    ct: C,
) -> Result<(u64, Histogram<u64>, f64)> {
    let addr = st.local_addr();
    let (mut server, _sh) = Nic::new(st, bench_config(a))?;
    server.set_handler(bench_echo);
    let (mut client, ch): (Nic<C>, NicHandle) = Nic::new(ct, bench_config(a))?;
    let stop = Arc::new(AtomicBool::new(false));
    let core = a.nic_core;
    let s2 = stop.clone();
    let poller = std::thread::spawn(move || {
        let _ = optimus_rpc::pin_current_thread(core);
        while !s2.load(Ordering::Relaxed) {
            server.poll_once();
            client.poll_once();
        }
    });
    let result = (|| {
        let conn = ch.connect(&addr, Duration::from_secs(5))?;
        let a2 = a.clone();
        run_clients(a, clock, |t| {
            let c = ch.client(opts)?;
            let (a, core) = (a2.clone(), client_core(&a2, t));
            Ok(Box::new(move |clock: &Clock| {
                rpc_client_loop(c, conn, &a, clock, core, || {})
            }))
        })
    })();
    stop.store(true, Ordering::Relaxed);
    let _ = poller.join();
    result
}

/// The server's NIC on the NIC core; each client thread owns a NIC and polls it inline.
fn nic_per_side<S: Transport, C: Transport>(
    a: &RpcConfig,
    clock: &Arc<Clock>,
    opts: ClientOptions,
    st: S,
    make_ct: impl Fn() -> std::io::Result<C>,
) -> Result<(u64, Histogram<u64>, f64)> {
    let addr = st.local_addr();
    let (mut server, _sh) = Nic::new(st, bench_config(a))?;
    server.set_handler(bench_echo);
    let server = server.spawn(Some(a.nic_core), IdlePolicy::BUSY);
    let a2 = a.clone();
    let cfg = NicConfig {
        layout: RegionLayout {
            n_qps: 1,
            ring_lines: 4096,
        },
        ..bench_config(a)
    };
    let r = run_clients(a, clock, |t| {
        // Connecting needs the NIC polled while this thread waits: lend it a thread for that.
        let (nic, ch) = Nic::new(make_ct()?, cfg)?;
        let running = nic.spawn(None, IdlePolicy::default());
        let conn = ch.connect(&addr, Duration::from_secs(5))?;
        let c = ch.client(opts)?;
        let mut nic = running.stop();
        let (a, core) = (a2.clone(), client_core(&a2, t));
        Ok(Box::new(move |clock: &Clock| {
            rpc_client_loop(c, conn, &a, clock, core, || {
                nic.poll_once();
            })
        }))
    });
    drop(server);
    r
}

/// Bare busy-polled TCP echo: a server thread on the NIC core echoes bytes on non-blocking
/// sockets; each client keeps `batch` messages in flight on its own connection.
fn bench_tcp_echo(a: &RpcConfig) -> Result<BenchRow> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let (s2, n, core) = (stop.clone(), a.threads as usize, a.nic_core);
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let _ = optimus_rpc::pin_current_thread(core);
        let mut conns = Vec::new();
        for _ in 0..n {
            let (s, _) = listener.accept()?;
            s.set_nodelay(true)?;
            s.set_nonblocking(true)?;
            conns.push(s);
        }
        let mut buf = vec![0u8; 1 << 16];
        while !s2.load(Ordering::Relaxed) {
            for s in conns.iter_mut() {
                match s.read(&mut buf) {
                    Ok(0) => {}
                    Ok(k) => write_all_spin(s, &buf[..k], &s2)?,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    });
    let clock = Clock::new();
    let a2 = a.clone();
    let r = run_clients(a, &clock, |t| {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_nonblocking(true)?;
        let (a, core) = (a2.clone(), client_core(&a2, t));
        Ok(Box::new(move |clock: &Clock| {
            stream_client_loop(s, &a, clock, core)
        }))
    });
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();
    let (calls, hist, secs) = r?;
    Ok(BenchRow {
        implementation: "tcp-echo",
        transport: "tcp",
        calls,
        seconds: secs,
        hist,
    })
}

fn write_all_spin(s: &mut TcpStream, mut b: &[u8], stop: &AtomicBool) -> std::io::Result<()> {
    while !b.is_empty() && !stop.load(Ordering::Relaxed) {
        match s.write(b) {
            Ok(k) => b = &b[k..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn stream_client_loop(
    mut s: TcpStream,
    a: &RpcConfig,
    clock: &Clock,
    core: Option<usize>,
) -> (u64, Histogram<u64>) {
    if let Some(core) = core {
        let _ = optimus_rpc::pin_current_thread(core);
    }
    let msg = vec![0xA5u8; a.payload.max(1)];
    let mut sent: VecDeque<Instant> = VecDeque::new();
    let mut hist = new_hist();
    let mut calls = 0u64;
    let mut pending_bytes = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    let stop = AtomicBool::new(false);
    let mut out = Vec::new();
    while !clock.done.load(Ordering::Relaxed) {
        out.clear();
        while sent.len() < a.depth() as usize {
            out.extend_from_slice(&msg);
            sent.push_back(Instant::now());
        }
        if !out.is_empty() && write_all_spin(&mut s, &out, &stop).is_err() {
            break;
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => {
                pending_bytes += k;
                let measuring = clock.measuring.load(Ordering::Relaxed);
                while pending_bytes >= msg.len() {
                    pending_bytes -= msg.len();
                    if let Some(t) = sent.pop_front() {
                        if measuring {
                            calls += 1;
                            if calls & (SAMPLE_EVERY - 1) == 0 {
                                let _ = hist.record(t.elapsed().as_nanos() as u64);
                            }
                        }
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => break,
        }
    }
    (calls, hist)
}

/// Bare busy-polled UDP echo: one datagram per message, `batch` in flight per client.
fn bench_udp_echo(a: &RpcConfig) -> Result<BenchRow> {
    let server = UdpSocket::bind("127.0.0.1:0")?;
    server.set_nonblocking(true)?;
    let addr = server.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let (s2, core) = (stop.clone(), a.nic_core);
    let srv = std::thread::spawn(move || {
        let _ = optimus_rpc::pin_current_thread(core);
        let mut buf = vec![0u8; 65536];
        while !s2.load(Ordering::Relaxed) {
            if let Ok((k, from)) = server.recv_from(&mut buf) {
                let _ = server.send_to(&buf[..k], from);
            }
        }
    });
    let clock = Clock::new();
    let a2 = a.clone();
    let r = run_clients(a, &clock, |t| {
        let s = UdpSocket::bind("127.0.0.1:0")?;
        s.connect(addr)?;
        s.set_nonblocking(true)?;
        let (a, core) = (a2.clone(), client_core(&a2, t));
        Ok(Box::new(move |clock: &Clock| {
            if let Some(core) = core {
                let _ = optimus_rpc::pin_current_thread(core);
            }
            let msg = vec![0xA5u8; a.payload.max(1)];
            let mut buf = vec![0u8; 65536];
            let mut hist = new_hist();
            let (mut calls, mut in_flight) = (0u64, 0usize);
            let mut sent: VecDeque<Instant> = VecDeque::new();
            let mut last_progress = Instant::now();
            while !clock.done.load(Ordering::Relaxed) {
                while in_flight < a.depth() as usize {
                    // Stamp before the send: on loopback the send itself delivers the datagram.
                    let t = Instant::now();
                    if s.send(&msg).is_err() {
                        break;
                    }
                    sent.push_back(t);
                    in_flight += 1;
                }
                match s.recv(&mut buf) {
                    Ok(_) => {
                        in_flight -= 1;
                        last_progress = Instant::now();
                        let t = sent.pop_front();
                        if clock.measuring.load(Ordering::Relaxed) {
                            calls += 1;
                            if let (Some(t), true) = (t, calls & (SAMPLE_EVERY - 1) == 0) {
                                let _ = hist.record(t.elapsed().as_nanos() as u64);
                            }
                        }
                    }
                    Err(_) => {
                        // A lost datagram would stall the loop for good: refill after 10 ms.
                        if last_progress.elapsed() > Duration::from_millis(10) {
                            in_flight = 0;
                            sent.clear();
                            last_progress = Instant::now();
                        }
                    }
                }
            }
            (calls, hist)
        })
            as Box<dyn FnOnce(&Clock) -> (u64, Histogram<u64>) + Send>)
    });
    stop.store(true, Ordering::Relaxed);
    let _ = srv.join();
    let (calls, hist, secs) = r?;
    Ok(BenchRow {
        implementation: "udp-echo",
        transport: "udp",
        calls,
        seconds: secs,
        hist,
    })
}

mod grpc {
    //! tonic gRPC echo with a hand-written service and a bytes codec (no protoc, no codegen).

    use std::convert::Infallible;
    use std::task::{Context, Poll};

    use bytes::{Buf, BufMut};
    use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
    use tonic::codegen::{http, BoxFuture, Service};

    pub const PATH: &str = "/optimus.bench.Echo/Echo";

    /// Payloads as raw bytes: the same work on both sides as the opaque-bytes RPC stack.
    #[derive(Clone, Copy, Default)]
    pub struct BytesCodec;

    impl Codec for BytesCodec {
        type Encode = Vec<u8>;
        type Decode = Vec<u8>;
        type Encoder = BytesCodec;
        type Decoder = BytesCodec;
        fn encoder(&mut self) -> Self::Encoder {
            BytesCodec
        }
        fn decoder(&mut self) -> Self::Decoder {
            BytesCodec
        }
    }

    impl Encoder for BytesCodec {
        type Item = Vec<u8>;
        type Error = tonic::Status;
        fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
            dst.put_slice(&item);
            Ok(())
        }
    }

    impl Decoder for BytesCodec {
        type Item = Vec<u8>;
        type Error = tonic::Status;
        fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
            let mut v = vec![0u8; src.remaining()];
            src.copy_to_slice(&mut v);
            Ok(Some(v))
        }
    }

    struct EchoUnary;

    impl tonic::server::UnaryService<Vec<u8>> for EchoUnary {
        type Response = Vec<u8>;
        type Future = std::future::Ready<Result<tonic::Response<Vec<u8>>, tonic::Status>>;
        fn call(&mut self, req: tonic::Request<Vec<u8>>) -> Self::Future {
            std::future::ready(Ok(tonic::Response::new(req.into_inner())))
        }
    }

    /// The echo service as tonic's generated servers look.
    #[derive(Clone, Default)]
    pub struct EchoServer;

    impl tonic::server::NamedService for EchoServer {
        const NAME: &'static str = "optimus.bench.Echo";
    }

    impl Service<http::Request<tonic::body::Body>> for EchoServer {
        type Response = http::Response<tonic::body::Body>;
        type Error = Infallible;
        type Future = BoxFuture<Self::Response, Self::Error>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
            Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(BytesCodec);
                Ok(grpc.unary(EchoUnary, req).await)
            })
        }
    }
}

/// tonic gRPC echo over loopback HTTP/2: the server runtime on the NIC core, each client
/// thread a runtime with `batch` concurrent unary calls on one channel.
fn bench_tonic(a: &RpcConfig) -> Result<BenchRow> {
    let core = a.nic_core;
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .on_thread_start(move || {
            let _ = optimus_rpc::pin_current_thread(core);
        })
        .build()?;
    // Pick a free port, then let tonic bind it (clients retry until it listens).
    let addr = TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = server_rt.spawn(async move {
        tonic::transport::Server::builder()
            .add_service(grpc::EchoServer)
            .serve_with_shutdown(addr, async {
                let _ = stop_rx.await;
            })
            .await
    });
    let clock = Clock::new();
    let a2 = a.clone();
    let r = run_clients(a, &clock, |t| {
        let (a, core) = (a2.clone(), client_core(&a2, t));
        Ok(Box::new(move |clock: &Clock| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("client runtime");
            if let Some(core) = core {
                let _ = optimus_rpc::pin_current_thread(core);
            }
            rt.block_on(tonic_client(addr, a, clock))
        })
            as Box<dyn FnOnce(&Clock) -> (u64, Histogram<u64>) + Send>)
    });
    let _ = stop_tx.send(());
    let _ = server_rt.block_on(server);
    let (calls, hist, secs) = r?;
    Ok(BenchRow {
        implementation: "tonic-grpc",
        transport: "tcp",
        calls,
        seconds: secs,
        hist,
    })
}

async fn tonic_client(
    addr: std::net::SocketAddr,
    a: RpcConfig,
    clock: &Clock,
) -> (u64, Histogram<u64>) {
    let Ok(ep) = tonic::transport::Endpoint::from_shared(format!("http://{addr}")) else {
        return (0, new_hist());
    };
    let ep = ep.tcp_nodelay(true);
    let mut channel = None;
    for _ in 0..200 {
        match ep.connect().await {
            Ok(c) => {
                channel = Some(c);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
    let Some(channel) = channel else {
        return (0, new_hist());
    };
    let calls = Arc::new(AtomicU64::new(0));
    let local = tokio::task::LocalSet::new();
    let hists = Arc::new(std::sync::Mutex::new(new_hist()));
    // Spawned tasks must be 'static, so the clock's two phases are mirrored into shared flags.
    let flags = Arc::new((AtomicBool::new(false), AtomicBool::new(false)));
    let f2 = flags.clone();
    let mut tasks = Vec::new();
    for k in 0..a.depth() {
        let (channel, calls, hists, flags) =
            (channel.clone(), calls.clone(), hists.clone(), flags.clone());
        let payload = vec![0xA5u8; a.payload];
        tasks.push(local.spawn_local(async move {
            let mut grpc = tonic::client::Grpc::new(channel);
            let path = tonic::codegen::http::uri::PathAndQuery::from_static(grpc::PATH);
            let mut h = new_hist();
            let mut n = 0u64;
            let mut seq = u64::from(k);
            while !flags.1.load(Ordering::Relaxed) {
                if grpc.ready().await.is_err() {
                    break;
                }
                let t = Instant::now();
                let r = grpc
                    .unary(
                        tonic::Request::new(payload.clone()),
                        path.clone(),
                        grpc::BytesCodec,
                    )
                    .await;
                if r.is_err() {
                    break;
                }
                seq += 1;
                if flags.0.load(Ordering::Relaxed) {
                    n += 1;
                    if seq & (SAMPLE_EVERY - 1) == 0 {
                        let _ = h.record(t.elapsed().as_nanos() as u64);
                    }
                }
            }
            calls.fetch_add(n, Ordering::Relaxed);
            let _ = hists.lock().map(|mut all| all.add(h));
        }));
    }
    local
        .run_until(async move {
            while !clock.done.load(Ordering::Relaxed) {
                f2.0.store(clock.measuring.load(Ordering::Relaxed), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            f2.1.store(true, Ordering::Relaxed);
            for t in tasks {
                let _ = t.await;
            }
        })
        .await;
    let h = hists
        .lock()
        .map(|h| h.clone())
        .unwrap_or_else(|_| new_hist());
    (calls.load(Ordering::Relaxed), h)
}

/// One round: optimus-rpc, then (unless `--no-peers`) the bare echo and tonic.
fn bench_round(a: &RpcConfig) -> Result<Vec<BenchRow>> {
    let mut rows = vec![bench_optimus(a).context("optimus-rpc run")?];
    if !a.no_peers {
        match a.transport {
            RpcTransport::Udp => rows.push(bench_udp_echo(a).context("udp echo run")?),
            _ => rows.push(bench_tcp_echo(a).context("tcp echo run")?),
        }
        rows.push(bench_tonic(a).context("tonic run")?);
    }
    Ok(rows)
}

/// Min, median and max of a sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// `None` for an empty sample; the median of an even count is the mean of the middle two.
    fn of(mut v: Vec<f64>) -> Option<Self> {
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Self {
            min: v[0],
            median,
            max: v[n - 1],
        })
    }

    /// The median, and with `range` also `[min, max]`.
    pub fn text(&self, range: bool) -> String {
        if range {
            format!("{:.3} [{:.3}, {:.3}]", self.median, self.min, self.max)
        } else {
            format!("{:.3}", self.median)
        }
    }
}

/// One implementation over all rounds.
pub struct Summary {
    pub implementation: &'static str,
    pub transport: &'static str,
    /// Million calls per second over the rounds.
    pub mrps: Spread,
    /// Each round's Mrps over the bare echo's in the same round.
    pub vs_echo: Option<Spread>,
    /// Sampled round trips of every round.
    pub hist: Histogram<u64>,
}

impl Summary {
    /// The round-trip time at quantile `q`, in microseconds.
    pub fn pct_us(&self, q: f64) -> f64 {
        self.hist.value_at_quantile(q) as f64 / 1000.0
    }
}

/// Folds rounds (each the same implementations in the same order) into one summary each.
fn summarize(rounds: &[Vec<BenchRow>]) -> Vec<Summary> {
    let Some(first) = rounds.first() else {
        return Vec::new();
    };
    let echo_of = |round: &[BenchRow]| {
        round
            .iter()
            .find(|r| r.implementation.ends_with("-echo"))
            .map(BenchRow::mrps)
    };
    (0..first.len())
        .map(|i| {
            let mut hist = new_hist();
            for round in rounds {
                // Same bounds on every histogram: adding cannot fail.
                let _ = hist.add(&round[i].hist);
            }
            let vs: Vec<f64> = rounds
                .iter()
                .filter_map(|round| echo_of(round).map(|e| round[i].mrps() / e))
                .collect();
            Summary {
                implementation: first[i].implementation,
                transport: first[i].transport,
                mrps: Spread::of(rounds.iter().map(|round| round[i].mrps()).collect())
                    .expect("at least one round"),
                vs_echo: Spread::of(vs),
                hist,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(implementation: &'static str, calls: u64, latency_ns: u64) -> BenchRow {
        let mut hist = new_hist();
        hist.record(latency_ns).unwrap();
        BenchRow {
            implementation,
            transport: "tcp",
            calls,
            seconds: 1.0,
            hist,
        }
    }

    #[test]
    fn spread_is_min_median_max() {
        assert_eq!(Spread::of(vec![]), None);
        let s = Spread::of(vec![3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 2.0, 3.0));
        assert_eq!(Spread::of(vec![4.0, 1.0, 2.0, 9.0]).unwrap().median, 3.0);
    }

    #[test]
    fn rounds_give_per_round_ratios_to_the_echo() {
        // Round 1: optimus 2 of echo 4 (0.5); round 2: 3 of 4 (0.75); round 3: 3 of 3 (1.0).
        let rounds = vec![
            vec![
                row("optimus-rpc", 2_000_000, 10_000),
                row("tcp-echo", 4_000_000, 5_000),
            ],
            vec![
                row("optimus-rpc", 3_000_000, 20_000),
                row("tcp-echo", 4_000_000, 5_000),
            ],
            vec![
                row("optimus-rpc", 3_000_000, 30_000),
                row("tcp-echo", 3_000_000, 5_000),
            ],
        ];
        let s = summarize(&rounds);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].implementation, "optimus-rpc");
        assert_eq!(
            (s[0].mrps.min, s[0].mrps.median, s[0].mrps.max),
            (2.0, 3.0, 3.0)
        );
        let v = s[0].vs_echo.unwrap();
        assert_eq!((v.min, v.median, v.max), (0.5, 0.75, 1.0));
        assert_eq!(s[1].vs_echo.unwrap().median, 1.0);
        // Latencies of every round are merged.
        assert_eq!(s[0].hist.len(), 3);
        assert!((s[0].pct_us(1.0) - 30.0).abs() < 0.1);
        // Without a bare echo there is no ratio.
        let alone = summarize(&[vec![row("optimus-rpc", 1, 1)]]);
        assert!(alone[0].vs_echo.is_none());
    }

    /// Calls `run` with a window of 0.05 s, then, while it completes no call (a loaded
    /// machine can leave a short window empty), windows twice as long, up to 3.2 s.
    fn calls_within(a: &RpcConfig, run: fn(&RpcConfig) -> Result<BenchRow>) -> u64 {
        let mut a = a.clone();
        loop {
            let calls = run(&a).unwrap().calls;
            if calls > 0 || a.seconds >= 3.2 {
                return calls;
            }
            a.seconds *= 2.0;
        }
    }

    #[test]
    fn bench_runs_every_implementation_briefly() {
        for transport in [RpcTransport::Shm, RpcTransport::Udp, RpcTransport::Tcp] {
            let a = RpcConfig {
                transport,
                batch: 4,
                threads: 1,
                payload: 64,
                depth: None,
                nic_per_side: transport == RpcTransport::Tcp,
                seconds: 0.05,
                rounds: 1,
                nic_core: 0,
                no_peers: transport != RpcTransport::Shm,
            };
            assert!(
                calls_within(&a, bench_optimus) > 0,
                "{transport:?} made progress"
            );
            if transport == RpcTransport::Shm {
                assert!(calls_within(&a, bench_tcp_echo) > 0);
                assert!(calls_within(&a, bench_udp_echo) > 0);
                assert!(calls_within(&a, bench_tonic) > 0);
            }
        }
    }
}
