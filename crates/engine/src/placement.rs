//! Moves an open-model engine thread off a core it shares, and reads how long an engine thread
//! waited for a core ([`core_wait`]).
//!
//! At a high rate the pacer never sleeps: the next slot is always closer than the timer's
//! wake-up margin, so the thread spins from slot to slot. The kernel places a thread when it
//! wakes, and one that never sleeps stays where it was spawned. When that core also holds the
//! target (a server on the same machine, idle while the thread was spawned), the two share it
//! once the load begins while another core idles, until the kernel's periodic balancing moves
//! the thread: 50 to 110 ms at 50,000 arrivals/s on two cores (bench/README.md, "Pacing").
//!
//! So the thread leaves its core ([`Placement::leave_core`]), and stays off the cores it left:
//! otherwise the kernel pulls it back. While one of the kernel's own threads preempts it, the
//! target's core, idle for want of requests, takes the waiting thread, and the two share again.
//! Nor does it go back to one later: a core it left held something busy, the target most
//! likely. Once it has left every core it was given but the one it is on (on two cores, after
//! one move), it stays there and stops looking, and the kernel moves the other threads around
//! it. A thread given no more cores than the run has
//! engine threads (one pinned by the user, say) never moves: no core would be left idle for
//! it to find.
//!
//! Whether the thread shares its core is read from the kernel's account of it
//! (`/proc/thread-self/schedstat`) at the first arrival at least a [`WINDOW`] (at first a
//! [`FIRST_WINDOW`], below) after the last look. A window counts as shared when the thread:
//!
//! - waited for a core more than a [`SHARED`] part of it;
//! - never slept in it (its pacer never waited on the timer): a thread that sleeps is placed
//!   again by the kernel each time it wakes;
//! - was put back on a core at least twice: one long preemption (the kernel's own threads take
//!   a core for 1 to 4 ms now and then) is one wait, and moving would not help there.
//!
//! A move takes [`STREAK`] shared windows in a row. Where every core is busy, a move finds no
//! better core, and no run of [`SETTLED`] clean windows follows it; each such move doubles the
//! streak the next needs, up to [`MAX_STREAK`].
//!
//! The first [`STREAK`] windows in which the thread sends without sleeping are
//! [`FIRST_WINDOW`] long, and count as shared only if the thread was also put back on its core
//! [`PING_PONG`] times or more in them. By its wait alone, a window that short cannot tell a
//! shared core from one preemption; many short turns are another thread woken on the core
//! again and again, which is what a target there does as each request reaches it. That is the
//! sharing seen at a run's start: the thread readies its users before the start (opening their
//! connections), sleeps until the first arrival, and the kernel wakes it on the core it slept
//! on, the target's as often as not. There it ran about half the time, and the run's first
//! second had a send lag p99.9 of 0.7 to 1.7 ms, until two 2 ms windows moved it, 4 ms in; two
//! short ones move it about 1 ms in.

use rustix::thread::{sched_getaffinity, sched_getcpu, sched_setaffinity, CpuSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

/// The shortest span between two looks, once [`STREAK`] windows have passed in which the thread
/// did not sleep.
const WINDOW: Duration = Duration::from_millis(2);
/// The shortest span between two looks before then.
const FIRST_WINDOW: Duration = Duration::from_micros(500);
/// Times put back on its core in a [`FIRST_WINDOW`] for it to count as shared.
const PING_PONG: u64 = 10;
/// The part of a window spent waiting for the core above which the window counts as shared.
const SHARED: f64 = 0.2;
/// Shared windows in a row before the first move.
const STREAK: u32 = 2;
/// The most shared windows in a row a move ever needs, however many found no better core:
/// about a second.
const MAX_STREAK: u32 = 512;
/// Clean windows in a row after which the last move counts as having found a better core.
const SETTLED: u32 = 25;
/// The sleep between leaving a core and being placed; the kernel's timer slack makes it about
/// 50 µs.
const NAP: Duration = Duration::from_micros(1);

/// One engine thread's look at its own waiting time. Made on the thread it watches.
pub(crate) struct Placement {
    /// This thread's `schedstat`; None when the thread is not to move, or the kernel keeps no
    /// account (the look is then skipped).
    stat: Option<File>,
    since: Instant,
    /// The account up to `since`.
    last: Account,
    /// Whether the thread slept since `since`.
    slept: bool,
    /// Windows passed without a sleep, up to [`STREAK`]: windows are [`WINDOW`] long from then.
    sent: u32,
    streak: u32,
    /// Clean windows in a row.
    clean: u32,
    /// The shared windows in a row the next move needs.
    need: u32,
    /// The cores the thread was given.
    given: CpuSet,
    /// The cores it left.
    left: CpuSet,
}

impl Placement {
    /// Starts watching the calling thread, one of a run's `threads` engine threads.
    pub(crate) fn new(threads: usize) -> Self {
        let given = affinity().unwrap_or_default();
        let stat = (given.count() as usize > threads)
            .then(|| File::open("/proc/thread-self/schedstat").ok())
            .flatten();
        let mut p = Placement {
            stat,
            since: Instant::now(),
            last: Account::default(),
            slept: false,
            sent: 0,
            streak: 0,
            clean: 0,
            need: STREAK,
            given,
            left: CpuSet::new(),
        };
        p.take_account();
        p
    }

    /// Looks at the account once a window has passed since the last look, and moves the thread
    /// after a streak of shared windows (short ones while it has only begun sending). `now` is
    /// the caller's clock reading, so a look between windows costs nothing; `slept` says
    /// whether the thread slept since the caller's last look.
    pub(crate) fn look(&mut self, now: Instant, slept: bool) {
        self.slept |= slept;
        let span = now.saturating_duration_since(self.since);
        let short = self.sent < STREAK;
        if span < (if short { FIRST_WINDOW } else { WINDOW }) || self.stat.is_none() {
            return;
        }
        let before = self.last;
        self.take_account();
        let Some(window) = self.stat.as_ref().map(|_| self.last.since(before)) else {
            return;
        };
        self.since = now;
        let slept = std::mem::take(&mut self.slept);
        if !slept {
            self.sent = (self.sent + 1).min(STREAK);
        }
        if self.judge(span, window, slept, short) {
            self.leave_core();
            self.since = Instant::now();
            self.take_account();
        }
    }

    /// Whether a window of `span` with this account, in which the thread slept or not, ends a
    /// streak long enough to move; a `short` one (a [`FIRST_WINDOW`]) counts only as a
    /// ping-pong.
    fn judge(&mut self, span: Duration, window: Account, slept: bool, short: bool) -> bool {
        let turns = if short { PING_PONG } else { 2 };
        let shared = !slept && window.waited_ns as f64 > SHARED * span.as_nanos() as f64 && window.put_on >= turns;
        if shared {
            self.streak += 1;
            self.clean = 0;
        } else {
            self.streak = 0;
            self.clean = self.clean.saturating_add(1);
            if self.clean >= SETTLED {
                self.need = STREAK;
            }
        }
        if self.streak < self.need {
            return false;
        }
        self.streak = 0;
        self.need = (self.need * 2).min(MAX_STREAK);
        true
    }

    /// Moves the thread off its core to one of those it was given and has not left, and
    /// returns (from, to); None when none is left to go to (the look then stops) or the
    /// kernel refused.
    fn leave_core(&mut self) -> Option<(usize, usize)> {
        let from = sched_getcpu();
        let mut to = self.given;
        to.unset(from);
        (0..CpuSet::MAX_CPU)
            .filter(|&c| self.left.is_set(c))
            .for_each(|c| to.unset(c));
        if !self.given.is_set(from) || to.count() == 0 {
            self.stat = None;
            return None;
        }
        self.left.set(from);
        // The kernel moves the thread at once, to any of the cores allowed; a blocking sleep,
        // on purpose, then has the kernel place it as it wakes, on one of them that is idle if
        // there is one. The arrivals this holds up were late on a shared core anyway.
        sched_setaffinity(None, &to).ok()?;
        std::thread::sleep(NAP);
        Some((from, sched_getcpu()))
    }

    /// Reads the thread's account into `last`, or stops looking if it cannot be read.
    fn take_account(&mut self) {
        match self.stat.as_ref().and_then(read) {
            Some(a) => self.last = a,
            None => self.stat = None,
        }
    }
}

/// The calling thread's affinity, for [`restore`] in the threads it starts: a thread started
/// by an engine thread after a move would otherwise keep to the engine thread's core.
pub(crate) fn affinity() -> Option<CpuSet> {
    sched_getaffinity(None).ok()
}

/// Gives the calling thread the affinity read by [`affinity`].
pub(crate) fn restore(given: Option<CpuSet>) {
    if let Some(set) = given {
        // Failing leaves the thread on the cores it inherited, which only costs it speed.
        let _ = sched_setaffinity(None, &set);
    }
}

/// How long the calling thread has been runnable but waiting for a core since it began, by the
/// kernel's account; `None` where the kernel keeps none. Read at the start and the end of a
/// run's sending, it tells time other threads held the engine's core (other processes', the
/// kernel's, crest's own) from time the engine spent working, when arrivals left late. A
/// kernel that keeps no account writes zeros, and a thread that runs was put on a core at
/// least once, so no count of that means no account, not a wait of nothing.
pub(crate) fn core_wait() -> Option<Duration> {
    let stat = File::open("/proc/thread-self/schedstat").ok()?;
    read(&stat)
        .filter(|a| a.put_on > 0)
        .map(|a| Duration::from_nanos(a.waited_ns))
}

/// What the kernel counted of a thread: since it began, or over a window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Account {
    /// Time runnable but waiting for a core.
    waited_ns: u64,
    /// Times put on a core.
    put_on: u64,
}

impl Account {
    fn since(self, earlier: Account) -> Account {
        Account {
            waited_ns: self.waited_ns.saturating_sub(earlier.waited_ns),
            put_on: self.put_on.saturating_sub(earlier.put_on),
        }
    }
}

/// The account in a thread's `schedstat`: run time and wait time in nanoseconds, then the
/// times put on a core. The run time of a thread on a core is brought up to date only at the
/// kernel's tick (4 ms here), too coarse for a window, so it is not read. Read at offset 0, so
/// one open file serves every look.
fn read(stat: &File) -> Option<Account> {
    let mut buf = [0u8; 96];
    let n = stat.read_at(&mut buf, 0).ok()?;
    let mut fields = std::str::from_utf8(&buf[..n]).ok()?.split_ascii_whitespace().skip(1);
    let mut next = || fields.next()?.parse().ok();
    Some(Account {
        waited_ns: next()?,
        put_on: next()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only(cores: &[usize]) -> CpuSet {
        let mut set = CpuSet::new();
        cores.iter().for_each(|&c| set.set(c));
        set
    }

    /// The cores this test may use.
    fn cores() -> Vec<usize> {
        let allowed = affinity().unwrap();
        (0..CpuSet::MAX_CPU).filter(|&c| allowed.is_set(c)).collect()
    }

    /// The first two cores this test may use, if it may use two.
    fn two_cores() -> Option<(usize, usize)> {
        match cores()[..] {
            [a, b, ..] => Some((a, b)),
            _ => None,
        }
    }

    /// Judged on simulated windows: a streak of shared windows moves; one long preemption, a
    /// window the thread slept in, a streak broken by a clean window, or waiting too little
    /// does not; each move doubles the next streak, until a run of clean windows shows the
    /// last move found a better core.
    #[test]
    fn only_a_streak_of_shared_windows_moves() {
        let w = WINDOW;
        let waited = |d: Duration, put_on| Account {
            waited_ns: d.as_nanos() as u64,
            put_on,
        };
        let mut p = Placement::new(0);
        let shared = |p: &mut Placement| p.judge(w, waited(w / 2, 40), false, false);
        let clean = |p: &mut Placement, n| (0..n).any(|_| p.judge(w, waited(Duration::ZERO, 1), false, false));
        // One preemption of 3.6 ms twice in a row, seen in windows that long: one wait each.
        let long = Duration::from_micros(3_700);
        let preempted = waited(Duration::from_micros(3_600), 1);
        assert!(!p.judge(long, preempted, false, false));
        assert!(!p.judge(long, preempted, false, false));
        // Waiting half of each window, but having slept in it: the kernel places a thread that
        // sleeps each time it wakes.
        assert!(!p.judge(w, waited(w / 2, 40), true, false));
        assert!(!p.judge(w, waited(w / 2, 40), true, false));
        // Shared, then clean, then shared: no streak.
        assert!(!shared(&mut p));
        assert!(
            !p.judge(w, waited(w / 10, 40), false, false),
            "a tenth of a window waiting is not shared"
        );
        assert!(!shared(&mut p));
        assert!(!clean(&mut p, 1));
        // Two in a row move; the next move takes four, then eight.
        assert!(!shared(&mut p));
        assert!(shared(&mut p));
        assert!(!(0..3).any(|_| shared(&mut p)));
        assert!(shared(&mut p));
        assert!(!(0..7).any(|_| shared(&mut p)));
        assert!(shared(&mut p));
        for _ in 0..10 {
            while !shared(&mut p) {}
        }
        assert_eq!(p.need, MAX_STREAK);
        // Clean windows on either side of a shared one do not add up to a settled move.
        assert!(!clean(&mut p, SETTLED - 1));
        assert!(!shared(&mut p));
        assert!(!clean(&mut p, 1));
        assert!(!shared(&mut p));
        assert!(
            !shared(&mut p),
            "the need was reset by clean windows a shared one split"
        );
        // A run of them after a move makes the next quick again.
        assert!(!clean(&mut p, SETTLED));
        assert!(!shared(&mut p));
        assert!(shared(&mut p));
    }

    /// The first windows of sending are short and count as shared only as a ping-pong (many
    /// turns on the core, as a target woken by each request gives): two such move; fewer turns,
    /// however long the wait, or a window slept in, do not. After [`STREAK`] windows without a
    /// sleep, windows are [`WINDOW`] long, judged as before.
    #[test]
    fn the_first_windows_of_sending_are_short_and_judged_as_a_ping_pong() {
        let w = FIRST_WINDOW;
        let waited = |put_on| Account {
            waited_ns: (w / 2).as_nanos() as u64,
            put_on,
        };
        let mut p = Placement::new(0);
        assert!(!p.judge(w, waited(PING_PONG - 1), false, true));
        assert!(!p.judge(w, waited(PING_PONG - 1), false, true));
        assert!(!p.judge(w, waited(PING_PONG), true, true));
        assert!(!p.judge(w, waited(PING_PONG), false, true));
        assert!(p.judge(w, waited(PING_PONG), false, true));

        // The window lengths, through `look` on a clock of the test's own: the account read is
        // this thread's, a few microseconds of it, far from shared (a look that moved the thread
        // would restart the window at the real time, which the checks below would catch).
        std::thread::spawn(move || {
            let mut p = Placement::new(0);
            assert!(p.stat.is_some(), "this thread's account cannot be read");
            let mut at = p.since;
            let mut looked = |p: &mut Placement, after: Duration, slept: bool| {
                p.look(at + after, slept);
                let judged = p.since == at + after;
                if judged {
                    at += after;
                }
                judged
            };
            assert!(!looked(&mut p, w / 2, false), "judged before a first window had passed");
            // The lead-in, slept through: judged, and still short windows after it.
            assert!(looked(&mut p, Duration::from_millis(50), true));
            assert!(looked(&mut p, w, false));
            assert!(looked(&mut p, w, false));
            assert_eq!(p.sent, STREAK);
            assert!(!looked(&mut p, w, false), "a short window after two of sending");
            assert!(looked(&mut p, WINDOW, false));
        })
        .join()
        .unwrap();
    }

    /// Leaving is the kernel's to carry out, whatever else runs: a thread given two cores
    /// leaves the one it is on for the other and keeps to it; with no core left to go to, it
    /// stays and stops looking. A thread given no more cores than the run has threads does not
    /// look at all.
    #[test]
    fn a_thread_leaves_its_core_for_another_and_keeps_to_it() {
        let Some((a, b)) = two_cores() else {
            // One core: nowhere to move.
            return;
        };
        let after = std::thread::spawn(move || {
            sched_setaffinity(None, &only(&[a, b])).unwrap();
            let mut p = Placement::new(1);
            assert!(
                p.stat.is_some(),
                "a thread given two cores for one thread does not look"
            );
            let mut seen = Vec::new();
            for _ in 0..2 {
                let moved = p.leave_core();
                let set = affinity().unwrap();
                seen.push((
                    moved,
                    (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect::<Vec<_>>(),
                ));
            }
            assert!(p.stat.is_none(), "still looking with nowhere to go");
            let alone = std::thread::spawn(move || {
                sched_setaffinity(None, &only(&[a])).unwrap();
                Placement::new(1).stat.is_none()
            });
            let two_threads = Placement::new(2).stat.is_none();
            (seen, alone.join().unwrap(), two_threads)
        })
        .join()
        .unwrap();
        let (seen, alone, two_threads) = after;
        let first = seen[0].0.map_or(a, |m| m.0);
        let other = if first == a { b } else { a };
        assert_eq!(
            seen,
            [(Some((first, other)), vec![other]), (None, vec![other])],
            "left for the other core and kept to it, then stayed"
        );
        assert!(alone, "a thread given one core looks");
        assert!(two_threads, "a thread of two given two cores looks");
    }

    /// The account read from the kernel: a thread spinning on one core with another spinning
    /// thread (both pinned there) has waited and been put back on its core by the time 20 ms
    /// of waiting could have passed, however busy the machine (more load only adds to it).
    #[test]
    fn a_thread_sharing_its_core_is_seen_waiting() {
        let core = cores()[0];
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let other = {
            let done = done.clone();
            std::thread::spawn(move || {
                sched_setaffinity(None, &only(&[core])).unwrap();
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        let watched = std::thread::spawn(move || {
            sched_setaffinity(None, &only(&[core])).unwrap();
            let stat = File::open("/proc/thread-self/schedstat").expect("no schedstat");
            let first = read(&stat).unwrap();
            let mut last = first;
            // Ended by what the kernel counted, not by a deadline: the other thread must run
            // before this one is put back on the core twice.
            while last.since(first).put_on < 2 {
                std::hint::spin_loop();
                last = read(&stat).unwrap();
            }
            last.since(first)
        });
        let result = watched.join();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        other.join().unwrap();
        let window = result.unwrap();
        assert!(
            window.waited_ns > 0,
            "put back on its core twice without waiting: {window:?}"
        );
    }
}
