//! Comparisons of runs, checked as a reader sees them: each row's change and whether it is beyond
//! noise, a run that differs in shape, what the server used in each run. A module of the
//! analysis tests rather than a test binary of its own, so it links nothing more.

use super::*;

#[test]
fn comparison_shows_change_and_whether_latency_moved_beyond_noise() {
    let a = ResultsBuilder::new(Outcome::Reset, true)
        .segment(10, 20, |k| Second::ok(100, 100.0 + (k % 3) as f64))
        .build();
    let same = ResultsBuilder::new(Outcome::Reset, true)
        .segment(10, 20, |k| Second::ok(100, 100.0 + ((k + 1) % 3) as f64))
        .build();
    let slower = ResultsBuilder::new(Outcome::Reset, true)
        .segment(10, 20, |k| Second::ok(140, 130.0 + (k % 3) as f64))
        .build();
    let (a, same, slower) = (analyze(&a).unwrap(), analyze(&same).unwrap(), analyze(&slower).unwrap());
    let c = compare(&a, "a", &slower, "b");
    let tput = row(&c, "throughput, failures included");
    assert!((tput["change_pct"][1].as_f64().unwrap() - 40.0).abs() < 0.5, "{tput}");
    let p50 = row(&c, "successes' p50 latency");
    assert!(p50["verdict"][1].as_str().unwrap().starts_with("beyond noise"), "{p50}");
    let c = compare(&a, "a", &same, "b");
    let p50 = row(&c, "successes' p50 latency");
    assert!(p50["verdict"][1].as_str().unwrap().starts_with("within noise"), "{p50}");
}

#[test]
fn comparison_shows_what_the_server_used_in_each_run() {
    use crest_model::monitor::{MonitorRecord, MonitorSeries, SeriesKey, Unit};
    // Memory 275 MiB with 10 connections, 160 MiB with 30; CPU 13% and 20%.
    let run = |mib: f64, cpu: f64| {
        let s = |metric: &str, unit, v: f64| MonitorSeries {
            key: SeriesKey::new(metric).with("process", "fletcher"),
            source: 0,
            title: metric.into(),
            unit,
            limit: None,
            points: (0..20).map(|t| (t as f64, v)).collect(),
        };
        let r = ResultsBuilder::new(Outcome::Reset, true)
            .segment(10, 20, |_| Second::ok(100, 100.0))
            .monitor(MonitorRecord {
                events: Vec::new(),
                interval_s: 1.0,
                sources: vec![],
                series: vec![
                    s("process_resident_memory_bytes", Unit::Bytes, mib * 1048576.0),
                    s("process_cpu_percent", Unit::Percent, cpu),
                ],
            })
            .build();
        analyze(&r).unwrap()
    };
    let c = compare(&run(275.0, 13.0), "10 connections", &run(160.0, 20.0), "30 connections");
    let mem = row(&c, r#"process_resident_memory_bytes{process="fletcher"} (mean)"#);
    assert_eq!(
        (&mem["values"][0], &mem["values"][1], &mem["unit"]),
        (&275.0.into(), &160.0.into(), &"MiB".into())
    );
    assert!((mem["change_pct"][1].as_f64().unwrap() + 41.8).abs() < 0.1, "{mem}");
    assert_eq!(mem["higher_is_better"], false);
    let cpu = row(&c, r#"process_cpu_percent{process="fletcher"} (peak)"#);
    assert_eq!(cpu["values"], serde_json::json!([13.0, 20.0]));
}

/// Runs of different shapes, or one that completed nothing, are said to differ; an empty run's
/// zeros are not compared as a -100% change "within noise".
#[test]
fn a_comparison_says_when_runs_do_not_compare() {
    let a = analyze(&stepping_fixture()).unwrap();
    let one = ResultsBuilder::new(Outcome::Status(500), true)
        .segment(10, 5, |_| Second::ok(100, 10.0))
        .build();
    let b = analyze(&one).unwrap();
    let c = compare(&a, "steps", &b, "one");
    let notes = c["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n.as_str().unwrap().contains("differ in shape")),
        "{notes:?}"
    );
    let empty = ResultsBuilder::new(Outcome::Status(500), true)
        .segment(10, 5, |_| Second::ok(0, 0.0))
        .build();
    let e = analyze(&empty).unwrap();
    let c = compare(&b, "one", &e, "empty");
    let notes = c["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("empty completed no request")),
        "{notes:?}"
    );
    assert_eq!(
        row(&c, "throughput, failures included")["change_pct"],
        serde_json::json!([null, null])
    );
    assert!(c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["verdict"] == serde_json::json!([null, null])));
}

/// Issue 14: the same service has a new pid in every run; its memory and CPU rows are matched
/// by the process's name, and every run is a column with its change against the first.
#[test]
fn runs_watched_by_pid_compare_by_process_name_in_any_number() {
    let (a, b, c) = (
        watched_by_pid(4101, 100, 100.0, 10.0),
        watched_by_pid(5202, 150, 120.0, 20.0),
        watched_by_pid(6303, 200, 80.0, 40.0),
    );
    let cmp = compare_all(&[(&a, "pool-10"), (&b, "pool-20"), (&c, "pool-30")]);
    assert_eq!(cmp["labels"], serde_json::json!(["pool-10", "pool-20", "pool-30"]));
    let mem = row(&cmp, r#"process_resident_memory_bytes{process="crest"} (mean)"#);
    assert_eq!(mem["values"], serde_json::json!([100.0, 120.0, 80.0]));
    let change: Vec<f64> = mem["change_pct"].as_array().unwrap()[1..]
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!(
        (change[0] - 20.0).abs() < 1e-9 && (change[1] + 20.0).abs() < 1e-9,
        "{mem}"
    );
    assert_eq!(mem["change_pct"][0], Value::Null);
    let cpu = row(&cmp, r#"process_cpu_percent{process="crest"} (peak)"#);
    assert_eq!(cpu["values"], serde_json::json!([10.0, 20.0, 40.0]));
    assert!(
        !cmp["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["metric"].as_str().unwrap().contains("4101")),
        "no row is keyed by a pid"
    );
    let peak = row(&cmp, "peak successful throughput (best step)");
    let tput = row(&cmp, "throughput, failures included");
    assert_eq!(peak["values"], tput["values"], "one step: its throughput is the run's");
    let v: Vec<f64> = peak["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!(
        (v[1] / v[0] - 1.5).abs() < 0.01 && (v[2] / v[0] - 2.0).abs() < 0.01,
        "{peak}"
    );
}

/// Each run that differs in shape from the first is named in a note; the optimal load and the
/// limit are rows when a run found them, with "-" for a run that did not.
#[test]
fn an_n_way_comparison_notes_each_shape_and_shows_points_found() {
    let steps = analyze(&stepping_fixture()).unwrap();
    let one = watched_by_pid(4101, 100, 100.0, 10.0);
    let cmp = compare_all(&[(&steps, "steps"), (&one, "one"), (&steps, "again")]);
    let notes = cmp["notes"].as_array().unwrap();
    assert_eq!(
        notes
            .iter()
            .filter(|n| n.as_str().unwrap().contains("differ in shape"))
            .count(),
        1,
        "{notes:?}"
    );
    let optimal = row(&cmp, "optimal load");
    assert_eq!(optimal["values"][1], Value::Null, "{optimal}");
    assert_eq!(optimal["values"][0], optimal["values"][2]);
    assert!(optimal["values"][0].as_f64().is_some());
    row(&cmp, "breaking load");
    // A series only the second run recorded is still a row, "-" in the others.
    let mem = row(&cmp, r#"process_resident_memory_bytes{process="crest"} (peak)"#);
    assert_eq!(mem["values"][0], Value::Null);
}

/// Issue 20: the peak is the best step's steady successful throughput. A step that answers
/// most of its requests with fast failures counts more requests per second than it served.
#[test]
fn the_peak_throughput_row_counts_only_steady_successes() {
    let r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(10, 6, |_| Second::ok(400, 25.0))
        .segment(20, 6, |_| Second {
            ok: 300,
            latency_ms: 60.0,
            failed: 160,
            failure_ms: 1.0,
        })
        .build();
    let a = analyze(&r).unwrap();
    let cmp = compare(&a, "a", &a, "b");
    let peak = row(&cmp, "peak successful throughput (best step)");
    assert_eq!(peak["values"], serde_json::json!([400.0, 400.0]), "{peak}");
    assert_eq!(peak["cells"][0], "400.0 req/s");
}

/// Issue 20: a run-once study's answer is how long everyone took, a row of its own.
#[test]
fn a_run_once_comparison_has_a_row_for_the_time_until_everyone_was_done() {
    let run = |secs: f64| {
        let mut r = ResultsBuilder::new(Outcome::Reset, true)
            .segment(300, 5, |_| Second::ok(400, 100.0))
            .build();
        let h = crest_model::hist::new_histogram();
        r.users = Some(crest_model::results::UserTimes {
            finished: 300,
            cut_short: 0,
            first_start_s: 0.0,
            last_end_s: secs,
            duration: crest_model::EncodedHistogram::encode(&h),
        });
        analyze(&r).unwrap()
    };
    let cmp = compare(&run(4.42), "pool-10", &run(1.72), "pool-30");
    let done = row(&cmp, "time until every user was done");
    assert_eq!(done["values"], serde_json::json!([4.42, 1.72]), "{done}");
    assert_eq!(
        (done["cells"][0].as_str(), done["cells"][1].as_str()),
        (Some("4.42 s"), Some("1.72 s"))
    );
    assert!((done["change_pct"][1].as_f64().unwrap() + 61.1).abs() < 0.1, "{done}");
    assert_eq!(done["higher_is_better"], false);
    // A run whose users ran for a time has no such row.
    let steps = analyze(&stepping_fixture()).unwrap();
    let cmp = compare(&steps, "a", &steps, "b");
    assert!(
        !cmp["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["metric"] == "time until every user was done"),
        "{cmp}"
    );
}

/// Two runs past their limit, one of twice the workers: the latencies compared are the
/// successes' (the better run's are lower), with no verdict from seconds that count 503s, the
/// error rate's change in points, and each load with its unit. Compared over every request,
/// the better run read "+777%, within noise (t = -1.0)".
#[test]
fn runs_past_their_limit_compare_their_successes_and_say_loads_and_points() {
    let run = |workers: u64| {
        let r = ResultsBuilder::new(Outcome::Status(503), true)
            .segment(4, 6, move |_| Second::ok(95 * workers.min(4), 10.5))
            .segment(32, 6, move |_| Second {
                ok: 95 * workers,
                latency_ms: 80.0 / workers as f64,
                failed: 9_000,
                failure_ms: 0.3,
            })
            .build();
        analyze(&r).unwrap()
    };
    let c = compare(&run(4), "four", &run(8), "eight");
    let p95 = row(&c, "successes' p95 latency");
    assert!(
        p95["values"][1].as_f64().unwrap() < p95["values"][0].as_f64().unwrap(),
        "{p95}"
    );
    assert!(p95["verdict"][1].is_null(), "{p95}");
    let errors = row(&c, "error rate");
    assert!(errors["changes"][1].as_str().unwrap().ends_with(" points"), "{errors}");
    let breaking = row(&c, "breaking load");
    assert_eq!(
        breaking["cells"],
        serde_json::json!(["32 users", "32 users"]),
        "{breaking}"
    );
    let tput = row(&c, "peak successful throughput (best step)");
    assert_eq!(tput["changes"][1], "+100.0%", "{tput}");
}
