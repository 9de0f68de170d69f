//! `crest collect` and `crest worker`: a collector and four worker processes on loopback against
//! a test server whose own count of what it received is read back. The collector starts the
//! workers together, merges their streams as they come, judges stop conditions on the whole,
//! keeps a run that lost a worker, and writes the run `crest merge` makes of the workers' parts.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, read_log, results_of as results, rt, scenario_file, schedule, worker_requests};
use crest_testkit::{Reply, Server};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[path = "collect/resilience.rs"]
mod resilience;
#[path = "collect/steering.rs"]
mod steering;

const TOKEN: &str = "test-token-0123";

/// A collector running: its address, and what it says on stderr.
struct Collector {
    child: Child,
    addr: String,
    stderr: Arc<Mutex<String>>,
    out: PathBuf,
}

impl Collector {
    /// `crest collect ARGS --workers N --listen 127.0.0.1:0 --out OUT`, token from the
    /// environment; returns once it listens.
    fn start(args: &[&str], n: u32, out: &Path, env: &[(&str, &str)]) -> Collector {
        let mut child = crest()
            .arg("collect")
            .args(args)
            .args([
                "--workers",
                &n.to_string(),
                "--listen",
                "127.0.0.1:0",
                "--quiet",
                "--summary-json",
                "-",
                "--out",
            ])
            .arg(out)
            .env("CREST_TOKEN", TOKEN)
            .env_remove("JOB_COMPLETION_INDEX")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut addr = None;
        let mut line = String::new();
        while addr.is_none() {
            line.clear();
            assert!(
                err.read_line(&mut line).unwrap() > 0,
                "the collector ended: {}",
                stderr.lock().unwrap()
            );
            stderr.lock().unwrap().push_str(&line);
            addr = line
                .split(" on ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .filter(|_| line.starts_with("collector: waiting"))
                .map(String::from);
        }
        let kept = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = err.read_to_string(&mut rest);
            kept.lock().unwrap().push_str(&rest);
        });
        Collector {
            child,
            addr: addr.unwrap(),
            stderr,
            out: out.to_path_buf(),
        }
    }

    /// A worker as a Kubernetes Indexed Job's pod runs it: the collector's address on the
    /// command line, the token and the index in its environment.
    fn worker(&self, index: u32, out: Option<&Path>, env: &[(&str, &str)]) -> Child {
        let mut c = crest();
        c.args(["worker", "--collector", &self.addr])
            .env("CREST_TOKEN", TOKEN)
            .env("JOB_COMPLETION_INDEX", index.to_string())
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // A part kept by default would land in the test's working directory, the crate's.
        match out {
            Some(o) => c.arg("--out").arg(o),
            None => c.arg("--no-keep"),
        };
        c.spawn().unwrap()
    }

    /// Waits for it; its exit code, summary, stderr and results.json.
    fn finish(mut self) -> (Option<i32>, Value, String, Value) {
        let mut stdout = String::new();
        self.child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
        let code = self.child.wait().unwrap().code();
        std::thread::sleep(Duration::from_millis(100));
        let err = self.stderr.lock().unwrap().clone();
        let r = std::fs::read(self.out.join("results.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        (code, serde_json::from_str(&stdout).unwrap_or(Value::Null), err, r)
    }
}

/// The per-worker table of a collected run in `out`, against its summary `s`: its rows'
/// requests add up to the run's, and each worker's row is in report.md and in the terminal
/// summary (`crest report` prints the one a run prints) with its requests and verdict. Returns
/// the rows.
fn worker_rows(out: &Path, s: &Value) -> Vec<Value> {
    use crest_report::fmt::int;
    let rows = s["workers"].as_array().cloned().unwrap_or_default();
    let sum: u64 = rows.iter().map(|w| w["requests"].as_u64().unwrap()).sum();
    assert_eq!(s["requests"], sum, "{s:#}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let printed = crest().arg("report").arg(out).output().unwrap();
    assert_eq!(
        printed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let term = String::from_utf8(printed.stdout).unwrap();
    for w in &rows {
        let (index, requests) = (w["index"].as_u64().unwrap(), w["requests"].as_u64().unwrap());
        let verdict = w["verdict_shown"].as_str().unwrap();
        let cells = format!(
            "| {index} | {} | {} |",
            int(requests),
            int(w["failures"].as_u64().unwrap())
        );
        assert!(
            md.lines()
                .any(|l| l.starts_with(&cells) && l.ends_with(&format!("| {verdict} |"))),
            "report.md has no row {cells} ... {verdict}:\n{md}"
        );
        assert!(
            term.lines().any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.starts_with(&["worker", &index.to_string(), &int(requests)]) && l.ends_with(verdict)
            }),
            "the terminal summary has no row for worker {index} ({requests} requests, {verdict}):\n{term}"
        );
    }
    rows
}

fn ok(c: Child) -> Output {
    let out = c.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Four workers of a closed-model run, started as an Indexed Job's pods would be: the merged
/// request count is the server's and the sum of the workers', the merged percentiles are those
/// of one histogram of every request the workers logged, and `crest merge` of the workers' own
/// parts gives the collector's results.json, field for field.
#[test]
fn four_workers_add_up_to_the_servers_count_and_crest_merges_result() {
    let _serial = common::serial();
    let rt = rt();
    let server = rt.block_on(Server::start(|_, _| Reply::delayed(Duration::from_millis(1))));
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    let c = Collector::start(
        &[&url, "-c", "8", "-d", "2s", "--log-requests"],
        4,
        &dir.path().join("run"),
        &[],
    );
    let parts: Vec<PathBuf> = (0..4).map(|i| dir.path().join(format!("w{i}"))).collect();
    let workers: Vec<Child> = (0..4).map(|i| c.worker(i, Some(&parts[i as usize]), &[])).collect();
    for w in workers {
        ok(w);
    }
    let (code, s, err, r) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("4 workers start together"), "{err}");

    let received = server.received().len() as u64;
    assert_eq!(s["requests"], received, "{s:#}");
    let per_worker = worker_requests(&r);
    assert_eq!(per_worker.len(), 4);
    assert_eq!(per_worker.iter().sum::<u64>(), received);
    assert!(per_worker.iter().all(|n| *n > 0), "{per_worker:?}");
    assert_eq!(r["config"]["worker"], Value::Null);
    common::check_counts(&dir.path().join("run").join("results.json"));
    // The per-worker table: each row is the worker's own count, and they add up to the
    // server's.
    let rows = worker_rows(&dir.path().join("run"), &s);
    assert_eq!(
        rows.iter().map(|w| w["requests"].as_u64().unwrap()).collect::<Vec<_>>(),
        per_worker
    );
    for w in &rows {
        // Its rate is over its own time sending.
        let rate = w["requests"].as_f64().unwrap() / w["duration_s"].as_f64().unwrap();
        assert!((w["per_s"].as_f64().unwrap() - rate).abs() < 1e-9, "{w:#}");
        assert_ne!(w["verdict"], "lost", "{w:#}");
    }

    let mut all = crest_model::hist::new_histogram();
    let mut logged = 0;
    for p in &parts {
        for row in read_log(&p.join("request-log.csv.gz")) {
            crest_model::hist::record(&mut all, Duration::from_micros(row["total_us"].parse().unwrap()));
            logged += 1;
        }
    }
    assert_eq!(logged, received);
    for (q, key) in [(0.5, "p50"), (0.9, "p90"), (0.99, "p99")] {
        let want = all.value_at_quantile(q) as f64 / 1000.0;
        let got = s["latency_ms"][key].as_f64().unwrap();
        assert!(
            (got - want).abs() <= want * 0.002 + 0.001,
            "{key}: merged {got} ms, all requests' {want} ms"
        );
    }

    let merged = dir.path().join("merged");
    let out = crest()
        .arg("merge")
        .args(&parts)
        .args(["--quiet", "--out"])
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(results(&merged), r, "crest merge of the parts is the collector's run");
}

/// An open-model run of 2,000/s over four workers (500/s each): together they sent the one
/// process's 2,000/s schedule, arrival for arrival (each worker 500 of them, one in four), and
/// the collector's run is at that rate.
#[test]
fn four_workers_at_500_per_s_send_the_2000_per_s_schedule() {
    let _serial = common::serial();
    let rt = rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    // A count, not a length: arrivals due just before a deadline may be late on a busy machine,
    // and the count holds the schedule to its first 2,000 arrivals whatever the machine does.
    let run = ["--rate", "2000", "-n", "2000", "--log-requests"];
    let whole = dir.path().join("whole");
    ok(crest()
        .arg("run")
        .arg(&url)
        .args(run)
        .args(["--quiet", "--out"])
        .arg(&whole)
        .spawn()
        .unwrap());
    assert_eq!(server.received().len(), 2000);

    let c = Collector::start(&[&[url.as_str()][..], &run].concat(), 4, &dir.path().join("run"), &[]);
    let parts: Vec<PathBuf> = (0..4).map(|i| dir.path().join(format!("w{i}"))).collect();
    let workers: Vec<Child> = (0..4).map(|i| c.worker(i, Some(&parts[i as usize]), &[])).collect();
    for w in workers {
        ok(w);
    }
    let (code, s, err, r) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        server.received().len(),
        4000,
        "the workers sent the run once more: {:#} {err}",
        r["open"]
    );
    assert_eq!(s["requests"], 2000, "{s:#}");
    let per_worker = worker_requests(&r);
    assert_eq!(per_worker, [500, 500, 500, 500]);
    assert_eq!(r["config"]["rate"], 2000.0);
    let mut union = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(
            results(p)["config"]["worker"],
            serde_json::json!({"index": i, "count": 4})
        );
        union.extend(schedule(p));
    }
    union.sort_unstable();
    assert_eq!(union, schedule(&whole));
}

/// A scenario handed to the workers with the files it reads: a `unique` feeder's ten rows, split
/// over four workers (10 users x 3 loops), are each used by one user of one worker; a body
/// that is not text is sent byte for byte; and the secret each worker reads from its own
/// environment reaches the server and is written nowhere.
#[test]
fn a_unique_feeders_rows_are_used_once_across_workers_and_secrets_stay_home() {
    let _serial = common::serial();
    let rt = rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let (dir, file) = scenario_file(&format!(
        r#"
target: http://{}
data:
  accounts: {{file: accounts.csv, mode: unique}}
steps:
  - request: {{method: POST, path: "/as/${{accounts.name}}", headers: {{X-Api-Key: "${{env:COLLECT_TEST_KEY}}"}}, body_file: blob.bin}}
load: {{threads: 10, loops: 3}}
"#,
        server.addr
    ));
    let names: Vec<String> = (0..10).map(|i| format!("user{i}")).collect();
    std::fs::write(dir.path().join("accounts.csv"), format!("name\n{}\n", names.join("\n"))).unwrap();
    // Not UTF-8: handed to the workers in base64, sent byte for byte.
    let blob: Vec<u8> = (0..=255u8).rev().chain([0xff, 0xfe, 0x00]).collect();
    std::fs::write(dir.path().join("blob.bin"), &blob).unwrap();
    let secret = ("COLLECT_TEST_KEY", "sekret-4d1f");
    let out = dir.path().join("run");
    let c = Collector::start(&[file.to_str().unwrap()], 4, &out, &[secret]);
    let workers: Vec<Child> = (0..4).map(|i| c.worker(i, None, &[secret])).collect();
    let outputs: Vec<Output> = workers.into_iter().map(ok).collect();
    let (code, s, err, r) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(s["requests"], 30, "{s:#}");
    let per_worker = worker_requests(&r);
    assert_eq!(per_worker, [9, 9, 6, 6]);
    // The per-worker table counts in the run's unit: each loop of a user is one iteration of
    // one request, all of which passed.
    assert_eq!(s["unit"], "iterations", "{s:#}");
    let rows = worker_rows(&out, &s);
    assert_eq!(
        rows.iter().map(|w| w["units"].as_u64().unwrap()).collect::<Vec<_>>(),
        [9, 9, 6, 6]
    );
    let got = server.received();
    assert_eq!(got.len(), 30);
    assert!(got.iter().all(|r| r
        .headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("x-api-key") && v == secret.1)));
    common::each_row_used_by_one_user(&got, &names);
    assert!(
        got.iter().all(|r| r.body == blob),
        "every worker sent the binary body as it is"
    );
    let texts: Vec<String> = outputs
        .iter()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .chain([err])
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    common::assert_nowhere(&[secret.1], &out, &texts);
}

/// A stop condition that holds on the merged error rate stops every worker: the server fails
/// every request after its 300th, the run of 30 s ends long before, by the condition, and each
/// worker's part ended (none lost, none sent on to its end).
#[test]
fn a_stop_condition_on_the_merged_error_rate_stops_every_worker() {
    let _serial = common::serial();
    let rt = rt();
    let server = rt.block_on(Server::start(|_, i| {
        if i < 300 {
            Reply::delayed(Duration::from_millis(2))
        } else {
            Reply::Respond {
                delay: Duration::from_millis(2),
                status: 500,
                body_len: 2,
            }
        }
    }));
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    let c = Collector::start(
        &[&url, "-c", "8", "-d", "30s", "--stop-when", "error_rate > 50%"],
        4,
        &dir.path().join("run"),
        &[],
    );
    let workers: Vec<Child> = (0..4).map(|i| c.worker(i, None, &[])).collect();
    for w in workers {
        ok(w);
    }
    let (_, s, err, r) = c.finish();
    assert!(err.contains("every worker is told to stop"), "{err}");
    assert_eq!(r["ended_by"], "condition", "{err}");
    assert_eq!(r["stopped_by"]["condition"], "error_rate > 50%");
    assert!(r["duration_s"].as_f64().unwrap() < 30.0);
    for w in r["workers"].as_array().unwrap() {
        assert_eq!(w["ended_by"], "condition", "{w:#}");
        assert!(w.get("lost").is_none(), "{w:#}");
    }
    assert_eq!(s["requests"], server.received().len() as u64);
}

/// A worker killed mid-run is reported with when it was lost and its share of the load, its
/// missing seconds are in the report, and the run is kept: the others' requests and its own
/// up to its loss.
#[test]
fn a_killed_worker_is_reported_and_the_run_is_kept() {
    let _serial = common::serial();
    let rt = rt();
    let server = rt.block_on(Server::start(|_, _| Reply::delayed(Duration::from_millis(2))));
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let c = Collector::start(&[&url, "-c", "8", "-d", "4s"], 4, &out, &[]);
    let part3 = dir.path().join("w3");
    let mut workers: Vec<Child> = (0..4)
        .map(|i| c.worker(i, (i == 3).then_some(part3.as_path()), &[]))
        .collect();
    let victim = workers.pop().unwrap();
    // Its journal file gets an interval a moment before its collector does: with two in the
    // file, the first has had a second to cross (killed at once after the first, on a busy
    // machine, it had not, and the worker was lost at 0 s).
    common::wait_for_intervals(&part3, 2);
    common::kill(victim);
    for w in workers {
        ok(w);
    }
    let (code, s, err, r) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("worker 3 lost"), "{err}");
    let ws = r["workers"].as_array().unwrap();
    assert_eq!(ws.len(), 4);
    let lost = &ws[3]["lost"];
    assert_eq!(ws[3]["ended_by"], "unfinished");
    let at = lost["at_s"].as_f64().unwrap();
    assert!((1.0..4.0).contains(&at), "{lost:#}");
    assert_eq!(lost["share"], 0.25);
    assert!(lost["missing_s"].as_f64().unwrap() > 0.0, "{lost:#}");
    for w in &ws[..3] {
        assert!(w.get("lost").is_none(), "{w:#}");
        assert_eq!(w["ended_by"], "duration");
    }
    let sum: u64 = ws.iter().map(|w| w["requests"].as_u64().unwrap()).sum();
    assert_eq!(s["requests"], sum);
    // The killed worker's last requests reached the server but never the collector.
    assert!(sum <= server.received().len() as u64);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("Worker 3 was lost at"), "{report}");
    // Its row in the per-worker table says so, with when; the others' are not lost.
    let rows = worker_rows(&out, &s);
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[3]["verdict"], "lost", "{:#}", rows[3]);
    assert!(
        rows[3]["verdict_shown"]
            .as_str()
            .unwrap()
            .starts_with(&format!("lost at {at:.1} s: its 25.00% of the load")),
        "{:#}",
        rows[3]
    );
    assert!(rows[..3].iter().all(|w| w["verdict"] != "lost"), "{rows:#?}");
}

/// A worker with the wrong token is refused (401) and exits non-zero, saying so; a worker
/// whose environment makes another plan of the scenario is refused by the collector, and
/// neither gets to send anything.
#[test]
fn a_wrong_token_and_another_plan_are_refused() {
    let _serial = common::serial();
    let rt = rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let (dir, file) = scenario_file(&format!(
        "target: http://{}\nsteps:\n  - request: {{path: /}}\nload: {{threads: \"${{env:COLLECT_TEST_USERS}}\", loops: 1}}\n",
        server.addr
    ));
    let c = Collector::start(
        &[file.to_str().unwrap()],
        2,
        &dir.path().join("run"),
        &[("COLLECT_TEST_USERS", "4")],
    );
    let bad = crest()
        .args([
            "worker",
            "--collector",
            &c.addr,
            "--token",
            "not-the-token",
            "--no-keep",
        ])
        .env("COLLECT_TEST_USERS", "4")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(err.contains("refused this worker's token (401)"), "{err}");

    let other = c.worker(0, None, &[("COLLECT_TEST_USERS", "8")]);
    let pid = other.id();
    let other = other.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&other.stderr);
    assert_eq!(other.status.code(), Some(2), "{err}");
    assert!(err.contains("another plan"), "{err}");
    for left in [format!("crest-worker-{pid}-plan"), format!("crest-worker-{pid}")] {
        let left = std::env::temp_dir().join(left);
        assert!(!left.exists(), "a refused worker left {}", left.display());
    }
    assert_eq!(server.received().len(), 0);

    // The index the refused worker asked for is free again: the run goes on with two good ones.
    let good: Vec<Child> = (0..2)
        .map(|i| c.worker(i, None, &[("COLLECT_TEST_USERS", "4")]))
        .collect();
    for w in good {
        ok(w);
    }
    let (code, s, err, _) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("another plan"), "{err}");
    assert_eq!(s["requests"], 4);
    assert_eq!(server.received().len(), 4);
}

/// One worker is a collected run too: its part says it is a part (0 of 1), so the collector
/// and `crest merge` take it (both refused it as a whole run once).
#[test]
fn one_worker_is_a_collected_run_and_its_part_merges() {
    let _serial = common::serial();
    let rt = rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    let c = Collector::start(&[&url, "-c", "2", "-n", "300"], 1, &dir.path().join("run"), &[]);
    let part = dir.path().join("w0");
    ok(c.worker(0, Some(&part), &[]));
    let (code, s, err, r) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(s["requests"], 300);
    assert_eq!(worker_requests(&r), [300]);
    assert_eq!(server.received().len(), 300);
    assert_eq!(
        results(&part)["config"]["worker"],
        serde_json::json!({"index": 0, "count": 1})
    );
    let merged = dir.path().join("merged");
    let out = crest()
        .args(["merge", "--quiet", "--out"])
        .arg(&merged)
        .arg(&part)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(results(&merged)["workers"][0]["requests"], 300);
}

/// Worker w's thread k is lane w + N*k of the whole run, so every worker runs as many engine
/// threads, whatever its machine's size: a worker held to one core (as a pod with a CPU limit
/// is) takes the collector's count rather than being refused for another plan.
#[test]
fn a_worker_on_fewer_cores_runs_the_collectors_threads() {
    let _serial = common::serial();
    let rt = rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    let c = Collector::start(&[&url, "-c", "4", "-n", "400"], 2, &dir.path().join("run"), &[]);
    let parts: Vec<PathBuf> = (0..2).map(|i| dir.path().join(format!("w{i}"))).collect();
    let small = std::process::Command::new("taskset")
        .args(["-c", "0"])
        .arg(env!("CARGO_BIN_EXE_crest"))
        .args(["worker", "--collector", &c.addr, "--worker-index", "0", "--out"])
        .arg(&parts[0])
        .env("CREST_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let other = c.worker(1, Some(&parts[1]), &[]);
    ok(small);
    ok(other);
    let (code, s, err, r) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(s["requests"], 400);
    assert_eq!(server.received().len(), 400);
    let threads = r["config"]["threads"].clone();
    assert_eq!(threads, std::thread::available_parallelism().unwrap().get() as u64);
    for p in &parts {
        assert_eq!(results(p)["config"]["threads"], threads, "{}", p.display());
    }
}

impl Collector {
    /// A worker with no `--out`, run in `cwd`: it keeps its part where it keeps it by default,
    /// under `cwd/crest-results/`.
    fn worker_in(&self, index: u32, cwd: &Path, args: &[&str]) -> Child {
        crest()
            .args(["worker", "--collector", &self.addr])
            .args(args)
            .env("CREST_TOKEN", TOKEN)
            .env("JOB_COMPLETION_INDEX", index.to_string())
            .current_dir(cwd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}
