//! Gives the raw file its meaning: a validated [`Plan`] and the [`FlowPlan`] its users run.
//!
//! Every problem found is collected with its location, so one `crest validate` lists them all.

use crate::error::{did_you_mean, Problem};
use crate::raw::{self, Sp};
use crest_analysis::expr::{Expr, Monitored};
use crest_flow::extract::{Check, Extractor};
use crest_flow::feeder::{FeedMode, Feeder};
use crest_flow::plan::{Body, Flow, FlowPlan, OnFailure, PollStep, RequestStep, Step};
use crest_flow::template::Template;
use crest_http::Endpoint;
use crest_model::address;
use crest_model::monitor::{MonitorPlan, PostgresSpec, ProcessSelect, ProcessSpec, PrometheusSpec};
use crest_model::plan::{
    self, LoadModel, RateProfile, RateStage, SegmentPlan, StopRule, TlsOptions, UsersProfile, UsersStage,
};
use crest_model::protocol::{HttpOptions, HttpVersion};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Defaults that a scenario does not set.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_MAX_IN_FLIGHT: u64 = 1000;
const DEFAULT_POLL_EVERY: Duration = Duration::from_secs(1);
const DEFAULT_POLL_MAX_WAIT: Duration = Duration::from_secs(60);
/// Deepest nesting of `loop` steps.
pub const MAX_LOOP_DEPTH: usize = 32;

/// The pieces of a compiled scenario.
pub(crate) struct Compiled {
    pub load: LoadModel,
    pub stop: StopRule,
    pub segments: Vec<SegmentPlan>,
    pub names: Vec<String>,
    pub part_of: Vec<Option<u32>>,
    pub flow: FlowPlan,
    pub stop_when: Vec<String>,
    pub thresholds: Vec<String>,
    pub monitor: MonitorPlan,
}

/// A flow as written: name, weight, steps, where its name stands, and its `on_failure`.
type RawFlow<'s> = (
    String,
    u32,
    &'s [Sp<raw::Step>],
    Option<(usize, usize)>,
    Option<&'s Sp<String>>,
);

/// A statement as written: its name, query and parameters.
type RawStatement<'s> = (Option<&'s Sp<String>>, &'s Sp<String>, Option<&'s Vec<Sp<String>>>);

/// Variables known at a point of a flow, for checking templates.
/// A set, so that checking a reference costs the same with 100,000 variables as with ten.
#[derive(Clone, Default)]
struct Known(HashSet<String>);

impl Known {
    fn add(&mut self, name: &str) {
        if !self.0.contains(name) {
            self.0.insert(name.to_string());
        }
    }

    fn has(&self, name: &str) -> bool {
        self.0.contains(name)
    }
}

pub(crate) struct Cx<'a> {
    root: &'a marked_yaml::Node,
    /// Nodes by where they start, built when first needed.
    nodes: std::cell::OnceCell<HashMap<(usize, usize), &'a marked_yaml::Node>>,
    dir: PathBuf,
    env: &'a dyn Fn(&str) -> Option<String>,
    pub problems: Vec<Problem>,
    names: Vec<String>,
    /// Where each name is in `names`.
    name_ids: HashMap<String, u32>,
    /// Parallel to `names`: the transaction a statement's name is part of.
    part_of: Vec<Option<u32>>,
    endpoints: Vec<(String, Endpoint)>,
    tls: TlsOptions,
    http: HttpOptions,
    target: Option<String>,
    /// A `target:` was given but is not usable; paths then need no second error.
    target_invalid: bool,
    /// Loops around the steps being compiled.
    loop_depth: usize,
    feeders: Vec<(String, Vec<String>)>,
    has_database: bool,
    database: Option<crest_pg::PgTarget>,
    /// The database as the monitor needs it, when `monitor: database: true` asks for it.
    database_spec: Option<PostgresSpec>,
}

impl<'a> Cx<'a> {
    pub fn new(root: &'a marked_yaml::Node, dir: &Path, env: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Cx {
            root,
            nodes: std::cell::OnceCell::new(),
            dir: dir.to_path_buf(),
            env,
            problems: Vec::new(),
            names: Vec::new(),
            name_ids: HashMap::new(),
            part_of: Vec::new(),
            endpoints: Vec::new(),
            tls: TlsOptions::default(),
            http: HttpOptions {
                cookies: true,
                ..HttpOptions::default()
            },
            target: None,
            target_invalid: false,
            loop_depth: 0,
            feeders: Vec::new(),
            has_database: false,
            database: None,
            database_spec: None,
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
    fn within<T>(&mut self, v: T, problem: Option<String>, at: Option<(usize, usize)>, what: &str) -> Option<T> {
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

    /// The value node that starts at `mark` (the first, in document order, when several do).
    fn node_at(&self, mark: &marked_yaml::Marker) -> Option<&'a marked_yaml::Node> {
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
        index.get(&(mark.line(), mark.column())).copied()
    }

    /// Where a mapping was written: its first key. The span of a block mapping starts after
    /// that key.
    fn mapping_at<T>(&self, sp: &Sp<T>) -> Option<(usize, usize)> {
        let first_key =
            sp.0.span()
                .start()
                .and_then(|m| self.node_at(m))
                .and_then(|n| n.as_mapping())
                .and_then(|m| m.keys().next())
                .and_then(|k| k.span().start())
                .map(|m| (m.line(), m.column()));
        first_key.or_else(|| sp.at())
    }

    fn resolve(&self, file: &str) -> PathBuf {
        let p = Path::new(file);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.dir.join(p)
        }
    }

    /// Parses a template and checks that every variable it reads is known here.
    fn template(&mut self, s: &Sp<String>, known: &Known) -> Option<Template> {
        self.template_at(s.as_str(), s.at(), known)
    }

    fn template_at(&mut self, text: &str, at: Option<(usize, usize)>, known: &Known) -> Option<Template> {
        let t = match Template::parse(text, self.env) {
            Ok(t) => t,
            Err(e) => {
                self.err(at, format!("in {text:?}: {}", e.message), None);
                return None;
            }
        };
        let mut ok = true;
        for v in t.vars() {
            if let Some((feeder, column)) = v.split_once('.') {
                match self.feeders.iter().find(|(n, _)| n == feeder) {
                    None => {
                        let hint = did_you_mean(feeder, self.feeders.iter().map(|(n, _)| n.as_str()))
                            .or_else(|| Some("data files are declared under `data:`".into()));
                        self.err(at, format!("in {text:?}: no data file named `{feeder}`"), hint);
                        ok = false;
                    }
                    Some((_, cols)) if !cols.iter().any(|c| c == column) => {
                        let hint = did_you_mean(column, cols.iter().map(String::as_str))
                            .or_else(|| Some(format!("its columns are {}", cols.join(", "))));
                        self.err(
                            at,
                            format!("in {text:?}: data file `{feeder}` has no column `{column}`"),
                            hint,
                        );
                        ok = false;
                    }
                    _ => {}
                }
            } else if !known.has(&v) {
                let hint = did_you_mean(&v, known.0.iter().map(String::as_str))
                    .or_else(|| Some("variables come from `variables:`, or from `extract:` in an earlier step".into()));
                self.err(at, format!("in {text:?}: undefined variable `{v}`"), hint);
                ok = false;
            }
        }
        ok.then_some(t)
    }

    fn endpoint(&mut self, base: &str, at: Option<(usize, usize)>) -> Option<usize> {
        if let Some(i) = self.endpoints.iter().position(|(b, _)| b == base) {
            return Some(i);
        }
        match Endpoint::parse_with(base, &self.tls, &self.http) {
            Ok((e, _)) => {
                self.endpoints.push((base.to_string(), e));
                Some(self.endpoints.len() - 1)
            }
            Err(e) => {
                self.err(at, format!("{base}: {e}"), None);
                None
            }
        }
    }

    fn name_id(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.name_ids.get(name) {
            return i;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.part_of.push(None);
        self.name_ids.insert(name.to_string(), id);
        id
    }

    fn request(&mut self, sp: &Sp<raw::Request>, known: &mut Known) -> Option<RequestStep> {
        let r: &raw::Request = sp;
        let at = sp.at();
        // Where it goes: a path under `target`, or an absolute URL whose scheme and host are fixed.
        let (endpoint, path) = match (&r.path, &r.url) {
            (Some(_), Some(u)) => {
                self.err(u.at(), "a request has either `path` or `url`, not both", None);
                return None;
            }
            (None, None) => {
                self.err(at, "a request needs `path` (relative to `target`) or `url`", None);
                return None;
            }
            (Some(p), None) => {
                let Some(base) = self.target.clone() else {
                    if self.target_invalid {
                        return None;
                    }
                    self.err(
                        p.at(),
                        "`path` needs `target:` at the top of the file",
                        Some("or give an absolute `url`".into()),
                    );
                    return None;
                };
                let text = if p.starts_with('/') {
                    p.to_string()
                } else {
                    format!("/{}", p.as_str())
                };
                (self.endpoint(&base, p.at()), self.template_at(&text, p.at(), known))
            }
            (None, Some(u)) => {
                let after_scheme = u.find("://").map_or(0, |i| i + 3);
                if u[..u[after_scheme..].find('/').map_or(u.len(), |i| after_scheme + i)].contains("${") {
                    self.err(
                        u.at(),
                        "the scheme and host of a `url` cannot be templated",
                        Some("template the path only".into()),
                    );
                    return None;
                }
                let (base, rest) = match address::split_base(u) {
                    Ok((base, rest)) => (base.to_string(), rest),
                    Err(e) => {
                        self.err(u.at(), e.to_string(), None);
                        return None;
                    }
                };
                (self.endpoint(&base, u.at()), self.template_at(&rest, u.at(), known))
            }
        };
        let has_body = r.json.is_some() || r.body.is_some() || r.body_file.is_some();
        if [r.json.is_some(), r.body.is_some(), r.body_file.is_some()]
            .iter()
            .filter(|b| **b)
            .count()
            > 1
        {
            self.err(at, "a request has one body: `json`, `body` or `body_file`", None);
        }
        let method = match &r.method {
            Some(m) => {
                let up = m.to_ascii_uppercase();
                if !crest_http::is_token(&up) {
                    self.err(m.at(), format!("{:?} is not an HTTP method", m.as_str()), None);
                }
                up
            }
            None if has_body => "POST".into(),
            None => "GET".into(),
        };
        let mut query = Vec::new();
        for (k, v) in r.query.iter().flatten() {
            if let Some(t) = self.template(v, known) {
                query.push((k.clone(), t));
            }
        }
        let headers = self.headers(r.headers.as_ref(), known);
        let body = if let Some(j) = &r.json {
            let at = j.at();
            // serde sees every YAML scalar as a string; the node tree knows which were quoted.
            let typed = j.0.span().start().and_then(|m| self.node_at(m)).map(yaml_to_json);
            let j: &serde_json::Value = typed.as_ref().unwrap_or(j);
            let mut parse = |s: &str| {
                Template::parse(s, self.env)
                    .map_err(|e| format!("in {s:?}: {}", e.message))
                    .and_then(
                        |t| match t.vars().into_iter().find(|v| !v.contains('.') && !known.has(v)) {
                            Some(v) => Err(format!("in {s:?}: undefined variable `{v}`")),
                            None => Ok(t),
                        },
                    )
            };
            match crest_flow::json_template(j, &mut parse) {
                Ok(t) => Body::Json(t),
                Err(m) => {
                    self.err(at, format!("json: {m}"), None);
                    Body::None
                }
            }
        } else if let Some(b) = &r.body {
            self.template(b, known).map_or(Body::None, Body::Text)
        } else if let Some(f) = &r.body_file {
            match std::fs::read(self.resolve(f)) {
                Ok(bytes) => Body::Bytes(bytes),
                Err(e) => {
                    self.err(f.at(), format!("body_file {:?}: cannot read it: {e}", f.as_str()), None);
                    Body::None
                }
            }
        } else {
            Body::None
        };
        let timeout = r.timeout.as_ref().and_then(|t| self.positive_duration(t, "timeout"));
        let checks = r.check.as_ref().map(|c| self.checks(c)).unwrap_or_default();
        let mut extract = Vec::new();
        for (var, e) in r.extract.iter().flatten() {
            if let Some(x) = self.extractor(var, e) {
                extract.push((var.clone(), x));
            }
        }
        let name = match &r.name {
            Some(n) => n.to_string(),
            None => {
                let shown = path.as_ref().map(|p| p.to_string()).unwrap_or_default();
                format!("{method} {}", shown.split('?').next().unwrap_or(""))
            }
        };
        let name = self.name_id(&name);
        // Extracted values are usable from the next step on.
        for (var, _) in &extract {
            known.add(var);
        }
        Some(RequestStep {
            name,
            endpoint: endpoint?,
            method,
            path: path?,
            query,
            headers,
            body,
            extract,
            checks,
            timeout,
        })
    }

    fn headers(
        &mut self,
        h: Option<&indexmap::IndexMap<String, Sp<String>>>,
        known: &Known,
    ) -> Vec<(String, Template)> {
        let mut out = Vec::new();
        for (name, v) in h.into_iter().flatten() {
            if !crest_http::is_token(name) {
                self.err(v.at(), format!("{name:?} is not a valid header name"), None);
                continue;
            }
            // A line break would end the header and start another: refused before any load.
            if let Err(e) = crest_http::check_header(name, v) {
                self.err(v.at(), e.to_string(), None);
                continue;
            }
            if let Some(t) = self.template(v, known) {
                out.push((name.clone(), t));
            }
        }
        out
    }

    fn extractor(&mut self, var: &str, e: &Sp<raw::Extract>) -> Option<Extractor> {
        let made: Result<Extractor, String> = match &**e {
            raw::Extract::Path(p) => Extractor::json(p).map_err(|e| e.to_string()),
            raw::Extract::Source(s) => {
                let given = [
                    s.json.is_some(),
                    s.regex.is_some(),
                    s.header.is_some(),
                    s.status.is_some(),
                ];
                if given.iter().filter(|g| **g).count() != 1 {
                    Err("give exactly one of json, regex, header, status".into())
                } else if let Some(p) = &s.json {
                    Extractor::json(p).map_err(|e| e.to_string())
                } else if let Some(r) = &s.regex {
                    Extractor::regex(r).map_err(|e| e.to_string())
                } else if let Some(h) = &s.header {
                    Ok(Extractor::Header(h.clone()))
                } else {
                    Ok(Extractor::Status)
                }
            }
        };
        made.map_err(|m| self.err(e.at(), format!("extract {var}: {m}"), None))
            .ok()
    }

    fn checks(&mut self, c: &raw::Check) -> Vec<Check> {
        let mut out = Vec::new();
        if let Some(s) = &c.status {
            let mut codes = Vec::new();
            for code in s.to_vec() {
                match code.trim().parse::<u16>() {
                    Ok(c) if (100..=599).contains(&c) => codes.push(c),
                    _ => self.err(s.at(), format!("check status: {code:?} is not an HTTP status"), None),
                }
            }
            out.push(Check::Status(codes));
        }
        for (path, expected) in c.json.iter().flatten() {
            match serde_json_path_parse(path) {
                Ok(p) => out.push(Check::JsonEquals {
                    path: p,
                    text: path.clone(),
                    expected: expected.to_string(),
                }),
                Err(m) => self.err(expected.at(), format!("check json: {m}"), None),
            }
        }
        for path in c.exists.iter().flatten() {
            match serde_json_path_parse(path) {
                Ok(p) => out.push(Check::JsonExists {
                    path: p,
                    text: path.to_string(),
                }),
                Err(m) => self.err(path.at(), format!("check exists: {m}"), None),
            }
        }
        if let Some(b) = &c.body_contains {
            out.push(Check::BodyContains(b.to_string()));
        }
        if let Some(d) = &c.duration_below {
            if let Some(d) = self.duration(d, "duration_below") {
                out.push(Check::DurationBelow(d));
            }
        }
        out
    }

    fn steps(&mut self, steps: &[Sp<raw::Step>], known: &mut Known) -> Vec<Step> {
        let mut out = Vec::new();
        for s in steps {
            let kinds = [
                s.request.is_some(),
                s.poll.is_some(),
                s.think.is_some(),
                s.repeat.is_some(),
                s.sql.is_some(),
                s.set.is_some(),
            ];
            if kinds.iter().filter(|k| **k).count() != 1 {
                let at = self.mapping_at(s);
                self.err(
                    at,
                    "a step is exactly one of `request`, `poll`, `think`, `loop`, `sql` or `set`",
                    None,
                );
                continue;
            }
            if let Some(q) = &s.sql {
                if let Some(step) = self.sql(q, known) {
                    out.push(Step::Sql(step));
                }
                continue;
            }
            if let Some(vars) = &s.set {
                let mut set = Vec::new();
                for (name, v) in vars.iter() {
                    if let Some(t) = self.template(v, known) {
                        set.push((name.clone(), t));
                    }
                }
                for (name, _) in vars.iter() {
                    known.add(name);
                }
                out.push(Step::Set(set));
                continue;
            }
            if let Some(r) = &s.request {
                if let Some(r) = self.request(r, known) {
                    out.push(Step::Request(r));
                }
            } else if let Some(p) = &s.poll {
                if let Some(p) = self.poll(p, known) {
                    out.push(Step::Poll(p));
                }
            } else if let Some(t) = &s.think {
                if let Some((min, max)) = self.think(t) {
                    out.push(Step::Think { min, max });
                }
            } else if let Some(l) = &s.repeat {
                if *l.times == 0 {
                    self.err(l.times.at(), "loop: `times` must be at least 1", None);
                }
                if l.steps.is_empty() {
                    let at = self.mapping_at(s);
                    self.err(at, "loop: `steps` is empty", None);
                }
                // Users run loops by recursion: the depth is bounded here, where it is located.
                if self.loop_depth >= MAX_LOOP_DEPTH {
                    let at = self.mapping_at(s);
                    self.err(
                        at,
                        format!("loops nest deeper than {MAX_LOOP_DEPTH} levels"),
                        Some("flatten the inner loops: `times` multiplies".into()),
                    );
                    continue;
                }
                self.loop_depth += 1;
                let steps = self.steps(&l.steps, known);
                self.loop_depth -= 1;
                out.push(Step::Loop { times: *l.times, steps });
            }
        }
        out
    }

    fn sql(&mut self, q: &Sp<raw::Sql>, known: &mut Known) -> Option<crest_flow::plan::SqlStep> {
        if !self.has_database {
            self.err(
                q.at(),
                "an `sql` step needs `database:` at the top of the file",
                Some("database: {url: \"postgres://user@127.0.0.1:5432/db\"}".into()),
            );
            return None;
        }
        let mut statements = Vec::new();
        let raw: Vec<RawStatement<'_>> = match (&q.query, &q.statements) {
            (Some(query), None) => vec![(None, query, q.params.as_ref())],
            (None, Some(list)) if !list.is_empty() => list
                .iter()
                .map(|s| (s.name.as_ref(), &s.query, s.params.as_ref()))
                .collect(),
            _ => {
                self.err(q.at(), "`sql` has one `query` or a list of `statements`", None);
                return None;
            }
        };
        let first_words = |sql: &str| sql.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
        let step_name = q
            .name
            .as_ref()
            .map_or_else(|| format!("SQL {}", first_words(raw[0].1)), |n| n.to_string());
        let name = self.name_id(&step_name);
        let transaction = q.transaction.unwrap_or(false);
        for (i, (n, query, params)) in raw.iter().enumerate() {
            let mut ps = Vec::new();
            for p in params.iter().flat_map(|v| v.iter()) {
                if let Some(t) = self.template(p, known) {
                    ps.push(t);
                }
            }
            let sname = match n {
                Some(n) => n.to_string(),
                None if transaction => format!("{step_name} / {}: {}", i + 1, first_words(query)),
                None => step_name.clone(),
            };
            let id = if transaction {
                // A statement counts inside its transaction, once; its own figures are a
                // sub-measure. A name already in use keeps the role it has.
                let new = !self.name_ids.contains_key(&sname);
                let id = self.name_id(&sname);
                if new && id != name {
                    self.part_of[id as usize] = Some(name);
                }
                id
            } else {
                name
            };
            statements.push(crest_flow::plan::SqlStatement {
                name: id,
                query: query.to_string(),
                params: ps,
            });
        }
        let mut checks = Vec::new();
        if let Some(c) = &q.check {
            if let Some(n) = &c.rows {
                checks.push(crest_flow::plan::SqlCheck::Rows(**n));
            }
            if let Some(n) = &c.rows_min {
                checks.push(crest_flow::plan::SqlCheck::RowsMin(**n));
            }
            for (col, v) in c.value.iter().flatten() {
                checks.push(crest_flow::plan::SqlCheck::Value(col.clone(), v.to_string()));
            }
        }
        let extract: Vec<(String, String)> = q
            .extract
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        for (var, _) in &extract {
            known.add(var);
        }
        Some(crest_flow::plan::SqlStep {
            name,
            statements,
            transaction,
            extract,
            checks,
        })
    }

    fn poll(&mut self, p: &Sp<raw::Poll>, known: &mut Known) -> Option<PollStep> {
        let request = self.request(&p.request, known);
        let mut until = Vec::new();
        for (var, values) in &p.until {
            if !known.has(var) {
                let hint = Some(format!("extract `{var}` in the poll's request"));
                self.err(
                    values.at(),
                    format!("poll: `until` reads `{var}`, which is never extracted"),
                    hint,
                );
            }
            until.push((var.clone(), values.to_vec()));
        }
        if until.is_empty() {
            self.err(p.at(), "poll: `until` needs at least one variable and its values", None);
        }
        let every = p
            .every
            .as_ref()
            .map_or(Some(DEFAULT_POLL_EVERY), |e| self.positive_duration(e, "every"));
        let max_wait = p
            .max_wait
            .as_ref()
            .map_or(Some(DEFAULT_POLL_MAX_WAIT), |e| self.duration(e, "max_wait"));
        Some(PollStep {
            request: request?,
            until,
            every: every?,
            max_wait: max_wait?,
        })
    }

    fn on_failure(&mut self, f: &Sp<String>) -> OnFailure {
        OnFailure::parse(f).unwrap_or_else(|| {
            let hint = did_you_mean(f, OnFailure::NAMES)
                .or_else(|| Some(format!("write one of {}", OnFailure::NAMES.join(", "))));
            self.err(f.at(), format!("on_failure: unknown choice {:?}", f.as_str()), hint);
            OnFailure::default()
        })
    }

    fn think(&mut self, t: &Sp<String>) -> Option<(Duration, Duration)> {
        let text = t.trim();
        let (a, b) = text.split_once("..").unwrap_or((text, text));
        match (humantime::parse_duration(a.trim()), humantime::parse_duration(b.trim())) {
            (Ok(min), Ok(max)) if min <= max => Some((min, self.bounded(max, t.at(), "think")?)),
            (Ok(_), Ok(_)) => {
                self.err(t.at(), format!("think {text:?}: the range goes backwards"), None);
                None
            }
            _ => {
                self.err(
                    t.at(),
                    format!("think {text:?} is not a duration or a range"),
                    Some("write e.g. 2s or 1s..3s".into()),
                );
                None
            }
        }
    }

    /// The load shape: model, stop rule and segments.
    fn load(&mut self, l: &Sp<raw::Load>) -> Option<(LoadModel, StopRule, Vec<SegmentPlan>)> {
        let at = l.at();
        let shapes = [
            ("users", l.users.is_some()),
            ("stages", l.stages.is_some()),
            ("stepping", l.stepping.is_some()),
            ("threads", l.threads.is_some()),
            ("run_once", l.run_once.is_some()),
            ("rate", l.rate.is_some()),
            ("rate_stages", l.rate_stages.is_some()),
            ("spike", l.spike.is_some()),
        ];
        let given: Vec<&str> = shapes.iter().filter(|(_, g)| *g).map(|(n, _)| *n).collect();
        if given.len() != 1 {
            let msg = if given.is_empty() {
                "load: give one shape".to_string()
            } else {
                format!("load: give one shape, not {}", given.join(" and "))
            };
            self.err(at, msg, Some("users + duration, stages, stepping, threads + loops, run_once, rate + duration, rate_stages, or spike".into()));
            return None;
        }
        let duration = l.duration.as_ref().and_then(|d| self.positive_duration(d, "duration"));
        let ramp_up = l.ramp_up.as_ref().and_then(|d| self.duration(d, "ramp_up"));
        let cap = l.max_in_flight.as_ref().map_or(DEFAULT_MAX_IN_FLIGHT, |c| **c);
        if let Some(c) = &l.max_in_flight {
            self.positive(**c, c.at(), "max_in_flight")?;
            self.users(**c, c.at(), "load: max_in_flight")?;
        }
        let mut stop = StopRule {
            requests: l.iterations.as_ref().map(|i| **i),
            duration,
        };
        let seg = |name: String, start: Duration, users: Option<u64>, rate: Option<f64>| SegmentPlan {
            name,
            start,
            users,
            rate,
        };
        let duration_given = l.duration.is_some();
        let need_duration = |cx: &mut Self, what: &str| {
            if !duration_given {
                cx.err(
                    at,
                    format!("load: `{what}` needs `duration`"),
                    Some("e.g. duration: 5m".into()),
                );
            }
        };
        match given[0] {
            "users" => {
                let n = **l.users.as_ref()?;
                need_duration(self, "users");
                self.positive(n, l.users.as_ref()?.at(), "users")?;
                self.users(n, l.users.as_ref()?.at(), "load: users")?;
                duration?;
                Some((
                    LoadModel::users(n),
                    stop,
                    vec![seg(format!("{n} users"), Duration::ZERO, Some(n), None)],
                ))
            }
            "rate" => {
                let r = **l.rate.as_ref()?;
                need_duration(self, "rate");
                self.rate(r, l.rate.as_ref()?.at(), "load: rate")?;
                duration?;
                Some((
                    LoadModel::rate(r, cap),
                    stop,
                    vec![seg(format!("{r}/s"), Duration::ZERO, None, Some(r))],
                ))
            }
            "stages" => {
                let start = l.start_users.as_ref().map_or(0, |s| **s);
                self.users(start, l.start_users.as_ref().and_then(|s| s.at()), "load: start_users")?;
                let (levels, segments) = self.stages(l.stages.as_ref()?, start as f64, "users")?;
                let stages = levels
                    .iter()
                    .map(|(d, to)| UsersStage {
                        duration: *d,
                        to: *to as u64,
                    })
                    .collect();
                stop.duration = Some(levels.iter().map(|(d, _)| *d).sum());
                let segs = segments
                    .into_iter()
                    .map(|(n, s, lvl)| seg(n, s, Some(lvl as u64), None))
                    .collect();
                Some((
                    LoadModel::Closed {
                        users: UsersProfile { start, stages },
                        iterations: None,
                    },
                    stop,
                    segs,
                ))
            }
            "rate_stages" => {
                let start = l.start_rate.as_ref().map_or(0.0, |s| **s);
                if let Some(r) = &l.start_rate {
                    if **r != 0.0 {
                        self.rate(**r, r.at(), "load: start_rate")?;
                    }
                }
                let (levels, segments) = self.stages(l.rate_stages.as_ref()?, start, "/s")?;
                let stages = levels
                    .iter()
                    .map(|(d, to)| RateStage { duration: *d, to: *to })
                    .collect();
                stop.duration = Some(levels.iter().map(|(d, _)| *d).sum());
                let segs = segments
                    .into_iter()
                    .map(|(n, s, lvl)| seg(n, s, None, Some(lvl)))
                    .collect();
                let model = LoadModel::Open {
                    rate: RateProfile { start, stages },
                    max_in_flight: cap,
                };
                Some((model, stop, segs))
            }
            "stepping" => {
                let s = l.stepping.as_ref()?;
                let every = parse_duration_str(&s.every).or_else(|| {
                    self.err(s.at(), format!("stepping: every {:?} is not a duration", s.every), None);
                    None
                })?;
                let every = self.bounded(every, s.at(), "stepping: every")?;
                self.users(s.max, s.at(), "stepping: max")?;
                if s.step == 0 || s.start == 0 || s.max < s.start || every.is_zero() {
                    self.err(
                        s.at(),
                        "stepping: needs start >= 1, step >= 1, max >= start and every > 0",
                        None,
                    );
                    return None;
                }
                let mut levels = vec![s.start];
                while let Some(&last) = levels.last() {
                    if last >= s.max {
                        break;
                    }
                    levels.push((last + s.step).min(s.max));
                }
                let mut stages = vec![UsersStage {
                    duration: every,
                    to: s.start,
                }];
                let mut segs = vec![seg(format!("{} users", s.start), Duration::ZERO, Some(s.start), None)];
                for (i, lvl) in levels.iter().enumerate().skip(1) {
                    stages.push(UsersStage {
                        duration: Duration::ZERO,
                        to: *lvl,
                    });
                    stages.push(UsersStage {
                        duration: every,
                        to: *lvl,
                    });
                    segs.push(seg(format!("{lvl} users"), every * i as u32, Some(*lvl), None));
                }
                stop.duration = Some(every * levels.len() as u32);
                Some((
                    LoadModel::Closed {
                        users: UsersProfile { start: s.start, stages },
                        iterations: None,
                    },
                    stop,
                    segs,
                ))
            }
            "threads" | "run_once" => {
                let (n, loops, label) = if given[0] == "threads" {
                    let n = **l.threads.as_ref()?;
                    let Some(loops) = l.loops.as_ref().map(|x| **x) else {
                        self.err(
                            at,
                            "load: `threads` needs `loops`",
                            Some("e.g. threads: 5, loops: 10".into()),
                        );
                        return None;
                    };
                    (n, loops, format!("{n} threads x {loops} loops"))
                } else {
                    let n = **l.run_once.as_ref()?;
                    (n, 1, format!("{n} users, once"))
                };
                self.positive(n, at, "users")?;
                self.users(n, at, "load")?;
                self.positive(loops, at, "loops")?;
                let users = match ramp_up {
                    Some(r) if !r.is_zero() => UsersProfile {
                        start: 0,
                        stages: vec![UsersStage { duration: r, to: n }],
                    },
                    _ => UsersProfile::constant(n),
                };
                Some((
                    LoadModel::Closed {
                        users,
                        iterations: Some(loops),
                    },
                    stop,
                    vec![seg(label, Duration::ZERO, Some(n), None)],
                ))
            }
            "spike" => {
                let s = l.spike.as_ref()?;
                let times = [("after", &s.after), ("for", &s.lasts), ("then", &s.then)];
                let mut ds = Vec::new();
                for (what, text) in times {
                    match parse_duration_str(text) {
                        Some(d) => ds.push(self.bounded(d, s.at(), "spike")?),
                        None => {
                            self.err(s.at(), format!("spike: {what} {text:?} is not a duration"), None);
                            return None;
                        }
                    }
                }
                let (after, lasts, then) = (ds[0], ds[1], ds[2]);
                stop.duration = Some(after + lasts + then);
                match (s.users, s.rate) {
                    (Some(base), None) => {
                        self.users(base.max(s.to.min(u64::MAX as f64) as u64), s.at(), "spike")?;
                        let to = s.to as u64;
                        let stages = vec![
                            UsersStage {
                                duration: after,
                                to: base,
                            },
                            UsersStage {
                                duration: Duration::ZERO,
                                to,
                            },
                            UsersStage { duration: lasts, to },
                            UsersStage {
                                duration: Duration::ZERO,
                                to: base,
                            },
                            UsersStage {
                                duration: then,
                                to: base,
                            },
                        ];
                        let segs = vec![
                            seg(format!("baseline {base} users"), Duration::ZERO, Some(base), None),
                            seg(format!("spike {to} users"), after, Some(to), None),
                            seg(format!("recovery {base} users"), after + lasts, Some(base), None),
                        ];
                        Some((
                            LoadModel::Closed {
                                users: UsersProfile { start: base, stages },
                                iterations: None,
                            },
                            stop,
                            segs,
                        ))
                    }
                    (None, Some(base)) => {
                        self.rate(base, s.at(), "spike: rate")?;
                        self.rate(s.to, s.at(), "spike: to")?;
                        let to = s.to;
                        let stages = vec![
                            RateStage {
                                duration: after,
                                to: base,
                            },
                            RateStage {
                                duration: Duration::ZERO,
                                to,
                            },
                            RateStage { duration: lasts, to },
                            RateStage {
                                duration: Duration::ZERO,
                                to: base,
                            },
                            RateStage {
                                duration: then,
                                to: base,
                            },
                        ];
                        let segs = vec![
                            seg(format!("baseline {base}/s"), Duration::ZERO, None, Some(base)),
                            seg(format!("spike {to}/s"), after, None, Some(to)),
                            seg(format!("recovery {base}/s"), after + lasts, None, Some(base)),
                        ];
                        let model = LoadModel::Open {
                            rate: RateProfile { start: base, stages },
                            max_in_flight: cap,
                        };
                        Some((model, stop, segs))
                    }
                    _ => {
                        self.err(
                            s.at(),
                            "spike: give `users` (closed model) or `rate` (open model)",
                            None,
                        );
                        None
                    }
                }
            }
            _ => None,
        }
    }

    fn positive(&mut self, n: u64, at: Option<(usize, usize)>, what: &str) -> Option<()> {
        if n == 0 {
            self.err(at, format!("load: {what} must be at least 1"), None);
            None
        } else {
            Some(())
        }
    }

    /// Stages as (duration, level at the end) plus segments (name, start, level).
    #[allow(clippy::type_complexity)]
    fn stages(
        &mut self,
        stages: &[Sp<raw::Stage>],
        start: f64,
        unit: &str,
    ) -> Option<(Vec<(Duration, f64)>, Vec<(String, Duration, f64)>)> {
        if stages.is_empty() {
            self.err(None, "load: stages are empty", None);
            return None;
        }
        let label = |lvl: f64| {
            if unit == "users" {
                format!("{lvl} users")
            } else {
                format!("{lvl}/s")
            }
        };
        let (mut level, mut t) = (start, Duration::ZERO);
        let (mut levels, mut segs) = (Vec::new(), Vec::new());
        for s in stages {
            let (d, to, name) = match (&s.ramp_to, &s.over, &s.hold) {
                (Some(to), Some(over), None) => {
                    let Some(d) = parse_duration_str(over) else {
                        self.err(s.at(), format!("stage: over {over:?} is not a duration"), None);
                        return None;
                    };
                    (
                        self.bounded(d, s.at(), "stage")?,
                        *to,
                        format!("ramp to {}", label(*to)),
                    )
                }
                (None, None, Some(hold)) => {
                    let Some(d) = parse_duration_str(hold) else {
                        self.err(s.at(), format!("stage: hold {hold:?} is not a duration"), None);
                        return None;
                    };
                    (
                        self.bounded(d, s.at(), "stage")?,
                        level,
                        format!("hold {}", label(level)),
                    )
                }
                _ => {
                    self.err(s.at(), "a stage is `{ramp_to: N, over: 1m}` or `{hold: 5m}`", None);
                    return None;
                }
            };
            if !(to.is_finite() && to >= 0.0) || (unit == "users" && to.fract() != 0.0) {
                self.err(s.at(), format!("stage: ramp_to {to} is not a valid level"), None);
                return None;
            }
            if unit == "users" {
                self.users(to as u64, s.at(), "stage: ramp_to")?;
            } else if to > 0.0 {
                self.rate(to, s.at(), "stage: ramp_to")?;
            }
            segs.push((name, t, to));
            levels.push((d, to));
            level = to;
            t += d;
        }
        if t.is_zero() {
            self.err(stages[0].at(), "load: the stages last no time at all", None);
            return None;
        }
        Some((levels, segs))
    }

    /// The HTTP version and client features of `defaults`.
    fn http_options(&mut self, d: Option<&raw::Defaults>) {
        let Some(d) = d else { return };
        if let Some(v) = &d.http {
            match v.parse::<HttpVersion>() {
                Ok(v) => self.http.version = v,
                Err(e) => self.err(v.at(), format!("http: {e}"), None),
            }
        }
        if let Some(n) = &d.max_streams {
            if **n == 0 {
                self.err(
                    n.at(),
                    "max_streams: at least one stream per connection is needed",
                    None,
                );
            }
            self.http.max_streams = **n;
        }
        if let Some(n) = &d.redirects {
            self.http.max_redirects = **n;
        }
        if let Some(b) = &d.compression {
            self.http.compression = **b;
        }
        if let Some(b) = &d.cookies {
            self.http.cookies = **b;
        }
    }

    /// Builds everything.
    pub fn scenario(&mut self, s: &raw::Scenario) -> Option<Compiled> {
        let d = s.defaults.as_ref();
        let timeout = d
            .and_then(|d| d.timeout.as_ref())
            .map_or(Some(DEFAULT_TIMEOUT), |t| self.positive_duration(t, "timeout"));
        let connect_timeout = d
            .and_then(|d| d.connect_timeout.as_ref())
            .map_or(Some(DEFAULT_CONNECT_TIMEOUT), |t| {
                self.positive_duration(t, "connect_timeout")
            });
        self.tls.insecure = d.and_then(|d| d.insecure.as_ref()).is_some_and(|b| **b);
        self.http_options(d);
        if let Some(ca) = d.and_then(|d| d.cacert.as_ref()) {
            match std::fs::read(self.resolve(ca)) {
                Ok(pem) => self.tls.ca_pem = Some(pem),
                Err(e) => self.err(ca.at(), format!("cacert {:?}: cannot read it: {e}", ca.as_str()), None),
            }
        }
        if let Some(t) = &s.target {
            // The target may come from the environment: `${env:TARGET:-http://127.0.0.1:8080}`.
            let text = match Template::parse(t, self.env) {
                Ok(tpl) if tpl.vars().is_empty() => tpl.render(&NoScope::default()),
                _ => t.to_string(),
            };
            match address::split_base(&text) {
                Ok((base, rest)) if rest == "/" => self.target = Some(base.to_string()),
                Ok(_) => self.err(
                    t.at(),
                    "target is a base URL without a path, e.g. http://127.0.0.1:8080",
                    None,
                ),
                Err(e) => self.err(t.at(), format!("target: {e}"), None),
            }
            self.target_invalid = self.target.is_none();
        }
        if let Some(db) = &s.database {
            self.has_database = true;
            let none = Known::default();
            let url = self.template(&db.url, &none).map(|t| t.render(&NoScope::default()));
            let password = db
                .password
                .as_ref()
                .and_then(|p| self.template(p, &none))
                .map(|t| t.render(&NoScope::default()));
            let timeout = db
                .statement_timeout
                .as_ref()
                .and_then(|t| self.positive_duration(t, "statement_timeout"));
            if let Some(url) = url {
                match crest_pg::PgTarget::parse(&url, password.as_deref(), timeout) {
                    Ok(t) => {
                        self.database = Some(t);
                        self.database_spec = Some(PostgresSpec { url, password });
                    }
                    Err(e) => self.err(db.url.at(), format!("database: {e}"), None),
                }
            }
        }
        // Data files first: their columns are known everywhere.
        let mut feeders = Vec::new();
        for (name, f) in s.data.iter().flatten() {
            let mode = match f.mode.as_ref().map(|m| m.as_str()) {
                None | Some("sequential") => FeedMode::Sequential,
                Some("random") => FeedMode::Random,
                Some("unique") => FeedMode::Unique,
                Some(other) => {
                    let hint = did_you_mean(other, ["sequential", "random", "unique"]);
                    self.err(
                        f.mode.as_ref().and_then(|m| m.at()),
                        format!("data {name}: unknown mode {other:?}"),
                        hint,
                    );
                    FeedMode::Sequential
                }
            };
            let path = self.resolve(&f.file);
            match std::fs::read(&path)
                .map_err(|e| format!("cannot read it: {e}"))
                .and_then(|b| Feeder::from_csv(name, &b, mode).map_err(|e| e.to_string()))
            {
                Ok(feeder) => {
                    self.feeders.push((name.clone(), feeder.columns.clone()));
                    feeders.push(feeder);
                }
                Err(m) => self.err(f.file.at(), format!("data {name}: {:?}: {m}", f.file.as_str()), None),
            }
        }
        let mut known = Known::default();
        let mut variables = Vec::new();
        for (name, v) in s.variables.iter().flatten() {
            if let Some(t) = self.template(v, &known) {
                variables.push((name.clone(), t));
            }
            known.add(name);
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
            for v in k.0 {
                after_flows.add(&v);
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
        let monitor = self.monitor(s.monitor.as_ref());
        let mut stop_when = Vec::new();
        for e in s.stop_when.as_deref().unwrap_or(&[]) {
            match crest_analysis::stop::StopCondition::parse(e) {
                Ok(c) => {
                    self.check_monitored(c.monitored(), &monitor, e, "stop_when");
                    stop_when.push(c.text());
                }
                Err(m) => self.err(e.at(), format!("stop_when: {m}"), None),
            }
        }
        let thresholds = self.exprs(s.thresholds.as_deref(), "thresholds", &monitor);
        if thresholds.iter().any(|t| t.contains("first")) {
            self.err(
                None,
                "thresholds compare with fixed values; `x first` is for stop_when",
                None,
            );
        }
        if let (Some((LoadModel::Closed { users, .. }, _, _)), true) =
            (&load, feeders.iter().any(|f| f.mode == FeedMode::Unique))
        {
            for f in feeders.iter().filter(|f| f.mode == FeedMode::Unique) {
                if (f.rows.len() as u64) < users.max() {
                    self.err(
                        None,
                        format!(
                            "data {}: mode unique needs a row per user: {} rows for {} users",
                            f.name,
                            f.rows.len(),
                            users.max()
                        ),
                        None,
                    );
                }
            }
        }
        let (load, stop, segments) = load?;
        if let Some(p) = stop.duration.and_then(plan::duration_problem) {
            self.err(s.load.at(), format!("load: the run lasts too long: {p}"), None);
            return None;
        }
        let flow = FlowPlan {
            flows,
            on_start,
            on_stop,
            endpoints: std::mem::take(&mut self.endpoints)
                .into_iter()
                .map(|(_, e)| e)
                .collect(),
            variables,
            feeders,
            headers,
            timeout: timeout?,
            connect_timeout: connect_timeout?,
            keepalive: d.and_then(|d| d.keepalive.as_ref()).is_none_or(|k| **k),
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
            stop_when,
            thresholds,
            monitor,
        })
    }

    fn exprs(&mut self, list: Option<&[Sp<String>]>, what: &str, monitor: &MonitorPlan) -> Vec<String> {
        let mut out = Vec::new();
        for e in list.unwrap_or(&[]) {
            match Expr::parse(e) {
                Ok(x) => {
                    self.check_monitored(x.monitored(), monitor, e, what);
                    out.push(x.text)
                }
                Err(m) => self.err(e.at(), format!("{what}: {m}"), None),
            }
        }
        out
    }

    /// A monitored metric in an expression must be one the monitor records.
    fn check_monitored(&mut self, m: Option<&Monitored>, monitor: &MonitorPlan, e: &Sp<String>, what: &str) {
        if let Some(m) = m {
            if let Err(msg) = crest_monitor::check_metric(monitor, &m.metric) {
                self.err(e.at(), format!("{what}: {:?}: {msg}", e.as_str()), None);
            }
        }
    }

    fn monitor(&mut self, m: Option<&raw::Monitor>) -> MonitorPlan {
        let mut plan = MonitorPlan::default();
        let Some(m) = m else { return plan };
        if let Some(i) = &m.interval {
            match self.duration(i, "monitor: interval") {
                Some(d) if d >= Duration::from_millis(100) => plan.interval = d,
                Some(_) => self.err(i.at(), "monitor: interval must be at least 100ms", None),
                None => {}
            }
        }
        plan.host = m.host.as_ref().is_none_or(|h| **h);
        let none = Known::default();
        for p in m.processes.iter().flatten() {
            let given = [
                p.pid.is_some(),
                p.pid_file.is_some(),
                p.name.is_some(),
                p.pattern.is_some(),
            ];
            if given.iter().filter(|g| **g).count() != 1 {
                self.err(
                    p.at(),
                    "monitor: each process needs exactly one of pid, pid_file, name, pattern",
                    None,
                );
                continue;
            }
            // Names, files and patterns may come from the environment, like URLs.
            let env_text = |cx: &mut Self, s: &Sp<String>| cx.template(s, &none).map(|t| t.render(&NoScope::default()));
            let (select, default_label) = if let Some(pid) = &p.pid {
                (ProcessSelect::Pid(**pid), pid.to_string())
            } else if let Some(f) = &p.pid_file {
                let Some(f) = env_text(self, f) else { continue };
                (ProcessSelect::PidFile(self.resolve(&f)), f)
            } else if let Some(n) = &p.name {
                let Some(n) = env_text(self, n) else { continue };
                (ProcessSelect::Name(n.clone()), n)
            } else if let Some(pat) = &p.pattern {
                let Some(text) = env_text(self, pat) else { continue };
                if let Err(e) = regex::Regex::new(&text) {
                    self.err(
                        pat.at(),
                        format!("monitor: pattern {text:?} is not a valid regular expression: {e}"),
                        None,
                    );
                    continue;
                }
                (ProcessSelect::Pattern(text.clone()), text)
            } else {
                continue;
            };
            let label = p.label.as_ref().map_or(default_label, |l| l.to_string());
            if plan.processes.iter().any(|x| x.label == label) {
                self.err(
                    p.at(),
                    format!("monitor: two processes are labelled {label:?}; give each its own label"),
                    None,
                );
                continue;
            }
            plan.processes.push(ProcessSpec { label, select });
        }
        for p in m.prometheus.iter().flatten() {
            let Some(url) = self.template(&p.url, &none).map(|t| t.render(&NoScope::default())) else {
                continue;
            };
            if let Err(e) = address::parse(&url, address::HTTP) {
                self.err(p.url.at(), format!("monitor: {e}"), None);
                continue;
            }
            let mut metrics = Vec::new();
            for name in p.metrics.iter().flatten() {
                match regex::Regex::new(&format!("^(?:{})$", name.as_str())) {
                    Ok(_) => metrics.push(name.to_string()),
                    Err(e) => self.err(
                        name.at(),
                        format!(
                            "monitor: metric pattern {:?} is not a valid regular expression: {e}",
                            name.as_str()
                        ),
                        None,
                    ),
                }
            }
            plan.prometheus.push(PrometheusSpec { url, metrics });
        }
        for p in m.postgres.iter().flatten() {
            let url = self.template(&p.url, &none).map(|t| t.render(&NoScope::default()));
            let password = p
                .password
                .as_ref()
                .and_then(|x| self.template(x, &none))
                .map(|t| t.render(&NoScope::default()));
            if let Some(url) = url {
                match crest_pg::PgTarget::parse(&url, password.as_deref(), None) {
                    Ok(_) => plan.postgres.push(PostgresSpec { url, password }),
                    Err(e) => self.err(p.url.at(), format!("monitor: postgres: {e}"), None),
                }
            }
        }
        if let Some(d) = m.database.as_ref().filter(|d| ***d) {
            match self.database_spec.clone() {
                Some(spec) => plan.postgres.push(spec),
                None => self.err(
                    d.at(),
                    "monitor: database: true needs a `database` in the scenario",
                    None,
                ),
            }
        }
        plan
    }
}

/// Renders templates that read nothing but the environment.
#[derive(Default)]
struct NoScope(std::cell::RefCell<fastrand::Rng>);

impl crest_flow::template::Scope for NoScope {
    fn var(&self, _: &str) -> Option<&str> {
        None
    }
    fn column(&self, _: &str, _: &str) -> Option<&str> {
        None
    }
    fn user(&self) -> u64 {
        0
    }
    fn iteration(&self) -> u64 {
        0
    }
    fn next_seq(&self) -> u64 {
        0
    }
    fn rng(&self) -> &std::cell::RefCell<fastrand::Rng> {
        &self.0
    }
}

/// YAML as JSON, typing plain scalars as YAML does (numbers, true/false, null) and keeping
/// quoted ones as strings.
fn yaml_to_json(node: &marked_yaml::Node) -> serde_json::Value {
    use serde_json::Value;
    match node {
        marked_yaml::Node::Scalar(s) => {
            let text = s.as_str();
            if !s.may_coerce() {
                return Value::String(text.to_string());
            }
            match text {
                "true" | "True" | "TRUE" => Value::Bool(true),
                "false" | "False" | "FALSE" => Value::Bool(false),
                "null" | "Null" | "NULL" | "~" | "" => Value::Null,
                _ => text
                    .parse::<i64>()
                    .map(Value::from)
                    .ok()
                    .or_else(|| {
                        text.parse::<f64>()
                            .ok()
                            .and_then(serde_json::Number::from_f64)
                            .map(Value::Number)
                    })
                    .unwrap_or_else(|| Value::String(text.to_string())),
            }
        }
        marked_yaml::Node::Sequence(s) => Value::Array(s.iter().map(yaml_to_json).collect()),
        marked_yaml::Node::Mapping(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.as_str().to_string(), yaml_to_json(v)))
                .collect(),
        ),
    }
}

fn parse_duration(s: &Sp<String>) -> Option<Duration> {
    parse_duration_str(s)
}

fn parse_duration_str(s: &str) -> Option<Duration> {
    humantime::parse_duration(s.trim()).ok()
}

fn serde_json_path_parse(p: &str) -> Result<crest_flow::extract::JsonPath, String> {
    crest_flow::extract::JsonPath::parse(p).map_err(|e| format!("{p:?} is not a valid JSONPath: {e}"))
}
