//! The exchange between the NIC core and the application: one slot per request the NIC has
//! handed to a worker, holding the request's wire bytes, the records decoded from them (host
//! fields in the host record, NIC-resident ones in the NIC record), the reply record the
//! application fills, and the placement version the call runs under.
//!
//! A slot is owned by whoever holds its lock: the NIC while it decodes a request into it and
//! while it encodes the reply, the worker while its handler runs. The frame that tells the
//! worker about a request carries only the slot's index and generation, and the worker
//! refuses a slot whose generation moved on. Records borrow the slot's own arenas and bytes,
//! so they are stored with their lifetime erased and handed out only for as long as a lock
//! guard lives.

use std::sync::{Arc, Mutex, MutexGuard};

use optimus_core::{Arena, Record};
use optimus_schema::SchemaSet;

use super::placement::PlacementTables;
use super::wire::Span;

/// Bytes of the token a worker's request frame carries: slot index and generation.
pub(crate) const TOKEN_BYTES: usize = 8;

/// One call's records. See the module docs.
#[derive(Default)]
pub(crate) struct Slot {
    /// Bumped each time the NIC fills the slot; the token names it.
    pub(crate) gen: u32,
    pub(crate) method: u16,
    /// The request as it came (views of the records point here).
    wire: Vec<u8>,
    /// Split at the wire (`raw`): the host fields' bytes, which the host record views, and
    /// the NIC-resident fields' bytes, kept undecoded (kernels opened).
    pub(crate) host_wire: Vec<u8>,
    pub(crate) nic_wire: Vec<u8>,
    /// Where each field of `nic_wire` lies.
    pub(crate) nic_spans: Vec<Span>,
    /// The request was split at the wire: its NIC-resident fields are in `nic_wire` only.
    pub(crate) raw: bool,
    /// Host memory: the request's host fields and the reply record.
    host: Arena,
    /// NIC memory: the request's NIC-resident fields, opened kernels' output for them, and
    /// the reply's NIC-resident fields.
    nic: Arena,
    request: Option<Record<'static>>,
    nic_request: Option<Record<'static>>,
    reply: Option<Record<'static>>,
    /// The placement version the call was decoded with.
    pub(crate) placement: Option<Arc<PlacementTables>>,
    /// The NIC has merged its fields into the reply (kernels sealed): done once, even when
    /// the reply is encoded again because its first delivery met a full ring.
    pub(crate) merged: bool,
}

// SAFETY: the records inside point only into this slot's `wire`, `host_wire`, `nic_wire`,
// `host` and `nic` (heap
// memory that moves with the slot and is freed only by `clear`, which drops the records
// first) and into the `SchemaSet` the owning `Slots` keeps alive in an `Arc`. Nothing else
// holds those pointers, so moving the slot (under its mutex) to another thread moves them all.
unsafe impl Send for Slot {}

/// What a slot's holder works with: the records with the lifetime of the lock guard.
pub(crate) struct SlotView<'g> {
    pub(crate) schema: &'g SchemaSet,
    pub(crate) host_wire: &'g [u8],
    pub(crate) nic_wire: &'g [u8],
    pub(crate) nic_spans: &'g [Span],
    pub(crate) raw: bool,
    pub(crate) placement: Option<&'g PlacementTables>,
    pub(crate) host: &'g Arena,
    pub(crate) nic: &'g Arena,
    pub(crate) request: Option<Record<'g>>,
    pub(crate) nic_request: Option<Record<'g>>,
    pub(crate) reply: Option<Record<'g>>,
}

/// Records made from a [`SlotView`], to keep in the slot.
pub(crate) struct Kept<'g> {
    pub(crate) request: Option<Record<'g>>,
    pub(crate) nic_request: Option<Record<'g>>,
    pub(crate) reply: Option<Record<'g>>,
}

impl Kept<'_> {
    /// No records.
    pub(crate) fn none() -> Self {
        Self {
            request: None,
            nic_request: None,
            reply: None,
        }
    }
}

impl Slot {
    /// Empties the slot for a new request (records first, then the memory they point into)
    /// and copies `wire` in (nothing when `wire` is empty: see [`Slot::split_wire`]). The
    /// placement stays until the new request's is set.
    pub(crate) fn refill(&mut self, method: u16, wire: &[u8]) {
        self.request = None;
        self.nic_request = None;
        self.reply = None;
        self.merged = false;
        self.host.reset();
        self.nic.reset();
        self.wire.clear();
        self.wire.extend_from_slice(wire);
        self.host_wire.clear();
        self.nic_wire.clear();
        self.nic_spans.clear();
        self.raw = false;
        self.gen = self.gen.wrapping_add(1);
        self.method = method;
    }

    /// Splits request `wire` at the wire into `host_wire` and `nic_wire` (see
    /// [`super::wire::split`]) instead of copying it whole: on success the slot is `raw`;
    /// when `wire` does not scan, it is copied in whole for the record path.
    pub(crate) fn split_wire<E>(
        &mut self,
        wire: &[u8],
        is_nic: impl Fn(u32) -> bool,
        open: impl FnMut(&super::wire::WireField<'_>) -> Option<Result<Vec<u8>, E>>,
    ) -> Option<Result<(), E>> {
        let r = super::wire::split(
            wire,
            is_nic,
            open,
            &mut self.host_wire,
            &mut self.nic_wire,
            &mut self.nic_spans,
        );
        self.raw = matches!(r, Some(Ok(())));
        if !self.raw {
            self.host_wire.clear();
            self.nic_wire.clear();
            self.nic_spans.clear();
            self.wire.clear();
            self.wire.extend_from_slice(wire);
        }
        r
    }

    /// Lends the slot's memory and records to `f`, then keeps the records `f` returns.
    pub(crate) fn with<'s, R>(
        &'s mut self,
        schema: &'s SchemaSet,
        f: impl for<'g> FnOnce(&'g [u8], SlotView<'g>) -> (Kept<'g>, R),
    ) -> R {
        let view = SlotView {
            schema,
            host_wire: &self.host_wire,
            nic_wire: &self.nic_wire,
            nic_spans: &self.nic_spans,
            raw: self.raw,
            placement: self.placement.as_deref(),
            host: &self.host,
            nic: &self.nic,
            request: self.request,
            nic_request: self.nic_request,
            reply: self.reply,
        };
        let (kept, r) = f(&self.wire, view);
        // SAFETY: the records were made in this slot's arenas from its bytes and `schema`
        // (the `Slots`' own, alive as long as the slot); see the `Send` impl above. They are
        // dropped in `refill` before that memory is reused.
        unsafe {
            self.request = kept.request.map(|r| erase(r));
            self.nic_request = kept.nic_request.map(|r| erase(r));
            self.reply = kept.reply.map(|r| erase(r));
        }
        r
    }
}

/// `r` with its lifetime erased.
///
/// # Safety
/// The caller keeps what `r` points into alive and unmoved for as long as the result is
/// used, and hands it out again only under a shorter lifetime.
unsafe fn erase(r: Record<'_>) -> Record<'static> {
    // SAFETY: the same type with another lifetime; the caller's duty covers the pointers.
    unsafe { std::mem::transmute::<Record<'_>, Record<'static>>(r) }
}

/// The slots of one NIC, one per entry of its pending table, and the schema their records
/// are laid out by.
pub(crate) struct Slots {
    pub(crate) schema: Arc<SchemaSet>,
    slots: Box<[Mutex<Slot>]>,
}

impl Slots {
    pub(crate) fn new(schema: Arc<SchemaSet>, n: usize) -> Self {
        Self {
            schema,
            slots: (0..n).map(|_| Mutex::new(Slot::default())).collect(),
        }
    }

    /// Slot `k`, locked; `None` past the end.
    pub(crate) fn lock(&self, k: usize) -> Option<MutexGuard<'_, Slot>> {
        let m = self.slots.get(k)?;
        // A handler that panicked left the slot mid-call; the next refill resets it.
        Some(m.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Slot `k` if no one holds it (the NIC never waits on a worker: a worker that still held
    /// a slot the NIC gave up on, e.g. one quarantined mid-call, only fails that slot's call);
    /// `None` past the end or while it is held.
    pub(crate) fn try_lock(&self, k: usize) -> Option<MutexGuard<'_, Slot>> {
        match self.slots.get(k)?.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

/// The token of slot `k` at generation `gen`.
pub(crate) fn token(k: usize, gen: u32) -> [u8; TOKEN_BYTES] {
    let mut t = [0u8; TOKEN_BYTES];
    t[..4].copy_from_slice(&(k as u32).to_le_bytes());
    t[4..].copy_from_slice(&gen.to_le_bytes());
    t
}

/// Slot index and generation of a token; `None` when `bytes` is not one.
pub(crate) fn parse_token(bytes: &[u8]) -> Option<(usize, u32)> {
    let t: [u8; TOKEN_BYTES] = bytes.try_into().ok()?;
    let k = u32::from_le_bytes([t[0], t[1], t[2], t[3]]) as usize;
    let gen = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
    Some((k, gen))
}

#[cfg(test)]
mod tests {
    use super::*;
    use optimus_core::FieldRef;

    #[test]
    fn tokens_round_trip_and_other_lengths_are_refused() {
        assert_eq!(parse_token(&token(4095, u32::MAX)), Some((4095, u32::MAX)));
        assert_eq!(parse_token(&token(0, 1)), Some((0, 1)));
        assert_eq!(parse_token(&[0; 7]), None);
        assert_eq!(parse_token(&[0; 9]), None);
    }

    #[test]
    fn records_kept_in_a_slot_read_back_and_a_refill_drops_them() {
        let schema = Arc::new(
            SchemaSet::from_source("syntax = \"proto3\"; message M { string s = 1; }").unwrap(),
        );
        let id = schema.message_by_name("M").unwrap();
        let slots = Slots::new(schema.clone(), 2);
        let wire = [0x0a, 3, b'a', b'b', b'c'];
        {
            let mut s = slots.lock(1).unwrap();
            s.refill(7, &wire);
            assert_eq!((s.gen, s.method), (1, 7));
            let opts = optimus_core::binary::DecodeOptions::default();
            s.with(&schema, |wire, v| {
                let r = optimus_core::engine::decode(v.schema, id, wire, v.host, &opts).unwrap();
                let kept = Kept {
                    request: Some(r),
                    nic_request: None,
                    reply: None,
                };
                (kept, ())
            });
        }
        // Another thread reads the records through the lock.
        let got = std::thread::scope(|sc| {
            sc.spawn(|| {
                let mut s = slots.lock(1).unwrap();
                s.with(&schema, |_, v| {
                    let text = match v.request.and_then(|r| r.get(0)) {
                        Some(FieldRef::Str(t)) => t.to_string(),
                        other => format!("{other:?}"),
                    };
                    let kept = Kept {
                        request: v.request,
                        nic_request: None,
                        reply: None,
                    };
                    (kept, text)
                })
            })
            .join()
            .unwrap()
        });
        assert_eq!(got, "abc");
        let mut s = slots.lock(1).unwrap();
        s.refill(0, &[]);
        assert!(s.with(&schema, |_, v| (
            Kept {
                request: None,
                nic_request: None,
                reply: None
            },
            v.request.is_none()
        )));
        assert!(slots.lock(2).is_none());
        // A request that does not scan at the wire (a group) is kept whole for the record
        // path; one that does is split and not copied whole.
        let mut s0 = slots.lock(0).unwrap();
        s0.refill(0, &[]);
        assert!(s0
            .split_wire::<()>(&[0x0b, 0x0c], |_| true, |_| None)
            .is_none());
        assert!(!s0.raw && s0.wire == [0x0b, 0x0c] && s0.nic_wire.is_empty());
        s0.refill(0, &[]);
        let r = s0.split_wire::<()>(&wire, |n| n == 1, |_| None);
        assert!(matches!(r, Some(Ok(()))));
        assert!(s0.raw && s0.wire.is_empty() && s0.nic_wire == wire && s0.host_wire.is_empty());
        drop(s0);
        let held = slots.lock(0).unwrap();
        assert!(slots.try_lock(0).is_none(), "held by another");
        drop(held);
        assert!(slots.try_lock(0).is_some() && slots.try_lock(2).is_none());
    }
}
