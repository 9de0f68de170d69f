//! Pure functions over the results document, so that any saved run can be analysed again.
//!
//! Nothing here measures, reads files or writes text: it takes [`crest_model::Results`] and
//! returns figures and typed findings; the report crate puts them in words. The modules form
//! layers, each importing only those below it: [`figures`], [`baseline`] and [`units`] at the
//! bottom; then the stages ([`segment`], [`iterations`], [`capacity`], [`failures`],
//! [`recovery`], [`resources`], [`validity`], [`find`], [`thresholds`]; [`workers`] over
//! [`validity`]); then [`summary`],
//! [`findings`] and [`analyze`],
//! which runs them in order; [`invariants`], [`compare`] and [`history`] on top. [`stop`] holds the live stop rules the
//! engine's caller evaluates while a run is in progress; thresholds and stop conditions arrive
//! parsed, as `crest_model::expr` values.
#![warn(missing_docs)]

pub mod analyze;
pub mod baseline;
pub mod bottleneck;
pub mod capacity;
pub mod compare;
pub mod events;
pub mod failures;
pub mod figures;
pub mod find;
pub mod findings;
pub mod history;
pub mod invariants;
pub mod iterations;
pub mod recovery;
pub mod resources;
pub mod segment;
pub mod sizing;
pub mod stop;
pub mod study;
pub mod summary;
pub mod thresholds;
pub mod units;
pub mod validity;
pub mod workers;

pub use analyze::{analyze, Analysis};
pub use summary::Summary;

/// Summarises a results document: the summary of its full analysis.
pub fn summarize(r: &crest_model::Results) -> Result<Summary, crest_model::HistError> {
    analyze(r).map(|a| a.summary)
}
