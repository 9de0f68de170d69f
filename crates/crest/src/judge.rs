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
