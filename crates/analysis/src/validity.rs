//! Is the result valid? crest watches itself: when the load generator rather than the target
//! limited a run, the figures describe crest, and the report must say so (seed 004: "the load
//! tool itself hit its limits at 400-500 connections").

use crate::analyze::Analysis;
use crest_model::results::Results;
use crest_model::Outcome;

/// crest's CPU use, as a share of what its engine threads could use, that marks it as the limit.
const CPU_BUSY: f64 = 0.9;
/// Below these, a CPU share is noise: a run that ended at once (every connection refused)
/// divides a few milliseconds of CPU by a few milliseconds of run.
const CPU_MIN_DURATION_S: f64 = 1.0;
const CPU_MIN_S: f64 = 0.1;
/// Open-model send lag above this share of the median latency means crest's own lag is a visible
/// part of every latency (the p50 rule), or that it fell behind the schedule (the p99 rule, with
/// an absolute floor so that a fast target's jitter is not blamed on crest)...
const LAG_SHARE: f64 = 0.1;
const LAG_P99_MS: f64 = 10.0;
/// ...once the lag's median is above the clock's own noise: reading the clock and dispatching
/// an arrival take a few microseconds.
const LAG_P50_FLOOR_MS: f64 = 0.01;

/// The ways crest limited this run, in words; empty when the result is valid.
pub fn client_limits(r: &Results, a: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    let s = &a.summary;
    // In the open model the send lag and the drops below measure directly whether crest kept
    // the schedule, and its CPU share is high by design: the engine spins before each arrival.
    if let (Some(c), None) = (&r.client, &r.open) {
        let usable = c.threads.min(c.cores).max(1) as f64;
        if r.duration_s >= CPU_MIN_DURATION_S && c.cpu_s >= CPU_MIN_S {
            let share = c.cpu_s / r.duration_s / usable;
            if share >= CPU_BUSY {
                out.push(format!(
                    "crest used {:.0}% of the CPU its {} engine thread(s) could use ({:.2} CPU-seconds in {:.2} s): the load generator, not the target, may have set the pace",
                    share * 100.0,
                    c.threads.min(c.cores),
                    c.cpu_s,
                    r.duration_s
                ));
            }
        }
    }
    if let Some(lag) = &s.send_lag_ms {
        let median = s.latency_ms.p50;
        if lag.p50 > LAG_P50_FLOOR_MS && lag.p50 > LAG_SHARE * median {
            out.push(format!(
                "crest sent requests late: the send lag's median was {:.3} ms, {:.0}% of the median latency ({:.3} ms), so crest's own delay is part of every latency",
                lag.p50,
                lag.p50 / median.max(f64::MIN_POSITIVE) * 100.0,
                median
            ));
        } else if lag.p99 > LAG_P99_MS && lag.p99 > LAG_SHARE * median {
            out.push(format!(
                "requests started late: the send lag's p99 was {:.1} ms (median latency {:.1} ms), so crest could not keep the schedule",
                lag.p99, median
            ));
        }
    }
    if let (Some(open), Some(dropped)) = (&r.open, s.dropped) {
        // Any drop means the schedule was not kept: the latencies miss exactly the requests
        // that would have waited longest.
        if dropped > 0 {
            out.push(format!(
                "{dropped} of {} arrivals ({:.2}%) were dropped at the cap on requests in flight (-c / max_in_flight)",
                open.arrivals,
                dropped as f64 / open.arrivals.max(1) as f64 * 100.0
            ));
        }
    }
    let exhausted: u64 = r
        .errors
        .iter()
        .filter(|e| e.outcome == Outcome::LocalExhaustion)
        .map(|e| e.count)
        .sum();
    if exhausted > 0 {
        out.push(format!(
            "{exhausted} requests failed because crest ran out of file descriptors or local ports"
        ));
    }
    if let Some(g) = a
        .segments
        .iter()
        .find(|g| g.littles_law.as_ref().is_some_and(|l| l.flagged))
    {
        if let Some(l) = &g.littles_law {
            out.push(format!(
                "in {} only {:.1} of {} users had a request in flight on average: they waited inside crest",
                g.name, l.in_flight, l.users
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::analyze;
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

    fn limits(r: &Results) -> Vec<String> {
        analyze(r).unwrap().summary.client_bound
    }

    #[test]
    fn a_send_lag_above_a_tenth_of_the_median_latency_is_flagged_with_its_figures() {
        let mut r = run();
        r.open = Some(open(1000, 0, 2000));
        let l = limits(&r);
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(
            l[0].contains("median was 2.000 ms, 20% of the median latency (9.99"),
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
        assert!(l[0].starts_with("1 of 10000 arrivals (0.01%) were dropped"), "{l:?}");
    }

    #[test]
    fn a_busy_cpu_is_flagged_with_figures_that_do_not_round_to_zero() {
        let mut r = run();
        r.client = Some(client(9.5));
        let l = limits(&r);
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(
            l[0].contains("95% of the CPU") && l[0].contains("9.50 CPU-seconds in 10.00 s"),
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
}
