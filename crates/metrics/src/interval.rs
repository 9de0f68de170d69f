//! One interval's worth of measurements from one thread.

use crest_model::hist::{new_histogram, record};
use crest_model::results::Interval;
use crest_model::{EncodedHistogram, Outcome, Sample};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// What one thread measured in one interval. Histograms are allocated on first use, so idle
/// intervals cost nothing.
#[derive(Clone, Debug, Default)]
pub struct IntervalAcc {
    /// Interval number: it covers `[index·interval, (index+1)·interval)` from the run start.
    pub index: u64,
    /// Requests that ended in the interval.
    pub requests: u64,
    /// Of those, the failures.
    pub failures: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Open-model arrivals dropped.
    pub dropped: u64,
    /// Failures by outcome.
    pub outcomes: Vec<(Outcome, u64)>,
    latency: Option<Histogram<u64>>,
    ttfb: Option<Histogram<u64>>,
}

impl IntervalAcc {
    /// An empty accumulator for interval `index`.
    pub fn new(index: u64) -> Self {
        IntervalAcc {
            index,
            ..Default::default()
        }
    }

    pub(crate) fn record(&mut self, s: &Sample) {
        self.requests += 1;
        self.bytes_sent += s.bytes_sent;
        self.bytes_received += s.bytes_received;
        if !s.outcome.is_success() {
            self.failures += 1;
            bump(&mut self.outcomes, s.outcome, 1);
        }
        record(self.latency.get_or_insert_with(new_histogram), s.total);
        if let Some(t) = s.ttfb {
            record(self.ttfb.get_or_insert_with(new_histogram), t);
        }
    }

    /// Adds another thread's accumulator for the same interval.
    pub fn merge(&mut self, other: &IntervalAcc) {
        self.requests += other.requests;
        self.failures += other.failures;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.dropped += other.dropped;
        for &(o, n) in &other.outcomes {
            bump(&mut self.outcomes, o, n);
        }
        merge_opt(&mut self.latency, &other.latency);
        merge_opt(&mut self.ttfb, &other.ttfb);
    }

    /// The latencies recorded, in µs.
    pub fn latency(&self) -> Option<&Histogram<u64>> {
        self.latency.as_ref()
    }

    /// The latency quantile `q` in µs, or 0 when nothing was recorded.
    pub fn latency_quantile(&self, q: f64) -> u64 {
        self.latency.as_ref().map_or(0, |h| h.value_at_quantile(q))
    }

    /// The interval as stored in the results document.
    pub fn to_interval(&self, interval_s: f64) -> Interval {
        let empty = new_histogram();
        Interval {
            t_s: self.index as f64 * interval_s,
            requests: self.requests,
            failures: self.failures,
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            dropped: self.dropped,
            outcomes: self
                .outcomes
                .iter()
                .map(|(o, n)| (o.key(), *n))
                .collect::<BTreeMap<_, _>>(),
            latency: EncodedHistogram::encode(self.latency.as_ref().unwrap_or(&empty)),
            ttfb: EncodedHistogram::encode(self.ttfb.as_ref().unwrap_or(&empty)),
        }
    }
}

pub(crate) fn bump(v: &mut Vec<(Outcome, u64)>, o: Outcome, n: u64) {
    match v.iter_mut().find(|(k, _)| *k == o) {
        Some((_, c)) => *c += n,
        None => v.push((o, n)),
    }
}

pub(crate) fn merge_opt(into: &mut Option<Histogram<u64>>, from: &Option<Histogram<u64>>) {
    if let Some(f) = from {
        // Both sides share crest's bounds, and values beyond them were clamped on record.
        let _ = into.get_or_insert_with(new_histogram).add(f);
    }
}
