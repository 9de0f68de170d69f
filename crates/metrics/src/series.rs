//! The run's stream of closed intervals, merged from every thread's.

use crate::IntervalAcc;
use std::collections::BTreeMap;

/// Merges intervals from `threads` recorders. An interval is closed once every thread has sent
/// it; closed intervals are handed out once each, in order, with no gap: this is the one
/// stream that progress, stop conditions and the journal read.
#[derive(Debug)]
pub struct Series {
    threads: usize,
    pending: BTreeMap<u64, (usize, IntervalAcc)>,
    next: u64,
}

impl Series {
    /// A series fed by `threads` recorders.
    pub fn new(threads: usize) -> Self {
        Series {
            threads,
            pending: BTreeMap::new(),
            next: 0,
        }
    }

    /// Adds one thread's interval; returns the intervals this closed, in order.
    pub fn add(&mut self, mut acc: IntervalAcc) -> Vec<IntervalAcc> {
        let entry = self
            .pending
            .entry(acc.index)
            .or_insert_with(|| (0, IntervalAcc::new(acc.index)));
        entry.0 += 1;
        entry.1.merge(&acc);
        // Moved, not copied: with the request log on they are every request of the second.
        entry.1.rows.append(&mut acc.rows);
        let mut closed = Vec::new();
        while let Some((n, _)) = self.pending.get(&self.next) {
            if *n < self.threads {
                break;
            }
            if let Some((_, acc)) = self.pending.remove(&self.next) {
                closed.push(acc);
            }
            self.next += 1;
        }
        closed
    }

    /// Ends the series: whatever is pending is closed as it stands (threads send their last
    /// interval when they finish), gaps are filled with empty intervals, and the series runs at
    /// least to `end_index`. Returns the intervals this closed, in order.
    pub fn finish(mut self, end_index: u64) -> Vec<IntervalAcc> {
        let mut closed = Vec::new();
        let pending = std::mem::take(&mut self.pending);
        for (idx, (_, acc)) in pending {
            while self.next < idx {
                closed.push(IntervalAcc::new(self.next));
                self.next += 1;
            }
            if idx >= self.next {
                closed.push(acc);
                self.next = idx + 1;
            }
        }
        while self.next <= end_index {
            closed.push(IntervalAcc::new(self.next));
            self.next += 1;
        }
        closed
    }
}
