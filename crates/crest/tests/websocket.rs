//! WebSocket steps against a real WebSocket server built here (tokio-tungstenite, as crest's
//! client): crest's upgrades, messages, closes and failures equal what the server counted.
#![allow(clippy::unwrap_used)]

mod common;

use common::{by_name as name, rt, run_scenario, scenario_file};
use futures_util::{SinkExt, StreamExt};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

/// What the server saw and did.
#[derive(Default)]
struct Counts {
    upgrades: AtomicU64,
    refused: AtomicU64,
    received: AtomicU64,
    echoed: AtomicU64,
    /// Close frames the clients sent, and the server's own closes.
    client_closes: AtomicU64,
    server_closes: AtomicU64,
    /// Upgrades without the scenario's header.
    missing_headers: AtomicU64,
}

/// How the server answers.
#[derive(Clone, Copy)]
enum Mode {
    /// Echoes every message.
    Echo,
    /// Echoes three messages per connection, then closes with 1011 instead of the fourth echo.
    CloseAfter3,
    /// Refuses every upgrade with 503.
    Refuse,
    /// Reads messages and never answers.
    Stall,
}

// tungstenite's handshake callback returns its refusal by value.
#[allow(clippy::result_large_err)]
async fn serve<S>(tcp: S, mode: Mode, c: Arc<Counts>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let counted = c.clone();
    let check = move |req: &Request, res: Response| -> Result<Response, ErrorResponse> {
        if req.headers().get("x-client").is_none_or(|v| v != "crest-test") {
            counted.missing_headers.fetch_add(1, Ordering::SeqCst);
        }
        if matches!(mode, Mode::Refuse) {
            counted.refused.fetch_add(1, Ordering::SeqCst);
            let mut refusal = ErrorResponse::new(Some("busy".into()));
            *refusal.status_mut() = tokio_tungstenite::tungstenite::http::StatusCode::SERVICE_UNAVAILABLE;
            return Err(refusal);
        }
        counted.upgrades.fetch_add(1, Ordering::SeqCst);
        Ok(res)
    };
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(tcp, check).await else {
        return;
    };
    let mut on_this = 0;
    while let Some(Ok(m)) = ws.next().await {
        match m {
            Message::Text(_) | Message::Binary(_) => {
                c.received.fetch_add(1, Ordering::SeqCst);
                on_this += 1;
                match mode {
                    Mode::Echo => {}
                    Mode::CloseAfter3 if on_this <= 3 => {}
                    Mode::CloseAfter3 => {
                        c.server_closes.fetch_add(1, Ordering::SeqCst);
                        let frame = CloseFrame {
                            code: CloseCode::Error,
                            reason: "".into(),
                        };
                        let _ = ws.close(Some(frame)).await;
                        continue;
                    }
                    Mode::Stall | Mode::Refuse => continue,
                }
                if ws.send(m).await.is_ok() {
                    c.echoed.fetch_add(1, Ordering::SeqCst);
                }
            }
            Message::Close(_) => {
                c.client_closes.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        }
    }
}

/// Starts the server on an ephemeral loopback port; its `ws://` URL.
async fn server(mode: Mode) -> (String, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    let c = counts.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(serve(tcp, mode, c.clone()));
        }
    });
    (url, counts)
}

async fn run(url: &str, steps: &str, load: &str) -> common::Run {
    run_with(url, steps, load, "").await
}

/// As [`run`], with more `defaults:` (`cacert: ...`).
async fn run_with(url: &str, steps: &str, load: &str, defaults: &str) -> common::Run {
    let text = format!(
        "target: ${{env:CREST_TARGET}}\ndefaults:\n  headers: {{X-Client: crest-test}}\n{defaults}steps:\n{steps}\nload: {load}\n"
    );
    let (dir, file) = scenario_file(&text);
    let url = url.to_string();
    let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[("CREST_TARGET", &url)], &[]))
        .await
        .unwrap();
    drop(dir);
    r
}

/// Opens, exchanges ten messages each waiting for its echo, closes cleanly.
const ECHO: &str = "  - ws: {name: open}
  - loop:
      times: 10
      steps:
        - ws:
            name: echo
            send: 'm-${user}-${iteration}-${seq}'
            until: {matches: '^m-', count: 1}
            timeout: 5s
            check: {body_contains: 'm-'}
            extract: {said: {regex: 'm-(\\d+)'}}
  - ws: {name: close, close: 1000}
";

#[test]
fn every_upgrade_message_and_close_is_counted_in_the_closed_model() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, c) = server(Mode::Echo).await;
        let r = run(&url, ECHO, "{users: 3, iterations: 6}").await;
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let s = r.summary();
        assert_eq!(s["failures"], 0, "{}", r.stdout);
        assert_eq!(name(&s, "open")["requests"], 6);
        assert_eq!(c.upgrades.load(Ordering::SeqCst), 6);
        assert_eq!(c.missing_headers.load(Ordering::SeqCst), 0);
        let echo = name(&s, "echo");
        assert_eq!(echo["requests"], 60, "{echo}");
        assert_eq!(c.received.load(Ordering::SeqCst), 60);
        assert_eq!(c.echoed.load(Ordering::SeqCst), 60);
        assert_eq!(echo["messages"]["sent"], 60, "{echo}");
        assert_eq!(echo["messages"]["received"], 60, "{echo}");
        assert_eq!(s["messages"]["sent"], 60);
        assert_eq!(name(&s, "close")["requests"], 6);
        // Every close the clients sent reached the server before the step ended.
        assert_eq!(c.client_closes.load(Ordering::SeqCst), 6);
    });
}

#[test]
fn the_open_model_counts_the_same() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, c) = server(Mode::Echo).await;
        let r = run(&url, ECHO, "{rate: 20, iterations: 8}").await;
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let s = r.summary();
        assert_eq!(s["failures"], 0, "{}", r.stdout);
        assert_eq!(c.upgrades.load(Ordering::SeqCst), 8);
        let echo = name(&s, "echo");
        assert_eq!(echo["requests"], 80);
        assert_eq!(c.echoed.load(Ordering::SeqCst), 80);
        assert_eq!(echo["messages"]["received"], 80);
        assert_eq!(c.client_closes.load(Ordering::SeqCst), 8);
    });
}

#[test]
fn a_server_that_closes_mid_way_is_counted_with_its_close_code() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, c) = server(Mode::CloseAfter3).await;
        let r = run(&url, ECHO, "{users: 2, iterations: 8}").await;
        let s = r.summary();
        let closes = c.server_closes.load(Ordering::SeqCst);
        assert_eq!(closes, 8, "{}", r.stdout);
        assert_eq!(r.error_count("ws_closed_1011"), closes, "{}", r.stdout);
        // Three echoes per connection before it closed, and no other failure.
        assert_eq!(c.echoed.load(Ordering::SeqCst), 24);
        let echo = name(&s, "echo");
        assert_eq!(echo["requests"], 24 + 8);
        assert_eq!(echo["failures"], 8);
        assert_eq!(s["failures"], 8);
    });
}

#[test]
fn a_refused_upgrade_is_its_http_status() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, c) = server(Mode::Refuse).await;
        let r = run(&url, ECHO, "{users: 2, iterations: 6}").await;
        let s = r.summary();
        let refused = c.refused.load(Ordering::SeqCst);
        assert_eq!(refused, 6, "{}", r.stdout);
        assert_eq!(r.error_count("http_503"), refused, "{}", r.stdout);
        assert_eq!(s["failures"], refused);
        assert_eq!(s["status_codes"]["503"], refused);
    });
}

#[test]
fn a_stalled_server_is_a_receive_timeout() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, c) = server(Mode::Stall).await;
        let steps = "  - ws: {name: ask, send: hello, until: {count: 1}, timeout: 300ms}\n";
        let r = run(&url, steps, "{users: 2, iterations: 4}").await;
        let s = r.summary();
        assert_eq!(c.received.load(Ordering::SeqCst), 4, "{}", r.stdout);
        assert_eq!(r.error_count("receive_timeout"), 4, "{}", r.stdout);
        assert_eq!(name(&s, "ask")["messages"]["sent"], 4);
    });
}

#[test]
fn bad_ws_steps_are_located_and_exit_2() {
    for (step, says) in [
        ("  - ws: {until: {count: 0}}\n", "`count` must be at least 1"),
        ("  - ws: {close: 1005}\n", "cannot send close code 1005"),
        ("  - ws: {send: hi, extract: {x: $.a}}\n", "give `until`"),
        ("  - ws: {until: {matches: '('}}\n", "not a valid regex"),
        (
            "  - ws: {url: 'ftp://127.0.0.1:9/'}\n",
            "must start with ws:// or wss://",
        ),
    ] {
        let text = format!("target: ws://127.0.0.1:9\nsteps:\n{step}load: {{users: 1, iterations: 1}}\n");
        let (dir, file) = scenario_file(&text);
        let out = common::crest().arg("validate").arg(&file).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{step}: {err}");
        assert!(err.contains(says), "{step}: {err}");
        assert!(err.contains("scenario.yaml:3:"), "{step}: {err}");
        drop(dir);
    }
}

#[test]
fn the_example_runs_as_it_is_against_an_echo_server() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, c) = server(Mode::Echo).await;
        let file = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/ws-echo.yaml");
        let r = tokio::task::spawn_blocking(move || {
            run_scenario(&file, &[("CREST_TARGET", &url)], &["-c", "2", "-n", "4"])
        })
        .await
        .unwrap();
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let s = r.summary();
        assert_eq!(s["failures"], 0, "{}", r.stdout);
        assert_eq!(name(&s, "open")["requests"], c.upgrades.load(Ordering::SeqCst));
        assert_eq!(name(&s, "echo")["requests"], c.echoed.load(Ordering::SeqCst));
        assert_eq!(c.echoed.load(Ordering::SeqCst), 40);
        assert_eq!(name(&s, "close")["requests"], c.client_closes.load(Ordering::SeqCst));
    });
}

/// Starts an echo server behind TLS (a certificate of a test CA); its `wss://` URL and the CA's
/// PEM.
async fn tls_server() -> (String, String, Arc<Counts>) {
    let (acceptor, ca, _) = crest_testkit::tls_acceptor(&[], false);
    let counts = Arc::new(Counts::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("wss://localhost:{}", listener.local_addr().unwrap().port());
    let c = counts.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, c) = (acceptor.clone(), c.clone());
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(tcp).await {
                    serve(tls, Mode::Echo, c).await;
                }
            });
        }
    });
    (url, ca, counts)
}

#[test]
fn wss_goes_over_tls_checked_against_the_given_ca() {
    let _serial = common::serial();
    rt().block_on(async {
        let (url, ca, c) = tls_server().await;
        let dir = tempfile::tempdir().unwrap();
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca).unwrap();
        let defaults = format!("  cacert: {}\n", ca_file.display());
        let r = run_with(&url, ECHO, "{users: 2, iterations: 4}", &defaults).await;
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let s = r.summary();
        assert_eq!(s["failures"], 0, "{}", r.stdout);
        assert_eq!(c.upgrades.load(Ordering::SeqCst), 4);
        assert_eq!(name(&s, "echo")["requests"], c.echoed.load(Ordering::SeqCst));
        assert_eq!(c.echoed.load(Ordering::SeqCst), 40);
        // Without the CA, the server's certificate is refused: every upgrade is a `tls` failure
        // and the server sees no WebSocket.
        let r = run(&url, ECHO, "{users: 2, iterations: 4}").await;
        assert_eq!(r.error_count("tls"), 4, "{}", r.stdout);
        assert_eq!(c.upgrades.load(Ordering::SeqCst), 4);
    });
}
