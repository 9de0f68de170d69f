//! Comparing two runs, metric by metric (A, B, change %), with a word on whether each latency
//! difference is beyond run-to-run noise, and notes on why the runs may not compare like with
//! like.

use crate::analyze::Analysis;
use crate::figures::{Point, StepLoad};
use crest_model::monitor::Unit;
use serde::Serialize;

/// What a row compares.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Requests per second.
    Throughput,
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
    /// The optimal operating point's load.
    OptimalLoad,
    /// Throughput at the optimal operating point.
    OptimalThroughput,
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
    /// Fewer than three seconds in a run.
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
    /// Run A's value, in the metric's unit.
    pub a: f64,
    /// Run B's value.
    pub b: f64,
    /// (B - A) / A in percent; `None` when A is 0.
    pub change_pct: Option<f64>,
    /// For latencies: whether the difference is beyond the noise between seconds of each run.
    pub verdict: Option<Verdict>,
    /// True when a higher value is better (throughput), for colouring.
    pub higher_is_better: bool,
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
    /// The runs differ in shape.
    Shapes {
        /// Run A's label.
        a_label: String,
        /// Run A's shape.
        a: Shape,
        /// Run B's label.
        b_label: String,
        /// Run B's shape.
        b: Shape,
    },
}

/// Two runs side by side.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Labels of the runs (their directories).
    pub a_label: String,
    /// Label of B.
    pub b_label: String,
    /// Why the rows may not compare like with like, said before the table.
    pub notes: Vec<Note>,
    /// The rows.
    pub rows: Vec<Row>,
}

fn shape(a: &Analysis) -> Shape {
    Shape {
        open: a.summary.target_rps.is_some(),
        steps: a.segments.iter().map(|s| s.load()).collect(),
    }
}

/// What makes two runs' figures not comparable as they stand.
fn notes(a: &Analysis, a_label: &str, b: &Analysis, b_label: &str) -> Vec<Note> {
    let mut out = Vec::new();
    for (x, label) in [(a, a_label), (b, b_label)] {
        if x.summary.requests == 0 {
            out.push(Note::NoRequest(label.into()));
        } else if x.summary.successes == 0 {
            out.push(Note::NoSuccess(label.into()));
        }
    }
    let (sa, sb) = (shape(a), shape(b));
    if sa != sb {
        out.push(Note::Shapes {
            a_label: a_label.into(),
            a: sa,
            b_label: b_label.into(),
            b: sb,
        });
    }
    out
}

/// Per-second values of one latency quantile over the run's steady state, for noise estimates.
fn per_second(a: &Analysis, pick: fn(&Point) -> f64) -> Vec<f64> {
    let steady: Vec<(f64, f64)> = a.segments.iter().map(|s| (s.steady_start_s, s.steady_end_s)).collect();
    a.series
        .iter()
        .filter(|p| p.rps > 0.0 && steady.iter().any(|(s, e)| p.t_s >= *s && p.t_s < *e))
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
fn verdict(a: &[f64], b: &[f64]) -> Verdict {
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

/// Compares run A with run B.
pub fn compare(a: &Analysis, a_label: &str, b: &Analysis, b_label: &str) -> Comparison {
    let (sa, sb) = (&a.summary, &b.summary);
    let notes = notes(a, a_label, b, b_label);
    // A run that completed nothing has no figure to compare: its zeros are no measurement.
    let comparable = sa.requests > 0 && sb.requests > 0;
    let mut rows = Vec::new();
    let mut row = |metric: Metric, x: f64, y: f64, verdict: Option<Verdict>, higher_is_better: bool| {
        let counted = matches!(metric, Metric::Requests | Metric::Failures);
        rows.push(Row {
            metric,
            a: x,
            b: y,
            change_pct: (x != 0.0 && (comparable || counted)).then(|| (y - x) / x * 100.0),
            verdict: verdict.filter(|_| comparable),
            higher_is_better,
        });
    };
    row(Metric::Throughput, sa.throughput_rps, sb.throughput_rps, None, true);
    row(Metric::SuccessfulThroughput, sa.success_rps, sb.success_rps, None, true);
    type Pick = fn(&Point) -> f64;
    let latency: [(LatencyStat, f64, f64, Option<Pick>); 6] = [
        (
            LatencyStat::P50,
            sa.latency_ms.p50,
            sb.latency_ms.p50,
            Some(|p| p.p50_ms),
        ),
        (LatencyStat::P90, sa.latency_ms.p90, sb.latency_ms.p90, None),
        (
            LatencyStat::P95,
            sa.latency_ms.p95,
            sb.latency_ms.p95,
            Some(|p| p.p95_ms),
        ),
        (
            LatencyStat::P99,
            sa.latency_ms.p99,
            sb.latency_ms.p99,
            Some(|p| p.p99_ms),
        ),
        (LatencyStat::Max, sa.latency_ms.max, sb.latency_ms.max, None),
        (LatencyStat::Mean, sa.latency_ms.mean, sb.latency_ms.mean, None),
    ];
    for (stat, x, y, pick) in latency {
        let v = pick.map(|p| verdict(&per_second(a, p), &per_second(b, p)));
        row(Metric::Latency(stat), x, y, v, false);
    }
    row(Metric::ErrorRate, sa.error_rate, sb.error_rate, None, false);
    row(Metric::Requests, sa.requests as f64, sb.requests as f64, None, true);
    row(Metric::Failures, sa.failures as f64, sb.failures as f64, None, false);
    if let (Some(x), Some(y)) = (&a.capacity.optimal, &b.capacity.optimal) {
        row(Metric::OptimalLoad, x.load_value, y.load_value, None, true);
        row(
            Metric::OptimalThroughput,
            x.throughput_rps,
            y.throughput_rps,
            None,
            true,
        );
    }
    // What the system did in each (memory, CPU, connections): every monitored series both runs
    // recorded, by its mean and its peak.
    for ra in &sa.resources {
        let Some(rb) = sb.resources.iter().find(|r| r.key == ra.key) else {
            continue;
        };
        let (Some(x), Some(y)) = (&ra.all, &rb.all) else {
            continue;
        };
        // Less use of a resource is better; more of a rate (transactions, rows) is.
        let more_is_better = ra.unit == Unit::PerSecond;
        row(
            Metric::SeriesMean(ra.key.clone(), ra.unit),
            x.mean,
            y.mean,
            None,
            more_is_better,
        );
        row(
            Metric::SeriesPeak(ra.key.clone(), ra.unit),
            x.peak,
            y.peak,
            None,
            more_is_better,
        );
    }
    Comparison {
        a_label: a_label.into(),
        b_label: b_label.into(),
        notes,
        rows,
    }
}
