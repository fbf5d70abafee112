//! The protobuf text format (`TextFormat`) on engine v2's arena records, as Google's C++.
//!
//! [`encode`] writes a [`Record`] the way `protoc --decode` and C++ `TextFormat::Printer` do:
//! fields in number order by their declared names (groups by their type name, extensions as
//! `[pkg.ext]`), enums by name, strings and bytes C-escaped, floats as their shortest
//! round-trip digits, maps as `key`/`value` entries sorted by key, an `Any` whose type the
//! schema has expanded as `[type.googleapis.com/T] { ... }`, and (with
//! [`TextOptions::print_unknown`]) unknown fields by number. [`decode`] reads everything
//! C++ `TextFormat::Parser` accepts into a record in an [`Arena`]; strings without escapes
//! are viewed in the input. Errors name the field path, the line and column, and the byte
//! offset; nesting is bounded by [`TextOptions::depth_limit`] and memory by the input's size.

mod read;
mod write;

use optimus_schema::{MessageId, SchemaSet};

use crate::record::Arena;
use crate::view::Record;
use crate::Error;

/// How text is written and read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextOptions {
    /// Write everything on one line (`a: 1 b { c: 2 }`, as C++ `ShortDebugString`) instead
    /// of one field a line, nested messages indented by two spaces.
    pub single_line: bool,
    /// Write the fields the schema does not know, by number (as C++
    /// `Printer::SetHideUnknownFields(false)`).
    pub print_unknown: bool,
    /// Deepest nesting of messages that decoding accepts and encoding writes.
    pub depth_limit: u32,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            single_line: false,
            print_unknown: false,
            depth_limit: crate::DEFAULT_DEPTH_LIMIT,
        }
    }
}

/// Writes `record` in the text format, appending to `out` (on error `out` holds a partial
/// text).
///
/// # Errors
/// [`Error::Encode`], naming the field, when messages nest deeper than
/// `opts.depth_limit`.
pub fn encode(record: Record<'_>, opts: &TextOptions, out: &mut String) -> Result<(), Error> {
    write::encode(record, opts, out)
}

/// Reads a message of type `id` from the text format into `arena`.
///
/// # Errors
/// [`Error::Decode`] with the field path, `line:column` and byte offset of the first
/// problem: a syntax error, an unknown field, enum value, extension or `Any` type, a value
/// out of its field's range, a string that is not UTF-8, a singular field or oneof given
/// twice, nesting deeper than `opts.depth_limit`, or more memory than the input's size
/// allows.
pub fn decode<'a>(
    schema: &'a SchemaSet,
    id: MessageId,
    text: &'a str,
    arena: &'a Arena,
    opts: &TextOptions,
) -> Result<Record<'a>, Error> {
    read::decode(schema, id, text, arena, opts)
}

#[cfg(test)]
mod tests;
