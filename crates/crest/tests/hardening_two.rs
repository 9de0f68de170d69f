//! Issue 21: hardening, round two. Runs that always stop, inputs that cannot exhaust memory,
//! secrets that stay secret, outputs that are whole or say they are not.
#![allow(clippy::unwrap_used)]

mod common;

use common::{assert_nowhere, crest, scenario_file};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// `crest ARGS...`: exit code, stdout, stderr.
fn crest_out(args: &[&str]) -> (i32, String, String) {
    let out = crest().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

/// Waits for `child` at most `limit`: a run that does not stop is killed and fails the test
/// instead of hanging it. The limit is far above what the run needs on a busy machine.
fn wait_at_most(child: &mut Child, limit: Duration) -> i32 {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("crest still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `child` a signal (`-TERM`).
fn signal(child: &Child, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// A flow that loops a billion times over a `set` before its request.
fn busy_loop_scenario(target: &str, duration: &str) -> String {
    format!(
        "target: {target}\ndefaults: {{timeout: 1s}}\nload: {{users: 2, duration: {duration}}}\nsteps:\n  - loop: {{times: 1000000000, steps: [{{set: {{a: x}}}}]}}\n  - request: {{path: /}}\n"
    )
}

#[test]
fn a_flow_that_never_waits_still_ends_by_duration_and_by_signal() {
    let target = common::target_process(&[]);
    let (_guard, file) = scenario_file(&busy_loop_scenario(target.url.trim_end_matches('/'), "1s"));

    // Valid, but warned about where the loop is.
    let (code, _, stderr) = crest_out(&["validate", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("warning: ") && stderr.contains("scenario.yaml:5:5: loop: none of its steps sends anything"),
        "{stderr}"
    );

    // By duration: it ends (after the grace for the iterations in flight), and the journal has
    // its intervals, which the ticker on the same thread closes.
    let out = tempfile::tempdir().unwrap();
    let mut child = common::spawn_out(&["run", file.to_str().unwrap()], out.path());
    wait_at_most(&mut child, Duration::from_secs(60));
    let results = std::fs::read_to_string(out.path().join("results.json")).unwrap();
    let results: serde_json::Value = serde_json::from_str(&results).unwrap();
    assert_eq!(results["ended_by"], "duration");
    assert!(common::journal_intervals(out.path()) >= 1, "the journal has intervals");
    // Not one request: each user is still in its loop.
    assert_eq!(common::target_metric(&target.url, "crest_target_requests_total"), 0);

    // By signal: SIGTERM ends a run of an hour once its intervals are seen to be closing.
    let (_guard, file) = scenario_file(&busy_loop_scenario(target.url.trim_end_matches('/'), "1h"));
    let out = tempfile::tempdir().unwrap();
    let mut child = common::spawn_out(&["run", file.to_str().unwrap()], out.path());
    common::wait_for_intervals(out.path(), 2);
    signal(&child, "-TERM");
    assert_eq!(wait_at_most(&mut child, Duration::from_secs(60)), 143);
    let results = std::fs::read_to_string(out.path().join("results.json")).unwrap();
    assert!(results.contains("\"ended_by\": \"sigterm\""), "{results}");
}

#[test]
fn tiny_rates_are_refused_naming_the_flag_or_the_line() {
    for rate in ["1e-20", "1e-300", "0.0000001"] {
        let (code, _, stderr) = crest_out(&["run", "http://127.0.0.1:1/", "--rate", rate, "-d", "1s"]);
        assert_eq!(code, 2, "{rate}: {stderr}");
        assert!(
            stderr.contains(&format!("--rate {rate}")) || stderr.contains("--rate "),
            "{rate}: {stderr}"
        );
        assert!(stderr.contains("the rate is at least"), "{rate}: {stderr}");
    }
    for (load, at) in [
        ("{rate: 1e-300, duration: 1s}", "2:14"),
        ("{rate_stages: [{ramp_to: 1e-300, over: 1s}]}", "2:"),
        ("{start_rate: 1e-300, rate_stages: [{ramp_to: 1, over: 1s}]}", "2:"),
    ] {
        let (_guard, file) = scenario_file(&format!(
            "target: http://127.0.0.1:1\nload: {load}\nsteps:\n  - request: {{path: /}}\n"
        ));
        let (code, _, stderr) = crest_out(&["validate", file.to_str().unwrap()]);
        assert_eq!(code, 2, "{load}: {stderr}");
        assert!(
            stderr.contains(&format!("scenario.yaml:{at}")) && stderr.contains("the rate is at least"),
            "{load}: expected at {at}: {stderr}"
        );
    }
    // The lowest rate allowed runs, and ends by its duration with its one arrival.
    let target = common::target_process(&[]);
    let r = common::run(&target.url, &["--rate", "0.000001", "-d", "1s"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(common::target_metric(&target.url, "crest_target_requests_total"), 1);
}

#[test]
fn json_bodies_and_checks_of_secret_fields_are_never_quoted() {
    common::rt().block_on(async {
        let server = crest_testkit::Server::start(|_, _| {
            crest_testkit::Reply::json(200, r#"{"token":"SERVERTOKEN1","status":"ok"}"#)
        })
        .await;
        // Quick mode: a JSON body with secret-named fields.
        let r = common::run_async(
            &server.url("/login"),
            &["-n", "3", "--body", r#"{"user":"ann","password":"BODYPASS1","client_secret":"BODYSECRET1"}"#],
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let dir = r.dir.path().to_path_buf();
        let report = tokio::task::spawn_blocking(move || crest_out(&["report", dir.to_str().unwrap()]))
            .await
            .unwrap();
        assert_eq!(report.0, 0, "{}", report.2);
        assert_nowhere(
            &["BODYPASS1", "BODYSECRET1"],
            r.dir.path(),
            &[&r.stdout, &r.stderr, &report.1, &report.2],
        );
        assert!(r.results_text().contains(r#"\"user\":\"ann\""#), "other fields stay readable");
        // The server was sent the body as given.
        let bodies: Vec<String> = server
            .received()
            .iter()
            .map(|q| String::from_utf8_lossy(&q.body).into_owned())
            .collect();
        assert!(bodies.iter().all(|b| b.contains("BODYPASS1")), "{bodies:?}");

        // A scenario: a check on a server-issued token fails, and a JSON body's secret field
        // comes from the environment.
        let text = format!(
            "target: {}\nload: {{threads: 1, loops: 1}}\nsteps:\n  - request:\n      method: POST\n      path: /login\n      json: {{user: ann, password: \"${{env:PW}}\"}}\n      check: {{json: {{\"$.token\": EXPECTEDTOKEN1}}}}\n  - request:\n      path: /items\n      extract: {{session_token: \"$.token\"}}\n      check: {{json: {{\"$.status\": fine}}}}\n",
            server.url("").trim_end_matches('/')
        );
        let (_guard, file) = scenario_file(&text);
        let r = tokio::task::spawn_blocking(move || {
            common::run_scenario(&file, &[("PW", "ENVPASS2")], &["--log-requests"])
        })
        .await
        .unwrap();
        assert_eq!(r.code, 1, "every request failed its check: {}", r.stderr);
        assert_eq!(r.error_count("check_failed"), 1, "{}", r.stdout);
        let failures = std::fs::read_to_string(r.dir.path().join("failures.csv")).unwrap();
        assert!(
            failures.contains("$.token is not the expected value"),
            "the failure still says what was wrong: {failures}"
        );
        assert_nowhere(&["SERVERTOKEN1", "EXPECTEDTOKEN1", "ENVPASS2"], r.dir.path(), &[&r.stdout, &r.stderr]);
    });
}

/// `crest ARGS...` with its address space capped at 1.5 GB (`ulimit -v`), so an input that
/// takes memory without bound fails this test instead of the machine: exit code, stdout, stderr.
fn crest_capped(args: &[&str]) -> (i32, String, String) {
    crest_capped_at(1_500_000, args)
}

/// [`crest_capped`] with a cap of `kib` KiB of address space.
fn crest_capped_at(kib: u64, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_crest"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !stderr.contains("panicked") && !stderr.contains("memory allocation"),
        "{args:?}: {stderr}"
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

/// Loading a scenario takes memory in proportion to what it describes, not bytes: a file of
/// 20,000 requests just under the 1 MiB limit is read within 180 MB of address space (the
/// debug binary's own mappings included; a file of one long string takes under 80 MB). Each
/// value kept an 80-byte span and each step held every kind of step inline: 181 MB resident
/// then, 94 MB now (`crest validate`, peak RSS).
#[test]
fn a_scenario_near_the_size_limit_loads_in_bounded_memory() {
    let mut text = String::from("target: http://127.0.0.1:9\nload: {users: 1, duration: 1s}\nsteps:\n");
    let mut i = 0;
    while text.len() < 1_000_000 {
        text.push_str(&format!("  - request: {{path: /items/{i}, name: get item}}\n"));
        i += 1;
    }
    assert!(text.len() as u64 <= crest_model::input::MAX_SCENARIO);
    let (_guard, file) = scenario_file(&text);
    let (code, stdout, stderr) = crest_capped_at(180_000, &["validate", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("valid") && stdout.contains("get item"), "{stdout}");
}

#[test]
fn no_input_takes_memory_without_bound() {
    let target = common::target_process(&[]);
    let base = target.url.trim_end_matches('/');

    // A variable that doubles each round: 2^64 bytes unbounded; the users stop at the limit,
    // each with its iteration counted as failed, in the flow or before it (`on_start`).
    let doubling = "loop: {times: 64, steps: [{set: {a: \"${a}${a}\"}}]}";
    for (at, steps) in [
        ("steps", format!("steps:\n  - {doubling}\n  - request: {{path: /}}\n")),
        (
            "on_start",
            format!("on_start:\n  - {doubling}\nsteps:\n  - request: {{path: /}}\n"),
        ),
    ] {
        let (_guard, file) = scenario_file(&format!(
            "target: {base}\nload: {{users: 2, duration: 1s}}\nvariables: {{a: x}}\n{steps}"
        ));
        let out = tempfile::tempdir().unwrap();
        let (code, stdout, stderr) =
            crest_capped(&["run", file.to_str().unwrap(), "--out", out.path().to_str().unwrap()]);
        assert_eq!(code, 1, "{at}: no request succeeded: {stderr}");
        let results = out.path().join("results.json");
        common::check_counts(&results);
        let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
        let it = &r["iterations"][0];
        assert_eq!(
            (it["started"].as_u64(), it["failed"].as_u64(), it["completed"].as_u64()),
            (Some(2), Some(2), Some(0)),
            "{at}: each stopped user's iteration is counted as failed: {it}"
        );
        assert!(stdout.contains("0 completed, 2 failed"), "{at}: {stdout}");
    }
    assert_eq!(common::target_metric(&target.url, "crest_target_requests_total"), 0);

    // /dev/zero as each input, and a scenario past its size: refused, naming the input.
    let (code, _, stderr) = crest_capped(&["run", &target.url, "--body-file", "/dev/zero", "-n", "1"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--body-file /dev/zero") && stderr.contains("it is a device, not a regular file"),
        "{stderr}"
    );
    for cmd in ["validate", "run"] {
        let (code, _, stderr) = crest_capped(&[cmd, "/dev/zero"]);
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains("/dev/zero: cannot read the file: it is a device, not a regular file"),
            "{stderr}"
        );
    }
    let (_guard, file) = scenario_file(&format!(
        "target: {base}\ndata:\n  d: {{file: /dev/zero}}\nload: {{users: 1, duration: 1s}}\nsteps:\n  - request: {{path: /}}\n"
    ));
    let (code, _, stderr) = crest_capped(&["validate", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("scenario.yaml:3:13: data d") && stderr.contains("it is a device, not a regular file"),
        "{stderr}"
    );
    let big = format!(
        "target: {base}\nload: {{users: 1, duration: 1s}}\nsteps:\n  - request: {{path: /}}\n#{}\n",
        "x".repeat(2 << 20)
    );
    let (_guard, file) = scenario_file(&big);
    let (code, _, stderr) = crest_capped(&["validate", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("larger than 1 MiB"), "{stderr}");
    assert_eq!(
        common::target_metric(&target.url, "crest_target_requests_total"),
        0,
        "nothing was sent"
    );
}

/// Issue 35: a FIFO with no writer held crest forever. Every input is opened without waiting
/// and refused unless it is a regular file: a scenario, a data file, a run's results.
#[test]
fn a_fifo_as_any_input_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = |name: &str| {
        let p = dir.path().join(name);
        assert!(std::process::Command::new("mkfifo").arg(&p).status().unwrap().success());
        p
    };
    let scenario = fifo("scenario.yaml");
    let run_dir = dir.path().join("run");
    std::fs::create_dir(&run_dir).unwrap();
    let results = run_dir.join("results.json");
    assert!(std::process::Command::new("mkfifo")
        .arg(&results)
        .status()
        .unwrap()
        .success());
    for args in [
        vec!["validate", scenario.to_str().unwrap()],
        vec!["run", scenario.to_str().unwrap()],
        vec!["report", run_dir.to_str().unwrap()],
    ] {
        let mut child = crest()
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Far above what refusing takes; a crest waiting for a writer is killed and fails here.
        let code = wait_at_most(&mut child, Duration::from_secs(30));
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(
            stderr.contains("it is a pipe (FIFO), not a regular file"),
            "{args:?}: {stderr}"
        );
    }
}

/// A real run's results.json, edited by `edit`, read back by `crest report` (with its memory
/// capped): the exit code and stderr.
fn report_of_edited(edit: impl FnOnce(&mut serde_json::Value)) -> (i32, String) {
    let target = common::target_process(&[]);
    let r = common::run(&target.url, &["-n", "20", "-c", "2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut doc = r.results();
    edit(&mut doc);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("edited.json");
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let (code, _, stderr) = crest_capped(&["report", file.to_str().unwrap()]);
    (code, stderr)
}

/// A histogram whose header declares a 2 GiB payload, in the V2 deflate encoding.
const HUGE_HISTOGRAM: &str =
    "HISTFAAAAEJ4nJNpmSzcwAAHzFCaEURcm7yEwf4DRGCpCJMqkyATNxMTMwsTJxMrkGZiZ+IFMlYyMi1mZzrPwnTQmYkJAGuYCYE=";

/// An edit of a results document.
type Edit = Box<dyn FnOnce(&mut serde_json::Value)>;

#[test]
fn results_that_do_not_hold_together_are_refused_naming_the_field() {
    let cases: Vec<(Edit, &str)> = vec![
        (Box::new(|d| d["started_at"] = "yesterday".into()), "started_at"),
        (
            Box::new(|d| {
                let n = d["status_codes"]["200"].clone();
                d["status_codes"] = serde_json::json!({ "abc": n });
            }),
            "status_codes.abc",
        ),
        (Box::new(|d| d["status_codes"]["200"] = 21.into()), "status_codes"),
        (
            Box::new(|d| d["intervals"][0]["requests"] = 1000.into()),
            "intervals' requests",
        ),
        (Box::new(|d| d["stats"][0]["count"] = 19.into()), "stats[0].latency"),
        (
            Box::new(|d| d["stats"][0]["latency"] = HUGE_HISTOGRAM.into()),
            "stats[0].latency",
        ),
    ];
    for (edit, field) in cases {
        let (code, stderr) = report_of_edited(edit);
        assert_eq!(code, 2, "{field}: {stderr}");
        assert!(
            stderr.contains("edited.json: not a crest results document") && stderr.contains(field),
            "{field}: {stderr}"
        );
    }
    // The run's own document, unedited, is read.
    let (code, stderr) = report_of_edited(|_| {});
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_journal_with_a_million_names_is_refused_at_its_first_line() {
    let target = common::target_process(&[]);
    let r = common::run(&target.url, &["-n", "5"]);
    let journal = std::fs::read_to_string(r.dir.path().join("journal.jsonl")).unwrap();
    let mut lines: Vec<String> = journal.lines().map(str::to_string).collect();
    let mut start: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    start["names"] = (0..1_000_000).map(|i| format!("n{i}")).collect::<Vec<_>>().into();
    lines[0] = start.to_string();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("journal.jsonl"), lines.join("\n") + "\n").unwrap();
    let (code, _, stderr) = crest_capped(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("line 1: names: 1000000 of them; a run has at most 10000"),
        "{stderr}"
    );
}

#[test]
fn an_output_that_cannot_be_written_whole_is_never_left_partial_and_exits_4() {
    // RLIMIT_FSIZE (10 KB a file, with SIGXFSZ ignored so a write fails with EFBIG) stands in
    // for a full disk: results.json and the journal fit, report.html does not.
    let target = common::target_process(&[]);
    let out = tempfile::tempdir().unwrap();
    let o = std::process::Command::new("bash")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 10 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_crest"))
        .args(["run", &target.url, "-n", "20", "-c", "2", "-q", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("cannot write") && stderr.contains("report.html"),
        "{stderr}"
    );
    let names: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.starts_with("report.html")), "{names:?}");
    assert!(
        !names.iter().any(|n| n.ends_with(".tmp") || n.ends_with(".reserve")),
        "{names:?}"
    );
    common::check_counts(&out.path().join("results.json"));
    assert_eq!(common::target_metric(&target.url, "crest_target_requests_total"), 20);

    // With room again, `crest report` writes them.
    let (code, _, stderr) = crest_out(&["report", out.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(out.path().join("report.html").is_file());
}

#[test]
fn sighup_ends_a_run_as_sigterm_does_and_keeps_its_results() {
    let target = common::target_process(&[]);
    let out = tempfile::tempdir().unwrap();
    let mut child = common::spawn_out(&["run", &target.url, "-c", "2", "-d", "1h"], out.path());
    common::wait_for_intervals(out.path(), 1);
    signal(&child, "-HUP");
    assert_eq!(wait_at_most(&mut child, Duration::from_secs(60)), 143);
    common::check_counts(&out.path().join("results.json"));
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("results.json")).unwrap()).unwrap();
    assert_eq!(results["ended_by"], "sigterm");
    // Every request the target served is in the results, but the few cut off in flight.
    let served = common::target_metric(&target.url, "crest_target_requests_total");
    let counted: u64 = results["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["count"].as_u64().unwrap())
        .sum();
    assert!(
        served >= counted && served - counted <= 2,
        "served {served}, counted {counted}"
    );
}

#[test]
fn smaller_ones_names_as_text_in_csv_a_bounded_demo_body_help_and_urls() {
    let target = common::target_process(&[]);
    // A request name starting with `=` stays text in requests.csv.
    let (_guard, file) = scenario_file(&format!(
        "target: {}\nload: {{threads: 1, loops: 2}}\nsteps:\n  - request: {{name: \"=HYPERLINK(1)\", path: /}}\n",
        target.url.trim_end_matches('/')
    ));
    let r = common::run_scenario(&file, &[], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let csv = std::fs::read_to_string(r.dir.path().join("requests.csv")).unwrap();
    assert!(csv.contains(",'=HYPERLINK(1),"), "{csv}");
    assert!(!csv.contains(",=HYPERLINK"), "{csv}");

    // The demo target reads a JSON body only up to its limit: 200 MB sent to it costs it
    // nothing near that.
    let rss = |pid: u32| -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).unwrap();
        kb.trim().trim_end_matches(" kB").trim().parse::<u64>().unwrap() * 1024
    };
    let before = rss(target.child.id());
    {
        use std::io::{Read, Write};
        let addr = target.url.trim_start_matches("http://").trim_end_matches('/');
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        let size = 200u64 << 20;
        s.write_all(format!("POST /tasks/submissions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n").as_bytes())
            .unwrap();
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..200 {
            if s.write_all(&chunk).is_err() {
                break; // the target answered and closed: it read no further
            }
        }
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
    }
    let grew = rss(target.child.id()).saturating_sub(before);
    assert!(grew < 32 << 20, "the target's peak memory grew by {grew} bytes");

    // --help lists every exit code; a word that is neither a URL nor a file says so.
    let (_, help, _) = crest_out(&["--help"]);
    for code in ["  0 ", "  1 ", "  2 ", "  3 ", "  4 ", "  130 ", "  143 "] {
        assert!(help.contains(code), "{code:?} in {help}");
    }
    let (code, _, stderr) = crest_out(&["run", "not a url", "-d", "1s"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("\"not a url\" is not a URL"), "{stderr}");
}

#[test]
fn a_run_rebuilt_without_its_end_line_that_reached_its_duration_is_not_called_killed() {
    let target = common::target_process(&[]);
    let r = common::run(&target.url, &["-c", "2", "-d", "2s"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The journal as a full disk leaves it: every interval, no end line.
    let journal = std::fs::read_to_string(r.dir.path().join("journal.jsonl")).unwrap();
    let kept: Vec<&str> = journal
        .lines()
        .filter(|l| !l.starts_with("{\"entry\":\"end\""))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("journal.jsonl"), kept.join("\n") + "\n").unwrap();
    let (code, _, stderr) = crest_out(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("ended by duration, as far as its journal shows"),
        "{stderr}"
    );
    assert!(!stderr.contains("killed or crashed"), "{stderr}");
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(!md.contains("killed or crashed"), "{md}");
}
