//! Stop conditions, evaluated live on each completed interval, so that a run ends as soon as
//! going on would only repeat a failure: an error rate or latency above a bound, latency above a
//! multiple of the first step's, throughput that stops growing from one step to the next or
//! falls.
//!
//! Rules that compare steps (`p95 > 3x first`, `throughput_stalls`, `throughput_falls`) are
//! judged when a step ends, on each step's steady state (its warm-up trimmed as the step rows
//! trim it): a window that straddles two steps, or a first step's figure mixed with its
//! warm-up, made `p95 > 3x first` fire against a "first step's 5.0 ms" whose row said 0.68 ms.

use crate::units::{quantity, Quantity};
use crest_model::expr::{Agg, Bound, Expr, Metric, Op, StopCondition};
use crest_model::monitor::{SeriesKey, Unit};
use crest_model::EncodedHistogram;
use hdrhistogram::Histogram;
use std::collections::VecDeque;

/// Seconds of recent intervals that a condition is measured over.
pub const WINDOW: usize = 5;
/// Fewest requests in the window before a rate or percentile is trusted.
const MIN_REQUESTS: u64 = 20;
/// Throughput must grow by this fraction per step, or it has stopped growing.
const GROWTH: f64 = 0.05;
/// A relative rule on latency (`p95 > 3x first`) never holds while the step's figure is below
/// this (ms). Under a millisecond, ratios measure noise (scheduling, loopback, a runtime's
/// millisecond timer), not a service slowing down: 0.2 ms becoming 0.7 ms is "3.5x" but no
/// one's problem.
pub const RELATIVE_LATENCY_FLOOR_MS: f64 = 1.0;
/// A relative rule on the error rate never holds while the step's rate is below this: against a
/// first step with no failures, any single failure would be "more than 3x first".
pub const RELATIVE_ERROR_RATE_FLOOR: f64 = 0.01;

/// One closed interval, as the run loop sees it.
#[derive(Debug)]
pub struct IntervalFigures<'a> {
    /// Start of the interval, seconds from the start of the run.
    pub t_s: f64,
    /// Length of the interval in seconds.
    pub len_s: f64,
    /// The segment it belongs to.
    pub segment: usize,
    /// Requests that ended in it.
    pub requests: u64,
    /// Of those, failures.
    pub failures: u64,
    /// Their latencies in µs, if any.
    pub latency: Option<&'a Histogram<u64>>,
    /// Iterations of the scenario's flows that completed in it; `None` without flows. When
    /// given, the throughput rules (`throughput_stalls`, `throughput_falls`) judge completed
    /// iterations per second: a task polled more often adds requests, not work done, and a
    /// failed one adds none.
    pub iterations: Option<u64>,
}

#[derive(Clone)]
struct Acc {
    requests: u64,
    failures: u64,
    secs: f64,
    latency: Histogram<u64>,
}

impl Acc {
    fn new() -> Self {
        Acc {
            requests: 0,
            failures: 0,
            secs: 0.0,
            latency: crest_model::hist::new_histogram(),
        }
    }

    fn add(&mut self, f: &IntervalFigures<'_>) {
        self.requests += f.requests;
        self.failures += f.failures;
        self.secs += f.len_s;
        if let Some(h) = f.latency {
            let _ = self.latency.add(h);
        }
    }

    fn value(&self, m: &Metric) -> Option<f64> {
        let ms = |us: u64| crest_model::hist::us_to_ms(us as f64);
        match m {
            Metric::Requests => Some(self.requests as f64),
            Metric::Failures => Some(self.failures as f64),
            Metric::Throughput => (self.secs > 0.0).then(|| self.requests as f64 / self.secs),
            _ if self.requests < MIN_REQUESTS => None,
            Metric::ErrorRate => Some(self.failures as f64 / self.requests as f64),
            Metric::Latency(q) => Some(ms(self.latency.value_at_quantile(q / 100.0))),
            Metric::Mean => Some(crest_model::hist::us_to_ms(self.latency.mean())),
            Metric::Max => Some(ms(self.latency.max())),
            Metric::Monitored(_) => None,
        }
    }
}

/// One interval of the step in progress, kept until the step ends to find its steady state.
struct StepInterval {
    requests: u64,
    iterations: Option<u64>,
    failures: u64,
    secs: f64,
    /// Median latency in µs (0 when there were no requests).
    p50_us: f64,
    /// Latencies, encoded to keep a long step small; only when a rule compares latencies.
    latency: Option<EncodedHistogram>,
}

/// The floor below which a relative rule on `m` never holds, for a rule that fires on growth.
fn relative_floor(m: &Metric) -> Option<f64> {
    match m {
        Metric::Latency(_) | Metric::Mean | Metric::Max => Some(RELATIVE_LATENCY_FLOOR_MS),
        Metric::ErrorRate => Some(RELATIVE_ERROR_RATE_FLOOR),
        _ => None,
    }
}

/// Why the run stopped.
#[derive(Clone, Debug, PartialEq)]
pub struct Stopped {
    /// The condition, as written.
    pub condition: String,
    /// When, in seconds from the start.
    pub at_s: f64,
    /// The figures that made it hold.
    pub reason: StopReason,
}

pub use crest_model::reason::StopReason;

/// Evaluates stop conditions as intervals complete.
pub struct StopWatch {
    conditions: Vec<StopCondition>,
    window: Vec<Acc>,
    /// The first step's steady state, once it has ended.
    first: Option<Acc>,
    segment: usize,
    /// The intervals of the step in progress.
    step: Vec<StepInterval>,
    /// Whether a rule compares steps' latencies, so each interval's latencies are kept.
    keep_latency: bool,
    previous_tput: Option<f64>,
    total: Acc,
    /// Monitored samples of the last [`WINDOW`] seconds, kept only when `windowed`.
    samples: VecDeque<(f64, SeriesKey, Unit, f64)>,
    /// Whether a condition aggregates a monitored series over the window.
    windowed: bool,
}

impl std::fmt::Debug for StopWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StopWatch")
            .field("conditions", &self.conditions)
            .finish_non_exhaustive()
    }
}

impl StopWatch {
    /// A watch over these conditions.
    pub fn new(conditions: Vec<StopCondition>) -> Self {
        let windowed = conditions
            .iter()
            .any(|c| c.monitored().is_some_and(|m| m.agg.is_some_and(|a| a != Agg::Last)));
        let keep_latency = conditions.iter().any(|c| {
            matches!(c, StopCondition::Expr(Expr { bound: Bound::TimesFirst(_), metric, .. })
                if matches!(metric, Metric::Latency(_) | Metric::Mean | Metric::Max))
        });
        StopWatch {
            windowed,
            keep_latency,
            conditions,
            window: Vec::new(),
            first: None,
            segment: 0,
            step: Vec::new(),
            previous_tput: None,
            total: Acc::new(),
            samples: VecDeque::new(),
        }
    }

    /// Feeds one monitor sample; returns the condition on a monitored metric that holds, if
    /// one does. Without an aggregation the latest value counts; `max(...)`, `mean(...)` and
    /// the others combine the last [`WINDOW`] seconds. Any matching series may make it hold.
    pub fn monitored(&mut self, t_s: f64, values: &[(SeriesKey, Unit, f64)]) -> Option<Stopped> {
        // Only an aggregation reads the window; otherwise the latest values are all that matter.
        if self.windowed {
            for (k, u, v) in values {
                self.samples.push_back((t_s, k.clone(), *u, *v));
            }
        }
        while self.samples.front().is_some_and(|s| s.0 < t_s - WINDOW as f64) {
            self.samples.pop_front();
        }
        for c in &self.conditions {
            let StopCondition::Expr(Expr {
                metric: Metric::Monitored(m),
                op,
                bound: Bound::Value(bound),
                text,
                ..
            }) = c
            else {
                continue;
            };
            for (key, unit, latest) in values.iter().filter(|(k, _, _)| k.matches(&m.metric, &m.labels)) {
                let (value, window_s) = match m.agg {
                    None | Some(Agg::Last) => (*latest, None),
                    Some(agg) => {
                        let window: Vec<f64> = self.samples.iter().filter(|s| &s.1 == key).map(|s| s.3).collect();
                        let Some(v) = agg.apply(&window) else { continue };
                        (v, Some(WINDOW))
                    }
                };
                if op.holds(value, *bound) {
                    return Some(Stopped {
                        condition: text.clone(),
                        at_s: t_s,
                        reason: StopReason::Series {
                            key: key.clone(),
                            value: Quantity::Monitored(*unit, value),
                            window_s,
                            bound: Quantity::Monitored(*unit, *bound),
                        },
                    });
                }
            }
        }
        None
    }

    /// Feeds the next interval; returns the condition that holds, if one does.
    pub fn interval(&mut self, f: &IntervalFigures<'_>) -> Option<Stopped> {
        let mut stopped = None;
        if f.segment != self.segment {
            // A step just ended: compare its steady state with the first step's and the last.
            stopped = self.step_ended(f.t_s);
            self.segment = f.segment;
            self.step.clear();
        }
        let mut one = Acc::new();
        one.add(f);
        self.window.push(one);
        if self.window.len() > WINDOW {
            self.window.remove(0);
        }
        self.step.push(StepInterval {
            requests: f.requests,
            iterations: f.iterations,
            failures: f.failures,
            secs: f.len_s,
            p50_us: f
                .latency
                .filter(|h| !h.is_empty())
                .map_or(0.0, |h| h.value_at_quantile(0.5) as f64),
            latency: f.latency.filter(|_| self.keep_latency).map(EncodedHistogram::encode),
        });
        self.total.add(f);
        if stopped.is_some() {
            return stopped;
        }
        let mut w = Acc::new();
        for a in &self.window {
            w.requests += a.requests;
            w.failures += a.failures;
            w.secs += a.secs;
            let _ = w.latency.add(&a.latency);
        }
        for c in &self.conditions {
            let StopCondition::Expr(e) = c else { continue };
            // Counts are over the whole run; rates and latencies over the window.
            let source = if matches!(e.metric, Metric::Requests | Metric::Failures) {
                &self.total
            } else {
                &w
            };
            // Relative rules are judged when a step ends.
            let Bound::Value(bound) = e.bound else { continue };
            let Some(value) = source.value(&e.metric) else { continue };
            if e.op.holds(value, bound) {
                return Some(Stopped {
                    condition: e.text.clone(),
                    at_s: f.t_s + f.len_s,
                    reason: StopReason::Window {
                        metric: e.metric.clone(),
                        value: quantity(&e.metric, value),
                        secs: w.secs,
                        bound: quantity(&e.metric, bound),
                    },
                });
            }
        }
        None
    }

    /// The steady state of the step that just ended: its intervals after the warm-up, and the
    /// iterations that ended in them when the run has flows.
    fn steady_step(&self) -> (Acc, Option<u64>) {
        let rps: Vec<f64> = self
            .step
            .iter()
            .map(|i| {
                if i.secs > 0.0 {
                    i.requests.saturating_sub(i.failures) as f64 / i.secs
                } else {
                    0.0
                }
            })
            .collect();
        let p50: Vec<f64> = self.step.iter().map(|i| i.p50_us).collect();
        let failed: Vec<bool> = self.step.iter().map(|i| i.failures > 0).collect();
        let mut acc = Acc::new();
        let mut iterations: Option<u64> = None;
        for i in &self.step[crate::segment::warmup(&rps, &p50, &failed)..] {
            if let Some(n) = i.iterations {
                *iterations.get_or_insert(0) += n;
            }
            acc.requests += i.requests;
            acc.failures += i.failures;
            acc.secs += i.secs;
            if let Some(Ok(h)) = i.latency.as_ref().map(EncodedHistogram::decode) {
                let _ = acc.latency.add(&h);
            }
        }
        (acc, iterations)
    }

    /// Judges the rules that compare steps, on the steady state of the step that just ended.
    fn step_ended(&mut self, t_s: f64) -> Option<Stopped> {
        let (steady, iterations) = self.steady_step();
        let (tput, unit) = match iterations {
            Some(n) if steady.secs > 0.0 => (Some(n as f64 / steady.secs), crate::figures::WorkUnit::Iterations),
            // Successful work only: a service answering instant 503s past its limit is not
            // growing.
            _ => (
                (steady.secs > 0.0).then(|| steady.requests.saturating_sub(steady.failures) as f64 / steady.secs),
                crate::figures::WorkUnit::Requests,
            ),
        };
        let Some(first) = &self.first else {
            self.previous_tput = tput;
            self.first = Some(steady);
            return None;
        };
        for c in &self.conditions {
            let StopCondition::Expr(e) = c else { continue };
            let Bound::TimesFirst(k) = e.bound else { continue };
            let (Some(value), Some(reference)) = (steady.value(&e.metric), first.value(&e.metric)) else {
                continue;
            };
            let bound = reference * k;
            let grows = matches!(e.op, Op::Gt | Op::Ge);
            if grows && relative_floor(&e.metric).is_some_and(|floor| value < floor) {
                continue;
            }
            if e.op.holds(value, bound) {
                return Some(Stopped {
                    condition: e.text.clone(),
                    at_s: t_s,
                    reason: StopReason::Relative {
                        metric: e.metric.clone(),
                        value: quantity(&e.metric, value),
                        bound: quantity(&e.metric, bound),
                        times: k,
                        reference: quantity(&e.metric, reference),
                    },
                });
            }
        }
        let tput = tput?;
        let previous = self.previous_tput.replace(tput)?;
        for c in &self.conditions {
            let (holds, fell) = match c {
                StopCondition::ThroughputStalls => (tput < previous * (1.0 + GROWTH), false),
                StopCondition::ThroughputFalls => (tput < previous * (1.0 - GROWTH), true),
                StopCondition::Expr(_) => continue,
            };
            if holds {
                return Some(Stopped {
                    condition: c.text().to_string(),
                    at_s: t_s,
                    reason: StopReason::Throughput {
                        fell,
                        rps: tput,
                        previous_rps: previous,
                        unit,
                    },
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(w: &mut StopWatch, t: usize, segment: usize, requests: u64, failures: u64, ms: u64) -> Option<Stopped> {
        feed_us(w, t, segment, requests, failures, ms * 1000)
    }

    fn feed_us(w: &mut StopWatch, t: usize, segment: usize, requests: u64, failures: u64, us: u64) -> Option<Stopped> {
        let mut h = crest_model::hist::new_histogram();
        h.record_n(us, requests.max(1)).unwrap();
        w.interval(&IntervalFigures {
            t_s: t as f64,
            len_s: 1.0,
            segment,
            requests,
            failures,
            latency: Some(&h),
            iterations: None,
        })
    }

    #[test]
    fn error_rate_over_the_window_stops_the_run() {
        let mut w = StopWatch::new(vec![StopCondition::parse("error_rate > 5%").unwrap()]);
        for t in 0..10 {
            assert_eq!(feed(&mut w, t, 0, 100, 1, 10), None);
        }
        let s = feed(&mut w, 10, 0, 100, 60, 10).unwrap();
        assert_eq!(s.condition, "error_rate > 5%");
        assert_eq!(s.at_s, 11.0);
        let StopReason::Window { value, .. } = s.reason else {
            panic!("{s:?}")
        };
        assert!((value.value() - 0.128).abs() < 1e-9, "{value:?}");
    }

    #[test]
    fn latency_against_a_multiple_of_the_first_step() {
        let mut w = StopWatch::new(vec![StopCondition::parse("p95 > 3x first").unwrap()]);
        for t in 0..5 {
            assert_eq!(
                feed(&mut w, t, 0, 100, 0, 10),
                None,
                "no comparison during the first step"
            );
        }
        for t in 5..10 {
            assert_eq!(feed(&mut w, t, 1, 100, 0, 25), None, "2.5x is within 3x");
        }
        for t in 10..20 {
            assert_eq!(feed(&mut w, t, 2, 100, 0, 40), None, "judged when the step ends");
        }
        let s = feed(&mut w, 20, 3, 100, 0, 40).unwrap();
        assert_eq!(s.at_s, 20.0);
        assert!(
            matches!(s.reason, StopReason::Relative { times, reference: Quantity::Ms(r), .. }
                if times == 3.0 && (r - 10.0).abs() < 0.1),
            "{s:?}"
        );
    }

    /// Issue 11, item 6: `p95 > 3x first` fired at 29.6 ms against "the first step's 5.0 ms"
    /// whose row said 0.68 ms: the first step's figure mixed in its warm-up, and the window
    /// straddled steps.
    #[test]
    fn issue_11_relative_rules_compare_steady_states_of_completed_steps() {
        let mut w = StopWatch::new(vec![StopCondition::parse("p95 > 3x first").unwrap()]);
        // The first step warms up for 2 s at 20 ms, then settles at 2 ms: its row says 2 ms.
        for t in 0..10 {
            let ms = if t < 2 { 20 } else { 2 };
            assert_eq!(feed(&mut w, t, 0, 100, 0, ms), None);
        }
        // The next step's own warm-up (30 ms) is not its steady state (3 ms, 1.5x).
        for t in 10..20 {
            let ms = if t < 12 { 30 } else { 3 };
            assert_eq!(feed(&mut w, t, 1, 100, 0, ms), None, "at {t} s");
        }
        // 8 ms is 4x the first step's steady 2 ms (not the 20 ms its warm-up would make p95).
        for t in 20..30 {
            assert_eq!(feed(&mut w, t, 2, 100, 0, 8), None);
        }
        let s = feed(&mut w, 30, 3, 100, 0, 8).unwrap();
        let StopReason::Relative {
            value,
            bound,
            reference,
            ..
        } = s.reason
        else {
            panic!("{s:?}")
        };
        let ms = |q: Quantity| (q.value() * 10.0).round() / 10.0;
        assert_eq!((ms(value), ms(bound), ms(reference)), (8.0, 6.0, 2.0), "{s:?}");
    }

    #[test]
    fn relative_rules_have_an_absolute_floor() {
        let mut w = StopWatch::new(vec![StopCondition::parse("p95 > 3x first").unwrap()]);
        let mut t = 0;
        let mut step = |w: &mut StopWatch, segment: usize, us: u64| {
            let mut stopped = None;
            for _ in 0..5 {
                stopped = stopped.or(feed_us(w, t, segment, 100, 0, us));
                t += 1;
            }
            stopped
        };
        assert_eq!(step(&mut w, 0, 200), None);
        assert_eq!(step(&mut w, 1, 800), None);
        // 4x the first step's 0.2 ms, but under the 1 ms floor: no one's problem.
        assert_eq!(step(&mut w, 2, 1500), None);
        let s = step(&mut w, 3, 1500).unwrap();
        assert!(
            matches!(s.reason, StopReason::Relative { metric: Metric::Latency(_), value: Quantity::Ms(v), .. }
                if (v - 1.5).abs() < 0.01),
            "{s:?}"
        );

        let mut w = StopWatch::new(vec![StopCondition::parse("error_rate > 3x first").unwrap()]);
        let mut t = 0;
        let mut step = |w: &mut StopWatch, segment: usize, failures: u64| {
            let mut stopped = None;
            for _ in 0..5 {
                stopped = stopped.or(feed(w, t, segment, 1000, failures, 1));
                t += 1;
            }
            stopped
        };
        assert_eq!(step(&mut w, 0, 0), None);
        assert_eq!(step(&mut w, 1, 5), None);
        // 0.5% is "more than 3x" a first step without failures, but under the 1% floor.
        assert_eq!(step(&mut w, 2, 20), None);
        let s = step(&mut w, 3, 20).unwrap();
        assert!(
            matches!(s.reason, StopReason::Relative { metric: Metric::ErrorRate, value: Quantity::Fraction(v), .. }
                if (v - 0.02).abs() < 1e-9),
            "{s:?}"
        );
    }

    #[test]
    fn throughput_that_stops_growing_between_steps() {
        let mut w = StopWatch::new(vec![StopCondition::parse("throughput_stalls").unwrap()]);
        let steps = [100, 200, 290, 295];
        let mut t = 0;
        let mut stopped = None;
        for (seg, rps) in steps.iter().enumerate() {
            for _ in 0..5 {
                stopped = stopped.or(feed(&mut w, t, seg, *rps, 0, 10));
                t += 1;
            }
        }
        // The first step still growing is 290 -> 295 (under 5%), seen when a next step starts.
        assert_eq!(stopped, None, "the last step has not ended yet");
        let s = feed(&mut w, t, 4, 295, 0, 10).unwrap();
        assert!(matches!(s.reason, StopReason::Throughput { fell: false, .. }), "{s:?}");
    }

    #[test]
    fn a_monitored_metric_stops_the_run_on_its_latest_value_or_an_aggregate() {
        let load = SeriesKey::new("load_average");
        let fds = SeriesKey::new("process_open_fds").with("process", "api");
        let mut w = StopWatch::new(vec![
            StopCondition::parse("load_average > 3").unwrap(),
            StopCondition::parse("mean(process_open_fds{process=api}) > 100").unwrap(),
        ]);
        assert_eq!(
            w.monitored(
                1.0,
                &[(load.clone(), Unit::Number, 2.5), (fds.clone(), Unit::Count, 90.0)]
            ),
            None
        );
        // 90 then 150: the mean over the window (120) passes 100.
        let s = w
            .monitored(
                2.0,
                &[(load.clone(), Unit::Number, 2.9), (fds.clone(), Unit::Count, 150.0)],
            )
            .unwrap();
        assert_eq!(s.condition, "mean(process_open_fds{process=api}) > 100");
        assert_eq!(
            s.reason,
            StopReason::Series {
                key: fds,
                value: Quantity::Monitored(Unit::Count, 120.0),
                window_s: Some(5),
                bound: Quantity::Monitored(Unit::Count, 100.0),
            }
        );
        let mut w = StopWatch::new(vec![StopCondition::parse("load_average > 3").unwrap()]);
        let s = w.monitored(7.0, &[(load.clone(), Unit::Number, 3.4)]).unwrap();
        assert_eq!(s.at_s, 7.0);
        assert_eq!(
            s.reason,
            StopReason::Series {
                key: load,
                value: Quantity::Monitored(Unit::Number, 3.4),
                window_s: None,
                bound: Quantity::Monitored(Unit::Number, 3.0),
            }
        );
    }
}
