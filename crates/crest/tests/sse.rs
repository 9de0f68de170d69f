//! Server-sent event steps against a real SSE server built here: crest's subscriptions, events,
//! reconnects and failures equal what the server counted.
#![allow(clippy::unwrap_used)]

mod common;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use common::{by_name as name, rt, run_scenario, scenario_file};
use futures_util::stream::{self, StreamExt};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What the server saw.
#[derive(Default)]
struct Counts {
    subscriptions: AtomicU64,
    events: AtomicU64,
    refused: AtomicU64,
    /// `Last-Event-ID` values received, in order.
    last_ids: Mutex<Vec<String>>,
    /// The header every subscription must carry, and the cookie.
    missing_headers: AtomicU64,
}

/// `/feed?n=N&per=P&stall=1`: events numbered on from `Last-Event-ID` (or 1), `per` of them
/// per subscription before the server ends the stream (all `n` when not given), or stalls
/// after them with `stall`.
async fn feed(State(c): State<Arc<Counts>>, Query(q): Query<HashMap<String, String>>, h: HeaderMap) -> Response {
    c.subscriptions.fetch_add(1, Ordering::SeqCst);
    let accepts = h.get("accept").is_some_and(|v| v == "text/event-stream");
    let flow_header = h.get("x-client").is_some_and(|v| v == "crest-test");
    let logged_in = !q.contains_key("auth")
        || (h.get("cookie").is_some_and(|v| v == "sid=s1") && h.get("x-sid").is_some_and(|v| v == "s1"));
    if !accepts || !flow_header || !logged_in {
        c.missing_headers.fetch_add(1, Ordering::SeqCst);
    }
    let from = match h.get("last-event-id") {
        Some(v) => {
            let v = v.to_str().unwrap().to_string();
            c.last_ids.lock().unwrap().push(v.clone());
            v.parse::<u64>().unwrap() + 1
        }
        None => 1,
    };
    let n: u64 = q.get("n").map_or(3, |v| v.parse().unwrap());
    let per: u64 = q.get("per").map_or(n, |v| v.parse().unwrap());
    let stall = q.contains_key("stall");
    let fail = q.contains_key("fail");
    let ids: Vec<u64> = (from..=n).take(per as usize).collect();
    let counted = c.clone();
    let events = stream::iter(ids).map(move |i| {
        counted.events.fetch_add(1, Ordering::SeqCst);
        let kind = if i % 2 == 0 { "even" } else { "tick" };
        Ok::<_, std::io::Error>(
            Event::default()
                .id(i.to_string())
                .event(kind)
                .retry(std::time::Duration::from_millis(10))
                .data(format!("{{\"n\": {i}}}")),
        )
    });
    let tail = if stall {
        stream::pending().boxed()
    } else if fail {
        // The server breaks off the stream: hyper aborts the connection mid-body.
        stream::once(async { Err(std::io::Error::other("broken")) }).boxed()
    } else {
        stream::empty().boxed()
    };
    Sse::new(events.chain(tail)).into_response()
}

async fn login() -> impl IntoResponse {
    ([("set-cookie", "sid=s1; Path=/")], "{\"sid\": \"s1\"}")
}

async fn busy(State(c): State<Arc<Counts>>) -> StatusCode {
    c.subscriptions.fetch_add(1, Ordering::SeqCst);
    c.refused.fetch_add(1, Ordering::SeqCst);
    StatusCode::SERVICE_UNAVAILABLE
}

async fn not_a_stream(State(c): State<Arc<Counts>>) -> &'static str {
    c.subscriptions.fetch_add(1, Ordering::SeqCst);
    "plain text"
}

/// Starts the server on an ephemeral loopback port.
async fn server() -> (String, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let app = axum::Router::new()
        .route("/feed", axum::routing::get(feed))
        .route("/busy", axum::routing::get(busy))
        .route("/login", axum::routing::get(login))
        .route("/text", axum::routing::get(not_a_stream))
        .with_state(counts.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, counts)
}

async fn run(url: &str, steps: &str, load: &str, args: &[&str]) -> common::Run {
    let text = format!(
        "target: ${{env:CREST_TARGET}}\ndefaults:\n  headers: {{X-Client: crest-test}}\nsteps:\n{steps}\nload: {load}\n"
    );
    let (dir, file) = scenario_file(&text);
    let url = url.to_string();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let r = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_scenario(&file, &[("CREST_TARGET", &url)], &args)
    })
    .await
    .unwrap();
    drop(dir);
    r
}

const FEED: &str = "  - sse:
      name: feed
      path: /feed?n=4
      until: {count: 4}
      close: true
      extract: {last: $.n, kind: {header: event}}
      check: {json: {$.n: \"4\"}}
";

#[test]
fn every_subscription_and_event_is_counted_in_the_closed_model() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, c) = server().await;
        let r = run(&url, FEED, "{users: 3, iterations: 12}", &[]).await;
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let s = r.summary();
        let feed = name(&s, "feed");
        assert_eq!(feed["requests"], 12, "{feed}");
        assert_eq!(s["failures"], 0, "{}", r.stdout);
        assert_eq!(c.subscriptions.load(Ordering::SeqCst), 12);
        assert_eq!(c.events.load(Ordering::SeqCst), 48);
        assert_eq!(feed["messages"]["received"], 48, "{feed}");
        assert_eq!(c.missing_headers.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn the_subscription_carries_the_users_cookies_and_templated_headers() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, c) = server().await;
        let steps = "  - request: {path: /login, extract: {sid: $.sid}}
  - sse: {name: mine, path: /feed?n=2&auth=1, headers: {X-Sid: \"${sid}\"}, until: {count: 2}, close: true}
";
        let r = run(&url, steps, "{users: 2, iterations: 4}", &[]).await;
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        assert_eq!(c.subscriptions.load(Ordering::SeqCst), 4);
        assert_eq!(c.missing_headers.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn the_open_model_counts_the_same() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, c) = server().await;
        let r = run(&url, FEED, "{rate: 20, iterations: 10}", &[]).await;
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let s = r.summary();
        let feed = name(&s, "feed");
        let done = feed["requests"].as_u64().unwrap();
        assert_eq!(done, 10, "{feed}");
        assert_eq!(c.subscriptions.load(Ordering::SeqCst), done);
        assert_eq!(
            feed["messages"]["received"].as_u64().unwrap(),
            c.events.load(Ordering::SeqCst)
        );
    });
}

#[test]
fn a_stream_kept_open_is_read_on_by_the_next_step() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, c) = server().await;
        // Two steps on one subscription: the `even` events the second waits for come after the
        // `tick` the first took (ids 1..4: tick, even, tick, even).
        let steps = "  - sse: {name: first, path: /feed?n=4&stall=1, until: {event: tick}}
  - sse: {name: rest, path: /feed?n=4&stall=1, until: {event: even, count: 2}, close: true}
";
        let r = run(&url, steps, "{users: 2, iterations: 6}", &[]).await;
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let s = r.summary();
        assert_eq!(c.subscriptions.load(Ordering::SeqCst), 6);
        assert_eq!(name(&s, "first")["messages"]["received"], 6);
        assert_eq!(name(&s, "rest")["messages"]["received"], 18);
        assert_eq!(c.events.load(Ordering::SeqCst), 24);
    });
}

#[test]
fn streams_the_server_ends_are_resumed_with_the_last_event_id() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, c) = server().await;
        // Two events per subscription, six wanted: two reconnects each time.
        let steps = "  - sse: {name: resumed, path: /feed?n=6&per=2, until: {count: 6}, reconnect: 3, close: true}
";
        let r = run(&url, steps, "{users: 2, iterations: 5}", &[]).await;
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let s = r.summary();
        assert_eq!(name(&s, "resumed")["requests"], 5);
        assert_eq!(name(&s, "resumed")["messages"]["received"], 30);
        assert_eq!(name(&s, "resumed reconnect")["requests"], 10);
        assert_eq!(c.subscriptions.load(Ordering::SeqCst), 15);
        assert_eq!(c.events.load(Ordering::SeqCst), 30);
        let mut ids = c.last_ids.lock().unwrap().clone();
        ids.sort();
        assert_eq!(ids, [vec!["2"; 5], vec!["4"; 5]].concat());

        // Without reconnects the end is `closed`, or a success when the user says so.
        let steps = "  - sse: {name: ended, path: /feed?n=6&per=2, until: {count: 6}}
";
        let r = run(&url, steps, "{users: 1, iterations: 3}", &[]).await;
        assert_eq!(r.error_count("closed"), 3, "{}", r.stdout);
        let steps = "  - sse: {name: ended, path: /feed?n=6&per=2, until: {count: 6}, on_end: success}
";
        let r = run(&url, steps, "{users: 1, iterations: 3}", &[]).await;
        assert_eq!(r.summary()["failures"], 0, "{}", r.stdout);
        assert_eq!(name(&r.summary(), "ended")["messages"]["received"], 6);
    });
}

#[test]
fn a_stream_broken_off_is_closed_or_reset() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, c) = server().await;
        let steps = "  - sse: {name: broken, path: /feed?n=2&fail=1, until: {count: 5}}
";
        let r = run(&url, steps, "{users: 2, iterations: 6}", &[]).await;
        let (closed, reset) = (r.error_count("closed"), r.error_count("reset"));
        assert_eq!(closed + reset, 6, "{}", r.stdout);
        assert_eq!(r.summary()["failures"], 6, "{}", r.stdout);
        assert_eq!(c.subscriptions.load(Ordering::SeqCst), 6);
    });
}

#[test]
fn a_stalled_stream_is_a_receive_timeout() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, c) = server().await;
        let steps = "  - sse: {name: stalled, path: /feed?n=1&stall=1, until: {count: 2}, timeout: 300ms}
";
        let r = run(&url, steps, "{users: 2, iterations: 4}", &[]).await;
        assert_eq!(r.error_count("receive_timeout"), 4, "{}", r.stdout);
        assert_eq!(c.subscriptions.load(Ordering::SeqCst), 4);
        assert_eq!(name(&r.summary(), "stalled")["messages"]["received"], 4);
        // A silence past `max_gap` fails the check once it has lasted that long, before the
        // step's own timeout.
        let steps = "  - sse: {name: gappy, path: /feed?n=1&stall=1, until: {count: 2}, timeout: 60s, max_gap: 100ms}
";
        let r = run(&url, steps, "{users: 1, iterations: 2}", &[]).await;
        assert_eq!(r.error_count("check_failed"), 2, "{}", r.stdout);
        assert_eq!(r.error_count("receive_timeout"), 0, "{}", r.stdout);
    });
}

#[test]
fn a_503_storm_and_a_wrong_content_type_fail_the_subscription() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, c) = server().await;
        let steps = "  - sse: {name: busy, path: /busy}
";
        let r = run(&url, steps, "{users: 4, iterations: 40}", &[]).await;
        assert_eq!(r.error_count("http_503"), 40, "{}", r.stdout);
        assert_eq!(c.refused.load(Ordering::SeqCst), 40);
        let steps = "  - sse: {name: text, path: /text}
";
        let r = run(&url, steps, "{users: 1, iterations: 2}", &[]).await;
        assert_eq!(r.error_count("protocol"), 2, "{}", r.stdout);
        assert_eq!(c.subscriptions.load(Ordering::SeqCst), 42);
    });
}

#[test]
fn bad_sse_steps_are_located_and_exit_2() {
    let text = "target: http://127.0.0.1:9\nsteps:\n  - sse:\n      path: /x\n      until: {matches: \"(\"}\n      on_end: maybe\nload: {users: 1}\n";
    let (_dir, file) = scenario_file(text);
    let out = common::crest().arg("validate").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("scenario.yaml:5:") && stderr.contains("matches"),
        "{stderr}"
    );
    assert!(
        stderr.contains("scenario.yaml:6:") && stderr.contains("on_end"),
        "{stderr}"
    );
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sse.yaml");
    let out = common::crest().arg("validate").arg(&example).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}
