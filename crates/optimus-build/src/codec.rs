//! A tonic [`Codec`] for optimus messages, generated and dynamic (feature `tonic`).
//!
//! A message lives in an arena that tonic cannot own, so what crosses tonic is bytes: a
//! message to send is [`Encoded`] (its wire bytes, written once by the engine's encoder, from
//! a generated message or a dynamic record) and a received one is [`Received`] (the frame's
//! bytes, shared, not copied), which the handler views in an arena of its own as the type it
//! expects — zero-copy, strings and bytes pointing into the frame:
//!
//! ```text
//! fn call(&mut self, req: tonic::Request<Received>) -> ... {
//!     let arena = Arena::new();
//!     let flat = req.get_ref().view::<Flat>(&arena).map_err(codec::invalid_argument)?;
//!     let reply = Flat::new_in(&arena);
//!     reply.set_name(flat.name());
//!     Ok(tonic::Response::new(Encoded::new(&reply)))
//! }
//! ```
//!
//! The codec carries no type (a generic one would carry the view's lifetime into tonic's
//! futures): the handler names it when it views the bytes, and malformed bytes are reported
//! there (the decode runs once, in the handler's arena), not by the codec.

use bytes::{Buf, BufMut, Bytes};
use optimus_core::schema::{MessageId, SchemaSet};
use optimus_core::{engine, Arena, Error, Record};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::Status;

use crate::runtime::GeneratedMessage;

/// A message to send: its wire bytes.
#[derive(Clone, Default)]
pub struct Encoded {
    bytes: Vec<u8>,
}

impl std::fmt::Debug for Encoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoded")
            .field("len", &self.bytes.len())
            .finish()
    }
}

impl Encoded {
    /// `msg`'s wire bytes, encoded now.
    pub fn new<'a>(msg: &impl GeneratedMessage<'a>) -> Encoded {
        Encoded {
            bytes: msg.encode_to_vec(),
        }
    }

    /// `rec`'s wire bytes, encoded now.
    pub fn from_record(rec: Record<'_>) -> Encoded {
        let mut bytes = Vec::new();
        engine::encode(rec, &mut bytes);
        Encoded { bytes }
    }

    /// Bytes already encoded (sent as they are).
    pub fn from_bytes(bytes: Vec<u8>) -> Encoded {
        Encoded { bytes }
    }

    /// The wire bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// A received message: the frame's wire bytes, to be viewed in an arena.
#[derive(Clone, Default)]
pub struct Received {
    bytes: Bytes,
}

impl std::fmt::Debug for Received {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Received")
            .field("len", &self.bytes.len())
            .finish()
    }
}

impl Received {
    /// The wire bytes.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The message as generated type `M`, decoded into `arena`; its strings and bytes are
    /// views of the frame.
    ///
    /// # Errors
    /// As [`engine::decode`]: the bytes are not a message of the type.
    pub fn view<'a, M: GeneratedMessage<'a>>(&'a self, arena: &'a Arena) -> Result<M, Error> {
        M::decode(&self.bytes, arena)
    }

    /// The message as a record of type `id` of `schema`, decoded into `arena`.
    ///
    /// # Errors
    /// As [`engine::decode`].
    pub fn record<'a>(
        &'a self,
        schema: &'a SchemaSet,
        id: MessageId,
        arena: &'a Arena,
    ) -> Result<Record<'a>, Error> {
        engine::decode(schema, id, &self.bytes, arena, &Default::default())
    }
}

/// The status a handler answers a message it cannot decode with.
pub fn invalid_argument(e: Error) -> Status {
    Status::invalid_argument(e.to_string())
}

/// Sends [`Encoded`] and receives [`Received`]: the codec for tonic clients and servers
/// (`tonic::server::Grpc::new(OptimusCodec)`, `tonic::client::Grpc::unary(.., OptimusCodec)`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OptimusCodec;

impl Codec for OptimusCodec {
    type Encode = Encoded;
    type Decode = Received;
    type Encoder = OptimusCodec;
    type Decoder = OptimusCodec;

    fn encoder(&mut self) -> Self::Encoder {
        OptimusCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        OptimusCodec
    }
}

impl Encoder for OptimusCodec {
    type Item = Encoded;
    type Error = Status;

    fn encode(&mut self, item: Encoded, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item.bytes);
        Ok(())
    }
}

impl Decoder for OptimusCodec {
    type Item = Received;
    type Error = Status;

    /// Takes the frame's bytes (shared, no copy where the frame is one chunk).
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Received>, Status> {
        Ok(Some(Received {
            bytes: src.copy_to_bytes(src.remaining()),
        }))
    }
}
