//! Per-step figures: each step's steady state (the intervals left after trimming its warm-up,
//! while throughput was still rising or latency still settling), so that a step's throughput
//! and latency describe the load level rather than the ramp into it; and the per-interval
//! series the charts draw. Every later stage reads these figures; none recomputes them.

use crate::baseline::{ratios, Candidate};
use crate::figures::{LittlesLaw, Percentiles, Point, SegmentAnalysis, WholeStep};
use crest_model::results::Results;
use crest_model::{EncodedHistogram, HistError};
use hdrhistogram::Histogram;

/// Intervals whose throughput is below this share of the steady level count as warm-up.
const WARMUP_THROUGHPUT: f64 = 0.9;
/// Intervals whose median latency is above this multiple of the steady level count as warm-up.
const WARMUP_LATENCY: f64 = 1.5;
/// In-flight requests below this share of the users point at time spent outside requests.
const LITTLE_GAP: f64 = 0.8;

/// Every step's figures, in order, each computed once. Each step's latency is also given as a
/// ratio to a baseline: the lowest load level, or, for the points of a sweep (which are not
/// load levels), the first point.
pub fn segments(r: &Results) -> Result<Vec<SegmentAnalysis>, HistError> {
    let mut segments = (0..r.segments.len())
        .map(|i| segment(r, i))
        .collect::<Result<Vec<_>, _>>()?;
    let candidates: Vec<Candidate> = segments
        .iter()
        .map(|s| Candidate {
            load: s.load_value(),
            mean_ms: (s.steady_requests > 0).then_some(s.latency_ms.mean),
        })
        .collect();
    for (s, ratio) in segments.iter_mut().zip(ratios(&candidates)) {
        s.ratio_to_lowest = ratio;
    }
    Ok(segments)
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
fn steady_from(r: &Results, idx: &[usize]) -> Result<usize, HistError> {
    if idx.len() < 3 {
        return Ok(0);
    }
    let mut rps = Vec::with_capacity(idx.len());
    let mut p50 = Vec::with_capacity(idx.len());
    let mut failed = Vec::with_capacity(idx.len());
    for &k in idx {
        let i = &r.intervals[k];
        rps.push(i.requests as f64 / r.interval_s);
        failed.push(i.failures > 0);
        let h = i.latency.decode()?;
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
    let mut first = 0;
    while first < half
        && !failed.get(first).copied().unwrap_or(false)
        && (rps[first] < WARMUP_THROUGHPUT * ref_rps || p50[first] > WARMUP_LATENCY * ref_p50)
    {
        first += 1;
    }
    first
}

/// One segment's figures: counts over the whole step (from the per-step totals, so no request
/// is lost to trimming or to a partial interval), throughput and latency over its steady state.
fn segment(r: &Results, index: usize) -> Result<SegmentAnalysis, HistError> {
    let g = &r.segments[index];
    let idx = whole_intervals(r, g.start_s, g.end_s);
    let first = steady_from(r, &idx)?;
    let steady = &idx[first.min(idx.len())..];
    let (mut steady_requests, mut steady_failures) = (0u64, 0u64);
    let mut latency = crest_model::hist::new_histogram();
    let mut ttfb = crest_model::hist::new_histogram();
    for &k in steady {
        let i = &r.intervals[k];
        steady_requests += i.requests;
        steady_failures += i.failures;
        decode(&i.latency, &mut latency)?;
        decode(&i.ttfb, &mut ttfb)?;
    }
    // A step shorter than one interval (a quick level of 10 requests per user) lies within
    // partial intervals: its rate is over its own span, not over the whole interval.
    let mut steady_start_s = steady.first().map_or(g.start_s, |&k| r.intervals[k].t_s.max(g.start_s));
    let mut steady_end_s = steady
        .last()
        .map_or(g.end_s, |&k| (r.intervals[k].t_s + r.interval_s).min(g.end_s));
    let mut connect = crest_model::hist::new_histogram();
    let mut whole_latency = crest_model::hist::new_histogram();
    let mut whole_ttfb = crest_model::hist::new_histogram();
    let (mut requests, mut failures, mut bytes_received) = (0u64, 0u64, 0u64);
    let mut errors: Vec<(String, u64)> = Vec::new();
    for s in r.stats.iter().filter(|s| s.segment as usize == index && r.counts(s)) {
        requests += s.count;
        bytes_received += s.bytes_received;
        decode(&s.latency, &mut whole_latency)?;
        if let Some(h) = &s.ttfb {
            decode(h, &mut whole_ttfb)?;
        }
        if let Some(c) = &s.connect {
            decode(c, &mut connect)?;
        }
        if !s.outcome.is_success() {
            failures += s.count;
            match errors.iter_mut().find(|(k, _)| *k == s.outcome.key()) {
                Some((_, n)) => *n += s.count,
                None => errors.push((s.outcome.key(), s.count)),
            }
        }
    }
    errors.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    // A step whose requests all ended past its last whole interval (a sweep's point of one
    // request that took a second) has no steady window: its figures are the whole step's,
    // not a row of zeros that a baseline would skip.
    if steady_requests == 0 && requests > 0 {
        (steady_requests, steady_failures) = (requests, failures);
        latency = whole_latency.clone();
        ttfb = whole_ttfb;
        (steady_start_s, steady_end_s) = (g.start_s, g.end_s);
    }
    let secs = (steady_end_s - steady_start_s).max(0.0);
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let throughput_rps = per_s(steady_requests);
    let latency_ms = Percentiles::from_micros(&latency);
    let whole_secs = (g.end_s - g.start_s).max(0.0);
    let whole = WholeStep {
        duration_s: whole_secs,
        throughput_rps: if whole_secs > 0.0 {
            requests as f64 / whole_secs
        } else {
            0.0
        },
        latency_ms: Percentiles::from_micros(&whole_latency),
        differs: steady_requests != requests,
    };
    let littles_law = g.users.filter(|u| *u > 0 && steady_requests > 0).map(|users| {
        let in_flight = throughput_rps * latency_ms.mean / 1000.0;
        let busy_share = in_flight / users as f64;
        LittlesLaw {
            in_flight,
            users,
            busy_share,
            flagged: r.config.http.is_some() && busy_share < LITTLE_GAP,
        }
    });
    Ok(SegmentAnalysis {
        index,
        name: g.name.clone(),
        users: g.users,
        rate: g.rate,
        start_s: g.start_s,
        end_s: g.end_s,
        steady_start_s,
        steady_end_s,
        trimmed_s: (steady_start_s - g.start_s).max(0.0),
        requests,
        failures,
        error_rate: if requests > 0 {
            failures as f64 / requests as f64
        } else {
            0.0
        },
        steady_requests,
        steady_failures,
        throughput_rps,
        success_rps: per_s(steady_requests.saturating_sub(steady_failures)),
        latency_ms,
        ttfb_ms: Percentiles::from_micros(&ttfb),
        whole,
        connect_ms: Percentiles::from_micros(&connect),
        bytes_received,
        errors,
        ratio_to_lowest: None,
        littles_law,
    })
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
                h.value_at_quantile(q) as f64 / 1000.0
            }
        };
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
            load,
        });
    }
    Ok(out)
}
