//! The journal: the run as a stream of closed intervals, written while it runs.
//!
//! A run's measurements leave the engine once per interval, when every thread has closed it.
//! Each closed interval becomes one [`IntervalRecord`]: its time-series figures and the
//! per-step, per-name, per-outcome totals of the requests that ended in it, with encoded
//! histograms. The journal is those records between a [`Start`] and an [`End`], one JSON
//! object per line, appended and synced as the run goes, so a run killed at any moment keeps
//! everything but its last seconds.
//!
//! The results document is what the journal adds up to: the run builds `results.json` by
//! folding its own records with [`Fold`], and `crest report` folds a journal the same way when
//! `results.json` is missing, so there is one way of summing a run. Live readers (progress, a
//! dashboard, a collector merging several generators) read the same records.

use crate::hist::{add_encoded, new_histogram, HistError};
use crate::results::{
    ClientStats, EndReason, Environment, ErrorClass, Interval, IterationStat, OpenStats, Results, RunConfig, Segment,
    Stat, StatSum, StopRecord, SCHEMA_ID, SCHEMA_VERSION,
};
use crate::{EncodedHistogram, Outcome};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::BufRead;

/// The value of [`Start::schema`].
pub const JOURNAL_SCHEMA: &str = "crest.journal";
/// The journal format's version. Version 2 added monitor samples, version 3 a small run's
/// requests one by one, version 4 the iterations of a scenario's flows, version 5 the steps as
/// run when they were steered by hand, version 6 the workers of a merged run at its end; an
/// older journal (which has none) is read as it is, a later version refused.
pub const JOURNAL_VERSION: u32 = 6;
const OLDEST_VERSION: u32 = 1;

/// One line of a journal.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)]
pub enum Entry {
    /// The first line: what the run is.
    Start(Start),
    /// One closed interval.
    Interval(IntervalRecord),
    /// One round of the monitor's sampling.
    Monitor(crate::monitor::MonitorSample),
    /// The requests of the interval before it one by one (see `Results::points`), while the run
    /// has made at most [`crate::results::POINTS_KEPT`]. A line of their own, so interval
    /// records stay the same size whatever the run keeps, and a disk that fills on a long line
    /// of points has already taken the interval.
    Points {
        /// The requests.
        points: Vec<crate::results::RequestPoint>,
    },
    /// The last line, written when the run ended normally (a signal included).
    End(End),
}

/// What is known when sending starts.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Start {
    /// Always [`JOURNAL_SCHEMA`].
    pub schema: String,
    /// Format version; see [`JOURNAL_VERSION`].
    pub version: u32,
    /// The crest version writing it.
    pub crest_version: String,
    /// When sending started, RFC 3339 in UTC.
    pub started_at: String,
    /// How the run was configured (secrets redacted).
    pub config: RunConfig,
    /// The machine crest ran on.
    pub environment: Option<Environment>,
    /// Request names.
    pub names: Vec<String>,
    /// For each name, the name it is a part of.
    #[serde(default)]
    pub part_of: Vec<Option<u32>>,
    /// The scenario's flows by name (see `Results::flows`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<String>,
    /// The planned steps; the run may end before some of them start.
    pub segments: Vec<Segment>,
    /// Length of each interval in seconds.
    pub interval_s: f64,
    /// Open model: arrivals per second asked for.
    pub target_rps: Option<f64>,
    /// In a run of several parts (the probes of a capacity search, the points of a sweep), this
    /// part's step in the joined run; the parts' journals join in file order.
    #[serde(default)]
    pub part: Option<Segment>,
}

/// One closed interval: its time-series figures and the totals of the requests that ended in it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalRecord {
    /// The interval as it appears in the results document.
    pub interval: Interval,
    /// Requests that ended in it, per step, name and outcome.
    pub stats: Vec<Stat>,
    /// Iterations that started or ended in it, per step and flow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub iterations: Vec<IterationStat>,
    /// Responses by status code.
    pub status_codes: BTreeMap<String, u64>,
    /// Failures by outcome, each with the first message seen in this interval.
    pub errors: Vec<ErrorClass>,
    /// Open model: how late requests started, in µs.
    pub send_lag: Option<EncodedHistogram>,
    /// Open model: service times, in µs.
    pub service: Option<EncodedHistogram>,
    /// The first failed requests of the interval, one by one (see `Results::failed`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<crate::results::FailedRequest>,
}

/// What is known only when the run ends.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct End {
    /// Seconds from the start of sending to the end of the last measured request.
    pub duration_s: f64,
    /// Why the run ended.
    pub ended_by: EndReason,
    /// The stop condition that ended it, if one did.
    pub stopped_by: Option<StopRecord>,
    /// Requests cut off in flight.
    pub abandoned: u64,
    /// Open model: arrivals due while sending.
    pub arrivals: Option<u64>,
    /// What crest itself used.
    pub client: Option<ClientStats>,
    /// What the monitor sampled.
    pub monitor: Option<crate::monitor::MonitorRecord>,
    /// How long each user took, in runs with a fixed number of iterations per user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<crate::results::UserTimes>,
    /// The steps as run, when they were changed while it ran (steered from the live page):
    /// they replace the planned ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<Vec<Segment>>,
    /// In a run merged from several generators' parts: each worker's record (see
    /// `Results::workers`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<crate::merge::WorkerRecord>,
}

/// A journal could not be read.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Reading failed.
    #[error("cannot read it")]
    Io(#[from] std::io::Error),
    /// A line other than the last is not a journal entry.
    #[error("line {line}: {message}")]
    Entry {
        /// Line number, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// It does not start with a [`Start`] of a known version.
    #[error("not a crest journal of version {OLDEST_VERSION} to {JOURNAL_VERSION}: {0}")]
    NotAJournal(String),
    /// A histogram in it could not be decoded.
    #[error(transparent)]
    Histogram(#[from] HistError),
}

/// A journal as read back.
#[derive(Clone, Debug)]
pub struct Journal {
    /// Its first line.
    pub start: Start,
    /// The closed intervals, in order.
    pub intervals: Vec<IntervalRecord>,
    /// The monitor's samples, in order.
    pub monitor: Vec<crate::monitor::MonitorSample>,
    /// The requests kept one by one, in the order they were journaled.
    pub points: Vec<crate::results::RequestPoint>,
    /// Its last line, absent when the run was killed.
    pub end: Option<End>,
    /// True when the last line was cut off mid-write (and left out).
    pub truncated: bool,
}

/// The longest line a journal may have: a `points` line of a run's first 10,001 requests per
/// thread on 64 threads takes about 30 MiB.
const MAX_LINE: u64 = 64 << 20;

/// Reads a journal. A last line cut off by a crash is left out and noted; a bad line elsewhere
/// is an error naming it.
pub fn read(mut r: impl BufRead) -> Result<Journal, JournalError> {
    let mut lines: Vec<String> = Vec::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // A line is read up to its limit, so an endless one (`/dev/zero`) is refused by it.
        if std::io::Read::take(&mut r, MAX_LINE + 1).read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        if buf.len() as u64 > MAX_LINE {
            return Err(JournalError::Entry {
                line: lines.len() + 1,
                message: format!("longer than {} MiB, the most a journal's line holds", MAX_LINE >> 20),
            });
        }
        if buf.ends_with(b"\n") {
            buf.pop();
        }
        if buf.ends_with(b"\r") {
            buf.pop();
        }
        let line = String::from_utf8(std::mem::take(&mut buf))
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        lines.push(line);
    }
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let mut start = None;
    let mut intervals = Vec::new();
    let mut monitor = Vec::new();
    let mut points = Vec::new();
    let mut end = None;
    let mut truncated = false;
    let n = lines.len();
    for (i, line) in lines.iter().enumerate() {
        let entry: Entry = match serde_json::from_str(line) {
            Ok(e) => e,
            // The process died while writing its last line.
            Err(_) if i + 1 == n && i > 0 => {
                truncated = true;
                break;
            }
            Err(e) => {
                return Err(JournalError::Entry {
                    line: i + 1,
                    message: e.to_string(),
                })
            }
        };
        match (entry, &start) {
            (Entry::Start(s), None) if i == 0 => {
                if s.schema != JOURNAL_SCHEMA || !(OLDEST_VERSION..=JOURNAL_VERSION).contains(&s.version) {
                    return Err(JournalError::NotAJournal(format!("{} version {}", s.schema, s.version)));
                }
                if s.names.len() > crate::input::MAX_NAMES {
                    return Err(JournalError::Entry {
                        line: 1,
                        message: format!(
                            "names: {} of them; a run has at most {}",
                            s.names.len(),
                            crate::input::MAX_NAMES
                        ),
                    });
                }
                start = Some(s);
            }
            (_, None) => return Err(JournalError::NotAJournal("the first line is not its start".into())),
            (Entry::Interval(r), Some(_)) if end.is_none() => intervals.push(r),
            (Entry::Monitor(m), Some(_)) if end.is_none() => monitor.push(m),
            (Entry::Points { points: p }, Some(_)) if end.is_none() => points.extend(p),
            (Entry::End(e), Some(_)) if end.is_none() => end = Some(e),
            _ => {
                return Err(JournalError::Entry {
                    line: i + 1,
                    message: "out of order: a second start, or an entry after the end".into(),
                })
            }
        }
    }
    let start = start.ok_or_else(|| JournalError::NotAJournal("it is empty".into()))?;
    Ok(Journal {
        start,
        intervals,
        monitor,
        points,
        end,
        truncated,
    })
}

/// Sums interval records into a results document: the run does this live with its own
/// records, `crest report` with a journal read back.
#[derive(Debug, Default)]
pub struct Fold {
    stats: BTreeMap<(u32, u32, Outcome), StatSum>,
    iterations: BTreeMap<(u32, u32), crate::results::IterationSum>,
    status_codes: BTreeMap<String, u64>,
    errors: Vec<ErrorClass>,
    failed: Vec<crate::results::FailedRequest>,
    /// Requests (statements included) in the records added so far, and their points while
    /// there are few enough to keep.
    samples: u64,
    points: Vec<crate::results::RequestPoint>,
    send_lag: Option<Histogram<u64>>,
    service: Option<Histogram<u64>>,
    intervals: Vec<Interval>,
    dropped: u64,
    monitor: Option<crate::monitor::MonitorBuilder>,
}

impl Fold {
    /// Adds requests kept one by one; none once the intervals added have more requests than
    /// results keep, so memory stays bounded whatever a journal holds.
    pub fn add_points(&mut self, p: &[crate::results::RequestPoint]) {
        if self.samples <= crate::results::POINTS_KEPT
            && self.points.len() + p.len() <= crate::results::POINTS_KEPT as usize
        {
            self.points.extend_from_slice(p);
        }
    }

    /// Adds one round of the monitor's sampling.
    pub fn add_monitor(&mut self, s: &crate::monitor::MonitorSample) {
        self.monitor.get_or_insert_with(Default::default).apply(s);
    }

    /// Adds one closed interval.
    pub fn add(&mut self, r: &IntervalRecord) -> Result<(), HistError> {
        for s in &r.stats {
            self.stats
                .entry((s.segment, s.name, s.outcome))
                .or_insert_with(|| StatSum::new(s.segment, s.name, s.outcome))
                .add_stat(s)?;
        }
        for it in &r.iterations {
            self.iterations
                .entry((it.segment, it.flow))
                .or_insert_with(|| crate::results::IterationSum::new(it.segment, it.flow))
                .add_stat(it)?;
        }
        for (code, n) in &r.status_codes {
            let c = self.status_codes.entry(code.clone()).or_default();
            *c = c.saturating_add(*n);
        }
        self.samples = r.stats.iter().map(|s| s.count).fold(self.samples, u64::saturating_add);
        if self.samples > crate::results::POINTS_KEPT {
            self.points = Vec::new();
        }
        // The run's example of a class is the first one seen: records come in time order.
        for f in &r.failed {
            if self.failed.len() < crate::results::FAILED_KEPT {
                self.failed.push(f.clone());
            }
        }
        for e in &r.errors {
            match self.errors.iter_mut().find(|x| x.outcome == e.outcome) {
                Some(x) => x.count = x.count.saturating_add(e.count),
                None => self.errors.push(e.clone()),
            }
        }
        add_encoded(&mut self.send_lag, r.send_lag.as_ref())?;
        add_encoded(&mut self.service, r.service.as_ref())?;
        self.dropped = self.dropped.saturating_add(r.interval.dropped);
        self.intervals.push(r.interval.clone());
        Ok(())
    }

    /// Requests folded so far (units of work and parts alike).
    pub fn intervals(&self) -> &[Interval] {
        &self.intervals
    }

    /// The results document. Without an [`End`] (the run was killed), the run ends with its
    /// last interval and is marked [`EndReason::Unfinished`].
    pub fn finish(self, start: &Start, end: Option<&End>) -> Results {
        let duration_s = match end {
            Some(e) => e.duration_s,
            None => self.intervals.last().map_or(0.0, |i| i.t_s + start.interval_s),
        };
        let mut errors = self.errors;
        errors.sort_by(|a, b| b.count.cmp(&a.count).then(a.outcome.cmp(&b.outcome)));
        let stats = self.stats.into_values().map(|s| s.to_stat()).collect();
        let iterations = self
            .iterations
            .values()
            .map(crate::results::IterationSum::to_stat)
            .collect();
        let open = start.target_rps.map(|target_rps| {
            let sent = self.intervals.iter().map(|i| i.requests).fold(0, u64::saturating_add);
            OpenStats {
                target_rps,
                // Without an end, arrivals are those measured and those dropped: requests
                // in flight at the crash are not known.
                arrivals: end.and_then(|e| e.arrivals).unwrap_or(sent + self.dropped),
                dropped: self.dropped,
                send_lag: EncodedHistogram::encode(self.send_lag.as_ref().unwrap_or(&new_histogram())),
                service: self.service.as_ref().map(EncodedHistogram::encode),
            }
        });
        Results {
            schema: SCHEMA_ID.into(),
            version: SCHEMA_VERSION,
            crest_version: start.crest_version.clone(),
            started_at: start.started_at.clone(),
            duration_s,
            ended_by: end.map_or(EndReason::Unfinished, |e| e.ended_by),
            stopped_by: end.and_then(|e| e.stopped_by.clone()),
            config: start.config.clone(),
            environment: start.environment.clone(),
            names: start.names.clone(),
            part_of: if start.part_of.iter().any(Option::is_some) {
                start.part_of.clone()
            } else {
                Vec::new()
            },
            flows: start.flows.clone(),
            segments: crate::results::reached_segments(
                end.and_then(|e| e.segments.as_deref()).unwrap_or(&start.segments),
                duration_s,
            ),
            stats,
            iterations,
            status_codes: self.status_codes,
            errors,
            abandoned: end.map_or(0, |e| e.abandoned),
            open,
            intervals: self.intervals,
            find: None,
            client: end.and_then(|e| e.client.clone()),
            // The end's record has the last sample, taken as the run stopped; without an end,
            // the samples journaled rebuild the series up to the last one.
            monitor: end
                .and_then(|e| e.monitor.clone())
                .or_else(|| self.monitor.map(crate::monitor::MonitorBuilder::finish)),
            users: end.and_then(|e| e.users.clone()),
            failed: {
                let mut f = self.failed;
                f.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
                f
            },
            // Kept only when they are every request of the run: a journal cut short, or a
            // run past the cap, keeps none.
            points: if self.samples <= crate::results::POINTS_KEPT && self.points.len() as u64 == self.samples {
                let mut p = self.points;
                p.sort_unstable();
                p
            } else {
                Vec::new()
            },
            interval_s: start.interval_s,
            workers: end.map(|e| e.workers.clone()).unwrap_or_default(),
        }
    }
}

impl Journal {
    /// The results document this journal adds up to.
    pub fn results(&self) -> Result<Results, HistError> {
        let mut fold = Fold::default();
        for r in &self.intervals {
            fold.add(r)?;
        }
        for m in &self.monitor {
            fold.add_monitor(m);
        }
        fold.add_points(&self.points);
        Ok(fold.finish(&self.start, self.end.as_ref()))
    }
}
