//! Bad input gets a clear message naming the flag, and exit code 2.
#![allow(clippy::unwrap_used)]

mod common;

use common::crest;

fn fails_with(args: &[&str], needle: &str) {
    let out = crest().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: expected {needle:?} in {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn bad_flags_exit_2_and_name_the_flag() {
    fails_with(&["run", "ftp://127.0.0.1/"], "http:// or https://");
    fails_with(&["run", "http://127.0.0.1:1/", "-c", "lots"], "--concurrency");
    fails_with(&["run", "http://127.0.0.1:1/", "-d", "forever"], "--duration");
    fails_with(&["run", "http://127.0.0.1:1/", "--rate", "-5"], "--rate");
    fails_with(&["run", "http://127.0.0.1:1/", "-H", "Broken"], "-H");
    fails_with(
        &["run", "http://127.0.0.1:1/", "--body-file", "/no/such/file"],
        "--body-file /no/such/file",
    );
    fails_with(
        &["run", "http://127.0.0.1:1/", "--cacert", "/no/such/ca.pem"],
        "--cacert",
    );
    fails_with(&["run", "http://127.0.0.1:1/", "-m", "GE T"], "not a valid HTTP method");
    fails_with(&["run", "http://no-such-host.invalid/"], "cannot resolve host");
    fails_with(&["run", "http://127.0.0.1:1/", "-c", "5000000"], "-c 5000000");
    fails_with(&["target", "--listen", "0.0.0.0:0"], "loopback");
    fails_with(&["run", "http://127.0.0.1:1/", "--load", "manual"], "--load manual");
    fails_with(
        &[
            "collect",
            "http://127.0.0.1:1/",
            "--workers",
            "2",
            "--listen",
            "127.0.0.1:0",
            "--web",
        ],
        "--web: a collector serves its live page",
    );
}

#[test]
fn a_bad_ca_file_is_named() {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), "not a certificate").unwrap();
    fails_with(
        &["run", "https://127.0.0.1:1/", "--cacert", f.path().to_str().unwrap()],
        "CA file",
    );
}

#[test]
fn too_many_connections_for_the_file_limit_names_the_limit() {
    // A hard limit of 256 open files cannot hold 1,000 connections; crest says so before sending.
    let exe = env!("CARGO_BIN_EXE_crest");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 256 && ulimit -Hn 256 && exec {exe} run http://127.0.0.1:1/ -c 1000 -d 1s"
        ))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("RLIMIT_NOFILE") && stderr.contains("256") && stderr.contains("-c 1000"),
        "{stderr}"
    );
}

/// An unknown flag is named with the subcommand's usage; clap's guess at the flag meant is kept
/// only when it is a near miss, never a far one with a usage line built around it.
#[test]
fn an_unknown_flag_is_named_without_a_far_guess() {
    let out = crest()
        .args(["run", "--bogus", "http://127.0.0.1:1/"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unexpected argument '--bogus' found"), "{stderr}");
    assert!(stderr.contains("Usage: crest run [OPTIONS] <URL>"), "{stderr}");
    assert!(!stderr.contains("log-requests") && !stderr.contains("tip:"), "{stderr}");
    fails_with(
        &["run", "--rat", "5", "http://127.0.0.1:1/"],
        "a similar argument exists: '--rate'",
    );
}

/// A scenario's number that is not a whole one, and a file that is not text, are said as such,
/// with the place.
#[test]
fn a_scenario_that_is_not_whole_numbers_or_text_is_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let flows = "flows:\n  - name: a\n    steps:\n      - request: {path: /}\n";
    let cases = [
        (
            format!("target: http://127.0.0.1:1\nload: {{threads: 2.5, loops: 1}}\n{flows}"),
            ":2:8: load.threads: expected a whole number, found `2.5`",
        ),
        (
            format!("target: http://127.0.0.1:1\nload: {{users: many, duration: 1s}}\n{flows}"),
            ":2:8: load.users: expected a whole number, found `many`",
        ),
        (
            format!("target: http://127.0.0.1:1\nload: {{users: -1, duration: 1s}}\n{flows}"),
            ":2:8: load.users: expected a whole number of 0 or more, found `-1`",
        ),
        (
            format!("target: http://127.0.0.1:1\n  \0load: {{users: 1}}\n{flows}"),
            ":2:3: a NUL byte: a scenario is text",
        ),
    ];
    for (k, (text, said)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("s{k}.yaml"));
        std::fs::write(&path, text).unwrap();
        let out = crest().arg("validate").arg(&path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&format!("s{k}.yaml{said}")), "{stderr}");
    }
}
