//! The stop conditions of a run, judged on its journal entries as they are kept: by a run's
//! loop ([`crate::measure`]) and by a collector on the run its workers add up to
//! ([`crate::collect`]). Both read the one stream of entries, so a condition holds at the same
//! interval whether the run was measured here or put together from its workers' parts.

use crest_analysis::stop::{IntervalFigures, StopWatch, Stopped};
use crest_model::expr::StopCondition;
use crest_model::journal::{Entry, IntervalRecord, Start, Step};
use crest_model::results::Segment;
use std::time::Duration;

/// Judges the stop conditions of one run, interval by interval and sample by sample.
#[derive(Debug)]
pub struct Judge {
    watch: StopWatch,
    /// The plan's steps, and those started by hand, in order: the rules that compare steps
    /// judge a step when the next begins.
    planned: Vec<Segment>,
    by_hand: Vec<Step>,
    starts: Vec<Duration>,
    /// Flows count completed iterations for the throughput rules (see [`IntervalFigures`]).
    has_flows: bool,
    interval_s: f64,
    stopped: Option<Stopped>,
}

impl Judge {
    /// A judge of `conditions` for the run that `opening` starts.
    pub fn new(opening: &Start, conditions: Vec<StopCondition>) -> Self {
        Judge {
            watch: StopWatch::new(conditions),
            planned: opening.segments.clone(),
            by_hand: Vec::new(),
            starts: starts(&opening.segments),
            has_flows: !opening.flows.is_empty(),
            interval_s: opening.interval_s,
            stopped: None,
        }
    }

    /// Reads the next entry of the run. Returns the condition that held, the first time one
    /// does; later entries are still read (steps), but nothing holds twice.
    pub fn read(&mut self, entry: &Entry) -> Option<&Stopped> {
        let held = match entry {
            Entry::Interval(r) => self.interval(r),
            Entry::Monitor(m) => {
                let values: Vec<_> = m.points.iter().map(|p| (p.key.clone(), p.unit, p.value)).collect();
                self.watch.monitored(m.t_s, &values)
            }
            Entry::Step(step) => {
                self.by_hand.push(step.clone());
                self.starts = starts(&crest_model::journal::steered(&self.planned, &self.by_hand));
                None
            }
            Entry::Start(_) | Entry::End(_) | Entry::Points { .. } => None,
        };
        match held {
            Some(s) if self.stopped.is_none() => {
                self.stopped = Some(s);
                self.stopped.as_ref()
            }
            _ => None,
        }
    }

    /// Where each step starts, those started by hand included, from the start of the run.
    pub fn starts(&self) -> &[Duration] {
        &self.starts
    }

    /// The condition that held, if one did.
    pub fn stopped(&self) -> Option<&Stopped> {
        self.stopped.as_ref()
    }

    /// Takes the condition that held, for the run's end.
    pub fn take(&mut self) -> Option<Stopped> {
        self.stopped.take()
    }

    fn interval(&mut self, r: &IntervalRecord) -> Option<Stopped> {
        let i = &r.interval;
        // Decoded once a second, and only when some request ended in it.
        let latency = i.latency.decode().ok().filter(|_| i.requests > 0);
        let figures = IntervalFigures {
            t_s: i.t_s,
            len_s: self.interval_s,
            segment: crest_schedule::segment_at(&self.starts, Duration::from_secs_f64(i.t_s)),
            requests: i.requests,
            failures: i.failures,
            latency: latency.as_ref(),
            iterations: self.has_flows.then(|| r.iterations.iter().map(|s| s.completed).sum()),
        };
        self.watch.interval(&figures)
    }
}

fn starts(segments: &[Segment]) -> Vec<Duration> {
    segments
        .iter()
        .map(|s| Duration::from_secs_f64(s.start_s.max(0.0)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crest_model::hist;
    use crest_model::journal::{IntervalRecord, JOURNAL_SCHEMA, JOURNAL_VERSION};
    use crest_model::results::{Interval, LoadKind, RunConfig};
    use crest_model::step::{Level, StepKind};
    use crest_model::EncodedHistogram;

    fn opening(segments: &[(f64, f64)]) -> Start {
        Start {
            schema: JOURNAL_SCHEMA.into(),
            version: JOURNAL_VERSION,
            crest_version: "test".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
            config: RunConfig {
                command_line: vec![],
                model: LoadKind::Closed,
                concurrency: 10,
                rate: None,
                on_cap: None,
                requests: None,
                iterations: None,
                duration_s: None,
                threads: 1,
                worker: None,
                http: None,
                scenario: None,
                thresholds: vec![],
                stop_conditions: vec![],
                provenance: None,
            },
            environment: None,
            names: vec!["a".into()],
            part_of: vec![],
            flows: vec![],
            segments: segments
                .iter()
                .map(|&(start_s, end_s)| Segment {
                    kind: StepKind::Level(Level::Users(10)),
                    start_s,
                    end_s,
                    users: Some(10),
                    rate: None,
                    setup: None,
                })
                .collect(),
            interval_s: 1.0,
            target_rps: None,
            part: None,
        }
    }

    /// One second of `requests`, `failures` of them failed, each taking `ms`.
    fn second(t_s: f64, requests: u64, failures: u64, ms: u64) -> Entry {
        let mut h = hist::new_histogram();
        for _ in 0..requests {
            hist::record(&mut h, Duration::from_millis(ms));
        }
        let latency = EncodedHistogram::encode(&h);
        Entry::Interval(IntervalRecord {
            interval: Interval {
                t_s,
                requests,
                failures,
                bytes_sent: 0,
                bytes_received: 0,
                messages_sent: 0,
                messages_received: 0,
                dropped: 0,
                outcomes: Default::default(),
                latency: latency.clone(),
                ttfb: latency,
                iterations: None,
            },
            stats: vec![],
            iterations: vec![],
            status_codes: Default::default(),
            errors: vec![],
            send_lag: None,
            service: None,
            failed: vec![],
        })
    }

    fn judge(opening: &Start, condition: &str) -> Judge {
        Judge::new(opening, vec![StopCondition::parse(condition).unwrap()])
    }

    /// A condition holds once: the run is stopped by the first interval it holds in, and
    /// what it saw is kept however many more intervals come.
    #[test]
    fn a_condition_holds_once_at_the_first_interval_it_sees() {
        let mut j = judge(&opening(&[(0.0, 10.0)]), "error_rate > 10%");
        assert!(j.read(&second(0.0, 100, 0, 5)).is_none());
        let held = j
            .read(&second(1.0, 100, 90, 5))
            .cloned()
            .expect("45% of the window failed");
        // At the end of the second it held in.
        assert_eq!(held.at_s, 2.0);
        assert!(j.read(&second(2.0, 100, 90, 5)).is_none(), "it held already");
        assert_eq!(j.stopped().map(|s| s.at_s), Some(2.0));
        assert_eq!(j.take().map(|s| s.at_s), Some(2.0));
    }

    /// A step started by hand is a step to the rules that compare steps: `p95 > 3x first`
    /// compares the step set by hand with the first, as it would a planned step.
    #[test]
    fn a_step_started_by_hand_ends_the_step_before_it() {
        let start = opening(&[(0.0, 100.0)]);
        let mut by_hand = judge(&start, "p95 > 3x first");
        let mut unsteered = judge(&start, "p95 > 3x first");
        for t in 0..5 {
            assert!(by_hand.read(&second(t as f64, 50, 0, 5)).is_none());
            assert!(unsteered.read(&second(t as f64, 50, 0, 5)).is_none());
        }
        let step = Step {
            index: 1,
            kind: StepKind::Level(Level::Users(20)),
            start_s: 5.0,
            users: Some(20),
            rate: None,
        };
        by_hand.read(&Entry::Step(step));
        assert_eq!(by_hand.starts(), &[Duration::ZERO, Duration::from_secs(5)]);
        let mut held = None;
        // Five slow seconds, then one more to end the step and have it judged.
        for t in 5..11 {
            let slow = second(t as f64, 50, 0, 50);
            held = held.or(by_hand.read(&slow).cloned());
            assert!(
                unsteered.read(&slow).is_none(),
                "one step is never compared with itself"
            );
        }
        assert!(held.is_none(), "the step set by hand has not ended yet");
        let step = Step {
            index: 2,
            kind: StepKind::Level(Level::Users(30)),
            start_s: 11.0,
            users: Some(30),
            rate: None,
        };
        by_hand.read(&Entry::Step(step));
        let held = by_hand.read(&second(11.0, 50, 0, 50)).cloned();
        assert!(
            held.is_some(),
            "the second step's p95 (50 ms) is 10x the first's (5 ms)"
        );
    }
}
