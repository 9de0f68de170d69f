//! The open model: arrivals sent on the schedule, each on an idle user, by one sender per thread
//! that polls the iterations in flight itself (see [`open`]).

use super::in_flight::{read_answers_in, serve_ready, serving, Deferring, InFlight, NextSlot};
use super::pacer::Pacer;
use super::slots::{due_before, on_grid, slot};
use super::{Local, Workload, PAUSE_POLL};
use crate::placement::Placement;
use crate::{Control, Stop, StopCause};
use crest_model::plan::OnCap;
use crest_schedule::{interleaved, wait, Schedule, Wait};
use futures_util::stream::StreamExt;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

/// The open model's idle users, each with its id and the iterations it has run, so every
/// request is labelled with the user that sent it, as in the closed model.
type IdleUsers<U> = Rc<RefCell<Vec<(u64, u64, U)>>>;

/// What one thread of the open model did with its arrivals (see [`EngineReport`](super::EngineReport)).
#[derive(Debug, Default)]
pub(super) struct Arrivals {
    pub(super) arrivals: u64,
    pub(super) dropped: u64,
    pub(super) behind: u64,
    pub(super) queued: u64,
}

/// Open model: start iterations on this lane's share of the schedule (see [`Shard`](crest_model::plan::Shard)), at most
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
/// bounds it (those still waiting then are not sent, and count as [`EngineReport::behind`](super::EngineReport::behind)).
pub(super) async fn open<W: Workload>(
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
    let mut counts = Arrivals::default();
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
            match steer(
                c,
                local,
                stop,
                &mut in_flight,
                &next,
                schedule,
                (lane, lanes),
                &mut j,
                &mut seen,
                &mut by_hand,
            )
            .await
            {
                Steered::Stop => break,
                Steered::Again => continue,
                Steered::Go => {}
            }
        }
        let Some(at) = slot(by_hand, schedule, lane, lanes, j) else {
            break;
        };
        let due = local.clock.start() + at;
        if let Some(deadline) = stop.deadline() {
            if due >= deadline {
                hold_until(deadline, &mut in_flight, &next, stop).await;
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
                    _ = pacer.until(local.clock.start(), at) => true,
                }
            })
            .await;
            if !waited {
                break;
            }
        } else if wait(now.saturating_duration_since(local.clock.start()), at, Duration::ZERO) == Wait::SendBehind
            && !turn_behind(now, &mut in_flight, &next, stop).await
        {
            break;
        }
        // The decision is made at the arrival's slot, not at the moment the timer fired, so a
        // late wake-up never moves an arrival across the deadline.
        if !stop.claim_slot(due) {
            break;
        }
        counts.arrivals += 1;
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
                counts.dropped += 1;
                local.clock.sink().borrow_mut().dropped(at);
                if on_cap == OnCap::Drop {
                    continue;
                }
                // Sending stopped while it waited at the cap: due, and never sent.
                stranded = 1;
                break;
            }
            counts.queued += 1;
        }
        let no_idle_user = || ready.borrow().is_empty() && pool.borrow().is_empty();
        if no_idle_user() && !in_flight.is_empty() {
            // No idle user: reading the responses already in lets a user whose answer has come
            // be reused rather than a connection opened, whose request would wait a turn for
            // the connect anyway. Without it a thread a moment behind (sending its backlog
            // before any response) opened a connection per arrival.
            read_answers_in(&mut in_flight, &next, no_idle_user).await;
        }
        let mut iteration = start_iteration(local, &ready, &pool, &mut next_id, lanes, due);
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
    count_unreached(&mut counts, stranded, local, stop, by_hand, schedule, (lane, lanes), j);
    // Iterations still in flight finish on their own task, so the drain waits for them as it
    // waits for the closed model's users; dropping the thread's task set cuts them off.
    if !in_flight.is_empty() {
        tokio::task::spawn_local(async move { while in_flight.next().await.is_some() {} });
    }
    counts
}

/// Far behind the schedule (a rate beyond what this thread can send) every arrival is already
/// due and nothing waits for its slot: the clock, not the slot, ends the run at its deadline
/// (false once it has), and each arrival, sent or dropped, gives the runtime a turn first, so the
/// responses of those in flight are read and free their places under the cap.
async fn turn_behind(now: Instant, in_flight: &mut InFlight, next: &NextSlot, stop: &Stop) -> bool {
    if stop.is_stopped(now) {
        return false;
    }
    next.set(None);
    serve_ready(in_flight).await;
    tokio::task::yield_now().await;
    true
}

/// What the sender does once it has followed the live page's steering.
enum Steered {
    /// Send the next arrival.
    Go,
    /// Look again: it waited at a rate of zero set by hand until that changed or sending stopped.
    Again,
    /// Sending has stopped.
    Stop,
}

/// Follows the live page's steering before the next arrival: waits while the run is paused or
/// held at a rate of zero set by hand, and puts this thread's arrivals on the grid of a rate set
/// or cleared since it last looked (`seen`, the control's generation then).
#[allow(clippy::too_many_arguments)]
async fn steer<W: Workload>(
    c: &Control,
    local: &Local<W>,
    stop: &Stop,
    in_flight: &mut InFlight,
    next: &NextSlot,
    schedule: &Schedule,
    (lane, lanes): (usize, usize),
    j: &mut u64,
    seen: &mut u64,
    by_hand: &mut Option<(Duration, i64, f64)>,
) -> Steered {
    if c.paused() {
        next.set(None);
        serving(in_flight, local.unpaused(stop)).await;
    }
    if stop.is_stopped(Instant::now()) {
        return Steered::Stop;
    }
    if c.generation() != *seen {
        *seen = c.generation();
        let now = Instant::now().saturating_duration_since(local.clock.start());
        *by_hand = c
            .rate()
            .map(|(r, since)| (since, on_grid(since, now, r, lane, lanes, *j), r));
        if by_hand.is_none() {
            // Resumed on the plan's schedule: the arrivals due while paused are skipped,
            // not sent in a burst.
            while schedule.at(interleaved(lane, lanes, *j)).is_some_and(|at| at < now) {
                *j += 1;
            }
        }
    }
    if by_hand.is_some_and(|(_, _, r)| r <= 0.0) {
        next.set(None);
        serving(in_flight, async {
            while c.generation() == *seen && !stop.is_stopped(Instant::now()) {
                tokio::select! {
                    _ = tokio::time::sleep(PAUSE_POLL) => {}
                    _ = stop.cancelled() => {}
                }
            }
        })
        .await;
        return Steered::Again;
    }
    Steered::Go
}

/// Once nothing more is due before the deadline, holds the sender until it (serving the
/// iterations in flight) so the run lasts as long as asked.
async fn hold_until(deadline: Instant, in_flight: &mut InFlight, next: &NextSlot, stop: &Stop) {
    next.set(None);
    serving(in_flight, async {
        tokio::select! {
            _ = tokio::time::sleep_until(deadline.into()) => { stop.is_stopped(deadline); }
            _ = stop.cancelled() => {}
        }
    })
    .await;
}

/// An iteration for the arrival due at `due`, on an idle user or a new one, counted as in flight
/// already; polled, it sends the arrival's request, and once done gives its user back to `pool`
/// (unless the user gave up for good).
#[inline]
fn start_iteration<W: Workload>(
    local: &Rc<Local<W>>,
    ready: &IdleUsers<W::User>,
    pool: &IdleUsers<W::User>,
    next_id: &mut u64,
    lanes: usize,
    due: Instant,
) -> Pin<Box<dyn Future<Output = ()>>> {
    // Users readied before the start go first, so that none of their connections sits
    // unused while the pool's hold the load.
    let (id, done, mut user) = match ready.borrow_mut().pop().or_else(|| pool.borrow_mut().pop()) {
        Some(u) => u,
        None => {
            let u = (*next_id, 0, local.workload.new_user(*next_id));
            *next_id += lanes as u64;
            u
        }
    };
    local.reserve();
    let (task, pool) = (Rc::clone(local), Rc::clone(pool));
    Box::pin(async move {
        task.run_reserved(&mut user, (id, done), due).await;
        if !task.workload.stopped(&user) {
            pool.borrow_mut().push((id, done + 1, user));
        }
    })
}

/// Counts what sending left undone when it stopped into `counts`: the slots before the deadline
/// a thread behind its schedule never reached, and the arrival `stranded` at the cap.
#[allow(clippy::too_many_arguments)]
fn count_unreached<W: Workload>(
    counts: &mut Arrivals,
    stranded: u64,
    local: &Local<W>,
    stop: &Stop,
    by_hand: Option<(Duration, i64, f64)>,
    schedule: &Schedule,
    (lane, lanes): (usize, usize),
    j: u64,
) {
    // A thread behind its schedule when the run's clock ran out (off its core for a moment, or
    // at a rate beyond it) leaves slots before the deadline unreached: they were due and not
    // sent, so they count as dropped, and due = sent + dropped whatever the machine did. Slots
    // skipped while paused were never due.
    let paused = local.control.as_ref().is_some_and(|c| c.paused());
    if let (StopCause::Duration, Some(deadline), false) = (stop.cause(), stop.deadline(), paused) {
        let end = deadline.saturating_duration_since(local.clock.start());
        counts.behind = due_before(by_hand, schedule, lane, lanes, j, end);
        if let (Some(at), true) = (slot(by_hand, schedule, lane, lanes, j), counts.behind > 0) {
            counts.arrivals += counts.behind;
            counts.dropped += counts.behind;
            local.clock.sink().borrow_mut().dropped_many(at, counts.behind);
        }
        // Already counted as due and dropped.
        counts.behind += stranded;
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
    if !local.workload.prepares() || Instant::now() >= local.clock.start() {
        return;
    }
    let span = stop.deadline().map_or(WARM_SPAN, |d| {
        d.saturating_duration_since(local.clock.start()).min(WARM_SPAN)
    });
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
