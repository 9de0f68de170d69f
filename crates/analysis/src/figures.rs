//! The figures every stage shares: percentiles, one step's figures, one interval's point, and
//! a step's load as a value. A leaf: it imports nothing from the crate, so every stage can use
//! it without reaching back into the stage that produced it.

use crest_model::step::StepKind;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Latency percentiles in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Number of values.
    pub count: u64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
}

impl Percentiles {
    /// Percentiles of a histogram recorded in microseconds.
    pub fn from_micros(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Percentiles::default();
        }
        // hdrhistogram reports the highest value equivalent to the bucket; report the bucket's
        // median-equivalent instead so that a steady 20 ms does not read as 20.01 ms.
        let q = |q: f64| crest_model::hist::us_to_ms(h.median_equivalent(h.value_at_quantile(q)) as f64);
        Percentiles {
            count: h.len(),
            p50: q(0.5),
            p90: q(0.9),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            min: crest_model::hist::us_to_ms(h.min() as f64),
            max: crest_model::hist::us_to_ms(h.max() as f64),
            mean: crest_model::hist::us_to_ms(h.mean()),
        }
    }
}

/// Sizes in bytes: how much each request received (status line, headers and body).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Sizes {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Largest.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
}

impl Sizes {
    /// The sizes of a histogram of byte counts; none when it is empty.
    pub fn from_bytes(h: &Histogram<u64>) -> Option<Self> {
        if h.is_empty() {
            return None;
        }
        let q = |q: f64| h.median_equivalent(h.value_at_quantile(q)) as f64;
        Some(Sizes {
            p50: q(0.5),
            p95: q(0.95),
            max: h.median_equivalent(h.max()) as f64,
            mean: h.mean(),
        })
    }
}

pub use crest_model::reason::WorkUnit;

/// An interval's units of work that ended in it, of them the failures, and their times (all of
/// them: an interval keeps no histogram of its successes alone).
pub fn interval_units(
    i: &crest_model::results::Interval,
    unit: WorkUnit,
) -> (u64, u64, Option<&crest_model::EncodedHistogram>) {
    match unit {
        WorkUnit::Requests | WorkUnit::Transactions => (i.requests, i.failures, Some(&i.latency)),
        WorkUnit::Iterations => i.iterations.as_ref().map_or((0, 0, None), |it| {
            (it.completed + it.failed, it.failed, Some(&it.duration))
        }),
    }
}

/// Whether a step's figures can be judged (compared with other steps, taken as an optimum or
/// a limit), and why not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Judged {
    /// Long enough, with units of work in it.
    #[default]
    Yes,
    /// The run ended in it (a stop rule, a signal, a crash) long before a step's usual length:
    /// its figures are shown, but they describe the ramp into the level, not the level.
    CutShort {
        /// Seconds it lasted.
        lasted_s: f64,
        /// The median length of the run's other steps.
        usual_s: f64,
    },
    /// No unit of work ended in it.
    Empty,
    /// Too few units of work behind its figures: its p95 is its slowest few and one slow unit
    /// moves its mean ("not judged: too little data").
    TooLittle {
        /// Units of work behind its throughput and latency.
        units: u64,
        /// The fewest judged.
        min: u64,
    },
}

/// Fewest units of work (requests, transactions, iterations) behind a load level's figures for
/// it to be judged: with fewer, its p95 is its slowest unit and one slow unit moves its mean.
pub const MIN_UNITS: u64 = 20;

/// One segment's figures.
#[derive(Clone, Debug, Serialize)]
pub struct SegmentAnalysis {
    /// Index in the run.
    pub index: usize,
    /// What the step is; reports put it in words.
    pub kind: StepKind,
    /// Load level: users (closed model).
    pub users: Option<u64>,
    /// Load level: arrivals per second (open model).
    pub rate: Option<f64>,
    /// Start and end in seconds from the start of the run.
    pub start_s: f64,
    /// End.
    pub end_s: f64,
    /// Start of the steady state used for throughput and latency.
    pub steady_start_s: f64,
    /// End of the steady state.
    pub steady_end_s: f64,
    /// Seconds of warm-up trimmed at the start: intervals whose throughput was still rising or
    /// whose median latency was still settling, never one with a failure. Only throughput leaves
    /// them out; percentiles count every request of the step.
    pub trimmed_s: f64,
    /// Whether the step can be judged; a step that cannot is shown, labelled, and left out of
    /// capacity, growth and comparison findings.
    pub judged: Judged,
    /// Every request of the step: each request belongs to exactly one step (the one its
    /// iteration was due in), so the steps' requests add up to the run's.
    pub requests: u64,
    /// Of those, failures; never trimmed.
    pub failures: u64,
    /// failures / requests over the whole step.
    pub error_rate: f64,
    /// The step's requests less those that ended in its trimmed warm-up: the count its
    /// throughput is computed from.
    pub steady_requests: u64,
    /// Of those, failures.
    pub steady_failures: u64,
    /// Requests per second: the steady requests over the step's exact span from the end of its
    /// warm-up, so a step of any length is measured over its own time.
    pub throughput_rps: f64,
    /// Successful units per second, likewise: the step's throughput in every answer.
    pub success_rps: f64,
    /// The standard error of `success_rps`, from the step's own data: the spread of its steady
    /// seconds' successful rates, or, with fewer than three of them, the counting error.
    /// Differences between steps smaller than twice their combined error are not judged.
    pub success_rps_se: f64,
    /// Total time in ms of every request of the step, warm-up and failures included.
    pub latency_ms: Percentiles,
    /// Total time in ms of the step's successful units only: what a user who was served
    /// waited, which growth and capacity findings compare (an instant 503 is no faster
    /// service; failures have their own rows).
    pub success_latency_ms: Percentiles,
    /// Time to first byte in ms of every request of the step that received a byte.
    pub ttfb_ms: Percentiles,
    /// The whole step's figures, shown beside the steady state's when they differ.
    pub whole: WholeStep,
    /// Connect time in ms, whole segment.
    pub connect_ms: Percentiles,
    /// Bytes received in the whole segment.
    pub bytes_received: u64,
    /// Failures by outcome in the whole segment, most frequent first.
    pub errors: Vec<(String, u64)>,
    /// Mean latency divided by the lowest-load segment's: how much slower the service answers
    /// at this load than when it is nearly idle.
    pub ratio_to_lowest: Option<f64>,
    /// Little's law: requests in flight on average against the users there were.
    pub littles_law: Option<LittlesLaw>,
}

/// Little's law for a closed-model segment: users = throughput x (latency + time outside
/// requests).
#[derive(Clone, Debug, Serialize)]
pub struct LittlesLaw {
    /// Throughput x mean latency: requests in flight on average.
    pub in_flight: f64,
    /// Users at the segment's level.
    pub users: u64,
    /// in_flight / users.
    pub busy_share: f64,
    /// True when users spent much time outside requests without think time to explain it: a
    /// queue in the load generator or the client.
    pub flagged: bool,
}

/// A step's figures over all of it, warm-up and partial intervals included.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WholeStep {
    /// Seconds the step lasted.
    pub duration_s: f64,
    /// Requests per second over the whole step.
    pub throughput_rps: f64,
    /// Total time in ms of every request of the step.
    pub latency_ms: Percentiles,
    /// True when a warm-up was trimmed, so the step's throughput differs from its whole rate.
    pub differs: bool,
}

/// One interval, for charts.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// Start, seconds from the start of the run.
    pub t_s: f64,
    /// Requests per second.
    pub rps: f64,
    /// Failures per second.
    pub errors_per_s: f64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// p95 latency, ms.
    pub p95_ms: f64,
    /// p99 latency, ms.
    pub p99_ms: f64,
    /// Largest latency, ms.
    pub max_ms: f64,
    /// Median time to the first byte, ms.
    pub ttfb_p50_ms: f64,
    /// Users or arrival rate of the segment the interval is in.
    pub load: f64,
}

/// One entry of the results' totals (a step, a request name, an outcome) in figures: the rows
/// of requests.csv. Quantiles are the histogram's own values, as the series' are.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StatRow {
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Largest, ms.
    pub max_ms: f64,
    /// Mean, ms.
    pub mean_ms: f64,
    /// Median time to the first byte, ms, when it was measured.
    pub ttfb_p50_ms: Option<f64>,
    /// Bytes received: median, 95th percentile and largest, when measured.
    pub size_bytes: Option<[u64; 3]>,
}

/// A step's load: users (closed model), arrivals per second (open model), or, for a step that
/// is no load level (a sweep's point), its name; renderers put it in words.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepLoad {
    /// Users of the closed model.
    Users(u64),
    /// Arrivals per second of the open model.
    Rate(f64),
    /// A step without a load level, by its kind.
    Named(StepKind),
}

impl SegmentAnalysis {
    /// The step's load as a number (users or rate; 0 when unknown).
    pub fn load_value(&self) -> f64 {
        self.users.map(|u| u as f64).or(self.rate).unwrap_or(0.0)
    }

    /// The step's load, or its name when it has none.
    pub fn load(&self) -> StepLoad {
        match (self.users, self.rate) {
            (Some(u), _) => StepLoad::Users(u),
            (None, Some(r)) => StepLoad::Rate(r),
            _ => StepLoad::Named(self.kind.clone()),
        }
    }
}
