//! Analysis on synthetic runs whose shape is known, checked as a reader sees it: the figures,
//! and the findings in the words every report uses.
#![allow(clippy::unwrap_used)]

use crest_analysis::compare::Comparison;
use crest_analysis::Analysis;
use crest_model::step::{Level, StepKind};
use crest_model::{Outcome, Results};
use crest_report::fmt::words;
use crest_testkit::results::{shared_core_fixture, stepping_fixture, ResultsBuilder, Second};
use serde_json::Value;

#[path = "analysis/compare.rs"]
mod compare;

/// An analysis with its findings in words.
struct Worded {
    a: Analysis,
    findings: Vec<String>,
}

impl std::ops::Deref for Worded {
    type Target = Analysis;
    fn deref(&self) -> &Analysis {
        &self.a
    }
}

fn analyze(r: &Results) -> Result<Worded, crest_model::HistError> {
    let a = crest_analysis::analyze(r)?;
    let findings = a.findings.iter().map(words::finding).collect();
    Ok(Worded { a, findings })
}

fn compare(a: &Worded, a_label: &str, b: &Worded, b_label: &str) -> Value {
    compare_all(&[(a, a_label), (b, b_label)])
}

fn compare_all(runs: &[(&Worded, &str)]) -> Value {
    let runs: Vec<_> = runs.iter().map(|(w, l)| (&w.a, *l)).collect();
    let c: Comparison = crest_analysis::compare::compare(&runs);
    serde_json::to_value(crest_report::json::comparison(&c)).unwrap()
}

fn row<'a>(c: &'a Value, metric: &str) -> &'a Value {
    c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap()
}

#[test]
fn warm_up_is_trimmed_and_steady_figures_are_exact() {
    let a = analyze(&stepping_fixture()).unwrap();
    let s = &a.segments[0];
    assert_eq!(s.trimmed_s, 2.0, "two warm-up seconds at half throughput");
    assert_eq!((s.steady_start_s, s.steady_end_s), (2.0, 10.0));
    assert_eq!(s.throughput_rps, 100.0);
    assert!((s.latency_ms.p50 - 100.0).abs() < 1.0, "{}", s.latency_ms.p50);
    assert_eq!(
        a.segments[2].ratio_to_lowest.map(|r| (r * 100.0).round() / 100.0),
        Some(1.05)
    );
}

#[test]
fn the_knee_saturation_and_breaking_point_are_found() {
    let a = analyze(&stepping_fixture()).unwrap();
    let c = &a.capacity;
    assert_eq!(words::step(&c.optimal.as_ref().unwrap().load), "40 users");
    let sat = c.saturation.as_ref().unwrap();
    assert_eq!(words::step(&sat.load), "80 users");
    let why = words::point_reason(&sat.why, sat.unit);
    assert!(why.contains("380.0 to 385.0 req/s"), "{why}");
    let brk = c.breaking.as_ref().unwrap();
    assert_eq!(words::step(&brk.load), "160 users");
    let why = words::point_reason(&brk.why, brk.unit);
    assert!(why.contains("40 of 140 requests failed (28.6%)"), "{why}");
    assert!(
        a.findings.iter().any(|f| f.contains("between 80 users and 160 users")),
        "{:#?}",
        a.findings
    );
}

#[test]
fn failures_clustered_near_a_duration_are_named_as_a_timeout() {
    let a = analyze(&stepping_fixture()).unwrap();
    let f = &a.failures[0];
    assert_eq!((f.outcome.as_str(), f.count), ("http_500", 40));
    assert_eq!(f.first_at_s, Some(40.0));
    assert_eq!(f.first_segment, Some(StepKind::Level(Level::Users(160))));
    let c = words::cluster(f.cluster.as_ref().unwrap());
    assert!(
        c.contains("server or proxy timeout near 35 s") || c.contains("near 36 s"),
        "{c}"
    );
    assert!(
        a.findings.iter().any(|x| x.contains("timeout near")),
        "{:#?}",
        a.findings
    );
}

#[test]
fn spread_out_failures_are_not_called_a_timeout() {
    let r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(10, 5, |k| Second {
            ok: 100,
            latency_ms: 50.0,
            failed: 10,
            failure_ms: 200.0 + 2000.0 * k as f64,
        })
        .build();
    assert_eq!(analyze(&r).unwrap().failures[0].cluster, None);
}

#[test]
fn littles_law_flags_users_that_wait_outside_requests() {
    // 50 users, 100 req/s at 100 ms: only 10 requests in flight on average.
    let r = ResultsBuilder::new(Outcome::Reset, true)
        .segment(50, 5, |_| Second::ok(100, 100.0))
        .build();
    let a = analyze(&r).unwrap();
    let l = a.segments[0].littles_law.as_ref().unwrap();
    assert!((l.in_flight - 10.0).abs() < 0.5, "{}", l.in_flight);
    assert!(l.flagged);
    assert!(
        a.findings.iter().any(|f| f.contains("waited inside crest")),
        "{:#?}",
        a.findings
    );
    assert_eq!(a.summary.client_bound.len(), 1, "{:?}", a.summary.client_bound);
    // 10 users at the same figures are all busy: no flag.
    let r = ResultsBuilder::new(Outcome::Reset, true)
        .segment(10, 5, |_| Second::ok(100, 100.0))
        .build();
    assert!(!analyze(&r).unwrap().segments[0].littles_law.as_ref().unwrap().flagged);
}

#[test]
fn one_segment_has_no_capacity_points_but_still_has_findings() {
    let r = ResultsBuilder::new(Outcome::Reset, true)
        .segment(5, 5, |_| Second::ok(50, 100.0))
        .build();
    let a = analyze(&r).unwrap();
    assert!(a.capacity.optimal.is_none() && a.capacity.breaking.is_none());
    assert!(
        a.findings.iter().any(|f| f.contains("All 250 requests succeeded")),
        "{:#?}",
        a.findings
    );
    assert_eq!(a.series.len(), 5);
}

/// Failures at the start of a step are the service's answer to the load, not a warm-up: the
/// seconds holding them stay in the step's figures, and every request stays in its step.
#[test]
fn seconds_with_failures_are_never_trimmed_and_steps_count_every_request() {
    let r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(10, 10, |k| {
            if k < 2 {
                Second {
                    ok: 20,
                    latency_ms: 200.0,
                    failed: 20,
                    failure_ms: 1.0,
                }
            } else {
                Second::ok(100, 100.0)
            }
        })
        .build();
    let a = analyze(&r).unwrap();
    let s = &a.segments[0];
    assert_eq!(s.trimmed_s, 0.0, "a second with failures is not warm-up");
    assert_eq!((s.requests, s.failures), (880, 40));
    assert!((s.error_rate - 40.0 / 880.0).abs() < 1e-9);
    assert_eq!(s.steady_requests, 880);
}

/// A step that ends inside an interval: its partial last second keeps its requests and failures
/// in the counts and percentiles. Its rate is the larger of its own successes over its exact
/// span (310 over 3.5 s) and the successes ending in its whole seconds (300 over 3 s), as for
/// every unit: the last has the 90 failures' second cut off, the first counts that half second
/// in full.
#[test]
fn the_partial_last_second_of_a_step_keeps_its_failures() {
    let mut r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(10, 4, |k| {
            if k < 3 {
                Second::ok(100, 10.0)
            } else {
                Second {
                    ok: 10,
                    latency_ms: 10.0,
                    failed: 90,
                    failure_ms: 1.0,
                }
            }
        })
        .build();
    r.segments[0].end_s = 3.5;
    let a = analyze(&r).unwrap();
    let s = &a.segments[0];
    assert_eq!((s.requests, s.failures), (400, 90));
    assert_eq!(s.steady_requests, 400, "every request of the step");
    assert!((s.success_rps - 100.0).abs() < 1e-9, "{}", s.success_rps);
    assert!((s.throughput_rps - 100.0).abs() < 1e-9, "{}", s.throughput_rps);
    assert_eq!(
        s.latency_ms.count, 400,
        "the failures' latencies are in the percentiles"
    );
    assert!(s.latency_ms.min < 2.0, "{:?}", s.latency_ms);
    assert!(!s.whole.differs, "no warm-up trimmed");
    assert_eq!(a.summary.segments[0].failures, 90);
}

/// The best level is the highest one tried: nothing ran beyond it, so it is not called optimal.
#[test]
fn no_optimal_point_is_claimed_without_a_level_beyond_it() {
    let r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(10, 6, |_| Second::ok(100, 100.0))
        .segment(20, 6, |_| Second::ok(200, 100.0))
        .build();
    let a = analyze(&r).unwrap();
    assert!(a.capacity.optimal.is_none(), "{:?}", a.capacity.optimal);
    let why = words::no_optimal(a.capacity.no_optimal.as_ref().unwrap(), a.capacity.unit);
    assert!(why.contains("20 users") && why.contains("200.0 req/s"), "{why}");
    assert!(
        a.findings
            .iter()
            .any(|f| f.starts_with("No optimal operating point is named")),
        "{:#?}",
        a.findings
    );
}

/// The points of a sweep are not load levels: they are compared by name, from the first, and
/// no sentence carries a placeholder.
#[test]
fn sweep_points_are_compared_by_name() {
    let mut r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(1, 5, |_| Second::ok(100, 10.0))
        .segment(1, 5, |_| Second::ok(100, 20.0))
        .segment(1, 5, |_| Second::ok(100, 50.0))
        .build();
    for (i, g) in r.segments.iter_mut().enumerate() {
        g.users = None;
        g.kind = StepKind::Point(format!("entities={}", [11_000, 60_000, 200_000][i]));
    }
    let a = analyze(&r).unwrap();
    assert_eq!(a.capacity.levels, 0);
    assert!(
        a.findings
            .iter()
            .any(|f| f.contains("grew 5.0x from entities=11000 to entities=200000")),
        "{:#?}",
        a.findings
    );
    for f in &a.findings {
        assert!(!f.contains(" - ") && !f.contains(" -)") && !f.contains("from -"), "{f}");
    }
}

/// A run where nothing succeeded says so first.
#[test]
fn a_run_without_success_says_so_first() {
    let r = ResultsBuilder::new(Outcome::ConnectRefused, true)
        .segment(2, 3, |_| Second {
            ok: 0,
            latency_ms: 0.0,
            failed: 50,
            failure_ms: 0.2,
        })
        .build();
    let a = analyze(&r).unwrap();
    assert!(
        a.findings[0].starts_with("No request succeeded: all 150 failed, most as connection refused"),
        "{:#?}",
        a.findings
    );
    // It used to add, last, that every request succeeded.
    assert!(
        !a.findings
            .iter()
            .any(|f| f.contains("succeeded.") && f.starts_with("All ")),
        "{:#?}",
        a.findings
    );
}

/// `crest find` speaks only from probes that met the service level: a probe that failed it,
/// however much it pushed through, gives neither the maximum throughput nor the optimal point,
/// and a USL peak beyond the passing levels is left out.
#[test]
fn find_figures_come_only_from_probes_that_met_the_service_level() {
    use crest_model::results::{FindRecord, ProbeRecord};
    let mut r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(1, 4, |_| Second::ok(100, 10.0))
        .segment(2, 4, |_| Second::ok(190, 10.5))
        .segment(4, 4, |_| Second::ok(350, 11.4))
        .segment(8, 4, |_| Second {
            ok: 400,
            latency_ms: 20.0,
            failed: 300,
            failure_ms: 1.0,
        })
        .build();
    r.find = Some(FindRecord {
        model: crest_model::results::LoadKind::Closed,
        slo: vec!["error_rate < 1%".into()],
        probes: [1.0, 2.0, 4.0, 8.0]
            .iter()
            .map(|&level| ProbeRecord {
                level,
                passed: level < 8.0,
                measured: None,
                miss: None,
                verdict: None,
            })
            .collect(),
        unit: Default::default(),
        ended: None,
        stopped_because: Some("test".into()),
    });
    let a = analyze(&r).unwrap();
    let c = a.summary.capacity.as_ref().unwrap();
    assert_eq!(
        c.max_throughput_rps, 350.0,
        "the failing probe's 400 req/s does not count"
    );
    assert_eq!(
        c.limit.as_ref().map(|l| words::limit(l, c.unit)).as_deref(),
        Some("8 users")
    );
    if let Some(u) = &c.usl {
        assert!(u.peak_users.is_none_or(|p| p <= 4.0), "{u:?}");
    }
}

#[test]
fn the_fixtures_add_up() {
    crest_testkit::results::check_counts(&stepping_fixture()).unwrap();
    let mut broken = stepping_fixture();
    broken.intervals[3].failures += 1;
    assert!(crest_testkit::results::check_counts(&broken).is_err());
}

/// Every format names a step's load the same way: the step table of an open-model run said
/// "250.0/s" where the findings said "250/s"; a monitored duration was charted in seconds where
/// the comparison showed it in ms.
#[test]
fn a_steps_load_and_a_durations_unit_read_the_same_in_every_format() {
    use crest_model::monitor::{MonitorRecord, MonitorSeries, SeriesKey, Unit};
    let mut r = ResultsBuilder::new(Outcome::Status(500), true)
        .segment(1, 5, |_| Second::ok(250, 10.0))
        .monitor(MonitorRecord {
            events: Vec::new(),
            interval_s: 1.0,
            sources: vec![],
            series: vec![MonitorSeries {
                key: SeriesKey::new("pg_query_seconds"),
                source: 0,
                title: "query time".into(),
                unit: Unit::Seconds,
                limit: None,
                points: (0..5).map(|t| (t as f64, 0.25)).collect(),
            }],
        })
        .build();
    r.segments[0].users = None;
    r.segments[0].rate = Some(250.0);
    let a = crest_analysis::analyze(&r).unwrap();
    let md = crest_report::markdown::report(&r, &a).unwrap();
    assert!(md.contains(" | 250/s | "), "{md}");
    let chart = &crest_report::view::resource_charts(&r)[0];
    assert_eq!(chart.y_label, "ms");
}

/// A run whose service was watched by `--monitor-pid`, with its pid, and the name the monitor
/// read for it.
fn watched_by_pid(pid: u32, rps: u64, mib: f64, cpu: f64) -> Worded {
    analyze(&watched_by_pid_results(pid, rps, mib, cpu)).unwrap()
}

fn watched_by_pid_results(pid: u32, rps: u64, mib: f64, cpu: f64) -> Results {
    use crest_model::monitor::{MonitorRecord, MonitorSeries, SeriesKey, SourceRecord, Unit};
    let s = |metric: &str, unit, v: f64| MonitorSeries {
        key: SeriesKey::new(metric).with("process", pid.to_string()),
        source: 0,
        title: metric.into(),
        unit,
        limit: None,
        points: (0..20).map(|t| (t as f64, v)).collect(),
    };
    ResultsBuilder::new(Outcome::Reset, true)
        .segment(10, 20, |_| Second::ok(rps, 100.0))
        .monitor(MonitorRecord {
            events: Vec::new(),
            interval_s: 1.0,
            sources: vec![SourceRecord {
                limits: None,
                kind: "process".into(),
                label: pid.to_string(),
                name: Some("crest".into()),
                notes: Vec::new(),
            }],
            series: vec![
                s("process_resident_memory_bytes", Unit::Bytes, mib * 1048576.0),
                s("process_cpu_percent", Unit::Percent, cpu),
            ],
        })
        .build()
}

/// Issue 20: "optimal load 100 vs 100, 0.0%" while one run still gained 53% at its highest
/// level. The optimal load row gives each run's own answer (both reports name 100 users, the
/// most power), and the run still growing at its last level shows where it did not saturate
/// or break: beyond 200 users, with no change computed against it.
#[test]
fn a_run_still_growing_at_its_last_level_saturates_beyond_it() {
    // Both peak in power at 100 users; pool 10 flattens, pool 30 still gains 53% at 200.
    let pool10 = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(50, 6, |_| Second::ok(250, 40.0))
        .segment(100, 6, |_| Second::ok(400, 50.0))
        .segment(200, 6, |_| Second::ok(410, 120.0))
        .build();
    let pool30 = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(50, 6, |_| Second::ok(300, 20.0))
        .segment(100, 6, |_| Second::ok(800, 25.0))
        .segment(200, 6, |_| Second::ok(1224, 60.0))
        .build();
    let (a, b) = (analyze(&pool10).unwrap(), analyze(&pool30).unwrap());
    assert_eq!(
        b.capacity.optimal.as_ref().map(|p| p.load_value),
        Some(100.0),
        "power alone peaks at 100 users"
    );
    let cmp = compare(&a, "pool-10", &b, "pool-30");
    let optimal = row(&cmp, "optimal load");
    assert_eq!(optimal["values"], serde_json::json!([100.0, 100.0]), "{optimal}");
    let saturation = row(&cmp, "saturation load");
    assert_eq!(saturation["values"], serde_json::json!([200.0, null]), "{saturation}");
    assert_eq!(
        saturation["cells"],
        serde_json::json!(["200 users", "beyond 200 users"]),
        "{saturation}"
    );
    assert_eq!(saturation["change_pct"][1], Value::Null, "{saturation}");
    let md = crest_report::markdown::compare(&crest_analysis::compare::compare(&[
        (&a.a, "pool-10"),
        (&b.a, "pool-30"),
    ]))
    .unwrap();
    assert!(
        md.contains("| saturation load | 200 users | beyond 200 users | - |"),
        "{md}"
    );
}

/// Issue 20: a process watched by pid is keyed by its name in its own report as in a
/// comparison (`process="crest"`, never `process="4101"`), since the pid is new in every run.
#[test]
fn a_process_watched_by_pid_is_keyed_by_its_name_in_reports_as_in_comparisons() {
    let r = watched_by_pid_results(4101, 100, 100.0, 10.0);
    let a = crest_analysis::analyze(&r).unwrap();
    let keys: Vec<&str> = a.summary.resources.iter().map(|r| r.key.as_str()).collect();
    let named = [
        r#"process_resident_memory_bytes{process="crest"}"#,
        r#"process_cpu_percent{process="crest"}"#,
    ];
    assert_eq!(keys, named);
    let md = crest_report::markdown::report(&r, &a).unwrap();
    for key in named {
        assert!(md.contains(&format!("| `{key}` |")), "{md}");
    }
    assert!(!md.contains("process=\"4101\""), "{md}");
}

/// Issue 20 item 4: a sweep's 1 x 1 point whose one request took a second ended past the
/// point's last whole second, so its steady window held nothing and its row read 0.0 req/s and
/// p50 0.00 ms; the baseline then skipped it. Such a step has the whole step's figures.
#[test]
fn a_step_whose_requests_all_end_past_its_last_whole_second_keeps_them() {
    let mut r = ResultsBuilder::new(Outcome::Reset, true)
        .segment(1, 2, |k| Second::ok(k, 1000.0))
        .segment(1, 3, |_| Second::ok(5, 2000.0))
        .build();
    r.segments[0].end_s = 1.01;
    r.segments[1].start_s = 2.0;
    for g in &mut r.segments {
        g.users = None;
    }
    let a = analyze(&r).unwrap();
    let s = &a.segments[0];
    assert_eq!((s.requests, s.steady_requests), (1, 1));
    assert!((s.latency_ms.p50 - 1000.0).abs() < 5.0, "{:?}", s.latency_ms);
    assert!((s.throughput_rps - 1.0 / 1.01).abs() < 1e-9, "{}", s.throughput_rps);
    assert_eq!(s.ratio_to_lowest, Some(1.0), "it is the baseline");
    assert!((a.segments[1].ratio_to_lowest.unwrap() - 2.0).abs() < 0.01);
}

/// results.json keeps a stop rule's and a search's reasons as figures; documents written before
/// kept sentences, and still load, their sentences shown as they were.
#[test]
fn reasons_are_figures_and_old_sentences_still_read() {
    use crest_model::reason::{Miss, Probe, Quantity, SearchEnd, StopReason};
    use crest_model::results::{FindRecord, LoadKind, ProbeRecord, StopRecord};
    let r = stepping_fixture();
    let probes = r.segments.len();
    let mut old = serde_json::to_value(&r).unwrap();
    old["stopped_by"] = serde_json::json!({
        "condition": "p95 > 100ms", "at_s": 2.0, "detail": "p95 was 120 ms, in old words"
    });
    old["find"] = serde_json::json!({
        "model": "closed",
        "slo": ["error_rate < 1%"],
        "probes": (0..probes).map(|k| serde_json::json!({
            "level": (k + 1) as f64, "passed": true, "verdict": format!("old verdict {k}")
        })).collect::<Vec<_>>(),
        "stopped_because": "an old reason"
    });
    let old = crest_model::results::parse(&old.to_string()).unwrap();
    let a = crest_analysis::analyze(&old).unwrap();
    let md = crest_report::markdown::report(&old, &a).unwrap();
    for said in ["p95 was 120 ms, in old words", "old verdict 0", "an old reason"] {
        assert!(md.contains(said), "{said}: {md}");
    }
    let text = crest_report::terminal::render(&old, &a);
    assert!(text.contains("p95 was 120 ms, in old words"), "{text}");

    // A new document keeps the figures, and the words are made from them.
    let mut new = r.clone();
    new.stopped_by = Some(StopRecord {
        condition: "p95 > 100ms".into(),
        at_s: 2.0,
        saw: Some(StopReason::Window {
            metric: crest_model::expr::Metric::Latency(95.0),
            value: Quantity::Ms(120.0),
            secs: 5.0,
            bound: Quantity::Ms(100.0),
        }),
        detail: None,
    });
    let probe = |k: usize| Probe {
        level: (k + 1) as f64,
        success_rps: 100.0,
        p99_ms: 3.0,
        error_rate: 0.5,
        achieved_share: 1.0,
    };
    new.find = Some(FindRecord {
        model: LoadKind::Closed,
        slo: vec!["error_rate < 1%".into()],
        probes: (0..probes)
            .map(|k| ProbeRecord {
                level: (k + 1) as f64,
                passed: false,
                measured: Some(probe(k)),
                miss: Some(Miss::ErrorRate { rate: 0.5, max: 0.01 }),
                verdict: None,
            })
            .collect(),
        unit: Default::default(),
        ended: Some(SearchEnd::Budget { budget_s: 60.0 }),
        stopped_because: None,
    });
    let json = serde_json::to_string(&new).unwrap();
    for sentence in ["detail", "verdict", "stopped_because", "in words"] {
        assert!(!json.contains(sentence), "{sentence} in {json}");
    }
    let back = crest_model::results::parse(&json).unwrap();
    assert_eq!(back.stopped_by, new.stopped_by);
    let a = crest_analysis::analyze(&back).unwrap();
    let md = crest_report::markdown::report(&back, &a).unwrap();
    for said in [
        "p95 was 120.0 ms over the last 5 s, beyond 100.0 ms",
        "100.0 req/s ok, p99 3.0 ms, 50.00% errors: error rate 50.00% above 1.00%",
        "the search budget of 1m was used",
    ] {
        assert!(md.contains(said), "{said}: {md}");
    }
}

/// A process held by a core that other work shares is said with the core's figure, and not
/// said to be past the share that marks a ceiling, which its own samples are not.
#[test]
fn a_process_on_a_shared_full_core_is_said_with_the_cores_figure() {
    let a = crest_analysis::analyze(&shared_core_fixture(80.0, 99.0)).unwrap();
    let said = words::bottleneck(a.summary.bottleneck.as_ref().unwrap());
    assert!(
        said.starts_with("The CPU of api is the bottleneck: at 80 users it used 80.0% of a core against the 1 core it may run on (80% of it), with that core 99.0% busy in all (other work took the rest);"),
        "{said}"
    );
    assert!(!said.contains("past the 90%"), "{said}");
}

/// A SQL run's own concurrency is said in transactions, the unit its figures count.
#[test]
fn a_sql_runs_concurrency_is_said_in_transactions() {
    use crest_analysis::bottleneck::{Bottleneck, Figures, Kind};
    use crest_analysis::figures::{StepLoad, WorkUnit};
    let b = Bottleneck {
        kind: Kind::Concurrency,
        subject: "service".into(),
        at: Some(StepLoad::Users(5)),
        figures: Figures::Concurrency {
            concurrency: 1,
            exact: 1.4,
            best_rps: 965.0,
            service_ms: 1.45,
            lightest: StepLoad::Users(1),
            watched: true,
            unit: WorkUnit::Transactions,
            at_most: false,
            at_least: None,
        },
        others: Vec::new(),
        pinned: Vec::new(),
        busy_elsewhere: None,
    };
    let said = words::bottleneck(&b);
    assert!(
        said.contains("(its best 965.0 transactions/s x 1.45 ms a transaction at 1 user = 1.4 transactions at once)"),
        "{said}"
    );
    assert!(!said.contains("req"), "{said}");
}

/// An open-model run at 100/s raised by hand to 500/s: its peak and that it varied are said
/// (the plan alone asked 100/s), and its first step, which held 100/s, is not labelled with the
/// configuration's 500/s.
#[test]
fn a_rate_raised_by_hand_is_the_peak_asked_and_not_the_first_steps_load() {
    let mut r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(10, 5, |_| Second::ok(100, 10.0))
        .segment(20, 5, |_| Second::ok(500, 10.0))
        .build();
    r.config.model = crest_model::results::LoadKind::Open;
    // As the journal records a change by hand: the configuration's rate is the highest asked.
    r.config.rate = Some(500.0);
    r.segments[0].kind = StepKind::Run;
    r.segments[0].users = None;
    r.segments[1].kind = StepKind::Level(Level::Rate(500.0));
    r.segments[1].users = None;
    r.segments[1].rate = Some(500.0);
    let sent: u64 = r.intervals.iter().map(|i| i.requests).sum();
    r.open = Some(crest_model::results::OpenStats {
        target_rps: 100.0,
        arrivals: sent,
        dropped: 0,
        behind: 0,
        queued: 0,
        send_lag: crest_model::EncodedHistogram::encode(&crest_model::hist::new_histogram()),
        service: None,
    });
    let a = crest_analysis::analyze(&r).unwrap();
    assert_eq!(a.summary.target_rps, Some(500.0));
    assert!(a.summary.target_varies);
    let said = words::open_model(&a.summary).unwrap();
    assert!(said.starts_with("asked up to 500/s ("), "{said}");
    let md = crest_report::markdown::report(&r, &a).unwrap();
    assert!(md.contains("\n| run | - | "), "{md}");
}

/// A machine whose CPU filled while crest used little and no process was watched: the service
/// itself may be what filled it, so the words do not say "other work" as if they knew. A collapse
/// after a best step that waited for nothing reads as a lower bound with the load that collapsed.
#[test]
fn an_unwatched_full_host_and_a_collapse_are_said_as_what_the_run_cannot_tell() {
    use crest_analysis::bottleneck::{Bottleneck, BusyElsewhere, Collapsed, Figures, Kind, Resource, Usage};
    use crest_analysis::figures::{StepLoad, WorkUnit};
    let busy = |watched| BusyElsewhere {
        host: Usage {
            resource: Resource::HostCpu,
            subject: "host".into(),
            used: 100.0,
            ceiling: Some(100.0),
            share: Some(1.0),
            below: None,
            throttled_percent: None,
            cores_busy_percent: None,
            samples: 4,
        },
        cores: 2.0,
        load_percent: 79.0,
        watched,
    };
    let b = |watched| Bottleneck {
        kind: Kind::Concurrency,
        subject: "service".into(),
        at: Some(StepLoad::Users(60)),
        figures: Figures::Concurrency {
            concurrency: 3,
            exact: 3.0,
            best_rps: 274.8,
            service_ms: 10.9,
            lightest: StepLoad::Users(3),
            watched,
            unit: WorkUnit::Requests,
            at_most: false,
            at_least: Some(Collapsed {
                best_at: StepLoad::Users(3),
                next: StepLoad::Users(60),
                next_per_s: 6.0,
            }),
        },
        others: Vec::new(),
        pinned: Vec::new(),
        busy_elsewhere: Some(busy(watched)),
    };
    let said = words::bottleneck(&b(false));
    assert!(said.contains("behaves like at least 3 workers of 10.9 ms"), "{said}");
    assert!(
        said.contains("3 users waited for nothing, and the next load, 60 users, served 6.0 req/s"),
        "{said}"
    );
    assert!(
        said.contains("but crest used 0.79 of them: no process was watched"),
        "{said}"
    );
    assert!(!said.contains("other work on the machine filled it"), "{said}");
    assert_eq!(words::bottleneck_cell(&b(false)), "at least 3 workers of 10.9 ms");
    let said = words::bottleneck(&b(true));
    assert!(
        said.contains("crest and the watched processes used 0.79 of them: other work on the machine filled it"),
        "{said}"
    );
}

/// 4.5 requests at once is not "5 workers": rounding would pick one by noise.
#[test]
fn a_count_of_workers_near_a_half_is_a_range() {
    use crest_analysis::bottleneck::{Bottleneck, Figures, Kind};
    use crest_analysis::figures::{StepLoad, WorkUnit};
    let b = |exact: f64| Bottleneck {
        kind: Kind::Concurrency,
        subject: "service".into(),
        at: Some(StepLoad::Rate(500.0)),
        figures: Figures::Concurrency {
            concurrency: exact.round() as u64,
            exact,
            best_rps: 394.7,
            service_ms: 11.4,
            lightest: StepLoad::Rate(200.0),
            watched: true,
            unit: WorkUnit::Requests,
            at_most: false,
            at_least: None,
        },
        others: Vec::new(),
        pinned: Vec::new(),
        busy_elsewhere: None,
    };
    assert_eq!(words::bottleneck_cell(&b(4.5)), "4 to 5 workers of 11.4 ms");
    assert!(words::bottleneck(&b(4.5)).contains("behaves like 4 to 5 workers of 11.4 ms"));
    assert_eq!(words::bottleneck_cell(&b(4.1)), "4 workers of 11.4 ms");
    assert_eq!(words::bottleneck_cell(&b(4.8)), "5 workers of 11.4 ms");
}

/// A run of one load past its limit (87% 503s) names no bottleneck; its report says why under
/// the heading, which was left empty above its sizing.
#[test]
fn a_run_of_one_load_says_why_it_names_no_bottleneck() {
    let r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(64, 5, |_| Second {
            ok: 387,
            latency_ms: 20.0,
            failed: 2_600,
            // Every user busy (Little's law): the 503s came after a wait in the queue.
            failure_ms: 21.6,
        })
        .build();
    let a = crest_analysis::analyze(&r).unwrap();
    assert!(a.summary.bottleneck.is_none(), "{:?}", a.summary.bottleneck);
    let said = words::no_bottleneck(&a.summary);
    assert!(said.starts_with("No bottleneck is named: a run of one load"), "{said}");
    assert!(said.contains("No process of the service was watched"), "{said}");
    let md = crest_report::markdown::report(&r, &a).unwrap();
    if md.contains("## Why it saturates") {
        assert!(md.contains(&said), "{md}");
    }
}
