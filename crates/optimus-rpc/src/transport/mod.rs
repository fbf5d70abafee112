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
//! - [`udp`]: frames for one peer packed into datagrams, batched with `sendmmsg`/`recvmmsg`.
//! - [`tcp`]: a byte stream per peer, frames delimited by their headers, one `write` per burst.
//! - [`seal`]: authenticated, encrypted datagrams under a pre-shared key, for [`udp`].
//! - [`tls`]: certificates and keys for TLS over [`tcp`] (rustls).

pub mod loopback;
pub mod lossy;
pub mod seal;
pub mod tcp;
pub mod tls;
pub mod udp;

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

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

/// Outgoing frames with their peers, in order, written back to back into one byte buffer.
///
/// Frames queued one after another for the same peer are contiguous, so a stream transport
/// hands a whole run to one `write` without gathering or copying it again, and a datagram
/// transport points its iovecs into the buffer. The buffer is reused (cleared when the queue
/// empties, compacted when a long-lived tail holds on to it), so the datapath does not
/// allocate once warm.
pub struct TxQueue {
    bytes: Vec<u8>,
    /// Per frame: peer, start in `bytes`, length; the queue is `q[head..]`.
    q: Vec<(PeerId, usize, usize)>,
    head: usize,
    cap: usize,
}

/// Consumed bytes at the front of the buffer before it is compacted.
const TXQ_COMPACT_BYTES: usize = 1 << 16;

impl TxQueue {
    /// A queue that holds at most `cap` frames.
    pub fn new(cap: usize) -> Self {
        Self {
            bytes: Vec::new(),
            q: Vec::with_capacity(cap),
            head: 0,
            cap,
        }
    }

    /// Frames queued.
    pub fn len(&self) -> usize {
        self.q.len() - self.head
    }

    /// Whether no frame is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Free places.
    pub fn room(&self) -> usize {
        self.cap - self.len()
    }

    /// Queues a frame that `fill` appends to the buffer it is given (it must only append);
    /// `false` when the queue is full.
    #[inline]
    pub fn push_with(&mut self, peer: PeerId, fill: impl FnOnce(&mut Vec<u8>)) -> bool {
        if self.len() >= self.cap {
            return false;
        }
        let start = self.bytes.len();
        fill(&mut self.bytes);
        debug_assert!(self.bytes.len() >= start, "fill only appends");
        self.q.push((peer, start, self.bytes.len() - start));
        true
    }

    /// Queues a copy of `frame`; `false` when the queue is full.
    pub fn push(&mut self, peer: PeerId, frame: &[u8]) -> bool {
        self.push_with(peer, |b| b.extend_from_slice(frame))
    }

    /// The `i`-th queued frame.
    #[inline]
    pub fn get(&self, i: usize) -> Option<(PeerId, &[u8])> {
        self.q[self.head..]
            .get(i)
            .map(|&(p, start, len)| (p, &self.bytes[start..start + len]))
    }

    /// The frames at the front that go to one peer, at most `max` of them: the peer, their
    /// bytes (contiguous) and how many frames they are.
    #[inline]
    pub fn front_run(&self, max: usize) -> Option<(PeerId, &[u8], usize)> {
        let q = &self.q[self.head..];
        let &(peer, start, len) = q.first()?;
        let mut end = start + len;
        let mut n = 1;
        while n < max {
            match q.get(n) {
                Some(&(p, s, l)) if p == peer && s == end => {
                    end += l;
                    n += 1;
                }
                _ => break,
            }
        }
        Some((peer, &self.bytes[start..end], n))
    }

    /// Removes the first `n` frames.
    pub fn consume(&mut self, n: usize) {
        self.head += n.min(self.len());
        match self.q.get(self.head) {
            None => {
                self.q.clear();
                self.head = 0;
                self.bytes.clear();
            }
            Some(&(_, start, _)) if start >= TXQ_COMPACT_BYTES && start * 2 >= self.bytes.len() => {
                self.bytes.drain(..start);
                self.q.drain(..self.head);
                self.head = 0;
                for e in self.q.iter_mut() {
                    e.1 -= start;
                }
            }
            Some(_) if self.head >= self.cap => {
                self.q.drain(..self.head);
                self.head = 0;
            }
            Some(_) => {}
        }
    }

    /// Takes the first frame out as an owned buffer (for transports that keep frames, like
    /// the in-process loopback).
    pub fn pop_front(&mut self) -> Option<(PeerId, Vec<u8>)> {
        let (peer, f) = self.get(0).map(|(p, f)| (p, f.to_vec()))?;
        self.consume(1);
        Some((peer, f))
    }

    /// Gives back a buffer taken with `pop_front` (kept for symmetry; the queue does not pool
    /// them).
    pub fn recycle(&mut self, b: Vec<u8>) {
        drop(b);
    }
}

/// The first socket address `addr` (`host:port`) resolves to.
fn resolve(addr: &str) -> io::Result<SocketAddr> {
    addr.to_socket_addrs()?.next().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("no address for {addr}"),
        )
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_keeps_order_runs_and_compacts() {
        let mut q = TxQueue::new(8);
        assert!(q.push(1, b"aa"));
        assert!(q.push(1, b"bbb"));
        assert!(q.push(2, b"c"));
        assert!(q.push(1, b"d"));
        assert_eq!(q.front_run(8), Some((1, &b"aabbb"[..], 2)));
        assert_eq!(q.front_run(1), Some((1, &b"aa"[..], 1)));
        q.consume(2);
        assert_eq!(q.front_run(8), Some((2, &b"c"[..], 1)));
        assert_eq!(q.pop_front(), Some((2, b"c".to_vec())));
        assert_eq!(q.get(0), Some((1, &b"d"[..])));
        q.consume(5);
        assert!(q.is_empty() && q.front_run(4).is_none());
        // A queue that never empties still reuses its buffer.
        let big = vec![7u8; 1000];
        for i in 0..10_000 {
            assert!(q.push(i % 3, &big));
            if q.len() > 4 {
                q.consume(1);
            }
        }
        assert!(q.bytes.len() <= 2 * TXQ_COMPACT_BYTES + 8 * big.len());
        assert_eq!(q.get(3).map(|(_, f)| f.len()), Some(1000));
        assert!(q.q.len() <= q.cap + 8, "consumed entries are dropped too");
        // Small frames: the entry list is bounded even before the bytes compact.
        let mut q = TxQueue::new(8);
        for i in 0..10_000u32 {
            assert!(q.push(i, &i.to_le_bytes()));
            if q.len() > 4 {
                q.consume(1);
            }
            assert!(q.q.len() <= 2 * q.cap);
        }
        assert_eq!(q.get(0), Some((9_996, &9_996u32.to_le_bytes()[..])));
        let full = TxQueue::new(0);
        assert_eq!(full.room(), 0);
    }
}
