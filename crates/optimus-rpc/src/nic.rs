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

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::frame::{self, FrameHeader, FrameKind, Status, FLAG_CHECKSUM, FLAG_RETRY, HEADER_BYTES};
use crate::ring::{Consumer, Producer, PushError};
use crate::shm::{
    RegionLayout, ShmRegion, MODE_DOORBELL, QP_CLIENT, QP_DETACHING, QP_FREE, QP_WORKER,
};
use crate::transport::{PeerId, Transport, TxQueue};
use crate::{IdlePolicy, RpcError};

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
}

impl<F: FnMut(u16, &[u8], &mut Vec<u8>) -> Status + Send> Handler for F {
    fn handle(&mut self, method: u16, request: &[u8], response: &mut Vec<u8>) -> Status {
        self(method, request, response)
    }
}

/// Wakes async callers of one QP when the NIC writes completions (in-process only).
#[derive(Default)]
pub(crate) struct Notifier {
    armed: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
}

impl Notifier {
    pub(crate) fn arm(&self, w: &Waker) {
        let mut ws = self.wakers.lock().unwrap_or_else(|e| e.into_inner());
        if !ws.iter().any(|x| x.will_wake(w)) {
            ws.push(w.clone());
        }
        self.armed.store(true, Ordering::SeqCst);
        drop(ws);
        fence(Ordering::SeqCst);
    }

    #[inline]
    fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.armed.load(Ordering::Relaxed) && self.armed.swap(false, Ordering::AcqRel) {
            let ws = std::mem::take(&mut *self.wakers.lock().unwrap_or_else(|e| e.into_inner()));
            for w in ws {
                w.wake();
            }
        }
    }
}

type ConnectReply = Arc<(Mutex<Option<Result<u32, RpcError>>>, Condvar)>;

enum ControlReq {
    Connect { addr: String, reply: ConnectReply },
    Close { conn: u32 },
}

/// State shared between the NIC and the in-process handles.
pub(crate) struct NicShared {
    pub(crate) region: Arc<ShmRegion>,
    control: Mutex<Vec<ControlReq>>,
    control_flag: AtomicBool,
    pub(crate) notifiers: Mutex<Vec<Option<Arc<Notifier>>>>,
    stats: Mutex<NicStats>,
    pub(crate) max_payload: usize,
    pub(crate) call_timeout: Duration,
    local_addr: String,
}

/// A cloneable handle to a NIC for threads of the same process: attach clients and workers,
/// open and close connections, read counters.
#[derive(Clone)]
pub struct NicHandle {
    pub(crate) shared: Arc<NicShared>,
}

impl NicHandle {
    /// The shared-memory region (give its path to other processes).
    pub fn region(&self) -> &Arc<ShmRegion> {
        &self.shared.region
    }

    /// The transport address other NICs connect to.
    pub fn local_addr(&self) -> &str {
        &self.shared.local_addr
    }

    /// Largest payload a call may carry.
    pub fn max_payload(&self) -> usize {
        self.shared.max_payload
    }

    /// Opens a connection to the NIC at `addr`; returns the connection id for calls.
    ///
    /// # Errors
    /// The address is unreachable or the server does not answer within `wait`.
    pub fn connect(&self, addr: &str, wait: Duration) -> Result<u32, RpcError> {
        let reply: ConnectReply = Arc::new((Mutex::new(None), Condvar::new()));
        self.push_control(ControlReq::Connect {
            addr: addr.to_string(),
            reply: reply.clone(),
        });
        let (m, cv) = &*reply;
        let deadline = Instant::now() + wait;
        let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(r) = g.take() {
                return r;
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(RpcError::Timeout);
            }
            g = cv
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Closes connection `conn`; its calls in flight fail with `Disconnected`.
    pub fn close(&self, conn: u32) {
        self.push_control(ControlReq::Close { conn });
    }

    /// Counters as of the last control pass (or the end of the NIC thread).
    pub fn stats(&self) -> NicStats {
        *self.shared.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push_control(&self, r: ControlReq) {
        self.shared
            .control
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r);
        self.shared.control_flag.store(true, Ordering::Release);
    }
}

/// Where a request came from, so its response can go back.
#[derive(Clone, Copy)]
enum Origin {
    /// A client QP of this NIC (connection 0): response to `qp` with the caller's id.
    Local { qp: u16, host_id: u64 },
    /// A remote client: server connection index and sequence number.
    Remote { sconn: u32, seq: u64 },
    /// The caller left; the response is discarded.
    Gone,
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

#[derive(Default)]
struct OutSlot {
    seq: u64,
    qp: u16,
    host_id: u64,
    method: u16,
    deadline: Option<Instant>,
    tries: u32,
    frame: Vec<u8>,
}

enum ConnState {
    Connecting {
        nonce: u64,
        deadline: Instant,
        tries: u32,
        reply: ConnectReply,
    },
    Open,
    Closed,
}

struct ClientConn {
    /// What the application and the server's responses name this connection by.
    handle: u32,
    state: ConnState,
    peer: PeerId,
    remote_id: u32,
    next_seq: u64,
    outstanding: usize,
    /// Empty once the connection has closed (its index then waits in `cconn_free`).
    window: Box<[OutSlot]>,
}

#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum Dedup {
    #[default]
    Empty,
    Running,
    Done,
}

#[derive(Default)]
struct DedupSlot {
    seq: u64,
    state: Dedup,
    response: Vec<u8>,
}

struct ServerConn {
    /// Tells this connection from earlier ones at the same index.
    gen: u64,
    peer: PeerId,
    nonce: u64,
    client_handle: u32,
    /// Empty until the connection's first request.
    window: Box<[DedupSlot]>,
}

/// The responses a server keeps in its connections' windows, oldest first, within a byte
/// budget over all connections ([`NicConfig::response_cache_bytes`]).
struct ResponseCache {
    budget: usize,
    bytes: usize,
    /// Slots holding a response.
    live: usize,
    /// (connection index, its generation, sequence number) of each response as it was cached;
    /// an entry whose slot has since been reused or whose connection closed is stale.
    order: VecDeque<(u32, u64, u64)>,
    /// Generation of the next server connection.
    next_gen: u64,
}

impl ResponseCache {
    /// Frees `slot`'s response, if it holds one.
    fn release(&mut self, slot: &mut DedupSlot) {
        if !slot.response.is_empty() {
            self.bytes -= slot.response.len();
            self.live -= 1;
            slot.response = Vec::new();
        }
    }

    /// Counts the response just stored in slot `seq` of connection `k`, then drops the
    /// oldest responses while over budget, and stale entries so that `order` stays within
    /// twice the live ones. Returns how many responses it dropped.
    fn admit(&mut self, sconns: &mut [Option<ServerConn>], k: u32, seq: u64) -> u64 {
        let Some(Some(conn)) = sconns.get(k as usize) else {
            return 0;
        };
        let len = conn.window[(seq & WINDOW_MASK) as usize].response.len();
        if len == 0 {
            return 0;
        }
        self.bytes += len;
        self.live += 1;
        self.order.push_back((k, conn.gen, seq));
        let mut evicted = 0;
        while self.bytes > self.budget {
            let Some(e) = self.order.pop_front() else {
                break;
            };
            if let Some(slot) = cached_slot(sconns, e) {
                self.release(slot);
                evicted += 1;
            }
        }
        while let Some(&e) = self.order.front() {
            if cached_slot(sconns, e).is_some() {
                break;
            }
            self.order.pop_front();
        }
        if self.order.len() > 2 * self.live + WINDOW {
            self.order.retain(|&e| cached_slot(sconns, e).is_some());
        }
        evicted
    }
}

/// The slot an entry of [`ResponseCache::order`] names, if it still holds that response.
fn cached_slot(
    sconns: &mut [Option<ServerConn>],
    (k, gen, seq): (u32, u64, u64),
) -> Option<&mut DedupSlot> {
    let conn = sconns.get_mut(k as usize)?.as_mut()?;
    if conn.gen != gen {
        return None;
    }
    let slot = &mut conn.window[(seq & WINDOW_MASK) as usize];
    (slot.seq == seq && !slot.response.is_empty()).then_some(slot)
}

struct Pending {
    gen: u32,
    origin: Origin,
    worker: u16,
    live: bool,
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

impl Core {
    // ---------------------------------------------------------------- control (cold)

    #[cold]
    #[inline(never)]
    fn control<T: Transport>(&mut self, t: &mut T) {
        self.now = Instant::now();
        self.last_control_seq = self.region.control_seq().load(Ordering::Acquire);
        self.region.heartbeat().fetch_add(1, Ordering::Relaxed);
        self.scan_qps();
        self.closed_peers.clear();
        let mut closed = std::mem::take(&mut self.closed_peers);
        t.poll_events(&mut closed);
        for p in closed.drain(..) {
            self.peer_lost(p);
        }
        self.closed_peers = closed;
        if self.shared.control_flag.swap(false, Ordering::AcqRel) {
            let reqs = std::mem::take(
                &mut *self
                    .shared
                    .control
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()),
            );
            for r in reqs {
                match r {
                    ControlReq::Connect { addr, reply } => self.start_connect(t, &addr, reply),
                    ControlReq::Close { conn } => {
                        if let Some(i) = self.client_conn(conn) {
                            self.close_client_conn(i, true);
                        }
                    }
                }
            }
        }
        if self.now >= self.next_timer {
            self.timers();
            self.next_timer = self.now + (self.cfg.timeout / 4).max(Duration::from_micros(200));
        }
        // Sweep every QP in doorbell mode too, so a lost doorbell costs latency, not a call.
        self.doorbell_left = u64::MAX;
        self.publish_stats();
    }

    fn publish_stats(&mut self) {
        let s = self.snapshot();
        *self.shared.stats.lock().unwrap_or_else(|e| e.into_inner()) = s;
    }

    /// The counters, with the polls and the cached response bytes as of now.
    fn snapshot(&self) -> NicStats {
        NicStats {
            polls: self.polls,
            cached_response_bytes: self.responses.bytes as u64,
            ..self.stats
        }
    }

    fn scan_qps(&mut self) {
        let check_owners = self.now >= self.next_liveness;
        if check_owners {
            self.next_liveness = self.now + Duration::from_millis(500);
        }
        let mut changed = false;
        for i in 0..self.qps.len() {
            let mut st = self.region.qp_state(i);
            if check_owners
                && (st == QP_CLIENT || st == QP_WORKER)
                && !owner_alive(self.region.qp_owner(i))
            {
                st = QP_DETACHING;
            }
            let role = self.qps[i].role;
            if st == role {
                continue;
            }
            changed = true;
            match st {
                QP_CLIENT | QP_WORKER if role == QP_FREE => {
                    self.qps[i].role = st;
                    self.qps[i].notifier = self
                        .shared
                        .notifiers
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())[i]
                        .clone();
                }
                QP_DETACHING | QP_FREE => self.detach_qp(i),
                _ => {}
            }
        }
        // Notifiers are registered just after a QP is claimed, so look for them on every pass.
        {
            let ns = self
                .shared
                .notifiers
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            for (i, q) in self.qps.iter_mut().enumerate() {
                if q.role == QP_CLIENT {
                    let n = ns.get(i).cloned().flatten();
                    let same = match (&q.notifier, &n) {
                        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                        (None, None) => true,
                        _ => false,
                    };
                    if !same {
                        q.notifier = n;
                    }
                }
            }
        }
        if changed {
            self.active = (0..self.qps.len())
                .filter(|&i| self.qps[i].role != QP_FREE)
                .map(|i| i as u16)
                .collect();
            self.workers = (0..self.qps.len())
                .filter(|&i| self.qps[i].role == QP_WORKER)
                .map(|i| i as u16)
                .collect();
            // Requests waiting for a worker when the last one left get an answer now.
            if self.workers.is_empty() && self.handler.is_none() {
                while let Some((origin, method, _)) = self.backlog.pop_front() {
                    self.complete(origin, method, Status::Unavailable, &[]);
                }
            }
        }
    }

    fn detach_qp(&mut self, i: usize) {
        let q = i as u16;
        // Calls this QP made: their answers have nowhere to go.
        for p in self.pending.iter_mut() {
            if p.live {
                if let Origin::Local { qp, .. } = p.origin {
                    if qp == q {
                        p.origin = Origin::Gone;
                    }
                }
            }
        }
        for (o, _, _) in self.backlog.iter_mut() {
            if matches!(o, Origin::Local { qp, .. } if *qp == q) {
                *o = Origin::Gone;
            }
        }
        for c in self.cconns.iter_mut() {
            for s in c.window.iter_mut() {
                if s.seq != 0 && s.qp == q {
                    s.qp = NO_QP;
                }
            }
        }
        // Requests this worker held: answer them so each caller gets exactly one outcome.
        if self.qps[i].role == QP_WORKER {
            let stranded: Vec<(usize, Origin)> = self
                .pending
                .iter()
                .enumerate()
                .filter(|(_, p)| p.live && p.worker == q)
                .map(|(k, p)| (k, p.origin))
                .collect();
            for (k, origin) in stranded {
                self.free_pending(k);
                self.complete(origin, 0, Status::Unavailable, &[]);
            }
        }
        let qp = &mut self.qps[i];
        qp.stall.clear();
        qp.rx_dirty = false;
        qp.in_flight = 0;
        qp.notifier = None;
        qp.role = QP_FREE;
        self.region.reset_rings(i);
        qp.tx.resync();
        qp.rx.resync();
        if self.region.qp_state(i) != QP_FREE {
            self.region.free(i);
        }
    }

    fn start_connect<T: Transport>(&mut self, t: &mut T, addr: &str, reply: ConnectReply) {
        let peer = match t.connect(addr) {
            Ok(p) => p,
            Err(e) => return answer(&reply, Err(e.into())),
        };
        // A closed connection's index again, under a handle its earlier ones never had.
        let (i, reuses) = match self.cconn_free.pop() {
            Some(i) => (
                i,
                (self.cconns[i as usize].handle >> HANDLE_INDEX_BITS).wrapping_add(1),
            ),
            None if self.cconns.len() < MAX_CLIENT_CONNS => (self.cconns.len() as u32, 0),
            None => return answer(&reply, Err(RpcError::Backpressure)),
        };
        let handle = (reuses << HANDLE_INDEX_BITS) | (i + 1);
        self.nonce += 1;
        let nonce = self.nonce;
        let mut window = Vec::with_capacity(WINDOW);
        window.resize_with(WINDOW, OutSlot::default);
        let conn = ClientConn {
            handle,
            state: ConnState::Connecting {
                nonce,
                deadline: self.now + self.cfg.timeout,
                tries: 0,
                reply,
            },
            peer,
            remote_id: 0,
            next_seq: 1,
            outstanding: 0,
            window: window.into_boxed_slice(),
        };
        match self.cconns.get_mut(i as usize) {
            Some(c) => *c = conn,
            None => self.cconns.push(conn),
        }
        self.send_connect(i as usize);
    }

    /// The index of the client connection `handle` names, unless it has closed.
    fn client_conn(&self, handle: u32) -> Option<usize> {
        let i = (handle & HANDLE_INDEX_MASK).checked_sub(1)? as usize;
        let c = self.cconns.get(i)?;
        (c.handle == handle && !matches!(c.state, ConnState::Closed)).then_some(i)
    }

    fn send_connect(&mut self, i: usize) {
        let c = &self.cconns[i];
        if let ConnState::Connecting { nonce, .. } = c.state {
            let h = FrameHeader {
                request_id: nonce,
                aux: c.handle,
                ..FrameHeader::new(FrameKind::Connect)
            };
            let peer = c.peer;
            let ck = self.checksum;
            self.txq.push_with(peer, |b| append_frame(b, &h, &[], ck));
        }
    }

    /// Closes client connection `i` (not closed yet): its calls in flight fail with
    /// `Disconnected`, and its window and index are freed.
    fn close_client_conn(&mut self, i: usize, tell_peer: bool) {
        let c = &mut self.cconns[i];
        if let ConnState::Connecting { reply, .. } = &c.state {
            answer(reply, Err(RpcError::Disconnected));
        }
        let was_open = matches!(c.state, ConnState::Open);
        let (peer, remote) = (c.peer, c.remote_id);
        self.stats.conns_closed += 1;
        self.fail_window(i, Status::Disconnected);
        self.retire_client_conn(i);
        if tell_peer && was_open {
            let h = FrameHeader {
                conn_id: remote,
                ..FrameHeader::new(FrameKind::Close)
            };
            let ck = self.checksum;
            self.txq.push_with(peer, |b| append_frame(b, &h, &[], ck));
        }
    }

    /// Marks client connection `i` closed and frees its window and index.
    fn retire_client_conn(&mut self, i: usize) {
        let c = &mut self.cconns[i];
        debug_assert_eq!(c.outstanding, 0);
        c.state = ConnState::Closed;
        c.window = Box::default();
        self.cconn_free.push(i as u32);
    }

    /// Completes every call in flight on client connection `i` with `status`.
    fn fail_window(&mut self, i: usize, status: Status) {
        for k in 0..self.cconns[i].window.len() {
            if self.cconns[i].window[k].seq != 0 {
                self.end_client_call(i, k, status, &[]);
            }
        }
    }

    /// Completes the call in slot `k` of client connection `i`: its outcome goes to its QP
    /// (unless that has left) and the slot is free again. A frame kept for resending that is
    /// larger than [`KEPT_FRAME_BYTES`] is freed, so a window holds large frames only while
    /// their calls are in flight.
    fn end_client_call(&mut self, i: usize, k: usize, status: Status, payload: &[u8]) {
        let c = &mut self.cconns[i];
        let s = &mut c.window[k];
        let (qp, host_id, method) = (s.qp, s.host_id, s.method);
        s.seq = 0;
        s.deadline = None;
        if s.frame.capacity() > KEPT_FRAME_BYTES {
            s.frame = Vec::new();
        }
        c.outstanding -= 1;
        if qp != NO_QP {
            let h = completion_header(c.handle, host_id, method, status);
            self.deliver_or_stall(qp as usize, &h, payload);
        }
    }

    fn peer_lost(&mut self, p: PeerId) {
        for i in 0..self.cconns.len() {
            let c = &self.cconns[i];
            if c.peer == p && !matches!(c.state, ConnState::Closed) {
                self.close_client_conn(i, false);
            }
        }
        for k in 0..self.sconns.len() {
            if self.sconns[k].as_ref().is_some_and(|s| s.peer == p) {
                self.drop_server_conn(k as u32);
            }
        }
    }

    fn drop_server_conn(&mut self, k: u32) {
        if let Some(mut s) = self.sconns.get_mut(k as usize).and_then(|s| s.take()) {
            for slot in s.window.iter_mut() {
                self.responses.release(slot);
            }
            self.sconn_by_nonce.remove(&(s.peer, s.nonce));
            self.sconn_free.push(k);
            self.stats.conns_closed += 1;
            // Calls of this connection still on workers: their answers are discarded.
            for p in self.pending.iter_mut() {
                if p.live && matches!(p.origin, Origin::Remote { sconn, .. } if sconn == k) {
                    p.origin = Origin::Gone;
                }
            }
        }
    }

    fn timers(&mut self) {
        let now = self.now;
        for i in 0..self.cconns.len() {
            match &mut self.cconns[i].state {
                ConnState::Connecting {
                    deadline,
                    tries,
                    reply,
                    ..
                } => {
                    if *deadline <= now {
                        if *tries >= self.cfg.max_retries {
                            answer(reply, Err(RpcError::Timeout));
                            self.retire_client_conn(i);
                            continue;
                        }
                        *tries += 1;
                        *deadline = now + self.cfg.timeout;
                        self.send_connect(i);
                    }
                }
                ConnState::Open => {}
                ConnState::Closed => continue,
            }
            if self.cconns[i].outstanding == 0 {
                continue;
            }
            for k in 0..WINDOW {
                let s = &mut self.cconns[i].window[k];
                if s.seq == 0 || s.deadline.is_none_or(|d| d > now) {
                    continue;
                }
                if s.tries < self.cfg.max_retries && !s.frame.is_empty() {
                    if self.txq.room() == 0 {
                        break;
                    }
                    s.tries += 1;
                    s.deadline = Some(now + self.cfg.timeout);
                    if s.frame.len() >= HEADER_BYTES {
                        let flags = u16::from_le_bytes([s.frame[4], s.frame[5]]) | FLAG_RETRY;
                        s.frame[4..6].copy_from_slice(&flags.to_le_bytes());
                        if self.checksum {
                            frame::seal(&mut s.frame);
                        }
                    }
                    let peer = self.cconns[i].peer;
                    let f = &self.cconns[i].window[k].frame;
                    self.txq.push(peer, f);
                    self.stats.retransmits += 1;
                } else {
                    self.stats.timeouts += 1;
                    self.end_client_call(i, k, Status::Timeout, &[]);
                }
            }
        }
    }

    // ---------------------------------------------------------------- RX: frames from the wire

    fn can_take_requests(&self, n: usize) -> bool {
        if self.handler.is_some() || self.workers.is_empty() {
            return true;
        }
        self.pending.len() + n <= MAX_PENDING || self.pending_free.len() >= n
    }

    #[inline]
    fn on_wire(&mut self, peer: PeerId, bytes: &[u8]) {
        self.stats.rx_frames += 1;
        let (h, kind, payload) = match frame::check_frame(bytes, self.max_payload) {
            Ok(x) => x,
            Err(e) => return self.count_bad(&e),
        };
        if self.checksum && h.flags & FLAG_CHECKSUM == 0 {
            self.stats.dropped_malformed += 1; // every frame on this network carries a checksum
            return;
        }
        match kind {
            FrameKind::Request => self.server_request(peer, &h, payload),
            FrameKind::Response => self.client_response(peer, &h, payload),
            FrameKind::Connect => self.server_connect(peer, &h),
            FrameKind::ConnectAck => self.client_connect_ack(peer, &h),
            FrameKind::Close => self.server_close(peer, &h),
            FrameKind::Pad => self.stats.dropped_malformed += 1,
        }
    }

    #[cold]
    fn count_bad(&mut self, e: &RpcError) {
        match e {
            RpcError::BadChecksum => self.stats.dropped_checksum += 1,
            RpcError::TooLarge { .. } => self.stats.dropped_oversized += 1,
            RpcError::CorruptRing(_) => self.stats.corrupt_rings += 1,
            _ => self.stats.dropped_malformed += 1,
        }
    }

    fn server_conn_index(&self, peer: PeerId, id: u32) -> Option<u32> {
        if id >> EPOCH_SHIFT != self.epoch {
            return None;
        }
        let k = id & SCONN_MASK;
        match self.sconns.get(k as usize) {
            Some(Some(s)) if s.peer == peer => Some(k),
            _ => None,
        }
    }

    fn server_connect(&mut self, peer: PeerId, h: &FrameHeader) {
        let nonce = h.request_id;
        let k = match self.sconn_by_nonce.get(&(peer, nonce)) {
            Some(k) => *k,
            None => {
                let k = match self.sconn_free.pop() {
                    Some(k) => k,
                    None if self.sconns.len() < self.cfg.max_server_conns.min(MAX_SERVER_CONNS) => {
                        self.sconns.push(None);
                        self.sconns.len() as u32 - 1
                    }
                    None => {
                        self.stats.conns_refused += 1;
                        return; // full: the client times out
                    }
                };
                self.responses.next_gen += 1;
                self.sconns[k as usize] = Some(ServerConn {
                    gen: self.responses.next_gen,
                    peer,
                    nonce,
                    client_handle: h.aux,
                    window: Box::default(),
                });
                self.sconn_by_nonce.insert((peer, nonce), k);
                self.stats.conns_opened += 1;
                k
            }
        };
        let ack = FrameHeader {
            conn_id: (self.epoch << EPOCH_SHIFT) | k,
            request_id: nonce,
            aux: h.aux,
            ..FrameHeader::new(FrameKind::ConnectAck)
        };
        let ck = self.checksum;
        self.txq.push_with(peer, |b| append_frame(b, &ack, &[], ck));
    }

    fn server_close(&mut self, peer: PeerId, h: &FrameHeader) {
        if let Some(k) = self.server_conn_index(peer, h.conn_id) {
            self.drop_server_conn(k);
        }
    }

    fn client_connect_ack(&mut self, peer: PeerId, h: &FrameHeader) {
        let Some(i) = self.client_conn(h.aux) else {
            self.stats.late_responses += 1;
            return;
        };
        let c = &mut self.cconns[i];
        if c.peer != peer {
            return;
        }
        if let ConnState::Connecting { nonce, reply, .. } = &c.state {
            if *nonce == h.request_id {
                answer(reply, Ok(h.aux));
                c.remote_id = h.conn_id;
                c.state = ConnState::Open;
                self.stats.conns_opened += 1;
            }
        }
    }

    fn server_request(&mut self, peer: PeerId, h: &FrameHeader, payload: &[u8]) {
        let Some(k) = self.server_conn_index(peer, h.conn_id) else {
            // Unknown connection (e.g. this server restarted): tell the caller, run nothing.
            self.stats.unknown_conn += 1;
            let r = FrameHeader {
                conn_id: h.aux,
                request_id: h.request_id,
                method_id: h.method_id,
                aux: Status::Disconnected as u32,
                ..FrameHeader::new(FrameKind::Response)
            };
            let ck = self.checksum;
            self.txq.push_with(peer, |b| append_frame(b, &r, &[], ck));
            return;
        };
        let seq = h.request_id;
        let conn = self.sconns[k as usize].as_mut().expect("index checked");
        if conn.window.is_empty() {
            let mut window = Vec::with_capacity(WINDOW);
            window.resize_with(WINDOW, DedupSlot::default);
            conn.window = window.into_boxed_slice();
        }
        let slot = &mut conn.window[(seq & WINDOW_MASK) as usize];
        if seq == 0 || slot.seq > seq {
            self.stats.stale_requests += 1;
            return;
        }
        if slot.seq == seq {
            self.stats.duplicate_requests += 1;
            if slot.state == Dedup::Done && !slot.response.is_empty() {
                self.txq.push(peer, &slot.response);
            }
            return;
        }
        self.responses.release(slot);
        slot.seq = seq;
        slot.state = Dedup::Running;
        self.dispatch(Origin::Remote { sconn: k, seq }, h.method_id, payload);
    }

    fn client_response(&mut self, peer: PeerId, h: &FrameHeader, payload: &[u8]) {
        let handle = h.conn_id;
        let Some(i) = self.client_conn(handle) else {
            self.stats.late_responses += 1;
            return;
        };
        let c = &self.cconns[i];
        let s = &c.window[(h.request_id & WINDOW_MASK) as usize];
        if c.peer != peer || s.seq == 0 || s.seq != h.request_id {
            self.stats.late_responses += 1;
            return;
        }
        let status = Status::from_aux(h.aux);
        if s.qp != NO_QP {
            self.stats.responses_delivered += 1;
        }
        self.end_client_call(i, (h.request_id & WINDOW_MASK) as usize, status, payload);
        if status == Status::Disconnected {
            // The server no longer knows this connection: every other call on it fails too.
            self.close_client_conn(i, false);
        }
    }

    // ---------------------------------------------------------------- dispatch and completion

    fn dispatch(&mut self, origin: Origin, method: u16, payload: &[u8]) {
        self.stats.requests_served += 1;
        if let Some(h) = self.handler.as_mut() {
            let mut out = std::mem::take(&mut self.scratch);
            out.clear();
            let st = h.handle(method, payload, &mut out);
            self.complete(origin, method, st, &out);
            self.scratch = out;
            return;
        }
        if self.workers.is_empty() {
            self.complete(origin, method, Status::Unavailable, &[]);
            return;
        }
        if !self.backlog.is_empty() || !self.send_to_worker(origin, method, payload) {
            self.backlog.push_back((origin, method, payload.to_vec()));
        }
    }

    /// Hands a request to a worker chosen by the balance policy; `false` if all are full.
    fn send_to_worker(&mut self, origin: Origin, method: u16, payload: &[u8]) -> bool {
        let n = self.workers.len();
        if n == 0 {
            return false;
        }
        let first = match self.cfg.balance {
            Balance::RoundRobin => {
                self.rr = (self.rr + 1) % n;
                self.rr
            }
            Balance::QueueDepth => (0..n)
                .min_by_key(|&k| self.qps[self.workers[k] as usize].in_flight)
                .unwrap_or(0),
            Balance::StaticByConnection => match origin {
                Origin::Remote { sconn, .. } => sconn as usize % n,
                Origin::Local { qp, .. } => qp as usize % n,
                Origin::Gone => 0,
            },
        };
        let k = match self.pending_free.pop() {
            Some(k) => k as usize,
            None => {
                self.pending.push(Pending {
                    gen: 0,
                    origin: Origin::Gone,
                    worker: 0,
                    live: false,
                });
                self.pending.len() - 1
            }
        };
        let token = (u64::from(self.pending[k].gen) << 32) | k as u64;
        let h = FrameHeader {
            method_id: method,
            request_id: token,
            ..FrameHeader::new(FrameKind::Request)
        };
        for step in 0..n {
            let w = self.workers[(first + step) % n];
            let qp = &mut self.qps[w as usize];
            let mut r = qp.rx.push(&h, payload);
            if r == Err(PushError::Full) {
                qp.rx.publish();
                r = qp.rx.push(&h, payload);
            }
            match r {
                Ok(()) => {
                    qp.rx_dirty = true;
                    qp.in_flight += 1;
                    let p = &mut self.pending[k];
                    p.origin = origin;
                    p.worker = w;
                    p.live = true;
                    return true;
                }
                Err(PushError::TooLarge) => {
                    self.pending_free.push(k as u32);
                    self.complete(origin, method, Status::TooLarge, &[]);
                    return true;
                }
                Err(PushError::Full) => {}
            }
        }
        self.pending_free.push(k as u32);
        false
    }

    fn free_pending(&mut self, k: usize) {
        let p = &mut self.pending[k];
        p.live = false;
        p.gen = p.gen.wrapping_add(1);
        let w = p.worker as usize;
        self.pending_free.push(k as u32);
        if let Some(q) = self.qps.get_mut(w) {
            q.in_flight = q.in_flight.saturating_sub(1);
        }
    }

    /// Sends a call's outcome to its origin.
    fn complete(&mut self, origin: Origin, method: u16, status: Status, payload: &[u8]) {
        let (status, payload) = if payload.len() > self.max_payload {
            (Status::TooLarge, &[][..])
        } else {
            (status, payload)
        };
        match origin {
            Origin::Local { qp, host_id } => {
                let h = completion_header(LOCAL_CONN, host_id, method, status);
                self.deliver_or_stall(qp as usize, &h, payload);
                self.stats.responses_delivered += 1;
            }
            Origin::Remote { sconn, seq } => {
                let Some(Some(conn)) = self.sconns.get_mut(sconn as usize) else {
                    return;
                };
                let h = FrameHeader {
                    conn_id: conn.client_handle,
                    request_id: seq,
                    method_id: method,
                    aux: status as u32,
                    ..FrameHeader::new(FrameKind::Response)
                };
                let peer = conn.peer;
                let ck = self.checksum;
                let slot = &mut conn.window[(seq & WINDOW_MASK) as usize];
                if slot.seq == seq {
                    slot.state = Dedup::Done;
                    if self.reliable {
                        // Nothing will ask again: send without keeping a copy.
                        slot.response.clear();
                        if !self
                            .txq
                            .push_with(peer, |b| append_frame(b, &h, payload, ck))
                        {
                            self.stats.backpressure += 1;
                        }
                    } else {
                        slot.response.reserve_exact(HEADER_BYTES + payload.len());
                        wire_frame(&mut slot.response, &h, payload, ck);
                        if !self.txq.push(peer, &slot.response) {
                            self.stats.backpressure += 1; // the retransmission gets the cached copy
                        }
                        self.stats.responses_evicted +=
                            self.responses.admit(&mut self.sconns, sconn, seq);
                    }
                }
            }
            Origin::Gone => {}
        }
    }

    /// Writes a completion to QP `qp` unless it is stalled or full.
    #[inline]
    fn try_deliver(&mut self, qp: usize, h: &FrameHeader, payload: &[u8]) -> bool {
        let q = &mut self.qps[qp];
        if q.role == QP_FREE {
            return true; // nobody to tell
        }
        if !flush_stall(q) {
            return false;
        }
        let mut r = q.rx.push(h, payload);
        if r == Err(PushError::Full) {
            q.rx.publish();
            r = q.rx.push(h, payload);
        }
        match r {
            Ok(()) => {
                q.rx_dirty = true;
                true
            }
            Err(PushError::Full) => false,
            Err(PushError::TooLarge) => {
                let e = completion_header(h.conn_id, h.request_id, h.method_id, Status::TooLarge);
                let ok = q.rx.push(&e, &[]).is_ok();
                q.rx_dirty |= ok;
                ok
            }
        }
    }

    /// Writes a completion, queueing it behind the QP's stalled ones if the ring is full: an
    /// application that stops reading its completions loses none of them.
    fn deliver_or_stall(&mut self, qp: usize, h: &FrameHeader, payload: &[u8]) {
        if !self.try_deliver(qp, h, payload) {
            let q = &mut self.qps[qp];
            let (h, payload) = if payload.len() > q.rx.max_payload() {
                let e = completion_header(h.conn_id, h.request_id, h.method_id, Status::TooLarge);
                (e, &[][..])
            } else {
                (*h, payload)
            };
            let mut f = Vec::with_capacity(HEADER_BYTES + payload.len());
            f.extend_from_slice(
                &FrameHeader {
                    payload_len: payload.len() as u32,
                    ..h
                }
                .encode(),
            );
            f.extend_from_slice(payload);
            q.stall.push_back(f);
            self.stats.backpressure += 1;
        }
    }

    // ---------------------------------------------------------------- TX: application rings

    fn poll_rings(&mut self) -> usize {
        let mut work = 0;
        if !self.backlog.is_empty() {
            work += self.drain_backlog();
        }
        let doorbell = self.cfg.mode == PollMode::Doorbell;
        let bits = if doorbell {
            let db = self.region.doorbell();
            let rung = if db.load(Ordering::Relaxed) != 0 {
                db.swap(0, Ordering::AcqRel)
            } else {
                0
            };
            let b = rung | self.doorbell_left;
            self.doorbell_left = 0;
            b
        } else {
            u64::MAX
        };
        if bits == 0 {
            return work;
        }
        for a in 0..self.active.len() {
            let i = self.active[a] as usize;
            if bits & (1u64 << i) == 0 {
                continue;
            }
            let (n, more) = match self.qps[i].role {
                QP_CLIENT => self.client_ring(i),
                QP_WORKER => self.worker_ring(i),
                _ => (0, false),
            };
            work += n;
            if more && doorbell {
                self.doorbell_left |= 1u64 << i;
            }
        }
        work
    }

    fn drain_backlog(&mut self) -> usize {
        let mut n = 0;
        while let Some((origin, method, payload)) = self.backlog.pop_front() {
            if matches!(origin, Origin::Gone) {
                continue;
            }
            if !self.send_to_worker(origin, method, &payload) {
                self.backlog.push_front((origin, method, payload));
                self.stats.backpressure += 1;
                break;
            }
            n += 1;
        }
        n
    }

    /// The next frame published on QP `i`'s tx ring, skipping (and counting) frames that do
    /// not parse; `None` once the ring is empty. The payload stays the producer's until the
    /// caller advances past the frame and releases it.
    fn peek_tx(&mut self, i: usize) -> Option<(FrameHeader, FrameKind, *const [u8])> {
        let max = self.max_payload;
        loop {
            let q = &mut self.qps[i];
            match q.tx.peek(max)? {
                Ok(p) => return Some((p.header, p.kind, p.payload as *const [u8])),
                Err(e) => {
                    q.tx.advance();
                    self.count_bad(&e);
                }
            }
        }
    }

    /// Requests from client QP `i`. Returns frames taken and whether more may be waiting.
    fn client_ring(&mut self, i: usize) -> (usize, bool) {
        let mut n = 0;
        while n < TX_BATCH {
            if !flush_stall(&mut self.qps[i]) {
                self.stats.backpressure += 1;
                return (n, true);
            }
            let Some((h, kind, payload)) = self.peek_tx(i) else {
                break;
            };
            if kind != FrameKind::Request {
                self.qps[i].tx.advance();
                self.stats.dropped_malformed += 1;
                continue;
            }
            // SAFETY: the frame is published and not yet released, so its producer leaves these
            // bytes alone until `advance` + `release` below, after the request is handled; the
            // NIC never writes a tx ring's data.
            let payload = unsafe { &*payload };
            let taken = if h.conn_id == LOCAL_CONN {
                self.local_request(i, &h, payload)
            } else {
                self.remote_request(i, &h, payload)
            };
            if !taken {
                self.stats.backpressure += 1;
                self.qps[i].tx.release();
                return (n, true);
            }
            self.qps[i].tx.advance();
            n += 1;
        }
        self.qps[i].tx.release();
        (n, n == TX_BATCH)
    }

    fn local_request(&mut self, i: usize, h: &FrameHeader, payload: &[u8]) -> bool {
        if !self.can_take_requests(1) {
            return false;
        }
        let origin = Origin::Local {
            qp: i as u16,
            host_id: h.request_id,
        };
        self.dispatch(origin, h.method_id, payload);
        true
    }

    fn remote_request(&mut self, i: usize, h: &FrameHeader, payload: &[u8]) -> bool {
        let handle = h.conn_id;
        let open = self
            .client_conn(handle)
            .filter(|&ci| matches!(self.cconns[ci].state, ConnState::Open));
        let Some(ci) = open else {
            let ch = completion_header(handle, h.request_id, h.method_id, Status::Disconnected);
            self.deliver_or_stall(i, &ch, &[]);
            return true;
        };
        if self.txq.room() == 0 {
            return false;
        }
        let seq = self.cconns[ci].next_seq;
        if self.cconns[ci].window[(seq & WINDOW_MASK) as usize].seq != 0 {
            return false; // window full
        }
        // One clock read per poll that sends requests (the RX path needs none).
        if self.now_poll != self.polls {
            self.now_poll = self.polls;
            self.now = Instant::now();
        }
        let now = self.now;
        let wire = FrameHeader {
            conn_id: self.cconns[ci].remote_id,
            request_id: seq,
            method_id: h.method_id,
            aux: handle,
            ..FrameHeader::new(FrameKind::Request)
        };
        let (reliable, ck) = (self.reliable, self.checksum);
        // A reliable transport gets one attempt with the whole budget; others one `timeout` per
        // attempt, with the frame kept for resending.
        let timeout = if reliable {
            self.cfg
                .timeout
                .saturating_mul(self.cfg.max_retries.saturating_add(1))
        } else {
            self.cfg.timeout
        };
        let c = &mut self.cconns[ci];
        let peer = c.peer;
        let s = &mut c.window[(seq & WINDOW_MASK) as usize];
        if reliable {
            s.frame.clear();
        } else {
            wire_frame(&mut s.frame, &wire, payload, ck);
        }
        s.seq = seq;
        s.qp = i as u16;
        s.host_id = h.request_id;
        s.method = h.method_id;
        s.tries = 0;
        s.deadline = Some(now + timeout);
        c.next_seq += 1;
        c.outstanding += 1;
        if reliable {
            self.txq
                .push_with(peer, |b| append_frame(b, &wire, payload, ck));
        } else {
            let f = &self.cconns[ci].window[(seq & WINDOW_MASK) as usize].frame;
            self.txq.push(peer, f);
        }
        true
    }

    /// Responses from worker QP `i`.
    fn worker_ring(&mut self, i: usize) -> (usize, bool) {
        let mut n = 0;
        while n < TX_BATCH {
            let Some((h, kind, payload)) = self.peek_tx(i) else {
                break;
            };
            let k = (h.request_id & 0xFFFF_FFFF) as usize;
            let gen = (h.request_id >> 32) as u32;
            let live = kind == FrameKind::Response
                && self
                    .pending
                    .get(k)
                    .is_some_and(|p| p.live && p.gen == gen && p.worker == i as u16);
            if !live {
                self.qps[i].tx.advance();
                self.stats.dropped_malformed += 1;
                continue;
            }
            let origin = self.pending[k].origin;
            let status = Status::from_aux(h.aux);
            // SAFETY: as in `client_ring`: the frame stays untouched until we advance past it.
            let payload = unsafe { &*payload };
            match origin {
                Origin::Local { qp, host_id } => {
                    let ch = completion_header(LOCAL_CONN, host_id, h.method_id, status);
                    if !self.try_deliver(qp as usize, &ch, payload) {
                        self.stats.backpressure += 1;
                        self.qps[i].tx.release();
                        return (n, true);
                    }
                    self.stats.responses_delivered += 1;
                }
                Origin::Remote { .. } => {
                    if self.txq.room() == 0 {
                        self.stats.backpressure += 1;
                        self.qps[i].tx.release();
                        return (n, true);
                    }
                    self.complete(origin, h.method_id, status, payload);
                }
                Origin::Gone => {}
            }
            self.free_pending(k);
            self.qps[i].tx.advance();
            n += 1;
        }
        self.qps[i].tx.release();
        (n, n == TX_BATCH)
    }

    fn publish_rx(&mut self) {
        for a in 0..self.active.len() {
            let q = &mut self.qps[self.active[a] as usize];
            if q.rx_dirty {
                q.rx.publish();
                q.rx_dirty = false;
                if let Some(n) = &q.notifier {
                    n.notify();
                }
            }
        }
    }
}

/// Moves stalled completions into the QP's rx ring, oldest first; true when none is left.
fn flush_stall(q: &mut Qp) -> bool {
    while let Some(f) = q.stall.front() {
        let mut r = q.rx.push_frame(f);
        if r == Err(PushError::Full) {
            q.rx.publish();
            r = q.rx.push_frame(f);
        }
        match r {
            // Stalled frames fit the ring (`deliver_or_stall` shrinks them), so `TooLarge`
            // cannot happen; dropping it still ends the loop.
            Ok(()) | Err(PushError::TooLarge) => {
                q.stall.pop_front();
                q.rx_dirty = true;
            }
            Err(PushError::Full) => return false,
        }
    }
    true
}

fn completion_header(conn: u32, host_id: u64, method: u16, status: Status) -> FrameHeader {
    FrameHeader {
        conn_id: conn,
        request_id: host_id,
        method_id: method,
        aux: status as u32,
        ..FrameHeader::new(FrameKind::Response)
    }
}

/// Writes header + payload into `b` (cleared first), sealed with a checksum if `checksum`.
fn wire_frame(b: &mut Vec<u8>, h: &FrameHeader, payload: &[u8], checksum: bool) {
    b.clear();
    append_frame(b, h, payload, checksum);
}

/// Appends header + payload to `b`, sealed with a checksum if `checksum`.
#[inline]
fn append_frame(b: &mut Vec<u8>, h: &FrameHeader, payload: &[u8], checksum: bool) {
    let start = b.len();
    let h = FrameHeader {
        payload_len: payload.len() as u32,
        flags: h.flags & !FLAG_CHECKSUM,
        checksum: 0,
        ..*h
    };
    b.extend_from_slice(&h.encode());
    b.extend_from_slice(payload);
    if checksum {
        frame::seal(&mut b[start..]);
    }
}

fn answer(reply: &ConnectReply, r: Result<u32, RpcError>) {
    let (m, cv) = &**reply;
    *m.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    cv.notify_all();
}

fn owner_alive(pid: u32) -> bool {
    if pid == 0 || pid == std::process::id() {
        return true;
    }
    // SAFETY: signal 0 only checks that the process exists; no signal is sent.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// A counter of heartbeats, for callers that want to know whether a NIC is alive.
pub fn heartbeat(region: &ShmRegion) -> u64 {
    region.heartbeat().load(Ordering::Relaxed)
}
