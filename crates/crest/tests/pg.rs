//! PostgreSQL workloads against a real server. .ci/run starts one and sets CREST_TEST_PG_URL;
//! there these tests must run. Elsewhere, without the variable, they are skipped.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, edit, example, pg_url, rt, run_scenario, scenario_file};
use crest_testkit::{Reply, Server};

async fn query_i64(url: &str, sql: &str) -> i64 {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    client.query_one(sql, &[]).await.unwrap().get(0)
}

fn init(url: &str) {
    let out = crest().args(["pg", "init", "--scale", "1", url]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The example with `load` as its load, and without its latency threshold, which a database
/// slowed by a busy machine would fail.
fn tpcb(load: &str) -> String {
    let text = edit(
        &example("tpcb.yaml"),
        "load:\n  rate: 2500\n  duration: 1m\n  max_in_flight: 10",
        load,
    );
    edit(&text, "  - p99 < 50ms\n", "")
}

#[test]
fn tpcb_transactions_run_and_leave_the_database_consistent() {
    let _serial = common::serial();
    let Some(url) = pg_url() else { return };
    init(&url);
    let (_d, file) = scenario_file(&tpcb("load:\n  users: 4\n  duration: 3s"));
    let r = run_scenario(&file, &[("CREST_PG_URL", &url)], &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let s = r.summary();
    assert_eq!(s["failures"], 0, "{}", r.stderr);
    let names: Vec<&str> = s["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 6, "the transaction and its five statements: {names:?}");
    let tx = s["names"][0]["requests"].as_i64().unwrap();
    assert!(tx > 100, "{tx} transactions");
    // The unit of work is the transaction: its statements are sub-measures under it.
    assert_eq!(s["requests"].as_i64().unwrap(), tx, "{s:#}");
    for n in &s["names"].as_array().unwrap()[1..] {
        assert_eq!(n["part_of"].as_str(), Some(names[0]), "{n:#}");
        assert_eq!(n["requests"].as_i64().unwrap(), tx, "{n:#}");
    }
    // Rows are no bytes: no size and no byte figure, where SQL steps read "size 1 B".
    for n in s["names"].as_array().unwrap() {
        assert!(n.get("size_bytes").is_none(), "{n:#}");
    }
    assert!(
        !r.stdout.contains("Data ") && !r.stdout.contains(" 1 B"),
        "{}",
        r.stdout
    );
    let md = std::fs::read_to_string(r.dir.path().join("report.md")).unwrap();
    let line = md.lines().find(|l| l.starts_with("Transactions: ")).unwrap();
    assert!(!line.contains("sent"), "{line}");
    rt().block_on(async {
        // Every transaction committed once: one history row each, and the balances moved by
        // exactly the deltas recorded.
        assert_eq!(query_i64(&url, "SELECT count(*) FROM pgbench_history").await, tx);
        let deltas = query_i64(&url, "SELECT coalesce(sum(delta), 0) FROM pgbench_history").await;
        assert_eq!(
            query_i64(&url, "SELECT sum(abalance)::int8 FROM pgbench_accounts").await,
            deltas
        );
        assert_eq!(
            query_i64(&url, "SELECT sum(bbalance)::int8 FROM pgbench_branches").await,
            deltas
        );
    });
}

#[test]
fn a_fixed_rate_of_transactions_sends_its_schedule_and_each_commits_once() {
    let _serial = common::serial();
    let Some(url) = pg_url() else { return };
    init(&url);
    // Room for 200 ms transactions in flight: a database slowed by a busy machine may make crest
    // drop arrivals, but never miscount them.
    let (_d, file) = scenario_file(&tpcb("load:\n  rate: 200\n  duration: 4s\n  max_in_flight: 40"));
    let r = run_scenario(&file, &[("CREST_PG_URL", &url)], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = r.summary();
    // The schedule: slots n/200 s for n = 0..799 fall before the 4 s deadline, each sent or
    // dropped, and each sent one is one transaction (its five statements are parts of it).
    assert_eq!(r.results()["open"]["arrivals"], 800, "{s:#}");
    let (sent, dropped) = (s["requests"].as_i64().unwrap(), s["dropped"].as_i64().unwrap());
    assert_eq!(sent + dropped, 800, "{s:#}");
    assert_eq!(s["names"][0]["requests"].as_i64().unwrap(), sent, "{s:#}");
    assert_eq!(s["failures"], 0, "{s:#}");
    // PostgreSQL's own count: one history row per transaction committed.
    let rows = rt().block_on(query_i64(&url, "SELECT count(*) FROM pgbench_history"));
    assert_eq!(rows, sent, "{s:#}");
}

#[test]
fn database_errors_are_classified() {
    let _serial = common::serial();
    let Some(url) = pg_url() else { return };
    init(&url);
    let text = r#"
database:
  url: ${env:CREST_PG_URL}
  statement_timeout: 100ms
flows:
  - name: timeout
    steps: [{sql: {name: slow, query: "SELECT pg_sleep(0.5)"}}]
  - name: lost
    steps: [{sql: {name: kill, query: "SELECT pg_terminate_backend(pg_backend_pid())"}}]
  - name: missing
    steps: [{sql: {name: missing, query: "SELECT * FROM no_such_table"}}]
  - name: serial
    steps:
      - sql:
          name: serializable
          transaction: true
          statements:
            - query: SET TRANSACTION ISOLATION LEVEL REPEATABLE READ
            - query: SELECT bbalance FROM pgbench_branches WHERE bid = 1
            - query: SELECT pg_sleep(0.02)
            - query: UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1
load: {users: 8, duration: 3s}
"#;
    let (_d, file) = scenario_file(text);
    let r = run_scenario(&file, &[("CREST_PG_URL", &url)], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for outcome in [
        "sql_statement_timeout",
        "sql_connection_lost",
        "sql_error",
        "sql_serialization",
    ] {
        assert!(r.error_count(outcome) > 0, "no {outcome}: {}", r.stdout);
    }
    let s = r.summary();
    let example = |o: &str| {
        s["errors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["outcome"] == o)
            .unwrap()["example"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(example("sql_error").contains("42P01"), "{}", example("sql_error"));
    assert!(
        example("sql_serialization").contains("40001"),
        "{}",
        example("sql_serialization")
    );
}

#[test]
fn deadlocks_are_counted_as_deadlocks() {
    let _serial = common::serial();
    let Some(url) = pg_url() else { return };
    init(&url);
    let text = r#"
database: {url: "${env:CREST_PG_URL}"}
flows:
  - name: one-two
    steps:
      - sql:
          transaction: true
          name: forwards
          statements:
            - query: UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = 1
            - query: SELECT pg_sleep(0.05)
            - query: UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = 2
  - name: two-one
    steps:
      - sql:
          transaction: true
          name: backwards
          statements:
            - query: UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = 2
            - query: SELECT pg_sleep(0.05)
            - query: UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = 1
load: {users: 4, duration: 3s}
"#;
    let (_d, file) = scenario_file(text);
    let r = run_scenario(&file, &[("CREST_PG_URL", &url)], &[]);
    assert!(r.error_count("sql_deadlock") > 0, "{}", r.stdout);
}

#[test]
fn a_mixed_run_times_the_api_and_the_query_behind_it_and_keeps_the_password_secret() {
    let _serial = common::serial();
    let Some(url) = pg_url() else { return };
    init(&url);
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::Body {
            delay: std::time::Duration::from_millis(30),
            status: 200,
            body: b"{}".to_vec(),
        })
        .await;
        let text = format!(
            r#"
target: http://{}
database:
  url: ${{env:CREST_PG_URL}}
  password: ${{env:PGPASSWORD}}
steps:
  - sql:
      name: count branches
      query: SELECT count(*)::int8 AS n, 'x' AS tag FROM pgbench_branches WHERE bid <= $1
      params: ["${{random_int(1, 1)}}"]
      extract: {{branches: n}}
      check: {{rows: 1, value: {{tag: x}}}}
  - request: {{name: replay, path: "/replay/state?branches=${{branches}}"}}
load: {{threads: 2, loops: 5}}
"#,
            server.addr
        );
        let (_d, file) = scenario_file(&text);
        let u = url.clone();
        let r = tokio::task::spawn_blocking(move || {
            run_scenario(&file, &[("CREST_PG_URL", &u), ("PGPASSWORD", "pa55-s3cret")], &[])
        })
        .await
        .unwrap();
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        assert!(
            server.received().iter().all(|q| q.path == "/replay/state?branches=1"),
            "the value read from the database was used"
        );
        let s = r.summary();
        let p50 = |name: &str| {
            s["names"]
                .as_array()
                .unwrap()
                .iter()
                .find(|n| n["name"] == name)
                .unwrap()["latency_ms"]["p50"]
                .as_f64()
                .unwrap()
        };
        // Side by side: the API took its 30 ms, the query far less (a ratio: a busy machine
        // adds to both, the query's 11.7 ms at a load of 6).
        assert!(
            p50("replay") >= 30.0 && p50("count branches") < 0.5 * p50("replay"),
            "{}",
            s["names"]
        );
        let everything = format!("{}{}{}", r.results_text(), r.stdout, r.stderr);
        assert!(!everything.contains("pa55-s3cret"));
    });
}
