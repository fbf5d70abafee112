//! The trace events and the small enums they carry.
//!
//! One message's trace is `MessageBegin`, then schema reads, field reads/writes, converter ops
//! and balanced `Enter`/`Leave` pairs in the order the engine performs them, then `MessageEnd`.
//! [`check_structure`] verifies that shape, so models can rely on it.

use crate::file::TraceError;

/// Defines an enum that a trace file stores as a byte: the variants with their codes, listed
/// once, and the decoder of those codes (`from_u8`), so that a variant cannot be added to the
/// one and forgotten in the other.
macro_rules! byte_coded {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal, )+
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $( $(#[$vmeta])* $variant = $code, )+
        }

        impl $name {
            /// The variant whose code is `v`, if any.
            pub(crate) fn from_u8(v: u8) -> Option<Self> {
                match v {
                    $( $code => Some(Self::$variant), )+
                    _ => None,
                }
            }
        }
    };
}

byte_coded! {
    /// Whether a message is being serialized or deserialized.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Direction {
        /// In-memory message → wire bytes (serialization).
        Encode = 0,
        /// Wire bytes → in-memory message (deserialization).
        Decode = 1,
    }
}

byte_coded! {
    /// The wire format being produced or consumed.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum Format {
        /// Protobuf binary wire format.
        Protobuf = 0,
        /// Protobuf's canonical JSON mapping.
        ProtobufJson = 1,
        /// Apache Thrift binary protocol.
        ThriftBinary = 2,
        /// Apache Thrift compact protocol.
        ThriftCompact = 3,
        /// Cereal's object-graph format.
        Cereal = 4,
    }
}

byte_coded! {
    /// Which memory an address belongs to.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Region {
        /// In-memory message objects in host memory (arena records, strings, sub-messages).
        Message = 0,
        /// The serialized byte buffer (output of encode, input of decode).
        Buffer = 1,
        /// Accelerator-resident memory: fields placed on the offload engine (RPCAcc's Acc bit).
        Accel = 2,
    }
}

byte_coded! {
    /// How many values a schema entry's field holds and how they are written: what the entry's
    /// type says beside its kind.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub enum Repetition {
        /// One value (singular or optional).
        #[default]
        Single = 0,
        /// A list of values (repeated or map), each written with a tag of its own.
        Repeated = 1,
        /// A list of scalars written packed: one tag and length for them all.
        Packed = 2,
    }
}

impl Repetition {
    /// Whether the field holds a list.
    pub fn is_list(self) -> bool {
        self != Self::Single
    }
}

/// One thing a DT accelerator does while transforming a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// A transformation of one top-level message starts.
    MessageBegin {
        /// Encode or decode.
        direction: Direction,
        /// The wire format.
        format: Format,
        /// Index of the message type in the engine's `SchemaSet`.
        type_id: u32,
    },
    /// The transformation ends; `wire_bytes` is the size of the serialized form.
    MessageEnd {
        /// Bytes of the serialized message (produced by encode, consumed by decode).
        wire_bytes: u64,
    },
    /// A schema entry `{type, address}` was read.
    SchemaRead {
        /// Field kind / converter class of the entry (engine's numbering).
        kind: u16,
        /// One value or a list, and how a list is written.
        repetition: Repetition,
        /// Address of the schema entry itself.
        addr: u64,
        /// Size of the entry in bytes.
        size: u32,
    },
    /// Field data was read.
    FieldRead {
        /// Which memory the bytes live in.
        region: Region,
        /// Address of the first byte.
        addr: u64,
        /// Number of bytes read.
        bytes: u32,
    },
    /// Field data was written.
    FieldWrite {
        /// Which memory the bytes go to.
        region: Region,
        /// Address of the first byte.
        addr: u64,
        /// Number of bytes written.
        bytes: u32,
    },
    /// A converter op transformed `bytes` input bytes.
    Convert {
        /// Converter op id (engine's `ConvOp` as a number).
        op: u16,
        /// Input bytes the op consumed.
        bytes: u32,
    },
    /// Descent into a sub-message of type `type_id`.
    Enter {
        /// Index of the sub-message type in the `SchemaSet`.
        type_id: u32,
    },
    /// Return from the innermost sub-message.
    Leave,
}

/// Checks that `events` is a sequence of well-formed messages: each starts with `MessageBegin`,
/// ends with `MessageEnd`, has balanced `Enter`/`Leave`, and nothing sits between messages.
///
/// # Errors
/// [`TraceError::Structure`] naming the index of the first offending event.
pub fn check_structure(events: &[Event]) -> Result<(), TraceError> {
    let mut nesting = Nesting::default();
    let at = |index, why| TraceError::Structure {
        index,
        offset: None,
        why,
    };
    for (i, ev) in events.iter().enumerate() {
        nesting.push(ev).map_err(|why| at(i, why))?;
    }
    nesting.finish().map_err(|why| at(events.len(), why))
}

/// Where a trace stands, event by event: inside a message or not, and how deep. What
/// [`check_structure`] checks over a slice, the file decoder checks as it reads, so that it
/// can name the byte offset of the offending event.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Nesting {
    in_message: bool,
    depth: u64,
}

impl Nesting {
    /// Takes the next event, or says why it cannot come here.
    pub(crate) fn push(&mut self, ev: &Event) -> Result<(), &'static str> {
        match ev {
            Event::MessageBegin { .. } => {
                if self.in_message {
                    return Err("MessageBegin inside a message");
                }
                self.in_message = true;
            }
            Event::MessageEnd { .. } => {
                if !self.in_message {
                    return Err("MessageEnd outside a message");
                }
                if self.depth != 0 {
                    return Err("MessageEnd with unclosed Enter");
                }
                self.in_message = false;
            }
            Event::Enter { .. } => {
                if !self.in_message {
                    return Err("Enter outside a message");
                }
                self.depth += 1;
            }
            Event::Leave => {
                if !self.in_message || self.depth == 0 {
                    return Err("Leave without Enter");
                }
                self.depth -= 1;
            }
            _ => {
                if !self.in_message {
                    return Err("event outside a message");
                }
            }
        }
        Ok(())
    }

    /// Whether the trace may end here.
    pub(crate) fn finish(&self) -> Result<(), &'static str> {
        if self.in_message {
            return Err("trace ends inside a message");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn begin() -> Event {
        Event::MessageBegin {
            direction: Direction::Encode,
            format: Format::Protobuf,
            type_id: 0,
        }
    }

    #[test]
    fn byte_codes_decode_to_the_variant_that_carries_them() {
        fn codes<T: Copy>(from: fn(u8) -> Option<T>, code: fn(T) -> u8) -> Vec<u8> {
            (0..=u8::MAX)
                .filter_map(|v| from(v).inspect(|&t| assert_eq!(code(t), v)).map(|_| v))
                .collect()
        }
        assert_eq!(codes(Direction::from_u8, |d| d as u8), [0, 1]);
        assert_eq!(codes(Format::from_u8, |f| f as u8), [0, 1, 2, 3, 4]);
        assert_eq!(codes(Region::from_u8, |r| r as u8), [0, 1, 2]);
        assert_eq!(codes(Repetition::from_u8, |r| r as u8), [0, 1, 2]);
    }

    #[test]
    fn structure_accepts_balanced_messages() {
        let evs = [
            begin(),
            Event::Enter { type_id: 1 },
            Event::Leave,
            Event::MessageEnd { wire_bytes: 3 },
        ];
        assert!(check_structure(&evs).is_ok());
        assert!(check_structure(&[]).is_ok());
    }

    #[test]
    fn structure_rejects_unbalanced() {
        let evs = [
            begin(),
            Event::Enter { type_id: 1 },
            Event::MessageEnd { wire_bytes: 3 },
        ];
        assert!(matches!(
            check_structure(&evs),
            Err(TraceError::Structure { index: 2, .. })
        ));
        assert!(check_structure(&[Event::Leave]).is_err());
        assert!(check_structure(&[begin()]).is_err());
        assert!(check_structure(&[begin(), begin()]).is_err());
        assert!(check_structure(&[Event::Convert { op: 1, bytes: 1 }]).is_err());
    }
}
