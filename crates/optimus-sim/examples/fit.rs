//! Fits chosen model parameters to a paper's targets: a seeded random local search over the
//! parameters named on the command line, each within its range, scored by the whole
//! calibration (every computed target of `optimus sim reproduce`). With `--sensitivity` it
//! searches nothing and reports instead how each parameter, moved alone to either end of its
//! range, moves every target.
//!
//! ```text
//! cargo run --release -p optimus-sim --example fit -- rpcacc \
//!     accel_mem.latency_ns=60..400 dma_txn_ns=2..60 [--iters 500] [--seed 1] [--by met|error]
//!     [--sensitivity] [--config FILE]
//! ```
//!
//! A parameter is a path into the model's config as `--print-config` writes it (`OpConfig` for
//! `op`, `RpcAccConfig` for `rpcacc`); integer parameters stay integers. Each step multiplies
//! one to three of them by a log-normal factor and keeps the result if it scores better:
//! `--by met` (the default) counts met targets first and breaks ties by the error, `--by
//! error` uses the error alone, the sum over computed targets of |ln(model / paper)| (each
//! capped at 3). `--config` starts from a config file's values instead of the paper's (read as
//! `reproduce --config` reads it), for fitting a variant of the model such as
//! `{"leaf_pointer_loads": true}`. Progress goes to stderr; stdout gets the targets whose status
//! changed and the fitted values (over the `--config` file's), as a config file for `optimus
//! sim reproduce --config`.
//!
//! `--sensitivity` prints, per parameter, the targets met at each end of its range and a
//! Markdown table of every computed target that moves by more than 2 % or changes status at
//! either end: the model at the low end, the default and the high end, the elasticity
//! (d ln model / d ln parameter over the range) and the status at each end where it differs
//! from the default's.

use optimus_core::binary::EngineTraces;
use optimus_sim::calibrate::{self, Row, Status};
use optimus_sim::config_file;
use optimus_sim::op::OpConfig;
use optimus_sim::rpcacc::RpcAccConfig;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{json, Value};

/// One parameter to fit: its path in the config and its range.
struct Param {
    path: String,
    low: f64,
    high: f64,
}

/// How a candidate scores: targets met, and the summed log deviation.
#[derive(Clone, Copy, PartialEq)]
struct Score {
    met: usize,
    error: f64,
}

fn usage() -> ! {
    eprintln!("usage: fit op|rpcacc PATH=LOW..HIGH ... [--iters N] [--seed S] [--by met|error] [--sensitivity] [--config FILE]");
    std::process::exit(2);
}

fn parse_param(arg: &str) -> Option<Param> {
    let (path, range) = arg.split_once('=')?;
    let (low, high) = range.split_once("..")?;
    let (low, high): (f64, f64) = (low.parse().ok()?, high.parse().ok()?);
    (low > 0.0 && high >= low && high.is_finite()).then(|| Param {
        path: path.to_string(),
        low,
        high,
    })
}

/// The value at `path` (dot-separated) in `config`.
fn at<'a>(config: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    path.split('.').try_fold(config, |v, key| v.get_mut(key))
}

/// Sets the number `slot` to `x`, rounded if the parameter is an integer.
fn set(slot: &mut Value, x: f64) {
    *slot = if slot.is_u64() {
        json!(x.round() as u64)
    } else {
        json!(x)
    };
}

/// Runs the paper's reproduction under `config`; `None` if the config cannot run.
fn reproduce(paper: &str, config: &Value) -> Option<Vec<Row>> {
    if paper == "op" {
        let params: OpConfig = serde_json::from_value(config.clone()).ok()?;
        calibrate::reproduce_op_with(&params, &mut EngineTraces)
            .ok()
            .map(|(rows, _)| rows)
    } else {
        let params: RpcAccConfig = serde_json::from_value(config.clone()).ok()?;
        calibrate::reproduce_rpcacc_with(&params, &mut EngineTraces)
            .ok()
            .map(|(rows, _)| rows)
    }
}

fn score(rows: &[Row]) -> Score {
    let computed = rows
        .iter()
        .filter(|r| matches!(r.status, Status::Met | Status::Missed));
    let error = computed
        .clone()
        .map(|r| {
            let d = r.model.map_or(f64::NAN, |m| (m / r.paper).ln().abs());
            if d.is_finite() {
                d.min(3.0)
            } else {
                3.0
            }
        })
        .sum();
    Score {
        met: computed.filter(|r| r.status == Status::Met).count(),
        error,
    }
}

fn better(a: Score, b: Score, by_met: bool) -> bool {
    if by_met && a.met != b.met {
        return a.met > b.met;
    }
    a.error < b.error
}

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let unit = |r: &mut ChaCha8Rng| (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let u = unit(rng).max(f64::MIN_POSITIVE);
    let v = unit(rng);
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// Moves `p` alone to each end of its range and prints how every computed target follows.
fn report_sensitivity(paper: &str, start_config: &Value, p: &Param, base: &[Row]) {
    let mut config = start_config.clone();
    let value = |c: &mut Value| at(c, &p.path).expect("checked in main").as_f64();
    let default = value(&mut config).expect("a number");
    let mut ends = Vec::new();
    for x in [p.low, p.high] {
        set(at(&mut config, &p.path).expect("checked in main"), x);
        let x = value(&mut config).expect("a number");
        let rows = reproduce(paper, &config).unwrap_or_else(|| {
            eprintln!("fit: the {paper} model does not run with {} = {x}", p.path);
            std::process::exit(2);
        });
        ends.push((x, rows));
    }
    let [(low, low_rows), (high, high_rows)] = <[_; 2]>::try_from(ends).expect("two ends");
    let met = |rows: &[Row]| rows.iter().filter(|r| r.status == Status::Met).count();
    println!(
        "\n#### `{}`: default {default}, range {low} .. {high}; met {} / {} / {}\n",
        p.path,
        met(&low_rows),
        met(base),
        met(&high_rows)
    );
    println!("| target | paper | low | default | high | elasticity | status |");
    println!("|---|---|---|---|---|---|---|");
    let status = |r: &Row| {
        if r.status == Status::Met {
            "met"
        } else {
            "missed"
        }
    };
    for ((b, l), h) in base.iter().zip(&low_rows).zip(&high_rows) {
        let (Some(m), Some(ml), Some(mh)) = (b.model, l.model, h.model) else {
            continue;
        };
        let moved = |x: f64| (x - m).abs() > 0.02 * m.abs();
        let flipped = l.status != b.status || h.status != b.status;
        if !matches!(b.status, Status::Met | Status::Missed) || !(moved(ml) || moved(mh) || flipped)
        {
            continue;
        }
        let elasticity = match (mh / ml).ln() / (high / low).ln() {
            e if e.is_finite() => format!("{e:+.2}"),
            _ => "—".to_string(),
        };
        let flips = if !flipped {
            status(b).to_string()
        } else {
            format!("{} / {} / {}", status(l), status(b), status(h))
        };
        println!(
            "| `{}` | {} | {ml:.3} | {m:.3} | {mh:.3} | {elasticity} | {flips} |",
            b.id, b.paper
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let paper = match args.first().map(String::as_str) {
        Some(p @ ("op" | "rpcacc")) => p.to_string(),
        _ => usage(),
    };
    let (mut iters, mut seed, mut by_met, mut params) = (500usize, 1u64, true, Vec::new());
    let mut sensitivity = false;
    let mut config_text = None;
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        let mut value = || rest.next().cloned().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--iters" => iters = value().parse().unwrap_or_else(|_| usage()),
            "--seed" => seed = value().parse().unwrap_or_else(|_| usage()),
            "--sensitivity" => sensitivity = true,
            "--config" => {
                let file = value();
                config_text = Some(std::fs::read_to_string(&file).unwrap_or_else(|e| {
                    eprintln!("fit: {file}: {e}");
                    std::process::exit(2);
                }));
            }
            "--by" => {
                by_met = match value().as_str() {
                    "met" => true,
                    "error" => false,
                    _ => usage(),
                }
            }
            _ => params.push(parse_param(arg).unwrap_or_else(|| usage())),
        }
    }
    let text = config_text.as_deref().unwrap_or("{}");
    let mut start_config = if paper == "op" {
        config_file::from_json::<OpConfig>(text).map(serde_json::to_value)
    } else {
        config_file::from_json::<RpcAccConfig>(text).map(serde_json::to_value)
    }
    .unwrap_or_else(|e| {
        eprintln!("fit: {e}");
        std::process::exit(2);
    })
    .expect("configs serialize");
    for p in &params {
        if !at(&mut start_config, &p.path).is_some_and(|v| v.is_number()) {
            eprintln!(
                "fit: {} is not a numeric parameter of the {paper} config",
                p.path
            );
            std::process::exit(2);
        }
    }
    if params.is_empty() {
        usage();
    }
    let start_rows = reproduce(&paper, &start_config).expect("the starting config runs");
    let start = score(&start_rows);
    eprintln!("start: {} met, error {:.3}", start.met, start.error);
    if sensitivity {
        for p in &params {
            report_sensitivity(&paper, &start_config, p, &start_rows);
        }
        return;
    }
    let (mut best, mut best_score) = (start_config.clone(), start);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for step in 0..iters {
        let mut candidate = best.clone();
        for _ in 0..=rng.next_u64() % 3 {
            let p = &params[(rng.next_u64() % params.len() as u64) as usize];
            let v = at(&mut candidate, &p.path).expect("checked above");
            let x = v.as_f64().unwrap_or(p.low).max(p.low);
            set(v, (x * (0.5 * normal(&mut rng)).exp()).clamp(p.low, p.high));
        }
        let Some(rows) = reproduce(&paper, &candidate) else {
            continue;
        };
        let s = score(&rows);
        if better(s, best_score, by_met) {
            eprintln!("step {step}: {} met, error {:.3}", s.met, s.error);
            (best, best_score) = (candidate, s);
        }
    }
    let rows = reproduce(&paper, &best).expect("the best config ran");
    for (was, now) in start_rows.iter().zip(&rows) {
        if was.status != now.status {
            println!(
                "{}: paper {}, model {:.3} -> {:.3}, {:?} -> {:?}",
                now.id,
                now.paper,
                was.model.unwrap_or(f64::NAN),
                now.model.unwrap_or(f64::NAN),
                was.status,
                now.status
            );
        }
    }
    println!(
        "{} met (start {}), error {:.3} (start {:.3})",
        best_score.met, start.met, best_score.error, start.error
    );
    // The fitted values over the file the search started from, so that the output runs as is.
    let mut fitted: Value = serde_json::from_str(text).expect("read above");
    for p in &params {
        let mut slot = &mut fitted;
        let keys: Vec<&str> = p.path.split('.').collect();
        for key in &keys[..keys.len() - 1] {
            slot = slot
                .as_object_mut()
                .expect("objects")
                .entry(*key)
                .or_insert_with(|| json!({}));
        }
        let value = at(&mut best, &p.path).expect("checked above").clone();
        slot[keys[keys.len() - 1]] = value;
    }
    println!("{}", serde_json::to_string_pretty(&fitted).expect("JSON"));
}
