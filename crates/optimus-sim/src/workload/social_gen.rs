//! Protobuf wire writing and the DeathStarBench social-network value generators (the
//! `compose-post.lua` script's character set and users, 63-bit ids, Jaeger carriers, shortened
//! URLs), shared by the services of Optimus Prime §6.4 (`op::dsb`) and RPCAcc (`socialnet`).

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// Protobuf wire writer for the generated values.
#[derive(Default)]
pub(crate) struct Wire(pub(crate) Vec<u8>);

impl Wire {
    pub(crate) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    pub(crate) fn int(&mut self, field: u32, v: u64) {
        self.varint(u64::from(field) << 3);
        self.varint(v);
    }
    pub(crate) fn bytes(&mut self, field: u32, b: &[u8]) {
        self.varint((u64::from(field) << 3) | 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    pub(crate) fn message(&mut self, field: u32, m: Wire) {
        self.bytes(field, &m.0);
    }
}

/// The benchmark's value generators over a seeded stream.
pub(crate) struct Gen(pub(crate) ChaCha8Rng);

impl Gen {
    pub(crate) fn new(seed: u64) -> Self {
        Self(ChaCha8Rng::seed_from_u64(seed))
    }
    /// `n` characters of the workload script's 62-character set.
    pub(crate) fn chars(&mut self, n: usize) -> String {
        const SET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        (0..n)
            .map(|_| char::from(SET[(self.0.next_u32() % 62) as usize]))
            .collect()
    }
    pub(crate) fn hex(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(b"0123456789abcdef"[(self.0.next_u32() % 16) as usize]))
            .collect()
    }
    /// A user index of the script (1..=962).
    pub(crate) fn user(&mut self) -> u64 {
        1 + u64::from(self.0.next_u32() % 962)
    }
    /// A random 63-bit id (request, post and media ids are 64-bit random numbers).
    pub(crate) fn id(&mut self) -> u64 {
        self.0.next_u64() >> 1
    }
    /// A Jaeger carrier (`uber-trace-id` → `trace:span:parent:1`) as map entry `field`.
    pub(crate) fn carrier(&mut self, w: &mut Wire, field: u32) {
        let v = format!("{}:{}:{}:1", self.hex(16), self.hex(16), self.hex(16));
        let mut e = Wire::default();
        e.bytes(1, b"uber-trace-id");
        e.bytes(2, v.as_bytes());
        w.message(field, e);
    }
    /// The URL-shorten handler's short URL.
    pub(crate) fn short_url(&mut self) -> String {
        format!("http://short-url/{}", self.chars(10))
    }
    /// A post's text as `compose-post.lua` writes it: 256 characters, then `k` mentions
    /// (` @username_N`) and `k` URLs (` http://` + 64 characters), or, once the post is
    /// stored, those URLs shortened.
    pub(crate) fn post_text(&mut self, k: usize, shortened: bool) -> String {
        let mut text = self.chars(256);
        for _ in 0..k {
            text.push_str(&format!(" @username_{}", self.user()));
        }
        for _ in 0..k {
            text.push(' ');
            let url = if shortened {
                self.short_url()
            } else {
                format!("http://{}", self.chars(64))
            };
            text.push_str(&url);
        }
        text
    }
    /// A `Url {shortened_url, expanded_url}` as field `field`.
    pub(crate) fn url(&mut self, w: &mut Wire, field: u32) {
        let mut u = Wire::default();
        u.bytes(1, self.short_url().as_bytes());
        u.bytes(2, format!("http://{}", self.chars(64)).as_bytes());
        w.message(field, u);
    }
    /// A `{user_id, username}` message of a fresh user as field `field`.
    pub(crate) fn named(&mut self, w: &mut Wire, field: u32) {
        let n = self.user();
        let mut m = Wire::default();
        m.int(1, n);
        m.bytes(2, format!("username_{n}").as_bytes());
        w.message(field, m);
    }
    /// `ComposeUrls` of `k` URLs after the request id: the URLs (field 2) and the carrier
    /// (field 3) into `req`, each shortened `Url` (field 1) into `resp`.
    pub(crate) fn compose_urls(&mut self, k: usize, req: &mut Wire, resp: &mut Wire) {
        let urls: Vec<String> = (0..k)
            .map(|_| format!("http://{}", self.chars(64)))
            .collect();
        for u in &urls {
            req.bytes(2, u.as_bytes());
        }
        self.carrier(req, 3);
        for u in &urls {
            let mut m = Wire::default();
            m.bytes(1, self.short_url().as_bytes());
            m.bytes(2, u.as_bytes());
            resp.message(1, m);
        }
    }
}
