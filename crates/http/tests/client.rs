//! Redirects, cookies and compressed bodies against a real server on loopback.
#![allow(clippy::unwrap_used)]

use crest_http::{build_request, Call, CallOptions, CookieJar, Endpoint, Exchange, Hop, Response, Session};
use crest_model::plan::TlsOptions;
use crest_model::protocol::HttpOptions;
use crest_model::Outcome;
use crest_testkit::{Reply, Server};
use std::time::Duration;

fn endpoint(server: &Server, opts: HttpOptions) -> Endpoint {
    Endpoint::parse_with(&server.url("/"), &TlsOptions::default(), &opts)
        .unwrap()
        .0
}

async fn fetch(
    e: &Endpoint,
    method: &str,
    path: &str,
    body: &[u8],
    keep: Option<&mut Response>,
    jar: Option<&mut CookieJar>,
) -> Exchange {
    let request = build_request(method, path, e.authority(), &[], body, true).unwrap();
    let call = Call {
        request: &request,
        how: &CallOptions {
            head: false,
            timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(2),
            keepalive: true,
        },
    };
    e.fetch(&mut Session::default(), &call, keep, jar).await
}

fn redirects(max: u32) -> HttpOptions {
    HttpOptions {
        max_redirects: max,
        ..HttpOptions::default()
    }
}

#[tokio::test]
async fn redirects_follow_each_status_semantics_and_a_loop_stops_at_the_limit() {
    let server = Server::start(|r, _| match r.path.as_str() {
        "/301" => Reply::redirect(301, "/ok"),
        "/302" => Reply::redirect(302, "http://localhost:1/elsewhere"),
        "/303" => Reply::redirect(303, "ok?from=303"),
        "/307" => Reply::redirect(307, "/ok"),
        "/308" => Reply::redirect(308, "/301"),
        "/loop" => Reply::redirect(302, "/loop"),
        _ => Reply::json(200, "{}"),
    })
    .await;
    let e = endpoint(&server, redirects(3));
    let x = fetch(&e, "POST", "/301", b"a=1", None, None).await;
    assert_eq!((x.outcome, x.status), (Outcome::Success, Some(200)));
    assert_eq!(
        x.redirects,
        vec![Hop {
            status: 301,
            location: "/ok".into()
        }]
    );
    let x = fetch(&e, "POST", "/303", b"a=1", None, None).await;
    assert_eq!(x.redirects[0].location, "/ok?from=303", "relative locations resolve");
    let x = fetch(&e, "POST", "/307", b"a=1", None, None).await;
    assert_eq!(x.status, Some(200));
    let x = fetch(&e, "PUT", "/308", b"b=2", None, None).await;
    assert_eq!(x.redirects.len(), 2, "308 then 301 (a PUT stays a PUT)");
    let got = server.received();
    let seen: Vec<(&str, &str, &[u8])> = got
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str(), r.body.as_slice()))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("POST", "/301", &b"a=1"[..]),
            ("GET", "/ok", &b""[..]),
            ("POST", "/303", &b"a=1"[..]),
            ("GET", "/ok?from=303", &b""[..]),
            ("POST", "/307", &b"a=1"[..]),
            ("POST", "/ok", &b"a=1"[..]),
            ("PUT", "/308", &b"b=2"[..]),
            ("PUT", "/301", &b"b=2"[..]),
            ("PUT", "/ok", &b"b=2"[..]),
        ]
    );
    assert!(!got[1]
        .headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("content-length")));

    // A redirect to another server is followed there; one that refuses fails the request.
    let x = fetch(&e, "GET", "/302", b"", None, None).await;
    assert_eq!(
        (x.outcome, x.status, x.redirects.len()),
        (Outcome::ConnectRefused, None, 1)
    );

    let before = server.received().len();
    let x = fetch(&e, "GET", "/loop", b"", None, None).await;
    assert_eq!(x.outcome, Outcome::TooManyRedirects);
    assert_eq!(x.redirects.len(), 3);
    assert_eq!(server.received().len() - before, 4, "the first request and 3 hops");
    assert!(x.ended >= x.started);

    // Without a limit, the 3xx is the response.
    let e = endpoint(&server, HttpOptions::default());
    let x = fetch(&e, "GET", "/301", b"", None, None).await;
    assert_eq!((x.status, x.redirects.len()), (Some(301), 0));
}

#[tokio::test]
async fn a_cookie_set_on_a_login_redirect_goes_back_with_later_requests() {
    let server = Server::start(|r, _| {
        let cookie = r
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("cookie"))
            .map(|(_, v)| v.clone());
        match r.path.as_str() {
            "/login" => Reply::Full {
                status: 302,
                headers: vec![
                    ("Location".into(), "/home".into()),
                    ("Set-Cookie".into(), "sid=s3cr3t; Path=/; HttpOnly".into()),
                ],
                body: Vec::new(),
            },
            _ if cookie.as_deref() == Some("sid=s3cr3t") => Reply::json(200, "{}"),
            _ => Reply::json(401, "{}"),
        }
    })
    .await;
    let e = endpoint(
        &server,
        HttpOptions {
            cookies: true,
            ..redirects(5)
        },
    );
    let mut jar = CookieJar::default();
    let x = fetch(&e, "POST", "/login", b"", None, Some(&mut jar)).await;
    assert_eq!((x.status, x.redirects.len()), (Some(200), 1));
    let x = fetch(&e, "GET", "/account", b"", None, Some(&mut jar)).await;
    assert_eq!(x.status, Some(200));
    // Another user has its own jar.
    let x = fetch(&e, "GET", "/account", b"", None, Some(&mut CookieJar::default())).await;
    assert_eq!(x.status, Some(401));
}

#[tokio::test]
async fn compressed_bodies_are_decoded_for_checks_and_counted_as_they_came() {
    let json = br#"{"items": [1, 2, 3], "name": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}"#;
    let server = Server::start(move |r, _| Reply::encoded(r.path.trim_start_matches('/'), json)).await;
    let e = endpoint(
        &server,
        HttpOptions {
            compression: true,
            ..HttpOptions::default()
        },
    );
    for coding in ["gzip", "deflate", "br"] {
        let mut r = Response::default();
        let x = fetch(&e, "GET", &format!("/{coding}"), b"", Some(&mut r), None).await;
        assert_eq!(
            x.outcome,
            Outcome::Success,
            "{coding}: {:?}",
            x.error().map(|e| e.to_string())
        );
        assert_eq!(r.body, json, "{coding}");
        assert_eq!(x.decoded_body, Some(json.len() as u64));
        assert!(
            x.bytes_received < json.len() as u64 + 100,
            "{coding}: wire bytes are the compressed ones"
        );
    }
    let got = server.received();
    assert!(got.iter().all(|r| r
        .headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("accept-encoding") && v == "gzip, deflate, br")));
}

#[tokio::test]
async fn a_redirect_to_another_server_opens_a_connection_there_without_this_ones_credentials() {
    // B sends the user back to A by name, on A's port (known once A listens).
    let a_port = std::sync::Arc::new(std::sync::atomic::AtomicU16::new(0));
    let back = a_port.clone();
    let b = Server::start(move |r, _| match r.path.as_str() {
        "/there?x=1" => Reply::redirect(
            307,
            &format!(
                "http://localhost:{}/back",
                back.load(std::sync::atomic::Ordering::SeqCst)
            ),
        ),
        _ => Reply::json(404, "{}"),
    })
    .await;
    let b_addr = b.addr;
    let a = Server::start(move |r, _| match r.path.as_str() {
        "/go" => Reply::redirect(302, &format!("http://{b_addr}/there?x=1")),
        _ => Reply::json(200, "{}"),
    })
    .await;
    a_port.store(a.addr.port(), std::sync::atomic::Ordering::SeqCst);
    let a_port = a.addr.port();
    let e = endpoint(&a, redirects(5));
    let mut session = Session::default();
    for round in 0..2 {
        let request = build_request(
            "GET",
            "/go",
            e.authority(),
            &[("Authorization".into(), "Bearer only-for-a".into())],
            b"",
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
        let x = e.fetch(&mut session, &call, None, None).await;
        assert_eq!((x.outcome, x.status), (Outcome::Success, Some(200)), "round {round}");
        assert_eq!(
            x.redirects.iter().map(|h| h.location.clone()).collect::<Vec<_>>(),
            vec![
                format!("http://{b_addr}/there?x=1"),
                format!("http://localhost:{a_port}/back")
            ]
        );
        // Connections open on the first round only: each server's is kept for the next.
        assert_eq!(x.connect.is_some(), round == 0);
    }
    let at_b = b.received();
    assert_eq!(at_b.len(), 2);
    assert_eq!(b.connections(), 1);
    let host = |r: &crest_testkit::Received| {
        r.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("host"))
            .unwrap()
            .1
            .clone()
    };
    assert_eq!(host(&at_b[0]), b_addr.to_string());
    assert!(at_b[0]
        .headers
        .iter()
        .all(|(n, _)| !n.eq_ignore_ascii_case("authorization")));
    // localhost:PORT is another server by name, though the same listener: a second connection.
    let at_a = a.received();
    assert_eq!(
        at_a.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(),
        ["/go", "/back", "/go", "/back"]
    );
    assert_eq!(host(&at_a[1]), format!("localhost:{a_port}"));
    assert_eq!(a.connections(), 2);
}
