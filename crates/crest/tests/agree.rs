//! Answers that agree with each other and with the server's own counters, past the limit: every
//! throughput an answer quotes is of successful work in the run's unit, at most what the server
//! could serve, and the optimum, saturation and breaking point come in that order. (Every
//! analysis these runs make is also checked by `crest_analysis::invariants` inside the debug
//! binary, which panics on a contradiction.)
#![allow(clippy::unwrap_used)]

mod common;

use common::{
    crest, edit, example, pg_url, run_scenario, scenario_file, target_metric, target_process, target_value, task_flow,
};
use serde_json::Value;

/// What the target's workers could serve per second, from its own clock: `workers` over the
/// time each job really held a worker (a sleep overruns its service time on a busy machine).
fn served_capacity(url: &str, workers: f64) -> f64 {
    let held =
        target_value(url, "crest_target_worker_busy_seconds_total") / target_value(url, "crest_target_completed_total");
    workers / held
}

/// Every throughput quoted as an answer: the capacity answers' and each step's successful rate.
fn quoted(s: &Value) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for k in ["optimal", "limit"] {
        if let Some(x) = s["capacity"][k]["per_s"].as_f64() {
            out.push((format!("capacity.{k}"), x));
        }
    }
    for g in s["segments"].as_array().unwrap() {
        out.push((format!("step {}", g["name"]), g["success_per_s"].as_f64().unwrap()));
    }
    out
}

/// A service of 4 workers of 20 ms with room for 4 waiting requests, stepped from 2 to 64 users:
/// past 8 users most requests are instant 503s. crest's counts are the server's, no answer
/// quotes more than the 200/s the workers can do, and the limit is where the 503s began.
#[test]
fn a_503_storm_quotes_only_what_the_server_served() {
    let _serial = common::serial();
    let t = target_process(&["--workers", "4", "--service-time", "20ms", "--queue", "4"]);
    let run = common::run(&t.url, &["-c", "2,4,8,32,64", "-d", "2s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let s = run.summary();
    assert_eq!(
        s["requests"].as_u64().unwrap(),
        target_metric(&t.url, "crest_target_requests_total")
    );
    assert_eq!(
        s["successes"].as_u64().unwrap(),
        target_metric(&t.url, "crest_target_served_total")
    );
    let rejected = target_metric(&t.url, "crest_target_rejected_total");
    assert!(rejected > 1000, "the storm: {rejected} rejected");
    assert_eq!(s["failures"].as_u64().unwrap(), rejected, "{}", s["errors"]);

    let cap = served_capacity(&t.url, 4.0);
    for (what, x) in quoted(&s) {
        assert!(
            x <= 1.1 * cap,
            "{what} quotes {x}/s, past the {cap:.1}/s the workers could serve"
        );
    }
    // The all-requests rate of the storm is far past it: it is shown beside, never as an answer.
    let storm = s["segments"][4]["throughput_rps"].as_f64().unwrap();
    assert!(storm > 2.0 * cap, "64 users' rate, 503s included: {storm}");
    let c = &s["capacity"];
    assert_eq!(c["limit"]["why"], "failed", "{c}");
    let limit = c["limit"]["users"].as_u64().unwrap();
    assert!(limit == 32 || limit == 8, "the 503s begin past 8 held: {c}");
    if let Some(o) = c["optimal"]["users"].as_u64() {
        assert!(o < limit, "optimum {o} at or past the limit {limit}: {c}");
    }
    let md = std::fs::read_to_string(run.dir.path().join("report.md")).unwrap();
    assert!(md.contains("| ok req/s | all req/s |"), "{md}");
}

/// Seed 003's task flow against 2 workers whose tasks hold one 50 ms (factorial) or 150 ms
/// (fetch): about 15 tasks a second. Polls multiply the requests as the queue lengthens, so a
/// search in requests never found the plateau; in tasks it finds it within 10% of what the
/// server completed.
#[test]
fn find_on_a_flow_searches_in_tasks_and_finds_the_servers_rate() {
    let _serial = common::serial();
    let t = target_process(&["--workers", "2", "--service-time", "50ms", "--queue", "1000"]);
    // The search sets the load; a scenario names one all the same.
    // One kind of task only, so that every probe's mix of service times is the run's: with the
    // factorial tasks beside them, a probe that drew more of the short ones could rightly serve
    // more tasks a second than the run's average.
    let flow = task_flow(&t.url);
    let flow = &flow[..flow.find("  - name: factorial").unwrap()];
    let (dir, file) = scenario_file(&format!("{flow}load:\n  users: 1\n  duration: 5s\n"));
    let out_dir = dir.path().join("out");
    let out = crest()
        .arg("find")
        .arg(&file)
        .args([
            "--probe",
            "6s",
            "--budget",
            "150s",
            "--max",
            "64",
            "--quiet",
            "--summary-json",
            "-",
            "--out",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let s: Value = serde_json::from_str(&stdout).unwrap();
    let c = &s["capacity"];
    assert_eq!(c["unit"], "iterations", "{c}");
    let search = &c["search"];
    let max = search["max_per_s"].as_f64().unwrap();
    // Tasks a second at full use of the two workers, as the server's own clock measured them.
    let tasks = served_capacity(&t.url, 2.0);
    assert!(
        (max - tasks).abs() <= 0.1 * tasks,
        "max {max} tasks/s against the server's {tasks:.2}: {search}"
    );
    // Requests per second are beside it, and larger (a task is a submit, its polls and a fetch).
    assert!(search["max_throughput_rps"].as_f64().unwrap() > 2.0 * max, "{search}");
    // Every completed iteration was a result the server handed out.
    assert_eq!(
        s["iterations"]["completed"].as_u64().unwrap(),
        target_metric(&t.url, "crest_target_task_results_total")
    );
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(md.contains("iterations/s successful"), "{md}");
    assert!(!md.contains("plateau of") || md.contains("iterations/s from"), "{md}");
}

/// A spike on the task flow, judged in tasks: the baseline's p95 is a task's time (a submit, its
/// polls of 100 ms and a fetch), not a poll's millisecond, and recovery is back to it.
#[test]
fn spike_recovery_is_judged_on_the_tasks_time() {
    let _serial = common::serial();
    let t = target_process(&["--workers", "2", "--service-time", "20ms", "--queue", "1000"]);
    let text = task_flow(&t.url) + "load:\n  spike: {users: 2, to: 16, after: 4s, for: 3s, then: 8s}\n";
    let (_dir, file) = scenario_file(&text);
    let run = common::run_scenario(&file, &[], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let s = run.summary();
    let r = &s["recovery"];
    assert_eq!(r["unit"], "iterations", "{r}");
    let base = r["baseline_p95_ms"].as_f64().unwrap();
    assert!(
        base >= 100.0,
        "a task polls every 100 ms at least once: p95 {base} ms: {r}"
    );
    let request_p95 = s["latency_ms"]["p95"].as_f64().unwrap();
    assert!(
        base > 3.0 * request_p95,
        "task p95 {base} ms against requests' {request_p95} ms"
    );
}

/// A SQL run counts transactions (each once; its statements are sub-measures): its report says
/// transactions wherever it counts the run's work, never requests.
#[test]
fn a_sql_stepping_run_is_reported_in_transactions() {
    let _serial = common::serial();
    let Some(url) = pg_url() else { return };
    let out = crest().args(["pg", "init", "--scale", "1", &url]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = edit(
        &example("tpcb.yaml"),
        "load:\n  rate: 2500\n  duration: 1m\n  max_in_flight: 10",
        "load:\n  stepping: {start: 1, step: 2, every: 2s, max: 5}",
    );
    let text = edit(&text, "  - p99 < 50ms\n", "");
    let (_d, file) = scenario_file(&text);
    let run = run_scenario(&file, &[("CREST_PG_URL", &url)], &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let s = run.summary();
    assert_eq!(s["unit"], "transactions");
    assert_eq!(s["capacity"]["unit"], "transactions");
    let md = std::fs::read_to_string(run.dir.path().join("report.md")).unwrap();
    assert!(
        md.contains("| step | load | transactions | failed | ok transactions/s | all transactions/s |"),
        "{md}"
    );
    assert!(md.contains("\nTransactions: "), "{md}");
    assert!(!md.contains("req/s"), "{md}");
}

/// A staged open model past the limit (200/s, 250/s, then 900/s against 4 workers of 10 ms that
/// serve about 390/s): it sends every arrival, so no report says it fell short of its peak; and
/// its last step, a flow of one request, quotes one successful rate in its requests, its
/// iterations, its limit and its bottleneck.
#[test]
fn a_staged_rate_reads_the_same_in_every_report_and_every_unit() {
    let _serial = common::serial();
    let t = target_process(&["--workers", "4", "--service-time", "10ms", "--queue", "8"]);
    let (_dir, file) = scenario_file(&format!(
        "target: {}\nload:\n  start_rate: 200\n  rate_stages:\n    - {{hold: 3s}}\n    - {{ramp_to: 250, over: 0s}}\n    - {{hold: 3s}}\n    - {{ramp_to: 900, over: 0s}}\n    - {{hold: 3s}}\n  max_in_flight: 64\nflows:\n  - name: home\n    steps:\n      - request: {{path: /}}\n",
        t.url
    ));
    let said = crest().arg("validate").arg(&file).output().unwrap();
    let said = String::from_utf8_lossy(&said.stdout);
    assert!(said.contains("open model, up to 900 iterations/s,"), "{said}");
    let run = run_scenario(&file, &[], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let s = run.summary();
    let requests = s["requests"].as_u64().unwrap();
    assert_eq!(requests, target_metric(&t.url, "crest_target_requests_total"));
    let (arrivals, dropped) = (s["arrivals"].as_u64().unwrap(), s["dropped"].as_u64().unwrap());
    assert_eq!(arrivals, requests + dropped, "{s}");
    assert_eq!(s["target_rps"], 900.0);
    assert_eq!(s["target_varies"], true);
    // Over the same window, the schedule's mean and what was sent differ only by the drops.
    let (mean, achieved) = (
        s["target_mean_rps"].as_f64().unwrap(),
        s["achieved_rps"].as_f64().unwrap(),
    );
    assert!(
        (mean - achieved - dropped as f64 / s["duration_s"].as_f64().unwrap()).abs() < 1e-6,
        "{s}"
    );
    // One sentence, in every report, with counts rather than a peak set against a mean.
    let open = s["open_model"].as_str().unwrap().to_string();
    assert!(open.starts_with("asked up to 900/s ("), "{open}");
    assert!(
        open.contains(&format!("arrivals due, {} sent", thousands(requests))),
        "{open}"
    );
    assert!(!open.contains(".0/s"), "{open}");
    let md = std::fs::read_to_string(run.dir.path().join("report.md")).unwrap();
    assert!(md.contains(&format!("Open model: {open}")), "{md}");
    let html = std::fs::read_to_string(run.dir.path().join("report.html")).unwrap();
    let escaped = open.replace('/', "&#x2f;");
    assert!(html.contains(&format!("Open model: {escaped}")), "{open}");
    assert!(!html.contains("achieved") && !md.contains("achieved"), "{md}");
    // The jumps (ramps of no time) are no steps: three holds, no empty rows between them.
    let names: Vec<&str> = s["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["hold 200/s", "hold 250/s", "hold 900/s"], "{s}");
    assert!(!md.contains("not judged: empty") && !md.contains("ramp to"), "{md}");

    // The last step: the limit, past the workers' rate.
    let last = s["segments"].as_array().unwrap().last().unwrap().clone();
    let ok = last["success_per_s"].as_f64().unwrap();
    // The same rule over the same successes; an iteration ends a hair after its one request,
    // which on a busy machine can put it in the next second: a unit or two apart at most.
    assert!(
        (last["iterations"]["per_s"].as_f64().unwrap() - ok).abs() <= 1.0,
        "{last}"
    );
    let c = &s["capacity"];
    assert_eq!(c["limit"]["name"], "hold 900/s", "{c}");
    assert_eq!(c["limit"]["per_s"], last["iterations"]["per_s"], "{c}");
    let b = &s["bottleneck"];
    if let Some(best) = b["figures"]["best_rps"].as_f64() {
        assert_eq!(best, ok, "{b}");
    }
    let cap = served_capacity(&t.url, 4.0);
    assert!(
        ok <= 1.1 * cap,
        "{ok}/s quoted against the {cap:.1}/s the workers could serve"
    );
}

/// Stepped from 5 to 12 users against 4 workers with room for 8 waiting: 5 users already keep
/// every worker busy, so the run cannot measure a worker's own time. The bottleneck says the
/// count is an upper bound, and gives crest's CPU at the knee, not its average over the run.
/// (The CPU a storm of 503s burns past such a plateau is judged in the analysis's fixtures: a
/// storm here could make crest itself the limit on a busy machine.)
#[test]
fn a_run_saturated_from_its_lightest_load_bounds_the_workers() {
    let _serial = common::serial();
    let t = target_process(&["--workers", "4", "--service-time", "10ms", "--queue", "8"]);
    let run = common::run(&t.url, &["-c", "5,12", "-d", "3s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let s = run.summary();
    assert_eq!(
        s["requests"].as_u64().unwrap(),
        target_metric(&t.url, "crest_target_requests_total")
    );
    let b = &s["bottleneck"];
    assert_eq!(b["kind"], "concurrency", "{b}");
    let f = &b["figures"];
    assert_eq!(f["at_most"], true, "{b}");
    assert!(f["concurrency"].as_u64().unwrap() <= 5, "{b}");
    let sentence = b["sentence"].as_str().unwrap();
    assert!(sentence.contains("behaves like at most "), "{sentence}");
    assert!(sentence.contains("a lighter load would tell"), "{sentence}");
    // crest's CPU at 12 users: its CPU per request over the run at that step's rate.
    let r = run.results();
    let cpu_s = r["client"]["cpu_s"].as_f64().unwrap();
    let all: u64 = r["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["requests"].as_u64().unwrap())
        .sum();
    let knee = s["segments"][1]["throughput_rps"].as_f64().unwrap();
    let crest = b["others"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["subject"] == "crest")
        .unwrap();
    let expect = cpu_s / all as f64 * knee * 100.0;
    assert!(
        (crest["used"].as_f64().unwrap() - expect).abs() < 0.05 * expect.max(1.0),
        "{crest} against {expect}"
    );
    assert!(
        sentence.contains("crest ") && sentence.contains(" there ("),
        "{sentence}"
    );
}

/// A run of one rate names it, as a rate is spelt everywhere, in its step row and its load.
#[test]
fn a_run_of_one_rate_names_it_in_its_step() {
    let _serial = common::serial();
    let t = target_process(&["--workers", "4", "--service-time", "1ms"]);
    let run = common::run(&t.url, &["--rate", "100", "-d", "1s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let md = std::fs::read_to_string(run.dir.path().join("report.md")).unwrap();
    assert!(md.contains("\n| run | 100/s | "), "{md}");
    assert!(md.contains("| Load | open model, up to 100 req/s, "), "{md}");
    let s = run.summary();
    assert!(s["open_model"].as_str().unwrap().starts_with("asked 100/s: "), "{s}");
}

/// A count as the reports print it: `4,350`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `--timeout 15ms` against service times spread from 10 to 30 ms: the timeout bounds what is
/// counted a success, so no success took longer, although the timer's wheel wakes at the first
/// millisecond past the deadline and a response can be read in that millisecond. Every request
/// that ended is the server's, whatever crest called it.
#[test]
fn no_success_takes_longer_than_the_timeout() {
    let _serial = common::serial();
    let t = target_process(&[
        "--workers",
        "8",
        "--service-time",
        "20ms",
        "--distribution",
        "uniform",
        "--queue",
        "64",
    ]);
    let run = common::run(&t.url, &["-c", "4", "-d", "3s", "--timeout", "15ms", "--log-requests"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let s = run.summary();
    let rows = common::read_log(&run.dir.path().join("request-log.csv.gz"));
    // From the send: the total counts from when the iteration was due, a few µs of crest's own
    // before it.
    let took = |r: &std::collections::BTreeMap<String, String>| {
        let us = |k: &str| r[k].parse::<u64>().unwrap();
        us("total_us") - (us("start_us") - us("intended_us"))
    };
    let ok: Vec<u64> = rows.iter().filter(|r| r["outcome"] == "success").map(took).collect();
    let timed_out: Vec<u64> = rows.iter().filter(|r| r["outcome"] == "timeout").map(took).collect();
    assert!(
        ok.len() > 20 && timed_out.len() > 20,
        "{} ok, {} timed out",
        ok.len(),
        timed_out.len()
    );
    let requests = s["requests"].as_u64().unwrap();
    assert_eq!((ok.len() + timed_out.len()) as u64, requests);
    // Every success is one the server served. A request written on a new connection just
    // before its 15 ms ran out can be closed before the server read it: the server counts at
    // most crest's requests, and any it missed are among the timeouts.
    let seen = target_metric(&t.url, "crest_target_requests_total");
    assert!(
        seen <= requests && requests - seen <= timed_out.len() as u64,
        "server {seen}, crest {requests}"
    );
    assert!(ok.len() as u64 <= target_metric(&t.url, "crest_target_served_total"));
    // Each field of the log is rounded to the µs on its own: one more may show.
    assert!(
        ok.iter().all(|us| *us <= 15_001),
        "successes past 15 ms: {:?}",
        ok.iter().filter(|us| **us > 15_001).collect::<Vec<_>>()
    );
    assert!(timed_out.iter().all(|us| *us >= 14_999), "{timed_out:?}");
    // A timed-out request's status is not counted, even when its answer came whole.
    assert_eq!(
        s["status_codes"]["200"].as_u64().unwrap_or(0),
        ok.len() as u64,
        "{}",
        s["status_codes"]
    );
}
