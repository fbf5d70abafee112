//! TCP transport: one non-blocking stream per peer (`TCP_NODELAY`), frames delimited by their
//! headers. Outgoing frames of a burst leave in one `write` per peer: straight from the NIC's
//! queue when they all go to one stream with nothing pending (the common case, no copy), else
//! through the peer's write buffer. Each poll does one `read` per stream and hands every
//! complete frame in it to the NIC.
//!
//! A stream whose bytes stop looking like frames (bad magic or version, a length over the MTU)
//! cannot be resynchronized, so it is closed and reported, and the NIC fails its calls.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};

use super::{PeerId, Transport, TxQueue};
use crate::frame::{FrameHeader, HEADER_BYTES, MAGIC, VERSION};

/// Largest frame on a stream.
pub const TCP_MTU: usize = 256 * 1024;
/// Read buffer per stream.
const READ_BUF: usize = 2 * TCP_MTU;
/// Write buffer per stream before the NIC is pushed back.
const WRITE_LIMIT: usize = 4 * TCP_MTU;
/// Most frames one `send_burst` moves into write buffers.
const TCP_TX_FRAMES: usize = 1024;
/// Most streams read per `recv_burst`.
const TCP_RX_READS: usize = 4;
/// Most frames delivered per stream read: a read takes whatever the socket holds, and the
/// frames in it are handed on in the same poll, as a bare echo server would answer them.
const TCP_FRAMES_PER_READ: usize = 256;

struct Stream {
    s: TcpStream,
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    wbuf: Vec<u8>,
    wpos: usize,
    dead: bool,
}

impl Stream {
    fn new(s: TcpStream) -> io::Result<Self> {
        s.set_nodelay(true)?;
        s.set_nonblocking(true)?;
        Ok(Self {
            s,
            rbuf: vec![0; READ_BUF],
            rstart: 0,
            rend: 0,
            wbuf: Vec::new(),
            wpos: 0,
            dead: false,
        })
    }

    /// Writes from `b` until the socket would block; returns the bytes written.
    fn write_some(&mut self, b: &[u8]) -> usize {
        let mut pos = 0;
        while pos < b.len() {
            match self.s.write(&b[pos..]) {
                Ok(0) => {
                    self.dead = true;
                    break;
                }
                Ok(k) => pos += k,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.dead = true;
                    break;
                }
            }
        }
        pos
    }

    fn flush(&mut self) {
        while self.wpos < self.wbuf.len() {
            match self.s.write(&self.wbuf[self.wpos..]) {
                Ok(0) => {
                    self.dead = true;
                    break;
                }
                Ok(n) => self.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.dead = true;
                    break;
                }
            }
        }
        if self.wpos == self.wbuf.len() {
            self.wbuf.clear();
            self.wpos = 0;
        } else if self.wpos > WRITE_LIMIT / 2 {
            self.wbuf.drain(..self.wpos);
            self.wpos = 0;
        }
    }
}

/// See the module docs.
pub struct Tcp {
    listener: Option<TcpListener>,
    streams: Vec<Option<Stream>>,
    dirty: Vec<PeerId>,
    /// Peers closed since the last `poll_events`.
    closed: Vec<PeerId>,
    /// Stream the next `recv_burst` starts with.
    next_read: usize,
}

impl Tcp {
    /// A transport that accepts peers on `addr` (`127.0.0.1:0` for any port).
    ///
    /// # Errors
    /// The bind fails.
    pub fn listen(addr: &str) -> io::Result<Self> {
        let l = TcpListener::bind(addr)?;
        l.set_nonblocking(true)?;
        Ok(Self {
            listener: Some(l),
            ..Self::client()
        })
    }

    /// A transport that only connects out.
    pub fn client() -> Self {
        Self {
            listener: None,
            streams: Vec::new(),
            dirty: Vec::new(),
            closed: Vec::new(),
            next_read: 0,
        }
    }

    fn add(&mut self, s: Stream) -> PeerId {
        if let Some(i) = self.streams.iter().position(|x| x.is_none()) {
            self.streams[i] = Some(s);
            i as PeerId
        } else {
            self.streams.push(Some(s));
            (self.streams.len() - 1) as PeerId
        }
    }

    fn kill(&mut self, p: PeerId) {
        if let Some(slot) = self.streams.get_mut(p as usize) {
            if slot.take().is_some() {
                self.closed.push(p);
            }
        }
    }
}

impl Transport for Tcp {
    const NAME: &'static str = "tcp";
    const MTU: usize = TCP_MTU;
    // A burst is whatever the queue holds: all of it leaves in one `write` per peer.
    const TX_BURST: usize = TCP_TX_FRAMES;
    // A unit is one `read` of one stream; it may carry many frames.
    const RX_BURST: usize = TCP_RX_READS;
    const FRAMES_PER_UNIT: usize = TCP_FRAMES_PER_READ;
    const RELIABLE: bool = true;
    const CHECKSUM: bool = false;

    fn send_burst(&mut self, q: &mut TxQueue) -> io::Result<usize> {
        let mut n = 0;
        while n < Self::TX_BURST {
            let Some((peer, bytes, frames)) = q.front_run(Self::TX_BURST - n) else {
                break;
            };
            // Frames for a peer that is gone are lost with it.
            if let Some(s) = self.streams.get_mut(peer as usize).and_then(|s| s.as_mut()) {
                if s.wbuf.len() - s.wpos >= WRITE_LIMIT {
                    break; // backpressure: the peer is not reading
                }
                if frames == q.len() && s.wpos == s.wbuf.len() && !self.dirty.contains(&peer) {
                    // The whole queue goes to one idle stream: write it from the queue and
                    // keep only what the socket did not take.
                    let sent = s.write_some(bytes);
                    if sent < bytes.len() && !s.dead {
                        s.wbuf.extend_from_slice(&bytes[sent..]);
                    }
                    if s.dead || sent < bytes.len() {
                        self.dirty.push(peer);
                    }
                } else {
                    if !self.dirty.contains(&peer) {
                        self.dirty.push(peer);
                    }
                    s.wbuf.extend_from_slice(bytes);
                }
            }
            q.consume(frames);
            n += frames;
        }
        let mut dead = Vec::new();
        for p in self.dirty.drain(..) {
            if let Some(s) = self.streams.get_mut(p as usize).and_then(|s| s.as_mut()) {
                s.flush();
                if s.dead {
                    dead.push(p);
                }
            }
        }
        // Streams with bytes still unsent stay dirty for the next poll.
        for (i, s) in self.streams.iter().enumerate() {
            if let Some(s) = s {
                if s.wpos < s.wbuf.len() && !s.dead {
                    self.dirty.push(i as PeerId);
                }
            }
        }
        for p in dead {
            self.kill(p);
        }
        Ok(n)
    }

    fn recv_burst<F: FnMut(PeerId, &[u8])>(&mut self, reads: usize, mut f: F) -> io::Result<usize> {
        let max = reads.saturating_mul(Self::FRAMES_PER_UNIT);
        let mut streams_read = 0;
        let mut delivered = 0;
        let mut dead = Vec::new();
        let n = self.streams.len();
        // Start one stream further each time, so a busy stream cannot starve the others.
        self.next_read = if n == 0 { 0 } else { (self.next_read + 1) % n };
        for k in 0..n {
            let i = (self.next_read + k) % n;
            let Some(s) = self.streams[i].as_mut() else {
                continue;
            };
            if delivered >= max || streams_read >= reads {
                break;
            }
            streams_read += 1;
            if s.rstart > 0 && s.rend + TCP_MTU > s.rbuf.len() {
                s.rbuf.copy_within(s.rstart..s.rend, 0);
                s.rend -= s.rstart;
                s.rstart = 0;
            }
            if s.rend < s.rbuf.len() {
                match s.s.read(&mut s.rbuf[s.rend..]) {
                    Ok(0) => {
                        dead.push(i as PeerId);
                        continue;
                    }
                    Ok(n) => s.rend += n,
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                        ) => {}
                    Err(_) => {
                        dead.push(i as PeerId);
                        continue;
                    }
                }
            }
            while delivered < max && s.rend - s.rstart >= HEADER_BYTES {
                let Ok(h) = FrameHeader::decode(&s.rbuf[s.rstart..s.rend]) else {
                    break;
                };
                if h.magic != MAGIC || h.version != VERSION || h.frame_bytes() > TCP_MTU {
                    dead.push(i as PeerId); // cannot find the next frame boundary
                    break;
                }
                let need = h.frame_bytes();
                if s.rend - s.rstart < need {
                    break;
                }
                f(i as PeerId, &s.rbuf[s.rstart..s.rstart + need]);
                s.rstart += need;
                delivered += 1;
            }
            if s.rstart == s.rend {
                s.rstart = 0;
                s.rend = 0;
            }
        }
        for p in dead {
            self.kill(p);
        }
        Ok(delivered)
    }

    fn connect(&mut self, addr: &str) -> io::Result<PeerId> {
        let a = super::resolve(addr)?;
        let s = TcpStream::connect_timeout(&a, std::time::Duration::from_secs(5))?;
        Ok(self.add(Stream::new(s)?))
    }

    fn poll_events(&mut self, closed: &mut Vec<PeerId>) {
        // Report closes before accepting, so a reused peer id is never mistaken for the old one.
        closed.append(&mut self.closed);
        if let Some(l) = &self.listener {
            let mut fresh = Vec::new();
            for _ in 0..64 {
                match l.accept() {
                    Ok((s, _)) => {
                        if let Ok(s) = Stream::new(s) {
                            fresh.push(s);
                        }
                    }
                    Err(_) => break,
                }
            }
            for s in fresh {
                self.add(s);
            }
        }
    }

    fn local_addr(&self) -> String {
        self.listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.to_string())
            .unwrap_or_default()
    }
}
