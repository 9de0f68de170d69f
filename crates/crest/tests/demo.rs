//! README's first command: `crest demo` runs on a fresh machine with nothing else installed.
#![allow(clippy::unwrap_used)]

mod common;

use common::crest;

#[test]
fn demo_runs_against_the_built_in_target_and_writes_results() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let out = crest()
        .args(["demo", "--budget", "13s", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("Latency ms"), "{stdout}");
    common::check_counts(&dir.path().join("results.json"));
    assert!(stderr.contains("results:"), "{stderr}");
    let results: crest_model::Results =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("results.json")).unwrap()).unwrap();
    let s = crest_analysis::summarize(&results).unwrap();
    // 4 s probes of 1, 2 and 4 users against 8 workers of 10 ms, as many as the budget holds:
    // three on a quiet machine, two when a busy one stretches the time between them.
    let find = results.find.as_ref().unwrap();
    let levels: Vec<f64> = find.probes.iter().map(|p| p.level).collect();
    assert!(levels == [1.0, 2.0, 4.0] || levels == [1.0, 2.0], "{:?}", find.probes);
    assert!(
        matches!(find.ended, Some(crest_model::reason::SearchEnd::Budget { .. })),
        "{:?}",
        find.ended
    );
    assert_eq!(s.failures, 0);
    assert!(s.latency_ms.p50 >= 10.0, "{}", s.latency_ms.p50);
    assert!(stderr.contains("capacity of 800 req/s"), "{stderr}");
    assert!(dir.path().join("report.html").exists());
}
