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
