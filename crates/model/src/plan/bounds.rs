//! The bounds every plan's rates, users and durations are held to, whichever front end gave
//! them: past them a number is a typo, and would overflow the engine's arithmetic.

use std::time::Duration;

/// The highest arrival rate a plan may ask for, per second. One process sends at most a few
/// hundred thousand requests a second; far beyond that a rate is a typo, and `1e300` overflowed
/// the schedule's arithmetic.
pub const MAX_RATE: f64 = 10_000_000.0;
/// The lowest arrival rate a plan may ask for, per second: one request in about eleven days.
/// Below it a rate is a typo, and `1e-300` put the second arrival past any time a clock holds.
pub const MIN_RATE: f64 = 1e-6;
/// The most users (or requests in flight) a plan may ask for: each holds a connection.
pub const MAX_USERS: u64 = 1_000_000;
/// The longest duration a plan may give (a run, a stage, a timeout): a year. Longer ones are
/// typos, and would overflow the clock's arithmetic.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// A rate, a number of users or a duration outside the bounds above.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum BoundError {
    /// Not a positive, finite rate.
    #[error("the rate must be a number of requests per second above 0")]
    RateNotPositive,
    /// Below [`MIN_RATE`].
    #[error("the rate is at least {MIN_RATE}/s (one request in 11.6 days)")]
    RateTooLow,
    /// Above [`MAX_RATE`].
    #[error("the rate is at most {MAX_RATE:.0}/s")]
    RateTooHigh,
    /// Above [`MAX_USERS`].
    #[error("at most {MAX_USERS} users (connections) from one process")]
    TooManyUsers,
    /// Above [`MAX_DURATION`].
    #[error("a duration is at most 365 days")]
    TooLong,
}

/// Why a rate, a number of users or a duration is outside the bounds above; `None` when it is
/// usable.
pub fn rate_problem(rate: f64) -> Option<BoundError> {
    if !(rate.is_finite() && rate > 0.0) {
        Some(BoundError::RateNotPositive)
    } else if rate < MIN_RATE {
        Some(BoundError::RateTooLow)
    } else if rate > MAX_RATE {
        Some(BoundError::RateTooHigh)
    } else {
        None
    }
}

/// See [`rate_problem`].
pub fn users_problem(users: u64) -> Option<BoundError> {
    (users > MAX_USERS).then_some(BoundError::TooManyUsers)
}

/// See [`rate_problem`].
pub fn duration_problem(d: Duration) -> Option<BoundError> {
    (d > MAX_DURATION).then_some(BoundError::TooLong)
}
