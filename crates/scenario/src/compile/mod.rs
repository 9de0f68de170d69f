//! Gives the raw file its meaning: a validated [`Plan`](crest_model::Plan)'s draft and the
//! [`FlowPlan`] its users run.
//!
//! Every problem found is collected with its location, so one `crest validate` lists them all.
//! This module reads the file's top level; each kind of thing in it has its own module: the
//! load shape ([`load`]), requests and their checks ([`request`]), steps ([`steps`]), SQL
//! ([`sql`]), what to monitor ([`monitor`]), thresholds and stop conditions ([`expr`]), and the
//! variables templates may read ([`vars`]).

mod expr;
pub(crate) mod grpc;
mod load;
mod monitor;
pub(crate) mod params;
mod request;
mod sql;
mod sse;
mod steps;
mod vars;
mod ws;

use crate::error::Problem;
use crate::raw::{self, Sp};
use crest_flow::feeder::{FeedMode, Feeder};
use crest_flow::plan::{Flow, FlowPlan, OnFailure};
use crest_model::expr::{StopCondition, Threshold};
use crest_model::monitor::{MonitorPlan, PostgresSpec};
use crest_model::plan::{self, ConnectionDraft, Given, LoadDraft, Origin, SegmentPlan, StopRule};
use crest_model::protocol::{HttpVersion, Network};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use vars::Known;

/// The pieces of a compiled scenario.
pub(crate) struct Compiled {
    pub load: LoadDraft,
    pub stop: StopRule,
    pub segments: Vec<SegmentPlan>,
    pub names: Vec<String>,
    pub part_of: Vec<Option<u32>>,
    /// What users do, but for its endpoints and connection settings: they are made once the
    /// plan is resolved (see [`crate::FlowDraft`]).
    pub flow: FlowPlan,
    /// The servers steps send to; [`crest_flow::plan::RequestStep::endpoint`] indexes this.
    pub endpoints: Vec<Server>,
    /// gRPC steps whose methods the servers' reflection describes, before the run.
    pub described: Vec<grpc::Described>,
    /// The names gRPC calls are recorded under.
    pub grpc_names: Vec<String>,
    pub stop_when: Vec<Given<StopCondition>>,
    pub thresholds: Vec<Given<Threshold>>,
    /// `defaults:` on how requests are limited and connections made.
    pub connection: ConnectionDraft,
    pub monitor: MonitorPlan,
    /// `monitor: interval`.
    pub monitor_interval: Option<Given<Duration>>,
    /// `output: log_requests: true`.
    pub log_requests: bool,
    /// `load: on_cap`.
    pub on_cap: Option<Given<plan::OnCap>>,
    /// The load's shape and where it is written.
    pub shape: Option<Given<plan::LoadShape>>,
    /// `label:`, checked.
    pub label: Option<String>,
}

/// A server steps send to, as `scheme://authority`, with where it was first named. A gRPC
/// server is one of its own even at the same address: its connections always speak HTTP/2.
#[derive(Debug, Clone)]
pub(crate) struct Server {
    pub base: String,
    pub at: Option<(usize, usize)>,
    pub grpc: bool,
}

/// A flow as written: name, weight, steps, where its name stands, and its `on_failure`.
type RawFlow<'s> = (
    String,
    u32,
    &'s [Sp<raw::Step>],
    Option<(usize, usize)>,
    Option<&'s Sp<String>>,
);

pub(crate) struct Cx<'a> {
    /// The file as given, for the origin of settings.
    file: String,
    root: &'a marked_yaml::Node,
    /// Nodes by where they start, built when first needed.
    nodes: std::cell::OnceCell<HashMap<(usize, usize), &'a marked_yaml::Node>>,
    dir: PathBuf,
    env: &'a dyn Fn(&str) -> Option<String>,
    pub problems: Vec<Problem>,
    /// What is valid but probably not meant, for `crest validate` to show.
    pub warnings: Vec<Problem>,
    names: Vec<String>,
    /// Where each name is in `names`.
    name_ids: HashMap<String, u32>,
    /// Parallel to `names`: the transaction a statement's name is part of.
    part_of: Vec<Option<u32>>,
    /// See [`Compiled::endpoints`].
    endpoints: Vec<Server>,
    /// See [`Compiled::described`].
    described: Vec<grpc::Described>,
    /// See [`Compiled::grpc_names`].
    grpc_names: Vec<String>,
    /// The services `protos:` describes; `Some(None)` when they did not compile (reported).
    protos: Option<Option<crest_grpc::Protos>>,
    connection: ConnectionDraft,
    target: Option<String>,
    /// A `target:` was given but is not usable; paths then need no second error.
    target_invalid: bool,
    /// Loops around the steps being compiled.
    loop_depth: usize,
    /// Each data file's name and columns, with the longest field of each.
    feeders: Vec<(String, Vec<(String, u64)>)>,
    has_database: bool,
    /// The files read while compiling, as the scenario names them (see [`Cx::source`]).
    pub files: Vec<String>,
    database: Option<crest_pg::PgTarget>,
    /// The database as the monitor needs it, when `monitor: database: true` asks for it.
    database_spec: Option<PostgresSpec>,
}

impl<'a> Cx<'a> {
    pub fn new(file: &str, root: &'a marked_yaml::Node, dir: &Path, env: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Cx {
            file: file.to_string(),
            root,
            nodes: std::cell::OnceCell::new(),
            dir: dir.to_path_buf(),
            env,
            problems: Vec::new(),
            warnings: Vec::new(),
            names: Vec::new(),
            name_ids: HashMap::new(),
            part_of: Vec::new(),
            endpoints: Vec::new(),
            described: Vec::new(),
            grpc_names: Vec::new(),
            protos: None,
            connection: ConnectionDraft {
                network: Network::from_env(env),
                ..ConnectionDraft::default()
            },
            target: None,
            target_invalid: false,
            loop_depth: 0,
            feeders: Vec::new(),
            has_database: false,
            files: Vec::new(),
            database: None,
            database_spec: None,
        }
    }

    /// `value`, marked as given under `key` at `at` in this file.
    fn given<T>(&self, value: T, key: &'static str, at: Option<(usize, usize)>) -> Given<T> {
        Given {
            value,
            origin: Origin::File {
                file: self.file.clone(),
                key,
                at,
            },
        }
    }

    fn err(&mut self, at: Option<(usize, usize)>, message: impl Into<String>, hint: Option<String>) {
        self.problems.push(Problem {
            at,
            message: message.into(),
            hint,
        });
    }

    fn duration(&mut self, s: &Sp<String>, what: &str) -> Option<Duration> {
        let d = parse_duration(s).or_else(|| {
            self.err(
                s.at(),
                format!("{what}: {:?} is not a duration", s.as_str()),
                Some("write e.g. 250ms, 10s, 5m".into()),
            );
            None
        })?;
        self.bounded(d, s.at(), what)
    }

    /// A duration that must be above zero: a run, a timeout, an interval.
    fn positive_duration(&mut self, s: &Sp<String>, what: &str) -> Option<Duration> {
        let d = self.duration(s, what)?;
        if d.is_zero() {
            self.err(s.at(), format!("{what}: {:?} must be above 0", s.as_str()), None);
            return None;
        }
        Some(d)
    }

    /// `v`, unless `problem` (the bound it breaks) says otherwise: then a located error.
    fn within<T>(
        &mut self,
        v: T,
        problem: Option<plan::BoundError>,
        at: Option<(usize, usize)>,
        what: &str,
    ) -> Option<T> {
        match problem {
            Some(p) => {
                self.err(at, format!("{what}: {p}"), None);
                None
            }
            None => Some(v),
        }
    }

    /// `d`, when it is within [`MAX_DURATION`].
    fn bounded(&mut self, d: Duration, at: Option<(usize, usize)>, what: &str) -> Option<Duration> {
        self.within(d, plan::duration_problem(d), at, what)
    }

    /// `n` users, when within [`plan::MAX_USERS`].
    fn users(&mut self, n: u64, at: Option<(usize, usize)>, what: &str) -> Option<u64> {
        self.within(n, plan::users_problem(n), at, what)
    }

    /// A rate, when within (0, [`plan::MAX_RATE`]].
    fn rate(&mut self, r: f64, at: Option<(usize, usize)>, what: &str) -> Option<f64> {
        self.within(r, plan::rate_problem(r), at, what)
    }

    /// The value node that starts at line and column `at` (the first, in document order, when
    /// several do).
    fn node_at(&self, at: (usize, usize)) -> Option<&'a marked_yaml::Node> {
        let index = self.nodes.get_or_init(|| {
            let mut index = HashMap::new();
            let mut stack = vec![self.root];
            while let Some(node) = stack.pop() {
                if let Some(m) = node.span().start() {
                    index.entry((m.line(), m.column())).or_insert(node);
                }
                match node {
                    marked_yaml::Node::Mapping(m) => stack.extend(m.values().rev()),
                    marked_yaml::Node::Sequence(s) => stack.extend(s.iter().rev()),
                    marked_yaml::Node::Scalar(_) => {}
                }
            }
            index
        });
        index.get(&at).copied()
    }

    /// Where a mapping was written: its first key. The span of a block mapping starts after
    /// that key.
    fn mapping_at<T>(&self, sp: &Sp<T>) -> Option<(usize, usize)> {
        let first_key = sp
            .at()
            .and_then(|at| self.node_at(at))
            .and_then(|n| n.as_mapping())
            .and_then(|m| m.keys().next())
            .and_then(|k| k.span().start())
            .map(|m| (m.line(), m.column()));
        first_key.or_else(|| sp.at())
    }

    /// A file the scenario is made of (data, a body, a certificate), read while compiling: its
    /// path, and a note of it, so that a collector can hand it to its workers with the text.
    fn source(&mut self, file: &str) -> PathBuf {
        if !self.files.iter().any(|f| f == file) {
            self.files.push(file.to_string());
        }
        self.resolve(file)
    }

    fn resolve(&self, file: &str) -> PathBuf {
        let p = Path::new(file);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.dir.join(p)
        }
    }

    /// Builds everything.
    pub fn scenario(&mut self, s: &raw::Scenario) -> Option<Compiled> {
        let d = s.defaults.as_ref();
        let limit = |cx: &mut Self, t: Option<&Sp<String>>, key| {
            t.and_then(|t| cx.positive_duration(t, key).map(|v| cx.given(v, key, t.at())))
        };
        self.connection.timeout = limit(self, d.and_then(|d| d.timeout.as_ref()), "timeout");
        self.connection.connect_timeout = limit(self, d.and_then(|d| d.connect_timeout.as_ref()), "connect_timeout");
        self.connection.tls.insecure = d.and_then(|d| d.insecure.as_ref()).is_some_and(|b| **b);
        self.connection.keepalive = d.and_then(|d| d.keepalive.as_ref()).map(|k| **k);
        self.http_options(d);
        let label = s
            .label
            .as_ref()
            .and_then(|l| match crest_model::results::Provenance::label_problem(l) {
                Some(problem) => {
                    self.err(l.at(), format!("label: {problem}"), None);
                    None
                }
                None => Some(l.to_string()),
            });
        if let Some(ca) = d.and_then(|d| d.cacert.as_ref()) {
            match crest_model::input::read_file(&self.source(ca), crest_model::input::MAX_DATA_FILE) {
                Ok(pem) => self.connection.tls.ca_pem = Some(pem),
                Err(e) => self.err(ca.at(), format!("cacert {:?}: cannot read it: {e}", ca.as_str()), None),
            }
        }
        if let Some(t) = &s.target {
            self.target(t);
        }
        if let Some(db) = &s.database {
            self.database(db);
        }
        self.protos(s.protos.as_deref(), s.proto_include.as_deref());
        // Data files first: their columns are known everywhere.
        let feeders = self.data(s.data.as_ref());
        let mut known = Known::default();
        let mut variables = Vec::new();
        for (name, v) in s.variables.iter().flatten() {
            // Each is rendered whole for every user: its bound is known here, and one refused
            // counts 0 after, so a chain built on it is reported once, where it first overflows.
            match self.template(v, &known) {
                Some(t) => {
                    known.add_bounded(name, self.template_bound(&t, &known));
                    variables.push((name.clone(), t));
                }
                None => known.add(name),
            }
        }
        let headers = self.headers(d.and_then(|d| d.headers.as_ref()), &known);
        let on_start = self.steps(s.on_start.as_deref().unwrap_or(&[]), &mut known);
        let flows_raw: Vec<RawFlow<'_>> = match (&s.flows, &s.steps) {
            (Some(flows), None) => flows
                .iter()
                .map(|f| {
                    (
                        f.name.to_string(),
                        f.weight.as_ref().map_or(1, |w| **w),
                        f.steps.as_slice(),
                        f.name.at(),
                        f.on_failure.as_ref(),
                    )
                })
                .collect(),
            (None, Some(steps)) => vec![("main".to_string(), 1, steps.as_slice(), steps.at(), None)],
            (Some(_), Some(_)) => {
                self.err(None, "give `flows` or `steps`, not both", None);
                Vec::new()
            }
            (None, None) => {
                self.err(None, "nothing to do: give `steps` (one flow) or `flows`", None);
                Vec::new()
            }
        };
        let default_on_failure = s
            .on_failure
            .as_ref()
            .map_or(OnFailure::default(), |f| self.on_failure(f));
        let mut flows = Vec::new();
        let mut after_flows = known.clone();
        for (name, weight, steps, at, on_failure) in flows_raw {
            let on_failure = on_failure.map_or(default_on_failure, |f| self.on_failure(f));
            let mut k = known.clone();
            if steps.is_empty() {
                self.err(at, format!("flow {name:?} has no steps"), None);
            }
            let steps = self.steps(steps, &mut k);
            for (v, bound) in k.0 {
                after_flows.add_bounded(&v, bound);
            }
            flows.push(Flow {
                name,
                weight,
                steps,
                on_failure,
            });
        }
        if !flows.is_empty() && flows.iter().all(|f| f.weight == 0) {
            self.err(None, "every flow has weight 0", None);
        }
        let on_stop = self.steps(s.on_stop.as_deref().unwrap_or(&[]), &mut after_flows);
        let load = self.load(&s.load);
        let on_cap = self.on_cap(&s.load);
        let shape = self.load_shape(&s.load);
        let (monitor, monitor_interval) = self.monitor(s.monitor.as_ref());
        let stop_when = self.stop_when(s.stop_when.as_deref());
        let thresholds = self.thresholds(s.thresholds.as_deref());
        self.unique_rows(load.as_ref().and_then(|(l, _, _)| l.max_users()), &feeders);
        let (load, stop, segments) = load?;
        if let Some(p) = stop.duration.and_then(plan::duration_problem) {
            self.err(s.load.at(), format!("load: the run lasts too long: {p}"), None);
            return None;
        }
        let flow = FlowPlan {
            flows,
            on_start,
            on_stop,
            endpoints: Vec::new(),
            variables,
            feeders,
            headers,
            // Set with the endpoints, from the resolved plan.
            timeout: Duration::ZERO,
            connect_timeout: Duration::ZERO,
            keepalive: true,
            seq: Default::default(),
            database: self.database.take(),
        };
        Some(Compiled {
            load,
            stop,
            segments,
            names: std::mem::take(&mut self.names),
            part_of: std::mem::take(&mut self.part_of),
            flow,
            endpoints: std::mem::take(&mut self.endpoints),
            described: std::mem::take(&mut self.described),
            grpc_names: std::mem::take(&mut self.grpc_names),
            stop_when,
            thresholds,
            connection: std::mem::take(&mut self.connection),
            monitor,
            monitor_interval,
            on_cap,
            shape,
            log_requests: s
                .output
                .as_ref()
                .and_then(|o| o.log_requests.as_ref())
                .is_some_and(|l| **l),
            label,
        })
    }

    /// A `unique` data file needs a row per user: one with fewer rows than the load's most
    /// users (`users`, when the load gives them) is reported.
    fn unique_rows(&mut self, users: Option<u64>, feeders: &[Feeder]) {
        if let (Some(users), true) = (users, feeders.iter().any(|f| f.mode == FeedMode::Unique)) {
            for f in feeders.iter().filter(|f| f.mode == FeedMode::Unique) {
                if (f.len() as u64) < users {
                    self.err(
                        None,
                        format!(
                            "data {}: mode unique needs a row per user: {} rows for {} users",
                            f.name,
                            f.len(),
                            users
                        ),
                        None,
                    );
                }
            }
        }
    }
}

fn parse_duration(s: &Sp<String>) -> Option<Duration> {
    parse_duration_str(s)
}

pub(super) fn parse_duration_str(s: &str) -> Option<Duration> {
    humantime::parse_duration(s.trim()).ok()
}

/// Whether exactly one of the alternatives of a mapping is given.
fn exactly_one(given: &[bool]) -> bool {
    given.iter().filter(|g| **g).count() == 1
}

impl Cx<'_> {
    /// The HTTP version and client features of `defaults`.
    fn http_options(&mut self, d: Option<&raw::Defaults>) {
        let Some(d) = d else { return };
        if let Some(v) = &d.http {
            match v.parse::<HttpVersion>() {
                Ok(v) => self.connection.version = Some(v),
                Err(e) => self.err(v.at(), format!("http: {e}"), None),
            }
        }
        self.connection.max_streams = d.max_streams.as_ref().map(|n| self.given(**n, "max_streams", n.at()));
        if let Some(n) = &d.redirects {
            use crest_model::protocol::MAX_REDIRECTS;
            if **n > MAX_REDIRECTS {
                self.err(
                    n.at(),
                    format!("redirects: at most {MAX_REDIRECTS} (a longer chain is a loop)"),
                    None,
                );
            }
            self.connection.redirects = Some(**n);
        }
        self.connection.compression = d.compression.as_ref().map(|b| **b);
        self.connection.cookies = d.cookies.as_ref().map(|b| **b);
        self.network_options(d);
    }

    /// The proxy, client certificate and address overrides of `defaults`.
    fn network_options(&mut self, d: &raw::Defaults) {
        if let Some(p) = &d.proxy {
            // The proxy may come from the environment: `${env:PROXY}`.
            match crest_flow::template::Template::parse(p, self.env) {
                Ok(t) if t.vars().is_empty() => self.connection.network.set_proxy(&t.render(&vars::NoScope::default())),
                _ => self.err(p.at(), "proxy: a URL, or one read from the environment", None),
            }
        }
        match (&d.cert, &d.key) {
            (Some(c), Some(k)) => {
                let read = |cx: &mut Self, f: &Sp<String>, what: &str| {
                    crest_model::input::read_file(&cx.resolve(f), crest_model::input::MAX_DATA_FILE)
                        .map_err(|e| cx.err(f.at(), format!("{what} {:?}: cannot read it: {e}", f.as_str()), None))
                        .ok()
                };
                if let (Some(cert), Some(key)) = (read(self, c, "cert"), read(self, k, "key")) {
                    self.connection.tls.client_pem = Some((cert, key));
                }
            }
            (Some(c), None) => self.err(c.at(), "cert needs `key`, the certificate's private key", None),
            (None, Some(k)) => self.err(k.at(), "key goes with `cert`, the client certificate", None),
            (None, None) => {}
        }
        for r in d.resolve.iter().flatten() {
            match r.parse() {
                Ok(r) => self.connection.network.resolve.push(r),
                Err(e) => self.err(r.at(), format!("resolve: {e}"), None),
            }
        }
        if let Some(b) = &d.dns_per_connection {
            self.connection.network.dns_per_connection = **b;
        }
    }
}
