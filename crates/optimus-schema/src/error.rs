//! The schema crate's one error type.

use std::path::PathBuf;

/// Why a schema could not be loaded or compiled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The `.proto` compiler (protox) rejected the input.
    #[error("{0}")]
    Compile(String),
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A schema file named on the command line or included exists neither as given nor
    /// under any include directory.
    #[error("{path}: not found (tried {})", tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NotFound {
        /// The name as given.
        path: PathBuf,
        /// Every path tried, in order.
        tried: Vec<PathBuf>,
    },
    /// A serialized `FileDescriptorSet` did not parse.
    #[error("invalid descriptor set: {0}")]
    DescriptorSet(String),
    /// The descriptors are inconsistent (a reference to an unknown type, a bad default, ...).
    #[error("{element}: {why}")]
    Invalid {
        /// The fully qualified name of the element at fault.
        element: String,
        /// What is wrong with it.
        why: String,
    },
}
