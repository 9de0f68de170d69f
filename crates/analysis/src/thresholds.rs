//! Thresholds (SLOs) checked at the end of a run: `p95 < 10s`, `p99{name=replay} < 15s`,
//! `error_rate < 1%`, `throughput > 100/s`.

use crate::units::{quantity, Quantity};
use crest_model::expr::{Agg, Expr, Metric, Monitored, Op, Threshold};
use crest_model::monitor::Unit;
use crest_model::results::Results;
use crest_model::HistError;
use serde::Serialize;

/// A threshold and how the run fared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThresholdResult {
    /// As written.
    pub threshold: String,
    /// The measured value in the metric's unit (ms, fraction, req/s, count); `None` when
    /// nothing was measured (no request of that name).
    pub value: Option<f64>,
    /// What was measured, with its unit.
    pub measured: Measured,
    /// Whether it held. Nothing measured counts as a failure.
    pub pass: bool,
}

/// What a threshold measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measured {
    /// Nothing to measure (no request of that name, no such series).
    Nothing,
    /// A figure of the requests.
    Figure(Quantity),
    /// The worst of the monitored series that matched, and which one it was.
    Series {
        /// Its value.
        quantity: Quantity,
        /// The series, `metric{label="value"}`.
        key: String,
    },
}

/// Evaluates thresholds over the whole run.
pub fn evaluate(r: &Results, thresholds: &[Threshold]) -> Result<Vec<ThresholdResult>, HistError> {
    let mut out = Vec::new();
    for t in thresholds {
        let e = t.expr();
        let measured = match &e.metric {
            Metric::Monitored(m) => {
                monitored(r, m, e.op).map_or(Measured::Nothing, |(v, unit, key)| Measured::Series {
                    quantity: Quantity::Monitored(unit, v),
                    key,
                })
            }
            _ => measure(r, e)?.map_or(Measured::Nothing, |v| Measured::Figure(quantity(&e.metric, v))),
        };
        let value = match &measured {
            Measured::Figure(q) | Measured::Series { quantity: q, .. } => Some(q.value()),
            Measured::Nothing => None,
        };
        let pass = value.is_some_and(|v| e.op.holds(v, t.bound()));
        out.push(ThresholdResult {
            threshold: e.text.clone(),
            value,
            measured,
            pass,
        });
    }
    Ok(out)
}

/// A monitored metric over the whole run: with an aggregation, that aggregate of each matching
/// series; without one, every sample must hold, so the worst sample counts. Of several matching
/// series the worst counts too. Returns the value, its unit and its series.
fn monitored(r: &Results, m: &Monitored, op: Op) -> Option<(f64, Unit, String)> {
    let lower_is_worse = matches!(op, Op::Gt | Op::Ge);
    let worse = |a: f64, b: f64| if lower_is_worse { a < b } else { a > b };
    let mut worst: Option<(f64, Unit, String)> = None;
    for s in r
        .monitor
        .as_ref()?
        .series
        .iter()
        .filter(|s| s.key.matches(&m.metric, &m.labels))
    {
        let values: Vec<f64> = s.points.iter().map(|p| p.1).collect();
        let agg = m.agg.unwrap_or(if lower_is_worse { Agg::Min } else { Agg::Max });
        let Some(v) = agg.apply(&values) else { continue };
        if worst.as_ref().is_none_or(|(w, _, _)| worse(v, *w)) {
            worst = Some((v, s.unit, s.key.to_string()));
        }
    }
    worst
}

fn measure(r: &Results, e: &Expr) -> Result<Option<f64>, HistError> {
    let name = match &e.name {
        Some(n) => match r.names.iter().position(|x| x == n) {
            Some(i) => Some(i as u32),
            None => return Ok(None),
        },
        None => None,
    };
    let mut latency = crest_model::hist::new_histogram();
    let (mut requests, mut failures) = (0u64, 0u64);
    // Without a name, a threshold is on the units of work (requests, transactions); a
    // statement inside a transaction is judged only when named.
    for s in r.stats.iter().filter(|s| name.map_or(r.counts(s), |n| s.name == n)) {
        requests += s.count;
        if !s.outcome.is_success() {
            failures += s.count;
        }
        let _ = latency.add(&s.latency.decode()?);
    }
    if requests == 0 {
        return Ok(None);
    }
    let ms = |us: u64| crest_model::hist::us_to_ms(us as f64);
    Ok(Some(match e.metric {
        Metric::Latency(q) => ms(latency.median_equivalent(latency.value_at_quantile(q / 100.0))),
        Metric::Mean => crest_model::hist::us_to_ms(latency.mean()),
        Metric::Max => ms(latency.max()),
        Metric::ErrorRate => failures as f64 / requests as f64,
        Metric::Throughput => {
            if r.active_s() > 0.0 {
                requests as f64 / r.active_s()
            } else {
                0.0
            }
        }
        Metric::Requests => requests as f64,
        Metric::Failures => failures as f64,
        Metric::Monitored(_) => return Ok(None),
    }))
}
