//! Across steps: the optimal operating point, where the service saturates, where it breaks,
//! which are what a stepping run is for: a capacity plan needs the load to run at and the load
//! never to reach, each with the figures that show it.
//!
//! Only steps whose data holds are judged (see [`Unjudged`]), and a latency change between two
//! steps counts only when it exceeds the measurement's noise (see [`rose`]); docs/reports.md
//! states both rules.

pub use crate::figures::MIN_UNITS;
use crate::figures::{Judged, SegmentAnalysis, StepLoad, WorkUnit};
use crest_model::reason::Miss;
use crest_model::results::Results;
use crest_model::HistError;
use serde::Serialize;

/// Error rate above which a segment counts as broken.
pub const BREAKING_ERROR_RATE: f64 = 0.01;
/// Throughput growth below this share, for a load growth of at least [`LOAD_STEP`], saturates.
pub(crate) const SATURATION_GROWTH: f64 = 0.05;
/// Load must grow at least this much between segments to judge saturation.
const LOAD_STEP: f64 = 0.1;
/// Throughput falling below this share of the best so far, beyond the steps' noise, is
/// saturation past the peak (retrograde scaling); without failures it is no breaking point.
const FALL: f64 = 0.9;
/// Throughput differences within this many combined standard errors of two steps are noise.
const NOISE_THROUGHPUT: f64 = 2.0;
/// Mean latency growing by less than this factor is not a finding ("latency grew"), whatever
/// the noise.
pub const LATENCY_GROWTH: f64 = 1.5;
/// Latency changes smaller than this are not findings: on loopback, sub-millisecond latencies
/// move by tenths of a millisecond from run to run with what else the machine does (issue 20:
/// "grew 3.2x (0.4 ms to 1.1 ms)" was such noise).
pub const LATENCY_FLOOR_MS: f64 = 1.0;
/// A latency change must also exceed this many standard errors of the difference, estimated
/// from the spread of each step's per-interval values: a change within a step's own wander
/// from second to second is not one between steps.
const NOISE_SE: f64 = 3.0;

/// One notable point, with the figures that show it.
#[derive(Clone, Debug, Serialize)]
pub struct CapacityPoint {
    /// The segment.
    pub segment: usize,
    /// What its throughput counts.
    pub unit: WorkUnit,
    /// Its load.
    pub load: StepLoad,
    /// Its load as a number (users or arrivals per second).
    pub load_value: f64,
    /// Successful units of work per second there.
    pub per_s: f64,
    /// The standard error of `per_s`, from the step's own data.
    pub per_s_se: f64,
    /// p95 latency of the successful units there, ms.
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
    /// Breaking: too many units failed.
    Failed(Failed),
    /// Breaking: the step missed a capacity search's service level (latency, a rate not
    /// kept) without failing.
    MissedSlo(Miss),
    /// Saturation past the peak: successful throughput fell from the best so far by more than
    /// a tenth and beyond the steps' noise.
    ThroughputFell {
        /// Successful units per second here.
        rps: f64,
        /// The best before, likewise.
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
    /// It missed a capacity search's service level (its p99, or a rate not kept).
    MissedSlo {
        /// The level.
        load: StepLoad,
        /// How.
        miss: Miss,
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
        /// The level that failed least.
        least: StepLoad,
        /// Its failures.
        failed: Failed,
    },
    /// The lowest level judged was already the breaking point, and every level with few enough
    /// failures lay above it (a cold start that failed, then levels that did not).
    BrokeFirst {
        /// The breaking point.
        load: StepLoad,
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

/// Why a step is shown but not judged: no capacity point, growth or validity finding rests on it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unjudged {
    /// Too few units of work behind its figures: too little data.
    TooLittle {
        /// Units behind its throughput and latency.
        units: u64,
        /// The fewest judged.
        min: u64,
    },
    /// The run's end (a stop condition, a signal) cut it off soon after it started.
    CutShort {
        /// How long it lasted.
        duration_s: f64,
        /// How long the run's other steps lasted (their median).
        before_s: f64,
    },
}

/// One step as the rules read it: whether it is judged, and how much its latency wanders from
/// interval to interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StepNoise {
    /// Why it is not judged; `None` when it is.
    pub unjudged: Option<Unjudged>,
    /// Standard error of its mean latency from the spread of its steady intervals' means, ms;
    /// `None` with fewer than two intervals.
    pub mean_se_ms: Option<f64>,
    /// The same for its p95, ms.
    pub p95_se_ms: Option<f64>,
}

/// Whether latency rose from `from_ms` to `to_ms` (each with its standard error, when known)
/// beyond noise: by at least `factor`, by at least [`LATENCY_FLOOR_MS`], and by more than
/// [`NOISE_SE`] standard errors of the difference. The one rule every growth finding uses.
pub fn rose(from_ms: f64, to_ms: f64, factor: f64, from_se: Option<f64>, to_se: Option<f64>) -> bool {
    let se = (from_se.unwrap_or(0.0).powi(2) + to_se.unwrap_or(0.0).powi(2)).sqrt();
    to_ms >= factor * from_ms && to_ms - from_ms >= LATENCY_FLOOR_MS && to_ms - from_ms > NOISE_SE * se
}

/// What the segments say about capacity. Empty with fewer than two load levels.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Capacity {
    /// What the throughputs count: the steps judged were in this unit.
    pub unit: WorkUnit,
    /// Per step, in order: whether it is judged and its noise.
    pub steps: Vec<StepNoise>,
    /// Distinct judged load levels that completed requests: the points are judged only across
    /// two or more.
    pub levels: usize,
    /// Why no optimal point is named although there are levels to compare.
    pub no_optimal: Option<NoOptimal>,
    /// Where successful throughput divided by mean latency peaks (Kleinrock's power), among
    /// segments without failures beyond 1%.
    pub optimal: Option<CapacityPoint>,
    /// The first segment from the optimum on where more load no longer brings more successful
    /// throughput beyond noise while latency rises beyond noise, or where it fell.
    pub saturation: Option<CapacityPoint>,
    /// The first segment with failures above 1%, or that missed a capacity search's service
    /// level.
    pub breaking: Option<CapacityPoint>,
}

fn point(s: &SegmentAnalysis, why: Why) -> CapacityPoint {
    CapacityPoint {
        segment: s.index,
        unit: WorkUnit::Requests,
        load: s.load(),
        load_value: s.load_value(),
        per_s: s.success_rps,
        per_s_se: s.success_rps_se,
        p95_ms: s.success_latency_ms.p95,
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

/// Finds the points over the judged steps ordered by load, their throughputs counted in
/// `unit`; `segments` are every step of the run, in order.
pub fn capacity_in(unit: WorkUnit, r: &Results, segments: &[SegmentAnalysis]) -> Result<Capacity, HistError> {
    let mut c = capacity(unit, r, segments)?;
    c.unit = unit;
    for p in [&mut c.optimal, &mut c.saturation, &mut c.breaking]
        .into_iter()
        .flatten()
    {
        p.unit = unit;
    }
    Ok(c)
}

/// Each step's [`StepNoise`], in order; `segments` are in the unit the latencies are read in.
pub fn step_noise(unit: WorkUnit, r: &Results, segments: &[SegmentAnalysis]) -> Result<Vec<StepNoise>, HistError> {
    let iterations = unit == WorkUnit::Iterations;
    let mut out = Vec::with_capacity(segments.len());
    for g in segments {
        // Whether a step is judged is decided where the steps are computed, for every report
        // to show.
        let unjudged = match g.judged {
            Judged::CutShort { lasted_s, usual_s } => Some(Unjudged::CutShort {
                duration_s: lasted_s,
                before_s: usual_s,
            }),
            Judged::TooLittle { units, min } => Some(Unjudged::TooLittle { units, min }),
            Judged::Yes | Judged::Empty => None,
        };
        let (means, p95s) = interval_latencies(r, g, iterations)?;
        out.push(StepNoise {
            unjudged,
            mean_se_ms: standard_error(&means),
            p95_se_ms: standard_error(&p95s),
        });
    }
    Ok(out)
}

/// Mean and p95 latency (iteration time for iterations), ms, of each whole interval with units
/// in a step's steady state.
fn interval_latencies(r: &Results, g: &SegmentAnalysis, iterations: bool) -> Result<(Vec<f64>, Vec<f64>), HistError> {
    let eps = 1e-6;
    let (mut means, mut p95s) = (Vec::new(), Vec::new());
    for i in r
        .intervals
        .iter()
        .filter(|i| i.t_s + eps >= g.steady_start_s && i.t_s + r.interval_s <= g.steady_end_s + eps)
    {
        let h = if iterations {
            match &i.iterations {
                Some(it) => it.duration.decode()?,
                None => continue,
            }
        } else if i.requests > 0 {
            i.latency.decode()?
        } else {
            continue;
        };
        if !h.is_empty() {
            means.push(crest_model::hist::us_to_ms(h.mean()));
            p95s.push(crest_model::hist::us_to_ms(h.value_at_quantile(0.95) as f64));
        }
    }
    Ok((means, p95s))
}

/// The standard error of the mean of `v`; `None` with fewer than two values.
fn standard_error(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((var / n).sqrt())
}

/// Twice the combined standard error of two steps' successful throughputs: a difference
/// smaller than this is within what the steps' own data can tell apart.
pub(crate) fn noise(a: &SegmentAnalysis, b: &SegmentAnalysis) -> f64 {
    NOISE_THROUGHPUT * (a.success_rps_se.powi(2) + b.success_rps_se.powi(2)).sqrt()
}

/// Finds the points over the judged segments ordered by load, in one pass that makes them
/// agree: the breaking point first (failures, or a capacity search's service level missed:
/// nothing else breaks a service), then the optimum below it, then saturation between the two.
/// So by construction optimum <= saturation <= breaking point in load, and every throughput
/// quoted is of successful units.
fn capacity(unit: WorkUnit, r: &Results, segments: &[SegmentAnalysis]) -> Result<Capacity, HistError> {
    let steps = step_noise(unit, r, segments)?;
    let judged = |s: &SegmentAnalysis| s.judged == Judged::Yes;
    let loaded = levels(segments);
    // Failures are counted, not estimated: a step the run's end cut short still breaks by its
    // failures when it has the units to show them (a stop condition on the error rate fires
    // in exactly that step).
    let mut countable: Vec<&SegmentAnalysis> = segments
        .iter()
        .filter(|s| {
            s.load_value() > 0.0 && s.steady_requests >= MIN_UNITS && (judged(s) || s.error_rate > BREAKING_ERROR_RATE)
        })
        .collect();
    one_per_load(&mut countable);
    let missed = |s: &SegmentAnalysis| {
        r.find
            .as_ref()
            .and_then(|f| f.probes.get(s.index))
            .filter(|p| !p.passed)
            .and_then(|p| p.miss)
    };
    let breaking = countable.iter().find_map(|s| {
        if s.error_rate > BREAKING_ERROR_RATE {
            Some(point(s, Why::Failed(failed(s))))
        } else {
            missed(s).map(|m| point(s, Why::MissedSlo(m)))
        }
    });
    let below_breaking = |s: &SegmentAnalysis| breaking.as_ref().is_none_or(|b| s.load_value() < b.load_value);
    if loaded.len() < 2 {
        return Ok(Capacity {
            levels: loaded.len(),
            breaking: breaking.filter(|_| countable.len() >= 2),
            steps,
            ..Capacity::default()
        });
    }
    let power = |s: &SegmentAnalysis| {
        if s.success_latency_ms.mean > 0.0 {
            s.success_rps / s.success_latency_ms.mean
        } else {
            0.0
        }
    };
    // The optimum is claimed only where a level ran beyond it and showed latency growing
    // faster than throughput, or failing: at the highest level tried, the optimum may lie
    // further on.
    let best = loaded
        .iter()
        .enumerate()
        .filter(|(_, s)| s.error_rate <= BREAKING_ERROR_RATE && below_breaking(s))
        .max_by(|(_, a), (_, b)| power(a).total_cmp(&power(b)));
    let mut no_optimal = None;
    let optimal = match best {
        None => {
            no_optimal = match &breaking {
                // The lowest level judged already broke: nothing below it to be the optimum.
                Some(b) if loaded.iter().any(|s| s.error_rate <= BREAKING_ERROR_RATE) => {
                    Some(NoOptimal::BrokeFirst { load: b.load.clone() })
                }
                _ => loaded
                    .iter()
                    .min_by(|a, b| a.error_rate.total_cmp(&b.error_rate))
                    .map(|least| NoOptimal::EveryLevelFailed {
                        max_error_rate: BREAKING_ERROR_RATE,
                        least: least.load(),
                        failed: failed(least),
                    }),
            };
            None
        }
        Some((i, s)) => match loaded.get(i + 1) {
            None => {
                no_optimal = Some(NoOptimal::BestAtHighest {
                    load: s.load(),
                    success_rps: s.success_rps,
                    mean_ms: s.success_latency_ms.mean,
                });
                None
            }
            Some(next) => {
                let beyond = if next.error_rate > BREAKING_ERROR_RATE {
                    Beyond::Failed {
                        load: next.load(),
                        failed: failed(next),
                    }
                } else if let Some(m) = missed(next) {
                    Beyond::MissedSlo {
                        load: next.load(),
                        miss: m,
                    }
                } else {
                    Beyond::LatencyOutgrew {
                        load: next.load(),
                        throughput_change_pct: change(s.success_rps, next.success_rps),
                        success_rps: next.success_rps,
                        latency_change_pct: change(s.success_latency_ms.mean, next.success_latency_ms.mean),
                        mean_ms: next.success_latency_ms.mean,
                    }
                };
                Some(point(
                    s,
                    Why::MostPower {
                        success_rps: s.success_rps,
                        mean_ms: s.success_latency_ms.mean,
                        beyond,
                    },
                ))
            }
        },
    };
    // Saturation is looked for from the optimum on (more throughput per unit of latency below
    // it says the service was not yet saturated there) and below the breaking point (which
    // speaks for itself).
    let from = optimal.as_ref().map_or(
        match &no_optimal {
            Some(NoOptimal::BestAtHighest { .. }) => f64::INFINITY,
            _ => 0.0,
        },
        |o| o.load_value,
    );
    let span: Vec<&SegmentAnalysis> = loaded
        .iter()
        .copied()
        .filter(|s| s.load_value() >= from && below_breaking(s))
        .collect();
    let saturation = saturation(&span, &steps);
    Ok(Capacity {
        unit: WorkUnit::Requests,
        levels: loaded.len(),
        steps,
        no_optimal,
        optimal,
        saturation,
        breaking,
    })
}

/// The first step of `span` (the judged levels from the optimum on, below the breaking point, by
/// load) where more load no longer brought more successful throughput beyond noise while
/// latency rose beyond noise, or where throughput fell; `steps` holds each step's noise.
fn saturation(span: &[&SegmentAnalysis], steps: &[StepNoise]) -> Option<CapacityPoint> {
    let latency_se = |s: &SegmentAnalysis| steps.get(s.index).and_then(|n| n.p95_se_ms);
    let mut saturation = None;
    let mut top = span.first().copied();
    for w in span.windows(2) {
        let (a, b) = (w[0], w[1]);
        let best = match top {
            Some(t) if t.success_rps >= a.success_rps => t,
            _ => a,
        };
        top = Some(best);
        // A fall beyond the steps' own noise is saturation past its peak, whatever latency did.
        let fall = best.success_rps - b.success_rps;
        if fall > (1.0 - FALL) * best.success_rps && fall > noise(best, b) {
            saturation = Some(point(
                b,
                Why::ThroughputFell {
                    rps: b.success_rps,
                    best_rps: best.success_rps,
                },
            ));
            break;
        }
        let load_growth = b.load_value() / a.load_value() - 1.0;
        let gain = b.success_rps - a.success_rps;
        let tput_growth = if a.success_rps > 0.0 { gain / a.success_rps } else { 0.0 };
        // Throughput grew by less than the rule's share, or by no more than the two steps' own
        // noise (short steps wander: 370 then 389 a second, each +-27, is no growth) and by
        // less than half as much as the load, while latency rose beyond its noise. A step that
        // grew +65% for twice the users grew, however much its seconds wandered.
        let flat = gain < SATURATION_GROWTH * a.success_rps || (gain <= noise(a, b) && tput_growth < 0.5 * load_growth);
        let p95_rose = rose(
            a.success_latency_ms.p95,
            b.success_latency_ms.p95,
            1.0,
            latency_se(a),
            latency_se(b),
        );
        if load_growth >= LOAD_STEP && flat && p95_rose {
            saturation = Some(point(
                b,
                Why::Saturates {
                    load_growth,
                    from: a.load(),
                    to: b.load(),
                    throughput_growth: tput_growth,
                    from_rps: a.success_rps,
                    to_rps: b.success_rps,
                    from_p95_ms: a.success_latency_ms.p95,
                    to_p95_ms: b.success_latency_ms.p95,
                },
            ));
            break;
        }
    }
    saturation
}

/// The steps that are load levels and completed requests, by load, one per load.
fn levels(segments: &[SegmentAnalysis]) -> Vec<&SegmentAnalysis> {
    let mut loaded: Vec<&SegmentAnalysis> = segments
        .iter()
        .filter(|s| s.requests > 0 && s.load_value() > 0.0 && s.judged == Judged::Yes)
        .collect();
    one_per_load(&mut loaded);
    loaded
}

/// Orders steps by load and keeps, of several at one load (a spike's baseline before and its
/// recovery after), the one that served most of those that did not fail (at most
/// [`BREAKING_ERROR_RATE`]). A recovery's first moments fail on what the spike left queued:
/// its failures belong to the spike, and its load served cleanly in the baseline, so the level
/// is neither a breaking point nor without an optimum for them.
pub(crate) fn one_per_load(steps: &mut Vec<&SegmentAnalysis>) {
    steps.sort_by(|a, b| {
        a.load_value()
            .total_cmp(&b.load_value())
            .then((a.error_rate > BREAKING_ERROR_RATE).cmp(&(b.error_rate > BREAKING_ERROR_RATE)))
            .then(b.success_rps.total_cmp(&a.success_rps))
    });
    steps.dedup_by(|a, b| a.load_value() == b.load_value());
}

/// The highest load level, when successful throughput was still growing there: at least
/// [`SATURATION_GROWTH`] above the level below it and beyond the two steps' noise, for a load
/// growth of at least [`LOAD_STEP`], without failing. The run then ended before its service saturated, whatever the power curve
/// says, so its optimum lies beyond the loads it tried.
pub fn still_growing<'a>(segments: &'a [SegmentAnalysis], capacity: &Capacity) -> Option<&'a SegmentAnalysis> {
    let loaded = levels(segments);
    let [.., below, top] = loaded.as_slice() else {
        return None;
    };
    // A run that broke at or below its highest level did not end still growing.
    if capacity
        .breaking
        .as_ref()
        .is_some_and(|b| b.load_value <= top.load_value())
    {
        return None;
    }
    let gain = top.success_rps - below.success_rps;
    let grew = top.load_value() / below.load_value() - 1.0 >= LOAD_STEP
        && below.success_rps > 0.0
        && gain >= SATURATION_GROWTH * below.success_rps
        && gain > noise(below, top);
    (grew && top.error_rate <= BREAKING_ERROR_RATE).then_some(*top)
}

/// Percent change from `a` to `b` (0 when `a` is 0).
fn change(a: f64, b: f64) -> f64 {
    if a > 0.0 {
        (b / a - 1.0) * 100.0
    } else {
        0.0
    }
}
