//! The cloud gateway of RPCAcc §II-C (C3): its packet message as `.proto` source and wire
//! bytes.
//!
//! C3's network function accelerator "serves as the cloud gateway" (Luoshen, NSDI '24, the
//! paper's \[55\]) and "performs L2/L3 protocol processing, network address translation
//! (NAT), and packet de/encryption" on packets carried by RPCs. The paper does not print its
//! messages; this one carries what those kernels work on, each in a field RPCAcc's "Acc"
//! label can place (a bytes or message field: a singular scalar lives in its message's record,
//! in host memory):
//!
//! - `eth`: the 14-byte Ethernet header (L2/L3 processing rewrites the MAC addresses);
//! - `ip`: the IPv4 header's fields (L2/L3 processing decrements the TTL and rewrites the
//!   checksum; NAT rewrites the addresses);
//! - `ports`: the transport ports (NAT rewrites them);
//! - `payload`: the packet's payload (decrypted or encrypted in place, as an IPsec gateway
//!   does).
//!
//! The flow id and tenant, the record's scalars, are what the host handler reads to find the
//! flow's NAT entry and security association.

use super::social_gen::Wire;

/// The gateway's packet message.
pub const GATEWAY_PROTO: &str = r#"
syntax = "proto3";
package gw;
message Ipv4 {
  uint32 src = 1;
  uint32 dst = 2;
  uint32 ttl = 3;
  uint32 protocol = 4;
  uint32 checksum = 5;
  uint32 total_length = 6;
}
message Ports {
  uint32 src = 1;
  uint32 dst = 2;
}
message Packet {
  uint64 flow = 1;
  uint32 tenant = 2;
  bytes eth = 3;
  Ipv4 ip = 4;
  Ports ports = 5;
  bytes payload = 6;
}
"#;

/// Fully qualified type of the request and of the response (the packet forwarded).
pub const PACKET_TYPE: &str = "gw.Packet";

/// The fields the kernels work on, which a placement puts in host or card memory.
pub const PLACEABLE_FIELDS: [&str; 4] = [
    "gw.Packet.eth",
    "gw.Packet.ip",
    "gw.Packet.ports",
    "gw.Packet.payload",
];

/// Bytes of the IPv4 and UDP headers the `ip` and `ports` fields stand for: a packet of
/// `packet_bytes` carries `packet_bytes - HEADER_BYTES` bytes of payload.
pub const HEADER_BYTES: u32 = 28;

/// Bytes of the Ethernet header.
const ETH_BYTES: usize = 14;

/// The packet message of an IPv4 packet of `packet_bytes` (headers included, at least
/// [`HEADER_BYTES`]) as wire bytes. Values are fixed: the models see sizes, not values.
pub fn packet(packet_bytes: u32) -> Vec<u8> {
    let payload = packet_bytes.saturating_sub(HEADER_BYTES) as usize;
    let mut ip = Wire::default();
    ip.int(1, 0x0a00_0001);
    ip.int(2, 0xc0a8_0a02);
    ip.int(3, 64);
    ip.int(4, 17);
    ip.int(5, 0xb1e6);
    ip.int(6, u64::from(packet_bytes));
    let mut ports = Wire::default();
    ports.int(1, 40_000);
    ports.int(2, 4_500);
    let mut p = Wire::default();
    p.int(1, 0x0123_4567_89ab_cdef >> 1);
    p.int(2, 42);
    p.bytes(3, &[0x5a; ETH_BYTES]);
    p.message(4, ip);
    p.message(5, ports);
    p.bytes(
        6,
        &(0..payload)
            .map(|i| (i as u8).wrapping_mul(13))
            .collect::<Vec<_>>(),
    );
    p.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_carries_the_packet_and_a_few_dozen_bytes_of_framing() {
        for n in [HEADER_BYTES, 64, 1500, 9000] {
            let wire = packet(n).len() as u32;
            assert!(wire >= n && wire < n + 64, "{n} B packet: {wire} B message");
        }
    }
}
