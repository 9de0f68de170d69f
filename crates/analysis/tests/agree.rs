//! Answers that cannot contradict each other (issue 33): successful work only, in order by
//! load, no verdict within a step's own noise, and the checker that every debug analysis runs.
#![allow(clippy::unwrap_used)]

use crest_analysis::capacity::Why;
use crest_analysis::figures::Judged;
use crest_analysis::findings::Finding;
use crest_analysis::invariants::{check, Violation};
use crest_analysis::{analyze, Analysis};
use crest_model::Outcome;
use crest_testkit::results::{ResultsBuilder, Second};

fn steps(levels: &[(u64, Second)]) -> Analysis {
    let mut b = ResultsBuilder::new(Outcome::Status(503), true);
    for (users, s) in levels {
        let s = Second { ..*s };
        b = b.segment(*users, 10, move |_| Second { ..s });
    }
    analyze(&b.build()).unwrap()
}

fn fails(ok: u64, ms: f64, failed: u64) -> Second {
    Second {
        ok,
        latency_ms: ms,
        failed,
        failure_ms: 0.2,
    }
}

#[test]
fn a_503_storm_is_no_faster_service() {
    // 400/s served at every level past 4 users; past 8, instant 503s pile up beside them.
    let a = steps(&[
        (2, Second::ok(200, 10.0)),
        (4, Second::ok(400, 10.0)),
        (8, Second::ok(400, 20.0)),
        (16, fails(400, 40.0, 3000)),
    ]);
    let c = &a.capacity;
    let b = c.breaking.as_ref().expect("the 503s break it");
    assert_eq!(b.load_value, 16.0);
    assert!(matches!(b.why, Why::Failed(_)));
    // Every quoted throughput is of successes: none past the 400/s served.
    for p in [&c.optimal, &c.saturation, &c.breaking].into_iter().flatten() {
        assert!(p.per_s <= 400.0 + 1e-9, "{p:?}");
    }
    let top = &a.segments[3];
    assert!(top.throughput_rps > 3000.0 && (top.success_rps - 400.0).abs() < 1e-9);
    // The successful requests' latency, not the 503s' 0.2 ms, is what the step's p95 quotes.
    assert!(top.success_latency_ms.p95 > 35.0 && top.latency_ms.p50 < 1.0, "{top:?}");
    assert!(check(&a).is_empty(), "{:?}", check(&a));
}

#[test]
fn a_fall_without_failures_is_saturation_not_a_break() {
    let a = steps(&[
        (2, Second::ok(200, 10.0)),
        (4, Second::ok(400, 10.0)),
        (8, Second::ok(400, 20.0)),
        (16, Second::ok(250, 64.0)),
    ]);
    let c = &a.capacity;
    assert!(c.breaking.is_none(), "no failure, no break: {:?}", c.breaking);
    let s = c.saturation.as_ref().expect("saturation");
    assert!(s.load_value <= 16.0);
    let o = c.optimal.as_ref().expect("an optimum");
    assert!(o.load_value <= s.load_value, "optimum {o:?} past saturation {s:?}");
}

#[test]
fn saturation_is_never_below_the_optimum() {
    // Noise made 6 users look flat against 4, and 8 the most power: saturation is looked for
    // from the optimum on.
    let a = steps(&[
        (4, Second::ok(400, 10.0)),
        (6, Second::ok(405, 14.8)),
        (8, Second::ok(800, 10.0)),
        (10, Second::ok(810, 12.5)),
    ]);
    let c = &a.capacity;
    let o = c.optimal.as_ref().expect("an optimum").load_value;
    if let Some(s) = &c.saturation {
        assert!(s.load_value >= o, "saturation {} below the optimum {o}", s.load_value);
    }
    assert!(check(&a).is_empty(), "{:?}", check(&a));
}

#[test]
fn throughputs_within_their_noise_are_not_told_apart() {
    // Seconds alternating 60 and 140 successes: 100/s with a wide spread, then 88/s with the
    // same while latency triples. The 12% fall is within twice their combined error: it is no
    // fall past the peak, only throughput that stopped growing while latency rose.
    let wander = |base: u64| move |k: u64| Second::ok(if k.is_multiple_of(2) { base - 40 } else { base + 40 }, 10.0);
    let r = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(10, 10, wander(100))
        .segment(20, 10, move |k| Second {
            latency_ms: 30.0,
            ..wander(88)(k)
        })
        .build();
    let a = analyze(&r).unwrap();
    let (lo, hi) = (&a.segments[0], &a.segments[1]);
    assert!(lo.success_rps_se > 10.0 && hi.success_rps_se > 10.0, "{lo:?}");
    assert!(lo.success_rps - hi.success_rps < 2.0 * lo.success_rps_se.hypot(hi.success_rps_se));
    let s = a.capacity.saturation.as_ref().expect("saturation");
    assert!(matches!(s.why, Why::Saturates { .. }), "{s:?}");
    // Exact counts, the same 12% fall: beyond noise, a fall past the peak.
    let exact = steps(&[(10, Second::ok(100, 10.0)), (20, Second::ok(88, 30.0))]);
    let s = exact.capacity.saturation.as_ref().expect("saturation");
    assert!(matches!(s.why, Why::ThroughputFell { .. }), "{s:?}");
}

#[test]
fn too_little_data_is_labelled_and_not_judged() {
    let a = steps(&[
        (1, Second::ok(1, 10.0)),
        (2, Second::ok(100, 10.0)),
        (4, Second::ok(200, 10.0)),
    ]);
    assert_eq!(a.segments[0].judged, Judged::TooLittle { units: 10, min: 20 });
    assert!(a.summary.answers.unjudged.contains(&a.segments[0].kind));
    // The growth finding's baseline is a judged step.
    for f in &a.findings {
        if let Finding::LatencyGrew { from, .. } = f {
            assert_ne!(*from, crest_analysis::figures::StepLoad::Users(1));
        }
    }
}

#[test]
fn the_checker_names_each_contradiction() {
    let mut a = steps(&[
        (2, Second::ok(200, 10.0)),
        (4, Second::ok(400, 10.0)),
        (8, Second::ok(400, 20.0)),
        (16, fails(400, 40.0, 3000)),
    ]);
    assert!(check(&a).is_empty());
    let b = a.capacity.breaking.clone().unwrap();
    let mut o = b.clone();
    o.load_value = 32.0;
    a.capacity.optimal = Some(o);
    let mut quoted = b.clone();
    quoted.per_s = a.segments[3].throughput_rps;
    quoted.why = Why::ThroughputFell {
        rps: 1.0,
        best_rps: 2.0,
    };
    a.capacity.breaking = Some(quoted);
    let v = check(&a);
    assert!(
        v.iter().any(|v| matches!(
            v,
            Violation::OutOfOrder {
                lower: "optimal",
                higher: "breaking",
                ..
            }
        )),
        "{v:?}"
    );
    assert!(
        v.iter().any(|v| matches!(v, Violation::BreaksWithoutCause { .. })),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|v| matches!(v, Violation::NotSuccessful { answer: "breaking", .. })),
        "{v:?}"
    );
}
