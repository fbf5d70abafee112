//! Software DT baseline: instructions per field and per byte, retired at a fixed IPC.
//!
//! Optimus Prime §2.3 measures ~25 dynamic instructions per byte on an ARM core and §1 argues
//! a lower bound of 5 instructions per output byte; Table 4 and Fig. 7 give the resulting
//! throughputs. This model counts instructions from a trace: a fixed cost per field, per
//! varint byte, per copied byte and per sub-message (size pass, call, length prefix). The
//! per-field cost is paid per tag: a decoder reads a field's entry again at each tag, and an
//! encoder, whose trace reads the entry once per field, writes a tag for each value of an
//! unpacked list.

use optimus_trace::{class_of, ConvClass, Direction, Event, Region, Repetition};
use serde::{Deserialize, Serialize};

use crate::error::{check_non_negative, check_positive, Result};
use crate::workload::MessageTrace;

/// CPU core model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CpuConfig {
    /// Clock in GHz. Default 2 (Optimus Prime Table 1).
    pub clock_ghz: f64,
    /// Instructions retired per cycle on DT code. Default 1.2 (calibrated: §1's 700 ns for
    /// 300 B at 5 instructions/byte and §2.3's ~1 Gbps cap at 25 instructions/byte).
    pub ipc: f64,
    /// Instructions per field (reflection dispatch, has-bit test, size pass, tag write), and
    /// per value of an unpacked list after its first (a tag of its own, as a decoder pays for
    /// it). Default 117 (fitted to Fig. 7's best 1.7 Gbps, Flat).
    pub per_field: f64,
    /// Instructions per varint output byte. Default 5 (§1: "five emitted instructions per
    /// output byte").
    pub per_varint_byte: f64,
    /// Instructions per copied byte (memcpy of strings, fixed-width). Default 0.5.
    pub per_copy_byte: f64,
    /// Instructions per sub-message (ByteSize recursion, call, length prefix). Default 254
    /// (fitted to Table 4's 1.3 Gbps, Mixed).
    pub per_submessage: f64,
}

impl Default for CpuConfig {
    fn default() -> Self {
        Self {
            clock_ghz: 2.0,
            ipc: 1.2,
            per_field: 117.0,
            per_varint_byte: 5.0,
            per_copy_byte: 0.5,
            per_submessage: 254.0,
        }
    }
}

impl CpuConfig {
    /// Checks that the core retires instructions and that no cost is negative.
    ///
    /// # Errors
    /// [`crate::SimError::Config`] naming `component` and the field.
    pub fn validate(&self, component: &'static str) -> Result<()> {
        check_positive(
            component,
            &[(self.clock_ghz, "clock_ghz"), (self.ipc, "ipc")],
        )?;
        check_non_negative(
            component,
            &[
                (self.per_field, "per_field"),
                (self.per_varint_byte, "per_varint_byte"),
                (self.per_copy_byte, "per_copy_byte"),
                (self.per_submessage, "per_submessage"),
            ],
        )
    }

    /// Instructions to transform one message.
    pub fn instructions(&self, t: &MessageTrace) -> f64 {
        let mut n = 0.0;
        // The class of the conversion the next field write belongs to, if any.
        let mut pending = None;
        // Per open message, the field whose entry it read last: its values' tags.
        let mut fields = vec![Tags::default()];
        let encode = t.direction == Direction::Encode;
        let value = |fields: &mut Vec<Tags>| {
            if encode && fields.last_mut().is_some_and(Tags::another_value) {
                self.per_field
            } else {
                0.0
            }
        };
        for e in &t.events {
            match e {
                Event::SchemaRead { repetition, .. } => {
                    n += self.per_field;
                    if let Some(f) = fields.last_mut() {
                        *f = Tags::of(*repetition);
                    }
                }
                Event::Enter { .. } => {
                    n += self.per_submessage + value(&mut fields);
                    fields.push(Tags::default());
                }
                Event::Leave => {
                    fields.pop();
                }
                Event::Convert { op, bytes } => {
                    n += value(&mut fields);
                    let class = class_of(*op);
                    pending = Some(class);
                    let varint = matches!(class, ConvClass::Varint | ConvClass::Zigzag);
                    if class.is_copy() {
                        n += self.per_copy_byte * f64::from(*bytes);
                    } else if varint && t.direction == Direction::Decode {
                        // Decode: the op consumed the varint's wire bytes.
                        n += self.per_varint_byte * f64::from(*bytes);
                    }
                }
                Event::FieldWrite { region, bytes, .. } => {
                    let class = pending.take();
                    if *region == Region::Buffer {
                        n += self.buffer_write(class, f64::from(*bytes));
                    }
                }
                _ => {}
            }
        }
        n
    }

    /// Instructions of an encode's write of `bytes` output bytes after a conversion of
    /// `class` (`None`: no conversion, as the unknown fields copied through).
    fn buffer_write(&self, class: Option<ConvClass>, bytes: f64) -> f64 {
        match class {
            // The varint's output bytes. The accelerator view widens each write back over the
            // tag and length bytes before it, so on encode a varint field's tag (and a
            // sub-message's header, when its first field is a varint) is priced here too,
            // where decode prices the value's bytes alone; `per_field` was fitted so.
            Some(ConvClass::Varint | ConvClass::Zigzag) => self.per_varint_byte * bytes,
            // Copies are priced at their conversion.
            Some(_) => 0.0,
            None => self.per_copy_byte * bytes,
        }
    }

    /// Nanoseconds to transform one message.
    pub fn message_ns(&self, t: &MessageTrace) -> f64 {
        self.instructions(t) / self.ipc / self.clock_ghz
    }

    /// Throughput of one core in Gbps of serialized bytes.
    pub fn gbps(&self, t: &MessageTrace) -> f64 {
        t.wire_bytes as f64 * 8.0 / self.message_ns(t)
    }

    /// Nanoseconds for `bytes` output bytes at `instr_per_byte` (§1's bound).
    pub fn bytes_ns(&self, bytes: f64, instr_per_byte: f64) -> f64 {
        bytes * instr_per_byte / self.ipc / self.clock_ghz
    }
}

/// One field's values as an encoder writes them: whether each has a tag of its own, and how
/// many have been written.
#[derive(Clone, Copy, Debug, Default)]
struct Tags {
    one_per_value: bool,
    values: u32,
}

impl Tags {
    fn of(repetition: Repetition) -> Self {
        Tags {
            one_per_value: repetition == Repetition::Repeated,
            values: 0,
        }
    }

    /// Notes a value (a conversion or a sub-message) of the field; whether it adds a tag to
    /// the entry's.
    fn another_value(&mut self) -> bool {
        self.values += 1;
        self.one_per_value && self.values > 1
    }
}

#[cfg(test)]
mod tests {
    use optimus_trace::{kind, Format};

    use super::*;

    /// One message: an int32 (2-byte varint), a 100-byte string and a sub-message holding a
    /// sint32 (1-byte varint); with tags and lengths the wire form is 3 + 102 + 4 = 109 bytes.
    fn trace(direction: Direction) -> MessageTrace {
        // Encode writes the wire bytes, decode the in-memory message.
        let out = match direction {
            Direction::Encode => Region::Buffer,
            Direction::Decode => Region::Message,
        };
        let field = |k: u16, bytes: u32, written: u32| {
            [
                Event::SchemaRead {
                    kind: k,
                    repetition: Repetition::Single,
                    addr: 0,
                    size: 16,
                },
                Event::Convert { op: k, bytes },
                Event::FieldWrite {
                    region: out,
                    addr: 0,
                    bytes: written,
                },
            ]
        };
        // Encode converts the in-memory value, decode the wire bytes.
        let (int_in, sint_in) = match direction {
            Direction::Encode => (4, 4),
            Direction::Decode => (2, 1),
        };
        let mut events = vec![Event::MessageBegin {
            direction,
            format: Format::Protobuf,
            type_id: 0,
        }];
        events.extend(field(kind::INT32, int_in, 2));
        events.extend(field(kind::STRING, 100, 100));
        events.push(Event::SchemaRead {
            kind: kind::MESSAGE,
            repetition: Repetition::Single,
            addr: 0,
            size: 16,
        });
        events.push(Event::Enter { type_id: 1 });
        events.extend(field(kind::SINT32, sint_in, 1));
        events.push(Event::Leave);
        events.push(Event::MessageEnd { wire_bytes: 109 });
        MessageTrace {
            events,
            wire_bytes: 109,
            direction,
        }
    }

    #[test]
    fn a_message_costs_its_fields_sub_messages_varint_and_copied_bytes() {
        let cpu = CpuConfig::default();
        // Four schema entries (117 each), one sub-message (254), 3 varint bytes (5 each),
        // 100 copied bytes (0.5 each); decode prices the varints' wire bytes it consumes,
        // encode the ones it writes, so both come to the same count here.
        let expected = 4.0 * 117.0 + 254.0 + 3.0 * 5.0 + 100.0 * 0.5;
        for d in [Direction::Encode, Direction::Decode] {
            let t = trace(d);
            assert_eq!(cpu.instructions(&t), expected, "{d:?}");
            // 1.2 instructions per cycle at 2 GHz.
            assert!((cpu.message_ns(&t) - expected / 2.4).abs() < 1e-9);
            assert!((cpu.gbps(&t) - 109.0 * 8.0 / (expected / 2.4)).abs() < 1e-9);
        }
    }

    /// A message of one field of `kind` with `values` values of 4 input bytes each, written
    /// as `repetition` says (`sub`: each value a sub-message of one such field): on encode one
    /// schema entry for them all, on decode one per tag read.
    fn list(
        direction: Direction,
        repetition: Repetition,
        values: usize,
        sub: bool,
    ) -> MessageTrace {
        let entry = |repetition| Event::SchemaRead {
            kind: if sub { kind::MESSAGE } else { kind::FIXED32 },
            repetition,
            addr: 0x40,
            size: 16,
        };
        let value = [
            Event::Convert {
                op: kind::FIXED32,
                bytes: 4,
            },
            Event::FieldWrite {
                region: Region::Buffer,
                addr: 0,
                bytes: 4,
            },
        ];
        let mut events = vec![Event::MessageBegin {
            direction,
            format: Format::Protobuf,
            type_id: 0,
        }];
        let entry_per_value = direction == Direction::Decode && repetition != Repetition::Packed;
        for v in 0..values {
            if v == 0 || entry_per_value {
                events.push(entry(repetition));
            }
            if sub {
                events.push(Event::Enter { type_id: 1 });
                events.push(entry(Repetition::Single));
                events.extend(value);
                events.push(Event::Leave);
            } else {
                events.extend(value);
            }
        }
        events.push(Event::MessageEnd { wire_bytes: 0 });
        MessageTrace {
            events,
            wire_bytes: 0,
            direction,
        }
    }

    #[test]
    fn each_tag_costs_a_field_in_both_directions() {
        let cpu = CpuConfig::default();
        let copies = 0.5 * 4.0;
        for direction in [Direction::Encode, Direction::Decode] {
            let cost = |repetition, sub| cpu.instructions(&list(direction, repetition, 3, sub));
            // Three values each with a tag of their own: three fields' work, however many
            // entries the trace reads.
            assert_eq!(
                cost(Repetition::Repeated, false),
                3.0 * (117.0 + copies),
                "{direction:?}"
            );
            // Packed: one tag and length for the three.
            assert_eq!(cost(Repetition::Packed, false), 117.0 + 3.0 * copies);
            // Three sub-messages in a list: a tag each, and each its own field.
            assert_eq!(
                cost(Repetition::Repeated, true),
                3.0 * (117.0 + 254.0 + 117.0 + copies),
                "{direction:?}"
            );
        }
        // A singular field's entry read once: one field, whatever the trace then converts.
        let one = cpu.instructions(&list(Direction::Encode, Repetition::Single, 3, false));
        assert_eq!(one, 117.0 + 3.0 * copies);
    }

    #[test]
    fn unknown_fields_are_copied_whatever_field_came_before() {
        // Encode copies a message's unknown fields through after its last field, a read and
        // a write with no conversion; after the trace's sint32 (a varint) they are still a
        // copy.
        let cpu = CpuConfig::default();
        let mut t = trace(Direction::Encode);
        let known = cpu.instructions(&t);
        let unknown = [
            Event::FieldRead {
                region: Region::Message,
                addr: 0,
                bytes: 40,
            },
            Event::FieldWrite {
                region: Region::Buffer,
                addr: 109,
                bytes: 40,
            },
        ];
        let leave = t.events.iter().position(|e| *e == Event::Leave).unwrap();
        t.events.splice(leave..leave, unknown);
        assert_eq!(cpu.instructions(&t), known + 40.0 * cpu.per_copy_byte);
    }

    #[test]
    fn bad_costs_are_refused() {
        let cpu = CpuConfig {
            ipc: 0.0,
            ..CpuConfig::default()
        };
        assert!(cpu.validate("cpu").is_err());
        let cpu = CpuConfig {
            per_copy_byte: -1.0,
            ..CpuConfig::default()
        };
        assert!(cpu.validate("cpu").is_err());
        assert!(CpuConfig::default().validate("cpu").is_ok());
    }
}
