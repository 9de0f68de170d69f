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

/// `n` loops, one inside the other, around a request, in block style.
fn nested_loops(n: usize) -> String {
    let mut text = String::from("target: http://127.0.0.1:1\nload: {users: 1, duration: 1s}\nsteps:\n");
    let mut indent = String::from("  ");
    for _ in 0..n {
        text += &format!("{indent}- loop:\n{indent}    times: 1\n{indent}    steps:\n");
        indent += "      ";
    }
    text += &format!("{indent}- request: {{path: /}}\n");
    text
}

#[test]
fn deep_nesting_is_refused_with_a_location_instead_of_overflowing_the_stack() {
    let (code, stderr) = validate(&nested_loops(32));
    assert_eq!(code, 0, "32 nested loops are allowed: {stderr}");
    invalid_at(&nested_loops(33), "100:197", "loops nest deeper than 32 levels");
    // Deeper still, the YAML itself is refused before it is built.
    let (_dir, file) = scenario_file(&nested_loops(270));
    for cmd in ["validate", "run"] {
        let (code, _, stderr) = crest_out(&[cmd, file.to_str().unwrap()]);
        assert_eq!(code, 2, "{cmd}: {stderr}");
        assert!(
            stderr.contains("scenario.yaml:") && stderr.contains("nest deeper than 128 levels"),
            "{stderr}"
        );
    }
    let head = "target: http://127.0.0.1:1\nload: {users: 1, duration: 1s}\nsteps:\n  ";
    for deep in [
        format!("{head}{}x{}", "[".repeat(10_000), "]".repeat(10_000)),
        format!("{head}{}x", "- ".repeat(10_000)),
        format!("{head}- {}x", "a: ".repeat(10_000)),
    ] {
        let (code, stderr) = validate(&deep);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains("scenario.yaml:4:"), "located: {stderr}");
    }
}

#[test]
fn empty_steps_and_empty_step_errors_are_located() {
    let head = "target: http://127.0.0.1:1\nload: {users: 1, duration: 1s}\n";
    invalid_at(&format!("{head}steps: []\n"), "3:8", "has no steps");
    invalid_at(&format!("{head}steps: [{{}}]\n"), "3:9", "a step is exactly one of");
    invalid_at(&format!("{head}steps:\n  - {{}}\n"), "4:5", "a step is exactly one of");
    invalid_at(
        &format!("{head}steps:\n  - loop: {{times: 2, steps: []}}\n"),
        "4:5",
        "`steps` is empty",
    );
}

#[test]
fn a_byte_order_mark_at_the_start_is_accepted() {
    let (code, stderr) = validate(
        "\u{feff}target: http://127.0.0.1:1\nload: {users: 1, duration: 1s}\nsteps:\n  - request: {path: /}\n",
    );
    assert_eq!(code, 0, "{stderr}");
}
