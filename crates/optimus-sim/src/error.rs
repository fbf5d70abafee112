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

/// An error naming the first of `fields` (value, name) of `component` that is not a finite,
/// positive number.
pub(crate) fn check_positive(
    component: &'static str,
    fields: &[(f64, &'static str)],
) -> Result<()> {
    match fields.iter().find(|(v, _)| !(*v > 0.0 && v.is_finite())) {
        Some(&(v, f)) => Err(config_err(component, f, format!("{v} must be positive"))),
        None => Ok(()),
    }
}

/// An error naming the first of `fields` (value, name) of `component` that is not a finite,
/// non-negative number.
pub(crate) fn check_non_negative(
    component: &'static str,
    fields: &[(f64, &'static str)],
) -> Result<()> {
    match fields.iter().find(|(v, _)| !(*v >= 0.0 && v.is_finite())) {
        Some(&(v, f)) => Err(config_err(
            component,
            f,
            format!("{v} must be finite and non-negative"),
        )),
        None => Ok(()),
    }
}
