//! Requests sent and not yet answered, counted per engine thread, so that the end of a run can
//! say how many it cut off.
//!
//! Only the protocol code knows when a request's first byte leaves, and it runs inside the
//! iteration, several calls below it; an iteration still running at the end may be waiting on
//! anything else (a think time, a poll's interval, a connection being opened), and none of that
//! is a request the server holds. A counter that each engine thread installs for its users, and
//! that a guard held by the protocol code from its first written byte to the end of the
//! exchange finds there, reaches it without threading a handle through every call. The guard
//! keeps the counter it found, so it counts right wherever it ends.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

thread_local! {
    static COUNTER: RefCell<Arc<AtomicU64>> = RefCell::default();
}

/// Held by a request from its first written byte until it ends, however it ends (answered,
/// failed, or dropped with its task when the run cuts it off).
#[derive(Debug)]
pub struct Unanswered(Arc<AtomicU64>);

impl Unanswered {
    /// Counts a request whose bytes began to leave.
    pub fn sent() -> Self {
        let counter = COUNTER.with(|c| c.borrow().clone());
        counter.fetch_add(1, Ordering::Relaxed);
        Unanswered(counter)
    }
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Gives this thread a counter of its own, for the requests its users send from now on.
pub(crate) fn count_here() -> Arc<AtomicU64> {
    let counter = Arc::new(AtomicU64::new(0));
    COUNTER.with(|c| *c.borrow_mut() = counter.clone());
    counter
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_guards_alive_until_they_end_wherever_they_end() {
        let counter = count_here();
        let a = Unanswered::sent();
        let b = Unanswered::sent();
        assert_eq!(counter.load(Ordering::Relaxed), 2);
        drop(a);
        assert_eq!(counter.load(Ordering::Relaxed), 1);
        std::thread::spawn(move || drop(b)).join().unwrap();
        assert_eq!(counter.load(Ordering::Relaxed), 0);
    }
}
