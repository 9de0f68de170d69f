//! Failures: when each kind began, at what load, how long the failed requests took, and whether
//! they cluster at one duration (a timeout somewhere).

use crate::summary::Percentiles;
use crest_model::results::Results;
use crest_model::{HistError, Outcome};
use serde::Serialize;

/// A cluster: at least this many failures...
const CLUSTER_MIN: u64 = 3;
/// ...whose 10th to 90th percentile span is at most this share of their median...
const CLUSTER_SPAN: f64 = 0.3;
/// ...and whose median is at least this long (ms), is named as a likely timeout.
const CLUSTER_MIN_MS: f64 = 1000.0;

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
    pub first_segment: Option<String>,
    /// How long the failed requests took, ms.
    pub duration_ms: Percentiles,
    /// A sentence when the durations cluster, e.g. a server or proxy timeout near 37 s.
    pub cluster: Option<String>,
}

/// Per failure class, most frequent first.
pub fn failures(r: &Results) -> Result<Vec<FailureAnalysis>, HistError> {
    let mut out = Vec::new();
    for e in &r.errors {
        let key = e.outcome.key();
        let mut h = crest_model::hist::new_histogram();
        for s in r.stats.iter().filter(|s| s.outcome == e.outcome && r.counts(s)) {
            let _ = h.add(&s.latency.decode()?);
        }
        let first = r.intervals.iter().find(|i| i.outcomes.contains_key(&key));
        let first_at_s = first.map(|i| i.t_s);
        let first_segment = first_at_s.and_then(|t| {
            r.segments
                .iter()
                .rev()
                .find(|g| g.start_s <= t + 1e-9)
                .map(|g| g.name.clone())
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
            cluster: cluster(e.outcome, &h),
        });
    }
    Ok(out)
}

fn cluster(outcome: Outcome, h: &hdrhistogram::Histogram<u64>) -> Option<String> {
    if h.len() < CLUSTER_MIN {
        return None;
    }
    let q = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    let (p10, p50, p90) = (q(0.1), q(0.5), q(0.9));
    if p50 < CLUSTER_MIN_MS || (p90 - p10) > CLUSTER_SPAN * p50 {
        return None;
    }
    let whose = match outcome {
        Outcome::Timeout => "crest's own request timeout",
        Outcome::Status(500..=599) => "a server or proxy timeout",
        _ => "a timeout",
    };
    Some(format!(
        "most of these took {} to {} s: it looks like {whose} near {} s",
        seconds(p10),
        seconds(p90),
        seconds(p50)
    ))
}

/// Milliseconds as seconds: whole from 10 s on, else to a tenth with no trailing `.0`, so a
/// 1.5 s timeout is not rounded into another one.
fn seconds(ms: f64) -> String {
    let s = ms / 1000.0;
    if s >= 10.0 || (s * 10.0).round() % 10.0 == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}
