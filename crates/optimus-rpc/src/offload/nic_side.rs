//! The NIC core's half of offloaded DT: decode a request into its slot before a worker sees
//! it, and merge and encode the reply the worker left there; automatic field updating
//! decides the placement of the next calls.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::hand_back::{HandBack, HandBackEstimates, HandBackState};
use super::placement::PlacementTables;
use super::slots::{token, Kept, TOKEN_BYTES};
use super::split::{decode_request, forward_raw, merge_reply, RawPlan};
use super::updating::{FieldUpdating, Updater};
use super::{Exchange, UpdatingStats};
use crate::frame::Status;
use crate::kernels::{open_chain, Side};
use crate::typed::Failure;

/// The NIC's half of a [`super::RecordService`] run with DT on the NIC core; give it to
/// [`crate::Nic::set_offload`].
pub struct NicDt {
    ex: Arc<Exchange>,
    current: Arc<PlacementTables>,
    updater: Updater,
    /// Scratch for co-serialization at the wire: the forwarded NIC-resident fields that are
    /// sealed or re-tagged, where each forwarded field's bytes are, and the engine's
    /// encoding of the rest.
    raw: Vec<u8>,
    pieces: Vec<super::wire::Piece>,
    encoded: Vec<u8>,
    /// A reply encoded in one piece.
    flat: Vec<u8>,
    /// Per method, its co-serialization plan under the last placement version it ran with.
    plans: Vec<Option<RawPlan>>,
    /// When calls' DT goes back to the app core, and what that rule counts and times.
    hand_back: Option<HandBackState>,
}

impl NicDt {
    pub(crate) fn new(
        ex: Arc<Exchange>,
        current: Arc<PlacementTables>,
        policy: Option<FieldUpdating>,
        hand_back: Option<HandBack>,
    ) -> Self {
        let updater = Updater::new(ex.schema(), policy);
        Self {
            hand_back: hand_back.map(HandBackState::new),
            ex,
            current,
            updater,
            raw: Vec::new(),
            pieces: Vec::new(),
            encoded: Vec::new(),
            flat: Vec::new(),
            plans: Vec::new(),
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

    /// Whether calls' DT may go back to the app core at all ([`HandBack`]).
    pub(crate) fn hands_back_any(&self) -> bool {
        self.hand_back.is_some()
    }

    /// Counts one poll of the NIC core, which found work or not (the automatic hand-back
    /// rule's measure of its load).
    #[inline]
    pub(crate) fn on_poll(&mut self, busy: bool) {
        if let Some(h) = self.hand_back.as_mut() {
            h.on_poll(busy);
        }
    }

    /// Whether this call's DT goes back to the app core, given whether its worker has taken
    /// every request handed to it.
    pub(crate) fn hands_back(&mut self, worker_idle: bool) -> bool {
        match self.hand_back.as_mut() {
            Some(h) => h.decide(worker_idle, &self.ex.app_costs),
            None => false,
        }
    }

    /// Calls whose DT the NIC core handed back to the app core so far.
    pub fn handed_back(&self) -> u64 {
        self.hand_back
            .as_ref()
            .map_or(0, HandBackState::handed_back)
    }

    /// What the automatic hand-back rule works from now (`None` under another rule).
    pub fn hand_back_estimates(&self) -> Option<HandBackEstimates> {
        let h = self.hand_back.as_ref()?;
        match h.rule() {
            HandBack::Auto(auto) => Some(h.estimates(&self.ex.app_costs, auto)),
            HandBack::Every(_) => None,
        }
    }

    /// The hand-back rule's sampler for this NIC core's decodes or encodes, when it times
    /// them.
    fn sampler(&mut self, encode: bool) -> Option<&mut super::hand_back::Sampler> {
        let h = self.hand_back.as_mut().filter(|h| h.timing())?;
        Some(if encode { &mut h.encode } else { &mut h.decode })
    }

    /// Decodes request `payload` of `method` into slot `k` and returns the token the worker's
    /// frame carries.
    pub(crate) fn decode_into(
        &mut self,
        k: usize,
        method: u16,
        payload: &[u8],
    ) -> Result<[u8; TOKEN_BYTES], Failure> {
        let started = self.sampler(false).and_then(|s| s.start());
        let r = self.decode_slot(k, method, payload);
        if let Some(s) = self.sampler(false) {
            s.stop(started);
        }
        r
    }

    fn decode_slot(
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
        let p = &*self.current;
        let (opts, limit) = (&ex.decode, ex.kernel_limit);
        let split = p.nic_fields(m.input).next().is_some();
        slot.refill(method, if split { &[] } else { payload });
        if split {
            // Split at the wire: the NIC-resident fields are never decoded, only their
            // kernels opened.
            let ty = ex.schema().message(m.input);
            let index = |number| ty.field_index_by_number(number);
            let is_nic = |number| index(number).is_some_and(|i| p.is_nic(m.input, i));
            let open = |f: &super::wire::WireField<'_>| {
                let i = index(f.number)?;
                let (_, chain) = m.kernels.on(Side::Request).find(|(k, _)| *k == i)?;
                let name = || format!("{}.{}", ty.full_name, ty.fields[i].name);
                Some(if f.wire_type != super::wire::LEN {
                    Err(Failure::bad_request(format!(
                        "bad request: {}: not bytes",
                        name()
                    )))
                } else {
                    open_chain(chain, f.value, limit)
                        .map_err(|e| Failure::bad_request(format!("bad request: {}: {e}", name())))
                })
            };
            if let Some(Err(f)) = slot.split_wire(payload, is_nic, open) {
                return Err(f);
            }
        }
        let decoded = slot.with(ex.schema(), |wire, v| {
            let host_wire = v.raw.then_some(v.host_wire);
            let r = decode_request(
                v.schema,
                m,
                wire,
                v.host,
                v.nic,
                Some(p),
                host_wire,
                opts,
                limit,
            );
            match r {
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
        // The call keeps the version it was decoded with; a slot that already holds it (the
        // usual case: placement changes are rare) keeps its reference instead of taking
        // another, which would cost two atomic updates of the count per call.
        if !slot
            .placement
            .as_ref()
            .is_some_and(|held| Arc::ptr_eq(held, &self.current))
        {
            slot.placement = Some(self.current.clone());
        }
        Ok(token(k, slot.gen))
    }

    /// Merges the NIC-resident fields into slot `k`'s reply (once), encodes it and hands
    /// `emit` its bytes as parts to write one after the other: the engine's encoding of the
    /// reply record and the forwarded NIC-resident fields' bytes where they lie, so that the
    /// reply is written once, into the ring that carries it (co-serialization at the wire),
    /// or one contiguous encoding. `emit` runs only on success.
    pub(crate) fn encode_with<R>(
        &mut self,
        k: usize,
        emit: impl FnOnce(&[&[u8]]) -> R,
    ) -> Result<R, Failure> {
        let started = self.sampler(true).and_then(|s| s.start());
        let r = self.encode_slot(k, emit);
        if let Some(s) = self.sampler(true) {
            s.stop(started);
        }
        r
    }

    fn encode_slot<R>(&mut self, k: usize, emit: impl FnOnce(&[&[u8]]) -> R) -> Result<R, Failure> {
        let ex = &*self.ex;
        let mut slot = ex
            .slots
            .try_lock(k)
            .ok_or_else(|| Failure::new(Status::Unavailable, "exchange slot busy"))?;
        let m = ex.method(slot.method)?;
        let merged = slot.merged;
        let (raw, encoded, pieces) = (&mut self.raw, &mut self.encoded, &mut self.pieces);
        let flat = &mut self.flat;
        // Co-serialization at the wire follows a plan worked out once per method and
        // placement version.
        let plan = match (slot.raw, slot.placement.as_deref()) {
            (true, Some(p)) => {
                let i = usize::from(slot.method);
                let cached = self.plans.get(i).and_then(Option::as_ref);
                if cached.is_none_or(|c| c.version != p.version) {
                    if self.plans.len() <= i {
                        self.plans.resize_with(i + 1, || None);
                    }
                    self.plans[i] = Some(RawPlan::new(ex.schema(), m, p));
                }
                self.plans[i].as_ref()
            }
            _ => None,
        };
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
            if !merged && plan.is_none_or(|p| p.merge) {
                let r = merge_reply(
                    v.schema,
                    m,
                    reply,
                    (req, v.nic_request),
                    (v.host, v.nic),
                    v.placement,
                    Some(true),
                    true,
                    v.raw,
                );
                if let Err(f) = r {
                    return (keep, Err(f));
                }
            }
            // The engine's per-thread encoder (an `Encoder` kept here would tie the NIC to
            // the thread that built it).
            flat.clear();
            let Some(plan) = plan else {
                optimus_core::engine::encode(reply, flat);
                return (keep, Ok(emit(&[flat])));
            };
            raw.clear();
            pieces.clear();
            let wire = (v.nic_wire, v.nic_spans);
            if let Err(f) = forward_raw(v.schema, m, plan, reply, wire, raw, pieces) {
                return (keep, Err(f));
            }
            encoded.clear();
            optimus_core::engine::encode(reply, encoded);
            let mut parts = super::wire::Parts::new();
            if parts.gather(encoded, pieces) {
                let (slices, n) = parts.slices(encoded, v.nic_wire, raw);
                return (keep, Ok(emit(&slices[..n])));
            }
            super::wire::merge_pieces(encoded, pieces, v.nic_wire, raw, flat);
            (keep, Ok(emit(&[flat])))
        });
        slot.merged = true;
        drop(slot);
        let r = r?;
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
        Ok(r)
    }
}
