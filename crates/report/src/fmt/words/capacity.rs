//! Capacity points: why a level is the optimum, the saturation or the breaking point, and why none is named.

use super::*;

fn failed(f: &Failed, unit: WorkUnit) -> String {
    format!(
        "{} of {} {} failed ({})",
        crate::fmt::int(f.failures),
        crate::fmt::int(f.requests),
        unit_plural(unit),
        crate::fmt::share(f.failures, f.requests)
    )
}

/// Why a capacity point is the one named.
pub fn point_reason(w: &Why, unit: WorkUnit) -> String {
    let rate = unit_rate(unit);
    match w {
        Why::MostPower {
            success_rps,
            mean_ms,
            beyond,
        } => {
            let beyond = match beyond {
                Beyond::Failed { load, failed: f } => format!("at {} {}", step(load), failed(f, unit)),
                Beyond::MissedSlo { load, miss } => {
                    format!("at {} the service level was missed: {}", step(load), slo_miss(miss))
                }
                Beyond::LatencyOutgrew {
                    load,
                    throughput_change_pct,
                    success_rps,
                    latency_change_pct,
                    mean_ms,
                } => format!(
                    "at {} successful throughput changed {throughput_change_pct:+.1}% ({success_rps_} {rate}) while mean latency changed {latency_change_pct:+.1}% ({mean_ms:.1} ms)",
                    step(load),
                    success_rps_ = num(*success_rps)
                ),
            };
            format!(
                "the most throughput per unit of latency, {} {rate} at a mean of {mean_ms:.1} ms; {beyond}",
                num(*success_rps)
            )
        }
        Why::Saturates {
            load_growth,
            from,
            to,
            throughput_growth,
            from_rps,
            to_rps,
            from_p95_ms,
            to_p95_ms,
        } => format!(
            "load grew {:.0}% ({} to {}) but throughput only {:+.1}% ({from_rps_} to {to_rps_} {rate}) while p95 rose from {from_p95_ms:.1} to {to_p95_ms:.1} ms",
            load_growth * 100.0,
            step(from),
            step(to),
            throughput_growth * 100.0,
            from_rps_ = num(*from_rps),
            to_rps_ = num(*to_rps)
        ),
        Why::Failed(f) => failed(f, unit),
        Why::MissedSlo(m) => format!("missed the service level: {}", slo_miss(m)),
        Why::ThroughputFell { rps, best_rps } => {
            format!(
                "successful throughput fell to {} {rate} from a best of {} {rate}, beyond both steps' noise",
                num(*rps),
                num(*best_rps)
            )
        }
    }
}

/// Why no optimal point is named.
pub fn no_optimal(n: &NoOptimal, unit: WorkUnit) -> String {
    let rate = unit_rate(unit);
    match n {
        NoOptimal::EveryLevelFailed {
            max_error_rate,
            least,
            failed: f,
        } => format!(
            "every level failed more than {:.0}% of its {}; the fewest, at {}, {}",
            max_error_rate * 100.0,
            unit_plural(unit),
            step(least),
            failed(f, unit)
        ),
        NoOptimal::BrokeFirst { load } => format!(
            "the service already broke at {}, below every level that failed less than {:.0}%",
            step(load),
            crest_analysis::capacity::BREAKING_ERROR_RATE * 100.0
        ),
        NoOptimal::BestAtHighest {
            load,
            success_rps,
            mean_ms,
        } => format!(
            "throughput per unit of latency was still best at the highest level tried, {} ({success_rps_} {rate} at a mean of {mean_ms:.1} ms): the optimal point may lie beyond it",
            step(load),
            success_rps_ = num(*success_rps)
        ),
    }
}

/// Why the answers name no limit (or no optimum, when no other reason is known).
pub fn no_answer(a: &crest_analysis::summary::Answers) -> String {
    let unit = unit_plural(a.unit);
    match a.optimal {
        None => format!("fewer than two load levels with {unit} to compare"),
        Some(_) => format!("no level failed, and {unit} per second grew at every level tried"),
    }
}

/// A step's successful throughput with its uncertainty: `766.8 ± 12.1 req/s`, the ± being twice
/// the standard error (the margin a difference between steps must exceed to be judged).
pub fn per_s_pm(per_s: f64, se: f64, unit: WorkUnit) -> String {
    if se > 0.0 {
        format!("{} ± {} {}", num(per_s), num(2.0 * se), unit_rate(unit))
    } else {
        format!("{} {}", num(per_s), unit_rate(unit))
    }
}
