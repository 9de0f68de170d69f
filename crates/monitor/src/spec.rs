//! What a monitor plan may ask to watch, checked one entry at a time, so every front end (the
//! `--monitor-*` flags, a scenario's `monitor:`) refuses the same things, each naming its own
//! flag or place in the file. Nothing is contacted.

use crest_model::address::{self, UrlError};
use crest_model::monitor::{MonitorPlan, PostgresSpec, ProcessSpec, PrometheusSpec};
use crest_pg::InvalidTarget;

/// An entry a monitor plan cannot have.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// A process pattern or a metric pattern that does not compile.
    #[error("{0:?} is not a valid regular expression: {1}")]
    Pattern(String, regex::Error),
    /// Two processes watched under one label: their series could not be told apart.
    #[error("two processes are labelled {0:?}; give each its own label")]
    SameLabel(String),
    /// A Prometheus endpoint that is not an HTTP URL.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// A PostgreSQL server crest could not connect to as written.
    #[error(transparent)]
    Postgres(#[from] InvalidTarget),
}

/// Adds a process to watch, unless its label is taken or its pattern does not compile.
pub fn add_process(plan: &mut MonitorPlan, spec: ProcessSpec) -> Result<(), SpecError> {
    if let crest_model::monitor::ProcessSelect::Pattern(p) = &spec.select {
        regex::Regex::new(p).map_err(|e| SpecError::Pattern(p.clone(), e))?;
    }
    if plan.processes.iter().any(|x| x.label == spec.label) {
        return Err(SpecError::SameLabel(spec.label));
    }
    plan.processes.push(spec);
    Ok(())
}

/// Adds a Prometheus endpoint, unless its URL or one of its metric patterns is not usable.
pub fn add_prometheus(plan: &mut MonitorPlan, spec: PrometheusSpec) -> Result<(), SpecError> {
    address::parse(&spec.url, address::HTTP)?;
    for m in &spec.metrics {
        metric_pattern(m)?;
    }
    plan.prometheus.push(spec);
    Ok(())
}

/// A metric pattern, matched against whole names.
pub fn metric_pattern(m: &str) -> Result<(), SpecError> {
    regex::Regex::new(&format!("^(?:{m})$"))
        .map(drop)
        .map_err(|e| SpecError::Pattern(m.to_string(), e))
}

/// Adds a PostgreSQL server, unless its URL is not usable.
pub fn add_postgres(plan: &mut MonitorPlan, spec: PostgresSpec) -> Result<(), SpecError> {
    crest_pg::PgTarget::parse(&spec.url, spec.password.as_deref(), None)?;
    plan.postgres.push(spec);
    Ok(())
}
