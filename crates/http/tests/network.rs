//! How connections reach servers, against real servers on loopback: through an HTTP proxy
//! (forwarded and CONNECT), with a client certificate for mutual TLS, and spread over every
//! address of a host.
#![allow(clippy::unwrap_used)]

use crest_http::{build_request, Call, CallOptions, Endpoint, Exchange, Session};
use crest_model::plan::TlsOptions;
use crest_model::protocol::{HttpOptions, HttpVersion, Network};
use crest_model::Outcome;
use crest_testkit::proxy::Proxy;
use crest_testkit::{Reply, Server};
use std::time::Duration;

fn tls(server: &Server) -> TlsOptions {
    TlsOptions {
        ca_pem: server.ca_pem.as_ref().map(|c| c.as_bytes().to_vec()),
        ..TlsOptions::default()
    }
}

fn via(proxy: &str) -> Network {
    let mut n = Network::default();
    n.set_proxy(proxy);
    n
}

async fn send(e: &Endpoint, s: &mut Session, path: &str) -> Exchange {
    let request = build_request("GET", path, e.authority(), &[], b"", true).unwrap();
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

fn endpoint(url: &str, tls: &TlsOptions, http: HttpOptions, net: &Network) -> Endpoint {
    Endpoint::parse_on(url, tls, &http, net).unwrap().0
}

#[tokio::test]
async fn plain_http_goes_through_the_proxy_in_absolute_form_with_its_credentials() {
    let server = Server::start(|_, _| Reply::ok()).await;
    let proxy = Proxy::start(Some("Basic dXNlcjpwQHNz")).await;
    let e = endpoint(
        &server.url("/"),
        &TlsOptions::default(),
        HttpOptions::default(),
        &via(&proxy.url(Some("user:p%40ss"))),
    );
    let mut s = Session::default();
    for _ in 0..3 {
        let x = send(&e, &mut s, "/a?b=1").await;
        assert_eq!(x.outcome, Outcome::Success, "{:?}", x.error().map(|e| e.to_string()));
    }
    assert_eq!((proxy.forwarded(), proxy.tunnels()), (1, 0), "one kept connection");
    let asked = proxy.asked();
    assert_eq!(asked[0].line, format!("GET http://{}/a?b=1 HTTP/1.1", server.addr));
    assert_eq!(asked[0].auth.as_deref(), Some("Basic dXNlcjpwQHNz"));
    let got = server.received();
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].path, "/a?b=1");
    assert!(got.iter().all(|r| r.connection == 0));
    // The proxy's credentials never show in what an endpoint prints.
    assert!(!format!("{e:?}").contains("p%40ss") && !format!("{e:?}").contains("dXNlcj"));
}

#[tokio::test]
async fn https_goes_through_a_connect_tunnel_with_tls_to_the_origin() {
    let server = Server::start_tls(|_, _| Reply::ok()).await;
    let proxy = Proxy::start(None).await;
    let e = endpoint(
        &server.url("/"),
        &tls(&server),
        HttpOptions::default(),
        &via(&proxy.url(None)),
    );
    let mut s = Session::default();
    for _ in 0..3 {
        let x = send(&e, &mut s, "/secure").await;
        assert_eq!(x.outcome, Outcome::Success, "{:?}", x.error().map(|e| e.to_string()));
        assert_eq!(x.status, Some(200));
    }
    // A new session opens its own tunnel.
    let mut fresh = Session::default();
    let x = send(&e, &mut fresh, "/secure").await;
    assert_eq!(x.outcome, Outcome::Success);
    assert_eq!(proxy.tunnels(), 2);
    assert_eq!(proxy.asked()[0].line, format!("CONNECT {} HTTP/1.1", server.addr));
    assert_eq!(server.received().len(), 4);
    assert!(server.received().iter().all(|r| r.path == "/secure"));
}

#[tokio::test]
async fn a_proxy_that_refuses_the_tunnel_is_a_refused_connection_and_http2_over_cleartext_tunnels_too() {
    let server = Server::start(|_, _| Reply::ok()).await;
    let proxy = Proxy::start(Some("Basic secret")).await;
    let http2 = HttpOptions {
        version: HttpVersion::Http2,
        ..HttpOptions::default()
    };
    let e = endpoint(&server.url("/"), &TlsOptions::default(), http2, &via(&proxy.url(None)));
    let x = send(&e, &mut Session::default(), "/").await;
    assert_eq!(x.outcome, Outcome::ConnectRefused);
    assert!(x.error().unwrap().to_string().contains("407"));
    assert!(proxy.asked()[0].line.starts_with("CONNECT "), "{:?}", proxy.asked());
    assert!(server.received().is_empty());
}

#[tokio::test]
async fn no_proxy_skips_the_proxy_for_the_hosts_it_names() {
    let server = Server::start(|_, _| Reply::ok()).await;
    let proxy = Proxy::start(None).await;
    let env = |k: &str| match k {
        "http_proxy" => Some(proxy.url(None)),
        "NO_PROXY" => Some("localhost,127.0.0.1".to_string()),
        _ => None,
    };
    let net = Network::from_env(&env);
    let e = endpoint(&server.url("/"), &TlsOptions::default(), HttpOptions::default(), &net);
    assert_eq!(send(&e, &mut Session::default(), "/").await.outcome, Outcome::Success);
    assert!(proxy.asked().is_empty());
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn mutual_tls_refuses_a_client_without_a_certificate_and_accepts_one_with_it() {
    let (server, client) = Server::start_mtls(|_, _| Reply::ok()).await;
    let without = endpoint(
        &server.url("/"),
        &tls(&server),
        HttpOptions::default(),
        &Network::default(),
    );
    let x = send(&without, &mut Session::default(), "/").await;
    assert_eq!(x.outcome, Outcome::Tls, "{:?}", x.error().map(|e| e.to_string()));
    assert!(server.received().is_empty());
    let with = TlsOptions {
        client_pem: Some((client.cert_pem.into_bytes(), client.key_pem.into_bytes())),
        ..tls(&server)
    };
    let e = endpoint(&server.url("/"), &with, HttpOptions::default(), &Network::default());
    let x = send(&e, &mut Session::default(), "/me").await;
    assert_eq!(x.outcome, Outcome::Success, "{:?}", x.error().map(|e| e.to_string()));
    assert_eq!(server.received()[0].path, "/me");
    // A key that is not PEM is refused before any load, without its bytes in the message.
    let bad = TlsOptions {
        client_pem: Some((b"nope".to_vec(), b"SECRETKEY".to_vec())),
        ..tls(&server)
    };
    let err = Endpoint::parse_on(&server.url("/"), &bad, &HttpOptions::default(), &Network::default()).unwrap_err();
    assert!(!err.to_string().contains("SECRETKEY"), "{err}");
}

#[tokio::test]
async fn connections_go_round_robin_over_every_address_of_a_host() {
    let first = Server::start(|_, _| Reply::ok()).await;
    let port = first.addr.port();
    let Ok(second) = tokio::time::timeout(
        Duration::from_secs(2),
        Server::start_at(format!("127.0.0.2:{port}").parse().unwrap(), |_, _| Reply::ok()),
    )
    .await
    else {
        panic!("cannot listen on 127.0.0.2");
    };
    let net = Network {
        resolve: vec![format!("api.test:{port}:127.0.0.1,127.0.0.2").parse().unwrap()],
        ..Network::default()
    };
    let e = endpoint(
        &format!("http://api.test:{port}/"),
        &TlsOptions::default(),
        HttpOptions::default(),
        &net,
    );
    let mut sessions: Vec<Session> = (0..6).map(|_| Session::default()).collect();
    for s in &mut sessions {
        for _ in 0..2 {
            assert_eq!(send(&e, s, "/").await.outcome, Outcome::Success);
        }
    }
    assert_eq!((first.connections(), second.connections()), (3, 3));
    assert_eq!((first.received().len(), second.received().len()), (6, 6));
    assert!(first.received()[0]
        .headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("host") && v == &format!("api.test:{port}")));
}

/// A listener that never accepts, its backlog full: the kernel drops further connection
/// requests, so a connect to it neither succeeds nor fails until a limit ends it.
fn hanging_listener() -> (socket2::Socket, Vec<std::net::TcpStream>, String) {
    use socket2::{Domain, Socket, Type};
    let listener = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    listener
        .bind(&"127.0.0.1:0".parse::<std::net::SocketAddr>().unwrap().into())
        .unwrap();
    listener.listen(0).unwrap();
    let addr = listener.local_addr().unwrap().as_socket().unwrap();
    let mut held = Vec::new();
    // Connections the backlog takes complete at once; the first that does not shows it full.
    while let Ok(s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
        held.push(s);
        assert!(held.len() < 64, "the backlog never filled");
    }
    (listener, held, format!("http://{addr}/"))
}

/// The HTTP/1.1 attempt opens its connection under the session's request timer, lowered to
/// the connect timeout while it connects: a connect that hangs ends at the connect timeout
/// as `connect_timeout`, or at the request's own when that comes first, as `timeout`; both
/// say they were connecting.
#[tokio::test]
async fn a_connect_that_hangs_ends_at_the_first_limit() {
    let (_listener, _held, url) = hanging_listener();
    let e = endpoint(
        &url,
        &TlsOptions::default(),
        HttpOptions::default(),
        &Network::default(),
    );
    let mut s = Session::default();
    let (short, long) = (Duration::from_millis(300), Duration::from_secs(5));
    for (timeout, connect_timeout, outcome) in [
        (long, short, Outcome::ConnectTimeout),
        (short, long, Outcome::Timeout),
        (long, short, Outcome::ConnectTimeout),
    ] {
        let x = send_within(&e, &mut s, timeout, connect_timeout).await;
        assert_eq!(x.outcome, outcome, "{:?}", x.error().map(|e| e.to_string()));
        assert_eq!(x.error().unwrap().to_string(), "timed out while connecting");
        // Never before its limit; the timer may fire late on a busy machine, never early.
        assert!(x.ended - x.started >= short, "{:?}", x.ended - x.started);
        assert_eq!((x.bytes_sent, x.status), (0, None));
    }
}

/// Once connected, a request has its whole timeout again: a response slower than the connect
/// timeout is no connect timeout, on a new connection as on a kept one.
#[tokio::test]
async fn a_response_slower_than_the_connect_timeout_is_within_the_request_timeout() {
    let server = Server::start(|_, _| Reply::delayed(Duration::from_millis(400))).await;
    let e = endpoint(
        &server.url("/"),
        &TlsOptions::default(),
        HttpOptions::default(),
        &Network::default(),
    );
    let mut s = Session::default();
    for _ in 0..2 {
        let x = send_within(&e, &mut s, Duration::from_secs(10), Duration::from_millis(100)).await;
        assert_eq!(x.outcome, Outcome::Success, "{:?}", x.error().map(|e| e.to_string()));
    }
    assert_eq!((server.received().len(), server.connections()), (2, 1));
}

/// A GET of `/` with the given request and connect timeouts.
async fn send_within(e: &Endpoint, s: &mut Session, timeout: Duration, connect_timeout: Duration) -> Exchange {
    let request = build_request("GET", "/", e.authority(), &[], b"", true).unwrap();
    let how = CallOptions {
        head: false,
        timeout,
        connect_timeout,
        keepalive: true,
    };
    let call = Call {
        request: &request,
        how: &how,
    };
    e.call(s, &call, None).await
}
