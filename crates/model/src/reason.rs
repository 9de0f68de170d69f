//! Why a run or a capacity search ended, and how a probe fared, kept as figures with their
//! units. results.json holds measurements, never sentences: a collector merging several
//! workers' results can merge figures, not prose, and the report crate's words module says
//! them in words.
//!
//! The analysis decides these (`crest_analysis::stop`, `crest_analysis::find`); they live here
//! because the results document stores them.

use crate::expr::Metric;
use crate::monitor::{SeriesKey, Unit};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A measured value and its unit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
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

/// What a run's answers are counted in: the user's unit of work. Quick mode counts requests; a
/// scenario with SQL transactions counts each transaction once; a scenario's flows count their
/// iterations (a task submitted, polled and fetched is one), with requests shown beside them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkUnit {
    /// HTTP requests (or SQL statements outside transactions).
    #[default]
    Requests,
    /// SQL transactions, each counted once.
    Transactions,
    /// Iterations of a scenario's flows.
    Iterations,
}

/// The figures that made a stop condition hold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StopReason {
    /// A monitored series went beyond its bound.
    Series {
        /// The series.
        key: SeriesKey,
        /// Its value: the latest, or the aggregate over `window_s`.
        value: Quantity,
        /// Seconds aggregated, when the condition aggregates.
        window_s: Option<usize>,
        /// The bound.
        bound: Quantity,
    },
    /// A request metric went beyond its bound over the last seconds.
    Window {
        /// The metric, as the expression language writes it (`p95`, `error_rate`).
        metric: Metric,
        /// Its value.
        value: Quantity,
        /// Seconds it was measured over.
        secs: f64,
        /// The bound.
        bound: Quantity,
    },
    /// A request metric of the step that ended went beyond a multiple of the first step's.
    Relative {
        /// The metric, as the expression language writes it.
        metric: Metric,
        /// Its value in the step's steady state.
        value: Quantity,
        /// The bound: `times` the first step's.
        bound: Quantity,
        /// The multiple.
        times: f64,
        /// The first step's steady value.
        reference: Quantity,
    },
    /// Throughput stopped growing (or fell) from one step to the next.
    Throughput {
        /// True when it fell rather than stalled.
        fell: bool,
        /// The step that ended, per second.
        rps: f64,
        /// The step before, per second.
        previous_rps: f64,
        /// What the rates count.
        unit: WorkUnit,
    },
}

/// A level of a capacity search: users (closed model) or arrivals per second (open model).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Level {
    /// Users or arrivals per second.
    pub value: f64,
    /// True for arrivals per second.
    pub open: bool,
}

impl Level {
    /// The level a step runs at: whole users (at least 1, as a probe runs them), or a rate.
    pub fn step(self) -> crate::step::Level {
        if self.open {
            crate::step::Level::Rate(self.value)
        } else {
            crate::step::Level::Users(self.value.max(1.0) as u64)
        }
    }
}

/// What one probe of a capacity search measured (its steady state).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// Users or arrivals per second.
    pub level: f64,
    /// Successful responses per second.
    pub success_rps: f64,
    /// p99 latency, ms.
    pub p99_ms: f64,
    /// Error rate.
    pub error_rate: f64,
    /// Open model: arrivals achieved / asked.
    pub achieved_share: f64,
}

/// How a probe missed the service level.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Miss {
    /// Too many errors.
    ErrorRate {
        /// The probe's error rate.
        rate: f64,
        /// The highest allowed.
        max: f64,
    },
    /// p99 latency too high.
    P99 {
        /// The probe's p99, ms.
        ms: f64,
        /// The highest allowed, ms.
        max: f64,
    },
    /// Open model: the asked rate was not served.
    RateNotKept {
        /// Arrivals achieved / asked.
        share: f64,
    },
}

/// Why the search's own decisions ended it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Done {
    /// The first probe already missed the service level.
    FirstFailed(Level, Miss),
    /// Doubling again would pass the highest level allowed.
    HighestAllowed(Level),
    /// The limit lies between a passing and a failing level, as close as the search resolves.
    LimitBetween(Level, Level, Miss),
    /// A level missed the service level.
    Failed(Level, Miss),
    /// Throughput stopped growing at this many successful req/s from this level on.
    Plateau {
        /// Successful req/s.
        rps: f64,
        /// Where the plateau starts.
        from: Level,
    },
}

/// Why a capacity search ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum SearchEnd {
    /// The search concluded.
    Done(Done),
    /// The next probe would not have fit in the search's time budget.
    Budget {
        /// The budget, in seconds.
        budget_s: f64,
    },
    /// A signal ended it.
    Interrupted,
    /// A stop condition held during a probe.
    Stopped {
        /// The probe's level.
        at: Level,
        /// The condition as written: the rule's id in the run's stop conditions.
        condition: String,
        /// What it saw.
        saw: StopReason,
    },
    /// It was killed after this many probes, before it could conclude (a search rebuilt from
    /// its journals).
    CutShort {
        /// Probes it made.
        probes: usize,
    },
}

/// A reason as a document keeps it: figures, or, in documents written before they were kept as
/// figures, the sentence those kept.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum FiguresOrWords<T> {
    /// The figures.
    Figures(T),
    /// The sentence of an older document.
    Words(String),
}

impl<T> FiguresOrWords<T> {
    /// Figures when there are some, else the old words, else nothing.
    pub fn of(figures: Option<T>, words: Option<&String>) -> Option<FiguresOrWords<T>> {
        match (figures, words) {
            (Some(f), _) => Some(FiguresOrWords::Figures(f)),
            (None, Some(w)) => Some(FiguresOrWords::Words(w.clone())),
            (None, None) => None,
        }
    }

    /// The figures borrowed.
    pub fn as_ref(&self) -> FiguresOrWords<&T> {
        match self {
            FiguresOrWords::Figures(f) => FiguresOrWords::Figures(f),
            FiguresOrWords::Words(w) => FiguresOrWords::Words(w.clone()),
        }
    }
}

impl<T: Clone> FiguresOrWords<&T> {
    /// The figures copied.
    pub fn cloned(self) -> FiguresOrWords<T> {
        match self {
            FiguresOrWords::Figures(f) => FiguresOrWords::Figures(f.clone()),
            FiguresOrWords::Words(w) => FiguresOrWords::Words(w),
        }
    }
}

/// The metric names the expression language writes: documents keep the metric as its text,
/// as they keep thresholds and stop conditions.
impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for Metric {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(Metric::from_text(&text))
    }
}

impl JsonSchema for Metric {
    fn is_referenceable() -> bool {
        false
    }
    fn schema_name() -> String {
        String::schema_name()
    }
    fn json_schema(gen: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        String::json_schema(gen)
    }
}
