//! What the calibration tests share: reading the reasons docs/simulator.md gives, and the rule
//! that a met target stays met while every other one is explained there.

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
