//! Single-producer single-consumer frame rings over cache-line slots, in shared memory.
//!
//! A ring is a power-of-two number of 64-byte lines plus two indices on their own cache lines:
//! `tail` (lines the producer has published) and `head` (lines the consumer has released).
//! Both only grow; a line's position is `index & mask`. A frame (header + payload) starts on a
//! line and occupies [`lines_for`] consecutive lines; a frame never wraps: when it would, the
//! producer writes a [`FrameKind::Pad`] frame over the rest of the ring and starts again at line
//! 0. The fast path takes no lock: the producer writes lines, then publishes `tail` with one
//! `Release` store per batch; the consumer reads `tail` with `Acquire` only when its cached copy
//! runs out, and releases `head` once per batch. Each side caches the other's index so that a
//! batch of B frames costs one cross-core transfer of each index.
//!
//! The memory may be mapped into another process; what the peer wrote is validated before use
//! (header fields, bounds against the published tail), and all positions are masked, so a
//! confused peer can make us drop frames but never read or write outside the ring. A hostile
//! peer's index is caught too: a `head` ahead of what was published, or a `tail` more than the
//! ring ahead of `head`, marks the ring corrupt ([`Producer::is_corrupt`],
//! [`RpcError::CorruptRing`]) and the owner of the other end stops using it. Every header is
//! copied out of the ring once and validated on the copy, so a peer rewriting it meanwhile
//! cannot change a length after its check. A peek does a bounded amount of work whatever the
//! peer does (at most one pad frame, then a frame, an error or nothing).

use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::frame::{lines_for, FrameHeader, FrameKind, CACHE_LINE, HEADER_BYTES};
use crate::RpcError;

/// The two ring indices, each on its own cache line so producer and consumer never share one.
#[repr(C, align(64))]
pub struct RingIndices {
    tail: AtomicU64,
    _pad0: [u8; CACHE_LINE - 8],
    head: AtomicU64,
    _pad1: [u8; CACHE_LINE - 8],
}

const _: () = {
    assert!(core::mem::size_of::<RingIndices>() == 2 * CACHE_LINE);
    assert!(core::mem::align_of::<RingIndices>() == CACHE_LINE);
    assert!(core::mem::offset_of!(RingIndices, head) == CACHE_LINE);
};

impl RingIndices {
    /// Resets both indices to zero (only while neither side uses the ring).
    pub(crate) fn reset(&self) {
        self.tail.store(0, Ordering::Release);
        self.head.store(0, Ordering::Release);
    }
}

/// Why a push did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushError {
    /// Not enough free lines now; retry after the consumer releases some (backpressure).
    Full,
    /// The frame can never fit: it needs more than half the ring.
    TooLarge,
}

/// Raw view of one ring: indices, data lines and the object keeping the memory mapped.
#[derive(Clone)]
struct RingRef {
    idx: NonNull<RingIndices>,
    data: NonNull<u8>,
    lines: u64,
    _keep: Arc<dyn Send + Sync>,
}

// SAFETY: the ring memory is only touched through the SPSC protocol (atomics for the indices,
// disjoint line ranges for data), and `_keep` is `Send + Sync`, so a `RingRef` may move threads.
unsafe impl Send for RingRef {}

impl RingRef {
    #[inline]
    fn idx(&self) -> &RingIndices {
        // SAFETY: `idx` points to a live, aligned `RingIndices` for as long as `_keep` lives
        // (guaranteed by the caller of `from_raw`); only atomics are accessed through it.
        unsafe { self.idx.as_ref() }
    }

    #[inline]
    fn line_ptr(&self, pos: u64) -> *mut u8 {
        debug_assert!(pos < self.lines);
        // SAFETY: `pos < lines`, so the offset stays inside the `lines * CACHE_LINE` data area.
        unsafe { self.data.as_ptr().add(pos as usize * CACHE_LINE) }
    }
}

/// Builds the two ends of a ring over caller-provided memory.
///
/// # Safety
/// `idx` must point to a `RingIndices` and `data` to `lines * CACHE_LINE` bytes, both valid,
/// 64-byte aligned and kept alive by `keep`; `lines` must be a power of two ≥ 2. At most one
/// `Producer` and one `Consumer` may exist for the ring at any time, across all processes, and
/// no other code may write the data lines.
pub unsafe fn from_raw(
    idx: NonNull<RingIndices>,
    data: NonNull<u8>,
    lines: u64,
    keep: Arc<dyn Send + Sync>,
) -> (Producer, Consumer) {
    assert!(
        lines.is_power_of_two() && lines >= 2,
        "ring lines must be a power of two >= 2"
    );
    let r = RingRef {
        idx,
        data,
        lines,
        _keep: keep,
    };
    // Start from whatever the indices say, so a side that re-attaches resumes where it was.
    let tail = r.idx().tail.load(Ordering::Acquire);
    let head = r.idx().head.load(Ordering::Acquire);
    (
        Producer {
            ring: r.clone(),
            tail,
            cached_head: head,
            published: tail,
            corrupt: false,
        },
        Consumer {
            ring: r,
            head,
            cached_tail: tail,
            released: head,
            peeked: 0,
        },
    )
}

/// Heap memory for a ring that lives inside one process (tests, in-process queues).
struct HeapRing {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the allocation is plain memory owned by this value; access goes through the ring
// protocol.
unsafe impl Send for HeapRing {}
// SAFETY: as above; `HeapRing` itself exposes nothing.
unsafe impl Sync for HeapRing {}

impl Drop for HeapRing {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed(self.layout)` and is freed exactly once.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// A ring of `lines` cache lines in this process's heap.
///
/// # Panics
/// If `lines` is not a power of two ≥ 2 or the allocation fails.
pub fn channel(lines: usize) -> (Producer, Consumer) {
    assert!(
        lines.is_power_of_two() && lines >= 2,
        "ring lines must be a power of two >= 2"
    );
    let bytes = core::mem::size_of::<RingIndices>() + lines * CACHE_LINE;
    let layout = Layout::from_size_align(bytes, CACHE_LINE).expect("ring layout");
    // SAFETY: `layout` has non-zero size.
    let ptr = NonNull::new(unsafe { alloc::alloc_zeroed(layout) })
        .unwrap_or_else(|| alloc::handle_alloc_error(layout));
    let keep = Arc::new(HeapRing { ptr, layout });
    let idx = ptr.cast::<RingIndices>();
    // SAFETY: the data area starts right after the indices, inside the allocation.
    let data =
        unsafe { NonNull::new_unchecked(ptr.as_ptr().add(core::mem::size_of::<RingIndices>())) };
    // SAFETY: zeroed memory is a valid `RingIndices` (two zero atomics); the allocation is
    // 64-byte aligned, sized for `lines` lines and owned by `keep`; we hand out the only pair.
    unsafe { from_raw(idx, data, lines as u64, keep) }
}

/// The writing end of a ring.
pub struct Producer {
    ring: RingRef,
    /// Next line to write (published or not).
    tail: u64,
    /// Last `head` read from the consumer.
    cached_head: u64,
    /// Last `tail` stored for the consumer.
    published: u64,
    /// The consumer's `head` was seen outside `[published - lines, published]`.
    corrupt: bool,
}

impl Producer {
    /// Total lines in the ring.
    pub fn capacity_lines(&self) -> usize {
        self.ring.lines as usize
    }

    /// Largest payload a single frame may carry in this ring (half the ring, minus a header).
    pub fn max_payload(&self) -> usize {
        (self.ring.lines as usize / 2) * CACHE_LINE - HEADER_BYTES
    }

    /// Lines free right now, as far as this side knows (refreshes the consumer's index).
    pub fn free_lines(&mut self) -> usize {
        self.load_head();
        (self.ring.lines - (self.tail - self.cached_head).min(self.ring.lines)) as usize
    }

    /// Whether the consumer ever published an impossible `head` (behind by more than the
    /// ring, or ahead of what we published): its end of the ring is not to be trusted, and
    /// pushes report `Full` from then on.
    pub fn is_corrupt(&self) -> bool {
        self.corrupt
    }

    /// Re-reads the consumer's index and says whether the ring is corrupt (for a periodic
    /// check: a push reads the index only when the ring looks full).
    pub fn check_peer(&mut self) -> bool {
        self.load_head();
        self.corrupt
    }

    /// Refreshes `cached_head` from the consumer, keeping the old value (and marking the ring
    /// corrupt) when the new one is impossible, so `cached_head <= published <= tail` holds.
    #[inline]
    fn load_head(&mut self) {
        let head = self.ring.idx().head.load(Ordering::Acquire);
        if self.published.wrapping_sub(head) > self.ring.lines {
            self.mark_corrupt();
        } else if !self.corrupt {
            self.cached_head = head;
        }
    }

    #[cold]
    #[inline(never)]
    fn mark_corrupt(&mut self) {
        self.corrupt = true;
    }

    #[inline]
    fn reserve(&mut self, lines: u64) -> Result<u64, PushError> {
        let cap = self.ring.lines;
        if lines > cap / 2 {
            return Err(PushError::TooLarge);
        }
        let pos = self.tail & (cap - 1);
        let to_end = cap - pos;
        let need = if lines <= to_end {
            lines
        } else {
            to_end + lines
        };
        if self.tail + need - self.cached_head > cap {
            self.load_head();
            if self.corrupt || self.tail + need - self.cached_head > cap {
                return Err(PushError::Full);
            }
        }
        if lines > to_end {
            let mut pad = FrameHeader::new(FrameKind::Pad);
            pad.payload_len = (to_end as usize * CACHE_LINE - HEADER_BYTES) as u32;
            let bytes = pad.encode();
            // SAFETY: line `pos` is free (checked above) and a header fits in one line.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    self.ring.line_ptr(pos),
                    HEADER_BYTES,
                )
            };
            self.tail += to_end;
        }
        let at = self.tail & (cap - 1);
        self.tail += lines;
        Ok(at)
    }

    /// Writes one frame (header with `payload_len` set from `payload`) without publishing it.
    ///
    /// # Errors
    /// [`PushError::Full`] when the consumer is behind; [`PushError::TooLarge`] when the frame
    /// needs more than half the ring.
    #[inline]
    pub fn push(&mut self, header: &FrameHeader, payload: &[u8]) -> Result<(), PushError> {
        self.push_parts(header, &[payload])
    }

    /// Like [`push`](Self::push) with the payload gathered from several slices.
    ///
    /// # Errors
    /// As [`push`](Self::push).
    #[inline]
    pub fn push_parts(&mut self, header: &FrameHeader, parts: &[&[u8]]) -> Result<(), PushError> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > u32::MAX as usize {
            return Err(PushError::TooLarge);
        }
        let at = self.reserve(lines_for(len) as u64)?;
        let mut h = *header;
        h.payload_len = len as u32;
        let bytes = h.encode();
        let dst = self.ring.line_ptr(at);
        // SAFETY: `reserve` gave us `lines_for(len)` free, contiguous lines starting at `at`
        // (frames never wrap), which hold the header and `len` payload bytes; the sources are
        // ordinary slices that cannot overlap ring memory we own exclusively.
        unsafe {
            core::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, HEADER_BYTES);
            let mut off = HEADER_BYTES;
            for p in parts {
                core::ptr::copy_nonoverlapping(p.as_ptr(), dst.add(off), p.len());
                off += p.len();
            }
        }
        Ok(())
    }

    /// Writes one complete frame given as bytes (header as received, payload after it).
    ///
    /// # Errors
    /// As [`push`](Self::push); the header is taken as is except for `payload_len`, which is set
    /// from the bytes.
    pub fn push_frame(&mut self, frame: &[u8]) -> Result<(), PushError> {
        let h = FrameHeader::decode(frame).map_err(|_| PushError::TooLarge)?;
        self.push(&h, &frame[HEADER_BYTES..])
    }

    /// Makes every written frame visible to the consumer (one `Release` store).
    #[inline]
    pub fn publish(&mut self) {
        if self.published != self.tail {
            self.ring.idx().tail.store(self.tail, Ordering::Release);
            self.published = self.tail;
        }
    }

    /// Whether frames were written but not yet published.
    pub fn has_unpublished(&self) -> bool {
        self.published != self.tail
    }

    /// Whether the consumer has released everything published (refreshes its index).
    pub fn is_drained(&mut self) -> bool {
        self.load_head();
        self.cached_head == self.published
    }

    /// Forgets local progress and starts from the shared indices (after a reset by the owner).
    pub(crate) fn resync(&mut self) {
        self.tail = self.ring.idx().tail.load(Ordering::Acquire);
        self.published = self.tail;
        self.cached_head = self.ring.idx().head.load(Ordering::Acquire);
        self.corrupt = self.tail.wrapping_sub(self.cached_head) > self.ring.lines;
        if self.corrupt {
            self.cached_head = self.tail;
        }
    }
}

/// One frame seen by [`Consumer::peek`], borrowed from ring memory until `advance`.
#[derive(Debug)]
pub struct Peeked<'a> {
    /// The header as read (validated: magic, version, kind, flags, bounds).
    pub header: FrameHeader,
    /// The kind from the header.
    pub kind: FrameKind,
    /// The payload bytes.
    pub payload: &'a [u8],
}

/// The reading end of a ring.
pub struct Consumer {
    ring: RingRef,
    /// Next line to read (released or not).
    head: u64,
    /// Last `tail` read from the producer.
    cached_tail: u64,
    /// Last `head` stored for the producer.
    released: u64,
    /// Lines taken by the frame returned from the last `peek`, 0 if none.
    peeked: u64,
}

impl Consumer {
    /// Whether a frame may be available (refreshes the producer's index when the cache is empty).
    #[inline]
    pub fn has_data(&mut self) -> bool {
        if self.head != self.cached_tail {
            return true;
        }
        self.cached_tail = self.ring.idx().tail.load(Ordering::Acquire);
        self.head != self.cached_tail
    }

    /// The next frame without consuming it, `None` when empty.
    ///
    /// # Errors
    /// [`RpcError::CorruptRing`] when the producer wrote something that is not a valid frame;
    /// everything published so far is skipped, so the next call starts clean.
    #[inline]
    pub fn peek(&mut self, max_payload: usize) -> Option<Result<Peeked<'_>, RpcError>> {
        let mut pads = 0u32;
        loop {
            if !self.has_data() {
                return None;
            }
            let cap = self.ring.lines;
            let avail = self.cached_tail.wrapping_sub(self.head);
            if avail > cap {
                return Some(Err(self.skip_corrupt("tail ahead of ring")));
            }
            let pos = self.head & (cap - 1);
            let mut hb = [0u8; HEADER_BYTES];
            // SAFETY: line `pos` lies in [head, tail), published by the producer (Acquire load
            // of `tail` above) and not rewritten until we release it.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    self.ring.line_ptr(pos),
                    hb.as_mut_ptr(),
                    HEADER_BYTES,
                )
            };
            let h = match FrameHeader::decode(&hb) {
                Ok(h) => h,
                Err(_) => return Some(Err(self.skip_corrupt("header"))),
            };
            let kind = match h.validate(usize::MAX) {
                Ok(k) => k,
                Err(_) => return Some(Err(self.skip_corrupt("header"))),
            };
            let lines = lines_for(h.payload_len as usize) as u64;
            let to_end = cap - pos;
            if lines > to_end || lines > avail {
                return Some(Err(self.skip_corrupt("frame past published lines")));
            }
            if kind == FrameKind::Pad {
                // A producer pads only to reach line 0, where the next frame fits; a second
                // pad in a row is a peer keeping us busy.
                if lines != to_end || pads > 0 {
                    return Some(Err(self.skip_corrupt("pad length")));
                }
                pads += 1;
                self.head += lines;
                continue;
            }
            if h.payload_len as usize > max_payload {
                // A well-formed frame we refuse: report it as too large and let the caller
                // `advance` past it.
                self.peeked = lines;
                return Some(Err(RpcError::TooLarge {
                    len: h.payload_len as usize,
                    max: max_payload,
                }));
            }
            self.peeked = lines;
            // SAFETY: the payload lies inside the `lines` published lines starting at `pos`
            // (checked above), which stay untouched by the producer until released.
            let payload = unsafe {
                core::slice::from_raw_parts(
                    self.ring.line_ptr(pos).add(HEADER_BYTES),
                    h.payload_len as usize,
                )
            };
            return Some(Ok(Peeked {
                header: h,
                kind,
                payload,
            }));
        }
    }

    #[cold]
    #[inline(never)]
    fn skip_corrupt(&mut self, what: &'static str) -> RpcError {
        self.head = self.cached_tail;
        self.peeked = 0;
        RpcError::CorruptRing(what)
    }

    /// Consumes the frame returned by the last `peek` (or the too-large one it reported).
    #[inline]
    pub fn advance(&mut self) {
        self.head += self.peeked;
        self.peeked = 0;
    }

    /// Hands consumed lines back to the producer (one `Release` store).
    #[inline]
    pub fn release(&mut self) {
        if self.released != self.head {
            self.ring.idx().head.store(self.head, Ordering::Release);
            self.released = self.head;
        }
    }

    /// Forgets local progress and starts from the shared indices (after a reset by the owner).
    pub(crate) fn resync(&mut self) {
        self.head = self.ring.idx().head.load(Ordering::Acquire);
        self.released = self.head;
        self.cached_tail = self.ring.idx().tail.load(Ordering::Acquire);
        self.peeked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hdr(id: u64) -> FrameHeader {
        FrameHeader {
            request_id: id,
            ..FrameHeader::new(FrameKind::Request)
        }
    }

    fn pop(c: &mut Consumer) -> Option<(u64, Vec<u8>)> {
        let r = match c.peek(usize::MAX)? {
            Ok(p) => (p.header.request_id, p.payload.to_vec()),
            Err(e) => panic!("unexpected {e}"),
        };
        c.advance();
        Some(r)
    }

    #[test]
    fn empty_then_one_then_empty() {
        let (mut p, mut c) = channel(8);
        assert!(c.peek(usize::MAX).is_none());
        p.push(&hdr(1), b"abc").unwrap();
        assert!(
            c.peek(usize::MAX).is_none(),
            "unpublished frames are invisible"
        );
        p.publish();
        assert_eq!(pop(&mut c), Some((1, b"abc".to_vec())));
        assert!(c.peek(usize::MAX).is_none());
    }

    #[test]
    fn full_ring_pushes_back_until_released() {
        let (mut p, mut c) = channel(8);
        // Each frame with 40 bytes of payload takes two lines: four fit.
        for i in 0..4 {
            p.push(&hdr(i), &[i as u8; 40]).unwrap();
        }
        assert_eq!(p.push(&hdr(9), &[0; 40]), Err(PushError::Full));
        p.publish();
        assert_eq!(pop(&mut c).unwrap().0, 0);
        assert_eq!(
            p.push(&hdr(9), &[0; 40]),
            Err(PushError::Full),
            "not released yet"
        );
        c.release();
        p.push(&hdr(4), &[4; 40]).unwrap();
        p.publish();
        for i in 1..5 {
            assert_eq!(pop(&mut c), Some((i, vec![i as u8; 40])));
        }
    }

    #[test]
    fn too_large_is_refused_for_good() {
        let (mut p, _c) = channel(8);
        assert_eq!(p.max_payload(), 4 * 64 - 32);
        assert_eq!(
            p.push(&hdr(0), &vec![0; p.max_payload() + 1]),
            Err(PushError::TooLarge)
        );
        assert!(p.push(&hdr(0), &vec![0; p.max_payload()]).is_ok());
    }

    #[test]
    fn wraps_with_a_pad_frame() {
        let (mut p, mut c) = channel(8);
        p.push(&hdr(0), &[0; 100]).unwrap(); // 3 lines
        p.push(&hdr(1), &[1; 100]).unwrap(); // 3 lines -> tail 6
        p.publish();
        assert_eq!(pop(&mut c).unwrap().0, 0);
        assert_eq!(pop(&mut c).unwrap().0, 1);
        c.release();
        p.push(&hdr(2), &[2; 100]).unwrap(); // pad 2 lines, then 3 at the start
        p.publish();
        assert_eq!(pop(&mut c), Some((2, vec![2; 100])));
    }

    #[test]
    fn garbage_from_the_producer_is_skipped_not_trusted() {
        let (mut p, mut c) = channel(8);
        p.push(&hdr(0), b"x").unwrap();
        p.publish();
        // Corrupt the magic of the published frame in place.
        // SAFETY: test-only write to the first data line, which the consumer has not read.
        unsafe { *p.ring.line_ptr(0) ^= 0xFF };
        assert!(matches!(
            c.peek(usize::MAX),
            Some(Err(RpcError::CorruptRing(_)))
        ));
        assert!(c.peek(usize::MAX).is_none());
        c.release();
        p.push(&hdr(1), b"y").unwrap();
        p.publish();
        assert_eq!(pop(&mut c), Some((1, b"y".to_vec())));
    }

    #[test]
    fn spsc_across_threads_keeps_order_and_content() {
        let (mut p, mut c) = channel(64);
        const N: u64 = 20_000;
        let t = std::thread::spawn(move || {
            for i in 0..N {
                let len = (i % 150) as usize;
                let payload = vec![(i % 251) as u8; len];
                loop {
                    match p.push(&hdr(i), &payload) {
                        Ok(()) => break,
                        Err(PushError::Full) => {
                            p.publish();
                            std::thread::yield_now();
                        }
                        Err(e) => panic!("{e:?}"),
                    }
                }
                if i % 7 == 0 {
                    p.publish();
                }
            }
            p.publish();
        });
        let mut next = 0;
        while next < N {
            match pop(&mut c) {
                Some((id, payload)) => {
                    assert_eq!(id, next);
                    assert_eq!(payload, vec![(next % 251) as u8; (next % 150) as usize]);
                    next += 1;
                    if next % 5 == 0 {
                        c.release();
                    }
                }
                None => {
                    c.release();
                    std::thread::yield_now();
                }
            }
        }
        t.join().unwrap();
    }

    proptest! {
        /// A producer that scribbles arbitrary bytes and indices: the consumer reports errors
        /// or frames inside the ring, never panics, never reads out of bounds.
        #[test]
        fn consumer_survives_arbitrary_ring_memory(
            junk in proptest::collection::vec(proptest::num::u8::ANY, 8 * 64),
            tail in 0u64..40,
            head in 0u64..40,
        ) {
            let (p, mut c) = channel(8);
            // SAFETY: test-only: fill the 8 data lines and the indices while no frame is in use.
            unsafe { core::ptr::copy_nonoverlapping(junk.as_ptr(), p.ring.line_ptr(0), junk.len()) };
            p.ring.idx().tail.store(tail, Ordering::Release);
            p.ring.idx().head.store(head, Ordering::Release);
            c.resync();
            for _ in 0..20 {
                match c.peek(1 << 20) {
                    None => break,
                    Some(Ok(f)) => prop_assert!(f.payload.len() <= 8 * 64),
                    Some(Err(_)) => {}
                }
                c.advance();
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(usize),
        Publish,
        Pop,
        Release,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0usize..300).prop_map(Op::Push),
            2 => Just(Op::Publish),
            4 => Just(Op::Pop),
            2 => Just(Op::Release),
        ]
    }

    proptest! {
        /// Against a model queue: FIFO order, no loss, no duplicates, `Full` only when the
        /// model's line count (with padding) says the ring cannot take the frame.
        #[test]
        fn ring_matches_a_model_queue(lines_log2 in 2u32..7, ops in proptest::collection::vec(op(), 1..400)) {
            let lines = 1usize << lines_log2;
            let (mut p, mut c) = channel(lines);
            let mut written: std::collections::VecDeque<(u64, usize)> = Default::default();
            let mut published = 0usize; // how many of `written` are published
            let mut next_id = 0u64;
            for op in ops {
                match op {
                    Op::Push(len) => {
                        let r = p.push(&hdr(next_id), &vec![(next_id % 256) as u8; len]);
                        match r {
                            Ok(()) => { written.push_back((next_id, len)); next_id += 1; }
                            Err(PushError::TooLarge) => prop_assert!(lines_for(len) > lines / 2),
                            Err(PushError::Full) => prop_assert!(lines_for(len) <= lines / 2),
                        }
                    }
                    Op::Publish => { p.publish(); published = written.len(); }
                    Op::Pop => {
                        match pop(&mut c) {
                            Some((id, payload)) => {
                                let (eid, elen) = written.pop_front().expect("popped more than pushed");
                                prop_assert!(published > 0, "read an unpublished frame");
                                published -= 1;
                                prop_assert_eq!(id, eid);
                                prop_assert_eq!(payload, vec![(eid % 256) as u8; elen]);
                            }
                            None => prop_assert_eq!(published, 0),
                        }
                    }
                    Op::Release => c.release(),
                }
            }
            // Drain: everything published comes out, in order.
            p.publish();
            c.release();
            while let Some((id, _)) = pop(&mut c) {
                let (eid, _) = written.pop_front().expect("extra frame");
                prop_assert_eq!(id, eid);
            }
            prop_assert!(written.is_empty());
        }
    }
}
