//! Field kinds and protobuf wire types, generated from one table so every dispatch agrees.
//!
//! `kind_table!` lists each kind once with its descriptor number, wire type and name;
//! the `Kind` enum, its conversions and its wire type all come from that list, so a kind
//! cannot be added to one place and forgotten in another.

/// The six protobuf wire types (the low three bits of a tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum WireType {
    /// Base-128 varint.
    Varint = 0,
    /// Little-endian 8 bytes.
    Fixed64 = 1,
    /// Varint length followed by that many bytes.
    LengthDelimited = 2,
    /// Start of a group (proto2).
    StartGroup = 3,
    /// End of a group (proto2).
    EndGroup = 4,
    /// Little-endian 4 bytes.
    Fixed32 = 5,
}

impl WireType {
    /// The wire type with this 3-bit number, if it is one of the six.
    pub fn from_bits(bits: u32) -> Option<WireType> {
        Some(match bits {
            0 => WireType::Varint,
            1 => WireType::Fixed64,
            2 => WireType::LengthDelimited,
            3 => WireType::StartGroup,
            4 => WireType::EndGroup,
            5 => WireType::Fixed32,
            _ => return None,
        })
    }
}

macro_rules! kind_table {
    ($( $(#[$doc:meta])* $kind:ident = $num:literal, $wire:ident, $name:literal; )*) => {
        /// The type of a field's values, numbered as in `FieldDescriptorProto.Type`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Kind {
            $( $(#[$doc])* $kind = $num, )*
        }

        impl Kind {
            /// Every kind, in descriptor order.
            pub const ALL: &'static [Kind] = &[$(Kind::$kind),*];

            /// The kind with this `FieldDescriptorProto.Type` number.
            pub fn from_descriptor(number: i32) -> Option<Kind> {
                match number {
                    $( $num => Some(Kind::$kind), )*
                    _ => None,
                }
            }

            /// The wire type a single (unpacked) value of this kind is written with.
            pub const fn wire_type(self) -> WireType {
                match self {
                    $( Kind::$kind => WireType::$wire, )*
                }
            }

            /// The name `.proto` files use for this kind.
            pub fn proto_name(self) -> &'static str {
                match self {
                    $( Kind::$kind => $name, )*
                }
            }
        }
    };
}

kind_table! {
    /// `double`: IEEE 754 binary64.
    Double = 1, Fixed64, "double";
    /// `float`: IEEE 754 binary32.
    Float = 2, Fixed32, "float";
    /// `int64`: varint, two's complement.
    Int64 = 3, Varint, "int64";
    /// `uint64`: varint.
    Uint64 = 4, Varint, "uint64";
    /// `int32`: varint, negative values sign-extended to 10 bytes.
    Int32 = 5, Varint, "int32";
    /// `fixed64`: 8 bytes little-endian.
    Fixed64 = 6, Fixed64, "fixed64";
    /// `fixed32`: 4 bytes little-endian.
    Fixed32 = 7, Fixed32, "fixed32";
    /// `bool`: varint 0 or 1.
    Bool = 8, Varint, "bool";
    /// `string`: length-delimited UTF-8.
    String = 9, LengthDelimited, "string";
    /// `group` (proto2): a message between start- and end-group tags.
    Group = 10, StartGroup, "group";
    /// A length-delimited sub-message.
    Message = 11, LengthDelimited, "message";
    /// `bytes`: length-delimited opaque bytes.
    Bytes = 12, LengthDelimited, "bytes";
    /// `uint32`: varint.
    Uint32 = 13, Varint, "uint32";
    /// An enum: varint of the value number.
    Enum = 14, Varint, "enum";
    /// `sfixed32`: 4 bytes little-endian, signed.
    Sfixed32 = 15, Fixed32, "sfixed32";
    /// `sfixed64`: 8 bytes little-endian, signed.
    Sfixed64 = 16, Fixed64, "sfixed64";
    /// `sint32`: zigzag varint.
    Sint32 = 17, Varint, "sint32";
    /// `sint64`: zigzag varint.
    Sint64 = 18, Varint, "sint64";
}

impl Kind {
    /// Whether repeated values of this kind may be packed (every scalar but strings and bytes).
    pub fn is_packable(self) -> bool {
        !matches!(
            self,
            Kind::String | Kind::Bytes | Kind::Message | Kind::Group
        )
    }

    /// Whether values of this kind are messages (length-delimited or groups).
    pub fn is_message(self) -> bool {
        matches!(self, Kind::Message | Kind::Group)
    }

    /// Whether this kind is a 64-bit integer (JSON writes these as strings).
    pub fn is_64bit_integer(self) -> bool {
        matches!(
            self,
            Kind::Int64 | Kind::Uint64 | Kind::Fixed64 | Kind::Sfixed64 | Kind::Sint64
        )
    }

    /// Whether this kind may be a map key (integers, bool and string).
    pub fn is_valid_map_key(self) -> bool {
        !matches!(
            self,
            Kind::Double | Kind::Float | Kind::Bytes | Kind::Message | Kind::Group | Kind::Enum
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_numbers_round_trip() {
        for &k in Kind::ALL {
            assert_eq!(Kind::from_descriptor(k as i32), Some(k));
        }
        assert_eq!(Kind::from_descriptor(0), None);
        assert_eq!(Kind::from_descriptor(19), None);
        assert_eq!(Kind::ALL.len(), 18);
    }

    #[test]
    fn wire_types() {
        assert_eq!(Kind::Sint64.wire_type(), WireType::Varint);
        assert_eq!(Kind::Float.wire_type(), WireType::Fixed32);
        assert_eq!(Kind::Group.wire_type(), WireType::StartGroup);
        assert!(WireType::from_bits(6).is_none());
        assert!(WireType::from_bits(7).is_none());
    }
}
