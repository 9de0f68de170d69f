//! Waiting for an arrival's slot to within microseconds: the kernel timer the open model's sender
//! sleeps on, kept apart because its measured trade-offs (below) concern nothing else.

use crest_schedule::{wait, Wait};
use std::time::{Duration, Instant};
use timerfd::{ClockId, SetTimeFlags, TimerFd, TimerState};
use tokio::io::unix::AsyncFd;

/// How long before an arrival's slot the kernel timer wakes the thread, which then yields to the
/// runtime until the clock reaches the slot: the wake-up itself fits in it.
const WAKE_AHEAD: Duration = Duration::from_micros(150);
/// The same with only tokio's timer, whose wheel ticks in milliseconds and whose epoll wait rounds
/// up to one: it fires up to about 2 ms late (a send lag p50 of 1 ms, measured before).
const WAKE_AHEAD_COARSE: Duration = Duration::from_micros(2_000);

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
pub(super) struct Pacer {
    timer: Option<AsyncFd<TimerFd>>,
    /// When the timer is set to expire, if it has not yet been seen to: a wait taken up again
    /// for the same slot does not set it again.
    armed: Option<Instant>,
    ahead: Duration,
    /// Whether it waited on a timer since [`Pacer::take_slept`] was last called: a thread that
    /// sleeps is placed by the kernel as it wakes (see [`Placement`](crate::placement::Placement)).
    slept: bool,
}

impl Pacer {
    // `AsyncFd::new` is deprecated because a registered descriptor could be closed behind the
    // runtime's back; here the AsyncFd owns the TimerFd, which owns its descriptor, so nothing
    // else can close it, and the safe constructor is the right one (`register` is `unsafe`).
    #[allow(deprecated)]
    pub(super) fn new() -> Self {
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
    pub(super) fn take_slept(&mut self) -> bool {
        std::mem::take(&mut self.slept)
    }

    /// Returns at the slot `at` of a run that started at `start`.
    pub(super) async fn until(&mut self, start: Instant, at: Duration) {
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
