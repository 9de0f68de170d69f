//! Requests: where they go, their method, query, headers and body, what they extract and check.

use super::vars::{Known, NoScope};
use super::{exactly_one, Cx};
use crate::raw::{self, Sp};
use crest_flow::extract::{Check, Extractor, JsonPath};
use crest_flow::plan::{Body, JsonTemplate, Part, PartContent, RequestStep};
use crest_flow::template::Template;
use crest_model::address;

impl Cx<'_> {
    /// `target:`, the base URL that `path`s are relative to.
    pub(super) fn target(&mut self, t: &Sp<String>) {
        // The target may come from the environment: `${env:TARGET:-http://127.0.0.1:8080}`.
        let text = match Template::parse(t, self.env) {
            Ok(tpl) if tpl.vars().is_empty() => tpl.render(&NoScope::default()),
            _ => t.to_string(),
        };
        match address::split_base(&address::stream_as_http(&text)) {
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

    pub(super) fn endpoint(&mut self, base: &str, at: Option<(usize, usize)>) -> Option<usize> {
        self.server(base, at, false)
    }

    /// The index of the server at `base` (a gRPC one when `grpc`), added when first named.
    pub(super) fn server(&mut self, base: &str, at: Option<(usize, usize)>, grpc: bool) -> Option<usize> {
        if let Some(i) = self.endpoints.iter().position(|s| s.base == base && s.grpc == grpc) {
            return Some(i);
        }
        // Made once the plan is resolved, with its connection settings (see `FlowDraft`).
        match address::parse(base, address::HTTP) {
            Ok(_) => {
                self.endpoints.push(super::Server {
                    base: base.to_string(),
                    at,
                    grpc,
                });
                Some(self.endpoints.len() - 1)
            }
            Err(e) => {
                self.err(at, format!("{base}: {e}"), None);
                None
            }
        }
    }

    pub(super) fn name_id(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.name_ids.get(name) {
            return i;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.part_of.push(None);
        self.name_ids.insert(name.to_string(), id);
        id
    }

    pub(super) fn request(&mut self, sp: &Sp<raw::Request>, known: &mut Known) -> Option<RequestStep> {
        let r: &raw::Request = sp;
        let at = sp.at();
        // Where it goes: a path under `target`, or an absolute URL whose scheme and host are fixed.
        let (endpoint, path) = self.destination(r.path.as_ref(), r.url.as_ref(), at, known)?;
        let bodies = [
            r.json.is_some(),
            r.body.is_some(),
            r.body_file.is_some(),
            r.form.is_some(),
            r.multipart.is_some(),
        ];
        let has_body = bodies.contains(&true);
        if bodies.iter().filter(|b| **b).count() > 1 {
            self.err(
                at,
                "a request has one body: `json`, `body`, `body_file`, `form` or `multipart`",
                None,
            );
        }
        let method = crest_model::plan::method(r.method.as_deref().map(String::as_str), has_body);
        if let Some(m) = r.method.as_ref().filter(|_| !crest_http::is_token(&method)) {
            self.err(m.at(), format!("{:?} is not an HTTP method", m.as_str()), None);
        }
        let mut query = Vec::new();
        for (k, v) in r.query.iter().flatten() {
            if let Some(t) = self.template(v, known) {
                query.push((k.clone(), t));
            }
        }
        let headers = self.headers(r.headers.as_ref(), known);
        let body = self.body(r, known);
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

    /// Where a request goes: a path under `target`, or an absolute URL whose scheme and host are
    /// fixed. Its endpoint and its path, each `None` when at fault (and reported); `None` when it
    /// gives neither or both, or a URL that cannot be used at all.
    pub(super) fn destination(
        &mut self,
        path: Option<&Sp<String>>,
        url: Option<&Sp<String>>,
        at: Option<(usize, usize)>,
        known: &Known,
    ) -> Option<(Option<usize>, Option<Template>)> {
        let place = match (path, url) {
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
                let (base, rest) = match address::split_base(&address::stream_as_http(u)) {
                    Ok((base, rest)) => (base.to_string(), rest),
                    Err(e) => {
                        self.err(u.at(), e.to_string(), None);
                        return None;
                    }
                };
                (self.endpoint(&base, u.at()), self.template_at(&rest, u.at(), known))
            }
        };
        Some(place)
    }

    /// JSON written in YAML at `at`, its strings templates; `None` when one is at fault
    /// (reported under `what`).
    pub(super) fn json_at(
        &mut self,
        j: &serde_json::Value,
        at: Option<(usize, usize)>,
        what: &str,
        known: &Known,
    ) -> Option<JsonTemplate> {
        // serde sees every YAML scalar as a string; the node tree knows which were quoted.
        let typed = at.and_then(|at| self.node_at(at)).map(yaml_to_json);
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
            Ok(t) => Some(t),
            Err(m) => {
                self.err(at, format!("{what}: {m}"), None);
                None
            }
        }
    }

    /// A request's body, of whichever kind it gives; [`Body::None`] when it gives none or the one
    /// it gives is at fault (reported).
    fn body(&mut self, r: &raw::Request, known: &Known) -> Body {
        if let Some(j) = &r.json {
            self.json_at(j, j.at(), "json", known).map_or(Body::None, Body::Json)
        } else if let Some(b) = &r.body {
            self.template(b, known).map_or(Body::None, Body::Text)
        } else if let Some(f) = &r.body_file {
            match crest_model::input::read_file(&self.source(f), crest_model::input::MAX_DATA_FILE) {
                Ok(bytes) => Body::Bytes(bytes),
                Err(e) => {
                    self.err(f.at(), format!("body_file {:?}: cannot read it: {e}", f.as_str()), None);
                    Body::None
                }
            }
        } else if let Some(fields) = &r.form {
            let mut out = Vec::new();
            for (k, v) in fields {
                if let Some(t) = self.template(v, known) {
                    out.push((k.clone(), t));
                }
            }
            Body::Form(out)
        } else if let Some(parts) = &r.multipart {
            Body::Multipart(parts.iter().filter_map(|p| self.part(p, known)).collect())
        } else {
            Body::None
        }
    }

    /// One multipart part: a templated value, or a file read now.
    fn part(&mut self, p: &Sp<raw::MultipartPart>, known: &Known) -> Option<Part> {
        let content = match (&p.value, &p.file) {
            (Some(v), None) => PartContent::Value(self.template(v, known)?),
            (None, Some(f)) => {
                match crest_model::input::read_file(&self.source(f), crest_model::input::MAX_DATA_FILE) {
                    Ok(bytes) => PartContent::File {
                        filename: std::path::Path::new(f.as_str())
                            .file_name()
                            .map_or_else(|| f.to_string(), |n| n.to_string_lossy().into_owned()),
                        content_type: p
                            .content_type
                            .clone()
                            .unwrap_or_else(|| "application/octet-stream".into()),
                        bytes,
                    },
                    Err(e) => {
                        self.err(
                            f.at(),
                            format!("multipart file {:?}: cannot read it: {e}", f.as_str()),
                            None,
                        );
                        return None;
                    }
                }
            }
            _ => {
                self.err(
                    p.at(),
                    format!("multipart part {:?}: give `value` or `file`", p.name),
                    None,
                );
                return None;
            }
        };
        if let Some(t) = &p.content_type {
            if t.bytes().any(|b| b == b'\r' || b == b'\n') {
                self.err(p.at(), "multipart content_type: contains a line break", None);
                return None;
            }
        }
        Some(Part {
            name: p.name.clone(),
            content,
        })
    }

    pub(super) fn headers(
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

    pub(super) fn extractor(&mut self, var: &str, e: &Sp<raw::Extract>) -> Option<Extractor> {
        let made: Result<Extractor, String> = match &**e {
            raw::Extract::Path(p) => Extractor::json(p).map_err(|e| e.to_string()),
            raw::Extract::Source(s) => {
                let given = [
                    s.json.is_some(),
                    s.regex.is_some(),
                    s.header.is_some(),
                    s.status == Some(raw::Flag(true)),
                ];
                if !exactly_one(&given) {
                    Err("give exactly one of json, regex, header, status".into())
                } else if let Some(p) = &s.json {
                    if s.all == Some(raw::Flag(true)) {
                        Extractor::json_all(p).map_err(|e| e.to_string())
                    } else {
                        Extractor::json(p).map_err(|e| e.to_string())
                    }
                } else if s.all.is_some() {
                    Err("`all` goes with `json`".to_string())
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

    pub(super) fn checks(&mut self, c: &raw::Check) -> Vec<Check> {
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
            match JsonPath::parse(path) {
                Ok(p) => out.push(Check::JsonEquals {
                    path: p,
                    text: path.clone(),
                    expected: expected.to_string(),
                }),
                Err(e) => self.err(
                    expected.at(),
                    format!("check json: {path:?} is not a valid JSONPath: {e}"),
                    None,
                ),
            }
        }
        for path in c.exists.iter().flatten() {
            match JsonPath::parse(path) {
                Ok(p) => out.push(Check::JsonExists {
                    path: p,
                    text: path.to_string(),
                }),
                Err(e) => self.err(
                    path.at(),
                    format!("check exists: {:?} is not a valid JSONPath: {e}", path.as_str()),
                    None,
                ),
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
