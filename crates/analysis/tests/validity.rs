//! Is the result valid? crest's own limits (CPU, schedule, drops) are named with their figures.
#![allow(clippy::unwrap_used)]

use crest_analysis::analyze;
use crest_analysis::validity::ClientLimit;
use crest_model::hist::{new_histogram, record};
use crest_model::results::{ClientStats, OpenStats, Results};
use crest_model::{EncodedHistogram, Outcome};
use crest_testkit::results::{ResultsBuilder, Second};
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
        send_lag: EncodedHistogram::encode(&h),
        service: None,
    }
}

fn client(cpu_s: f64) -> ClientStats {
    ClientStats {
        cpu_s,
        cores: 2,
        threads: 1,
        peak_rss_bytes: 0,
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
        matches!(l[0], ClientLimit::LateMedian { lag_p50_ms, latency_p50_ms }
            if (lag_p50_ms - 2.0).abs() < 0.01 && (latency_p50_ms - 10.0).abs() < 0.1),
        "{l:?}"
    );

    r.open = Some(open(1000, 0, 900));
    assert!(limits(&r).is_empty(), "0.9 ms on 10 ms is kept: {:?}", limits(&r));
}

#[test]
fn a_single_dropped_arrival_is_flagged() {
    let mut r = run();
    r.open = Some(open(10_000, 1, 5));
    let l = limits(&r);
    assert_eq!(l.len(), 1, "{l:?}");
    assert_eq!(
        l[0],
        ClientLimit::Dropped {
            dropped: 1,
            arrivals: 10_000
        }
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
    let mut r = run();
    r.duration_s = 0.004;
    r.client = Some(client(0.0038));
    assert!(limits(&r).is_empty(), "{:?}", limits(&r));
    r.duration_s = 0.05;
    r.client = Some(client(0.2));
    assert!(limits(&r).is_empty(), "{:?}", limits(&r));
}

#[test]
fn the_open_model_is_judged_by_its_send_lag_not_its_cpu() {
    let mut r = run();
    r.client = Some(client(10.0));
    r.open = Some(open(1000, 0, 5));
    assert!(limits(&r).is_empty(), "{:?}", limits(&r));
}
