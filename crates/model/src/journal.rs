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
/// run when they were steered by hand (in its end), version 6 each of those steps as it starts
/// (a [`Step`] entry, so a run killed after a change keeps it) and the workers of a merged run at
/// its end, version 7 a step's kind where its words were; an older journal (which has none) is
/// read as it is, a later version refused.
pub const JOURNAL_VERSION: u32 = 7;
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
    /// A step started by hand (from the live page or its API), journaled as it starts.
    Step(Step),
    /// The last line, written when the run ended normally (a signal included).
    End(End),
}

/// A step started by hand while the run went: what it set, and from when. Its index is the
/// segment index the engine gives the requests sent in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Its segment index: the plan's steps before the first change keep theirs, each change
    /// takes the next.
    pub index: u32,
    /// What it set: a level, paused, resumed. Journals written before it was kept carry the
    /// step's words as `name`, read back as the kind they stand for.
    #[serde(alias = "name")]
    pub kind: crate::step::StepKind,
    /// Start, in seconds from the start of the run.
    pub start_s: f64,
    /// Users asked for (closed model).
    pub users: Option<u64>,
    /// Arrivals per second asked for (open model).
    pub rate: Option<f64>,
}

/// The steps of a run steered by hand: the plan's before the first step set by hand (the rest
/// never ran), then one per change. Each ends where the next starts; the last where the plan
/// ended it, and the run clips it to what it reached. Without steps, the plan's.
pub fn steered(planned: &[Segment], steps: &[Step]) -> Vec<Segment> {
    let Some(first) = steps.first() else {
        return planned.to_vec();
    };
    let mut out: Vec<Segment> = planned.iter().take(first.index as usize).cloned().collect();
    let end = planned.last().map_or(0.0, |s| s.end_s);
    out.extend(steps.iter().map(|s| Segment {
        setup: None,
        kind: s.kind.clone(),
        start_s: s.start_s,
        end_s: end.max(s.start_s),
        users: s.users,
        rate: s.rate,
    }));
    for i in 1..out.len() {
        let start = out[i].start_s;
        out[i - 1].end_s = start;
    }
    out
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
    /// Open model: of the arrivals dropped, those due before the deadline that crest, behind
    /// its schedule, never reached. Absent in journals written before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind: Option<u64>,
    /// Open model with `on_cap: queue`: arrivals that waited for a place at the cap, then were
    /// sent (as [`crate::results::OpenStats::queued`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued: Option<u64>,
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
    /// The steps started by hand, in order.
    pub steps: Vec<Step>,
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
    let mut steps = Vec::new();
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
            (Entry::Step(s), Some(_)) if end.is_none() => steps.push(s),
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
        steps,
        end,
        truncated,
    })
}

/// Sums interval records into a results document: the run does this live with its own
/// records, `crest report` with a journal read back.
#[derive(Clone, Debug, Default)]
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
    /// Steps started by hand.
    steps: Vec<Step>,
}

impl Fold {
    /// Adds a step started by hand.
    pub fn add_step(&mut self, s: &Step) {
        self.steps.push(s.clone());
    }

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
        // A version 5 journal kept the steps set by hand in its end.
        let steered_steps = end
            .and_then(|e| e.segments.clone())
            .or_else(|| (!self.steps.is_empty()).then(|| steered(&start.segments, &self.steps)));
        let segments =
            crate::results::reached_segments(steered_steps.as_deref().unwrap_or(&start.segments), duration_s);
        let mut config = start.config.clone();
        if steered_steps.is_some() {
            // The configuration describes the whole run: a run steered by hand (one started
            // with no users, `--load manual`, above all) reached what was set by hand.
            let users = segments.iter().filter_map(|s| s.users).max();
            let rate = segments.iter().filter_map(|s| s.rate).reduce(f64::max);
            match config.model {
                crate::results::LoadKind::Closed => config.concurrency = users.unwrap_or(config.concurrency),
                crate::results::LoadKind::Open => config.rate = rate.or(config.rate),
            }
        }
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
                behind: end.and_then(|e| e.behind).unwrap_or(0),
                queued: end.and_then(|e| e.queued).unwrap_or(0),
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
            config,
            environment: start.environment.clone(),
            names: start.names.clone(),
            part_of: if start.part_of.iter().any(Option::is_some) {
                start.part_of.clone()
            } else {
                Vec::new()
            },
            flows: start.flows.clone(),
            segments,
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
        for s in &self.steps {
            fold.add_step(s);
        }
        Ok(fold.finish(&self.start, self.end.as_ref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::{Level, StepKind};

    fn seg(name: &str, start_s: f64, end_s: f64, users: u64) -> Segment {
        Segment {
            setup: None,
            kind: StepKind::from_name(name.into()),
            start_s,
            end_s,
            users: Some(users),
            rate: None,
        }
    }

    #[test]
    fn steps_by_hand_follow_the_plans_step_in_force_and_each_ends_where_the_next_starts() {
        let planned = [
            seg("10 users", 0.0, 10.0, 10),
            seg("20 users", 10.0, 20.0, 20),
            seg("30 users", 20.0, 30.0, 30),
        ];
        let names = |v: &[Segment]| v.iter().map(|s| s.kind.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&steered(&planned, &[])),
            names(&planned),
            "nothing set by hand: the plan"
        );
        let step = |index: u32, name: &str, start_s: f64, users: u64| Step {
            index,
            kind: StepKind::from_name(name.into()),
            start_s,
            users: Some(users),
            rate: None,
        };
        // Changed at 15 s, in the plan's step 1: its step 2 never ran.
        let run = steered(&planned, &[step(2, "40 users", 15.0, 40), step(3, "5 users", 18.5, 5)]);
        let users = |n| StepKind::Level(Level::Users(n));
        assert_eq!(names(&run), [users(10), users(20), users(40), users(5)]);
        let ends: Vec<f64> = run.iter().map(|s| s.end_s).collect();
        assert_eq!(ends, [10.0, 15.0, 18.5, 30.0]);
        // The journal line as written.
        let line = serde_json::to_string(&Entry::Step(step(2, "40 users", 15.0, 40))).unwrap();
        assert_eq!(
            line,
            r#"{"entry":"step","index":2,"kind":{"level":{"users":40}},"start_s":15.0,"users":40,"rate":null}"#
        );
        // A journal written before kinds were kept names its steps in words.
        let old = r#"{"entry":"step","index":2,"name":"rate 50/s","start_s":15.0,"users":null,"rate":50.0}"#;
        let Entry::Step(old) = serde_json::from_str(old).unwrap() else {
            panic!("a step")
        };
        assert_eq!(old.kind, StepKind::Level(Level::Rate(50.0)));
    }
}
