//! Counts against what the server saw, in every way an exchange can fail: a server that reads a
//! request and closes without answering, one that aborts before reading the body or in the
//! middle of its answer, one that dies with requests in hand, and HTTP/2 connections that crash.
//!
//! Each server counts what it read, answered, dropped and reset; crest's totals must equal
//! them. crest sends nothing twice on its own: a request of which a byte was written is counted
//! once, as what became of it.
#![allow(clippy::unwrap_used)]

mod common;

use common::{rt, run_async, Run};
use crest_testkit::faulty::{Counts, Fault, Faulty};
use crest_testkit::h2::{H2Reply, H2Server};
use crest_testkit::{Reply, Server};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One outcome's totals over the run, from results.json.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Totals {
    count: u64,
    bytes_sent: u64,
    bytes_received: u64,
}

/// Every outcome's totals, by key.
fn outcomes(r: &Run) -> BTreeMap<String, Totals> {
    let mut out: BTreeMap<String, Totals> = BTreeMap::new();
    for s in r.results()["stats"].as_array().unwrap() {
        let t = out.entry(s["outcome"].as_str().unwrap().to_string()).or_default();
        t.count += s["count"].as_u64().unwrap();
        t.bytes_sent += s["bytes_sent"].as_u64().unwrap();
        t.bytes_received += s["bytes_received"].as_u64().unwrap();
    }
    out
}

fn count(o: &BTreeMap<String, Totals>, key: &str) -> u64 {
    o.get(key).map_or(0, |t| t.count)
}

/// crest's totals against a faulty server's: as many requests as it read, one success per
/// answer, and each failure in the class of what the server did.
fn reconcile(r: &Run, c: Counts, failed_as: &str) -> BTreeMap<String, Totals> {
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = r.summary();
    let o = outcomes(r);
    let n = |k: &str| s[k].as_u64().unwrap();
    let why = format!("server {c:?}, crest {o:?}");
    assert_eq!(n("requests"), c.read, "one request per request the server read: {why}");
    assert_eq!(n("successes"), c.answered, "one success per answer: {why}");
    assert_eq!(n("failures"), c.dropped + c.reset, "{why}");
    assert_eq!(count(&o, failed_as), c.dropped + c.reset, "{why}");
    assert_eq!(n("abandoned"), 0, "{why}");
    let failed = o[failed_as];
    assert!(
        failed.bytes_sent > 0,
        "a failed request's bytes were sent, and say so: {why}"
    );
    o
}

/// `crest run` on a scenario of this text, from async tests.
async fn scenario(text: String) -> Run {
    tokio::task::spawn_blocking(move || {
        let (_dir, file) = common::scenario_file(&text);
        common::run_scenario(&file, &[], &["--quiet"])
    })
    .await
    .unwrap()
}

/// `crest run` on a scenario whose users each send `GET /` to `addr` and think for `think`,
/// with `more` top-level YAML (the load), from async tests.
async fn request_then_think(addr: std::net::SocketAddr, think: &str, more: &str) -> Run {
    scenario(format!(
        "target: http://{addr}\nsteps:\n  - request: {{path: /}}\n  - think: {think}\n{more}"
    ))
    .await
}

/// `crest run` against a server with `fault`, with `args`; what the server counted after.
async fn against(fault: Fault, args: &[&str]) -> (Run, Counts) {
    let server = Faulty::start(fault, Duration::ZERO).await;
    let r = run_async(&server.url(), args).await;
    (r, server.counts())
}

#[test]
fn a_request_the_server_read_and_dropped_is_one_closed_failure_never_sent_again() {
    let _serial = common::serial();
    rt().block_on(async {
        for method in [&["-m", "POST", "--body", "x"][..], &["-m", "GET"]] {
            // A crashing worker: each connection's 4th request is read, then the connection
            // closes unanswered. crest used to send it again on a new connection and report 40
            // requests, 0 failed, while the server read 52 and dropped 12.
            let (r, c) = against(Fault::Drop { nth: 4 }, &[method, &["-c", "2", "-n", "40"]].concat()).await;
            assert!(c.dropped >= 9, "{c:?}");
            let o = reconcile(&r, c, "closed");
            assert_eq!(o["closed"].bytes_received, 0, "nothing was answered");
            assert_eq!(o.len(), 2, "only successes and closes: {o:?}");
        }
    });
}

#[test]
fn a_connection_aborted_before_the_body_was_read_is_one_reset_failure() {
    let _serial = common::serial();
    rt().block_on(async {
        let (r, c) = against(
            Fault::CloseBeforeBody { nth: 3 },
            &["--body", "payload", "-c", "2", "-n", "30"],
        )
        .await;
        assert!(c.reset >= 9, "{c:?}");
        let o = reconcile(&r, c, "reset");
        assert_eq!(o.len(), 2, "only successes and resets: {o:?}");
    });
}

#[test]
fn a_reset_in_the_middle_of_an_answer_is_one_reset_failure_with_the_bytes_that_came() {
    let _serial = common::serial();
    rt().block_on(async {
        let (r, c) = against(Fault::ResetMidResponse { nth: 2 }, &["-c", "2", "-n", "20"]).await;
        assert_eq!(c.reset, 10, "{c:?}");
        let o = reconcile(&r, c, "reset");
        assert!(o["reset"].bytes_received > 0, "half answers arrived: {o:?}");
    });
}

#[test]
fn a_server_killed_mid_run_shows_the_requests_it_held_as_closed_and_later_ones_as_refused() {
    let _serial = common::serial();
    rt().block_on(async {
        // 20 answers, then each of the 4 users' next request is held until the server dies
        // with all 4 in hand. crest used to report those 4 as connect_refused with 0 bytes
        // sent: it sent them again to the dead server.
        let server = Faulty::start(Fault::Die { answer: 20, hold: 4 }, Duration::ZERO).await;
        let r = run_async(&server.url(), &["-c", "4", "-n", "60"]).await;
        assert!(server.dead());
        let c = server.counts();
        assert_eq!(
            c,
            Counts {
                read: 24,
                answered: 20,
                dropped: 4,
                reset: 0
            }
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let s = r.summary();
        let o = outcomes(&r);
        assert_eq!(s["requests"], 60, "{o:?}");
        assert_eq!(count(&o, "success"), c.answered, "{o:?}");
        assert_eq!(count(&o, "closed"), c.dropped, "the held requests: {o:?}");
        assert_eq!(
            count(&o, "connect_refused"),
            60 - c.read,
            "every later request found nothing listening: {o:?}"
        );
        assert_eq!(o.len(), 3, "{o:?}");
        assert!(o["closed"].bytes_sent > 0, "{o:?}");
        assert_eq!(o["connect_refused"].bytes_sent, 0, "{o:?}");
    });
}

/// An HTTP/2 server that crashes (closes the connection without GOAWAY) on each connection's
/// `nth` stream; returns it and the number of crashes so far.
async fn crashing_h2(nth: u64) -> (H2Server, Arc<AtomicU64>) {
    let crashes = Arc::new(AtomicU64::new(0));
    let seen: Mutex<HashMap<u64, u64>> = Mutex::default();
    let counted = crashes.clone();
    let server = H2Server::start(move |req, _| {
        let mut seen = seen.lock().unwrap();
        let k = seen.entry(req.connection).or_default();
        *k += 1;
        if *k == nth {
            counted.fetch_add(1, Ordering::SeqCst);
            H2Reply::Crash
        } else {
            H2Reply::ok()
        }
    })
    .await;
    (server, crashes)
}

#[test]
fn an_http2_connection_that_crashes_fails_the_stream_it_held_once() {
    let _serial = common::serial();
    rt().block_on(async {
        // crest's own framing (one stream per connection), then the h2 crate's (many).
        for (users, streams) in [("2", "1"), ("1", "10")] {
            let (server, crashes) = crashing_h2(4).await;
            let r = run_async(
                &server.url("/"),
                &["--http2", "--max-streams", streams, "-c", users, "-n", "30"],
            )
            .await;
            assert_eq!(r.code, 0, "{}", r.stderr);
            let read = server.received().len() as u64;
            let crashed = crashes.load(Ordering::SeqCst);
            let s = r.summary();
            let o = outcomes(&r);
            let why = format!("--max-streams {streams}: read {read}, crashed {crashed}, crest {o:?}");
            assert!(crashed >= 5, "{why}");
            assert_eq!(s["requests"].as_u64().unwrap(), read, "nothing sent twice: {why}");
            assert_eq!(count(&o, "success"), read - crashed, "{why}");
            assert_eq!(
                count(&o, "closed") + count(&o, "reset"),
                crashed,
                "one failure per crash: {why}"
            );
            assert_eq!(
                o.len(),
                1 + usize::from(count(&o, "closed") > 0) + usize::from(count(&o, "reset") > 0)
            );
        }
    });
}

/// A server that ends each connection with GOAWAY and NO_ERROR on its 12th stream, as nginx does
/// after `keepalive_requests`, while crest has up to 10 streams in flight on it: the streams
/// above the GOAWAY's last one were never processed, so they go again on a new connection rather
/// than count as failures the server never saw. crest's requests are the server's.
#[test]
fn streams_a_graceful_goaway_left_unprocessed_are_sent_again() {
    let _serial = common::serial();
    rt().block_on(async {
        for (users, streams) in [("10", "10"), ("4", "1")] {
            let seen: Mutex<HashMap<u64, u64>> = Mutex::default();
            let goaways = Arc::new(AtomicU64::new(0));
            let counted = goaways.clone();
            let server = H2Server::start(move |req, _| {
                let mut seen = seen.lock().unwrap();
                let k = seen.entry(req.connection).or_default();
                *k += 1;
                // Past 10, so that a stream sent again (among a new connection's first 10)
                // is never refused twice.
                if *k == 12 {
                    counted.fetch_add(1, Ordering::SeqCst);
                    H2Reply::Drain
                } else {
                    H2Reply::ok()
                }
            })
            .await;
            let r = run_async(
                &server.url("/"),
                &["--http2", "--max-streams", streams, "-c", users, "-n", "300"],
            )
            .await;
            let read = server.received().len() as u64;
            let o = outcomes(&r);
            let why = format!(
                "--max-streams {streams}: read {read}, {} GOAWAYs, crest {o:?}",
                goaways.load(Ordering::SeqCst)
            );
            assert_eq!(r.code, 0, "{why}: {}", r.stderr);
            assert!(goaways.load(Ordering::SeqCst) >= 10, "{why}");
            assert!(r.summary()["connections"].as_u64().unwrap() > 10, "{why}");
            assert_eq!(r.summary()["requests"].as_u64().unwrap(), read, "{why}");
            assert_eq!(count(&o, "success"), 300, "{why}");
        }
    });
}

#[test]
fn only_requests_sent_and_unanswered_at_the_end_are_abandoned() {
    let _serial = common::serial();
    rt().block_on(async {
        // Every user's request is answered, then the run ends while the users think: the
        // server received exactly what crest completed, and nothing was cut off. crest used to
        // count the 5 thinking users as 5 requests cut off.
        let server = Faulty::start(Fault::Drop { nth: u64::MAX }, Duration::ZERO).await;
        let r = request_then_think(
            server.addr,
            "5s",
            "defaults: {timeout: 1s}\nload: {users: 5, duration: 500ms}\n",
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let s = r.summary();
        assert_eq!(server.counts().answered, 5);
        assert_eq!(s["requests"], 5);
        assert_eq!(s["abandoned"], 0, "{s:#}");

        // Requests the server holds past the grace period are cut off: each one it read.
        let server = Faulty::start(
            Fault::Die {
                answer: 0,
                hold: u64::MAX,
            },
            Duration::ZERO,
        )
        .await;
        let r = run_async(&server.url(), &["-c", "3", "-d", "500ms", "--timeout", "30s"]).await;
        let s = r.summary();
        assert_eq!(s["requests"], 0, "{s:#}");
        assert_eq!(s["abandoned"].as_u64().unwrap(), server.counts().read, "{s:#}");
        assert_eq!(s["abandoned"], 3, "{s:#}");
    });
}

#[test]
fn a_connection_the_server_closed_while_idle_is_replaced_before_anything_is_sent() {
    let _serial = common::serial();
    rt().block_on(async {
        // The server closes each connection after its first answer, unannounced; the users
        // think between requests, so the close arrives while the connection is idle. Each
        // next request goes out on a new connection, and nothing fails or goes out twice.
        let server = Faulty::start(Fault::CloseAfterAnswer { nth: 1 }, Duration::ZERO).await;
        let r = request_then_think(server.addr, "300ms", "load: {threads: 2, loops: 4}\n").await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let s = r.summary();
        let c = server.counts();
        assert_eq!(
            c,
            Counts {
                read: 8,
                answered: 8,
                dropped: 0,
                reset: 0
            }
        );
        assert_eq!(
            (s["requests"].as_u64(), s["failures"].as_u64()),
            (Some(8), Some(0)),
            "{s:#}"
        );
    });
}

#[test]
fn redirect_chains_end_at_their_timeout_or_a_long_location_and_a_step_s_own_timeout_holds() {
    let _serial = common::serial();
    rt().block_on(async {
        // A redirect loop whose every hop takes 150 ms, under a 1 s timeout: each hop used to
        // get the whole second again, so the chain ran to the redirect limit (7.5 s).
        let server = Server::start(|r, _| match r.path.as_str() {
            "/fast" => Reply::ok(),
            "/hang" => Reply::Hang,
            "/long" => Reply::redirect(302, &format!("/{}", "a".repeat(9000))),
            _ => Reply::Delayed(Duration::from_millis(150), Box::new(Reply::redirect(302, "/loop"))),
        })
        .await;
        let base = format!("target: {}\n", server.url("").trim_end_matches('/'));
        let r = scenario(format!(
            "{base}defaults: {{redirects: 50, timeout: 1s}}\nsteps:\n  - request: {{path: /loop}}\nload: {{threads: 1, loops: 1}}\n"
        ))
        .await;
        let s = r.summary();
        assert_eq!(r.error_count("timeout"), 1, "{s:#}");
        let hops = server.received().len();
        assert!(hops < 50, "the chain stopped at its timeout, after {hops} hops");

        // A Location past 8 KiB is not followed (one that grew at each hop took 30 MB a user).
        let before = server.received().len();
        let r = scenario(format!(
            "{base}defaults: {{redirects: 5}}\nsteps:\n  - request: {{path: /long}}\nload: {{threads: 1, loops: 1}}\n"
        ))
        .await;
        assert_eq!(r.error_count("protocol"), 1, "{}", r.stdout);
        assert_eq!(server.received().len(), before + 1, "not followed");

        // A step's own timeout, shorter than the one before it, is honoured: the session's
        // timer was still armed for the earlier, later deadline.
        let r = scenario(format!(
            "{base}steps:\n  - request: {{path: /fast}}\n  - request: {{path: /hang, timeout: 300ms}}\nload: {{threads: 1, loops: 1}}\n"
        ))
        .await;
        let s = r.summary();
        assert_eq!(r.error_count("timeout"), 1, "{s:#}");
        assert!(
            common::f(&s, &["latency_ms", "max"]) < 20_000.0,
            "the hanging request ended at its own 300 ms, not the default 30 s: {s:#}"
        );
    });
}

#[test]
fn redirects_beyond_the_limit_are_refused_where_they_are_written() {
    let (_dir, file) = common::scenario_file(
        "target: http://127.0.0.1:1\nsteps:\n  - request: {path: /}\ndefaults: {redirects: 4294967295}\nload: {users: 1, duration: 1s}\n",
    );
    let out = common::crest().arg("validate").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("scenario.yaml:4:23: ") && stderr.contains("redirects: at most 50"),
        "{stderr}"
    );
}
