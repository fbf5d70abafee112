//! Running requests: on the inline handler or on worker QPs chosen by the balance policy,
//! with the table of requests pending on workers and the backlog of those no worker had
//! room for.

use super::{Balance, Core, MAX_PENDING};
use crate::frame::{FrameHeader, FrameKind, Status, FLAG_WIRE_DT};
use crate::ring::PushError;

/// Where a request came from, so its response can go back.
#[derive(Clone, Copy)]
pub(super) enum Origin {
    /// A client QP of this NIC (connection 0): response to `qp` with the caller's id.
    Local { qp: u16, host_id: u64 },
    /// A remote client: server connection index and sequence number.
    Remote { sconn: u32, seq: u64 },
    /// The caller left; the response is discarded.
    Gone,
}

pub(super) struct Pending {
    pub(super) gen: u32,
    pub(super) origin: Origin,
    pub(super) worker: u16,
    pub(super) live: bool,
    /// The request was decoded into exchange slot `k` (this entry's index) on this core;
    /// the worker's answer is a reply record to encode here.
    pub(super) offloaded: bool,
}

impl Core {
    pub(super) fn can_take_requests(&self, n: usize) -> bool {
        if self.handler.is_some() || self.workers.is_empty() {
            return true;
        }
        self.pending.len() + n <= MAX_PENDING || self.pending_free.len() >= n
    }

    pub(super) fn dispatch(&mut self, origin: Origin, method: u16, payload: &[u8]) {
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
                    offloaded: false,
                });
                self.pending.len() - 1
            }
        };
        // DT on this core: the worker gets the slot's token instead of the wire bytes, unless
        // this call's DT goes back to the app core (its worker waiting on this core).
        let hand_back = match self.offload.as_mut() {
            Some(dt) if dt.hands_back_any() => {
                let idle = self.qps[self.workers[first] as usize].rx.is_drained();
                dt.hands_back(idle)
            }
            _ => false,
        };
        let token;
        let payload = match self
            .offload
            .as_mut()
            .filter(|_| !hand_back)
            .map(|dt| dt.decode_into(k, method, payload))
        {
            None => payload,
            Some(Ok(t)) => {
                token = t;
                &token[..]
            }
            Some(Err(f)) => {
                self.pending_free.push(k as u32);
                self.complete(origin, method, f.status, f.detail.as_bytes());
                return true;
            }
        };
        let token = (u64::from(self.pending[k].gen) << 32) | k as u64;
        let h = FrameHeader {
            method_id: method,
            request_id: token,
            flags: if hand_back { FLAG_WIRE_DT } else { 0 },
            ..FrameHeader::new(FrameKind::Request)
        };
        let mut corrupt = None;
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
                    p.offloaded = self.offload.is_some() && !hand_back;
                    return true;
                }
                Err(PushError::TooLarge) => {
                    self.pending_free.push(k as u32);
                    self.complete(origin, method, Status::TooLarge, &[]);
                    return true;
                }
                Err(PushError::Full) => {
                    if qp.rx.is_corrupt() {
                        // Not quarantined here: the loop walks `workers`. The worker stays
                        // unusable (every push is `Full`) until the call below.
                        corrupt = Some(w);
                    }
                }
            }
        }
        self.pending_free.push(k as u32);
        if let Some(w) = corrupt {
            self.quarantine_qp(w as usize);
        }
        false
    }

    pub(super) fn free_pending(&mut self, k: usize) {
        let p = &mut self.pending[k];
        p.live = false;
        p.gen = p.gen.wrapping_add(1);
        let w = p.worker as usize;
        self.pending_free.push(k as u32);
        if let Some(q) = self.qps.get_mut(w) {
            q.in_flight = q.in_flight.saturating_sub(1);
        }
    }

    pub(super) fn drain_backlog(&mut self) -> usize {
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

    pub(super) fn local_request(&mut self, i: usize, h: &FrameHeader, payload: &[u8]) -> bool {
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
}
