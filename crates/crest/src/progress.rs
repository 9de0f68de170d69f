//! Live progress on stderr: one refreshed line a second on a terminal, and a plain line every
//! few seconds otherwise (like `pgbench -P`), so logs stay readable.

use crest_metrics::IntervalAcc;
use crest_report::fmt::{int, ms, num};
use std::io::{IsTerminal, Write};

/// Seconds between plain progress lines when stderr is not a terminal.
const PLAIN_EVERY: u64 = 5;

pub struct Progress {
    enabled: bool,
    tty: bool,
    window: Option<IntervalAcc>,
    window_len: u64,
    requests: u64,
    failures: u64,
    interval_s: f64,
    /// The run's planned length: the interval after it holds only the requests that ended
    /// after sending stopped, so a window is timed up to it (a run of 4 s read 1,473 requests
    /// over 5 s, 20% under its rate).
    duration_s: Option<f64>,
}

impl Progress {
    pub fn new(quiet: bool, interval_s: f64, duration_s: Option<f64>) -> Self {
        Progress {
            enabled: !quiet,
            tty: std::io::stderr().is_terminal(),
            window: None,
            window_len: 0,
            requests: 0,
            failures: 0,
            interval_s,
            duration_s,
        }
    }

    /// Called with each completed interval, in order.
    pub fn interval(&mut self, acc: &IntervalAcc) {
        self.requests += acc.requests;
        self.failures += acc.failures;
        if !self.enabled {
            return;
        }
        match &mut self.window {
            Some(w) => w.merge(acc),
            None => self.window = Some(acc.clone()),
        }
        self.window_len += 1;
        let every = if self.tty { 1 } else { PLAIN_EVERY };
        if self.window_len < every {
            return;
        }
        let Some(mut w) = self.window.take() else { return };
        let whole = self.window_len as f64 * self.interval_s;
        self.window_len = 0;
        let end = (acc.index + 1) as f64 * self.interval_s;
        let from = end - whole;
        let elapsed = self.duration_s.map_or(end, |d| end.min(d));
        // A window mostly past the run's end holds the drain (what was in flight), whose rate
        // over its moment of sending would read many times too high: the summary follows.
        if elapsed - from < 0.5 * whole {
            return;
        }
        let secs = elapsed - from;
        let line = format!(
            "{elapsed:>6.0}s  {} requests  {} req/s  p50 {} ms  p99 {} ms  {} errors",
            int(self.requests),
            num(w.requests as f64 / secs),
            ms(w.latency_quantile(0.5) as f64 / 1000.0),
            ms(w.latency_quantile(0.99) as f64 / 1000.0),
            int(self.failures)
        );
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "progress: {line}");
        }
        let _ = err.flush();
    }

    /// Clears the progress line before the summary is printed.
    pub fn finish(&self) {
        if self.enabled && self.tty {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
