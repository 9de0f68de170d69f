//! Runs the real `crest` binary and reads what it wrote.
#![allow(dead_code, clippy::unwrap_used)]

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub dir: tempfile::TempDir,
}

impl Run {
    pub fn results_path(&self) -> PathBuf {
        self.dir.path().join("results.json")
    }

    pub fn results(&self) -> Value {
        let text = std::fs::read_to_string(self.results_path())
            .unwrap_or_else(|e| panic!("no results.json ({e}); stderr:\n{}", self.stderr));
        serde_json::from_str(&text).unwrap()
    }

    pub fn results_text(&self) -> String {
        std::fs::read_to_string(self.results_path()).unwrap()
    }

    /// The summary JSON, written with `--summary-json -`.
    pub fn summary(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("summary is not JSON ({e}):\n{}\nstderr:\n{}", self.stdout, self.stderr))
    }

    /// The summary's error class `outcome`: its count and example message.
    pub fn error_class(&self, outcome: &str) -> (u64, String) {
        let s = self.summary();
        let e = s["errors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["outcome"] == outcome)
            .unwrap_or_else(|| panic!("no {outcome} in {}\n{}", s["errors"], self.stderr));
        (e["count"].as_u64().unwrap(), e["example"].as_str().unwrap().to_string())
    }

    pub fn error_count(&self, outcome: &str) -> u64 {
        self.summary()["errors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["outcome"] == outcome)
            .map_or(0, |e| e["count"].as_u64().unwrap())
    }
}

/// Every results document a test produces must add up: the steps' requests, failures and error
/// classes to the run's, the intervals to the steps', and the analysis's steps to its totals.
pub fn check_counts(path: &std::path::Path) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let r: crest_model::results::Results =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not a results document: {e}", path.display()));
    if let Err(why) = crest_testkit::results::check_counts(&r) {
        panic!("{} does not add up: {why}", path.display());
    }
    // results.json is what the journal adds up to, to the last byte of every histogram.
    let journal = path.with_file_name("journal.jsonl");
    if journal.exists() {
        let file = std::io::BufReader::new(std::fs::File::open(&journal).unwrap());
        let j = crest_model::journal::read(file).unwrap_or_else(|e| panic!("{}: {e}", journal.display()));
        assert!(
            j.end.is_some() || r.ended_by == crest_model::results::EndReason::Unfinished,
            "{}: a finished run's journal has its end",
            journal.display()
        );
        let rebuilt = serde_json::to_value(j.results().unwrap()).unwrap();
        let written: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(
            rebuilt == written,
            "{}: results.json is not what its journal adds up to",
            path.display()
        );
    }
    let a = crest_analysis::analyze(&r).unwrap();
    let steps: u64 = a.segments.iter().map(|s| s.requests).sum();
    let failed: u64 = a.segments.iter().map(|s| s.failures).sum();
    assert_eq!(
        (steps, failed),
        (a.summary.requests, a.summary.failures),
        "{}: the steps' requests and failures must add up to the run's",
        path.display()
    );
}

/// `crest ARGS... --out OUT` in the background with its output discarded, for tests that kill
/// it.
pub fn spawn_out(args: &[&str], out: &std::path::Path) -> std::process::Child {
    crest()
        .args(args)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Intervals written to the journal in `dir` so far.
pub fn journal_intervals(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("{\"entry\":\"interval\""))
        .count()
}

/// Waits until the journal in `dir` has `n` intervals: the run is under way, however long a
/// busy machine took to start it.
pub fn wait_for_intervals(dir: &std::path::Path, n: usize) {
    let started = std::time::Instant::now();
    while journal_intervals(dir) < n {
        assert!(
            // Only a net against a run that never gets there; a debug build beside two others
            // has taken most of a minute.
            started.elapsed() < std::time::Duration::from_secs(180),
            "no interval was journaled"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// SIGKILL, and waits for it: nothing gets a chance to run at the end.
pub fn kill(mut child: std::process::Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

pub fn crest() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_crest"));
    c.stdin(Stdio::null());
    c
}

fn finish(out: Output, dir: tempfile::TempDir) -> Run {
    check_counts(&dir.path().join("results.json"));
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        dir,
    }
}

/// `crest run URL ARGS... --out TMP --summary-json -`, blocking.
pub fn run(url: &str, args: &[&str]) -> Run {
    run_from(crest(), url, args)
}

/// The same, with crest started by `cmd` (`taskset -c 0 crest`, say).
pub fn run_from(mut cmd: Command, url: &str, args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let out = cmd
        .arg("run")
        .arg(url)
        .args(args)
        .arg("--out")
        .arg(dir.path())
        .args(["--summary-json", "-"])
        .output()
        .unwrap();
    finish(out, dir)
}

/// The same, from async tests, without blocking the runtime that serves the target.
pub async fn run_async(url: &str, args: &[&str]) -> Run {
    let url = url.to_string();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&url, &refs)
    })
    .await
    .unwrap()
}

/// A field of the summary as f64.
pub fn f(v: &Value, path: &[&str]) -> f64 {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_f64().unwrap_or_else(|| panic!("{path:?} missing in {v}"))
}

/// A runtime for the test's servers, apart from the crest process under test.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// `crest run FILE --out TMP --summary-json -` with extra environment variables.
pub fn run_scenario(file: &std::path::Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = crest();
    cmd.arg("run")
        .arg(file)
        .args(args)
        .arg("--out")
        .arg(dir.path())
        .args(["--summary-json", "-"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    finish(cmd.output().unwrap(), dir)
}

/// Writes scenario text to a file in a fresh directory (kept alive by the returned guard).
pub fn scenario_file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scenario.yaml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// An example from examples/, as text.
pub fn example(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

/// Replaces `from` in `text`, insisting that it is there.
pub fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} is not in the scenario");
    text.replace(from, to)
}

/// Tests that measure timing run one at a time: on a two-core machine, parallel tests would
/// measure each other. Hold the guard for the whole test.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The test PostgreSQL server: .ci/run starts one and sets CREST_TEST_PG_URL; there PostgreSQL
/// tests must run. Elsewhere, without the variable, they are skipped.
pub fn pg_url() -> Option<String> {
    match std::env::var("CREST_TEST_PG_URL") {
        Ok(u) => Some(u),
        Err(_) => {
            assert!(
                std::env::var_os("CI").is_none() && std::env::var_os("CREST_CI").is_none(),
                "CI must provide PostgreSQL: CREST_TEST_PG_URL is not set"
            );
            eprintln!("skipped: set CREST_TEST_PG_URL (eval \"$(scripts/pg-test-cluster.sh start)\")");
            None
        }
    }
}

/// `crest target ARGS...` in a process of its own (so each side has its own open-file limit,
/// and its /proc entries are its own); killed when dropped, however the test ends.
pub struct TargetProcess {
    pub child: std::process::Child,
    /// `http://127.0.0.1:PORT/`.
    pub url: String,
}

impl Drop for TargetProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One counter of a `crest target` (e.g. `crest_target_requests_total`), read from its
/// Prometheus endpoint with a plain HTTP/1.0 request, so the reading shares nothing with the
/// client under test.
pub fn target_metric(url: &str, name: &str) -> u64 {
    target_value(url, name) as u64
}

/// One value of a `crest target`'s Prometheus endpoint as it is written (seconds have fractions).
pub fn target_value(url: &str, name: &str) -> f64 {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: t\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("{name} missing from /metrics:\n{text}"))
        .trim()
        .parse::<f64>()
        .unwrap()
}

/// Starts `crest target --listen 127.0.0.1:0 ARGS...` and reads its URL from its first line.
pub fn target_process(args: &[&str]) -> TargetProcess {
    use std::io::{BufRead, BufReader};
    let mut child = crest()
        .args(["target", "--listen", "127.0.0.1:0"])
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // "demo target on http://127.0.0.1:PORT/ (...)"
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("crest target did not start: {line}"))
        .to_string();
    TargetProcess { child, url }
}

/// The request log's first line.
pub const LOG_HEADER: &str = "intended_us,start_us,name,user,iteration,status,outcome,dns_us,connect_us,first_byte_us,total_us,bytes_sent,bytes_received";

/// One row of the request log (`--log-requests`), by column name.
pub type LogRow = std::collections::BTreeMap<String, String>;

/// Every member of the gzip file, decompressed; the header checked.
pub fn read_log(path: &std::path::Path) -> Vec<LogRow> {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(LOG_HEADER));
    let cols: Vec<&str> = LOG_HEADER.split(',').collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), cols.len(), "{l}");
            cols.iter()
                .map(|c| c.to_string())
                .zip(cells.iter().map(|c| c.to_string()))
                .collect()
        })
        .collect()
}

/// Each request's intended start in a run's request log, in µs from its run's start, sorted.
pub fn schedule(dir: &std::path::Path) -> Vec<u64> {
    let mut at: Vec<u64> = read_log(&dir.join("request-log.csv.gz"))
        .iter()
        .map(|r| r["intended_us"].parse().unwrap())
        .collect();
    at.sort_unstable();
    at
}

/// The results.json of the run directory `dir`.
pub fn results_of(dir: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap()
}

/// Each worker's requests in a merged run's results.
pub fn worker_requests(r: &Value) -> Vec<u64> {
    r["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["requests"].as_u64().unwrap())
        .collect()
}

/// Every row of a `unique` feeder (`names`, requested as `/as/NAME`) was used, each by one
/// connection only: one user of one worker.
pub fn each_row_used_by_one_user(got: &[crest_testkit::Received], names: &[String]) {
    for name in names {
        let mut conns: Vec<u64> = got
            .iter()
            .filter(|r| r.path == format!("/as/{name}"))
            .map(|r| r.connection)
            .collect();
        assert!(!conns.is_empty(), "{name} was never used");
        conns.dedup();
        assert_eq!(conns.len(), 1, "{name} came from {conns:?}");
    }
}

/// Every file under `dir`, as bytes, with its path.
pub fn every_file(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

/// None of `secrets` is in any file of `dir`, nor in `outputs`.
pub fn assert_nowhere(secrets: &[&str], dir: &std::path::Path, outputs: &[&str]) {
    let files = every_file(dir);
    assert!(
        files.iter().any(|(p, _)| p.ends_with("results.json")),
        "the run wrote its results"
    );
    for s in secrets {
        for (path, bytes) in &files {
            assert!(
                !bytes.windows(s.len()).any(|w| w == s.as_bytes()),
                "{s} is written in {}",
                path.display()
            );
        }
        for o in outputs {
            assert!(!o.contains(s), "{s} is shown:\n{o}");
        }
    }
}

/// `crest compare RUNS... --out DIR`, each run a directory; returns compare.json, after
/// checking that compare.md ends with a newline.
pub fn compare(runs: &[&std::path::Path], out: &std::path::Path) -> Value {
    let r = crest()
        .arg("compare")
        .args(runs)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    let md = std::fs::read_to_string(out.join("compare.md")).unwrap();
    assert!(md.ends_with(".\n"), "compare.md ends with a newline");
    serde_json::from_str(&std::fs::read_to_string(out.join("compare.json")).unwrap()).unwrap()
}

/// One row of compare.json, by the metric's words.
pub fn compared<'a>(c: &'a Value, metric: &str) -> &'a Value {
    c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("no row {metric:?} in {c:#}"))
}

/// A `crest run --web` in the background, with its page's address.
pub struct Live {
    pub child: std::process::Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    pub token: String,
    pub dir: tempfile::TempDir,
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `crest run URL ARGS... --web[=ADDR] --quiet --out TMP` with `token` in
/// CREST_WEB_TOKEN, and reads the page's URL from stderr, which --quiet still prints.
pub fn live(url: &str, web: &str, token: &str, args: &[&str]) -> Live {
    live_from(crest(), url, web, token, args)
}

/// [`live`], with its open-file limit set to `limit` (as `ulimit -n`).
pub fn live_with_file_limit(limit: u64, url: &str, web: &str, token: &str, args: &[&str]) -> Live {
    let mut c = Command::new("prlimit");
    c.arg(format!("--nofile={limit}:{limit}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_crest"))
        .stdin(Stdio::null());
    live_from(c, url, web, token, args)
}

fn live_from(mut crest: Command, url: &str, web: &str, token: &str, args: &[&str]) -> Live {
    let dir = tempfile::tempdir().unwrap();
    let mut child = crest
        .args(["run", url, web, "--quiet", "--out"])
        .arg(dir.path())
        .args(args)
        .env("CREST_WEB_TOKEN", token)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let shown = line
        .strip_prefix("web: http://")
        .unwrap_or_else(|| panic!("no web line: {line:?}"));
    let (addr, token_shown) = shown.trim().split_once("/?token=").unwrap();
    assert_eq!(token_shown, token, "the URL carries the token in force");
    // Bound to every address, it is reached on loopback.
    let addr = addr.replace("0.0.0.0", "127.0.0.1");
    let l = Live {
        child,
        addr,
        token: token.into(),
        dir,
    };
    // The listener is up before the run begins.
    let auth = Some(token);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < until {
        let (_, body) = call(&l.addr, "GET", "/api/state", auth, "");
        if serde_json::from_str::<Value>(&body).is_ok_and(|s| !s["step"].is_null()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    l
}

/// One HTTP/1.0 exchange: (status, body).
pub fn call(addr: &str, method: &str, path: &str, auth: Option<&str>, body: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let auth = auth.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    std::io::Write::write_fmt(
        &mut s,
        format_args!(
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
        ),
    )
    .unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut s, &mut text).unwrap();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string();
    (status, body)
}

/// The live API's state, read without a token (on loopback).
pub fn live_state(l: &Live) -> Value {
    let (status, body) = call(&l.addr, "GET", "/api/state", None, "");
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// Waits until `done` holds of the live state, polling; the run's own clock, not this one's,
/// says when enough has happened.
pub fn wait_for(l: &Live, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let s = live_state(l);
        if done(&s) {
            return s;
        }
        assert!(std::time::Instant::now() < until, "gave up waiting for {what}: {s:#}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Waits until the live run has measured `secs` more seconds.
pub fn run_for(l: &Live, secs: f64) {
    let from = live_state(l)["elapsed_s"].as_f64().unwrap();
    wait_for(l, "seconds to pass", |s| {
        s["elapsed_s"].as_f64().unwrap() >= from + secs
    });
}

/// Requests a run's results counted in step `i`.
pub fn requests_in_step(results: &Value, i: u64) -> u64 {
    results["stats"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["segment"] == i)
        .map(|s| s["count"].as_u64().unwrap())
        .sum()
}

/// Each step of results.json in the reports' words: results.json keeps its kind.
pub fn step_names(results: &Value) -> Vec<String> {
    results["segments"].as_array().unwrap().iter().map(step_name).collect()
}

/// A step of results.json in the reports' words.
pub fn step_name(segment: &Value) -> String {
    let kind: crest_model::step::StepKind = serde_json::from_value(segment["kind"].clone()).unwrap();
    crest_report::fmt::words::step_kind(&kind)
}

/// A process that never sleeps, on one core, killed however the test ends.
pub struct Spinner(std::process::Child);

impl Spinner {
    /// Spins on `core` (as `taskset -c` names it).
    pub fn on(core: &str) -> Spinner {
        Spinner(
            Command::new("taskset")
                .args(["-c", core, "sh", "-c", "while :; do :; done"])
                .spawn()
                .unwrap(),
        )
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first core this test may use, from the kernel's list of them (`0-1`, `2,5-7`).
pub fn first_core() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap();
    list.trim()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .to_string()
}

/// Seed 003's task flow scaled down, pointed at `target`: polls every 100 ms, no think time,
/// and nothing after its flows (the caller adds a `load:`); the answers are checked by the
/// tests, not the example's rules and service levels.
pub fn task_flow(target: &str) -> String {
    let mut s = example("task-queue.yaml");
    s = edit(
        &s,
        "${env:CREST_TARGET:-http://127.0.0.1:8080}",
        target.trim_end_matches('/'),
    );
    s = s.replace("every: 1s", "every: 100ms");
    s = s.replace("      - think: 5s\n", "");
    let cut = s.find("load:").unwrap();
    s.truncate(cut);
    s
}

/// Whether `xmllint` is here; in CI it must be (.ci/run installs it).
fn xmllint() -> bool {
    if std::process::Command::new("xmllint").arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none() && std::env::var_os("CREST_CI").is_none(),
        "xmllint is missing in CI: .ci/run must install libxml2-utils"
    );
    eprintln!("skipped the schema check: no xmllint (apt-get install libxml2-utils)");
    false
}

/// Validates `xml` against the JUnit schema (tests/data/junit.xsd), with libxml2's xmllint.
pub fn validate_junit(xml: &std::path::Path) {
    if !xmllint() {
        return;
    }
    let xsd = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/junit.xsd");
    let out = std::process::Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&xsd)
        .arg(xml)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} does not validate: {}\n{}",
        xml.display(),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(xml).unwrap()
    );
}

/// A summary's entry for a request name.
pub fn by_name<'a>(s: &'a Value, n: &str) -> &'a Value {
    s["names"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == n)
        .unwrap_or_else(|| panic!("no {n} in {}", s["names"]))
}
