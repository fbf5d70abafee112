//! The control plane (cold): the handle through which application threads open and close
//! connections and read counters, and the NIC's periodic pass that takes their requests,
//! attaches and detaches queue pairs, handles lost peers and runs the timers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::client::ConnState;
use super::delivery::Notifier;
use super::dispatch::Origin;
use super::{Core, NicStats, NO_QP};
use crate::frame::Status;
use crate::shm::{ShmRegion, QP_CLIENT, QP_DETACHING, QP_FREE, QP_QUARANTINED, QP_WORKER};
use crate::transport::{PeerId, Transport};
use crate::RpcError;

pub(super) type ConnectReply = Arc<(Mutex<Option<Result<u32, RpcError>>>, Condvar)>;

pub(super) enum ControlReq {
    Connect { addr: String, reply: ConnectReply },
    Close { conn: u32 },
}

/// State shared between the NIC and the in-process handles.
pub(crate) struct NicShared {
    pub(crate) region: Arc<ShmRegion>,
    pub(super) control: Mutex<Vec<ControlReq>>,
    pub(super) control_flag: AtomicBool,
    pub(crate) notifiers: Mutex<Vec<Option<Arc<Notifier>>>>,
    pub(super) stats: Mutex<NicStats>,
    pub(crate) max_payload: usize,
    pub(crate) call_timeout: Duration,
    pub(super) local_addr: String,
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

impl Core {
    #[cold]
    #[inline(never)]
    pub(super) fn control<T: Transport>(&mut self, t: &mut T) {
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

    pub(super) fn publish_stats(&mut self) {
        let s = self.snapshot();
        *self.shared.stats.lock().unwrap_or_else(|e| e.into_inner()) = s;
    }

    /// The counters, with the polls and the cached response bytes as of now.
    pub(super) fn snapshot(&self) -> NicStats {
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
                && (st == QP_CLIENT || st == QP_WORKER || st == QP_QUARANTINED)
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
        // A completion ring's consumer index is read on the datapath only when the ring looks
        // full; check every one here, so an impossible index is caught within a pass.
        for a in 0..self.active.len() {
            let i = self.active[a] as usize;
            if matches!(self.qps[i].role, QP_CLIENT | QP_WORKER) && self.qps[i].rx.check_peer() {
                self.quarantine_qp(i);
            }
        }
        if changed || std::mem::take(&mut self.relist) {
            self.active = (0..self.qps.len())
                .filter(|&i| matches!(self.qps[i].role, QP_CLIENT | QP_WORKER))
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
        self.forget_qp(i);
        let qp = &mut self.qps[i];
        qp.role = QP_FREE;
        self.region.reset_rings(i);
        qp.tx.resync();
        qp.rx.resync();
        if self.region.qp_state(i) != QP_FREE {
            self.region.free(i);
        }
    }

    /// Stops serving QP `i`, whose peer wrote something impossible into its rings: its calls
    /// and the requests it held end as on a detach, nothing more is read from or written to
    /// it, and its state says so until its owner detaches (or dies), when `detach_qp` frees it.
    /// The other QPs never notice.
    #[cold]
    #[inline(never)]
    pub(super) fn quarantine_qp(&mut self, i: usize) {
        if !matches!(self.qps[i].role, QP_CLIENT | QP_WORKER) {
            return;
        }
        self.forget_qp(i);
        self.qps[i].role = QP_QUARANTINED;
        self.stats.qps_quarantined += 1;
        // Leaves `active` and `workers` alone (a burst may be walking them); the next control
        // pass, which the bumped sequence starts, rebuilds them without this QP.
        self.relist = true;
        self.region.quarantine(i);
    }

    /// Ends everything the NIC's tables hold for QP `i` (its calls, the requests it held).
    fn forget_qp(&mut self, i: usize) {
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
}

pub(super) fn answer(reply: &ConnectReply, r: Result<u32, RpcError>) {
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
