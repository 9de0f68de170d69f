//! Executes a plan: virtual users or an arrival schedule, stop rules, cancellation.
//!
//! The engine is protocol-agnostic. A [`Workload`] knows how to run one iteration for a user
//! (one HTTP request in quick mode, one pass through a scenario's flow of HTTP requests and SQL
//! transactions) and reports each request it makes as a sample to the thread's sink. The engine
//! decides *when* iterations run, and nothing else:
//!
//! - closed model: each virtual user runs its next iteration as soon as the last one ends;
//! - open model: iterations start on the arrival schedule, each on an idle user, and arrivals
//!   that find the cap on in-flight iterations reached are dropped and counted.
//!
//! The stop rule (count, duration, signal) is checked by both models through [`Stop`], so there
//! is one executor rather than one loop per combination. Work runs on one single-threaded tokio
//! runtime per thread (as wrk runs one event loop per thread): no work stealing, no locks on the
//! hot path, and each thread's sink is its own. Open-model arrivals are paced to within
//! microseconds of their slots, and each is timed from its slot rather than from when it was
//! sent, so a stalled generator shows as latency and send lag rather than vanishing from the
//! figures.
#![warn(missing_docs)]

mod control;
mod executor;
mod placement;
mod stop;
mod unanswered;

pub use control::{Change, Changed, Control, ControlError, LiveStep};
pub use executor::{run, EngineReport, Shape, Workload};
pub use stop::{Stop, StopCause};
pub use unanswered::Unanswered;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crest_model::{Sample, Sink};

/// The run's start and where a thread's samples go, lent to each iteration's [`Ctx`]: every
/// user's task holds its context while the iteration runs, so at 10,000 users a copy of both
/// in each cost 320 KB (issue 35).
pub struct Clock {
    start: Instant,
    sink: Rc<RefCell<dyn Sink>>,
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clock")
            .field("start", &self.start)
            .finish_non_exhaustive()
    }
}

impl Clock {
    /// A run that started at `start`, whose samples go to `sink`.
    pub fn new(start: Instant, sink: Rc<RefCell<dyn Sink>>) -> Self {
        Clock { start, sink }
    }

    /// When the run started.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// Where this thread's samples go.
    pub fn sink(&self) -> &RefCell<dyn Sink> {
        &self.sink
    }
}

/// What an iteration needs from the engine: when it was meant to start, the run's clock, and
/// where to report samples.
pub struct Ctx<'a> {
    clock: &'a Clock,
    intended: Instant,
    segment: u32,
    /// Users are counted in 32 bits, as the samples' rows keep them.
    user: u32,
    iteration: u64,
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("intended", &self.intended)
            .finish_non_exhaustive()
    }
}

impl<'a> Ctx<'a> {
    /// A context for running a workload outside the engine (tests, probes), as user 0's first
    /// iteration.
    pub fn new(clock: &'a Clock, intended: Instant, segment: u32) -> Self {
        Ctx {
            clock,
            intended,
            segment,
            user: 0,
            iteration: 0,
        }
    }

    /// When this iteration was meant to start. In the open model, latency counts from here.
    pub fn intended(&self) -> Instant {
        self.intended
    }

    /// `t` as an offset from the start of the run.
    pub fn offset(&self, t: Instant) -> Duration {
        t.saturating_duration_since(self.clock.start)
    }

    /// The segment of the run this iteration started in.
    pub fn segment(&self) -> u32 {
        self.segment
    }

    /// Reports one request, labelled with this iteration's segment, user and iteration: the
    /// engine knows them, so no workload has to carry them.
    pub fn record(&self, mut sample: Sample, detail: Option<&dyn std::fmt::Display>) {
        sample.segment = self.segment;
        sample.user = u64::from(self.user);
        sample.iteration = self.iteration;
        self.clock.sink.borrow_mut().record(&sample, detail);
    }

    /// Reports that this iteration runs scenario flow `flow`, from its intended start.
    pub fn iteration_started(&self, flow: u32) {
        let at = self.offset(self.intended);
        self.clock.sink.borrow_mut().iteration_started(flow, self.segment, at);
    }

    /// Reports that this iteration of scenario flow `flow` ended now, passed or failed.
    pub fn iteration_ended(&self, flow: u32, failed: bool) {
        let intended = self.offset(self.intended);
        let it = crest_model::IterationSample {
            flow,
            segment: self.segment,
            intended,
            took: self.offset(Instant::now()).saturating_sub(intended),
            failed,
        };
        self.clock.sink.borrow_mut().iteration_ended(&it);
    }
}
