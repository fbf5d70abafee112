//! The Optimus Prime model (ASPLOS'20): configuration, memory side and the cycle loop.
//!
//! `OP{n,j}` is [`OpConfig::pipelines`] = n and [`OpConfig::interleave`] = j; presets
//! [`OpConfig::paper_4x4`], [`OpConfig::paper_8x8`] and [`OpConfig::op_base`] are the paper's
//! configurations. [`run`] replays message traces and returns an [`OpReport`].

pub mod config;
pub mod dsb;
pub mod mem;
pub mod sim;

pub use config::{ConverterConfig, DispatcherConfig, OpConfig, ReaderConfig, WriterConfig};
pub use mem::{BlockBufferConfig, MemoryConfig, NocConfig};
pub use sim::{run, OpReport};
