//! The compiled schema: message types, fields, enums, services and record layouts.

use std::collections::HashMap;

use crate::kind::{Kind, WireType};
use crate::table::Table;

/// Index of a message type in its [`SchemaSet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId(pub u32);

/// Index of an enum type in its [`SchemaSet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EnumId(pub u32);

/// The `.proto` syntax a type was declared in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// `syntax = "proto2";` (or none).
    Proto2,
    /// `syntax = "proto3";`.
    Proto3,
    /// `edition = "2023";`: behaviour set by the resolved [`Features`](crate::Features).
    Editions,
}

/// How many values a field holds and how its presence is tracked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cardinality {
    /// One value without presence (proto3 implicit presence): the default value is not written.
    Singular,
    /// One value with explicit presence (proto2 optional/required, proto3 `optional`,
    /// oneof members and every message field).
    Optional,
    /// Zero or more values.
    Repeated,
    /// A map: repeated entries of the map-entry type with key = 1 and value = 2.
    Map,
}

/// A field's default value, as declared (proto2 `[default = ...]`) or implied by its kind.
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultValue {
    /// `bool`.
    Bool(bool),
    /// Signed integers (int32, int64, sint*, sfixed*).
    I64(i64),
    /// Unsigned integers (uint32, uint64, fixed*).
    U64(u64),
    /// `float` and `double`.
    F64(f64),
    /// An enum value number.
    Enum(i32),
    /// `string`.
    String(String),
    /// `bytes`.
    Bytes(Vec<u8>),
}

/// Well-known types whose JSON form is special.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WellKnown {
    /// `google.protobuf.Any`.
    Any,
    /// `google.protobuf.Timestamp`.
    Timestamp,
    /// `google.protobuf.Duration`.
    Duration,
    /// `google.protobuf.FieldMask`.
    FieldMask,
    /// `google.protobuf.Struct`.
    Struct,
    /// `google.protobuf.Value`.
    Value,
    /// `google.protobuf.ListValue`.
    ListValue,
    /// `google.protobuf.Empty`.
    Empty,
    /// One of the wrapper messages (`Int32Value`, `StringValue`, ...): JSON is the bare value.
    Wrapper,
}

impl WellKnown {
    /// The well-known type with this fully qualified name, if any.
    pub fn from_full_name(name: &str) -> Option<WellKnown> {
        Some(match name {
            "google.protobuf.Any" => WellKnown::Any,
            "google.protobuf.Timestamp" => WellKnown::Timestamp,
            "google.protobuf.Duration" => WellKnown::Duration,
            "google.protobuf.FieldMask" => WellKnown::FieldMask,
            "google.protobuf.Struct" => WellKnown::Struct,
            "google.protobuf.Value" => WellKnown::Value,
            "google.protobuf.ListValue" => WellKnown::ListValue,
            "google.protobuf.Empty" => WellKnown::Empty,
            "google.protobuf.DoubleValue"
            | "google.protobuf.FloatValue"
            | "google.protobuf.Int64Value"
            | "google.protobuf.UInt64Value"
            | "google.protobuf.Int32Value"
            | "google.protobuf.UInt32Value"
            | "google.protobuf.BoolValue"
            | "google.protobuf.StringValue"
            | "google.protobuf.BytesValue" => WellKnown::Wrapper,
            _ => return None,
        })
    }
}

/// One field of a message type (or an extension merged into its extendee).
#[derive(Debug, Clone)]
pub struct Field {
    /// Field number.
    pub number: u32,
    /// Name as declared; for extensions, the fully qualified extension name.
    pub name: String,
    /// JSON name (lowerCamelCase, or `json_name`); for extensions `[full.name]`.
    pub json_name: String,
    /// The JSON member key written before the field's value: `json_name` as a JSON string
    /// (escaped as the JSON writer escapes strings) and a colon, e.g. `"userId":`.
    pub json_key: String,
    /// Value kind.
    pub kind: Kind,
    /// Singular, optional, repeated or map.
    pub cardinality: Cardinality,
    /// Repeated values are written packed.
    pub is_packed: bool,
    /// proto2 `required`.
    pub is_required: bool,
    /// Index into the message's `oneofs` (real oneofs only, not proto3 `optional`).
    pub oneof: Option<u32>,
    /// The message type of a message, group or map field (for maps: the entry type).
    pub message: Option<MessageId>,
    /// The enum type of an enum field.
    pub enum_type: Option<EnumId>,
    /// The declared default (proto2), if any.
    pub default: Option<DefaultValue>,
    /// This field is an extension declared elsewhere.
    pub is_extension: bool,
    /// Where the field's value lives in the message record.
    pub slot: Slot,
    /// The tag (number << 3 | wire type) of an unpacked value, precomputed.
    pub tag: u32,
    /// The field's resolved features (editions' `features`, or what proto2 and proto3 imply):
    /// `cardinality`, `is_required`, `is_packed`, `kind` (a delimited message is a group) and
    /// the enum's closedness already follow them.
    pub features: crate::Features,
    /// A group (or delimited field) named for its type and declared beside it (C++'s
    /// `IsGroupLike`): text format names such a field by its type's name (`Data { ... }`);
    /// any other delimited field, and every extension, by the field's own name.
    pub is_group_like: bool,
}

/// `name` as a JSON member key: quoted, escaped, with its colon (`"userId":`). Quotes,
/// backslashes and the control characters are escaped (`\n`, `\u0001`, ...); everything else,
/// non-ASCII included, is written as it is, as the JSON writer writes strings.
pub fn json_member_key(name: &str) -> String {
    use std::fmt::Write as _;
    let mut key = String::with_capacity(name.len() + 3);
    key.push('"');
    for c in name.chars() {
        match c {
            '"' => key.push_str("\\\""),
            '\\' => key.push_str("\\\\"),
            '\n' => key.push_str("\\n"),
            '\r' => key.push_str("\\r"),
            '\t' => key.push_str("\\t"),
            '\u{8}' => key.push_str("\\b"),
            '\u{c}' => key.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(key, "\\u{:04x}", c as u32);
            }
            c => key.push(c),
        }
    }
    key.push_str("\":");
    key
}

impl Field {
    /// Whether the field tracks presence (a set default value is still written).
    pub fn has_presence(&self) -> bool {
        self.cardinality == Cardinality::Optional
    }

    /// Whether the field holds a list (repeated or map).
    pub fn is_list(&self) -> bool {
        matches!(self.cardinality, Cardinality::Repeated | Cardinality::Map)
    }

    /// Whether this is a map field.
    pub fn is_map(&self) -> bool {
        self.cardinality == Cardinality::Map
    }

    /// The wire type of one unpacked value.
    pub fn wire_type(&self) -> WireType {
        self.kind.wire_type()
    }
}

/// Where a field's value lives in a message record: OP's `{type, address}` is the field
/// descriptor plus the record base plus this slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Index of the value slot in the record.
    pub index: u32,
    /// Bit in the record's presence bitmap (the instance schema) set while the field is set.
    pub presence_bit: u32,
}

/// The record layout of a message type: how many slots and presence words a record has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Number of value slots.
    pub slot_count: u32,
    /// Number of 64-bit words in the presence bitmap.
    pub presence_words: u32,
}

/// A oneof group.
#[derive(Debug, Clone)]
pub struct Oneof {
    /// Name as declared.
    pub name: String,
    /// Indices into the message's `fields` of the members.
    pub fields: Vec<u32>,
}

/// A compiled message type.
#[derive(Debug, Clone)]
pub struct MessageType {
    /// Fully qualified name without a leading dot (`pkg.Outer.Inner`).
    pub full_name: String,
    /// Syntax of the declaring file.
    pub syntax: Syntax,
    /// Fields (extensions included), sorted by number.
    pub fields: Vec<Field>,
    /// Oneof groups.
    pub oneofs: Vec<Oneof>,
    /// This is a synthesized map entry type.
    pub is_map_entry: bool,
    /// `option message_set_wire_format = true`.
    pub is_message_set: bool,
    /// Declared extension ranges, `[start, end)`.
    pub extension_ranges: Vec<(u32, u32)>,
    /// Well-known type, if this is one.
    pub well_known: Option<WellKnown>,
    /// Record layout.
    pub layout: Layout,
    /// Indices of required fields.
    pub required_fields: Vec<u32>,
    /// Whether this type or any type reachable through its message fields has a required
    /// field (when not, checking a message for missing required fields is a no-op).
    pub may_lack_required: bool,
    /// The op table the engine's walkers dispatch on, and the record layout it addresses.
    pub table: Table,
    /// The Thrift side (ids, Thrift types, write order) when loaded from `.thrift` files.
    pub thrift: Option<Box<crate::thrift::ThriftStruct>>,
    pub(crate) dense: Vec<u32>,
    pub(crate) by_name: HashMap<String, u32>,
    /// No name (declared or JSON) belongs to two fields, so a field whose own name matches is
    /// the one `by_name` holds.
    pub(crate) names_unique: bool,
}

/// `dense` entries that hold no field.
pub(crate) const NO_FIELD: u32 = u32::MAX;

impl MessageType {
    /// The index in `fields` of the field with this number: O(1) for small numbers, else a
    /// binary search.
    #[inline]
    pub fn field_index_by_number(&self, number: u32) -> Option<usize> {
        if let Some(&i) = self.dense.get(number as usize) {
            return (i != NO_FIELD).then_some(i as usize);
        }
        self.fields.binary_search_by_key(&number, |f| f.number).ok()
    }

    /// The field with this number.
    #[inline]
    pub fn field_by_number(&self, number: u32) -> Option<&Field> {
        self.field_index_by_number(number).map(|i| &self.fields[i])
    }

    /// The index of the field with this declared name, JSON name or (for extensions)
    /// `[full.name]`.
    pub fn field_index_by_name(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).map(|&i| i as usize)
    }

    /// Field `index`, if a reader may take it for the next member by its JSON key alone
    /// (every field's names differ from every other field's).
    pub fn hinted_field(&self, index: usize) -> Option<&Field> {
        if self.names_unique {
            self.fields.get(index)
        } else {
            None
        }
    }

    /// [`Self::field_index_by_name`], trying the field at `hint` first: a reader that passes
    /// the index after the last field it met finds fields written in number order (as every
    /// proto3 JSON writer emits them) without hashing their names.
    #[inline]
    pub fn field_index_by_name_from(&self, name: &str, hint: usize) -> Option<usize> {
        if let Some(f) = self.hinted_field(hint) {
            if f.json_name == name || f.name == name {
                return Some(hint);
            }
        }
        self.field_index_by_name(name)
    }

    /// The field with this declared name or JSON name.
    pub fn field_by_name(&self, name: &str) -> Option<&Field> {
        self.field_index_by_name(name).map(|i| &self.fields[i])
    }

    /// The short name (after the last dot).
    pub fn name(&self) -> &str {
        self.full_name.rsplit('.').next().unwrap_or(&self.full_name)
    }

    /// Whether `number` lies in a declared extension range.
    pub fn is_extension_number(&self, number: u32) -> bool {
        self.extension_ranges
            .iter()
            .any(|&(lo, hi)| number >= lo && number < hi)
    }
}

/// One value of an enum type.
#[derive(Debug, Clone)]
pub struct EnumValue {
    /// Name as declared.
    pub name: String,
    /// Number.
    pub number: i32,
}

/// A compiled enum type.
#[derive(Debug, Clone)]
pub struct EnumType {
    /// Fully qualified name without a leading dot.
    pub full_name: String,
    /// Values in declaration order (aliases included); the first is the default.
    pub values: Vec<EnumValue>,
    /// Closed (proto2): unknown numbers are kept as unknown fields, not as values.
    pub is_closed: bool,
}

impl EnumType {
    /// The first declared value with this number.
    pub fn value_by_number(&self, number: i32) -> Option<&EnumValue> {
        self.values.iter().find(|v| v.number == number)
    }

    /// The value with this name.
    pub fn value_by_name(&self, name: &str) -> Option<&EnumValue> {
        self.values.iter().find(|v| v.name == name)
    }

    /// The default value's number (the first declared value).
    pub fn default_number(&self) -> i32 {
        self.values.first().map_or(0, |v| v.number)
    }

    /// Whether `number` is a declared value.
    pub fn contains(&self, number: i32) -> bool {
        self.values.iter().any(|v| v.number == number)
    }
}

/// One RPC method of a service.
#[derive(Debug, Clone)]
pub struct Method {
    /// Name as declared.
    pub name: String,
    /// Request message type.
    pub input: MessageId,
    /// Response message type.
    pub output: MessageId,
    /// The client sends a stream.
    pub client_streaming: bool,
    /// The server sends a stream.
    pub server_streaming: bool,
}

/// A `service` block.
#[derive(Debug, Clone)]
pub struct Service {
    /// Fully qualified name without a leading dot.
    pub full_name: String,
    /// Methods in declaration order; a method's index is its method id.
    pub methods: Vec<Method>,
}

/// Every type of a set of `.proto` files, compiled for the engine.
#[derive(Debug, Default)]
pub struct SchemaSet {
    pub(crate) messages: Vec<MessageType>,
    pub(crate) enums: Vec<EnumType>,
    pub(crate) services: Vec<Service>,
    pub(crate) message_names: HashMap<String, MessageId>,
    pub(crate) enum_names: HashMap<String, EnumId>,
    pub(crate) thrift: Option<Box<crate::thrift::ThriftInfo>>,
}

impl Clone for SchemaSet {
    /// A copy whose tables name their sub-messages' types in the copy.
    fn clone(&self) -> Self {
        let mut copy = SchemaSet {
            messages: self.messages.clone(),
            enums: self.enums.clone(),
            services: self.services.clone(),
            message_names: self.message_names.clone(),
            enum_names: self.enum_names.clone(),
            thrift: self.thrift.clone(),
        };
        copy.resolve_sub_types();
        copy
    }
}

impl SchemaSet {
    /// Points every table's sub-message addresses ([`Table::sub_type_address`]) at this
    /// set's types. Called once the type list is final, by each way a set is built (and a
    /// clone): no type is added, removed or moved after.
    pub(crate) fn resolve_sub_types(&mut self) {
        let addrs: Vec<usize> = self
            .messages
            .iter()
            .map(|m| m as *const MessageType as usize)
            .collect();
        for m in &mut self.messages {
            m.table.sub_types = crate::table::SubTypes(
                m.table
                    .aux
                    .iter()
                    .map(|a| match *a {
                        crate::table::Aux::Message(id) => addrs[id as usize],
                        crate::table::Aux::Enum(_) => 0,
                    })
                    .collect(),
            );
        }
    }

    /// The message type with this id.
    ///
    /// # Panics
    /// If the id does not come from this set.
    #[inline]
    pub fn message(&self, id: MessageId) -> &MessageType {
        &self.messages[id.0 as usize]
    }

    /// The enum type with this id.
    ///
    /// # Panics
    /// If the id does not come from this set.
    #[inline]
    pub fn enum_type(&self, id: EnumId) -> &EnumType {
        &self.enums[id.0 as usize]
    }

    /// The message type with this fully qualified name (a leading dot is accepted).
    pub fn message_by_name(&self, name: &str) -> Option<MessageId> {
        self.message_names
            .get(name.strip_prefix('.').unwrap_or(name))
            .copied()
    }

    /// The enum type with this fully qualified name (a leading dot is accepted).
    pub fn enum_by_name(&self, name: &str) -> Option<EnumId> {
        self.enum_names
            .get(name.strip_prefix('.').unwrap_or(name))
            .copied()
    }

    /// All message types, with their ids.
    pub fn messages(&self) -> impl Iterator<Item = (MessageId, &MessageType)> {
        self.messages
            .iter()
            .enumerate()
            .map(|(i, m)| (MessageId(i as u32), m))
    }

    /// All enum types, with their ids.
    pub fn enums(&self) -> impl Iterator<Item = (EnumId, &EnumType)> {
        self.enums
            .iter()
            .enumerate()
            .map(|(i, e)| (EnumId(i as u32), e))
    }

    /// All services.
    pub fn services(&self) -> &[Service] {
        &self.services
    }

    /// The service with this fully qualified name.
    pub fn service_by_name(&self, name: &str) -> Option<&Service> {
        let name = name.strip_prefix('.').unwrap_or(name);
        self.services.iter().find(|s| s.full_name == name)
    }

    /// For a map field: the key and value fields of its entry type.
    ///
    /// # Panics
    /// If `field` is not a map field of this set.
    pub fn map_entry_fields(&self, field: &Field) -> (&Field, &Field) {
        let entry = self.message(field.message.expect("map field has an entry type"));
        (&entry.fields[0], &entry.fields[1])
    }
}
