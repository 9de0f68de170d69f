//! Where the open model's arrivals fall: each thread's slots on the plan's schedule or on a rate
//! set by hand, kept apart from the sender so the grid's arithmetic can be tested alone.

use crest_schedule::{interleaved, Schedule};
use std::time::Duration;

/// Where a rate `r` set by hand at `since` puts this thread's arrivals, seen at `now` with its
/// `j`th next: the arrival `j0` would have had the lane's first slot after `since`, so that every
/// thread (and every worker of a collected run, told of the change a moment apart) paces on one
/// grid of the whole run's lanes. The grid's slots already past when the thread saw the change
/// are skipped, never due, as those of a pause are.
pub(super) fn on_grid(since: Duration, now: Duration, r: f64, lane: usize, lanes: usize, j: u64) -> i64 {
    let past = (now.saturating_sub(since).as_secs_f64() * r - lane as f64 - 1.0) / lanes as f64;
    let skipped = if past > 0.0 { past.ceil().min(1e15) as i64 } else { 0 };
    j as i64 - skipped
}

/// This thread's `j`th arrival's slot, from the run's start: on the plan's schedule, or on a rate
/// set by hand (from when, which arrival had the first slot, at what rate; none at a rate of zero).
pub(super) fn slot(
    by_hand: Option<(Duration, i64, f64)>,
    schedule: &Schedule,
    lane: usize,
    lanes: usize,
    j: u64,
) -> Option<Duration> {
    match by_hand {
        Some((_, _, r)) if r <= 0.0 => None,
        Some((from, j0, r)) => Some(
            from + Duration::from_secs_f64(((j as i64 - j0).max(0) as u64 * lanes as u64 + lane as u64 + 1) as f64 / r),
        ),
        None => schedule.at(interleaved(lane, lanes, j)),
    }
}

/// How many of this thread's arrivals from its `j`th have slots before `end`: found by doubling
/// then halving, since a rate far beyond the thread leaves millions unreached (one by one, ten
/// million took a debug build 3 s past the run's end).
pub(super) fn due_before(
    by_hand: Option<(Duration, i64, f64)>,
    schedule: &Schedule,
    lane: usize,
    lanes: usize,
    j: u64,
    end: Duration,
) -> u64 {
    let before = |k: u64| slot(by_hand, schedule, lane, lanes, k).is_some_and(|at| at < end);
    if !before(j) {
        return 0;
    }
    let mut step = 1u64;
    while step < u64::MAX / 4 && before(j.saturating_add(step)) {
        step *= 2;
    }
    // j + step / 2 is before the end (j itself when step is 1), j + step is not.
    let (mut lo, mut hi) = (j + step / 2, j.saturating_add(step));
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi - j
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads (or workers) that see a rate set by hand at different moments, each from its
    /// own next arrival, put their arrivals on the one grid of the whole run's lanes from the
    /// change: together, every slot after the last of them saw it, each once.
    #[test]
    fn a_rate_set_by_hand_is_one_grid_whoever_sees_it_when() {
        let (since, r, lanes) = (Duration::from_millis(1_000), 400.0, 6);
        let schedule = Schedule::constant(1.0).unwrap();
        let end = Duration::from_millis(2_000);
        let mut got = Vec::new();
        for lane in 0..lanes {
            // Seen 0 to 37 ms late, at this lane's 3rd to 8th arrival.
            let now = since + Duration::from_micros(7_400 * lane as u64);
            let j = 3 + lane as u64;
            let by_hand = Some((since, on_grid(since, now, r, lane, lanes, j), r));
            let mut k = j;
            while let Some(at) = slot(by_hand, &schedule, lane, lanes, k).filter(|at| *at < end) {
                assert!(at >= now, "lane {lane}: a slot before it saw the change");
                got.push(((at - since).as_secs_f64() * r).round() as u64);
                k += 1;
            }
        }
        got.sort_unstable();
        let last_seen = (7_400.0 * (lanes - 1) as f64 / 1e6 * r).ceil() as u64;
        let whole: Vec<u64> = (1..400).collect();
        let after: Vec<u64> = got.iter().copied().filter(|n| *n > last_seen).collect();
        assert_eq!(after, whole[last_seen as usize..], "every slot once after all saw it");
        let mut unique = got.clone();
        unique.dedup();
        assert_eq!(unique, got, "no slot twice");
    }

    /// The count of slots before the end, found by halving, is the count one by one, on the
    /// plan's schedule and on a rate set by hand, for every lane and from any arrival.
    #[test]
    fn arrivals_due_before_the_end_are_counted_as_one_by_one() {
        let schedule = Schedule::constant(1000.0).unwrap();
        for by_hand in [None, Some((Duration::from_millis(300), 0, 250.0))] {
            for (lane, lanes) in [(0, 1), (0, 3), (2, 3)] {
                for j in [0u64, 7, 90, 400] {
                    for end_ms in [0u64, 1, 250, 1000, 1999] {
                        let end = Duration::from_millis(end_ms);
                        let one_by_one = (j..)
                            .take_while(|k| slot(by_hand, &schedule, lane, lanes, *k).is_some_and(|at| at < end))
                            .count() as u64;
                        assert_eq!(
                            due_before(by_hand, &schedule, lane, lanes, j, end),
                            one_by_one,
                            "{by_hand:?} lane {lane} of {lanes}, from {j}, before {end_ms} ms"
                        );
                    }
                }
            }
        }
    }
}
