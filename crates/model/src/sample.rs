//! What the engine reports about each request, and the trait it reports through.
//!
//! The engine never aggregates or formats: it fills a [`Sample`] and hands it to a [`Sink`].
//! Aggregation (histograms, time buckets) is the sink's business, which keeps the engine's hot
//! path small and lets tests observe raw samples directly.

use crate::Outcome;
use std::fmt;
use std::time::Duration;

/// Index of a request name in [`crate::Plan::names`]. Names group statistics (`GET /tasks/{id}`).
pub type NameId = u32;

/// One request, as measured. Offsets are from the start of the run.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Which request name the statistics are grouped under.
    pub name: NameId,
    /// Which segment of the run the iteration that made this request started in.
    pub segment: u32,
    /// The virtual user that made it: unique in the run, counting from 0 (the engine's id, set
    /// when the sample is reported, like `segment`).
    pub user: u64,
    /// Which of its user's iterations made it, counting from 0; requests of a user's `on_stop`
    /// carry the number of iterations it ran.
    pub iteration: u64,
    /// When the request was meant to start. In the closed model this is when it did start; in the
    /// open model it is its slot on the schedule, so a stalled target shows in the latency.
    pub intended: Duration,
    /// How late the request actually started compared with `intended`.
    pub send_lag: Duration,
    /// Time to resolve the host's name, when this request opened a connection that resolved
    /// it (`--dns-per-connection`); not part of `connect`.
    pub dns: Option<Duration>,
    /// Time to establish a new connection (TCP plus TLS), when this request opened one.
    pub connect: Option<Duration>,
    /// From the actual start until the first byte of the response arrived.
    pub ttfb: Option<Duration>,
    /// From the intended start until the response was complete or the request failed.
    pub total: Duration,
    /// Bytes written for this request (request line, headers and body).
    pub bytes_sent: u64,
    /// Bytes read for this request (status line, headers and body).
    pub bytes_received: u64,
    /// Protocol messages this sample sent on a message stream (WebSocket
    /// messages); 0 for a request and response, whose one exchange is the sample itself.
    pub messages_sent: u64,
    /// Protocol messages this sample read from a message stream (WebSocket messages,
    /// server-sent events); 0 for a request and response.
    pub messages_received: u64,
    /// The HTTP status, when a response head was received.
    pub status: Option<u16>,
    /// How the request ended.
    pub outcome: Outcome,
}

impl Sample {
    /// When the request ended, as an offset from the start of the run.
    pub fn end(&self) -> Duration {
        self.intended + self.total
    }
}

/// One iteration of a scenario flow, as measured when it ended.
#[derive(Clone, Debug, PartialEq)]
pub struct IterationSample {
    /// Index of the flow in the scenario's flows.
    pub flow: u32,
    /// The step the iteration started in.
    pub segment: u32,
    /// When it was meant to start (its first request's intended start), from the start of the
    /// run.
    pub intended: Duration,
    /// From the intended start to the end of its last step.
    pub took: Duration,
    /// True when a request, check or statement of it failed.
    pub failed: bool,
}

impl IterationSample {
    /// When the iteration ended, as an offset from the start of the run.
    pub fn end(&self) -> Duration {
        self.intended + self.took
    }
}

/// Receives the engine's measurements. One sink per engine thread; they are merged at the end.
pub trait Sink {
    /// Records one finished request. `detail` describes a failure; it is formatted only if the
    /// sink wants an example message, so an error storm costs no allocations.
    fn record(&mut self, sample: &Sample, detail: Option<&dyn fmt::Display>);

    /// Records an open-model arrival that was not sent because the concurrency cap was reached.
    fn dropped(&mut self, at: Duration);

    /// Records `n` arrivals dropped at once, as [`Sink::dropped`] `n` times.
    fn dropped_many(&mut self, at: Duration, n: u64) {
        for _ in 0..n {
            self.dropped(at);
        }
    }

    /// Lets the sink close time buckets while no request completes. `now` is the run offset.
    fn tick(&mut self, now: Duration);

    /// Records that an iteration of scenario flow `flow` started at `at` in step `segment`.
    /// Only flows report iterations: quick mode's unit of work is the request.
    fn iteration_started(&mut self, _flow: u32, _segment: u32, _at: Duration) {}

    /// Records one iteration of a scenario flow that ran to its end, passed or failed.
    fn iteration_ended(&mut self, _it: &IterationSample) {}
}
