//! Settings a front end does not give, for every front end: kept in one file so that every
//! default crest applies can be read in one place.

use std::time::Duration;

/// Limit on one request (or statement, or poll) when none is given.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// Limit on establishing a connection when none is given (never above the timeout).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most requests in flight in the open model when no cap is given.
pub const MAX_IN_FLIGHT: u64 = 1000;
/// Users of a quick-mode run without `-c`.
pub const USERS: u64 = 50;
/// Length of a quick-mode run with neither `-n` nor `-d`.
pub const DURATION: Duration = Duration::from_secs(10);
/// Longest crest waits for requests in flight once sending stops.
pub const MAX_GRACE: Duration = Duration::from_secs(5);
/// The shortest time between two monitor samples.
pub const MIN_MONITOR_INTERVAL: Duration = Duration::from_millis(100);
/// Time between two monitor samples when none is given.
pub const MONITOR_INTERVAL: Duration = Duration::from_secs(1);
/// The service level `crest find` holds each probe to, besides any `--slo` given (which
/// may raise or lower this error rate).
pub const SLO: &str = "error_rate < 1%";

/// Engine threads when none are asked for: one per core.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Arrivals per second one engine thread sends on time against a fast target on loopback:
/// bench/pacing.sh measured 50,000/s from one thread with none dropped and a median send lag
/// of 1 µs.
pub const OPEN_RATE_PER_THREAD: f64 = 50_000.0;

/// Engine threads for an open-model run whose rate peaks at `peak` arrivals/s, when none are
/// asked for: one per [`OPEN_RATE_PER_THREAD`], never more than the cores. Between arrivals
/// an engine thread waits by polling, to send each one within microseconds of its slot, so
/// it keeps a core busy whatever the rate: a thread the rate does not need takes a core
/// from the target on the same machine (at 50,000/s, two threads polling on a two-core
/// machine left nginx too little of either, and every arrival waited behind it).
pub fn open_threads(peak: f64) -> usize {
    let needed = (peak / OPEN_RATE_PER_THREAD).ceil().clamp(1.0, 4096.0) as usize;
    needed.min(threads())
}
