//! Synthetic results documents with known shapes, for testing analysis and reports.

use crest_model::expr::Threshold;
use crest_model::hist::{new_histogram, record};
use crest_model::monitor::MonitorRecord;
use crest_model::results::{
    EndReason, Environment, ErrorClass, HttpConfig, Interval, RequestPoint, Results, RunConfig, Segment, Stat,
    POINTS_KEPT, SCHEMA_ID, SCHEMA_VERSION,
};
use crest_model::{EncodedHistogram, Outcome};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::Duration;

/// What happens in one second of a synthetic run.
#[derive(Clone, Copy, Debug)]
pub struct Second {
    /// Successful requests.
    pub ok: u64,
    /// Their latency, ms (spread ±5% around it).
    pub latency_ms: f64,
    /// Failed requests.
    pub failed: u64,
    /// How long the failures took, ms (spread ±8%).
    pub failure_ms: f64,
}

impl Second {
    pub fn ok(ok: u64, latency_ms: f64) -> Self {
        Second {
            ok,
            latency_ms,
            failed: 0,
            failure_ms: 0.0,
        }
    }
}

#[derive(Debug, Default)]
struct Acc {
    count: u64,
    latency: Option<Histogram<u64>>,
    ttfb: Option<Histogram<u64>>,
    connect: Option<Histogram<u64>>,
    bytes: u64,
}

/// Builds a results document second by second.
#[derive(Debug)]
pub struct ResultsBuilder {
    failure: Outcome,
    quick: bool,
    segments: Vec<Segment>,
    intervals: Vec<Interval>,
    stats: BTreeMap<(u32, Outcome), Acc>,
    t: u64,
    monitor: Option<MonitorRecord>,
    /// Each request one by one, when asked for (see [`ResultsBuilder::points`]).
    points: Option<Vec<RequestPoint>>,
}

impl ResultsBuilder {
    /// A closed-model run whose failures are `failure` (e.g. `Outcome::Status(500)`). `quick`
    /// makes it look like quick mode (an HTTP config, no think time).
    pub fn new(failure: Outcome, quick: bool) -> Self {
        ResultsBuilder {
            failure,
            quick,
            segments: Vec::new(),
            intervals: Vec::new(),
            stats: BTreeMap::new(),
            t: 0,
            monitor: None,
            points: None,
        }
    }

    /// Keeps each request one by one, as a run of at most [`POINTS_KEPT`] requests does; each
    /// starts its latency before the end of the second it is counted in.
    pub fn points(mut self) -> Self {
        self.points = Some(Vec::new());
        self
    }

    /// Adds monitored series.
    pub fn monitor(mut self, record: MonitorRecord) -> Self {
        self.monitor = Some(record);
        self
    }

    /// Adds a segment of `secs` seconds at `users`, each second shaped by `f(second index)`.
    pub fn segment(mut self, users: u64, secs: u64, f: impl Fn(u64) -> Second) -> Self {
        let seg = self.segments.len() as u32;
        self.segments.push(Segment {
            setup: None,
            kind: crest_model::step::StepKind::Level(crest_model::step::Level::Users(users)),
            start_s: self.t as f64,
            end_s: (self.t + secs) as f64,
            users: Some(users),
            rate: None,
        });
        for k in 0..secs {
            let s = f(k);
            let mut lat = new_histogram();
            let mut ttfb = new_histogram();
            let mut outcomes = BTreeMap::new();
            for (n, ms, outcome, spread) in [
                (s.ok, s.latency_ms, Outcome::Success, 0.05),
                (s.failed, s.failure_ms, self.failure, 0.08),
            ] {
                for j in 0..n {
                    // Evenly spread values, deterministic.
                    let f = if n > 1 {
                        j as f64 / (n - 1) as f64 * 2.0 - 1.0
                    } else {
                        0.0
                    };
                    let v = Duration::from_secs_f64(ms * (1.0 + spread * f) / 1000.0);
                    record(&mut lat, v);
                    record(&mut ttfb, v / 2);
                    if let Some(p) = self.points.as_mut() {
                        let end_us = self.t * 1_000_000 + (j + 1) * 1_000_000 / (n + 1);
                        let took = v.as_micros() as u64;
                        p.push(RequestPoint(end_us.saturating_sub(took), took, 0, outcome));
                    }
                    let acc = self.stats.entry((seg, outcome)).or_default();
                    acc.count += 1;
                    acc.bytes += 100;
                    record(acc.latency.get_or_insert_with(new_histogram), v);
                    record(acc.ttfb.get_or_insert_with(new_histogram), v / 2);
                    if self.t == 0 && k == 0 && j < users {
                        record(
                            acc.connect.get_or_insert_with(new_histogram),
                            Duration::from_micros(150),
                        );
                    }
                }
                if n > 0 && !outcome.is_success() {
                    outcomes.insert(outcome.key(), n);
                }
            }
            self.intervals.push(Interval {
                t_s: self.t as f64,
                requests: s.ok + s.failed,
                failures: s.failed,
                bytes_sent: 50 * (s.ok + s.failed),
                bytes_received: 100 * (s.ok + s.failed),
                messages_sent: 0,
                messages_received: 0,
                dropped: 0,
                outcomes,
                latency: EncodedHistogram::encode(&lat),
                ttfb: EncodedHistogram::encode(&ttfb),
                iterations: None,
            });
            self.t += 1;
        }
        self
    }

    /// The document.
    pub fn build(self) -> Results {
        let mut status_codes = BTreeMap::new();
        let mut errors = Vec::new();
        let mut stats = Vec::new();
        let empty = new_histogram();
        for ((segment, outcome), acc) in &self.stats {
            match outcome {
                Outcome::Success => *status_codes.entry("200".to_string()).or_insert(0) += acc.count,
                Outcome::Status(c) => *status_codes.entry(c.to_string()).or_insert(0) += acc.count,
                _ => {}
            }
            stats.push(Stat {
                segment: *segment,
                name: 0,
                outcome: *outcome,
                count: acc.count,
                bytes_sent: acc.count * 50,
                bytes_received: acc.bytes,
                messages_sent: 0,
                messages_received: 0,
                latency: EncodedHistogram::encode(acc.latency.as_ref().unwrap_or(&empty)),
                ttfb: acc.ttfb.as_ref().map(EncodedHistogram::encode),
                connect: acc.connect.as_ref().map(EncodedHistogram::encode),
                dns: None,
                // Every request of a fixture receives the same number of bytes.
                size: (acc.count > 0).then(|| {
                    let mut h = crest_model::hist::new_histogram();
                    h.saturating_record_n((acc.bytes / acc.count).max(1), acc.count);
                    EncodedHistogram::encode(&h)
                }),
            });
        }
        let failed: u64 = self
            .stats
            .iter()
            .filter(|((_, o), _)| !o.is_success())
            .map(|(_, a)| a.count)
            .sum();
        if failed > 0 {
            errors.push(ErrorClass {
                outcome: self.failure,
                count: failed,
                example: format!("example {}", self.failure.describe()),
            });
        }
        let max_users = self.segments.iter().filter_map(|s| s.users).max().unwrap_or(0);
        Results {
            schema: SCHEMA_ID.into(),
            version: SCHEMA_VERSION,
            crest_version: "0.0.0-test".into(),
            started_at: "2026-01-01T00:00:00.000Z".into(),
            duration_s: self.t as f64,
            ended_by: EndReason::Duration,
            stopped_by: None,
            config: RunConfig {
                command_line: vec!["crest".into(), "run".into(), "fixture".into()],
                model: crest_model::results::LoadKind::Closed,
                concurrency: max_users,
                rate: None,
                on_cap: None,
                requests: None,
                iterations: None,
                duration_s: Some(self.t as f64),
                threads: 2,
                worker: None,
                http: self.quick.then(|| HttpConfig {
                    method: "GET".into(),
                    url: "http://127.0.0.1:8080/".into(),
                    headers: vec![],
                    body_bytes: 0,
                    timeout_s: 60.0,
                    keepalive: true,
                    insecure: false,
                }),
                scenario: None,
                thresholds: ["p95 < 250ms", "error_rate < 1%"]
                    .map(|t| Threshold::parse(t).expect("a valid threshold"))
                    .into(),
                stop_conditions: vec![],
                provenance: None,
            },
            environment: Some(Environment {
                os: "Test OS".into(),
                kernel: "6.0.0".into(),
                cpu: "Test CPU".into(),
                cores: 2,
                memory_bytes: 8 << 30,
            }),
            names: vec!["GET /".into()],
            part_of: Vec::new(),
            flows: Vec::new(),
            segments: self.segments,
            stats,
            iterations: Vec::new(),
            status_codes,
            errors,
            abandoned: 0,
            open: None,
            intervals: self.intervals,
            interval_s: 1.0,
            workers: Vec::new(),
            find: None,
            client: None,
            monitor: self.monitor,
            users: None,
            failed: Vec::new(),
            points: match self.points {
                Some(mut p) if p.len() as u64 <= POINTS_KEPT => {
                    p.sort_unstable();
                    p
                }
                _ => Vec::new(),
            },
        }
    }
}

/// A small run whose requests are kept one by one: 5 users for 8 s at 30 req/s and 20 ms, but
/// in the fifth and sixth seconds 2 of 30 requests each end in a 503 after 900-1100 ms.
pub fn small_fixture() -> Results {
    ResultsBuilder::new(Outcome::Status(503), true)
        .points()
        .segment(5, 8, |k| {
            if k == 4 || k == 5 {
                Second {
                    ok: 28,
                    latency_ms: 20.0,
                    failed: 2,
                    failure_ms: 1000.0,
                }
            } else {
                Second::ok(30, 20.0)
            }
        })
        .build()
}

/// A stepping run with a known shape: 10, 20, 40, 80 users give 100, 200, 380, 385 req/s at
/// 100, 100, 105, 210 ms; at 160 users 4 of every 14 requests fail after 33-38 s (a timeout
/// near 35 s), which leaves 14 req/s. The knee is at 40 users, saturation at 80, the breaking
/// point at 160.
pub fn stepping_fixture() -> Results {
    let step = |users, rps: u64, ms| {
        move |k: u64| {
            // Two seconds of warm-up at half throughput and 1.6x latency.
            if k < 2 {
                Second::ok(rps / 2, ms * 1.6)
            } else {
                let _ = users;
                Second::ok(rps, ms)
            }
        }
    };
    ResultsBuilder::new(Outcome::Status(500), true)
        .segment(10, 10, step(10, 100, 100.0))
        .segment(20, 10, step(20, 200, 100.0))
        .segment(40, 10, step(40, 380, 105.0))
        .segment(80, 10, step(80, 385, 210.0))
        .segment(160, 10, |_| Second {
            ok: 10,
            latency_ms: 420.0,
            failed: 4,
            failure_ms: 35_500.0,
        })
        .build()
}

/// Checks that a results document adds up: every unit of work is counted once, in its step, in
/// the interval it ended in, and in its error class. Every results document the test suite
/// produces goes through this, so a change that loses or double-counts requests fails
/// everywhere at once. Returns what does not add up.
pub fn check_counts(r: &Results) -> Result<(), CountsError> {
    // What any results document must hold to be read (totals against the intervals, error
    // classes and status codes; histograms against counts) is the model's own check.
    r.check()?;
    let counted = || r.stats.iter().filter(|s| r.counts(s));
    let requests: u64 = counted().map(|s| s.count).sum();
    let mut problems = Vec::new();
    if let Some(s) = r.stats.iter().find(|s| s.segment as usize >= r.segments.len()) {
        problems.push(format!("a stat is in step {} of {}", s.segment, r.segments.len()));
    }
    let mut per_step = vec![0u64; r.segments.len()];
    for s in counted() {
        if let Some(n) = per_step.get_mut(s.segment as usize) {
            *n += s.count;
        }
    }
    if per_step.iter().sum::<u64>() != requests {
        problems.push(format!("steps hold {per_step:?}, the run {requests} requests"));
    }
    for i in &r.intervals {
        let by_outcome: u64 = i.outcomes.values().sum();
        if by_outcome != i.failures {
            problems.push(format!(
                "the interval at {} s has {} failures but {by_outcome} by outcome",
                i.t_s, i.failures
            ));
        }
    }
    // Iterations: the steps' and the intervals' hold the same ones, and none ends that did
    // not start.
    let it = |f: fn(&crest_model::results::IterationStat) -> u64| r.iterations.iter().map(f).sum::<u64>();
    let (started, completed, failed) = (it(|s| s.started), it(|s| s.completed), it(|s| s.failed));
    let per_interval = |f: fn(&crest_model::results::IntervalIterations) -> u64| {
        r.intervals
            .iter()
            .filter_map(|i| i.iterations.as_ref())
            .map(f)
            .sum::<u64>()
    };
    if (
        per_interval(|i| i.started),
        per_interval(|i| i.completed),
        per_interval(|i| i.failed),
    ) != (started, completed, failed)
    {
        problems.push(format!(
            "intervals hold other iterations than the steps' {started} started, {completed} completed, {failed} failed"
        ));
    }
    if completed + failed > started {
        problems.push(format!("{} iterations ended of {started} started", completed + failed));
    }
    for e in &r.errors {
        let n: u64 = counted().filter(|s| s.outcome == e.outcome).map(|s| s.count).sum();
        if n != e.count {
            problems.push(format!(
                "{} counts {} in its class, {n} in the steps",
                e.outcome, e.count
            ));
        }
    }
    // Requests kept one by one are all of them, each in the run's totals of its outcome.
    if !r.points.is_empty() {
        let all: u64 = r.stats.iter().map(|s| s.count).sum();
        if r.points.len() as u64 != all {
            problems.push(format!("{} requests kept one by one of {all}", r.points.len()));
        }
        for s in &r.stats {
            let n = r
                .points
                .iter()
                .filter(|p| p.name() == s.name && p.outcome() == s.outcome)
                .count() as u64;
            let total: u64 = r
                .stats
                .iter()
                .filter(|t| t.name == s.name && t.outcome == s.outcome)
                .map(|t| t.count)
                .sum();
            if n != total {
                problems.push(format!(
                    "{n} points of name {} {}, {total} in the stats",
                    s.name, s.outcome
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CountsError::DoNotAddUp(problems))
    }
}

/// A results document that does not add up.
#[derive(Debug, thiserror::Error)]
pub enum CountsError {
    /// A field does not hold together with the rest, as the model itself checks.
    #[error(transparent)]
    Invalid(#[from] crest_model::results::Invalid),
    /// Counts that should be equal are not: each says which and by how much.
    #[error("{}", .0.join("; "))]
    DoNotAddUp(Vec<String>),
}

/// Worker `index`'s record of a ten-second distributed run: `requests` sent, none failed, each
/// `lag_us` late (an open-model worker: its arrivals are its requests) or, with `None`, a
/// closed-model one; its generator used `cpu_s` of CPU on one engine thread.
pub fn worker_record(index: u32, requests: u64, lag_us: Option<u64>, cpu_s: f64) -> crest_model::merge::WorkerRecord {
    let send_lag = lag_us.map(|us| {
        let mut h = new_histogram();
        for _ in 0..requests {
            record(&mut h, Duration::from_micros(us));
        }
        EncodedHistogram::encode(&h)
    });
    crest_model::merge::WorkerRecord {
        index,
        started_at: "2026-01-01T00:00:00Z".into(),
        duration_s: 10.0,
        ended_by: EndReason::Duration,
        requests,
        failures: 0,
        arrivals: lag_us.map(|_| requests),
        dropped: 0,
        behind: 0,
        queued: 0,
        iterations: None,
        send_lag,
        client: Some(crest_model::results::ClientStats {
            cpu_quota_cores: None,
            cpu_s,
            cores: 2,
            threads: 1,
            peak_rss_bytes: 64 << 20,
            core_wait_s: None,
        }),
        lost: None,
    }
}

/// A closed-model run merged from three workers of one user each, ten seconds of 100 requests a
/// second at 30 ms: worker 0 sent 400 with its generator at 20% of its CPU; worker 1 sent 400 at 97% of it, so
/// its own figures show it limited its part (the merged run has no CPU figure of its own to
/// tell); worker 2 was lost after 4 s and 200 requests, a third of the load missing for 6 s.
pub fn merged_fixture() -> Results {
    let mut r = ResultsBuilder::new(Outcome::Status(500), true)
        .segment(3, 10, |_| Second::ok(100, 30.0))
        .build();
    r.client = None;
    let mut lost = worker_record(2, 200, None, 0.0);
    lost.duration_s = 4.0;
    lost.ended_by = EndReason::Unfinished;
    lost.client = None;
    lost.lost = Some(crest_model::merge::Lost {
        at_s: 4.0,
        share: 1.0 / 3.0,
        missing_s: 6.0,
    });
    r.workers = vec![worker_record(0, 400, None, 2.0), worker_record(1, 400, None, 9.7), lost];
    r
}

/// [`stepping_fixture`] with the service watched: its process `api` runs under a CPU quota of
/// half a core (on 2 cores) and uses CPU in step with its throughput, reaching 98% of the
/// quota at saturation (80 users) from 12% at 10 users, throttled more as it goes; its memory
/// grows with the load. A second process, `cache`, exits at 44 s and is back at 46 s as a
/// new pid.
pub fn saturating_fixture() -> Results {
    use crest_model::monitor::{EventKind, MonitorSeries, ProcessEvent, ProcessLimits, SeriesKey, SourceRecord, Unit};
    let mut r = stepping_fixture();
    // Per step of 10 s: CPU percent of a core, throttled percent, resident MiB.
    let steps = [
        (12.0, 0.0, 60.0),
        (25.0, 0.0, 70.0),
        (47.0, 25.0, 88.0),
        (49.0, 70.0, 90.0),
        (49.0, 75.0, 96.0),
    ];
    let at = |t: f64| steps[((t / 10.0) as usize).min(steps.len() - 1)];
    let series = |metric: &str, title: &str, unit: Unit, f: &dyn Fn(f64) -> f64| MonitorSeries {
        key: SeriesKey::new(metric).with("process", "api"),
        source: 0,
        title: title.into(),
        unit,
        limit: None,
        points: (0..50).map(|k| k as f64 + 0.5).map(|t| (t, f(t))).collect(),
    };
    const MIB: f64 = 1048576.0;
    let mut cpu = series(
        "process_cpu_percent",
        "CPU of api (100% = one core)",
        Unit::Percent,
        &|t| at(t).0,
    );
    cpu.limit = Some(50.0);
    let source = |label: &str, limits| SourceRecord {
        kind: "process".into(),
        label: label.into(),
        name: None,
        notes: Vec::new(),
        limits,
    };
    r.monitor = Some(crest_model::monitor::MonitorRecord {
        interval_s: 1.0,
        sources: vec![
            source(
                "api",
                Some(ProcessLimits {
                    cores: Some(2.0),
                    cpu_quota_cores: Some(0.5),
                    memory_limit_bytes: Some(512.0 * MIB),
                    cgroup_version: Some(2),
                    ..Default::default()
                }),
            ),
            source("cache", None),
        ],
        series: vec![
            cpu,
            series(
                "process_cpu_throttled_percent",
                "CPU periods throttled of api",
                Unit::Percent,
                &|t| at(t).1,
            ),
            series(
                "process_resident_memory_bytes",
                "resident memory of api",
                Unit::Bytes,
                &|t| at(t).2 * MIB,
            ),
            series(
                "process_private_memory_bytes",
                "private memory of api",
                Unit::Bytes,
                &|t| (at(t).2 - 30.0) * MIB,
            ),
        ],
        events: vec![
            ProcessEvent {
                kind: EventKind::Exited,
                source: 1,
                at_s: 44.0,
                pid: Some(4100),
                new_pid: None,
                oom_kills: None,
                memory_limit_bytes: None,
            },
            ProcessEvent {
                kind: EventKind::Restarted,
                source: 1,
                at_s: 46.0,
                pid: Some(4100),
                new_pid: Some(4177),
                oom_kills: None,
                memory_limit_bytes: None,
            },
        ],
    });
    r
}

/// [`saturating_fixture`] with its process pinned to one core and no quota, using 20% of the
/// core up to 30 s and `own` percent from then on, while the core was 30% busy and then `busy`
/// percent by every process on it: a core that other work shares.
pub fn shared_core_fixture(own: f64, busy: f64) -> Results {
    let mut r = saturating_fixture();
    let m = r.monitor.as_mut().expect("the fixture is watched");
    if let Some(l) = m.sources[0].limits.as_mut() {
        l.cores = Some(1.0);
        l.cpu_quota_cores = None;
    }
    m.series.retain(|s| s.key.metric != "process_cpu_throttled_percent");
    let mut cores = None;
    for s in m.series.iter_mut().filter(|s| s.key.metric == "process_cpu_percent") {
        s.limit = Some(100.0);
        for p in &mut s.points {
            p.1 = if p.0 >= 30.0 { own } else { 20.0 };
        }
        let mut c = s.clone();
        c.key = crest_model::monitor::SeriesKey::new("process_cores_busy_percent").with("process", "api");
        c.title = "busy time of the core api may run on (any process's)".into();
        for p in &mut c.points {
            p.1 = if p.0 >= 30.0 { busy } else { 30.0 };
        }
        cores = Some(c);
    }
    m.series.extend(cores);
    r
}
