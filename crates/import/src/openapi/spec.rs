//! Reading a spec: YAML or JSON into a tree, the checks that it is OpenAPI 3.x, and `$ref`s.

use crate::ImportError;
use indexmap::IndexMap;
use serde_json::Value;

/// `$ref` chains longer than this are a mistake (or a loop) rather than a spec's structure.
const MAX_REF_HOPS: usize = 32;

/// A spec as read.
pub(super) struct Spec {
    pub root: Value,
    pub source: String,
    /// The `openapi` field (`3.1.0`).
    pub version: String,
    /// The keys of `paths` and of each path item in the order the file gives them: the tree's
    /// maps are sorted, and an import follows the spec's order.
    pub order: Vec<(String, Vec<String>)>,
}

#[derive(serde::Deserialize)]
struct Order {
    #[serde(default)]
    paths: Option<IndexMap<String, IndexMap<String, serde::de::IgnoredAny>>>,
}

impl Spec {
    pub fn error(&self, pointer: &str, message: impl Into<String>) -> ImportError {
        ImportError::Spec {
            source_name: self.source.clone(),
            pointer: pointer.to_string(),
            message: message.into(),
        }
    }

    /// `v` with its `$ref`s followed, and the pointer of where it was found in the end.
    pub fn resolve<'a>(&'a self, v: &'a Value, at: &str) -> Result<(&'a Value, String), ImportError> {
        let mut v = v;
        let mut at = at.to_string();
        let mut seen: Vec<String> = Vec::new();
        while let Some(r) = v.get("$ref").and_then(Value::as_str) {
            if seen.iter().any(|s| s == r) || seen.len() >= MAX_REF_HOPS {
                return Err(self.error(&at, format!("$ref `{r}` leads back to itself")));
            }
            seen.push(r.to_string());
            v = self.lookup(r, &at)?;
            at = r.to_string();
        }
        Ok((v, at))
    }

    /// The value a local `$ref` names; anything else is refused, naming where it is.
    pub fn lookup(&self, reference: &str, at: &str) -> Result<&Value, ImportError> {
        let Some(fragment) = reference.strip_prefix('#') else {
            return Err(self.error(
                at,
                format!("$ref `{reference}` is in another file: crest reads one file; bundle the spec first (e.g. `redocly bundle`)"),
            ));
        };
        let pointer = percent_decode(fragment);
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(self.error(
                at,
                format!("$ref `{reference}` is not a JSON pointer (`#/components/...`)"),
            ));
        }
        self.root
            .pointer(&pointer)
            .ok_or_else(|| self.error(at, format!("$ref `{reference}` points at nothing")))
    }

    /// Every `$ref` of the spec, checked at once, so a dangling one is reported wherever it is
    /// and not only when an operation happens to use it.
    pub fn check_refs(&self) -> Result<(), ImportError> {
        self.check_refs_in(&self.root, "#")
    }

    fn check_refs_in(&self, v: &Value, at: &str) -> Result<(), ImportError> {
        match v {
            Value::Object(map) => {
                if let Some(r) = map.get("$ref").and_then(Value::as_str) {
                    self.lookup(r, at)?;
                }
                for (k, child) in map {
                    // Examples are data, whatever keys they hold; `x-` extensions are no one's schema.
                    if k == "example" || k == "const" || k == "default" || k == "enum" || k.starts_with("x-") {
                        continue;
                    }
                    self.check_refs_in(child, &format!("{at}/{}", escape(k)))?;
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    self.check_refs_in(child, &format!("{at}/{i}"))?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// A key as one segment of a JSON pointer.
pub(super) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

pub(super) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads `text` as JSON (when it starts with `{`) or YAML and checks that it is OpenAPI 3.x.
pub(super) fn parse(text: &str, source: &str) -> Result<Spec, ImportError> {
    let not = |message: String| ImportError::NotThisKind {
        source_name: source.to_string(),
        message,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let json = text.trim_start().starts_with('{');
    let root: Value = if json {
        // A YAML flow mapping starts with `{` too.
        match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => serde_saphyr::from_str(text).map_err(|_| not(format!("not valid JSON: {e}")))?,
        }
    } else {
        serde_saphyr::from_str(text).map_err(|e| not(format!("not valid YAML: {}", yaml_words(&e.to_string()))))?
    };
    let Value::Object(map) = &root else {
        return Err(not("not an OpenAPI document: its top level is not a mapping".into()));
    };
    if let Some(v) = map.get("swagger") {
        return Err(not(format!(
            "a Swagger {} document: crest imports OpenAPI 3.0 and 3.1; convert it first (e.g. with swagger2openapi)",
            scalar(v)
        )));
    }
    let version = match map.get("openapi") {
        Some(v @ (Value::String(_) | Value::Number(_))) => scalar(v),
        Some(_) | None => return Err(not("not an OpenAPI 3 document: it has no `openapi: 3.x` field".into())),
    };
    if !version.starts_with("3.") {
        return Err(not(format!("OpenAPI {version}: crest imports OpenAPI 3.0 and 3.1")));
    }
    if map.get("paths").is_some_and(|p| !p.is_object() && !p.is_null()) {
        return Err(ImportError::Spec {
            source_name: source.to_string(),
            pointer: "#/paths".into(),
            message: "`paths` is not a mapping".into(),
        });
    }
    let order = order_of(text, json, &root);
    Ok(Spec {
        root,
        source: source.to_string(),
        version,
        order,
    })
}

/// The order of `paths` as written; when the file cannot be read again that way (a path item
/// that is no mapping), the tree's sorted order.
fn order_of(text: &str, json: bool, root: &Value) -> Vec<(String, Vec<String>)> {
    let read: Option<Order> = if json {
        serde_json::from_str(text)
            .ok()
            .or_else(|| serde_saphyr::from_str(text).ok())
    } else {
        serde_saphyr::from_str(text).ok()
    };
    if let Some(paths) = read.and_then(|o| o.paths) {
        return paths
            .into_iter()
            .map(|(p, item)| (p, item.into_keys().collect()))
            .collect();
    }
    root.get("paths")
        .and_then(Value::as_object)
        .map(|paths| {
            paths
                .iter()
                .map(|(p, item)| {
                    let keys = item
                        .as_object()
                        .map(|m| m.keys().cloned().collect())
                        .unwrap_or_default();
                    (p.clone(), keys)
                })
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// The YAML parser's first line, without its own prefix and its advice about its settings
/// (`set DuplicateKeyPolicy in Options`), which are not the user's to set.
fn yaml_words(e: &str) -> String {
    let line = first_line(e);
    let line = line.strip_prefix("error: ").unwrap_or(line);
    let line = line.split(", set DuplicateKeyPolicy").next().unwrap_or(line);
    line.replace("duplicate mapping key: ", "a key given twice: ")
}
