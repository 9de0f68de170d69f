//! Values from schemas: the spec's own examples where it gives them, else made up from the
//! schema so that the server accepts them (required fields, enums, formats, ranges).
//!
//! Values are templates: text from the spec goes through [`crate::literal`], and made-up values
//! may be functions (`${uuid}`, `${now}`).

use super::spec::Spec;
use crate::ImportError;
use serde_json::{Map, Value};

/// Schemas nest deeper than any body a server expects to be sent; past this, optional parts are
/// left out and required ones are `null`.
const MAX_DEPTH: usize = 10;
/// Optional properties sent besides the required ones, so a body shows its shape without every
/// field of a large schema.
const OPTIONAL: usize = 3;
/// Work for one value, in schemas visited and keys copied: distinct schemas that each hold many
/// others grow as a power of their width, which no cycle check stops.
const BUDGET: usize = 5_000;

/// Where a value goes: a JSON body keeps numbers as numbers, so it cannot use a function, which
/// renders text; a path or query parameter is text anyway.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    Body,
    Text,
}

pub(super) struct Gen<'a> {
    spec: &'a Spec,
    /// The `$ref`s being expanded: a schema that contains itself is cut there.
    stack: Vec<String>,
    place: Place,
    budget: usize,
}

/// Text from the spec as templates: every string literal.
pub(super) fn literal_json(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(crate::literal(s)),
        Value::Array(items) => Value::Array(items.iter().map(literal_json).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), literal_json(v))).collect()),
        other => other.clone(),
    }
}

impl<'a> Gen<'a> {
    pub fn new(spec: &'a Spec, place: Place) -> Gen<'a> {
        Gen {
            spec,
            stack: Vec::new(),
            place,
            budget: BUDGET,
        }
    }

    /// A value for `schema` (found at `at`), or `None` when it cannot have one (`false`, a
    /// schema that only contains itself).
    pub fn value(&mut self, schema: &Value, at: &str, hint: &str) -> Result<Option<Value>, ImportError> {
        self.value_at(schema, at, hint, 0)
    }

    fn value_at(&mut self, schema: &Value, at: &str, hint: &str, depth: usize) -> Result<Option<Value>, ImportError> {
        if depth > MAX_DEPTH || self.budget == 0 {
            return Ok(None);
        }
        self.budget -= 1;
        let map = match schema {
            Value::Bool(false) => return Ok(None),
            Value::Object(m) => m,
            _ => return Ok(Some(Value::String(hint_text(hint, None, None)))),
        };
        if map.contains_key("$ref") {
            if let Some(e) = own_example(map) {
                return Ok(Some(e));
            }
            // A chain of `$ref`s that only loops is an error; a schema that contains itself
            // through its properties is cut at the repetition.
            let (target, target_at) = self.spec.resolve(schema, at)?;
            if self.stack.contains(&target_at) {
                return Ok(None);
            }
            self.stack.push(target_at.clone());
            let v = self.value_at(target, &target_at, hint, depth + 1);
            self.stack.pop();
            return v;
        }
        if let Some(e) = own_example(map) {
            return Ok(Some(e));
        }
        if let Some(all) = map.get("allOf").and_then(Value::as_array) {
            let merged = self.merge_all_of(map, all, at, depth)?;
            let mut rest = merged;
            rest.remove("allOf");
            return self.value_at(&Value::Object(rest), at, hint, depth + 1);
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(alts) = map.get(key).and_then(Value::as_array) {
                for (i, alt) in alts.iter().enumerate() {
                    if is_null_type(alt) {
                        continue;
                    }
                    let mut merged = map.clone();
                    merged.remove(key);
                    // The alternative's own keys, over what the schema says around it.
                    let (alt, alt_at) = self.spec.resolve(alt, &format!("{at}/{key}/{i}"))?;
                    if self.stack.contains(&alt_at) {
                        continue;
                    }
                    let Some(alt) = alt.as_object() else { continue };
                    if self.budget == 0 {
                        return Ok(None);
                    }
                    self.budget = self.budget.saturating_sub(1 + merged.len() + alt.len());
                    merged.extend(alt.iter().map(|(k, v)| (k.clone(), v.clone())));
                    self.stack.push(alt_at.clone());
                    let v = self.value_at(&Value::Object(merged), &alt_at, hint, depth + 1);
                    self.stack.pop();
                    if let Some(v) = v? {
                        return Ok(Some(v));
                    }
                }
                return Ok(None);
            }
        }
        let ty = type_of(map);
        Ok(Some(match ty.as_str() {
            "object" => Value::Object(self.object(map, at, depth)?),
            "array" => {
                let item = match map.get("items") {
                    Some(items) => self.value_at(items, &format!("{at}/items"), &singular(hint), depth + 1)?,
                    None => None,
                };
                Value::Array(item.into_iter().collect())
            }
            "integer" | "number" => self.number(map, ty == "integer"),
            "boolean" => Value::Bool(true),
            "null" => Value::Null,
            _ => Value::String(self.string(map, hint)),
        }))
    }

    fn object(&mut self, map: &Map<String, Value>, at: &str, depth: usize) -> Result<Map<String, Value>, ImportError> {
        let mut out = Map::new();
        let Some(props) = map.get("properties").and_then(Value::as_object) else {
            return Ok(out);
        };
        self.budget = self.budget.saturating_sub(props.len());
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let read_only = |s: &Value| -> bool {
            let s = self.spec.resolve(s, at).map(|(s, _)| s).unwrap_or(s);
            s.get("readOnly").and_then(Value::as_bool).unwrap_or(false)
        };
        // Optional fields with a value of their own in the spec first: they say most.
        let described = |s: &Value| -> bool {
            ["example", "examples", "default", "enum", "const"]
                .iter()
                .any(|k| s.get(k).is_some())
        };
        let mut optional: Vec<&String> = props
            .iter()
            .filter(|(k, s)| !required.contains(&k.as_str()) && !read_only(s))
            .map(|(k, _)| k)
            .collect();
        optional.sort_by_key(|k| !props.get(k.as_str()).is_some_and(described));
        optional.truncate(OPTIONAL);
        for (name, schema) in props {
            let req = required.contains(&name.as_str());
            if !req && !optional.contains(&name) {
                continue;
            }
            if !req && read_only(schema) {
                continue;
            }
            let at = format!("{at}/properties/{}", super::spec::escape(name));
            match self.value_at(schema, &at, name, depth + 1)? {
                Some(v) => {
                    out.insert(name.clone(), v);
                }
                None if req => {
                    out.insert(name.clone(), Value::Null);
                }
                None => {}
            }
        }
        Ok(out)
    }

    fn merge_all_of(
        &mut self,
        map: &Map<String, Value>,
        all: &[Value],
        at: &str,
        depth: usize,
    ) -> Result<Map<String, Value>, ImportError> {
        let mut merged = map.clone();
        merged.remove("allOf");
        if depth > MAX_DEPTH || self.budget == 0 {
            return Ok(merged);
        }
        self.budget -= 1;
        for (i, part) in all.iter().enumerate() {
            let (part, part_at) = self.spec.resolve(part, &format!("{at}/allOf/{i}"))?;
            let Some(part) = part.as_object() else { continue };
            if self.stack.contains(&part_at) || self.budget == 0 {
                continue;
            }
            self.budget = self.budget.saturating_sub(1 + part.len());
            self.stack.push(part_at.clone());
            let part = match part.get("allOf").and_then(Value::as_array) {
                Some(inner) => self.merge_all_of(part, inner, &part_at, depth + 1),
                None => Ok(part.clone()),
            };
            self.stack.pop();
            for (k, v) in part? {
                match (k.as_str(), merged.get_mut(&k), v) {
                    ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                        for (pk, pv) in theirs {
                            mine.entry(pk).or_insert(pv);
                        }
                    }
                    ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                        for r in theirs {
                            if !mine.contains(&r) {
                                mine.push(r);
                            }
                        }
                    }
                    (_, Some(_), _) => {}
                    (_, None, v) => {
                        merged.insert(k, v);
                    }
                }
            }
        }
        Ok(merged)
    }

    fn number(&self, map: &Map<String, Value>, integer: bool) -> Value {
        let num = |k: &str| map.get(k).and_then(Value::as_f64);
        // 3.0 says exclusiveMinimum: true beside minimum; 3.1 gives the bound itself.
        let excl = |k: &str, bound: Option<f64>| match map.get(k) {
            Some(Value::Bool(true)) => bound.map(|b| (b, true)),
            Some(Value::Number(n)) => n.as_f64().map(|b| (b, true)),
            _ => bound.map(|b| (b, false)),
        };
        let min = excl("exclusiveMinimum", num("minimum"));
        let max = excl("exclusiveMaximum", num("maximum"));
        let step = if integer { 1.0 } else { 0.5 };
        let lo = min.map(|(b, ex)| if ex { b + step } else { b });
        let hi = max.map(|(b, ex)| if ex { b - step } else { b });
        let lo_i = lo.map(|l| if integer { l.ceil() } else { l });
        let hi_i = hi.map(|h| if integer { h.floor() } else { h });
        let v = match (lo_i, hi_i) {
            (Some(l), _) => l,
            (None, Some(h)) => h.min(1.0),
            (None, None) => 1.0,
        };
        if self.place == Place::Text && integer {
            if let (Some(l), Some(h)) = (lo_i, hi_i) {
                if l < h && l.abs() < 1e15 && h.abs() < 1e15 {
                    return Value::String(format!("${{random_int({}, {})}}", l as i64, h as i64));
                }
            }
        }
        if integer && v.abs() < 9e15 {
            Value::from(v as i64)
        } else {
            serde_json::Number::from_f64(v).map_or(Value::from(1), Value::Number)
        }
    }

    fn string(&self, map: &Map<String, Value>, hint: &str) -> String {
        let format = map.get("format").and_then(Value::as_str).unwrap_or("");
        let fixed = match format {
            "uuid" => Some("${uuid}"),
            "date-time" => Some("${now}"),
            "date" => Some("2026-01-01"),
            "time" => Some("12:00:00Z"),
            "email" => Some("user${seq}@example.com"),
            "uri" | "url" | "iri" => Some("https://example.com/"),
            "uri-reference" | "iri-reference" => Some("/"),
            "hostname" | "idn-hostname" => Some("example.com"),
            "ipv4" => Some("192.0.2.1"),
            "ipv6" => Some("2001:db8::1"),
            "byte" => Some("Y3Jlc3Q="),
            "int32" | "int64" => Some("1"),
            _ => None,
        };
        if let Some(f) = fixed {
            return f.to_string();
        }
        let len = |k: &str| map.get(k).and_then(Value::as_u64).map(|n| n.min(1024) as usize);
        hint_text(hint, len("minLength"), len("maxLength"))
    }
}

/// A schema's own value: `example`, the first of `examples`, `const`, `default`, the first
/// `enum` value that is not null.
fn own_example(map: &Map<String, Value>) -> Option<Value> {
    if let Some(e) = map.get("example") {
        return Some(literal_json(e));
    }
    if let Some(e) = map.get("examples").and_then(Value::as_array).and_then(|a| a.first()) {
        return Some(literal_json(e));
    }
    for k in ["const", "default"] {
        if let Some(e) = map.get(k) {
            return Some(literal_json(e));
        }
    }
    map.get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.iter().find(|v| !v.is_null()))
        .map(literal_json)
}

fn is_null_type(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// The schema's type: the first of a 3.1 list that is not `null`, else what its keys imply.
fn type_of(map: &Map<String, Value>) -> String {
    match map.get("type") {
        Some(Value::String(t)) => return t.clone(),
        Some(Value::Array(ts)) => {
            if let Some(t) = ts.iter().filter_map(Value::as_str).find(|t| *t != "null") {
                return t.to_string();
            }
        }
        _ => {}
    }
    if map.contains_key("properties") || map.contains_key("additionalProperties") {
        "object".into()
    } else if map.contains_key("items") {
        "array".into()
    } else if map.contains_key("minimum") || map.contains_key("maximum") {
        "number".into()
    } else {
        "string".into()
    }
}

/// Made-up text: the field's name, stretched or cut to the lengths allowed.
fn hint_text(hint: &str, min: Option<usize>, max: Option<usize>) -> String {
    let mut s: String = hint
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    if s.is_empty() {
        s = "text".into();
    }
    if let Some(min) = min {
        while s.len() < min {
            s.push('x');
        }
    }
    if let Some(max) = max {
        s.truncate(max);
    }
    s
}

/// `plans` -> `plan`, `categories` -> `category`; words that are not plurals stay.
pub(super) fn singular(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("ies") {
        format!("{stem}y")
    } else if word.ends_with("ss") || word.ends_with("us") {
        word.to_string()
    } else if let Some(stem) = word.strip_suffix('s') {
        stem.to_string()
    } else {
        word.to_string()
    }
}
