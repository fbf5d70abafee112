//! What generated code calls: loading its schema and checking its layout once, the traits its
//! types implement, and the typed views of repeated fields and maps.
//!
//! The items marked `#[doc(hidden)]` exist for generated code only and may change in any
//! release (as prost's `encoding` module); the traits and [`EnumValue`], [`Repeated`] and
//! [`MapIter`] are the public face of generated types.

use std::marker::PhantomData;

use optimus_core::binary::DecodeOptions;
use optimus_core::json::JsonOptions;
use optimus_core::schema::{MessageId, SchemaSet};
use optimus_core::{engine, Arena, Error, FieldRef, Record};

/// A field's expected table entry, as the generator computed it: number, record offset, op
/// code and, for message fields, the sub-message type id (`u32::MAX` otherwise).
#[doc(hidden)]
pub type FieldLayout = (u32, u32, u8, u32);

/// A generated type's expected layout, checked against the runtime table once.
#[doc(hidden)]
pub struct TypeLayout {
    /// Full name.
    pub name: &'static str,
    /// Type id in the schema.
    pub id: u32,
    /// Record size in bytes.
    pub size: u32,
    /// One entry per field, in table order.
    pub fields: &'static [FieldLayout],
}

/// Compiles the embedded descriptor set and checks that every generated type's constants
/// (ids, offsets, ops) are the runtime tables'.
///
/// # Panics
/// If the descriptor set does not load or a table differs from what the code was generated
/// for (the generated code and the optimus-schema it runs with disagree: regenerate it with
/// the same optimus-build version as the runtime).
#[doc(hidden)]
pub fn load(descriptor_set: &[u8], layouts: &[TypeLayout]) -> SchemaSet {
    let schema = SchemaSet::from_descriptor_set_bytes(descriptor_set)
        .unwrap_or_else(|e| panic!("optimus-build: embedded descriptor set: {e}"));
    if let Err(why) = check_layouts(&schema, layouts) {
        panic!("optimus-build: generated code does not match the runtime's record layout: {why}");
    }
    schema
}

/// The first difference between `layouts` and `schema`'s tables, if any.
#[doc(hidden)]
pub fn check_layouts(schema: &SchemaSet, layouts: &[TypeLayout]) -> Result<(), String> {
    let count = schema.messages().count();
    for l in layouts {
        if l.id as usize >= count {
            return Err(format!(
                "{}: type id {} past the schema's {count}",
                l.name, l.id
            ));
        }
        let ty = schema.message(MessageId(l.id));
        if ty.full_name != l.name {
            return Err(format!(
                "type id {} is {}, not {}",
                l.id, ty.full_name, l.name
            ));
        }
        let t = &ty.table;
        if t.size != l.size || t.entries.len() != l.fields.len() {
            return Err(format!(
                "{}: record of {} bytes and {} fields, generated for {} and {}",
                l.name,
                t.size,
                t.entries.len(),
                l.size,
                l.fields.len()
            ));
        }
        for (e, &(number, offset, op, sub)) in t.entries.iter().zip(l.fields) {
            let runtime_sub = if e.op.scalar().is_message() {
                t.sub_message(e)
            } else {
                u32::MAX
            };
            if (e.number, e.offset, e.op.code(), runtime_sub) != (number, offset, op, sub) {
                return Err(format!(
                    "{} field {}: offset {}, op {:?}, type {}; generated for offset {offset}, \
                     op code {op}, type {sub}",
                    l.name, e.number, e.offset, e.op, runtime_sub
                ));
            }
        }
    }
    Ok(())
}

/// A generated message type: a typed view of a [`Record`] of one type in an [`Arena`].
pub trait GeneratedMessage<'a>: Copy + FieldValue<'a> {
    /// The type's full protobuf name.
    const FULL_NAME: &'static str;
    /// The schema the generated module loaded (once).
    fn schema() -> &'static SchemaSet;
    /// The type's id in [`GeneratedMessage::schema`].
    fn type_id() -> MessageId;
    /// The record this view reads and writes.
    fn as_record(&self) -> Record<'a>;
    /// The arena the record lives in (setters allocate in it).
    fn arena(&self) -> &'a Arena;
    /// A view of `rec`, which must be a record of this type made for
    /// [`GeneratedMessage::schema`].
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when `rec` is of another type or schema.
    fn from_record(rec: Record<'a>, arena: &'a Arena) -> Result<Self, Error>;

    /// An empty message in `arena`.
    fn new_in(arena: &'a Arena) -> Self {
        Self::from_record(
            Record::new_in(Self::schema(), Self::type_id(), arena),
            arena,
        )
        .expect("a new record is of its type")
    }

    /// Decodes wire bytes; strings and bytes are views of `bytes`.
    ///
    /// # Errors
    /// As [`engine::decode`].
    fn decode(bytes: &'a [u8], arena: &'a Arena) -> Result<Self, Error> {
        let rec = engine::decode(
            Self::schema(),
            Self::type_id(),
            bytes,
            arena,
            &DecodeOptions::default(),
        )?;
        Self::from_record(rec, arena)
    }

    /// Decodes wire bytes, copying strings and bytes into the arena.
    ///
    /// # Errors
    /// As [`engine::decode_copied`].
    fn decode_copied(bytes: &[u8], arena: &'a Arena) -> Result<Self, Error> {
        let rec = engine::decode_copied(
            Self::schema(),
            Self::type_id(),
            bytes,
            arena,
            &DecodeOptions::default(),
        )?;
        Self::from_record(rec, arena)
    }

    /// Reads proto3 JSON.
    ///
    /// # Errors
    /// As [`engine::decode_json`].
    fn decode_json(text: &'a str, arena: &'a Arena) -> Result<Self, Error> {
        let rec = engine::decode_json(
            Self::schema(),
            Self::type_id(),
            text,
            arena,
            &JsonOptions::default(),
        )?;
        Self::from_record(rec, arena)
    }

    /// Reads proto3 JSON with `opts` (unknown members ignored, depth limit).
    ///
    /// # Errors
    /// As [`engine::decode_json`].
    fn decode_json_with(
        text: &'a str,
        arena: &'a Arena,
        opts: &JsonOptions,
    ) -> Result<Self, Error> {
        let rec = engine::decode_json(Self::schema(), Self::type_id(), text, arena, opts)?;
        Self::from_record(rec, arena)
    }

    /// Appends the deterministic wire bytes to `out`.
    fn encode(&self, out: &mut Vec<u8>) {
        engine::encode(self.as_record(), out)
    }

    /// The deterministic wire bytes, written in `encoder`'s reused buffer (no copy; valid
    /// until its next use).
    fn encode_with<'e>(&self, encoder: &'e mut engine::Encoder) -> &'e [u8] {
        encoder.encode(self.as_record())
    }

    /// The deterministic wire bytes.
    fn encode_to_vec(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// The number of bytes [`GeneratedMessage::encode`] writes.
    fn encoded_len(&self) -> usize {
        engine::encoded_len(self.as_record())
    }

    /// Compact proto3 JSON.
    ///
    /// # Errors
    /// As [`engine::encode_json`]: values JSON cannot represent.
    fn encode_json(&self) -> Result<String, Error> {
        self.encode_json_with(&JsonOptions::default())
    }

    /// Proto3 JSON written with `opts`.
    ///
    /// # Errors
    /// As [`engine::encode_json`].
    fn encode_json_with(&self, opts: &JsonOptions) -> Result<String, Error> {
        let mut out = String::new();
        engine::encode_json(self.as_record(), opts, &mut out)?;
        Ok(out)
    }
}

/// Checks that `rec` is a record of type `id` in `schema` (what a generated view wraps).
///
/// # Errors
/// [`Error::TypeMismatch`] naming both types.
#[doc(hidden)]
pub fn check_type(
    rec: &Record<'_>,
    schema: &SchemaSet,
    id: MessageId,
    name: &str,
) -> Result<(), Error> {
    if std::ptr::eq(rec.schema(), schema) && rec.type_id() == id {
        return Ok(());
    }
    let found = rec.schema().message(rec.type_id()).full_name.clone();
    let same_schema = std::ptr::eq(rec.schema(), schema);
    Err(Error::TypeMismatch {
        field: if same_schema {
            found
        } else {
            format!("{found} (of another schema)")
        },
        expected: name.to_string(),
    })
}

/// An enum generated from a `.proto` enum.
pub trait Enumeration: Copy + 'static {
    /// The value numbered `n`, if the enum declares one.
    fn from_i32(n: i32) -> Option<Self>;
    /// The value's number.
    fn number(self) -> i32;
}

/// An enum field's value: one the enum declares, or (open enums, proto3) any other number,
/// kept as it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EnumValue<E> {
    /// A declared value.
    Known(E),
    /// A number the enum does not declare.
    Unknown(i32),
}

impl<E: Enumeration> EnumValue<E> {
    /// The value of number `n`.
    pub fn from_number(n: i32) -> EnumValue<E> {
        E::from_i32(n).map_or(EnumValue::Unknown(n), EnumValue::Known)
    }

    /// The number.
    pub fn number(self) -> i32 {
        match self {
            EnumValue::Known(e) => e.number(),
            EnumValue::Unknown(n) => n,
        }
    }

    /// The declared value, if it is one.
    pub fn known(self) -> Option<E> {
        match self {
            EnumValue::Known(e) => Some(e),
            EnumValue::Unknown(_) => None,
        }
    }
}

impl<E: Enumeration> From<E> for EnumValue<E> {
    fn from(e: E) -> EnumValue<E> {
        EnumValue::Known(e)
    }
}

/// The number of a value of an enum that was not generated (declared in an imported file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EnumNumber(pub i32);

/// A value type of repeated fields and maps: how it is read from and written to a record.
pub trait FieldValue<'a>: Sized {
    /// The value in `v`, which holds this type's kind.
    ///
    /// # Panics
    /// If `v` is of another kind (a generated type and its table disagree; the layout check
    /// at load time rules it out).
    fn from_field(v: FieldRef<'a>, arena: &'a Arena) -> Self;
    /// The value as a setter takes it.
    fn to_field(&self) -> FieldRef<'a>;
    /// The value of part `index` of map entry `entry` that the wire did not carry: the
    /// default (an empty message for message values).
    fn missing(entry: Record<'a>, index: usize, arena: &'a Arena) -> Self;
}

macro_rules! scalar_value {
    ($($t:ty => $variant:ident, $zero:expr;)*) => {$(
        impl<'a> FieldValue<'a> for $t {
            fn from_field(v: FieldRef<'a>, _: &'a Arena) -> Self {
                match v {
                    FieldRef::$variant(x) => x,
                    other => panic!("expected {}, found {other:?}", stringify!($variant)),
                }
            }
            fn to_field(&self) -> FieldRef<'a> {
                FieldRef::$variant(*self)
            }
            fn missing(_: Record<'a>, _: usize, _: &'a Arena) -> Self {
                $zero
            }
        }
    )*};
}

scalar_value! {
    bool => Bool, false;
    i32 => I32, 0;
    i64 => I64, 0;
    u32 => U32, 0;
    u64 => U64, 0;
    f32 => F32, 0.0;
    f64 => F64, 0.0;
    &'a str => Str, "";
    &'a [u8] => Bytes, &[];
}

impl<'a, E: Enumeration> FieldValue<'a> for EnumValue<E> {
    fn from_field(v: FieldRef<'a>, _: &'a Arena) -> Self {
        match v {
            FieldRef::Enum(n) => EnumValue::from_number(n),
            other => panic!("expected an enum, found {other:?}"),
        }
    }
    fn to_field(&self) -> FieldRef<'a> {
        FieldRef::Enum(self.number())
    }
    fn missing(_: Record<'a>, _: usize, _: &'a Arena) -> Self {
        EnumValue::from_number(0)
    }
}

impl<'a> FieldValue<'a> for EnumNumber {
    fn from_field(v: FieldRef<'a>, _: &'a Arena) -> Self {
        match v {
            FieldRef::Enum(n) => EnumNumber(n),
            other => panic!("expected an enum, found {other:?}"),
        }
    }
    fn to_field(&self) -> FieldRef<'a> {
        FieldRef::Enum(self.0)
    }
    fn missing(_: Record<'a>, _: usize, _: &'a Arena) -> Self {
        EnumNumber(0)
    }
}

/// A message of a type that was not generated (declared in an imported file): the dynamic
/// record.
impl<'a> FieldValue<'a> for Record<'a> {
    fn from_field(v: FieldRef<'a>, _: &'a Arena) -> Self {
        match v {
            FieldRef::Message(m) => m,
            other => panic!("expected a message, found {other:?}"),
        }
    }
    fn to_field(&self) -> FieldRef<'a> {
        FieldRef::Message(*self)
    }
    fn missing(entry: Record<'a>, index: usize, arena: &'a Arena) -> Self {
        entry
            .message_mut(arena, index)
            .expect("a map's message value is a message field")
    }
}

/// The values of a repeated field, read in place.
pub struct Repeated<'a, T> {
    rec: Record<'a>,
    arena: &'a Arena,
    index: usize,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Repeated<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Repeated<'_, T> {}

impl<'a, T: FieldValue<'a>> Repeated<'a, T> {
    #[doc(hidden)]
    pub fn new(rec: Record<'a>, index: usize, arena: &'a Arena) -> Repeated<'a, T> {
        Repeated {
            rec,
            arena,
            index,
            len: rec.len_of(index),
            _t: PhantomData,
        }
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Value `i`.
    pub fn get(&self, i: usize) -> Option<T> {
        self.rec
            .element(self.index, i)
            .map(|v| T::from_field(v, self.arena))
    }

    /// The values in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = T> + 'a
    where
        T: 'a,
    {
        let this = *self;
        (0..self.len).map(move |i| this.get(i).expect("an index below the length"))
    }
}

impl<'a, T: FieldValue<'a> + std::fmt::Debug + 'a> std::fmt::Debug for Repeated<'a, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The entries of a map field in arrival order, as `(key, value)` pairs. A key may come
/// more than once (the wire allows it); the last one wins, as the `_get` accessors and the
/// encoders treat it.
pub struct MapIter<'a, K, V> {
    rec: Record<'a>,
    arena: &'a Arena,
    index: usize,
    next: usize,
    len: usize,
    _kv: PhantomData<fn() -> (K, V)>,
}

impl<K, V> Clone for MapIter<'_, K, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K, V> Copy for MapIter<'_, K, V> {}

impl<'a, K: FieldValue<'a>, V: FieldValue<'a>> MapIter<'a, K, V> {
    #[doc(hidden)]
    pub fn new(rec: Record<'a>, index: usize, arena: &'a Arena) -> MapIter<'a, K, V> {
        MapIter {
            rec,
            arena,
            index,
            next: 0,
            len: rec.len_of(index),
            _kv: PhantomData,
        }
    }
}

impl<'a, K: FieldValue<'a>, V: FieldValue<'a>> Iterator for MapIter<'a, K, V> {
    type Item = (K, V);

    fn next(&mut self) -> Option<(K, V)> {
        if self.next >= self.len {
            return None;
        }
        let Some(FieldRef::Message(entry)) = self.rec.element(self.index, self.next) else {
            panic!("a map holds entry records");
        };
        self.next += 1;
        let part = |i: usize| -> Option<FieldRef<'a>> { entry.get(i) };
        let key = part(0).map_or_else(
            || K::missing(entry, 0, self.arena),
            |v| K::from_field(v, self.arena),
        );
        let value = part(1).map_or_else(
            || V::missing(entry, 1, self.arena),
            |v| V::from_field(v, self.arena),
        );
        Some((key, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.len - self.next;
        (n, Some(n))
    }
}

impl<'a, K: FieldValue<'a>, V: FieldValue<'a>> ExactSizeIterator for MapIter<'a, K, V> {}

/// Sets single field `index` (generated setters give values of the field's kind).
#[doc(hidden)]
#[inline]
pub fn set<'a>(rec: Record<'a>, index: usize, value: FieldRef<'a>) {
    rec.set(index, value)
        .expect("a generated setter gives its field's kind")
}

/// Appends to repeated field `index`.
#[doc(hidden)]
#[inline]
pub fn push<'a>(rec: Record<'a>, arena: &'a Arena, index: usize, value: FieldRef<'a>) {
    rec.push(arena, index, value)
        .expect("a generated setter gives its field's kind")
}

/// Unsets field `index`.
#[doc(hidden)]
#[inline]
pub fn clear(rec: Record<'_>, index: usize) {
    rec.clear(index).expect("a generated field index")
}

/// Adds an entry to map field `index`.
#[doc(hidden)]
#[inline]
pub fn insert<'a>(
    rec: Record<'a>,
    arena: &'a Arena,
    index: usize,
    key: FieldRef<'a>,
    value: FieldRef<'a>,
) {
    rec.insert(arena, index, key, value)
        .expect("a generated setter gives its field's kinds")
}

/// A new empty record of map field `index`'s value type (a message), not yet inserted.
#[doc(hidden)]
pub fn new_map_value<'a>(rec: Record<'a>, index: usize, arena: &'a Arena) -> Record<'a> {
    let schema = rec.schema();
    let table = &schema.message(rec.type_id()).table;
    let entry_type = MessageId(table.sub_message(&table.entries[index]));
    let value = &schema.message(entry_type).fields[1];
    let id = value.message.expect("the map's value is a message");
    Record::new_in(schema, id, arena)
}
