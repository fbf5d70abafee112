//! optimus-core: the engine — dynamic messages and the codecs that transform them.
//!
//! Messages ([`Message`]) are records laid out by a [`optimus_schema::SchemaSet`] type: value
//! slots plus a presence bitmap, the *instance schema* that setters fill and encoders walk.
//! Formats are table-driven over the same schema: [`binary`] is the protobuf wire format
//! (deterministic output, byte-identical to Google protobuf's), [`json`] the proto3 JSON
//! mapping with every well-known type. Decoders return an [`Error`] that names the field path
//! and byte offset; they never panic on input, never loop, and bound nesting and allocation.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod binary;
mod build;
pub mod engine;
mod error;
pub mod json;
mod message;
pub mod placement;
mod record;
mod value;
mod view;

pub use error::{DecodeError, DecodeErrorKind, Error};
pub use message::{Message, SetFields};
pub use optimus_schema as schema;
pub use record::Arena;
pub use value::{List, Map, MapKey, Value};
pub use view::{FieldRef, Record};

/// Nesting depth that decoders accept unless told otherwise (as Google protobuf).
pub const DEFAULT_DEPTH_LIMIT: u32 = 100;
