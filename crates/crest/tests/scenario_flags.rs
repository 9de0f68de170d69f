//! The load of a scenario is the user's to set at run time: `crest run S.yaml -c N -d T` (and
//! `-n`, `--rate`) replace a constant `load:` as they set quick mode's, a profile refuses them
//! naming where it is written, and the flags of a URL's request stay refused. Each run is held
//! to what a real server on a loopback port counted, and to what results.json says was run.
#![allow(clippy::unwrap_used)]

mod common;

use common::{run_scenario, scenario_file};
use crest_testkit::{Reply, Server};
use serde_json::Value;

/// A scenario of one request that `crest import` would write: one user, once.
fn imported(url: &str) -> String {
    format!("target: {url}\nsteps:\n  - request: {{path: /x}}\nload: {{users: 1, iterations: 1}}\n")
}

/// The responses results.json counts, by their status codes.
fn counted(results: &Value) -> u64 {
    results["status_codes"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum()
}

#[test]
fn per_user_iterations_and_users_from_flags_replace_the_files() {
    let _serial = common::serial();
    let rt = common::rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let (_dir, file) = scenario_file(&imported(&server.url("")));
    let run = run_scenario(&file, &[], &["-n", "7x", "-c", "3"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.received().len(), 21, "3 users x 7 iterations of one request");
    // Each user keeps its own connection open.
    assert_eq!(server.connections(), 3);
    let r = run.results();
    assert_eq!(counted(&r), 21);
    let config = &r["config"];
    assert_eq!(
        (&config["model"], &config["concurrency"], &config["iterations"]),
        (&Value::from("closed"), &Value::from(3), &Value::from(7)),
        "{config}"
    );
    assert_eq!(config["requests"], Value::Null, "the file's iterations: 1 is replaced");
}

#[test]
fn a_duration_from_the_flags_replaces_the_files_iterations() {
    let _serial = common::serial();
    let rt = common::rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let (_dir, file) = scenario_file(&imported(&server.url("")));
    let run = run_scenario(&file, &[], &["-c", "2", "-d", "1s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.results();
    let config = &r["config"];
    assert_eq!(
        (&config["model"], &config["concurrency"], &config["duration_s"]),
        (&Value::from("closed"), &Value::from(2), &Value::from(1.0)),
        "{config}"
    );
    let sent = counted(&r);
    assert_eq!(
        server.received().len() as u64,
        sent,
        "what crest counts is what the server got"
    );
    assert!(sent > 1, "the file's one iteration no longer ends the run: {sent}");
    assert_eq!(r["segments"].as_array().unwrap().len(), 1);
    assert_eq!(r["segments"][0]["users"], 2, "the step is the flag's level");
}

#[test]
fn a_rate_from_the_flags_makes_the_load_open() {
    let _serial = common::serial();
    let rt = common::rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let (_dir, file) = scenario_file(&imported(&server.url("")));
    let run = run_scenario(&file, &[], &["--rate", "20", "-d", "1s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.results();
    let config = &r["config"];
    assert_eq!(
        (&config["model"], &config["rate"], &config["duration_s"]),
        (&Value::from("open"), &Value::from(20.0), &Value::from(1.0)),
        "{config}"
    );
    let sent = counted(&r);
    assert_eq!(server.received().len() as u64, sent);
    assert!(sent > 1, "{sent}");
}

#[test]
fn levels_run_a_scenario_at_each() {
    let _serial = common::serial();
    let rt = common::rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let (_dir, file) = scenario_file(&imported(&server.url("")));
    let run = run_scenario(&file, &[], &["-c", "1,2", "-n", "3x"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(server.received().len(), 9, "1 x 3, then 2 x 3");
    let r = run.results();
    assert_eq!(counted(&r), 9);
    let users: Vec<_> = r["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["users"].clone())
        .collect();
    assert_eq!(users, [1, 2]);
}

#[test]
fn a_profile_refuses_the_flags_of_a_constant_load() {
    let (_dir, file) = scenario_file(
        "target: http://127.0.0.1:9\nsteps:\n  - request: {path: /}\nload:\n  stepping: {start: 1, step: 1, every: 10s, max: 3}\n",
    );
    let run = run_scenario(&file, &[], &["-c", "5"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("-c: ")
            && run
                .stderr
                .contains("scenario.yaml:5:13: the load is a `stepping` profile; -c sets the users"),
        "{}",
        run.stderr
    );
    assert!(!run.results_path().exists(), "nothing ran");
    let run = run_scenario(&file, &[], &["-d", "1h"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("-d can end it sooner"), "{}", run.stderr);
}

#[test]
fn the_flags_of_a_request_are_refused_with_a_scenario() {
    let (_dir, file) = scenario_file(&imported("http://127.0.0.1:9"));
    let run = run_scenario(&file, &[], &["-H", "x:y"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("-H: these flags describe a URL's request"),
        "{}",
        run.stderr
    );
}

/// `crest kube render` checks the run as `crest run` would, the load flags over the file's,
/// and hands them to the collector.
#[test]
fn kube_render_carries_the_load_flags() {
    let (_dir, file) = scenario_file(&imported("http://127.0.0.1:9"));
    let render = |extra: &[&str]| {
        common::crest()
            .args([
                "kube",
                "render",
                file.to_str().unwrap(),
                "--workers",
                "2",
                "--token",
                "t0",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = render(&["-c", "4", "-d", "1m"]);
    let yaml = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        yaml.contains("--concurrency=4") && yaml.contains("--duration=1m"),
        "{yaml}"
    );
    // One user can't be split over two workers: the file's load was checked under the flags.
    let out = render(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 users can't be split over 2 workers"));
}

/// `crest collect` resolves the scenario with the load flags over the file's, and hands the
/// flags to its workers, which resolve the same plan (or they would be refused for another).
#[test]
fn a_collector_and_its_workers_run_the_flags_load() {
    use std::io::{BufRead, BufReader};
    let _serial = common::serial();
    let rt = common::rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let (dir, file) = scenario_file(&imported(&server.url("")));
    let out = dir.path().join("run");
    let token = ("CREST_TOKEN", "loadh-token-0123");
    let mut collector = common::crest()
        .arg("collect")
        .arg(&file)
        .args([
            "-c",
            "2",
            "-n",
            "4x",
            "--workers",
            "2",
            "--listen",
            "127.0.0.1:0",
            "--quiet",
        ])
        .args(["--join-timeout", "60s", "--out"])
        .arg(&out)
        .env(token.0, token.1)
        .env_remove("JOB_COMPLETION_INDEX")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(collector.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "the collector ended: {line}");
        if let Some(rest) = line.strip_prefix("collector: waiting for 2 workers on ") {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let workers: Vec<_> = (0..2)
        .map(|i| {
            common::crest()
                .args(["worker", "--no-keep", "--collector", &addr])
                .env(token.0, token.1)
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let workers: Vec<_> = workers.into_iter().map(|w| w.wait_with_output().unwrap()).collect();
    for w in &workers {
        assert_eq!(w.status.code(), Some(0), "{}", String::from_utf8_lossy(&w.stderr));
    }
    assert_eq!(collector.wait().unwrap().code(), Some(0));
    assert_eq!(
        server.received().len(),
        8,
        "2 users x 4 iterations, one user per worker"
    );
    let r: Value = serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(counted(&r), 8);
    assert_eq!(
        (&r["config"]["concurrency"], &r["config"]["iterations"]),
        (&Value::from(2), &Value::from(4))
    );
}
