//! The HTML reports: a run's `report.html`, one self-contained file, and a comparison's
//! `compare.html`.

use crate::json::comparison;
use crate::view::{templates, view};
use crest_analysis::compare::Comparison;
use crest_analysis::Analysis;
use crest_model::results::Results;
use minijinja::context;

/// A run's HTML report.
pub fn report(r: &Results, a: &Analysis) -> Result<String, minijinja::Error> {
    templates()?.get_template("report.html.j2")?.render(view(r, a))
}

/// The comparison as HTML.
pub fn compare(c: &Comparison) -> Result<String, minijinja::Error> {
    templates()?
        .get_template("compare.html.j2")?
        .render(context! { c => comparison(c) })
}
