//! The request log (`--log-requests`, `output: log_requests`): one row per request the server
//! saw, with the user and iteration that sent it, its status and outcome, readable by `zcat`
//! and by a killed run up to the kill; and a small run's requests kept one by one in
//! results.json for the report's scatter, none past the cap.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, read_log, rt, run_async, run_scenario, scenario_file, target_process, LogRow as Row};
use crest_testkit::{Reply, Server};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

fn num(r: &Row, col: &str) -> u64 {
    r[col].parse().unwrap_or_else(|_| panic!("{col} of {r:?}"))
}

/// `zcat`, as a user reads the log, agrees with the decoder (skipped where there is none).
fn zcat_lines(path: &Path) -> Option<usize> {
    let out = std::process::Command::new("zcat").arg(path).output().ok()?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8(out.stdout).unwrap().lines().count())
}

/// Quick mode, 3 users and 90 requests against a server that answers every seventh with 503:
/// one row per request the server saw, each user's iterations counted 0, 1, 2 ... 29 with none
/// missing or repeated (`-n 30x` is thirty per user), the 503s with their status, a new connection only on each user's first request.
#[test]
fn each_request_is_a_row_with_its_user_iteration_and_outcome() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, i| {
            if i % 7 == 3 {
                Reply::Respond {
                    delay: Duration::ZERO,
                    status: 503,
                    body_len: 5,
                }
            } else {
                Reply::delayed(Duration::from_millis(2))
            }
        })
        .await;
        let r = run_async(&server.url("/"), &["-c", "3", "-n", "30x", "--log-requests"]).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let path = r.dir.path().join("request-log.csv.gz");
        let rows = read_log(&path);
        let served = server.received().len();
        assert_eq!((rows.len(), served), (90, 90));
        assert_eq!(zcat_lines(&path).unwrap_or(91), 91, "zcat reads every member");

        let mut seen: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for row in &rows {
            seen.entry(num(row, "user")).or_default().push(num(row, "iteration"));
        }
        assert_eq!(seen.keys().copied().collect::<Vec<_>>(), [0, 1, 2]);
        for (user, mut its) in seen {
            its.sort_unstable();
            assert_eq!(its, (0..30).collect::<Vec<_>>(), "user {user}");
        }
        let unavailable = (0..90u64).filter(|i| i % 7 == 3).count();
        let failed: Vec<&Row> = rows.iter().filter(|r| r["outcome"] != "success").collect();
        assert_eq!(failed.len(), unavailable);
        assert!(failed
            .iter()
            .all(|r| r["outcome"] == "http_503" && r["status"] == "503"));
        assert!(rows
            .iter()
            .filter(|r| r["outcome"] == "success")
            .all(|r| r["status"] == "200"));
        assert_eq!(r.error_count("http_503"), unavailable as u64);
        for row in &rows {
            assert_eq!(row["name"], "GET /");
            assert!(num(row, "intended_us") <= num(row, "start_us"), "{row:?}");
            assert!(num(row, "first_byte_us") <= num(row, "total_us"), "{row:?}");
            assert!(num(row, "bytes_sent") > 0 && num(row, "bytes_received") > 0, "{row:?}");
        }
        // Keep-alive: each user opened one connection, on its first request.
        let connected: Vec<&Row> = rows.iter().filter(|r| !r["connect_us"].is_empty()).collect();
        assert_eq!(connected.len(), 3);
        assert!(connected.iter().all(|r| r["iteration"] == "0"));
        // Rows come in the order the requests ended.
        let ends: Vec<u64> = rows
            .iter()
            .map(|r| num(r, "intended_us") + num(r, "total_us"))
            .collect();
        assert!(ends.windows(2).all(|w| w[0] <= w[1]));

        // The same requests are in results.json one by one, for the report's scatter.
        let v = r.results();
        let points = v["points"].as_array().unwrap();
        assert_eq!(points.len(), 90);
        assert_eq!(points.iter().filter(|p| p[3] == "http_503").count(), unavailable);
        let html = std::fs::read_to_string(r.dir.path().join("report.html")).unwrap();
        assert!(html.contains(r#"id="each-request""#) && html.contains(&format!("HTTP 503 ({unavailable})")));

        // --force replaces the log with the rest of the run; no run's files are written over.
        let again = crest()
            .arg("run")
            .arg(server.url("/"))
            .args(["-c", "1", "-n", "5", "--log-requests", "--quiet", "--force", "--out"])
            .arg(r.dir.path())
            .output()
            .unwrap();
        assert_eq!(
            again.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&again.stderr)
        );
        assert_eq!(read_log(&path).len(), 5);
    });
}

/// A scenario asks for the log itself; a request that times out is a row with its outcome and
/// no status, and users of a threads x loops run count their iterations 0..loops.
#[test]
fn a_scenario_logs_timeouts_per_user_and_iteration() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|q, _| {
            if q.path == "/slow" {
                Reply::delayed(Duration::from_secs(3))
            } else {
                Reply::ok()
            }
        })
        .await;
        let (_d, file) = scenario_file(&format!(
            "target: http://{}\ndefaults: {{timeout: 300ms}}\nsteps:\n  - request: {{path: /fast, name: fast}}\n  - request: {{path: /slow, name: slow}}\non_failure: continue\nload: {{threads: 2, loops: 3}}\noutput: {{log_requests: true}}\n",
            server.addr
        ));
        let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[], &[]))
            .await
            .unwrap();
        assert_eq!(r.code, 0, "{}", r.stderr);
        let rows = read_log(&r.dir.path().join("request-log.csv.gz"));
        assert_eq!(rows.len(), 12, "2 users x 3 loops x 2 requests");
        for row in &rows {
            let (user, it) = (num(row, "user"), num(row, "iteration"));
            assert!(user < 2 && it < 3, "{row:?}");
            match row["name"].as_str() {
                "fast" => assert_eq!((row["outcome"].as_str(), row["status"].as_str()), ("success", "200")),
                "slow" => {
                    assert_eq!((row["outcome"].as_str(), row["status"].as_str()), ("timeout", ""));
                    assert!(row["first_byte_us"].is_empty());
                    let took = num(row, "total_us");
                    assert!((300_000..3_000_000).contains(&took), "{row:?}");
                }
                other => panic!("name {other}"),
            }
        }
        for user in 0..2 {
            let mut its: Vec<(u64, String)> = rows
                .iter()
                .filter(|r| num(r, "user") == user)
                .map(|r| (num(r, "iteration"), r["name"].clone()))
                .collect();
            its.sort();
            let want: Vec<(u64, String)> = (0..3)
                .flat_map(|i| [(i, "fast".to_string()), (i, "slow".to_string())])
                .collect();
            assert_eq!(its, want, "user {user}");
        }
    });
}

/// Past 10,000 requests results.json keeps none one by one and the report says why, while the
/// log still has every one.
#[test]
fn a_large_run_logs_every_request_but_keeps_no_points() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::ok()).await;
        let r = run_async(&server.url("/"), &["-c", "8", "-n", "10500", "--log-requests"]).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let rows = read_log(&r.dir.path().join("request-log.csv.gz"));
        assert_eq!(rows.len(), 10_500);
        assert_eq!(server.received().len(), 10_500);
        assert!(r.results().get("points").is_none());
        let html = std::fs::read_to_string(r.dir.path().join("report.html")).unwrap();
        assert!(!html.contains(r#"id="each-request""#));
        assert!(html.contains("at most 10,000 requests; this one made 10,500"), "{html}");
        // Users are those of the run, each with its own count of iterations.
        let users: std::collections::BTreeSet<u64> = rows.iter().map(|r| num(r, "user")).collect();
        assert_eq!(users.into_iter().collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
    });
}

/// SIGKILL: the log was written and synced as the run went, so it reads, as one gzip stream,
/// to within the last seconds of what the server saw.
#[test]
fn a_killed_runs_log_reads_up_to_the_kill() {
    let _serial = common::serial();
    let t = target_process(&["--workers", "4", "--service-time", "5ms"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let child = common::spawn_out(
        &["run", &t.url, "-c", "4", "-d", "30s", "--quiet", "--log-requests"],
        &out,
    );
    std::thread::sleep(Duration::from_millis(5_500));
    common::kill(child);
    let served = common::target_metric(&t.url, "crest_target_requests_total");
    let path = out.join("request-log.csv.gz");
    let rows = read_log(&path);
    if let Some(n) = zcat_lines(&path) {
        assert_eq!(n, rows.len() + 1);
    }
    let per_s = served as f64 / 5.5;
    assert!(rows.len() as u64 <= served, "{} rows, {served} served", rows.len());
    assert!(
        (served - rows.len() as u64) as f64 <= 3.5 * per_s,
        "{} rows of {served} served ({per_s:.0}/s): more than the last seconds were lost",
        rows.len()
    );
    assert!(rows.iter().all(|r| r["outcome"] == "success"));

    // The rebuilt results keep the same requests one by one as far as the journal went.
    let r = crest().arg("report").arg(&out).output().unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    common::check_counts(&out.join("results.json"));
}

/// Open model: arrivals go to idle users, and each row still names the user that sent it and
/// that user's own count of iterations, with no pair twice and no gap.
#[test]
fn open_model_rows_name_the_user_and_its_iteration() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::delayed(Duration::from_millis(3))).await;
        let r = run_async(
            &server.url("/"),
            &["--rate", "300", "-d", "2s", "-c", "20", "--log-requests"],
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let rows = read_log(&r.dir.path().join("request-log.csv.gz"));
        assert_eq!(rows.len(), server.received().len());
        assert!(rows.len() >= 300, "{} rows", rows.len());
        let mut seen: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for row in &rows {
            assert!(num(row, "intended_us") <= num(row, "start_us"), "{row:?}");
            seen.entry(num(row, "user")).or_default().push(num(row, "iteration"));
        }
        for (user, mut its) in seen {
            its.sort_unstable();
            assert_eq!(its, (0..its.len() as u64).collect::<Vec<_>>(), "user {user}");
        }
        // Each started at its slot on the schedule (n/300 s), whatever the server did.
        for row in &rows {
            let slots = num(row, "intended_us") as f64 * 300.0 / 1e6;
            assert!((slots - slots.round()).abs() < 0.001, "{row:?} is not on a slot");
        }
    });
}
