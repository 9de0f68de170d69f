//! Issue 13, item 1: every front end's settings go through one resolver, so flags add to a
//! scenario the way they make a quick-mode plan, and the same mistake gets the same answer on
//! every path.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, rt, run_scenario, scenario_file};
use crest_testkit::{Reply, Server};
use std::time::Duration;

/// `--threshold` adds to a scenario's thresholds (it was refused), and a scenario's threshold
/// may read a metric that only `--monitor-metric` records (it was "unknown metric").
#[test]
fn issue_13_flags_add_thresholds_and_metrics_to_a_scenario() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::Body {
            delay: Duration::ZERO,
            status: 200,
            body: b"queue_depth 3\n".to_vec(),
        })
        .await;
        let (_dir, file) = scenario_file(&format!(
            "target: http://{}\nsteps:\n  - request: {{path: /}}\nload: {{users: 1, duration: 2s}}\n\
             thresholds:\n  - queue_depth < 5\n",
            server.addr
        ));
        let metrics = server.url("/metrics");
        let r = tokio::task::spawn_blocking(move || {
            run_scenario(
                &file,
                &[],
                &[
                    "--monitor-prometheus",
                    &metrics,
                    "--monitor-metric",
                    "queue_depth",
                    "--threshold",
                    "requests < 1",
                ],
            )
        })
        .await
        .unwrap();
        assert_eq!(r.code, 1, "the flag's threshold fails: {}", r.stderr);
        assert_eq!(
            r.results()["config"]["thresholds"],
            serde_json::json!(["queue_depth < 5", "requests < 1"])
        );
        let s = r.summary();
        let held: Vec<(String, bool)> = s["thresholds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["threshold"].as_str().unwrap().to_string(),
                    t["pass"].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            held,
            [
                ("queue_depth < 5".to_string(), true),
                ("requests < 1".to_string(), false)
            ]
        );
    });
}

fn refused(args: &[&str]) -> String {
    let out = crest().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    err
}

/// `--threads 0` was an error in quick mode and silently one thread for `crest find`.
#[test]
fn issue_13_threads_0_gets_the_same_error_on_every_path() {
    let (_dir, file) =
        scenario_file("target: http://127.0.0.1:9\nsteps:\n  - request: {path: /}\nload: {users: 1, duration: 1s}\n");
    let file = file.to_str().unwrap();
    for args in [
        vec!["run", "http://127.0.0.1:9/", "--threads", "0"],
        vec!["run", file, "--threads", "0"],
        vec![
            "find",
            "http://127.0.0.1:9/",
            "--threads",
            "0",
            "--budget",
            "3s",
            "--probe",
            "2s",
        ],
        vec!["find", file, "--threads", "0", "--budget", "3s", "--probe", "2s"],
    ] {
        let err = refused(&args);
        assert!(
            err.contains("--threads 0: at least one thread is needed"),
            "{args:?}: {err}"
        );
    }
}

/// Header names are HTTP tokens on every path: `X(y)` is printable, but no header name.
#[test]
fn issue_13_header_names_are_checked_as_tokens_on_every_path() {
    let err = refused(&["run", "http://127.0.0.1:9/", "-H", "X(y): 1", "-n", "1"]);
    assert!(err.contains("\"X(y)\" is not a valid header name"), "{err}");
    let (_dir, file) = scenario_file(
        "target: http://127.0.0.1:9\nsteps:\n  - request: {path: /, headers: {\"X(y)\": \"1\"}}\n\
         load: {users: 1, duration: 1s}\n",
    );
    let err = refused(&["validate", file.to_str().unwrap()]);
    assert!(err.contains("\"X(y)\" is not a valid header name"), "{err}");
}

/// A scenario's expression on a metric nothing records still names the file, line and column.
#[test]
fn an_unmonitored_metric_in_a_scenario_is_located() {
    let (_dir, file) = scenario_file(
        "target: http://127.0.0.1:9\nsteps:\n  - request: {path: /}\nload: {users: 1, duration: 1s}\n\
         stop_when:\n  - queue_depth > 5\n",
    );
    let err = refused(&["run", file.to_str().unwrap(), "--threads", "2"]);
    assert!(
        err.contains("scenario.yaml:6:5: stop_when: \"queue_depth > 5\": unknown metric"),
        "{err}"
    );
}
