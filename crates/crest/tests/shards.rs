//! Shards of one plan (`--workers N --worker-index I`, or a Kubernetes Indexed Job's
//! `JOB_COMPLETION_INDEX`): each generator runs its part, and the parts, run at the same time
//! against one server, add up to the run as given, which the server's own count of what it
//! received shows.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, read_log, results_of as results, rt, scenario_file, schedule};
use crest_testkit::{Reply, Server};
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

/// Runs `crest run` once per worker at the same time, each with its own output directory under
/// `dir` and `env(worker)`; returns each one's output, in worker order.
fn workers(dir: &Path, n: u32, args: &[&str], env: impl Fn(u32) -> Vec<(String, String)>) -> Vec<Output> {
    let children: Vec<_> = (0..n)
        .map(|i| {
            let mut c = crest();
            c.arg("run")
                .args(args)
                .args(["--quiet", "--summary-json", "-", "--out"])
                .arg(dir.join(format!("w{i}")))
                .env_remove("JOB_COMPLETION_INDEX")
                .envs(env(i))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
            out
        })
        .collect()
}

fn summary(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

/// An open-model run of 600 arrivals at 400/s, as four workers at once: the server received the
/// whole run's 600 requests, 150 from each, and together the workers' intended starts are the
/// one-process run's schedule, arrival for arrival.
#[test]
fn four_workers_send_the_open_models_schedule_once_between_them() {
    let _serial = common::serial();
    let rt = rt();
    let server = rt.block_on(Server::start(|_, _| Reply::delayed(Duration::from_millis(1))));
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    // A count, not a length: an arrival due just before a deadline may be missed by a thread a
    // busy machine kept off its core (599 of 600 once, the last one dropped, not sent).
    let run = ["--rate", "400", "-n", "600", "--log-requests"];

    let whole = workers(
        &dir.path().join("whole"),
        1,
        &[&[url.as_str()][..], &run].concat(),
        |_| vec![],
    );
    assert_eq!(summary(&whole[0])["requests"], 600);
    assert_eq!(server.received().len(), 600);

    let parts_dir = dir.path().join("parts");
    let args = [&[url.as_str()][..], &run, &["--workers", "4"]].concat();
    let parts = workers(&parts_dir, 4, &args, |i| {
        vec![("JOB_COMPLETION_INDEX".into(), i.to_string())]
    });
    assert_eq!(server.received().len(), 1200, "the four parts sent the run once more");
    let mut union = Vec::new();
    for (i, out) in parts.iter().enumerate() {
        assert_eq!(summary(out)["requests"], 150, "worker {i}");
        let w = parts_dir.join(format!("w{i}"));
        let config = &results(&w)["config"];
        assert_eq!(config["worker"], serde_json::json!({"index": i, "count": 4}));
        assert_eq!(config["rate"], 400.0, "the configuration is the whole run's");
        union.extend(schedule(&w));
    }
    union.sort_unstable();
    assert_eq!(union, schedule(&dir.path().join("whole").join("w0")));

    // `crest merge` makes of the four parts the run they add up to: 600 requests, one
    // histogram of every request (its percentiles those of all the workers' requests as the
    // request logs hold them), and a record of each worker.
    let merged = dir.path().join("merged");
    let out = crest()
        .arg("merge")
        .args((0..4).rev().map(|i| parts_dir.join(format!("w{i}"))))
        .args(["--quiet", "--summary-json", "-", "--out"])
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let s = summary(&out);
    assert_eq!(s["requests"], 600, "{s:#}");
    let r = results(&merged);
    assert_eq!(r["config"]["worker"], Value::Null);
    let workers: Vec<(u64, u64)> = r["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["index"].as_u64().unwrap(), w["requests"].as_u64().unwrap()))
        .collect();
    assert_eq!(workers, [(0, 150), (1, 150), (2, 150), (3, 150)]);
    common::check_counts(&merged.join("results.json"));
    let mut all = crest_model::hist::new_histogram();
    for i in 0..4 {
        for row in read_log(&parts_dir.join(format!("w{i}")).join("request-log.csv.gz")) {
            crest_model::hist::record(&mut all, Duration::from_micros(row["total_us"].parse().unwrap()));
        }
    }
    for (q, key) in [(0.5, "p50"), (0.9, "p90"), (0.99, "p99")] {
        let want = all.value_at_quantile(q) as f64 / 1000.0;
        let got = s["latency_ms"][key].as_f64().unwrap();
        assert!(
            (got - want).abs() <= want * 0.002 + 0.001,
            "{key}: merged {got} ms, all requests' {want} ms"
        );
    }
}

/// `crest merge` refuses what isn't the parts of one run, naming the part.
#[test]
fn merge_refuses_a_missing_part_and_a_whole_run() {
    let _serial = common::serial();
    let rt = rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    workers(
        &dir.path().join("p"),
        2,
        &[url.as_str(), "-n", "20", "--workers", "2"],
        |i| vec![("JOB_COMPLETION_INDEX".into(), i.to_string())],
    );
    workers(&dir.path().join("whole"), 1, &[url.as_str(), "-n", "20"], |_| vec![]);
    assert_eq!(
        server.received().len(),
        40,
        "10 + 10 for the parts, 20 for the whole run"
    );
    let merge = |parts: &[std::path::PathBuf]| {
        let out = crest()
            .arg("merge")
            .args(parts)
            .arg("--out")
            .arg(dir.path().join("m"))
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (w0, w1, whole) = (
        dir.path().join("p").join("w0"),
        dir.path().join("p").join("w1"),
        dir.path().join("whole").join("w0"),
    );
    let (code, err) = merge(std::slice::from_ref(&w1));
    assert_ne!(code, Some(0));
    assert!(err.contains("worker 0's part of 2 is missing"), "{err}");
    let (code, err) = merge(&[w0.clone(), whole.clone()]);
    assert_ne!(code, Some(0));
    assert!(
        err.contains("part 1 is a whole run") && err.contains(&whole.display().to_string()),
        "{err}"
    );
    let (code, err) = merge(&[w0.clone(), w0]);
    assert_ne!(code, Some(0));
    assert!(err.contains("both worker 0's"), "{err}");
}

/// Threads x loops (10 users x 3 iterations) over four workers: 3, 3, 2 and 2 users, 30
/// requests in all at the server, and a `unique` feeder's ten rows each used by one user of one
/// worker.
#[test]
fn workers_split_users_and_a_unique_feeders_rows() {
    let _serial = common::serial();
    let rt = rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let (dir, file) = scenario_file(&format!(
        r#"
target: http://{}
data:
  accounts: {{file: accounts.csv, mode: unique}}
steps:
  - request: {{path: "/as/${{accounts.name}}"}}
load: {{threads: 10, loops: 3}}
"#,
        server.addr
    ));
    let names: Vec<String> = (0..10).map(|i| format!("user{i}")).collect();
    std::fs::write(dir.path().join("accounts.csv"), format!("name\n{}\n", names.join("\n"))).unwrap();
    let file = file.to_str().unwrap();
    let parts = workers(dir.path(), 4, &[file, "--workers", "4"], |i| {
        vec![("JOB_COMPLETION_INDEX".into(), i.to_string())]
    });
    let per_worker: Vec<u64> = parts.iter().map(|o| summary(o)["requests"].as_u64().unwrap()).collect();
    assert_eq!(per_worker, [9, 9, 6, 6]);
    let got = server.received();
    assert_eq!(got.len(), 30);
    let mut used: Vec<String> = got
        .iter()
        .map(|r| r.path.trim_start_matches("/as/").to_string())
        .collect();
    used.sort();
    used.dedup();
    let mut want = names.clone();
    want.sort();
    assert_eq!(used, want, "every row used, by one user each");
    common::each_row_used_by_one_user(&got, &names);
}

/// A plan that can't be split is refused before anything is sent, naming the flag and why.
#[test]
fn a_plan_that_cannot_be_split_is_refused() {
    let cases: [(&[&str], &str); 5] = [
        (&["--workers", "4", "--worker-index", "4"], "4 is not a worker of 4"),
        (&["--workers", "0", "--worker-index", "0"], "0 is not a worker of 0"),
        (
            &["-c", "3", "--workers", "4", "--worker-index", "0"],
            "3 users can't be split over 4 workers",
        ),
        (
            &[
                "--workers",
                "2",
                "--worker-index",
                "1",
                "--stop-when",
                "error_rate > 5%",
            ],
            "--stop-when judges the whole run",
        ),
        (&["--workers", "2"], "--worker-index"),
    ];
    for (args, want) in cases {
        let out = crest()
            .args(["run", "http://127.0.0.1:9/", "-d", "1s"])
            .args(args)
            .env_remove("JOB_COMPLETION_INDEX")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let out = crest()
        .args(["run", "http://127.0.0.1:9/", "-d", "1s", "--workers", "2"])
        .env("JOB_COMPLETION_INDEX", "x")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("JOB_COMPLETION_INDEX=\"x\""), "{err}");
}
