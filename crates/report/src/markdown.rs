//! The Markdown reports: a run's `report.md` and a comparison's `compare.md`.

use crate::json::comparison;
use crate::view::{templates, view};
use crest_analysis::compare::Comparison;
use crest_analysis::Analysis;
use crest_model::results::Results;
use minijinja::context;

/// A run's Markdown report.
pub fn report(r: &Results, a: &Analysis) -> Result<String, minijinja::Error> {
    templates()?.get_template("report.md.j2")?.render(view(r, a))
}

/// The comparison as Markdown, ending with a newline as a text file does.
pub fn compare(c: &Comparison) -> Result<String, minijinja::Error> {
    let mut md = templates()?
        .get_template("compare.md.j2")?
        .render(context! { c => comparison(c) })?;
    md.push('\n');
    Ok(md)
}
