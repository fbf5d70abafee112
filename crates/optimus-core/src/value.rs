//! Field values: one scalar, string, bytes or sub-message; typed lists; sorted maps.

use std::collections::BTreeMap;

use optimus_schema::{DefaultValue, Field, Kind, SchemaSet};

use crate::message::Message;

/// The value of one singular field, a list element or a map value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `bool`.
    Bool(bool),
    /// `int32`, `sint32`, `sfixed32`.
    I32(i32),
    /// `int64`, `sint64`, `sfixed64`.
    I64(i64),
    /// `uint32`, `fixed32`.
    U32(u32),
    /// `uint64`, `fixed64`.
    U64(u64),
    /// `float`.
    F32(f32),
    /// `double`.
    F64(f64),
    /// An enum value number (known or not).
    Enum(i32),
    /// `string`.
    String(String),
    /// `bytes`.
    Bytes(Vec<u8>),
    /// A sub-message (message or group).
    Message(Box<Message>),
    /// The values of a repeated field.
    List(List),
    /// The entries of a map field, sorted by key.
    Map(Map),
}

/// The entries of a map field; a `BTreeMap` keeps them in the key order that deterministic
/// serialization writes.
pub type Map = BTreeMap<MapKey, Value>;

/// A map key: integers, bool or string.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MapKey {
    /// `bool` keys.
    Bool(bool),
    /// `int32`, `sint32`, `sfixed32` keys.
    I32(i32),
    /// `int64`, `sint64`, `sfixed64` keys.
    I64(i64),
    /// `uint32`, `fixed32` keys.
    U32(u32),
    /// `uint64`, `fixed64` keys.
    U64(u64),
    /// `string` keys.
    String(String),
}

/// The values of a repeated field, stored by kind so packed fields are contiguous.
#[derive(Debug, Clone, PartialEq)]
pub enum List {
    /// `bool`.
    Bool(Vec<bool>),
    /// `int32`, `sint32`, `sfixed32`.
    I32(Vec<i32>),
    /// `int64`, `sint64`, `sfixed64`.
    I64(Vec<i64>),
    /// `uint32`, `fixed32`.
    U32(Vec<u32>),
    /// `uint64`, `fixed64`.
    U64(Vec<u64>),
    /// `float`.
    F32(Vec<f32>),
    /// `double`.
    F64(Vec<f64>),
    /// Enum numbers.
    Enum(Vec<i32>),
    /// `string`.
    String(Vec<String>),
    /// `bytes`.
    Bytes(Vec<Vec<u8>>),
    /// Messages and groups.
    Message(Vec<Message>),
}

macro_rules! for_each_list {
    ($list:expr, $v:ident => $body:expr) => {
        match $list {
            List::Bool($v) => $body,
            List::I32($v) => $body,
            List::I64($v) => $body,
            List::U32($v) => $body,
            List::U64($v) => $body,
            List::F32($v) => $body,
            List::F64($v) => $body,
            List::Enum($v) => $body,
            List::String($v) => $body,
            List::Bytes($v) => $body,
            List::Message($v) => $body,
        }
    };
}

impl List {
    /// An empty list for values of `kind`.
    pub fn new(kind: Kind) -> List {
        match kind {
            Kind::Bool => List::Bool(Vec::new()),
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => List::I32(Vec::new()),
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => List::I64(Vec::new()),
            Kind::Uint32 | Kind::Fixed32 => List::U32(Vec::new()),
            Kind::Uint64 | Kind::Fixed64 => List::U64(Vec::new()),
            Kind::Float => List::F32(Vec::new()),
            Kind::Double => List::F64(Vec::new()),
            Kind::Enum => List::Enum(Vec::new()),
            Kind::String => List::String(Vec::new()),
            Kind::Bytes => List::Bytes(Vec::new()),
            Kind::Message | Kind::Group => List::Message(Vec::new()),
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        for_each_list!(self, v => v.len())
    }

    /// Whether the list holds no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every value, keeping the list's allocation.
    pub fn clear(&mut self) {
        for_each_list!(self, v => v.clear())
    }

    /// The value at `index`, copied out as a [`Value`].
    pub fn get(&self, index: usize) -> Option<Value> {
        Some(match self {
            List::Bool(v) => Value::Bool(*v.get(index)?),
            List::I32(v) => Value::I32(*v.get(index)?),
            List::I64(v) => Value::I64(*v.get(index)?),
            List::U32(v) => Value::U32(*v.get(index)?),
            List::U64(v) => Value::U64(*v.get(index)?),
            List::F32(v) => Value::F32(*v.get(index)?),
            List::F64(v) => Value::F64(*v.get(index)?),
            List::Enum(v) => Value::Enum(*v.get(index)?),
            List::String(v) => Value::String(v.get(index)?.clone()),
            List::Bytes(v) => Value::Bytes(v.get(index)?.clone()),
            List::Message(v) => Value::Message(Box::new(v.get(index)?.clone())),
        })
    }

    /// Appends `value`, which must be of the list's kind.
    ///
    /// # Errors
    /// Gives the value back when its type does not match the list.
    pub fn push(&mut self, value: Value) -> Result<(), Value> {
        match (self, value) {
            (List::Bool(l), Value::Bool(v)) => l.push(v),
            (List::I32(l), Value::I32(v)) => l.push(v),
            (List::I64(l), Value::I64(v)) => l.push(v),
            (List::U32(l), Value::U32(v)) => l.push(v),
            (List::U64(l), Value::U64(v)) => l.push(v),
            (List::F32(l), Value::F32(v)) => l.push(v),
            (List::F64(l), Value::F64(v)) => l.push(v),
            (List::Enum(l), Value::Enum(v)) => l.push(v),
            (List::String(l), Value::String(v)) => l.push(v),
            (List::Bytes(l), Value::Bytes(v)) => l.push(v),
            (List::Message(l), Value::Message(v)) => l.push(*v),
            (_, v) => return Err(v),
        }
        Ok(())
    }
}

impl Value {
    /// The value a field reads as when it is not set: its declared default, else the zero
    /// of its kind (an empty message for message fields, an empty list or map for those).
    pub fn default_for(schema: &SchemaSet, field: &Field) -> Value {
        if field.is_map() {
            return Value::Map(Map::new());
        }
        if field.is_list() {
            return Value::List(List::new(field.kind));
        }
        Value::default_scalar(schema, field)
    }

    /// The default of one value of `field` (ignoring cardinality).
    pub fn default_scalar(schema: &SchemaSet, field: &Field) -> Value {
        let d = field.default.as_ref();
        match field.kind {
            Kind::Bool => Value::Bool(matches!(d, Some(DefaultValue::Bool(true)))),
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(match d {
                Some(DefaultValue::I64(v)) => *v as i32,
                _ => 0,
            }),
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Value::I64(match d {
                Some(DefaultValue::I64(v)) => *v,
                _ => 0,
            }),
            Kind::Uint32 | Kind::Fixed32 => Value::U32(match d {
                Some(DefaultValue::U64(v)) => *v as u32,
                _ => 0,
            }),
            Kind::Uint64 | Kind::Fixed64 => Value::U64(match d {
                Some(DefaultValue::U64(v)) => *v,
                _ => 0,
            }),
            Kind::Float => Value::F32(match d {
                Some(DefaultValue::F64(v)) => *v as f32,
                _ => 0.0,
            }),
            Kind::Double => Value::F64(match d {
                Some(DefaultValue::F64(v)) => *v,
                _ => 0.0,
            }),
            Kind::Enum => Value::Enum(match d {
                Some(DefaultValue::Enum(v)) => *v,
                _ => field
                    .enum_type
                    .map_or(0, |e| schema.enum_type(e).default_number()),
            }),
            Kind::String => Value::String(match d {
                Some(DefaultValue::String(s)) => s.clone(),
                _ => String::new(),
            }),
            Kind::Bytes => Value::Bytes(match d {
                Some(DefaultValue::Bytes(b)) => b.clone(),
                _ => Vec::new(),
            }),
            Kind::Message | Kind::Group => Value::Message(Box::new(Message::new(
                schema,
                field.message.expect("message field has a type"),
            ))),
        }
    }

    /// Empties a sub-message, list or map in place, keeping its allocations; `false` (and
    /// nothing done) for any other value.
    pub(crate) fn empty_in_place(&mut self) -> bool {
        match self {
            Value::Message(m) => m.clear_all(),
            Value::List(l) => l.clear(),
            Value::Map(m) => m.clear(),
            _ => return false,
        }
        true
    }

    /// Whether dropping this value frees memory (a scalar's does not).
    #[inline(always)]
    pub(crate) fn owns_heap(&self) -> bool {
        matches!(
            self,
            Value::String(_) | Value::Bytes(_) | Value::Message(_) | Value::List(_) | Value::Map(_)
        )
    }

    /// Whether this is the zero value of its type (what proto3 implicit presence omits).
    #[inline]
    pub fn is_zero(&self) -> bool {
        match self {
            Value::Bool(v) => !*v,
            Value::I32(v) | Value::Enum(v) => *v == 0,
            Value::I64(v) => *v == 0,
            Value::U32(v) => *v == 0,
            Value::U64(v) => *v == 0,
            // -0.0 is written: only +0.0 is the default.
            Value::F32(v) => v.to_bits() == 0,
            Value::F64(v) => v.to_bits() == 0,
            Value::String(v) => v.is_empty(),
            Value::Bytes(v) => v.is_empty(),
            Value::Message(_) => false,
            Value::List(l) => l.is_empty(),
            Value::Map(m) => m.is_empty(),
        }
    }

    /// Whether this value has the Rust type that `field` stores (cardinality included).
    pub fn matches(&self, field: &Field) -> bool {
        match self {
            Value::List(l) => {
                field.cardinality == optimus_schema::Cardinality::Repeated
                    && std::mem::discriminant(l) == std::mem::discriminant(&List::new(field.kind))
            }
            Value::Map(_) => field.is_map(),
            v if !field.is_list() => v.matches_kind(field.kind),
            _ => false,
        }
    }

    /// Whether this scalar value has the Rust type that values of `kind` use.
    pub fn matches_kind(&self, kind: Kind) -> bool {
        matches!(
            (self, kind),
            (Value::Bool(_), Kind::Bool)
                | (Value::I32(_), Kind::Int32 | Kind::Sint32 | Kind::Sfixed32)
                | (Value::I64(_), Kind::Int64 | Kind::Sint64 | Kind::Sfixed64)
                | (Value::U32(_), Kind::Uint32 | Kind::Fixed32)
                | (Value::U64(_), Kind::Uint64 | Kind::Fixed64)
                | (Value::F32(_), Kind::Float)
                | (Value::F64(_), Kind::Double)
                | (Value::Enum(_), Kind::Enum)
                | (Value::String(_), Kind::String)
                | (Value::Bytes(_), Kind::Bytes)
                | (Value::Message(_), Kind::Message | Kind::Group)
        )
    }

    /// This value as a map key, if its type can be one.
    pub fn into_map_key(self) -> Option<MapKey> {
        Some(match self {
            Value::Bool(v) => MapKey::Bool(v),
            Value::I32(v) => MapKey::I32(v),
            Value::I64(v) => MapKey::I64(v),
            Value::U32(v) => MapKey::U32(v),
            Value::U64(v) => MapKey::U64(v),
            Value::String(v) => MapKey::String(v),
            _ => return None,
        })
    }
}

macro_rules! typed_accessors {
    ($( $(#[$doc:meta])* $name:ident -> $ty:ty, $variant:ident $(, from = $from:tt)?; )*) => {
        impl Value {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> Option<$ty> {
                    match self {
                        Value::$variant(v) => Some(*v),
                        _ => None,
                    }
                }
            )*
        }
        $( $( typed_accessors!(@from $from $ty, $variant); )? )*
    };
    (@from yes $ty:ty, $variant:ident) => {
        impl From<$ty> for Value {
            fn from(v: $ty) -> Value {
                Value::$variant(v)
            }
        }
    };
}

typed_accessors! {
    /// The value of a `bool` field.
    as_bool -> bool, Bool, from = yes;
    /// The value of an `int32`, `sint32` or `sfixed32` field.
    as_i32 -> i32, I32, from = yes;
    /// The value of an `int64`, `sint64` or `sfixed64` field.
    as_i64 -> i64, I64, from = yes;
    /// The value of a `uint32` or `fixed32` field.
    as_u32 -> u32, U32, from = yes;
    /// The value of a `uint64` or `fixed64` field.
    as_u64 -> u64, U64, from = yes;
    /// The value of a `float` field.
    as_f32 -> f32, F32, from = yes;
    /// The value of a `double` field.
    as_f64 -> f64, F64, from = yes;
    /// The number of an enum field (no `From`: its Rust type is `int32`'s).
    as_enum -> i32, Enum;
}

impl Value {
    /// The text of a `string` field.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The bytes of a `bytes` field.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The sub-message of a message field.
    pub fn as_message(&self) -> Option<&Message> {
        match self {
            Value::Message(m) => Some(m),
            _ => None,
        }
    }

    /// The values of a repeated field.
    pub fn as_list(&self) -> Option<&List> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    /// The entries of a map field.
    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::String(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::String(v)
    }
}
impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Value {
        Value::Bytes(v)
    }
}
impl From<Message> for Value {
    fn from(v: Message) -> Value {
        Value::Message(Box::new(v))
    }
}

/// A borrowed scalar with the address it was read from: what a converter op consumes. Lists
/// and map keys hand these out without copying strings.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scalar<'a> {
    /// `bool`.
    Bool(bool),
    /// Signed 32-bit kinds and enums.
    I32(i32),
    /// Signed 64-bit kinds.
    I64(i64),
    /// Unsigned 32-bit kinds.
    U32(u32),
    /// Unsigned 64-bit kinds.
    U64(u64),
    /// `float`.
    F32(f32),
    /// `double`.
    F64(f64),
    /// String or bytes payload.
    Bytes(&'a [u8]),
}

impl Scalar<'_> {
    /// Bytes of message memory the value spans.
    pub(crate) fn width(&self) -> u32 {
        match self {
            Scalar::Bool(_) => 1,
            Scalar::I32(_) | Scalar::U32(_) | Scalar::F32(_) => 4,
            Scalar::I64(_) | Scalar::U64(_) | Scalar::F64(_) => 8,
            Scalar::Bytes(b) => b.len() as u32,
        }
    }
}

fn addr<X>(x: &X) -> u64 {
    x as *const X as u64
}

impl Value {
    /// This value as a borrowed scalar and its address (`None` for messages, lists and maps).
    pub(crate) fn scalar(&self) -> Option<(Scalar<'_>, u64)> {
        Some(match self {
            Value::Bool(v) => (Scalar::Bool(*v), addr(v)),
            Value::I32(v) | Value::Enum(v) => (Scalar::I32(*v), addr(v)),
            Value::I64(v) => (Scalar::I64(*v), addr(v)),
            Value::U32(v) => (Scalar::U32(*v), addr(v)),
            Value::U64(v) => (Scalar::U64(*v), addr(v)),
            Value::F32(v) => (Scalar::F32(*v), addr(v)),
            Value::F64(v) => (Scalar::F64(*v), addr(v)),
            Value::String(s) => (Scalar::Bytes(s.as_bytes()), s.as_ptr() as u64),
            Value::Bytes(b) => (Scalar::Bytes(b), b.as_ptr() as u64),
            Value::Message(_) | Value::List(_) | Value::Map(_) => return None,
        })
    }
}

impl List {
    /// Calls `f` with each element as a borrowed scalar and its address, in order (nothing
    /// for message lists).
    pub(crate) fn for_each_scalar(&self, mut f: impl FnMut(Scalar<'_>, u64)) {
        match self {
            List::Bool(v) => v.iter().for_each(|x| f(Scalar::Bool(*x), addr(x))),
            List::I32(v) | List::Enum(v) => v.iter().for_each(|x| f(Scalar::I32(*x), addr(x))),
            List::I64(v) => v.iter().for_each(|x| f(Scalar::I64(*x), addr(x))),
            List::U32(v) => v.iter().for_each(|x| f(Scalar::U32(*x), addr(x))),
            List::U64(v) => v.iter().for_each(|x| f(Scalar::U64(*x), addr(x))),
            List::F32(v) => v.iter().for_each(|x| f(Scalar::F32(*x), addr(x))),
            List::F64(v) => v.iter().for_each(|x| f(Scalar::F64(*x), addr(x))),
            List::String(v) => v
                .iter()
                .for_each(|x| f(Scalar::Bytes(x.as_bytes()), x.as_ptr() as u64)),
            List::Bytes(v) => v
                .iter()
                .for_each(|x| f(Scalar::Bytes(x), x.as_ptr() as u64)),
            List::Message(_) => {}
        }
    }
}

impl MapKey {
    /// The key as a borrowed scalar and its address.
    pub(crate) fn scalar(&self) -> (Scalar<'_>, u64) {
        match self {
            MapKey::Bool(v) => (Scalar::Bool(*v), addr(v)),
            MapKey::I32(v) => (Scalar::I32(*v), addr(v)),
            MapKey::I64(v) => (Scalar::I64(*v), addr(v)),
            MapKey::U32(v) => (Scalar::U32(*v), addr(v)),
            MapKey::U64(v) => (Scalar::U64(*v), addr(v)),
            MapKey::String(s) => (Scalar::Bytes(s.as_bytes()), s.as_ptr() as u64),
        }
    }
}

impl MapKey {
    /// The key as a [`Value`].
    pub fn to_value(&self) -> Value {
        match self {
            MapKey::Bool(v) => Value::Bool(*v),
            MapKey::I32(v) => Value::I32(*v),
            MapKey::I64(v) => Value::I64(*v),
            MapKey::U32(v) => Value::U32(*v),
            MapKey::U64(v) => Value::U64(*v),
            MapKey::String(v) => Value::String(v.clone()),
        }
    }
}
