//! The full analysis of one run: what a performance engineer would otherwise work out by hand.
//!
//! Every figure is computed from the results document alone, so `crest report` can redo it for
//! any saved run. The stages run in one direction, each a function of the results and of what
//! the stages before it returned: steps, then capacity across steps, then failures, then the
//! summary, then the findings that cite them. No stage imports this module.

use crate::capacity::{capacity_in, Capacity};
use crate::failures::{each_request, failures, one_by_one, EachRequest, FailedRequest, FailureAnalysis};
use crate::figures::{Point, SegmentAnalysis, StatRow, WorkUnit};
use crate::findings::{findings, Finding};
use crate::iterations::{iterations, requests_per_iteration, work_per_iteration};
use crate::segment::{iteration_segments, segments, series, stat_rows};
use crate::summary::{summarize, Summary};
use crest_model::results::Results;
use crest_model::HistError;
use serde::Serialize;

/// Everything the reports show.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    /// The end-of-run summary.
    pub summary: Summary,
    /// What the answers (steady throughput, optimum, limit) are counted in.
    pub unit: WorkUnit,
    /// Per segment, in order, in requests (transactions when the run had SQL transactions).
    pub segments: Vec<SegmentAnalysis>,
    /// Per segment, in order, in iterations of the scenario's flows; empty without flows.
    pub iteration_segments: Vec<SegmentAnalysis>,
    /// Per segment, requests per iteration that ended in it; empty without flows.
    pub requests_per_iteration: Vec<Option<f64>>,
    /// Optimal operating point, saturation and breaking point, where the steps show them, in
    /// the run's unit of work, over the steps that can be judged.
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
    /// The length of an interval of `series`, seconds: the last point of a run may stand for
    /// less than that, and its per-second rate then is not a rate.
    pub interval_s: f64,
    /// One row per entry of the results' totals, for the CSV.
    pub stats: Vec<StatRow>,
}

impl Analysis {
    /// The steps in the run's unit of work: iterations for a scenario with flows, else requests
    /// (transactions).
    pub fn unit_segments(&self) -> &[SegmentAnalysis] {
        match self.unit {
            WorkUnit::Iterations => &self.iteration_segments,
            WorkUnit::Requests | WorkUnit::Transactions => &self.segments,
        }
    }
}

/// Analyses a results document.
pub fn analyze(r: &Results) -> Result<Analysis, HistError> {
    let segments = segments(r)?;
    let iteration_segments = iteration_segments(r)?;
    let transactions = r.part_of.iter().any(Option::is_some);
    // A flow whose every iteration is one transaction (pgbench's script as a flow) counts its
    // work in transactions, as pgbench does: the two are the same count, and the transaction is
    // the word its users know.
    let one_each = transactions && {
        let ended: u64 = r.iterations.iter().map(|i| i.completed + i.failed).sum();
        ended > 0 && ended == segments.iter().map(|s| s.requests).sum::<u64>()
    };
    let unit = if !iteration_segments.is_empty() && !one_each {
        WorkUnit::Iterations
    } else if transactions {
        WorkUnit::Transactions
    } else {
        WorkUnit::Requests
    };
    let series = series(r)?;
    let answers = match unit {
        WorkUnit::Iterations => &iteration_segments,
        WorkUnit::Requests | WorkUnit::Transactions => &segments,
    };
    let capacity = capacity_in(unit, r, answers)?;
    let failures = failures(r)?;
    let mut summary = summarize(r, &segments, answers, &capacity)?;
    summary.unit = unit;
    summary.iterations = iterations(r, summary.requests)?;
    for (g, s) in summary.segments.iter_mut().zip(&iteration_segments) {
        g.iterations = Some(crate::summary::StepIterations {
            completed: s.requests - s.failures,
            failed: s.failures,
            per_s: s.success_rps,
            duration_ms: s.latency_ms,
        });
    }
    summary.answers = crate::summary::answers(unit, answers, &capacity);
    summary.workers = crate::workers::workers(r, unit, summary.latency_ms.p50)?;
    summary
        .client_bound
        .extend(crate::workers::client_bound(&summary.workers));
    summary.bottleneck = crate::bottleneck::bottleneck(&crate::bottleneck::Inputs {
        results: r,
        requests: &segments,
        steps: answers,
        capacity: &capacity,
        client_bound: &summary.client_bound,
    });
    (summary.sizing, summary.no_sizing) = crate::sizing::sizing(r, answers, &capacity, &summary.leaks);
    let mut findings = findings(&summary, &segments, answers, &capacity, &failures);
    let each = requests_per_iteration(&segments, &iteration_segments);
    if let Some(w) = work_per_iteration(&segments, &iteration_segments, &each) {
        // Beside the optimum and the limit it explains, after any verdict on the run itself.
        let at = findings
            .iter()
            .position(|f| {
                !matches!(
                    f,
                    Finding::NothingSucceeded { .. }
                        | Finding::ClientBound(_)
                        | Finding::Bottleneck(_)
                        | Finding::ProcessEvent(_)
                )
            })
            .unwrap_or(findings.len());
        findings.insert(at, Finding::WorkPerIteration(w));
    }
    Ok(Analysis {
        summary,
        unit,
        requests_per_iteration: each,
        segments,
        iteration_segments,
        capacity,
        failures,
        failed: one_by_one(r),
        each_request: each_request(r),
        findings,
        series,
        interval_s: r.interval_s,
        stats: stat_rows(r)?,
    })
}
