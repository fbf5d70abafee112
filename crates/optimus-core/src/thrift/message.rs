//! Thrift message envelopes: the header an RPC call or reply starts with (name, type,
//! sequence id) before its `_args` or `_result` struct, in TBinaryProtocol (strict: the
//! version word `0x8001` and the type, then the name and the sequence id; the old non-strict
//! form is read too) and TCompactProtocol (protocol id `0x82`, version 1 and the type in one
//! byte, the sequence id as a varint, then the name).

use optimus_schema::{MessageId, SchemaSet};

use super::protocol::{BinaryReader, CompactReader, Cursor, Reader};
use super::Protocol;
use crate::binary::{fail, Fail};
use crate::error::DecodeErrorKind;
use crate::Error;

/// What a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    /// A call: the function's `_args` struct follows.
    Call = 1,
    /// A reply: the function's `_result` struct follows.
    Reply = 2,
    /// An exception: a `TApplicationException` struct follows.
    Exception = 3,
    /// A call that expects no reply.
    Oneway = 4,
}

/// A message envelope's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageHeader {
    /// The function's name.
    pub name: String,
    /// Call, reply, exception or oneway.
    pub kind: MessageKind,
    /// The sequence id that pairs a reply with its call.
    pub seqid: i32,
}

const BINARY_VERSION: u32 = 0x8001_0000;
const COMPACT_PROTOCOL_ID: u8 = 0x82;
const COMPACT_VERSION: u8 = 1;

fn kind_of(code: u8, at: usize) -> Result<MessageKind, Fail> {
    Ok(match code {
        1 => MessageKind::Call,
        2 => MessageKind::Reply,
        3 => MessageKind::Exception,
        4 => MessageKind::Oneway,
        _ => {
            return Err(fail(
                at,
                DecodeErrorKind::ThriftMessage(format!("invalid Thrift message type {code}")),
            ))
        }
    })
}

#[cold]
fn bad(at: usize, why: String) -> Fail {
    fail(at, DecodeErrorKind::ThriftMessage(why))
}

/// Reads a message header from the start of `input`: the header and the offset of the
/// struct that follows it.
///
/// # Errors
/// [`Error::Decode`] with the byte offset: truncated input, a bad version or protocol id, an
/// unknown message type, a name that is not UTF-8.
pub fn read_message_header(
    input: &[u8],
    protocol: Protocol,
) -> Result<(MessageHeader, usize), Error> {
    let c = Cursor { buf: input, pos: 0 };
    let utf8 = |bytes: &[u8], at: usize| {
        std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(|_| fail(at, DecodeErrorKind::InvalidUtf8))
    };
    let read = || -> Result<(MessageHeader, usize), Fail> {
        match protocol {
            Protocol::Binary => {
                let mut r = BinaryReader { c };
                let word = r.i32()?;
                if word < 0 {
                    let version = word as u32 & 0xffff_0000;
                    if version != BINARY_VERSION {
                        return Err(bad(0, format!("bad TBinaryProtocol version {version:#x}")));
                    }
                    let kind = kind_of(word as u8, 3)?;
                    let at = r.pos();
                    let name = utf8(r.binary()?, at)?;
                    let seqid = r.i32()?;
                    Ok((MessageHeader { name, kind, seqid }, r.pos()))
                } else {
                    // Non-strict: the name's length, the name, the type byte, the sequence id.
                    r.c.pos = 0;
                    let name = utf8(r.binary()?, 0)?;
                    let at = r.pos();
                    let kind = kind_of(r.byte()? as u8, at)?;
                    let seqid = r.i32()?;
                    Ok((MessageHeader { name, kind, seqid }, r.pos()))
                }
            }
            Protocol::Compact => {
                let mut r = CompactReader {
                    c,
                    pending_bool: None,
                };
                let id = r.byte()? as u8;
                if id != COMPACT_PROTOCOL_ID {
                    return Err(bad(0, format!("bad TCompactProtocol id {id:#x}")));
                }
                let vt = r.byte()? as u8;
                if vt & 0x1f != COMPACT_VERSION {
                    return Err(bad(
                        1,
                        format!("bad TCompactProtocol version {}", vt & 0x1f),
                    ));
                }
                let kind = kind_of(vt >> 5, 1)?;
                let seqid = r.c.varint()? as u32 as i32;
                let at = r.pos();
                let name = utf8(r.binary()?, at)?;
                Ok((MessageHeader { name, kind, seqid }, r.pos()))
            }
        }
    };
    read().map_err(Error::Decode)
}

/// Appends `header` in `protocol` (TBinaryProtocol's strict form).
pub fn write_message_header(header: &MessageHeader, protocol: Protocol, out: &mut Vec<u8>) {
    match protocol {
        Protocol::Binary => {
            out.extend_from_slice(&(BINARY_VERSION | header.kind as u32).to_be_bytes());
            out.extend_from_slice(&(header.name.len() as i32).to_be_bytes());
            out.extend_from_slice(header.name.as_bytes());
            out.extend_from_slice(&header.seqid.to_be_bytes());
        }
        Protocol::Compact => {
            out.push(COMPACT_PROTOCOL_ID);
            out.push(COMPACT_VERSION | (header.kind as u8) << 5);
            let mut v = header.seqid as u32;
            while v >= 0x80 {
                out.push(v as u8 | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
            let mut n = header.name.len();
            while n >= 0x80 {
                out.push(n as u8 | 0x80);
                n >>= 7;
            }
            out.push(n as u8);
            out.extend_from_slice(header.name.as_bytes());
        }
    }
}

/// The struct a message of `service` (`program.Service` or a bare name) with this header
/// carries: the function's `_args` for a call or oneway call, its `_result` for a reply;
/// `None` for an exception (Apache Thrift's `TApplicationException`, which is not in the
/// schema) or a function the service (and the services it extends) does not declare.
pub fn message_struct(
    schema: &SchemaSet,
    service: &str,
    header: &MessageHeader,
) -> Option<MessageId> {
    let mut name = Some(service.to_string());
    let mut hops = 0;
    while let Some(svc) = name.take() {
        let s = schema.service_by_name(&svc).or_else(|| {
            // A bare service name: the first program that declares it.
            let programs = &schema.thrift()?.programs;
            programs
                .iter()
                .find_map(|p| schema.service_by_name(&format!("{}.{svc}", p.name)))
        })?;
        if let Some(m) = s.methods.iter().find(|m| m.name == header.name) {
            return match header.kind {
                MessageKind::Call | MessageKind::Oneway => Some(m.input),
                MessageKind::Reply => Some(m.output),
                MessageKind::Exception => None,
            };
        }
        hops += 1;
        if hops > 64 {
            return None;
        }
        name = schema.thrift().and_then(|t| {
            t.programs
                .iter()
                .flat_map(|p| &p.services)
                .find(|ts| ts.full_name == s.full_name)
                .and_then(|ts| ts.extends.clone())
        });
    }
    None
}
