//! The NIC core's half of offloaded DT: decode a request into its slot before a worker sees
//! it, and merge and encode the reply the worker left there; automatic field updating
//! decides the placement of the next calls.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::placement::PlacementTables;
use super::slots::{token, Kept, TOKEN_BYTES};
use super::split::{decode_request, merge_reply};
use super::updating::{FieldUpdating, Updater};
use super::{Exchange, UpdatingStats};
use crate::frame::Status;
use crate::typed::Failure;

/// The NIC's half of a [`super::RecordService`] run with DT on the NIC core; give it to
/// [`crate::Nic::set_offload`].
pub struct NicDt {
    ex: Arc<Exchange>,
    current: Arc<PlacementTables>,
    updater: Updater,
}

impl NicDt {
    pub(crate) fn new(
        ex: Arc<Exchange>,
        current: Arc<PlacementTables>,
        policy: Option<FieldUpdating>,
    ) -> Self {
        let updater = Updater::new(ex.schema(), policy);
        Self {
            ex,
            current,
            updater,
        }
    }

    /// The placement new calls get now.
    pub fn placement(&self) -> Arc<PlacementTables> {
        self.current.clone()
    }

    /// Moves of automatic field updating so far.
    pub fn updating_stats(&self) -> UpdatingStats {
        let c = &self.ex.counters;
        UpdatingStats {
            moves_to_host: c.moves_to_host.load(Ordering::Relaxed),
            moves_to_nic: c.moves_to_nic.load(Ordering::Relaxed),
        }
    }

    /// Decodes request `payload` of `method` into slot `k` and returns the token the worker's
    /// frame carries.
    pub(crate) fn decode_into(
        &mut self,
        k: usize,
        method: u16,
        payload: &[u8],
    ) -> Result<[u8; TOKEN_BYTES], Failure> {
        let ex = &*self.ex;
        let m = ex.method(method)?;
        let mut slot = ex
            .slots
            .try_lock(k)
            .ok_or_else(|| Failure::new(Status::Unavailable, "exchange slot busy"))?;
        slot.refill(method, payload);
        let placement = self.current.clone();
        let p = &*placement;
        let (opts, limit) = (&ex.decode, ex.kernel_limit);
        let decoded = slot.with(ex.schema(), |wire, v| {
            match decode_request(v.schema, m, wire, v.host, v.nic, Some(p), opts, limit) {
                Ok((req, nic_req)) => (
                    Kept {
                        request: Some(req),
                        nic_request: nic_req,
                        reply: None,
                    },
                    Ok(()),
                ),
                Err(f) => (Kept::none(), Err(f)),
            }
        });
        decoded?;
        slot.placement = Some(placement);
        Ok(token(k, slot.gen))
    }

    /// Merges the NIC-resident fields into slot `k`'s reply (once) and appends its encoding
    /// to `out`.
    pub(crate) fn encode_from(&mut self, k: usize, out: &mut Vec<u8>) -> Result<(), Failure> {
        let ex = &*self.ex;
        let mut slot = ex
            .slots
            .try_lock(k)
            .ok_or_else(|| Failure::new(Status::Unavailable, "exchange slot busy"))?;
        let m = ex.method(slot.method)?;
        let placement = slot.placement.clone();
        let merged = slot.merged;
        let r = slot.with(ex.schema(), |_, v| {
            let keep = Kept {
                request: v.request,
                nic_request: v.nic_request,
                reply: v.reply,
            };
            let (Some(reply), Some(req)) = (v.reply, v.request) else {
                let f = Failure::new(Status::HandlerError, "the worker left no reply");
                return (keep, Err(f));
            };
            if !merged {
                let r = merge_reply(
                    v.schema,
                    m,
                    reply,
                    (req, v.nic_request),
                    (v.host, v.nic),
                    placement.as_deref(),
                    Some(true),
                    true,
                );
                if let Err(f) = r {
                    return (keep, Err(f));
                }
            }
            // The engine's per-thread encoder (an `Encoder` kept here would tie the NIC to
            // the thread that built it).
            optimus_core::engine::encode(reply, out);
            (keep, Ok(()))
        });
        slot.merged = true;
        drop(slot);
        r?;
        // Windows count completed calls: the app's accesses of a call come before its reply.
        let types = [m.input, m.output];
        let types = if m.input == m.output {
            &types[..1]
        } else {
            &types[..]
        };
        for &id in types {
            if let Some(next) = self.updater.on_call(id, &ex.counters, &self.current) {
                self.current = next;
            }
        }
        Ok(())
    }
}
