//! optimus-schema: `.proto` files compiled into one [`SchemaSet`] that every part of optimus uses.
//!
//! A `SchemaSet` holds every message type, field and enum of a set of `.proto` files (proto2 and
//! proto3, with imports and Google's well-known types), compiled once: fields sorted by number
//! with a dense number → field index, JSON names, kinds, cardinality, packing, oneofs, map
//! entries, defaults, extensions merged into their extendee, and each type's record [`Layout`].
//! It is built from `.proto` sources by [`protox`] or from a `FileDescriptorSet` that
//! `protoc -o` wrote. The engine (`optimus-core`), the RPC layer and the simulator all read it.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod compile;
mod error;
mod features;
mod kind;
mod load;
pub mod table;
pub mod thrift;
mod types;

pub use error::SchemaError;
pub use features::{
    EnumKind, Features, FieldPresence, JsonFormat, MessageEncoding, RepeatedEncoding,
    Utf8Validation,
};
pub use kind::{Kind, WireType};
pub use load::{descriptor_set_from_proto_files, descriptor_set_from_sources, DEFAULT_PROTO_NAME};
/// The descriptor set type that protox produces and `protoc -o` writes.
pub use prost_types::FileDescriptorSet;
pub use table::{Entry, EntryFlags, JsonForm, Op, Scalar, Shape, Table};
pub use types::*;
