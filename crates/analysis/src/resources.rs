//! What the system under test did: monitored series summarised per step, and leaks.
//!
//! A leak is a resource that keeps growing while the load does not: open files or memory that
//! will, given time, fail every request. It is judged on each step's steady state only,
//! so that growth that follows rising load is not mistaken for one. A trend must pass three
//! tests: it is statistically clear (Mann-Kendall, one-sided p < 0.01), it is large enough to
//! matter (at least 5% of the starting level and a minimum amount), and it does not level off
//! (the second half still grows at a third of the first half's rate or more; caches and pools
//! that fill up and stop do not count).
//!
//! Memory is judged on a process's private memory, never its resident memory, which also counts
//! shared pages the moment the process first touches them (issue 33: PostgreSQL touching its
//! shared buffers for 28 s read as a leak of 248 MiB a minute). And memory is judged only on a
//! long enough watch ([`MIN_MEMORY_SPAN_S`]), as private memory warms up too.

use crate::figures::{SegmentAnalysis, StepLoad};
use crest_model::monitor::{MonitorRecord, MonitorSeries, SeriesKey, SourceRecord, Unit};
use crest_model::results::Results;
use crest_model::step::StepKind;
use serde::Serialize;

/// Fewest samples in a steady state before a trend is judged.
const MIN_POINTS: usize = 8;
/// Shortest steady state, in seconds, in which memory is judged. Memory warms up: caches fill,
/// an allocator takes its arenas, a database touches its buffers, steadily for tens of seconds
/// (24 to 28 s in issue 33), and then stops. The test that growth does not level off compares
/// the window's halves, so it sees a warm-up end only when it ends in the first half: in 60 s,
/// any warm-up of 30 s or less.
pub const MIN_MEMORY_SPAN_S: f64 = 60.0;
/// Fewest samples in that span: a trend on a handful of slow samples is not clear however long.
pub const MIN_MEMORY_POINTS: usize = 20;
/// Fewest samples behind a peak or mean before a finding names it; fewer are shown in the
/// resources table only. A process's CPU share is a difference between two readings, so one
/// or two samples of a short run read 0% (issue 20: a postgres peak of 0.0% from one sample of
/// a 180 ms point).
pub const MIN_SAMPLES: usize = 3;
/// Mann-Kendall z for a one-sided p of 0.01.
const Z_CRITICAL: f64 = 2.326;
/// A leak must grow by at least this share of where it started...
const MIN_GROWTH_SHARE: f64 = 0.05;
/// ...and must not slow to less than this share of its first half's rate.
const MIN_PERSISTENCE: f64 = 1.0 / 3.0;
/// Most points a trend is computed on; longer runs are thinned evenly (Theil-Sen is quadratic).
const MAX_POINTS: usize = 400;

/// One monitored series, summarised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResourceRow {
    /// The series, `metric{label="value"}`, as every report and comparison shows it: with the
    /// process's name in place of a pid, which differs from run to run, so that runs match by
    /// it (a label the user gave is kept as given).
    pub key: String,
    /// Its metric, e.g. `process_cpu_percent`.
    pub metric: String,
    /// For a process's series, its `process` label as [`ResourceRow::key`] shows it (the name
    /// in place of a pid): what tells watched processes apart.
    pub process: Option<String>,
    /// A human title.
    pub title: String,
    /// Its unit.
    pub unit: Unit,
    /// A known limit.
    pub limit: Option<f64>,
    /// Over the whole run.
    pub all: Option<Stats>,
    /// Per step, in step order (each step's steady state when it has samples, else the step).
    pub steps: Vec<Option<Stats>>,
}

/// Mean and peak of some samples, in the series' unit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// Mean.
    pub mean: f64,
    /// Largest.
    pub peak: f64,
    /// How many samples they are of.
    pub samples: usize,
}

impl Stats {
    /// True when there are enough samples ([`MIN_SAMPLES`]) for a finding to name these.
    pub fn enough(&self) -> bool {
        self.samples >= MIN_SAMPLES
    }
}

impl Stats {
    /// Several spans' statistics as one: the mean weighted by their samples, the largest peak.
    /// One span's are its own, to the last digit.
    pub fn joined<'a>(parts: impl IntoIterator<Item = &'a Stats>) -> Option<Stats> {
        let parts: Vec<&Stats> = parts.into_iter().collect();
        if let [one] = parts[..] {
            return Some(one.clone());
        }
        let (mut n, mut sum, mut peak) = (0usize, 0.0, f64::MIN);
        for s in parts {
            n += s.samples;
            sum += s.mean * s.samples as f64;
            peak = peak.max(s.peak);
        }
        (n > 0).then(|| Stats {
            mean: sum / n as f64,
            peak,
            samples: n,
        })
    }

    fn of(values: impl Iterator<Item = f64>) -> Option<Self> {
        let (mut n, mut sum, mut peak) = (0usize, 0.0, f64::MIN);
        for v in values {
            n += 1;
            sum += v;
            peak = peak.max(v);
        }
        (n > 0).then(|| Stats {
            mean: sum / n as f64,
            peak,
            samples: n,
        })
    }
}

/// Every monitored series with its mean and peak over the run and per step.
pub fn resources(r: &Results, segments: &[SegmentAnalysis]) -> Vec<ResourceRow> {
    let Some(m) = &r.monitor else { return Vec::new() };
    m.series
        .iter()
        .map(|s| {
            let shown = shown_series(&s.key, m.sources.get(s.source as usize));
            ResourceRow {
                key: shown.to_string(),
                metric: shown.metric.clone(),
                process: shown.labels.get("process").cloned(),
                title: s.title.clone(),
                unit: s.unit,
                limit: s.limit,
                all: Stats::of(s.points.iter().map(|p| p.1)),
                steps: segments
                    .iter()
                    .map(|g| {
                        let (from, to) = steady_window(g, segments);
                        Stats::of(s.values_between(from, to))
                            .or_else(|| Stats::of(s.values_between(g.start_s, to.max(g.start_s))))
                    })
                    .collect(),
            }
        })
        .collect()
}

/// See [`ResourceRow::key`]. A label the user gave (or a process name, a pattern) is kept:
/// only a label that is the pid itself gives way to the name.
pub(crate) fn shown_key(key: &SeriesKey, source: Option<&SourceRecord>) -> String {
    shown_series(key, source).to_string()
}

/// See [`shown_key`]: the key itself.
fn shown_series(key: &SeriesKey, source: Option<&SourceRecord>) -> SeriesKey {
    let by_pid = |s: &&SourceRecord| !s.label.is_empty() && s.label.bytes().all(|b| b.is_ascii_digit());
    match source
        .filter(by_pid)
        .and_then(|s| s.name.as_ref().map(|n| (&s.label, n)))
    {
        Some((pid, name)) if key.labels.get("process") == Some(pid) => key.clone().with("process", name.as_str()),
        _ => key.clone(),
    }
}

/// The span of a step's monitor samples that describe its steady state: never past the step's
/// end nor into the next step, so that a sweep's setup between points (a restart, a reload) is
/// never read as growth within a point.
pub(crate) fn steady_window(g: &SegmentAnalysis, segments: &[SegmentAnalysis]) -> (f64, f64) {
    let next = segments.get(g.index + 1).map_or(f64::INFINITY, |n| n.start_s - 1e-6);
    (
        g.steady_start_s,
        g.steady_end_s.min(g.end_s.max(g.steady_start_s)).min(next),
    )
}

/// A resource that grows under steady load.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Leak {
    /// The series, as [`ResourceRow::key`] shows it.
    pub key: String,
    /// Its metric's name.
    pub metric: String,
    /// Its title.
    pub title: String,
    /// Its unit.
    pub unit: Unit,
    /// The step it was seen in.
    pub step: StepKind,
    /// That step's load, when the run had several steps to tell apart.
    pub step_load: Option<StepLoad>,
    /// Growth per minute, in the series' unit.
    pub per_minute: f64,
    /// Growth per second, in the series' unit.
    pub per_second: f64,
    /// The trend's value at the start and end of the window.
    pub from: f64,
    /// See `from`.
    pub to: f64,
    /// The window judged, seconds from the start of the run.
    pub window_s: (f64, f64),
    /// The limit, when known.
    pub limit: Option<f64>,
    /// Minutes until the limit is reached at this rate, when a limit is known.
    pub minutes_to_limit: Option<f64>,
    /// For a leak of a process's private memory: its resident memory over the same window,
    /// which counts the shared pages it touched too, so that both are read side by side.
    pub resident: Option<Growth>,
}

/// How a series moved over a window: the Theil-Sen line through its median point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Growth {
    /// Growth per minute, in the series' unit.
    pub per_minute: f64,
    /// The line's value at the start of the window.
    pub from: f64,
    /// Its value at the end.
    pub to: f64,
}

/// Series whose growth is a leak: memory, open files, database connections. A process the
/// monitor watches is judged on its private memory; its resident memory is not judged, as it
/// grows when the process first touches shared pages.
fn leak_candidate(s: &MonitorSeries, source: Option<&SourceRecord>) -> bool {
    match s.key.metric.as_str() {
        "process_open_fds" | "process_private_memory_bytes" | "process_virtual_memory_bytes" => true,
        // From a Prometheus endpoint, the only memory figure there is.
        "process_resident_memory_bytes" => source.is_none_or(|src| src.kind != "process"),
        "pg_connections" => s.key.labels.get("state").map(String::as_str) == Some("all"),
        _ => false,
    }
}

/// Leaks seen in any step's steady state; per series, the step with the fastest growth.
pub fn leaks(r: &Results, segments: &[SegmentAnalysis]) -> Vec<Leak> {
    let Some(m) = &r.monitor else { return Vec::new() };
    let mut out = Vec::new();
    for s in m
        .series
        .iter()
        .filter(|s| leak_candidate(s, m.sources.get(s.source as usize)))
    {
        let best = segments
            .iter()
            .filter_map(|g| {
                let (from, to) = steady_window(g, segments);
                let points: Vec<(f64, f64)> = s.points_between(from, to).collect();
                trend(&points, s.unit).map(|t| (g, t))
            })
            .max_by(|a, b| a.1.slope.total_cmp(&b.1.slope));
        if let Some((g, t)) = best {
            let key = shown_key(&s.key, m.sources.get(s.source as usize));
            let resident = resident_beside(m, s, t.window);
            out.push(leak(s, key, g, &t, segments.len() > 1, resident));
        }
    }
    out
}

/// The resident memory of the process whose private memory is `s`, over `window`.
fn resident_beside(m: &MonitorRecord, s: &MonitorSeries, window: (f64, f64)) -> Option<Growth> {
    if s.key.metric != "process_private_memory_bytes" {
        return None;
    }
    let rss = m.series.iter().find(|r| {
        r.source == s.source && r.key.metric == "process_resident_memory_bytes" && r.key.labels == s.key.labels
    })?;
    let points: Vec<(f64, f64)> = rss.points_between(window.0, window.1).collect();
    let l = line(&points)?;
    Some(Growth {
        per_minute: l.slope * 60.0,
        from: l.from,
        to: l.to,
    })
}

fn leak(
    s: &MonitorSeries,
    key: String,
    g: &SegmentAnalysis,
    t: &Trend,
    several_steps: bool,
    resident: Option<Growth>,
) -> Leak {
    Leak {
        resident,
        key,
        metric: s.key.metric.clone(),
        title: s.title.clone(),
        unit: s.unit,
        step: g.kind.clone(),
        step_load: several_steps.then(|| g.load()),
        per_minute: t.slope * 60.0,
        per_second: t.slope,
        from: t.from,
        to: t.to,
        window_s: t.window,
        limit: s.limit,
        minutes_to_limit: s.limit.filter(|l| *l > t.to).map(|l| (l - t.to) / t.slope / 60.0),
    }
}

/// A significant, lasting upward trend.
#[derive(Debug)]
struct Trend {
    /// Per second.
    slope: f64,
    from: f64,
    to: f64,
    window: (f64, f64),
}

/// The upward trend of `points`, if it is a leak by the tests in the module's doc.
fn trend(points: &[(f64, f64)], unit: Unit) -> Option<Trend> {
    if points.len() < MIN_POINTS {
        return None;
    }
    if unit == Unit::Bytes {
        let span = points[points.len() - 1].0 - points[0].0;
        if span < MIN_MEMORY_SPAN_S || points.len() < MIN_MEMORY_POINTS {
            return None;
        }
    }
    let step = points.len().div_ceil(MAX_POINTS);
    let p: Vec<(f64, f64)> = points.iter().step_by(step).copied().collect();
    if mann_kendall_z(&p) < Z_CRITICAL {
        return None;
    }
    let Line { slope, from, to } = line(&p)?;
    if slope <= 0.0 {
        return None;
    }
    let (t0, t1) = (p[0].0, p[p.len() - 1].0);
    let growth = to - from;
    let minimum = match unit {
        Unit::Bytes => 4.0 * 1024.0 * 1024.0,
        _ => 5.0,
    };
    if growth < minimum || growth < MIN_GROWTH_SHARE * from.abs() {
        return None;
    }
    let half = p.len() / 2;
    let (first, second) = (theil_sen(&p[..=half])?, theil_sen(&p[half..])?);
    if first > 0.0 && second < MIN_PERSISTENCE * first {
        return None;
    }
    Some(Trend {
        slope,
        from,
        to,
        window: (t0, t1),
    })
}

/// A straight line over some points, by its ends.
struct Line {
    /// Per second.
    slope: f64,
    from: f64,
    to: f64,
}

/// The Theil-Sen line of `p` through its median point, so one odd sample cannot move the ends.
fn line(p: &[(f64, f64)]) -> Option<Line> {
    let slope = theil_sen(p)?;
    let (t0, t1) = (p.first()?.0, p.last()?.0);
    let mut ys: Vec<f64> = p.iter().map(|x| x.1).collect();
    ys.sort_by(f64::total_cmp);
    let (tm, ym) = (p.iter().map(|x| x.0).sum::<f64>() / p.len() as f64, ys[ys.len() / 2]);
    Some(Line {
        slope,
        from: ym + slope * (t0 - tm),
        to: ym + slope * (t1 - tm),
    })
}

/// The Mann-Kendall statistic as a z-score (ties corrected); large and positive for a rising
/// series.
fn mann_kendall_z(p: &[(f64, f64)]) -> f64 {
    let n = p.len();
    let mut s = 0i64;
    for i in 0..n {
        for j in i + 1..n {
            s += match p[j].1.total_cmp(&p[i].1) {
                std::cmp::Ordering::Greater => 1,
                std::cmp::Ordering::Less => -1,
                std::cmp::Ordering::Equal => 0,
            };
        }
    }
    let mut ys: Vec<f64> = p.iter().map(|x| x.1).collect();
    ys.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && ys[j + 1] == ys[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        ties += t * (t - 1.0) * (2.0 * t + 5.0);
        i = j + 1;
    }
    let nf = n as f64;
    let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0;
    if var <= 0.0 {
        return 0.0;
    }
    let s = s as f64;
    (s - s.signum()) / var.sqrt()
}

/// The Theil-Sen slope: the median of the slopes between every pair of points.
fn theil_sen(p: &[(f64, f64)]) -> Option<f64> {
    let mut slopes = Vec::with_capacity(p.len() * p.len() / 2);
    for i in 0..p.len() {
        for j in i + 1..p.len() {
            let dt = p[j].0 - p[i].0;
            if dt > 0.0 {
                slopes.push((p[j].1 - p[i].1) / dt);
            }
        }
    }
    if slopes.is_empty() {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    let n = slopes.len();
    Some(if n % 2 == 1 {
        slopes[n / 2]
    } else {
        (slopes[n / 2 - 1] + slopes[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::segments;
    use crest_model::monitor::{MonitorRecord, SeriesKey};
    use crest_model::Outcome;
    use crest_testkit::results::{ResultsBuilder, Second};

    /// A sweep point of several steps is read over all their steady states: the mean weighted
    /// by samples, the highest peak; one step's figures stay its own.
    #[test]
    fn steps_joined_weigh_their_means_by_samples() {
        let a = Stats {
            mean: 10.0,
            peak: 30.0,
            samples: 3,
        };
        let b = Stats {
            mean: 20.0,
            peak: 25.0,
            samples: 1,
        };
        let both = Stats::joined([&a, &b]).unwrap();
        assert_eq!((both.mean, both.peak, both.samples), (12.5, 30.0, 4));
        assert_eq!(Stats::joined([&b]), Some(b.clone()));
        assert_eq!(Stats::joined([]), None);
    }

    fn series(metric: &str, unit: Unit, limit: Option<f64>, f: impl Fn(f64) -> f64) -> MonitorSeries {
        MonitorSeries {
            key: SeriesKey::new(metric).with("process", "api"),
            source: 0,
            title: match metric {
                "process_open_fds" => "open files of api".into(),
                "process_private_memory_bytes" => "private memory of api".into(),
                _ => "resident memory of api".into(),
            },
            unit,
            limit,
            points: (0..600).map(|t| (t as f64, f(t as f64))).collect(),
        }
    }

    /// A run of 600 s, with series from a Prometheus endpoint (no source is a process).
    fn run_with(s: Vec<MonitorSeries>) -> Results {
        watched(600, "prometheus", s)
    }

    /// A run of `secs` seconds whose series come from one source of this kind.
    fn watched(secs: usize, kind: &str, mut s: Vec<MonitorSeries>) -> Results {
        for x in &mut s {
            x.points.truncate(secs);
        }
        ResultsBuilder::new(Outcome::Status(500), true)
            .segment(40, secs as u64, |_| Second::ok(100, 20.0))
            .monitor(MonitorRecord {
                events: Vec::new(),
                interval_s: 1.0,
                sources: vec![SourceRecord {
                    limits: None,
                    kind: kind.into(),
                    label: "api".into(),
                    name: None,
                    notes: Vec::new(),
                }],
                series: s,
            })
            .build()
    }

    const MIB: f64 = 1048576.0;

    /// Deterministic noise in [-1, 1].
    fn noise(t: f64) -> f64 {
        ((t * 12.9898).sin() * 43758.5453).fract().abs() * 2.0 - 1.0
    }

    #[test]
    fn open_files_growing_under_steady_load_are_a_leak_with_a_time_to_the_limit() {
        // 40 a minute from 52, with noise of a few files; the limit of 1024.
        let r = run_with(vec![series("process_open_fds", Unit::Count, Some(1024.0), |t| {
            (52.0 + t * 40.0 / 60.0 + 3.0 * noise(t)).round()
        })]);
        let leaks = leaks(&r, &segments(&r).unwrap());
        assert_eq!(leaks.len(), 1, "{leaks:?}");
        let l = &leaks[0];
        assert!((l.per_minute - 40.0).abs() < 2.0, "{}", l.per_minute);
        let m = l.minutes_to_limit.unwrap();
        // At the end of the steady window (~450 open files) 574 remain: about 14 minutes.
        assert!((12.0..16.0).contains(&m), "{m}");
        assert_eq!(l.limit, Some(1024.0));
    }

    #[test]
    fn flat_noisy_or_levelling_off_series_are_not_leaks() {
        let flat = series("process_open_fds", Unit::Count, Some(1024.0), |t| {
            (60.0 + 4.0 * noise(t)).round()
        });
        // Memory that warms up (a cache filling) and then stays.
        let warming = series("process_resident_memory_bytes", Unit::Bytes, None, |t| {
            100e6 + 60e6 * (1.0 - (-t / 60.0).exp()) + 1e6 * noise(t)
        });
        let r = run_with(vec![flat, warming]);
        let segments = segments(&r).unwrap();
        let found = leaks(&r, &segments);
        assert!(found.is_empty(), "{found:?}");
        // Each still has its figures per step.
        let rows = resources(&r, &segments);
        assert_eq!(rows.len(), 2);
        let fds = &rows[0];
        let step = fds.steps[0].as_ref().unwrap();
        assert!((step.mean - 60.0).abs() < 1.0 && step.peak <= 64.0, "{step:?}");
    }

    #[test]
    fn memory_that_keeps_growing_is_a_leak_without_a_known_limit() {
        let r = run_with(vec![series("process_resident_memory_bytes", Unit::Bytes, None, |t| {
            200e6 + t * 50_000.0 + 2e6 * noise(t)
        })]);
        let leaks = leaks(&r, &segments(&r).unwrap());
        assert_eq!(leaks.len(), 1, "{leaks:?}");
        // 50 kB a second: 3 MB (2.9 MiB) a minute.
        assert!((leaks[0].per_minute - 3e6).abs() < 1e5, "{}", leaks[0].per_minute);
        assert_eq!(leaks[0].minutes_to_limit, None);
        assert_eq!(
            leaks[0].resident, None,
            "a Prometheus figure has no private memory beside it"
        );
    }

    /// Issue 33: PostgreSQL touched its shared buffers for the first time for 28 s of a run, and
    /// its resident memory was said to grow by 248 MiB a minute.
    #[test]
    fn issue_33_a_process_touching_shared_memory_for_the_first_time_does_not_leak() {
        // 8 MiB a second of shared pages for 24 s, its private memory flat.
        let first_touch = |t: f64| 40.0 * MIB + 8.0 * MIB * t.min(24.0) + 0.1 * MIB * noise(t);
        let flat = |t: f64| 20.0 * MIB + 0.1 * MIB * noise(t);
        let rss = series("process_resident_memory_bytes", Unit::Bytes, None, first_touch);
        let private = series("process_private_memory_bytes", Unit::Bytes, None, flat);
        let r = watched(28, "process", vec![rss.clone(), private.clone()]);
        assert_eq!(leaks(&r, &segments(&r).unwrap()), vec![]);
        // Nor would its resident memory be a leak from an endpoint: 28 s is too short a watch
        // for memory...
        let r = watched(28, "prometheus", vec![rss]);
        assert_eq!(leaks(&r, &segments(&r).unwrap()), vec![]);
        // ...and so is it for private memory that grows as long.
        let r = watched(
            28,
            "process",
            vec![series("process_private_memory_bytes", Unit::Bytes, None, first_touch)],
        );
        assert_eq!(leaks(&r, &segments(&r).unwrap()), vec![]);
        // Shared memory touched all along, watched for 10 minutes, is no leak of the process's
        // either.
        let touching = series("process_resident_memory_bytes", Unit::Bytes, None, |t| {
            40.0 * MIB + MIB * t
        });
        let r = watched(600, "process", vec![touching, private]);
        assert_eq!(leaks(&r, &segments(&r).unwrap()), vec![]);
    }

    #[test]
    fn private_memory_that_keeps_growing_is_a_leak_with_resident_memory_beside_it() {
        let rss = series("process_resident_memory_bytes", Unit::Bytes, None, |t| {
            150.0 * MIB + 2.0 * MIB * t.min(30.0) + 10.0 * MIB * t / 60.0 + 0.2 * MIB * noise(t)
        });
        let private = series("process_private_memory_bytes", Unit::Bytes, None, |t| {
            100.0 * MIB + 10.0 * MIB * t / 60.0 + 0.2 * MIB * noise(t)
        });
        // Watched long enough: at least a minute and 20 samples of steady state.
        let r = watched(90, "process", vec![rss.clone(), private.clone()]);
        let found = leaks(&r, &segments(&r).unwrap());
        assert_eq!(found.len(), 1, "{found:?}");
        let l = &found[0];
        assert_eq!(l.metric, "process_private_memory_bytes");
        assert!((l.per_minute / MIB - 10.0).abs() < 1.0, "{}", l.per_minute / MIB);
        let resident = l.resident.as_ref().unwrap();
        // Its shared pages count there: higher, and growing faster while they were touched.
        assert!(
            resident.to > l.to + 40.0 * MIB && resident.per_minute > l.per_minute,
            "{resident:?}"
        );
        // Not long enough: 50 s of the same growth is not judged.
        let r = watched(50, "process", vec![rss, private]);
        assert_eq!(leaks(&r, &segments(&r).unwrap()), vec![]);
    }
}
