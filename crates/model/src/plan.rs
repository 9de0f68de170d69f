//! The validated plan: everything the engine needs to know, and nothing about where it came from.
//!
//! Every front end (quick-mode flags, a scenario file, `crest find`, `crest sweep`, the demo)
//! fills a [`Draft`] with what it was given and nothing more: its load shape, its target, and its
//! settings each marked with the flag or the place in the file it came from; a setting not given
//! is `None`. Flags may then add to a scenario's draft. One function, [`Draft::resolve`],
//! applies every rule that spans settings and every default in [`defaults`], once for every
//! front end (as ripgrep's `HiArgs::from_low_args` does), and gives the [`Plan`] the engine runs.
//! The load model and the stop rule are independent values, so one executor serves every
//! combination of them.

use crate::expr::{StopCondition, Threshold};
use crate::monitor::MonitorPlan;
use crate::protocol::{HttpOptions, HttpVersion, Network};
use crate::step::StepKind;
use std::time::Duration;

mod bounds;
pub mod defaults;
mod problem;
mod resolve;

pub use bounds::{
    duration_problem, rate_problem, users_problem, BoundError, MAX_DURATION, MAX_RATE, MAX_USERS, MIN_RATE,
};
pub use problem::{DraftProblem, PlanError, PlanProblem};

/// Where a setting of a [`Draft`] came from, so that a problem with it names the flag, or the
/// file, line and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A command-line flag, e.g. `--threads`.
    Flag(&'static str),
    /// A key of a scenario file, and where its value stands (line and column from 1).
    File {
        /// The file as given.
        file: String,
        /// The key, e.g. `thresholds`.
        key: &'static str,
        /// Line and column, when known.
        at: Option<(usize, usize)>,
    },
}

/// A setting and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Given<T> {
    /// The setting.
    pub value: T,
    /// Where it came from.
    pub origin: Origin,
}

/// A plan as a front end was given it, before [`Draft::resolve`] makes it a [`Plan`]. Each
/// front end checks what only it can read (a flag's syntax, a key's type, a duration above 0);
/// the rules between settings and the defaults are [`Draft::resolve`]'s alone.
#[derive(Clone, Debug)]
pub struct Draft {
    /// The load shape, its defaults not yet filled.
    pub load: LoadDraft,
    /// See [`Plan::stop`]; a run given no end lasts [`defaults::DURATION`].
    pub stop: StopRule,
    /// See [`Plan::names`].
    pub names: Vec<String>,
    /// See [`Plan::part_of`].
    pub part_of: Vec<Option<u32>>,
    /// See [`Plan::segments`].
    pub segments: Vec<SegmentPlan>,
    /// See [`Plan::target`].
    pub target: Target,
    /// How requests are limited and connections made.
    pub connection: ConnectionDraft,
    /// Engine threads asked for; [`defaults::threads`] otherwise.
    pub threads: Option<Given<usize>>,
    /// This process's part of a run spread over several generators; the whole run otherwise.
    pub shard: Option<Given<Shard>>,
    /// The parts are gathered as they run by a collector (`crest collect`), which judges stop
    /// conditions and thresholds on the merged whole, so a part may carry them.
    pub collected: bool,
    /// See [`Plan::thresholds`].
    pub thresholds: Vec<Given<Threshold>>,
    /// See [`Plan::stop_when`].
    pub stop_when: Vec<Given<StopCondition>>,
    /// See [`Plan::monitor`]; its interval is the one below.
    pub monitor: MonitorPlan,
    /// Time between monitor samples; [`defaults::MONITOR_INTERVAL`] when not given, and at
    /// least [`defaults::MIN_MONITOR_INTERVAL`].
    pub monitor_interval: Option<Given<Duration>>,
    /// See [`Plan::log_requests`].
    pub log_requests: bool,
    /// Open model: what an arrival that finds the cap reached does; [`OnCap::Drop`] when not
    /// given, and only with the open model.
    pub on_cap: Option<Given<OnCap>>,
    /// The shape a scenario file gave the load, and where: the run's load flags may replace a
    /// constant load, and must name a profile they can't. None for a load made from flags.
    pub shape: Option<Given<LoadShape>>,
    /// See [`Plan::provenance`]: a scenario's `label:`, then the flags' label, tags and the
    /// git checkout over it.
    pub provenance: crate::results::Provenance,
}

/// The shape of a scenario's `load:`, by what the run's flags may do to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadShape {
    /// `users` or `rate`, the load quick mode's flags describe: `-c`, `--rate`, `-n` and `-d`
    /// replace it as they would set it.
    Constant,
    /// A profile that lasts as long as its stages (`stages`, `stepping`, `spike`,
    /// `rate_stages`), by its key: a duration can end it sooner but not lengthen it.
    Staged(&'static str),
    /// A profile whose users each run a number of loops (`threads`, `run_once`), by its key:
    /// it ends when they are done, which a duration can only bring forward.
    Loops(&'static str),
}

/// The load as given: the shape checked by its front end, the defaults not yet filled.
#[derive(Clone, Debug, PartialEq)]
pub enum LoadDraft {
    /// See [`LoadModel::Closed`].
    Closed {
        /// Users over time; [`defaults::USERS`] throughout when not given.
        users: Option<UsersProfile>,
        /// See [`LoadModel::Closed`].
        iterations: Option<u64>,
    },
    /// See [`LoadModel::Open`].
    Open {
        /// See [`LoadModel::Open`].
        rate: RateProfile,
        /// The most in flight; [`defaults::MAX_IN_FLIGHT`] when not given.
        max_in_flight: Option<u64>,
    },
    /// Steered by hand (`--load manual`): no users until the live page or its API sets them,
    /// as one step, [`StepKind::Manual`]; with no duration given, the run lasts until it is stopped.
    Manual,
}

impl LoadDraft {
    /// A fixed number of users with no iteration limit.
    pub fn users(n: u64) -> Self {
        LoadDraft::Closed {
            users: Some(UsersProfile::constant(n)),
            iterations: None,
        }
    }

    /// A constant arrival rate, with the cap in flight if one is given.
    pub fn rate(rate: f64, max_in_flight: Option<u64>) -> Self {
        LoadDraft::Open {
            rate: RateProfile::constant(rate),
            max_in_flight,
        }
    }

    /// The most users this shape may have at once, when it gives them.
    pub fn max_users(&self) -> Option<u64> {
        match self {
            LoadDraft::Closed { users, .. } => Some(users.as_ref().map_or(defaults::USERS, UsersProfile::max)),
            LoadDraft::Open { .. } | LoadDraft::Manual => None,
        }
    }
}

/// How requests are limited and connections made, as given: quick mode's request flags, or a
/// scenario's `defaults:`. Each front end fills it; [`Draft::resolve`] alone applies the rules
/// and defaults, so the same settings give the same [`Connection`] whichever way they came.
#[derive(Clone, Debug, Default)]
pub struct ConnectionDraft {
    /// Limit on one request; [`defaults::TIMEOUT`] when not given.
    pub timeout: Option<Given<Duration>>,
    /// Limit on connecting; [`defaults::CONNECT_TIMEOUT`] when not given, and never above the
    /// request's timeout.
    pub connect_timeout: Option<Given<Duration>>,
    /// The HTTP version; HTTP/1.1 when not given.
    pub version: Option<HttpVersion>,
    /// HTTP/2: users per connection. Only with HTTP/2 or auto, and at least 1.
    pub max_streams: Option<Given<u32>>,
    /// Redirects followed; none when not given.
    pub redirects: Option<u32>,
    /// Ask for compressed responses; no when not given.
    pub compression: Option<bool>,
    /// Keep cookies per user: by default a scenario's users do, as browsers do, and quick
    /// mode's repeated request does not.
    pub cookies: Option<bool>,
    /// Reuse connections; yes when not given.
    pub keepalive: Option<bool>,
    /// How TLS servers are verified.
    pub tls: TlsOptions,
    /// Proxies and address overrides (the environment's proxies already read in).
    pub network: Network,
}

/// How requests are limited and connections made, resolved: the same for quick mode's request
/// and for every request of a scenario.
#[derive(Clone, Debug)]
pub struct Connection {
    /// Limit on one request, from its start until the response body is complete.
    pub timeout: Duration,
    /// Limit on establishing a connection.
    pub connect_timeout: Duration,
    /// Reuse connections between requests.
    pub keepalive: bool,
    /// How the server's certificate is checked.
    pub tls: TlsOptions,
    /// The HTTP version and client features.
    pub http: HttpOptions,
    /// Proxies and address overrides.
    pub network: Box<Network>,
}

/// The method of a request that gives none: POST when it has a body, GET otherwise, as curl
/// does. Written once for quick mode's request and a scenario's steps.
pub fn method(given: Option<&str>, has_body: bool) -> String {
    match given {
        Some(m) => m.to_ascii_uppercase(),
        None if has_body => "POST".into(),
        None => "GET".into(),
    }
}

/// One generator's part of a run spread over `count` of them (`--workers N --worker-index I`).
///
/// Everything is split so that the parts add up to the whole exactly, with nothing said between
/// the workers: an engine thread is one lane of `count` x threads, and lane `index + count * k`
/// (thread `k` of worker `index`) takes every user, arrival and request whose number is its
/// lane modulo the lanes. Users and the cap in flight are shared as [`share`] says (the
/// remainder spread one each over the first lanes), arrival `i` of the schedule goes to worker
/// `i mod count`, and user ids are distinct across workers, so a `unique` feeder's row is used
/// by one worker only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Shard {
    /// This worker, from 0.
    pub index: u32,
    /// Workers in the run.
    pub count: u32,
}

impl Shard {
    /// The whole run on one generator.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Lane of this worker's engine thread `k` of `threads`, and the lanes of the whole run.
    pub fn lane(&self, k: usize, threads: usize) -> (usize, usize) {
        let n = self.count.max(1) as usize;
        (self.index as usize + n * k, n * threads)
    }

    /// This worker's part of `total` (requests of a count-limited run).
    pub fn share(&self, total: u64) -> u64 {
        share(total, self.index as usize, self.count.max(1) as usize)
    }
}

/// Splits `total` as evenly as possible over `n`: part `k` gets this much, and the parts add up
/// to `total` (the first `total mod n` get one more).
pub fn share(total: u64, k: usize, n: usize) -> u64 {
    let n = n.max(1) as u64;
    total / n + u64::from((k as u64) < total % n)
}

/// A validated run, ready for the engine. Made only by [`Draft::resolve`] and read-only after
/// it, so that every rule the resolver applies holds for the whole run: a run of several loads
/// resolves each from its draft ([`Draft::at`]).
#[derive(Clone, Debug)]
pub struct Plan {
    // Each is described by its accessor below.
    load: LoadModel,
    stop: StopRule,
    names: Vec<String>,
    part_of: Vec<Option<u32>>,
    segments: Vec<SegmentPlan>,
    threads: usize,
    shard: Option<Shard>,
    grace: Duration,
    target: Target,
    connection: Connection,
    stop_when: Vec<StopCondition>,
    thresholds: Vec<Threshold>,
    monitor: crate::monitor::MonitorPlan,
    log_requests: bool,
    provenance: Option<crate::results::Provenance>,
}

impl Plan {
    /// How load is generated.
    pub fn load(&self) -> &LoadModel {
        &self.load
    }

    /// When the run ends (whichever comes first).
    pub fn stop(&self) -> StopRule {
        self.stop
    }

    /// Names that statistics are grouped under; samples refer to them by index.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// For each name, the name it is a part of: a statement of an SQL transaction is measured
    /// on its own, but the unit of work is the transaction. Empty when every name is a request
    /// of its own.
    pub fn part_of(&self) -> &[Option<u32>] {
        &self.part_of
    }

    /// The run's steps, in time order; statistics are kept per segment. At least one.
    pub fn segments(&self) -> &[SegmentPlan] {
        &self.segments
    }

    /// Engine threads (each a single-threaded event loop). Defaults to the number of cores.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// This process's part of a run spread over several generators: given (`--workers`, a
    /// collector's worker) even when it is the only part, so that its results say they are a
    /// part, to be merged; None for a run of its own.
    pub fn shard(&self) -> Option<Shard> {
        self.shard
    }

    /// How long requests still in flight may finish after sending stops.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// What is sent.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// How requests are limited and connections made: quick mode's request and every request
    /// of a scenario alike.
    pub fn connection(&self) -> &Connection {
        &self.connection
    }

    /// Conditions checked every interval that end the run early.
    pub fn stop_when(&self) -> &[StopCondition] {
        &self.stop_when
    }

    /// Conditions checked at the end.
    pub fn thresholds(&self) -> &[Threshold] {
        &self.thresholds
    }

    /// What is sampled while the load runs.
    pub fn monitor(&self) -> &crate::monitor::MonitorPlan {
        &self.monitor
    }

    /// Write every request as a row of the run's request log (`--log-requests`,
    /// `log_requests: true`), beside its journal.
    pub fn log_requests(&self) -> bool {
        self.log_requests
    }

    /// Which test the run belongs to and which build it measured; None when nothing was given
    /// or found.
    pub fn provenance(&self) -> Option<&crate::results::Provenance> {
        self.provenance.as_ref()
    }

    /// This process's part of the run: the whole when it is not spread.
    pub fn part(&self) -> Shard {
        self.shard.unwrap_or(Shard::WHOLE)
    }
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
        /// The most iterations in flight at once; an arrival beyond it does as `on_cap` says.
        max_in_flight: u64,
        /// What an arrival that finds `max_in_flight` reached does.
        on_cap: OnCap,
    },
}

/// What an open-model arrival that finds the cap on iterations in flight reached does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnCap {
    /// It is not sent, and is counted as dropped.
    #[default]
    Drop,
    /// It waits, after those that came before it, until an iteration in flight ends, and is
    /// then sent; its latency still counts from its slot on the schedule, so the wait shows in
    /// the latency and the send lag (as pgbench -R queues its transactions).
    Queue,
}

impl OnCap {
    /// As a flag or a scenario writes it.
    pub fn parse(s: &str) -> Option<OnCap> {
        match s {
            "drop" => Some(OnCap::Drop),
            "queue" => Some(OnCap::Queue),
            _ => None,
        }
    }
}

impl LoadModel {
    /// A fixed number of users with no iteration limit.
    pub fn users(n: u64) -> Self {
        LoadModel::Closed {
            users: UsersProfile::constant(n),
            iterations: None,
        }
    }

    /// A constant arrival rate; arrivals at the cap are dropped.
    pub fn rate(rate: f64, max_in_flight: u64) -> Self {
        LoadModel::Open {
            rate: RateProfile::constant(rate),
            max_in_flight,
            on_cap: OnCap::Drop,
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
    /// What the step is: the whole run, a level, a ramp, a spike; put in words by reports.
    pub kind: StepKind,
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
            kind: StepKind::Run,
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
    /// The names gRPC calls are recorded under.
    pub grpc: Vec<String>,
}

/// One HTTP request, repeated for the whole run; how it is sent is the plan's [`Connection`].
#[derive(Clone, Debug)]
pub struct HttpRequest {
    /// The method, e.g. `GET` (see [`method`]).
    pub method: String,
    /// The absolute URL (`http` or `https`).
    pub url: String,
    /// Extra headers, in order. Values may be secrets: redact before showing them.
    pub headers: Vec<(String, String)>,
    /// The request body, possibly empty.
    pub body: Vec<u8>,
}

/// How TLS servers are verified, and how crest proves itself to those that ask.
#[derive(Clone, Default)]
pub struct TlsOptions {
    /// Accept any certificate (self-signed test servers).
    pub insecure: bool,
    /// PEM bytes of extra trusted CA certificates.
    pub ca_pem: Option<Vec<u8>>,
    /// A client certificate chain and its private key (PEM), for servers that require mutual
    /// TLS. The key is a secret: never show it.
    pub client_pem: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The client key is left out: it is a secret.
        f.debug_struct("TlsOptions")
            .field("insecure", &self.insecure)
            .field("ca_pem", &self.ca_pem.is_some())
            .field("client_pem", &self.client_pem.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft(load: LoadDraft, stop: StopRule) -> Draft {
        Draft {
            load,
            stop,
            names: vec!["GET /".into()],
            part_of: Vec::new(),
            segments: vec![SegmentPlan::whole_run()],
            target: Target::Http(HttpRequest {
                method: method(None, false),
                url: "http://127.0.0.1:9/".into(),
                headers: Vec::new(),
                body: Vec::new(),
            }),
            connection: ConnectionDraft::default(),
            threads: None,
            shard: None,
            collected: false,
            thresholds: Vec::new(),
            stop_when: Vec::new(),
            monitor: MonitorPlan::default(),
            monitor_interval: None,
            log_requests: false,
            on_cap: None,
            shape: None,
            provenance: Default::default(),
        }
    }

    #[test]
    fn a_run_given_no_end_lasts_the_default_and_the_load_gets_its_defaults() {
        let ten = Some(defaults::DURATION);
        let closed = LoadDraft::Closed {
            users: None,
            iterations: None,
        };
        let p = draft(closed, StopRule::default()).resolve().unwrap();
        assert_eq!((p.load, p.stop.duration), (LoadModel::users(defaults::USERS), ten));
        let p = draft(LoadDraft::rate(5.0, None), StopRule::default())
            .resolve()
            .unwrap();
        assert_eq!(
            (p.load, p.stop.duration),
            (LoadModel::rate(5.0, defaults::MAX_IN_FLIGHT), ten)
        );
        // Each user's own count is an end; so is a number of requests.
        let counted = LoadDraft::Closed {
            users: None,
            iterations: Some(3),
        };
        assert_eq!(
            draft(counted, StopRule::default()).resolve().unwrap().stop.duration,
            None
        );
        let n = StopRule {
            requests: Some(5),
            duration: None,
        };
        assert_eq!(draft(LoadDraft::users(2), n).resolve().unwrap().stop, n);
    }

    /// Queueing at the cap is asked of the open model alone, and resolved into its load.
    #[test]
    fn on_cap_is_the_open_models_and_drops_unless_asked_to_queue() {
        let queue = |origin| {
            Some(Given {
                value: OnCap::Queue,
                origin,
            })
        };
        let mut d = draft(LoadDraft::rate(5.0, Some(2)), StopRule::default());
        assert!(matches!(
            d.clone().resolve().unwrap().load,
            LoadModel::Open {
                on_cap: OnCap::Drop,
                ..
            }
        ));
        d.on_cap = queue(Origin::Flag("--on-cap"));
        assert!(matches!(
            d.resolve().unwrap().load,
            LoadModel::Open {
                on_cap: OnCap::Queue,
                max_in_flight: 2,
                ..
            }
        ));
        let mut d = draft(LoadDraft::users(2), StopRule::default());
        d.on_cap = queue(Origin::File {
            file: "s.yaml".into(),
            key: "load: on_cap",
            at: Some((4, 12)),
        });
        assert_eq!(
            d.resolve().unwrap_err().to_string(),
            "s.yaml:4:12: load: on_cap: applies to the open model only (a rate of arrivals), whose arrivals can find the cap on requests in flight reached"
        );
    }

    #[test]
    fn every_problem_of_a_draft_is_named_by_its_origin() {
        let mut d = draft(LoadDraft::users(1), StopRule::default());
        d.threads = Some(Given {
            value: 0,
            origin: Origin::Flag("--threads"),
        });
        d.connection.max_streams = Some(Given {
            value: 0,
            origin: Origin::File {
                file: "s.yaml".into(),
                key: "max_streams",
                at: Some((3, 16)),
            },
        });
        let e = d.resolve().unwrap_err().to_string();
        assert_eq!(
            e,
            "--threads 0: at least one thread is needed\n\
             s.yaml:3:16: max_streams: at least one stream per connection is needed\n\
             s.yaml:3:16: max_streams applies to HTTP/2: add `http: 2` or `http: auto` to `defaults`"
        );
    }
}
