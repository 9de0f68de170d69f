//! `crest import openapi` of crest target's own spec (examples/openapi/target.yaml), run against
//! a `crest target`: every request it makes is one the target accepts (no 400, 401 or 404), the
//! token, the plan's id and the task's id carried from the responses that gave them, and the
//! target counts what crest says it sent.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, run_scenario, target_metric, target_process};
use std::path::Path;

fn spec() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/openapi/target.yaml")
        .display()
        .to_string()
}

fn import(dir: &Path, extra: &[&str]) -> std::process::Output {
    crest()
        .args(["import", "openapi", &spec(), "--out"])
        .arg(dir.join("s.yaml"))
        .args(extra)
        .output()
        .unwrap()
}

/// The scenario runs once by one user; a test asks for more by editing its load.
#[test]
fn the_target_spec_runs_against_the_target_without_a_rejected_request() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let out = import(dir.path(), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("carries ${token}"), "{stderr}");
    let scenario = dir.path().join("s.yaml");
    let text = std::fs::read_to_string(&scenario).unwrap();
    assert!(text.contains("Authorization: Bearer ${token}"), "{text}");
    assert!(text.contains("/plans/${plan_id}"), "{text}");
    assert!(text.contains("/tasks/submissions/${submission_id}"), "{text}");
    assert!(
        !text.contains("password: demo"),
        "the password is in the .env file:\n{text}"
    );
    let env = std::fs::read_to_string(dir.path().join("s.env")).unwrap();
    assert!(env.contains("PASSWORD='demo'"), "{env}");

    // The load is set at run time, over the import's single pass: 3 users, 4 iterations each.
    let (users, loops) = (3u64, 4u64);
    let t = target_process(&["--service-time", "1ms", "--pool-work", "1ms"]);
    let target = t.url.trim_end_matches('/').to_string();
    let env_file = dir.path().join("s.env").display().to_string();
    let run = run_scenario(
        &scenario,
        &[("CREST_TARGET", &target)],
        &[
            "--env-file",
            &env_file,
            "-c",
            &users.to_string(),
            "-n",
            &format!("{loops}x"),
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let s = run.summary();
    let iterations = users * loops;
    let operations = 9;
    assert_eq!(s["requests"].as_u64(), Some(iterations * operations), "{s}");
    assert_eq!(s["failures"].as_u64(), Some(0), "{}", s["errors"]);
    let results = run.results();
    assert_eq!(
        results["totals"]["failures"].as_u64().unwrap_or(0),
        0,
        "{}",
        run.results_text()
    );

    // What crest sent, by name, is what the target counted, by endpoint.
    let sent = |name: &str| {
        s["names"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name)
            .and_then(|x| x["requests"].as_u64())
            .unwrap_or_else(|| panic!("{name} not in {}", s["names"]))
    };
    for name in [
        "POST /auth/token",
        "POST /plans",
        "GET /plans/{id}",
        "PUT /plans/{id}/state",
    ] {
        let metric = |m: &str| target_metric(&t.url, &format!("{m}{{endpoint=\"{name}\"}}"));
        assert_eq!(sent(name), iterations, "{name}: crest sent");
        assert_eq!(
            metric("crest_target_api_requests_total"),
            iterations,
            "{name}: the target got"
        );
        assert_eq!(
            metric("crest_target_api_served_total"),
            iterations,
            "{name}: the target served"
        );
        for reason in ["bad_request", "unauthorized", "not_found", "conflict"] {
            let rejected = target_metric(
                &t.url,
                &format!("crest_target_api_rejected_total{{endpoint=\"{name}\",reason=\"{reason}\"}}"),
            );
            assert_eq!(rejected, 0, "{name}: {reason}");
        }
    }
    assert_eq!(
        target_metric(&t.url, "crest_target_api_requests_total{endpoint=\"other\"}"),
        0
    );
    assert_eq!(
        target_metric(&t.url, "crest_target_tasks_submitted_total"),
        sent("POST /tasks/submissions")
    );
    // The target counts every request but /health, /metrics and task reads.
    let uncounted = sent("GET /health") + sent("GET /tasks/submissions/{id}");
    assert_eq!(
        target_metric(&t.url, "crest_target_requests_total") + uncounted,
        s["requests"].as_u64().unwrap()
    );
}

#[test]
fn operations_are_taken_as_asked_with_the_token_they_need() {
    let dir = tempfile::tempdir().unwrap();
    let out = import(dir.path(), &["--operation", "getPlan", "--operation", "POST /plans"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let text = std::fs::read_to_string(dir.path().join("s.yaml")).unwrap();
    let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} not in\n{text}"));
    // The token's issuer was added, first; the user's order is kept after it.
    assert!(at("path: /auth/token") < at("path: /plans/"), "{text}");
    assert!(at("path: /plans/") < at("path: /plans\n"), "{text}");
    assert!(!text.contains("/tasks/"), "{text}");

    let bad = import(dir.path(), &["--operation", "nope"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no operation `nope`"));
}

#[test]
fn what_is_not_openapi_3_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let swagger = dir.path().join("swagger.yaml");
    std::fs::write(&swagger, "swagger: '2.0'\ninfo: {title: t, version: '1'}\npaths: {}\n").unwrap();
    let out = crest().args(["import", "openapi"]).arg(&swagger).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Swagger 2.0"), "{stderr}");
}
