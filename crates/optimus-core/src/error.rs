//! The engine's one error type: decode errors carry the field path and byte offset.

use std::fmt;

/// What went wrong while decoding, encoding or building a message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Input bytes or text are malformed.
    #[error("{0}")]
    Decode(Box<DecodeError>),
    /// A message cannot be written in the requested format (e.g. a Timestamp out of range
    /// for JSON).
    #[error("{path}: {why}")]
    Encode {
        /// Field path of the value.
        path: String,
        /// Why it cannot be written.
        why: String,
    },
    /// A setter got a value of the wrong type.
    #[error("{field}: expected a {expected} value")]
    TypeMismatch {
        /// The field (`Type.field`).
        field: String,
        /// The type it holds.
        expected: String,
    },
    /// No field has this name or index.
    #[error("{message} has no field {field}")]
    NoSuchField {
        /// The message type.
        message: String,
        /// The name or index asked for.
        field: String,
    },
}

/// The kinds of JSON input that do not read, so a caller can tell them apart (an unknown
/// field from a malformed number); each keeps its detail in its text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonError {
    /// Not JSON text: an unterminated string, a bad escape, a token where another was due,
    /// input that ends inside a value.
    #[error("{0}")]
    Syntax(String),
    /// A member that names no field of its message (unknown fields are not being ignored).
    #[error("no field \"{field}\" in {message}")]
    UnknownField {
        /// The member's name.
        field: String,
        /// The message type's full name.
        message: String,
    },
    /// A member given twice.
    #[error("duplicate field \"{0}\"")]
    DuplicateField(String),
    /// A second member of one oneof.
    #[error("oneof {0} has more than one field set")]
    OneofConflict(String),
    /// A value that is not one of its field's: of another JSON type, out of range, bad base64,
    /// an enum name the enum lacks, a malformed well-known type, a bad map key.
    #[error("{0}")]
    Value(String),
    /// An `Any` whose type URL names no message of the schema.
    #[error("unknown type in Any: \"{0}\"")]
    UnknownAnyType(String),
}

/// A decode failure: where (field path and byte offset) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    /// Byte offset into the input where the problem was found.
    pub offset: usize,
    /// Path from the root message to the field being decoded, outermost first
    /// (`Mixed`, `geo`, `lat`); built as the error propagates out.
    pub path: Vec<String>,
    /// What was wrong.
    pub kind: DecodeErrorKind,
}

/// The kinds of malformed input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// Input ended inside a value.
    #[error("truncated: needed {needed} more bytes, {remaining} left")]
    Truncated {
        /// Bytes still needed (at least).
        needed: usize,
        /// Bytes left in the input.
        remaining: usize,
    },
    /// A varint ran past 10 bytes (or a tag past 5).
    #[error("varint longer than {0} bytes")]
    VarintTooLong(usize),
    /// A tag with field number 0 or above 2^29-1.
    #[error("invalid field number {0}")]
    InvalidFieldNumber(u64),
    /// Wire type 6 or 7.
    #[error("invalid wire type {0}")]
    InvalidWireType(u32),
    /// A known field arrived with a wire type it cannot have.
    #[error("expected wire type {expected}, got {found}")]
    WrongWireType {
        /// The wire type the field uses.
        expected: u32,
        /// The wire type found.
        found: u32,
    },
    /// An end-group tag that closes no open group, or the wrong one.
    #[error("unexpected end-group tag for field {0}")]
    UnexpectedEndGroup(u32),
    /// A group was not closed before its enclosing input ended.
    #[error("group {0} is not closed")]
    UnterminatedGroup(u32),
    /// A length prefix runs past the end of the input.
    #[error("length {len} runs past the end ({remaining} left)")]
    LengthOverrun {
        /// The declared length.
        len: u64,
        /// Bytes left.
        remaining: usize,
    },
    /// Messages nested deeper than the limit.
    #[error("nesting deeper than {0} levels")]
    TooDeep(u32),
    /// A string field holds bytes that are not UTF-8.
    #[error("string is not valid UTF-8")]
    InvalidUtf8,
    /// A packed field's length is not a multiple of its element size.
    #[error("packed length {len} is not a multiple of {size}")]
    PackedLength {
        /// Declared length.
        len: usize,
        /// Element size.
        size: usize,
    },
    /// Decoding would allocate more than the memory limit.
    #[error("message memory would exceed the limit of {0} bytes")]
    MemoryLimit(usize),
    /// A required field is missing.
    #[error("missing required field {0}")]
    MissingRequired(String),
    /// JSON input (proto3 JSON or Thrift's JSON form) that does not read: [`JsonError`] says
    /// which kind of problem.
    #[error("{0}")]
    Json(JsonError),
    /// Protobuf text format that does not read; the text says where (`line:column`) and why.
    #[error("{0}")]
    Text(String),
    /// A map entry whose key cannot be a map key.
    #[error("map key of a kind that cannot be a key")]
    InvalidMapKey,
    /// Bytes follow the end of the message (a delimited stream or JSON document).
    #[error("trailing data")]
    TrailingData,
    /// A Thrift type code that names no type.
    #[error("invalid Thrift type code {0}")]
    InvalidThriftType(u8),
    /// A Thrift container's element, key or value type is not the declared one.
    #[error("{part} type {found}, expected {expected}")]
    ThriftContainerType {
        /// `list element`, `map key`, ...
        part: &'static str,
        /// The declared type's code.
        expected: u8,
        /// The code on the wire.
        found: u8,
    },
    /// A negative Thrift length or container size.
    #[error("negative length {0}")]
    NegativeLength(i64),
    /// A Thrift message header with a bad version, protocol id or message type.
    #[error("{0}")]
    ThriftMessage(String),
}

impl DecodeError {
    /// A new error at `offset` with an empty path.
    #[cold]
    pub fn new(offset: usize, kind: DecodeErrorKind) -> DecodeError {
        DecodeError {
            offset,
            path: Vec::new(),
            kind,
        }
    }

    /// The path as `Root.field.sub[3]`.
    pub fn path_string(&self) -> String {
        let mut out = String::new();
        for (i, seg) in self.path.iter().enumerate() {
            if i > 0 && !seg.starts_with('[') {
                out.push('.');
            }
            out.push_str(seg);
        }
        out
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "at byte {}: {}", self.offset, self.kind)
        } else {
            write!(
                f,
                "{} at byte {}: {}",
                self.path_string(),
                self.offset,
                self.kind
            )
        }
    }
}

impl std::error::Error for DecodeError {}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Error {
        Error::Decode(Box::new(e))
    }
}

impl Error {
    /// A decode error at `offset`.
    #[cold]
    pub fn decode(offset: usize, kind: DecodeErrorKind) -> Error {
        Error::Decode(Box::new(DecodeError::new(offset, kind)))
    }

    /// Prepends a path segment to a decode error as it propagates out of a field.
    #[cold]
    pub fn within(mut self, segment: impl Into<String>) -> Error {
        if let Error::Decode(d) = &mut self {
            d.path.insert(0, segment.into());
        }
        self
    }

    /// The decode error inside, if this is one.
    pub fn as_decode(&self) -> Option<&DecodeError> {
        match self {
            Error::Decode(d) => Some(d),
            _ => None,
        }
    }
}
