//! The per-thread sink.

use crate::interval::IntervalAcc;
use crest_model::{IterationSample, Sample, Sink};
use std::fmt;
use std::sync::mpsc::Sender;
use std::time::Duration;

/// One engine thread's sink: the interval in progress. Closed intervals go to the run loop,
/// which merges the threads' intervals in a [`crate::Series`]; the run's totals are what those
/// intervals add up to, so nothing is kept here that a closed interval did not carry.
#[derive(Debug)]
pub struct Recorder {
    interval: Duration,
    open_model: bool,
    current: IntervalAcc,
    out: Sender<IntervalAcc>,
    /// Indexed by name: true for a sub-measure (a statement inside a transaction), which is kept
    /// under its own name only, so every total counts each unit of work once.
    parts: Vec<bool>,
    /// How many more requests to keep one by one in the intervals' rows. Enough by default for
    /// a small run's points (past them the run has too many to keep anyway), so the hot path
    /// costs one comparison once a large run has passed them; unbounded with the request log.
    keep: u64,
}

impl Recorder {
    /// A recorder that sends each closed interval to `out`. `open_model` enables send-lag and
    /// service-time records.
    pub fn new(interval: Duration, open_model: bool, out: Sender<IntervalAcc>) -> Self {
        Recorder {
            interval,
            open_model,
            current: IntervalAcc::new(0),
            out,
            parts: Vec::new(),
            keep: crest_model::results::POINTS_KEPT + 1,
        }
    }

    /// Keeps every request in its interval's rows, for the request log (`--log-requests`).
    pub fn logging(mut self, on: bool) -> Self {
        if on {
            self.keep = u64::MAX;
        }
        self
    }

    /// Marks the names that are parts of another (see [`crest_model::plan::Plan::part_of`]).
    pub fn with_parts(mut self, part_of: &[Option<u32>]) -> Self {
        self.parts = part_of.iter().map(Option::is_some).collect();
        self
    }

    /// Sends the interval in progress. Call once, when the thread ends.
    pub fn finish(mut self) {
        let last = std::mem::replace(&mut self.current, IntervalAcc::new(0));
        // The receiver outlives the engine; if it is gone the run is being torn down anyway.
        let _ = self.out.send(last);
    }

    fn index_of(&self, at: Duration) -> u64 {
        (at.as_nanos() / self.interval.as_nanos().max(1)) as u64
    }

    /// Moves to the interval containing `at`, sending the ones that closed (idle ones included,
    /// so the series knows every thread has passed them).
    fn advance(&mut self, at: Duration) {
        let idx = self.index_of(at);
        while self.current.index < idx {
            let mut next = IntervalAcc::new(self.current.index + 1);
            if self.keep > 0 {
                // As many as the last second held: a steady run grows no Vec on the hot path.
                next.rows.reserve(self.current.rows.len());
            }
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
        let part = self.parts.get(s.name as usize).copied().unwrap_or(false);
        self.current.record(s, part, self.open_model, detail);
        if self.keep > 0 {
            self.keep -= 1;
            self.current.rows.push(crate::Row::of(s));
        }
    }

    fn dropped(&mut self, at: Duration) {
        self.dropped_many(at, 1);
    }

    fn dropped_many(&mut self, at: Duration, n: u64) {
        self.advance(at);
        self.current.dropped = self.current.dropped.saturating_add(n);
    }

    fn tick(&mut self, now: Duration) {
        self.advance(now);
    }

    fn iteration_started(&mut self, flow: u32, segment: u32, at: Duration) {
        self.advance(at);
        self.current.iteration_started(flow, segment);
    }

    fn iteration_ended(&mut self, it: &IterationSample) {
        self.advance(it.end());
        self.current.iteration_ended(it);
    }
}
