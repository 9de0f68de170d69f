//! A recording's entries, read from its JSON as much as an import needs: the request, the
//! response's status, headers and body (decoded when base64), and where each stands.

use crate::ImportError;
use base64::Engine as _;
use serde_json::Value;
use url::Url;

/// A response body larger than this is not searched for values to carry.
const MAX_BODY: usize = 8 << 20;

/// An entry of the recording, as much of it as an import reads.
#[derive(Debug)]
pub(super) struct Entry {
    /// Its place in the file, from 1.
    pub(super) number: usize,
    /// When it started, in milliseconds since the epoch.
    pub(super) start_ms: Option<f64>,
    pub(super) time_ms: f64,
    pub(super) method: String,
    pub(super) url: Url,
    pub(super) headers: Vec<(String, String)>,
    pub(super) post: Option<Post>,
    pub(super) status: u16,
    pub(super) response_headers: Vec<(String, String)>,
    pub(super) mime: String,
    pub(super) body: Option<String>,
    pub(super) resource_type: Option<String>,
    pub(super) redirect_url: String,
}

#[derive(Debug)]
pub(super) struct Post {
    pub(super) mime: String,
    pub(super) text: Option<String>,
    pub(super) params: Vec<PostParam>,
}

#[derive(Debug)]
pub(super) struct PostParam {
    pub(super) name: String,
    pub(super) value: String,
    pub(super) file: Option<String>,
    pub(super) content_type: Option<String>,
}

impl Entry {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    pub(super) fn end_ms(&self) -> Option<f64> {
        self.start_ms.map(|s| s + self.time_ms.max(0.0))
    }

    pub(super) fn origin(&self) -> String {
        self.url.origin().ascii_serialization()
    }

    pub(super) fn is_http(&self) -> bool {
        matches!(self.url.scheme(), "http" | "https")
    }

    /// Where a redirect sends the browser.
    pub(super) fn location(&self) -> Option<Url> {
        if !(300..400).contains(&self.status) {
            return None;
        }
        let to = Some(self.redirect_url.as_str())
            .filter(|u| !u.is_empty())
            .or_else(|| header(&self.response_headers, "location"))?;
        self.url.join(to).ok()
    }

    /// Everything the request sent, as text: the URL, header values and the body.
    pub(super) fn request_text(&self) -> String {
        let mut out = self.url.as_str().to_string();
        for (_, v) in &self.headers {
            out.push('\n');
            out.push_str(v);
        }
        if let Some(p) = &self.post {
            if let Some(t) = &p.text {
                out.push('\n');
                out.push_str(t);
            }
            for param in &p.params {
                out.push('\n');
                out.push_str(&param.value);
            }
        }
        out
    }

    /// Each value the request sent whole: path segments, query values, header values, form
    /// fields and JSON leaves.
    pub(super) fn request_values(&self) -> Vec<String> {
        let mut out: Vec<String> = self.url.path().split('/').map(str::to_string).collect();
        out.extend(self.url.query_pairs().map(|(_, v)| v.into_owned()));
        out.extend(self.headers.iter().map(|(_, v)| v.clone()));
        if let Some(p) = &self.post {
            out.extend(p.params.iter().map(|p| p.value.clone()));
            if let Some(t) = &p.text {
                match serde_json::from_str::<Value>(t) {
                    Ok(v) => json_values(&v, &mut out),
                    Err(_) => out.extend(url::form_urlencoded::parse(t.as_bytes()).map(|(_, v)| v.into_owned())),
                }
            }
        }
        out
    }
}

pub(super) fn json_values(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(a) => a.iter().for_each(|v| json_values(v, out)),
        Value::Object(m) => m.values().for_each(|v| json_values(v, out)),
        Value::Bool(_) | Value::Null => {}
    }
}

pub(super) fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The recording's creator (` (by Chrome 120.0)`, or nothing) and its entries, in file order.
pub(super) fn read(text: &str, source_name: &str) -> Result<(String, Vec<Entry>), ImportError> {
    let not = |message: String| ImportError::NotThisKind {
        source_name: source_name.to_string(),
        message,
    };
    let doc: Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| not(format!("not a HAR recording: not JSON ({e})")))?;
    let Some(log) = doc.get("log").filter(|l| l.is_object()) else {
        return Err(not("not a HAR recording: it has no \"log\" object".to_string()));
    };
    match log.get("version") {
        // HAR 1.2 requires it; a recording without one is read as 1.2, and said to be.
        None => {}
        Some(Value::String(v)) if v == "1.2" => {}
        Some(Value::String(v)) => return Err(not(format!("HAR {v} is not supported: crest reads HAR 1.2"))),
        Some(other) => {
            return Err(not(format!(
                "HAR version {other} is not supported: crest reads HAR 1.2"
            )))
        }
    }
    let Some(list) = log.get("entries").and_then(Value::as_array) else {
        return Err(not("not a HAR recording: it has no log.entries list".to_string()));
    };
    let creator = log.get("creator").map_or_else(String::new, |c| {
        let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
        let version = c.get("version").and_then(Value::as_str).unwrap_or_default();
        let who = format!("{name} {version}");
        let who = who.trim();
        if who.is_empty() {
            String::new()
        } else {
            format!(" (by {who})")
        }
    });
    let creator = if log.get("version").is_none() {
        format!("{creator} (it gives no log.version: read as HAR 1.2)")
    } else {
        creator
    };
    let entries = list
        .iter()
        .enumerate()
        .map(|(i, e)| entry(i + 1, e, source_name))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((creator, entries))
}

pub(super) fn entry(number: usize, e: &Value, source_name: &str) -> Result<Entry, ImportError> {
    let err = |url: &str, message: &str| ImportError::HarEntry {
        source_name: source_name.to_string(),
        entry: number,
        url: shorten(url),
        message: message.to_string(),
    };
    let req = e.get("request").filter(|r| r.is_object());
    let Some(req) = req else {
        return Err(err("no URL", "it has no request"));
    };
    let raw = req.get("url").and_then(Value::as_str).filter(|u| !u.is_empty());
    let Some(raw) = raw else {
        return Err(err("no URL", "its request has no URL"));
    };
    let url = Url::parse(raw).map_err(|e| err(raw, &format!("its URL does not parse: {e}")))?;
    // HAR 1.2 requires the method: without it the recorded request cannot be told (a POST
    // replayed as GET with its body).
    let method = match req.get("method") {
        Some(Value::String(m)) if !m.is_empty() => m.as_str(),
        None | Some(Value::Null) => return Err(err(raw, "its request has no method")),
        Some(other) => return Err(err(raw, &format!("its method {other} is not text"))),
    };
    if !method
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    {
        return Err(err(raw, &format!("its method {method:?} is not an HTTP method")));
    }
    let str_of = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let post = req.get("postData").filter(|p| p.is_object()).map(|p| Post {
        mime: str_of(p.get("mimeType")),
        text: p.get("text").and_then(Value::as_str).map(str::to_string),
        params: p
            .get("params")
            .and_then(Value::as_array)
            .map(|ps| {
                ps.iter()
                    .filter_map(|p| {
                        Some(PostParam {
                            name: p.get("name")?.as_str()?.to_string(),
                            value: str_of(p.get("value")),
                            file: p.get("fileName").and_then(Value::as_str).map(str::to_string),
                            content_type: p.get("contentType").and_then(Value::as_str).map(str::to_string),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default(),
    });
    let resp = e.get("response");
    let content = resp.and_then(|r| r.get("content"));
    let body = content.and_then(|c| {
        let text = c.get("text")?.as_str()?;
        if c.get("encoding").and_then(Value::as_str) == Some("base64") {
            let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            let bytes = base64::engine::general_purpose::STANDARD.decode(compact).ok()?;
            Some(String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_BODY)]).into_owned())
        } else {
            Some(text.chars().take(MAX_BODY).collect())
        }
    });
    let status = resp
        .and_then(|r| r.get("status"))
        // Some tools write the status as text ("201"): it is the same status.
        .and_then(|v| v.as_f64().or_else(|| v.as_str().and_then(|t| t.trim().parse().ok())))
        .filter(|s| (0.0..1000.0).contains(s))
        .map_or(0, |s| s as u16);
    // Think times are taken from it: one that does not parse is refused, not read as absent.
    let start_ms = match e.get("startedDateTime") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(
            chrono::DateTime::parse_from_rfc3339(s)
                .map_err(|_| {
                    err(
                        raw,
                        &format!(
                            "its startedDateTime {s:?} is not a date and time (ISO 8601, as 2026-01-02T03:04:05.678Z)"
                        ),
                    )
                })?
                .timestamp_micros() as f64
                / 1000.0,
        ),
        Some(other) => return Err(err(raw, &format!("its startedDateTime {other} is not text"))),
    };
    // The request's headers are sent again: a list that is not one would drop them all, the
    // recorded Authorization with them.
    let request_headers = match req.get("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(hs)) => {
            for (k, h) in hs.iter().enumerate() {
                if !(h.get("name").is_some_and(Value::is_string) && h.get("value").is_some_and(Value::is_string)) {
                    return Err(err(
                        raw,
                        &format!(
                            "its request header {} is not {{\"name\": text, \"value\": text}}: {h}",
                            k + 1
                        ),
                    ));
                }
            }
            headers(req.get("headers"))
        }
        Some(other) => {
            return Err(err(
                raw,
                &format!(
                    "its request's headers are not a list of {{\"name\", \"value\"}} (found {})",
                    kind(other)
                ),
            ))
        }
    };
    Ok(Entry {
        number,
        start_ms,
        time_ms: e
            .get("time")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite() && *t >= 0.0)
            .unwrap_or(0.0),
        method: method.to_ascii_uppercase(),
        url,
        headers: request_headers,
        post,
        status,
        response_headers: headers(resp.and_then(|r| r.get("headers"))),
        mime: str_of(content.and_then(|c| c.get("mimeType"))),
        body,
        resource_type: e.get("_resourceType").and_then(Value::as_str).map(str::to_string),
        redirect_url: str_of(resp.and_then(|r| r.get("redirectURL"))),
    })
}

/// What a JSON value is, for a message.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

pub(super) fn headers(v: Option<&Value>) -> Vec<(String, String)> {
    v.and_then(Value::as_array)
        .map(|hs| {
            hs.iter()
                .filter_map(|h| {
                    let name = h.get("name")?.as_str()?;
                    let value = h.get("value")?.as_str()?;
                    (!name.is_empty()).then(|| (name.to_string(), value.to_string()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A URL short enough for an error message.
pub(super) fn shorten(url: &str) -> String {
    if url.chars().count() > 200 {
        format!("{}...", url.chars().take(200).collect::<String>())
    } else {
        url.to_string()
    }
}
