//! Comparing runs, metric by metric: each run a column, with its change against the first and,
//! for latencies, a word on whether that change is beyond run-to-run noise; and notes on why the
//! runs may not compare like with like. Monitored series are matched across runs by the key
//! their reports show (what the user called them, never a pid, which is new in every run).

use crate::analyze::Analysis;
use crate::capacity::{still_growing, NoOptimal, BREAKING_ERROR_RATE};
use crate::figures::{Point, StepLoad};
use crest_model::monitor::Unit;
use serde::Serialize;

/// What a row compares.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Requests per second.
    Throughput,
    /// The best step's successful requests per second after its warm-up: what the service
    /// sustained, not failures answered fast nor a warm-up.
    PeakThroughput,
    /// Successful requests per second.
    SuccessfulThroughput,
    /// A latency figure, ms.
    Latency(LatencyStat),
    /// failures / requests.
    ErrorRate,
    /// Requests completed.
    Requests,
    /// Requests failed.
    Failures,
    /// Runs whose users each run a fixed number of iterations (run once, threads x loops):
    /// seconds from the start until the last user was done, the headline of such a run.
    AllDone,
    /// Completed iterations of the flows per second over the run.
    Iterations,
    /// The best step's completed iterations per second.
    PeakIterations,
    /// Iterations completed.
    IterationsCompleted,
    /// Iterations failed.
    IterationsFailed,
    /// A completed iteration's time, ms (p50 or p95).
    IterationTime(LatencyStat),
    /// The optimal operating point's load.
    OptimalLoad,
    /// Throughput at the optimal operating point, in the runs' unit of work.
    OptimalThroughput(crate::figures::WorkUnit),
    /// The load at which throughput stopped growing.
    SaturationLoad,
    /// The load at which the run broke (errors above 1% or throughput falling).
    BreakingLoad,
    /// A monitored series' mean, in its unit.
    SeriesMean(String, Unit),
    /// A monitored series' peak, in its unit.
    SeriesPeak(String, Unit),
}

/// Which latency figure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyStat {
    /// Median.
    P50,
    /// 90th percentile.
    P90,
    /// 95th percentile.
    P95,
    /// 99th percentile.
    P99,
    /// Largest.
    Max,
    /// Mean.
    Mean,
}

/// Whether a latency difference is beyond the noise between seconds of each run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Fewer than three seconds in one of the runs.
    TooFewSeconds,
    /// Both runs were constant and equal.
    NoDifference,
    /// Beyond noise; Welch's t, unless both runs were constant.
    Beyond {
        /// Welch's t.
        t: Option<f64>,
    },
    /// Within noise.
    Within {
        /// Welch's t.
        t: f64,
    },
}

/// One row of the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// What is compared.
    pub metric: Metric,
    /// Each run's value in the metric's unit, in the order the runs were given; `None` where a
    /// run has none (a point it did not find, a series it did not record).
    pub values: Vec<Option<f64>>,
    /// Each run's change against the first, (x - first) / first in percent (for the error rate,
    /// x - first in percentage points); `None` for the first run, where either value is
    /// missing or a run completed nothing, and where the first is 0 (but for the error rate).
    pub change_pct: Vec<Option<f64>>,
    /// For latencies: whether each run's difference from the first is beyond the noise between
    /// seconds of the two runs; `None` for the first.
    pub verdict: Vec<Option<Verdict>>,
    /// True when a higher value is better (throughput), for colouring.
    pub higher_is_better: bool,
    /// For the optimal load: a run whose figures put its optimum past the loads it tried
    /// (successful throughput still growing at its highest level) has no value, and this is
    /// that highest level, so the cell reads "beyond" it rather than a number to compare.
    pub beyond: Vec<Option<StepLoad>>,
}

/// A run's shape: its model and its steps' loads.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Shape {
    /// Open model.
    pub open: bool,
    /// The steps' loads.
    pub steps: Vec<StepLoad>,
}

/// Why the rows may not compare like with like.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Note {
    /// This run completed no request.
    NoRequest(String),
    /// No request of this run succeeded.
    NoSuccess(String),
    /// A run differs in shape from the first.
    Shapes {
        /// The first run's label.
        a_label: String,
        /// The first run's shape.
        a: Shape,
        /// The other run's label.
        b_label: String,
        /// The other run's shape.
        b: Shape,
    },
}

/// Runs side by side.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Labels of the runs (their directories), in the order given; the first is the baseline.
    pub labels: Vec<String>,
    /// Why the rows may not compare like with like, said before the table.
    pub notes: Vec<Note>,
    /// The rows.
    pub rows: Vec<Row>,
    /// Each run's model, in the order of `labels`: true for the open model, whose loads are
    /// arrivals a second, not users.
    pub open: Vec<bool>,
    /// Each run's bottleneck, in the order of `labels`.
    pub bottlenecks: Vec<Option<crate::bottleneck::Bottleneck>>,
    /// Per watched process (by its label), each run's sizing of it.
    pub sizing: Vec<(String, Vec<Option<crate::sizing::Sizing>>)>,
}

fn shape(a: &Analysis) -> Shape {
    Shape {
        open: a.summary.target_rps.is_some(),
        steps: a.segments.iter().map(|s| s.load()).collect(),
    }
}

/// What makes the runs' figures not comparable as they stand.
fn notes(runs: &[(&Analysis, &str)]) -> Vec<Note> {
    let mut out = Vec::new();
    for (x, label) in runs {
        if x.summary.requests == 0 {
            out.push(Note::NoRequest((*label).into()));
        } else if x.summary.successes == 0 {
            out.push(Note::NoSuccess((*label).into()));
        }
    }
    if let Some(((first, a_label), rest)) = runs.split_first() {
        let a = shape(first);
        for (x, b_label) in rest {
            let b = shape(x);
            if a != b {
                out.push(Note::Shapes {
                    a_label: (*a_label).into(),
                    a: a.clone(),
                    b_label: (*b_label).into(),
                    b,
                });
            }
        }
    }
    out
}

/// Per-second values of one figure over the run's steady state, for noise estimates: of whole
/// intervals only, as the steps' own figures are. A run's last interval may be a few
/// milliseconds long; its "per second" rate, a handful of requests, would pass for a collapse
/// and swamp every real change in its variance.
pub(crate) fn per_second(a: &Analysis, pick: fn(&Point) -> f64) -> Vec<f64> {
    let eps = 1e-6;
    let steady: Vec<(f64, f64)> = a.segments.iter().map(|s| (s.steady_start_s, s.steady_end_s)).collect();
    a.series
        .iter()
        .filter(|p| {
            p.rps > 0.0
                && steady
                    .iter()
                    .any(|(s, e)| p.t_s + eps >= *s && p.t_s + a.interval_s <= *e + eps)
        })
        .map(pick)
        .collect()
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, var)
}

/// Welch's t on per-second values: beyond noise when |t| > 2 (about 95%).
pub(crate) fn verdict(a: &[f64], b: &[f64]) -> Verdict {
    if a.len() < 3 || b.len() < 3 {
        return Verdict::TooFewSeconds;
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let se = (va / a.len() as f64 + vb / b.len() as f64).sqrt();
    if se == 0.0 {
        return if ma == mb {
            Verdict::NoDifference
        } else {
            Verdict::Beyond { t: None }
        };
    }
    let t = (mb - ma) / se;
    if t.abs() > 2.0 {
        Verdict::Beyond { t: Some(t) }
    } else {
        Verdict::Within { t }
    }
}

/// The rows as they are built: one value per run.
struct Rows<'a> {
    runs: &'a [(&'a Analysis, &'a str)],
    rows: Vec<Row>,
}

impl Rows<'_> {
    /// Adds a row of one figure read from every run, unless no run has it.
    fn add(&mut self, metric: Metric, higher_is_better: bool, value: impl Fn(&Analysis) -> Option<f64>) {
        let values = self.runs.iter().map(|(a, _)| value(a)).collect();
        self.push(metric, higher_is_better, values, vec![None; self.runs.len()]);
    }

    /// Adds a row of the runs' values, and for each run whose value lies past its range the
    /// level it lies beyond; unless no run has either.
    fn push(
        &mut self,
        metric: Metric,
        higher_is_better: bool,
        values: Vec<Option<f64>>,
        beyond: Vec<Option<StepLoad>>,
    ) {
        if values.iter().all(Option::is_none) && beyond.iter().all(Option::is_none) {
            return;
        }
        // A run that completed nothing has no figure to compare: its zeros are no measurement.
        let counted = matches!(metric, Metric::Requests | Metric::Failures);
        let measured = |k: usize| counted || self.runs[k].0.summary.requests > 0;
        // An error rate changes in percentage points: from 0, a relative change is none.
        let points = metric == Metric::ErrorRate;
        let first = values[0].filter(|x| (points || *x != 0.0) && measured(0));
        // A load is users in one model and arrivals a second in the other: no change between.
        let load = matches!(
            metric,
            Metric::OptimalLoad | Metric::SaturationLoad | Metric::BreakingLoad
        );
        let open = |k: usize| self.runs[k].0.summary.target_rps.is_some();
        let change_pct = values
            .iter()
            .enumerate()
            .map(|(k, v)| match (k, first, v) {
                (1.., Some(x), Some(y)) if measured(k) && !(load && open(k) != open(0)) => {
                    Some(if points { (y - x) * 100.0 } else { (y - x) / x * 100.0 })
                }
                _ => None,
            })
            .collect();
        self.rows.push(Row {
            verdict: vec![None; values.len()],
            beyond,
            metric,
            values,
            change_pct,
            higher_is_better,
        });
    }

    /// Adds a row of the successes' latency, with each run's verdict against the first where
    /// seconds tell. The seconds' figures count every request, so a verdict is given only
    /// where both runs failed at most [`BREAKING_ERROR_RATE`]: past it, a second's p95 is
    /// its 503s' and could point the other way from the successes' (+777% read t = -1.0).
    fn latency(&mut self, stat: LatencyStat, value: fn(&Analysis) -> f64, pick: Option<fn(&Point) -> f64>) {
        self.add(Metric::Latency(stat), false, |a| {
            (a.summary.successes > 0).then(|| value(a))
        });
        let (Some(pick), Some(row)) = (pick, self.rows.last_mut()) else {
            return;
        };
        let (first, _) = self.runs[0];
        let clean = |a: &Analysis| a.summary.successes > 0 && a.summary.error_rate <= BREAKING_ERROR_RATE;
        let base = per_second(first, pick);
        for (k, (a, _)) in self.runs.iter().enumerate().skip(1) {
            if clean(first) && clean(a) {
                row.verdict[k] = Some(verdict(&base, &per_second(a, pick)));
            }
        }
    }
}

/// Where a run's optimum lies, judged by its figures.
enum Optimum {
    /// At this level (users or arrivals per second), within the loads the run tried, with its
    /// throughput there.
    At(f64, f64),
    /// Past the highest level tried, this one: successful throughput was still growing there.
    Beyond(StepLoad),
    /// Not found (every level failed, or the run had one level).
    Unknown,
}

/// The run's own answer, so a comparison never contradicts the report of either run: its
/// capacity analysis names the optimum only where a level beyond it showed latency outgrowing
/// throughput, and says "beyond" when the highest level was the best.
fn optimum(a: &Analysis) -> Optimum {
    match (&a.capacity.optimal, &a.capacity.no_optimal) {
        (Some(p), _) => Optimum::At(p.load_value, p.per_s),
        (None, Some(NoOptimal::BestAtHighest { load, .. })) => Optimum::Beyond(load.clone()),
        _ => Optimum::Unknown,
    }
}

/// Compares runs, each with its label, against the first.
pub fn compare(runs: &[(&Analysis, &str)]) -> Comparison {
    let mut rows = Rows { runs, rows: Vec::new() };
    rows.add(Metric::Throughput, true, |a| Some(a.summary.throughput_rps));
    rows.add(Metric::PeakThroughput, true, |a| {
        a.segments
            .iter()
            .filter(|s| s.steady_requests > 0)
            .map(|s| s.success_rps)
            .reduce(f64::max)
    });
    rows.add(Metric::SuccessfulThroughput, true, |a| Some(a.summary.success_rps));
    // A run-once study's answer is how long everyone took; a shorter time is better.
    rows.add(Metric::AllDone, false, |a| {
        a.summary.users.as_ref().map(|u| u.all_done_s)
    });
    // A scenario's flows: the user's unit of work, beside the requests above.
    rows.add(Metric::Iterations, true, |a| {
        a.summary.iterations.as_ref().map(|i| i.per_s)
    });
    rows.add(Metric::PeakIterations, true, |a| {
        a.iteration_segments
            .iter()
            .filter(|s| s.steady_requests > 0)
            .map(|s| s.success_rps)
            .reduce(f64::max)
    });
    rows.add(Metric::IterationsCompleted, true, |a| {
        a.summary.iterations.as_ref().map(|i| i.completed as f64)
    });
    rows.add(Metric::IterationsFailed, false, |a| {
        a.summary.iterations.as_ref().map(|i| i.failed as f64)
    });
    for (stat, pick) in [
        (LatencyStat::P50, (|p| p.p50) as fn(&crate::figures::Percentiles) -> f64),
        (LatencyStat::P95, |p| p.p95),
    ] {
        rows.add(Metric::IterationTime(stat), false, move |a| {
            a.summary.iterations.as_ref().map(|i| pick(&i.duration_ms))
        });
    }

    // A run still growing at its highest level has no optimum within its range: its cell says
    // so, rather than a level to compare with another run's.
    let optima: Vec<Optimum> = runs.iter().map(|(a, _)| optimum(a)).collect();
    let at = |pick: fn(f64, f64) -> f64| -> Vec<Option<f64>> {
        optima
            .iter()
            .map(|o| match o {
                Optimum::At(load, rps) => Some(pick(*load, *rps)),
                _ => None,
            })
            .collect()
    };
    let beyond = optima
        .iter()
        .map(|o| match o {
            Optimum::Beyond(l) => Some(l.clone()),
            _ => None,
        })
        .collect();
    rows.push(Metric::OptimalLoad, true, at(|load, _| load), beyond);
    // In the first run's unit: runs of one scenario share it.
    let unit = runs.first().map_or(crate::figures::WorkUnit::Requests, |(a, _)| a.unit);
    rows.push(
        Metric::OptimalThroughput(unit),
        true,
        at(|_, rps| rps),
        vec![None; runs.len()],
    );
    // A run whose successful throughput still grew at its highest level neither saturated nor
    // broke within its range: both lie beyond it, which its cells say rather than a blank.
    let growing: Vec<Option<StepLoad>> = runs
        .iter()
        .map(|(a, _)| still_growing(a.unit_segments(), &a.capacity).map(|s| s.load()))
        .collect();
    for (metric, point) in [
        (
            Metric::SaturationLoad,
            (|a| a.capacity.saturation.as_ref().map(|p| p.load_value)) as fn(&Analysis) -> _,
        ),
        (Metric::BreakingLoad, |a| {
            a.capacity.breaking.as_ref().map(|p| p.load_value)
        }),
    ] {
        let values: Vec<Option<f64>> = runs.iter().map(|(a, _)| point(a)).collect();
        let beyond = values
            .iter()
            .zip(&growing)
            .map(|(v, g)| g.clone().filter(|_| v.is_none()))
            .collect();
        rows.push(metric, true, values, beyond);
    }
    // The successes' latencies: a run that failed more answered faster (instant 503s), which
    // is no improvement.
    rows.latency(
        LatencyStat::P50,
        |a| a.summary.success_latency_ms.p50,
        Some(|p| p.p50_ms),
    );
    rows.latency(LatencyStat::P90, |a| a.summary.success_latency_ms.p90, None);
    rows.latency(
        LatencyStat::P95,
        |a| a.summary.success_latency_ms.p95,
        Some(|p| p.p95_ms),
    );
    rows.latency(
        LatencyStat::P99,
        |a| a.summary.success_latency_ms.p99,
        Some(|p| p.p99_ms),
    );
    rows.latency(LatencyStat::Max, |a| a.summary.success_latency_ms.max, None);
    rows.latency(LatencyStat::Mean, |a| a.summary.success_latency_ms.mean, None);
    rows.add(Metric::ErrorRate, false, |a| Some(a.summary.error_rate));
    rows.add(Metric::Requests, true, |a| Some(a.summary.requests as f64));
    rows.add(Metric::Failures, false, |a| Some(a.summary.failures as f64));
    // What the system did in each (memory, CPU, connections): every monitored series, by its
    // mean and its peak, in the order the runs first recorded them.
    let mut series: Vec<(&str, Unit)> = Vec::new();
    for (a, _) in runs {
        for r in &a.summary.resources {
            if !series.iter().any(|(k, _)| *k == r.key) {
                series.push((&r.key, r.unit));
            }
        }
    }
    for (key, unit) in series {
        let of = |a: &Analysis| {
            a.summary
                .resources
                .iter()
                .find(|r| r.key == key)
                .and_then(|r| r.all.clone())
        };
        // Less use of a resource is better; more of a rate (transactions, rows) is.
        let more_is_better = unit == Unit::PerSecond;
        rows.add(Metric::SeriesMean(key.into(), unit), more_is_better, |a| {
            of(a).map(|s| s.mean)
        });
        rows.add(Metric::SeriesPeak(key.into(), unit), more_is_better, |a| {
            of(a).map(|s| s.peak)
        });
    }
    Comparison {
        labels: runs.iter().map(|(_, l)| (*l).to_string()).collect(),
        notes: notes(runs),
        rows: rows.rows,
        open: runs.iter().map(|(a, _)| a.summary.target_rps.is_some()).collect(),
        bottlenecks: runs.iter().map(|(a, _)| a.summary.bottleneck.clone()).collect(),
        sizing: sizing(runs),
    }
}

/// Each watched process's sizing in every run, in the order the runs first sized them.
fn sizing(runs: &[(&Analysis, &str)]) -> Vec<(String, Vec<Option<crate::sizing::Sizing>>)> {
    let mut subjects: Vec<&str> = Vec::new();
    for (a, _) in runs {
        for z in &a.summary.sizing {
            if !subjects.contains(&z.subject.as_str()) {
                subjects.push(&z.subject);
            }
        }
    }
    subjects
        .into_iter()
        .map(|n| {
            let each = runs
                .iter()
                .map(|(a, _)| a.summary.sizing.iter().find(|z| z.subject == n).cloned())
                .collect();
            (n.to_string(), each)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crest_model::Outcome;
    use crest_testkit::results::{ResultsBuilder, Second};

    /// The few milliseconds a run sends past its last whole second are no second of their own.
    #[test]
    fn a_runs_last_partial_interval_is_not_a_second_of_noise() {
        let r = ResultsBuilder::new(Outcome::Status(503), true)
            .segment(4, 6, |_| Second::ok(300, 10.0))
            .build();
        let mut a = crate::analyze(&r).unwrap();
        let whole = per_second(&a, |p| p.rps);
        assert!(!whole.is_empty() && whole.iter().all(|v| *v == 300.0), "{whole:?}");
        // Six milliseconds more, four requests in them: the steady state reaches into them.
        let mut tail = a.series.last().unwrap().clone();
        tail.t_s += a.interval_s;
        tail.rps = 4.0;
        a.segments[0].steady_end_s = tail.t_s + 0.006;
        a.series.push(tail);
        assert_eq!(per_second(&a, |p| p.rps), whole);
    }
}
