//! Findings: what the figures say, most important first, so that a reader learns the verdict
//! before the tables. Each finding carries the figures that back it; the report crate puts it
//! in words, the same words in every format.

use crate::capacity::{rose, Capacity, CapacityPoint, NoOptimal, StepNoise, LATENCY_GROWTH, MIN_UNITS};
use crate::failures::{Cluster, FailureAnalysis};
use crate::figures::{SegmentAnalysis, StepLoad, WorkUnit};
use crate::recovery::Recovery;
use crate::resources::Leak;
#[cfg(doc)]
use crate::resources::Stats;
use crate::summary::{ErrorSummary, Summary};
use crate::thresholds::ThresholdResult;
use crate::validity::ClientLimit;
use crest_model::results::StopRecord;
use crest_model::step::StepKind;
use serde::Serialize;

/// One finding, with its figures.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// What limits the service, when it is a resource or a limit of the service's own (crest's
    /// own limits are [`Finding::ClientBound`]).
    Bottleneck(Box<crate::bottleneck::Bottleneck>),
    /// A watched process exited, was OOM-killed or restarted.
    ProcessEvent(crate::events::ProcessEvent),
    /// No request succeeded; the most frequent failure, when any request completed.
    NothingSucceeded {
        /// Requests completed.
        requests: u64,
        /// The most frequent failure.
        top: Option<ErrorSummary>,
    },
    /// Every user ran its flow a fixed number of times (`run_once`, threads x loops): how long
    /// until all were done, how long each took, and what the watched resources peaked at.
    UsersDone {
        /// The users' times.
        users: crate::summary::UsersDone,
        /// Peaks of the watched processes' (else the host's) series over the run.
        peaks: Vec<Peak>,
    },
    /// crest itself may have limited the run.
    ClientBound(Vec<ClientLimit>),
    /// Iterations per second flattened while each iteration took more requests.
    WorkPerIteration(crate::iterations::WorkPerIteration),
    /// A resource grew under steady load.
    Leak(Leak),
    /// A stop condition ended the run.
    Stopped(StopRecord),
    /// Workers of a distributed run were lost while it went on: their load is missing from
    /// then on.
    WorkersLost(Vec<crate::summary::LostWorker>),
    /// Mean latency of successful units grew across load levels, from the lowest to the
    /// highest.
    LatencyGrew {
        /// What the latencies are of: successful units of this kind.
        unit: WorkUnit,
        /// Highest level's mean over the lowest's.
        ratio: f64,
        /// The lowest level.
        from: StepLoad,
        /// The highest level.
        to: StepLoad,
        /// Mean latency at the lowest, ms.
        from_ms: f64,
        /// Mean latency at the highest, ms.
        to_ms: f64,
        /// Successful units behind the lowest level's figures.
        from_requests: u64,
        /// Successful units behind the highest level's figures.
        to_requests: u64,
    },
    /// Mean latency grew across the points of a sweep, from the first to the slowest.
    PointsDiffer {
        /// What the latencies are of: successful units of this kind.
        unit: WorkUnit,
        /// Slowest point's mean over the first's.
        ratio: f64,
        /// The first point.
        from: StepKind,
        /// The slowest point.
        to: StepKind,
        /// Mean latency at the first, ms.
        from_ms: f64,
        /// Mean latency at the slowest, ms.
        to_ms: f64,
        /// Successful units behind the first point's figures.
        from_requests: u64,
        /// Successful units behind the slowest point's figures.
        to_requests: u64,
    },
    /// The optimal operating point.
    Optimal(CapacityPoint),
    /// Why no optimal point is named.
    NoOptimal(NoOptimal, crate::figures::WorkUnit),
    /// Where the service saturates.
    Saturates(CapacityPoint),
    /// Where the service breaks, and the level below it.
    Breaks {
        /// The breaking point.
        point: CapacityPoint,
        /// The highest level below it.
        after: Option<StepLoad>,
    },
    /// A heavier load got far less useful work done than the best: the service collapsed rather
    /// than held its best past its limit (timeouts and 503s in place of answers).
    Collapsed {
        /// The load that served the most.
        best: StepLoad,
        /// Successful units per second there.
        best_per_s: f64,
        /// The heavier load that served the least.
        at: StepLoad,
        /// Successful units per second there.
        per_s: f64,
        /// What they count.
        unit: WorkUnit,
    },
    /// Failures of one kind that look like a timeout.
    Clustered {
        /// How many failed this way.
        count: u64,
        /// The outcome's description.
        description: String,
        /// The outcome's key.
        outcome: String,
        /// The durations.
        cluster: Cluster,
    },
    /// Some requests failed.
    SomeFailed {
        /// Failures.
        failures: u64,
        /// Requests.
        requests: u64,
        /// failures / requests.
        error_rate: f64,
        /// The most frequent failure.
        top: ErrorSummary,
    },
    /// Every request succeeded.
    AllSucceeded {
        /// Requests.
        requests: u64,
    },
    /// Connect time stayed flat across steps: the network connection layer is no bottleneck.
    ConnectFlat {
        /// Lowest p95 connect time of a step, ms.
        min_ms: f64,
        /// Highest, ms.
        max_ms: f64,
        /// The steps compared.
        steps: usize,
        /// Connections opened in them.
        connections: u64,
    },
    /// How the service recovered after a spike.
    Recovered(Recovery),
    /// Thresholds that failed.
    ThresholdsFailed(Vec<ThresholdResult>),
    /// Every threshold held, each with what it measured.
    ThresholdsHeld(Vec<ThresholdResult>),
}

/// A watched series at its highest.
#[derive(Clone, Debug, Serialize)]
pub struct Peak {
    /// A human title.
    pub title: String,
    /// Its unit.
    pub unit: crest_model::monitor::Unit,
    /// The highest sample.
    pub peak: f64,
    /// Of how many.
    pub samples: usize,
}

/// At most this many peaks are named in a sentence; the resources table has them all.
const PEAKS_NAMED: usize = 4;

/// The peaks worth naming after a run: the watched processes' CPU and memory, or the host's
/// when no process was watched; each of enough samples to hold ([`Stats::enough`]).
fn peaks(s: &Summary) -> Vec<Peak> {
    let with_peak = |prefix: &'static str| {
        s.resources
            .iter()
            .filter(move |r| r.key.starts_with(prefix) && (r.key.contains("cpu") || r.key.contains("memory")))
            .filter_map(|r| {
                r.all.as_ref().filter(|a| a.enough()).map(|a| Peak {
                    title: r.title.clone(),
                    unit: r.unit,
                    peak: a.peak,
                    samples: a.samples,
                })
            })
    };
    let mut out: Vec<Peak> = with_peak("process_").collect();
    if out.is_empty() {
        out = with_peak("host_").collect();
    }
    out.truncate(PEAKS_NAMED);
    out
}

/// A heavier load that served less than this share of the best's successful units a second
/// collapsed.
const COLLAPSE: f64 = 0.5;

/// The heavier load, past the one that served the most, that served the least, when it served
/// under half as much: each of enough units to hold.
fn collapsed(steps: &[&SegmentAnalysis], unit: WorkUnit) -> Option<Finding> {
    let enough = |g: &&&SegmentAnalysis| g.steady_requests >= MIN_UNITS && g.load_value() > 0.0;
    let best = steps
        .iter()
        .filter(enough)
        .max_by(|a, b| a.success_rps.total_cmp(&b.success_rps))?;
    // A heavier step cut short counts only when it failed: its throughput is of a moment.
    let worst = steps
        .iter()
        .filter(enough)
        .filter(|g| g.load_value() > best.load_value())
        .filter(|g| g.judged == crate::figures::Judged::Yes || g.error_rate > crate::capacity::BREAKING_ERROR_RATE)
        .min_by(|a, b| a.success_rps.total_cmp(&b.success_rps))?;
    (worst.success_rps < COLLAPSE * best.success_rps).then(|| Finding::Collapsed {
        best: best.load(),
        best_per_s: best.success_rps,
        at: worst.load(),
        per_s: worst.success_rps,
        unit,
    })
}

/// The findings for a run, most important first.
/// `segments` are the steps in requests (transactions), `steps` the same steps in the run's unit
/// of work, which every answer is judged in.
pub fn findings(
    s: &Summary,
    segments: &[SegmentAnalysis],
    steps: &[SegmentAnalysis],
    capacity: &Capacity,
    failures: &[FailureAnalysis],
) -> Vec<Finding> {
    let mut out = Vec::new();
    // A run with nothing to measure is said before anything else: every other figure then
    // describes failures.
    if s.successes == 0 {
        out.push(Finding::NothingSucceeded {
            requests: s.requests,
            top: s.errors.first().cloned(),
        });
    }
    // Why the service stopped scaling is what the run was for.
    if let Some(b) = s.bottleneck.as_ref().filter(|b| {
        !matches!(
            b.kind,
            crate::bottleneck::Kind::LoadGenerator | crate::bottleneck::Kind::None
        )
    }) {
        out.push(Finding::Bottleneck(Box::new(b.clone())));
    }
    // A process that died changes what every later figure describes.
    out.extend(s.events.iter().cloned().map(Finding::ProcessEvent));
    // A run that asks how long a population of users takes leads with the answer.
    if let Some(u) = s.users.as_ref().filter(|u| u.finished > 0) {
        out.push(Finding::UsersDone {
            users: u.clone(),
            peaks: peaks(s),
        });
    }
    // A run that lost part of its load says so before any figure of it.
    if !s.lost_workers.is_empty() {
        out.push(Finding::WorkersLost(s.lost_workers.clone()));
    }
    if !s.client_bound.is_empty() {
        out.push(Finding::ClientBound(s.client_bound.clone()));
    }
    // A leak ends runs that last longer than the test; it is said before the capacity figures.
    out.extend(s.leaks.iter().cloned().map(Finding::Leak));
    let loaded: Vec<_> = segments.iter().filter(|g| g.requests > 0).collect();
    if let Some(st) = &s.stopped_by {
        out.push(Finding::Stopped(st.clone()));
    }
    let in_unit: Vec<_> = steps.iter().filter(|g| g.requests > 0).collect();
    out.extend(latency_growth(&in_unit, &capacity.steps, capacity.unit));
    if let Some(o) = &capacity.optimal {
        out.push(Finding::Optimal(o.clone()));
    }
    if let Some(why) = capacity.no_optimal.as_ref().filter(|_| capacity.levels >= 2) {
        out.push(Finding::NoOptimal(why.clone(), capacity.unit));
    }
    if let Some(p) = &capacity.saturation {
        out.push(Finding::Saturates(p.clone()));
    }
    if let Some(p) = &capacity.breaking {
        let before = in_unit
            .iter()
            .filter(|g| g.load_value() < p.load_value)
            .max_by(|x, y| x.load_value().total_cmp(&y.load_value()));
        out.push(Finding::Breaks {
            point: p.clone(),
            after: before.map(|g| g.load()),
        });
    }
    // A heavier step crest itself limited is no collapse of the service.
    if s.client_bound.is_empty() {
        out.extend(collapsed(&in_unit, capacity.unit));
    }
    for f in failures {
        if let Some(c) = &f.cluster {
            out.push(Finding::Clustered {
                count: f.count,
                description: f.description.clone(),
                outcome: f.outcome.clone(),
                cluster: c.clone(),
            });
        }
    }
    // With no success at all, the first finding already said this.
    if s.failures > 0 && s.successes > 0 {
        if let Some(top) = s.errors.first() {
            out.push(Finding::SomeFailed {
                failures: s.failures,
                requests: s.requests,
                error_rate: s.error_rate,
                top: top.clone(),
            });
        }
    } else if s.failures == 0 && s.requests > 0 {
        out.push(Finding::AllSucceeded { requests: s.requests });
    }
    // Flat connect times say the connection layer is no bottleneck only over judged steps and
    // enough connections: one user's single connect per level says nothing.
    let connecting: Vec<&SegmentAnalysis> = loaded
        .iter()
        .copied()
        .filter(|g| g.connect_ms.count > 0 && capacity.steps.get(g.index).is_some_and(|n| n.unjudged.is_none()))
        .collect();
    let connections: u64 = connecting.iter().map(|g| g.connect_ms.count).sum();
    if connecting.len() >= 2 && connections >= MIN_UNITS {
        let (min, max) = connecting
            .iter()
            .map(|g| g.connect_ms.p95)
            .fold((f64::MAX, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
        if max <= 2.0 * min.max(0.05) {
            out.push(Finding::ConnectFlat {
                min_ms: min,
                max_ms: max,
                steps: connecting.len(),
                connections,
            });
        }
    }
    if let Some(rec) = &s.recovery {
        out.push(Finding::Recovered(rec.clone()));
    }
    let failed: Vec<ThresholdResult> = s.thresholds.iter().filter(|t| !t.pass).cloned().collect();
    if !failed.is_empty() {
        out.push(Finding::ThresholdsFailed(failed));
    } else if !s.thresholds.is_empty() {
        out.push(Finding::ThresholdsHeld(s.thresholds.clone()));
    }
    out
}

/// How mean latency grew from the baseline to the slowest step: across load levels (from the
/// lowest load to the highest), or across the points of a sweep (from the first point), which are
/// not load levels. Only judged steps count, and the growth must pass [`rose`] with a factor of
/// [`LATENCY_GROWTH`]; `None` with fewer than two such levels or points.
fn latency_growth(loaded: &[&SegmentAnalysis], steps: &[StepNoise], unit: WorkUnit) -> Option<Finding> {
    let noise = |g: &SegmentAnalysis| steps.get(g.index).cloned().unwrap_or_default();
    let judged: Vec<&SegmentAnalysis> = loaded
        .iter()
        .copied()
        .filter(|g| noise(g).unjudged.is_none() && g.success_latency_ms.mean > 0.0)
        .collect();
    let grew = |a: &SegmentAnalysis, b: &SegmentAnalysis| {
        rose(
            a.success_latency_ms.mean,
            b.success_latency_ms.mean,
            LATENCY_GROWTH,
            noise(a).mean_se_ms,
            noise(b).mean_se_ms,
        )
    };
    let levels: Vec<&SegmentAnalysis> = judged.iter().copied().filter(|g| g.load_value() > 0.0).collect();
    let mut distinct: Vec<f64> = levels.iter().map(|g| g.load_value()).collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    if levels.len() >= 2 && distinct.len() >= 2 {
        let lo = levels.iter().min_by(|x, y| x.load_value().total_cmp(&y.load_value()))?;
        let hi = levels.iter().max_by(|x, y| x.load_value().total_cmp(&y.load_value()))?;
        return grew(lo, hi).then(|| Finding::LatencyGrew {
            unit,
            ratio: hi.success_latency_ms.mean / lo.success_latency_ms.mean,
            from: lo.load(),
            to: hi.load(),
            from_ms: lo.success_latency_ms.mean,
            to_ms: hi.success_latency_ms.mean,
            from_requests: lo.steady_requests - lo.steady_failures,
            to_requests: hi.steady_requests - hi.steady_failures,
        });
    }
    if levels.is_empty() && judged.len() >= 2 {
        let first = judged[0];
        let slowest = judged[1..]
            .iter()
            .max_by(|a, b| a.success_latency_ms.mean.total_cmp(&b.success_latency_ms.mean))?;
        // A sweep's point is a whole run, its users' fixed iterations to the end: the spread of
        // its seconds is its queue, not noise to discount (study.md judges them the same way).
        let whole = rose(
            first.success_latency_ms.mean,
            slowest.success_latency_ms.mean,
            LATENCY_GROWTH,
            None,
            None,
        );
        return whole.then(|| Finding::PointsDiffer {
            unit,
            ratio: slowest.success_latency_ms.mean / first.success_latency_ms.mean,
            from: first.kind.clone(),
            to: slowest.kind.clone(),
            from_ms: first.success_latency_ms.mean,
            to_ms: slowest.success_latency_ms.mean,
            from_requests: first.steady_requests - first.steady_failures,
            to_requests: slowest.steady_requests - slowest.steady_failures,
        });
    }
    None
}
