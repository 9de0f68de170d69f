//! Moves an open-model engine thread off a core it shares.
//!
//! At a high rate the pacer never sleeps: the next slot is always closer than the timer's
//! wake-up margin, so the thread spins from slot to slot. The kernel places a thread when it
//! wakes, and one that never sleeps stays where it was spawned. When that core also holds the
//! target (a server on the same machine, idle while the thread was spawned), the two share it
//! once the load begins while another core idles: at 50,000 arrivals/s on two cores, the
//! thread got half of its core for 50 to 110 ms and fell 30 to 110 ms behind, until the
//! kernel's periodic balancing moved it.
//!
//! A sleep alone does not end it: while the thread sleeps it sends nothing, the server runs
//! out of work, and the thread wakes on a core that is idle again, its own. So the thread
//! leaves its core: it takes that core out of its own affinity and sleeps briefly, so that the
//! kernel places it on waking (on an idle core, if one is left). It stays off the cores it
//! left: otherwise the kernel pulls it back (while one of the kernel's own threads preempts
//! it, the target's core, idle for want of requests, takes the waiting thread), and the two
//! share again. Once every core it was given has been left, it starts over from them. A
//! thread given only one core (pinned by the user) stays where it is.
//!
//! Whether the thread shares its core is read from the kernel's account of it
//! (`/proc/thread-self/schedstat`: time spent runnable but waiting for a core, and how many
//! times it was put on one), once per [`WINDOW`]. A window counts as shared when the thread
//! waited more than a [`SHARED`] part of it and was put back on its core at least twice: one
//! long preemption (the kernel's own threads take a core for 1 to 4 ms now and then) is one
//! wait, and moving would not help there. A move takes [`STREAK`] shared windows in a row.
//! Where every core is busy, a move finds no better core, and no run of [`SETTLED`] clean
//! windows follows it; each such move doubles the streak the next needs, up to
//! [`MAX_STREAK`].

use rustix::thread::{sched_getaffinity, sched_getcpu, sched_setaffinity, CpuSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

/// How often the thread looks at its waiting time.
const WINDOW: Duration = Duration::from_millis(2);
/// The part of a window spent waiting for the core above which the window counts as shared.
const SHARED: f64 = 0.2;
/// Shared windows in a row before the first move.
const STREAK: u32 = 2;
/// The most shared windows in a row a move ever needs, however many found no better core:
/// about a second.
const MAX_STREAK: u32 = 512;
/// Clean windows in a row after which the last move counts as having found a better core.
const SETTLED: u32 = 25;
/// The sleep between leaving a core and being placed: any sleep is a wake-up, and the kernel's
/// timer slack makes this one about 50 µs.
const NAP: Duration = Duration::from_micros(1);

/// One engine thread's look at its own waiting time. Made on the thread it watches.
pub(crate) struct Placement {
    /// This thread's `schedstat`; None where the kernel has none (the look is then skipped).
    stat: Option<File>,
    since: Instant,
    /// The account up to `since`.
    last: Account,
    streak: u32,
    /// Clean windows in a row.
    clean: u32,
    /// The shared windows in a row the next move needs.
    need: u32,
    /// The affinity the thread was given, read at its first move.
    given: Option<CpuSet>,
    /// The cores it left since it last started over.
    left: CpuSet,
    /// The moves made: (from, to) cores.
    moves: Vec<(usize, usize)>,
}

impl Placement {
    /// Starts watching the calling thread.
    pub(crate) fn new() -> Self {
        let stat = File::open("/proc/thread-self/schedstat").ok();
        let mut p = Placement {
            stat,
            since: Instant::now(),
            last: Account::default(),
            streak: 0,
            clean: 0,
            need: STREAK,
            given: None,
            left: CpuSet::new(),
            moves: Vec::new(),
        };
        p.last = p.read().unwrap_or_default();
        p
    }

    /// Looks at the waiting time once a window has passed since the last look, and moves the
    /// thread after a streak of shared windows. `now` is the caller's clock reading, so a look
    /// between windows costs nothing.
    pub(crate) fn look(&mut self, now: Instant) {
        let span = now.saturating_duration_since(self.since);
        if span < WINDOW || self.stat.is_none() {
            return;
        }
        let Some(now_account) = self.read() else {
            self.stat = None;
            return;
        };
        let move_now = self.judge(span, now_account.since(self.last));
        self.last = now_account;
        self.since = now;
        if move_now {
            if let Some(m) = self.leave_core() {
                self.moves.push(m);
            }
            self.since = Instant::now();
            self.last = self.read().unwrap_or(self.last);
        }
    }

    /// Whether a window of `span` with this account ends a streak long enough to move.
    fn judge(&mut self, span: Duration, window: Account) -> bool {
        let share = window.waited_ns as f64 / span.as_nanos().max(1) as f64;
        let shared = share > SHARED && window.put_on >= 2;
        if shared {
            self.streak += 1;
            self.clean = 0;
        } else {
            self.streak = 0;
            self.clean += 1;
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
    /// returns (from, to); None when it was given no other core.
    fn leave_core(&mut self) -> Option<(usize, usize)> {
        let from = sched_getcpu();
        let given = match self.given {
            Some(g) => g,
            None => *self.given.insert(sched_getaffinity(None).ok()?),
        };
        if !given.is_set(from) || given.count() < 2 {
            return None;
        }
        self.left.set(from);
        let mut to = given;
        (0..CpuSet::MAX_CPU)
            .filter(|&c| self.left.is_set(c))
            .for_each(|c| to.unset(c));
        if to.count() == 0 {
            // Every core given has been left: start over, leaving only this one.
            self.left = CpuSet::new();
            self.left.set(from);
            to = given;
            to.unset(from);
        }
        sched_setaffinity(None, &to).ok()?;
        // A blocking sleep on purpose: the kernel places a thread as it wakes, on an idle core
        // of those allowed if there is one. The arrivals this holds up were late on a shared
        // core.
        std::thread::sleep(NAP);
        Some((from, sched_getcpu()))
    }

    /// The thread's account so far: `schedstat` holds its run time, its time spent runnable
    /// but waiting (both in nanoseconds), and how many times it was put on a core.
    fn read(&self) -> Option<Account> {
        let mut buf = [0u8; 96];
        let n = self.stat.as_ref()?.read_at(&mut buf, 0).ok()?;
        let mut fields = std::str::from_utf8(&buf[..n]).ok()?.split_ascii_whitespace().skip(1);
        Some(Account {
            waited_ns: fields.next()?.parse().ok()?,
            put_on: fields.next()?.parse().ok()?,
        })
    }
}

/// What the kernel counted of a thread: since it began, or over a window.
#[derive(Clone, Copy, Debug, Default)]
struct Account {
    waited_ns: u64,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Judged on simulated windows: a streak of shared windows moves; one long preemption, a
    /// streak broken by a clean window, or waiting too little does not; each move doubles the
    /// next streak, until a run of clean windows shows the last move found a better core.
    #[test]
    fn only_a_streak_of_shared_windows_moves() {
        let w = WINDOW;
        let part = |d: u32| (WINDOW / d).as_nanos() as u64;
        let acc = |waited_ns, put_on| Account { waited_ns, put_on };
        let mut p = Placement::new();
        let shared = |p: &mut Placement| p.judge(w, acc(part(2), 40));
        // One preemption of 3.6 ms twice in a row, seen in windows that long: one wait each.
        let long = Duration::from_micros(3_700);
        assert!(!p.judge(long, acc(3_600_000, 1)));
        assert!(!p.judge(long, acc(3_600_000, 1)));
        // Shared, then clean, then shared: no streak.
        assert!(!shared(&mut p));
        assert!(
            !p.judge(w, acc(part(10), 40)),
            "a tenth of a window waiting is not shared"
        );
        assert!(!shared(&mut p));
        assert!(!p.judge(w, acc(0, 0)));
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
        // A run of clean windows after a move (it found a better core) makes the next quick
        // again; one clean window short of it does not.
        let clean = |p: &mut Placement, n| (0..n).any(|_| p.judge(w, acc(0, 0)));
        assert!(!clean(&mut p, SETTLED - 1));
        assert!(!shared(&mut p));
        assert!(!shared(&mut p), "the need was reset by too few clean windows");
        assert!(!clean(&mut p, SETTLED));
        assert!(!shared(&mut p));
        assert!(shared(&mut p));
    }

    /// A thread allowed two cores, but running on one where a busy server-like thread (pinned
    /// there, waking every 50 µs) takes turns with it, reads the kernel's account of itself,
    /// finds a streak of shared windows, and moves to the other core, which it then keeps to.
    /// Leaving that one too, it starts over: back to the first. More load on the machine only
    /// adds to its waiting. The kernel's own balancing may move it first, needing no move of
    /// ours; that attempt is then made again.
    #[test]
    fn a_thread_sharing_its_core_moves_off_it() {
        let affinity = || {
            let set = sched_getaffinity(None).unwrap();
            (0..CpuSet::MAX_CPU)
                .filter(|&c| set.is_set(c))
                .map(Some)
                .collect::<Vec<_>>()
        };
        let allowed = sched_getaffinity(None).unwrap();
        let cores: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&c| allowed.is_set(c)).take(2).collect();
        let [a, b] = cores[..] else {
            // One core: nowhere to move, and the engine does not try.
            return;
        };
        let only = |cores: &[usize]| {
            let mut set = CpuSet::new();
            cores.iter().for_each(|&c| set.set(c));
            set
        };
        for _attempt in 0..5 {
            let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let server = {
                let (done, on_a) = (done.clone(), only(&[a]));
                std::thread::spawn(move || {
                    sched_setaffinity(None, &on_a).unwrap();
                    while !done.load(std::sync::atomic::Ordering::Relaxed) {
                        let busy = Instant::now() + Duration::from_micros(100);
                        while Instant::now() < busy {
                            std::hint::spin_loop();
                        }
                        std::thread::sleep(Duration::from_micros(50));
                    }
                })
            };
            let (on_a, on_both) = (only(&[a]), only(&[a, b]));
            let watched = std::thread::spawn(move || {
                sched_setaffinity(None, &on_a).unwrap();
                let mut p = Placement::new();
                assert!(p.stat.is_some(), "no /proc/thread-self/schedstat");
                // Allowed both once running on `a`: a running thread is not moved by a wider
                // affinity, only by the kernel's balancing or by leaving.
                sched_setaffinity(None, &on_both).unwrap();
                let end = Instant::now() + Duration::from_secs(1);
                let mut moved_by_kernel = false;
                while Instant::now() < end && p.moves.is_empty() {
                    if sched_getcpu() != a {
                        moved_by_kernel = true;
                        break;
                    }
                    p.look(Instant::now());
                }
                if moved_by_kernel || p.moves.is_empty() {
                    return (p.moves, moved_by_kernel, Vec::new());
                }
                let kept_to = affinity();
                let back = p.leave_core();
                (p.moves, false, vec![kept_to, vec![back.map(|m| m.1)], affinity()])
            });
            let (moves, moved_by_kernel, after) = watched.join().unwrap();
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            server.join().unwrap();
            if moved_by_kernel {
                continue;
            }
            assert_eq!(
                moves,
                [(a, b)],
                "a thread sharing its core for a second did not leave it"
            );
            assert_eq!(
                after,
                [vec![Some(b)], vec![Some(a)], vec![Some(a)]],
                "kept to the core it moved to, then started over"
            );
            return;
        }
        panic!("the kernel moved the thread first in every attempt");
    }
}
