//! Dynamic messages: a record of value slots plus the instance schema of set fields.
//!
//! A [`Message`] is laid out by its type's `Layout`: one slot per field and a presence bitmap.
//! The bitmap is the message's *instance schema* (Optimus Prime's list of `{type, address}`
//! entries for the fields that are set): setters fill a slot and set its bit, and encoders walk
//! only the set bits, which come out in field-number order because fields are sorted by number.

use optimus_schema::{Cardinality, Field, MessageId, SchemaSet};

use crate::value::{List, Map, Value};
use crate::Error;

/// One message of a type in a [`SchemaSet`].
#[derive(Debug, Clone)]
pub struct Message {
    type_id: MessageId,
    /// Presence bits of fields 0..64, kept inline: most types need no more, so a record costs
    /// one allocation (its slots).
    presence: u64,
    /// Presence bits of fields from 64 on, a word per 64 (wide types only).
    presence_rest: Vec<u64>,
    slots: Vec<Value>,
    unknown: Vec<u8>,
}

/// Equal when of the same type with the same set fields, values and unknown bytes (whether
/// or not a record was allocated).
impl PartialEq for Message {
    fn eq(&self, other: &Message) -> bool {
        self.type_id == other.type_id
            && self.unknown == other.unknown
            && self.set_fields().eq(other.set_fields())
            && self.set_fields().all(|i| self.slots[i] == other.slots[i])
    }
}

/// The placeholder in slots whose field is not set; never read while the bit is clear.
const UNSET: Value = Value::Bool(false);

impl Message {
    /// An empty message of type `id`.
    ///
    /// # Panics
    /// If `id` does not come from `schema`.
    pub fn new(schema: &SchemaSet, id: MessageId) -> Message {
        // The record is allocated when the first field is set, so an empty message (often
        // most sub-messages of a wide type) costs no allocation.
        let _ = schema.message(id);
        Message {
            type_id: id,
            presence: 0,
            presence_rest: Vec::new(),
            slots: Vec::new(),
            unknown: Vec::new(),
        }
    }

    /// Allocates the record (slots and presence words) if it is not yet.
    #[inline(always)]
    fn ensure_record(&mut self, schema: &SchemaSet) {
        if self.slots.is_empty() {
            self.allocate_record(schema);
        }
    }

    /// Makes the record: every slot unset, and the presence words past the inline one.
    #[cold]
    #[inline(never)]
    fn allocate_record(&mut self, schema: &SchemaSet) {
        let layout = schema.message(self.type_id).layout;
        self.presence_rest = vec![0; (layout.presence_words as usize).saturating_sub(1)];
        self.slots.resize_with(layout.slot_count as usize, || UNSET);
    }

    /// Bytes of the record this message's type allocates once a field is set.
    pub fn record_bytes(schema: &SchemaSet, id: MessageId) -> usize {
        let layout = schema.message(id).layout;
        layout.slot_count as usize * std::mem::size_of::<Value>()
            + layout.presence_words as usize * 8
    }

    /// The message's type.
    pub fn type_id(&self) -> MessageId {
        self.type_id
    }

    /// Whether the field at `index` (in the type's `fields`) is set.
    #[inline]
    pub fn has(&self, index: usize) -> bool {
        if index < 64 {
            self.presence & (1 << index) != 0
        } else {
            self.presence_rest
                .get(index / 64 - 1)
                .is_some_and(|w| w & (1 << (index % 64)) != 0)
        }
    }

    /// The presence word holding `index`'s bit (the record must be allocated).
    #[inline(always)]
    fn presence_word(&mut self, index: usize) -> &mut u64 {
        if index < 64 {
            &mut self.presence
        } else {
            &mut self.presence_rest[index / 64 - 1]
        }
    }

    /// The value of the field at `index`, if it is set.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&Value> {
        self.has(index).then(|| &self.slots[index])
    }

    /// The value of the field at `index`, or its default when it is not set.
    pub fn get_or_default(&self, schema: &SchemaSet, index: usize) -> Value {
        match self.get(index) {
            Some(v) => v.clone(),
            None => Value::default_for(schema, &schema.message(self.type_id).fields[index]),
        }
    }

    /// The instance schema: indices of the set fields, in field-number order.
    pub fn set_fields(&self) -> SetFields<'_> {
        SetFields {
            words: &self.presence_rest,
            word_index: 0,
            current: self.presence,
        }
    }

    /// The set fields' indices with their values, in field-number order: what the encoders
    /// walk.
    #[inline]
    pub fn set_values(&self) -> impl Iterator<Item = (usize, &Value)> {
        self.set_fields()
            .map(move |index| (index, &self.slots[index]))
    }

    /// Number of set fields.
    pub fn set_count(&self) -> usize {
        self.presence.count_ones() as usize
            + self
                .presence_rest
                .iter()
                .map(|w| w.count_ones() as usize)
                .sum::<usize>()
    }

    /// Sets the field at `index` to `value`, clearing the other members of its oneof. A field
    /// without presence set to its zero value (or an empty list or map) becomes unset.
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when the value's type is not the field's.
    pub fn set(&mut self, schema: &SchemaSet, index: usize, value: Value) -> Result<(), Error> {
        let ty = schema.message(self.type_id);
        let field = ty.fields.get(index).ok_or_else(|| Error::NoSuchField {
            message: ty.full_name.clone(),
            field: index.to_string(),
        })?;
        if !value.matches(field) {
            return Err(Error::TypeMismatch {
                field: format!("{}.{}", ty.full_name, field.name),
                expected: describe(field),
            });
        }
        self.store(schema, field, index, value);
        Ok(())
    }

    /// Sets `field` (at `index`) to `value`, already known to be of the field's type: what
    /// [`Message::set`] does once it has checked. A field without presence set to its zero
    /// value (or an empty list or map) becomes unset.
    pub(crate) fn store(&mut self, schema: &SchemaSet, field: &Field, index: usize, value: Value) {
        let clears = match field.cardinality {
            Cardinality::Singular | Cardinality::Repeated | Cardinality::Map => value.is_zero(),
            Cardinality::Optional => false,
        };
        if clears {
            self.clear(index);
        } else {
            self.put(schema, field, index, value);
        }
    }

    /// Sets the field named `name` (declared or JSON name).
    ///
    /// # Errors
    /// [`Error::NoSuchField`] or [`Error::TypeMismatch`].
    pub fn set_by_name(
        &mut self,
        schema: &SchemaSet,
        name: &str,
        value: Value,
    ) -> Result<(), Error> {
        let index = self.index_of(schema, name)?;
        self.set(schema, index, value)
    }

    /// The value of the field named `name` (declared or JSON name), or its default.
    ///
    /// # Errors
    /// [`Error::NoSuchField`].
    pub fn get_by_name(&self, schema: &SchemaSet, name: &str) -> Result<Value, Error> {
        let index = self.index_of(schema, name)?;
        Ok(self.get_or_default(schema, index))
    }

    fn index_of(&self, schema: &SchemaSet, name: &str) -> Result<usize, Error> {
        let ty = schema.message(self.type_id);
        ty.field_index_by_name(name)
            .ok_or_else(|| Error::NoSuchField {
                message: ty.full_name.clone(),
                field: name.to_string(),
            })
    }

    /// Unsets the field at `index`.
    pub fn clear(&mut self, index: usize) {
        if self.has(index) {
            *self.presence_word(index) &= !(1 << (index % 64));
            self.slots[index] = UNSET;
        }
    }

    /// The slot of the field at `index`, set to its default first if it was not set; the
    /// field becomes set (and its oneof siblings unset). For repeated fields this is the
    /// list, for maps the map, for messages the sub-message.
    pub fn get_or_insert(&mut self, schema: &SchemaSet, index: usize) -> &mut Value {
        if !self.has(index) {
            self.ensure_record(schema);
            let field = &schema.message(self.type_id).fields[index];
            self.clear_oneof_siblings(schema, field, index);
            // A sub-message, list or map left in the slot by `clear_all` is emptied and
            // reused with its allocations; anything else is replaced by the default.
            if !self.slots[index].empty_in_place() {
                self.slots[index] = Value::default_for(schema, field);
            }
            self.mark(index);
        }
        &mut self.slots[index]
    }

    /// Sets the string field at `index` to `text`, reusing the buffer a `clear_all` left in
    /// its slot (decoder fast path).
    pub(crate) fn put_str(&mut self, schema: &SchemaSet, field: &Field, index: usize, text: &str) {
        match self.slot_to_put(schema, field, index) {
            Value::String(s) => {
                s.clear();
                s.push_str(text);
            }
            slot => overwrite(slot, Value::String(text.to_owned())),
        }
    }

    /// Sets the bytes field at `index` to `bytes`, reusing the buffer a `clear_all` left in
    /// its slot (decoder fast path).
    pub(crate) fn put_bytes(
        &mut self,
        schema: &SchemaSet,
        field: &Field,
        index: usize,
        bytes: &[u8],
    ) {
        match self.slot_to_put(schema, field, index) {
            Value::Bytes(b) => {
                b.clear();
                b.extend_from_slice(bytes);
            }
            slot => overwrite(slot, Value::Bytes(bytes.to_vec())),
        }
    }

    /// The list of the repeated field at `index` (created empty if unset).
    ///
    /// # Panics
    /// If the field is not repeated.
    pub fn list_mut(&mut self, schema: &SchemaSet, index: usize) -> &mut List {
        match self.get_or_insert(schema, index) {
            Value::List(l) => l,
            other => panic!("field {index} is not repeated: {other:?}"),
        }
    }

    /// The map of the map field at `index` (created empty if unset).
    ///
    /// # Panics
    /// If the field is not a map.
    pub fn map_mut(&mut self, schema: &SchemaSet, index: usize) -> &mut Map {
        match self.get_or_insert(schema, index) {
            Value::Map(m) => m,
            other => panic!("field {index} is not a map: {other:?}"),
        }
    }

    /// The sub-message of the singular message `field` at `index`, made empty if unset (the
    /// decoder's path: no dispatch on what the field may hold).
    #[inline]
    pub(crate) fn sub_message(
        &mut self,
        schema: &SchemaSet,
        field: &Field,
        index: usize,
    ) -> &mut Message {
        if !self.has(index) {
            self.ensure_record(schema);
            if field.oneof.is_some() {
                self.clear_oneof_siblings(schema, field, index);
            }
            match &mut self.slots[index] {
                // Left by `clear_all`: emptied and reused with its allocations.
                Value::Message(m) => m.clear_all(),
                slot => {
                    let id = field.message.expect("message field has a type");
                    overwrite(slot, Value::Message(Box::new(Message::new(schema, id))));
                }
            }
            self.mark(index);
        }
        match &mut self.slots[index] {
            Value::Message(m) => m,
            other => panic!("field {index} is not a message: {other:?}"),
        }
    }

    /// The sub-message of the message field at `index` (created empty if unset).
    ///
    /// # Panics
    /// If the field is not a singular message field.
    pub fn message_mut(&mut self, schema: &SchemaSet, index: usize) -> &mut Message {
        match self.get_or_insert(schema, index) {
            Value::Message(m) => m,
            other => panic!("field {index} is not a message: {other:?}"),
        }
    }

    /// Sets the presence bit of `index` and stores `value` without checks (decoder fast path).
    #[inline(always)]
    pub(crate) fn put(&mut self, schema: &SchemaSet, field: &Field, index: usize, value: Value) {
        overwrite(self.slot_to_put(schema, field, index), value);
    }

    /// The slot of `field` (at `index`), marked set and its oneof siblings unset, holding
    /// whatever it held: the caller stores the value.
    #[inline(always)]
    fn slot_to_put(&mut self, schema: &SchemaSet, field: &Field, index: usize) -> &mut Value {
        self.ensure_record(schema);
        if field.oneof.is_some() {
            self.clear_oneof_siblings(schema, field, index);
        }
        self.mark(index);
        &mut self.slots[index]
    }

    #[inline]
    fn mark(&mut self, index: usize) {
        *self.presence_word(index) |= 1 << (index % 64);
    }

    fn clear_oneof_siblings(&mut self, schema: &SchemaSet, field: &Field, index: usize) {
        if let Some(o) = field.oneof {
            let ty = schema.message(self.type_id);
            for &sibling in &ty.oneofs[o as usize].fields {
                if sibling as usize != index {
                    self.clear(sibling as usize);
                }
            }
        }
    }

    /// The bytes of fields this message's type does not know, in wire format, in the order
    /// they arrived.
    pub fn unknown_fields(&self) -> &[u8] {
        &self.unknown
    }

    /// Appends wire-format bytes of unknown fields.
    pub fn push_unknown(&mut self, bytes: &[u8]) {
        self.unknown.extend_from_slice(bytes);
    }

    /// Unsets every field and drops the unknown bytes, keeping the allocations for reuse (as
    /// Google protobuf's `Clear`): the record, and the sub-messages, strings, bytes, lists and
    /// maps the fields held, which the next decode of the same field (or `get_or_insert` and
    /// the `*_mut` accessors) empties and refills instead of allocating; `set` replaces them.
    /// Decoding many messages into one cleared message (see
    /// [`crate::binary::merge`]) allocates only where a message outgrows the previous ones.
    pub fn clear_all(&mut self) {
        self.presence = 0;
        // Only wide types have more words; an empty `fill` would still call libc's memset,
        // which cost a reused Nested decode (eleven messages cleared) two thirds of its time.
        if !self.presence_rest.is_empty() {
            self.presence_rest.fill(0);
        }
        self.unknown.clear();
    }

    /// Whether every required field (recursively) is set.
    pub fn is_initialized(&self, schema: &SchemaSet) -> bool {
        self.missing_required(schema).is_none()
    }

    /// The path of the first required field that is not set, if any.
    pub fn missing_required(&self, schema: &SchemaSet) -> Option<String> {
        let ty = schema.message(self.type_id);
        if !ty.may_lack_required {
            return None;
        }
        for &r in &ty.required_fields {
            if !self.has(r as usize) {
                return Some(format!("{}.{}", ty.full_name, ty.fields[r as usize].name));
            }
        }
        for index in self.set_fields() {
            let field = &ty.fields[index];
            if !field.kind.is_message() {
                continue;
            }
            let missing = match &self.slots[index] {
                Value::Message(m) => m.missing_required(schema),
                Value::List(List::Message(list)) => {
                    list.iter().find_map(|m| m.missing_required(schema))
                }
                Value::Map(map) => map.values().find_map(|v| match v {
                    Value::Message(m) => m.missing_required(schema),
                    _ => None,
                }),
                _ => None,
            };
            if missing.is_some() {
                return missing;
            }
        }
        None
    }
}

/// Stores `value` in `slot`. A scalar there has nothing to drop, so it is overwritten without
/// a call of the drop glue (which the decoders' slot writes would otherwise make each time).
#[inline(always)]
fn overwrite(slot: &mut Value, value: Value) {
    if slot.owns_heap() {
        *slot = value;
    } else {
        std::mem::forget(std::mem::replace(slot, value));
    }
}

fn describe(field: &Field) -> String {
    match field.cardinality {
        Cardinality::Repeated => format!("repeated {}", field.kind.proto_name()),
        Cardinality::Map => "map".to_string(),
        _ => field.kind.proto_name().to_string(),
    }
}

/// Iterator over the set fields' indices in number order (see [`Message::set_fields`]).
pub struct SetFields<'a> {
    /// The presence words after the current one's first (fields from 64 on).
    words: &'a [u64],
    /// Which word `current` is (0: the inline one).
    word_index: usize,
    /// The current word's bits not yet visited.
    current: u64,
}

impl Iterator for SetFields<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        loop {
            if self.current != 0 {
                let bit = self.current.trailing_zeros() as usize;
                self.current &= self.current - 1;
                return Some(self.word_index * 64 + bit);
            }
            self.current = *self.words.get(self.word_index)?;
            self.word_index += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> SchemaSet {
        SchemaSet::from_source(
            r#"syntax = "proto3";
               message M { int32 a = 1; string s = 2; repeated int32 r = 3;
                           oneof o { int32 x = 4; M sub = 5; } optional int32 p = 6; }"#,
        )
        .unwrap()
    }

    #[test]
    fn setters_fill_the_instance_schema_in_number_order() {
        let s = schema();
        let id = s.message_by_name("M").unwrap();
        let mut m = Message::new(&s, id);
        m.set_by_name(&s, "s", Value::String("hi".into())).unwrap();
        m.set_by_name(&s, "a", Value::I32(7)).unwrap();
        assert_eq!(m.set_fields().collect::<Vec<_>>(), [0, 1]);
        m.set_by_name(&s, "a", Value::I32(0)).unwrap();
        assert_eq!(m.set_fields().collect::<Vec<_>>(), [1]);
        m.set_by_name(&s, "p", Value::I32(0)).unwrap();
        assert!(m.has(5));
        assert!(m.set_by_name(&s, "a", Value::String("x".into())).is_err());
        assert!(m.set_by_name(&s, "nope", Value::I32(1)).is_err());
    }

    #[test]
    fn oneof_members_replace_each_other() {
        let s = schema();
        let id = s.message_by_name("M").unwrap();
        let mut m = Message::new(&s, id);
        m.set_by_name(&s, "x", Value::I32(0)).unwrap();
        assert!(m.has(3));
        m.message_mut(&s, 4);
        assert!(!m.has(3) && m.has(4));
        assert_eq!(m.get_by_name(&s, "x").unwrap(), Value::I32(0));
        m.clear_all();
        assert_eq!(m.set_count(), 0);
    }

    #[test]
    fn presence_past_the_inline_word() {
        let fields: String = (1..=130).map(|n| format!("int32 f{n} = {n}; ")).collect();
        let s = SchemaSet::from_source(&format!("syntax = \"proto3\"; message W {{ {fields} }}"))
            .unwrap();
        let id = s.message_by_name("W").unwrap();
        let mut m = Message::new(&s, id);
        for i in [129, 64, 0, 63, 65, 128] {
            m.set(&s, i, Value::I32(i as i32 + 1)).unwrap();
        }
        assert_eq!(
            m.set_fields().collect::<Vec<_>>(),
            [0, 63, 64, 65, 128, 129]
        );
        assert_eq!(m.set_count(), 6);
        assert!(m.has(64) && m.has(129) && !m.has(66) && !m.has(127));
        m.clear(64);
        m.clear(0);
        assert_eq!(
            m.set_values().map(|(i, _)| i).collect::<Vec<_>>(),
            [63, 65, 128, 129]
        );
        assert_eq!(m.get(128), Some(&Value::I32(129)));
        m.clear_all();
        assert_eq!(m.set_count(), 0);
        assert_eq!(m.set_fields().count(), 0);
    }
}
