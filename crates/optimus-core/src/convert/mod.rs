//! Converters: a program of per-field ops (rename, drop, redact, hash, scale, map enum values,
//! set a default) compiled into a [`Plan`] that copies a record of one message type into a
//! record of another — the same type, or a type of another schema and IDL (a `.proto` message
//! to a `.thrift` struct) — converting each value on the way.
//!
//! ```text
//!  input ─decode─► source record ─Plan::apply─► target record ─encode─► output
//!                  (any format)     per source field: op + target entry    (any format)
//! ```
//!
//! A [`Program`] names fields by their path from the root message (`header.origin`; a path
//! through a repeated message field applies to every element). It comes from the library
//! (build the [`Rule`]s) or from TOML ([`Program::from_map_toml`] for a `--map` file,
//! [`Program::from_transform_toml`] for a `--transform` file; docs/convert.md). [`Plan::compile`]
//! resolves it once against the two schemas' op tables: each source entry gets an action
//! (drop, or copy to a target entry with a value conversion), type mismatches and unknown names
//! are reported then, naming both paths; [`Plan::apply`] then runs per message and fails only
//! on values that cannot convert (out of range, an enum value with no counterpart, bytes that
//! are not UTF-8 going to a string).

mod apply;
mod plan;
mod program;
#[cfg(test)]
mod tests;

pub use plan::Plan;
pub use program::{HashKind, Literal, Program, Rule};

/// Why a program does not compile against two schemas, or a value does not convert.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// A `--map` or `--transform` file is not what its format says.
    #[error("{file}: {why}")]
    Program {
        /// The file, or `program` for one built in code.
        file: String,
        /// What is wrong.
        why: String,
    },
    /// A rule or a field pair cannot be compiled: an unknown field, types that cannot
    /// convert, an op that does not apply to the field's type.
    #[error("{path}: {why}")]
    Compile {
        /// The source field path (`Mixed.header.origin`).
        path: String,
        /// What is wrong.
        why: String,
    },
    /// A value cannot be converted to its target field's type.
    #[error("{path}: {why}")]
    Value {
        /// The source field path of the value (`Mixed.items[2].price`).
        path: String,
        /// What is wrong.
        why: String,
    },
}
