//! Comparisons of runs: rows, cells, verdicts on noise and notes.

use super::*;

/// What a comparison row compares.
pub fn compared(m: &Compared) -> String {
    match m {
        Compared::Throughput => "throughput, failures included".into(),
        Compared::PeakThroughput => "peak successful throughput (best step)".into(),
        Compared::SuccessfulThroughput => "successful throughput".into(),
        Compared::Latency(s) => {
            let name = match s {
                LatencyStat::P50 => "p50",
                LatencyStat::P90 => "p90",
                LatencyStat::P95 => "p95",
                LatencyStat::P99 => "p99",
                LatencyStat::Max => "max",
                LatencyStat::Mean => "mean",
            };
            format!("successes' {name} latency")
        }
        Compared::ErrorRate => "error rate".into(),
        Compared::Requests => "requests".into(),
        Compared::Failures => "failures".into(),
        Compared::AllDone => "time until every user was done".into(),
        Compared::OptimalLoad => "optimal load".into(),
        Compared::Iterations => "iterations per second".into(),
        Compared::PeakIterations => "peak iterations per second (best step)".into(),
        Compared::IterationsCompleted => "iterations completed".into(),
        Compared::IterationsFailed => "iterations failed".into(),
        Compared::IterationTime(s) => format!("{} iteration time", if *s == LatencyStat::P50 { "p50" } else { "p95" }),
        Compared::OptimalThroughput(_) => "throughput at the optimal load".into(),
        Compared::SaturationLoad => "saturation load".into(),
        Compared::BreakingLoad => "breaking load".into(),
        Compared::SeriesMean(key, _) => format!("{key} (mean)"),
        Compared::SeriesPeak(key, _) => format!("{key} (peak)"),
    }
}

/// How a comparison row's values are scaled for display, and their unit.
pub fn compared_unit(m: &Compared) -> (f64, &'static str) {
    match m {
        Compared::Throughput | Compared::PeakThroughput | Compared::SuccessfulThroughput => (1.0, "req/s"),
        Compared::OptimalThroughput(unit) => (1.0, unit_rate(*unit)),
        Compared::Iterations | Compared::PeakIterations => (1.0, "iterations/s"),
        Compared::Latency(_) | Compared::IterationTime(_) => (1.0, "ms"),
        Compared::AllDone => (1.0, "s"),
        Compared::ErrorRate => (100.0, "%"),
        Compared::Requests
        | Compared::Failures
        | Compared::IterationsCompleted
        | Compared::IterationsFailed
        | Compared::OptimalLoad
        | Compared::SaturationLoad
        | Compared::BreakingLoad => (1.0, ""),
        Compared::SeriesMean(_, unit) | Compared::SeriesPeak(_, unit) => scale(*unit),
    }
}

/// One value of a comparison row as its table cell reads: counts and user loads whole
/// (`9,724`, `40`), error rates to a hundredth of a percent, rates and latencies to a tenth,
/// with the row's unit; monitored series as the run's own report shows them.
pub fn compared_cell(m: &Compared, v: f64) -> String {
    if let Compared::SeriesMean(_, unit) | Compared::SeriesPeak(_, unit) = m {
        // A monitored series reads as it does in the run's own report.
        return value(*unit, v);
    }
    let (k, unit) = compared_unit(m);
    let v = v * k;
    let whole = match m {
        Compared::Requests | Compared::Failures | Compared::IterationsCompleted | Compared::IterationsFailed => true,
        // A closed model's load is a number of users; an open model's is a rate.
        Compared::OptimalLoad | Compared::SaturationLoad | Compared::BreakingLoad => v.fract() == 0.0,
        _ => false,
    };
    let n = if whole && v >= 0.0 {
        crate::fmt::int(v as u64)
    } else if *m == Compared::ErrorRate || *m == Compared::AllDone {
        // As every other report shows an error rate (1 failure in 10,000 is not 0.0%) and the
        // time until the users were done (4.42 s).
        format!("{v:.2}")
    } else {
        crate::fmt::num(v)
    };
    match unit {
        "" => n,
        "%" => format!("{n}%"),
        _ => format!("{n} {unit}"),
    }
}

/// A load row's cell: `4 users` in the closed model, `300/s` in the open one.
pub fn compared_load(open: bool, v: f64) -> String {
    if open {
        rate(v)
    } else {
        count(v.round() as u64, "user")
    }
}

/// A change against the first run: `+93.7%`; an error rate's in points (`-2.9 points`), as a
/// relative change of an error rate says little (from 0 it is none).
pub fn compared_change(m: &Compared, change: Option<f64>) -> Option<String> {
    change.map(|c| match m {
        Compared::ErrorRate => format!("{c:+.1} points"),
        _ => format!("{c:+.1}%"),
    })
}

/// A comparison cell for a run whose value lies past the loads it tried: `beyond 200 users`.
pub fn compared_beyond(l: &StepLoad) -> String {
    format!("beyond {}", step(l))
}

/// Whether a difference is beyond noise.
pub fn verdict(v: &Verdict) -> String {
    match v {
        Verdict::TooFewSeconds => "too few seconds to judge".into(),
        Verdict::NoDifference => "no difference".into(),
        Verdict::Beyond { t: None } => "beyond noise".into(),
        Verdict::Beyond { t: Some(t) } => format!("beyond noise (t = {t:.1})"),
        Verdict::Within { t } => format!("within noise (t = {t:.1})"),
    }
}

fn shape(s: &Shape) -> String {
    let model = if s.open { "open model" } else { "closed model" };
    let steps: Vec<String> = s.steps.iter().map(step).collect();
    format!("{model}, {}: {}", count(steps.len() as u64, "step"), steps.join(", "))
}

/// Why runs may not compare like with like.
pub fn note(n: &Note) -> String {
    match n {
        Note::NoRequest(label) => format!("{label} completed no request: its figures are not compared."),
        Note::NoSuccess(label) => format!("No request of {label} succeeded: it has no latencies to compare."),
        Note::Shapes { a_label, a, b_label, b } => format!(
            "The runs differ in shape ({a_label}: {}; {b_label}: {}): whole-run figures compare different loads.",
            shape(a),
            shape(b)
        ),
    }
}
