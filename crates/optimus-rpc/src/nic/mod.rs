//! The soft NIC: one thread, pinned to its own core, that owns the transport, the connection
//! tables and load balancing, and talks to applications only through shared-memory rings.
//!
//! [`Nic::poll_once`] is the whole datapath, in eRPC's order:
//!
//! 1. **control** (cold, every [`CONTROL_INTERVAL`] polls or when flagged): QPs attached or
//!    detached, connect/close requests, transport events, timeouts and retransmissions;
//! 2. **RX burst**: up to [`RX_BATCH`] frames from the transport — requests are de-duplicated
//!    and dispatched, responses are matched to their call and written to the caller's
//!    completion ring;
//! 3. **TX burst**: up to [`TX_BATCH`] frames from each application ring — client requests go
//!    to the transport (or straight to this NIC's own service for connection 0), worker
//!    responses go back to their origin — and one transport `send_burst`.
//!
//! No lock and no allocation on this path once buffers are warm. In *doorbell* mode only QPs
//! whose doorbell bit is set are read (plus every QP during control); in *polling* mode every
//! attached QP is read on every poll.
//!
//! Delivery: a client connection keeps a window of [`WINDOW`] calls indexed by sequence number;
//! each remembers its frame for retransmission after `timeout`, up to `max_retries` times, then
//! completes with [`Status::Timeout`]. A server connection keeps the same window of the calls it
//! has seen: a repeated sequence number is answered from the cached response (or ignored while
//! the first copy still runs), one older than the window is dropped, so a handler runs at most
//! once per call. Cached responses are kept within a byte budget over all connections
//! ([`NicConfig::response_cache_bytes`]); a retransmission whose response was dropped for it
//! gets no answer, and its caller times out. Server connection ids carry a per-start epoch, so
//! a restarted server answers old connections with [`Status::Disconnected`] instead of running
//! their calls again.
//!
//! Layout: this file holds the public types, the [`Nic`] and its `Core` (the state the
//! datapath works on), construction and `poll_once`; each concern is an `impl Core` of its
//! own: `control` (the handle's requests, QP attach/detach, lost peers, timers), `rx` (frames
//! from the transport), `tx` (application rings, frames for the transport), `client` (client
//! connections, windows, retransmission), `server` (server connections, de-duplication, the
//! response cache, outcomes), `dispatch` (inline handler or workers, pending table, backlog)
//! and `delivery` (completions to application rings).

mod client;
mod control;
mod delivery;
mod dispatch;
mod rx;
mod server;
mod tx;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::frame::{self, Status, HEADER_BYTES};
use crate::ring::{Consumer, Producer};
use crate::shm::{RegionLayout, ShmRegion, MODE_DOORBELL, QP_FREE};
use crate::transport::{PeerId, Transport, TxQueue};
use crate::{IdlePolicy, RpcError};

use client::ClientConn;
pub use control::NicHandle;
pub(crate) use control::NicShared;
pub(crate) use delivery::Notifier;
use dispatch::{Origin, Pending};
use server::{ResponseCache, ServerConn};

/// Most frames taken from the transport per poll.
pub const RX_BATCH: usize = 32;
/// Most frames taken from one application ring per poll.
pub const TX_BATCH: usize = 32;
/// Polls between two control passes.
pub const CONTROL_INTERVAL: u64 = 1024;
/// Calls in flight per client connection, and calls remembered per server connection.
pub const WINDOW: usize = 1024;
/// Frames queued for the transport before the NIC stops taking new work (room for the largest
/// RX burst's answers: 32 datagrams of 32 packed frames, plus as much again).
pub const TXQ_FRAMES: usize = 2048;
/// Requests handed to worker threads and not yet answered.
pub const MAX_PENDING: usize = 4096;
/// Server connections at once, the most [`NicConfig::max_server_conns`] may allow.
pub const MAX_SERVER_CONNS: usize = 1 << 16;
/// Default of [`NicConfig::max_server_conns`].
pub const SERVER_CONNS: usize = 4096;
/// Client connections open at once on one NIC: a connection's handle holds its table index
/// (plus one) in its low 20 bits.
pub const MAX_CLIENT_CONNS: usize = (1 << HANDLE_INDEX_BITS) - 1;
/// Low bits of a client connection handle that hold its index; the 12 bits above count the
/// index's reuses (modulo 4,096), so the handle of a closed connection does not name the ones
/// after it.
const HANDLE_INDEX_BITS: u32 = 20;
const HANDLE_INDEX_MASK: u32 = (1 << HANDLE_INDEX_BITS) - 1;
/// Connection id of this NIC's own service, reached through shared memory.
pub const LOCAL_CONN: u32 = 0;
/// Default bytes of sent responses a server keeps, over all its connections, to answer
/// retransmitted requests ([`NicConfig::response_cache_bytes`]).
pub const RESPONSE_CACHE_BYTES: usize = 64 << 20;

const WINDOW_MASK: u64 = WINDOW as u64 - 1;
/// Largest frame buffer a client window slot keeps for its next call.
const KEPT_FRAME_BYTES: usize = 4096;
const NO_QP: u16 = u16::MAX;
const EPOCH_SHIFT: u32 = 20;
const SCONN_MASK: u32 = (1 << EPOCH_SHIFT) - 1;
const _: () = assert!(
    WINDOW.is_power_of_two()
        && CONTROL_INTERVAL.is_power_of_two()
        && MAX_SERVER_CONNS <= (1 << EPOCH_SHIFT)
);

/// How the NIC finds new work in application rings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollMode {
    /// Read every attached QP on every poll.
    Polling,
    /// Read a QP only when its doorbell bit is set (and during control passes).
    Doorbell,
}

/// How requests are spread over worker threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Balance {
    /// Each request to the next worker in turn.
    RoundRobin,
    /// Each request to the worker with the fewest unanswered requests.
    QueueDepth,
    /// All requests of a connection to one worker (connection id modulo workers).
    StaticByConnection,
}

/// NIC settings.
#[derive(Debug, Clone, Copy)]
pub struct NicConfig {
    /// How application rings are polled.
    pub mode: PollMode,
    /// How requests are spread over workers.
    pub balance: Balance,
    /// Time one attempt of a remote call may take before it is sent again.
    pub timeout: Duration,
    /// Retransmissions before a call fails with [`Status::Timeout`].
    pub max_retries: u32,
    /// Largest payload accepted (further capped by the rings and the transport MTU).
    pub max_payload: usize,
    /// Shape of the shared-memory region the NIC creates (ignored with `with_region`).
    pub layout: RegionLayout,
    /// Bytes of sent responses a server keeps, over all its connections, so that a
    /// retransmitted request is answered without running its handler again. Past it the
    /// oldest copies go, and a retransmission of one of their calls is not answered (its
    /// caller times out). Without the bound every connection could hold [`WINDOW`] responses
    /// of up to `max_payload` bytes. Unused on reliable transports, which keep no copies.
    pub response_cache_bytes: usize,
    /// Server connections open at once (at most [`MAX_SERVER_CONNS`]); a Connect past them is
    /// not answered and counted (`conns_refused`). A connection keeps a window of [`WINDOW`]
    /// call states (about 40 KB) from its first request on, so this bounds what a peer opening
    /// connections can make a server allocate (160 MB at the default 4,096).
    pub max_server_conns: usize,
}

impl Default for NicConfig {
    fn default() -> Self {
        Self {
            mode: PollMode::Polling,
            balance: Balance::RoundRobin,
            timeout: Duration::from_millis(20),
            max_retries: 5,
            max_payload: 64 * 1024,
            layout: RegionLayout {
                n_qps: 8,
                ring_lines: 4096,
            },
            response_cache_bytes: RESPONSE_CACHE_BYTES,
            max_server_conns: SERVER_CONNS,
        }
    }
}

/// Counters of what the NIC did (snapshot).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NicStats {
    /// Polls run.
    pub polls: u64,
    /// Frames received from the transport (before checks).
    pub rx_frames: u64,
    /// Frames handed to the transport.
    pub tx_frames: u64,
    /// Requests whose handler ran here (inline or on a worker).
    pub requests_served: u64,
    /// Responses delivered to local callers.
    pub responses_delivered: u64,
    /// Frames dropped as malformed (bad magic, version, kind, flags, lengths).
    pub dropped_malformed: u64,
    /// Frames dropped for a checksum mismatch.
    pub dropped_checksum: u64,
    /// Frames dropped for exceeding the payload limit.
    pub dropped_oversized: u64,
    /// Application rings found corrupt and skipped.
    pub corrupt_rings: u64,
    /// Queue pairs the NIC stopped serving because a peer wrote impossible indices or frames
    /// into their rings (see `shm::QP_QUARANTINED`).
    pub qps_quarantined: u64,
    /// Repeated requests answered from the cache or ignored.
    pub duplicate_requests: u64,
    /// Requests older than the window, dropped.
    pub stale_requests: u64,
    /// Requests for connections this server does not know (answered `Disconnected`).
    pub unknown_conn: u64,
    /// Responses for calls that already completed (duplicates or after a timeout).
    pub late_responses: u64,
    /// Retransmitted requests.
    pub retransmits: u64,
    /// Calls failed with `Timeout`.
    pub timeouts: u64,
    /// Polls that left work in place because a ring, window or queue was full.
    pub backpressure: u64,
    /// Connections opened (client side) and accepted (server side).
    pub conns_opened: u64,
    /// Connections closed or lost.
    pub conns_closed: u64,
    /// Connect frames not answered because `max_server_conns` connections were open.
    pub conns_refused: u64,
    /// Cached responses dropped to stay within `response_cache_bytes`.
    pub responses_evicted: u64,
    /// Bytes of responses cached at the snapshot (a gauge, not a counter).
    pub cached_response_bytes: u64,
}

/// A request handler: method id, request payload, response buffer (empty on entry).
pub trait Handler: Send {
    /// Runs one call and says how it went; on an error status `response` may carry a message.
    fn handle(&mut self, method: u16, request: &[u8], response: &mut Vec<u8>) -> Status;

    /// Runs one call whose data transformation the NIC core handed back to this core (DT on
    /// the NIC core, [`crate::offload`]): `request` is the request's wire bytes and
    /// `response` takes the reply's. Handlers that never take offloaded calls need not
    /// tell the two apart: by default this is [`Handler::handle`].
    fn handle_wire(&mut self, method: u16, request: &[u8], response: &mut Vec<u8>) -> Status {
        self.handle(method, request, response)
    }

    /// A worker's turn over its ring begins: it is about to take the requests there (if
    /// any).
    fn turn_begins(&mut self) {}

    /// The turn ends, having served `calls` requests (none: it found the ring empty) and
    /// handed their replies to the NIC.
    fn turn_ends(&mut self, _calls: usize) {}
}

impl<F: FnMut(u16, &[u8], &mut Vec<u8>) -> Status + Send> Handler for F {
    fn handle(&mut self, method: u16, request: &[u8], response: &mut Vec<u8>) -> Status {
        self(method, request, response)
    }
}

struct Qp {
    role: u32,
    tx: Consumer,
    rx: Producer,
    /// Completions that did not fit in `rx`, oldest first; nothing more is taken from `tx`
    /// until they all have. Each is the one outcome of a call this QP made and the NIC still
    /// held (a window or pending-table slot), so the queue is bounded by those tables.
    stall: VecDeque<Vec<u8>>,
    rx_dirty: bool,
    in_flight: u32,
    notifier: Option<Arc<Notifier>>,
}

/// The soft NIC over transport `T`. See the module docs.
pub struct Nic<T: Transport> {
    t: T,
    c: Core,
}

struct Core {
    cfg: NicConfig,
    shared: Arc<NicShared>,
    region: Arc<ShmRegion>,
    max_payload: usize,
    networked: bool,
    /// The transport never loses, duplicates or reorders frames (no copies kept to resend).
    reliable: bool,
    /// Network frames carry and must pass our checksum.
    checksum: bool,
    qps: Vec<Qp>,
    active: Vec<u16>,
    /// `active` and `workers` are stale (a QP was quarantined); the next control pass rebuilds
    /// them.
    relist: bool,
    workers: Vec<u16>,
    doorbell_left: u64,
    last_control_seq: u64,
    polls: u64,
    now: Instant,
    /// The poll in which `now` was last read.
    now_poll: u64,
    next_timer: Instant,
    next_liveness: Instant,
    txq: TxQueue,
    cconns: Vec<ClientConn>,
    /// Indices of closed client connections, for the next connects.
    cconn_free: Vec<u32>,
    sconns: Vec<Option<ServerConn>>,
    sconn_free: Vec<u32>,
    sconn_by_nonce: HashMap<(PeerId, u64), u32>,
    responses: ResponseCache,
    epoch: u32,
    pending: Vec<Pending>,
    pending_free: Vec<u32>,
    backlog: VecDeque<(Origin, u16, Vec<u8>)>,
    handler: Option<Box<dyn Handler>>,
    /// DT on this core for requests handed to workers (`offload`).
    offload: Option<Box<crate::offload::NicDt>>,
    scratch: Vec<u8>,
    rr: usize,
    nonce: u64,
    stats: NicStats,
    closed_peers: Vec<PeerId>,
}

impl<T: Transport> Nic<T> {
    /// A NIC with a new anonymous region shaped by `cfg.layout` (threads of this process).
    ///
    /// # Errors
    /// A bad layout or a failed mapping.
    pub fn new(t: T, cfg: NicConfig) -> Result<(Self, NicHandle), RpcError> {
        let region = ShmRegion::anonymous(cfg.layout)?;
        Self::with_region(t, cfg, region)
    }

    /// A NIC serving `region` (e.g. a `/dev/shm` file other processes attach to).
    ///
    /// # Errors
    /// Currently none; kept for symmetry with `new`.
    pub fn with_region(
        t: T,
        cfg: NicConfig,
        region: Arc<ShmRegion>,
    ) -> Result<(Self, NicHandle), RpcError> {
        let layout = region.layout();
        let mut max_payload = cfg.max_payload.min(frame::MAX_PAYLOAD_BYTES);
        if T::MTU > 0 {
            max_payload = max_payload.min(T::MTU - HEADER_BYTES);
        }
        // A frame may take at most half a ring.
        max_payload = max_payload.min((layout.ring_lines / 2) * frame::CACHE_LINE - HEADER_BYTES);
        region.mode().store(
            if cfg.mode == PollMode::Doorbell {
                MODE_DOORBELL
            } else {
                0
            },
            Ordering::Release,
        );
        let mut qps = Vec::with_capacity(layout.n_qps);
        for i in 0..layout.n_qps {
            // SAFETY: the NIC uses only the consumer of each tx ring and the producer of each rx
            // ring; applications use the other ends (see `client` and `worker`).
            let (_, tx) = unsafe { region.ring(i, false) };
            // SAFETY: as above.
            let (rx, _) = unsafe { region.ring(i, true) };
            qps.push(Qp {
                role: QP_FREE,
                tx,
                rx,
                stall: VecDeque::new(),
                rx_dirty: false,
                in_flight: 0,
                notifier: None,
            });
        }
        let retries = cfg.max_retries.saturating_add(1);
        let call_timeout = cfg.timeout.saturating_mul(retries) + Duration::from_secs(1);
        let shared = Arc::new(NicShared {
            region: region.clone(),
            control: Mutex::new(Vec::new()),
            control_flag: AtomicBool::new(false),
            notifiers: Mutex::new(vec![None; layout.n_qps]),
            stats: Mutex::new(NicStats::default()),
            max_payload,
            call_timeout,
            local_addr: t.local_addr(),
        });
        let now = Instant::now();
        let epoch = {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos() as u64 ^ d.as_secs())
                .unwrap_or(1);
            let x =
                (nanos ^ (u64::from(std::process::id()) << 7)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            (((x >> 40) as u32) & 0xFFF).max(1)
        };
        let c = Core {
            cfg,
            shared: shared.clone(),
            region,
            max_payload,
            networked: T::MTU > 0,
            reliable: T::RELIABLE,
            checksum: T::CHECKSUM,
            qps,
            active: Vec::new(),
            relist: false,
            workers: Vec::new(),
            doorbell_left: 0,
            last_control_seq: u64::MAX,
            polls: 0,
            now,
            now_poll: 0,
            next_timer: now,
            next_liveness: now,
            txq: TxQueue::new(TXQ_FRAMES),
            cconns: Vec::new(),
            cconn_free: Vec::new(),
            sconns: Vec::new(),
            sconn_free: Vec::new(),
            sconn_by_nonce: HashMap::new(),
            responses: ResponseCache {
                budget: cfg.response_cache_bytes,
                bytes: 0,
                live: 0,
                order: VecDeque::new(),
                next_gen: 0,
            },
            epoch,
            pending: Vec::with_capacity(MAX_PENDING),
            pending_free: Vec::new(),
            backlog: VecDeque::with_capacity(MAX_PENDING),
            handler: None,
            offload: None,
            scratch: Vec::new(),
            rr: 0,
            nonce: u64::from(epoch) << 32,
            stats: NicStats::default(),
            closed_peers: Vec::new(),
        };
        Ok((Self { t, c }, NicHandle { shared }))
    }

    /// Runs requests for connection 0 and remote callers on this NIC's core with `h`
    /// (eRPC's dispatch-thread handlers: best for short handlers). Without an inline handler,
    /// requests go to attached workers.
    pub fn set_handler(&mut self, h: impl Handler + 'static) {
        self.c.handler = Some(Box::new(h));
    }

    /// Transforms on this NIC's core the requests and replies of the calls it hands to
    /// workers (DT on the NIC core; see [`crate::offload`]): each request is decoded into
    /// records before a worker sees it, each reply merged and encoded after. The workers must
    /// serve the [`crate::offload::AppDt`] made with `dt`.
    pub fn set_offload(&mut self, dt: crate::offload::NicDt) {
        self.c.offload = Some(Box::new(dt));
    }

    /// The offloaded DT, if set: its placement now and its field-updating counters.
    pub fn offload(&self) -> Option<&crate::offload::NicDt> {
        self.c.offload.as_deref()
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.t
    }

    /// Counters now.
    pub fn stats(&self) -> NicStats {
        self.c.snapshot()
    }

    /// One turn of the datapath: control (when due) → RX burst → TX burst. Returns how many
    /// frames it moved (0 when idle).
    #[inline]
    pub fn poll_once(&mut self) -> usize {
        let c = &mut self.c;
        c.polls += 1;
        if c.polls & (CONTROL_INTERVAL - 1) == 0
            || c.shared.control_flag.load(Ordering::Relaxed)
            || c.region.control_seq().load(Ordering::Relaxed) != c.last_control_seq
        {
            c.control(&mut self.t);
        }
        let mut work = 0;

        // RX burst: the transport's frames, if there is room for what they may cause.
        let rx_units = RX_BATCH.min(T::RX_BURST);
        let rx_frames = rx_units * T::FRAMES_PER_UNIT;
        if c.networked && c.can_take_requests(rx_frames) && c.txq.room() >= rx_frames {
            let t = &mut self.t;
            // A transport-wide receive error is retried on the next poll.
            if let Ok(n) = t.recv_burst(rx_units, |peer, bytes| c.on_wire(peer, bytes)) {
                work += n;
            }
        }

        // TX burst: application rings, then the transport.
        work += c.poll_rings();
        if c.networked {
            if let Ok(n) = self.t.send_burst(&mut c.txq) {
                c.stats.tx_frames += n as u64;
            }
        } else if !c.txq.is_empty() {
            let n = c.txq.len();
            c.txq.consume(n);
        }
        c.publish_rx();
        if let Some(dt) = c.offload.as_mut() {
            dt.on_poll(work > 0);
        }
        work
    }

    /// Runs `poll_once` until `stop` is set, idling per `idle` when there is no work.
    pub fn run(&mut self, stop: &AtomicBool, idle: IdlePolicy) {
        let mut empty = 0u32;
        while !stop.load(Ordering::Relaxed) {
            if self.poll_once() > 0 {
                empty = 0;
            } else {
                empty = empty.saturating_add(1);
                idle.wait(empty);
            }
        }
        self.c.publish_stats();
    }

    /// Moves the NIC to its own thread, pinned to `core` when given.
    pub fn spawn(mut self, core: Option<usize>, idle: IdlePolicy) -> NicThread<T> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let join = std::thread::Builder::new()
            .name("optimus-nic".into())
            .spawn(move || {
                if let Some(core) = core {
                    let _ = crate::pin_current_thread(core);
                }
                self.run(&s, idle);
                self
            })
            .expect("spawn NIC thread");
        NicThread {
            stop,
            join: Some(join),
        }
    }
}

/// A NIC running on its own thread.
pub struct NicThread<T: Transport> {
    stop: Arc<AtomicBool>,
    join: Option<std::thread::JoinHandle<Nic<T>>>,
}

impl<T: Transport> NicThread<T> {
    /// Stops the thread and returns the NIC (its counters, its transport).
    ///
    /// # Panics
    /// If the NIC thread panicked.
    pub fn stop(mut self) -> Nic<T> {
        self.stop.store(true, Ordering::Relaxed);
        self.join
            .take()
            .expect("joined once")
            .join()
            .expect("NIC thread panicked")
    }
}

impl<T: Transport> Drop for NicThread<T> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
    }
}

/// A counter of heartbeats, for callers that want to know whether a NIC is alive.
pub fn heartbeat(region: &ShmRegion) -> u64 {
    region.heartbeat().load(Ordering::Relaxed)
}
