//! Quantities with their units as types, so that analysis hands renderers numbers that know
//! what they measure and the words and unit symbols are chosen in one place, the report crate.
//! Beneath every stage: it imports only the expression language.

use crest_model::expr::Metric;
use crest_model::monitor::Unit;
use serde::Serialize;

/// A measured value and its unit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// A latency, in milliseconds.
    Ms(f64),
    /// A share from 0 to 1 (an error rate).
    Fraction(f64),
    /// A rate, per second.
    PerSecond(f64),
    /// A count of requests or failures.
    Count(f64),
    /// A monitored series' value, in that series' unit.
    Monitored(Unit, f64),
}

impl Quantity {
    /// The number, in the unit the variant names.
    pub fn value(self) -> f64 {
        match self {
            Quantity::Ms(v)
            | Quantity::Fraction(v)
            | Quantity::PerSecond(v)
            | Quantity::Count(v)
            | Quantity::Monitored(_, v) => v,
        }
    }
}

/// A request metric's value with its unit.
pub fn quantity(m: &Metric, v: f64) -> Quantity {
    match m {
        Metric::Latency(_) | Metric::Mean | Metric::Max => Quantity::Ms(v),
        Metric::ErrorRate => Quantity::Fraction(v),
        Metric::Throughput => Quantity::PerSecond(v),
        Metric::Requests | Metric::Failures => Quantity::Count(v),
        Metric::Monitored(_) => Quantity::Monitored(Unit::Number, v),
    }
}
