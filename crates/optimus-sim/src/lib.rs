//! Cycle-level timing models of data-transformation accelerators, driven by traces.
//!
//! [`op`] models Optimus Prime (ASPLOS'20): Dispatcher, n pipelines of Reader/Converter/Writer
//! with j time-shared contexts, the Block Buffer and the mesh NoC. [`rpcacc`] models the
//! PCIe-attached RPCAcc and its baselines. Both consume `optimus_trace` events only, recorded
//! by the engine (trace files, or a [`workload::TraceSource`] the caller provides) and seen
//! through [`workload::view`]. [`cereal`] models the Cereal object-graph S/D accelerator on
//! traces the Java library writes. [`dagger`] models the Dagger FPGA NIC
//! (CPU–NIC interfaces, RPC pipeline, CCI-P, threading) on streams of optimus-rpc frames.
//! [`figure`] holds the papers' figures as data for the CLI to draw; [`sweep`] runs a model
//! over a grid of parameter values. [`calibrate`] runs the papers' experiments and compares with
//! their published numbers. The crate does not depend on the engine: the CLI and the tests
//! hand it the engine's traces.
#![forbid(unsafe_code)]
// Config checks write `!(x > 0.0)` on purpose: the negation also rejects NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod calibrate;
pub mod cereal;
pub mod config_file;
pub mod cpu;
pub mod dagger;
pub mod error;
pub mod figure;
pub mod op;
pub mod parallel;
pub mod program;
pub mod rpcacc;
pub mod settings;
pub mod stats;
pub mod sweep;
pub mod workload;

pub use error::{Result, SimError};
pub use stats::Stats;

/// A uniform draw in [0, 1) from `rng`'s next 53 bits: the models' one way of turning their
/// seeded generator into a probability.
pub(crate) fn uniform(rng: &mut impl rand_core::RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}
