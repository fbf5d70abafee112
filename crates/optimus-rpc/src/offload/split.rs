//! The record work of DT, wherever it runs: target-aware deserialization (decode a request
//! into the NIC's record and copy its host fields into the app's), kernels on record fields,
//! forwarding request fields into the reply, and what each side merges into a reply before
//! it is encoded (co-serialization).

use optimus_core::binary::DecodeOptions;
use optimus_core::{Arena, FieldRef, Record};
use optimus_schema::{MessageId, SchemaSet, Shape};

use super::placement::PlacementTables;
use super::wire::{put_field, Piece, Span, LEN};
use crate::kernels::{open_chain, seal_chain, KernelError, Side};
use crate::typed::Failure;

use super::MethodDt;

/// Which memory a field lives in under `placement` (`None`: everything is host memory).
#[inline]
pub(crate) fn on_nic(placement: Option<&PlacementTables>, id: MessageId, index: usize) -> bool {
    placement.is_some_and(|p| p.is_nic(id, index))
}

/// Decodes `wire` as `m`'s request. With a placement that puts fields of the request type
/// in NIC memory, the whole request is decoded into `nic` (the NIC's record) and the host
/// fields are copied, shallowly, into a record of the same type in `host`, the only one the
/// app gets: the NIC-resident fields, often the bulky ones, are never copied. Then opens the
/// request's kernel fields, each in the memory it lives in.
///
/// # Errors
/// A request that does not decode, or a kernel field that does not open.
#[allow(clippy::too_many_arguments)]
pub(crate) fn decode_request<'g>(
    schema: &'g SchemaSet,
    m: &MethodDt,
    wire: &'g [u8],
    host: &'g Arena,
    nic: &'g Arena,
    placement: Option<&PlacementTables>,
    host_wire: Option<&'g [u8]>,
    opts: &DecodeOptions,
    kernel_limit: usize,
) -> Result<(Record<'g>, Option<Record<'g>>), Failure> {
    let split = placement.filter(|p| p.nic_fields(m.input).next().is_some());
    let decode = |bytes: &'g [u8], arena| {
        optimus_core::engine::decode(schema, m.input, bytes, arena, opts)
            .map_err(|e| Failure::bad_request(format!("bad request: {e}")))
    };
    let (req, nic_req) = match (host_wire, split) {
        // Split at the wire: only the host fields' bytes are decoded.
        (Some(bytes), _) => (decode(bytes, host)?, None),
        (None, None) => (decode(wire, host)?, None),
        (None, Some(p)) => {
            let full = decode(wire, nic)?;
            let req = Record::new_in(schema, m.input, host);
            for index in full.set_fields() {
                if !p.is_nic(m.input, index) {
                    copy_field(full, req, host, index).map_err(internal)?;
                }
            }
            (req, Some(full))
        }
    };
    for (index, chain) in m.kernels.on(Side::Request) {
        if host_wire.is_some() && on_nic(placement, m.input, index) {
            continue; // opened at the wire
        }
        let (rec, arena) = match nic_req {
            Some(n) if on_nic(placement, m.input, index) => (n, nic),
            _ => (req, host),
        };
        map_bytes(rec, arena, index, |b| open_chain(chain, b, kernel_limit)).map_err(|e| {
            Failure::bad_request(format!(
                "bad request: {}{e}",
                field_name(schema, m.input, index)
            ))
        })?;
    }
    Ok((req, nic_req))
}

/// Merges into `reply` what the side running this step owns: the forwarded fields the
/// application left unset (`nic_side`: the NIC-resident ones, from NIC memory; else the host
/// ones), and, on the NIC side or when DT runs on the app core (`seal`), the sealed kernel
/// fields. With a request split at the wire (`raw`), NIC-resident fields forwarded into
/// NIC-resident fields are left to [`forward_raw`].
///
/// # Errors
/// A kernel that fails to seal.
#[allow(clippy::too_many_arguments)]
pub(crate) fn merge_reply<'g>(
    schema: &'g SchemaSet,
    m: &MethodDt,
    reply: Record<'g>,
    request: (Record<'g>, Option<Record<'g>>),
    arenas: (&'g Arena, &'g Arena),
    placement: Option<&PlacementTables>,
    nic_side: Option<bool>,
    seal: bool,
    raw: bool,
) -> Result<(), Failure> {
    let (host, nic) = arenas;
    for &(from, to) in &m.forward {
        let to_nic = on_nic(placement, m.output, to);
        if nic_side.is_some_and(|side| side != to_nic) || reply.has(to) {
            continue;
        }
        if raw && to_nic && on_nic(placement, m.input, from) {
            continue; // forwarded at the wire (`forward_raw`)
        }
        let src = match request.1 {
            Some(n) if on_nic(placement, m.input, from) => n,
            _ => request.0,
        };
        copy_between(src, from, reply, to, if to_nic { nic } else { host }).map_err(internal)?;
    }
    if seal {
        for (index, chain) in m.kernels.on(Side::Reply) {
            let arena = if on_nic(placement, m.output, index) {
                nic
            } else {
                host
            };
            map_bytes(reply, arena, index, |b| seal_chain(chain, b)).map_err(|e| {
                Failure::bad_request(format!("reply: {}{e}", field_name(schema, m.output, index)))
            })?;
        }
    }
    Ok(())
}

fn internal(e: optimus_core::Error) -> Failure {
    Failure::bad_request(format!("internal: {e}"))
}

fn field_name(schema: &SchemaSet, id: MessageId, index: usize) -> String {
    let ty = schema.message(id);
    format!("{}.{}", ty.full_name, ty.fields[index].name)
}

/// Sets field `index` of `to` to the value(s) of the same field of `from` (same type).
fn copy_field<'g>(
    from: Record<'g>,
    to: Record<'g>,
    arena: &'g Arena,
    index: usize,
) -> Result<(), optimus_core::Error> {
    copy_between(from, index, to, index, arena)
}

/// Sets field `to_index` of `to` to the value(s) of field `from_index` of `from`; the two
/// fields have the same kind and cardinality (checked when the forward was declared).
fn copy_between<'g>(
    from: Record<'g>,
    from_index: usize,
    to: Record<'g>,
    to_index: usize,
    arena: &'g Arena,
) -> Result<(), optimus_core::Error> {
    let table = &from.schema().message(from.type_id()).table;
    if table.entries[from_index].op.shape() == Shape::Single {
        if let Some(v) = from.get(from_index) {
            to.set(to_index, v)?;
        }
    } else {
        for v in from.elements(from_index) {
            to.push(arena, to_index, v)?;
        }
    }
    Ok(())
}

/// Replaces the bytes of field `index` of `rec` (one, or each of a repeated field's) with `f`
/// of them, the results copied into `arena`; the error names the element of a repeated field.
fn map_bytes<'g>(
    rec: Record<'g>,
    arena: &'g Arena,
    index: usize,
    f: impl Fn(&[u8]) -> Result<Vec<u8>, KernelError>,
) -> Result<(), String> {
    let single = rec.schema().message(rec.type_id()).table.entries[index]
        .op
        .shape()
        == Shape::Single;
    if single {
        if let Some(FieldRef::Bytes(b)) = rec.get(index) {
            let v = f(b).map_err(|e| format!(": {e}"))?;
            rec.set(index, FieldRef::Bytes(arena.alloc_bytes(&v)))
                .map_err(|e| format!(": {e}"))?;
        }
        return Ok(());
    }
    let mut out = Vec::new();
    for (i, v) in rec.elements(index).enumerate() {
        if let FieldRef::Bytes(b) = v {
            out.push(f(b).map_err(|e| format!("[{i}]: {e}"))?);
        }
    }
    rec.clear(index).map_err(|e| format!(": {e}"))?;
    for v in out {
        rec.push(arena, index, FieldRef::Bytes(arena.alloc_bytes(&v)))
            .map_err(|e| format!(": {e}"))?;
    }
    Ok(())
}

/// Co-serialization at the wire for one method under one placement version, worked out
/// once: the forwards whose bytes pass at the wire (NIC-resident request fields into
/// NIC-resident reply fields), in reply field-number order, and whether the NIC has record
/// work to merge before encoding ([`merge_reply`]: a host field forwarded into a
/// NIC-resident one, or reply kernels to seal).
pub(crate) struct RawPlan {
    /// The placement version it was worked out for.
    pub(crate) version: u64,
    pub(crate) merge: bool,
    forwards: Vec<RawForward>,
}

/// A forward at the wire: reply field `to`, request field number `from_number` and reply
/// field number `to_number`; `sealed` when reply kernels run on the field.
struct RawForward {
    to: usize,
    from_number: u32,
    to_number: u32,
    sealed: bool,
}

impl RawPlan {
    pub(crate) fn new(schema: &SchemaSet, m: &MethodDt, placement: &PlacementTables) -> Self {
        let (input, output) = (schema.message(m.input), schema.message(m.output));
        let p = Some(placement);
        let mut merge = m.kernels.on(Side::Reply).next().is_some();
        let mut forwards = Vec::new();
        // `m.forward` is in reply field-number order (`RecordService::forward` keeps it so).
        for &(from, to) in &m.forward {
            if !on_nic(p, m.output, to) {
                continue;
            }
            if !on_nic(p, m.input, from) {
                merge = true;
                continue;
            }
            forwards.push(RawForward {
                to,
                from_number: input.fields[from].number,
                to_number: output.fields[to].number,
                sealed: m.kernels.on(Side::Reply).any(|(i, _)| i == to),
            });
        }
        Self {
            version: placement.version,
            merge,
            forwards,
        }
    }
}

/// Co-serialization at the wire: appends to `pieces`, in reply field-number order, the
/// NIC-resident request fields `plan` forwards into NIC-resident reply fields the
/// application left unset, found by their `spans` in `nic_wire`: as they came when the
/// numbers agree and no kernel seals them, else re-tagged or sealed by the reply's kernels
/// into `scratch`.
///
/// # Errors
/// A kernel that fails to seal.
pub(crate) fn forward_raw(
    schema: &SchemaSet,
    m: &MethodDt,
    plan: &RawPlan,
    reply: Record<'_>,
    (nic_wire, spans): (&[u8], &[Span]),
    scratch: &mut Vec<u8>,
    pieces: &mut Vec<Piece>,
) -> Result<(), Failure> {
    for fw in plan.forwards.iter().filter(|fw| !reply.has(fw.to)) {
        let (fnum, tnum) = (fw.from_number, fw.to_number);
        let chain = fw
            .sealed
            .then(|| m.kernels.on(Side::Reply).find(|(i, _)| *i == fw.to))
            .flatten()
            .map(|(_, c)| c);
        for f in spans.iter().filter(|f| f.number == fnum) {
            let value = &nic_wire[f.value_start..f.end];
            let start = scratch.len();
            match chain {
                Some(chain) if f.wire_type == LEN => {
                    let sealed = seal_chain(chain, value).map_err(|e| {
                        Failure::bad_request(format!(
                            "reply: {}: {e}",
                            field_name(schema, m.output, fw.to)
                        ))
                    })?;
                    put_field(scratch, tnum, LEN, &sealed);
                }
                _ if fnum == tnum => {
                    pieces.push(Piece {
                        number: tnum,
                        in_scratch: false,
                        range: f.start..f.end,
                    });
                    continue;
                }
                _ => put_field(scratch, tnum, f.wire_type, value),
            }
            pieces.push(Piece {
                number: tnum,
                in_scratch: true,
                range: start..scratch.len(),
            });
        }
    }
    Ok(())
}
