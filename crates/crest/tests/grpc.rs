//! gRPC steps against tonic's own server (with the health and reflection services and a
//! counting `test.Echo`): crest's calls, messages and statuses equal what the server counted,
//! in the closed and open models and past the server's limit.
#![allow(clippy::unwrap_used)]

mod common;

use common::{by_name as name, rt, run_scenario, scenario_file};
use crest_testkit::grpc::{Behaviour, Counts, GrpcServer, ECHO_PROTO};

fn n(c: &std::sync::atomic::AtomicU64) -> u64 {
    Counts::get(c)
}

/// Runs `steps` against `url` with `load`; with `protos`, the scenario describes the service
/// by ECHO_PROTO rather than by the server's reflection.
async fn run(url: &str, steps: &str, load: &str, protos: bool) -> common::Run {
    let protos = if protos { "protos: [echo.proto]\n" } else { "" };
    // The scenario's headers for HTTP go with calls as metadata, but for HTTP's own: a
    // Content-Type of JSON beside gRPC's would make the server refuse every call.
    let defaults = "defaults: {headers: {Content-Type: application/json}}\n";
    let text = format!("target: ${{env:CREST_TARGET}}\n{protos}{defaults}steps:\n{steps}\nload: {load}\n");
    let (dir, file) = scenario_file(&text);
    std::fs::write(dir.path().join("echo.proto"), ECHO_PROTO).unwrap();
    let url = url.to_string();
    let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[("CREST_TARGET", &url)], &[]))
        .await
        .unwrap();
    drop(dir);
    r
}

const SAY: &str = "  - grpc:
      call: test.Echo/Say
      name: say
      message: {text: 'hi ${user}', count: 7}
      metadata: {x-user: '${user}'}
      check: {json: {'$.n': 7}}
      extract: {said: {json: '$.text'}}
";

#[test]
fn unary_calls_described_by_reflection_are_counted_as_the_server_counted_them() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = GrpcServer::start(Behaviour::default(), true).await;
        let r = run(&server.url(), SAY, "{users: 3, iterations: 30}", false).await;
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let s = r.summary();
        let c = &server.counts;
        assert_eq!(s["failures"], 0, "{}", r.stdout);
        assert_eq!(n(&c.calls), 30);
        assert_eq!(n(&c.ok), 30);
        assert_eq!(n(&c.with_user), 30, "metadata went with every call");
        let say = name(&s, "say");
        assert_eq!(say["requests"], 30, "{say}");
        assert_eq!(say["messages"]["sent"], 30, "{say}");
        assert_eq!(say["messages"]["received"], 30, "{say}");
    });
}

#[test]
fn the_open_model_counts_the_same_with_protos() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = GrpcServer::start(Behaviour::default(), false).await;
        let r = run(&server.url(), SAY, "{rate: 20, iterations: 16}", true).await;
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let s = r.summary();
        assert_eq!(n(&server.counts.ok), 16);
        assert_eq!(name(&s, "say")["requests"], 16);
        assert_eq!(s["failures"], 0);
    });
}

#[test]
fn an_unavailable_storm_past_the_servers_limit_is_counted_status_by_status() {
    let _serial = common::serial();
    rt().block_on(async {
        let behaviour = Behaviour {
            limit: 2,
            service_time: std::time::Duration::from_millis(40),
        };
        let server = GrpcServer::start(behaviour, false).await;
        let steps = "  - grpc: {call: test.Echo/Say, name: say, message: {text: x}}\n";
        let r = run(&server.url(), steps, "{users: 8, iterations: 120}", true).await;
        let s = r.summary();
        let c = &server.counts;
        let refused = n(&c.refused);
        assert!(refused > 0, "the server was never past its limit: {}", r.stdout);
        assert_eq!(n(&c.calls), 120);
        assert_eq!(r.error_count("grpc_unavailable"), refused, "{}", r.stdout);
        assert_eq!(s["failures"], refused);
        assert_eq!(name(&s, "say")["requests"], 120);
        assert_eq!(120 - refused, n(&c.ok));
        // The calls each status ended with, for the report's table.
        assert_eq!(s["grpc"]["OK"], n(&c.ok), "{}", s["grpc"]);
        assert_eq!(s["grpc"]["UNAVAILABLE"], refused, "{}", s["grpc"]);
    });
}

#[test]
fn a_status_the_server_answers_is_its_outcome() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = GrpcServer::start(Behaviour::default(), true).await;
        let steps = "  - grpc: {call: test.Echo/Say, message: {fail: NOT_FOUND}}\n";
        let r = run(&server.url(), steps, "{users: 2, iterations: 6}", false).await;
        assert_eq!(n(&server.counts.failed), 6);
        let (count, example) = r.error_class("grpc_not_found");
        assert_eq!(count, 6, "{}", r.stdout);
        assert!(example.contains("asked to fail"), "{example}");
    });
}

#[test]
fn a_call_past_its_deadline_is_deadline_exceeded() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = GrpcServer::start(Behaviour::default(), true).await;
        let steps = "  - grpc: {call: test.Echo/Say, message: {sleep_ms: 3000}, timeout: 200ms}\n";
        let r = run(&server.url(), steps, "{users: 2, iterations: 4}", false).await;
        assert_eq!(n(&server.counts.calls), 4, "{}", r.stdout);
        assert_eq!(r.error_count("grpc_deadline_exceeded"), 4, "{}", r.stdout);
        assert_eq!(n(&server.counts.ok), 0);
    });
}

#[test]
fn server_streams_are_read_to_the_end_or_until_enough() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = GrpcServer::start(Behaviour::default(), true).await;
        let steps = "  - grpc: {call: test.Echo/Count, name: all, message: {text: t, count: 5}, check: {json: {'$.n': 5}}}
  - grpc: {call: test.Echo/Count, name: two, message: {text: t, count: 50, sleep_ms: 20}, until: {matches: '\"n\":2[,}]', count: 1}, timeout: 5s}
";
        let r = run(&server.url(), steps, "{users: 2, iterations: 6}", false).await;
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let s = r.summary();
        assert_eq!(name(&s, "all")["messages"]["received"], 30);
        assert_eq!(name(&s, "two")["messages"]["received"], 12, "{}", name(&s, "two"));
        // Cancelled after two of fifty: the server sent far fewer than 6 x 50 for them.
        let streamed = n(&server.counts.streamed);
        assert!((30 + 12..30 + 6 * 50).contains(&streamed), "{streamed}");
    });
}

#[test]
fn a_client_stream_sends_every_message() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = GrpcServer::start(Behaviour::default(), true).await;
        let steps = "  - grpc:
      call: test.Echo/Collect
      name: collect
      messages: [{text: a}, {text: '${user}'}, {text: c}]
      check: {json: {'$.n': 3}}
";
        let r = run(&server.url(), steps, "{users: 2, iterations: 5}", false).await;
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        assert_eq!(n(&server.counts.received), 15);
        let s = r.summary();
        assert_eq!(name(&s, "collect")["messages"]["sent"], 15);
        assert_eq!(name(&s, "collect")["messages"]["received"], 5);
    });
}

#[test]
fn the_health_example_runs_as_it_is() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = GrpcServer::start(Behaviour::default(), true).await;
        let file = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/grpc-health.yaml");
        let url = server.url();
        let r = tokio::task::spawn_blocking(move || {
            run_scenario(&file, &[("CREST_TARGET", &url)], &["-c", "2", "-n", "10"])
        })
        .await
        .unwrap();
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let s = r.summary();
        assert_eq!(s["requests"], 10, "{}", r.stdout);
        assert_eq!(s["failures"], 0, "{}", r.stdout);
    });
}

#[test]
fn a_server_that_is_gone_is_connect_refused() {
    let _serial = common::serial();
    rt().block_on(async {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("grpc://127.0.0.1:{port}");
        let steps = "  - grpc: {call: test.Echo/Say, message: {text: x}}\n";
        let r = run(&url, steps, "{users: 2, iterations: 4}", true).await;
        assert_eq!(r.error_count("connect_refused"), 4, "{}\n{}", r.stdout, r.stderr);
    });
}

#[test]
fn bad_grpc_steps_are_located_and_exit_2() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = GrpcServer::start(Behaviour::default(), true).await;
        for (steps, protos, says) in [
            ("  - grpc: {call: test.Echo/Shout}\n", true, "service test.Echo has no method \"Shout\""),
            ("  - grpc: {call: test.Echo/Shout}\n", false, "service test.Echo has no method \"Shout\""),
            ("  - grpc: {call: test.Nope/Say}\n", false, "test.Nope"),
            ("  - grpc: {call: test.Echo/Say, message: {txt: a}}\n", true, "has no field \"txt\""),
            ("  - grpc: {call: test.Echo/Say, message: {count: many}}\n", false, "count"),
            ("  - grpc: {call: test.Echo/Say, messages: [{}, {}]}\n", true, "takes one request message"),
            ("  - grpc: {call: Say}\n", true, "not a method name"),
            ("  - grpc: {call: test.Echo/Say, metadata: {grpc-timeout: 1S}}\n", true, "cannot be set"),
        ] {
            let r = run(&server.url(), steps, "{users: 1, iterations: 1}", protos).await;
            assert_eq!(r.code, 2, "{steps}: {}\n{}", r.stdout, r.stderr);
            assert!(r.stderr.contains(says), "{steps}: {}", r.stderr);
            // The step is the line after `steps:`, which `protos:` pushes down one.
            let line = if protos { "scenario.yaml:5:" } else { "scenario.yaml:4:" };
            assert!(r.stderr.contains(line), "{steps}: located: {}", r.stderr);
        }
        assert_eq!(n(&server.counts.calls), 0, "nothing was sent");
        // A .proto that does not compile is located in the .proto.
        let text = "target: http://127.0.0.1:9\nprotos: [bad.proto]\nsteps:\n  - grpc: {call: a.B/C}\nload: {users: 1, iterations: 1}\n";
        let (dir, file) = scenario_file(text);
        std::fs::write(dir.path().join("bad.proto"), "syntax = \"proto3\";\nmessage A {\n  strin x = 1;\n}\n").unwrap();
        let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[], &[])).await.unwrap();
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("bad.proto:3:3"), "{}", r.stderr);
        drop(dir);
    });
}

#[test]
fn tls_calls_trust_the_scenarios_ca_and_fail_as_tls_without_it() {
    let _serial = common::serial();
    rt().block_on(async {
        let (server, ca) = GrpcServer::start_tls(Behaviour::default(), true).await;
        let url = format!("grpcs://127.0.0.1:{}", server.addr.port());
        let steps = "  - grpc: {call: test.Echo/Say, name: say, message: {text: x}, check: {json: {'$.text': x}}}\n";
        let text = format!("target: ${{env:CREST_TARGET}}\nprotos: [echo.proto]\ndefaults: {{cacert: ca.pem}}\nsteps:\n{steps}load: {{users: 2, iterations: 6}}\n");
        let (dir, file) = scenario_file(&text);
        std::fs::write(dir.path().join("echo.proto"), ECHO_PROTO).unwrap();
        std::fs::write(dir.path().join("ca.pem"), &ca).unwrap();
        let (u, f) = (url.clone(), file.clone());
        let r = tokio::task::spawn_blocking(move || run_scenario(&f, &[("CREST_TARGET", &u)], &[])).await.unwrap();
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        assert_eq!(n(&server.counts.ok), 6);
        assert_eq!(name(&r.summary(), "say")["requests"], 6);
        // Without the CA, every connection fails its handshake, and no call reaches the server.
        std::fs::write(&file, text.replace("defaults: {cacert: ca.pem}\n", "")).unwrap();
        let r = tokio::task::spawn_blocking(move || run_scenario(&file, &[("CREST_TARGET", &url)], &[])).await.unwrap();
        assert_eq!(r.error_count("tls"), 6, "{}\n{}", r.stdout, r.stderr);
        assert_eq!(n(&server.counts.ok), 6);
        assert!(n(&server.counts.tls_failures) >= 6);
        drop(dir);
    });
}
