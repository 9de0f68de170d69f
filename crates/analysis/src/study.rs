//! A study across runs: the points of a sweep (threads x loops, data volumes, pool sizes), each
//! a whole run, tabulated side by side as engineers tabulate them by hand: figures per request
//! name, success rate, throughput, and each point's latency as a ratio to the first point's,
//! with findings drawn across the points rather than within one.
//!
//! It sits on top of [`crate::analyze`]: each point is analysed on its own first, so a point's
//! figures in the study are exactly those of its own report. Beside them, what a point cost
//! (seed 000's "refresh job" column: the sweep's setup command before it) and what each watched
//! process used during it (CPU and peak memory over the point's steady state).

use crate::analyze::Analysis;
use crate::baseline::{baseline, ratios, Candidate};
use crate::capacity::{rose, LATENCY_GROWTH};
use crate::failures::Cluster;
use crate::figures::Percentiles;
use crate::resources::{ResourceRow, Stats};
use crate::summary::UsersDone;
use crest_model::results::SetupRecord;
use serde::Serialize;

/// The series a watched process's figures are read from.
const CPU: &str = "process_cpu_percent";
/// See [`CPU`].
const RESIDENT: &str = "process_resident_memory_bytes";
/// See [`CPU`].
const PRIVATE: &str = "process_private_memory_bytes";

/// Above this share of failed requests a point is broken, as for a step of one run.
const BROKEN_ERROR_RATE: f64 = 0.01;

/// The whole study.
#[derive(Clone, Debug, Serialize)]
pub struct Study {
    /// The parameters the points set, in the order given.
    pub params: Vec<String>,
    /// Request names over every point, in order of first appearance: the per-name columns.
    pub names: Vec<String>,
    /// Watched processes over every point (their `process` label, a name in place of a pid), in
    /// order of first appearance: the per-process columns.
    pub processes: Vec<String>,
    /// One per point, in the order run.
    pub points: Vec<StudyPoint>,
    /// What the points say together, most important first.
    pub findings: Vec<StudyFinding>,
}

/// One point of the study.
#[derive(Clone, Debug, Serialize)]
pub struct StudyPoint {
    /// `threads=5, loops=10`.
    pub label: String,
    /// Each parameter's value at this point, in the order of [`Study::params`].
    pub values: Vec<String>,
    /// Requests completed.
    pub requests: u64,
    /// Of those, failures.
    pub failures: u64,
    /// Successes / requests, from 0 to 1 (1 with no request).
    pub success_rate: f64,
    /// Length of the point's run, s.
    pub duration_s: f64,
    /// Successful requests per second over the point's run: what the service did, not the
    /// failures it answered.
    pub success_rps: f64,
    /// Latency of every request, ms.
    pub latency_ms: Percentiles,
    /// Latency of the successful requests, ms: the growth finding and the ratio compare it.
    pub success_latency_ms: Percentiles,
    /// Mean latency over the baseline point's (seed 000's "performance ratio"): the first point
    /// with a request, by [`crate::baseline`], as in the joined run's report; none for the
    /// baseline itself and for a point without a request.
    pub ratio: Option<f64>,
    /// True for the baseline point.
    pub baseline: bool,
    /// Per request name, aligned with [`Study::names`]; none where the point made no such
    /// request.
    pub per_name: Vec<Option<NameFigures>>,
    /// When its users each ran a fixed number of iterations: when all were done.
    pub users: Option<UsersDone>,
    /// The sweep's setup command before this point: how long it took, how it exited. None
    /// without `--setup` (and for results from before it was recorded).
    pub setup: Option<SetupRecord>,
    /// What limited the point, when its run can tell (a resource at its ceiling, crest
    /// itself, or, for a point that stepped its load, the service's own limits).
    pub bottleneck: Option<crate::bottleneck::Bottleneck>,
    /// Per watched process, aligned with [`Study::processes`]; none where the point has no
    /// series of that process.
    pub processes: Vec<Option<ProcessFigures>>,
}

/// What one watched process used at one point, over the point's steady state (each step's, when
/// the point had several). A figure is none when fewer than
/// [`crate::resources::MIN_SAMPLES`] samples are behind it: a short point's one or two CPU
/// samples read 0%. The sample counts say why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProcessFigures {
    /// Mean CPU, percent of one core.
    pub cpu_percent: Option<f64>,
    /// The same in millicores (a Kubernetes `resources:` unit): percent x 10.
    pub cpu_millicores: Option<f64>,
    /// CPU samples behind them.
    pub cpu_samples: usize,
    /// Peak resident memory, bytes: counts the shared pages the process touched.
    pub resident_peak_bytes: Option<f64>,
    /// Resident memory samples.
    pub resident_samples: usize,
    /// Peak private memory, bytes: the process's own.
    pub private_peak_bytes: Option<f64>,
    /// Private memory samples.
    pub private_samples: usize,
}

impl ProcessFigures {
    /// The figures of `process` among a point's resources; none when it has no series there.
    fn of(process: &str, rows: &[ResourceRow]) -> Option<Self> {
        let series = |metric: &str| {
            rows.iter()
                .find(|r| r.metric == metric && r.process.as_deref() == Some(process))
        };
        if [CPU, RESIDENT, PRIVATE].iter().all(|m| series(m).is_none()) {
            return None;
        }
        // Over each step's steady state; a figure of too few samples is none.
        let stats = |metric: &str| series(metric).and_then(|r| Stats::joined(r.steps.iter().flatten()));
        let samples = |s: &Option<Stats>| s.as_ref().map_or(0, |s| s.samples);
        let enough = |s: &Option<Stats>, f: fn(&Stats) -> f64| s.as_ref().filter(|s| s.enough()).map(f);
        let (cpu, resident, private) = (stats(CPU), stats(RESIDENT), stats(PRIVATE));
        let cpu_percent = enough(&cpu, |s| s.mean);
        Some(ProcessFigures {
            cpu_percent,
            cpu_millicores: cpu_percent.map(|p| p * 10.0),
            cpu_samples: samples(&cpu),
            resident_peak_bytes: enough(&resident, |s| s.peak),
            resident_samples: samples(&resident),
            private_peak_bytes: enough(&private, |s| s.peak),
            private_samples: samples(&private),
        })
    }
}

/// One measured point, as the study is built from it.
#[derive(Clone, Debug)]
pub struct PointRun<'a> {
    /// `threads=5, loops=10`.
    pub label: String,
    /// Each parameter's value, in the order of the study's parameters.
    pub values: Vec<String>,
    /// The point's own analysis.
    pub analysis: &'a Analysis,
    /// Its setup command, from its results' first segment.
    pub setup: Option<SetupRecord>,
}

/// One request name at one point.
#[derive(Clone, Debug, Serialize)]
pub struct NameFigures {
    /// Requests.
    pub requests: u64,
    /// Failures.
    pub failures: u64,
    /// Latency, ms.
    pub latency_ms: Percentiles,
    /// Response body size, bytes, on average.
    pub mean_bytes: f64,
}

/// A finding across the points, with its figures.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StudyFinding {
    /// The first point that broke (more than 1% failures), and the point before it that held.
    /// Throughput alone does not decide it: the points of a study need not be load levels (data
    /// volumes, pool sizes), and a short run's throughput says little.
    Breaks {
        /// The last point before it.
        held: String,
        /// The point that broke.
        broke: String,
        /// Success rates, from 0 to 1, at each.
        held_success: f64,
        /// See `held_success`.
        broke_success: f64,
        /// Successful throughput at each, req/s.
        held_rps: f64,
        /// See `held_rps`.
        broke_rps: f64,
        /// The most frequent failure at the point that broke, when it failed.
        top_failure: Option<String>,
    },
    /// The first point already broke.
    BrokenFromStart {
        /// The point.
        point: String,
        /// Its success rate.
        success: f64,
    },
    /// Latency grew from the first point to the slowest.
    Slower {
        /// The first point.
        first: String,
        /// The slowest point.
        slowest: String,
        /// Mean latency at each, ms.
        first_ms: f64,
        /// See `first_ms`.
        slowest_ms: f64,
        /// Their ratio.
        ratio: f64,
    },
    /// Failures of one kind at one point took nearly the same time: a timeout somewhere.
    TimeoutCluster {
        /// The point.
        point: String,
        /// How many failed this way.
        count: u64,
        /// The outcome's description.
        description: String,
        /// Their durations.
        cluster: Cluster,
    },
    /// Every request of every point succeeded.
    AllSucceeded {
        /// Points.
        points: usize,
        /// Requests over all points.
        requests: u64,
    },
}

/// Builds the study from each point's label, parameter values, analysis and setup, in the
/// order run.
pub fn study(params: &[String], runs: &[PointRun]) -> Study {
    let mut names: Vec<String> = Vec::new();
    let mut processes: Vec<String> = Vec::new();
    for a in runs.iter().map(|p| p.analysis) {
        for g in &a.summary.names {
            if !names.contains(&g.name) {
                names.push(g.name.clone());
            }
        }
        for r in &a.summary.resources {
            if let Some(p) = r
                .process
                .as_ref()
                .filter(|_| [CPU, RESIDENT, PRIVATE].contains(&r.metric.as_str()))
            {
                if !processes.contains(p) {
                    processes.push(p.clone());
                }
            }
        }
    }
    // The same baseline as the joined run's report: points are no load levels, so the first
    // point measured.
    let candidates: Vec<Candidate> = runs
        .iter()
        .map(|PointRun { analysis: a, .. }| Candidate {
            load: 0.0,
            mean_ms: (a.summary.successes > 0).then_some(a.summary.success_latency_ms.mean),
        })
        .collect();
    let base = baseline(&candidates);
    let ratios = ratios(&candidates);
    let rows: Vec<StudyPoint> = runs
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let s = &run.analysis.summary;
            StudyPoint {
                label: run.label.clone(),
                values: run.values.clone(),
                requests: s.requests,
                failures: s.failures,
                success_rate: if s.requests > 0 {
                    s.successes as f64 / s.requests as f64
                } else {
                    1.0
                },
                duration_s: s.duration_s,
                success_rps: s.success_rps,
                latency_ms: s.latency_ms,
                success_latency_ms: s.success_latency_ms,
                ratio: ratios[i].filter(|_| Some(i) != base),
                baseline: Some(i) == base,
                per_name: names
                    .iter()
                    .map(|n| {
                        s.names.iter().find(|g| &g.name == n).map(|g| NameFigures {
                            requests: g.requests,
                            failures: g.failures,
                            latency_ms: g.latency_ms,
                            mean_bytes: if g.requests > 0 {
                                g.bytes_received as f64 / g.requests as f64
                            } else {
                                0.0
                            },
                        })
                    })
                    .collect(),
                users: s.users.clone(),
                setup: run.setup.clone(),
                bottleneck: s.bottleneck.clone(),
                processes: processes.iter().map(|p| ProcessFigures::of(p, &s.resources)).collect(),
            }
        })
        .collect();
    let findings = findings(&rows, runs);
    Study {
        params: params.to_vec(),
        names,
        processes,
        points: rows,
        findings,
    }
}

fn broken(p: &StudyPoint) -> bool {
    p.requests > 0 && 1.0 - p.success_rate > BROKEN_ERROR_RATE
}

fn findings(rows: &[StudyPoint], runs: &[PointRun]) -> Vec<StudyFinding> {
    let mut out = Vec::new();
    for (i, p) in rows.iter().enumerate() {
        if broken(p) {
            let top_failure = runs[i].analysis.summary.errors.first().map(|e| e.description.clone());
            match i.checked_sub(1).map(|k| &rows[k]) {
                Some(held) => out.push(StudyFinding::Breaks {
                    held: held.label.clone(),
                    broke: p.label.clone(),
                    held_success: held.success_rate,
                    broke_success: p.success_rate,
                    held_rps: held.success_rps,
                    broke_rps: p.success_rps,
                    top_failure,
                }),
                None => out.push(StudyFinding::BrokenFromStart {
                    point: p.label.clone(),
                    success: p.success_rate,
                }),
            }
            break;
        }
    }
    if let (Some(first), Some(slowest)) = (
        rows.iter().find(|p| p.baseline),
        rows.iter()
            .filter(|p| !p.baseline && p.ratio.is_some())
            .max_by(|a, b| a.success_latency_ms.mean.total_cmp(&b.success_latency_ms.mean)),
    ) {
        // The points are whole runs; their growth passes the one noise rule (no per-second
        // spread: a point of a sweep may last less than a second). Successful requests only:
        // a point's fast failures do not make it look quicker, nor its timeouts slower.
        let (from, to) = (first.success_latency_ms.mean, slowest.success_latency_ms.mean);
        if from > 0.0 && rose(from, to, LATENCY_GROWTH, None, None) {
            out.push(StudyFinding::Slower {
                first: first.label.clone(),
                slowest: slowest.label.clone(),
                first_ms: from,
                slowest_ms: to,
                ratio: to / from,
            });
        }
    }
    for PointRun { label, analysis: a, .. } in runs {
        for f in &a.failures {
            if let Some(c) = &f.cluster {
                out.push(StudyFinding::TimeoutCluster {
                    point: label.clone(),
                    count: f.count,
                    description: f.description.clone(),
                    cluster: c.clone(),
                });
            }
        }
    }
    if rows.iter().all(|p| p.failures == 0) && rows.iter().any(|p| p.requests > 0) {
        out.push(StudyFinding::AllSucceeded {
            points: rows.len(),
            requests: rows.iter().map(|p| p.requests).sum(),
        });
    }
    out
}
