//! The full analysis of one run: what a performance engineer would otherwise work out by hand.
//!
//! Every figure is computed from the results document alone, so `crest report` can redo it for
//! any saved run. The stages run in one direction, each a function of the results and of what
//! the stages before it returned: steps, then capacity across steps, then failures, then the
//! summary, then the findings that cite them. No stage imports this module.

use crate::capacity::{capacity, Capacity};
use crate::failures::{each_request, failures, one_by_one, EachRequest, FailedRequest, FailureAnalysis};
use crate::figures::{Point, SegmentAnalysis};
use crate::findings::{findings, Finding};
use crate::segment::{segments, series};
use crate::summary::{summarize, Summary};
use crest_model::results::Results;
use crest_model::HistError;
use serde::Serialize;

/// Everything the reports show.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    /// The end-of-run summary.
    pub summary: Summary,
    /// Per segment, in order.
    pub segments: Vec<SegmentAnalysis>,
    /// Optimal operating point, saturation and breaking point, where the segments show them.
    pub capacity: Capacity,
    /// Per failure class.
    pub failures: Vec<FailureAnalysis>,
    /// Each failed request, when there were few enough to list.
    pub failed: Vec<FailedRequest>,
    /// Each request, when the run was small enough to keep them, for latency against start.
    pub each_request: EachRequest,
    /// What the figures say, most important first; renderers put each in words.
    pub findings: Vec<Finding>,
    /// One point per interval, for charts and the CSV.
    pub series: Vec<Point>,
}

/// Analyses a results document.
pub fn analyze(r: &Results) -> Result<Analysis, HistError> {
    let segments = segments(r)?;
    let series = series(r)?;
    let capacity = capacity(r, &segments)?;
    let failures = failures(r)?;
    let summary = summarize(r, &segments, &capacity)?;
    let findings = findings(&summary, &segments, &capacity, &failures);
    Ok(Analysis {
        summary,
        segments,
        capacity,
        failures,
        failed: one_by_one(r),
        each_request: each_request(r),
        findings,
        series,
    })
}
