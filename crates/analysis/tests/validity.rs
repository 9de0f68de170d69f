//! Is the result valid? crest's own limits (CPU, schedule, drops) are named with their figures.
#![allow(clippy::unwrap_used)]

use crest_analysis::analyze;
use crest_analysis::validity::ClientLimit;
use crest_model::hist::{new_histogram, record};
use crest_model::plan::OnCap;
use crest_model::results::{ClientStats, OpenStats, Results};
use crest_model::{EncodedHistogram, Outcome};
use crest_testkit::results::{merged_fixture, worker_record, ResultsBuilder, Second};
use std::time::Duration;

/// Ten seconds of one user busy all the time: 100 requests a second of 10 ms.
fn run() -> Results {
    ResultsBuilder::new(Outcome::Status(500), true)
        .segment(1, 10, |_| Second::ok(100, 10.0))
        .build()
}

fn open(arrivals: u64, dropped: u64, lag_us: u64) -> OpenStats {
    let mut h = new_histogram();
    for _ in 0..100 {
        record(&mut h, Duration::from_micros(lag_us));
    }
    OpenStats {
        target_rps: 100.0,
        arrivals,
        dropped,
        behind: 0,
        queued: 0,
        send_lag: EncodedHistogram::encode(&h),
        service: None,
    }
}

fn client(cpu_s: f64) -> ClientStats {
    ClientStats {
        cpu_quota_cores: None,
        cpu_s,
        cores: 2,
        threads: 1,
        peak_rss_bytes: 0,
        core_wait_s: None,
    }
}

fn limits(r: &Results) -> Vec<ClientLimit> {
    analyze(r).unwrap().summary.client_bound
}

#[test]
fn a_send_lag_above_a_tenth_of_the_median_latency_is_flagged_with_its_figures() {
    let mut r = run();
    r.open = Some(open(1000, 0, 2000));
    let l = limits(&r);
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(
        matches!(l[0], ClientLimit::LateMedian { lag_p50_ms, latency_p50_ms, core_wait: None }
            if (lag_p50_ms - 2.0).abs() < 0.01 && (latency_p50_ms - 10.0).abs() < 0.1),
        "{l:?}"
    );
    // Where the kernel told how long the engine waited for a core, the limit carries it, as a
    // share of the time the engine threads could have run.
    let active_s = r.active_s();
    r.client = Some(ClientStats {
        threads: 2,
        core_wait_s: Some(0.5),
        ..client(0.5)
    });
    let l = limits(&r);
    assert!(
        matches!(l[..], [ClientLimit::LateMedian { core_wait: Some(w), .. }]
            if (w.ms - 500.0).abs() < 1e-9 && (w.share - 0.5 / (2.0 * active_s)).abs() < 1e-12),
        "{l:?}"
    );

    r.open = Some(open(1000, 0, 900));
    assert!(limits(&r).is_empty(), "0.9 ms on 10 ms is kept: {:?}", limits(&r));
}

#[test]
fn drops_from_a_tenth_of_a_percent_of_arrivals_are_flagged_and_fewer_are_not() {
    let mut r = run();
    // Issue 20: 3 drops in 15,000 arrivals were called a limit.
    r.open = Some(open(15_000, 3, 5));
    assert!(limits(&r).is_empty(), "{:?}", limits(&r));
    r.open = Some(open(10_000, 10, 5));
    let l = limits(&r);
    assert_eq!(
        l,
        [ClientLimit::Dropped {
            dropped: 10,
            behind: 0,
            arrivals: 10_000
        }]
    );
}

/// Issue 33: a closed-model run whose engine threads waited 6.2 s of 7.4 s for a core was called
/// valid. The wait is judged in either model, as a share of the core-time the threads could have
/// had, less what more threads than cores wait for one another.
#[test]
fn an_engine_that_waited_a_quarter_of_its_time_for_a_core_is_flagged_in_the_closed_model() {
    let mut r = run();
    let active_s = r.active_s();
    let waiting = |threads, cores, waited_s| ClientStats {
        threads,
        cores,
        core_wait_s: Some(waited_s),
        ..client(0.5)
    };
    r.client = Some(waiting(2, 2, 0.3 * 2.0 * active_s));
    let l = limits(&r);
    assert!(
        matches!(l[..], [ClientLimit::CoreStarved { waited_s, share, threads: 2, cores: 2, duration_s }]
            if waited_s == 0.6 * active_s && (share - 0.3).abs() < 1e-9 && duration_s == active_s),
        "{l:?}"
    );
    r.client = Some(waiting(2, 2, 0.2 * 2.0 * active_s));
    assert!(limits(&r).is_empty(), "a fifth of the time: {:?}", limits(&r));
    // Six threads on two cores wait for one another up to four threads' whole time: only the
    // wait beyond it counts, against the two cores' time.
    r.client = Some(waiting(6, 2, (4.0 + 0.2 * 2.0) * active_s));
    assert!(limits(&r).is_empty(), "{:?}", limits(&r));
    r.client = Some(waiting(6, 2, (4.0 + 0.3 * 2.0) * active_s));
    let l = limits(&r);
    assert!(
        matches!(l[..], [ClientLimit::CoreStarved { share, threads: 6, .. }] if (share - 0.3).abs() < 1e-9),
        "{l:?}"
    );
    // In the open model too, beside the late send it explains.
    r.client = Some(waiting(1, 2, 0.5 * active_s));
    r.open = Some(open(1000, 0, 2000));
    let l = limits(&r);
    assert!(
        matches!(l[..], [ClientLimit::CoreStarved { threads: 1, .. }, ClientLimit::LateMedian { core_wait: Some(w), .. }]
            if (w.share - 0.5).abs() < 1e-9),
        "{l:?}"
    );
}

/// Issue 33: with `on_cap: queue` the wait at the cap is the target's queue, in the latency and
/// the send lag, and the arrivals still waiting at the end are its too: neither is crest's limit
/// once enough arrivals waited that the percentile judged can be theirs.
#[test]
fn a_queue_at_the_cap_is_not_called_a_client_limit_but_a_late_crest_still_is() {
    let mut r = run();
    r.config.on_cap = Some(OnCap::Queue);
    // Every arrival waited, 2 ms on a median of 10 ms, and 40 were still waiting at the end.
    r.open = Some(OpenStats {
        queued: 960,
        behind: 40,
        ..open(1000, 40, 2000)
    });
    assert!(limits(&r).is_empty(), "{:?}", limits(&r));
    let q = analyze(&r).unwrap().summary.queued.unwrap();
    assert_eq!(
        (q.cap, q.waited, q.arrivals, q.left),
        (r.config.concurrency, 960, 1000, 40)
    );
    // The same figures had the arrivals been dropped at the cap: crest's limits.
    r.config.on_cap = Some(OnCap::Drop);
    let l = limits(&r);
    assert!(
        matches!(
            l[..],
            [
                ClientLimit::LateMedian { .. },
                ClientLimit::Dropped {
                    dropped: 40,
                    behind: 40,
                    ..
                }
            ]
        ),
        "{l:?}"
    );
    assert!(analyze(&r).unwrap().summary.queued.is_none());
    // Five of a thousand queued cannot make the median: a late median is crest's.
    r.config.on_cap = Some(OnCap::Queue);
    r.open = Some(OpenStats {
        queued: 5,
        ..open(1000, 0, 2000)
    });
    assert!(
        matches!(limits(&r)[..], [ClientLimit::LateMedian { .. }]),
        "{:?}",
        limits(&r)
    );
}

#[test]
fn a_busy_cpu_is_flagged_with_figures_that_do_not_round_to_zero() {
    let mut r = run();
    r.client = Some(client(9.5));
    let l = limits(&r);
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(
        matches!(l[0], ClientLimit::BusyCpu { share, threads: 1, cpu_s, duration_s }
            if (share - 0.95).abs() < 1e-9 && cpu_s == 9.5 && duration_s == 10.0),
        "{l:?}"
    );
}

#[test]
fn no_cpu_share_from_a_run_too_short_or_too_idle_to_measure() {
    // Every connection refused: the run ended within milliseconds.
    let mut r = lasting(0.004);
    r.client = Some(client(0.0038));
    assert!(limits(&r).is_empty(), "{:?}", limits(&r));
    let mut r = lasting(0.05);
    r.client = Some(client(0.2));
    assert!(limits(&r).is_empty(), "{:?}", limits(&r));
}

/// A run of one step of a few requests that lasted `secs`, its step and interval as long.
fn lasting(secs: f64) -> Results {
    let mut r = ResultsBuilder::new(Outcome::Status(500), true)
        .segment(1, 1, |_| Second::ok(4, 1.0))
        .build();
    r.duration_s = secs;
    r.segments[0].end_s = secs;
    r
}

#[test]
fn the_open_model_is_judged_by_its_send_lag_not_its_cpu() {
    let mut r = run();
    r.client = Some(client(10.0));
    r.open = Some(open(1000, 0, 5));
    assert!(limits(&r).is_empty(), "{:?}", limits(&r));
}

#[test]
fn nothing_is_blamed_on_crest_in_a_run_in_which_nothing_succeeded() {
    // Every connection refused, for ten seconds: crest spins through failed connects.
    let mut r = ResultsBuilder::new(Outcome::ConnectRefused, true)
        .segment(10, 10, |_| Second {
            ok: 0,
            latency_ms: 0.0,
            failed: 5_000,
            failure_ms: 0.1,
        })
        .build();
    r.client = Some(client(9.3));
    assert!(limits(&r).is_empty(), "{:?}", limits(&r));
    // The same CPU with successes is a limit.
    let mut ok = run();
    ok.client = Some(client(9.3));
    assert_eq!(limits(&ok).len(), 1);
}

/// Ten users, 100 req/s of 10 ms: one request in flight on average, nine users idle.
fn idle_users() -> Results {
    ResultsBuilder::new(Outcome::Status(503), true)
        .segment(10, 10, |_| Second::ok(100, 10.0))
        .build()
}

#[test]
fn idle_users_without_a_request_count_to_explain_them_are_flagged_with_their_figures() {
    let l = limits(&idle_users());
    assert!(
        matches!(&l[..], [ClientLimit::WaitingUsers { in_flight, users: 10, throughput_rps, mean_ms, .. }]
            if (in_flight - 1.0).abs() < 0.05 && (throughput_rps - 100.0).abs() < 0.5 && (mean_ms - 10.0).abs() < 0.2),
        "{l:?}"
    );
}

#[test]
fn users_idle_because_their_requests_ran_out_are_not_blamed_on_crest() {
    // Issue 20: "only 107.7 of 200 users had a request in flight" when `-n` ran out.
    let mut shared = idle_users();
    shared.config.requests = Some(1_000);
    assert!(limits(&shared).is_empty(), "{:?}", limits(&shared));
    let mut per_user = idle_users();
    per_user.config.iterations = Some(100);
    assert!(limits(&per_user).is_empty(), "{:?}", limits(&per_user));
    // A step too thin to judge is not judged either.
    let thin = ResultsBuilder::new(Outcome::Status(503), true)
        .segment(10, 1, |_| Second::ok(15, 10.0))
        .build();
    assert!(limits(&thin).is_empty(), "{:?}", limits(&thin));
}

/// A merged open-model run one worker of which sent its half late: that worker is
/// client-bound by the rule a run's send lag is judged by, and the run with it; with both
/// workers on time, both and the run are valid.
#[test]
fn a_worker_late_on_its_own_schedule_is_client_bound_and_so_is_the_run() {
    use crest_analysis::workers::WorkerVerdict;
    let merged = |lags: [u64; 2]| {
        let mut r = run();
        let mut run_lag = new_histogram();
        for lag in lags {
            for _ in 0..500 {
                record(&mut run_lag, Duration::from_micros(lag));
            }
        }
        r.open = Some(OpenStats {
            send_lag: EncodedHistogram::encode(&run_lag),
            ..open(1000, 0, 0)
        });
        r.workers = vec![
            worker_record(0, 500, Some(lags[0]), 2.0),
            worker_record(1, 500, Some(lags[1]), 9.9),
        ];
        analyze(&r).unwrap()
    };
    let a = merged([500, 14_000]);
    let w = &a.summary.workers;
    assert_eq!(w.len(), 2);
    assert_eq!(w[0].verdict, WorkerVerdict::Valid, "{w:?}");
    assert!(w[0].limits.is_empty(), "{w:?}");
    assert_eq!(w[0].per_s, 50.0);
    assert_eq!(w[0].cpu_share, Some(0.2));
    assert_eq!(w[1].verdict, WorkerVerdict::ClientBound, "{w:?}");
    // The open model's CPU share (99%) is shown, not judged (the engine spins before each
    // arrival), as for a run: the lag alone makes it client-bound.
    assert!(
        matches!(&w[1].limits[..], [ClientLimit::LateMedian { lag_p50_ms, latency_p50_ms, .. }]
            if (lag_p50_ms - 14.0).abs() < 0.02 && (latency_p50_ms - 10.0).abs() < 0.1),
        "{w:?}"
    );
    assert!(
        a.summary
            .client_bound
            .iter()
            .any(|l| matches!(l, ClientLimit::Worker { index: 1, limits } if *limits == w[1].limits)),
        "{:?}",
        a.summary.client_bound
    );
    assert!(
        a.findings.iter().any(|f| matches!(f,
            crest_analysis::findings::Finding::ClientBound(l) if l.iter().any(|l| matches!(l, ClientLimit::Worker { index: 1, .. })))),
        "{:?}",
        a.findings
    );

    let a = merged([500, 600]);
    assert!(a.summary.workers.iter().all(|w| w.verdict == WorkerVerdict::Valid));
    assert!(a.summary.client_bound.is_empty(), "{:?}", a.summary.client_bound);
}

/// A closed-model worker whose generator was busy is judged by its CPU, as a run is, though
/// the merged run has no CPU figure of its own; a lost worker is lost.
#[test]
fn a_closed_model_worker_is_judged_by_its_cpu_and_a_lost_one_is_lost() {
    use crest_analysis::workers::WorkerVerdict;
    let r = merged_fixture();
    let a = analyze(&r).unwrap();
    let w = &a.summary.workers;
    assert_eq!(
        w.iter().map(|w| w.verdict).collect::<Vec<_>>(),
        [WorkerVerdict::Valid, WorkerVerdict::ClientBound, WorkerVerdict::Lost]
    );
    assert!(
        matches!(&w[1].limits[..], [ClientLimit::BusyCpu { share, threads: 1, .. }] if (share - 0.97).abs() < 1e-9),
        "{w:?}"
    );
    assert_eq!(w[2].per_s, 50.0, "a lost worker's rate is over the time it sent");
    assert_eq!(w[2].dropped, None, "no drops in the closed model");
    assert_eq!(
        w.iter().map(|w| w.requests).sum::<u64>(),
        a.summary.requests,
        "the rows add up to the run"
    );
    assert!(
        matches!(&a.summary.client_bound[..], [ClientLimit::Worker { index: 1, .. }]),
        "{:?}",
        a.summary.client_bound
    );

    // The same worker at 30% of its CPU: nothing limited the run.
    let mut r = merged_fixture();
    r.workers[1] = worker_record(1, 400, None, 3.0);
    let a = analyze(&r).unwrap();
    assert_eq!(a.summary.workers[1].verdict, WorkerVerdict::Valid);
    assert!(a.summary.client_bound.is_empty(), "{:?}", a.summary.client_bound);
}
