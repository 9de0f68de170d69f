//! Watched processes that died or came back during the run: each a key finding, with its time,
//! since every figure after it describes a different service (or none).

use crate::bottleneck::subject;
use crest_model::monitor::EventKind;
use crest_model::results::Results;
use serde::Serialize;

/// One event, with the process named as the reports name it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProcessEvent {
    /// What happened.
    pub kind: EventKind,
    /// The watched process's label.
    pub subject: String,
    /// Seconds from the start of the run of the sample that saw it.
    pub at_s: f64,
    /// The process that ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The process that took its place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_pid: Option<u32>,
    /// OOM kills its cgroup counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oom_kills: Option<u64>,
    /// The memory limit it was killed at, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<f64>,
}

/// The run's process events, in time order.
pub fn events(r: &Results) -> Vec<ProcessEvent> {
    let Some(m) = &r.monitor else { return Vec::new() };
    let mut out: Vec<ProcessEvent> = m
        .events
        .iter()
        .map(|e| ProcessEvent {
            kind: e.kind,
            subject: subject(m.sources.get(e.source as usize), None),
            at_s: e.at_s,
            pid: e.pid,
            new_pid: e.new_pid,
            oom_kills: e.oom_kills,
            memory_limit_bytes: e.memory_limit_bytes,
        })
        .collect();
    out.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    out
}
