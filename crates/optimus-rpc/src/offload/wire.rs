//! Co-serialization at the wire: the top-level fields of a request that live in NIC memory
//! and pass through are never decoded. [`split`] cuts a request's bytes into the host fields'
//! (which the engine decodes for the app) and the NIC-resident fields' (kept as they came,
//! kernels opened); [`merge_sorted`] merges the engine's encoding of a reply with the
//! NIC-resident fields' bytes, both in field-number order, into one canonical message.

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

/// The top-level fields of `buf`, in order; `None` when the bytes are malformed or hold a
/// group (whose end only a nested walk finds: such messages take the record path).
pub(crate) fn fields(buf: &[u8]) -> Option<Vec<WireField<'_>>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let start = pos;
        let tag = varint(buf, &mut pos)?;
        let number = u32::try_from(tag >> 3).ok().filter(|&n| n != 0)?;
        let wire_type = (tag & 7) as u8;
        let value_start = pos;
        let value_len = match wire_type {
            0 => {
                varint(buf, &mut pos)?;
                0
            }
            1 => 8,
            LEN => usize::try_from(varint(buf, &mut pos)?).ok()?,
            5 => 4,
            _ => return None,
        };
        let value_start = if wire_type == 0 { value_start } else { pos };
        let end = if wire_type == 0 {
            pos
        } else {
            pos.checked_add(value_len).filter(|&e| e <= buf.len())?
        };
        pos = end;
        out.push(WireField {
            number,
            wire_type,
            bytes: &buf[start..end],
            value: &buf[value_start..end],
        });
    }
    Some(out)
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

/// Cuts `wire` into `host` (fields for which `is_nic` is false, and unknown ones) and `nic`
/// (the others; `open` may replace a NIC-resident field's payload, for kernels). `None`:
/// `wire` does not scan (malformed, or a group); `Some(Err)`: `open` failed.
pub(crate) fn split<E>(
    wire: &[u8],
    is_nic: impl Fn(u32) -> bool,
    mut open: impl FnMut(&WireField<'_>) -> Option<Result<Vec<u8>, E>>,
    host: &mut Vec<u8>,
    nic: &mut Vec<u8>,
) -> Option<Result<(), E>> {
    let fields = fields(wire)?;
    for f in &fields {
        if !is_nic(f.number) {
            host.extend_from_slice(f.bytes);
            continue;
        }
        match open(f) {
            None => nic.extend_from_slice(f.bytes),
            Some(Ok(v)) => put_field(nic, f.number, LEN, &v),
            Some(Err(e)) => return Some(Err(e)),
        }
    }
    Some(Ok(()))
}

/// Appends to `out` the fields of `a` and `b`, each in field-number order, merged by number
/// (`a`'s first among equals). Bytes that do not scan are appended as they are.
pub(crate) fn merge_sorted(a: &[u8], b: &[u8], out: &mut Vec<u8>) {
    let (Some(fa), Some(fb)) = (fields(a), fields(b)) else {
        out.extend_from_slice(a);
        out.extend_from_slice(b);
        return;
    };
    let (mut i, mut j) = (0, 0);
    while i < fa.len() || j < fb.len() {
        let take_a = j == fb.len() || (i < fa.len() && fa[i].number <= fb[j].number);
        if take_a {
            out.extend_from_slice(fa[i].bytes);
            i += 1;
        } else {
            out.extend_from_slice(fb[j].bytes);
            j += 1;
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
        let (mut host, mut nic) = (Vec::new(), Vec::new());
        let r: Option<Result<(), ()>> = split(
            &b,
            |n| n == 2 || n == 5,
            |f| (f.number == 2).then(|| Ok(b"HI!".to_vec())),
            &mut host,
            &mut nic,
        );
        assert!(matches!(r, Some(Ok(()))));
        let host_numbers: Vec<u32> = fields(&host).unwrap().iter().map(|f| f.number).collect();
        assert_eq!(host_numbers, [1, 3, 4]);
        let mut out = Vec::new();
        merge_sorted(&host, &nic, &mut out);
        let mut want = b.clone();
        want.splice(3..7, [0x12, 3, b'H', b'I', b'!']);
        assert_eq!(out, want);
        let failed: Option<Result<(), &str>> =
            split(&b, |n| n == 5, |_| Some(Err("bad")), &mut host, &mut nic);
        assert_eq!(failed, Some(Err("bad")));
        assert!(split::<()>(&[0x0b], |_| true, |_| None, &mut host, &mut nic).is_none());
    }
}
