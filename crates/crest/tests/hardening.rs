//! Issue 12: hostile input, hostile targets. Each test is named after the defect it pins down.
#![allow(clippy::unwrap_used)]

mod common;

use common::{assert_nowhere, crest, scenario_file};

/// `crest ARGS...`: exit code, stdout, stderr.
fn crest_out(args: &[&str]) -> (i32, String, String) {
    let out = crest().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `crest validate FILE` on this text: exit code and stderr.
fn validate(text: &str) -> (i32, String) {
    let (_dir, file) = scenario_file(text);
    let (code, _, stderr) = crest_out(&["validate", file.to_str().unwrap()]);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (code, stderr)
}

/// Validation fails with exit 2 and `needle` at `scenario.yaml:LINE:COL`.
fn invalid_at(text: &str, line_col: &str, needle: &str) {
    let (code, stderr) = validate(text);
    assert_eq!(code, 2, "{stderr}");
    let located = format!("scenario.yaml:{line_col}: ");
    assert!(
        stderr.lines().any(|l| l.contains(&located) && l.contains(needle)),
        "expected {needle:?} at {line_col} in:\n{stderr}"
    );
}

#[test]
fn ports_out_of_range_are_refused_naming_the_url() {
    for url in [
        "http://127.0.0.1:83999/",
        "http://127.0.0.1:70000/",
        "http://127.0.0.1:-1/",
    ] {
        let out = tempfile::tempdir().unwrap();
        let (code, _, stderr) = crest_out(&["run", url, "-n", "5", "--out", out.path().to_str().unwrap()]);
        assert_eq!(code, 2, "{url}: {stderr}");
        assert!(stderr.contains(url.trim_end_matches('/')), "{url}: {stderr}");
        assert!(stderr.contains("out of range"), "{stderr}");
        assert!(!out.path().join("results.json").exists(), "nothing is sent");
    }
    let (code, _, stderr) = crest_out(&["find", "http://127.0.0.1:70000/"]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = crest_out(&[
        "run",
        "http://127.0.0.1:1/",
        "--monitor-prometheus",
        "http://127.0.0.1:99999/metrics",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--monitor-prometheus") && stderr.contains("99999"),
        "{stderr}"
    );
    for port in ["70000", "-1", "83999"] {
        let text = format!(
            "target: http://127.0.0.1:{port}\nload: {{users: 1, duration: 1s}}\nsteps:\n  - request: {{path: /}}\n"
        );
        invalid_at(&text, "1:9", &format!("port {port} is out of range"));
        let (_, stderr) = validate(&text);
        assert_eq!(
            stderr.lines().filter(|l| l.contains("scenario.yaml:")).count(),
            1,
            "one error: {stderr}"
        );
    }
    invalid_at(
        "load: {users: 1, duration: 1s}\nsteps:\n  - request: {url: \"http://127.0.0.1:65536/x\"}\n",
        "3:20",
        "out of range",
    );
    invalid_at(
        "target: http://127.0.0.1:1\nload: {users: 1, duration: 1s}\nsteps:\n  - request: {path: /}\nmonitor:\n  prometheus:\n    - url: http://127.0.0.1:99999/metrics\n",
        "7:12",
        "out of range",
    );
}

/// `n` loops, one inside the other, around a request, in block style.
fn nested_loops(n: usize) -> String {
    let mut text = String::from("target: http://127.0.0.1:1\nload: {users: 1, duration: 1s}\nsteps:\n");
    let mut indent = String::from("  ");
    for _ in 0..n {
        text += &format!("{indent}- loop:\n{indent}    times: 1\n{indent}    steps:\n");
        indent += "      ";
    }
    text += &format!("{indent}- request: {{path: /}}\n");
    text
}

#[test]
fn deep_nesting_is_refused_with_a_location_instead_of_overflowing_the_stack() {
    let (code, stderr) = validate(&nested_loops(32));
    assert_eq!(code, 0, "32 nested loops are allowed: {stderr}");
    invalid_at(&nested_loops(33), "100:197", "loops nest deeper than 32 levels");
    // Deeper still, the YAML itself is refused before it is built.
    let (_dir, file) = scenario_file(&nested_loops(270));
    for cmd in ["validate", "run"] {
        let (code, _, stderr) = crest_out(&[cmd, file.to_str().unwrap()]);
        assert_eq!(code, 2, "{cmd}: {stderr}");
        assert!(
            stderr.contains("scenario.yaml:") && stderr.contains("nest deeper than 128 levels"),
            "{stderr}"
        );
    }
    let head = "target: http://127.0.0.1:1\nload: {users: 1, duration: 1s}\nsteps:\n  ";
    for deep in [
        format!("{head}{}x{}", "[".repeat(10_000), "]".repeat(10_000)),
        format!("{head}{}x", "- ".repeat(10_000)),
        format!("{head}- {}x", "a: ".repeat(10_000)),
    ] {
        let (code, stderr) = validate(&deep);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains("scenario.yaml:4:"), "located: {stderr}");
    }
}

#[test]
fn empty_steps_and_empty_step_errors_are_located() {
    let head = "target: http://127.0.0.1:1\nload: {users: 1, duration: 1s}\n";
    invalid_at(&format!("{head}steps: []\n"), "3:8", "has no steps");
    invalid_at(&format!("{head}steps: [{{}}]\n"), "3:9", "a step is exactly one of");
    invalid_at(&format!("{head}steps:\n  - {{}}\n"), "4:5", "a step is exactly one of");
    invalid_at(
        &format!("{head}steps:\n  - loop: {{times: 2, steps: []}}\n"),
        "4:5",
        "`steps` is empty",
    );
}

#[test]
fn a_byte_order_mark_at_the_start_is_accepted() {
    let (code, stderr) = validate(
        "\u{feff}target: http://127.0.0.1:1\nload: {users: 1, duration: 1s}\nsteps:\n  - request: {path: /}\n",
    );
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn unbounded_sizes_are_refused_at_validation_with_locations() {
    let text = r#"target: http://127.0.0.1:1
defaults:
  timeout: 0s
  connect_timeout: 0s
  headers:
    X-A: "a\r\nInjected: 1"
load: {rate: 1e300, duration: 0s}
steps:
  - request: {path: "/${random_string(99999999999)}", timeout: 100000000000d}
  - think: 1s..100000000000d
"#;
    for (at, needle) in [
        ("3:12", "timeout: \"0s\" must be above 0"),
        ("4:20", "connect_timeout: \"0s\" must be above 0"),
        ("6:10", "contains a line break"),
        ("7:14", "the rate is at most 10000000/s"),
        ("7:31", "duration: \"0s\" must be above 0"),
        ("9:21", "the length is at most 1048576"),
        ("9:64", "at most 365 days"),
        ("10:12", "at most 365 days"),
    ] {
        invalid_at(text, at, needle);
    }
    let (_, stderr) = validate(text);
    assert_eq!(
        stderr.lines().filter(|l| l.contains("scenario.yaml:")).count(),
        8,
        "{stderr}"
    );
    let head = "target: http://127.0.0.1:1\nsteps:\n  - request: {path: /}\n";
    invalid_at(
        &format!("{head}load: {{users: 2000000, duration: 1s}}\n"),
        "4:15",
        "at most 1000000 users",
    );
    invalid_at(
        &format!("{head}load:\n  rate_stages: [{{ramp_to: 1e12, over: 1s}}]\n"),
        "5:17",
        "the rate is at most",
    );
    invalid_at(
        &format!("{head}load: {{rate: 5, duration: 1s, max_in_flight: 0}}\n"),
        "4:46",
        "at least 1",
    );
    // The largest values allowed are allowed.
    let (code, stderr) = validate(
        "target: http://127.0.0.1:1\nload: {rate: 10000000, duration: 365d}\nsteps:\n  - request: {path: \"/${random_string(1048576)}\"}\n",
    );
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn out_of_bounds_flags_are_refused_naming_the_flag() {
    for (args, needle) in [
        (
            &["--rate", "1e12"][..],
            "--rate 1000000000000: the rate is at most 10000000/s",
        ),
        (&["--rate", "1e300", "-d", "3s"][..], "--rate"),
        (&["-d", "-5s"][..], "a duration cannot be negative"),
        (&["--timeout", "-1s"][..], "a duration cannot be negative"),
        (&["-d", "100000000000d"][..], "at most 365 days"),
        (&["--connect-timeout", "0s"][..], "--connect-timeout 0s"),
        (&["-H", "X-A: a\rInjected: 1"][..], "line break"),
        (&["-H", "X-A: a\nInjected: 1"][..], "line break"),
    ] {
        let mut all = vec!["run", "http://127.0.0.1:1/"];
        all.extend_from_slice(args);
        let (code, _, stderr) = crest_out(&all);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: expected {needle:?} in {stderr}");
    }
    let (code, _, stderr) = crest_out(&["find", "http://127.0.0.1:1/", "--open", "--max", "1e12"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--max"), "{stderr}");
}

#[test]
fn a_schedule_far_behind_never_runs_past_its_duration() {
    let _serial = common::serial();
    common::rt().block_on(async {
        let server = crest_testkit::Server::start(|_, _| crest_testkit::Reply::ok()).await;
        // Ten million arrivals a second is far more than one process sends: every arrival is due
        // at once. The run must still end at 2 s, and the requests started must have run.
        let started = std::time::Instant::now();
        let r = common::run_async(&server.url("/"), &["--rate", "10000000", "-d", "2s", "-c", "20"]).await;
        let wall = started.elapsed().as_secs_f64();
        let results = r.results();
        let duration = results["duration_s"].as_f64().unwrap();
        assert!(duration < 3.5, "ran {duration} s for -d 2s");
        assert!(wall < 10.0, "crest took {wall} s for -d 2s");
        let sent = r.summary()["requests"].as_u64().unwrap();
        assert!(
            sent > 100,
            "the 20 requests in flight were replaced as they finished: {sent}"
        );
    });
}

#[test]
fn a_connection_switched_by_101_is_never_reused() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _serial = common::serial();
    common::rt().block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (connections, reused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (c, r) = (Arc::clone(&connections), Arc::clone(&reused));
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                c.fetch_add(1, Ordering::SeqCst);
                let r = Arc::clone(&r);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let mut requests = 0;
                    // Each request head ends with an empty line; answer the first with 101 and
                    // whatever follows (a reused connection) with 200, counting it.
                    let mut seen = Vec::new();
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        seen.extend_from_slice(&buf[..n]);
                        while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                            seen.drain(..end + 4);
                            requests += 1;
                            let reply: &[u8] = if requests == 1 {
                                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
                            } else {
                                r.fetch_add(1, Ordering::SeqCst);
                                b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
                            };
                            if s.write_all(reply).await.is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
        let r = common::run_async(&format!("http://{addr}/"), &["-n", "4", "-c", "1"]).await;
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert_eq!(
            reused.load(Ordering::SeqCst),
            0,
            "a request was sent on a switched connection"
        );
        assert_eq!(connections.load(Ordering::SeqCst), 4, "one connection per request");
    });
}

#[test]
fn planted_secrets_are_written_nowhere() {
    let _serial = common::serial();
    common::rt().block_on(async {
        let server = crest_testkit::Server::start(|_, _| crest_testkit::Reply::ok()).await;
        let port = server.addr.port();
        // Quick mode: a URL password beside secret-looking query parameters, and headers, one
        // named with --redact.
        let url = format!(
            "http://u:URLPASS1@127.0.0.1:{port}/x?page=2&sig=SIGSECRET1&jwt=JWTSECRET1&pass=PASSSECRET1&code=CODESECRET1"
        );
        let r = common::run_async(
            &url,
            &["-n", "5", "-H", "X-JWT: XJWTSECRET1", "-H", "X-Tenant-Blob: BLOBSECRET1", "--redact", "tenant-blob"],
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let secrets = ["URLPASS1", "SIGSECRET1", "JWTSECRET1", "PASSSECRET1", "CODESECRET1", "XJWTSECRET1", "BLOBSECRET1"];
        let dir = r.dir.path().to_path_buf();
        let report = tokio::task::spawn_blocking(move || crest_out(&["report", dir.to_str().unwrap()]))
            .await
            .unwrap();
        assert_eq!(report.0, 0, "{}", report.2);
        assert_nowhere(&secrets, r.dir.path(), &[&r.stdout, &r.stderr, &report.1, &report.2]);
        assert!(r.results_text().contains("page=2"), "other parameters stay readable");

        // A scenario: the target's password and a token from the environment.
        let text = "target: ${env:SECRET_TARGET}\ndefaults:\n  headers:\n    X-Api: \"${env:API_TOKEN}\"\n\
                    load: {users: 1, duration: 1s}\nsteps:\n  - request: {path: \"/items/${env:ITEM}?x=${env:QVAL}\"}\n";
        let (_guard, file) = scenario_file(text);
        let target = format!("http://u:ENVPASS1@127.0.0.1:{port}");
        let env = [("SECRET_TARGET", target.as_str()), ("API_TOKEN", "ENVTOKEN1"), ("ITEM", "ENVITEM1"), ("QVAL", "ENVQVAL1")];
        let (f, e) = (file.clone(), env.map(|(k, v)| (k.to_string(), v.to_string())));
        let r = tokio::task::spawn_blocking(move || {
            let refs: Vec<(&str, &str)> = e.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            common::run_scenario(&f, &refs, &[])
        })
        .await
        .unwrap();
        assert_eq!(r.code, 0, "{}", r.stderr);
        let env_secrets = ["ENVPASS1", "ENVTOKEN1", "ENVITEM1", "ENVQVAL1"];
        let validate = |vars: &[(&str, &str)]| {
            let mut c = crest();
            c.arg("validate").arg(&file);
            for (k, v) in vars {
                c.env(k, v);
            }
            let out = c.output().unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
        };
        let valid = validate(&env);
        let bad_target = format!("ftp://u:ENVPASS1@127.0.0.1:{port}");
        let mut bad = env;
        bad[0].1 = &bad_target;
        let invalid = validate(&bad);
        assert!(invalid.contains("http:// or https://"), "{invalid}");
        assert_nowhere(&env_secrets, r.dir.path(), &[&r.stdout, &r.stderr, &valid, &invalid]);
        assert_eq!(server.received().len() as u64, 5 + r.summary()["requests"].as_u64().unwrap());

        // A sweep's setup command.
        let out = tempfile::tempdir().unwrap();
        let args: Vec<String> = [
            "sweep",
            file.to_str().unwrap(),
            "--param",
            "n=1",
            "--setup",
            "PGPASSWORD=SWEEPPASS1 true",
            "--out",
            out.path().to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec();
        let env: Vec<(String, String)> = bad.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let o = tokio::task::spawn_blocking(move || {
            let mut c = crest();
            c.args(&args).env("SECRET_TARGET", &target);
            for (k, v) in env.iter().skip(1) {
                c.env(k, v);
            }
            c.output().unwrap()
        })
        .await
        .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("PGPASSWORD=<redacted> true"), "{stderr}");
        assert_nowhere(&["SWEEPPASS1"], out.path(), &[&stdout, &stderr]);
    });
}

/// `crest ARGS... | head -c0`: the reader is gone before crest writes. Returns the exit code and
/// stderr.
fn with_stdout_closed(args: &[&str]) -> (i32, String) {
    use std::process::Stdio;
    let mut child = crest()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_stdout_neither_panics_nor_loses_the_results() {
    let (_scenario_dir, scenario) = scenario_file(&common::example("validator.yaml"));
    let (code, stderr) = with_stdout_closed(&["validate", scenario.to_str().unwrap()]);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(code, 0, "{stderr}");

    let target = format!(
        "http://{}/",
        crest_demo::spawn("127.0.0.1:0".parse().unwrap(), crest_demo::Config::default()).unwrap()
    );
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let (code, stderr) = with_stdout_closed(&[
        "run",
        &target,
        "-c",
        "2",
        "-n",
        "20",
        "--out",
        dir,
        "--force",
        "--summary-json",
        "-",
    ]);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(common::target_metric(&target, "crest_target_requests_total"), 20);
    common::check_counts(&out.path().join("results.json"));
    assert!(out.path().join("report.md").exists());
}
