//! Across segments: the optimal operating point, where the service saturates, where it breaks.

use crate::analyze::{load_of, step_label, SegmentAnalysis};
use serde::Serialize;

/// Error rate above which a segment counts as broken.
pub const BREAKING_ERROR_RATE: f64 = 0.01;
/// Throughput growth below this share, for a load growth of at least [`LOAD_STEP`], saturates.
const SATURATION_GROWTH: f64 = 0.05;
/// Load must grow at least this much between segments to judge saturation.
const LOAD_STEP: f64 = 0.1;
/// Throughput falling below this share of the best so far breaks.
const FALL: f64 = 0.9;

/// One notable point, with the figures that show it.
#[derive(Clone, Debug, Serialize)]
pub struct CapacityPoint {
    /// The segment.
    pub segment: usize,
    /// Its load, as text.
    pub load: String,
    /// Its load as a number (users or arrivals per second).
    pub load_value: f64,
    /// Throughput there, req/s.
    pub throughput_rps: f64,
    /// p95 latency there, ms.
    pub p95_ms: f64,
    /// Error rate there.
    pub error_rate: f64,
    /// Why this point: the figures in a sentence.
    pub why: String,
}

/// What the segments say about capacity. Empty with fewer than two load levels.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Capacity {
    /// Distinct load levels that completed requests: the points are judged only across two or
    /// more.
    pub levels: usize,
    /// Why no optimal point is named although there are levels to compare, in words.
    pub no_optimal: Option<String>,
    /// Where successful throughput divided by mean latency peaks (Kleinrock's power), among
    /// segments without failures beyond 1%.
    pub optimal: Option<CapacityPoint>,
    /// The first segment where more load no longer brings more throughput, while latency rises.
    pub saturation: Option<CapacityPoint>,
    /// The first segment with errors above 1% or throughput falling below 90% of the best.
    pub breaking: Option<CapacityPoint>,
}

fn point(s: &SegmentAnalysis, why: String) -> CapacityPoint {
    CapacityPoint {
        segment: s.index,
        load: step_label(s),
        load_value: load_of(s),
        throughput_rps: s.throughput_rps,
        p95_ms: s.latency_ms.p95,
        error_rate: s.error_rate,
        why,
    }
}

/// Finds the points over segments ordered by load.
pub fn capacity(segments: &[SegmentAnalysis]) -> Capacity {
    let mut loaded: Vec<&SegmentAnalysis> = segments.iter().filter(|s| s.requests > 0 && load_of(s) > 0.0).collect();
    loaded.sort_by(|a, b| load_of(a).total_cmp(&load_of(b)));
    loaded.dedup_by(|a, b| load_of(a) == load_of(b) && a.throughput_rps <= b.throughput_rps);
    if loaded.len() < 2 {
        return Capacity {
            levels: loaded.len(),
            ..Capacity::default()
        };
    }
    let power = |s: &SegmentAnalysis| {
        if s.latency_ms.mean > 0.0 {
            s.success_rps / s.latency_ms.mean
        } else {
            0.0
        }
    };
    // The optimum is claimed only where a level ran beyond it and showed latency growing
    // faster than throughput: at the highest level tried, the optimum may lie further on.
    let best = loaded
        .iter()
        .enumerate()
        .filter(|(_, s)| s.error_rate <= BREAKING_ERROR_RATE)
        .max_by(|(_, a), (_, b)| power(a).total_cmp(&power(b)));
    let mut no_optimal = None;
    let optimal = match best {
        None => {
            no_optimal = Some(format!(
                "every level failed more than {:.0}% of its requests",
                BREAKING_ERROR_RATE * 100.0
            ));
            None
        }
        Some((i, s)) => match loaded.get(i + 1) {
            None => {
                no_optimal = Some(format!(
                    "throughput per unit of latency was still best at the highest level tried, {} ({:.1} req/s at a mean of {:.1} ms): the optimal point may lie beyond it",
                    step_label(s),
                    s.success_rps,
                    s.latency_ms.mean
                ));
                None
            }
            Some(next) => {
                // Beyond it, either the service failed, or latency grew faster than throughput.
                let beyond = if next.error_rate > BREAKING_ERROR_RATE {
                    format!(
                        "at {} {} of {} requests failed ({:.1}%)",
                        step_label(next),
                        next.failures,
                        next.requests,
                        next.error_rate * 100.0
                    )
                } else {
                    format!(
                        "at {} successful throughput changed {:+.1}% ({:.1} req/s) while mean latency changed {:+.1}% ({:.1} ms)",
                        step_label(next),
                        change(s.success_rps, next.success_rps),
                        next.success_rps,
                        change(s.latency_ms.mean, next.latency_ms.mean),
                        next.latency_ms.mean
                    )
                };
                Some(point(
                    s,
                    format!(
                        "the most throughput per unit of latency, {:.1} req/s at a mean of {:.1} ms; {beyond}",
                        s.success_rps, s.latency_ms.mean
                    ),
                ))
            }
        },
    };
    let mut saturation = None;
    for w in loaded.windows(2) {
        let (a, b) = (w[0], w[1]);
        let load_growth = load_of(b) / load_of(a) - 1.0;
        let tput_growth = if a.throughput_rps > 0.0 {
            b.throughput_rps / a.throughput_rps - 1.0
        } else {
            0.0
        };
        if load_growth >= LOAD_STEP && tput_growth < SATURATION_GROWTH && b.latency_ms.p95 > a.latency_ms.p95 {
            saturation = Some(point(
                b,
                format!(
                    "load grew {:.0}% ({} to {}) but throughput only {:+.1}% ({:.1} to {:.1} req/s) while p95 rose from {:.1} to {:.1} ms",
                    load_growth * 100.0,
                    step_label(a),
                    step_label(b),
                    tput_growth * 100.0,
                    a.throughput_rps,
                    b.throughput_rps,
                    a.latency_ms.p95,
                    b.latency_ms.p95
                ),
            ));
            break;
        }
    }
    let mut breaking = None;
    let mut best = 0.0f64;
    for s in &loaded {
        if s.error_rate > BREAKING_ERROR_RATE {
            breaking = Some(point(
                s,
                format!(
                    "{} of {} requests failed ({:.1}%)",
                    s.failures,
                    s.requests,
                    s.error_rate * 100.0
                ),
            ));
            break;
        }
        if best > 0.0 && s.throughput_rps < FALL * best {
            breaking = Some(point(
                s,
                format!(
                    "throughput fell to {:.1} req/s from a best of {:.1} req/s",
                    s.throughput_rps, best
                ),
            ));
            break;
        }
        best = best.max(s.throughput_rps);
    }
    Capacity {
        levels: loaded.len(),
        no_optimal,
        optimal,
        saturation,
        breaking,
    }
}

/// Percent change from `a` to `b` (0 when `a` is 0).
fn change(a: f64, b: f64) -> f64 {
    if a > 0.0 {
        (b / a - 1.0) * 100.0
    } else {
        0.0
    }
}
