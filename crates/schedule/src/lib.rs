//! When each arrival of an open-model run is due.
//!
//! Pacing is a pure function of the arrival index: no clock, no sleeping. The engine asks when
//! arrival `n` is due and sleeps until then, so the schedule is exact however late the engine
//! wakes, and it can be tested with plain arithmetic (as vegeta tests its pacers).
//!
//! A schedule is a piecewise-linear arrival rate. Arrival `n` (counting from 0) is due at the
//! time `t` where the cumulative number of arrivals `A(t) = ∫ rate` first reaches `n`, so a
//! constant rate `r` puts arrival `n` at `n / r` seconds.
#![warn(missing_docs)]

use crest_model::plan::{RateProfile, UsersProfile};
use std::time::Duration;

/// One stage of a rate profile: the rate moves linearly to `to_rate` over `duration`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stage {
    /// Length of the stage.
    pub duration: Duration,
    /// Arrivals per second at the end of the stage.
    pub to_rate: f64,
}

/// An arrival schedule: a starting rate followed by stages, then (optionally) a rate held forever.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    start_rate: f64,
    stages: Vec<Stage>,
    /// Rate held after the last stage; `None` ends the schedule there.
    hold: Option<f64>,
}

/// Why a schedule could not be built.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum InvalidRate {
    /// A rate that is negative, infinite or not a number.
    #[error("rate must be a finite number of at least 0, not {0}")]
    NotFinite(f64),
    /// A constant rate of 0 never sends anything.
    #[error("a constant rate must be above 0")]
    ZeroConstant,
}

fn check(rate: f64) -> Result<(), InvalidRate> {
    if rate.is_finite() && rate >= 0.0 {
        Ok(())
    } else {
        Err(InvalidRate::NotFinite(rate))
    }
}

impl Schedule {
    /// A constant rate, forever.
    pub fn constant(rate: f64) -> Result<Self, InvalidRate> {
        check(rate)?;
        if rate == 0.0 {
            return Err(InvalidRate::ZeroConstant);
        }
        Ok(Schedule {
            start_rate: rate,
            stages: Vec::new(),
            hold: Some(rate),
        })
    }

    /// A rate that starts at `start_rate` and follows `stages`; the schedule ends after the last.
    pub fn stages(start_rate: f64, stages: Vec<Stage>) -> Result<Self, InvalidRate> {
        check(start_rate)?;
        for s in &stages {
            check(s.to_rate)?;
        }
        Ok(Schedule {
            start_rate,
            stages,
            hold: None,
        })
    }

    /// The schedule of a rate profile: its stages, then its last rate held for ever (a last
    /// rate of 0 ends the schedule).
    pub fn from_profile(p: &RateProfile) -> Result<Self, InvalidRate> {
        let stages = p
            .stages
            .iter()
            .map(|s| Stage {
                duration: s.duration,
                to_rate: s.to,
            })
            .collect();
        let mut s = Schedule::stages(p.start, stages)?;
        let last = p.stages.last().map_or(p.start, |s| s.to);
        s.hold = (last > 0.0).then_some(last);
        Ok(s)
    }

    /// When arrival `n` (from 0) is due, as an offset from the start; `None` if the schedule ends
    /// first.
    pub fn at(&self, n: u64) -> Option<Duration> {
        let n = n as f64;
        let mut t0 = 0.0_f64; // start of the current stage, seconds
        let mut a0 = 0.0_f64; // arrivals due by t0
        let mut r0 = self.start_rate;
        for stage in &self.stages {
            let d = stage.duration.as_secs_f64();
            let r1 = stage.to_rate;
            let a1 = a0 + (r0 + r1) / 2.0 * d;
            if n <= a1 && d > 0.0 {
                return secs(t0 + within_ramp(n - a0, r0, r1, d));
            }
            t0 += d;
            a0 = a1;
            r0 = r1;
        }
        match self.hold {
            Some(rate) if rate > 0.0 => secs(t0 + (n - a0).max(0.0) / rate),
            _ => None,
        }
    }

    /// The arrival rate at offset `t`, for reports and progress.
    pub fn rate_at(&self, t: Duration) -> f64 {
        let t = t.as_secs_f64();
        let mut t0 = 0.0;
        let mut r0 = self.start_rate;
        for stage in &self.stages {
            let d = stage.duration.as_secs_f64();
            if t < t0 + d {
                return r0 + (stage.to_rate - r0) * (t - t0) / d;
            }
            t0 += d;
            r0 = stage.to_rate;
        }
        self.hold.unwrap_or(0.0)
    }
}

/// Time into a linear ramp from `r0` to `r1` over `d` seconds at which `m` arrivals are due.
///
/// Solves `r0·τ + (r1 - r0)/(2d)·τ² = m` in the form that stays accurate when the ramp is flat.
fn within_ramp(m: f64, r0: f64, r1: f64, d: f64) -> f64 {
    if m <= 0.0 {
        return 0.0;
    }
    let a = (r1 - r0) / (2.0 * d);
    let disc = (r0 * r0 + 4.0 * a * m).max(0.0);
    let denom = r0 + disc.sqrt();
    if denom <= 0.0 {
        return d;
    }
    (2.0 * m / denom).min(d)
}

/// Past this offset no arrival is due: no run lasts that long (plans stop at a year), and the
/// engine adds the offset to the start's `Instant`, which must not overflow.
const HORIZON: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `s` seconds, or `None` past the [`HORIZON`] (a rate of 1e-300 puts its second arrival there).
fn secs(s: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(s.max(0.0)).ok().filter(|d| *d <= HORIZON)
}

/// How an engine thread waits for an arrival's slot: what to do at one look at the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Far from the slot: sleep on the kernel's timer until this offset, then look again.
    Sleep(Duration),
    /// Closer than the timer's wake-up margin: give the runtime a turn (its sockets polled,
    /// ready responses read), then look again.
    Turn,
    /// The slot has come: send.
    Send,
    /// Send, [`BEHIND`] or more after the slot: the thread lost its core for a while or the
    /// rate is beyond it, and the runtime gets a turn after each send so that responses are
    /// read while the backlog goes out.
    SendBehind,
}

/// How late an arrival must be before sending it gives the runtime a turn; within it, a backlog
/// of due arrivals goes out in one go, ahead of any response.
///
/// Chosen by measurement (bench/pacing.sh, one engine thread at 50,000 arrivals/s, which it
/// can hold to about 61,000/s): the machine takes the thread's core for 1 to 4 ms a few times
/// a second. At 1 ms, each such stall put the thread into a turn per arrival, which cost it
/// more than its spare fifth of the core, so it stayed behind for tens to hundreds of
/// milliseconds (lag p90 up to 35 ms, and 44,833 arrivals dropped once, in 6 rounds). At 10 ms
/// it sends the backlog and is back on its slots within milliseconds (lag p90 under 10 µs in
/// every round). Past 10 ms the rate is taken to be beyond the thread.
pub const BEHIND: Duration = Duration::from_millis(10);

/// What to do at offset `now` for an arrival due at offset `due`, with the timer set to wake
/// `ahead` of the slot.
pub fn wait(now: Duration, due: Duration, ahead: Duration) -> Wait {
    if now + ahead < due {
        Wait::Sleep(due - ahead)
    } else if now < due {
        Wait::Turn
    } else if now < due + BEHIND {
        Wait::Send
    } else {
        Wait::SendBehind
    }
}

/// Users active at offset `t`: linear within a stage, rounded down, the last level held.
pub fn users_at(p: &UsersProfile, t: Duration) -> u64 {
    let mut t0 = Duration::ZERO;
    let mut u0 = p.start;
    for s in &p.stages {
        if t < t0 + s.duration {
            let f = (t - t0).as_secs_f64() / s.duration.as_secs_f64();
            return (u0 as f64 + (s.to as f64 - u0 as f64) * f).floor() as u64;
        }
        t0 += s.duration;
        u0 = s.to;
    }
    u0
}

/// The index of the segment containing offset `t`, given the segments' start offsets in order.
pub fn segment_at(starts: &[Duration], t: Duration) -> usize {
    starts.partition_point(|s| *s <= t).saturating_sub(1)
}

/// The global arrival index of a thread's `j`-th arrival when `threads` threads share one
/// schedule round-robin: thread `k` takes arrivals `k, k + threads, k + 2·threads, ...`, so the
/// threads together follow the schedule exactly without talking to each other.
pub fn interleaved(thread: usize, threads: usize, j: u64) -> u64 {
    thread as u64 + j * threads as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Duration, b: f64) -> bool {
        (a.as_secs_f64() - b).abs() < 1e-9
    }

    #[test]
    fn arrivals_past_any_clock_are_never_due() {
        // These panicked converting 1e300 s to a Duration.
        let s = Schedule::constant(1e-300).unwrap();
        assert_eq!(s.at(0), Some(Duration::ZERO));
        assert_eq!(s.at(1), None);
        let ramp = Schedule::stages(
            1e-300,
            vec![Stage {
                duration: Duration::from_secs(1),
                to_rate: 1e-300,
            }],
        )
        .unwrap();
        assert_eq!(ramp.at(5), None);
    }

    #[test]
    fn constant_rate_spaces_arrivals_evenly() {
        let s = Schedule::constant(4.0).unwrap();
        assert_eq!(s.at(0), Some(Duration::ZERO));
        assert!(close(s.at(1).unwrap(), 0.25));
        assert!(close(s.at(400).unwrap(), 100.0));
        assert_eq!(s.rate_at(Duration::from_secs(1000)), 4.0);
    }

    #[test]
    fn invalid_rates_are_rejected() {
        assert!(Schedule::constant(0.0).is_err());
        assert!(Schedule::constant(-1.0).is_err());
        assert!(Schedule::constant(f64::NAN).is_err());
        assert!(Schedule::stages(
            1.0,
            vec![Stage {
                duration: Duration::from_secs(1),
                to_rate: f64::INFINITY
            }]
        )
        .is_err());
    }

    #[test]
    fn linear_ramp_from_zero_follows_the_square_root() {
        // Rate 0 -> 10/s over 10 s: A(t) = t²/2, so arrival n is due at sqrt(2n).
        let s = Schedule::stages(
            0.0,
            vec![Stage {
                duration: Duration::from_secs(10),
                to_rate: 10.0,
            }],
        )
        .unwrap();
        for n in [1u64, 2, 8, 18, 32, 50] {
            assert!(close(s.at(n).unwrap(), (2.0 * n as f64).sqrt()), "n={n}");
        }
        assert_eq!(
            s.at(51),
            None,
            "50 arrivals fit in the ramp, and the schedule then ends"
        );
        assert!((s.rate_at(Duration::from_secs(5)) - 5.0).abs() < 1e-9);
    }

    #[test]
    fn stages_chain_and_hold_counts_match_the_integral() {
        // 10/s for 2 s (20 arrivals), ramp 10 -> 30 over 2 s (40 more), then 30/s for 1 s (30).
        let s = Schedule::stages(
            10.0,
            vec![
                Stage {
                    duration: Duration::from_secs(2),
                    to_rate: 10.0,
                },
                Stage {
                    duration: Duration::from_secs(2),
                    to_rate: 30.0,
                },
                Stage {
                    duration: Duration::from_secs(1),
                    to_rate: 30.0,
                },
            ],
        )
        .unwrap();
        assert!(close(s.at(20).unwrap(), 2.0));
        assert!(close(s.at(60).unwrap(), 4.0));
        assert!(close(s.at(90).unwrap(), 5.0));
        assert_eq!(s.at(91), None);
    }

    #[test]
    fn arrival_times_never_go_backwards() {
        let s = Schedule::stages(
            100.0,
            vec![
                Stage {
                    duration: Duration::from_millis(700),
                    to_rate: 3.0,
                },
                Stage {
                    duration: Duration::from_millis(300),
                    to_rate: 0.0,
                },
                Stage {
                    duration: Duration::from_millis(500),
                    to_rate: 250.0,
                },
            ],
        )
        .unwrap();
        let mut last = Duration::ZERO;
        let mut n = 0;
        while let Some(t) = s.at(n) {
            assert!(t >= last, "arrival {n} at {t:?} before {last:?}");
            last = t;
            n += 1;
        }
        assert!(last <= Duration::from_millis(1500));
    }

    #[test]
    fn rate_profiles_hold_their_last_rate() {
        let p = RateProfile {
            start: 0.0,
            stages: vec![crest_model::plan::RateStage {
                duration: Duration::from_secs(2),
                to: 10.0,
            }],
        };
        let s = Schedule::from_profile(&p).unwrap();
        // 10 arrivals in the 2 s ramp, then 10/s for ever.
        assert!(close(s.at(10).unwrap(), 2.0));
        assert!(close(s.at(30).unwrap(), 4.0));
    }

    #[test]
    fn users_follow_ramps_jumps_and_holds() {
        use crest_model::plan::UsersStage;
        let p = UsersProfile {
            start: 0,
            stages: vec![
                UsersStage {
                    duration: Duration::from_secs(10),
                    to: 100,
                },
                UsersStage {
                    duration: Duration::from_secs(5),
                    to: 100,
                },
                UsersStage {
                    duration: Duration::ZERO,
                    to: 140,
                },
                UsersStage {
                    duration: Duration::from_secs(5),
                    to: 140,
                },
            ],
        };
        assert_eq!(users_at(&p, Duration::ZERO), 0);
        assert_eq!(users_at(&p, Duration::from_millis(2500)), 25);
        assert_eq!(users_at(&p, Duration::from_secs(12)), 100);
        assert_eq!(
            users_at(&p, Duration::from_secs(15)),
            140,
            "a zero-length stage is a jump"
        );
        assert_eq!(users_at(&p, Duration::from_secs(99)), 140);
        assert_eq!(users_at(&UsersProfile::constant(7), Duration::from_secs(1)), 7);
    }

    #[test]
    fn the_sender_sleeps_then_turns_then_sends() {
        let (ms, us) = (Duration::from_millis, Duration::from_micros);
        let ahead = us(50);
        // Slot at 10 ms: the timer wakes the thread 50 µs before it.
        assert_eq!(wait(ms(0), ms(10), ahead), Wait::Sleep(us(9_950)));
        assert_eq!(wait(us(9_949), ms(10), ahead), Wait::Sleep(us(9_950)));
        // Woken, on time or late, it only takes turns of the runtime until the slot.
        assert_eq!(wait(us(9_950), ms(10), ahead), Wait::Turn);
        assert_eq!(wait(us(9_999), ms(10), ahead), Wait::Turn);
        assert_eq!(wait(ms(10), ms(10), ahead), Wait::Send);
        assert_eq!(wait(ms(19), ms(10), ahead), Wait::Send);
        // Ten milliseconds late, each send of the backlog gives the runtime a turn.
        assert_eq!(wait(ms(20), ms(10), ahead), Wait::SendBehind);
        // No margin: sleep to the slot itself.
        assert_eq!(wait(ms(0), ms(10), Duration::ZERO), Wait::Sleep(ms(10)));
        // Slots closer than the margin (a high rate) are never slept for.
        assert_eq!(wait(us(9_980), ms(10), ahead), Wait::Turn);
    }

    #[test]
    fn segments_are_found_by_start() {
        let starts = [Duration::ZERO, Duration::from_secs(10), Duration::from_secs(20)];
        assert_eq!(segment_at(&starts, Duration::ZERO), 0);
        assert_eq!(segment_at(&starts, Duration::from_millis(9_999)), 0);
        assert_eq!(segment_at(&starts, Duration::from_secs(10)), 1);
        assert_eq!(segment_at(&starts, Duration::from_secs(100)), 2);
    }

    #[test]
    fn interleaving_covers_every_arrival_once() {
        let threads = 3;
        let mut seen: Vec<u64> = (0..threads)
            .flat_map(|k| (0..5).map(move |j| interleaved(k, threads, j)))
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..15).collect::<Vec<_>>());
    }
}
