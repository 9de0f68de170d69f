//! What can be wrong with a monitor plan, found before anything is contacted.

/// A monitor plan that cannot be sampled as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MonitorError {
    /// Sampling needs time between samples.
    #[error("the monitor interval must be longer than zero")]
    ZeroInterval,
    /// A pattern (of process names or metric names) does not compile.
    #[error("{what} {pattern:?} is not a valid regular expression: {reason}")]
    Pattern {
        /// What the pattern selects, as the user calls it.
        what: &'static str,
        /// The pattern as written.
        pattern: String,
        /// The parser's reason.
        reason: String,
    },
    /// An address that cannot be used (the parser's reason; secrets already removed).
    #[error("{0}")]
    Address(String),
    /// One source's error, with the source named (its URL shown without secrets).
    #[error("{source_name}: {error}")]
    Source {
        /// The source: "Prometheus endpoint URL" or "database URL".
        source_name: String,
        /// What is wrong with it.
        error: Box<MonitorError>,
    },
}

/// A metric named in a stop condition or threshold that this plan does not record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricError {
    /// A host metric while host monitoring is off.
    #[error("{0} is a host metric, but host monitoring is off")]
    HostOff(String),
    /// A process metric with no process watched.
    #[error("{0} needs a process to watch (monitor: processes, or --monitor-pid / --monitor-process)")]
    NoProcess(String),
    /// A PostgreSQL metric with no database watched.
    #[error("{0} needs a database to watch (monitor: postgres, or --monitor-postgres)")]
    NoDatabase(String),
    /// A name no source records; says which names are known here.
    #[error(
        "unknown metric {metric:?}: {}request metrics are {REQUEST_METRICS}; {}monitored ones here are {}",
        if *.prometheus { "no Prometheus endpoint is asked for it; " } else { "" },
        if *.prometheus { "built-in " } else { "" },
        .known.join(", ")
    )]
    Unknown {
        /// The name as written.
        metric: String,
        /// The monitored metrics this plan records.
        known: Vec<&'static str>,
        /// Whether Prometheus endpoints are watched (so the name could have been one of theirs).
        prometheus: bool,
    },
}

/// The request metrics an expression may name, as the unknown-metric message lists them.
const REQUEST_METRICS: &str = "p50, p95, p99, p99.9 (any pNN), mean, max, error_rate, throughput, requests, failures";
