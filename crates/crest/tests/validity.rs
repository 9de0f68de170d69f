//! crest watches itself: a run that crest, not the target, limited is flagged.
#![allow(clippy::unwrap_used)]

mod common;

use common::run;
use std::time::Duration;

fn target() -> std::net::SocketAddr {
    target_of(Duration::from_millis(1))
}

fn target_of(service_time: Duration) -> std::net::SocketAddr {
    let config = crest_demo::Config {
        workers: 64,
        service_time,
        queue: 10_000,
        ..Default::default()
    };
    crest_demo::spawn("127.0.0.1:0".parse().unwrap(), config).unwrap()
}

#[test]
fn a_starved_generator_is_flagged_and_strict_exits_3() {
    let _serial = common::serial();
    // One engine thread asked for 200,000 requests a second: far beyond one core.
    let r = run(
        &format!("http://{}/", target()),
        &["--threads", "1", "--rate", "200000", "-c", "64", "-d", "3s", "--strict"],
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    let s = r.summary();
    let reasons: Vec<&str> = s["client_bound"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        reasons
            .iter()
            .any(|x| x.contains("dropped at the cap") || x.contains("started late") || x.contains("CPU")),
        "{reasons:?}"
    );
    let md = std::fs::read_to_string(r.dir.path().join("report.md")).unwrap();
    assert!(md.contains("crest itself may have limited this run"), "{md}");
}

#[test]
fn a_comfortable_run_is_valid() {
    let _serial = common::serial();
    // Four users on a target of 50 ms: crest's own time between requests, even in a debug
    // build on a busy machine, is a small share of each user's time, so the verdict does not
    // depend on the machine. (The open model's send lag is crest's own timing, which a busy
    // machine does delay; its rules are tested on set figures in analysis/tests/validity.rs.)
    let r = run(
        &format!("http://{}/", target_of(Duration::from_millis(50))),
        &["-c", "4", "-d", "2s", "--strict"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.summary()["client_bound"].as_array().unwrap().len(),
        0,
        "{}",
        r.summary()["client_bound"]
    );
}
