//! Field kinds as trace events number them, and the converter class each one needs.
//!
//! `SchemaRead::kind` and `Convert::op` carry the field's kind as its
//! `google.protobuf.FieldDescriptorProto.Type` number (descriptor.proto: 1 = double …
//! 18 = sint64), the numbering the engine's schema uses. Models map a kind to a
//! [`ConvClass`] to price it; numbers outside the table (ops of other formats or user
//! programs) are [`ConvClass::Other`].

/// `double`.
pub const DOUBLE: u16 = 1;
/// `float`.
pub const FLOAT: u16 = 2;
/// `int64`.
pub const INT64: u16 = 3;
/// `uint64`.
pub const UINT64: u16 = 4;
/// `int32`.
pub const INT32: u16 = 5;
/// `fixed64`.
pub const FIXED64: u16 = 6;
/// `fixed32`.
pub const FIXED32: u16 = 7;
/// `bool`.
pub const BOOL: u16 = 8;
/// `string`.
pub const STRING: u16 = 9;
/// `group` (proto2).
pub const GROUP: u16 = 10;
/// A sub-message.
pub const MESSAGE: u16 = 11;
/// `bytes`.
pub const BYTES: u16 = 12;
/// `uint32`.
pub const UINT32: u16 = 13;
/// An enum.
pub const ENUM: u16 = 14;
/// `sfixed32`.
pub const SFIXED32: u16 = 15;
/// `sfixed64`.
pub const SFIXED64: u16 = 16;
/// `sint32`.
pub const SINT32: u16 = 17;
/// `sint64`.
pub const SINT64: u16 = 18;

/// What a converter does for a kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvClass {
    /// Varint (int32/64, uint32/64, bool, enum).
    Varint,
    /// Zigzag then varint (sint32/64).
    Zigzag,
    /// Fixed-width little-endian copy (fixed32/64, sfixed32/64, float, double).
    Fixed,
    /// Length-delimited copy (string, bytes).
    Bytes,
    /// Sub-message or group: a length prefix (or group tags) around nested fields.
    Message,
    /// Not a protobuf field kind.
    Other,
}

impl ConvClass {
    /// Whether the conversion copies the value's bytes as they are (fixed-width values,
    /// strings, bytes), rather than encoding them.
    pub fn is_copy(self) -> bool {
        matches!(self, ConvClass::Fixed | ConvClass::Bytes)
    }
}

/// The converter class of kind number `kind`.
pub fn class_of(kind: u16) -> ConvClass {
    match kind {
        INT64 | UINT64 | INT32 | BOOL | UINT32 | ENUM => ConvClass::Varint,
        SINT32 | SINT64 => ConvClass::Zigzag,
        DOUBLE | FLOAT | FIXED64 | FIXED32 | SFIXED32 | SFIXED64 => ConvClass::Fixed,
        STRING | BYTES => ConvClass::Bytes,
        MESSAGE | GROUP => ConvClass::Message,
        _ => ConvClass::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_descriptor_type_has_a_class() {
        for k in 1..=18 {
            assert_ne!(class_of(k), ConvClass::Other, "{k}");
        }
        assert_eq!(class_of(0), ConvClass::Other);
        assert_eq!(class_of(19), ConvClass::Other);
        assert_eq!(class_of(SINT64), ConvClass::Zigzag);
        assert_eq!(class_of(STRING), ConvClass::Bytes);
    }
}
