//! The trace builder: lays a message instance out in memory the way a protobuf arena does and
//! emits the events an accelerator performs to encode or decode it.
//!
//! Layout (per message, in creation order, 8-byte aligned bump allocation): the record (an
//! 8-byte presence word, then naturally aligned slots in declaration order), then for each set
//! field in order its string payload or its sub-message. The instance schema (one
//! `{type, address}` entry per set field, [`SCHEMA_ENTRY_BYTES`] each, as in Optimus Prime
//! Fig. 4) is built by the setters into a schema pool of the same arena. A schema
//! entry's address points at the field's data: the slot for scalars, the payload for
//! strings/bytes, the sub-message's schema for sub-messages. Fields whose placement bit is set
//! (RPCAcc's `Acc` label) live in accelerator memory ([`Region::Accel`]) instead.

use optimus_trace::{Direction, Event, Format, Region};

use super::proto::{Instance, ProtoFile, Ty, Value};

/// Bytes of one schema entry: 8-byte type word + 8-byte address.
pub const SCHEMA_ENTRY_BYTES: u32 = 16;
/// Allocation alignment of the arena.
const ARENA_ALIGN: u64 = 8;

/// Converter op ids the builder reports (the engine has its own numbering; the models map op
/// ids to converter costs through their config).
pub mod ops {
    /// Varint of a 32- or 64-bit integer.
    pub const VARINT: u16 = 1;
    /// Zigzag then varint.
    pub const ZIGZAG: u16 = 2;
    /// 4-byte little-endian copy.
    pub const FIXED32: u16 = 3;
    /// 8-byte little-endian copy.
    pub const FIXED64: u16 = 4;
    /// Bool as a one-byte varint.
    pub const BOOL: u16 = 5;
    /// Length-delimited bytes copy.
    pub const BYTES: u16 = 6;
    /// Length-delimited string copy with UTF-8 check.
    pub const STRING: u16 = 7;
    /// Sub-message tag and length prefix.
    pub const SUBMESSAGE: u16 = 8;
}

/// Converter op of a field type.
pub fn op_of(ty: Ty) -> u16 {
    match ty {
        Ty::Varint32 | Ty::Varint64 => ops::VARINT,
        Ty::Zigzag32 | Ty::Zigzag64 => ops::ZIGZAG,
        Ty::Bool => ops::BOOL,
        Ty::Fixed32 => ops::FIXED32,
        Ty::Fixed64 => ops::FIXED64,
        Ty::String => ops::STRING,
        Ty::Bytes => ops::BYTES,
        Ty::Message(_) => ops::SUBMESSAGE,
    }
}

/// Where a message's parts were allocated.
struct Alloc {
    record: u64,
    schema: u64,
    /// Per present field (same order as `Instance::fields`): payload address and region.
    data: Vec<(u64, Region)>,
    subs: Vec<Option<Alloc>>,
}

/// Offset of the schema pool inside a core's arena: instance schemata are built by the
/// setters into their own pool, apart from the message objects.
pub const SCHEMA_POOL_OFFSET: u64 = 0x10_0000;

/// Bump allocators for host objects, host schemata and accelerator memory.
struct Arena {
    host: u64,
    schema: u64,
    accel: u64,
}

impl Arena {
    fn new(host: u64, accel: u64) -> Self {
        Self { host, schema: host + SCHEMA_POOL_OFFSET, accel }
    }

    fn take_schema(&mut self, region: Region, bytes: u64) -> u64 {
        if region == Region::Accel {
            return self.take(region, bytes);
        }
        let at = self.schema;
        self.schema = (at + bytes.max(1)).next_multiple_of(ARENA_ALIGN);
        at
    }

    fn take(&mut self, region: Region, bytes: u64) -> u64 {
        let cur = if region == Region::Accel { &mut self.accel } else { &mut self.host };
        let at = *cur;
        *cur = (at + bytes.max(1)).next_multiple_of(ARENA_ALIGN);
        at
    }
}

/// Builds encode/decode traces of instances of one .proto file.
pub struct TraceBuilder<'a> {
    proto: &'a ProtoFile,
    format: Format,
    /// Placement bit per (type, field index): `true` = accelerator memory.
    placement: &'a dyn Fn(usize, usize) -> bool,
}

fn host_only(_: usize, _: usize) -> bool {
    false
}

impl<'a> TraceBuilder<'a> {
    /// A builder placing every field in host memory.
    pub fn new(proto: &'a ProtoFile) -> Self {
        Self { proto, format: Format::Protobuf, placement: &host_only }
    }

    /// Sets the placement bit function (RPCAcc's per-field `Acc` label); only string, bytes
    /// and sub-message fields (dereferenced fields) can be placed in accelerator memory.
    pub fn with_placement(mut self, placement: &'a dyn Fn(usize, usize) -> bool) -> Self {
        self.placement = placement;
        self
    }

    fn alloc(&self, inst: &Instance, arena: &mut Arena, region: Region) -> Alloc {
        let def = &self.proto.messages[inst.ty];
        let (_, record_bytes) = def.layout();
        let record = arena.take(region, record_bytes.into());
        let schema = arena.take_schema(region, u64::from(SCHEMA_ENTRY_BYTES) * inst.fields.len() as u64);
        let (slots, _) = def.layout();
        let mut data = Vec::with_capacity(inst.fields.len());
        let mut subs = Vec::with_capacity(inst.fields.len());
        for fv in &inst.fields {
            let deref = matches!(fv.value, Value::Bytes { .. } | Value::Message { .. });
            let r = if deref && (self.placement)(inst.ty, fv.field) { Region::Accel } else { region };
            match &fv.value {
                Value::Scalar { .. } => {
                    data.push((record + u64::from(slots[fv.field]), region));
                    subs.push(None);
                }
                Value::Bytes { len, .. } => {
                    data.push((arena.take(r, (*len).into()), r));
                    subs.push(None);
                }
                Value::Message { inst: sub, .. } => {
                    let a = self.alloc(sub, arena, r);
                    data.push((a.schema, r));
                    subs.push(Some(a));
                }
            }
        }
        Alloc { record, schema, data, subs }
    }

    /// Events of serializing `inst` (of type `inst.ty`) whose arena starts at `arena_base`
    /// (accelerator memory at `accel_base`), writing the output buffer from offset 0.
    pub fn encode(&self, inst: &Instance, arena_base: u64, accel_base: u64) -> Vec<Event> {
        let mut arena = Arena::new(arena_base, accel_base);
        let alloc = self.alloc(inst, &mut arena, Region::Message);
        let mut ev = vec![Event::MessageBegin { direction: Direction::Encode, format: self.format, type_id: inst.ty as u32 }];
        let mut out = 0u64;
        self.encode_rec(inst, &alloc, &mut ev, &mut out);
        ev.push(Event::MessageEnd { wire_bytes: inst.wire_bytes() });
        ev
    }

    fn encode_rec(&self, inst: &Instance, a: &Alloc, ev: &mut Vec<Event>, out: &mut u64) {
        let def = &self.proto.messages[inst.ty];
        for (k, fv) in inst.fields.iter().enumerate() {
            let ty = def.fields[fv.field].ty;
            let op = op_of(ty);
            ev.push(Event::SchemaRead { kind: op, addr: a.schema + k as u64 * u64::from(SCHEMA_ENTRY_BYTES), size: SCHEMA_ENTRY_BYTES });
            let (addr, region) = a.data[k];
            match &fv.value {
                Value::Scalar { wire_bytes, .. } => {
                    let slot = ty.slot_bytes();
                    ev.push(Event::FieldRead { region, addr, bytes: slot });
                    ev.push(Event::Convert { op, bytes: slot });
                    let n = fv.tag_bytes + wire_bytes;
                    ev.push(Event::FieldWrite { region: Region::Buffer, addr: *out, bytes: n });
                    *out += u64::from(n);
                }
                Value::Bytes { len, len_bytes } => {
                    ev.push(Event::FieldRead { region, addr, bytes: *len });
                    ev.push(Event::Convert { op, bytes: *len });
                    let n = fv.tag_bytes + len_bytes + len;
                    ev.push(Event::FieldWrite { region: Region::Buffer, addr: *out, bytes: n });
                    *out += u64::from(n);
                }
                Value::Message { inst: sub, len_bytes } => {
                    let n = fv.tag_bytes + len_bytes;
                    ev.push(Event::Convert { op, bytes: 0 });
                    ev.push(Event::FieldWrite { region: Region::Buffer, addr: *out, bytes: n });
                    *out += u64::from(n);
                    ev.push(Event::Enter { type_id: sub.ty as u32 });
                    if let Some(sa) = &a.subs[k] {
                        self.encode_rec(sub, sa, ev, out);
                    }
                    ev.push(Event::Leave);
                }
            }
        }
    }

    /// Events of deserializing `inst` from a buffer at offset 0 into an arena at `arena_base`
    /// (fields with the placement bit into accelerator memory at `accel_base`).
    pub fn decode(&self, inst: &Instance, arena_base: u64, accel_base: u64) -> Vec<Event> {
        let mut arena = Arena::new(arena_base, accel_base);
        let alloc = self.alloc(inst, &mut arena, Region::Message);
        let mut ev = vec![Event::MessageBegin { direction: Direction::Decode, format: self.format, type_id: inst.ty as u32 }];
        let mut input = 0u64;
        self.decode_rec(inst, &alloc, &mut ev, &mut input);
        ev.push(Event::MessageEnd { wire_bytes: inst.wire_bytes() });
        ev
    }

    fn decode_rec(&self, inst: &Instance, a: &Alloc, ev: &mut Vec<Event>, input: &mut u64) {
        let def = &self.proto.messages[inst.ty];
        let (slots, _) = def.layout();
        for (k, fv) in inst.fields.iter().enumerate() {
            let ty = def.fields[fv.field].ty;
            let op = op_of(ty);
            let (addr, region) = a.data[k];
            let slot_addr = a.record + u64::from(slots[fv.field]);
            let head = match &fv.value {
                Value::Scalar { wire_bytes, .. } => fv.tag_bytes + wire_bytes,
                Value::Bytes { len, len_bytes } => fv.tag_bytes + len_bytes + len,
                Value::Message { len_bytes, .. } => fv.tag_bytes + len_bytes,
            };
            ev.push(Event::FieldRead { region: Region::Buffer, addr: *input, bytes: head });
            *input += u64::from(head);
            ev.push(Event::SchemaRead { kind: op, addr: a.schema + k as u64 * u64::from(SCHEMA_ENTRY_BYTES), size: SCHEMA_ENTRY_BYTES });
            match &fv.value {
                Value::Scalar { wire_bytes, .. } => {
                    ev.push(Event::Convert { op, bytes: *wire_bytes });
                    ev.push(Event::FieldWrite { region, addr, bytes: ty.slot_bytes() });
                }
                Value::Bytes { len, .. } => {
                    ev.push(Event::Convert { op, bytes: *len });
                    ev.push(Event::FieldWrite { region, addr, bytes: *len });
                    ev.push(Event::FieldWrite { region: Region::Message, addr: slot_addr, bytes: 8 });
                }
                Value::Message { inst: sub, .. } => {
                    ev.push(Event::Convert { op, bytes: 0 });
                    ev.push(Event::FieldWrite { region: Region::Message, addr: slot_addr, bytes: 8 });
                    ev.push(Event::Enter { type_id: sub.ty as u32 });
                    if let Some(sa) = &a.subs[k] {
                        self.decode_rec(sub, sa, ev, input);
                    }
                    ev.push(Event::Leave);
                }
            }
        }
    }
}
