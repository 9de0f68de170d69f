//! `crest find` against the built-in target with C workers of S seconds: the maximum throughput
//! it reports lies within 5% of C/S and the knee near C users, in both models.
#![allow(clippy::unwrap_used)]

mod common;

use common::crest;
use serde_json::Value;
use std::time::Duration;

fn target(workers: usize, service_ms: u64, timeout: Duration) -> std::net::SocketAddr {
    let config = crest_demo::Config {
        workers,
        service_time: Duration::from_millis(service_ms),
        queue: 256,
        timeout,
        body_size: 256,
        ..Default::default()
    };
    crest_demo::spawn("127.0.0.1:0".parse().unwrap(), config).unwrap()
}

fn find(addr: std::net::SocketAddr, extra: &[&str]) -> (Value, tempfile::TempDir, i32) {
    let dir = tempfile::tempdir().unwrap();
    let out = crest()
        .args([
            "find",
            &format!("http://{addr}/"),
            "--probe",
            "3s",
            "--budget",
            "90s",
            "--quiet",
            "--summary-json",
            "-",
            "--out",
        ])
        .arg(dir.path())
        .args(extra)
        .output()
        .unwrap();
    common::check_counts(&dir.path().join("results.json"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    (v, dir, out.status.code().unwrap_or(-1))
}

/// Runs `crest find` on a target of `workers` x `service_ms`; returns the summary's `capacity`
/// and the nominal capacity C/S. The maximum found must lie between what the workers could do
/// at the service time they really took (on a loaded machine their sleeps overrun by a
/// millisecond or more; the target measures it) and C/S, 5% either side.
///
/// The service times are long (40 to 50 ms, at most 200 req/s) so that the verdict does not
/// depend on how busy the machine is: a timer's overrun is then a small share of a request,
/// and even a debug build on a loaded machine sends far faster than the target serves, so the
/// target, not crest, is what the search finds (at 10 and 20 ms these tests failed on a loaded
/// machine).
/// The search's figures and the steps' answers, when the machine kept time.
fn capacity(workers: usize, service_ms: u64, extra: &[&str]) -> Option<(Value, Value)> {
    let addr = target(workers, service_ms, Duration::from_secs(5));
    let (s, _dir, code) = find(addr, extra);
    assert_eq!(code, 0);
    let c = s["capacity"]["search"].clone();
    let url = format!("http://{addr}/");
    let held = common::target_value(&url, "crest_target_worker_busy_seconds_total")
        / common::target_value(&url, "crest_target_completed_total");
    let nominal = workers as f64 * 1000.0 / service_ms as f64;
    let measured = workers as f64 / held;
    let max = c["max_throughput_rps"].as_f64().unwrap();
    assert!(max <= 1.05 * nominal, "max {max} req/s past C/S = {nominal}: {c}");
    // The search measures the whole machine, crest and target alike. When the target's own
    // clock shows that the machine did not keep time (its 40 ms sleeps took 100 ms on average
    // in a suite run beside two builds), crest slowed as much, and by different amounts from
    // one probe to the next: a plateau it then finds is the machine's, not the target's.
    if held > 1.25 * service_ms as f64 / 1000.0 {
        eprintln!(
            "not judged: the target's workers took {:.1} ms for {service_ms} ms; the search found {c}",
            held * 1000.0
        );
        return None;
    }
    // In the open model a probe fails when less than 95% of its rate was achieved, which is
    // crest's own sending (and the time to its last response): on a busy machine that, not
    // the target, can end the search. It is then a limit crest found and named.
    if c["stopped_because"]
        .as_str()
        .is_some_and(|why| why.contains("of the asked rate was served"))
        && max < 0.95 * measured.min(nominal)
    {
        eprintln!("not judged: the search was limited by crest's sending on this machine: {c}");
        return None;
    }
    // A request's latency is the workers' time plus what the machine adds around it (crest's
    // turn, the target's accept and parse, the scheduler): a few per cent on a quiet machine,
    // 10% beside two builds. At the optimum that share is the machine's, not the target's
    // capacity, and closed-model throughput (users / latency) loses it.
    let around = c["optimal"]["latency_ms"]
        .as_f64()
        .map_or(1.0, |l| (held * 1000.0 / l).min(1.0));
    assert!(
        max >= 0.95 * around * measured.min(nominal),
        "max {max} req/s for C/S = {nominal} ({measured:.1} at the {:.2} ms the target's workers took, {:.0}% of the latency at the optimum): {c}",
        held * 1000.0,
        around * 100.0
    );
    Some((c, s["answers"].clone()))
}

fn check_closed(workers: usize, service_ms: u64) {
    let _serial = common::serial();
    let Some((c, answers)) = capacity(workers, service_ms, &[]) else {
        return;
    };
    // One limit: the search's plateau starts where the steps' answers say it saturates.
    if let Some(users) = answers["limit"]["users"].as_u64() {
        let limit = c["limit"].as_str().unwrap_or_default();
        assert!(
            !limit.contains("plateau") || limit.ends_with(&format!("from {users} users")),
            "the search's limit {limit:?} against the answers' {users} users: {c} {answers}"
        );
    }
    let knee = c["optimal"]["concurrency"]
        .as_f64()
        .unwrap_or_else(|| panic!("no optimal level: {c}"));
    assert!(
        knee >= workers as f64 * 0.75 && knee <= workers as f64 * 1.5,
        "knee {knee} for C = {workers}: {c}"
    );
    assert!(
        c["stopped_because"]
            .as_str()
            .unwrap()
            .contains("throughput stopped growing"),
        "{c}"
    );
    assert!(c["usl"]["lambda"].as_f64().is_some(), "a USL fit: {c}");
}

fn check_open(workers: usize, service_ms: u64) {
    let _serial = common::serial();
    let Some((c, _)) = capacity(workers, service_ms, &["--open"]) else {
        return;
    };
    let truth = workers as f64 * 1000.0 / service_ms as f64;
    let rate = c["optimal"]["rate"]
        .as_f64()
        .unwrap_or_else(|| panic!("no optimal rate: {c}"));
    assert!(
        rate <= truth * 1.05 && rate >= truth * 0.5,
        "optimal rate {rate} for {truth}: {c}"
    );
}

#[test]
fn closed_model_finds_4_workers_of_50ms() {
    check_closed(4, 50);
}

#[test]
fn closed_model_finds_8_workers_of_40ms() {
    check_closed(8, 40);
}

#[test]
fn open_model_finds_4_workers_of_50ms() {
    check_open(4, 50);
}

#[test]
fn open_model_finds_8_workers_of_40ms() {
    check_open(8, 40);
}

#[test]
fn a_server_timeout_is_named_in_the_report() {
    let _serial = common::serial();
    // 2 workers of 50 ms serve 40 req/s; 150 users wait about 3.75 s, past the 2 s timeout, so
    // most requests get 500 after 2 s.
    let addr = target(2, 50, Duration::from_secs(2));
    let r = common::run(&format!("http://{addr}/"), &["-c", "150", "-d", "6s"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.error_count("http_500") > 50, "{}", r.stdout);
    let md = std::fs::read_to_string(r.dir.path().join("report.md")).unwrap();
    assert!(
        md.contains("server or proxy timeout near 2 s"),
        "{}",
        &md[..md.len().min(3000)]
    );
}
