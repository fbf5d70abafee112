//! Cycle-level timing models of data-transformation accelerators, driven by traces.
//!
//! [`op`] models Optimus Prime (ASPLOS'20): Dispatcher, n pipelines of Reader/Converter/Writer
//! with j time-shared contexts, the Block Buffer and the mesh NoC. [`rpcacc`] models the
//! PCIe-attached RPCAcc and its baselines. Both consume `optimus_trace` events only: from the
//! engine's tracer (trace files) or from [`workload`]'s trace builder. [`calibrate`] runs the
//! papers' experiments and compares with their published numbers.
#![forbid(unsafe_code)]

pub mod calibrate;
pub mod cpu;
pub mod error;
pub mod op;
pub mod program;
pub mod rpcacc;
pub mod stats;
pub mod workload;

pub use error::{Result, SimError};
pub use stats::Stats;
