//! The server's application side: a worker thread owns one worker QP, takes the requests the
//! NIC's load balancer put in its ring, runs the handler and writes responses back.
//!
//! Responses are published (and the doorbell rung) once per burst of up to
//! [`WORKER_BATCH`] requests.
//!
//! A full response ring is backpressure: the worker waits for the NIC to drain it, but not
//! forever. It gives up when the NIC's heartbeat has not moved for [`Worker::set_nic_timeout`]
//! (the NIC is gone: [`RpcError::Disconnected`]) or when the stop flag of [`Worker::run`] is set;
//! the request whose response did not fit stays unanswered in the ring, so once the worker
//! leaves, a live NIC answers it `Unavailable` like every other request it still held.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::frame::{FrameHeader, FrameKind, Status, FLAG_WIRE_DT};
use crate::nic::{Handler, NicHandle};
use crate::ring::{Consumer, Producer, PushError};
use crate::shm::{ShmRegion, MODE_DOORBELL, QP_WORKER};
use crate::{IdlePolicy, RpcError};

/// Most requests a worker takes per turn.
pub const WORKER_BATCH: usize = 32;
/// How long a worker waits on a full response ring while the NIC's heartbeat stands still
/// before it decides the NIC is gone. A live NIC bumps the heartbeat at every control pass
/// (every `CONTROL_INTERVAL` polls: well under 100 ms even when it idles with sleeps).
pub const NIC_LOST_AFTER: Duration = Duration::from_secs(1);
/// Full-ring retries between two looks at the clock and the heartbeat.
const FULL_CHECK_EVERY: u32 = 64;

/// One worker thread's QP. See the module docs.
pub struct Worker {
    region: Arc<ShmRegion>,
    qp: usize,
    tx: Producer,
    rx: Consumer,
    doorbell: bool,
    out: Vec<u8>,
    max_payload: usize,
    nic_timeout: Duration,
}

impl NicHandle {
    /// Attaches a worker QP in this process.
    ///
    /// # Errors
    /// [`RpcError::NoFreeQp`] when every QP is taken.
    pub fn worker(&self) -> Result<Worker, RpcError> {
        let mut w = Worker::attach(self.shared.region.clone())?;
        w.max_payload = self.shared.max_payload;
        Ok(w)
    }
}

impl Worker {
    /// Attaches a worker QP of `region`, which may belong to a NIC in another process.
    ///
    /// # Errors
    /// [`RpcError::NoFreeQp`] when every QP is taken.
    pub fn attach(region: Arc<ShmRegion>) -> Result<Self, RpcError> {
        let qp = region.claim(QP_WORKER)?;
        // SAFETY: we own QP `qp`: we use the tx producer and the rx consumer, the NIC the others.
        let (tx, _) = unsafe { region.ring(qp, false) };
        // SAFETY: as above.
        let (_, rx) = unsafe { region.ring(qp, true) };
        let doorbell = region.mode().load(Ordering::Acquire) & MODE_DOORBELL != 0;
        let max_payload = tx.max_payload();
        Ok(Self {
            region,
            qp,
            tx,
            rx,
            doorbell,
            out: Vec::new(),
            max_payload,
            nic_timeout: NIC_LOST_AFTER,
        })
    }

    /// Sets how long a full response ring may wait on a NIC whose heartbeat stands still
    /// (default [`NIC_LOST_AFTER`]).
    pub fn set_nic_timeout(&mut self, d: Duration) {
        self.nic_timeout = d;
    }

    /// The QP this worker owns.
    pub fn qp(&self) -> usize {
        self.qp
    }

    /// Serves up to [`WORKER_BATCH`] requests; returns how many.
    ///
    /// # Errors
    /// [`RpcError::Disconnected`] when the response ring stayed full while the NIC's heartbeat
    /// did not move for the NIC timeout: the NIC is gone and nothing will drain the ring.
    pub fn serve_once<H: Handler + ?Sized>(&mut self, handler: &mut H) -> Result<usize, RpcError> {
        self.serve_batch(handler, None)
    }

    fn serve_batch<H: Handler + ?Sized>(
        &mut self,
        handler: &mut H,
        stop: Option<&AtomicBool>,
    ) -> Result<usize, RpcError> {
        let mut n = 0;
        let mut outcome = Ok(());
        handler.turn_begins();
        while n < WORKER_BATCH {
            let (h, st) = match self.rx.peek(usize::MAX) {
                None => break,
                Some(Ok(p)) if p.kind == FrameKind::Request => {
                    self.out.clear();
                    let (method, request) = (p.header.method_id, p.payload);
                    let st = if p.header.flags & FLAG_WIRE_DT != 0 {
                        handler.handle_wire(method, request, &mut self.out)
                    } else {
                        handler.handle(method, request, &mut self.out)
                    };
                    (p.header, st)
                }
                Some(_) => {
                    self.rx.advance();
                    continue;
                }
            };
            let st = if self.out.len() > self.max_payload {
                self.out.clear();
                Status::TooLarge
            } else {
                st
            };
            let r = FrameHeader {
                method_id: h.method_id,
                request_id: h.request_id,
                aux: st as u32,
                ..FrameHeader::new(FrameKind::Response)
            };
            match self.push_response(&r, stop) {
                Ok(true) => {}
                // Stopping: the request stays unanswered in the ring (see the module docs).
                Ok(false) => break,
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
            self.rx.advance();
            n += 1;
        }
        if n > 0 {
            self.rx.release();
            self.publish();
        }
        handler.turn_ends(n);
        outcome.map(|()| n)
    }

    /// Writes one response, waiting while the ring is full. `Ok(false)`: `stop` was set.
    fn push_response(
        &mut self,
        r: &FrameHeader,
        stop: Option<&AtomicBool>,
    ) -> Result<bool, RpcError> {
        let mut tries = 0u32;
        let mut watch: Option<(u64, Instant)> = None;
        loop {
            match self.tx.push(r, &self.out) {
                Ok(()) => return Ok(true),
                Err(PushError::TooLarge) => {
                    let e = FrameHeader {
                        aux: Status::TooLarge as u32,
                        ..*r
                    };
                    // An empty frame always fits an empty ring: wait for room like any other.
                    if self.tx.push(&e, &[]).is_ok() {
                        return Ok(true);
                    }
                }
                Err(PushError::Full) => {}
            }
            // The NIC drains this ring; hand it what we have and wait, boundedly.
            publish(&mut self.tx, &self.region, self.qp, self.doorbell);
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                return Ok(false);
            }
            tries = tries.wrapping_add(1);
            if tries % FULL_CHECK_EVERY == 0 {
                let beat = self.region.heartbeat().load(Ordering::Relaxed);
                match watch {
                    Some((b, since)) if b == beat => {
                        if since.elapsed() >= self.nic_timeout {
                            return Err(RpcError::Disconnected);
                        }
                    }
                    _ => watch = Some((beat, Instant::now())),
                }
            }
            std::hint::spin_loop();
            std::thread::yield_now();
        }
    }

    fn publish(&mut self) {
        publish(&mut self.tx, &self.region, self.qp, self.doorbell);
    }

    /// Serves until `stop` is set (`Ok`) or the NIC is gone.
    ///
    /// # Errors
    /// [`RpcError::Disconnected`] as in [`serve_once`](Self::serve_once).
    pub fn run<H: Handler + ?Sized>(
        &mut self,
        handler: &mut H,
        stop: &AtomicBool,
        idle: IdlePolicy,
    ) -> Result<(), RpcError> {
        let mut empty = 0u32;
        while !stop.load(Ordering::Relaxed) {
            if self.serve_batch(handler, Some(stop))? > 0 {
                empty = 0;
            } else {
                empty = empty.saturating_add(1);
                idle.wait(empty);
            }
        }
        Ok(())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.publish();
        self.region.detach(self.qp);
    }
}

fn publish(tx: &mut Producer, region: &ShmRegion, qp: usize, doorbell: bool) {
    if tx.has_unpublished() {
        tx.publish();
        if doorbell {
            region.doorbell().fetch_or(1u64 << qp, Ordering::AcqRel);
        }
    }
}
