//! A collected run under way: the workers' entries added up as they come, handed to the page,
//! the stop conditions and the journal, and the one run they add up to written at the end.

use super::serve::Event;
use super::SILENT_FOR;
use crate::judge::Judge;
use crate::output;
use crate::wire::Down;
use anyhow::{Context, Result};
use crest_model::journal::Entry;
use crest_model::merge::Merger;
use crest_model::plan::{LoadModel, Plan};
use crest_model::results::{EndReason, StopRecord};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// How often the users the whole run has are worked out for the page (and for a change of
/// users by hand, which ramps from them).
const USERS_EVERY: Duration = Duration::from_millis(100);

/// One worker, once it has joined.
pub(super) struct Worker {
    pub(super) tx: UnboundedSender<Down>,
    /// It sent its end, or was lost.
    pub(super) done: bool,
    /// When it last sent anything.
    pub(super) seen: Instant,
}

impl Worker {
    pub(super) fn new(tx: UnboundedSender<Down>) -> Self {
        Worker {
            tx,
            done: false,
            seen: Instant::now(),
        }
    }
}

/// A collected run under way.
pub(super) struct Collecting {
    pub(super) workers: Vec<Option<Worker>>,
    /// The workers' parts as far as they came, each interval added up once every worker still
    /// running has sent it.
    pub(super) merger: Merger,
    /// The merged run's journal, in the run directory made at the start: the one stream the
    /// page, the stop conditions and the results read, kept so that a killed collector's run is
    /// rebuilt by `crest report`.
    pub(super) journal: Option<crate::journal::Writer>,
    /// Entries to journal once the merged run's start is (every worker has sent its own).
    pub(super) pending: Vec<Entry>,
    pub(super) start_written: bool,
    /// Requests journaled one by one: a run's results keep them only while there are few.
    pub(super) points: u64,
    /// The run's stop conditions, judged on the merged run's entries.
    pub(super) judge: Judge,
    /// Why the run was stopped before its plan ended it: a condition, or the page.
    pub(super) stopped: Option<StopRecord>,
    pub(super) interrupted: Option<EndReason>,
    /// The steps started from the page, in order.
    pub(super) by_hand: Vec<crest_model::journal::Step>,
    pub(super) control: Arc<crest_engine::Control>,
    /// Closed model: the plan's users over time.
    pub(super) users: Option<crest_model::plan::UsersProfile>,
    /// The start instant, on this clock.
    pub(super) start: Instant,
    pub(super) interval_s: f64,
    pub(super) hub: Arc<crest_live::Hub>,
    pub(super) quiet: bool,
    /// See [`SILENT_FOR`].
    pub(super) silent_for: Duration,
    /// The collector's own label, tags and git checkout: the run's, whatever machines its
    /// workers ran on.
    pub(super) provenance: Option<crest_model::results::Provenance>,
}

impl Collecting {
    /// The run of `plan` over `count` workers, which `opening` starts, before any worker joined.
    pub(super) fn new(
        count: u32,
        plan: &Plan,
        opening: &crest_model::journal::Start,
        control: Arc<crest_engine::Control>,
        hub: Arc<crest_live::Hub>,
        quiet: bool,
    ) -> Self {
        Collecting {
            workers: (0..count).map(|_| None).collect(),
            merger: Merger::new(count),
            journal: None,
            pending: Vec::new(),
            start_written: false,
            points: 0,
            judge: Judge::new(opening, plan.stop_when().to_vec()),
            stopped: None,
            interrupted: None,
            by_hand: Vec::new(),
            control,
            users: match plan.load() {
                LoadModel::Closed { users, .. } => Some(users.clone()),
                LoadModel::Open { .. } => None,
            },
            start: Instant::now(),
            interval_s: opening.interval_s,
            hub,
            quiet,
            silent_for: SILENT_FOR + plan.grace(),
            provenance: plan.provenance().cloned(),
        }
    }

    /// Runs until every worker has ended or was lost: takes their entries, signals, the page's
    /// stop, and silent workers as they come.
    pub(super) async fn go(
        &mut self,
        rx: &mut UnboundedReceiver<Event>,
        page_stop: &crest_engine::Stop,
        [sigint, sigterm]: [&mut tokio::signal::unix::Signal; 2],
    ) {
        let mut check = tokio::time::interval(Duration::from_secs(1));
        let mut users = tokio::time::interval(USERS_EVERY);
        let mut stopped_by_hand = false;
        while self.running() {
            tokio::select! {
                _ = sigint.recv() => self.interrupt(EndReason::Sigint),
                _ = sigterm.recv() => self.interrupt(EndReason::Sigterm),
                _ = check.tick() => self.silent(),
                _ = users.tick() => self.users_now(),
                _ = page_stop.cancelled(), if !stopped_by_hand => {
                    stopped_by_hand = true;
                    self.stop_by_hand();
                }
                ev = rx.recv() => match ev {
                    Some(ev) => self.event(ev),
                    None => break,
                },
            }
        }
    }

    pub(super) fn tell(&self, m: impl Fn() -> Down) {
        for w in self.workers.iter().flatten() {
            let _ = w.tx.send(m());
        }
    }

    /// Tells every worker why it is refused, and waits (a few seconds at most) until each
    /// connection's writer has sent it: the collector exits next, and a message still queued
    /// then would reach the worker as a bare closed connection.
    pub(super) fn refuse_all(&self, rt: &tokio::runtime::Runtime, reason: &str) {
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

    pub(super) fn running(&self) -> bool {
        self.workers.iter().flatten().any(|w| !w.done)
    }

    pub(super) fn interrupt(&mut self, signal: EndReason) {
        if self.interrupted.replace(signal).is_none() {
            eprintln!("collector: interrupted; every worker is told to stop");
            self.tell(|| Down::Stop);
        }
    }

    /// The users the whole run has now, as every worker's engine works them out (each runs its
    /// lanes' share of them), for the page to show and a change to ramp from.
    pub(super) fn users_now(&self) {
        let Some(profile) = &self.users else { return };
        let elapsed = self.start.elapsed();
        let users = self
            .control
            .users_at(elapsed)
            .unwrap_or_else(|| crest_schedule::users_at(profile, elapsed));
        self.control.set_users_now(users);
    }

    /// A change made from the page: every worker makes it, and it starts a step of the run.
    pub(super) fn steered(&mut self, changed: crest_engine::Changed) {
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
            self.by_hand.push(step.clone());
            self.hand_on(Entry::Step(step));
        }
    }

    /// Stopped from the page: every worker is told to stop, as when a stop condition holds.
    pub(super) fn stop_by_hand(&mut self) {
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
    pub(super) fn silent(&mut self) {
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

    pub(super) fn event(&mut self, ev: Event) {
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
                let added = match *entry {
                    Entry::Start(start) => self.merger.start(index, start),
                    Entry::Interval(r) => self.merger.interval(index, r).map(drop),
                    Entry::Monitor(m) => {
                        // The system under test's series are the first worker's, as in the merge.
                        if index == 0 {
                            self.merger.monitor(index, &m);
                            self.hand_on(Entry::Monitor(m));
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

    /// Hands an entry of the merged run to its readers: the page, the stop conditions and the
    /// journal.
    pub(super) fn hand_on(&mut self, entry: Entry) {
        self.hub.publish(&entry);
        if let Some(s) = self.judge.read(&entry).cloned() {
            self.stop(s);
        }
        self.journal(entry);
    }

    /// Journals an entry of the merged run; one that comes before its start, once it is.
    pub(super) fn journal(&mut self, entry: Entry) {
        if !self.start_written {
            self.pending.push(entry);
        } else if let Some(j) = self.journal.as_mut() {
            j.write(&entry);
        }
    }

    /// Journals the merged run's start once every worker has sent its own (or was lost), then
    /// what waited for it.
    pub(super) fn write_start(&mut self) {
        if self.start_written {
            return;
        }
        let Some(mut start) = self.merger.start_entry() else {
            return;
        };
        start.config.provenance = self.provenance.clone();
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
    pub(super) fn judge(&mut self) {
        self.write_start();
        let closed = match self.merger.close() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("collector: an interval can't be added up: {e}");
                return;
            }
        };
        for r in closed {
            let i = &r.interval;
            if !self.quiet {
                eprintln!(
                    "{:>6.0}s {:>10} requests {:>8} failed",
                    i.t_s + self.interval_s,
                    i.requests,
                    i.failures
                );
            }
            self.hand_on(Entry::Interval(r));
        }
    }

    pub(super) fn stop(&mut self, s: crest_analysis::stop::Stopped) {
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
    pub(super) fn write(mut self, dir: &Path, out: &crate::cli::OutputArgs) -> Result<u8> {
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
        let written = output::write_all(dir, &results, out, whole, Some(&self.hub))?;
        Ok(crate::exit::of_run(results.ended_by, &written, out.strict))
    }
}
