//! A worker's link to its collector: what its run loop talks to (one of the run's
//! [`crate::measure::Readers`]), and what the worker's connection tells it. Apart from
//! [`crate::worker`], which makes it, so that the run loop reads it without depending on the
//! subcommand.

use crate::wire;
use crest_engine::{Control, Stop};
use crest_model::journal::Entry;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// What a running worker's run loop talks to: when to start, where its entries go, and the
/// collector's order to stop.
#[derive(Debug)]
pub struct Link {
    start_at: Instant,
    out: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    stop: Mutex<Option<Stop>>,
    /// The run's control, or the changes that came before it (`Err`).
    control: Mutex<Result<Arc<Control>, Vec<crest_engine::Changed>>>,
    told_to_stop: AtomicBool,
    collector_gone: AtomicBool,
    /// The run's end was handed on: the collector may close once it has every worker's.
    ended: AtomicBool,
}

impl Link {
    /// The link of a worker whose collector starts the run at `start_at` (on this machine's
    /// clock) and reads the lines sent down `out`.
    pub fn new(start_at: Instant, out: mpsc::Sender<Vec<u8>>) -> Self {
        Link {
            start_at,
            out: Mutex::new(Some(out)),
            stop: Mutex::new(None),
            control: Mutex::new(Err(Vec::new())),
            told_to_stop: AtomicBool::new(false),
            collector_gone: AtomicBool::new(false),
            ended: AtomicBool::new(false),
        }
    }

    /// Lets go of the line to the collector once everything kept was handed to it, so that its
    /// sending thread ends.
    pub fn close(&self) {
        lock(&self.out).take();
    }

    /// Waits until `lead_in` before the start instant, and returns the start: the collector's,
    /// or now if that has passed.
    pub fn wait_start(&self, lead_in: Duration) -> Instant {
        let until = self.start_at.checked_sub(lead_in).unwrap_or(self.start_at);
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
        self.start_at.max(Instant::now())
    }

    /// The run's stop, for the collector to cancel, and its control, for the collector to
    /// steer.
    pub fn steer(&self, stop: Stop, control: Option<Arc<Control>>) {
        if self.told_to_stop.load(Ordering::SeqCst) {
            stop.cancel();
        }
        *lock(&self.stop) = Some(stop);
        if let Some(c) = control {
            let mut held = lock(&self.control);
            if let Err(early) = std::mem::replace(&mut *held, Ok(Arc::clone(&c))) {
                for changed in &early {
                    follow(&c, changed);
                }
            }
        }
    }

    /// The collector's page steered the run; a change made as the run started is held until
    /// the run has its control.
    pub fn follow(&self, changed: &crest_engine::Changed) {
        match &mut *lock(&self.control) {
            Ok(c) => follow(c, changed),
            Err(early) => early.push(changed.clone()),
        }
    }

    /// Sends one journal entry to the collector.
    pub fn send(&self, entry: &Entry) {
        if matches!(entry, Entry::End(_)) {
            self.ended.store(true, Ordering::SeqCst);
        }
        if let Some(out) = lock(&self.out).as_ref() {
            let _ = out.send(wire::entry_line(entry));
        }
    }

    /// True once the connection to the collector was cut before the run's end was sent.
    pub fn collector_lost(&self) -> bool {
        self.collector_gone.load(Ordering::SeqCst)
    }

    /// True once the collector said stop.
    pub fn told_to_stop(&self) -> bool {
        self.told_to_stop.load(Ordering::SeqCst)
    }

    /// The collector said stop.
    pub fn stop_now(&self) {
        self.told_to_stop.store(true, Ordering::SeqCst);
        self.cancel();
    }

    /// The connection to the collector was cut: nothing sent would reach it.
    pub fn cut(&self) {
        if !self.ended.load(Ordering::SeqCst) {
            self.collector_gone.store(true, Ordering::SeqCst);
            self.cancel();
        }
    }

    fn cancel(&self) {
        if let Some(s) = lock(&self.stop).as_ref() {
            s.cancel();
        }
    }
}

fn follow(c: &Control, changed: &crest_engine::Changed) {
    if let Err(e) = c.follow(changed) {
        eprintln!(
            "worker: could not make the collector's change {:?}: {e}",
            changed.change
        );
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
