//! Base64 for JSON `bytes` values, written: the standard alphabet with padding, as proto3 JSON
//! writes bytes, from a table of every pair of symbols (four lookups and one eight-byte store
//! per six input bytes). Reading stays with the `base64` crate (`json::decode`).

/// The standard alphabet.
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The two symbols of every 12-bit value, the first in the low byte.
static PAIRS: [u16; 4096] = {
    let mut pairs = [0u16; 4096];
    let mut i = 0;
    while i < 4096 {
        pairs[i] = ALPHABET[i >> 6] as u16 | (ALPHABET[i & 63] as u16) << 8;
        i += 1;
    }
    pairs
};

/// Appends `bytes` in base64 (standard alphabet, padded).
pub(crate) fn write(out: &mut String, bytes: &[u8]) {
    let len = bytes.len().div_ceil(3) * 4;
    out.reserve(len);
    // SAFETY: `len` bytes of room were reserved after what `out` holds; the writes below fill
    // exactly them (four symbols per three bytes, four for a one- or two-byte rest) with
    // ASCII, so `out` stays UTF-8 when its length takes them in.
    unsafe {
        let v = out.as_mut_vec();
        let start = v.len();
        let mut at = v.as_mut_ptr().add(start);
        // Six bytes at a time from an eight-byte load while eight remain: eight symbols, one
        // store.
        let whole = bytes.len().saturating_sub(2) / 6;
        for k in 0..whole {
            let w = u64::from_be_bytes(bytes[6 * k..6 * k + 8].try_into().expect("eight bytes"));
            let pair = |shift: u32| u64::from(PAIRS[(w >> shift) as usize & 0xfff]);
            let eight = pair(52) | pair(40) << 16 | pair(28) << 32 | pair(16) << 48;
            at.cast::<u64>().write_unaligned(eight.to_le());
            at = at.add(8);
        }
        let mut chunks = bytes[whole * 6..].chunks_exact(3);
        for c in chunks.by_ref() {
            let n = usize::from(c[0]) << 16 | usize::from(c[1]) << 8 | usize::from(c[2]);
            let four = u32::from(PAIRS[n >> 12]) | u32::from(PAIRS[n & 0xfff]) << 16;
            at.cast::<u32>().write_unaligned(four.to_le());
            at = at.add(4);
        }
        let last = match *chunks.remainder() {
            [a] => Some(
                u32::from(PAIRS[usize::from(a) << 4]) | u32::from(u16::from_le_bytes(*b"==")) << 16,
            ),
            [a, b] => {
                let n = usize::from(a) << 10 | usize::from(b) << 2;
                Some(
                    u32::from(PAIRS[n >> 6])
                        | u32::from(ALPHABET[n & 63]) << 16
                        | u32::from(b'=') << 24,
                )
            }
            _ => None,
        };
        if let Some(four) = last {
            at.cast::<u32>().write_unaligned(four.to_le());
        }
        v.set_len(start + len);
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    #[test]
    fn writes_what_the_base64_crate_writes() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..300 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed as u8
                })
                .collect();
            let mut out = String::from("x");
            super::write(&mut out, &bytes);
            let want = base64::engine::general_purpose::STANDARD.encode(&bytes);
            assert_eq!(out, format!("x{want}"), "{bytes:?}");
        }
        let mut out = String::new();
        super::write(&mut out, &[0xff; 3]);
        assert_eq!(out, "////");
    }
}
