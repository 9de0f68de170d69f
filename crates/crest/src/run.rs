//! `crest run`: executes a plan, watches for signals, shows progress, and writes the results.
//!
//! The engine runs on its own threads; this thread only receives closed intervals, reacts to
//! signals, journals each closed interval and sums it into the results document. Everything
//! written comes from that document, so `results.json` and the summary can never disagree, and
//! the document is what the journal adds up to.

use crate::cli::OutputArgs;
use crate::progress::Progress;
use crate::{limits, output};
use anyhow::{Context, Result};
use crest_analysis::stop::{IntervalFigures, StopWatch, Stopped};
use crest_engine::{Shape, Stop, StopCause, Workload};
use crest_http::HttpWorkload;
use crest_metrics::{IntervalAcc, Recorder, Series};
use crest_model::journal::{End as JournalEnd, Entry, Fold, Start as JournalStart};
use crest_model::plan::{LoadModel, Plan, Target};
use crest_model::redact;
use crest_model::results::{self, ClientStats, EndReason, HttpConfig, Results, RunConfig, ScenarioConfig, StopRecord};
use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, SignalKind};

/// Length of one interval of the time series.
const INTERVAL: Duration = Duration::from_secs(1);

/// Which signal interrupted the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupt {
    Int,
    Term,
}

/// Runs a quick-mode plan.
pub fn quick(plan: Plan, command_line: &[String], out: &OutputArgs) -> Result<u8> {
    let Target::Http(http) = &plan.target else {
        anyhow::bail!("internal: quick mode without a URL")
    };
    let workload = HttpWorkload::new(http, 0).with_context(|| format!("URL {}", redact::url(&http.url)))?;
    execute(plan, workload, command_line, out)
}

/// Runs `plan` with `workload` and writes its results. Returns the process exit code.
pub fn execute<W: Workload>(plan: Plan, workload: W, command_line: &[String], out: &OutputArgs) -> Result<u8> {
    let plan = crate::web::manual(plan, &out.web, command_line);
    let dir = output::prepare_dir(out.out.as_deref(), out.force)?;
    let journal = dir.join(crate::journal::FILE);
    let measured = match measure(
        &plan,
        Arc::new(workload),
        command_line,
        out.quiet,
        Some((&journal, None)),
    ) {
        Ok(m) => m,
        Err(e) => {
            output::discard_if_unused(&dir);
            return Err(e);
        }
    };
    let mut written = output::write_all(&dir, &measured.results, out)?;
    written.complete &= measured.whole;
    Ok(exit_code(measured.results.ended_by, &written, out.strict))
}

/// Exit code of a run whose results could not be written in full (the summary was shown, and
/// says what was kept).
pub const EXIT_NOT_WRITTEN: u8 = 4;

/// The process exit code for a finished run.
pub fn exit_code(ended_by: EndReason, written: &output::Written, strict: bool) -> u8 {
    let summary = &written.summary;
    match ended_by {
        EndReason::Sigint => 130,
        EndReason::Sigterm => 143,
        _ if !written.complete => EXIT_NOT_WRITTEN,
        // Nothing succeeded: whatever the thresholds say, the run measured no service.
        _ if summary.successes == 0 => 1,
        _ if summary.thresholds_failed() => 1,
        _ if strict && !summary.client_bound.is_empty() => 3,
        _ => 0,
    }
}

/// A measured run, not yet written anywhere.
pub struct Measured {
    /// Everything measured.
    pub results: Results,
    /// The signal that stopped it, if one did.
    pub interrupted: Option<Interrupt>,
    /// False when its journal or request log could not be written in full (a full disk): the
    /// figures are whole, a copy on disk is not, and the exit code says so.
    pub whole: bool,
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
) -> Result<Measured> {
    limits::ensure_file_limit(plan.load.max_concurrency())?;
    let mut watch = StopWatch::new(plan.stop_when.clone());
    let segment_starts: Vec<Duration> = plan.segments.iter().map(|s| s.start).collect();
    let web = crate::web::hub();
    let control = web.map(|_| Arc::new(crest_engine::Control::new()));
    let mut stopped_by: Option<Stopped> = None;

    let shape = Shape {
        model: plan.load.clone(),
        threads: plan.threads,
        grace: plan.grace,
        tick: INTERVAL,
        segments: plan.segments.iter().map(|s| s.start).collect(),
        control: control.clone(),
    };
    let open_model = matches!(plan.load, LoadModel::Open { .. });
    let (tx, rx) = mpsc::channel();
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

    // Checked before anything is sent; sampling starts with the load.
    let sampler = crest_monitor::Sampler::new(&plan.monitor).map_err(|e| anyhow::anyhow!("monitor: {e}"))?;
    let threads = shape.threads_used();
    let config = run_config(plan, command_line, threads);
    let environment = Some(crate::environment::capture());
    let (journal, part) = journal.unzip();
    // The request log sits beside the journal; a run without a journal (none today) has none.
    let log_path = journal.filter(|_| plan.log_requests).map(crate::reqlog::beside);
    let mut journal = journal.map(crate::journal::Writer::create).transpose()?;
    let reqlog = log_path
        .map(|p| crate::reqlog::Log::create(&p, &plan.names))
        .transpose()?;
    let cpu_at_start = crest_monitor::own::cpu_s();
    let started_at = chrono::Utc::now();
    let start = Instant::now();
    let flows: Vec<String> = config
        .scenario
        .as_ref()
        .map(|s| s.flows.iter().map(|(name, _)| name.clone()).collect())
        .unwrap_or_default();
    let has_flows = !flows.is_empty();
    let opening = JournalStart {
        schema: crest_model::journal::JOURNAL_SCHEMA.into(),
        version: crest_model::journal::JOURNAL_VERSION,
        crest_version: env!("CARGO_PKG_VERSION").into(),
        started_at: started_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        config,
        environment,
        names: plan.names.clone(),
        part_of: plan.part_of.clone(),
        flows,
        segments: planned_segments(plan),
        interval_s: INTERVAL.as_secs_f64(),
        target_rps: match &plan.load {
            LoadModel::Open { rate, .. } => Some(rate.max()),
            LoadModel::Closed { .. } => None,
        },
        part: part.flatten(),
    };
    if let Some(j) = journal.as_mut() {
        j.write(&Entry::Start(opening.clone()));
    }
    let mut fold = Fold::default();
    // Each closed interval and each monitor sample, once, in order: journaled, and intervals
    // summed into the results.
    let mut keep = |entry: Entry| -> Result<()> {
        if let Some(j) = journal.as_mut() {
            j.write(&entry);
        }
        if let Some(w) = web {
            w.publish(&entry);
        }
        match &entry {
            Entry::Interval(record) => fold.add(record).context("cannot add up an interval"),
            Entry::Points { points } => {
                fold.add_points(points);
                Ok(())
            }
            // The end's record carries the whole series (the monitor thread builds it), so the
            // samples are only for a reader of the journal after a crash.
            Entry::Monitor(_) | Entry::Start(_) | Entry::End(_) => Ok(()),
        }
    };
    // Requests so far, statements included: a closed interval's record carries its requests one
    // by one while the run has made few enough for the results to keep them (Fold counts alike).
    let mut samples = 0u64;
    let mut interval_entries = |done: &mut IntervalAcc| {
        samples += done.samples();
        let record = Entry::Interval(done.to_record(INTERVAL.as_secs_f64()));
        let points =
            (samples <= results::POINTS_KEPT && done.samples() > 0).then(|| Entry::Points { points: done.points() });
        let rows = std::mem::take(&mut done.rows);
        if let Some(log) = &reqlog {
            log.send(rows);
        }
        std::iter::once(record).chain(points)
    };
    let monitor = if sampler.is_empty() {
        None
    } else {
        Some(sampler.spawn(start).context("cannot start the monitor thread")?)
    };
    let stop = Stop::new(plan.stop.duration.map(|d| start + d), plan.stop.requests);
    if let Some(w) = web {
        w.begin(&opening, control.clone(), Some(stop.clone()));
    }
    let engine = {
        let (stop, shape) = (stop.clone(), shape.clone());
        let part_of = plan.part_of.clone();
        let logging = reqlog.is_some();
        std::thread::Builder::new().name("crest-engine".into()).spawn(move || {
            crest_engine::run(&shape, start, &stop, workload, |_| {
                Recorder::new(INTERVAL, open_model, tx.clone())
                    .with_parts(&part_of)
                    .logging(logging)
            })
        })?
    };

    let mut series = Series::new(threads);
    let mut progress = Progress::new(quiet, INTERVAL.as_secs_f64());
    let mut interrupt = None;
    let mut kept: Result<()> = Ok(());
    rt.block_on(async {
        let mut poll = tokio::time::interval(Duration::from_millis(100));
        loop {
            tokio::select! {
                _ = sigint.recv() => {
                    if interrupt.is_some() { stop.force(); } else { stop.cancel(); }
                    interrupt.get_or_insert(Interrupt::Int);
                }
                _ = sigterm.recv() => {
                    if interrupt.is_some() { stop.force(); } else { stop.cancel(); }
                    interrupt.get_or_insert(Interrupt::Term);
                }
                _ = sighup.recv() => {
                    if interrupt.is_some() { stop.force(); } else { stop.cancel(); }
                    interrupt.get_or_insert(Interrupt::Term);
                }
                _ = poll.tick() => {
                    for acc in rx.try_iter() {
                        for mut done in series.add(acc) {
                            progress.interval(&done);
                            for entry in interval_entries(&mut done) {
                                if kept.is_ok() {
                                    kept = keep(entry);
                                }
                            }
                            let t = done.index as f64 * INTERVAL.as_secs_f64();
                            let iterations = has_flows.then(|| done.iterations_ended());
                            let figures = IntervalFigures {
                                t_s: t,
                                len_s: INTERVAL.as_secs_f64(),
                                segment: crest_schedule::segment_at(&segment_starts, Duration::from_secs_f64(t)),
                                requests: done.requests,
                                failures: done.failures,
                                latency: done.latency(),
                                iterations,
                            };
                            if stopped_by.is_none() {
                                if let Some(s) = watch.interval(&figures) {
                                    stop.cancel();
                                    stopped_by = Some(s);
                                }
                            }
                        }
                    }
                    for snap in monitor.iter().flat_map(|m| m.snapshots()) {
                        if stopped_by.is_none() {
                            if let Some(s) = watch.monitored(snap.t_s, &snap.values) {
                                stop.cancel();
                                stopped_by = Some(s);
                            }
                        }
                        if kept.is_ok() {
                            kept = keep(Entry::Monitor(snap.sample));
                        }
                    }
                    if engine.is_finished() {
                        break;
                    }
                }
            }
        }
    });
    let report = engine
        .join()
        .map_err(|_| anyhow::anyhow!("the engine thread panicked"))?
        .context("the engine failed")?;
    let duration = report.finished.saturating_duration_since(start);
    let monitor = monitor.map(crest_monitor::Monitor::finish);
    for sink in report.sinks {
        sink.finish();
    }
    let end_index = (duration.as_secs_f64() / INTERVAL.as_secs_f64()).ceil().max(1.0) as u64 - 1;
    let mut rest: Vec<IntervalAcc> = rx.try_iter().flat_map(|acc| series.add(acc)).collect();
    rest.extend(series.finish(end_index));
    for done in &mut rest {
        progress.interval(done);
        for entry in interval_entries(done) {
            if kept.is_ok() {
                kept = keep(entry);
            }
        }
    }
    let mut whole = true;
    if let Some(log) = reqlog {
        if let Err(e) = log.finish() {
            // As for the journal: the run and its figures are whole, only this copy is not.
            eprintln!("error: {e:#}");
            whole = false;
        }
    }
    kept?;
    progress.finish();

    // Stopped from the live page: ended by a condition, which says so.
    let by_hand = control
        .as_ref()
        .and_then(|c| c.stopped_at())
        .filter(|_| stopped_by.is_none());
    let ended_by = match (interrupt, report.cause) {
        (Some(Interrupt::Int), _) => EndReason::Sigint,
        (Some(Interrupt::Term), _) => EndReason::Sigterm,
        (None, _) if stopped_by.is_some() || by_hand.is_some() => EndReason::Condition,
        (None, StopCause::Count) => EndReason::Requests,
        (None, StopCause::Completed) => EndReason::Completed,
        _ => EndReason::Duration,
    };
    let closing = JournalEnd {
        duration_s: duration.as_secs_f64(),
        ended_by,
        stopped_by: stopped_by
            .map(|s| StopRecord {
                condition: s.condition,
                at_s: s.at_s,
                detail: crest_report::fmt::words::stop_detail(&s.reason),
            })
            .or(by_hand.map(|at| StopRecord {
                condition: "stop (live page)".into(),
                at_s: at.as_secs_f64(),
                detail: "POST /api/stop".into(),
            })),
        abandoned: report.abandoned,
        arrivals: opening.target_rps.map(|_| report.arrivals),
        client: Some(ClientStats {
            cpu_s: (crest_monitor::own::cpu_s() - cpu_at_start).max(0.0),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
            threads: threads as u64,
            peak_rss_bytes: crest_monitor::own::peak_rss_bytes(),
        }),
        monitor,
        users: user_times(&plan.load, &report.user_times, report.users_cut_short),
        // Steps started by hand follow the plan's last one reached.
        segments: control
            .filter(|c| !c.steps().is_empty())
            .map(|c| crest_live::with_live_steps(&opening.segments, &c)),
    };
    if let Some(mut j) = journal {
        j.write(&Entry::End(closing.clone()));
        if let Err(e) = j.finish() {
            // The run and its figures are whole; only the copy on disk is not.
            eprintln!("error: {e:#}");
            whole = false;
        }
    }
    let results = fold.finish(&opening, Some(&closing));
    Ok(Measured {
        results,
        interrupted: interrupt,
        whole,
    })
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
    let (model, rate, iterations) = match &plan.load {
        LoadModel::Closed { iterations, .. } => ("closed", None, *iterations),
        LoadModel::Open { rate, .. } => ("open", Some(rate.max()), None),
    };
    RunConfig {
        command_line: redact::command_line(command_line),
        model: model.into(),
        concurrency: plan.load.max_concurrency(),
        rate,
        requests: plan.stop.requests,
        iterations,
        duration_s: plan.stop.duration.map(|d| d.as_secs_f64()),
        threads: threads as u64,
        http: match &plan.target {
            Target::Http(h) => Some(HttpConfig {
                method: h.method.clone(),
                url: redact::url(&h.url),
                headers: h
                    .headers
                    .iter()
                    .map(|(n, v)| (n.clone(), redact::header_value(n, v)))
                    .collect(),
                body_bytes: h.body.len() as u64,
                timeout_s: h.timeout.as_secs_f64(),
                keepalive: h.keepalive,
                insecure: h.tls.insecure,
            }),
            Target::Scenario(_) => None,
        },
        scenario: match &plan.target {
            Target::Scenario(s) => Some(ScenarioConfig {
                path: s.path.clone(),
                sha256: s.sha256.clone(),
                flows: s.flows.clone(),
            }),
            Target::Http(_) => None,
        },
        thresholds: plan.thresholds.clone(),
        stop_conditions: plan.stop_when.clone(),
    }
}

/// The plan's steps as planned: each ends where the next starts (the last where the plan ends,
/// or, when no duration bounds it, where it starts); the run clips them to what it reached.
fn planned_segments(plan: &Plan) -> Vec<results::Segment> {
    let starts: Vec<f64> = plan.segments.iter().map(|s| s.start.as_secs_f64()).collect();
    let last = starts.last().copied().unwrap_or(0.0);
    let end = plan.stop.duration.map_or(last, |d| d.as_secs_f64().max(last));
    plan.segments
        .iter()
        .enumerate()
        .map(|(i, s)| results::Segment {
            name: s.name.clone(),
            start_s: starts[i],
            end_s: starts.get(i + 1).copied().unwrap_or(end),
            users: s.users,
            rate: s.rate,
        })
        .collect()
}
