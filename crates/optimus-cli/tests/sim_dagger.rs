//! `optimus sim reproduce dagger` and `optimus sim --accel dagger`: the rows as JSON, the
//! figures optimus-sim specifies drawn into a folder, and the flags the model refuses.

use std::process::{Command, Output};

fn optimus(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_optimus"))
        .args(args)
        .output()
        .expect("optimus runs")
}

#[test]
fn reproduce_dagger_meets_every_computed_target_and_draws_its_figures() {
    let dir = std::env::temp_dir().join(format!("optimus-dagger-plot-{}", std::process::id()));
    let dir_s = dir.to_str().unwrap();
    let out = optimus(&["sim", "reproduce", "dagger", "--json", "--plot", dir_s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 30);
    let met = rows.iter().filter(|r| r["status"] == "met").count();
    let missed: Vec<&serde_json::Value> = rows.iter().filter(|r| r["status"] == "missed").collect();
    assert!(missed.is_empty(), "{missed:?}");
    assert!(met >= 20, "{met}");
    for name in [
        "dagger_fig5_throughput",
        "dagger_fig5_latency",
        "dagger_fig6_latency_load",
        "dagger_threads",
    ] {
        for ext in ["png", "svg", "json"] {
            let f = dir.join(format!("{name}.{ext}"));
            assert!(f.is_file(), "{}", f.display());
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn accel_dagger_prints_its_settings_and_refuses_other_models_flags() {
    let out = optimus(&["sim", "--accel", "dagger", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["settings"].as_array().unwrap().len(), 9);
    let bad = optimus(&["sim", "--accel", "dagger", "--pipelines", "2"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("apply to --accel op"));
    let bad = optimus(&["sim", "--accel", "dagger", "--workload", "mixed"]);
    assert_eq!(bad.status.code(), Some(1));
}
