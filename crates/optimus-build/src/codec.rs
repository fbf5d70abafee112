//! A tonic [`Codec`] for optimus messages, generated and dynamic (feature `tonic`).
//!
//! A message lives in an arena that tonic cannot own, so what crosses tonic is bytes: a
//! message to send is [`Encoded`] (its wire bytes, written once by the engine's encoder) and
//! a received one is [`Received`] (the frame's bytes, shared, not copied), which the handler
//! views in an arena of its own — zero-copy, strings and bytes pointing into the frame:
//!
//! ```ignore
//! fn call(&mut self, req: tonic::Request<Received<Flat<'static>>>) -> ... {
//!     let arena = Arena::new();
//!     let flat = req.get_ref().view(&arena).map_err(codec::invalid_argument)?;
//!     let reply = Flat::new_in(&arena);
//!     reply.set_name(flat.name());
//!     Ok(tonic::Response::new(Encoded::new(&reply)))
//! }
//! ```
//!
//! Malformed bytes are reported where the message is viewed (the decode runs there, once),
//! not by the codec.

use std::marker::PhantomData;

use bytes::{Buf, BufMut, Bytes};
use optimus_core::schema::{MessageId, SchemaSet};
use optimus_core::{engine, Arena, Error, Record};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::Status;

use crate::runtime::{GeneratedMessage, MessageFamily};

/// The family of dynamic messages: records of a schema loaded at run time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dynamic;

/// A message to send: its wire bytes.
pub struct Encoded<M> {
    bytes: Vec<u8>,
    _m: PhantomData<fn() -> M>,
}

impl<M> std::fmt::Debug for Encoded<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoded")
            .field("len", &self.bytes.len())
            .finish()
    }
}

impl<M> Encoded<M> {
    /// The wire bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl<M: MessageFamily> Encoded<M> {
    /// `msg`'s wire bytes, encoded now.
    pub fn new(msg: &M::View<'_>) -> Encoded<M> {
        Encoded {
            bytes: msg.encode_to_vec(),
            _m: PhantomData,
        }
    }
}

impl Encoded<Dynamic> {
    /// `rec`'s wire bytes, encoded now.
    pub fn from_record(rec: Record<'_>) -> Encoded<Dynamic> {
        let mut bytes = Vec::new();
        engine::encode(rec, &mut bytes);
        Encoded {
            bytes,
            _m: PhantomData,
        }
    }
}

/// A received message: the frame's wire bytes, to be viewed in an arena.
pub struct Received<M> {
    bytes: Bytes,
    _m: PhantomData<fn() -> M>,
}

impl<M> std::fmt::Debug for Received<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Received")
            .field("len", &self.bytes.len())
            .finish()
    }
}

impl<M> Received<M> {
    /// The wire bytes.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
}

impl<M: MessageFamily> Received<M> {
    /// The message, decoded into `arena`; its strings and bytes are views of the frame.
    ///
    /// # Errors
    /// As [`engine::decode`]: the bytes are not a message of the type.
    pub fn view<'a>(&'a self, arena: &'a Arena) -> Result<M::View<'a>, Error> {
        <M::View<'a> as GeneratedMessage<'a>>::decode(&self.bytes, arena)
    }
}

impl Received<Dynamic> {
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

/// Sends [`Encoded<E>`] and receives [`Received<D>`]: what tonic's generated clients and
/// servers (or hand-written ones) take as their codec.
pub struct OptimusCodec<E, D> {
    _m: PhantomData<fn() -> (E, D)>,
}

impl<E, D> Default for OptimusCodec<E, D> {
    fn default() -> Self {
        OptimusCodec { _m: PhantomData }
    }
}

impl<E, D> std::fmt::Debug for OptimusCodec<E, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OptimusCodec")
    }
}

impl<E: 'static, D: 'static> Codec for OptimusCodec<E, D> {
    type Encode = Encoded<E>;
    type Decode = Received<D>;
    type Encoder = OptimusEncoder<E>;
    type Decoder = OptimusDecoder<D>;

    fn encoder(&mut self) -> Self::Encoder {
        OptimusEncoder { _m: PhantomData }
    }

    fn decoder(&mut self) -> Self::Decoder {
        OptimusDecoder { _m: PhantomData }
    }
}

/// [`OptimusCodec`]'s encoder: copies the wire bytes into the frame.
pub struct OptimusEncoder<M> {
    _m: PhantomData<fn() -> M>,
}

impl<M> Encoder for OptimusEncoder<M> {
    type Item = Encoded<M>;
    type Error = Status;

    fn encode(&mut self, item: Encoded<M>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item.bytes);
        Ok(())
    }
}

/// [`OptimusCodec`]'s decoder: takes the frame's bytes (shared, no copy where the frame is
/// one chunk).
pub struct OptimusDecoder<M> {
    _m: PhantomData<fn() -> M>,
}

impl<M> Decoder for OptimusDecoder<M> {
    type Item = Received<M>;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Received<M>>, Status> {
        let bytes = src.copy_to_bytes(src.remaining());
        Ok(Some(Received {
            bytes,
            _m: PhantomData,
        }))
    }
}
