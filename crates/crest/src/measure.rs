//! The run loop: executes a plan, watches for signals, shows progress, and returns what was
//! measured.
//!
//! The engine runs on its own threads; this thread only receives closed intervals, reacts to
//! signals, journals each closed interval and sums it into the results document. Everything
//! written comes from that document, so `results.json` and the summary can never disagree, and
//! the document is what the journal adds up to.

use crate::judge::Judge;
use crate::limits;
use crate::progress::Progress;
use anyhow::{Context, Result};
use crest_engine::{Shape, Stop, StopCause, Workload};
use crest_metrics::{IntervalAcc, Recorder, Series};
use crest_model::journal::{End as JournalEnd, Entry, Fold, Start as JournalStart};
use crest_model::plan::{LoadModel, Plan, Target};
use crest_model::redact;
use crest_model::results::{
    self, ClientStats, EndReason, HttpConfig, LoadKind, Results, RunConfig, ScenarioConfig, StopRecord,
};
use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, SignalKind};

/// Length of one interval of the time series.
const INTERVAL: Duration = Duration::from_secs(1);
/// How long before the open model's start its engine threads come up (see [`Running::start`]).
const LEAD_IN: Duration = Duration::from_millis(50);

/// Which signal interrupted the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupt {
    Int,
    Term,
}

/// Who reads a run's journal entries as the run keeps them, besides its journal on disk and
/// the sum that becomes its results. Handed in by the command that runs it: the run loop knows
/// no process-wide page or collector.
#[derive(Clone, Debug, Default)]
pub struct Readers {
    /// The live page: `--web`'s, or a collector's (which shows the merged run's report).
    pub page: Option<Arc<crest_live::Hub>>,
    /// A worker's collector, which also starts and stops the run.
    pub collector: Option<Arc<crate::link::Link>>,
}

impl Readers {
    /// The run can be steered: from its page, or from its collector's.
    fn steered(&self) -> bool {
        self.page.is_some() || self.collector.is_some()
    }
}

/// A measured run, not yet written anywhere.
pub struct Measured {
    /// Everything measured.
    pub results: Results,
    /// The signal that stopped it, if one did.
    pub interrupted: Option<Interrupt>,
    /// False when its journal or request log could not be written in full (a full disk): the
    /// figures are whole, a copy on disk is not, and the exit code says so (see
    /// [`crate::output::write_all`]).
    pub journaled: bool,
}

/// Runs `plan` with `workload`: sends the load, shows progress, reacts to signals, and returns
/// the results document.
///
/// With `journal`, every closed interval is also appended to that file as it closes (see
/// [`crate::journal`]); the results are what those intervals add up to, whether the journal is
/// written or not.
pub fn measure<W: Workload>(
    plan: &Plan,
    workload: Arc<W>,
    command_line: &[String],
    quiet: bool,
    journal: Option<(&Path, Option<results::Segment>)>,
    readers: &Readers,
) -> Result<Measured> {
    let file_limit = limits::ensure_file_limit(plan.load().max_concurrency())?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    // Handlers are installed before the first request, so an early Ctrl-C is never lost.
    // SIGHUP (the SSH session that started the run dropped) is taken as SIGTERM: stop, and
    // write what was measured.
    let (mut sigint, mut sigterm, mut sighup) = {
        let _guard = rt.enter();
        (
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
            signal(SignalKind::hangup())?,
        )
    };
    let mut run = Running::start(plan, workload, command_line, quiet, journal, readers.clone())?;
    if let Some(c) = &run.control {
        c.limit_users(file_limit.saturating_sub(limits::HEADROOM), file_limit);
    }
    rt.block_on(async {
        let mut poll = tokio::time::interval(Duration::from_millis(100));
        loop {
            tokio::select! {
                _ = sigint.recv() => run.react(Interrupt::Int),
                _ = sigterm.recv() => run.react(Interrupt::Term),
                _ = sighup.recv() => run.react(Interrupt::Term),
                _ = poll.tick() => {
                    run.receive();
                    if run.engine_finished() {
                        break;
                    }
                }
            }
        }
    });
    run.finish(plan)
}

/// A run under way: started by [`Running::start`], fed closed intervals and monitor samples by
/// [`Running::receive`], told of signals by [`Running::react`], and ended by
/// [`Running::finish`]. Each closed interval becomes journal entries, and [`Running::hand_on`]
/// hands every entry to its readers.
struct Running {
    opening: JournalStart,
    /// The run's stop conditions, judged on the entries as they are handed on.
    judge: Judge,
    stop: Stop,
    start: Instant,
    cpu_at_start: f64,
    threads: usize,
    rx: mpsc::Receiver<IntervalAcc>,
    /// The engine's thread, until [`Running::finish`] joins it.
    engine: Option<std::thread::JoinHandle<std::io::Result<crest_engine::EngineReport<Recorder>>>>,
    monitor: Option<crest_monitor::Monitor>,
    series: Series,
    progress: Progress,
    interrupt: Option<Interrupt>,
    journal: Option<crate::journal::Writer>,
    reqlog: Option<crate::reqlog::Log>,
    fold: Fold,
    /// The first entry that could not be added up, if one could not.
    kept: Result<()>,
    /// Requests so far, statements included.
    samples: u64,
    /// The page and the collector, which read every entry [`Running::hand_on`] hands on.
    readers: Readers,
    /// Steering from the live page or the collector's, when there is one.
    control: Option<Arc<crest_engine::Control>>,
    /// The steps started by hand, journaled as they started.
    by_hand: Vec<crest_model::journal::Step>,
}

impl Running {
    /// Checks the plan's monitor, opens the journal and the request log, writes the journal's
    /// start, and starts the monitor and the engine.
    fn start<W: Workload>(
        plan: &Plan,
        workload: Arc<W>,
        command_line: &[String],
        quiet: bool,
        journal: Option<(&Path, Option<results::Segment>)>,
        readers: Readers,
    ) -> Result<Self> {
        // A collected run's worker is steered from the collector's page.
        let control = readers.steered().then(|| Arc::new(crest_engine::Control::new()));
        let shape = shape(plan, control.clone());
        let open_model = matches!(plan.load(), LoadModel::Open { .. });
        let (tx, rx) = mpsc::channel();
        // Checked before anything is sent; sampling starts with the load.
        let sampler = crest_monitor::Sampler::new(plan.monitor()).map_err(|e| anyhow::anyhow!("monitor: {e}"))?;
        let threads = shape.threads_used();
        let (journal, part) = journal.unzip();
        // The request log sits beside the journal; a run without a journal (none today) has none.
        let log_path = journal
            .filter(|_| plan.log_requests())
            .map(crate::rundir::request_log_beside);
        let journal = journal.map(crate::journal::Writer::create).transpose()?;
        let reqlog = log_path
            .map(|p| crate::reqlog::Log::create(&p, plan.names()))
            .transpose()?;
        // Made before the start, so that reading the machine delays no arrival.
        let mut opening = opening(plan, command_line, part.flatten());
        // The open model's arrivals are due from the start: its engine threads get a moment
        // before it to come up and ready their first users, so the first arrivals are neither
        // late for a thread still starting nor held up by connects.
        let lead_in = if open_model { LEAD_IN } else { Duration::ZERO };
        // A collector's worker starts at the instant the collector gave every worker (its
        // lead-in taken before it), so the workers' clocks and the collector's agree.
        let link = readers.collector.as_deref();
        let start = match link {
            Some(l) => l.wait_start(lead_in),
            None => Instant::now() + lead_in,
        };
        if open_model || link.is_some() {
            // The wall-clock time of the run's zero, for matching with the server's logs.
            opening.started_at = utc_after(start.saturating_duration_since(Instant::now()));
        }
        let cpu_at_start = crest_monitor::own::cpu_s();
        let monitor = if sampler.is_empty() {
            None
        } else {
            Some(sampler.spawn(start).context("cannot start the monitor thread")?)
        };
        // A worker of a shared run sends its part of a request count: arrival `i` is worker
        // `i mod N`'s, so the parts are the whole's first requests.
        let stop = Stop::new(
            plan.stop().duration.map(|d| start + d),
            plan.stop().requests.map(|n| plan.part().share(n)),
        );
        if let Some(w) = &readers.page {
            w.begin(&opening, control.clone(), Some(stop.clone()));
        }
        if let Some(l) = link {
            l.steer(stop.clone(), control.clone());
        }
        let engine = {
            let (stop, shape) = (stop.clone(), shape.clone());
            let part_of = plan.part_of().to_vec();
            let logging = reqlog.is_some();
            std::thread::Builder::new().name("crest-engine".into()).spawn(move || {
                crest_engine::run(&shape, start, &stop, workload, |_| {
                    Recorder::new(INTERVAL, open_model, tx.clone())
                        .with_parts(&part_of)
                        .logging(logging)
                })
            })?
        };
        // A collector's worker sees its part only: the collector judges the whole.
        let conditions = if link.is_some() {
            Vec::new()
        } else {
            plan.stop_when().to_vec()
        };
        let mut run = Running {
            judge: Judge::new(&opening, conditions),
            opening: opening.clone(),
            stop,
            start,
            cpu_at_start,
            threads,
            rx,
            engine: Some(engine),
            monitor,
            series: Series::new(threads),
            progress: Progress::new(
                quiet,
                INTERVAL.as_secs_f64(),
                plan.stop().duration.map(|d| d.as_secs_f64()),
            ),
            interrupt: None,
            journal,
            reqlog,
            fold: Fold::default(),
            kept: Ok(()),
            samples: 0,
            readers,
            control,
            by_hand: Vec::new(),
        };
        run.hand_on(Entry::Start(opening));
        Ok(run)
    }

    /// True once the engine's thread has ended.
    fn engine_finished(&self) -> bool {
        self.engine.as_ref().is_none_or(|e| e.is_finished())
    }

    /// A signal: the first stops sending and lets requests in flight finish; a second stops at
    /// once.
    fn react(&mut self, signal: Interrupt) {
        if self.interrupt.is_some() {
            self.stop.force();
        } else {
            self.stop.cancel();
        }
        self.interrupt.get_or_insert(signal);
    }

    /// Takes the intervals the engine closed and the monitor's samples since the last call:
    /// each is shown, and handed on to its readers and the stop conditions.
    fn receive(&mut self) {
        self.steered();
        let accs: Vec<IntervalAcc> = self.rx.try_iter().collect();
        for acc in accs {
            for mut done in self.series.add(acc) {
                self.closed(&mut done);
            }
        }
        let snaps: Vec<_> = self.monitor.iter().flat_map(|m| m.snapshots()).collect();
        for snap in snaps {
            self.hand_on(Entry::Monitor(snap.sample));
        }
    }

    /// Journals the steps started by hand since the last look, so that a run killed after a
    /// change keeps it, and judges later intervals by the steps as they now are.
    fn steered(&mut self) {
        let Some(control) = &self.control else { return };
        let new = control.steps_from(self.by_hand.len());
        if new.is_empty() {
            return;
        }
        for s in new {
            let step = crest_model::journal::Step::from(s);
            self.by_hand.push(step.clone());
            self.hand_on(Entry::Step(step));
        }
    }

    /// A closed interval: shown, its rows handed to the request log, and its journal entries
    /// kept. A closed interval's record carries its requests one by one while the run has made
    /// few enough for the results to keep them (Fold counts alike).
    fn closed(&mut self, done: &mut IntervalAcc) {
        self.progress.interval(done);
        self.samples += done.samples();
        let record = Entry::Interval(done.to_record(INTERVAL.as_secs_f64()));
        let points = (self.samples <= results::POINTS_KEPT && done.samples() > 0)
            .then(|| Entry::Points { points: done.points() });
        let rows = std::mem::take(&mut done.rows);
        if let Some(log) = &self.reqlog {
            log.send(rows);
        }
        self.hand_on(record);
        if let Some(points) = points {
            self.hand_on(points);
        }
    }

    /// Hands one journal entry to its readers, once and in order: the journal on disk, the
    /// live page, a worker's collector, the stop conditions, and the sum that becomes the
    /// results.
    fn hand_on(&mut self, entry: Entry) {
        if self.kept.is_err() {
            return;
        }
        if let Some(j) = self.journal.as_mut() {
            j.write(&entry);
        }
        if let Some(w) = &self.readers.page {
            // The page began with the run, given its control.
            if !matches!(entry, Entry::Start(_)) {
                w.publish(&entry);
            }
        }
        if let Some(l) = &self.readers.collector {
            l.send(&entry);
        }
        // Once the engine ended, nothing is left to stop: the last intervals are not judged, so
        // that a run that ended by its plan says so.
        if self.engine.is_some() && self.judge.read(&entry).is_some() {
            self.stop.cancel();
        }
        self.kept = match &entry {
            Entry::Interval(record) => self.fold.add(record).context("cannot add up an interval"),
            Entry::Points { points } => {
                self.fold.add_points(points);
                Ok(())
            }
            Entry::Step(step) => {
                self.fold.add_step(step);
                Ok(())
            }
            // The end's record carries the whole series (the monitor thread builds it), so the
            // samples are only for a reader of the journal after a crash.
            Entry::Monitor(_) | Entry::Start(_) | Entry::End(_) => Ok(()),
        };
    }

    /// Waits for the engine, closes the last intervals, writes the journal's end, and returns
    /// what the run measured.
    fn finish(mut self, plan: &Plan) -> Result<Measured> {
        let engine = self.engine.take().context("internal: the engine was joined twice")?;
        let report = engine
            .join()
            .map_err(|_| anyhow::anyhow!("the engine thread panicked"))?
            .context("the engine failed")?;
        let duration = report.finished.saturating_duration_since(self.start);
        // Changes are refused once the engine ended: these are the last.
        self.steered();
        let monitor = self.monitor.take().map(crest_monitor::Monitor::finish);
        for sink in report.sinks {
            sink.finish();
        }
        let end_index = (duration.as_secs_f64() / INTERVAL.as_secs_f64()).ceil().max(1.0) as u64 - 1;
        let accs: Vec<IntervalAcc> = self.rx.try_iter().collect();
        let mut rest: Vec<IntervalAcc> = accs.into_iter().flat_map(|acc| self.series.add(acc)).collect();
        let series = std::mem::replace(&mut self.series, Series::new(self.threads));
        rest.extend(series.finish(end_index));
        for done in &mut rest {
            self.closed(done);
        }
        let mut journaled = true;
        if let Some(log) = self.reqlog.take() {
            if let Err(e) = log.finish() {
                // As for the journal: the run and its figures are whole, only this copy is not.
                eprintln!("error: {e:#}");
                journaled = false;
            }
        }
        std::mem::replace(&mut self.kept, Ok(()))?;
        self.progress.finish();

        // Stopped from the live page: ended by a condition, which says so.
        let by_hand = self
            .control
            .as_ref()
            .and_then(|c| c.stopped_at())
            .filter(|_| self.judge.stopped().is_none());
        let link = self.readers.collector.as_deref();
        let ended_by = match (self.interrupt, report.cause) {
            (Some(Interrupt::Int), _) => EndReason::Sigint,
            (Some(Interrupt::Term), _) => EndReason::Sigterm,
            // A worker whose collector was lost stopped for that, not for its plan.
            (None, StopCause::Cancelled) if link.is_some_and(|l| l.collector_lost()) => EndReason::CollectorLost,
            (None, _) if self.judge.stopped().is_some() || by_hand.is_some() => EndReason::Condition,
            // A collector's worker told to stop: a condition held on the whole run.
            (None, _) if link.is_some_and(|l| l.told_to_stop()) => EndReason::Condition,
            (None, StopCause::Count) => EndReason::Requests,
            (None, StopCause::Completed) => EndReason::Completed,
            _ => EndReason::Duration,
        };
        let closing = JournalEnd {
            duration_s: duration.as_secs_f64(),
            ended_by,
            stopped_by: self
                .judge
                .take()
                .map(|s| StopRecord {
                    condition: s.condition,
                    at_s: s.at_s,
                    saw: Some(s.reason),
                    detail: None,
                })
                .or(by_hand.map(|at| StopRecord {
                    condition: "stop (live page)".into(),
                    at_s: at.as_secs_f64(),
                    saw: None,
                    detail: None,
                })),
            abandoned: report.abandoned,
            arrivals: self.opening.target_rps.map(|_| report.arrivals),
            behind: self.opening.target_rps.map(|_| report.behind),
            queued: self.opening.target_rps.map(|_| report.queued),
            client: Some(ClientStats {
                cpu_s: (crest_monitor::own::cpu_s() - self.cpu_at_start).max(0.0),
                cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
                threads: self.threads as u64,
                peak_rss_bytes: crest_monitor::own::peak_rss_bytes(),
                core_wait_s: report.core_wait.map(|d| d.as_secs_f64()),
                cpu_quota_cores: crest_monitor::own::cpu_quota_cores(),
            }),
            monitor,
            users: user_times(plan.load(), &report.user_times, report.users_cut_short),
            // Journaled as `Step` entries as they started.
            segments: None,
            workers: Vec::new(),
        };
        self.hand_on(Entry::End(closing.clone()));
        if let Some(j) = self.journal.take() {
            if let Err(e) = j.finish() {
                // The run and its figures are whole; only the copy on disk is not.
                eprintln!("error: {e:#}");
                journaled = false;
            }
        }
        let results = self.fold.finish(&self.opening, Some(&closing));
        Ok(Measured {
            results,
            interrupted: self.interrupt,
            journaled,
        })
    }
}

/// How the engine runs `plan`.
fn shape(plan: &Plan, control: Option<Arc<crest_engine::Control>>) -> Shape {
    Shape {
        control,
        model: plan.load().clone(),
        threads: plan.threads(),
        shard: plan.part(),
        grace: plan.grace(),
        tick: INTERVAL,
        segments: plan.segments().iter().map(|s| s.start).collect(),
    }
}

/// The journal's first entry for a run of `plan` starting now: what the run is. A collector
/// makes it too, to know its workers' plan.
pub fn opening(plan: &Plan, command_line: &[String], part: Option<results::Segment>) -> JournalStart {
    let threads = shape(plan, None).threads_used();
    let config = run_config(plan, command_line, threads);
    let flows: Vec<String> = config
        .scenario
        .as_ref()
        .map(|s| s.flows.iter().map(|(name, _)| name.clone()).collect())
        .unwrap_or_default();
    JournalStart {
        schema: crest_model::journal::JOURNAL_SCHEMA.into(),
        version: crest_model::journal::JOURNAL_VERSION,
        crest_version: env!("CARGO_PKG_VERSION").into(),
        started_at: now_utc(),
        config,
        environment: Some(crate::environment::capture()),
        names: plan.names().to_vec(),
        part_of: plan.part_of().to_vec(),
        flows,
        segments: planned_segments(plan),
        interval_s: INTERVAL.as_secs_f64(),
        target_rps: match plan.load() {
            LoadModel::Open { rate, .. } => Some(rate.max()),
            LoadModel::Closed { .. } => None,
        },
        part,
    }
}

/// Now, RFC 3339 in UTC, as the journal keeps times.
fn now_utc() -> String {
    utc_after(Duration::ZERO)
}

/// The wall-clock time `d` from now.
fn utc_after(d: Duration) -> String {
    let d = chrono::Duration::from_std(d).unwrap_or_default();
    (chrono::Utc::now() + d).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The users' times of a run whose users each run a fixed number of iterations.
fn user_times(
    load: &LoadModel,
    times: &[(Duration, Duration)],
    cut_short: u64,
) -> Option<crest_model::results::UserTimes> {
    if !matches!(
        load,
        LoadModel::Closed {
            iterations: Some(_),
            ..
        }
    ) {
        return None;
    }
    let mut h = crest_model::hist::new_histogram();
    for (_, took) in times {
        crest_model::hist::record(&mut h, *took);
    }
    Some(crest_model::results::UserTimes {
        finished: times.len() as u64,
        cut_short,
        first_start_s: times.iter().map(|(s, _)| *s).min().unwrap_or_default().as_secs_f64(),
        last_end_s: times
            .iter()
            .map(|(s, t)| *s + *t)
            .max()
            .unwrap_or_default()
            .as_secs_f64(),
        duration: crest_model::hist::EncodedHistogram::encode(&h),
    })
}

/// The configuration as stored: every secret redacted.
fn run_config(plan: &Plan, command_line: &[String], threads: usize) -> RunConfig {
    let (model, rate, on_cap, iterations) = match plan.load() {
        LoadModel::Closed { iterations, .. } => (LoadKind::Closed, None, None, *iterations),
        LoadModel::Open { rate, on_cap, .. } => (LoadKind::Open, Some(rate.max()), Some(*on_cap), None),
    };
    RunConfig {
        command_line: redact::command_line(command_line),
        model,
        concurrency: plan.load().max_concurrency(),
        rate,
        on_cap,
        requests: plan.stop().requests,
        iterations,
        duration_s: plan.stop().duration.map(|d| d.as_secs_f64()),
        threads: threads as u64,
        worker: plan.shard(),
        http: match plan.target() {
            Target::Http(h) => Some(HttpConfig {
                method: h.method.clone(),
                url: redact::url(&h.url),
                headers: h
                    .headers
                    .iter()
                    .map(|(n, v)| (n.clone(), redact::header_value(n, v)))
                    .collect(),
                body_bytes: h.body.len() as u64,
                timeout_s: plan.connection().timeout.as_secs_f64(),
                keepalive: plan.connection().keepalive,
                insecure: plan.connection().tls.insecure,
            }),
            Target::Scenario(_) => None,
        },
        scenario: match plan.target() {
            Target::Scenario(s) => Some(ScenarioConfig {
                path: s.path.clone(),
                sha256: s.sha256.clone(),
                flows: s.flows.clone(),
                grpc: s.grpc.clone(),
            }),
            Target::Http(_) => None,
        },
        thresholds: plan.thresholds().to_vec(),
        stop_conditions: plan.stop_when().to_vec(),
        provenance: plan.provenance().cloned(),
    }
}

/// The plan's steps as planned: each ends where the next starts (the last where the plan ends,
/// or, when no duration bounds it, where it starts); the run clips them to what it reached.
fn planned_segments(plan: &Plan) -> Vec<results::Segment> {
    let starts: Vec<f64> = plan.segments().iter().map(|s| s.start.as_secs_f64()).collect();
    let last = starts.last().copied().unwrap_or(0.0);
    let end = plan.stop().duration.map_or(last, |d| d.as_secs_f64().max(last));
    plan.segments()
        .iter()
        .enumerate()
        .map(|(i, s)| results::Segment {
            setup: None,
            kind: s.kind.clone(),
            start_s: starts[i],
            end_s: starts.get(i + 1).copied().unwrap_or(end),
            users: s.users,
            rate: s.rate,
        })
        .collect()
}
