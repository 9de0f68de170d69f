//! The executor with a fake workload: counts, caps, stop rules and draining, without a network.
#![allow(clippy::unwrap_used)]

use crest_engine::{run, Ctx, Shape, Stop, StopCause, Workload};
use crest_model::plan::{LoadModel, OnCap, RateProfile, Shard, UsersProfile, UsersStage};
use crest_model::{Outcome, Sample, Sink};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Each iteration is one request that takes `0` and records one successful sample.
struct Sleepy(Duration);

impl Workload for Sleepy {
    type User = u64;

    fn new_user(&self, id: u64) -> u64 {
        id
    }

    async fn iterate<'a>(&'a self, _user: &'a mut u64, ctx: Ctx<'a>) {
        let started = Instant::now();
        let sent = crest_engine::Unanswered::sent();
        tokio::time::sleep(self.0).await;
        drop(sent);
        let s = Sample {
            name: 0,
            segment: 0,
            user: *_user,
            iteration: 0,
            intended: ctx.offset(ctx.intended()),
            send_lag: started.saturating_duration_since(ctx.intended()),
            dns: None,
            connect: None,
            ttfb: None,
            total: Instant::now() - ctx.intended(),
            bytes_sent: 0,
            bytes_received: 0,
            messages_sent: 0,
            messages_received: 0,
            status: Some(200),
            outcome: Outcome::Success,
        };
        ctx.record(s, None);
    }
}

#[derive(Default)]
struct Collect {
    samples: Vec<Sample>,
    dropped: u64,
    ticks: u64,
}

impl Sink for Collect {
    fn record(&mut self, sample: &Sample, _: Option<&dyn std::fmt::Display>) {
        self.samples.push(sample.clone());
    }
    fn dropped(&mut self, _: Duration) {
        self.dropped += 1;
    }
    fn tick(&mut self, _: Duration) {
        self.ticks += 1;
    }
}

fn shape(model: LoadModel, threads: usize) -> Shape {
    Shape {
        model,
        threads,
        shard: Shard::WHOLE,
        grace: Duration::from_millis(300),
        tick: Duration::from_millis(50),
        segments: vec![Duration::ZERO],
        control: None,
    }
}

fn samples(r: &crest_engine::EngineReport<Collect>) -> usize {
    r.sinks.iter().map(|s| s.samples.len()).sum()
}

#[test]
fn closed_model_runs_exactly_the_counted_iterations() {
    let start = Instant::now();
    let stop = Stop::new(None, Some(37));
    let r = run(
        &shape(LoadModel::users(5), 2),
        start,
        &stop,
        Arc::new(Sleepy(Duration::from_millis(2))),
        |_| Collect::default(),
    )
    .unwrap();
    assert_eq!(r.iterations, 37);
    assert_eq!(samples(&r), 37);
    assert_eq!(r.cause, StopCause::Count);
    assert_eq!(r.sinks.len(), 2);
    assert_eq!(r.abandoned, 0);
}

#[test]
fn more_threads_than_users_uses_one_thread_per_user() {
    let stop = Stop::new(None, Some(4));
    let r = run(
        &shape(LoadModel::users(1), 8),
        Instant::now(),
        &stop,
        Arc::new(Sleepy(Duration::ZERO)),
        |_| Collect::default(),
    )
    .unwrap();
    assert_eq!(r.sinks.len(), 1);
    assert_eq!(samples(&r), 4);
}

#[test]
fn open_model_sends_exactly_the_scheduled_arrivals() {
    // 1000/s for 300 ms: arrivals 0..299 are due before the deadline. A thread that wakes a
    // millisecond or more behind its schedule once the deadline has passed ends by the clock
    // rather than send its backlog (284 of 300 on a busy machine), so the count is an upper
    // bound, and each arrival that was sent is on its slot.
    let start = Instant::now();
    let stop = Stop::new(Some(start + Duration::from_millis(300)), None);
    let model = LoadModel::rate(1000.0, 100);
    let r = run(
        &shape(model, 2),
        start,
        &stop,
        Arc::new(Sleepy(Duration::from_millis(1))),
        |_| Collect::default(),
    )
    .unwrap();
    assert!((1..=300).contains(&r.arrivals), "{} arrivals", r.arrivals);
    assert_eq!(r.dropped, 0);
    assert_eq!(samples(&r) as u64, r.arrivals);
    assert_eq!(r.cause, StopCause::Duration);
    // Intended starts follow the schedule exactly: each on its own slot, 1 ms apart, before
    // the deadline.
    let mut slots: Vec<u128> = Vec::new();
    for t in r.sinks.iter().flat_map(|s| s.samples.iter().map(|x| x.intended)) {
        let n = (t.as_micros() + 500) / 1000;
        assert!(
            t.abs_diff(Duration::from_millis(n as u64)) < Duration::from_micros(5) && n < 300,
            "an arrival intended at {t:?}"
        );
        slots.push(n);
    }
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len() as u64, r.arrivals, "one arrival a slot");
}

#[test]
fn open_model_drops_arrivals_beyond_the_cap_and_counts_them() {
    let start = Instant::now();
    let stop = Stop::new(Some(start + Duration::from_millis(500)), None);
    let model = LoadModel::rate(100.0, 2);
    let r = run(
        &shape(model, 2),
        start,
        &stop,
        Arc::new(Sleepy(Duration::from_millis(100))),
        |_| Collect::default(),
    )
    .unwrap();
    assert_eq!(r.arrivals, 50);
    assert_eq!(r.iterations + r.dropped, 50, "every arrival is sent or dropped");
    assert!(r.iterations <= 14, "2 in flight for 100 ms each: {}", r.iterations);
    assert_eq!(
        r.sinks.iter().map(|s| s.dropped).sum::<u64>(),
        r.dropped,
        "the sink saw each drop"
    );
}

/// Each iteration's answer has come when it is first polled, but is read only at its next
/// poll: it asks to be polled again (through the runtime, as a socket's readiness does).
struct Answered;

impl Workload for Answered {
    type User = ();

    fn new_user(&self, _: u64) {}

    async fn iterate<'a>(&'a self, _: &'a mut (), _ctx: Ctx<'a>) {
        tokio::task::yield_now().await;
    }
}

#[test]
fn a_full_cap_reads_the_answers_already_in_before_it_drops() {
    // 1,000,000/s: every arrival is due before the one in flight was polled again, so a cap of
    // 1 is always full when an arrival comes, with the answer that frees it already in.
    let stop = Stop::new(None, Some(200));
    let r = run(
        &shape(LoadModel::rate(1_000_000.0, 1), 1),
        Instant::now(),
        &stop,
        Arc::new(Answered),
        |_| Collect::default(),
    )
    .unwrap();
    assert_eq!(r.arrivals, 200);
    assert_eq!(r.dropped, 0, "a place whose answer had come was free");
    assert_eq!(r.iterations, 200);
}

/// Counts the users readied before the start; each iteration takes 1 ms and records whether
/// its user had been readied (as `bytes_sent`, 1 or 0) and whether it began before its slot
/// (as `bytes_received`).
#[derive(Default)]
struct Readied(std::sync::atomic::AtomicU64, bool);

impl Workload for Readied {
    type User = bool;

    fn new_user(&self, _: u64) -> bool {
        false
    }

    fn prepares(&self) -> bool {
        self.1
    }

    async fn prepare<'a>(&'a self, user: &'a mut bool) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *user = true;
    }

    async fn iterate<'a>(&'a self, user: &'a mut bool, ctx: Ctx<'a>) {
        let readied = std::mem::take(user);
        let early = Instant::now() < ctx.intended();
        tokio::time::sleep(Duration::from_millis(1)).await;
        let intended = ctx.intended();
        ctx.record(
            Sample {
                name: 0,
                segment: 0,
                user: 0,
                iteration: 0,
                intended: ctx.offset(intended),
                send_lag: Duration::ZERO,
                dns: None,
                connect: None,
                ttfb: None,
                total: intended.elapsed(),
                bytes_sent: u64::from(readied),
                bytes_received: u64::from(early),
                messages_sent: 0,
                messages_received: 0,
                status: Some(200),
                outcome: Outcome::Success,
            },
            None,
        );
    }
}

/// An open-model run of `count` arrivals at 10,000/s on one thread, whose start is `lead_in`
/// away: (users readied, the arrivals of its first 2 ms, and how many of those found a readied
/// user, the iterations that did). No iteration began before its slot. Ended by its count, not
/// by a deadline, so a thread held off its core sends every arrival late rather than drops them.
fn readied_run(lead_in: Duration, count: u64, prepares: bool) -> (u64, usize, usize, usize) {
    let start = Instant::now() + lead_in;
    let stop = Stop::new(None, Some(count));
    let workload = Arc::new(Readied(Default::default(), prepares));
    let r = run(
        &shape(LoadModel::rate(10_000.0, 1000), 1),
        start,
        &stop,
        Arc::clone(&workload),
        |_| Collect::default(),
    )
    .unwrap();
    let samples = &r.sinks[0].samples;
    assert_eq!(
        samples.iter().filter(|s| s.bytes_received == 1).count(),
        0,
        "an arrival left before its slot"
    );
    let early: Vec<_> = samples
        .iter()
        .filter(|s| s.intended < Duration::from_millis(2))
        .collect();
    (
        workload.0.load(std::sync::atomic::Ordering::Relaxed),
        early.len(),
        early.iter().filter(|s| s.bytes_sent == 1).count(),
        samples.iter().filter(|s| s.bytes_sent == 1).count(),
    )
}

#[test]
fn the_first_arrivals_of_an_open_run_find_users_readied_before_its_start() {
    let (readied, early, early_readied, used) = readied_run(Duration::from_millis(500), 200, true);
    assert!(early >= 19, "10,000/s for 2 ms: {early} arrivals");
    assert_eq!(readied, early as u64, "one user readied per arrival of the first 2 ms");
    assert_eq!(early_readied, early, "each of them found one");
    assert_eq!(used as u64, readied, "and no readied user was left unused");

    // Readied only ahead of a start still to come, by a workload that readies, and never more
    // than a count allows.
    assert_eq!(readied_run(Duration::ZERO, 200, true).0, 0);
    assert_eq!(readied_run(Duration::from_millis(500), 200, false).0, 0);
    assert_eq!(readied_run(Duration::from_millis(500), 5, true).0, 5);
}

#[test]
fn open_model_with_a_count_stops_after_n_arrivals() {
    let stop = Stop::new(None, Some(25));
    let model = LoadModel::rate(500.0, 10);
    let r = run(
        &shape(model, 2),
        Instant::now(),
        &stop,
        Arc::new(Sleepy(Duration::ZERO)),
        |_| Collect::default(),
    )
    .unwrap();
    assert_eq!(r.arrivals, 25);
    // An arrival meeting 5 in flight on its thread is dropped, as when the machine keeps a
    // thread off its core long enough for 5 to pile up: counted, not sent.
    assert_eq!(samples(&r) as u64 + r.dropped, 25);
}

/// 3 users on 2 threads running `workload` until a cancel after 200 ms.
fn three_users_cancelled<W: Workload>(workload: W) -> crest_engine::EngineReport<Collect> {
    let stop = Stop::new(None, None);
    let canceller = stop.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        canceller.cancel();
    });
    run(
        &shape(LoadModel::users(3), 2),
        Instant::now(),
        &stop,
        Arc::new(workload),
        |_| Collect::default(),
    )
    .unwrap()
}

#[test]
fn cancel_stops_an_unlimited_run_and_the_grace_period_bounds_the_drain() {
    let start = Instant::now();
    // Iterations take 10 s; the 300 ms grace period cuts them off.
    let r = three_users_cancelled(Sleepy(Duration::from_secs(10)));
    assert_eq!(r.cause, StopCause::Cancelled);
    assert_eq!(r.abandoned, 3);
    assert_eq!(samples(&r), 0);
    assert!(start.elapsed() < Duration::from_secs(3), "{:?}", start.elapsed());
}

/// Each iteration is one quick request, then a think time of `0`.
struct Thinker(Duration);

impl Workload for Thinker {
    type User = u64;

    fn new_user(&self, id: u64) -> u64 {
        id
    }

    async fn iterate<'a>(&'a self, user: &'a mut u64, ctx: Ctx<'a>) {
        Sleepy(Duration::ZERO).iterate(user, ctx).await;
        tokio::time::sleep(self.0).await;
    }
}

#[test]
fn iterations_cut_off_in_a_think_time_abandon_no_request() {
    // Every user's one request was answered; the grace period ends while they think.
    let r = three_users_cancelled(Thinker(Duration::from_secs(10)));
    assert_eq!(samples(&r), 3);
    assert_eq!(r.abandoned, 0, "no request was in flight at the end");
}

#[test]
fn sinks_are_ticked_while_idle() {
    let start = Instant::now();
    let stop = Stop::new(Some(start + Duration::from_millis(400)), None);
    let r = run(
        &shape(LoadModel::users(1), 1),
        start,
        &stop,
        Arc::new(Sleepy(Duration::from_secs(1))),
        |_| Collect::default(),
    )
    .unwrap();
    assert!(r.sinks[0].ticks >= 5, "ticks every 50 ms: {}", r.sinks[0].ticks);
}

#[test]
fn threads_by_loops_runs_each_users_iterations_then_completes() {
    // 5 users x 10 loops, like JMeter's thread groups: exactly 50, then the run is complete.
    let model = LoadModel::Closed {
        users: UsersProfile::constant(5),
        iterations: Some(10),
    };
    let r = run(
        &shape(model, 2),
        Instant::now(),
        &Stop::new(None, None),
        Arc::new(Sleepy(Duration::from_millis(1))),
        |_| Collect::default(),
    )
    .unwrap();
    assert_eq!(r.iterations, 50);
    assert_eq!(samples(&r), 50);
    assert_eq!(r.cause, StopCause::Completed);
}

#[test]
fn stepped_users_are_added_on_time_and_samples_carry_their_segment() {
    // 2 users for 300 ms, then 6: each step is a segment.
    let step = Duration::from_millis(300);
    let profile = UsersProfile {
        start: 2,
        stages: vec![
            UsersStage { duration: step, to: 2 },
            UsersStage {
                duration: Duration::ZERO,
                to: 6,
            },
            UsersStage { duration: step, to: 6 },
        ],
    };
    let mut sh = shape(
        LoadModel::Closed {
            users: profile,
            iterations: None,
        },
        2,
    );
    sh.segments = vec![Duration::ZERO, step];
    let start = Instant::now();
    let stop = Stop::new(Some(start + 2 * step), None);
    let r = run(&sh, start, &stop, Arc::new(Sleepy(Duration::from_millis(10))), |_| {
        Collect::default()
    })
    .unwrap();
    let all: Vec<&Sample> = r.sinks.iter().flat_map(|s| s.samples.iter()).collect();
    // Which users ran in each step, not how many iterations they fit in (that depends on how
    // busy the machine is): 2 users, then 6, each running 10 ms iterations for 300 ms.
    let users = |segment: u32| {
        let mut u: Vec<u64> = all.iter().filter(|s| s.segment == segment).map(|s| s.user).collect();
        u.sort_unstable();
        u.dedup();
        u.len()
    };
    assert_eq!(
        (users(0), users(1)),
        (2, 6),
        "2 users in the first step, 6 in the second"
    );
    assert!(
        all.iter().all(|s| (s.segment == 0) == (s.intended < step)),
        "segment follows the start time"
    );
}

#[test]
fn a_ramp_down_retires_users_after_their_current_iteration() {
    let profile = UsersProfile {
        start: 8,
        stages: vec![UsersStage {
            duration: Duration::from_millis(200),
            to: 0,
        }],
    };
    let start = Instant::now();
    let stop = Stop::new(Some(start + Duration::from_millis(600)), None);
    let r = run(
        &shape(
            LoadModel::Closed {
                users: profile,
                iterations: None,
            },
            2,
        ),
        start,
        &stop,
        Arc::new(Sleepy(Duration::from_millis(5))),
        |_| Collect::default(),
    )
    .unwrap();
    let late = r
        .sinks
        .iter()
        .flat_map(|s| s.samples.iter())
        .filter(|s| s.intended > Duration::from_millis(260))
        .count();
    assert_eq!(late, 0, "no user starts an iteration after the ramp reached 0");
    assert_eq!(r.abandoned, 0, "retired users finish what they started");
}

/// Counts users created and the most iterations in flight at once.
struct Counting {
    users: std::sync::atomic::AtomicU64,
    in_flight: std::sync::atomic::AtomicU64,
    peak: std::sync::atomic::AtomicU64,
}

impl Workload for Counting {
    type User = ();

    fn new_user(&self, _: u64) {
        self.users.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    async fn iterate<'a>(&'a self, _: &'a mut (), _ctx: Ctx<'a>) {
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.in_flight.fetch_add(1, SeqCst) + 1;
        self.peak.fetch_max(now, SeqCst);
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.in_flight.fetch_sub(1, SeqCst);
    }
}

#[test]
fn the_open_model_never_exceeds_its_cap_even_when_arrivals_come_in_bursts() {
    // 5,000/s with 1 ms timer ticks: several arrivals are due at each wake-up.
    let w = Arc::new(Counting {
        users: Default::default(),
        in_flight: Default::default(),
        peak: Default::default(),
    });
    let start = Instant::now();
    let stop = Stop::new(Some(start + Duration::from_millis(500)), None);
    let r = run(
        &shape(LoadModel::rate(5000.0, 6), 2),
        start,
        &stop,
        Arc::clone(&w),
        |_| Collect::default(),
    )
    .unwrap();
    use std::sync::atomic::Ordering::SeqCst;
    assert!(w.peak.load(SeqCst) <= 6, "in flight at once: {}", w.peak.load(SeqCst));
    assert!(w.users.load(SeqCst) <= 6, "users created: {}", w.users.load(SeqCst));
    assert!(r.dropped > 1000, "most arrivals dropped: {}", r.dropped);
}

/// Each user gives up after its third iteration.
#[derive(Default)]
struct Quitter {
    users: std::sync::atomic::AtomicU64,
    finished: std::sync::atomic::AtomicU64,
}

impl Workload for Quitter {
    type User = u64;

    fn new_user(&self, _: u64) -> u64 {
        self.users.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        0
    }

    async fn iterate<'a>(&'a self, done: &'a mut u64, _ctx: Ctx<'a>) {
        tokio::time::sleep(Duration::from_millis(1)).await;
        *done += 1;
    }

    async fn finish<'a>(&'a self, _: &'a mut u64, _ctx: Ctx<'a>) {
        self.finished.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn stopped(&self, done: &u64) -> bool {
        *done >= 3
    }
}

#[test]
fn a_stopped_user_runs_no_more_iterations_and_is_not_replaced() {
    use std::sync::atomic::Ordering::SeqCst;
    let w = Arc::new(Quitter::default());
    let start = Instant::now();
    let stop = Stop::new(Some(start + Duration::from_millis(400)), None);
    let r = run(&shape(LoadModel::users(4), 2), start, &stop, Arc::clone(&w), |_| {
        Collect::default()
    })
    .unwrap();
    assert_eq!(r.iterations, 12, "4 users x 3 iterations");
    assert_eq!(w.users.load(SeqCst), 4, "no replacement users");
    assert_eq!(w.finished.load(SeqCst), 4, "each stopped user ran finish");

    // In the open model a stopped user's state is dropped: later arrivals get fresh users.
    let w = Arc::new(Quitter::default());
    let start = Instant::now();
    let stop = Stop::new(None, Some(30));
    let r = run(
        &shape(LoadModel::rate(100.0, 1), 1),
        start,
        &stop,
        Arc::clone(&w),
        |_| Collect::default(),
    )
    .unwrap();
    // With one in flight at most, an arrival due while a slow wake-up (a loaded machine) keeps
    // the last iteration running is dropped (10 of 30 ran on a busy machine); every arrival is
    // one or the other, and however many ran, users were made only as stopped ones needed.
    assert_eq!(r.iterations + r.dropped, 30);
    assert!(r.iterations >= 1, "{} of 30 arrivals ran", r.iterations);
    assert_eq!(
        w.users.load(SeqCst),
        r.iterations.div_ceil(3),
        "one user per 3 iterations"
    );
}

/// `--workers 4 --worker-index I`: the four parts of an open-model run, each run on its own
/// with two threads, send between them exactly the arrivals of the whole schedule, each once,
/// at the whole schedule's times, a quarter each.
#[test]
fn the_shards_of_an_open_model_run_follow_the_whole_schedule_exactly() {
    let mut intended = Vec::new();
    for index in 0..4 {
        let start = Instant::now();
        let stop = Stop::new(Some(start + Duration::from_millis(300)), None);
        let shape = Shape {
            shard: Shard { index, count: 4 },
            ..shape(LoadModel::rate(1000.0, 100), 2)
        };
        let r = run(&shape, start, &stop, Arc::new(Sleepy(Duration::from_millis(1))), |_| {
            Collect::default()
        })
        .unwrap();
        assert_eq!((r.arrivals, r.dropped, samples(&r)), (75, 0, 75), "worker {index}");
        intended.extend(r.sinks.iter().flat_map(|s| s.samples.iter().map(|x| x.intended)));
    }
    intended.sort();
    assert_eq!(intended.len(), 300);
    for (n, t) in intended.iter().enumerate() {
        let want = Duration::from_millis(n as u64);
        assert!(
            t.abs_diff(want) < Duration::from_micros(5),
            "arrival {n} intended at {t:?}"
        );
    }
}

/// Threads x loops over workers: 10 users of 3 iterations split 3, 3, 2 and 2 over four workers
/// (the remainder spread, none lost), and every user id used once across them, which is what
/// keeps a `unique` feeder's rows apart.
#[test]
fn the_shards_of_a_closed_run_split_its_users_and_keep_their_ids_apart() {
    let model = LoadModel::Closed {
        users: UsersProfile::constant(10),
        iterations: Some(3),
    };
    let mut users = Vec::new();
    let mut per_worker = Vec::new();
    for index in 0..4 {
        let shape = Shape {
            shard: Shard { index, count: 4 },
            ..shape(model.clone(), 2)
        };
        let r = run(
            &shape,
            Instant::now(),
            &Stop::new(None, None),
            Arc::new(Sleepy(Duration::from_millis(1))),
            |_| Collect::default(),
        )
        .unwrap();
        assert_eq!(r.cause, StopCause::Completed);
        per_worker.push(r.iterations);
        let mut mine: Vec<u64> = r.sinks.iter().flat_map(|s| s.samples.iter().map(|x| x.user)).collect();
        mine.sort();
        mine.dedup();
        users.extend(mine);
    }
    assert_eq!(per_worker, [9, 9, 6, 6]);
    users.sort();
    assert_eq!(users, (0..10).collect::<Vec<u64>>());
}

/// Issue 33: with `OnCap::Queue` an arrival at the cap waits for a place instead of being
/// dropped: every arrival of a count-limited run is sent, in the order of their slots, each
/// timed from its slot, so the wait grows as the queue does.
#[test]
fn open_model_queues_arrivals_at_the_cap_in_order_when_asked() {
    let start = Instant::now();
    let stop = Stop::new(None, Some(20));
    let model = LoadModel::Open {
        rate: RateProfile::constant(100.0),
        max_in_flight: 2,
        on_cap: OnCap::Queue,
    };
    let r = run(
        &shape(model, 1),
        start,
        &stop,
        Arc::new(Sleepy(Duration::from_millis(100))),
        |_| Collect::default(),
    )
    .unwrap();
    assert_eq!((r.arrivals, r.dropped, r.iterations), (20, 0, 20));
    // Two places free every 100 ms while ten arrive: all but the first two waited.
    assert_eq!(r.queued, 18);
    let mut sent: Vec<(Duration, Duration)> = r.sinks[0]
        .samples
        .iter()
        .map(|s| (s.intended + s.send_lag, s.intended))
        .collect();
    sent.sort_unstable();
    assert!(
        sent.windows(2).all(|w| w[0].1 < w[1].1),
        "sent out of the order of their slots: {sent:?}"
    );
    let lag = |k: usize| sent[k].0 - sent[k].1;
    // The 20th is due at 200 ms and sent once 18 have taken 100 ms two at a time: 700 ms late
    // at least, however fast the machine.
    assert!(lag(19) >= Duration::from_millis(650) && lag(19) > lag(2), "{sent:?}");
}
