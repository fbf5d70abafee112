//! TCP transport: one non-blocking stream per peer (`TCP_NODELAY`), frames delimited by their
//! headers. Outgoing frames of a burst leave in one `write` per peer: straight from the NIC's
//! queue when they all go to one stream with nothing pending (the common case, no copy), else
//! through the peer's write buffer. Each poll does one `read` per stream and hands every
//! complete frame in it to the NIC.
//!
//! A stream whose bytes stop looking like frames (bad magic or version, a length over the MTU)
//! cannot be resynchronized, so it is closed and reported, and the NIC fails its calls.
//!
//! With TLS ([`Tcp::listen_tls`], [`Tcp::client_tls`], settings in [`tls`](super::tls)) the same
//! frames travel inside a rustls session per stream. A client completes its handshake inside
//! `connect` (the cold path, blocking up to [`TLS_HANDSHAKE_TIMEOUT`]), so a server it does not
//! trust fails the connect with the reason; a server runs accepted handshakes non-blocking in
//! its polls. A stream whose TLS fails (a bad record, a certificate refused, a peer that closes
//! without `close_notify`, cutting the stream) is closed like one whose frames stop parsing.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use rustls::{ClientConnection, Connection, ServerConnection};

use super::tls::{TlsClient, TlsServer};
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
/// Longest a client's TLS handshake may take inside `connect`.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Most frames delivered per stream read: a read takes whatever the socket holds, and the
/// frames in it are handed on in the same poll, as a bare echo server would answer them.
const TCP_FRAMES_PER_READ: usize = 256;

struct Stream {
    s: TcpStream,
    /// The TLS session, if the transport uses TLS.
    tls: Option<Box<Connection>>,
    /// An accepted TLS stream still handshaking past this instant is closed.
    handshake_deadline: Option<Instant>,
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    wbuf: Vec<u8>,
    wpos: usize,
    dead: bool,
}

impl Stream {
    fn new(s: TcpStream, tls: Option<Connection>) -> io::Result<Self> {
        s.set_nodelay(true)?;
        s.set_nonblocking(true)?;
        Ok(Self {
            s,
            tls: tls.map(Box::new),
            handshake_deadline: None,
            rbuf: vec![0; READ_BUF],
            rstart: 0,
            rend: 0,
            wbuf: Vec::new(),
            wpos: 0,
            dead: false,
        })
    }

    /// Writes plaintext: to the socket, or into the TLS session (then as much of its records
    /// as the socket takes). `WouldBlock` when nothing was taken.
    fn write_raw(&mut self, b: &[u8]) -> io::Result<usize> {
        let Some(c) = self.tls.as_deref_mut() else {
            return self.s.write(b);
        };
        let n = c.writer().write(b)?;
        self.flush_tls();
        if n == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    /// Writes pending TLS records (handshake or data) until the socket would block.
    fn flush_tls(&mut self) {
        if let Some(c) = self.tls.as_deref_mut() {
            if !flush_records(c, &mut self.s) {
                self.dead = true;
            }
        }
    }

    /// Reads plaintext: from the socket, or from the TLS session after feeding it what the
    /// socket holds. `Ok(0)` is the end of the stream (a TLS `close_notify`); a TLS stream cut
    /// short without one, or a bad record, is an error.
    fn read_raw(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(c) = self.tls.as_deref_mut() else {
            return self.s.read(buf);
        };
        // Each turn feeds the session what the socket holds; the socket is non-blocking, so
        // the loop ends when it is empty (`read_tls` says `WouldBlock`).
        loop {
            match c.reader().read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => return r,
            }
            let n = c.read_tls(&mut self.s)?;
            let processed = c.process_new_packets();
            // Alerts and handshake replies go out even when the session just failed.
            if !flush_records(c, &mut self.s) {
                self.dead = true;
            }
            if let Err(e) = processed {
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
            if n == 0 {
                // TCP end: the reader now reports a clean close, or a stream cut short.
                return match c.reader().read(buf) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        Err(io::ErrorKind::UnexpectedEof.into())
                    }
                    r => r,
                };
            }
        }
    }

    /// Whether bytes are waiting to be written (ours, or TLS records).
    fn has_pending(&self) -> bool {
        self.wpos < self.wbuf.len() || self.tls.as_ref().is_some_and(|c| c.wants_write())
    }

    /// Writes from `b` until the socket would block; returns the bytes written.
    fn write_some(&mut self, b: &[u8]) -> usize {
        let mut pos = 0;
        while pos < b.len() {
            match self.write_raw(&b[pos..]) {
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
        self.flush_tls();
        while self.wpos < self.wbuf.len() {
            let b = std::mem::take(&mut self.wbuf);
            let r = self.write_raw(&b[self.wpos..]);
            self.wbuf = b;
            match r {
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
    /// TLS for accepted streams.
    tls_server: Option<TlsServer>,
    /// TLS for streams this side opens.
    tls_client: Option<TlsClient>,
    /// How long an accepted TLS stream may take to finish its handshake.
    handshake_timeout: Duration,
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
            tls_server: None,
            tls_client: None,
            handshake_timeout: TLS_HANDSHAKE_TIMEOUT,
        }
    }

    /// How long an accepted TLS stream may take to finish its handshake before it is closed
    /// [default: [`TLS_HANDSHAKE_TIMEOUT`]], so peers that connect and stall cannot hold
    /// streams (and their read buffers) for ever.
    pub fn with_handshake_timeout(mut self, d: Duration) -> Self {
        self.handshake_timeout = d;
        self
    }

    /// [`listen`](Self::listen), with every accepted stream a TLS session under `tls`.
    ///
    /// # Errors
    /// The bind fails.
    pub fn listen_tls(addr: &str, tls: TlsServer) -> io::Result<Self> {
        Ok(Self {
            tls_server: Some(tls),
            ..Self::listen(addr)?
        })
    }

    /// [`client`](Self::client), with every stream it opens a TLS session under `tls`.
    pub fn client_tls(tls: TlsClient) -> Self {
        Self {
            tls_client: Some(tls),
            ..Self::client()
        }
    }

    /// [`listen_tls`](Self::listen_tls) that also connects out under `client`.
    ///
    /// # Errors
    /// The bind fails.
    pub fn listen_tls_with_client(
        addr: &str,
        server: TlsServer,
        client: TlsClient,
    ) -> io::Result<Self> {
        Ok(Self {
            tls_client: Some(client),
            ..Self::listen_tls(addr, server)?
        })
    }

    /// Whether streams carry TLS.
    pub fn is_tls(&self) -> bool {
        self.tls_server.is_some() || self.tls_client.is_some()
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

/// Writes `c`'s pending records to `s` until it would block; false if the stream broke.
fn flush_records(c: &mut Connection, s: &mut TcpStream) -> bool {
    while c.wants_write() {
        match c.write_tls(s) {
            Ok(0) => return false,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

/// Runs a client handshake on the blocking socket `s` (bounded by
/// [`TLS_HANDSHAKE_TIMEOUT`]); the error says why the server was refused or refused us.
fn client_handshake(s: &mut TcpStream, t: &TlsClient, addr: &str) -> io::Result<Connection> {
    let name = t.name_for(addr)?;
    let mut c = ClientConnection::new(t.config.clone(), name)
        .map_err(|e| io::Error::other(format!("TLS to {addr}: {e}")))?;
    s.set_read_timeout(Some(TLS_HANDSHAKE_TIMEOUT))?;
    s.set_write_timeout(Some(TLS_HANDSHAKE_TIMEOUT))?;
    while c.is_handshaking() {
        c.complete_io(s)
            .map_err(|e| io::Error::new(e.kind(), format!("TLS handshake with {addr}: {e}")))?;
    }
    s.set_read_timeout(None)?;
    s.set_write_timeout(None)?;
    Ok(Connection::Client(c))
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
                if s.has_pending() && !s.dead {
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
                let (rend, len) = (s.rend, s.rbuf.len());
                let mut rbuf = std::mem::take(&mut s.rbuf);
                let r = s.read_raw(&mut rbuf[rend..len]);
                s.rbuf = rbuf;
                if s.tls.is_some() && s.has_pending() && !self.dirty.contains(&(i as PeerId)) {
                    self.dirty.push(i as PeerId); // handshake replies still to write
                }
                if s.dead {
                    dead.push(i as PeerId);
                    continue;
                }
                match r {
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
        let mut s = TcpStream::connect_timeout(&a, Duration::from_secs(5))?;
        let tls = match &self.tls_client {
            None => None,
            Some(t) => Some(client_handshake(&mut s, t, addr)?),
        };
        Ok(self.add(Stream::new(s, tls)?))
    }

    fn poll_events(&mut self, closed: &mut Vec<PeerId>) {
        // Accepted TLS streams that have not finished their handshake in time.
        if self.tls_server.is_some() {
            let now = Instant::now();
            let mut late = Vec::new();
            for (i, s) in self.streams.iter_mut().enumerate() {
                let Some(s) = s else { continue };
                if let Some(d) = s.handshake_deadline {
                    if !s.tls.as_ref().is_some_and(|c| c.is_handshaking()) {
                        s.handshake_deadline = None;
                    } else if now >= d {
                        late.push(i as PeerId);
                    }
                }
            }
            for p in late {
                self.kill(p);
            }
        }
        // Report closes before accepting, so a reused peer id is never mistaken for the old one.
        closed.append(&mut self.closed);
        if let Some(l) = &self.listener {
            let mut fresh = Vec::new();
            for _ in 0..64 {
                match l.accept() {
                    Ok((s, _)) => {
                        let tls = match &self.tls_server {
                            None => None,
                            Some(t) => match ServerConnection::new(t.config.clone()) {
                                Ok(c) => Some(Connection::Server(c)),
                                Err(_) => continue,
                            },
                        };
                        let deadline = tls
                            .as_ref()
                            .map(|_| Instant::now() + self.handshake_timeout);
                        if let Ok(mut s) = Stream::new(s, tls) {
                            s.handshake_deadline = deadline;
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
