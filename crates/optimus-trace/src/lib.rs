//! Trace vocabulary of a data-transformation (DT) accelerator.
//!
//! For every message it encodes or decodes, the engine can report the work an accelerator such
//! as Optimus Prime would perform: schema entries read, field data read and written, converter
//! ops applied, nesting entered and left. The engine is generic over [`Tracer`]; [`NoTrace`]
//! compiles every hook to nothing, [`Recorder`] keeps the events in memory, and
//! [`TraceWriter`] streams them into the compact binary file that [`TraceReader`] reads back.
//!
//! The timing models in `optimus-sim` consume these traces only; they never look at engine
//! internals. Addresses are `u64`: the engine reports record base + slot offsets for message
//! memory and buffer offsets for serialized bytes, tagged with a [`Region`].
#![forbid(unsafe_code, unused_must_use)]
#![deny(missing_docs)]

mod event;
mod file;
pub mod kind;
mod tracer;

pub use event::{check_structure, Direction, Event, Format, Region};
pub use file::{
    decode, decode_limited, encode, TraceError, TraceReader, TraceWriter, MAGIC, VERSION,
};
pub use kind::{class_of, ConvClass};
pub use tracer::{NoTrace, Recorder, TraceSource, Tracer};
