//! The one executor behind every load model and stop rule.

mod closed;
mod in_flight;
mod open;
mod pacer;
mod slots;

use closed::closed;
use open::{open, Arrivals};

use crate::placement::Placement;
use crate::{Clock, Control, Ctx, Stop, StopCause};
use crest_model::plan::{share, LoadModel, Shard};
use crest_model::Sink;
use crest_schedule::{segment_at, Schedule};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
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
    /// schedule never reached; with [`OnCap::Queue`](crest_model::plan::OnCap::Queue), those still waiting at the cap too.
    pub behind: u64,
    /// Open model with [`OnCap::Queue`](crest_model::plan::OnCap::Queue): arrivals that found the cap reached and waited for a
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
    give_back_freed_memory();
    // Threads that ran out of work end on their own; only when all have is the run complete.
    stop.complete();
    report.cause = stop.cause();
    report.finished = Instant::now();
    Ok(report)
}

/// Returns the memory the ended threads' users held to the system. glibc keeps a thread's
/// freed memory in that thread's arena, where nothing else allocates once the thread has ended,
/// while the results that follow allocate anew: at 10,000 users the run's peak was their sum,
/// after the last request (issue 35).
#[allow(unsafe_code, reason = "one call into glibc, which has no safe binding")]
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory of glibc's own arenas, which it locks.
    unsafe {
        libc::malloc_trim(0);
    }
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
    /// The run's start and this thread's sink.
    clock: Clock,
    tracker: Tracker,
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
            None => segment_at(&self.segments, t.saturating_duration_since(self.clock.start())) as u32,
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
        self.workload.finish(user, self.ctx(who, Instant::now())).await;
        self.ended();
    }

    /// Counts an iteration as in flight. The open model calls this when it dispatches, before
    /// the iteration's task first runs, so that a burst of due arrivals cannot overshoot the cap.
    fn reserve(&self) {
        let t = &self.tracker;
        t.active.set(t.active.get() + 1);
        t.started.set(t.started.get() + 1);
    }

    /// Runs an iteration already counted by [`Local::reserve`]. A block rather than an async
    /// fn: an async fn keeps a second copy of each argument used after its await, and this
    /// future is in every user's task (issue 35).
    #[allow(clippy::manual_async_fn)]
    fn run_reserved<'a>(
        &'a self,
        user: &'a mut W::User,
        who: (u64, u64),
        intended: Instant,
    ) -> impl Future<Output = ()> + 'a {
        async move {
            self.workload.iterate(user, self.ctx(who, intended)).await;
            self.ended();
        }
    }

    /// The context of user `who.0`'s iteration `who.1`, meant to start at `intended`.
    fn ctx(&self, who: (u64, u64), intended: Instant) -> Ctx<'_> {
        Ctx {
            clock: &self.clock,
            intended,
            segment: self.segment_at(intended),
            // Ids count up to the users a run has had, far below 2^32, as the samples' rows
            // keep them.
            user: who.0 as u32,
            iteration: who.1,
        }
    }

    /// Ends an iteration counted by [`Local::reserve`].
    fn ended(&self) {
        let t = &self.tracker;
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
        clock: Clock::new(start, sink.clone() as Rc<RefCell<dyn Sink>>),
        tracker: Tracker::default(),
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
                        .clock
                        .sink()
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
