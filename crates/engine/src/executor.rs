//! The one executor behind every load model and stop rule.

use crate::placement::Placement;
use crate::{Control, Ctx, Stop, StopCause};
use crest_model::plan::{share, LoadModel, OnCap, Shard, UsersProfile};
use crest_model::Sink;
use crest_schedule::{interleaved, segment_at, users_at, wait, Schedule, Wait};
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use timerfd::{ClockId, SetTimeFlags, TimerFd, TimerState};
use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;
use tokio::task::LocalSet;

/// A unit of work the engine repeats: one HTTP request, a scenario flow, a transaction.
pub trait Workload: Send + Sync + 'static {
    /// Per-virtual-user state: connections, variables. Lives on one thread.
    type User: 'static;

    /// A new user. `id` is unique in the run and counts from 0.
    fn new_user(&self, id: u64) -> Self::User;

    /// Runs one iteration for `user`, reporting each request through `ctx`. It must not fail:
    /// every failure is a measured outcome.
    fn iterate<'a>(&'a self, user: &'a mut Self::User, ctx: Ctx<'a>) -> impl Future<Output = ()> + 'a;

    /// Runs once when a closed-model user stops on its own (its iterations done, retired by the
    /// profile, or the run's end), e.g. to log out. Not an iteration; requests it makes are
    /// still recorded.
    fn finish<'a>(&'a self, _user: &'a mut Self::User, _ctx: Ctx<'a>) -> impl Future<Output = ()> + 'a {
        async {}
    }

    /// True when [`Workload::prepare`] readies a user. Only then does the open model make
    /// users ahead of its first arrivals: a user is more than a connection (a flow's user takes
    /// its own feeder rows and runs its `on_start`), so none is made that would not be ready.
    fn prepares(&self) -> bool {
        false
    }

    /// Readies `user` before the run's start (opens its connection), so that an open-model
    /// run's first arrivals find users ready rather than each waiting for a connect of its own
    /// while the next arrivals fall due. A failure is left to the first iteration, which meets
    /// and measures it. Not called in the closed model, whose users' first requests are meant
    /// to open their connections.
    fn prepare<'a>(&'a self, _user: &'a mut Self::User) -> impl Future<Output = ()> + 'a {
        async {}
    }

    /// True once `user` has given up for good (a scenario flow with `on_failure: stop_user`),
    /// asked after each iteration. The closed model then runs its `finish` and does not
    /// replace it: its slot in the profile stays empty. The open model, whose arrivals do not
    /// belong to users, drops its state, so a later arrival starts a fresh user.
    fn stopped(&self, _user: &Self::User) -> bool {
        false
    }
}

/// How the engine runs, apart from the workload.
#[derive(Clone, Debug)]
pub struct Shape {
    /// Closed or open model.
    pub model: LoadModel,
    /// Engine threads; fewer are used when there are fewer users than threads.
    pub threads: usize,
    /// This generator's part of the run ([`Shard::WHOLE`] alone).
    pub shard: Shard,
    /// How long iterations in flight may finish after sending stops.
    pub grace: Duration,
    /// How often each sink is ticked, so idle intervals close on time.
    pub tick: Duration,
    /// Start offsets of the run's segments, in order (at least one, at zero).
    pub segments: Vec<Duration>,
    /// Steering while it runs (the live page), when offered.
    pub control: Option<Arc<Control>>,
}

impl Shape {
    /// Threads the run will use: never more than this generator's share of the users (or of
    /// the cap on requests in flight), so no thread sits idle with a share of zero. Every
    /// worker of a shared run works it out alike, from the whole plan.
    pub fn threads_used(&self) -> usize {
        let mine = self
            .model
            .max_concurrency()
            .div_ceil(u64::from(self.shard.count.max(1)));
        self.threads.clamp(1, mine.clamp(1, usize::MAX as u64) as usize)
    }
}

/// What the engine did, with each thread's sink.
#[derive(Debug)]
pub struct EngineReport<S> {
    /// The sinks, one per thread used.
    pub sinks: Vec<S>,
    /// Open model: arrivals due on the schedule while sending.
    pub arrivals: u64,
    /// Open model: arrivals not sent, at the cap on iterations in flight or [`Self::behind`].
    pub dropped: u64,
    /// Open model: of the dropped, arrivals due before the deadline that a thread behind its
    /// schedule never reached; with [`OnCap::Queue`], those still waiting at the cap too.
    pub behind: u64,
    /// Open model with [`OnCap::Queue`]: arrivals that found the cap reached and waited for a
    /// place, then were sent.
    pub queued: u64,
    /// Requests sent and not answered when the grace period ran out ([`crate::Unanswered`]);
    /// they were cut off.
    pub abandoned: u64,
    /// Iterations started.
    pub iterations: u64,
    /// Closed model with a fixed number of iterations per user (`run_once`, threads x loops):
    /// each user that ran all of them, as (its first iteration's start from the run's start,
    /// the time it took to its end). Taken once per user, so nothing on the per-request path.
    pub user_times: Vec<(Duration, Duration)>,
    /// Users of such a run that were stopped before their last iteration (the stop rule, a
    /// signal, `on_failure: stop_user`).
    pub users_cut_short: u64,
    /// Why sending stopped.
    pub cause: StopCause,
    /// When the last thread finished, requests in flight included.
    pub finished: Instant,
    /// Time the engine threads, together, were ready to run while sending but waited for a
    /// core other threads held (the kernel's account, Linux); `None` where the kernel keeps
    /// none.
    pub core_wait: Option<Duration>,
}

/// Runs `workload` with the given shape until `stop` says to stop, then drains. Blocks the
/// calling thread; cancel it from another thread through `stop`.
pub fn run<W, S, F>(
    shape: &Shape,
    start: Instant,
    stop: &Stop,
    workload: Arc<W>,
    make_sink: F,
) -> std::io::Result<EngineReport<S>>
where
    W: Workload,
    S: Sink + Send + 'static,
    F: Fn(usize) -> S,
{
    let threads = shape.threads_used();
    let schedule = match &shape.model {
        LoadModel::Open { rate, .. } => {
            Some(Schedule::from_profile(rate).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?)
        }
        LoadModel::Closed { .. } => None,
    };
    if let Some(c) = &shape.control {
        c.begin(start, &shape.segments);
    }
    let mut handles = Vec::with_capacity(threads);
    for k in 0..threads {
        let sink = make_sink(k);
        let workload = Arc::clone(&workload);
        let stop = stop.clone();
        let shape = shape.clone();
        let schedule = schedule.clone();
        let handle = std::thread::Builder::new()
            .name(format!("crest-engine-{k}"))
            .spawn(move || thread_main(k, threads, &shape, schedule, start, stop, workload, sink))?;
        handles.push(handle);
    }
    let mut report = EngineReport {
        sinks: Vec::with_capacity(threads),
        arrivals: 0,
        dropped: 0,
        behind: 0,
        queued: 0,
        abandoned: 0,
        iterations: 0,
        user_times: Vec::new(),
        users_cut_short: 0,
        cause: StopCause::Running,
        finished: start,
        core_wait: Some(Duration::ZERO),
    };
    for h in handles {
        let t = h
            .join()
            .map_err(|_| std::io::Error::other("an engine thread panicked"))??;
        report.sinks.push(t.sink);
        report.arrivals += t.open.arrivals;
        report.dropped += t.open.dropped;
        report.behind += t.open.behind;
        report.queued += t.open.queued;
        report.abandoned += t.abandoned;
        report.iterations += t.iterations;
        report.user_times.extend(t.user_times);
        report.users_cut_short += t.users_cut_short;
        report.core_wait = report.core_wait.zip(t.core_wait).map(|(a, b)| a + b);
    }
    if let Some(c) = &shape.control {
        c.end();
    }
    // Threads that ran out of work end on their own; only when all have is the run complete.
    stop.complete();
    report.cause = stop.cause();
    report.finished = Instant::now();
    Ok(report)
}

struct ThreadReport<S> {
    sink: S,
    open: Arrivals,
    abandoned: u64,
    iterations: u64,
    user_times: Vec<(Duration, Duration)>,
    users_cut_short: u64,
    core_wait: Option<Duration>,
}

/// Counts iterations in flight on one thread and wakes the drain when none are left.
#[derive(Default)]
struct Tracker {
    active: Cell<u64>,
    started: Cell<u64>,
    idle: Notify,
}

impl Tracker {
    async fn wait_idle(&self) {
        loop {
            let notified = self.idle.notified();
            if self.active.get() == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// Shared by every task on one thread.
struct Local<W: Workload> {
    workload: Arc<W>,
    sink: Rc<RefCell<dyn Sink>>,
    tracker: Tracker,
    start: Instant,
    segments: Vec<Duration>,
    control: Option<Arc<Control>>,
    /// See [`EngineReport::user_times`].
    user_times: RefCell<Vec<(Duration, Duration)>>,
    users_cut_short: Cell<u64>,
}

impl<W: Workload> Local<W> {
    /// The step an iteration starting at `t` belongs to: the one started by hand, once there
    /// is one, or the plan's.
    fn segment_at(&self, t: Instant) -> u32 {
        match self.control.as_ref().and_then(|c| c.step()) {
            Some(s) => s,
            None => segment_at(&self.segments, t.saturating_duration_since(self.start)) as u32,
        }
    }

    /// Waits while the run is paused by hand (or until it stops). One atomic read when not.
    async fn unpaused(&self, stop: &Stop) {
        let Some(c) = &self.control else { return };
        while c.paused() && !stop.is_stopped(Instant::now()) {
            tokio::select! {
                _ = tokio::time::sleep(PAUSE_POLL) => {}
                _ = stop.cancelled() => {}
            }
        }
    }

    /// Runs the workload's `finish` for a user that stops, counted as in flight while it runs.
    /// `who` is the user's id and the number of iterations it ran.
    async fn finish(&self, user: &mut W::User, who: (u64, u64)) {
        let t = &self.tracker;
        t.active.set(t.active.get() + 1);
        let now = Instant::now();
        let segment = self.segment_at(now);
        let ctx = Ctx {
            start: self.start,
            intended: now,
            segment,
            user: who.0,
            iteration: who.1,
            sink: &*self.sink,
        };
        self.workload.finish(user, ctx).await;
        t.active.set(t.active.get() - 1);
        if t.active.get() == 0 {
            t.idle.notify_waiters();
        }
    }

    /// Counts an iteration as in flight. The open model calls this when it dispatches, before
    /// the iteration's task first runs, so that a burst of due arrivals cannot overshoot the cap.
    fn reserve(&self) {
        let t = &self.tracker;
        t.active.set(t.active.get() + 1);
        t.started.set(t.started.get() + 1);
    }

    /// Runs an iteration already counted by [`Local::reserve`].
    async fn run_reserved(&self, user: &mut W::User, who: (u64, u64), intended: Instant) {
        let t = &self.tracker;
        let segment = self.segment_at(intended);
        let ctx = Ctx {
            start: self.start,
            intended,
            segment,
            user: who.0,
            iteration: who.1,
            sink: &*self.sink,
        };
        self.workload.iterate(user, ctx).await;
        t.active.set(t.active.get() - 1);
        if t.active.get() == 0 {
            t.idle.notify_waiters();
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn thread_main<W: Workload, S: Sink + 'static>(
    k: usize,
    threads: usize,
    shape: &Shape,
    schedule: Option<Schedule>,
    start: Instant,
    stop: Stop,
    workload: Arc<W>,
    sink: S,
) -> std::io::Result<ThreadReport<S>> {
    // The blocking pool's threads, started later, keep to the cores this thread was given, not
    // to the one it may have moved to.
    let given = crate::placement::affinity();
    // The blocking pool runs system DNS lookups (a lookup per connection when asked). Its
    // default of 512 threads per engine thread would start thousands when 10,000 users connect
    // at once; lookups past these wait for a thread, and are timed once they run.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(64)
        .on_thread_start(move || crate::placement::restore(given))
        .build()?;
    let set = LocalSet::new();
    let unanswered = crate::unanswered::count_here();
    let sink = Rc::new(RefCell::new(sink));
    let local = Rc::new(Local {
        workload,
        sink: sink.clone() as Rc<RefCell<dyn Sink>>,
        tracker: Tracker::default(),
        start,
        segments: shape.segments.clone(),
        control: shape.control.clone(),
        user_times: RefCell::new(Vec::new()),
        users_cut_short: Cell::new(0),
    });
    let (open_counts, abandoned, core_wait) = set.block_on(&rt, async {
        let ticker = {
            let local = Rc::clone(&local);
            let tick = shape.tick;
            tokio::task::spawn_local(async move {
                let mut i = 1u32;
                loop {
                    tokio::time::sleep_until((start + tick * i).into()).await;
                    local
                        .sink
                        .borrow_mut()
                        .tick(Instant::now().saturating_duration_since(start));
                    i = i.saturating_add(1);
                }
            })
        };
        // Each thread is one lane of the whole run's, over every worker's threads.
        let (lane, lanes) = shape.shard.lane(k, threads);
        let waited = crate::placement::core_wait();
        let open_counts = match (&shape.model, schedule) {
            (LoadModel::Closed { users, iterations }, _) => {
                closed(lane, lanes, users, *iterations, &local, &stop).await;
                Arrivals::default()
            }
            (
                LoadModel::Open {
                    max_in_flight, on_cap, ..
                },
                Some(schedule),
            ) => {
                open(
                    lane,
                    lanes,
                    (share(*max_in_flight, lane, lanes), *on_cap),
                    &schedule,
                    &local,
                    &stop,
                    Placement::new(threads),
                )
                .await
            }
            (LoadModel::Open { .. }, None) => Arrivals::default(),
        };
        let core_wait = waited
            .zip(crate::placement::core_wait())
            .map(|(before, after)| after.saturating_sub(before));
        drain(shape.grace, &local.tracker, &stop).await;
        ticker.abort();
        // Requests sent and never answered, not iterations still running: those may be in a
        // think time or a poll's wait, with nothing of theirs at the server.
        (
            open_counts,
            unanswered.load(std::sync::atomic::Ordering::Relaxed),
            core_wait,
        )
    });
    let iterations = local.tracker.started.get();
    let user_times = local.user_times.take();
    let users_cut_short = local.users_cut_short.get();
    // Dropping the set drops every task still running (abandoned iterations, idle connections),
    // and with them their handles on the sink. Their sockets deregister from this runtime, so
    // it must still be entered.
    {
        let _guard = rt.enter();
        drop(set);
    }
    drop(local);
    // A workload's blocking work still running (a host lookup with --dns-per-connection whose
    // resolver does not answer) finishes on its own thread: the end of the run does not wait
    // for it, as dropping the runtime would.
    rt.shutdown_background();
    let sink = Rc::try_unwrap(sink)
        .map_err(|_| std::io::Error::other("engine sink still in use after the run"))?
        .into_inner();
    Ok(ThreadReport {
        sink,
        open: open_counts,
        abandoned,
        iterations,
        user_times,
        users_cut_short,
        core_wait,
    })
}

/// How often a paused user looks again whether the run was resumed.
const PAUSE_POLL: Duration = Duration::from_millis(20);

/// How often the closed model's controller matches the users running to the profile.
const CONTROL_EVERY: Duration = Duration::from_millis(50);

/// Closed model: this thread keeps its lane's share of the profile's users running (see
/// [`Shard`]). Each user loops until the stop rule says no, it has run its iterations, or the
/// profile retires it.
async fn closed<W: Workload>(
    lane: usize,
    lanes: usize,
    profile: &UsersProfile,
    iterations: Option<u64>,
    local: &Rc<Local<W>>,
    stop: &Stop,
) {
    let live = Rc::new(Cell::new(0u64));
    let changed = Rc::new(Notify::new());
    // Users started, in order, each with the flag that retires it after its current iteration.
    let mut running: Vec<Rc<Cell<bool>>> = Vec::new();
    let mut spawned = 0u64;
    // Users of this thread last added to the control's count.
    let mut counted = 0u64;
    let final_share = share(profile.stages.last().map_or(profile.start, |s| s.to), lane, lanes);
    let profile_end: Duration = profile.stages.iter().map(|s| s.duration).sum();
    loop {
        let now = Instant::now();
        if stop.is_stopped(now) {
            break;
        }
        let elapsed = now.saturating_duration_since(local.start);
        let asked = local.control.as_ref().and_then(|c| c.users_at(elapsed));
        let target = share(asked.unwrap_or_else(|| users_at(profile, elapsed)), lane, lanes);
        match iterations {
            None => {
                running.retain(|r| !r.get());
                while (running.len() as u64) < target {
                    running.push(spawn_user(
                        interleaved(lane, lanes, spawned),
                        None,
                        local,
                        stop,
                        &live,
                        &changed,
                    ));
                    spawned += 1;
                }
                while running.len() as u64 > target {
                    if let Some(r) = running.pop() {
                        r.set(true);
                    }
                }
                if let Some(c) = &local.control {
                    c.add_users_now(running.len() as i64 - counted as i64);
                    counted = running.len() as u64;
                }
            }
            Some(n) => {
                // Users that finished their iterations are not replaced.
                while spawned < target {
                    spawn_user(interleaved(lane, lanes, spawned), Some(n), local, stop, &live, &changed);
                    spawned += 1;
                }
                if live.get() == 0 && spawned >= final_share && elapsed >= profile_end {
                    break;
                }
            }
        }
        let waiting = changed.notified();
        // Wake at the next step's start too: users of a step that ended must stop starting
        // iterations then, not up to a control period later (after a spike, a period of 40
        // users failing fast would otherwise land in the recovery step).
        let next_step = local.segments.iter().find(|s| **s > elapsed).map(|s| local.start + *s);
        let mut wake = now + CONTROL_EVERY;
        for t in [stop.deadline(), next_step].into_iter().flatten() {
            wake = wake.min(t);
        }
        tokio::select! {
            _ = tokio::time::sleep_until(wake.into()) => {}
            _ = waiting => {}
            _ = stop.cancelled() => {}
        }
    }
    if let Some(c) = &local.control {
        c.add_users_now(-(counted as i64));
    }
}

/// Starts one user; returns the flag that retires it.
fn spawn_user<W: Workload>(
    id: u64,
    iterations: Option<u64>,
    local: &Rc<Local<W>>,
    stop: &Stop,
    live: &Rc<Cell<u64>>,
    changed: &Rc<Notify>,
) -> Rc<Cell<bool>> {
    let retire = Rc::new(Cell::new(false));
    live.set(live.get() + 1);
    let (local, stop, live, changed, flag) = (
        Rc::clone(local),
        stop.clone(),
        Rc::clone(live),
        Rc::clone(changed),
        Rc::clone(&retire),
    );
    tokio::task::spawn_local(async move {
        let mut user = local.workload.new_user(id);
        let mut done = 0u64;
        let mut first = None;
        while !flag.get() && iterations.is_none_or(|n| done < n) {
            let now = Instant::now();
            if local.control.as_ref().is_some_and(|c| c.paused()) {
                local.unpaused(&stop).await;
                continue;
            }
            if !stop.claim(now) {
                break;
            }
            first.get_or_insert(now);
            // Reserved here rather than in an async wrapper: each layer of async fn keeps its
            // own copy of the arguments in the user's task for as long as the iteration runs,
            // and at 10,000 users a task's size is memory (issue 35).
            local.reserve();
            local.run_reserved(&mut user, (id, done), now).await;
            done += 1;
            if local.workload.stopped(&user) {
                break;
            }
        }
        local.finish(&mut user, (id, done)).await;
        if let Some(n) = iterations {
            match first {
                Some(first) if done == n && !local.workload.stopped(&user) => local
                    .user_times
                    .borrow_mut()
                    .push((first.saturating_duration_since(local.start), first.elapsed())),
                _ => local.users_cut_short.set(local.users_cut_short.get() + 1),
            }
        }
        live.set(live.get() - 1);
        changed.notify_waiters();
    });
    retire
}

/// The open model's idle users, each with its id and the iterations it has run, so every
/// request is labelled with the user that sent it, as in the closed model.
type IdleUsers<U> = Rc<RefCell<Vec<(u64, u64, U)>>>;

/// The open model's iterations in flight on one thread, each polled by the thread's sender (see
/// [`open`]).
type InFlight = FuturesUnordered<Deferring<Pin<Box<dyn Future<Output = ()>>>>>;

/// The slot of the next arrival this thread has not sent yet, once it has come: while it is
/// set and past, iterations in flight stand aside (see [`Deferring`]). `None` once sending has
/// stopped.
type NextSlot = Rc<Cell<Option<Instant>>>;

/// What one thread of the open model did with its arrivals (see [`EngineReport`]).
#[derive(Debug, Default)]
struct Arrivals {
    arrivals: u64,
    dropped: u64,
    behind: u64,
    queued: u64,
}

/// Open model: start iterations on this lane's share of the schedule (see [`Shard`]), at most
/// `cap.0` at once; an arrival that finds them all taken does as `cap.1` says.
///
/// Sending never waits behind receiving. The iterations in flight are not tasks of their own:
/// they are polled by this one task, which sends every arrival that is due before it polls
/// any of them, runs each new iteration at once up to its first wait (the request written),
/// and makes the others stand aside as soon as the next slot has come, so an arrival waits
/// behind at most one response being read, never behind a batch of ready tasks or a turn of
/// the runtime. Measured against spawning a task per arrival in bench/README.md ("Pacing").
///
/// Queued at the cap ([`OnCap::Queue`]), an arrival holds the thread's sending until a place
/// frees; the arrivals due meanwhile wait behind it in order, each sent as its own place frees
/// and timed from its slot. The queue is the schedule itself, which says each waiting arrival's
/// slot again when its turn comes: it takes no memory however long it grows, and the run's end
/// bounds it (those still waiting then are not sent, and count as [`EngineReport::behind`]).
async fn open<W: Workload>(
    lane: usize,
    lanes: usize,
    (cap, on_cap): (u64, OnCap),
    schedule: &Schedule,
    local: &Rc<Local<W>>,
    stop: &Stop,
    mut placement: Placement,
) -> Arrivals {
    let pool: IdleUsers<W::User> = Rc::new(RefCell::new(Vec::new()));
    let next: NextSlot = Rc::new(Cell::new(None));
    let mut in_flight = InFlight::new();
    let mut next_id = lane as u64;
    let (mut arrivals, mut dropped, mut queued) = (0u64, 0u64, 0u64);
    // An arrival that was waiting at the cap when sending stopped.
    let mut stranded = 0u64;
    let mut j = 0u64;
    let mut pacer = Pacer::new();
    // A rate set by hand: from when, which of this thread's arrivals is the first slot of its
    // lane after then, at what rate.
    let mut by_hand: Option<(Duration, i64, f64)> = None;
    let mut seen = 0u64;
    let ready: IdleUsers<W::User> = Rc::new(RefCell::new(Vec::new()));
    warm_up(
        local,
        schedule,
        lane,
        lanes,
        cap,
        stop,
        &mut next_id,
        &ready,
        &mut in_flight,
        &next,
    );
    loop {
        if let Some(c) = &local.control {
            if c.paused() {
                next.set(None);
                serving(&mut in_flight, local.unpaused(stop)).await;
            }
            if stop.is_stopped(Instant::now()) {
                break;
            }
            if c.generation() != seen {
                seen = c.generation();
                let now = Instant::now().saturating_duration_since(local.start);
                by_hand = c
                    .rate()
                    .map(|(r, since)| (since, on_grid(since, now, r, lane, lanes, j), r));
                if by_hand.is_none() {
                    // Resumed on the plan's schedule: the arrivals due while paused are skipped,
                    // not sent in a burst.
                    while schedule.at(interleaved(lane, lanes, j)).is_some_and(|at| at < now) {
                        j += 1;
                    }
                }
            }
            if by_hand.is_some_and(|(_, _, r)| r <= 0.0) {
                next.set(None);
                serving(&mut in_flight, async {
                    while c.generation() == seen && !stop.is_stopped(Instant::now()) {
                        tokio::select! {
                            _ = tokio::time::sleep(PAUSE_POLL) => {}
                            _ = stop.cancelled() => {}
                        }
                    }
                })
                .await;
                continue;
            }
        }
        let Some(at) = slot(by_hand, schedule, lane, lanes, j) else {
            break;
        };
        let due = local.start + at;
        if let Some(deadline) = stop.deadline() {
            if due >= deadline {
                // Nothing more is due before the deadline; hold until it so the run lasts as long
                // as asked.
                next.set(None);
                serving(&mut in_flight, async {
                    tokio::select! {
                        _ = tokio::time::sleep_until(deadline.into()) => { stop.is_stopped(deadline); }
                        _ = stop.cancelled() => {}
                    }
                })
                .await;
                break;
            }
        }
        next.set(Some(due));
        let now = Instant::now();
        placement.look(now, pacer.take_slept());
        if now < due {
            let waited = serving(&mut in_flight, async {
                tokio::select! {
                    biased;
                    _ = stop.cancelled() => false,
                    _ = pacer.until(local.start, at) => true,
                }
            })
            .await;
            if !waited {
                break;
            }
        } else if wait(now.saturating_duration_since(local.start), at, Duration::ZERO) == Wait::SendBehind {
            // Far behind the schedule (a rate beyond what this thread can send) every arrival is
            // already due and nothing here waits: the clock, not the slot, ends the run at its
            // deadline, and each arrival, sent or dropped, gives the runtime a turn first, so
            // the responses of those in flight are read and free their places under the cap.
            if stop.is_stopped(now) {
                break;
            }
            next.set(None);
            serve_ready(&mut in_flight).await;
            tokio::task::yield_now().await;
        }
        // The decision is made at the arrival's slot, not at the moment the timer fired, so a
        // late wake-up never moves an arrival across the deadline.
        if !stop.claim_slot(due) {
            break;
        }
        arrivals += 1;
        j += 1;
        let full = || local.tracker.active.get() >= cap;
        if full() && !in_flight.is_empty() {
            // Places whose answers have come in but were not read yet (a sender catching up
            // reads nothing) are free: read them before an arrival is dropped for want of one.
            read_answers_in(&mut in_flight, &next, full).await;
        }
        if local.tracker.active.get() >= cap {
            let sent = match on_cap {
                OnCap::Drop => false,
                OnCap::Queue => place_freed(&mut in_flight, &next, &local.tracker.active, cap, stop).await,
            };
            if !sent {
                dropped += 1;
                local.sink.borrow_mut().dropped(at);
                if on_cap == OnCap::Drop {
                    continue;
                }
                // Sending stopped while it waited at the cap: due, and never sent.
                stranded = 1;
                break;
            }
            queued += 1;
        }
        let no_idle_user = || ready.borrow().is_empty() && pool.borrow().is_empty();
        if no_idle_user() && !in_flight.is_empty() {
            // No idle user: reading the responses already in lets a user whose answer has come
            // be reused rather than a connection opened, whose request would wait a turn for
            // the connect anyway. Without it a thread a moment behind (sending its backlog
            // before any response) opened a connection per arrival.
            read_answers_in(&mut in_flight, &next, no_idle_user).await;
        }
        // Users readied before the start go first, so that none of their connections sits
        // unused while the pool's hold the load.
        let (id, done, mut user) = match ready.borrow_mut().pop().or_else(|| pool.borrow_mut().pop()) {
            Some(u) => u,
            None => {
                let u = (next_id, 0, local.workload.new_user(next_id));
                next_id += lanes as u64;
                u
            }
        };
        local.reserve();
        let (task, pool) = (Rc::clone(local), Rc::clone(&pool));
        let mut iteration: Pin<Box<dyn Future<Output = ()>>> = Box::pin(async move {
            task.run_reserved(&mut user, (id, done), due).await;
            if !task.workload.stopped(&user) {
                pool.borrow_mut().push((id, done + 1, user));
            }
        });
        // Sent now, whatever budget this turn of the runtime has left: the first poll writes the
        // request (or starts the connect). It is polled again, with a waker of its own, in the set.
        let first = tokio::task::unconstrained(std::future::poll_fn(|cx| Poll::Ready(iteration.as_mut().poll(cx))));
        if first.await.is_pending() {
            in_flight.push(Deferring {
                inner: iteration,
                next: Rc::clone(&next),
            });
        }
    }
    next.set(None);
    // A thread behind its schedule when the run's clock ran out (off its core for a moment, or
    // at a rate beyond it) leaves slots before the deadline unreached: they were due and not
    // sent, so they count as dropped, and due = sent + dropped whatever the machine did. Slots
    // skipped while paused were never due.
    let paused = local.control.as_ref().is_some_and(|c| c.paused());
    let mut behind = 0u64;
    if let (StopCause::Duration, Some(deadline), false) = (stop.cause(), stop.deadline(), paused) {
        let end = deadline.saturating_duration_since(local.start);
        behind = due_before(by_hand, schedule, lane, lanes, j, end);
        if let (Some(at), true) = (slot(by_hand, schedule, lane, lanes, j), behind > 0) {
            arrivals += behind;
            dropped += behind;
            local.sink.borrow_mut().dropped_many(at, behind);
        }
        // Already counted as due and dropped.
        behind += stranded;
    }
    // Iterations still in flight finish on their own task, so the drain waits for them as it
    // waits for the closed model's users; dropping the thread's task set cuts them off.
    if !in_flight.is_empty() {
        tokio::task::spawn_local(async move { while in_flight.next().await.is_some() {} });
    }
    Arrivals {
        arrivals,
        dropped,
        behind,
        queued,
    }
}

/// Serves the iterations in flight until one of them ends and frees a place under `cap`
/// (`active` counts them); false when sending stops first, by a signal or at the deadline.
async fn place_freed(in_flight: &mut InFlight, next: &NextSlot, active: &Cell<u64>, cap: u64, stop: &Stop) -> bool {
    // The iterations read must not stand aside for the arrival that is waiting on them.
    next.set(None);
    // Only an iteration in flight frees a place, and `serving` looks again after polling them,
    // so this needs no waker of its own.
    let freed = std::future::poll_fn(|_| {
        if active.get() < cap {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    });
    let deadline = async {
        match stop.deadline() {
            Some(d) => {
                tokio::time::sleep_until(d.into()).await;
                stop.is_stopped(d);
            }
            None => std::future::pending().await,
        }
    };
    serving(in_flight, async {
        tokio::select! {
            biased;
            _ = stop.cancelled() => false,
            _ = deadline => false,
            _ = freed => true,
        }
    })
    .await
}

/// How far into the run the open model readies users for: enough for the arrivals due
/// before the first answers come back and free theirs.
const WARM_SPAN: Duration = Duration::from_millis(2);
/// At most this many users are readied per thread, whatever the rate.
const WARM_MAX: u64 = 256;

/// Starts readying ([`Workload::prepare`]) as many users as this thread's arrivals in its
/// first [`WARM_SPAN`] (within its cap and its share of a count), each put in `ready` as (id,
/// iterations run, state) once done. Without them, each of a fast run's first arrivals opened a
/// connection of its own: at 50,000 arrivals/s, 50 to 110 connects in the first millisecond left
/// one thread 10 to 25 ms behind, and catching up took it 100 to 250 ms. They run among the
/// iterations in flight, so the wait for the first slot drives them; one not done by then is
/// neither dropped (a connection the server had accepted would go uncounted) nor waited for:
/// the arrivals go on with fresh users, and it joins them when done. A run whose start has
/// passed (no lead-in), or whose workload readies nothing, makes none.
#[allow(clippy::too_many_arguments)]
fn warm_up<W: Workload>(
    local: &Rc<Local<W>>,
    schedule: &Schedule,
    lane: usize,
    lanes: usize,
    cap: u64,
    stop: &Stop,
    next_id: &mut u64,
    ready: &IdleUsers<W::User>,
    in_flight: &mut InFlight,
    next: &NextSlot,
) {
    if !local.workload.prepares() || Instant::now() >= local.start {
        return;
    }
    let span = stop
        .deadline()
        .map_or(WARM_SPAN, |d| d.saturating_duration_since(local.start).min(WARM_SPAN));
    let limit = cap
        .min(WARM_MAX)
        .min(stop.remaining().map_or(u64::MAX, |n| n / lanes as u64));
    let mut n = 0u64;
    while n < limit && slot(None, schedule, lane, lanes, n).is_some_and(|at| at < span) {
        n += 1;
    }
    for _ in 0..n {
        let id = *next_id;
        *next_id += lanes as u64;
        let (task, ready) = (Rc::clone(local), Rc::clone(ready));
        let readying: Pin<Box<dyn Future<Output = ()>>> = Box::pin(async move {
            let mut user = task.workload.new_user(id);
            task.workload.prepare(&mut user).await;
            ready.borrow_mut().push((id, 0, user));
        });
        in_flight.push(Deferring {
            inner: readying,
            next: Rc::clone(next),
        });
    }
}

/// Polls the iterations in flight until `until` completes. `until` is polled first, and again
/// after the ready iterations, so a slot that came while they ran is met in the same turn.
async fn serving<T>(in_flight: &mut InFlight, until: impl Future<Output = T>) -> T {
    let mut until = std::pin::pin!(until);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = until.as_mut().poll(cx) {
            return Poll::Ready(v);
        }
        while let Poll::Ready(Some(())) = in_flight.poll_next_unpin(cx) {}
        until.as_mut().poll(cx)
    })
    .await
}

/// Reads the answers already in, and, while `wanting` still holds, once more after one turn of
/// the runtime (which polls the sockets): what frees a place or a user without waiting for one.
async fn read_answers_in(in_flight: &mut InFlight, next: &NextSlot, wanting: impl Fn() -> bool) {
    // The iterations read must not stand aside for the arrival that is waiting on them.
    next.set(None);
    serve_ready(in_flight).await;
    if wanting() {
        tokio::task::yield_now().await;
        serve_ready(in_flight).await;
    }
}

/// Runs every iteration in flight that is ready, once.
async fn serve_ready(in_flight: &mut InFlight) {
    std::future::poll_fn(|cx| {
        while let Poll::Ready(Some(())) = in_flight.poll_next_unpin(cx) {}
        Poll::Ready(())
    })
    .await
}

/// An open-model iteration in flight that stands aside while an arrival is due: polled then,
/// it asks to be polled again and returns at once, so the sender runs before it.
struct Deferring<F> {
    inner: F,
    next: NextSlot,
}

impl<F: Future + Unpin> Future for Deferring<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if self.next.get().is_some_and(|due| Instant::now() >= due) {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll(cx)
    }
}

/// How long before an arrival's slot the kernel timer wakes the thread, which then yields to the
/// runtime until the clock reaches the slot: the wake-up itself fits in it.
const WAKE_AHEAD: Duration = Duration::from_micros(150);
/// The same with only tokio's timer, whose wheel ticks in milliseconds and whose epoll wait rounds
/// up to one: it fires up to about 2 ms late (a send lag p50 of 1 ms, measured before).
const WAKE_AHEAD_COARSE: Duration = Duration::from_micros(2_000);

/// Where a rate `r` set by hand at `since` puts this thread's arrivals, seen at `now` with its
/// `j`th next: the arrival `j0` would have had the lane's first slot after `since`, so that every
/// thread (and every worker of a collected run, told of the change a moment apart) paces on one
/// grid of the whole run's lanes. The grid's slots already past when the thread saw the change
/// are skipped, never due, as those of a pause are.
fn on_grid(since: Duration, now: Duration, r: f64, lane: usize, lanes: usize, j: u64) -> i64 {
    let past = (now.saturating_sub(since).as_secs_f64() * r - lane as f64 - 1.0) / lanes as f64;
    let skipped = if past > 0.0 { past.ceil().min(1e15) as i64 } else { 0 };
    j as i64 - skipped
}

/// This thread's `j`th arrival's slot, from the run's start: on the plan's schedule, or on a rate
/// set by hand (from when, which arrival had the first slot, at what rate; none at a rate of zero).
fn slot(
    by_hand: Option<(Duration, i64, f64)>,
    schedule: &Schedule,
    lane: usize,
    lanes: usize,
    j: u64,
) -> Option<Duration> {
    match by_hand {
        Some((_, _, r)) if r <= 0.0 => None,
        Some((from, j0, r)) => Some(
            from + Duration::from_secs_f64(((j as i64 - j0).max(0) as u64 * lanes as u64 + lane as u64 + 1) as f64 / r),
        ),
        None => schedule.at(interleaved(lane, lanes, j)),
    }
}

/// How many of this thread's arrivals from its `j`th have slots before `end`: found by doubling
/// then halving, since a rate far beyond the thread leaves millions unreached (one by one, ten
/// million took a debug build 3 s past the run's end).
fn due_before(
    by_hand: Option<(Duration, i64, f64)>,
    schedule: &Schedule,
    lane: usize,
    lanes: usize,
    j: u64,
    end: Duration,
) -> u64 {
    let before = |k: u64| slot(by_hand, schedule, lane, lanes, k).is_some_and(|at| at < end);
    if !before(j) {
        return 0;
    }
    let mut step = 1u64;
    while step < u64::MAX / 4 && before(j.saturating_add(step)) {
        step *= 2;
    }
    // j + step / 2 is before the end (j itself when step is 1), j + step is not.
    let (mut lo, mut hi) = (j + step / 2, j.saturating_add(step));
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi - j
}

/// Waits for open-model arrivals' slots to within microseconds, at little CPU.
///
/// Chosen by measurement (bench/pacing.sh, one engine thread against nginx on loopback, 4 s at
/// 1,000 arrivals/s): tokio's timer alone sends every arrival about 1 ms late (p50 0.8 ms).
/// Yielding in a loop from 2 ms before each slot sends it within microseconds but keeps the
/// thread busy for 2 ms before every arrival, so from 500 arrivals/s a whole core spins, which a
/// target on the same machine pays for. A timerfd (the kernel's high-resolution timer, watched
/// by the runtime's epoll like any socket) wakes the thread within tens of microseconds of its
/// deadline, so the loop runs only for the last [`WAKE_AHEAD`]: p50 11 µs, p99 23 µs, at 0.73
/// CPU-seconds in 4 s instead of 4 (waking 70 µs ahead halved the CPU but let p99 reach 0.5 ms).
/// Yielding rather than a blocking sleep keeps the thread's iterations running: each yield also
/// polls the sockets. Without a timerfd (not Linux, or none left), tokio's timer and a longer
/// loop serve.
struct Pacer {
    timer: Option<AsyncFd<TimerFd>>,
    /// When the timer is set to expire, if it has not yet been seen to: a wait taken up again
    /// for the same slot does not set it again.
    armed: Option<Instant>,
    ahead: Duration,
    /// Whether it waited on a timer since [`Pacer::take_slept`] was last called: a thread that
    /// sleeps is placed by the kernel as it wakes (see [`Placement`]).
    slept: bool,
}

impl Pacer {
    // `AsyncFd::new` is deprecated because a registered descriptor could be closed behind the
    // runtime's back; here the AsyncFd owns the TimerFd, which owns its descriptor, so nothing
    // else can close it, and the safe constructor is the right one (`register` is `unsafe`).
    #[allow(deprecated)]
    fn new() -> Self {
        let timer = TimerFd::new_custom(ClockId::Monotonic, true, true)
            .ok()
            .and_then(|t| AsyncFd::new(t).ok());
        let ahead = if timer.is_some() { WAKE_AHEAD } else { WAKE_AHEAD_COARSE };
        Pacer {
            timer,
            armed: None,
            ahead,
            slept: false,
        }
    }

    /// Whether it slept since the last call.
    fn take_slept(&mut self) -> bool {
        std::mem::take(&mut self.slept)
    }

    /// Returns at the slot `at` of a run that started at `start`.
    async fn until(&mut self, start: Instant, at: Duration) {
        loop {
            let now = Instant::now();
            // Before the start (the open model's lead-in) offsets count from now instead, so the
            // wake-up lands at the same instant; counted from the start, every slot would look
            // due at once, and the first would leave before the run began.
            let (base, at) = match start.checked_duration_since(now) {
                Some(ahead_of_start) => (now, at + ahead_of_start),
                None => (start, at),
            };
            match wait(now - base, at, self.ahead) {
                Wait::Sleep(wake) => {
                    self.slept = true;
                    let wake = base + wake;
                    let Some(fd) = &mut self.timer else {
                        tokio::time::sleep_until(wake.into()).await;
                        continue;
                    };
                    // A wait taken up again for the same slot finds the timer set already.
                    if self.armed != Some(wake) {
                        fd.get_mut().set_state(
                            TimerState::Oneshot((wake - now).max(Duration::from_micros(1))),
                            SetTimeFlags::Default,
                        );
                        self.armed = Some(wake);
                    }
                    // An expiry left from a wait for an earlier slot may wake it early: the loop
                    // looks at the clock again.
                    match fd.readable().await {
                        Ok(mut ready) => {
                            ready.get_inner().read();
                            ready.clear_ready();
                            self.armed = None;
                        }
                        Err(_) => {
                            self.timer = None;
                            self.ahead = WAKE_AHEAD_COARSE;
                        }
                    }
                }
                Wait::Turn => tokio::task::yield_now().await,
                Wait::Send | Wait::SendBehind => return,
            }
        }
    }
}

/// After sending stops: wait for iterations in flight, at most `grace` once stopped by time or
/// by a signal (a count-limited run waits for its last requests, which their timeout bounds).
async fn drain(grace: Duration, tracker: &Tracker, stop: &Stop) {
    match stop.cause() {
        StopCause::Duration | StopCause::Cancelled => {
            tokio::select! {
                _ = tokio::time::timeout(grace, tracker.wait_idle()) => {}
                _ = stop.forced() => {}
            }
        }
        StopCause::Count | StopCause::Running | StopCause::Completed => {
            tokio::select! {
                _ = tracker.wait_idle() => {}
                _ = async { stop.cancelled().await; tokio::time::sleep(grace).await } => {}
                _ = stop.forced() => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads (or workers) that see a rate set by hand at different moments, each from its
    /// own next arrival, put their arrivals on the one grid of the whole run's lanes from the
    /// change: together, every slot after the last of them saw it, each once.
    #[test]
    fn a_rate_set_by_hand_is_one_grid_whoever_sees_it_when() {
        let (since, r, lanes) = (Duration::from_millis(1_000), 400.0, 6);
        let schedule = Schedule::constant(1.0).unwrap();
        let end = Duration::from_millis(2_000);
        let mut got = Vec::new();
        for lane in 0..lanes {
            // Seen 0 to 37 ms late, at this lane's 3rd to 8th arrival.
            let now = since + Duration::from_micros(7_400 * lane as u64);
            let j = 3 + lane as u64;
            let by_hand = Some((since, on_grid(since, now, r, lane, lanes, j), r));
            let mut k = j;
            while let Some(at) = slot(by_hand, &schedule, lane, lanes, k).filter(|at| *at < end) {
                assert!(at >= now, "lane {lane}: a slot before it saw the change");
                got.push(((at - since).as_secs_f64() * r).round() as u64);
                k += 1;
            }
        }
        got.sort_unstable();
        let last_seen = (7_400.0 * (lanes - 1) as f64 / 1e6 * r).ceil() as u64;
        let whole: Vec<u64> = (1..400).collect();
        let after: Vec<u64> = got.iter().copied().filter(|n| *n > last_seen).collect();
        assert_eq!(after, whole[last_seen as usize..], "every slot once after all saw it");
        let mut unique = got.clone();
        unique.dedup();
        assert_eq!(unique, got, "no slot twice");
    }

    /// The count of slots before the end, found by halving, is the count one by one, on the
    /// plan's schedule and on a rate set by hand, for every lane and from any arrival.
    #[test]
    fn arrivals_due_before_the_end_are_counted_as_one_by_one() {
        let schedule = Schedule::constant(1000.0).unwrap();
        for by_hand in [None, Some((Duration::from_millis(300), 0, 250.0))] {
            for (lane, lanes) in [(0, 1), (0, 3), (2, 3)] {
                for j in [0u64, 7, 90, 400] {
                    for end_ms in [0u64, 1, 250, 1000, 1999] {
                        let end = Duration::from_millis(end_ms);
                        let one_by_one = (j..)
                            .take_while(|k| slot(by_hand, &schedule, lane, lanes, *k).is_some_and(|at| at < end))
                            .count() as u64;
                        assert_eq!(
                            due_before(by_hand, &schedule, lane, lanes, j, end),
                            one_by_one,
                            "{by_hand:?} lane {lane} of {lanes}, from {j}, before {end_ms} ms"
                        );
                    }
                }
            }
        }
    }

    /// A batch of iterations whose responses are all in, as after the thread lost its core for
    /// a moment. The next arrival's slot comes while the fourth is being read. Each entry of
    /// the log is an iteration's number, or `None` for the send.
    fn ready_batch(next: &NextSlot, log: &Rc<RefCell<Vec<Option<u32>>>>) -> InFlight {
        let in_flight = InFlight::new();
        for i in 0..50 {
            let (slot, log) = (Rc::clone(next), Rc::clone(log));
            let read: Pin<Box<dyn Future<Output = ()>>> = Box::pin(async move {
                log.borrow_mut().push(Some(i));
                if i == 3 {
                    // Long past, so the test does not depend on how fast this machine is.
                    slot.set(Instant::now().checked_sub(Duration::from_secs(1)));
                }
            });
            in_flight.push(Deferring {
                inner: read,
                next: Rc::clone(next),
            });
        }
        in_flight
    }

    #[test]
    fn an_arrival_whose_slot_comes_waits_behind_at_most_the_response_being_read() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let next: NextSlot = Rc::new(Cell::new(None));
            let log = Rc::new(RefCell::new(Vec::new()));
            let mut in_flight = ready_batch(&next, &log);
            // The sender: ready once the slot has come, as the pacer is.
            let send = std::future::poll_fn(|_| match next.get() {
                Some(due) if Instant::now() >= due => {
                    log.borrow_mut().push(None);
                    Poll::Ready(())
                }
                _ => Poll::Pending,
            });
            serving(&mut in_flight, send).await;
            assert_eq!(*log.borrow(), [Some(0), Some(1), Some(2), Some(3), None]);
            // Once sent, the rest of the batch runs.
            next.set(None);
            while in_flight.next().await.is_some() {}
            let log = log.borrow();
            assert_eq!(log.len(), 51);
            assert!(log[5..].iter().all(Option::is_some));
        });
    }

    #[test]
    fn shares_add_up() {
        for total in [0u64, 1, 5, 10_000] {
            for threads in 1..5 {
                let sum: u64 = (0..threads).map(|k| share(total, k, threads)).sum();
                assert_eq!(sum, total);
            }
        }
    }
}
