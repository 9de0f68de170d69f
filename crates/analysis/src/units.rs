//! Quantities with their units as types, so that analysis hands renderers numbers that know
//! what they measure and the words and unit symbols are chosen in one place, the report crate.
//! Beneath every stage: it imports only the expression language.

use crest_model::expr::Metric;
use crest_model::monitor::Unit;

pub use crest_model::reason::Quantity;

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
