//! Flows that act on what the service answered: `if`/`else`, `foreach` over an extracted list,
//! `break` and `next`, checked against what crest target's plan API counted per endpoint.
#![allow(clippy::unwrap_used)]

mod common;

use common::{run_scenario, scenario_file, target_metric, target_process};

/// Each user creates a plan, then reads it until its state is final. Each round it goes over
/// the state changes the service offers (every `next[*].state`), skips every one but `cancelled` and takes
/// that. So each plan is read twice (draft, then cancelled: the `if` breaks the loop) and moved
/// once; without `break`, `next` or the branch the counts below would differ.
const FLOW: &str = r#"
target: ${env:CREST_TARGET}
steps:
  - request:
      name: POST /auth/token
      method: POST
      path: /auth/token
      json: {username: "u${user}", password: demo}
      extract: {token: $.access_token}
  - request:
      name: POST /plans
      method: POST
      path: /plans
      headers: {Authorization: "Bearer ${token}"}
      json: {name: "p${user}"}
      extract: {id: $.id}
  - loop:
      times: 10
      steps:
        - request:
            name: GET /plans/{id}
            path: /plans/${id}
            headers: {Authorization: "Bearer ${token}"}
            extract: {state: $.state, next: {json: "$.next[*].state", all: true}}
        - if: ${state} == completed or ${state} == cancelled or ${state} == failed
          then:
            - break: true
        - foreach:
            items: ${next}
            as: to
            max: 5
            steps:
              - if: ${to} == "cancelled"
                then:
                  - request:
                      name: PUT /plans/{id}/state
                      method: PUT
                      path: /plans/${id}/state
                      headers: {Authorization: "Bearer ${token}"}
                      json: {state: "${to}"}
                      check: {json: {"$.state": cancelled}}
                  - break: true
                else:
                  - next: true
load:
  run_once: 12
"#;

#[test]
fn a_flow_branches_on_the_plan_the_service_returned() {
    let _serial = common::serial();
    let t = target_process(&["--pool", "4", "--pool-work", "1ms"]);
    let (_dir, file) = scenario_file(FLOW);
    let run = run_scenario(&file, &[("CREST_TARGET", t.url.trim_end_matches('/'))], &["--quiet"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let s = run.summary();
    assert_eq!(s["failures"].as_u64(), Some(0), "{s:#}");
    let expected = [
        ("POST /auth/token", 12),
        ("POST /plans", 12),
        ("GET /plans/{id}", 24),
        ("PUT /plans/{id}/state", 12),
    ];
    for (name, n) in expected {
        let served = target_metric(&t.url, &format!("crest_target_api_served_total{{endpoint=\"{name}\"}}"));
        assert_eq!(served, n, "{name}: the target served");
        let sent = s["names"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name)
            .and_then(|x| x["requests"].as_u64());
        assert_eq!(sent, Some(n), "{name}: crest sent");
    }
    assert_eq!(target_metric(&t.url, "crest_target_api_plans{state=\"cancelled\"}"), 12);
    assert_eq!(target_metric(&t.url, "crest_target_api_plans{state=\"approved\"}"), 0);
}

#[test]
fn branching_mistakes_are_located() {
    let cases = [
        (
            "  - if: ${nothing} == 1\n    then:\n      - think: 1ms\n",
            "undefined variable `nothing`",
            "4:9",
        ),
        (
            "  - if: ${x} = 1\n    then:\n      - think: 1ms\n",
            "compare with `==`",
            "4:9",
        ),
        ("  - then:\n      - think: 1ms\n", "go with an `if`", "4:5"),
        (
            "  - foreach:\n      items: ${x}\n      as: a-b\n      steps:\n        - think: 1ms\n",
            "not a variable name",
            "6:11",
        ),
        ("  - break: false\n", "does nothing", "4:12"),
    ];
    for (steps, message, at) in cases {
        let text = format!(
            "target: http://127.0.0.1:1\nvariables: {{x: \"1\"}}\nsteps:\n{steps}load:\n  users: 1\n  duration: 1s\n"
        );
        let (_dir, file) = scenario_file(&text);
        let out = common::crest().arg("validate").arg(&file).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{steps}: {err}");
        assert!(
            err.contains(message) && err.contains(&format!("scenario.yaml:{at}")),
            "{steps}: {err}"
        );
    }
}
