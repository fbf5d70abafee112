//! The TX burst: application rings read (all attached QPs, or those whose doorbell rang),
//! requests taken from client QPs and responses from worker QPs, and frames built for the
//! transport.

use std::sync::atomic::Ordering;

use super::delivery::{completion_header, flush_stall};
use super::dispatch::Origin;
use super::{Core, PollMode, LOCAL_CONN, TX_BATCH};
use crate::frame::{self, FrameHeader, FrameKind, Status, FLAG_CHECKSUM};
use crate::shm::{QP_CLIENT, QP_WORKER};
use crate::RpcError;

impl Core {
    pub(super) fn poll_rings(&mut self) -> usize {
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

    /// The next frame published on QP `i`'s tx ring, skipping (and counting) frames that do
    /// not parse; `None` once the ring is empty. The payload stays the producer's until the
    /// caller advances past the frame and releases it.
    ///
    /// A ring whose producer wrote something that is not a frame quarantines the QP (a
    /// well-behaved producer publishes only whole frames, even when it crashes); refused
    /// frames (too large) are skipped, at most [`TX_BATCH`] of them per call, so a peer
    /// flooding its ring cannot hold the NIC here.
    fn peek_tx(&mut self, i: usize) -> Option<(FrameHeader, FrameKind, *const [u8])> {
        let max = self.max_payload;
        for _ in 0..TX_BATCH {
            let q = &mut self.qps[i];
            match q.tx.peek(max)? {
                Ok(p) => return Some((p.header, p.kind, p.payload as *const [u8])),
                Err(e) => {
                    q.tx.advance();
                    self.count_bad(&e);
                    if matches!(e, RpcError::CorruptRing(_)) {
                        self.quarantine_qp(i);
                        return None;
                    }
                }
            }
        }
        None
    }

    /// Whether QP `i` is still served (not quarantined during this burst).
    #[inline]
    fn is_served(&self, i: usize) -> bool {
        matches!(self.qps[i].role, QP_CLIENT | QP_WORKER)
    }

    /// Requests from client QP `i`. Returns frames taken and whether more may be waiting.
    fn client_ring(&mut self, i: usize) -> (usize, bool) {
        let mut n = 0;
        while n < TX_BATCH {
            if !flush_stall(&mut self.qps[i]) {
                if self.qps[i].rx.is_corrupt() {
                    self.quarantine_qp(i);
                    return (n, false);
                }
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
            if !self.is_served(i) {
                return (n + 1, false); // its own completion ring turned out corrupt
            }
            if !taken {
                self.stats.backpressure += 1;
                self.qps[i].tx.release();
                return (n, true);
            }
            self.qps[i].tx.advance();
            n += 1;
        }
        if !self.is_served(i) {
            return (n, false);
        }
        self.qps[i].tx.release();
        (n, n == TX_BATCH)
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
            let mut status = Status::from_aux(h.aux);
            // SAFETY: as in `client_ring`: the frame stays untouched until we advance past it.
            let mut payload = unsafe { &*payload };
            let mut encoded = std::mem::take(&mut self.scratch);
            if self.pending[k].offloaded && status == Status::Ok {
                // DT on this core: merge the NIC-resident fields and encode the reply; a
                // local caller's reply is written straight into its completion ring.
                encoded.clear();
                let mut dt = self.offload.take();
                let max = self.max_payload;
                let r = dt.as_mut().map(|dt| {
                    dt.encode_with(k, |parts| {
                        let len: usize = parts.iter().map(|p| p.len()).sum();
                        match origin {
                            _ if len > max => Err(Status::TooLarge),
                            Origin::Local { qp, host_id } => {
                                let ch =
                                    completion_header(LOCAL_CONN, host_id, h.method_id, Status::Ok);
                                Ok(Some(self.try_deliver_parts(qp as usize, &ch, parts)))
                            }
                            _ => {
                                for p in parts {
                                    encoded.extend_from_slice(p);
                                }
                                Ok(None)
                            }
                        }
                    })
                });
                self.offload = dt;
                match r {
                    None | Some(Ok(Ok(None))) => {}
                    Some(Ok(Ok(Some(delivered)))) => {
                        self.scratch = encoded;
                        if !delivered {
                            self.stats.backpressure += 1;
                            self.qps[i].tx.release();
                            return (n, true);
                        }
                        self.stats.responses_delivered += 1;
                        self.free_pending(k);
                        self.qps[i].tx.advance();
                        n += 1;
                        continue;
                    }
                    Some(Ok(Err(st))) => status = st,
                    Some(Err(f)) => {
                        encoded.extend_from_slice(f.detail.as_bytes());
                        status = f.status;
                    }
                }
                payload = &encoded;
            }
            match origin {
                Origin::Local { qp, host_id } => {
                    let ch = completion_header(LOCAL_CONN, host_id, h.method_id, status);
                    if !self.try_deliver(qp as usize, &ch, payload) {
                        self.scratch = encoded;
                        self.stats.backpressure += 1;
                        self.qps[i].tx.release();
                        return (n, true);
                    }
                    self.stats.responses_delivered += 1;
                }
                Origin::Remote { .. } => {
                    if self.txq.room() == 0 {
                        self.scratch = encoded;
                        self.stats.backpressure += 1;
                        self.qps[i].tx.release();
                        return (n, true);
                    }
                    self.complete(origin, h.method_id, status, payload);
                }
                Origin::Gone => {}
            }
            self.scratch = encoded;
            self.free_pending(k);
            self.qps[i].tx.advance();
            n += 1;
        }
        if !self.is_served(i) {
            return (n, false);
        }
        self.qps[i].tx.release();
        (n, n == TX_BATCH)
    }
}

/// Writes header + payload into `b` (cleared first), sealed with a checksum if `checksum`.
pub(super) fn wire_frame(b: &mut Vec<u8>, h: &FrameHeader, payload: &[u8], checksum: bool) {
    b.clear();
    append_frame(b, h, payload, checksum);
}

/// Appends header + payload to `b`, sealed with a checksum if `checksum`.
#[inline]
pub(super) fn append_frame(b: &mut Vec<u8>, h: &FrameHeader, payload: &[u8], checksum: bool) {
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
