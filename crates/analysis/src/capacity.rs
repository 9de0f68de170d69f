//! Across steps: the optimal operating point, where the service saturates, where it breaks,
//! which are what a stepping run is for: a capacity plan needs the load to run at and the load
//! never to reach, each with the figures that show it.

use crate::figures::{SegmentAnalysis, StepLoad};
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
    /// Its load.
    pub load: StepLoad,
    /// Its load as a number (users or arrivals per second).
    pub load_value: f64,
    /// Throughput there, req/s.
    pub throughput_rps: f64,
    /// p95 latency there, ms.
    pub p95_ms: f64,
    /// Error rate there.
    pub error_rate: f64,
    /// Why this point, with its figures.
    pub why: Why,
}

/// Requests of a step that failed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Failed {
    /// Failures.
    pub failures: u64,
    /// Requests.
    pub requests: u64,
    /// failures / requests.
    pub error_rate: f64,
}

/// Why a point is the one named.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// The optimum: the most successful throughput per unit of mean latency, and what the
    /// next level showed.
    MostPower {
        /// Successful throughput there, req/s.
        success_rps: f64,
        /// Mean latency there, ms.
        mean_ms: f64,
        /// What the next level showed.
        beyond: Beyond,
    },
    /// Saturation: load grew, throughput barely did, p95 rose.
    Saturates {
        /// Load growth from the level before, as a fraction.
        load_growth: f64,
        /// The level before.
        from: StepLoad,
        /// This level.
        to: StepLoad,
        /// Throughput growth, as a fraction.
        throughput_growth: f64,
        /// Throughput before, req/s.
        from_rps: f64,
        /// Throughput here, req/s.
        to_rps: f64,
        /// p95 before, ms.
        from_p95_ms: f64,
        /// p95 here, ms.
        to_p95_ms: f64,
    },
    /// Breaking: too many requests failed.
    Failed(Failed),
    /// Breaking: throughput fell from the best so far.
    ThroughputFell {
        /// Throughput here, req/s.
        rps: f64,
        /// The best before, req/s.
        best_rps: f64,
    },
}

/// What the level beyond the optimum showed.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Beyond {
    /// It failed.
    Failed {
        /// The level.
        load: StepLoad,
        /// Its failures.
        failed: Failed,
    },
    /// Latency grew faster than throughput.
    LatencyOutgrew {
        /// The level.
        load: StepLoad,
        /// Successful throughput change, percent.
        throughput_change_pct: f64,
        /// Successful throughput there, req/s.
        success_rps: f64,
        /// Mean latency change, percent.
        latency_change_pct: f64,
        /// Mean latency there, ms.
        mean_ms: f64,
    },
}

/// Why no optimal point is named although there are levels to compare.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoOptimal {
    /// Every level failed more than this share of its requests.
    EveryLevelFailed {
        /// The share.
        max_error_rate: f64,
    },
    /// The highest level tried was still the best: the optimum may lie beyond it.
    BestAtHighest {
        /// The highest level.
        load: StepLoad,
        /// Successful throughput there, req/s.
        success_rps: f64,
        /// Mean latency there, ms.
        mean_ms: f64,
    },
}

/// What the segments say about capacity. Empty with fewer than two load levels.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Capacity {
    /// Distinct load levels that completed requests: the points are judged only across two or
    /// more.
    pub levels: usize,
    /// Why no optimal point is named although there are levels to compare.
    pub no_optimal: Option<NoOptimal>,
    /// Where successful throughput divided by mean latency peaks (Kleinrock's power), among
    /// segments without failures beyond 1%.
    pub optimal: Option<CapacityPoint>,
    /// The first segment where more load no longer brings more throughput, while latency rises.
    pub saturation: Option<CapacityPoint>,
    /// The first segment with errors above 1% or throughput falling below 90% of the best.
    pub breaking: Option<CapacityPoint>,
}

fn point(s: &SegmentAnalysis, why: Why) -> CapacityPoint {
    CapacityPoint {
        segment: s.index,
        load: s.load(),
        load_value: s.load_value(),
        throughput_rps: s.throughput_rps,
        p95_ms: s.latency_ms.p95,
        error_rate: s.error_rate,
        why,
    }
}

fn failed(s: &SegmentAnalysis) -> Failed {
    Failed {
        failures: s.failures,
        requests: s.requests,
        error_rate: s.error_rate,
    }
}

/// The steps that are load levels and completed requests, by load, one per load.
fn levels(segments: &[SegmentAnalysis]) -> Vec<&SegmentAnalysis> {
    let mut loaded: Vec<&SegmentAnalysis> = segments
        .iter()
        .filter(|s| s.requests > 0 && s.load_value() > 0.0)
        .collect();
    loaded.sort_by(|a, b| a.load_value().total_cmp(&b.load_value()));
    loaded.dedup_by(|a, b| a.load_value() == b.load_value() && a.throughput_rps <= b.throughput_rps);
    loaded
}

/// The highest load level, when successful throughput was still growing there: at least
/// [`SATURATION_GROWTH`] above the level below it, for a load growth of at least [`LOAD_STEP`],
/// without failing. The run then ended before its service saturated, whatever the power curve
/// says, so its optimum lies beyond the loads it tried.
pub fn still_growing(segments: &[SegmentAnalysis]) -> Option<&SegmentAnalysis> {
    let loaded = levels(segments);
    let [.., below, top] = loaded.as_slice() else {
        return None;
    };
    let grew = top.load_value() / below.load_value() - 1.0 >= LOAD_STEP
        && below.success_rps > 0.0
        && top.success_rps / below.success_rps - 1.0 >= SATURATION_GROWTH;
    (grew && top.error_rate <= BREAKING_ERROR_RATE).then_some(*top)
}

/// Finds the points over segments ordered by load.
pub fn capacity(segments: &[SegmentAnalysis]) -> Capacity {
    let loaded = levels(segments);
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
            no_optimal = Some(NoOptimal::EveryLevelFailed {
                max_error_rate: BREAKING_ERROR_RATE,
            });
            None
        }
        Some((i, s)) => match loaded.get(i + 1) {
            None => {
                no_optimal = Some(NoOptimal::BestAtHighest {
                    load: s.load(),
                    success_rps: s.success_rps,
                    mean_ms: s.latency_ms.mean,
                });
                None
            }
            Some(next) => {
                // Beyond it, either the service failed, or latency grew faster than throughput.
                let beyond = if next.error_rate > BREAKING_ERROR_RATE {
                    Beyond::Failed {
                        load: next.load(),
                        failed: failed(next),
                    }
                } else {
                    Beyond::LatencyOutgrew {
                        load: next.load(),
                        throughput_change_pct: change(s.success_rps, next.success_rps),
                        success_rps: next.success_rps,
                        latency_change_pct: change(s.latency_ms.mean, next.latency_ms.mean),
                        mean_ms: next.latency_ms.mean,
                    }
                };
                Some(point(
                    s,
                    Why::MostPower {
                        success_rps: s.success_rps,
                        mean_ms: s.latency_ms.mean,
                        beyond,
                    },
                ))
            }
        },
    };
    let mut saturation = None;
    for w in loaded.windows(2) {
        let (a, b) = (w[0], w[1]);
        let load_growth = b.load_value() / a.load_value() - 1.0;
        let tput_growth = if a.throughput_rps > 0.0 {
            b.throughput_rps / a.throughput_rps - 1.0
        } else {
            0.0
        };
        if load_growth >= LOAD_STEP && tput_growth < SATURATION_GROWTH && b.latency_ms.p95 > a.latency_ms.p95 {
            saturation = Some(point(
                b,
                Why::Saturates {
                    load_growth,
                    from: a.load(),
                    to: b.load(),
                    throughput_growth: tput_growth,
                    from_rps: a.throughput_rps,
                    to_rps: b.throughput_rps,
                    from_p95_ms: a.latency_ms.p95,
                    to_p95_ms: b.latency_ms.p95,
                },
            ));
            break;
        }
    }
    let mut breaking = None;
    let mut best = 0.0f64;
    for s in &loaded {
        if s.error_rate > BREAKING_ERROR_RATE {
            breaking = Some(point(s, Why::Failed(failed(s))));
            break;
        }
        if best > 0.0 && s.throughput_rps < FALL * best {
            breaking = Some(point(
                s,
                Why::ThroughputFell {
                    rps: s.throughput_rps,
                    best_rps: best,
                },
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
