//! How crest itself may have limited a run.

use super::*;

/// One way crest limited the run.
pub fn client_limit(l: &ClientLimit) -> String {
    match l {
        ClientLimit::BusyCpu {
            share,
            threads,
            cpu_s,
            duration_s,
        } => format!(
            "crest used {:.0}% of the CPU its {threads} engine thread(s) could use ({cpu_s:.2} CPU-seconds in {duration_s:.2} s): the load generator, not the target, may have set the pace",
            share * 100.0
        ),
        ClientLimit::CoreStarved {
            waited_s,
            share,
            threads,
            cores,
            duration_s,
        } => format!(
            "crest's {threads} engine thread(s) waited {waited_s:.2} s for a CPU core that other threads held in {duration_s:.2} s of sending, {} of the time they could run{} (by the kernel's account): the machine held crest back, so the load generator, not the target, may have set the pace",
            crate::fmt::pct(*share),
            if threads > cores {
                format!(" beyond what {threads} threads on {cores} core(s) wait for one another")
            } else {
                String::new()
            }
        ),
        ClientLimit::LateMedian {
            lag_p50_ms,
            latency_p50_ms,
            core_wait,
        } => format!(
            "crest sent requests late: the send lag's median was {lag_p50_ms:.3} ms, {:.0}% of the median latency ({latency_p50_ms:.3} ms), so crest's own delay is part of every latency{}",
            lag_p50_ms / latency_p50_ms.max(f64::MIN_POSITIVE) * 100.0,
            waited(core_wait)
        ),
        ClientLimit::LateTail {
            lag_p99_ms,
            latency_p50_ms,
            core_wait,
        } => format!(
            "requests started late: the send lag's p99 was {lag_p99_ms:.1} ms (median latency {latency_p50_ms:.1} ms), so crest could not keep the schedule{}",
            waited(core_wait)
        ),
        ClientLimit::Dropped {
            dropped,
            behind,
            arrivals,
        } => format!(
            "{} of {} arrivals ({:.2}%) were {}",
            crate::fmt::int(*dropped),
            crate::fmt::int(*arrivals),
            *dropped as f64 / (*arrivals).max(1) as f64 * 100.0,
            drop_causes(*dropped, *behind)
        ),
        ClientLimit::LocalExhaustion { failed } => {
            format!(
                "{} failed because crest ran out of file descriptors or local ports",
                count(*failed, "request")
            )
        }
        ClientLimit::Worker { index, limits } => format!(
            "worker {index} was client-bound by its own figures, so its share of the load was not sent as planned: {}",
            limits.iter().map(client_limit).collect::<Vec<_>>().join(", and ")
        ),
        ClientLimit::WaitingUsers {
            step,
            in_flight,
            users,
            throughput_rps,
            mean_ms,
        } => format!(
            "in {} only {in_flight:.1} of {} had a request in flight on average ({} req/s x a mean of {mean_ms:.1} ms), with no think time and no request count to explain the rest: they waited inside crest",
            step_kind(step),
            count(*users, "user"),
            num(*throughput_rps)
        ),
    }
}

/// The engine threads' wait for a core beside a late send, as a clause: what of the lateness
/// was time taken from the engine, by the kernel's account.
fn waited(w: &Option<CoreWait>) -> String {
    match w {
        Some(w) => format!(
            "; meanwhile its engine thread(s) waited {} ms for a CPU core that other threads held ({} of the time they could run, by the kernel's account; other processes', the kernel's or crest's own)",
            crate::fmt::ms(w.ms),
            crate::fmt::pct(w.share)
        ),
        None => String::new(),
    }
}

/// Why open-model arrivals went unsent: the cap on requests in flight, or crest behind its
/// schedule when the run's time ran out (slots before the deadline it never reached).
pub fn drop_causes(dropped: u64, behind: u64) -> String {
    const CAP: &str = "dropped at the cap on requests in flight (-c / max_in_flight)";
    const BEHIND: &str = "not sent by the deadline, crest being behind its schedule";
    match behind {
        0 => CAP.to_string(),
        b if b >= dropped => BEHIND.to_string(),
        b => format!(
            "not sent: {} {CAP}, {} {BEHIND}",
            crate::fmt::int(dropped - b),
            crate::fmt::int(b)
        ),
    }
}

/// The open model's schedule against what was sent, the one sentence every report gives: the
/// rate asked (its peak when the schedule changed it, with the mean over the run beside it), the
/// arrivals due and sent, and what became of the rest. Counts, not a peak set against a mean,
/// so that a staged run that sent every arrival never reads as falling short. `None` in the
/// closed model.
pub fn open_model(s: &crest_analysis::Summary) -> Option<String> {
    let (target, arrivals, at_cap) = (s.target_rps?, s.arrivals?, at_cap(s)?);
    let sent = arrivals.saturating_sub(s.dropped.unwrap_or(0));
    let asked = if s.target_varies {
        format!(
            "asked up to {} ({} on average over {:.2} s)",
            super::run::rate(target),
            super::run::rate(round_rate(s.target_mean_rps.unwrap_or(0.0))),
            s.duration_s
        )
    } else {
        format!("asked {}", super::run::rate(target))
    };
    let sent_rate = match s.achieved_rps {
        Some(a) if sent != arrivals => format!(" ({})", super::run::rate(round_rate(a))),
        _ => String::new(),
    };
    Some(format!(
        "{asked}: {} arrivals due, {} sent{sent_rate}; {at_cap}",
        crate::fmt::int(arrivals),
        crate::fmt::int(sent)
    ))
}

/// A measured rate to one decimal, as measured rates are shown.
fn round_rate(r: f64) -> f64 {
    (r * 10.0).round() / 10.0
}

/// What the open model did with arrivals at its cap on requests in flight, with the counts:
/// how many were not sent and why, or that they were queued as pgbench -R queues them. `None`
/// in the closed model.
pub fn at_cap(s: &crest_analysis::Summary) -> Option<String> {
    let dropped = s.dropped?;
    Some(match &s.queued {
        None => format!(
            "{} arrivals {}",
            crate::fmt::int(dropped),
            drop_causes(dropped, s.dropped_behind.unwrap_or(0))
        ),
        Some(q) => {
            let left = match q.left {
                0 => String::new(),
                n => format!(
                    "; {} still waiting when the run's time ran out were not sent",
                    crate::fmt::int(n)
                ),
            };
            format!(
                "arrivals at the cap of {} in flight were queued (pgbench -R), none dropped: {} of {} waited for a place, their wait counted in their latency and send lag{left}",
                crate::fmt::int(q.cap),
                crate::fmt::int(q.waited),
                crate::fmt::int(q.arrivals)
            )
        }
    })
}

/// The answer to "is the result valid?" in a sentence or two, with crest's own limits named.
pub fn validity(s: &crest_analysis::Summary) -> String {
    if !s.client_bound.is_empty() {
        format!(
            "crest itself may have limited this run, so the figures may describe the load generator rather than the target: {}.",
            s.client_bound.iter().map(client_limit).collect::<Vec<_>>().join("; ")
        )
    } else if s.successes == 0 {
        "Not judged: no request succeeded, so every figure describes failures, not a load crest could have limited."
            .into()
    } else {
        "Nothing shows that crest limited the run: its CPU, its wait for a CPU core, the schedule (open model), its file descriptors and ports, and the users' time in flight were all within bounds.".into()
    }
}

/// One worker's verdict, as the per-worker table's last column says it.
pub fn worker_verdict(w: &WorkerFigures) -> String {
    match w.verdict {
        WorkerVerdict::Valid => "valid".into(),
        WorkerVerdict::ClientBound => format!(
            "client-bound: {}",
            w.limits.iter().map(limit_figure).collect::<Vec<_>>().join(", ")
        ),
        WorkerVerdict::Lost => match &w.lost {
            Some(l) => format!(
                "lost at {:.1} s: its {} of the load missing for {:.1} s",
                l.at_s,
                crate::fmt::pct(l.share),
                l.missing_s
            ),
            None => "lost".into(),
        },
        WorkerVerdict::NotJudged => "not judged: nothing it sent succeeded".into(),
    }
}

/// The figure a limit rests on, in a few words, for a table's cell; [`client_limit`] says it
/// in full.
fn limit_figure(l: &ClientLimit) -> String {
    match l {
        ClientLimit::BusyCpu { share, .. } => format!("CPU {:.0}%", share * 100.0),
        ClientLimit::CoreStarved { share, .. } => format!("waited for a core {}", crate::fmt::pct(*share)),
        ClientLimit::LateMedian { lag_p50_ms, .. } => format!("send lag p50 {} ms", crate::fmt::ms(*lag_p50_ms)),
        ClientLimit::LateTail { lag_p99_ms, .. } => format!("send lag p99 {} ms", crate::fmt::ms(*lag_p99_ms)),
        ClientLimit::Dropped { dropped, arrivals, .. } => format!(
            "{} of {} arrivals not sent",
            crate::fmt::int(*dropped),
            crate::fmt::int(*arrivals)
        ),
        ClientLimit::LocalExhaustion { failed } => format!("{} out of ports or files", count(*failed, "request")),
        ClientLimit::WaitingUsers { step, .. } => format!("users waiting in {}", step_kind(step)),
        ClientLimit::Worker { index, .. } => format!("worker {index}"),
    }
}

/// A worker's drops, as the per-worker table's cell says them: how many, and how many of those
/// it was behind its schedule for.
pub fn worker_drops(w: &WorkerFigures) -> String {
    match (w.dropped, w.dropped_behind) {
        (None, _) => "-".into(),
        (Some(d), 0) => crate::fmt::int(d),
        (Some(d), b) => format!("{} ({} behind)", crate::fmt::int(d), crate::fmt::int(b)),
    }
}
