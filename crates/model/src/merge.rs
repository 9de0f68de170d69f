//! Merging the parts of a run that several generators sent at the same time (the shards of one
//! plan, `--workers N`; see [`crate::plan::Shard`]) into the run they add up to.
//!
//! Each part's journal holds its closed intervals with every count and histogram of the
//! requests that ended in them. The same interval of every part adds into one record (counts
//! add, histograms add, nothing is rounded), and the merged records are folded by the one
//! [`Fold`](crate::journal::Fold) that makes every results document, so a merged run's results
//! are those one generator sending all of it would have written: its percentiles are those of
//! one histogram of every request. A collector merging live streams adds the same records the
//! same way, through the same [`Merger`].

use crate::hist::HistError;
use crate::journal::{End, Fold, IntervalRecord, Journal, Start, Step};
use crate::results::{
    ClientStats, EndReason, IntervalIterations, IterationSum, Results, StatSum, StopRecord, UserTimes, FAILED_KEPT,
};
use crate::EncodedHistogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One generator's part of a merged run, as it measured it.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerRecord {
    /// The worker's index, from 0.
    pub index: u32,
    /// When it started sending, RFC 3339 in UTC.
    pub started_at: String,
    /// Seconds it sent for, to the end of its last measured request.
    pub duration_s: f64,
    /// Why it ended.
    pub ended_by: EndReason,
    /// Requests it completed (units of work and their parts alike).
    pub requests: u64,
    /// Of those, the ones that failed.
    pub failures: u64,
    /// Open model: arrivals due on its share of the schedule, and those it dropped.
    pub arrivals: Option<u64>,
    /// Open model: arrivals it did not send: at its cap on requests in flight, or [`Self::behind`].
    pub dropped: u64,
    /// Open model: of the dropped, arrivals due before the deadline that it, behind its
    /// schedule, never reached (as [`crate::results::OpenStats::behind`]).
    #[serde(default, skip_serializing_if = "crate::results::is_zero")]
    pub behind: u64,
    /// Open model with `on_cap: queue`: arrivals that waited for a place at its cap, then were
    /// sent (as [`crate::results::OpenStats::queued`]).
    #[serde(default, skip_serializing_if = "crate::results::is_zero")]
    pub queued: u64,
    /// Runs with flows: iterations of them it completed (passed), the run's unit of work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    /// Open model: how late its requests started, in µs.
    pub send_lag: Option<EncodedHistogram>,
    /// What the generator itself used, when it ended normally.
    pub client: Option<ClientStats>,
    /// When its part ended without its end (the worker was killed, or its stream to the
    /// collector was cut) while the others went on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<Lost>,
}

/// A worker lost while the run went on: its load was missing from then on.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Lost {
    /// Seconds from the start of the run to the end of its last interval received.
    pub at_s: f64,
    /// Its share of the run's load (users, or arrivals), from 0 to 1: what went missing.
    pub share: f64,
    /// Seconds of the run without it, from `at_s` to the run's end.
    pub missing_s: f64,
}

/// Why parts can't be merged into one run.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no parts to merge")]
    NoParts,
    /// A part that is a whole run, not one worker's part.
    #[error("part {0} is a whole run, not one worker's part (run with --workers N --worker-index I)")]
    Whole(usize),
    /// A part of a run of several steps run one after another (levels, a capacity search).
    #[error("part {0} is a run of several parts of its own (levels, a search), which can't be merged")]
    Joined(usize),
    /// Two parts of the same worker.
    #[error("parts {0} and {1} are both worker {2}'s")]
    Twice(usize, usize, u32),
    /// A worker's part is missing.
    #[error("worker {missing}'s part of {count} is missing: every worker's part is needed for the whole run")]
    Missing {
        /// The first worker without a part.
        missing: u32,
        /// The workers of the run.
        count: u32,
    },
    /// Parts of different runs (another plan, crest version or number of workers).
    #[error("part {part} is not of the same run as part 0: its {what} differs")]
    Differs {
        /// The part.
        part: usize,
        /// What differs.
        what: &'static str,
    },
    /// An interval of a part before its start.
    #[error("worker {0} sent an interval before its start")]
    Unstarted(u32),
    /// An interval of a part that came after a later one of it, or after the run had closed it.
    #[error("worker {worker} sent interval {interval} out of order (after a later one, or after it was added up)")]
    OutOfOrder {
        /// The worker.
        worker: u32,
        /// The interval, from 0.
        interval: u64,
    },
    /// A histogram of a part could not be decoded.
    #[error(transparent)]
    Hist(#[from] HistError),
}

/// The run that `parts` (each worker's journal, read back) add up to, with a record of each
/// worker. Every worker's part must be there, once, of the same plan and crest version.
pub fn merge(parts: &[Journal]) -> Result<Results, MergeError> {
    let order = check(parts)?;
    let mut m = Merger::new(order.len() as u32);
    for &p in &order {
        let j = &parts[p];
        let index = j.start.config.worker.map_or(0, |w| w.index);
        m.start(index, j.start.clone())?;
        for r in &j.intervals {
            m.interval(index, r.clone())?;
        }
        for s in &j.monitor {
            m.monitor(index, s);
        }
        m.points(&j.points);
        for s in &j.steps {
            m.step(index, s.clone())?;
        }
        match &j.end {
            Some(e) => m.end(index, e.clone())?,
            None => m.lost(index),
        }
    }
    Ok(m.finish(None, None, None)?.2)
}

/// A merged run added up as its parts' entries come, whether read back from the workers'
/// journals ([`merge`]) or streamed while they run (a collector), in memory that does not grow
/// with the run's length: each part is kept as its running totals, and interval `k` of every
/// part is held only until every part still running has sent it, then added up in worker order
/// (so the sum does not depend on which part's record came first), folded into the results and
/// handed back ([`Merger::close`]) for a collector to judge and journal.
///
/// Workers start together (or as close as their operator started them); each part's intervals
/// count from its own start, so interval `k` of every part is the same interval.
#[derive(Debug)]
pub struct Merger {
    parts: Vec<Part>,
    /// Intervals not yet closed: each part's record of it, by worker index.
    open: BTreeMap<u64, BTreeMap<u32, IntervalRecord>>,
    /// Intervals before this one are closed.
    next: u64,
    fold: Fold,
}

/// One worker's part as far as it has come: its start, its running totals, its end.
#[derive(Debug, Default)]
struct Part {
    start: Option<Start>,
    requests: u64,
    failures: u64,
    dropped: u64,
    iterations: Option<u64>,
    send_lag: Option<hdrhistogram::Histogram<u64>>,
    /// The end of its last interval, in seconds from the start.
    went: Option<f64>,
    /// The last interval it sent.
    passed: Option<u64>,
    steps: Vec<Step>,
    end: Option<End>,
    /// It ended, or was lost: no interval of it is waited for.
    done: bool,
}

impl Merger {
    /// A run of `count` workers, none heard from yet.
    pub fn new(count: u32) -> Self {
        Merger {
            parts: (0..count).map(|_| Part::default()).collect(),
            open: BTreeMap::new(),
            next: 0,
            fold: Fold::default(),
        }
    }

    fn part(&mut self, index: u32) -> Result<&mut Part, MergeError> {
        let count = self.parts.len() as u32;
        self.parts
            .get_mut(index as usize)
            .ok_or(MergeError::Missing { missing: index, count })
    }

    /// A part's start: it must be of the same run as the parts started before it.
    pub fn start(&mut self, index: u32, start: Start) -> Result<(), MergeError> {
        if let Some(first) = self.parts.iter().find_map(|p| p.start.as_ref()) {
            if let Some(what) = differs(&start, first) {
                return Err(MergeError::Differs {
                    part: index as usize,
                    what,
                });
            }
        }
        self.part(index)?.start = Some(start);
        Ok(())
    }

    /// One interval of a part, sent after its start and after its intervals before it; returns
    /// which interval of the run it is.
    pub fn interval(&mut self, index: u32, r: IntervalRecord) -> Result<u64, MergeError> {
        let next = self.next;
        let p = self.part(index)?;
        let interval_s = p.start.as_ref().ok_or(MergeError::Unstarted(index))?.interval_s;
        let k = (r.interval.t_s / interval_s).round() as u64;
        if k < next || p.passed.is_some_and(|passed| k <= passed) {
            return Err(MergeError::OutOfOrder {
                worker: index,
                interval: k,
            });
        }
        p.requests = p.requests.saturating_add(r.interval.requests);
        p.failures = p.failures.saturating_add(r.interval.failures);
        p.dropped = p.dropped.saturating_add(r.interval.dropped);
        if let Some(it) = &r.interval.iterations {
            p.iterations = Some(p.iterations.unwrap_or(0).saturating_add(it.completed));
        }
        crate::hist::add_encoded(&mut p.send_lag, r.send_lag.as_ref())?;
        p.went = Some(r.interval.t_s + interval_s);
        p.passed = Some(k);
        self.open.entry(k).or_default().insert(index, r);
        Ok(k)
    }

    /// A round of monitoring: the system under test is the same for every worker, so its
    /// series are the first worker's, not one per generator.
    pub fn monitor(&mut self, index: u32, m: &crate::monitor::MonitorSample) {
        if index == 0 {
            self.fold.add_monitor(m);
        }
    }

    /// Requests a part kept one by one; kept while the whole run's are few enough.
    pub fn points(&mut self, p: &[crate::results::RequestPoint]) {
        self.fold.add_points(p);
    }

    /// A step a part started by hand (a collected run steered from its page).
    pub fn step(&mut self, index: u32, s: Step) -> Result<(), MergeError> {
        self.part(index)?.steps.push(s);
        Ok(())
    }

    /// A part's end: it sent everything.
    pub fn end(&mut self, index: u32, mut e: End) -> Result<(), MergeError> {
        // The run's monitored series are the first ended worker's, so only that end keeps
        // them: a series per worker would grow with the run.
        let first = self.parts.iter().position(|p| p.end.is_some());
        match first {
            Some(f) if f < index as usize => e.monitor = None,
            Some(f) => {
                if let Some(other) = self.parts[f].end.as_mut() {
                    other.monitor = None;
                }
            }
            None => {}
        }
        let p = self.part(index)?;
        p.end = Some(e);
        p.done = true;
        Ok(())
    }

    /// A part that will send nothing more, without its end (its worker was killed or lost).
    pub fn lost(&mut self, index: u32) {
        if let Some(p) = self.parts.get_mut(index as usize) {
            p.done = true;
        }
    }

    /// The last interval a part sent.
    pub fn passed(&self, index: u32) -> Option<u64> {
        self.parts.get(index as usize).and_then(|p| p.passed)
    }

    /// The merged run's start, once every part has started or was lost (and one started).
    pub fn start_entry(&self) -> Option<Start> {
        if self.parts.iter().any(|p| p.start.is_none() && !p.done) {
            return None;
        }
        let mut started = self.parts.iter().filter_map(|p| p.start.as_ref());
        let first = started.next()?;
        let started_at = started
            .map(|s| &s.started_at)
            .fold(&first.started_at, std::cmp::min)
            .clone();
        Some(Start {
            started_at,
            config: crate::results::RunConfig {
                worker: None,
                ..first.config.clone()
            },
            ..first.clone()
        })
    }

    /// The intervals every part still running has sent, each added up in worker order and
    /// folded into the run: the records of the run, in order.
    pub fn close(&mut self) -> Result<Vec<IntervalRecord>, MergeError> {
        let mut closed = Vec::new();
        while let Some(entry) = self.open.first_entry() {
            let k = *entry.key();
            let waiting = self
                .parts
                .iter()
                .any(|p| !p.done && p.passed.is_none_or(|passed| passed < k));
            if waiting {
                break;
            }
            let mut records = entry.remove().into_values();
            let Some(mut merged) = records.next() else { continue };
            for r in records {
                add_record(&mut merged, &r)?;
            }
            self.fold.add(&merged)?;
            self.next = k + 1;
            closed.push(merged);
        }
        Ok(closed)
    }

    /// The whole run once every part has ended or was lost: its end (absent when no part ended)
    /// and its results, with a record of each worker. `stopped`: the stop condition a collector
    /// judged on the whole, which ended every part; `steps`: the steps a collector started by
    /// hand (else the parts' own); `interrupted`: the signal that ended the collector.
    pub fn finish(
        mut self,
        stopped: Option<StopRecord>,
        steps: Option<Vec<Step>>,
        interrupted: Option<EndReason>,
    ) -> Result<(Start, Option<End>, Results), MergeError> {
        let count = self.parts.len() as u32;
        if let Some(missing) = self.parts.iter().position(|p| p.start.is_none()) {
            return Err(MergeError::Missing {
                missing: missing as u32,
                count,
            });
        }
        for p in &mut self.parts {
            p.done = true;
        }
        self.close()?;
        let start = self.start_entry().ok_or(MergeError::NoParts)?;
        let mut end = merged_end(&self.parts)?;
        if let (Some(e), Some(s)) = (end.as_mut(), stopped) {
            e.ended_by = EndReason::Condition;
            e.stopped_by = Some(s);
        }
        let run_s = end.as_ref().map(|e| e.duration_s);
        let workers: Vec<WorkerRecord> = self.parts.iter().map(|p| worker(p, run_s)).collect();
        if let Some(e) = end.as_mut() {
            e.workers = workers.clone();
            if let Some(signal) = interrupted {
                e.ended_by = signal;
            }
        }
        // A collected run steered from its page: every worker made the collector's changes,
        // as the same steps at the same instants; a worker lost early has fewer of them.
        let steps = steps.unwrap_or_else(|| {
            self.parts
                .iter()
                .map(|p| &p.steps)
                .max_by_key(|s| s.len())
                .cloned()
                .unwrap_or_default()
        });
        for s in &steps {
            self.fold.add_step(s);
        }
        let mut results = self.fold.finish(&start, end.as_ref());
        results.workers = workers;
        if let Some(signal) = interrupted {
            results.ended_by = signal;
        }
        Ok((start, end, results))
    }
}

/// What differs between two parts' starts that makes them parts of different runs.
fn differs(s: &Start, first: &Start) -> Option<&'static str> {
    let same = |s: &Start| plan_identity(s)["config"].take();
    [
        (s.crest_version != first.crest_version, "crest version"),
        (
            s.config.worker.map(|w| w.count) != first.config.worker.map(|w| w.count),
            "number of workers",
        ),
        (same(s) != same(first), "configuration"),
        (s.names != first.names, "request names"),
        (s.flows != first.flows, "flows"),
        (
            serde_json::to_value(&s.segments).ok() != serde_json::to_value(&first.segments).ok(),
            "steps",
        ),
        (s.interval_s != first.interval_s, "interval"),
    ]
    .into_iter()
    .find_map(|(d, what)| d.then_some(what))
}

/// What must be the same in every part of one run, as a value to compare or digest: the
/// configuration but for the worker and its command line, the request names, flows, steps and
/// interval.
pub fn plan_identity(s: &Start) -> serde_json::Value {
    let mut config = serde_json::to_value(&s.config).unwrap_or_default();
    if let Some(o) = config.as_object_mut() {
        o.remove("worker");
        // The command lines differ in their worker index.
        o.remove("command_line");
        // Each worker finds the git checkout of its own machine; the collector's is the run's.
        o.remove("provenance");
    }
    serde_json::json!({
        "config": config,
        "names": s.names,
        "flows": s.flows,
        "segments": s.segments,
        "interval_s": s.interval_s,
    })
}

/// The parts in worker order, once each checked to be parts of one run.
fn check(parts: &[Journal]) -> Result<Vec<usize>, MergeError> {
    let Some(first) = parts.first() else {
        return Err(MergeError::NoParts);
    };
    let count = first.start.config.worker.ok_or(MergeError::Whole(0))?.count;
    let mut by_worker: BTreeMap<u32, usize> = BTreeMap::new();
    for (k, p) in parts.iter().enumerate() {
        let s = &p.start;
        let w = s.config.worker.ok_or(MergeError::Whole(k))?;
        if s.part.is_some() {
            return Err(MergeError::Joined(k));
        }
        if let Some(what) = differs(s, &first.start) {
            return Err(MergeError::Differs { part: k, what });
        }
        if w.index >= count {
            return Err(MergeError::Differs {
                part: k,
                what: "worker index (it is not below the number of workers)",
            });
        }
        if let Some(other) = by_worker.insert(w.index, k) {
            return Err(MergeError::Twice(other, k, w.index));
        }
    }
    if let Some(missing) = (0..count).find(|i| !by_worker.contains_key(i)) {
        return Err(MergeError::Missing { missing, count });
    }
    Ok(by_worker.into_values().collect())
}

/// The end of the whole run: the last worker's of those that ended, and unfinished if none
/// did. A part without its end (killed) is a lost worker (see [`WorkerRecord::lost`]): the run
/// is the others' and its part as far as it went.
fn merged_end(parts: &[Part]) -> Result<Option<End>, MergeError> {
    let ends: Vec<&End> = parts.iter().filter_map(|p| p.end.as_ref()).collect();
    let Some(&first) = ends.first() else {
        return Ok(None);
    };
    let ended_by = ends
        .iter()
        .map(|e| e.ended_by)
        .find(|r| *r != first.ended_by && r.interrupted())
        .unwrap_or(first.ended_by);
    let arrivals = ends.iter().map(|e| e.arrivals).sum::<Option<u64>>();
    Ok(Some(End {
        duration_s: ends.iter().map(|e| e.duration_s).fold(0.0, f64::max),
        ended_by,
        stopped_by: ends.iter().find_map(|e| e.stopped_by.clone()),
        abandoned: ends.iter().map(|e| e.abandoned).fold(0, u64::saturating_add),
        arrivals,
        behind: ends.iter().filter_map(|e| e.behind).reduce(u64::saturating_add),
        queued: ends.iter().filter_map(|e| e.queued).reduce(u64::saturating_add),
        // The generators' own use is each worker's (see `Results::workers`).
        client: None,
        monitor: first.monitor.clone(),
        users: merged_users(ends.iter().map(|e| e.users.as_ref()))?,
        segments: first.segments.clone(),
        workers: Vec::new(),
    }))
}

/// Run-once users of every worker, as one run's.
fn merged_users<'a>(users: impl Iterator<Item = Option<&'a UserTimes>>) -> Result<Option<UserTimes>, HistError> {
    let mut out: Option<(UserTimes, hdrhistogram::Histogram<u64>)> = None;
    for u in users.flatten() {
        let h = u.duration.decode()?;
        match &mut out {
            None => out = Some((u.clone(), h)),
            Some((o, acc)) => {
                o.finished = o.finished.saturating_add(u.finished);
                o.cut_short = o.cut_short.saturating_add(u.cut_short);
                o.first_start_s = o.first_start_s.min(u.first_start_s);
                o.last_end_s = o.last_end_s.max(u.last_end_s);
                crate::hist::add(acc, &h);
            }
        }
    }
    Ok(out.map(|(u, h)| UserTimes {
        duration: EncodedHistogram::encode(&h),
        ..u
    }))
}

/// One worker's record, from its part's totals; `run_s`: how long the whole run lasted, when
/// it ended.
fn worker(p: &Part, run_s: Option<f64>) -> WorkerRecord {
    let start = p.start.as_ref();
    let end = p.end.as_ref();
    let went = p.went.unwrap_or(0.0);
    let lost = match (end, run_s) {
        (None, Some(run_s)) => Some(Lost {
            at_s: went,
            share: start.map_or(1.0, |s| load_share(&s.config)),
            missing_s: (run_s - went).max(0.0),
        }),
        _ => None,
    };
    WorkerRecord {
        index: start.and_then(|s| s.config.worker).map_or(0, |w| w.index),
        started_at: start.map(|s| s.started_at.clone()).unwrap_or_default(),
        duration_s: end.map_or(went, |e| e.duration_s),
        ended_by: end.map_or(EndReason::Unfinished, |e| e.ended_by),
        requests: p.requests,
        failures: p.failures,
        arrivals: end.and_then(|e| e.arrivals),
        dropped: p.dropped,
        behind: end.and_then(|e| e.behind).unwrap_or(0),
        queued: end.and_then(|e| e.queued).unwrap_or(0),
        iterations: p.iterations,
        send_lag: p.send_lag.as_ref().map(EncodedHistogram::encode),
        client: end.and_then(|e| e.client.clone()),
        lost,
    }
}

/// A worker's share of the run's load, from 0 to 1: of the users (closed model, split as
/// [`crate::plan::share`] does), or of the arrivals (open model: one in `count`).
fn load_share(config: &crate::results::RunConfig) -> f64 {
    let Some(w) = config.worker else { return 1.0 };
    let n = config.concurrency.max(1);
    match config.model {
        crate::results::LoadKind::Open => 1.0 / f64::from(w.count.max(1)),
        crate::results::LoadKind::Closed => w.share(n) as f64 / n as f64,
    }
}

/// Adds `from` to an encoded histogram: both decoded, added, encoded again.
fn add_encoded(into: &mut EncodedHistogram, from: &EncodedHistogram) -> Result<(), HistError> {
    let mut h = into.decode()?;
    crate::hist::add(&mut h, &from.decode()?);
    *into = EncodedHistogram::encode(&h);
    Ok(())
}

fn add_encoded_opt(into: &mut Option<EncodedHistogram>, from: Option<&EncodedHistogram>) -> Result<(), HistError> {
    match (into.as_mut(), from) {
        (Some(i), Some(f)) => add_encoded(i, f),
        (None, Some(f)) => {
            *into = Some(f.clone());
            Ok(())
        }
        (_, None) => Ok(()),
    }
}

/// Adds another worker's record of the same interval to `into`.
pub fn add_record(into: &mut IntervalRecord, from: &IntervalRecord) -> Result<(), HistError> {
    let (i, f) = (&mut into.interval, &from.interval);
    i.requests = i.requests.saturating_add(f.requests);
    i.failures = i.failures.saturating_add(f.failures);
    i.bytes_sent = i.bytes_sent.saturating_add(f.bytes_sent);
    i.bytes_received = i.bytes_received.saturating_add(f.bytes_received);
    i.messages_sent = i.messages_sent.saturating_add(f.messages_sent);
    i.messages_received = i.messages_received.saturating_add(f.messages_received);
    i.dropped = i.dropped.saturating_add(f.dropped);
    for (k, n) in &f.outcomes {
        let c = i.outcomes.entry(k.clone()).or_default();
        *c = c.saturating_add(*n);
    }
    add_encoded(&mut i.latency, &f.latency)?;
    add_encoded(&mut i.ttfb, &f.ttfb)?;
    match (&mut i.iterations, &f.iterations) {
        (Some(a), Some(b)) => add_iterations(a, b)?,
        (None, Some(b)) => i.iterations = Some(b.clone()),
        (_, None) => {}
    }
    for s in &from.stats {
        match into
            .stats
            .iter_mut()
            .find(|x| (x.segment, x.name, x.outcome) == (s.segment, s.name, s.outcome))
        {
            Some(x) => {
                let mut sum = StatSum::new(x.segment, x.name, x.outcome);
                sum.add_stat(x)?;
                sum.add_stat(s)?;
                *x = sum.to_stat();
            }
            None => into.stats.push(s.clone()),
        }
    }
    for it in &from.iterations {
        match into
            .iterations
            .iter_mut()
            .find(|x| (x.segment, x.flow) == (it.segment, it.flow))
        {
            Some(x) => {
                let mut sum = IterationSum::new(x.segment, x.flow);
                sum.add_stat(x)?;
                sum.add_stat(it)?;
                *x = sum.to_stat();
            }
            None => into.iterations.push(it.clone()),
        }
    }
    for (code, n) in &from.status_codes {
        let c = into.status_codes.entry(code.clone()).or_default();
        *c = c.saturating_add(*n);
    }
    for e in &from.errors {
        match into.errors.iter_mut().find(|x| x.outcome == e.outcome) {
            Some(x) => x.count = x.count.saturating_add(e.count),
            None => into.errors.push(e.clone()),
        }
    }
    add_encoded_opt(&mut into.send_lag, from.send_lag.as_ref())?;
    add_encoded_opt(&mut into.service, from.service.as_ref())?;
    into.failed.extend(from.failed.iter().cloned());
    into.failed.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    into.failed.truncate(FAILED_KEPT);
    Ok(())
}

fn add_iterations(into: &mut IntervalIterations, from: &IntervalIterations) -> Result<(), HistError> {
    into.started = into.started.saturating_add(from.started);
    into.completed = into.completed.saturating_add(from.completed);
    into.failed = into.failed.saturating_add(from.failed);
    add_encoded(&mut into.duration, &from.duration)
}
