//! What is watched while load runs, and what watching it recorded.
//!
//! The plan side ([`MonitorPlan`]) says which processes, hosts, Prometheus endpoints and
//! databases to sample; the results side ([`MonitorRecord`]) holds the time series they gave,
//! as plain points, so that analysis (per-step peaks, leak trends) and every report render from
//! `results.json` alone. Series are named like Prometheus series, `metric{label="value"}`, so
//! that stop conditions and thresholds can address them the same way whatever their source.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// What to sample during a run.
#[derive(Clone, Debug, PartialEq)]
pub struct MonitorPlan {
    /// Time between samples.
    pub interval: Duration,
    /// Sample the machine crest runs on: load average, CPU, memory.
    pub host: bool,
    /// Processes of the system under test.
    pub processes: Vec<ProcessSpec>,
    /// Prometheus text endpoints.
    pub prometheus: Vec<PrometheusSpec>,
    /// PostgreSQL servers whose statistics views are read.
    pub postgres: Vec<PostgresSpec>,
}

impl Default for MonitorPlan {
    fn default() -> Self {
        MonitorPlan {
            interval: crate::plan::defaults::MONITOR_INTERVAL,
            host: true,
            processes: Vec::new(),
            prometheus: Vec::new(),
            postgres: Vec::new(),
        }
    }
}

/// One process, or a group of processes counted together, to watch.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessSpec {
    /// The `process` label of its series: the name, the pid, or what the user chose.
    pub label: String,
    /// How the processes are found; they are looked up again at every sample, so restarts and
    /// new workers are followed.
    pub select: ProcessSelect,
}

/// How processes are found.
#[derive(Clone, Debug, PartialEq)]
pub enum ProcessSelect {
    /// One process id.
    Pid(u32),
    /// The process id written in this file.
    PidFile(PathBuf),
    /// Every process whose name (as in `ps -o comm`) or executable file name is this.
    Name(String),
    /// Every process whose command line matches this regular expression.
    Pattern(String),
}

/// A Prometheus text endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct PrometheusSpec {
    /// The URL of the metrics page.
    pub url: String,
    /// Metric names or regular expressions (matched against the whole name); empty for all.
    pub metrics: Vec<String>,
}

/// A PostgreSQL server whose `pg_stat_activity` and `pg_stat_database` are read.
#[derive(Clone, Debug, PartialEq)]
pub struct PostgresSpec {
    /// `postgres://user@host:port/db`.
    pub url: String,
    /// The password, when given apart from the URL; never written anywhere.
    pub password: Option<String>,
}

/// Metrics read from /proc for the machine.
pub const HOST_METRICS: [&str; 3] = ["load_average", "host_cpu_percent", "host_memory_used_bytes"];
/// Metrics read from /proc for each watched process.
pub const PROCESS_METRICS: [&str; 8] = [
    "process_cpu_percent",
    "process_cpu_throttled_percent",
    "process_cores_busy_percent",
    "process_resident_memory_bytes",
    "process_private_memory_bytes",
    "process_open_fds",
    "process_threads",
    "process_count",
];
/// Metrics read from PostgreSQL's statistics views.
pub const POSTGRES_METRICS: [&str; 4] = [
    "pg_connections",
    "pg_tps",
    "pg_rollbacks_per_second",
    "pg_database_size_bytes",
];

/// The request metrics an expression may name, as the unknown-metric message lists them.
const REQUEST_METRICS: &str = "p50, p95, p99, p99.9 (any pNN), mean, max, error_rate, throughput, requests, failures";

/// Which Prometheus metric names are kept: names or regular expressions, each matched against
/// the whole name; none keeps every name.
#[derive(Clone, Debug)]
pub struct MetricFilter(Vec<regex::Regex>);

/// A metric pattern that is not a regular expression.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("metric pattern {pattern:?} is not a valid regular expression: {reason}")]
pub struct BadPattern {
    /// The pattern as written.
    pub pattern: String,
    /// The parser's reason.
    pub reason: String,
}

impl MetricFilter {
    /// The filter of `patterns`, or the first that does not compile.
    pub fn new(patterns: &[String]) -> Result<Self, BadPattern> {
        patterns
            .iter()
            .map(|p| {
                regex::Regex::new(&format!("^(?:{p})$")).map_err(|e| BadPattern {
                    pattern: p.clone(),
                    reason: e.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(MetricFilter)
    }

    /// Whether `name` is kept.
    pub fn keeps(&self, name: &str) -> bool {
        self.0.is_empty() || self.0.iter().any(|r| r.is_match(name))
    }
}

/// A metric named in a stop condition or threshold that a plan does not record.
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

impl MonitorPlan {
    /// Whether this plan records `metric` (as a stop condition or threshold names it): a
    /// built-in metric of a source it watches, or a name one of its Prometheus endpoints keeps.
    pub fn records(&self, metric: &str) -> Result<(), MetricError> {
        let builtin = |names: &[&str]| names.contains(&metric);
        if builtin(&HOST_METRICS) {
            return if self.host {
                Ok(())
            } else {
                Err(MetricError::HostOff(metric.to_string()))
            };
        }
        if builtin(&PROCESS_METRICS) {
            return if self.processes.is_empty() {
                Err(MetricError::NoProcess(metric.to_string()))
            } else {
                Ok(())
            };
        }
        if builtin(&POSTGRES_METRICS) {
            return if self.postgres.is_empty() {
                Err(MetricError::NoDatabase(metric.to_string()))
            } else {
                Ok(())
            };
        }
        let name = metric
            .strip_prefix("rate(")
            .and_then(|m| m.strip_suffix(')'))
            .unwrap_or(metric);
        let chosen = self
            .prometheus
            .iter()
            .any(|p| MetricFilter::new(&p.metrics).is_ok_and(|f| f.keeps(name)));
        if chosen {
            return Ok(());
        }
        let mut known: Vec<&'static str> = Vec::new();
        if self.host {
            known.extend(HOST_METRICS);
        }
        if !self.processes.is_empty() {
            known.extend(PROCESS_METRICS);
        }
        if !self.postgres.is_empty() {
            known.extend(POSTGRES_METRICS);
        }
        Err(MetricError::Unknown {
            metric: metric.to_string(),
            known,
            prometheus: !self.prometheus.is_empty(),
        })
    }
}

/// Everything the monitor recorded.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MonitorRecord {
    /// Seconds between samples.
    pub interval_s: f64,
    /// What was watched, and what happened to it.
    pub sources: Vec<SourceRecord>,
    /// The time series.
    pub series: Vec<MonitorSeries>,
    /// Watched processes that exited, were killed for memory, or came back with a new pid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<ProcessEvent>,
}

/// What the kernel bounds a watched process by, read when it was watched: the ceilings its
/// series are judged against when crest names a bottleneck. Each is `None` when there is no
/// such bound (no quota, no cgroup limit, an unlimited rlimit) or it could not be read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProcessLimits {
    /// CPUs the process may run on (its affinity mask), in cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<f64>,
    /// The CPU quota of its cgroup, in cores: `cpu.cfs_quota_us / cpu.cfs_period_us` (v1) or
    /// `cpu.max` (v2), the tightest of the cgroup and its parents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_quota_cores: Option<f64>,
    /// The memory limit of its cgroup, bytes: `memory.limit_in_bytes` (v1) or `memory.max`
    /// (v2), the tightest of the cgroup and its parents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<f64>,
    /// Its soft `RLIMIT_AS`, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_space_bytes: Option<f64>,
    /// Its soft `RLIMIT_NOFILE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_files: Option<f64>,
    /// The cgroup version these were read from, 1 or 2; `None` outside any controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_version: Option<u8>,
}

/// Something that happened to a watched process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProcessEvent {
    /// What happened.
    pub kind: EventKind,
    /// Index into [`MonitorRecord::sources`].
    pub source: u32,
    /// Seconds from the start of the run of the sample that saw it (it happened since the
    /// sample before).
    pub at_s: f64,
    /// The process that ended, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The process that took its place, for a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_pid: Option<u32>,
    /// For an OOM kill: the kills its cgroup counted since the sample before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_kills: Option<u64>,
    /// The memory limit it was killed at, bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<f64>,
}

/// The kinds of [`ProcessEvent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// It ended, and nothing says the kernel killed it for memory.
    Exited,
    /// Its cgroup's OOM killer killed it (the cgroup's kill count rose as it ended).
    OomKilled,
    /// It came back: the same spec names a new pid after the old one ended.
    Restarted,
}

/// Something seen while watching a source, kept as figures: only the report's words module
/// puts it in words. Errors are kept as their messages, which is all a read error says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MonitorNote {
    /// The watched processes could not be looked up (an unreadable pid file), at `at_s`.
    Unresolved {
        /// Why.
        error: String,
        /// When, seconds from the start of the run.
        at_s: f64,
    },
    /// No process matched the spec at its first read.
    NotFound {
        /// The spec: `pid 12`, `api`.
        what: String,
        /// When, seconds from the start of the run.
        at_s: f64,
    },
    /// Every process of the spec had ended.
    Gone {
        /// The spec.
        what: String,
        /// When, seconds from the start of the run.
        at_s: f64,
    },
    /// Processes of the spec run again after none did.
    Back {
        /// The spec.
        what: String,
        /// Their pids.
        pids: Vec<i32>,
        /// When, seconds from the start of the run.
        at_s: f64,
    },
    /// The spec's single process has another pid.
    NewPid {
        /// The spec.
        what: String,
        /// The pids now.
        pids: Vec<i32>,
        /// When, seconds from the start of the run.
        at_s: f64,
    },
    /// The kernel gives no private memory (RssAnon) for the spec's processes.
    NoPrivateMemory {
        /// The spec.
        what: String,
    },
    /// The monitor could not start.
    CouldNotStart {
        /// Why.
        error: String,
    },
    /// A source that could not be read was read again.
    ReadAgain {
        /// From when, seconds from the start of the run.
        at_s: f64,
    },
    /// A source could not be read.
    Unreadable {
        /// Why.
        error: String,
        /// When, seconds from the start of the run.
        at_s: f64,
    },
    /// An endpoint gave more series than are kept; the rest are left out.
    TooManySeries {
        /// The most kept.
        most: usize,
    },
    /// A note of one part of a run made of several, the part starting `from_s` into the whole.
    InPart {
        /// Where the part starts, seconds from the start of the whole run.
        from_s: f64,
        /// The part's note.
        note: Box<MonitorNote>,
    },
    /// A note as a document written before notes were kept as figures says it: a bare string
    /// (see [`StoredNote`] for its schema).
    #[serde(untagged)]
    #[schemars(skip)]
    Written(String),
}

/// The schema of a note as stored: tagged, or the bare string of a document written before
/// notes were kept as figures, which a document rebuilt from such a journal keeps. schemars
/// leaves serde's untagged variants out, so it is said here.
struct StoredNote;

impl JsonSchema for StoredNote {
    fn schema_name() -> String {
        "StoredMonitorNote".into()
    }

    fn json_schema(g: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        schemars::schema::SchemaObject {
            subschemas: Some(Box::new(schemars::schema::SubschemaValidation {
                any_of: Some(vec![g.subschema_for::<MonitorNote>(), g.subschema_for::<String>()]),
                ..Default::default()
            })),
            ..Default::default()
        }
        .into()
    }
}

/// One watched source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceRecord {
    /// `host`, `process`, `prometheus` or `postgres`.
    pub kind: String,
    /// Its label: a process label, a redacted URL.
    pub label: String,
    /// For a process watched by its id: its name when watching began. Runs are compared by it,
    /// as the same service has another pid in every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Events seen while watching: a process that exited or could not be found, a scrape that
    /// failed. Each says when.
    #[schemars(with = "Vec<StoredNote>")]
    pub notes: Vec<MonitorNote>,
    /// For a process: what the kernel bounds it by, as last read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ProcessLimits>,
}

/// One time series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MonitorSeries {
    /// The series' name, as stop conditions and thresholds write it.
    pub key: SeriesKey,
    /// Index into [`MonitorRecord::sources`].
    pub source: u32,
    /// A human title, e.g. `open files of target`.
    pub title: String,
    /// The unit of the values.
    pub unit: Unit,
    /// A limit the values cannot pass, when one is known (the process's open-file limit, the
    /// server's `max_connections`, the memory limit of the process's cgroup).
    pub limit: Option<f64>,
    /// Samples as `[seconds from the start of the run, value]`, in time order.
    pub points: Vec<(f64, f64)>,
}

impl MonitorRecord {
    /// Appends a later part of a run (a probe of `crest find`) whose time zero is `offset_s`
    /// into this one: series with the same key continue, new ones are added.
    pub fn append(&mut self, part: MonitorRecord, offset_s: f64) {
        let mut source_map = Vec::with_capacity(part.sources.len());
        for s in part.sources {
            let i = match self.sources.iter().position(|x| x.kind == s.kind && x.label == s.label) {
                Some(i) => i,
                None => {
                    self.sources.push(SourceRecord {
                        notes: Vec::new(),
                        ..s.clone()
                    });
                    self.sources.len() - 1
                }
            };
            self.sources[i].notes.extend(s.notes.into_iter().map(|n| {
                if offset_s > 0.0 {
                    MonitorNote::InPart {
                        from_s: offset_s,
                        note: Box::new(n),
                    }
                } else {
                    n
                }
            }));
            if s.limits.is_some() {
                self.sources[i].limits = s.limits;
            }
            source_map.push(i as u32);
        }
        for mut e in part.events {
            e.at_s += offset_s;
            e.source = source_map.get(e.source as usize).copied().unwrap_or(e.source);
            self.events.push(e);
        }
        for mut s in part.series {
            for p in &mut s.points {
                p.0 += offset_s;
            }
            s.source = source_map.get(s.source as usize).copied().unwrap_or(s.source);
            match self.series.iter_mut().find(|x| x.key == s.key) {
                Some(x) => {
                    x.points.extend(s.points);
                    x.limit = s.limit.or(x.limit);
                }
                None => self.series.push(s),
            }
        }
    }
}

impl MonitorSeries {
    /// The points between `from_s` and `to_s` (both included), as (seconds, value).
    pub fn points_between(&self, from_s: f64, to_s: f64) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.points
            .iter()
            .copied()
            .filter(move |(t, _)| *t >= from_s && *t <= to_s)
    }

    /// The values of the points between `from_s` and `to_s` (both included).
    pub fn values_between(&self, from_s: f64, to_s: f64) -> impl Iterator<Item = f64> + '_ {
        self.points_between(from_s, to_s).map(|(_, v)| v)
    }
}

/// The unit of a monitored series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Percent; for a process, 100 is one core fully used.
    Percent,
    /// Bytes.
    Bytes,
    /// A count (open files, threads, connections).
    Count,
    /// Events per second.
    PerSecond,
    /// Seconds.
    Seconds,
    /// A plain number (load average, an untyped Prometheus gauge).
    Number,
}

/// A series name: a metric and its labels, written `metric{label="value"}`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SeriesKey {
    /// The metric, e.g. `process_open_fds` or a Prometheus metric name.
    pub metric: String,
    /// Labels, e.g. `process` for process series.
    pub labels: BTreeMap<String, String>,
}

impl SeriesKey {
    /// A key with no labels.
    pub fn new(metric: impl Into<String>) -> Self {
        SeriesKey {
            metric: metric.into(),
            labels: BTreeMap::new(),
        }
    }

    /// This key with one more label.
    pub fn with(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(name.into(), value.into());
        self
    }

    /// True when the metric is `metric` and every label in `labels` has the given value.
    pub fn matches(&self, metric: &str, labels: &[(String, String)]) -> bool {
        self.metric == metric && labels.iter().all(|(k, v)| self.labels.get(k) == Some(v))
    }
}

impl fmt::Display for SeriesKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.metric)?;
        if !self.labels.is_empty() {
            f.write_str("{")?;
            for (i, (k, v)) in self.labels.iter().enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                write!(f, "{k}={v:?}")?;
            }
            f.write_str("}")?;
        }
        Ok(())
    }
}

/// What one round of sampling added to a [`MonitorRecord`]: the journal carries one per round,
/// so a run that is killed keeps its monitored series up to its last sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitorSample {
    /// Seconds from the start of the run.
    pub t_s: f64,
    /// In the first sample only: the interval and the watched sources, as known before
    /// anything was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening: Option<MonitorOpening>,
    /// Every series read in this round.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<MonitorPoint>,
    /// Notes on sources made in this round, by source index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<(u32, MonitorNote)>,
    /// Limits read in this round that differ from those known, by source index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<(u32, ProcessLimits)>,
    /// Events seen in this round.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<ProcessEvent>,
}

/// The record's head, before any sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitorOpening {
    /// Seconds between samples.
    pub interval_s: f64,
    /// The sources, with no notes yet.
    pub sources: Vec<SourceRecord>,
}

/// One series' value in a sample, with what a new series needs to be described.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitorPoint {
    /// Which series.
    pub key: SeriesKey,
    /// Index into the sources.
    pub source: u32,
    /// Its title.
    pub title: String,
    /// Its unit.
    pub unit: Unit,
    /// A limit it cannot pass, when known now.
    pub limit: Option<f64>,
    /// The value.
    pub value: f64,
}

/// Builds a [`MonitorRecord`] sample by sample. The monitor thread and the journal's reader
/// both build with it, so a record rebuilt from a journal is the one the run held.
#[derive(Clone, Debug, Default)]
pub struct MonitorBuilder {
    record: MonitorRecord,
    index: std::collections::HashMap<SeriesKey, usize>,
}

impl MonitorBuilder {
    /// A record with this head.
    pub fn new(opening: MonitorOpening) -> Self {
        MonitorBuilder {
            record: MonitorRecord {
                interval_s: opening.interval_s,
                sources: opening.sources,
                series: Vec::new(),
                events: Vec::new(),
            },
            index: std::collections::HashMap::new(),
        }
    }

    /// The record so far.
    pub fn record(&self) -> &MonitorRecord {
        &self.record
    }

    /// True when the series has been seen.
    pub fn has(&self, key: &SeriesKey) -> bool {
        self.index.contains_key(key)
    }

    /// Series recorded from one source.
    pub fn series_of(&self, source: u32) -> usize {
        self.record.series.iter().filter(|s| s.source == source).count()
    }

    /// Adds a note to a source.
    pub fn note(&mut self, source: u32, note: &MonitorNote) {
        if let Some(s) = self.record.sources.get_mut(source as usize) {
            s.notes.push(note.clone());
        }
    }

    /// Sets what bounds a source's process.
    pub fn set_limits(&mut self, source: u32, limits: ProcessLimits) {
        if let Some(s) = self.record.sources.get_mut(source as usize) {
            s.limits = Some(limits);
        }
    }

    /// Adds an event.
    pub fn event(&mut self, e: ProcessEvent) {
        self.record.events.push(e);
    }

    /// Adds a point at `t_s`; a value that is not a number is left out.
    pub fn push(&mut self, t_s: f64, p: &MonitorPoint) {
        if !p.value.is_finite() {
            return;
        }
        let series = &mut self.record.series;
        let i = *self.index.entry(p.key.clone()).or_insert_with(|| {
            series.push(MonitorSeries {
                key: p.key.clone(),
                source: p.source,
                title: p.title.clone(),
                unit: p.unit,
                limit: p.limit,
                points: Vec::new(),
            });
            series.len() - 1
        });
        let s = &mut self.record.series[i];
        // A limit can be learnt late (a process that appears after the start) or change.
        if p.limit.is_some() {
            s.limit = p.limit;
        }
        s.points.push((t_s, p.value));
    }

    /// Adds a whole sample, as read back from a journal.
    pub fn apply(&mut self, s: &MonitorSample) {
        if let Some(o) = &s.opening {
            if self.record.sources.is_empty() && self.record.series.is_empty() {
                *self = MonitorBuilder::new(o.clone());
            }
        }
        for (source, note) in &s.notes {
            self.note(*source, note);
        }
        for (source, limits) in &s.limits {
            self.set_limits(*source, limits.clone());
        }
        self.record.events.extend(s.events.iter().cloned());
        for p in &s.points {
            self.push(s.t_s, p);
        }
    }

    /// The record.
    pub fn finish(self) -> MonitorRecord {
        self.record
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_checked_against_what_is_watched() {
        let mut plan = MonitorPlan::default();
        assert!(plan.records("load_average").is_ok());
        assert!(plan
            .records("process_open_fds")
            .unwrap_err()
            .to_string()
            .contains("--monitor-pid"));
        assert_eq!(
            plan.records("process_private_memory_bytes"),
            Err(MetricError::NoProcess("process_private_memory_bytes".into()))
        );
        assert!(plan
            .records("pg_tps")
            .unwrap_err()
            .to_string()
            .contains("--monitor-postgres"));
        let e = plan.records("latency").unwrap_err().to_string();
        assert!(
            e.contains("unknown metric \"latency\"") && e.contains("error_rate") && e.contains("load_average"),
            "{e}"
        );
        plan.processes.push(ProcessSpec {
            label: "x".into(),
            select: ProcessSelect::Pid(1),
        });
        assert!(plan.records("process_open_fds").is_ok());
        assert!(plan.records("process_private_memory_bytes").is_ok());
        plan.prometheus.push(PrometheusSpec {
            url: "http://127.0.0.1:1/metrics".into(),
            metrics: vec!["stream_.*".into()],
        });
        assert!(plan.records("stream_lag_seconds").is_ok());
        assert!(plan.records("rate(stream_rows_total)").is_ok());
        assert!(plan
            .records("other")
            .unwrap_err()
            .to_string()
            .contains("no Prometheus endpoint"));
        plan.host = false;
        assert!(plan
            .records("load_average")
            .unwrap_err()
            .to_string()
            .contains("host monitoring is off"));
    }

    #[test]
    fn keys_read_like_prometheus_series_and_match_by_subset() {
        let k = SeriesKey::new("process_open_fds").with("process", "target");
        assert_eq!(k.to_string(), r#"process_open_fds{process="target"}"#);
        assert!(k.matches("process_open_fds", &[]));
        assert!(k.matches("process_open_fds", &[("process".into(), "target".into())]));
        assert!(!k.matches("process_open_fds", &[("process".into(), "db".into())]));
        assert!(!k.matches("process_threads", &[]));
    }

    fn point(metric: &str, limit: Option<f64>, value: f64) -> MonitorPoint {
        MonitorPoint {
            key: SeriesKey::new(metric),
            source: 0,
            title: metric.into(),
            unit: Unit::Count,
            limit,
            value,
        }
    }

    #[test]
    fn samples_rebuild_the_record_they_came_from() {
        let opening = MonitorOpening {
            interval_s: 1.0,
            sources: vec![SourceRecord {
                kind: "process".into(),
                label: "db".into(),
                name: None,
                notes: Vec::new(),
                limits: None,
            }],
        };
        let now_7 = MonitorNote::NewPid {
            what: "pid 6".into(),
            pids: vec![7],
            at_s: 1.0,
        };
        let samples = [
            MonitorSample {
                t_s: 0.0,
                opening: Some(opening.clone()),
                points: vec![point("fds", None, 10.0)],
                ..Default::default()
            },
            MonitorSample {
                t_s: 1.0,
                opening: None,
                points: vec![point("fds", Some(1024.0), 12.0), point("threads", None, 4.0)],
                notes: vec![(0, now_7.clone())],
                ..Default::default()
            },
        ];
        let mut b = MonitorBuilder::default();
        for s in &samples {
            // Through the journal's text, as `crest report` reads them.
            let back: MonitorSample = serde_json::from_str(&serde_json::to_string(s).unwrap()).unwrap();
            b.apply(&back);
        }
        let r = b.finish();
        assert_eq!(r.interval_s, 1.0);
        assert_eq!(r.sources[0].notes, vec![now_7]);
        // A note of a journal written before notes were kept as figures reads as written.
        let old: MonitorSample = serde_json::from_str(r#"{"t_s":1.0,"notes":[[0,"now pid 7 at 1.0 s"]]}"#).unwrap();
        assert_eq!(old.notes, vec![(0, MonitorNote::Written("now pid 7 at 1.0 s".into()))]);
        assert_eq!(r.series.len(), 2);
        assert_eq!(r.series[0].points, vec![(0.0, 10.0), (1.0, 12.0)]);
        assert_eq!(r.series[0].limit, Some(1024.0));
        // A series first read in a later sample starts there.
        assert_eq!(r.series[1].points, vec![(1.0, 4.0)]);
    }
}
