//! Per-step figures: each step's steady state (the intervals left after trimming its warm-up,
//! while throughput was still rising or latency still settling), so that a step's throughput
//! and latency describe the load level rather than the ramp into it; and the per-interval
//! series the charts draw. Every later stage reads these figures; none recomputes them.

use crate::baseline::{ratios, Candidate};
use crate::figures::{
    interval_units, Judged, LittlesLaw, Percentiles, Point, SegmentAnalysis, StatRow, WholeStep, WorkUnit, MIN_UNITS,
};
use crest_model::results::{EndReason, Results};
use crest_model::{EncodedHistogram, HistError};
use hdrhistogram::Histogram;

/// Intervals whose throughput is below this share of the steady level count as warm-up.
const WARMUP_THROUGHPUT: f64 = 0.9;
/// Intervals whose median latency is above this multiple of the steady level count as warm-up.
const WARMUP_LATENCY: f64 = 1.5;
/// In-flight requests below this share of the users point at time spent outside requests.
const LITTLE_GAP: f64 = 0.8;
/// Whole steady intervals a step needs before iterations are rated by the intervals they
/// ended in rather than by the step's own count.
const MIN_RATE_INTERVALS: usize = 3;
/// Fewest steady seconds whose spread gives a step's throughput its uncertainty.
const MIN_SPREAD_INTERVALS: usize = 3;
/// The step a run ended in is cut short when it lasted less than this share of the other
/// steps' median length.
const CUT_SHORT: f64 = 0.5;

/// Every step's figures in requests (or transactions), in order, each computed once. Each
/// step's latency is also given as a ratio to a baseline: the lowest load level, or, for the
/// points of a sweep (which are not load levels), the first point.
pub fn segments(r: &Results) -> Result<Vec<SegmentAnalysis>, HistError> {
    steps(r, WorkUnit::Requests)
}

/// Every step's figures in iterations of the scenario's flows, all flows together; empty when
/// the run has no flows.
pub fn iteration_segments(r: &Results) -> Result<Vec<SegmentAnalysis>, HistError> {
    if r.iterations.is_empty() {
        return Ok(Vec::new());
    }
    steps(r, WorkUnit::Iterations)
}

fn steps(r: &Results, unit: WorkUnit) -> Result<Vec<SegmentAnalysis>, HistError> {
    let mut segments = (0..r.segments.len())
        .map(|i| segment(r, i, unit))
        .collect::<Result<Vec<_>, _>>()?;
    judge(r, &mut segments);
    // Steps not judged are no baseline and get no ratio.
    let candidates: Vec<Candidate> = segments
        .iter()
        .map(|s| Candidate {
            load: s.load_value(),
            mean_ms: (s.requests > s.failures && s.judged == Judged::Yes).then_some(s.success_latency_ms.mean),
        })
        .collect();
    for (s, ratio) in segments.iter_mut().zip(ratios(&candidates)) {
        s.ratio_to_lowest = ratio;
    }
    Ok(segments)
}

/// Labels the steps that cannot be judged: an empty one, and the one the run ended in when a
/// stop rule, a signal or a crash ended it long before a step's usual length.
fn judge(r: &Results, segments: &mut [SegmentAnalysis]) {
    let lengths: Vec<f64> = segments.iter().map(|s| s.end_s - s.start_s).collect();
    let cut = !matches!(
        r.ended_by,
        EndReason::Duration | EndReason::Requests | EndReason::Completed
    );
    let last = segments.len().saturating_sub(1);
    for (i, s) in segments.iter_mut().enumerate() {
        if s.requests == 0 {
            s.judged = Judged::Empty;
            continue;
        }
        if cut && i == last && i > 0 {
            let usual_s = median(lengths[..i].to_vec());
            let lasted_s = lengths[i];
            if lasted_s < CUT_SHORT * usual_s {
                s.judged = Judged::CutShort { lasted_s, usual_s };
                continue;
            }
        }
        // A sweep's point (no load level) ran its users' fixed iterations to the end: it is its
        // whole population, not a sample of a steady state, and is judged on what it has.
        if s.load_value() > 0.0 && s.steady_requests < MIN_UNITS {
            s.judged = Judged::TooLittle {
                units: s.steady_requests,
                min: MIN_UNITS,
            };
        }
    }
}

fn decode(h: &EncodedHistogram, into: &mut Histogram<u64>) -> Result<(), HistError> {
    let _ = into.add(&h.decode()?);
    Ok(())
}

/// Indices of the intervals lying wholly inside `[start, end)`; a run shorter than one interval
/// keeps its only one.
fn whole_intervals(r: &Results, start: f64, end: f64) -> Vec<usize> {
    let w = r.interval_s.max(1e-9);
    let eps = 1e-6;
    let v: Vec<usize> = r
        .intervals
        .iter()
        .enumerate()
        .filter(|(_, i)| i.t_s + eps >= start && i.t_s + w <= end + eps)
        .map(|(k, _)| k)
        .collect();
    if v.is_empty() {
        r.intervals
            .iter()
            .enumerate()
            .filter(|(_, i)| i.t_s + w > start && i.t_s < end)
            .map(|(k, _)| k)
            .collect()
    } else {
        v
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The first steady interval among `idx`, by [`warmup`].
fn steady_from(r: &Results, idx: &[usize], unit: WorkUnit) -> Result<usize, HistError> {
    if idx.len() < 3 {
        return Ok(0);
    }
    let mut rps = Vec::with_capacity(idx.len());
    let mut p50 = Vec::with_capacity(idx.len());
    let mut failed = Vec::with_capacity(idx.len());
    for &k in idx {
        let (n, f, latency) = interval_units(&r.intervals[k], unit);
        // Warm-up is judged on successful work, as the step's throughput is: an interval of
        // failures answered fast is no steadier service.
        rps.push(n.saturating_sub(f) as f64 / r.interval_s);
        failed.push(f > 0);
        let h = match latency {
            Some(h) => h.decode()?,
            None => crest_model::hist::new_histogram(),
        };
        p50.push(if h.is_empty() {
            0.0
        } else {
            h.value_at_quantile(0.5) as f64
        });
    }
    Ok(warmup(&rps, &p50, &failed))
}

/// How many of a step's intervals, given their throughput, median latency and whether any
/// request failed in them, are warm-up: they are trimmed from the start while throughput is
/// below 90% of the second half's median or median latency above 1.5x its median; never more
/// than half the step, and never an interval with a failure in it: failures at the start of a
/// step are the service's answer to the new load, not a warm-up. Shared with the live stop
/// rules, so that they compare the figures the step rows show.
pub(crate) fn warmup(rps: &[f64], p50: &[f64], failed: &[bool]) -> usize {
    if rps.len() < 3 {
        return 0;
    }
    let half = rps.len() / 2;
    let ref_rps = median(rps[half..].to_vec());
    let ref_p50 = median(p50[half..].to_vec());
    // A step whose later seconds are mostly empty (a slow open-model rate, a sparse flow) has
    // no steady level to warm up to: nothing is trimmed.
    if ref_rps <= 0.0 || ref_p50 <= 0.0 {
        return 0;
    }
    let mut first = 0;
    while first < half
        && !failed.get(first).copied().unwrap_or(false)
        && (rps[first] < WARMUP_THROUGHPUT * ref_rps || p50[first] > WARMUP_LATENCY * ref_p50)
    {
        first += 1;
    }
    first
}

/// One step's totals in its unit, from the per-step totals, so no unit is lost to a partial
/// interval.
#[derive(Default)]
struct Totals {
    count: u64,
    failures: u64,
    bytes_received: u64,
    latency: Option<Histogram<u64>>,
    success_latency: Option<Histogram<u64>>,
    ttfb: Option<Histogram<u64>>,
    connect: Option<Histogram<u64>>,
    errors: Vec<(String, u64)>,
}

fn add(into: &mut Option<Histogram<u64>>, h: &EncodedHistogram) -> Result<(), HistError> {
    decode(h, into.get_or_insert_with(crest_model::hist::new_histogram))
}

fn totals(r: &Results, index: usize, unit: WorkUnit) -> Result<Totals, HistError> {
    let mut t = Totals::default();
    match unit {
        WorkUnit::Requests | WorkUnit::Transactions => {
            for s in r.stats.iter().filter(|s| s.segment as usize == index && r.counts(s)) {
                t.count += s.count;
                t.bytes_received += s.bytes_received;
                add(&mut t.latency, &s.latency)?;
                if s.outcome.is_success() {
                    add(&mut t.success_latency, &s.latency)?;
                }
                if let Some(h) = &s.ttfb {
                    add(&mut t.ttfb, h)?;
                }
                if let Some(c) = &s.connect {
                    add(&mut t.connect, c)?;
                }
                if !s.outcome.is_success() {
                    t.failures += s.count;
                    match t.errors.iter_mut().find(|(k, _)| *k == s.outcome.key()) {
                        Some((_, n)) => *n += s.count,
                        None => t.errors.push((s.outcome.key(), s.count)),
                    }
                }
            }
        }
        WorkUnit::Iterations => {
            for s in r.iterations.iter().filter(|s| s.segment as usize == index) {
                t.count += s.completed + s.failed;
                t.failures += s.failed;
                add(&mut t.latency, &s.duration)?;
                add(&mut t.success_latency, &s.duration)?;
                if let Some(h) = &s.failed_duration {
                    add(&mut t.latency, h)?;
                }
            }
            if t.failures > 0 {
                t.errors.push(("failed".into(), t.failures));
            }
        }
    }
    t.errors.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(t)
}

/// One step's figures: counts and percentiles over every unit of the step (from the per-step
/// totals, so no request is lost to trimming or to a partial interval), throughput over its
/// exact span less a warm-up judged on its intervals.
fn segment(r: &Results, index: usize, unit: WorkUnit) -> Result<SegmentAnalysis, HistError> {
    let g = &r.segments[index];
    let idx = whole_intervals(r, g.start_s, g.end_s);
    // A population (users that each run a fixed number of iterations, or a sweep's point, which
    // is no load level) has no steady state to sample: its rate is all of its work over all of
    // its time, so that its best step is never below the run's own average.
    let population = r.users.is_some() || (g.users.is_none() && g.rate.is_none());
    let first = if population { 0 } else { steady_from(r, &idx, unit)? };
    let warm = &idx[..first.min(idx.len())];
    let (mut warm_units, mut warm_failures) = (0u64, 0u64);
    for &k in warm {
        let (n, f, _) = interval_units(&r.intervals[k], unit);
        warm_units += n;
        warm_failures += f;
    }
    let t = totals(r, index, unit)?;
    let steady_start_s = warm.last().map_or(g.start_s, |&k| {
        (r.intervals[k].t_s + r.interval_s).clamp(g.start_s, g.end_s)
    });
    let steady_end_s = g.end_s;
    // Units that ended in the warm-up's intervals but belong to the step before are not the
    // step's: never take away more than the step has.
    let steady_requests = t.count.saturating_sub(warm_units);
    let steady_failures = t.failures.saturating_sub(warm_failures).min(steady_requests);
    let mut secs = (steady_end_s - steady_start_s).max(0.0);
    let (mut rate_units, mut rate_failures) = (steady_requests, steady_failures);
    let steady = &idx[warm.len()..];
    if steady.len() >= MIN_RATE_INTERVALS && !population {
        // Work still running when sending stopped ends in the grace period or never, so a
        // count of the step's own units over its span reads low in the last step (an
        // iteration lasts long against a step; a request less so, but not nothing). Units
        // ending per second in the step's steady seconds is the rate the service completed
        // them at, whatever step they started in. One rule for every unit, so that a flow of
        // one request a run quotes one rate for its iterations and its requests.
        let ended = steady.iter().fold((0, 0), |(n, f), &k| {
            let (a, b, _) = interval_units(&r.intervals[k], unit);
            (n + a, f + b)
        });
        let ended_secs = steady.len() as f64 * r.interval_s;
        // Each count misses some of the step's work (its own iterations still running at its
        // end; those that ended after it, in the grace period): the larger is the nearer.
        let own = (rate_units - rate_failures.min(rate_units)) as f64 / secs.max(1e-9);
        if (ended.0 - ended.1.min(ended.0)) as f64 / ended_secs >= own {
            (rate_units, rate_failures) = ended;
            secs = ended_secs;
        }
    }
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let throughput_rps = per_s(rate_units);
    let successes = rate_units - rate_failures.min(rate_units);
    // A population is all there is, not a sample: its rate has no sampling error.
    let success_rps_se = if population {
        0.0
    } else {
        uncertainty(r, steady, unit, successes, secs)
    };
    let empty = crest_model::hist::new_histogram();
    let latency_ms = Percentiles::from_micros(t.latency.as_ref().unwrap_or(&empty));
    let whole_secs = (g.end_s - g.start_s).max(0.0);
    let whole = WholeStep {
        duration_s: whole_secs,
        throughput_rps: if whole_secs > 0.0 {
            t.count as f64 / whole_secs
        } else {
            0.0
        },
        latency_ms,
        differs: !warm.is_empty(),
    };
    let littles_law = g.users.filter(|u| *u > 0 && steady_requests > 0).map(|users| {
        // Every request of the step over its whole span, as its mean latency is of every
        // request: one window for both sides of the law.
        let in_flight = whole.throughput_rps * latency_ms.mean / 1000.0;
        let busy_share = in_flight / users as f64;
        LittlesLaw {
            in_flight,
            users,
            busy_share,
            flagged: unit == WorkUnit::Requests && r.config.http.is_some() && busy_share < LITTLE_GAP,
        }
    });
    Ok(SegmentAnalysis {
        index,
        kind: g.kind.clone(),
        users: g.users,
        rate: g.rate,
        start_s: g.start_s,
        end_s: g.end_s,
        steady_start_s,
        steady_end_s,
        trimmed_s: (steady_start_s - g.start_s).max(0.0),
        judged: Judged::Yes,
        requests: t.count,
        failures: t.failures,
        error_rate: if t.count > 0 {
            t.failures as f64 / t.count as f64
        } else {
            0.0
        },
        steady_requests,
        steady_failures,
        throughput_rps,
        success_rps: per_s(successes),
        success_rps_se,
        latency_ms,
        success_latency_ms: Percentiles::from_micros(t.success_latency.as_ref().unwrap_or(&empty)),
        ttfb_ms: Percentiles::from_micros(t.ttfb.as_ref().unwrap_or(&empty)),
        whole,
        connect_ms: Percentiles::from_micros(t.connect.as_ref().unwrap_or(&empty)),
        bytes_received: t.bytes_received,
        errors: t.errors,
        ratio_to_lowest: None,
        littles_law,
    })
}

/// The standard error of a step's successful throughput, from its own data: that of the mean
/// of its steady seconds' successful rates, which carries how much the service's pace wandered
/// from second to second; with fewer than [`MIN_SPREAD_INTERVALS`] such seconds there is no
/// spread to read, and the counting error of `successes` over `secs` (Poisson, sqrt(n) / T)
/// stands in. A step with no time has all of its figure as its uncertainty.
fn uncertainty(r: &Results, steady: &[usize], unit: WorkUnit, successes: u64, secs: f64) -> f64 {
    if secs <= 0.0 {
        return successes as f64;
    }
    if steady.len() < MIN_SPREAD_INTERVALS {
        return (successes as f64).sqrt() / secs;
    }
    let rates: Vec<f64> = steady
        .iter()
        .map(|&k| {
            let (n, f, _) = interval_units(&r.intervals[k], unit);
            n.saturating_sub(f) as f64 / r.interval_s
        })
        .collect();
    let k = rates.len() as f64;
    let mean = rates.iter().sum::<f64>() / k;
    let var = rates.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1.0);
    (var / k).sqrt()
}

/// One point per interval, for charts and the CSV.
pub fn series(r: &Results) -> Result<Vec<Point>, HistError> {
    let starts: Vec<f64> = r.segments.iter().map(|s| s.start_s).collect();
    let mut out = Vec::with_capacity(r.intervals.len());
    for i in &r.intervals {
        let h = i.latency.decode()?;
        let q = |q: f64| {
            if h.is_empty() {
                0.0
            } else {
                crest_model::hist::us_to_ms(h.value_at_quantile(q) as f64)
            }
        };
        let ttfb = i.ttfb.decode()?;
        let seg = starts.partition_point(|s| *s <= i.t_s + 1e-9).saturating_sub(1);
        let load = r
            .segments
            .get(seg)
            .and_then(|s| s.users.map(|u| u as f64).or(s.rate))
            .unwrap_or(0.0);
        out.push(Point {
            t_s: i.t_s,
            rps: i.requests as f64 / r.interval_s,
            errors_per_s: i.failures as f64 / r.interval_s,
            p50_ms: q(0.5),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            max_ms: if h.is_empty() { 0.0 } else { h.max() as f64 / 1000.0 },
            ttfb_p50_ms: if ttfb.is_empty() {
                0.0
            } else {
                ttfb.value_at_quantile(0.5) as f64 / 1000.0
            },
            load,
        });
    }
    Ok(out)
}

/// One row per entry of the results' totals, in their order.
pub fn stat_rows(r: &Results) -> Result<Vec<StatRow>, HistError> {
    let ms = |us: u64| us as f64 / 1000.0;
    r.stats
        .iter()
        .map(|s| {
            let h = s.latency.decode()?;
            let q = |q: f64| ms(h.value_at_quantile(q));
            let ttfb_p50_ms = match &s.ttfb {
                Some(t) => Some(ms(t.decode()?.value_at_quantile(0.5))),
                None => None,
            };
            let size_bytes = match &s.size {
                Some(z) => {
                    let z = z.decode()?;
                    let q = |q: f64| z.median_equivalent(z.value_at_quantile(q));
                    Some([q(0.5), q(0.95), z.median_equivalent(z.max())])
                }
                None => None,
            };
            Ok(StatRow {
                p50_ms: q(0.5),
                p90_ms: q(0.9),
                p95_ms: q(0.95),
                p99_ms: q(0.99),
                max_ms: ms(h.max()),
                mean_ms: h.mean() / 1000.0,
                ttfb_p50_ms,
                size_bytes,
            })
        })
        .collect()
}
