//! The RX burst's work per frame: a frame from the transport checked and handed on by kind,
//! and bad frames counted.

use super::Core;
use crate::frame::{self, FrameKind, FLAG_CHECKSUM};
use crate::transport::PeerId;
use crate::RpcError;

impl Core {
    #[inline]
    pub(super) fn on_wire(&mut self, peer: PeerId, bytes: &[u8]) {
        self.stats.rx_frames += 1;
        let (h, kind, payload) = match frame::check_frame(bytes, self.max_payload) {
            Ok(x) => x,
            Err(e) => return self.count_bad(&e),
        };
        if self.checksum && h.flags & FLAG_CHECKSUM == 0 {
            self.stats.dropped_malformed += 1; // every frame on this network carries a checksum
            return;
        }
        match kind {
            FrameKind::Request => self.server_request(peer, &h, payload),
            FrameKind::Response => self.client_response(peer, &h, payload),
            FrameKind::Connect => self.server_connect(peer, &h),
            FrameKind::ConnectAck => self.client_connect_ack(peer, &h),
            FrameKind::Close => self.server_close(peer, &h),
            FrameKind::Pad => self.stats.dropped_malformed += 1,
        }
    }

    #[cold]
    pub(super) fn count_bad(&mut self, e: &RpcError) {
        match e {
            RpcError::BadChecksum => self.stats.dropped_checksum += 1,
            RpcError::TooLarge { .. } => self.stats.dropped_oversized += 1,
            RpcError::CorruptRing(_) => self.stats.corrupt_rings += 1,
            _ => self.stats.dropped_malformed += 1,
        }
    }
}
