//! Run provenance (`--label`, `--tag`, the git checkout, a scenario's `label:`), `crest history`
//! and its regression gate, against real `crest target` servers (issue 38).
//!
//! The gate's runs are bounded by the target's fixed service time, with fewer users than it has
//! workers: nothing queues, so latency is the service time and throughput users over it,
//! whatever else the machine does; a regression is a service time three times as long.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, scenario_file, serial, target_process};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn text(out: &Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `crest run URL --out DIR ARGS...` run in `cwd`, with git looking no higher than `cwd`'s
/// parent (so that a temporary directory is never taken for part of another checkout).
fn run_in(cwd: &Path, url: &str, out: &Path, args: &[&str]) -> (i32, String, String) {
    let o = crest()
        .current_dir(cwd)
        .env("GIT_CEILING_DIRECTORIES", cwd.parent().unwrap())
        .args(["run", url, "-q", "--out"])
        .arg(out)
        .args(args)
        .output()
        .unwrap();
    text(&o)
}

fn history(dir: &Path, args: &[&str]) -> (i32, String, String) {
    text(&crest().arg("history").arg(dir).args(args).output().unwrap())
}

fn git(dir: &Path, args: &[&str]) -> String {
    let o = std::process::Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the provenance tests need git");
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// Six equal runs pass the gate (exit 0); a run three times as slow fails it (exit 5), naming
/// the latency figures, the change, the new run and the five runs before it; history.html has
/// a chart per figure.
#[test]
fn the_gate_passes_equal_runs_and_names_a_regression() {
    let _serial = serial();
    let fast = target_process(&["--service-time", "100ms", "--workers", "8"]);
    let slow = target_process(&["--service-time", "300ms", "--workers", "8"]);
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let load = ["-c", "4", "-d", "4s", "--label", "api"];
    for k in 1..=6 {
        let (code, _, err) = run_in(tmp.path(), &fast.url, &runs.join(format!("r{k:02}")), &load);
        assert_eq!(code, 0, "{err}");
    }
    let (code, out, err) = history(&runs, &["--check"]);
    assert_eq!(code, 0, "equal runs must pass the gate:\n{out}\n{err}");
    assert!(
        out.contains("check api: no regression") && out.contains("against 5 baseline run(s)"),
        "{out}"
    );
    assert_eq!(out.matches("req/s").count(), 6, "a row per run:\n{out}");

    let (code, _, err) = run_in(tmp.path(), &slow.url, &runs.join("r07"), &load);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = history(&runs, &["--check", "--label", "api"]);
    assert_eq!(
        code, 5,
        "a three times slower service must fail the gate:\n{out}\n{err}"
    );
    let p50 = out
        .lines()
        .find(|l| l.starts_with("REGRESSION api: p50 regressed from "))
        .unwrap_or_else(|| panic!("p50 is not named:\n{out}"));
    assert!(p50.contains("%") && p50.contains("r07 against"), "{p50}");
    // The baseline is the five runs before the newest.
    assert!(
        !p50.contains("r01") && (2..=6).all(|k| p50.contains(&format!("r{k:02}"))),
        "{p50}"
    );
    assert!(out.contains("REGRESSION api: throughput regressed"), "{out}");

    // For CI: JUnit XML with a suite for the label and a failed case per regressed figure, and
    // the verdict appended to a Markdown summary.
    let xml = tmp.path().join("gate.xml");
    let md = tmp.path().join("summary.md");
    std::fs::write(&md, "earlier step\n").unwrap();
    let (code, _, err) = history(
        &runs,
        &[
            "--check",
            "--junit",
            xml.to_str().unwrap(),
            "--markdown-summary",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 5, "{err}");
    common::validate_junit(&xml);
    let junit = std::fs::read_to_string(&xml).unwrap();
    assert!(
        junit.contains("<testsuite name=\"crest history: api\" tests=\"5\""),
        "{junit}"
    );
    assert!(
        junit.contains("<testcase name=\"p50\" classname=\"regressions\"")
            && junit.contains("<failure message=\"api: p50 regressed from "),
        "{junit}"
    );
    let summary = std::fs::read_to_string(&md).unwrap();
    assert!(summary.starts_with("earlier step\n"), "{summary}");
    assert!(
        summary.contains("❌") && summary.contains("- REGRESSION api: p50 regressed"),
        "{summary}"
    );

    // The JSON gives the regressions as data.
    let (code, out, _) = history(&runs, &["--check", "--format", "json"]);
    assert_eq!(code, 5);
    let j: Value = serde_json::from_str(&out).unwrap();
    let regressions = &j["check"][0]["regressions"];
    assert!(
        regressions.as_array().unwrap().iter().any(|r| r["figure"] == "p95"),
        "{j}"
    );

    let page = std::fs::read_to_string(runs.join("history.html")).unwrap();
    for figure in ["throughput", "p50", "p95", "p99", "error_rate"] {
        assert!(
            page.contains(&format!("id=\"history-{figure}\"")),
            "no chart of {figure}"
        );
    }
    assert_eq!(page.matches("<figure class=\"chart\"").count(), 5);
    assert!(
        !page.contains("<script") && !page.contains("https://"),
        "the page must work offline"
    );
}

/// The label, tags and git checkout reach results.json; a secret tag is redacted; outside a
/// checkout there is no commit. History lists the runs, skips a corrupt document naming why,
/// and gives no verdict on one run.
#[test]
fn provenance_lands_in_results_and_history_reads_it() {
    let target = target_process(&["--service-time", "1ms"]);
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("app.txt"), "v1").unwrap();
    git(&repo, &["add", "app.txt"]);
    git(
        &repo,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "-m",
            "v1",
        ],
    );
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let runs = tmp.path().join("runs");
    let (code, _, err) = run_in(
        &repo,
        &target.url,
        &runs.join("in-repo"),
        &[
            "-n",
            "20",
            "-c",
            "2",
            "--label",
            "checkout",
            "--tag",
            "build=7",
            "--tag",
            "api_token=s3cr3t-value",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let p = &json(&runs.join("in-repo/results.json"))["config"]["provenance"];
    assert_eq!(p["label"], "checkout");
    assert_eq!(p["commit"], head.as_str());
    assert_eq!(p["branch"], "main");
    assert_eq!(p["dirty"], false);
    assert_eq!(p["tags"]["build"], "7");
    assert_eq!(p["tags"]["api_token"], "<redacted>");
    let written = std::fs::read_to_string(runs.join("in-repo/results.json")).unwrap();
    assert!(!written.contains("s3cr3t-value"));

    // Outside a checkout: the label, no commit.
    let outside = tmp.path().join("plain");
    std::fs::create_dir(&outside).unwrap();
    let (code, _, err) = run_in(
        &outside,
        &target.url,
        &runs.join("outside"),
        &["-n", "20", "--label", "checkout"],
    );
    assert_eq!(code, 0, "{err}");
    let p = &json(&runs.join("outside/results.json"))["config"]["provenance"];
    assert_eq!(p["label"], "checkout");
    assert!(p.get("commit").is_none() && p.get("branch").is_none(), "{p}");

    std::fs::create_dir_all(runs.join("broken")).unwrap();
    std::fs::write(runs.join("broken/results.json"), "{ not json").unwrap();
    let (code, out, err) = history(&runs, &["--check"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("checkout (2 runs)") && out.contains(&head[..10]), "{out}");
    assert!(out.contains("build=7") && !out.contains("s3cr3t"), "{out}");
    let skipped = out
        .lines()
        .find(|l| l.starts_with("skipped "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        skipped.contains("broken") && skipped.contains("not a crest results document"),
        "{skipped}"
    );
    // The newest's only earlier run ran another load (2 users, then the default 50): it is no
    // baseline, and the verdict says why (it compared them before, and said "no regression").
    assert!(out.contains("2 users") && out.contains("50 users"), "{out}");
    assert!(
        out.contains("of 1 earlier, 1 ran other loads than its 50 users: no verdict on too little data"),
        "{out}"
    );
    assert!(!out.contains("no regression"), "{out}");
    let (code, out, _) = history(&runs.join("outside"), &["--check"]);
    assert_eq!(code, 0);
    assert!(out.contains("no verdict on too little data"), "{out}");
    // A gate pointed at nothing fails the job: a label misspelt, a directory with no runs.
    let (code, _, err) = history(&runs, &["--check", "--label", "checkuot"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--check --label checkuot: no run under") && err.contains("the labels found: checkout"),
        "{err}"
    );
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (code, _, err) = history(&empty, &["--check"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--check: no runs under") && err.contains("nothing to judge"),
        "{err}"
    );
}

/// A scenario's `label:` names its runs, and `--label` wins over it; a bad `--tag` or label is
/// refused with exit 2, naming the flag or the file's line.
#[test]
fn a_scenarios_label_is_used_and_the_flag_wins() {
    let target = target_process(&["--service-time", "1ms"]);
    let (dir, file) = scenario_file(&format!(
        "label: from-file\ntarget: {}\nsteps:\n  - request: {{path: /}}\nload: {{users: 1, duration: 1s}}\n",
        target.url.trim_end_matches('/')
    ));
    let file = file.to_str().unwrap();
    let (code, _, err) = run_in(dir.path(), file, &dir.path().join("a"), &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        json(&dir.path().join("a/results.json"))["config"]["provenance"]["label"],
        "from-file"
    );
    let (code, _, err) = run_in(dir.path(), file, &dir.path().join("b"), &["--label", "from-flag"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        json(&dir.path().join("b/results.json"))["config"]["provenance"]["label"],
        "from-flag"
    );

    let (code, _, err) = run_in(
        dir.path(),
        &target.url,
        &dir.path().join("c"),
        &["-n", "1", "--tag", "novalue"],
    );
    assert_eq!(code, 2);
    assert!(err.contains("--tag") && err.contains("key=value"), "{err}");
    let (code, _, err) = run_in(
        dir.path(),
        &target.url,
        &dir.path().join("d"),
        &["-n", "1", "--label", "a\tb"],
    );
    assert_eq!(code, 2);
    assert!(err.contains("--label"), "{err}");
    let (_bad_dir, bad) = scenario_file(
        "label: \"\"\ntarget: http://127.0.0.1:9\nsteps:\n  - request: {path: /}\nload: {users: 1, duration: 1s}\n",
    );
    let o = crest().arg("validate").arg(&bad).output().unwrap();
    let (code, _, err) = text(&o);
    assert_eq!(code, 2);
    assert!(err.contains("label") && err.contains(":1:"), "{err}");
}
