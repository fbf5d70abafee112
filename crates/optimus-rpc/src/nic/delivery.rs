//! Completions to application rx rings: written in order behind any the QP could not take
//! yet (its stall queue), published once per poll, and async callers woken.

use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::Mutex;
use std::task::Waker;

use super::{Core, Qp};
use crate::frame::{FrameHeader, FrameKind, Status, HEADER_BYTES};
use crate::ring::PushError;
use crate::shm::{QP_CLIENT, QP_WORKER};

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

impl Core {
    /// Writes a completion to QP `qp` unless it is stalled or full.
    #[inline]
    pub(super) fn try_deliver(&mut self, qp: usize, h: &FrameHeader, payload: &[u8]) -> bool {
        self.try_deliver_parts(qp, h, &[payload])
    }

    /// [`try_deliver`](Self::try_deliver) with the payload gathered from `parts`.
    #[inline]
    pub(super) fn try_deliver_parts(
        &mut self,
        qp: usize,
        h: &FrameHeader,
        parts: &[&[u8]],
    ) -> bool {
        let q = &mut self.qps[qp];
        if !matches!(q.role, QP_CLIENT | QP_WORKER) {
            return true; // nobody to tell (free, or quarantined)
        }
        if !flush_stall(q) {
            return self.quarantine_if_corrupt(qp);
        }
        let mut r = q.rx.push_parts(h, parts);
        if r == Err(PushError::Full) {
            q.rx.publish();
            r = q.rx.push_parts(h, parts);
        }
        match r {
            Ok(()) => {
                q.rx_dirty = true;
                true
            }
            Err(PushError::Full) => self.quarantine_if_corrupt(qp),
            Err(PushError::TooLarge) => {
                let e = completion_header(h.conn_id, h.request_id, h.method_id, Status::TooLarge);
                let ok = q.rx.push(&e, &[]).is_ok();
                q.rx_dirty |= ok;
                ok
            }
        }
    }

    /// After a failed push to QP `qp`'s rx ring: quarantines the QP if its consumer index is
    /// impossible (then the completion is dropped: true), else reports the ring full (false).
    #[cold]
    fn quarantine_if_corrupt(&mut self, qp: usize) -> bool {
        if self.qps[qp].rx.is_corrupt() {
            self.quarantine_qp(qp);
            true
        } else {
            false
        }
    }

    /// Writes a completion, queueing it behind the QP's stalled ones if the ring is full: an
    /// application that stops reading its completions loses none of them.
    pub(super) fn deliver_or_stall(&mut self, qp: usize, h: &FrameHeader, payload: &[u8]) {
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

    pub(super) fn publish_rx(&mut self) {
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
pub(super) fn flush_stall(q: &mut Qp) -> bool {
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

pub(super) fn completion_header(
    conn: u32,
    host_id: u64,
    method: u16,
    status: Status,
) -> FrameHeader {
    FrameHeader {
        conn_id: conn,
        request_id: host_id,
        method_id: method,
        aux: status as u32,
        ..FrameHeader::new(FrameKind::Response)
    }
}
