//! The server side: connections accepted from remote clients (with a per-start epoch in
//! their ids), request de-duplication over a window per connection, the response cache
//! within its byte budget, and each call's outcome sent back to its origin.

use std::collections::VecDeque;

use super::delivery::completion_header;
use super::dispatch::Origin;
use super::tx::{append_frame, wire_frame};
use super::{Core, EPOCH_SHIFT, LOCAL_CONN, MAX_SERVER_CONNS, SCONN_MASK, WINDOW, WINDOW_MASK};
use crate::frame::{FrameHeader, FrameKind, Status, HEADER_BYTES};
use crate::transport::PeerId;

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

pub(super) struct ServerConn {
    /// Tells this connection from earlier ones at the same index.
    gen: u64,
    pub(super) peer: PeerId,
    nonce: u64,
    client_handle: u32,
    /// Empty until the connection's first request.
    window: Box<[DedupSlot]>,
}

/// The responses a server keeps in its connections' windows, oldest first, within a byte
/// budget over all connections
/// ([`NicConfig::response_cache_bytes`](super::NicConfig::response_cache_bytes)).
pub(super) struct ResponseCache {
    pub(super) budget: usize,
    pub(super) bytes: usize,
    /// Slots holding a response.
    pub(super) live: usize,
    /// (connection index, its generation, sequence number) of each response as it was cached;
    /// an entry whose slot has since been reused or whose connection closed is stale.
    pub(super) order: VecDeque<(u32, u64, u64)>,
    /// Generation of the next server connection.
    pub(super) next_gen: u64,
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

impl Core {
    pub(super) fn drop_server_conn(&mut self, k: u32) {
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

    pub(super) fn server_connect(&mut self, peer: PeerId, h: &FrameHeader) {
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

    pub(super) fn server_close(&mut self, peer: PeerId, h: &FrameHeader) {
        if let Some(k) = self.server_conn_index(peer, h.conn_id) {
            self.drop_server_conn(k);
        }
    }

    pub(super) fn server_request(&mut self, peer: PeerId, h: &FrameHeader, payload: &[u8]) {
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

    /// Sends a call's outcome to its origin.
    pub(super) fn complete(&mut self, origin: Origin, method: u16, status: Status, payload: &[u8]) {
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
}
