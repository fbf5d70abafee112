//! The application side of a call: write a request into the QP's tx ring, find the outcome in
//! its completion ring.
//!
//! [`RpcClient`] owns one client QP and is used by one thread. It offers three threading models:
//!
//! - **synchronous**: [`RpcClient::call`] submits, flushes and polls the completion ring until
//!   its own answer arrives;
//! - **asynchronous with callbacks**: [`RpcClient::call_async`] returns at once, the callback
//!   runs inside a later [`RpcClient::poll`];
//! - **completion queue**: [`RpcClient::submit`] and [`RpcClient::poll`] with a closure that
//!   sees every completed [`CallId`] (how closed-loop benchmarks keep B calls in flight).
//!
//! [`AsyncClient`] wraps a client for `async` code: [`AsyncClient::call`] is a `Future` that
//! works on tokio (or any executor); the NIC wakes it when it writes completions.
//!
//! Requests are published in batches of `batch` (B): the tail index is stored, and the doorbell
//! rung, once per B requests (or on `flush`), so a burst of calls costs one cross-core transfer.
//! Every call ends exactly once: with its response, an error status, or `Timeout` when the
//! deadline passes (a response after that is discarded).

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::frame::{FrameHeader, FrameKind, Status};
use crate::nic::{NicHandle, Notifier};
use crate::ring::{Consumer, Producer, PushError};
use crate::shm::{ShmRegion, MODE_DOORBELL, QP_CLIENT, QP_QUARANTINED};
use crate::{IdlePolicy, RpcError};

/// Identifies one call of one client.
pub type CallId = u64;

/// Most calls one client keeps in flight.
pub const MAX_CLIENT_IN_FLIGHT: usize = 4096;
const SLOT_BITS: u32 = 16;
/// Least time between two scans of the call table for expired deadlines.
const EXPIRE_EVERY_NS: u64 = 1_000_000;
const _: () = assert!(MAX_CLIENT_IN_FLIGHT <= 1 << SLOT_BITS);

/// Client settings.
#[derive(Debug, Clone, Copy)]
pub struct ClientOptions {
    /// Requests written before the tail is published and the doorbell rung (B, 1..=32).
    pub batch: usize,
    /// How long a call may take before it completes with `Timeout` on this side.
    pub call_timeout: Duration,
    /// How a synchronous call waits.
    pub idle: IdlePolicy,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            batch: 1,
            call_timeout: Duration::from_secs(5),
            idle: IdlePolicy::default(),
        }
    }
}

type Callback = Box<dyn FnOnce(Result<&[u8], RpcError>) + Send>;

enum Waiting {
    Free,
    Polled,
    Callback(Callback),
}

struct Slot {
    id: CallId,
    waiting: Waiting,
    /// Coarse monotonic nanoseconds (see [`coarse_now_ns`]).
    deadline_ns: u64,
}

/// One application thread's client QP. See the module docs.
pub struct RpcClient {
    region: Arc<ShmRegion>,
    qp: usize,
    tx: Producer,
    rx: Consumer,
    opts: ClientOptions,
    doorbell: bool,
    unflushed: usize,
    slots: Vec<Slot>,
    free: Vec<u32>,
    generation: u64,
    in_flight: usize,
    idle_polls: u32,
    next_expire_ns: u64,
    max_payload: usize,
    ready: VecDeque<(CallId, Result<Vec<u8>, RpcError>)>,
    notifier: Option<Arc<Notifier>>,
    handle: Option<NicHandle>,
}

impl NicHandle {
    /// Attaches a client QP in this process.
    ///
    /// # Errors
    /// [`RpcError::NoFreeQp`] when every QP is taken.
    pub fn client(&self, mut opts: ClientOptions) -> Result<RpcClient, RpcError> {
        opts.call_timeout = opts.call_timeout.max(self.shared.call_timeout);
        let mut c = RpcClient::attach(self.shared.region.clone(), opts)?;
        c.max_payload = self.shared.max_payload;
        let n = Arc::new(Notifier::default());
        self.shared
            .notifiers
            .lock()
            .unwrap_or_else(|e| e.into_inner())[c.qp] = Some(n.clone());
        // The NIC reads the notifier when it sees the QP's new state; bump so it looks again.
        self.shared
            .region
            .control_seq()
            .fetch_add(1, Ordering::AcqRel);
        c.notifier = Some(n);
        c.handle = Some(self.clone());
        Ok(c)
    }
}

impl RpcClient {
    /// Attaches a client QP of `region`, which may belong to a NIC in another process.
    ///
    /// # Errors
    /// [`RpcError::NoFreeQp`] when every QP is taken.
    pub fn attach(region: Arc<ShmRegion>, opts: ClientOptions) -> Result<Self, RpcError> {
        let qp = region.claim(QP_CLIENT)?;
        // SAFETY: we own QP `qp` now: we use the producer of its tx ring and the consumer of its
        // rx ring; the NIC uses the other ends.
        let (tx, _) = unsafe { region.ring(qp, false) };
        // SAFETY: as above.
        let (_, rx) = unsafe { region.ring(qp, true) };
        let doorbell = region.mode().load(Ordering::Acquire) & MODE_DOORBELL != 0;
        let max_payload = tx.max_payload();
        let n = MAX_CLIENT_IN_FLIGHT;
        let mut slots = Vec::with_capacity(n);
        slots.resize_with(n, || Slot {
            id: 0,
            waiting: Waiting::Free,
            deadline_ns: 0,
        });
        Ok(Self {
            region,
            qp,
            tx,
            rx,
            opts: ClientOptions {
                batch: opts.batch.clamp(1, 32),
                ..opts
            },
            doorbell,
            unflushed: 0,
            slots,
            free: (0..n as u32).rev().collect(),
            generation: 0,
            in_flight: 0,
            idle_polls: 0,
            next_expire_ns: 0,
            max_payload,
            ready: VecDeque::new(),
            notifier: None,
            handle: None,
        })
    }

    /// Attaches to the region file at `path` (a server in another process).
    ///
    /// # Errors
    /// The region cannot be opened, or has no free QP.
    pub fn attach_path(path: &std::path::Path, opts: ClientOptions) -> Result<Self, RpcError> {
        Self::attach(ShmRegion::open(path)?, opts)
    }

    /// The QP this client owns.
    pub fn qp(&self) -> usize {
        self.qp
    }

    /// Calls in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Largest request payload.
    pub fn max_payload(&self) -> usize {
        self.max_payload
    }

    fn new_call(&mut self, waiting: Waiting) -> Result<(CallId, usize), RpcError> {
        let Some(k) = self.free.pop() else {
            return Err(RpcError::Backpressure);
        };
        self.generation += 1;
        let id = (self.generation << SLOT_BITS) | u64::from(k);
        let s = &mut self.slots[k as usize];
        s.id = id;
        s.waiting = waiting;
        s.deadline_ns = coarse_now_ns().saturating_add(self.opts.call_timeout.as_nanos() as u64);
        self.in_flight += 1;
        Ok((id, k as usize))
    }

    fn end_call(&mut self, k: usize) -> Waiting {
        let s = &mut self.slots[k];
        s.id = 0;
        self.free.push(k as u32);
        self.in_flight -= 1;
        std::mem::replace(&mut s.waiting, Waiting::Free)
    }

    fn push_request(
        &mut self,
        conn: u32,
        method: u16,
        payload: &[u8],
        id: CallId,
    ) -> Result<(), RpcError> {
        if payload.len() > self.max_payload {
            return Err(RpcError::TooLarge {
                len: payload.len(),
                max: self.max_payload,
            });
        }
        let h = FrameHeader {
            conn_id: conn,
            method_id: method,
            request_id: id,
            ..FrameHeader::new(FrameKind::Request)
        };
        let mut r = self.tx.push(&h, payload);
        if r == Err(PushError::Full) {
            self.flush();
            r = self.tx.push(&h, payload);
        }
        match r {
            Ok(()) => {
                self.unflushed += 1;
                if self.unflushed >= self.opts.batch {
                    self.flush();
                }
                Ok(())
            }
            Err(PushError::Full) => Err(RpcError::Backpressure),
            Err(PushError::TooLarge) => Err(RpcError::TooLarge {
                len: payload.len(),
                max: self.max_payload,
            }),
        }
    }

    /// Queues a call on connection `conn` (0: the NIC's own service); its outcome is handed to
    /// the closure of a later [`poll`](Self::poll).
    ///
    /// # Errors
    /// [`RpcError::Backpressure`] when the ring or the call table is full (poll, then retry);
    /// [`RpcError::TooLarge`].
    pub fn submit(&mut self, conn: u32, method: u16, payload: &[u8]) -> Result<CallId, RpcError> {
        let (id, k) = self.new_call(Waiting::Polled)?;
        if let Err(e) = self.push_request(conn, method, payload, id) {
            self.end_call(k);
            return Err(e);
        }
        Ok(id)
    }

    /// Queues a call whose outcome goes to `cb`, run inside a later [`poll`](Self::poll).
    ///
    /// # Errors
    /// As [`submit`](Self::submit); `cb` is not run then.
    pub fn call_async(
        &mut self,
        conn: u32,
        method: u16,
        payload: &[u8],
        cb: impl FnOnce(Result<&[u8], RpcError>) + Send + 'static,
    ) -> Result<CallId, RpcError> {
        let (id, k) = self.new_call(Waiting::Callback(Box::new(cb)))?;
        if let Err(e) = self.push_request(conn, method, payload, id) {
            self.end_call(k);
            return Err(e);
        }
        Ok(id)
    }

    /// Publishes queued requests and rings the doorbell.
    #[inline]
    pub fn flush(&mut self) {
        if self.tx.has_unpublished() {
            self.tx.publish();
            if self.doorbell {
                self.region
                    .doorbell()
                    .fetch_or(1u64 << self.qp, Ordering::AcqRel);
            }
        }
        self.unflushed = 0;
    }

    /// Reads completions: runs callbacks and passes other outcomes to `f`. Calls past their
    /// deadline complete with [`RpcError::Timeout`]. Returns how many calls completed.
    pub fn poll(&mut self, mut f: impl FnMut(CallId, Result<&[u8], RpcError>)) -> usize {
        let mut done = 0;
        while let Some((id, r)) = self.ready.pop_front() {
            f(id, r.as_deref().map_err(Clone::clone));
            done += 1;
        }
        loop {
            let (id, status, payload) = match self.rx.peek(usize::MAX) {
                None => break,
                Some(Ok(p)) if p.kind == FrameKind::Response => (
                    p.header.request_id,
                    Status::from_aux(p.header.aux),
                    p.payload,
                ),
                Some(_) => {
                    self.rx.advance();
                    continue;
                }
            };
            let k = (id & ((1 << SLOT_BITS) - 1)) as usize;
            if self.slots.get(k).is_some_and(|s| s.id == id && id != 0) {
                let r = if status == Status::Ok {
                    Ok(payload)
                } else {
                    Err(status_error(status, payload))
                };
                // Take the slot's waiter first, then run it: callbacks may not reenter `self`.
                let s = &mut self.slots[k];
                s.id = 0;
                let w = std::mem::replace(&mut s.waiting, Waiting::Free);
                match w {
                    Waiting::Callback(cb) => cb(r),
                    Waiting::Polled => f(id, r),
                    Waiting::Free => {}
                }
                self.free.push(k as u32);
                self.in_flight -= 1;
                done += 1;
            }
            self.rx.advance();
        }
        self.rx.release();
        if done == 0 && self.in_flight > 0 {
            self.idle_polls += 1;
            if self.idle_polls >= 1024 {
                self.idle_polls = 0;
                // Scan the table at most once per millisecond of idling.
                let now = coarse_now_ns();
                if now >= self.next_expire_ns {
                    self.next_expire_ns = now + EXPIRE_EVERY_NS;
                    done += self.expire(&mut f);
                }
            }
        } else {
            self.idle_polls = 0;
        }
        done
    }

    /// Ends calls past their deadline with `Timeout`, and every call with `Disconnected` once
    /// the NIC has quarantined this QP (it no longer reads or answers it).
    #[cold]
    fn expire(&mut self, f: &mut impl FnMut(CallId, Result<&[u8], RpcError>)) -> usize {
        let now = coarse_now_ns();
        let gone = self.region.qp_state(self.qp) == QP_QUARANTINED;
        let mut n = 0;
        for k in 0..self.slots.len() {
            if self.slots[k].id != 0 && (gone || self.slots[k].deadline_ns <= now) {
                let id = self.slots[k].id;
                let e = if gone {
                    RpcError::Disconnected
                } else {
                    RpcError::Timeout
                };
                match self.end_call(k) {
                    Waiting::Callback(cb) => cb(Err(e)),
                    Waiting::Polled => f(id, Err(e)),
                    Waiting::Free => {}
                }
                n += 1;
            }
        }
        n
    }

    /// A synchronous call: returns when the response is in `response` (cleared first).
    ///
    /// Outcomes of other calls that arrive meanwhile are kept for the next [`poll`](Self::poll)
    /// (callbacks run as usual).
    ///
    /// # Errors
    /// The call's error status, `Timeout`, `Backpressure`, `TooLarge`.
    pub fn call(
        &mut self,
        conn: u32,
        method: u16,
        request: &[u8],
        response: &mut Vec<u8>,
    ) -> Result<(), RpcError> {
        let id = self.submit(conn, method, request)?;
        self.flush();
        let mut out: Option<Result<(), RpcError>> = None;
        let mut spins = 0u32;
        let mut others: Vec<(CallId, Result<Vec<u8>, RpcError>)> = Vec::new();
        while out.is_none() {
            let n = self.poll(|cid, r| {
                if cid == id {
                    out = Some(r.map(|p| {
                        response.clear();
                        response.extend_from_slice(p);
                    }));
                } else {
                    others.push((cid, r.map(<[u8]>::to_vec)));
                }
            });
            if out.is_some() {
                break;
            }
            if n == 0 {
                spins = spins.saturating_add(1);
                if spins & 4095 == 0 {
                    // `poll` expires calls only every 1024 idle polls; check ours on time too.
                    let k = (id & ((1 << SLOT_BITS) - 1)) as usize;
                    if self.slots[k].id == id && self.slots[k].deadline_ns <= coarse_now_ns() {
                        self.end_call(k);
                        out = Some(Err(RpcError::Timeout));
                        break;
                    }
                }
                self.opts.idle.wait(spins);
            } else {
                spins = 0;
            }
        }
        self.ready.extend(others);
        out.unwrap_or(Err(RpcError::Timeout))
    }

    fn has_completions(&mut self) -> bool {
        !self.ready.is_empty() || self.rx.has_data()
    }
}

impl Drop for RpcClient {
    fn drop(&mut self) {
        self.flush();
        if let Some(h) = &self.handle {
            h.shared.notifiers.lock().unwrap_or_else(|e| e.into_inner())[self.qp] = None;
        }
        self.region.detach(self.qp);
    }
}

/// Monotonic time in nanoseconds from the kernel's coarse clock: a few nanoseconds to read (no
/// fence, no syscall) and a few milliseconds of resolution, which is plenty for call deadlines.
pub(crate) fn coarse_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live, writable timespec; CLOCK_MONOTONIC_COARSE exists on Linux.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    if r != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

fn status_error(status: Status, payload: &[u8]) -> RpcError {
    match status {
        Status::Timeout => RpcError::Timeout,
        Status::Disconnected => RpcError::Disconnected,
        _ => RpcError::Status {
            status,
            detail: String::from_utf8_lossy(payload).into_owned(),
        },
    }
}

struct AsyncInner {
    client: RpcClient,
    done: HashMap<CallId, Result<Vec<u8>, RpcError>>,
    interested: HashSet<CallId>,
    wakers: HashMap<CallId, std::task::Waker>,
}

impl AsyncInner {
    fn drain(&mut self) {
        let Self {
            client,
            done,
            interested,
            wakers,
        } = self;
        client.poll(|id, r| {
            if interested.contains(&id) {
                done.insert(id, r.map(<[u8]>::to_vec));
                if let Some(w) = wakers.remove(&id) {
                    w.wake();
                }
            }
        });
    }
}

/// A client for `async` code, shareable between tasks (calls are serialized by a mutex; the
/// NIC wakes waiting futures when it writes completions).
#[derive(Clone)]
pub struct AsyncClient {
    inner: Arc<Mutex<AsyncInner>>,
    notifier: Arc<Notifier>,
}

impl AsyncClient {
    /// Wraps a client attached through a [`NicHandle`] (in-process: the NIC wakes futures).
    ///
    /// # Errors
    /// [`RpcError::Config`] for a client attached by path (no in-process NIC to wake it).
    pub fn new(client: RpcClient) -> Result<Self, RpcError> {
        let notifier = client.notifier.clone().ok_or_else(|| {
            RpcError::Config("AsyncClient needs a client from NicHandle::client".into())
        })?;
        Ok(Self {
            inner: Arc::new(Mutex::new(AsyncInner {
                client,
                done: HashMap::new(),
                interested: HashSet::new(),
                wakers: HashMap::new(),
            })),
            notifier,
        })
    }

    /// Starts a call now; the future resolves to the response payload.
    pub fn call(&self, conn: u32, method: u16, request: &[u8]) -> CallFuture {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let r = g.client.submit(conn, method, request);
        if let Ok(id) = r {
            g.interested.insert(id);
            g.client.flush();
        }
        CallFuture {
            client: self.clone(),
            id: r,
        }
    }
}

/// The outcome of one [`AsyncClient::call`].
pub struct CallFuture {
    client: AsyncClient,
    id: Result<CallId, RpcError>,
}

impl Future for CallFuture {
    type Output = Result<Vec<u8>, RpcError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let id = match &self.id {
            Ok(id) => *id,
            Err(e) => return Poll::Ready(Err(e.clone())),
        };
        let mut g = self.client.inner.lock().unwrap_or_else(|e| e.into_inner());
        for attempt in 0..2 {
            g.drain();
            if let Some(r) = g.done.remove(&id) {
                g.interested.remove(&id);
                g.wakers.remove(&id);
                return Poll::Ready(r);
            }
            if attempt == 0 {
                g.wakers.insert(id, cx.waker().clone());
                self.client.notifier.arm(cx.waker());
                // Completions written between the drain and arming would wake nobody: look again.
                if !g.client.has_completions() {
                    break;
                }
            }
        }
        Poll::Pending
    }
}

impl Drop for CallFuture {
    fn drop(&mut self) {
        if let Ok(id) = self.id {
            let mut g = self.client.inner.lock().unwrap_or_else(|e| e.into_inner());
            g.interested.remove(&id);
            g.done.remove(&id);
            g.wakers.remove(&id);
        }
    }
}
