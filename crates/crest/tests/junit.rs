//! `--junit` and `--markdown-summary`: a run's verdicts for CI, against a real `crest target`.
//! The XML is checked against a JUnit schema (tests/data/junit.xsd) by libxml2's xmllint.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, target_metric, target_process, validate_junit as validate};
use serde_json::Value;
use std::path::Path;

/// `crest run URL ARGS... --out DIR --summary-json -`: its exit code, summary and stderr.
fn run(url: &str, out: &Path, args: &[&str]) -> (i32, Value, String) {
    let o = crest()
        .args([
            "run",
            url,
            "-c",
            "2",
            "-d",
            "1s",
            "--quiet",
            "--summary-json",
            "-",
            "--out",
        ])
        .arg(out)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let summary = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("no summary ({e}): {}\n{stderr}", String::from_utf8_lossy(&o.stdout)));
    (o.status.code().unwrap(), summary, stderr)
}

/// The `name="value"` attribute of the first `<tag` in `xml`.
fn attr(xml: &str, tag: &str, name: &str) -> String {
    let start = xml
        .find(&format!("<{tag} "))
        .unwrap_or_else(|| panic!("no <{tag}> in\n{xml}"));
    let el = &xml[start..start + xml[start..].find('>').unwrap()];
    let from = el
        .find(&format!(" {name}=\""))
        .unwrap_or_else(|| panic!("no {name} in {el}"))
        + name.len()
        + 3;
    el[from..from + el[from..].find('"').unwrap()].to_string()
}

#[test]
fn a_run_with_a_passing_and_a_failing_threshold_reports_both_as_junit_and_markdown() {
    let _serial = common::serial();
    let t = target_process(&[]);
    let secret = "s3cr3t-t0k3n-abc";
    let url = format!("{}?token={secret}", t.url);
    let tmp = tempfile::tempdir().unwrap();
    let (junit, md) = (tmp.path().join("junit.xml"), tmp.path().join("summary.md"));
    // GitHub appends each step's summary to the same file: what is there stays.
    let before = "## Earlier step\n\nunit tests passed\n";
    std::fs::write(&md, before).unwrap();
    let out = tmp.path().join("run");
    let (code, s, stderr) = run(
        &url,
        &out,
        &[
            "--threshold",
            "p95 < 10s",
            "--threshold",
            "requests < 1",
            "--junit",
            junit.to_str().unwrap(),
            "--markdown-summary",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(
        code, 1,
        "a failed threshold exits 1, whatever else is written: {stderr}"
    );
    let requests = s["requests"].as_u64().unwrap();
    assert!(requests > 0);
    assert_eq!(requests, target_metric(&t.url, "crest_target_requests_total"));

    validate(&junit);
    let xml = std::fs::read_to_string(&junit).unwrap();
    // Two thresholds, then two checks: successes were measured, crest did not limit the run
    // (which without --strict passes, as the exit code does).
    assert_eq!(attr(&xml, "testsuite", "tests"), "4", "{xml}");
    assert_eq!(attr(&xml, "testsuite", "failures"), "1", "{xml}");
    assert_eq!(attr(&xml, "testsuite", "errors"), "0", "{xml}");
    assert_eq!(attr(&xml, "testsuite", "skipped"), "0", "{xml}");
    assert_eq!(attr(&xml, "testsuites", "tests"), "4", "{xml}");
    assert!(attr(&xml, "testsuite", "time").parse::<f64>().unwrap() > 0.0);
    assert!(
        attr(&xml, "testsuite", "name").starts_with("GET http://127.0.0.1:"),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<testcase name="p95 &lt; 10s" classname="thresholds""#),
        "{xml}"
    );
    // The failure states the figure the summary measured.
    let failed = s["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["threshold"] == "requests < 1")
        .unwrap();
    assert_eq!(failed["pass"], false);
    let message = format!("requests &lt; 1: measured {}", failed["shown"].as_str().unwrap());
    assert!(
        xml.contains(&format!(r#"<failure message="{message}"/>"#)),
        "{message} in\n{xml}"
    );
    assert!(xml.contains(r#"<testcase name="the run measured successes" classname="checks""#));
    assert!(xml.contains(&format!(
        r#"<property name="crest.version" value="{}"/>"#,
        env!("CARGO_PKG_VERSION")
    )));

    let summary = std::fs::read_to_string(&md).unwrap();
    assert!(summary.starts_with(before), "the earlier summary survives:\n{summary}");
    let added = &summary[before.len()..];
    assert!(added.starts_with("### crest: GET http://127.0.0.1:"), "{added}");
    assert!(added.contains("❌ 1 of 2 thresholds failed"), "{added}");
    assert!(added.contains("| ✅ | `p95 < 10s` |"), "{added}");
    assert!(added.contains("| ❌ | `requests < 1` |"), "{added}");
    assert!(added.contains("| Latency p50 / p95 / p99 |"), "{added}");

    for (what, text) in [("junit", &xml), ("summary", &summary)] {
        assert!(!text.contains(secret), "the token is in the {what}:\n{text}");
    }
    common::assert_nowhere(&[secret], &out, &[&stderr]);

    // A second run appends after the first.
    let (code, _, stderr) = run(
        &t.url,
        &tmp.path().join("again"),
        &["--markdown-summary", md.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{stderr}");
    let twice = std::fs::read_to_string(&md).unwrap();
    assert!(twice.starts_with(&summary), "{twice}");
    assert!(twice[summary.len()..].contains("✅ finished"), "{twice}");
}

#[test]
fn a_junit_file_whose_directory_is_missing_is_refused_before_the_run() {
    let _serial = common::serial();
    let t = target_process(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let junit = tmp.path().join("no-such-dir").join("junit.xml");
    let out = tmp.path().join("run");
    // Found at the run's end before, as exit 4 (a full disk's) after the whole run.
    let o = crest()
        .args(["run", &t.url, "-c", "2", "-d", "1s", "--quiet", "--out"])
        .arg(&out)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--junit") && stderr.contains("is not a directory"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing was run");
    assert_eq!(target_metric(&t.url, "crest_target_requests_total"), 0);
}

#[test]
fn a_capacity_search_adds_whether_a_level_met_its_service_level() {
    let _serial = common::serial();
    let t = target_process(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let junit = tmp.path().join("junit.xml");
    let o = crest()
        .args([
            "find",
            &t.url,
            "--probe",
            "2s",
            "--budget",
            "6s",
            "--slo",
            "p99 < 10s",
            "--quiet",
            "--out",
        ])
        .arg(tmp.path().join("run"))
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    validate(&junit);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(attr(&xml, "testsuite", "tests"), "3", "{xml}");
    assert_eq!(attr(&xml, "testsuite", "failures"), "0", "{xml}");
    let case = r#"<testcase name="the capacity search found a level that met the service level" classname="checks" time="0.000">"#;
    let at = xml.find(case).unwrap_or_else(|| panic!("no search case in\n{xml}"));
    assert!(
        xml[at..].contains("<system-out>maximum throughput "),
        "a pass says what the search found:\n{xml}"
    );
}
