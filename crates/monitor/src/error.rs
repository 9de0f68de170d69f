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

/// Why a source could not be read at one sample. The monitor notes it, with the time, and
/// tries again at the next sample.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SampleError {
    /// A file of /proc the host figures come from.
    #[error("{file}: {reason}")]
    Proc {
        file: &'static str,
        reason: procfs::ProcError,
    },
    #[error("cannot list processes: {0}")]
    ListProcesses(procfs::ProcError),
    #[error("pid {0} is crest itself, which is never watched")]
    Itself(i32),
    #[error("cannot read {}: {reason}", path.display())]
    PidFile {
        path: std::path::PathBuf,
        reason: std::io::Error,
    },
    #[error("{} does not hold a process id", .0.display())]
    NotAPid(std::path::PathBuf),
    /// A scrape failed: how it counts as a request, and the detail when there is one.
    #[error("{}{}", .outcome.describe(), .detail.as_ref().map(|d| format!(": {d}")).unwrap_or_default())]
    Scrape {
        outcome: crest_model::Outcome,
        detail: Option<String>,
    },
    #[error("the page is not in the Prometheus text format: {0}")]
    NotPrometheus(std::io::Error),
    /// The database's or its driver's message.
    #[error("{0}")]
    Database(crest_pg::PgError),
    #[error("the statistics query returned no row")]
    NoRow,
    #[error("no answer within {} ms", .0.as_millis())]
    Timeout(std::time::Duration),
    /// A state the code rules out; the message names it.
    #[error("internal: {0}")]
    Internal(&'static str),
}

#[cfg(test)]
mod tests {
    use super::SampleError;
    use crest_model::Outcome;
    use std::time::Duration;

    #[test]
    fn sample_errors_say_which_source_and_why() {
        let said = |e: SampleError| e.to_string();
        assert_eq!(
            said(SampleError::Itself(7)),
            "pid 7 is crest itself, which is never watched"
        );
        assert_eq!(
            said(SampleError::NotAPid("/run/app.pid".into())),
            "/run/app.pid does not hold a process id"
        );
        assert_eq!(
            said(SampleError::Timeout(Duration::from_millis(250))),
            "no answer within 250 ms"
        );
        let refused = Outcome::ConnectRefused;
        assert_eq!(
            said(SampleError::Scrape {
                outcome: refused,
                detail: None
            }),
            refused.describe()
        );
        assert_eq!(
            said(SampleError::Scrape {
                outcome: refused,
                detail: Some("port 9".into())
            }),
            format!("{}: port 9", refused.describe())
        );
    }
}
