//! The hub: the run loop publishes each journal entry here once; the page, its API and
//! `/metrics` read what it keeps.
//!
//! Publishing folds the entry into small running figures under a lock held for microseconds, on
//! the run loop's thread, never an engine thread: a reader that is slow or gone costs the run
//! nothing, because readers only copy what is kept when they ask. What is kept is bounded:
//! the per-second series is halved in resolution whenever it reaches [`KEPT_POINTS`] (as k6's
//! dashboard keeps 2,880), and the tables have a row per step, name and outcome.

use crest_engine::{Control, Stop};
use crest_model::hist::Hist;
use crest_model::journal::{steered, Entry, Fold, IntervalRecord, Start, Step};
use crest_model::results::{ClientStats, EndReason, Results, Segment};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Points of the series kept at most; past it, neighbours merge two by two.
pub const KEPT_POINTS: usize = 2_880;

/// One point of the series: the figures of one interval (or, once merged, of a few).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Point {
    /// Start, in seconds from the start of the run (of the whole search or sweep).
    pub t: f64,
    /// Seconds it covers.
    pub span: f64,
    /// Successful requests per second.
    pub ok: f64,
    /// Failed requests per second.
    pub failed: f64,
    /// Scenario iterations ended per second.
    pub iterations: Option<f64>,
    /// Latency percentiles, ms (a merged point keeps the larger of each).
    pub p50: f64,
    /// p90, ms.
    pub p90: f64,
    /// p99, ms.
    pub p99: f64,
    /// Slowest, ms.
    pub max: f64,
    /// Time to first byte p50, ms.
    pub ttfb_p50: f64,
    /// Time to first byte p90, ms.
    pub ttfb_p90: f64,
    /// Time to first byte p99, ms.
    pub ttfb_p99: f64,
    /// Users running at its end (closed model).
    pub users: Option<u64>,
    /// Arrivals per second asked for (open model).
    pub rate: Option<f64>,
    /// Requests in flight, by Little's law: throughput times mean latency.
    pub in_flight: f64,
    /// Open model: arrivals dropped per second.
    pub dropped: f64,
    /// Open model: send lag p99, ms.
    pub send_lag_p99: Option<f64>,
}

impl Point {
    /// Merges `next`, the point after this one, into it.
    fn absorb(&mut self, next: &Point) {
        let (a, b) = (self.span, next.span);
        let total = (a + b).max(f64::EPSILON);
        let avg = |x: f64, y: f64| (x * a + y * b) / total;
        self.ok = avg(self.ok, next.ok);
        self.failed = avg(self.failed, next.failed);
        self.iterations = match (self.iterations, next.iterations) {
            (None, None) => None,
            (x, y) => Some(avg(x.unwrap_or(0.0), y.unwrap_or(0.0))),
        };
        self.in_flight = avg(self.in_flight, next.in_flight);
        self.dropped = avg(self.dropped, next.dropped);
        // Percentiles of merged intervals cannot be averaged; the larger is the one a reader
        // looking for trouble needs.
        for (x, y) in [
            (&mut self.p50, next.p50),
            (&mut self.p90, next.p90),
            (&mut self.p99, next.p99),
            (&mut self.max, next.max),
            (&mut self.ttfb_p50, next.ttfb_p50),
            (&mut self.ttfb_p90, next.ttfb_p90),
            (&mut self.ttfb_p99, next.ttfb_p99),
        ] {
            *x = x.max(y);
        }
        self.send_lag_p99 = match (self.send_lag_p99, next.send_lag_p99) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        };
        self.users = next.users;
        self.rate = next.rate;
        self.span += next.span;
    }
}

/// The series, bounded: every point covers `stride` intervals; a point still filling is kept
/// aside.
#[derive(Debug, Default)]
struct Series {
    points: Vec<Point>,
    /// Intervals per kept point.
    stride: u32,
    filling: Option<(Point, u32)>,
    /// Bumped each time the points are merged, so a reader knows to fetch them all again.
    epoch: u64,
    /// Intervals ever added.
    added: u64,
}

impl Series {
    fn add(&mut self, p: Point) {
        self.added += 1;
        let stride = self.stride.max(1);
        let (mut acc, n) = match self.filling.take() {
            Some((mut acc, n)) => {
                acc.absorb(&p);
                (acc, n + 1)
            }
            None => (p, 1),
        };
        if n < stride {
            self.filling = Some((acc, n));
            return;
        }
        acc.span = acc.span.max(0.0);
        self.points.push(acc);
        if self.points.len() >= KEPT_POINTS {
            let old = std::mem::take(&mut self.points);
            for pair in old.chunks(2) {
                let mut first = pair[0].clone();
                if let Some(second) = pair.get(1) {
                    first.absorb(second);
                }
                self.points.push(first);
            }
            self.stride = stride * 2;
            self.epoch += 1;
        }
    }

    /// The kept points and the one filling, from the `from`-th kept point.
    fn since(&self, from: usize) -> Vec<Point> {
        let mut v: Vec<Point> = self.points.get(from..).unwrap_or_default().to_vec();
        v.extend(self.filling.as_ref().map(|(p, _)| p.clone()));
        v
    }
}

/// Requests of one row of a table: a step, a name, or a name and outcome.
#[derive(Debug, Clone)]
pub(crate) struct Tally {
    pub(crate) count: u64,
    pub(crate) failures: u64,
    pub(crate) bytes_sent: u64,
    pub(crate) bytes_received: u64,
    /// Latency in µs: sparse while few buckets are used, as a run's per-name totals are, so a
    /// page over thousands of names costs what they hold.
    pub(crate) latency: Hist,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            count: 0,
            failures: 0,
            bytes_sent: 0,
            bytes_received: 0,
            latency: Hist::new(),
        }
    }
}

impl Tally {
    fn row(&self, label: String, seconds: f64) -> Row {
        let latency = self.latency.histogram();
        let ms = |q: f64| {
            if latency.is_empty() {
                0.0
            } else {
                latency.value_at_quantile(q) as f64 / 1000.0
            }
        };
        Row {
            label,
            requests: self.count,
            failures: self.failures,
            rps: if seconds > 0.0 {
                self.count as f64 / seconds
            } else {
                0.0
            },
            p50: ms(0.5),
            p90: ms(0.9),
            p99: ms(0.99),
            max: if latency.is_empty() {
                0.0
            } else {
                latency.max() as f64 / 1000.0
            },
        }
    }
}

/// One row of a table on the page.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// A step's or a name's label.
    pub label: String,
    /// Requests.
    pub requests: u64,
    /// Of which failed.
    pub failures: u64,
    /// Requests per second over the row's time (a step's span, or the run so far).
    pub rps: f64,
    /// Latency p50, ms.
    pub p50: f64,
    /// p90, ms.
    pub p90: f64,
    /// p99, ms.
    pub p99: f64,
    /// Slowest, ms.
    pub max: f64,
}

/// One part of the run: the run itself, or one probe of a search or point of a sweep.
#[derive(Debug)]
pub(crate) struct Part {
    pub(crate) start: Start,
    /// Offset of this part in the whole run, s.
    offset: f64,
    control: Option<Arc<Control>>,
    stop: Option<Stop>,
    steps: BTreeMap<u32, Tally>,
    /// Steps started by hand, as journaled.
    by_hand: Vec<Step>,
    /// Seconds reached in this part.
    reached: f64,
    /// crest's CPU-seconds when it started.
    cpu_at_start: f64,
}

/// The latest value of a monitored series.
#[derive(Clone, Debug, Serialize)]
pub struct Monitored {
    /// Its title.
    pub title: String,
    /// Its unit, as the results name it.
    pub unit: String,
    /// The value.
    pub value: f64,
    /// The value in the reports' words, its unit with it (`1.18 GiB`, `12.5%`).
    pub shown: String,
    /// The metric and labels, for `/metrics`.
    #[serde(skip)]
    pub(crate) key: crest_model::monitor::SeriesKey,
}

/// Everything kept; behind the hub's lock.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    series: Series,
    /// The part running now folded as its results will be, for the verdict so far. Its
    /// requests one by one are left out: the analysis of a run going on does not need them.
    fold: Fold,
    pub(crate) parts: Vec<Part>,
    /// Steps of parts that ended, as rows.
    closed_steps: Vec<Row>,
    pub(crate) by_name_outcome: BTreeMap<(String, String), Tally>,
    pub(crate) total: Tally,
    /// Messages sent and received on message streams (WebSocket, server-sent events, gRPC).
    pub(crate) messages: (u64, u64),
    pub(crate) dropped: u64,
    pub(crate) iterations: u64,
    errors: BTreeMap<String, (u64, String)>,
    pub(crate) monitor: BTreeMap<String, Monitored>,
    ended: Option<Ended>,
    /// Times the ended state was read by the page.
    pub(crate) ended_reads: u64,
    /// Times the state was read at all.
    reads: u64,
}

/// How the run ended, for the page.
#[derive(Clone, Debug, Serialize)]
pub struct Ended {
    /// Why it ended, in words.
    pub reason: String,
    /// The run directory.
    pub dir: Option<String>,
    /// The terminal summary.
    pub summary: Option<String>,
    /// report.html, shown in the page.
    pub report_html: Option<String>,
}

/// The run's state as the page and `GET /api/state` see it.
#[derive(Clone, Debug, Serialize)]
pub struct State {
    /// What the run is: `run`, the command line (redacted), the model.
    pub command_line: Vec<String>,
    /// `closed` or `open`.
    pub model: String,
    /// The current step's name and index.
    pub step: Option<Row>,
    /// Index of the current step in `steps`.
    pub step_index: Option<usize>,
    /// Users running now (closed model).
    pub users: Option<u64>,
    /// Users asked for by hand, with their spawn rate.
    pub users_asked: Option<(u64, f64)>,
    /// Arrival rate asked for (open model): set by hand, or the plan's.
    pub rate: Option<f64>,
    /// True while paused.
    pub paused: bool,
    /// Seconds since the start.
    pub elapsed_s: f64,
    /// Totals so far.
    pub total: Row,
    /// Iterations ended so far (scenario flows).
    pub iterations: u64,
    /// Dropped arrivals so far (open model).
    pub dropped: u64,
    /// One row per step, in order, the current one last.
    pub steps: Vec<Row>,
    /// One row per request name.
    pub names: Vec<Row>,
    /// Failures by class: outcome, count, first message.
    pub errors: Vec<(String, u64, String)>,
    /// Every monitored series' latest value.
    pub monitor: Vec<Monitored>,
    /// Series points from `from`; all of them when `epoch` moved.
    pub points: Vec<Point>,
    /// Which kept point `points` starts at.
    pub from: usize,
    /// Changes when kept points merged: fetch from 0 again.
    pub epoch: u64,
    /// The last of `points` is still filling (a merged point): fetch it again.
    pub filling: bool,
    /// Set once the run has ended.
    pub ended: Option<Ended>,
    /// The validity verdict and findings so far (of the part running now), as last judged
    /// (see [`crate::verdict`]); None before the first interval.
    pub verdict: Option<crate::verdict::Verdict>,
}

/// Publishes a run's journal entries to its readers.
#[derive(Debug, Default)]
pub struct Hub {
    kept: Mutex<Kept>,
    /// The last verdict, and when and over what it was judged; its lock is held while judging,
    /// so readers asking at once judge once.
    pub(crate) verdict: Mutex<Option<crate::verdict::Cached>>,
}

impl Hub {
    /// A hub with nothing published.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn kept(&self) -> MutexGuard<'_, Kept> {
        // The data stays whole if a reader panicked while holding the lock.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A run (or one part of a search or sweep) starts, steered through `control` and stopped
    /// through `stop`.
    pub fn begin(&self, start: &Start, control: Option<Arc<Control>>, stop: Option<Stop>) {
        let mut k = self.kept();
        let offset = match (&start.part, k.parts.last()) {
            (Some(p), _) => p.start_s,
            (None, Some(last)) => last.offset + last.reached,
            (None, None) => 0.0,
        };
        let closed = k.parts.last().map(part_rows).unwrap_or_default();
        k.closed_steps.extend(closed);
        k.parts.push(Part {
            start: start.clone(),
            offset,
            control,
            stop,
            steps: BTreeMap::new(),
            by_hand: Vec::new(),
            reached: 0.0,
            cpu_at_start: crest_monitor::own::cpu_s(),
        });
        k.fold = Fold::default();
        k.ended = None;
    }

    /// Publishes one entry of the journal, as it is written.
    pub fn publish(&self, entry: &Entry) {
        let mut k = self.kept();
        match entry {
            Entry::Start(s) => {
                drop(k);
                self.begin(s, None, None);
            }
            Entry::Interval(r) => {
                // A record that cannot be added up is refused by the run itself.
                let _ = k.fold.add(r);
                k.interval(r);
            }
            Entry::Step(step) => {
                k.fold.add_step(step);
                if let Some(p) = k.parts.last_mut() {
                    p.by_hand.push(step.clone());
                }
            }
            Entry::Monitor(m) => {
                k.fold.add_monitor(m);
                for p in &m.points {
                    let id = format!("{:?}", p.key);
                    k.monitor.insert(
                        id,
                        Monitored {
                            title: p.title.clone(),
                            unit: format!("{:?}", p.unit).to_lowercase(),
                            value: p.value,
                            shown: crest_report::fmt::value(p.unit, p.value),
                            key: p.key.clone(),
                        },
                    );
                }
            }
            Entry::Points { .. } | Entry::End(_) => {}
        }
    }

    /// The run ended and its results were written: what the page shows last.
    pub fn finish(&self, ended: Ended) {
        let mut k = self.kept();
        if let Some(p) = k.parts.last_mut() {
            p.stop = None;
        }
        k.ended = Some(ended);
    }

    /// True once the page has read the state of the ended run.
    pub fn end_seen(&self) -> bool {
        self.kept().ended_reads > 0
    }

    /// True once anyone has read the state: a page may be open.
    pub fn watched(&self) -> bool {
        self.kept().reads > 0
    }

    /// The control of the part running now.
    pub fn control(&self) -> Option<Arc<Control>> {
        self.kept().parts.last().and_then(|p| p.control.clone())
    }

    /// The stop rule of the part running now, until the run ends.
    pub fn stop(&self) -> Option<Stop> {
        self.kept().parts.last().and_then(|p| p.stop.clone())
    }

    /// The model of the part running now.
    pub fn model(&self) -> Option<String> {
        self.kept().parts.last().map(|p| kind_name(p.start.config.model))
    }

    /// The state, with the series' points from the `from`-th kept one (all of them when the
    /// reader's `epoch` is not the current one).
    pub fn state(&self, from: usize, epoch: Option<u64>) -> State {
        let mut k = self.kept();
        let from = if epoch == Some(k.series.epoch) { from } else { 0 };
        k.reads += 1;
        if k.ended.is_some() {
            k.ended_reads += 1;
        }
        let part = k.parts.last();
        let control = part.and_then(|p| p.control.as_ref());
        let mut steps = k.closed_steps.clone();
        let current = part.map(part_rows).unwrap_or_default();
        let step_index = (!current.is_empty()).then(|| steps.len() + current.len() - 1);
        steps.extend(current);
        let elapsed_s = part.map_or(0.0, |p| p.offset + p.reached);
        let names = names_table(&k.by_name_outcome, elapsed_s);
        State {
            command_line: part.map(|p| p.start.config.command_line.clone()).unwrap_or_default(),
            model: part.map(|p| kind_name(p.start.config.model)).unwrap_or_default(),
            step: step_index.and_then(|i| steps.get(i).cloned()),
            step_index,
            users: control.map(|c| c.users_now()),
            users_asked: control.and_then(|c| c.users_asked()),
            rate: control
                .and_then(|c| c.rate_asked())
                .or(part.and_then(|p| p.start.target_rps)),
            paused: control.is_some_and(|c| c.paused()),
            elapsed_s,
            total: k.total.row("total".into(), elapsed_s),
            iterations: k.iterations,
            dropped: k.dropped,
            steps,
            names,
            errors: k
                .errors
                .iter()
                .map(|(o, (n, ex))| (o.clone(), *n, ex.clone()))
                .collect(),
            monitor: k.monitor.values().cloned().collect(),
            points: k.series.since(from),
            from,
            epoch: k.series.epoch,
            filling: k.series.filling.is_some(),
            ended: k.ended.clone(),
            verdict: None,
        }
    }

    /// Which part and how many of its intervals the hub has folded: the verdict is judged
    /// again only when this moves.
    pub(crate) fn folded(&self) -> (usize, usize) {
        let k = self.kept();
        (k.parts.len(), k.fold.intervals().len())
    }

    /// The results of the part running now as they stand: what its results.json would hold
    /// were it to end now (as a run killed now, its current step cut short). None before its
    /// first interval. The fold is copied under the lock; the rest is done outside it.
    pub fn results_so_far(&self) -> Option<Results> {
        let (fold, start, cpu_at_start) = {
            let k = self.kept();
            let part = k.parts.last()?;
            if k.fold.intervals().is_empty() {
                return None;
            }
            (k.fold.clone(), part.start.clone(), part.cpu_at_start)
        };
        let duration_s = fold.intervals().last().map_or(0.0, |i| i.t_s + start.interval_s);
        let end = crest_model::journal::End {
            duration_s,
            ended_by: EndReason::Unfinished,
            stopped_by: None,
            abandoned: 0,
            arrivals: None,
            behind: None,
            queued: None,
            client: Some(ClientStats {
                cpu_quota_cores: crest_monitor::own::cpu_quota_cores(),
                cpu_s: (crest_monitor::own::cpu_s() - cpu_at_start).max(0.0),
                cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
                threads: start.config.threads,
                peak_rss_bytes: crest_monitor::own::peak_rss_bytes(),
                // Each engine thread reads its wait as its sending ends; a snapshot taken
                // while they send has none yet.
                core_wait_s: None,
            }),
            monitor: None,
            users: None,
            segments: None,
            workers: Vec::new(),
        };
        Some(fold.finish(&start, Some(&end)))
    }
}

/// The rows of a part's steps, named as the results will name them.
fn part_rows(p: &Part) -> Vec<Row> {
    let segments = steered(&p.start.segments, &p.by_hand);
    let label = |s: &Segment| crest_report::fmt::words::step_in_part(p.start.part.as_ref().map(|x| &x.kind), &s.kind);
    let reached = p.reached;
    let mut rows = Vec::new();
    for (i, s) in segments.iter().enumerate() {
        if i > 0 && s.start_s > reached {
            break;
        }
        let end = segments.get(i + 1).map_or(reached, |n| n.start_s).min(reached);
        let tally = p.steps.get(&(i as u32)).cloned().unwrap_or_default();
        rows.push(tally.row(label(s), end - s.start_s.min(end)));
    }
    rows
}

/// One row per request name, all outcomes together.
fn names_table(by: &BTreeMap<(String, String), Tally>, seconds: f64) -> Vec<Row> {
    let mut names: BTreeMap<&str, Tally> = BTreeMap::new();
    for ((name, _), t) in by {
        let row = names.entry(name).or_default();
        row.count += t.count;
        row.failures += t.failures;
        row.latency.add(&t.latency);
    }
    names.into_iter().map(|(n, t)| t.row(n.to_string(), seconds)).collect()
}

impl Kept {
    /// The send lag p99 of the latest point, in seconds.
    pub(crate) fn last_send_lag_p99_s(&self) -> Option<f64> {
        let last = self
            .series
            .filling
            .as_ref()
            .map(|(p, _)| p)
            .or(self.series.points.last());
        last.and_then(|p| p.send_lag_p99).map(|ms| ms / 1000.0)
    }

    fn interval(&mut self, r: &IntervalRecord) {
        let Some(part) = self.parts.last_mut() else { return };
        let len = part.start.interval_s.max(f64::EPSILON);
        let i = &r.interval;
        part.reached = part.reached.max(i.t_s + len);
        let names = &part.start.names;
        for s in &r.stats {
            let ok = s.outcome.is_success();
            let name = names.get(s.name as usize).cloned().unwrap_or_default();
            let hist = s.latency.decode().ok();
            for t in [
                part.steps.entry(s.segment).or_default(),
                self.by_name_outcome.entry((name, s.outcome.key())).or_default(),
            ] {
                t.count += s.count;
                t.failures += u64::from(!ok) * s.count;
                t.bytes_sent += s.bytes_sent;
                t.bytes_received += s.bytes_received;
                if let Some(h) = &hist {
                    t.latency.add_histogram(h);
                }
            }
        }
        let latency = i.latency.decode().ok();
        let ttfb = i.ttfb.decode().ok();
        let total = &mut self.total;
        total.count += i.requests;
        total.failures += i.failures;
        total.bytes_sent += i.bytes_sent;
        total.bytes_received += i.bytes_received;
        if let Some(h) = &latency {
            total.latency.add_histogram(h);
        }
        self.dropped += i.dropped;
        self.messages.0 += i.messages_sent;
        self.messages.1 += i.messages_received;
        let iterations = i.iterations.as_ref().map(|it| it.completed + it.failed);
        self.iterations += iterations.unwrap_or(0);
        for e in &r.errors {
            let row = self.errors.entry(e.outcome.key()).or_insert((0, e.example.clone()));
            row.0 += e.count;
        }
        let ms = |h: &Option<Histogram<u64>>, q: f64| {
            h.as_ref()
                .filter(|h| !h.is_empty())
                .map_or(0.0, |h| h.value_at_quantile(q) as f64 / 1000.0)
        };
        let mean_s = latency.as_ref().map_or(0.0, |h| h.mean() / 1e6);
        let control = part.control.as_ref();
        let point = Point {
            t: part.offset + i.t_s,
            span: len,
            ok: (i.requests - i.failures.min(i.requests)) as f64 / len,
            failed: i.failures as f64 / len,
            iterations: iterations.map(|n| n as f64 / len),
            p50: ms(&latency, 0.5),
            p90: ms(&latency, 0.9),
            p99: ms(&latency, 0.99),
            max: latency
                .as_ref()
                .filter(|h| !h.is_empty())
                .map_or(0.0, |h| h.max() as f64 / 1000.0),
            ttfb_p50: ms(&ttfb, 0.5),
            ttfb_p90: ms(&ttfb, 0.9),
            ttfb_p99: ms(&ttfb, 0.99),
            users: (part.start.config.model == crest_model::results::LoadKind::Closed)
                .then(|| control.map(|c| c.users_now()))
                .flatten(),
            rate: control.and_then(|c| c.rate_asked()).or(part.start.target_rps),
            in_flight: i.requests as f64 / len * mean_s,
            dropped: i.dropped as f64 / len,
            send_lag_p99: r
                .send_lag
                .as_ref()
                .and_then(|h| h.decode().ok())
                .filter(|h| !h.is_empty())
                .map(|h| h.value_at_quantile(0.99) as f64 / 1000.0),
        };
        self.series.add(point);
    }
}

/// The load model as the API and the page name it: `closed` or `open`.
fn kind_name(k: crest_model::results::LoadKind) -> String {
    match k {
        crest_model::results::LoadKind::Closed => "closed",
        crest_model::results::LoadKind::Open => "open",
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_series_stays_bounded_and_keeps_the_whole_run() {
        let mut s = Series::default();
        for t in 0..(KEPT_POINTS * 3) {
            s.add(Point {
                t: t as f64,
                span: 1.0,
                ok: 10.0,
                p99: t as f64,
                ..Point::default()
            });
        }
        assert!(s.points.len() < KEPT_POINTS);
        assert_eq!(s.points[0].t, 0.0, "the first second is still the start");
        let covered: f64 = s.since(0).iter().map(|p| p.span).sum();
        assert_eq!(covered, (KEPT_POINTS * 3) as f64, "merging loses no time");
        assert!(s.points.iter().all(|p| p.ok == 10.0), "rates average over the span");
        assert!(s.epoch > 0);
    }
}
