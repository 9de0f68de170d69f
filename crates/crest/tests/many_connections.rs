//! One crest process holds 10,000 concurrent connections.
#![allow(clippy::unwrap_used)]

mod common;

use common::{f, run, target_process};

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
    // Each user waits 1 s per request, so 10,000 users make about 10,000 requests a second.
    let tput = f(&s, &["throughput_rps"]);
    assert!(tput > 5_000.0, "throughput {tput}");
}
