//! `crest collect`: one run over N workers (`crest worker`). The collector resolves the plan
//! as each worker will (so a plan that can't be split is refused before anyone joins), waits
//! on its one listener for N workers ([`serve`]), checks each one's version and plan, starts
//! them at one instant of its own clock, adds up their journal entries as they come, judges
//! stop conditions on the merged intervals and tells every worker to stop when one fires, and
//! at the end writes the one run they add up to ([`running`], as `crest merge` does). A worker
//! whose stream ends without its end is lost: noted, and the run goes on.

mod running;
mod serve;

use crate::cli::CollectArgs;
use crate::wire::{self, Down, PlanFile, PlanText};
use crate::{output, rundir};
use anyhow::{bail, Context, Result};
use axum::routing::get;
use axum::Router;
use crest_model::results::EndReason;
use running::{Collecting, Worker};
use serve::{join, Event, Shared};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// Time from the last worker's joining to the start, for the start to reach every worker.
const START_AFTER: Duration = Duration::from_millis(500);

/// A running worker sends an interval every second; one silent this long besides the run's
/// grace for requests in flight is stuck (a stopped process, a network that drops without a
/// reset) and is taken as lost, so the run can end.
pub(super) const SILENT_FOR: Duration = Duration::from_secs(15);

/// `crest collect`. Returns the exit code.
pub fn command(a: CollectArgs, argv: &[String]) -> Result<u8> {
    let mut run = a.run;
    crate::output::check_before(&run.output)?;
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
    let token = token(a.token)?;
    let files = match &plan_text {
        Some((_, dir)) => files_handed_on(dir, &prepared.files)?,
        None => Vec::new(),
    };
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
    let mut c = Collecting::new(
        count,
        &plan,
        &opening,
        Arc::clone(&control),
        Arc::clone(&hub),
        run.output.quiet,
    );
    // Join: every worker ready, then one start.
    if let Err(signal) = rt.block_on(wait_for_workers(
        &mut c,
        &mut rx,
        &shared,
        a.join_timeout,
        [&mut sigint, &mut sigterm],
    )) {
        // Nothing was sent: the run directory made for it goes.
        output::discard_if_unused(&dir);
        return match signal {
            Some(signal) => {
                c.refuse_all(&rt, "the collector was interrupted before the start");
                Ok(if signal == EndReason::Sigint { 130 } else { 143 })
            }
            None => {
                let reason = never_joined(&c, a.join_timeout);
                c.refuse_all(&rt, &reason);
                Err(anyhow::anyhow!(reason))
            }
        };
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
    control.begin(c.start, c.judge.starts());
    hub.begin(&opening, Some(Arc::clone(&control)), Some(page_stop.clone()));
    eprintln!("collector: {count} workers start together");

    for w in c.workers.iter_mut().flatten() {
        w.seen = Instant::now() + START_AFTER;
    }
    rt.block_on(c.go(&mut rx, &page_stop, [&mut sigint, &mut sigterm]));
    control.end();
    c.write(&dir, &run.output)
}

/// The workers' token: given, or made and shown for the workers to be given.
fn token(given: Option<String>) -> Result<String> {
    match given
        .or_else(|| std::env::var("CREST_TOKEN").ok())
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
    {
        Some(t) => Ok(t),
        None => {
            let t = crest_live::new_token().context("cannot make a token")?;
            eprintln!("token: {t} (give it to the workers as --token or CREST_TOKEN)");
            Ok(t)
        }
    }
}

/// The files a scenario in `dir` reads, to hand to the workers with its text, up to
/// [`wire::MAX_FILES_BYTES`] in all.
fn files_handed_on(dir: &Path, names: &[String]) -> Result<Vec<PlanFile>> {
    let mut files = Vec::new();
    let mut bytes = 0;
    for name in names {
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
    Ok(files)
}

/// Waits until every worker is ready. Fails with the signal that came first (SIGINT, then
/// SIGTERM, in `signals`), or with none when `timeout` passed first.
async fn wait_for_workers(
    c: &mut Collecting,
    rx: &mut UnboundedReceiver<Event>,
    shared: &Shared,
    timeout: Duration,
    [sigint, sigterm]: [&mut tokio::signal::unix::Signal; 2],
) -> Result<(), Option<EndReason>> {
    let count = c.workers.len();
    let deadline = tokio::time::Instant::now() + timeout;
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
}

/// Why the run was not started: the workers that never joined within `timeout`.
fn never_joined(c: &Collecting, timeout: Duration) -> String {
    let count = c.workers.len();
    let missing: Vec<String> = (0..count)
        .filter(|&i| c.workers[i].is_none())
        .map(|i| i.to_string())
        .collect();
    format!(
        "--join-timeout {}: {} of {count} workers joined; worker{} {} never joined, so the run was not started",
        short_duration(timeout),
        count - missing.len(),
        if missing.len() == 1 { "" } else { "s" },
        missing.join(", ")
    )
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
