//! The RPC frame: a 32-byte header followed by an opaque payload.
//!
//! One layout serves the shared-memory rings and every transport, so the soft NIC moves frames
//! between them without re-encoding. A frame starts on a cache-line boundary in a ring and
//! occupies `ceil((HEADER_BYTES + payload_len) / CACHE_LINE)` lines. All fields are
//! little-endian; [`FrameHeader`] is `#[repr(C)]` with its offsets asserted at compile time, and
//! is read and written through byte arrays (never by casting pointers), so a frame from outside
//! is only trusted after [`FrameHeader::decode`] and [`check_frame`] have looked at it.

use crate::RpcError;

/// Size of one cache line and of one ring slot.
pub const CACHE_LINE: usize = 64;
/// Size of the frame header in bytes.
pub const HEADER_BYTES: usize = 32;
/// First two bytes of every frame: `0xDA66` ("DAGger").
pub const MAGIC: u16 = 0xDA66;
/// Protocol version; a frame of another version is dropped and counted.
pub const VERSION: u8 = 1;
/// Largest payload any frame may carry (ring frames and transports may set lower limits).
pub const MAX_PAYLOAD_BYTES: usize = 1 << 20;

/// What a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    /// A call: `method_id` names the method, `request_id` identifies the call on its connection.
    Request = 1,
    /// The answer to a request with the same `conn_id` and `request_id`; `aux` is the [`Status`].
    Response = 2,
    /// Opens a connection (client → server); `request_id` is the client's nonce.
    Connect = 3,
    /// Accepts a connection (server → client); `conn_id` is the server's id for it, `aux` the
    /// client's connection id echoed back, `request_id` the nonce.
    ConnectAck = 4,
    /// Closes a connection (either side).
    Close = 5,
    /// Ring-only filler that skips to the end of the ring (never sent on a transport).
    Pad = 0xFF,
}

impl FrameKind {
    /// The kind for a wire byte, or `None` for an unknown kind.
    pub fn from_u8(b: u8) -> Option<Self> {
        Some(match b {
            1 => Self::Request,
            2 => Self::Response,
            3 => Self::Connect,
            4 => Self::ConnectAck,
            5 => Self::Close,
            0xFF => Self::Pad,
            _ => return None,
        })
    }
}

/// Outcome of a call, carried in a response's `aux` field (and produced locally for timeouts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Status {
    /// The handler ran and returned the payload.
    Ok = 0,
    /// No response within the timeout after every retry (produced by the caller's side).
    Timeout = 1,
    /// The server has no method with this id.
    UnknownMethod = 2,
    /// The connection is closed or unknown to the server (it restarted); the call did not run.
    Disconnected = 3,
    /// The handler reported an application error; the payload carries its message.
    HandlerError = 4,
    /// The server has no handler or worker for the service.
    Unavailable = 5,
    /// The request or response exceeded a size limit.
    TooLarge = 6,
}

impl Status {
    /// The status for a response's `aux` value; unknown values (any above the last status,
    /// all 32 bits compared) read as [`Status::HandlerError`].
    pub fn from_aux(v: u32) -> Self {
        match v {
            0 => Self::Ok,
            1 => Self::Timeout,
            2 => Self::UnknownMethod,
            3 => Self::Disconnected,
            5 => Self::Unavailable,
            6 => Self::TooLarge,
            _ => Self::HandlerError,
        }
    }
}

/// Header flag: `checksum` covers header and payload and must be verified.
pub const FLAG_CHECKSUM: u16 = 1 << 0;
/// Header flag: this request is a retransmission of an earlier one with the same id.
pub const FLAG_RETRY: u16 = 1 << 1;
/// Header flag, on a request a NIC hands its worker with DT on the NIC core: the NIC core
/// handed this call's data transformation back, so the payload is the request's wire bytes
/// (not a decoded record's token) and the response must be the reply's wire bytes
/// ([`crate::Handler::handle_wire`]).
pub const FLAG_WIRE_DT: u16 = 1 << 2;
/// Every flag this version knows; a frame with any other bit set is malformed.
pub const KNOWN_FLAGS: u16 = FLAG_CHECKSUM | FLAG_RETRY | FLAG_WIRE_DT;

/// The fixed 32-byte frame header (little-endian on the wire and in rings).
///
/// ```text
///  0      2   3    4      6        8        12           16           24   28
///  magic  ver kind flags  method   conn_id  payload_len  request_id   aux  checksum
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C)]
pub struct FrameHeader {
    /// [`MAGIC`].
    pub magic: u16,
    /// [`VERSION`].
    pub version: u8,
    /// A [`FrameKind`] as `u8`.
    pub kind: u8,
    /// `FLAG_*` bits.
    pub flags: u16,
    /// Index of the method in its service (order of the `.proto` `service` block).
    pub method_id: u16,
    /// Connection the frame belongs to (whose id depends on the direction; see `nic`).
    pub conn_id: u32,
    /// Bytes of payload after the header.
    pub payload_len: u32,
    /// Call identifier, unique per connection and increasing (a sequence number on the wire).
    pub request_id: u64,
    /// Status for responses; for requests, how far below `request_id` every earlier call is
    /// complete at the caller (0: no information).
    pub aux: u32,
    /// Checksum of header (with this field zero) and payload when `FLAG_CHECKSUM` is set.
    pub checksum: u32,
}

const _: () = {
    assert!(core::mem::size_of::<FrameHeader>() == HEADER_BYTES);
    assert!(core::mem::offset_of!(FrameHeader, magic) == 0);
    assert!(core::mem::offset_of!(FrameHeader, version) == 2);
    assert!(core::mem::offset_of!(FrameHeader, kind) == 3);
    assert!(core::mem::offset_of!(FrameHeader, flags) == 4);
    assert!(core::mem::offset_of!(FrameHeader, method_id) == 6);
    assert!(core::mem::offset_of!(FrameHeader, conn_id) == 8);
    assert!(core::mem::offset_of!(FrameHeader, payload_len) == 12);
    assert!(core::mem::offset_of!(FrameHeader, request_id) == 16);
    assert!(core::mem::offset_of!(FrameHeader, aux) == 24);
    assert!(core::mem::offset_of!(FrameHeader, checksum) == 28);
    assert!(HEADER_BYTES <= CACHE_LINE && CACHE_LINE % HEADER_BYTES == 0);
};

impl FrameHeader {
    /// A header of `kind` with magic and version filled in and everything else zero.
    pub fn new(kind: FrameKind) -> Self {
        Self {
            magic: MAGIC,
            version: VERSION,
            kind: kind as u8,
            ..Self::default()
        }
    }

    /// The kind, if known.
    pub fn frame_kind(&self) -> Option<FrameKind> {
        FrameKind::from_u8(self.kind)
    }

    /// Bytes of the whole frame (header and payload).
    pub fn frame_bytes(&self) -> usize {
        HEADER_BYTES + self.payload_len as usize
    }

    /// Writes the header in wire order.
    #[inline]
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0..2].copy_from_slice(&self.magic.to_le_bytes());
        b[2] = self.version;
        b[3] = self.kind;
        b[4..6].copy_from_slice(&self.flags.to_le_bytes());
        b[6..8].copy_from_slice(&self.method_id.to_le_bytes());
        b[8..12].copy_from_slice(&self.conn_id.to_le_bytes());
        b[12..16].copy_from_slice(&self.payload_len.to_le_bytes());
        b[16..24].copy_from_slice(&self.request_id.to_le_bytes());
        b[24..28].copy_from_slice(&self.aux.to_le_bytes());
        b[28..32].copy_from_slice(&self.checksum.to_le_bytes());
        b
    }

    /// Reads a header from the first [`HEADER_BYTES`] of `b` without judging it.
    ///
    /// # Errors
    /// [`RpcError::Truncated`] if `b` is shorter than a header.
    #[inline]
    pub fn decode(b: &[u8]) -> Result<Self, RpcError> {
        // The error built only when returned (as an `ok_or` argument it was built, then
        // dropped, on every ring peek).
        let Some(b) = b
            .get(..HEADER_BYTES)
            .and_then(|s| <&[u8; HEADER_BYTES]>::try_from(s).ok())
        else {
            return Err(RpcError::Truncated {
                needed: HEADER_BYTES,
                got: b.len(),
            });
        };
        Ok(Self {
            magic: u16::from_le_bytes([b[0], b[1]]),
            version: b[2],
            kind: b[3],
            flags: u16::from_le_bytes([b[4], b[5]]),
            method_id: u16::from_le_bytes([b[6], b[7]]),
            conn_id: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
            payload_len: u32::from_le_bytes([b[12], b[13], b[14], b[15]]),
            request_id: u64::from_le_bytes([
                b[16], b[17], b[18], b[19], b[20], b[21], b[22], b[23],
            ]),
            aux: u32::from_le_bytes([b[24], b[25], b[26], b[27]]),
            checksum: u32::from_le_bytes([b[28], b[29], b[30], b[31]]),
        })
    }

    /// Checks magic, version, kind, flags and the payload bound (not the checksum).
    ///
    /// # Errors
    /// [`RpcError::Malformed`] naming the first bad field, [`RpcError::TooLarge`] for a
    /// payload over `max_payload`.
    #[inline]
    pub fn validate(&self, max_payload: usize) -> Result<FrameKind, RpcError> {
        if self.magic != MAGIC {
            return Err(RpcError::Malformed("magic"));
        }
        if self.version != VERSION {
            return Err(RpcError::Malformed("version"));
        }
        if self.flags & !KNOWN_FLAGS != 0 {
            return Err(RpcError::Malformed("flags"));
        }
        if self.flags & FLAG_CHECKSUM == 0 && self.checksum != 0 {
            return Err(RpcError::Malformed("checksum without FLAG_CHECKSUM"));
        }
        let Some(kind) = self.frame_kind() else {
            return Err(RpcError::Malformed("kind"));
        };
        if self.payload_len as usize > max_payload {
            return Err(RpcError::TooLarge {
                len: self.payload_len as usize,
                max: max_payload,
            });
        }
        Ok(kind)
    }
}

/// Number of cache lines a frame with `payload_len` bytes of payload occupies in a ring.
#[inline]
pub const fn lines_for(payload_len: usize) -> usize {
    (HEADER_BYTES + payload_len).div_ceil(CACHE_LINE)
}

/// 32-bit checksum of a header (its `checksum` bytes read as zero) and a payload.
///
/// A multiply–rotate mix over 8-byte words (a wyhash-style round): cheap enough for every
/// frame at tens of millions per second and sensitive to every bit. It guards against corrupted
/// datagrams and torn writes, not against an adversary.
pub fn checksum(header: &[u8; HEADER_BYTES], payload: &[u8]) -> u32 {
    let mut h: u64 = 0x9E37_79B9_7F4A_7C15 ^ (payload.len() as u64).rotate_left(17);
    let mut hdr = *header;
    hdr[28..32].fill(0);
    for w in hdr.chunks_exact(8) {
        h = mix(h, u64::from_le_bytes(w.try_into().expect("8-byte chunk")));
    }
    let mut words = payload.chunks_exact(8);
    for w in &mut words {
        h = mix(h, u64::from_le_bytes(w.try_into().expect("8-byte chunk")));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = mix(h, u64::from_le_bytes(last) ^ ((rest.len() as u64) << 56));
    }
    let h = fmix(h);
    (h ^ (h >> 32)) as u32
}

#[inline(always)]
fn mix(h: u64, w: u64) -> u64 {
    // Each step is a bijection of `h` for a fixed word, so two inputs that differ in exactly one
    // word always differ after it; the rotation spreads high bits back down.
    (h ^ w).wrapping_mul(0xA076_1D64_78BD_642F).rotate_left(29)
}

#[inline(always)]
fn fmix(mut h: u64) -> u64 {
    // MurmurHash3's 64-bit finalizer (bijective avalanche).
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

/// Sets `FLAG_CHECKSUM` and the checksum of a complete frame in place.
///
/// # Panics
/// If `frame` is shorter than a header (our own frames always have one).
pub fn seal(frame: &mut [u8]) {
    let (hdr, payload) = frame.split_at_mut(HEADER_BYTES);
    let flags = u16::from_le_bytes([hdr[4], hdr[5]]) | FLAG_CHECKSUM;
    hdr[4..6].copy_from_slice(&flags.to_le_bytes());
    let hdr_arr: &mut [u8; HEADER_BYTES] = hdr.try_into().expect("header slice");
    let c = checksum(hdr_arr, payload);
    hdr_arr[28..32].copy_from_slice(&c.to_le_bytes());
}

/// Parses and fully checks one frame received from outside: header fields, exact length and
/// (when flagged) checksum. Returns the header and the payload.
///
/// # Errors
/// [`RpcError::Truncated`], [`RpcError::Malformed`], [`RpcError::TooLarge`],
/// [`RpcError::TrailingBytes`] or [`RpcError::BadChecksum`].
pub fn check_frame(
    frame: &[u8],
    max_payload: usize,
) -> Result<(FrameHeader, FrameKind, &[u8]), RpcError> {
    let h = FrameHeader::decode(frame)?;
    let kind = h.validate(max_payload)?;
    let need = h.frame_bytes();
    if frame.len() < need {
        return Err(RpcError::Truncated {
            needed: need,
            got: frame.len(),
        });
    }
    if frame.len() > need {
        return Err(RpcError::TrailingBytes {
            extra: frame.len() - need,
        });
    }
    let payload = &frame[HEADER_BYTES..need];
    if h.flags & FLAG_CHECKSUM != 0 {
        let hdr: &[u8; HEADER_BYTES] = frame[..HEADER_BYTES].try_into().expect("header slice");
        if checksum(hdr, payload) != h.checksum {
            return Err(RpcError::BadChecksum);
        }
    }
    Ok((h, kind, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> FrameHeader {
        FrameHeader {
            flags: FLAG_RETRY,
            method_id: 7,
            conn_id: 0xDEAD_BEEF,
            payload_len: 5,
            request_id: u64::MAX - 3,
            aux: 42,
            ..FrameHeader::new(FrameKind::Request)
        }
    }

    #[test]
    fn every_aux_value_reads_as_a_status() {
        for status in [
            Status::Ok,
            Status::Timeout,
            Status::UnknownMethod,
            Status::Disconnected,
            Status::HandlerError,
            Status::Unavailable,
            Status::TooLarge,
        ] {
            assert_eq!(Status::from_aux(status as u32), status);
        }
        // All 32 bits count: a value that is Ok in its low half is not Ok.
        for v in [7, 0x1_0000, 0x1_0006, u32::MAX] {
            assert_eq!(Status::from_aux(v), Status::HandlerError, "{v:#x}");
        }
    }

    #[test]
    fn header_roundtrips_and_is_little_endian() {
        let h = sample();
        let b = h.encode();
        assert_eq!(&b[0..2], &MAGIC.to_le_bytes());
        assert_eq!(FrameHeader::decode(&b).unwrap(), h);
        assert_eq!(lines_for(0), 1);
        assert_eq!(lines_for(32), 1);
        assert_eq!(lines_for(33), 2);
        assert_eq!(lines_for(64), 2);
    }

    #[test]
    fn sealed_frame_checks_and_any_flip_is_caught() {
        let mut f = sample().encode().to_vec();
        f.extend_from_slice(b"hello");
        seal(&mut f);
        let (h, k, p) = check_frame(&f, 1024).unwrap();
        assert_eq!((k, p, h.method_id), (FrameKind::Request, &b"hello"[..], 7));
        for byte in 0..f.len() {
            for bit in 0..8 {
                let mut g = f.clone();
                g[byte] ^= 1 << bit;
                assert!(
                    check_frame(&g, 1024).is_err(),
                    "flip at {byte}.{bit} went unnoticed"
                );
            }
        }
    }

    proptest::proptest! {
        /// Any bytes: an error or a frame whose parts add up, never a panic.
        #[test]
        fn any_bytes_check_without_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            if let Ok((h, _, p)) = check_frame(&bytes, 1 << 20) {
                proptest::prop_assert_eq!(h.frame_bytes(), bytes.len());
                proptest::prop_assert_eq!(p.len(), h.payload_len as usize);
            }
        }

        /// Sealed frames of any content check, and re-encode to the same bytes.
        #[test]
        fn sealed_frames_roundtrip(method in 0u16.., conn in 0u32.., id in 0u64.., aux in 0u32..,
                                   payload in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let h = FrameHeader { method_id: method, conn_id: conn, request_id: id, aux, ..FrameHeader::new(FrameKind::Response) };
            let mut f = FrameHeader { payload_len: payload.len() as u32, ..h }.encode().to_vec();
            f.extend_from_slice(&payload);
            seal(&mut f);
            let (g, k, p) = check_frame(&f, 1 << 20).unwrap();
            proptest::prop_assert_eq!(k, FrameKind::Response);
            proptest::prop_assert_eq!(p, &payload[..]);
            proptest::prop_assert_eq!(&g.encode()[..], &f[..HEADER_BYTES]);
        }
    }

    #[test]
    fn bad_frames_name_their_fault() {
        let mut f = sample().encode().to_vec();
        f.extend_from_slice(b"hello");
        assert!(matches!(
            check_frame(&f[..10], 1024),
            Err(RpcError::Truncated { .. })
        ));
        assert!(matches!(
            check_frame(&f[..35], 1024),
            Err(RpcError::Truncated { .. })
        ));
        let mut g = f.clone();
        g.push(0);
        assert!(matches!(
            check_frame(&g, 1024),
            Err(RpcError::TrailingBytes { extra: 1 })
        ));
        assert!(matches!(check_frame(&f, 4), Err(RpcError::TooLarge { .. })));
        let mut g = f.clone();
        g[3] = 9;
        assert!(matches!(
            check_frame(&g, 1024),
            Err(RpcError::Malformed("kind"))
        ));
        let mut g = f.clone();
        g[5] = 0x80;
        assert!(matches!(
            check_frame(&g, 1024),
            Err(RpcError::Malformed("flags"))
        ));
    }
}
