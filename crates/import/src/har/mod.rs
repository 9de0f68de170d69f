//! `crest import har`: a browser's recorded session (HAR 1.2) as one flow, with the values the
//! server handed out carried to the requests that send them back.
//!
//! The recording is read into entries, sorted by when they started; what a load test should not
//! replay is left out (static assets, other hosts, the hops of a redirect crest follows itself,
//! CORS preflights, requests that never had a response), and the rest become request steps with
//! the recorded gaps as think times. [`correlate`] then finds the values a response handed out
//! that a later request sent back.

mod correlate;
mod html;

use crate::{Body, ImportError, Imported, Part, Request, Step};
use base64::Engine as _;
use correlate::{Correlator, Place};
use indexmap::IndexMap;
use serde_json::Value;
use std::collections::BTreeSet;
use url::Url;

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
/// A response body larger than this is not searched for values to carry.
const MAX_BODY: usize = 8 << 20;

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

/// An entry of the recording, as much of it as an import reads.
#[derive(Debug)]
struct Entry {
    /// Its place in the file, from 1.
    number: usize,
    /// When it started, in milliseconds since the epoch.
    start_ms: Option<f64>,
    time_ms: f64,
    method: String,
    url: Url,
    headers: Vec<(String, String)>,
    post: Option<Post>,
    status: u16,
    response_headers: Vec<(String, String)>,
    mime: String,
    body: Option<String>,
    resource_type: Option<String>,
    redirect_url: String,
}

#[derive(Debug)]
struct Post {
    mime: String,
    text: Option<String>,
    params: Vec<PostParam>,
}

#[derive(Debug)]
struct PostParam {
    name: String,
    value: String,
    file: Option<String>,
    content_type: Option<String>,
}

impl Entry {
    fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    fn end_ms(&self) -> Option<f64> {
        self.start_ms.map(|s| s + self.time_ms.max(0.0))
    }

    fn origin(&self) -> String {
        self.url.origin().ascii_serialization()
    }

    fn is_http(&self) -> bool {
        matches!(self.url.scheme(), "http" | "https")
    }

    /// Where a redirect sends the browser.
    fn location(&self) -> Option<Url> {
        if !(300..400).contains(&self.status) {
            return None;
        }
        let to = Some(self.redirect_url.as_str())
            .filter(|u| !u.is_empty())
            .or_else(|| header(&self.response_headers, "location"))?;
        self.url.join(to).ok()
    }

    /// Everything the request sent, as text: the URL, header values and the body.
    fn request_text(&self) -> String {
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
    fn request_values(&self) -> Vec<String> {
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

fn json_values(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(a) => a.iter().for_each(|v| json_values(v, out)),
        Value::Object(m) => m.values().for_each(|v| json_values(v, out)),
        Value::Bool(_) | Value::Null => {}
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

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

/// Why an entry was left out.
enum Why {
    NotHttp,
    NoResponse,
    Preflight,
    Static,
    OtherHost,
}

#[derive(Default)]
struct LeftOut {
    not_http: usize,
    no_response: usize,
    preflight: usize,
    statics: usize,
    other_hosts: BTreeSet<String>,
    other_host_entries: usize,
    redirects: usize,
}

impl LeftOut {
    fn words(&self, origin: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.statics > 0 {
            out.push(format!(
                "{} static asset{} (images, scripts, stylesheets, fonts, media; --keep-static keeps them)",
                self.statics,
                plural(self.statics)
            ));
        }
        if self.other_host_entries > 0 {
            let mut hosts: Vec<&str> = self.other_hosts.iter().map(String::as_str).take(5).collect();
            if self.other_hosts.len() > 5 {
                hosts.push("...");
            }
            out.push(format!(
                "{} to other hosts than {origin} ({}; --keep-static keeps them)",
                self.other_host_entries,
                hosts.join(", ")
            ));
        }
        if self.redirects > 0 {
            out.push(format!(
                "{} redirect{} the browser followed (crest follows them: defaults.redirects)",
                self.redirects,
                plural(self.redirects)
            ));
        }
        if self.preflight > 0 {
            out.push(format!(
                "{} CORS preflight{} (a browser's, not the application's)",
                self.preflight,
                plural(self.preflight)
            ));
        }
        if self.no_response > 0 {
            out.push(format!(
                "{} without a response (cancelled or blocked)",
                self.no_response
            ));
        }
        if self.not_http > 0 {
            out.push(format!(
                "{} not HTTP (data:, blob:, WebSocket, extensions)",
                self.not_http
            ));
        }
        out
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn leave_out(e: &Entry, origin: &str, keep_static: bool) -> Option<Why> {
    let kind = e.resource_type.as_deref().map(str::to_ascii_lowercase);
    if !e.is_http() || kind.as_deref() == Some("websocket") || e.status == 101 {
        return Some(Why::NotHttp);
    }
    if e.status == 0 {
        return Some(Why::NoResponse);
    }
    if kind.as_deref() == Some("preflight")
        || (e.method == "OPTIONS" && e.header("access-control-request-method").is_some())
    {
        return Some(Why::Preflight);
    }
    if keep_static {
        return None;
    }
    if is_static(e, kind.as_deref()) {
        return Some(Why::Static);
    }
    if e.origin() != origin {
        return Some(Why::OtherHost);
    }
    None
}

/// Whether an entry is what a page loads beside itself rather than what the application does:
/// by the browser's resource type when it wrote one, else by the response's type or the path's
/// extension. Only reads are: a POST is the application's whatever it answers.
fn is_static(e: &Entry, kind: Option<&str>) -> bool {
    if !matches!(e.method.as_str(), "GET" | "HEAD") {
        return false;
    }
    match kind {
        Some(
            "image" | "script" | "stylesheet" | "font" | "media" | "manifest" | "texttrack" | "ping"
            | "cspviolationreport",
        ) => return true,
        Some("document" | "xhr" | "fetch" | "eventsource") => return false,
        _ => {}
    }
    let mime = e.mime.to_ascii_lowercase();
    let mime = mime.split(';').next().unwrap_or_default().trim();
    if mime.starts_with("image/")
        || mime.starts_with("font/")
        || mime.starts_with("audio/")
        || mime.starts_with("video/")
        || mime == "text/css"
        || mime.contains("javascript")
        || mime.contains("ecmascript")
        || mime.contains("font")
        || mime == "application/manifest+json"
    {
        return true;
    }
    let last = e.url.path().rsplit('/').next().unwrap_or_default().to_ascii_lowercase();
    let ext = last.rsplit_once('.').map(|(_, x)| x).unwrap_or_default();
    matches!(
        ext,
        "png"
            | "jpg"
            | "jpeg"
            | "gif"
            | "svg"
            | "ico"
            | "webp"
            | "avif"
            | "bmp"
            | "css"
            | "js"
            | "mjs"
            | "map"
            | "woff"
            | "woff2"
            | "ttf"
            | "otf"
            | "eot"
            | "mp4"
            | "webm"
            | "mp3"
            | "wav"
            | "ogg"
            | "m4a"
    )
}

/// The origin the scenario targets: the first page the browser loaded (a document, or an HTML
/// response), else the origin most requests went to (the first recorded on a tie).
fn main_origin(entries: &[Entry]) -> Option<String> {
    let http = || entries.iter().filter(|e| e.is_http());
    let document = http().find(|e| {
        e.resource_type.as_deref().map(str::to_ascii_lowercase).as_deref() == Some("document")
            || (e.resource_type.is_none() && e.mime.to_ascii_lowercase().contains("html"))
    });
    if let Some(d) = document {
        return Some(d.origin());
    }
    let mut counts: IndexMap<String, usize> = IndexMap::new();
    for e in http() {
        *counts.entry(e.origin()).or_default() += 1;
    }
    let best = counts.values().copied().max()?;
    counts.into_iter().find(|(_, n)| *n == best).map(|(o, _)| o)
}

struct Hops {
    /// For each entry, the entry whose redirect it is the followed hop of.
    follows: Vec<Option<usize>>,
    /// For each entry, the hops the browser followed from it, in order.
    chain: Vec<Vec<usize>>,
}

/// The redirects the browser followed: a 3xx entry and the next entry that requested its
/// `Location`, on to the end of the chain.
fn redirect_chains(entries: &[Entry]) -> Hops {
    let mut follows = vec![None; entries.len()];
    let mut chain = vec![Vec::new(); entries.len()];
    for i in 0..entries.len() {
        if follows[i].is_some() {
            continue;
        }
        let mut cur = i;
        while let Some(mut to) = entries[cur].location() {
            to.set_fragment(None);
            let same_method = matches!(entries[cur].status, 307 | 308);
            let next = (cur + 1..entries.len()).find(|&j| {
                let e = &entries[j];
                follows[j].is_none()
                    && e.url.as_str().split('#').next() == Some(to.as_str())
                    && (e.method == "GET" || (same_method && e.method == entries[cur].method))
            });
            let Some(j) = next else { break };
            follows[j] = Some(i);
            chain[i].push(j);
            cur = j;
        }
    }
    Hops { follows, chain }
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

/// The recording's creator (` (by Chrome 120.0)`, or nothing) and its entries, in file order.
fn read(text: &str, source_name: &str) -> Result<(String, Vec<Entry>), ImportError> {
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
    let entries = list
        .iter()
        .enumerate()
        .map(|(i, e)| entry(i + 1, e, source_name))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((creator, entries))
}

fn entry(number: usize, e: &Value, source_name: &str) -> Result<Entry, ImportError> {
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
    let method = req
        .get("method")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .unwrap_or("GET");
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
        .and_then(Value::as_f64)
        .filter(|s| (0.0..1000.0).contains(s))
        .map_or(0, |s| s as u16);
    let start_ms = e
        .get("startedDateTime")
        .and_then(Value::as_str)
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.timestamp_micros() as f64 / 1000.0);
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
        headers: headers(req.get("headers")),
        post,
        status,
        response_headers: headers(resp.and_then(|r| r.get("headers"))),
        mime: str_of(content.and_then(|c| c.get("mimeType"))),
        body,
        resource_type: e.get("_resourceType").and_then(Value::as_str).map(str::to_string),
        redirect_url: str_of(resp.and_then(|r| r.get("redirectURL"))),
    })
}

fn headers(v: Option<&Value>) -> Vec<(String, String)> {
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
fn shorten(url: &str) -> String {
    if url.chars().count() > 200 {
        format!("{}...", url.chars().take(200).collect::<String>())
    } else {
        url.to_string()
    }
}

#[cfg(test)]
mod tests;
