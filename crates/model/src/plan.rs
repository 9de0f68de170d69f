//! The validated plan: everything the engine needs to know, and nothing about where it came from.
//!
//! Command-line flags (and, later, scenario files) are resolved into a [`Plan`]. The load model
//! and the stop rule are independent values, so one executor serves every combination of them.

use std::time::Duration;

/// The highest arrival rate a plan may ask for, per second. One process sends at most a few
/// hundred thousand requests a second; far beyond that a rate is a typo, and `1e300` overflowed
/// the schedule's arithmetic.
pub const MAX_RATE: f64 = 10_000_000.0;
/// The most users (or requests in flight) a plan may ask for: each holds a connection.
pub const MAX_USERS: u64 = 1_000_000;
/// The longest duration a plan may give (a run, a stage, a timeout): a year. Longer ones are
/// typos, and would overflow the clock's arithmetic.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// Why a rate, a number of users or a duration is outside the bounds above; `None` when it is
/// usable.
pub fn rate_problem(rate: f64) -> Option<String> {
    if !(rate.is_finite() && rate > 0.0) {
        Some("the rate must be a number of requests per second above 0".into())
    } else if rate > MAX_RATE {
        Some(format!("the rate is at most {MAX_RATE:.0}/s"))
    } else {
        None
    }
}

/// See [`rate_problem`].
pub fn users_problem(users: u64) -> Option<String> {
    (users > MAX_USERS).then(|| format!("at most {MAX_USERS} users (connections) from one process"))
}

/// See [`rate_problem`].
pub fn duration_problem(d: Duration) -> Option<String> {
    (d > MAX_DURATION).then(|| "a duration is at most 365 days".to_string())
}

/// A validated run, ready for the engine.
#[derive(Clone, Debug)]
pub struct Plan {
    /// How load is generated.
    pub load: LoadModel,
    /// When the run ends (whichever comes first).
    pub stop: StopRule,
    /// Names that statistics are grouped under; samples refer to them by index.
    pub names: Vec<String>,
    /// For each name, the name it is a part of: a statement of an SQL transaction is measured
    /// on its own, but the unit of work is the transaction. Empty when every name is a request
    /// of its own.
    pub part_of: Vec<Option<u32>>,
    /// The run's steps, in time order; statistics are kept per segment. At least one.
    pub segments: Vec<SegmentPlan>,
    /// Engine threads (each a single-threaded event loop). Defaults to the number of cores.
    pub threads: usize,
    /// How long requests still in flight may finish after sending stops.
    pub grace: Duration,
    /// What is sent.
    pub target: Target,
    /// Conditions checked every interval that end the run early (validated expressions).
    pub stop_when: Vec<String>,
    /// Conditions checked at the end (validated expressions).
    pub thresholds: Vec<String>,
    /// What is sampled while the load runs.
    pub monitor: crate::monitor::MonitorPlan,
}

/// How load is generated.
#[derive(Clone, Debug, PartialEq)]
pub enum LoadModel {
    /// Virtual users, each starting its next iteration when the last one ends.
    Closed {
        /// How many users are active over time.
        users: UsersProfile,
        /// Iterations each user runs before it stops (threads x loops, run once); `None` for no
        /// limit.
        iterations: Option<u64>,
    },
    /// Iterations start on a schedule, whatever the target's latency.
    Open {
        /// Arrivals per second over time.
        rate: RateProfile,
        /// The most iterations in flight at once; arrivals beyond it are dropped and counted.
        max_in_flight: u64,
    },
}

impl LoadModel {
    /// A fixed number of users with no iteration limit.
    pub fn users(n: u64) -> Self {
        LoadModel::Closed {
            users: UsersProfile::constant(n),
            iterations: None,
        }
    }

    /// A constant arrival rate.
    pub fn rate(rate: f64, max_in_flight: u64) -> Self {
        LoadModel::Open {
            rate: RateProfile::constant(rate),
            max_in_flight,
        }
    }

    /// The most connections this model can hold open at once.
    pub fn max_concurrency(&self) -> u64 {
        match self {
            LoadModel::Closed { users, .. } => users.max(),
            LoadModel::Open { max_in_flight, .. } => *max_in_flight,
        }
    }
}

/// Users over time: `start` users, then each stage moves linearly to its level over its
/// duration (a zero duration is a jump); the last level holds until the run ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsersProfile {
    /// Users at the start.
    pub start: u64,
    /// Stages, in order.
    pub stages: Vec<UsersStage>,
}

/// One stage of a users profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsersStage {
    /// Length of the stage.
    pub duration: Duration,
    /// Users at the end of the stage.
    pub to: u64,
}

impl UsersProfile {
    /// `n` users throughout.
    pub fn constant(n: u64) -> Self {
        UsersProfile {
            start: n,
            stages: Vec::new(),
        }
    }

    /// The most users at any time.
    pub fn max(&self) -> u64 {
        self.stages.iter().map(|s| s.to).fold(self.start, u64::max)
    }
}

/// Arrival rate over time: `start` per second, then each stage moves linearly to its rate over
/// its duration; the last rate holds until the run ends.
#[derive(Clone, Debug, PartialEq)]
pub struct RateProfile {
    /// Arrivals per second at the start.
    pub start: f64,
    /// Stages, in order.
    pub stages: Vec<RateStage>,
}

/// One stage of a rate profile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateStage {
    /// Length of the stage.
    pub duration: Duration,
    /// Arrivals per second at the end of the stage.
    pub to: f64,
}

impl RateProfile {
    /// A constant rate.
    pub fn constant(rate: f64) -> Self {
        RateProfile {
            start: rate,
            stages: Vec::new(),
        }
    }

    /// The highest rate at any time.
    pub fn max(&self) -> f64 {
        self.stages.iter().map(|s| s.to).fold(self.start, f64::max)
    }
}

/// One step of a run, for reports: statistics are kept per segment.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentPlan {
    /// A short label: `run`, `40 users`, `ramp to 100 users`, `spike`.
    pub name: String,
    /// When the segment starts, from the start of the run.
    pub start: Duration,
    /// Users at the segment's level (closed model).
    pub users: Option<u64>,
    /// Arrival rate at the segment's level (open model).
    pub rate: Option<f64>,
}

impl SegmentPlan {
    /// The single segment of a run without steps.
    pub fn whole_run() -> Self {
        SegmentPlan {
            name: "run".into(),
            start: Duration::ZERO,
            users: None,
            rate: None,
        }
    }
}

/// When a run ends; the first limit reached wins. With neither, it runs until interrupted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StopRule {
    /// Stop after this many requests (arrivals, in the open model) have been started.
    pub requests: Option<u64>,
    /// Stop sending after this long.
    pub duration: Option<Duration>,
}

/// What the run sends.
#[derive(Clone, Debug)]
pub enum Target {
    /// One HTTP request, repeated.
    Http(HttpRequest),
    /// User flows from a scenario file; the flows themselves are compiled by the scenario
    /// crate and handed to the engine beside the plan.
    Scenario(ScenarioSource),
}

/// Where a scenario came from.
#[derive(Clone, Debug)]
pub struct ScenarioSource {
    /// The file as given.
    pub path: String,
    /// SHA-256 of its contents, hex.
    pub sha256: String,
    /// Flow names and weights.
    pub flows: Vec<(String, u32)>,
}

/// One HTTP request, repeated for the whole run.
#[derive(Clone, Debug)]
pub struct HttpRequest {
    /// The method, e.g. `GET`.
    pub method: String,
    /// The absolute URL (`http` or `https`).
    pub url: String,
    /// Extra headers, in order. Values may be secrets: redact before showing them.
    pub headers: Vec<(String, String)>,
    /// The request body, possibly empty.
    pub body: Vec<u8>,
    /// Limit on one request, from its start until the response body is complete.
    pub timeout: Duration,
    /// Limit on establishing a connection.
    pub connect_timeout: Duration,
    /// Reuse connections between requests.
    pub keepalive: bool,
    /// How the server's certificate is checked.
    pub tls: TlsOptions,
    /// The HTTP version and client features.
    pub http: crate::protocol::HttpOptions,
}

/// How TLS servers are verified.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// Accept any certificate (self-signed test servers).
    pub insecure: bool,
    /// PEM bytes of extra trusted CA certificates.
    pub ca_pem: Option<Vec<u8>>,
}
