//! Is the result valid? crest watches itself: when the load generator rather than the target
//! limited a run, the figures describe crest, and the report must say so (seed 004: "the load
//! tool itself hit its limits at 400-500 connections").

use crate::analyze::Analysis;
use crest_model::results::Results;
use crest_model::Outcome;

/// crest's CPU use, as a share of what its engine threads could use, that marks it as the limit.
const CPU_BUSY: f64 = 0.9;
/// Open-model send lag (p99) above this many ms, and above this share of the median latency...
const LAG_MS: f64 = 10.0;
const LAG_SHARE: f64 = 0.1;
/// ...or more than this share of arrivals dropped at the cap, marks the schedule as not kept.
const DROPPED_SHARE: f64 = 0.01;

/// The ways crest limited this run, in words; empty when the result is valid.
pub fn client_limits(r: &Results, a: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    let s = &a.summary;
    if let Some(c) = &r.client {
        let usable = c.threads.min(c.cores).max(1) as f64;
        let share = if r.duration_s > 0.0 {
            c.cpu_s / r.duration_s / usable
        } else {
            0.0
        };
        if share >= CPU_BUSY {
            out.push(format!(
                "crest used {:.0}% of the CPU its {} engine thread(s) could use ({:.1} CPU-seconds in {:.1} s): the load generator, not the target, may have set the pace",
                share * 100.0,
                c.threads.min(c.cores),
                c.cpu_s,
                r.duration_s
            ));
        }
    }
    if let Some(lag) = &s.send_lag_ms {
        if lag.p99 > LAG_MS && lag.p99 > LAG_SHARE * s.latency_ms.p50 {
            out.push(format!(
                "requests started late: the send lag's p99 was {:.1} ms (median latency {:.1} ms), so crest could not keep the schedule",
                lag.p99, s.latency_ms.p50
            ));
        }
    }
    if let (Some(open), Some(dropped)) = (&r.open, s.dropped) {
        if open.arrivals > 0 && dropped as f64 > DROPPED_SHARE * open.arrivals as f64 {
            out.push(format!(
                "{dropped} of {} arrivals ({:.1}%) were dropped at the cap on requests in flight (-c / max_in_flight)",
                open.arrivals,
                dropped as f64 / open.arrivals as f64 * 100.0
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
