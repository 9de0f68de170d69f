//! What the Markdown and HTML reports are rendered from: the minijinja templates and plain views
//! of the analysis. The templates lay out text that [`crate::fmt`] wrote, so both formats say
//! the same; [`crate::markdown`] and [`crate::html`] render them.

use crate::chart::{chart, scatter, Chart};
use crate::fmt::{self, words};
use crate::json::{summary, SummaryView};
use crest_analysis::capacity::CapacityPoint;
use crest_analysis::failures::EachRequest;
use crest_analysis::figures::{StepLoad, WorkUnit};
use crest_analysis::Analysis;
use crest_model::results::{Environment, Results, ScenarioConfig};
use crest_model::Outcome;
use minijinja::{AutoEscape, Environment as Templates};
use serde::Serialize;

pub(crate) fn templates() -> Result<Templates<'static>, minijinja::Error> {
    let mut env = Templates::new();
    env.set_auto_escape_callback(|name| {
        if name.ends_with(".html.j2") || name.ends_with(".svg.j2") {
            AutoEscape::Html
        } else {
            AutoEscape::None
        }
    });
    env.add_filter("ms", |v: f64| fmt::ms(v));
    env.add_filter("num", |v: f64| fmt::num(v));
    env.add_filter("pct", |v: f64| fmt::pct(v));
    env.add_filter("int", |v: f64| fmt::int(v.max(0.0) as u64));
    env.add_filter("bytes", |v: f64| fmt::bytes(v.max(0.0) as u64));
    env.add_filter("md", |v: String| fmt::md_text(&v));
    env.add_template("report.md.j2", include_str!("../templates/report.md.j2"))?;
    env.add_template("report.html.j2", include_str!("../templates/report.html.j2"))?;
    env.add_template("chart.svg.j2", include_str!("../templates/chart.svg.j2"))?;
    env.add_template("compare.md.j2", include_str!("../templates/compare.md.j2"))?;
    env.add_template("compare.html.j2", include_str!("../templates/compare.html.j2"))?;
    env.add_template("study.md.j2", include_str!("../templates/study.md.j2"))?;
    env.add_template("summary.md.j2", include_str!("../templates/summary.md.j2"))?;
    env.add_template("study.html.j2", include_str!("../templates/study.html.j2"))?;
    env.add_template("history.html.j2", include_str!("../templates/history.html.j2"))?;
    Ok(env)
}

/// What the run report templates see.
#[derive(Serialize)]
pub(crate) struct RunView<'a> {
    title: String,
    started_at: &'a str,
    duration_s: f64,
    /// The timeline charts and failure times follow, when longer than the duration.
    timeline: Option<String>,
    ended_by: &'static str,
    find: Option<FindView<'a>>,
    load: String,
    command_line: String,
    scenario: Option<&'a ScenarioConfig>,
    environment: Option<&'a Environment>,
    crest_version: &'a str,
    a: &'a Analysis,
    /// The rate of the run's unit of work, as tables head it: `req/s`, `iterations/s`.
    unit_rate: &'static str,
    /// The summary with its text.
    summary: SummaryView<'a>,
    /// The findings in words.
    findings: Vec<String>,
    /// Each step's load in words, in step order.
    step_loads: Vec<String>,
    /// Each step of the run in words, by its index in the run.
    step_names: Vec<String>,
    /// What the per-step table counts (`requests`, or `transactions` for SQL), and its rate.
    counted: &'static str,
    counted_rate: &'static str,
    /// After each step's name, why it is not judged, when it is not (` (not judged: ...)`).
    step_notes: Vec<String>,
    /// The same for the steps in iterations.
    iteration_step_notes: Vec<String>,
    capacity: CapacityView,
    failures: Vec<FailureView<'a>>,
    /// Each failed request, when there were few.
    failed: &'a [crest_analysis::failures::FailedRequest],
    charts: Vec<Chart>,
    /// Each request's latency against its start, for a small run.
    each_request: Option<Chart>,
    /// Why there is no such chart, when the run had requests.
    each_request_absent: Option<String>,
    /// What the monitor watched, with its notes.
    sources: Vec<SourceView<'a>>,
    resource_charts: Vec<Chart>,
}

/// A watched source with its notes in words.
#[derive(Serialize)]
struct SourceView<'a> {
    kind: &'a str,
    label: &'a str,
    notes: Vec<String>,
}

/// A capacity search's service level and probes, with each probe's verdict in words.
#[derive(Serialize)]
struct FindView<'a> {
    slo: &'a [String],
    probes: Vec<ProbeView>,
}

/// One probe of a capacity search.
#[derive(Serialize)]
struct ProbeView {
    level: f64,
    verdict: String,
}

/// A capacity point with its text.
#[derive(Serialize)]
struct PointView {
    load: String,
    /// Successful units per second, with its uncertainty in words.
    per_s: f64,
    per_s_shown: String,
    p95_ms: f64,
    why: String,
}

/// What the steps say about capacity, with its text.
#[derive(Serialize)]
struct CapacityView {
    levels: usize,
    no_optimal: Option<String>,
    optimal: Option<PointView>,
    saturation: Option<PointView>,
    breaking: Option<PointView>,
}

/// A failure class with its cluster in words.
#[derive(Serialize)]
struct FailureView<'a> {
    outcome: &'a str,
    description: &'a str,
    count: u64,
    example: &'a str,
    first_at_s: Option<f64>,
    first_segment: Option<String>,
    duration_ms: &'a crest_analysis::figures::Percentiles,
    cluster: Option<String>,
}

fn point(p: &CapacityPoint) -> PointView {
    PointView {
        load: words::step(&p.load),
        per_s: p.per_s,
        per_s_shown: words::per_s_pm(p.per_s, p.per_s_se, p.unit),
        p95_ms: p.p95_ms,
        why: words::point_reason(&p.why, p.unit),
    }
}

/// What the per-step tables of requests count in a run of `unit`.
fn counted_unit(unit: WorkUnit) -> WorkUnit {
    match unit {
        WorkUnit::Iterations => WorkUnit::Requests,
        u => u,
    }
}

pub(crate) fn view<'a>(r: &'a Results, a: &'a Analysis) -> RunView<'a> {
    let c = &r.config;
    let title = words::run_target(r);
    let capacity = &a.capacity;
    RunView {
        title,
        started_at: &r.started_at,
        // The time load was sent, as the summary has it: a joined run's timeline is longer.
        duration_s: a.summary.duration_s,
        timeline: words::timeline(r),
        ended_by: words::ended(r),
        find: r.find.as_ref().map(|f| FindView {
            slo: &f.slo,
            probes: f
                .probes
                .iter()
                .map(|p| ProbeView {
                    level: p.level,
                    verdict: words::probe_record(p, f.unit),
                })
                .collect(),
        }),
        load: words::run_load(r),
        command_line: c.command_line.join(" "),
        scenario: c.scenario.as_ref(),
        environment: r.environment.as_ref(),
        crest_version: &r.crest_version,
        a,
        summary: summary(&a.summary),
        findings: a.findings.iter().map(words::finding).collect(),
        unit_rate: words::unit_rate(a.unit),
        counted: words::counted(a.unit),
        counted_rate: words::counted_rate(a.unit),
        step_names: r.segments.iter().map(|g| words::step_kind(&g.kind)).collect(),
        step_notes: a
            .segments
            .iter()
            // These steps count requests (transactions for SQL), whatever the run's unit.
            .map(|s| words::unjudged_note(&s.judged, counted_unit(a.unit)))
            .collect(),
        iteration_step_notes: a
            .iteration_segments
            .iter()
            .map(|s| words::unjudged_note(&s.judged, WorkUnit::Iterations))
            .collect(),
        step_loads: a
            .segments
            .iter()
            .map(|s| match s.load() {
                // A run without steps held the run's one load throughout; one changed by hand
                // later records its highest load in the configuration, not this step's.
                StepLoad::Named(crest_model::step::StepKind::Run) if r.segments.len() == 1 => {
                    match (r.config.model, r.config.rate) {
                        (crest_model::results::LoadKind::Open, Some(rate)) => words::rate(rate),
                        (crest_model::results::LoadKind::Closed, _) => words::count(r.config.concurrency, "user"),
                        _ => "-".to_string(),
                    }
                }
                // The step's name is in the column before.
                StepLoad::Named(_) => "-".to_string(),
                l => words::step(&l),
            })
            .collect(),
        capacity: CapacityView {
            levels: capacity.levels,
            no_optimal: capacity
                .no_optimal
                .as_ref()
                .map(|n| words::no_optimal(n, capacity.unit)),
            optimal: capacity.optimal.as_ref().map(point),
            saturation: capacity.saturation.as_ref().map(point),
            breaking: capacity.breaking.as_ref().map(point),
        },
        failures: a
            .failures
            .iter()
            .map(|f| FailureView {
                outcome: &f.outcome,
                description: &f.description,
                count: f.count,
                example: &f.example,
                first_at_s: f.first_at_s,
                first_segment: f.first_segment.as_ref().map(words::step_kind),
                duration_ms: &f.duration_ms,
                cluster: f.cluster.as_ref().map(words::cluster),
            })
            .collect(),
        failed: &a.failed,
        charts: marked(charts(r, a), a),
        each_request: each_request(r, a),
        each_request_absent: words::each_request_absent(&a.each_request),
        sources: r
            .monitor
            .iter()
            .flat_map(|m| m.sources.iter())
            .map(|s| SourceView {
                kind: &s.kind,
                label: &s.label,
                notes: s.notes.iter().map(words::monitor_note).collect(),
            })
            .collect(),
        resource_charts: marked(resource_charts(r), a),
    }
}

/// Charts over time with the moments watched processes died or came back marked on them.
fn marked(mut charts: Vec<Chart>, a: &Analysis) -> Vec<Chart> {
    let events: Vec<(f64, String)> = a
        .summary
        .events
        .iter()
        .map(|e| (e.at_s, words::event_label(e)))
        .collect();
    for c in charts.iter_mut().filter(|c| c.id != "latency-throughput") {
        c.mark(&events);
    }
    charts
}

/// The report's charts: throughput, latency percentiles, load and errors over time, and latency
/// against throughput across steps.
pub fn charts(r: &Results, a: &Analysis) -> Vec<Chart> {
    let pts =
        |f: fn(&crest_analysis::figures::Point) -> f64| a.series.iter().map(|p| (p.t_s, f(p))).collect::<Vec<_>>();
    let load_name = if r.config.rate.is_some() { "arrivals/s" } else { "users" };
    let seconds = words::time_axis(r);
    let mut out = vec![
        chart(
            "throughput",
            "Throughput over time",
            seconds,
            "requests/s",
            &[("requests/s", pts(|p| p.rps))],
            &[],
        ),
        chart(
            "latency",
            "Latency percentiles over time",
            seconds,
            "ms",
            &[
                ("p50", pts(|p| p.p50_ms)),
                ("p95", pts(|p| p.p95_ms)),
                ("p99", pts(|p| p.p99_ms)),
            ],
            &[],
        ),
        chart(
            "load",
            &format!("Load over time ({load_name})"),
            seconds,
            load_name,
            &[(load_name, pts(|p| p.load))],
            &[],
        ),
        chart(
            "errors",
            "Errors over time",
            seconds,
            "failures/s",
            &[("failures/s", pts(|p| p.errors_per_s))],
            &[],
        ),
    ];
    // Successful work only, as every answer: a step answering instant 503s would otherwise sit
    // far right and low, as if the service had done more, faster.
    let steps: Vec<_> = a.segments.iter().filter(|s| s.requests > s.failures).collect();
    let curve: Vec<(f64, f64)> = steps
        .iter()
        .map(|s| (s.success_rps, s.success_latency_ms.p95))
        .collect();
    let dots: Vec<(f64, f64, String)> = steps
        .iter()
        .map(|s| (s.success_rps, s.success_latency_ms.p95, words::step_kind(&s.kind)))
        .collect();
    out.push(chart(
        "latency-throughput",
        "Latency against throughput, per step (steady state, successful requests)",
        "successful requests/s",
        "p95 ms",
        &[("p95", curve)],
        &dots,
    ));
    out
}

/// Failure outcomes with a colour of their own in the scatter; the rest share one series.
const SCATTER_FAILURE_SERIES: usize = 3;

/// Each request's latency against when it was meant to start: successes as dots, failures as
/// crosses with a series per outcome (the commonest few), so a stall, a burst of timeouts or
/// one slow user stands out as it would in JMeter's or Gatling's scatter.
pub fn each_request(r: &Results, a: &Analysis) -> Option<Chart> {
    let EachRequest::Plotted { points } = &a.each_request else {
        return None;
    };
    let mut by_outcome: Vec<(Outcome, Vec<(f64, f64)>)> = Vec::new();
    for p in points {
        match by_outcome.iter_mut().find(|(o, _)| *o == p.outcome) {
            Some((_, v)) => v.push((p.start_s, p.latency_ms)),
            None => by_outcome.push((p.outcome, vec![(p.start_s, p.latency_ms)])),
        }
    }
    let ok = by_outcome
        .iter()
        .position(|(o, _)| o.is_success())
        .map(|i| by_outcome.remove(i));
    by_outcome.sort_by_key(|(o, v)| (std::cmp::Reverse(v.len()), *o));
    let mut series = Vec::new();
    if let Some((_, v)) = ok {
        series.push((format!("success ({})", fmt::int(v.len() as u64)), false, v));
    }
    let rest: Vec<(f64, f64)> = by_outcome
        .iter()
        .skip(SCATTER_FAILURE_SERIES)
        .flat_map(|(_, v)| v.iter().copied())
        .collect();
    for (o, v) in by_outcome.into_iter().take(SCATTER_FAILURE_SERIES) {
        series.push((format!("{} ({})", o.describe(), fmt::int(v.len() as u64)), true, v));
    }
    if !rest.is_empty() {
        series.push((format!("other failures ({})", fmt::int(rest.len() as u64)), true, rest));
    }
    Some(scatter(
        "each-request",
        "Each request: latency against its start",
        &format!("{} (intended start)", words::time_axis(r)),
        "ms",
        &series,
    ))
}

/// Most resource charts in one report; the built-in series come first, then Prometheus metrics.
const MAX_RESOURCE_CHARTS: usize = 24;

/// One chart per monitored series, in the unit the tables use (MiB rather than bytes). A known
/// limit is drawn when the values come within half of it, so that a leak's distance to its limit
/// shows without flattening every other chart.
pub fn resource_charts(r: &Results) -> Vec<Chart> {
    use crest_model::monitor::Unit;
    let Some(m) = &r.monitor else { return Vec::new() };
    let mut series: Vec<_> = m.series.iter().filter(|s| s.points.len() >= 2).collect();
    // Stable: keeps each group in the order it was recorded.
    series.sort_by_key(|s| m.sources.get(s.source as usize).is_some_and(|x| x.kind == "prometheus"));
    series
        .into_iter()
        .take(MAX_RESOURCE_CHARTS)
        .enumerate()
        .map(|(i, s)| {
            let (k, unit) = match fmt::scale(s.unit) {
                // An axis needs a name where a value in a table needs none.
                (k, "") => (k, if s.unit == Unit::Count { "count" } else { "value" }),
                (k, "/s") => (k, "per second"),
                scaled => scaled,
            };
            let points: Vec<(f64, f64)> = s.points.iter().map(|(t, v)| (*t, v * k)).collect();
            let peak = points.iter().map(|p| p.1).fold(0.0, f64::max);
            let mut lines = vec![(unit, points)];
            if let Some(limit) = s.limit.map(|l| l * k).filter(|l| peak >= l / 2.0) {
                let (t0, t1) = (s.points[0].0, s.points[s.points.len() - 1].0);
                lines.push(("limit", vec![(t0, limit), (t1, limit)]));
            }
            chart(
                &format!("resource-{i}"),
                &s.title,
                words::time_axis(r),
                unit,
                &lines,
                &[],
            )
        })
        .collect()
}
