//! Which operation gives the values another needs: the spec's `links` where it has them, else
//! names (`id` of `POST /plans` for the `{id}` of `/plans/{id}`, or for a `{planId}`), and the
//! order that runs every producer before its consumers.

use super::schema::singular;
use super::spec::{escape, Spec};
use super::Op;
use crate::snake;
use crate::ImportError;
use serde_json::Value;

/// Response fields that hold a token to send back as `Authorization: Bearer`, best first.
const TOKEN_FIELDS: [&str; 5] = ["access_token", "accessToken", "token", "id_token", "jwt"];

/// The operation that issues a token, and the field it is in.
pub(super) struct Token {
    pub op: usize,
    pub field: String,
}

/// Where a carried value comes from in the producer's exchange.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Source {
    /// A field of the response body, as JSON pointer segments.
    Body(Vec<String>),
    /// A response header.
    Header(String),
    /// A parameter the producer sent (`$request.path.id`).
    Param(String),
    /// A value the link gives itself.
    Constant(Value),
}

/// A parameter of `consumer` filled from `producer`.
#[derive(Debug)]
pub(super) struct Need {
    pub consumer: usize,
    pub param: String,
    pub location: String,
    pub producer: usize,
    pub source: Source,
}

pub(super) fn token_operation(ops: &[Op]) -> Option<Token> {
    for field in TOKEN_FIELDS {
        let found = ops
            .iter()
            .find(|o| o.fields.iter().any(|f| f == field) && !o.params.iter().any(|p| p.location == "path"));
        if let Some(o) = found {
            return Some(Token {
                op: o.index,
                field: field.to_string(),
            });
        }
    }
    None
}

/// A JSONPath for pointer segments: `$.id`, `$.items[0].id`, `$['odd-name']`.
pub(super) fn json_path(segments: &[&str]) -> String {
    let mut out = String::from("$");
    for s in segments {
        let ident = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) {
            out.push_str(&format!("[{s}]"));
        } else if ident {
            out.push('.');
            out.push_str(s);
        } else {
            out.push_str(&format!("['{}']", s.replace('\\', "\\\\").replace('\'', "\\'")));
        }
    }
    out
}

/// A variable's name for a carried value: `plan_id` for the `id` of `POST /plans`.
pub(super) fn var_name(producer: &Op, source: &Source) -> String {
    match source {
        Source::Body(path) => {
            let last = path.last().map_or("value", String::as_str);
            let n = norm(last);
            if n == "id" || n == "uuid" {
                match resource_of(&producer.path) {
                    Some(r) => format!("{}_{}", snake(&r), snake(last)),
                    None => snake(last),
                }
            } else {
                snake(last)
            }
        }
        Source::Header(h) => snake(h),
        Source::Param(p) => snake(p),
        Source::Constant(_) => "value".into(),
    }
}

fn norm(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// `plan` for `/plans` and `/v1/plans`; `None` when the path ends in a parameter.
fn resource_of(path: &str) -> Option<String> {
    let last = path.trim_end_matches('/').rsplit('/').next()?;
    (!last.is_empty() && !last.contains('{')).then(|| singular(last))
}

/// The top-level fields of a JSON media type's body: its schema's properties (through `allOf`,
/// `oneOf`, `anyOf`) and its example's keys.
pub(super) fn fields(spec: &Spec, media: &Value, at: &str) -> Result<Vec<String>, ImportError> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |keys: &mut dyn Iterator<Item = &String>| {
        for k in keys {
            if !out.contains(k) {
                out.push(k.clone());
            }
        }
    };
    if let Some(Value::Object(e)) = media.get("example") {
        add(&mut e.keys());
    }
    if let Some(schema) = media.get("schema") {
        let mut props = Vec::new();
        let mut budget = FIELD_BUDGET;
        schema_fields(spec, schema, &format!("{at}/schema"), 0, &mut budget, &mut props)?;
        add(&mut props.iter());
    }
    Ok(out)
}

/// Schemas visited for one response's fields: `allOf`s of `allOf`s grow as a power of their width.
const FIELD_BUDGET: usize = 200;

fn schema_fields(
    spec: &Spec,
    schema: &Value,
    at: &str,
    depth: usize,
    budget: &mut usize,
    out: &mut Vec<String>,
) -> Result<(), ImportError> {
    if depth > 6 || *budget == 0 {
        return Ok(());
    }
    *budget -= 1;
    let (schema, at) = spec.resolve(schema, at)?;
    let keys = schema
        .get("example")
        .and_then(Value::as_object)
        .into_iter()
        .chain(schema.get("properties").and_then(Value::as_object))
        .flat_map(|m| m.keys());
    for k in keys {
        if !out.contains(k) {
            out.push(k.clone());
        }
    }
    for key in ["allOf", "oneOf", "anyOf"] {
        if let Some(parts) = schema.get(key).and_then(Value::as_array) {
            for (i, part) in parts.iter().enumerate() {
                schema_fields(spec, part, &format!("{at}/{key}/{i}"), depth + 1, budget, out)?;
                if key != "allOf" {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// What each taken operation needs from another: by `links` first, then by names.
pub(super) fn needs(spec: &Spec, ops: &[Op], selected: &[usize]) -> Result<Vec<Need>, ImportError> {
    let mut out: Vec<Need> = Vec::new();
    for &a in selected {
        links(spec, ops, selected, a, &mut out)?;
    }
    for &c in selected {
        let consumer = &ops[c];
        for p in &consumer.params {
            let wanted = p.location == "path" || (p.required && p.location == "query" && norm(&p.name).ends_with("id"));
            if !wanted
                || out
                    .iter()
                    .any(|n| n.consumer == c && n.param == p.name && n.location == p.location)
            {
                continue;
            }
            if let Some((producer, field)) = by_name(ops, selected, c, &p.name) {
                out.push(Need {
                    consumer: c,
                    param: p.name.clone(),
                    location: p.location.clone(),
                    producer,
                    source: Source::Body(vec![field]),
                });
            }
        }
    }
    Ok(out)
}

/// The `links` of operation `a`'s success responses, as needs of the operations they name.
fn links(spec: &Spec, ops: &[Op], selected: &[usize], a: usize, out: &mut Vec<Need>) -> Result<(), ImportError> {
    let op = &ops[a];
    let Some(responses) = op.node.get("responses").and_then(Value::as_object) else {
        return Ok(());
    };
    for (code, resp) in responses {
        if !code.parse::<u16>().is_ok_and(|c| (200..400).contains(&c)) {
            continue;
        }
        let resp_at = format!("{}/responses/{code}", op.pointer);
        let (resp, resp_at) = spec.resolve(resp, &resp_at)?;
        let Some(links) = resp.get("links").and_then(Value::as_object) else {
            continue;
        };
        for (name, link) in links {
            let link_at = format!("{resp_at}/links/{}", escape(name));
            let (link, link_at) = spec.resolve(link, &link_at)?;
            let target = if let Some(id) = link.get("operationId").and_then(Value::as_str) {
                ops.iter().position(|o| o.id.as_deref() == Some(id)).ok_or_else(|| {
                    spec.error(
                        &format!("{link_at}/operationId"),
                        format!("no operation has the operationId `{id}`"),
                    )
                })?
            } else if let Some(r) = link.get("operationRef").and_then(Value::as_str) {
                let node = spec.lookup(r, &format!("{link_at}/operationRef"))?;
                // By where it is, or by its pointer when the path item is itself a `$ref`.
                let decoded = super::spec::percent_decode(r);
                match ops
                    .iter()
                    .position(|o| std::ptr::eq(o.node, node))
                    .or_else(|| ops.iter().position(|o| o.pointer == decoded))
                {
                    Some(i) => i,
                    None => {
                        return Err(spec.error(&format!("{link_at}/operationRef"), format!("`{r}` is not an operation")))
                    }
                }
            } else {
                continue;
            };
            if target == a || !selected.contains(&target) {
                continue;
            }
            let Some(params) = link.get("parameters").and_then(Value::as_object) else {
                continue;
            };
            for (pname, expr) in params {
                let (location, pname) = match pname.split_once('.') {
                    Some((l @ ("path" | "query" | "header" | "cookie"), n)) => (Some(l), n),
                    _ => (None, pname.as_str()),
                };
                let Some(p) = ops[target]
                    .params
                    .iter()
                    .find(|p| p.name == pname && location.is_none_or(|l| l == p.location))
                else {
                    continue;
                };
                let Some(source) = expression(expr) else { continue };
                if out
                    .iter()
                    .any(|n| n.consumer == target && n.param == p.name && n.location == p.location)
                {
                    continue;
                }
                out.push(Need {
                    consumer: target,
                    param: p.name.clone(),
                    location: p.location.clone(),
                    producer: a,
                    source,
                });
            }
        }
    }
    Ok(())
}

/// A link's runtime expression, for the ones an import can carry.
fn expression(expr: &Value) -> Option<Source> {
    let Value::String(s) = expr else {
        return Some(Source::Constant(expr.clone()));
    };
    let s = s.trim();
    let s = s.strip_prefix('{').and_then(|x| x.strip_suffix('}')).unwrap_or(s);
    if !s.starts_with('$') {
        return Some(Source::Constant(Value::String(s.to_string())));
    }
    if let Some(pointer) = s.strip_prefix("$response.body#") {
        let segments: Vec<String> = pointer
            .split('/')
            .skip(1)
            .map(|seg| seg.replace("~1", "/").replace("~0", "~"))
            .collect();
        return (!segments.is_empty()).then_some(Source::Body(segments));
    }
    if let Some(h) = s.strip_prefix("$response.header.") {
        return Some(Source::Header(h.to_string()));
    }
    for prefix in ["$request.path.", "$request.query.", "$request.header."] {
        if let Some(p) = s.strip_prefix(prefix) {
            return Some(Source::Param(p.to_string()));
        }
    }
    None
}

/// The operation (and the field of its response) that gives parameter `name` of operation `c`.
fn by_name(ops: &[Op], selected: &[usize], c: usize, name: &str) -> Option<(usize, String)> {
    let consumer = &ops[c];
    let n = norm(name);
    let placeholder = format!("{{{name}}}");
    // The collection the parameter names an item of: `/plans` for `/plans/{id}`.
    let collection = consumer
        .path
        .find(&placeholder)
        .map(|at| consumer.path[..at].trim_end_matches('/'));
    let before = collection.and_then(resource_of);
    let resource = if matches!(n.as_str(), "id" | "uuid" | "key" | "slug") {
        before.clone()
    } else if n.len() > 2 && n.ends_with("id") {
        Some(n[..n.len() - 2].to_string())
    } else {
        None
    }?;
    let resource = norm(&resource);
    let mut best: Option<(u8, usize, String)> = None;
    for &p in selected {
        let producer = &ops[p];
        if p == c || !matches!(producer.method.as_str(), "POST" | "PUT") || producer.fields.is_empty() {
            continue;
        }
        let own = resource_of(&producer.path).map(|r| norm(&r));
        let exact = collection == Some(producer.path.trim_end_matches('/'));
        let field = if own.as_deref() == Some(resource.as_str()) {
            producer
                .fields
                .iter()
                .find(|f| norm(f) == n)
                .or_else(|| producer.fields.iter().find(|f| norm(f) == "id"))
        } else {
            None
        }
        .or_else(|| producer.fields.iter().find(|f| norm(f) == format!("{resource}id")));
        let Some(field) = field else { continue };
        let score = match (exact, producer.method.as_str()) {
            (true, "POST") => 0,
            (true, _) => 1,
            (false, "POST") => 2,
            _ => 3,
        };
        if best.as_ref().is_none_or(|(s, i, _)| (score, p) < (*s, *i)) {
            best = Some((score, p, field.clone()));
        }
    }
    best.map(|(_, p, f)| (p, f))
}

/// The taken operations in the spec's order, except that a token's issuer comes first,
/// deletions last, and every producer before the operations that need its values.
pub(super) fn order(ops: &[Op], selected: &[usize], needs: &[Need], token: Option<usize>) -> Vec<usize> {
    let rank = |i: usize| {
        if Some(i) == token {
            0
        } else if ops[i].method == "DELETE" {
            2
        } else {
            1
        }
    };
    let mut taken = vec![false; ops.len()];
    for &i in selected {
        taken[i] = true;
    }
    let mut producers: Vec<Vec<usize>> = vec![Vec::new(); ops.len()];
    for n in needs {
        if n.producer != n.consumer && taken[n.producer] {
            producers[n.consumer].push(n.producer);
        }
    }
    let mut done = vec![false; ops.len()];
    let mut remaining: Vec<usize> = selected.to_vec();
    let mut out: Vec<usize> = Vec::with_capacity(remaining.len());
    while !remaining.is_empty() {
        let ready = |i: &&usize| producers[**i].iter().all(|&p| done[p]);
        let key = |i: &&usize| (rank(**i), ops[**i].index);
        // Producers that need each other (a cycle) run in the spec's order.
        let next = remaining
            .iter()
            .filter(ready)
            .min_by_key(key)
            .or_else(|| remaining.iter().min_by_key(key))
            .copied();
        let Some(next) = next else { break };
        remaining.retain(|&i| i != next);
        done[next] = true;
        out.push(next);
    }
    out
}
