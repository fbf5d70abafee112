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
mod kind;
mod load;
mod types;

pub use error::SchemaError;
pub use kind::{Kind, WireType};
pub use load::DEFAULT_PROTO_NAME;
pub use types::*;
