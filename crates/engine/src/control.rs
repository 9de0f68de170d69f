//! Steering a run while it goes: users, arrival rate, pause.
//!
//! A [`Control`] is shared by the engine's threads and whoever steers (the live page's API).
//! Each change starts a new step, so a run driven by hand is analysed like a stepping profile.
//! What an iteration reads on its way (paused? which step?) is an atomic; the settings behind a
//! change sit under a lock read only by the closed model's controller (every 50 ms) and by the
//! open model when the setting's generation moves.

use crest_model::step::{Level, StepKind};
use crest_schedule::segment_at;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// A step started by hand.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveStep {
    /// Its segment index: the requests sent in it carry it.
    pub index: u32,
    /// What it set: a level of users or of rate, paused, resumed; reports put it in words.
    pub kind: StepKind,
    /// Start, from the start of the run.
    pub start: Duration,
    /// Users asked for (closed model).
    pub users: Option<u64>,
    /// Arrivals per second asked for (open model).
    pub rate: Option<f64>,
}

impl From<LiveStep> for crest_model::journal::Step {
    /// As the journal keeps it.
    fn from(s: LiveStep) -> Self {
        crest_model::journal::Step {
            index: s.index,
            kind: s.kind,
            start_s: s.start.as_secs_f64(),
            users: s.users,
            rate: s.rate,
        }
    }
}

/// What the run follows now.
#[derive(Clone, Debug, Default)]
struct Setting {
    /// Closed model: users asked for, reached at `spawn_rate` per second from `from` users at
    /// `since` (None: follow the plan's profile).
    users: Option<(u64, f64, u64, Duration)>,
    /// Open model: arrivals per second (None: follow the plan's schedule).
    rate: Option<f64>,
    /// When the last change took effect: a rate set by hand is paced from it, so every thread
    /// (and every worker of a collected run) puts its arrivals on one grid.
    since: Duration,
}

/// A change made by hand, whole-run figures as asked for: the engine shares users and
/// arrivals out over its threads (and a collected run's workers) itself.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    /// Closed model: users to reach.
    Users {
        /// Users asked for.
        users: u64,
        /// Users started (or retired) per second on the way.
        spawn_rate: f64,
        /// Users the run had when asked.
        from: u64,
    },
    /// Open model: a rate of arrivals.
    Rate {
        /// Arrivals per second.
        rate: f64,
    },
    /// No iteration starts; those in flight finish.
    Pause,
    /// What the run followed before the pause comes back.
    Resume {
        /// The users the run then has (of the whole run), when it is the plan's that come back.
        #[serde(default)]
        users: Option<u64>,
    },
}

impl Change {
    /// A change whose figures can be followed.
    fn check(&self) -> Result<(), ControlError> {
        match self {
            Change::Users { spawn_rate, .. } if !(*spawn_rate > 0.0 && spawn_rate.is_finite()) => {
                Err(ControlError::SpawnRate(*spawn_rate))
            }
            Change::Rate { rate } if !(*rate >= 0.0 && rate.is_finite()) => Err(ControlError::Rate(*rate)),
            _ => Ok(()),
        }
    }
}

/// A change as it was made: the step it started and when, so that a control elsewhere (a
/// collected run's worker) can make the same one ([`Control::follow`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Changed {
    /// What was changed.
    pub change: Change,
    /// The step's index.
    pub index: u32,
    /// When, in seconds from the start of the run.
    pub at_s: f64,
}

type Observer = Box<dyn Fn(&Changed) + Send + Sync>;

/// A change that cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ControlError {
    /// The run has not started or has ended.
    #[error("the run is not sending")]
    NotRunning,
    /// A spawn rate that is not a positive number of users per second.
    #[error("spawn_rate must be a positive number of users per second, not {0}")]
    SpawnRate(f64),
    /// A rate that is not a number of arrivals per second of at least 0.
    #[error("rate must be a number of arrivals per second of at least 0, not {0}")]
    Rate(f64),
    /// More users than this process can hold connections for.
    #[error(
        "{users} users: each holds a connection, and this process's open-file limit (RLIMIT_NOFILE) of {limit} leaves room for {most}"
    )]
    TooManyUsers {
        /// The users asked for.
        users: u64,
        /// The open-file limit.
        limit: u64,
        /// The most users it leaves room for.
        most: u64,
    },
    /// A change made by another control at an instant that is no time in the run.
    #[error("a change at {0} s")]
    Instant(f64),
}

/// The shared handle on a running run. Create one, hand it to [`crate::Shape::control`], keep a
/// clone (it is `Arc`-shared by the caller) to steer.
#[derive(Default)]
pub struct Control {
    start: OnceLock<Instant>,
    /// The plan's step starts, as the engine got them.
    planned: OnceLock<Vec<Duration>>,
    paused: AtomicBool,
    /// Index of the current step once something was changed by hand; `u32::MAX` before.
    step: AtomicU32,
    /// Bumped at every change of setting or pause, so the open model resets its schedule.
    generation: AtomicU64,
    setting: Mutex<Setting>,
    steps: Mutex<Vec<LiveStep>>,
    ended: AtomicBool,
    /// Users the closed model currently runs, summed over threads (for the page).
    users_now: AtomicU64,
    stopped_at: OnceLock<Duration>,
    /// Told of every change made here (a collector hands them on to its workers).
    observer: OnceLock<Observer>,
    /// The most users this process can hold: one connection each under its open-file limit.
    max_users: OnceLock<(u64, u64)>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control")
            .field("paused", &self.paused())
            .field("step", &self.step())
            .field("users_now", &self.users_now())
            .finish_non_exhaustive()
    }
}

const FOLLOW_PLAN: u32 = u32::MAX;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere while holding it leaves plain data that is still whole.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Control {
    /// A control that follows the plan until told otherwise.
    pub fn new() -> Self {
        Control {
            step: AtomicU32::new(FOLLOW_PLAN),
            ..Default::default()
        }
    }

    /// Called by the engine as it starts (or by whoever steers an engine elsewhere, at the
    /// instant it starts).
    pub fn begin(&self, start: Instant, planned: &[Duration]) {
        let _ = self.start.set(start);
        let _ = self.planned.set(planned.to_vec());
    }

    /// Called by the engine when sending stops: later changes are refused.
    pub fn end(&self) {
        self.ended.store(true, Ordering::Release);
    }

    /// True while paused: no iteration starts.
    pub fn paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    /// The step an iteration starting now belongs to, if one was started by hand.
    pub(crate) fn step(&self) -> Option<u32> {
        let s = self.step.load(Ordering::Relaxed);
        (s != FOLLOW_PLAN).then_some(s)
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The steps started by hand so far, in order.
    pub fn steps(&self) -> Vec<LiveStep> {
        lock(&self.steps).clone()
    }

    /// The steps started by hand from the `from`-th on.
    pub fn steps_from(&self, from: usize) -> Vec<LiveStep> {
        lock(&self.steps).get(from..).unwrap_or_default().to_vec()
    }

    /// Records that the run is being stopped by hand, now; the caller then cancels its [`crate::Stop`].
    pub fn stopping(&self) {
        if let Ok(at) = self.elapsed() {
            let _ = self.stopped_at.set(at);
        }
    }

    /// When the run was stopped by hand, if it was.
    pub fn stopped_at(&self) -> Option<Duration> {
        self.stopped_at.get().copied()
    }

    /// Users running now (closed model), summed over the engine's threads.
    pub fn users_now(&self) -> u64 {
        self.users_now.load(Ordering::Relaxed)
    }

    /// Sets the users running now, for a control whose users run elsewhere (a collector's,
    /// whose workers share out the users it asks for).
    pub fn set_users_now(&self, users: u64) {
        self.users_now.store(users, Ordering::Relaxed);
    }

    /// Users asked for beyond `users` are refused: each holds a connection, and this process
    /// may open `limit` files.
    pub fn limit_users(&self, users: u64, limit: u64) {
        let _ = self.max_users.set((users, limit));
    }

    /// Tells `observer` of every change made from now on, once made.
    pub fn observe(&self, observer: impl Fn(&Changed) + Send + Sync + 'static) {
        let _ = self.observer.set(Box::new(observer));
    }

    pub(crate) fn add_users_now(&self, delta: i64) {
        if delta >= 0 {
            self.users_now.fetch_add(delta as u64, Ordering::Relaxed);
        } else {
            self.users_now.fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
        }
    }

    /// The users asked for and their spawn rate, once set by hand.
    pub fn users_asked(&self) -> Option<(u64, f64)> {
        lock(&self.setting).users.map(|(u, r, _, _)| (u, r))
    }

    /// The arrival rate asked for, once set by hand.
    pub fn rate_asked(&self) -> Option<f64> {
        lock(&self.setting).rate
    }

    fn elapsed(&self) -> Result<Duration, ControlError> {
        if self.ended.load(Ordering::Acquire) {
            return Err(ControlError::NotRunning);
        }
        let start = self.start.get().ok_or(ControlError::NotRunning)?;
        Ok(start.elapsed())
    }

    /// Makes `change` (checked) at `at`, as the step `index` (the next one when None).
    /// None when it changes nothing (a pause while paused, a resume while not): the setting's
    /// lock is held throughout, so two pauses at once start one step.
    fn make(&self, mut change: Change, at: Duration, index: Option<u32>) -> Option<Changed> {
        let mut s = lock(&self.setting);
        match change {
            Change::Pause if self.paused() => return None,
            Change::Resume { .. } if !self.paused() => return None,
            _ => {}
        }
        let (kind, users, rate) = {
            let shown = match &mut change {
                Change::Users {
                    users,
                    spawn_rate,
                    from,
                } => {
                    s.users = Some((*users, *spawn_rate, *from, at));
                    (StepKind::Level(Level::Users(*users)), Some(*users), None)
                }
                Change::Rate { rate } => {
                    s.rate = Some(*rate);
                    (StepKind::Level(Level::Rate(*rate)), None, Some(*rate))
                }
                Change::Pause => (StepKind::Paused, Some(0), None),
                Change::Resume { users: running } => {
                    // Nothing set by hand: the users the plan had running come back.
                    let users = s
                        .users
                        .map(|u| u.0)
                        .or(*running)
                        .or(Some(self.users_now()).filter(|n| *n > 0));
                    *running = users;
                    let kind = match (users, s.rate) {
                        (None, None) => StepKind::Resumed,
                        (u, r) => StepKind::at(u, r),
                    };
                    (kind, users, s.rate)
                }
            };
            s.since = at;
            shown
        };
        let mut steps = lock(&self.steps);
        let index = index.unwrap_or_else(|| match self.step() {
            Some(s) => s + 1,
            None => segment_at(self.planned.get().map_or(&[][..], |p| p), at) as u32 + 1,
        });
        steps.push(LiveStep {
            index,
            kind,
            start: at,
            users,
            rate,
        });
        self.step.store(index, Ordering::Relaxed);
        match change {
            Change::Pause => self.paused.store(true, Ordering::Relaxed),
            Change::Resume { .. } => self.paused.store(false, Ordering::Relaxed),
            _ => {}
        }
        self.generation.fetch_add(1, Ordering::Release);
        drop(s);
        Some(Changed {
            change,
            index,
            at_s: at.as_secs_f64(),
        })
    }

    /// Makes `change` now, and tells the observer; false when it changed nothing.
    fn change(&self, change: Change) -> Result<bool, ControlError> {
        change.check()?;
        let at = self.elapsed()?;
        let Some(made) = self.make(change, at, None) else {
            return Ok(false);
        };
        if let Some(o) = self.observer.get() {
            o(&made);
        }
        Ok(true)
    }

    /// Asks for `users` users, started (or retired) at `spawn_rate` per second from those asked
    /// for now. `current` is how many the run has at this moment (what the profile asks).
    pub fn set_users(&self, users: u64, spawn_rate: f64, current: u64) -> Result<(), ControlError> {
        if let Some((most, limit)) = self.max_users.get().filter(|(most, _)| users > *most) {
            return Err(ControlError::TooManyUsers {
                users,
                limit: *limit,
                most: *most,
            });
        }
        Change::Users {
            users,
            spawn_rate,
            from: current,
        }
        .check()?;
        let at = self.elapsed()?;
        let from = lock(&self.setting).users.map_or(current, |u| users_at(u, at));
        self.change(Change::Users {
            users,
            spawn_rate,
            from,
        })
        .map(drop)
    }

    /// Asks for `rate` arrivals per second from now.
    pub fn set_rate(&self, rate: f64) -> Result<(), ControlError> {
        self.change(Change::Rate { rate }).map(drop)
    }

    /// Pauses: no iteration starts until [`Control::resume`]; those in flight finish.
    /// Returns false when already paused.
    pub fn pause(&self) -> Result<bool, ControlError> {
        self.change(Change::Pause)
    }

    /// Resumes what the run followed before the pause. Returns false when not paused.
    pub fn resume(&self) -> Result<bool, ControlError> {
        self.change(Change::Resume { users: None })
    }

    /// Makes a change made by another control (a collected run's collector): the same step at
    /// the same instant of the run, so that every worker's steps and ramps are the collector's.
    /// It may come before the engine began (a change made as the run started).
    pub fn follow(&self, made: &Changed) -> Result<(), ControlError> {
        if self.ended.load(Ordering::Acquire) {
            return Err(ControlError::NotRunning);
        }
        made.change.check()?;
        let at = Duration::try_from_secs_f64(made.at_s).map_err(|_| ControlError::Instant(made.at_s))?;
        self.make(made.change.clone(), at, Some(made.index));
        Ok(())
    }

    /// Closed model: the users asked for at `elapsed`, if set by hand.
    pub fn users_at(&self, elapsed: Duration) -> Option<u64> {
        lock(&self.setting).users.map(|u| users_at(u, elapsed))
    }

    /// Open model: the arrival rate set by hand, if any, and when the last change took effect.
    pub(crate) fn rate(&self) -> Option<(f64, Duration)> {
        let s = lock(&self.setting);
        s.rate.map(|r| (r, s.since))
    }
}

/// Users of a setting by hand at `t`: a ramp from `from` at `spawn_rate` per second.
fn users_at((to, spawn_rate, from, since): (u64, f64, u64, Duration), t: Duration) -> u64 {
    let moved = (t.saturating_sub(since).as_secs_f64() * spawn_rate).floor() as u64;
    if to >= from {
        from.saturating_add(moved).min(to)
    } else {
        from.saturating_sub(moved).max(to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_ramp_at_the_spawn_rate_both_ways() {
        let s = (20, 5.0, 4, Duration::from_secs(10));
        assert_eq!(users_at(s, Duration::from_secs(10)), 4);
        assert_eq!(users_at(s, Duration::from_secs(12)), 14);
        assert_eq!(users_at(s, Duration::from_secs(60)), 20);
        let down = (5, 10.0, 40, Duration::ZERO);
        assert_eq!(users_at(down, Duration::from_secs(1)), 30);
        assert_eq!(users_at(down, Duration::from_secs(9)), 5);
    }

    /// Pauses from many callers at once start one step: the check and the change are one.
    #[test]
    fn pauses_at_once_start_one_step() {
        let c = std::sync::Arc::new(Control::new());
        c.begin(Instant::now(), &[Duration::ZERO]);
        let took: usize = (0..8)
            .map(|_| {
                let c = std::sync::Arc::clone(&c);
                std::thread::spawn(move || c.pause().unwrap())
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| usize::from(h.join().unwrap()))
            .sum();
        assert_eq!(took, 1);
        assert_eq!(c.steps().len(), 1);
        assert!(c.paused());
    }

    #[test]
    fn users_beyond_the_open_file_limit_are_refused_and_change_nothing() {
        let c = Control::new();
        c.begin(Instant::now(), &[Duration::ZERO]);
        c.limit_users(960, 1024);
        let refused = c.set_users(961, 10.0, 0);
        assert_eq!(
            refused,
            Err(ControlError::TooManyUsers {
                users: 961,
                limit: 1024,
                most: 960
            })
        );
        let why = refused.unwrap_err().to_string();
        assert!(
            why.contains("961 users") && why.contains("1024") && why.contains("960"),
            "{why}"
        );
        assert!(c.steps().is_empty());
        c.set_users(960, 10.0, 0).unwrap();
        assert_eq!(c.users_asked(), Some((960, 10.0)));
    }

    #[test]
    fn each_change_starts_the_next_step_after_the_plans_step_in_force() {
        let c = Control::new();
        c.begin(
            Instant::now() - Duration::from_secs(15),
            &[Duration::ZERO, Duration::from_secs(10), Duration::from_secs(20)],
        );
        assert_eq!(c.step(), None);
        c.set_users(40, 100.0, 5).unwrap();
        assert_eq!(
            c.step(),
            Some(2),
            "plan step 1 was in force, so the first change is step 2"
        );
        assert!(c.pause().unwrap());
        assert!(!c.pause().unwrap(), "a second pause changes nothing");
        assert!(c.resume().unwrap());
        assert_eq!(c.step(), Some(4));
        let kinds: Vec<StepKind> = c.steps().into_iter().map(|s| s.kind).collect();
        let forty = StepKind::Level(Level::Users(40));
        assert_eq!(kinds, [forty.clone(), StepKind::Paused, forty]);
        let indices: Vec<u32> = c.steps().into_iter().map(|s| s.index).collect();
        assert_eq!(indices, [2, 3, 4], "each step carries the index its requests get");
        assert_eq!(c.steps_from(2).len(), 1);
        c.end();
        assert_eq!(c.set_rate(3.0), Err(ControlError::NotRunning));
        assert_eq!(c.set_users(1, 0.0, 0), Err(ControlError::SpawnRate(0.0)));
    }
}
