//! Scenario files run against real servers: what the servers received and what crest recorded.
#![allow(clippy::unwrap_used)]

mod common;

use common::{edit, example, f, rt, run_scenario, scenario_file};
use crest_testkit::{Received, Reply, Server};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Runs scenario text with `CREST_TARGET` pointing at `server`.
async fn run_against(server: &Server, text: &str) -> common::Run {
    let (dir, file) = scenario_file(text);
    let url = format!("http://{}", server.addr);
    let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[("CREST_TARGET", &url)], &[]))
        .await
        .unwrap();
    drop(dir);
    r
}

/// A task-queue API: a task is RUNNING for its first two polls, then SUCCEEDED.
async fn task_queue() -> Server {
    let polls: Arc<Mutex<HashMap<u64, u32>>> = Arc::default();
    Server::start(move |req: &Received, i| {
        let path = req.path.as_str();
        if req.method == "POST" && path == "/tasks/submissions" {
            let id = 1000 + i;
            polls.lock().unwrap().insert(id, 0);
            return Reply::json(201, format!(r#"{{"id": {id}, "status": "QUEUED"}}"#));
        }
        if let Some(id) = path
            .strip_prefix("/tasks/submissions/")
            .and_then(|s| s.parse::<u64>().ok())
        {
            let mut p = polls.lock().unwrap();
            let Some(n) = p.get_mut(&id) else {
                return Reply::json(404, "{}");
            };
            *n += 1;
            let status = if *n >= 3 { "SUCCEEDED" } else { "RUNNING" };
            return Reply::json(200, format!(r#"{{"id": {id}, "status": "{status}"}}"#));
        }
        if let Some(id) = path.strip_prefix("/tasks/") {
            return Reply::json(200, format!(r#"{{"id": {id}, "result": "done"}}"#));
        }
        Reply::json(404, "{}")
    })
    .await
}

#[test]
fn task_queue_flow_posts_polls_and_fetches_with_the_extracted_id() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = task_queue().await;
        let text = example("task-queue.yaml");
        let text = edit(&text, "every: 1s", "every: 100ms").replace("every: 1s", "every: 100ms");
        let text = edit(&text, "think: 5s", "think: 10ms").replace("think: 5s", "think: 10ms");
        let text = edit(
            &text,
            "stepping: {start: 40, step: 40, every: 10m, max: 400}",
            // A fixed number of iterations, however busy the machine: 20 users x 8 loops.
            "threads: 20\n  loops: 8",
        );
        let text = text[..text.find("stop_when:").unwrap()].to_string();
        let r = run_against(&server, &text).await;
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);

        let got = server.received();
        let posts: Vec<&Received> = got.iter().filter(|q| q.method == "POST").collect();
        assert_eq!(posts.len(), 160, "20 users x 8 iterations");
        // Weights 5:1 (binomial, so within a generous band).
        let factorial = posts
            .iter()
            .filter(|p| String::from_utf8_lossy(&p.body).contains("factorial"))
            .count();
        let share = factorial as f64 / posts.len() as f64;
        assert!(
            (0.08..=0.27).contains(&share),
            "factorial share {share:.3} of {}",
            posts.len()
        );
        // Every finished task: POST, then exactly three polls of *its* id at least 100 ms apart,
        // then the result, in that order.
        let mut finished = 0;
        for (i, post) in posts.iter().enumerate() {
            let id = 1000 + post.index;
            let polls: Vec<&Received> = got
                .iter()
                .filter(|q| q.path == format!("/tasks/submissions/{id}"))
                .collect();
            let result = got.iter().find(|q| q.path == format!("/tasks/{id}"));
            let Some(result) = result else { continue };
            finished += 1;
            assert_eq!(polls.len(), 3, "task {i}");
            assert!(polls[0].at > post.at && result.at > polls[2].at);
            for w in polls.windows(2) {
                let gap = w[1].at - w[0].at;
                assert!(
                    gap >= Duration::from_millis(100) && gap < Duration::from_millis(400),
                    "poll gap {gap:?}"
                );
            }
            // Both flows ask for JSON; the body was sent as JSON with its type.
            assert!(post
                .headers
                .iter()
                .any(|(n, v)| n.eq_ignore_ascii_case("content-type") && v == "application/json"));
        }
        assert!(finished > 90, "{finished} tasks finished");

        let s = r.summary();
        assert_eq!(s["failures"], 0, "{}", r.stdout);
        let by_name: HashMap<String, u64> = s["names"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| (g["name"].as_str().unwrap().to_string(), g["requests"].as_u64().unwrap()))
            .collect();
        let polls = by_name["GET /tasks/submissions/{id}"];
        let submitted =
            by_name["POST /tasks/submissions (http-fetch)"] + by_name["POST /tasks/submissions (factorial)"];
        assert!(
            polls >= 3 * (submitted - 20) && polls <= 3 * submitted,
            "{polls} polls for {submitted} tasks"
        );
    });
}

#[test]
fn a_task_that_fails_or_never_finishes_is_a_check_failure() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|req: &Received, i| match (req.method.as_str(), req.path.as_str()) {
            ("POST", _) => Reply::json(201, format!(r#"{{"id": {i}}}"#)),
            // Odd ids fail; even ids stay RUNNING for ever.
            (_, p) if p.starts_with("/tasks/submissions/") => {
                let id: u64 = p.rsplit('/').next().unwrap().parse().unwrap();
                Reply::json(
                    200,
                    if id % 2 == 1 {
                        r#"{"status": "FAILED"}"#
                    } else {
                        r#"{"status": "RUNNING"}"#
                    },
                )
            }
            _ => Reply::json(200, "{}"),
        })
        .await;
        let (_dir, file) = scenario_file(&format!(
            r#"
target: http://{}
steps:
  - request: {{method: POST, path: /tasks/submissions, json: {{type: factorial}}, extract: {{id: $.id}}}}
  - poll:
      request:
        path: /tasks/submissions/${{id}}
        extract: {{status: $.status}}
        check: {{json: {{"$.status": SUCCEEDED}}}}
      until: {{status: [SUCCEEDED, FAILED]}}
      every: 50ms
      max_wait: 300ms
  - request: {{path: "/tasks/${{id}}"}}
load: {{threads: 2, loops: 3}}
"#,
            server.addr
        ));
        let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[], &[]))
            .await
            .unwrap();
        assert_eq!(r.code, 0, "{}", r.stderr);
        let s = r.summary();
        assert_eq!(r.error_count("check_failed"), 6, "{}", r.stdout);
        let example = s["errors"][0]["example"].as_str().unwrap();
        assert!(example.contains("FAILED") || example.contains("gave up"), "{example}");
        // No result is fetched for a failed task: the iteration ends at the failed step.
        assert!(!server
            .received()
            .iter()
            .any(|q| q.path.starts_with("/tasks/") && !q.path.contains("submissions")));
        assert_eq!(s["ended_by"], "completed");
    });
}

#[test]
fn replay_state_threads_by_loops_with_a_secret_token_and_slos() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::json(200, r#"{"entities": []}"#)).await;
        let (_dir, file) = scenario_file(&example("replay-state.yaml"));
        let url = format!("http://{}", server.addr);
        let r = tokio::task::spawn_blocking(move || {
            run_scenario(
                &file,
                &[("CREST_TARGET", url.as_str()), ("API_TOKEN", "sup3r-s3cret-t0ken")],
                &[],
            )
        })
        .await
        .unwrap();
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let got = server.received();
        assert_eq!(got.len(), 10, "5 threads x 2 loops");
        for q in &got {
            let ts = q.path.strip_prefix("/replay/state?timestamp=").unwrap();
            let ts = ts.replace("%3A", ":");
            assert!(chrono::DateTime::parse_from_rfc3339(&ts).is_ok(), "{ts}");
            assert!(q
                .headers
                .iter()
                .any(|(n, v)| n.eq_ignore_ascii_case("authorization") && v == "Bearer sup3r-s3cret-t0ken"));
        }
        let everything = format!("{}{}{}", r.results_text(), r.stdout, r.stderr);
        assert!(!everything.contains("sup3r-s3cret-t0ken"), "the token leaked");
        let s = r.summary();
        assert_eq!(s["ended_by"], "completed");
        assert_eq!(s["segments"][0]["name"], "5 threads x 2 loops");
        let t = s["thresholds"].as_array().unwrap();
        assert_eq!(t.len(), 5);
        assert!(t.iter().all(|x| x["pass"] == true), "{t:?}");
    });
}

#[test]
fn a_failed_threshold_exits_1_and_says_which() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::Body {
            delay: Duration::from_millis(30),
            status: 200,
            body: b"{}".to_vec(),
        })
        .await;
        let text = edit(&example("replay-state.yaml"), "p50 < 5s", "p50 < 10ms");
        let r = run_against(&server, &text).await;
        assert_eq!(r.code, 1, "{}", r.stderr);
        let s = r.summary();
        let p50 = s["thresholds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["threshold"] == "p50 < 10ms")
            .unwrap()
            .clone();
        assert_eq!(p50["pass"], false);
        assert!(p50["value"].as_f64().unwrap() >= 30.0);
        assert!(r.stderr.contains("FAIL  p50 < 10ms"), "{}", r.stderr);
    });
}

#[test]
fn validator_posts_json_and_counts_failed_checks() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, i| {
            if i % 4 == 0 {
                Reply::json(200, r#"{"error": "bad"}"#)
            } else {
                Reply::json(200, r#"{"valid": true}"#)
            }
        })
        .await;
        let text = edit(
            &example("validator.yaml"),
            "users: 50\n  duration: 1m",
            "users: 5\n  duration: 2s",
        );
        let r = run_against(&server, &text).await;
        // A quarter of the answers fail the body check, so `error_rate < 1%` fails: exit 1.
        assert_eq!(r.code, 1, "{}", r.stderr);
        let got = server.received();
        let body: serde_json::Value = serde_json::from_slice(&got[0].body).unwrap();
        assert_eq!(body["options"]["strict"], true, "YAML true is JSON true");
        assert_eq!(body["diagram"], "graph TD; A-->B; B-->C; C-->A");
        let failed = r.error_count("check_failed") as f64;
        let share = failed / got.len() as f64;
        assert!((0.2..=0.3).contains(&share), "{share}");
        let s = r.summary();
        assert!(s["errors"][0]["example"]
            .as_str()
            .unwrap()
            .contains("does not contain \"valid\""));
    });
}

#[test]
fn a_stop_condition_ends_the_run_early_and_says_why() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, i| {
            if i % 5 < 3 {
                Reply::json(500, "{}")
            } else {
                Reply::json(200, "valid")
            }
        })
        .await;
        let text = edit(
            &example("validator.yaml"),
            "users: 50\n  duration: 1m",
            "users: 4\n  duration: 30s",
        );
        let r = run_against(&server, &text).await;
        let s = r.summary();
        assert_eq!(s["ended_by"], "condition", "{}", r.stderr);
        assert_eq!(s["stopped_by"]["condition"], "error_rate > 50%");
        assert!(f(&s, &["duration_s"]) < 10.0, "stopped early: {}", s["duration_s"]);
        // Three failures in every five requests; the window's edges may split a group of five.
        let detail = s["stopped_by"]["detail"].as_str().unwrap();
        let pct: f64 = detail
            .split("was ")
            .nth(1)
            .unwrap()
            .split('%')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!((59.0..=61.0).contains(&pct), "{detail}");
    });
}

#[test]
fn stepping_keeps_statistics_per_step() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::Body { delay: Duration::from_millis(20), status: 200, body: b"{}".to_vec() }).await;
        let (_dir, file) = scenario_file(&format!(
            "target: http://{}\nsteps: [{{request: {{path: /}}}}]\nload:\n  stepping: {{start: 2, step: 2, every: 1500ms, max: 4}}\n",
            server.addr
        ));
        let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[], &[])).await.unwrap();
        assert_eq!(r.code, 0, "{}", r.stderr);
        let results = r.results();
        let segments = results["segments"].as_array().unwrap();
        assert_eq!(segments.len(), 2);
        assert_eq!((segments[0]["users"].as_u64(), segments[1]["users"].as_u64()), (Some(2), Some(4)));
        let per: Vec<u64> = (0..2)
            .map(|g| results["stats"].as_array().unwrap().iter().filter(|s| s["segment"] == g).map(|s| s["count"].as_u64().unwrap()).sum())
            .collect();
        // The steps hold every request the server answered (a wall-clock rate, or a ratio of
        // two steps' rates, would depend on how busy the machine is; the server's count does
        // not).
        let received = server.received();
        assert_eq!(per[0] + per[1], received.len() as u64);
        // Each user keeps its connection: the first step's 2 users opened 2, the second step
        // added 2 more, and what those 2 sent is only in the second step's count.
        assert_eq!(server.connections(), 4, "one connection per user");
        let first: Vec<u64> = {
            let mut seen: Vec<u64> = Vec::new();
            for r in &received {
                if !seen.contains(&r.connection) {
                    seen.push(r.connection);
                }
            }
            seen
        };
        let late = received.iter().filter(|r| first[2..].contains(&r.connection)).count() as u64;
        assert!(late > 0 && late <= per[1], "the added users' {late} requests are the second step's: {per:?}");
    });
}

#[test]
fn on_start_logs_in_each_user_once_and_feeders_hand_out_rows() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|req: &Received, i| match req.path.as_str() {
            "/login" => Reply::json(200, format!(r#"{{"token": "tok-{i}"}}"#)),
            _ => Reply::json(200, "{}"),
        })
        .await;
        let (dir, file) = scenario_file(&format!(
            r#"
target: http://{}
data:
  accounts: {{file: accounts.csv, mode: unique}}
on_start:
  - request:
      path: /login
      json: {{user: "${{accounts.name}}", password: "${{accounts.password}}"}}
      extract: {{token: $.token}}
on_stop:
  - request: {{method: POST, path: /logout, headers: {{Authorization: "Bearer ${{token}}"}}}}
steps:
  - request: {{path: "/work?n=${{seq}}", headers: {{Authorization: "Bearer ${{token}}"}}}}
  - think: 10ms
load: {{users: 3, duration: 1s}}
"#,
            server.addr
        ));
        std::fs::write(
            dir.path().join("accounts.csv"),
            "name,password\nann,pa\nbob,pb\ncat,pc\n",
        )
        .unwrap();
        let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[], &[]))
            .await
            .unwrap();
        assert_eq!(r.code, 0, "{}", r.stderr);
        let got = server.received();
        let logins: Vec<&Received> = got.iter().filter(|q| q.path == "/login").collect();
        assert_eq!(logins.len(), 3, "one login per user");
        let mut users: Vec<String> = logins
            .iter()
            .map(|q| {
                serde_json::from_slice::<serde_json::Value>(&q.body).unwrap()["user"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        users.sort();
        assert_eq!(users, ["ann", "bob", "cat"], "unique rows");
        // Each connection's work carries the token its own login returned.
        for login in &logins {
            let token = format!("Bearer tok-{}", login.index);
            let work = got
                .iter()
                .filter(|q| q.connection == login.connection && q.path.starts_with("/work"));
            assert!(work.clone().count() > 5);
            assert!(work.clone().all(|q| q.headers.iter().any(|(_, v)| *v == token)));
        }
        assert_eq!(
            got.iter().filter(|q| q.path == "/logout").count(),
            3,
            "on_stop ran for each user"
        );
        // ${seq} is shared by the run: no number twice.
        let mut seqs: Vec<&str> = got.iter().filter_map(|q| q.path.strip_prefix("/work?n=")).collect();
        let n = seqs.len();
        seqs.sort();
        seqs.dedup();
        assert_eq!(seqs.len(), n);
    });
}

#[test]
fn validate_reports_problems_with_locations_and_exit_2() {
    let _serial = common::serial();
    let (_dir, file) =
        scenario_file("target: http://127.0.0.1:9\nsteps:\n  - request: {path: /, methd: GET}\nload: {users: 1}\n");
    let out = common::crest().arg("validate").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("scenario.yaml:3:") && stderr.contains("did you mean `method`?"),
        "{stderr}"
    );
    let out = common::crest()
        .arg("run")
        .arg(&file)
        .args(["-H", "x: y"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-H: these flags describe a URL's request"));
}

/// `crest validate` describes the load in the words the reports use (it used to say "2 users x
/// 3 iterations" where the reports say "closed model, 2 users x 3 iterations").
#[test]
fn validate_describes_the_load_as_the_reports_do() {
    let (_dir, file) =
        scenario_file("target: http://127.0.0.1:9\nsteps:\n  - request: {path: /}\nload: {threads: 2, loops: 3}\n");
    let out = common::crest().arg("validate").arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains("  load: closed model, 2 users x 3 iterations\n"),
        "{stdout}"
    );
}

#[test]
fn validate_says_what_the_monitor_will_watch_without_secrets() {
    let (_dir, file) = scenario_file(
        "target: http://127.0.0.1:9\nsteps:\n  - request: {path: /}\nload: {users: 1, duration: 1s}\n\
         monitor:\n  interval: 2s\n  processes:\n    - name: api\n  postgres:\n    - url: postgres://mon:s3cret@127.0.0.1:5/app\n",
    );
    let out = common::crest().arg("validate").arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains("monitor: this machine, process api, PostgreSQL postgres://mon:"),
        "{stdout}"
    );
    assert!(stdout.contains("every 2s") && !stdout.contains("s3cret"), "{stdout}");
}

#[test]
fn a_spike_reports_how_long_the_service_took_to_recover() {
    let _serial = common::serial();
    rt().block_on(async {
        // Slow (300 ms) from the spike's start at 3 s until 2 s after its end at 5 s; 50 ms
        // otherwise. Back means a p95 within 1.25x the baseline's: at 50 ms a busy machine's
        // timer overruns stay well inside that margin (at 10 ms they did not).
        let first: Arc<std::sync::OnceLock<std::time::Instant>> = Arc::default();
        let server = Server::start(move |_, _| {
            let t0 = *first.get_or_init(std::time::Instant::now);
            let t = t0.elapsed();
            let slow = t >= Duration::from_secs(3) && t < Duration::from_secs(7);
            Reply::Body { delay: Duration::from_millis(if slow { 300 } else { 50 }), status: 200, body: b"{}".to_vec() }
        })
        .await;
        let (_dir, file) = scenario_file(&format!(
            "target: http://{}\nsteps: [{{request: {{path: /}}}}]\nload:\n  spike: {{users: 2, to: 12, after: 3s, for: 2s, then: 6s}}\n",
            server.addr
        ));
        let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[], &[])).await.unwrap();
        assert_eq!(r.code, 0, "{}", r.stderr);
        let s = r.summary();
        let names: Vec<&str> = s["segments"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["baseline 2 users", "spike 12 users", "recovery 2 users"]);
        let secs = f(&s["recovery"], &["seconds"]);
        assert!((1.0..=4.0).contains(&secs), "the server stays slow 2 s after the spike: {}", s["recovery"]);
        assert!(r.stderr.contains("Recovery"), "{}", r.stderr);
    });
}

#[test]
fn sweep_runs_each_value_after_its_setup_command() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::json(200, "{}")).await;
        let (dir, file) = scenario_file(&format!(
            "target: http://{}\nsteps: [{{request: {{path: \"/x?n=${{env:n}}\"}}}}]\nload: {{threads: 2, loops: 3}}\n",
            server.addr
        ));
        let log = dir.path().join("setup.log");
        let setup = format!("echo {{n}} $n >> {}", log.display());
        let out_dir = tempfile::tempdir().unwrap();
        let (f, o) = (file.clone(), out_dir.path().to_path_buf());
        let out = tokio::task::spawn_blocking(move || {
            common::crest()
                .arg("sweep")
                .arg(&f)
                .args([
                    "--param",
                    "n=1,2,3",
                    "--setup",
                    &setup,
                    "--quiet",
                    "--summary-json",
                    "-",
                    "--out",
                ])
                .arg(&o)
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        common::check_counts(&out_dir.path().join("results.json"));
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "1 1\n2 2\n3 3\n",
            "setup ran before each point, with the value"
        );
        let paths: Vec<String> = server.received().iter().map(|q| q.path.clone()).collect();
        assert_eq!(paths.iter().filter(|p| *p == "/x?n=2").count(), 6, "{paths:?}");
        let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let names: Vec<&str> = s["segments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["n=1", "n=2", "n=3"]);
        assert!(out_dir.path().join("report.md").exists());
    });
}

/// Seed 000's threads x loops table: six points set two load parameters each, every point is
/// a run of its own, and the study has a row per point with a column per request name, counts
/// that add up to what the target served, and ratios to the first point.
#[test]
fn a_threads_by_loops_study_has_a_row_per_point_matching_the_target() {
    let _serial = common::serial();
    let t = common::target_process(&["--workers", "64", "--service-time", "2ms"]);
    let (dir, file) = scenario_file(&format!(
        "target: {}\nsteps:\n  - request: {{name: home, path: /}}\n  - request: {{name: state, path: \"/replay/state?entities=10\"}}\nload: {{threads: \"${{env:threads}}\", loops: \"${{env:loops}}\"}}\n",
        t.url.trim_end_matches('/')
    ));
    let out = dir.path().join("study");
    let points = [
        "threads=1,loops=1",
        "threads=5,loops=1",
        "threads=5,loops=5",
        "threads=5,loops=10",
        "threads=25,loops=1",
        "threads=50,loops=1",
    ];
    let r = common::crest()
        .arg("sweep")
        .arg(&file)
        .arg("--points")
        .args(points)
        .args(["--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    let study: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("study.json")).unwrap()).unwrap();
    assert_eq!(study["params"], serde_json::json!(["threads", "loops"]));
    assert_eq!(study["names"], serde_json::json!(["home", "state"]));
    let rows = study["points"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    let mut total = 0;
    for (row, (threads, loops)) in rows.iter().zip([(1, 1), (5, 1), (5, 5), (5, 10), (25, 1), (50, 1)]) {
        let iterations = threads * loops;
        assert_eq!(row["label"], format!("threads={threads}, loops={loops}"));
        assert_eq!(row["requests"].as_u64(), Some(2 * iterations), "{row}");
        for name in row["per_name"].as_array().unwrap() {
            assert_eq!(name["requests"].as_u64(), Some(iterations), "{row}");
        }
        assert_eq!(row["users"]["finished"].as_u64(), Some(threads), "{row}");
        total += 2 * iterations;
        common::check_counts(
            &out.join(format!("point-{:03}", rows.iter().position(|x| x == row).unwrap() + 1))
                .join("results.json"),
        );
    }
    assert_eq!(total, common::target_metric(&t.url, "crest_target_requests_total"));
    assert!(rows[0]["ratio"].is_null() && rows[5]["ratio"].as_f64().unwrap() > 0.0);
    let md = std::fs::read_to_string(out.join("study.md")).unwrap();
    assert!(md.contains("| threads=5, loops=10 | 100 | 100.00% |"), "{md}");
    assert!(md.contains("All 312 requests of 6 points succeeded."), "{md}");

    // The study is rendered again from the points' saved results.
    std::fs::remove_file(out.join("study.md")).unwrap();
    let rep = common::crest().arg("report").arg(&out).output().unwrap();
    assert_eq!(rep.status.code(), Some(0), "{}", String::from_utf8_lossy(&rep.stderr));
    assert_eq!(std::fs::read_to_string(out.join("study.md")).unwrap(), md);
}

/// A sweep over the number of users past the point where the service's queue overflows: the
/// study names the two points the service broke between, with the failures the target counted.
#[test]
fn a_sweep_finds_the_point_where_the_service_breaks() {
    let _serial = common::serial();
    // 2 workers of 20 ms with room for 4 waiting: 4 users always fit, 30 get 503s.
    let t = common::target_process(&["--workers", "2", "--service-time", "20ms", "--queue", "4"]);
    let (dir, file) = scenario_file(&format!(
        "target: {}\nsteps: [{{request: {{path: /}}}}]\nload: {{threads: \"${{env:users}}\", loops: 4}}\n",
        t.url.trim_end_matches('/')
    ));
    let out = dir.path().join("study");
    let r = common::crest()
        .arg("sweep")
        .arg(&file)
        .args(["--param", "users=2,4,30", "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(r.status.code().is_some(), "{}", String::from_utf8_lossy(&r.stderr));
    let study: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("study.json")).unwrap()).unwrap();
    let rows = study["points"].as_array().unwrap();
    let failures: u64 = rows.iter().map(|p| p["failures"].as_u64().unwrap()).sum();
    assert_eq!(failures, common::target_metric(&t.url, "crest_target_rejected_total"));
    assert_eq!(rows[0]["failures"].as_u64(), Some(0), "{study:#}");
    assert_eq!(rows[1]["failures"].as_u64(), Some(0), "{study:#}");
    assert!(rows[2]["failures"].as_u64().unwrap() > 0, "{study:#}");
    let breaks = &study["findings"][0]["breaks"];
    assert_eq!(
        (breaks["held"].as_str(), breaks["broke"].as_str()),
        (Some("users=4"), Some("users=30")),
        "{study:#}"
    );
    let text = study["findings_text"][0].as_str().unwrap();
    assert!(
        text.starts_with("The service breaks between users=4 and users=30"),
        "{text}"
    );
}

/// Seed 000's payload size column: each request name keeps how much each of its responses
/// weighed, in the summary, the reports and requests.csv.
#[test]
fn response_sizes_are_kept_per_request_name() {
    let _serial = common::serial();
    let t = common::target_process(&["--size", "5000"]);
    let (_dir, file) = scenario_file(&format!(
        "target: {}\nsteps:\n  - request: {{name: big, path: /}}\n  - request: {{name: small, path: \"/replay/state?entities=1\"}}\nload: {{threads: 2, loops: 5}}\n",
        t.url.trim_end_matches('/')
    ));
    let run = common::run_scenario(&file, &[], &["--quiet"]);
    let s = run.summary();
    let size = |name: &str| {
        s["names"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .unwrap()["size_bytes"]
            .clone()
    };
    let (big, small) = (size("big"), size("small"));
    // The body the target was told to send, plus its status line and headers.
    let p50 = big["p50"].as_f64().unwrap();
    assert!((5000.0..5400.0).contains(&p50), "{big}");
    assert_eq!(big["max"].as_f64(), Some(p50), "every response the same size: {big}");
    assert!(small["p50"].as_f64().unwrap() < 1000.0, "{small}");
    let csv = std::fs::read_to_string(run.dir.path().join("requests.csv")).unwrap();
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with("size_p50_bytes,size_p95_bytes,size_max_bytes"),
        "{csv}"
    );
    let md = std::fs::read_to_string(run.dir.path().join("report.md")).unwrap();
    assert!(md.contains("size p50 / p95"), "{md}");
}

/// A run with a few failures lists each one (when it ended, which request, how), as seed 000's
/// report listed its 12 failed requests; the list is saved in results.json, not re-measured.
#[test]
fn a_few_failures_are_listed_one_by_one() {
    let _serial = common::serial();
    let t = common::target_process(&[]);
    let (_dir, file) = scenario_file(&format!(
        "target: {}\nsteps:\n  - request: {{name: home, path: /}}\n  - request: {{name: plan, path: /plans/nope}}\nload: {{threads: 1, loops: 3}}\n",
        t.url.trim_end_matches('/')
    ));
    let run = common::run_scenario(&file, &[], &["--quiet"]);
    let failed = run.results()["failed"].as_array().unwrap().clone();
    assert_eq!(failed.len(), 3, "{failed:?}");
    assert!(
        failed
            .windows(2)
            .all(|w| w[0]["at_s"].as_f64() <= w[1]["at_s"].as_f64()),
        "{failed:?}"
    );
    assert!(
        failed.iter().all(|f| f["status"] == 401 && f["name"] == 1),
        "{failed:?}"
    );
    let md = std::fs::read_to_string(run.dir.path().join("report.md")).unwrap();
    let listed: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("Every failed request"))
        .filter(|l| l.contains("| plan |"))
        .collect();
    assert_eq!(listed.len(), 3, "{md}");
    assert!(listed.iter().all(|l| l.contains("| 401 |")), "{md}");
    let html = std::fs::read_to_string(run.dir.path().join("report.html")).unwrap();
    assert!(html.contains("Every failed request"), "{html}");
}
