//! What the calibration tests share: reading the reasons docs/simulator.md gives, the rule
//! that a met target stays met while every other one is explained there, and the check of
//! the project's copies of the papers' targets.

use optimus_sim::calibrate::{Row, Status};

/// docs/simulator.md, which names every target the models miss or leave out, with why.
pub const DOC: &str = include_str!("../../../../docs/simulator.md");

/// The text of docs/simulator.md from `heading` (`## …` or `### …`) to the next heading of
/// its level or above (but not the title's).
pub fn doc_section(heading: &str) -> &'static str {
    let start = DOC
        .find(heading)
        .unwrap_or_else(|| panic!("docs/simulator.md has no `{heading}`"));
    let level = heading
        .find(' ')
        .expect("a heading has a space after its #s");
    let body = &DOC[start + heading.len()..];
    let end = (2..=level)
        .filter_map(|hashes| body.find(&format!("\n{} ", "#".repeat(hashes))))
        .min()
        .unwrap_or(body.len());
    &body[..end]
}

/// Every target in `met` is met; every other target is either missed or unmodelled and
/// named (in backquotes) in `reasons`, or met and then it must be added to `met`.
pub fn check_targets(rows: &[Row], met: &[&str], reasons: &str) {
    for id in met {
        let r = rows
            .iter()
            .find(|r| r.id == *id)
            .unwrap_or_else(|| panic!("{id}: no such target"));
        assert_eq!(
            r.status,
            Status::Met,
            "{id} regressed: paper {} model {:?}",
            r.paper,
            r.model
        );
    }
    for r in rows {
        if matches!(r.status, Status::Missed | Status::NotModeled) {
            assert!(
                reasons.contains(&format!("`{}`", r.id)),
                "{} is not met and docs/simulator.md does not say why",
                r.id
            );
        }
        assert!(
            r.status != Status::Met || met.contains(&r.id.as_str()),
            "{} is met now: add it to the test's list of met targets and to docs/simulator.md",
            r.id
        );
    }
}

/// The project's copy of `papers`' targets (`ours`, a targets.json text) against the papers'
/// list beside the project, where there is one: the same ids in the same order, with the same
/// values, units and kinds.
pub fn check_targets_copy(ours: &str, papers: &[&str]) {
    let list = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/papers/targets.json"
    );
    let Ok(text) = std::fs::read_to_string(list) else {
        eprintln!("{list} is not here: nothing to compare the copy with");
        return;
    };
    let theirs: serde_json::Value = serde_json::from_str(&text).unwrap();
    let ours: serde_json::Value = serde_json::from_str(ours).unwrap();
    for paper in papers {
        let facts = |v: &serde_json::Value| -> Vec<[String; 4]> {
            v[*paper]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| ["id", "value", "unit", "kind"].map(|k| t[k].to_string()))
                .collect()
        };
        assert_eq!(facts(&ours), facts(&theirs), "{paper}");
    }
}
