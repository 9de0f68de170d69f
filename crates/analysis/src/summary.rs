//! The end-of-run summary: throughput, latency percentiles, status codes, error classes, and
//! what the later stages found, in one value the terminal, `--summary-json` and the exit code
//! read. Its field names are a public interface: `--summary-json` writes them (with their text,
//! from the report crate).

use crate::capacity::{Capacity, CapacityPoint, NoOptimal};
use crate::figures::{Judged, Percentiles, SegmentAnalysis, WorkUnit};
use crate::find::{capacity_summary, CapacitySummary};
use crate::recovery::{recovery, Recovery};
use crate::resources::{leaks, resources, Leak, ResourceRow};
use crate::thresholds::{evaluate, ThresholdResult};
use crate::validity::{client_limits, ClientLimit};
use crest_model::results::{EndReason, Results};
use crest_model::step::StepKind;
use crest_model::{HistError, Outcome};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;

/// One class of failure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErrorSummary {
    /// The outcome key (`http_503`, `connect_refused`, ...).
    pub outcome: Outcome,
    /// A short description.
    pub description: String,
    /// How many requests ended this way.
    pub count: u64,
    /// One example message.
    pub example: String,
}

/// A worker of a distributed run lost while the run went on.
#[derive(Clone, Debug, Serialize)]
pub struct LostWorker {
    /// The worker's index.
    pub index: u32,
    /// When, and what of the load went missing.
    #[serde(flatten)]
    pub lost: crest_model::merge::Lost,
}

/// Open-model arrivals queued at the cap on requests in flight (`on_cap: queue`), as pgbench -R
/// queues its transactions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Queued {
    /// The cap on requests in flight.
    pub cap: u64,
    /// Arrivals that waited for a place, then were sent.
    pub waited: u64,
    /// Arrivals due.
    pub arrivals: u64,
    /// Arrivals still waiting (or not yet reached) when the run's time ran out: not sent.
    pub left: u64,
}

/// The end-of-run summary; `--summary-json` writes it with its text beside each figure.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Requests completed (successes and failures).
    pub requests: u64,
    /// Of those, successes.
    pub successes: u64,
    /// Of those, failures.
    pub failures: u64,
    /// failures / requests, from 0 to 1.
    pub error_rate: f64,
    /// Seconds in which load was sent (for a joined run, its parts' lengths added up).
    pub duration_s: f64,
    /// Requests per second.
    pub throughput_rps: f64,
    /// Successful requests per second.
    pub success_rps: f64,
    /// Total time of every request, in ms (from the intended start in the open model).
    pub latency_ms: Percentiles,
    /// Total time of the successful requests only, in ms: what a served user waited, which
    /// growth findings across runs compare (failures have their own rows).
    pub success_latency_ms: Percentiles,
    /// Time to first byte, in ms, of requests that received any.
    pub ttfb_ms: Percentiles,
    /// Connect time (TCP and TLS), in ms, of requests that opened a connection.
    pub connect_ms: Percentiles,
    /// Connections opened.
    pub connections: u64,
    /// Name resolution time, in ms, of connections that resolved the host themselves
    /// (`--dns-per-connection`), failed lookups included; `None` when none did.
    pub dns_ms: Option<Percentiles>,
    /// Responses by status code.
    pub status_codes: BTreeMap<String, u64>,
    /// Failures by outcome, most frequent first.
    pub errors: Vec<ErrorSummary>,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Messages on message streams (WebSocket, server-sent events, gRPC); absent for
    /// a run of requests and responses only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<Messages>,
    /// gRPC calls by the status they ended with: `OK` for those that succeeded, and each
    /// status the server answered (`UNAVAILABLE`, ...). Calls that failed otherwise (a check,
    /// the connection) are in [`Self::errors`] only. Absent for a run without gRPC steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grpc: Option<BTreeMap<String, u64>>,
    /// Requests cut off in flight when the grace period ran out.
    pub abandoned: u64,
    /// Why the run ended.
    pub ended_by: EndReason,
    /// Open model: arrivals per second asked for, the highest when the schedule changed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_rps: Option<f64>,
    /// Open model: whether the asked rate changed during the run (stages, a spike, a sweep, a
    /// change by hand), so that [`Self::target_rps`] is its peak, not what was asked throughout.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub target_varies: bool,
    /// Open model: arrivals due on the schedule while sending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<u64>,
    /// Open model: arrivals due per second over the run's duration, the same window as
    /// [`Self::achieved_rps`]: the two are equal when nothing was dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_mean_rps: Option<f64>,
    /// Open model: arrivals per second actually sent, over the run's duration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub achieved_rps: Option<f64>,
    /// Open model: arrivals not sent, at the concurrency cap or [`Self::dropped_behind`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<u64>,
    /// Open model: of the dropped, arrivals due before the deadline that crest, behind its
    /// schedule, never reached; absent when none were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped_behind: Option<u64>,
    /// Open model with `on_cap: queue`: the cap and how many arrivals waited at it; absent
    /// when arrivals at the cap were dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued: Option<Queued>,
    /// Open model: how late requests started compared with the schedule, in ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_lag_ms: Option<Percentiles>,
    /// Open model: service time in ms, from each request's actual send (its latency less its
    /// send lag); latency itself counts from the intended send.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_ms: Option<Percentiles>,
    /// The stop condition that ended the run, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<crest_model::results::StopRecord>,
    /// Thresholds and whether they held.
    pub thresholds: Vec<ThresholdResult>,
    /// Per segment (step of the profile), in order: `requests` and `failures` count every
    /// request of the step (they add up to the run's), `throughput_rps` and `latency_ms` are of
    /// its steady state (its warm-up trimmed), which lasted `steady_s` of the step's
    /// `duration_s`.
    pub segments: Vec<GroupSummary>,
    /// Per request name, in order of first appearance.
    pub names: Vec<GroupSummary>,
    /// After a spike profile: how long the service took to recover.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// What `crest find` concluded, for capacity searches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacitySummary>,
    /// How crest itself limited the run; empty when it did not.
    pub client_bound: Vec<ClientLimit>,
    /// Workers of a distributed run lost while it went on (see `merge::Lost`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lost_workers: Vec<LostWorker>,
    /// Each worker of a distributed run, its figures and verdict; empty for a run of one
    /// generator. Filled by [`crate::analyze()`], which knows the run's unit of work.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<crate::workers::WorkerFigures>,
    /// Monitored series with their mean and peak, over the run and per step.
    pub resources: Vec<ResourceRow>,
    /// Resources that grew under steady load.
    pub leaks: Vec<Leak>,
    /// Runs whose users each run a fixed number of iterations (`run_once`, threads x loops):
    /// when the last finished and how long each took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub users: Option<UsersDone>,
    /// What the answers are counted in: requests, transactions, or iterations of the flows.
    pub unit: WorkUnit,
    /// The scenario's flows: iterations started, completed, failed, per second and how long
    /// they took; `None` without flows.
    pub iterations: Option<crate::iterations::Iterations>,
    /// The optimal operating point and the limit, in `unit`, each with the figures it rests
    /// on or the reason there is none.
    pub answers: Answers,
    /// What limits the service, with its figures; `None` when the run cannot tell. Filled by
    /// [`crate::analyze()`].
    pub bottleneck: Option<crate::bottleneck::Bottleneck>,
    /// Watched processes that exited, were OOM-killed or restarted.
    pub events: Vec<crate::events::ProcessEvent>,
    /// A `resources:` block for each watched process. Filled by [`crate::analyze()`].
    pub sizing: Vec<crate::sizing::Sizing>,
    /// Watched processes the data cannot size, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub no_sizing: Vec<crate::sizing::NoSizing>,
}

/// A step's iterations, beside its requests.
#[derive(Clone, Debug, Serialize)]
pub struct StepIterations {
    /// Iterations of the step that passed.
    pub completed: u64,
    /// Iterations of the step that failed.
    pub failed: u64,
    /// Completed iterations per second over the step's span less its warm-up.
    pub per_s: f64,
    /// Time of every iteration of the step that ended, ms.
    pub duration_ms: Percentiles,
}

/// The optimal operating point and the limit, in the run's unit of work.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Answers {
    /// What `per_s` counts.
    pub unit: WorkUnit,
    /// The optimal operating point: the most successful throughput per unit of latency, with
    /// a level beyond it that showed latency outgrowing throughput or failures.
    pub optimal: Option<Answer>,
    /// Why there is no optimal point.
    pub no_optimal: Option<NoOptimal>,
    /// The limit: the first step that broke (failures past 1%, or a capacity search's service
    /// level missed), or else saturation.
    pub limit: Option<Answer>,
    /// Steps left out of the answers because they could not be judged (cut short, empty, too
    /// little data).
    pub unjudged: Vec<StepKind>,
}

/// One step named as an answer, with its figures.
#[derive(Clone, Debug, Serialize)]
pub struct Answer {
    /// Index of the step.
    pub segment: usize,
    /// What the step is; reports put it in words.
    pub kind: StepKind,
    /// Users there (closed model).
    pub users: Option<u64>,
    /// Arrivals per second there (open model).
    pub rate: Option<f64>,
    /// Successful units of work per second there.
    pub per_s: f64,
    /// The standard error of `per_s`, from the step's own data.
    pub per_s_se: f64,
    /// Latency (or iteration time) of the successful units there, ms.
    pub latency_ms: Percentiles,
    /// Failures / units there.
    pub error_rate: f64,
    /// Why: `most_power`, `failed`, `missed_slo`, `throughput_fell`, `saturates`.
    pub why: &'static str,
}

/// The answers over the steps in the run's unit.
pub fn answers(unit: WorkUnit, steps: &[SegmentAnalysis], capacity: &Capacity) -> Answers {
    let answer = |p: &CapacityPoint| {
        steps.iter().find(|s| s.index == p.segment).map(|s| Answer {
            segment: s.index,
            kind: s.kind.clone(),
            users: s.users,
            rate: s.rate,
            per_s: s.success_rps,
            per_s_se: s.success_rps_se,
            latency_ms: s.success_latency_ms,
            error_rate: s.error_rate,
            why: match p.why {
                crate::capacity::Why::MostPower { .. } => "most_power",
                crate::capacity::Why::Failed(_) => "failed",
                crate::capacity::Why::MissedSlo(_) => "missed_slo",
                crate::capacity::Why::ThroughputFell { .. } => "throughput_fell",
                crate::capacity::Why::Saturates { .. } => "saturates",
            },
        })
    };
    Answers {
        unit,
        optimal: capacity.optimal.as_ref().and_then(answer),
        no_optimal: capacity.no_optimal.clone(),
        limit: capacity
            .breaking
            .as_ref()
            .or(capacity.saturation.as_ref())
            .and_then(answer),
        unjudged: steps
            .iter()
            .filter(|s| s.judged != Judged::Yes)
            .map(|s| s.kind.clone())
            .collect(),
    }
}

/// How long the users of a run with a fixed number of iterations each took to finish.
#[derive(Clone, Debug, Serialize)]
pub struct UsersDone {
    /// Users that ran all their iterations.
    pub finished: u64,
    /// Users stopped before their last iteration.
    pub cut_short: u64,
    /// Seconds from the start of the run until the last user finished: the time the whole
    /// population needed.
    pub all_done_s: f64,
    /// Each finished user's time, from its first iteration's start to its end, in ms.
    pub per_user_ms: Percentiles,
}

/// Figures for one segment or one request name.
#[derive(Clone, Debug, Serialize)]
pub struct GroupSummary {
    /// The request's name; empty for a segment, which has its kind.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// What the segment is (segments only); reports put it in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<StepKind>,
    /// Users at the segment's level (segments of the closed model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub users: Option<u64>,
    /// Arrival rate at the segment's level (segments of the open model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Seconds the segment lasted (segments only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// Seconds of the segment's steady state, which its throughput and latency describe
    /// (segments only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_s: Option<f64>,
    /// The transaction this name is a statement of (names only): its figures are a sub-measure,
    /// not in the run's totals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part_of: Option<String>,
    /// Requests.
    pub requests: u64,
    /// Failures.
    pub failures: u64,
    /// Requests per second (over the segment, or over the run for names), failures included.
    pub throughput_rps: f64,
    /// Successful requests (transactions) per second, likewise; a step's throughput in every
    /// answer (segments only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success_per_s: Option<f64>,
    /// The standard error of `success_per_s`, from the step's own data (segments only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success_per_s_se: Option<f64>,
    /// Latency in ms.
    pub latency_ms: Percentiles,
    /// Bytes received.
    pub bytes_received: u64,
    /// Messages the name's steps sent and read on message streams (names only, when any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<Messages>,
    /// Bytes each request received (names only, and only when the results kept them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<crate::figures::Sizes>,
    /// The step's iterations (segments of a run with flows only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<StepIterations>,
}

/// Messages on message streams: what a step of WebSocket or server-sent events
/// did beyond its requests. The bytes are those of the requests that carried them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Messages {
    /// Messages sent.
    pub sent: u64,
    /// Messages received.
    pub received: u64,
    /// Bytes sent by the requests that carried messages.
    pub bytes_sent: u64,
    /// Bytes received by the requests that carried messages.
    pub bytes_received: u64,
    /// Messages received per second of the run: a stream's events per second.
    pub received_per_s: f64,
}

impl Messages {
    /// Adds one stat's messages; `None` while no stat carried any.
    fn add(into: &mut Option<Messages>, s: &crest_model::results::Stat) {
        if s.messages_sent == 0 && s.messages_received == 0 {
            return;
        }
        let m = into.get_or_insert_with(Messages::default);
        m.sent += s.messages_sent;
        m.received += s.messages_received;
        m.bytes_sent += s.bytes_sent;
        m.bytes_received += s.bytes_received;
    }

    /// With the rate over `secs` seconds.
    fn over(mut self, secs: f64) -> Messages {
        self.received_per_s = if secs > 0.0 { self.received as f64 / secs } else { 0.0 };
        self
    }
}

impl Summary {
    /// True when any threshold failed.
    pub fn thresholds_failed(&self) -> bool {
        self.thresholds.iter().any(|t| !t.pass)
    }
}

/// Summarises a results document, given its steps' figures in requests (`segments`) and in the
/// run's unit of work (`steps`), and what they say about capacity.
pub fn summarize(
    r: &Results,
    segments: &[SegmentAnalysis],
    steps: &[SegmentAnalysis],
    capacity: &Capacity,
) -> Result<Summary, HistError> {
    let mut latency = crest_model::hist::new_histogram();
    let mut success_latency = crest_model::hist::new_histogram();
    let mut ttfb = crest_model::hist::new_histogram();
    let mut connect = crest_model::hist::new_histogram();
    let mut dns = crest_model::hist::new_histogram();
    let (mut requests, mut successes, mut bytes_sent, mut bytes_received) = (0, 0, 0, 0);
    let mut messages = None;
    for s in r.stats.iter().filter(|s| r.counts(s)) {
        requests += s.count;
        let h = s.latency.decode()?;
        if s.outcome.is_success() {
            successes += s.count;
            add(&mut success_latency, &h);
        }
        bytes_sent += s.bytes_sent;
        bytes_received += s.bytes_received;
        Messages::add(&mut messages, s);
        add(&mut latency, &h);
        if let Some(h) = &s.ttfb {
            add(&mut ttfb, &h.decode()?);
        }
        if let Some(h) = &s.connect {
            add(&mut connect, &h.decode()?);
        }
        if let Some(h) = &s.dns {
            add(&mut dns, &h.decode()?);
        }
    }
    let failures = requests - successes;
    let active_s = r.active_s();
    let per_s = |n: u64| {
        if active_s > 0.0 {
            n as f64 / active_s
        } else {
            0.0
        }
    };
    // The plan's peak, or a rate set by hand above it.
    let asked_peak =
        |o: &crest_model::results::OpenStats| r.segments.iter().filter_map(|g| g.rate).fold(o.target_rps, f64::max);
    let (target_rps, achieved_rps, dropped, send_lag_ms) = match &r.open {
        Some(o) => (
            Some(asked_peak(o)),
            Some(per_s(o.arrivals.saturating_sub(o.dropped))),
            Some(o.dropped),
            Some(Percentiles::from_micros(&o.send_lag.decode()?)),
        ),
        None => (None, None, None, None),
    };
    let target_varies = r.open.as_ref().is_some_and(|o| {
        // A step without a rate of its own (the whole run, before a change by hand) held the
        // plan's rate. A ramp asks every rate on its way; rates that differ by a rounding are one.
        let mut asked = r.segments.iter().map(|g| g.rate.unwrap_or(o.target_rps));
        let first = asked.next();
        r.segments
            .iter()
            .any(|g| matches!(g.kind, crest_model::step::StepKind::Ramp(_)))
            || asked.any(|x| first.is_some_and(|f| (x - f).abs() > 1e-9 * f.abs().max(1.0)))
    });
    let service_ms = match r.open.as_ref().and_then(|o| o.service.as_ref()) {
        Some(h) => Some(Percentiles::from_micros(&h.decode()?)),
        None => None,
    };
    let latency_ms = Percentiles::from_micros(&latency);
    Ok(Summary {
        requests,
        successes,
        failures,
        error_rate: if requests > 0 {
            failures as f64 / requests as f64
        } else {
            0.0
        },
        duration_s: active_s,
        throughput_rps: per_s(requests),
        success_rps: per_s(successes),
        latency_ms,
        success_latency_ms: Percentiles::from_micros(&success_latency),
        ttfb_ms: Percentiles::from_micros(&ttfb),
        connect_ms: Percentiles::from_micros(&connect),
        connections: connect.len(),
        dns_ms: (!dns.is_empty()).then(|| Percentiles::from_micros(&dns)),
        status_codes: r.status_codes.clone(),
        errors: r
            .errors
            .iter()
            .map(|e| ErrorSummary {
                outcome: e.outcome,
                description: e.outcome.describe(),
                count: e.count,
                example: e.example.clone(),
            })
            .collect(),
        bytes_sent,
        bytes_received,
        messages: messages.map(|m| m.over(active_s)),
        grpc: grpc_statuses(r),
        abandoned: r.abandoned,
        ended_by: r.ended_by,
        target_rps,
        target_varies,
        arrivals: r.open.as_ref().map(|o| o.arrivals),
        target_mean_rps: r.open.as_ref().map(|o| per_s(o.arrivals)),
        achieved_rps,
        dropped,
        dropped_behind: r.open.as_ref().map(|o| o.behind).filter(|n| *n > 0),
        queued: r
            .open
            .as_ref()
            .filter(|_| crate::validity::queueing(r))
            .map(|o| Queued {
                cap: r.config.concurrency,
                waited: o.queued,
                arrivals: o.arrivals,
                left: o.behind,
            }),
        send_lag_ms,
        service_ms,
        stopped_by: r.stopped_by.clone(),
        thresholds: evaluate(r, &r.config.thresholds)?,
        // Steps use their steady state, as the report and the capacity figures do.
        segments: step_groups(segments),
        recovery: recovery(r, capacity.unit)?,
        users: match &r.users {
            Some(u) => Some(UsersDone {
                finished: u.finished,
                cut_short: u.cut_short,
                all_done_s: u.last_end_s,
                per_user_ms: Percentiles::from_micros(&u.duration.decode()?),
            }),
            None => None,
        },
        capacity: capacity_summary(r, steps, segments, capacity),
        client_bound: client_limits(r, &latency_ms, send_lag_ms.as_ref(), segments, &capacity.steps),
        lost_workers: r
            .workers
            .iter()
            .filter_map(|w| w.lost.clone().map(|lost| LostWorker { index: w.index, lost }))
            .collect(),
        workers: Vec::new(),
        resources: resources(r, segments),
        leaks: leaks(r, segments),
        bottleneck: None,
        events: crate::events::events(r),
        sizing: Vec::new(),
        no_sizing: Vec::new(),
        names: name_groups(r)?,
        unit: WorkUnit::Requests,
        iterations: None,
        answers: Answers::default(),
    })
}

/// The calls of the names [`crest_model::results::ScenarioConfig::grpc`] lists, by status.
fn grpc_statuses(r: &Results) -> Option<BTreeMap<String, u64>> {
    let grpc = &r.config.scenario.as_ref()?.grpc;
    if grpc.is_empty() {
        return None;
    }
    let mut by = BTreeMap::new();
    for s in r.stats.iter().filter(|s| r.counts(s)) {
        if !r.names.get(s.name as usize).is_some_and(|n| grpc.contains(n)) {
            continue;
        }
        let status = match s.outcome {
            Outcome::Success => "OK".to_string(),
            Outcome::Grpc(code) => crest_model::outcome::grpc_code_name(code),
            _ => continue,
        };
        *by.entry(status).or_insert(0) += s.count;
    }
    Some(by)
}

/// Each step's row, from its steady state, as the report and the capacity figures use it.
fn step_groups(segments: &[SegmentAnalysis]) -> Vec<GroupSummary> {
    segments
        .iter()
        .map(|g| GroupSummary {
            name: String::new(),
            kind: Some(g.kind.clone()),
            users: g.users,
            rate: g.rate,
            duration_s: Some(g.whole.duration_s),
            steady_s: Some(g.steady_end_s - g.steady_start_s),
            part_of: None,
            requests: g.requests,
            failures: g.failures,
            throughput_rps: g.throughput_rps,
            success_per_s: Some(g.success_rps),
            success_per_s_se: Some(g.success_rps_se),
            latency_ms: g.latency_ms,
            bytes_received: g.bytes_received,
            messages: None,
            size_bytes: None,
            iterations: None,
        })
        .collect()
}

/// Each named request's row, a sub-measure with the name it is a part of.
fn name_groups(r: &Results) -> Result<Vec<GroupSummary>, HistError> {
    Ok(groups(
        r,
        |s| s.name as usize,
        r.names.len(),
        |i| (r.names[i].clone(), None, None, None),
    )?
    .into_iter()
    .enumerate()
    .map(|(i, mut g)| {
        g.part_of = r.parent(i as u32).and_then(|p| r.names.get(p as usize).cloned());
        g
    })
    .collect())
}

type Label = (String, Option<u64>, Option<f64>, Option<f64>);

/// Figures per group of stats (segment or name).
fn groups(
    r: &Results,
    key: impl Fn(&crest_model::results::Stat) -> usize,
    n: usize,
    label: impl Fn(usize) -> Label,
) -> Result<Vec<GroupSummary>, HistError> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let (name, users, rate, duration_s) = label(i);
        let mut h = crest_model::hist::new_histogram();
        let mut size = crest_model::hist::new_histogram();
        let (mut requests, mut failures, mut bytes_received) = (0, 0, 0);
        let mut messages = None;
        for s in r.stats.iter().filter(|s| key(s) == i) {
            Messages::add(&mut messages, s);
            requests += s.count;
            if !s.outcome.is_success() {
                failures += s.count;
            }
            bytes_received += s.bytes_received;
            add(&mut h, &s.latency.decode()?);
            if let Some(z) = &s.size {
                add(&mut size, &z.decode()?);
            }
        }
        let secs = duration_s.unwrap_or(r.duration_s);
        out.push(GroupSummary {
            name,
            kind: None,
            users,
            rate,
            duration_s,
            steady_s: None,
            part_of: None,
            requests,
            failures,
            throughput_rps: if secs > 0.0 { requests as f64 / secs } else { 0.0 },
            success_per_s: None,
            success_per_s_se: None,
            latency_ms: Percentiles::from_micros(&h),
            bytes_received,
            messages: messages.map(|m| m.over(secs)),
            size_bytes: crate::figures::Sizes::from_bytes(&size),
            iterations: None,
        });
    }
    Ok(out)
}

fn add(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    crest_model::hist::add(into, from);
}
