//! HTTP client features through the binary: cookies per virtual user and compressed bodies
//! read by checks (issue 15).
#![allow(clippy::unwrap_used)]

mod common;

use common::{rt, run_scenario, scenario_file};
use crest_testkit::{Received, Reply, Server};

#[test]
fn issue_15_each_user_keeps_its_login_cookie_and_checks_read_gzip_bodies() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|req: &Received, i| {
            let cookie = req
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("cookie"))
                .map(|(_, v)| v.clone());
            match (req.path.as_str(), cookie) {
                ("/login", _) => Reply::Full {
                    status: 204,
                    headers: vec![("Set-Cookie".into(), format!("sid=user-{i}; Path=/; HttpOnly"))],
                    body: Vec::new(),
                },
                (_, Some(_)) => Reply::encoded("gzip", br#"{"ok": true, "items": [1, 2]}"#),
                _ => Reply::json(401, "{}"),
            }
        })
        .await;
        let (_dir, file) = scenario_file(&format!(
            r#"
target: http://{}
on_start:
  - request: {{method: POST, path: /login}}
steps:
  - request:
      path: /data
      check: {{json: {{"$.ok": true}}}}
  - think: 10ms
load: {{users: 3, duration: 1s}}
"#,
            server.addr
        ));
        let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[], &[]))
            .await
            .unwrap();
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(r.error_count("check_failed"), 0, "{}", r.stdout);
        assert_eq!(r.error_count("http_401"), 0, "{}", r.stdout);
        let got = server.received();
        for login in got.iter().filter(|q| q.path == "/login") {
            let sid = format!("sid=user-{}", login.index);
            let data: Vec<&Received> = got
                .iter()
                .filter(|q| q.connection == login.connection && q.path == "/data")
                .collect();
            assert!(data.len() > 5);
            assert!(data.iter().all(|q| q
                .headers
                .iter()
                .any(|(n, v)| n.eq_ignore_ascii_case("cookie") && *v == sid)));
        }
    });
}

#[test]
fn issue_15_http2_flags_share_connections_over_prior_knowledge_and_tls() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = crest_testkit::h2::H2Server::start(|_, _| crest_testkit::h2::H2Reply::ok()).await;
        let r = common::run_async(
            &server.url("/"),
            &["--http2", "-c", "6", "-n", "60", "--max-streams", "3"],
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(r.summary()["failures"], 0, "{}", r.stdout);
        assert_eq!(server.received().len(), 60);
        // Two engine threads of 3 users each, one connection each.
        assert_eq!(server.connections(), 2, "6 users at 3 streams per connection");
        // The summary counts connections opened, not streams.
        assert_eq!(r.summary()["connections"], 2, "{}", r.stdout);

        let tls = crest_testkit::h2::H2Server::start_tls(|_, _| crest_testkit::h2::H2Reply::ok()).await;
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, tls.ca_pem.as_deref().unwrap()).unwrap();
        let url = tls.url("/").replace("127.0.0.1", "localhost");
        let r = common::run_async(
            &url,
            &[
                "--http",
                "auto",
                "-c",
                "4",
                "-n",
                "20",
                "--threads",
                "1",
                "--cacert",
                ca.to_str().unwrap(),
            ],
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(r.summary()["failures"], 0, "{}", r.stdout);
        assert_eq!(tls.received().len(), 20, "auto picked h2 from ALPN");
        assert_eq!(tls.connections(), 1);

        let r = common::run_async(&server.url("/"), &["--max-streams", "3", "-n", "1"]).await;
        assert_ne!(r.code, 0);
        assert!(r.stderr.contains("--max-streams applies to HTTP/2"), "{}", r.stderr);
    });
}

#[test]
fn issue_15_scenario_defaults_choose_http2_redirects_and_cookies() {
    let _serial = common::serial();
    rt().block_on(async {
        let h2 = crest_testkit::h2::H2Server::start(|_, _| crest_testkit::h2::H2Reply::ok()).await;
        let (_dir, file) = scenario_file(&format!(
            "target: http://{}\ndefaults: {{http: 2, max_streams: 10}}\nsteps:\n  - request: {{path: /x}}\nload: {{threads: 4, loops: 5}}\n",
            h2.addr
        ));
        let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[], &["--threads", "1"]))
            .await
            .unwrap();
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(h2.received().len(), 20);
        assert_eq!(h2.connections(), 1);

        let server = Server::start(|req: &Received, _| match req.path.as_str() {
            "/login" => Reply::Full {
                status: 302,
                headers: vec![
                    ("Location".into(), "/home".into()),
                    ("Set-Cookie".into(), "sid=1".into()),
                ],
                body: Vec::new(),
            },
            _ => Reply::json(200, "{}"),
        })
        .await;
        let (_dir, file) = scenario_file(&format!(
            "target: http://{}\ndefaults: {{redirects: 2, cookies: false}}\nsteps:\n  - request: {{path: /login, check: {{status: 200}}}}\nload: {{threads: 1, loops: 3}}\n",
            server.addr
        ));
        let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[], &[]))
            .await
            .unwrap();
        assert_eq!(r.code, 0, "{}", r.stderr);
        let got = server.received();
        assert_eq!(got.iter().filter(|q| q.path == "/home").count(), 3, "redirects followed");
        assert!(
            !got.iter().any(|q| q.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("cookie"))),
            "cookies: false keeps none"
        );
    });
}

/// `--http2` against a server that speaks only HTTP/1.1 and closes on the preface, as `crest
/// target` does: the server counts no request, and every failure says why, on crest's own
/// framing (one stream a connection) and on the `h2` crate's (many).
#[test]
fn http2_against_a_server_without_it_says_so() {
    let _serial = common::serial();
    let t = common::target_process(&["--workers", "4", "--service-time", "1ms"]);
    for streams in ["1", "10"] {
        let r = common::run(&t.url, &["--http2", "--max-streams", streams, "-c", "2", "-d", "1s"]);
        // Nothing succeeded: a failed run's exit code, with its results written.
        assert_eq!(r.code, 1, "{}", r.stderr);
        let (closed, example) = r.error_class("closed");
        assert!(closed > 0);
        assert!(
            example.contains("without an HTTP/2 frame") && example.contains("without --http2 crest speaks HTTP/1.1"),
            "{streams} streams: {example}"
        );
        assert_eq!(r.summary()["successes"], 0);
    }
    assert_eq!(common::target_metric(&t.url, "crest_target_requests_total"), 0);
}
