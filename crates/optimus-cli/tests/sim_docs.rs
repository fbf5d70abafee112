//! docs/simulator.md's calibration tables are what `optimus sim reproduce op|rpcacc|dagger
//! --markdown` prints today: every heading and row appears verbatim.

use std::process::Command;

const DOC: &str = include_str!("../../../docs/simulator.md");

/// The lines of `optimus sim reproduce PAPER --markdown` that docs/simulator.md lacks.
fn missing_from_doc(paper: &str) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_optimus"))
        .args(["sim", "reproduce", paper, "--markdown"])
        .output()
        .expect("optimus runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc_lines: std::collections::HashSet<&str> = DOC.lines().collect();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty() && !doc_lines.contains(l))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_calibration_tables_are_the_models_output() {
    for paper in ["op", "rpcacc", "dagger"] {
        let missing = missing_from_doc(paper);
        assert!(
            missing.is_empty(),
            "docs/simulator.md's {paper} table is stale (regenerate it with `optimus sim \
             reproduce {paper} --markdown`); lines not in it:\n{}",
            missing.join("\n")
        );
    }
}
