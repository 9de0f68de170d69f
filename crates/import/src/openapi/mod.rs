//! `crest import openapi`: an OpenAPI 3.0 or 3.1 spec (YAML or JSON) as a flow of one request
//! per operation, chained so that later operations use what earlier ones returned.
//!
//! The spec is read into a tree ([`spec`]), its operations listed with what they need (path
//! parameters) and what they give (response fields, `links`), ordered so that a producer runs
//! before its consumers ([`chain`]), and each turned into a request whose values come from the
//! spec's examples or are made up from its schemas ([`schema`]).

mod chain;
mod ops;
mod schema;
mod spec;

use crate::snake;
use crate::{Body, Correlation, Extract, Flow, ImportError, Imported, Part, Request, Step};
use chain::{Need, Source};
use crest_model::redact::is_secret_name;
use indexmap::IndexMap;
use ops::{operations, select, Op, Param};
use schema::{literal_json, Gen, Place};
use serde_json::Value;
use spec::{escape, scalar, Spec};

/// Which operations `crest import openapi` takes, and where it sends them.
#[derive(Debug, Clone, Default)]
pub struct OpenApiOptions {
    /// Operations to take, by `operationId` or as `METHOD /path`; empty: all of them.
    pub operations: Vec<String>,
    /// The base URL, instead of the spec's first server.
    pub server: Option<String>,
}

/// Where a spec without an absolute server is sent: `crest target`'s and many a dev server's
/// address; `CREST_TARGET` changes it at run time.
const DEFAULT_ORIGIN: &str = "http://127.0.0.1:8080";

/// The scenario of the spec in `text`; `source_name` names it in errors and comments.
pub fn import(text: &str, source_name: &str, options: &OpenApiOptions) -> Result<Imported, ImportError> {
    let spec = spec::parse(text, source_name)?;
    spec.check_refs()?;
    let ops = operations(&spec)?;
    if ops.is_empty() {
        return Err(spec.error("#/paths", "the spec has no operations"));
    }
    let mut imported = Imported::default();
    let (origin, prefix) = server(&spec, options, &mut imported.notes)?;
    imported.origin = origin;
    let schemes = schemes(&spec)?;
    let token = chain::token_operation(&ops);
    let needs_token = |op: &Op| {
        op.security
            .iter()
            .any(|s| matches!(schemes.get(s), Some(Auth::Bearer { .. })))
    };
    let mut selected = select(&spec, &ops, &options.operations)?;
    let token = token.filter(|t| selected.iter().any(|&i| i != t.op && needs_token(&ops[i])));
    if let Some(t) = &token {
        if !selected.contains(&t.op) {
            selected.insert(0, t.op);
            imported.notes.push(format!(
                "{} was added: it issues the token the operations taken send",
                ops[t.op].label()
            ));
        }
    }
    let needs = chain::needs(&spec, &ops, &selected)?;
    let order = if options.operations.is_empty() {
        chain::order(&ops, &selected, &needs, token.as_ref().map(|t| t.op))
    } else {
        // The user's order, but the token first: nothing secured runs without it.
        let mut order = selected.clone();
        if let Some(t) = &token {
            order.retain(|&i| i != t.op);
            order.insert(0, t.op);
        }
        order
    };
    let mut b = Builder {
        spec: &spec,
        ops: &ops,
        prefix,
        order: order.clone(),
        requests: Vec::new(),
        vars: Vec::new(),
        values: IndexMap::new(),
        imported,
    };
    let token_var = token.as_ref().map(|t| (t.op, t.field.clone()));
    for &i in &order {
        let mut request = b.request(i, &needs, &schemes, token_var.as_ref())?;
        if token_var.as_ref().is_some_and(|(op, _)| *op == i) && !request.extract.contains_key("token") {
            // Extracted even if no later request reads it yet: the token op is there for it.
            request.extract.insert(
                "token".into(),
                Extract::Json(chain::json_path(&[token
                    .as_ref()
                    .map_or("token", |t| t.field.as_str())])),
            );
        }
        b.requests.push(request);
    }
    b.finish(source_name, &selected)
}

/// The origin requests go to and the path prefix every path gets.
fn server(spec: &Spec, options: &OpenApiOptions, notes: &mut Vec<String>) -> Result<(String, String), ImportError> {
    let (url, at) = match &options.server {
        Some(s) => (s.clone(), None),
        None => match spec.root.pointer("/servers/0") {
            Some(server) => {
                let mut url = server.get("url").and_then(Value::as_str).unwrap_or("").to_string();
                if let Some(vars) = server.get("variables").and_then(Value::as_object) {
                    for (name, var) in vars {
                        if let Some(d) = var.get("default") {
                            url = url.replace(&format!("{{{name}}}"), &scalar(d));
                        }
                    }
                }
                (url, Some("#/servers/0/url"))
            }
            None => {
                notes.push(format!(
                    "the spec names no server: requests go to {DEFAULT_ORIGIN} (set CREST_TARGET)"
                ));
                return Ok((DEFAULT_ORIGIN.into(), String::new()));
            }
        },
    };
    if url.contains('{') || url.contains('}') {
        let message = format!("server URL `{url}` has a variable without a default");
        return Err(match at {
            Some(at) => spec.error(at, message),
            None => ImportError::Other(message),
        });
    }
    if url.contains("://") {
        let parsed = url::Url::parse(&url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host());
        let Some(parsed) = parsed else {
            let message = format!("server URL `{url}` is not an http(s) URL");
            return Err(match at {
                Some(at) => spec.error(at, message),
                None => ImportError::Other(format!("--server: {message}")),
            });
        };
        let prefix = parsed.path().trim_end_matches('/').to_string();
        return Ok((parsed.origin().ascii_serialization(), prefix));
    }
    if at.is_none() {
        return Err(ImportError::Other(format!(
            "--server `{url}`: give an absolute URL (http://host:port/base)"
        )));
    }
    // A relative server is relative to where the spec is served, which an import does not know.
    let path = url.trim_end_matches('/');
    let prefix = if path.is_empty() || path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    notes.push(format!(
        "the spec's server `{url}` is relative: requests go to {DEFAULT_ORIGIN}{prefix} (set CREST_TARGET, or give --server)"
    ));
    Ok((DEFAULT_ORIGIN.into(), prefix))
}

/// How a security scheme is sent.
#[derive(Debug, Clone)]
enum Auth {
    /// `Authorization: Bearer ...` (http bearer, OAuth 2, OpenID Connect).
    Bearer {
        example: String,
    },
    /// `Authorization: Basic ...`.
    Basic {
        example: String,
    },
    Header {
        name: String,
        example: String,
    },
    Query {
        name: String,
        example: String,
    },
    Cookie {
        name: String,
        example: String,
    },
}

fn schemes(spec: &Spec) -> Result<IndexMap<String, Auth>, ImportError> {
    let mut out = IndexMap::new();
    let Some(map) = spec
        .root
        .pointer("/components/securitySchemes")
        .and_then(Value::as_object)
    else {
        return Ok(out);
    };
    for (name, s) in map {
        let (s, _) = spec.resolve(s, &format!("#/components/securitySchemes/{}", escape(name)))?;
        let example = s.get("x-example").map(scalar).unwrap_or_default();
        let get = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let auth = match get("type").as_str() {
            "http" if get("scheme").eq_ignore_ascii_case("basic") => Auth::Basic { example },
            "http" if get("scheme").eq_ignore_ascii_case("bearer") => Auth::Bearer { example },
            "oauth2" | "openIdConnect" => Auth::Bearer { example },
            "apiKey" => {
                let key = get("name");
                let example = if example.is_empty() {
                    param_example(spec, &key)
                } else {
                    example
                };
                match get("in").as_str() {
                    "query" => Auth::Query { name: key, example },
                    "cookie" => Auth::Cookie { name: key, example },
                    _ => Auth::Header { name: key, example },
                }
            }
            _ => continue,
        };
        out.insert(name.clone(), auth);
    }
    Ok(out)
}

/// The example a spec gives for an API key where it also declares it as a parameter.
fn param_example(spec: &Spec, name: &str) -> String {
    fn find(v: &Value, name: &str, depth: usize) -> Option<String> {
        if depth > 12 {
            return None;
        }
        match v {
            Value::Object(m) => {
                if m.get("name").and_then(Value::as_str) == Some(name) && m.contains_key("in") {
                    if let Some(e) = m
                        .get("example")
                        .or_else(|| m.get("schema").and_then(|s| s.get("example")))
                    {
                        return Some(scalar(e));
                    }
                }
                m.values().find_map(|c| find(c, name, depth + 1))
            }
            Value::Array(a) => a.iter().find_map(|c| find(c, name, depth + 1)),
            _ => None,
        }
    }
    spec.root
        .get("paths")
        .and_then(|p| find(p, name, 0))
        .unwrap_or_default()
}

/// A variable carried from a producer to its consumers.
struct Var {
    name: String,
    producer: usize,
    source: Source,
    to: Vec<String>,
}

struct Builder<'s, 'a> {
    spec: &'s Spec,
    ops: &'s [Op<'a>],
    prefix: String,
    order: Vec<usize>,
    requests: Vec<Request>,
    vars: Vec<Var>,
    /// Each parameter's value as sent, by operation and name, for links that pass one on.
    values: IndexMap<(usize, String), String>,
    imported: Imported,
}

impl Builder<'_, '_> {
    fn step_of(&self, op: usize) -> usize {
        self.order.iter().position(|&i| i == op).map_or(0, |p| p + 1)
    }

    fn request(
        &mut self,
        i: usize,
        needs: &[Need],
        schemes: &IndexMap<String, Auth>,
        token: Option<&(usize, String)>,
    ) -> Result<Request, ImportError> {
        let op = &self.ops[i];
        let step = self.step_of(i);
        let label = op.label();
        let mut request = Request {
            method: op.method.clone(),
            status: op.success.clone(),
            ..Request::default()
        };
        let mut path = op.path.clone();
        let mut query: Vec<(String, String)> = Vec::new();
        let mut cookies: Vec<String> = Vec::new();
        for p in &op.params {
            let need = needs
                .iter()
                .find(|n| n.consumer == i && n.param == p.name && n.location == p.location);
            let mut carried = match need {
                Some(n) if self.step_of(n.producer) < step && self.step_of(n.producer) > 0 => {
                    self.carry(n, &label, step, p)
                }
                _ => None,
            };
            let was_carried = carried.is_some();
            let value = match carried.take() {
                Some(v) => v,
                None => {
                    if !p.required && !has_example(p.node) {
                        continue;
                    }
                    if matches!(p.location.as_str(), "header")
                        && ["accept", "content-type", "authorization"].contains(&p.name.to_ascii_lowercase().as_str())
                    {
                        continue;
                    }
                    let v = self.param_value(p)?;
                    if p.location == "path" && need.is_none() {
                        self.imported.notes.push(format!(
                            "{label}: {{{}}} is made up ({}): no operation taken returns it",
                            p.name,
                            one_line(&v)
                        ));
                    }
                    v
                }
            };
            self.values.insert((i, p.name.clone()), value.clone());
            match p.location.as_str() {
                "path" => path = path.replace(&format!("{{{}}}", p.name), &value),
                "query" => query.push((encode_template(&p.name), value)),
                "header" => {
                    // A header's own example may be a credential (`X-Session`); made-up values are not.
                    let example = if was_carried { None } else { example_of(self.spec, p)? };
                    let v = match example {
                        Some(e) => self.imported.secrets.keep_or_hide(
                            &p.name,
                            &scalar(&e),
                            &format!("header {} of {label} (step {step})", p.name),
                        ),
                        None => value,
                    };
                    request.headers.insert(p.name.clone(), v);
                }
                "cookie" => cookies.push(format!("{}={value}", p.name)),
                _ => {}
            }
        }
        self.auth(&mut request, &mut query, &mut cookies, op, schemes, token, &label, step);
        if !cookies.is_empty() {
            request.headers.insert("Cookie".into(), cookies.join("; "));
        }
        self.body(&mut request, op, &label, step)?;
        let mut full = format!("{}{path}", self.prefix);
        if !query.is_empty() {
            let q: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            full.push('?');
            full.push_str(&q.join("&"));
        }
        let template = format!("{}{}", self.prefix, op.path);
        if full != template {
            request.name = Some(format!("{} {template}", op.method));
        }
        request.path = Some(full);
        Ok(request)
    }

    /// The template that carries a needed value, its variable extracted by the producer.
    fn carry(&mut self, n: &Need, label: &str, step: usize, p: &Param) -> Option<String> {
        let to = format!("the {} of {label} (step {step})", p.location);
        match &n.source {
            Source::Constant(v) => Some(encode_template(&crate::literal(&scalar(v)))),
            Source::Param(name) => self.values.get(&(n.producer, name.clone())).cloned(),
            source => {
                let name = match self
                    .vars
                    .iter_mut()
                    .find(|v| v.producer == n.producer && v.source == *source)
                {
                    Some(v) => {
                        v.to.push(to);
                        v.name.clone()
                    }
                    None => {
                        let base = chain::var_name(&self.ops[n.producer], source);
                        let mut name = base.clone();
                        let mut k = 2;
                        while name == "token" || self.vars.iter().any(|v| v.name == name) {
                            name = format!("{base}_{k}");
                            k += 1;
                        }
                        self.vars.push(Var {
                            name: name.clone(),
                            producer: n.producer,
                            source: source.clone(),
                            to: vec![to],
                        });
                        name
                    }
                };
                Some(format!("${{{name}}}"))
            }
        }
    }

    fn param_value(&self, p: &Param) -> Result<String, ImportError> {
        if let Some(e) = example_of(self.spec, p)? {
            return Ok(text_of(&literal_json(&e), true));
        }
        let schema = p.node.and_then(|n| n.get("schema"));
        let v = match schema {
            Some(s) => Gen::new(self.spec, Place::Text).value(s, &format!("{}/schema", p.at), &p.name)?,
            None => None,
        };
        Ok(match v {
            Some(v) => text_of(&v, true),
            None if p.name.to_ascii_lowercase().ends_with("id") => "1".into(),
            None => encode_template(&crate::literal(&p.name)),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn auth(
        &mut self,
        request: &mut Request,
        query: &mut Vec<(String, String)>,
        cookies: &mut Vec<String>,
        op: &Op,
        schemes: &IndexMap<String, Auth>,
        token: Option<&(usize, String)>,
        label: &str,
        step: usize,
    ) {
        for name in &op.security {
            let Some(auth) = schemes.get(name) else { continue };
            let from = format!("security scheme {name} of {label} (step {step})");
            let hint = snake(name);
            match auth {
                Auth::Bearer { example } => {
                    let value = match token {
                        Some((t, field)) if *t != op.index => {
                            let to = format!("header Authorization of {label} (step {step})");
                            match self.imported.correlated.iter_mut().find(|c| c.variable == "token") {
                                Some(c) => c.to.push(to),
                                None => {
                                    let producer = &self.ops[*t];
                                    self.imported.correlated.push(Correlation {
                                        variable: "token".into(),
                                        from: format!(
                                            "{} of {} (step {})",
                                            chain::json_path(&[field.as_str()]),
                                            producer.label(),
                                            self.step_of(*t)
                                        ),
                                        to: vec![to],
                                    });
                                }
                            }
                            "${token}".to_string()
                        }
                        _ => self.imported.secrets.hide(&hint, example, &from),
                    };
                    request
                        .headers
                        .insert("Authorization".into(), format!("Bearer {value}"));
                }
                Auth::Basic { example } => {
                    let value = self.imported.secrets.hide(&hint, example, &from);
                    request.headers.insert("Authorization".into(), format!("Basic {value}"));
                }
                Auth::Header { name: h, example } => {
                    let value = self.imported.secrets.hide(h, example, &from);
                    request.headers.insert(h.clone(), value);
                }
                Auth::Query { name: q, example } => {
                    let value = self.imported.secrets.hide(q, example, &from);
                    query.push((encode_template(q), value));
                }
                Auth::Cookie { name: c, example } => {
                    let value = self.imported.secrets.hide(c, example, &from);
                    cookies.push(format!("{c}={value}"));
                }
            }
        }
    }

    fn body(&mut self, request: &mut Request, op: &Op, label: &str, step: usize) -> Result<(), ImportError> {
        let Some(rb) = op.node.get("requestBody") else {
            return Ok(());
        };
        let (rb, rb_at) = self.spec.resolve(rb, &format!("{}/requestBody", op.pointer))?;
        let Some(content) = rb.get("content").and_then(Value::as_object) else {
            return Ok(());
        };
        let rank = |m: &str| {
            let m = m.split(';').next().unwrap_or(m).trim().to_ascii_lowercase();
            if m == "application/json" {
                0
            } else if m.ends_with("+json") {
                1
            } else if m == "application/x-www-form-urlencoded" {
                2
            } else if m == "multipart/form-data" {
                3
            } else if m.starts_with("text/") {
                4
            } else {
                5
            }
        };
        let Some((media_type, media)) = content.iter().min_by_key(|(m, _)| rank(m)) else {
            return Ok(());
        };
        let m_at = format!("{rb_at}/content/{}", escape(media_type));
        let from = format!("{label} (step {step})");
        let value = match self.media_example(media, &m_at)? {
            Some(raw) => hide_secrets(&raw, &mut self.imported.secrets, &from),
            None => match media.get("schema") {
                Some(s) => hide_made_up_secrets(
                    Gen::new(self.spec, Place::Body)
                        .value(s, &format!("{m_at}/schema"), "")?
                        .unwrap_or(Value::Null),
                    &mut self.imported.secrets,
                    &from,
                ),
                None => Value::Null,
            },
        };
        let kind = rank(media_type);
        request.body = Some(match kind {
            0 | 1 => {
                if kind == 1 {
                    request.headers.insert("Content-Type".into(), media_type.clone());
                }
                Body::Json(value)
            }
            2 => Body::Form(fields_of(&value)),
            3 => Body::Multipart(
                fields_of(&value)
                    .into_iter()
                    .map(|(name, v)| Part {
                        name,
                        value: Some(v),
                        ..Part::default()
                    })
                    .collect(),
            ),
            _ => {
                request.headers.insert("Content-Type".into(), media_type.clone());
                Body::Text(text_of(&value, false))
            }
        });
        Ok(())
    }

    /// The media type's own example: `example`, else the first of `examples`.
    fn media_example(&self, media: &Value, at: &str) -> Result<Option<Value>, ImportError> {
        if let Some(e) = media.get("example") {
            return Ok(Some(e.clone()));
        }
        if let Some(examples) = media.get("examples").and_then(Value::as_object) {
            for (k, e) in examples {
                let (e, _) = self.spec.resolve(e, &format!("{at}/examples/{}", escape(k)))?;
                if let Some(v) = e.get("value") {
                    return Ok(Some(v.clone()));
                }
            }
        }
        Ok(None)
    }

    fn finish(mut self, source: &str, selected: &[usize]) -> Result<Imported, ImportError> {
        for v in &self.vars {
            let extract = match &v.source {
                Source::Body(path) => {
                    Extract::Json(chain::json_path(&path.iter().map(String::as_str).collect::<Vec<_>>()))
                }
                Source::Header(h) => Extract::Header(h.clone()),
                Source::Param(_) | Source::Constant(_) => continue,
            };
            let step = self.step_of(v.producer);
            if let Some(r) = self.requests.get_mut(step.saturating_sub(1)) {
                r.extract.insert(v.name.clone(), extract.clone());
            }
            let what = match &extract {
                Extract::Json(p) => p.clone(),
                Extract::Header(h) => format!("header {h}"),
                Extract::Regex(x) => x.clone(),
            };
            self.imported.correlated.push(Correlation {
                variable: v.name.clone(),
                from: format!("{what} of {} (step {step})", self.ops[v.producer].label()),
                to: v.to.clone(),
            });
        }
        let title = self.spec.root.pointer("/info/title").map(scalar).unwrap_or_default();
        let version = self.spec.root.pointer("/info/version").map(scalar).unwrap_or_default();
        let about = [title, version]
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join(" ");
        let n = self.requests.len();
        let count = if selected.len() == self.ops.len() || self.ops.len() == n {
            format!("{n} operation{}", if n == 1 { "" } else { "s" })
        } else {
            format!("{n} of {} operations", self.ops.len())
        };
        let about = if about.is_empty() {
            String::new()
        } else {
            format!(" ({about})")
        };
        self.imported.made_from = vec![format!("OpenAPI {} spec {source}{about}: {count}", self.spec.version)];
        self.imported.flows = vec![Flow {
            name: "main".into(),
            steps: self.requests.into_iter().map(|r| Step::Request(Box::new(r))).collect(),
        }];
        Ok(self.imported)
    }
}

fn has_example(node: Option<&Value>) -> bool {
    node.is_some_and(|n| {
        n.get("example").is_some()
            || n.get("examples").is_some()
            || n.get("schema")
                .is_some_and(|s| s.get("example").is_some() || s.get("default").is_some())
    })
}

/// A parameter's own example (`example`, the first of `examples`), as the spec writes it.
fn example_of(spec: &Spec, p: &Param) -> Result<Option<Value>, ImportError> {
    let Some(node) = p.node else { return Ok(None) };
    if let Some(e) = node.get("example") {
        return Ok(Some(e.clone()));
    }
    if let Some(examples) = node.get("examples").and_then(Value::as_object) {
        for (k, e) in examples {
            let (e, _) = spec.resolve(e, &format!("{}/examples/{}", p.at, escape(k)))?;
            if let Some(v) = e.get("value") {
                return Ok(Some(v.clone()));
            }
        }
    }
    Ok(None)
}

/// A value (templates) as the text of a parameter or a text body; `encode` percent-encodes it
/// for a URL.
fn text_of(v: &Value, encode: bool) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(|i| text_of(i, false)).collect::<Vec<_>>().join(","),
        Value::Null => String::new(),
        other => crate::literal(&other.to_string()),
    };
    if encode {
        encode_template(&text)
    } else {
        text
    }
}

/// Form fields of an object (templates); values that are not text are sent as their JSON.
fn fields_of(v: &Value) -> IndexMap<String, String> {
    match v {
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), text_of(v, false))).collect(),
        _ => IndexMap::new(),
    }
}

/// A recorded body as templates, with fields whose names look secret taken out to the
/// environment (a login's password).
fn hide_secrets(v: &Value, secrets: &mut crate::Secrets, from: &str) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => Value::String(secrets.keep_or_hide(k, s, &format!("field {k} of {from}"))),
                        other => hide_secrets(other, secrets, from),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|i| hide_secrets(i, secrets, from)).collect()),
        other => literal_json(other),
    }
}

/// A body made up from its schema, with the plain values of secret-looking fields taken out
/// as an example's are: a property's own `example` (`password: demo`, an API key) is a
/// credential as much as a media type's. A function (`${uuid}`) is left to run: it is made
/// fresh each time and is no one's secret.
fn hide_made_up_secrets(v: Value, secrets: &mut crate::Secrets, from: &str) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) if !s.is_empty() && !s.contains("${") && is_secret_name(&k) => {
                            Value::String(secrets.hide(&k, &s, &format!("field {k} of {from}")))
                        }
                        other => hide_made_up_secrets(other, secrets, from),
                    };
                    (k, v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|i| hide_made_up_secrets(i, secrets, from))
                .collect(),
        ),
        other => other,
    }
}

/// Percent-encodes what a URL cannot hold as it is, leaving `${...}` templates (and `$${`)
/// whole so that they still render.
pub(super) fn encode_template(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("$${") {
            out.push_str("$${");
            rest = after;
            continue;
        }
        if rest.starts_with("${") {
            if let Some(close) = rest.find('}') {
                out.push_str(&rest[..=close]);
                rest = &rest[close + 1..];
                continue;
            }
        }
        let Some(c) = rest.chars().next() else { break };
        if c.is_ascii_alphanumeric() || "-._~!$'()*+,;:@".contains(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests;
