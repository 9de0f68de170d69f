//! The results document: its checked-in JSON Schema, secrets, and interruption.
#![allow(clippy::unwrap_used)]

mod common;

use common::{crest, rt, run_async};
use crest_testkit::{Reply, Server};
use std::path::PathBuf;
use std::time::Duration;

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schema/results.schema.json")
}

/// The checked-in schema is the one generated from the types. `CREST_UPDATE_GOLDEN=1` rewrites it.
#[test]
fn checked_in_schema_matches_the_types() {
    let _serial = common::serial();
    let generated = serde_json::to_string_pretty(&crest_model::results::json_schema()).unwrap() + "\n";
    let path = schema_path();
    if std::env::var_os("CREST_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "schema/results.schema.json is stale: run CREST_UPDATE_GOLDEN=1 cargo test -p crest --test results_doc"
    );
}

#[test]
fn results_validate_against_the_schema_and_hide_secrets() {
    let _serial = common::serial();
    rt().block_on(async {
        let server = Server::start(|_, i| {
            if i % 5 == 0 {
                Reply::Respond {
                    delay: Duration::ZERO,
                    status: 503,
                    body_len: 5,
                }
            } else {
                Reply::ok()
            }
        })
        .await;
        let url = format!(
            "http://alice:pa55word@{}/replay/state?timestamp=now&api_key=k3y-in-query",
            server.addr
        );
        let r = run_async(
            &url,
            &[
                "-n",
                "50",
                "-c",
                "2",
                "-H",
                "Authorization: Bearer s3cr3t-t0ken",
                "-H",
                "X-Api-Key: another-s3cret",
                "-H",
                "Accept: application/json",
            ],
        )
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);

        // The server got the real values...
        let got = server.received();
        assert!(got[0]
            .headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("authorization") && v == "Bearer s3cr3t-t0ken"));
        // ...and nothing crest wrote or printed contains them.
        let everything = format!("{}{}{}", r.results_text(), r.stdout, r.stderr);
        for secret in ["s3cr3t-t0ken", "another-s3cret", "pa55word", "k3y-in-query"] {
            assert!(!everything.contains(secret), "{secret} leaked");
        }
        let results = r.results();
        assert!(results["config"]["http"]["headers"]
            .to_string()
            .contains("Bearer <redacted>"));
        assert!(
            results["config"]["http"]["headers"]
                .to_string()
                .contains("application/json"),
            "harmless headers stay"
        );

        let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(schema_path()).unwrap()).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&results)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "results.json does not match its schema: {errors:#?}");

        // The document round-trips through the typed model, histograms included.
        let typed: crest_model::Results = serde_json::from_value(results.clone()).unwrap();
        let s = crest_analysis::summarize(&typed).unwrap();
        assert_eq!(s.requests, 50);
        assert_eq!(s.status_codes.get("503"), Some(&10));
        assert_eq!(s.failures, 10);
        assert_eq!(results["errors"][0]["outcome"], "http_503");
    });
}

fn interrupted_run(signal: &str, expected: i32) {
    rt().block_on(async {
        let server = Server::start(|_, _| Reply::delayed(Duration::from_millis(5))).await;
        let dir = tempfile::tempdir().unwrap();
        let child = crest()
            .args(["run", &server.url("/"), "-c", "4", "-d", "60s", "--out"])
            .arg(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let status = std::process::Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(expected),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        common::check_counts(&dir.path().join("results.json"));
        let results: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("results.json")).unwrap()).unwrap();
        let typed: crest_model::Results = serde_json::from_value(results).unwrap();
        let s = crest_analysis::summarize(&typed).unwrap();
        // Everything the server answered was recorded; at most the few in flight were cut off.
        let answered = server.received().len() as u64;
        assert!(s.requests > 100, "{}", s.requests);
        assert!(
            answered >= s.requests && answered - s.requests <= 4,
            "server {answered}, crest {}",
            s.requests
        );
        // Stopped by the signal, long before its 60 s (not within a time: a machine busy enough
        // stretched the last requests' end to 10 s once).
        assert!(typed.duration_s < 30.0, "stopped by the signal: {}", typed.duration_s);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("interrupted"),
            "summary printed"
        );
    });
}

#[test]
fn ctrl_c_keeps_every_result_and_exits_130() {
    let _serial = common::serial();
    interrupted_run("-INT", 130);
}

#[test]
fn sigterm_keeps_every_result_and_exits_143() {
    let _serial = common::serial();
    interrupted_run("-TERM", 143);
}
