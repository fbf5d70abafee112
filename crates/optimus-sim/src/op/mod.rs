//! The Optimus Prime model (ASPLOS'20): configuration, components, memory side and the cycle
//! loop.
//!
//! `OP{n,j}` is [`OpConfig::pipelines`] = n and [`OpConfig::interleave`] = j; presets
//! [`OpConfig::paper_4x4`], [`OpConfig::paper_8x8`] and [`OpConfig::op_base`] are the paper's
//! configurations. [`run`] replays message traces and returns an [`OpReport`].

pub mod config;
mod converter;
mod dispatcher;
pub mod dsb;
mod fields;
pub mod mem;
mod memsys;
mod pipeline;
mod reader;
pub mod sim;
mod tables;
mod writer;

pub use config::{ConverterConfig, DispatcherConfig, OpConfig, ReaderConfig, WriterConfig};
pub use mem::{BlockBufferConfig, MemoryConfig, NocConfig};
pub use sim::{run, OpBound, OpReport, LINK_SATURATION};
