//! A paper figure as data: axes and series of model and published points, which the CLI only
//! draws. A model's reproduction builds these (which points, which targets overlay them, how
//! they are labelled), so the interpretation of a figure lives beside the model that computes
//! it and a library test can reach it.

use serde::Serialize;

/// What a series shows, and so how it is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesKind {
    /// Model points joined by a line.
    Model,
    /// Model points alone, without a line (values at categories).
    ModelPoints,
    /// Published points: black markers.
    Paper,
    /// One published value holding over a range of x: a dashed line between its two points.
    PaperLevel,
}

/// One series of a figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeriesSpec {
    /// Legend text.
    pub name: String,
    /// How it is drawn.
    pub kind: SeriesKind,
    /// `(x, y)` points; at categories, x is the category's index.
    pub points: Vec<(f64, f64)>,
}

impl SeriesSpec {
    /// A series of `kind`.
    pub fn new(name: impl Into<String>, kind: SeriesKind, points: Vec<(f64, f64)>) -> Self {
        Self {
            name: name.into(),
            kind,
            points,
        }
    }
}

/// One figure: a file name, a title, axes and series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FigureSpec {
    /// File stem (`dagger_fig5_throughput`).
    pub name: String,
    /// Caption.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Names of the categories at x = 0, 1, …; empty for a numeric x axis.
    pub x_names: Vec<String>,
    /// The series, model first.
    pub series: Vec<SeriesSpec>,
    /// Logarithmic y axis.
    pub log_y: bool,
}

/// `v` for a legend: two decimals at most, trailing zeros dropped (`2.26`, `4`, `0.13`), or
/// `-` when it is not a number.
pub fn short(v: f64) -> String {
    if !v.is_finite() {
        return "-".to_string();
    }
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_drops_needless_decimals() {
        assert_eq!(short(4.0), "4");
        assert_eq!(short(2.5), "2.5");
        assert_eq!(short(0.126), "0.13");
        assert_eq!(short(-0.0), "0");
        assert_eq!(short(f64::NAN), "-");
    }
}
