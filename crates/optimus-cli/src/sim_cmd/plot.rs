//! Drawing: the papers' figures as optimus-sim specifies them (`optimus_sim::figure::
//! FigureSpec`, made by each model's reproduction with the published points overlaid), and the
//! figure of a parameter sweep (`optimus sim --vary ... --plot DIR`).
//!
//! Each figure is written as `NAME.png` and `NAME.svg`, and its data as `NAME.json` (the
//! axes and every series' points, to plot with other tools or compare between runs). Text
//! uses DejaVu Sans compiled into the binary (no fontconfig). What a figure shows is decided
//! in optimus-sim; here only the axes, legend placement, colours and markers.

use std::ops::Range;
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use optimus_sim::figure::{FigureSpec, SeriesKind};
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Pixels of a figure: 800 × 500, wider when its categories need room for their names
/// (90 pixels each, or 8 a character of the longest).
fn size(f: &Figure) -> (u32, u32) {
    let longest = f
        .x_names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let per_name = 90.max(8 * longest);
    (800.max(80 + per_name * f.x_names.len() as u32), 500)
}
/// Colours of successive model series; past the last, the colours come round again with
/// another marker and line (see [`model_style`]).
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
];

/// What a series shows, and so how it is drawn.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Model points: a coloured line with markers.
    Model,
    /// Model points alone: coloured markers without a line (values at a single x, which a
    /// line would join into a segment).
    ModelPoints,
    /// Published points: black markers.
    Paper,
    /// One published value that holds over a range of x (an average over the messages, a
    /// ratio at loads the paper does not give): a dashed black line between its two points,
    /// with the series' marker at each end.
    PaperLevel,
}

/// One curve of model points or paper values.
struct Series {
    name: String,
    points: Vec<(f64, f64)>,
    kind: Kind,
}

impl Series {
    /// The points that can be drawn: NaN or infinite coordinates (a target the model could
    /// not compute) are left out, and on a logarithmic y axis (`log_y`) so are y <= 0.
    fn drawable(&self, log_y: bool) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.points
            .iter()
            .copied()
            .filter(move |p| p.0.is_finite() && p.1.is_finite() && (!log_y || p.1 > 0.0))
    }
}

fn model(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
    Series {
        name: name.into(),
        points,
        kind: Kind::Model,
    }
}

/// Published points (the tests' series; the models' figures come as `FigureSpec`s).
#[cfg(test)]
fn paper(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
    Series {
        name: name.into(),
        points,
        kind: Kind::Paper,
    }
}

/// A figure: axes and series. `x_names`, when not empty, names the categories at
/// x = 0, 1, ... in place of numbers; `log_y` draws the y axis logarithmic, for values
/// that span decades.
struct Figure<'a> {
    name: &'a str,
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    x_names: Vec<String>,
    series: Vec<Series>,
    log_y: bool,
}

fn register_font() -> Result<()> {
    plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| anyhow!("embedded font rejected"))
}

/// The axes' ranges that hold every drawable point: y from 0, or on a logarithmic axis
/// (`log_y`) between the values 1, 2 or 5 times a power of ten around the points.
fn bounds(series: &[Series], log_y: bool) -> (Range<f64>, Range<f64>) {
    let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut y0, mut y1) = (f64::INFINITY, 0.0f64);
    for (x, y) in series.iter().flat_map(|s| s.drawable(log_y)) {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    let pad = ((x1 - x0) * 0.05).max(0.5);
    let yr = if log_y {
        log_bounds(y0, y1)
    } else {
        0.0..(y1 * 1.12).max(1e-9)
    };
    (x0 - pad..x1 + pad, yr)
}

/// `m` times 10 to the `k`, computed so that 0.3 is 3 / 10 (and not 3 × 0.1, a little
/// over 0.3).
fn decade(m: f64, k: i32) -> f64 {
    if k >= 0 {
        m * 10f64.powi(k)
    } else {
        m / 10f64.powi(-k)
    }
}

/// The values 1, 2 and 5 times a power of ten, from the decade below `v`'s to the one
/// above: the candidates for a logarithmic axis' ends.
fn one_two_five(v: f64) -> impl Iterator<Item = f64> {
    let k = v.log10().floor() as i32;
    (k - 1..=k + 1).flat_map(|k| [1.0, 2.0, 5.0].map(|m| decade(m, k)))
}

/// A logarithmic y range for values from `lo` to `hi` (both positive): a tenth of room
/// on either side, widened to 1, 2 or 5 times a power of ten, so that both ends are
/// labelled. Without a positive value, 1 to 10.
fn log_bounds(lo: f64, hi: f64) -> Range<f64> {
    if !(lo > 0.0 && lo.is_finite() && hi.is_finite()) {
        return 1.0..10.0;
    }
    let (lo, hi) = (lo / 1.1, hi.max(lo) * 1.1);
    let start = one_two_five(lo)
        .filter(|&c| c <= lo)
        .fold(f64::NAN, f64::max);
    let end = one_two_five(hi)
        .filter(|&c| c >= hi)
        .fold(f64::NAN, f64::min);
    start..end
}

/// The ticks of a logarithmic y axis over `yr`: the labelled ones, 1, 2 and 5 times each
/// power of ten (the powers alone past five decades, where the others would crowd), and
/// the light grid's, every whole multiple of a power of ten.
fn log_ticks(yr: &Range<f64>) -> (Vec<f64>, Vec<f64>) {
    let (lo, hi) = (yr.start * (1.0 - 1e-9), yr.end * (1.0 + 1e-9));
    let labelled: &[f64] = if (yr.end / yr.start).log10() > 5.0 {
        &[1.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    let (mut bold, mut light) = (Vec::new(), Vec::new());
    for k in yr.start.log10().floor() as i32..=yr.end.log10().ceil() as i32 {
        for m in 1..=9 {
            let v = decade(f64::from(m), k);
            if v < lo || v > hi {
                continue;
            }
            light.push(v);
            if labelled.contains(&f64::from(m)) {
                bold.push(v);
            }
        }
    }
    (bold, light)
}

/// An axis label: whole numbers without decimals, others with at most two.
fn tick(v: f64) -> String {
    // Adding +0.0 turns -0.0 into 0.0.
    let v = v + 0.0;
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').to_string()
    }
}

/// Where the legend goes: the plot corner the series' points and lines cross least (the
/// upper left unless another is emptier). If every corner is crossed, the y axis grows
/// until the top band above the data holds the legend. `plot` is the plot area in pixels;
/// `log_y` says the y axis is logarithmic, so that shares of it are taken of log y.
fn place_legend(
    series: &[Series],
    xr: &Range<f64>,
    yr: &mut Range<f64>,
    plot: (f64, f64),
    log_y: bool,
) -> SeriesLabelPosition {
    // Heights as the axis draws them: y, or ln y on a logarithmic axis.
    let scale = |y: f64| if log_y { y.ln() } else { y };
    let (y0, y1) = (scale(yr.start), scale(yr.end));
    // The legend's box as shares of the plot: a 20-pixel row per series, about 7.5 pixels
    // per character of its longest name beside a 40-pixel marker.
    let longest = series
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0);
    let w = ((40.0 + 7.5 * longest as f64) / plot.0).min(1.0);
    let h = ((12.0 + 20.0 * series.len() as f64) / plot.1).min(0.9);
    let mut samples = Vec::new();
    for s in series {
        let pts: Vec<(f64, f64)> = s.drawable(log_y).map(|(x, y)| (x, scale(y))).collect();
        samples.extend(&pts);
        if !matches!(s.kind, Kind::Paper | Kind::ModelPoints) {
            // Lines (model curves, paper levels): sample them between their points too.
            for p in pts.windows(2) {
                samples.extend((1..8).map(|k| {
                    let t = f64::from(k) / 8.0;
                    (
                        p[0].0 + t * (p[1].0 - p[0].0),
                        p[0].1 + t * (p[1].1 - p[0].1),
                    )
                }));
            }
        }
    }
    let crossing = |left: bool, upper: bool| {
        samples
            .iter()
            .filter(|&&(x, y)| {
                let fx = (x - xr.start) / (xr.end - xr.start);
                let fy = (y - y0) / (y1 - y0);
                (if left { fx <= w } else { fx >= 1.0 - w })
                    && (if upper { fy >= 1.0 - h } else { fy <= h })
            })
            .count()
    };
    let corners = [
        (SeriesLabelPosition::UpperLeft, true, true),
        (SeriesLabelPosition::UpperRight, false, true),
        (SeriesLabelPosition::LowerRight, false, false),
        (SeriesLabelPosition::LowerLeft, true, false),
    ];
    let (best, crossed) = corners
        .into_iter()
        .map(|(pos, left, upper)| (pos, crossing(left, upper)))
        .min_by_key(|c| c.1)
        .expect("four corners");
    if crossed == 0 {
        return best;
    }
    let top = samples.iter().map(|p| p.1).fold(y0, f64::max);
    let end = y0 + (top - y0) / (1.0 - h - 0.04);
    yr.end = if log_y { end.exp() } else { end };
    SeriesLabelPosition::UpperLeft
}

/// The marker of a series' points.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Marker {
    Dot,
    Cross,
    Triangle,
    Ring,
}

impl Marker {
    /// The black markers of successive paper series.
    const PAPER: [Marker; 3] = [Self::Cross, Self::Triangle, Self::Ring];
    /// The markers of model series, one per pass through [`PALETTE`].
    const MODEL: [Marker; 3] = [Self::Dot, Self::Triangle, Self::Ring];

    /// The marker at `p` in `colour`, `size` pixels from its centre to its ends.
    fn at<C: Clone + 'static, DB: DrawingBackend>(
        self,
        p: C,
        size: i32,
        colour: RGBColor,
    ) -> DynElement<'static, DB, C> {
        let style = colour.stroke_width(2);
        match self {
            Self::Dot => Circle::new(p, size, colour.filled()).into_dyn(),
            Self::Cross => Cross::new(p, size, style).into_dyn(),
            Self::Triangle => TriangleMarker::new(p, size, colour.filled()).into_dyn(),
            Self::Ring => Circle::new(p, size, style).into_dyn(),
        }
    }
}

/// How the `i`-th model series is drawn: its colour, line and marker. The first pass
/// through [`PALETTE`] draws solid lines with dots; each later pass changes the line or the
/// marker, so no two of the first 36 series look alike.
fn model_style(i: usize) -> (RGBColor, Line, Marker) {
    let pass = i / PALETTE.len();
    let line = if pass % 2 == 1 {
        Line::Dashed
    } else {
        Line::Solid
    };
    (
        PALETTE[i % PALETTE.len()],
        line,
        Marker::MODEL[pass % Marker::MODEL.len()],
    )
}

/// The line between a series' points.
#[derive(Clone, Copy, PartialEq)]
enum Line {
    Solid,
    Dashed,
    /// Points alone.
    None,
}

/// A series' sample in the legend at `at`: its line, 20 pixels long (two dashes when
/// dashed, nothing when none), with its marker, `size` pixels across, in the middle.
fn legend_sample<'a, DB: DrawingBackend + 'a>(
    at: (i32, i32),
    line: Line,
    marker: Marker,
    size: i32,
    colour: RGBColor,
) -> impl IntoDynElement<'a, DB, (i32, i32)> {
    let [a, b] = match line {
        Line::Solid => [(0, 10), (10, 20)],
        Line::Dashed => [(0, 6), (14, 20)],
        Line::None => [(10, 10), (10, 10)],
    };
    let piece = |(from, to)| PathElement::new(vec![(from, 0), (to, 0)], colour.stroke_width(2));
    EmptyElement::at(at) + piece(a) + piece(b) + marker.at((10, 0), size, colour)
}

/// The values the y axis labels over `yr`: plotters' choice on a linear axis, and
/// [`log_ticks`]' labelled ones on a logarithmic one (`log_y`).
fn y_ticks(yr: &Range<f64>, log_y: bool) -> Vec<f64> {
    if log_y {
        log_ticks(yr).0
    } else {
        RangedCoordf64::from(yr.clone()).key_points(Y_LABELS)
    }
}

/// Pixels left of the plot for the y axis: its title, and its longest tick label (about 9
/// pixels a character at 14 pixels), read from the labels the mesh draws over `yr`; at
/// least 56.
fn y_label_area(yr: &Range<f64>, log_y: bool) -> u32 {
    let longest = y_ticks(yr, log_y)
        .into_iter()
        .map(|v| tick(v).chars().count())
        .max()
        .unwrap_or(0) as u32;
    56.max(30 + 9 * longest)
}

/// Labels the y axis of a figure holds at most (plotters' default).
const Y_LABELS: usize = 10;

/// Draws `f` on `root`: its caption, axes (y logarithmic where `f.log_y`), series and
/// legend.
fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, f: &Figure) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e}");
    root.fill(&WHITE).map_err(err)?;
    let (xr, mut yr) = bounds(&f.series, f.log_y);
    let (width, height) = root.dim_in_pixel();
    // The plot area: the figure less its caption, margins and label areas.
    let plot = (
        f64::from(width) - 24.0 - f64::from(y_label_area(&yr, f.log_y)),
        f64::from(height) - 90.0,
    );
    let legend = place_legend(&f.series, &xr, &mut yr, plot, f.log_y);
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(f.title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(y_label_area(&yr, f.log_y));
    if f.log_y {
        let (labelled, grid) = log_ticks(&yr);
        let y = yr
            .log_scale()
            .with_key_points(labelled)
            .with_light_points(grid);
        draw_chart(builder.build_cartesian_2d(xr, y).map_err(err)?, f, legend)?;
    } else {
        draw_chart(builder.build_cartesian_2d(xr, yr).map_err(err)?, f, legend)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// Draws the mesh, series and legend (at `legend`) of `f` on `chart`, whatever its y
/// axis: linear or logarithmic.
fn draw_chart<'a, DB, Y>(
    mut chart: ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    f: &Figure,
    legend: SeriesLabelPosition,
) -> Result<()>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e}");
    let x_tick = |v: &f64| {
        if f.x_names.is_empty() {
            return tick(*v);
        }
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 {
            f.x_names.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let mut mesh = chart.configure_mesh();
    if !f.x_names.is_empty() {
        // One label per category: the axis then steps by one.
        mesh.x_labels(f.x_names.len() + 1);
    }
    mesh.x_desc(f.x_label)
        .y_desc(f.y_label)
        .y_labels(Y_LABELS)
        .x_label_formatter(&x_tick)
        .y_label_formatter(&|v| tick(*v))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    let mut colour = 0;
    let mut paper_series = 0;
    for s in &f.series {
        let pts: Vec<(f64, f64)> = s.drawable(f.log_y).collect();
        if s.kind == Kind::ModelPoints {
            // The next model colour and marker, larger than a curve's, and no line.
            let (c, _, shape) = model_style(colour);
            colour += 1;
            chart
                .draw_series(pts.iter().map(|&p| shape.at(p, 6, c)))
                .map_err(err)?
                .label(s.name.as_str())
                .legend(move |p| legend_sample(p, Line::None, shape, 5, c));
        } else if s.kind != Kind::Model {
            // Each paper series has its own black marker: a cross, a triangle, a ring.
            let shape = Marker::PAPER[paper_series % Marker::PAPER.len()];
            paper_series += 1;
            let line = if s.kind == Kind::PaperLevel {
                Line::Dashed
            } else {
                Line::None
            };
            if line == Line::Dashed {
                chart
                    .draw_series(DashedLineSeries::new(
                        pts.iter().copied(),
                        8,
                        5,
                        BLACK.stroke_width(2),
                    ))
                    .map_err(err)?;
            }
            chart
                .draw_series(pts.iter().map(|&p| shape.at(p, 7, BLACK)))
                .map_err(err)?
                .label(s.name.as_str())
                .legend(move |p| legend_sample(p, line, shape, 5, BLACK));
        } else {
            let (c, line, shape) = model_style(colour);
            colour += 1;
            let xy = pts.iter().copied();
            let drawn = if line == Line::Dashed {
                chart.draw_series(DashedLineSeries::new(xy, 8, 5, c.stroke_width(2)))
            } else {
                chart.draw_series(LineSeries::new(xy, c.stroke_width(2)))
            };
            drawn
                .map_err(err)?
                .label(s.name.as_str())
                .legend(move |p| legend_sample(p, line, shape, 4, c));
            chart
                .draw_series(pts.iter().map(|&p| shape.at(p, 4, c)))
                .map_err(err)?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .position(legend)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// Writes `f` as `NAME.png`, `NAME.svg` and `NAME.json` in `dir`.
fn write(dir: &Path, f: &Figure) -> Result<()> {
    let png = dir.join(format!("{}.png", f.name));
    let svg = dir.join(format!("{}.svg", f.name));
    draw_file(&png, BitMapBackend::new(&png, size(f)), f)?;
    draw_file(&svg, SVGBackend::new(&svg, size(f)), f)?;
    let json = dir.join(format!("{}.json", f.name));
    let text = serde_json::to_string(&data(f))?;
    std::fs::write(&json, text + "\n").with_context(|| cannot_write(&json))
}

/// Draws `f` on `backend`, which writes `path`; an error names the file. The file is
/// created first, so that one that cannot be written is reported with the system's reason.
fn draw_file<DB: DrawingBackend>(path: &Path, backend: DB, f: &Figure) -> Result<()>
where
    DB::ErrorType: 'static,
{
    std::fs::File::create(path).with_context(|| cannot_write(path))?;
    draw(backend.into_drawing_area(), f).with_context(|| cannot_write(path))
}

/// The start of an error about a file or folder that could not be written.
fn cannot_write(path: &Path) -> String {
    format!("cannot write {}", path.display())
}

/// A figure's data: its title and axes, and each series' name, kind (`model`, `paper` or
/// `paper_level`) and points; points the model could not compute are `null`.
fn data(f: &Figure) -> serde_json::Value {
    let series: Vec<serde_json::Value> = f
        .series
        .iter()
        .map(|s| {
            let kind = match s.kind {
                Kind::Model | Kind::ModelPoints => "model",
                Kind::Paper => "paper",
                Kind::PaperLevel => "paper_level",
            };
            serde_json::json!({ "name": s.name, "kind": kind, "points": s.points })
        })
        .collect();
    serde_json::json!({
        "name": f.name,
        "title": f.title,
        "x_label": f.x_label,
        "y_label": f.y_label,
        "x_names": f.x_names,
        "log_y": f.log_y,
        "series": series,
    })
}

/// Creates `dir` if need be and checks that files can be written in it, so that a long
/// run can refuse a bad `--plot` folder before it starts.
///
/// # Errors
/// A folder that cannot be created or written in, with the system's reason.
pub fn check_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| cannot_write(dir))?;
    let probe = dir.join(".optimus-plot-check");
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .with_context(|| format!("cannot write in {}", dir.display()))
}

/// Makes `dir` ready for figures and the font ready to draw them.
fn prepare(dir: &Path) -> Result<()> {
    check_dir(dir)?;
    register_font()
}

/// Figures a model's reproduction specified (`optimus_sim::figure`): each drawn as it says,
/// into `dir`. The specs carry the series, their kinds and the paper's points; nothing about
/// a figure is decided here.
///
/// # Errors
/// A folder or file that cannot be written.
pub fn spec_figures(dir: &Path, specs: &[FigureSpec]) -> Result<()> {
    prepare(dir)?;
    for spec in specs {
        let series = spec
            .series
            .iter()
            .map(|s| Series {
                name: s.name.clone(),
                points: s.points.clone(),
                kind: match s.kind {
                    SeriesKind::Model => Kind::Model,
                    SeriesKind::ModelPoints => Kind::ModelPoints,
                    SeriesKind::Paper => Kind::Paper,
                    SeriesKind::PaperLevel => Kind::PaperLevel,
                },
            })
            .collect();
        write(
            dir,
            &Figure {
                name: &spec.name,
                title: &spec.title,
                x_label: &spec.x_label,
                y_label: &spec.y_label,
                x_names: spec.x_names.clone(),
                series,
                log_y: spec.log_y,
            },
        )?;
    }
    Ok(())
}

/// A sweep's figure, `sweep.png` and `sweep.svg` in `dir`: a model curve per design and
/// combination of the other varied parameters.
pub fn sweep_figure(dir: &Path, sweep: &optimus_sim::sweep::SweepPlot) -> Result<()> {
    prepare(dir)?;
    let title = format!("{} against {}", sweep.y_label, sweep.x_label);
    write(
        dir,
        &Figure {
            name: "sweep",
            title: &title,
            x_label: &sweep.x_label,
            y_label: &sweep.y_label,
            x_names: Vec::new(),
            series: sweep
                .curves
                .iter()
                .map(|c| model(c.name.as_str(), c.points.clone()))
                .collect(),
            log_y: false,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use optimus_sim::sweep;
    #[test]
    fn ticks_drop_needless_decimals() {
        assert_eq!(tick(4.0), "4");
        assert_eq!(tick(-0.0), "0");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(0.126), "0.13");
    }

    #[test]
    fn model_series_past_the_palette_still_look_different() {
        let styles: Vec<_> = (0..36).map(model_style).collect();
        for (i, a) in styles.iter().enumerate() {
            for (j, b) in styles.iter().enumerate().skip(i + 1) {
                assert!(a != b, "series {i} and {j} are drawn alike");
            }
        }
        assert!(matches!(model_style(0), (_, Line::Solid, Marker::Dot)));
    }

    #[test]
    fn the_y_axis_leaves_room_for_its_longest_label() {
        assert_eq!(y_label_area(&(0.0..10.0), false), 56);
        // Labels of six digits (100000, 120000, ...) need about 9 pixels each, beside the
        // axis title.
        assert!(y_label_area(&(0.0..130_000.0), false) >= 30 + 9 * 6);
        assert!(y_label_area(&(0.0..0.013), false) > 56);
        // On a logarithmic axis, from the labels it draws: 0.5 to 200, three characters.
        assert_eq!(y_label_area(&(0.5..230.0), true), 30 + 9 * 3);
        assert!(y_label_area(&(1.0..200_000.0), true) >= 30 + 9 * 6);
    }

    /// A sweep of one curve, to draw.
    fn one_curve() -> sweep::SweepPlot {
        sweep::SweepPlot {
            x_label: "pipelines".into(),
            y_label: "load_mean_ns".into(),
            curves: vec![sweep::Curve {
                name: "load_mean_ns".into(),
                points: vec![(1.0, 100_000.0), (2.0, 120_000.0)],
            }],
        }
    }

    #[test]
    fn a_figure_that_cannot_be_written_names_its_file_and_the_reason() {
        let dir = Path::new("/proc/self");
        if !dir.is_dir() {
            return;
        }
        let err = format!("{:#}", sweep_figure(dir, &one_curve()).unwrap_err());
        assert!(err.contains("cannot write in /proc/self: "), "{err}");
        assert!(err.contains("os error"), "{err}");
        assert!(!err.contains('\n') && !err.contains("Error("), "{err}");
        // Past the folder's check, a file that cannot be written is named.
        let path = Path::new("/proc/self/f.svg");
        let f = Figure {
            name: "f",
            title: "f",
            x_label: "x",
            y_label: "y",
            x_names: vec![],
            series: vec![model("m", vec![(0.0, 1.0)])],
            log_y: false,
        };
        let backend = SVGBackend::new(path, (80, 50));
        let err = format!("{:#}", draw_file(path, backend, &f).unwrap_err());
        assert!(err.starts_with("cannot write /proc/self/f.svg: "), "{err}");
        assert!(err.contains("os error"), "{err}");
    }

    #[test]
    fn a_sweep_figure_is_written_with_its_data() {
        let dir = std::env::temp_dir().join(format!("optimus-sweep-plot-{}", std::process::id()));
        sweep_figure(&dir, &one_curve()).unwrap();
        for ext in ["png", "svg", "json"] {
            assert!(dir.join(format!("sweep.{ext}")).is_file(), "{ext}");
        }
        assert!(!dir.join(".optimus-plot-check").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A 600 × 400 plot of `series` on x 0..10, y 0..10.
    fn placed(series: &[Series]) -> (SeriesLabelPosition, Range<f64>) {
        let mut yr = 0.0..10.0;
        let pos = place_legend(series, &(0.0..10.0), &mut yr, (600.0, 400.0), false);
        (pos, yr)
    }

    #[test]
    fn a_logarithmic_axis_ends_at_labelled_positive_values() {
        // Fig. 8b's gains: 1.06 to 45, with a tenth of room either side.
        assert_eq!(log_bounds(1.06, 45.27), 0.5..50.0);
        assert_eq!(log_bounds(1.7, 42.0), 1.0..50.0);
        // Exactly a label: still room beyond it.
        assert_eq!(log_bounds(2.0, 50.0), 1.0..100.0);
        // One value, and values under 1.
        assert_eq!(log_bounds(3.0, 3.0), 2.0..5.0);
        assert_eq!(log_bounds(0.013, 0.3), 0.01..0.5);
        // Nothing positive to draw.
        assert_eq!(log_bounds(f64::INFINITY, 0.0), 1.0..10.0);
        // Points at or below zero are left out of a logarithmic axis' bounds.
        let s = [model(
            "m",
            vec![(0.0, 0.0), (1.0, -2.0), (2.0, 4.0), (3.0, 8.0)],
        )];
        assert_eq!(bounds(&s, true).1, 2.0..10.0);
        assert_eq!(bounds(&s, false).1, 0.0..8.0 * 1.12);
    }

    #[test]
    fn a_logarithmic_axis_labels_one_two_and_five() {
        let (labelled, grid) = log_ticks(&(0.5..230.0));
        assert_eq!(
            labelled,
            [0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0]
        );
        // The grid: 0.5 to 0.9, 1 to 9, 10 to 90, 100 and 200.
        assert_eq!(grid.len(), 5 + 9 + 9 + 2);
        assert!(labelled.iter().all(|v| grid.contains(v)));
        let labels: Vec<String> = log_ticks(&(0.01..0.5)).0.into_iter().map(tick).collect();
        assert_eq!(labels, ["0.01", "0.02", "0.05", "0.1", "0.2", "0.5"]);
        // Past five decades, the powers of ten alone.
        assert_eq!(
            log_ticks(&(1.0..2e6)).0,
            [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6]
        );
    }

    #[test]
    fn the_legend_of_a_logarithmic_axis_reads_its_heights_as_drawn() {
        // A point at 800 on 1..1000: in the upper left's band on a logarithmic axis (97 %
        // of its height), below it on a linear one (80 %).
        let s = [paper("p", vec![(0.5, 800.0)])];
        let corner = |log_y| {
            let mut yr = 1.0..1000.0;
            let pos = place_legend(&s, &(0.0..10.0), &mut yr, (600.0, 400.0), log_y);
            assert_eq!(yr, 1.0..1000.0);
            pos
        };
        assert!(matches!(corner(true), SeriesLabelPosition::UpperRight));
        assert!(matches!(corner(false), SeriesLabelPosition::UpperLeft));
        // Crossing every corner, the axis grows by a share of its decades.
        let x = model("x", vec![(0.0, 1.0), (5.0, 1000.0), (10.0, 1.0)]);
        let flat = model("flat", vec![(0.0, 1000.0), (10.0, 1000.0)]);
        let mut yr = 1.0..1000.0;
        place_legend(&[x, flat], &(0.0..10.0), &mut yr, (600.0, 400.0), true);
        let decades = yr.end.log10();
        assert!((decades - 3.0 / (1.0 - 0.13 - 0.04)).abs() < 1e-9, "{yr:?}");
    }
    #[test]
    fn the_legend_goes_where_no_line_runs_or_above_them_all() {
        // A rising line leaves the upper left and lower right free: the upper left wins.
        let rising = model("rising", vec![(0.0, 0.0), (10.0, 10.0)]);
        assert!(matches!(
            placed(std::slice::from_ref(&rising)),
            (SeriesLabelPosition::UpperLeft, r) if r == (0.0..10.0)
        ));
        // With a cross in the upper left, the lower right.
        let cross = paper("cross", vec![(0.5, 9.5)]);
        assert!(matches!(
            placed(&[rising, cross]),
            (SeriesLabelPosition::LowerRight, r) if r == (0.0..10.0)
        ));
        // Lines through every corner: the y axis grows to make room above them.
        let x = model("x", vec![(0.0, 0.0), (5.0, 9.0), (10.0, 0.0)]);
        let flat = model("flat", vec![(0.0, 9.0), (10.0, 9.0)]);
        let (pos, yr) = placed(&[x, flat]);
        assert!(matches!(pos, SeriesLabelPosition::UpperLeft));
        // Two rows: 52 of 400 pixels, so the data keep the lower 83 %.
        assert!((yr.end - 9.0 / (1.0 - 0.13 - 0.04)).abs() < 1e-9, "{yr:?}");
    }
}
