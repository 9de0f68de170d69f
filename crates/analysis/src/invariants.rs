//! What any analysis of a measured run must satisfy for its answers to agree with each other:
//! a debug build of crest checks every run it measures (so every run the test suite drives),
//! not only hand-picked cases. A violation there is a bug in the analysis, never in the run. A
//! document edited by hand (or by a fuzzer) can hold figures no run makes; it is analysed and
//! reported all the same, never checked.

use crate::analyze::Analysis;
use crate::capacity::{CapacityPoint, Why, BREAKING_ERROR_RATE};
use crate::figures::WorkUnit;
use std::fmt;

/// One way an analysis contradicts itself.
#[derive(Clone, Debug, PartialEq)]
pub enum Violation {
    /// Two capacity points out of order in load: the first must not lie above the second.
    OutOfOrder {
        /// The lower point's name (`optimal`, `saturation`).
        lower: &'static str,
        /// Its load.
        lower_load: f64,
        /// The higher point's name (`saturation`, `breaking`).
        higher: &'static str,
        /// Its load.
        higher_load: f64,
    },
    /// A breaking point with neither failures past the rule nor a missed service level.
    BreaksWithoutCause {
        /// Its load.
        load: f64,
        /// Its error rate.
        error_rate: f64,
    },
    /// A figure quoted as an answer is not its step's successful throughput in the run's unit.
    NotSuccessful {
        /// Which answer.
        answer: &'static str,
        /// What it quotes.
        quoted: f64,
        /// The step's successful units per second.
        step: f64,
    },
    /// The answers are counted in another unit than the run's.
    UnitMismatch {
        /// Where.
        answer: &'static str,
        /// The unit found there.
        found: WorkUnit,
        /// The run's unit.
        run: WorkUnit,
    },
    /// A peak below the average of the same figure.
    PeakBelowAverage {
        /// Which figure.
        figure: &'static str,
        /// The peak.
        peak: f64,
        /// The average.
        average: f64,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::OutOfOrder {
                lower,
                lower_load,
                higher,
                higher_load,
            } => write!(f, "{lower} at load {lower_load} lies above {higher} at {higher_load}"),
            Violation::BreaksWithoutCause { load, error_rate } => write!(
                f,
                "breaking point at load {load} with an error rate of {error_rate} and no service level missed"
            ),
            Violation::NotSuccessful { answer, quoted, step } => {
                write!(f, "{answer} quotes {quoted}/s where its step succeeded {step}/s")
            }
            Violation::UnitMismatch { answer, found, run } => {
                write!(f, "{answer} is counted in {found:?}, the run in {run:?}")
            }
            Violation::PeakBelowAverage { figure, peak, average } => {
                write!(f, "{figure}: peak {peak} below the average {average}")
            }
        }
    }
}

/// Relative slack for figures that are the same number reached by two paths.
const SAME: f64 = 1e-9;
/// Standard errors of a step's throughput within which it is not told apart from another.
const NOISE: f64 = 2.0;
/// How late a sample may be recorded after it ended, on a busy machine: one that ended just
/// before a second's boundary, recorded after one that ended past it, counts in the later second
/// (a sent interval is never reopened). A window's edges can move this much of the step's work.
const RECORDING_LAG_S: f64 = 0.005;

/// What a step's steady window may read short of the whole run's rate by counting alone: at
/// each edge one whole request, and the requests of a recording lag.
fn counting_slack(s: &crate::figures::SegmentAnalysis) -> f64 {
    let window = s.steady_end_s - s.steady_start_s;
    if window > 0.0 {
        2.0 * (1.0 + s.success_rps * RECORDING_LAG_S) / window
    } else {
        0.0
    }
}

/// Every way `a` contradicts itself; empty when its answers agree.
pub fn check(a: &Analysis) -> Vec<Violation> {
    let mut out = Vec::new();
    let c = &a.capacity;
    let named = [
        ("optimal", c.optimal.as_ref()),
        ("saturation", c.saturation.as_ref()),
        ("breaking", c.breaking.as_ref()),
    ];
    for (i, (lower, p)) in named.iter().enumerate() {
        for (higher, q) in &named[i + 1..] {
            if let (Some(p), Some(q)) = (p, q) {
                if p.load_value > q.load_value {
                    out.push(Violation::OutOfOrder {
                        lower,
                        lower_load: p.load_value,
                        higher,
                        higher_load: q.load_value,
                    });
                }
            }
        }
    }
    if let Some(b) = &c.breaking {
        let caused = match &b.why {
            Why::Failed(f) => f.error_rate > BREAKING_ERROR_RATE,
            Why::MissedSlo(_) => true,
            _ => false,
        };
        if !caused {
            out.push(Violation::BreaksWithoutCause {
                load: b.load_value,
                error_rate: b.error_rate,
            });
        }
    }
    let steps = a.unit_segments();
    let step_rate = |segment: usize| steps.iter().find(|s| s.index == segment).map(|s| s.success_rps);
    let mut quoted = |answer: &'static str, per_s: f64, segment: usize| {
        if let Some(step) = step_rate(segment) {
            if (per_s - step).abs() > SAME * step.abs().max(1.0) {
                out.push(Violation::NotSuccessful {
                    answer,
                    quoted: per_s,
                    step,
                });
            }
        }
    };
    for (answer, p) in named {
        if let Some(CapacityPoint { per_s, segment, .. }) = p {
            quoted(answer, *per_s, *segment);
        }
    }
    for (answer, x) in [
        ("answers.optimal", &a.summary.answers.optimal),
        ("answers.limit", &a.summary.answers.limit),
    ] {
        if let Some(x) = x {
            quoted(answer, x.per_s, x.segment);
        }
    }
    for (answer, found) in [
        ("capacity", c.unit),
        ("answers", a.summary.answers.unit),
        ("summary", a.summary.unit),
    ] {
        if found != a.unit {
            out.push(Violation::UnitMismatch {
                answer,
                found,
                run: a.unit,
            });
        }
    }
    // The best step (what a comparison calls the peak) against the whole run's rate.
    // Judged steps only, each with its own noise: a best step within its uncertainty of the
    // average does not contradict it. Nor does one short of it by what its window's edges can
    // count either way ([`counting_slack`]): paced arrivals have no spread from second to
    // second to hide it in (a worker's one step read 319.968/s against its run's 319.972/s; a
    // collected run's at 1,280/s, 1279.68/s against 1279.72/s on a busy machine).
    let peak = |steps: &[crate::figures::SegmentAnalysis]| {
        steps
            .iter()
            .filter(|s| s.judged == crate::figures::Judged::Yes && s.steady_requests > 0)
            .map(|s| s.success_rps + NOISE * s.success_rps_se + counting_slack(s))
            .reduce(f64::max)
    };
    let averages = [
        (
            "successful requests per second",
            peak(&a.segments),
            Some(a.summary.success_rps),
        ),
        (
            "completed iterations per second",
            peak(&a.iteration_segments),
            a.summary.iterations.as_ref().map(|i| i.per_s),
        ),
    ];
    for (figure, peak, average) in averages {
        if let (Some(peak), Some(average)) = (peak, average) {
            if peak < average * (1.0 - SAME) - SAME {
                out.push(Violation::PeakBelowAverage { figure, peak, average });
            }
        }
    }
    if let Some(s) = &a.summary.capacity {
        if let Some(o) = &s.optimal {
            if o.per_s > s.max_per_s * (1.0 + SAME) + SAME {
                out.push(Violation::PeakBelowAverage {
                    figure: "a capacity search's maximum, against its optimum's throughput",
                    peak: s.max_per_s,
                    average: o.per_s,
                });
            }
        }
        if s.unit != a.unit {
            out.push(Violation::UnitMismatch {
                answer: "capacity search",
                found: s.unit,
                run: a.unit,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole run's rate above its best step's by less than its window's edges can count
    /// either way is counting, not a contradiction; by more than that, it is one.
    #[test]
    fn a_peak_short_of_the_average_by_its_counting_slack_agrees() {
        let mut a = crate::analyze(&crest_testkit::results::stepping_fixture()).unwrap();
        let best = a
            .segments
            .iter()
            .filter(|s| s.judged == crate::figures::Judged::Yes && s.steady_requests > 0)
            .max_by(|x, y| x.success_rps.total_cmp(&y.success_rps))
            .unwrap()
            .clone();
        let peak = best.success_rps + NOISE * best.success_rps_se;
        let slack = counting_slack(&best);
        let one = 1.0 / (best.steady_end_s - best.steady_start_s);
        assert!(slack > 2.0 * one, "both edges, each a request and more");
        let below = |a: &Analysis| {
            check(a)
                .iter()
                .any(|v| matches!(v, Violation::PeakBelowAverage { figure, .. } if figure.starts_with("successful requests")))
        };
        a.summary.success_rps = peak + 0.9 * slack;
        assert!(!below(&a), "{:?}", check(&a));
        a.summary.success_rps = peak + 1.1 * slack;
        assert!(below(&a));
    }
}
