//! The stop rule, shared by every thread.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// Why sending stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopCause {
    /// Still running.
    Running,
    /// The configured duration elapsed.
    Duration,
    /// The configured number of iterations was started.
    Count,
    /// Stopped from outside (a signal or a stop condition).
    Cancelled,
    /// Every user finished its iterations.
    Completed,
}

impl StopCause {
    fn from_u8(v: u8) -> Self {
        match v {
            1 => StopCause::Duration,
            2 => StopCause::Count,
            3 => StopCause::Cancelled,
            4 => StopCause::Completed,
            _ => StopCause::Running,
        }
    }
}

/// Decides whether another iteration may start. Cheap to clone; all clones share state.
#[derive(Clone, Debug)]
pub struct Stop {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    deadline: Option<Instant>,
    /// Iterations that may still start; `u64::MAX` means unlimited.
    remaining: AtomicU64,
    cause: AtomicU8,
    token: CancellationToken,
    /// Fired by a second signal: stop waiting for requests in flight.
    hard: CancellationToken,
}

impl Stop {
    /// A stop rule with an optional deadline and an optional number of iterations.
    pub fn new(deadline: Option<Instant>, count: Option<u64>) -> Self {
        Stop {
            inner: Arc::new(Inner {
                deadline,
                remaining: AtomicU64::new(count.unwrap_or(u64::MAX)),
                cause: AtomicU8::new(0),
                token: CancellationToken::new(),
                hard: CancellationToken::new(),
            }),
        }
    }

    /// Stops sending now (Ctrl-C, SIGTERM, or a stop condition).
    pub fn cancel(&self) {
        self.set_cause(StopCause::Cancelled);
        self.inner.token.cancel();
    }

    /// Stops sending and stops waiting for requests in flight (a second Ctrl-C).
    pub fn force(&self) {
        self.cancel();
        self.inner.hard.cancel();
    }

    /// Resolves when the run is forced to end without waiting for requests in flight.
    pub async fn forced(&self) {
        self.inner.hard.cancelled().await
    }

    /// Why sending stopped, or `Running`.
    pub fn cause(&self) -> StopCause {
        StopCause::from_u8(self.inner.cause.load(Ordering::Acquire))
    }

    /// Records that every user finished its iterations, unless something stopped the run first.
    pub(crate) fn complete(&self) {
        self.set_cause(StopCause::Completed);
    }

    fn set_cause(&self, cause: StopCause) {
        // The first cause wins.
        let _ = self
            .inner
            .cause
            .compare_exchange(0, cause as u8, Ordering::AcqRel, Ordering::Acquire);
    }

    /// The deadline, if the run is limited by time.
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.deadline
    }

    /// Resolves when the run is cancelled from outside.
    pub async fn cancelled(&self) {
        self.inner.token.cancelled().await
    }

    /// True once sending has stopped for any reason (time checked against `now`).
    pub fn is_stopped(&self, now: Instant) -> bool {
        if self.cause() != StopCause::Running {
            return true;
        }
        if self.inner.deadline.is_some_and(|d| now >= d) {
            self.set_cause(StopCause::Duration);
            return true;
        }
        false
    }

    /// Iterations a count-limited run may still start; `None` without a count.
    pub(crate) fn remaining(&self) -> Option<u64> {
        Some(self.inner.remaining.load(Ordering::Relaxed)).filter(|&n| n != u64::MAX)
    }

    /// Claims the right to start one more iteration at `now`; false once the run must stop.
    pub fn claim(&self, now: Instant) -> bool {
        !self.is_stopped(now) && self.take()
    }

    /// Claims an open-model arrival due at `slot`, as [`Stop::claim`] at the slot, except that a
    /// slot before the deadline stays the run's once another thread has seen the deadline pass:
    /// a thread a moment late still sends its last arrivals, so a run's arrivals do not depend
    /// on which thread reached the end first.
    pub fn claim_slot(&self, slot: Instant) -> bool {
        if self.cause() == StopCause::Duration && self.inner.deadline.is_some_and(|d| slot < d) {
            return self.take();
        }
        self.claim(slot)
    }

    /// Takes one of the iterations a count-limited run may still start.
    fn take(&self) -> bool {
        let mut cur = self.inner.remaining.load(Ordering::Relaxed);
        loop {
            if cur == u64::MAX {
                return true;
            }
            if cur == 0 {
                self.set_cause(StopCause::Count);
                return false;
            }
            match self
                .inner
                .remaining
                .compare_exchange_weak(cur, cur - 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    if cur == 1 {
                        self.set_cause(StopCause::Count);
                    }
                    return true;
                }
                Err(actual) => cur = actual,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn count_allows_exactly_n_claims() {
        let s = Stop::new(None, Some(3));
        let now = Instant::now();
        assert!(s.claim(now) && s.claim(now) && s.claim(now));
        assert!(!s.claim(now));
        assert_eq!(s.cause(), StopCause::Count);
    }

    #[test]
    fn deadline_and_cancel_stop_claims() {
        let start = Instant::now();
        let s = Stop::new(Some(start + Duration::from_secs(1)), None);
        assert!(s.claim(start));
        assert!(!s.claim(start + Duration::from_secs(2)));
        assert_eq!(s.cause(), StopCause::Duration);

        let c = Stop::new(None, None);
        c.cancel();
        assert!(!c.claim(start));
        assert_eq!(c.cause(), StopCause::Cancelled);
    }

    #[test]
    fn a_slot_before_the_deadline_is_claimed_after_another_thread_saw_it_pass() {
        let start = Instant::now();
        let deadline = start + Duration::from_secs(1);
        let s = Stop::new(Some(deadline), Some(2));
        assert!(s.is_stopped(deadline), "one thread reached the deadline");
        assert!(!s.claim(deadline - Duration::from_millis(1)));
        assert!(s.claim_slot(deadline - Duration::from_millis(1)), "a slot before it");
        assert!(!s.claim_slot(deadline), "a slot at it");
        assert!(s.claim_slot(start));
        assert!(!s.claim_slot(start), "the count still holds");
        let c = Stop::new(Some(deadline), None);
        c.cancel();
        assert!(!c.claim_slot(start), "a cancelled run sends nothing more");
    }
}
