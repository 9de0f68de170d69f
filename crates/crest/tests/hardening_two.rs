//! Issue 21: hardening, round two. Runs that always stop, inputs that cannot exhaust memory,
//! secrets that stay secret, outputs that are whole or say they are not.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, scenario_file};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// `crest ARGS...`: exit code, stdout, stderr.
fn crest_out(args: &[&str]) -> (i32, String, String) {
    let out = crest().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

/// Waits for `child` at most `limit`: a run that does not stop is killed and fails the test
/// instead of hanging it. The limit is far above what the run needs on a busy machine.
fn wait_at_most(child: &mut Child, limit: Duration) -> i32 {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("crest still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Intervals written to the journal in `dir` so far.
fn journal_intervals(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("{\"entry\":\"interval\""))
        .count()
}

/// A flow that loops a billion times over a `set` before its request.
fn busy_loop_scenario(target: &str, duration: &str) -> String {
    format!(
        "target: {target}\ndefaults: {{timeout: 1s}}\nload: {{users: 2, duration: {duration}}}\nsteps:\n  - loop: {{times: 1000000000, steps: [{{set: {{a: x}}}}]}}\n  - request: {{path: /}}\n"
    )
}

#[test]
fn a_flow_that_never_waits_still_ends_by_duration_and_by_signal() {
    let target = common::target_process(&[]);
    let (_guard, file) = scenario_file(&busy_loop_scenario(target.url.trim_end_matches('/'), "1s"));

    // Valid, but warned about where the loop is.
    let (code, _, stderr) = crest_out(&["validate", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("warning: ") && stderr.contains("scenario.yaml:5:5: loop: none of its steps sends anything"),
        "{stderr}"
    );

    // By duration: it ends (after the grace for the iterations in flight), and the journal has
    // its intervals, which the ticker on the same thread closes.
    let out = tempfile::tempdir().unwrap();
    let mut child = common::spawn_out(&["run", file.to_str().unwrap()], out.path());
    wait_at_most(&mut child, Duration::from_secs(60));
    let results = std::fs::read_to_string(out.path().join("results.json")).unwrap();
    let results: serde_json::Value = serde_json::from_str(&results).unwrap();
    assert_eq!(results["ended_by"], "duration");
    assert!(journal_intervals(out.path()) >= 1, "the journal has intervals");
    // Not one request: each user is still in its loop.
    assert_eq!(common::target_metric(&target.url, "crest_target_requests_total"), 0);

    // By signal: SIGTERM ends a run of an hour once its intervals are seen to be closing.
    let (_guard, file) = scenario_file(&busy_loop_scenario(target.url.trim_end_matches('/'), "1h"));
    let out = tempfile::tempdir().unwrap();
    let mut child = common::spawn_out(&["run", file.to_str().unwrap()], out.path());
    let started = Instant::now();
    while journal_intervals(out.path()) < 2 {
        assert!(started.elapsed() < Duration::from_secs(60), "no interval was journaled");
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(wait_at_most(&mut child, Duration::from_secs(60)), 143);
    let results = std::fs::read_to_string(out.path().join("results.json")).unwrap();
    assert!(results.contains("\"ended_by\": \"sigterm\""), "{results}");
}

#[test]
fn tiny_rates_are_refused_naming_the_flag_or_the_line() {
    for rate in ["1e-20", "1e-300", "0.0000001"] {
        let (code, _, stderr) = crest_out(&["run", "http://127.0.0.1:1/", "--rate", rate, "-d", "1s"]);
        assert_eq!(code, 2, "{rate}: {stderr}");
        assert!(
            stderr.contains(&format!("--rate {rate}")) || stderr.contains("--rate "),
            "{rate}: {stderr}"
        );
        assert!(stderr.contains("the rate is at least"), "{rate}: {stderr}");
    }
    for (load, at) in [
        ("{rate: 1e-300, duration: 1s}", "2:14"),
        ("{rate_stages: [{ramp_to: 1e-300, over: 1s}]}", "2:"),
        ("{start_rate: 1e-300, rate_stages: [{ramp_to: 1, over: 1s}]}", "2:"),
    ] {
        let (_guard, file) = scenario_file(&format!(
            "target: http://127.0.0.1:1\nload: {load}\nsteps:\n  - request: {{path: /}}\n"
        ));
        let (code, _, stderr) = crest_out(&["validate", file.to_str().unwrap()]);
        assert_eq!(code, 2, "{load}: {stderr}");
        assert!(
            stderr.contains(&format!("scenario.yaml:{at}")) && stderr.contains("the rate is at least"),
            "{load}: expected at {at}: {stderr}"
        );
    }
    // The lowest rate allowed runs, and ends by its duration with its one arrival.
    let target = common::target_process(&[]);
    let r = common::run(&target.url, &["--rate", "0.000001", "-d", "1s"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(common::target_metric(&target.url, "crest_target_requests_total"), 1);
}

/// Every file under `dir`, as bytes, with its path.
fn every_file(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
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

/// None of `secrets` is in any file of `dir` (gzip'd request logs decompressed), nor in
/// `outputs`.
fn assert_nowhere(secrets: &[&str], dir: &std::path::Path, outputs: &[&str]) {
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

#[test]
fn json_bodies_and_checks_of_secret_fields_are_never_quoted() {
    common::rt().block_on(async {
        let server = crest_testkit::Server::start(|_, _| {
            crest_testkit::Reply::json(200, r#"{"token":"SERVERTOKEN1","status":"ok"}"#)
        })
        .await;
        // Quick mode: a JSON body with secret-named fields.
        let r = common::run_async(
            &server.url("/login"),
            &["-n", "3", "--body", r#"{"user":"ann","password":"BODYPASS1","client_secret":"BODYSECRET1"}"#],
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let dir = r.dir.path().to_path_buf();
        let report = tokio::task::spawn_blocking(move || crest_out(&["report", dir.to_str().unwrap()]))
            .await
            .unwrap();
        assert_eq!(report.0, 0, "{}", report.2);
        assert_nowhere(
            &["BODYPASS1", "BODYSECRET1"],
            r.dir.path(),
            &[&r.stdout, &r.stderr, &report.1, &report.2],
        );
        assert!(r.results_text().contains(r#"\"user\":\"ann\""#), "other fields stay readable");
        // The server was sent the body as given.
        let bodies: Vec<String> = server
            .received()
            .iter()
            .map(|q| String::from_utf8_lossy(&q.body).into_owned())
            .collect();
        assert!(bodies.iter().all(|b| b.contains("BODYPASS1")), "{bodies:?}");

        // A scenario: a check on a server-issued token fails, and a JSON body's secret field
        // comes from the environment.
        let text = format!(
            "target: {}\nload: {{threads: 1, loops: 1}}\nsteps:\n  - request:\n      method: POST\n      path: /login\n      json: {{user: ann, password: \"${{env:PW}}\"}}\n      check: {{json: {{\"$.token\": EXPECTEDTOKEN1}}}}\n  - request:\n      path: /items\n      extract: {{session_token: \"$.token\"}}\n      check: {{json: {{\"$.status\": fine}}}}\n",
            server.url("").trim_end_matches('/')
        );
        let (_guard, file) = scenario_file(&text);
        let r = tokio::task::spawn_blocking(move || {
            common::run_scenario(&file, &[("PW", "ENVPASS2")], &["--log-requests"])
        })
        .await
        .unwrap();
        assert_eq!(r.code, 1, "every request failed its check: {}", r.stderr);
        assert_eq!(r.error_count("check_failed"), 1, "{}", r.stdout);
        let failures = std::fs::read_to_string(r.dir.path().join("failures.csv")).unwrap();
        assert!(
            failures.contains("$.token is not the expected value"),
            "the failure still says what was wrong: {failures}"
        );
        assert_nowhere(&["SERVERTOKEN1", "EXPECTEDTOKEN1", "ENVPASS2"], r.dir.path(), &[&r.stdout, &r.stderr]);
    });
}
