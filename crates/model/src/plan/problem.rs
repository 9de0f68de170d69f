//! What can be wrong with a draft, and how each problem is said with the flag or the place in
//! the file its setting came from.

use super::{defaults, Origin};
use crate::monitor::MetricError;
use std::fmt;
use std::time::Duration;

/// What is wrong with a draft.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DraftProblem {
    /// `--threads 0`.
    #[error("at least one thread is needed")]
    NoThreads,
    /// `--max-streams 0`, `max_streams: 0`.
    #[error("at least one stream per connection is needed")]
    NoStreams,
    /// Streams per connection asked for without HTTP/2.
    #[error("applies to HTTP/2")]
    StreamsWithoutHttp2,
    /// `--worker-index` not below `--workers`, or `--workers 0`.
    #[error("{index} is not a worker of {count}: give --workers N (at least 1) and --worker-index 0 to N-1")]
    NoSuchWorker {
        /// The index given.
        index: u32,
        /// The workers given.
        count: u32,
    },
    /// Fewer users, requests in flight or requests than workers: a worker would have none.
    #[error("{what} can't be split over {workers} workers: each needs at least one")]
    TooFewToShare {
        /// What, with its number ("5 users").
        what: String,
        /// The workers.
        workers: u32,
    },
    /// Stop conditions or thresholds on one worker's part of a run.
    #[error("judges the whole run, and one worker sees only its part: leave it out of a worker's plan")]
    WholeRunOnly,
    /// `on_cap` with the closed model, whose users each wait for their own answer.
    #[error("applies to the open model only (a rate of arrivals), whose arrivals can find the cap on requests in flight reached")]
    OnCapClosed,
    /// Monitor samples closer together than [`defaults::MIN_MONITOR_INTERVAL`].
    #[error(
        "{}: sample at most every {}",
        humantime::format_duration(*.0),
        humantime::format_duration(defaults::MIN_MONITOR_INTERVAL)
    )]
    SamplesTooOften(Duration),
    /// An expression on a monitored metric that nothing monitors.
    #[error("{text:?}: {why}")]
    Unmonitored {
        /// The expression.
        text: String,
        /// Why the monitor does not record it.
        why: MetricError,
    },
}

/// A problem and the setting it is with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanProblem {
    /// Where the setting came from.
    pub origin: Origin,
    /// What is wrong.
    pub problem: DraftProblem,
}

impl PlanProblem {
    /// The problem with the setting's name but without its place: for a file's own list of
    /// located problems.
    pub fn message(&self) -> String {
        match (&self.origin, &self.problem) {
            (Origin::Flag(flag), p @ (DraftProblem::NoThreads | DraftProblem::NoStreams)) => format!("{flag} 0: {p}"),
            (Origin::Flag(flag), p @ DraftProblem::StreamsWithoutHttp2) => {
                format!("{flag} {p}: add --http2 or --http auto")
            }
            (Origin::File { key, .. }, p @ DraftProblem::StreamsWithoutHttp2) => {
                format!("{key} {p}: add `http: 2` or `http: auto` to `defaults`")
            }
            (Origin::Flag(flag), p) => format!("{flag} {p}"),
            (Origin::File { key, .. }, p) => format!("{key}: {p}"),
        }
    }
}

impl fmt::Display for PlanProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            Origin::File {
                file, at: Some((l, c)), ..
            } => write!(f, "{file}:{l}:{c}: {}", self.message()),
            Origin::File { file, at: None, .. } => write!(f, "{file}: {}", self.message()),
            Origin::Flag(_) => f.write_str(&self.message()),
        }
    }
}

/// Everything wrong with a draft.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct PlanError(pub Vec<PlanProblem>);
