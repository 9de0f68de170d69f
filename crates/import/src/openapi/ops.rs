//! The operations of a spec as an import reads them: method, path, parameters, the statuses
//! and fields of their success, the security they need, and the ones the user chose.

use super::chain;
use super::spec::{escape, Spec};
use crate::ImportError;
use serde_json::Value;

pub(super) const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// One operation of the spec.
pub(super) struct Op<'a> {
    /// Its place in the spec's order.
    pub index: usize,
    pub method: String,
    pub path: String,
    pub id: Option<String>,
    /// `#/paths/~1plans/post`.
    pub pointer: String,
    pub node: &'a Value,
    pub params: Vec<Param<'a>>,
    /// Documented 2xx and 3xx statuses, ascending.
    pub success: Vec<u16>,
    /// Top-level fields of its first success response's JSON body.
    pub fields: Vec<String>,
    /// The security schemes it needs (the first alternative of its requirements).
    pub security: Vec<String>,
}

impl Op<'_> {
    pub fn label(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

#[derive(Clone)]
pub(super) struct Param<'a> {
    pub name: String,
    /// `path`, `query`, `header` or `cookie`.
    pub location: String,
    pub required: bool,
    /// The parameter object, `None` for a `{name}` of the path the spec does not declare.
    pub node: Option<&'a Value>,
    pub at: String,
}

/// Every operation of the spec, in its order.
pub(super) fn operations(spec: &Spec) -> Result<Vec<Op<'_>>, ImportError> {
    let Some(paths) = spec.root.get("paths").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let root_security = spec.root.get("security");
    let mut ops = Vec::new();
    for (path, keys) in &spec.order {
        let Some(item) = paths.get(path) else { continue };
        let item_at = format!("#/paths/{}", escape(path));
        let (item, _) = spec.resolve(item, &item_at)?;
        let Some(item_map) = item.as_object() else { continue };
        if !path.starts_with('/') {
            return Err(spec.error(&item_at, "a path must start with `/`"));
        }
        let shared = params_of(spec, item_map.get("parameters"), &format!("{item_at}/parameters"))?;
        for key in keys {
            if !METHODS.contains(&key.as_str()) {
                continue;
            }
            let Some(node) = item_map.get(key) else { continue };
            let at = format!("{item_at}/{key}");
            if !node.is_object() {
                return Err(spec.error(&at, "an operation must be a mapping"));
            }
            let own = params_of(spec, node.get("parameters"), &format!("{at}/parameters"))?;
            let mut params: Vec<Param> = Vec::new();
            for p in shared.iter().cloned().chain(own).rev() {
                // An operation's parameter replaces the path item's of the same name and place.
                if !params.iter().any(|q| q.name == p.name && q.location == p.location) {
                    params.push(p);
                }
            }
            params.reverse();
            for name in template_names(path) {
                if !params.iter().any(|p| p.location == "path" && p.name == name) {
                    params.push(Param {
                        name,
                        location: "path".into(),
                        required: true,
                        node: None,
                        at: at.clone(),
                    });
                }
            }
            let security = match node.get("security").or(root_security) {
                Some(Value::Array(reqs)) => reqs
                    .first()
                    .and_then(Value::as_object)
                    .map(|r| r.keys().cloned().collect())
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            let (success, fields) = responses(spec, node, &at)?;
            ops.push(Op {
                index: ops.len(),
                method: key.to_ascii_uppercase(),
                path: path.clone(),
                id: node.get("operationId").and_then(Value::as_str).map(str::to_string),
                pointer: at,
                node,
                params,
                success,
                fields,
                security,
            });
        }
    }
    Ok(ops)
}

pub(super) fn params_of<'a>(spec: &'a Spec, list: Option<&'a Value>, at: &str) -> Result<Vec<Param<'a>>, ImportError> {
    let Some(list) = list else { return Ok(Vec::new()) };
    let Some(list) = list.as_array() else {
        return Err(spec.error(at, "`parameters` must be a list"));
    };
    let mut out = Vec::new();
    for (i, p) in list.iter().enumerate() {
        let p_at = format!("{at}/{i}");
        let (p, p_at) = spec.resolve(p, &p_at)?;
        let (Some(name), Some(location)) = (
            p.get("name").and_then(Value::as_str),
            p.get("in").and_then(Value::as_str),
        ) else {
            return Err(spec.error(&p_at, "a parameter needs `name` and `in`"));
        };
        out.push(Param {
            name: name.to_string(),
            location: location.to_string(),
            required: location == "path" || p.get("required").and_then(Value::as_bool).unwrap_or(false),
            node: Some(p),
            at: p_at,
        });
    }
    Ok(out)
}

/// The `{name}`s of a path template.
pub(super) fn template_names(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        out.push(rest[open + 1..open + close].to_string());
        rest = &rest[open + close + 1..];
    }
    out
}

/// The documented success statuses, and the top-level fields of the first one's JSON body.
pub(super) fn responses(spec: &Spec, op: &Value, at: &str) -> Result<(Vec<u16>, Vec<String>), ImportError> {
    let Some(responses) = op.get("responses").and_then(Value::as_object) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut codes: Vec<(u16, &Value, String)> = responses
        .iter()
        .filter_map(|(k, v)| {
            let code: u16 = k.parse().ok()?;
            (200..400)
                .contains(&code)
                .then(|| (code, v, format!("{at}/responses/{k}")))
        })
        .collect();
    codes.sort_by_key(|(c, _, _)| *c);
    let mut fields = Vec::new();
    if let Some((_, first, first_at)) = codes.first() {
        let (resp, resp_at) = spec.resolve(first, first_at)?;
        if let Some((media, m_at)) = json_media(resp.get("content"), &format!("{resp_at}/content")) {
            fields = chain::fields(spec, media, &m_at)?;
        }
    }
    Ok((codes.iter().map(|(c, _, _)| *c).collect(), fields))
}

/// The JSON media type of a `content` map (`application/json`, `...+json`), with its pointer.
pub(super) fn json_media<'a>(content: Option<&'a Value>, at: &str) -> Option<(&'a Value, String)> {
    let content = content?.as_object()?;
    let is_json = |m: &str| {
        let m = m.split(';').next().unwrap_or(m).trim().to_ascii_lowercase();
        m == "application/json" || m.ends_with("+json") || m == "*/*"
    };
    content
        .iter()
        .find(|(m, _)| is_json(m))
        .map(|(m, v)| (v, format!("{at}/{}", escape(m))))
}

/// The operations the user asked for, in the order given; all of them without any.
pub(super) fn select(spec: &Spec, ops: &[Op], wanted: &[String]) -> Result<Vec<usize>, ImportError> {
    if wanted.is_empty() {
        return Ok((0..ops.len()).collect());
    }
    let mut out = Vec::new();
    for w in wanted {
        let by_method = w
            .trim()
            .split_once(char::is_whitespace)
            .map(|(m, p)| (m.to_ascii_uppercase(), p.trim()));
        let found = ops
            .iter()
            .position(|o| o.id.as_deref() == Some(w.as_str()))
            .or_else(|| {
                by_method
                    .as_ref()
                    .and_then(|(m, p)| ops.iter().position(|o| o.method == *m && o.path == *p))
            });
        match found {
            Some(i) if !out.contains(&i) => out.push(i),
            Some(_) => {}
            None => {
                let known: Vec<String> = ops
                    .iter()
                    .take(8)
                    .map(|o| o.id.clone().unwrap_or_else(|| o.label()))
                    .collect();
                return Err(ImportError::Other(format!(
                    "{}: no operation `{w}`: give an operationId or \"METHOD /path\" of the spec ({}{})",
                    spec.source,
                    known.join(", "),
                    if ops.len() > 8 { ", ..." } else { "" }
                )));
            }
        }
    }
    Ok(out)
}
