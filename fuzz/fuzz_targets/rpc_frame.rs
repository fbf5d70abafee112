//! RPC frame parser fuzz target: any input is rejected by `check_frame` or is a frame whose
//! header re-encodes, followed by its payload, to exactly the input bytes (and, when it carries
//! a checksum, sealing the re-encoding again gives the same bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use optimus_rpc::frame::{
    check_frame, seal, FrameHeader, FrameKind, FLAG_CHECKSUM, HEADER_BYTES, MAX_PAYLOAD_BYTES,
};

fuzz_target!(|data: &[u8]| {
    // Any 32 bytes read as a header and write back unchanged.
    if let Ok(h) = FrameHeader::decode(data) {
        assert_eq!(&h.encode()[..], &data[..HEADER_BYTES]);
    }
    if let Ok((h, kind, payload)) = check_frame(data, MAX_PAYLOAD_BYTES) {
        assert_eq!(FrameKind::from_u8(h.kind), Some(kind));
        assert_eq!(payload.len(), h.payload_len as usize);
        let mut again = h.encode().to_vec();
        again.extend_from_slice(payload);
        assert_eq!(again, data);
        if h.flags & FLAG_CHECKSUM != 0 {
            seal(&mut again);
            assert_eq!(again, data, "sealing a checked frame changes nothing");
        }
    }
});
