//! Findings only where their data holds (issue 20): for each finding the rules decide, a run
//! that must not produce it (noise, too little data, a step cut short) and one that must.
#![allow(clippy::unwrap_used)]

use crest_analysis::analyze;
use crest_analysis::capacity::{NoOptimal, Unjudged};
use crest_analysis::figures::StepLoad;
use crest_analysis::findings::Finding;
use crest_model::hist::{new_histogram, record};
use crest_model::monitor::{MonitorRecord, MonitorSeries, SeriesKey, Unit};
use crest_model::results::{EndReason, Results, UserTimes};
use crest_model::step::StepKind;
use crest_model::{EncodedHistogram, Outcome};
use crest_testkit::results::{ResultsBuilder, Second};
use std::time::Duration;

fn findings(r: &Results) -> Vec<Finding> {
    analyze(r).unwrap().findings
}

fn grew(r: &Results) -> Option<Finding> {
    findings(r)
        .into_iter()
        .find(|f| matches!(f, Finding::LatencyGrew { .. } | Finding::PointsDiffer { .. }))
}

fn saturates(r: &Results) -> Option<Finding> {
    findings(r).into_iter().find(|f| matches!(f, Finding::Saturates(_)))
}

/// Two steps of ten seconds at `a_ms` and `b_ms`, each at 100 req/s.
fn two_steps(a_ms: f64, b_ms: f64) -> Results {
    ResultsBuilder::new(Outcome::Status(500), true)
        .segment(10, 10, |_| Second::ok(100, a_ms))
        .segment(20, 10, |_| Second::ok(100, b_ms))
        .build()
}

#[test]
fn latency_growth_with_its_figures_when_it_is_real() {
    let g = grew(&two_steps(10.0, 30.0)).expect("a growth finding");
    assert!(
        matches!(g, Finding::LatencyGrew { ratio, from_ms, to_ms, from_requests: 1000, to_requests: 1000, .. }
            if (ratio - 3.0).abs() < 0.05 && (from_ms - 10.0).abs() < 0.1 && (to_ms - 30.0).abs() < 0.2),
        "{g:?}"
    );
}

#[test]
fn no_latency_growth_from_sub_millisecond_loopback_noise() {
    // Issue 20: "Latency grew 3.2x (0.4 ms to 1.1 ms): response time does not scale".
    assert!(grew(&two_steps(0.4, 1.1)).is_none());
    // The same ratio a millisecond and more apart is a finding.
    assert!(grew(&two_steps(4.0, 11.0)).is_some());
}

#[test]
fn no_latency_growth_within_the_steps_own_wander() {
    // Each step's seconds alternate between two latencies: 10 ms on average, then 18 ms. The
    // means differ 1.8x and by 8 ms, but by less than three standard errors of seconds that
    // themselves wander by 12 and 24 ms.
    let r = ResultsBuilder::new(Outcome::Status(500), true)
        .segment(10, 10, |k| Second::ok(100, if k % 2 == 0 { 4.0 } else { 16.0 }))
        .segment(20, 10, |k| Second::ok(100, if k % 2 == 0 { 6.0 } else { 30.0 }))
        .build();
    assert!(grew(&r).is_none(), "{:?}", grew(&r));
    // Steady seconds at the same means are a finding.
    let steady = two_steps(10.0, 18.0);
    assert!(grew(&steady).is_some());
}

#[test]
fn no_latency_growth_from_steps_of_too_few_requests() {
    let r = ResultsBuilder::new(Outcome::Status(500), true)
        .segment(1, 2, |_| Second::ok(5, 10.0))
        .segment(2, 2, |_| Second::ok(5, 100.0))
        .build();
    assert!(grew(&r).is_none());
    let a = analyze(&r).unwrap();
    assert_eq!(
        a.capacity.steps[0].unjudged,
        Some(Unjudged::TooLittle { units: 10, min: 20 })
    );
}

/// 10, 20 and 40 users: 100, 200 and 205 req/s at 100, 100 and 195 ms; the last step lasts
/// `last_s` seconds and the run ends as `ended`.
fn saturating(last_s: u64, ended: EndReason) -> Results {
    let mut r = ResultsBuilder::new(Outcome::Status(500), true)
        .segment(10, 10, |_| Second::ok(100, 100.0))
        .segment(20, 10, |_| Second::ok(200, 100.0))
        .segment(40, last_s, |_| Second::ok(205, 195.0))
        .build();
    r.ended_by = ended;
    r
}

#[test]
fn saturation_is_judged_on_whole_steps_and_not_on_one_a_stop_condition_cut_short() {
    let p = saturates(&saturating(10, EndReason::Duration)).expect("saturation at 40 users");
    assert!(matches!(&p, Finding::Saturates(c) if c.load_value == 40.0), "{p:?}");
    // Issue 20: a step ended by a stop rule after about a second was judged.
    let cut = saturating(1, EndReason::Condition);
    assert!(saturates(&cut).is_none(), "{:?}", saturates(&cut));
    let a = analyze(&cut).unwrap();
    assert_eq!(
        a.capacity.steps[2].unjudged,
        Some(Unjudged::CutShort {
            duration_s: 1.0,
            before_s: 10.0
        })
    );
    // A run that ended on time is not cut short, however short its last step.
    assert!(analyze(&saturating(1, EndReason::Duration)).unwrap().capacity.steps[2]
        .unjudged
        .is_none());
}

#[test]
fn no_saturation_when_p95_did_not_rise_beyond_noise() {
    // Issue 20: "saturates at 60 users ... p95 rose from 1.3 to 1.3 ms".
    let r = ResultsBuilder::new(Outcome::Status(500), true)
        .segment(50, 10, |_| Second::ok(1000, 1.25))
        .segment(60, 10, |_| Second::ok(1010, 1.32))
        .build();
    assert!(saturates(&r).is_none(), "{:?}", saturates(&r));
}

#[test]
fn a_step_cut_short_still_breaks_by_its_counted_failures() {
    let mut r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(10, 10, |_| Second::ok(100, 100.0))
        .segment(20, 10, |_| Second::ok(200, 100.0))
        .segment(40, 1, |_| Second {
            ok: 150,
            latency_ms: 100.0,
            failed: 100,
            failure_ms: 1.0,
        })
        .build();
    r.ended_by = EndReason::Condition;
    let f = findings(&r);
    assert!(
        f.iter()
            .any(|f| matches!(f, Finding::Breaks { point, .. } if point.load_value == 40.0)),
        "{f:?}"
    );
}

/// A run of 4 users each done once, with the host's CPU sampled at `at` seconds.
fn users_done_with_cpu(at: &[f64]) -> Results {
    let mut r = ResultsBuilder::new(Outcome::Status(500), true)
        .segment(4, 5, |_| Second::ok(40, 10.0))
        .monitor(MonitorRecord {
            events: Vec::new(),
            interval_s: 1.0,
            sources: vec![],
            series: vec![MonitorSeries {
                key: SeriesKey::new("host_cpu_percent"),
                source: 0,
                title: "host CPU".into(),
                unit: Unit::Percent,
                limit: None,
                points: at.iter().map(|t| (*t, 37.0)).collect(),
            }],
        })
        .build();
    let mut h = new_histogram();
    for _ in 0..4 {
        record(&mut h, Duration::from_secs(4));
    }
    r.users = Some(UserTimes {
        finished: 4,
        cut_short: 0,
        first_start_s: 0.0,
        last_end_s: 4.5,
        duration: EncodedHistogram::encode(&h),
    });
    r
}

fn peaks(r: &Results) -> Vec<String> {
    findings(r)
        .iter()
        .find_map(|f| match f {
            Finding::UsersDone { peaks, .. } => Some(peaks.iter().map(|p| p.title.clone()).collect()),
            _ => None,
        })
        .expect("a users-done finding")
}

#[test]
fn a_resource_peak_is_named_only_from_enough_samples() {
    // Issue 20: a postgres peak CPU of 0.0% from one sample of a 180 ms point.
    assert!(peaks(&users_done_with_cpu(&[0.18])).is_empty());
    assert!(peaks(&users_done_with_cpu(&[1.0, 2.0])).is_empty());
    assert_eq!(peaks(&users_done_with_cpu(&[1.0, 2.0, 3.0])), ["host CPU"]);
}

#[test]
fn no_optimal_when_every_level_failed_names_the_level_that_failed_least() {
    let failing = |failed| {
        move |_| Second {
            ok: 90,
            latency_ms: 10.0,
            failed,
            failure_ms: 1.0,
        }
    };
    let r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(10, 10, failing(10))
        .segment(20, 10, failing(30))
        .build();
    let f = findings(&r);
    let why = f
        .iter()
        .find_map(|f| match f {
            Finding::NoOptimal(n, _) => Some(n.clone()),
            _ => None,
        })
        .expect("no optimal point, and why");
    assert!(
        matches!(&why, NoOptimal::EveryLevelFailed { least: StepLoad::Users(10), failed, .. }
            if failed.failures == 100 && failed.requests == 1000),
        "{why:?}"
    );
}

/// A sweep's points (no load level), each run to the end by its users: 1 user once, then 50.
fn sweep(first_ms: f64, then_ms: f64) -> Results {
    let mut r = ResultsBuilder::new(Outcome::Status(500), true)
        .segment(1, 1, |_| Second::ok(1, first_ms))
        .segment(50, 1, |_| Second::ok(50, then_ms))
        .build();
    for (g, name) in r.segments.iter_mut().zip(["1 x 1", "50 x 1"]) {
        g.users = None;
        g.kind = StepKind::Point(name.into());
    }
    r
}

#[test]
fn a_sweep_of_whole_points_is_judged_on_what_they_have_by_the_same_noise_rule() {
    // Seed 000: one user's request took 1,001 ms, fifty users' 5,763 ms on average.
    let g = grew(&sweep(1001.0, 5763.0)).expect("the points differ");
    assert!(
        matches!(&g, Finding::PointsDiffer { from, to, from_requests: 1, to_requests: 50, .. }
            if *from == StepKind::Point("1 x 1".into()) && *to == StepKind::Point("50 x 1".into())),
        "{g:?}"
    );
    assert!(grew(&sweep(0.4, 1.1)).is_none());
}

/// Two judged steps whose success stats each opened `per_step` connections of 150 µs.
fn connecting(per_step: u64) -> Results {
    let mut r = two_steps(10.0, 10.0);
    for s in r.stats.iter_mut() {
        let mut h = new_histogram();
        for _ in 0..per_step {
            record(&mut h, Duration::from_micros(150));
        }
        s.connect = Some(EncodedHistogram::encode(&h));
    }
    r
}

fn connect_flat(r: &Results) -> Option<Finding> {
    findings(r)
        .into_iter()
        .find(|f| matches!(f, Finding::ConnectFlat { .. }))
}

#[test]
fn flat_connect_times_are_a_finding_only_over_enough_connections_and_name_them() {
    assert!(connect_flat(&connecting(2)).is_none(), "four connects say nothing");
    let f = connect_flat(&connecting(10)).expect("flat over 20 connections");
    assert!(
        matches!(
            f,
            Finding::ConnectFlat {
                steps: 2,
                connections: 20,
                ..
            }
        ),
        "{f:?}"
    );
}

/// A spike of 3 users (250 a second in 10.5 ms) to 60 (380 a second among 40,000 instant 503s)
/// and back: the recovery serves 280 a second in `recovery_ms`, failing `drained` requests in
/// its first second on what the spike left queued; its steps are a spike profile's.
fn spike(recovery_ms: f64, drained: u64) -> Results {
    let mut r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(3, 10, |_| Second::ok(250, 10.5))
        .segment(60, 10, |_| Second {
            ok: 380,
            latency_ms: 34.0,
            failed: 40_000,
            // Every user busy (Little's law), as in a real spike.
            failure_ms: 1.2,
        })
        .segment(3, 10, move |k| Second {
            ok: 280,
            latency_ms: recovery_ms,
            failed: if k == 0 { drained } else { 0 },
            failure_ms: 0.5,
        })
        .build();
    for (g, kind) in r
        .segments
        .iter_mut()
        .zip([StepKind::Baseline, StepKind::Spike, StepKind::Recovery])
    {
        g.kind = kind(crest_model::step::Level::Users(g.users.unwrap()));
    }
    r
}

/// A spike: 3 users served 250 a second cleanly in 10.5 ms, 60 users 380 a second among 40,000 instant
/// 503s, and the recovery at 3 users failed 80 requests in its first second on what the spike
/// left queued, then served 280 a second in 9.5 ms. The level of 3 users is the baseline's: its optimum,
/// and the break at the spike. Keeping the recovery (which served more) said "breaks at 3 users"
/// and "no optimal operating point", beside a recovery finding of 0% errors.
#[test]
fn a_spikes_recovery_does_not_stand_for_its_load_when_it_failed_on_the_spikes_leftovers() {
    let a = analyze(&spike(9.5, 80)).unwrap();
    let c = &a.capacity;
    let load = |p: &Option<crest_analysis::capacity::CapacityPoint>| p.as_ref().map(|p| p.load.clone());
    assert_eq!(load(&c.breaking), Some(StepLoad::Users(60)), "{c:?}");
    assert_eq!(load(&c.optimal), Some(StepLoad::Users(3)), "{c:?}");
    let b = a.summary.bottleneck.unwrap();
    let crest_analysis::bottleneck::Figures::Concurrency {
        concurrency,
        service_ms,
        ..
    } = b.figures
    else {
        panic!("{b:?}")
    };
    // The baseline's time, not the recovery's: 380/s x 10.5 ms.
    assert!((service_ms - 10.5).abs() < 0.2 && concurrency == 4, "{b:?}");
}

/// A spike's recovery whose first second still drained the spike's queue (5 of 285 failed,
/// 1.8%) is back after that second, not at once: a 3-second window from the spike's end
/// averaged the drain with two calm seconds (0.6%) and said "back in 0 s". What came before is
/// kept for the words.
#[test]
fn a_recovery_is_not_back_while_its_first_second_still_drains_the_spike() {
    let rec = analyze(&spike(10.5, 5)).unwrap().summary.recovery.unwrap();
    assert_eq!(rec.seconds, Some(1.0), "{rec:?}");
    let until = rec.until.unwrap();
    assert_eq!((until.seconds, until.units, until.failures), (1.0, 285, 5));
}

/// Saturation where more load brought no more throughput beyond the steps' own noise: 4 users
/// at 370 a second, 8 at 389 (+5.1%, but each step wanders by +-30 a second), 12 at 390, p95
/// doubling at each. The 5% rule alone placed it at 12 users, a level late.
#[test]
fn saturation_is_where_growth_ended_beyond_noise_not_only_past_five_percent() {
    let wander = |mean: u64| move |k: u64| if k.is_multiple_of(2) { mean - 30 } else { mean + 30 };
    let (a, b, c) = (wander(370), wander(389), wander(390));
    let r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(4, 10, move |k| Second::ok(a(k), 10.5))
        .segment(8, 10, move |k| Second::ok(b(k), 21.0))
        .segment(12, 10, move |k| Second::ok(c(k), 31.0))
        .build();
    let a = analyze(&r).unwrap();
    let s = a.capacity.saturation.as_ref().map(|p| p.load.clone());
    assert_eq!(s, Some(StepLoad::Users(8)), "{:?}", a.capacity);
    // Steps that wander as much but grew +65% for twice the users grew: no saturation there.
    let wide = |mean: u64| move |k: u64| if k.is_multiple_of(2) { mean - 140 } else { mean + 140 };
    let (a, b) = (wide(200), wide(330));
    let r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(2, 6, move |k| Second::ok(a(k), 10.0))
        .segment(4, 6, move |k| Second::ok(b(k), 12.5))
        .segment(8, 6, |_| Second::ok(340, 23.0))
        .build();
    let a = analyze(&r).unwrap();
    let s = a.capacity.saturation.as_ref().map(|p| p.load.clone());
    assert_ne!(s, Some(StepLoad::Users(4)), "{:?}", a.capacity);
}

/// Past its limit a service that served 390 a second served 16 at 48 users, the rest timeouts:
/// said, with the best and the least. One that held its best while failing the extra load
/// (a 503 storm beside 380 answers a second) did not collapse.
#[test]
fn a_collapse_past_the_best_is_said_and_a_held_plateau_is_not() {
    let collapse = |ok_at_48: u64| {
        ResultsBuilder::new(Outcome::Status(500), true)
            .segment(4, 5, |_| Second::ok(380, 10.5))
            .segment(8, 5, |_| Second::ok(390, 20.5))
            .segment(48, 5, move |_| Second {
                ok: ok_at_48,
                latency_ms: 41.0,
                failed: 1_300,
                failure_ms: 41.0,
            })
            .build()
    };
    let found = |r: &Results| findings(r).into_iter().find(|f| matches!(f, Finding::Collapsed { .. }));
    let Some(Finding::Collapsed {
        best,
        best_per_s,
        at,
        per_s,
        ..
    }) = found(&collapse(16))
    else {
        panic!("{:?}", findings(&collapse(16)))
    };
    assert_eq!((best, at), (StepLoad::Users(8), StepLoad::Users(48)));
    assert!((best_per_s - 390.0).abs() < 1.0 && (per_s - 16.0).abs() < 1.0);
    assert!(found(&collapse(380)).is_none());
}

/// A server's 40 ms deadline: 500s that took 41 ms, above every success (10 to 20 ms), are
/// named a likely timeout though under a second. Errors that take as long as the work (an
/// error page after the usual 10 ms) and instant refusals are not.
#[test]
fn a_short_deadline_above_every_success_is_a_likely_timeout() {
    let with = |failure_ms: f64| {
        let r = ResultsBuilder::new(Outcome::Status(500), true)
            .segment(4, 6, |_| Second::ok(380, 10.5))
            .segment(8, 6, move |_| Second {
                ok: 390,
                latency_ms: 19.0,
                failed: 60,
                failure_ms,
            })
            .build();
        findings(&r).into_iter().find_map(|f| match f {
            Finding::Clustered { cluster, .. } => Some(cluster),
            _ => None,
        })
    };
    let c = with(41.0).expect("a 41 ms cluster above every success");
    assert!((c.p50_ms - 41.0).abs() < 2.0, "{c:?}");
    assert!(with(10.5).is_none(), "an error as long as the work");
    assert!(with(0.4).is_none(), "instant refusals");
    // Connections reset at 41 ms are no deadline's answer.
    let reset = ResultsBuilder::new(Outcome::Reset, true)
        .segment(4, 6, |_| Second::ok(380, 10.5))
        .segment(8, 6, |_| Second {
            ok: 390,
            latency_ms: 19.0,
            failed: 60,
            failure_ms: 41.0,
        })
        .build();
    assert!(!findings(&reset).iter().any(|f| matches!(f, Finding::Clustered { .. })));
}

/// A recovery whose first second answered nothing (a stall after the spike) is not back then,
/// though two calm seconds after it make a window within the baseline's figures.
#[test]
fn a_recovery_that_stalled_first_is_not_back_at_once() {
    let mut r = spike(10.5, 0);
    // The recovery's first second: nothing ended in it.
    let first = r.segments[2].start_s as usize;
    r.intervals[first].requests = 0;
    r.intervals[first].failures = 0;
    r.intervals[first].latency = crest_model::EncodedHistogram::encode(&new_histogram());
    r.intervals[first].iterations = None;
    let rec = analyze(&r).unwrap().summary.recovery.unwrap();
    assert_eq!(rec.seconds, Some(1.0), "{rec:?}");
}
