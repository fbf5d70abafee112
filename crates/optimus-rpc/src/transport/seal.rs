//! Authenticated datagrams under a pre-shared key: what [`Udp`](super::udp::Udp) does to each
//! datagram when given a [`Psk`].
//!
//! A sealed datagram is a 24-byte header, the packed frames encrypted, and a 16-byte tag:
//!
//! ```text
//!  0   magic "OPTA"      4   flags (0)        8   sender id (random per socket)
//!  16  sequence number (1, 2, ... per sender)  24  ciphertext ...  tag (16)
//! ```
//!
//! The cipher is XChaCha20-Poly1305; its 24-byte nonce is the sender id, the sequence number
//! and eight zero bytes, so nonces never repeat under the shared key (a random 64-bit id per
//! socket, a counter that never wraps within a socket's life). The header is the associated
//! data. A receiver keeps, per sender id it has authenticated, a window of the last
//! [`REPLAY_WINDOW`] sequence numbers: a datagram seen before, or older than the window, is
//! refused, so a replayed datagram cannot run a call twice or revive an old reply. Reordering
//! within the window is accepted. Windows are created only after a datagram authenticates, so
//! a peer without the key cannot make a receiver allocate; at most [`MAX_SENDERS`] are kept
//! (the least recently used goes).

use std::collections::HashMap;
use std::path::Path;

use chacha20poly1305::aead::{AeadInPlace, KeyInit, OsRng};
use chacha20poly1305::{Key, Tag, XChaCha20Poly1305, XNonce};

use crate::RpcError;

/// Bytes before the ciphertext.
pub const SEAL_HEADER_BYTES: usize = 24;
/// Bytes of the Poly1305 tag after it.
pub const SEAL_TAG_BYTES: usize = 16;
/// What sealing adds to a datagram.
pub const SEAL_OVERHEAD: usize = SEAL_HEADER_BYTES + SEAL_TAG_BYTES;
/// Sequence numbers a receiver remembers per sender (reordering tolerated within it).
pub const REPLAY_WINDOW: u64 = 4096;
/// Senders whose windows a receiver keeps.
pub const MAX_SENDERS: usize = 4096;
const SEAL_MAGIC: [u8; 4] = *b"OPTA";
const WINDOW_WORDS: usize = (REPLAY_WINDOW / 64) as usize;
const _: () = assert!(REPLAY_WINDOW.is_power_of_two() && REPLAY_WINDOW >= 64);

/// A 256-bit pre-shared key. Its `Debug` does not print the key.
#[derive(Clone)]
pub struct Psk([u8; 32]);

impl std::fmt::Debug for Psk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Psk(..)")
    }
}

impl Psk {
    /// A key from its 32 bytes.
    pub fn from_bytes(key: [u8; 32]) -> Self {
        Self(key)
    }

    /// A key from a file holding 64 hex digits (surrounding whitespace ignored) or exactly 32
    /// raw bytes. Make one with `head -c 32 /dev/urandom | xxd -p -c 64 > key`.
    ///
    /// # Errors
    /// The file cannot be read, or holds neither form.
    pub fn from_file(path: &Path) -> Result<Self, RpcError> {
        let bytes = std::fs::read(path)?;
        Self::parse(&bytes).ok_or_else(|| {
            RpcError::Config(format!(
                "{}: a pre-shared key file holds 64 hex digits or 32 raw bytes ({} bytes found)",
                path.display(),
                bytes.len()
            ))
        })
    }

    fn parse(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok().map(str::trim);
        if let Some(t) = text.filter(|t| t.len() == 64) {
            let mut k = [0u8; 32];
            for (i, k) in k.iter_mut().enumerate() {
                *k = u8::from_str_radix(t.get(2 * i..2 * i + 2)?, 16).ok()?;
            }
            return Some(Self(k));
        }
        Some(Self(bytes.try_into().ok()?))
    }
}

/// Why a datagram was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Shorter than header and tag, or not a sealed datagram.
    Malformed,
    /// The tag does not match: another key, or altered bytes.
    BadTag,
    /// A sequence number seen before or older than the window.
    Replay,
}

/// Sealing and opening state of one socket.
pub(crate) struct Sealer {
    cipher: XChaCha20Poly1305,
    sender_id: u64,
    next_seq: u64,
    windows: HashMap<u64, Window>,
    /// Bumped per accepted datagram; a window's `used` says when it last saw one (for LRU).
    clock: u64,
}

struct Window {
    /// Highest sequence number accepted.
    top: u64,
    /// Bit `s % REPLAY_WINDOW`: sequence `s` (within the window below `top`) was accepted.
    seen: [u64; WINDOW_WORDS],
    used: u64,
}

impl Window {
    /// Whether `seq` is new (not seen, not older than the window).
    fn is_fresh(&self, seq: u64) -> bool {
        if seq > self.top {
            return true;
        }
        if self.top - seq >= REPLAY_WINDOW {
            return false;
        }
        let b = seq % REPLAY_WINDOW;
        self.seen[(b / 64) as usize] & (1 << (b % 64)) == 0
    }

    /// Records `seq` (which `is_fresh` accepted).
    fn accept(&mut self, seq: u64) {
        if seq > self.top {
            let gap = seq - self.top;
            if gap >= REPLAY_WINDOW {
                self.seen = [0; WINDOW_WORDS];
            } else {
                for s in self.top + 1..seq {
                    let b = s % REPLAY_WINDOW;
                    self.seen[(b / 64) as usize] &= !(1 << (b % 64));
                }
            }
            self.top = seq;
        }
        let b = seq % REPLAY_WINDOW;
        self.seen[(b / 64) as usize] |= 1 << (b % 64);
    }
}

fn nonce(sender: u64, seq: u64) -> XNonce {
    let mut n = [0u8; 24];
    n[..8].copy_from_slice(&sender.to_le_bytes());
    n[8..16].copy_from_slice(&seq.to_le_bytes());
    XNonce::from(n)
}

impl Sealer {
    pub(crate) fn new(psk: &Psk) -> Self {
        use chacha20poly1305::aead::rand_core::RngCore;
        Self {
            cipher: XChaCha20Poly1305::new(Key::from_slice(&psk.0)),
            sender_id: OsRng.next_u64(),
            next_seq: 1,
            windows: HashMap::new(),
            clock: 0,
        }
    }

    /// Seals `buf[SEAL_HEADER_BYTES..]` (the plaintext, after room left for the header) in
    /// place and appends the tag.
    pub(crate) fn seal(&mut self, buf: &mut Vec<u8>) {
        assert!(buf.len() >= SEAL_HEADER_BYTES, "room for the header");
        let seq = self.next_seq;
        self.next_seq += 1;
        buf[..4].copy_from_slice(&SEAL_MAGIC);
        buf[4..8].copy_from_slice(&[0; 4]);
        buf[8..16].copy_from_slice(&self.sender_id.to_le_bytes());
        buf[16..24].copy_from_slice(&seq.to_le_bytes());
        let (head, body) = buf.split_at_mut(SEAL_HEADER_BYTES);
        let tag = self
            .cipher
            .encrypt_in_place_detached(&nonce(self.sender_id, seq), head, body)
            .expect("XChaCha20-Poly1305 takes any length a datagram has");
        buf.extend_from_slice(&tag);
    }

    /// Opens a sealed datagram in place; the plaintext is `d[SEAL_HEADER_BYTES..len - 16]`.
    ///
    /// # Errors
    /// Why the datagram was refused; nothing is recorded for a refused one.
    pub(crate) fn open(&mut self, d: &mut [u8]) -> Result<std::ops::Range<usize>, Refused> {
        if d.len() < SEAL_OVERHEAD || d[..4] != SEAL_MAGIC || d[4..8] != [0; 4] {
            return Err(Refused::Malformed);
        }
        let sender = u64::from_le_bytes(d[8..16].try_into().expect("8 bytes"));
        let seq = u64::from_le_bytes(d[16..24].try_into().expect("8 bytes"));
        if seq == 0 {
            return Err(Refused::Malformed);
        }
        if self.windows.get(&sender).is_some_and(|w| !w.is_fresh(seq)) {
            return Err(Refused::Replay);
        }
        let end = d.len() - SEAL_TAG_BYTES;
        let tag = Tag::clone_from_slice(&d[end..]);
        let (head, rest) = d.split_at_mut(SEAL_HEADER_BYTES);
        let body = &mut rest[..end - SEAL_HEADER_BYTES];
        self.cipher
            .decrypt_in_place_detached(&nonce(sender, seq), head, body, &tag)
            .map_err(|_| Refused::BadTag)?;
        self.clock += 1;
        if !self.windows.contains_key(&sender) && self.windows.len() >= MAX_SENDERS {
            self.evict_oldest();
        }
        let clock = self.clock;
        let w = self.windows.entry(sender).or_insert(Window {
            top: 0,
            seen: [0; WINDOW_WORDS],
            used: clock,
        });
        w.accept(seq);
        w.used = clock;
        Ok(SEAL_HEADER_BYTES..end)
    }

    #[cold]
    fn evict_oldest(&mut self) {
        if let Some((&k, _)) = self.windows.iter().min_by_key(|(_, w)| w.used) {
            self.windows.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(s: &mut Sealer, plain: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; SEAL_HEADER_BYTES];
        b.extend_from_slice(plain);
        s.seal(&mut b);
        b
    }

    #[test]
    fn round_trip_and_the_ciphertext_hides_the_plaintext() {
        let k = Psk::from_bytes([7; 32]);
        let (mut a, mut b) = (Sealer::new(&k), Sealer::new(&k));
        let mut d = sealed(&mut a, b"hello frames");
        assert_eq!(d.len(), 12 + SEAL_OVERHEAD);
        assert!(!d.windows(5).any(|w| w == b"hello"));
        let r = b.open(&mut d).unwrap();
        assert_eq!(&d[r], b"hello frames");
    }

    #[test]
    fn wrong_key_tampering_and_truncation_are_refused() {
        let mut a = Sealer::new(&Psk::from_bytes([1; 32]));
        let mut other = Sealer::new(&Psk::from_bytes([2; 32]));
        let mut b = Sealer::new(&Psk::from_bytes([1; 32]));
        let d = sealed(&mut a, b"payload bytes");
        assert_eq!(other.open(&mut d.clone()), Err(Refused::BadTag));
        for i in 0..d.len() {
            let mut t = d.clone();
            t[i] ^= 0x40;
            let r = b.open(&mut t);
            assert!(
                matches!(r, Err(Refused::BadTag | Refused::Malformed)),
                "flip at byte {i}: {r:?}"
            );
        }
        for n in 0..d.len() {
            let r = b.open(&mut d[..n].to_vec());
            assert!(r.is_err(), "truncated to {n} bytes accepted");
        }
        // After all that, the untouched datagram still opens (nothing refused was recorded).
        assert!(b.open(&mut d.clone()).is_ok());
    }

    #[test]
    fn replays_and_too_old_are_refused_reordering_is_not() {
        let k = Psk::from_bytes([3; 32]);
        let (mut a, mut b) = (Sealer::new(&k), Sealer::new(&k));
        let ds: Vec<Vec<u8>> = (0..10).map(|i| sealed(&mut a, &[i])).collect();
        // Out of order within the window: all accepted once.
        for i in [3, 1, 2, 0, 9, 5, 4, 8, 6, 7] {
            assert!(b.open(&mut ds[i].clone()).is_ok(), "datagram {i}");
        }
        for (i, d) in ds.iter().enumerate() {
            assert_eq!(
                b.open(&mut d.clone()),
                Err(Refused::Replay),
                "replay of {i}"
            );
        }
        // Jump far ahead: everything older than the window is refused, even if never seen.
        let mut old = Vec::new();
        for _ in 0..REPLAY_WINDOW + 5 {
            old.push(sealed(&mut a, b"x"));
        }
        let newest = old.pop().unwrap();
        assert!(b.open(&mut newest.clone()).is_ok());
        assert_eq!(b.open(&mut old[0].clone()), Err(Refused::Replay));
        // The newest's neighbour inside the window, never seen, is accepted.
        assert!(b.open(&mut old[old.len() - 1].clone()).is_ok());
    }

    #[test]
    fn key_files_take_hex_or_raw_bytes() {
        assert_eq!(Psk::parse(&[9; 32]).unwrap().0, [9; 32]);
        let hex = format!("  {}\n", "ab".repeat(32));
        assert_eq!(Psk::parse(hex.as_bytes()).unwrap().0, [0xab; 32]);
        assert!(Psk::parse(b"short").is_none());
        assert!(Psk::parse("zz".repeat(32).as_bytes()).is_none());
        assert_eq!(format!("{:?}", Psk::from_bytes([1; 32])), "Psk(..)");
    }
}
