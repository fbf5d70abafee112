//! The image-compression service of RPCAcc (§III-E2 Listing 1, §IV-G, §IV-H): its request
//! (`User`) and response (`Photo`) messages as `.proto` source and wire bytes.
//!
//! The paper names the messages and what they carry but prints their fields only in its
//! Figure 3: the request holds the user's identity, which the host authorizes, and the "raw
//! avatar data" the compute unit compresses; the response holds the compressed image and "the
//! size" (Listing 1 L10, L16). The fields below are that content; the identity fields' sizes
//! (a 16-character user name, a 32-byte session token) are assumptions. The avatar and image
//! are the messages' only large fields, the ones RPCAcc's "Acc" label places in accelerator
//! memory (§IV-H: "the KB-level large field").

/// The service's messages.
pub const IMAGE_PROTO: &str = r#"
syntax = "proto3";
package img;
message User {
  int64 user_id = 1;
  string name = 2;
  bytes token = 3;
  bytes avatar = 4;
}
message Photo {
  int64 user_id = 1;
  int32 size = 2;
  bytes image = 3;
}
"#;

/// Fully qualified request type.
pub const REQUEST_TYPE: &str = "img.User";
/// Fully qualified response type.
pub const RESPONSE_TYPE: &str = "img.Photo";
/// The request's avatar and the response's image: the fields the service labels "Acc".
pub const ACCEL_FIELDS: [&str; 2] = ["img.User.avatar", "img.Photo.image"];

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn int(out: &mut Vec<u8>, field: u32, v: u64) {
    varint(out, u64::from(field) << 3);
    varint(out, v);
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    varint(out, (u64::from(field) << 3) | 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Deterministic filler of `n` bytes (the models see lengths, not values).
fn filler(n: usize, salt: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
        .collect()
}

/// The request and response of one call: an avatar of `avatar_bytes`, compressed to
/// `image_bytes`. Returns `(request wire bytes, response wire bytes)`.
pub fn call(avatar_bytes: usize, image_bytes: usize) -> (Vec<u8>, Vec<u8>) {
    let user_id = 0x5eed_1234_5678u64;
    let mut req = Vec::new();
    int(&mut req, 1, user_id);
    bytes(&mut req, 2, b"avatar_user_0042");
    bytes(&mut req, 3, &filler(32, 7));
    bytes(&mut req, 4, &filler(avatar_bytes, 1));
    let mut resp = Vec::new();
    int(&mut resp, 1, user_id);
    int(&mut resp, 2, image_bytes as u64);
    bytes(&mut resp, 3, &filler(image_bytes, 3));
    (req, resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_payloads() {
        let (req, resp) = call(32768, 15724);
        // Tags, lengths and the identity fields add a few dozen bytes.
        assert!(req.len() > 32768 && req.len() < 32768 + 80, "{}", req.len());
        assert!(
            resp.len() > 15724 && resp.len() < 15724 + 24,
            "{}",
            resp.len()
        );
    }
}
