//! How a run was loaded, what its steps were and how it ended.

use super::*;
use crest_model::plan::OnCap;

/// How a run loads its target, as configured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Load {
    /// Open model: arrivals per second, with a cap on requests in flight.
    Open {
        /// The highest rate asked for.
        rate: f64,
        /// The cap.
        max_in_flight: u64,
        /// What arrivals at the cap do.
        on_cap: OnCap,
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
                on_cap: c.on_cap.unwrap_or_default(),
            },
            None => Load::Closed {
                users: c.concurrency,
                iterations: c.iterations,
            },
        }
    }
}

/// The load in words: `closed model, up to 40 users`. `arrival` is what an arrival of the open
/// model starts: a request, or a flow's iteration.
pub fn load(l: Load, arrival: WorkUnit) -> String {
    match l {
        Load::Open {
            rate,
            max_in_flight,
            on_cap,
        } => {
            format!(
                "open model, up to {} {}, at most {max_in_flight} in flight{}",
                rate_number(rate),
                unit_rate(arrival),
                match on_cap {
                    OnCap::Drop => "",
                    OnCap::Queue => ", arrivals past it queued (pgbench -R)",
                }
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
    let whole = load(Load::of(&r.config), arrival(r));
    match sweep_points(r) {
        Some(points) => format!(
            "{}, over {points} points",
            whole.replacen(" model, ", " model, up to ", 1)
        ),
        None => whole,
    }
}

/// What the run's load counts, arrivals and `-n` alike: a flow's iterations, else requests.
fn arrival(r: &Results) -> WorkUnit {
    if r.iterations.is_empty() {
        WorkUnit::Requests
    } else {
        WorkUnit::Iterations
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
    } else if r.ended_by == EndReason::Requests && arrival(r) == WorkUnit::Iterations {
        "iteration count"
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
        EndReason::CollectorLost => {
            "its collector being lost (this worker stopped, and kept its part as far as it went)"
        }
    }
}

/// A step by its load (`40 users`, `250/s`), or by its kind when it has none.
pub fn step(l: &StepLoad) -> String {
    match l {
        StepLoad::Users(u) => count(*u, "user"),
        StepLoad::Rate(r) => rate(*r),
        StepLoad::Named(k) => step_kind(k),
    }
}

/// A row of the summary's tables: a step by its kind, a request by its name.
pub fn group_name(g: &GroupSummary) -> String {
    g.kind.as_ref().map_or_else(|| g.name.clone(), step_kind)
}

/// A step of one part of a run made of several (a level of quick mode, a probe, a sweep's
/// point) under that part: `20 users / ramp to 40 users`; a step of a whole run alone.
pub fn step_in_part(part: Option<&StepKind>, step: &StepKind) -> String {
    match part {
        Some(p) => format!("{} / {}", step_kind(p), step_kind(step)),
        None => step_kind(step),
    }
}

/// An arrival rate, the one spelling of a rate in every report and message: `50/s`,
/// `12.5/s`, `333.333/s`; a whole rate without `.0`, a fraction to three places at most.
pub fn rate(r: f64) -> String {
    format!("{}/s", rate_number(r))
}

/// The number of an asked rate as [`rate`] spells it, for a rate with its unit in words
/// (`200 iterations/s`).
pub fn rate_number(r: f64) -> String {
    if r.is_finite() && r.abs() < 1e15 {
        let t = format!("{r:.3}");
        let t = t.trim_end_matches('0').trim_end_matches('.');
        if t == "-0" {
            "0".to_string()
        } else {
            t.to_string()
        }
    } else {
        crest_model::number::short(r)
    }
}

/// A load level: `12 users`, `250/s`.
pub fn load_level(l: StepLevel) -> String {
    match l {
        StepLevel::Users(u) => count(u, "user"),
        StepLevel::Rate(r) => rate(r),
    }
}

/// What a step is, in the words every report and message names it by: `run`, `40 users`,
/// `ramp to 100 users`, `spike 500/s`, `paused`, `probe 2: 40 users`.
pub fn step_kind(k: &StepKind) -> String {
    match k {
        StepKind::Run => "run".into(),
        StepKind::Level(l) => load_level(*l),
        StepKind::Ramp(l) => format!("ramp to {}", load_level(*l)),
        StepKind::Hold(l) => format!("hold {}", load_level(*l)),
        StepKind::Baseline(l) => format!("baseline {}", load_level(*l)),
        StepKind::Spike(l) => format!("spike {}", load_level(*l)),
        StepKind::Recovery(l) => format!("recovery {}", load_level(*l)),
        StepKind::Loops { threads, loops } => format!("{threads} threads x {loops} loops"),
        StepKind::Once(n) => format!("{}, once", count(*n, "user")),
        StepKind::Paused => "paused".into(),
        StepKind::Resumed => "resumed".into(),
        StepKind::Manual => "manual".into(),
        StepKind::Probe { number, level } => format!("probe {number}: {}", load_level(*level)),
        StepKind::Point(label) | StepKind::Named(label) => label.clone(),
    }
}

/// `1 user`, `12 users`: a count with its noun, singular for one.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", crate::fmt::int(n))
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

/// What a run's per-step figures count: its transactions for SQL, else its requests (a flow's
/// iterations have tables of their own).
pub fn counted(u: WorkUnit) -> &'static str {
    match u {
        WorkUnit::Transactions => "transactions",
        WorkUnit::Requests | WorkUnit::Iterations => "requests",
    }
}

/// The rate of what [`counted`] counts.
pub fn counted_rate(u: WorkUnit) -> &'static str {
    match u {
        WorkUnit::Transactions => "transactions/s",
        WorkUnit::Requests | WorkUnit::Iterations => "req/s",
    }
}

/// Why a step is shown but not judged, to follow its name: ` (not judged: too little data, 12
/// requests of the 20 needed)`; empty when it is judged. `unit` is what the step counts.
pub fn unjudged_note(j: &Judged, unit: WorkUnit) -> String {
    match j {
        Judged::Yes => String::new(),
        Judged::Empty => " (not judged: empty)".into(),
        Judged::CutShort { lasted_s, .. } => format!(" (not judged: cut short after {} s)", num(*lasted_s)),
        Judged::TooLittle { units, min } => format!(
            " (not judged: too little data, {} {} of the {min} needed)",
            crate::fmt::int(*units),
            if unit == WorkUnit::Iterations {
                "iterations"
            } else {
                counted(unit)
            }
        ),
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

/// What a run measured, as its report's title names it: `GET http://host/path` (redacted) or
/// `scenario load.yaml`.
pub fn run_target(r: &Results) -> String {
    match (&r.config.http, &r.config.scenario) {
        (Some(h), _) => format!("{} {}", h.method, crest_model::redact::url(&h.url)),
        (None, Some(s)) => format!("scenario {}", s.path),
        _ => "run".into(),
    }
}

/// A run's name: its label (`--label`) when it has one, else what it measured.
pub fn run_name(r: &Results) -> String {
    r.config
        .provenance
        .as_ref()
        .and_then(|p| p.label.clone())
        .unwrap_or_else(|| run_target(r))
}

/// How many of a run's units of work there were and how they ended: `1,204 requests: 1,204 ok,
/// 0 failed`.
pub fn outcome_counts(s: &crest_analysis::Summary) -> String {
    format!(
        "{} {}: {} ok, {} failed",
        crate::fmt::int(s.requests),
        counted(s.unit),
        crate::fmt::int(s.successes),
        crate::fmt::int(s.failures)
    )
}
