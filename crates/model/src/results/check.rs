//! The checks a results document must pass before it is read: what its types cannot say (times in
//! range, intervals in order, indices within their lists, totals that agree), kept apart from
//! the types so each part of the document has a check of its own.

use super::{Invalid, Results};
use crate::Outcome;

/// No run lasts a century; a bound keeps every later conversion of a time into a `Duration` or a
/// date in range.
const LONGEST_S: f64 = 3.2e9;

/// A time in seconds that a run can have, or why `what` is not one.
fn time(v: f64, what: &str) -> Result<(), Invalid> {
    if v.is_finite() && (0.0..=LONGEST_S).contains(&v) {
        Ok(())
    } else {
        Err(Invalid::new(
            what,
            format!(
                "is {}: give a time of 0 to {} seconds",
                crate::number::short(v),
                crate::number::short(LONGEST_S)
            ),
        ))
    }
}

impl Results {
    /// Checks what the types cannot: times are finite and not negative, intervals in order,
    /// indices within their lists. Analysis and reports rely on it, so a document edited by
    /// hand or by a fault is refused with the field at fault rather than misread.
    pub fn check(&self) -> Result<(), Invalid> {
        self.check_fields()?;
        self.check_timeline()?;
        self.check_indices()?;
        self.check_counters()?;
        self.check_totals()?;
        self.check_records()
    }

    /// The run's own fields: its length and start, its status codes, names and interval.
    fn check_fields(&self) -> Result<(), Invalid> {
        time(self.duration_s, "duration_s")?;
        if humantime::parse_rfc3339(&self.started_at).is_err() {
            return Err(Invalid::new(
                "started_at",
                format!(
                    "is {:?}: give an RFC 3339 time in UTC, such as 2026-01-31T09:30:00.000Z",
                    self.started_at
                ),
            ));
        }
        if let Some(code) = self
            .status_codes
            .keys()
            .find(|c| !(c.len() == 3 && c.parse::<u16>().is_ok_and(|n| (100..=599).contains(&n))))
        {
            return Err(Invalid::new(
                format!("status_codes.{code}"),
                "is not an HTTP status code (100 to 599)",
            ));
        }
        if self.names.len() > crate::input::MAX_NAMES {
            return Err(Invalid::new(
                "names",
                format!(
                    "has {}: a run has at most {}",
                    self.names.len(),
                    crate::input::MAX_NAMES
                ),
            ));
        }
        if !(self.interval_s.is_finite() && self.interval_s > 0.0 && self.interval_s <= 3600.0) {
            return Err(Invalid::new(
                "interval_s",
                format!("is {}: give 0 to 3600 seconds", crate::number::short(self.interval_s)),
            ));
        }
        Ok(())
    }

    /// Intervals in time order, steps that end after they start, at times a run can have.
    fn check_timeline(&self) -> Result<(), Invalid> {
        let mut last = -1.0;
        for (k, i) in self.intervals.iter().enumerate() {
            time(i.t_s, &format!("intervals[{k}].t_s"))?;
            if i.t_s <= last {
                return Err(Invalid::new(
                    format!("intervals[{k}].t_s"),
                    format!("is {}: intervals must be in time order", crate::number::short(i.t_s)),
                ));
            }
            last = i.t_s;
        }
        for (k, g) in self.segments.iter().enumerate() {
            time(g.start_s, &format!("segments[{k}].start_s"))?;
            time(g.end_s, &format!("segments[{k}].end_s"))?;
            if g.end_s < g.start_s {
                return Err(Invalid::new(format!("segments[{k}]"), "ends before it starts"));
            }
            if let Some(rate) = g.rate {
                time(rate, &format!("segments[{k}].rate"))?;
            }
        }
        Ok(())
    }

    /// Every index within its list, and a merged run's workers adding up to it.
    fn check_indices(&self) -> Result<(), Invalid> {
        for (k, s) in self.stats.iter().enumerate() {
            if s.segment as usize >= self.segments.len().max(1) {
                return Err(Invalid::new(
                    format!("stats[{k}].segment"),
                    format!("is {}: there are {} segments", s.segment, self.segments.len()),
                ));
            }
            if s.name as usize >= self.names.len() {
                return Err(Invalid::new(
                    format!("stats[{k}].name"),
                    format!("is {}: there are {} names", s.name, self.names.len()),
                ));
            }
        }
        for (k, it) in self.iterations.iter().enumerate() {
            if it.segment as usize >= self.segments.len().max(1) {
                return Err(Invalid::new(
                    format!("iterations[{k}].segment"),
                    format!("is {}: there are {} segments", it.segment, self.segments.len()),
                ));
            }
            if it.flow as usize >= self.flows.len() {
                return Err(Invalid::new(
                    format!("iterations[{k}].flow"),
                    format!("is {}: there are {} flows", it.flow, self.flows.len()),
                ));
            }
        }
        if self.part_of.len() > self.names.len()
            || self.part_of.iter().flatten().any(|p| *p as usize >= self.names.len())
        {
            return Err(Invalid::new("part_of", "names a name that is not in names"));
        }
        // A merged run is its workers' parts added up: not a request more or less.
        if !self.workers.is_empty() {
            let parts = self.workers.iter().map(|w| w.requests).fold(0u64, u64::saturating_add);
            let whole = self
                .intervals
                .iter()
                .map(|i| i.requests)
                .fold(0u64, u64::saturating_add);
            if parts != whole {
                return Err(Invalid::new(
                    "workers",
                    format!("add up to {parts} requests, and the intervals to {whole}"),
                ));
            }
        }
        Ok(())
    }

    /// Every total crest adds up must fit in its counter.
    fn check_counters(&self) -> Result<(), Invalid> {
        let fits = |what: &str, mut v: Box<dyn Iterator<Item = u64> + '_>| {
            v.try_fold(0u64, |a, b| a.checked_add(b))
                .map(|_| ())
                .ok_or_else(|| Invalid::new(what, "add up to more than a counter holds"))
        };
        fits("stats' counts", Box::new(self.stats.iter().map(|s| s.count)))?;
        fits("stats' bytes sent", Box::new(self.stats.iter().map(|s| s.bytes_sent)))?;
        fits(
            "stats' bytes received",
            Box::new(self.stats.iter().map(|s| s.bytes_received)),
        )?;
        fits(
            "intervals' requests",
            Box::new(self.intervals.iter().map(|i| i.requests)),
        )?;
        fits(
            "intervals' failures",
            Box::new(self.intervals.iter().map(|i| i.failures)),
        )?;
        fits(
            "intervals' bytes sent",
            Box::new(self.intervals.iter().map(|i| i.bytes_sent)),
        )?;
        fits(
            "intervals' bytes received",
            Box::new(self.intervals.iter().map(|i| i.bytes_received)),
        )?;
        fits("intervals' drops", Box::new(self.intervals.iter().map(|i| i.dropped)))?;
        fits(
            "intervals' outcomes",
            Box::new(self.intervals.iter().flat_map(|i| i.outcomes.values().copied())),
        )?;
        fits(
            "iterations' counts",
            Box::new(self.iterations.iter().flat_map(|i| [i.started, i.completed, i.failed])),
        )?;
        fits("status codes", Box::new(self.status_codes.values().copied()))?;
        fits("error classes", Box::new(self.errors.iter().map(|e| e.count)))
    }

    /// The records of what the run did besides its requests: the open model's arrivals, the
    /// stop rule, a capacity search's probes, the monitor's series.
    fn check_records(&self) -> Result<(), Invalid> {
        if let Some(o) = &self.open {
            if o.dropped > o.arrivals {
                return Err(Invalid::new(
                    "open",
                    format!("{} drops of {} arrivals", o.dropped, o.arrivals),
                ));
            }
        }
        if let Some(st) = &self.stopped_by {
            time(st.at_s, "stopped_by.at_s")?;
        }
        if let Some(o) = &self.open {
            time(o.target_rps, "open.target_rps")?;
        }
        if let Some(f) = &self.find {
            if f.probes.len() > self.segments.len() {
                return Err(Invalid::new(
                    "find",
                    format!("has {} probes for {} segments", f.probes.len(), self.segments.len()),
                ));
            }
            for (k, p) in f.probes.iter().enumerate() {
                time(p.level, &format!("find.probes[{k}].level"))?;
            }
        }
        if let Some(m) = &self.monitor {
            time(m.interval_s, "monitor.interval_s")?;
            for s in &m.series {
                if s.points.iter().any(|(t, v)| !t.is_finite() || !v.is_finite()) {
                    return Err(Invalid::new(
                        format!("monitor series {}", s.key),
                        "has a value that is not a number",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks that the totals agree: every response's status is one of a request's, every
    /// failing status has its responses, the intervals and error classes hold the steps'
    /// requests and failures, and each stat's histogram holds its count.
    fn check_totals(&self) -> Result<(), Invalid> {
        for (k, s) in self.stats.iter().enumerate() {
            let held = s
                .latency
                .decode()
                .map_err(|e| Invalid::new(format!("stats[{k}].latency"), e.to_string()))?
                .len();
            if held != s.count {
                return Err(Invalid::new(
                    format!("stats[{k}].latency"),
                    format!("holds {held} requests, the stat's count {}", s.count),
                ));
            }
        }
        let counted = || self.stats.iter().filter(|s| self.counts(s));
        let requests: u64 = counted().map(|s| s.count).sum();
        let failures: u64 = counted().filter(|s| !s.outcome.is_success()).map(|s| s.count).sum();
        let answered: u64 = self.status_codes.values().sum();
        if answered > requests {
            return Err(Invalid::new(
                "status_codes",
                format!("add up to {answered} responses, more than the {requests} requests in stats"),
            ));
        }
        for (k, e) in self.errors.iter().enumerate() {
            if let Outcome::Status(code) = e.outcome {
                let seen = self.status_codes.get(&code.to_string()).copied().unwrap_or(0);
                if seen < e.count {
                    return Err(Invalid::new(
                        format!("errors[{k}].count"),
                        format!(
                            "is {} failures of HTTP {code}, but status_codes has {seen} such responses",
                            e.count
                        ),
                    ));
                }
            }
        }
        let sums = [
            (
                "intervals' requests",
                self.intervals.iter().map(|i| i.requests).sum::<u64>(),
                requests,
            ),
            (
                "intervals' failures",
                self.intervals.iter().map(|i| i.failures).sum(),
                failures,
            ),
            ("errors' counts", self.errors.iter().map(|e| e.count).sum(), failures),
        ];
        for (what, sum, total) in sums {
            if sum != total {
                return Err(Invalid::new(what, format!("add up to {sum}, the stats to {total}")));
            }
        }
        Ok(())
    }
}
