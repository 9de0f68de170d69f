//! One crest process holds 10,000 concurrent connections.
#![allow(clippy::unwrap_used)]

mod common;

use common::{run, target_process};

#[test]
fn ten_thousand_concurrent_connections_from_one_process() {
    // The target runs in its own process so that each side has its own open-file limit.
    let target = target_process(&[
        "--workers",
        "100",
        "--service-time",
        "10ms",
        "--queue",
        "20000",
        "--server-timeout",
        "30s",
        "--size",
        "64",
    ]);
    let url = target.url.clone();

    let r = run(&url, &["-c", "10000", "-d", "4s", "--timeout", "20s"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = r.summary();
    assert_eq!(s["connections"], 10_000, "one connection per user, all open at once");
    assert_eq!(s["failures"], 0, "{}", s["errors"]);
    // Each user waits 1 s per request over 4 s: every one of them made at least one, and crest
    // counted each request the target served (a rate in req/s would depend on how busy the
    // machine is; these counts do not).
    let requests = s["requests"].as_u64().unwrap();
    assert!(requests >= 10_000, "{requests} requests from 10,000 users");
    assert_eq!(requests, common::target_metric(&url, "crest_target_requests_total"));
}
