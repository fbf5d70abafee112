//! Reproduces the papers' experiments and compares the model with every published target.
//!
//! Targets come from `data/targets.json` (a project copy of the papers' target list). Each id
//! is classified here: computed by the model, a model *input* (reported, not checked), not a
//! timing result (synthesis area/power, FPGA resources), or not modelled (with the reason).
//! `exact` targets pass within 15 %, `approx` within 25 %.

use serde::{Deserialize, Serialize};

use crate::error::{Result, SimError};

/// The project copy of the targets.
pub const TARGETS_JSON: &str = include_str!("../../data/targets.json");

/// One published target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// Id as in the papers' targets file.
    pub id: String,
    /// Published value.
    pub value: f64,
    /// Unit.
    pub unit: String,
    /// How closely the model must match.
    pub kind: TargetKind,
    /// Where in the paper.
    pub source: String,
    /// What it is.
    pub what: String,
}

#[derive(Deserialize)]
struct TargetFile {
    op: Vec<Target>,
    rpcacc: Vec<Target>,
}

/// How closely a target must be met: the paper's `exact` figures within 15 %, its
/// approximate ones ("~", "about", read off a plot) within 25 %.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// A number the paper states.
    Exact,
    /// A number the paper gives approximately.
    Approx,
}

impl TargetKind {
    /// Largest relative deviation that still meets a target of this kind.
    pub fn tolerance(self) -> f64 {
        match self {
            TargetKind::Exact => 0.15,
            TargetKind::Approx => 0.25,
        }
    }

    /// The name targets.json gives the kind.
    pub fn name(self) -> &'static str {
        match self {
            TargetKind::Exact => "exact",
            TargetKind::Approx => "approx",
        }
    }
}

/// Which paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paper {
    /// Optimus Prime (ASPLOS'20).
    Op,
    /// RPCAcc (arXiv 2411.07632).
    RpcAcc,
}

/// The targets of `paper`.
///
/// # Errors
/// [`SimError::Targets`] if the embedded file is malformed: a value that is not a number or a
/// kind other than `exact` and `approx` included.
pub fn targets(paper: Paper) -> Result<Vec<Target>> {
    let f: TargetFile =
        serde_json::from_str(TARGETS_JSON).map_err(|e| SimError::Targets(e.to_string()))?;
    Ok(match paper {
        Paper::Op => f.op,
        Paper::RpcAcc => f.rpcacc,
    })
}

/// How a target was treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Model within tolerance.
    Met,
    /// Model outside tolerance.
    Missed,
    /// A model input: reported as given.
    Input,
    /// Not a timing result (area, power, FPGA resources).
    NotTiming,
    /// Not modelled; see `note`.
    NotModeled,
}

/// One row of the calibration table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Target id.
    pub id: String,
    /// Published value.
    pub paper: f64,
    /// Model value, when computed.
    pub model: Option<f64>,
    /// Unit.
    pub unit: String,
    /// `(model - paper) / paper`.
    pub deviation: Option<f64>,
    /// `exact` or `approx`.
    pub kind: String,
    /// Outcome.
    pub status: Status,
    /// How the model value was obtained, or why there is none.
    pub note: String,
}

pub(crate) enum Eval {
    Model(f64, &'static str),
    Input(&'static str),
    NotTiming,
    NotModeled(&'static str),
}

mod op;
mod rpcacc;
mod rpcacc_figures;

pub use op::{
    figures as op_figures, on_curve, pipelines_for, reproduce_op, reproduce_op_with, saturation,
    Curve, OpFigures, SWEEP,
};
pub use rpcacc::{reproduce_rpcacc, reproduce_rpcacc_with, LoadSweep, RpcFigures};
pub use rpcacc_figures::rpcacc_figures;

pub(crate) fn rows(paper: Paper, eval: &dyn Fn(&str) -> Eval) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    for t in targets(paper)? {
        let paper_v = t.value;
        let (model, status, note) = match eval(&t.id) {
            Eval::Model(v, note) => {
                let dev = (v - paper_v) / paper_v;
                let ok = v.is_finite() && dev.abs() <= t.kind.tolerance();
                (
                    Some(v),
                    if ok { Status::Met } else { Status::Missed },
                    note.to_string(),
                )
            }
            Eval::Input(n) => (None, Status::Input, n.to_string()),
            Eval::NotTiming => (
                None,
                Status::NotTiming,
                "synthesis/FPGA resources".to_string(),
            ),
            Eval::NotModeled(n) => (None, Status::NotModeled, n.to_string()),
        };
        let deviation = model.map(|m| (m - paper_v) / paper_v);
        out.push(Row {
            id: t.id,
            paper: paper_v,
            model,
            unit: t.unit,
            deviation,
            kind: t.kind.name().to_string(),
            status,
            note,
        });
    }
    Ok(out)
}
