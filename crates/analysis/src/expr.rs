//! Threshold and stop-condition expressions: `p95 < 10s`, `p99{name=replay} < 15s`,
//! `error_rate < 1%`, `throughput > 100/s`, `p95 > 3x first`.

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
    /// A multiple of the same metric in the first segment (stop conditions).
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

impl Expr {
    /// Parses an expression; the error says what is wrong and what is allowed.
    pub fn parse(text: &str) -> Result<Expr, String> {
        let t = text.trim();
        let (lhs, op, rhs) = split_op(t).ok_or_else(|| format!("{t:?}: expected `metric < value` (or <=, >, >=)"))?;
        let (metric_text, name) = match lhs.split_once('{') {
            Some((m, rest)) => {
                let inner = rest
                    .strip_suffix('}')
                    .ok_or_else(|| format!("{t:?}: a `{{` is not closed"))?;
                let (k, v) = inner
                    .split_once('=')
                    .ok_or_else(|| format!("{t:?}: write the filter as {{name=...}}"))?;
                if k.trim() != "name" {
                    return Err(format!("{t:?}: only {{name=...}} filters are supported"));
                }
                (m.trim(), Some(v.trim().trim_matches('"').to_string()))
            }
            None => (lhs, None),
        };
        let metric =
            parse_metric(metric_text).ok_or_else(|| format!("{t:?}: unknown metric {metric_text:?}; use {METRICS}"))?;
        let bound = parse_bound(&metric, rhs).map_err(|m| format!("{t:?}: {m}"))?;
        Ok(Expr {
            text: t.to_string(),
            metric,
            name,
            op,
            bound,
        })
    }
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

fn parse_bound(metric: &Metric, rhs: &str) -> Result<Bound, String> {
    let rhs = rhs.trim();
    if let Some(f) = rhs.strip_suffix("first").map(str::trim) {
        let k = f.trim_end_matches(['x', '*']).trim();
        let k: f64 = k
            .parse()
            .map_err(|_| format!("{rhs:?}: write a multiple as `3x first`"))?;
        return Ok(Bound::TimesFirst(k));
    }
    let v = match metric {
        Metric::Latency(_) | Metric::Mean | Metric::Max => {
            let d: Duration = humantime::parse_duration(rhs)
                .map_err(|_| format!("{rhs:?} is not a duration; write e.g. 250ms, 10s"))?;
            d.as_secs_f64() * 1000.0
        }
        Metric::ErrorRate => match rhs.strip_suffix('%') {
            Some(p) => {
                p.trim()
                    .parse::<f64>()
                    .map_err(|_| format!("{rhs:?} is not a percentage"))?
                    / 100.0
            }
            None => rhs
                .parse::<f64>()
                .map_err(|_| format!("{rhs:?} is not a rate; write e.g. 1%"))?,
        },
        Metric::Throughput => rhs
            .trim_end_matches("/s")
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("{rhs:?} is not a throughput; write e.g. 100/s"))?,
        Metric::Requests | Metric::Failures => rhs.parse::<f64>().map_err(|_| format!("{rhs:?} is not a number"))?,
    };
    Ok(Bound::Value(v))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(Expr::parse("p95 10s").unwrap_err().contains("expected"));
        assert!(Expr::parse("latency < 1s").unwrap_err().contains("unknown metric"));
        assert!(Expr::parse("p95 < fast").unwrap_err().contains("not a duration"));
        assert!(Expr::parse("error_rate < lots").unwrap_err().contains("not a"));
        assert!(Expr::parse("p95{status=200} < 1s")
            .unwrap_err()
            .contains("only {name=...}"));
    }
}
