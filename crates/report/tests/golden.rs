//! Golden files: the reports of a fixed synthetic run. `CREST_UPDATE_GOLDEN=1` rewrites them;
//! review the diff before committing it.
#![allow(clippy::unwrap_used)]

use crest_testkit::results::stepping_fixture;
use std::path::PathBuf;

/// Writes a run's report files into `dir`, as the binary does.
fn write_run(dir: &std::path::Path, r: &crest_model::Results) {
    let a = crest_analysis::analyze(r).unwrap();
    for f in crest_report::run_files(r, &a).unwrap() {
        std::fs::write(dir.join(f.name), f.bytes).unwrap();
    }
}

fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("CREST_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "{name} differs from its golden file at line {}:\n  golden: {:?}\n  actual: {:?}\nrun CREST_UPDATE_GOLDEN=1 cargo test -p crest-report to accept",
            line + 1,
            expected.lines().nth(line).unwrap_or(""),
            actual.lines().nth(line).unwrap_or("")
        );
    }
}

#[test]
fn reports_of_the_stepping_fixture_match_their_golden_files() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &stepping_fixture());
    for name in [
        "report.md",
        "report.html",
        "intervals.csv",
        "requests.csv",
        "failures.csv",
    ] {
        golden(name, &std::fs::read_to_string(dir.path().join(name)).unwrap());
    }
}

#[test]
fn the_markdown_report_answers_the_seeds_questions() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &stepping_fixture());
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    for needle in [
        "## Key findings",
        "## Results per step",
        "| 40 users | 40 users | 3,420 | 0 (0.00%) | 380.0 |",
        "**Optimal operating point: 40 users**",
        "**Saturation: 80 users**",
        "**Breaking point: 160 users**",
        "server or proxy timeout near",
        "| `p95 < 250ms` |",
        "Test CPU, 2 cores",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle:?}:\n{md}");
    }
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 5, "five charts");
    assert!(
        !html.contains("http://") || !html.contains("<script src"),
        "no external resources"
    );
    assert!(!html.contains("<link "), "self-contained");
}

#[test]
fn the_interval_log_is_readable_by_hdrhistogram() {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let r = stepping_fixture();
    let mut buf = Vec::new();
    crest_report::hlog::write(&r, &mut buf).unwrap();
    let histograms = IntervalLogIterator::new(&buf)
        .filter(|e| matches!(e, Ok(LogEntry::Interval(_))))
        .count();
    assert_eq!(histograms, r.intervals.len());
}

/// A study of four points (1, 5, 25 and 50 users), each a run of its own: the third slows
/// down, the fourth breaks with failures clustered at a timeout.
#[test]
fn a_study_across_points_matches_its_golden_files() {
    use crest_model::Outcome;
    use crest_testkit::results::{ResultsBuilder, Second};
    let point = |users: u64, rps: u64, ms: f64, failed: u64| {
        ResultsBuilder::new(Outcome::Status(504), false).segment(users, 10, move |_| Second {
            ok: rps,
            latency_ms: ms,
            failed,
            failure_ms: 30_000.0,
        })
    };
    // The service, watched as `api`: CPU and memory grow with the load; at the last point its
    // CPU was sampled twice only, too few to name.
    let watched = |cpu: f64, mib: f64, cpu_samples: usize| {
        use crest_model::monitor::{MonitorRecord, MonitorSeries, SeriesKey, SourceRecord, Unit};
        let series = |metric: &str, unit, n: usize, v: &dyn Fn(f64) -> f64| MonitorSeries {
            key: SeriesKey::new(metric).with("process", "api"),
            source: 0,
            title: format!("{metric} of api"),
            unit,
            limit: None,
            points: (0..n).map(|t| (t as f64 + 0.5, v(t as f64))).collect(),
        };
        MonitorRecord {
            interval_s: 1.0,
            sources: vec![SourceRecord {
                kind: "process".to_string(),
                label: "api".to_string(),
                name: None,
                notes: Vec::new(),
                limits: None,
            }],
            series: vec![
                series("process_cpu_percent", Unit::Percent, cpu_samples, &|_| cpu),
                series("process_resident_memory_bytes", Unit::Bytes, 10, &|t| {
                    (mib + 20.0 + t) * 1048576.0
                }),
                series("process_private_memory_bytes", Unit::Bytes, 10, &|t| {
                    (mib + t) * 1048576.0
                }),
            ],
            events: Vec::new(),
        }
    };
    let runs = [
        point(1, 20, 50.0, 0).monitor(watched(4.0, 40.0, 10)),
        point(5, 100, 50.0, 0).monitor(watched(18.5, 48.0, 10)),
        point(25, 400, 62.0, 0).monitor(watched(71.2, 90.0, 10)),
        point(50, 300, 160.0, 20).monitor(watched(99.0, 140.0, 2)),
    ]
    .map(|b| b.build());
    let analyses: Vec<_> = runs.iter().map(|r| crest_analysis::analyze(r).unwrap()).collect();
    // Each point's setup command (a data load) took longer as the points grew.
    let setups = [1.24, 2.5, 6.0, 12.31];
    let points: Vec<crest_analysis::study::PointRun> = [1, 5, 25, 50]
        .iter()
        .zip(&analyses)
        .zip(setups)
        .map(|((u, a), secs)| crest_analysis::study::PointRun {
            label: format!("threads={u}"),
            values: vec![u.to_string()],
            analysis: a,
            setup: Some(crest_model::results::SetupRecord {
                duration_s: secs,
                exit_code: Some(0),
            }),
        })
        .collect();
    let study = crest_analysis::study::study(&["threads".to_string()], &points);
    let dir = tempfile::tempdir().unwrap();
    for f in crest_report::study_files(&study).unwrap() {
        std::fs::write(dir.path().join(f.name), f.bytes).unwrap();
    }
    for name in ["study.md", "study.html"] {
        golden(name, &std::fs::read_to_string(dir.path().join(name)).unwrap());
    }
    let md = std::fs::read_to_string(dir.path().join("study.md")).unwrap();
    assert!(
        md.contains("The service breaks between threads=25 and threads=50"),
        "{md}"
    );
    assert!(md.contains("At threads=50, 200 requests failed"), "{md}");
    assert!(
        md.contains("| 12.3 s | too few samples (2 of 3) | 149.0 MiB / 169.0 MiB |"),
        "{md}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("study.json")).unwrap()).unwrap();
    assert_eq!(json["processes"], serde_json::json!(["api"]));
    let api = &json["points"][1]["processes"][0];
    assert_eq!(api["cpu_percent"].as_f64(), Some(18.5));
    assert_eq!(api["cpu_millicores"].as_f64(), Some(185.0));
    assert!(json["points"][3]["processes"][0]["cpu_percent"].is_null());
    assert_eq!(json["points"][3]["setup"]["duration_s"].as_f64(), Some(12.31));
}

/// The N-way comparison, in Markdown and HTML: the stepping fixture, the same run again, and a
/// one-step run of another shape.
#[test]
fn a_three_way_comparison_matches_its_golden_files() {
    use crest_model::Outcome;
    use crest_testkit::results::{ResultsBuilder, Second};
    let steps = crest_analysis::analyze(&stepping_fixture()).unwrap();
    let one = ResultsBuilder::new(Outcome::Reset, true)
        .segment(40, 10, |k| Second::ok(300, 90.0 + (k % 3) as f64))
        .build();
    let one = crest_analysis::analyze(&one).unwrap();
    let c = crest_analysis::compare::compare(&[(&steps, "pool-10"), (&steps, "pool-20"), (&one, "pool-30")]);
    let md = crest_report::markdown::compare(&c).unwrap();
    assert!(md.ends_with("|t| > 2).\n"), "{md}");
    golden("compare.md", &md);
    golden("compare.html", &crest_report::html::compare(&c).unwrap());
}

/// A merged run's reports: one row per worker in the terminal summary, report.md and
/// report.html, the client-bound worker named with the figure it rests on, the lost one lost,
/// and the run not called valid. report.md's golden is `workers.md`.
#[test]
fn a_merged_runs_reports_have_a_row_per_worker_and_flag_the_client_bound_one() {
    let r = crest_testkit::results::merged_fixture();
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &r);
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    golden("workers.md", &md);
    let a = crest_analysis::analyze(&r).unwrap();
    let finding = a
        .findings
        .iter()
        .map(crest_report::fmt::words::finding)
        .find(|f| f.contains("client-bound"))
        .unwrap_or_default();
    assert!(
        finding.contains("worker 1 was client-bound") && finding.contains("crest used 97% of the CPU"),
        "{finding}"
    );
    for needle in [
        "## Workers",
        "| 0 | 400 | 0 | 40.0 | - | - | 20.00% | - | valid |",
        "| 1 | 400 | 0 | 40.0 | - | - | 97.00% | - | client-bound: CPU 97% |",
        "| 2 | 200 | 0 | 50.0 | - | - | - | - | lost at 4.0 s: its 33.33% of the load missing for 6.0 s |",
        "- worker 1 was client-bound",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle:?}:\n{md}");
    }
    assert!(!md.contains("Nothing shows that crest limited the run"), "{md}");
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains(r#"<table data-testid="workers">"#), "{html}");
    assert!(
        html.contains(r#"<td class="fail">client-bound: CPU 97%</td>"#),
        "{html}"
    );
    let term = crest_report::terminal::render(&r, &a);
    for needle in [
        "By worker",
        "worker 0",
        "worker 1",
        "client-bound: CPU 97%",
        "worker 2",
        "lost at 4.0 s",
    ] {
        assert!(term.contains(needle), "the terminal summary lacks {needle:?}:\n{term}");
    }
    assert!(
        term.contains("Validity     crest itself may have limited this run"),
        "{term}"
    );
}

/// The section that says why the service saturates and what to give it: a process at its CPU
/// quota, a process that exited and came back, and a `resources:` block.
#[test]
fn the_why_it_saturates_section_matches_its_golden_files() {
    let dir = tempfile::tempdir().unwrap();
    let r = crest_testkit::results::saturating_fixture();
    write_run(dir.path(), &r);
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    golden("saturating.md", &md);
    let a = crest_analysis::analyze(&r).unwrap();
    let json: serde_json::Value = serde_json::from_str(&crest_report::json::summary_json(&a.summary).unwrap()).unwrap();
    let part = serde_json::json!({
        "bottleneck": json["bottleneck"],
        "events": json["events"],
        "sizing": json["sizing"],
        "no_sizing": json["no_sizing"],
    });
    golden("saturating.json", &serde_json::to_string_pretty(&part).unwrap());
    // Each process event is marked on the charts over time.
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("cache exited") && html.contains("cache restarted"));
}

/// The terminal summary of a capacity search (the stepping fixture's steps as its probes, the
/// last missing the service level): the optimum and the limit are said once, in the Capacity
/// section, each with the step and figures it rests on.
#[test]
fn a_searchs_terminal_summary_says_its_answers_once_under_capacity() {
    use crest_model::results::{FindRecord, LoadKind, ProbeRecord};
    let mut r = stepping_fixture();
    let levels = [10.0, 20.0, 40.0, 80.0, 160.0];
    r.find = Some(FindRecord {
        model: LoadKind::Closed,
        slo: vec!["error_rate < 1%".into()],
        probes: levels
            .iter()
            .map(|&level| ProbeRecord {
                level,
                passed: level < 160.0,
                measured: None,
                miss: None,
                verdict: None,
            })
            .collect(),
        unit: Default::default(),
        ended: None,
        stopped_because: Some("the search budget was used".into()),
    });
    let a = crest_analysis::analyze(&r).unwrap();
    let term = crest_report::terminal::render(&r, &a);
    golden("summary.txt", &term);
    let capacity = term.find("  Capacity ").expect("a Capacity section");
    for label in ["  Optimal ", "  Limit "] {
        assert_eq!(term.matches(label).count(), 1, "{label:?} said once:\n{term}");
        assert!(term.find(label) > Some(capacity), "{label:?} under Capacity:\n{term}");
    }
}

#[test]
fn messages_on_streams_are_tabled_per_name_and_for_the_run_in_every_report() {
    let mut r = stepping_fixture();
    r.names.push("WS echo".into());
    // Half of the first name's successes become a stream step's exchanges, each of one message
    // sent and three read.
    let mut stream = r.stats[0].clone();
    stream.name = (r.names.len() - 1) as u32;
    stream.messages_sent = stream.count;
    stream.messages_received = 3 * stream.count;
    r.stats.push(stream.clone());
    let a = crest_analysis::analyze(&r).unwrap();
    let m = a.summary.messages.expect("the run's messages");
    assert_eq!((m.sent, m.received), (stream.count, 3 * stream.count));
    assert!((m.received_per_s - 3.0 * stream.count as f64 / a.summary.duration_s).abs() < 1e-9);
    let named: Vec<_> = a.summary.names.iter().filter(|g| g.messages.is_some()).collect();
    assert_eq!(named.len(), 1, "only the stream's name has messages");
    assert_eq!(named[0].name, "WS echo");
    let md = crest_report::markdown::report(&r, &a).unwrap();
    let row = format!(
        "| WS echo | {} | {} |",
        crest_report::fmt::int(stream.count),
        crest_report::fmt::int(3 * stream.count)
    );
    assert!(md.contains("Messages on streams") && md.contains(&row), "{md}");
    let term = crest_report::terminal::render(&r, &a);
    assert!(term.contains("Messages on streams"), "{term}");
    let files = crest_report::run_files(&r, &a).unwrap();
    let html = files.iter().find(|f| f.name == "report.html").unwrap();
    assert!(String::from_utf8_lossy(&html.bytes).contains("Messages on streams"));
    // A run of requests and responses only has none of it.
    let plain = crest_analysis::analyze(&stepping_fixture()).unwrap();
    assert!(plain.summary.messages.is_none());
    assert!(!crest_report::terminal::render(&stepping_fixture(), &plain).contains("Messages on streams"));
}
