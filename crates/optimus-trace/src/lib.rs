//! Trace vocabulary of a data-transformation (DT) accelerator.
//!
//! For every message it encodes or decodes, the engine can report the work an accelerator such
//! as Optimus Prime would perform: schema entries read, field data read and written, converter
//! ops applied, nesting entered and left. The engine is generic over [`Tracer`]; [`NoTrace`]
//! compiles every hook to nothing, [`Recorder`] keeps the events in memory, and
//! [`TraceWriter`] streams them into the compact binary file that [`TraceReader`] reads back.
//!
//! The timing models in `optimus-sim` consume these traces only; they never look at engine
//! internals. Addresses are `u64`, tagged with a [`Region`]: offsets into the serialized
//! buffer for its bytes, and for message memory and schema entries the real addresses of the
//! engine's own allocations. Those depend on the process (ASLR, earlier allocations), so two
//! traces of the same input differ in them; an empty string or bytes value is a zero-byte
//! access, at a dangling address such as `0x1` where it has no buffer. The simulator's view
//! of a trace remaps message and schema addresses onto a layout of its own.
#![forbid(unsafe_code, unused_must_use)]
#![deny(missing_docs)]

mod event;
mod file;
pub mod kind;
mod tracer;

pub use event::{check_structure, Direction, Event, Format, Region, Repetition};
pub use file::{
    decode, decode_limited, encode, TraceError, TraceReader, TraceWriter, MAGIC, VERSION,
};
pub use kind::{class_of, ConvClass};
pub use tracer::{NoTrace, Recorder, TraceSource, Tracer};
