//! Stop conditions, evaluated live on each completed interval (seed 003's rules): an error rate
//! or latency above a bound, latency above a multiple of the first step's, throughput that stops
//! growing from one step to the next or falls.

use crate::expr::{Agg, Bound, Expr, Metric};
use crate::resources::show_value;
use crest_model::monitor::{SeriesKey, Unit};
use hdrhistogram::Histogram;
use std::collections::VecDeque;

/// Seconds of recent intervals that a condition is measured over.
pub const WINDOW: usize = 5;
/// Fewest requests in the window before a rate or percentile is trusted.
const MIN_REQUESTS: u64 = 20;
/// Throughput must grow by this fraction per step, or it has stopped growing.
const GROWTH: f64 = 0.05;

/// A condition that ends the run.
#[derive(Clone, Debug, PartialEq)]
pub enum StopCondition {
    /// A metric over the last [`WINDOW`] seconds against a bound.
    Expr(Expr),
    /// A step's throughput is less than 5% above the previous step's.
    ThroughputStalls,
    /// A step's throughput is more than 5% below the previous step's.
    ThroughputFalls,
}

impl StopCondition {
    /// Parses `error_rate > 5%`, `p95 > 3x first`, `throughput_stalls`, `throughput_falls`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "throughput_stalls" => Ok(StopCondition::ThroughputStalls),
            "throughput_falls" => Ok(StopCondition::ThroughputFalls),
            other => {
                let e = Expr::parse(other).map_err(|m| format!("{m}; or use throughput_stalls, throughput_falls"))?;
                if e.name.is_some() {
                    return Err(format!(
                        "{other:?}: stop conditions apply to all requests; drop the {{name=...}}"
                    ));
                }
                Ok(StopCondition::Expr(e))
            }
        }
    }

    /// The monitored series it reads, when it reads one.
    pub fn monitored(&self) -> Option<&crate::expr::Monitored> {
        match self {
            StopCondition::Expr(e) => e.monitored(),
            _ => None,
        }
    }

    /// The condition as written.
    pub fn text(&self) -> String {
        match self {
            StopCondition::Expr(e) => e.text.clone(),
            StopCondition::ThroughputStalls => "throughput_stalls".into(),
            StopCondition::ThroughputFalls => "throughput_falls".into(),
        }
    }
}

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
        let ms = |us: u64| us as f64 / 1000.0;
        match m {
            Metric::Requests => Some(self.requests as f64),
            Metric::Failures => Some(self.failures as f64),
            Metric::Throughput => (self.secs > 0.0).then(|| self.requests as f64 / self.secs),
            _ if self.requests < MIN_REQUESTS => None,
            Metric::ErrorRate => Some(self.failures as f64 / self.requests as f64),
            Metric::Latency(q) => Some(ms(self.latency.value_at_quantile(q / 100.0))),
            Metric::Mean => Some(self.latency.mean() / 1000.0),
            Metric::Max => Some(ms(self.latency.max())),
            Metric::Monitored(_) => None,
        }
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
    pub detail: String,
}

/// Evaluates stop conditions as intervals complete.
pub struct StopWatch {
    conditions: Vec<StopCondition>,
    window: Vec<Acc>,
    first: Acc,
    first_done: bool,
    segment: usize,
    current: Acc,
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
        StopWatch {
            windowed,
            conditions,
            window: Vec::new(),
            first: Acc::new(),
            first_done: false,
            segment: 0,
            current: Acc::new(),
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
                let (value, how) = match m.agg {
                    None | Some(Agg::Last) => (*latest, String::new()),
                    Some(agg) => {
                        let window: Vec<f64> = self.samples.iter().filter(|s| &s.1 == key).map(|s| s.3).collect();
                        let Some(v) = agg.apply(&window) else { continue };
                        (v, format!(" over the last {WINDOW} s"))
                    }
                };
                if op.holds(value, *bound) {
                    return Some(Stopped {
                        condition: text.clone(),
                        at_s: t_s,
                        detail: format!(
                            "{key} was {}{how}, beyond {}",
                            show_value(*unit, value),
                            show_value(*unit, *bound)
                        ),
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
            // A step just ended: compare its throughput with the step before.
            stopped = self.step_ended(f.t_s);
            self.first_done = true;
            self.segment = f.segment;
            self.current = Acc::new();
        }
        let mut one = Acc::new();
        one.add(f);
        self.window.push(one);
        if self.window.len() > WINDOW {
            self.window.remove(0);
        }
        self.current.add(f);
        self.total.add(f);
        if !self.first_done {
            self.first.add(f);
        }
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
            let Some(value) = source.value(&e.metric) else { continue };
            let (bound, against) = match e.bound {
                Bound::Value(v) => (v, String::new()),
                Bound::TimesFirst(k) => {
                    if !self.first_done {
                        continue;
                    }
                    let Some(first) = self.first.value(&e.metric) else {
                        continue;
                    };
                    (
                        first * k,
                        format!(" ({k}x the first step's {})", show(&e.metric, first)),
                    )
                }
            };
            if e.op.holds(value, bound) {
                return Some(Stopped {
                    condition: e.text.clone(),
                    at_s: f.t_s + f.len_s,
                    detail: format!(
                        "{} was {} over the last {:.0} s, beyond {}{against}",
                        metric_name(&e.metric),
                        show(&e.metric, value),
                        w.secs,
                        show(&e.metric, bound)
                    ),
                });
            }
        }
        None
    }

    fn step_ended(&mut self, t_s: f64) -> Option<Stopped> {
        let tput = self.current.value(&Metric::Throughput)?;
        let previous = self.previous_tput.replace(tput);
        let previous = previous?;
        for c in &self.conditions {
            let (holds, what) = match c {
                StopCondition::ThroughputStalls => (tput < previous * (1.0 + GROWTH), "stopped growing"),
                StopCondition::ThroughputFalls => (tput < previous * (1.0 - GROWTH), "fell"),
                StopCondition::Expr(_) => continue,
            };
            if holds {
                return Some(Stopped {
                    condition: c.text(),
                    at_s: t_s,
                    detail: format!("throughput {what}: {tput:.1} req/s in the step that ended, {previous:.1} req/s in the one before"),
                });
            }
        }
        None
    }
}

fn metric_name(m: &Metric) -> String {
    match m {
        Metric::Latency(q) => format!("p{q}"),
        Metric::Mean => "mean latency".into(),
        Metric::Max => "max latency".into(),
        Metric::ErrorRate => "the error rate".into(),
        Metric::Throughput => "throughput".into(),
        Metric::Requests => "requests".into(),
        Metric::Failures => "failures".into(),
        Metric::Monitored(m) => m.metric.clone(),
    }
}

/// A metric's value in its unit.
pub fn show(m: &Metric, v: f64) -> String {
    match m {
        Metric::Latency(_) | Metric::Mean | Metric::Max => format!("{v:.1} ms"),
        Metric::ErrorRate => format!("{:.2}%", v * 100.0),
        Metric::Throughput => format!("{v:.1}/s"),
        Metric::Requests | Metric::Failures => format!("{v:.0}"),
        Metric::Monitored(_) => show_value(Unit::Number, v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(ms: u64, n: u64) -> Histogram<u64> {
        let mut h = crest_model::hist::new_histogram();
        h.record_n(ms * 1000, n).unwrap();
        h
    }

    fn feed(w: &mut StopWatch, t: usize, segment: usize, requests: u64, failures: u64, ms: u64) -> Option<Stopped> {
        let h = hist(ms, requests.max(1));
        w.interval(&IntervalFigures {
            t_s: t as f64,
            len_s: 1.0,
            segment,
            requests,
            failures,
            latency: Some(&h),
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
        assert!(s.detail.contains("12.80%"), "{}", s.detail);
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
        let mut stopped = None;
        for t in 10..20 {
            stopped = stopped.or(feed(&mut w, t, 2, 100, 0, 40));
        }
        let s = stopped.unwrap();
        assert!(s.detail.contains("3x the first step's 10.0 ms"), "{}", s.detail);
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
        assert!(s.detail.contains("stopped growing"), "{}", s.detail);
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
        assert!(s.detail.contains("120 over the last 5 s"), "{}", s.detail);
        let mut w = StopWatch::new(vec![StopCondition::parse("load_average > 3").unwrap()]);
        let s = w.monitored(7.0, &[(load, Unit::Number, 3.4)]).unwrap();
        assert_eq!(s.at_s, 7.0);
        assert_eq!(s.detail, "load_average was 3.4, beyond 3");
    }

    #[test]
    fn conditions_parse_or_explain() {
        assert!(StopCondition::parse("p99{name=x} > 1s").is_err());
        assert!(StopCondition::parse("p95 1s")
            .unwrap_err()
            .contains("throughput_stalls"));
    }
}
