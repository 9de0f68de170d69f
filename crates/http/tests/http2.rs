//! HTTP/2 against real servers on loopback: prior knowledge, TLS with ALPN, `auto`, shared
//! connections, RST_STREAM and GOAWAY.
#![allow(clippy::unwrap_used)]

use crest_http::{build_request, Call, CallOptions, Endpoint, Exchange, Session};
use crest_model::plan::TlsOptions;
use crest_model::protocol::{HttpOptions, HttpVersion};
use crest_model::Outcome;
use crest_testkit::h2::{H2Reply, H2Server};
use std::sync::Arc;
use std::time::Duration;

fn endpoint(url: &str, ca: Option<&str>, version: HttpVersion, max_streams: u32) -> (Arc<Endpoint>, String) {
    let tls = TlsOptions {
        insecure: false,
        ca_pem: ca.map(|c| c.as_bytes().to_vec()),
        client_pem: None,
    };
    let http = HttpOptions {
        version,
        max_streams,
        ..HttpOptions::default()
    };
    let (e, path) = Endpoint::parse_with(url, &tls, &http).unwrap();
    (Arc::new(e), path)
}

async fn send(e: &Endpoint, s: &mut Session, method: &str, path: &str, body: &[u8]) -> Exchange {
    let request = build_request(
        method,
        path,
        e.authority(),
        &[("X-Test".into(), "1".into())],
        body,
        true,
    )
    .unwrap();
    let call = Call {
        request: &request,
        how: &CallOptions {
            head: false,
            timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(2),
            keepalive: true,
        },
    };
    e.call(s, &call, None).await
}

/// Runs `users` users, each sending `each` requests to `path`; returns every exchange.
async fn run(e: &Arc<Endpoint>, path: &str, users: usize, each: usize) -> Vec<Exchange> {
    let mut tasks = Vec::new();
    for _ in 0..users {
        let (e, path) = (e.clone(), path.to_string());
        tasks.push(tokio::spawn(async move {
            let mut s = Session::default();
            let mut out = Vec::new();
            for _ in 0..each {
                out.push(send(&e, &mut s, "GET", &path, b"").await);
            }
            out
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all
}

/// One thread, as each engine thread runs its own runtime: connections are shared per thread.
#[tokio::test]
async fn prior_knowledge_shares_connections_up_to_the_stream_limit() {
    let server = H2Server::start(|_, _| H2Reply::delayed(Duration::from_millis(2))).await;
    let (e, path) = endpoint(&server.url("/items?x=1"), None, HttpVersion::Http2, 5);
    let all = run(&e, &path, 10, 20).await;
    assert!(all
        .iter()
        .all(|x| x.outcome == Outcome::Success && x.status == Some(200)));
    assert_eq!(server.connections(), 2, "10 users at 5 streams per connection");
    assert_eq!(
        all.iter().filter(|x| x.connect.is_some()).count(),
        2,
        "only openers time a connect"
    );
    assert!(all.iter().all(|x| x.first_byte.is_some() && x.bytes_received > 0));
    let got = server.received();
    assert_eq!(got.len(), 200);
    assert_eq!(got[0].path, "/items?x=1");
    assert!(got[0]
        .headers
        .iter()
        .any(|(n, v)| n == ":authority" && *v == e.authority()));
    assert!(got[0].headers.iter().any(|(n, v)| n == "x-test" && v == "1"));
    assert!(
        !got[0].headers.iter().any(|(n, _)| n == "host" || n == "connection"),
        "connection-specific headers are not sent"
    );
    // Streams of one connection really overlap.
    let mut s = Session::default();
    let x = send(&e, &mut s, "POST", "/p", b"{\"a\":1}").await;
    assert_eq!(x.outcome, Outcome::Success);
    let post = server.received().into_iter().find(|r| r.path == "/p").unwrap();
    assert_eq!(post.method, "POST");
    assert_eq!(post.body, b"{\"a\":1}");
}

#[tokio::test]
async fn tls_negotiates_h2_by_alpn_and_auto_follows_the_server() {
    let server = H2Server::start_tls(|_, _| H2Reply::ok()).await;
    let ca = server.ca_pem.clone().unwrap();
    for version in [HttpVersion::Http2, HttpVersion::Auto] {
        let (e, path) = endpoint(&server.url("/"), Some(&ca), version, 100);
        let all = run(&e, &path, 3, 5).await;
        assert!(all.iter().all(|x| x.outcome == Outcome::Success), "{version}: {all:?}");
    }
    assert_eq!(server.received().len(), 30);
    // A server that offers no h2 gets HTTP/1.1 from `auto`.
    let h1 = crest_testkit::Server::start_tls(|_, _| crest_testkit::Reply::ok()).await;
    let (e, path) = endpoint(&h1.url("/"), h1.ca_pem.as_deref(), HttpVersion::Auto, 100);
    let all = run(&e, &path, 2, 3).await;
    assert!(all.iter().all(|x| x.outcome == Outcome::Success), "{all:?}");
    assert_eq!(h1.received().len(), 6);
}

#[tokio::test]
async fn rst_stream_is_an_outcome_with_its_code_and_the_connection_lives_on() {
    let server = H2Server::start(|r, _| {
        if r.path == "/rst" {
            H2Reply::Reset(11)
        } else {
            H2Reply::ok()
        }
    })
    .await;
    let (e, _) = endpoint(&server.url("/"), None, HttpVersion::Http2, 10);
    let mut s = Session::default();
    assert_eq!(send(&e, &mut s, "GET", "/", b"").await.outcome, Outcome::Success);
    let x = send(&e, &mut s, "GET", "/rst", b"").await;
    assert_eq!(x.outcome, Outcome::H2Reset(11));
    assert!(x.error().unwrap().to_string().contains("ENHANCE_YOUR_CALM") || x.status.is_none());
    let x = send(&e, &mut s, "GET", "/", b"").await;
    assert_eq!(x.outcome, Outcome::Success);
    assert!(x.connect.is_none());
    assert_eq!(server.connections(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goaway_mid_run_fails_the_streams_in_flight_and_users_move_to_a_new_connection() {
    let server = H2Server::start(|_, i| {
        if i == 40 {
            H2Reply::GoAway(2)
        } else {
            H2Reply::delayed(Duration::from_millis(20))
        }
    })
    .await;
    let (e, path) = endpoint(&server.url("/"), None, HttpVersion::Http2, 100);
    let all = run(&e, &path, 8, 15).await;
    let goaway = all.iter().filter(|x| x.outcome == Outcome::H2GoAway).count();
    let ok = all.iter().filter(|x| x.outcome == Outcome::Success).count();
    // The stream that triggered the GOAWAY is held unanswered until the connection goes, so it
    // fails with the GOAWAY however few of its peers were in flight at that moment.
    let outcomes: Vec<_> = all.iter().map(|x| x.outcome).collect();
    assert!(goaway >= 1, "{outcomes:?}");
    assert_eq!(goaway + ok, 120, "{outcomes:?}");
    assert!(server.connections() >= 2);
    assert!(ok > 100, "users go on on a new connection: {ok}");
}

/// Every user's task holds an HTTP/1.1 call for its whole life, so its size is memory at
/// 10,000 users (issue 15): connecting and HTTP/2 live in boxed futures of their own.
#[tokio::test]
async fn an_http1_call_stays_small() {
    let (e, _) = endpoint("http://127.0.0.1:1/", None, HttpVersion::Http1, 1);
    let mut s = Session::default();
    let call = Call {
        request: b"",
        how: &CallOptions {
            head: false,
            timeout: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(1),
            keepalive: true,
        },
    };
    let f = e.call(&mut s, &call, None);
    // 2,528 bytes (debug build) before; 1,000 after.
    assert!(std::mem::size_of_val(&f) <= 1200, "{}", std::mem::size_of_val(&f));
}

/// One stream per connection speaks crest's own framing (the others the `h2` crate's): the same
/// behaviour is asked of it, against the same server.
#[tokio::test]
async fn one_stream_per_connection_shares_nothing_and_keeps_every_outcome() {
    let server = H2Server::start(|r, _| match r.path.as_str() {
        "/rst" => H2Reply::Reset(11),
        _ => H2Reply::delayed(Duration::from_millis(1)),
    })
    .await;
    let (e, path) = endpoint(&server.url("/items?x=1"), None, HttpVersion::Http2, 1);
    let all = run(&e, &path, 3, 5).await;
    assert!(
        all.iter()
            .all(|x| x.outcome == Outcome::Success && x.status == Some(200)),
        "{all:?}"
    );
    assert_eq!(server.connections(), 3);
    assert_eq!(all.iter().filter(|x| x.connect.is_some()).count(), 3);
    assert!(all.iter().all(|x| x.first_byte.is_some() && x.bytes_received > 17));
    let got = server.received();
    assert_eq!(got[0].path, "/items?x=1");
    assert!(got[0].headers.iter().any(|(n, v)| n == "x-test" && v == "1"));
    assert!(got[0]
        .headers
        .iter()
        .any(|(n, v)| n == ":authority" && *v == e.authority()));
    let mut s = Session::default();
    let x = send(&e, &mut s, "POST", "/p", b"{\"a\":1}").await;
    assert_eq!(x.outcome, Outcome::Success);
    let post = server.received().into_iter().find(|r| r.path == "/p").unwrap();
    assert_eq!((post.method.as_str(), &post.body[..]), ("POST", &b"{\"a\":1}"[..]));
    let x = send(&e, &mut s, "GET", "/rst", b"").await;
    assert_eq!(x.outcome, Outcome::H2Reset(11));
    assert!(x.error().unwrap().to_string().contains("ENHANCE_YOUR_CALM"));
    let x = send(&e, &mut s, "GET", "/", b"").await;
    assert_eq!(x.outcome, Outcome::Success);
    assert!(x.connect.is_none(), "a reset leaves the connection open");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_stream_per_connection_reports_goaway_and_moves_on() {
    let server = H2Server::start(|_, i| {
        if i == 10 {
            H2Reply::GoAway(2)
        } else {
            H2Reply::delayed(Duration::from_millis(2))
        }
    })
    .await;
    let (e, path) = endpoint(&server.url("/"), None, HttpVersion::Http2, 1);
    let all = run(&e, &path, 4, 10).await;
    let outcomes: Vec<_> = all.iter().map(|x| x.outcome).collect();
    let goaway = outcomes.iter().filter(|o| **o == Outcome::H2GoAway).count();
    let ok = outcomes.iter().filter(|o| **o == Outcome::Success).count();
    assert_eq!(goaway, 1, "{outcomes:?}");
    assert_eq!(ok, 39, "{outcomes:?}");
    assert_eq!(
        server.connections(),
        5,
        "the user whose connection went away opened another"
    );
    if let Some(e) = all.iter().find(|x| x.outcome == Outcome::H2GoAway) {
        let said = e.error().unwrap().to_string();
        assert!(said.contains("GOAWAY with INTERNAL_ERROR (2)"), "{said}");
    }
}

#[tokio::test]
async fn one_stream_per_connection_over_tls() {
    let server = H2Server::start_tls(|_, _| H2Reply::ok()).await;
    let ca = server.ca_pem.clone().unwrap();
    for version in [HttpVersion::Http2, HttpVersion::Auto] {
        let (e, path) = endpoint(&server.url("/"), Some(&ca), version, 1);
        let all = run(&e, &path, 2, 5).await;
        assert!(all.iter().all(|x| x.outcome == Outcome::Success), "{version}: {all:?}");
    }
    assert_eq!(server.received().len(), 20);
}
