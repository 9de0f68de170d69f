//! Comparing two runs (seed 001's table: metric, A, B, change %), with a word on whether each
//! latency difference is beyond run-to-run noise.

use crate::analyze::Analysis;
use crest_model::monitor::Unit;
use serde::Serialize;

/// One row of the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// What is compared.
    pub metric: String,
    /// Run A's value.
    pub a: f64,
    /// Run B's value.
    pub b: f64,
    /// The value's unit, for display.
    pub unit: String,
    /// (B - A) / A in percent; `None` when A is 0.
    pub change_pct: Option<f64>,
    /// For latencies: whether the difference is beyond the noise between seconds of each run.
    pub verdict: Option<String>,
    /// True when a higher value is better (throughput), for colouring.
    pub higher_is_better: bool,
}

/// Two runs side by side.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Labels of the runs (their directories).
    pub a_label: String,
    /// Label of B.
    pub b_label: String,
    /// Why the rows may not compare like with like (runs of different shapes, a run that
    /// completed nothing), said before the table.
    pub notes: Vec<String>,
    /// The rows.
    pub rows: Vec<Row>,
}

/// A run's shape in words: its model and its steps' loads.
fn shape(a: &Analysis) -> String {
    let model = if a.summary.target_rps.is_some() {
        "open model"
    } else {
        "closed model"
    };
    let steps: Vec<String> = a.segments.iter().map(crate::analyze::step_label).collect();
    format!("{model}, {} step(s): {}", steps.len(), steps.join(", "))
}

/// What makes two runs' figures not comparable as they stand.
fn notes(a: &Analysis, a_label: &str, b: &Analysis, b_label: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (x, label) in [(a, a_label), (b, b_label)] {
        if x.summary.requests == 0 {
            out.push(format!("{label} completed no request: its figures are not compared."));
        } else if x.summary.successes == 0 {
            out.push(format!(
                "No request of {label} succeeded: its latencies are those of its failures."
            ));
        }
    }
    let (sa, sb) = (shape(a), shape(b));
    if sa != sb {
        out.push(format!(
            "The runs differ in shape ({a_label}: {sa}; {b_label}: {sb}): whole-run figures compare different loads."
        ));
    }
    out
}

/// Per-second values of one latency quantile over the run's steady state, for noise estimates.
fn per_second(a: &Analysis, pick: fn(&crate::analyze::Point) -> f64) -> Vec<f64> {
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
fn verdict(a: &[f64], b: &[f64]) -> String {
    if a.len() < 3 || b.len() < 3 {
        return "too few seconds to judge".into();
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let se = (va / a.len() as f64 + vb / b.len() as f64).sqrt();
    if se == 0.0 {
        return if ma == mb {
            "no difference".into()
        } else {
            "beyond noise".into()
        };
    }
    let t = (mb - ma) / se;
    if t.abs() > 2.0 {
        format!("beyond noise (t = {t:.1})")
    } else {
        format!("within noise (t = {t:.1})")
    }
}

/// Compares run A with run B.
pub fn compare(a: &Analysis, a_label: &str, b: &Analysis, b_label: &str) -> Comparison {
    let (sa, sb) = (&a.summary, &b.summary);
    let notes = notes(a, a_label, b, b_label);
    // A run that completed nothing has no figure to compare: its zeros are no measurement.
    let comparable = sa.requests > 0 && sb.requests > 0;
    let mut rows = Vec::new();
    let mut row = |metric: &str, x: f64, y: f64, unit: &str, verdict: Option<String>, higher_is_better: bool| {
        let counted = matches!(metric, "requests" | "failures");
        rows.push(Row {
            metric: metric.into(),
            a: x,
            b: y,
            unit: unit.into(),
            change_pct: (x != 0.0 && (comparable || counted)).then(|| (y - x) / x * 100.0),
            verdict: verdict.filter(|_| comparable),
            higher_is_better,
        });
    };
    row("throughput", sa.throughput_rps, sb.throughput_rps, "req/s", None, true);
    row(
        "successful throughput",
        sa.success_rps,
        sb.success_rps,
        "req/s",
        None,
        true,
    );
    type Pick = fn(&crate::analyze::Point) -> f64;
    let latency: [(&str, f64, f64, Option<Pick>); 6] = [
        ("p50 latency", sa.latency_ms.p50, sb.latency_ms.p50, Some(|p| p.p50_ms)),
        ("p90 latency", sa.latency_ms.p90, sb.latency_ms.p90, None),
        ("p95 latency", sa.latency_ms.p95, sb.latency_ms.p95, Some(|p| p.p95_ms)),
        ("p99 latency", sa.latency_ms.p99, sb.latency_ms.p99, Some(|p| p.p99_ms)),
        ("max latency", sa.latency_ms.max, sb.latency_ms.max, None),
        ("mean latency", sa.latency_ms.mean, sb.latency_ms.mean, None),
    ];
    for (name, x, y, pick) in latency {
        let v = pick.map(|p| verdict(&per_second(a, p), &per_second(b, p)));
        row(name, x, y, "ms", v, false);
    }
    row(
        "error rate",
        sa.error_rate * 100.0,
        sb.error_rate * 100.0,
        "%",
        None,
        false,
    );
    row("requests", sa.requests as f64, sb.requests as f64, "", None, true);
    row("failures", sa.failures as f64, sb.failures as f64, "", None, false);
    if let (Some(x), Some(y)) = (&a.capacity.optimal, &b.capacity.optimal) {
        row("optimal load", x.load_value, y.load_value, "", None, true);
        row(
            "throughput at the optimal load",
            x.throughput_rps,
            y.throughput_rps,
            "req/s",
            None,
            true,
        );
    }
    // What the system did in each (seed 001: "Fletcher Memory 275MB -> 160MB, CPU 13% -> 20%"):
    // every monitored series both runs recorded, by its mean and its peak.
    for ra in &sa.resources {
        let Some(rb) = sb.resources.iter().find(|r| r.key == ra.key) else {
            continue;
        };
        let (Some(x), Some(y)) = (&ra.all, &rb.all) else {
            continue;
        };
        let (k, unit) = match ra.unit {
            Unit::Bytes => (1.0 / 1048576.0, "MiB"),
            Unit::Percent => (1.0, "%"),
            Unit::PerSecond => (1.0, "/s"),
            Unit::Seconds => (1000.0, "ms"),
            Unit::Count | Unit::Number => (1.0, ""),
        };
        // Less use of a resource is better; more of a rate (transactions, rows) is.
        let more_is_better = ra.unit == Unit::PerSecond;
        row(
            &format!("{} (mean)", ra.key),
            x.mean * k,
            y.mean * k,
            unit,
            None,
            more_is_better,
        );
        row(
            &format!("{} (peak)", ra.key),
            x.peak * k,
            y.peak * k,
            unit,
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
