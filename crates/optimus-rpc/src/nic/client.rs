//! The client side of remote connections: the connect handshake, the window of calls in
//! flight per connection, requests sent from client rings, retransmission and timeouts, and
//! responses matched to their calls.

use std::time::Instant;

use super::control::{answer, ConnectReply};
use super::delivery::completion_header;
use super::tx::{append_frame, wire_frame};
use super::{
    Core, HANDLE_INDEX_BITS, HANDLE_INDEX_MASK, KEPT_FRAME_BYTES, MAX_CLIENT_CONNS, NO_QP, WINDOW,
    WINDOW_MASK,
};
use crate::frame::{self, FrameHeader, FrameKind, Status, FLAG_RETRY, HEADER_BYTES};
use crate::transport::{PeerId, Transport};
use crate::RpcError;

#[derive(Default)]
pub(super) struct OutSlot {
    pub(super) seq: u64,
    pub(super) qp: u16,
    host_id: u64,
    method: u16,
    deadline: Option<Instant>,
    tries: u32,
    frame: Vec<u8>,
}

pub(super) enum ConnState {
    Connecting {
        nonce: u64,
        deadline: Instant,
        tries: u32,
        reply: ConnectReply,
    },
    Open,
    Closed,
}

pub(super) struct ClientConn {
    /// What the application and the server's responses name this connection by.
    handle: u32,
    pub(super) state: ConnState,
    pub(super) peer: PeerId,
    remote_id: u32,
    next_seq: u64,
    outstanding: usize,
    /// Empty once the connection has closed (its index then waits in `cconn_free`).
    pub(super) window: Box<[OutSlot]>,
}

impl Core {
    pub(super) fn start_connect<T: Transport>(
        &mut self,
        t: &mut T,
        addr: &str,
        reply: ConnectReply,
    ) {
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
    pub(super) fn client_conn(&self, handle: u32) -> Option<usize> {
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
    pub(super) fn close_client_conn(&mut self, i: usize, tell_peer: bool) {
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

    pub(super) fn timers(&mut self) {
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

    pub(super) fn client_connect_ack(&mut self, peer: PeerId, h: &FrameHeader) {
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

    pub(super) fn client_response(&mut self, peer: PeerId, h: &FrameHeader, payload: &[u8]) {
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

    pub(super) fn remote_request(&mut self, i: usize, h: &FrameHeader, payload: &[u8]) -> bool {
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
}
