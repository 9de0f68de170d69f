//! A collected run steered from the collector's page: the users and the rate set there are the
//! whole run's, shared over the workers, and every worker's journal makes the collector's
//! changes. A module of the collect tests rather than a test binary of its own.

use super::*;

/// A control call on the collector's page, as the page makes it (the token the workers have),
/// made again while no run is sending yet (409: the workers are joining).
fn steer(c: &Collector, path: &str, body: &str) -> Value {
    let until = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (status, text) = common::call(&c.addr, "POST", path, Some(TOKEN), body);
        if status == 200 {
            return serde_json::from_str(&text).unwrap();
        }
        assert!(
            status == 409 && std::time::Instant::now() < until,
            "{path} {body}: {status} {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the server has received `n` requests in all.
fn received_at_least(server: &Server, n: usize) {
    let until = std::time::Instant::now() + Duration::from_secs(60);
    while server.received().len() < n {
        assert!(
            std::time::Instant::now() < until,
            "the server got {}",
            server.received().len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The steps a run directory's journal kept, as `(index, name, start_s)`.
fn journal_steps(dir: &Path) -> Vec<(u64, String, f64)> {
    std::fs::read_to_string(dir.join("journal.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["entry"] == "step")
        .map(|e| {
            (
                e["index"].as_u64().unwrap(),
                common::step_name(&e),
                e["start_s"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// A collected run steered from the collector's page, as one run on one machine would be: the
/// users asked for are the whole run's, shared out over the workers (6 users over 2 workers are
/// the server's 6 connections, not 12); a pause holds every worker (its step has no request);
/// a stop from the page stops them all; and each worker's own journal has the collector's steps,
/// index for index and instant for instant.
#[test]
fn a_collected_run_is_steered_from_its_page_and_the_users_are_the_whole_runs() {
    let _serial = common::serial();
    let rt = rt();
    let server = rt.block_on(Server::start(|_, _| Reply::delayed(Duration::from_millis(20))));
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    let c = Collector::start(
        &[&url, "--load", "manual", "-d", "120s"],
        2,
        &dir.path().join("run"),
        &[],
    );
    let parts: Vec<PathBuf> = (0..2).map(|i| dir.path().join(format!("w{i}"))).collect();
    let workers: Vec<Child> = (0..2).map(|i| c.worker(i, Some(&parts[i as usize]), &[])).collect();

    let answer = steer(&c, "/api/load", r#"{"users": 6, "spawn_rate": 1000}"#);
    assert_eq!(answer["step"], "6 users");
    received_at_least(&server, 120);
    assert_eq!(steer(&c, "/api/pause", "{}")["paused"], true);
    std::thread::sleep(Duration::from_millis(500));
    steer(&c, "/api/resume", "{}");
    let before = server.received().len();
    received_at_least(&server, before + 120);
    steer(&c, "/api/stop", "{}");
    // The page says why the run ended in words, as a run's own page does.
    let until = std::time::Instant::now() + Duration::from_secs(60);
    let ended = loop {
        let (status, text) = common::call(&c.addr, "GET", "/api/state", Some(TOKEN), "");
        let state: Value = serde_json::from_str(&text).unwrap_or_default();
        if status == 200 && !state["ended"].is_null() {
            break state["ended"].clone();
        }
        assert!(std::time::Instant::now() < until, "{status} {text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(ended["reason"], "a stop condition", "{ended}");
    for w in workers {
        ok(w);
    }
    let (code, _, err, r) = c.finish();
    assert_eq!(code, Some(0), "{err}");

    assert_eq!(r["ended_by"], "condition", "{err}");
    assert_eq!(r["stopped_by"]["condition"], "stop (live page)");
    assert_eq!(common::step_names(&r), ["manual", "6 users", "paused", "6 users"]);
    assert_eq!(r["config"]["concurrency"], 6);
    assert_eq!(
        server.connections(),
        6,
        "6 users over 2 workers are 6 users in all, each on its own connection"
    );
    let per_step = |i: u64| common::requests_in_step(&r, i);
    assert_eq!(per_step(0), 0, "no users before the first command");
    assert_eq!(per_step(2), 0, "the pause held every worker");
    assert!(per_step(1) > 0 && per_step(3) > 0);
    let sent: u64 = (0..4).map(per_step).sum();
    assert_eq!(
        sent + r["abandoned"].as_u64().unwrap_or(0),
        server.received().len() as u64
    );
    let collector = journal_steps(&dir.path().join("run"));
    assert_eq!(collector.len(), 3, "{collector:?}");
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(journal_steps(p), collector, "worker {i} made the collector's changes");
        let w = &r["workers"][i];
        assert_eq!(w["ended_by"], "condition", "{w:#}");
        assert!(w["requests"].as_u64().unwrap() > 0, "{w:#}");
    }
}

/// A rate set on a collected run's page is the whole run's: every worker paces its share of
/// it on one grid from the instant of the change, so the arrivals the workers sent after it are
/// each on a slot of that one rate, and no slot was sent twice.
#[test]
fn a_rate_set_on_a_collected_runs_page_is_one_schedule_over_the_workers() {
    let _serial = common::serial();
    let rt = rt();
    let server = rt.block_on(Server::start(|_, _| Reply::ok()));
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    let c = Collector::start(
        &[&url, "--rate", "40", "-d", "5s", "--log-requests"],
        2,
        &dir.path().join("run"),
        &[],
    );
    let parts: Vec<PathBuf> = (0..2).map(|i| dir.path().join(format!("w{i}"))).collect();
    let workers: Vec<Child> = (0..2).map(|i| c.worker(i, Some(&parts[i as usize]), &[])).collect();
    let rate = 250.0;
    assert_eq!(steer(&c, "/api/load", &format!(r#"{{"rate": {rate}}}"#))["rate"], rate);
    for w in workers {
        ok(w);
    }
    let (code, s, err, r) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    let steps = journal_steps(&dir.path().join("run"));
    let [(_, name, since)] = steps.as_slice() else {
        panic!("{steps:?}")
    };
    assert_eq!(name, "250/s");
    let since_us = since * 1e6;
    let mut slots = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(journal_steps(p), steps, "worker {i}");
        let after: Vec<u64> = schedule(p).into_iter().filter(|&t| t as f64 >= since_us).collect();
        assert!(!after.is_empty(), "worker {i} sent nothing at the new rate");
        for t in after {
            let k = (t as f64 - since_us) * rate / 1e6;
            assert!(
                (k - k.round()).abs() < 0.01,
                "worker {i}: an arrival at {t} µs is off the grid of {rate}/s from {since} s ({k})"
            );
            slots.push(k.round() as u64);
        }
    }
    let n = slots.len();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len(), n, "a slot was sent by two workers");
    let open = &r["open"];
    assert_eq!(
        open["arrivals"].as_u64().unwrap(),
        s["requests"].as_u64().unwrap() + open["dropped"].as_u64().unwrap_or(0),
        "{open:#}"
    );
    assert_eq!(s["requests"], server.received().len() as u64);
}
