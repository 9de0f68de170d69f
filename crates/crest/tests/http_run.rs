//! `crest run` against real servers on loopback: what the server received and what crest said.
#![allow(clippy::unwrap_used)]

mod common;

use common::{f, rt, run, run_async};
use crest_testkit::{refused_addr, Reply, Server};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

#[test]
fn fixed_delay_p50_is_within_five_percent() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::delayed(Duration::from_millis(20))).await;
        let r = run_async(&server.url("/"), &["-c", "4", "-d", "3s"]).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let s = r.summary();
        let p50 = f(&s, &["latency_ms", "p50"]);
        // The server's own clock: on each keep-alive connection, one request arrives as soon
        // as the last was answered, so the median gap between arrivals is what a request
        // really took (the server's 20 ms, whatever its timer added on a loaded machine) plus
        // crest's own time between requests. crest's p50 must be that, within 5%.
        let received = server.received();
        let mut gaps: Vec<f64> = Vec::new();
        for c in 0..=received.iter().map(|r| r.connection).max().unwrap_or(0) {
            let at: Vec<_> = received.iter().filter(|r| r.connection == c).map(|r| r.at).collect();
            gaps.extend(at.windows(2).map(|w| (w[1] - w[0]).as_secs_f64() * 1000.0));
        }
        gaps.sort_by(f64::total_cmp);
        let gap = gaps[gaps.len() / 2];
        assert!(gap >= 19.0, "the server saw requests {gap} ms apart");
        assert!(
            p50 >= 19.0 && p50 <= gap * 1.01 && p50 >= gap * 0.95,
            "p50 {p50} ms for a 20 ms server whose requests arrived {gap} ms apart"
        );
        // Every request the server saw was answered and counted: none lost, none invented.
        assert_eq!(s["requests"].as_u64().unwrap(), server.received().len() as u64);
        assert_eq!(s["failures"], 0);
        assert_eq!(s["status_codes"]["200"], s["requests"]);
        assert_eq!(server.connections(), 4, "keep-alive: one connection per user");
        let tput = f(&s, &["throughput_rps"]);
        // At most what 4 users of 20 ms can do; at least most of what the gaps the server saw
        // allow (a busy machine widens the gaps, not this ratio).
        assert!(
            tput <= 205.0 && tput >= 0.7 * 4000.0 / gap,
            "4 users / 20 ms = 200 req/s at most, got {tput} with requests {gap} ms apart"
        );
    });
}

/// A server that answers at once, except that it freezes every response for 2 s once, from
/// 1 s after its first request.
async fn stall_server() -> Server {
    let first: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    Server::start(move |_, _| {
        let t0 = *first.get_or_init(Instant::now);
        let (from, to) = (t0 + Duration::from_secs(1), t0 + Duration::from_secs(3));
        let now = Instant::now();
        if now >= from && now < to {
            Reply::delayed(to - now)
        } else {
            Reply::ok()
        }
    })
    .await
}

#[test]
fn open_model_percentiles_show_a_stall_in_proportion_to_its_length() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = stall_server().await;
        let r = run_async(&server.url("/"), &["--rate", "200", "-d", "6s"]).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let s = r.summary();
        // Arrivals keep coming during the 2 s stall and wait for its end, so latencies measured
        // from the intended start spread evenly from 2 s to 0: a third of the 6 s run is affected.
        // P(latency > x) = (2 s - x) / 6 s, so p90 ≈ 1.4 s and p99 ≈ 1.94 s. Latency counts
        // from the schedule, so a busy machine can only add to these: its bounds are lower
        // ones, and the spread between p90 and p99 (0.54 s), which no delay common to the
        // stalled requests changes.
        let p50 = f(&s, &["latency_ms", "p50"]);
        let p90 = f(&s, &["latency_ms", "p90"]);
        let p99 = f(&s, &["latency_ms", "p99"]);
        let max = f(&s, &["latency_ms", "max"]);
        // Most requests miss the stall, unless the machine kept crest from its schedule (p50
        // 1.2 s at a load of 12): then crest says it limited the run, and the figures are its
        // own delay, not the server's.
        let kept_up = s["client_bound"].as_array().is_some_and(|a| a.is_empty());
        assert!(
            !kept_up || p50 < 0.1 * p90,
            "most requests miss the stall: p50 {p50}, p90 {p90}, {}",
            s["send_lag_ms"]
        );
        assert!(p90 >= 1150.0, "p90 {p90}");
        assert!(p99 >= 1750.0 && p99 <= max, "p99 {p99}, max {max}");
        assert!((250.0..=850.0).contains(&(p99 - p90)), "p90 {p90}, p99 {p99}");
        assert_eq!(s["dropped"], 0);
        assert!(f(&s, &["achieved_rps"]) <= 201.0, "{s}");
        assert_eq!(f(&s, &["target_rps"]), 200.0);
        // The schedule, not the machine, sets how many arrivals there are; each one reached
        // the server.
        let sent = s["requests"].as_u64().unwrap();
        assert!((1180..=1201).contains(&sent), "6 s at 200/s, got {sent}");
        assert_eq!(sent, server.received().len() as u64);
        // Not a terminal: a plain progress line every 5 s, like pgbench -P.
        let progress: Vec<&str> = r.stderr.lines().filter(|l| l.starts_with("progress:")).collect();
        assert!(!progress.is_empty(), "{}", r.stderr);
        assert!(
            progress[0].contains("req/s") && progress[0].contains("p99"),
            "{}",
            progress[0]
        );
    });
}

#[test]
fn closed_model_series_shows_the_stall_as_a_gap() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = stall_server().await;
        let r = run_async(&server.url("/"), &["-c", "10", "-d", "5s"]).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let results = r.results();
        let per_s: Vec<u64> = results["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["requests"].as_u64().unwrap())
            .collect();
        // Seconds are compared with each other, never with a rate: how many requests a second
        // the machine allows depends on how busy it is.
        assert!(per_s.len() >= 5, "{per_s:?}");
        assert!(per_s[0] > 100, "busy first second: {per_s:?}");
        assert_eq!(per_s[2], 0, "nothing completes during the stall: {per_s:?}");
        assert!(
            per_s[1] < per_s[0] / 10,
            "the stall starts early in second 1: {per_s:?}"
        );
        // Answers come again after the stall; how many a second depends on how busy the machine
        // is then (4,836 against a first second of 18,047 beside a release build).
        assert!(per_s[3] > per_s[1], "the target recovers: {per_s:?}");
        assert_eq!(
            per_s.iter().sum::<u64>() + results["abandoned"].as_u64().unwrap(),
            server.received().len() as u64,
            "every request the server saw is in a second, or abandoned at the end"
        );
        // In the closed model each user waits, so no request sees more than the stall itself.
        let max = f(&r.summary(), &["latency_ms", "max"]);
        assert!((1900.0..2300.0).contains(&max), "max {max}");
    });
}

#[test]
fn refused_connections_are_counted_not_fatal() {
    let _serial = common::serial();
    let addr = refused_addr();
    let r = run(&format!("http://{addr}/"), &["-n", "20", "-c", "2"]);
    // Measured and written, but no request succeeded: exit 1.
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.error_count("connect_refused"), 20);
    let s = r.summary();
    assert_eq!(s["failures"], 20);
    assert_eq!(s["ended_by"], "requests");
    let example = s["errors"][0]["example"].as_str().unwrap();
    assert!(example.to_lowercase().contains("refused"), "{example}");
}

#[test]
fn a_reset_in_the_middle_of_a_body_is_a_reset() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::ResetMidBody {
            declared: 100_000,
            sent: 1000,
        })
        .await;
        let r = run_async(&server.url("/"), &["-n", "6", "-c", "2"]).await;
        // Measured and written, but no request succeeded: exit 1.
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert_eq!(r.error_count("reset"), 6, "{}", r.stdout);
        let s = r.summary();
        assert!(
            s["bytes_received"].as_u64().unwrap() >= 6 * 1000,
            "partial bodies are counted"
        );
        // The head arrived, but the response failed: no 200 in the status table (issue 12).
        assert!(s["status_codes"]["200"].is_null(), "{}", s["status_codes"]);
        assert_eq!(server.received().len(), 6);
    });
}

#[test]
fn a_silent_server_times_out() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::Hang).await;
        let started = Instant::now();
        let r = run_async(&server.url("/"), &["-n", "4", "-c", "2", "--timeout", "300ms"]).await;
        // Measured and written, but no request succeeded: exit 1.
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert_eq!(r.error_count("timeout"), 4);
        let s = r.summary();
        let p50 = f(&s, &["latency_ms", "p50"]);
        // At least the timeout; the upper bound only says not many times it (a busy machine's
        // timers fire late).
        assert!((295.0..1000.0).contains(&p50), "timeouts take the timeout: {p50}");
        assert!(started.elapsed() < Duration::from_secs(30));
        assert_eq!(server.connections(), 4, "a timed-out connection is never reused");
    });
}

#[test]
fn five_megabyte_bodies_are_read_and_counted() {
    let _serial = common::serial();
    rt().block_on(async {
        let size = 5 * 1024 * 1024;
        let server = Server::start(move |_, _| Reply::Respond {
            delay: Duration::ZERO,
            status: 200,
            body_len: size,
        })
        .await;
        let r = run_async(&server.url("/big"), &["-n", "5", "-c", "1"]).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let s = r.summary();
        assert_eq!(s["status_codes"]["200"], 5);
        let got = s["bytes_received"].as_u64().unwrap();
        assert!(got >= 5 * size as u64 && got < 5 * size as u64 + 5 * 200, "{got}");
        // Time to first byte comes well before the end of a 5 MB body.
        assert!(f(&s, &["ttfb_ms", "p50"]) <= f(&s, &["latency_ms", "p50"]));
    });
}

#[test]
fn https_with_a_private_ca_insecure_or_trusted() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start_tls(|_, _| Reply::ok()).await;
        let url = server.url("/secure");

        let r = run_async(&url, &["-n", "3", "-c", "1"]).await;
        assert_eq!(r.error_count("tls"), 3, "an unknown CA is refused: {}", r.stdout);

        let r = run_async(&url, &["-n", "3", "-c", "1", "--insecure"]).await;
        assert_eq!(r.summary()["status_codes"]["200"], 3, "{}", r.stdout);

        let ca = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(ca.path(), server.ca_pem.as_deref().unwrap()).unwrap();
        let r = run_async(&url, &["-n", "3", "-c", "1", "--cacert", ca.path().to_str().unwrap()]).await;
        let s = r.summary();
        assert_eq!(s["status_codes"]["200"], 3, "{}", r.stdout);
        assert_eq!(s["connections"], 1);
        assert!(
            f(&s, &["connect_ms", "max"]) > 0.0,
            "TLS handshake is in the connect time"
        );
    });
}

#[test]
fn count_no_keepalive_headers_and_body_reach_the_server() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::ok()).await;
        let r = run_async(
            &server.url("/api/v1/validate?x=1"),
            &[
                "-n",
                "20",
                "-c",
                "2",
                "--no-keepalive",
                "-H",
                "Content-Type: application/json",
                "--body",
                "{\"a\":1}",
            ],
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let got = server.received();
        assert_eq!(got.len(), 20, "exactly -n requests");
        assert_eq!(server.connections(), 20, "--no-keepalive: a connection per request");
        assert_eq!(r.summary()["connections"], 20);
        for req in &got {
            assert_eq!(req.method, "POST");
            assert_eq!(req.path, "/api/v1/validate?x=1");
            assert_eq!(req.body, b"{\"a\":1}");
            assert!(req
                .headers
                .iter()
                .any(|(n, v)| n.eq_ignore_ascii_case("content-type") && v == "application/json"));
        }
        let results = r.results();
        assert_eq!(results["names"][0], "POST /api/v1/validate");
    });
}

#[test]
fn open_model_counts_arrivals_dropped_at_the_cap() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::delayed(Duration::from_millis(500))).await;
        let r = run_async(&server.url("/"), &["--rate", "100", "-c", "5", "-d", "2s"]).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let s = r.summary();
        let dropped = s["dropped"].as_u64().unwrap();
        let sent = s["requests"].as_u64().unwrap() + r.results()["abandoned"].as_u64().unwrap();
        // 5 in flight at 500 ms each is 10 req/s at most; the other ~90% of 200 arrivals drop.
        assert!((15..=30).contains(&sent), "sent {sent}");
        assert_eq!(
            sent + dropped,
            200,
            "every arrival is either sent or counted as dropped"
        );
        assert_eq!(server.received().len() as u64, sent);
        let series_dropped: u64 = r.results()["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["dropped"].as_u64().unwrap())
            .sum();
        assert_eq!(series_dropped, dropped);
    });
}

/// The progress line of a run that ends between two of its lines times its last window up to
/// the run's end: its rate was the requests over whole seconds, past the end (1,473 requests of
/// a 4 s run over 5 s: 294.6 req/s beside the summary's 368.0).
#[test]
fn the_last_progress_line_rates_requests_over_the_time_they_were_sent_in() {
    let _serial = common::serial();
    let t = common::target_process(&["--workers", "4", "--service-time", "10ms"]);
    // 4.2 s: the fifth second, which prints the line, holds sending for sure.
    let r = common::run(&t.url, &["-c", "4", "-d", "4200ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let line = r
        .stderr
        .lines()
        .find(|l| l.starts_with("progress:"))
        .unwrap_or_else(|| panic!("{}", r.stderr));
    let words: Vec<&str> = line.split_whitespace().collect();
    let number = |s: &str| s.replace(',', "").parse::<f64>().unwrap();
    let (requests, rate) = (number(words[2]), number(words[4]));
    let s = r.summary();
    // Over 4.2 s of sending, not 5.
    assert_eq!(words[1], "4s", "{line}");
    let expected = requests / 4.2;
    assert!(
        (rate - expected).abs() <= 0.02 * expected,
        "{line}: {rate} against {expected}"
    );
    assert!(s["requests"].as_f64().unwrap() >= requests, "{line}");
}
