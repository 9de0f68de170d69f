//! Issue 12: hostile input, hostile targets. Each test is named after the defect it pins down.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, scenario_file};

/// `crest ARGS...`: exit code, stdout, stderr.
fn crest_out(args: &[&str]) -> (i32, String, String) {
    let out = crest().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `crest validate FILE` on this text: exit code and stderr.
fn validate(text: &str) -> (i32, String) {
    let (_dir, file) = scenario_file(text);
    let (code, _, stderr) = crest_out(&["validate", file.to_str().unwrap()]);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (code, stderr)
}

/// Validation fails with exit 2 and `needle` at `scenario.yaml:LINE:COL`.
fn invalid_at(text: &str, line_col: &str, needle: &str) {
    let (code, stderr) = validate(text);
    assert_eq!(code, 2, "{stderr}");
    let located = format!("scenario.yaml:{line_col}: ");
    assert!(
        stderr.lines().any(|l| l.contains(&located) && l.contains(needle)),
        "expected {needle:?} at {line_col} in:\n{stderr}"
    );
}

#[test]
fn ports_out_of_range_are_refused_naming_the_url() {
    for url in [
        "http://127.0.0.1:83999/",
        "http://127.0.0.1:70000/",
        "http://127.0.0.1:-1/",
    ] {
        let out = tempfile::tempdir().unwrap();
        let (code, _, stderr) = crest_out(&["run", url, "-n", "5", "--out", out.path().to_str().unwrap()]);
        assert_eq!(code, 2, "{url}: {stderr}");
        assert!(stderr.contains(url.trim_end_matches('/')), "{url}: {stderr}");
        assert!(stderr.contains("out of range"), "{stderr}");
        assert!(!out.path().join("results.json").exists(), "nothing is sent");
    }
    let (code, _, stderr) = crest_out(&["find", "http://127.0.0.1:70000/"]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = crest_out(&[
        "run",
        "http://127.0.0.1:1/",
        "--monitor-prometheus",
        "http://127.0.0.1:99999/metrics",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--monitor-prometheus") && stderr.contains("99999"),
        "{stderr}"
    );
    for port in ["70000", "-1", "83999"] {
        let text = format!(
            "target: http://127.0.0.1:{port}\nload: {{users: 1, duration: 1s}}\nsteps:\n  - request: {{path: /}}\n"
        );
        invalid_at(&text, "1:9", &format!("port {port} is out of range"));
        let (_, stderr) = validate(&text);
        assert_eq!(
            stderr.lines().filter(|l| l.contains("scenario.yaml:")).count(),
            1,
            "one error: {stderr}"
        );
    }
    invalid_at(
        "load: {users: 1, duration: 1s}\nsteps:\n  - request: {url: \"http://127.0.0.1:65536/x\"}\n",
        "3:20",
        "out of range",
    );
    invalid_at(
        "target: http://127.0.0.1:1\nload: {users: 1, duration: 1s}\nsteps:\n  - request: {path: /}\nmonitor:\n  prometheus:\n    - url: http://127.0.0.1:99999/metrics\n",
        "7:12",
        "out of range",
    );
}
