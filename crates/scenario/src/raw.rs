//! The scenario file as written: every key crest accepts, and where each value stood.
//!
//! These types mirror the YAML one to one (unknown keys are errors) and are also the source of
//! the published JSON Schema (`schema/scenario.schema.json`), so editors check and complete the
//! same format crest reads. Meaning is given to them in `compile.rs`.

use indexmap::IndexMap;
use marked_yaml::Spanned;
use schemars::JsonSchema;
use serde::Deserialize;
use std::ops::Deref;

/// A value with the place it was written: its line and column, not the parser's whole span
/// (a start and an end of four words each), which made every value of a scenario 80 bytes
/// larger than itself.
#[derive(Clone, Debug)]
pub struct Sp<T> {
    at: Option<(u32, u32)>,
    value: T,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Sp<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // `Spanned` is how the YAML deserializer hands over a place; its value can only be
        // borrowed, so it is taken out of a cell.
        let spanned = Spanned::<Taken<T>>::deserialize(d)?;
        let at = spanned.span().start().map(|m| {
            let narrow = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
            (narrow(m.line()), narrow(m.column()))
        });
        let value = spanned
            .0
            .take()
            .ok_or_else(|| serde::de::Error::custom("a value was read twice"))?;
        Ok(Sp { at, value })
    }
}

/// A value deserialized into a cell, so that it can be moved out from behind a `Spanned`.
struct Taken<T>(std::cell::Cell<Option<T>>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Taken<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(|v| Taken(std::cell::Cell::new(Some(v))))
    }
}

impl<T> Deref for Sp<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> Sp<T> {
    /// A value the compiler supplies (a default) at the place of what it stands in for.
    pub(crate) fn new(value: T, at: Option<(usize, usize)>) -> Self {
        let narrow = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Sp {
            at: at.map(|(l, c)| (narrow(l), narrow(c))),
            value,
        }
    }

    /// Line and column (from 1) where the value starts, if known.
    pub fn at(&self) -> Option<(usize, usize)> {
        self.at.map(|(l, c)| (l as usize, c as usize))
    }
}

impl<T: JsonSchema> JsonSchema for Sp<T> {
    fn schema_name() -> String {
        T::schema_name()
    }
    fn json_schema(g: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        T::json_schema(g)
    }
    fn is_referenceable() -> bool {
        T::is_referenceable()
    }
}

/// One value or a list of them.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// One.
    One(T),
    /// Several.
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    /// As a list.
    pub fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// A crest scenario: who the users are, what they do, and how many of them do it when.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The test this scenario is: runs with the same label are grouped by `crest history` and
    /// compared by its regression gate. The `--label` flag wins over it.
    pub label: Option<Sp<String>>,
    /// Base URL that request paths are relative to, e.g. `http://127.0.0.1:8080`.
    pub target: Option<Sp<String>>,
    /// Settings for every request.
    pub defaults: Option<Defaults>,
    /// The PostgreSQL database that `sql` steps run on.
    pub database: Option<Database>,
    /// `.proto` files describing the services `grpc` steps call, compiled when the scenario is
    /// read (no `protoc` needed). Without them, the services are asked of the server's
    /// reflection service before the run.
    pub protos: Option<Vec<Sp<String>>>,
    /// Directories the `protos` files' imports are found in (default: each file's own
    /// directory); protobuf's well-known types need none.
    pub proto_include: Option<Vec<Sp<String>>>,
    /// Variables set for each user when it starts, in order; values are templates.
    pub variables: Option<IndexMap<String, Sp<String>>>,
    /// Data files (CSV with a header row), by name; use a column as `${name.column}`.
    pub data: Option<IndexMap<String, Feeder>>,
    /// Steps each user runs once before its first iteration (e.g. log in and keep the token).
    pub on_start: Option<Vec<Sp<Step>>>,
    /// Steps each user runs once when it stops (closed model).
    pub on_stop: Option<Vec<Sp<Step>>>,
    /// Flows, each iteration running one chosen by weight. Use `steps` instead for one flow.
    pub flows: Option<Vec<Flow>>,
    /// The steps of a scenario with a single flow.
    pub steps: Option<Sp<Vec<Sp<Step>>>>,
    /// What a user does when a step fails, for every flow that does not say:
    /// `next_iteration` (the default: skip the rest of the flow, but wait its think time),
    /// `continue` (go on with the next step) or `stop_user` (the user stops for good).
    pub on_failure: Option<Sp<String>>,
    /// How many users (or arrivals) over time.
    pub load: Sp<Load>,
    /// Conditions checked every second that end the run early, e.g. `error_rate > 5%`.
    pub stop_when: Option<Vec<Sp<String>>>,
    /// Conditions checked at the end; crest exits with 1 when one fails, e.g. `p95 < 10s`.
    pub thresholds: Option<Vec<Sp<String>>>,
    /// What to watch while the load runs: processes, this machine, Prometheus metrics,
    /// PostgreSQL. Stop conditions and thresholds can use what is watched.
    pub monitor: Option<Monitor>,
    /// What the run writes besides its results and reports.
    pub output: Option<Output>,
}

/// What the run writes besides its results and reports.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// Write every request as a row of `request-log.csv.gz` in the run directory (as the
    /// `--log-requests` flag does).
    pub log_requests: Option<Sp<bool>>,
}

/// What to watch while the load runs.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Monitor {
    /// Time between samples, e.g. `1s` (the default).
    pub interval: Option<Sp<String>>,
    /// Sample this machine's load average, CPU and memory (default true).
    pub host: Option<Sp<bool>>,
    /// Processes of the system under test; each is one of `pid`, `pid_file`, `name`, `pattern`.
    pub processes: Option<Vec<Sp<ProcessWatch>>>,
    /// Prometheus text endpoints and the metrics to record from them.
    pub prometheus: Option<Vec<PrometheusWatch>>,
    /// PostgreSQL servers to read connections and transactions per second from.
    pub postgres: Option<Vec<PostgresWatch>>,
    /// Also watch the scenario's own `database` this way.
    pub database: Option<Sp<bool>>,
}

/// A process, or the group of processes that match, to watch.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProcessWatch {
    /// The `process` label of its series (default: the name, pattern or pid).
    pub label: Option<Sp<String>>,
    /// A process id.
    pub pid: Option<Sp<u32>>,
    /// A file holding the process id (relative to the scenario file), read at every sample.
    pub pid_file: Option<Sp<String>>,
    /// The process name (as `ps -o comm` shows it) or executable file name; every match counts.
    pub name: Option<Sp<String>>,
    /// A regular expression on the command line; every match counts.
    pub pattern: Option<Sp<String>>,
}

/// A Prometheus text endpoint.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrometheusWatch {
    /// The metrics page, e.g. `http://127.0.0.1:9100/metrics`; may read the environment.
    pub url: Sp<String>,
    /// Metric names or regular expressions to record (default: all, up to 200 series).
    pub metrics: Option<Vec<Sp<String>>>,
}

/// A PostgreSQL server.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostgresWatch {
    /// `postgres://user@host:port/dbname`; may read the environment.
    pub url: Sp<String>,
    /// The password, usually `${env:PGPASSWORD}`; never shown.
    pub password: Option<Sp<String>>,
}

/// Settings for every request.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// Headers sent with every request; values are templates.
    pub headers: Option<IndexMap<String, Sp<String>>>,
    /// Request timeout, e.g. `30s`.
    pub timeout: Option<Sp<String>>,
    /// Connect timeout, e.g. `10s`.
    pub connect_timeout: Option<Sp<String>>,
    /// Reuse connections (default true).
    pub keepalive: Option<Sp<bool>>,
    /// Accept any TLS certificate.
    pub insecure: Option<Sp<bool>>,
    /// Also trust the CA certificates in this PEM file (relative to the scenario file).
    pub cacert: Option<Sp<String>>,
    /// HTTP version: `1.1` (default), `2` (ALPN over TLS, prior knowledge over cleartext) or
    /// `auto` (HTTP/2 when the TLS server picks it).
    pub http: Option<Sp<String>>,
    /// HTTP/2: most users sharing one connection (default 100).
    pub max_streams: Option<Sp<u32>>,
    /// Redirects followed per request (default 0: a 3xx is the response).
    pub redirects: Option<Sp<u32>>,
    /// Send `Accept-Encoding: gzip, deflate, br` (bodies that come compressed are decoded
    /// for checks either way).
    pub compression: Option<Sp<bool>>,
    /// Keep cookies per user and send them back (default true).
    pub cookies: Option<Sp<bool>>,
    /// An HTTP proxy for every request, `http://[user:pass@]host:port` (default: the
    /// HTTP_PROXY, HTTPS_PROXY and NO_PROXY environment); may read the environment.
    pub proxy: Option<Sp<String>>,
    /// A client certificate (PEM, relative to the scenario file) for mutual TLS; with `key`.
    pub cert: Option<Sp<String>>,
    /// The client certificate's private key (PEM).
    pub key: Option<Sp<String>>,
    /// Addresses used for `host:port` instead of resolving it, in turn:
    /// `host:port:addr[,addr...]`.
    pub resolve: Option<Vec<Sp<String>>>,
    /// Each new connection resolves its host itself, timed as its own phase (`dns`), and a
    /// name that does not resolve fails the request as `dns_failed` (default false: resolved
    /// once before the run).
    pub dns_per_connection: Option<Sp<bool>>,
}

/// A PostgreSQL database.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Database {
    /// `postgres://user@host:port/dbname`; may read the environment.
    pub url: Sp<String>,
    /// The password, usually `${env:PGPASSWORD}`; never shown.
    pub password: Option<Sp<String>>,
    /// The server cancels statements that run longer, e.g. `5s`.
    pub statement_timeout: Option<Sp<String>>,
}

/// A CSV data file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Feeder {
    /// Path, relative to the scenario file.
    pub file: Sp<String>,
    /// `sequential` (the next row each iteration, shared), `random`, or `unique` (one row per
    /// user, for credentials). Default: sequential.
    pub mode: Option<Sp<String>>,
}

/// A flow.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    /// Its name.
    pub name: Sp<String>,
    /// Relative frequency (default 1).
    pub weight: Option<Sp<u32>>,
    /// What it does.
    pub steps: Vec<Sp<Step>>,
    /// What a user does when a step fails: `next_iteration`, `continue` or `stop_user`
    /// (default: the top-level `on_failure`, else `next_iteration`).
    pub on_failure: Option<Sp<String>>,
}

/// One step: exactly one of `request`, `poll`, `think`, `loop`, `sql`, `set`, `if` (with `then`
/// and `else`), `foreach`, `break` or `next`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    // The kinds of step are boxed: each is a few hundred bytes to kilobytes of options and
    // their places, and a step is one of them, so a list of steps held each kind inline took
    // about 180 bytes of memory per byte of a scenario of 20,000 requests.
    /// Send a request.
    pub request: Option<Box<Sp<Request>>>,
    /// Repeat a request until extracted values say it is done.
    pub poll: Option<Box<Sp<Poll>>>,
    /// Wait: `2s`, or a uniform range `1s..3s`.
    pub think: Option<Sp<String>>,
    /// Repeat steps.
    #[serde(rename = "loop")]
    pub repeat: Option<Box<Sp<Loop>>>,
    /// Run SQL on the `database`.
    pub sql: Option<Box<Sp<Sql>>>,
    /// Set variables: name → template, e.g. `aid: "${random_int(1, 100000)}"`.
    pub set: Option<Sp<IndexMap<String, Sp<String>>>>,
    /// A condition on the user's values, e.g. `${state} == "RUNNING" and ${n} < 3`: runs
    /// `then` when it holds, `else` when not.
    #[serde(rename = "if")]
    pub condition: Option<Sp<String>>,
    /// The steps run when the `if` holds.
    pub then: Option<Vec<Sp<Step>>>,
    /// The steps run when the `if` does not hold.
    #[serde(rename = "else")]
    pub otherwise: Option<Vec<Sp<Step>>>,
    /// Steps run once for each element of a JSON array.
    pub foreach: Option<Box<Sp<Foreach>>>,
    /// `break: true` leaves the innermost `loop` or `foreach` (outside one, ends the iteration).
    #[serde(rename = "break")]
    pub leave: Option<Sp<bool>>,
    /// `next: true` goes on with the next round of the innermost `loop` or `foreach` (outside
    /// one, ends the iteration).
    pub next: Option<Sp<bool>>,
    /// Read server-sent events (subscribing first when the user has no stream open).
    pub sse: Option<Box<Sp<Sse>>>,
    /// A WebSocket exchange on the user's connection (opening it first when it has none).
    pub ws: Option<Box<Sp<Ws>>>,
    /// A gRPC call on the user's connection to the server (opening it first when it has none).
    pub grpc: Option<Box<Sp<Grpc>>>,
}

/// Steps run for each element of a JSON array.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Foreach {
    /// The array: a template that gives its JSON text, usually a variable extracted with a
    /// JSONPath (`${items}`). Anything else (nothing, `null`, an object) runs the steps no times.
    pub items: Sp<String>,
    /// The variable each element is put in: strings as they are, other values as JSON text.
    #[serde(rename = "as")]
    pub var: Sp<String>,
    /// At most this many elements are visited (default 100).
    pub max: Option<Sp<u64>>,
    /// What to do with each element.
    pub steps: Vec<Sp<Step>>,
}

/// SQL: one `query`, or several `statements` (as one transaction with `transaction: true`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sql {
    /// The name it is recorded under (default: its first words).
    pub name: Option<Sp<String>>,
    /// One statement with `$1`, `$2` ... parameters.
    pub query: Option<Sp<String>>,
    /// Its parameters; templates.
    pub params: Option<Vec<Sp<String>>>,
    /// Several statements.
    pub statements: Option<Vec<SqlStatement>>,
    /// Run the statements between BEGIN and COMMIT, timed as one unit.
    pub transaction: Option<bool>,
    /// Variable → column of the first row of the last statement.
    pub extract: Option<IndexMap<String, Sp<String>>>,
    /// Conditions on the last statement's result.
    pub check: Option<SqlCheck>,
}

/// One statement of several.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SqlStatement {
    /// The name it is recorded under inside the transaction.
    pub name: Option<Sp<String>>,
    /// The statement.
    pub query: Sp<String>,
    /// Its parameters; templates.
    pub params: Option<Vec<Sp<String>>>,
}

/// Conditions on an SQL result.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SqlCheck {
    /// Exactly this many rows returned or affected.
    pub rows: Option<Sp<u64>>,
    /// At least this many rows.
    pub rows_min: Option<Sp<u64>>,
    /// Column → expected value of the first row, as text.
    pub value: Option<IndexMap<String, Sp<String>>>,
}

/// A request.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The name statistics are grouped under (default: method and path with `{var}` for
    /// variables, e.g. `GET /tasks/{id}`).
    pub name: Option<Sp<String>>,
    /// Method (default GET, or POST with a body).
    pub method: Option<Sp<String>>,
    /// Path and query relative to `target`; a template.
    pub path: Option<Sp<String>>,
    /// An absolute URL instead of `path`; its scheme and host cannot be templated.
    pub url: Option<Sp<String>>,
    /// Query parameters, URL-encoded; values are templates.
    pub query: Option<IndexMap<String, Sp<String>>>,
    /// Headers; values are templates.
    pub headers: Option<IndexMap<String, Sp<String>>>,
    /// A JSON body written as YAML; its strings are templates.
    pub json: Option<Sp<serde_json::Value>>,
    /// A text body; a template.
    pub body: Option<Sp<String>>,
    /// A body read from a file (relative to the scenario file), sent as it is.
    pub body_file: Option<Sp<String>>,
    /// An `application/x-www-form-urlencoded` body: field → value; values are templates.
    pub form: Option<IndexMap<String, Sp<String>>>,
    /// A `multipart/form-data` body: parts in order, each a `value` or a `file`.
    pub multipart: Option<Vec<Sp<MultipartPart>>>,
    /// Values to keep from the response, by variable name.
    pub extract: Option<IndexMap<String, Sp<Extract>>>,
    /// Conditions on the response; a failed one counts as `check_failed` (as `http_NNN` on a
    /// 4xx/5xx response, with the check as its reason).
    pub check: Option<Check>,
    /// This request's timeout.
    pub timeout: Option<Sp<String>>,
}

/// One part of a multipart body.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MultipartPart {
    /// The field name.
    pub name: String,
    /// A text value; a template.
    pub value: Option<Sp<String>>,
    /// A file sent as it is (relative to the scenario file), read when the scenario loads.
    pub file: Option<Sp<String>>,
    /// The file's media type (default `application/octet-stream`).
    pub content_type: Option<String>,
}

/// Where an extracted value comes from: a JSONPath (`$.id`), or one of the keys.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Extract {
    /// A JSONPath on the body, e.g. `$.id`.
    Path(String),
    /// One source.
    Source(ExtractSource),
}

/// Exactly one source.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractSource {
    /// A JSONPath on the body.
    pub json: Option<String>,
    /// A regular expression on the body; its first group (or the whole match).
    pub regex: Option<String>,
    /// A response header.
    pub header: Option<String>,
    /// The status code (`status: true`).
    pub status: Option<Flag>,
    /// With `json`: every match, as a JSON array (for `foreach`), rather than the first.
    pub all: Option<Flag>,
}

/// `true` or `false` inside a key that takes several forms. Such keys are read through a
/// buffer in which YAML's scalars are all text, so a plain `bool` never matches there and
/// `status: true` was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[schemars(transparent)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Bool(bool),
            Text(String),
        }
        match Either::deserialize(d)? {
            Either::Bool(b) => Ok(Flag(b)),
            Either::Text(t) => match t.as_str() {
                "true" => Ok(Flag(true)),
                "false" => Ok(Flag(false)),
                other => Err(serde::de::Error::custom(format!("{other:?} is not true or false"))),
            },
        }
    }
}

/// Conditions on a response.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// Allowed statuses (when given, 4xx and 5xx are not failures by themselves).
    pub status: Option<Sp<OneOrMany<String>>>,
    /// JSONPath → expected value (compared as text).
    pub json: Option<IndexMap<String, Sp<String>>>,
    /// JSONPaths that must match something.
    pub exists: Option<Vec<Sp<String>>>,
    /// Text the body must contain.
    pub body_contains: Option<Sp<String>>,
    /// The request must take less than this, e.g. `500ms`.
    pub duration_below: Option<Sp<String>>,
}

/// A request repeated until done.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Poll {
    /// The request, with `extract` for the values `until` reads.
    pub request: Sp<Request>,
    /// Done when each variable has one of its values, e.g. `status: [SUCCEEDED, FAILED]`.
    pub until: IndexMap<String, Sp<OneOrMany<String>>>,
    /// Wait between polls (default 1s).
    pub every: Option<Sp<String>>,
    /// Give up after this long, as a `check_failed` outcome (default 60s).
    pub max_wait: Option<Sp<String>>,
}

/// Steps repeated.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Loop {
    /// How many times.
    pub times: Sp<u64>,
    /// What to repeat.
    pub steps: Vec<Sp<Step>>,
}

/// How many users, or arrivals, over time. Give exactly one shape: `users` (with `duration`),
/// `stages`, `stepping`, `threads` (with `loops`), `run_once`, `rate` (with `duration`),
/// `rate_stages`, or `spike`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// A fixed number of users (closed model).
    pub users: Option<Sp<u64>>,
    /// How long `users` or `rate` runs, e.g. `5m`.
    pub duration: Option<Sp<String>>,
    /// Closed model stages from `start_users` (default 0): `{ramp_to: N, over: 1m}` or
    /// `{hold: 5m}`.
    pub stages: Option<Vec<Sp<Stage>>>,
    /// Users at the start of `stages`.
    pub start_users: Option<Sp<u64>>,
    /// A stepping load: `{start: 40, step: 40, every: 10m, max: 200}`.
    pub stepping: Option<Sp<Stepping>>,
    /// Threads x loops: this many users...
    pub threads: Option<Sp<u64>>,
    /// ...each running the flow this many times.
    pub loops: Option<Sp<u64>>,
    /// This many users each run the flow once; the total time is the headline.
    pub run_once: Option<Sp<u64>>,
    /// Start `threads` or `run_once` users evenly over this time (default: all at once).
    pub ramp_up: Option<Sp<String>>,
    /// Arrivals per second (open model).
    pub rate: Option<Sp<f64>>,
    /// Open model stages from `start_rate` (default 0): `{ramp_to: R, over: 1m}` or
    /// `{hold: 5m}`.
    pub rate_stages: Option<Vec<Sp<Stage>>>,
    /// Arrivals per second at the start of `rate_stages`.
    pub start_rate: Option<Sp<f64>>,
    /// Open model: the most iterations in flight (default 1000); an arrival beyond it does as
    /// `on_cap` says.
    pub max_in_flight: Option<Sp<u64>>,
    /// Open model: an arrival that finds `max_in_flight` reached is dropped and counted
    /// (`drop`, the default), or waits for a place, after those before it, and is timed from
    /// its slot (`queue`, as pgbench -R does).
    pub on_cap: Option<Sp<String>>,
    /// A spike: `{users: 80, to: 200, after: 2m, for: 1m, then: 5m}` (or `rate:` instead of
    /// `users:` for the open model).
    pub spike: Option<Sp<Spike>>,
    /// Stop after this many iterations in all.
    pub iterations: Option<Sp<u64>>,
}

/// A stage of a profile.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// Move linearly to this level...
    pub ramp_to: Option<f64>,
    /// ...over this time (0s for a jump).
    pub over: Option<String>,
    /// Or keep the level for this time.
    pub hold: Option<String>,
}

/// A stepping load.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Stepping {
    /// Users in the first step.
    pub start: u64,
    /// Users added at each step.
    pub step: u64,
    /// Length of each step, e.g. `10m`.
    pub every: String,
    /// The last step's users.
    pub max: u64,
}

/// A spike and its recovery.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Spike {
    /// Users before and after the spike (closed model)...
    pub users: Option<u64>,
    /// ...or arrivals per second (open model).
    pub rate: Option<f64>,
    /// The level during the spike.
    pub to: f64,
    /// When the spike starts.
    pub after: String,
    /// How long it lasts.
    #[serde(rename = "for")]
    pub lasts: String,
    /// How long the run goes on after it, to watch the recovery.
    pub then: String,
}

/// Server-sent events: subscribe (when the user has no stream open), then read events until
/// `until` holds.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sse {
    /// The name it is recorded under (default `SSE` and the path); reconnects are recorded
    /// under this name and ` reconnect`.
    pub name: Option<Sp<String>>,
    /// Path and query of the subscription, relative to `target`; a template.
    pub path: Option<Sp<String>>,
    /// An absolute URL instead of `path`; its scheme and host cannot be templated.
    pub url: Option<Sp<String>>,
    /// Headers of the subscription, after the scenario's; values are templates.
    pub headers: Option<IndexMap<String, Sp<String>>>,
    /// When the step is done (default: one event of any type).
    pub until: Option<SseUntil>,
    /// Longest wait for `until`, from the step's start (default 30s): past it, `receive_timeout`.
    pub timeout: Option<Sp<String>>,
    /// Values from the event that completed the step: `json` and `regex` read its data,
    /// `header: event` and `header: id` its type and id.
    pub extract: Option<IndexMap<String, Sp<Extract>>>,
    /// Conditions on that event (`json`, `exists`, `body_contains` read its data).
    pub check: Option<Check>,
    /// Longest time allowed between two events, e.g. `2s` (and from the step's start to the
    /// first): longer is `check_failed`.
    pub max_gap: Option<Sp<String>>,
    /// How many times to subscribe again, with `Last-Event-ID`, when the server ends or
    /// breaks the stream during the step (default 0); waits the server's `retry:` first.
    pub reconnect: Option<Sp<u32>>,
    /// What a stream the server ended (reconnects used up) means: `fail` (default, `closed`)
    /// or `success`.
    pub on_end: Option<Sp<String>>,
    /// Close the stream after this step (default: keep it for the user's next `sse` step).
    pub close: Option<bool>,
}

/// When an `sse` step is done: once `count` events of the given type and data have come.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SseUntil {
    /// Only events of this type count (`message` for events without `event:`).
    pub event: Option<Sp<String>>,
    /// Only events whose data matches this regex count.
    pub matches: Option<Sp<String>>,
    /// How many events (default 1).
    pub count: Option<Sp<u64>>,
}

/// A WebSocket step: on the user's connection, opened when it has none (an HTTP/1.1 upgrade of
/// `path` on the target, `ws://` or `wss://`), it sends `send`, reads until `until`, then closes
/// with `close`. `send` with `until` is a request/reply exchange.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ws {
    /// The name it is recorded under (default `WS` and the path).
    pub name: Option<Sp<String>>,
    /// Path and query of the upgrade, relative to `target` (default `/`); a template. Used
    /// when the user has no connection yet.
    pub path: Option<Sp<String>>,
    /// An absolute `ws://` or `wss://` URL instead of `path`.
    pub url: Option<Sp<String>>,
    /// Headers of the upgrade request, after the scenario's; values are templates.
    pub headers: Option<IndexMap<String, Sp<String>>>,
    /// A message to send; a template.
    pub send: Option<Sp<String>>,
    /// Send it as a binary message (default: text).
    pub binary: Option<bool>,
    /// Read messages until this (leave it out to read nothing).
    pub until: Option<ReadUntil>,
    /// Longest wait for the connection and `until`, from the step's start (default 30s):
    /// past it, `receive_timeout`.
    pub timeout: Option<Sp<String>>,
    /// Values from the message that met `until` (`json` and `regex` read it).
    pub extract: Option<IndexMap<String, Sp<Extract>>>,
    /// Conditions on that message (`json`, `exists`, `body_contains`).
    pub check: Option<Check>,
    /// Close the connection after the step with this code (1000 for a normal close).
    pub close: Option<Sp<u16>>,
}

/// A gRPC call: unary, server-streaming (read to the server's status, or until `until`),
/// client-streaming (`messages`) or both. The user keeps its HTTP/2 connection to the server
/// across steps and iterations; each call is a stream on it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Grpc {
    /// The method: `package.Service/Method`, e.g. `grpc.health.v1.Health/Check`.
    pub call: Sp<String>,
    /// The name it is recorded under (default: the method).
    pub name: Option<Sp<String>>,
    /// The server, `http://` (cleartext HTTP/2) or `https://` (TLS), when it is not `target`.
    /// `grpc://` and `grpcs://` are read as those.
    pub url: Option<Sp<String>>,
    /// The request as JSON (protobuf's JSON mapping); strings are templates. Default `{}`.
    pub message: Option<Sp<serde_json::Value>>,
    /// The requests of a client-streaming call, sent in order, instead of `message`.
    pub messages: Option<Sp<Vec<serde_json::Value>>>,
    /// Metadata sent with the call, after the scenario's headers; values are templates. Keys
    /// ending in `-bin` are sent as binary metadata.
    pub metadata: Option<IndexMap<String, Sp<String>>>,
    /// The call's deadline (default 30s), sent as `grpc-timeout`: past it,
    /// `grpc_deadline_exceeded`.
    pub timeout: Option<Sp<String>>,
    /// Stop reading the server's stream once this many messages matched, cancelling the rest
    /// (default: read to the end).
    pub until: Option<ReadUntil>,
    /// Values from the last message read, as JSON (`json` and `regex` read it).
    pub extract: Option<IndexMap<String, Sp<Extract>>>,
    /// Conditions on that message (`json`, `exists`, `body_contains`).
    pub check: Option<Check>,
}

/// When a `ws` step's reading is done: once `count` messages matching `matches` have come.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadUntil {
    /// Only messages whose text matches this regex count (default: any message).
    pub matches: Option<Sp<String>>,
    /// How many (default 1).
    pub count: Option<Sp<u64>>,
}
