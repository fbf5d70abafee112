//! Software DT baseline: instructions per field and per byte, retired at a fixed IPC.
//!
//! Optimus Prime §2.3 measures ~25 dynamic instructions per byte on an ARM core and §1 argues
//! a lower bound of 5 instructions per output byte; Table 4 and Fig. 7 give the resulting
//! throughputs. This model counts instructions from a trace: a fixed cost per field, per
//! varint byte, per copied byte and per sub-message (size pass, call, length prefix).

use optimus_trace::{class_of, ConvClass, Direction, Event, Region};
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
    /// Instructions per field (reflection dispatch, has-bit test, size pass, tag write).
    /// Default 117 (fitted to Fig. 7's best 1.7 Gbps, Flat).
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
        let mut last = ConvClass::Other;
        for e in &t.events {
            match e {
                Event::SchemaRead { .. } => n += self.per_field,
                Event::Enter { .. } => n += self.per_submessage,
                Event::Convert { op, bytes } => {
                    last = class_of(*op);
                    let varint = matches!(last, ConvClass::Varint | ConvClass::Zigzag);
                    if matches!(last, ConvClass::Bytes | ConvClass::Fixed) {
                        n += self.per_copy_byte * f64::from(*bytes);
                    } else if varint && t.direction == Direction::Decode {
                        // Decode: the op consumed the varint's wire bytes.
                        n += self.per_varint_byte * f64::from(*bytes);
                    }
                }
                // Encode: the varint's output bytes, tag included.
                Event::FieldWrite {
                    region: Region::Buffer,
                    bytes,
                    ..
                } if matches!(last, ConvClass::Varint | ConvClass::Zigzag) => {
                    n += self.per_varint_byte * f64::from(*bytes);
                }
                _ => {}
            }
        }
        n
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
