//! The expression language of thresholds and stop conditions, parsed once.
//!
//! `p95 < 10s`, `p99{name=replay} < 15s`, `error_rate < 1%`, `throughput > 100/s`,
//! `p95 > 3x first`, and on monitored series `load_average > 3`,
//! `max(process_resident_memory_bytes{process=api}) < 512MiB`, `rate(rows_total) > 2000`.
//! Front ends parse the text into these values when they build a plan; the run and the analysis
//! only ever see the typed values. In documents they are written as the text they came from, so
//! results.json reads as it always has.

use schemars::gen::SchemaGenerator;
use schemars::schema::Schema;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::time::Duration;

/// What an expression measures.
#[derive(Clone, Debug, PartialEq)]
pub enum Metric {
    /// A latency percentile (total time), e.g. 95 or 99.9.
    Latency(f64),
    /// Mean latency.
    Mean,
    /// Largest latency.
    Max,
    /// Failures / requests.
    ErrorRate,
    /// Requests per second.
    Throughput,
    /// Number of requests.
    Requests,
    /// Number of failures.
    Failures,
    /// A monitored series (a process, the host, a Prometheus metric, PostgreSQL).
    Monitored(Monitored),
}

impl Metric {
    /// The metric as the expression language writes it: `p95`, `mean`, `error_rate`; a
    /// monitored series by its metric name.
    pub fn text(&self) -> String {
        match self {
            Metric::Latency(q) => format!("p{q}"),
            Metric::Mean => "mean".into(),
            Metric::Max => "max".into(),
            Metric::ErrorRate => "error_rate".into(),
            Metric::Throughput => "throughput".into(),
            Metric::Requests => "requests".into(),
            Metric::Failures => "failures".into(),
            Metric::Monitored(m) => m.metric.clone(),
        }
    }

    /// Reads back what [`Metric::text`] wrote; any other name is a monitored metric's.
    pub fn from_text(text: &str) -> Metric {
        parse_metric(text).unwrap_or_else(|| {
            Metric::Monitored(Monitored {
                metric: text.to_string(),
                labels: Vec::new(),
                agg: None,
            })
        })
    }
}

/// A reference to monitored series.
#[derive(Clone, Debug, PartialEq)]
pub struct Monitored {
    /// The metric, e.g. `load_average` or `rate(rows_total)`.
    pub metric: String,
    /// Labels a series must have, e.g. `process=api`.
    pub labels: Vec<(String, String)>,
    /// How samples are combined; `None` means each sample on its own (stop conditions look at
    /// the latest, thresholds at every one).
    pub agg: Option<Agg>,
}

/// How the samples of a monitored series are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agg {
    /// The largest.
    Max,
    /// The smallest.
    Min,
    /// The mean.
    Mean,
    /// The latest.
    Last,
}

impl Agg {
    /// Combines `values`; `None` when there are none.
    pub fn apply(self, values: &[f64]) -> Option<f64> {
        if values.is_empty() {
            return None;
        }
        Some(match self {
            Agg::Max => values.iter().copied().fold(f64::MIN, f64::max),
            Agg::Min => values.iter().copied().fold(f64::MAX, f64::min),
            Agg::Mean => values.iter().sum::<f64>() / values.len() as f64,
            Agg::Last => values[values.len() - 1],
        })
    }
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Op {
    /// Applies the comparison.
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }
}

/// The right-hand side.
#[derive(Clone, Debug, PartialEq)]
pub enum Bound {
    /// An absolute value in the metric's unit: ms for latency, a fraction for error rate,
    /// requests per second for throughput, a count otherwise.
    Value(f64),
    /// A multiple of the same metric in the first step (stop conditions only: judged when each
    /// later step ends, on steady states, above an absolute floor).
    TimesFirst(f64),
}

/// A parsed expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// The text as written.
    pub text: String,
    /// What is measured.
    pub metric: Metric,
    /// Only requests with this name, when given.
    pub name: Option<String>,
    /// The comparison.
    pub op: Op,
    /// Against what.
    pub bound: Bound,
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

const METRICS: &str = "p50, p90, p95, p99, p99.9 (any pNN), mean, max, error_rate, throughput, requests, failures";

/// Why an expression does not parse: the expression as written and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{text:?}: {problem}")]
pub struct ExprError {
    /// The expression, trimmed.
    pub text: String,
    /// What is wrong.
    pub problem: ExprProblem,
}

/// What is wrong with an expression; each says what is allowed instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExprProblem {
    /// No comparison operator.
    #[error("expected `metric < value` (or <=, >, >=)")]
    NoComparison,
    /// `x first` on a monitored metric.
    #[error("`x first` compares request metrics; give a value")]
    RelativeMonitored,
    /// A `{` without its `}`.
    #[error("a `{{` is not closed")]
    Unclosed,
    /// A request filter that is not `k=v`.
    #[error("write the filter as {{name=...}}")]
    BadFilter,
    /// A request filter on something other than the name.
    #[error("only {{name=...}} filters are supported")]
    NotNameFilter,
    /// A monitored label that is not `k=v`.
    #[error("write labels as {{label=value}}, not {0:?}")]
    BadLabel(String),
    /// Not a request metric, and not a monitored metric name either.
    #[error("unknown metric {0:?}; use {METRICS}")]
    UnknownMetric(String),
    /// A monitored metric name with characters no metric name has.
    #[error("{0:?} is not a metric name")]
    NotMetricName(String),
    /// `max(...)` or `rate(...)` around a request metric.
    #[error("{0} is a request metric; max(...), rate(...) are for monitored metrics")]
    AggregatedRequestMetric(String),
    /// A multiple not written `3x first`.
    #[error("{0:?}: write a multiple as `3x first`")]
    BadMultiple(String),
    /// A latency bound that is not a duration.
    #[error("{0:?} is not a duration; write e.g. 250ms, 10s")]
    NotDuration(String),
    /// An error rate bound `N%` whose number is not one.
    #[error("{0:?} is not a percentage")]
    NotPercentage(String),
    /// An error rate bound that is neither a percentage nor a fraction.
    #[error("{0:?} is not a rate; write e.g. 1%")]
    NotRate(String),
    /// A throughput bound that is not a number per second.
    #[error("{0:?} is not a throughput; write e.g. 100/s")]
    NotThroughput(String),
    /// A count bound that is not a number.
    #[error("{0:?} is not a number")]
    NotNumber(String),
    /// A monitored bound that is not a number, size or duration.
    #[error("{0:?} is not a value; write a number, optionally with %, a size (512MiB) or a duration (250ms)")]
    NotValue(String),
}

impl Expr {
    /// Parses an expression; the error says what is wrong and what is allowed.
    pub fn parse(text: &str) -> Result<Expr, ExprError> {
        let t = text.trim();
        let fail = |problem| ExprError {
            text: t.to_string(),
            problem,
        };
        let (lhs, op, rhs) = split_op(t).ok_or_else(|| fail(ExprProblem::NoComparison))?;
        if let Some(m) = monitored(lhs).map_err(fail)? {
            if rhs.trim().ends_with("first") {
                return Err(fail(ExprProblem::RelativeMonitored));
            }
            let v = parse_number(rhs).map_err(fail)?;
            return Ok(Expr {
                text: t.to_string(),
                metric: Metric::Monitored(m),
                name: None,
                op,
                bound: Bound::Value(v),
            });
        }
        let (metric_text, name) = match lhs.split_once('{') {
            Some((m, rest)) => {
                let inner = rest.strip_suffix('}').ok_or_else(|| fail(ExprProblem::Unclosed))?;
                let (k, v) = inner.split_once('=').ok_or_else(|| fail(ExprProblem::BadFilter))?;
                if k.trim() != "name" {
                    return Err(fail(ExprProblem::NotNameFilter));
                }
                (m.trim(), Some(v.trim().trim_matches('"').to_string()))
            }
            None => (lhs, None),
        };
        let metric =
            parse_metric(metric_text).ok_or_else(|| fail(ExprProblem::UnknownMetric(metric_text.to_string())))?;
        let bound = parse_bound(&metric, rhs).map_err(fail)?;
        Ok(Expr {
            text: t.to_string(),
            metric,
            name,
            op,
            bound,
        })
    }

    /// The monitored series it reads, when it reads one.
    pub fn monitored(&self) -> Option<&Monitored> {
        match &self.metric {
            Metric::Monitored(m) => Some(m),
            _ => None,
        }
    }
}

/// A monitored metric, when `lhs` is not one of the request metrics: `name`, `name{k=v,...}`,
/// `rate(name{...})`, each optionally inside `max(...)`, `min(...)`, `mean(...)` or `last(...)`.
fn monitored(lhs: &str) -> Result<Option<Monitored>, ExprProblem> {
    let lhs = lhs.trim();
    let (agg, inner) = match lhs.split_once('(') {
        Some((f, rest)) if rest.ends_with(')') => match f.trim() {
            "max" => (Some(Agg::Max), &rest[..rest.len() - 1]),
            "min" => (Some(Agg::Min), &rest[..rest.len() - 1]),
            "mean" | "avg" => (Some(Agg::Mean), &rest[..rest.len() - 1]),
            "last" => (Some(Agg::Last), &rest[..rest.len() - 1]),
            _ => (None, lhs),
        },
        _ => (None, lhs),
    };
    let inner = inner.trim();
    let (rate, body) = match inner.strip_prefix("rate(").and_then(|r| r.strip_suffix(')')) {
        Some(b) => (true, b.trim()),
        None => (false, inner),
    };
    let (name, labels) = match body.split_once('{') {
        Some((n, rest)) => {
            let inner = rest.strip_suffix('}').ok_or(ExprProblem::Unclosed)?;
            let mut labels = Vec::new();
            for pair in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (k, v) = pair
                    .split_once('=')
                    .ok_or_else(|| ExprProblem::BadLabel(pair.to_string()))?;
                labels.push((k.trim().to_string(), v.trim().trim_matches('"').to_string()));
            }
            (n.trim(), labels)
        }
        None => (body, Vec::new()),
    };
    if agg.is_none() && !rate && parse_metric(name).is_some() {
        return Ok(None);
    }
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    if !valid {
        return Err(ExprProblem::NotMetricName(name.to_string()));
    }
    if parse_metric(name).is_some() {
        return Err(ExprProblem::AggregatedRequestMetric(name.to_string()));
    }
    Ok(Some(Monitored {
        metric: if rate {
            format!("rate({name})")
        } else {
            name.to_string()
        },
        labels,
        agg,
    }))
}

/// A plain number with an optional unit: `3`, `80%`, `512MiB`, `1.5GB`, `250ms` (as seconds),
/// `100/s`.
fn parse_number(rhs: &str) -> Result<f64, ExprProblem> {
    let r = rhs.trim();
    let r = r.strip_suffix("/s").unwrap_or(r).trim();
    if let Ok(v) = r.trim_end_matches('%').trim().parse::<f64>() {
        return Ok(v);
    }
    const SIZES: [(&str, f64); 10] = [
        ("KiB", 1024.0),
        ("MiB", 1048576.0),
        ("GiB", 1073741824.0),
        ("TiB", 1099511627776.0),
        ("KB", 1e3),
        ("MB", 1e6),
        ("GB", 1e9),
        ("TB", 1e12),
        ("kB", 1e3),
        ("B", 1.0),
    ];
    for (suffix, k) in SIZES {
        if let Some(n) = r.strip_suffix(suffix) {
            if let Ok(v) = n.trim().parse::<f64>() {
                return Ok(v * k);
            }
        }
    }
    if let Ok(d) = humantime::parse_duration(r) {
        return Ok(d.as_secs_f64());
    }
    Err(ExprProblem::NotValue(r.to_string()))
}

fn split_op(t: &str) -> Option<(&str, Op, &str)> {
    for (sym, op) in [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)] {
        if let Some(i) = t.find(sym) {
            return Some((t[..i].trim(), op, t[i + sym.len()..].trim()));
        }
    }
    None
}

fn parse_metric(m: &str) -> Option<Metric> {
    Some(match m {
        "mean" | "avg" => Metric::Mean,
        "max" => Metric::Max,
        "error_rate" | "errors" => Metric::ErrorRate,
        "throughput" | "rps" => Metric::Throughput,
        "requests" => Metric::Requests,
        "failures" => Metric::Failures,
        // p999 means 99.9 and p9999 99.99, as in common usage.
        "p999" => Metric::Latency(99.9),
        "p9999" => Metric::Latency(99.99),
        p if p.starts_with('p') => {
            let v: f64 = p[1..].parse().ok()?;
            if !(0.0..=100.0).contains(&v) {
                return None;
            }
            Metric::Latency(v)
        }
        _ => return None,
    })
}

fn parse_bound(metric: &Metric, rhs: &str) -> Result<Bound, ExprProblem> {
    let rhs = rhs.trim();
    let owned = || rhs.to_string();
    if let Some(f) = rhs.strip_suffix("first").map(str::trim) {
        let k = f.trim_end_matches(['x', '*']).trim();
        let k: f64 = k.parse().map_err(|_| ExprProblem::BadMultiple(owned()))?;
        return Ok(Bound::TimesFirst(k));
    }
    let v = match metric {
        Metric::Latency(_) | Metric::Mean | Metric::Max => {
            let d: Duration = humantime::parse_duration(rhs).map_err(|_| ExprProblem::NotDuration(owned()))?;
            d.as_secs_f64() * 1000.0
        }
        Metric::ErrorRate => match rhs.strip_suffix('%') {
            Some(p) => {
                p.trim()
                    .parse::<f64>()
                    .map_err(|_| ExprProblem::NotPercentage(owned()))?
                    / 100.0
            }
            None => rhs.parse::<f64>().map_err(|_| ExprProblem::NotRate(owned()))?,
        },
        Metric::Throughput => rhs
            .trim_end_matches("/s")
            .trim()
            .parse::<f64>()
            .map_err(|_| ExprProblem::NotThroughput(owned()))?,
        Metric::Requests | Metric::Failures => rhs.parse::<f64>().map_err(|_| ExprProblem::NotNumber(owned()))?,
        Metric::Monitored(_) => parse_number(rhs)?,
    };
    Ok(Bound::Value(v))
}

/// A threshold checked at the end of a run: an expression against a fixed value.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    expr: Expr,
    bound: f64,
}

/// Why a threshold is not usable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ThresholdError {
    /// The expression does not parse.
    #[error(transparent)]
    Expr(#[from] ExprError),
    /// `x first` has no meaning over a whole run.
    #[error("{0:?}: thresholds compare with fixed values; `x first` is for stop conditions")]
    Relative(String),
}

impl Threshold {
    /// Parses a threshold.
    pub fn parse(text: &str) -> Result<Threshold, ThresholdError> {
        let expr = Expr::parse(text)?;
        match expr.bound {
            Bound::Value(bound) => Ok(Threshold { expr, bound }),
            Bound::TimesFirst(_) => Err(ThresholdError::Relative(expr.text)),
        }
    }

    /// The expression.
    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// The value it compares with, in the metric's unit.
    pub fn bound(&self) -> f64 {
        self.bound
    }

    /// As written.
    pub fn text(&self) -> &str {
        &self.expr.text
    }
}

/// A condition checked while the load runs that ends the run.
#[derive(Clone, Debug, PartialEq)]
pub enum StopCondition {
    /// A metric over the last seconds against a bound; or, for `Nx first`, the steady state of
    /// a step that ended against the first step's.
    Expr(Expr),
    /// A step's steady throughput is less than 5% above the previous step's.
    ThroughputStalls,
    /// A step's steady throughput is more than 5% below the previous step's.
    ThroughputFalls,
}

/// Why a stop condition is not usable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StopConditionError {
    /// Neither an expression nor one of the named rules.
    #[error("{0}; or use throughput_stalls, throughput_falls")]
    Expr(ExprError),
    /// A stop condition on requests of one name.
    #[error("{0:?}: stop conditions apply to all requests; drop the {{name=...}}")]
    Named(String),
}

impl StopCondition {
    /// Parses `error_rate > 5%`, `p95 > 3x first`, `throughput_stalls`, `throughput_falls`.
    pub fn parse(text: &str) -> Result<Self, StopConditionError> {
        match text.trim() {
            "throughput_stalls" => Ok(StopCondition::ThroughputStalls),
            "throughput_falls" => Ok(StopCondition::ThroughputFalls),
            other => {
                let e = Expr::parse(other).map_err(StopConditionError::Expr)?;
                if e.name.is_some() {
                    return Err(StopConditionError::Named(other.to_string()));
                }
                Ok(StopCondition::Expr(e))
            }
        }
    }

    /// The monitored series it reads, when it reads one.
    pub fn monitored(&self) -> Option<&Monitored> {
        match self {
            StopCondition::Expr(e) => e.monitored(),
            _ => None,
        }
    }

    /// The condition as written.
    pub fn text(&self) -> &str {
        match self {
            StopCondition::Expr(e) => &e.text,
            StopCondition::ThroughputStalls => "throughput_stalls",
            StopCondition::ThroughputFalls => "throughput_falls",
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl fmt::Display for StopCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

/// Thresholds and stop conditions are written in documents as their text, and read back by
/// parsing it, so the documents read as they did when they were strings.
macro_rules! as_text {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.text())
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                <$t>::parse(&text).map_err(serde::de::Error::custom)
            }
        }

        impl JsonSchema for $t {
            fn is_referenceable() -> bool {
                false
            }
            fn schema_name() -> String {
                String::schema_name()
            }
            fn json_schema(gen: &mut SchemaGenerator) -> Schema {
                String::json_schema(gen)
            }
        }
    };
}

as_text!(Threshold);
as_text!(StopCondition);

#[cfg(test)]
mod tests {
    use super::*;

    /// Documents keep a metric as the expression language writes it, and read it back.
    #[test]
    fn a_metric_reads_back_as_written() {
        for text in [
            "p95",
            "p99.9",
            "mean",
            "max",
            "error_rate",
            "throughput",
            "requests",
            "failures",
        ] {
            let m = Metric::from_text(text);
            assert!(!matches!(m, Metric::Monitored(_)), "{text}");
            assert_eq!(Metric::from_text(&m.text()), m, "{text}");
        }
        assert_eq!(Metric::from_text("load_average").text(), "load_average");
    }

    #[test]
    fn the_seeds_expressions_parse() {
        let e = Expr::parse("p95 < 10s").unwrap();
        assert_eq!(
            (e.metric.clone(), e.op, e.bound.clone()),
            (Metric::Latency(95.0), Op::Lt, Bound::Value(10_000.0))
        );
        let e = Expr::parse("p99{name=replay} < 15s").unwrap();
        assert_eq!(e.name.as_deref(), Some("replay"));
        assert_eq!(Expr::parse("error_rate < 1%").unwrap().bound, Bound::Value(0.01));
        assert_eq!(Expr::parse("throughput > 100/s").unwrap().bound, Bound::Value(100.0));
        assert_eq!(Expr::parse("p99.9 <= 250ms").unwrap().metric, Metric::Latency(99.9));
        assert_eq!(Expr::parse("p999 <= 250ms").unwrap().metric, Metric::Latency(99.9));
        assert_eq!(Expr::parse("p95 > 3x first").unwrap().bound, Bound::TimesFirst(3.0));
    }

    #[test]
    fn bad_expressions_say_why() {
        let err = |t: &str| Expr::parse(t).unwrap_err().to_string();
        assert!(err("p95 10s").contains("expected"));
        // Any other name is a monitored metric; whether one is recorded is checked against the
        // monitor's plan, where it is known.
        assert!(matches!(
            Expr::parse("latency < 1s").unwrap().metric,
            Metric::Monitored(_)
        ));
        assert!(err("p95 < fast").contains("not a duration"));
        assert!(err("error_rate < lots").contains("not a"));
        assert!(err("p95{status=200} < 1s").contains("only {name=...}"));
        assert!(err("max(p95) < 1s").contains("request metric"));
        assert!(err("load-avg > 3").contains("not a metric name"));
        assert!(err("load_average > 3x first").contains("give a value"));
        assert!(err("load_average > lots").contains("not a value"));
    }

    #[test]
    fn monitored_metrics_parse_with_labels_aggregations_and_units() {
        let m = |t: &str| match Expr::parse(t).unwrap() {
            Expr {
                metric: Metric::Monitored(m),
                bound: Bound::Value(v),
                ..
            } => (m, v),
            other => panic!("{other:?}"),
        };
        let (x, v) = m("load_average > 3");
        assert_eq!((x.metric.as_str(), x.agg, v), ("load_average", None, 3.0));
        let (x, v) = m("max(process_resident_memory_bytes{process=api}) < 512MiB");
        assert_eq!(x.agg, Some(Agg::Max));
        assert_eq!(x.labels, vec![("process".to_string(), "api".to_string())]);
        assert_eq!(v, 512.0 * 1024.0 * 1024.0);
        let (x, v) = m("mean(rate(rows_total{table=\"a\"})) > 2000/s");
        assert_eq!(
            (x.metric.as_str(), x.agg, v),
            ("rate(rows_total)", Some(Agg::Mean), 2000.0)
        );
        assert_eq!(x.labels[0].1, "a");
        assert_eq!(m("host_cpu_percent > 90%").1, 90.0);
        assert_eq!(m("stream_lag_seconds < 250ms").1, 0.25);
        assert_eq!(m("pg_database_size_bytes < 1.5GB").1, 1.5e9);
        assert_eq!(Agg::Mean.apply(&[1.0, 2.0, 6.0]), Some(3.0));
        assert_eq!(Agg::Last.apply(&[1.0, 2.0]), Some(2.0));
        assert_eq!(Agg::Max.apply(&[]), None);
    }

    #[test]
    fn conditions_parse_or_explain() {
        assert!(StopCondition::parse("p99{name=x} > 1s").is_err());
        assert!(StopCondition::parse("p95 1s")
            .unwrap_err()
            .to_string()
            .contains("throughput_stalls"));
    }

    #[test]
    fn thresholds_take_fixed_values_and_read_back_as_written() {
        assert!(matches!(
            Threshold::parse("p95 > 3x first"),
            Err(ThresholdError::Relative(_))
        ));
        let t = Threshold::parse(" p95 < 250ms ").unwrap();
        assert_eq!(t.bound(), 250.0);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, "\"p95 < 250ms\"");
        assert_eq!(serde_json::from_str::<Threshold>(&json).unwrap(), t);
        let c: StopCondition = serde_json::from_str("\"throughput_falls\"").unwrap();
        assert_eq!(c, StopCondition::ThroughputFalls);
        assert!(serde_json::from_str::<StopCondition>("\"p95 1s\"").is_err());
    }
}
