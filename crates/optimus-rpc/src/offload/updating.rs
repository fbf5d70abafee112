//! Automatic field updating (RPCAcc §III-E): the application's accesses to the fields a
//! placement may move are counted, and the NIC core moves a NIC-resident field to host memory
//! when the application uses it, and back when it stops.
//!
//! The application side bumps one relaxed atomic counter per access, and one per call it
//! served, per message type ([`AccessCounters`]); the NIC side ([`Updater`]) looks at the
//! counters once the app has served a window of calls of a type since its last look: a
//! NIC-resident field used `promote_at` times per window moves to host memory, a moved field
//! not touched in a whole window moves back. Counting the app's own calls, not the NIC's
//! completions, keeps a batch of calls served at once in one window. A move publishes a new
//! [`PlacementTables`] version for the calls that start after it; calls in flight keep theirs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use optimus_schema::{MessageId, SchemaSet};

use super::placement::{Placement, PlacementTables};

/// When fields move. `window` calls of a type between two looks at its counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldUpdating {
    /// Calls of a message type per decision.
    pub window: u32,
    /// Accesses within a window that move a NIC-resident field to host memory.
    pub promote_at: u32,
}

impl Default for FieldUpdating {
    fn default() -> Self {
        Self {
            window: 256,
            promote_at: 16,
        }
    }
}

/// Per message type, per field, the application's accesses (only the fields a placement
/// declared NIC-resident are counted: the others never move).
pub(crate) struct AccessCounters {
    /// Indexed by message id number, then field index; empty for types without such fields.
    counts: Vec<Box<[AtomicU64]>>,
    movable: Vec<Box<[bool]>>,
    /// Calls of each type the app served.
    served: Box<[AtomicU64]>,
    /// Fields moved to host memory, and back to NIC memory.
    pub(crate) moves_to_host: AtomicU64,
    pub(crate) moves_to_nic: AtomicU64,
}

impl AccessCounters {
    pub(crate) fn new(schema: &SchemaSet, placement: &Placement) -> Self {
        let mut counts = Vec::new();
        let mut movable = Vec::new();
        for (id, ty) in schema.messages() {
            let m: Box<[bool]> = (0..ty.fields.len())
                .map(|i| placement.is_nic(id, i))
                .collect();
            if m.iter().any(|&b| b) {
                counts.push((0..ty.fields.len()).map(|_| AtomicU64::new(0)).collect());
                movable.push(m);
            } else {
                counts.push(Box::default());
                movable.push(Box::default());
            }
        }
        Self {
            counts,
            movable,
            served: (0..schema.messages().count())
                .map(|_| AtomicU64::new(0))
                .collect(),
            moves_to_host: AtomicU64::new(0),
            moves_to_nic: AtomicU64::new(0),
        }
    }

    /// Counts an access to field `index` of `id` (a no-op for fields that never move).
    #[inline]
    pub(crate) fn touch(&self, id: MessageId, index: usize) {
        let t = id.0 as usize;
        if self.movable.get(t).and_then(|m| m.get(index)) == Some(&true) {
            self.counts[t][index].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a call of type `id` the app served.
    #[inline]
    pub(crate) fn serve(&self, id: MessageId) {
        if let Some(c) = self.served.get(id.0 as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn served(&self, id: MessageId) -> u64 {
        self.served
            .get(id.0 as usize)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Accesses to field `index` of `id` so far.
    pub(crate) fn count(&self, id: MessageId, index: usize) -> u64 {
        self.counts
            .get(id.0 as usize)
            .and_then(|c| c.get(index))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    fn movable(&self, id: MessageId) -> impl Iterator<Item = usize> + '_ {
        self.movable
            .get(id.0 as usize)
            .into_iter()
            .flat_map(|m| m.iter().enumerate())
            .filter(|(_, &b)| b)
            .map(|(i, _)| i)
    }
}

/// The NIC side of field updating: per message type, the calls served and the access
/// counters at the start of the current window.
pub(crate) struct Updater {
    policy: Option<FieldUpdating>,
    /// Calls completed here since the last look at the app's counters (read only then, so
    /// the app's counter lines do not move between the cores on every call).
    completed: Vec<u32>,
    served_at_start: Vec<u64>,
    at_start: Vec<Box<[u64]>>,
}

impl Updater {
    pub(crate) fn new(schema: &SchemaSet, policy: Option<FieldUpdating>) -> Self {
        let n = schema.messages().count();
        Self {
            policy,
            completed: vec![0; n],
            served_at_start: vec![0; n],
            at_start: schema
                .messages()
                .map(|(_, ty)| vec![0u64; ty.fields.len()].into_boxed_slice())
                .collect(),
        }
    }

    /// After a call of type `id`: once the app has served a window of such calls, moves the
    /// fields its counters say should move. Returns the new version when something moved.
    pub(crate) fn on_call(
        &mut self,
        id: MessageId,
        counters: &AccessCounters,
        current: &Arc<PlacementTables>,
    ) -> Option<Arc<PlacementTables>> {
        let policy = self.policy?;
        let t = id.0 as usize;
        let completed = self.completed.get_mut(t)?;
        *completed += 1;
        if *completed < policy.window.max(1) {
            return None;
        }
        *completed = 0;
        let served = counters.served(id);
        let start = self.served_at_start.get_mut(t)?;
        let calls = served - *start;
        if calls < u64::from(policy.window.max(1)) {
            return None;
        }
        *start = served;
        let mut next: Option<PlacementTables> = None;
        for index in counters.movable(id) {
            let now = counters.count(id, index);
            let delta = now - std::mem::replace(&mut self.at_start[t][index], now);
            let on_nic = next.as_ref().unwrap_or(current).is_nic(id, index);
            // `promote_at` uses per `window` calls, as a rate over the calls served.
            let used = delta * u64::from(policy.window.max(1))
                >= u64::from(policy.promote_at.max(1)) * calls;
            let to = if on_nic && used {
                counters.moves_to_host.fetch_add(1, Ordering::Relaxed);
                Some(false)
            } else if !on_nic && delta == 0 {
                counters.moves_to_nic.fetch_add(1, Ordering::Relaxed);
                Some(true)
            } else {
                None
            };
            if let Some(nic) = to {
                next = Some(next.as_ref().unwrap_or(current).with(id, index, nic));
            }
        }
        next.map(Arc::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_used_field_moves_to_the_host_and_back_when_unused() {
        let s = SchemaSet::from_source(
            "syntax = \"proto3\"; message M { uint64 id = 1; bytes a = 2; bytes b = 3; }",
        )
        .unwrap();
        let id = s.message_by_name("M").unwrap();
        let p = Placement::parse_file(&s, "M.a nic\nM.b nic").unwrap();
        let counters = AccessCounters::new(&s, &p);
        let mut current = Arc::new(PlacementTables::new(&s, &[id], &p));
        let mut up = Updater::new(
            &s,
            Some(FieldUpdating {
                window: 4,
                promote_at: 2,
            }),
        );
        let mut run_window = |touch_a: u32, current: &mut Arc<PlacementTables>| {
            for k in 0..4 {
                if k < touch_a {
                    counters.touch(id, 1);
                }
                counters.touch(id, 0); // never counted: a scalar that never moves
                counters.serve(id);
                if let Some(next) = up.on_call(id, &counters, current) {
                    *current = next;
                }
            }
        };
        // One access per window is below `promote_at`: `a` stays; `b` is never touched and
        // stays in NIC memory.
        run_window(1, &mut current);
        assert!(current.is_nic(id, 1) && current.is_nic(id, 2));
        assert_eq!(current.version, 0);
        run_window(3, &mut current);
        assert!(!current.is_nic(id, 1) && current.is_nic(id, 2));
        assert_eq!(current.version, 1);
        // Still used: stays on the host.
        run_window(2, &mut current);
        assert!(!current.is_nic(id, 1));
        // A window without an access: back to NIC memory.
        run_window(0, &mut current);
        assert!(current.is_nic(id, 1));
        assert_eq!(current.version, 2);
        assert_eq!(counters.moves_to_host.load(Ordering::Relaxed), 1);
        assert_eq!(counters.moves_to_nic.load(Ordering::Relaxed), 1);
        assert_eq!(counters.count(id, 0), 0);
    }

    #[test]
    fn without_a_policy_nothing_moves() {
        let s = SchemaSet::from_source("syntax = \"proto3\"; message M { bytes a = 1; }").unwrap();
        let id = s.message_by_name("M").unwrap();
        let p = Placement::parse_file(&s, "M.a nic").unwrap();
        let counters = AccessCounters::new(&s, &p);
        let current = Arc::new(PlacementTables::new(&s, &[id], &p));
        let mut up = Updater::new(&s, None);
        for _ in 0..1000 {
            counters.touch(id, 0);
            counters.serve(id);
            assert!(up.on_call(id, &counters, &current).is_none());
        }
    }
}
