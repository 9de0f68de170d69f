//! `grpc` steps and the `protos:` that describe their services; a step whose service no file
//! describes is described by its server's reflection when the plan is resolved
//! ([`reflect`]), before anything is sent.

use super::vars::Known;
use super::Cx;
use crate::raw::{self, Sp};
use crate::Problem;
use crest_flow::plan::{GrpcMethod, GrpcStep, JsonTemplate, ReadUntil};
use crest_grpc::Protos;
use crest_http::Endpoint;
use crest_model::address;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// A call's deadline unless the step sets one.
const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);

/// How long reflection may take per server, after connecting.
const REFLECTION_DEADLINE: Duration = Duration::from_secs(10);

/// Stands for a templated string when a message is checked before the run: its value is only
/// known per call.
const TEMPLATED: &str = "\u{1}templated";

/// A `grpc` step whose method its server's reflection is to describe.
#[derive(Debug)]
pub(crate) struct Described {
    pub at: Option<(usize, usize)>,
    pub endpoint: usize,
    pub call: String,
    /// The step's messages, templated strings as [`TEMPLATED`].
    pub messages: Vec<Value>,
    pub method: Arc<OnceLock<GrpcMethod>>,
}

impl Cx<'_> {
    /// `protos:` compiled, with its imports found in `proto_include:` or beside each file.
    pub(super) fn protos(&mut self, files: Option<&[Sp<String>]>, include: Option<&[Sp<String>]>) {
        let Some(files) = files else {
            if let Some(i) = include.and_then(|i| i.first()) {
                self.err(i.at(), "`proto_include` goes with `protos`", None);
            }
            return;
        };
        let mut paths = Vec::new();
        for f in files {
            let path = self.source(f);
            // Read here, as every input is (a FIFO or a device is refused), so that a file that
            // is missing is said to be, not to be outside the include paths.
            match crest_model::input::read_text_file(&path, crest_model::input::MAX_DATA_FILE) {
                Ok(_) => paths.push(path),
                Err(e) => self.err(f.at(), format!("protos: {:?}: cannot read it: {e}", f.as_str()), None),
            }
        }
        if paths.len() < files.len() {
            self.protos = Some(None);
            return;
        }
        let mut includes: Vec<PathBuf> = include.into_iter().flatten().map(|d| self.resolve(d)).collect();
        if includes.is_empty() {
            for p in &paths {
                let dir = p.parent().map(PathBuf::from).unwrap_or_default();
                if !includes.contains(&dir) {
                    includes.push(dir);
                }
            }
        }
        let compiled = Protos::compile(&paths, &includes);
        if let Err(e) = &compiled {
            let at = files.first().and_then(|f| f.at());
            self.err(at, format!("protos: {}", e.message), e.hint.clone());
        }
        self.protos = Some(compiled.ok());
    }

    pub(super) fn grpc(&mut self, sp: &Sp<raw::Grpc>, known: &mut Known) -> Option<GrpcStep> {
        let g: &raw::Grpc = sp;
        let endpoint = self.grpc_server(g, sp.at());
        let messages: Vec<JsonTemplate> = match (&g.message, &g.messages) {
            (Some(_), Some(m)) => {
                self.err(m.at(), "grpc: give `message` or `messages`, not both", None);
                return None;
            }
            (Some(m), None) => vec![self.json_at(m, m.at(), "grpc: message", known)?],
            (None, Some(list)) => {
                let typed = self.json_at(&Value::Array(list.to_vec()), list.at(), "grpc: messages", known)?;
                match typed {
                    JsonTemplate::Array(items) if !items.is_empty() => items,
                    _ => {
                        self.err(list.at(), "grpc: `messages` needs at least one message", None);
                        return None;
                    }
                }
            }
            (None, None) => vec![JsonTemplate::Value(Value::Object(Default::default()))],
        };
        let mut metadata = Vec::new();
        for (name, value) in g.metadata.iter().flatten() {
            let lower = name.to_ascii_lowercase();
            if crest_grpc::reserved(name) || !crest_http::is_token(name) {
                self.err(
                    value.at(),
                    format!(
                        "grpc: metadata {name:?} cannot be set: keys are tokens, and `grpc-` keys and \
                         HTTP/2's own headers (content-type, te, ...) are gRPC's"
                    ),
                    None,
                );
                continue;
            }
            if let Some(t) = self.template(value, known) {
                metadata.push((lower, t));
            }
        }
        let timeout = g
            .timeout
            .as_ref()
            .map_or(Some(DEFAULT_DEADLINE), |t| self.positive_duration(t, "timeout"));
        let until = g.until.as_ref().map(|u| self.read_until(u, "grpc"));
        let checks = g.check.as_ref().map(|c| self.checks(c)).unwrap_or_default();
        let mut extract = Vec::new();
        for (var, x) in g.extract.iter().flatten() {
            if let Some(x) = self.extractor(var, x) {
                extract.push((var.clone(), x));
            }
        }
        for (var, _) in &extract {
            known.add(var);
        }
        let name = g
            .name
            .as_ref()
            .map_or_else(|| g.call.trim().to_string(), |n| n.to_string());
        if !self.grpc_names.contains(&name) {
            self.grpc_names.push(name.clone());
        }
        let name = self.name_id(&name);
        let endpoint = endpoint?;
        let method = Arc::new(OnceLock::new());
        let shapes: Vec<Value> = messages.iter().map(shape).collect();
        match &self.protos {
            // Reported where `protos` is.
            Some(None) => {}
            Some(Some(protos)) => match describe(protos, &g.call, &shapes) {
                Ok(m) => {
                    let _ = method.set(m);
                }
                Err((message, hint)) => self.err(g.call.at(), format!("grpc: {message}"), hint),
            },
            None => {
                if crest_grpc::Protos::split_method(&g.call).is_none() {
                    self.err(
                        g.call.at(),
                        format!("grpc: {:?} is not a method name", g.call.as_str()),
                        Some("write it as package.Service/Method".into()),
                    );
                }
                self.described.push(Described {
                    at: g.call.at(),
                    endpoint,
                    call: g.call.to_string(),
                    messages: shapes,
                    method: method.clone(),
                });
            }
        }
        Some(GrpcStep {
            name,
            endpoint,
            method,
            messages,
            metadata,
            timeout: timeout?,
            until,
            extract,
            checks,
        })
    }

    /// The step's server: `url`, or `target`, as an HTTP/2 endpoint of its own.
    fn grpc_server(&mut self, g: &raw::Grpc, at: Option<(usize, usize)>) -> Option<usize> {
        let Some(u) = &g.url else {
            let Some(base) = self.target.clone() else {
                if !self.target_invalid {
                    self.err(
                        at,
                        "grpc: a call needs `target:` at the top of the file or a `url`",
                        Some("e.g. url: http://127.0.0.1:50051".into()),
                    );
                }
                return None;
            };
            return self.server(&base, at, true);
        };
        match address::split_base(&address::stream_as_http(u)) {
            Ok((base, rest)) if rest == "/" => {
                let base = base.to_string();
                self.server(&base, u.at(), true)
            }
            Ok(_) => {
                self.err(
                    u.at(),
                    "grpc: `url` names the server only, e.g. http://127.0.0.1:50051; the method is `call`",
                    None,
                );
                None
            }
            Err(e) => {
                self.err(u.at(), format!("grpc: {e}"), None);
                None
            }
        }
    }

    /// `until:` of a step that reads messages.
    pub(super) fn read_until(&mut self, u: &raw::ReadUntil, step: &str) -> ReadUntil {
        if let Some(c) = u.count.as_ref().filter(|c| ***c == 0) {
            self.err(c.at(), format!("{step}: `count` must be at least 1"), None);
        }
        ReadUntil {
            matches: u.matches.as_ref().and_then(|m| {
                regex::Regex::new(m)
                    .map_err(|err| self.err(m.at(), format!("{step}: `matches` is not a valid regex: {err}"), None))
                    .ok()
            }),
            count: u.count.as_ref().map_or(1, |c| **c),
        }
    }
}

/// A message as JSON with each templated string as [`TEMPLATED`].
fn shape(j: &JsonTemplate) -> Value {
    match j {
        JsonTemplate::Value(v) => v.clone(),
        JsonTemplate::String(_) => Value::String(TEMPLATED.into()),
        JsonTemplate::Array(items) => Value::Array(items.iter().map(shape).collect()),
        JsonTemplate::Object(fields) => Value::Object(fields.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
    }
}

fn holds_template(v: &Value) -> bool {
    match v {
        Value::String(s) => s == TEMPLATED,
        Value::Array(a) => a.iter().any(holds_template),
        Value::Object(o) => o.values().any(holds_template),
        _ => false,
    }
}

/// The method `call` names in `protos`, with the step's messages checked against it and, when
/// no template is in them, encoded once.
fn describe(protos: &Protos, call: &str, messages: &[Value]) -> Result<GrpcMethod, (String, Option<String>)> {
    let method = protos.method(call).map_err(|e| (e.message, e.hint))?;
    if messages.len() > 1 && !method.client_streaming() {
        return Err((
            format!(
                "{} takes one request message, not a stream of {}",
                call.trim(),
                messages.len()
            ),
            Some("give `message`".into()),
        ));
    }
    let templated = |s: &str| s == TEMPLATED;
    for m in messages {
        method
            .check(m, &templated)
            .map_err(|e| (format!("message for {}: {e}", method.input_name()), None))?;
    }
    let fixed = if messages.iter().any(holds_template) {
        None
    } else {
        messages
            .iter()
            .map(|m| method.encode(m).ok())
            .collect::<Option<Vec<_>>>()
    };
    Ok(GrpcMethod { method, fixed })
}

/// Describes each step in `described` by its server's reflection (each server asked once, for
/// all the services its steps call), over `endpoints` as the run will reach them.
pub(crate) fn reflect(endpoints: &[Endpoint], described: Vec<Described>, connect_timeout: Duration) -> Vec<Problem> {
    if described.is_empty() {
        return Vec::new();
    }
    // Reflection is asynchronous and the caller may be inside a runtime or not: it runs on a
    // thread of its own with a runtime of its own.
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt,
                    Err(e) => {
                        return vec![Problem {
                            at: described.first().and_then(|d| d.at),
                            message: format!("grpc: cannot start reflection: {e}"),
                            hint: None,
                        }]
                    }
                };
                rt.block_on(reflect_all(endpoints, described, connect_timeout))
            })
            .join()
            .unwrap_or_else(|_| {
                vec![Problem {
                    at: None,
                    message: "grpc: reflection failed".into(),
                    hint: None,
                }]
            })
    })
}

async fn reflect_all(endpoints: &[Endpoint], described: Vec<Described>, connect_timeout: Duration) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut servers: Vec<usize> = described.iter().map(|d| d.endpoint).collect();
    servers.sort_unstable();
    servers.dedup();
    for server in servers {
        let steps: Vec<&Described> = described.iter().filter(|d| d.endpoint == server).collect();
        let mut services: Vec<String> = steps
            .iter()
            .filter_map(|d| Protos::split_method(&d.call).map(|(s, _)| s.to_string()))
            .collect();
        services.sort();
        services.dedup();
        let endpoint = &endpoints[server];
        let protos = async {
            let (io, _) = tokio::time::timeout(connect_timeout, endpoint.open_transport())
                .await
                .map_err(|_| format!("no connection within {} ms", connect_timeout.as_millis()))?
                .map_err(|e| format!("{}: {e}", e.outcome))?;
            let mut conn = crest_grpc::Conn::open(io, endpoint.authority(), endpoint.https())
                .await
                .map_err(|e| format!("{}: {e}", e.outcome))?;
            crest_grpc::reflect(&mut conn, &services, &[], REFLECTION_DEADLINE)
                .await
                .map_err(|e| match e.hint {
                    Some(h) => format!("{} ({h})", e.message),
                    None => e.message,
                })
        }
        .await;
        match protos {
            Err(why) => {
                for d in &steps {
                    problems.push(Problem {
                        at: d.at,
                        message: format!(
                            "grpc: {} cannot be described by {}'s reflection: {why}",
                            d.call.trim(),
                            endpoint.authority()
                        ),
                        hint: Some("give the services' .proto files with `protos:`".into()),
                    });
                }
            }
            Ok(protos) => {
                for d in steps {
                    match describe(&protos, &d.call, &d.messages) {
                        Ok(m) => {
                            let _ = d.method.set(m);
                        }
                        Err((message, hint)) => problems.push(Problem {
                            at: d.at,
                            message: format!("grpc: {message}"),
                            hint,
                        }),
                    }
                }
            }
        }
    }
    problems
}
