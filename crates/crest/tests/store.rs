//! The team store (`--store`, docs/store.md) against a real PostgreSQL: runs written and read
//! back, migrations on empty, older and contended databases, the Grafana dashboard's queries,
//! and an unreachable store. Each test has a database of its own, dropped after. .ci/run starts
//! the server and sets CREST_TEST_PG_URL; there these tests must run.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, pg_url, target_metric, target_process};
use serde_json::Value;
use std::path::Path;

/// A database of this test's own on the test server, dropped when this is.
struct Db {
    admin: String,
    name: String,
    url: String,
}

impl Db {
    fn new(admin: &str, tag: &str) -> Db {
        let name = format!("crest_store_{tag}_{}", std::process::id());
        sql(admin, &format!("DROP DATABASE IF EXISTS {name}"));
        sql(admin, &format!("CREATE DATABASE {name}"));
        let mut url = url::Url::parse(admin).unwrap();
        url.set_path(&format!("/{name}"));
        Db {
            admin: admin.to_string(),
            name,
            url: url.to_string(),
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        sql(
            &self.admin,
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

/// Runs `statements` and returns the rows of the last, each as text columns.
fn sql(url: &str, statements: &str) -> Vec<Vec<Option<String>>> {
    common::rt().block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        let mut rows = Vec::new();
        for m in client
            .simple_query(statements)
            .await
            .unwrap_or_else(|e| panic!("{e:?}\n{statements}"))
        {
            if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
                rows.push((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect());
            }
        }
        rows
    })
}

fn one(url: &str, statement: &str) -> String {
    sql(url, statement)[0][0].clone().unwrap()
}

/// `crest run URL ARGS --out TMP --summary-json -`.
fn run(url: &str, args: &[&str]) -> common::Run {
    common::run(url, args)
}

#[test]
fn runs_written_to_the_store_read_back_as_their_results_and_the_dashboard_queries_them() {
    let _serial = common::serial();
    let Some(admin) = pg_url() else { return };
    let db = Db::new(&admin, "runs");
    let t = target_process(&["--workers", "4", "--service-time", "5ms"]);
    let mut runs = Vec::new();
    for _ in 0..2 {
        let r = run(
            &t.url,
            &[
                "-c",
                "2,4",
                "-d",
                "2s",
                "--threshold",
                "error_rate < 50%",
                "--label",
                "nightly",
                "--store",
                &db.url,
            ],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stderr.contains("stored:  run "), "{}", r.stderr);
        runs.push(r);
    }
    let sent: u64 = runs.iter().map(|r| r.summary()["requests"].as_u64().unwrap()).sum();
    assert_eq!(sent, target_metric(&t.url, "crest_target_requests_total"));

    let stored = crest_store::load_runs(&db.url, None).unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!(crest_store::load_runs(&db.url, Some("nightly")).unwrap().len(), 2);
    assert!(crest_store::load_runs(&db.url, Some("weekly")).unwrap().is_empty());
    assert_eq!(
        one(&db.url, "SELECT string_agg(label, ',') FROM crest.runs"),
        "nightly,nightly"
    );

    // `crest history --store` reads the same runs: the newest judged against the one before.
    let page = tempfile::tempdir().unwrap();
    let o = crest()
        .args([
            "history", "--store", &db.url, "--label", "nightly", "--check", "--format", "json", "--out",
        ])
        .arg(page.path().join("history.html"))
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    // Two short runs may differ beyond the noise or not; either way the gate judged them.
    assert!(matches!(o.status.code(), Some(0 | 5)), "{stdout}\n{stderr}");
    let h: Value = serde_json::from_str(&stdout).unwrap();
    let verdict = &h["check"][0];
    assert_eq!(verdict["label"], "nightly", "{h}");
    assert_eq!(verdict["run"], "store run 2", "{h}");
    assert_eq!(verdict["baseline"], serde_json::json!(["store run 1"]), "{h}");
    assert!(page.path().join("history.html").is_file());
    for (k, ((place, results), r)) in stored.iter().zip(&runs).enumerate() {
        assert_eq!(place, &format!("store run {}", k + 1));
        let file = std::fs::read_to_string(r.dir.path().join("results.json")).unwrap();
        let on_disk = crest_model::results::parse(&file).unwrap();
        assert_eq!(
            serde_json::to_value(results).unwrap(),
            serde_json::to_value(&on_disk).unwrap(),
            "store run {} is not its results.json",
            k + 1
        );
        // The headline columns are the summary's figures.
        let s = r.summary();
        let row = &sql(
            &db.url,
            &format!(
                "SELECT requests, successes, failures, p99_ms, throughput_rps, thresholds_passed, unit, throughput_per_s,
                        (SELECT sum(requests) FROM crest.series WHERE run_id = {id}),
                        (SELECT count(*) FROM crest.steps WHERE run_id = {id}),
                        (SELECT count(*) FROM crest.answers WHERE run_id = {id} AND answer = 'threshold' AND passed)
                 FROM crest.runs WHERE id = {id}",
                id = k + 1
            ),
        )[0];
        let col = |i: usize| row[i].clone().unwrap();
        assert_eq!(col(0), s["requests"].to_string());
        assert_eq!(col(1), s["successes"].to_string());
        assert_eq!(col(2), s["failures"].to_string());
        let close = |stored: &str, json: &Value| {
            let (a, b) = (stored.parse::<f64>().unwrap(), json.as_f64().unwrap());
            assert!(
                (a - b).abs() <= 1e-6 * b.abs().max(1.0),
                "{a} stored, {b} in the summary"
            );
        };
        close(&col(3), &s["latency_ms"]["p99"]);
        close(&col(4), &s["throughput_rps"]);
        assert_eq!(col(5), "t");
        assert_eq!(col(6), "requests");
        close(&col(7), &s["success_rps"]);
        let per_interval: u64 = on_disk.intervals.iter().map(|i| i.requests).sum();
        assert_eq!(col(8), per_interval.to_string());
        assert_eq!(col(9), s["segments"].as_array().unwrap().len().to_string());
        assert_eq!(col(10), "1");
    }

    // Every query of the dashboard, its Grafana macros and variables given concrete values,
    // runs against this store and returns rows.
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/grafana/crest-dashboard.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut queries = Vec::new();
    collect_sql(&dashboard, &mut queries);
    assert!(queries.len() >= 10, "{} queries", queries.len());
    for q in &queries {
        let concrete = concrete(q, 2);
        let rows = sql(&db.url, &concrete);
        assert!(!rows.is_empty(), "no rows from the dashboard's query:\n{concrete}");
    }
}

/// Every `rawSql` of the panels and every query of the variables.
fn collect_sql(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("rawSql", Value::String(s)) => out.push(s.clone()),
                    ("query", Value::String(s)) if m.get("type").and_then(Value::as_str) == Some("query") => {
                        out.push(s.clone())
                    }
                    _ => collect_sql(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_sql(x, out)),
        _ => {}
    }
}

/// A dashboard query as Grafana would send it: its macros expanded over the last day, `$label`
/// the runs without a label, `$run` the run `run`.
fn concrete(q: &str, run: i64) -> String {
    let group_alias = regex::Regex::new(r"\$__timeGroupAlias\(([^,]+),[^)]*\)").unwrap();
    let group = regex::Regex::new(r"\$__timeGroup\(([^,]+),[^)]*\)").unwrap();
    let filter = regex::Regex::new(r"\$__timeFilter\(([^)]+)\)").unwrap();
    let q = group_alias.replace_all(q, r#"date_trunc('second', $1) AS "time""#);
    let q = group.replace_all(&q, "date_trunc('second', $1)");
    let q = filter.replace_all(&q, "$1 BETWEEN now() - interval '1 day' AND now() + interval '1 hour'");
    assert!(!q.contains("$__"), "a macro the test does not expand: {q}");
    q.replace("$label", "'nightly'").replace("$run", &run.to_string())
}

#[test]
fn migrations_apply_to_an_empty_database_and_to_an_older_one_keeping_its_runs() {
    let Some(admin) = pg_url() else { return };
    let latest = crest_store::MIGRATIONS.len() as i32;
    assert!(latest >= 2);

    let empty = Db::new(&admin, "empty");
    assert_eq!(crest_store::migrate(&empty.url, None).unwrap(), latest);
    assert_eq!(
        crest_store::migrate(&empty.url, None).unwrap(),
        latest,
        "again: nothing to do"
    );
    assert_eq!(
        one(&empty.url, "SELECT count(*) FROM crest.schema_version"),
        latest.to_string()
    );
    assert!(crest_store::load_runs(&empty.url, None).unwrap().is_empty());

    let older = Db::new(&admin, "older");
    assert_eq!(crest_store::migrate(&older.url, Some(1)).unwrap(), 1);
    sql(
        &older.url,
        "INSERT INTO crest.runs (started_at, label, unit, duration_s, ended_by, throughput_per_s,
             throughput_rps, requests, successes, failures, error_rate, p50_ms, p95_ms, p99_ms,
             crest_version, results)
         VALUES ('2026-01-01T00:00:00Z', 'nightly', 'requests', 10, 'duration', 100, 100, 1000,
             990, 10, 0.01, 1, 2, 3, '0.1.0', '{}');
         INSERT INTO crest.series (run_id, at, requests, successes, failures, p50_ms, p95_ms, p99_ms)
         VALUES (1, '2026-01-01T00:00:00Z', 100, 99, 1, 1, 2, 3)",
    );
    assert_eq!(sql(&older.url, "SELECT column_name FROM information_schema.columns WHERE table_schema = 'crest' AND table_name = 'runs' AND column_name = 'dirty'").len(), 0);
    assert_eq!(crest_store::migrate(&older.url, None).unwrap(), latest);
    assert_eq!(
        sql(
            &older.url,
            "SELECT label, requests, dirty IS NULL, (SELECT count(*) FROM crest.series) FROM crest.runs"
        )[0],
        ["nightly", "1000", "t", "1"].map(|s| Some(s.to_string()))
    );

    // A store a later crest migrated is refused by name, not misread.
    sql(&older.url, "INSERT INTO crest.schema_version (version) VALUES (99)");
    let e = crest_store::migrate(&older.url, None).unwrap_err().to_string();
    assert!(e.contains("version 99"), "{e}");
}

#[test]
fn two_crests_migrating_one_database_at_once_both_succeed() {
    let Some(admin) = pg_url() else { return };
    for round in 0..3 {
        let db = Db::new(&admin, &format!("race{round}"));
        let results: Vec<_> = std::thread::scope(|s| {
            let both: Vec<_> = (0..2)
                .map(|_| s.spawn(|| crest_store::migrate(&db.url, None)))
                .collect();
            both.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for r in results {
            assert_eq!(r.unwrap(), crest_store::MIGRATIONS.len() as i32);
        }
        assert_eq!(
            one(&db.url, "SELECT count(*) FROM crest.schema_version"),
            crest_store::MIGRATIONS.len().to_string()
        );
    }
}

#[test]
fn an_unreachable_store_leaves_the_run_directory_exits_4_and_shows_no_password() {
    let _serial = common::serial();
    let t = target_process(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = crest()
        .args([
            "run",
            &t.url,
            "-c",
            "1",
            "-d",
            "1s",
            "--store",
            "postgres://u:secretpw@127.0.0.1:1/x",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(dir.path().join("results.json").is_file());
    let warning: Vec<&str> = stderr.lines().filter(|l| l.contains("store")).collect();
    assert_eq!(warning.len(), 1, "one line about the store: {stderr}");
    assert!(warning[0].contains("127.0.0.1:1"), "{stderr}");
    assert!(
        !stdout.contains("secretpw") && !stderr.contains("secretpw"),
        "{stdout}\n{stderr}"
    );
    for f in std::fs::read_dir(dir.path()).unwrap() {
        let path = f.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let text = if path.extension().is_some_and(|e| e == "gz") {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut s).unwrap();
            s
        } else {
            String::from_utf8_lossy(&bytes).into_owned()
        };
        assert!(!text.contains("secretpw"), "{} shows the password", path.display());
    }

    // From the environment likewise.
    let dir = tempfile::tempdir().unwrap();
    let out = crest()
        .args(["run", &t.url, "-c", "1", "-d", "1s", "-q", "--out"])
        .arg(dir.path())
        .env("CREST_STORE", "postgres://u:secretpw@127.0.0.1:1/x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("secretpw"));
}

/// A store URL that cannot name a store (another database's, one asking for TLS) and an output
/// file whose directory is missing are refused before anything is sent: exit 2 naming the flag,
/// the target's counters untouched, no run directory. They were found after the whole run,
/// as exit 4. The password stays out of the message.
#[test]
fn a_bad_store_url_or_output_path_is_refused_before_the_run() {
    let _serial = common::serial();
    let t = target_process(&[]);
    let tmp = tempfile::tempdir().unwrap();
    for (flag, value, said) in [
        ("--store", "mysql://u:secretpw@h/x", "--store: store mysql://u:"),
        (
            "--store",
            "postgres://u:secretpw@h/x?sslmode=require",
            "sslmode=require: crest connects without TLS",
        ),
        (
            "--junit",
            "no/such/dir/x.xml",
            "--junit no/such/dir/x.xml: no/such/dir is not a directory",
        ),
        (
            "--markdown-summary",
            "no/such/s.md",
            "--markdown-summary no/such/s.md: no/such is not a directory",
        ),
    ] {
        let out_dir = tmp.path().join("run");
        let out = crest()
            .current_dir(tmp.path())
            .args(["run", &t.url, "-c", "1", "-d", "1s", flag, value, "--out"])
            .arg(&out_dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.contains(said), "{flag} {value}: {stderr}");
        assert!(!stderr.contains("secretpw"), "{stderr}");
        assert!(!out_dir.exists(), "{flag} {value}: a run directory was left");
    }
    assert_eq!(target_metric(&t.url, "crest_target_requests_total"), 0);
}
