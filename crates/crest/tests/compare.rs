//! Sweeps and comparisons against `crest target`, whose own counters are read back: the
//! baseline a sweep's report.md and study.md divide by, the header of a joined run, and the
//! rows of `crest compare` (issue 20, items 4 and 6).
#![allow(clippy::unwrap_used)]

mod common;

use common::{compare, compared as row, scenario_file};
use serde_json::Value;
use std::path::Path;

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The cells of the Markdown table row whose first cell is `first`.
fn md_row<'a>(md: &'a str, first: &str) -> Vec<&'a str> {
    md.lines()
        .find(|l| l.starts_with(&format!("| {first} |")))
        .unwrap_or_else(|| panic!("no row {first:?} in:\n{md}"))
        .split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

/// Issue 20 item 4: threads x loops where the 1 x 1 point's one request takes a second, so it
/// ends past the point's last whole second. report.md read its row as 0.0 req/s and p50 0.00
/// ms and measured latency growth from another point than study.md; its header said "closed
/// model, 1 user once each" for a sweep that reached 15 users.
#[test]
fn a_sweeps_report_and_study_share_the_one_by_one_baseline_and_describe_every_point() {
    let _serial = common::serial();
    // 5 workers of 1 s: 1 user takes 1 s; 15 users queue for 1, 2 and 3 s.
    let t = common::target_process(&["--workers", "5", "--service-time", "1s"]);
    let (dir, file) = scenario_file(&format!(
        "target: {}\nsteps: [{{request: {{path: /}}}}]\nload: {{threads: \"${{env:threads}}\", loops: \"${{env:loops}}\"}}\n",
        t.url.trim_end_matches('/')
    ));
    let out = dir.path().join("sweep");
    let r = common::crest()
        .arg("sweep")
        .arg(&file)
        .args([
            "--points",
            "threads=1,loops=1",
            "threads=15,loops=1",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    common::check_counts(&out.join("results.json"));
    assert_eq!(common::target_metric(&t.url, "crest_target_served_total"), 16);

    let study = json(&out.join("study.json"));
    let first = &study["points"][0];
    assert_eq!(first["requests"].as_u64(), Some(1), "{study:#}");
    let first_mean = first["latency_ms"]["mean"].as_f64().unwrap();
    assert!(first_mean >= 1000.0, "the server took 1 s: {first_mean}");
    let study_md = std::fs::read_to_string(out.join("study.md")).unwrap();
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();

    // The 1 x 1 row is the same point in both: its request, its rate and its latency.
    let in_study = md_row(&study_md, "threads=1, loops=1");
    let in_report = md_row(&report, "threads=1, loops=1");
    // study: point, requests, success, req/s, p50, p95, mean, ratio, ...
    // report: step, load, requests, failed, ok req/s, all req/s, p50, p95, p99, ratio, trimmed
    assert_eq!(in_report[2], "1", "{report}");
    assert_eq!(
        (in_report[4], in_report[6]),
        (in_study[3], in_study[4]),
        "{report}\n{study_md}"
    );
    assert_ne!(in_report[6], "0.00", "{report}");
    assert_eq!((in_report[9], in_study[7]), ("1.0x", "1.00"), "both divide by it");
    // The growth finding starts from it, at its own mean, in both.
    // The report judges the run's unit, the iteration, whose time is its one request's and the
    // flow's few microseconds around it.
    let from = "from threads=1, loops=1 to threads=15, loops=1 (";
    let at = report.find(from).unwrap_or_else(|| panic!("{from}\n{report}")) + from.len();
    let said: f64 = report[at..].split(" ms over 1 to ").next().unwrap().parse().unwrap();
    assert!(
        (said - first_mean).abs() < 0.01 * first_mean,
        "{said} against {first_mean}\n{report}"
    );
    let ratio = study["points"][1]["ratio"].as_f64().unwrap();
    let mean15 = study["points"][1]["latency_ms"]["mean"].as_f64().unwrap();
    assert!((ratio - mean15 / first_mean).abs() < 1e-9, "{study:#}");

    // The header describes the whole sweep, and the timeline the charts follow.
    assert!(
        report.contains("| Load | closed model, up to 15 users once each, over 2 points |"),
        "{report}"
    );
    let joined = json(&out.join("results.json"));
    let timeline = joined["duration_s"].as_f64().unwrap();
    assert!(
        report.contains(&format!(
            "on a timeline of {timeline:.1} s, which charts and failure times follow"
        )),
        "{report}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("seconds on the run&#x27;s timeline (parts joined)"),
        "charts say which clock"
    );

    // A run-once comparison leads with the time until everyone was done, as each point's
    // own summary has it.
    let c = compare(
        &[&out.join("point-001"), &out.join("point-002")],
        &dir.path().join("cmp"),
    );
    let done = row(&c, "time until every user was done");
    for k in 0..2 {
        let point = json(&out.join(format!("point-00{}", k + 1)).join("results.json"));
        assert_eq!(
            done["values"][k].as_f64(),
            point["users"]["last_end_s"].as_f64(),
            "{done}"
        );
    }
    assert!(done["values"][1].as_f64() > done["values"][0].as_f64(), "{done}");
}

/// One run of the demo target at 5, 15 and 40 users, its served requests per second sampled
/// from its own counter.
fn pool_run(workers: &str, queue: &str, out: &Path) -> (Value, common::TargetProcess) {
    let t = common::target_process(&["--workers", workers, "--service-time", "100ms", "--queue", queue]);
    let metrics = format!("{}metrics", t.url);
    let r = common::crest()
        .arg("run")
        .arg(&t.url)
        .args(["-c", "5,15,40", "-d", "3s", "--monitor-prometheus", &metrics])
        .args([
            "--monitor-metric",
            "crest_target_served_total",
            "--monitor-interval",
            "250ms",
        ])
        .args(["--no-monitor-host", "--quiet", "--summary-json", "-", "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert!(r.status.code().is_some(), "{}", String::from_utf8_lossy(&r.stderr));
    common::check_counts(&out.join("results.json"));
    (serde_json::from_slice(&r.stdout).unwrap(), t)
}

/// The target's own served requests per second in each step's steady state, from its counter
/// as the monitor sampled it.
fn served_per_step(summary: &Value) -> Vec<f64> {
    let served = summary["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "rate(crest_target_served_total)")
        .unwrap_or_else(|| panic!("no served rate: {summary:#}"));
    served["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["mean"].as_f64().unwrap_or(0.0))
        .collect()
}

/// Issue 20 item 6: the peak row took a whole step's rate with its fast failures (461.8 req/s
/// for a pool-10 service whose steady steps served 410.9), and the optimal load row read "100
/// vs 100, 0.0%" while the larger pool was still growing at its last level.
#[test]
fn compare_takes_peaks_the_target_served_and_says_when_an_optimum_lies_beyond_the_run() {
    let _serial = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let (p10, p30) = (dir.path().join("pool-10"), dir.path().join("pool-30"));
    // With room for 10 waiting, 10 workers turn most of 40 users away with a fast 503; 30
    // workers with room for 64 hold them all.
    let (s10, t10) = pool_run("10", "10", &p10);
    let (s30, t30) = pool_run("30", "64", &p30);
    let rejected = common::target_metric(&t10.url, "crest_target_rejected_total");
    let served = common::target_metric(&t10.url, "crest_target_served_total");
    assert!(
        rejected > served,
        "10 workers turned most of 40 users away: {rejected} vs {served}"
    );
    assert_eq!(common::target_metric(&t30.url, "crest_target_rejected_total"), 0);
    let c = compare(&[&p10, &p30], &dir.path().join("cmp"));

    // The peak is what the target served in its best step, not the 503s it sent back.
    let peak = row(&c, "peak successful throughput (best step)");
    for (k, s) in [&s10, &s30].into_iter().enumerate() {
        let crest = peak["values"][k].as_f64().unwrap();
        let target = served_per_step(s).into_iter().fold(0.0, f64::max);
        assert!(
            (crest / target - 1.0).abs() < 0.15,
            "run {k}: crest's peak {crest} req/s against the target's {target} served/s\n{c:#}"
        );
    }
    let most = s10["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["throughput_rps"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(
        most > 2.0 * peak["values"][0].as_f64().unwrap(),
        "the 503s made the busiest step's rate far higher than its served rate: {most}"
    );

    // 30 workers still served more at 40 users than at 15: its optimum lies beyond the run.
    let grew = served_per_step(&s30);
    assert!(grew[2] > 1.05 * grew[1], "the target served {grew:?} per second");
    let optimal = row(&c, "optimal load");
    assert_eq!(optimal["cells"][1], "beyond 40 users", "{optimal}");
    assert_eq!(optimal["values"][1], Value::Null, "{optimal}");
    assert_eq!(optimal["change_pct"][1], Value::Null, "{optimal}");
    assert!(
        optimal["values"][0].as_f64().is_some(),
        "10 workers flattened: {optimal}"
    );
    // The comparison gives each run's own answer, never one its report contradicts.
    for (k, s) in [&s10, &s30].into_iter().enumerate() {
        let own = &s["capacity"]["optimal"];
        match own.as_object() {
            Some(p) => assert_eq!(
                optimal["values"][k].as_f64(),
                p["users"].as_f64(),
                "run {k}: {own} vs {optimal}"
            ),
            None => assert!(
                optimal["cells"][k].as_str().unwrap().starts_with("beyond"),
                "run {k}: {optimal}"
            ),
        }
    }
    // Still growing at 40 users, it neither saturated nor broke within the run.
    let saturation = row(&c, "saturation load");
    assert_eq!(saturation["cells"][1], "beyond 40 users", "{saturation}");
    let md = std::fs::read_to_string(dir.path().join("cmp").join("compare.md")).unwrap();
    assert!(md.contains("| beyond 40 users | - |"), "{md}");
}
