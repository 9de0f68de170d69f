//! The analysis as the JSON documents and template contexts show it: the typed figures with,
//! beside each, its text from [`crate::fmt`]. `--summary-json` and `compare.json` are public
//! interfaces, so these views keep their field names and order.

use crate::fmt::{self, words};
use crest_analysis::compare::Comparison;
use crest_analysis::figures::Percentiles;
use crest_analysis::figures::WorkUnit;
use crest_analysis::find::{CapacitySummary, OptimalPoint, Usl};
use crest_analysis::iterations::Iterations;
use crest_analysis::recovery::Recovery;
use crest_analysis::resources::{Growth, Leak, ResourceRow, Stats};
use crest_analysis::summary::{Answer, Answers, ErrorSummary, GroupSummary, Summary};
use crest_analysis::thresholds::ThresholdResult;
use crest_analysis::workers::WorkerFigures;
use crest_model::monitor::Unit;
use crest_model::reason::FiguresOrWords;
use crest_model::results::EndReason;
use serde::Serialize;
use std::collections::BTreeMap;

/// The end-of-run summary as `--summary-json` writes it.
#[derive(Debug, Serialize)]
pub struct SummaryView<'a> {
    requests: u64,
    successes: u64,
    failures: u64,
    error_rate: f64,
    duration_s: f64,
    throughput_rps: f64,
    success_rps: f64,
    latency_ms: &'a Percentiles,
    ttfb_ms: &'a Percentiles,
    connect_ms: &'a Percentiles,
    connections: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dns_ms: Option<&'a Percentiles>,
    status_codes: &'a BTreeMap<String, u64>,
    errors: &'a [ErrorSummary],
    bytes_sent: u64,
    bytes_received: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    messages: Option<&'a crest_analysis::summary::Messages>,
    #[serde(skip_serializing_if = "Option::is_none")]
    grpc: Option<&'a BTreeMap<String, u64>>,
    abandoned: u64,
    ended_by: EndReason,
    #[serde(skip_serializing_if = "Option::is_none")]
    target_rps: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    target_varies: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    arrivals: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target_mean_rps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    achieved_rps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dropped: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dropped_behind: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    queued: Option<&'a crest_analysis::summary::Queued>,
    /// What the open model did with arrivals at its cap, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    at_cap: Option<String>,
    /// The open model's schedule against what was sent, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    open_model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    send_lag_ms: Option<&'a Percentiles>,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_ms: Option<&'a Percentiles>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_by: Option<StopView<'a>>,
    thresholds: Vec<ThresholdView<'a>>,
    segments: Vec<Worded<'a, GroupSummary>>,
    names: &'a [GroupSummary],
    #[serde(skip_serializing_if = "Option::is_none")]
    recovery: Option<&'a Recovery>,
    unit: WorkUnit,
    #[serde(skip_serializing_if = "Option::is_none")]
    iterations: Option<&'a Iterations>,
    capacity: CapacityView<'a>,
    client_bound: Vec<String>,
    resources: Vec<ResourceView<'a>>,
    leaks: Vec<LeakView<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    users: Option<&'a crest_analysis::summary::UsersDone>,
    /// A distributed run's workers, each with its figures and verdict in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    workers: Vec<WorkerView<'a>>,
    /// What limits the service, with its figures and the sentence that says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bottleneck: Option<Said<'a, crest_analysis::bottleneck::Bottleneck>>,
    /// Why no bottleneck is named, when none is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bottleneck_reason: Option<String>,
    /// Watched processes that exited, were OOM-killed or restarted.
    pub(crate) events: Vec<Said<'a, crest_analysis::events::ProcessEvent>>,
    /// A `resources:` block for each watched process.
    pub(crate) sizing: Vec<SizingView<'a>>,
    /// Watched processes not sized, each with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) no_sizing: Vec<Said<'a, crest_analysis::sizing::NoSizing>>,
}

/// Typed figures with the sentence that says them.
#[derive(Debug, Serialize)]
pub(crate) struct Said<'a, T> {
    #[serde(flatten)]
    pub(crate) figures: &'a T,
    pub(crate) sentence: String,
}

/// A sizing with its basis in words and its `resources:` block as YAML.
#[derive(Debug, Serialize)]
pub(crate) struct SizingView<'a> {
    #[serde(flatten)]
    pub(crate) figures: &'a crest_analysis::sizing::Sizing,
    pub(crate) sentence: String,
    pub(crate) yaml: String,
}

/// One worker of a distributed run, as the per-worker table shows it.
#[derive(Debug, Serialize)]
pub struct WorkerView<'a> {
    #[serde(flatten)]
    figures: &'a WorkerFigures,
    /// Its drops in words (`-` in the closed model).
    dropped_shown: String,
    /// Its verdict in words.
    verdict_shown: String,
}

/// A worker with its text.
pub fn worker(w: &WorkerFigures) -> WorkerView<'_> {
    WorkerView {
        figures: w,
        dropped_shown: words::worker_drops(w),
        verdict_shown: words::worker_verdict(w),
    }
}

#[derive(Debug, Serialize)]
struct ThresholdView<'a> {
    threshold: &'a str,
    value: Option<f64>,
    shown: String,
    pass: bool,
}

/// The answers in the run's unit, and a capacity search's conclusions when the run was one.
#[derive(Debug, Serialize)]
struct CapacityView<'a> {
    unit: WorkUnit,
    optimal: Option<Worded<'a, Answer>>,
    /// Why there is no optimal point, when there is none.
    optimal_reason: Option<String>,
    limit: Option<Worded<'a, Answer>>,
    /// Why there is no limit, when there is none.
    limit_reason: Option<String>,
    /// Steps shown but not judged (cut short, empty, too little data).
    unjudged: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    search: Option<SearchView<'a>>,
}

/// A step's figures with the step in words: the figures keep its kind, which readers of the
/// JSON would otherwise have to put in words themselves.
#[derive(Debug, Serialize)]
struct Worded<'a, T> {
    name: String,
    #[serde(flatten)]
    figures: &'a T,
}

fn worded<T>(name: String, figures: &T) -> Worded<'_, T> {
    Worded { name, figures }
}

fn answer(a: &Answer) -> Worded<'_, Answer> {
    worded(words::step_kind(&a.kind), a)
}

/// A stop condition that ended the run, with its figures in words.
#[derive(Debug, Serialize)]
struct StopView<'a> {
    condition: &'a str,
    at_s: f64,
    detail: String,
}

#[derive(Debug, Serialize)]
struct SearchView<'a> {
    /// Successful units of work per second, in the capacity's unit.
    max_per_s: f64,
    /// Successful requests per second, whatever the unit.
    max_throughput_rps: f64,
    optimal: Option<&'a OptimalPoint>,
    limit: Option<String>,
    stopped_because: String,
    recommended: Option<String>,
    usl: Option<&'a Usl>,
}

#[derive(Debug, Serialize)]
struct ResourceView<'a> {
    key: &'a str,
    title: &'a str,
    unit: Unit,
    limit: Option<f64>,
    limit_shown: Option<String>,
    all: Option<StatsView>,
    steps: Vec<Option<StatsView>>,
}

#[derive(Debug, Serialize)]
struct StatsView {
    mean: f64,
    peak: f64,
    mean_shown: String,
    peak_shown: String,
}

#[derive(Debug, Serialize)]
struct LeakView<'a> {
    key: &'a str,
    title: &'a str,
    step: String,
    per_minute: f64,
    from: f64,
    to: f64,
    window_s: (f64, f64),
    limit: Option<f64>,
    minutes_to_limit: Option<f64>,
    /// For private memory: the process's resident memory over the same window.
    #[serde(skip_serializing_if = "Option::is_none")]
    resident: Option<&'a Growth>,
    sentence: String,
}

fn threshold(t: &ThresholdResult) -> ThresholdView<'_> {
    ThresholdView {
        threshold: &t.threshold,
        value: t.value,
        shown: words::measured(&t.measured),
        pass: t.pass,
    }
}

fn capacity<'a>(a: &'a Answers, search: Option<&'a CapacitySummary>) -> CapacityView<'a> {
    CapacityView {
        unit: a.unit,
        optimal: a.optimal.as_ref().map(answer),
        optimal_reason: match (&a.optimal, &a.no_optimal) {
            (Some(_), _) => None,
            (None, Some(n)) => Some(words::no_optimal(n, a.unit)),
            (None, None) => Some(words::no_answer(a)),
        },
        limit: a.limit.as_ref().map(answer),
        limit_reason: a.limit.is_none().then(|| words::no_answer(a)),
        unjudged: a.unjudged.iter().map(words::step_kind).collect(),
        search: search.map(search_view),
    }
}

fn search_view(c: &CapacitySummary) -> SearchView<'_> {
    SearchView {
        max_per_s: c.max_per_s,
        max_throughput_rps: c.max_throughput_rps,
        optimal: c.optimal.as_ref(),
        limit: c.limit.as_ref().map(|l| words::limit(l, c.unit)),
        stopped_because: words::search_ended(c.stopped_because.as_ref().map(FiguresOrWords::as_ref), c.unit),
        recommended: c.recommended.as_ref().map(words::recommended),
        usl: c.usl.as_ref(),
    }
}

fn stats(unit: Unit, s: &Stats) -> StatsView {
    StatsView {
        mean: s.mean,
        peak: s.peak,
        mean_shown: fmt::value(unit, s.mean),
        peak_shown: fmt::value(unit, s.peak),
    }
}

fn resource(r: &ResourceRow) -> ResourceView<'_> {
    ResourceView {
        key: &r.key,
        title: &r.title,
        unit: r.unit,
        limit: r.limit,
        limit_shown: r.limit.map(|l| fmt::value(r.unit, l)),
        all: r.all.as_ref().map(|s| stats(r.unit, s)),
        steps: r.steps.iter().map(|s| s.as_ref().map(|s| stats(r.unit, s))).collect(),
    }
}

fn leak(l: &Leak) -> LeakView<'_> {
    LeakView {
        key: &l.key,
        title: &l.title,
        step: words::step_kind(&l.step),
        per_minute: l.per_minute,
        from: l.from,
        to: l.to,
        window_s: l.window_s,
        limit: l.limit,
        minutes_to_limit: l.minutes_to_limit,
        resident: l.resident.as_ref(),
        sentence: words::leak(l),
    }
}

/// The summary with its text, as `--summary-json` writes it and the templates read it.
pub fn summary(s: &Summary) -> SummaryView<'_> {
    SummaryView {
        requests: s.requests,
        successes: s.successes,
        failures: s.failures,
        error_rate: s.error_rate,
        duration_s: s.duration_s,
        throughput_rps: s.throughput_rps,
        success_rps: s.success_rps,
        latency_ms: &s.latency_ms,
        ttfb_ms: &s.ttfb_ms,
        connect_ms: &s.connect_ms,
        connections: s.connections,
        dns_ms: s.dns_ms.as_ref(),
        status_codes: &s.status_codes,
        errors: &s.errors,
        bytes_sent: s.bytes_sent,
        bytes_received: s.bytes_received,
        messages: s.messages.as_ref(),
        grpc: s.grpc.as_ref(),
        abandoned: s.abandoned,
        ended_by: s.ended_by,
        target_rps: s.target_rps,
        target_varies: s.target_varies,
        arrivals: s.arrivals,
        target_mean_rps: s.target_mean_rps,
        achieved_rps: s.achieved_rps,
        dropped: s.dropped,
        dropped_behind: s.dropped_behind,
        queued: s.queued.as_ref(),
        at_cap: words::at_cap(s),
        open_model: words::open_model(s),
        send_lag_ms: s.send_lag_ms.as_ref(),
        service_ms: s.service_ms.as_ref(),
        stopped_by: s.stopped_by.as_ref().map(|st| StopView {
            condition: &st.condition,
            at_s: st.at_s,
            detail: words::stop_held(st),
        }),
        thresholds: s.thresholds.iter().map(threshold).collect(),
        segments: s.segments.iter().map(|g| worded(words::group_name(g), g)).collect(),
        names: &s.names,
        recovery: s.recovery.as_ref(),
        unit: s.unit,
        iterations: s.iterations.as_ref(),
        capacity: capacity(&s.answers, s.capacity.as_ref()),
        client_bound: s.client_bound.iter().map(words::client_limit).collect(),
        resources: s.resources.iter().map(resource).collect(),
        leaks: s.leaks.iter().map(leak).collect(),
        bottleneck: s.bottleneck.as_ref().map(|b| Said {
            figures: b,
            sentence: words::bottleneck(b),
        }),
        bottleneck_reason: s.bottleneck.is_none().then(|| words::no_bottleneck(s)),
        events: s
            .events
            .iter()
            .map(|e| Said {
                figures: e,
                sentence: words::process_event(e),
            })
            .collect(),
        sizing: s
            .sizing
            .iter()
            .map(|z| SizingView {
                figures: z,
                sentence: words::sizing_basis(z),
                yaml: words::resources_yaml(z),
            })
            .collect(),
        no_sizing: s
            .no_sizing
            .iter()
            .map(|n| Said {
                figures: n,
                sentence: words::no_sizing(n),
            })
            .collect(),
        users: s.users.as_ref(),
        workers: s.workers.iter().map(worker).collect(),
    }
}

/// The summary as `--summary-json` writes it.
pub fn summary_json(s: &Summary) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&summary(s))
}

/// A comparison as compare.json holds it and its templates read it: the runs in order, the
/// first being the baseline, and per row each run's value and change against the first.
#[derive(Debug, Serialize)]
pub struct ComparisonView<'a> {
    labels: &'a [String],
    notes: Vec<String>,
    rows: Vec<RowView>,
    /// Rows of words after the figures: each run's bottleneck and sizing.
    said: Vec<SaidRow>,
}

/// A row whose cells are words, one per run.
#[derive(Debug, Serialize)]
struct SaidRow {
    metric: String,
    cells: Vec<String>,
}

#[derive(Debug, Serialize)]
struct RowView {
    metric: String,
    unit: &'static str,
    values: Vec<Option<f64>>,
    /// Each value as the tables show it, with its unit.
    cells: Vec<Option<String>>,
    change_pct: Vec<Option<f64>>,
    /// Each change as the tables show it: `+93.7%`, an error rate's in points.
    changes: Vec<Option<String>>,
    verdict: Vec<Option<String>>,
    higher_is_better: bool,
}

/// A comparison with its text.
pub fn comparison(c: &Comparison) -> ComparisonView<'_> {
    ComparisonView {
        labels: &c.labels,
        notes: c.notes.iter().map(words::note).collect(),
        rows: c
            .rows
            .iter()
            .map(|r| {
                let (k, unit) = words::compared_unit(&r.metric);
                RowView {
                    metric: words::compared(&r.metric),
                    unit,
                    values: r.values.iter().map(|v| v.map(|v| v * k)).collect(),
                    cells: r
                        .values
                        .iter()
                        .zip(&r.beyond)
                        .enumerate()
                        .map(|(k, (v, beyond))| match (v, beyond) {
                            (Some(v), _) if load(&r.metric) => {
                                Some(words::compared_load(c.open.get(k).copied().unwrap_or(false), *v))
                            }
                            (Some(v), _) => Some(words::compared_cell(&r.metric, *v)),
                            (None, Some(l)) => Some(words::compared_beyond(l)),
                            (None, None) => None,
                        })
                        .collect(),
                    change_pct: r.change_pct.clone(),
                    changes: r
                        .change_pct
                        .iter()
                        .map(|c| words::compared_change(&r.metric, *c))
                        .collect(),
                    verdict: r.verdict.iter().map(|v| v.as_ref().map(words::verdict)).collect(),
                    higher_is_better: r.higher_is_better,
                }
            })
            .collect(),
        said: said_rows(c),
    }
}

/// Whether a row's values are loads, said in users or arrivals a second.
fn load(m: &crest_analysis::compare::Metric) -> bool {
    use crest_analysis::compare::Metric;
    matches!(m, Metric::OptimalLoad | Metric::SaturationLoad | Metric::BreakingLoad)
}

fn said_rows(c: &Comparison) -> Vec<SaidRow> {
    let mut out = Vec::new();
    if c.bottlenecks.iter().any(Option::is_some) {
        out.push(SaidRow {
            metric: "bottleneck".into(),
            cells: c
                .bottlenecks
                .iter()
                .map(|b| b.as_ref().map_or_else(|| "-".to_string(), words::bottleneck_cell))
                .collect(),
        });
    }
    for (subject, each) in &c.sizing {
        out.push(SaidRow {
            metric: format!("sizing of {subject} (requests / limits)"),
            cells: each
                .iter()
                .map(|z| z.as_ref().map_or_else(|| "-".to_string(), words::sizing_cell))
                .collect(),
        });
    }
    out
}
