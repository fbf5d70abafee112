//! In-process loopback transport: endpoints of one [`LoopbackNet`] exchange frames through
//! bounded in-memory queues. It runs anywhere, so every test of the stack can use it.
//!
//! An endpoint's address is `lo:N`. A full inbox drops the frame (and counts it), like a NIC
//! whose receive queue overflowed.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{PeerId, Transport, TxQueue};

/// Frames an inbox holds before it drops.
pub const INBOX_FRAMES: usize = 8192;

type Inbox = Arc<Mutex<VecDeque<(u32, Vec<u8>)>>>;

/// A set of endpoints that can reach each other.
#[derive(Clone, Default)]
pub struct LoopbackNet {
    inboxes: Arc<Mutex<Vec<Inbox>>>,
    dropped: Arc<AtomicU64>,
}

impl LoopbackNet {
    /// An empty network.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new endpoint (address `lo:N`, N counting from 0).
    pub fn endpoint(&self) -> Loopback {
        let inbox: Inbox = Arc::new(Mutex::new(VecDeque::new()));
        let mut all = self.inboxes.lock().unwrap_or_else(|e| e.into_inner());
        all.push(inbox.clone());
        Loopback {
            id: (all.len() - 1) as u32,
            net: self.clone(),
            inbox,
            peers: Vec::new(),
            peer_of: HashMap::new(),
            scratch: VecDeque::new(),
        }
    }

    /// Frames dropped because an inbox was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// One endpoint of a [`LoopbackNet`].
pub struct Loopback {
    id: u32,
    net: LoopbackNet,
    inbox: Inbox,
    /// Peer id → endpoint inbox and number.
    peers: Vec<(u32, Inbox)>,
    peer_of: HashMap<u32, PeerId>,
    scratch: VecDeque<(u32, Vec<u8>)>,
}

impl Loopback {
    fn peer_for(&mut self, ep: u32) -> Option<PeerId> {
        if let Some(p) = self.peer_of.get(&ep) {
            return Some(*p);
        }
        let inbox = self
            .net
            .inboxes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(ep as usize)?
            .clone();
        let p = self.peers.len() as PeerId;
        self.peers.push((ep, inbox));
        self.peer_of.insert(ep, p);
        Some(p)
    }
}

impl Transport for Loopback {
    const NAME: &'static str = "loopback";
    const MTU: usize = 1 << 20;
    const TX_BURST: usize = 64;
    const RX_BURST: usize = 64;

    fn send_burst(&mut self, q: &mut TxQueue) -> io::Result<usize> {
        let mut n = 0;
        while n < Self::TX_BURST {
            let Some((peer, buf)) = q.pop_front() else {
                break;
            };
            n += 1;
            let Some((_, inbox)) = self.peers.get(peer as usize) else {
                continue;
            };
            let mut ib = inbox.lock().unwrap_or_else(|e| e.into_inner());
            if ib.len() >= INBOX_FRAMES {
                self.net.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            ib.push_back((self.id, buf));
        }
        Ok(n)
    }

    fn recv_burst<F: FnMut(PeerId, &[u8])>(&mut self, max: usize, mut f: F) -> io::Result<usize> {
        {
            let mut ib = self.inbox.lock().unwrap_or_else(|e| e.into_inner());
            let take = ib.len().min(max);
            self.scratch.extend(ib.drain(..take));
        }
        let n = self.scratch.len();
        while let Some((from, buf)) = self.scratch.pop_front() {
            if let Some(p) = self.peer_for(from) {
                f(p, &buf);
            }
        }
        Ok(n)
    }

    fn connect(&mut self, addr: &str) -> io::Result<PeerId> {
        let ep: u32 = addr
            .strip_prefix("lo:")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("not a loopback address: {addr}"),
                )
            })?;
        self.peer_for(ep).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no loopback endpoint {addr}"),
            )
        })
    }

    fn local_addr(&self) -> String {
        format!("lo:{}", self.id)
    }
}
