//! `crest import har` end to end: a session is driven against a real server on a loopback port
//! and written down as a browser writes HAR 1.2 (the headers, bodies and timings that went over
//! the wire), imported, and run by several users at once. Every value the server hands out is
//! fresh per user, and the server counts any stale one it is sent back: none may be.
#![allow(clippy::unwrap_used)]

mod common;

use crest_testkit::{Received, Reply, Server};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::BuildHasher;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A response as the recording client read it.
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A browser, as far as a HAR recording sees one: it sends requests with a browser's headers,
/// keeps the cookies responses set, and writes down every exchange.
struct Recorder {
    base: String,
    addr: String,
    cookies: BTreeMap<String, String>,
    entries: Vec<Value>,
}

impl Recorder {
    fn new(base: &str) -> Recorder {
        Recorder {
            base: base.trim_end_matches('/').to_string(),
            addr: base.trim_start_matches("http://").trim_end_matches('/').to_string(),
            cookies: BTreeMap::new(),
            entries: Vec::new(),
        }
    }

    /// Sends one request and records it; `kind` is the browser's resource type.
    fn send(
        &mut self,
        method: &str,
        path: &str,
        extra: &[(&str, &str)],
        body: Option<(&str, &str)>,
        kind: &str,
    ) -> Resp {
        let mut headers: Vec<(String, String)> = vec![
            ("Host".into(), self.addr.clone()),
            (
                "User-Agent".into(),
                "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0".into(),
            ),
            ("Accept-Language".into(), "en-GB,en;q=0.5".into()),
            ("Accept-Encoding".into(), "gzip, deflate, br".into()),
            ("Connection".into(), "close".into()),
            (
                "Sec-Fetch-Mode".into(),
                if kind == "document" { "navigate" } else { "cors" }.into(),
            ),
        ];
        headers.extend(extra.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        if !self.cookies.is_empty() {
            let c: Vec<String> = self.cookies.iter().map(|(n, v)| format!("{n}={v}")).collect();
            headers.push(("Cookie".into(), c.join("; ")));
        }
        if let Some((mime, text)) = body {
            headers.push(("Content-Type".into(), mime.into()));
            headers.push(("Content-Length".into(), text.len().to_string()));
        }
        let started = chrono::Utc::now();
        let t0 = Instant::now();
        let mut s = TcpStream::connect(&self.addr).unwrap();
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        for (n, v) in &headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes()).unwrap();
        if let Some((_, text)) = body {
            s.write_all(text.as_bytes()).unwrap();
        }
        let resp = read_response(&mut s);
        let elapsed = t0.elapsed().as_secs_f64() * 1000.0;
        for (n, v) in &resp.headers {
            if n.eq_ignore_ascii_case("set-cookie") {
                let pair = v.split(';').next().unwrap();
                let (name, value) = pair.split_once('=').unwrap();
                self.cookies.insert(name.trim().into(), value.trim().into());
            }
        }
        let hs = |h: &[(String, String)]| {
            h.iter()
                .map(|(n, v)| json!({"name": n, "value": v}))
                .collect::<Vec<_>>()
        };
        let url = format!("{}{path}", self.base);
        let query: Vec<Value> = url::Url::parse(&url)
            .unwrap()
            .query_pairs()
            .map(|(n, v)| json!({"name": n, "value": v}))
            .collect();
        let mut entry = json!({
            "startedDateTime": started.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "time": elapsed,
            "request": {"method": method, "url": url, "httpVersion": "HTTP/1.1", "headers": hs(&headers),
                "queryString": query, "cookies": [], "headersSize": -1, "bodySize": body.map_or(0, |(_, t)| t.len())},
            "response": {"status": resp.status, "statusText": "", "httpVersion": "HTTP/1.1", "headers": hs(&resp.headers),
                "cookies": [], "content": {"size": resp.body.len(), "mimeType": resp.header("content-type").unwrap_or(""), "text": resp.body},
                "redirectURL": resp.header("location").unwrap_or(""), "headersSize": -1, "bodySize": resp.body.len()},
            "cache": {},
            "timings": {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": elapsed, "receive": 0},
            "_resourceType": kind,
        });
        if let Some((mime, text)) = body {
            entry["request"]["postData"] = json!({"mimeType": mime, "text": text});
            if mime.starts_with("application/x-www-form-urlencoded") {
                let params: Vec<Value> = url::form_urlencoded::parse(text.as_bytes())
                    .map(|(n, v)| json!({"name": n, "value": v}))
                    .collect();
                entry["request"]["postData"]["params"] = json!(params);
            }
        }
        self.entries.push(entry);
        resp
    }

    /// The recording, as Firefox's "Save all as HAR" writes it.
    fn write(&self, path: &Path) {
        let har = json!({"log": {"version": "1.2", "creator": {"name": "Firefox", "version": "120.0"},
            "browser": {"name": "Firefox", "version": "120.0"}, "pages": [], "entries": self.entries}});
        std::fs::write(path, serde_json::to_string_pretty(&har).unwrap()).unwrap();
    }
}

fn read_response(s: &mut TcpStream) -> Resp {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "connection closed before the response's head");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let len = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.parse::<usize>().unwrap());
    let mut body = buf[head_end..].to_vec();
    match len {
        Some(len) => {
            while body.len() < len {
                let n = s.read(&mut chunk).unwrap();
                assert!(n > 0, "connection closed mid-body");
                body.extend_from_slice(&chunk[..n]);
            }
            body.truncate(len);
        }
        None => {
            s.read_to_end(&mut body).unwrap();
        }
    }
    Resp {
        status,
        headers,
        body: String::from_utf8(body).unwrap(),
    }
}

/// `crest import har REC --out DIR/s.yaml`; the scenario's text and path.
fn import(har: &Path, dir: &Path) -> (String, PathBuf) {
    let out = dir.join("s.yaml");
    let r = common::crest()
        .args(["import", "har"])
        .arg(har)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "crest import har failed: {stderr}");
    let text = std::fs::read_to_string(&out).unwrap();
    eprintln!("{stderr}\n{text}");
    (text, out)
}

/// The scenario run by `users` users for `secs` seconds instead of once.
fn with_load(path: &Path, text: &str, users: u32, secs: u32) {
    let at = text.rfind("\nload:").expect("a load: section");
    let edited = format!("{}\nload:\n  users: {users}\n  duration: {secs}s\n", &text[..at]);
    std::fs::write(path, edited).unwrap();
}

fn hex(n: u64) -> u64 {
    std::collections::hash_map::RandomState::new().hash_one(n)
}

/// A shop that hands out a fresh value at every turn and counts each stale one sent back.
#[derive(Default)]
struct Shop {
    next: u64,
    csrf: HashSet<String>,
    sessions: HashSet<String>,
    /// cart id -> its request token
    carts: HashMap<String, String>,
    stale: BTreeMap<&'static str, u64>,
    /// Requests answered with success, by route (the redirect's target not counted).
    ok: BTreeMap<&'static str, u64>,
}

fn full(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
    Reply::Full {
        status,
        headers: headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
        body: body.as_bytes().to_vec(),
    }
}

fn request_header<'a>(r: &'a Received, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

impl Shop {
    fn fresh(&mut self) -> u64 {
        self.next += 1;
        hex(self.next)
    }

    fn refuse(&mut self, what: &'static str, status: u16) -> Reply {
        *self.stale.entry(what).or_default() += 1;
        full(status, &[("Content-Type", "application/json")], r#"{"error":"stale"}"#)
    }

    fn session(&self, r: &Received) -> bool {
        request_header(r, "cookie").is_some_and(|c| {
            c.split(';')
                .filter_map(|p| p.trim().strip_prefix("sid="))
                .any(|sid| self.sessions.contains(sid))
        })
    }

    fn answer(&mut self, r: &Received) -> Reply {
        let path = r.path.split('?').next().unwrap().to_string();
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let body = String::from_utf8_lossy(&r.body).into_owned();
        match (r.method.as_str(), parts.as_slice()) {
            ("GET", ["login"]) => {
                let csrf = format!("c{:016x}", self.fresh());
                self.csrf.insert(csrf.clone());
                *self.ok.entry("GET /login").or_default() += 1;
                let page = format!(
                    "<!doctype html><html><body><form method=\"post\" action=\"/login\">\n\
                     <input type=\"text\" name=\"user\">\n<input type=\"password\" name=\"password\">\n\
                     <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\n<button>Sign in</button></form></body></html>"
                );
                full(200, &[("Content-Type", "text/html; charset=utf-8")], &page)
            }
            ("GET", ["static", _]) => full(200, &[("Content-Type", "text/css")], "body{}"),
            ("POST", ["login"]) => {
                let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes()).into_owned().collect();
                if !form.get("csrf").is_some_and(|c| self.csrf.remove(c)) {
                    return self.refuse("csrf", 403);
                }
                if form.get("user").map(String::as_str) != Some("ann")
                    || form.get("password").map(String::as_str) != Some("s3cret-pw")
                {
                    return self.refuse("password", 401);
                }
                let sid = format!("s{:016x}", self.fresh());
                self.sessions.insert(sid.clone());
                *self.ok.entry("POST /login").or_default() += 1;
                let cookie = format!("sid={sid}; Path=/; HttpOnly");
                full(303, &[("Location", "/home"), ("Set-Cookie", &cookie)], "")
            }
            ("GET", ["home"]) => {
                if !self.session(r) {
                    return self.refuse("session", 401);
                }
                full(
                    200,
                    &[("Content-Type", "text/html")],
                    "<html><body>Welcome back</body></html>",
                )
            }
            ("POST", ["carts"]) => {
                if !self.session(r) {
                    return self.refuse("session", 401);
                }
                let a = self.fresh();
                let id = format!(
                    "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
                    a >> 32,
                    a & 0xffff,
                    (a >> 16) & 0xfff,
                    (a >> 4) & 0xfff,
                    self.fresh() & 0xffff_ffff_ffff
                );
                let token = format!("rt-{:016x}", self.fresh());
                self.carts.insert(id.clone(), token.clone());
                *self.ok.entry("POST /carts").or_default() += 1;
                full(
                    201,
                    &[("Content-Type", "application/json"), ("X-Request-Token", &token)],
                    &format!(r#"{{"cart":{{"id":"{id}","items":[],"currency":"EUR"}}}}"#),
                )
            }
            ("PUT", ["carts", id, "items"]) => {
                if !self.session(r) {
                    return self.refuse("session", 401);
                }
                let Some(token) = self.carts.get(*id) else {
                    return self.refuse("cart", 404);
                };
                if request_header(r, "x-request-token") != Some(token.as_str()) {
                    return self.refuse("token", 403);
                }
                *self.ok.entry("PUT /carts/{id}/items").or_default() += 1;
                full(
                    200,
                    &[("Content-Type", "application/json")],
                    &format!(r#"{{"id":"{id}","items":[{body}]}}"#),
                )
            }
            ("GET", ["carts", id]) => {
                if !self.session(r) {
                    return self.refuse("session", 401);
                }
                if !self.carts.contains_key(*id) {
                    return self.refuse("cart", 404);
                }
                *self.ok.entry("GET /carts/{id}").or_default() += 1;
                full(
                    200,
                    &[("Content-Type", "application/json")],
                    &format!(r#"{{"cart":{{"id":"{id}"}}}}"#),
                )
            }
            _ => full(404, &[], ""),
        }
    }
}

#[test]
fn a_recorded_shop_session_runs_with_fresh_values_for_every_user() {
    let rt = common::rt();
    let shop = Arc::new(Mutex::new(Shop::default()));
    let s = shop.clone();
    let server = rt.block_on(Server::start(move |r, _| s.lock().unwrap().answer(r)));
    let base = server.url("");

    // The session, as a user in a browser had it.
    let mut b = Recorder::new(&base);
    let page = b.send("GET", "/login", &[("Accept", "text/html")], None, "document");
    b.send("GET", "/static/site.css", &[("Accept", "text/css")], None, "stylesheet");
    let csrf = page
        .body
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    std::thread::sleep(Duration::from_millis(300));
    let form = format!("user=ann&password=s3cret-pw&csrf={csrf}");
    let login = b.send(
        "POST",
        "/login",
        &[("Accept", "text/html")],
        Some(("application/x-www-form-urlencoded", &form)),
        "document",
    );
    assert_eq!(login.status, 303);
    b.send("GET", "/home", &[("Accept", "text/html")], None, "document");
    let cart = b.send(
        "POST",
        "/carts",
        &[("Accept", "application/json")],
        Some(("application/json", r#"{"currency":"EUR"}"#)),
        "fetch",
    );
    assert_eq!(cart.status, 201);
    let token = cart.header("x-request-token").unwrap().to_string();
    let cart_id = serde_json::from_str::<Value>(&cart.body).unwrap()["cart"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let put = b.send(
        "PUT",
        &format!("/carts/{cart_id}/items"),
        &[("Accept", "application/json"), ("X-Request-Token", &token)],
        Some(("application/json", r#"{"sku":"lamp-01","qty":2}"#)),
        "fetch",
    );
    assert_eq!(put.status, 200);
    assert_eq!(
        b.send(
            "GET",
            &format!("/carts/{cart_id}"),
            &[("Accept", "application/json")],
            None,
            "fetch"
        )
        .status,
        200
    );

    let dir = tempfile::tempdir().unwrap();
    let har = dir.path().join("rec.har");
    b.write(&har);
    let (text, scenario) = import(&har, dir.path());
    for carried in ["${csrf}", "${cart_id}", "${x_request_token}", "${env:PASSWORD}"] {
        assert!(text.contains(carried), "{carried} missing:\n{text}");
    }
    // Nothing the server handed out, and no secret, is replayed as recorded.
    for recorded in [&csrf, &cart_id, &token, "s3cret-pw", "sid="] {
        assert!(!text.contains(recorded), "{recorded} replayed:\n{text}");
    }
    assert!(text.contains("redirects: 10"), "{text}");
    assert!(text.contains("Left out 2 of 7 entries: 1 static asset"), "{text}");
    let env = std::fs::read_to_string(dir.path().join("s.env")).unwrap();
    assert!(env.contains("PASSWORD='s3cret-pw'"), "{env}");

    {
        let mut s = shop.lock().unwrap();
        s.ok.clear();
        s.stale.clear();
    }
    with_load(&scenario, &text, 4, 3);
    let env_file = dir.path().join("s.env");
    let run = common::run_scenario(
        &scenario,
        &[("CREST_TARGET", &base)],
        &["--env-file", env_file.to_str().unwrap()],
    );
    let summary = run.summary();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(summary["failures"], 0, "{}", run.stdout);
    let s = shop.lock().unwrap();
    assert!(s.stale.is_empty(), "stale values sent back: {:?}", s.stale);
    let requests = summary["requests"].as_u64().unwrap();
    let served: u64 = s.ok.values().sum();
    assert!(requests >= 5 * 4, "{}", run.stdout);
    assert_eq!(
        served, requests,
        "the server's successes {:?}, crest's requests {requests}",
        s.ok
    );
    drop(server);
}

#[test]
fn a_recorded_plans_session_runs_against_crest_target() {
    let t = common::target_process(&["--pool-work", "1ms"]);
    let base = t.url.trim_end_matches('/').to_string();
    let mut b = Recorder::new(&base);
    let json = "application/json";
    let token = b.send(
        "POST",
        "/auth/token",
        &[("Accept", json)],
        Some((json, r#"{"username":"ann","password":"demo"}"#)),
        "fetch",
    );
    assert_eq!(token.status, 200, "{}", token.body);
    let bearer = format!(
        "Bearer {}",
        serde_json::from_str::<Value>(&token.body).unwrap()["access_token"]
            .as_str()
            .unwrap()
    );
    std::thread::sleep(Duration::from_millis(200));
    let auth = [("Accept", json), ("Authorization", bearer.as_str())];
    let plan = b.send(
        "POST",
        "/plans",
        &auth,
        Some((json, r#"{"name":"nightly-batch"}"#)),
        "fetch",
    );
    assert_eq!(plan.status, 201, "{}", plan.body);
    let id = serde_json::from_str::<Value>(&plan.body).unwrap()["id"]
        .as_u64()
        .unwrap();
    assert_eq!(b.send("GET", &format!("/plans/{id}"), &auth, None, "fetch").status, 200);
    for state in ["approved", "running"] {
        let body = format!(r#"{{"state":"{state}"}}"#);
        let r = b.send(
            "PUT",
            &format!("/plans/{id}/state"),
            &auth,
            Some((json, &body)),
            "fetch",
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }

    let dir = tempfile::tempdir().unwrap();
    let har = dir.path().join("rec.har");
    b.write(&har);
    let (text, scenario) = import(&har, dir.path());
    assert!(text.contains("Bearer ${access_token}"), "{text}");
    assert!(text.contains("/plans/${plan_id}/state"), "{text}");
    assert!(!text.contains(&bearer), "{text}");

    let rejected = |reason: &str| -> u64 {
        ["POST /plans", "GET /plans/{id}", "PUT /plans/{id}/state"]
            .iter()
            .map(|e| {
                common::target_metric(
                    &t.url,
                    &format!("crest_target_api_rejected_total{{endpoint=\"{e}\",reason=\"{reason}\"}}"),
                )
            })
            .sum()
    };
    with_load(&scenario, &text, 4, 3);
    let env_file = dir.path().join("s.env");
    let mut args = vec![];
    if env_file.exists() {
        args = vec!["--env-file".to_string(), env_file.display().to_string()];
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = common::run_scenario(&scenario, &[("CREST_TARGET", &base)], &args);
    let summary = run.summary();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(summary["failures"], 0, "{}", run.stdout);
    assert_eq!(rejected("unauthorized"), 0);
    assert_eq!(rejected("not_found"), 0);
    assert_eq!(rejected("conflict"), 0);
    assert!(summary["requests"].as_u64().unwrap() >= 5 * 4, "{}", run.stdout);
}

#[test]
fn a_bad_recording_is_refused_with_exit_status_2_naming_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("not json", "not a HAR recording: not JSON"),
        (r#"{"log":{"version":"1.1","entries":[]}}"#, "HAR 1.1 is not supported"),
        (r#"{"log":{"version":"1.2"}}"#, "no log.entries"),
        (
            r#"{"log":{"version":"1.2","entries":[{"request":{"method":"GET","url":"http://a.test/"}},{"request":{"method":"GET","url":"::nope"}}]}}"#,
            "entry 2 (::nope): its URL does not parse",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let har = dir.path().join(format!("bad{i}.har"));
        std::fs::write(&har, text).unwrap();
        let out = dir.path().join(format!("bad{i}.yaml"));
        let r = common::crest()
            .args(["import", "har"])
            .arg(&har)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(want), "{want} not in: {stderr}");
        assert!(!out.exists());
    }
}
