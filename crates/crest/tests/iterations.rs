//! A scenario's unit of work is its flow's iteration: seed 003's task (submit, poll until done,
//! fetch the result). These runs step the task-queue example past the demo target's capacity
//! and hold crest's iterations to the target's own counts of tasks submitted and results served,
//! and its answers (optimum, limit) to where tasks per second stopped growing.
#![allow(clippy::unwrap_used)]

mod common;

use common::{scenario_file, target_metric, target_process};
use serde_json::Value;

/// The task-queue example scaled down: polls every 100 ms, no think time, 2 to 12 users in
/// steps of 4 s, against 2 workers whose tasks take 50 ms (factorial) or 150 ms (fetch): about
/// 15 tasks a second at most, reached from about 4 users on.
fn task_queue(target: &str) -> String {
    common::task_flow(target) + "load:\n  stepping: {start: 2, step: 2, every: 4s, max: 12}\n"
}

fn steps(summary: &Value) -> Vec<(u64, f64, f64)> {
    summary["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let it = &g["iterations"];
            (
                g["users"].as_u64().unwrap(),
                it["per_s"].as_f64().unwrap(),
                g["requests"].as_u64().unwrap() as f64
                    / (it["completed"].as_u64().unwrap() + it["failed"].as_u64().unwrap()).max(1) as f64,
            )
        })
        .collect()
}

#[test]
fn task_queue_past_capacity_is_answered_in_tasks() {
    let _serial = common::serial();
    let t = target_process(&["--workers", "2", "--service-time", "50ms", "--queue", "1000"]);
    let (_dir, file) = scenario_file(&task_queue(&t.url));
    let run = common::run_scenario(&file, &[], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let s = run.summary();

    // Every task crest completed is a result the target handed out, and every task the target
    // accepted was submitted by an iteration crest started.
    let results = target_metric(&t.url, "crest_target_task_results_total");
    let submitted = target_metric(&t.url, "crest_target_tasks_submitted_total");
    let it = &s["iterations"];
    let completed = it["completed"].as_u64().unwrap();
    assert_eq!(
        completed, results,
        "completed iterations against the target's results: {it}"
    );
    assert_eq!(it["failed"], 0, "{it}");
    let started = it["started"].as_u64().unwrap();
    assert!(
        started >= submitted && submitted >= completed,
        "{started} started, {submitted} submitted: {it}"
    );
    assert!(completed > 100, "{it}");

    // The answers are in tasks, and sit where tasks per second stopped growing.
    assert_eq!(s["unit"], "iterations");
    let c = &s["capacity"];
    assert_eq!(c["unit"], "iterations", "{c}");
    let levels = steps(&s);
    let best = levels.iter().map(|l| l.1).fold(0.0, f64::max);
    // The optimum (most tasks per second per second of task time) lies before the queue
    // formed: at or below the first level within 15% of the best rate, and with most of that
    // rate (more than half: 2 users' 10.25 tasks/s against 8 users' 17.5 was the optimum of one
    // CI run). A 4 s step's count of some 60 tasks varies by 10% on a busy machine, so the
    // level where the rate flattened is read with that margin.
    let flat = levels.iter().position(|l| l.1 >= 0.85 * best).unwrap();
    assert!(
        flat + 1 < levels.len(),
        "tasks per second must flatten before the last step: {levels:?}"
    );
    let optimal = c["optimal"]["users"]
        .as_u64()
        .unwrap_or_else(|| panic!("no optimum: {c}"));
    let at = levels.iter().position(|l| l.0 == optimal).unwrap();
    assert!(
        at <= flat && levels[at].1 > 0.5 * best,
        "optimum at {optimal} users, tasks flattened at {} users: {levels:?}",
        levels[flat].0
    );
    let limit = c["limit"]["users"].as_u64().unwrap_or_else(|| panic!("no limit: {c}"));
    assert!(limit > optimal, "{c}");
    let md = std::fs::read_to_string(run.dir.path().join("report.md")).unwrap();
    // The finding rests on how far the last step's rate stayed from the flat one's, which a
    // busy machine moves (it was missing from one suite run at load 9): when the figures hold
    // it, the report says it.
    let r: crest_model::Results = serde_json::from_str(&run.results_text()).unwrap();
    let found = crest_analysis::analyze(&r)
        .unwrap()
        .findings
        .iter()
        .any(|f| matches!(f, crest_analysis::findings::Finding::WorkPerIteration(_)));
    // Polls per task rose while tasks per second did not: the request rate hid the limit. A
    // machine busy enough slows the users' polling as much as the queue lengthens it (3 polls
    // a task at 12 users against 4 at 4, at a load of 12): then the finding is not drawn, and
    // the figures are not asked to show it.
    let (first, last) = (levels[flat], levels[levels.len() - 1]);
    assert!(
        !found || last.2 > first.2,
        "requests per task {} at {} users, {} at {}",
        first.2,
        first.0,
        last.2,
        last.0
    );
    assert_eq!(md.contains("Iterations per second stopped growing"), found, "{md}");
    assert!(md.contains("## Iterations"), "{md}");
}

/// A flow whose checks fail counts its iterations as failed, each once, and the limit is where
/// they broke.
#[test]
fn failed_checks_fail_their_iteration_once() {
    let t = target_process(&["--workers", "4", "--service-time", "1ms"]);
    let (_dir, file) = scenario_file(&format!(
        "target: {}\nflows:\n  - name: two\n    on_failure: continue\n    steps:\n      - request: {{path: /a, check: {{status: 200}}}}\n      - request: {{path: /b, check: {{status: 201}}}}\nload:\n  users: 2\n  duration: 1s\n",
        t.url.trim_end_matches('/')
    ));
    let run = common::run_scenario(&file, &[], &[]);
    let s = run.summary();
    let it = &s["iterations"];
    let failed = it["failed"].as_u64().unwrap();
    assert_eq!(it["completed"], 0, "{it}");
    assert!(failed > 0, "{it}");
    // Two requests per iteration, one of them failing its check: the iteration fails once.
    let requests = s["requests"].as_u64().unwrap();
    let checks = run.error_count("check_failed");
    assert_eq!(checks, failed, "one failed check per failed iteration: {it}");
    assert!(
        requests >= 2 * failed && requests <= 2 * failed + 4,
        "{requests} requests for {failed} iterations"
    );
}

/// `throughput_stalls` judges a flow's tasks per second: the request rate kept growing with the
/// polls, so a rule on requests never fired while the queue was already full.
#[test]
fn throughput_stalls_judges_tasks_not_polls() {
    let _serial = common::serial();
    let t = target_process(&["--workers", "2", "--service-time", "50ms", "--queue", "1000"]);
    let text = task_queue(&t.url) + "stop_when:\n  - throughput_stalls\n";
    let (_dir, file) = scenario_file(&text);
    let run = common::run_scenario(&file, &[], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let s = run.summary();
    assert_eq!(s["ended_by"], "condition", "{}", s["stopped_by"]);
    let detail = s["stopped_by"]["detail"].as_str().unwrap();
    assert!(detail.contains("iterations/s"), "{detail}");
    // It stopped before the run's end (`condition`, above), once tasks per second had
    // flattened; in which step depends on how busy the machine kept the rates (the last of 6 in
    // one suite run beside a release build, 15.3 after 16.3 iterations/s).
    let reached = s["segments"].as_array().unwrap().len();
    assert!(reached <= 6, "stopped after {reached} of 6 steps: {detail}");
    let results = target_metric(&t.url, "crest_target_task_results_total");
    assert_eq!(s["iterations"]["completed"].as_u64().unwrap(), results);
}
