//! The Markdown reports: a run's `report.md` and a comparison's `compare.md`.

use crate::fmt::words;
use crate::json::comparison;
use crate::view::{templates, view};
use crest_analysis::compare::Comparison;
use crest_analysis::findings::Finding;
use crest_analysis::Analysis;
use crest_model::results::Results;
use minijinja::{context, Value};

/// A run's Markdown report.
pub fn report(r: &Results, a: &Analysis) -> Result<String, minijinja::Error> {
    templates()?.get_template("report.md.j2")?.render(view(r, a))
}

/// Findings the CI summary shows at most; the report has them all.
const SUMMARY_FINDINGS: usize = 3;

/// A run in a few lines for a CI job's summary page (`$GITHUB_STEP_SUMMARY`): its name, the
/// headline figures, the thresholds with pass or fail marks and the top findings, laid out from
/// the same view and wording as [`report`]. It ends with a blank line, so that summaries
/// appended one after another stay apart.
pub fn ci_summary(r: &Results, a: &Analysis) -> Result<String, minijinja::Error> {
    let v = view(r, a);
    // The thresholds have a table of their own.
    let top: Vec<String> = a
        .findings
        .iter()
        .filter(|f| !matches!(f, Finding::ThresholdsFailed(_) | Finding::ThresholdsHeld(_)))
        .take(SUMMARY_FINDINGS)
        .map(words::finding)
        .collect();
    let failed_thresholds = a.summary.thresholds.iter().filter(|t| !t.pass).count();
    let md = templates()?.get_template("summary.md.j2")?.render(context! {
        name => words::run_name(r),
        top,
        failed_thresholds,
        ..Value::from_serialize(&v)
    })?;
    Ok(format!("{}\n\n", md.trim_end()))
}

/// The comparison as Markdown, ending with a newline as a text file does.
pub fn compare(c: &Comparison) -> Result<String, minijinja::Error> {
    let mut md = templates()?
        .get_template("compare.md.j2")?
        .render(context! { c => comparison(c) })?;
    md.push('\n');
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ci_summary_has_the_headline_figures_and_each_threshold_marked() {
        let mut r = crest_testkit::results::small_fixture();
        r.config.thresholds = ["p95 < 10s", "error_rate < 1%"]
            .iter()
            .map(|t| crest_model::expr::Threshold::parse(t).expect("threshold"))
            .collect();
        let a = crest_analysis::analyze(&r).expect("analysis");
        let md = ci_summary(&r, &a).expect("summary");
        assert!(md.starts_with("### crest: "), "{md}");
        assert!(md.contains("❌ 1 of 2 thresholds failed"), "{md}");
        assert!(md.contains("| Error rate | 1.67% (4 of 240 requests) |"), "{md}");
        assert!(md.contains("| ✅ | `p95 < 10s` |"), "{md}");
        assert!(md.contains("| ❌ | `error_rate < 1%` | 1.67% |"), "{md}");
        assert!(
            md.ends_with("\n\n"),
            "a blank line keeps appended summaries apart: {md:?}"
        );
    }
}
