//! One interval's worth of measurements from one thread, or from all of them once merged.

use crest_model::hist::{add_opt, new_histogram, record, Hist};
use crest_model::journal::IntervalRecord;
use crest_model::results::{
    ErrorClass, FailedRequest, Interval, IntervalIterations, IterationStat, IterationSum, RequestPoint, Stat, StatSum,
    FAILED_KEPT,
};
use crest_model::{EncodedHistogram, IterationSample, NameId, Outcome, Sample};
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, HashMap};

/// Triples an interval scans for before it keeps an index of them.
const SCAN: usize = 32;

/// Longest example error message kept; error texts can embed whole response bodies.
const MAX_EXAMPLE: usize = 300;

/// Totals for one step, name and outcome within the interval.
#[derive(Clone, Debug)]
struct StatAcc {
    sum: StatSum,
    /// A sub-measure (a statement inside a transaction): in no interval figure.
    part: bool,
}

/// What was measured in one interval. Each request is recorded once, into the totals of its
/// step, name and outcome; the interval's own latency figures are merged from those when it
/// closes, so the hot path records each latency into one histogram only, and idle intervals
/// cost nothing.
#[derive(Clone, Debug, Default)]
pub struct IntervalAcc {
    /// Interval number: it covers `[index·interval, (index+1)·interval)` from the run start.
    pub index: u64,
    /// Requests that ended in the interval (units of work; parts are not counted).
    pub requests: u64,
    /// Of those, the failures.
    pub failures: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Messages sent on message streams.
    pub messages_sent: u64,
    /// Messages read from message streams.
    pub messages_received: u64,
    /// Open-model arrivals dropped.
    pub dropped: u64,
    /// Failures by outcome.
    pub outcomes: Vec<(Outcome, u64)>,
    stats: Vec<StatAcc>,
    /// Where each (step, name, outcome) is in `stats`, kept once there are more than [`SCAN`]
    /// of them: a scan of thousands of names for every request (and for every entry of a
    /// thread's second when the seconds are merged) took a run of 10,000 names to a quarter of
    /// its rate.
    by_key: HashMap<(u32, NameId, Outcome), usize>,
    iterations: Vec<IterationSum>,
    status_codes: BTreeMap<u16, u64>,
    errors: Vec<(Outcome, u64, String)>,
    send_lag: Option<Histogram<u64>>,
    service: Option<Histogram<u64>>,
    /// The interval's latencies, merged from its stats on first use.
    latency: Option<Histogram<u64>>,
    /// Its first failed requests, one by one; bounded, so an error storm costs nothing more.
    failed: Vec<FailedRequest>,
    /// The requests that ended in it, one by one, as far as the recorder keeps them (see
    /// [`crate::Recorder::logging`]): for the request log and a small run's points. Not merged
    /// by [`IntervalAcc::merge`], which copies; [`crate::Series`] moves them.
    pub rows: Vec<crate::Row>,
}

impl IntervalAcc {
    /// An empty accumulator for interval `index`.
    pub fn new(index: u64) -> Self {
        IntervalAcc {
            index,
            ..Default::default()
        }
    }

    fn stat(&mut self, segment: u32, name: NameId, outcome: Outcome, part: bool) -> &mut StatSum {
        // A linear scan while an interval has a handful of (step, name, outcome) triples, as
        // most have: a Vec keeps the hot path free of hashing.
        let key = (segment, name, outcome);
        let found = if self.stats.len() <= SCAN {
            self.stats
                .iter()
                .position(|s| s.sum.name == name && s.sum.outcome == outcome && s.sum.segment == segment)
        } else {
            self.by_key.get(&key).copied()
        };
        let i = match found {
            Some(i) => i,
            None => {
                self.stats.push(StatAcc {
                    sum: StatSum::new(segment, name, outcome),
                    part,
                });
                let i = self.stats.len() - 1;
                if self.stats.len() > SCAN {
                    if self.by_key.is_empty() {
                        self.by_key = (self.stats.iter().enumerate())
                            .map(|(i, s)| ((s.sum.segment, s.sum.name, s.sum.outcome), i))
                            .collect();
                    } else {
                        self.by_key.insert(key, i);
                    }
                }
                i
            }
        };
        &mut self.stats[i].sum
    }

    fn iteration(&mut self, segment: u32, flow: u32) -> &mut IterationSum {
        let i = match self
            .iterations
            .iter()
            .position(|s| s.flow == flow && s.segment == segment)
        {
            Some(i) => i,
            None => {
                self.iterations.push(IterationSum::new(segment, flow));
                self.iterations.len() - 1
            }
        };
        &mut self.iterations[i]
    }

    /// Records that an iteration of `flow` started in step `segment`.
    pub(crate) fn iteration_started(&mut self, flow: u32, segment: u32) {
        self.iteration(segment, flow).started += 1;
    }

    /// Records an iteration that ended, passed or failed.
    pub(crate) fn iteration_ended(&mut self, it: &IterationSample) {
        self.iteration(it.segment, it.flow).record(it);
    }

    /// Records one request. A part (a statement inside a transaction) goes to its own totals
    /// only; its transaction is the unit of work counted everywhere else.
    pub(crate) fn record(&mut self, s: &Sample, part: bool, open_model: bool, detail: Option<&dyn std::fmt::Display>) {
        let stat = self.stat(s.segment, s.name, s.outcome, part);
        stat.count += 1;
        stat.latency.record(s.total);
        if part {
            return;
        }
        stat.bytes_sent += s.bytes_sent;
        stat.bytes_received += s.bytes_received;
        stat.messages_sent += s.messages_sent;
        stat.messages_received += s.messages_received;
        if let Some(v) = s.ttfb {
            stat.ttfb.get_or_insert_with(Hist::new).record(v);
        }
        if let Some(v) = s.connect {
            stat.connect.get_or_insert_with(Hist::new).record(v);
        }
        if let Some(v) = s.dns {
            stat.dns.get_or_insert_with(Hist::new).record(v);
        }
        // A size is of what a response carried; a statement or a request that received nothing
        // (refused, SQL, whose rows are no bytes) has none, rather than the histogram's 1 B.
        if s.bytes_received > 0 {
            stat.size.get_or_insert_with(Hist::new).record_bytes(s.bytes_received);
        }
        self.requests += 1;
        self.bytes_sent += s.bytes_sent;
        self.bytes_received += s.bytes_received;
        self.messages_sent += s.messages_sent;
        self.messages_received += s.messages_received;
        if let Some(code) = s.status {
            *self.status_codes.entry(code).or_default() += 1;
        }
        if !s.outcome.is_success() {
            self.failures += 1;
            bump(&mut self.outcomes, s.outcome, 1);
            if self.failed.len() < FAILED_KEPT {
                let detail = message(s, detail);
                self.failed.push(FailedRequest {
                    at_s: s.end().as_secs_f64(),
                    name: s.name,
                    outcome: s.outcome,
                    status: s.status,
                    took_ms: s.total.as_secs_f64() * 1000.0,
                    detail,
                });
            }
            match self.errors.iter_mut().find(|(k, _, _)| *k == s.outcome) {
                Some((_, c, _)) => *c += 1,
                None => self.errors.push((s.outcome, 1, message(s, detail))),
            }
        }
        if open_model {
            record(self.send_lag.get_or_insert_with(new_histogram), s.send_lag);
            record(
                self.service.get_or_insert_with(new_histogram),
                s.total.saturating_sub(s.send_lag),
            );
        }
    }

    /// Adds another thread's accumulator for the same interval.
    pub fn merge(&mut self, other: &IntervalAcc) {
        self.requests += other.requests;
        self.failures += other.failures;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.messages_sent += other.messages_sent;
        self.messages_received += other.messages_received;
        self.dropped += other.dropped;
        for &(o, n) in &other.outcomes {
            bump(&mut self.outcomes, o, n);
        }
        for o in &other.stats {
            self.stat(o.sum.segment, o.sum.name, o.sum.outcome, o.part).add(&o.sum);
        }
        for o in &other.iterations {
            self.iteration(o.segment, o.flow).add(o);
        }
        for (code, n) in &other.status_codes {
            *self.status_codes.entry(*code).or_default() += n;
        }
        for (o, n, example) in &other.errors {
            match self.errors.iter_mut().find(|(k, _, _)| k == o) {
                Some((_, c, _)) => *c += n,
                None => self.errors.push((*o, *n, example.clone())),
            }
        }
        let room = FAILED_KEPT.saturating_sub(self.failed.len());
        self.failed.extend(other.failed.iter().take(room).cloned());
        add_opt(&mut self.send_lag, other.send_lag.as_ref());
        add_opt(&mut self.service, other.service.as_ref());
        self.latency = None;
    }

    /// Iterations that completed (passed) in the interval.
    pub fn iterations_completed(&self) -> u64 {
        self.iterations.iter().map(|s| s.completed).sum()
    }

    /// The latencies of the units of work that ended in the interval, in µs.
    pub fn latency(&mut self) -> Option<&Histogram<u64>> {
        if self.latency.is_none() && self.requests > 0 {
            self.latency = self.merged(|s| Some(&s.latency));
        }
        self.latency.as_ref()
    }

    /// The latency quantile `q` in µs, or 0 when nothing was recorded.
    pub fn latency_quantile(&mut self, q: f64) -> u64 {
        self.latency().map_or(0, |h| h.value_at_quantile(q))
    }

    fn merged(&self, pick: impl Fn(&StatSum) -> Option<&Hist>) -> Option<Histogram<u64>> {
        let mut out: Option<Histogram<u64>> = None;
        for h in self.stats.iter().filter(|s| !s.part).map(|s| &s.sum).filter_map(pick) {
            h.add_into(out.get_or_insert_with(new_histogram));
        }
        out
    }

    /// Requests that ended in the interval, statements inside transactions included: what
    /// [`crest_model::results::POINTS_KEPT`] counts.
    pub fn samples(&self) -> u64 {
        self.stats.iter().map(|s| s.sum.count).sum()
    }

    /// Its requests one by one, as far as they were kept, in the order they were meant to start
    /// (the run journals them while it has made few enough for the results to keep them).
    pub fn points(&self) -> Vec<RequestPoint> {
        let mut p: Vec<RequestPoint> = self
            .rows
            .iter()
            .map(|r| RequestPoint(r.intended_us, r.total_us, r.name, r.outcome))
            .collect();
        p.sort_unstable();
        p
    }

    /// The interval as a journal record, with the figures the results document keeps of it.
    pub fn to_record(&self, interval_s: f64) -> IntervalRecord {
        let empty = new_histogram();
        let latency = self.merged(|s| Some(&s.latency));
        let ttfb = self.merged(|s| s.ttfb.as_ref());
        let mut stats: Vec<Stat> = self.stats.iter().map(|s| s.sum.to_stat()).collect();
        stats.sort_by_key(|s| (s.segment, s.name, s.outcome));
        let mut iterations: Vec<IterationStat> = self.iterations.iter().map(IterationSum::to_stat).collect();
        iterations.sort_by_key(|s| (s.segment, s.flow));
        let interval_iterations = (!self.iterations.is_empty()).then(|| {
            let mut duration = new_histogram();
            for s in &self.iterations {
                s.add_durations_into(&mut duration);
            }
            IntervalIterations {
                started: self.iterations.iter().map(|s| s.started).sum(),
                completed: self.iterations.iter().map(|s| s.completed).sum(),
                failed: self.iterations.iter().map(|s| s.failed).sum(),
                duration: EncodedHistogram::encode(&duration),
            }
        });
        IntervalRecord {
            interval: Interval {
                t_s: self.index as f64 * interval_s,
                requests: self.requests,
                failures: self.failures,
                bytes_sent: self.bytes_sent,
                bytes_received: self.bytes_received,
                messages_sent: self.messages_sent,
                messages_received: self.messages_received,
                dropped: self.dropped,
                outcomes: self
                    .outcomes
                    .iter()
                    .map(|(o, n)| (o.key(), *n))
                    .collect::<BTreeMap<_, _>>(),
                latency: EncodedHistogram::encode(latency.as_ref().unwrap_or(&empty)),
                ttfb: EncodedHistogram::encode(ttfb.as_ref().unwrap_or(&empty)),
                iterations: interval_iterations,
            },
            stats,
            iterations,
            status_codes: self.status_codes.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
            errors: self
                .errors
                .iter()
                .map(|(o, n, e)| ErrorClass {
                    outcome: *o,
                    count: *n,
                    example: e.clone(),
                })
                .collect(),
            send_lag: self.send_lag.as_ref().map(EncodedHistogram::encode),
            service: self.service.as_ref().map(EncodedHistogram::encode),
            failed: self.failed.clone(),
        }
    }
}

pub(crate) fn bump(v: &mut Vec<(Outcome, u64)>, o: Outcome, n: u64) {
    match v.iter_mut().find(|(k, _)| *k == o) {
        Some((_, c)) => *c += n,
        None => v.push((o, n)),
    }
}

/// What went wrong with a failed request, as examples and the list of failures show it.
fn message(s: &Sample, detail: Option<&dyn std::fmt::Display>) -> String {
    // Messages quote what servers sent; a backtick in one could open a code span in a Markdown
    // report around text of crest's own.
    let mut m = match detail {
        Some(d) => d.to_string().replace('`', "'"),
        None => s.outcome.describe(),
    };
    truncate(&mut m, MAX_EXAMPLE);
    m
}

fn truncate(s: &mut String, max: usize) {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
}
