//! Which entries of a recording a load test replays: not a browser's static assets, other
//! hosts, preflights or the hops of redirects it followed, each counted for the notes.

use super::entry::Entry;
use indexmap::IndexMap;
use std::collections::BTreeSet;

/// Why an entry was left out.
pub(super) enum Why {
    NotHttp,
    NoResponse,
    Preflight,
    Static,
    OtherHost,
}

#[derive(Default)]
pub(super) struct LeftOut {
    pub(super) not_http: usize,
    pub(super) no_response: usize,
    pub(super) preflight: usize,
    pub(super) statics: usize,
    pub(super) other_hosts: BTreeSet<String>,
    pub(super) other_host_entries: usize,
    pub(super) redirects: usize,
}

impl LeftOut {
    pub(super) fn words(&self, origin: &str) -> Vec<String> {
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

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

pub(super) fn leave_out(e: &Entry, origin: &str, keep_static: bool) -> Option<Why> {
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
pub(super) fn is_static(e: &Entry, kind: Option<&str>) -> bool {
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
pub(super) fn main_origin(entries: &[Entry]) -> Option<String> {
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

pub(super) struct Hops {
    /// For each entry, the entry whose redirect it is the followed hop of.
    pub(super) follows: Vec<Option<usize>>,
    /// For each entry, the hops the browser followed from it, in order.
    pub(super) chain: Vec<Vec<usize>>,
}

/// The redirects the browser followed: a 3xx entry and the next entry that requested its
/// `Location`, on to the end of the chain.
pub(super) fn redirect_chains(entries: &[Entry]) -> Hops {
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
