//! The analysis's findings and figures in sentences: one wording per finding, used by every
//! format, the JSON summary and the binary's messages alike.

use super::{num, quantity, value};
use crate::fmt::scale;
use crest_analysis::capacity::{Beyond, Failed, NoOptimal, Why};
use crest_analysis::compare::{LatencyStat, Metric as Compared, Note, Shape, Verdict};
use crest_analysis::failures::{Cluster, EachRequest, TimeoutOf};
use crest_analysis::figures::StepLoad;
use crest_analysis::figures::WorkUnit;
use crest_analysis::find::{Done, Level, Limit, Miss, Recommended};
use crest_analysis::findings::Finding;
use crest_analysis::recovery::Recovery;
use crest_analysis::resources::Leak;
use crest_analysis::stop::StopReason;
use crest_analysis::thresholds::Measured;
use crest_analysis::validity::ClientLimit;
use crest_model::expr::Metric;
use crest_model::monitor::Unit;
use crest_model::results::{EndReason, Results, RunConfig};

/// How a run loads its target, as configured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Load {
    /// Open model: arrivals per second, with a cap on requests in flight.
    Open {
        /// The highest rate asked for.
        rate: f64,
        /// The cap.
        max_in_flight: u64,
    },
    /// Closed model: users.
    Closed {
        /// The most users at once.
        users: u64,
        /// Iterations each user runs, when bounded.
        iterations: Option<u64>,
    },
}

impl Load {
    /// The load a finished run was configured with.
    pub fn of(c: &RunConfig) -> Self {
        match c.rate {
            Some(rate) => Load::Open {
                rate,
                max_in_flight: c.concurrency,
            },
            None => Load::Closed {
                users: c.concurrency,
                iterations: c.iterations,
            },
        }
    }
}

/// The load in words: `closed model, up to 40 users`.
pub fn load(l: Load) -> String {
    match l {
        Load::Open { rate, max_in_flight } => {
            format!(
                "open model, up to {} req/s, at most {max_in_flight} in flight",
                num(rate)
            )
        }
        Load::Closed {
            users,
            iterations: Some(1),
        } => format!("closed model, {} once each", count(users, "user")),
        Load::Closed {
            users,
            iterations: Some(n),
        } => format!("closed model, {} x {}", count(users, "user"), count(n, "iteration")),
        Load::Closed {
            users,
            iterations: None,
        } => format!("closed model, up to {}", count(users, "user")),
    }
}

/// True when the run's steps are a sweep's points (each a run of its own, none a load level).
fn sweep_points(r: &Results) -> Option<usize> {
    let points = r.segments.len();
    (points > 1 && r.segments.iter().all(|s| s.users.is_none() && s.rate.is_none())).then_some(points)
}

/// The load of a finished run in words, all of it: a sweep's points together, e.g. `closed
/// model, up to 50 users once each, over 6 points`, never the first point's alone.
pub fn run_load(r: &Results) -> String {
    let whole = load(Load::of(&r.config));
    match sweep_points(r) {
        Some(points) => format!(
            "{}, over {points} points",
            whole.replacen(" model, ", " model, up to ", 1)
        ),
        None => whole,
    }
}

/// True when the run's timeline is longer than the time load was sent: the parts of a joined
/// run (a sweep's points, `-c` levels, a capacity search's probes) each start on a whole
/// interval, so there are gaps between them.
fn has_gaps(r: &Results) -> bool {
    r.segments.len() > 1 && r.duration_s - r.active_s() > 1e-3
}

/// The run's timeline, when it has gaps: what the charts and failure times are measured on,
/// beside the duration, which counts only the time load was sent.
pub fn timeline(r: &Results) -> Option<String> {
    has_gaps(r).then(|| {
        let unit = if r.interval_s == 1.0 { "second" } else { "interval" };
        format!(
            "on a timeline of {} s, which charts and failure times follow: its {} parts ran one after another, each starting on a whole {unit}",
            num(r.duration_s),
            r.segments.len()
        )
    })
}

/// The x axis of a chart over time: seconds from the start of the run, on its timeline.
pub fn time_axis(r: &Results) -> &'static str {
    if has_gaps(r) {
        "seconds on the run's timeline (parts joined)"
    } else {
        "seconds"
    }
}

/// How a run ended, in words; a capacity search ends when its search does.
pub fn ended(r: &Results) -> &'static str {
    let planned = r.config.duration_s.filter(|_| r.ended_by == EndReason::Unfinished);
    if r.find.is_some() && r.ended_by == EndReason::Completed {
        "the capacity search finishing"
    } else if planned.is_some_and(|d| r.duration_s >= d) {
        // Its journal reached the planned length: it was not cut short, only its last line
        // is missing (a full disk, or crest stopped while writing it).
        "duration, as far as its journal shows (it has no end line: a full disk, or crest was stopped while writing it)"
    } else {
        ended_by(r.ended_by)
    }
}

/// How a run ended, in words.
pub fn ended_by(e: EndReason) -> &'static str {
    match e {
        EndReason::Duration => "duration",
        EndReason::Requests => "request count",
        EndReason::Sigint => "Ctrl-C (interrupted)",
        EndReason::Sigterm => "SIGTERM (interrupted)",
        EndReason::Completed => "every user finishing its iterations",
        EndReason::Condition => "a stop condition",
        EndReason::Unfinished => {
            "nothing: crest was stopped (killed or crashed); rebuilt from its journal, its last seconds are missing"
        }
    }
}

/// A step by its load (`40 users`, `250/s`), or by its name when it has none.
pub fn step(l: &StepLoad) -> String {
    match l {
        StepLoad::Users(u) => count(*u, "user"),
        StepLoad::Rate(r) => format!("{r}/s"),
        StepLoad::Named(n) => n.clone(),
    }
}

/// A level of a capacity search: `12 users`, `250.0/s`.
pub fn level(l: Level) -> String {
    if l.open {
        format!("{:.1}/s", l.value)
    } else {
        count(l.value.round() as u64, "user")
    }
}

/// `1 user`, `12 users`: a count with its noun, singular for one.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", super::int(n))
    }
}

/// How a probe missed the service level.
pub fn miss(m: &Miss) -> String {
    match m {
        Miss::ErrorRate { rate, max } => format!("error rate {:.2}% above {:.2}%", rate * 100.0, max * 100.0),
        Miss::P99 { ms, max } => format!("p99 {ms:.1} ms above {max:.1} ms"),
        Miss::RateNotKept { share } => format!("only {:.0}% of the asked rate was served", share * 100.0),
    }
}

/// Why a capacity search ended; results.json keeps it as `stopped_because`.
pub fn done(d: &Done) -> String {
    match d {
        Done::FirstFailed(l, m) => format!("the first probe already failed at {}: {}", level(*l), miss(m)),
        Done::HighestAllowed(l) => format!("reached the highest level allowed ({})", level(*l)),
        Done::LimitBetween(good, bad, m) => {
            format!("limit found between {} and {}: {}", level(*good), level(*bad), miss(m))
        }
        Done::Failed(l, m) => format!("{} failed: {}", level(*l), miss(m)),
        Done::Plateau { rps, from } => format!(
            "throughput stopped growing: {rps_} req/s from {} on; more load only adds latency",
            level(*from),
            rps_ = num(*rps)
        ),
    }
}

/// Why a capacity search rebuilt from its journals has no ending: it was killed after `probes`.
pub fn cut_short(probes: usize) -> String {
    format!("the search was cut short after probe {probes}, before it could conclude")
}

/// Where a capacity search found the limit.
pub fn limit(l: &Limit) -> String {
    match l {
        Limit::Failed(l) => level(*l),
        Limit::Plateau { rps, from } => format!("a throughput plateau of {} req/s from {}", num(*rps), level(*from)),
    }
}

/// The recommended operating range.
pub fn recommended(r: &Recommended) -> String {
    match r {
        Recommended::About(l) => format!("about {}", level(*l)),
        Recommended::Between(lo, hi) => format!("{} to {}", level(*lo), level(*hi)),
    }
}

fn failed(f: &Failed) -> String {
    format!(
        "{} of {} requests failed ({:.1}%)",
        super::int(f.failures),
        super::int(f.requests),
        f.error_rate * 100.0
    )
}

/// Why a capacity point is the one named.
pub fn why(w: &Why, unit: WorkUnit) -> String {
    let rate = unit_rate(unit);
    match w {
        Why::MostPower {
            success_rps,
            mean_ms,
            beyond,
        } => {
            let beyond = match beyond {
                Beyond::Failed { load, failed: f } => format!("at {} {}", step(load), failed(f)),
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
        Why::Failed(f) => failed(f),
        Why::ThroughputFell { rps, best_rps } => {
            format!(
                "throughput fell to {} {rate} from a best of {} {rate}",
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
            "every level failed more than {:.0}% of its requests; the fewest, at {}, {}",
            max_error_rate * 100.0,
            step(least),
            failed(f)
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

/// A rate of a unit of work, as tables head it.
pub fn unit_rate(u: WorkUnit) -> &'static str {
    match u {
        WorkUnit::Requests => "req/s",
        WorkUnit::Transactions => "transactions/s",
        WorkUnit::Iterations => "iterations/s",
    }
}

/// The plural noun of a unit of work.
pub fn unit_plural(u: WorkUnit) -> &'static str {
    match u {
        WorkUnit::Requests => "requests",
        WorkUnit::Transactions => "transactions",
        WorkUnit::Iterations => "iterations",
    }
}

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
        ClientLimit::LateMedian {
            lag_p50_ms,
            latency_p50_ms,
        } => format!(
            "crest sent requests late: the send lag's median was {lag_p50_ms:.3} ms, {:.0}% of the median latency ({latency_p50_ms:.3} ms), so crest's own delay is part of every latency",
            lag_p50_ms / latency_p50_ms.max(f64::MIN_POSITIVE) * 100.0
        ),
        ClientLimit::LateTail {
            lag_p99_ms,
            latency_p50_ms,
        } => format!(
            "requests started late: the send lag's p99 was {lag_p99_ms:.1} ms (median latency {latency_p50_ms:.1} ms), so crest could not keep the schedule"
        ),
        ClientLimit::Dropped { dropped, arrivals } => format!(
            "{} of {} arrivals ({:.2}%) were dropped at the cap on requests in flight (-c / max_in_flight)",
            super::int(*dropped),
            super::int(*arrivals),
            *dropped as f64 / (*arrivals).max(1) as f64 * 100.0
        ),
        ClientLimit::LocalExhaustion { failed } => {
            format!(
                "{} failed because crest ran out of file descriptors or local ports",
                count(*failed, "request")
            )
        }
        ClientLimit::WaitingUsers {
            step,
            in_flight,
            users,
            throughput_rps,
            mean_ms,
        } => format!(
            "in {step} only {in_flight:.1} of {} had a request in flight on average ({} req/s x a mean of {mean_ms:.1} ms), with no think time and no request count to explain the rest: they waited inside crest",
            count(*users, "user"),
            num(*throughput_rps)
        ),
    }
}

/// Milliseconds as seconds: whole from 10 s on, else to a tenth with no trailing `.0`, so a
/// 1.5 s timeout is not rounded into another one.
fn seconds(ms: f64) -> String {
    let s = ms / 1000.0;
    if s >= 10.0 || (s * 10.0).round() % 10.0 == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}

/// Why a run's requests are not plotted one by one; `None` when they are (or there were none).
pub fn each_request_absent(e: &EachRequest) -> Option<String> {
    match e {
        EachRequest::TooMany { requests, kept } => Some(format!(
            "Each request's latency is plotted for runs of at most {} requests; this one made {}. \
             The charts above show its percentiles per second, and --log-requests keeps every \
             request in request-log.csv.gz.",
            super::int(*kept),
            super::int(*requests)
        )),
        EachRequest::NotKept => Some(
            "These results do not hold each request one by one (written by an older crest, or \
             joined from parts that did not keep theirs), so they are not plotted one by one."
                .into(),
        ),
        EachRequest::Plotted { .. } | EachRequest::NoRequests => None,
    }
}

/// Failures that look like a timeout.
pub fn cluster(c: &Cluster) -> String {
    let whose = match c.whose {
        TimeoutOf::Crest => "crest's own request timeout",
        TimeoutOf::ServerOrProxy => "a server or proxy timeout",
        TimeoutOf::Unknown => "a timeout",
    };
    format!(
        "most of these took {} to {} s: it looks like {whose} near {} s",
        seconds(c.p10_ms),
        seconds(c.p90_ms),
        seconds(c.p50_ms)
    )
}

/// Two significant digits, as "about" deserves.
fn round2(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let mag = 10f64.powi(v.abs().log10().floor() as i32 - 1);
    (v / mag).round() * mag
}

/// A span of time in the unit that reads best.
fn span(secs: f64) -> String {
    if secs < 120.0 {
        format!("{:.0} s", secs)
    } else if secs < 2.0 * 3600.0 {
        format!("{:.0} minutes", secs / 60.0)
    } else if secs < 2.0 * 86400.0 {
        format!("{:.0} hours", secs / 3600.0)
    } else {
        format!("{:.0} days", secs / 86400.0)
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// A leak, with how fast it grows and when it reaches its limit.
pub fn leak(l: &Leak) -> String {
    // Counts are whole; the trend line's ends need not be.
    let level = |v: f64| if l.unit == Unit::Count { v.round() } else { v };
    // Fast growth reads better per second, slow growth per minute.
    let rate = if l.per_minute >= 600.0 && l.unit == Unit::Count {
        format!("{} a second", value(l.unit, round2(l.per_second)))
    } else {
        format!("{} a minute", value(l.unit, round2(l.per_minute)))
    };
    let at = l
        .step_load
        .as_ref()
        .map(|s| format!("{}: ", step(s)))
        .unwrap_or_default();
    let mut sentence = format!(
        "{} {} by about {rate} under steady load ({at}from {} to {} over {})",
        capitalise(&l.title),
        if l.metric.contains("memory") { "grows" } else { "grow" },
        value(l.unit, level(l.from)),
        value(l.unit, level(l.to)),
        span(l.window_s.1 - l.window_s.0)
    );
    match (l.limit, l.minutes_to_limit) {
        (Some(lim), Some(m)) => sentence.push_str(&format!(
            "; the limit of {} is reached in about {}",
            value(l.unit, lim),
            span(m * 60.0)
        )),
        (Some(lim), None) => sentence.push_str(&format!("; it has reached its limit of {}", value(l.unit, lim))),
        _ => {}
    }
    sentence.push('.');
    sentence
}

/// What a threshold measured.
pub fn measured(m: &Measured) -> String {
    match m {
        Measured::Nothing => "nothing measured".into(),
        Measured::Figure(q) => quantity(*q),
        Measured::Series { quantity: q, key } => format!("{} ({key})", quantity(*q)),
    }
}

/// A metric of the expression language, as a sentence's subject.
fn metric(m: &Metric) -> String {
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

/// The figures that made a stop condition hold; results.json keeps them as its `detail`.
pub fn stop_detail(r: &StopReason) -> String {
    match r {
        StopReason::Series {
            key,
            value,
            window_s,
            bound,
        } => {
            let over = window_s.map(|w| format!(" over the last {w} s")).unwrap_or_default();
            format!("{key} was {}{over}, beyond {}", quantity(*value), quantity(*bound))
        }
        StopReason::Window {
            metric: m,
            value,
            secs,
            bound,
        } => format!(
            "{} was {} over the last {secs:.0} s, beyond {}",
            metric(m),
            quantity(*value),
            quantity(*bound)
        ),
        StopReason::Relative {
            metric: m,
            value,
            bound,
            times,
            reference,
        } => format!(
            "{} was {} in the steady state of the step that ended, beyond {} ({times}x the first step's steady {})",
            metric(m),
            quantity(*value),
            quantity(*bound),
            quantity(*reference)
        ),
        StopReason::Throughput {
            fell,
            rps,
            previous_rps,
            unit,
        } => format!(
            "throughput {}: {rps_} {rate} in the steady state of the step that ended, {previous_rps_} {rate} in the one before",
            if *fell { "fell" } else { "stopped growing" },
            rate = unit_rate(*unit),
            rps_ = num(*rps),
            previous_rps_ = num(*previous_rps)
        ),
    }
}

fn recovery(rec: &Recovery) -> String {
    let figures = match (rec.p95_ms, rec.error_rate) {
        (Some(p), Some(e)) => format!(
            "p95 {p:.1} ms and {:.2}% errors over 3 s, against the baseline's {:.1} ms and {:.2}%",
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
    match rec.seconds {
        Some(t) => format!("After the spike the service was back to its baseline in {t:.0} s ({figures})."),
        None => format!("After the spike the service did not return to its baseline before the run ended ({figures})."),
    }
}

/// A user's flow takes seconds or less: whole seconds would hide the figures.
fn took(secs: f64) -> String {
    if secs < 1.0 {
        format!("{} ms", super::ms(secs * 1000.0))
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
                "The service breaks between {held} and {broke}: success fell from {} to {} and throughput went from {} to {} req/s{why}.",
                super::pct(*held_success),
                super::pct(*broke_success),
                num(*held_rps),
                num(*broke_rps)
            )
        }
        F::BrokenFromStart { point, success } => format!(
            "The first point, {point}, already failed: {} of its requests succeeded.",
            super::pct(*success)
        ),
        F::Slower {
            first,
            slowest,
            first_ms,
            slowest_ms,
            ratio,
        } => format!(
            "Mean latency grew {ratio:.1}x from {first} ({} ms) to {slowest} ({} ms).",
            super::ms(*first_ms),
            super::ms(*slowest_ms)
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
                super::int(*requests),
                top.description,
                super::int(top.count),
                top.example
            ),
            _ => "No request completed.".to_string(),
        },
        Finding::UsersDone { users, peaks } => users_finding(users, peaks),
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
        Finding::Stopped(st) => format!(
            "The run stopped at {:.0} s because `{}` held: {}.",
            st.at_s, st.condition, st.detail
        ),
        Finding::LatencyGrew {
            ratio,
            from,
            to,
            from_ms,
            to_ms,
            from_requests,
            to_requests,
        } => format!(
            "Latency grew {ratio:.1}x from {} to {} (mean {from_ms:.1} ms over {} to {to_ms:.1} ms over {}): response time does not scale with load.",
            step(from),
            step(to),
            count(*from_requests, "request"),
            super::int(*to_requests)
        ),
        Finding::PointsDiffer {
            ratio,
            from,
            to,
            from_ms,
            to_ms,
            from_requests,
            to_requests,
        } => format!(
            "Mean latency grew {ratio:.1}x from {from} to {to} ({from_ms:.1} ms over {} to {to_ms:.1} ms over {}).",
            count(*from_requests, "request"),
            super::int(*to_requests)
        ),
        Finding::Optimal(o) => format!(
            "The optimal operating point is {} (p95 {:.1} ms): {}.",
            step(&o.load),
            o.p95_ms,
            why(&o.why, o.unit)
        ),
        Finding::NoOptimal(n, unit) => format!("No optimal operating point is named: {}.", no_optimal(n, *unit)),
        Finding::Saturates(p) => format!("The service saturates at {}: {}.", step(&p.load), why(&p.why, p.unit)),
        Finding::Breaks { point, after } => {
            let between = after
                .as_ref()
                .map(|g| format!(" The breaking point lies between {} and {}.", step(g), step(&point.load)));
            format!(
                "The service breaks at {}: {}.{}",
                step(&point.load),
                why(&point.why, point.unit),
                between.unwrap_or_default()
            )
        }
        Finding::Clustered {
            count,
            description,
            outcome,
            cluster: c,
        } => format!("{} {description} ({outcome}): {}.", super::int(*count), cluster(c)),
        Finding::SomeFailed {
            failures,
            requests,
            error_rate,
            top,
        } => format!(
            "{} of {} requests failed ({:.2}%), most as {} ({}), e.g. \"{}\".",
            super::int(*failures),
            super::int(*requests),
            error_rate * 100.0,
            top.description,
            super::int(top.count),
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

/// What a comparison row compares.
pub fn compared(m: &Compared) -> String {
    match m {
        Compared::Throughput => "throughput".into(),
        Compared::PeakThroughput => "peak throughput (best step)".into(),
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
            format!("{name} latency")
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
        super::int(v as u64)
    } else if *m == Compared::ErrorRate || *m == Compared::AllDone {
        // As every other report shows an error rate (1 failure in 10,000 is not 0.0%) and the
        // time until the users were done (4.42 s).
        format!("{v:.2}")
    } else {
        super::num(v)
    };
    match unit {
        "" => n,
        "%" => format!("{n}%"),
        _ => format!("{n} {unit}"),
    }
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
        Note::NoSuccess(label) => format!("No request of {label} succeeded: its latencies are those of its failures."),
        Note::Shapes { a_label, a, b_label, b } => format!(
            "The runs differ in shape ({a_label}: {}; {b_label}: {}): whole-run figures compare different loads.",
            shape(a),
            shape(b)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crest_analysis::units::Quantity;
    use crest_model::monitor::SeriesKey;

    #[test]
    fn comparison_cells_read_counts_whole_and_series_as_their_reports_do() {
        assert_eq!(compared_cell(&Compared::Requests, 9724.0), "9,724");
        assert_eq!(compared_cell(&Compared::Failures, 0.0), "0");
        assert_eq!(compared_cell(&Compared::OptimalLoad, 40.0), "40");
        // An open model's load is a rate with a fraction.
        assert_eq!(compared_cell(&Compared::BreakingLoad, 312.5), "312.5");
        assert_eq!(compared_cell(&Compared::ErrorRate, 0.0001), "0.01%");
        assert_eq!(compared_cell(&Compared::Throughput, 394.44), "394.4 req/s");
        assert_eq!(compared_cell(&Compared::AllDone, 4.417), "4.42 s");
        assert_eq!(compared_beyond(&StepLoad::Users(200)), "beyond 200 users");
        let fds = "process_open_fds".to_string();
        assert_eq!(compared_cell(&Compared::SeriesMean(fds, Unit::Count), 208.0), "208");
        let cpu = "process_cpu_percent".to_string();
        assert_eq!(compared_cell(&Compared::SeriesPeak(cpu, Unit::Percent), 99.84), "99.8%");
    }

    #[test]
    fn stop_details_read_as_results_json_keeps_them() {
        assert_eq!(
            stop_detail(&StopReason::Series {
                key: SeriesKey::new("load_average"),
                value: Quantity::Monitored(Unit::Number, 3.4),
                window_s: None,
                bound: Quantity::Monitored(Unit::Number, 3.0),
            }),
            "load_average was 3.4, beyond 3"
        );
        assert_eq!(
            stop_detail(&StopReason::Relative {
                metric: Metric::Latency(95.0),
                value: Quantity::Ms(8.0),
                bound: Quantity::Ms(6.0),
                times: 3.0,
                reference: Quantity::Ms(2.0),
            }),
            "p95 was 8.0 ms in the steady state of the step that ended, beyond 6.0 ms (3x the first step's steady 2.0 ms)"
        );
        assert_eq!(
            stop_detail(&StopReason::Window {
                metric: Metric::ErrorRate,
                value: Quantity::Fraction(0.128),
                secs: 5.0,
                bound: Quantity::Fraction(0.05),
            }),
            "the error rate was 12.80% over the last 5 s, beyond 5.00%"
        );
    }

    #[test]
    fn a_leak_says_how_fast_and_when_it_reaches_its_limit() {
        let l = Leak {
            key: "process_open_fds{process=\"api\"}".into(),
            metric: "process_open_fds".into(),
            title: "open files of api".into(),
            unit: Unit::Count,
            step: "40 users".into(),
            step_load: None,
            per_minute: 40.3,
            per_second: 40.3 / 60.0,
            from: 51.2,
            to: 449.0,
            window_s: (0.0, 600.0),
            limit: Some(1024.0),
            minutes_to_limit: Some(14.2),
        };
        assert_eq!(
            leak(&l),
            "Open files of api grow by about 40 a minute under steady load (from 51 to 449 over 10 minutes); the limit of 1024 is reached in about 14 minutes."
        );
        let memory = Leak {
            metric: "process_resident_memory_bytes".into(),
            title: "resident memory of api".into(),
            unit: Unit::Bytes,
            per_minute: 3e6,
            per_second: 5e4,
            limit: None,
            minutes_to_limit: None,
            step_load: Some(StepLoad::Users(20)),
            ..l
        };
        assert!(
            leak(&memory).starts_with(
                "Resident memory of api grows by about 2.9 MiB a minute under steady load (20 users: from"
            ),
            "{}",
            leak(&memory)
        );
        assert_eq!(round2(41.7), 42.0);
        assert_eq!(round2(0.1234), 0.12);
    }

    #[test]
    fn the_load_reads_the_same_wherever_it_is_described() {
        assert_eq!(
            load(Load::Open {
                rate: 1500.0,
                max_in_flight: 1000
            }),
            "open model, up to 1,500.0 req/s, at most 1000 in flight"
        );
        assert_eq!(
            load(Load::Closed {
                users: 4,
                iterations: Some(10)
            }),
            "closed model, 4 users x 10 iterations"
        );
    }
}
