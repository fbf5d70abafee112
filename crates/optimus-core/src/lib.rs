//! optimus-core: the engine — messages and the codecs that transform them.
//!
//! Engine v2 ([`engine`]) keeps a message as a [`Record`]: bytes in an [`Arena`] laid out by
//! its type's op table, whose presence words are the *instance schema* that setters fill and
//! the walkers visit; strings and bytes are views of the input. Its walkers read and write
//! the protobuf wire format and proto3 JSON with one `match` on each field's op.
//!
//! The reflective [`Message`] (value slots plus a presence bitmap) and its codecs [`binary`]
//! (deterministic output, byte-identical to Google protobuf's) and [`json`] (the proto3 JSON
//! mapping with every well-known type) stay beside it for traces, the well-known types' JSON
//! forms and the RPC layer's typed services; the two give the same bytes, text and errors.
//! Decoders return an [`Error`] that names the field path and byte offset; they never panic
//! on input, never loop, and bound nesting and allocation.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod binary;
mod build;
pub mod convert;
pub mod engine;
mod error;
pub mod json;
mod message;
pub mod placement;
mod record;
pub mod text;
pub mod thrift;
mod value;
mod view;

pub use error::{DecodeError, DecodeErrorKind, Error, JsonError};
pub use message::{Message, SetFields};
pub use optimus_schema as schema;
pub use record::{copy_short, Arena};
pub use value::{List, Map, MapKey, Value};
pub use view::{FieldRef, Record};

/// Nesting depth that decoders accept unless told otherwise (as Google protobuf).
pub const DEFAULT_DEPTH_LIMIT: u32 = 100;
