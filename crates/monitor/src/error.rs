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
