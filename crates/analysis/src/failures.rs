//! Failures: when each kind began, at what load, how long the failed requests took, and whether
//! they cluster at one duration (a timeout somewhere).

use crate::figures::Percentiles;
use crest_model::results::Results;
use crest_model::step::StepKind;
use crest_model::{HistError, Outcome};
use serde::Serialize;

/// A cluster: at least this many failures...
const CLUSTER_MIN: u64 = 3;
/// ...whose 10th to 90th percentile span is at most this share of their median...
const CLUSTER_SPAN: f64 = 0.3;
/// ...and whose median is at least this long (ms), is named as a likely timeout.
const CLUSTER_MIN_MS: f64 = 1000.0;
/// A shorter cluster is a timeout only with more failures in it...
const SHORT_CLUSTER_MIN: u64 = 20;
/// ...a median of at least this (ms: not an instant refusal)...
const SHORT_CLUSTER_FLOOR_MS: f64 = 10.0;
/// ...this many times the successes' median, and at the top of the successes (their p99 no
/// more than [`SHORT_CLUSTER_TOP`] times its median): a cut-off that nothing outlasted, not
/// a failure that takes as long as the work (an error page after the usual 10 ms).
const SHORT_CLUSTER_ABOVE: f64 = 1.5;
const SHORT_CLUSTER_TOP: f64 = 1.05;

/// One failed request, listed on its own when a run had only a few.
#[derive(Clone, Debug, Serialize)]
pub struct FailedRequest {
    /// When it ended, seconds from the start.
    pub at_s: f64,
    /// The request's name.
    pub name: String,
    /// The outcome key.
    pub outcome: String,
    /// A short description of the outcome.
    pub description: String,
    /// The HTTP status, when a response head arrived.
    pub status: Option<u16>,
    /// How long it took, ms.
    pub took_ms: f64,
    /// What went wrong.
    pub detail: String,
}

/// Every failed request of the run, in the order they ended, when the run kept them all (it
/// keeps at most [`crest_model::results::FAILED_KEPT`]); empty otherwise, and then the failure
/// classes say what happened.
pub fn one_by_one(r: &Results) -> Vec<FailedRequest> {
    let failures: u64 = r.errors.iter().map(|e| e.count).sum();
    if failures == 0 || r.failed.len() as u64 != failures {
        return Vec::new();
    }
    r.failed
        .iter()
        .map(|f| FailedRequest {
            at_s: f.at_s,
            name: r.names.get(f.name as usize).cloned().unwrap_or_default(),
            outcome: f.outcome.key(),
            description: f.outcome.describe(),
            status: f.status,
            took_ms: f.took_ms,
            detail: f.detail.clone(),
        })
        .collect()
}

/// Each request of a run, for a chart of latency against start time, or why there is none.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EachRequest {
    /// Every request, in the order they were meant to start.
    Plotted {
        /// The requests.
        points: Vec<RequestDot>,
    },
    /// The run made more requests than results.json keeps one by one.
    TooMany {
        /// Requests the run made (statements inside transactions included).
        requests: u64,
        /// The most that are kept.
        kept: u64,
    },
    /// The results hold none one by one though the run was small: written by a crest from
    /// before they were kept, or joined from parts of which one kept none.
    NotKept,
    /// The run made no request.
    NoRequests,
}

/// One request as the chart plots it.
#[derive(Clone, Debug, Serialize)]
pub struct RequestDot {
    /// When it was meant to start, seconds from the start of the run.
    pub start_s: f64,
    /// Its latency, ms.
    pub latency_ms: f64,
    /// How it ended.
    pub outcome: crest_model::Outcome,
}

/// The run's requests one by one, when results.json kept them (see
/// [`crest_model::results::POINTS_KEPT`]).
pub fn each_request(r: &Results) -> EachRequest {
    let requests: u64 = r.stats.iter().map(|s| s.count).sum();
    if requests == 0 {
        EachRequest::NoRequests
    } else if requests > crest_model::results::POINTS_KEPT {
        EachRequest::TooMany {
            requests,
            kept: crest_model::results::POINTS_KEPT,
        }
    } else if r.points.len() as u64 != requests {
        EachRequest::NotKept
    } else {
        EachRequest::Plotted {
            points: r
                .points
                .iter()
                .map(|p| RequestDot {
                    start_s: p.start_us() as f64 / 1e6,
                    latency_ms: crest_model::hist::us_to_ms(p.latency_us() as f64),
                    outcome: p.outcome(),
                })
                .collect(),
        }
    }
}

/// One kind of failure.
#[derive(Clone, Debug, Serialize)]
pub struct FailureAnalysis {
    /// Outcome key (`http_500`, `timeout`, ...).
    pub outcome: String,
    /// A short description.
    pub description: String,
    /// How many.
    pub count: u64,
    /// One example message.
    pub example: String,
    /// When the first ended, seconds from the start.
    pub first_at_s: Option<f64>,
    /// The segment it ended in.
    pub first_segment: Option<StepKind>,
    /// How long the failed requests took, ms.
    pub duration_ms: Percentiles,
    /// Set when the durations cluster, e.g. a server or proxy timeout near 37 s.
    pub cluster: Option<Cluster>,
}

/// Failures whose durations cluster at one value: a timeout somewhere.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cluster {
    /// 10th percentile of their durations, ms.
    pub p10_ms: f64,
    /// Median, ms: where the timeout likely is.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// Whose timeout it likely is.
    pub whose: TimeoutOf,
}

/// Whose timeout a cluster of failures points at, judged by their outcome.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutOf {
    /// crest's own request timeout (the requests timed out).
    Crest,
    /// A server or proxy (5xx answers).
    ServerOrProxy,
    /// Something else.
    Unknown,
}

/// Per failure class, most frequent first.
pub fn failures(r: &Results) -> Result<Vec<FailureAnalysis>, HistError> {
    let mut out = Vec::new();
    for e in &r.errors {
        let key = e.outcome.key();
        let mut h = crest_model::hist::new_histogram();
        let mut names = std::collections::BTreeSet::new();
        for s in r.stats.iter().filter(|s| s.outcome == e.outcome && r.counts(s)) {
            let _ = h.add(&s.latency.decode()?);
            names.insert(s.name);
        }
        // The successes of the same requests: a slow endpoint that always fails is not cut off
        // by a deadline because a fast one beside it succeeds.
        let mut ok = crest_model::hist::new_histogram();
        for s in r
            .stats
            .iter()
            .filter(|s| s.outcome == Outcome::Success && names.contains(&s.name) && r.counts(s))
        {
            let _ = ok.add(&s.latency.decode()?);
        }
        let first = r.intervals.iter().find(|i| i.outcomes.contains_key(&key));
        let first_at_s = first.map(|i| i.t_s);
        let first_segment = first_at_s.and_then(|t| {
            r.segments
                .iter()
                .rev()
                .find(|g| g.start_s <= t + 1e-9)
                .map(|g| g.kind.clone())
        });
        let duration_ms = Percentiles::from_micros(&h);
        out.push(FailureAnalysis {
            outcome: key,
            description: e.outcome.describe(),
            count: e.count,
            example: e.example.clone(),
            first_at_s,
            first_segment,
            duration_ms,
            cluster: cluster(e.outcome, &h, &ok),
        });
    }
    Ok(out)
}

/// A cluster of one class's failure times (`h`), judged against the successes' (`ok`): one of
/// a second or more on its own, a shorter one (a server's 40 ms deadline) only above and at
/// the top of what succeeded.
fn cluster(outcome: Outcome, h: &hdrhistogram::Histogram<u64>, ok: &hdrhistogram::Histogram<u64>) -> Option<Cluster> {
    if h.len() < CLUSTER_MIN {
        return None;
    }
    let q = |q: f64| crest_model::hist::us_to_ms(h.value_at_quantile(q) as f64);
    let (p10, p50, p90) = (q(0.1), q(0.5), q(0.9));
    if (p90 - p10) > CLUSTER_SPAN * p50 {
        return None;
    }
    // A deadline answers with a timeout, 408, 500, 503 or 504 (what servers and proxies send
    // when theirs runs out), not with a reset or a failed check.
    let deadline = matches!(outcome, Outcome::Timeout | Outcome::Status(408 | 500 | 502..=504));
    if p50 < CLUSTER_MIN_MS {
        let ok_q = |q: f64| crest_model::hist::us_to_ms(ok.value_at_quantile(q) as f64);
        let short = deadline
            && h.len() >= SHORT_CLUSTER_MIN
            && p50 >= SHORT_CLUSTER_FLOOR_MS
            && !ok.is_empty()
            && p50 >= SHORT_CLUSTER_ABOVE * ok_q(0.5)
            && ok_q(0.99) <= SHORT_CLUSTER_TOP * p50;
        if !short {
            return None;
        }
    }
    let whose = match outcome {
        Outcome::Timeout => TimeoutOf::Crest,
        Outcome::Status(500..=599) => TimeoutOf::ServerOrProxy,
        _ => TimeoutOf::Unknown,
    };
    Some(Cluster {
        p10_ms: p10,
        p50_ms: p50,
        p90_ms: p90,
        whose,
    })
}
