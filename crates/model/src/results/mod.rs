//! The results document: `results.json` in every run directory.
//!
//! It is the one source every analysis and report is rendered from, so it holds measurements,
//! never conclusions: encoded histograms, counters and the per-interval series, plus the run's
//! configuration with secrets already redacted. The JSON Schema in `schema/results.schema.json`
//! is generated from these types and checked in tests.

mod check;
mod concat;
mod sums;

pub use concat::concat;
pub use sums::{IterationSum, StatSum};

use crate::reason::{FiguresOrWords, Miss, Probe, SearchEnd, StopReason};
use crate::{EncodedHistogram, Outcome};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The value of [`Results::schema`].
pub const SCHEMA_ID: &str = "crest.results";
/// The current version of the results format. Additive changes keep it; others bump it.
/// Version 2 keeps a step's kind (`segments[].kind`) where version 1 kept its words (`name`),
/// and the monitor's notes typed; a version 1 document is read as it is, its names taken for the
/// kinds they stand for.
pub const SCHEMA_VERSION: u32 = 2;
/// The oldest version of the results format this crest reads.
pub const OLDEST_SCHEMA_VERSION: u32 = 1;

/// Everything measured in one run.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Results {
    /// Always `crest.results`.
    pub schema: String,
    /// Format version; see [`SCHEMA_VERSION`].
    pub version: u32,
    /// The crest version that wrote the document.
    pub crest_version: String,
    /// When sending started, RFC 3339 in UTC.
    pub started_at: String,
    /// Seconds from the start of sending to the end of the last measured request.
    pub duration_s: f64,
    /// Why the run ended.
    pub ended_by: EndReason,
    /// The stop condition that ended the run, when one did.
    pub stopped_by: Option<StopRecord>,
    /// How the run was configured (secrets redacted).
    pub config: RunConfig,
    /// The machine crest ran on, when it was captured.
    #[serde(default)]
    pub environment: Option<Environment>,
    /// Request names; [`Stat::name`] refers to these.
    pub names: Vec<String>,
    /// For each name, the name it is a part of (a statement inside an SQL transaction). Parts
    /// are sub-measures: they are in `stats` under their own name but in no total, interval,
    /// step, status count or error class, which count each unit of work once. Empty when no
    /// name is a part.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub part_of: Vec<Option<u32>>,
    /// The scenario's flows by name, in the scenario's order; [`IterationStat::flow`] refers to
    /// these. Empty in quick mode, whose unit of work is the request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<String>,
    /// The run's steps, in time order; [`Stat::segment`] refers to these.
    pub segments: Vec<Segment>,
    /// Totals per request name and outcome.
    pub stats: Vec<Stat>,
    /// Iterations of each flow per step: a flow's iteration is the user's unit of work (a task
    /// submitted, polled until done and fetched), so its count, rate and duration are what a
    /// scenario's answers are given in. Requests stay in `stats` beside them. Empty in quick mode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub iterations: Vec<IterationStat>,
    /// Responses by HTTP status code, successes included.
    pub status_codes: BTreeMap<String, u64>,
    /// Failures by outcome, each with one example message.
    pub errors: Vec<ErrorClass>,
    /// Requests still in flight when the grace period ran out; they are not in `stats`.
    pub abandoned: u64,
    /// Open-model figures; absent for the closed model.
    pub open: Option<OpenStats>,
    /// One entry per interval of `interval_s` seconds, in order.
    pub intervals: Vec<Interval>,
    /// The capacity search, when the run was `crest find`: each segment is one probe.
    #[serde(default)]
    pub find: Option<FindRecord>,
    /// What crest itself used, to judge whether it limited the run.
    #[serde(default)]
    pub client: Option<ClientStats>,
    /// What the monitor sampled: processes, the host, Prometheus metrics, PostgreSQL.
    #[serde(default)]
    pub monitor: Option<crate::monitor::MonitorRecord>,
    /// Runs whose users each run a fixed number of iterations (`run_once`, threads x loops):
    /// how long each user took, the headline of a run that asks "how long until everyone is
    /// done".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<UserTimes>,
    /// The first failed requests one by one, at most [`FAILED_KEPT`] of them, in the order they
    /// ended: a run with a few failures lists each (when, which, how) rather than a rate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedRequest>,
    /// A small run's requests one by one, for a chart of each request's latency against its
    /// start: kept when the run made at most [`POINTS_KEPT`] requests (statements inside
    /// transactions included), sorted by start; empty past that.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<RequestPoint>,
    /// Length of each interval in seconds.
    pub interval_s: f64,
    /// A run merged from the parts several generators sent at once (`crest merge`): each
    /// worker's part as it measured it. Empty for a run of one generator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<crate::merge::WorkerRecord>,
}

/// At most this many failed requests are kept one by one; past it a run's failures are
/// described by their classes and clusters.
pub const FAILED_KEPT: usize = 20;

/// A run of at most this many requests keeps each one as a [`RequestPoint`]; past it, a chart
/// of them would be a smear and results.json would grow with the run, so none are kept.
pub const POINTS_KEPT: u64 = 10_000;

/// One request of a small run, as a chart plots it: `[start_us, latency_us, name, outcome]`.
/// An array rather than an object keeps 10,000 of them to about 300 KB of results.json.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct RequestPoint(
    /// When it was meant to start, µs from the start of the run (its latency counts from here).
    pub u64,
    /// Its latency, µs, from that start to its end.
    pub u64,
    /// Index into `names`.
    pub u32,
    /// How it ended.
    pub Outcome,
);

impl RequestPoint {
    /// When it was meant to start, µs from the start of the run.
    pub fn start_us(&self) -> u64 {
        self.0
    }
    /// Its latency, µs.
    pub fn latency_us(&self) -> u64 {
        self.1
    }
    /// Index into `names`.
    pub fn name(&self) -> u32 {
        self.2
    }
    /// How it ended.
    pub fn outcome(&self) -> Outcome {
        self.3
    }
}

/// One failed request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailedRequest {
    /// When it ended, seconds from the start of the run.
    pub at_s: f64,
    /// Index into `names`.
    pub name: u32,
    /// How it ended.
    pub outcome: Outcome,
    /// The HTTP status, when a response head arrived.
    pub status: Option<u16>,
    /// How long it took, ms (from its intended start).
    pub took_ms: f64,
    /// What went wrong, as the error classes' examples say it.
    pub detail: String,
}

/// How long each user of a run with a fixed number of iterations per user took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserTimes {
    /// Users that ran every one of their iterations.
    pub finished: u64,
    /// Users stopped before their last iteration (the run's stop rule, a signal, or
    /// `on_failure: stop_user`); their times are not in `duration`.
    pub cut_short: u64,
    /// Seconds from the start of the run to the first user's first iteration.
    pub first_start_s: f64,
    /// Seconds from the start of the run to the moment the last user finished.
    pub last_end_s: f64,
    /// Each finished user's time from its first iteration's start to its end, in µs.
    pub duration: EncodedHistogram,
}

impl Results {
    /// Seconds in which load was sent: the run's length less the gaps between the parts of a
    /// joined run (each part starts on a whole interval, so a part of 3.002 s takes 4 s of the
    /// timeline). Rates over the whole run divide by this, so a capacity search of three 3 s
    /// probes reports 9 s and its real rate, not 12 s and three quarters of it.
    pub fn active_s(&self) -> f64 {
        let gaps: f64 = self
            .segments
            .windows(2)
            .map(|w| (w[1].start_s - w[0].end_s).max(0.0))
            .chain(self.segments.last().map(|g| (self.duration_s - g.end_s).max(0.0)))
            .sum();
        (self.duration_s - gaps).max(0.0)
    }

    /// The name that `name` is a part of, if it is a sub-measure.
    pub fn parent(&self, name: u32) -> Option<u32> {
        self.part_of.get(name as usize).copied().flatten()
    }

    /// True when the stat counts as units of work (requests or transactions), false for a
    /// sub-measure such as a statement inside a transaction.
    pub fn counts(&self, s: &Stat) -> bool {
        self.parent(s.name).is_none()
    }
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The configured duration elapsed.
    Duration,
    /// The configured number of requests was sent.
    Requests,
    /// Interrupted by SIGINT (Ctrl-C).
    Sigint,
    /// Interrupted by SIGTERM.
    Sigterm,
    /// Every user finished its iterations (threads x loops, run once).
    Completed,
    /// A stop condition held; see [`Results::stopped_by`].
    Condition,
    /// The run stopped without finishing (killed, out of memory, a power cut): the document was
    /// rebuilt from its journal, and its last seconds are missing.
    Unfinished,
    /// A collector's worker whose collector was lost (killed, its machine gone, the connection
    /// cut): it stopped sending, since nothing it measured would reach the run, and kept its
    /// part as far as it went.
    CollectorLost,
}

impl EndReason {
    /// True when a signal ended the run early.
    pub fn interrupted(self) -> bool {
        matches!(self, EndReason::Sigint | EndReason::Sigterm)
    }

    /// True when the run holds only part of its test: a signal ended it, its last seconds were
    /// lost with it (rebuilt from its journal), or its collector was lost.
    pub fn partial(self) -> bool {
        self.interrupted() || matches!(self, EndReason::Unfinished | EndReason::CollectorLost)
    }
}

/// The run's configuration as it may be shown: every secret is already redacted.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// The command line, redacted.
    pub command_line: Vec<String>,
    /// `closed` or `open`.
    pub model: LoadKind,
    /// Virtual users (closed model) or the cap on requests in flight (open model).
    pub concurrency: u64,
    /// Arrivals per second asked for (open model).
    pub rate: Option<f64>,
    /// Open model: what an arrival that found the cap on requests in flight reached did.
    /// Absent in the closed model and in documents written before it was recorded (which
    /// dropped them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_cap: Option<crate::plan::OnCap>,
    /// Requests to send, when limited by count.
    pub requests: Option<u64>,
    /// Iterations each user runs, when limited (threads x loops).
    pub iterations: Option<u64>,
    /// Seconds to send for, when limited by time.
    pub duration_s: Option<f64>,
    /// Engine threads.
    pub threads: u64,
    /// The part of a run spread over several generators that this run sent: the figures above
    /// are the whole run's, the measurements this worker's. Absent for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<crate::plan::Shard>,
    /// The HTTP request, in quick mode.
    pub http: Option<HttpConfig>,
    /// The scenario file, when the run came from one.
    pub scenario: Option<ScenarioConfig>,
    /// Thresholds checked at the end, as written.
    pub thresholds: Vec<crate::expr::Threshold>,
    /// Stop conditions evaluated during the run, as written.
    pub stop_conditions: Vec<crate::expr::StopCondition>,
    /// Which test the run belongs to and which build it measured: what a history of runs is
    /// grouped and ordered by. Absent when nothing named it and no git checkout was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

/// The test a run belongs to (`--label`, or a scenario's `label:`) and the build it measured:
/// the git commit and branch of the directory crest ran in, and the tags given with `--tag`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// The test's name: runs with the same label are runs of the same test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The commit checked out where crest ran, in full hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The branch checked out there, when not detached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Whether the checkout had changes not committed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty: Option<bool>,
    /// `--tag key=value` pairs (secrets redacted).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

/// The longest label a run may have: it heads a table and names a group of runs.
pub const MAX_LABEL: usize = 200;

impl Provenance {
    /// What is wrong with `label` as a run's label, if anything: empty, too long, or holding
    /// control characters (it is shown on a terminal and in file names' company).
    pub fn label_problem(label: &str) -> Option<String> {
        if label.trim().is_empty() {
            Some("a label cannot be empty".into())
        } else if label.chars().count() > MAX_LABEL {
            Some(format!("a label has at most {MAX_LABEL} characters"))
        } else if label.chars().any(char::is_control) {
            Some("a label cannot hold control characters (a newline, a tab...)".into())
        } else {
            None
        }
    }

    /// A tag as written, `key=value`: the key non-empty and both free of control characters.
    /// The value is kept as written; [`Provenance::tags`] holds it redacted.
    pub fn parse_tag(tag: &str) -> Result<(String, String), String> {
        let Some((key, value)) = tag.split_once('=') else {
            return Err(format!("{tag:?} is not key=value"));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("{tag:?}: the key before = cannot be empty"));
        }
        if tag.chars().any(char::is_control) {
            return Err("a tag cannot hold control characters".into());
        }
        if key.chars().count() > MAX_LABEL || value.chars().count() > MAX_LABEL {
            return Err(format!(
                "a tag's key and value have at most {MAX_LABEL} characters each"
            ));
        }
        Ok((key.to_string(), value.to_string()))
    }
}

/// The load generator's own use of the machine during the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientStats {
    /// CPU seconds crest used (user and system) while sending.
    pub cpu_s: f64,
    /// Logical CPUs crest could use.
    pub cores: u64,
    /// Engine threads.
    pub threads: u64,
    /// Peak resident memory in bytes.
    pub peak_rss_bytes: u64,
    /// Seconds the engine threads, together, were ready to run while sending but waited for a
    /// CPU core that other threads held: other processes', the kernel's, or crest's own (its
    /// journal, or more engine threads than cores). The kernel's account; Linux only. Arrivals
    /// due in that time could not leave: it tells time taken from the engine from time the
    /// engine spent on its own work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_wait_s: Option<f64>,
    /// The CPU quota of crest's cgroup, in cores, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_quota_cores: Option<f64>,
}

/// The load model: `closed` (a fixed number of users, each sending after the last answer) or
/// `open` (arrivals at a rate, whatever the answers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoadKind {
    /// Users.
    Closed,
    /// Arrivals per second.
    Open,
}

impl LoadKind {
    /// `open` when `open` is true, else `closed`.
    pub fn of(open: bool) -> LoadKind {
        if open {
            LoadKind::Open
        } else {
            LoadKind::Closed
        }
    }

    /// True for the open model.
    pub fn is_open(self) -> bool {
        self == LoadKind::Open
    }
}

/// A capacity search: the probes it made and why it stopped.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindRecord {
    /// `closed` (levels are users) or `open` (levels are arrivals per second).
    pub model: LoadKind,
    /// The service level each probe had to meet, as written.
    pub slo: Vec<String>,
    /// The probes, in the order they ran; probe `i` is segment `i`.
    pub probes: Vec<ProbeRecord>,
    /// What the probes' throughputs (`success_rps`) count: the run's unit of work. Documents
    /// written before the search judged in it counted requests.
    #[serde(default)]
    pub unit: crate::reason::WorkUnit,
    /// Why the search ended; absent in documents written before it was kept as figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<SearchEnd>,
    /// Why the search ended, in words, as documents before `ended` kept it; read, never
    /// written.
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub stopped_because: Option<String>,
}

impl FindRecord {
    /// Why the search ended.
    pub fn why_ended(&self) -> Option<FiguresOrWords<&SearchEnd>> {
        FiguresOrWords::of(self.ended.as_ref(), self.stopped_because.as_ref())
    }
}

/// One probe of a capacity search.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeRecord {
    /// Users or arrivals per second.
    pub level: f64,
    /// Whether it met the service level.
    pub passed: bool,
    /// What the probe measured; absent in documents written before it was kept as figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Probe>,
    /// How it missed the service level, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miss: Option<Miss>,
    /// What the probe showed, in words, as documents before `measured` kept it; read, never
    /// written.
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub verdict: Option<String>,
}

/// The machine crest ran on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// Operating system, e.g. `Debian GNU/Linux 12 (bookworm)`.
    pub os: String,
    /// Kernel release.
    pub kernel: String,
    /// CPU model name.
    pub cpu: String,
    /// Logical CPUs available to crest.
    pub cores: u64,
    /// Total memory in bytes.
    pub memory_bytes: u64,
}

/// Where a scenario came from.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioConfig {
    /// The file as given on the command line.
    pub path: String,
    /// SHA-256 of its contents, hex.
    pub sha256: String,
    /// Flows with their weights.
    pub flows: Vec<(String, u32)>,
    /// The names gRPC calls are recorded under: their outcomes are read as gRPC statuses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grpc: Vec<String>,
}

/// One step of the run.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Segment {
    /// What the step is: the whole run, a level, a ramp, a spike; reports put it in words.
    /// Documents written before it was kept carry the step's words as `name`, read back as the
    /// kind they stand for.
    #[serde(alias = "name")]
    pub kind: crate::step::StepKind,
    /// Start, in seconds from the start of the run.
    pub start_s: f64,
    /// End, in seconds from the start of the run (the last one ends with the run).
    pub end_s: f64,
    /// Users at the segment's level (closed model).
    pub users: Option<u64>,
    /// Arrivals per second at the segment's level (open model).
    pub rate: Option<f64>,
    /// The setup command a sweep ran before this point, and how it went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<SetupRecord>,
}

/// A sweep's setup command for one point (loading data, restarting a service): its time is
/// part of what the point costs, as a "refresh job" column in a hand-written study.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetupRecord {
    /// Wall time from start to exit, seconds.
    pub duration_s: f64,
    /// Its exit code; `None` when a signal ended it.
    pub exit_code: Option<i32>,
}

/// A stop condition that ended the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopRecord {
    /// The condition, as written: the rule's id among `config.stop_conditions`.
    pub condition: String,
    /// When it held, in seconds from the start of the run.
    pub at_s: f64,
    /// The figures that made it hold; absent in documents written before they were kept as
    /// figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saw: Option<StopReason>,
    /// The figures in words, as documents before `saw` kept them; read, never written.
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub detail: Option<String>,
}

impl StopRecord {
    /// What the condition saw.
    pub fn what_held(&self) -> Option<FiguresOrWords<&StopReason>> {
        FiguresOrWords::of(self.saw.as_ref(), self.detail.as_ref())
    }
}

impl ProbeRecord {
    /// What the probe measured and how it fared.
    pub fn how_it_fared(&self) -> Option<FiguresOrWords<(&Probe, Option<&Miss>)>> {
        FiguresOrWords::of(
            self.measured.as_ref().map(|p| (p, self.miss.as_ref())),
            self.verdict.as_ref(),
        )
    }
}

/// The repeated HTTP request, redacted.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// Method.
    pub method: String,
    /// URL, with passwords and secret parameters redacted.
    pub url: String,
    /// Headers as name and value; secret values are redacted.
    pub headers: Vec<(String, String)>,
    /// Size of the request body in bytes.
    pub body_bytes: u64,
    /// Request timeout in seconds.
    pub timeout_s: f64,
    /// Whether connections were reused.
    pub keepalive: bool,
    /// Whether certificate checks were disabled.
    pub insecure: bool,
}

/// Totals for one request name and one outcome.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stat {
    /// Index into [`Results::segments`].
    pub segment: u32,
    /// Index into [`Results::names`].
    pub name: u32,
    /// How these requests ended.
    pub outcome: Outcome,
    /// Number of requests.
    pub count: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Messages these requests sent on a message stream (WebSocket, gRPC); absent
    /// for requests and responses.
    #[serde(default, skip_serializing_if = "crate::results::is_zero")]
    pub messages_sent: u64,
    /// Messages these requests read from a message stream (WebSocket, server-sent
    /// events, gRPC); absent for requests and responses.
    #[serde(default, skip_serializing_if = "crate::results::is_zero")]
    pub messages_received: u64,
    /// Total time in µs, from the intended start (see the sample documentation).
    pub latency: EncodedHistogram,
    /// Time to first byte in µs; absent when no response byte arrived.
    pub ttfb: Option<EncodedHistogram>,
    /// Connect time in µs for requests that opened a connection; absent when none did.
    pub connect: Option<EncodedHistogram>,
    /// Name resolution time in µs for requests whose new connection resolved the host
    /// (`--dns-per-connection`), failed resolutions included; absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<EncodedHistogram>,
    /// Bytes received per request (status line, headers and body), as a histogram of byte
    /// counts rather than µs; absent in documents from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<EncodedHistogram>,
}

/// The iterations of one flow in one step. An iteration belongs to the step it started in, as
/// its requests do.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IterationStat {
    /// Index into [`Results::segments`].
    pub segment: u32,
    /// Index into [`Results::flows`].
    pub flow: u32,
    /// Iterations that started.
    pub started: u64,
    /// Iterations that ran to their end with every step passing.
    pub completed: u64,
    /// Iterations that ended with a failed request, check or statement. Iterations still
    /// running when the run ended are neither completed nor failed.
    pub failed: u64,
    /// Time of each completed iteration in µs, from its intended start to its last step's end
    /// (think time inside the flow included): a task's time from submit to done to result.
    pub duration: EncodedHistogram,
    /// The same for failed iterations; absent when none failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_duration: Option<EncodedHistogram>,
}

/// A flow's iterations in one interval: each counted in the interval it started or ended in.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntervalIterations {
    /// Iterations that started in the interval.
    pub started: u64,
    /// Iterations that completed in the interval.
    pub completed: u64,
    /// Iterations that failed in the interval.
    pub failed: u64,
    /// Time of the iterations that ended in the interval, completed and failed, in µs.
    pub duration: EncodedHistogram,
}

/// All failures of one outcome.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorClass {
    /// The outcome.
    pub outcome: Outcome,
    /// How many requests ended this way.
    pub count: u64,
    /// The first error message seen for it.
    pub example: String,
}

/// Figures of the open model.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenStats {
    /// Arrivals per second asked for.
    pub target_rps: f64,
    /// Arrivals due on the schedule while sending.
    pub arrivals: u64,
    /// Arrivals not sent: because the cap on requests in flight was reached, or [`Self::behind`].
    pub dropped: u64,
    /// Of the dropped, arrivals whose slots came before the deadline but that crest, behind its
    /// schedule when the run's time ran out, never reached.
    #[serde(default, skip_serializing_if = "crate::results::is_zero")]
    pub behind: u64,
    /// With `on_cap: queue`: arrivals that found the cap reached and waited for a place, then
    /// were sent. Their wait is part of their send lag and latency. Those still waiting when
    /// the run's time ran out were not sent: they are among [`Self::behind`].
    #[serde(default, skip_serializing_if = "crate::results::is_zero")]
    pub queued: u64,
    /// How late requests started compared with the schedule, in µs.
    pub send_lag: EncodedHistogram,
    /// Service time in µs: each request's total time less its send lag, i.e. from the moment
    /// it was actually sent. Absent in documents written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<EncodedHistogram>,
}

/// One interval of the time series. Requests count in the interval in which they ended.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Interval {
    /// Start of the interval in seconds from the start of the run.
    pub t_s: f64,
    /// Requests that ended in this interval.
    pub requests: u64,
    /// Of those, the ones that failed.
    pub failures: u64,
    /// Bytes sent by requests that ended in this interval.
    pub bytes_sent: u64,
    /// Bytes received by requests that ended in this interval.
    pub bytes_received: u64,
    /// Messages sent on message streams by requests that ended in this interval.
    #[serde(default, skip_serializing_if = "crate::results::is_zero")]
    pub messages_sent: u64,
    /// Messages read from message streams by requests that ended in this interval: a stream's
    /// events per second.
    #[serde(default, skip_serializing_if = "crate::results::is_zero")]
    pub messages_received: u64,
    /// Open-model arrivals dropped in this interval.
    pub dropped: u64,
    /// Failures by outcome key.
    pub outcomes: BTreeMap<String, u64>,
    /// Total time of the requests that ended in this interval, in µs.
    pub latency: EncodedHistogram,
    /// Time to first byte of the requests that ended in this interval, in µs.
    pub ttfb: EncodedHistogram,
    /// Iterations of the scenario's flows, all flows together; absent in quick mode and in
    /// intervals where no iteration started or ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<IntervalIterations>,
}

/// A document could not be read as a results document of this version.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// It is not JSON, or not of the document's shape.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// It is some other JSON document.
    #[error("its schema is {0:?}, not {SCHEMA_ID:?}")]
    Schema(String),
    /// It was written in another version of the format.
    #[error("it is version {0} of the results format; this crest reads versions {OLDEST_SCHEMA_VERSION} to {SCHEMA_VERSION}")]
    Version(u64),
    /// Its fields do not hold together (a time that is negative, an index past its list).
    #[error(transparent)]
    Invalid(#[from] Invalid),
}

/// A field of a results document that does not hold together with the rest: the field's path
/// and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} {problem}")]
pub struct Invalid {
    /// Where: `intervals[3].t_s`, `part_of`, `stats' counts`.
    pub field: String,
    /// What, with the value found.
    pub problem: String,
}

impl Invalid {
    fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Invalid {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// Reads a results document, refusing another schema or version before reading its fields, so
/// a document of a later crest is refused by name rather than misread.
pub fn parse(text: &str) -> Result<Results, ParseError> {
    if text.len() as u64 > crate::input::MAX_RESULTS {
        return Err(ParseError::Invalid(Invalid::new(
            "the document",
            crate::input::ReadError::TooLarge(crate::input::MAX_RESULTS).to_string(),
        )));
    }
    let v: serde_json::Value = serde_json::from_str(text)?;
    match v.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA_ID) => {}
        other => return Err(ParseError::Schema(other.unwrap_or("missing").to_string())),
    }
    match v.get("version").and_then(serde_json::Value::as_u64) {
        Some(n) if (u64::from(OLDEST_SCHEMA_VERSION)..=u64::from(SCHEMA_VERSION)).contains(&n) => {}
        other => return Err(ParseError::Version(other.unwrap_or(0))),
    }
    let r: Results = serde_json::from_value(v)?;
    r.check()?;
    Ok(r)
}

/// The steps a run of `duration_s` seconds reached, with their end times: each ends where the
/// next starts, the last with the run. Steps the run never reached (it stopped early) are left
/// out: they hold no request, and a row of zeros would read as a measured step. Starts only
/// grow, so the steps kept keep their indices.
pub fn reached_segments(planned: &[Segment], duration_s: f64) -> Vec<Segment> {
    planned
        .iter()
        .enumerate()
        .take_while(|(i, s)| *i == 0 || s.start_s < duration_s)
        .map(|(i, s)| Segment {
            start_s: s.start_s.min(duration_s),
            end_s: planned.get(i + 1).map_or(duration_s, |n| n.start_s).min(duration_s),
            ..s.clone()
        })
        .collect()
}

/// The JSON Schema of the results document, as generated from these types.
pub fn json_schema() -> serde_json::Value {
    let schema = schemars::schema_for!(Results);
    serde_json::to_value(schema).unwrap_or(serde_json::Value::Null)
}

/// Leaves a count of nothing out of the document, as documents written before it was counted.
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}
