//! Co-serialization at the wire: the top-level fields of a request that live in NIC memory
//! and pass through are never decoded. [`split`] cuts a request's bytes into the host fields'
//! (which the engine decodes for the app) and the NIC-resident fields' (kept as they came,
//! kernels opened) and notes where each NIC-resident field lies ([`Span`]); [`merge_pieces`]
//! merges the engine's encoding of a reply with the forwarded NIC-resident fields' bytes,
//! both in field-number order, into one canonical message. Nothing here allocates:
//! [`Fields`] walks bytes in place, and each byte of a request is scanned once.

/// Wire type of a length-delimited field.
pub(crate) const LEN: u8 = 2;

/// One top-level field: its number, wire type, all its bytes (tag included) and its value
/// (a length-delimited field's payload, else the value's bytes).
#[derive(Clone, Copy)]
pub(crate) struct WireField<'a> {
    pub(crate) number: u32,
    pub(crate) wire_type: u8,
    pub(crate) bytes: &'a [u8],
    pub(crate) value: &'a [u8],
}

/// A varint at `pos`: one of one or two bytes here, longer ones by [`varint`] (tags and
/// lengths are mostly that short).
#[inline(always)]
fn short_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    match *buf.get(*pos..)? {
        [b, ..] if b < 0x80 => {
            *pos += 1;
            Some(u64::from(b))
        }
        [b, c, ..] if c < 0x80 => {
            *pos += 2;
            Some(u64::from(b & 0x7f) | u64::from(c) << 7)
        }
        _ => varint(buf, pos),
    }
}

/// Moves `pos` past a varint whose value is not needed: its end found in one word where
/// eight bytes remain.
#[inline(always)]
fn skip_varint(buf: &[u8], pos: &mut usize) -> Option<()> {
    if let Some(w) = buf.get(*pos..*pos + 8) {
        let word = u64::from_le_bytes(w.try_into().ok()?);
        let ends = !word & 0x8080_8080_8080_8080;
        if ends != 0 {
            *pos += ends.trailing_zeros() as usize / 8 + 1;
            return Some(());
        }
    }
    varint(buf, pos).map(|_| ())
}

#[inline(never)]
fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// The top-level fields of a buffer, in order, scanned in place: each item is a field, or
/// `None` once, where the bytes are malformed or hold a group (whose end only a nested walk
/// finds: such messages take the record path); nothing follows a `None`.
#[derive(Clone)]
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    #[inline(always)]
    fn next_field(&mut self) -> Option<WireField<'a>> {
        let buf = self.buf;
        let mut pos = self.pos;
        let start = pos;
        let tag = short_varint(buf, &mut pos)?;
        let number = u32::try_from(tag >> 3).ok().filter(|&n| n != 0)?;
        let wire_type = (tag & 7) as u8;
        let value_start = pos;
        let value_len = match wire_type {
            0 => {
                skip_varint(buf, &mut pos)?;
                0
            }
            1 => 8,
            LEN => usize::try_from(short_varint(buf, &mut pos)?).ok()?,
            5 => 4,
            _ => return None,
        };
        let value_start = if wire_type == 0 { value_start } else { pos };
        let end = if wire_type == 0 {
            pos
        } else {
            pos.checked_add(value_len).filter(|&e| e <= buf.len())?
        };
        self.pos = end;
        Some(WireField {
            number,
            wire_type,
            bytes: &buf[start..end],
            value: &buf[value_start..end],
        })
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Option<WireField<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let f = self.next_field();
        if f.is_none() {
            self.pos = self.buf.len(); // malformed: stop here
        }
        Some(f)
    }
}

/// Whether every byte of `buf` scans as top-level fields (see [`Fields`]).
pub(crate) fn scans(buf: &[u8]) -> bool {
    Fields::new(buf).all(|f| f.is_some())
}

/// The top-level fields of `buf`, in order; `None` when the bytes do not scan (see
/// [`Fields`]).
#[cfg(test)]
pub(crate) fn fields(buf: &[u8]) -> Option<Vec<WireField<'_>>> {
    Fields::new(buf).collect()
}

/// Appends a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends field `number` with wire type `wire_type` and `value` (a payload for
/// length-delimited fields, which gets its length in front).
pub(crate) fn put_field(out: &mut Vec<u8>, number: u32, wire_type: u8, value: &[u8]) {
    put_varint(out, u64::from(number) << 3 | u64::from(wire_type));
    if wire_type == LEN {
        put_varint(out, value.len() as u64);
    }
    out.extend_from_slice(value);
}

/// Where one NIC-resident field lies in the bytes [`split`] wrote: its number and wire type,
/// the field's bytes (tag included) at `start..end` and its value at `value_start..end`, so
/// that co-serialization finds the forwarded fields without scanning the bytes again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) number: u32,
    pub(crate) wire_type: u8,
    pub(crate) start: usize,
    pub(crate) value_start: usize,
    pub(crate) end: usize,
}

/// Cuts `wire` into `host` (fields for which `is_nic` is false, and unknown ones) and `nic`
/// (the others; `open` may replace a NIC-resident field's payload, for kernels), noting
/// where each field written to `nic` lies in `spans`, in one pass. `None`: `wire` does not
/// scan (malformed, or a group; whatever `open` said); `Some(Err)`: `open` failed.
pub(crate) fn split<E>(
    wire: &[u8],
    is_nic: impl Fn(u32) -> bool,
    mut open: impl FnMut(&WireField<'_>) -> Option<Result<Vec<u8>, E>>,
    host: &mut Vec<u8>,
    nic: &mut Vec<u8>,
    spans: &mut Vec<Span>,
) -> Option<Result<(), E>> {
    let mut failed = None;
    for f in Fields::new(wire) {
        let f = f?;
        if failed.is_some() {
            continue; // only whether the rest scans matters now
        }
        if !is_nic(f.number) {
            host.extend_from_slice(f.bytes);
            continue;
        }
        let start = nic.len();
        let value_start = match open(&f) {
            None => {
                nic.extend_from_slice(f.bytes);
                start + (f.bytes.len() - f.value.len())
            }
            Some(Ok(v)) => {
                put_varint(nic, u64::from(f.number) << 3 | u64::from(LEN));
                put_varint(nic, v.len() as u64);
                let at = nic.len();
                nic.extend_from_slice(&v);
                at
            }
            Some(Err(e)) => {
                failed = Some(e);
                continue;
            }
        };
        spans.push(Span {
            number: f.number,
            wire_type: f.wire_type,
            start,
            value_start,
            end: nic.len(),
        });
    }
    Some(failed.map_or(Ok(()), Err))
}

/// A piece of a reply's NIC-resident fields, for [`merge_pieces`]: field `number`'s bytes,
/// tag included, at `range` of the request's NIC bytes (`in_scratch` false: forwarded as
/// they came) or of a scratch buffer (sealed by a kernel, or re-tagged).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    pub(crate) number: u32,
    pub(crate) in_scratch: bool,
    pub(crate) range: std::ops::Range<usize>,
}

/// Appends to `out` the fields of `encoded` (in field-number order) merged by number with
/// `pieces` (in field-number order; their bytes in `nic` or `scratch`), `encoded`'s first
/// among equals: [`merge_sorted`] without scanning the pieces' bytes. Bytes of `encoded`
/// that do not scan are appended as they are, then the pieces.
pub(crate) fn merge_pieces(
    encoded: &[u8],
    pieces: &[Piece],
    nic: &[u8],
    scratch: &[u8],
    out: &mut Vec<u8>,
) {
    let bytes = |p: &Piece| {
        if p.in_scratch {
            &scratch[p.range.clone()]
        } else {
            &nic[p.range.clone()]
        }
    };
    let mut rest = pieces.iter().peekable();
    if scans(encoded) {
        for f in Fields::new(encoded).flatten() {
            while let Some(p) = rest.next_if(|p| p.number < f.number) {
                out.extend_from_slice(bytes(p));
            }
            out.extend_from_slice(f.bytes);
        }
    } else {
        out.extend_from_slice(encoded);
    }
    for p in rest {
        out.extend_from_slice(bytes(p));
    }
}

/// Most parts [`Parts`] gathers a reply into; a reply that needs more is merged into one
/// buffer instead.
pub(crate) const MAX_PARTS: usize = 8;

/// Which buffer a part lies in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Source {
    Encoded,
    Nic,
    Scratch,
}

/// A reply as ranges of the buffers [`merge_pieces`] reads, in order, adjacent ranges of one
/// buffer joined: written one after the other they are `merge_pieces`' bytes, without
/// copying them into one buffer first (for a gateway's packet, two parts: the host fields
/// the engine encoded and the NIC-resident headers and payload as they came).
pub(crate) struct Parts {
    parts: [(Source, usize, usize); MAX_PARTS],
    len: usize,
}

impl Parts {
    pub(crate) fn new() -> Self {
        Self {
            parts: [(Source::Encoded, 0, 0); MAX_PARTS],
            len: 0,
        }
    }

    fn push(&mut self, source: Source, start: usize, end: usize) -> bool {
        if let Some(last) = self.len.checked_sub(1).map(|i| &mut self.parts[i]) {
            if last.0 == source && last.2 == start {
                last.2 = end;
                return true;
            }
        }
        if self.len == MAX_PARTS {
            return false;
        }
        self.parts[self.len] = (source, start, end);
        self.len += 1;
        true
    }

    /// Gathers `encoded` merged with `pieces` as [`merge_pieces`] merges them; `false` when
    /// `encoded` does not scan or the reply needs more than [`MAX_PARTS`] parts.
    pub(crate) fn gather(&mut self, encoded: &[u8], pieces: &[Piece]) -> bool {
        self.len = 0;
        let mut rest = pieces.iter().peekable();
        let piece = |parts: &mut Self, p: &Piece| {
            let source = if p.in_scratch {
                Source::Scratch
            } else {
                Source::Nic
            };
            parts.push(source, p.range.start, p.range.end)
        };
        let mut at = 0;
        for f in Fields::new(encoded) {
            let Some(f) = f else {
                return false;
            };
            while let Some(p) = rest.next_if(|p| p.number < f.number) {
                if !piece(self, p) {
                    return false;
                }
            }
            if !self.push(Source::Encoded, at, at + f.bytes.len()) {
                return false;
            }
            at += f.bytes.len();
        }
        rest.all(|p| piece(self, p))
    }

    /// The parts as slices of the buffers [`gather`](Self::gather) was given.
    pub(crate) fn slices<'a>(
        &self,
        encoded: &'a [u8],
        nic: &'a [u8],
        scratch: &'a [u8],
    ) -> ([&'a [u8]; MAX_PARTS], usize) {
        let mut out: [&[u8]; MAX_PARTS] = [&[]; MAX_PARTS];
        for (o, &(source, start, end)) in out.iter_mut().zip(&self.parts[..self.len]) {
            let buf = match source {
                Source::Encoded => encoded,
                Source::Nic => nic,
                Source::Scratch => scratch,
            };
            *o = &buf[start..end];
        }
        (out, self.len)
    }
}

/// Appends to `out` the fields of `a` and `b`, each in field-number order, merged by number
/// (`a`'s first among equals). Bytes that do not scan are appended as they are. The model
/// [`merge_pieces`] is tested against.
#[cfg(test)]
pub(crate) fn merge_sorted(a: &[u8], b: &[u8], out: &mut Vec<u8>) {
    if !scans(a) || !scans(b) {
        out.extend_from_slice(a);
        out.extend_from_slice(b);
        return;
    }
    let (mut fa, mut fb) = (
        Fields::new(a).flatten().peekable(),
        Fields::new(b).flatten().peekable(),
    );
    loop {
        let take_a = match (fa.peek(), fb.peek()) {
            (None, None) => return,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(x), Some(y)) => x.number <= y.number,
        };
        let f = if take_a { fa.next() } else { fb.next() };
        if let Some(f) = f {
            out.extend_from_slice(f.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Field 1 varint 150, field 2 "hi", field 3 fixed32, field 4 fixed64, field 5 bytes.
    fn sample() -> Vec<u8> {
        let mut b = vec![0x08, 0x96, 0x01, 0x12, 2, b'h', b'i', 0x1d, 1, 2, 3, 4];
        b.extend_from_slice(&[0x21, 1, 2, 3, 4, 5, 6, 7, 8]);
        put_field(&mut b, 5, LEN, &[9; 200]);
        b
    }

    #[test]
    fn the_short_and_skipping_varint_readers_agree_with_the_loop() {
        // Every buffer of up to two bytes, and of 3 to 12 bytes built from continued and
        // final bytes, at every start.
        let mut bufs: Vec<Vec<u8>> = Vec::new();
        for a in 0..=255u8 {
            bufs.push(vec![a]);
            for b in 0..=255u8 {
                bufs.push(vec![a, b]);
            }
        }
        for len in 3..=12 {
            for end in 0..len {
                let mut b: Vec<u8> = (0..len).map(|i| 0x81 + i as u8).collect();
                b[end] = 0x05;
                bufs.push(b);
            }
            bufs.push(vec![0xff; len]);
        }
        for b in &bufs {
            for start in 0..=b.len() {
                let (mut p0, mut p1, mut p2) = (start, start, start);
                let want = varint(b, &mut p0);
                assert_eq!(short_varint(b, &mut p1), want, "{b:x?} at {start}");
                assert_eq!(
                    skip_varint(b, &mut p2),
                    want.map(|_| ()),
                    "{b:x?} at {start}"
                );
                if want.is_some() {
                    assert_eq!((p1, p2), (p0, p0), "{b:x?} at {start}");
                }
            }
        }
    }

    #[test]
    fn fields_scan_every_wire_type_and_refuse_bad_bytes() {
        let b = sample();
        let f = fields(&b).unwrap();
        let numbers: Vec<u32> = f.iter().map(|f| f.number).collect();
        assert_eq!(numbers, [1, 2, 3, 4, 5]);
        assert_eq!(f[1].value, b"hi");
        assert_eq!(f[0].value, &[0x96, 0x01]);
        assert_eq!(f[4].value.len(), 200);
        assert_eq!(f.iter().map(|f| f.bytes.len()).sum::<usize>(), b.len());
        // Truncated anywhere inside a field, a group, field number 0, an endless varint.
        for cut in 1..b.len() {
            let whole = fields(&b[..cut]).is_some();
            let at_boundary = [3, 7, 12, 21].contains(&cut);
            assert_eq!(whole, at_boundary, "cut at {cut}");
        }
        assert!(fields(&[0x0b, 0x0c]).is_none(), "a group");
        assert!(fields(&[0x02, 0]).is_none(), "field number 0");
        assert!(
            fields(&[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).is_none()
        );
    }

    #[test]
    fn split_then_merge_gives_the_message_back_with_opened_fields_replaced() {
        let b = sample();
        let (mut host, mut nic, mut spans) = (Vec::new(), Vec::new(), Vec::new());
        let r: Option<Result<(), ()>> = split(
            &b,
            |n| n == 2 || n == 5,
            |f| (f.number == 2).then(|| Ok(b"HI!".to_vec())),
            &mut host,
            &mut nic,
            &mut spans,
        );
        assert!(matches!(r, Some(Ok(()))));
        let host_numbers: Vec<u32> = fields(&host).unwrap().iter().map(|f| f.number).collect();
        assert_eq!(host_numbers, [1, 3, 4]);
        let mut out = Vec::new();
        merge_sorted(&host, &nic, &mut out);
        let mut want = b.clone();
        want.splice(3..7, [0x12, 3, b'H', b'I', b'!']);
        assert_eq!(out, want);
        // The spans find each NIC-resident field, the opened one with its new value.
        let at: Vec<(u32, &[u8])> = spans
            .iter()
            .map(|s| (s.number, &nic[s.value_start..s.end]))
            .collect();
        assert_eq!(at, [(2, &b"HI!"[..]), (5, &[9; 200][..])]);
        assert!(spans
            .iter()
            .all(|s| fields(&nic[s.start..s.end]).unwrap().len() == 1));
        // Merging the pieces gives what merging the bytes gives.
        let pieces: Vec<Piece> = spans
            .iter()
            .map(|s| Piece {
                number: s.number,
                in_scratch: false,
                range: s.start..s.end,
            })
            .collect();
        let mut merged = Vec::new();
        merge_pieces(&host, &pieces, &nic, &[], &mut merged);
        assert_eq!(merged, out);
        // Gathered, the same bytes in few parts: host field 1, the NIC's field 2, host
        // fields 3 and 4 (adjacent: one part), the NIC's field 5.
        let mut parts = Parts::new();
        assert!(parts.gather(&host, &pieces));
        let (slices, n) = parts.slices(&host, &nic, &[]);
        assert_eq!(n, 4);
        assert_eq!(slices[..n].concat(), out);
        // More parts than it holds, or bytes that do not scan: not gathered.
        let many: Vec<Piece> = (0..MAX_PARTS)
            .map(|i| Piece {
                number: 1,
                in_scratch: i % 2 == 0,
                range: 0..1,
            })
            .collect();
        assert!(!parts.gather(&host, &many));
        assert!(!parts.gather(&[0x0b], &pieces));
        let failed: Option<Result<(), &str>> = split(
            &b,
            |n| n == 5,
            |_| Some(Err("bad")),
            &mut host,
            &mut nic,
            &mut spans,
        );
        assert_eq!(failed, Some(Err("bad")));
        // Bytes that do not scan are `None` even where `open` failed first.
        let mut bad = b.clone();
        bad.extend_from_slice(&[0x0b]);
        let failed: Option<Result<(), &str>> = split(
            &bad,
            |n| n == 5,
            |_| Some(Err("bad")),
            &mut host,
            &mut nic,
            &mut spans,
        );
        assert_eq!(failed, None);
        assert!(
            split::<()>(&[0x0b], |_| true, |_| None, &mut host, &mut nic, &mut spans).is_none()
        );
    }
}
