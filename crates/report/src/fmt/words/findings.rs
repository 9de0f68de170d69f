//! Findings, of one run and across a study's points, as sentences.

use super::*;

/// The recovery after a spike, as the finding and the terminal's line say it.
pub(crate) fn recovery(rec: &Recovery) -> String {
    // Said of what was judged: a flow's iterations (their time from start to end), else the
    // run's requests or transactions.
    let of = match rec.unit {
        WorkUnit::Iterations => "iterations' ",
        WorkUnit::Transactions => "transactions' ",
        WorkUnit::Requests => "",
    };
    let figures = match (rec.p95_ms, rec.error_rate) {
        (Some(p), Some(e)) => format!(
            "{of}p95 {p:.1} ms and {:.2}% errors over 3 s, against the baseline's {:.1} ms and {:.2}%",
            e * 100.0,
            rec.baseline_p95_ms,
            rec.baseline_error_rate * 100.0
        ),
        _ => format!(
            "no 3 s after it to measure, against the baseline's p95 {:.1} ms and {:.2}% errors",
            rec.baseline_p95_ms,
            rec.baseline_error_rate * 100.0
        ),
    };
    let until = rec
        .until
        .as_ref()
        .map(|u| {
            let failed = if u.failures > 0 {
                format!(
                    "{} of {} {} failed ({})",
                    crate::fmt::int(u.failures),
                    crate::fmt::int(u.units),
                    unit_plural(rec.unit),
                    crate::fmt::share(u.failures, u.units)
                )
            } else {
                format!("none of {} {} failed", crate::fmt::int(u.units), unit_plural(rec.unit))
            };
            format!(
                "; in the {:.0} s before, {failed} and p95 was {:.1} ms",
                u.seconds, u.p95_ms
            )
        })
        .unwrap_or_default();
    match rec.seconds {
        Some(t) => format!("After the spike the service was back to its baseline in {t:.0} s ({figures}{until})."),
        None => format!("After the spike the service did not return to its baseline before the run ended ({figures})."),
    }
}

/// A user's flow takes seconds or less: whole seconds would hide the figures.
fn took(secs: f64) -> String {
    if secs < 1.0 {
        format!("{} ms", crate::fmt::ms(secs * 1000.0))
    } else if secs < 120.0 {
        format!("{secs:.2} s")
    } else {
        span(secs)
    }
}

/// When the users of a run with fixed iterations were done and how long each took, e.g. `60
/// users done 1.05 s after the start; each took 763.1 ms at the median, ...`.
pub fn users_done(u: &crest_analysis::summary::UsersDone) -> String {
    let p = &u.per_user_ms;
    let stopped = if u.cut_short > 0 {
        format!(" ({} more stopped before they finished)", u.cut_short)
    } else {
        String::new()
    };
    format!(
        "{} users done {} after the start{stopped}; each took {} at the median, {} at p95 and {} at most",
        u.finished,
        took(u.all_done_s),
        took(p.p50 / 1000.0),
        took(p.p95 / 1000.0),
        took(p.max / 1000.0)
    )
}

fn users_finding(u: &crest_analysis::summary::UsersDone, peaks: &[crest_analysis::findings::Peak]) -> String {
    let all = if u.cut_short == 0 { "All " } else { "" };
    let mut out = format!("{all}{}", users_done(u));
    if !peaks.is_empty() {
        let named: Vec<String> = peaks
            .iter()
            .map(|k| format!("{} {} (of {} samples)", k.title, value(k.unit, k.peak), k.samples))
            .collect();
        out.push_str(&format!("; at peak: {}", named.join(", ")));
    }
    out.push('.');
    out
}

/// A finding across the points of a study as one or two sentences.
pub fn study_finding(f: &crest_analysis::study::StudyFinding) -> String {
    use crest_analysis::study::StudyFinding as F;
    match f {
        F::Breaks {
            held,
            broke,
            held_success,
            broke_success,
            held_rps,
            broke_rps,
            top_failure,
        } => {
            let why = top_failure
                .as_ref()
                .map(|t| format!(", most failures {t}"))
                .unwrap_or_default();
            format!(
                "The service breaks between {held} and {broke}: success fell from {} to {} and successful throughput went from {} to {} req/s{why}.",
                crate::fmt::pct(*held_success),
                crate::fmt::pct(*broke_success),
                num(*held_rps),
                num(*broke_rps)
            )
        }
        F::BrokenFromStart { point, success } => format!(
            "The first point, {point}, already failed: {} of its requests succeeded.",
            crate::fmt::pct(*success)
        ),
        F::Slower {
            first,
            slowest,
            first_ms,
            slowest_ms,
            ratio,
        } => format!(
            "Mean latency of successful requests grew {ratio:.1}x from {first} ({} ms) to {slowest} ({} ms).",
            crate::fmt::ms(*first_ms),
            crate::fmt::ms(*slowest_ms)
        ),
        F::TimeoutCluster {
            point,
            count: n,
            description,
            cluster: c,
        } => format!(
            "At {point}, {} failed as {description}: {}.",
            count(*n, "request"),
            cluster(c)
        ),
        F::AllSucceeded { points, requests } => {
            format!(
                "All {} of {} succeeded.",
                count(*requests, "request"),
                count(*points as u64, "point")
            )
        }
    }
}

/// Thresholds with what each measured: `` `p95 < 250ms` (measured 322.4 ms) ``.
fn thresholds_measured(t: &[crest_analysis::thresholds::ThresholdResult]) -> String {
    t.iter()
        .map(|t| format!("`{}` (measured {})", t.threshold, measured(&t.measured)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A finding as one or two sentences.
pub fn finding(f: &Finding) -> String {
    match f {
        Finding::NothingSucceeded { requests, top } => match top {
            Some(top) if *requests > 0 => format!(
                "No request succeeded: all {} failed, most as {} ({}), e.g. \"{}\".",
                crate::fmt::int(*requests),
                top.description,
                crate::fmt::int(top.count),
                top.example
            ),
            _ => "No request completed.".to_string(),
        },
        Finding::UsersDone { users, peaks } => users_finding(users, peaks),
        Finding::Bottleneck(b) => bottleneck(b),
        Finding::ProcessEvent(e) => process_event(e),
        Finding::ClientBound(limits) => format!(
            "The result may describe crest rather than the target: {}.",
            limits.iter().map(client_limit).collect::<Vec<_>>().join("; ")
        ),
        Finding::Leak(l) => leak(l),
        Finding::WorkPerIteration(w) => format!(
            "Iterations per second stopped growing from {} on ({} at {}, {} at {}) while each took more requests ({} to {} requests per iteration, {} to {} req/s): the service is doing the same work, and the extra requests are waiting (polls of tasks that are not done), not capacity.",
            step(&w.from),
            num(w.from_per_s),
            step(&w.from),
            num(w.to_per_s),
            step(&w.to),
            num(w.from_requests_each),
            num(w.to_requests_each),
            num(w.from_rps),
            num(w.to_rps)
        ),
        Finding::WorkersLost(lost) => lost
            .iter()
            .map(|w| {
                format!(
                    "Worker {} was lost at {:.1} s: its {} of the load is missing from the last {:.1} s of the run, whose figures from then on are the other workers'.",
                    w.index,
                    w.lost.at_s,
                    crate::fmt::pct(w.lost.share),
                    w.lost.missing_s
                )
            })
            .collect::<Vec<_>>()
            .join(" "),
        Finding::Stopped(st) => format!(
            "The run stopped at {:.0} s because `{}` held: {}.",
            st.at_s, st.condition, stop_held(st)
        ),
        Finding::LatencyGrew {
            unit,
            ratio,
            from,
            to,
            from_ms,
            to_ms,
            from_requests,
            to_requests,
        } => format!(
            "Latency grew {ratio:.1}x from {} to {} (mean {from_ms:.1} ms over {} to {to_ms:.1} ms over {}, successful {} only): response time does not scale with load.",
            step(from),
            step(to),
            crate::fmt::int(*from_requests),
            crate::fmt::int(*to_requests),
            unit_plural(*unit)
        ),
        Finding::PointsDiffer {
            unit,
            ratio,
            from,
            to,
            from_ms,
            to_ms,
            from_requests,
            to_requests,
        } => format!(
            "Mean latency grew {ratio:.1}x from {} to {} ({from_ms:.1} ms over {} to {to_ms:.1} ms over {}, successful {} only).",
            step_kind(from),
            step_kind(to),
            crate::fmt::int(*from_requests),
            crate::fmt::int(*to_requests),
            unit_plural(*unit)
        ),
        Finding::Optimal(o) => format!(
            "The optimal operating point is {} (successes' p95 {:.1} ms): {}.",
            step(&o.load),
            o.p95_ms,
            point_reason(&o.why, o.unit)
        ),
        Finding::NoOptimal(n, unit) => format!("No optimal operating point is named: {}.", no_optimal(n, *unit)),
        Finding::Saturates(p) => format!("The service saturates at {}: {}.", step(&p.load), point_reason(&p.why, p.unit)),
        Finding::Breaks { point, after } => {
            let between = after
                .as_ref()
                .map(|g| format!(" The breaking point lies between {} and {}.", step(g), step(&point.load)));
            format!(
                "The service breaks at {}: {}.{}",
                step(&point.load),
                point_reason(&point.why, point.unit),
                between.unwrap_or_default()
            )
        }
        Finding::Collapsed {
            best,
            best_per_s,
            at,
            per_s,
            unit,
        } => format!(
            "Past its best the service collapsed: {} {} at {}, its best, but {} {} at {} ({:+.0}%). Heavier loads got less work done, not more: what they added failed or waited out its timeout.",
            num(*best_per_s),
            unit_rate(*unit),
            step(best),
            num(*per_s),
            unit_rate(*unit),
            step(at),
            (per_s / best_per_s - 1.0) * 100.0
        ),
        Finding::Clustered {
            count,
            description,
            outcome,
            cluster: c,
        } => format!("{} {description} ({outcome}): {}.", crate::fmt::int(*count), cluster(c)),
        Finding::SomeFailed {
            failures,
            requests,
            error_rate,
            top,
        } => format!(
            "{} of {} requests failed ({:.2}%), most as {} ({}), e.g. \"{}\".",
            crate::fmt::int(*failures),
            crate::fmt::int(*requests),
            error_rate * 100.0,
            top.description,
            crate::fmt::int(top.count),
            top.example
        ),
        Finding::AllSucceeded { requests } => format!("All {} succeeded.", count(*requests, "request")),
        Finding::ConnectFlat {
            min_ms,
            max_ms,
            steps,
            connections,
        } => format!(
            "Connect time stayed within {min_ms:.2} to {max_ms:.2} ms (p95) at each of {steps} steps ({} opened): the bottleneck is not the network connection layer.",
            count(*connections, "connection")
        ),
        Finding::Recovered(rec) => recovery(rec),
        Finding::ThresholdsFailed(failed) => format!("Thresholds failed: {}.", thresholds_measured(failed)),
        Finding::ThresholdsHeld(held) if held.len() == 1 => {
            format!("The threshold held: {}.", thresholds_measured(held))
        }
        Finding::ThresholdsHeld(held) => format!(
            "All {} thresholds held: {}.",
            held.len(),
            thresholds_measured(held)
        ),
    }
}
