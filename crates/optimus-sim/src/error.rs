//! The crate's one error type.

/// Errors from configuring a model, loading a workload or replaying a trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// A configuration value is invalid or inconsistent with another.
    #[error("config {component}.{field}: {why}")]
    Config {
        /// Component whose config is wrong (`op.block_buffer`).
        component: &'static str,
        /// The offending field.
        field: &'static str,
        /// What is wrong, with the value found.
        why: String,
    },
    /// A configuration file is not JSON, or names a field the config does not have or a
    /// value of the wrong type (see [`crate::config_file::from_json`]).
    #[error("{0}")]
    ConfigFile(String),
    /// The trace file could not be read or is ill-formed.
    #[error("trace: {0}")]
    Trace(#[from] optimus_trace::TraceError),
    /// A trace is well-formed but cannot drive this model (e.g. no message in it).
    #[error("workload {name}: {why}")]
    Workload {
        /// Workload or file name.
        name: String,
        /// What is missing or wrong.
        why: String,
    },
    /// A trace asks for more than a [`crate::workload::ViewConfig`] limit allows: a message,
    /// or the whole trace, reads and writes too many bytes.
    #[error("workload {name}: {why}")]
    OverLimit {
        /// Workload or file name.
        name: String,
        /// Which message, what it asks for and the limit it exceeds.
        why: String,
    },
    /// The engine behind a [`crate::workload::TraceSource`] rejected a workload's schema or
    /// messages.
    #[error("workload {name}: engine: {why}")]
    Engine {
        /// Workload name.
        name: String,
        /// What the engine reported.
        why: String,
    },
    /// The calibration targets file is malformed.
    #[error("targets: {0}")]
    Targets(String),
    /// A run's parameter, as given, is not one it takes: a `--vary` axis, a sweep's option,
    /// an image service's rate or cores, a combination of settings a model does not take.
    #[error("{0}")]
    Param(String),
    /// A report did not serialize as JSON.
    #[error("report: {0}")]
    Json(#[from] serde_json::Error),
}

/// Shorthand for `Result<T, SimError>`.
pub type Result<T> = std::result::Result<T, SimError>;

pub(crate) fn config_err(
    component: &'static str,
    field: &'static str,
    why: impl Into<String>,
) -> SimError {
    SimError::Config {
        component,
        field,
        why: why.into(),
    }
}

/// The largest value a time, rate or count parameter may take, and the smallest positive
/// one: beyond them the models' products overflow or their quotients do, and a run would
/// report infinite times instead of an error.
pub(crate) const PARAM_MAX: f64 = 1e12;
pub(crate) const PARAM_MIN_POSITIVE: f64 = 1e-9;

/// `v` as written in a config: plainly, or in scientific notation where that would run long.
fn shown(v: f64) -> String {
    if v == 0.0 || (1e-4..1e6).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// An error naming the first of `fields` (value, name) of `component` that is not a
/// positive number between [`PARAM_MIN_POSITIVE`] and [`PARAM_MAX`].
pub(crate) fn check_positive(
    component: &'static str,
    fields: &[(f64, &'static str)],
) -> Result<()> {
    match fields
        .iter()
        .find(|(v, _)| !((PARAM_MIN_POSITIVE..=PARAM_MAX).contains(v)))
    {
        Some(&(v, f)) => Err(config_err(
            component,
            f,
            format!(
                "{} must be positive, from {PARAM_MIN_POSITIVE:e} to {PARAM_MAX:e}",
                shown(v)
            ),
        )),
        None => Ok(()),
    }
}

/// An error naming the first of `fields` (value, name) of `component` that is not a number
/// from 0 to [`PARAM_MAX`].
pub(crate) fn check_non_negative(
    component: &'static str,
    fields: &[(f64, &'static str)],
) -> Result<()> {
    match fields
        .iter()
        .find(|(v, _)| !((0.0..=PARAM_MAX).contains(v)))
    {
        Some(&(v, f)) => Err(config_err(
            component,
            f,
            format!("{} must be from 0 to {PARAM_MAX:e}", shown(v)),
        )),
        None => Ok(()),
    }
}
