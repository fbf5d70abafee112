//! The server's application side: a worker thread owns one worker QP, takes the requests the
//! NIC's load balancer put in its ring, runs the handler and writes responses back.
//!
//! Responses are published (and the doorbell rung) once per burst of up to
//! [`WORKER_BATCH`] requests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::frame::{FrameHeader, FrameKind, Status};
use crate::nic::{Handler, NicHandle};
use crate::ring::{Consumer, Producer, PushError};
use crate::shm::{ShmRegion, MODE_DOORBELL, QP_WORKER};
use crate::{IdlePolicy, RpcError};

/// Most requests a worker takes per turn.
pub const WORKER_BATCH: usize = 32;

/// One worker thread's QP. See the module docs.
pub struct Worker {
    region: Arc<ShmRegion>,
    qp: usize,
    tx: Producer,
    rx: Consumer,
    doorbell: bool,
    out: Vec<u8>,
    max_payload: usize,
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
        })
    }

    /// The QP this worker owns.
    pub fn qp(&self) -> usize {
        self.qp
    }

    /// Serves up to [`WORKER_BATCH`] requests; returns how many.
    pub fn serve_once<H: Handler + ?Sized>(&mut self, handler: &mut H) -> usize {
        let mut n = 0;
        while n < WORKER_BATCH {
            let (h, st) = match self.rx.peek(usize::MAX) {
                None => break,
                Some(Ok(p)) if p.kind == FrameKind::Request => {
                    self.out.clear();
                    let st = handler.handle(p.header.method_id, p.payload, &mut self.out);
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
            loop {
                match self.tx.push(&r, &self.out) {
                    Ok(()) => break,
                    Err(PushError::Full) => {
                        // The NIC drains this ring; hand it what we have and wait.
                        publish(&mut self.tx, &self.region, self.qp, self.doorbell);
                        std::hint::spin_loop();
                        std::thread::yield_now();
                    }
                    Err(PushError::TooLarge) => {
                        let e = FrameHeader {
                            aux: Status::TooLarge as u32,
                            ..r
                        };
                        if self.tx.push(&e, &[]).is_ok() {
                            break;
                        }
                    }
                }
            }
            self.rx.advance();
            n += 1;
        }
        if n > 0 {
            self.rx.release();
            self.publish();
        }
        n
    }

    fn publish(&mut self) {
        publish(&mut self.tx, &self.region, self.qp, self.doorbell);
    }

    /// Serves until `stop` is set.
    pub fn run<H: Handler + ?Sized>(
        &mut self,
        handler: &mut H,
        stop: &AtomicBool,
        idle: IdlePolicy,
    ) {
        let mut empty = 0u32;
        while !stop.load(Ordering::Relaxed) {
            if self.serve_once(handler) > 0 {
                empty = 0;
            } else {
                empty = empty.saturating_add(1);
                idle.wait(empty);
            }
        }
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
