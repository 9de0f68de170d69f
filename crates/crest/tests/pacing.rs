//! The open model sends each arrival on its slot, not on tokio's millisecond timer tick, and
//! reports the service time beside the latency (issue 11, item 4).
#![allow(clippy::unwrap_used)]

mod common;

use common::{f, rt, run_async};
use crest_testkit::{Reply, Server};
use std::time::Duration;

#[test]
fn arrivals_leave_on_their_slot_and_service_time_is_reported() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::ok()).await;
        let r = run_async(&server.url("/"), &["--rate", "200", "-d", "3s", "--threads", "1"]).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let s = r.summary();
        assert_eq!(s["dropped"], 0);
        // Before, arrivals waited for the timer's next millisecond tick: p50 0.7-1 ms. The bounds
        // are loose because the machine is shared; the bench measures precisely.
        let (lag50, lag99) = (f(&s, &["send_lag_ms", "p50"]), f(&s, &["send_lag_ms", "p99"]));
        assert!(lag50 < 0.5, "send lag p50 {lag50} ms");
        assert!(lag99 < 2.0, "send lag p99 {lag99} ms");
        // Latency counts from the slot, service time from the actual send.
        let service = &s["service_ms"];
        assert_eq!(service["count"], s["requests"], "{service}");
        let (service50, latency50) = (f(&s, &["service_ms", "p50"]), f(&s, &["latency_ms", "p50"]));
        assert!(
            service50 > 0.0 && service50 <= latency50,
            "service {service50} ms, latency {latency50} ms"
        );
        let text = std::fs::read_to_string(r.dir.path().join("report.md")).unwrap();
        assert!(text.contains("Service time (from the actual send"), "{text}");
    });
}

#[test]
fn a_run_that_drops_arrivals_is_flagged() {
    let _serial = common::serial();
    rt().block_on(async {
        // Two requests in flight at most, each 50 ms: 40 req/s where 100 are asked for.
        let server = Server::start(|_, _| Reply::delayed(Duration::from_millis(50))).await;
        let r = run_async(&server.url("/"), &["--rate", "100", "-c", "2", "-d", "2s"]).await;
        let s = r.summary();
        let dropped = s["dropped"].as_u64().unwrap();
        assert!(dropped > 0, "{s}");
        let reasons = s["client_bound"].as_array().unwrap();
        assert!(
            reasons
                .iter()
                .any(|x| x.as_str().unwrap().starts_with(&format!("{dropped} of "))),
            "{reasons:?}"
        );
    });
}
