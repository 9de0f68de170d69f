//! A run as the store's rows: every figure taken from the analysis the reports show (or counted
//! in the results), never worked out again here.

use crest_analysis::summary::Answer;
use crest_analysis::Analysis;
use crest_model::reason::WorkUnit;
use crest_model::results::Results;
use serde::Serialize;

/// A `crest.runs` row, but for its id and the results document.
#[derive(Debug)]
pub(crate) struct Run {
    pub started_at: String,
    pub label: Option<String>,
    pub commit: Option<String>,
    pub branch: Option<String>,
    pub dirty: Option<bool>,
    pub tags: String,
    pub unit: String,
    pub duration_s: f64,
    pub ended_by: String,
    pub throughput_per_s: f64,
    pub throughput_rps: f64,
    pub requests: i64,
    pub successes: i64,
    pub failures: i64,
    pub error_rate: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub optimal_per_s: Option<f64>,
    pub limit_per_s: Option<f64>,
    pub bottleneck: Option<String>,
    pub bottleneck_kind: Option<String>,
    pub thresholds_passed: Option<bool>,
    pub crest_version: String,
}

/// A `crest.steps` row.
#[derive(Debug)]
pub(crate) struct Step {
    pub step: i32,
    pub kind: String,
    pub users: Option<i64>,
    pub rate: Option<f64>,
    pub duration_s: Option<f64>,
    pub steady_s: Option<f64>,
    pub requests: i64,
    pub failures: i64,
    pub throughput_rps: f64,
    pub success_per_s: Option<f64>,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
}

/// A `crest.answers` row.
#[derive(Debug, Default)]
pub(crate) struct AnswerRow {
    pub answer: &'static str,
    pub name: String,
    pub passed: Option<bool>,
    pub value: Option<f64>,
    pub step: Option<i32>,
    pub users: Option<i64>,
    pub rate: Option<f64>,
    pub per_s: Option<f64>,
    pub error_rate: Option<f64>,
    pub p99_ms: Option<f64>,
    pub why: Option<String>,
}

/// The `crest.series` rows as columns, for one `unnest`.
#[derive(Debug, Default)]
pub(crate) struct Series {
    pub t_s: Vec<f64>,
    pub requests: Vec<i64>,
    pub successes: Vec<i64>,
    pub failures: Vec<i64>,
    pub p50_ms: Vec<f64>,
    pub p95_ms: Vec<f64>,
    pub p99_ms: Vec<f64>,
}

/// A value's serde name (`requests`, `duration`), or its JSON when it has fields.
fn word(v: &impl Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// A value as JSON text.
fn json(v: &impl Serialize) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Run {
    pub fn of(r: &Results, a: &Analysis) -> Run {
        let s = &a.summary;
        let p = r.config.provenance.as_ref();
        // The headline throughput in the run's unit, as the summary gives it and as the optimal
        // point and the limit count: successful iterations of the flows per second for a
        // scenario's flows, else successful requests (transactions) per second.
        let throughput_per_s = match (s.unit, &s.iterations) {
            (WorkUnit::Iterations, Some(i)) => i.per_s,
            _ => s.success_rps,
        };
        Run {
            started_at: r.started_at.clone(),
            label: p.and_then(|p| p.label.clone()),
            commit: p.and_then(|p| p.commit.clone()),
            branch: p.and_then(|p| p.branch.clone()),
            dirty: p.and_then(|p| p.dirty),
            tags: p.map_or_else(|| "{}".into(), |p| json(&p.tags)),
            unit: word(&s.unit),
            duration_s: s.duration_s,
            ended_by: word(&s.ended_by),
            throughput_per_s,
            throughput_rps: s.throughput_rps,
            requests: count(s.requests),
            successes: count(s.successes),
            failures: count(s.failures),
            error_rate: s.error_rate,
            p50_ms: s.latency_ms.p50,
            p95_ms: s.latency_ms.p95,
            p99_ms: s.latency_ms.p99,
            optimal_per_s: s.answers.optimal.as_ref().map(|o| o.per_s),
            limit_per_s: s.answers.limit.as_ref().map(|l| l.per_s),
            bottleneck: s.bottleneck.as_ref().map(|b| b.subject.clone()),
            bottleneck_kind: s.bottleneck.as_ref().map(|b| word(&b.kind)),
            thresholds_passed: (!s.thresholds.is_empty()).then(|| !s.thresholds_failed()),
            crest_version: r.crest_version.clone(),
        }
    }
}

/// The summary's steps, in requests (transactions), as the reports' step table shows them.
pub(crate) fn steps(a: &Analysis) -> Vec<Step> {
    a.summary
        .segments
        .iter()
        .enumerate()
        .map(|(i, g)| Step {
            step: i as i32,
            kind: g.kind.as_ref().map_or_else(|| "null".into(), json),
            users: g.users.map(count),
            rate: g.rate,
            duration_s: g.duration_s,
            steady_s: g.steady_s,
            requests: count(g.requests),
            failures: count(g.failures),
            throughput_rps: g.throughput_rps,
            success_per_s: g.success_per_s,
            p50_ms: g.latency_ms.p50,
            p95_ms: g.latency_ms.p95,
            p99_ms: g.latency_ms.p99,
        })
        .collect()
}

/// The optimal point and the limit, when the run found them, then each threshold.
pub(crate) fn answers(a: &Analysis) -> Vec<AnswerRow> {
    let s = &a.summary;
    let point = |answer: &'static str, x: &Answer| AnswerRow {
        answer,
        name: word(&x.kind),
        step: Some(x.segment as i32),
        users: x.users.map(count),
        rate: x.rate,
        value: Some(x.per_s),
        per_s: Some(x.per_s),
        error_rate: Some(x.error_rate),
        p99_ms: Some(x.latency_ms.p99),
        why: Some(x.why.to_string()),
        ..AnswerRow::default()
    };
    let mut out = Vec::new();
    out.extend(s.answers.optimal.as_ref().map(|x| point("optimal", x)));
    out.extend(s.answers.limit.as_ref().map(|x| point("limit", x)));
    out.extend(s.thresholds.iter().map(|t| AnswerRow {
        answer: "threshold",
        name: t.threshold.clone(),
        passed: Some(t.pass),
        value: t.value,
        ..AnswerRow::default()
    }));
    out
}

/// One row per interval: its counts from the results, its percentiles from the analysis'
/// series (one point per interval, in the same order).
pub(crate) fn series(r: &Results, a: &Analysis) -> Series {
    let mut out = Series::default();
    for (i, p) in r.intervals.iter().zip(&a.series) {
        out.t_s.push(i.t_s);
        out.requests.push(count(i.requests));
        out.successes.push(count(i.requests.saturating_sub(i.failures)));
        out.failures.push(count(i.failures));
        out.p50_ms.push(p.p50_ms);
        out.p95_ms.push(p.p95_ms);
        out.p99_ms.push(p.p99_ms);
    }
    out
}
