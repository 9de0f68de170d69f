//! How long a service took to recover from a spike: the time from the end of the spike until
//! latency and errors are back near the baseline's, judged in the run's unit of work: a task
//! whose polls answer fast while the task itself still takes longer than at baseline has not
//! recovered.

use crate::figures::{interval_units, WorkUnit};
use crest_model::results::{Results, Segment};
use crest_model::step::StepKind;
use crest_model::HistError;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Seconds of intervals judged together.
const WINDOW: usize = 3;
/// Recovered when p95 is within this factor of the baseline's...
const LATENCY_FACTOR: f64 = 1.25;
/// ...and the error rate within this much of it.
const ERROR_MARGIN: f64 = 0.01;
/// A second with fewer units than this is judged only within its window: its own p95 is noise.
const SECOND_UNITS: u64 = 20;

/// The recovery after a spike.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Recovery {
    /// What the latencies and error rates are of: requests (transactions), or iterations of
    /// the flows, whose latency is their time from start to end.
    pub unit: WorkUnit,
    /// p95 latency of the baseline segment's second half, in ms.
    pub baseline_p95_ms: f64,
    /// Error rate of the baseline segment's second half.
    pub baseline_error_rate: f64,
    /// Seconds from the end of the spike until a 3-second window was back within 1.25x the
    /// baseline's p95 and 1 point of its error rate; `None` if that never happened.
    pub seconds: Option<f64>,
    /// p95 latency and error rate of the window that was back (or, when none was, of the last
    /// window of the run), so the finding can state them.
    pub p95_ms: Option<f64>,
    /// Error rate of that window.
    pub error_rate: Option<f64>,
    /// What came between the end of the spike and the window that was back, when anything
    /// did: the drain of what the spike left queued, which a 3-second window would average
    /// away.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<Until>,
}

/// The units, failures and p95 of the seconds before a recovery.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Until {
    /// Seconds they span.
    pub seconds: f64,
    /// Units that ended in them.
    pub units: u64,
    /// Of those, the failed.
    pub failures: u64,
    /// Their p95, ms.
    pub p95_ms: f64,
}

/// The baseline, spike and recovery steps: a spike profile's three, or the last three steps of
/// a run steered by hand when they went up from a load and back down to it or below (seed 003:
/// 80, 200, then 60 users; the steps before them, an idle start or a pause, are no baseline).
fn spike_steps(segments: &[Segment]) -> Option<(&Segment, &Segment, &Segment)> {
    if let [b, s, a] = segments {
        if matches!(
            (&b.kind, &s.kind, &a.kind),
            (StepKind::Baseline(_), StepKind::Spike(_), StepKind::Recovery(_))
        ) {
            return Some((b, s, a));
        }
    }
    let [.., b, s, a] = segments else { return None };
    let load = |x: &Segment| x.users.map(|u| u as f64).or(x.rate);
    match (load(b), load(s), load(a)) {
        (Some(lb), Some(ls), Some(la)) if la > 0.0 && la <= lb && ls > lb && segments.len() > 3 => Some((b, s, a)),
        _ => None,
    }
}

/// The recovery, for runs whose steps end in a spike (see [`spike_steps`]).
pub fn recovery(r: &Results, unit: WorkUnit) -> Result<Option<Recovery>, HistError> {
    let Some((baseline, _spike, after)) = spike_steps(&r.segments) else {
        return Ok(None);
    };
    let at = |t: f64| (t / r.interval_s).floor() as usize;
    let mid = (baseline.start_s + baseline.end_s) / 2.0;
    let base = window(r, unit, at(mid), at(baseline.end_s))?;
    let (Some(p95), Some(err)) = (base.p95(), base.error_rate()) else {
        return Ok(None);
    };
    let start = at(after.start_s);
    // A second of the baseline held this many units: where that is many, a second with none
    // after the spike is a stall, not a quiet second.
    let base_seconds = at(baseline.end_s).saturating_sub(at(mid)).max(1);
    let busy = base.requests / base_seconds as u64 >= SECOND_UNITS;
    let mut seconds = None;
    let mut last = (None, None);
    let back = |w: &Window| match (w.p95(), w.error_rate()) {
        (Some(p), Some(e)) => p <= p95 * LATENCY_FACTOR && e <= err + ERROR_MARGIN,
        _ => false,
    };
    let mut until = None;
    for i in start..r.intervals.len().saturating_sub(WINDOW - 1) {
        let w = window(r, unit, i, i + WINDOW)?;
        if let (Some(p), Some(e)) = (w.p95(), w.error_rate()) {
            last = (Some(p), Some(e));
            // The window's first second must be back on its own too: a second of drain after
            // the spike, averaged with two calm ones, would read as recovered at once.
            let first = window(r, unit, i, i + 1)?;
            let first_back = match first.requests {
                0 => !busy,
                n if n < SECOND_UNITS => true,
                _ => back(&first),
            };
            if back(&w) && first_back {
                seconds = Some((i - start) as f64 * r.interval_s);
                let before = window(r, unit, start, i)?;
                until = before.p95().map(|p95_ms| Until {
                    seconds: (i - start) as f64 * r.interval_s,
                    units: before.requests,
                    failures: before.failures,
                    p95_ms,
                });
                break;
            }
        }
    }
    Ok(Some(Recovery {
        unit,
        baseline_p95_ms: p95,
        baseline_error_rate: err,
        seconds,
        p95_ms: last.0,
        error_rate: last.1,
        until,
    }))
}

struct Window {
    requests: u64,
    failures: u64,
    latency: Histogram<u64>,
}

impl Window {
    fn p95(&self) -> Option<f64> {
        (self.requests > 0).then(|| crest_model::hist::us_to_ms(self.latency.value_at_quantile(0.95) as f64))
    }
    fn error_rate(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.failures as f64 / self.requests as f64)
    }
}

fn window(r: &Results, unit: WorkUnit, from: usize, to: usize) -> Result<Window, HistError> {
    let mut w = Window {
        requests: 0,
        failures: 0,
        latency: crest_model::hist::new_histogram(),
    };
    for i in r.intervals.get(from..to.min(r.intervals.len())).unwrap_or(&[]) {
        let (n, f, h) = interval_units(i, unit);
        w.requests += n;
        w.failures += f;
        if let Some(h) = h {
            let _ = w.latency.add(&h.decode()?);
        }
    }
    Ok(w)
}
