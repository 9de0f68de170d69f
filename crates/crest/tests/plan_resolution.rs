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

/// Issue 22, item 1: the same HTTP/2 settings, given as flags or in a file, go through one
/// resolver, so the server sees the same requests on the same number of connections.
#[test]
fn issue_22_streams_per_connection_are_one_rule_for_flags_and_files() {
    let _serial = common::serial();
    rt().block_on(async {
        let quick = crest_testkit::h2::H2Server::start(|_, _| crest_testkit::h2::H2Reply::ok()).await;
        let r = common::run_async(
            &quick.url("/x"),
            &[
                "--http2",
                "--max-streams",
                "2",
                "-c",
                "6",
                "-n",
                "10x",
                "--threads",
                "2",
            ],
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let file = crest_testkit::h2::H2Server::start(|_, _| crest_testkit::h2::H2Reply::ok()).await;
        let (_dir, path) = scenario_file(&format!(
            "target: http://{}\ndefaults: {{http: 2, max_streams: 2}}\nsteps:\n  - request: {{path: /x}}\n\
             load: {{threads: 6, loops: 10}}\n",
            file.addr
        ));
        let s = tokio::task::spawn_blocking(move || run_scenario(&path, &[], &["--threads", "2"]))
            .await
            .unwrap();
        assert_eq!(s.code, 0, "{}", s.stderr);
        // Two engine threads of 3 users each, at 2 streams a connection: two connections each,
        // on both paths (one each, had either path ignored the setting).
        assert_eq!((quick.received().len(), quick.connections()), (60, 4));
        assert_eq!((file.received().len(), file.connections()), (60, 4));
    });
}

/// A rule the scenario compiler did not apply now refuses the file, at the key's line and
/// column, as the flag is refused by name.
#[test]
fn issue_22_max_streams_without_http2_is_refused_in_a_file_too() {
    let (_dir, file) = scenario_file(
        "target: http://127.0.0.1:9\ndefaults:\n  max_streams: 3\nsteps:\n  - request: {path: /}\n\
         load: {users: 1, duration: 1s}\n",
    );
    let err = refused(&["validate", file.to_str().unwrap()]);
    assert!(
        err.contains("scenario.yaml:3:16: max_streams applies to HTTP/2: add `http: 2` or `http: auto`"),
        "{err}"
    );
    let err = refused(&["run", "http://127.0.0.1:9/", "--max-streams", "3"]);
    assert!(err.contains("--max-streams applies to HTTP/2"), "{err}");
}
