//! `--web`: the control API, its token rules, and `/metrics`, against a real `crest target`
//! whose own counters every figure must reconcile with.
#![allow(clippy::unwrap_used)]

mod common;

use common::{
    call, crest, live, live_state as state, run_for, step_names, target_metric, target_process, wait_for, Live,
};
use serde_json::Value;

fn post(l: &Live, path: &str, body: &str) -> Value {
    let (status, text) = call(&l.addr, "POST", path, Some(&l.token), body);
    assert_eq!(status, 200, "{path} {body}: {text}");
    serde_json::from_str(&text).unwrap()
}

fn finished(mut l: Live) -> (Value, Live) {
    let status = l.child.wait().unwrap();
    assert!(status.success() || status.code() == Some(1), "{status:?}");
    let results = std::fs::read_to_string(l.dir.path().join("results.json")).unwrap();
    common::check_counts(&l.dir.path().join("results.json"));
    (serde_json::from_str(&results).unwrap(), l)
}

/// The sum of one family's samples in a scrape, read with the parser the monitor uses.
fn scraped(text: &str, name: &str) -> f64 {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).unwrap();
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => 0.0,
        })
        .sum()
}

#[test]
fn a_spike_driven_by_hand_is_three_steps_with_a_recovery_and_metrics_equal_the_results() {
    let t = target_process(&["--workers", "8", "--service-time", "5ms"]);
    let l = live(&t.url, "--web", "t0k3n-spike", &["--load", "manual"]);
    let s = state(&l);
    assert_eq!(s["users"], 0, "--load manual starts with no users: {s:#}");
    run_for(&l, 1.0);
    assert_eq!(
        target_metric(&t.url, "crest_target_requests_total"),
        0,
        "nothing is sent before a command"
    );

    // GETs change nothing: not the steps, not the users, and a GET of a control path is refused.
    for path in ["/api/stop", "/api/pause", "/api/load"] {
        let (status, _) = call(&l.addr, "GET", path, Some(&l.token), "");
        assert_eq!(status, 405, "GET {path}");
    }
    let again = state(&l);
    assert_eq!(again["steps"], s["steps"]);
    assert_eq!(again["paused"], false);

    post(&l, "/api/load", r#"{"users": 5, "spawn_rate": 100}"#);
    run_for(&l, 4.0);
    post(&l, "/api/load", r#"{"users": 40, "spawn_rate": 200}"#);
    wait_for(&l, "40 users", |s| s["users"] == 40);
    run_for(&l, 4.0);
    let answer = post(&l, "/api/load", r#"{"users": 5, "spawn_rate": 200}"#);
    assert_eq!(answer["step"], "5 users");
    run_for(&l, 6.0);
    post(&l, "/api/stop", "{}");
    let ended = wait_for(&l, "the end", |s| !s["ended"].is_null());
    let (_, metrics) = call(&l.addr, "GET", "/metrics", None, "");
    let (results, l) = finished(l);

    let steps = step_names(&results);
    assert_eq!(steps, ["manual", "5 users", "40 users", "5 users"]);
    assert_eq!(
        results["config"]["concurrency"], 40,
        "the configuration describes the whole run: the most users set by hand"
    );
    assert_eq!(
        results["ended_by"], "condition",
        "stopped by hand, and the results say so"
    );
    assert_eq!(results["stopped_by"]["condition"], "stop (live page)");
    let per_step = |i: u64| common::requests_in_step(&results, i);
    assert_eq!(per_step(0), 0);
    assert!(per_step(1) > 0 && per_step(2) > 0 && per_step(3) > 0);

    let requests: u64 = results["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["count"].as_u64().unwrap())
        .sum();
    let abandoned = results["abandoned"].as_u64().unwrap_or(0);
    assert_eq!(
        requests + abandoned,
        target_metric(&t.url, "crest_target_requests_total"),
        "every request crest counted reached the target"
    );
    assert_eq!(
        scraped(&metrics, "crest_requests_total"),
        requests as f64,
        "/metrics at the end = results.json"
    );
    assert_eq!(
        scraped(&metrics, "crest_request_duration_seconds_count"),
        requests as f64
    );
    let bytes: u64 = results["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["bytes_received"].as_u64().unwrap())
        .sum();
    assert_eq!(scraped(&metrics, "crest_received_bytes_total"), bytes as f64);
    assert_eq!(
        ended["total"]["requests"].as_u64().unwrap(),
        requests,
        "the page's totals too"
    );

    // The report sees a spike done by hand, and how long the service took to recover.
    let (summary, _) = {
        let out = crest().args(["report"]).arg(l.dir.path()).output().unwrap();
        (String::from_utf8_lossy(&out.stdout).into_owned(), out)
    };
    assert!(summary.to_lowercase().contains("recover"), "{summary}");
    assert!(summary.contains("up to 40 users"), "{summary}");
}

/// The findings of the page's verdict, as `(kind, figures, words)`.
fn findings(s: &Value) -> Vec<(String, Value, String)> {
    s["verdict"]["findings"]
        .as_array()
        .map(|v| v.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(|f| {
            let (kind, figures) = f["finding"].as_object()?.iter().next()?;
            Some((kind.clone(), figures.clone(), f["words"].as_str()?.to_string()))
        })
        .collect()
}

#[test]
fn the_page_judges_the_run_so_far_and_its_error_finding_names_what_the_target_refused() {
    // Two workers and two places in the queue for twelve users: most requests get 503.
    let t = target_process(&["--workers", "2", "--queue", "2", "--service-time", "20ms"]);
    let l = live(&t.url, "--web", "verdict-token", &["-c", "12", "-d", "60s"]);
    // The verdict may be some seconds behind the totals (judged less often when judging is
    // slow, as on a busy machine): its figures are those of the seconds it went through.
    let s = wait_for(&l, "an error finding", |s| {
        s["verdict"]["through_s"].as_f64().is_some_and(|t| t >= 3.0)
            && findings(s).iter().any(|(kind, _, _)| kind == "some_failed")
    });
    assert!(s["ended"].is_null(), "judged while running");
    // Monitored values in the reports' words, with their unit (not 1271873536.00 bytes).
    let monitored = s["monitor"].as_array().unwrap();
    assert!(!monitored.is_empty(), "crest watches itself: {s:#}");
    for m in monitored {
        let shown = m["shown"].as_str().unwrap();
        match m["unit"].as_str().unwrap() {
            "bytes" => assert!(shown.ends_with("iB") || shown.ends_with(" B"), "{m}"),
            "percent" => assert!(shown.ends_with('%'), "{m}"),
            _ => assert!(!shown.is_empty(), "{m}"),
        }
    }
    let (_, figures, words) = findings(&s).into_iter().find(|(k, _, _)| k == "some_failed").unwrap();
    let through = s["verdict"]["through_s"].as_f64().unwrap();
    let shown = |field: &str| -> u64 {
        s["points"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["t"].as_f64().unwrap() < through)
            .map(|p| (p[field].as_f64().unwrap() * p["span"].as_f64().unwrap()).round() as u64)
            .sum()
    };
    let failures = figures["failures"].as_u64().unwrap();
    assert_eq!(failures, shown("failed"), "the page's own seconds: {figures:#}");
    assert_eq!(
        figures["requests"].as_u64().unwrap(),
        shown("failed") + shown("ok"),
        "{figures:#}"
    );
    assert_eq!(figures["top"]["outcome"], "http_503", "{figures:#}");
    assert!(
        words.contains(&format!(
            "{} of {} requests failed",
            crest_report::fmt::int(failures),
            crest_report::fmt::int(figures["requests"].as_u64().unwrap())
        )) && words.contains("HTTP 503"),
        "the reports' words, with the figures: {words}"
    );
    assert!(
        matches!(s["verdict"]["validity"].as_str(), Some("valid" | "client_bound")),
        "{:#}",
        s["verdict"]
    );
    assert!(!s["verdict"]["validity_words"].as_str().unwrap().is_empty());
    let refused_then = target_metric(&t.url, "crest_target_rejected_total");
    assert!(
        failures <= refused_then,
        "every failure the page names is a 503 the target sent: {failures} of {refused_then}"
    );
    post(&l, "/api/stop", "{}");
    let (results, _l) = finished(l);
    let failed: u64 = results["stats"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["outcome"] != "success")
        .map(|s| s["count"].as_u64().unwrap())
        .sum();
    assert_eq!(
        failed,
        target_metric(&t.url, "crest_target_rejected_total"),
        "the failures crest counted are the target's 503s"
    );
}

#[test]
fn a_run_killed_after_changes_by_hand_keeps_its_steps() {
    let t = target_process(&["--workers", "8", "--service-time", "5ms"]);
    let mut l = live(&t.url, "--web", "kill-token", &["--load", "manual"]);
    post(&l, "/api/load", r#"{"users": 3, "spawn_rate": 100}"#);
    run_for(&l, 2.0);
    post(&l, "/api/load", r#"{"users": 6, "spawn_rate": 100}"#);
    wait_for(&l, "6 users", |s| s["users"] == 6);
    run_for(&l, 3.0);
    // SIGKILL: nothing runs at the end; the steps must already be in the journal.
    l.child.kill().unwrap();
    l.child.wait().unwrap();
    let dir = l.dir.path();
    assert!(!dir.join("results.json").exists());
    let journal = std::fs::read_to_string(dir.join("journal.jsonl")).unwrap();
    assert_eq!(
        journal.matches(r#"{"entry":"step","#).count(),
        2,
        "one entry per change"
    );

    let out = crest().arg("report").arg(dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let results: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["ended_by"], "unfinished");
    assert_eq!(step_names(&results), ["manual", "3 users", "6 users"]);
    assert_eq!(results["config"]["concurrency"], 6);
    let per_step = |i: u64| common::requests_in_step(&results, i);
    assert_eq!(per_step(0), 0, "nothing before the first command");
    assert!(per_step(1) > 0 && per_step(2) > 0);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("3 users") && md.contains("6 users") && md.contains("up to 6 users"),
        "{md}"
    );
}

#[test]
fn off_loopback_reading_and_control_need_the_token_and_the_token_is_never_written() {
    let t = target_process(&[]);
    let token = "s3cr3t-live-token";
    let l = live(&t.url, "--web=0.0.0.0:0", token, &["-c", "2", "-d", "30s"]);
    for path in ["/", "/api/state", "/metrics"] {
        assert_eq!(
            call(&l.addr, "GET", path, None, "").0,
            401,
            "GET {path} without a token"
        );
        assert_eq!(
            call(&l.addr, "GET", path, Some("wrong"), "").0,
            403,
            "GET {path} with another token"
        );
        assert_eq!(
            call(&l.addr, "GET", path, Some(token), "").0,
            200,
            "GET {path} with the token"
        );
    }
    assert_eq!(
        call(&l.addr, "GET", &format!("/api/state?token={token}"), None, "").0,
        200,
        "the printed URL opens"
    );
    for path in ["/api/pause", "/api/resume", "/api/stop", "/api/load"] {
        assert_eq!(
            call(&l.addr, "POST", path, None, "{}").0,
            401,
            "POST {path} without a token"
        );
        assert_eq!(
            call(&l.addr, "POST", path, Some("wrong"), "{}").0,
            403,
            "POST {path} with another token"
        );
        // The token in the URL opens the page, but never steers: only the header does.
        assert_eq!(
            call(&l.addr, "POST", &format!("{path}?token={token}"), None, "{}").0,
            401,
            "POST {path} with the token in the URL only"
        );
    }
    let (status, body) = call(&l.addr, "POST", "/api/load", Some(token), r#"{"rate": 5}"#);
    assert_eq!(status, 409, "a closed-model run has no rate to set: {body}");
    assert_eq!(call(&l.addr, "POST", "/api/stop", Some(token), "{}").0, 200);
    let (results, l) = finished(l);
    assert!(results["stats"].as_array().is_some());
    common::assert_nowhere(&[token], l.dir.path(), &[]);
}

#[test]
fn on_loopback_reading_is_open_and_control_still_needs_the_token() {
    let t = target_process(&[]);
    // Secrets in the URL and a header: the page shows them redacted, as the reports do.
    let url = format!("{}?api_key=s3cr3t-in-url&page=1", t.url);
    let args = ["-c", "2", "-d", "30s", "-H", "Authorization: Bearer s3cr3t-in-header"];
    let l = live(&url, "--web", "loop-token", &args);
    assert_eq!(call(&l.addr, "GET", "/metrics", None, "").0, 200);
    assert_eq!(call(&l.addr, "GET", "/", None, "").0, 200);
    run_for(&l, 2.0);
    for path in ["/api/state", "/metrics"] {
        let (_, body) = call(&l.addr, "GET", path, None, "");
        assert!(
            !body.contains("s3cr3t") && !body.contains("loop-token"),
            "GET {path} shows a secret: {body}"
        );
    }
    assert!(state(&l)["command_line"].to_string().contains("<redacted>"));
    assert_eq!(call(&l.addr, "POST", "/api/pause", None, "{}").0, 401);
    post(&l, "/api/pause", "{}");
    wait_for(&l, "the pause", |s| s["paused"] == true);
    // Paused: the target's count stops growing once what was in flight has landed.
    run_for(&l, 1.0);
    let before = target_metric(&t.url, "crest_target_requests_total");
    run_for(&l, 2.0);
    assert_eq!(
        target_metric(&t.url, "crest_target_requests_total"),
        before,
        "nothing is sent while paused"
    );
    post(&l, "/api/resume", "{}");
    run_for(&l, 2.0);
    assert!(target_metric(&t.url, "crest_target_requests_total") > before, "resumed");
    post(&l, "/api/stop", "{}");
    let (results, _l) = finished(l);
    let steps = step_names(&results);
    assert_eq!(steps, ["run", "paused", "2 users"]);
}

/// Requests the target counted while the run measured `secs` seconds.
fn counted_over(t: &common::TargetProcess, l: &Live, secs: f64) -> u64 {
    let before = target_metric(&t.url, "crest_target_requests_total");
    run_for(l, secs);
    target_metric(&t.url, "crest_target_requests_total") - before
}

#[test]
fn the_arrival_rate_set_by_hand_paces_the_open_model() {
    let t = target_process(&["--workers", "32"]);
    let l = live(&t.url, "--web", "rate-token", &["--rate", "20", "-d", "60s"]);
    let (status, _) = call(&l.addr, "POST", "/api/load", Some(&l.token), r#"{"users": 5}"#);
    assert_eq!(status, 409, "an open-model run has no users to set");
    run_for(&l, 1.0);
    let at20 = counted_over(&t, &l, 3.0);
    post(&l, "/api/load", r#"{"rate": 200}"#);
    run_for(&l, 1.0);
    let at200 = counted_over(&t, &l, 3.0);
    assert!(
        at200 > at20 * 3,
        "200/s against 20/s: {at200} against {at20} requests in 3 s"
    );
    post(&l, "/api/load", r#"{"rate": 0}"#);
    run_for(&l, 1.0);
    assert_eq!(counted_over(&t, &l, 2.0), 0, "a rate of 0 holds arrivals");
    post(&l, "/api/stop", "{}");
    let (results, _l) = finished(l);
    let steps = step_names(&results);
    assert_eq!(steps, ["run", "200/s", "0/s"]);
    let rates: Vec<Value> = results["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["rate"].clone())
        .collect();
    assert_eq!(rates[1], 200.0);
}

#[test]
fn a_scenarios_profile_is_overridden_by_hand_and_its_stop_rule_still_ends_the_run() {
    // Two workers, two places in the queue: two users are served, twenty are mostly refused.
    let t = target_process(&["--workers", "2", "--queue", "2", "--service-time", "10ms"]);
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("steps.yaml");
    std::fs::write(
        &scenario,
        format!(
            "target: {}\nsteps:\n  - request: {{name: home, path: /}}\nload:\n  stepping: {{start: 2, step: 2, every: 10m, max: 10}}\nstop_when:\n  - error_rate > 20%\n",
            t.url.trim_end_matches('/')
        ),
    )
    .unwrap();
    let l = live(scenario.to_str().unwrap(), "--web", "scenario-token", &[]);
    run_for(&l, 2.0);
    assert_eq!(state(&l)["users"], 2, "the scenario's profile first");
    post(&l, "/api/load", r#"{"users": 20, "spawn_rate": 100}"#);
    let (results, _l) = finished(l);
    assert_eq!(results["ended_by"], "condition", "{:#}", results["stopped_by"]);
    assert_eq!(results["stopped_by"]["condition"], "error_rate > 20%");
    let steps = step_names(&results);
    assert_eq!(steps.last().map(String::as_str), Some("20 users"), "{steps:?}");
    assert_eq!(results["config"]["concurrency"], 20);
    let refused = target_metric(&t.url, "crest_target_rejected_total");
    assert!(refused > 0, "the target refused the twenty");
}

/// Users set on the page beyond what the process's open-file limit holds (one connection each)
/// are refused, naming the limit, and the run goes on as it was; users within it are taken.
#[test]
fn users_beyond_the_open_file_limit_are_refused_on_the_page() {
    let t = target_process(&["--workers", "8", "--service-time", "5ms"]);
    let l = common::live_with_file_limit(512, &t.url, "--web", "t0k3n-limit", &["--load", "manual"]);
    let (status, text) = common::call(&l.addr, "POST", "/api/load", Some(&l.token), r#"{"users": 5000}"#);
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("5000 users") && text.contains("open-file limit") && text.contains("512"),
        "{text}"
    );
    assert_eq!(state(&l)["steps"].as_array().unwrap().len(), 1, "no step was started");
    assert_eq!(post(&l, "/api/load", r#"{"users": 4}"#)["step"], "4 users");
    post(&l, "/api/stop", "{}");
    let (results, _l) = finished(l);
    assert_eq!(step_names(&results), ["manual", "4 users"]);
}
