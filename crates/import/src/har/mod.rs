//! `crest import har`: a browser's recorded session (HAR 1.2) as one flow, with the values the
//! server handed out carried to the requests that send them back.
//!
//! The recording is read into entries, sorted by when they started; what a load test should not
//! replay is left out (static assets, other hosts, the hops of a redirect crest follows itself,
//! CORS preflights, requests that never had a response), and the rest become request steps with
//! the recorded gaps as think times. [`correlate`] then finds the values a response handed out
//! that a later request sent back.

mod correlate;
mod entry;
mod filter;
mod html;

use crate::{Body, ImportError, Imported, Part, Request, Step};
use correlate::{Correlator, Place};
use entry::{read, Entry};
use filter::{leave_out, main_origin, redirect_chains, LeftOut, Why};
use indexmap::IndexMap;
use serde_json::Value;
use std::collections::BTreeSet;

/// What `crest import har` leaves out or keeps.
#[derive(Debug, Clone)]
pub struct HarOptions {
    /// Keep static assets (images, scripts, stylesheets, fonts) and third-party hosts.
    pub keep_static: bool,
    /// The longest recorded gap kept as a think time, in milliseconds; `None` drops think times.
    pub max_think_ms: Option<u64>,
}

impl Default for HarOptions {
    fn default() -> Self {
        HarOptions {
            keep_static: false,
            max_think_ms: Some(5_000),
        }
    }
}

/// Gaps shorter than this are the browser's own scheduling, not the user thinking.
const MIN_THINK_MS: f64 = 100.0;
/// Redirects each request follows when the recording followed some: browsers follow 20.
const REDIRECTS: u32 = 10;

/// Request headers the browser adds itself or that would be wrong when replayed: the
/// connection's (crest manages it), the cache's (a replay wants the full response), and those
/// naming the recorded page (`Referer`, `Origin`: the recorded host, not the target).
const NOISE_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "upgrade",
    "accept-encoding",
    "referer",
    "origin",
    "if-none-match",
    "if-modified-since",
    "cache-control",
    "pragma",
    "priority",
    "dnt",
    "sec-gpc",
    "upgrade-insecure-requests",
    "purpose",
    "x-client-data",
];

/// The scenario of the recording in `text`; `source_name` names it in errors and comments.
pub fn import(text: &str, source_name: &str, options: &HarOptions) -> Result<Imported, ImportError> {
    let (creator, mut entries) = read(text, source_name)?;
    let total = entries.len();
    // A missing start keeps the entry after the one before it.
    let mut last = f64::MIN;
    let keys: Vec<f64> = entries
        .iter()
        .map(|e| {
            last = e.start_ms.unwrap_or(last);
            last
        })
        .collect();
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]));
    let mut sorted: Vec<Option<Entry>> = entries.drain(..).map(Some).collect();
    let entries: Vec<Entry> = order.iter().filter_map(|&i| sorted[i].take()).collect();

    let Some(origin) = main_origin(&entries) else {
        return Err(ImportError::NotThisKind {
            source_name: source_name.to_string(),
            message: "the recording has no HTTP requests to import".to_string(),
        });
    };
    let hops = redirect_chains(&entries);
    let mut left_out = LeftOut::default();
    // (the entry, the hops of its redirects the browser followed)
    let mut kept: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if hops.follows[i].is_some() {
            left_out.redirects += 1;
            continue;
        }
        match leave_out(e, &origin, options.keep_static) {
            Some(Why::NotHttp) => left_out.not_http += 1,
            Some(Why::NoResponse) => left_out.no_response += 1,
            Some(Why::Preflight) => left_out.preflight += 1,
            Some(Why::Static) => left_out.statics += 1,
            Some(Why::OtherHost) => {
                left_out
                    .other_hosts
                    .insert(e.url.host_str().unwrap_or_default().to_string());
                left_out.other_host_entries += 1;
            }
            None => kept.push((i, hops.chain[i].clone())),
        }
    }
    if kept.is_empty() {
        return Err(ImportError::NotThisKind {
            source_name: source_name.to_string(),
            message: format!(
                "every one of its {total} entries was left out ({}){}",
                left_out.words(&origin).join(", "),
                if options.keep_static {
                    ""
                } else {
                    "; --keep-static keeps static assets and other hosts"
                }
            ),
        });
    }
    let redirects = kept.iter().any(|(_, chain)| !chain.is_empty());

    let mut imported = Imported {
        made_from: vec![format!(
            "HAR 1.2 recording {source_name}{creator}: {} of {total} entries",
            kept.len()
        )],
        origin: origin.clone(),
        ..Imported::default()
    };
    imported.defaults.redirects = redirects.then_some(REDIRECTS);

    let mut build = Build {
        entries: &entries,
        origin: &origin,
        corr: Correlator::default(),
        cookies: BTreeSet::new(),
        imported: &mut imported,
        fed: 0,
    };
    let mut requests: Vec<Request> = Vec::new();
    let mut steps_at: Vec<usize> = Vec::new();
    let mut steps: Vec<Step> = Vec::new();
    let mut ended: Option<f64> = None;
    for (k, (i, chain)) in kept.iter().enumerate() {
        let e = &entries[*i];
        if let (Some(max), Some(end), Some(start)) = (options.max_think_ms, ended, e.start_ms) {
            let gap = start - end;
            if gap >= MIN_THINK_MS {
                steps.push(Step::Think((gap.round() as u64).min(max)));
            }
        }
        for &j in std::iter::once(i).chain(chain) {
            if let Some(end) = entries[j].end_ms() {
                ended = Some(ended.map_or(end, |x: f64| x.max(end)));
            }
        }
        requests.push(build.request(k, *i, chain, redirects));
        steps_at.push(steps.len());
        steps.push(Step::Think(0));
    }
    let Build { corr, .. } = build;
    // Extracts are known once every later request has been read.
    let describe: Vec<String> = requests.iter().enumerate().map(|(k, r)| describe(r, k)).collect();
    let correlated = corr.correlations(|k| describe.get(k).cloned().unwrap_or_default());
    for (k, r) in requests.iter_mut().enumerate() {
        r.extract = corr.extracts(k);
    }
    let failing: Vec<String> = kept
        .iter()
        .filter(|(i, chain)| final_status(&entries, *i, chain) >= 400)
        .map(|(i, chain)| {
            let e = &entries[*i];
            format!("{} ({})", e.number, final_status(&entries, *i, chain))
        })
        .collect();
    imported.correlated = correlated;
    move_common_headers(&mut imported, &mut requests);
    for (k, r) in requests.into_iter().enumerate() {
        steps[steps_at[k]] = Step::Request(Box::new(r));
    }
    imported.flows.push(crate::Flow {
        name: "recorded".to_string(),
        steps,
    });
    let mut notes = Vec::new();
    let words = left_out.words(&origin);
    if !words.is_empty() {
        notes.push(format!(
            "Left out {} of {total} entries: {}.",
            total - kept.len(),
            words.join(", ")
        ));
    }
    if !failing.is_empty() {
        notes.push(format!(
            "Recorded failing, so not checked for their recorded status (a failure again counts as one): entr{} {}.",
            if failing.len() == 1 { "y" } else { "ies" },
            failing.join(", ")
        ));
    }
    imported.notes.extend(notes);
    Ok(imported)
}

/// The final status of an entry whose redirects the browser followed through `chain`.
fn final_status(entries: &[Entry], i: usize, chain: &[usize]) -> u16 {
    chain.last().map_or(entries[i].status, |&j| entries[j].status)
}

/// `GET /carts/{cart_id} (step 3)`: a request as the scenario's comments name it.
fn describe(r: &Request, k: usize) -> String {
    let target = r.path.as_deref().or(r.url.as_deref()).unwrap_or_default();
    let target = target.split('?').next().unwrap_or_default().replace("${", "{");
    format!("{} {target} (step {})", r.method, k + 1)
}

/// Headers every request sends the same go to `defaults.headers`, said once.
fn move_common_headers(imported: &mut Imported, requests: &mut [Request]) {
    let Some((first, rest)) = requests.split_first() else {
        return;
    };
    if rest.is_empty() {
        return;
    }
    let common: Vec<(String, String)> = first
        .headers
        .iter()
        .filter(|(n, v)| {
            !n.eq_ignore_ascii_case("content-type")
                && !v.contains("${")
                && rest
                    .iter()
                    .all(|r| r.headers.iter().any(|(n2, v2)| n2.eq_ignore_ascii_case(n) && v2 == *v))
        })
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    for (name, value) in common {
        for r in requests.iter_mut() {
            r.headers.retain(|n, _| !n.eq_ignore_ascii_case(&name));
        }
        imported.defaults.headers.insert(name, value);
    }
}

/// The state of building the requests in order.
struct Build<'a> {
    entries: &'a [Entry],
    origin: &'a str,
    corr: Correlator,
    /// Cookies a response set so far: crest's cookie jar has them too.
    cookies: BTreeSet<String>,
    imported: &'a mut Imported,
    /// How many entries (in order) the correlator has been told the browser sent.
    fed: usize,
}

impl Build<'_> {
    /// Request `k` of the scenario, made from entry `i` and its followed hops.
    fn request(&mut self, k: usize, i: usize, chain: &[usize], redirects: bool) -> Request {
        let e = &self.entries[i];
        self.corr.path_of(k, e.url.path());
        let words = format!("{} {} (step {})", e.method, e.url.path(), k + 1);
        let mut r = Request {
            method: e.method.to_ascii_uppercase(),
            ..Request::default()
        };
        let path = self.path(k, e, &words);
        if e.origin() == self.origin {
            r.path = Some(path);
        } else {
            r.url = Some(format!("{}{path}", e.origin()));
        }
        let body = self.body(k, e, &words);
        let drop_content_type = matches!(body, Some(Body::Form(_) | Body::Multipart(_)));
        for (name, value) in &e.headers {
            let lower = name.to_ascii_lowercase();
            if lower.starts_with(':')
                || lower.starts_with("sec-ch-")
                || lower.starts_with("sec-fetch-")
                || lower.starts_with("sec-websocket-")
                || NOISE_HEADERS.contains(&lower.as_str())
                || (drop_content_type && lower == "content-type")
            {
                if lower == "accept-encoding" {
                    self.imported.defaults.compression = true;
                }
                continue;
            }
            let value = if lower == "cookie" {
                let never_set: Vec<&str> = value
                    .split(';')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .filter(|c| !self.cookies.contains(c.split('=').next().unwrap_or_default().trim()))
                    .collect();
                if never_set.is_empty() {
                    // The cookie jar sends what the recorded responses set.
                    continue;
                }
                let value = never_set.join("; ");
                self.imported
                    .secrets
                    .keep_or_hide(name, &value, &format!("header {name} of {words}"))
            } else {
                let place = format!("header {name}");
                match self.corr.template(value, &Place { step: k, what: &place }) {
                    Some(t) => t,
                    None => self
                        .imported
                        .secrets
                        .keep_or_hide(name, value, &format!("header {name} of {words}")),
                }
            };
            match r.headers.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
                Some((n, v)) => {
                    let sep = if n.eq_ignore_ascii_case("cookie") { "; " } else { ", " };
                    v.push_str(sep);
                    v.push_str(&value);
                }
                None => {
                    r.headers.insert(name.clone(), value);
                }
            }
        }
        r.body = body;

        // What the browser sent up to the end of this request's hops, then what the response
        // that crest will see (the last hop's) handed out.
        let last = chain.last().copied().unwrap_or(i);
        while self.fed <= last.max(i) {
            let sent = &self.entries[self.fed];
            self.corr.sent(&sent.request_text(), &sent.request_values());
            self.fed += 1;
        }
        let mut own_text = String::new();
        let mut own_values = Vec::new();
        for &j in std::iter::once(&i).chain(chain) {
            own_text.push_str(&self.entries[j].request_text());
            own_values.extend(self.entries[j].request_values());
            for (n, v) in &self.entries[j].response_headers {
                if n.eq_ignore_ascii_case("set-cookie") {
                    for line in v.lines() {
                        if let Some((name, _)) = line.split_once('=') {
                            self.cookies.insert(name.trim().to_string());
                        }
                    }
                }
            }
        }
        let f = &self.entries[last];
        self.corr.response(
            k,
            (&own_text, &own_values),
            &f.response_headers,
            &f.mime,
            f.body.as_deref(),
            !redirects || !matches!(f.status, 301..=303 | 307 | 308),
        );

        let status = final_status(self.entries, i, chain);
        r.status = match status {
            304 => vec![200, 304],
            // A redirect crest follows itself is no longer its response.
            301..=303 | 307 | 308 if redirects => Vec::new(),
            s if s < 400 => vec![s],
            _ => Vec::new(),
        };
        r
    }

    /// The path and query, each segment and value carrying what it can.
    fn path(&mut self, k: usize, e: &Entry, words: &str) -> String {
        let raw = e.url.path();
        let mut out = String::new();
        let mut rest = raw;
        if let Some((var, len)) = self.corr.path_prefix(
            raw,
            &Place {
                step: k,
                what: "the path",
            },
        ) {
            out.push_str(&var);
            rest = &raw[len..];
        }
        let segments: Vec<String> = rest
            .split('/')
            .map(|seg| {
                self.corr
                    .template(
                        seg,
                        &Place {
                            step: k,
                            what: "the path",
                        },
                    )
                    .unwrap_or_else(|| crate::literal(seg))
            })
            .collect();
        out.push_str(&segments.join("/"));
        if let Some(q) = e.url.query() {
            out.push('?');
            let pairs: Vec<String> = q
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((n, v)) => {
                        let place = format!("query parameter {n}");
                        let v = match self.corr.template(v, &Place { step: k, what: &place }) {
                            Some(t) => t,
                            None => {
                                self.imported
                                    .secrets
                                    .keep_or_hide(n, v, &format!("query parameter {n} of {words}"))
                            }
                        };
                        format!("{}={v}", crate::literal(n))
                    }
                    None => crate::literal(pair),
                })
                .collect();
            out.push_str(&pairs.join("&"));
        }
        out
    }

    /// The body, its strings carrying what they can.
    fn body(&mut self, k: usize, e: &Entry, words: &str) -> Option<Body> {
        let post = e.post.as_ref()?;
        let mime = post.mime.to_ascii_lowercase();
        let text = post.text.as_deref().unwrap_or_default();
        if mime.contains("json") || (mime.is_empty() && text.trim_start().starts_with('{')) {
            if let Ok(mut v) = serde_json::from_str::<Value>(text) {
                self.json(k, &mut v, "$".to_string(), "value", words);
                return Some(Body::Json(v));
            }
        }
        if mime.starts_with("application/x-www-form-urlencoded") {
            let pairs: Vec<(String, String)> = if text.is_empty() {
                post.params
                    .iter()
                    .map(|p| (decode(&p.name), decode(&p.value)))
                    .collect()
            } else {
                url::form_urlencoded::parse(text.as_bytes())
                    .map(|(n, v)| (n.into_owned(), v.into_owned()))
                    .collect()
            };
            let mut form = IndexMap::new();
            for (n, v) in &pairs {
                let place = format!("form field {n}");
                let v = match self.corr.template(v, &Place { step: k, what: &place }) {
                    Some(t) => t,
                    None => self
                        .imported
                        .secrets
                        .keep_or_hide(n, v, &format!("form field {n} of {words}")),
                };
                form.insert(n.clone(), v);
            }
            // A field sent twice cannot be a map's key twice: such a form is sent as its text.
            if form.len() == pairs.len() {
                return Some(Body::Form(form));
            }
        } else if mime.starts_with("multipart/form-data") && !post.params.is_empty() {
            let mut parts = Vec::new();
            for p in &post.params {
                let part = match &p.file {
                    Some(file) => {
                        self.imported.notes.push(format!(
                            "The file {file} sent as part {} of {words} is not in the recording: the part is sent empty.",
                            p.name
                        ));
                        Part {
                            name: p.name.clone(),
                            value: Some(String::new()),
                            content_type: p.content_type.clone(),
                            ..Part::default()
                        }
                    }
                    None => {
                        let place = format!("form field {}", p.name);
                        let value = match self.corr.template(&p.value, &Place { step: k, what: &place }) {
                            Some(t) => t,
                            None => self.imported.secrets.keep_or_hide(
                                &p.name,
                                &p.value,
                                &format!("form field {} of {words}", p.name),
                            ),
                        };
                        Part {
                            name: p.name.clone(),
                            value: Some(value),
                            ..Part::default()
                        }
                    }
                };
                parts.push(part);
            }
            return Some(Body::Multipart(parts));
        }
        if text.is_empty() {
            return None;
        }
        let body = self
            .corr
            .template(
                text,
                &Place {
                    step: k,
                    what: "the body",
                },
            )
            .unwrap_or_else(|| crate::literal(text));
        Some(Body::Text(body))
    }

    /// The strings of a JSON body as templates, in place; `key` is the field a value is under.
    fn json(&mut self, k: usize, v: &mut Value, path: String, key: &str, words: &str) {
        match v {
            Value::String(s) => {
                let place = format!("JSON field {path}");
                *s = match self.corr.template(s, &Place { step: k, what: &place }) {
                    Some(t) => t,
                    None => self
                        .imported
                        .secrets
                        .keep_or_hide(key, s, &format!("JSON field {path} of {words}")),
                };
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    self.json(k, item, format!("{path}[{i}]"), key, words);
                }
            }
            Value::Object(map) => {
                for (name, item) in map.iter_mut() {
                    let p = format!("{path}{}", correlate::json_key(name));
                    self.json(k, item, p, name, words);
                }
            }
            // Numbers keep their type: a template would make them strings.
            Value::Number(_) | Value::Bool(_) | Value::Null => {}
        }
    }
}

/// A form value as the browser's `params` give it, percent-encoded or not.
fn decode(s: &str) -> String {
    if s.contains('%') || s.contains('+') {
        url::form_urlencoded::parse(format!("x={s}").as_bytes())
            .next()
            .map_or_else(|| s.to_string(), |(_, v)| v.into_owned())
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests;
