//! The bottleneck, events and sizing, on runs whose causes are known by construction. The
//! same rules are checked against real servers in `crates/crest/tests/bottleneck.rs`; here each
//! figure can be computed by hand from the fixture.
#![allow(clippy::unwrap_used)]

use crest_analysis::bottleneck::{Figures, Kind, Resource};
use crest_analysis::figures::StepLoad;
use crest_model::monitor::{EventKind, MonitorSeries, SeriesKey, Unit};
use crest_testkit::results::{saturating_fixture, shared_core_fixture, stepping_fixture};

/// A record of one series from one source of this kind.
fn one_series(kind: &str, label: &str, series: MonitorSeries) -> crest_model::monitor::MonitorRecord {
    crest_model::monitor::MonitorRecord {
        interval_s: 1.0,
        sources: vec![crest_model::monitor::SourceRecord {
            kind: kind.into(),
            label: label.into(),
            name: None,
            notes: Vec::new(),
            limits: None,
        }],
        series: vec![series],
        events: Vec::new(),
    }
}

#[test]
fn a_process_at_its_cpu_quota_at_the_knee_is_the_bottleneck_with_its_figures() {
    let a = crest_analysis::analyze(&saturating_fixture()).unwrap();
    let b = a.summary.bottleneck.as_ref().unwrap();
    assert_eq!((b.kind, b.subject.as_str()), (Kind::CpuQuota, "api"));
    assert_eq!(b.at, Some(crest_analysis::figures::StepLoad::Users(80)));
    let Figures::Resource(u) = &b.figures else {
        panic!("{b:?}")
    };
    // The fixture's figures at 80 users: 49% of a core against a quota of half a core,
    // throttled in 70% of periods; 12% at 10 users.
    assert_eq!(u.resource, Resource::CpuQuota);
    assert!((u.used - 49.0).abs() < 1e-9 && u.ceiling == Some(50.0), "{u:?}");
    assert!((u.share.unwrap() - 0.98).abs() < 1e-9);
    assert_eq!(u.throttled_percent, Some(70.0));
    let below = u.below.as_ref().unwrap();
    assert_eq!(below.load, crest_analysis::figures::StepLoad::Users(10));
    assert!((below.used - 12.0).abs() < 1e-9);
    // It leads the findings.
    assert!(matches!(
        a.findings.first(),
        Some(crest_analysis::findings::Finding::Bottleneck(_))
    ));
}

#[test]
fn processes_that_exit_and_come_back_are_events_and_findings() {
    let a = crest_analysis::analyze(&saturating_fixture()).unwrap();
    let kinds: Vec<(EventKind, &str, f64)> = a
        .summary
        .events
        .iter()
        .map(|e| (e.kind, e.subject.as_str(), e.at_s))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (EventKind::Exited, "cache", 44.0),
            (EventKind::Restarted, "cache", 46.0)
        ]
    );
    let events = a
        .findings
        .iter()
        .filter(|f| matches!(f, crest_analysis::findings::Finding::ProcessEvent(_)))
        .count();
    assert_eq!(events, 2);
}

#[test]
fn sizing_takes_requests_at_the_optimum_and_limits_past_the_limit_with_headroom() {
    let a = crest_analysis::analyze(&saturating_fixture()).unwrap();
    let opt = a.capacity.optimal.as_ref().unwrap();
    assert_eq!(opt.load, crest_analysis::figures::StepLoad::Users(40));
    let z = a.summary.sizing.iter().find(|z| z.subject == "api").unwrap();
    // 47% of a core at the optimum: 470m. The highest step mean up to the breaking point is
    // 49%, with 25% headroom: 612.5m, rounded up to 620m.
    assert_eq!((z.cpu_request_millicores, z.cpu_limit_millicores), (470, 620));
    // Resident memory up to the optimum peaks at 88 MiB (rounded up to 96 MiB); over the run at
    // 96 MiB, with 50% headroom 144 MiB.
    assert_eq!((z.memory_request_mib, z.memory_limit_mib), (96, 144));
    assert!(z.basis.optimum && z.basis.samples >= 3);
    // Its limits come from the breaking point, where the failed share is carried for the words
    // (part of the CPU there is the cost of refusing).
    let breaking = a.capacity.breaking.as_ref().unwrap();
    assert_eq!(z.basis.limit_at, breaking.load);
    assert!(breaking.error_rate > 0.01);
    assert_eq!(z.basis.limit_failed, Some(breaking.error_rate));
    // The process that exited has no series: it is said not to be sized.
    assert!(a.summary.no_sizing.iter().any(|n| n.subject == "cache"));
}

/// A machine busy with other work reads 100% host CPU at every load: that did not stop the
/// growth at the knee, so the service's own concurrency is named instead.
#[test]
fn a_resource_pinned_at_every_load_is_not_the_bottleneck() {
    let mut r = stepping_fixture();
    r.monitor = Some(one_series(
        "host",
        "host",
        MonitorSeries {
            key: SeriesKey::new("host_cpu_percent"),
            source: 0,
            title: "host CPU (all cores)".into(),
            unit: Unit::Percent,
            limit: Some(100.0),
            points: (0..50).map(|k| (k as f64 + 0.5, 99.5)).collect(),
        },
    ));
    let a = crest_analysis::analyze(&r).unwrap();
    let b = a.summary.bottleneck.as_ref().unwrap();
    assert_eq!(b.kind, Kind::Concurrency, "{b:?}");
    let Figures::Concurrency {
        concurrency,
        best_rps,
        service_ms,
        watched,
        ..
    } = &b.figures
    else {
        panic!("{b:?}")
    };
    // The best step's successful rate x a successful request's mean time at 10 users (its
    // warm-up included): 385 x 0.1067 = 41 at once.
    let best = a.segments.iter().map(|g| g.success_rps).fold(0.0, f64::max);
    assert_eq!(*best_rps, best);
    assert_eq!(*service_ms, a.segments[0].success_latency_ms.mean);
    assert_eq!(*concurrency, (best * service_ms / 1000.0).round() as u64);
    assert!(!watched, "the host is no process of the service");
}

#[test]
fn a_run_still_growing_at_its_highest_load_names_none() {
    let r = crest_testkit::results::ResultsBuilder::new(crest_model::Outcome::Status(500), true)
        .segment(10, 10, |_| crest_testkit::results::Second::ok(100, 100.0))
        .segment(20, 10, |_| crest_testkit::results::Second::ok(200, 100.0))
        .segment(40, 10, |_| crest_testkit::results::Second::ok(400, 100.0))
        .build();
    let a = crest_analysis::analyze(&r).unwrap();
    let b = a.summary.bottleneck.as_ref().unwrap();
    assert_eq!(b.kind, Kind::None, "{b:?}");
    assert!(a.summary.sizing.is_empty() && a.summary.no_sizing.is_empty());
}

/// A HikariCP pool of 10 read from a Prometheus page: `busy` connections in each step of 10 s.
fn pool(busy: &[f64]) -> crest_model::monitor::MonitorRecord {
    one_series(
        "prometheus",
        "http://127.0.0.1:9100/metrics",
        MonitorSeries {
            key: SeriesKey::new("hikaricp_connections_active").with("pool", "main"),
            source: 0,
            title: "hikaricp_connections_active".into(),
            unit: Unit::Number,
            limit: Some(10.0),
            points: (0..busy.len() * 10).map(|k| (k as f64 + 0.5, busy[k / 10])).collect(),
        },
    )
}

/// A pool's gauge read from a Prometheus page, with its ceiling beside it, full at the knee.
#[test]
fn a_prometheus_gauge_at_its_ceiling_names_the_pool() {
    let mut r = stepping_fixture();
    r.monitor = Some(pool(&[1.0, 3.0, 8.0, 10.0, 10.0]));
    let a = crest_analysis::analyze(&r).unwrap();
    let b = a.summary.bottleneck.as_ref().unwrap();
    assert_eq!(b.kind, Kind::DbConnections, "{b:?}");
    assert_eq!(b.subject, r#"hikaricp_connections_active{pool="main"}"#);
    let Figures::Resource(u) = &b.figures else {
        panic!("{b:?}")
    };
    assert_eq!((u.used, u.ceiling), (10.0, Some(10.0)));
}

/// A machine filled by other work (a build beside the test) as the load rose: its CPU reached
/// its ceiling at the knee, but crest and the watched processes used little of it, so it is
/// said as other work, and the service's own limits are the answer.
#[test]
fn a_host_filled_by_other_work_is_said_but_not_named() {
    let mut r = stepping_fixture();
    r.environment = Some(crest_model::results::Environment {
        cores: 2,
        ..Default::default()
    });
    r.client = Some(crest_model::results::ClientStats {
        cpu_s: 5.0,
        cores: 2,
        threads: 2,
        peak_rss_bytes: 0,
        core_wait_s: None,
        cpu_quota_cores: None,
    });
    let host = [20.0, 40.0, 70.0, 99.0, 99.0];
    r.monitor = Some(one_series(
        "host",
        "host",
        MonitorSeries {
            key: SeriesKey::new("host_cpu_percent"),
            source: 0,
            title: "host CPU (all cores)".into(),
            unit: Unit::Percent,
            limit: Some(100.0),
            points: (0..50).map(|k| (k as f64 + 0.5, host[k / 10])).collect(),
        },
    ));
    let a = crest_analysis::analyze(&r).unwrap();
    let b = a.summary.bottleneck.as_ref().unwrap();
    assert_eq!(b.kind, Kind::Concurrency, "{b:?}");
    let e = b.busy_elsewhere.as_ref().unwrap();
    // crest: 5 CPU-seconds over the run's requests, at the knee's rate of them (20% of a core,
    // where its average over the run is 10%), against 1.98 cores used.
    assert_eq!((e.host.used, e.cores), (99.0, 2.0));
    let requests: u64 = r.intervals.iter().map(|i| i.requests).sum();
    let knee = a.segments.iter().find(|g| Some(g.load()) == b.at).unwrap();
    let there = 5.0 / requests as f64 * knee.throughput_rps * 100.0;
    assert!((e.load_percent - there).abs() < 1e-9, "{e:?} against {there}");
    assert!(e.load_percent > 1.5 * 5.0 / r.duration_s * 100.0, "{e:?}");
    // The same machine filled by the load itself (crest at 1.2 of its 2 cores, not busy enough
    // to be its own limit) is the bottleneck.
    r.client.as_mut().unwrap().cpu_s = 0.6 * r.duration_s * 2.0;
    let a = crest_analysis::analyze(&r).unwrap();
    assert_eq!(a.summary.bottleneck.as_ref().unwrap().kind, Kind::Cpu);
}

/// The kernel's own account of a quota: a process throttled in most of its periods is at its
/// quota even when a machine full of other work left its samples under 90% of it. Throttled
/// rarely, the same usage is not.
#[test]
fn a_process_throttled_most_of_the_time_is_at_its_quota_below_ninety_percent() {
    let with = |throttled: f64| {
        let mut r = saturating_fixture();
        let m = r.monitor.as_mut().unwrap();
        for s in &mut m.series {
            match s.key.metric.as_str() {
                // 43% of the half core from 30 s on: 86% of the quota.
                "process_cpu_percent" => s.points.iter_mut().filter(|p| p.0 >= 30.0).for_each(|p| p.1 = 43.0),
                "process_cpu_throttled_percent" => s
                    .points
                    .iter_mut()
                    .filter(|p| p.0 >= 30.0)
                    .for_each(|p| p.1 = throttled),
                _ => {}
            }
        }
        crest_analysis::analyze(&r).unwrap().summary.bottleneck.unwrap()
    };
    let b = with(70.0);
    assert_eq!((b.kind, b.subject.as_str()), (Kind::CpuQuota, "api"), "{b:?}");
    let b = with(10.0);
    assert_ne!(b.kind, Kind::CpuQuota, "{b:?}");
}

/// A process pinned to one core that other work shares: its core full, by everyone's account,
/// while the process's own samples show 80% of it. The core is its ceiling all the same; the
/// same process on a core with room to spare (70% busy) is not at it, nor is one that used less
/// than half of a full core (the other work is what filled it).
#[test]
fn a_process_on_a_core_that_other_work_fills_is_at_its_cpu() {
    let with = |own: f64, busy: f64| {
        crest_analysis::analyze(&shared_core_fixture(own, busy))
            .unwrap()
            .summary
            .bottleneck
            .unwrap()
    };
    let b = with(80.0, 99.0);
    assert_eq!((b.kind, b.subject.as_str()), (Kind::Cpu, "api"), "{b:?}");
    let Figures::Resource(u) = &b.figures else {
        panic!("{b:?}")
    };
    assert_eq!((u.resource, u.used, u.ceiling), (Resource::Cpu, 80.0, Some(100.0)));
    assert_eq!(u.cores_busy_percent, Some(99.0));
    for (own, busy) in [(80.0, 70.0), (40.0, 99.0)] {
        let b = with(own, busy);
        assert_ne!(b.kind, Kind::Cpu, "{own}% of a core {busy}% busy: {b:?}");
    }
}

/// A service whose pool was nearly full (86%) at its lightest load, which already served as much
/// as any: the pool filling at the heavier loads is its limit when the extra load only waited,
/// and is named; when the heavier loads' extra work failed instead (a storm of instant 503s,
/// which fills a pool or burns a CPU), what filled it is the failing work, and the service's
/// own concurrency is named, as an upper bound.
#[test]
fn a_resource_filled_over_a_flat_plateau_is_named_unless_failures_filled_it() {
    use crest_testkit::results::{ResultsBuilder, Second};
    let with = |failed: u64| {
        let mut r = ResultsBuilder::new(crest_model::Outcome::Status(503), true)
            .segment(10, 10, |_| Second::ok(380, 26.0))
            .segment(40, 10, |_| Second {
                ok: 383,
                latency_ms: 104.0,
                failed,
                failure_ms: 1.0,
            })
            .build();
        r.monitor = Some(pool(&[8.6, 10.0]));
        crest_analysis::analyze(&r).unwrap().summary.bottleneck.unwrap()
    };
    let b = with(0);
    assert_eq!(b.kind, Kind::DbConnections, "{b:?}");
    let b = with(2_000);
    assert_eq!(b.kind, Kind::Concurrency, "{b:?}");
    let Figures::Concurrency { at_most, .. } = b.figures else {
        panic!("{b:?}")
    };
    assert!(at_most, "{b:?}");
}

/// A spike that collapsed: 3 users of a service served 250 a second, 60 users only 120 (the rest
/// instant 503s). The lightest load served the most without being shown at the service's limit,
/// so the workers are not bounded by it ("at most 3" of a 4-worker service was said before).
#[test]
fn a_load_that_collapsed_does_not_bound_the_workers_by_the_lightest() {
    use crest_testkit::results::{ResultsBuilder, Second};
    let r = ResultsBuilder::new(crest_model::Outcome::Status(503), true)
        .segment(3, 10, |_| Second::ok(250, 12.0))
        .segment(60, 10, |_| Second {
            ok: 120,
            latency_ms: 57.0,
            failed: 1_500,
            // Every user busy (Little's law), as in a real spike: a 503 after the queue's wait.
            failure_ms: 35.4,
        })
        .build();
    let b = crest_analysis::analyze(&r).unwrap().summary.bottleneck.unwrap();
    let Figures::Concurrency {
        at_most,
        at_least,
        concurrency,
        ..
    } = b.figures.clone()
    else {
        panic!("{b:?}")
    };
    assert!(!at_most, "{b:?}");
    // Nor are they 3: the best load waited for nothing, so 3 is only a lower bound.
    let c = at_least.unwrap_or_else(|| panic!("no lower bound: {concurrency}"));
    assert_eq!((&c.best_at, &c.next), (&StepLoad::Users(3), &StepLoad::Users(60)));
    assert!((c.next_per_s - 120.0).abs() < 1.0, "{c:?}");
}

/// A service that waited at its best step was shown at its limit there, even when a heavier
/// load then collapsed: its workers are estimated, not bounded below.
#[test]
fn a_collapse_after_a_step_that_waited_bounds_nothing() {
    use crest_testkit::results::{ResultsBuilder, Second};
    let r = ResultsBuilder::new(crest_model::Outcome::Status(503), true)
        .segment(2, 10, |_| Second::ok(190, 10.5))
        .segment(8, 10, |_| Second::ok(380, 21.0))
        .segment(60, 10, |_| Second {
            ok: 120,
            latency_ms: 57.0,
            failed: 1_500,
            failure_ms: 35.4,
        })
        .build();
    let b = crest_analysis::analyze(&r).unwrap().summary.bottleneck.unwrap();
    let Figures::Concurrency {
        at_least, concurrency, ..
    } = b.figures.clone()
    else {
        panic!("{b:?}")
    };
    assert_eq!((at_least, concurrency), (None, 4), "{b:?}");
}
