//! The `Tracer` trait the engine is generic over, its two in-memory implementations, and
//! [`TraceSource`], the engine as the timing models ask it for traces.
//!
//! The engine calls one hook per accelerator-visible step. With [`NoTrace`] every hook is an
//! empty `#[inline(always)]` function and `Tracer::ENABLED` is `false`, so a traced and an
//! untraced engine compile to the same code; callers may test `T::ENABLED` (a constant) before
//! computing an expensive argument.

use crate::event::{Direction, Event, Format, Region, Repetition};

/// Receiver of the events an accelerator would perform while transforming messages.
///
/// The hooks are called in program order; a well-formed trace for one message is
/// `message_begin`, any number of the other hooks with balanced `enter`/`leave`, then
/// `message_end` (see [`crate::check_structure`]).
pub trait Tracer {
    /// `false` when every hook does nothing; lets callers skip work computed only for tracing.
    const ENABLED: bool;

    /// A top-level message transformation starts.
    fn message_begin(&mut self, direction: Direction, format: Format, type_id: u32);
    /// The transformation ends; `wire_bytes` is the size of the serialized message.
    fn message_end(&mut self, wire_bytes: u64);
    /// A schema entry of field kind `kind` and `repetition`, `size` bytes long, was read at
    /// `addr`.
    fn schema_read(&mut self, kind: u16, repetition: Repetition, addr: u64, size: u32);
    /// `bytes` bytes of field data were read at `addr` in `region`.
    fn field_read(&mut self, region: Region, addr: u64, bytes: u32);
    /// `bytes` bytes of field data were written at `addr` in `region`.
    fn field_write(&mut self, region: Region, addr: u64, bytes: u32);
    /// Converter op `op` transformed `bytes` input bytes.
    fn convert(&mut self, op: u16, bytes: u32);
    /// Descent into a sub-message of type `type_id`.
    fn enter(&mut self, type_id: u32);
    /// Return from the innermost sub-message.
    fn leave(&mut self);
}

/// The tracer that records nothing and costs nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTrace;

impl Tracer for NoTrace {
    const ENABLED: bool = false;
    #[inline(always)]
    fn message_begin(&mut self, _: Direction, _: Format, _: u32) {}
    #[inline(always)]
    fn message_end(&mut self, _: u64) {}
    #[inline(always)]
    fn schema_read(&mut self, _: u16, _: Repetition, _: u64, _: u32) {}
    #[inline(always)]
    fn field_read(&mut self, _: Region, _: u64, _: u32) {}
    #[inline(always)]
    fn field_write(&mut self, _: Region, _: u64, _: u32) {}
    #[inline(always)]
    fn convert(&mut self, _: u16, _: u32) {}
    #[inline(always)]
    fn enter(&mut self, _: u32) {}
    #[inline(always)]
    fn leave(&mut self) {}
}

/// Collects events in memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorder {
    /// The events in the order they were reported.
    pub events: Vec<Event>,
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds recorded events to another tracer, in order.
    pub fn replay<T: Tracer>(&self, t: &mut T) {
        for ev in &self.events {
            replay_one(*ev, t);
        }
    }
}

/// Reports one event to `t` through the matching hook.
pub(crate) fn replay_one<T: Tracer + ?Sized>(ev: Event, t: &mut T) {
    match ev {
        Event::MessageBegin {
            direction,
            format,
            type_id,
        } => t.message_begin(direction, format, type_id),
        Event::MessageEnd { wire_bytes } => t.message_end(wire_bytes),
        Event::SchemaRead {
            kind,
            repetition,
            addr,
            size,
        } => t.schema_read(kind, repetition, addr, size),
        Event::FieldRead {
            region,
            addr,
            bytes,
        } => t.field_read(region, addr, bytes),
        Event::FieldWrite {
            region,
            addr,
            bytes,
        } => t.field_write(region, addr, bytes),
        Event::Convert { op, bytes } => t.convert(op, bytes),
        Event::Enter { type_id } => t.enter(type_id),
        Event::Leave => t.leave(),
    }
}

impl Tracer for Recorder {
    const ENABLED: bool = true;
    fn message_begin(&mut self, direction: Direction, format: Format, type_id: u32) {
        self.events.push(Event::MessageBegin {
            direction,
            format,
            type_id,
        });
    }
    fn message_end(&mut self, wire_bytes: u64) {
        self.events.push(Event::MessageEnd { wire_bytes });
    }
    fn schema_read(&mut self, kind: u16, repetition: Repetition, addr: u64, size: u32) {
        self.events.push(Event::SchemaRead {
            kind,
            repetition,
            addr,
            size,
        });
    }
    fn field_read(&mut self, region: Region, addr: u64, bytes: u32) {
        self.events.push(Event::FieldRead {
            region,
            addr,
            bytes,
        });
    }
    fn field_write(&mut self, region: Region, addr: u64, bytes: u32) {
        self.events.push(Event::FieldWrite {
            region,
            addr,
            bytes,
        });
    }
    fn convert(&mut self, op: u16, bytes: u32) {
        self.events.push(Event::Convert { op, bytes });
    }
    fn enter(&mut self, type_id: u32) {
        self.events.push(Event::Enter { type_id });
    }
    fn leave(&mut self) {
        self.events.push(Event::Leave);
    }
}

impl<T: Tracer + ?Sized> Tracer for &mut T {
    const ENABLED: bool = T::ENABLED;
    #[inline(always)]
    fn message_begin(&mut self, direction: Direction, format: Format, type_id: u32) {
        (**self).message_begin(direction, format, type_id)
    }
    #[inline(always)]
    fn message_end(&mut self, wire_bytes: u64) {
        (**self).message_end(wire_bytes)
    }
    #[inline(always)]
    fn schema_read(&mut self, kind: u16, repetition: Repetition, addr: u64, size: u32) {
        (**self).schema_read(kind, repetition, addr, size)
    }
    #[inline(always)]
    fn field_read(&mut self, region: Region, addr: u64, bytes: u32) {
        (**self).field_read(region, addr, bytes)
    }
    #[inline(always)]
    fn field_write(&mut self, region: Region, addr: u64, bytes: u32) {
        (**self).field_write(region, addr, bytes)
    }
    #[inline(always)]
    fn convert(&mut self, op: u16, bytes: u32) {
        (**self).convert(op, bytes)
    }
    #[inline(always)]
    fn enter(&mut self, type_id: u32) {
        (**self).enter(type_id)
    }
    #[inline(always)]
    fn leave(&mut self) {
        (**self).leave()
    }
}

/// The engine, seen from a timing model: something that transforms serialized messages and
/// reports the events. `optimus-core` implements it over its traced codec; the models depend
/// only on this vocabulary.
pub trait TraceSource {
    /// Compiles `proto` (proto3 source text), then for each `(full type name, wire bytes)` in
    /// order either decodes the bytes (`Direction::Decode`) or decodes them untraced and
    /// re-encodes the message (`Direction::Encode`), reporting one traced transformation per
    /// message. The fields named in `accel_fields` (`full.message.Name.field`) carry RPCAcc's
    /// "Acc" label: their data is reported in [`Region::Accel`].
    ///
    /// # Errors
    /// A description of what the engine rejected (schema, message or field name).
    fn trace(
        &mut self,
        proto: &str,
        messages: &[(&str, &[u8])],
        direction: Direction,
        accel_fields: &[&str],
    ) -> Result<Vec<Event>, String>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drive<T: Tracer>(mut t: T) {
        t.message_begin(Direction::Encode, Format::Protobuf, 3);
        t.schema_read(1, Repetition::Packed, 0x1000, 16);
        t.field_read(Region::Message, 0x2000, 8);
        t.convert(2, 8);
        t.field_write(Region::Buffer, 0, 2);
        t.enter(4);
        t.leave();
        t.message_end(2);
    }

    #[test]
    fn recorder_keeps_order_and_replays() {
        let mut r = Recorder::new();
        drive(&mut r);
        assert_eq!(r.events.len(), 8);
        assert_eq!(
            r.events[1],
            Event::SchemaRead {
                kind: 1,
                repetition: Repetition::Packed,
                addr: 0x1000,
                size: 16
            }
        );
        let mut again = Recorder::new();
        r.replay(&mut again);
        assert_eq!(r, again);
        crate::check_structure(&r.events).unwrap();
    }

    #[test]
    fn notrace_is_disabled_and_zero_sized() {
        const { assert!(!NoTrace::ENABLED) };
        assert_eq!(std::mem::size_of::<NoTrace>(), 0);
        drive(NoTrace);
    }
}
