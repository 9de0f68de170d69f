//! The per-thread sink.

use crate::interval::{merge_opt, IntervalAcc};
use crest_model::hist::{new_histogram, record};
use crest_model::results::{ErrorClass, Stat};
use crest_model::{EncodedHistogram, NameId, Outcome, Sample, Sink};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::mpsc::Sender;
use std::time::Duration;

/// Longest example error message kept; error texts can embed whole response bodies.
const MAX_EXAMPLE: usize = 300;

/// Totals for one request name and outcome.
#[derive(Clone, Debug)]
struct StatAcc {
    segment: u32,
    name: NameId,
    outcome: Outcome,
    count: u64,
    bytes_sent: u64,
    bytes_received: u64,
    latency: Histogram<u64>,
    ttfb: Option<Histogram<u64>>,
    connect: Option<Histogram<u64>>,
}

/// Run totals, mergeable across threads.
#[derive(Clone, Debug)]
pub struct Totals {
    stats: Vec<StatAcc>,
    status_codes: BTreeMap<u16, u64>,
    errors: Vec<(Outcome, u64, String)>,
    send_lag: Histogram<u64>,
    service: Histogram<u64>,
    dropped: u64,
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            stats: Vec::new(),
            status_codes: BTreeMap::new(),
            errors: Vec::new(),
            send_lag: new_histogram(),
            service: new_histogram(),
            dropped: 0,
        }
    }
}

impl Totals {
    /// Adds another thread's totals.
    pub fn merge(&mut self, other: &Totals) {
        for o in &other.stats {
            let s = self.stat(o.segment, o.name, o.outcome);
            s.count += o.count;
            s.bytes_sent += o.bytes_sent;
            s.bytes_received += o.bytes_received;
            let _ = s.latency.add(&o.latency);
            merge_opt(&mut s.ttfb, &o.ttfb);
            merge_opt(&mut s.connect, &o.connect);
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
        let _ = self.send_lag.add(&other.send_lag);
        let _ = self.service.add(&other.service);
        self.dropped += other.dropped;
    }

    fn stat(&mut self, segment: u32, name: NameId, outcome: Outcome) -> &mut StatAcc {
        // A linear scan: a run has a handful of (name, outcome) pairs, and a Vec keeps the hot
        // path free of hashing.
        let i = match self
            .stats
            .iter()
            .position(|s| s.name == name && s.outcome == outcome && s.segment == segment)
        {
            Some(i) => i,
            None => {
                self.stats.push(StatAcc {
                    segment,
                    name,
                    outcome,
                    count: 0,
                    bytes_sent: 0,
                    bytes_received: 0,
                    latency: new_histogram(),
                    ttfb: None,
                    connect: None,
                });
                self.stats.len() - 1
            }
        };
        &mut self.stats[i]
    }

    /// Requests recorded.
    pub fn requests(&self) -> u64 {
        self.stats.iter().map(|s| s.count).sum()
    }

    /// Open-model arrivals dropped at the concurrency cap.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Per segment, name and outcome, for the results document, in that order.
    pub fn stats(&self) -> Vec<Stat> {
        let mut out: Vec<Stat> = self
            .stats
            .iter()
            .map(|s| Stat {
                segment: s.segment,
                name: s.name,
                outcome: s.outcome,
                count: s.count,
                bytes_sent: s.bytes_sent,
                bytes_received: s.bytes_received,
                latency: EncodedHistogram::encode(&s.latency),
                ttfb: s.ttfb.as_ref().map(EncodedHistogram::encode),
                connect: s.connect.as_ref().map(EncodedHistogram::encode),
            })
            .collect();
        out.sort_by_key(|s| (s.segment, s.name, s.outcome));
        out
    }

    /// Responses per status code.
    pub fn status_codes(&self) -> BTreeMap<String, u64> {
        self.status_codes.iter().map(|(c, n)| (c.to_string(), *n)).collect()
    }

    /// Failures per outcome, most frequent first.
    pub fn errors(&self) -> Vec<ErrorClass> {
        let mut out: Vec<ErrorClass> = self
            .errors
            .iter()
            .map(|(o, n, e)| ErrorClass {
                outcome: *o,
                count: *n,
                example: e.clone(),
            })
            .collect();
        out.sort_by(|a, b| b.count.cmp(&a.count).then(a.outcome.cmp(&b.outcome)));
        out
    }

    /// How late open-model requests started, in µs.
    pub fn send_lag(&self) -> &Histogram<u64> {
        &self.send_lag
    }

    /// Open-model service times (total less send lag), in µs.
    pub fn service(&self) -> &Histogram<u64> {
        &self.service
    }
}

/// One engine thread's sink: run totals plus the interval in progress.
#[derive(Debug)]
pub struct Recorder {
    interval: Duration,
    open_model: bool,
    totals: Totals,
    current: IntervalAcc,
    out: Sender<IntervalAcc>,
    /// Indexed by name: true for a sub-measure (a statement inside a transaction), which is kept
    /// under its own name only, so every total counts each unit of work once.
    parts: Vec<bool>,
}

impl Recorder {
    /// A recorder that sends each closed interval to `out`. `open_model` enables send-lag records.
    pub fn new(interval: Duration, open_model: bool, out: Sender<IntervalAcc>) -> Self {
        Recorder {
            interval,
            open_model,
            totals: Totals::default(),
            current: IntervalAcc::new(0),
            out,
            parts: Vec::new(),
        }
    }

    /// Marks the names that are parts of another (see [`crest_model::plan::Plan::part_of`]).
    pub fn with_parts(mut self, part_of: &[Option<u32>]) -> Self {
        self.parts = part_of.iter().map(Option::is_some).collect();
        self
    }

    /// Closes the interval in progress and returns the totals. Call once, when the thread ends.
    pub fn finish(mut self) -> Totals {
        let last = std::mem::replace(&mut self.current, IntervalAcc::new(0));
        // The receiver outlives the engine; if it is gone the run is being torn down anyway.
        let _ = self.out.send(last);
        self.totals
    }

    fn index_of(&self, at: Duration) -> u64 {
        (at.as_nanos() / self.interval.as_nanos().max(1)) as u64
    }

    /// Moves to the interval containing `at`, sending the ones that closed (idle ones included,
    /// so the series knows every thread has passed them).
    fn advance(&mut self, at: Duration) {
        let idx = self.index_of(at);
        while self.current.index < idx {
            let next = IntervalAcc::new(self.current.index + 1);
            let done = std::mem::replace(&mut self.current, next);
            let _ = self.out.send(done);
        }
    }
}

impl Sink for Recorder {
    fn record(&mut self, s: &Sample, detail: Option<&dyn fmt::Display>) {
        // Samples that end a hair before a tick already closed their interval count in the
        // current one; the alternative (reopening a sent interval) would break merging.
        self.advance(s.end());
        let t = &mut self.totals;
        if self.parts.get(s.name as usize).copied().unwrap_or(false) {
            let stat = t.stat(s.segment, s.name, s.outcome);
            stat.count += 1;
            record(&mut stat.latency, s.total);
            return;
        }
        self.current.record(s);
        if let Some(code) = s.status {
            *t.status_codes.entry(code).or_default() += 1;
        }
        if !s.outcome.is_success() {
            match t.errors.iter_mut().find(|(k, _, _)| *k == s.outcome) {
                Some((_, c, _)) => *c += 1,
                None => {
                    let mut example = match detail {
                        Some(d) => d.to_string(),
                        None => s.outcome.describe(),
                    };
                    truncate(&mut example, MAX_EXAMPLE);
                    t.errors.push((s.outcome, 1, example));
                }
            }
        }
        if self.open_model {
            record(&mut t.send_lag, s.send_lag);
            record(&mut t.service, s.total.saturating_sub(s.send_lag));
        }
        let stat = t.stat(s.segment, s.name, s.outcome);
        stat.count += 1;
        stat.bytes_sent += s.bytes_sent;
        stat.bytes_received += s.bytes_received;
        record(&mut stat.latency, s.total);
        if let Some(v) = s.ttfb {
            record(stat.ttfb.get_or_insert_with(new_histogram), v);
        }
        if let Some(v) = s.connect {
            record(stat.connect.get_or_insert_with(new_histogram), v);
        }
    }

    fn dropped(&mut self, at: Duration) {
        self.advance(at);
        self.current.dropped += 1;
        self.totals.dropped += 1;
    }

    fn tick(&mut self, now: Duration) {
        self.advance(now);
    }
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
