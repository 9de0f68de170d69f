//! `crest collect`: one run over N workers (`crest worker`). The collector resolves the plan
//! as each worker will (so a plan that can't be split is refused before anyone joins), waits
//! on its one listener for N workers, checks each one's version and plan, starts them at one
//! instant of its own clock, adds up their journal entries as they come (`merge::Sum`), judges
//! stop conditions on the merged intervals and tells every worker to stop when one fires, and
//! at the end writes the one run they add up to (`merge::whole`, as `crest merge` does). A
//! worker whose stream ends without its end is lost: noted, and the run goes on.

use crate::cli::CollectArgs;
use crate::wire::{self, Down, PlanFile, PlanText, Up};
use crate::{output, rundir};
use anyhow::{bail, Context, Result};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use crest_analysis::stop::{IntervalFigures, StopWatch};
use crest_model::journal::{Entry, IntervalRecord};
use crest_model::merge::Merger;
use crest_model::plan::LoadModel;
use crest_model::results::{EndReason, StopRecord};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// How often the users the whole run has are worked out for the page (and for a change of
/// users by hand, which ramps from them).
const USERS_EVERY: Duration = Duration::from_millis(100);

/// Time from the last worker's joining to the start, for the start to reach every worker.
const START_AFTER: Duration = Duration::from_millis(500);

/// A running worker sends an interval every second; one silent this long besides the run's
/// grace for requests in flight is stuck (a stopped process, a network that drops without a
/// reset) and is taken as lost, so the run can end.
const SILENT_FOR: Duration = Duration::from_secs(15);

/// What the listener's handlers share.
struct Shared {
    token: String,
    count: u32,
    plan: PlanText,
    digest: String,
    epoch: Instant,
    /// Worker indexes taken.
    taken: Mutex<BTreeSet<u32>>,
    started: AtomicBool,
    events: UnboundedSender<Event>,
}

impl Shared {
    fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    /// The index a joining worker asked for, or the first free one.
    fn claim(&self, asked: Option<u32>) -> Result<u32, String> {
        let mut taken = self.taken.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.started.load(Ordering::SeqCst) {
            return Err("the run has started: a worker joins before it starts".into());
        }
        let index = match asked {
            Some(i) if i >= self.count => {
                return Err(format!(
                    "worker index {i}: this run has {} workers, 0 to {}",
                    self.count,
                    self.count - 1
                ))
            }
            Some(i) if taken.contains(&i) => return Err(format!("worker index {i} is taken by another worker")),
            Some(i) => i,
            None => (0..self.count)
                .find(|i| !taken.contains(i))
                .ok_or_else(|| format!("all {} workers have joined", self.count))?,
        };
        taken.insert(index);
        Ok(index)
    }

    fn release(&self, index: u32) {
        self.taken
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&index);
    }
}

/// What a worker's connection tells the run.
enum Event {
    Ready {
        index: u32,
        rtt_us: u64,
        tx: UnboundedSender<Down>,
    },
    Failed {
        index: u32,
        message: String,
    },
    Entry {
        index: u32,
        entry: Box<Entry>,
    },
    Gone {
        index: u32,
    },
    /// The run was steered from the collector's page.
    Steer(crest_engine::Changed),
}

/// `crest collect`. Returns the exit code.
pub fn collect(a: CollectArgs, argv: &[String]) -> Result<u8> {
    let mut run = a.run;
    let count = run
        .workers
        .context("--workers N: the number of workers to wait for is needed")?;
    if run.worker_index.is_some() {
        bail!("--worker-index: a collector's workers are given their index when they join");
    }
    if count == 0 {
        bail!("--workers 0: at least one worker is needed");
    }
    if run.output.web.web.is_some() {
        bail!("--web: a collector serves its live page on its --listen address");
    }
    if run.output.web.web_token.is_some() {
        bail!("--web-token: a collector's page takes the workers' token (--token, CREST_TOKEN)");
    }
    // Resolved as worker 0 will resolve it, so a plan that can't be split is refused here.
    run.worker_index = Some(0);
    run.collected = true;
    let (prepared, plan_text) = if run.url.contains("://") {
        (crate::run::prepare(&run, None)?, None)
    } else {
        let path = Path::new(&run.url);
        let text = crest_model::input::read_text_file(path, crest_model::input::MAX_SCENARIO)
            .with_context(|| format!("{}: cannot read the scenario", run.url))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        (
            crate::run::prepare(&run, Some((&text, dir)))?,
            Some((text, dir.to_path_buf())),
        )
    };
    let plan = prepared.plan;
    let token = match a
        .token
        .or_else(|| std::env::var("CREST_TOKEN").ok())
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
    {
        Some(t) => t,
        None => {
            let t = crest_live::new_token().context("cannot make a token")?;
            eprintln!("token: {t} (give it to the workers as --token or CREST_TOKEN)");
            t
        }
    };
    let mut files = Vec::new();
    let mut bytes = 0;
    if let Some((_, dir)) = &plan_text {
        for name in &prepared.files {
            // A file named by an absolute path is each worker's own (a mounted volume).
            if Path::new(name).is_absolute() {
                continue;
            }
            let left = (wire::MAX_FILES_BYTES - bytes) as u64;
            let read = crest_model::input::read_file(&dir.join(name), left).with_context(|| {
                format!(
                    "{name}: cannot read it to hand to the workers (a scenario's files are handed on up to {} MiB in all)",
                    wire::MAX_FILES_BYTES >> 20
                )
            })?;
            bytes += read.len();
            files.push(PlanFile::new(name.clone(), read));
        }
    }
    let opening = crate::measure::opening(&plan, argv, None);
    let mut args = forwarded(argv);
    // Worker w's thread k is lane w + N*k of the whole run's, so every worker runs as many
    // engine threads: this collector's count, unless given, not each machine's own cores.
    if run.threads.is_none() {
        args.push(format!("--threads={}", plan.threads()));
    }
    let (events, mut rx) = unbounded_channel();
    let shared = Arc::new(Shared {
        token: token.clone(),
        count,
        plan: PlanText {
            args,
            scenario: plan_text.map(|(t, _)| t),
            files,
        },
        digest: wire::digest(&opening),
        epoch: Instant::now(),
        taken: Mutex::new(BTreeSet::new()),
        started: AtomicBool::new(false),
        events,
    });
    // The page steers the whole run: each change is made here, then handed to every worker,
    // whose engine shares it out over the whole run's lanes as it does the plan.
    let control = Arc::new(crest_engine::Control::new());
    {
        let events = shared.events.clone();
        control.observe(move |made| {
            let _ = events.send(Event::Steer(made.clone()));
        });
    }
    // Made before anyone joins, so a directory that can't be written is refused first.
    let dir = rundir::prepare_dir(run.output.out.as_deref(), run.output.force)?;
    let page_stop = crest_engine::Stop::new(None, None);
    let hub = Arc::new(crest_live::Hub::new());
    let routes = Router::new()
        .route(wire::JOIN_PATH, get(join))
        .with_state(Arc::clone(&shared));
    let server = crest_live::serve_with(a.listen, token, Arc::clone(&hub), routes).context("--listen")?;
    crate::web::adopt(Arc::clone(&hub));
    eprintln!(
        "collector: waiting for {count} workers on {} (crest worker --collector {}); live page {}",
        server.addr,
        server.addr,
        server.url()
    );

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (mut sigint, mut sigterm) = {
        let _guard = rt.enter();
        (signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?)
    };
    let mut c = Collecting {
        workers: (0..count).map(|_| None).collect(),
        merger: Merger::new(count),
        journal: None,
        pending: Vec::new(),
        start_written: false,
        points: 0,
        watch: StopWatch::new(plan.stop_when().to_vec()),
        stopped: None,
        interrupted: None,
        segment_starts: plan.segments().iter().map(|s| s.start).collect(),
        planned: opening.segments.clone(),
        by_hand: Vec::new(),
        control: Arc::clone(&control),
        users: match plan.load() {
            LoadModel::Closed { users, .. } => Some(users.clone()),
            LoadModel::Open { .. } => None,
        },
        start: Instant::now(),
        has_flows: !opening.flows.is_empty(),
        interval_s: opening.interval_s,
        hub: Arc::clone(&hub),
        quiet: run.output.quiet,
        silent_for: SILENT_FOR + plan.grace(),
    };
    // Join: every worker ready, then one start.
    let deadline = tokio::time::Instant::now() + a.join_timeout;
    let joined = rt.block_on(async {
        let mut ready = 0;
        while ready < count {
            tokio::select! {
                _ = sigint.recv() => return Err(Some(EndReason::Sigint)),
                _ = sigterm.recv() => return Err(Some(EndReason::Sigterm)),
                _ = tokio::time::sleep_until(deadline) => return Err(None),
                ev = rx.recv() => match ev {
                    Some(Event::Ready { index, rtt_us, tx, .. }) => {
                        ready += 1;
                        eprintln!(
                            "worker {index} joined ({ready} of {count}), its clock set to this one's within {:.3} ms",
                            rtt_us as f64 / 2e3
                        );
                        c.workers[index as usize] = Some(Worker::new(tx));
                    }
                    Some(Event::Failed { index, message }) => {
                        eprintln!("worker {index} could not take the plan: {message}");
                    }
                    Some(Event::Gone { index }) => {
                        shared.release(index);
                        if c.workers[index as usize].take().is_some() {
                            ready -= 1;
                            eprintln!("worker {index} left before the start ({ready} of {count})");
                        }
                    }
                    Some(Event::Entry { .. } | Event::Steer(_)) | None => {}
                },
            }
        }
        Ok(())
    });
    if let Err(signal) = joined {
        // Nothing was sent: the run directory made for it goes.
        output::discard_if_unused(&dir);
        let Some(signal) = signal else {
            let missing: Vec<String> = (0..count)
                .filter(|&i| c.workers[i as usize].is_none())
                .map(|i| i.to_string())
                .collect();
            let reason = format!(
                "--join-timeout {}: {} of {count} workers joined; worker{} {} never joined, so the run was not started",
                short_duration(a.join_timeout),
                count as usize - missing.len(),
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            );
            c.refuse_all(&rt, &reason);
            bail!(reason);
        };
        c.refuse_all(&rt, "the collector was interrupted before the start");
        return Ok(if signal == EndReason::Sigint { 130 } else { 143 });
    }
    // The merged run is journaled as it is added up, so a collector killed mid-run leaves a
    // run `crest report` rebuilds.
    match crate::journal::Writer::create(&dir.join(rundir::JOURNAL)) {
        Ok(j) => c.journal = Some(j),
        Err(e) => {
            c.refuse_all(&rt, "the collector cannot write its run directory");
            output::discard_if_unused(&dir);
            return Err(e);
        }
    }
    shared.started.store(true, Ordering::SeqCst);
    let at_us = shared.now_us() + START_AFTER.as_micros() as u64;
    c.tell(|| Down::Start { at_us });
    c.start = shared.epoch + Duration::from_micros(at_us);
    control.begin(c.start, &c.segment_starts);
    hub.begin(&opening, Some(Arc::clone(&control)), Some(page_stop.clone()));
    eprintln!("collector: {count} workers start together");

    for w in c.workers.iter_mut().flatten() {
        w.seen = Instant::now() + START_AFTER;
    }
    rt.block_on(async {
        let mut check = tokio::time::interval(Duration::from_secs(1));
        let mut users = tokio::time::interval(USERS_EVERY);
        let mut stopped_by_hand = false;
        while c.running() {
            tokio::select! {
                _ = sigint.recv() => c.interrupt(EndReason::Sigint),
                _ = sigterm.recv() => c.interrupt(EndReason::Sigterm),
                _ = check.tick() => c.silent(),
                _ = users.tick() => c.users_now(),
                _ = page_stop.cancelled(), if !stopped_by_hand => {
                    stopped_by_hand = true;
                    c.stop_by_hand();
                }
                ev = rx.recv() => match ev {
                    Some(ev) => c.event(ev),
                    None => break,
                },
            }
        }
    });
    control.end();
    c.write(&dir, &run.output)
}

/// A duration as it would be given: `5m`, `2s`, `1.5s`.
fn short_duration(d: Duration) -> String {
    match d.as_secs() {
        s if d.subsec_nanos() == 0 && s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        _ => format!("{d:?}"),
    }
}

/// The collector's flags as its workers read them: those after `collect`, then the global ones
/// given before it (`--redact`), its token left out.
fn forwarded(argv: &[String]) -> Vec<String> {
    let at = argv
        .iter()
        .skip(1)
        .position(|a| a == "collect")
        .map_or(argv.len(), |p| p + 1);
    let (before, after) = argv.split_at(at.min(argv.len()));
    let mut out = Vec::new();
    let mut args = after.iter().skip(1).chain(before.iter().skip(1));
    while let Some(a) = args.next() {
        if a == "--token" {
            args.next();
        } else if !a.starts_with("--token=") {
            out.push(a.clone());
        }
    }
    out
}

/// One worker, once it has joined.
struct Worker {
    tx: UnboundedSender<Down>,
    /// It sent its end, or was lost.
    done: bool,
    /// When it last sent anything.
    seen: Instant,
}

impl Worker {
    fn new(tx: UnboundedSender<Down>) -> Self {
        Worker {
            tx,
            done: false,
            seen: Instant::now(),
        }
    }
}

/// A collected run under way.
struct Collecting {
    workers: Vec<Option<Worker>>,
    /// The workers' parts as far as they came, each interval added up once every worker still
    /// running has sent it.
    merger: Merger,
    /// The merged run's journal, in the run directory made at the start: the one stream the
    /// page, the stop conditions and the results read, kept so that a killed collector's run is
    /// rebuilt by `crest report`.
    journal: Option<crate::journal::Writer>,
    /// Entries to journal once the merged run's start is (every worker has sent its own).
    pending: Vec<Entry>,
    start_written: bool,
    /// Requests journaled one by one: a run's results keep them only while there are few.
    points: u64,
    watch: StopWatch,
    stopped: Option<StopRecord>,
    interrupted: Option<EndReason>,
    segment_starts: Vec<Duration>,
    /// The plan's steps, and those started from the page, in order.
    planned: Vec<crest_model::results::Segment>,
    by_hand: Vec<crest_model::journal::Step>,
    control: Arc<crest_engine::Control>,
    /// Closed model: the plan's users over time.
    users: Option<crest_model::plan::UsersProfile>,
    /// The start instant, on this clock.
    start: Instant,
    has_flows: bool,
    interval_s: f64,
    hub: Arc<crest_live::Hub>,
    quiet: bool,
    /// See [`SILENT_FOR`].
    silent_for: Duration,
}

impl Collecting {
    fn tell(&self, m: impl Fn() -> Down) {
        for w in self.workers.iter().flatten() {
            let _ = w.tx.send(m());
        }
    }

    /// Tells every worker why it is refused, and waits (a few seconds at most) until each
    /// connection's writer has sent it: the collector exits next, and a message still queued
    /// then would reach the worker as a bare closed connection.
    fn refuse_all(&self, rt: &tokio::runtime::Runtime, reason: &str) {
        self.tell(|| Down::Refused {
            reason: reason.to_string(),
        });
        let sent = async {
            for w in self.workers.iter().flatten() {
                w.tx.closed().await;
            }
        };
        rt.block_on(async {
            let _ = tokio::time::timeout(Duration::from_secs(3), sent).await;
        });
    }

    fn running(&self) -> bool {
        self.workers.iter().flatten().any(|w| !w.done)
    }

    fn interrupt(&mut self, signal: EndReason) {
        if self.interrupted.replace(signal).is_none() {
            eprintln!("collector: interrupted; every worker is told to stop");
            self.tell(|| Down::Stop);
        }
    }

    /// The users the whole run has now, as every worker's engine works them out (each runs its
    /// lanes' share of them), for the page to show and a change to ramp from.
    fn users_now(&self) {
        let Some(profile) = &self.users else { return };
        let elapsed = self.start.elapsed();
        let users = self
            .control
            .users_at(elapsed)
            .unwrap_or_else(|| crest_schedule::users_at(profile, elapsed));
        self.control.set_users_now(users);
    }

    /// A change made from the page: every worker makes it, and it starts a step of the run.
    fn steered(&mut self, changed: crest_engine::Changed) {
        self.tell(|| Down::Steer {
            changed: changed.clone(),
        });
        for s in self.control.steps_from(self.by_hand.len()) {
            let step = crest_model::journal::Step::from(s);
            if !self.quiet {
                eprintln!(
                    "collector: {} from {:.1} s, on every worker",
                    crest_report::fmt::words::step_kind(&step.kind),
                    step.start_s
                );
            }
            self.hub.publish(&Entry::Step(step.clone()));
            self.journal(Entry::Step(step.clone()));
            self.by_hand.push(step);
        }
        self.segment_starts = crest_model::journal::steered(&self.planned, &self.by_hand)
            .iter()
            .map(|s| Duration::from_secs_f64(s.start_s))
            .collect();
    }

    /// Stopped from the page: every worker is told to stop, as when a stop condition holds.
    fn stop_by_hand(&mut self) {
        if self.stopped.is_some() {
            return;
        }
        let at = self.control.stopped_at().unwrap_or_else(|| self.start.elapsed());
        eprintln!("collector: stopped from the live page; every worker is told to stop");
        self.stopped = Some(StopRecord {
            condition: "stop (live page)".into(),
            at_s: at.as_secs_f64(),
            saw: None,
            detail: None,
        });
        self.tell(|| Down::Stop);
    }

    /// A worker silent for too long is lost; its connection is dropped.
    fn silent(&mut self) {
        let silent: Vec<u32> = (0..self.workers.len() as u32)
            .filter(|&i| {
                self.workers[i as usize]
                    .as_ref()
                    .is_some_and(|w| !w.done && w.seen.elapsed() > self.silent_for)
            })
            .collect();
        for index in silent {
            eprintln!(
                "worker {index} sent nothing for {:.0} s: taken as lost",
                self.silent_for.as_secs_f64()
            );
            self.event(Event::Gone { index });
        }
    }

    fn event(&mut self, ev: Event) {
        match ev {
            Event::Entry { index, entry } => {
                // A worker taken as lost is not heard from again.
                let Some(w) = self
                    .workers
                    .get_mut(index as usize)
                    .and_then(Option::as_mut)
                    .filter(|w| !w.done)
                else {
                    return;
                };
                w.seen = Instant::now();
                let mut fired = None;
                let added = match *entry {
                    Entry::Start(start) => self.merger.start(index, start),
                    Entry::Interval(r) => self.merger.interval(index, r).map(drop),
                    Entry::Monitor(m) => {
                        // The system under test's series are the first worker's, as in the merge.
                        if index == 0 {
                            self.hub.publish(&Entry::Monitor(m.clone()));
                            let values: Vec<_> = m.points.iter().map(|p| (p.key.clone(), p.unit, p.value)).collect();
                            fired = self.watch.monitored(m.t_s, &values);
                            self.merger.monitor(index, &m);
                            self.journal(Entry::Monitor(m));
                        }
                        Ok(())
                    }
                    Entry::Points { points } => {
                        self.merger.points(&points);
                        // Past the run's cap, results keep none: nor does the journal.
                        self.points = self.points.saturating_add(points.len() as u64);
                        if self.points <= crest_model::results::POINTS_KEPT {
                            self.journal(Entry::Points { points });
                        }
                        Ok(())
                    }
                    Entry::End(e) => {
                        w.done = true;
                        self.merger.end(index, e)
                    }
                    // A worker is not steered by hand, so it journals no steps of its own: the
                    // run's steps are the collector's.
                    Entry::Step(_) => Ok(()),
                };
                if let Err(e) = added {
                    eprintln!("worker {index}: what it sent can't be added up: {e}");
                }
                if let Some(s) = fired {
                    self.stop(s);
                }
                self.judge();
            }
            Event::Gone { index } => {
                if let Some(w) = self.workers.get_mut(index as usize).and_then(Option::as_mut) {
                    if !w.done {
                        w.done = true;
                        // Stuck rather than gone, it stops sending what would no longer count.
                        let _ = w.tx.send(Down::Stop);
                        self.merger.lost(index);
                        let at = self
                            .merger
                            .passed(index)
                            .map_or(0.0, |k| (k + 1) as f64 * self.interval_s);
                        eprintln!(
                            "worker {index} lost after {at:.0} s of the run, before its end; the run goes on without it"
                        );
                    }
                }
                self.judge();
            }
            Event::Failed { index, message } => eprintln!("worker {index} failed: {message}"),
            Event::Steer(changed) => self.steered(changed),
            Event::Ready { index, tx, .. } => {
                let _ = tx.send(Down::Refused {
                    reason: format!("worker {index}: the run has started"),
                });
            }
        }
    }

    /// Journals an entry of the merged run; one that comes before its start, once it is.
    fn journal(&mut self, entry: Entry) {
        if !self.start_written {
            self.pending.push(entry);
        } else if let Some(j) = self.journal.as_mut() {
            j.write(&entry);
        }
    }

    /// Journals the merged run's start once every worker has sent its own (or was lost), then
    /// what waited for it.
    fn write_start(&mut self) {
        if self.start_written {
            return;
        }
        let Some(start) = self.merger.start_entry() else { return };
        self.start_written = true;
        if let Some(j) = self.journal.as_mut() {
            j.write(&Entry::Start(start));
            for e in self.pending.drain(..) {
                j.write(&e);
            }
        }
    }

    /// Adds up each interval that every worker still running has sent: judged, shown on the
    /// page, journaled, and let go.
    fn judge(&mut self) {
        self.write_start();
        let closed = match self.merger.close() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("collector: an interval can't be added up: {e}");
                return;
            }
        };
        for r in closed {
            self.interval(&r);
            self.journal(Entry::Interval(r));
        }
    }

    fn interval(&mut self, r: &IntervalRecord) {
        let i = &r.interval;
        if !self.quiet {
            eprintln!(
                "{:>6.0}s {:>10} requests {:>8} failed",
                i.t_s + self.interval_s,
                i.requests,
                i.failures
            );
        }
        self.hub.publish(&Entry::Interval(r.clone()));
        let latency = i.latency.decode().ok().filter(|_| i.requests > 0);
        let figures = IntervalFigures {
            t_s: i.t_s,
            len_s: self.interval_s,
            segment: crest_schedule::segment_at(&self.segment_starts, Duration::from_secs_f64(i.t_s)),
            requests: i.requests,
            failures: i.failures,
            latency: latency.as_ref(),
            iterations: self.has_flows.then(|| r.iterations.iter().map(|s| s.completed).sum()),
        };
        if let Some(s) = self.watch.interval(&figures) {
            self.stop(s);
        }
    }

    fn stop(&mut self, s: crest_analysis::stop::Stopped) {
        if self.stopped.is_some() {
            return;
        }
        eprintln!(
            "collector: stop condition {} held at {:.0} s; every worker is told to stop",
            s.condition, s.at_s
        );
        self.stopped = Some(StopRecord {
            condition: s.condition,
            at_s: s.at_s,
            saw: Some(s.reason),
            detail: None,
        });
        self.tell(|| Down::Stop);
    }

    /// The one run the workers' parts add up to, written as a run directory.
    fn write(mut self, dir: &Path, out: &crate::cli::OutputArgs) -> Result<u8> {
        self.judge();
        // The steps started from the page are the collector's, as it made them.
        let (start, end, results) = self
            .merger
            .finish(self.stopped, Some(self.by_hand), self.interrupted)
            .context("cannot merge the workers' parts")?;
        let mut journal = self
            .journal
            .take()
            .context("internal: the collector's journal was not opened")?;
        if !self.start_written {
            journal.write(&Entry::Start(start));
            for e in self.pending.drain(..) {
                journal.write(&e);
            }
        }
        if let Some(e) = end {
            journal.write(&Entry::End(e));
        }
        let whole = journal.finish().is_ok();
        results
            .check()
            .context("the workers' parts do not add up to a valid run")?;
        for w in &results.workers {
            if let Some(l) = &w.lost {
                eprintln!(
                    "worker {} was lost at {:.1} s: {:.0}% of the load was missing for the last {:.1} s",
                    w.index,
                    l.at_s,
                    l.share * 100.0,
                    l.missing_s
                );
            }
        }
        let mut written = output::write_all(dir, &results, out)?;
        written.complete &= whole;
        Ok(crate::run::exit_code(results.ended_by, &written, out.strict))
    }
}

/// `GET /workers/join`, upgraded: one worker's connection.
async fn join(State(shared): State<Arc<Shared>>, headers: HeaderMap, req: Request) -> Response {
    if !crest_live::bears(&headers, &shared.token) {
        let mut r = (
            StatusCode::UNAUTHORIZED,
            Json(serde_json::json!({ "error": "the token is not this collector's: give its token as --token or CREST_TOKEN" })),
        )
            .into_response();
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        return r;
    }
    let upgrade = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case(wire::PROTOCOL));
    if !upgrade {
        return (
            StatusCode::BAD_REQUEST,
            Json(serde_json::json!({ "error": "workers join with `crest worker`" })),
        )
            .into_response();
    }
    let on = hyper::upgrade::on(req);
    tokio::spawn(async move {
        match on.await {
            Ok(up) => serve_worker(shared, hyper_util::rt::TokioIo::new(up)).await,
            Err(e) => eprintln!("collector: a worker's connection failed: {e}"),
        }
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::CONNECTION, "upgrade")
        .header(header::UPGRADE, wire::PROTOCOL)
        .body(axum::body::Body::empty())
        .unwrap_or_default()
}

/// One worker's side of the run: hello, clock, plan, then its entries until its stream ends.
async fn serve_worker<T>(shared: Arc<Shared>, io: T)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (read, mut write) = tokio::io::split(io);
    let (tx, mut down): (UnboundedSender<Down>, UnboundedReceiver<Down>) = unbounded_channel();
    tokio::spawn(async move {
        while let Some(m) = down.recv().await {
            let last = matches!(m, Down::Refused { .. });
            if write.write_all(&wire::line(&m)).await.is_err() || last {
                break;
            }
        }
        let _ = write.shutdown().await;
    });
    let mut lines = BufReader::new(read).lines();
    let refuse = |reason: String| {
        let _ = tx.send(Down::Refused { reason });
    };
    let hello = match lines.next_line().await {
        Ok(Some(l)) => serde_json::from_str::<Up>(&l),
        _ => return,
    };
    let asked = match hello {
        Ok(Up::Hello { crest_version, index }) if crest_version == env!("CARGO_PKG_VERSION") => index,
        Ok(Up::Hello { crest_version, .. }) => {
            let reason = format!(
                "this collector is crest {}, the worker crest {crest_version}: run the same version",
                env!("CARGO_PKG_VERSION")
            );
            eprintln!("collector: a worker was refused: {reason}");
            return refuse(reason);
        }
        _ => return refuse("not a worker's hello (another crest version?)".into()),
    };
    let index = match shared.claim(asked) {
        Ok(i) => i,
        Err(reason) => {
            eprintln!("collector: a worker was refused: {reason}");
            return refuse(reason);
        }
    };
    let _ = tx.send(Down::Welcome {
        index,
        count: shared.count,
        plan: shared.plan.clone(),
    });
    let mut ready = false;
    while let Ok(Some(l)) = lines.next_line().await {
        match serde_json::from_str::<Up>(&l) {
            Ok(Up::Ping { t_us }) => {
                let _ = tx.send(Down::Pong {
                    t_us,
                    at_us: shared.now_us(),
                });
            }
            Ok(Up::Ready { digest, rtt_us, .. }) => {
                if digest != shared.digest {
                    let reason = format!(
                        "worker {index} resolved another plan than this collector's (its digest {}, this one's {}): the same crest, scenario and flags are needed",
                        &digest[..digest.len().min(12)],
                        &shared.digest[..12]
                    );
                    eprintln!("collector: {reason}");
                    shared.release(index);
                    return refuse(reason);
                }
                ready = true;
                let _ = shared.events.send(Event::Ready {
                    index,
                    rtt_us,
                    tx: tx.clone(),
                });
            }
            Ok(Up::Entry { entry }) if ready => {
                let _ = shared.events.send(Event::Entry { index, entry });
            }
            Ok(Up::Failed { message }) => {
                shared.release(index);
                let _ = shared.events.send(Event::Failed { index, message });
                return;
            }
            Ok(other) => eprintln!("collector: worker {index} sent {other:?} out of turn"),
            Err(e) => {
                eprintln!("collector: worker {index} sent a line that can't be read: {e}");
                break;
            }
        }
    }
    if ready {
        let _ = shared.events.send(Event::Gone { index });
    } else {
        shared.release(index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workers get every flag but the token, global ones given before the subcommand too.
    #[test]
    fn the_flags_handed_on_leave_the_token_out() {
        let argv: Vec<String> = [
            "crest",
            "--redact",
            "sig",
            "collect",
            "http://h/",
            "--token",
            "t0",
            "-c",
            "4",
            "--token=t1",
            "--workers",
            "2",
        ]
        .map(String::from)
        .into();
        assert_eq!(
            forwarded(&argv),
            ["http://h/", "-c", "4", "--workers", "2", "--redact", "sig"]
        );
    }
}
