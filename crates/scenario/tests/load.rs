//! Scenario files in, plans or located errors out.
#![allow(clippy::unwrap_used)]

use crest_flow::plan::{Body, JsonTemplate, Step};
use crest_model::plan::{LoadModel, OnCap};
use crest_model::step::{Level, StepKind};
use crest_scenario::{load_str, Scenario, ScenarioError};
use std::path::Path;
use std::time::Duration;

fn env(name: &str) -> Option<String> {
    (name == "API_TOKEN").then(|| "t0ken".to_string())
}

fn ok(text: &str) -> Scenario {
    load_str("s.yaml", text, Path::new("."), &env).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> ScenarioError {
    load_str("s.yaml", text, Path::new("."), &env).unwrap_err()
}

const TASKS: &str = r#"
target: http://127.0.0.1:9
defaults:
  headers:
    Authorization: Bearer ${env:API_TOKEN}
  timeout: 5s
variables:
  client: c-${user}
flows:
  - name: http-fetch
    weight: 5
    steps:
      - request:
          method: POST
          path: /tasks/submissions
          json: {type: http-fetch, url: "http://example.test/${client}", retries: 3, urgent: true}
          extract:
            id: $.id
          check:
            status: [200, 201]
      - poll:
          request:
            name: GET /tasks/submissions/{id}
            path: /tasks/submissions/${id}
            extract:
              status: $.status
            check:
              json: {"$.status": SUCCEEDED}
          until:
            status: [SUCCEEDED, FAILED]
          every: 1s
          max_wait: 30s
      - request:
          path: /tasks/${id}
      - think: 1s..2s
  - name: factorial
    weight: 1
    steps:
      - loop:
          times: 2
          steps:
            - request: {path: "/tasks/factorial?n=${random_int(1, 20)}"}
load:
  stepping: {start: 40, step: 40, every: 10m, max: 120}
stop_when:
  - error_rate > 1%
  - p95 > 3x first
thresholds:
  - p95 < 10s
  - error_rate < 1%
"#;

#[test]
fn the_task_queue_scenario_compiles() {
    let s = ok(TASKS);
    assert_eq!(s.flow.flows.len(), 2);
    assert_eq!((s.flow.flows[0].weight, s.flow.flows[1].weight), (5, 1));
    // Stepping: 40, 80, 120 users, 10 minutes each, one segment per step.
    assert_eq!(
        s.plan.segments().iter().map(|g| g.users.unwrap()).collect::<Vec<_>>(),
        vec![40, 80, 120]
    );
    assert_eq!(s.plan.segments()[2].start, Duration::from_secs(1200));
    assert_eq!(s.plan.stop().duration, Some(Duration::from_secs(1800)));
    assert!(matches!(s.plan.load(), LoadModel::Closed { iterations: None, .. }));
    assert_eq!(
        s.plan.names(),
        vec![
            "POST /tasks/submissions",
            "GET /tasks/submissions/{id}",
            "GET /tasks/{id}",
            "GET /tasks/factorial"
        ]
    );
    assert_eq!(
        s.plan.thresholds().iter().map(|t| t.text()).collect::<Vec<_>>(),
        vec!["p95 < 10s", "error_rate < 1%"]
    );
    let Step::Request(post) = &s.flow.flows[0].steps[0] else {
        panic!()
    };
    assert_eq!(post.method, "POST");
    let Body::Json(JsonTemplate::Object(fields)) = &post.body else {
        panic!("{:?}", post.body)
    };
    // YAML scalars keep their JSON types; strings with templates stay templates.
    let get = |k: &str| fields.iter().find(|(n, _)| n == k).map(|(_, v)| v).unwrap();
    assert!(
        matches!(get("retries"), JsonTemplate::Value(serde_json::Value::Number(_))),
        "{:?}",
        get("retries")
    );
    assert!(matches!(
        get("urgent"),
        JsonTemplate::Value(serde_json::Value::Bool(true))
    ));
    assert!(matches!(get("url"), JsonTemplate::String(_)));
    let Step::Poll(poll) = &s.flow.flows[0].steps[1] else {
        panic!()
    };
    assert_eq!(
        poll.until,
        vec![(
            "status".to_string(),
            vec!["SUCCEEDED".to_string(), "FAILED".to_string()]
        )]
    );
    assert_eq!(poll.max_wait, Duration::from_secs(30));
    assert!(s.flow.headers[0].1.has_secret());
}

#[test]
fn profiles_become_segments() {
    let base = "target: http://127.0.0.1:9\nsteps: [{request: {path: /}}]\nload:\n";
    let s = ok(&format!("{base}  threads: 5\n  loops: 10\n"));
    assert!(matches!(
        s.plan.load(),
        LoadModel::Closed {
            iterations: Some(10),
            ..
        }
    ));
    assert_eq!(s.plan.segments()[0].kind, StepKind::Loops { threads: 5, loops: 10 });
    assert_eq!(
        s.plan.stop().duration,
        None,
        "threads x loops ends when the loops are done"
    );

    let s = ok(&format!("{base}  run_once: 300\n  ramp_up: 30s\n"));
    let LoadModel::Closed { users, iterations } = &s.plan.load() else {
        panic!()
    };
    assert_eq!((users.max(), *iterations), (300, Some(1)));

    let s = ok(&format!("{base}  rate: 2500\n  duration: 1h\n  max_in_flight: 10\n"));
    assert_eq!(s.plan.load().max_concurrency(), 10);

    let s = ok(&format!(
        "{base}  stages:\n    - {{ramp_to: 100, over: 1m}}\n    - {{hold: 5m}}\n"
    ));
    assert_eq!(
        s.plan.segments().iter().map(|g| g.kind.clone()).collect::<Vec<_>>(),
        vec![StepKind::Ramp(Level::Users(100)), StepKind::Hold(Level::Users(100))]
    );
    assert_eq!(s.plan.stop().duration, Some(Duration::from_secs(360)));

    let s = ok(&format!(
        "{base}  spike: {{users: 80, to: 200, after: 2m, for: 1m, then: 5m}}\n"
    ));
    assert_eq!(
        s.plan.segments().iter().map(|g| g.users.unwrap()).collect::<Vec<_>>(),
        vec![80, 200, 80]
    );
    assert_eq!(s.plan.segments()[2].start, Duration::from_secs(180));

    let s = ok(&format!(
        "{base}  rate_stages:\n    - {{ramp_to: 50, over: 10s}}\n  start_rate: 10\n"
    ));
    assert!(matches!(s.plan.load(), LoadModel::Open { .. }));
}

/// `on_cap` queues or drops an open model's arrivals at its cap; given to the closed model, or
/// as anything else, it is refused where it stands.
#[test]
fn on_cap_is_read_for_the_open_model_and_refused_elsewhere_where_it_stands() {
    let base = "target: http://127.0.0.1:9\nsteps: [{request: {path: /}}]\nload:\n";
    let s = ok(&format!(
        "{base}  {{rate: 200, duration: 1s, max_in_flight: 2, on_cap: queue}}\n"
    ));
    assert!(matches!(
        s.plan.load(),
        LoadModel::Open {
            max_in_flight: 2,
            on_cap: OnCap::Queue,
            ..
        }
    ));
    let s = ok(&format!("{base}  {{rate: 200, duration: 1s}}\n"));
    assert!(matches!(
        s.plan.load(),
        LoadModel::Open {
            on_cap: OnCap::Drop,
            ..
        }
    ));
    let e = err(&format!("{base}  {{users: 2, duration: 1s, on_cap: queue}}\n"));
    assert_eq!(
        first(&e).1,
        "load: on_cap: applies to the open model only (a rate of arrivals), whose arrivals can find the cap on requests in flight reached"
    );
    assert_eq!(first(&e).0, Some((4, 36)), "{e}");
    let e = err(&format!("{base}  {{rate: 200, duration: 1s, on_cap: wait}}\n"));
    assert_eq!(
        (first(&e).0, first(&e).1),
        (
            Some((4, 37)),
            "load: on_cap: \"wait\" is neither queue nor drop".to_string()
        ),
        "{e}"
    );
}

fn first(e: &ScenarioError) -> (Option<(usize, usize)>, String, Option<String>) {
    let p = &e.problems[0];
    (p.at, p.message.clone(), p.hint.clone())
}

#[test]
fn an_unknown_key_is_located_with_a_suggestion() {
    let e = err("target: http://127.0.0.1:9\nsteps:\n  - request:\n      path: /\n      methd: POST\nload: {users: 1, duration: 1s}\n");
    let (at, msg, hint) = first(&e);
    assert_eq!(at, Some((5, 7)), "{e}");
    assert!(msg.contains("unknown key `methd`"), "{msg}");
    assert_eq!(hint.as_deref(), Some("did you mean `method`?"));
    assert!(e.to_string().starts_with("s.yaml:5:7: "), "{e}");
}

#[test]
fn a_wrong_type_is_located() {
    let e = err("target: http://127.0.0.1:9\nsteps: [{request: {path: /}}]\nload:\n  users: many\n  duration: 1s\n");
    let (at, msg, _) = first(&e);
    assert_eq!(at.map(|a| a.0), Some(4), "{e}");
    assert!(msg.contains("load.users") || msg.contains("invalid digit"), "{msg}");
}

#[test]
fn templates_are_checked_for_variables_and_functions() {
    let e = err(r#"target: http://127.0.0.1:9
variables:
  token: abc
steps:
  - request:
      path: /a/${tokn}
  - request:
      path: /b/${randon_int(1, 5)}
load: {users: 1, duration: 1s}
"#);
    assert_eq!(e.problems.len(), 2, "{e}");
    let (at, msg, hint) = first(&e);
    assert_eq!(at.map(|a| a.0), Some(6));
    assert!(msg.contains("undefined variable `tokn`"), "{msg}");
    assert_eq!(hint.as_deref(), Some("did you mean `token`?"));
    assert_eq!(e.problems[1].at.map(|a| a.0), Some(8));
    assert!(e.problems[1].message.contains("did you mean random_int()"), "{e}");
}

#[test]
fn a_variable_is_only_known_after_the_step_that_extracts_it() {
    let e = err(r#"target: http://127.0.0.1:9
steps:
  - request: {path: "/tasks/${id}"}
  - request: {path: /tasks, extract: {id: $.id}}
load: {users: 1, duration: 1s}
"#);
    assert!(first(&e).1.contains("undefined variable `id`"), "{e}");
}

#[test]
fn on_failure_is_per_flow_with_a_top_level_default_and_bad_choices_are_located() {
    use crest_flow::plan::OnFailure;
    let s = ok(r#"target: http://127.0.0.1:9
on_failure: continue
flows:
  - name: a
    steps: [{request: {path: /a}}]
  - name: b
    on_failure: stop_user
    steps: [{request: {path: /b}}]
load: {users: 1, duration: 1s}
"#);
    let choices: Vec<OnFailure> = s.flow.flows.iter().map(|f| f.on_failure).collect();
    assert_eq!(choices, [OnFailure::Continue, OnFailure::StopUser]);
    let s = ok("target: http://127.0.0.1:9\nsteps: [{request: {path: /}}]\nload: {users: 1, duration: 1s}\n");
    assert_eq!(s.flow.flows[0].on_failure, OnFailure::NextIteration);

    let e = err(r#"target: http://127.0.0.1:9
flows:
  - name: a
    on_failure: stop-user
    steps: [{request: {path: /a}}]
load: {users: 1, duration: 1s}
"#);
    let (at, msg, hint) = first(&e);
    assert_eq!(at, Some((4, 17)), "{e}");
    assert!(msg.contains("on_failure: unknown choice \"stop-user\""), "{msg}");
    assert_eq!(hint.as_deref(), Some("did you mean `stop_user`?"));
    assert!(e.to_string().starts_with("s.yaml:4:17: "), "{e}");
    let e = err("target: http://127.0.0.1:9\non_failure: retry\nsteps: [{request: {path: /}}]\nload: {users: 1, duration: 1s}\n");
    let (at, _, hint) = first(&e);
    assert_eq!(at, Some((2, 13)), "{e}");
    assert_eq!(
        hint.as_deref(),
        Some("write one of next_iteration, continue, stop_user")
    );
}

#[test]
fn impossible_profiles_are_refused() {
    let base = "target: http://127.0.0.1:9\nsteps: [{request: {path: /}}]\nload:\n";
    for (load, needle) in [
        ("  users: 5\n", "needs `duration`"),
        ("  users: 5\n  duration: 1m\n  rate: 3\n", "not users and rate"),
        ("  stepping: {start: 40, step: 0, every: 1m, max: 80}\n", "step >= 1"),
        ("  threads: 5\n", "needs `loops`"),
        ("  stages: [{ramp_to: 10}]\n", "a stage is"),
        ("  spike: {to: 9, after: 1s, for: 1s, then: 1s}\n", "give `users`"),
        ("  {}\n", "give one shape"),
    ] {
        let e = err(&format!("{base}{load}"));
        assert!(e.to_string().contains(needle), "{load}: {e}");
    }
}

#[test]
fn other_mistakes_are_explained() {
    let cases = [
        ("steps: [{request: {path: /}}]\nload: {users: 1, duration: 1s}\n", "needs `target:`"),
        ("target: http://127.0.0.1:9\nsteps: [{request: {path: /}, think: 1s}]\nload: {users: 1, duration: 1s}\n", "exactly one of"),
        ("target: http://127.0.0.1:9\nsteps: [{think: soon}]\nload: {users: 1, duration: 1s}\n", "not a duration"),
        ("target: http://127.0.0.1:9\nsteps: [{request: {path: /, extract: {x: \"$[\"}}}]\nload: {users: 1, duration: 1s}\n", "not a valid JSONPath"),
        ("target: http://127.0.0.1:9\nsteps: [{request: {path: /}}]\nload: {users: 1, duration: 1s}\nthresholds: [\"p95 fast\"]\n", "thresholds"),
        ("target: http://127.0.0.1:9\nsteps: [{request: {path: \"/${env:NOPE}\"}}]\nload: {users: 1, duration: 1s}\n", "NOPE is not set"),
        ("target: http://127.0.0.1:9\nsteps: [{poll: {request: {path: /}, until: {s: [A]}}}]\nload: {users: 1, duration: 1s}\n", "never extracted"),
        ("target: http://127.0.0.1:9\ntarget: http://127.0.0.1:8\nsteps: []\nload: {users: 1, duration: 1s}\n", "given twice"),
        ("target: [oops\n", "not valid YAML"),
    ];
    for (text, needle) in cases {
        let e = err(text);
        assert!(e.to_string().contains(needle), "{text}\n=> {e}");
        assert!(
            e.problems[0].at.is_some() || needle.contains("target"),
            "{text}: no location in {e}"
        );
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    // A cheap stand-in for the fuzz target in fuzz/, run on every test run.
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let alphabet = b"abc:{}[]-\n $\"'#&*!|>%@`,.0123456789request: load: steps: users";
    for _ in 0..2000 {
        let len = (rng % 120) as usize;
        let text: String = (0..len)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                alphabet[(rng % alphabet.len() as u64) as usize] as char
            })
            .collect();
        let _ = load_str("fuzz.yaml", &text, Path::new("."), &env);
    }
}

/// The published schema is the one generated from the loader's types. `CREST_UPDATE_GOLDEN=1`
/// rewrites it.
#[test]
fn checked_in_scenario_schema_matches_the_types() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/scenario.schema.json");
    let generated = serde_json::to_string_pretty(&crest_scenario::json_schema()).unwrap() + "\n";
    if std::env::var_os("CREST_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "schema/scenario.schema.json is stale: run CREST_UPDATE_GOLDEN=1 cargo test -p crest-scenario"
    );
}

/// Every example in examples/ validates.
#[test]
fn the_examples_validate() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            crest_scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 3);
}

const MONITORED: &str = r#"
target: http://127.0.0.1:9
steps:
  - request:
      path: /
load:
  users: 2
  duration: 10s
monitor:
  interval: 500ms
  processes:
    - name: api
    - pid: 4242
      label: worker
    - pattern: "java .*orders"
      label: orders
  prometheus:
    - url: http://127.0.0.1:9100/metrics
      metrics: [stream_lag_seconds, "rows_.*"]
stop_when:
  - load_average > 3
  - max(process_open_fds{process=api}) > 900
thresholds:
  - stream_lag_seconds < 1s
  - mean(rate(rows_total)) > 100/s
"#;

#[test]
fn the_monitor_block_compiles_and_its_metrics_can_be_used() {
    use crest_model::monitor::ProcessSelect;
    let s = ok(MONITORED);
    let m = &s.plan.monitor();
    assert_eq!(m.interval, Duration::from_millis(500));
    assert!(m.host);
    let labels: Vec<&str> = m.processes.iter().map(|p| p.label.as_str()).collect();
    assert_eq!(labels, ["api", "worker", "orders"]);
    assert_eq!(m.processes[1].select, ProcessSelect::Pid(4242));
    assert_eq!(m.prometheus[0].metrics, ["stream_lag_seconds", "rows_.*"]);
    assert_eq!(s.plan.stop_when().len(), 2);
    assert_eq!(s.plan.thresholds().len(), 2);
}

#[test]
fn monitor_mistakes_are_located() {
    // A metric nothing records.
    let e = err(&MONITORED.replace("stream_lag_seconds < 1s", "queue_depth < 5"));
    let (at, msg, _) = first(&e);
    assert_eq!(at.map(|a| a.0), Some(24), "{e}");
    assert!(msg.contains("unknown metric \"queue_depth\""), "{msg}");
    // Process metrics without a process.
    let no_procs = MONITORED.replace("  processes:\n    - name: api\n    - pid: 4242\n      label: worker\n    - pattern: \"java .*orders\"\n      label: orders\n", "");
    let (_, msg, _) = first(&err(&no_procs));
    assert!(msg.contains("needs a process to watch"), "{msg}");
    // Two ways of choosing one process.
    let (at, msg, _) = first(&err(
        &MONITORED.replace("    - name: api", "    - name: api\n      pid: 1")
    ));
    assert_eq!(at.map(|a| a.0), Some(12));
    assert!(msg.contains("exactly one of pid, pid_file, name, pattern"), "{msg}");
    let (_, msg, _) = first(&err(&MONITORED.replace("java .*orders", "java (orders")));
    assert!(msg.contains("not a valid regular expression"), "{msg}");
    let (_, msg, _) = first(&err(
        &MONITORED.replace("  interval: 500ms\n", "  interval: 500ms\n  database: true\n")
    ));
    assert!(msg.contains("needs a `database`"), "{msg}");
}

/// Issue 11, item 7: the task-queue example watched processes named `crest`, which matched the
/// load generator; its default must match the `crest target` service only.
#[test]
fn issue_11_the_task_queue_example_watches_the_target_not_the_load_generator() {
    use crest_model::monitor::ProcessSelect;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let text = std::fs::read_to_string(dir.join("task-queue.yaml")).unwrap();
    let s = load_str("task-queue.yaml", &text, &dir, &|_| None).unwrap_or_else(|e| panic!("{e}"));
    let ProcessSelect::Pattern(p) = &s.plan.monitor().processes[0].select else {
        panic!("{:?}", s.plan.monitor().processes)
    };
    let re = regex::Regex::new(p).unwrap();
    for target in [
        "crest target",
        "/usr/local/bin/crest target --listen 127.0.0.1:8080 --workers 4",
        "./target/release/crest target --queue 100",
    ] {
        assert!(re.is_match(target), "{p} misses {target:?}");
    }
    for other in [
        "crest run examples/task-queue.yaml",
        "/usr/local/bin/crest find examples/task-queue.yaml",
        "sh -c crest target & crest run examples/task-queue.yaml",
        "crest targets",
    ] {
        assert!(!re.is_match(other), "{p} matches {other:?}");
    }
}

#[test]
fn issue_12_many_variables_are_checked_in_order_and_misspellings_still_get_a_hint() {
    // Variables are kept in a set (checking was quadratic in their number): the rules stay the
    // same, a variable is known from its definition on, and a misspelling gets the closest name.
    let n = 3000;
    let mut text = String::from("target: http://127.0.0.1:9\nload: {users: 1, duration: 1s}\nvariables:\n  v0: x\n");
    for i in 1..n {
        text += &format!("  v{i}: \"${{v{}}}-\"\n", i - 1);
    }
    let steps = format!("steps:\n  - request: {{path: \"/${{v{}}}\"}}\n", n - 1);
    let s = ok(&(text.clone() + &steps));
    assert_eq!(s.flow.variables.len(), n);
    let e = err(&(text.clone() + "  late: \"${v3000}\"\n" + &steps));
    let (_, msg, hint) = first(&e);
    assert!(msg.contains("undefined variable `v3000`"), "{e}");
    assert!(hint.is_some_and(|h| h.starts_with("did you mean `v")), "{e}");
    let e = err(&(text + "  early: \"${later}\"\n  later: x\n" + &steps));
    assert!(first(&e).1.contains("undefined variable `later`"), "{e}");
}

#[test]
fn issue_12_hostile_scenarios_are_refused_without_panicking() {
    // Pieces a hostile or careless author writes; every combination must end in a value or a
    // located error, never a panic, an abort or an allocation of the sizes asked for.
    let targets = [
        "http://127.0.0.1:83999",
        "http://127.0.0.1:-1",
        "http:///x",
        "http://[::1",
        "\u{feff}",
        "http://u:p@h:0",
    ];
    let loads = [
        "{rate: 1e300, duration: 1s}",
        "{rate: -1, duration: 99999999999999999d}",
        "{users: 18446744073709551615, duration: 0s}",
        "{stepping: {start: 1, step: 1, max: 18446744073709551615, every: 1s}}",
        "{rate_stages: [{ramp_to: 1e308, over: 1s}], max_in_flight: 0}",
        "{spike: {rate: 1, to: 1e300, after: 1s, for: 1s, then: 1s}}",
    ];
    let paths = [
        "/${random_string(99999999999)}",
        "/${random_string(-1)}",
        "/${random_int(-9223372036854775808, 9223372036854775807)}",
        "/${",
        "/${env:}",
        "/\r\n",
    ];
    for (i, t) in targets.iter().enumerate() {
        for (j, l) in loads.iter().enumerate() {
            let p = paths[(i + j) % paths.len()];
            let text = format!(
                "target: \"{t}\"\nload: {l}\ndefaults: {{headers: {{X-A: \"a\\r\\nb\"}}, timeout: 0s}}\nsteps:\n  - request: {{path: \"{p}\"}}\n"
            );
            let e = load_str("h.yaml", &text, Path::new("."), &env).unwrap_err();
            assert!(e.problems.iter().any(|p| p.at.is_some()), "{text}\n{e}");
        }
    }
}

/// Keys that take several forms read YAML scalars as text: `status: true` and `all: true` must
/// still be booleans there (`status: true` was once refused), and known variables follow them.
#[test]
fn extract_flags_read_as_booleans() {
    let s = ok(r#"target: http://127.0.0.1:9
steps:
  - request:
      path: /plans
      extract: {code: {status: true}, states: {json: "$.next[*].state", all: true}}
  - request: {path: "/x/${code}/${states}"}
load: {users: 1, duration: 1s}
"#);
    let crest_flow::plan::Step::Request(r) = &s.flow.flows[0].steps[0] else {
        panic!("a request step")
    };
    assert!(matches!(r.extract[0].1, crest_flow::extract::Extractor::Status));
    assert!(matches!(r.extract[1].1, crest_flow::extract::Extractor::JsonAll { .. }));
    let e = err(r#"target: http://127.0.0.1:9
steps:
  - request: {path: /plans, extract: {code: {status: maybe}}}
load: {users: 1, duration: 1s}
"#);
    assert!(e.to_string().contains("s.yaml:3"), "{e}");
    let e = err(r#"target: http://127.0.0.1:9
steps:
  - request: {path: /plans, extract: {code: {header: X, all: true}}}
load: {users: 1, duration: 1s}
"#);
    assert!(e.to_string().contains("`all` goes with `json`"), "{e}");
}

#[test]
fn every_number_of_the_load_may_come_from_the_environment() {
    let env = |n: &str| match n {
        "THREADS" => Some("25".to_string()),
        "BAD" => Some("2.5".to_string()),
        "RAMP" => Some("soon".to_string()),
        "RATE" => Some("12.5".to_string()),
        _ => None,
    };
    let load = |text: &str| load_str("s.yaml", text, Path::new("."), &env);
    let base = "target: http://127.0.0.1:9\nsteps: [{request: {path: /}}]\nload:\n";

    let s = load(&format!(
        "{base}  threads: ${{env:THREADS}}\n  loops: ${{env:LOOPS:-4}}\n  ramp_up: \"${{env:UP:-2s}}\"\n"
    ))
    .unwrap();
    assert_eq!(s.plan.segments()[0].kind, StepKind::Loops { threads: 25, loops: 4 });
    assert!(matches!(
        s.plan.load(),
        LoadModel::Closed {
            iterations: Some(4),
            ..
        }
    ));
    assert_eq!(s.plan.load().max_concurrency(), 25);

    let s = load(&format!("{base}  rate: ${{env:RATE}}\n  duration: ${{env:D:-3s}}\n")).unwrap();
    assert_eq!(s.plan.stop().duration, Some(Duration::from_secs(3)));
    assert_eq!(s.plan.segments()[0].rate, Some(12.5));

    // In a flow mapping YAML needs the braces quoted; quoted or not, the value takes its type.
    let s = load(&format!(
        "{base}  stepping: {{start: \"${{env:THREADS}}\", step: 5, every: \"${{env:E:-10s}}\", max: 40}}\n"
    ))
    .unwrap();
    assert_eq!(s.plan.segments().len(), 4);

    // A value that is not what the key holds is located at the template, which it quotes
    // (not the value: it may be a secret).
    let e = load(&format!("{base}  threads: ${{env:BAD}}\n  loops: 1\n")).unwrap_err();
    let (at, msg, _) = first(&e);
    assert_eq!(at, Some((4, 12)), "{e}");
    assert!(msg.contains("load.threads: ${env:BAD} is not a whole number"), "{msg}");
    assert!(!msg.contains("2.5"), "{msg}");

    let e = load(&format!("{base}  users: 2\n  duration: ${{env:RAMP}}\n")).unwrap_err();
    assert!(
        first(&e).1.contains("load.duration: ${env:RAMP} is not a duration"),
        "{e}"
    );
    assert!(!e.to_string().contains("soon"), "{e}");

    let e = load(&format!("{base}  users: ${{env:NOPE}}\n  duration: 1s\n")).unwrap_err();
    assert_eq!(first(&e).0, Some((4, 10)), "{e}");
    assert!(first(&e).1.contains("NOPE"), "{e}");

    let e = load(&format!("{base}  users: ${{user}}\n  duration: 1s\n")).unwrap_err();
    assert!(first(&e).1.contains("has no value before the run starts"), "{e}");

    // Substituted values are checked like written ones: 0 users is refused where it stands.
    let e = load(&format!("{base}  users: ${{env:Z:-0}}\n  duration: 1s\n")).unwrap_err();
    assert_eq!(first(&e).0, Some((4, 10)), "{e}");
}

/// Every data file the scenario reads is listed once, as written, so that whoever runs it
/// elsewhere (`crest kube render`'s ConfigMap) can bring it along.
#[test]
fn the_data_files_read_are_listed_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("in")).unwrap();
    for (f, text) in [
        ("in/users.csv", "name\na\nb\n"),
        ("body.json", "{}"),
        ("photo.bin", "\u{1}"),
    ] {
        std::fs::write(dir.path().join(f), text).unwrap();
    }
    let text = r#"
target: http://127.0.0.1:9
data:
  users: {file: in/users.csv}
steps:
  - request: {method: POST, path: /a, body_file: body.json}
  - request: {method: POST, path: /b, body_file: body.json}
  - request:
      method: POST
      path: /c
      multipart: [{name: p, file: photo.bin, content_type: application/octet-stream}]
load: {users: 2, duration: 1s}
"#;
    let drafted = crest_scenario::draft_str("s.yaml", text, dir.path(), &env).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(drafted.files, ["in/users.csv", "body.json", "photo.bin"]);
}
