//! Is the result valid? crest watches itself: when the load generator rather than the target
//! limited a run (its CPU, its schedule, its file descriptors, users waiting inside it), the
//! figures describe crest, and the report must say so before any of them is believed.
//!
//! Each limit rests on a cause crest measured, past a stated bound. None is judged in a run in
//! which nothing succeeded: its figures describe failures (every connection refused ends a run
//! within milliseconds, and crest's CPU over them says nothing about the target).

use crate::capacity::StepNoise;
use crate::figures::{Percentiles, SegmentAnalysis};
use crest_model::results::{ClientStats, Results};
use crest_model::step::StepKind;
use crest_model::Outcome;
use serde::Serialize;

/// crest's CPU use, as a share of what its engine threads could use, that marks it as the limit.
const CPU_BUSY: f64 = 0.9;
/// Below these, a CPU share is noise: a run that ended at once (every connection refused)
/// divides a few milliseconds of CPU by a few milliseconds of run.
const CPU_MIN_DURATION_S: f64 = 1.0;
const CPU_MIN_S: f64 = 0.1;
/// Open-model send lag above this share of the median latency means crest's own lag is a visible
/// part of every latency (the p50 rule), or that it fell behind the schedule (the p99 rule, with
/// an absolute floor so that a fast target's jitter is not blamed on crest)...
const LAG_SHARE: f64 = 0.1;
const LAG_P99_MS: f64 = 10.0;
/// ...once the lag's median is above the clock's own noise: reading the clock and dispatching
/// an arrival take a few microseconds.
const LAG_P50_FLOOR_MS: f64 = 0.01;
/// Arrivals dropped at the cap on requests in flight limit the run from this share on: the
/// latencies then miss the requests that would have waited longest, which is the report's p99.9
/// and beyond. Fewer drops are reported (the summary's `dropped`) but do not void the figures
/// (issue 20: 3 drops of 15,000 arrivals were called a limit).
pub const DROP_SHARE: f64 = 0.001;
/// The engine threads' wait for a core, as a share of the core-time they could have had
/// ([`CoreWait::share`]), from which crest itself limited the run, in either model: from a
/// quarter on, one moment in four that the engine was ready to send or read it was held off its
/// core, so its throughput and latencies include crest's wait, not only the target's. The
/// kernel's own threads and a busy machine's other work take a few percent; a thread sharing its
/// core evenly with one busy process waits about half the time.
const CORE_STARVED: f64 = 0.25;

/// One way crest itself limited a run, with the figures that show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientLimit {
    /// crest's CPU was busy: `share` of what its `threads` engine threads could use.
    BusyCpu {
        /// CPU used / (duration x usable threads).
        share: f64,
        /// Engine threads that could run at once.
        threads: u64,
        /// CPU-seconds crest used.
        cpu_s: f64,
        /// Length of the run.
        duration_s: f64,
    },
    /// Open model: the send lag's median is a visible part of every latency.
    LateMedian {
        /// Median send lag.
        lag_p50_ms: f64,
        /// Median latency.
        latency_p50_ms: f64,
        /// The engine threads' wait for a core meanwhile, where the kernel told it.
        core_wait: Option<CoreWait>,
    },
    /// Open model: the send lag's tail shows crest fell behind its schedule.
    LateTail {
        /// p99 send lag.
        lag_p99_ms: f64,
        /// Median latency.
        latency_p50_ms: f64,
        /// The engine threads' wait for a core meanwhile, where the kernel told it.
        core_wait: Option<CoreWait>,
    },
    /// The engine threads waited for a CPU core that other threads held for `share` of the
    /// core-time they could have had (see [`CoreWait::share`]): the machine, not the target,
    /// set the pace.
    CoreStarved {
        /// Seconds the engine threads, together, waited.
        waited_s: f64,
        /// Of the core-time they could have had, past their wait for one another.
        share: f64,
        /// Engine threads.
        threads: u64,
        /// Cores crest could use.
        cores: u64,
        /// Length of the run.
        duration_s: f64,
    },
    /// Open model: arrivals not sent, at the cap on requests in flight or because crest was
    /// behind its schedule when the run's time ran out.
    Dropped {
        /// Arrivals dropped.
        dropped: u64,
        /// Of those, arrivals due before the deadline that crest never reached.
        behind: u64,
        /// Arrivals scheduled.
        arrivals: u64,
    },
    /// Requests that failed because crest ran out of file descriptors or local ports.
    LocalExhaustion {
        /// How many.
        failed: u64,
    },
    /// Users spent their time inside crest rather than in a request (Little's law).
    WaitingUsers {
        /// The step it was seen in.
        step: StepKind,
        /// Requests in flight on average: throughput x mean latency.
        in_flight: f64,
        /// Users there were.
        users: u64,
        /// The step's throughput, req/s.
        throughput_rps: f64,
        /// The step's mean latency, ms.
        mean_ms: f64,
    },
    /// A worker of a distributed run was limited by its own generator: the limits its own
    /// figures show (see [`generator_limits`]). The run's figures then miss what it did not send
    /// or sent late.
    Worker {
        /// The worker's index.
        index: u32,
        /// Its limits.
        limits: Vec<ClientLimit>,
    },
}

/// Time the engine threads were ready to send but waited for a core that other threads held
/// (other processes', the kernel's, crest's own): beside a late send, it says how much of the
/// lateness was time taken from the engine rather than time it spent working.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CoreWait {
    /// The engine threads' waits, added up.
    pub ms: f64,
    /// Of the core-time they could have had: the run's length x the engine threads, as many as
    /// there are cores. More threads than cores wait for one another, by the user's choice
    /// (`--threads`): at most the extra threads' whole time, which is taken off the wait first.
    pub share: f64,
}

/// The engine threads' wait for a core, when the kernel told it and the run is long enough for
/// a share of it to mean anything.
fn core_wait(c: &ClientStats, active_s: f64) -> Option<CoreWait> {
    let waited = c.core_wait_s?;
    let (threads, cores) = (c.threads.max(1), c.cores.max(1));
    let own = threads.saturating_sub(cores) as f64 * active_s;
    (active_s >= CPU_MIN_DURATION_S).then(|| CoreWait {
        ms: waited * 1e3,
        share: (waited - own).max(0.0) / (active_s * threads.min(cores) as f64),
    })
}

/// CPU used / (seconds x the engine threads that could run at once), with those threads; `None`
/// when the run or its CPU is too short for the share to mean anything.
pub fn cpu_share(c: &ClientStats, active_s: f64) -> Option<(f64, u64)> {
    let threads = c.threads.min(c.cores);
    // A quota holds the threads to part of the cores they could run on.
    let usable = c
        .cpu_quota_cores
        .filter(|q| *q > 0.0)
        .map_or(threads.max(1) as f64, |q| q.min(threads.max(1) as f64));
    (active_s >= CPU_MIN_DURATION_S && c.cpu_s >= CPU_MIN_S).then(|| (c.cpu_s / active_s / usable, threads))
}

/// What one generator measured of itself: the run's, or one worker's of a distributed run.
#[derive(Clone, Copy, Debug)]
pub struct Generator<'a> {
    /// What it used, when it ended normally.
    pub client: Option<&'a ClientStats>,
    /// Seconds it sent for.
    pub active_s: f64,
    /// Open model: how late its requests started, in ms.
    pub send_lag_ms: Option<&'a Percentiles>,
    /// Open model: its arrivals not sent, of them those it was behind its schedule for, and its
    /// arrivals; `None` in the closed model.
    pub drops: Option<Drops>,
}

/// Open-model arrivals and those not sent.
#[derive(Clone, Copy, Debug)]
pub struct Drops {
    /// Arrivals not sent.
    pub dropped: u64,
    /// Of those, arrivals due before the deadline that the generator never reached.
    pub behind: u64,
    /// Arrivals due.
    pub arrivals: u64,
    /// With `on_cap: queue`, arrivals that waited for a place at the cap; `None` when arrivals
    /// at the cap were dropped.
    pub queued: Option<u64>,
}

impl Drops {
    /// The drops that limit the run: with a queue at the cap, arrivals still waiting when the
    /// run's time ran out are the queue's, not crest's (a thread waiting for a place reaches no
    /// later arrival), once any arrival has waited there.
    fn limiting(&self) -> u64 {
        match self.queued {
            Some(q) if q > 0 => self.dropped.saturating_sub(self.behind),
            _ => self.dropped,
        }
    }

    /// Whether a send-lag percentile at `quantile` may be the queue's wait rather than
    /// crest's: when at least the share of arrivals above it waited at the cap.
    fn queued_past(&self, quantile: f64) -> bool {
        self.queued
            .is_some_and(|q| q as f64 >= (1.0 - quantile) * self.arrivals.max(1) as f64)
    }
}

/// A queue at the cap makes the median send lag the queue's once half the arrivals waited in
/// it, and the p99 once one in a hundred did; the rules on the send lag then judge the target's
/// queue, not crest, and are not applied (its wait for a core still is).
const MEDIAN: f64 = 0.5;
const P99: f64 = 0.99;

/// The limits one generator shows by its own figures, judged the same way for a run and for
/// each worker of a distributed run, against the run's median latency.
pub fn generator_limits(g: Generator<'_>, latency_p50_ms: f64) -> Vec<ClientLimit> {
    let mut out = Vec::new();
    // In the open model the send lag and the drops measure directly whether crest kept the
    // schedule, and its CPU share is high by design: the engine spins before each arrival.
    if let Some(c) = g.client.filter(|_| g.drops.is_none()) {
        if let Some((share, threads)) = cpu_share(c, g.active_s).filter(|(share, _)| *share >= CPU_BUSY) {
            out.push(ClientLimit::BusyCpu {
                share,
                threads,
                cpu_s: c.cpu_s,
                duration_s: g.active_s,
            });
        }
    }
    let core_wait = g.client.and_then(|c| core_wait(c, g.active_s));
    if let (Some(c), Some(w)) = (g.client, core_wait.filter(|w| w.share >= CORE_STARVED)) {
        out.push(ClientLimit::CoreStarved {
            waited_s: c.core_wait_s.unwrap_or_default(),
            share: w.share,
            threads: c.threads,
            cores: c.cores,
            duration_s: g.active_s,
        });
    }
    if let Some(lag) = g.send_lag_ms {
        let median = latency_p50_ms;
        let queued_past = |q| g.drops.is_some_and(|d| d.queued_past(q));
        if lag.p50 > LAG_P50_FLOOR_MS && lag.p50 > LAG_SHARE * median && !queued_past(MEDIAN) {
            out.push(ClientLimit::LateMedian {
                lag_p50_ms: lag.p50,
                latency_p50_ms: median,
                core_wait,
            });
        } else if lag.p99 > LAG_P99_MS && lag.p99 > LAG_SHARE * median && !queued_past(P99) {
            out.push(ClientLimit::LateTail {
                lag_p99_ms: lag.p99,
                latency_p50_ms: median,
                core_wait,
            });
        }
    }
    if let Some(d) = g
        .drops
        .filter(|d| d.limiting() > 0 && d.limiting() as f64 >= DROP_SHARE * d.arrivals as f64)
    {
        out.push(ClientLimit::Dropped {
            dropped: d.dropped,
            behind: d.behind,
            arrivals: d.arrivals,
        });
    }
    out
}

/// Whether the run's arrivals at the cap on requests in flight waited for a place
/// (`on_cap: queue`) rather than being dropped.
pub fn queueing(r: &Results) -> bool {
    r.config.on_cap == Some(crest_model::plan::OnCap::Queue)
}

/// The ways crest limited this run; empty when the result is valid. `latency_ms` and
/// `send_lag_ms` are the run's, `segments` its steps' and `steps` whether each is judged.
pub fn client_limits(
    r: &Results,
    latency_ms: &Percentiles,
    send_lag_ms: Option<&Percentiles>,
    segments: &[SegmentAnalysis],
    steps: &[StepNoise],
) -> Vec<ClientLimit> {
    let mut out = Vec::new();
    let succeeded = r
        .stats
        .iter()
        .any(|s| r.counts(s) && s.outcome.is_success() && s.count > 0);
    if !succeeded {
        return out;
    }
    out.extend(generator_limits(
        Generator {
            client: r.client.as_ref(),
            active_s: r.active_s(),
            send_lag_ms,
            drops: r.open.as_ref().map(|o| Drops {
                dropped: o.dropped,
                behind: o.behind,
                arrivals: o.arrivals,
                queued: queueing(r).then_some(o.queued),
            }),
        },
        latency_ms.p50,
    ));
    let exhausted: u64 = r
        .errors
        .iter()
        .filter(|e| e.outcome == Outcome::LocalExhaustion)
        .map(|e| e.count)
        .sum();
    if exhausted > 0 {
        out.push(ClientLimit::LocalExhaustion { failed: exhausted });
    }
    // Little's law says users were idle, not why. Users run out of requests when the run counts
    // them (a shared `-n` leaves users idle while the last requests finish; with `-n 10x` users
    // whose requests fail at once are done early), so such runs are not judged by it; nor are
    // steps too thin to judge, or steps without a success.
    let counted = r.config.requests.is_some() || r.config.iterations.is_some();
    let judged = |g: &SegmentAnalysis| steps.get(g.index).is_some_and(|n| n.unjudged.is_none());
    let waiting = segments
        .iter()
        .filter(|g| !counted && judged(g) && g.steady_failures < g.steady_requests)
        .find_map(|g| g.littles_law.as_ref().filter(|l| l.flagged).map(|l| (g, l)));
    if let Some((g, l)) = waiting {
        out.push(ClientLimit::WaitingUsers {
            step: g.kind.clone(),
            in_flight: l.in_flight,
            users: l.users,
            throughput_rps: g.throughput_rps,
            mean_ms: g.latency_ms.mean,
        });
    }
    out
}
