//! UDP transport: frames for one peer packed into datagrams (up to [`PACK_FRAMES`] frames or
//! [`UDP_MTU`] bytes each, gathered without copying), sent with one `sendmmsg` and received with
//! one `recvmmsg` per burst (non-blocking). On loopback the kernel's cost is per datagram, so a
//! burst of B calls costs one datagram and one system call each way instead of B.
//!
//! Peers are socket addresses; a datagram from a new address gets a new peer id. A socket made
//! with [`Udp::client`] is `connect`ed while it has a single peer, as a plain UDP client's
//! socket would be. Delivery is unreliable, which the NIC's timeouts, retries and de-duplication turn into at-most-once calls.
//!
//! With a pre-shared key ([`Udp::with_psk`]) every datagram is sealed (encrypted and
//! authenticated, [`seal`](super::seal)): datagrams under another key, altered, truncated or
//! replayed are dropped before the NIC sees them and counted in [`UdpStats`].

use std::collections::HashMap;
use std::io;
use std::mem::MaybeUninit;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use super::seal::{Psk, Refused, Sealer, SEAL_HEADER_BYTES, SEAL_OVERHEAD};
use super::{PeerId, Transport, TxQueue};
use crate::frame::{FrameHeader, MAGIC, VERSION};

/// Largest datagram we send or accept.
pub const UDP_MTU: usize = 9000;
const BURST: usize = 32;
/// Most frames packed into one datagram.
pub const PACK_FRAMES: usize = 32;
/// Receive buffer per datagram: the largest plain datagram or a sealed one.
const RX_SLOT: usize = UDP_MTU + SEAL_OVERHEAD;

/// Datagrams the socket refused before the NIC saw them (only with a pre-shared key).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UdpStats {
    /// Datagrams sealed and sent.
    pub sealed: u64,
    /// Datagrams opened and passed on.
    pub opened: u64,
    /// Too short or without the sealed-datagram header.
    pub malformed: u64,
    /// The tag did not match: another key, or bytes altered or cut on the way.
    pub bad_tag: u64,
    /// Seen before, or older than the replay window.
    pub replays: u64,
}

/// Cuts a datagram into the frames packed in it, by their headers. Whatever cannot be a frame
/// (a header that does not parse, a length past the end) is handed on as one last piece, so the
/// NIC's frame check drops and counts it. Returns the pieces delivered.
fn split_frames(mut d: &[u8], mut f: impl FnMut(&[u8])) -> usize {
    let mut n = 0;
    while !d.is_empty() {
        let end = match FrameHeader::decode(d) {
            Ok(h) if h.magic == MAGIC && h.version == VERSION && h.frame_bytes() <= d.len() => {
                h.frame_bytes()
            }
            _ => d.len(),
        };
        f(&d[..end]);
        d = &d[end..];
        n += 1;
    }
    n
}

/// See the module docs.
pub struct Udp {
    sock: UdpSocket,
    peers: Vec<(SocketAddr, libc::sockaddr_storage, libc::socklen_t)>,
    by_addr: HashMap<SocketAddr, PeerId>,
    rx_bufs: Vec<u8>,
    /// `recvmmsg` headers, set up once to point into `rx_bufs` and `rx.names`.
    rx: Box<RxArrays>,
    /// Scratch iovecs for `sendmmsg` (kept to reuse the allocation).
    tx_iov: Vec<libc::iovec>,
    /// Only connects out: the socket may be `connect`ed to its single peer.
    client_only: bool,
    /// The peer the socket is connected to: datagrams to it go without an address (no route
    /// lookup per datagram), and the kernel delivers only its datagrams.
    connected: Option<PeerId>,
    /// Seals and opens datagrams when a pre-shared key is set.
    sealer: Option<Box<Sealer>>,
    /// One buffer per datagram of a burst, for sealed datagrams (reused).
    seal_bufs: Vec<Vec<u8>>,
    stats: UdpStats,
}

struct RxArrays {
    msgs: [libc::mmsghdr; BURST],
    iov: [libc::iovec; BURST],
    names: [libc::sockaddr_storage; BURST],
}

// SAFETY: the raw pointers in `rx` point only into this value's own heap allocations
// (`rx_bufs` and `*rx`), which move with it and are never shared.
unsafe impl Send for Udp {}

fn to_storage(a: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero bytes are a valid `sockaddr_storage`.
    let mut st: libc::sockaddr_storage = unsafe { MaybeUninit::zeroed().assume_init() };
    let len = match a {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: `sockaddr_storage` is larger than and aligned for `sockaddr_in`.
            unsafe {
                (&mut st as *mut libc::sockaddr_storage)
                    .cast::<libc::sockaddr_in>()
                    .write(sin)
            };
            core::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: `sockaddr_storage` is larger than and aligned for `sockaddr_in6`.
            unsafe {
                (&mut st as *mut libc::sockaddr_storage)
                    .cast::<libc::sockaddr_in6>()
                    .write(sin6)
            };
            core::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (st, len as libc::socklen_t)
}

fn from_storage(st: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match st.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a `sockaddr_in`.
            let sin =
                unsafe { &*(st as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = std::net::Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::from((ip, u16::from_be(sin.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a `sockaddr_in6`.
            let sin6 =
                unsafe { &*(st as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::from((ip, u16::from_be(sin6.sin6_port))))
        }
        _ => None,
    }
}

impl Udp {
    /// Binds a non-blocking socket to `addr` (`127.0.0.1:0` for any port).
    ///
    /// # Errors
    /// The bind fails.
    pub fn bind(addr: &str) -> io::Result<Self> {
        let sock = UdpSocket::bind(addr)?;
        sock.set_nonblocking(true)?;
        let mut rx_bufs = vec![0u8; BURST * RX_SLOT];
        // SAFETY: all-zero bytes are valid for these plain C structs (null pointers, zero sizes).
        let mut rx: Box<RxArrays> = Box::new(unsafe { MaybeUninit::zeroed().assume_init() });
        let base = rx_bufs.as_mut_ptr();
        for i in 0..BURST {
            // SAFETY: `i * RX_SLOT` stays inside `rx_bufs`, which holds `BURST * RX_SLOT` bytes.
            let slot = unsafe { base.add(i * RX_SLOT) };
            rx.iov[i] = libc::iovec {
                iov_base: slot.cast(),
                iov_len: RX_SLOT,
            };
            let iov: *mut libc::iovec = &mut rx.iov[i];
            let name: *mut libc::sockaddr_storage = &mut rx.names[i];
            rx.msgs[i].msg_hdr.msg_iov = iov;
            rx.msgs[i].msg_hdr.msg_iovlen = 1;
            rx.msgs[i].msg_hdr.msg_name = name.cast();
        }
        Ok(Self {
            sock,
            peers: Vec::new(),
            by_addr: HashMap::new(),
            rx_bufs,
            rx,
            tx_iov: Vec::with_capacity(BURST * PACK_FRAMES),
            client_only: false,
            connected: None,
            sealer: None,
            seal_bufs: Vec::new(),
            stats: UdpStats::default(),
        })
    }

    /// Seals every datagram under `psk` and accepts only datagrams sealed under it (see the
    /// module docs). Both ends need the same key.
    pub fn with_psk(mut self, psk: &Psk) -> Self {
        self.sealer = Some(Box::new(Sealer::new(psk)));
        self
    }

    /// What the socket refused and passed (sealed mode).
    pub fn stats(&self) -> UdpStats {
        self.stats
    }

    /// A socket on `addr` that only connects out (nothing connects to it). While it has one
    /// peer the socket is connected to it, as a plain UDP client's would be: sends skip the
    /// per-datagram route lookup. A second peer disconnects it.
    ///
    /// # Errors
    /// The bind fails.
    pub fn client(addr: &str) -> io::Result<Self> {
        Ok(Self {
            client_only: true,
            ..Self::bind(addr)?
        })
    }

    /// Connects the socket to `a` (or dissolves the connection for `None`).
    fn set_connected(&mut self, a: Option<&SocketAddr>) -> io::Result<()> {
        let (st, len) = match a {
            Some(a) => to_storage(a),
            None => {
                // SAFETY: all-zero bytes are a valid `sockaddr_storage`.
                let mut st: libc::sockaddr_storage = unsafe { MaybeUninit::zeroed().assume_init() };
                st.ss_family = libc::AF_UNSPEC as libc::sa_family_t;
                (
                    st,
                    core::mem::size_of::<libc::sockaddr>() as libc::socklen_t,
                )
            }
        };
        // SAFETY: `st` is a live `sockaddr_storage` of which `len` bytes are initialized.
        let r = unsafe {
            libc::connect(
                self.sock.as_raw_fd(),
                (&st as *const libc::sockaddr_storage).cast(),
                len,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn peer_for(&mut self, a: SocketAddr) -> PeerId {
        if let Some(p) = self.by_addr.get(&a) {
            return *p;
        }
        let p = self.peers.len() as PeerId;
        let (st, len) = to_storage(&a);
        self.peers.push((a, st, len));
        self.by_addr.insert(a, p);
        p
    }
}

#[cold]
fn count_refused(s: &mut UdpStats, why: Refused) {
    match why {
        Refused::Malformed => s.malformed += 1,
        Refused::BadTag => s.bad_tag += 1,
        Refused::Replay => s.replays += 1,
    }
}

impl Transport for Udp {
    const NAME: &'static str = "udp";
    const MTU: usize = UDP_MTU;
    const TX_BURST: usize = BURST;
    const RX_BURST: usize = BURST;
    const FRAMES_PER_UNIT: usize = PACK_FRAMES;

    fn send_burst(&mut self, q: &mut TxQueue) -> io::Result<usize> {
        if q.is_empty() {
            return Ok(0);
        }
        // Gather consecutive frames for one peer into one datagram (scatter-gather, no copy),
        // up to PACK_FRAMES frames and UDP_MTU bytes; up to BURST datagrams per call.
        let mut iov: Vec<libc::iovec> = std::mem::take(&mut self.tx_iov);
        iov.clear();
        // (first iov, frames, peer, first queue index)
        let mut spans: [(usize, usize, PeerId, usize); BURST] = [(0, 0, 0, 0); BURST];
        let mut datagrams = 0;
        let mut i = 0;
        while datagrams < BURST {
            let Some((peer, _)) = q.get(i) else { break };
            if self.peers.get(peer as usize).is_none() {
                if datagrams == 0 {
                    // The first frame names an unknown peer: drop it so the queue moves on.
                    q.consume(1);
                    self.tx_iov = iov;
                    return Ok(1);
                }
                break;
            }
            let first = iov.len();
            let first_q = i;
            let mut bytes = 0;
            while let Some((p, buf)) = q.get(i) {
                if p != peer
                    || iov.len() - first == PACK_FRAMES
                    || (bytes > 0 && bytes + buf.len() > UDP_MTU)
                {
                    break;
                }
                iov.push(libc::iovec {
                    iov_base: buf.as_ptr() as *mut libc::c_void,
                    iov_len: buf.len(),
                });
                bytes += buf.len();
                i += 1;
            }
            spans[datagrams] = (first, iov.len() - first, peer, first_q);
            datagrams += 1;
        }
        if let Some(sealer) = self.sealer.as_deref_mut() {
            // Each datagram copied into its own buffer, sealed there, and sent as one iovec.
            iov.clear();
            if self.seal_bufs.len() < datagrams {
                self.seal_bufs.resize_with(datagrams, Vec::new);
            }
            for (d, span) in spans[..datagrams].iter_mut().enumerate() {
                let buf = &mut self.seal_bufs[d];
                buf.clear();
                buf.resize(SEAL_HEADER_BYTES, 0);
                for k in span.3..span.3 + span.1 {
                    let (_, f) = q.get(k).expect("frame gathered above");
                    buf.extend_from_slice(f);
                }
                sealer.seal(buf);
                iov.push(libc::iovec {
                    iov_base: buf.as_ptr() as *mut libc::c_void,
                    iov_len: buf.len(),
                });
                span.0 = d;
            }
        }
        // SAFETY: all-zero bytes are a valid `mmsghdr` (null pointers, zero lengths).
        let mut msgs: [libc::mmsghdr; BURST] = unsafe { MaybeUninit::zeroed().assume_init() };
        let sealed = self.sealer.is_some();
        for (m, &(first, frames, peer, _)) in msgs.iter_mut().zip(&spans[..datagrams]) {
            if self.connected != Some(peer) {
                let (_, st, len) = &self.peers[peer as usize];
                m.msg_hdr.msg_name = st as *const libc::sockaddr_storage as *mut libc::c_void;
                m.msg_hdr.msg_namelen = *len;
            }
            m.msg_hdr.msg_iov = iov[first..].as_mut_ptr();
            m.msg_hdr.msg_iovlen = if sealed { 1 } else { frames as _ };
        }
        // SAFETY: `msgs[..datagrams]` point to iovecs in `iov` (not resized from here on),
        // buffers in `q` or `self.seal_bufs` and addresses in `self.peers`, none of which change
        // during the call; the kernel only reads them.
        let sent = unsafe {
            libc::sendmmsg(
                self.sock.as_raw_fd(),
                msgs.as_mut_ptr(),
                datagrams as libc::c_uint,
                libc::MSG_DONTWAIT,
            )
        };
        self.tx_iov = iov;
        let frames_in = |k: usize| spans[..k].iter().map(|s| s.1).sum::<usize>();
        if sealed && sent > 0 {
            self.stats.sealed += sent as u64;
        }
        if sent < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                // A per-datagram failure (e.g. refused): drop that datagram, as the network would.
                _ => {
                    let n = frames_in(1);
                    q.consume(n);
                    Ok(n)
                }
            };
        }
        let n = frames_in(sent as usize);
        q.consume(n);
        Ok(n)
    }

    fn recv_burst<F: FnMut(PeerId, &[u8])>(&mut self, max: usize, mut f: F) -> io::Result<usize> {
        let n = max.min(BURST);
        if n == 0 {
            return Ok(0);
        }
        for m in self.rx.msgs[..n].iter_mut() {
            m.msg_hdr.msg_namelen =
                core::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            m.msg_hdr.msg_controllen = 0;
            m.msg_hdr.msg_flags = 0;
            m.msg_len = 0;
        }
        // SAFETY: the first `n` headers point to distinct `RX_SLOT` slices of `rx_bufs` and to
        // distinct `sockaddr_storage`s in `rx` (set up in `bind`), all owned by `self` and live for
        // the call; MSG_DONTWAIT makes it non-blocking.
        let got = unsafe {
            libc::recvmmsg(
                self.sock.as_raw_fd(),
                self.rx.msgs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_DONTWAIT,
                core::ptr::null_mut(),
            )
        };
        if got < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock
                | io::ErrorKind::Interrupted
                | io::ErrorKind::ConnectionRefused => Ok(0),
                _ => Err(e),
            };
        }
        let got = got as usize;
        let mut delivered = 0;
        for i in 0..got {
            let Some(addr) = from_storage(&self.rx.names[i]) else {
                continue;
            };
            // A datagram larger than the buffer is truncated (MSG_TRUNC); the frame check (or
            // the tag) then rejects it, so cap the length at the buffer.
            let len = (self.rx.msgs[i].msg_len as usize).min(RX_SLOT);
            let start = i * RX_SLOT;
            let d = &mut self.rx_bufs[start..start + len];
            let plain = match self.sealer.as_deref_mut() {
                None => 0..len,
                Some(s) => match s.open(d) {
                    Ok(r) => {
                        self.stats.opened += 1;
                        r
                    }
                    Err(why) => {
                        count_refused(&mut self.stats, why);
                        continue; // a peer is known only once it proves the key
                    }
                },
            };
            let peer = self.peer_for(addr);
            let d = &self.rx_bufs[start + plain.start..start + plain.end];
            delivered += split_frames(d, |fr| f(peer, fr));
        }
        Ok(delivered)
    }

    fn connect(&mut self, addr: &str) -> io::Result<PeerId> {
        let a = super::resolve(addr)?;
        let first = self.peers.is_empty();
        let p = self.peer_for(a);
        if self.client_only {
            if first {
                self.set_connected(Some(&a))?;
                self.connected = Some(p);
            } else if self.connected.is_some_and(|c| c != p) {
                self.set_connected(None)?;
                self.connected = None;
            }
        }
        Ok(p)
    }

    fn local_addr(&self) -> String {
        self.sock
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(i: u8, len: usize) -> Vec<u8> {
        let h = FrameHeader {
            request_id: u64::from(i),
            payload_len: len as u32,
            ..FrameHeader::new(crate::FrameKind::Request)
        };
        let mut f = h.encode().to_vec();
        f.resize(f.len() + len, i);
        f
    }

    #[test]
    fn a_burst_crosses_packed_in_one_datagram() {
        let mut a = Udp::bind("127.0.0.1:0").unwrap();
        let mut b = Udp::bind("127.0.0.1:0").unwrap();
        let pb = a.connect(&b.local_addr()).unwrap();
        let mut q = TxQueue::new(64);
        for i in 0..10u8 {
            q.push(pb, &frame(i, 100));
        }
        assert_eq!(
            a.send_burst(&mut q).unwrap(),
            10,
            "all ten frames leave in one call"
        );
        let mut got = Vec::new();
        for _ in 0..10_000 {
            b.recv_burst(1, |_, f| got.push(f.to_vec())).unwrap();
            if !got.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        assert_eq!(got.len(), 10, "one datagram carried all ten");
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, f)| f == &frame(i as u8, 100)));
    }

    #[test]
    fn a_client_socket_is_connected_while_it_has_one_peer() {
        let mut srv = Udp::bind("127.0.0.1:0").unwrap();
        let other = Udp::bind("127.0.0.1:0").unwrap();
        let mut c = Udp::client("127.0.0.1:0").unwrap();
        let ps = c.connect(&srv.local_addr()).unwrap();
        assert_eq!(c.connected, Some(ps));
        let mut q = TxQueue::new(8);
        q.push(ps, &frame(1, 10));
        assert_eq!(c.send_burst(&mut q).unwrap(), 1);
        let mut got = Vec::new();
        for _ in 0..10_000 {
            srv.recv_burst(1, |p, f| got.push((p, f.to_vec()))).unwrap();
            if !got.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        assert_eq!(got[0].1, frame(1, 10));
        // The server answers to the address it saw; the connected client takes it.
        q.push(got[0].0, &frame(2, 3));
        assert_eq!(srv.send_burst(&mut q).unwrap(), 1);
        let mut back = Vec::new();
        for _ in 0..10_000 {
            c.recv_burst(1, |_, f| back.push(f.to_vec())).unwrap();
            if !back.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        assert_eq!(back, vec![frame(2, 3)]);
        // A second peer: no longer connected, and both peers are reachable.
        let po = c.connect(&other.local_addr()).unwrap();
        assert_ne!(po, ps);
        assert_eq!(c.connected, None);
        q.push(ps, &frame(3, 1));
        q.push(po, &frame(4, 1));
        assert_eq!(c.send_burst(&mut q).unwrap(), 2);
    }

    /// Frames `b` received within a while.
    fn recv_all(b: &mut Udp, want: usize) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        for _ in 0..2_000 {
            b.recv_burst(BURST, |_, f| got.push(f.to_vec())).unwrap();
            if got.len() >= want {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        got
    }

    /// One datagram `a` sends for `frames`, caught by a plain socket.
    fn capture(a: &mut Udp, frames: &[Vec<u8>]) -> Vec<u8> {
        let tap = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        tap.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let p = a.connect(&tap.local_addr().unwrap().to_string()).unwrap();
        let mut q = TxQueue::new(64);
        for f in frames {
            q.push(p, f);
        }
        assert_eq!(a.send_burst(&mut q).unwrap(), frames.len());
        let mut buf = vec![0u8; RX_SLOT];
        let n = tap.recv(&mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    #[test]
    fn sealed_datagrams_cross_and_hide_their_frames() {
        let k = Psk::from_bytes([5; 32]);
        let mut a = Udp::bind("127.0.0.1:0").unwrap().with_psk(&k);
        let mut b = Udp::bind("127.0.0.1:0").unwrap().with_psk(&k);
        let frames: Vec<Vec<u8>> = (0..5).map(|i| frame(i, 200)).collect();
        let d = capture(&mut a, &frames);
        assert_eq!(d.len(), 5 * (32 + 200) + SEAL_OVERHEAD);
        assert!(
            !d.windows(4).any(|w| w == MAGIC.to_le_bytes()),
            "frames in clear"
        );
        let pb = a.connect(&b.local_addr()).unwrap();
        let mut q = TxQueue::new(64);
        for f in &frames {
            q.push(pb, f);
        }
        a.send_burst(&mut q).unwrap();
        assert_eq!(recv_all(&mut b, 5), frames);
        assert_eq!(b.stats().opened, 1);
    }

    #[test]
    fn wrong_key_replay_tamper_and_truncation_are_dropped_and_counted() {
        let k = Psk::from_bytes([8; 32]);
        let mut a = Udp::bind("127.0.0.1:0").unwrap().with_psk(&k);
        let mut wrong = Udp::bind("127.0.0.1:0")
            .unwrap()
            .with_psk(&Psk::from_bytes([9; 32]));
        let mut plain = Udp::bind("127.0.0.1:0").unwrap();
        let mut b = Udp::bind("127.0.0.1:0").unwrap().with_psk(&k);
        let good = capture(&mut a, &[frame(1, 40)]);
        let foreign = capture(&mut wrong, &[frame(2, 40)]);
        let clear = capture(&mut plain, &[frame(3, 40)]);
        let mut tampered = good.clone();
        tampered[30] ^= 1;
        let truncated = good[..good.len() - 1].to_vec();
        let inject = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = b.local_addr();
        for d in [&foreign, &clear, &tampered, &truncated, &good, &good, &good] {
            inject.send_to(d, &to).unwrap();
        }
        let got = recv_all(&mut b, 1);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut more = Vec::new();
        b.recv_burst(BURST, |_, f| more.push(f.to_vec())).unwrap();
        assert_eq!(got, vec![frame(1, 40)], "only the good datagram, once");
        assert!(more.is_empty(), "a replay got through: {more:?}");
        let s = b.stats();
        assert_eq!(
            (s.opened, s.bad_tag, s.malformed, s.replays),
            (1, 3, 1, 2),
            "{s:?}"
        );
        assert_eq!(b.peers.len(), 1, "refused datagrams made no peer");
    }

    #[test]
    fn splitting_hands_garbage_on_as_one_piece() {
        let mut d = frame(1, 3);
        d.extend_from_slice(b"garbage after a good frame");
        let mut pieces = Vec::new();
        assert_eq!(split_frames(&d, |p| pieces.push(p.to_vec())), 2);
        assert_eq!(pieces[0], frame(1, 3));
        assert_eq!(pieces[1], b"garbage after a good frame");
        let mut short = frame(2, 50);
        short.truncate(60);
        assert_eq!(split_frames(&short, |p| assert_eq!(p.len(), 60)), 1);
        assert_eq!(split_frames(&[], |_| unreachable!()), 0);
    }
}
