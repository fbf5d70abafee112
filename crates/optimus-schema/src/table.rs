//! Op tables: each message type compiled into 16-byte entries that the engine's walkers
//! dispatch on, and the natural-width record layout those entries address.
//!
//! An [`Entry`] holds what the hot path needs per field — number, precomputed tag bytes,
//! record offset, an [`Op`] byte and an aux index (sub-message or enum type) — and nothing
//! else: names, JSON names, defaults and options stay in the descriptive [`Field`].
//! `op_table!` lists every [`Scalar`] once with its descriptor kind, wire type, record width,
//! JSON form and the empty-value rule, and generates the enum and every mapping over it, so a
//! scalar cannot be added to one dispatch and forgotten in another.
//!
//! A field's presence bit is its entry's index: every field has one (the record's *instance
//! schema*), set while the field holds a value; [`EntryFlags::HAS_PRESENCE`] says whether a
//! zero value still counts as set (explicit presence) or clears the bit (proto3 implicit).

use crate::kind::{Kind, WireType};
use crate::types::{Cardinality, Field, MessageType};

/// How a value is written in proto3 JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonForm {
    /// A bare JSON number (32-bit integers).
    Number,
    /// A 64-bit integer, written as a quoted decimal string.
    QuotedInteger,
    /// A float or double; `NaN` and `Infinity` are strings.
    Float,
    /// `true` / `false`.
    Bool,
    /// A JSON string.
    String,
    /// Standard base64 in a JSON string.
    Base64,
    /// The value's name (a number when unknown).
    EnumName,
    /// A JSON object (or a well-known type's special form).
    Object,
}

macro_rules! op_table {
    ($( $(#[$doc:meta])* $scalar:ident = $code:literal: $kind:ident, width $width:literal, $json:ident; )*) => {
        /// What one value of a field is: the per-value half of an [`Op`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Scalar {
            $( $(#[$doc])* $scalar = $code, )*
        }

        impl Scalar {
            /// Every scalar, in code order.
            pub const ALL: &'static [Scalar] = &[$(Scalar::$scalar),*];

            /// The scalar with this code (the low five bits of an [`Op`]).
            #[inline]
            pub const fn from_code(code: u8) -> Option<Scalar> {
                match code {
                    $( $code => Some(Scalar::$scalar), )*
                    _ => None,
                }
            }

            /// The descriptor kind (what trace events and the descriptive schema call it).
            #[inline]
            pub const fn kind(self) -> Kind {
                match self {
                    $( Scalar::$scalar => Kind::$kind, )*
                }
            }

            /// Bytes one value takes in a record or a sequence: natural width for numbers,
            /// 16 for a string or bytes view, 8 for a sub-message pointer.
            #[inline]
            pub const fn width(self) -> u32 {
                match self {
                    $( Scalar::$scalar => $width, )*
                }
            }

            /// How the value is written in proto3 JSON.
            #[inline]
            pub const fn json_form(self) -> JsonForm {
                match self {
                    $( Scalar::$scalar => JsonForm::$json, )*
                }
            }
        }
    };
}

op_table! {
    /// `double`: 8 bytes little-endian.
    Double = 1: Double, width 8, Float;
    /// `float`: 4 bytes little-endian.
    Float = 2: Float, width 4, Float;
    /// `int64`: varint, two's complement.
    Int64 = 3: Int64, width 8, QuotedInteger;
    /// `uint64`: varint.
    Uint64 = 4: Uint64, width 8, QuotedInteger;
    /// `int32`: varint, negative values sign-extended to ten bytes.
    Int32 = 5: Int32, width 4, Number;
    /// `fixed64`: 8 bytes little-endian.
    Fixed64 = 6: Fixed64, width 8, QuotedInteger;
    /// `fixed32`: 4 bytes little-endian.
    Fixed32 = 7: Fixed32, width 4, Number;
    /// `bool`: varint 0 or 1, one byte in a record.
    Bool = 8: Bool, width 1, Bool;
    /// `string`: length-delimited, checked to be UTF-8 once, on decode.
    String = 9: String, width 16, String;
    /// `group` (proto2): fields between start- and end-group tags.
    Group = 10: Group, width 8, Object;
    /// A length-delimited sub-message.
    Message = 11: Message, width 8, Object;
    /// `bytes`: length-delimited, opaque.
    Bytes = 12: Bytes, width 16, Base64;
    /// `uint32`: varint.
    Uint32 = 13: Uint32, width 4, Number;
    /// An open enum (proto3): any number is a value.
    OpenEnum = 14: Enum, width 4, EnumName;
    /// `sfixed32`: 4 bytes little-endian, signed.
    Sfixed32 = 15: Sfixed32, width 4, Number;
    /// `sfixed64`: 8 bytes little-endian, signed.
    Sfixed64 = 16: Sfixed64, width 8, QuotedInteger;
    /// `sint32`: zigzag varint.
    Sint32 = 17: Sint32, width 4, Number;
    /// `sint64`: zigzag varint.
    Sint64 = 18: Sint64, width 8, QuotedInteger;
    /// A closed enum (proto2): numbers the enum does not declare are kept as unknown fields.
    ClosedEnum = 19: Enum, width 4, EnumName;
}

impl Scalar {
    /// The scalar a field of `kind` holds (`closed` for a proto2 enum).
    pub const fn of(kind: Kind, closed: bool) -> Scalar {
        match kind {
            Kind::Double => Scalar::Double,
            Kind::Float => Scalar::Float,
            Kind::Int64 => Scalar::Int64,
            Kind::Uint64 => Scalar::Uint64,
            Kind::Int32 => Scalar::Int32,
            Kind::Fixed64 => Scalar::Fixed64,
            Kind::Fixed32 => Scalar::Fixed32,
            Kind::Bool => Scalar::Bool,
            Kind::String => Scalar::String,
            Kind::Group => Scalar::Group,
            Kind::Message => Scalar::Message,
            Kind::Bytes => Scalar::Bytes,
            Kind::Uint32 => Scalar::Uint32,
            Kind::Enum if closed => Scalar::ClosedEnum,
            Kind::Enum => Scalar::OpenEnum,
            Kind::Sfixed32 => Scalar::Sfixed32,
            Kind::Sfixed64 => Scalar::Sfixed64,
            Kind::Sint32 => Scalar::Sint32,
            Kind::Sint64 => Scalar::Sint64,
        }
    }

    /// The wire type one unpacked value is written with.
    #[inline]
    pub const fn wire_type(self) -> WireType {
        self.kind().wire_type()
    }

    /// Whether values are messages (length-delimited or groups): held by pointer.
    #[inline]
    pub const fn is_message(self) -> bool {
        matches!(self, Scalar::Message | Scalar::Group)
    }

    /// Whether values are strings or bytes: held as views.
    #[inline]
    pub const fn is_bytes_like(self) -> bool {
        matches!(self, Scalar::String | Scalar::Bytes)
    }
}

/// How many values a field holds and how they are written: the per-field half of an [`Op`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Shape {
    /// One value at the entry's offset.
    Single = 0,
    /// A sequence, each value with its own tag.
    Repeated = 1,
    /// A sequence written as one length-delimited run (packable scalars only).
    Packed = 2,
    /// A map: a sequence of entry records (the entry type is the aux), written sorted by key.
    Map = 3,
}

impl Shape {
    /// Whether the field holds a sequence (repeated, packed or map).
    #[inline]
    pub const fn is_sequence(self) -> bool {
        !matches!(self, Shape::Single)
    }
}

/// The op byte: a [`Scalar`] in the low five bits and a [`Shape`] in the next two, so a
/// walker's dispatch is one `match` on a byte.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Op(u8);

impl Op {
    /// The op of a `shape` field of `scalar` values.
    #[inline]
    pub const fn new(scalar: Scalar, shape: Shape) -> Op {
        Op(scalar as u8 | (shape as u8) << 5)
    }

    /// The per-value half.
    #[inline]
    pub const fn scalar(self) -> Scalar {
        // One load from a table of every five-bit code (codes no scalar has are never made by
        // `Op::new`), rather than a match with a failure arm.
        SCALAR_OF_CODE[(self.0 & 0x1f) as usize]
    }

    /// The per-field half.
    #[inline]
    pub const fn shape(self) -> Shape {
        // The two bits above the scalar's five, looked up (no compare chain).
        const SHAPES: [Shape; 8] = [
            Shape::Single,
            Shape::Repeated,
            Shape::Packed,
            Shape::Map,
            Shape::Map,
            Shape::Map,
            Shape::Map,
            Shape::Map,
        ];
        SHAPES[(self.0 >> 5) as usize]
    }

    /// The raw byte (for traces and tables of counters). A single field's is its scalar's
    /// code, every other shape's is 32 or more: a walker dispatching on it reaches a single
    /// field's arm in one jump.
    #[inline]
    pub const fn code(self) -> u8 {
        self.0
    }

    /// Bytes the field takes at its record offset: the scalar's width for a single value,
    /// 16 for a sequence (pointer, length, capacity).
    #[inline]
    pub const fn slot_width(self) -> u32 {
        match self.shape() {
            Shape::Single => self.scalar().width(),
            _ => SEQUENCE_BYTES,
        }
    }

    /// The wire type of the field's tag: length-delimited for packed runs and map entries.
    #[inline]
    pub const fn tag_wire_type(self) -> WireType {
        match self.shape() {
            Shape::Packed | Shape::Map => WireType::LengthDelimited,
            _ => self.scalar().wire_type(),
        }
    }
}

impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}/{:?}", self.shape(), self.scalar())
    }
}

/// The scalar of each five-bit op code; codes that name none hold `Bool` and are never made.
const SCALAR_OF_CODE: [Scalar; 32] = {
    let mut table = [Scalar::Bool; 32];
    let mut code = 0;
    while code < 32 {
        if let Some(s) = Scalar::from_code(code as u8) {
            table[code] = s;
        }
        code += 1;
    }
    table
};

/// Bytes of a sequence header in a record: data pointer, `u32` length, `u32` capacity.
pub const SEQUENCE_BYTES: u32 = 16;
/// Bytes of a string or bytes view: data pointer and `usize` length.
pub const VIEW_BYTES: u32 = 16;

/// Per-field flags of an [`Entry`] beside its tag length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryFlags;

impl EntryFlags {
    /// Bits 0..3: the tag's length in bytes (1..=5).
    pub const TAG_LEN_MASK: u8 = 0b111;
    /// Explicit presence: a zero value is still set and written.
    pub const HAS_PRESENCE: u8 = 1 << 3;
    /// A member of a real oneof: setting it unsets its siblings.
    pub const IN_ONEOF: u8 = 1 << 4;
    /// RPCAcc's placement bit: the field's data lives in accelerator (NIC) memory.
    pub const ACCEL_PLACED: u8 = 1 << 5;
    /// A single scalar outside any oneof, not a closed enum: decoded by the fast path (one
    /// typed store, no sibling or enum check).
    pub const PLAIN_SCALAR: u8 = 1 << 6;
    /// A single message outside any oneof: decoded straight into its sub-record.
    pub const PLAIN_MESSAGE: u8 = 1 << 7;
}

/// One field of a type's op table: all the hot path reads per field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Entry {
    /// Field number.
    pub number: u32,
    /// The tag's wire bytes, little-endian, `tag_len` of them; a five-byte tag (numbers from
    /// 2^25) keeps its first four here and is written from `number`.
    pub tag: u32,
    /// Byte offset of the field's slot in the record.
    pub offset: u32,
    /// Index into the table's `aux` (sub-message or enum type); 0 when the op needs none.
    pub aux: u16,
    /// What the field is and how it is written.
    pub op: Op,
    /// Tag length and [`EntryFlags`].
    pub flags: u8,
}

const _: () = assert!(std::mem::size_of::<Entry>() == 16);
const _: () = assert!(std::mem::align_of::<Entry>() <= 4);

impl Entry {
    /// The tag's length in bytes.
    #[inline]
    pub const fn tag_len(&self) -> usize {
        (self.flags & EntryFlags::TAG_LEN_MASK) as usize
    }

    /// Whether a zero value is still set (explicit presence).
    #[inline]
    pub const fn has_presence(&self) -> bool {
        self.flags & EntryFlags::HAS_PRESENCE != 0
    }

    /// Whether the field is a member of a real oneof.
    #[inline]
    pub const fn in_oneof(&self) -> bool {
        self.flags & EntryFlags::IN_ONEOF != 0
    }

    /// Whether the field is a single scalar outside any oneof and not a closed enum.
    #[inline]
    pub const fn is_plain_scalar(&self) -> bool {
        self.flags & EntryFlags::PLAIN_SCALAR != 0
    }

    /// Whether the field is a single message (not a group) outside any oneof.
    #[inline]
    pub const fn is_plain_message(&self) -> bool {
        self.flags & EntryFlags::PLAIN_MESSAGE != 0
    }

    /// Whether the field's data lives in accelerator memory (RPCAcc's placement bit).
    #[inline]
    pub const fn is_accel_placed(&self) -> bool {
        self.flags & EntryFlags::ACCEL_PLACED != 0
    }

    /// The tag value (`number << 3 | wire type`).
    #[inline]
    pub const fn tag_value(&self) -> u32 {
        self.number << 3 | self.op.tag_wire_type() as u32
    }
}

/// What an aux index names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aux {
    /// A message type (sub-message, group or map entry), by its id's number.
    Message(u32),
    /// An enum type, by its id's number.
    Enum(u32),
}

/// A type's op table and record layout.
///
/// A record is `size` bytes, 8-aligned: presence words at offset 0 (bit *i* for entry *i*),
/// then the unknown-field sequence at [`Table::unknown_offset`], then every field's slot,
/// widest first so each is naturally aligned.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// One entry per field, sorted by number; entry *i* is the type's field *i*.
    pub entries: Vec<Entry>,
    /// The types that entries' `aux` indices name.
    pub aux: Vec<Aux>,
    /// Where those message types lie, for [`Table::sub_type_address`].
    pub(crate) sub_types: SubTypes,
    /// Record size in bytes (a multiple of 8).
    pub size: u32,
    /// Number of 64-bit presence words at the record's start.
    pub presence_words: u32,
    /// Offset of the sequence holding the bytes of unknown fields.
    pub unknown_offset: u32,
    /// For each oneof, the mask of its members' presence bits, per presence word.
    pub oneof_masks: Vec<Vec<(u32, u64)>>,
    /// Entry index → oneof index, for entries with [`EntryFlags::IN_ONEOF`].
    pub oneof_of: Vec<u16>,
    /// `dense[n]` is the entry index of field number `n` (`u32::MAX` where none), for
    /// numbers below its length; larger numbers are found by binary search.
    dense: Vec<u32>,
    /// Entry *i*'s tag in the form a backward writer stores it: see [`Table::tag_words`].
    tag_words: Vec<u64>,
}

/// The addresses of the message types a table's aux list names (0 for an enum), set by the
/// [`SchemaSet`](crate::SchemaSet) that holds the table once its type list is final: a walker
/// reaches a sub-message's type and table in one load, where the type's id went through the
/// aux list and the set's type list (an index, a multiply and two dependent loads, on the
/// path of every sub-message). A copy of a table starts with none: the addresses belong to
/// the set the table was built in.
#[derive(Default)]
pub(crate) struct SubTypes(pub(crate) Vec<usize>);

impl Clone for SubTypes {
    fn clone(&self) -> Self {
        SubTypes(Vec::new())
    }
}

impl std::fmt::Debug for SubTypes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SubTypes({} resolved)", self.0.len())
    }
}

/// An entry index that names no field.
const NO_ENTRY: u32 = u32::MAX;

impl Table {
    /// The index of the entry for field `number`: O(1) below the dense limit.
    #[inline]
    pub fn find(&self, number: u32) -> Option<usize> {
        if let Some(&i) = self.dense.get(number as usize) {
            return (i != NO_ENTRY).then_some(i as usize);
        }
        self.entries
            .binary_search_by_key(&number, |e| e.number)
            .ok()
    }

    /// Each entry's tag as one little-endian word for a writer that fills its buffer from the
    /// end: the tag's bytes in the word's top bytes, its length (1..=5) in the lowest. Stored
    /// as the eight bytes before the write position, it puts the tag right in front of what
    /// is written (the bytes below the tag are room, written over later), and the length
    /// says how far the position moves: one load, one store, no shift by the length.
    #[inline]
    pub fn tag_words(&self) -> &[u64] {
        &self.tag_words
    }

    /// The index of the entry for `number`, trying `guess` first (upb's fasttable idea: fields
    /// usually arrive in number order, so the entry after the last one read is the next).
    #[inline]
    pub fn find_from(&self, number: u32, guess: usize) -> Option<usize> {
        match self.entries.get(guess) {
            Some(e) if e.number == number => Some(guess),
            _ => self.find(number),
        }
    }

    /// The message type an entry's aux names.
    ///
    /// # Panics
    /// If the entry's op takes no message type (a table built wrong).
    #[inline]
    pub fn sub_message(&self, e: &Entry) -> u32 {
        match self.aux[e.aux as usize] {
            Aux::Message(id) => id,
            Aux::Enum(_) => panic!("entry {} names an enum, not a message", e.number),
        }
    }

    /// The address of the [`MessageType`](crate::MessageType) an entry's aux names, in the
    /// set that holds this table: valid, and never 0, as long as that set lives (its type
    /// list is final once the set is built, and every way of building one, a clone included,
    /// resolves the addresses after). The engine reads a sub-message's type through it.
    ///
    /// # Panics
    /// If the entry's op takes no message type, or this table is a copy held outside its set
    /// (a copy has no addresses).
    #[inline(always)]
    pub fn sub_type_address(&self, e: &Entry) -> usize {
        let addr = self.sub_types.0[e.aux as usize];
        assert!(addr != 0, "entry {} names an enum, not a message", e.number);
        addr
    }

    /// The enum type an entry's aux names.
    ///
    /// # Panics
    /// If the entry's op takes no enum type (a table built wrong).
    #[inline]
    pub fn enum_type(&self, e: &Entry) -> u32 {
        match self.aux[e.aux as usize] {
            Aux::Enum(id) => id,
            Aux::Message(_) => panic!("entry {} names a message, not an enum", e.number),
        }
    }
}

/// Field numbers below this bound are found through the dense index when the type is dense
/// enough (at most this many slots per field).
const DENSE_LIMIT: u32 = 1024;

/// The varint bytes of `value` and their count.
fn varint_bytes(mut value: u32) -> ([u8; 5], usize) {
    let mut out = [0u8; 5];
    let mut n = 0;
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out[n] = byte;
            return (out, n + 1);
        }
        out[n] = byte | 0x80;
        n += 1;
    }
}

/// Compiles a type's fields (sorted by number, numbering and kinds final) into its table.
/// `closed_enum(id)` says whether enum type `id` is closed.
pub(crate) fn build(ty: &MessageType, closed_enum: impl Fn(u32) -> bool) -> Table {
    let fields = &ty.fields;
    let mut aux = Vec::new();
    let mut entries = Vec::with_capacity(fields.len());
    for f in fields {
        let op = op_of(f, &closed_enum);
        let aux_index = match (f.message, f.enum_type) {
            (Some(m), _) => push_aux(&mut aux, Aux::Message(m.0)),
            (None, Some(e)) => push_aux(&mut aux, Aux::Enum(e.0)),
            (None, None) => 0,
        };
        let tag_value = f.number << 3 | op.tag_wire_type() as u32;
        let (bytes, tag_len) = varint_bytes(tag_value);
        let mut flags = tag_len as u8;
        if f.cardinality == Cardinality::Optional {
            flags |= EntryFlags::HAS_PRESENCE;
        }
        if f.oneof.is_some() {
            flags |= EntryFlags::IN_ONEOF;
        }
        if op.shape() == Shape::Single && f.oneof.is_none() {
            match op.scalar() {
                Scalar::Message => flags |= EntryFlags::PLAIN_MESSAGE,
                Scalar::Group | Scalar::ClosedEnum => {}
                _ => flags |= EntryFlags::PLAIN_SCALAR,
            }
        }
        entries.push(Entry {
            number: f.number,
            tag: u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            offset: 0,
            aux: aux_index,
            op,
            flags,
        });
    }

    // Layout: presence words, the unknown-field sequence, then slots widest first.
    let presence_words = fields.len().div_ceil(64) as u32;
    let unknown_offset = presence_words * 8;
    let mut offset = unknown_offset + SEQUENCE_BYTES;
    for width in [16, 8, 4, 1] {
        for e in entries.iter_mut().filter(|e| e.op.slot_width() == width) {
            e.offset = offset;
            offset += width;
        }
    }
    let size = offset.next_multiple_of(8);

    let mut oneof_masks = vec![Vec::new(); ty.oneofs.len()];
    let mut oneof_of = vec![u16::MAX; fields.len()];
    for (o, oneof) in ty.oneofs.iter().enumerate() {
        for &i in &oneof.fields {
            oneof_of[i as usize] = o as u16;
            let word = i / 64;
            let bit = 1u64 << (i % 64);
            let masks: &mut Vec<(u32, u64)> = &mut oneof_masks[o];
            match masks.iter_mut().find(|(w, _)| *w == word) {
                Some((_, m)) => *m |= bit,
                None => masks.push((word, bit)),
            }
        }
    }

    let max_number = entries.last().map_or(0, |e| e.number);
    let dense_len = if max_number < DENSE_LIMIT {
        max_number as usize + 1
    } else {
        entries
            .iter()
            .take_while(|e| e.number < DENSE_LIMIT)
            .last()
            .map_or(0, |e| e.number as usize + 1)
    };
    let tag_words = entries.iter().map(tag_word).collect();
    let mut dense = vec![NO_ENTRY; dense_len];
    for (i, e) in entries.iter().enumerate() {
        if (e.number as usize) < dense_len {
            dense[e.number as usize] = i as u32;
        }
    }

    Table {
        entries,
        aux,
        sub_types: SubTypes::default(),
        size,
        presence_words,
        unknown_offset,
        oneof_masks,
        oneof_of,
        dense,
        tag_words,
    }
}

/// An entry's [`Table::tag_words`] word.
fn tag_word(e: &Entry) -> u64 {
    let (bytes, len) = varint_bytes(e.tag_value());
    let mut word = [0u8; 8];
    word[8 - len..].copy_from_slice(&bytes[..len]);
    word[0] = len as u8;
    u64::from_le_bytes(word)
}

fn push_aux(aux: &mut Vec<Aux>, a: Aux) -> u16 {
    let index = aux.iter().position(|&x| x == a).unwrap_or_else(|| {
        aux.push(a);
        aux.len() - 1
    });
    u16::try_from(index).expect("a type names at most 65,536 distinct types")
}

fn op_of(f: &Field, closed_enum: &impl Fn(u32) -> bool) -> Op {
    let closed = f.enum_type.is_some_and(|e| closed_enum(e.0));
    let scalar = Scalar::of(f.kind, closed);
    let shape = match f.cardinality {
        Cardinality::Singular | Cardinality::Optional => Shape::Single,
        Cardinality::Repeated if f.is_packed => Shape::Packed,
        Cardinality::Repeated => Shape::Repeated,
        Cardinality::Map => Shape::Map,
    };
    Op::new(scalar, shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SchemaSet;

    /// Every message aux of every table names the address of that type in the set holding
    /// the table: after building, and in a clone (whose original is gone).
    #[test]
    fn sub_type_addresses_point_into_their_own_set() {
        let check = |set: &SchemaSet| {
            let mut seen = 0;
            for m in &set.messages {
                for e in &m.table.entries {
                    if let Some(Aux::Message(id)) = m.table.aux.get(e.aux as usize) {
                        if !e.op.scalar().is_message() {
                            continue;
                        }
                        let want = &set.messages[*id as usize] as *const _ as usize;
                        assert_eq!(m.table.sub_type_address(e), want, "{}", m.full_name);
                        seen += 1;
                    }
                }
            }
            assert!(seen > 3, "the schema has sub-messages: {seen}");
        };
        let source = "syntax = \"proto3\"; package t; message A { B b = 1; repeated B bs = 2; \
                      map<string, B> m = 3; } message B { A a = 1; int32 x = 2; }";
        let set = SchemaSet::from_source(source).unwrap();
        check(&set);
        let copy = set.clone();
        drop(set);
        check(&copy);
        // A table copied out of its set has no addresses.
        let table = copy.messages[0].table.clone();
        let e = table
            .entries
            .iter()
            .find(|e| e.op.scalar().is_message())
            .unwrap();
        assert!(std::panic::catch_unwind(|| table.sub_type_address(e)).is_err());
    }

    #[test]
    fn ops_round_trip_through_their_byte() {
        for &s in Scalar::ALL {
            for shape in [Shape::Single, Shape::Repeated, Shape::Packed, Shape::Map] {
                let op = Op::new(s, shape);
                assert_eq!((op.scalar(), op.shape()), (s, shape));
            }
            assert_eq!(Scalar::from_code(s as u8), Some(s));
        }
        assert_eq!(Scalar::from_code(0), None);
        assert_eq!(Scalar::from_code(20), None);
        for &k in Kind::ALL {
            assert_eq!(Scalar::of(k, false).kind(), k);
            assert_eq!(Scalar::of(k, true).kind(), k);
        }
    }

    #[test]
    fn entries_carry_tags_offsets_and_flags() {
        let s = SchemaSet::from_source(
            r#"syntax = "proto3";
               message M {
                 bool b = 1; int64 big = 2; string s = 3; M sub = 4;
                 repeated int32 packed = 5; repeated string names = 6;
                 map<string, int32> m = 7; oneof o { int32 x = 16; E e = 2048; }
                 optional float f = 268435455;
               }
               enum E { Z = 0; }"#,
        )
        .unwrap();
        let t = &s.message(s.message_by_name("M").unwrap()).table;
        let by = |n: u32| &t.entries[t.find(n).unwrap()];
        assert_eq!(by(1).op, Op::new(Scalar::Bool, Shape::Single));
        assert_eq!((by(1).tag, by(1).tag_len()), (0x08, 1));
        assert_eq!(by(5).op, Op::new(Scalar::Int32, Shape::Packed));
        assert_eq!(by(5).tag, 0x2a);
        assert_eq!(by(6).op, Op::new(Scalar::String, Shape::Repeated));
        assert_eq!(by(7).op.shape(), Shape::Map);
        assert_eq!((by(16).tag, by(16).tag_len()), (0x0180, 2));
        assert!(by(16).in_oneof() && by(16).has_presence());
        assert_eq!(by(2048).op.scalar(), Scalar::OpenEnum);
        assert_eq!(by(2048).tag_len(), 3);
        assert_eq!(by(268435455).tag_len(), 5);
        assert!(by(268435455).has_presence() && !by(1).has_presence());
        assert!(by(1).is_plain_scalar() && by(4).is_plain_message());
        assert!(!by(16).is_plain_scalar() && !by(5).is_plain_scalar() && !by(4).is_plain_scalar());
        let word = |n: u32| t.tag_words()[t.find(n).unwrap()].to_le_bytes();
        assert_eq!(word(1), [1, 0, 0, 0, 0, 0, 0, 0x08]);
        assert_eq!(word(16), [2, 0, 0, 0, 0, 0, 0x80, 0x01]);
        // 268435455 << 3 | 5 (fixed32) = 0x7fff_fffd: five bytes.
        assert_eq!(word(268435455), [5, 0, 0, 0xfd, 0xff, 0xff, 0xff, 0x07]);
        assert_eq!(t.find(8), None);
        assert_eq!(t.find_from(4, 3), Some(3));
        assert_eq!(t.find_from(4, 0), Some(3));
        // Every slot naturally aligned, inside the record, and none overlapping.
        let mut spans: Vec<(u32, u32)> = t
            .entries
            .iter()
            .map(|e| (e.offset, e.offset + e.op.slot_width()))
            .collect();
        spans.push((t.unknown_offset, t.unknown_offset + SEQUENCE_BYTES));
        spans.sort();
        assert!(spans[0].0 >= t.presence_words * 8);
        for w in spans.windows(2) {
            assert!(w[0].1 <= w[1].0, "{spans:?}");
        }
        assert!(spans.last().unwrap().1 <= t.size && t.size.is_multiple_of(8));
        for e in &t.entries {
            assert!(e.offset.is_multiple_of(e.op.slot_width().min(8)));
        }
        assert_eq!(t.oneof_masks.len(), 1);
        let sub = by(4);
        assert_eq!(t.sub_message(sub), s.message_by_name("M").unwrap().0);
    }

    #[test]
    fn proto2_enums_are_closed() {
        let s = SchemaSet::from_source(
            r#"syntax = "proto2"; message M { optional E e = 1; repeated E es = 2; }
               enum E { A = 1; }"#,
        )
        .unwrap();
        let t = &s.message(s.message_by_name("M").unwrap()).table;
        assert_eq!(t.entries[0].op.scalar(), Scalar::ClosedEnum);
        assert_eq!(t.entries[1].op.shape(), Shape::Repeated);
        assert!(t.entries[0].has_presence());
    }
}
