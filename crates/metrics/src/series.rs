//! The run's time series, merged from every thread's intervals.

use crate::IntervalAcc;
use crest_model::results::Interval;
use std::collections::BTreeMap;

/// Merges intervals from `threads` recorders. An interval is complete once every thread has
/// sent it; complete intervals are handed out in order for live progress.
#[derive(Debug)]
pub struct Series {
    threads: usize,
    interval_s: f64,
    pending: BTreeMap<u64, (usize, IntervalAcc)>,
    done: Vec<Interval>,
    next: u64,
}

impl Series {
    /// A series fed by `threads` recorders with intervals of `interval_s` seconds.
    pub fn new(threads: usize, interval_s: f64) -> Self {
        Series {
            threads,
            interval_s,
            pending: BTreeMap::new(),
            done: Vec::new(),
            next: 0,
        }
    }

    /// Adds one thread's interval; returns the intervals this completed, in order.
    pub fn add(&mut self, acc: IntervalAcc) -> Vec<IntervalAcc> {
        let entry = self
            .pending
            .entry(acc.index)
            .or_insert_with(|| (0, IntervalAcc::new(acc.index)));
        entry.0 += 1;
        entry.1.merge(&acc);
        let mut completed = Vec::new();
        while let Some((n, _)) = self.pending.get(&self.next) {
            if *n < self.threads {
                break;
            }
            if let Some((_, acc)) = self.pending.remove(&self.next) {
                self.done.push(acc.to_interval(self.interval_s));
                completed.push(acc);
            }
            self.next += 1;
        }
        completed
    }

    /// Ends the series: whatever is pending is merged as it stands (threads send their last
    /// interval when they finish), gaps are filled with empty intervals, and the last interval
    /// is kept only up to `end_index`.
    pub fn finish(mut self, end_index: u64) -> Vec<Interval> {
        let pending = std::mem::take(&mut self.pending);
        for (idx, (_, acc)) in pending {
            while self.next < idx {
                self.done.push(IntervalAcc::new(self.next).to_interval(self.interval_s));
                self.next += 1;
            }
            if idx >= self.next {
                self.done.push(acc.to_interval(self.interval_s));
                self.next = idx + 1;
            }
        }
        while self.next <= end_index {
            self.done.push(IntervalAcc::new(self.next).to_interval(self.interval_s));
            self.next += 1;
        }
        self.done
    }
}
