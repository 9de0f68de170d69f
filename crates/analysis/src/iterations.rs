//! Iterations of a scenario's flows: the user's unit of work when a flow is a task submitted,
//! polled until done and fetched. Per flow, what started, completed and failed, at what rate,
//! and how long each took from its start to its end; per step, how many requests each
//! iteration took, which is how a queue that slows down shows itself (more polls per task).

use crate::figures::{Judged, Percentiles, SegmentAnalysis, StepLoad};
use crest_model::results::Results;
use crest_model::HistError;
use serde::Serialize;

/// One flow's iterations over the whole run.
#[derive(Clone, Debug, Serialize)]
pub struct FlowFigures {
    /// The flow's name.
    pub name: String,
    /// Iterations that started.
    pub started: u64,
    /// Iterations that ran to their end with every step passing.
    pub completed: u64,
    /// Iterations with a failed request, check or statement.
    pub failed: u64,
    /// Completed iterations per second of the run's active time.
    pub per_s: f64,
    /// Time of each completed iteration, ms, from its start to its last step's end.
    pub duration_ms: Percentiles,
}

/// The run's iterations: all flows together, and each flow.
#[derive(Clone, Debug, Serialize)]
pub struct Iterations {
    /// Iterations that started.
    pub started: u64,
    /// Of those that ended, the ones that passed.
    pub completed: u64,
    /// Of those that ended, the ones that failed.
    pub failed: u64,
    /// Completed iterations per second of the run's active time.
    pub per_s: f64,
    /// Time of each completed iteration, ms.
    pub duration_ms: Percentiles,
    /// Requests (or transactions) the run made per iteration that ended.
    pub requests_per_iteration: f64,
    /// Per flow, in the scenario's order.
    pub flows: Vec<FlowFigures>,
}

/// The run's iterations, or `None` when it had no flows.
pub fn iterations(r: &Results, requests: u64) -> Result<Option<Iterations>, HistError> {
    if r.iterations.is_empty() {
        return Ok(None);
    }
    let active_s = r.active_s();
    let per_s = |n: u64| if active_s > 0.0 { n as f64 / active_s } else { 0.0 };
    let mut all = crest_model::hist::new_histogram();
    let mut flows = Vec::with_capacity(r.flows.len());
    for (f, name) in r.flows.iter().enumerate() {
        let mut h = crest_model::hist::new_histogram();
        let (mut started, mut completed, mut failed) = (0u64, 0u64, 0u64);
        for s in r.iterations.iter().filter(|s| s.flow as usize == f) {
            started += s.started;
            completed += s.completed;
            failed += s.failed;
            crest_model::hist::add(&mut h, &s.duration.decode()?);
        }
        crest_model::hist::add(&mut all, &h);
        flows.push(FlowFigures {
            name: name.clone(),
            started,
            completed,
            failed,
            per_s: per_s(completed),
            duration_ms: Percentiles::from_micros(&h),
        });
    }
    let completed: u64 = flows.iter().map(|f| f.completed).sum();
    let failed: u64 = flows.iter().map(|f| f.failed).sum();
    Ok(Some(Iterations {
        started: flows.iter().map(|f| f.started).sum(),
        completed,
        failed,
        per_s: per_s(completed),
        duration_ms: Percentiles::from_micros(&all),
        requests_per_iteration: ratio(requests, completed + failed),
        flows,
    }))
}

/// Requests per iteration in each step, beside the step's iterations: `None` for a step in
/// which no iteration ended.
pub fn requests_per_iteration(requests: &[SegmentAnalysis], iterations: &[SegmentAnalysis]) -> Vec<Option<f64>> {
    requests
        .iter()
        .map(|r| {
            iterations
                .iter()
                .find(|i| i.index == r.index && i.requests > 0)
                .map(|i| ratio(r.requests, i.requests))
        })
        .collect()
}

fn ratio(a: u64, b: u64) -> f64 {
    if b > 0 {
        a as f64 / b as f64
    } else {
        0.0
    }
}

/// Iterations per second within this share of their best count as flat.
const FLAT: f64 = 0.95;
/// Requests per iteration must grow by at least this share to say more went into each.
const MORE_WORK: f64 = 0.2;

/// Iterations per second stopped growing while each iteration took more requests: a task
/// polled more often as it waited longer in the service's queue. The request rate still grows
/// there, so a request-based answer would miss the limit this shows.
#[derive(Clone, Debug, Serialize)]
pub struct WorkPerIteration {
    /// The lowest level that reached the best iteration rate (within 5%).
    pub from: StepLoad,
    /// The highest level judged.
    pub to: StepLoad,
    /// Completed iterations per second at `from`.
    pub from_per_s: f64,
    /// Completed iterations per second at `to`.
    pub to_per_s: f64,
    /// Requests per iteration at `from`.
    pub from_requests_each: f64,
    /// Requests per iteration at `to`.
    pub to_requests_each: f64,
    /// Requests per second at `from`.
    pub from_rps: f64,
    /// Requests per second at `to`.
    pub to_rps: f64,
}

/// Finds where the iteration rate flattened while requests per iteration kept rising, over the
/// judged load levels.
pub fn work_per_iteration(
    requests: &[SegmentAnalysis],
    iterations: &[SegmentAnalysis],
    each: &[Option<f64>],
) -> Option<WorkPerIteration> {
    let mut levels: Vec<(&SegmentAnalysis, &SegmentAnalysis, f64)> = iterations
        .iter()
        .filter(|i| i.judged == Judged::Yes && i.load_value() > 0.0)
        .filter_map(|i| {
            let r = requests.iter().find(|r| r.index == i.index)?;
            Some((i, r, each.get(i.index).copied().flatten()?))
        })
        .collect();
    levels.sort_by(|a, b| a.0.load_value().total_cmp(&b.0.load_value()));
    let best = levels.iter().map(|l| l.0.success_rps).fold(0.0, f64::max);
    let first = levels.iter().position(|l| l.0.success_rps >= FLAT * best)?;
    let (fi, fr, fe) = levels[first];
    let (ti, tr, te) = *levels.last()?;
    // Flat: the highest level did no better than the first to reach the best.
    let flat = ti.success_rps <= fi.success_rps * (2.0 - FLAT);
    (first + 1 < levels.len() && flat && best > 0.0 && te >= fe * (1.0 + MORE_WORK)).then(|| WorkPerIteration {
        from: fi.load(),
        to: ti.load(),
        from_per_s: fi.success_rps,
        to_per_s: ti.success_rps,
        from_requests_each: fe,
        to_requests_each: te,
        from_rps: fr.throughput_rps,
        to_rps: tr.throughput_rps,
    })
}
