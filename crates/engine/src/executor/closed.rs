//! The closed model: each thread keeps its lane's share of the profile's users running, each
//! user looping over its iterations.

use super::{Local, Workload};
use crate::Stop;
use crest_model::plan::{share, UsersProfile};
use crest_schedule::{interleaved, users_at};
use std::cell::Cell;
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How often the closed model's controller matches the users running to the profile.
const CONTROL_EVERY: Duration = Duration::from_millis(50);

/// Closed model: this thread keeps its lane's share of the profile's users running (see
/// [`Shard`](crest_model::plan::Shard)). Each user loops until the stop rule says no, it has run its iterations, or the
/// profile retires it.
pub(super) async fn closed<W: Workload>(
    lane: usize,
    lanes: usize,
    profile: &UsersProfile,
    iterations: Option<u64>,
    local: &Rc<Local<W>>,
    stop: &Stop,
) {
    let roster = Rc::new(Roster {
        stop: stop.clone(),
        iterations,
        live: Cell::new(0),
        changed: Notify::new(),
    });
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
        let elapsed = now.saturating_duration_since(local.clock.start());
        let asked = local.control.as_ref().and_then(|c| c.users_at(elapsed));
        let target = share(asked.unwrap_or_else(|| users_at(profile, elapsed)), lane, lanes);
        match iterations {
            None => {
                running.retain(|r| !r.get());
                while (running.len() as u64) < target {
                    running.push(spawn_user(interleaved(lane, lanes, spawned), local, &roster));
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
            Some(_) => {
                // Users that finished their iterations are not replaced.
                while spawned < target {
                    spawn_user(interleaved(lane, lanes, spawned), local, &roster);
                    spawned += 1;
                }
                if roster.live.get() == 0 && spawned >= final_share && elapsed >= profile_end {
                    break;
                }
            }
        }
        let waiting = roster.changed.notified();
        // Wake at the next step's start too: users of a step that ended must stop starting
        // iterations then, not up to a control period later (after a spike, a period of 40
        // users failing fast would otherwise land in the recovery step).
        let next_step = local
            .segments
            .iter()
            .find(|s| **s > elapsed)
            .map(|s| local.clock.start() + *s);
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

/// What this thread's users share: one reference in each user's task rather than a field each,
/// as every user's task holds them for the whole run (issue 35).
struct Roster {
    stop: Stop,
    /// Iterations each user runs, when the run counts them.
    iterations: Option<u64>,
    /// Users alive.
    live: Cell<u64>,
    /// Told when a user ends.
    changed: Notify,
}

/// Starts one user; returns the flag that retires it.
fn spawn_user<W: Workload>(id: u64, local: &Rc<Local<W>>, roster: &Rc<Roster>) -> Rc<Cell<bool>> {
    let retire = Rc::new(Cell::new(false));
    roster.live.set(roster.live.get() + 1);
    tokio::task::spawn_local(user(id, Rc::clone(local), Rc::clone(roster), Rc::clone(&retire)));
    retire
}

/// One user's life: its iterations until `flag` retires it, then its `finish`. Every user's
/// task holds this future for the whole run, so at 10,000 users its size is memory (issue 35):
/// a block, as an async fn would keep a second copy of each argument it uses after an await.
#[allow(clippy::manual_async_fn)]
fn user<W: Workload>(
    id: u64,
    local: Rc<Local<W>>,
    roster: Rc<Roster>,
    flag: Rc<Cell<bool>>,
) -> impl Future<Output = ()> {
    async move {
        let mut user = local.workload.new_user(id);
        let mut done = 0u64;
        let mut first = None;
        while !flag.get() && roster.iterations.is_none_or(|n| done < n) {
            let now = Instant::now();
            if local.control.as_ref().is_some_and(|c| c.paused()) {
                local.unpaused(&roster.stop).await;
                continue;
            }
            if !roster.stop.claim(now) {
                break;
            }
            first.get_or_insert(now);
            // Run here rather than through `Local::run_reserved`: each layer of future around
            // the workload's keeps its own fields in the user's task for as long as the
            // iteration runs, and at 10,000 users a task's size is memory (issue 35).
            local.reserve();
            local.workload.iterate(&mut user, local.ctx((id, done), now)).await;
            local.ended();
            done += 1;
            if local.workload.stopped(&user) {
                break;
            }
        }
        local.finish(&mut user, (id, done)).await;
        if let Some(n) = roster.iterations {
            match first {
                Some(first) if done == n && !local.workload.stopped(&user) => local
                    .user_times
                    .borrow_mut()
                    .push((first.saturating_duration_since(local.clock.start()), first.elapsed())),
                _ => local.users_cut_short.set(local.users_cut_short.get() + 1),
            }
        }
        roster.live.set(roster.live.get() - 1);
        roster.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::Tracker;
    use crate::{Clock, Ctx};
    use crest_model::{Sample, Sink};
    use std::cell::RefCell;
    use std::sync::Arc;

    struct NoSink;
    impl Sink for NoSink {
        fn record(&mut self, _: &Sample, _: Option<&dyn std::fmt::Display>) {}
        fn dropped(&mut self, _: Duration) {}
        fn tick(&mut self, _: Duration) {}
    }

    /// A workload whose iteration future is over 512 bytes, so the rest of a user's task is the
    /// engine's own.
    struct Padded;
    impl Workload for Padded {
        type User = ();
        fn new_user(&self, _: u64) {}
        async fn iterate<'a>(&'a self, _: &'a mut (), _: Ctx<'a>) {
            let pad = [0u8; 512];
            std::future::pending::<()>().await;
            std::hint::black_box(pad);
        }
    }

    /// Each user's task is the workload's iteration and user plus the engine's loop around
    /// them; at 10,000 users every byte of the loop is 10 KB (issue 35).
    #[test]
    fn a_users_loop_adds_little_to_its_iteration() {
        let local = Rc::new(Local {
            workload: Arc::new(Padded),
            clock: Clock::new(Instant::now(), Rc::new(RefCell::new(NoSink))),
            tracker: Tracker::default(),
            segments: vec![Duration::ZERO],
            control: None,
            user_times: RefCell::new(Vec::new()),
            users_cut_short: Cell::new(0),
        });
        let now = Instant::now();
        let clock = Clock::new(now, Rc::new(RefCell::new(NoSink)));
        let iteration = std::mem::size_of_val(&Padded.iterate(&mut (), Ctx::new(&clock, now, 0)));
        let roster = Rc::new(Roster {
            stop: Stop::new(None, None),
            iterations: None,
            live: Cell::new(0),
            changed: Notify::new(),
        });
        let f = user(0, local, roster, Rc::new(Cell::new(false)));
        // 151 bytes (debug build) through `Local::run_reserved`; 103 with the iteration run
        // inline; 64 with what a thread's users share behind one reference.
        let own = std::mem::size_of_val(&f) - iteration;
        assert!(own <= 72, "{own}");
    }
}
