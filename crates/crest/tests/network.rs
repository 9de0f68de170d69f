//! Issue 15 through the binary: proxies (flag and environment), mutual TLS, form bodies and a
//! host name resolved to two loopback addresses, each against real servers on loopback.
#![allow(clippy::unwrap_used)]

mod common;

use common::{f, rt, run_async, run_scenario, scenario_file};
use crest_testkit::proxy::Proxy;
use crest_testkit::{Reply, Server};

/// Every file of a run's directory, as text, with what it printed.
fn everything(r: &common::Run) -> String {
    let mut all = format!("{}\n{}", r.stdout, r.stderr);
    for entry in std::fs::read_dir(r.dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if let Ok(bytes) = std::fs::read(&path) {
            all.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    all
}

#[test]
fn issue_15_https_through_the_environments_proxy_keeps_its_password_out_of_every_output() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start_tls(|_, _| Reply::ok()).await;
        // "user:hunter2" in Base64.
        let proxy = Proxy::start(Some("Basic dXNlcjpodW50ZXIy")).await;
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, server.ca_pem.as_ref().unwrap()).unwrap();
        let (_d, file) = scenario_file(&format!(
            r#"
target: {}
defaults: {{cacert: {}}}
steps:
  - request: {{path: /through}}
load: {{threads: 2, loops: 5}}
"#,
            server.url(""),
            ca.display()
        ));
        let proxy_url = proxy.url(Some("user:hunter2"));
        let r = tokio::task::spawn_blocking(move || {
            run_scenario(&file, &[("HTTPS_PROXY", &proxy_url), ("NO_PROXY", "")], &[])
        })
        .await
        .unwrap();
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        assert_eq!(r.summary()["requests"], 10, "{}", r.stdout);
        assert_eq!(proxy.tunnels(), 2, "one tunnel per user: {:?}", proxy.asked());
        assert_eq!(server.received().len(), 10);
        let all = everything(&r);
        assert!(!all.contains("hunter2") && !all.contains("dXNlcjpodW50ZXIy"));
    });
}

#[test]
fn issue_15_plain_http_through_proxy_flag_and_a_refused_tunnel_is_reported() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::ok()).await;
        let proxy = Proxy::start(Some("Basic dXNlcjpodW50ZXIy")).await;
        let url = server.url("/plain");
        let r = run_async(
            &url,
            &["-c", "2", "-n", "6", "--proxy", &proxy.url(Some("user:hunter2"))],
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!((1..=2).contains(&proxy.forwarded()) && proxy.tunnels() == 0);
        assert!(proxy.asked()[0]
            .line
            .starts_with(&format!("GET http://{}/plain ", server.addr)));
        assert_eq!(server.received().len(), 6);
        assert!(!everything(&r).contains("hunter2"));
        // Wrong credentials over CONNECT (HTTP/2 tunnels): the proxy refused each connection,
        // and says so.
        let r = run_async(
            &url,
            &[
                "-n",
                "3",
                "-c",
                "1",
                "--http2",
                "--proxy",
                &proxy.url(Some("user:wrong")),
            ],
        )
        .await;
        assert_eq!(r.error_count("connect_refused"), 3, "{}", r.stdout);
        assert!(r.stdout.contains("status 407"), "{}", r.stdout);
        assert_eq!(server.received().len(), 6);
    });
}

#[test]
fn issue_15_mutual_tls_client_certificate_flags() {
    let _serial = common::serial();
    rt().block_on(async {
        let (server, client) = Server::start_mtls(|_, _| Reply::ok()).await;
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p.display().to_string()
        };
        let (ca, cert, key) = (
            write("ca.pem", server.ca_pem.as_ref().unwrap()),
            write("client.pem", &client.cert_pem),
            write("client.key", &client.key_pem),
        );
        let url = server.url("/");
        let r = run_async(&url, &["-n", "4", "-c", "2", "--cacert", &ca]).await;
        assert_eq!(r.error_count("tls"), 4, "refused without a certificate: {}", r.stdout);
        assert!(server.received().is_empty());
        let r = run_async(
            &url,
            &["-n", "4", "-c", "2", "--cacert", &ca, "--cert", &cert, "--key", &key],
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(r.summary()["failures"], 0, "{}", r.stdout);
        assert_eq!(server.received().len(), 4);
        assert!(!everything(&r).contains(client.key_pem.lines().nth(1).unwrap()));
    });
}

#[test]
fn issue_15_a_host_resolved_to_two_loopback_addresses_spreads_connections_over_both() {
    let _serial = common::serial();
    rt().block_on(async {
        let first = Server::start(|_, _| Reply::ok()).await;
        let port = first.addr.port();
        let second = Server::start_at(format!("127.0.0.2:{port}").parse().unwrap(), |_, _| Reply::ok()).await;
        let url = format!("http://api.test:{port}/");
        let resolve = format!("api.test:{port}:127.0.0.1,127.0.0.2");
        let r = run_async(&url, &["-c", "8", "-n", "80", "--resolve", &resolve]).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(first.connections() + second.connections(), 8);
        assert!(first.connections() >= 2 && second.connections() >= 2);
        assert!(first.received().len() >= 10 && second.received().len() >= 10);
        assert_eq!(first.received().len() + second.received().len(), 80);
    });
}

#[test]
fn issue_15_dns_per_connection_times_each_new_connections_lookup_beside_connect() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::ok()).await;
        let port = server.addr.port();
        // `localhost` is in /etc/hosts: resolved without the network, to loopback.
        let url = format!("http://localhost:{port}/");
        let r = run_async(&url, &["-c", "4", "-n", "40", "--dns-per-connection"]).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let s = r.summary();
        assert_eq!(s["failures"], 0, "{s}");
        assert_eq!(s["connections"], 4, "keep-alive: one connection per user");
        assert_eq!(s["dns_ms"]["count"], 4, "one lookup per new connection: {s}");
        let (p50, max) = (f(&s, &["dns_ms", "p50"]), f(&s, &["dns_ms", "max"]));
        // A lookup in /etc/hosts takes microseconds; a second would be the network or a stall.
        assert!(
            max > 0.0 && p50 <= max && max < 1000.0,
            "dns p50 {p50} ms, max {max} ms"
        );
        assert!(f(&s, &["connect_ms", "max"]) > 0.0);
        // Its own histogram per request name in results.json, beside connect.
        let results = r.results();
        let stat = &results["stats"][0];
        assert!(stat["dns"].is_string() && stat["connect"].is_string(), "{stat}");
        let report = std::fs::read_to_string(r.dir.path().join("report.md")).unwrap();
        assert!(report.contains("| DNS resolution (4 lookups) |"), "{report}");

        // A new connection per request: a lookup per request.
        let r = run_async(
            &url,
            &[
                "-c",
                "2",
                "-n",
                "10",
                "--no-keepalive",
                "--dns-per-connection",
                "--log-requests",
            ],
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(r.summary()["dns_ms"]["count"], 10);
        // The request log gives each request's lookup beside its connect.
        let rows = common::read_log(&r.dir.path().join("request-log.csv.gz"));
        assert_eq!(rows.len(), 10);
        assert!(
            rows.iter()
                .all(|r| !r["dns_us"].is_empty() && !r["connect_us"].is_empty()),
            "{rows:?}"
        );

        // Addresses given with --resolve are not looked up: no DNS phase. Nor without the flag.
        let resolve = format!("localhost:{port}:127.0.0.1");
        for args in [
            &["-c", "2", "-n", "10", "--dns-per-connection", "--resolve", &resolve][..],
            &["-c", "2", "-n", "10"][..],
        ] {
            let r = run_async(&url, args).await;
            assert_eq!(r.code, 0, "{}", r.stderr);
            let s = r.summary();
            assert!(s.get("dns_ms").is_none(), "{args:?}: {s}");
            assert!(!r.results_text().contains("\"dns\""), "{args:?}");
        }
    });
}

#[test]
fn issue_15_dns_per_connection_from_a_scenario_and_a_bad_value_named_by_line() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::ok()).await;
        let text = format!(
            "target: http://localhost:{}\ndefaults: {{dns_per_connection: true}}\nsteps:\n  - request: {{path: /}}\nload: {{threads: 3, loops: 2}}\n",
            server.addr.port()
        );
        let (_d, file) = scenario_file(&text);
        let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[], &[])).await.unwrap();
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        assert_eq!(r.summary()["dns_ms"]["count"], 3, "one lookup per user's connection");

        let (_d, file) = scenario_file(&text.replace("dns_per_connection: true", "dns_per_connection: maybe"));
        let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[], &[])).await.unwrap();
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("scenario.yaml:2:"), "{}", r.stderr);
    });
}

#[test]
fn issue_15_a_name_that_does_not_resolve_fails_every_request_as_dns_failed() {
    let _serial = common::serial();
    rt().block_on(async {
        // `.invalid` never resolves (RFC 6761).
        let url = "http://crest-test.invalid:9/";
        let r = run_async(url, &["-c", "2", "-n", "12", "--dns-per-connection"]).await;
        assert_eq!(r.code, 1, "no request succeeded: {}\n{}", r.stdout, r.stderr);
        let s = r.summary();
        assert_eq!(
            (s["requests"].as_u64(), s["failures"].as_u64()),
            (Some(12), Some(12)),
            "{s}"
        );
        assert_eq!(r.error_count("dns_failed"), 12, "{s}");
        assert_eq!(s["connections"], 0, "no connection was opened");
        assert_eq!(s["dns_ms"]["count"], 12, "failed lookups are timed too: {s}");
        let example = s["errors"][0]["example"].as_str().unwrap();
        assert!(
            example.starts_with("cannot resolve host \"crest-test.invalid\""),
            "{example}"
        );
        // Without the flag the name is resolved once, before the run, which then cannot start.
        let r = run_async(url, &["-c", "2", "-n", "12"]).await;
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            r.stderr.contains("cannot resolve host \"crest-test.invalid\""),
            "{}",
            r.stderr
        );
    });
}

/// The fields of an urlencoded body.
fn form_fields(body: &[u8]) -> Vec<(String, String)> {
    let decode = |s: &str| {
        let b = s.replace('+', " ").into_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                out.push(u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap(), 16).unwrap());
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    };
    std::str::from_utf8(body)
        .unwrap()
        .split('&')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (decode(k), decode(v))
        })
        .collect()
}

#[test]
fn issue_15_form_and_multipart_bodies_are_what_the_server_parses() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::ok()).await;
        let (dir, file) = scenario_file(&format!(
            r#"
target: http://{}
steps:
  - request:
      path: /form
      form: {{a: 1, name: "user ${{user}}", sym: "x&y=z"}}
  - request:
      path: /upload
      multipart:
        - {{name: title, value: "report ${{user}}"}}
        - {{name: doc, file: data.bin, content_type: application/pdf}}
load: {{threads: 1, loops: 2}}
"#,
            server.addr
        ));
        let blob: Vec<u8> = (0..=255u8).chain(*b"\r\n--not-a-boundary\r\n").collect();
        std::fs::write(dir.path().join("data.bin"), &blob).unwrap();
        let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[], &[]))
            .await
            .unwrap();
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let got = server.received();
        let form = got.iter().find(|q| q.path == "/form").unwrap();
        assert_eq!(form.method, "POST");
        assert!(form
            .headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("content-type") && v == "application/x-www-form-urlencoded"));
        let fields = form_fields(&form.body);
        assert_eq!(fields[0], ("a".into(), "1".into()));
        assert!(fields[1].1.starts_with("user "), "{fields:?}");
        assert_eq!(fields[2], ("sym".into(), "x&y=z".into()));
        let upload = got.iter().find(|q| q.path == "/upload").unwrap();
        let parts = upload.multipart_parts();
        assert_eq!(parts.len(), 2);
        assert!(parts[0].0.contains("name=\"title\""));
        assert!(String::from_utf8_lossy(&parts[0].1).starts_with("report "));
        assert!(parts[1].0.contains("name=\"doc\"; filename=\"data.bin\""));
        assert!(parts[1].0.contains("Content-Type: application/pdf"));
        assert_eq!(parts[1].1, blob);
    });
}
