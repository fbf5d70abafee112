//! Transports: how frames leave and enter the soft NIC.
//!
//! A transport is a type parameter of [`Nic`](crate::Nic), with its limits as associated
//! constants (`MTU`, burst sizes), so the NIC's datapath is compiled for each one (eRPC's
//! transport template). Frames on every transport are exactly the ring frames of
//! [`frame`](crate::frame). The NIC queues outgoing frames in a [`TxQueue`] and hands it to
//! [`Transport::send_burst`] once per poll; incoming frames are passed to a closure by
//! [`Transport::recv_burst`], borrowed from the transport's own buffers.
//!
//! - [`loopback`]: in-process, for tests on any machine (eRPC's fake transport).
//! - [`lossy`]: wraps any transport and drops, duplicates, delays and reorders frames.
//! - [`udp`]: one datagram per frame, batched with `sendmmsg`/`recvmmsg`.
//! - [`tcp`]: a byte stream per peer, frames delimited by their headers, one `write` per burst.

pub mod loopback;
pub mod lossy;
pub mod tcp;
pub mod udp;

use std::collections::VecDeque;
use std::io;

/// A transport's name for a remote endpoint (an index into its peer table).
pub type PeerId = u32;

/// What a transport can do. See the module docs.
pub trait Transport: Send + 'static {
    /// Short name for reports ("udp", "tcp", ...).
    const NAME: &'static str;
    /// Largest frame (header + payload) the transport carries.
    const MTU: usize;
    /// Most frames one `send_burst` sends.
    const TX_BURST: usize;
    /// Most units (datagrams, frames) one `recv_burst` reads.
    const RX_BURST: usize;
    /// Most frames one unit may carry (datagram transports pack several).
    const FRAMES_PER_UNIT: usize = 1;
    /// Frames arrive exactly once and in order while the peer lives (a byte stream): the NIC
    /// keeps no copies to resend and gives each call one attempt with the whole time budget.
    const RELIABLE: bool = false;
    /// Frames carry the frame checksum and are dropped without it. Off only where the
    /// transport checks integrity itself (TCP's checksum, as gRPC relies on).
    const CHECKSUM: bool = true;

    /// Sends frames from the front of `q` and removes those that left; returns how many.
    ///
    /// Called once per poll even when `q` is empty, so a transport may do deferred work.
    ///
    /// # Errors
    /// A transport-wide failure; per-peer failures are reported by `poll_events`.
    fn send_burst(&mut self, q: &mut TxQueue) -> io::Result<usize>;

    /// Reads up to `max` units and delivers their frames (at most `max * FRAMES_PER_UNIT`) to
    /// `f`, each borrowed for the call only. Returns the frames delivered.
    ///
    /// # Errors
    /// A transport-wide failure.
    fn recv_burst<F: FnMut(PeerId, &[u8])>(&mut self, max: usize, f: F) -> io::Result<usize>;

    /// Opens a path to `addr` (cold path) and returns its peer id.
    ///
    /// # Errors
    /// The address does not parse or cannot be reached.
    fn connect(&mut self, addr: &str) -> io::Result<PeerId>;

    /// Cold-path housekeeping: accept new peers, report peers that went away.
    fn poll_events(&mut self, _closed: &mut Vec<PeerId>) {}

    /// The address others connect to.
    fn local_addr(&self) -> String;
}

/// Outgoing frames with their peers, in order, recycling buffers so the datapath does not
/// allocate once warm.
pub struct TxQueue {
    q: VecDeque<(PeerId, Vec<u8>)>,
    pool: Vec<Vec<u8>>,
    cap: usize,
}

impl TxQueue {
    /// A queue that holds at most `cap` frames.
    pub fn new(cap: usize) -> Self {
        Self {
            q: VecDeque::with_capacity(cap),
            pool: Vec::with_capacity(cap),
            cap,
        }
    }

    /// Frames queued.
    pub fn len(&self) -> usize {
        self.q.len()
    }

    /// Whether no frame is queued.
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// Free places.
    pub fn room(&self) -> usize {
        self.cap - self.q.len()
    }

    /// Queues a frame built by `fill` into a recycled buffer; `false` when the queue is full.
    #[inline]
    pub fn push_with(&mut self, peer: PeerId, fill: impl FnOnce(&mut Vec<u8>)) -> bool {
        if self.q.len() >= self.cap {
            return false;
        }
        let mut b = self.pool.pop().unwrap_or_default();
        b.clear();
        fill(&mut b);
        self.q.push_back((peer, b));
        true
    }

    /// Queues a copy of `frame`; `false` when the queue is full.
    pub fn push(&mut self, peer: PeerId, frame: &[u8]) -> bool {
        self.push_with(peer, |b| b.extend_from_slice(frame))
    }

    /// The `i`-th queued frame.
    #[inline]
    pub fn get(&self, i: usize) -> Option<(PeerId, &[u8])> {
        self.q.get(i).map(|(p, b)| (*p, b.as_slice()))
    }

    /// Removes the first `n` frames, keeping their buffers for reuse.
    pub fn consume(&mut self, n: usize) {
        for _ in 0..n.min(self.q.len()) {
            if let Some((_, b)) = self.q.pop_front() {
                self.recycle(b);
            }
        }
    }

    /// Takes the first frame out (the transport owns the buffer; give it back with `recycle`).
    pub fn pop_front(&mut self) -> Option<(PeerId, Vec<u8>)> {
        self.q.pop_front()
    }

    /// Returns a buffer for reuse.
    pub fn recycle(&mut self, b: Vec<u8>) {
        if self.pool.len() < self.cap {
            self.pool.push(b);
        }
    }
}

/// No transport: a NIC that only serves applications on its own shared-memory region.
pub struct NoTransport;

impl Transport for NoTransport {
    const NAME: &'static str = "shm";
    const MTU: usize = 0;
    const TX_BURST: usize = 1;
    const RX_BURST: usize = 1;

    fn send_burst(&mut self, q: &mut TxQueue) -> io::Result<usize> {
        let n = q.len();
        q.consume(n);
        Ok(n)
    }

    fn recv_burst<F: FnMut(PeerId, &[u8])>(&mut self, _max: usize, _f: F) -> io::Result<usize> {
        Ok(0)
    }

    fn connect(&mut self, addr: &str) -> io::Result<PeerId> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("no network transport to reach {addr}"),
        ))
    }

    fn local_addr(&self) -> String {
        "shm".into()
    }
}
